"""Tests for `DigitDecoder`: rotary attention over given ids and levels (or learned id and level
tables), against NumPy.

The rotation against a NumPy rotation of complex numbers, one whole forward pass against a NumPy
reference that reads the layer's weights, the invariance rotary attention promises (only id and
level differences matter), and causality: the logits at position ``t`` of the whole padded
sequence are those of the prefix ``[:t + 1]``, which is what the greedy decoding loop relies on.
"""

import functools
import math

import keras
import numpy as np
import pytest
from layer_helpers import layer_norm, patterned_weights, to_numpy

from predcalc.data import digits
from predcalc.data.digits import ID_FLOOR
from predcalc.layers.digit_decoder import DigitDecoder, angles, rotary_frequencies, rotate

VOCAB, BATCH, LENGTH = 15, 2, 9
# (dim, heads, depth, id_pairs): heads of 4 features with one id pair and one level pair; heads of
# 8 with the default split (3 id pairs, 1 level pair) and two blocks
CONFIGS = [(8, 2, 1, 1), (16, 2, 2, None)]


def numpy_rotate(x, theta):
    """Feature ``i`` and ``i + pairs`` as the complex number ``x_i + j x_{i+pairs}``, turned by ``theta``."""
    pairs = theta.shape[-1]
    turned = (x[..., :pairs] + 1j * x[..., pairs:]) * np.exp(1j * theta)
    return np.concatenate([turned.real, turned.imag], axis=-1)


def gelu(x):
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def numpy_decoder(layer, w, tokens, ids, levels):
    """The layer's forward pass in float64: embedding, pre-norm blocks of causal rotary attention
    and a GELU MLP, final LayerNorm, logits."""
    heads, head_dim, cut = layer.heads, layer.head_dim, 2 * layer.id_pairs
    learned = layer.id_table is not None
    id_theta = ids[:, :, None, None] * layer.id_frequencies.astype("float64")
    level_theta = levels[:, :, None, None] * layer.level_frequencies.astype("float64")

    def rotated(y):
        if learned:  # learned tables: nothing turns
            return y
        parts = [numpy_rotate(y[..., :cut], id_theta)]
        if cut < head_dim:
            parts.append(numpy_rotate(y[..., cut:], level_theta))
        return np.concatenate(parts, axis=-1)

    def split(y):
        return y.reshape(*y.shape[:2], heads, head_dim)

    length = tokens.shape[1]
    causal = np.tril(np.ones((length, length), bool))
    x = w["token_embedding/embeddings"][tokens]
    if learned:
        x = x + w["id_embedding/embeddings"][ids - layer.id_floor] + w["level_embedding/embeddings"][levels]
    for i in range(layer.depth):
        b = f"block{i}_"
        h = layer_norm(x, w[b + "norm1/gamma"], w[b + "norm1/beta"])
        q, k = rotated(split(h @ w[b + "query/kernel"])), rotated(split(h @ w[b + "key/kernel"]))
        v = split(h @ w[b + "value/kernel"])
        scores = np.where(causal, np.einsum("blhd,bmhd->bhlm", q, k) / math.sqrt(head_dim), -np.inf)
        attended = np.einsum("bhlm,bmhd->blhd", softmax(scores), v).reshape(x.shape)
        x = x + attended @ w[b + "out/kernel"] + w[b + "out/bias"]
        h = layer_norm(x, w[b + "norm2/gamma"], w[b + "norm2/beta"])
        x = x + gelu(h @ w[b + "up/kernel"] + w[b + "up/bias"]) @ w[b + "down/kernel"] + w[b + "down/bias"]
    x = layer_norm(x, w["final_norm/gamma"], w["final_norm/beta"])
    return x @ w["logits/kernel"] + w["logits/bias"]


def _decoder(dim, heads, depth, id_pairs, tables=(None, None)):
    layer = DigitDecoder(
        VOCAB,
        dim=dim,
        heads=heads,
        depth=depth,
        id_pairs=id_pairs,
        id_table=tables[0],
        level_table=tables[1],
        name="decoder",
    )
    return layer, patterned_weights(layer, [(None, None)] * 3, scale=0.8, offset=1.0, step=3)


def _inputs(seed=0, length=LENGTH):
    rng = np.random.default_rng(seed)
    tokens = rng.integers(0, VOCAB, size=(BATCH, length)).astype("int32")
    ids = rng.integers(-3, 12, size=(BATCH, length)).astype("int32")
    levels = rng.integers(0, 8, size=(BATCH, length)).astype("int32")
    return tokens, ids, levels


@functools.cache
def _model(layer):
    inputs = [keras.Input((None,), dtype="int32") for _ in range(3)]
    return keras.Model(inputs, layer(inputs))


def _logits(layer, tokens, ids, levels):
    """The layer's logits, through a model's ``predict_on_batch``: compiled once a shape (on JAX,
    eager calls compile each op for each new length, seconds a length)."""
    return to_numpy(_model(layer).predict_on_batch([tokens, ids, levels]))


def test_rotary_frequencies_run_geometrically_from_one_to_the_slowest():
    np.testing.assert_allclose(rotary_frequencies(4, 1 / 64), [1, 1 / 4, 1 / 16, 1 / 64], rtol=1e-6)
    np.testing.assert_array_equal(rotary_frequencies(1, 1 / 8), [1.0])
    assert rotary_frequencies(3, 0.5).dtype == np.float32


def test_rotate_matches_a_numpy_rotation():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 5, 3, 8)).astype("float32")
    positions = rng.integers(-20, 40, size=(2, 5))
    frequencies = rotary_frequencies(4, 1 / 64)
    cos, sin = angles(positions, frequencies, "float32")
    assert tuple(cos.shape) == tuple(sin.shape) == (2, 5, 1, 4)
    turned = to_numpy(rotate(keras.ops.convert_to_tensor(x), cos, sin))
    expected = numpy_rotate(x.astype("float64"), positions[:, :, None, None] * frequencies.astype("float64"))
    np.testing.assert_allclose(turned, expected, atol=1e-5)
    pair_norms = np.hypot(turned[..., :4], turned[..., 4:])  # a rotation keeps each pair's length
    np.testing.assert_allclose(pair_norms, np.hypot(x[..., :4], x[..., 4:]), rtol=1e-5)


@pytest.mark.parametrize("config", CONFIGS, ids=[f"dim{c[0]}-depth{c[2]}" for c in CONFIGS])
def test_forward_pass_matches_numpy_reference(config):
    layer, weights = _decoder(*config)
    tokens, ids, levels = _inputs()
    expected = numpy_decoder(layer, weights, tokens, ids, levels)
    actual = _logits(layer, tokens, ids, levels)
    assert actual.shape == (BATCH, LENGTH, VOCAB)
    np.testing.assert_allclose(actual, expected, atol=1e-5)


def test_the_default_split_gives_ids_most_pairs():
    assert DigitDecoder(VOCAB, dim=64, heads=4).id_pairs == 5  # of 8 pairs a head; 3 for the levels
    assert DigitDecoder(VOCAB, dim=16, heads=2).id_pairs == 3  # of 4
    assert DigitDecoder(VOCAB, dim=8, heads=2).id_pairs == 2  # of 2: no pair turns by the levels


@pytest.mark.parametrize("config", CONFIGS, ids=[f"dim{c[0]}-depth{c[2]}" for c in CONFIGS])
def test_shifting_every_id_and_level_by_a_constant_leaves_the_logits(config):
    layer, _ = _decoder(*config)
    tokens, ids, levels = _inputs(seed=1)
    logits = _logits(layer, tokens, ids, levels)
    np.testing.assert_allclose(_logits(layer, tokens, ids + 7, levels), logits, atol=1e-5)
    np.testing.assert_allclose(_logits(layer, tokens, ids, levels + 3), logits, atol=1e-5)
    per_row = np.array([[-5], [11]], "int32")  # each sequence its own shift
    np.testing.assert_allclose(_logits(layer, tokens, ids + per_row, levels - per_row), logits, atol=1e-5)


@pytest.mark.parametrize("config", CONFIGS, ids=[f"dim{c[0]}-depth{c[2]}" for c in CONFIGS])
def test_id_and_level_differences_do_matter(config):
    layer, _ = _decoder(*config)
    tokens, ids, levels = _inputs(seed=2)
    logits = _logits(layer, tokens, ids, levels)
    assert np.max(np.abs(_logits(layer, tokens, ids[:, ::-1], levels) - logits)) > 1e-3
    assert np.max(np.abs(_logits(layer, tokens, ids, levels[:, ::-1]) - logits)) > 1e-3


def test_without_a_level_pair_the_levels_are_not_read():
    layer, _ = _decoder(8, 2, 1, None)  # heads of 2 pairs, both turned by the ids
    tokens, ids, levels = _inputs(seed=3)
    np.testing.assert_array_equal(_logits(layer, tokens, ids, levels[:, ::-1]), _logits(layer, tokens, ids, levels))


@pytest.mark.filterwarnings("ignore:You are using a softmax")  # the one-token prefix: one key to attend to
@pytest.mark.parametrize("config", CONFIGS, ids=[f"dim{c[0]}-depth{c[2]}" for c in CONFIGS])
def test_logits_at_each_position_are_those_of_its_prefix(config):
    layer, _ = _decoder(*config)
    tokens, ids, levels = _inputs(seed=4)
    logits = _logits(layer, tokens, ids, levels)
    for t in range(LENGTH):
        prefix = _logits(layer, tokens[:, : t + 1], ids[:, : t + 1], levels[:, : t + 1])
        np.testing.assert_allclose(prefix, logits[:, : t + 1], atol=1e-5, err_msg=f"position {t}")


@pytest.mark.parametrize("config", CONFIGS, ids=[f"dim{c[0]}-depth{c[2]}" for c in CONFIGS])
def test_changing_what_comes_after_t_leaves_the_logits_up_to_t(config):
    layer, _ = _decoder(*config)
    tokens, ids, levels = _inputs(seed=5)
    logits = _logits(layer, tokens, ids, levels)
    other_tokens, other_ids, other_levels = _inputs(seed=6)
    for t in (0, 3, LENGTH - 2):
        later = np.arange(LENGTH) > t
        changed = _logits(
            layer,
            np.where(later, other_tokens, tokens),
            np.where(later, other_ids, ids),
            np.where(later, other_levels, levels),
        )
        np.testing.assert_allclose(changed[:, : t + 1], logits[:, : t + 1], atol=1e-6)
        assert np.max(np.abs(changed[:, t + 1 :] - logits[:, t + 1 :])) > 1e-4


def test_greedy_gets_the_prefix_logits_from_the_padded_sequence():
    """At every position the loop asks for, the logits of the padded sequence it hands over (what
    `answers` reads) equal those of the prefix alone: the parallel and the step paths agree; and
    they equal those of the whole padded layout."""
    layer, _ = _decoder(16, 2, 1, None)
    # one layout of few written tokens (two scratch rows of 3 digits, the answer's sign and 2 digits)
    expressions = digits.draw(np.random.default_rng(0), 4, terms=(2, 2), digits=(1, 1))
    fmt = digits.Format()
    asked = []

    def logits_at(tokens, ids, levels, position):
        handed = _logits(layer, tokens, ids, levels)[:, position - 1]
        step = _logits(layer, tokens[:, :position], ids[:, :position], levels[:, :position])[:, -1]
        np.testing.assert_allclose(handed, step, atol=1e-5, err_msg=f"position {position}")
        longer = [np.pad(a, ((0, 0), (0, 32))) for a in (tokens, ids, levels)]  # padding after changes nothing
        np.testing.assert_allclose(_logits(layer, *longer)[:, position - 1], handed, atol=1e-5)
        asked.append(position)
        return handed

    answers = digits.greedy(expressions, fmt, logits_at)
    assert len(answers) == len(expressions) and asked == [8, 9, 10, 12, 13, 14, 16, 17, 18]


LEARNED = (16, 2, 2, None, (16, 8))  # ids -1..14 and levels 0..7


def _learned_inputs(seed=0):
    tokens, _, _ = _inputs(seed)
    rng = np.random.default_rng(seed + 100)
    ids = rng.integers(ID_FLOOR, 15, size=tokens.shape).astype("int32")
    return tokens, ids, rng.integers(0, 8, size=tokens.shape).astype("int32")


def test_learned_tables_forward_pass_matches_numpy_reference():
    layer, weights = _decoder(*LEARNED)
    tokens, ids, levels = _learned_inputs()
    expected = numpy_decoder(layer, weights, tokens, ids, levels)
    np.testing.assert_allclose(_logits(layer, tokens, ids, levels), expected, atol=1e-5)


def test_learned_tables_read_the_ids_themselves_not_their_differences():
    layer, _ = _decoder(*LEARNED)
    tokens, ids, levels = _learned_inputs(seed=1)
    logits = _logits(layer, tokens, ids, levels)
    assert np.max(np.abs(_logits(layer, tokens, ids - 1 + (ids == ID_FLOOR), levels) - logits)) > 1e-3  # a shift
    assert np.max(np.abs(_logits(layer, tokens, ids, levels // 2) - logits)) > 1e-3


@pytest.mark.filterwarnings("ignore:You are using a softmax")
def test_learned_tables_stay_causal():
    layer, _ = _decoder(*LEARNED)
    tokens, ids, levels = _learned_inputs(seed=2)
    logits = _logits(layer, tokens, ids, levels)
    for t in (0, 4, LENGTH - 1):
        prefix = _logits(layer, tokens[:, : t + 1], ids[:, : t + 1], levels[:, : t + 1])
        np.testing.assert_allclose(prefix, logits[:, : t + 1], atol=1e-5)


def test_one_table_without_the_other_is_refused_in_one_line():
    with pytest.raises(ValueError, match="give both id_table and level_table, or neither"):
        DigitDecoder(VOCAB, dim=16, heads=2, id_table=16)
