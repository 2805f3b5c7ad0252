"""LoRA fine-tuning of a tiny keras-hub Gemma 3 on the reference protocol (predcalc.llm.finetune).

One tiny model is built, adapted and trained for a few steps once per module; the tests read it.
"""

import math

import numpy as np
import pytest

from predcalc.data import reference_protocol
from predcalc.llm import deploy as llm_deploy
from predcalc.llm import finetune as llm

RANK = 4


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    """A tiny Gemma 3 on a small protocol: base preset saved, LoRA rank 4, three short epochs."""
    protocol = reference_protocol(0, draws=300)
    model, info = llm.load_model("", texts=llm.arithmetic_corpus(protocol.train), seed=0)
    directory = tmp_path_factory.mktemp("llm")
    model.save_to_preset(str(directory / "base"))
    base_kernels = {w.path: np.array(w.numpy()) for w in model.backbone.weights}
    expected = llm.lora_parameter_count(model.backbone, RANK)
    trainable = llm.enable_lora(model, RANK)
    tuning = llm.fine_tune(model, protocol, epochs=3, batch_size=32, learning_rate=1e-2)
    return protocol, model, info, directory, base_kernels, expected, trainable, tuning


@pytest.mark.slow
def test_lora_trainable_weights_follow_the_config(tuned):
    _, model, info, _, _, expected, trainable, tuning = tuned
    config = model.backbone.get_config()
    d, h = config["hidden_dim"], config["head_dim"]
    # query kernel (heads, d, h) and value kernel (kv_heads, d, h): A is (heads, d, r), B is (r, h)
    per_layer = RANK * (config["num_query_heads"] * d + h) + RANK * (config["num_key_value_heads"] * d + h)
    assert config["num_layers"] * per_layer == 2 * (4 * (4 * 64 + 16) + 4 * (1 * 64 + 16)) == 2816
    assert trainable == expected == 2816 == tuning.trainable_params
    assert sum(math.prod(w.shape) for w in model.trainable_weights) == 2816
    assert {w.path.split("/")[-1] for w in model.trainable_weights} == {"lora_kernel_a", "lora_kernel_b"}
    assert info == {
        "label": "tiny Gemma 3 (not pre-trained, 71,488 params)",
        "pretrained": False,
        "params": 71488,
        "source": "tiny gemma3 from config",
    }


def test_lora_count_for_other_targets_and_gemma():
    corpus = llm.arithmetic_corpus(reference_protocol(0, draws=50).train)
    model = llm.build_tiny_model(
        corpus,
        architecture="gemma",
        num_layers=1,
        num_query_heads=2,
        num_key_value_heads=2,
        hidden_dim=32,
        head_dim=8,
        intermediate_dim=64,
    )
    targets = ["query", "key", "value", "attention_output"]
    # q, k, v kernels (2, 32, 8): 2 * (2 * 32 + 8) each; output kernel (2, 8, 32): 2 * (2 * 8 + 32)
    assert llm.lora_parameter_count(model.backbone, 2, targets) == 3 * 2 * (64 + 8) + 2 * (16 + 32) == 528
    assert llm.enable_lora(model, 2, targets) == 528


@pytest.mark.slow
def test_training_lowers_the_loss_and_moves_only_the_adapters(tuned):
    _, model, _, _, base_kernels, _, _, tuning = tuned
    for key in ("loss", "val_loss"):  # answer-token cross-entropy, epoch by epoch
        losses = tuning.history[key]
        assert all(later < earlier for earlier, later in zip(losses, losses[1:])), losses
        assert losses[-1] < 0.75 * losses[0], losses
    assert tuning.steps == 3 * math.ceil(len(tuned[0].train) / 32)
    for weight in model.backbone.weights:
        if "lora_kernel" not in weight.path:
            np.testing.assert_array_equal(weight.numpy(), base_kernels[weight.path])
    b = [w for w in model.trainable_weights if w.path.endswith("lora_kernel_b")]
    assert all(np.abs(w.numpy()).max() > 0 for w in b)  # B starts at zero; training moved it


@pytest.mark.slow
def test_packing_matches_the_gemma3_preprocessor(tuned):
    model = tuned[1]
    prompts, answers = ["3 - -2 + 4 =", "-5 + 4 - 0 ="], ["9", "-1"]
    x, y, weight = llm.pack_examples(model.preprocessor.tokenizer, prompts, answers, 16)
    ref_x, ref_y, ref_weight = model.preprocessor({"prompts": prompts, "responses": answers}, sequence_length=16)
    np.testing.assert_array_equal(x["token_ids"], ref_x["token_ids"])
    np.testing.assert_array_equal(x["padding_mask"].astype(bool), ref_x["padding_mask"])
    np.testing.assert_array_equal(y, ref_y)
    np.testing.assert_array_equal(weight.astype(bool), ref_weight)
    # the loss sees the answer and <eos> only: "9" is ["▁", "9"], "-1" is ["▁-", "1"]
    assert weight.sum(axis=1).tolist() == [3, 3]
    with pytest.raises(llm.LLMError, match="sequence_length=5 truncates 2 of 2 examples"):
        llm.pack_examples(model.preprocessor.tokenizer, prompts, answers, 5)


@pytest.mark.slow
def test_saved_preset_and_adapter_reload_with_the_same_generations(tuned):
    protocol, model, _, directory, _, _, _, _ = tuned
    prompts = [llm.prompt_text(e) for e in protocol.test_in.expressions[:24] + protocol.test_long.expressions[-8:]]
    before = llm.generate(model, prompts, batch_size=16)
    paths = llm.save(model, directory / "adapted")
    assert (paths["preset"] / "config.json").is_file() and paths["lora"].name == "adapter.lora.h5"
    assert llm.generate(model, prompts, batch_size=16) == before
    merged = llm.load_preset(paths["preset"])
    assert not getattr(merged.backbone, "_lora_enabled_layers", None)  # LoRA merged into the kernels
    assert llm.generate(merged, prompts, batch_size=16) == before
    adapted = llm.load_adapted(directory / "base", paths["lora"])
    assert llm.trainable_count(adapted) == 2816
    assert llm.generate(adapted, prompts, batch_size=16) == before


@pytest.mark.slow
def test_generation_does_not_depend_on_the_batch(tuned):
    protocol, model = tuned[0], tuned[1]
    prompts = [llm.prompt_text(e) for e in protocol.test_long.expressions[::50]]
    assert llm.generate(model, prompts, batch_size=4) == llm.generate(model, prompts, batch_size=16)
    assert all(
        len(llm.token_lists(model.preprocessor.tokenizer, [t])[0]) <= 2
        for t in llm.generate(model, prompts, max_new_tokens=2)
        if t
    )


@pytest.mark.parametrize(
    "text, expected",
    [
        ("9", 9),
        (" -12<end_of_turn>", -12),
        ("+7", 7),
        ("\n0<eos>", 0),
        ("abc", None),
        ("1 2", None),
        ("--3", None),
        ("", None),
        ("3.5", None),
        ("-", None),
        ("12abc", None),
    ],
)
def test_parse_answer(text, expected):
    assert llm.parse_answer(text) == expected


def test_answer_accuracy_counts_unparseable_answers_as_wrong():
    accuracy, unparseable, parsed = llm.answer_accuracy(
        ["9", " -12<end_of_turn>", "abc", "1 2", "3"], [9.0, -12.0, 5.0, 1.0, 4.0]
    )
    assert accuracy == pytest.approx(2 / 5)
    assert unparseable == 2
    assert parsed == [9, -12, None, None, 3]
    with pytest.raises(llm.LLMError, match="2 generations but 1 answers"):
        llm.answer_accuracy(["1", "2"], [1.0])


@pytest.mark.slow
def test_evaluate_on_a_seeded_subsample(tuned):
    protocol, model = tuned[0], tuned[1]
    sets = {"in": protocol.test_in, "long": protocol.test_long}
    evaluation = llm.evaluate(model, sets, sample=20, seed=3, batch_size=16)
    assert evaluation.n == {"in": 20, "long": 20}
    for name, rows in evaluation.rows.items():
        assert [r["expression"] for r in rows] == list(llm.subsample(sets[name], 20, 3).expressions)
        assert evaluation.accuracy[name] == pytest.approx(np.mean([r["correct"] for r in rows]))
        assert evaluation.unparseable[name] == sum(r["answer"] is None for r in rows)
        assert all(r["correct"] == (r["answer"] == r["truth"]) for r in rows)
    subset = llm.subsample(protocol.test_in, 20, 3).expressions
    assert set(subset) <= set(protocol.test_in.expressions)
    assert list(subset) == sorted(subset, key=protocol.test_in.expressions.index)
    assert llm.subsample(protocol.test_in, 0) is protocol.test_in


@pytest.mark.slow
def test_litert_greedy_generation_matches_keras(tuned, tmp_path):
    protocol, model = tuned[0], tuned[1]
    prompts = [llm.prompt_text(e) for e in protocol.test_in.expressions[:12]]
    exported = llm_deploy.export_litert(model, tmp_path / "lm.tflite", sequence_length=18)
    assert exported["bytes"] > 0
    generator = llm_deploy.LiteRTGreedy(exported["path"], model.preprocessor.tokenizer)
    assert generator.generate(prompts) == llm.generate(model, prompts, batch_size=16)


def test_tokeniser_is_deterministic_and_splits_digits():
    corpus = llm.arithmetic_corpus(reference_protocol(0, draws=100).train)
    proto = llm.train_sentencepiece(corpus)
    assert proto == llm.train_sentencepiece(corpus)
    import sentencepiece

    pieces = sentencepiece.SentencePieceProcessor(model_proto=proto)
    assert [pieces.id_to_piece(i) for i in range(6)] == [
        "<pad>",
        "<eos>",
        "<bos>",
        "<unk>",
        "<start_of_turn>",
        "<end_of_turn>",
    ]
    assert pieces.encode("-12 = 345", out_type=str) == ["▁-", "1", "2", "▁=", "▁", "3", "4", "5"]


@pytest.mark.slow
def test_clear_errors(tuned, tmp_path):
    model = tuned[1]
    for rank in (0, -1, 2.5, True, "4"):
        with pytest.raises(llm.LLMError, match="lora_rank must be a positive integer"):
            llm.enable_lora(model, rank)
    with pytest.raises(llm.LLMError, match="LoRA is already enabled on this model \\(rank 4\\)"):
        llm.enable_lora(model, 4)
    with pytest.raises(FileNotFoundError, match="no preset directory at .*missing"):
        llm.load_model(str(tmp_path / "missing"))
    with pytest.raises(llm.LLMError, match="is not a keras-hub preset: it has no config.json"):
        llm.load_preset(tmp_path)
    with pytest.raises(FileNotFoundError, match="no LoRA adapter file"):
        llm.load_adapted(tmp_path, tmp_path / "none.lora.h5")
    with pytest.raises(llm.LLMError, match="architecture must be one of"):
        llm.build_tiny_model(["1 + 1 = 2"], architecture="llama")
    with pytest.raises(llm.LLMError, match="hidden_dim must be a positive integer"):
        llm.build_tiny_model(["1 + 1 = 2"], hidden_dim=0)
    with pytest.raises(llm.LLMError, match="template must contain"):
        llm.prompt_text("1 + 1", "what is it?")
    with pytest.raises(llm.LLMError, match="epochs must be a positive integer"):
        llm.fine_tune(model, tuned[0], epochs=0)
    with pytest.raises(llm.LLMError, match="the tiny model needs texts"):
        llm.load_model("")
