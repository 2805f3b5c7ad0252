"""The report's table of fine-tuned language models (a notebook's "llm" entry)."""

from predcalc.report import findings


def _llm_record():
    entry = {
        "label": "tiny Gemma 3 (not pre-trained, 71,488 params)",
        "pretrained": False,
        "params": 71488,
        "lora_rank": 4,
        "trainable_params": 2816,
        "accuracy": {"in": 0.25, "out": 0.0125, "long": 0.5},
        "n": {"in": 1478, "out": 2048, "long": 700},
        "unparseable": {"in": 0, "out": 3, "long": 12},
        "train_seconds": 20.0,
    }
    control = {
        **entry,
        "label": "tiny control",
        "lora_rank": None,
        "trainable_params": 71488,
        "accuracy": {"in": 0.5, "out": 0.0, "long": 0.125},
    }
    return {
        "notebook": "07_gemma_finetune",
        "kind": "llm",
        "backend": "tensorflow",
        "parameters": {"lora_rank": 4},
        "data": {"seed": 0, "counts": {"in": 1478}},
        "llm": {**entry, "control": control},
        "models": {},
    }


def test_llm_table_puts_this_projects_rows_beside_the_references():
    table = findings.llm_table([_llm_record(), {"notebook": "01_fnn", "models": {}}])
    assert table["model"].tolist() == [
        "tiny Gemma 3 (not pre-trained, 71,488 params)",
        "tiny control",
        "Gemini 2.5 Pro",
        "Gemma 3 1B",
        "Gemma 3 270M",
    ]
    assert table["source"].tolist()[:2] == ["07_gemma_finetune (this run)"] * 2
    assert table["source"].tolist()[2:] == ["published"] * 3
    assert table["pre-trained"].tolist() == [False, False, True, True, True]
    text = findings.markdown_table(table)
    assert (
        "| tiny Gemma 3 (not pre-trained, 71,488 params) | 07_gemma_finetune (this run) | no | 71,488 | "
        "LoRA rank 4 | 2,816 | 25.00 % | 1.25 % | 50.00 % | 1,478 / 2,048 / 700 | 0 / 3 / 12 |"
    ) in text
    assert (
        "| tiny control | 07_gemma_finetune (this run) | no | 71,488 | all weights | 71,488 | 50.00 % | 0.00 % |"
    ) in text
    assert "| Gemma 3 1B | published | yes | 1 B |  |  | 93.41 % | 63.33 % | 39.57 % |" in text
    assert "| Gemma 3 270M | published | yes | 270 M |  |  | 54.22 % | 9.67 % | 28.00 % |" in text
