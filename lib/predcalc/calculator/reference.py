"""The reference the calculator learns from: readiness of tokens and the step tables.

Everything here is used to make training targets and to check the learned parts; nothing here
runs at inference. Readiness comes from the parse tree (an iterative shunting-yard parse, so any
depth works): a binary operator is *ready* when both of its children are numbers, and a ``(`` is
ready when its group holds a single number. Reducing any ready token gives the same value.
"""

from __future__ import annotations

import itertools

import numpy as np

from predcalc.calculator.tokens import KINDS, N_KINDS, NUM, PAD

PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2}
_KIND_NAMES = {value: key for key, value in KINDS.items()}


def ready_labels(kinds) -> np.ndarray:
    """1 for every token the parse tree lets us reduce now, else 0 (token kinds in, labels out)."""
    kinds = [int(k) for k in kinds]
    # children[i]: for an operator, (left, right) node ids; a node id is a token index of a number,
    # an operator, or a '(' standing for its group.
    output, operators, children, group_child = [], [], {}, {}

    def apply():
        index = operators.pop()
        right, left = output.pop(), output.pop()
        children[index] = (left, right)
        output.append(index)

    for index, kind in enumerate(kinds):
        if kind == NUM:
            output.append(index)
        elif kind == KINDS["("]:
            operators.append(index)
        elif kind == KINDS[")"]:
            while kinds[operators[-1]] != KINDS["("]:
                apply()
            opening = operators.pop()
            group_child[opening] = output.pop()
            output.append(opening)
        else:
            op = _KIND_NAMES[kind]
            while (
                operators
                and kinds[operators[-1]] != KINDS["("]
                and PRECEDENCE[_KIND_NAMES[kinds[operators[-1]]]] >= PRECEDENCE[op]
            ):
                apply()
            operators.append(index)
    while operators:
        apply()
    labels = np.zeros(len(kinds), np.int64)
    for index, (left, right) in children.items():
        labels[index] = kinds[left] == NUM and kinds[right] == NUM
    for opening, child in group_child.items():
        labels[opening] = kinds[child] == NUM
    return labels


_LEVEL = np.zeros(N_KINDS, np.int64)  # how tightly each kind binds: 0 for numbers, parentheses, padding
for _op, _level in PRECEDENCE.items():
    _LEVEL[KINDS[_op]] = _level
_INVERTS = [KINDS["-"], KINDS["/"]]  # x - (y op' z) = x - y op z, op' the inverse of op (+ <-> -, * <-> /)


def reduction_labels(kinds) -> np.ndarray:
    """``[len, 2]``: whether each token may be reduced now without changing the value, and whether
    its operator, when reduced, is applied as its inverse (``+ <-> -``, ``* <-> /``).

    Exact rationals make every grouping of a run of operators of one level equal, so more than the
    parse tree's ready nodes may be reduced at once. An operator between two numbers is ready when
    the operator after its right operand does not bind tighter and the token before its left operand
    is the start, ``(``, an operator that binds less tightly, or one of the same level: after ``+`` or
    ``*`` as written (``x + y - z = x + (y - z)``), after ``-`` or ``/`` only an inverting one, applied
    inverted (``x - y - z = x - (y + z)``, ``x / y / z = x / (y * z)``). A non-inverting operator
    after an inverting one of its level waits, at both levels: ``x / y * z = x / (y / z)`` fails for
    ``z = 0``, and ``+`` after ``-`` follows the same rule (``x - y + z`` is regrouped as ``(x - y) + z``
    instead of ``x - (y - z)``), so the rule reads the same at every precedence level and the learned
    control can learn it from either level's windows. A ``(`` is ready when it encloses a single
    number. In a chain ``1 + 1 + ... + 1`` every operator is ready, so a round halves the chain.
    """
    kinds = np.asarray(kinds, np.int64)
    padded = np.concatenate([[PAD, PAD], kinds, [PAD, PAD]])
    left, before, after, right = padded[:-4], padded[1:-3], padded[3:-1], padded[4:]
    level = _LEVEL[padded]
    level_left, level_centre, level_right = level[:-4], level[2:-2], level[4:]
    ready = (
        (level_centre > 0)
        & (before == NUM)
        & (after == NUM)
        & (level_left <= level_centre)
        & (level_right <= level_centre)
        & ~((level_left == level_centre) & np.isin(left, _INVERTS) & ~np.isin(kinds, _INVERTS))
    )
    opening = (kinds == KINDS["("]) & (after == NUM) & (right == KINDS[")"])
    inverse = (level_centre > 0) & (level_left == level_centre) & np.isin(left, _INVERTS)
    return np.stack([ready | opening, inverse], axis=1).astype(np.int64)


# ---------------------------------------------------------------- reachable controller windows
_OPERAND_END = {NUM, KINDS[")"]}


def _follows(left: int, right: int) -> bool:
    """Whether kind ``right`` may follow kind ``left`` (PAD = the start on the left, the end on the right)."""
    if left in _OPERAND_END:
        return right not in (NUM, KINDS["("])
    return right in (NUM, KINDS["("])


def reachable_windows(radius: int = 2) -> np.ndarray:
    """Every window of token kinds that can occur around a real token of a valid expression.

    A window is reachable when neighbouring kinds may follow each other, padding sits only at
    the edges, and its parentheses can be balanced by tokens outside it.
    """
    width = 2 * radius + 1
    found = []
    for window in itertools.product(range(N_KINDS), repeat=width):
        if window[radius] == PAD:
            continue
        real = [i for i, k in enumerate(window) if k != PAD]
        if real != list(range(real[0], real[-1] + 1)):
            continue  # padding in the middle
        left_pad, right_pad = real[0] > 0, real[-1] < width - 1
        if not all(_follows(window[i], window[i + 1]) for i in range(real[0], real[-1])):
            continue
        if left_pad and not _follows(PAD, window[real[0]]) or right_pad and window[real[-1]] not in _OPERAND_END:
            continue
        depth, lowest = 0, 0
        for i in real:
            depth += (window[i] == KINDS["("]) - (window[i] == KINDS[")"])
            lowest = min(lowest, depth)
        if left_pad and lowest < 0:
            continue  # closes a '(' that nothing before the start opened
        if right_pad and depth > lowest:
            continue  # a '(' opened inside the window is still open at the end
        found.append(window)
    return np.array(found, np.int64)


def complete_window(window) -> tuple[list[int], int]:
    """A whole valid expression (kinds) holding ``window``, and the index of the window's centre."""
    width = len(window)
    radius = width // 2
    real = [i for i, k in enumerate(window) if k != PAD]
    core = [window[i] for i in real]
    depth, lowest = 0, 0
    for k in core:
        depth += (k == KINDS["("]) - (k == KINDS[")"])
        lowest = min(lowest, depth)
    prefix, suffix = [], []
    if real[0] == 0:  # the window does not reach the start: open what it closes, give operators a left operand
        prefix = [KINDS["("]] * (-lowest)
        if core[0] not in (NUM, KINDS["("]):
            prefix.append(NUM)
    if real[-1] == width - 1:  # the window does not reach the end
        if core[-1] not in _OPERAND_END:
            suffix.append(NUM)
        suffix += [KINDS[")"]] * (depth - lowest)
    return prefix + core + suffix, len(prefix) + radius - real[0]


def window_labels(windows: np.ndarray) -> np.ndarray:
    """The reference :func:`reduction_labels` of each window's centre, ``[n, 2]``, read from a
    completed expression."""
    labels = []
    for window in windows:
        kinds, centre = complete_window([int(k) for k in window])
        labels.append(reduction_labels(kinds)[centre])
    return np.array(labels, np.int64).reshape(-1, 2)
