"""The sugar of qre/language/sugar.py in use (issue 18, points 7 and 10).

* ``var``/``std``, running and as window functions, are the *population* variance and
  standard deviation, accurate on data far from 0: compared with ``numpy.var``/``std``
  and with the exact variance (rational arithmetic) on offset + noise, offsets up to
  1e12, within an error bound stated below;
* running ``max(t)``/``min(t)`` and numbers standing for ``const(c)``, compiled, against
  the oracle (qre.language.semantics) on every prefix, and their typing errors located.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dt.terms import Var
from dt.values import encode
from qre import QreTypeError, qre
from qre.language import ast
from qre.language.parser import parse
from qre.language.semantics import run_program

U = 2.0 ** -53
"""The unit roundoff of float64."""

OFFSETS = [0.0, 1.0, -3e4, 1e8, 1e9, 1e12, -1e12]
SCALES = [1e-3, 0.3, 1.0, 250.0]


@st.composite
def offset_data(draw, max_len: int = 24) -> list[float]:
    """offset + scale · noise: noise from a continuous range or small integers (ties,
    constant runs), so the spread is tiny next to the magnitude."""
    offset, scale = draw(st.sampled_from(OFFSETS)), draw(st.sampled_from(SCALES))
    noise = st.one_of(st.floats(-3.0, 3.0), st.integers(-2, 2).map(float))
    return [offset + scale * x for x in draw(st.lists(noise, min_size=1, max_size=max_len))]


def exact_variance(xs: list[float]) -> tuple[float, float]:
    """(population variance, mean − xs[0]) of the floats in xs, computed exactly."""
    fs = [Fraction(x) for x in xs]
    mean = sum(fs) / len(fs)
    return float(sum((f - mean) ** 2 for f in fs) / len(fs)), float(mean - fs[0])


def our_bound(xs: list[float]) -> float:
    """The error allowed to var: 4·n·u·√(var·(var + (mean − x₁)²)).

    Welford's update has a relative error of about n·u·κ with κ = √(1 + mean²/var)
    for the values it folds (Chan, Golub and LeVeque, "Algorithms for computing the
    sample variance", 1983) — an absolute error of n·u·√(var·(var + mean²)). The sugar
    folds t − x₁, whose mean is mean − x₁ (and t − x₁ is exact or off by u relative to
    itself), so the bound is relative to the spread of the data, never to their
    magnitude. The factor 4 leaves room over the worst seen in 10⁴ random runs (1.1).
    """
    var, shift = exact_variance(xs)
    return 4 * len(xs) * U * math.sqrt(var * (var + shift * shift))


def numpy_bound(xs: list[float]) -> float:
    """The error of numpy.var itself: it subtracts its mean m̂, whose error δ is at most
    n·u·max|x| (summation), and the mean of (x − m̂)² is var + δ² exactly; then the
    differences, squares and sum add (n + 3)·u relative. On data near 1e12 δ² is the
    main term (numpy's error there is relative to the magnitude, ours is not)."""
    n = len(xs)
    var, _ = exact_variance(xs)
    delta = n * U * max(abs(x) for x in xs)
    return delta * delta + 2 * (n + 3) * U * (var + delta * delta)


def assert_var_close(got: float, xs: list[float], what: str) -> None:
    want, _ = exact_variance(xs)
    assert abs(got - want) <= our_bound(xs), (what, got, want, xs)
    assert abs(got - np.var(xs)) <= our_bound(xs) + numpy_bound(xs), (what, got, np.var(xs))


def assert_std_close(got: float, xs: list[float], what: str) -> None:
    """|√a − √b| = |a − b| / (√a + √b), plus the rounding of each square root."""
    want = math.sqrt(exact_variance(xs)[0])
    if want == 0.0:
        assert got == 0.0, (what, got, xs)
        return
    allowed = our_bound(xs) / (got + want) + U * (got + want)
    assert abs(got - want) <= allowed, (what, got, want, xs)
    np_allowed = (our_bound(xs) + numpy_bound(xs)) / (got + np.std(xs)) + 2 * U * (got + want)
    assert abs(got - np.std(xs)) <= np_allowed, (what, got, np.std(xs))


RUNNING = {name: qre(f"alphabet m; {name}(cur)") for name in ("var", "std")}


@given(offset_data())
def test_running_var_and_std_are_accurate_far_from_zero(xs):
    """After every prefix: the population variance and standard deviation of the values so
    far, within the bound of :func:`our_bound` (and of numpy's own error)."""
    for name, check in (("var", assert_var_close), ("std", assert_std_close)):
        out = RUNNING[name].run(["m"] * len(xs), xs)
        assert out.status.tolist() == [1] * len(xs)
        for k in range(1, len(xs) + 1):
            check(float(out.value[k - 1]), xs[:k], f"{name} after {k}")


WINDOWED = {name: qre(f"alphabet m; aggregate({name}(cur), 6s)") for name in ("var", "std")}


@given(offset_data(max_len=20))
def test_window_var_and_std_are_accurate_far_from_zero(xs):
    """Tumbling windows of 6 s with one event per second: each window's variance of its
    (up to) six values."""
    times = np.arange(len(xs), dtype=float)
    windows = [xs[j:j + 6] for j in range(0, len(xs), 6)]
    for name, check in (("var", assert_var_close), ("std", assert_std_close)):
        rows = WINDOWED[name].run_timed(times, ["m"] * len(xs), xs)
        assert rows["status"].tolist() == [1] * len(windows)
        for got, window in zip(rows["value"], windows, strict=True):
            check(float(got), window, f"window {name}")


def test_the_textbook_formula_is_gone():
    """Ten readings of about 1e9 with a spread of a few tenths: E[x²] − E[x]² gave 0, −128,
    −256, … here (and NaN for std); the running and window forms agree with numpy to
    1e-12."""
    xs = [1e9 + d for d in (0.1, -0.3, 0.25, 0.05, -0.2, 0.4, -0.1, 0.0, 0.3, -0.35)]
    assert np.var(xs) == pytest.approx(0.0585, abs=1e-4)
    running = RUNNING["var"].run(["m"] * 10, xs).value
    assert running == pytest.approx([np.var(xs[:k]) for k in range(1, 11)], abs=1e-12)
    window = WINDOWED["std"].run_timed(np.arange(10.0), ["m"] * 10, xs)["value"].tolist()
    assert window == pytest.approx([np.std(xs[:6]), np.std(xs[6:])], abs=1e-12)


def test_var_is_nan_on_the_empty_word_and_zero_on_constant_data():
    for name in ("var", "std"):
        assert math.isnan(RUNNING[name].initial[1])  # 0/0, as avg of nothing
        out = RUNNING[name].run(["m"] * 4, [1e12 + 0.5] * 4)
        assert out.value.tolist() == [0.0] * 4


# --------------------------------------------------------------------------- max, min, numbers

ORACLE_TEXTS = [
    "max(cur)",
    "min(-cur)",
    "max(cur) > 2",
    "avg(cur) <= -2.5 || min(cur) == -inf",
    "fill_with(last(cur), -1) >= 0.5",
    "combine(sum(cur), 2, max(cur), (s, k, m) -> s * k - m)",
    "split(max(cur), atom(b, cur), +)",
    "iter(any(cur), 0, max) < max(cur)",
    "combine(max(cur), min(cur), max) == nan",
    "let max = min(cur); combine(max, max(cur), min)",
    "std(cur) < 1 && var(cur) >= 0 && fold([0], (n) -> [n + cur], (n) -> n) == sum(cur)",
]
WORD_VALUES = [-2.0, -1.0, -0.5, 0.0, 1.0, 2.0, 3.0, math.nan, math.inf, -math.inf]


@pytest.mark.parametrize("text", ORACLE_TEXTS)
@settings(max_examples=20)
@given(word=st.lists(st.tuples(st.sampled_from("ab"), st.sampled_from(WORD_VALUES)),
                     max_size=7))
def test_max_min_and_numbers_match_the_oracle(text, word):
    """Compiled and run (the default engine), against qre.language.semantics: every prefix, the
    empty one included, status and value bit for bit."""
    program = "alphabet a, b;\n" + text
    want_status, want_value = encode(run_program(parse(program), word))
    m = MONITORS.setdefault(text, qre(program))
    out = m.run([t for t, _ in word], [v for _, v in word])
    got_status = np.concatenate([[m.initial[0]], out.status])
    got_value = np.concatenate([[m.initial[1]], out.value])
    np.testing.assert_array_equal(got_status, want_status)
    np.testing.assert_array_equal(got_value.view(np.int64)[~np.isnan(want_value)],
                                  want_value.view(np.int64)[~np.isnan(want_value)])
    np.testing.assert_array_equal(np.isnan(got_value), np.isnan(want_value))


MONITORS: dict[str, object] = {}


def test_running_max_and_min():
    m = qre("alphabet a; combine(max(cur), min(cur), (hi, lo) -> hi - lo)")
    assert m.run(["a"] * 4, [3.0, -1.0, 7.0, 2.0]).value.tolist() == [0.0, 4.0, 8.0, 8.0]
    assert qre("alphabet a; max(cur)").initial == (1, -math.inf)
    assert qre("alphabet a; min(cur)").initial == (1, math.inf)


def test_max_and_min_keep_their_other_meanings():
    """As operations (iter, combine, window) and as window functions of aggregate."""
    assert qre("alphabet a; iter(atom(a, cur), 0, max)").run(["a"], [-1.0]).value[0] == 0.0
    assert qre("alphabet a; window(2, cur, min)").run(["a"] * 3, [1.0, 5.0, 3.0]).value[2] == 3.0
    rows = qre("alphabet a; aggregate(min(cur), 2s)").run_timed([0.0, 1.0], ["a"] * 2, [4.0, 2.0])
    assert rows["value"].tolist() == [2.0]


@pytest.mark.parametrize(("text", "message", "line", "column"), [
    ("alphabet a;\nhist(3)", "hist expects a temporal query here, not a base", 2, 6),
    ("alphabet a;\ncount() > 1 && -2.5", "'&&' expects a temporal query", 2, 16),
    ("alphabet a;\ncombine(atom(a, cur), 2, +)", "query 2 has rate a*", 2, 1),
    ("alphabet a;\nmax(cur, 1) > 0", "write the term in last(...): last(max(cur, 1))", 2, 5),
])
def test_typing_errors_on_numbers_and_max_are_located(text, message, line, column):
    with pytest.raises((QreTypeError, ValueError)) as info:
        qre(text)
    assert message in str(info.value)
    assert (info.value.line, info.value.column) == (line, column)


def test_every_engine_runs_the_new_forms_bit_for_bit():
    """The running fold, max/min and numbers through reference, table and codegen."""
    text = ("alphabet a, b;\nlet s = combine(std(cur), var(cur), max(cur), min(-cur), "
            "(p, q, r, t) -> p + q * r - t);\n"
            "fill_with(split(s, atom(a, cur), +), combine(s, -1.5, *))")
    rng = np.random.default_rng(7)
    values = [*(1e9 + rng.normal(0, 0.5, 12)), math.inf, 2.0, math.nan, -1.0, 0.0]
    tags = [str(t) for t in rng.choice(["a", "b"], len(values))]
    want_status, want_value = encode(run_program(parse(text), list(zip(tags, values,
                                                                        strict=True)))[1:])
    m = qre(text)
    for engine in ("reference", "table", "codegen"):
        out = m.run(tags, values, engine=engine)
        np.testing.assert_array_equal(out.status, want_status)
        np.testing.assert_array_equal(out.value, want_value)


def test_folds_built_in_code_are_type_checked():
    bad = ast.RunningFold(("n",), (0.0,), (Var("z"),), Var("n"))
    with pytest.raises(QreTypeError, match="reads z, which is not one of its registers"):
        qre(bad, alphabet=["a"])
    with pytest.raises(QreTypeError, match="one initial value and one update term"):
        qre(ast.RunningFold(("n",), (0.0, 1.0), (Var("n"),), Var("n")), alphabet=["a"])
