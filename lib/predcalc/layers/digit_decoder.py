"""A small causal decoder over digit tokens whose attention is rotated by given position ids.

Example:
    >>> import numpy as np
    >>> layer = DigitDecoder(vocabulary=15, dim=16, heads=2, depth=1)
    >>> tokens = np.array([[14, 11, 3, 13]], "int32")
    >>> tuple(layer([tokens, np.arange(4)[None], np.zeros_like(tokens)]).shape)
    (1, 4, 15)
    >>> learned = DigitDecoder(vocabulary=15, dim=16, heads=2, depth=1, id_table=8, level_table=4)
    >>> tuple(learned([tokens, np.arange(4)[None], np.zeros_like(tokens)]).shape)
    (1, 4, 15)
"""

from __future__ import annotations

import math

import keras
import numpy as np
from keras import ops

from predcalc.layers._common import positive_int, positive_ints


def rotary_frequencies(pairs: int, slowest: float) -> np.ndarray:
    """``pairs`` angular frequencies from 1 down to ``slowest`` radians per id, geometrically."""
    if pairs == 1:
        return np.ones(1, np.float32)
    return (slowest ** (np.arange(pairs) / (pairs - 1))).astype(np.float32)


def angles(positions, frequencies, dtype):
    """``cos`` and ``sin`` of ``positions * frequencies``, shaped ``(batch, length, 1, pairs)``."""
    # expand_dims, not [:, :, None, None]: LiteRT has a builtin kernel for it, not for a strided
    # slice that adds axes
    theta = ops.expand_dims(ops.expand_dims(ops.cast(positions, dtype), -1), -1) * ops.cast(frequencies, dtype)
    return ops.cos(theta), ops.sin(theta)


def rotate(x, cos, sin):
    """Rotate feature ``i`` of ``x`` ``(batch, length, heads, 2 * pairs)`` with feature
    ``i + pairs`` by the angles whose ``cos`` and ``sin`` are given (rotary position embedding)."""
    pairs = cos.shape[-1]
    first, second = x[..., :pairs], x[..., pairs:]
    return ops.concatenate([first * cos - second * sin, first * sin + second * cos], axis=-1)


@keras.saving.register_keras_serializable(package="predcalc")
class DigitDecoder(keras.layers.Layer):
    """Token embedding, then ``depth`` pre-norm causal transformer blocks whose queries and keys are
    rotated by two given ids (rotary position embedding), then logits over the vocabulary.

    ``ids`` (a position, an index within a number, or a significance) rotate ``id_pairs`` feature
    pairs of each head, ``levels`` (a row; 0 where unused) the remaining pairs; attention scores
    therefore depend only on the differences of ids and of levels, never on their values, and no
    other part of the network sees them.

    With ``id_table`` and ``level_table`` (sizes) the ids are read instead as learned embeddings
    added to the token embedding (ids from ``id_floor``, levels from 0), and nothing is rotated:
    the literature's position coupling, which is trained with random id offsets so that every
    row of the tables is learned. An id past its table cannot be read; callers refuse such inputs.

    Inputs: ``[tokens, ids, levels]``, int ``(batch, length)``.
    Output: logits ``(batch, length, vocabulary)``; position ``t``'s logits predict token ``t + 1``.
    Nothing in it adds or carries: every weight is learned.
    """

    def __init__(
        self,
        vocabulary: int,
        dim: int = 64,
        heads: int = 4,
        depth: int = 2,
        id_pairs: int | None = None,
        intermediate: int | None = None,
        id_table: int | None = None,
        level_table: int | None = None,
        id_floor: int = -1,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.vocabulary, self.dim, self.heads, self.depth = positive_ints(
            vocabulary=vocabulary, dim=dim, heads=heads, depth=depth
        )
        if self.dim % self.heads or (self.dim // self.heads) % 2:
            raise ValueError(
                f"DigitDecoder: dim must split into heads of an even size. Received: dim={dim}, heads={heads}"
            )
        self.head_dim = self.dim // self.heads
        pairs = self.head_dim // 2
        id_pairs = positive_int("id_pairs", id_pairs, allow_none=True)
        self.id_pairs = id_pairs if id_pairs is not None else pairs - (3 * pairs) // 8
        if not 1 <= self.id_pairs <= pairs:
            raise ValueError(f"DigitDecoder: id_pairs must lie in 1..{pairs}. Received: id_pairs={id_pairs}")
        self.intermediate = positive_int("intermediate", intermediate, allow_none=True) or 4 * self.dim
        self.id_frequencies = rotary_frequencies(self.id_pairs, 1 / 64)
        self.level_frequencies = rotary_frequencies(max(pairs - self.id_pairs, 1), 1 / 8)[: pairs - self.id_pairs]
        if isinstance(id_floor, bool) or not isinstance(id_floor, int | np.integer):
            raise ValueError(f"DigitDecoder: id_floor must be an integer. Received: id_floor={id_floor!r}")
        self.id_floor = int(id_floor)  # the lowest id the inputs hold (the formats' ID_FLOOR)
        self.id_table = positive_int("id_table", id_table, allow_none=True)
        self.level_table = positive_int("level_table", level_table, allow_none=True)
        if (self.id_table is None) != (self.level_table is None):
            raise ValueError(
                f"DigitDecoder: give both id_table and level_table, or neither. "
                f"Received: id_table={id_table}, level_table={level_table}"
            )
        self.token_embedding = keras.layers.Embedding(self.vocabulary, self.dim, name="token_embedding")
        if self.learned_ids:
            self.id_embedding = keras.layers.Embedding(self.id_table, self.dim, name="id_embedding")
            self.level_embedding = keras.layers.Embedding(self.level_table, self.dim, name="level_embedding")
        self.blocks = []
        for i in range(self.depth):
            self.blocks.append(
                {
                    "norm1": keras.layers.LayerNormalization(epsilon=1e-5, name=f"block{i}_norm1"),
                    "query": keras.layers.Dense(self.dim, use_bias=False, name=f"block{i}_query"),
                    "key": keras.layers.Dense(self.dim, use_bias=False, name=f"block{i}_key"),
                    "value": keras.layers.Dense(self.dim, use_bias=False, name=f"block{i}_value"),
                    "out": keras.layers.Dense(self.dim, name=f"block{i}_out"),
                    "norm2": keras.layers.LayerNormalization(epsilon=1e-5, name=f"block{i}_norm2"),
                    "up": keras.layers.Dense(self.intermediate, activation="gelu", name=f"block{i}_up"),
                    "down": keras.layers.Dense(self.dim, name=f"block{i}_down"),
                }
            )
        self.norm = keras.layers.LayerNormalization(epsilon=1e-5, name="final_norm")
        self.logits = keras.layers.Dense(self.vocabulary, name="logits")

    @property
    def learned_ids(self) -> bool:
        """Whether ids and levels are learned embeddings (else they rotate attention)."""
        return self.id_table is not None

    def build(self, input_shape):
        # the inputs' checks here, where Keras passes a ValueError on as it is (from call it adds lines)
        if len(input_shape) != 3 or not all(isinstance(shape, (list, tuple)) for shape in input_shape):
            raise ValueError(f"DigitDecoder expects [tokens, ids, levels]. Received: input_shape={input_shape}")
        shapes = [tuple(shape) for shape in input_shape]
        if any(len(shape) != 2 for shape in shapes):
            raise ValueError(f"DigitDecoder expects [tokens, ids, levels] of shape (batch, length). Received: {shapes}")
        if len({shape[1] for shape in shapes} - {None}) > 1:
            raise ValueError(f"DigitDecoder: tokens, ids and levels must have one length. Received: {shapes}")
        shape = shapes[0]
        self.token_embedding.build(shape)
        if self.learned_ids:
            self.id_embedding.build(shape)
            self.level_embedding.build(shape)
        hidden = shape + (self.dim,)
        for block in self.blocks:
            for name, layer in block.items():
                layer.build(shape + (self.intermediate,) if name == "down" else hidden)
        self.norm.build(hidden)
        self.logits.build(hidden)
        super().build(input_shape)

    def _split(self, x, length):
        return ops.reshape(x, (-1, length, self.heads, self.head_dim))

    def _rotate(self, x, rotations):
        cut = 2 * self.id_pairs
        if cut == self.head_dim:
            return rotate(x, *rotations[0])
        return ops.concatenate([rotate(x[..., :cut], *rotations[0]), rotate(x[..., cut:], *rotations[1])], axis=-1)

    def call(self, inputs):
        if not isinstance(inputs, (list, tuple)) or len(inputs) != 3:
            raise ValueError("DigitDecoder expects [tokens, ids, levels]")
        tokens, ids, levels = inputs
        if len(tokens.shape) != 2:
            raise ValueError(f"DigitDecoder expects tokens of shape (batch, length), got {tuple(tokens.shape)}")
        x = self.token_embedding(tokens)
        if self.learned_ids:
            x = x + self.id_embedding(ids - self.id_floor) + self.level_embedding(levels)
        length = ops.shape(tokens)[1]
        causal = ops.tril(ops.ones((length, length), dtype="bool"))
        scale = 1.0 / math.sqrt(self.head_dim)
        rotations = None
        if not self.learned_ids:
            rotations = [angles(ids, self.id_frequencies, x.dtype), angles(levels, self.level_frequencies, x.dtype)]
        for block in self.blocks:
            h = block["norm1"](x)
            q, k = self._split(block["query"](h), length), self._split(block["key"](h), length)
            if not self.learned_ids:
                q, k = self._rotate(q, rotations), self._rotate(k, rotations)
            v = self._split(block["value"](h), length)
            scores = ops.einsum("blhd,bmhd->bhlm", q, k) * scale
            scores = ops.where(causal[None, None], scores, ops.cast(-1e9, scores.dtype))
            attended = ops.einsum("bhlm,bmhd->blhd", ops.softmax(scores, axis=-1), v)
            x = x + block["out"](ops.reshape(attended, (-1, length, self.dim)))
            x = x + block["down"](block["up"](block["norm2"](x)))
        return self.logits(self.norm(x))

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[0]) + (self.vocabulary,)

    def get_config(self):
        config = super().get_config()
        config.update(
            vocabulary=self.vocabulary,
            dim=self.dim,
            heads=self.heads,
            depth=self.depth,
            id_pairs=self.id_pairs,
            intermediate=self.intermediate,
            id_table=self.id_table,
            level_table=self.level_table,
            id_floor=self.id_floor,
        )
        return config
