"""FeatureSlice: a contiguous range of the last axis, as a serialisable layer."""

import numbers

import keras


@keras.saving.register_keras_serializable(package="predcalc")
class FeatureSlice(keras.layers.Layer):
    """Keep features ``start:stop`` of the last axis: ``y = x[..., start:stop]``.

    Used to route some token features (say, the token type) to one branch of a model and
    others (the numeric value) to another, without a ``Lambda``, so the model saves and
    loads in safe mode.

    Args:
        start: first feature kept (inclusive, >= 0).
        stop: last feature kept (exclusive, > start).

    Call arguments:
        inputs: a tensor of shape ``(..., features)`` with ``features >= stop``.

    Example:
        >>> tuple(FeatureSlice(1, 4)(keras.ops.ones((2, 15, 4))).shape)
        (2, 15, 3)
    """

    def __init__(self, start, stop, **kwargs):
        super().__init__(**kwargs)
        if (
            not all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in (start, stop))
            or start < 0
            or stop <= start
        ):
            raise ValueError(f"need integers 0 <= start < stop. Received: start={start}, stop={stop}")
        self.start, self.stop = int(start), int(stop)

    def build(self, input_shape):
        if input_shape[-1] is not None and input_shape[-1] < self.stop:
            raise ValueError(f"the input has {input_shape[-1]} features; stop={self.stop} is out of range")

    def call(self, inputs):
        return inputs[..., self.start : self.stop]

    def compute_output_shape(self, input_shape):
        return (*input_shape[:-1], self.stop - self.start)

    def get_config(self):
        return {**super().get_config(), "start": self.start, "stop": self.stop}
