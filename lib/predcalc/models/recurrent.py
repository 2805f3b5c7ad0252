"""Recurrent regression models of the prior report (document 000): RNN with PReLU, LSTM, GRU, BiLSTM + attention.

Every model reads the prior report's numeric tokens (15 scalars: numbers, ``+`` 1.0, ``-`` 0.0, pad
0.5) as a sequence of 15 one-feature steps, ``(batch, 15) -> (batch, 15, 1)``, and ends in one
linear neuron (the prior report's ``y = W_hy h_T + b_y``, read from the last state or the attention
context). Like the prior report, padding is read as input by default (``mask_padding=False``); with
``mask_padding=True`` a ``Masking`` layer hides the pad value instead.

- ``rnn2``: ``keras.layers.RNN(PReLURNNCell(470))``, seed 000 section 1.1
  (``h_t = PReLU(W_xh x_t + W_hh h_{t-1} + b_h)``): ``u^2 + 4u + 1`` = 222,781 parameters for
  ``u = 470``, the size nearest the prior report's published 222,464 (469 units give 221,838; no
  stack of these cells hits 222,464 exactly, and the prior report does not state its layout).
- ``lstm``: ``keras.layers.LSTM(64)``, equations (1)-(6): 16,961 parameters. No seed row.
- ``gru``: ``keras.layers.GRU(64, reset_after=False)``, equations (7)-(10) (the reset gate acts
  on ``h_{t-1}`` before the matrix product, as reference eq. (9); Keras' ``z`` is the prior report's
  ``1 - z_t``, a sign flip of ``W_z`` and ``b_z``, see ``ReferenceGRUCell``): 12,737 parameters.
- ``bilstm_attention``: ``BidirectionalLSTMAttention(19, attention_units=82)``, section 2.3:
  ``8u^2 + 16u`` (two LSTMs) ``+ a (2u + 2)`` (attention ``W``, ``b``, ``u``) ``+ 2u + 1``
  (output) = exactly the prior report's 6,511 for ``u = 19``, ``a = 82``; the prior report's text describes
  ``u = 64``, ``a = 128`` (50,561 parameters on one-feature tokens), which its published count
  rules out.

The LSTM and GRU are the Keras layers (the same equations; ``ReferenceLSTMCell``/``ReferenceGRUCell``
exist to read, test and explain them). The recurrences of ``rnn2``, ``lstm`` and ``gru`` are
unrolled (``unroll=True``; 15 steps, the same computation): full-integer int8 LiteRT calibration
at batch 1 crashed the converter (SIGSEGV) on the rolled loop of each of them (first seen on this machine
for the LSTM). The LSTMs inside ``BidirectionalLSTMAttention`` are rolled, so that model has
no full-integer int8 export. :func:`attention_weights` returns the attention weights over the
tokens of ``bilstm_attention``.
"""

from __future__ import annotations

import keras
import numpy as np

from predcalc.data.tokenizers import signed_terms
from predcalc.layers.bilstm_attention import BidirectionalLSTMAttention
from predcalc.layers.prelu_rnn_cell import PReLURNNCell
from predcalc.models.attention import attention_scores
from predcalc.models.registry import register_model
from predcalc.models.token_heads import numeric_sequence

LSTM_GRU = "LSTM / GRU"  # the families table's row of the gated recurrent networks


def _check_positive(**values) -> None:
    for name, value in values.items():
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ValueError(f"{name} must be a positive integer. Received: {name}={value!r}")


@register_model(
    "rnn2",
    label="RNN2 (PReLU RNN, 470 units)",
    family="RNN",
    variable_length=True,
    tokenizer="numeric",
    reference_row="RNN2 (SimpleRNN + PReLU)",
    findings_family="simple recurrent network",
    short_name="RNN 470 units (prior report's RNN2)",
)
def rnn2(
    tokenizer, units: int = 470, num_layers: int = 1, unroll: bool = True, mask_padding: bool = False
) -> keras.Model:
    """Elman RNN with PReLU (seed 000, 1.1), ``num_layers`` stacked, read out by one linear neuron."""
    _check_positive(units=units, num_layers=num_layers)
    inputs, x = numeric_sequence(tokenizer, mask_padding)
    for index in range(1, num_layers + 1):
        x = keras.layers.RNN(
            PReLURNNCell(units),
            return_sequences=index < num_layers,
            unroll=unroll,
            name=f"prelu_rnn_{index}" if num_layers > 1 else "prelu_rnn",
        )(x)
    outputs = keras.layers.Dense(1, name="value")(x)
    return keras.Model(inputs, outputs, name="rnn2")


def _last_state_to_value(tokenizer, mask_padding: bool, make_layer, name: str) -> keras.Model:
    """The numeric tokens through one recurrent layer (built by ``make_layer()`` after the inputs, as
    before), its last state to one linear neuron."""
    inputs, x = numeric_sequence(tokenizer, mask_padding)
    x = make_layer()(x)
    outputs = keras.layers.Dense(1, name="value")(x)
    return keras.Model(inputs, outputs, name=name)


@register_model(
    "lstm",
    label="LSTM (64 units)",
    family="LSTM",
    variable_length=True,
    tokenizer="numeric",
    findings_family=LSTM_GRU,
    short_name="LSTM 64",
)
def lstm(tokenizer, units: int = 64, unroll: bool = True, mask_padding: bool = False) -> keras.Model:
    """Keras LSTM (seed 000 equations (1)-(6)) over the numeric tokens, last state to one neuron."""
    _check_positive(units=units)
    return _last_state_to_value(
        tokenizer, mask_padding, lambda: keras.layers.LSTM(units, unroll=unroll, name="lstm"), name="lstm"
    )


@register_model(
    "gru",
    label="GRU (64 units)",
    family="GRU",
    variable_length=True,
    tokenizer="numeric",
    findings_family=LSTM_GRU,
    short_name="GRU 64",
)
def gru(tokenizer, units: int = 64, unroll: bool = True, mask_padding: bool = False) -> keras.Model:
    """Keras GRU with the reset gate before the product (seed 000 eq. (7)-(10)), last state to one neuron."""
    _check_positive(units=units)
    return _last_state_to_value(
        tokenizer,
        mask_padding,
        lambda: keras.layers.GRU(units, reset_after=False, unroll=unroll, name="gru"),
        name="gru",
    )


@register_model(
    "bilstm_attention",
    label="BiLSTM + attention (2 x 19 units)",
    family="BiLSTM + attention",
    tokenizer="numeric",
    reference_row="BiLSTM + attention",
    findings_family="BiLSTM with attention",
    short_name="BiLSTM + attention (prior report's)",
)
def bilstm_attention(tokenizer, units: int = 19, attention_units: int = 82, mask_padding: bool = False) -> keras.Model:
    """Bidirectional LSTM pooled by additive attention (seed 000, 2.3), context to one neuron: 6,511 parameters."""
    _check_positive(units=units, attention_units=attention_units)
    inputs, x = numeric_sequence(tokenizer, mask_padding)
    x = BidirectionalLSTMAttention(units, attention_units=attention_units, name="bilstm_attention")(x)
    outputs = keras.layers.Dense(1, name="value")(x)
    return keras.Model(inputs, outputs, name="bilstm_attention")


def attention_weights(model: keras.Model, inputs) -> np.ndarray:
    """The attention weights ``alpha_t`` of a model's ``BidirectionalLSTMAttention``, (batch, time),
    read as :func:`predcalc.models.attention.attention_scores` reads them (the layers after it are not run).
    """
    for _, scores in attention_scores(model, inputs, (BidirectionalLSTMAttention,)):
        return scores
    raise ValueError(f"model {model.name!r} has no BidirectionalLSTMAttention layer")


def signed_contributions(expressions) -> np.ndarray:
    """Each number of flat ``+``/``-`` expressions with the sign it enters the sum with, (n, terms).

    ``"3 - -2 + 4"`` -> ``[3, 2, 4]`` (the value is the row's sum). Every expression must have the
    same number of terms and no brackets, ``*`` or ``/``.
    """

    rows = []
    for text in expressions:
        items = signed_terms(text)
        numbers, operators = items[0::2], items[1::2]
        if any(op not in ("+", "-") for op in operators) or any(not n.lstrip("-").isdigit() for n in numbers):
            raise ValueError(f"only flat + and - expressions have signed terms. Received: {text!r}")
        signs = [1.0] + [1.0 if op == "+" else -1.0 for op in operators]
        rows.append([sign * float(n) for sign, n in zip(signs, numbers)])
    if len({len(row) for row in rows}) > 1:
        raise ValueError("every expression must have the same number of terms")
    return np.asarray(rows, dtype=np.float64)


def term_weights(expressions, predictions) -> tuple[np.ndarray, float]:
    """Least-squares weights of predictions on the signed terms: ``pred ~ sum_i w_i term_i + b``.

    The exact rule is ``w = 1`` for every position and ``b = 0``; a model that forgets the start of
    the sequence (the prior report's "later tokens play a more impactful role") has ``w_1 < w_last``.

    Returns:
        ``(weights (terms,), intercept)``.
    """
    terms = signed_contributions(expressions)
    design = np.hstack([terms, np.ones((len(terms), 1))])
    solution, *_ = np.linalg.lstsq(design, np.asarray(predictions, dtype=np.float64).reshape(-1), rcond=None)
    return solution[:-1], float(solution[-1])
