"""The calculator's learned parts: small Keras networks, trained by gradient descent on step targets.

Each arithmetic step is a multilayer perceptron over the one-hot codes of its inputs, with one
softmax head per output:

    h = relu(W2 relu(W1 [onehot(x_1), ..., onehot(x_k)] + b1) + b2),  y_j = argmax(V_j h + c_j)

The controller scores a token from its window of kinds as a sum of learned pair terms:

    score(w) = b[w_0] + sum_{k in -2, -1, 1, 2} T_k[w_0, w_k],   ready  <=>  score > 0

so readiness is learned per (token, neighbour) pair and composes to windows never seen together.
"""

from __future__ import annotations

import numpy as np

from predcalc.calculator.steps import STEPS, Step, TableStep  # noqa: F401  (TableStep re-exported)

try:  # training needs Keras; the runtime-only install does not have it
    import keras
except ImportError:  # pragma: no cover - exercised in the runtime-only install
    keras = None

HIDDEN = {"compare": 32, "addsub": 64, "sign": 32, "muldigit": 128, "xor": 8, "lead": 8, "qdigit": 64}


if keras is not None:

    @keras.saving.register_keras_serializable(package="predcalc")
    class PairwiseWindowScore(keras.layers.Layer):
        """score_j(w) = b_j[w_0] + sum_k T_jk[w_0, w_k] over a window ``w`` of token kinds (w_0 its
        centre), one score per output; input ``[..., 2r+1]`` int, output ``[..., outputs]`` float."""

        def __init__(self, n_kinds: int, radius: int = 2, outputs: int = 1, **kwargs):
            super().__init__(**kwargs)
            self.n_kinds = n_kinds
            self.radius = radius
            self.outputs = outputs

        def build(self, input_shape):
            # zeros: a (token, neighbour) pair never seen in training adds nothing to the score
            self.pairs = self.add_weight(
                shape=(2 * self.radius, self.n_kinds * self.n_kinds, self.outputs), initializer="zeros", name="pairs"
            )
            self.bias = self.add_weight(shape=(self.n_kinds, self.outputs), initializer="zeros", name="bias")

        def call(self, windows):
            windows = keras.ops.cast(windows, "int32")
            centre = windows[..., self.radius]
            score = keras.ops.take(self.bias, centre, axis=0)
            offsets = [k for k in range(2 * self.radius + 1) if k != self.radius]
            for slot, k in enumerate(offsets):
                index = centre * self.n_kinds + windows[..., k]
                score = score + keras.ops.take(self.pairs[slot], index, axis=0)
            return score

        def get_config(self):
            return {**super().get_config(), "n_kinds": self.n_kinds, "radius": self.radius, "outputs": self.outputs}


def build_step(name: str, seed: int, hidden: int | None = None) -> keras.Model:
    """The training model of a step: int inputs ``[n, k]`` -> one logits tensor per output."""
    step = STEPS[name]
    keras.utils.set_random_seed(seed)
    inputs = keras.Input((len(step.inputs),), dtype="int32", name="inputs")
    if name == "control":
        scores = PairwiseWindowScore(step.inputs[0], outputs=len(step.outputs), name="pairwise")(inputs)
        logits = [
            keras.ops.stack([keras.ops.zeros_like(scores[:, j]), scores[:, j]], axis=-1)
            for j in range(len(step.outputs))
        ]
        return keras.Model(inputs, logits, name="control")
    codes = [keras.ops.one_hot(inputs[:, i], radix) for i, radix in enumerate(step.inputs)]
    x = keras.ops.concatenate(codes, axis=-1)
    width = hidden or HIDDEN[name]
    x = keras.layers.Dense(width, activation="relu", name="hidden_1")(x)
    x = keras.layers.Dense(width, activation="relu", name="hidden_2")(x)
    heads = [keras.layers.Dense(classes, name=f"output_{j}")(x) for j, classes in enumerate(step.outputs)]
    return keras.Model(inputs, heads, name=name)


def decide(model: keras.Model) -> keras.Model:
    """The inference model: int inputs -> int class of each output, ``[n, m]``."""
    heads = model.outputs
    classes = [keras.ops.cast(keras.ops.argmax(h, axis=-1), "int32") for h in heads]
    return keras.Model(model.inputs, keras.ops.stack(classes, axis=-1), name=f"{model.name}_decide")


LEARNING_RATE = {"control": 0.05}


def train_step(
    name: str,
    inputs: np.ndarray,
    seed: int,
    epochs: int = 2000,
    hidden: int | None = None,
    learning_rate: float | None = None,
    chunk: int = 25,
    build=None,
    minimum: int = 0,
) -> tuple[keras.Model, dict]:
    """Fit a step network to its reference targets on ``inputs`` (the step inputs seen in training).

    Adam on the softmax cross-entropy of each output, in chunks of ``chunk`` epochs, for at least
    ``minimum`` epochs and until every training input has been right after two chunks in a row (or
    ``epochs``). ``build(seed)`` makes another model than :func:`build_step`'s.
    """
    step = STEPS[name]
    targets = step.reference(inputs)
    model = build(seed) if build else build_step(name, seed, hidden)
    rate = learning_rate or LEARNING_RATE.get(name, 1e-2)
    model.compile(
        optimizer=keras.optimizers.Adam(rate),
        loss=[keras.losses.SparseCategoricalCrossentropy(from_logits=True)] * len(step.outputs),
    )
    y = [targets[:, j] for j in range(targets.shape[1])]
    done, streak, loss, right = 0, 0, float("nan"), 0.0
    while done < epochs and (streak < 2 or done < minimum):
        history = model.fit(inputs, y, batch_size=min(128, len(inputs)), epochs=chunk, verbose=0, shuffle=True)
        done += chunk
        loss = float(history.history["loss"][-1])
        right = float(np.mean(np.all(numpy_step(model)(inputs) == targets, axis=1)))
        streak = streak + 1 if right == 1.0 else 0
    return model, {"epochs": done, "loss": loss, "train_exact": right, "parameters": int(model.count_params())}


class DenseStep:
    """A trained step network run in plain NumPy from its weights (no Keras needed)."""

    def __init__(self, name: str, weights: list[np.ndarray]):
        self.step: Step = STEPS[name]
        self.name = name
        self.weights = [np.asarray(w) for w in weights]

    @classmethod
    def from_model(cls, model) -> DenseStep:
        return cls(model.name, [np.asarray(w) for w in model.get_weights()])

    def __call__(self, inputs: np.ndarray) -> np.ndarray:
        inputs = np.asarray(inputs, np.int64)
        if self.name == "control":
            pairs, bias = self.weights
            radius = inputs.shape[1] // 2
            centre = inputs[:, radius]
            score = bias[centre]
            for slot, k in enumerate([k for k in range(inputs.shape[1]) if k != radius]):
                score = score + pairs[slot][centre * bias.shape[0] + inputs[:, k]]
            return (score > 0).astype(np.int64)
        offsets = np.cumsum((0,) + self.step.inputs[:-1])
        x = np.zeros((len(inputs), sum(self.step.inputs)), np.float32)
        x[np.arange(len(inputs))[:, None], inputs + offsets] = 1.0
        w1, b1, w2, b2, *heads = self.weights
        h = np.maximum(x @ w1 + b1, 0)
        h = np.maximum(h @ w2 + b2, 0)
        return np.stack(
            [np.argmax(h @ heads[2 * j] + heads[2 * j + 1], axis=-1) for j in range(len(self.step.outputs))], axis=1
        )


def numpy_step(model):
    """A trained step network (a table MLP, the control's pair scores, or a rule step) as a NumPy function."""
    from predcalc.calculator.rules import RuleStep  # rules imports nets: at call time, no import cycle

    return RuleStep.from_model(model) if model.name.endswith("_rule") else DenseStep.from_model(model)


def check_step(name: str, function) -> dict:
    """A step function against its reference on every input that can occur."""
    step = STEPS[name]
    reachable = step.reachable()
    wrong = ~np.all(np.asarray(function(reachable)) == step.reference(reachable), axis=1)
    return {
        "step": name,
        "inputs": int(len(reachable)),
        "wrong": int(wrong.sum()),
        "examples": [[int(v) for v in row] for row in reachable[wrong][:5]],
    }
