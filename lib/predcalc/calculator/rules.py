"""Step networks that learn a rule, not a table: a value unit and a staircase of thresholds.

For the digit steps (``addsub``, ``compare``, ``muldigit``, ``qdigit``) a table network memorises; these
networks are built so that a handful of parameters is the rule:

    v = round(w . phi(x) + b)                       the value unit (NAU-like: a linear unit)
    up = sum_{k=1..K} [v >= alpha k + beta]          thresholds passed above,
    down = sum_{k=0..K'-1} [v < -alpha k + beta]      and below (one period alpha, one offset beta)
    y_j = round(u_j . (v, up, down) + c_j)           each output a linear unit

``phi`` encodes the inputs as numbers: digits as their values, a discrete state or mode as
indicators, and the products the rule needs (``a x d``, ``mode x b``: the multiplicative part,
in the spirit of NMU, given as encoding; ``qdigit``'s ``[y x k not above] x k`` and ``x q``, so
that ``q + [not above] (k - q)`` is linear). Training is gradient descent on the value (the column
value, an intermediate target), the thresholds (logistic, with the value's target on each side)
and the outputs (squared error). Why it extrapolates to rows never seen: every row shares the same
six to ten parameters; a linear unit fit to exact integer targets lands on integer weights, the
thresholds share one period, so a threshold seen on either side of a few values sits right
for all of them; the rounded units then give exact integers. Exactness is checked on every
reachable input (:func:`predcalc.calculator.nets.check_step`), not assumed.

The control (:func:`build_control_rule`) scores a window ``w`` of token kinds (``c = w_0`` its
centre) as a sum of pair terms over *relations*, not over kinds:

    score_j(w) = b_j[class(c)] + sum_{k in -2,-1,1,2} sum_r A_j[class(c), k, r] rel_r(c, w_k)
    tighter(c, w) = [level(w) - level(c) > theta_1],  looser(c, w) = [level(w) - level(c) < theta_2]

with ``class(c)`` operator, ``(`` or other, and ``rel`` the neighbour's kind (number, ``(``, ``)``,
operator), the comparison of the two precedence levels (tighter / looser / same, two learned
thresholds shared by every offset and output) and, at the same level, which of the two invert
(``-`` and ``/``). ready = score_0 > 0, inverted = score_1 > 0. Why a third of the windows is
enough: the reference rule is a conjunction of exactly these relations (both operands numbers, no
neighbour binding tighter, no non-inverting operator after an inverting one of its level), which
a linear threshold over them can write; a pair of operators enters only through its relation, so
``/ N /`` is scored by what ``- N -`` taught and ``/ N *`` by ``- N +`` (16 operator pairs become 3
level relations x 4 inversion cells, each seen on every seed). Training is a support-vector
machine over the relations (:func:`train_control`: hinge to a margin of 1 plus an L2 penalty, plain
gradient descent from zero weights, run to the end): weights of relations that never vary in
training stay 0, and the widest-margin separator spreads its weight over every relation that
separates instead of leaning on an incidental one (stopping at the first separating weights left
4 to 24 windows wrong on three of seeds 5-14; Adam, which moves every weight alike, left 2-6 wrong on four
of seeds 0-4). A seed's held-out windows are checked, not assumed
(:func:`predcalc.calculator.nets.check_step`).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from predcalc.calculator.steps import STEPS

try:  # training needs Keras; the runtime-only install does not have it
    import keras
except ImportError:  # pragma: no cover - exercised in the runtime-only install
    keras = None


@dataclasses.dataclass(frozen=True)
class Rule:
    """The encoding, intermediate target and staircase of one rule step."""

    features: callable  # int inputs [n, k] -> float features [n, f] (numpy or keras ops)
    value: callable  # int inputs [n, k] -> the value target [n] (training only)
    above: int  # thresholds above (k = 1..above)
    below: int  # thresholds below (k = 0..below-1)
    period: float  # the period the thresholds start from
    centred: bool = False  # the staircase is symmetric about 0: beta = -alpha / 2 (compare's two signs)


def _addsub_features(ops, x):
    carry, mode, a, b = (ops.cast(x[:, i], "float32") for i in range(4))
    return ops.stack([a, b, carry, mode * b, mode * carry], axis=1)


def _compare_features(ops, x):
    state, a, b = (ops.cast(x[:, i], "float32") for i in range(3))
    open_, less, greater = [ops.cast(ops.equal(x[:, 0], s), "float32") for s in range(3)]
    return ops.stack([a * open_, b * open_, less, greater], axis=1)


def _muldigit_features(ops, x):
    carry, a, d = (ops.cast(x[:, i], "float32") for i in range(3))
    return ops.stack([a * d, a, d, carry], axis=1)


def _qdigit_features(ops, x):
    q, k = (ops.cast(x[:, i], "float32") for i in range(2))
    not_less = 1.0 - ops.cast(ops.equal(x[:, 2], 1), "float32")  # the multiple y x k is not above
    return ops.stack([q, not_less * k, not_less * q], axis=1)


def _addsub_value(x):
    carry, mode, a, b = x.T
    return np.where(mode == 0, a + b + carry, a - b - carry)


def _compare_value(x):
    state, a, b = x.T
    return np.where(state == 0, a - b, np.where(state == 1, -10, 10))


def _muldigit_value(x):
    carry, a, d = x.T
    return a * d + carry


def _qdigit_value(x):
    q, k, compare = x.T
    return np.where(compare != 1, k, q)


RULES = {
    "addsub": Rule(_addsub_features, _addsub_value, above=1, below=1, period=10.0),
    "compare": Rule(_compare_features, _compare_value, above=1, below=1, period=1.0, centred=True),
    "muldigit": Rule(_muldigit_features, _muldigit_value, above=8, below=0, period=10.0),
    # the value is the digit itself (0-9): no threshold is passed, the output reads the value
    "qdigit": Rule(_qdigit_features, _qdigit_value, above=1, below=1, period=10.0),
}


class _NumpyOps:
    """The few ``keras.ops`` the encodings use, in NumPy (for the runtime-only install)."""

    cast = staticmethod(lambda x, dtype: np.asarray(x, dtype))
    stack = staticmethod(np.stack)
    equal = staticmethod(np.equal)


def _ks(rule: Rule) -> tuple[np.ndarray, np.ndarray]:
    return np.arange(1, rule.above + 1, dtype=np.float32), -np.arange(rule.below, dtype=np.float32)


if keras is not None:

    @keras.saving.register_keras_serializable(package="predcalc")
    class Staircase(keras.layers.Layer):
        """Soft thresholds ``sigmoid(sharpness (v - alpha k - beta))`` above and below, one period
        and offset for all of them; returns ``[n, above + below]`` (above first)."""

        def __init__(
            self, above: int, below: int, period: float, centred: bool = False, sharpness: float = 4.0, **kwargs
        ):
            super().__init__(**kwargs)
            self.above, self.below, self.period, self.centred = above, below, period, centred
            self.sharpness = sharpness

        def build(self, input_shape):
            self.alpha = self.add_weight(shape=(), initializer=keras.initializers.Constant(self.period), name="alpha")
            self.beta = self.add_weight(shape=(), initializer="zeros", name="beta", trainable=not self.centred)

        def call(self, v):
            up = keras.ops.arange(1, self.above + 1, dtype="float32")
            down = -keras.ops.arange(0, self.below, dtype="float32")
            beta = -self.alpha / 2 if self.centred else self.beta
            above = keras.ops.sigmoid(self.sharpness * (v - self.alpha * up - beta))
            below = keras.ops.sigmoid(self.sharpness * (self.alpha * down + beta - v))
            return keras.ops.concatenate([above, below], axis=-1)

        def get_config(self):
            return {
                **super().get_config(),
                "above": self.above,
                "below": self.below,
                "period": self.period,
                "centred": self.centred,
                "sharpness": self.sharpness,
            }


#: The control's kinds as features (rows: PAD, number, + - * / ( )): number, ``(``, ``)``, operator,
#: precedence level (1 for ``+ -``, 2 for ``* /``, 0 otherwise) and left-inverting (``- /``: ``x - (y + z)
#: = x - y - z``). Padding is all zeros, so it adds nothing to a score.
KIND_FEATURES = np.array(
    [
        [0, 0, 0, 0, 0, 0],
        [1, 0, 0, 0, 0, 0],
        [0, 0, 0, 1, 1, 0],
        [0, 0, 0, 1, 1, 1],
        [0, 0, 0, 1, 2, 0],
        [0, 0, 0, 1, 2, 1],
        [0, 1, 0, 0, 0, 0],
        [0, 0, 1, 0, 0, 0],
    ],
    np.float32,
)
#: The class of the centre kind, which picks the weights its pairs are scored with: operator, ``(``, other.
CENTRE_CLASS = np.array([2, 2, 0, 0, 0, 0, 1, 2])
#: What a pair (centre c, neighbour w) is described by: the neighbour's kind (number, ``(``, ``)``,
#: operator), how the two operators' precedence levels compare (w binds tighter, looser, or the same),
#: and for the same level which of the two invert.
RELATIONS = (
    "number",
    "open",
    "close",
    "operator",
    "tighter",
    "looser",
    "same, w inverts",
    "same, c inverts",
    "same, both invert",
)
_NUMBER, _OPEN, _CLOSE, _OPERATOR, _LEVEL, _INVERTS = range(6)
#: level(w) - level(c) of every (centre, neighbour) pair, [K, K]
_LEVEL_GAP = KIND_FEATURES[None, :, _LEVEL] - KIND_FEATURES[:, None, _LEVEL]
_BOTH_OPERATORS = KIND_FEATURES[:, None, _OPERATOR] * KIND_FEATURES[None, :, _OPERATOR]
SHARPNESS = 4.0  # of the logistic a threshold's gradient is taken from
THRESHOLD_MARGIN = 0.1  # weight of the loss that centres each threshold in its gap


def _relations(ops, tighter, looser):
    """``[K, K, R]``: the :data:`RELATIONS` of every (centre, neighbour) pair of kinds, from the two
    level comparisons (``[K, K]``, 0/1 where both are operators)."""
    tighter, looser = tighter * _BOTH_OPERATORS, looser * _BOTH_OPERATORS
    same = _BOTH_OPERATORS - tighter - looser
    w_inverts = np.broadcast_to(KIND_FEATURES[None, :, _INVERTS], _LEVEL_GAP.shape)
    c_inverts = np.broadcast_to(KIND_FEATURES[:, None, _INVERTS], _LEVEL_GAP.shape)
    kind = [np.broadcast_to(KIND_FEATURES[None, :, f], _LEVEL_GAP.shape) for f in range(_LEVEL)]
    return ops.stack(
        [*kind, tighter, looser, same * w_inverts, same * c_inverts, same * w_inverts * c_inverts], axis=-1
    )


def _pair_tables(ops, relations, weights, bias):
    """Pair-score tables ``T [2r, K*K, m]`` and ``bias [K, m]`` of :class:`predcalc.calculator.nets.PairwiseWindowScore`
    from the relation table ``[K, K, R]`` and the per-class weights ``[3, 2r, R, m]``, ``[3, m]``."""
    by_centre = ops.take(weights, CENTRE_CLASS, axis=0)  # [K, 2r, R, m]
    tables = ops.einsum("cwr,ckrm->kcwm", relations, by_centre)
    return ops.reshape(tables, (weights.shape[1], -1, weights.shape[-1])), ops.take(bias, CENTRE_CLASS, axis=0)


def control_tables(weights: list[np.ndarray]) -> list[np.ndarray]:
    """The relational control's weights (per-class relation weights ``[3, 2r, R, m]``, class bias
    ``[3, m]``, the two level thresholds) as the pair-score tables of
    :class:`predcalc.calculator.nets.PairwiseWindowScore` (``T [2r, K*K, m]``, ``bias [K, m]``)."""
    relation_weights, bias, (tighter_at, looser_at) = (np.asarray(w, np.float32) for w in weights)
    tighter = (_LEVEL_GAP > tighter_at).astype(np.float32)
    looser = (_LEVEL_GAP < looser_at).astype(np.float32)
    tables, bias = _pair_tables(np, _relations(np, tighter, looser), relation_weights, bias)
    return [np.asarray(tables, np.float32), np.asarray(bias, np.float32)]


def build_control_rule(seed: int, l2: float = 0.0) -> keras.Model:
    """The control as pair scores over relations of kinds:

        score_j(w) = b_j[class(w_0)] + sum_{k in -2,-1,1,2} sum_r A_j[class(w_0), k, r] rel_r(w_0, w_k)

    ready (j = 0) and inverted (j = 1) where the score is above 0. ``rel`` (:data:`RELATIONS`) says
    what the neighbour is and how its precedence level compares with the centre's:
    ``tighter = [level(w) - level(c) > theta_1]``, ``looser = [level(w) - level(c) < theta_2]``, two
    learned thresholds shared by every offset and output (hard forward, the logistic's gradient
    backward). Every operator pair of one relation shares its weights, so a pair never trained on
    (``/ N /``) is scored by what the pairs of its relation (``- N -``) taught."""
    from predcalc.calculator.nets import PairwiseWindowScore  # nets imports rules: at call time, no import cycle

    step = STEPS["control"]
    keras.utils.set_random_seed(seed)

    class RelationalWindowScore(PairwiseWindowScore):
        def build(self, input_shape):
            shape = (3, 2 * self.radius, len(RELATIONS), self.outputs)
            penalty = keras.regularizers.L2(l2) if l2 else None
            self.relation_weights = self.add_weight(
                shape=shape, initializer="zeros", name="relations", regularizer=penalty
            )
            self.class_bias = self.add_weight(
                shape=(3, self.outputs), initializer="zeros", name="class_bias", regularizer=penalty
            )
            self.thresholds = self.add_weight(shape=(2,), initializer="zeros", name="thresholds")

        def call(self, windows):
            gap = keras.ops.convert_to_tensor(_LEVEL_GAP)
            hard = [
                keras.ops.cast(gap > self.thresholds[0], "float32"),
                keras.ops.cast(gap < self.thresholds[1], "float32"),
            ]
            soft = [
                keras.ops.sigmoid(SHARPNESS * (gap - self.thresholds[0])),
                keras.ops.sigmoid(SHARPNESS * (self.thresholds[1] - gap)),
            ]
            # each threshold to the middle of its gap: its logistic agrees with its own hard decision
            # on every operator pair (a margin for the comparisons; it cannot flip a decision)
            agree = sum(
                keras.ops.sum(_BOTH_OPERATORS * keras.ops.binary_crossentropy(keras.ops.stop_gradient(h), p))
                for h, p in zip(hard, soft)
            )
            self.add_loss(THRESHOLD_MARGIN * agree / float(_BOTH_OPERATORS.sum()))
            tighter, looser = (_straight_through(h, p) for h, p in zip(hard, soft))
            relations = _relations(keras.ops, tighter, looser)
            self.pairs, self.bias = _pair_tables(keras.ops, relations, self.relation_weights, self.class_bias)
            return super().call(windows)

    inputs = keras.Input((len(step.inputs),), dtype="int32", name="inputs")
    scores = RelationalWindowScore(step.inputs[0], outputs=len(step.outputs), name="pairwise")(inputs)
    logits = [
        keras.ops.stack([keras.ops.zeros_like(scores[:, j]), scores[:, j]], axis=-1) for j in range(len(step.outputs))
    ]
    return keras.Model(inputs, logits, name="control_rule")


def _margin_loss(y_true, logits):
    """Hinge on the score (the logit of class 1): zero once every row is on its side by 1 or more."""
    sign = 2.0 * keras.ops.cast(keras.ops.reshape(y_true, (-1,)), "float32") - 1.0
    return keras.ops.relu(1.0 - sign * logits[:, 1])


def train_control(
    inputs: np.ndarray, seed: int, steps: int = 10_000, learning_rate: float = 1.0, l2: float = 5e-4
) -> tuple[keras.Model, dict]:
    """Fit the relational control on ``inputs`` as a support-vector machine over its relations: the
    hinge to a margin of 1 plus an L2 penalty ``l2 |A|^2`` on the weights, ``steps`` full-batch
    gradient-descent steps from zero weights (run to the end, not stopped at the first separating
    weights: the penalty keeps moving them towards the widest margin)."""
    step = STEPS["control"]
    model = build_control_rule(seed, l2)
    targets = step.reference(inputs)
    repeats = 50  # full-batch steps per Keras epoch (an epoch has a fixed cost)
    # one compiled call runs an epoch's steps (the same steps and weights as one call a step)
    model.compile(
        optimizer=keras.optimizers.SGD(learning_rate),
        loss=[_margin_loss] * targets.shape[1],
        steps_per_execution=repeats,
    )
    x, y = np.tile(inputs, (repeats, 1)), [np.tile(targets[:, j], repeats) for j in range(targets.shape[1])]
    model.fit(x, y, batch_size=len(inputs), epochs=steps // repeats, verbose=0, shuffle=False)
    scores = np.stack([np.asarray(h)[:, 1] for h in model(inputs, training=False)], axis=1)
    margin = float(np.min((2 * targets - 1) * scores))
    done = steps // repeats * repeats
    tighter_at, looser_at = (float(t) for t in model.get_layer("pairwise").thresholds.numpy())
    return model, {
        "epochs": done,
        "train_exact": float(np.mean(np.all((scores > 0) == targets, axis=1))),
        "margin": margin,
        "parameters": int(model.count_params()),
        "thresholds": [tighter_at, looser_at],
    }


def build_rule(name: str, seed: int) -> keras.Model:
    """Training model: int inputs -> [value, thresholds, outputs...] (soft, for the losses)."""
    rule, step = RULES[name], STEPS[name]
    keras.utils.set_random_seed(seed)
    inputs = keras.Input((len(step.inputs),), dtype="int32", name="inputs")
    features = keras.layers.Lambda(lambda x: rule.features(keras.ops, x), name="encode")(inputs)
    value = keras.layers.Dense(1, name="value")(features)
    steps = Staircase(rule.above, rule.below, rule.period, rule.centred, name="staircase")(value)
    # the outputs see what inference computes (a rounded value, hard thresholds); the gradients pass
    # straight through to the soft ones
    hard = _straight_through(keras.ops.cast(steps > 0.5, "float32"), steps)
    counts = keras.ops.stack(
        [keras.ops.sum(hard[:, : rule.above], axis=1), keras.ops.sum(hard[:, rule.above :], axis=1)], axis=1
    )
    summary = keras.ops.concatenate([_straight_through(keras.ops.round(value), value), counts], axis=1)
    outputs = [keras.layers.Dense(1, name=f"output_{j}")(summary) for j in range(len(step.outputs))]
    return keras.Model(inputs, [value, steps, *outputs], name=f"{name}_rule")


def _straight_through(hard, soft):
    """``hard`` forward, the gradient of ``soft`` backward."""
    return soft + keras.ops.stop_gradient(hard - soft)


def train_rule(
    name: str,
    inputs: np.ndarray,
    seed: int,
    epochs: int = 4000,
    learning_rate: float = 0.03,
    chunk: int = 250,
    minimum: int = 1500,
) -> tuple[keras.Model, dict]:
    """Fit a rule step on ``inputs`` (full-batch Adam steps) for at least ``minimum`` steps (the
    thresholds keep moving towards the middle of their gaps) and until every training input is right
    after two chunks of ``chunk`` steps in a row (or ``epochs`` steps)."""
    rule, step = RULES[name], STEPS[name]
    model = build_rule(name, seed)
    targets = step.reference(inputs)
    value = rule.value(inputs).astype("float32")
    steps = _staircase_targets(name, value)
    y = [value[:, None], steps.astype("float32")] + [
        targets[:, j : j + 1].astype("float32") for j in range(targets.shape[1])
    ]
    repeats = 50  # full-batch steps per Keras epoch (an epoch has a fixed cost)
    model.compile(  # one compiled call an epoch, as train_control
        optimizer=keras.optimizers.Adam(learning_rate),
        loss=["mse", keras.losses.BinaryCrossentropy()] + ["mse"] * targets.shape[1],
        steps_per_execution=repeats,
    )
    done, streak, right = 0, 0, 0.0
    x, y = np.tile(inputs, (repeats, 1)), [np.tile(t, (repeats, 1)) for t in y]
    while done < epochs and (streak < 2 or done < minimum):
        model.fit(x, y, batch_size=len(inputs), epochs=chunk // repeats, verbose=0, shuffle=False)
        done += chunk
        right = float(np.mean(np.all(RuleStep.from_model(model)(inputs) == targets, axis=1)))
        streak = streak + 1 if right == 1.0 else 0
    return model, {
        "epochs": done,
        "train_exact": right,
        "parameters": int(model.count_params()),
        "alpha": float(model.get_layer("staircase").alpha.numpy()),
        "beta": float(model.get_layer("staircase").beta.numpy()),
    }


def _staircase_targets(name: str, value: np.ndarray) -> np.ndarray:
    """Which thresholds each value passes: above, ``v >= p k`` (k = 1..), and below, ``v < -p k``
    (k = 0..), for the rule's period p (10 for digits, 1 for compare)."""
    rule = RULES[name]
    up, down = _ks(rule)
    return np.concatenate(
        [value[:, None] >= rule.period * up[None, :], value[:, None] < rule.period * down[None, :]], axis=1
    )


class RuleStep:
    """A trained rule step run in NumPy with hard thresholds and rounding (the inference computation)."""

    def __init__(self, name: str, weights: list[np.ndarray]):
        self.name = name
        self.rule = RULES[name]
        self.weights = [np.asarray(w, np.float64) for w in weights]

    @classmethod
    def from_model(cls, model):
        name = model.name.removesuffix("_rule")
        if name == "control":  # relational pair scores: the same computation as the plain tables
            from predcalc.calculator.nets import DenseStep  # nets imports rules: at call time, no import cycle

            return DenseStep("control", control_tables(model.get_weights()))
        return cls(name, model.get_weights())

    def __call__(self, inputs: np.ndarray) -> np.ndarray:
        inputs = np.asarray(inputs, np.int64)
        w, b, alpha, beta, *heads = self.weights
        beta = -alpha / 2 if self.rule.centred else beta
        features = self.rule.features(_NumpyOps, inputs).astype(np.float64)
        v = np.round(features @ w[:, 0] + b[0])
        up, down = _ks(self.rule)
        above = (v[:, None] >= alpha * up[None, :] + beta).sum(axis=1)
        below = (v[:, None] < alpha * down[None, :] + beta).sum(axis=1)
        summary = np.stack([v, above, below], axis=1)
        return np.stack(
            [np.round(summary @ heads[2 * j][:, 0] + heads[2 * j + 1][0]) for j in range(len(heads) // 2)], axis=1
        ).astype(np.int64)


def rule_signature(tf, name: str, weights: list):
    """The LiteRT signature of a rule step: the same computation as :class:`RuleStep`."""
    rule, step = RULES[name], STEPS[name]
    w, b, alpha, beta, *heads = (np.asarray(x, np.float32) for x in weights)
    beta = -alpha / 2 if rule.centred else beta
    up, down = _ks(rule)

    @tf.function(input_signature=[tf.TensorSpec([None, len(step.inputs)], tf.int32, name="inputs")], autograph=False)
    def run(inputs):
        features = rule.features(_TfOps(tf), inputs)
        v = tf.round(tf.matmul(features, w) + b)  # [n, 1]
        above = tf.reduce_sum(tf.cast(v >= alpha * up[None, :] + beta, tf.float32), axis=1, keepdims=True)
        below = tf.reduce_sum(tf.cast(v < alpha * down[None, :] + beta, tf.float32), axis=1, keepdims=True)
        summary = tf.concat([v, above, below], axis=1)
        classes = [
            tf.cast(tf.round(tf.matmul(summary, heads[2 * j]) + heads[2 * j + 1]), tf.int32)
            for j in range(len(heads) // 2)
        ]
        return {"classes": tf.concat(classes, axis=1)}

    return run


class _TfOps:
    def __init__(self, tf):
        self.tf = tf

    def cast(self, x, dtype):
        return self.tf.cast(x, getattr(self.tf, dtype))

    def stack(self, xs, axis):
        return self.tf.stack(xs, axis=axis)

    def equal(self, x, value):
        return self.tf.equal(x, value)
