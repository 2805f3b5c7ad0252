"""Issue 19, reduced check: do mlstm_stable and mamba_bounded train on every seed, and does
Mamba's bounded state stop the out-of-range blow-up? Written by code into stability.json.

    PYTHONPATH=lib python reports/experiments/stability.py MODEL SEEDS EPOCHS [PATIENCE [KEY]]

(also used for FNN2 with the seed's early stopping patience of 10, stored under KEY)

Reduced settings (time budget of one session on a shared 2-core CPU); the settings are stored
beside the numbers. Compare with reports/runs/09_xlstm and 10_mamba (full profile, old layers).
"""

import json
import sys
from pathlib import Path

from predcalc.data import seed_protocol
from predcalc.training.experiment import run_seeds

model, seeds, epochs = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
patience = int(sys.argv[4]) if len(sys.argv) > 4 else 20
key = sys.argv[5] if len(sys.argv) > 5 else model
results = run_seeds([model], seed_protocol(0), seeds=seeds, epochs=epochs, patience=patience, progress=False)
record = results.to_json("stability", {"models": [model], "seeds": seeds, "epochs": epochs, "patience": patience,
                                       "batch_size": 32, "learning_rate": 1e-3, "data_seed": 0})
path = Path(__file__).with_name("stability.json")
stored = json.loads(path.read_text()) if path.is_file() else {}
stored[key] = record
path.write_text(json.dumps(stored, indent=1))
for run in record["models"][model]["runs"]:
    m = run["metrics"]
    print(model, "seed", run["seed"], "epochs", run["epochs"], "acc in", round(m["in"]["accuracy"], 3),
          "MAE in", round(m["in"]["mae"], 4), "MAE out", round(m["out"]["mae"], 3), "MAE long", round(m["long"]["mae"], 3),
          flush=True)
