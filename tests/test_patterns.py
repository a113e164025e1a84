"""CER patterns (issue 7, points 4 and 5): per-event match counts, matched, within, and
T-CER window counts, every engine against brute-force enumeration of matches."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from qre import qre
from qre.language import ast
from qre.language.errors import QreTypeError
from qre.language.printer import to_text
from tests import match_oracle as oracle
from tests.window_oracle import as_float, nearest

ALPHABET = ("a", "b", "c")
ENGINES = st.sampled_from(["table", "codegen", "reference"])


def patterns(max_leaves: int = 4):
    leaf = st.sampled_from(ALPHABET).map(ast.PatternTag)

    def extend(children):
        negation = st.lists(st.sampled_from(ALPHABET), min_size=1, max_size=2,
                            unique=True).map(lambda t: ast.PatternNot(tuple(t)))
        seq = st.tuples(children, st.one_of(st.none(), negation), children).map(
            lambda x: ast.PatternSeq((x[0], x[2]) if x[1] is None else x))
        return st.one_of(
            seq,
            st.builds(ast.PatternOr, children, children),
            st.builds(ast.PatternAnd, children, children),
            st.builds(ast.PatternPlus, children),
        )

    return st.recursive(leaf, extend, max_leaves=max_leaves)


words = st.lists(st.sampled_from(ALPHABET), max_size=7)


def text(query: ast.Query) -> str:
    return "alphabet a, b, c;\n" + to_text(query)


@given(patterns(), words, ENGINES)
def test_matches_counts_every_match_ending_here(p, tags, engine):
    m = qre(text(ast.Matches(p, True)))
    want = oracle.ending_counts(p, tags, list(range(len(tags))))
    out = m.run(tags, engine=engine)
    assert out.status.tolist() == [1] * len(tags)
    np.testing.assert_array_equal(out.value, np.array(want, dtype=float))


@given(patterns(), words, ENGINES)
def test_matched_says_whether_a_match_ends_here(p, tags, engine):
    m = qre(text(ast.Matches(p, False)))
    want = [float(c > 0) for c in oracle.ending_counts(p, tags, list(range(len(tags))))]
    np.testing.assert_array_equal(m.run(tags, engine=engine).value, np.array(want))


@st.composite
def timed_word(draw, max_len: int = 7):  # type: ignore[no-untyped-def]
    tags = draw(st.lists(st.sampled_from(ALPHABET), max_size=max_len))
    times = draw(st.lists(st.integers(0, 12), min_size=len(tags), max_size=len(tags)))
    return tags, times


def time_ordered(tags: list[str], times: list[int]) -> tuple[list[str], list[int]]:
    """The order of run_timed: time, then tag text, then input row."""
    order = sorted(range(len(tags)), key=lambda k: (times[k], tags[k], k))
    return [tags[k] for k in order], [times[k] for k in order]


@given(patterns(), timed_word(), st.integers(1, 6), ENGINES)
def test_matched_within_a_duration(p, word, seconds, engine):
    m = qre(text(ast.Matches(ast.PatternWithin(p, seconds * 10**9), False)))
    tags, times = time_ordered(*word)
    want = [float(c > 0) for c in oracle.ending_counts(ast.PatternWithin(p, seconds * 10**9),
                                                       tags, times)]
    got = m.run_timed(word[1], word[0], engine=engine)
    assert got["time"].tolist() == times and got["tag"].tolist() == tags
    np.testing.assert_array_equal(got["value"].to_numpy(), np.array(want))


@st.composite
def float_timed_word(draw, max_len: int = 7):  # type: ignore[no-untyped-def]
    """Float seconds on a grid of 0.1 s (whose differences are not exact in floats: 0.3 − 0.1
    < 0.2), a hair off it, or anywhere."""
    tags = draw(st.lists(st.sampled_from(ALPHABET), max_size=max_len))
    grid = st.integers(0, 12).map(lambda k: k / 10)
    time = st.one_of(grid, grid.map(lambda t: t + 4e-7), st.floats(0, 1.2))
    return tags, draw(st.lists(time, min_size=len(tags), max_size=len(tags)))


@given(patterns(), float_timed_word(), st.sampled_from([100, 200, 300, 1000]), ENGINES)
def test_within_float_times_compares_whole_microseconds(p, word, ms, engine):
    # Times are rounded to the microsecond (the oracle rounds alike), then compared there.
    within = ast.PatternWithin(p, ms * 10**6)
    m = qre(text(ast.Matches(within, False)))
    us = [nearest(t, 10**6) for t in word[1]]
    tags, times = time_ordered(word[0], us)
    want = [float(c > 0) for c in oracle.ending_counts(within, tags, times, unit_ns=1000)]
    got = m.run_timed(word[1], word[0], engine=engine)
    assert got["time"].tolist() == [as_float(t, 10**6) for t in times]
    assert got["tag"].tolist() == tags
    np.testing.assert_array_equal(got["value"].to_numpy(), np.array(want))


def test_within_bound_is_exact_for_float_times():
    # 0.3 − 0.1 is 0.19999999999999998 in floats, but 200000 µs exactly: not within 200ms.
    m = qre("alphabet a, b; matched(within(seq(a, b), 200ms))")
    assert m.run_timed([0.1, 0.3], ["a", "b"])["value"].tolist() == [0.0, 0.0]
    assert m.run_timed([0.1, 0.2999994], ["a", "b"])["value"].tolist() == [0.0, 1.0]


@given(patterns(max_leaves=3), timed_word(), st.integers(1, 4), st.integers(1, 3), ENGINES)
def test_window_counts_each_match_in_the_instance_where_it_starts(p, word, slide, slots,
                                                                  engine):
    size = slide * slots
    m = qre(text(ast.Aggregate(ast.Matches(p, True), size * 10**9, slide * 10**9)))
    tags, times = time_ordered(*word)
    found = oracle.matches(p, tags, times)
    want = []
    if times:
        for l in range(min(times) // slide - slots + 1, max(times) // slide + 1):  # noqa: E741
            lo = l * slide
            if any(lo <= t < lo + size for t in times):
                n = sum(1 for f, last in found if lo <= times[f] < lo + slide
                        and times[last] < lo + size)
                want.append((lo + size - 1, float(n)))
    got = m.run_timed(word[1], word[0], engine=engine)
    assert list(zip(got["time"], got["value"], strict=True)) == want
    # T-CER: each match shorter than size - slide + δ is counted exactly once.
    short = sum(1 for f, last in found if times[last] - times[f] <= size - slide)
    assert short <= sum(v for _, v in want) <= len(found)


def test_equal_times_are_ordered_by_tag_text_not_alphabet_position():
    m = qre("alphabet login, fail; matched(seq(fail, login))")
    got = m.run_timed([5, 5], ["login", "fail"])
    assert got["tag"].tolist() == ["fail", "login"] and got["value"].tolist() == [0.0, 1.0]


def test_not_is_absence_between_two_events():
    m = qre("alphabet login, fail, ok; matched(seq(fail, not(ok), fail))")
    tags = ["fail", "ok", "fail", "login", "fail"]
    assert m.run(tags).value.tolist() == [0, 0, 0, 0, 1]


def test_pattern_errors_are_located():
    with pytest.raises(QreTypeError, match="register per start time"):
        qre("alphabet a, b; matches(within(seq(a, b), 5s))")
    with pytest.raises(QreTypeError, match="whole pattern"):
        qre("alphabet a, b; matched(seq(a, within(b, 5s)))")
    with pytest.raises(QreTypeError, match="within in a window"):
        qre("alphabet a, b; aggregate(matches(within(seq(a, b), 1s)), 5s)")
    with pytest.raises(QreTypeError, match="window counts matches"):
        qre(ast.Aggregate(ast.Matches(ast.PatternTag("a"), False), 10, 10), ["a"])
    with pytest.raises(QreTypeError, match="not an event tag"):
        qre("alphabet a, b; matched(seq(a, z))")
    with pytest.raises(QreTypeError, match="cannot be part of another one"):
        qre("alphabet a, b; matched(seq(a, b)) > const(0)")
