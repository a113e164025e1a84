"""The brute-force match enumerator: the meaning of a :class:`~dt.cer.pattern.MatchQuery`,
and the tests' oracle for the match kernel.

Pipeline position: beside the engines, not in front of them — it reads the pattern IR of
:mod:`dt.cer.pattern` and shares no code with :mod:`dt.cer.automaton` or :mod:`codegen.cer`.

Method, straight from the specification in :mod:`dt.cer.pattern`'s docstring: for every
non-empty subsequence of the events, every parse of the pattern over exactly those events,
recursively over the IR. A parse gives each event its occurrence (the :class:`Var`'s path
in the tree and the copy of each enclosing :class:`Repeat`'s iteration) and a token stream
(events and junction markers in document order). Every constraint is checked as soon as
what it reads is known, so failing parses are dropped early: ``Within`` and ``Gap``
instances where they are parsed, the markers between two consecutive events where a
junction brings the two into one stream (each run of markers kept as one marker with
what the check reads of it: the last one's contiguity, every one's forbid).
Parses with the same events and occurrences are one match, kept when any of them
satisfies the pattern; then emission order, the negation at the end, the skip policy and
consumption across matches. A node's parses from a position are memoized per
subsequence, equal parses kept once. Exponential all the same: for short inputs only
(``MAX_EVENTS``; nine events take well under a second, twelve up to seconds).

Choices where the specification leaves room (each is the natural reading):

* markers before a match's first event or after its last (a leading or trailing empty
  part of a ``Seq``) lie between no two events, so they constrain nothing;
* a ``Within``/``Gap`` instance whose parse is empty holds; a ``Repeat`` whose body is
  nullable may have fewer than ``lo`` non-empty iterations (the rest are empty and leave
  no tokens, loop markers included), and ``hi`` bounds the non-empty ones;
* with ``ending`` every match is released by time, so the phase key of the emission
  order (released before completed) is the same for all of a query's matches;
* matches equal but for their occurrences (``alt(a, a)``) are ordered by occurrence, an
  order the output cannot show;
* ``TO_FIRST``/``TO_LAST`` v whose event is m''s first event give an empty range: m'
  discards nothing (where SQL's ``MATCH_RECOGNIZE`` reports an error);
* an ``ending`` event at exactly first + ``within`` is outside the window: the match is
  kept and emitted at that event.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import combinations, pairwise
from typing import NamedTuple

import numpy as np

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
    nullable,
)

MAX_EVENTS = 12
"""The longest input enumerated (every subsequence is tried: 2^n of them)."""

Path = tuple[int, ...]
Occurrence = tuple[Path, tuple[int, ...]]
"""A Var's path in the pattern tree and the copies of its enclosing Repeats' iterations."""


class _Bound(NamedTuple):
    """An event of a parse: its number, the Var it plays (name and condition), and that
    Var's occurrence. (Named tuples: parses are hashed a lot, and tuples hash fast.)"""

    number: int
    name: str
    cond: int
    occurrence: Occurrence


class _Marker(NamedTuple):
    """A run of markers between two tokens, as the check reads it: the last junction's
    contiguity (a :class:`Contiguity`'s value; None for a run of exclusion markers only),
    the union of their forbids and of their excludes."""

    contiguity: str | None
    forbid: frozenset[int]
    exclude: frozenset[int] = frozenset()


_Token = _Bound | _Marker
_Parse = tuple[int, tuple[_Token, ...]]
"""A parse of a node: the position in the subsequence after it, and its tokens."""


@dataclass(frozen=True, slots=True)
class _Found:
    """A match before the cross-match policies: events, occurrences, names."""

    events: tuple[int, ...]
    occurrences: tuple[Occurrence, ...]
    names: tuple[str, ...]


def enumerate_matches(query: MatchQuery, sat: np.ndarray, times: Sequence[int]) -> list[Match]:
    """The kept matches of ``query`` over the events, in emission order.

    ``sat[i, c]``: event i satisfies condition c; ``times``: the events' times (whole δ,
    non-decreasing). The input is complete: a match waiting on time at the end is emitted
    at event number n.
    """
    sat = _checked(query, sat, times)
    found = _found(query, sat, times)
    ordered = _ordered(query, sat, times, found)
    return [Match(emitted, f.events, f.names) for emitted, f in _kept(query, ordered)]


def _checked(query: MatchQuery, sat: np.ndarray, times: Sequence[int]) -> np.ndarray:
    """``sat`` as a boolean matrix, after checking it and ``times`` against each other."""
    sat = np.asarray(sat, dtype=bool)
    n = len(times)
    if n > MAX_EVENTS:
        raise ValueError(f"the oracle enumerates at most {MAX_EVENTS} events, not {n}")
    if sat.ndim != 2 or sat.shape[0] != n:
        raise ValueError(f"sat has shape {sat.shape}: need ({n}, number of conditions)")
    if query.conditions and max(query.conditions) >= sat.shape[1]:
        raise ValueError(f"the query reads condition {max(query.conditions)}: sat has "
                         f"{sat.shape[1]} columns")
    if any(b < a for a, b in pairwise(times)):
        raise ValueError("event times decrease")
    return sat


def _found(query: MatchQuery, sat: np.ndarray, times: Sequence[int],
           excluded: np.ndarray | None = None) -> list[_Found]:
    """Every match (events and occurrences) some satisfying parse gives, deduplicated;
    ``excluded`` is what exclusion markers read instead of ``sat`` (for timeouts)."""
    found: dict[tuple[tuple[int, ...], tuple[Occurrence, ...]], _Found] = {}
    n = len(times)
    for size in range(1, n + 1):
        for events in combinations(range(n), size):
            if query.within is not None and times[events[-1]] - times[events[0]] >= query.within:
                continue
            parser = _Parser(sat, times, events, sat if excluded is None else excluded)
            for end, tokens in parser.parse(query.pattern, (), (), 0):
                if end != size:
                    continue
                bound = [t for t in tokens if isinstance(t, _Bound)]
                occurrences = tuple(b.occurrence for b in bound)
                names = tuple(b.name for b in bound)
                found.setdefault((events, occurrences), _Found(events, occurrences, names))
    return list(found.values())


class _Parser:
    """The parses of pattern nodes over one subsequence of the events."""

    def __init__(self, sat: np.ndarray, times: Sequence[int], events: tuple[int, ...],
                 excluded: np.ndarray) -> None:
        self.sat = sat
        self.excluded = excluded
        self.times = times
        self.events = events
        # Memos: (path, copies, position) — the path names the node — for nodes, and with
        # the iteration's stage for a Repeat's iterations from there on.
        self._nodes: dict[tuple[Path, tuple[int, ...], int], tuple[_Parse, ...]] = {}
        self._loops: dict[tuple[Path, tuple[int, ...], int, int], tuple[_Parse, ...]] = {}

    def parse(self, node: Pattern, path: Path, copies: tuple[int, ...],
              pos: int) -> tuple[_Parse, ...]:
        """The distinct parses of ``node`` (at ``path``) starting at ``pos``."""
        key = (path, copies, pos)
        if key not in self._nodes:
            self._nodes[key] = tuple(dict.fromkeys(self._parses(node, path, copies, pos)))
        return self._nodes[key]

    def _parses(self, node: Pattern, path: Path, copies: tuple[int, ...],
                pos: int) -> Iterator[_Parse]:
        """The parses of ``node`` starting at ``pos``, by the node's kind."""
        if isinstance(node, Var):
            parses = self._var(node, path, copies, pos)
        elif isinstance(node, Seq):
            parses = self._seq(node, path, copies, pos)
        elif isinstance(node, Alt):
            parses = (p for k, part in enumerate(node.parts)
                      for p in self.parse(part, (*path, k), copies, pos))
        elif isinstance(node, Repeat):
            parses = self._repeat(node, path, copies, pos)
        else:
            parses = self._timed(node, path, copies, pos)
        yield from parses

    def _var(self, node: Var, path: Path, copies: tuple[int, ...], pos: int) -> Iterator[_Parse]:
        """The next event of the subsequence, if it satisfies the Var's condition."""
        if pos < len(self.events) and self.sat[self.events[pos], node.cond]:
            yield pos + 1, (_Bound(self.events[pos], node.name, node.cond, (path, copies)),)

    def _seq(self, node: Seq, path: Path, copies: tuple[int, ...], pos: int) -> Iterator[_Parse]:
        """The parts' parses in turn, a junction between every two unless all are empty."""
        for end, parts in self._parts(node, path, copies, 0, pos):
            if end == pos:  # an empty parse: only its parts' exclusion markers, as one
                yield pos, _exclusion(frozenset(c for part in parts for m in part
                                                for c in m.exclude))
                continue
            tokens: tuple[_Token, ...] | None = parts[0]
            for junction, part in zip(node.junctions, parts[1:], strict=True):
                tokens = self._joined(tokens, junction, part) if tokens is not None else None
            if tokens is not None:
                yield end, tokens

    def _parts(self, node: Seq, path: Path, copies: tuple[int, ...], k: int,
               pos: int) -> Iterator[tuple[int, tuple[tuple[_Token, ...], ...]]]:
        """Parses of parts k, k + 1, … of a Seq: the end and each part's tokens."""
        if k == len(node.parts):
            yield pos, ()
            return
        for mid, tokens in self.parse(node.parts[k], (*path, k), copies, pos):
            for end, rest in self._parts(node, path, copies, k + 1, mid):
                yield end, (tokens, *rest)

    def _repeat(self, node: Repeat, path: Path, copies: tuple[int, ...],
                pos: int) -> Iterator[_Parse]:
        """No iteration (if allowed), or non-empty iterations with the loop between."""
        if node.lo == 0 or nullable(node.body):
            yield pos, _exclusion(node.exclude if node.greedy else frozenset())
        yield from self._iterations(node, path, copies, pos, 1)

    def _iterations(self, node: Repeat, path: Path, copies: tuple[int, ...], pos: int,
                    iteration: int) -> tuple[_Parse, ...]:
        """The distinct parses of non-empty iterations number ``iteration``, … up to the
        last, from ``pos``; the loop marker between two."""
        # Past max(lo, 1) an unbounded Repeat's iterations are all alike (same copy, enough).
        stage = iteration if node.hi is not None else min(iteration, max(node.lo, 1))
        key = (path, copies, pos, stage)
        if key not in self._loops:
            self._loops[key] = tuple(dict.fromkeys(self._iterated(node, path, copies, pos,
                                                                  stage)))
        return self._loops[key]

    def _iterated(self, node: Repeat, path: Path, copies: tuple[int, ...], pos: int,
                  iteration: int) -> Iterator[_Parse]:
        """This iteration's non-empty parses, each alone (if the count may stop there) and
        followed by the next iterations'."""
        # ``iteration`` is the copy: at most hi when bounded, capped by the stage otherwise.
        enough = iteration >= node.lo or nullable(node.body)
        more = node.hi is None or iteration < node.hi
        for end, tokens in self.parse(node.body, (*path, 0), (*copies, iteration), pos):
            if end == pos:
                continue
            if enough and node.greedy and more:
                yield end, _excluding(tokens, node.exclude)
            elif enough:
                yield end, tokens
            if more:
                for after, rest in self._iterations(node, path, copies, end, iteration + 1):
                    if (stream := self._joined(tokens, node.loop, rest)) is not None:
                        yield after, stream

    def _joined(self, left: tuple[_Token, ...], junction: Junction,
                right: tuple[_Token, ...]) -> tuple[_Token, ...] | None:
        """``left``, the junction, ``right`` as one stream, None if the two events the
        junction now lies between do not hold the markers between them.

        Markers between two events never change once both are in a stream (outer
        junctions join streams at their ends), so each pair is checked as it forms. Of
        that run of markers the check reads only the last one's contiguity and the union
        of their forbids, so the run becomes one marker saying those: parses differing
        only in how markers nest (``plus(plus(a))``) become one parse.
        """
        contiguity, forbid, exclude = junction.contiguity.value, junction.forbid, frozenset()
        if left and isinstance(left[-1], _Marker):
            forbid, exclude = forbid | left[-1].forbid, left[-1].exclude
            left = left[:-1]
        if right and isinstance(right[0], _Marker):
            contiguity = right[0].contiguity or contiguity
            forbid, exclude = forbid | right[0].forbid, exclude | right[0].exclude
            right = right[1:]
        marker = _Marker(contiguity, forbid, exclude)
        x, y = _last_event(left), _first_event(right)
        if x is not None and y is not None and not _pair_holds(self.sat, self.excluded, x,
                                                                   marker, y):
            return None
        return (*left, marker, *right)

    def _timed(self, node: Within | Gap, path: Path, copies: tuple[int, ...],
               pos: int) -> Iterator[_Parse]:
        """The body's parses whose instance holds the Within's or the Gap's bound."""
        for end, tokens in self.parse(node.body, (*path, 0), copies, pos):
            stamps = [self.times[t.number] for t in tokens if isinstance(t, _Bound)]
            if isinstance(node, Within):
                holds = not stamps or stamps[-1] - stamps[0] < node.duration
            else:
                holds = all(b - a < node.duration for a, b in pairwise(stamps))
            if holds:
                yield end, tokens


def _exclusion(exclude: frozenset[int]) -> tuple[_Token, ...]:
    """An empty parse's tokens: the exclusion marker of ``exclude``, none if empty."""
    return (_Marker(None, frozenset(), exclude),) if exclude else ()


def _excluding(tokens: tuple[_Token, ...], exclude: frozenset[int]) -> tuple[_Token, ...]:
    """``tokens`` followed by the exclusion marker of ``exclude``, made one run with a
    marker run they end with (a trailing empty part's junctions)."""
    if tokens and isinstance(last := tokens[-1], _Marker):
        return (*tokens[:-1], _Marker(last.contiguity, last.forbid, last.exclude | exclude))
    return (*tokens, *_exclusion(exclude))


def _first_event(tokens: tuple[_Token, ...]) -> _Bound | None:
    """The first event of a stream, None if it has none."""
    return next((t for t in tokens if isinstance(t, _Bound)), None)


def _last_event(tokens: tuple[_Token, ...]) -> _Bound | None:
    """The last event of a stream, None if it has none."""
    return _first_event(tokens[::-1])


def _pair_holds(sat: np.ndarray, excluded: np.ndarray, x: _Bound, marker: _Marker,
                y: _Bound) -> bool:
    """Consecutive events x and y of a stream and the markers between them made one (y's
    exclusions read in ``excluded``; y's own condition excluded excludes it whatever)."""
    i, j = x.number, y.number
    between = sat[i + 1:j]
    if marker.contiguity == Contiguity.STRICT.value and j != i + 1:
        return False
    if marker.contiguity == Contiguity.NEXT.value and between[:, y.cond].any():
        return False
    forbid, exclude = sorted(marker.forbid), sorted(marker.exclude)
    return (not (forbid and between[:, forbid].any()) and y.cond not in marker.exclude
            and not excluded[j, exclude].any())


def _ordered(query: MatchQuery, sat: np.ndarray, times: Sequence[int],
             found: list[_Found]) -> list[tuple[int, _Found]]:
    """The matches the ending lets through, with the event each is emitted at, in order."""
    phase = 0 if query.ending else 1
    emitted = [(e, f) for f in found if (e := _emission(query, sat, times, f)) is not None]
    emitted.sort(key=lambda ef: (ef[0], phase, ef[1].events[0], ef[1].events, ef[1].names,
                                 ef[1].occurrences))
    return emitted


def _emission(query: MatchQuery, sat: np.ndarray, times: Sequence[int],
              found: _Found) -> int | None:
    """The event a match is emitted at, or None when an ending event discards it."""
    last = found.events[-1]
    if not query.ending or query.within is None:
        return last
    deadline = times[found.events[0]] + query.within
    ending = sorted(query.ending)
    for k in range(last + 1, len(times)):
        if times[k] >= deadline:
            return k
        if sat[k, ending].any():
            return None
    return len(times)


def _kept(query: MatchQuery, ordered: list[tuple[int, _Found]]) -> list[tuple[int, _Found]]:
    """The matches no earlier kept one discards, by the skip policy or consumption."""
    if query.skip.kind is SkipKind.NO_SKIP and not query.consume:
        return ordered
    kept: list[tuple[int, _Found]] = []
    for emitted, m in ordered:
        if any(_discards(query.skip, k, m) or (query.consume and _share(k, m))
               for _, k in kept):
            continue
        kept.append((emitted, m))
    return kept


def _discards(skip: Skip, kept: _Found, m: _Found) -> bool:
    """Whether the kept match's skip range holds m's first event."""
    start, first = kept.events[0], m.events[0]
    if skip.kind is SkipKind.NO_SKIP:
        return False
    if skip.kind is SkipKind.PAST_LAST:
        return start <= first <= kept.events[-1]
    if skip.kind in (SkipKind.TO_FIRST, SkipKind.TO_LAST):
        own = [e for e, name in zip(kept.events, kept.names, strict=True) if name == skip.var]
        if own:
            bound = own[0] if skip.kind is SkipKind.TO_FIRST else own[-1]
            return start <= first < bound
    return first == start


def _share(kept: _Found, m: _Found) -> bool:
    """Whether two matches share an event (consumption)."""
    return not set(kept.events).isdisjoint(m.events)


def enumerate_timeouts(query: MatchQuery, sat: np.ndarray, times: Sequence[int]
                       ) -> list[Match]:
    """The partial matches of ``query`` (which has a ``within`` W) that time out, in
    emission order (Flink's timeout side output), each with its ``stamp``: the time τ
    at which it timed out.

    A partial match P — events e_1 … e_k (k ≥ 1) with occurrences, not itself a match —
    could go on at time x when P followed by events that satisfy every condition (but
    none that an exclusion marker excludes: conditions are independent, so the next
    event may be any that its variable allows), all at time x and placed right after
    the events before τ, is the start of a match. P times out at τ when it could go on
    at τ − 1 and could not at τ, the events before τ being the same: a time bound —
    the query's within (τ ≤ t(e_1) + W), a gap after its last event, an inner within
    whose instance it is in — ran out at τ (a P that only contiguity or a ``not``
    stops, at a later event, just ends). P is emitted at the first event at τ or
    later (n at the end of the input), after the matches released by time there and
    before those that event completes, unless a kept match emitted before it
    discarded its start (skip policy) or consumed one of its events. The oracle tries
    every τ in (t(e_1), t(e_1) + W].
    """
    if query.within is None:
        raise ValueError("timeouts need the query's within")
    sat = _checked(query, sat, times)
    n = sat.shape[0]
    kept = _kept(query, _ordered(query, sat, times, _found(query, sat, times)))
    going = _GoingOn(query, sat, times)
    out: dict[tuple[tuple[int, ...], tuple[Occurrence, ...]], tuple[int, int, _Found]] = {}
    for s in range(n):
        for tau in range(times[s] + 1, times[s] + query.within + 1):
            j = next((k for k in range(s + 1, n) if times[k] >= tau), n)
            before = going.prefixes(j, tau - 1, s)
            for prefix in set(before) - set(going.prefixes(j, tau, s)) - going.complete(j):
                if prefix in out:
                    continue
                emitted = [m for e, m in kept if e < j or (e == j and query.ending)]
                partial = _Found(prefix[0], prefix[1], before[prefix])
                if any(_discards(query.skip, m, partial) or (query.consume and _share(m, partial))
                       for m in emitted):
                    continue
                out[prefix] = (j, tau, partial)
    found = sorted(out.values(), key=lambda jtf: (jtf[0], jtf[2].events, jtf[2].names,
                                                  jtf[2].occurrences))
    return [Match(j, f.events, f.names, tau) for j, tau, f in found]


class _GoingOn:
    """Which partial matches could go on: the matches of the query's pattern (and
    within) over the events before an index followed by hypothetical events at one
    time, memoized per (index, time)."""

    def __init__(self, query: MatchQuery, sat: np.ndarray, times: Sequence[int]) -> None:
        self.plain = MatchQuery(query.pattern, within=query.within)
        self.sat, self.times = sat, times
        self.longest = _needed(query.pattern)
        self._found: dict[tuple[int, int], list[_Found]] = {}
        self._complete: dict[int, set[tuple[tuple[int, ...], tuple[Occurrence, ...]]]] = {}

    def prefixes(self, j: int, at: int, start: int
                 ) -> dict[tuple[tuple[int, ...], tuple[Occurrence, ...]], tuple[str, ...]]:
        """The real parts (events before j, from ``start``) of the matches that go on
        with hypothetical events at time ``at``, with their variables' names."""
        if (j, at) not in self._found:
            width = self.sat.shape[1]
            word = np.vstack([self.sat[:j], np.ones((self.longest, width), dtype=bool)])
            excluded = np.vstack([self.sat[:j], np.zeros((self.longest, width), dtype=bool)])
            clock = [*self.times[:j], *[at] * self.longest]
            self._found[(j, at)] = _found(self.plain, word, clock, excluded)
        out = {}
        for f in self._found[(j, at)]:
            real = sum(1 for e in f.events if e < j)
            if f.events[0] == start and real < len(f.events):
                out[(f.events[:real], f.occurrences[:real])] = f.names[:real]
        return out

    def complete(self, j: int) -> set[tuple[tuple[int, ...], tuple[Occurrence, ...]]]:
        """The matches among the events before j (not partial matches)."""
        if j not in self._complete:
            self._complete[j] = {(f.events, f.occurrences)
                                 for f in _found(self.plain, self.sat[:j], self.times[:j])}
        return self._complete[j]


def _needed(p: Pattern) -> int:
    """An upper bound on the events a partial match needs to complete, whatever its last
    occurrence: from inside a Seq the rest of the Seq, inside an Alt its longest
    shortest branch, inside a Repeat the rest of ``max(lo, 1)`` iterations (of ``hi`` for
    a bounded greedy one: its exclusion may bar every exit before the last)."""
    if isinstance(p, Var):
        return 1
    if isinstance(p, Seq):
        return sum(_needed(part) for part in p.parts)
    if isinstance(p, Alt):
        return max(_needed(part) for part in p.parts)
    if isinstance(p, Repeat):
        return _needed(p.body) * (p.hi if p.greedy and p.hi is not None else max(p.lo, 1))
    return _needed(p.body)
