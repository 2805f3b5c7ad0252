"""Training and scoring the digit models, one resumable seed at a time.

A seed fixes the initial weights and every training batch: batch ``k`` of seed ``s`` is drawn from
``numpy.random.default_rng([s, k])``, so a run resumed from a checkpoint sees the same batches as
an uninterrupted one. Each seed's folder holds ``checkpoint.keras`` (weights and optimizer state)
and ``state.json`` (steps done, CPU and wall seconds, the hardware of each stretch, the development
scores at each evaluation).

    python -m predcalc.training.digits --model digits_coupled_scratch --seed 0 --steps 20000 --out DIR
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

from predcalc.data import digits

TRAIN_DIGITS = (1, 10)  # the training box: numbers of 1-10 digits
TRAIN_TERMS = (2, 3)  # and 2-3 terms


def draw_batch(rng: np.random.Generator, size: int) -> list:
    """One training batch: a width and a term count for the batch (so every sequence has one
    length), then each number's digits uniform up to that width, one term exactly that wide."""
    width = int(rng.integers(TRAIN_DIGITS[0], TRAIN_DIGITS[1] + 1))
    terms = int(rng.integers(TRAIN_TERMS[0], TRAIN_TERMS[1] + 1))
    batch = digits.draw(rng, size, terms=(terms, terms), digits=(1, width))
    out = []
    for expression in batch:
        items = list(expression.terms)
        wide = int(rng.integers(0, terms))
        items[wide] = (items[wide][0], digits.draw_number(rng, width, True))
        out.append(digits.Expression(tuple(items)))
    return out


def decoder_batch(fmt: digits.Format, expressions, rng: np.random.Generator | None = None, tables=None):
    """Inputs, targets and weights of a decoder batch. With learned ``tables`` (the id and level
    tables' sizes) and ``rng``, each expression's ids and levels are shifted by a random offset that
    keeps them inside the tables (the literature's random offset for position coupling)."""
    encoded = [digits.encode(expression, fmt) for expression in expressions]
    length = len(encoded[0].tokens) - 1
    pad = (0, digits.padded(length) - length)
    stack = lambda name: np.stack([np.pad(getattr(x, name), pad) for x in encoded])  # noqa: E731
    tokens, ids, levels, written = stack("tokens"), stack("ids"), stack("levels"), stack("written")
    if tables is not None and rng is not None:
        id_room, level_room = digits.table_room(ids, levels, tables)
        if id_room < 0 or level_room < 0:
            raise ValueError(f"a training batch's ids or levels do not fit tables of {tables}")
        ids = ids + rng.integers(0, id_room + 1, size=(len(expressions), 1))
        levels = levels + rng.integers(0, level_room + 1, size=(len(expressions), 1))
    x = [tokens[:, :-1], ids[:, :-1], levels[:, :-1]]
    return x, tokens[:, 1:], written[:, 1:].astype(np.float32)


def column_batch(expressions):
    columns = digits.columns(expressions)
    digit_targets, sign_targets = digits.column_targets(expressions)
    return columns, {"digits": digit_targets, "sign": sign_targets}


def compile_model(model, spec, steps: int, learning_rate: float = 1e-3):
    import keras  # the training stack, kept out of the NumPy-only data helpers above

    warmup = min(500, max(1, steps // 10))
    schedule = keras.optimizers.schedules.CosineDecay(
        0.0, max(1, steps - warmup), alpha=0.05, warmup_target=learning_rate, warmup_steps=warmup
    )
    optimizer = keras.optimizers.AdamW(schedule, weight_decay=0.01, clipnorm=1.0)
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    if spec.is_decoder:
        model.compile(optimizer, loss)
    else:
        model.compile(optimizer, {"digits": loss, "sign": loss})
    return model


def answers(model, spec, expressions, batch_size: int = 256) -> list:
    """Each expression's answer from a Keras model (None where the decoder wrote an invalid token)."""
    if spec.is_decoder:

        def logits_at(tokens, ids, levels, position):
            return np.asarray(model.predict_on_batch([tokens, ids, levels]))[:, position - 1, :]

        return digits.greedy(expressions, spec.format, logits_at, batch_size)
    return column_answers(lambda columns: model.predict_on_batch(columns), expressions, batch_size)


def column_answers(run, expressions, batch_size: int = 256) -> list:
    """Answers of a column recurrence, ``run(columns) -> {"digits", "sign"}``; None for an
    expression with more terms than its slots."""
    out: list = [None] * len(expressions)
    groups: dict[int, list[int]] = {}
    for index, expression in enumerate(expressions):
        if len(expression.terms) <= digits.COLUMN_SLOTS:
            groups.setdefault(expression.width, []).append(index)
    for indices in groups.values():
        for start in range(0, len(indices), batch_size):
            chunk = indices[start : start + batch_size]
            outputs = run(digits.columns([expressions[i] for i in chunk]))
            for i, answer in zip(chunk, digits.read_columns(outputs["digits"], outputs["sign"]), strict=True):
                out[i] = answer
    return out


def exact(predicted, expressions) -> float:
    return float(np.mean([p == e.value for p, e in zip(predicted, expressions, strict=True)]))


def development_sets(size: int = 100) -> dict:
    """The sets the budget and sizes are chosen on (seed 9001; never a claim)."""
    rng = np.random.default_rng(9001)
    return {
        "digits_10_terms_3": digits.draw(rng, size, terms=(3, 3), digits=(10, 10)),
        "digits_13_terms_3": digits.draw(rng, size, terms=(3, 3), digits=(13, 13)),
        "digits_5_terms_4": digits.draw(rng, size, terms=(4, 4), digits=(1, 5)),
    }


LADDER_SEED = 9002


def ladder_sets(size: int = 100) -> dict:
    """Development sets inside the box, to see where a model stops (seed 9002; never a claim):
    3 signed terms of 1, 2, 3, 5, 7 and 10 digits, and the rungs ``a + b`` and ``a ± b`` at 10."""
    rng = np.random.default_rng(LADDER_SEED)
    sets = {f"in_box_digits_{w}": digits.draw(rng, size, terms=(3, 3), digits=(w, w)) for w in (1, 2, 3, 5, 7, 10)}
    sets["in_box_rung1_digits_10"] = digits.draw(rng, size, terms=(2, 2), digits=(10, 10), signed=False, operators="+")
    sets["in_box_rung2_digits_10"] = digits.draw(rng, size, terms=(2, 2), digits=(10, 10), signed=False)
    return sets


def hardware() -> str:
    """What ran a stretch of training: the Keras backend and its device."""
    import keras  # the backend's name

    backend = keras.backend.backend()
    device = f"{platform.machine()} CPU, {os.cpu_count()} cores"
    if backend == "jax":
        import jax  # only to name an accelerator when one ran this

        first = jax.devices()[0]
        if first.platform != "cpu":
            device = f"{first.platform} {first.device_kind}"
    return f"{backend} on {device}"


def train(
    name: str,
    seed: int,
    steps: int,
    folder: Path,
    batch_size: int = 64,
    evaluate_every: int = 1000,
    learning_rate: float = 1e-3,
    progress: bool = True,
    log: bool = False,
) -> dict:
    """Train (or resume) one seed of digit model ``name`` to ``steps`` steps; returns its state.

    ``progress``: a progress bar (with each development evaluation); else ``log``: each evaluation
    printed as a line."""
    import keras  # the training stack, kept out of the NumPy-only data helpers above

    from predcalc.models.digits import DIGIT_MODELS  # imports Keras (see above)

    spec = DIGIT_MODELS.named(name)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    checkpoint, state_file = folder / "checkpoint.keras", folder / "state.json"
    state = (
        json.loads(state_file.read_text())
        if state_file.exists()
        else {
            "model": name,
            "seed": seed,
            "steps": 0,
            "cpu_seconds": 0.0,
            "wall_seconds": 0.0,
            "stretches": [],
            "development": [],
            "batch_size": batch_size,
            "learning_rate": learning_rate,
        }
    )
    if state["steps"] >= steps:
        return state
    if state.get("budget", steps) != steps:  # the schedule stored in the checkpoint is the first budget's
        raise ValueError(
            f"{folder}: trained for a budget of {state['budget']} steps; a budget of {steps} needs a new folder"
        )
    keras.utils.set_random_seed(seed)
    if checkpoint.exists():
        model = keras.saving.load_model(checkpoint)
    else:
        model = compile_model(spec.build(), spec, steps, learning_rate)
    state["budget"] = steps
    start_step, cpu0, wall0 = state["steps"], time.process_time(), time.time()
    development = development_sets()
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=steps, initial=start_step, desc=f"{name} seed {seed}", leave=False)

    def save(step):
        model.save(checkpoint)
        state["steps"] = step
        state["cpu_seconds"] += time.process_time() - save.cpu
        state["wall_seconds"] += time.time() - save.wall
        save.cpu, save.wall = time.process_time(), time.time()
        state_file.write_text(json.dumps(state, indent=1) + "\n")

    save.cpu, save.wall = cpu0, wall0
    state["stretches"].append({"from_step": start_step, "hardware": hardware()})
    loss = float("nan")
    for step in range(start_step, steps):
        rng = np.random.default_rng([seed, step])
        expressions = draw_batch(rng, batch_size)
        if spec.is_decoder:
            x, y, w = decoder_batch(spec.format, expressions, rng, spec.tables)
            loss = model.train_on_batch(x, y, sample_weight=w)
        else:
            x, y = column_batch(expressions)
            loss = model.train_on_batch(x, y)
        loss = float(np.asarray(loss).reshape(-1)[0])
        if bar is not None:
            bar.update(1)
            if step % 50 == 0:
                bar.set_postfix(loss=f"{loss:.4f}")
        done = step + 1
        if done % evaluate_every == 0 or done == steps:
            scores = {k: exact(answers(model, spec, v), v) for k, v in development.items()}
            state["development"].append({"step": done, "loss": loss, **scores})
            save(done)
            line = f"{name} seed {seed} step {done}: loss {loss:.4f} " + " ".join(
                f"{k} {v:.2f}" for k, v in scores.items()
            )
            if bar is not None:
                bar.write(line)
            elif log:
                print(line, flush=True)
    if bar is not None:
        bar.close()
    return state


def main(argv=None):
    parser = argparse.ArgumentParser(description="Train one seed of a digit model (resumable).")
    parser.add_argument("--model", required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--out", required=True, help="the seed's folder (checkpoint and state)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--evaluate-every", type=int, default=1000)
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--no-progress", action="store_true", help="no progress bar (a log file gets the evaluations)")
    args = parser.parse_args(argv)
    train(
        args.model,
        args.seed,
        args.steps,
        Path(args.out),
        args.batch_size,
        args.evaluate_every,
        args.learning_rate,
        progress=not args.no_progress,
        log=args.no_progress,
    )


if __name__ == "__main__":
    main()
