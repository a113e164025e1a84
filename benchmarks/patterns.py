"""CER pattern throughput: compiled monitors against a plain-Python NFA, RESULTS.md section
"patterns".

Run (from the repository root)::

    .venv/bin/python benchmarks/patterns.py            # 1,000,000 events; about 15 seconds
    .venv/bin/python benchmarks/patterns.py --events 100000 --output /tmp/RESULTS.md

What is measured. Complex-event-recognition patterns (skip-till-any-match,
qre/language/patterns.py) over seeded random events (numpy seed 0; tags uniform over
the query's alphabet; integer seconds increasing by 0–3 per event, equal
times ordered by tag code, the order ``run_timed`` gives them), in events/s:
events divided by the wall-clock seconds of one pass over all of them,
outputs collected, best of 3:

* **codegen ``run``** — ``Monitor.run`` on int64 tag codes, the fast path
  (for the ``within`` pattern with the record ``run_timed`` hands the
  engine: the time and the duration in seconds as fields);
* **codegen ``run_timed``** — the ``within`` pattern only: times and codes
  in, a DataFrame out (``run_timed`` also orders the events, adds the time
  fields and builds the frame);
* **table** — ``Monitor.run`` on the same input with the table engine;
* **Python NFA** — the peer written here (:class:`PythonNFA`), the standard
  counting run of an NFA: the pattern as an ε-free NFA whose states are its
  junctions (the start, one per ``seq`` junction, one per ``plus``), each
  state keeping its weight when an event is skipped (skip-till-any-match)
  unless a ``not`` forbids the event's tag; one Python loop over a list of
  int tag codes, per event only the moves of its tag. The weights are match
  counts for ``matches`` (floats, as qre's are: Python ints would stay exact
  but grow to thousands of digits, see the notes), reachable states
  (booleans) for ``matched``, the latest start time per state for
  ``matched(within(...))``. It reads all the events unless
  ``--python-events M`` (then the first M: the ratios are of rates).

Every output is cross-checked before anything is timed: table and codegen
equal bit for bit (status and value; every status is 1, a pattern query is
always defined), ``run_timed`` equal to ``run`` row for row, and the Python
NFA's values equal to codegen's exactly. Times exclude one-off work: each
engine is prepared first (codegen's compile time, cold in a fresh kernel
cache, is reported on its own); the peer's NFA is built and its input
converted to lists beforehand. The ratios divide rates measured side by side
in this one process, on the same events. The notes say how often a match
ends, or for counts where they leave the exact floats (above 2^53) and
overflow to +inf: with ``plus`` at the end, skip-till-any-match makes 2^k
matches of k events, so counts saturate within a few thousand events.
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numba
import numpy as np
from results import RESULTS, write_section

from qre import Monitor, qre
from qre.language import ast
from qre.language.parser import parse
from qre.language.patterns import CLOCK_FIELD, duration_field

PATTERNS: dict[str, str] = {
    "a then b": "alphabet a, b, c; matched(seq(a, b))",
    "a, no c, then b+ (count)": "alphabet a, b, c; matches(seq(a, not(c), plus(b)))",
    "a, no c, then b+ (matched)": "alphabet a, b, c; matched(seq(a, not(c), plus(b)))",
    "a, b, c within 10 s": "alphabet a, b, c; matched(within(seq(a, b, c), 10s))",
    "larger (count)": ("alphabet a, b, c, d, e; "
                       "matches(seq(or(a, b), not(d), and(c, e), plus(b)))"),
}

RUNS = 3
MAX_GAP_S = 3
"""Times: integer seconds, each event 0..MAX_GAP_S after the previous one."""


# --------------------------------------------------------------------------- the peer


class PythonNFA:
    """A pattern as an NFA over tags, run one event at a time in plain Python.

    States: 0 is the start (a match may start at any event: weight 1, or the
    event's time for ``within``); one per ``seq`` junction (matches of the
    parts before it that have ended) and one per ``plus`` (matches of one or
    more repetitions that have ended). Each state keeps its weight across
    events (skipped events), except that the junction after a ``not(c | d)``
    drops it at an event of c or d. An event of tag t moves the weight of a
    state along every edge ``(state, t, target)``; an edge into :data:`FINAL`
    completes a match at this event. Parallel edges count separately (``or(a,
    a)`` matches an ``a`` twice), as matches do.
    """

    FINAL = -1

    def __init__(self, pattern: ast.Pattern, alphabet: Sequence[str]) -> None:
        self.forbidden: list[frozenset[str]] = [frozenset()]  # state 0: the start
        self.edges: list[tuple[int, str, int]] = []
        self._connect(self._fragment(pattern, [0]), self.FINAL)
        # Per tag code: (states the tag resets, moves (source, target), sources of matches).
        self.table: list[tuple[tuple[int, ...], tuple[tuple[int, int], ...], tuple[int, ...]]] = [
            (tuple(s for s, f in enumerate(self.forbidden) if tag in f),
             tuple((s, d) for s, t, d in self.edges if t == tag and d != self.FINAL),
             tuple(s for s, t, d in self.edges if t == tag and d == self.FINAL))
            for tag in alphabet]

    @property
    def states(self) -> int:
        return len(self.forbidden)

    def _state(self, forbidden: frozenset[str] = frozenset()) -> int:
        self.forbidden.append(forbidden)
        return len(self.forbidden) - 1

    def _connect(self, dangling: list[tuple[int, str]], target: int) -> None:
        self.edges.extend((s, tag, target) for s, tag in dangling)

    def _fragment(self, p: ast.Pattern, entries: list[int]) -> list[tuple[int, str]]:
        """Edges ``(state, tag)`` that complete a match of ``p`` begun from ``entries``
        (their targets are connected by the caller)."""
        if isinstance(p, ast.PatternTag):
            return [(s, p.tag) for s in entries]
        if isinstance(p, ast.PatternOr):
            return self._fragment(p.left, entries) + self._fragment(p.right, entries)
        if isinstance(p, ast.PatternAnd):
            return self._fragment(ast.PatternOr(ast.PatternSeq((p.left, p.right)),
                                                ast.PatternSeq((p.right, p.left))), entries)
        if isinstance(p, ast.PatternPlus):
            again = self._state()
            dangling = self._fragment(p.body, [*entries, again])
            self._connect(dangling, again)
            return dangling
        assert isinstance(p, ast.PatternSeq), f"not supported by the peer: {p!r}"
        first, *rest = p.parts
        assert isinstance(first, ast.Pattern)  # type: ignore[arg-type]
        dangling = self._fragment(first, entries)
        forbidden: set[str] = set()
        for part in rest:
            if isinstance(part, ast.PatternNot):
                forbidden |= set(part.tags)
                continue
            junction = self._state(frozenset(forbidden))
            self._connect(dangling, junction)
            dangling = self._fragment(part, [junction])
            forbidden = set()
        return dangling

    def count(self, codes: list[int]) -> list[float]:
        """``matches``: the number of matches ending at each event."""
        table = self.table
        w = [0.0] * self.states
        w[0] = 1.0
        out = []
        for code in codes:
            resets, moves, finals = table[code]
            total = 0.0
            for s in finals:
                total += w[s]
            out.append(total)
            if moves:
                old = w[:]  # every move reads the weights before this event
                for s in resets:
                    w[s] = 0.0
                for s, d in moves:
                    w[d] += old[s]
            else:
                for s in resets:
                    w[s] = 0.0
        return out

    def matched(self, codes: list[int]) -> list[float]:
        """``matched``: 1.0 if a match ends at this event (the set of reachable states)."""
        table = self.table
        on = [False] * self.states
        on[0] = True
        out = []
        for code in codes:
            resets, moves, finals = table[code]
            hit = 0.0
            for s in finals:
                if on[s]:
                    hit = 1.0
                    break
            out.append(hit)
            if moves:
                old = on[:]
                for s in resets:
                    on[s] = False
                for s, d in moves:
                    if old[s]:
                        on[d] = True
            else:
                for s in resets:
                    on[s] = False
        return out

    def matched_within(self, codes: list[int], times: list[int], duration: int) -> list[float]:
        """``matched(within(p, D))``: the latest start time of the partial matches per
        state; a match ends here if the latest start is less than ``duration`` ago."""
        table = self.table
        none = -math.inf
        start = [none] * self.states
        out = []
        for code, t in zip(codes, times, strict=True):
            resets, moves, finals = table[code]
            start[0] = t  # a match may start at this event
            latest = none
            for s in finals:
                if start[s] > latest:
                    latest = start[s]
            out.append(1.0 if t - latest < duration else 0.0)
            if moves:
                old = start[:]
                for s in resets:
                    start[s] = none
                for s, d in moves:
                    if old[s] > start[d]:
                        start[d] = old[s]
            else:
                for s in resets:
                    start[s] = none
        return out


# --------------------------------------------------------------------------- helpers


def events(n: int, n_tags: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``n`` seeded random events: tag codes (uniform) and integer seconds (increasing by
    0..MAX_GAP_S), equal times ordered by tag code — the order ``run_timed`` uses, so
    that every engine and the peer see the events in the same order."""
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, n_tags, n).astype(np.int64)
    times = np.cumsum(rng.integers(0, MAX_GAP_S + 1, n)).astype(np.int64)
    order = np.lexsort((codes, times))
    return codes[order], times[order]


def best_of(runs: int, fn: Callable[[], Any]) -> tuple[float, Any]:
    """The fastest of ``runs`` calls of ``fn`` (seconds) and its last result."""
    best, out = float("inf"), None
    for _ in range(runs):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def prepared(m: Monitor, engine: str) -> float:
    """Make ``engine`` ready for ``m`` (compile or load); the seconds it took."""
    start = time.perf_counter()
    m.prepare(engine)
    return time.perf_counter() - start


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal float64 arrays bit for bit (NaN equals NaN, -0.0 differs from 0.0)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return a.shape == b.shape and np.array_equal(a.view(np.int64), b.view(np.int64))


def first_difference(want: np.ndarray, got: Sequence[float]) -> str:
    k = int(np.flatnonzero(np.asarray(want) != np.asarray(got))[0])
    return f"first difference at event {k}: ours {want[k]!r}, Python NFA {got[k]!r}"


def saturation(value: np.ndarray) -> str:
    """Where counts leave the exact floats (2^53) and where they overflow to +inf."""
    big = np.flatnonzero(value > 2.0**53)
    if not len(big):
        return f"largest count {value.max():,.0f}"
    inf = np.flatnonzero(np.isinf(value))
    where = (f"+inf from event {inf[0]:,} on ({np.isinf(value).mean():.0%} of the events)"
             if len(inf) else "never +inf")
    return f"counts above 2^53 from event {big[0]:,}, {where}"


# --------------------------------------------------------------------------- measuring


@dataclass
class Row:
    name: str
    text: str
    dt_states: int
    nfa_states: int
    compile_s: float
    rates: dict[str, float]
    note: str


def measure(name: str, text: str, n: int, n_py: int) -> Row:
    query = parse(text).query
    assert isinstance(query, ast.Matches), text
    pattern, duration = query.pattern, None
    if isinstance(pattern, ast.PatternWithin):
        pattern, duration = pattern.body, pattern.duration
    m = qre(text)
    codes, times = events(n, len(m.alphabet))
    values = None
    if duration is not None:  # the record run_timed builds: the time in δ (s), the duration
        values = {CLOCK_FIELD: times.astype(np.float64),
                  duration_field(duration): np.full(n, float(-(-duration // 10**9)))}
    compile_s = prepared(m, "codegen")
    m.prepare("table")

    # Cross-checks, before timing.
    ours = m.run(codes, values, engine="codegen")
    table = m.run(codes, values, engine="table")
    assert np.array_equal(ours.status, table.status) and same_bits(ours.value, table.value), name
    assert (ours.status == 1).all(), name
    nfa = PythonNFA(pattern, m.alphabet)
    code_list, time_list = codes[:n_py].tolist(), times[:n_py].tolist()
    limit = None if duration is None else -(-duration // 10**9)  # whole seconds

    def peer() -> list[float]:
        if limit is not None:
            return nfa.matched_within(code_list, time_list, limit)
        return nfa.count(code_list) if query.count else nfa.matched(code_list)

    if duration is not None:
        frame = m.run_timed(times, codes, engine="codegen", time_unit="s", undefined="keep")
        assert np.array_equal(frame["row"].to_numpy(), np.arange(n)), name
        assert same_bits(frame["value"].to_numpy(), ours.value), name
    got = peer()
    assert same_bits(ours.value[:n_py], got), f"{name}: {first_difference(ours.value, got)}"

    rates = {}
    for engine in ("codegen", "table"):
        seconds, _ = best_of(RUNS, lambda engine=engine: m.run(codes, values, engine=engine))
        rates[engine] = n / seconds
    if duration is not None:
        seconds, _ = best_of(RUNS, lambda: m.run_timed(times, codes, engine="codegen",
                                                       time_unit="s"))
        rates["run_timed"] = n / seconds
    seconds, _ = best_of(RUNS, peer)
    rates["python"] = n_py / seconds
    note = (saturation(ours.value) if query.count
            else f"{ours.value.mean():.1%} of the events end a match")
    return Row(name, text.split(";", 1)[1].strip(), len(m.dt.states), nfa.states, compile_s,
               rates, note)


def markdown(rows: list[Row]) -> str:
    lines = ["| pattern | query | DT states | NFA states | codegen `run` ev/s | "
             "codegen `run_timed` ev/s | table ev/s | Python NFA ev/s | codegen `run` / Python | "
             "codegen `run_timed` / Python | codegen / table | codegen compile s |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        python, timed = r.rates["python"], r.rates.get("run_timed")
        lines.append(
            f"| {r.name} | `{r.text}` | {r.dt_states} | {r.nfa_states} | "
            f"{r.rates['codegen']:,.0f} | {'—' if timed is None else f'{timed:,.0f}'} | "
            f"{r.rates['table']:,.0f} | {python:,.0f} | {r.rates['codegen'] / python:.1f}x | "
            f"{'—' if timed is None else f'{timed / python:.1f}x'} | "
            f"{r.rates['codegen'] / r.rates['table']:.1f}x | {r.compile_s:.2f} |")
    return "\n".join(lines)


# --------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--python-events", type=int, default=None,
                        help="run the Python NFA on this prefix only (default: all events)")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    n = args.events
    n_py = n if args.python_events is None else min(n, args.python_events)
    command = " ".join(["benchmarks/patterns.py", *sys.argv[1:]])
    # A fresh kernel cache: codegen compile times are cold compiles, not disk-cache loads.
    cache = tempfile.TemporaryDirectory(prefix="qre-bench-")
    os.environ["QRE_CACHE_DIR"] = cache.name

    rows = []
    for name, text in PATTERNS.items():
        rows.append(measure(name, text, n, n_py))
        print(f"{name}: {rows[-1].rates}", flush=True)
    table_md = markdown(rows)
    print(table_md)

    machine = (f"{platform.machine()}, {os.cpu_count()} cores, Python "
               f"{platform.python_version()}, numba {numba.__version__}, "
               f"{numba.get_num_threads()} Numba threads")
    text = "\n".join([
        "## CER patterns: compiled monitors against a plain-Python NFA",
        "",
        f"Produced by `.venv/bin/python {command}` on {datetime.date.today()} "
        f"({machine}). {n:,} seeded random events per pattern (tags uniform over the "
        f"alphabet; times in whole seconds, +0..{MAX_GAP_S} per event), the Python NFA on "
        f"{'all of them' if n_py == n else f'the first {n_py:,}'}; events/s, best of {RUNS}; "
        "see the script's docstring for what each column measures. Rerun the command to "
        "reproduce.",
        "",
        table_md,
        "",
        f"- outputs of table and codegen (all {n:,} events, status and value bit for bit), "
        "of `run_timed` (the `within` pattern) and of the Python NFA "
        f"({'all' if n_py == n else f'first {n_py:,}'} events, values exactly) identical, "
        "checked before timing",
        "- `run` reads int64 tag codes (and, for `within`, the time and duration fields "
        "`run_timed` would build); `run_timed` also orders the events and builds a DataFrame; "
        "the Python NFA reads a list of int codes (and of times).",
        *[f"- {r.name}: {r.note}" for r in rows],
        "",
    ])
    write_section(args.output, "patterns", text)
    print(f"wrote {args.output}")
    cache.cleanup()


if __name__ == "__main__":
    main()
