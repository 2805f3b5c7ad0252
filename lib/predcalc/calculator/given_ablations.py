"""The rule rung's given pieces, each taken away on fresh seeds, and every rule step on fresh seeds.

The rule steps (:mod:`predcalc.calculator.rules`) are partly built: an encoding with the product
``a x d`` given as a feature, an exact value target for every row, staircase targets computed with
period 10, and the control's precedence levels (:data:`~predcalc.calculator.rules.KIND_FEATURES`).
Each variant here takes one of these away and keeps everything else (training rows, seeds, the
optimiser, the stopping rule):

- ``given``: nothing taken away (the shipped rule steps and relational control);
- ``no_product``: ``muldigit`` without the ``a x d`` feature (``a``, ``d`` and the carry only);
- ``no_value``: the value target's loss off (staircase, digit and carry targets kept);
- ``no_staircase``: the period-10 staircase targets' loss off (value, digit and carry targets kept);
- ``outputs_only``: digit and carry targets only (value and staircase losses off);

  these three on the two steps that write a digit and a carry (``addsub``, ``muldigit``);
- ``learned_levels``: the control with one precedence level per token kind learned (trainable,
  random start) instead of given; the ``inverts`` flags stay given.

Each trained step is scored on every reachable input that is not among its training rows
(``held_out_wrong``: 0 means exact there) and, end to end, in a calculator whose other steps are
the reference functions (:func:`end_to_end`), so a wrong decision shows as wrong answers.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from predcalc.calculator import rules
from predcalc.calculator.engine import Engine, answer_text
from predcalc.calculator.rules import RULES, RuleStep
from predcalc.calculator.steps import STEPS, TableStep
from predcalc.calculator.train import rule_training_rows, trace
from predcalc.data.calculator_families import FAMILIES, TRAINING_WORLD, families
from predcalc.data.exact_answers import score_answers

try:  # training needs Keras; the runtime-only install does not have it
    import keras
except ImportError:  # pragma: no cover - exercised in the runtime-only install
    keras = None

#: The rule steps (a value unit and a staircase); the control is trained apart.
RULE_STEPS = ("addsub", "compare", "muldigit", "qdigit")
#: Which steps each variant retrains (the steps it changes).
VARIANTS = {
    "given": (*RULE_STEPS, "control"),
    "no_product": ("muldigit",),
    "no_value": ("addsub", "muldigit"),
    "no_staircase": ("addsub", "muldigit"),
    "outputs_only": ("addsub", "muldigit"),
    "learned_levels": ("control",),
}
#: What each variant takes away (for tables).
VARIANT_LABELS = {
    "given": "nothing taken away (the shipped rule steps)",
    "no_product": "muldigit without the a x d feature",
    "no_value": "no value target (staircase, digit and carry targets)",
    "no_staircase": "no period-10 staircase targets (value, digit and carry targets)",
    "outputs_only": "digit and carry targets only (no value, no staircase targets)",
    "learned_levels": "control with learned precedence levels (not given)",
}
#: Loss weights (value, staircase) of each rule variant; the outputs always weigh 1.
_LOSS_WEIGHTS = {"no_value": (0.0, 1.0), "no_staircase": (1.0, 0.0), "outputs_only": (0.0, 0.0)}
# The shipped computation's own helpers, used unchanged so that each variant differs from it in the
# one piece it takes away. They are private to rules.py; making them public would change the
# calculator's code fingerprint (predcalc.calculator.cache) and so invalidate every stored part of
# the study: do it with the next full rerun.
_relations, _pair_tables, _straight_through = rules._relations, rules._pair_tables, rules._straight_through
_staircase_targets, _margin_loss = rules._staircase_targets, rules._margin_loss
_BOTH_OPERATORS = rules._BOTH_OPERATORS
#: Fixed sets of the reference protocol: alike for every family seed, left out of end-to-end draws.
_FIXED = {"seed_in", "seed_out", "seed_long"}


def variant_rule(name: str, variant: str) -> rules.Rule:
    """The :class:`~predcalc.calculator.rules.Rule` of ``name`` under ``variant`` (the encoding
    without ``a x d`` for ``no_product``; else the shipped rule)."""
    rule = RULES[name]
    if variant == "no_product" and name == "muldigit":
        return dataclasses.replace(rule, features=lambda ops, x: rule.features(ops, x)[:, 1:])
    return rule


def build_variant(name: str, rule: rules.Rule, seed: int):
    """:func:`predcalc.calculator.rules.build_rule` with another rule (encoding)."""
    step = STEPS[name]
    keras.utils.set_random_seed(seed)
    inputs = keras.Input((len(step.inputs),), dtype="int32", name="inputs")
    features = keras.layers.Lambda(lambda x: rule.features(keras.ops, x), name="encode")(inputs)
    value = keras.layers.Dense(1, name="value")(features)
    steps = rules.Staircase(rule.above, rule.below, rule.period, rule.centred, name="staircase")(value)
    hard = _straight_through(keras.ops.cast(steps > 0.5, "float32"), steps)
    counts = keras.ops.stack(
        [keras.ops.sum(hard[:, : rule.above], axis=1), keras.ops.sum(hard[:, rule.above :], axis=1)], axis=1
    )
    summary = keras.ops.concatenate([_straight_through(keras.ops.round(value), value), counts], axis=1)
    outputs = [keras.layers.Dense(1, name=f"output_{j}")(summary) for j in range(len(step.outputs))]
    return keras.Model(inputs, [value, steps, *outputs], name=f"{name}_rule")


def variant_step(name: str, rule: rules.Rule, model) -> RuleStep:
    """The NumPy inference computation of a trained variant (hard thresholds, rounding)."""
    function = RuleStep(name, model.get_weights())
    function.rule = rule
    return function


def train_rule_variant(
    name: str,
    inputs: np.ndarray,
    seed: int,
    variant: str = "given",
    epochs: int = 4000,
    learning_rate: float = 0.03,
    chunk: int = 250,
    minimum: int = 1500,
):
    """:func:`predcalc.calculator.rules.train_rule` with one given piece taken away (``variant``):
    the same rows, optimiser, steps and stopping rule. Returns the NumPy step and training stats."""
    rule, step = variant_rule(name, variant), STEPS[name]
    model = build_variant(name, rule, seed)
    targets = step.reference(inputs)
    value = RULES[name].value(inputs).astype("float32")
    y = [value[:, None], _staircase_targets(name, value).astype("float32")] + [
        targets[:, j : j + 1].astype("float32") for j in range(targets.shape[1])
    ]
    weights = _LOSS_WEIGHTS.get(variant, (1.0, 1.0))
    model.compile(
        optimizer=keras.optimizers.Adam(learning_rate),
        loss=["mse", keras.losses.BinaryCrossentropy()] + ["mse"] * targets.shape[1],
        loss_weights=[*weights] + [1.0] * targets.shape[1],
    )
    done, streak, right = 0, 0, 0.0
    repeats = 50  # full-batch steps per Keras epoch, as train_rule
    x, y = np.tile(inputs, (repeats, 1)), [np.tile(t, (repeats, 1)) for t in y]
    while done < epochs and (streak < 2 or done < minimum):
        model.fit(x, y, batch_size=len(inputs), epochs=chunk // repeats, verbose=0, shuffle=False)
        done += chunk
        right = float(np.mean(np.all(variant_step(name, rule, model)(inputs) == targets, axis=1)))
        streak = streak + 1 if right == 1.0 else 0
    stats = {"epochs": done, "train_exact": right, "parameters": int(model.count_params())}
    return variant_step(name, rule, model), stats


# ------------------------------------------------------------------ control with learned levels
def _learned_gap(ops, levels):
    """level(w) - level(c) for every (centre, neighbour) pair of kinds from one level per kind."""
    return ops.expand_dims(levels, 0) - ops.expand_dims(levels, 1)


def build_control_learned_levels(seed: int, l2: float = 5e-4):
    """The relational control (:func:`predcalc.calculator.rules.build_control_rule`) with the
    precedence level of each kind a trainable weight (normal start, fixed by ``seed``) in place of
    the level column of :data:`~predcalc.calculator.rules.KIND_FEATURES`; the relation a pair of
    operators gets still comes from two learned thresholds on the level difference."""
    from predcalc.calculator.nets import PairwiseWindowScore  # nets imports rules: at call time

    step = STEPS["control"]
    keras.utils.set_random_seed(seed)
    both = _BOTH_OPERATORS

    class LearnedLevelScore(PairwiseWindowScore):
        def build(self, input_shape):
            shape = (3, 2 * self.radius, len(rules.RELATIONS), self.outputs)
            penalty = keras.regularizers.L2(l2) if l2 else None
            self.relation_weights = self.add_weight(
                shape=shape, initializer="zeros", name="relations", regularizer=penalty
            )
            self.class_bias = self.add_weight(
                shape=(3, self.outputs), initializer="zeros", name="class_bias", regularizer=penalty
            )
            self.thresholds = self.add_weight(shape=(2,), initializer="zeros", name="thresholds")
            self.levels = self.add_weight(
                shape=(self.n_kinds,), initializer=keras.initializers.RandomNormal(seed=seed), name="levels"
            )

        def call(self, windows):
            gap = _learned_gap(keras.ops, self.levels)
            hard = [
                keras.ops.cast(gap > self.thresholds[0], "float32"),
                keras.ops.cast(gap < self.thresholds[1], "float32"),
            ]
            soft = [
                keras.ops.sigmoid(rules.SHARPNESS * (gap - self.thresholds[0])),
                keras.ops.sigmoid(rules.SHARPNESS * (self.thresholds[1] - gap)),
            ]
            agree = sum(
                keras.ops.sum(both * keras.ops.binary_crossentropy(keras.ops.stop_gradient(h), p))
                for h, p in zip(hard, soft)
            )
            self.add_loss(rules.THRESHOLD_MARGIN * agree / float(both.sum()))
            tighter, looser = (_straight_through(h, p) for h, p in zip(hard, soft))
            relations = _relations(keras.ops, tighter, looser)
            self.pairs, self.bias = _pair_tables(keras.ops, relations, self.relation_weights, self.class_bias)
            return super().call(windows)

    inputs = keras.Input((len(step.inputs),), dtype="int32", name="inputs")
    scores = LearnedLevelScore(step.inputs[0], outputs=len(step.outputs), name="pairwise")(inputs)
    logits = [
        keras.ops.stack([keras.ops.zeros_like(scores[:, j]), scores[:, j]], axis=-1) for j in range(len(step.outputs))
    ]
    return keras.Model(inputs, logits, name="control_learned_levels")


def learned_levels_step(model):
    """The NumPy inference computation of the learned-levels control (pair-score tables)."""
    from predcalc.calculator.nets import DenseStep  # nets imports rules: at call time

    layer = model.get_layer("pairwise")
    levels = np.asarray(layer.levels.numpy(), np.float32)
    tighter_at, looser_at = np.asarray(layer.thresholds.numpy(), np.float32)
    gap = _learned_gap(np, levels)
    relations = _relations(np, (gap > tighter_at).astype(np.float32), (gap < looser_at).astype(np.float32))
    tables, bias = _pair_tables(
        np, relations, np.asarray(layer.relation_weights.numpy()), np.asarray(layer.class_bias.numpy())
    )
    return DenseStep("control", [np.asarray(tables, np.float32), np.asarray(bias, np.float32)])


def train_control_variant(inputs: np.ndarray, seed: int, variant: str = "given", steps: int = 10_000):
    """The control trained as :func:`predcalc.calculator.rules.train_control` (the same hinge, penalty,
    optimiser and steps), with the levels given (``given``) or learned (``learned_levels``)."""
    from predcalc.calculator.nets import numpy_step  # nets imports rules: at call time

    if variant == "given":
        model, info = rules.train_control(inputs, seed=seed, steps=steps)
        return numpy_step(model), {k: info[k] for k in ("epochs", "train_exact", "parameters")}
    target = STEPS["control"].reference(inputs)
    model = build_control_learned_levels(seed)
    model.compile(optimizer=keras.optimizers.SGD(1.0), loss=[_margin_loss] * target.shape[1])
    repeats = 50
    x, y = np.tile(inputs, (repeats, 1)), [np.tile(target[:, j], repeats) for j in range(target.shape[1])]
    model.fit(x, y, batch_size=len(inputs), epochs=steps // repeats, verbose=0, shuffle=False)
    function = learned_levels_step(model)
    levels = np.asarray(model.get_layer("pairwise").levels.numpy())
    return function, {
        "epochs": steps // repeats * repeats,
        "train_exact": float(np.mean(np.all(function(inputs) == target, axis=1))),
        "parameters": int(model.count_params()),
        "levels": {text: round(float(levels[kind]), 3) for text, kind in zip("+-*/", range(2, 6))},
    }


# ------------------------------------------------------------------ scoring
def held_out_check(name: str, function, rows: np.ndarray) -> dict:
    """A step on every reachable input: wrong decisions on the inputs not among ``rows`` and in all."""
    step = STEPS[name]
    reachable = step.reachable()
    wrong = ~np.all(np.asarray(function(reachable)) == step.reference(reachable), axis=1)
    held_out = ~np.isin(step.index(reachable), step.index(rows))
    return {
        "reachable": int(len(reachable)),
        "trained_on": int(len(np.unique(rows, axis=0))),
        "held_out": int(held_out.sum()),
        "held_out_wrong": int((wrong & held_out).sum()),
        "wrong": int(wrong.sum()),
    }


def end_to_end_draw(n: int, seed: int) -> dict:
    """A draw of every family but the reference protocol's fixed sets (``n`` each, fixed by ``seed``)."""
    return families(n=n, seed=seed, names=[name for name in FAMILIES if name not in _FIXED])


def end_to_end(name: str, function, draw: dict) -> dict:
    """Exact answers of a calculator whose step ``name`` is ``function`` and whose other steps are
    their reference functions, per family of ``draw`` and over all of it."""
    steps = {other: TableStep(other, STEPS[other].reference) for other in STEPS if other != name}
    steps[name] = TableStep(name, function)
    engine = Engine(steps)
    out, right, total = {}, 0, 0
    for family, pairs in draw.items():
        answers = _answers(engine, [e for e, _ in pairs])
        scored = score_answers([t for _, t in pairs], answers)
        out[family] = scored["exact"]
        right += round(scored["exact"] * scored["n"])
        total += scored["n"]
    return {"exact": right / total, "n": total, "families": out}


def _answers(engine: Engine, expressions: list[str]) -> list[str]:
    """The engine's answers; where a wrong step breaks the loop itself (an output outside its
    class range indexes past a table), each expression alone, and one that breaks answers nothing."""
    try:
        return [answer_text(r) for r in engine.evaluate(expressions)]
    except (IndexError, ValueError):
        out = []
        for expression in expressions:
            try:
                out.append(answer_text(engine.evaluate([expression])[0]))
            except (IndexError, ValueError):
                out.append("")
        return out


def variant_seed(
    variant: str, seed: int, expressions: int = 200, draw: dict | None = None, names=None, progress=None
) -> dict:
    """Train every step ``variant`` changes (or those of them in ``names``) at one seed on the rows :func:`train_rules` would use
    (a third of each step's reachable inputs, from traces of ``expressions`` short expressions),
    check each on its held-out inputs and, given a ``draw``, end to end."""
    rows = rule_training_rows(trace(TRAINING_WORLD, expressions, seed), seed)
    out = {"variant": variant, "seed": seed, "steps": {}}
    for name in [n for n in VARIANTS[variant] if names is None or n in names]:
        began = time.perf_counter()
        if name == "control":
            function, stats = train_control_variant(rows[name], seed, variant)
        else:
            function, stats = train_rule_variant(name, rows[name], seed, variant)
        record = {**held_out_check(name, function, rows[name]), **stats}
        record["seconds"] = round(time.perf_counter() - began, 1)
        if draw is not None:
            record["end_to_end"] = end_to_end(name, function, draw)
        out["steps"][name] = record
        if progress:
            progress(variant, seed, name, record)
    return out
