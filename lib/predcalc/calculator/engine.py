"""The calculator's generic loop: learned steps, driven over digit arrays, batched over expressions.

Code here only moves things: it lexes, builds each token's window of kinds, aligns digits by
significance (pads, shifts, cuts columns), loops, selects between operands on a learned flag, and
splices results into the token list. Every decision about values is the output of a learned step
(see :mod:`predcalc.calculator.steps`): which token is ready (``control``); each digit, carry and
borrow (``addsub``, ``muldigit``); comparisons (``compare``); signs (``sign``, ``xor``); each
quotient digit (``qdigit``, over the nine comparisons of long division); and whether a digit is
significant, so a number's length and whether it is zero (``lead``). A carry chain runs over one
column more than its operands and writes its last carry as a digit; where the result ends is
``lead``'s flags. Long division brings down one digit of the dividend at a time; how many quotient
digits there are follows from the two operands' lengths, counted from ``lead``'s flags. Euclid's
loop stops where ``lead`` finds the remainder zero. Numbers are rationals: ``a / b`` is kept as a
numerator and a denominator, reduced by Euclid's algorithm run on learned steps.

What code still computes from numbers, none of it a value: array widths (the columns a sum or a
product can need, and the refusal of operations too large, :func:`_cost`), per-row offsets from the
learned lengths (long division's first remainder), and indices chosen by learned outputs (the
multiple ``y x q`` for the learned digit ``q``). The lexer drops a literal's leading zeros; each
answer is cut to its significant digits and zero loses its sign by ``lead``'s outputs
(:meth:`Engine.normalise`), so the printer only writes the digits out.

``steps`` maps a step name to a function ``int array [n, inputs] -> int array [n, outputs]``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from predcalc.calculator.steps import STEPS, TableStep
from predcalc.calculator.tokens import KINDS, NUM, CalculatorError, Number, kind, lex, windows_of_many

# compare's states
EQUAL, LESS, GREATER = 0, 1, 2
ADD, SUB = 0, 1

StepFunction = Callable[[np.ndarray], np.ndarray]
#: Chains over fewer rows x extra states than this run as one call on every state at every position
#: (a prefix scan); larger ones as one call per position (each forward pass has a fixed cost).
SCAN_BELOW = 64
#: The most partial-product digits :meth:`Engine.multiply` holds at once (memory stays linear in it).
BLOCK_DIGITS = 2_000_000
#: Refused: an operation whose operands' digit counts multiply to more than this (its schoolbook cost).
MAX_DIGIT_PRODUCT = 10**8


def _pad(arrays, width=None) -> np.ndarray:
    """Digit arrays as the rows of one array, zero-filled to the longest (one scatter, no row loop)."""
    lengths = np.fromiter(map(len, arrays), np.int64, len(arrays))
    width = max(width or 1, int(lengths.max(initial=1)))
    out = np.zeros((len(arrays), width), np.int64)
    if len(arrays):
        starts = np.cumsum(lengths) - lengths
        rows = np.repeat(np.arange(len(arrays)), lengths)
        out[rows, np.arange(len(rows)) - np.repeat(starts, lengths)] = np.concatenate(arrays)
    return out


def _shift(digits: np.ndarray, places: int, width: int) -> np.ndarray:
    """Digits moved ``places`` up in significance, in ``width`` columns (alignment)."""
    out = np.zeros((len(digits), width), np.int64)
    keep = min(digits.shape[1], width - places)
    out[:, places : places + keep] = digits[:, :keep]
    return out


class Engine:
    """Evaluate expressions with learned steps.

    Args:
        steps: step name -> step function.
        pick: optional controller ablation: ``list of kind arrays -> list of token indices`` that
            reduces one token per expression and round, instead of every token the ``control``
            step marks ready.
        record: optional dict; when given, every step's inputs are appended to ``record[name]``
            and every round's token kinds to ``record["sequences"]`` (to make training data).
    """

    def __init__(self, steps: dict[str, StepFunction], pick=None, record: dict | None = None):
        self.steps = steps
        self.pick = pick
        self.record = record

    # ------------------------------------------------------------------ steps
    def call(self, name: str, *columns, record: bool = True) -> list[np.ndarray]:
        n = max(np.size(c) for c in columns)
        inputs = np.stack([np.broadcast_to(np.asarray(c, np.int64), (n,)) for c in columns], axis=1)
        if record and self.record is not None:
            self.record.setdefault(name, []).append(inputs)
        outputs = np.asarray(self.steps[name](inputs))
        return [outputs[:, i] for i in range(outputs.shape[1])]

    def chain(self, name: str, columns: list, n_states: int, initial, reverse: bool = False, keep: bool | int = True):
        """Run a step along digit positions, its state output (the last) fed back as its first input.

        Evaluated in parallel: the step runs once for every possible incoming state at every
        position, and the state entering each position is found by composing the per-position
        state maps (a prefix scan of selections). This is the same chain as a loop over positions.

        Args:
            columns: the step's other inputs, each ``[n, L]`` (or broadcastable).
            n_states: how many values the state takes.
            initial: the state entering the first position, ``[n]``.
            reverse: run from the most significant position down.
            keep: which outputs to return: all (True), output ``k`` only (an int: ``[n, L]``), or
                none (False: only the final state is needed, as in a comparison).

        Returns:
            outputs ``[n, L, m]`` (every output at each position, as ``keep`` says) and the final
            state ``[n]``.
        """
        shape = np.broadcast_shapes(*[np.shape(c) for c in columns])
        columns = [np.broadcast_to(np.asarray(c, np.int64), shape) for c in columns]
        if reverse:
            columns = [c[:, ::-1] for c in columns]
        n, length = shape
        if n == 0:
            empty = np.zeros((0, length, len(STEPS[name].outputs)), np.int64)
            return (None if keep is False else empty if keep is True else empty[..., keep]), np.zeros(0, np.int64)
        step = self.steps[name]
        if isinstance(step, TableStep) and self.record is None:  # lookups: a loop is cheaper than the scan
            rows, final = _chain_lookup(step, columns, initial)
            if keep is False:
                return None, final
            table = step.table[rows.T] if keep is True else step.table[:, keep].take(rows.T)
            return (table[:, ::-1] if reverse else table), final
        if self.record is None and n * (n_states - 1) > SCAN_BELOW:
            # forward passes: one per position over every row costs less than n_states per row at once
            outputs, final = _chain_loop(step, columns, initial, len(STEPS[name].outputs))
            if reverse:
                outputs = outputs[:, ::-1]
            return (None if keep is False else outputs if keep is True else outputs[..., keep]), final
        flat = [c.reshape(-1) for c in columns]
        states = np.tile(np.arange(n_states), n * length)  # one call: every state at every position
        spec = np.stack(self.call(name, states, *[np.repeat(c, n_states) for c in flat], record=False), axis=-1)
        spec = spec.reshape(n, length, n_states, -1)
        maps = spec[..., -1]  # [n, L, S]: the state out for each state in
        prefix = maps.reshape(n * length, n_states).copy()
        rows = np.arange(n * length).reshape(n, length)
        shift = 1
        while shift < length:  # prefix[i] <- prefix[i] after prefix[i - shift] (composition of state maps)
            later, earlier = rows[:, shift:].reshape(-1), rows[:, :-shift].reshape(-1)
            prefix[later] = prefix[later[:, None], prefix[earlier]]
            shift *= 2
        prefix = prefix.reshape(n, length, n_states)
        initial = np.broadcast_to(np.asarray(initial, np.int64), (n,))
        every = np.arange(n)[:, None]
        state_in = np.empty((n, length), np.int64)
        state_in[:, 0] = initial
        state_in[:, 1:] = prefix[every, np.arange(length - 1)[None, :], initial[:, None]]
        final = prefix[np.arange(n), length - 1, initial]
        outputs = spec[every, np.arange(length)[None, :], state_in]
        if self.record is not None:  # the inputs the sequential chain sees (training data)
            self.record.setdefault(name, []).append(np.stack([state_in.reshape(-1)] + flat, axis=1))
            self.record.setdefault(f"{name}:sequences", []).append(np.stack([state_in] + columns, axis=-1))
        if reverse:
            outputs = outputs[:, ::-1]
        if keep is False:
            return None, final
        return (outputs if keep is True else outputs[..., keep]), final

    def compare(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Magnitude comparison, most significant digit first: EQUAL, LESS (a < b) or GREATER."""
        width = max(a.shape[1], b.shape[1])
        _, state = self.chain("compare", [_shift(a, 0, width), _shift(b, 0, width)], 3, EQUAL, reverse=True, keep=False)
        return state

    def significant(self, a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The learned ``lead`` step run from the most significant digit down: per position whether it
        or a digit above it is non-zero (``[n, L]``, the digit is significant), and per row whether
        any digit is (the final state: the number is not zero)."""
        return self.chain("lead", [a], 2, 0, reverse=True, keep=0)

    def cut(self, digits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Digits cut above the highest column the learned ``lead`` flags mark in any row (keeping one
        column), and each row's significant length (how many positions the flags mark): moving along
        the array as the step's output directs, the only length decisions."""
        flags, _ = self.significant(digits)
        marked = flags.any(axis=0)  # over the rows: the columns some row needs (alignment of the batch)
        width = len(marked) - int(np.argmax(marked[::-1])) if marked.any() else 1
        return digits[:, :width], flags.sum(axis=1)

    def trim(self, digits: np.ndarray) -> np.ndarray:
        """Digits cut where the learned ``lead`` flags say (:meth:`cut`)."""
        return self.cut(digits)[0]

    def addsub(self, a: np.ndarray, b: np.ndarray, mode: np.ndarray) -> np.ndarray:
        """|a| + |b| (mode ADD) or |a| - |b| (mode SUB, with |a| >= |b|), least significant digit first,
        over one column more than the wider operand: the last carry is written as a digit, and the
        result's length is left to the learned ``lead`` step (:meth:`trim`)."""
        width = max(a.shape[1], b.shape[1]) + 1
        a, b = _shift(a, 0, width), _shift(b, 0, width)
        if "addsub_sequence" in self.steps:  # ablation: a sequence model instead of the chained step
            return np.asarray(self.steps["addsub_sequence"](a, b, np.asarray(mode, np.int64)), np.int64)
        mode = np.broadcast_to(np.asarray(mode, np.int64)[:, None], (len(a), width))
        digits, _ = self.chain("addsub", [mode, a, b], 2, 0, keep=0)
        return digits

    def times_digit(self, a: np.ndarray, digit: np.ndarray) -> np.ndarray:
        """|a| x d for one digit d per row: the learned digit-product step with its carry fed back."""
        width = a.shape[1] + 1
        digit = np.broadcast_to(np.asarray(digit, np.int64)[:, None], (len(a), width))
        digits, _ = self.chain("muldigit", [_shift(a, 0, width), digit], 10, 0, keep=0)
        return digits

    def multiply(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """|a| x |b|: a partial product per digit of b, aligned at its significance, summed pairwise.

        The digits of b are taken in blocks, so that the partial products in memory at once stay
        under :data:`BLOCK_DIGITS` digits; each block's sum is added to the running total."""
        n, la, lb = len(a), a.shape[1], b.shape[1]
        width = la + lb + 1
        block = max(1, BLOCK_DIGITS // max(1, n * (la + 1)))
        total = None
        for first in range(0, lb, block):
            part = self._partial_sum(a, b[:, first : first + block])
            part = _shift(part, first, width)
            # a product fits in la + lb digits: the sum's extra column is cut by width (alignment)
            total = part if total is None else _shift(self.addsub(total, part, np.full(n, ADD)), 0, width)
        return self.trim(total)

    def _partial_sum(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        n, la, lb = len(a), a.shape[1], b.shape[1]
        width = la + lb + 1
        partial = self.times_digit(np.repeat(a, lb, axis=0), b.reshape(-1)).reshape(n, lb, la + 1)
        rows = np.zeros((n, lb, width), np.int64)
        for j in range(lb):
            rows[:, j, j : j + la + 1] = partial[:, j]
        del partial
        while rows.shape[1] > 1:
            if rows.shape[1] % 2:
                rows = np.concatenate([rows, np.zeros((n, 1, width), np.int64)], axis=1)
            half = rows.shape[1] // 2
            summed = self.addsub(
                rows[:, 0::2].reshape(-1, width), rows[:, 1::2].reshape(-1, width), np.full(n * half, ADD)
            )
            rows = _shift(summed, 0, width).reshape(n, half, width)
        return rows[:, 0]

    def is_zero(self, a: np.ndarray) -> np.ndarray:
        """The learned zero test: the ``lead`` chain's final state (no non-zero digit seen)."""
        _, seen = self.chain("lead", [a], 2, 0, reverse=True, keep=False)
        return seen == 0

    def is_one(self, a: np.ndarray) -> np.ndarray:
        return self.compare(a, np.ones((len(a), 1), np.int64)) == EQUAL

    def divmod(self, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Schoolbook long division of magnitudes (y > 0), bringing down one digit of x at a time.

        The remainder starts as the top ``len(y) - 1`` significant digits of x (below y), the lengths
        counted from the learned ``lead`` flags. Then, from the most significant remaining digit of x
        down: the remainder moves up one place and takes the next digit (alignment); the learned
        comparison sets it against y x k for k = 1..9 (the multiples from the learned ``muldigit``
        chain); the learned ``qdigit`` chain over k turns those nine comparisons into the quotient
        digit q; the learned subtraction takes y x q off the remainder. The quotient's length is
        then the learned ``lead`` step's: both come back with the columns alignment gives them (the
        quotient x's, the remainder y's and one more), for the caller to cut (:meth:`trim`)."""
        x, x_length = self.cut(x)  # the operands' columns and lengths, as the learned flags say
        y, y_length = self.cut(y)
        n, wx, wy = len(x), x.shape[1], y.shape[1]
        width = wy + 1  # the remainder stays below 10 y: y's columns and one more
        product = self.times_digit(np.tile(y, (9, 1)), np.repeat(np.arange(1, 10), n))
        multiples = np.zeros((10, n, width), np.int64)  # y x k for k = 0..9
        multiples[1:] = _shift(product, 0, width).reshape(9, n, width)
        # the first quotient position per row, from the learned lengths (negative: x < y, no digit)
        top = x_length - y_length
        start = np.maximum(top + 1, 0)  # the digits of x above it start the remainder (alignment)
        columns = start[:, None] + np.arange(width)[None, :]
        remainder = np.where(columns < wx, np.take_along_axis(x, np.minimum(columns, wx - 1), axis=1), 0)
        quotient = np.zeros((n, wx), np.int64)
        ks = np.broadcast_to(np.arange(1, 10)[None, :], (n, 9))
        for position in range(int(top.max(initial=-1)), -1, -1):
            active = np.flatnonzero(top >= position)  # rows whose quotient reaches this position
            rows = len(active)
            brought = np.concatenate([x[active, position, None], remainder[active, : width - 1]], axis=1)
            state = self.compare(np.tile(brought, (9, 1)), multiples[1:, active].reshape(-1, width))
            _, digit = self.chain("qdigit", [ks[:rows], state.reshape(9, rows).T], 10, 0, keep=False)
            # y x q is at most the remainder: the difference fits the remainder's columns (alignment)
            difference = self.addsub(brought, multiples[digit, active], np.full(rows, SUB))
            remainder[active] = difference[:, :width]
            quotient[active, position] = digit
        return quotient, remainder

    def gcd(self, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Euclid's algorithm: (a, b) <- (b, a mod b) until the learned test says b is zero.

        Returns the gcd and, per row, whether the loop gave up: correct steps need at most five
        rounds per decimal digit (Lamé's bound); steps that never reach a zero remainder (an
        ablation's adder) would otherwise loop for ever.
        """
        width = max(a.shape[1], b.shape[1])
        a, b = _shift(a, 0, width), _shift(b, 0, width)
        active = np.flatnonzero(~self.is_zero(b))
        for _ in range(5 * width + 1):
            if not active.size:
                break
            _, remainder = self.divmod(a[active], b[active])  # cut to the rows left: narrower
            a[active], b[active] = b[active], _shift(remainder, 0, width)
            active = active[~self.is_zero(b[active])]
        stuck = np.zeros(len(a), bool)
        stuck[active] = True
        return self.trim(a), stuck

    def signed_add(self, sign_a, a, sign_b, b, op) -> tuple[np.ndarray, np.ndarray]:
        """(-1)^sa |a| (+ or -) (-1)^sb |b|: the learned sign step picks add or subtract and the order."""
        state = self.compare(a, b)
        mode, swap, sign = self.call("sign", op, sign_a, sign_b, state)
        width = max(a.shape[1], b.shape[1])
        a, b = _shift(a, 0, width), _shift(b, 0, width)
        swap = swap.astype(bool)[:, None]
        return sign, self.trim(self.addsub(np.where(swap, b, a), np.where(swap, a, b), mode))

    # ------------------------------------------------------------------ rationals
    # Operands are in lowest terms, so results are kept there the way Knuth (TAOCP 4.5.1) and
    # Python's ``fractions`` do: gcds of the small parts (denominators, a numerator and the other
    # denominator) instead of one Euclid on the large product, and none where a part is 1.
    def common(self, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """gcd(|a|, |b|) per row and whether Euclid gave up; 1 without Euclid where the learned test
        finds a or b equal to 1."""
        n = len(a)
        g = np.ones((n, 1), np.int64)
        stuck = np.zeros(n, bool)
        rows = np.flatnonzero(~(self.is_one(a) | self.is_one(b)))
        if rows.size:
            found, stuck[rows] = self.gcd(a[rows], b[rows])
            g = _shift(g, 0, found.shape[1])
            g[rows] = found
        return g, stuck

    def divide_out(self, x: np.ndarray, g: np.ndarray) -> np.ndarray:
        """|x| / |g| for a g that divides x (long division), x itself where g is 1."""
        rows = np.flatnonzero(~self.is_one(g))
        if not rows.size:
            return x
        quotient, _ = self.divmod(x[rows], g[rows])
        out = x.copy()
        out[rows] = _shift(quotient, 0, x.shape[1])
        return self.trim(out)

    def apply(self, op: str, lefts: list[Number], rights: list[Number]) -> list:
        """``left op right`` for a batch of rational pairs: Numbers, or CalculatorError where it fails."""
        n = len(lefts)
        s1 = np.array([x.sign for x in lefts])
        s2 = np.array([x.sign for x in rights])
        n1, d1 = _pad([x.numerator for x in lefts]), _pad([x.denominator for x in lefts])
        n2, d2 = _pad([x.numerator for x in rights]), _pad([x.denominator for x in rights])
        results: list = [None] * n
        if op in "+-":
            opcode = np.full(n, ADD if op == "+" else SUB)
            whole = self.is_one(d1) & self.is_one(d2)
            rows = np.flatnonzero(whole)
            if rows.size:
                sign, value = self.signed_add(s1[rows], n1[rows], s2[rows], n2[rows], opcode[rows])
                for k, row in enumerate(rows):
                    results[row] = Number(int(sign[k]), value[k], d1[row, :1])
            rows = np.flatnonzero(~whole)
            if rows.size:  # n1/d1 + n2/d2 = t / (d1/g x d2), t = n1 (d2/g) + n2 (d1/g), g = gcd(d1, d2)
                g, stuck = self.common(d1[rows], d2[rows])
                d1g, d2g = self.divide_out(d1[rows], g), self.divide_out(d2[rows], g)
                sign, t = self.signed_add(
                    s1[rows], self.multiply(n1[rows], d2g), s2[rows], self.multiply(n2[rows], d1g), opcode[rows]
                )
                g2, stuck2 = self.common(t, g)  # gcd(t, d1/g x d2) = gcd(t, g)
                top = self.divide_out(t, g2)
                bottom = self.multiply(d1g, self.divide_out(d2[rows], g2))
                for k, row in enumerate(rows):
                    results[row] = _number(int(sign[k]), None if stuck[k] or stuck2[k] else top[k], bottom[k])
            return results
        (sign,) = self.call("xor", s1, s2)
        if op == "*":  # (n1/g1 x n2/g2) / (d1/g2 x d2/g1), g1 = gcd(n1, d2), g2 = gcd(n2, d1)
            rows = np.arange(n)
            a, b, c, d = n1, d1, n2, d2
            g1, stuck = self.common(a, d)
            g2, stuck2 = self.common(c, b)
            top = self.multiply(self.divide_out(a, g1), self.divide_out(c, g2))
            bottom = self.multiply(self.divide_out(b, g2), self.divide_out(d, g1))
        else:  # (n1/g1 x d2/g2) / (d1/g2 x n2/g1), g1 = gcd(n1, n2), g2 = gcd(d1, d2)
            zero = self.is_zero(n2)
            for row in np.flatnonzero(zero):
                results[row] = CalculatorError("division by zero")
            rows = np.flatnonzero(~zero)
            a, b, c, d = n1[rows], d1[rows], n2[rows], d2[rows]
            g1, stuck = self.common(a, c)
            g2, stuck2 = self.common(b, d)
            top = self.multiply(self.divide_out(a, g1), self.divide_out(d, g2))
            bottom = self.multiply(self.divide_out(b, g2), self.divide_out(c, g1))
        for k, row in enumerate(rows):
            results[row] = _number(int(sign[row]), None if stuck[k] or stuck2[k] else top[k], bottom[k])
        return results

    # ------------------------------------------------------------------ control
    def _ready(self, sequences: list[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per sequence: the positions the control step marks ready and, for each, whether its
        operator is applied inverted."""
        if self.pick is not None:
            return [(np.array([index]), np.zeros(1, np.int64)) for index in self.pick(sequences)]
        flat = windows_of_many(sequences)
        ready, inverse = self.call("control", *flat.T)
        bounds = np.cumsum([0] + [len(kinds) for kinds in sequences])
        out = []
        for i in range(len(sequences)):
            positions = np.flatnonzero(ready[bounds[i] : bounds[i + 1]])
            out.append((positions, inverse[bounds[i] + positions]))
        return out

    def evaluate(self, texts) -> list:
        """The value of each expression as a Number, or the CalculatorError that stopped it.

        Each round, every expression's ready tokens (as many as do not overlap) are reduced at once,
        and its tokens and their kinds are rebuilt once: a round costs time linear in the tokens
        left, and a chain ``1 + 1 + ... + 1`` of n terms takes about log2(n) rounds."""
        states: list = []
        for text in texts:
            try:
                states.append(lex(text))
            except CalculatorError as error:
                states.append(error)
        kinds: dict[int, np.ndarray] = {}
        while True:
            active = [i for i, s in enumerate(states) if isinstance(s, list) and len(s) > 1]
            if not active:
                break
            for i in active:
                if i not in kinds:
                    kinds[i] = np.array([kind(t) for t in states[i]])
            sequences = [kinds[i] for i in active]
            if self.record is not None:
                self.record.setdefault("sequences", []).extend(sequences)
            jobs: dict[str, list] = {}
            spans: dict[int, list] = {}  # per expression: [start, stop) spans, each to become one number
            for i, (ready, inverse) in zip(active, self._ready(sequences)):
                found = _schedule(kinds[i], ready, inverse)
                if isinstance(found, CalculatorError):
                    states[i] = found
                    continue
                tokens = states[i]
                spans[i] = [[p, p + 3, tokens[p + 1]] if op is None else [p - 1, p + 2, None] for p, op in found]
                for (position, op), span in zip(found, spans[i]):
                    if op is not None:
                        jobs.setdefault(op, []).append((i, position, span))
            for op, items in jobs.items():
                lefts, rights = [states[i][p - 1] for i, p, _ in items], [states[i][p + 1] for i, p, _ in items]
                small = [k for k, (x, y) in enumerate(zip(lefts, rights)) if _cost(op, x, y) <= MAX_DIGIT_PRODUCT]
                for k in set(range(len(items))) - set(small):
                    items[k][2][2] = CalculatorError(
                        f"operands too large: {_cost(op, lefts[k], rights[k]):,} digit "
                        f"products, more than {MAX_DIGIT_PRODUCT:,}"
                    )
                results = self.apply(op, [lefts[k] for k in small], [rights[k] for k in small])
                for k, result in zip(small, results):
                    items[k][2][2] = result
            for i, spliced in spans.items():
                failed = next((r for _, _, r in spliced if isinstance(r, CalculatorError)), None)
                if failed is not None:
                    states[i] = failed
                    kinds.pop(i, None)
                    continue
                states[i], kinds[i] = _splice(states[i], kinds[i], spliced)
        return self.normalise([s if isinstance(s, CalculatorError) else s[0] for s in states])

    def normalise(self, results: list) -> list:
        """Each Number cut to its own significant digits, and the sign of zero dropped, both by the
        learned ``lead`` step (its flags give each row's length, its final state the zero test), so
        the printer only writes digits out. Errors pass through."""
        rows = [k for k, r in enumerate(results) if isinstance(r, Number)]
        if not rows:
            return results
        numerators = _pad([results[k].numerator for k in rows])
        denominators = _pad([results[k].denominator for k in rows])
        top_flags, nonzero = self.significant(numerators)
        bottom_flags, _ = self.significant(denominators)
        top_lengths = np.maximum(top_flags.sum(axis=1), 1)  # zero keeps one digit
        bottom_lengths = np.maximum(bottom_flags.sum(axis=1), 1)
        out = list(results)
        for j, k in enumerate(rows):
            sign = results[k].sign if nonzero[j] else 0  # selected on the learned zero test
            out[k] = Number(sign, numerators[j, : top_lengths[j]], denominators[j, : bottom_lengths[j]])
        return out


INVERSE = {"+": "-", "-": "+", "*": "/", "/": "*"}


def _cost(op: str, x: Number, y: Number) -> int:
    """Digit products the schoolbook algorithms need for ``x op y``, read from array lengths (a resource
    bound, no value looked at): 0 for a sum of one-digit denominators (integers among them), linear."""
    if op in "+-" and len(x.denominator) == len(y.denominator) == 1:
        return 0
    return (len(x.numerator) + len(x.denominator) - 1) * (len(y.numerator) + len(y.denominator) - 1)


_OPERATOR_KINDS = np.array([KINDS[op] for op in INVERSE])
_KIND_TEXT = {value: key for key, value in KINDS.items()}


def _schedule(kinds: np.ndarray, ready: np.ndarray, inverse: np.ndarray):
    """The reductions of one round, leftmost first and not overlapping: ``(position, op)`` with op
    the operator to apply (inverted where the control says so), or None for a ready ``( n )``.
    A CalculatorError where the control marked nothing or an illegal token.

    Only operators next to each other in a run ``x op y op z ...`` can overlap (they share an
    operand); of each such run every other one is taken, starting with the first."""
    if not len(ready):
        return CalculatorError("the controller marked nothing as ready")
    padded = np.concatenate([[0], kinds, [0, 0]])  # padded[p + 1] is kinds[p]
    centre, before, after, beyond = padded[ready + 1], padded[ready], padded[ready + 2], padded[ready + 3]
    opening = centre == KINDS["("]
    operator = np.isin(centre, _OPERATOR_KINDS)
    legal = np.where(opening, (after == NUM) & (beyond == KINDS[")"]), operator & (before == NUM) & (after == NUM))
    if not legal.all():
        return CalculatorError(f"the controller picked an illegal reduction at token {ready[~legal][0]}")
    follows = np.zeros(len(ready), bool)  # an operator two places after a ready operator: the same run
    follows[1:] = operator[1:] & operator[:-1] & (np.diff(ready) == 2)
    run_start = np.maximum.accumulate(np.where(follows, 0, np.arange(len(ready))))
    taken = (np.arange(len(ready)) - run_start) % 2 == 0
    out = []
    for position, kind_, inverted in zip(ready[taken].tolist(), centre[taken].tolist(), inverse[taken].tolist()):
        op = _KIND_TEXT[kind_]
        out.append((position, None if op == "(" else INVERSE[op] if inverted else op))
    return out


def _splice(tokens: list, kinds: np.ndarray, spans: list) -> tuple[list, np.ndarray]:
    """Tokens and kinds with each ``[start, stop)`` span (in order, not overlapping) replaced by its number."""
    out, kept = [], np.ones(len(tokens), bool)
    previous = 0
    for start, stop, number in spans:
        out.extend(tokens[previous:start])
        out.append(number)
        kept[start + 1 : stop] = False
        previous = stop
    out.extend(tokens[previous:])
    kinds = kinds.copy()
    kinds[[start for start, _, _ in spans]] = NUM
    return out, kinds[kept]


def _number(sign: int, numerator, denominator):
    """A Number, or the error of a fraction whose reduction gave up (see :meth:`Engine.gcd`)."""
    if numerator is None:
        return CalculatorError("the learned steps did not reduce the fraction (Euclid ran past Lamé's bound)")
    return Number(sign, numerator, denominator)


def _chain_lookup(step: TableStep, columns: list, initial) -> tuple[np.ndarray, np.ndarray]:
    """The chain of a tabulated step as a loop over positions, one lookup of the next state per position.

    Returns the table row read at each position ``[n, L]`` (``step.table[rows]`` are the outputs)
    and the final state. The same chain as :meth:`Engine.chain`'s prefix scan (a test checks it);
    with a table in hand a lookup per position costs less than composing the state maps.
    """
    n, length = columns[0].shape
    code = np.zeros((length, n), np.int64)  # the mixed-radix code of the inputs other than the state
    for column, radix in zip(columns, step.step.inputs[1:]):
        code = code * radix + np.asarray(column).T
    stride = int(np.prod(step.step.inputs[1:]))
    next_state = step.table[:, -1] * stride  # states kept times the stride: a row is state + code
    state = np.broadcast_to(np.asarray(initial, np.int64), (n,)) * stride
    rows = np.empty((length, n), np.int64)  # the table row read at each position
    for position in range(length):
        np.add(state, code[position], out=rows[position])
        state = next_state.take(rows[position])
    return rows, state // stride


def _chain_loop(step: StepFunction, columns: list, initial, n_outputs: int) -> tuple[np.ndarray, np.ndarray]:
    """The chain as a loop over positions: one call of the step per position on every row, its
    state output fed back. Returns every output at each position ``[n, L, m]`` and the final state."""
    n, length = columns[0].shape
    state = np.broadcast_to(np.asarray(initial, np.int64), (n,))
    outputs = np.empty((n, length, n_outputs), np.int64)
    for position in range(length):
        outputs[:, position] = step(np.stack([state] + [c[:, position] for c in columns], axis=1))
        state = outputs[:, position, -1]
    return outputs, state


def answer_text(result) -> str:
    """``"-12"``, ``"7/3"`` or ``"error: ..."``."""
    return f"error: {result}" if isinstance(result, CalculatorError) else result.text()


__all__ = ["Engine", "answer_text", "KINDS"]
