"""Backpropagation through time in float64 NumPy: reference document 004's 2-unit recurrent network
(inputs 1, 3, 5 in binary, then zeros; outputs 5, 3, 1 at steps 4-6), back-propagated per loss as the
article does (:func:`per_loss_gradients`) and in the usual single sweep (:func:`bptt`)."""

from __future__ import annotations

import dataclasses

import numpy as np

PARAMETER_NAMES = ("W_s", "U", "B_s", "W_o", "B_o")
LOSSES = ("article", "binary")


@dataclasses.dataclass(frozen=True)
class ElmanParameters:
    """The article's variables: ``W_s``, ``U``, ``B_s``, ``W_o``, ``B_o`` (row-vector shapes)."""

    W_s: np.ndarray
    U: np.ndarray
    B_s: np.ndarray
    W_o: np.ndarray
    B_o: np.ndarray

    def __post_init__(self):
        for name in PARAMETER_NAMES:
            object.__setattr__(self, name, np.asarray(getattr(self, name), dtype=np.float64))
        inputs, units = self.W_s.shape
        outputs = self.W_o.shape[1]
        expected = {"U": (units, units), "B_s": (units,), "W_o": (units, outputs), "B_o": (outputs,)}
        for name, shape in expected.items():
            if getattr(self, name).shape != shape:
                raise ValueError(
                    f"{name} must have shape {shape} for W_s of shape {self.W_s.shape}. "
                    f"Received: {name}.shape={getattr(self, name).shape}"
                )

    def as_dict(self) -> dict[str, np.ndarray]:
        return {name: getattr(self, name) for name in PARAMETER_NAMES}


def binary_digits(value: int, width: int = 3) -> np.ndarray:
    """``value`` as a row of binary digits, most significant first: 5 -> [1, 0, 1]."""
    if not 0 <= value < 2**width:
        raise ValueError(f"value must be in [0, {2**width}). Received: value={value}")
    return np.array([(value >> shift) & 1 for shift in range(width - 1, -1, -1)], dtype=np.float64)


def reference004_example():
    """The article's problem: ``(parameters, inputs (6, 3), targets {step: y_t}, learning_rate)``, steps from 1."""
    parameters = ElmanParameters(
        W_s=[[-0.75, 0.50], [-0.25, 0.00], [0.25, 0.25]],
        U=[[0.10, -0.25], [0.50, 0.50]],
        B_s=[0.50, 0.35],
        W_o=[[-0.90, 0.45, 0.00], [0.15, 0.25, 0.10]],
        B_o=[0.80, 0.60, -0.25],
    )
    inputs = np.stack([binary_digits(v) for v in (1, 3, 5)] + [np.zeros(3)] * 3)  # (6, 3)
    targets = {4: binary_digits(5), 5: binary_digits(3), 6: binary_digits(1)}
    return parameters, inputs, targets, 0.5


@dataclasses.dataclass(frozen=True)
class Forward:
    """Every quantity of a forward pass by step ``t = 1..T``; ``s[t]`` is ``s_t`` (``s[0] = 0``)."""

    s_in: np.ndarray  # (T, units), s_t^in
    s: np.ndarray  # (T + 1, units), s_0 .. s_T
    o_in: dict  # {t: (outputs,)} at the output steps
    o: dict  # {t: (outputs,)}


def forward(parameters: ElmanParameters, inputs, output_steps) -> Forward:
    inputs = np.asarray(inputs, dtype=np.float64)
    steps = len(inputs)
    for t in output_steps:
        if not 1 <= t <= steps:
            raise ValueError(f"output steps must be in 1..{steps}. Received: {t}")
    s = np.zeros((steps + 1, parameters.U.shape[0]))
    s_in = np.zeros((steps, parameters.U.shape[0]))
    for t in range(1, steps + 1):
        s_in[t - 1] = inputs[t - 1] @ parameters.W_s + s[t - 1] @ parameters.U + parameters.B_s
        s[t] = np.tanh(s_in[t - 1])
    o_in = {t: s[t] @ parameters.W_o + parameters.B_o for t in output_steps}
    o = {t: 1.0 / (1.0 + np.exp(-value)) for t, value in o_in.items()}
    return Forward(s_in=s_in, s=s, o_in=o_in, o=o)


def _check_loss(loss: str) -> None:
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {LOSSES}. Received: loss={loss!r}")


def step_losses(outputs: dict, targets: dict, loss: str = "article") -> dict:
    """``{t: L_t}``: the article's ``-sum y log o`` or the binary cross-entropy."""
    _check_loss(loss)
    values = {}
    for t, y in targets.items():
        y, o = np.asarray(y, dtype=np.float64), outputs[t]
        value = -np.sum(y * np.log(o))
        if loss == "binary":
            value -= np.sum((1.0 - y) * np.log(1.0 - o))
        values[t] = float(value)
    return values


def output_error(o, y, loss: str = "article") -> np.ndarray:
    """``dL_t/do_t^in``: ``y * (o - 1)`` for the article's loss, ``o - y`` for binary cross-entropy."""
    _check_loss(loss)
    y = np.asarray(y, dtype=np.float64)
    return y * (o - 1.0) if loss == "article" else o - y


@dataclasses.dataclass(frozen=True)
class LossGradients:
    deltas: np.ndarray  # (T, units); zero after the loss's own step
    output_error: np.ndarray  # (outputs,), dL/do^in
    gradients: dict  # {name: array}


def _sweep(parameters, inputs, fwd, errors: dict) -> tuple[np.ndarray, dict]:
    steps, units = fwd.s_in.shape
    deltas = np.zeros((steps, units))
    carried = np.zeros(units)  # dL/ds_t coming from step t + 1
    for t in range(steps, 0, -1):
        ds = carried + (errors[t] @ parameters.W_o.T if t in errors else 0.0)  # dL/ds_t
        deltas[t - 1] = ds * (1.0 - fwd.s[t] ** 2)  # tanh' = 1 - tanh^2
        carried = deltas[t - 1] @ parameters.U.T
    gradients = {
        "W_s": np.asarray(inputs, dtype=np.float64).T @ deltas,  # sum_j I_j^T Delta_j
        "U": fwd.s[:-1].T @ deltas,  # sum_j s_{j-1}^T Delta_j
        "B_s": deltas.sum(axis=0),
        "W_o": sum(np.outer(fwd.s[t], e) for t, e in errors.items()),
        "B_o": sum(errors.values()),
    }
    return deltas, gradients


def per_loss_gradients(parameters: ElmanParameters, inputs, targets: dict, loss: str = "article"):
    """The article's route, one backward sweep per loss: ``(forward, {t: LossGradients}, totals)``."""
    fwd = forward(parameters, inputs, sorted(targets))
    per_loss = {}
    for t, y in sorted(targets.items()):
        error = output_error(fwd.o[t], y, loss)
        deltas, gradients = _sweep(parameters, inputs, fwd, {t: error})
        per_loss[t] = LossGradients(deltas=deltas, output_error=error, gradients=gradients)
    totals = {name: sum(item.gradients[name] for item in per_loss.values()) for name in PARAMETER_NAMES}
    return fwd, per_loss, totals


def bptt(parameters: ElmanParameters, inputs, targets: dict, loss: str = "article"):
    """One backward sweep for ``L = sum_t L_t``: ``(total loss, deltas (T, units), gradients)``."""
    fwd = forward(parameters, inputs, sorted(targets))
    errors = {t: output_error(fwd.o[t], y, loss) for t, y in targets.items()}
    deltas, gradients = _sweep(parameters, inputs, fwd, errors)
    return sum(step_losses(fwd.o, targets, loss).values()), deltas, gradients


def total_loss(parameters: ElmanParameters, inputs, targets: dict, loss: str = "article") -> float:
    fwd = forward(parameters, inputs, sorted(targets))
    return sum(step_losses(fwd.o, targets, loss).values())


def gradient_descent(parameters: ElmanParameters, gradients: dict, learning_rate: float) -> ElmanParameters:
    return ElmanParameters(
        **{name: getattr(parameters, name) - learning_rate * gradients[name] for name in PARAMETER_NAMES}
    )


def numerical_gradients(
    parameters: ElmanParameters, inputs, targets: dict, loss: str = "article", epsilon: float = 1e-6
) -> dict:
    """Central finite differences of the total loss."""
    gradients = {}
    for name in PARAMETER_NAMES:
        value = getattr(parameters, name)
        gradient = np.zeros_like(value)
        for index in np.ndindex(value.shape):
            shifted = []
            for sign in (1.0, -1.0):
                changed = value.copy()
                changed[index] += sign * epsilon
                shifted.append(total_loss(dataclasses.replace(parameters, **{name: changed}), inputs, targets, loss))
            gradient[index] = (shifted[0] - shifted[1]) / (2 * epsilon)
        gradients[name] = gradient
    return gradients
