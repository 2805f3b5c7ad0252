"""The real Gemma 3 270M from the GGUF package: mapping, tokenizer, next tokens, a broken mapping.

The model is converted once into the cache (shared by sessions and workers, under a lock; the
session that converts keeps the model it converted) and loaded once per session; the GGUF file is
read once per process (``gemma_weights.reader``), by the conversion and these tests alike.
"""

import numpy as np
import pytest

pytest.importorskip("keras_hub")
pytestmark = [pytest.mark.slow, pytest.mark.real_gemma]  # loads a 268M-parameter model (about 30 s)

from predcalc.llm import weights as gemma_weights  # noqa: E402

# Prompt -> the next token greedy decoding must write (read off the correctly mapped model).
NEXT_TOKENS = {
    "Monday, Tuesday,": " Wednesday",
    "January, February, March,": " April",
    "1, 2, 3, 4, ": "5",
    "10, 20, 30, 40, ": "5",
    "3 + 4 = ": "7",
}


@pytest.fixture(scope="module")
def reader():
    return gemma_weights.reader(gemma_weights.gguf_path())


@pytest.fixture(scope="module")
def gemma():
    return gemma_weights.load()


def _next_tokens(model, prompts):
    tokenizer = model.preprocessor.tokenizer
    rows = [[tokenizer.start_token_id] + list(np.asarray(tokenizer(p)).tolist()) for p in prompts]
    length = max(len(r) for r in rows)
    ids = np.zeros((len(rows), length), dtype="int32")
    mask = np.zeros_like(ids)
    for i, r in enumerate(rows):
        ids[i, : len(r)], mask[i, : len(r)] = r, 1
    hidden = np.asarray(model.backbone({"token_ids": ids, "padding_mask": mask}))
    last = hidden[np.arange(len(rows)), [len(r) - 1 for r in rows]]
    logits = np.asarray(model.backbone.token_embedding(last, reverse=True))
    return [tokenizer.id_to_token(int(i)) for i in logits.argmax(-1)]


def _expected(prompts):
    return [NEXT_TOKENS[p].replace(" ", "\u2581") for p in prompts]


def test_every_tensor_is_mapped_and_every_weight_assigned(gemma, reader):
    backbone = gemma.backbone
    names = [t.name for t in reader.tensors]
    plan = gemma_weights.tensor_plan(backbone, names)
    keys = [key for _, key, _ in plan]
    assert len(plan) == len(names) == 236
    assert len(set(keys)) == len(keys)  # no weight assigned twice
    assert set(keys) == {v.path for v in backbone.weights}  # and none left out
    variables = {v.path: v for v in backbone.weights}
    for tensor, (name, key, kind) in zip(reader.tensors, plan):
        shape = tuple(int(d) for d in reversed(tensor.shape))
        out = gemma_weights.transform(np.zeros(shape, "float32"), kind, tuple(variables[key].shape))
        assert out.shape == tuple(variables[key].shape), name
    assert backbone.count_params() == 268_098_176  # keras-hub's gemma3_270m preset


def test_loaded_weights_equal_the_dequantised_tensors(gemma, reader):
    from gguf.quants import dequantize

    tensors = {t.name: t for t in reader.tensors}
    variables = {v.path: v for v in gemma.backbone.weights}
    for name, key, kind in gemma_weights.tensor_plan(gemma.backbone, ["blk.3.attn_q.weight", "blk.5.ffn_norm.weight"]):
        tensor = tensors[name]
        raw = dequantize(tensor.data, tensor.tensor_type).reshape(tuple(int(d) for d in reversed(tensor.shape)))
        expected = gemma_weights.transform(raw, kind, tuple(variables[key].shape))
        np.testing.assert_allclose(np.asarray(variables[key]), expected, rtol=0, atol=1e-6)
    # the query kernel's head 1 is rows 256..511 of llama.cpp's matrix, transposed
    raw = dequantize(tensors["blk.3.attn_q.weight"].data, tensors["blk.3.attn_q.weight"].tensor_type)
    np.testing.assert_allclose(
        np.asarray(variables["decoder_block_3/attention/query/kernel"])[1], raw.reshape(1024, 640)[256:512].T, atol=1e-6
    )


def test_unknown_or_missing_tensors_fail(gemma):
    with pytest.raises(gemma_weights.GemmaWeightsError, match="no keras-hub weight"):
        gemma_weights.tensor_plan(gemma.backbone, ["blk.0.attn_qkv.weight"])
    with pytest.raises(gemma_weights.GemmaWeightsError, match="does not fit"):
        gemma_weights.transform(np.zeros((640, 1024), "float32"), "heads_in", (4, 640, 256))
    before = np.asarray(gemma.backbone.get_layer("final_normalization").scale).copy()
    with pytest.raises(gemma_weights.GemmaWeightsError, match="left unassigned"):
        gemma_weights.assign(gemma.backbone, {"output_norm.weight": np.ones(640, "float32")})
    np.testing.assert_array_equal(np.asarray(gemma.backbone.get_layer("final_normalization").scale), before)


def test_tokenizer_round_trips(gemma):
    tokenizer = gemma.preprocessor.tokenizer
    assert tokenizer.vocabulary_size() == 262_144
    assert [tokenizer.id_to_token(i) for i in (0, 1, 2, 3)] == ["<pad>", "<eos>", "<bos>", "<unk>"]
    for text in ["3 - -2 + 4 = 9", "  two  spaces\nand a line", "12345678901", "数学 🙂 café", "<end_of_turn>"]:
        assert tokenizer.detokenize(tokenizer(text)) == text
    # digits are single tokens: " -12" is "▁-", "1", "2"
    assert [tokenizer.id_to_token(int(i)) for i in np.asarray(tokenizer(" -12"))] == ["\u2581-", "1", "2"]


def test_fixed_prompts_give_the_expected_next_tokens(gemma):
    prompts = list(NEXT_TOKENS)
    assert _next_tokens(gemma, prompts) == _expected(prompts)


def test_a_wrong_mapping_fails_the_next_token_check(gemma, reader):
    """The norm weights mapped without llama.cpp's +1 offset: the model babbles; mapped again
    with it, the expected tokens come back."""
    from gguf.quants import dequantize

    norms = {
        t.name: dequantize(t.data, t.tensor_type)
        for t in reader.tensors
        if gemma_weights.tensor_plan(gemma.backbone, [t.name])[0][2] == "norm"
    }
    prompts = list(NEXT_TOKENS)
    try:
        gemma_weights.assign(gemma.backbone, norms, norm_offset=0.0, partial=True)
        assert _next_tokens(gemma, prompts) != _expected(prompts)
    finally:
        gemma_weights.assign(gemma.backbone, norms, partial=True)
    assert _next_tokens(gemma, prompts) == _expected(prompts)
