"""qre(text) end to end: the pipeline, the motivating query of §5.3, and bad input."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dt.values import encode
from qre import QreSyntaxError, QreTypeError, examples, qre
from qre.language.parser import parse
from qre.language.semantics import run_program

LAST_FIVE = examples.read_text("last_five.qre")
LAST_FIVE_CORE = examples.read_text("last_five_core.qre")


def _oracle(text: str, word) -> tuple[np.ndarray, np.ndarray]:
    """The oracle's outputs after each event (the empty prefix dropped), encoded."""
    return encode(run_program(parse(text), word)[1:])


@settings(max_examples=25)
@given(st.lists(st.sampled_from([0.0, 1.0, 2.0, 10.0, 50.0, -3.0]), max_size=9))
def test_motivating_query_matches_the_oracle(values):
    """The sugared query and its core-syntax version, compiled, against the oracle."""
    status, value = _oracle(LAST_FIVE, [("m", v) for v in values])
    for text in (LAST_FIVE, LAST_FIVE_CORE):
        out = qre(text).run(["m"] * len(values), values)
        np.testing.assert_array_equal(out.status, status)
        np.testing.assert_array_equal(out.value, value)


def test_motivating_query_fires_on_a_spike_after_calm_readings():
    """Never before five readings (recent is then the mean itself), never on calm readings
    (σ = 0 and recent = mean); after thirty readings of 10, from the fourth reading of 20
    (recent 18 > 11.18 + 2 · 3.22) to the seventh, until 20 is normal (recent 20 < 12.11
    + 2 · 4.08 at the eighth)."""
    m = qre(LAST_FIVE)
    out = m.run(["m"] * 40, [10.0] * 30 + [20.0] * 10)
    assert out.status.tolist() == [1] * 40
    assert out.value.tolist() == [0.0] * 33 + [1.0] * 4 + [0.0] * 3
    early = m.run(["m"] * 4, [10.0, 10.0, 10.0, 1000.0])
    assert early.value.tolist() == [0.0] * 4
    # The last five are part of the whole: with only 20 readings before them, even a
    # jump of 990 is within two standard deviations (it fires once n > 20, n = 21 here).
    for n, fires in ((20, False), (21, True)):
        jump = m.run(["m"] * (n + 5), [10.0] * n + [1000.0] * 5).value
        assert jump.tolist() == [0.0] * (n + 4) + [float(fires)]


def test_alphabet_sources_and_codes():
    text = "iter(or(atom(a, cur), atom(b, 0 - cur)), 0, +)"
    m = qre(text)
    assert m.alphabet == ("a", "b")  # tags in order of first appearance
    assert qre("alphabet b, a, c;\n" + text).alphabet == ("b", "a", "c")
    codes = qre(text, alphabet=["b", "a"]).run(np.array([1, 0, 1]), [1.0, 2.0, 3.0])
    assert codes.value.tolist() == [1.0, -1.0, 2.0]
    with pytest.raises(QreTypeError, match="declares alphabet"):
        qre("alphabet a, b;\n" + text, alphabet=["a", "c"])


def test_unknown_tags_and_records():
    m = qre("iter(atom(a, cur.x * cur.y), 0, +)", alphabet=["a"])
    out = m.run(["a", "a"], {"x": [1.0, 2.0], "y": [3.0, 4.0]})
    assert out.value.tolist() == [3.0, 11.0]
    with pytest.raises(ValueError, match=r"'z'.*position 1"):
        m.run(["a", "z"], {"x": [1.0, 2.0], "y": [3.0, 4.0]})
    skipped = m.run(["a", "z"], {"x": [1.0, 2.0], "y": [3.0, 4.0]}, unknown_tags="skip")
    assert skipped.value.tolist() == [3.0, 3.0]


def test_nan_and_inf_data_are_ordinary_values():
    m = qre("iter(atom(a, cur), 0, +)")
    out = m.run(["a", "a", "a"], [1.0, float("inf"), float("nan")])
    assert out.status.tolist() == [1, 1, 1]
    assert out.value[1] == float("inf") and np.isnan(out.value[2])


@pytest.mark.parametrize(
    ("text", "error", "message", "line", "column"),
    [
        ("split(atom(a, cur) atom(b, cur), +)", QreSyntaxError, "unexpected", 1, 20),
        ("combine(atom(a, cur), split(atom(a, cur), atom(b, cur), +), +)", QreTypeError,
         "rate a and query 2 has rate a·b", 1, 1),
        ("alphabet a;\niter(atom(a, cur), 0, (x) -> x)", QreTypeError, "lambda takes 1", 2, 23),
        ("prefix_sum(atom(a, cur), 0, +)", QreTypeError, "defined on every word", 1, 12),
        ("alphabet a, b; !(atom(a, cur) > const(1))", QreTypeError,
         "give that side a default, e.g. fill_with(atom(a, cur), const(0))", 1, 18),
        ("or(fill(atom(a, cur)), atom(a, cur))", QreTypeError, "only at the top level", 1, 4),
        ("hist(atom(a, cur))", QreTypeError, "temporal", 1, 6),
        ("alphabet a;\nhist(window(101, cur, +) > const(0))", QreTypeError,
         "sum_over(101, cur) instead", 2, 6),
        ("alphabet a;\nwindow(101, cur, *)", QreSyntaxError, "takes op +, min or max", 2, 1),
        ("atom(c, cur)", None, None, None, None),
    ],
)
def test_errors_are_located(text, error, message, line, column):
    if error is None:
        assert qre(text).alphabet == ("c",)
        return
    with pytest.raises(error) as info:
        qre(text)
    err = info.value
    assert isinstance(err, ValueError)
    assert message in str(err)
    assert (err.line, err.column) == (line, column)
    caret_line = str(err).splitlines()[-1]
    assert caret_line.index("^") == column + 1  # two spaces of indent, 1-based column


VALID = [
    "iter(atom(a, cur), 0, +)",
    "alphabet a, b;\nlet s = sum(cur);\nlet n = count();\ncombine(s, n, (s, n) -> s / n)",
    "split(atom(a, cur), iter(atom(b, cur), 1, *), (x, y) -> x - y)",
    "hist(fill_with(last(cur), const(0)) < const(3) -> once(sum(cur) >= const(2)))",
    "prefix_sum(or(atom(a, 1), atom(b, 2)), 0, max) > count() wsince prev(avg(cur) == avg(cur))",
    "fill(window(2, cur.x, min))",
    LAST_FIVE,
]
_PIECES = [
    *"()[],;<>=!&|-+*/%#._ \n0123456789abxm",
    "atom", "eps", "or", "split", "iter", "combine", "prefix_sum", "fill", "fill_with", "prev",
    "hist", "once", "since", "wsince", "let", "alphabet", "cur", "->", "<->", "&&", "||",
    "sum(", "avg_last(", "const(", "nan", "inf", "1e999", "_",
]


@st.composite
def mutated(draw):
    text = draw(st.sampled_from(VALID))
    for _ in range(draw(st.integers(1, 3))):
        pos = draw(st.integers(0, len(text)))
        how = draw(st.sampled_from(["delete", "insert", "replace"]))
        piece = draw(st.sampled_from(_PIECES))
        if how == "delete":
            text = text[:pos] + text[pos + draw(st.integers(1, 6)):]
        elif how == "insert":
            text = text[:pos] + piece + text[pos:]
        else:
            text = text[:pos] + piece + text[pos + len(piece):]
    return text


@settings(max_examples=300)
@given(mutated())
def test_mutated_queries_raise_only_query_errors(text):
    """Through the whole pipeline (parse, type, compile): a monitor, or a located query error."""
    try:
        qre(text)
    except (QreSyntaxError, QreTypeError) as err:
        assert err.line is None or err.line >= 1
