"""The digit models: networks that read numbers digit by digit (the digit notebook's families).

Each is registered in :data:`DIGIT_MODELS` with what the findings need to know of it: a short
name that says what it is, its family, its kind (every weight learned: ``trained``) and how it
reads an expression (a decoder :class:`~predcalc.data.digits.Format`, or ``None`` for the aligned
columns of the recurrence).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import keras

from predcalc.data import digits
from predcalc.layers.aligned_column_gru import AlignedColumnGRU
from predcalc.layers.digit_decoder import DigitDecoder
from predcalc.registry import Registry


@dataclasses.dataclass(frozen=True)
class DigitSpec:
    name: str
    label: str
    family: str
    build: Callable
    format: digits.Format | None  # None: the aligned columns
    kind: str = "trained"
    input: str = "digits"
    tables: tuple[int, int] | None = None  # learned id and level tables (None: rotary ids)

    @property
    def is_decoder(self) -> bool:
        return self.format is not None


DIGIT_MODELS: Registry = Registry("digit model")


def build_decoder(
    fmt: digits.Format, dim: int = 64, heads: int = 4, depth: int = 2, tables: tuple[int, int] | None = None
) -> keras.Model:
    """A causal decoder reading ``fmt``'s tokens and ids (rotary, or learned ``tables``: the id and
    level tables' sizes); outputs next-token logits."""
    names = ("tokens", "ids", "levels")
    inputs = [keras.Input((None,), dtype="int32", name=n) for n in names]
    id_table, level_table = tables or (None, None)
    decoder = DigitDecoder(
        digits.VOCAB,
        dim=dim,
        heads=heads,
        depth=depth,
        id_table=id_table,
        level_table=level_table,
        id_floor=digits.ID_FLOOR,
        name="decoder",
    )
    out = decoder(inputs)
    return keras.Model(inputs, out, name="digit_decoder")


def build_column_gru(units: int = 64) -> keras.Model:
    """The aligned recurrence over ``digits.columns``; outputs column digits and the sign."""
    columns = keras.Input((None, digits.COLUMN_FEATURES), name="columns")
    digit_logits, sign_logits = AlignedColumnGRU(units, name="recurrence")(columns)
    return keras.Model(columns, {"digits": digit_logits, "sign": sign_logits}, name="column_gru")


def register(
    name: str, label: str, family: str, fmt: digits.Format | None, tables: tuple[int, int] | None = None, **arguments
) -> DigitSpec:
    if fmt is None:
        build = lambda **kw: build_column_gru(**{**arguments, **kw})  # noqa: E731
    else:
        build = lambda **kw: build_decoder(fmt, tables=tables, **{**arguments, **kw})  # noqa: E731
    return DIGIT_MODELS.add(name, DigitSpec(name, label, family, build, fmt, tables=tables))


DECODER = "causal decoder over digits"
LEARNED_TABLES = (128, 32)
"""The learned id and level tables' sizes (design): ids to 126 (numbers of up to 124 digits) and
levels to 31 (up to 14 terms). Training draws a random offset for each expression's ids and levels, so
that every row is learned although the box writes ids to 12 and levels to 8."""
register("digits_coupled_scratch", "decoder, coupled ids, scratchpad", DECODER, digits.Format("coupled", True, True))
register(
    "digits_coupled_learned",
    "decoder, learned coupled ids, scratchpad",
    DECODER,
    digits.Format("coupled", True, True),
    tables=LEARNED_TABLES,
)
register("digits_abacus", "decoder, Abacus ids", DECODER, digits.Format("abacus", True, False))
register("digits_absolute", "decoder, absolute positions", DECODER, digits.Format("absolute", True, True))
register("digits_column_gru", "aligned column GRU", "aligned recurrence", None)
# The ablation: the coupled decoder with one choice switched off at a time (coupling off is the
# absolute baseline above).
register(
    "digits_coupled_no_scratch", "decoder, coupled ids, no scratchpad", DECODER, digits.Format("coupled", True, False)
)
register(
    "digits_coupled_forward",
    "decoder, coupled ids, numbers most significant first",
    DECODER,
    digits.Format("coupled", False, True),
)
