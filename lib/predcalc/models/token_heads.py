"""Token-output heads: the answer written as a fixed number of character slots.

A regression head emits one number; a token head emits the answer's characters, one slot
each, the way a language model writes it (published work on learning arithmetic: output format matters, and
reversed digits help small transformers).

Answer format (:class:`AnswerFormat`)
--------------------------------------
Vocabulary (14 ids): ``<pad>`` 0, ``<end>`` 1, ``+`` 2, ``-`` 3, ``0``..``9`` 4..13.
``digits + 2`` slots: a sign (``+`` for zero and positive values, ``-`` for negative), the
decimal digits of ``|value|`` without leading zeros, ``<end>``, then ``<pad>`` to fill::

    value   plain (digits=3)          reversed
      17    + 1 7 <end> <pad>         + 7 1 <end> <pad>
      -4    - 4 <end> <pad> <pad>     - 4 <end> <pad> <pad>
       0    + 0 <end> <pad> <pad>     + 0 <end> <pad> <pad>

"Reversed" writes the least significant digit first (Lee et al. 2023). The slots are
predicted in parallel, each decoded greedily by argmax; so reversal does not change the
order of generation here but the alignment: reversed, slot 1 always holds the units digit
and slot 2 the tens; plain, the units digit moves with the length of the number.

Decoding: the characters before the first ``<end>`` (all slots if there is none) must be a
sign followed by 1 to ``digits`` decimal digits, else the answer is unparseable and decodes
to NaN; slots after ``<end>`` are ignored; leading zeros are accepted (``+07`` is 7).
:mod:`predcalc.training.metrics` counts an unparseable answer as wrong and as the answer 0 in MAE/MRE.

:func:`token_head` puts the head on any sequence encoder (transformer, LSTM, ...): a
:class:`predcalc.layers.DigitReadout` (learned slot queries attending over the sequence)
and a ``Dense`` giving each slot's logits.

:class:`AnswerFormat` itself lives in :mod:`predcalc.data.answers` (NumPy only, so the deploy
runtimes decode without Keras) and is re-exported here.
"""

from __future__ import annotations

import keras

from predcalc.data.answers import END, PAD, PLAIN, REVERSED, VOCABULARY, AnswerFormat  # noqa: F401
from predcalc.layers.digit_readout import DigitReadout
from predcalc.models.registry import register_model


def token_loss():
    """Sparse categorical cross-entropy on every slot's logits (pad slots included)."""
    return keras.losses.SparseCategoricalCrossentropy(from_logits=True)


def token_head(sequence, answer_format: AnswerFormat, num_heads: int = 4, ffn_units: int = 128, dropout: float = 0.0):
    """Slot logits, shape (batch, slots, vocabulary), read from an encoded sequence (batch, time, d).

    Works on the output of any sequence encoder; a Keras mask on ``sequence`` (from
    ``Masking`` or ``Embedding(mask_zero=True)``) keeps padded steps out of the readout.
    """
    slots = DigitReadout(
        slots=answer_format.slots, num_heads=num_heads, ffn_units=ffn_units, dropout=dropout, name="digit_readout"
    )(sequence)
    return keras.layers.Dense(answer_format.vocabulary_size, name="answer_logits")(slots)


def numeric_sequence(tokenizer, mask_padding: bool):
    """The prior report's numeric tokens as a sequence of scalars, (batch, length, 1), optionally masked.

    Returns ``(inputs, sequence)``; with ``mask_padding`` a ``Masking`` layer marks the pad value.
    """
    inputs = keras.Input((tokenizer.length,), name="tokens")
    x = keras.layers.Reshape((tokenizer.length, 1), name="token_values")(inputs)
    if mask_padding:
        x = keras.layers.Masking(mask_value=tokenizer.pad, name="padding_mask")(x)
    return inputs, x


@register_model(
    "lstm_tokens_reversed",
    label="LSTM 64 + digit readout (reversed digits)",
    family="RNN",
    variable_length=True,
    tokenizer="numeric",
    answer_format=REVERSED,
    loss=token_loss(),
)
def lstm_tokens_reversed(
    tokenizer, units: int = 64, readout_heads: int = 4, readout_ffn_units: int = 128, mask_padding: bool = True
) -> keras.Model:
    """An LSTM over the prior report's numeric tokens, read out as sign and reversed digits."""
    inputs, x = numeric_sequence(tokenizer, mask_padding)
    x = keras.layers.LSTM(units, return_sequences=True, name="lstm")(x)
    logits = token_head(x, REVERSED, num_heads=readout_heads, ffn_units=readout_ffn_units)
    return keras.Model(inputs, logits, name="lstm_tokens_reversed")
