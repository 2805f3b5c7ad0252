"""The answer format of token-output models, in plain NumPy (no Keras).

A token-output model writes its answer as ``digits + 2`` character slots: a sign, the decimal
digits, ``<end>``, then ``<pad>``; see :mod:`predcalc.models.token_heads` for the heads that
write them. This module holds only the format and its greedy decoding, so the deploy runtimes
(``predcalc predict`` / ``evaluate`` on a Jetson) decode an exported model's logits with NumPy.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np

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
