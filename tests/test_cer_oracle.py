"""The brute-force match enumerator (dt/cer/oracle.py) on hand-computed examples: Flink
CEP's documented contiguity examples, junctions, forbidden conditions, occurrences,
Repeat bounds, Within and Gap, skip policies, consumption and a negation at the end."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

import numpy as np
import pytest

from dt.cer.oracle import enumerate_matches
from dt.cer.pattern import (
    Alt,
    Contiguity,
    Gap,
    Junction,
    Match,
    MatchQuery,
    Pattern,
    Repeat,
    Seq,
    Skip,
    SkipKind,
    Var,
    Within,
)

TAGS = "abcdx"
"""Condition c is 'the event's tag is TAGS[c]'."""

A, B, C, D = (TAGS.index(t) for t in "abcd")
STRICT, NEXT, ANY = Junction(Contiguity.STRICT), Junction(Contiguity.NEXT), Junction()


def sat_of(tags: str) -> np.ndarray:
    """The condition matrix of space-separated one-letter tags (digits after are labels)."""
    words = tags.split()
    return np.array([[w[0] == t for t in TAGS] for w in words], dtype=bool).reshape(-1, len(TAGS))


def run(pattern: Pattern | MatchQuery, tags: str, times: Sequence[int] | None = None
        ) -> list[Match]:
    """The oracle's kept matches over the tagged events (times 0, 1, … unless given)."""
    query = pattern if isinstance(pattern, MatchQuery) else MatchQuery(pattern)
    sat = sat_of(tags)
    return enumerate_matches(query, sat, list(range(len(sat))) if times is None else times)


def var(tag: str) -> Var:
    """The variable named after its tag."""
    return Var(tag, TAGS.index(tag))


def seq(*parts: Pattern, junction: Junction = ANY) -> Seq:
    """The parts with one kind of junction between all of them."""
    return Seq(parts, (junction,) * (len(parts) - 1))


def plus(body: Pattern, loop: Junction = ANY) -> Repeat:
    return Repeat(body, 1, None, loop)


def visible(matches: list[Match]) -> list[tuple[int, ...]]:
    """The events of each match, in order."""
    return [m.events for m in matches]


# Flink CEP's documentation ("Combining Patterns", contiguity within looping patterns):
# pattern "c" followedBy "a" oneOrMore followedBy "b" on "c d a1 a2 a3 d a4 b". Events:
# 0 c, 1 d, 2 a1, 3 a2, 4 a3, 5 d, 6 a4, 7 b. Between stages followedBy = NEXT, so the
# first a is a1 (the first a after c) and b is event 7; the loop's junction decides the rest.
FLINK_INPUT = "c d a1 a2 a3 d a4 b"


def flink(loop: Junction) -> Pattern:
    return Seq((var("c"), plus(var("a"), loop), var("b")), (NEXT, NEXT))


def test_flink_consecutive():
    """consecutive(): the a's are contiguous from a1, a4 is cut off by d (event 5). All are
    emitted at b and start at c: ordered by their events' numbers as tuples."""
    assert run(flink(STRICT), FLINK_INPUT) == [
        Match(7, (0, 2, 3, 4, 7), ("c", "a", "a", "a", "b")),
        Match(7, (0, 2, 3, 7), ("c", "a", "a", "b")),
        Match(7, (0, 2, 7), ("c", "a", "b")),
    ]


def test_flink_relaxed():
    """Relaxed (default): each a is the next a, d is skipped, so a4 extends a1 a2 a3."""
    assert visible(run(flink(NEXT), FLINK_INPUT)) == [
        (0, 2, 3, 4, 6, 7), (0, 2, 3, 4, 7), (0, 2, 3, 7), (0, 2, 7)]


def test_flink_allow_combinations():
    """allowCombinations(): a1 then any subset of a2, a3, a4 — 8 matches, ordered by events."""
    expected = sorted((0, 2, *rest, 7) for k in range(4) for rest in combinations((3, 4, 6), k))
    matches = run(flink(ANY), FLINK_INPUT)
    assert visible(matches) == expected and len(expected) == 8
    assert all(m.emitted == 7 and m.names == ("c", *"a" * (len(m.events) - 2), "b")
               for m in matches)


# seq(a, b) on "a c a b b": events 0 a, 1 c, 2 a, 3 b, 4 b.
AB_INPUT = "a c a b b"


def test_strict_next_any():
    """STRICT: b right after a, only (2, 3). NEXT: b is the first b after its a, (0, 3) and
    (2, 3). ANY: every a before every b, ordered by the last event, then the first."""
    assert visible(run(seq(var("a"), var("b"), junction=STRICT), AB_INPUT)) == [(2, 3)]
    assert visible(run(seq(var("a"), var("b"), junction=NEXT), AB_INPUT)) == [(0, 3), (2, 3)]
    assert run(seq(var("a"), var("b")), AB_INPUT) == [
        Match(3, (0, 3), ("a", "b")), Match(3, (2, 3), ("a", "b")),
        Match(4, (0, 4), ("a", "b")), Match(4, (2, 4), ("a", "b"))]


def test_next_reads_the_next_events_condition():
    """NEXT asks that no event in between satisfies y's condition only: on "a c b" both
    a→c (alt's c) and a→b (c in between does not satisfy b) hold."""
    pattern = Seq((var("a"), Alt((var("b"), var("c")))), (NEXT,))
    assert run(pattern, "a c b") == [Match(1, (0, 1), ("a", "c")), Match(2, (0, 2), ("a", "b"))]


def test_forbid():
    """seq(a, not(c), b): no c strictly between a and b, so a0 (c at 1 follows it) pairs
    with no b; with NEXT as well, only the first b after a2."""
    not_c = Junction(Contiguity.ANY, frozenset({C}))
    assert visible(run(Seq((var("a"), var("b")), (not_c,)), AB_INPUT)) == [(2, 3), (2, 4)]
    next_not_c = Junction(Contiguity.NEXT, frozenset({C}))
    assert visible(run(Seq((var("a"), var("b")), (next_not_c,)), AB_INPUT)) == [(2, 3)]


def test_markers_around_an_empty_part_are_kept():
    """seq(a, c?, b) with ANY then STRICT: with c absent both markers lie between a and b,
    the last (STRICT) decides: "a b" matches, "a x b" does not; "a c b" matches with c only
    (without c, b is not right after a). The forbid of a marker next to an empty part
    counts too."""
    pattern = Seq((var("a"), Repeat(var("c"), 0, 1), var("b")), (ANY, STRICT))
    assert visible(run(pattern, "a b")) == [(0, 1)]
    assert visible(run(pattern, "a x b")) == []
    assert run(pattern, "a c b") == [Match(2, (0, 1, 2), ("a", "c", "b"))]
    not_d = Junction(Contiguity.ANY, frozenset({D}))
    forbidding = Seq((var("a"), Repeat(var("c"), 0, 1), var("b")), (not_d, ANY))
    assert visible(run(forbidding, "a d b")) == []
    assert visible(run(forbidding, "a x b")) == [(0, 2)]


def test_markers_of_nested_seqs_make_one_run():
    """seq(seq(a, c?) with not d, b) with NEXT: without c the inner junction (forbid d) and
    the outer (NEXT) both lie between a and b; with c, only NEXT lies between c and b."""
    not_d = Junction(Contiguity.ANY, frozenset({D}))
    pattern = Seq((Seq((var("a"), Repeat(var("c"), 0, 1)), (not_d,)), var("b")), (NEXT,))
    assert visible(run(pattern, "a d b")) == []
    assert visible(run(pattern, "a x b")) == [(0, 2)]
    assert visible(run(pattern, "a b b")) == [(0, 1)]
    assert run(pattern, "a c d b") == [Match(3, (0, 1, 3), ("a", "c", "b"))]


def test_alt_of_the_same_variable_counts_twice():
    """alt(a, a): two Var nodes, two occurrences, two matches that look the same; a skip
    policy sees them as two as well (TO_NEXT keeps the first)."""
    twice = Alt((var("a"), var("a")))
    assert run(twice, "a") == [Match(0, (0,), ("a",))] * 2
    assert run(MatchQuery(twice, Skip(SkipKind.TO_NEXT)), "a") == [Match(0, (0,), ("a",))]
    named = Alt((Var("x", A), Var("y", A)))
    assert run(named, "a") == [Match(0, (0,), ("x",)), Match(0, (0,), ("y",))]


def test_plus_plus_reads_once():
    """plus(plus(a)) on "a a": 0 1 parses as one outer iteration of two inner ones or two
    outer iterations of one, with the same occurrences (unbounded loops: copy 1) — once."""
    assert run(plus(plus(var("a"))), "a a") == [
        Match(0, (0,), ("a",)), Match(1, (0, 1), ("a", "a")), Match(1, (1,), ("a",))]


def test_bounded_copies_are_distinct():
    """times(plus(a), 1, 2) on "a a": the outer loop is bounded, so its second iteration is
    copy 2 — 0 1 as one outer iteration and as two are two matches."""
    assert visible(run(Repeat(plus(var("a")), 1, 2), "a a")) == [(0,), (0, 1), (0, 1), (1,)]


def test_occurrences_split_between_repeats():
    """seq(times(a, 1, 2), times(a, 0, 1)) on "a a": 0 1 is either both in the first Repeat
    or one in each — two matches; a single a is only the first Repeat's."""
    pattern = seq(Repeat(var("a"), 1, 2), Repeat(var("a"), 0, 1))
    assert visible(run(pattern, "a a")) == [(0,), (0, 1), (0, 1), (1,)]


def test_repeat_bounds():
    """times(a, 2, 3) with a STRICT loop on "a a a a": runs of 2 or 3 consecutive a's."""
    pattern = Repeat(var("a"), 2, 3, STRICT)
    assert visible(run(pattern, "a a a a")) == [
        (0, 1), (0, 1, 2), (1, 2), (1, 2, 3), (2, 3)]
    assert visible(run(Repeat(var("a"), 0, 2), "a a a")) == [
        (0,), (0, 1), (1,), (0, 2), (1, 2), (2,)]


def test_nullable_body_makes_the_count_a_bound():
    """times(a?, 2, 2): the body is nullable, so one non-empty iteration suffices; at most
    two non-empty iterations, so no three a's."""
    pattern = Repeat(Repeat(var("a"), 0, 1), 2, 2)
    assert visible(run(pattern, "a")) == [(0,)]
    assert visible(run(pattern, "a a a")) == [
        (0,), (0, 1), (1,), (0, 2), (1, 2), (2,)]


def test_within_boundary():
    """within(seq(a, b), 5) with a at 0 and b's at 4 and 5: 4 < 5 holds, 5 < 5 does not;
    MatchQuery.within bounds the whole match the same way."""
    times = [0, 4, 5]
    pattern = Within(seq(var("a"), var("b")), 5)
    assert visible(run(pattern, "a b b", times)) == [(0, 1)]
    assert visible(run(MatchQuery(seq(var("a"), var("b")), within=5), "a b b", times)) == [
        (0, 1)]


def test_within_is_per_instance():
    """seq(c, within(seq(a, b), 2)): only a→b is bounded, not c→a; within each iteration
    of plus(within(seq(a, b), 2)) the bound holds, across iterations it does not apply."""
    pattern = seq(var("c"), Within(seq(var("a"), var("b")), 2))
    assert visible(run(pattern, "c a b", [0, 10, 11])) == [(0, 1, 2)]
    assert visible(run(pattern, "c a b", [0, 10, 12])) == []
    loop = plus(Within(seq(var("a"), var("b")), 2))
    assert visible(run(loop, "a b a b", [0, 1, 10, 11])) == [(0, 1), (0, 1, 2, 3), (2, 3)]


def test_gap_boundary():
    """gap(plus(a), 3) with a's at 0, 2, 5: 0→2 (2 < 3) holds, 2→5 (3) does not, and 0→5
    (skipping event 1) neither."""
    assert visible(run(Gap(plus(var("a")), 3), "a a a", [0, 2, 5])) == [
        (0,), (0, 1), (1,), (2,)]


# seq(a, plus(b), c) on "a a b a b c": 0 a, 1 a, 2 b, 3 a, 4 b, 5 c. All junctions ANY.
# Every match is emitted at 5, in this order: a0 or a1 with b's {2, 4}, {2}, {4} (tuple
# order), then a3 with b4.
SKIP_INPUT = "a a b a b c"
ALL_SKIP = [(0, 2, 4, 5), (0, 2, 5), (0, 4, 5), (1, 2, 4, 5), (1, 2, 5), (1, 4, 5), (3, 4, 5)]


@pytest.mark.parametrize(("skip", "expected"), [
    # every match
    (Skip(SkipKind.NO_SKIP), ALL_SKIP),
    # one match per first event, the first in order
    (Skip(SkipKind.TO_NEXT), [(0, 2, 4, 5), (1, 2, 4, 5), (3, 4, 5)]),
    # (0, 2, 4, 5) discards every first event in 0..5
    (Skip(SkipKind.PAST_LAST), [(0, 2, 4, 5)]),
    # (0, 2, 4, 5) discards first events 0 and 1 (before its first b, 2); a3 stays
    (Skip(SkipKind.TO_FIRST, "b"), [(0, 2, 4, 5), (3, 4, 5)]),
    # (0, 2, 4, 5) discards first events 0..3 (before its last b, 4)
    (Skip(SkipKind.TO_LAST, "b"), [(0, 2, 4, 5)]),
    # a's first event is m''s first: an empty range, nothing discarded
    (Skip(SkipKind.TO_FIRST, "a"), ALL_SKIP),
    (Skip(SkipKind.TO_LAST, "a"), ALL_SKIP),
])
def test_skip_policies(skip: Skip, expected: list[tuple[int, ...]]):
    pattern = seq(var("a"), plus(var("b")), var("c"))
    assert visible(run(MatchQuery(pattern, skip), SKIP_INPUT)) == expected


def test_skip_to_first_absent_variable_falls_back_to_next():
    """seq(a, b?, c): on "a a c" the kept (0, 2) has no b, so TO_FIRST b acts as TO_NEXT and
    keeps (1, 2); on "a a b c" the kept (0, 2, 3) discards first events 0 and 1."""
    pattern = seq(var("a"), Repeat(var("b"), 0, 1), var("c"))
    query = MatchQuery(pattern, Skip(SkipKind.TO_FIRST, "b"))
    assert visible(run(query, "a a c")) == [(0, 2), (1, 2)]
    assert visible(run(query, "a a b c")) == [(0, 2, 3)]


def test_skip_across_emission_events():
    """seq(a, b) on "a a b b": order (0, 2), (1, 2) at 2, then (0, 3), (1, 3) at 3. TO_NEXT
    keeps the first of each first event; PAST_LAST's (0, 2) discards first events 0..2."""
    pattern = seq(var("a"), var("b"))
    assert visible(run(MatchQuery(pattern, Skip(SkipKind.TO_NEXT)), "a a b b")) == [
        (0, 2), (1, 2)]
    assert visible(run(MatchQuery(pattern, Skip(SkipKind.PAST_LAST)), "a a b b")) == [(0, 2)]


def test_consume():
    """seq(a, b) on "a a b b", consuming: (0, 2) kept, (1, 2) shares 2, (0, 3) shares 0,
    (1, 3) is disjoint and kept."""
    query = MatchQuery(seq(var("a"), var("b")), consume=True)
    assert visible(run(query, "a a b b")) == [(0, 2), (1, 3)]


def test_ending_with_within():
    """seq(a, b) within 5, not followed by c. (0, 1) at 0, 1: c at 3 < 5 discards it.
    (3, 4) at 10, 11: only d (14) before 15, kept; emitted at the first event at 15 or later,
    event 6 (16) — or at n when the input ends first."""
    query = MatchQuery(seq(var("a"), var("b")), within=5, ending=frozenset({C}))
    times = [0, 1, 3, 10, 11, 14, 16, 17]
    assert run(query, "a b c a b d x x", times) == [Match(6, (3, 4), ("a", "b"))]
    assert run(query, "a b c a b d", times[:6]) == [Match(6, (3, 4), ("a", "b"))]
    assert run(query, "a b c a b", times[:5]) == [Match(5, (3, 4), ("a", "b"))]


def test_ending_boundary_and_order():
    """A c at exactly first + within is outside the window: the match is kept and emitted
    at that c. Matches released together are ordered by first event, then events."""
    query = MatchQuery(seq(var("a"), var("b")), within=5, ending=frozenset({C}))
    assert run(query, "a b c", [0, 1, 5]) == [Match(2, (0, 1), ("a", "b"))]
    assert run(query, "a b c", [0, 1, 4]) == []
    assert visible(run(query, "a a b b x", [0, 1, 2, 3, 9])) == [
        (0, 2), (0, 3), (1, 2), (1, 3)]
    assert [m.emitted for m in run(query, "a a b b x", [0, 1, 2, 3, 9])] == [4] * 4


def test_bad_input():
    """Too many events, a matrix of the wrong shape, decreasing times."""
    query = MatchQuery(var("a"))
    with pytest.raises(ValueError, match="at most"):
        run(query, " ".join("a" * 13))
    with pytest.raises(ValueError, match="shape"):
        enumerate_matches(query, sat_of("a a"), [0])
    with pytest.raises(ValueError, match="decrease"):
        run(query, "a a", [1, 0])


def test_greedy_exclusion_markers():
    """seq(a, greedy r, c) where the x events satisfy both b and c (column 4 set for x
    is read as b too): the event after the repetition must not start an iteration —
    after its iterations, after its empty parse (star), not once it is at ``hi``."""
    sat = sat_of("a b x x")
    sat[:, B] |= sat[:, TAGS.index("x")]
    sat[:, C] |= sat[:, TAGS.index("x")]

    def events(lo: int, hi: int | None, greedy: bool) -> list[tuple[int, ...]]:
        r = Repeat(var("b"), lo, hi, STRICT, greedy)
        return visible(enumerate_matches(MatchQuery(seq(var("a"), r, var("c"),
                                                        junction=STRICT)), sat, [0, 1, 2, 3]))

    assert events(1, None, False) == [(0, 1, 2), (0, 1, 2, 3)]
    assert events(1, None, True) == events(0, None, True) == []
    assert events(0, 1, False) == [(0, 1, 2)]
    assert events(0, 2, True) == [(0, 1, 2, 3)]   # b, x taken: at hi, the last x is c
    with pytest.raises(ValueError, match="can end a match"):
        MatchQuery(seq(var("a"), Repeat(var("b"), 1, None, greedy=True)))
    with pytest.raises(ValueError, match="fixed count"):
        Repeat(var("b"), 2, 2, greedy=True)


def test_an_exclusion_joins_the_markers_it_follows():
    """A greedy repetition whose body ends with an empty part: the exclusion marker and
    that part's junction (with its not) are one run between the body's last event and
    the next: a d between b and x still forbids the match."""
    body = Seq((var("b"), Repeat(var("c"), 0, None)), (Junction(forbid=frozenset({D})),))
    for greedy in (False, True):
        query = MatchQuery(seq(var("a"), Repeat(body, 1, None, greedy=greedy), var("x")))
        assert run(query, "a b x") == [Match(2, (0, 1, 2), ("a", "b", "x"))]
        assert run(query, "a b d x") == []
