"""Random match queries and keyed event words for the CER tests (issue 26).

Shared by tests/test_cer_kernel.py and the runtime tests: a seed gives one query of
:mod:`dt.cer.pattern` (every construct, contiguity, forbid, within and gap on
sub-patterns, greedy repetitions, skip policy, consumption, a negation at the end) and
one word (``sat``, ``times``), small enough for the brute-force oracle.
"""

from __future__ import annotations

import random

import numpy as np

from dt.cer.pattern import (
    Alt,
    Contiguity,
    Gap,
    Junction,
    MatchQuery,
    Pattern,
    Repeat,
    Seq,
    Skip,
    SkipKind,
    Var,
    Within,
    ends_greedy,
    nullable,
    variables,
)

NAMES = ("a", "b", "c", "d")


def random_junction(rng: random.Random, conditions: int) -> Junction:
    forbid = frozenset(rng.sample(range(conditions), 1)) if rng.random() < 0.15 else frozenset()
    return Junction(rng.choice(list(Contiguity)), forbid)


def random_pattern(rng: random.Random, conditions: int, depth: int = 3, *,
                   timed: bool = True) -> Pattern:
    """A random pattern over conditions 0..conditions − 1 (a Var's name is its
    condition's, except now and then another variable on the same condition); without
    ``timed``, no Within or Gap node."""
    roll = rng.random()
    if depth == 0 or roll < 0.3:
        cond = rng.randrange(conditions)
        name = NAMES[cond] if rng.random() < 0.85 else NAMES[(cond + 1) % conditions] + "2"
        return Var(name, cond)
    if roll < 0.55:
        parts = tuple(random_pattern(rng, conditions, depth - 1, timed=timed)
                      for _ in range(rng.choice((2, 2, 3))))
        return Seq(parts, tuple(random_junction(rng, conditions) for _ in parts[1:]))
    if roll < 0.62:
        return Alt(tuple(random_pattern(rng, conditions, depth - 1, timed=timed)
                         for _ in range(2)))
    if roll < 0.87 or not timed:
        lo = rng.choice((0, 1, 1, 2))
        hi = rng.choice((None, None, max(lo, 1), lo + 1, lo + 2))
        body = random_pattern(rng, conditions, depth - 1, timed=timed)
        greedy = rng.random() < 0.3 and not nullable(body) and hi != lo
        return Repeat(body, lo, hi, random_junction(rng, conditions), greedy)
    body = random_pattern(rng, conditions, depth - 1)
    return (Within if rng.random() < 0.6 else Gap)(body, rng.randint(1, 4))


def random_query(rng: random.Random, conditions: int = 3, *,
                 timeouts: bool = False) -> MatchQuery:
    """A random query; with ``timeouts``, one that reports them (a within, a pattern at
    most two levels deep: the oracle's timeouts are costly)."""
    pattern = (random_pattern(rng, conditions, 2) if timeouts
               else random_pattern(rng, conditions))
    if ends_greedy(pattern):  # refused: something must follow a greedy repetition
        cond = rng.randrange(conditions)
        pattern = Seq((pattern, Var(NAMES[cond], cond)), (random_junction(rng, conditions),))
    kind = rng.choice(list(SkipKind))
    var = rng.choice(variables(pattern)) if kind in (SkipKind.TO_FIRST, SkipKind.TO_LAST) else None
    within = rng.randint(1, 5) if timeouts or rng.random() < 0.5 else None
    ending = (frozenset(rng.sample(range(conditions), 1))
              if within is not None and rng.random() < 0.4 else frozenset())
    return MatchQuery(pattern, Skip(kind, var), rng.random() < 0.2, within, ending, timeouts)


def random_greedy_query(rng: random.Random, conditions: int = 3) -> MatchQuery:
    """A query around a greedy repetition (``seq(p, greedy r, q)``, small parts) for
    words whose events satisfy several conditions: where greedy changes the matches."""
    while nullable(body := random_pattern(rng, conditions, 1, timed=False)):
        pass
    lo = rng.choice((0, 1, 1, 2))
    hi = rng.choice((None, None, lo + 1, lo + 2))
    parts = (random_pattern(rng, conditions, 1, timed=False),
             Repeat(body, lo, hi, random_junction(rng, conditions), greedy=True),
             Var(NAMES[cond := rng.randrange(conditions)], cond))
    pattern = Seq(parts, tuple(random_junction(rng, conditions) for _ in parts[1:]))
    return MatchQuery(pattern, Skip(rng.choice((SkipKind.NO_SKIP, SkipKind.PAST_LAST))),
                      within=rng.choice((None, rng.randint(2, 6))))


def random_bounded_query(rng: random.Random, conditions: int = 3) -> MatchQuery:
    """A query reporting timeouts whose pattern has a gap or an inner within (tighter
    than the query's within), between two variables: where partial matches time out
    before their start + within."""
    body = random_pattern(rng, conditions, 1, timed=False)
    if rng.random() < 0.5:
        body = Repeat(body, 1, rng.choice((None, 2)), random_junction(rng, conditions))
    inner = (Gap if rng.random() < 0.5 else Within)(body, rng.randint(1, 3))
    first, last = (Var(NAMES[c], c) for c in (rng.randrange(conditions),
                                               rng.randrange(conditions)))
    pattern = Seq((first, inner, last), tuple(random_junction(rng, conditions) for _ in "ab"))
    return MatchQuery(pattern, Skip(rng.choice((SkipKind.NO_SKIP, SkipKind.PAST_LAST))),
                      rng.random() < 0.2, within=rng.randint(3, 7), timeouts=True)


def random_word(rng: random.Random, n: int, conditions: int = 3, *,
                overlapping: bool | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``sat`` bool[n, conditions] — one condition per event, or (``overlapping``; by
    default a third of the words) any — and non-decreasing times."""
    sat = np.zeros((n, conditions), dtype=np.bool_)
    if overlapping is None:
        overlapping = rng.random() < 0.33
    for i in range(n):
        if overlapping:
            sat[i] = [rng.random() < 0.45 for _ in range(conditions)]
        else:
            sat[i, rng.randrange(conditions)] = True
    times = np.cumsum([rng.choice((0, 1, 1, 2)) for _ in range(n)]).astype(np.int64)
    return sat, times
