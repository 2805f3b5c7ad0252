"""The calculator's code parts: lexer, reference readiness, the loop with reference steps."""

import re
import time
from fractions import Fraction

import numpy as np
import pytest

from predcalc.calculator.engine import Engine, _pad, answer_text
from predcalc.calculator.reference import (
    complete_window,
    reachable_windows,
    ready_labels,
    reduction_labels,
    window_labels,
)
from predcalc.calculator.steps import STEPS, TableStep
from predcalc.calculator.tokens import KINDS, NUM, CalculatorError, Number, lex
from predcalc.calculator.train import reference_steps
from predcalc.data.calculator_families import FAMILIES, axes, families
from predcalc.data.expressions import evaluate


def kinds(text):
    return [KINDS[c] if c in KINDS else NUM for c in text.replace(" ", "")]


@pytest.fixture(scope="module")
def reference_engine():
    return Engine(reference_steps())


def test_lexer_binds_unary_minus_to_literals():
    tokens = lex("3 - -2*-26")
    assert [t if isinstance(t, str) else t.text() for t in tokens] == ["3", "-", "-2", "*", "-26"]
    assert [t if isinstance(t, str) else t.text() for t in lex("(-7)-3")] == ["(", "-7", ")", "-", "3"]
    assert Number.from_text("000120").text() == "120"


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "empty"),
        ("3 +", "ends too early"),
        ("(3", "never closed"),
        ("3)", "has no '('"),
        ("3 4", "missing operator"),
        ("2 ^ 3", "unexpected character"),
        ("* 3", "no left operand"),
        ("()", "missing number"),
    ],
)
def test_lexer_refuses_malformed_input_with_a_reason(text, message):
    with pytest.raises(CalculatorError, match=re.escape(message)):
        lex(text)


def test_lexer_is_not_recursive():
    depth = 5000
    assert len(lex("(" * depth + "1" + ")" * depth)) == 2 * depth + 1
    assert len(lex("+".join(["7"] * 20000))) == 39999


def test_windows_pad_each_sequence_and_batch_like_one_at_a_time():
    from predcalc.calculator.tokens import windows, windows_of_many

    assert windows(np.array([1, 2, 1])).tolist() == [[0, 0, 1, 2, 1], [0, 1, 2, 1, 0], [1, 2, 1, 0, 0]]
    sequences = [np.array([1]), np.array([6, 1, 4, 1, 7]), np.array([1, 3, 1])]
    batched = windows_of_many(sequences)
    assert (batched == np.concatenate([windows(k) for k in sequences])).all()
    assert batched[0].tolist() == [0, 0, 1, 0, 0]  # no kind leaks from one sequence into the next


def test_ready_labels_follow_the_parse_tree():
    assert ready_labels(kinds("1+2*3")).tolist() == [0, 0, 0, 1, 0]
    assert ready_labels(kinds("1-2+3")).tolist() == [0, 1, 0, 0, 0]
    assert ready_labels(kinds("1*2+3*4")).tolist() == [0, 1, 0, 0, 0, 1, 0]
    assert ready_labels(kinds("(1)+(2-3)")).tolist() == [1, 0, 0, 0, 0, 0, 1, 0, 0]


def test_readiness_depends_only_on_the_window():
    windows = reachable_windows()
    assert len(windows) == 669
    labels = window_labels(windows)
    rng = np.random.default_rng(0)
    for index in rng.choice(len(windows), 60, replace=False):  # other completions give the same label
        core, centre = complete_window([int(k) for k in windows[index]])
        wrapped = [NUM, KINDS["*"], KINDS["("], *core, KINDS[")"]]  # inside another expression
        assert (reduction_labels(wrapped)[centre + 3] == labels[index]).all()


def test_reduction_labels_regroup_runs_of_one_level():
    ready, inverse = reduction_labels(kinds("1+2+3")).T
    assert ready.tolist() == [0, 1, 0, 1, 0] and not inverse.any()
    ready, inverse = reduction_labels(kinds("1-2-3+4")).T  # 1 - (2 + 3): after a minus, inverted
    assert ready.tolist() == [0, 1, 0, 1, 0, 0, 0] and inverse.tolist() == [0, 0, 0, 1, 0, 1, 0]
    # a non-inverting operator after an inverting one of its level waits, at both levels alike
    assert reduction_labels(kinds("1-2+3"))[:, 0].tolist() == [0, 1, 0, 0, 0]
    assert reduction_labels(kinds("1+2-3"))[:, 0].tolist() == [0, 1, 0, 1, 0]
    assert reduction_labels(kinds("1+2*3"))[:, 0].tolist() == [0, 0, 0, 1, 0]  # * binds tighter
    assert reduction_labels(kinds("1*2-3"))[:, 0].tolist() == [0, 1, 0, 0, 0]
    ready, inverse = reduction_labels(kinds("8/2/3")).T  # 8 / (2 * 3)
    assert ready.tolist() == [0, 1, 0, 1, 0] and inverse.tolist() == [0, 0, 0, 1, 0]
    assert reduction_labels(kinds("8/2*0"))[:, 0].tolist() == [0, 1, 0, 0, 0]  # 8 / (2 / 0) would fail
    parse_tree = ready_labels(kinds("1*2+3*(4-5)"))  # every token the parse tree readies is ready here too
    assert (reduction_labels(kinds("1*2+3*(4-5)"))[:, 0] >= parse_tree).all()


@pytest.mark.parametrize("op", "+-*/")
def test_a_chain_takes_about_log2_rounds(op):
    record = {}
    terms = 1024
    text = op.join(["1" if op in "*/" else "3"] * terms)
    (result,) = Engine(reference_steps(), record=record).evaluate([text])
    assert answer_text(result) == str(evaluate(text))
    assert len(record["sequences"]) <= 11  # rounds: log2(1024) + 1


def test_operands_too_large_are_refused_in_one_line(monkeypatch, reference_engine):
    from predcalc.calculator import engine

    monkeypatch.setattr(engine, "MAX_DIGIT_PRODUCT", 100)
    results = reference_engine.evaluate(["123456789012 * 123456789012", "1" * 500 + " + 1", "12345 * 6789"])
    assert isinstance(results[0], CalculatorError) and "too large" in str(results[0])
    assert answer_text(results[1]) == "1" * 499 + "2"  # sums of integers are linear: never refused
    assert answer_text(results[2]) == str(12345 * 6789)


def test_multiplication_in_blocks_equals_one_block(monkeypatch, reference_engine):
    from predcalc.calculator import engine

    texts = ["98765432109876543210 * 12345678901234567890123", "-999999999999 * 999999999999 * 7"]
    monkeypatch.setattr(engine, "BLOCK_DIGITS", 10)
    assert [answer_text(r) for r in reference_engine.evaluate(texts)] == [str(evaluate(t)) for t in texts]


@pytest.mark.slow
def test_long_inputs_take_linear_time_and_bounded_memory(tmp_path):
    """160k-term lexing, a 100,000-term chain, two 5,000-digit factors (under 0.5 GB: their partial
    products taken in blocks, 0.13 GB here; all at once they took 1.35 GB) and a 1 MB expression file
    (each under 2 GB), each in a fresh process with the reference steps tabulated."""
    import subprocess
    import sys

    script = tmp_path / "long.py"
    script.write_text("""
import sys, time
sys.set_int_max_str_digits(0)
import numpy as np
from predcalc.calculator.engine import Engine, _pad, answer_text
from predcalc.calculator.steps import STEPS, TableStep
from predcalc.calculator.tokens import lex
engine = Engine({name: TableStep(name, step.reference) for name, step in STEPS.items()})
case = sys.argv[1]
rng = np.random.default_rng(0)
started = time.perf_counter()
if case == "lex":
    assert len(lex("-".join(["7"] * 160_000))) == 319_999
elif case == "chain":
    assert answer_text(engine.evaluate(["+".join(["1"] * 100_000)])[0]) == "100000"
elif case == "multiply":
    a, b = ("".join(map(str, rng.integers(1, 10, 5_000))) for _ in range(2))
    assert answer_text(engine.evaluate([a + "*" + b])[0]) == str(int(a) * int(b))
else:
    text = "+".join(["12*3-4"] * (1_000_000 // 7))
    result = engine.evaluate([text])[0]
    assert answer_text(result) == str(32 * (1_000_000 // 7))
# this process's own peak (VmHWM: ru_maxrss would carry over the forking parent's peak across exec)
peak = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(time.perf_counter() - started, peak / 2 ** 20)
""")
    # case: (seconds, gigabytes); 10,000-digit factors proved the same bound in 20 s instead of 1.6 s
    limits = {"lex": (20, 2), "chain": (10, 2), "multiply": (None, 0.5), "file": (60, 2)}
    for case, (seconds, bound) in limits.items():
        done = subprocess.run([sys.executable, str(script), case], capture_output=True, text=True, check=True)
        took, gigabytes = map(float, done.stdout.split())
        assert gigabytes < bound, (case, gigabytes)
        assert seconds is None or took < seconds, (case, took)


def test_parallel_chain_equals_the_step_loop(reference_engine):
    rng = np.random.default_rng(1)
    a, b = rng.integers(0, 10, (50, 12)), rng.integers(0, 10, (50, 12))
    mode = rng.integers(0, 2, 50)
    outputs, final = reference_engine.chain("addsub", [mode[:, None], a, b], 2, 0)
    carry = np.zeros(50, np.int64)
    for i in range(12):
        step = STEPS["addsub"].reference(np.stack([carry, mode, a[:, i], b[:, i]], 1))
        assert (outputs[:, i] == step).all()
        carry = step[:, 1]
    assert (final == carry).all()
    state = np.zeros(50, np.int64)
    _, compared = reference_engine.chain("compare", [a, b], 3, 0, reverse=True)
    for i in reversed(range(12)):
        state = STEPS["compare"].reference(np.stack([state, a[:, i], b[:, i]], 1))[:, 0]
    assert (compared == state).all()


def test_tabulated_chain_loop_equals_the_parallel_scan(reference_engine):
    tabulated = Engine({name: TableStep(name, step) for name, step in reference_steps().items()})
    rng = np.random.default_rng(2)
    a, b, d = rng.integers(0, 10, (40, 9)), rng.integers(0, 10, (40, 9)), rng.integers(0, 10, (40, 1))
    for name, columns, states, reverse in [
        ("addsub", [rng.integers(0, 2, (40, 1)), a, b], 2, False),
        ("compare", [a, b], 3, True),
        ("muldigit", [a, d], 10, False),
        ("lead", [a * (a > 6)], 2, True),
        ("qdigit", [np.tile(np.arange(1, 10), (40, 1)), np.where(a < 4, 2 * (a == 0), 1)], 10, False),
    ]:
        scanned = reference_engine.chain(name, columns, states, 0, reverse=reverse)
        looped = tabulated.chain(name, columns, states, 0, reverse=reverse)
        assert (scanned[0] == looped[0]).all() and (scanned[1] == looped[1]).all(), name
        for engine in (reference_engine, tabulated):  # one output, or only the final state
            first, final = engine.chain(name, columns, states, 0, reverse=reverse, keep=0)
            assert (first == scanned[0][..., 0]).all() and (final == scanned[1]).all(), name
            assert engine.chain(name, columns, states, 0, reverse=reverse, keep=False)[0] is None
            none = [np.zeros((0, 9), np.int64) for _ in columns]  # an empty batch keeps the shapes
            assert engine.chain(name, none, states, 0, keep=0)[0].shape == (0, 9)


def test_rational_results_are_exact_and_in_lowest_terms(reference_engine):
    """Cross-cancellation (gcds of the parts, none where a part is 1) on fractions built to share
    factors, zeros, equal denominators and integers: every result equals ``fractions``' own."""
    rng = np.random.default_rng(5)
    factors = [1, 2, 3, 4, 6, 7, 9, 12, 35, 360, 1001, 9999]
    texts, truths = [], []
    for _ in range(300):
        parts = [
            Fraction(int(rng.choice(factors)) * int(rng.integers(-3, 4)), int(rng.choice(factors))) for _ in range(4)
        ]
        op = "+-*/"[rng.integers(4)]
        left, right = parts[0] / parts[1] if parts[1] else parts[0], parts[2] / parts[3] if parts[3] else parts[2]
        if op == "/" and right == 0:
            continue
        text = f"({left.numerator}/{left.denominator}) {op} ({right.numerator}/{right.denominator})"
        texts.append(text.replace("--", "- -").replace("(-", "(0-"))
        truths.append(str(evaluate(texts[-1])))
    answers = [answer_text(r) for r in reference_engine.evaluate(texts)]
    assert answers == truths
    assert len({t for t in truths if "/" in t}) > 50  # fractions, not only integers


def test_reference_steps_compute_every_family_exactly(reference_engine):
    for name, pairs in families(n=15, seed=3, whole_seed_sets=False).items():
        answers = [answer_text(r) for r in reference_engine.evaluate([e for e, _ in pairs])]
        assert answers == [a for _, a in pairs], name


@pytest.mark.parametrize(
    "text, answer",
    [
        ("1/3*3", "1"),
        ("6/4", "3/2"),
        ("-0", "0"),
        ("-5 * 0", "0"),
        ("0 - 0", "0"),
        ("2*-26", "-52"),
        ("99999999999 + 1", "100000000000"),
        ("10000000000 - 1", "9999999999"),
        ("(1/2 + 1/3) * 6 - 5/7", "30/7"),
        ("-7/-14", "1/2"),
        ("((((((((((5))))))))))", "5"),
    ],
)
def test_reference_engine_on_edge_cases(reference_engine, text, answer):
    (result,) = reference_engine.evaluate([text])
    assert answer_text(result) == answer == (str(evaluate(text)) if "/" not in answer else answer)


def test_division_by_zero_is_an_error_not_a_number(reference_engine):
    results = reference_engine.evaluate(["5/0", "1 + 2/(3-3)", "4/2"])
    assert isinstance(results[0], CalculatorError) and "division by zero" in str(results[0])
    assert isinstance(results[1], CalculatorError)
    assert answer_text(results[2]) == "2"


def test_families_are_fixed_by_their_seed_and_stay_in_their_box():
    first, second = families(n=20, seed=5), families(n=20, seed=5)
    assert first == second and set(first) == set(FAMILIES)
    assert families(n=20, seed=6)["iid"] != first["iid"]
    box = {"iid": (5, 4, 2), "digits_21_50": (50, 4, 2), "ops_21_40": (5, 40, 2), "depth_7_10": (5, 4, 10)}
    for name, (digits, operators, depth) in box.items():
        for expression, answer in first[name]:
            found = axes(expression)
            assert found["digits"] <= digits and found["operators"] <= operators and found["depth"] <= depth
            assert Fraction(answer) == evaluate(expression)
    assert min(axes(e)["digits"] for e, _ in first["digits_21_50"]) >= 21
    assert min(axes(e)["depth"] for e, _ in first["depth_7_10"]) >= 7
    assert all("/" in e for e, _ in first["div_integer"]) and all("/" not in a for _, a in first["div_integer"])


def test_a_broken_adder_cannot_make_euclid_loop_for_ever():
    """An adder that ignores b never shrinks a remainder: Euclid stops at Lamé's bound with an error."""
    steps = dict(reference_steps())
    addsub = steps["addsub"]

    def ignores_b(inputs):
        inputs = np.array(inputs)
        inputs[:, 3] = 0
        return addsub(inputs)

    engine = Engine({**steps, "addsub": ignores_b})
    started = time.perf_counter()
    results = engine.evaluate(["1/3 + 1/6", "2 + 3"])
    assert time.perf_counter() - started < 30
    assert isinstance(results[0], CalculatorError) and "Lamé" in str(results[0])
    assert not isinstance(results[1], CalculatorError)  # wrong (2), but no fraction: nothing to give up on


def _digits(value: int, pad: int = 0) -> np.ndarray:
    """Digits of ``value``, least significant first, with ``pad`` leading zero digits written out."""
    return np.array([int(c) for c in str(value)[::-1]] + [0] * pad, np.int64)


def _value(digits) -> int:
    return int("".join(map(str, np.asarray(digits)[::-1])))


def test_lead_and_qdigit_references_agree_with_brute_force():
    lead, qdigit = STEPS["lead"], STEPS["qdigit"]
    for number in range(1000):  # the flags mark the positions up to the most significant non-zero digit
        digits, seen, flags = _digits(number, 3 - len(str(number))), 0, []
        for digit in digits[::-1]:
            (seen,) = lead.reference(np.array([[seen, digit]]))[0]
            flags.append(seen)
        assert flags[::-1] == [int(i < len(str(number)) and number > 0) for i in range(3)]
        assert seen == (number != 0)
    seen_inputs = set()
    for y in range(1, 40):  # every remainder long division can hold: below 10 y
        for remainder in range(10 * y):
            q = 0
            for k in range(1, 10):
                state = 0 if remainder == y * k else 1 if remainder < y * k else 2
                seen_inputs.add((q, k, state))
                (q,) = qdigit.reference(np.array([[q, k, state]]))[0]
            assert q == remainder // y
    assert seen_inputs == set(map(tuple, qdigit.reachable().tolist()))  # reachable: exactly what occurs
    assert len(qdigit.reachable()) == 63 and len(lead.reachable()) == 20


def test_long_division_is_exact_on_adversarial_operands(reference_engine):
    """10^n - 1 by 7, 10^n + 1 by 10^n, quotients with many zero digits, x by itself and by 1, zero,
    each operand also with leading zero digits written out (the learned lengths cut them)."""
    pairs = []
    for n in (1, 2, 5, 13, 30):
        pairs += [(10**n - 1, 7), (10**n + 1, 10**n), (10**n, 10**n + 1), (37 * (10**n + 3), 37)]
        pairs += [(10**n, 1), (10**n - 1, 10**n - 1), (0, 10**n), (10 ** (2 * n) + 1, 10**n + 1)]
    rng = np.random.default_rng(4)
    pairs += [(int(rng.integers(0, 10**15)), int(rng.integers(1, 10 ** int(rng.integers(1, 12))))) for _ in range(60)]
    for pad in (0, 3):
        x = _pad([_digits(a, pad) for a, _ in pairs])
        y = _pad([_digits(b, 2 * pad) for _, b in pairs])
        quotient, remainder = reference_engine.divmod(x, y)
        assert [(_value(q), _value(r)) for q, r in zip(quotient, remainder)] == [divmod(a, b) for a, b in pairs]
    texts = [f"{'9' * 40} / 7", f"1{'0' * 25}1 / 1{'0' * 25}", f"{37 * (10**30 + 3)} / 37", f"{'0' * 20}2 * {'0' * 9}2"]
    assert [answer_text(r) for r in reference_engine.evaluate(texts)] == [str(evaluate(t)) for t in texts]


def test_lengths_and_zeros_are_the_lead_steps_decisions(reference_engine):
    numbers = _pad([_digits(2, 9), _digits(0, 4), _digits(10**7, 0), _digits(305, 1)])
    assert reference_engine.cut(numbers)[1].tolist() == [1, 0, 8, 3]
    assert reference_engine.is_zero(numbers).tolist() == [False, True, False, False]
    assert reference_engine.trim(numbers).shape[1] == 8  # the widest row's significant length
    assert reference_engine.trim(np.zeros((3, 6), np.int64)).shape == (3, 1)  # zero keeps one digit
    twos = _pad([_digits(2, 30)] * 2)
    assert reference_engine.multiply(twos[:1], twos[1:]).tolist() == [[4]]
    total = reference_engine.addsub(_pad([_digits(999)]), _pad([_digits(1)]), np.array([0]))
    assert total.tolist() == [[0, 0, 0, 1]]  # the last carry written as a digit, over one column more


def test_the_division_schedule_follows_the_learned_steps():
    """The quotient digit and the zero test are the steps' outputs: a ``qdigit`` that never takes k
    leaves every quotient digit 0; a ``lead`` that calls every digit
    significant cuts no column and finds nothing zero, so Euclid runs to Lamé's bound."""
    steps = reference_steps()
    stuck = Engine({**steps, "qdigit": lambda inputs: np.asarray(inputs)[:, :1]})
    quotient, _ = stuck.divmod(_pad([_digits(1234)]), _pad([_digits(5)]))
    assert _value(quotient[0]) == 0
    always = Engine({**steps, "lead": lambda inputs: np.ones((len(inputs), 1), np.int64)})
    assert always.trim(_pad([_digits(7, 5)])).shape[1] == 6
    results = always.evaluate(["1/3 + 1/6"])
    assert isinstance(results[0], CalculatorError) and "Lamé" in str(results[0])


@pytest.mark.parametrize("text", ["-0", "-0 * 5", "0 * -3", "-3 + 3", "-1/2 + 1/2", "-5 * (3 - 3)", "-0/7"])
def test_zero_has_no_sign(reference_engine, text):
    (result,) = reference_engine.evaluate([text])
    assert (answer_text(result), result.sign) == ("0", 0)


def test_answers_are_cut_and_zero_unsigned_by_the_lead_step():
    """Each answer is cut to its own significant digits in a batch of mixed lengths, by ``lead``'s
    flags: a ``lead`` that flags every digit keeps the batch's padding, and one that never finds a
    non-zero digit leaves the sign of a non-zero answer off (the printer itself decides nothing)."""
    texts = ["1 + 1", "99999 + 1", "-3 * 4"]
    assert [answer_text(r) for r in Engine(reference_steps()).evaluate(texts)] == ["2", "100000", "-12"]
    steps = reference_steps()
    always = Engine({**steps, "lead": lambda inputs: np.ones((len(inputs), 1), np.int64)})
    assert [len(r.numerator) for r in always.normalise([Number(0, _pad([_digits(2, 3)])[0], np.array([1]))])] == [4]
    never = Engine({**steps, "lead": lambda inputs: np.zeros((len(inputs), 1), np.int64)})
    (result,) = never.normalise([Number(1, np.array([2]), np.array([1]))])
    assert result.sign == 0
