"""The learned steps of the calculator: what each reads, what it writes, and where targets come from.

Every step maps a few small integers (digits, a carry, a state) to a few small integers. Its
inputs are finite, so a learned step can be checked on every input that can occur. The
``reference`` functions make training targets (training only); at inference the calculator
calls a trained network instead. :data:`TARGETS` says what each step reads and is trained to write.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable

import numpy as np

from predcalc.calculator.reference import reachable_windows, window_labels
from predcalc.calculator.tokens import N_KINDS


@dataclasses.dataclass(frozen=True)
class Step:
    name: str
    inputs: tuple[int, ...]  # the range of each input
    outputs: tuple[int, ...]  # the number of classes of each output
    reference: Callable[[np.ndarray], np.ndarray]  # [n, len(inputs)] -> [n, len(outputs)]
    reachable: Callable[[], np.ndarray]  # every input that can occur, [n, len(inputs)]

    def domain(self) -> np.ndarray:
        """Every combination of input values (the table a trained step is tabulated on)."""
        return np.array(list(itertools.product(*[range(r) for r in self.inputs])), np.int64)

    def index(self, inputs: np.ndarray) -> np.ndarray:
        """Mixed-radix row of each input combination in :meth:`domain`."""
        code = np.zeros(len(inputs), np.int64)
        for column, radix in enumerate(self.inputs):
            code = code * radix + inputs[:, column]
        return code


# A state fed back by the loop is each step's first input and last output.
def _compare(x):
    state, a, b = x.T
    return np.where(state == 0, np.where(a == b, 0, np.where(a < b, 1, 2)), state)[:, None]


def _addsub(x):
    carry, mode, a, b = x.T
    total = np.where(mode == 0, a + b + carry, a - b - carry)
    return np.stack([total % 10, np.where(mode == 0, total >= 10, total < 0)], axis=1).astype(np.int64)


def _sign(x):
    op, sign_a, sign_b, compare = x.T
    sign_b = sign_b ^ op  # a - b = a + (-b)
    same = sign_a == sign_b
    swap = (~same) & (compare == 1)
    sign = np.where(same, sign_a, np.where(compare == 0, 0, np.where(swap, sign_b, sign_a)))
    return np.stack([(~same).astype(np.int64), swap, sign], axis=1).astype(np.int64)


def _muldigit(x):
    carry, a, d = x.T
    total = a * d + carry
    return np.stack([total % 10, total // 10], axis=1)


def _xor(x):
    return (x[:, 0] ^ x[:, 1])[:, None]


def _lead(x):
    """A non-zero digit seen yet, from the most significant digit down (the flag of each position:
    this digit is significant; the final state: the number is not zero)."""
    seen, digit = x.T
    return (seen | (digit > 0)).astype(np.int64)[:, None]


def _qdigit(x):
    """The quotient digit so far: it becomes k where the multiple y x k is not above the remainder."""
    q, k, compare = x.T
    return np.where(compare != 1, k, q)[:, None]


_CONTROL_TABLE = {}


def _control(x):
    """Reference readiness (and inversion) of each window's centre (memoised over the reachable windows)."""
    if not _CONTROL_TABLE:
        windows = reachable_windows()
        _CONTROL_TABLE.update(zip(map(tuple, windows.tolist()), map(tuple, window_labels(windows).tolist())))
    # a window no valid expression shows is never asked about; it reads as not ready
    return np.array([_CONTROL_TABLE.get(row, (0, 0)) for row in map(tuple, np.asarray(x).tolist())], np.int64).reshape(
        -1, 2
    )


#: What each step reads and the reference targets it is trained to write (the findings print it).
TARGETS = {
    "control": (
        "token kinds at offsets -2..+2",
        "ready to reduce (0/1) and applied inverted (0/1): the labels of "
        "every token that can be reduced now without changing the value",
    ),
    "compare": ("state (=,<,>), digit a, digit b", "next state, most significant digit first"),
    "addsub": ("carry, mode (+/-), digit a, digit b", "digit and carry/borrow, least significant first"),
    "sign": ("op (+/-), sign a, sign b, comparison", "magnitude mode, swap, result sign (the sign rules)"),
    "muldigit": ("carry (0-9), digit a, digit d", "digit and carry of a x d + carry"),
    "xor": ("sign a, sign b", "sign of a product or quotient"),
    "lead": ("non-zero digit seen (0/1), digit", "seen after this digit: it is significant (most significant first)"),
    "qdigit": (
        "quotient digit so far q, k (1-9), comparison of the remainder with y x k",
        "k where y x k is not above the remainder, else q (run over k = 1..9: the quotient digit)",
    ),
}


def _all(step_inputs):
    return lambda: np.array(list(itertools.product(*[range(r) for r in step_inputs])), np.int64)


def _muldigit_reachable():
    # the carries that can enter a digit for each multiplier digit d, from carry 0 at the bottom
    rows = []
    for d in range(10):
        carries, frontier = {0}, {0}
        while frontier:
            frontier = {(a * d + c) // 10 for c in frontier for a in range(10)} - carries
            carries |= frontier
        rows += [(c, a, d) for c in sorted(carries) for a in range(10)]
    return np.array(rows, np.int64)


def _addsub_reachable():
    # a subtraction runs on a >= b only, so its top digit never borrows past the top: every (borrow, a, b)
    # still occurs at a lower digit, so all inputs are reachable
    return _all((2, 2, 10, 10))()


def _qdigit_reachable():
    # over k = 1..9 the remainder (below 10 y) is at least y x k' up to the true digit and below it after:
    # q enters k as k - 1 while no multiple was above the remainder (then any comparison), else the
    # digit already found (and the remainder is below y x k)
    rows = [(k - 1, k, c) for k in range(1, 10) for c in range(3)]
    rows += [(q, k, 1) for k in range(2, 10) for q in range(k - 1)]
    return np.array(sorted(rows), np.int64)


STEPS = {
    "control": Step("control", (N_KINDS,) * 5, (2, 2), _control, reachable_windows),
    "compare": Step("compare", (3, 10, 10), (3,), _compare, _all((3, 10, 10))),
    "addsub": Step("addsub", (2, 2, 10, 10), (10, 2), _addsub, _addsub_reachable),
    "sign": Step("sign", (2, 2, 2, 3), (2, 2, 2), _sign, _all((2, 2, 2, 3))),
    "muldigit": Step("muldigit", (10, 10, 10), (10, 10), _muldigit, _muldigit_reachable),
    "xor": Step("xor", (2, 2), (2,), _xor, _all((2, 2))),
    "lead": Step("lead", (2, 10), (2,), _lead, _all((2, 10))),
    "qdigit": Step("qdigit", (10, 10, 3), (10,), _qdigit, _qdigit_reachable),
}


class TableStep:
    """A step function memoised on its whole input domain (from any step function, e.g. a network).

    Identical to the function it was built from on every input; a lookup instead of a forward pass.
    """

    def __init__(self, name: str, function):
        self.step = STEPS[name]
        self.name = name
        self.table = np.asarray(function(self.step.domain()), np.int64)

    def __call__(self, inputs: np.ndarray) -> np.ndarray:
        return self.table[self.step.index(np.asarray(inputs, np.int64))]
