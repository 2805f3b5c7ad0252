"""Writing the fine-tuned model as a GGUF (``gemma_weights.write_gguf``), on a tiny Gemma 3.

A tiny source GGUF is written here with the tiny model's own weights and a few metadata fields;
the LoRA-adapted model is then merged and written over it as F16 and Q8_0, read back with
llama.cpp's reader, and put into a fresh backbone, whose logits must match the adapted model's.
"""

import sys

import numpy as np
import pytest

pytest.importorskip("keras_hub")
gguf = pytest.importorskip("gguf")

from predcalc.data import reference_protocol  # noqa: E402
from predcalc.llm import finetune as llm  # noqa: E402
from predcalc.llm import weights as gemma_weights  # noqa: E402


def _names(backbone) -> list[str]:
    keys = {v.path for v in backbone.weights}
    names = ["token_embd.weight", "output_norm.weight"]
    blocks = sum(1 for k in keys if k.endswith("pre_attention_norm/scale"))
    for i in range(blocks):
        for suffix, (layer, kind) in gemma_weights.BLOCK_TENSORS.items():
            leaf = "scale" if kind == "norm" else "kernel"
            if f"decoder_block_{i}/{layer}/{leaf}" in keys:
                names.append(f"blk.{i}.{suffix}.weight")
    return names


@pytest.fixture(scope="module")
def tiny():
    protocol = reference_protocol(0)
    model = llm.build_tiny_model(llm.arithmetic_corpus(protocol.train) + ["0 1 2 3 4 5 6 7 8 9 + - ="], seed=0)
    return model, _names(model.backbone), protocol


def _source(tmp_path, backbone, names):
    path = tmp_path / "source.gguf"
    writer = gguf.GGUFWriter(str(path), arch="gemma3")
    writer.add_block_count(2)
    writer.add_string("tokenizer.ggml.model", "llama")
    writer.add_array("tokenizer.ggml.tokens", ["<pad>", "<eos>", "a"])
    writer.add_file_type(int(gguf.LlamaFileType.MOSTLY_Q8_0))
    for name, array in gemma_weights.merged_tensors(backbone, names).items():
        writer.add_tensor(name, array)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return gguf.GGUFReader(str(path))


def _logits(backbone, ids):
    hidden = backbone({"token_ids": ids, "padding_mask": np.ones_like(ids)})
    return np.asarray(backbone.token_embedding(hidden, reverse=True))


def test_untransform_inverts_transform_exactly():
    rng = np.random.default_rng(0)
    cases = {"heads_in": (3, 8, 4), "heads_out": (3, 4, 8), "dense": (8, 6), "embedding": (5, 8), "norm": (8,)}
    for kind, shape in cases.items():
        keras_value = rng.normal(size=shape).astype(np.float32)
        back = gemma_weights.untransform(keras_value, kind)
        again = gemma_weights.transform(back, kind, shape)
        if kind == "norm":  # (w + 1) - 1 in float32: within one rounding step
            np.testing.assert_allclose(again, keras_value, rtol=0, atol=2e-7)
        else:  # a pure re-layout
            np.testing.assert_array_equal(again, keras_value)
    with pytest.raises(gemma_weights.GemmaWeightsError, match="kind"):
        gemma_weights.untransform(np.zeros(2), "rotary")


@pytest.mark.parametrize("kind, tolerance", [("F16", 2e-2), ("Q8_0", 1e-1)])
def test_the_merged_gguf_answers_like_the_adapted_model(tiny, tmp_path, kind, tolerance):
    model, names, protocol = tiny
    source = _source(tmp_path, model.backbone, names)
    adapted = llm.build_tiny_model(llm.arithmetic_corpus(protocol.train) + ["0 1 2 3 4 5 6 7 8 9 + - ="], seed=0)
    llm.enable_lora(adapted, 2)
    rng = np.random.default_rng(1)
    for v in adapted.backbone.trainable_variables:  # a LoRA update far from zero
        v.assign(rng.normal(scale=0.3, size=v.shape).astype("float32"))
    info = gemma_weights.write_gguf(
        source, gemma_weights.merged_tensors(adapted.backbone, names), tmp_path / "m.gguf", kind
    )
    assert info["tensor_types"]["F32"] == sum(1 for n in names if "norm" in n) and info["size_mb"] > 0
    written = gguf.GGUFReader(str(tmp_path / "m.gguf"))
    assert written.fields["general.file_type"].contents() == int(getattr(gguf.LlamaFileType, f"MOSTLY_{kind}"))
    assert written.fields["tokenizer.ggml.tokens"].contents() == ["<pad>", "<eos>", "a"]
    matrices = {t.tensor_type.name for t in written.tensors if len(t.shape) == 2}
    assert matrices == {kind}
    fresh = llm.build_tiny_model(llm.arithmetic_corpus(protocol.train) + ["0 1 2 3 4 5 6 7 8 9 + - ="], seed=5)
    gemma_weights.assign(fresh.backbone, gemma_weights.dequantised(written))
    ids = np.array([[2, 5, 7, 9, 3, 4]], dtype="int32")
    expected, got = _logits(adapted.backbone, ids), _logits(fresh.backbone, ids)
    assert np.abs(got - expected).max() < tolerance * np.abs(expected).max()
    assert not np.allclose(_logits(model.backbone, ids), expected, atol=tolerance)  # the update mattered


def test_a_gguf_needs_every_tensor_and_a_known_kind(tiny, tmp_path):
    model, names, _ = tiny
    source = _source(tmp_path, model.backbone, names)
    tensors = gemma_weights.merged_tensors(model.backbone, names)
    with pytest.raises(gemma_weights.GemmaWeightsError, match="missing"):
        gemma_weights.write_gguf(source, {k: v for k, v in tensors.items() if k != names[0]}, tmp_path / "a.gguf")
    with pytest.raises(gemma_weights.GemmaWeightsError, match="kind"):
        gemma_weights.write_gguf(source, tensors, tmp_path / "b.gguf", "Q4_K_M")


def test_missing_package_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "gguf", None)
    with pytest.raises(gemma_weights.GemmaWeightsError) as error:
        gemma_weights.gguf_path()
    assert gemma_weights.INSTALL_HINT in str(error.value)
    assert "\n" not in str(error.value)


def test_a_gguf_file_without_llama_cpp_says_how_to_install(monkeypatch, tmp_path):
    from predcalc.llm import deploy as llm_deploy

    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    with pytest.raises(llm_deploy.GemmaAdapterError, match=r"pip install '\.\[llama\]'"):
        llm_deploy.GGUFGemma(tmp_path / "model.gguf")
