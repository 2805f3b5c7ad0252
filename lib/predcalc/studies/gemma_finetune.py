"""LoRA fine-tuning of the real Gemma 3 270M on the reference protocol, resumable, and its exact scores.

Each expression is a prompt and an answer: ``"3 - -2 + 4 ="`` -> ``" 9"``, packed as
``<bos> prompt answer <eos>`` with the loss on the answer and ``<eos>`` tokens only (the layout of
``studies.llm.pack_examples``). The training loop is written out here rather than ``fit`` so that:

- the output head (262,144 x 640, most of the model's arithmetic) runs only at the answer
  positions, which does not change the loss or its gradient (the prompt positions are masked);
- a run is checkpointed every few steps (LoRA weights, optimizer state, step) and a stopped run
  resumes where it stopped, drawing the same batches (the order is a function of the seed);
- a tqdm bar shows steps and time left.

**Exact accuracy under greedy decoding** is scored in one teacher-forced pass: greedy decoding
writes the answer's tokens and stops exactly when, at every answer position, the most likely
next token given the prompt and the answer so far is the answer's next token (the last one
being ``<eos>``, or ``<end_of_turn>``, the other token ``generate`` stops on). This is the same
test as decoding and comparing, without the decoding loop; :func:`greedy_agreement` checks it
against ``studies.llm.generate`` on a sample.
"""

from __future__ import annotations

import dataclasses
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

from predcalc.data import Split
from predcalc.studies import llm

TEMPLATE = llm.DEFAULT_TEMPLATE


class FineTuneError(ValueError):
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

    @property
    def name(self) -> str:
        return f"r{self.rank}_{'-'.join(self.targets)}_lr{self.learning_rate:g}"

    def as_dict(self) -> dict:
        return {**dataclasses.asdict(self), "targets": list(self.targets), "name": self.name}


def answer_response(value) -> str:
    """The trained answer text: a space, then the integer (" 9", " -12")."""
    return " " + llm.answer_text(value)


def prompts_and_answers(split: Split, template: str = TEMPLATE):
    return [llm.prompt_text(e, template) for e in split.expressions], [answer_response(v) for v in split.values]


@dataclasses.dataclass
class Packed:
    """Token rows ``<bos> prompt answer <eos>`` (inputs), and each row's answer positions."""

    token_ids: np.ndarray  # (n, length) int32
    padding_mask: np.ndarray  # (n, length) int32
    positions: np.ndarray  # (n, k) int32: the input positions whose next token is an answer token
    targets: np.ndarray  # (n, k) int32: those next tokens (answer tokens, then <eos>)
    weights: np.ndarray  # (n, k) float32: 1 where a target is real, 0 where padded


def pack(tokenizer, split: Split, template: str = TEMPLATE, length: int | None = None) -> Packed:
    """The split packed for training or teacher-forced scoring (lengths rounded up to 8)."""
    prompts, answers = prompts_and_answers(split, template)
    rows = [
        ([tokenizer.start_token_id] + p, r + [tokenizer.end_token_id])
        for p, r in zip(llm.token_lists(tokenizer, prompts), llm.token_lists(tokenizer, answers))
    ]
    needed = max(len(p) + len(r) for p, r in rows) - 1
    length = int(length or 8 * math.ceil(needed / 8))
    if needed > length:
        raise FineTuneError(f"length={length} is too short: the longest example needs {needed}")
    k = max(len(r) for _, r in rows)
    n = len(rows)
    token_ids = np.full((n, length), tokenizer.pad_token_id, dtype="int32")
    positions = np.zeros((n, k), dtype="int32")
    targets = np.full((n, k), tokenizer.pad_token_id, dtype="int32")
    weights = np.zeros((n, k), dtype="float32")
    for i, (p, r) in enumerate(rows):
        sequence = (p + r)[:-1]  # the last target (<eos>) is never an input
        token_ids[i, : len(sequence)] = sequence
        positions[i, : len(r)] = np.arange(len(p) - 1, len(p) - 1 + len(r))
        targets[i, : len(r)] = r
        weights[i, : len(r)] = 1.0
    padding_mask = (np.arange(length)[None, :] < np.array([len(p) + len(r) - 1 for p, r in rows])[:, None]).astype(
        "int32"
    )
    return Packed(token_ids, padding_mask, positions, targets, weights)


def answer_logits(backbone, token_ids, padding_mask, positions):
    """Next-token logits at ``positions`` only: (batch, k, vocabulary)."""
    hidden = backbone({"token_ids": token_ids, "padding_mask": padding_mask})
    picked = tf.gather(hidden, positions, batch_dims=1)
    logits = backbone.token_embedding(picked, reverse=True)
    cap = getattr(backbone, "final_logit_soft_cap", None)
    if cap:
        logits = tf.tanh(logits / cap) * cap
    return logits


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


class _Checkpoint:
    """LoRA weights, optimizer state and the step reached, in one ``.npz`` (written atomically)."""

    def __init__(self, path: Path, variables, optimizer):
        self.path, self.variables, self.optimizer = Path(path), list(variables), optimizer

    def save(self, step: int, losses: list, state: dict | None = None) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        arrays = {f"w{i}": np.asarray(v) for i, v in enumerate(self.variables)}
        arrays.update({f"o{i}": np.asarray(v) for i, v in enumerate(self.optimizer.variables)})
        tmp = self.path.with_name(self.path.name + ".tmp.npz")
        state = json.dumps(state or {})
        np.savez(tmp, step=step, losses=np.asarray(losses, dtype="float32"), state=np.asarray(state), **arrays)
        tmp.replace(self.path)

    def restore(self) -> tuple[int, list, dict]:
        if not self.path.is_file():
            return 0, [], {}
        with np.load(self.path) as data:
            for i, v in enumerate(self.variables):
                if tuple(data[f"w{i}"].shape) != tuple(v.shape):
                    raise FineTuneError(f"checkpoint {self.path} does not fit this recipe (weight {i})")
                v.assign(data[f"w{i}"])
            for i, v in enumerate(self.optimizer.variables):
                v.assign(data[f"o{i}"])
            state = json.loads(str(data["state"])) if "state" in data.files else {}
            return int(data["step"]), [float(x) for x in data["losses"]], state


def _best_path(checkpoint: Path) -> Path:
    return Path(checkpoint).with_name(Path(checkpoint).stem + ".best.npz")


def _save_weights(path: Path, variables) -> None:
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez(tmp, **{f"w{i}": np.asarray(v) for i, v in enumerate(variables)})
    tmp.replace(path)


def _load_weights(path: Path, variables) -> None:
    with np.load(path) as data:
        for i, v in enumerate(variables):
            v.assign(data[f"w{i}"])


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


def _hardware() -> str:
    return f"{keras.backend.backend()} on {platform.machine()} CPU, {os.cpu_count()} cores"


def train(
    model,
    train_split: Split,
    recipe: Recipe,
    seed: int,
    checkpoint: Path,
    every: int = 25,
    template: str = TEMPLATE,
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
    trainable = llm.enable_lora(model, recipe.rank, list(recipe.targets))
    backbone = model.backbone
    variables = backbone.trainable_variables
    optimizer = keras.optimizers.Adam(learning_rate(recipe))
    optimizer.build(variables)
    saver = _Checkpoint(checkpoint, variables, optimizer)
    start_step, losses, state = saver.restore()
    state = {"cpu_seconds": 0.0, "stretches": [], "validation": [], "best": None, "stopped_by": None, **state}
    data = pack(model.preprocessor.tokenizer, train_split, template)
    order = batch_order(len(train_split), recipe.steps, recipe.batch_size, seed)
    best_file = _best_path(checkpoint)

    @tf.function(reduce_retracing=True)
    def step(token_ids, padding_mask, positions, targets, weights):
        with tf.GradientTape() as tape:
            logits = answer_logits(backbone, token_ids, padding_mask, positions)
            losses_ = keras.losses.sparse_categorical_crossentropy(targets, logits, from_logits=True)
            loss = tf.reduce_sum(losses_ * weights) / tf.reduce_sum(weights)
        gradients = tape.gradient(loss, variables)
        optimizer.apply_gradients(zip(gradients, variables))
        return loss

    def score(at: int) -> bool:
        """Score validation at step ``at``; True when the rule says stop."""
        accuracy = float(exact_correct(model, validation).mean())
        state["validation"].append({"step": at, "accuracy": accuracy, "loss": float(np.mean(losses[-plateau.every :]))})
        if state["best"] is None or accuracy > state["best"]["accuracy"]:
            state["best"] = {"step": at, "accuracy": accuracy}
            _save_weights(best_file, variables)
        since = sum(1 for v in state["validation"] if v["step"] > state["best"]["step"])
        return since >= plateau.patience

    began, cpu_began = time.perf_counter(), time.process_time()
    if state["stopped_by"] is None and start_step < recipe.steps:
        state["stretches"].append({"from_step": start_step, "hardware": _hardware()})
    bar = tqdm(
        total=recipe.steps,
        initial=start_step,
        desc=f"LoRA {recipe.name} seed {seed}",
        unit="step",
        disable=not progress,
    )
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
        _load_weights(best_file, variables)
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
# Exact scores


def stop_ids(tokenizer) -> list[int]:
    return llm.stop_ids(tokenizer)


def exact_correct(model, split: Split, template: str = TEMPLATE, batch_size: int = 32, progress: bool = False):
    """For each expression, whether greedy decoding writes exactly its answer and stops.

    One teacher-forced pass (see the module docstring). Returns a bool array.
    """
    tokenizer = model.preprocessor.tokenizer
    data = pack(tokenizer, split, template)
    stops = np.array(stop_ids(tokenizer))
    eos = int(tokenizer.end_token_id)
    backbone = model.backbone

    @tf.function(reduce_retracing=True)
    def predict(token_ids, padding_mask, positions):
        return tf.argmax(answer_logits(backbone, token_ids, padding_mask, positions), axis=-1, output_type=tf.int32)

    n = len(split)
    correct = np.zeros(n, dtype=bool)
    for begin in tqdm(range(0, n, batch_size), desc=f"score {split.name}", disable=not progress, leave=False):
        idx = np.arange(begin, min(begin + batch_size, n))
        full = np.concatenate([idx, np.full(batch_size - len(idx), idx[0])])  # one shape, one trace
        predicted = predict(data.token_ids[full], data.padding_mask[full], data.positions[full]).numpy()[: len(idx)]
        targets, weights = data.targets[idx], data.weights[idx] > 0
        match = predicted == targets
        # the other stop token in place of <eos> stops decoding all the same
        match |= (targets == eos) & np.isin(predicted, stops)
        correct[idx] = np.all(match | ~weights, axis=1)
    return correct


def exact_accuracy(model, sets: dict, template: str = TEMPLATE, batch_size: int = 32, progress: bool = True) -> dict:
    """``{name: {"accuracy", "correct", "n"}}`` for every split in ``sets``."""
    out = {}
    for name, split in sets.items():
        correct = exact_correct(model, split, template, batch_size, progress)
        out[name] = {"accuracy": float(correct.mean()), "correct": int(correct.sum()), "n": len(split)}
    return out


def greedy_agreement(model, split: Split, template: str = TEMPLATE, batch_size: int = 16) -> dict:
    """Decode ``split`` with ``studies.llm.generate`` and compare with :func:`exact_correct`."""
    prompts, _ = prompts_and_answers(split, template)
    generated = llm.generate(model, prompts, max_new_tokens=6, batch_size=batch_size)
    decoded, _, _ = llm.answer_accuracy(generated, split.values)
    parsed = [llm.parse_answer(g) for g in generated]
    by_decoding = np.array([p is not None and p == int(round(v)) for p, v in zip(parsed, split.values)])
    by_pass = exact_correct(model, split, template, batch_size)
    return {
        "n": len(split),
        "agree": int((by_decoding == by_pass).sum()),
        "decoding_accuracy": float(decoded),
        "pass_accuracy": float(by_pass.mean()),
    }
