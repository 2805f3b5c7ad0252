"""What `ReferenceLSTMCell` and `ReferenceGRUCell` share: units and initializers, the eager gate sequence,
the reference-symbol weight dict and the loading of a Keras layer's weights (private: no public layer).

A subclass sets `_weight_names` (seed symbol -> attribute), `_keras_name` ("LSTM"/"GRU"),
`_keras_layers` (the Keras layer and cell classes), `_equations` (e.g. "(1)-(6)"), the converters
`_keras_to_reference` / `_reference_to_keras`, and the state handling of `gate_sequence`.
"""

import keras
import numpy as np
from keras import ops

from predcalc.layers._common import positive_int, serialized


class ReferenceCell(keras.layers.Layer):
    _weight_names = ()
    _keras_name = ""
    _keras_layers = ()
    _equations = ""

    def __init__(self, units, kernel_initializer="glorot_uniform", bias_initializer="zeros", **kwargs):
        positive_int("units", units)
        super().__init__(**kwargs)
        self.units = int(units)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)

    def _bias_initializer_for(self, symbol):
        return self.bias_initializer

    def build(self, input_shape):
        input_dim = input_shape[-1]
        for symbol, attribute in self._weight_names:
            if symbol.startswith("W"):  # (units, units + input_dim): acts on [h_{t-1}, x_t]
                shape, initializer = (self.units, self.units + input_dim), self.kernel_initializer
            else:
                shape, initializer = (self.units,), self._bias_initializer_for(symbol)
            setattr(self, attribute, self.add_weight(shape=shape, initializer=initializer, name=attribute))

    def _zero_state(self, batch):
        return ops.zeros((batch, self.units), dtype=self.compute_dtype)

    def gate_sequence(self, inputs, initial_state=None):
        """Runs a whole sequence eagerly and stacks every intermediate.

        A helper for explanation notebooks (a Python loop over a static number
        of time steps, no masking); use `keras.layers.RNN(cell)` in models.

        Args:
            inputs: tensor of shape `(batch, time, input_dim)`.
            initial_state: optional initial state (`[h_0, C_0]` for the LSTM
                cell, `h_0` of shape `(batch, units)` for the GRU cell); zeros
                by default.

        Returns:
            dict with the keys of `step_with_gates`, each a tensor of shape
            `(batch, time, units)`.
        """
        inputs = ops.convert_to_tensor(inputs, dtype=self.compute_dtype)
        batch, time = inputs.shape[0], inputs.shape[1]
        states = self._initial_states(batch, initial_state)
        steps = []
        for t in range(time):
            step = self.step_with_gates(inputs[:, t, :], states)
            states = self._next_states(step)
            steps.append(step)
        return {key: ops.stack([s[key] for s in steps], axis=1) for key in steps[0]}

    def reference_weights(self):
        """Returns the weights as a dict keyed by the reference symbols (`W_f`, ..., `b_o`)."""
        return {symbol: ops.convert_to_numpy(getattr(self, attribute)) for symbol, attribute in self._weight_names}

    def _check_keras_cell(self, cell):
        """Raises when the Keras cell computes other equations than the prior report's."""
        for argument, expected in (
            ("activation", "tanh"),
            ("recurrent_activation", "sigmoid"),
        ):
            name = keras.activations.serialize(getattr(cell, argument))
            if name != expected:
                raise ValueError(
                    f"{type(self).__name__} uses `{argument}='{expected}'` as in "
                    f"reference equations {self._equations}. Received: {argument}={name}"
                )

    def set_keras_weights(self, source):
        """Loads the weights of the Keras layer (or its cell) with the prior report's equations.

        Builds the cell first if needed, taking `input_dim` from the kernel.

        Args:
            source: a built `keras.layers.LSTM`/`LSTMCell` (for `ReferenceLSTMCell`)
                or `keras.layers.GRU`/`GRUCell` with `reset_after=False` (for
                `ReferenceGRUCell`), with `tanh` activation and `sigmoid` recurrent
                activation; or a list `[kernel, recurrent_kernel, bias]` of
                arrays in Keras layout.
        """
        layer_class, cell_class = self._keras_layers
        if isinstance(source, (layer_class, cell_class)):
            cell = source.cell if isinstance(source, layer_class) else source
            self._check_keras_cell(cell)
            source = cell.get_weights()
        source = [np.asarray(w) for w in source]
        if len(source) not in (2, 3):
            raise ValueError(f"Expected `[kernel, recurrent_kernel, bias]`. Received a list of {len(source)} arrays.")
        if source[1].shape[0] != self.units:
            raise ValueError(
                f"The Keras {self._keras_name} has {source[1].shape[0]} units but this cell has units={self.units}."
            )
        weights = type(self)._keras_to_reference(*source)
        if not self.built:
            self.build((None, source[0].shape[0]))
        for symbol, attribute in self._weight_names:
            getattr(self, attribute).assign(weights[symbol])

    def get_keras_weights(self):
        """Returns `[kernel, recurrent_kernel, bias]` for the Keras layer's `set_weights`."""
        return type(self)._reference_to_keras(self.reference_weights())

    def get_config(self):
        config = super().get_config()
        config.update({"units": self.units, **serialized(self, "kernel_initializer", "bias_initializer")})
        return config


def check_keras_kernels(kernel, recurrent_kernel, gates):
    """`(kernel, recurrent_kernel, units)` of a Keras LSTM/GRU with `gates` column blocks."""
    kernel = np.asarray(kernel)
    recurrent_kernel = np.asarray(recurrent_kernel)
    units = recurrent_kernel.shape[0]
    if kernel.ndim != 2 or recurrent_kernel.shape != (units, gates * units) or kernel.shape[1] != gates * units:
        raise ValueError(
            f"Expected `kernel` of shape (input_dim, {gates} * units) and "
            f"`recurrent_kernel` of shape (units, {gates} * units). Received: "
            f"kernel.shape={kernel.shape}, "
            f"recurrent_kernel.shape={recurrent_kernel.shape}"
        )
    return kernel, recurrent_kernel, units


def keras_blocks_to_reference(kernel, recurrent_kernel, bias, gate_index, signs=None):
    """Seed `W_g = [recurrent_kernel_g.T, kernel_g.T]`, `b_g = bias_g` per gate (times its sign)."""
    units = recurrent_kernel.shape[0]
    weights = {}
    for gate, index in gate_index.items():
        block = slice(index * units, (index + 1) * units)
        sign = (signs or {}).get(gate, 1.0)
        weights[f"W_{gate}"] = sign * np.concatenate([recurrent_kernel[:, block].T, kernel[:, block].T], axis=1)
        weights[f"b_{gate}"] = sign * bias[block]
    return weights


def reference_to_keras_blocks(weights, gate_index, signs=None):
    """The inverse of `keras_blocks_to_reference`: `[kernel, recurrent_kernel, bias]`."""
    gates = sorted(gate_index, key=gate_index.get)
    gate_signs = [(signs or {}).get(gate, 1.0) for gate in gates]
    units = np.asarray(weights[f"W_{gates[0]}"]).shape[0]
    matrices = [s * np.asarray(weights[f"W_{g}"]) for s, g in zip(gate_signs, gates)]
    kernel = np.concatenate([m[:, units:].T for m in matrices], axis=1)
    recurrent_kernel = np.concatenate([m[:, :units].T for m in matrices], axis=1)
    bias = np.concatenate([s * np.asarray(weights[f"b_{g}"]) for s, g in zip(gate_signs, gates)])
    return [kernel, recurrent_kernel, bias]
