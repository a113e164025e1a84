"""Signals (issue 21 §1): arithmetic between queries, and comparisons of partial ones.

``β1 op β2`` is, after every event, op of both queries' values on the events so far,
lifted (⊥ wins over ⊤); a comparison whose side is partial is a partial boolean, at
the top level or in arithmetic only: the connectives and past operators refuse it and
name the side to give a default. Random queries with both forms run against the oracle
in tests/test_compile.py (tests/query_strategies.py draws them); here, the meaning on
hand-checked data, the typing rules and their messages.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qre import QreSyntaxError, QreTypeError, qre
from qre.language.ast import Arith, Compare
from qre.language.parser import parse

ENGINES = ("reference", "table", "codegen")


@settings(max_examples=20, deadline=None)
@given(st.lists(st.floats(-1e3, 1e3), min_size=1, max_size=12))
def test_the_recent_mean_minus_the_mean_so_far(values):
    """The issue's first monitor, against numpy on every prefix and every engine."""
    m = qre("alphabet m; avg_last(3, cur) - avg(cur)")
    x = np.array(values)
    want = [x[i - 2:i + 1].mean() - x[:i + 1].mean() if i >= 2 else None
            for i in range(len(x))]
    for engine in ENGINES:
        out = m.run(["m"] * len(x), x, engine=engine)
        assert out.status.tolist() == [0 if w is None else 1 for w in want]
        got = out.value[out.status == 1]
        np.testing.assert_allclose(got, [w for w in want if w is not None], rtol=1e-9,
                                   atol=1e-9)


def test_each_operator_and_the_lifting():
    """+ - * / on the values; ⊥ if a side is ⊥ (even beside ⊤), ⊤ if a side is ⊤."""
    tags, x = ["a", "a", "a"], [1.0, 2.0, -4.0]
    ambiguous = "split(iter(atom(a, cur), 0, +), iter(atom(a, cur), 0, +), +)"  # ⊤
    cases = {
        "sum(cur) + count()": ([1, 1, 1], [2.0, 5.0, 2.0]),
        "sum(cur) - count()": ([1, 1, 1], [0.0, 1.0, -4.0]),
        "sum(cur) * last(cur)": ([1, 1, 1], [1.0, 6.0, 4.0]),
        "sum(cur) / (count() - 1)": ([1, 1, 1], [np.inf, 3.0, -0.5]),
        "(sum(cur) > 2) * 10 + 1": ([1, 1, 1], [1.0, 11.0, 1.0]),
        f"{ambiguous} + 1": ([2, 2, 2], None),
        f"{ambiguous} + atom(a, cur)": ([2, 0, 0], None),  # one event: ⊤ + d; then ⊤ + ⊥
    }
    for text, (status, value) in cases.items():
        for engine in ENGINES:
            out = qre(f"alphabet a; {text}").run(tags, x, engine=engine)
            assert out.status.tolist() == status, (text, engine)
            if value is not None:
                assert out.value.tolist() == value, (text, engine)


def test_precedence_and_sides_of_any_kind():
    q = parse("alphabet a; let p = sum(cur); let r = count();\np + r * p - r / r").query
    assert isinstance(q, Arith) and q.op == "-"
    assert q.left.op == "+" and q.left.right.op == "*" and q.right.op == "/"
    assert isinstance(parse("alphabet a; let p = sum(cur); p + 1 > p * 2").query, Compare)
    # A temporal side is a 0/1 signal; a top-level side (fill) is read as it is.
    m = qre("alphabet a; once(sum(cur) > 0) + fill(atom(a, cur))")
    assert m.run(["a", "a"], [1.0, -5.0]).value.tolist() == [2.0, 2.0]


def test_a_comparison_of_a_partial_side_is_a_partial_boolean():
    m = qre("alphabet m; avg_last(3, cur) > 2")
    for engine in ENGINES:
        out = m.run(["m"] * 4, [1.0, 2.0, 3.0, 10.0], engine=engine)
        assert out.status.tolist() == [0, 0, 1, 1]
        assert out.value[2:].tolist() == [0.0, 1.0]


@pytest.mark.parametrize("template", ["!{p}", "{p} && {t}", "{t} || {p}", "{p} -> {t}",
                                      "{t} <-> {p}", "prev({p})", "hist({p})", "once({p})",
                                      "{p} since {t}", "{t} wsince {p}"])
def test_connectives_and_past_operators_refuse_a_partial_boolean(template):
    """The choice for booleans built from partial signals: refused, naming the side."""
    text = "alphabet m; " + template.format(p="(last(cur) > 2)", t="(sum(cur) > 0)")
    with pytest.raises(QreTypeError, match=r"needs its operand defined after every event, "
                       r"but .* is undefined or conflicting after ε \(its left side is\): "
                       r"give that side a default"):
        qre(text)
    # ... and accepted once that side has one.
    qre("alphabet m; " + template.format(p="(fill_with(last(cur), const(0)) > 2)",
                                         t="(sum(cur) > 0)"))


def test_the_papers_comparisons_keep_their_meaning():
    """Total sides: a comparison of §5.3.1, usable under the past operators as before."""
    m = qre("alphabet m; once(sum(cur) > 3)")
    assert m.run(["m"] * 3, [1.0, 5.0, -9.0]).value.tolist() == [0.0, 1.0, 1.0]


def test_arithmetic_stays_at_the_top_level():
    with pytest.raises(QreTypeError, match=r"iter expects a base quantitative query here.*"
                       r"combine\(q1, q2, \(x, y\) -> x - y\)"):
        qre("alphabet a; iter(atom(a, cur) - atom(a, 1), 0, +)")
    with pytest.raises(QreTypeError, match=r"a default for each side of - that is not"):
        qre("alphabet m; !(avg_last(2, cur) - avg(cur) > 0)")


def test_a_refusal_quotes_the_query_as_written():
    """Sugar and names as the user wrote them (blanks collapsed), not their expansion."""
    text = "alphabet m;\nlet recent = avg_last(3,\n    cur);\nhist(recent > 1)"
    with pytest.raises(QreTypeError, match=r"but recent > 1 is undefined .* e\.g\. "
                       r"fill_with\(avg_last\(3, cur\), const\(0\)\) at line 4, column 6"):
        qre(text)


def test_functions_of_signals_are_pointwise():
    """max, abs, pow, if of queries (issue 21 §1): the TERM function after every event,
    ⊥ where an argument is ⊥; max(t) with one term argument stays the running maximum."""
    m = qre("alphabet m; max(avg_last(2, cur), avg(cur))")
    out = m.run(["m"] * 3, [1.0, 5.0, 0.0])
    assert out.status.tolist() == [0, 1, 1] and out.value[1:].tolist() == [3.0, 2.5]
    m = qre("alphabet m; let r = avg(cur); pow(r, 2) + if(r > 2, 1, 0)")
    assert m.run(["m"] * 3, [1.0, 5.0, 0.0]).value.tolist() == [1.0, 10.0, 4.0]
    spread = qre("alphabet m; abs(avg_last(2, cur) - avg(cur)) > 1")
    assert spread.run(["m"] * 4, [1.0, 5.0, 0.0, 20.0]).value[1:].tolist() == [0.0, 0.0, 1.0]
    assert qre("alphabet m; max(cur)").run(["m"] * 2, [3.0, 1.0]).value.tolist() == [3.0, 3.0]


def test_misused_signal_functions_say_what_to_write():
    with pytest.raises(QreSyntaxError, match=r"max\(q1, q2\) of signals takes 2"):
        qre("alphabet m; max(avg(cur), 1, 2)")
    with pytest.raises(QreTypeError, match=r"default for each argument of abs"):
        qre("alphabet m; once(abs(avg_last(2, cur)) > 1)")
