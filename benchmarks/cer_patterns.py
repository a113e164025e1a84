"""CER with match output: the match kernel against a plain-Python NFA, RESULTS.md section
"cer_patterns".

Run (from the repository root)::

    .venv/bin/python benchmarks/cer_patterns.py       # 200,000 events; about 5 minutes
    .venv/bin/python benchmarks/cer_patterns.py --events 50000 --repeat 1 --only kleene \
        --output /tmp/R.md

Queries (``match(PATTERN, within W s, strategy S, skip P)``, the query families of CORE,
VLDB'22, and Flink CEP), each under strategy ``any`` / ``next`` / ``strict``:

* **seq k** — ``seq(t0, t1, ..., t{k-1})`` for k = 2, 3, 5, 8;
* **kleene** — ``seq(t0, plus(t1), t2)``;
* **disjunction** — ``seq(or(t0, t1), t2, or(t3, t4))``;
* ``skip past_last`` against the default ``no_skip`` for seq 3 and kleene.

W is 10, 100 or 1000 events' worth (under strict 10 and 1000: W barely matters for k
consecutive events). Skip-till-any-match makes a number of matches that grows like
W^(k-1) (seq) or 2^W (kleene): those configurations run only with the windows (10, 30,
100) whose output stays in the millions (:data:`CONFIGS`); the kernel enumerates every
match, and an output of 10^8 rows is no benchmark of the recognizer. The few
configurations of :data:`HEAVY` (a million matches or more, or a slow kernel) run on
50,000 events, the NFA on 5,000, their whole path timed once.

Stream: one key, ``--events`` events (numpy seed ``--seed``), tags uniform over the
alphabet t0..t9, event i at time i s (so W s is W events).

Measured per configuration, medians of ``--repeat`` timed runs, in events/s:

* **kernel** — :func:`codegen.cer.kernel.run_matches` (tables, ``sat`` bool[n, 10] and
  ``times`` precomputed), match output included (arrays: emitted, offsets, events,
  positions);
* **whole** — the user's path, ``m = qre(text); m.run_timed(times, tags)``: the query
  parsed and compiled, a list of str tags and an int64 array of seconds in, a pandas
  DataFrame with a row per match out (the one-time Numba compile excluded: warmed up on
  a tiny input first);
* **Python NFA** — :class:`PythonNFA`, what a user writes instead: explicit partial
  matches (the events' numbers, the automaton positions they play, the start time,
  which outgoing transitions are still open), over the position automaton of
  :func:`dt.cer.automaton.automaton`; per event each partial match is extended along
  every open transition the event's tag satisfies (a ``next`` transition closes once
  its tag is seen, a ``strict`` one after one event), new ones start, those past
  ``within`` are dropped, completed ones are emitted in emission order and filtered by
  the skip policy. It reads lists of int codes and times, on the first
  ``--python-events`` events (the ratios are of rates on the same stream);
* **matches** — kept matches over all the events; **live partial** — the Python NFA's
  partial matches after each event, mean over its events (the memory a per-partial-
  match engine holds per key);
* **graph** — the kernel's match graph (:mod:`codegen.cer.graph`), from a copy of the
  kernel's loop compiled here (:func:`_recorded_run`) whose ``compact``, ``_keep`` and
  ``_enumerate`` also record, in spare entries of ``meta``: the nodes kept by each
  compaction (mean: **graph live nodes**), the node array's capacity at the end
  (**graph bytes** = capacity × row width × 8), the matches enumerated before the skip
  policy (**candidates / match**: per kept match) and the nodes the enumeration visits
  (**visits / event**). Its match count is checked equal to :func:`run_matches`'. (The
  node array is replaced by each compaction, so the caller's ``nodes`` after
  :func:`codegen.cer.kernel._run` is the first array, not the last: hence the copy.)

Then **many keys** (:func:`keyed`): one query over the same events spread uniformly over
1 to 50,000 keys, the whole path with ``keys`` (one compiled loop over the keys:
:func:`codegen.cer.kernel.run_keys`) against the Python NFA run per key, its events
grouped by key beforehand (untimed); the rows checked equal.

Checked before anything is timed, for every configuration: the Python NFA's matches
equal the kernel's (:func:`codegen.cer.find_matches`) and the whole path's rows and
variables, exactly and in emission order, on the first ``--check-events`` events;
the Python NFA equals :func:`dt.cer.oracle.enumerate_matches` (the meaning) on a few
random 8-event inputs over the pattern's tags (times with random gaps, so that
``within`` binds); the whole path's and the kernel's match counts agree on every run.
Any mismatch aborts the run.
"""

from __future__ import annotations

import argparse
import datetime
import inspect
import os
import platform
import statistics
import sys
import time
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numba
import numpy as np
from results import RESULTS, write_section

from codegen.cer import find_matches, kernel
from codegen.cer.graph import FIELDS, NO_TIME, compact, covered
from codegen.cer.kernel import _keep, run_matches
from codegen.cer.tables import MatchTables
from dt.cer.automaton import ScopeStep, automaton
from dt.cer.oracle import enumerate_matches
from dt.cer.pattern import Contiguity, MatchQuery, SkipKind
from qre import qre
from qre.language.clock import UNIT_NS
from qre.runtime.cer.matches import Matcher

ALPHABET = tuple(f"t{i}" for i in range(10))
DELTA_NS = UNIT_NS["s"]

Emitted = tuple[int, tuple[int, ...], tuple[str, ...]]
"""A match as compared: the event it is emitted at, its events' numbers, its variables."""


@dataclass(frozen=True)
class Config:
    """One query: a family, its length k (seq), the window W (s = events), the strategy,
    the skip policy."""

    family: str
    k: int
    window: int
    strategy: str
    skip: str = "no_skip"

    @property
    def pattern(self) -> str:
        if self.family == "seq":
            return f"seq({', '.join(ALPHABET[:self.k])})"
        if self.family == "kleene":
            return "seq(t0, plus(t1), t2)"
        return "seq(or(t0, t1), t2, or(t3, t4))"

    @property
    def tags(self) -> int:
        """How many tags the pattern reads (t0 up to this)."""
        return {"seq": self.k, "kleene": 3, "disjunction": 5}[self.family]

    @property
    def text(self) -> str:
        return (f"alphabet {', '.join(ALPHABET)}; match({self.pattern}, within {self.window}s, "
                f"strategy {self.strategy}, skip {self.skip})")

    @property
    def heavy(self) -> bool:
        return (self.family, self.k, self.window, self.strategy, self.skip) in HEAVY

    @property
    def name(self) -> str:
        return f"seq {self.k}" if self.family == "seq" else self.family


_WINDOWS = {
    ("seq", 2): {"any": (10, 100, 1000), "next": (10, 100, 1000), "strict": (10, 1000)},
    ("seq", 3): {"any": (10, 100), "next": (10, 100, 1000), "strict": (10, 1000)},
    ("seq", 5): {"any": (10, 30), "next": (10, 100, 1000), "strict": (10, 1000)},
    ("seq", 8): {"any": (10, 30), "next": (10, 100, 1000), "strict": (10, 1000)},
    ("kleene", 3): {"any": (10, 30), "next": (10, 100, 1000), "strict": (10, 1000)},
    ("disjunction", 3): {"any": (10, 30), "next": (10, 100, 1000), "strict": (10, 1000)},
}
"""Per family and strategy, the windows W: under any only those whose output stays in the
millions of matches (module docstring); under strict W barely matters (k consecutive
events)."""

_PAST_LAST = (("seq", 3, 100, "any"), ("seq", 3, 1000, "any"), ("seq", 3, 100, "next"),
              ("seq", 3, 1000, "strict"), ("kleene", 3, 30, "any"), ("kleene", 3, 100, "any"),
              ("kleene", 3, 100, "next"),
              ("kleene", 3, 1000, "strict"))
"""The ``skip past_last`` configurations, each beside its ``no_skip`` twin."""

HEAVY = {("seq", 2, 1000, "any", "no_skip"), ("kleene", 3, 1000, "next", "no_skip"),
         ("seq", 3, 1000, "any", "past_last"), ("kleene", 3, 100, "any", "past_last")}
"""Configurations run on at most :data:`HEAVY_EVENTS` events (the NFA on a tenth), the
whole path timed once: a million matches or more on the default stream, or a slow
kernel."""

HEAVY_EVENTS = 50_000


def _configs() -> list[Config]:
    """The grid: :data:`_WINDOWS`, then :data:`_PAST_LAST`."""
    out = [Config(family, k, w, strategy)
           for (family, k), per in _WINDOWS.items() for strategy, ws in per.items() for w in ws]
    return out + [Config(family, k, w, strategy, "past_last")
                  for family, k, w, strategy in _PAST_LAST]


CONFIGS = _configs()


class PythonNFA:
    """Explicit partial matches over the position automaton of a query (module docstring).

    Supports contiguity, forbidden conditions, gaps, the whole pattern's ``within`` and
    the skip policies ``no_skip`` and ``past_last``: what the benchmark's queries use.
    Events carry one condition each (a tag code)."""

    def __init__(self, query: MatchQuery) -> None:
        auto = automaton(query)
        if (query.ending or query.consume
                or query.skip.kind not in (SkipKind.NO_SKIP, SkipKind.PAST_LAST)
                or len(auto.scopes) > (auto.whole is not None)):
            raise NotImplementedError("the Python NFA runs no_skip/past_last queries with no "
                                      "within on a sub-pattern, no negation at the end, no "
                                      "consume")
        n = len(auto.positions)
        self.names = tuple(p.name for p in auto.positions)
        self.final = tuple(q in auto.final for q in range(n))
        self.within = query.within
        self.past_last = query.skip.kind is SkipKind.PAST_LAST
        # per position: its open transitions as (bit, target, target's condition,
        # closes on the target's condition (next), closes after one event (strict),
        # forbidden conditions, gap or None)
        out: list[list[tuple[int, int, int, bool, bool, frozenset[int], int | None]]] = [
            [] for _ in range(n)]
        for t in auto.transitions:
            if any(s is ScopeStep.ENTERS for s in t.steps):
                raise NotImplementedError("a transition entering a within scope")
            bit = 1 << len(out[t.source])
            out[t.source].append((bit, t.target, auto.positions[t.target].cond,
                                  t.contiguity is Contiguity.NEXT,
                                  t.contiguity is Contiguity.STRICT, t.forbid, t.gap))
        self.out = out
        self.full = tuple((1 << len(out[q])) - 1 for q in range(n))
        self.starts: dict[int, list[int]] = {}
        for q in auto.initial:
            self.starts.setdefault(auto.positions[q].cond, []).append(q)

    def run(self, codes: Sequence[int], times: Sequence[int]) -> tuple[list[Emitted], float]:
        """The kept matches in emission order, and the mean number of live partial matches
        after an event."""
        out, full, final, names, within = self.out, self.full, self.final, self.names, self.within
        starts, past_last = self.starts, self.past_last
        partial: list[tuple[tuple[int, ...], tuple[int, ...], int, int]] = []
        matches: list[Emitted] = []
        live = 0
        for j, c in enumerate(codes):
            t = times[j]
            kept: list[tuple[tuple[int, ...], tuple[int, ...], int, int]] = []
            done: list[tuple[tuple[int, ...], tuple[int, ...]]] = []
            for pm in partial:
                events, positions, t0, open_ = pm
                if within is not None and t - t0 >= within:
                    continue
                still = open_
                for bit, q, cq, nxt, strict, forbid, gap in out[positions[-1]]:
                    if not open_ & bit:
                        continue
                    if cq == c:
                        if gap is None or t - times[events[-1]] < gap:
                            grown = (*events, j)
                            at = (*positions, q)
                            if full[q]:
                                kept.append((grown, at, t0, full[q]))
                            if final[q]:
                                done.append((grown, at))
                        if nxt:
                            still &= ~bit
                    if strict or c in forbid:
                        still &= ~bit
                if still:
                    kept.append((events, positions, t0, still) if still != open_ else pm)
            for q in starts.get(c, ()):
                if full[q]:
                    kept.append(((j,), (q,), t, full[q]))
                if final[q]:
                    done.append(((j,), (q,)))
            if done:
                found = sorted((events, tuple(names[q] for q in at)) for events, at in done)
                if past_last:
                    lowest = None  # the kept matches' ranges all end at j: one range
                    for events, var in found:
                        if lowest is not None and events[0] >= lowest:
                            continue
                        matches.append((j, events, var))
                        lowest = events[0] if lowest is None else min(lowest, events[0])
                    kept = [pm for pm in kept if pm[0][0] < lowest]  # type: ignore[operator]
                else:
                    matches += [(j, events, var) for events, var in found]
            partial = kept
            live += len(partial)
        return matches, live / max(len(codes), 1)


def _recorded_run() -> Callable[..., Any]:
    """The kernel's loop (:func:`codegen.cer.kernel._run`) compiled again with a
    ``compact``, a ``_keep`` and an ``_enumerate`` that record in ``meta[2:]``:
    compactions, their kept nodes summed, the node array's largest capacity, the candidate
    matches enumerated, the nodes the enumeration visits (its calls of ``covered``)."""

    @numba.njit(nogil=True)
    def compact_recorded(nodes: np.ndarray, meta: np.ndarray, dead: np.ndarray,
                         roots: np.ndarray, t: int, whole: int, within: int,
                         room: int) -> np.ndarray:
        out = compact(nodes, meta, dead, roots, t, whole, within, room)
        meta[2] += 1
        meta[3] += meta[0]
        meta[4] = max(meta[4], out.shape[0])
        return out

    @numba.njit(nogil=True)
    def keep_recorded(cand: np.ndarray, cand_ev: np.ndarray, counts: np.ndarray,
                      name_rank: np.ndarray, skip: int, skip_names: np.ndarray, consume: bool,
                      consumed: np.ndarray, dead: np.ndarray, meta: np.ndarray,
                      kept: np.ndarray, kept_ev: np.ndarray, started: np.ndarray, limit: int
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        meta[5] += counts[2]  # the candidates enumerated, before the skip policy
        return _keep(cand, cand_ev, counts, name_rank, skip, skip_names, consume, consumed,
                     dead, meta, kept, kept_ev, started, limit)

    @numba.njit(nogil=True)
    def covered_recorded(dead: np.ndarray, meta: np.ndarray, lo: int, hi: int) -> bool:
        meta[6] += 1  # a node the enumeration visits
        return covered(dead, meta, lo, hi)

    # the walk calls ``covered`` once per node it visits where a skip policy discarded
    # starts (else it skips the call): the recorded walk calls it at every visit
    source = inspect.getsource(kernel._walk.py_func)  # type: ignore[attr-defined]
    source = source[source.index("def "):].replace("meta[1] and covered(", "covered(")
    walk_ns = {**vars(kernel), "covered": covered_recorded}
    exec(compile(source, kernel.__file__, "exec"), walk_ns)  # the kernel's own source
    walk_recorded = numba.njit(nogil=True)(walk_ns["_walk"])
    enumerate_recorded = numba.njit(nogil=True)(types.FunctionType(
        kernel._enumerate.py_func.__code__,  # type: ignore[attr-defined]
        {**vars(kernel), "_walk": walk_recorded}, "_enumerate_recorded"))
    namespace = dict(vars(kernel))
    namespace["compact"] = compact_recorded
    namespace["_keep"] = keep_recorded
    namespace["_enumerate"] = enumerate_recorded
    loop = kernel._run.py_func  # type: ignore[attr-defined]
    return numba.njit(nogil=True)(types.FunctionType(loop.__code__, namespace, "_run_recorded"))


@dataclass(frozen=True)
class Graph:
    """The kernel's match graph over a run: mean nodes kept per compaction, bytes of the
    node array at the end, the kept matches' count (checked), the candidates the kernel
    enumerated (matches before the skip policy), the nodes its enumeration visited, and
    the ranges of discarded starts at the end (skip policies)."""

    live_nodes: float
    bytes: int
    matches: int
    candidates: int
    visits: int
    dead_ranges: int


def graph_size(run: Callable[..., Any], tables: MatchTables, sat: np.ndarray,
               times: np.ndarray) -> Graph:
    """Run ``run`` (:func:`_recorded_run`) as :func:`run_matches` runs the kernel."""
    k = tables.duration.shape[0]
    state = kernel.MatchState.fresh(tables)
    meta = np.concatenate([state.meta, np.zeros(5, dtype=np.int64)])
    capacity = state.nodes.shape[0]
    given = {"sat": sat, "times": times, "nodes": state.nodes, "dead": state.dead,
             "meta": meta, "waiting": state.waiting, "held": state.held,
             "held_ev": state.held_ev, "scalars": np.array([0, 0, 0, NO_TIME]),
             "consumed": np.zeros(len(times) if tables.consume else 0, dtype=np.bool_),
             "last": True, "until": NO_TIME}
    # the loop's arguments by name: the tables' fields, then the events and the state
    names = inspect.signature(kernel._run.py_func).parameters  # type: ignore[attr-defined]
    (emitted, *_), *_ = run(*(given[a] if a in given else getattr(tables, a) for a in names))
    compactions = int(meta[2])
    live = float(meta[3]) / compactions if compactions else float(meta[0])
    capacity = max(capacity, int(meta[4]))
    return Graph(live, capacity * (FIELDS + k) * 8, len(emitted), int(meta[5]),
                 int(meta[6]), int(meta[1]))


def one_hot(codes: np.ndarray, width: int) -> np.ndarray:
    sat = np.zeros((len(codes), width), dtype=np.bool_)
    sat[np.arange(len(codes)), codes] = True
    return sat


def kernel_matches(tables: MatchTables, sat: np.ndarray, times: np.ndarray) -> list[Emitted]:
    return [(m.emitted, m.events, m.names) for m in find_matches(tables, sat, times)]


def frame_matches(frame: Any) -> list[tuple[tuple[int, ...], tuple[str, ...]]]:
    return [(tuple(r), tuple(v)) for r, v in zip(frame["rows"], frame["vars"], strict=True)]


def check(config: Config, matcher: Matcher, nfa: PythonNFA, codes: np.ndarray,
          times: np.ndarray, tiny: int, seed: int) -> None:
    """The checks of the module docstring; SystemExit on a mismatch."""
    tables = matcher.tables(DELTA_NS)
    sat = one_hot(codes, len(ALPHABET))
    want, _ = nfa.run(codes.tolist(), times.tolist())
    got = kernel_matches(tables, sat, times)
    if got != want:
        _mismatch(config, "kernel", got, want, codes, times)
    rows = frame_matches(matcher.run_timed(times, [ALPHABET[c] for c in codes]))
    if rows != [(e, v) for _, e, v in want]:
        raise SystemExit(f"MISMATCH {config.text}: run_timed's rows differ from the NFA's "
                         f"on {len(codes)} events")
    rng = np.random.default_rng(seed)
    query = _query(matcher)
    for _ in range(tiny):
        small = rng.integers(0, config.tags + 1, 8)
        stamps = np.cumsum(rng.integers(0, max(2, config.window // 3), 8))
        oracle = [(m.emitted, m.events, m.names)
                  for m in enumerate_matches(query, one_hot(small, len(ALPHABET)), stamps)]
        mine, _ = nfa.run(small.tolist(), stamps.tolist())
        if mine != oracle:
            _mismatch(config, "oracle", oracle, mine, small, stamps)


def _mismatch(config: Config, engine: str, got: list[Emitted], want: list[Emitted],
              codes: np.ndarray, times: np.ndarray) -> None:
    j = next((j for j, (a, b) in enumerate(zip(got, want, strict=False)) if a != b),
             min(len(got), len(want)))
    first = min(x[0] for x in (got[j:j + 1] + want[j:j + 1]))
    raise SystemExit(
        f"MISMATCH {config.text}: {engine} against the Python NFA on {len(codes)} events, "
        f"first difference at match {j}: {engine} {got[j:j + 3]}, NFA {want[j:j + 3]}; "
        f"the prefix of {first + 1} events shows it: codes {codes[:first + 1].tolist()}, "
        f"times {times[:first + 1].tolist()}")


def _query(matcher: Matcher) -> MatchQuery:
    from qre.language.match_query import match_query

    return match_query(matcher.query, matcher.alphabet, DELTA_NS)


def timed(repeat: int, run: Callable[[], object]) -> tuple[float, object]:
    """The median wall time of ``repeat`` calls, and the last call's result."""
    seconds = []
    result: object = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = run()
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds), result


@dataclass(frozen=True)
class Row:
    config: Config
    events: int
    python_events: int
    matches: int
    matched_events: int
    kernel: float
    whole: float
    python: float
    live_partial: float
    graph: Graph

    def cells(self) -> list[str]:
        c = self.config
        return [c.name, f"{c.window}", c.strategy, c.skip,
                f"{self.events // 1000}k / {self.python_events // 1000}k", f"{self.matches:,}",
                f"{self.kernel:,.0f}", f"{self.whole:,.0f}", f"{self.python:,.0f}",
                f"{self.kernel / self.python:,.1f}x", f"{self.whole / self.python:,.1f}x",
                f"{self.live_partial:,.1f}", f"{self.graph.candidates / max(self.matches, 1):,.1f}",
                f"{self.graph.visits / self.events:,.1f}",
                f"{self.graph.live_nodes:,.0f}", f"{self.graph.bytes:,}"]


HEADER = ["pattern", "W", "strategy", "skip", "events kernel / NFA", "matches", "kernel ev/s",
          "whole ev/s", "Python NFA ev/s", "kernel / NFA", "whole / NFA",
          "live partial matches", "candidates / match", "visits / event", "graph live nodes",
          "graph bytes"]
RIGHT = set(HEADER[4:]) | {"W"}


def measure(config: Config, codes: np.ndarray, tags: list[str], times: np.ndarray,
            n_py: int, args: argparse.Namespace, recorded: Callable[..., Any]) -> Row:
    matcher = qre(config.text)
    assert isinstance(matcher, Matcher)
    nfa = PythonNFA(_query(matcher))
    check(config, matcher, nfa, codes[:args.check_events], times[:args.check_events],
          args.oracle_inputs, args.seed)
    n = len(codes)
    if config.heavy:
        n, n_py = min(n, HEAVY_EVENTS), min(n_py, HEAVY_EVENTS // 10)
        codes, tags, times = codes[:n], tags[:n], times[:n]
    tables = matcher.tables(DELTA_NS)
    sat = one_hot(codes, len(ALPHABET))

    t_kernel, out = timed(args.repeat, lambda: run_matches(tables, sat, times))
    matches = len(out[0])  # type: ignore[index]
    matched_events = len(out[2])  # type: ignore[index]

    def whole() -> int:
        m = qre(config.text)
        return len(m.run_timed(times, tags))  # type: ignore[union-attr]

    t_whole, rows = timed(1 if config.heavy else args.repeat, whole)
    if rows != matches:
        raise SystemExit(f"MISMATCH {config.text}: run_timed has {rows} rows, the kernel "
                         f"{matches} matches")
    py_codes, py_times = codes[:n_py].tolist(), times[:n_py].tolist()
    t_python, result = timed(args.repeat, lambda: nfa.run(py_codes, py_times))
    live = result[1]  # type: ignore[index]
    graph = graph_size(recorded, tables, sat, times)
    if graph.matches != matches:
        raise SystemExit(f"MISMATCH {config.text}: the recorded kernel found {graph.matches} "
                         f"matches, run_matches {matches}")
    return Row(config, n, n_py, matches, matched_events, n / t_kernel, n / t_whole,
               n_py / t_python, live, graph)


def markdown(rows: list[Row]) -> str:
    lines = ["| " + " | ".join(HEADER) + " |",
             "|" + "|".join("---:" if h in RIGHT else "---" for h in HEADER) + "|"]
    lines += ["| " + " | ".join(r.cells()) + " |" for r in rows]
    return "\n".join(lines)


def stream(n: int, seed: int) -> tuple[np.ndarray, list[str], np.ndarray]:
    """Tag codes uniform over the alphabet, the tags as str, times 0, 1, 2, ... s."""
    codes = np.random.default_rng(seed).integers(0, len(ALPHABET), n)
    return codes, [ALPHABET[c] for c in codes], np.arange(n, dtype=np.int64)


def _find(rows: list[Row], name: str, window: int, strategy: str,
          skip: str = "no_skip") -> Row | None:
    return next((r for r in rows if (r.config.name, r.config.window, r.config.strategy,
                                     r.config.skip) == (name, window, strategy, skip)), None)


def _span(values: Sequence[float], fmt: str = ",.0f") -> str:
    if not values:
        return "—"
    lo, hi = f"{min(values):{fmt}}", f"{max(values):{fmt}}"
    return lo if lo == hi else f"{lo}–{hi}"


def notes(rows: list[Row]) -> list[str]:
    """What the table says (the mechanisms are the kernel's; the numbers this run's)."""
    if not rows:
        return []
    kernel_ok = [r for r in rows if r.kernel >= 10 * r.python]
    whole_ok = [r for r in rows if r.whole >= 10 * r.python]
    best_k = max(rows, key=lambda r: r.kernel / r.python)
    best_w = max(rows, key=lambda r: r.whole / r.python)

    def label(r: Row) -> str:
        c = r.config
        return f"{c.name} W={c.window} {c.strategy}" + (f" {c.skip}" if c.skip != "no_skip"
                                                          else "")

    strict = [r for r in rows if r.config.strategy == "strict"]
    few = [r for r in rows if r.live_partial <= 2]
    busy = [r for r in rows if r.matches >= 0.1 * r.events]
    sparse = [r for r in rows if r.matches < 0.01 * r.events]
    many = [r for r in rows if r.live_partial >= 5 and r.config.skip == "no_skip"]
    densest = max(rows, key=lambda r: r.matches / r.events)
    out = [
        f"**The goal, the kernel with match output at 10x the Python NFA or more, is met in "
        f"{len(kernel_ok)} of {len(rows)} configurations (the whole path: {len(whole_ok)}).** "
        f"Best ratios: kernel {best_k.kernel / best_k.python:.1f}x ({label(best_k)}), whole "
        f"path {best_w.whole / best_w.python:.1f}x ({label(best_w)}). Why:",
        "",
        f"- *Few partial matches.* With at most 2 live the Python NFA runs at "
        f"{_span([r.python for r in few])} ev/s (a dict lookup and a short loop per event) "
        f"and the kernel at {_span([r.kernel for r in few])} ev/s "
        f"({_span([r.kernel / r.python for r in few], '.1f')}x; the strict rows "
        f"{_span([1e9 / r.kernel for r in strict], '.0f')} ns an event). An event no "
        "partial match waits for and that satisfies no initial position's condition costs "
        "a check per initial position; the others O(positions + transitions), in one "
        "compiled loop that passes no array to a call (Numba reference-counts each array a "
        "loop passes to a call or reassigns, about 7 ns apiece: the kernel at 9be98fd, "
        "built on such calls, cost 150–410 ns an event on the strict rows and reached 10x "
        "in 5 of 51); with no policy reading the kept matches (no skip, no consume, no "
        "negation at the end) the completed sets of many events are enumerated at once.",
        f"- *Many partial matches.* Where they pile up (any with W ≥ 30, kleene under next with "
        f"W ≥ 100; {len(many)} rows without a skip policy have 5 or more live) the NFA slows "
        "in proportion, while the "
        "kernel's work per event stays O(positions + transitions) plus its output: the kernel's "
        f"lead there is {_span([r.kernel / r.python for r in many], '.1f')}x, and stops there "
        f"because the output itself (up to {densest.matches / densest.events:.1f} matches an "
        "event; under kleene with a long window matches of tens of events) becomes the "
        "kernel's main cost.",
        "- *The whole path* (`run_timed`: a list of str tags and the times in, a DataFrame "
        "out) adds to the kernel the tags' conversion (a Python str an event), the order by "
        "time, the `sat` matrix and, per match, two Python lists in the frame (`rows`, "
        "`vars`), while the NFA starts from int codes and builds tuples: under 0.01 match an "
        f"event it runs at {_span([r.whole for r in sparse])} ev/s "
        f"({_span([1e9 / r.whole - 1e9 / r.kernel for r in sparse], '.0f')} ns an event "
        "beside the kernel's), at 0.1 match an event or more at "
        f"{_span([r.whole / r.python for r in busy], '.1f')}x the NFA.",
    ]
    pairs = [(_find(rows, "seq 3", 100, "any", "past_last"),
              _find(rows, "seq 3", 1000, "any", "past_last")),
             (_find(rows, "kleene", 30, "any", "past_last"),
              _find(rows, "kleene", 100, "any", "past_last"))]
    slow = [(a, b) for a, b in pairs if a is not None and b is not None]
    if slow:
        said = "; ".join(
            f"{a.config.name} W={a.config.window} → {b.config.window}: {a.kernel:,.0f} → "
            f"{b.kernel:,.0f} ev/s, {a.graph.visits / a.events:,.0f} → "
            f"{b.graph.visits / b.events:,.0f} nodes visited an event, the NFA "
            f"{a.python:,.0f} → {b.python:,.0f} ev/s, candidates per kept match "
            f"{a.graph.candidates / max(a.matches, 1):.1f} → "
            f"{b.graph.candidates / max(b.matches, 1):.1f}" for a, b in slow)
        worst = slow[0][1]
        still = any(b.kernel < a.kernel / 4 for a, b in slow)
        out.append(
            f"- *`skip past_last` under any with a long window* ({said}): "
            f"{'still slow' if still else 'about as fast as with a short one'}. The kernel "
            "skips a set of partial matches whose starts are all discarded when one "
            "discarded range holds all of them (`covered` on the set's MINS..MAXS); past_last "
            "discards [first, last] of each kept match, and a range is widened over the "
            "events around it that start no partial match (and such an event joins the "
            "range just before it), so the ranges meet "
            f"({worst.graph.dead_ranges:,} ranges for {worst.matches:,} kept matches in "
            f"{worst.config.name} W={worst.config.window}) and a waiting set, a union over "
            "the whole window, is dropped as soon as its starts are all discarded. Before "
            "that widening (2026-11-28, the same command) the ranges stayed apart (1,486 "
            "for 1,641 kept matches in seq 3 W=1000), every completing event walked every "
            "discarded path still in the window, and these two rows ran at 0.0–0.1x the "
            "NFA (seq 3 W=1000: 44,668 ev/s, 638 nodes visited an event; kleene W=100: "
            "4,129 ev/s, 5,721).")
    below = [r for r in rows if r.kernel < 10 * r.python]
    if below:
        out.append(
            "- *Below 10x*: " + "; ".join(
                f"{label(r)} ({r.kernel / r.python:.1f}x): {r.matches / r.events:.1f} matches "
                f"of {r.matched_events / max(r.matches, 1):.0f} events each per input event, "
                f"{r.matched_events / r.events:,.0f} matched events written per input event, "
                f"{1e9 / r.kernel / max(r.matched_events / r.events, 1):.0f} ns each"
                for r in below)
            + ". Where the output is that large, writing it (each matched event as an "
            "(event, position) pair: to the candidates, to the kept matches, then to the "
            "output arrays, in memory the run has to fault in) is the kernel's cost, as "
            "building its tuples is the NFA's; a row whose twin (the same work under "
            "another window) is above 10x is noise.")
    ratios = [r.graph.live_nodes / r.live_partial for r in many]
    first = all(r.graph.bytes == 1024 * (FIELDS + 1) * 8 for r in rows)
    out.append(
        ("- *Memory.* The node array stayed at its first capacity, 1,024 nodes "
         if first else "- *Memory.* The node array held ")
        + f"({_span([r.graph.bytes for r in rows])} bytes) in every configuration; after a "
        f"compaction it held {_span([r.graph.live_nodes for r in rows])} nodes, where there "
        f"were 5 or more live partial matches {_span(ratios, '.1f')} nodes per partial "
        "match (unions and shared prefixes: a node per event of a partial match, shared, and "
        "a union per waiting set it joins), against the NFA's tuple of events per partial "
        "match.")
    twins = [(r, t) for r in rows for t in rows if r.config.strategy == "strict"
             and r.config.window == 10 and t.config.window == 1000
             and (t.config.name, t.config.strategy, t.config.skip)
             == (r.config.name, r.config.strategy, r.config.skip)]
    if twins:
        spread = max(max(x / y, y / x) for r, t in twins
                     for x, y in ((r.kernel, t.kernel), (r.whole, t.whole),
                                  (r.python, t.python)))
        out.append(
            "- *Noise.* Under strict, W = 10 and W = 1000, measured one after the other, do "
            f"the same work; their rates differ by up to {spread:.1f}x here. The machine (a "
            "shared 2-core virtual machine) drifts more over a run and between runs: the "
            "unchanged Python NFA's rates on one configuration have differed up to 2x between "
            "runs of this command. Read the ratios, measured back to back on the same events, "
            "rather than the absolute rates, and the pattern across rows rather than one row.")
    return out


KEYED = Config("seq", 3, 100, "next")
"""The query of the keyed measurement (:func:`keyed`), its window in events per key: over
K keys ``within`` is K times longer, so that a key's window holds as many of its events."""

KEY_COUNTS = (1, 100, 10_000, 50_000)


def keyed(codes: np.ndarray, tags: list[str], times: np.ndarray, repeat: int,
          seed: int) -> list[str]:
    """The whole path over the stream's events spread over K keys (uniform at random):
    ``run_timed(..., keys=...)`` against the Python NFA run per key (its events grouped
    by key with numpy first, not timed), events/s; the rows checked equal (as sets of
    (key, events))."""
    lines = ["| keys | events / key | within | matches | whole ev/s | Python NFA ev/s | "
             "whole / NFA |", "|---:|---:|---:|---:|---:|---:|---:|"]
    for count in KEY_COUNTS:
        config = Config(KEYED.family, KEYED.k, KEYED.window * count, KEYED.strategy)
        matcher = qre(config.text)
        assert isinstance(matcher, Matcher)
        nfa = PythonNFA(_query(matcher))
        keys = np.random.default_rng(seed + 1).integers(0, count, len(codes))  # not the tags
        t_whole, frame = timed(repeat, lambda k=keys, m=matcher: m.run_timed(times, tags,
                                                                            keys=k))
        by_key = np.argsort(keys, kind="stable")
        cuts = np.flatnonzero(np.diff(keys[by_key])) + 1
        groups = [(int(keys[g[0]]), g.tolist()) for g in np.split(by_key, cuts) if len(g)]
        grouped = [(k, codes[g].tolist(), times[g].tolist(), g) for k, g in groups]

        def per_key(grouped: list[Any] = grouped, nfa: PythonNFA = nfa
                    ) -> list[tuple[int, tuple[int, ...]]]:
            return [(k, tuple(rows[e] for e in events)) for k, c, t, rows in grouped
                    for _, events, _ in nfa.run(c, t)[0]]

        t_python, want = timed(repeat, per_key)
        got = {(int(k), tuple(r)) for k, r in zip(frame["key"], frame["rows"], strict=True)}  # type: ignore[index]
        if got != set(want):  # type: ignore[arg-type]
            raise SystemExit(f"MISMATCH {config.text} over {count} keys: run_timed "
                             f"{len(got)} rows, the NFA {len(want)}")  # type: ignore[arg-type]
        lines.append(f"| {count:,} | {len(codes) / count:,.0f} | {config.window:,}s | "
                     f"{len(got):,} | "
                     f"{len(codes) / t_whole:,.0f} | {len(codes) / t_python:,.0f} | "
                     f"{t_python / t_whole:.1f}x |")
        print(lines[-1], flush=True)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--python-events", type=int, default=20_000)
    parser.add_argument("--check-events", type=int, default=3_000)
    parser.add_argument("--oracle-inputs", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", default=None, help="run the configurations whose pattern "
                        "name contains this (e.g. kleene)")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    command = " ".join([".venv/bin/python benchmarks/cer_patterns.py", *sys.argv[1:]])
    n = args.events
    n_py = min(n, args.python_events)
    codes, tags, times = stream(n, args.seed)
    begun = time.perf_counter()
    warm = qre(CONFIGS[0].text)
    assert isinstance(warm, Matcher)
    warm.run_timed(times[:50], tags[:50])  # the one-time Numba compile (or cache load)
    recorded = _recorded_run()
    rows = []
    for config in CONFIGS:
        if args.only is not None and args.only not in config.name:
            continue
        rows.append(measure(config, codes, tags, times, n_py, args, recorded))
        print(" | ".join(rows[-1].cells()), flush=True)
    table = markdown(rows)
    machine = (f"{platform.machine()}, {os.cpu_count()} cores, Python "
               f"{platform.python_version()}, numba {numba.__version__}, "
               f"{numba.get_num_threads()} Numba threads")
    text = "\n".join([
        "## cer_patterns: the match kernel with match output against a plain-Python NFA",
        "",
        f"`{command}` on {datetime.date.today()} ({machine}); {time.perf_counter() - begun:.0f} s "
        f"in all. One key, {n:,} events (tags uniform over t0..t9, event i at i s: W s is W "
        f"events; the {len(HEAVY)} heavy configurations on at most {HEAVY_EVENTS:,}, their "
        "whole path timed once), the "
        "Python NFA on the first tenth; events/s, medians of "
        f"{args.repeat}; see the script's docstring for what each column measures. Every "
        "configuration checked first: the NFA's matches equal the kernel's and `run_timed`'s "
        f"(first {args.check_events:,} events, in emission order) and the oracle's "
        f"({args.oracle_inputs} random 8-event inputs); the kernel's and `run_timed`'s match "
        "counts equal on every timed run.",
        "",
        table,
        "",
        *notes(rows),
        "",
        f"Many keys: `{KEYED.pattern}` (strategy {KEYED.strategy}, within {KEYED.window} s "
        f"times K: {KEYED.window} of a key's events) over the same {n:,} events spread "
        "uniformly over K keys, the whole path (`run_timed` with "
        "`keys`: one compiled loop over the keys, `codegen.cer.kernel.run_keys`) against the "
        "Python NFA run per key (its events grouped by key beforehand, untimed); medians "
        f"of {args.repeat}; the rows checked equal.",
        "",
        *keyed(codes, tags, times, args.repeat, args.seed),
        "",
    ])
    print(text)
    write_section(args.output, "cer_patterns", text)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
