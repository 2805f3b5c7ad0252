"""The former registered names of renamed layers, so `.keras` files saved under them still load.

The prior report was once called "seed" in code (issue 43: "seed" means a random seed only); a file
saved then names the layer's former registered name, which Keras looks up among its custom objects.
"""

import keras

from predcalc.layers.reference_gru_cell import ReferenceGRUCell
from predcalc.layers.reference_lstm_cell import ReferenceLSTMCell

RENAMED_LAYERS = {
    "predcalc>SeedLSTMCell": ReferenceLSTMCell,  # old name (issue 43)
    "predcalc>SeedGRUCell": ReferenceGRUCell,  # old name (issue 43)
}
keras.saving.get_custom_objects().update(RENAMED_LAYERS)
