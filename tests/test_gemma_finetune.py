"""The real-Gemma study's machinery on the tiny Gemma 3: packing, resumable training, scoring,
the adapter description, the LiteRT file and the published adapter."""

import json

import numpy as np
import pytest

pytest.importorskip("keras_hub")

from predcalc.data import reference_protocol  # noqa: E402
from predcalc.llm import deploy as llm_deploy
from predcalc.llm import finetune as llm
from predcalc.llm import study as gemma_study  # noqa: E402

RECIPE = gemma_study.Recipe(rank=2, steps=6, batch_size=8, learning_rate=1e-2, warmup_steps=1)


@pytest.fixture(scope="module")
def protocol():
    return reference_protocol(0)


def _tiny(protocol):
    texts = [
        f"{llm.prompt_text(e)}{llm_deploy.answer_response(v)}"
        for e, v in zip(protocol.train.expressions, protocol.train.values)
    ]
    return llm.build_tiny_model(texts + ["0 1 2 3 4 5 6 7 8 9 + - ="], seed=0)


def test_pack_marks_the_answer_positions(protocol):
    model = _tiny(protocol)
    tokenizer = model.preprocessor.tokenizer
    split = protocol.train.subset(np.arange(len(protocol.train)) < 5, "five")
    packed = llm_deploy.pack(tokenizer, split)
    for i, (expression, value) in enumerate(zip(split.expressions, split.values)):
        prompt = llm.token_lists(tokenizer, [llm.prompt_text(expression)])[0]
        answer = llm.token_lists(tokenizer, [llm_deploy.answer_response(value)])[0]
        full = [tokenizer.start_token_id, *prompt, *answer, tokenizer.end_token_id]
        k = len(answer) + 1
        np.testing.assert_array_equal(packed.targets[i, :k], answer + [tokenizer.end_token_id])
        # each position holds the token just before its target
        np.testing.assert_array_equal(packed.token_ids[i, packed.positions[i, :k]], full[len(prompt) : len(prompt) + k])
        assert packed.weights[i].sum() == k
        assert packed.padding_mask[i].sum() == len(full) - 1


def test_batch_order_is_seeded_epochs_of_permutations():
    order = gemma_study.batch_order(10, steps=5, batch_size=4, seed=3)
    assert order.shape == (5, 4)
    flat = order.reshape(-1)
    assert sorted(flat[:10]) == list(range(10)) and sorted(flat[10:20]) == list(range(10))
    np.testing.assert_array_equal(order, gemma_study.batch_order(10, 5, 4, 3))
    assert not np.array_equal(order, gemma_study.batch_order(10, 5, 4, 4))


def test_bad_recipes_fail():
    with pytest.raises(gemma_study.FineTuneError, match="rank"):
        gemma_study.Recipe(rank=0)
    with pytest.raises(gemma_study.FineTuneError, match="targets"):
        gemma_study.Recipe(targets=())


def test_a_stopped_run_resumes_where_it_stopped(protocol, tmp_path):
    whole = _tiny(protocol)
    straight = gemma_study.train(whole, protocol.train, RECIPE, 1, tmp_path / "a.npz", every=2, progress=False)
    first = _tiny(protocol)
    gemma_study.train(first, protocol.train, RECIPE, 1, tmp_path / "b.npz", every=2, progress=False, until=3)
    assert not gemma_study.finished(tmp_path / "b.npz", RECIPE)
    second = _tiny(protocol)
    resumed = gemma_study.train(second, protocol.train, RECIPE, 1, tmp_path / "b.npz", every=2, progress=False)
    assert resumed.resumed_from == 3 and gemma_study.finished(tmp_path / "b.npz", RECIPE)
    np.testing.assert_allclose(resumed.losses, straight.losses, rtol=1e-4)
    for a, b in zip(whole.backbone.trainable_variables, second.backbone.trainable_variables):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-6)
    assert straight.trainable_params == llm.lora_parameter_count(_tiny(protocol).backbone, 2)


def test_one_pass_score_equals_greedy_decoding(protocol, tmp_path):
    model = _tiny(protocol)
    recipe = gemma_study.Recipe(rank=4, steps=150, batch_size=32, learning_rate=3e-2, warmup_steps=5)
    gemma_study.train(model, protocol.train, recipe, 0, tmp_path / "c.npz", progress=False)
    split = llm.subsample(protocol.train, 48, 0)
    agreement = llm.greedy_agreement(model, split)
    assert agreement["agree"] == agreement["n"] == 48
    assert agreement["decoding_accuracy"] == agreement["pass_accuracy"] > 0  # some answers right, some wrong
    assert agreement["pass_accuracy"] < 1
    # a wrong truth is never counted right
    shifted = type(split)(split.name, split.expressions, split.values + 1, split.terms)
    right = llm.exact_correct(model, split)
    assert not np.any(llm.exact_correct(model, shifted) & right)  # one answer, not two
    assert llm.exact_accuracy(model, {"s": split}, progress=False)["s"]["correct"] == int(right.sum())


def test_the_scratchpad_writes_each_running_total_then_stops_at_the_answer():
    assert llm_deploy.scratchpad_response("-3 + 4 - 2") == " 1 = -1"
    assert llm_deploy.response_text("3 - -2", 5.0, "scratchpad") == " 5"  # two terms: the answer alone
    assert llm_deploy.final_answer(" 1 = -1<eos>", "scratchpad") == -1
    assert llm_deploy.final_answer(" 1 = -1", "answer") is None  # the answer format states one integer
    with pytest.raises(llm_deploy.LLMError, match="response must be one of"):
        llm_deploy.response_text("1 + 2", 3.0, "essay")
    written = gemma_study.Recipe(response="scratchpad")
    assert written.name.endswith("_scratchpad") and written.as_dict()["response"] == "scratchpad"
    assert "response" not in gemma_study.Recipe().as_dict()  # records from before the field still match
    with pytest.raises(gemma_study.FineTuneError, match="response"):
        gemma_study.Recipe(response="essay")


@pytest.mark.slow
def test_the_scratchpad_is_packed_trained_and_scored_like_greedy_decoding(protocol, tmp_path):
    model = _tiny(protocol)
    tokenizer = model.preprocessor.tokenizer
    split = llm.subsample(protocol.train, 32, 0)
    packed = llm_deploy.pack(tokenizer, split, response="scratchpad")
    written = llm.token_lists(tokenizer, [llm_deploy.scratchpad_response(split.expressions[0])])[0]
    np.testing.assert_array_equal(packed.targets[0, : len(written) + 1], written + [tokenizer.end_token_id])
    recipe = gemma_study.Recipe(
        rank=8, steps=300, batch_size=32, learning_rate=3e-2, warmup_steps=5, response="scratchpad"
    )
    gemma_study.train(model, protocol.train, recipe, 0, tmp_path / "s.npz", progress=False)
    agreement = llm.greedy_agreement(model, split, response="scratchpad")
    assert agreement["agree"] == agreement["n"] == 32
    assert 0 < agreement["pass_accuracy"] < 1


def test_adapter_paths_and_description(tmp_path):
    adapter = tmp_path / "adapters" / "seed_0.lora.h5"
    adapter.parent.mkdir()
    adapter.write_bytes(b"")
    assert llm_deploy.is_gemma_adapter(adapter) and not llm_deploy.is_gemma_adapter(tmp_path)
    with pytest.raises(llm_deploy.GemmaAdapterError, match="seed_0.json"):
        llm_deploy.description(adapter)
    llm_deploy.write_description(adapter, 4, ["query", "value"], "{expression} =", seed=0)
    (tmp_path / llm_deploy.RUN_INFO).write_text(json.dumps({"adapter": "adapters/seed_0.lora.h5"}))
    assert llm_deploy.is_gemma_adapter(tmp_path)
    assert llm_deploy.adapter_file(tmp_path) == adapter
    assert llm_deploy.description(adapter)["targets"] == ["query", "value"]
    with pytest.raises(FileNotFoundError):
        llm_deploy.adapter_file(tmp_path / "missing.lora.h5")


@pytest.mark.slow  # converts a model to LiteRT (about 20 s)
def test_litert_file_answers_like_keras(protocol, tmp_path):
    pytest.importorskip("ai_edge_litert")
    model = _tiny(protocol)
    recipe = gemma_study.Recipe(rank=4, steps=40, batch_size=32, learning_rate=3e-2, warmup_steps=5)
    gemma_study.train(model, protocol.train, recipe, 0, tmp_path / "d.npz", progress=False)
    path = tmp_path / "tiny.tflite"
    llm_deploy.export_litert(model, path, sequence_length=32)
    expressions = list(protocol.test_in.expressions[:6]) + list(protocol.test_long.expressions[-4:])
    result = llm_deploy.check_litert(model, path, expressions)
    assert result["n"] == 10 and result["same_text"] == result["same"] == 10, result["differing"]
    assert result["size_mb"] > 0 and result["tokens_per_second"] > 0
    with pytest.raises(llm.LLMError, match="positions"):
        llm_deploy.LiteRTGreedy(path, model.preprocessor.tokenizer).generate([" + ".join(["1"] * 40) + " ="])


def test_published_adapter_is_float16_and_loads_back(protocol, tmp_path):
    model = _tiny(protocol)
    gemma_study.train(model, protocol.train, RECIPE, 0, tmp_path / "e.npz", progress=False)
    (tmp_path / "work" / "adapters").mkdir(parents=True)
    model.backbone.save_lora_weights(str(tmp_path / "work" / "adapters" / "seed_7.lora.h5"))
    record = {"seeds": [{"seed": 7, "adapter": "seed_7.lora.h5", "recipe": RECIPE.as_dict()}]}
    info = llm_deploy.publish(record, tmp_path / "work", tmp_path / "run")
    published = llm_deploy.adapter_file(tmp_path / "run")
    assert info["seed"] == 7 and published.name == "seed_7.lora.h5"
    import h5py

    with h5py.File(published) as store:
        kinds = []
        store.visititems(lambda n, item: kinds.append(item.dtype) if isinstance(item, h5py.Dataset) else None)
    assert np.dtype(np.float16) in kinds and np.dtype(np.float32) not in kinds
    assert llm_deploy.description(published)["rank"] == RECIPE.rank
    again = _tiny(protocol)
    llm.enable_lora(again, RECIPE.rank, list(RECIPE.targets))
    again.backbone.load_lora_weights(str(published))
    for a, b in zip(model.backbone.trainable_variables, again.backbone.trainable_variables):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-3, atol=1e-4)
        assert np.asarray(b).dtype == np.float32


PLATEAU = gemma_study.Plateau(every=3, patience=2, validation=16)
CAPPED = gemma_study.Recipe(rank=2, steps=30, batch_size=8, learning_rate=3e-2, warmup_steps=1, schedule="constant")


def test_the_stopping_rule_keeps_the_best_weights_and_resumes(protocol, tmp_path):
    validation = llm.subsample(protocol.validation, PLATEAU.validation, 0)
    model = _tiny(protocol)
    kwargs = dict(every=2, progress=False, plateau=PLATEAU, validation=validation)
    straight = gemma_study.train(model, protocol.train, CAPPED, 1, tmp_path / "a.npz", **kwargs)
    scores = [v["accuracy"] for v in straight.validation]
    assert [v["step"] for v in straight.validation] == list(range(3, straight.steps + 1, 3))
    best = int(np.argmax(scores))  # the first best score
    assert straight.best_step == straight.validation[best]["step"]
    if straight.stopped_by == "plateau":
        assert len(scores) - 1 - best == PLATEAU.patience and max(scores[best + 1 :]) <= scores[best]
    else:
        assert straight.stopped_by == "cap" and straight.steps == CAPPED.steps
    # the model ends with the best score's weights
    assert llm.exact_correct(model, validation).mean() == scores[best]
    assert straight.passes == straight.steps * 8 / len(protocol.train) and straight.tokens > straight.steps * 8
    assert straight.cpu_seconds > 0 and len(straight.stretches) == 1
    # interrupted after 4 steps, then resumed: the same scores, the same stop, two stretches
    gemma_study.train(_tiny(protocol), protocol.train, CAPPED, 1, tmp_path / "b.npz", until=4, **kwargs)
    again = _tiny(protocol)
    resumed = gemma_study.train(again, protocol.train, CAPPED, 1, tmp_path / "b.npz", **kwargs)
    assert resumed.resumed_from == 4 and len(resumed.stretches) == 2
    assert (resumed.steps, resumed.best_step, resumed.stopped_by) == (
        straight.steps,
        straight.best_step,
        straight.stopped_by,
    )
    np.testing.assert_allclose([v["accuracy"] for v in resumed.validation], scores)
    assert gemma_study.finished(tmp_path / "b.npz", CAPPED)


def test_the_stopping_rule_needs_a_validation_split(protocol, tmp_path):
    with pytest.raises(gemma_study.FineTuneError, match="validation"):
        gemma_study.train(_tiny(protocol), protocol.train, CAPPED, 1, tmp_path / "c.npz", plateau=PLATEAU)
    with pytest.raises(gemma_study.FineTuneError, match="patience"):
        gemma_study.Plateau(patience=0)
    with pytest.raises(gemma_study.FineTuneError, match="schedule"):
        gemma_study.Recipe(schedule="linear")


@pytest.mark.slow  # trains two tiny candidates to their stopping rule
def test_a_candidate_whose_row_is_stored_leaves_no_checkpoint(protocol, tmp_path, monkeypatch):
    monkeypatch.setattr(gemma_study, "_fresh_model", lambda: _tiny(protocol))
    settings = gemma_study.Settings(
        max_passes=0.05, every=2, patience=1, stop_validation=8, search=(("rank", ({"rank": 2},)),)
    )
    record = gemma_study.search(protocol, settings, tmp_path, progress=False)
    assert sorted(p.name for p in (tmp_path / "search").iterdir()) == sorted(
        f"{row['recipe']['name']}.json" for row in record["rows"]
    )
    assert len(record["rows"]) == 2 and not list((tmp_path / "runs").iterdir())  # checkpoints dropped
    monkeypatch.setattr(gemma_study, "_fresh_model", lambda: pytest.fail("a stored row was trained again"))
    assert gemma_study.search(protocol, settings, tmp_path, progress=False)["chosen"] == record["chosen"]
