"""Token-output heads: the answer written as a fixed number of character slots.

A regression head emits one number; a token head emits the answer's characters, one slot
each, the way a language model writes it (ANCHORS.md section 3: output format matters, and
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
"""

from __future__ import annotations

import dataclasses
import re

import keras
import numpy as np

from predcalc.layers.digit_readout import DigitReadout
from predcalc.models.registry import register_model

VOCABULARY = ("<pad>", "<end>", "+", "-", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9")
PAD, END = 0, 1
_INDEX = {token: i for i, token in enumerate(VOCABULARY)}


@dataclasses.dataclass(frozen=True)
class AnswerFormat:
    """The answer as ``digits + 2`` character slots (see the module docstring).

    Args:
        digits: the most decimal digits an answer may have (values up to ``10**digits - 1``).
        reversed: write the digits least significant first.
    """

    digits: int = 3
    reversed: bool = False

    def __post_init__(self):
        if not isinstance(self.digits, int) or isinstance(self.digits, bool) or self.digits <= 0:
            raise ValueError(f"digits must be a positive integer. Received: digits={self.digits}")

    @property
    def slots(self) -> int:
        return self.digits + 2

    @property
    def vocabulary_size(self) -> int:
        return len(VOCABULARY)

    def get_config(self) -> dict:
        return {"digits": self.digits, "reversed": self.reversed}

    def tokens(self, value) -> list[str]:
        """One integer value -> its slot tokens, e.g. 17 -> ['+', '1', '7', '<end>', '<pad>']."""
        number = float(value)
        if not np.isfinite(number) or number != np.rint(number):
            raise ValueError(f"a token answer holds an integer; cannot encode {value!r}")
        number = int(round(number))
        text = str(abs(number))
        if len(text) > self.digits:
            raise ValueError(f"{number} has more than {self.digits} digits; use AnswerFormat(digits={len(text)})")
        digits = list(text[::-1] if self.reversed else text)
        tokens = ["-" if number < 0 else "+", *digits, "<end>"]
        return tokens + ["<pad>"] * (self.slots - len(tokens))

    def encode(self, values) -> np.ndarray:
        """Integer values -> slot ids, int32 of shape (n, slots)."""
        values = np.asarray(values, dtype=np.float64).reshape(-1)
        ids = [[_INDEX[t] for t in self.tokens(v)] for v in values]
        return np.array(ids, dtype=np.int32).reshape(len(values), self.slots)

    def encode_targets(self, values, tokenizer=None) -> np.ndarray:
        """The registry hook: training targets of a token model (the input tokeniser is not needed)."""
        return self.encode(values)

    def text(self, ids) -> str:
        """One row of slot ids as text up to the first ``<end>``, e.g. ``'+71'`` (for display)."""
        out = []
        for i in np.asarray(ids).reshape(-1).tolist():
            if i == END:
                break
            out.append(VOCABULARY[i] if 0 <= i < len(VOCABULARY) else "?")
        return "".join(out)

    def decode(self, ids) -> np.ndarray:
        """Slot ids of shape (n, slots) -> values, float64 of shape (n,); NaN where unparseable."""
        ids = np.asarray(ids)
        if ids.ndim != 2 or ids.shape[1] != self.slots:
            raise ValueError(f"expected slot ids of shape (n, {self.slots}). Received: shape={ids.shape}")
        pattern = re.compile(rf"[+-][0-9]{{1,{self.digits}}}")
        values = np.full(len(ids), np.nan)
        for row, text in enumerate(self.text(r) for r in ids):
            if pattern.fullmatch(text):
                digits = text[1:][::-1] if self.reversed else text[1:]
                values[row] = -int(digits) if text[0] == "-" else int(digits)
        return values

    def values_from_logits(self, logits) -> np.ndarray:
        """Greedy decoding: argmax per slot, then :meth:`decode`."""
        logits = np.asarray(logits)
        if logits.ndim == 2:  # a flat (n, slots * vocabulary) output, e.g. from an exported artifact
            logits = logits.reshape(len(logits), self.slots, self.vocabulary_size)
        return self.decode(np.argmax(logits, axis=-1))

    def predict_values(self, model, inputs, batch_size: int = 256) -> np.ndarray:
        """The registry hook: predicted values of a token model (NaN where unparseable)."""
        return self.values_from_logits(model.predict(inputs, batch_size=batch_size, verbose=0))


PLAIN = AnswerFormat(digits=3, reversed=False)
REVERSED = AnswerFormat(digits=3, reversed=True)


def token_loss():
    """Sparse categorical cross-entropy on every slot's logits (pad slots included)."""
    return keras.losses.SparseCategoricalCrossentropy(from_logits=True)


def token_head(sequence, answer_format: AnswerFormat, num_heads: int = 4, ffn_units: int = 128,
               dropout: float = 0.0):
    """Slot logits, shape (batch, slots, vocabulary), read from an encoded sequence (batch, time, d).

    Works on the output of any sequence encoder; a Keras mask on ``sequence`` (from
    ``Masking`` or ``Embedding(mask_zero=True)``) keeps padded steps out of the readout.
    """
    slots = DigitReadout(slots=answer_format.slots, num_heads=num_heads, ffn_units=ffn_units,
                         dropout=dropout, name="digit_readout")(sequence)
    return keras.layers.Dense(answer_format.vocabulary_size, name="answer_logits")(slots)


def numeric_sequence(tokenizer, mask_padding: bool):
    """The seed's numeric tokens as a sequence of scalars, (batch, length, 1), optionally masked.

    Returns ``(inputs, sequence)``; with ``mask_padding`` a ``Masking`` layer marks the pad value.
    """
    inputs = keras.Input((tokenizer.length,), name="tokens")
    x = keras.layers.Reshape((tokenizer.length, 1), name="token_values")(inputs)
    if mask_padding:
        x = keras.layers.Masking(mask_value=tokenizer.pad, name="padding_mask")(x)
    return inputs, x


@register_model("lstm_tokens_reversed", label="LSTM 64 + digit readout (reversed digits)", family="RNN",
                tokenizer="numeric", encode_targets=REVERSED.encode_targets,
                predict_values=REVERSED.predict_values, loss=token_loss())
def lstm_tokens_reversed(tokenizer, units: int = 64, readout_heads: int = 4, readout_ffn_units: int = 128,
                         mask_padding: bool = True) -> keras.Model:
    """An LSTM over the seed's numeric tokens, read out as sign and reversed digits."""
    inputs, x = numeric_sequence(tokenizer, mask_padding)
    x = keras.layers.LSTM(units, return_sequences=True, name="lstm")(x)
    logits = token_head(x, REVERSED, num_heads=readout_heads, ffn_units=readout_ffn_units)
    return keras.Model(inputs, logits, name="lstm_tokens_reversed")
