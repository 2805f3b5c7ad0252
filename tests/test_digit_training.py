"""Training the digit models (`predcalc.training.digits`): the batches a seed draws, the decoder's
and the recurrence's batches, and `train` resuming a seed where it stopped (tiny models, a few
steps; the development sets cut to a few expressions)."""

import dataclasses

import keras
import numpy as np
import pytest

from predcalc.data import digits
from predcalc.models.digits import DIGIT_MODELS
from predcalc.training import digits as training

DECODER, GRU = "digits_coupled_scratch", "digits_column_gru"


def test_a_batch_depends_on_the_seed_and_the_step_only():
    first = training.draw_batch(np.random.default_rng([3, 17]), 32)
    assert first == training.draw_batch(np.random.default_rng([3, 17]), 32)
    assert first != training.draw_batch(np.random.default_rng([3, 18]), 32)


def test_a_batch_has_one_width_and_one_term_count_inside_the_training_box():
    seen_widths, seen_terms = set(), set()
    for step in range(60):
        batch = training.draw_batch(np.random.default_rng([0, step]), 16)
        assert len({digits.shape_key(e) for e in batch}) == 1  # one layout, one sequence length
        width, terms = digits.shape_key(batch[0])
        assert training.TRAIN_DIGITS[0] <= width <= training.TRAIN_DIGITS[1]
        assert training.TRAIN_TERMS[0] <= terms <= training.TRAIN_TERMS[1]
        seen_widths.add(width)
        seen_terms.add(terms)
    assert seen_widths == set(range(1, 11)) and seen_terms == {2, 3}


def test_decoder_batch_predicts_each_next_token_where_the_network_writes():
    fmt = digits.Format()
    batch = training.draw_batch(np.random.default_rng([0, 5]), 4)
    (tokens, ids, levels), targets, weights = training.decoder_batch(fmt, batch)
    assert tokens.shape == ids.shape == levels.shape == targets.shape == weights.shape
    assert tokens.shape[1] % 32 == 0 and weights.dtype == np.float32
    for row, expression in enumerate(batch):
        encoded = digits.encode(expression, fmt)
        n = len(encoded.tokens)
        np.testing.assert_array_equal(tokens[row, : n - 1], encoded.tokens[:-1])
        np.testing.assert_array_equal(targets[row, : n - 1], encoded.tokens[1:])
        np.testing.assert_array_equal(weights[row, : n - 1], encoded.written[1:])
        np.testing.assert_array_equal(ids[row, : n - 1], encoded.ids[:-1])
        np.testing.assert_array_equal(levels[row, : n - 1], encoded.levels[:-1])
        assert not weights[row, n - 1 :].any() and not targets[row, n - 1 :].any()


def test_learned_tables_get_one_random_offset_a_sequence_inside_the_tables():
    fmt, tables = digits.Format(), DIGIT_MODELS.named("digits_coupled_learned").tables
    batch = training.draw_batch(np.random.default_rng([0, 5]), 64)
    (tokens, ids, levels), targets, weights = training.decoder_batch(fmt, batch)
    (shifted_tokens, shifted_ids, shifted_levels), shifted_targets, shifted_weights = training.decoder_batch(
        fmt, batch, np.random.default_rng(1), tables
    )
    for same, other in ((tokens, shifted_tokens), (targets, shifted_targets), (weights, shifted_weights)):
        np.testing.assert_array_equal(same, other)
    id_offsets, level_offsets = shifted_ids - ids, shifted_levels - levels
    assert (id_offsets == id_offsets[:, :1]).all() and (level_offsets == level_offsets[:, :1]).all()
    assert len(set(id_offsets[:, 0])) > 20 and len(set(level_offsets[:, 0])) > 10  # drawn for each sequence
    assert shifted_ids.min() >= digits.ID_FLOOR and shifted_ids.max() - digits.ID_FLOOR < tables[0]
    assert shifted_levels.min() >= 0 and shifted_levels.max() < tables[1]
    again = training.decoder_batch(fmt, batch, np.random.default_rng(1), tables)[0][1]
    np.testing.assert_array_equal(again, shifted_ids)


def test_column_batch():
    batch = training.draw_batch(np.random.default_rng([1, 2]), 5)
    columns, targets = training.column_batch(batch)
    width = batch[0].width
    assert columns.shape == (5, width + 1, digits.COLUMN_FEATURES)
    assert targets["digits"].shape == (5, width + 1) and targets["sign"].shape == (5,)
    assert digits.read_columns(np.eye(10)[targets["digits"]], np.eye(2)[targets["sign"]]) == [e.value for e in batch]


def test_exact_counts_equal_answers():
    batch = [digits.parse("1 + 2"), digits.parse("3 - 5")]
    assert training.exact([3, None], batch) == 0.5 and training.exact([3, -2], batch) == 1.0


# --- train: a tiny seed, resumed ------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny():
    """``run(folder, steps)``: `train` of the decoder or the recurrence at a tiny size, batches of 4,
    development sets of two expressions (evaluated at the end only, unless ``evaluate_every``)."""
    decoder, gru = DIGIT_MODELS.named(DECODER), DIGIT_MODELS.named(GRU)
    sets = {
        "small": digits.draw(np.random.default_rng(1), 2, terms=(2, 2), digits=(1, 2)),
        "four_terms": digits.draw(np.random.default_rng(2), 2, terms=(4, 4), digits=(1, 2)),
    }

    def run(folder, steps, name=DECODER, evaluate_every=1000):
        return training.train(name, 0, steps, folder, batch_size=4, evaluate_every=evaluate_every, progress=False)

    with pytest.MonkeyPatch.context() as patch:
        tiny_decoder = dataclasses.replace(decoder, build=lambda: decoder.build(dim=16, heads=2, depth=1))
        patch.setitem(DIGIT_MODELS, DECODER, tiny_decoder)
        patch.setitem(DIGIT_MODELS, GRU, dataclasses.replace(gru, build=lambda: gru.build(units=8)))
        patch.setattr(training, "development_sets", lambda size=100: sets)
        yield run


@pytest.fixture(scope="module")
def whole(tiny, tmp_path_factory):
    """The tiny decoder's seed 0 trained for 3 steps in one run: its folder and state."""
    folder = tmp_path_factory.mktemp("whole")
    return folder, tiny(folder, 3)


def _weights(folder):
    model = keras.saving.load_model(folder / "checkpoint.keras")
    return [keras.ops.convert_to_numpy(w) for w in model.weights], int(
        keras.ops.convert_to_numpy(model.optimizer.iterations)
    )


@pytest.mark.slow
def test_an_interrupted_seed_resumes_to_the_weights_of_an_uninterrupted_run(tiny, whole, tmp_path, monkeypatch):
    whole_folder, whole = whole
    assert whole["steps"] == 3 and len(whole["stretches"]) == 1 and [d["step"] for d in whole["development"]] == [3]
    assert set(whole["development"][0]) == {"step", "loss", "small", "four_terms"}
    draw, calls = training.draw_batch, []

    def interrupted(rng, size):  # the run stops while drawing the batch of its third step
        calls.append(size)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return draw(rng, size)

    with monkeypatch.context() as patch:
        patch.setattr(training, "draw_batch", interrupted)
        with pytest.raises(KeyboardInterrupt):
            tiny(tmp_path / "resumed", 3, evaluate_every=2)  # saved at step 2
    resumed = tiny(tmp_path / "resumed", 3, evaluate_every=2)
    assert resumed["steps"] == 3 and resumed["budget"] == 3
    assert [s["from_step"] for s in resumed["stretches"]] == [0, 2]
    assert [d["step"] for d in resumed["development"]] == [2, 3]
    assert resumed["development"][-1]["loss"] == whole["development"][-1]["loss"]
    (expected, expected_iterations), (actual, iterations) = _weights(whole_folder), _weights(tmp_path / "resumed")
    assert iterations == expected_iterations == 3
    for a, b in zip(actual, expected, strict=True):
        np.testing.assert_array_equal(a, b)
    assert tiny(tmp_path / "resumed", 2) == resumed  # a seed trained far enough is left alone


@pytest.mark.slow
def test_a_seed_is_not_trained_past_the_budget_its_schedule_was_built_for(tiny, tmp_path):
    # the cosine schedule in the checkpoint is the first budget's: a larger one needs a new folder
    tiny(tmp_path / "seed", 2)
    with pytest.raises(ValueError, match="budget of 2 steps; a budget of 3 needs a new folder"):
        tiny(tmp_path / "seed", 3)


@pytest.mark.slow
def test_the_recurrence_trains_and_cannot_answer_four_terms(tiny, tmp_path):
    state = tiny(tmp_path / "gru", 2, name=GRU)
    assert state["steps"] == 2 and state["model"] == GRU and state["development"][-1]["four_terms"] == 0.0
    model = keras.saving.load_model(tmp_path / "gru" / "checkpoint.keras")
    sets = training.development_sets()
    assert training.answers(model, DIGIT_MODELS.named(GRU), sets["four_terms"]) == [None, None]
    assert all(isinstance(a, int) for a in training.answers(model, DIGIT_MODELS.named(GRU), sets["small"]))
