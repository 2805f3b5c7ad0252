"""The real Gemma 3 270M on the reference protocol: controls, a small LoRA search, seeds, edges.

Stages, each stored as JSON in a work folder as it finishes so that a stopped run resumes
(``run`` skips what is stored; a seed's training resumes from its checkpoint):

1. ``base``: the pre-trained model before fine-tuning, zero-shot (``"3 - -2 + 4 ="``) and
   few-shot (``FEW_SHOT`` solved training expressions, one a line, before the question), greedy
   decoding with ``studies.llm.generate`` on a seeded sample of each test set; the answer is the
   text up to the first newline, which must be one integer.
2. ``search``: LoRA rank and targets (``SEARCH``), each trained for fewer steps and scored on a
   sample of the **validation** split only; the best validation score picks the recipe.
3. ``seed_K``: the chosen recipe trained with each seed on the whole training split, scored with
   exact answers under greedy decoding on the **full** in-range, out-of-range and long test sets,
   and on samples of three held-out edge sets (2- and 3-digit numbers, 9-14 terms); the adapter
   (``save_lora_weights``) is kept per seed.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import math
import time
from pathlib import Path

import numpy as np

from predcalc.data import Protocol, Split
from predcalc.studies import edges, gemma_adapter, gemma_export, gemma_finetune, gemma_weights, llm

FEW_SHOT = 5
ATTENTION = ("query", "key", "value", "attention_output")
ATTENTION_MLP = ATTENTION + ("ffw_gating", "ffw_gating_2", "ffw_linear")
BASE_RECIPE = gemma_finetune.Recipe(rank=4, targets=("query", "value"), learning_rate=1e-3, schedule="constant")
# The search changes one field at a time from the best recipe so far (its stage's winner carries on).
SEARCH_STAGES = (
    ("rank", ({"rank": 4}, {"rank": 8}, {"rank": 16})),
    ("targets", ({"targets": ATTENTION}, {"targets": ATTENTION_MLP})),
    ("learning_rate", ({"learning_rate": 3e-4}, {"learning_rate": 3e-3})),
)
EDGE_SETS = ("digits_exactly_2", "digits_exactly_3", "terms_9_14")
PREFERRED_ORDER = ("in", "out", "long")
PROBE = 32  # the first in-range test expressions, recorded one by one for each seed


@dataclasses.dataclass
class Settings:
    """What a run does; the full profile's values are the defaults."""

    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    max_passes: float = 10.0  # the cap of every run, in passes over the training split
    every: int = 100  # steps between the stopping rule's validation scores
    patience: int = 3  # scores in a row with no gain that stop a run
    stop_validation: int = 200  # validation expressions the stopping rule scores
    base_sample: int | None = None  # expressions per test set for the base model's controls (None: all)
    edge_sample: int = 100  # expressions per held-out edge set
    agreement_sample: int = 30  # per test set: decoding vs the one-pass score (first seed)
    batch_size: int = 16
    data_seed: int = 0
    sample_seed: int = 0
    search: tuple = SEARCH_STAGES
    checkpoint_every: int = 25

    @property
    def plateau(self) -> gemma_finetune.Plateau:
        return gemma_finetune.Plateau(every=self.every, patience=self.patience, validation=self.stop_validation)

    def cap(self, n_train: int) -> int:
        return math.ceil(self.max_passes * n_train / self.batch_size)

    def recipe(self, base: gemma_finetune.Recipe, n_train: int, **changes) -> gemma_finetune.Recipe:
        return dataclasses.replace(base, steps=self.cap(n_train), batch_size=self.batch_size, **changes)


def _load(path: Path):
    return json.loads(path.read_text()) if path.is_file() else None


def _store(path: Path, record: dict) -> dict:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(record, indent=1, default=float))
    tmp.replace(path)
    return record


def _same_recipe(record: dict, recipe, stored: Path) -> None:
    if record["recipe"] != recipe.as_dict():
        raise gemma_finetune.FineTuneError(
            f"{stored.name} holds a run of {record['recipe']}, not {recipe.as_dict()}: move it away to rerun"
        )


def _fresh_model():
    gc.collect()
    return gemma_weights.load()


# ---------------------------------------------------------------------------------------------
# Base model controls


def few_shot_prefix(train: Split, k: int = FEW_SHOT) -> str:
    """``k`` solved training expressions, one a line: ``"3 - -2 + 4 = 9\\n..."``."""
    return "".join(f"{e} ={gemma_finetune.answer_response(v)}\n" for e, v in zip(train.expressions[:k], train.values))


def first_line_answer(text: str) -> int | None:
    """The integer stated before the first newline, or None."""
    return llm.parse_answer(str(text).split("\n", 1)[0])


def base_controls(model, protocol: Protocol, sample: int, seed: int) -> dict:
    """Zero-shot and few-shot exact accuracy of the model before any fine-tuning."""
    prefix = few_shot_prefix(protocol.train)
    out = {"sample": sample, "few_shot_examples": FEW_SHOT, "few_shot_prefix": prefix}
    for mode, lead in (("zero_shot", ""), ("few_shot", prefix)):
        started = time.perf_counter()
        scores, examples = {}, {}
        for name in PREFERRED_ORDER:
            split = llm.subsample(protocol.test_sets()[name], sample, seed)
            prompts = [lead + llm.prompt_text(e) for e in split.expressions]
            texts = llm.generate(model, prompts, max_new_tokens=6, batch_size=16)
            answers = [first_line_answer(t) for t in texts]
            right = [a is not None and a == int(round(v)) for a, v in zip(answers, split.values)]
            scores[name] = {"accuracy": float(np.mean(right)), "correct": int(sum(right)), "n": len(split)}
            examples[name] = [{"expression": e, "generated": t} for e, t in zip(split.expressions[:3], texts[:3])]
        out[mode] = {"scores": scores, "examples": examples, "seconds": time.perf_counter() - started}
    return out


# ---------------------------------------------------------------------------------------------
# Search and seeds


def _train(recipe, seed, protocol, settings, work, progress):
    """A fresh base model, LoRA-trained by the stopping rule (resuming its checkpoint)."""
    model = _fresh_model()
    stop_set = llm.subsample(protocol.validation, settings.stop_validation, settings.sample_seed)
    training = gemma_finetune.train(
        model,
        protocol.train,
        recipe,
        seed,
        work / "runs" / f"{recipe.name}_seed{seed}.npz",
        every=settings.checkpoint_every,
        progress=progress,
        plateau=settings.plateau,
        validation=stop_set,
    )
    return model, training


def _training_record(training: gemma_finetune.Training) -> dict:
    return {
        "trainable_params": training.trainable_params,
        "steps": training.steps,
        "best_step": training.best_step,
        "stopped_by": training.stopped_by,
        "passes": round(training.passes, 3),
        "tokens": training.tokens,
        "cpu_minutes": round(training.cpu_seconds / 60, 2),
        "stretches": training.stretches,
        "stopping_scores": training.validation,
        "losses": training.losses,
    }


def search(protocol: Protocol, settings: Settings, work: Path, progress: bool = True) -> dict:
    """The staged search on seed 0: each candidate trained to its plateau, then scored on the
    whole validation split; a stage keeps the best recipe so far (ties: fewer trainable weights)."""
    n = len(protocol.train)
    best = settings.recipe(BASE_RECIPE, n)
    rows, stages = {}, []
    for stage, changes in settings.search:
        candidates = [best] + [dataclasses.replace(best, **c) for c in changes]
        for recipe in dict.fromkeys(candidates):  # the carried recipe may equal a candidate
            if recipe.name in rows:
                continue
            stored = work / "search" / f"{recipe.name}.json"
            row = _load(stored)
            if row is not None:
                _same_recipe(row, recipe, stored)
            else:
                model, training = _train(recipe, 0, protocol, settings, work, progress)
                started = time.perf_counter()
                scores = gemma_finetune.exact_accuracy(model, {"validation": protocol.validation}, progress=progress)
                del model
                row = _store(
                    stored,
                    {
                        "recipe": recipe.as_dict(),
                        "seed": 0,
                        "validation": scores["validation"],
                        "score_seconds": time.perf_counter() - started,
                        **_training_record(training),
                    },
                )
            rows[recipe.name] = row
        ranked = [rows[r.name] for r in dict.fromkeys(candidates)]
        winner = max(ranked, key=lambda r: (r["validation"]["accuracy"], -r["trainable_params"]))
        best = next(r for r in candidates if r.name == winner["recipe"]["name"])
        stages.append({"stage": stage, "candidates": [r["recipe"]["name"] for r in ranked], "chosen": best.name})
    return {
        "rows": list(rows.values()),
        "stages": stages,
        "chosen": best.name,
        "chosen_recipe": best.as_dict(),
        "chosen_by": "exact accuracy on the whole validation split, each candidate at its plateau (seed 0)",
    }


def chosen_recipe(record: dict) -> gemma_finetune.Recipe:
    fields = dict(record["chosen_recipe"])
    fields.pop("name")
    return gemma_finetune.Recipe(**{**fields, "targets": tuple(fields["targets"])})


def heldout_edges(protocol: Protocol, sample: int, seed: int) -> dict[str, Split]:
    suite = edges.heldout_suite(data_seed=protocol.seed)
    return {name: llm.subsample(suite[name], sample, seed) for name in EDGE_SETS}


def run_seed(protocol, recipe, seed, settings, work, adapters: Path, progress=True) -> dict:
    stored = work / f"seed_{seed}.json"
    record = _load(stored)
    if record is not None:
        _same_recipe(record, recipe, stored)
        return record
    model, training = _train(recipe, seed, protocol, settings, work, progress)
    sets = {name: protocol.test_sets()[name] for name in PREFERRED_ORDER}
    started = time.perf_counter()
    scores = gemma_finetune.exact_accuracy(model, sets, progress=progress)
    seconds = time.perf_counter() - started
    adapters.mkdir(parents=True, exist_ok=True)
    adapter = adapters / f"seed_{seed}.lora.h5"
    model.backbone.save_lora_weights(str(adapter))
    started = time.perf_counter()
    edge_scores = gemma_finetune.exact_accuracy(
        model, heldout_edges(protocol, settings.edge_sample, settings.sample_seed), progress=progress
    )
    edge_seconds = time.perf_counter() - started
    # per expression, for the command line's regression test (tests/test_gemma_cli.py)
    probe = protocol.test_in.subset(np.arange(len(protocol.test_in)) < PROBE, "probe")
    probe_correct = [int(c) for c in gemma_finetune.exact_correct(model, probe)]
    agreement = None
    if seed == settings.seeds[0] and settings.agreement_sample:
        agreement = {
            name: gemma_finetune.greedy_agreement(model, llm.subsample(split, settings.agreement_sample, seed))
            for name, split in sets.items()
        }
    del model
    return _store(
        stored,
        {
            "seed": seed,
            "recipe": recipe.as_dict(),
            "scores": scores,
            "edges": edge_scores,
            "greedy_agreement": agreement,
            "probe_in_correct": probe_correct,
            "score_seconds": seconds,
            "edge_seconds": edge_seconds,
            "adapter": adapter.name,
            **_training_record(training),
        },
    )


def run(protocol: Protocol, settings: Settings, work, adapters, progress: bool = True, stages=None) -> dict:
    """Every stage, resuming from ``work``; returns the study's record (see ``study_record``).

    The search's choice is written to ``work/choices.json`` before any seed is trained or any
    test set scored; the seeds stage reads the recipe from there.
    """
    work, adapters = Path(work), Path(adapters)
    stages = set(stages or ("search", "seeds", "base"))
    out = {}
    choices = work / "choices.json"
    if "search" in stages:
        out["search"] = search(protocol, settings, work, progress)
        if not choices.is_file():
            _store(choices, {k: out["search"][k] for k in ("chosen", "chosen_recipe", "chosen_by", "stages")})
    if "seeds" in stages:
        if not choices.is_file():
            raise gemma_finetune.FineTuneError(f"{choices} is missing: run the search stage first")
        recipe = chosen_recipe(_load(choices))
        out["seeds"] = [run_seed(protocol, recipe, s, settings, work, adapters, progress) for s in settings.seeds]
    if "base" in stages:
        stored = work / "base.json"
        base = _load(stored)
        if base is None:
            model = _fresh_model()
            base = _store(stored, base_controls(model, protocol, settings.base_sample, settings.sample_seed))
            del model
        out["base"] = base
    return study_record(out, settings, protocol)


def study_record(parts: dict, settings: Settings, protocol: Protocol) -> dict:
    """The ``"gemma3_270m"`` entry of metrics.json."""
    record = {
        "label": gemma_weights.LABEL,
        "weights": "google/gemma-3-270m, llama.cpp GGUF Q4_K_M, dequantised to float32 (not the bf16 original)",
        "settings": {k: v for k, v in dataclasses.asdict(settings).items() if k != "search"},
        "search_stages": [[stage, [dict(c) for c in changes]] for stage, changes in settings.search],
        "test_counts": {name: len(protocol.test_sets()[name]) for name in PREFERRED_ORDER},
        "train_count": len(protocol.train),
        "cap_steps": settings.cap(len(protocol.train)),
        "scoring": "exact answer under greedy decoding, one teacher-forced pass (gemma_finetune.exact_correct)",
        **parts,
    }
    if parts.get("seeds"):
        record["per_seed"] = {name: [s["scores"][name]["accuracy"] for s in parts["seeds"]] for name in PREFERRED_ORDER}
        record["edges_per_seed"] = {name: [s["edges"][name]["accuracy"] for s in parts["seeds"]] for name in EDGE_SETS}
    return json.loads(json.dumps(record, default=float))


if __name__ == "__main__":
    import argparse

    from predcalc.data import reference_protocol
    from predcalc.paths import SCRATCH

    parser = argparse.ArgumentParser(description="The Gemma 3 270M study's long stages, resumable.")
    parser.add_argument("--stages", nargs="+", default=["search", "seeds"], choices=["search", "seeds", "base"])
    parser.add_argument("--seeds", nargs="+", type=int, default=list(Settings.seeds))
    parser.add_argument("--work", default=str(SCRATCH / "gemma3_270m"))
    parser.add_argument("--no-progress", action="store_true")
    arguments = parser.parse_args()
    settings = Settings(seeds=tuple(arguments.seeds))
    work = Path(arguments.work)
    run(
        reference_protocol(settings.data_seed),
        settings,
        work,
        work / "adapters",
        not arguments.no_progress,
        arguments.stages,
    )


# ---------------------------------------------------------------------------------------------
# What the run folder keeps, and the export


def publish(record: dict, work, output, chosen_seed: int | None = None) -> dict:
    """Keep the LoRA adapter of ``chosen_seed`` (default the first seed: chosen before any score)
    in ``output/adapters``, stored as float16 to keep the repository small, with its description;
    ``gemma_adapter.json`` names it for ``predcalc --model <output>``."""
    import h5py  # the adapter's file format, only where one is written

    work, output = Path(work), Path(output)
    chosen = record["seeds"][0] if chosen_seed is None else next(s for s in record["seeds"] if s["seed"] == chosen_seed)
    folder = output / "adapters"
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / chosen["adapter"]
    with h5py.File(work / "adapters" / chosen["adapter"], "r") as source, h5py.File(target, "w") as store:

        def copy(name, item):
            if isinstance(item, h5py.Group):
                store.require_group(name)
            else:
                values = item[()]
                store.create_dataset(name, data=values.astype(np.float16) if values.dtype == np.float32 else values)
            store[name].attrs.update(dict(item.attrs))

        store.attrs.update(dict(source.attrs))
        source.visititems(copy)
    gemma_adapter.write_description(
        target,
        chosen["recipe"]["rank"],
        chosen["recipe"]["targets"],
        llm.DEFAULT_TEMPLATE,
        seed=chosen["seed"],
        base=gemma_weights.LABEL,
        stored_as="float16 (trained in float32)",
    )
    info = {"adapter": f"adapters/{chosen['adapter']}", "seed": chosen["seed"], "base": gemma_weights.LABEL}
    (output / gemma_adapter.RUN_INFO).write_text(json.dumps(info, indent=1) + "\n")
    return info


def export_expressions(protocol: Protocol, n: int = 200, seed: int = 0) -> list[str]:
    """``n`` expressions for the export check: about a third from each test set (seeded)."""
    parts = [n - 2 * (n // 3), n // 3, n // 3]
    return [
        e
        for name, k in zip(PREFERRED_ORDER, parts)
        for e in llm.subsample(protocol.test_sets()[name], k, seed).expressions
    ]


def export_stage(protocol: Protocol, work, adapter, n: int = 200) -> dict:
    """The fine-tuned model as a LiteRT file, checked against Keras on ``n`` expressions (stored)."""
    work = Path(work)
    stored = work / "export.json"
    record = _load(stored)
    if record is not None:
        return record
    model, _ = gemma_adapter.rebuild(adapter)
    path = work / "export" / "gemma3_270m_lora.tflite"
    started = time.perf_counter()
    gemma_export.export_litert(model, path, sequence_length=32)
    convert_seconds = time.perf_counter() - started
    result = gemma_export.check(model, path, export_expressions(protocol, n))
    return _store(stored, {**result, "convert_seconds": round(convert_seconds, 1), "adapter": Path(adapter).name})


def quantise_q4_k_m(f16: Path, target: Path) -> dict | None:
    """llama.cpp's own quantiser (through llama-cpp-python) makes Q4_K_M from the F16 file;
    None where llama-cpp-python is not installed (gguf-py cannot write k-quants)."""
    try:
        import llama_cpp  # the optional extra
    except ImportError:
        return None
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_K_M
    params.nthread = 2
    status = llama_cpp.llama_model_quantize(str(f16).encode(), str(target).encode(), params)
    if status != 0:
        raise gemma_weights.GemmaWeightsError(f"llama.cpp could not quantise {f16.name} to Q4_K_M (status {status})")
    return {"path": target.name, "kind": "Q4_K_M", "size_mb": round(target.stat().st_size / 1e6, 1)}


def gguf_stage(protocol: Protocol, work, adapter, n: int = 200, threads: int = 2) -> dict:
    """The fine-tuned model merged and written as GGUF files (F16, Q8_0, Q4_K_M where llama.cpp's
    quantiser is at hand), each run by llama.cpp on ``n`` test expressions against Keras' greedy
    answers; sizes and tokens per second on ``threads`` threads (stored)."""
    work = Path(work)
    stored = work / "gguf.json"
    record = _load(stored)
    if record is not None:
        return record
    model, info = gemma_adapter.rebuild(adapter)
    expressions = export_expressions(protocol, n)
    prompts = [llm.prompt_text(e) for e in expressions]
    started = time.perf_counter()
    keras_texts = llm.generate(model, prompts, max_new_tokens=8, batch_size=16)
    keras_seconds = time.perf_counter() - started
    source = gemma_weights.reader(gemma_weights.gguf_path())
    tensors = gemma_weights.merged_tensors(model.backbone, [t.name for t in source.tensors])
    del model
    folder = work / "gguf"
    files = [
        gemma_weights.write_gguf(source, tensors, folder / f"gemma3_270m_lora_{k}.gguf", k) for k in ("F16", "Q8_0")
    ]
    del tensors
    q4 = quantise_q4_k_m(folder / "gemma3_270m_lora_F16.gguf", folder / "gemma3_270m_lora_Q4_K_M.gguf")
    files += [q4] if q4 else []
    keras_answers = [llm.parse_answer(t) for t in keras_texts]
    truths = [int(round(v)) for v in _values(protocol, expressions)]
    rows = []
    for file in files:
        runner = gemma_adapter.GGUFGemma(folder / file["path"], threads=threads)
        texts = runner.answers(expressions)
        answers = [llm.parse_answer(t) for t in texts]
        rows.append(
            {
                **file,
                "n": len(expressions),
                "same_answer_as_keras": int(sum(a == b for a, b in zip(answers, keras_answers))),
                "same_text_as_keras": int(sum(a.strip() == b.strip() for a, b in zip(texts, keras_texts))),
                "exact": int(sum(a == t for a, t in zip(answers, truths))),
                "differing": [
                    {"expression": e, "keras": k, "gguf": g}
                    for e, k, g, a, b in zip(expressions, keras_texts, texts, keras_answers, answers)
                    if a != b
                ][:10],
                "load_seconds": round(runner.load_seconds, 2),
                "generated_tokens": runner.generated_tokens,
                "tokens_per_second": round(runner.generated_tokens / runner.decode_seconds, 1),
                "threads": threads,
            }
        )
        del runner
    return _store(
        stored,
        {
            "adapter": Path(adapter).name,
            "n": len(expressions),
            "keras_exact": int(sum(a == t for a, t in zip(keras_answers, truths))),
            "keras_seconds_batched": round(keras_seconds, 1),
            "files": rows,
            "runtime": "llama.cpp through llama-cpp-python, greedy (temperature 0, top_k 1), CPU",
        },
    )


def _values(protocol: Protocol, expressions) -> list[float]:
    values = {}
    for name in PREFERRED_ORDER:
        split = protocol.test_sets()[name]
        values.update(zip(split.expressions, split.values))
    return [values[e] for e in expressions]
