"""Sinusoidal positional encoding, reference document 002 section 3.4 (Vaswani et al.)."""

import numbers

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="predcalc")
class SinusoidalPositionalEncoding(keras.layers.Layer):
    """Adds the sinusoidal positional encoding to a sequence of vectors.

    A transformer reads its whole input at once and has no notion of order
    by itself (reference document 002 "Findings", section 3.4), so a fixed
    encoding of each position is added to the token vectors:

    ```
    PE(pos, 2i)     = sin(pos / max_wavelength ** (2i / d_model))
    PE(pos, 2i + 1) = cos(pos / max_wavelength ** (2i / d_model))
    output          = inputs + PE
    ```

    with `pos = 0, 1, ...` the position in the sequence and `d_model` the
    feature size of the input (odd sizes are allowed: the last feature then
    gets a sine). The encoding has no weights; padded steps receive it like
    any other step and the input mask is passed through unchanged.

    Args:
        max_wavelength: float. The base of the geometric progression of
            wavelengths, 10000 in Vaswani et al. Defaults to `10000.0`.
        **kwargs: other keyword arguments passed to `keras.layers.Layer`,
            e.g. `name` and `dtype`.

    Call arguments:
        inputs: float tensor of shape `(batch, time, features)`.

    Returns:
        `inputs + PE`, of the same shape.

    Example:
        >>> x = np.zeros((1, 3, 4), "float32")
        >>> row = keras.ops.convert_to_numpy(SinusoidalPositionalEncoding()(x))[0, 1]
        >>> np.allclose(row, [np.sin(1), np.cos(1), np.sin(0.01), np.cos(0.01)], atol=1e-6)
        True

    References:
        - Vaswani, A., et al. (2017). Attention is all you need.
          https://arxiv.org/abs/1706.03762 (section 3.5)
    """

    def __init__(self, max_wavelength=10000.0, **kwargs):
        if not isinstance(max_wavelength, numbers.Real) or isinstance(max_wavelength, bool) or not max_wavelength > 0:
            raise ValueError(f"max_wavelength must be a positive number. Received: max_wavelength={max_wavelength}")
        super().__init__(**kwargs)
        self.max_wavelength = float(max_wavelength)
        self.supports_masking = True

    def build(self, input_shape):
        if len(input_shape) != 3 or input_shape[-1] is None:
            raise ValueError(
                "SinusoidalPositionalEncoding expects inputs of shape "
                "(batch, time, features) with a known feature size. "
                f"Received: input_shape={input_shape}"
            )

    def call(self, inputs):
        dtype = self.compute_dtype
        length = ops.shape(inputs)[1]
        features = inputs.shape[-1]
        positions = ops.cast(ops.arange(length), dtype)  # (time,)
        index = ops.arange(features)  # (features,)
        exponent = ops.cast((index // 2) * 2, dtype) / features  # (features,) 2i / d_model
        inverse_wavelength = ops.power(ops.cast(self.max_wavelength, dtype), -exponent)  # (features,)
        angles = ops.expand_dims(positions, 1) * ops.expand_dims(inverse_wavelength, 0)  # (time, features)
        encoding = ops.where(ops.expand_dims(index % 2 == 0, 0), ops.sin(angles), ops.cos(angles))  # (time, features)
        return inputs + ops.cast(ops.expand_dims(encoding, 0), inputs.dtype)

    def compute_output_shape(self, input_shape):
        return input_shape

    def compute_mask(self, inputs, mask=None):
        return mask

    def get_config(self):
        config = super().get_config()
        config.update({"max_wavelength": self.max_wavelength})
        return config
