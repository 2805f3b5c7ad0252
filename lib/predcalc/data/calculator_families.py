"""The calculator's training world and its test families, each a fixed draw from a seed.

The training world: integers of at most 5 digits, 1 to 4 operators from ``+ - * /``, parenthesis
depth at most 2, unary minus on literals, spaces optional. Every test family except ``iid`` and
``div_iid`` goes beyond it on at least one axis (digits, operators, depth, digit patterns, the
seed protocol's sets). Answers are exact: an integer or a fraction ``p/q`` in lowest terms,
written as text (no float anywhere).
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import numpy as np

from predcalc.data.expressions import ExpressionError, evaluate, tokenize
from predcalc.data.protocol import LONG_RANGE, SEED_OPERATORS, seed_protocol

MAX_RESULT_DIGITS = 100


@dataclasses.dataclass(frozen=True)
class World:
    """Where expressions are drawn from: digits per number, operators, parenthesis depth."""

    digits: tuple[int, int] = (1, 5)
    operators: tuple[int, int] = (1, 4)
    depth: tuple[int, int] = (0, 2)
    ops: str = "+-*/"
    unary: float = 0.2  # chance that a literal is negative
    spaces: float = 0.5  # chance that an expression is written with spaces
    integer_results: bool = False  # keep only expressions with a '/' and an integer value
    bias_high_digits: float = 0.0  # chance that a number's digits come from 7-9 (coverage of carries)
    repeat: float = 0.0  # chance that a number repeats the digits of the one before (equal magnitudes)


TRAINING_WORLD = World()
INTEGER_WORLD = dataclasses.replace(TRAINING_WORLD, ops="+-*")


def answer(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"


def _number(rng, world: World, memory: list) -> str:
    if memory and rng.random() < world.repeat:
        text = memory[-1]
    else:
        size = int(rng.integers(world.digits[0], world.digits[1] + 1))
        pool = "789" if rng.random() < world.bias_high_digits else "0123456789"
        text = "".join(rng.choice(list(pool), size=size))
        if size > 1 and text[0] == "0":
            text = str(rng.integers(1, 10)) + text[1:]
    memory.append(text)
    return ("-" if rng.random() < world.unary else "") + text


def _flat(rng, world: World, operands: list[list[str]]) -> list[str]:
    tokens = list(operands[0])
    for operand in operands[1:]:
        tokens += [str(rng.choice(list(world.ops)))] + operand
    return tokens


def _expression(rng, world: World, n_ops: int, depth: int, memory: list) -> list[str]:
    """Tokens with exactly ``n_ops`` operators and parenthesis depth exactly ``depth``."""
    if depth == 0:
        return _flat(rng, world, [[_number(rng, world, memory)] for _ in range(n_ops + 1)])
    inside = int(rng.integers(0, n_ops + 1))
    group = ["("] + _expression(rng, world, inside, depth - 1, memory) + [")"]
    rest = n_ops - inside
    here = int(rng.integers(1, rest + 1)) if rest else 0
    shares = rng.multinomial(rest - here, [1 / here] * here) if here else []
    operands = []
    for share in shares:  # the operators not used at this level go into sibling groups
        if share:
            operands.append(["("] + _expression(rng, world, int(share), int(rng.integers(0, depth)), memory) + [")"])
        else:
            operands.append([_number(rng, world, memory)])
    operands.insert(int(rng.integers(0, here + 1)), group)
    return _flat(rng, world, operands)


def _write(rng, world: World, tokens: list[str]) -> str:
    if rng.random() < world.spaces:
        return " ".join(tokens)
    return "".join(tokens)


def draw(world: World, n: int, seed: int) -> list[tuple[str, str]]:
    """``n`` distinct (expression, exact answer) pairs from ``world``; results have at most 100 digits."""
    rng = np.random.default_rng(seed)
    pairs, seen = [], set()
    while len(pairs) < n:
        n_ops = int(rng.integers(world.operators[0], world.operators[1] + 1))
        depth = int(rng.integers(world.depth[0], world.depth[1] + 1))
        text = _write(rng, world, _expression(rng, world, n_ops, depth, []))
        try:
            value = evaluate(text)
        except ExpressionError:  # division by zero
            continue
        if text in seen or max(len(str(abs(value.numerator))), len(str(value.denominator))) > MAX_RESULT_DIGITS:
            continue
        if world.integer_results and (value.denominator != 1 or "/" not in text):
            continue
        seen.add(text)
        pairs.append((text, answer(value)))
    return pairs


def _structured(n: int, seed: int) -> list[tuple[str, str]]:
    """Carry and borrow chains, runs of zeros, repeated digits and zero products (6-30 digits)."""
    rng = np.random.default_rng(seed)
    pairs = []
    while len(pairs) < n:
        size = int(rng.integers(6, 31))
        kind = len(pairs) % 5
        if kind == 0:  # 999...9 + 1 and friends: a carry through every digit
            text = f"{'9' * size} + {rng.integers(1, 10)}"
        elif kind == 1:  # 10^n - 1: a borrow through every digit
            text = f"1{'0' * size} - {rng.integers(1, 10)}"
        elif kind == 2:  # runs of zeros
            text = f"{rng.integers(1, 10)}{'0' * (size - 2)}{rng.integers(1, 10)} * {rng.integers(1, 10)}{'0' * (size // 2)}{rng.integers(1, 10)}"
        elif kind == 3:  # repeated digits
            digit = str(rng.integers(1, 10))
            text = f"{digit * size} * {digit * (size // 2)} - {digit * size}"
        else:  # a zero product, never "-0"
            text = f"-{rng.integers(1, 10)} * 0 * -{'9' * size}"
        pairs.append((text, answer(evaluate(text))))
    return pairs


def _seed_sets(n: int, seed: int) -> dict[str, list[tuple[str, str]]]:
    protocol = seed_protocol(0)
    rng = np.random.default_rng(seed)
    long = []
    for _ in range(n):
        length = int(rng.integers(2, 15))
        numbers = rng.choice(LONG_RANGE, size=length)
        ops = rng.choice(SEED_OPERATORS, size=length - 1)
        long.append(" ".join([str(numbers[0])] + [f"{o} {x}" for o, x in zip(ops, numbers[1:])]))
    sets = {
        "seed_in": list(protocol.test_in.expressions),
        "seed_out": list(protocol.test_out.expressions),
        "seed_long": list(protocol.test_long.expressions),
        "seed_long_2_14": long,
    }
    return {name: [(e, answer(evaluate(e))) for e in expressions] for name, expressions in sets.items()}


def _worlds() -> dict[str, World]:
    base = INTEGER_WORLD
    r = dataclasses.replace
    return {
        "iid": base,
        "digits_6_10": r(base, digits=(6, 10)),
        "digits_11_20": r(base, digits=(11, 20)),
        "digits_21_50": r(base, digits=(21, 50)),
        "ops_5_10": r(base, operators=(5, 10)),
        "ops_11_20": r(base, operators=(11, 20)),
        "ops_21_40": r(base, operators=(21, 40)),
        "depth_3_4": r(base, depth=(3, 4)),
        "depth_5_6": r(base, depth=(5, 6)),
        "depth_7_10": r(base, depth=(7, 10)),
        "all_axes": r(base, digits=(6, 20), operators=(5, 40), depth=(3, 10)),
        "div_iid": TRAINING_WORLD,
        "div_integer": r(TRAINING_WORLD, integer_results=True),
        "div_far": r(TRAINING_WORLD, digits=(6, 10), operators=(5, 8), depth=(3, 4)),
    }


#: The seed protocol's own test sets (in range, out of range, long: 2-8 numbers), whole, and long
#: expressions of 2-14 numbers; the other families are draws of ``n`` expressions.
SEED_SETS = ("seed_in", "seed_out", "seed_long", "seed_long_2_14")
FAMILIES = tuple(_worlds()) + ("structured",) + SEED_SETS


def families(
    n: int = 500, seed: int = 1000, names=None, whole_seed_sets: bool = True
) -> dict[str, list[tuple[str, str]]]:
    """Each test family as (expression, exact answer) pairs, fixed by ``seed``.

    The seed protocol's sets are whole unless ``whole_seed_sets`` is False (then a seeded sample of ``n``).
    """
    names = tuple(names or FAMILIES)
    unknown = set(names) - set(FAMILIES)
    if unknown:
        raise ValueError(f"unknown families {sorted(unknown)}; known: {', '.join(FAMILIES)}")
    worlds = _worlds()
    out = {}
    for index, name in enumerate(FAMILIES):
        if name not in names:
            continue
        if name in worlds:
            out[name] = draw(worlds[name], n, seed + index)
        elif name == "structured":
            out[name] = _structured(n, seed + index)
    if set(names) & set(SEED_SETS):
        rng = np.random.default_rng(seed)
        for name, pairs in _seed_sets(n, seed).items():
            if name in names:
                keep = sorted(rng.permutation(len(pairs))[:n]) if not whole_seed_sets else range(len(pairs))
                out[name] = [pairs[i] for i in keep]
    return {name: out[name] for name in names}


def axes(text: str) -> dict[str, int]:
    """Digits of the longest number, number of operators and parenthesis depth of an expression."""
    tokens = tokenize(text)
    numbers = [t.text for t in tokens if t.kind == "int"]
    depth = deepest = 0
    for token in tokens:
        depth += (token.kind == "(") - (token.kind == ")")
        deepest = max(deepest, depth)
    return {"digits": max(len(n) for n in numbers), "operators": len(numbers) - 1, "depth": deepest}
