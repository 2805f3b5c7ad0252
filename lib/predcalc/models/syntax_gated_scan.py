"""Models that can carry a running sum: a gated linear recurrence with a bilinear value path.

The idea (issue 8): the value of ``a op b op c`` is a signed sum. A linear recurrence
(:class:`predcalc.layers.MinGRU`) can hold "the sign of the next number" as a state that
operators overwrite and numbers leave alone; multiplying that state by the number's value
(a bilinear, not a squashing, interaction) and summing over positions gives the answer for
any number size and any length, if the gates read the token's type and not its value.

    s_t = (1 - z_t) * s_{t-1} + z_t * g(W_h u_t)       (MinGRU over the type features u_t)
    y   = w^T mean_t [ s_t * (V v_t) ; V v_t ] + b      (v_t: the token's value)

The registered variants are the proposal and its ablations: gates that also read the value,
the prior report's numeric tokens (type and value mixed in one number), no multiplicative path, and
a Keras LSTM reading the same typed tokens. ``scan_typed_solved`` finishes the fitted scan in
closed form: operators overwrite the state (``z = 1`` on `+`/`-`), then the readout ``w, b``
is solved by least squares, which makes every coefficient +1 or -1 to float precision
(``scan_typed_readout_solved`` solves the readout without the overwrite).
"""

from __future__ import annotations

import keras
import numpy as np

from predcalc.layers import FeatureSlice, MinGRU
from predcalc.models.registry import register_model, register_preset

SCAN = "syntax-gated scan"  # the families table's row


def gated_scan(
    tokenizer, units: int = 4, gates: str = "type", multiplicative: bool = True, name: str = "syntax_gated_scan"
) -> keras.Model:
    """The signed-sum model.

    Args:
        units: state size of the MinGRU (2 suffice in principle: "plus" and "minus").
        gates: ``"type"``: the recurrence reads only the type features; ``"all"``: also the value;
            ``"numeric"``: the prior report's single-number tokens (type and value in one feature).
        multiplicative: multiply the state by the projected value (False: concatenate instead).
    """
    if gates not in ("type", "all", "numeric"):
        raise ValueError(f"gates must be 'type', 'all' or 'numeric'. Received: gates={gates!r}")
    if gates == "numeric":
        inputs = keras.Input((tokenizer.length,), name="tokens")
        tokens = keras.layers.Reshape((tokenizer.length, 1), name="token_features")(inputs)
        gate_inputs, value_inputs = tokens, tokens
    else:
        inputs = keras.Input((tokenizer.length, 4), name="tokens")  # (value, is_plus, is_minus, is_number)
        value_inputs = FeatureSlice(0, 1, name="token_value")(inputs)  # (batch, time, 1)
        gate_inputs = inputs if gates == "all" else FeatureSlice(1, 4, name="token_type")(inputs)
    state = MinGRU(units, return_sequences=True, name="sign_state")(gate_inputs)  # (batch, time, units)
    values = keras.layers.Dense(units, use_bias=False, name="value_projection")(value_inputs)  # (batch, time, units)
    if multiplicative:
        mixed = keras.layers.Multiply(name="signed_values")([state, values])
        features = keras.layers.Concatenate(name="features")([mixed, values])
    else:
        features = keras.layers.Concatenate(name="features")([state, values])
    per_token = keras.layers.Dense(1, use_bias=False, name="per_token")(features)  # (batch, time, 1)
    pooled = keras.layers.GlobalAveragePooling1D(name="mean_over_tokens")(per_token)
    outputs = keras.layers.Dense(1, name="value")(pooled)
    return keras.Model(inputs, outputs, name=name)


@register_model(
    "scan_typed",
    label="Syntax-gated scan (typed tokens)",
    family="gated linear recurrence",
    variable_length=True,
    tokenizer="typed",
    findings_family=SCAN,
    short_name="typed scan",
    kind="built form, trained weights",  # type-only gates, value times a sign state: a signed sum
    designed_on="the protocol's test sets",
)
def scan_typed(
    tokenizer, units: int = 4, gates: str = "type", multiplicative: bool = True, name: str = "scan_typed"
) -> keras.Model:
    """:func:`gated_scan` on the typed tokens, its gates reading the token types; the variants below
    are presets of it."""
    return gated_scan(tokenizer, units, gates=gates, multiplicative=multiplicative, name=name)


OVERWRITE_LOGIT = 30.0  # sigmoid(30) rounds to 1 in float32; in the log-space scan the leak is e^-30 ~ 1e-13


def overwrite_operator_gates(model: keras.Model) -> keras.Model:
    """Set the update gate to 1 on `+` and `-` (``z = sigmoid(30)``) in a type-gated scan, so the state after an
    operator is ``g(W_h u_op)`` whatever came before it. A fitted model's operator gates sit near 0.8-0.99, and that
    leak makes its coefficients depend on the history. The other weights stay as they are; works in place."""
    layer = model.get_layer("sign_state")
    if layer.kernel.shape[0] != 3:
        raise ValueError(
            "overwrite_operator_gates needs a scan whose gates read the type features only "
            f"(gates='type'); this one's gates read {layer.kernel.shape[0]} features"
        )
    kernel, bias = keras.ops.convert_to_numpy(layer.kernel), keras.ops.convert_to_numpy(layer.bias)
    units = kernel.shape[1] // 2  # kernel laid out [z | h~]; type features (is_plus, is_minus, is_number)
    kernel[:2, :units] = OVERWRITE_LOGIT - bias[:units]
    layer.kernel.assign(kernel)
    return model


def solve_readout(model: keras.Model, x_train, y_train) -> keras.Model:
    """Set a scan's readout by least squares: ``y = sum_t f_t . a + b`` is linear in ``a`` (the per-token weights
    times the output scale over the length) and ``b``, given the features ``f_t``; solved in float64 on the
    training split, the output layer becomes ``y = pooled + b``. Works in place."""
    features = keras.Model(model.inputs, model.get_layer("features").output)
    summed = np.asarray(features.predict(x_train, batch_size=1024, verbose=0), dtype=np.float64).sum(axis=1)
    design = np.hstack([summed, np.ones((len(summed), 1))])
    solution, *_ = np.linalg.lstsq(design, np.asarray(y_train, dtype=np.float64).reshape(-1), rcond=None)
    length = model.inputs[0].shape[1]
    model.get_layer("per_token").set_weights([(solution[:-1] * length).reshape(-1, 1).astype("float32")])
    model.get_layer("value").set_weights([np.ones((1, 1), "float32"), solution[-1:].astype("float32")])
    return model


def overwrite_and_solve(model: keras.Model, x_train, y_train) -> keras.Model:
    """Finish a fitted type-gated scan: :func:`overwrite_operator_gates`, then :func:`solve_readout`. The
    coefficient of each number then depends only on the operator before it, and the solve sets it to +1 or -1
    to float precision."""
    return solve_readout(overwrite_operator_gates(model), x_train, y_train)


def _scan_typed_variant(name: str, label: str, arguments: dict | None = None, **fields) -> None:
    fields.setdefault("findings_family", SCAN)
    register_preset(name, "scan_typed", label=label, arguments={**(arguments or {}), "name": name}, **fields)


# The scan of scan_typed, finished after fitting by overwrite_and_solve (or only its readout solved).
_scan_typed_variant(
    "scan_typed_solved",
    "Syntax-gated scan, operators overwrite + solved readout",
    finish=overwrite_and_solve,
    short_name="typed scan, gates set by hand, readout solved",
)
_scan_typed_variant(
    "scan_typed_readout_solved",
    "Ablation: solved readout, operator gates as fitted",
    finish=solve_readout,
    short_name="typed scan, readout solved",
)
# Ablations: the gates also read the value; the prior report's numeric tokens; no multiplicative path.
_scan_typed_variant("scan_typed_value_gates", "Ablation: gates also read the value", {"gates": "all"})
_scan_typed_variant(
    "scan_numeric", "Ablation: the prior report's numeric tokens", {"gates": "numeric"}, tokenizer="numeric"
)
_scan_typed_variant("scan_typed_additive", "Ablation: no multiplicative path", {"multiplicative": False})


def readout_for_length(model: keras.Model, trained_length: int) -> keras.Model:
    """A scan rebuilt for a longer input (same weights) made to compute the function it learned at
    ``trained_length``: its answer is ``w * mean_t f_t + b`` over every position, padding included
    (padding's features are 0, so it adds nothing to the sum), so at ``length`` tokens the output
    weight ``w`` is multiplied by ``length / trained_length``. A model without the scan's
    ``mean_over_tokens`` pooling is returned as it is. Works in place; returns the model."""
    try:
        model.get_layer("mean_over_tokens")
    except ValueError:
        return model
    length = int(model.inputs[0].shape[1])
    layer = model.get_layer("value")
    kernel, bias = layer.get_weights()
    layer.set_weights([kernel * np.float32(length / trained_length), bias])
    return model


@register_model(
    "lstm_typed",
    label="Keras LSTM(32) (typed tokens)",
    family="LSTM",
    variable_length=True,
    tokenizer="typed",
    findings_family="LSTM / GRU",
    short_name="LSTM 32, typed tokens",
)
def lstm_typed(tokenizer, units: int = 32) -> keras.Model:
    inputs = keras.Input((tokenizer.length, 4), name="tokens")
    hidden = keras.layers.LSTM(units, unroll=True, name="lstm")(inputs)  # unrolled: full-int8 export works
    return keras.Model(inputs, keras.layers.Dense(1, name="value")(hidden), name="lstm_typed")


def signed_sum_coefficients(predict, terms: int = 8, probe: float = 1000.0) -> list[dict]:
    """Read a model as ``y = bias + sum_i c_i * x_i``: the coefficient of the i-th number after ``+``
    and after ``-`` (the numbers before it 0, joined by ``+``), from three predictions each.

    A model whose gates read only token types is affine in the values for a fixed operator
    sequence, so these coefficients are exact, and an expression's error is
    ``bias + sum_i (c_i - sign_i) * x_i``: it is exact while that stays below 0.5. ``nonlinearity``
    (``|f(2p) - 2 f(p) + f(0)|`` at ``p = probe``) is 0 for such a model, large for one that is not.

    Args:
        predict: expressions -> predicted values (e.g. ``TrainedModel.predict``).
        terms: the positions to read, 1..terms (the first number has no operator: ``+``).
    """
    if terms < 1:
        raise ValueError(f"terms must be at least 1. Received: terms={terms}")
    probes = [(position, op) for position in range(1, terms + 1) for op in (("+", "-") if position > 1 else ("+",))]
    expressions = []
    for position, op in probes:
        prefix = " + ".join(["0"] * (position - 1)) + f" {op} " if position > 1 else ""
        expressions += [f"{prefix}{value:.0f}" for value in (0.0, probe, 2 * probe)]
    values = np.asarray(predict(expressions), dtype=np.float64).reshape(len(probes), 3)  # one call for all probes
    return [
        {
            "position": position,
            "operator": op,
            "coefficient": (one - zero) / probe,
            "bias": zero,
            "nonlinearity": abs(two - 2 * one + zero),
        }
        for (position, op), (zero, one, two) in zip(probes, values.tolist())
    ]


def coefficient_summary(rows: list[dict]) -> dict:
    """Of :func:`signed_sum_coefficients`' rows: each row's error against the exact +1/-1, the errors
    at the last position read (where the sign state has settled), the number size from which an
    answer stops being exact (0.5 / the larger settled error) and the largest nonlinearity."""
    errors = [{**r, "error": r["coefficient"] - (1.0 if r["operator"] == "+" else -1.0)} for r in rows]
    last = max(r["position"] for r in rows)
    settled = {r["operator"]: r["error"] for r in errors if r["position"] == last}
    return {
        "rows": errors,
        "position": last,
        "settled": settled,
        "exact_below": 0.5 / max(max(abs(v) for v in settled.values()), 1e-12),
        "nonlinearity": max(r["nonlinearity"] for r in rows),
    }
