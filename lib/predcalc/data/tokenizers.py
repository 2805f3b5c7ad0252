"""Tokenisers that turn an expression into the array a model reads.

- :class:`NumericTokenizer`: the prior report's tokeniser for regression models: every number is a
  float, ``+`` is 1.0, ``-`` is 0.0, padded with 0.5 to a fixed length (15).
- :class:`CharTokenizer`: one integer id per character, for sequence models.

Both take an expression in any spacing (``"3- -2+4"``) and raise :class:`TokenizerError`,
a ``ValueError``, naming what they cannot encode.
"""

from __future__ import annotations

import numpy as np

from predcalc.data.expressions import ExpressionError, parsed_tokens, quoted_expression


class TokenizerError(ValueError):
    """An expression the tokeniser cannot encode."""


def signed_terms(text: str) -> list[str]:
    """The expression as numbers (unary signs folded in) and binary operators.

    Example:
        >>> signed_terms("3- -2+4")
        ['3', '-', '-2', '+', '4']
    """
    items: list[str] = []
    sign = 1
    expect_number = True
    for token in parsed_tokens(text):  # raises ExpressionError on anything malformed
        if expect_number and token.kind == "op" and token.text in "+-":
            sign = -sign if token.text == "-" else sign
        elif token.kind == "int":
            items.append(str(sign * int(token.text)))
            sign, expect_number = 1, False
        elif token.kind == "(":
            items.append("(" if sign == 1 else "-(")
            sign, expect_number = 1, True
        elif token.kind == ")":
            items.append(")")
            expect_number = False
        else:  # a binary operator
            items.append(token.text)
            expect_number = True
    return items


def canonical(text: str) -> str:
    """The expression written the prior report's way: ``"3- -2+4"`` -> ``"3 - -2 + 4"``."""
    return " ".join(signed_terms(text)).replace("( ", "(").replace(" )", ")")


class NumericTokenizer:
    """The prior report's numeric tokeniser: numbers as floats, ``+`` -> 1.0, ``-`` -> 0.0, pad 0.5.

    Args:
        length: the fixed sequence length (15 in the prior report: up to 8 numbers and 7 operators).
        plus, minus, pad: the values of ``+``, ``-`` and the padding.
    """

    name = "numeric"

    def __init__(self, length: int = 15, plus: float = 1.0, minus: float = 0.0, pad: float = 0.5):
        if length <= 0:
            raise ValueError(f"length must be positive. Received: length={length}")
        self.length = length
        self.plus, self.minus, self.pad = plus, minus, pad

    def get_config(self) -> dict:
        return {"length": self.length, "plus": self.plus, "minus": self.minus, "pad": self.pad}

    def encode(self, text: str) -> np.ndarray:
        """One expression -> a float32 vector of ``length`` values."""
        try:
            items = signed_terms(text)
        except ExpressionError as error:
            raise TokenizerError(str(error)) from None
        values = []
        for item in items:
            if item == "+":
                values.append(self.plus)
            elif item == "-":
                values.append(self.minus)
            elif item in ("*", "/", "(", "-(", ")"):
                raise TokenizerError(
                    f"the numeric tokenizer encodes only + and - between integers; "
                    f"{item!r} in {quoted_expression(text)!r} cannot be encoded"
                )
            else:
                values.append(float(item))
        if len(values) > self.length:
            raise TokenizerError(
                f"{quoted_expression(text)!r} has {len(values)} tokens; the numeric tokenizer holds at most {self.length}"
            )
        return np.array(values + [self.pad] * (self.length - len(values)), dtype=np.float32)

    def encode_batch(self, texts) -> np.ndarray:
        """Expressions -> a float32 array of shape (n, length)."""
        return np.stack([self.encode(t) for t in texts]) if len(texts) else np.zeros((0, self.length), np.float32)


class CharTokenizer:
    """One id per character of the canonical expression, 0 for padding.

    The vocabulary is ``<pad>``, ``<end>``, space, the ten digits and ``+ - * / ( ) =``;
    ``<end>`` and ``=`` are there for models that write their answer as characters.

    Args:
        length: the fixed sequence length; longer expressions raise TokenizerError.
    """

    name = "char"
    PAD, END = 0, 1
    VOCABULARY = ("<pad>", "<end>") + tuple(" 0123456789+-*/()=")

    def __init__(self, length: int = 48):
        if length <= 0:
            raise ValueError(f"length must be positive. Received: length={length}")
        self.length = length
        self.index = {ch: i for i, ch in enumerate(self.VOCABULARY) if len(ch) == 1}

    @property
    def vocabulary_size(self) -> int:
        return len(self.VOCABULARY)

    def get_config(self) -> dict:
        return {"length": self.length}

    def encode(self, text: str) -> np.ndarray:
        """One expression -> an int32 vector of ``length`` ids."""
        try:
            text = canonical(text)
        except ExpressionError as error:
            raise TokenizerError(str(error)) from None
        if len(text) > self.length:
            raise TokenizerError(
                f"{quoted_expression(text)!r} has {len(text)} characters; the char tokenizer holds at most {self.length}"
            )
        ids = [self.index[ch] for ch in text]
        return np.array(ids + [self.PAD] * (self.length - len(ids)), dtype=np.int32)

    def encode_batch(self, texts) -> np.ndarray:
        return np.stack([self.encode(t) for t in texts]) if len(texts) else np.zeros((0, self.length), np.int32)

    def decode(self, ids) -> str:
        """Ids -> text, stopping at the first ``<end>`` and dropping padding."""
        out = []
        for i in np.asarray(ids).tolist():
            if i == self.END:
                break
            if i != self.PAD:
                out.append(self.VOCABULARY[i])
        return "".join(out)


class TypedTokenizer:
    """Numbers as values with the token's type beside it: what a lexer knows, nothing more.

    Each token is a vector ``(value, is_plus, is_minus, is_number)``; padding is all zeros.
    The prior report's numeric tokens overload 1.0 and 0.0 (the operators) with the numbers 1 and 0;
    these keep the syntax apart and leave the arithmetic to the model.

    Args:
        length: the fixed number of tokens (15 holds 8 numbers and 7 operators).
    """

    name = "typed"
    FEATURES = ("value", "is_plus", "is_minus", "is_number")

    def __init__(self, length: int = 15):
        if length <= 0:
            raise ValueError(f"length must be positive. Received: length={length}")
        self.length = length

    def get_config(self) -> dict:
        return {"length": self.length}

    def encode(self, text: str) -> np.ndarray:
        """One expression -> a float32 array of shape (length, 4)."""
        try:
            items = signed_terms(text)
        except ExpressionError as error:
            raise TokenizerError(str(error)) from None
        if len(items) > self.length:
            raise TokenizerError(
                f"{quoted_expression(text)!r} has {len(items)} tokens; the typed tokenizer holds at most {self.length}"
            )
        out = np.zeros((self.length, len(self.FEATURES)), dtype=np.float32)
        for position, item in enumerate(items):
            if item == "+":
                out[position, 1] = 1.0
            elif item == "-":
                out[position, 2] = 1.0
            elif item in ("*", "/", "(", "-(", ")"):
                raise TokenizerError(
                    f"the typed tokenizer encodes only + and - between integers; "
                    f"{item!r} in {quoted_expression(text)!r} cannot be encoded"
                )
            else:
                out[position, 0], out[position, 3] = float(item), 1.0
        return out

    def encode_batch(self, texts) -> np.ndarray:
        if not len(texts):
            return np.zeros((0, self.length, len(self.FEATURES)), np.float32)
        return np.stack([self.encode(t) for t in texts])


TOKENIZERS = {
    NumericTokenizer.name: NumericTokenizer,
    CharTokenizer.name: CharTokenizer,
    TypedTokenizer.name: TypedTokenizer,
}


def get_tokenizer(name: str, **config):
    """A tokeniser by name (``"numeric"`` or ``"char"``) and its config."""
    if name not in TOKENIZERS:
        raise ValueError(f"unknown tokenizer {name!r}; choose one of {sorted(TOKENIZERS)}")
    return TOKENIZERS[name](**config)
