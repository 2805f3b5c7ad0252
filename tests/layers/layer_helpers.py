"""Helpers shared by the layer tests (importable: pytest puts this folder on sys.path).

The contract every public layer keeps (:class:`LayerCase` and the ``check_*`` functions, applied
to each layer by ``test_layer_contract.py``), and the small pieces the per-layer number tests
share: deterministic inputs and weights, NumPy activations.
"""

import dataclasses
import json
import numbers

import keras
import numpy as np
import pytest
from keras import ops

BATCH = 2


def to_numpy(x):
    """A tensor as a NumPy array (a list or tuple of them, element by element)."""
    return keras.tree.map_structure(ops.convert_to_numpy, x)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def pattern(shape, scale=0.5, offset=1.0):
    """Deterministic, non-symmetric values: ``scale * sin(arange + offset)``, float32."""
    size = int(np.prod(shape))
    return (scale * np.sin(np.arange(size) + offset)).reshape(shape).astype("float32")


def ramp(shape, divisor=15.0):
    """``arange / divisor - 1`` in ``shape``, float32: inputs that differ at every position."""
    return (np.arange(int(np.prod(shape)), dtype="float32").reshape(shape) / divisor - 1.0).astype("float32")


def sequence_inputs(time=6, batch=BATCH, seed=0, features=3):
    """N(0, 1) inputs of shape ``(batch, time, features)``, float32: the recurrent layers' tests."""
    rng = np.random.default_rng(seed)
    return rng.normal(size=(batch, time, features)).astype("float32")


def built_with_random_weights(layer, input_shape, seed=1, scale=0.7):
    """``layer`` built for ``input_shape`` with every weight drawn from N(0, scale^2), float32."""
    layer.build(input_shape)
    rng = np.random.default_rng(seed)
    layer.set_weights([rng.normal(scale=scale, size=w.shape).astype("float32") for w in layer.weights])
    return layer


def patterned_weights(layer, input_shape, scale, offset, step):
    """``layer`` built for ``input_shape`` with weight ``i`` set to ``pattern(shape, scale, offset +
    step * i)`` (LayerNorm gammas near 1); returns ``{path below the layer: float64 value}``."""
    layer.build(input_shape)
    weights = {}
    for index, variable in enumerate(layer.weights):
        name = variable.path.split("/", 1)[1]  # e.g. "self_attention/query/kernel"
        value = pattern(variable.shape, scale, offset + step * index)
        if name.endswith("gamma"):
            value = 1.0 + 0.3 * value
        variable.assign(value)
        weights[name] = value.astype("float64")
    return weights


def layer_norm(x, gamma, beta, epsilon=1e-5):
    """LayerNorm over the last axis, in the precision of ``x``."""
    mean = x.mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(x.var(axis=-1, keepdims=True) + epsilon) * gamma + beta


# -- the layer contract ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class LayerCase:
    """One public layer as the contract tests it.

    ``kwargs`` builds it (values away from the defaults, so the config round trip means
    something); ``input_shape`` is one example's shape (a list of shapes for a layer with several
    inputs); ``bad_arguments`` are ``(kwargs, message regex)`` the constructor must refuse with a
    ValueError; ``bad_shapes`` are ``(input shape(s) with batch, message regex)`` it must refuse
    when called. A ``cell`` is tested inside ``keras.layers.RNN(cell, return_sequences=True)``.
    ``integers``: per input, ``None`` for float32 N(0, 1) values or ``high`` for int32 values in
    ``[0, high)`` (tokens, ids); empty: every input float. ``train_every_output``: the training
    step fits every output, not the first only (a layer whose outputs read weights of their own).
    """

    layer: type
    kwargs: dict
    input_shape: tuple | list
    bad_arguments: tuple = ()
    bad_shapes: tuple = ()
    cell: bool = False
    name: str = ""
    integers: tuple = ()
    train_every_output: bool = False

    @property
    def id(self):
        return self.name or self.layer.__name__

    def make(self, **kwargs):
        """The layer (inside an RNN for a cell), from ``kwargs`` (default: the case's)."""
        layer = self.layer(**(self.kwargs if not kwargs else kwargs))
        return keras.layers.RNN(layer, return_sequences=True) if self.cell else layer

    def inputs(self, seed=0):
        """A batch of random float32 inputs (a list for several inputs)."""
        rng = np.random.default_rng(seed)
        shapes = self.input_shape if isinstance(self.input_shape, list) else [self.input_shape]
        arrays = [
            rng.normal(size=(BATCH, *shape)).astype("float32")
            if high is None
            else rng.integers(0, high, size=(BATCH, *shape)).astype("int32")
            for shape, high in zip(shapes, self._integers(shapes))
        ]
        return arrays if isinstance(self.input_shape, list) else arrays[0]

    def _integers(self, shapes):
        return self.integers or (None,) * len(shapes)

    def model(self):
        """``Input(s) -> layer`` as a functional model, and the layer (the cell, for a cell)."""
        shapes = self.input_shape if isinstance(self.input_shape, list) else [self.input_shape]
        inputs = [
            keras.Input(shape, dtype="float32" if high is None else "int32")
            for shape, high in zip(shapes, self._integers(shapes))
        ]
        wrapped = self.make()
        outputs = wrapped(inputs if isinstance(self.input_shape, list) else inputs[0])
        model = keras.Model(inputs if isinstance(self.input_shape, list) else inputs[0], outputs)
        return model, (wrapped.cell if self.cell else wrapped)


def _as_numpy_integers(kwargs):
    return {
        key: np.int64(value) if isinstance(value, numbers.Integral) and not isinstance(value, bool) else value
        for key, value in kwargs.items()
    }


def check_config_round_trip(case):
    """``from_config(get_config())`` gives the same config, which names every argument given with
    its value, is plain JSON, and is the same when the integers came as NumPy integers."""
    layer = case.layer(**case.kwargs)
    config = layer.get_config()
    for key, value in case.kwargs.items():
        assert key in config, f"get_config() misses {key}"
        if isinstance(value, (bool, numbers.Number, str)) and "initializer" not in key:
            assert config[key] == value, f"{key}: {config[key]!r} != {value!r}"
    assert case.layer.from_config(config).get_config() == config
    json.dumps(config)  # every value plain Python
    from_numpy = case.layer(**_as_numpy_integers(case.kwargs), name=config["name"]).get_config()
    assert from_numpy == config and json.dumps(from_numpy)


def check_keras_file_reload(case, directory):
    """A model holding the layer, its weights random, saved to ``.keras`` and loaded again gives the
    same layer type and identical outputs; each symbolic output shape is the one computed."""
    model, layer = case.model()
    rng = np.random.default_rng(1)
    layer.set_weights([rng.normal(scale=0.3, size=w.shape).astype("float32") for w in layer.weights])
    x = case.inputs()
    expected = [to_numpy(output) for output in keras.tree.flatten(model(x))]
    assert [tuple(output.shape[1:]) for output in model.outputs] == [e.shape[1:] for e in expected]
    path = directory / f"{case.id}.keras"
    model.save(path)
    restored = keras.saving.load_model(path)
    found = [lay for lay in restored.layers if isinstance(getattr(lay, "cell", lay), case.layer)]
    assert len(found) == 1, f"no {case.layer.__name__} in the reloaded model"
    for actual, wanted in zip(keras.tree.flatten(restored(x)), expected, strict=True):
        np.testing.assert_array_equal(to_numpy(actual), wanted)


def check_training_step(case, steps=5):
    """``fit`` for a few steps on one batch (the layer's first output, or each output where
    ``case.train_every_output``, then ``Dense(1)``, towards zeros): the loss stays finite and
    falls, and every trainable weight of the layer moves."""
    keras.utils.set_random_seed(0)
    inner, layer = case.model()
    trained = inner.outputs if case.train_every_output else inner.outputs[:1]
    outputs = [keras.layers.Dense(1)(output) for output in trained]
    model = keras.Model(inner.input, outputs if case.train_every_output else outputs[0])
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse")
    x = case.inputs(seed=2)
    y = keras.tree.map_structure(lambda output: np.zeros(output.shape, "float32"), to_numpy(model(x)))
    before = [to_numpy(w).copy() for w in layer.trainable_weights]
    losses = model.fit(x, y, epochs=steps, batch_size=BATCH, verbose=0).history["loss"]
    assert np.all(np.isfinite(losses)) and losses[-1] < losses[0], losses
    for weight, old in zip(layer.trainable_weights, before, strict=True):
        assert not np.array_equal(to_numpy(weight), old), f"{weight.path} did not move"


def check_bad_argument(case, kwargs, message):
    """The constructor refuses ``kwargs`` with a one-line ValueError that says what it received."""
    with pytest.raises(ValueError, match=message) as error:
        case.layer(**kwargs)
    assert "\n" not in str(error.value) and "Received" in str(error.value), str(error.value)


def check_bad_shape(case, shape, message):
    """Calling the layer on inputs of ``shape`` fails with a one-line ValueError."""
    arrays = [np.zeros(s, "float32") for s in shape] if isinstance(shape, list) else np.zeros(shape, "float32")
    with pytest.raises(ValueError, match=message) as error:
        case.make()(arrays)
    assert "\n" not in str(error.value), str(error.value)


def reference_layout_weights(weight_names, units, features, w_scale):
    """Seed-layout weights ``{symbol: pattern}``: ``W_*`` of shape ``(units, units + features)``
    (scale ``w_scale``), ``b_*`` of shape ``(units,)`` (scale 0.3); ``weight_names`` pairs each
    symbol with its attribute (``REFERENCE_GRU_WEIGHT_NAMES``, ``REFERENCE_LSTM_WEIGHT_NAMES``)."""
    return {
        symbol: pattern((units, units + features), w_scale, offset)
        if symbol.startswith("W")
        else pattern((units,), 0.3, offset)
        for offset, (symbol, _) in enumerate(weight_names)
    }


def reference_cell_with_weights(cell, weight_names, weights, features):
    """``cell`` built for ``features`` inputs, its weights set from the reference layout ``weights``."""
    cell.build((None, features))
    cell.set_weights([weights[symbol] for symbol, _ in weight_names])
    return cell


def assert_carried_states_continue(first_layer, second_layer, x, split, whole, atol=1e-5):
    """``x[:, :split]`` through ``first_layer``, then the rest through ``second_layer`` from its final
    states (both with ``return_state=True``), gives ``whole``, the outputs of the whole sequence.
    Returns the states carried and the last ones."""
    first, *states = first_layer(x[:, :split])
    second, *last_states = second_layer(x[:, split:], initial_state=states)
    np.testing.assert_allclose(np.concatenate([to_numpy(first), to_numpy(second)], axis=1), whole, atol=atol)
    return states, last_states
