"""Argument checks and config helpers shared by the layers (private: no layer here)."""

import math
import numbers

import keras


def positive_int(name, value, allow_none=False):
    """``value`` as a Python int, or a ValueError naming ``name``: any integer type (``np.int64``
    too) above zero passes, a bool does not (``None`` passes with ``allow_none``)."""
    if value is None and allow_none:
        return None
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value <= 0:
        raise ValueError(
            f"{name} must be a positive integer{' or None' if allow_none else ''}. Received: {name}={value}"
        )
    return int(value)


def positive_ints(**values):
    """:func:`positive_int` on each argument: their values as Python ints, in order."""
    return tuple(positive_int(name, value) for name, value in values.items())


def finite_number(name, value):
    """``value`` as a float, or a ValueError naming ``name`` (a bool, a string or NaN fails)."""
    if not isinstance(value, numbers.Real) or isinstance(value, bool) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number. Received: {name}={value!r}")
    return float(value)


def rate(name, value):
    """A rate in ``[0, 1)`` as a float, or a ValueError naming ``name``."""
    if not isinstance(value, numbers.Real) or isinstance(value, bool) or not 0 <= value < 1:
        raise ValueError(f"{name} must be a number in [0, 1). Received: {name}={value}")
    return float(value)


def check_bools(**values):
    """A ValueError for the first argument that is not a bool."""
    for arg_name, value in values.items():
        if not isinstance(value, bool):
            raise ValueError(f"{arg_name} must be a bool. Received: {arg_name}={value}")


def serialized(layer, *names):
    """``{name: keras.initializers.serialize(layer.name)}`` for a ``get_config``."""
    return {name: keras.initializers.serialize(getattr(layer, name)) for name in names}


def fresh_initializers(layer, *names):
    """New initializer objects equal to the layer's (one per sub-layer, so none is shared)."""
    return {name: keras.initializers.get(keras.initializers.serialize(getattr(layer, name))) for name in names}


# -- the sequence layers (minGRU/minLSTM, mLSTM, sLSTM, Mamba) ---------------------------------

FORGET_GATES = ("sigmoid", "exp")


def checked_heads(units, num_heads, forget_gate):
    """`units` and `num_heads` as ints, `units` split into `num_heads` heads, and a known
    forget-gate form (mLSTM, sLSTM)."""
    units, num_heads = positive_ints(units=units, num_heads=num_heads)
    if units % num_heads != 0:
        raise ValueError(f"units must be divisible by num_heads. Received: units={units}, num_heads={num_heads}")
    if forget_gate not in FORGET_GATES:
        raise ValueError(f"forget_gate must be one of {FORGET_GATES}. Received: forget_gate={forget_gate!r}")
    return units, num_heads


def sequence_output_shape(layer, input_shape, state_shapes):
    """The output shape of a layer with `units`, `return_sequences` and `return_state`."""
    batch_size, time_steps = input_shape[0], input_shape[1]
    if layer.return_sequences:
        output_shape = (batch_size, time_steps, layer.units)
    else:
        output_shape = (batch_size, layer.units)
    if layer.return_state:
        return [output_shape, *state_shapes]
    return output_shape


def config_entries(layer, names, initializers=()):
    """`{name: layer.name}` for plain arguments, serialized for initializers (for `get_config`)."""
    return {**{name: getattr(layer, name) for name in names}, **serialized(layer, *initializers)}


def sequence_input_dim(layer, input_shape):
    """The feature size of inputs `(batch, time, features)`, or a ValueError."""
    if len(input_shape) != 3:
        raise ValueError(
            f"{type(layer).__name__} expects inputs of shape (batch, time, features). "
            f"Received: input_shape={input_shape}"
        )
    if input_shape[-1] is None:
        raise ValueError(f"The last dimension of the inputs must be defined. Received: input_shape={input_shape}")
    return input_shape[-1]


class SequenceLayer(keras.layers.Layer):
    """What the sequence layers (minGRU/minLSTM, mLSTM, sLSTM, Mamba) share: the output shape from
    `units`, `return_sequences`, `return_state` and the subclass's `state_shapes(batch_size)`, and a
    `get_config` of its `config_names` (plain arguments) and `config_initializers`."""

    config_names = ()
    config_initializers = ()

    def state_shapes(self, batch_size):
        """The shapes of the states `return_state=True` returns after the output."""
        raise NotImplementedError

    def compute_output_shape(self, input_shape):
        return sequence_output_shape(self, input_shape, self.state_shapes(input_shape[0]))

    def get_config(self):
        config = super().get_config()
        config.update(config_entries(self, self.config_names, self.config_initializers))
        return config


def set_initializers(layer, **initializers):
    """`layer.name = keras.initializers.get(value)` for each initializer argument."""
    for name, value in initializers.items():
        setattr(layer, name, keras.initializers.get(value))


def no_xla_on_tensorflow(layer):
    """Marks a scan layer `supports_jit=False` on TensorFlow, where neither `associative_scan`
    nor the gradient of `keras.ops.scan` compiles under XLA (`jit_compile="auto"` then runs the
    layer in graph mode)."""
    if keras.backend.backend() == "tensorflow":
        layer.supports_jit = False
