"""The digit models' data (`predcalc.data.digits`, `predcalc.data.digit_suite`): the parser, exact
values of long integers, every token format read back, the ids and levels the decoder is rotated
by, the greedy loop with an oracle in place of a network, the aligned columns of the recurrence,
and the held-out suite's sets (drawn, never scored here)."""

import itertools

import numpy as np
import pytest

from predcalc.data import digit_suite, digits
from predcalc.training.digits import TRAIN_DIGITS, TRAIN_TERMS, column_answers

FORMATS = [
    digits.Format(positions, reverse, scratchpad)
    for positions, reverse, scratchpad in itertools.product(digits.POSITIONS, (True, False), (True, False))
]
FORMAT_IDS = [
    f"{f.positions}-{'reversed' if f.reverse else 'forward'}-{'scratch' if f.scratchpad else 'direct'}" for f in FORMATS
]
NAMES = {digits.PAD: "_", digits.PLUS: "+", digits.MINUS: "-", digits.SEP: "=", digits.BOS: "^"}
NAMES.update({digits.DIGIT0 + d: str(d) for d in range(10)})


def text_of(tokens):
    return " ".join(NAMES[int(t)] for t in tokens)


def expressions(seed=0, count=40, terms=(2, 5), widths=(1, 12)):
    return digits.draw(np.random.default_rng(seed), count, terms=terms, digits=widths)


def segments(expression, fmt):
    """``(level, start, lead, digits)`` of each number in the encoded sequence: the terms, then the
    written rows (``start``: its first token, ``lead`` tokens before its digits)."""
    out, position, terms = [], 1, len(expression.terms)
    for j in range(1, terms + 1):
        out.append((2 * j, position, 2, expression.width))
        position += 2 + expression.width
    for j, (sign, _, width) in enumerate(digits.rows(expression, fmt), start=1):
        lead = 1 if sign is None else 2
        out.append((2 * terms + 2 if sign is not None else 2 * j + 1, position, lead, width))
        position += lead + width
    return out


# --- parse --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line, terms",
    [
        ("17 - -250 + 3", ((1, 17), (-1, -250), (1, 3))),
        ("-5+3", ((1, -5), (1, 3))),
        ("+5 - +3", ((1, 5), (-1, 3))),
        ("  4  -  - 2   + 0 ", ((1, 4), (-1, -2), (1, 0))),
        ("007 + 1", ((1, 7), (1, 1))),
        ("1 + 2 + 3 + 4 + 5 + 6 + 7 + 8 + 9", tuple((1, n) for n in range(1, 10))),
    ],
)
def test_parse_reads_signed_terms(line, terms):
    expression = digits.parse(line)
    assert expression.terms == terms
    assert expression.value == sum(op * n for op, n in terms)


@pytest.mark.parametrize(
    "line",
    ["", "   ", "17", "-4", "17 +", "17 * 3", "1 2", "--1 + 2", "1 + + + 2", "abc", "1.5 + 2", "1 + 2x", "(1) + 2"],
)
def test_parse_refuses_what_is_not_an_expression_in_one_line(line):
    with pytest.raises(digits.DigitExpressionError) as error:
        digits.parse(line)
    assert "\n" not in str(error.value) and repr(line[:40]) in str(error.value)


def test_a_bad_line_with_a_newline_is_still_reported_in_one_line():
    with pytest.raises(digits.DigitExpressionError) as error:
        digits.parse("1 + 2\n* 3")
    assert "\n" not in str(error.value)


def test_values_of_sixty_digit_numbers_are_exact():
    a, b, c = 10**59 + 7, -(10**60 - 1), 123456789 * 10**51 + 1
    expression = digits.parse(f"{a} - {b} + {c}")
    assert expression.value == a - b + c and expression.width == 60
    assert expression.value == int("1223456789" + "0" * 50 + "7")  # written out by hand
    assert digits.parse(f"{-a} + {b}").value == -(10**60 + 10**59 + 6)


def test_text_reads_back_as_the_same_expression():
    for expression in expressions(seed=1):
        assert digits.parse(expression.text()) == expression


# --- formats: encode and read back ---------------------------------------------------------------


def test_format_refuses_an_unknown_position_scheme():
    with pytest.raises(ValueError, match="positions must be one of absolute, abacus, coupled"):
        digits.Format("relative")


def test_complement_and_rows():
    assert digits.complement(-3, 3) == 997 and digits.complement(12, 4) == 12 and digits.complement(-1000, 5) == 99000
    expression = digits.parse("0 - 3")
    assert digits.rows(expression, digits.Format()) == [(None, 0, 3), (None, 997, 3), (digits.MINUS, 3, 2)]
    assert digits.rows(expression, digits.Format(scratchpad=False)) == [(digits.MINUS, 3, 2)]
    assert digits.rows(digits.parse("0 + 0"), digits.Format(scratchpad=False)) == [(digits.PLUS, 0, 2)]  # zero is +


def test_one_expression_written_out():
    expression = digits.parse("12 - -3")
    encoded = digits.encode(expression, digits.Format())  # coupled, reversed, scratchpad
    assert text_of(encoded.tokens) == "^ + + 2 1 - - 3 0 = 2 1 0 0 = 5 1 0 0 = + 5 1 0"
    assert encoded.ids.tolist() == [0, -1, 0, 1, 2, -1, 0, 1, 2, 0, 1, 2, 3, 4, 0, 1, 2, 3, 4, -1, 0, 1, 2, 3]
    assert encoded.levels.tolist() == [0] + [2] * 4 + [4] * 4 + [3] * 5 + [5] * 5 + [6] * 5
    assert encoded.written.astype(int).tolist() == [0] * 10 + [1] * 4 + [0] + [1] * 4 + [0] + [1] * 4
    assert encoded.prompt_length == 9
    forward = digits.encode(expression, digits.Format("coupled", reverse=False))
    assert text_of(forward.tokens) == "^ + + 1 2 - - 0 3 = 0 0 1 2 = 0 0 1 5 = + 0 1 5"
    assert forward.ids.tolist() == [0, 4, 3, 2, 1, 4, 3, 2, 1] + [5, 4, 3, 2, 1] * 3
    direct = digits.encode(expression, digits.Format("abacus", reverse=False, scratchpad=False))
    assert text_of(direct.tokens) == "^ + + 1 2 - - 0 3 = + 0 1 5"
    assert direct.ids.tolist() == [0, -1, 0, 1, 2, -1, 0, 1, 2, -1, 0, 1, 2, 3] and not direct.levels.any()


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
def test_the_written_rows_read_back_as_the_value(fmt):
    for expression in expressions(seed=2) + [digits.parse(f"{10**59 + 7} - {-(10**60 - 1)} + 5")]:
        encoded = digits.encode(expression, fmt)
        assert digits.read_rows(encoded.tokens, expression, fmt) == expression.value
        prompt = digits.encode(expression, fmt, answer=False)
        assert prompt.prompt_length == encoded.prompt_length == len(prompt.tokens)
        assert prompt.prompt_length == 1 + len(expression.terms) * (2 + expression.width)
        for name in ("tokens", "ids", "levels", "written"):
            np.testing.assert_array_equal(getattr(prompt, name), getattr(encoded, name)[: prompt.prompt_length])


@pytest.mark.parametrize(
    "fmt", [f for f in FORMATS if f.scratchpad], ids=[i for i, f in zip(FORMAT_IDS, FORMATS) if f.scratchpad]
)
def test_scratch_rows_hold_the_running_totals_in_tens_complement(fmt):
    for expression in expressions(seed=3):
        encoded = digits.encode(expression, fmt)
        totals = itertools.accumulate(op * n for op, n in expression.terms)
        width = expression.width + 2
        for (_, start, lead, count), total in zip(segments(expression, fmt)[len(expression.terms) :], totals):
            assert count == width and encoded.tokens[start] == digits.SEP and lead == 1
            written = "".join(NAMES[int(t)] for t in encoded.tokens[start + 1 : start + 1 + count])
            assert int(written[::-1] if fmt.reverse else written) == total % 10**width


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
def test_ids_levels_and_written_follow_the_rules(fmt):
    for expression in expressions(seed=4):
        encoded = digits.encode(expression, fmt)
        n = len(encoded.tokens)
        assert encoded.tokens[0] == digits.BOS and encoded.ids[0] == 0 and encoded.levels[0] == 0
        if fmt.positions == "absolute":
            np.testing.assert_array_equal(encoded.ids, np.arange(n))
        if fmt.positions != "coupled":
            assert not encoded.levels.any()
        layout = segments(expression, fmt)
        assert layout[-1][1] + layout[-1][2] + layout[-1][3] == n
        by_significance = {}
        for index, (level, start, lead, count) in enumerate(layout):
            row = index >= len(expression.terms)
            digit_positions = np.arange(start + lead, start + lead + count)
            tokens = encoded.tokens[digit_positions]
            assert np.all((tokens >= digits.DIGIT0) & (tokens < digits.DIGIT0 + 10))
            assert np.all(encoded.written[digit_positions] == row) and not encoded.written[start]
            if row and lead == 2:  # the answer's sign is written
                assert encoded.written[start + 1] and encoded.tokens[start + 1] in (digits.PLUS, digits.MINUS)
            if fmt.positions == "coupled":
                assert np.all(encoded.levels[start : start + lead + count] == level)
            ids = encoded.ids[start : start + lead + count]
            if fmt.positions == "absolute":
                continue
            step = -1 if fmt.positions == "coupled" and not fmt.reverse else 1
            np.testing.assert_array_equal(np.diff(ids), step)  # the lead continues its number's ids
            significance = np.arange(count) if fmt.reverse else np.arange(count)[::-1]
            if fmt.positions == "abacus":
                np.testing.assert_array_equal(encoded.ids[digit_positions], 1 + np.arange(count))
            else:
                np.testing.assert_array_equal(encoded.ids[digit_positions], 1 + significance)
                for s, i in zip(significance, encoded.ids[digit_positions]):
                    by_significance.setdefault(int(s), set()).add(int(i))
        # coupled: digits of one significance share one id across the terms and the rows
        assert all(len(found) == 1 for found in by_significance.values())


def test_levels_of_terms_rows_and_answer():
    expression = digits.parse("1 + 2 - 3 + 4")
    for fmt, answer_rows in ((digits.Format(), [3, 5, 7, 9, 10]), (digits.Format(scratchpad=False), [10])):
        levels = [level for level, *_ in segments(expression, fmt)]
        assert levels == [2, 4, 6, 8] + answer_rows
        encoded = digits.encode(expression, fmt)
        assert sorted(set(encoded.levels.tolist())) == sorted({0, 2, 4, 6, 8, *answer_rows})


def test_layout_zeroes_the_written_tokens_and_keeps_the_rest():
    batch = expressions(seed=5, count=4, terms=(3, 3), widths=(6, 6))
    fmt = digits.Format()
    tokens, ids, levels, written, prompt_length = digits.layout(batch, fmt)
    for row, expression in enumerate(batch):
        encoded = digits.encode(expression, fmt)
        np.testing.assert_array_equal(tokens[row], np.where(encoded.written, digits.PAD, encoded.tokens))
        np.testing.assert_array_equal(ids[row], encoded.ids)
        np.testing.assert_array_equal(levels[row], encoded.levels)
        np.testing.assert_array_equal(written[row], encoded.written)
        assert prompt_length == encoded.prompt_length
    with pytest.raises(ValueError, match="one width and term count"):
        digits.layout([digits.parse("1 + 2"), digits.parse("10 + 2")], fmt)


def test_padded_rounds_up_to_a_multiple():
    assert [digits.padded(n) for n in (1, 31, 32, 33, 64)] == [32, 32, 32, 64, 64]
    assert digits.padded(5, multiple=4) == 8


# --- the greedy loop ------------------------------------------------------------------------------


def oracle(batch, fmt, corrupt=None):
    """``logits_at`` that writes the true next token (``corrupt(token)`` of it, if given), checking
    what the loop hands it: the sequence up to ``position`` at least, padded to a multiple of 32,
    what was written so far, nothing written at ``position`` or after it, and the ids and levels of
    ``encode``."""
    truth = {}
    for expression in batch:
        encoded = digits.encode(expression, fmt)
        truth[encoded.tokens[: encoded.prompt_length].tobytes()] = encoded
    asked = []

    def logits_at(tokens, ids, levels, position):
        length = tokens.shape[1]
        assert tokens.shape == ids.shape == levels.shape and length % 32 == 0 and length >= position
        out = np.zeros((len(tokens), digits.VOCAB), np.float32)
        for row in range(len(tokens)):
            prompt = tokens[row, : int(np.argmax(tokens[row] == digits.SEP))]
            encoded = truth[prompt.tobytes()]
            n = min(len(encoded.tokens), length)
            assert encoded.written[position]
            if corrupt is None:
                np.testing.assert_array_equal(tokens[row, :position], encoded.tokens[:position])
            np.testing.assert_array_equal(tokens[row, position:n][encoded.written[position:n]], digits.PAD)
            np.testing.assert_array_equal(tokens[row, n:], digits.PAD)
            np.testing.assert_array_equal(ids[row, :n], encoded.ids[:n])
            np.testing.assert_array_equal(levels[row, :n], encoded.levels[:n])
            token = int(encoded.tokens[position])
            out[row, corrupt(token) if corrupt else token] = 1.0
        asked.append(position)
        return out

    return logits_at, asked


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
def test_greedy_with_an_oracle_gives_the_true_values(fmt):
    batch = expressions(seed=6, count=9, terms=(2, 3), widths=(1, 3)) + [digits.parse("0 - 0"), digits.parse("5 - 7")]
    logits_at, asked = oracle(batch, fmt)
    assert digits.greedy(batch, fmt, logits_at, batch_size=3) == [e.value for e in batch]
    groups = {}
    for expression in batch:
        groups.setdefault(digits.shape_key(expression), []).append(expression)
    # one call a written token, for each chunk of at most 3 expressions of one shape
    calls = sum(-(-len(g) // 3) * int(digits.encode(g[0], fmt).written.sum()) for g in groups.values())
    assert len(asked) == calls and len(groups) > 1


def _shifted(token):
    """A wrong token of the same kind: the next digit, the other sign."""
    if token in (digits.PLUS, digits.MINUS):
        return digits.PLUS + digits.MINUS - token
    return digits.DIGIT0 + (token - digits.DIGIT0 + 1) % 10


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
def test_greedy_with_a_wrong_oracle_gives_wrong_values_or_none(fmt):
    batch = expressions(seed=7, count=8, terms=(2, 3), widths=(1, 3))
    wrong, _ = oracle(batch, fmt, corrupt=_shifted)
    answers = digits.greedy(batch, fmt, wrong)
    assert all(answer is not None and answer != e.value for answer, e in zip(answers, batch))
    padding, _ = oracle(batch, fmt, corrupt=lambda token: digits.PAD)
    assert digits.greedy(batch, fmt, padding) == [None] * len(batch)
    signs_for_digits, _ = oracle(batch, fmt, corrupt=lambda token: digits.PLUS)
    assert digits.greedy(batch, fmt, signs_for_digits) == [None] * len(batch)


def test_read_rows_refuses_a_sign_or_padding_where_a_digit_belongs():
    expression = digits.parse("12 - -3")
    fmt = digits.Format()
    tokens = digits.encode(expression, fmt).tokens.copy()
    assert digits.read_rows(tokens, expression, fmt) == 15
    for place, token in ((-1, digits.PLUS), (-2, digits.PAD), (-4, digits.SEP)):
        broken = tokens.copy()
        broken[place] = token
        assert digits.read_rows(broken, expression, fmt) is None


# --- the aligned columns ---------------------------------------------------------------------------


def test_columns_of_one_expression():
    columns = digits.columns([digits.parse("12 - -3")])
    assert columns.shape == (1, 3, digits.COLUMN_FEATURES) and digits.COLUMN_FEATURES == 42
    hot = [sorted(np.flatnonzero(column).tolist()) for column in columns[0]]
    # slot 0: "+", sign "+", digits 2, 1, 0 (least significant first); slot 1: "-", sign "-", 3, 0, 0
    assert hot == [[0, 2, 4 + 2, 15, 17, 18 + 3], [0, 2, 4 + 1, 15, 17, 18], [0, 2, 4, 15, 17, 18]]
    assert not columns[0, :, 28:].any()  # the empty third slot


def read_back(columns):
    """The expressions the one-hot columns hold, read back in NumPy (a perfect recurrence)."""
    out = []
    for example in columns:
        terms = []
        for slot in range(digits.COLUMN_SLOTS):
            block = example[:, 14 * slot : 14 * slot + 14]
            if not block.any():
                continue
            op = 1 if block[0, 0] else -1
            magnitude = int("".join(str(int(np.argmax(column[4:]))) for column in block[::-1]))
            terms.append((op, -magnitude if block[0, 3] else magnitude))
        out.append(digits.Expression(tuple(terms)))
    return out


def test_columns_hold_each_expression_and_the_targets_read_back_as_values():
    for width in (1, 4, 30):
        batch = expressions(seed=width, count=12, terms=(2, 3), widths=(width, width))
        columns = digits.columns(batch)
        assert columns.shape == (12, width + 1, digits.COLUMN_FEATURES)
        assert [e.value for e in read_back(columns)] == [e.value for e in batch]
        digit_targets, sign_targets = digits.column_targets(batch)
        assert digit_targets.shape == (12, width + 1) and sign_targets.shape == (12,)
        one_hot = np.eye(10, dtype=np.float32)[digit_targets], np.eye(2, dtype=np.float32)[sign_targets]
        assert digits.read_columns(*one_hot) == [e.value for e in batch]


def test_column_answers_group_by_width_and_leave_four_terms_unanswered():
    batch = expressions(seed=8, count=10, terms=(2, 4), widths=(1, 5))

    def perfect(columns):
        values = [e.value for e in read_back(columns)]
        signs = np.array([int(v < 0) for v in values])
        magnitudes = [str(abs(v))[::-1].ljust(columns.shape[1], "0") for v in values]
        digit_logits = np.eye(10)[np.array([[int(c) for c in m] for m in magnitudes])]
        return {"digits": digit_logits, "sign": np.eye(2)[signs]}

    answers = column_answers(perfect, batch, batch_size=2)
    assert answers == [e.value if len(e.terms) <= 3 else None for e in batch]
    assert None in answers and any(a is not None for a in answers)


def test_four_terms_do_not_fit_the_columns():
    with pytest.raises(digits.TooManyTermsError, match="4 terms; the column input has 3 slots") as error:
        digits.columns([digits.parse("1 + 2 + 3 + 4")])
    assert isinstance(error.value, digits.DigitExpressionError) and "\n" not in str(error.value)
    with pytest.raises(ValueError, match="share one width"):
        digits.columns([digits.parse("1 + 2"), digits.parse("10 + 2")])


# --- drawing and the held-out suite ------------------------------------------------------------------


def test_draw_keeps_its_ranges():
    batch = digits.draw(np.random.default_rng(9), 200, terms=(2, 4), digits=(3, 7), signed=False, operators="+")
    assert {len(e.terms) for e in batch} == {2, 3, 4}
    widths = [len(str(abs(n))) for e in batch for _, n in e.terms]
    assert min(widths) == 3 and max(widths) == 7
    assert all(op == 1 and n >= 0 for e in batch for op, n in e.terms)
    assert digits.draw_number(np.random.default_rng(0), 1, True) in range(-9, 10)


def test_the_suite_is_deterministic():
    first, second = digit_suite.suite(), digit_suite.suite()
    assert first == second and digit_suite.SUITE_SEED == 6161
    assert digit_suite.suite(seed=1)["digits_10"] != first["digits_10"]
    assert digit_suite.TRAIN_BOX == {"digits": TRAIN_DIGITS, "terms": TRAIN_TERMS}  # one training box


def test_every_set_of_the_suite_is_what_its_name_says():
    sets = digit_suite.suite()
    assert set(sets) == {
        *(f"digits_{w}" for w in (10, 20, 30, 50, 100)),
        "terms_6",
        "terms_9",
        "rung1_digits_30",
        "rung2_digits_30",
        *(
            f"{family}_{w}"
            for family in ("carry_chain", "borrow_chain", "cancellation", "leading_cancel")
            for w in (10, 30)
        ),
    }
    for width in (10, 20, 30, 50, 100):
        box = digit_suite.box(sets[f"digits_{width}"])
        assert (
            box["digits"] == [width, width] and box["terms"] == [3, 3] and box["size"] == (200 if width <= 30 else 100)
        )
    for terms in (6, 9):
        box = digit_suite.box(sets[f"terms_{terms}"])
        assert box["terms"] == [terms, terms] and box["digits"] == [1, 10]
    for rung in (1, 2):
        rung_set = sets[f"rung{rung}_digits_30"]
        assert digit_suite.box(rung_set)["digits"] == [30, 30] and digit_suite.box(rung_set)["terms"] == [2, 2]
        assert all(n >= 0 for e in rung_set for _, n in e.terms)
        assert {op for e in rung_set for op, _ in e.terms} == ({1} if rung == 1 else {1, -1})
    for name in (*(f"digits_{w}" for w in (10, 20, 30, 50, 100)), "terms_6", "terms_9"):  # signed, both operators
        assert {op for e in sets[name] for op, _ in e.terms[1:]} == {1, -1}
        assert any(n < 0 for e in sets[name] for _, n in e.terms)
    for width in (10, 30):
        carry, borrow = sets[f"carry_chain_{width}"], sets[f"borrow_chain_{width}"]
        assert all(str(e.terms[0][1])[:-1] == "9" * (width - 1) for e in carry)  # nines the whole width
        # the carry leaves the top in all but a few (carry_chain_10: 99 of 100; a last digit 9 - r
        # with b < 10 and b + c <= r carries nothing)
        assert np.mean([len(str(e.value)) == width + 1 for e in carry]) >= 0.95
        assert all(str(e.terms[0][1])[:-1] == "1" + "0" * (width - 2) for e in borrow)
        assert all(len(str(e.terms[0][1] - e.terms[1][1])) == width - 1 for e in borrow)  # the borrow reaches the top
        assert all(max(len(str(abs(n))) for _, n in e.terms[:2]) == width for e in sets[f"cancellation_{width}"])
        assert all(abs(e.value) < 1100 for e in sets[f"cancellation_{width}"])
        assert all(abs(e.value) < 100 for e in sets[f"leading_cancel_{width}"])
        assert digit_suite.box(sets[f"leading_cancel_{width}"])["digits"][1] == width


def test_table_room_is_how_far_ids_and_levels_may_move_inside_the_tables():
    ids, levels = np.array([[digits.ID_FLOOR, 0, 5]]), np.array([[0, 2, 7]])
    assert digits.table_room(ids, levels, (8, 8)) == (1, 0)  # ids -1..5 take rows 0..6 of 8
    assert digits.table_room(ids, levels, (7, 7)) == (0, -1)  # level 7 has no row in 7
