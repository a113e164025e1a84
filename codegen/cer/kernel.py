"""The match kernel: a key's events in, its matches out, in emission order.

Pipeline position: :class:`~codegen.cer.tables.MatchTables` and a key's events
(``sat`` bool[n, C], ``times`` int64[n] in δ) → **kernel** → matches (emitted at, events'
numbers, positions), the meaning of :mod:`dt.cer.pattern` (tested against
:mod:`dt.cer.oracle`).

Per transition t = p → q, ``waiting[t]`` is the set (a :mod:`~codegen.cer.graph` node) of
partial matches ending at p that may still take an event at q. At event i::

    release the matches held for a negation at their end whose wait is over, in
        emission order, filtered by the skip policy; drop those event i kills
    for each position q whose condition event i satisfies:
        child = BOTTOM if q is initial, ∪ waiting[t] for t into q
                (a set whose gap or within has passed is dropped for good)
        new[q] = OUT(i, q, child)
    enumerate the matches of new[q] for final q (checking each path's gap and
        within exactly), sort them in emission order, keep those the skip policy and
        consumption allow (or hold them for a negation at the end)
    waiting[t] = (∅ if t is strict, or next and i satisfies q's condition, or i
                  satisfies a forbidden condition, else waiting[t]) ∪ new[p]

A key's input may come in parts (:func:`step_matches`): the state between parts
(:class:`MatchState`) is the graph compacted to the waiting sets', the held matches, and
the events they still name, renumbered from 0; a part runs over those events followed by
its own, from the first of its own, and emits what one run over the whole input emits at
the same events. A watermark (``until``) after a part releases the held matches and the
timeouts due by then (a timeout waits while a held match that may consume its events
does).

Cost per event: O(P + T) node operations whatever the number of partial matches
(constant for a fixed query), and O(initial positions) for an event no set waits for
that satisfies no initial position's condition (most events of a selective pattern),
plus the enumeration: proportional to the matches emitted and their length when no
policy discards and every constraint is exact at the sets (skip-till-any-match, next,
strict, ``within`` of the whole pattern); enumeration may also walk paths it then
rejects: a ``within`` of a sub-pattern or a gap that only some of a set's matches break,
starts discarded by ``to_next`` or ``to_first``/``to_last``, consumed events (under
``past_last`` only the matches with the least start are walked: the first kept one
discards the others). The per-event work runs in one function (:func:`_events`) that
reassigns no array, the rest (enumeration, policies, compaction) once per event that
needs it, or, when no policy reads the kept matches, once per batch of events: Numba
reference-counts each array a call passes or a loop reassigns (about 7 ns apiece), so
the split is what makes an idle event cost nanoseconds. Under a skip policy the
discarded starts are
ranges of event numbers, each widened over the events around it that start no partial
match, so that ranges meet and a waiting set whose starts were all discarded is
dropped whole (``covered``) instead of walked again at every completing event.
Memory: when the graph is full it is compacted
(:func:`~codegen.cer.graph.compact`): only the waiting sets' nodes are kept, without
the matches a skip policy discarded or the whole pattern's ``within`` ended, so it
holds the live partial matches' graph (at most doubled).
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from ..numba_cache import guard_namespace
from .graph import (
    BOTTOM,
    KIND,
    MAXS,
    MINS,
    NO_TIME,
    OUT,
    SUB,
    TIME,
    UNION,
    A,
    B,
    C,
    compact,
    covered,
    empty_graph,
    grow_rows,
    merge_dead,
    new_out,
    new_union,
)
from .tables import MatchTables

__all__ = ["MatchState", "run_keys", "run_matches", "step_matches"]

_JIT = {"nopython": True, "cache": True, "nogil": True}
_INTERNAL, _ENTERS = 1, 2
_STRICT, _NEXT = 0, 1
_NO_SKIP, _TO_NEXT, _PAST_LAST, _TO_FIRST, _TO_LAST = range(5)
_FROM_START, _FROM_POSITIONS, _FROM_ADVANCE = range(3)  # where _events enters an event


def run_matches(tables: MatchTables, sat: np.ndarray, times: np.ndarray,
                state: MatchState | None = None) -> tuple[np.ndarray, ...]:
    """The kept matches of one key whose input ends here: ``emitted`` int64[m],
    ``offsets`` int64[m + 1], and per matched event ``events`` int64[·] (numbers) and
    ``positions`` int64[·]; then the same four arrays for the partial matches that timed
    out (empty unless the query asks for timeouts), and ``stamps`` int64[·]: the time
    each timed out at. Events are numbered from the key's
    first (``state.first`` + the carried events before this call's); a match held for a
    negation at the end, or a timeout, found after the last event is emitted at its
    number + 1."""
    return _call(tables, sat, times, state, True, NO_TIME)[0]


def step_matches(tables: MatchTables, sat: np.ndarray, times: np.ndarray,
                 state: MatchState | None = None, until: int | None = None
                 ) -> tuple[tuple[np.ndarray, ...], MatchState]:
    """:func:`run_matches` on a part of a key's input, and the state the next part
    resumes from: matches are emitted when they would be in one run over the whole
    input. ``until`` (δ): no later event comes before this time (a watermark), so the
    matches held for a negation at the end whose wait is over by then are released, and
    the partial matches starting ``within`` or more before it time out (unless a held
    match may still consume their events: then at the next event)."""
    return _call(tables, sat, times, state, False, NO_TIME if until is None else int(until))


def run_keys(tables: MatchTables, sat: np.ndarray, times: np.ndarray, bounds: np.ndarray
             ) -> tuple[tuple[np.ndarray, ...], np.ndarray]:
    """:func:`run_matches` over many keys whose inputs end here, in one compiled loop (a
    call per key from Python costs tens of microseconds; here a key costs its
    allocations): key j's events are rows ``bounds[j]:bounds[j + 1]`` of ``sat`` and
    ``times``. Returns :func:`run_matches`' nine arrays over all keys, key after key
    (events numbered from each key's first; offsets into all the keys' events), and
    int64[keys, 2]: each key's number of matches and of timeouts."""
    return _run_keys(
        tables.cond, tables.initial, tables.final, tables.in_scope, tables.name_rank,
        tables.in_ptr, tables.src, tables.dst, tables.mode, tables.forbid_ptr, tables.forbid,
        tables.exclude_ptr, tables.exclude, tables.gap, tables.step, tables.duration,
        tables.transition_of, tables.whole, tables.within, tables.ending, tables.skip,
        tables.skip_names, tables.consume, tables.timeouts,
        np.ascontiguousarray(sat, dtype=np.bool_), np.ascontiguousarray(times, dtype=np.int64),
        np.asarray(bounds, dtype=np.int64))


@dataclass(frozen=True)
class MatchState:
    """A key's kernel state between two calls (:func:`step_matches`).

    The live part of the match graph (``nodes``, ``dead``, ``meta``: :mod:`.graph`), the
    sets waiting per transition, the matches held for a negation at the end (rows
    (deadline, offset, length) and their events (number, position), ``held_counts``
    of both), the time up to which timeouts were reported, and the carried events: those
    the graph or the held matches still name, their ``times`` and whether a kept match
    ``consumed`` them, numbered from 0 here and from ``first`` in the key's input."""

    first: int
    times: np.ndarray
    consumed: np.ndarray
    nodes: np.ndarray
    dead: np.ndarray
    meta: np.ndarray
    waiting: np.ndarray
    held: np.ndarray
    held_ev: np.ndarray
    held_counts: np.ndarray
    timed_until: int

    @property
    def events(self) -> int:
        """How many events are carried."""
        return int(self.times.shape[0])

    @classmethod
    def fresh(cls, tables: MatchTables) -> MatchState:
        """The state before a key's first event."""
        nodes, dead, meta = empty_graph(tables.duration.shape[0])
        return cls(0, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.bool_), nodes, dead,
                   meta, np.full(tables.src.shape[0], -1, dtype=np.int64),
                   np.zeros((16, 3), dtype=np.int64), np.zeros((64, 2), dtype=np.int64),
                   np.zeros(2, dtype=np.int64), NO_TIME)


def _call(tables: MatchTables, sat: np.ndarray, times: np.ndarray, state: MatchState | None,
          final: bool, until: int) -> tuple[tuple[np.ndarray, ...], MatchState]:
    state = MatchState.fresh(tables) if state is None else state
    carried = state.events
    sat = np.ascontiguousarray(sat, dtype=np.bool_)
    all_sat = sat if carried == 0 else np.concatenate(
        [np.zeros((carried, sat.shape[1]), dtype=np.bool_), sat])
    all_times = np.concatenate([state.times, np.asarray(times, dtype=np.int64)])
    consumed = np.zeros(all_times.shape[0] if tables.consume else 0, dtype=np.bool_)
    consumed[:state.consumed.shape[0]] = state.consumed
    waiting = state.waiting.copy()
    meta = state.meta.copy()
    scalars = np.array([carried, *state.held_counts, state.timed_until], dtype=np.int64)
    out, nodes, dead, held, held_ev = _run(
        tables.cond, tables.initial, tables.final, tables.in_scope, tables.name_rank,
        tables.in_ptr, tables.src, tables.dst, tables.mode, tables.forbid_ptr, tables.forbid,
        tables.exclude_ptr, tables.exclude, tables.gap, tables.step, tables.duration,
        tables.transition_of, tables.whole, tables.within, tables.ending, tables.skip,
        tables.skip_names, tables.consume, tables.timeouts, all_sat, all_times,
        state.nodes.copy(), state.dead.copy(), meta, waiting, state.held.copy(),
        state.held_ev.copy(), consumed, scalars, final, until)
    # event numbers (emitted, events) from the key's first; the stamps are times
    if state.first:
        out = tuple(a + state.first if j < 8 and j % 4 in (0, 2) else a
                    for j, a in enumerate(out))
    if final:
        return out, state
    return out, _carried(tables, state.first, all_times, consumed, nodes, dead, meta, waiting,
                         held, held_ev, scalars, until)


def _carried(tables: MatchTables, first: int, times: np.ndarray, consumed: np.ndarray,
             nodes: np.ndarray, dead: np.ndarray, meta: np.ndarray, waiting: np.ndarray,
             held: np.ndarray, held_ev: np.ndarray, scalars: np.ndarray, until: int
             ) -> MatchState:
    """The state after a call: the graph compacted to the waiting sets' (as of the last
    event's time or ``until``, but never past a timeout not yet reported), the events
    from the first one still named on, renumbered from 0."""
    n = times.shape[0]
    now = max(until, int(times[-1])) if n else until
    if tables.timeouts:  # a partial match timing out after scalars[3] is not reported yet
        now = min(now, int(scalars[3]))
    nodes = compact(nodes, meta, dead, waiting, now, tables.whole, tables.within, 0)
    used = nodes[1:meta[0]]
    held_n = int(scalars[1])
    named = np.concatenate([used[used[:, MINS] >= 0, MINS], held_ev[:int(scalars[2]), 0]])
    base = int(named.min()) if named.size else n
    if base:
        lo = used[:, MINS] >= 0
        used[lo, MINS] -= base
        used[used[:, MAXS] < 2**62, MAXS] -= base
        used[used[:, KIND] == 0, A] -= base
        held_ev[:int(scalars[2]), 0] -= base
        ranges = dead[:meta[1]]
        ranges = ranges[ranges[:, 1] >= base]
        dead = np.zeros((max(16, ranges.shape[0]), 2), dtype=np.int64)
        dead[:ranges.shape[0], 0] = np.maximum(ranges[:, 0], base) - base
        dead[:ranges.shape[0], 1] = ranges[:, 1] - base
        meta[1] = ranges.shape[0]
    return MatchState(first + base, times[base:].copy(), consumed[base:].copy(),
                      nodes[:meta[0]].copy(), dead, meta, waiting, held[:max(held_n, 1)].copy(),
                      held_ev[:max(int(scalars[2]), 1)].copy(), scalars[1:3].copy(),
                      int(scalars[3]))


@numba.jit(**_JIT)
def _run(cond, initial, final, in_scope, name_rank, in_ptr, src, dst, mode, forbid_ptr, forbid,
         exclude_ptr, exclude, gap, step, duration, transition_of, whole, within, ending, skip,
         skip_names, consume, timeouts, sat, times, nodes, dead, meta, waiting, held, held_ev,
         consumed, scalars, last, until):
    """The events from number scalars[0] on (those before are carried: MatchState), with
    the held matches' counts scalars[1:3] and the time timeouts were reported up to
    scalars[3] (all updated); ``last``: the input ends here."""
    n = times.shape[0]
    n_pos = cond.shape[0]
    n_tr = src.shape[0]
    k = duration.shape[0]
    new = np.full(n_pos, -1, dtype=np.int64)
    subs = np.empty(k, dtype=np.int64)
    # kept matches and candidates: (emitted, offset, length); held (deadline, offset,
    # length); their events (number, position)
    kept = np.zeros((16, 3), dtype=np.int64)
    kept_ev = np.zeros((64, 2), dtype=np.int64)
    cand = np.zeros((16, 3), dtype=np.int64)
    cand_ev = np.zeros((64, 2), dtype=np.int64)
    timed = np.zeros((16 if timeouts else 0, 4), dtype=np.int64)  # and the stamp
    timed_ev = np.zeros((64 if timeouts else 0, 2), dtype=np.int64)
    timed_until = scalars[3]  # partial matches timing out at or before this time: reported
    # kept, kept_ev, cand, cand_ev, held, held_ev, timed, timed_ev
    counts = np.zeros(8, dtype=np.int64)
    counts[4] = scalars[1]
    counts[5] = scalars[2]
    per_event = n_pos + 2 * n_tr + 1
    # per event under a skip policy: whether it starts a partial match (the carried
    # events count as starts: nothing is known of them)
    discards = skip != _NO_SKIP
    started = np.ones(n if discards else 0, dtype=np.bool_)
    # only the query's within bounds time (no gap, no inner within): a partial match
    # times out at its start + within, and _time_out cuts sets by start
    by_start = k == 1
    for e in range(n_tr):
        by_start = by_start and gap[e] < 0
    # the enumeration's path (its nodes and their scopes' bounds) and stack: a path of
    # the graph visits each node once, and one sibling waits per union on it
    path = np.empty(nodes.shape[0] + 1, dtype=np.int64)
    bounds = np.empty((nodes.shape[0] + 1, k), dtype=np.int64)
    stack = np.empty((nodes.shape[0] + 1, 2), dtype=np.int64)
    # the completed sets are those made from node ``mark`` on; with no policy that reads
    # the kept matches (no skip, no consume, no negation at the end) those of many events
    # are enumerated at once
    mark = meta[0]
    initials = np.flatnonzero(initial)
    batch = skip == _NO_SKIP and not consume and ending.shape[0] == 0
    # under past_last an event keeps one match, the first in emission order (the others
    # start at or after it and before its last event): only the least starts are
    # enumerated, unless a negation at the end may kill that one
    least = skip == _PAST_LAST and ending.shape[0] == 0
    # This loop runs once per event that needs more than _events does (in a loop of its
    # own that reassigns no array and calls helpers only to make nodes), or per batch of
    # completed sets: its buffers may be replaced (grown), and Numba reference-counts
    # every array a loop reassigns at every iteration, and every array passed to a call.
    i, need = _events(nodes, meta, dead, waiting, new, scalars[0], _FROM_START, cond, initial,
                      initials, final, in_scope, in_ptr, src, dst, mode, forbid_ptr, forbid,
                      exclude_ptr, exclude, gap, step, duration, subs, sat, times, ending, held,
                      counts, started, timeouts, timed_until, per_event, batch)
    while True:
        if meta[0] > mark:  # the completed sets' matches, in emission order
            roots = _completed(nodes, final, mark, meta[0])
            mark = meta[0]
            counts[2] = 0
            counts[3] = 0
            cand, cand_ev = _enumerate(nodes, dead, meta, roots, roots.shape[0], path, bounds,
                                       stack, in_scope, transition_of, gap, step, duration,
                                       whole, consume, consumed, cand, cand_ev, counts, NO_TIME,
                                       2**62, times, least)
            if counts[2] > 0 and ending.shape[0]:
                held, held_ev = _hold(cand, cand_ev, counts, held, held_ev, times, within)
            elif counts[2] > 0:
                dead, kept, kept_ev = _keep(cand, cand_ev, counts, name_rank, skip, skip_names,
                                            consume, consumed, dead, meta, kept, kept_ev,
                                            started, i)
        if i >= n:
            break
        t = times[i]
        if need == _FROM_START:  # event i needs what _events does not do before it
            if counts[4] > 0:
                counts[2] = 0
                counts[3] = 0
                cand, cand_ev = _release(held, held_ev, counts, cand, cand_ev, t, i, sat,
                                         ending)
                if counts[2] > 0:
                    dead, kept, kept_ev = _keep(cand, cand_ev, counts, name_rank, skip,
                                                skip_names, consume, consumed, dead, meta, kept,
                                                kept_ev, started, i - 1)
            if timeouts and t > timed_until:
                cand, cand_ev, timed, timed_ev = _time_out(
                    nodes, dead, meta, waiting, src, final, path, bounds, stack, in_scope,
                    transition_of, gap, step, duration, whole, within, consume, consumed, cand,
                    cand_ev, counts, timed_until, t, times, i, name_rank, timed, timed_ev, subs,
                    by_start)
                timed_until = t
            if meta[0] + per_event > nodes.shape[0]:
                nodes = compact(nodes, meta, dead, waiting, t, whole, within, per_event)
                path = grow_rows(path, nodes.shape[0] + 1)
                bounds = grow_rows(bounds, nodes.shape[0] + 1)
                stack = grow_rows(stack, nodes.shape[0] + 1)
                mark = meta[0]
            need = _FROM_POSITIONS
        i, need = _events(nodes, meta, dead, waiting, new, i, need, cond, initial, initials,
                          final, in_scope, in_ptr, src, dst, mode, forbid_ptr, forbid,
                          exclude_ptr, exclude, gap, step, duration, subs, sat, times, ending,
                          held, counts, started, timeouts, timed_until, per_event, batch)
    # after the last event: with ``last`` nothing more can come (NO_TIME releases every
    # held match, every partial match left times out); else nothing before ``until``
    if ending.shape[0] and counts[4] > 0 and (last or until != NO_TIME):
        counts[2] = 0
        counts[3] = 0
        cand, cand_ev = _release(held, held_ev, counts, cand, cand_ev,
                                 NO_TIME if last else until, n, sat, ending)
        dead, kept, kept_ev = _keep(cand, cand_ev, counts, name_rank, skip, skip_names,
                                    consume, consumed, dead, meta, kept, kept_ev, started, n - 1)
    # a timeout is reported after a held match that may consume its events
    reached = 2**62 if last else until
    if timeouts and reached > timed_until and not (consume and counts[4] > 0):
        cand, cand_ev, timed, timed_ev = _time_out(
            nodes, dead, meta, waiting, src, final, path, bounds, stack, in_scope,
            transition_of, gap, step, duration, whole, within, consume, consumed, cand,
            cand_ev, counts, timed_until, reached, times, n, name_rank, timed, timed_ev, subs,
            by_start)
        timed_until = reached
    scalars[1] = counts[4]
    scalars[2] = counts[5]
    scalars[3] = timed_until
    m = _flat(kept, kept_ev, counts[0], counts[1])
    t = _flat(timed, timed_ev, counts[6], counts[7])
    stamps = timed[:counts[6], 3].copy()
    return (m[0], m[1], m[2], m[3], t[0], t[1], t[2], t[3], stamps), nodes, dead, held, held_ev


@numba.jit(**_JIT)
def _run_keys(cond, initial, final, in_scope, name_rank, in_ptr, src, dst, mode, forbid_ptr,
              forbid, exclude_ptr, exclude, gap, step, duration, transition_of, whole, within,
              ending, skip, skip_names, consume, timeouts, sat, times, bounds):
    """:func:`run_keys`: :func:`_run` per key from a fresh state, the outputs appended
    (a key none of whose events satisfies an initial position's condition has none)."""
    n_keys = bounds.shape[0] - 1
    per_key = np.zeros((max(n_keys, 0), 2), dtype=np.int64)
    parts = [np.zeros(0, dtype=np.int64) for _ in range(9)]  # the nine outputs, grown
    filled = np.zeros(9, dtype=np.int64)
    initials = np.flatnonzero(initial)
    for j in range(n_keys):
        lo, hi = bounds[j], bounds[j + 1]
        starts = False  # a key none of whose events may start a match has none
        for i in range(lo, hi):
            for q in initials:
                starts = starts or sat[i, cond[q]]
        if not starts:
            continue
        nodes, dead, meta = empty_graph(duration.shape[0], 64)
        waiting = np.full(src.shape[0], -1, dtype=np.int64)
        held = np.zeros((16, 3), dtype=np.int64)
        held_ev = np.zeros((64, 2), dtype=np.int64)
        consumed = np.zeros(hi - lo if consume else 0, dtype=np.bool_)
        scalars = np.array([0, 0, 0, NO_TIME], dtype=np.int64)
        out, _, _, _, _ = _run(
            cond, initial, final, in_scope, name_rank, in_ptr, src, dst, mode, forbid_ptr,
            forbid, exclude_ptr, exclude, gap, step, duration, transition_of, whole, within,
            ending, skip, skip_names, consume, timeouts, sat[lo:hi], times[lo:hi], nodes, dead,
            meta, waiting, held, held_ev, consumed, scalars, True, NO_TIME)
        per_key[j, 0] = out[0].shape[0]
        per_key[j, 1] = out[4].shape[0]
        for x in range(9):
            # an offsets array continues the previous key's: its leading 0 dropped, the
            # events before added
            a = out[x][1:] + filled[x + 1] if x == 1 or x == 5 else out[x]
            parts[x] = grow_rows(parts[x], filled[x] + a.shape[0])
            parts[x][filled[x]:filled[x] + a.shape[0]] = a
            filled[x] += a.shape[0]
    return (parts[0][:filled[0]], _offsets(parts[1], filled[1]), parts[2][:filled[2]],
            parts[3][:filled[3]], parts[4][:filled[4]], _offsets(parts[5], filled[5]),
            parts[6][:filled[6]], parts[7][:filled[7]], parts[8][:filled[8]]), per_key


@numba.jit(**_JIT)
def _offsets(a, m):
    """The offsets 0, a[0], …, a[m − 1]."""
    out = np.zeros(m + 1, dtype=np.int64)
    out[1:] = a[:m]
    return out


@numba.jit(**_JIT)
def _events(nodes, meta, dead, waiting, new, i, entry, cond, initial, initials, final, in_scope,
            in_ptr, src, dst, mode, forbid_ptr, forbid, exclude_ptr, exclude, gap, step,
            duration, subs, sat, times, ending, held, counts, started, timeouts, timed_until,
            per_event, batch):
    """Run the events from i on, entering event i at ``entry``, as long as they need
    nothing else; return the event that does and where it resumes:

    * ``_FROM_START``: it needs first a held match released or killed, a timeout
      reported or the graph compacted (the caller does it, then resumes at
      ``_FROM_POSITIONS``);
    * ``_FROM_ADVANCE``: ``new`` holds its sets and a final position's is not empty:
      the caller enumerates its matches, then resumes here; unless ``batch``: then the
      caller enumerates the matches of the completed sets (:func:`_completed`) of many
      events at once, when it is called for another reason or the input ends.

    Per event: the sets ``new[q]`` (a set whose gap or within passed, or all of whose
    starts were discarded, is dropped from ``waiting`` for good; a transition excluding
    the event keeps its set waiting), the discarded ranges widened under a skip policy,
    then the waiting sets advanced. All of it in this one function on purpose: a call
    that passes arrays costs about 7 ns per array (reference counts), more than this
    work per position."""
    n = times.shape[0]
    k = duration.shape[0]
    live = 0  # the waiting sets not empty
    for e in range(waiting.shape[0]):
        if waiting[e] >= 0:
            live += 1
    while i < n:
        t = times[i]
        if entry == _FROM_START:
            if (timeouts and t > timed_until) or meta[0] + per_event > nodes.shape[0]:
                return i, _FROM_START
            if counts[4] > 0:  # a held match released or killed by event i
                due = False
                for f in range(ending.shape[0]):
                    due = due or sat[i, ending[f]]
                for j in range(counts[4]):
                    due = due or held[j, 0] <= t
                if due:
                    return i, _FROM_START
            entry = _FROM_POSITIONS
        if entry == _FROM_POSITIONS:
            # no set waits and no initial position's condition holds: event i changes
            # nothing but the discarded ranges (most events, for a selective pattern)
            idle = live == 0
            for j in range(initials.shape[0]):
                idle = idle and not sat[i, cond[initials[j]]]
            starts = False
            completes = False
            if not idle:
                for q in range(cond.shape[0]):
                    new[q] = -1
                    if not sat[i, cond[q]]:
                        continue
                    starts = starts or initial[q]
                    # new[q]: OUT(i, q, BOTTOM if q is initial ∪ the live sets waiting into q)
                    child = -1
                    mins = 2**62
                    maxs = -1
                    for s in range(k):
                        subs[s] = NO_TIME
                    if initial[q]:
                        child = BOTTOM
                        mins = i
                        maxs = i
                        for s in range(k):
                            if in_scope[q, s]:
                                subs[s] = t
                    for e in range(in_ptr[q], in_ptr[q + 1]):
                        w = waiting[e]
                        if w < 0:
                            continue
                        alive = not (gap[e] >= 0 and nodes[w, TIME] <= t - gap[e])
                        for s in range(k):
                            if step[e, s] == _INTERNAL and nodes[w, SUB + s] <= t - duration[s]:
                                alive = False
                        if alive and meta[1]:
                            alive = not covered(dead, meta, nodes[w, MINS], nodes[w, MAXS])
                        if not alive:
                            waiting[e] = -1
                            live -= 1
                            continue
                        excluded = False
                        for x in range(exclude_ptr[e], exclude_ptr[e + 1]):
                            excluded = excluded or sat[i, exclude[x]]
                        if excluded:
                            continue
                        child = w if child < 0 else new_union(nodes, meta, child, w)
                        mins = min(mins, nodes[w, MINS])
                        maxs = max(maxs, nodes[w, MAXS])
                        for s in range(k):
                            if step[e, s] == _INTERNAL:
                                subs[s] = max(subs[s], nodes[w, SUB + s])
                            elif step[e, s] == _ENTERS:
                                subs[s] = t
                    if child >= 0:
                        new[q] = new_out(nodes, meta, i, q, child, t, mins, maxs, subs)
                        completes = completes or final[q]
            if started.shape[0]:
                # an event that starts no partial match joins the discarded range before
                # it: ranges then meet across such events, and a set whose starts lie in
                # several is dropped as a whole (`covered`); joining a range needs no room
                started[i] = starts
                if not starts and i > 0 and covered(dead, meta, i - 1, i - 1):
                    merge_dead(dead, meta, i, i)
            if completes and not batch:
                return i, _FROM_ADVANCE
            if idle:
                i += 1
                entry = _FROM_START
                continue
        # the waiting sets after event i: a strict transition's, a next one's whose target
        # event i satisfies and one whose forbidden condition it satisfies are emptied;
        # each takes its source's new set
        live = 0
        for e in range(src.shape[0]):
            p = src[e]
            if waiting[e] < 0 and new[p] < 0:
                continue
            reset = mode[e] == _STRICT or (mode[e] == _NEXT and sat[i, cond[dst[e]]])
            for f in range(forbid_ptr[e], forbid_ptr[e + 1]):
                reset = reset or sat[i, forbid[f]]
            if reset:
                waiting[e] = -1
            if new[p] >= 0:
                waiting[e] = new[p] if waiting[e] < 0 else new_union(nodes, meta, waiting[e],
                                                                     new[p])
            if waiting[e] >= 0:
                live += 1
        i += 1
        entry = _FROM_START
    return i, _FROM_START


@numba.jit(**_JIT)
def _completed(nodes, final, lo, hi):
    """The completed sets among the nodes lo..hi − 1 (a final position's OUT nodes: only
    :func:`_events` makes OUT nodes), as rows (event, node), in the order made."""
    roots = np.empty((hi - lo, 2), dtype=np.int64)
    m = 0
    for x in range(lo, hi):
        if nodes[x, KIND] == OUT and final[nodes[x, B]]:
            roots[m, 0] = nodes[x, A]
            roots[m, 1] = x
            m += 1
    return roots[:m]


@numba.jit(**_JIT)
def _flat(rows, ev, m, used):
    """(emitted, offsets, events, positions) of a buffer's first m matches."""
    offsets = np.zeros(m + 1, dtype=np.int64)
    for j in range(m):
        offsets[j + 1] = offsets[j] + rows[j, 2]
    return rows[:m, 0].copy(), offsets, ev[:used, 0].copy(), ev[:used, 1].copy()


@numba.jit(**_JIT)
def _time_out(nodes, dead, meta, waiting, src, final, path, bounds, stack, in_scope,
              transition_of, gap, step, duration, whole, within, consume, consumed, cand,
              cand_ev, counts, lo, hi, times, emitted, name_rank, timed, timed_ev, subs,
              by_start):
    """Report the partial matches (not themselves matches) still waiting that time out
    at a time in (lo, hi] (:func:`_deadline`), in emission order, without those a skip
    policy discarded or that use a consumed event. Each waiting set's top OUT nodes are
    found with the transitions whose sets hold them; when only the query's within bounds
    time (no gap, no inner within) a match times out at its start + within, so sets are
    cut by start, else every live partial match is looked at."""
    counts[2] = 0
    counts[3] = 0
    tops = np.empty((64, 2), dtype=np.int64)  # (OUT node, a transition whose set holds it)
    n_tops = 0
    for e in range(waiting.shape[0]):
        if waiting[e] < 0 or final[src[e]]:
            continue
        stack[0, 0] = waiting[e]  # the enumeration's stack: one sibling per union above
        top = 1
        while top > 0:
            top -= 1
            x = stack[top, 0]
            if nodes[x, SUB + whole] + within <= lo or (
                    by_start and times[nodes[x, MINS]] + within > hi):
                continue  # every such match timed out by lo, or (by start) after hi
            if nodes[x, KIND] == UNION:
                stack[top, 0] = nodes[x, A]
                stack[top + 1, 0] = nodes[x, B]
                top += 2
            else:
                tops = grow_rows(tops, n_tops + 1)
                tops[n_tops, 0] = x
                tops[n_tops, 1] = e
                n_tops += 1
    if n_tops == 0:
        return cand, cand_ev, timed, timed_ev
    by_node = np.argsort(tops[:n_tops, 0], kind="mergesort")
    stamps = np.empty(16, dtype=np.int64)
    root = np.full((1, 2), emitted, dtype=np.int64)
    g = 0
    while g < n_tops:
        x = tops[by_node[g], 0]
        h = g
        while h < n_tops and tops[by_node[h], 0] == x:
            h += 1
        c0 = counts[2]
        root[0, 1] = x
        cand, cand_ev = _enumerate(nodes, dead, meta, root, 1, path, bounds, stack, in_scope,
                                   transition_of, gap, step, duration, whole, consume, consumed,
                                   cand, cand_ev, counts, lo - within,
                                   hi - within if by_start else 2**62, times, False)
        stamps = grow_rows(stamps, counts[2])
        for c in range(c0, counts[2]):
            stamps[c] = _deadline(cand_ev, cand[c, 1], cand[c, 2], times, tops, by_node, g, h,
                                  gap, step, duration, in_scope, transition_of, subs)
        g = h
    if counts[2] == 0:
        return cand, cand_ev, timed, timed_ev
    order = _order(cand, cand_ev, counts[2], name_rank)
    timed, timed_ev = _room(timed, timed_ev, counts, 6, counts[2], counts[3])
    for j in range(counts[2]):
        c = order[j]
        off, length = cand[c, 1], cand[c, 2]
        used = False
        for x in range(length):
            used = used or (consume and consumed[cand_ev[off + x, 0]])
        if not lo < stamps[c] <= hi or covered(dead, meta, cand_ev[off, 0], cand_ev[off, 0]) \
                or used:
            continue
        _put(timed, timed_ev, counts, 6, emitted, cand_ev, off, length)
        timed[counts[6] - 1, 3] = stamps[c]
    return cand, cand_ev, timed, timed_ev


@numba.jit(**_JIT)
def _deadline(cand_ev, off, length, times, tops, by_node, g, h, gap, step, duration, in_scope,
              transition_of, subs):
    """The time a partial match (events ``cand_ev[off:off + length]``) times out at: the
    latest, over the transitions whose waiting sets hold it (``tops[by_node[g:h], 1]``),
    of the first time that transition's bounds forbid its next event — its gap after the
    last event, each scope it stays in (the query's within among them) after the start
    of the match's instance of that scope."""
    k = duration.shape[0]
    for s in range(k):
        subs[s] = times[cand_ev[off, 0]] if in_scope[cand_ev[off, 1], s] else NO_TIME
    for x in range(1, length):
        tr = transition_of[cand_ev[off + x - 1, 1], cand_ev[off + x, 1]]
        for s in range(k):
            if step[tr, s] == _ENTERS:
                subs[s] = times[cand_ev[off + x, 0]]
            elif step[tr, s] != _INTERNAL:
                subs[s] = NO_TIME
    last = times[cand_ev[off + length - 1, 0]]
    out = NO_TIME
    for j in range(g, h):
        e = tops[by_node[j], 1]
        bound = 2**62
        if gap[e] >= 0:
            bound = min(bound, last + gap[e])
        for s in range(k):
            if step[e, s] == _INTERNAL:
                bound = min(bound, subs[s] + duration[s])
        out = max(out, bound)
    return out


@numba.jit(**_JIT)
def _enumerate(nodes, dead, meta, roots, n_roots, path, bounds, stack, in_scope, transition_of,
               gap, step, duration, whole, consume, consumed, cand, cand_ev, counts, lo, hi,
               times, least):
    """Append every match of the sets ``roots[:n_roots]`` (rows (event emitting it, an OUT
    node)) that meets its gaps and within bounds, starts where no policy discarded, at a
    time in (lo, hi], and uses no consumed event, to the candidates (emitted at, offset,
    length; events): :func:`_walk`, again with the candidates' buffers doubled while they
    are too small (its loop then grows none). With ``least`` only those whose first event
    is the least such (with ties, the first in emission order is among them)."""
    rows, events = counts[2], counts[3]
    while not _walk(nodes, dead, meta, roots, n_roots, path, bounds, stack, in_scope,
                    transition_of, gap, step, duration, whole, consume, consumed, cand, cand_ev,
                    counts, lo, hi, times, least):
        counts[2] = rows
        counts[3] = events
        cand = grow_rows(cand, 2 * cand.shape[0])
        cand_ev = grow_rows(cand_ev, 2 * cand_ev.shape[0])
    return cand, cand_ev


@numba.jit(**_JIT)
def _walk(nodes, dead, meta, roots, n_roots, path, bounds, stack, in_scope, transition_of, gap,
          step, duration, whole, consume, consumed, cand, cand_ev, counts, lo, hi, times,
          least):
    """:func:`_enumerate`'s depth-first walks (``stack`` holds a path's pending siblings:
    room for one per node); False if the candidates' buffers fill up. With ``least`` a
    set whose matches all start after the least start found so far is not walked."""
    k = duration.shape[0]
    best = 2**62  # the least first event of a candidate so far
    for r in range(n_roots):
        root = roots[r, 1]
        t_end = nodes[root, TIME]
        q_end = nodes[root, B]
        for s in range(k):
            bounds[0, s] = t_end - duration[s] + 1 if in_scope[q_end, s] else NO_TIME
        path[0] = root
        stack[0, 0] = nodes[root, C]
        stack[0, 1] = 1
        top = 1
        while top > 0:
            top -= 1
            s_node, d = stack[top, 0], stack[top, 1]
            o = path[d - 1]
            t_o = nodes[o, TIME]
            if s_node == BOTTOM:
                ok = lo < t_o <= hi and not (meta[1] and covered(dead, meta, nodes[o, A],
                                                                 nodes[o, A]))
                for s in range(k):
                    if in_scope[nodes[o, B], s] and t_o < bounds[d - 1, s]:
                        ok = False
                if not ok or (least and nodes[o, A] > best):
                    continue
                best = min(best, nodes[o, A])
                # the match path[d − 1], …, path[0] (first event to last)
                c, off = counts[2], counts[3]
                if c + 1 > cand.shape[0] or off + d > cand_ev.shape[0]:
                    return False
                cand[c, 0] = roots[r, 0]
                cand[c, 1] = off
                cand[c, 2] = d
                for j in range(d):
                    cand_ev[off + j, 0] = nodes[path[d - 1 - j], A]
                    cand_ev[off + j, 1] = nodes[path[d - 1 - j], B]
                counts[2] = c + 1
                counts[3] = off + d
                continue
            if meta[1] and covered(dead, meta, nodes[s_node, MINS], nodes[s_node, MAXS]):
                continue
            if least and nodes[s_node, MINS] > best:
                continue
            if whole >= 0 and (nodes[s_node, SUB + whole] < bounds[d - 1, whole]
                               or nodes[s_node, SUB + whole] <= lo):
                continue
            if nodes[s_node, MINS] >= 0 and times[nodes[s_node, MINS]] > hi:
                continue  # every start after hi (BOTTOM's -1 is no event)
            if nodes[s_node, KIND] == UNION:
                stack[top, 0] = nodes[s_node, B]
                stack[top, 1] = d
                stack[top + 1, 0] = nodes[s_node, A]
                stack[top + 1, 1] = d
                top += 2
                continue
            # an OUT node: the event before o on this path
            e = transition_of[nodes[s_node, B], nodes[o, B]]
            t_p = nodes[s_node, TIME]
            ok = not (gap[e] >= 0 and t_o - t_p >= gap[e])
            ok = ok and not (consume and consumed[nodes[s_node, A]])
            for s in range(k):
                if step[e, s] == _INTERNAL:
                    bounds[d, s] = bounds[d - 1, s]
                    ok = ok and t_p >= bounds[d - 1, s]
                else:
                    if step[e, s] == _ENTERS:
                        ok = ok and t_o >= bounds[d - 1, s]
                    p_in = in_scope[nodes[s_node, B], s]
                    bounds[d, s] = t_p - duration[s] + 1 if p_in else NO_TIME
            if not ok:
                continue
            path[d] = s_node
            stack[top, 0] = nodes[s_node, C]
            stack[top, 1] = d + 1
            top += 1
    return True


@numba.jit(**_JIT)
def _before(cand, cand_ev, name_rank, x, y):
    """Whether candidate x comes before y: the event emitting it, its events' numbers,
    then its variables' names."""
    if cand[x, 0] != cand[y, 0]:
        return cand[x, 0] < cand[y, 0]
    ox, lx, oy, ly = cand[x, 1], cand[x, 2], cand[y, 1], cand[y, 2]
    for j in range(min(lx, ly)):
        a, b = cand_ev[ox + j, 0], cand_ev[oy + j, 0]
        if a != b:
            return a < b
    if lx != ly:
        return lx < ly
    for j in range(lx):
        a, b = name_rank[cand_ev[ox + j, 1]], name_rank[cand_ev[oy + j, 1]]
        if a != b:
            return a < b
    return False


@numba.jit(**_JIT)
def _order(cand, cand_ev, n, name_rank):
    """The candidates' indices in emission order (a bottom-up merge sort)."""
    order = np.arange(n)
    scratch = np.empty(n, dtype=np.int64)
    width = 1
    while width < n:
        for lo in range(0, n, 2 * width):
            mid, hi = min(lo + width, n), min(lo + 2 * width, n)
            i, j, o = lo, mid, lo
            while i < mid and j < hi:
                if _before(cand, cand_ev, name_rank, order[j], order[i]):
                    scratch[o] = order[j]
                    j += 1
                else:
                    scratch[o] = order[i]
                    i += 1
                o += 1
            while i < mid:
                scratch[o] = order[i]
                i += 1
                o += 1
            while j < hi:
                scratch[o] = order[j]
                j += 1
                o += 1
        order, scratch = scratch, order
        width *= 2
    return order


@numba.jit(**_JIT)
def _keep(cand, cand_ev, counts, name_rank, skip, skip_names, consume, consumed, dead, meta,
          kept, kept_ev, started, limit):
    """Keep the candidates, in emission order, that no kept match discards; each kept
    match's discarded range is widened over the events around it that start no partial
    match (``started``, known up to event ``limit``), so that ranges meet."""
    n = counts[2]
    if n == 0:
        return dead, kept, kept_ev
    order = _order(cand, cand_ev, n, name_rank)
    kept, kept_ev = _room(kept, kept_ev, counts, 0, n, counts[3])
    dead = grow_rows(dead, meta[1] + n)  # a range per kept match at most
    for j in range(n):
        c = order[j]
        off, length = cand[c, 1], cand[c, 2]
        first, last = cand_ev[off, 0], cand_ev[off + length - 1, 0]
        if meta[1] and covered(dead, meta, first, first):
            continue
        if consume:
            used = False
            for x in range(length):
                used = used or consumed[cand_ev[off + x, 0]]
            if used:
                continue
            for x in range(length):
                consumed[cand_ev[off + x, 0]] = True
        _put(kept, kept_ev, counts, 0, cand[c, 0], cand_ev, off, length)
        if skip == _NO_SKIP:
            continue
        lo, hi = first, _discarded_to(skip, skip_names, cand_ev, off, length, first, last)
        if hi >= lo and started.shape[0]:
            while lo > 0 and not started[lo - 1] and not covered(dead, meta, lo - 1, lo - 1):
                lo -= 1
            while hi < limit and not started[hi + 1]:
                hi += 1
        merge_dead(dead, meta, lo, hi)
    return dead, kept, kept_ev


@numba.jit(**_JIT)
def _discarded_to(skip, skip_names, cand_ev, off, length, first, last):
    """The last start a kept match from ``first`` to ``last`` discards (< first: none)."""
    if skip == _PAST_LAST:
        return last
    if skip == _TO_FIRST:
        for x in range(length):
            if skip_names[cand_ev[off + x, 1]]:
                return cand_ev[off + x, 0] - 1
    if skip == _TO_LAST:
        for x in range(length - 1, -1, -1):
            if skip_names[cand_ev[off + x, 1]]:
                return cand_ev[off + x, 0] - 1
    return first  # TO_NEXT, and TO_FIRST/TO_LAST of a variable the match lacks


@numba.jit(**_JIT)
def _room(rows, ev, counts, slot, more_rows, more_ev):
    """The buffer (rows, ev) whose counts of rows and events are counts[slot],
    counts[slot + 1], grown to hold ``more_rows`` and ``more_ev`` more (:func:`_put`)."""
    return (grow_rows(rows, counts[slot] + more_rows),
            grow_rows(ev, counts[slot + 1] + more_ev))


@numba.jit(**_JIT)
def _put(rows, ev, counts, slot, key, src, off, length):
    """Append the match ``src[off:off + length]`` (events, positions) with ``key`` to the
    buffer (rows, ev) of :func:`_room`, which has room for it."""
    r, e = counts[slot], counts[slot + 1]
    rows[r, 0] = key
    rows[r, 1] = e
    rows[r, 2] = length
    for x in range(length):
        ev[e + x, 0] = src[off + x, 0]
        ev[e + x, 1] = src[off + x, 1]
    counts[slot] = r + 1
    counts[slot + 1] = e + length


@numba.jit(**_JIT)
def _hold(cand, cand_ev, counts, held, held_ev, times, within):
    """Hold the candidates until time reaches their first event's + ``within``."""
    held, held_ev = _room(held, held_ev, counts, 4, counts[2], counts[3])
    for c in range(counts[2]):
        off, length = cand[c, 1], cand[c, 2]
        deadline = times[cand_ev[off, 0]] + within
        _put(held, held_ev, counts, 4, deadline, cand_ev, off, length)
    return held, held_ev


@numba.jit(**_JIT)
def _release(held, held_ev, counts, cand, cand_ev, t, i, sat, ending):
    """Move the held matches whose wait is over at time t (every one for NO_TIME) to the
    candidates; drop those event i kills (it is after them and before their time)."""
    killing = False
    for f in range(ending.shape[0]):
        killing = killing or (i < sat.shape[0] and sat[i, ending[f]])
    n = counts[4]
    cand, cand_ev = _room(cand, cand_ev, counts, 2, n, counts[5])
    counts[4] = 0
    counts[5] = 0
    for j in range(n):
        off, length = held[j, 1], held[j, 2]
        if t == NO_TIME or held[j, 0] <= t:
            _put(cand, cand_ev, counts, 2, i, held_ev, off, length)
        elif not killing:  # still waiting: moved to the front (never past what it reads)
            _put(held, held_ev, counts, 4, held[j, 0], held_ev, off, length)
    return cand, cand_ev


guard_namespace(globals())
