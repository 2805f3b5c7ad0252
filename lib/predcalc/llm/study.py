"""LoRA fine-tuning of the real Gemma 3 270M on the reference protocol: a resumable study.

The training loop is written out rather than ``fit``: the output head (262,144 x 640) runs only at
the answer positions (``finetune.answer_logits``; the prompt is masked, so the loss and its gradient are
the same), a run is checkpointed every few steps (``runs/<recipe>_seed<k>.npz``) and resumes where
it stopped with the same batches, and a stopping rule on validation ends it. Checkpoints are not
committed (rank 16 on attention and MLP makes 45 MB); a run's record is, and its checkpoints are then
deleted. Stages, each stored as
JSON in a work folder as it finishes (``run`` skips what is stored): ``base`` (the model before
fine-tuning, zero-shot and few-shot), ``search`` (``SEARCH_STAGES`` on seed 0, chosen on the whole
validation split into ``choices.json``), ``seed_K`` (the chosen recipe per seed, scored on the full
test sets and on samples of three held-out edge sets, its adapter kept), ``scratchpad`` (the same,
with the chosen recipe writing the running total after each term before the answer, in
``scratchpad/``), and the model outside
Keras (``deploy.export_stage``, ``weights.gguf_stage``).

Run the long stages with ``python -m predcalc.llm.study --stages search seeds scratchpad``.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import math
import os
import platform
import time
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf
from tqdm.auto import tqdm

from predcalc.data import Protocol, Split
from predcalc.llm import deploy, finetune, weights
from predcalc.llm.deploy import load_stage, store_stage
from predcalc.studies import edges


class FineTuneError(finetune.LLMError):
    """A bad recipe or a checkpoint that does not fit the run."""


@dataclasses.dataclass(frozen=True)
class Recipe:
    """One LoRA fine-tuning recipe (what the validation search varies: rank and targets)."""

    rank: int = 4
    targets: tuple[str, ...] = ("query", "value")
    steps: int = 300
    batch_size: int = 16
    learning_rate: float = 1e-3
    warmup_steps: int = 10
    schedule: str = "cosine"  # "cosine": decay to zero at ``steps``; "constant": flat after the warm-up
    response: str = "answer"  # what the model writes: the answer, or the scratchpad (deploy.RESPONSES)

    def __post_init__(self):
        for name in ("rank", "steps", "batch_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise FineTuneError(f"{name} must be a positive integer. Received: {name}={value!r}")
        if not self.learning_rate > 0:
            raise FineTuneError(f"learning_rate must be positive. Received: learning_rate={self.learning_rate}")
        if not self.targets:
            raise FineTuneError("targets must name at least one layer (e.g. 'query', 'value')")
        if self.schedule not in ("cosine", "constant"):
            raise FineTuneError(f"schedule must be 'cosine' or 'constant'. Received: schedule={self.schedule!r}")
        if self.response not in deploy.RESPONSES:
            raise FineTuneError(f"response must be one of {deploy.RESPONSES}. Received: response={self.response!r}")

    @property
    def name(self) -> str:
        written = "" if self.response == "answer" else f"_{self.response}"
        return f"r{self.rank}_{'-'.join(self.targets)}_lr{self.learning_rate:g}{written}"

    def as_dict(self) -> dict:
        out = {**dataclasses.asdict(self), "targets": list(self.targets), "name": self.name}
        if self.response == "answer":  # the records written before the scratchpad existed stay valid
            del out["response"]
        return out


# ---------------------------------------------------------------------------------------------
# Training


def batch_order(n: int, steps: int, batch_size: int, seed: int) -> np.ndarray:
    """The example indices of every step, (steps, batch_size): epochs of seeded permutations."""
    rng = np.random.default_rng(seed)
    needed = steps * batch_size
    stream = np.concatenate([rng.permutation(n) for _ in range(math.ceil(needed / n))])
    return stream[:needed].reshape(steps, batch_size)


def learning_rate(recipe: Recipe):
    """Linear warm-up to the peak rate, then cosine decay to zero at the last step, or flat
    (``schedule="constant"``, for a run whose length the stopping rule decides)."""
    warmup = min(recipe.warmup_steps, recipe.steps - 1)
    if recipe.schedule == "constant":
        return WarmupConstant(recipe.learning_rate, warmup)
    return keras.optimizers.schedules.CosineDecay(
        initial_learning_rate=0.0 if warmup else recipe.learning_rate,
        decay_steps=max(recipe.steps - warmup, 1),
        warmup_target=recipe.learning_rate if warmup else None,
        warmup_steps=warmup,
    )


class WarmupConstant(keras.optimizers.schedules.LearningRateSchedule):
    """A linear warm-up over ``warmup`` steps to ``peak``, then ``peak``."""

    def __init__(self, peak: float, warmup: int):
        self.peak, self.warmup = float(peak), int(warmup)

    def __call__(self, step):
        ramp = (keras.ops.cast(step, "float32") + 1.0) / float(self.warmup + 1)
        return self.peak * keras.ops.minimum(1.0, ramp)

    def get_config(self):
        return {"peak": self.peak, "warmup": self.warmup}


@dataclasses.dataclass(frozen=True)
class Plateau:
    """The stopping rule: score ``validation`` expressions every ``every`` steps, stop after
    ``patience`` scores in a row with no gain over the best, or at the recipe's ``steps`` (the
    cap). The run keeps the weights of its best score."""

    every: int = 100
    patience: int = 3
    validation: int = 200

    def __post_init__(self):
        for name in ("every", "patience", "validation"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise FineTuneError(f"{name} must be a positive integer. Received: {name}={value!r}")


@dataclasses.dataclass
class Training:
    recipe: dict
    seed: int
    steps: int  # the steps trained (at most the recipe's cap)
    trainable_params: int
    losses: list  # mean answer-token loss of each step
    seconds: float  # training time of this process (a resumed run counts only its own steps)
    resumed_from: int
    passes: float = 0.0  # steps x batch / training expressions
    tokens: int = 0  # input tokens (padding excluded) of every batch trained
    cpu_seconds: float = 0.0  # process CPU time over every stretch of the run
    stretches: list = dataclasses.field(default_factory=list)  # one per process that trained it
    validation: list = dataclasses.field(default_factory=list)  # the stopping rule's scores
    best_step: int | None = None  # the weights kept (the best validation score's step)
    stopped_by: str = "steps"  # "steps", "plateau" or "cap"


def train(
    model,
    train_split: Split,
    recipe: Recipe,
    seed: int,
    checkpoint: Path,
    every: int = 25,
    template: str = finetune.DEFAULT_TEMPLATE,
    progress: bool = True,
    until: int | None = None,
    plateau: Plateau | None = None,
    validation: Split | None = None,
) -> Training:
    """LoRA fine-tuning of ``model`` on ``train_split``; resumes from ``checkpoint`` if present.

    ``model`` is the base model; LoRA is enabled here (rank and targets from ``recipe``).
    ``until`` stops (checkpointed) after that step, as an interrupted run would.
    With ``plateau`` (and a ``validation`` split), the run is scored every ``plateau.every``
    steps and stops by that rule (``recipe.steps`` is then the cap); the model ends with the
    weights of the best score. Without it, the run trains ``recipe.steps`` steps.
    """
    if plateau is not None and validation is None:
        raise FineTuneError("the stopping rule needs a validation split")
    keras.utils.set_random_seed(int(seed))  # the LoRA A matrices' initialisation
    trainable = finetune.enable_lora(model, recipe.rank, list(recipe.targets))
    backbone = model.backbone
    variables = backbone.trainable_variables
    optimizer = keras.optimizers.Adam(learning_rate(recipe))
    optimizer.build(variables)
    saver = weights.Checkpoint(checkpoint, variables, optimizer)
    start_step, losses, state = saver.restore()
    state = {"cpu_seconds": 0.0, "stretches": [], "validation": [], "best": None, "stopped_by": None, **state}
    data = deploy.pack(model.preprocessor.tokenizer, train_split, template, response=recipe.response)
    order = batch_order(len(train_split), recipe.steps, recipe.batch_size, seed)
    best_file = weights.best_path(checkpoint)

    @tf.function(reduce_retracing=True)
    def step(token_ids, padding_mask, positions, targets, weights):
        with tf.GradientTape() as tape:
            logits = finetune.answer_logits(backbone, token_ids, padding_mask, positions)
            losses_ = keras.losses.sparse_categorical_crossentropy(targets, logits, from_logits=True)
            loss = tf.reduce_sum(losses_ * weights) / tf.reduce_sum(weights)
        gradients = tape.gradient(loss, variables)
        optimizer.apply_gradients(zip(gradients, variables))
        return loss

    def score(at: int) -> bool:
        """Score validation at step ``at``; True when the rule says stop."""
        accuracy = float(finetune.exact_correct(model, validation, response=recipe.response).mean())
        state["validation"].append({"step": at, "accuracy": accuracy, "loss": float(np.mean(losses[-plateau.every :]))})
        if state["best"] is None or accuracy > state["best"]["accuracy"]:
            state["best"] = {"step": at, "accuracy": accuracy}
            weights.save_weights(best_file, variables)
        since = sum(1 for v in state["validation"] if v["step"] > state["best"]["step"])
        return since >= plateau.patience

    began, cpu_began = time.perf_counter(), time.process_time()
    if state["stopped_by"] is None and start_step < recipe.steps:
        hardware = f"{keras.backend.backend()} on {platform.machine()} CPU, {os.cpu_count()} cores"
        state["stretches"].append({"from_step": start_step, "hardware": hardware})
    desc = f"LoRA {recipe.name} seed {seed}"
    bar = tqdm(total=recipe.steps, initial=start_step, desc=desc, unit="step", disable=not progress)
    s = start_step
    while state["stopped_by"] is None and s < min(recipe.steps, until or recipe.steps):
        idx = order[s]
        loss = step(
            data.token_ids[idx], data.padding_mask[idx], data.positions[idx], data.targets[idx], data.weights[idx]
        )
        losses.append(float(loss))
        s += 1
        bar.update(1)
        bar.set_postfix(loss=f"{losses[-1]:.3f}")
        stop = False
        if plateau is not None and (s % plateau.every == 0 or s == recipe.steps):
            stop = score(s)
            bar.set_postfix(loss=f"{losses[-1]:.3f}", validation=f"{state['validation'][-1]['accuracy']:.1%}")
        if stop or s == recipe.steps:
            state["stopped_by"] = "plateau" if stop else ("cap" if plateau is not None else "steps")
        if state["stopped_by"] or s % every == 0 or s == until:
            state["cpu_seconds"] += time.process_time() - cpu_began
            cpu_began = time.process_time()
            saver.save(s, losses, state)
    bar.close()
    if state["stopped_by"] is None and s == start_step and start_step >= recipe.steps:
        state["stopped_by"] = "steps"
    if plateau is not None and state["stopped_by"] and best_file.is_file():
        weights.load_weights(best_file, variables)
    tokens = int(data.padding_mask[order[:s].ravel()].sum()) if s else 0
    return Training(
        recipe=recipe.as_dict(),
        seed=int(seed),
        steps=s,
        trainable_params=int(trainable),
        losses=losses,
        seconds=time.perf_counter() - began,
        resumed_from=start_step,
        passes=s * recipe.batch_size / len(train_split),
        tokens=tokens,
        cpu_seconds=float(state["cpu_seconds"]),
        stretches=state["stretches"],
        validation=state["validation"],
        best_step=state["best"]["step"] if state["best"] else None,
        stopped_by=state["stopped_by"] or "interrupted",
    )


def finished(checkpoint: Path, recipe: Recipe) -> bool:
    """Whether ``checkpoint`` holds a run of ``recipe`` that stopped (its rule, or its last step)."""
    if not Path(checkpoint).is_file():
        return False
    with np.load(checkpoint) as data:
        state = json.loads(str(data["state"])) if "state" in data.files else {}
        return bool(state.get("stopped_by")) or int(data["step"]) >= recipe.steps


# ---------------------------------------------------------------------------------------------
# The study

FEW_SHOT = 5
ATTENTION = ("query", "key", "value", "attention_output")
ATTENTION_MLP = ATTENTION + ("ffw_gating", "ffw_gating_2", "ffw_linear")
BASE_RECIPE = Recipe(rank=4, targets=("query", "value"), learning_rate=1e-3, schedule="constant")
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
    def plateau(self) -> Plateau:
        return Plateau(every=self.every, patience=self.patience, validation=self.stop_validation)

    def cap(self, n_train: int) -> int:
        return math.ceil(self.max_passes * n_train / self.batch_size)

    def recipe(self, base: Recipe, n_train: int, **changes) -> Recipe:
        return dataclasses.replace(base, steps=self.cap(n_train), batch_size=self.batch_size, **changes)


def _same_recipe(record: dict, recipe, stored: Path) -> None:
    if record["recipe"] != recipe.as_dict():
        raise FineTuneError(
            f"{stored.name} holds a run of {record['recipe']}, not {recipe.as_dict()}: move it away to rerun"
        )


def _fresh_model():
    gc.collect()
    return weights.load()


def few_shot_prefix(train: Split, k: int = FEW_SHOT) -> str:
    """``k`` solved training expressions, one a line: ``"3 - -2 + 4 = 9\\n..."``."""
    return "".join(f"{e} ={deploy.answer_response(v)}\n" for e, v in zip(train.expressions[:k], train.values))


def first_line_answer(text: str) -> int | None:
    """The integer stated before the first newline, or None."""
    return finetune.parse_answer(str(text).split("\n", 1)[0])


def base_controls(model, protocol: Protocol, sample: int, seed: int) -> dict:
    """Zero-shot and few-shot exact accuracy of the model before any fine-tuning."""
    prefix = few_shot_prefix(protocol.train)
    out = {"sample": sample, "few_shot_examples": FEW_SHOT, "few_shot_prefix": prefix}
    for mode, lead in (("zero_shot", ""), ("few_shot", prefix)):
        started = time.perf_counter()
        scores, examples = {}, {}
        for name in PREFERRED_ORDER:
            split = finetune.subsample(protocol.test_sets()[name], sample, seed)
            prompts = [lead + finetune.prompt_text(e) for e in split.expressions]
            texts = finetune.generate(model, prompts, max_new_tokens=6, batch_size=16)
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
    stop_set = finetune.subsample(protocol.validation, settings.stop_validation, settings.sample_seed)
    kwargs = dict(every=settings.checkpoint_every, progress=progress, plateau=settings.plateau, validation=stop_set)
    return model, train(model, protocol.train, recipe, seed, _checkpoint(work, recipe, seed), **kwargs)


def _checkpoint(work: Path, recipe: Recipe, seed: int) -> Path:
    return work / "runs" / f"{recipe.name}_seed{seed}.npz"


def _drop_checkpoints(work: Path, recipe: Recipe, seed: int) -> None:
    """A run's record is stored: its checkpoint and best weights (up to 45 MB at rank 16) go."""
    checkpoint = _checkpoint(work, recipe, seed)
    for path in (checkpoint, weights.best_path(checkpoint)):
        path.unlink(missing_ok=True)


def _training_record(training: Training) -> dict:
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
            row = load_stage(stored)
            if row is not None:
                _same_recipe(row, recipe, stored)
            else:
                model, training = _train(recipe, 0, protocol, settings, work, progress)
                started = time.perf_counter()
                scores = finetune.exact_accuracy(model, {"validation": protocol.validation}, progress=progress)
                del model
                row = store_stage(
                    stored,
                    {
                        "recipe": recipe.as_dict(),
                        "seed": 0,
                        "validation": scores["validation"],
                        "score_seconds": time.perf_counter() - started,
                        **_training_record(training),
                    },
                )
                _drop_checkpoints(work, recipe, 0)
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


def chosen_recipe(record: dict) -> Recipe:
    fields = dict(record["chosen_recipe"])
    fields.pop("name")
    return Recipe(**{**fields, "targets": tuple(fields["targets"])})


def heldout_edges(protocol: Protocol, sample: int, seed: int) -> dict[str, Split]:
    suite = edges.heldout_suite(data_seed=protocol.seed)
    return {name: finetune.subsample(suite[name], sample, seed) for name in EDGE_SETS}


def run_seed(protocol, recipe, seed, settings, work, adapters: Path, progress=True) -> dict:
    stored = work / f"seed_{seed}.json"
    record = load_stage(stored)
    if record is not None:
        _same_recipe(record, recipe, stored)
        return record
    model, training = _train(recipe, seed, protocol, settings, work, progress)
    sets = {name: protocol.test_sets()[name] for name in PREFERRED_ORDER}
    started = time.perf_counter()
    scores = finetune.exact_accuracy(model, sets, progress=progress, response=recipe.response)
    seconds = time.perf_counter() - started
    adapters.mkdir(parents=True, exist_ok=True)
    adapter = adapters / f"seed_{seed}.lora.h5"
    model.backbone.save_lora_weights(str(adapter))
    started = time.perf_counter()
    edge_sets = heldout_edges(protocol, settings.edge_sample, settings.sample_seed)
    edge_scores = finetune.exact_accuracy(model, edge_sets, progress=progress, response=recipe.response)
    edge_seconds = time.perf_counter() - started
    # per expression, for the command line's regression test (tests/test_gemma_cli.py)
    probe = protocol.test_in.subset(np.arange(len(protocol.test_in)) < PROBE, "probe")
    probe_correct = [int(c) for c in finetune.exact_correct(model, probe, response=recipe.response)]
    agreement = None
    if seed == settings.seeds[0] and settings.agreement_sample:
        agreement = {
            name: finetune.greedy_agreement(
                model, finetune.subsample(split, settings.agreement_sample, seed), response=recipe.response
            )
            for name, split in sets.items()
        }
    del model
    record = store_stage(
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
    _drop_checkpoints(work, recipe, seed)
    return record


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
            store_stage(choices, {k: out["search"][k] for k in ("chosen", "chosen_recipe", "chosen_by", "stages")})
    if "seeds" in stages:
        if not choices.is_file():
            raise FineTuneError(f"{choices} is missing: run the search stage first")
        recipe = chosen_recipe(load_stage(choices))
        out["seeds"] = [run_seed(protocol, recipe, s, settings, work, adapters, progress) for s in settings.seeds]
    if "scratchpad" in stages:  # the chosen recipe, writing the running totals before the answer
        if not choices.is_file():
            raise FineTuneError(f"{choices} is missing: run the search stage first")
        recipe = dataclasses.replace(chosen_recipe(load_stage(choices)), response="scratchpad")
        folder = work / "scratchpad"
        out["scratchpad"] = [
            run_seed(protocol, recipe, s, settings, folder, folder / "adapters", progress) for s in settings.seeds
        ]
    if "base" in stages:
        stored = work / "base.json"
        base = load_stage(stored)
        if base is None:
            model = _fresh_model()
            base = store_stage(stored, base_controls(model, protocol, settings.base_sample, settings.sample_seed))
            del model
        out["base"] = base
    return study_record(out, settings, protocol)


def study_record(parts: dict, settings: Settings, protocol: Protocol) -> dict:
    """The ``"gemma3_270m"`` entry of metrics.json."""
    record = {
        "label": weights.LABEL,
        "weights": "google/gemma-3-270m, llama.cpp GGUF Q4_K_M, dequantised to float32 (not the bf16 original)",
        "settings": {k: v for k, v in dataclasses.asdict(settings).items() if k != "search"},
        "search_stages": [[stage, [dict(c) for c in changes]] for stage, changes in settings.search],
        "test_counts": {name: len(protocol.test_sets()[name]) for name in PREFERRED_ORDER},
        "train_count": len(protocol.train),
        "cap_steps": settings.cap(len(protocol.train)),
        "scoring": "exact answer under greedy decoding, one teacher-forced pass (finetune.exact_correct)",
        **parts,
    }
    for part, prefix in (("seeds", ""), ("scratchpad", "scratchpad_")):
        if parts.get(part):
            runs = parts[part]
            record[f"{prefix}per_seed"] = {n: [s["scores"][n]["accuracy"] for s in runs] for n in PREFERRED_ORDER}
            record[f"{prefix}edges_per_seed"] = {n: [s["edges"][n]["accuracy"] for s in runs] for n in EDGE_SETS}
    return json.loads(json.dumps(record, default=float))


if __name__ == "__main__":
    import argparse

    from predcalc.data import reference_protocol
    from predcalc.paths import REPORTS

    parser = argparse.ArgumentParser(description="The Gemma 3 270M study's long stages, resumable.")
    stages = ["search", "seeds", "scratchpad", "base", "gguf"]
    parser.add_argument("--stages", nargs="+", default=["search", "seeds"], choices=stages)
    parser.add_argument("--seeds", nargs="+", type=int, default=list(Settings.seeds))
    # tracked: a session's machine keeps no build folder, so checkpoints live in git until a run ends
    parser.add_argument("--work", default=str(REPORTS / "gemma_study"))
    parser.add_argument("--adapter", help="the adapter the gguf stage merges (default: the first seed's)")
    parser.add_argument("--no-progress", action="store_true")
    arguments = parser.parse_args()
    settings, work = Settings(seeds=tuple(arguments.seeds)), Path(arguments.work)
    protocol = reference_protocol(settings.data_seed)
    if trained := [s for s in arguments.stages if s != "gguf"]:
        run(protocol, settings, work, work / "adapters", not arguments.no_progress, trained)
    if "gguf" in arguments.stages:
        adapter = arguments.adapter or work / "adapters" / f"seed_{settings.seeds[0]}.lora.h5"
        weights.gguf_stage(protocol, work, Path(adapter))
