"""qre against reelay and rtamt on the Timescales suite: bounded past-time MTL (issue 21 §4).

The suite. Timescales (D. Ulus, "Timescales: A Benchmark Generator for MTL Monitoring
Tools", RV 2019; github.com/doganulus/timescales, ``src/timescales/properties``) is
the benchmark reelay was measured on: ten families of specification patterns
(Dwyer et al.'s absence, universality, recurrence and response, under the scopes
"globally", "after Q", "before R", "between Q and R"), each as a past-time MTL
formula with a time bound ×10, ×100 or ×1000, over discrete-time traces of
propositions p, q, r, s (one row per time step, time = row number). The formulas
below are the generator's, written for each tool (bounds ``[:u]`` and ``[l:u]`` with
u = 10, 100, 1000 and l = 3, 30, 300); the traces are generated here from the
published definitions of each family (this file's ``_FAMILIES``, written from the
generator's description, not copied), with a fixed seed (the original sets none),
cut to exactly N rows (the original overshoots by up to one period).

One deviation: the repository writes AbsentBQR as ``historically(A) -> B``, which
reelay parses as ``(historically A) -> B`` — true at every step, since A is false at
the first — while the paper (§3) and the analogous AlwaysBQR mean
``historically(A -> B)``; the intended formula is used for every tool.

The tools, side by side in one process over the same trace:

* **reelay** 25.0 (C++ with Python bindings): ``discrete_timed_monitor(condense=
  False)``, one ``update(dict)`` per row from Python (reelay's Python API; its C++
  core cannot be timed from Python without a call per event, and its ``ryjson``
  command needs a C++ build of reelay and Boost, which no Python package ships);
* **rtamt** 0.4.10 (pure Python): ``StlDiscreteTimeSpecification`` on the first
  ``--rtamt-events`` rows, or as many as it reads in :data:`RTAMT_BUDGET_S` (its
  per-event cost is about the same on any prefix; 1M rows of 30 properties would take
  days); not on the Respond families, as in the Timescales
  repository's own rtamt runs: their ``since[u:]`` needs a finite bound in rtamt,
  and ``since[10:H]`` costs it O(H) per row (20,000 rows did not end in an hour);
* **qre**: the formula as a QRE-Past query with event-count bounds (one time unit
  per row), compiled to a DT and run by ``Monitor.run`` on the table and codegen
  engines over the rows as numpy columns (the propositions as fields p, q, r, s).

Every output is cross-checked on every event (rtamt's on its prefix); a mismatch
stops the script. Timing: the fastest of 3 passes for qre, one pass for reelay and
rtamt (``time.perf_counter``, inputs built beforehand for each tool). ``compile s``
is qre's query-to-DT compile plus the engine's preparation (the codegen kernel's
compile, or its load from the disk cache); ``state B`` a key's bytes in the kernels
(a uint8 status and a float64 per DT state, benchmarks/engines.py).

Run::

    .venv/bin/pip install -e '.[benchmark]'
    .venv/bin/python benchmarks/timescales.py [--events N] [--rtamt-events M]
        [--bounds 10 100 1000] [--families AbsentAQ ...] [--no-write]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import random
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from peers import Measured, _best, _timed, _version
from results import RESULTS, write_section

from qre import qre

PROPOSITIONS = ("p", "q", "r", "s")
BOUNDS = (10, 100, 1000)
RTAMT_BUDGET_S = 10.0
"""rtamt stops after this many seconds (at a multiple of 100 rows): its bounded since
costs it O(bound) per row (``since[300:1000]`` about 50 ms a row)."""
GOAL_VS_REELAY = 50
"""Issue 21 §4: codegen at least this many times reelay's Python API on every property."""

QRE_PROPOSITIONS = "".join(
    f"let {x} = or(last(cur.{x} > 0), eps(0)) > const(0);\n" for x in PROPOSITIONS)
"""p, q, r, s as QRE-Past queries: the row's value, false on the empty prefix."""


# --------------------------------------------------------------------------- formulas


@dataclass(frozen=True)
class Property:
    """One family at one bound, written for each tool."""

    family: str
    bound: int
    reelay: str
    rtamt: str | None
    qre: str

    @property
    def name(self) -> str:
        return f"{self.family}{self.bound}"


def properties(bound: int) -> list[Property]:
    """The ten families at upper bound u = ``bound`` (lower bound l = 3u/10); rtamt's
    text None where it is not run (module docstring)."""
    u, lo = bound, bound * 3 // 10
    scoped = "{r} && !{q} && once{q}"
    rt_scoped = "r and not q and once q"
    q_scoped = "r && !q && once(q)"
    respond = f"({{s}} -> once[{lo}:{u}]{{p}}) and not((not {{s}}) since[{u}:] {{p}})"
    q_respond = f"(s -> once[{lo}:{u}](p)) && !(!s since[{u}:] p)"
    table = [
        ("AbsentAQ", f"historically((once[:{u}]{{q}}) -> ((not{{p}}) since {{q}}))",
         f"historically((once[0:{u}] q) -> ((not p) since q))",
         f"hist[0:](once[:{u}](q) -> (!p since q))"),
        ("AbsentBR", f"historically({{r}} -> (historically[:{u}](not{{p}})))",
         f"historically(r -> (historically[0:{u}](not p)))",
         f"hist[0:](r -> hist[:{u}](!p))"),
        ("AbsentBQR", f"historically(({scoped}) -> ((not{{p}}) since[{lo}:{u}] {{q}}))",
         f"historically(({rt_scoped}) -> ((not p) since[{lo}:{u}] q))",
         f"hist[0:](({q_scoped}) -> (!p since[{lo}:{u}] q))"),
        ("AlwaysAQ", f"historically((once[:{u}]{{q}}) -> ({{p}} since {{q}}))",
         f"historically((once[0:{u}] q) -> (p since q))",
         f"hist[0:](once[:{u}](q) -> (p since q))"),
        ("AlwaysBR", f"historically({{r}} -> (historically[:{u}]{{p}}))",
         f"historically(r -> (historically[0:{u}] p))",
         f"hist[0:](r -> hist[:{u}](p))"),
        ("AlwaysBQR", f"historically(({scoped}) -> ({{p}} since[{lo}:{u}] {{q}}))",
         f"historically(({rt_scoped}) -> (p since[{lo}:{u}] q))",
         f"hist[0:](({q_scoped}) -> (p since[{lo}:{u}] q))"),
        ("RecurGLB", f"historically(once[:{u}]{{p}})",
         f"historically(once[0:{u}] p)",
         f"hist[0:](once[:{u}](p))"),
        ("RecurBQR", f"historically(({scoped}) -> ((once[:{u}]({{p}} or {{q}})) since {{q}}))",
         f"historically(({rt_scoped}) -> ((once[0:{u}](p or q)) since q))",
         f"hist[0:](({q_scoped}) -> (once[:{u}](p || q) since q))"),
        ("RespondGLB", f"historically({respond})", None, f"hist[0:]({q_respond})"),
        ("RespondBQR", f"historically(({scoped}) -> (({respond}) since {{q}}))", None,
         f"hist[0:](({q_scoped}) -> (({q_respond}) since q))"),
    ]
    return [Property(family, bound, reelay, rtamt, text)
            for family, reelay, rtamt, text in table]


# --------------------------------------------------------------------------- traces


Row = dict[str, bool]


def _row(**true: bool) -> Row:
    return {x: bool(true.get(x, False)) for x in PROPOSITIONS}


def _quiet(n: int) -> Iterator[Row]:
    return (_row() for _ in range(n))


def _absent_aq(rng: random.Random, u: int, lo: int) -> Iterator[Row]:
    # q opens the scope; no p for u steps; then p at random
    yield _row(q=True)
    yield from _quiet(u)
    yield from (_row(p=rng.random() < 0.5) for _ in range(u))


def _absent_br(rng: random.Random, u: int, lo: int) -> Iterator[Row]:
    # p at random; then u steps without p before r closes the scope
    yield from (_row(p=rng.random() < 0.5) for _ in range(u))
    yield from _quiet(u)
    yield _row(r=True)


def _absent_bqr(rng: random.Random, u: int, lo: int) -> Iterator[Row]:
    # q, a quiet stretch of lo..u-1 steps, r (q to r: lo + 1..u steps), then p at random
    yield _row(q=True)
    yield from _quiet(rng.randint(lo, u - 1))
    yield _row(r=True)
    yield _row(p=rng.random() < 0.5)


def _always_aq(rng: random.Random, u: int, lo: int) -> Iterator[Row]:
    # q with p, p for u steps, then p at random
    yield _row(q=True, p=True)
    yield from (_row(p=True) for _ in range(u))
    yield from (_row(p=rng.random() < 0.5) for _ in range(u))


def _always_br(rng: random.Random, u: int, lo: int) -> Iterator[Row]:
    # p at random, then p for u steps and at r
    yield from (_row(p=rng.random() < 0.5) for _ in range(u))
    yield from (_row(p=True) for _ in range(u))
    yield _row(p=True, r=True)


def _always_bqr(rng: random.Random, u: int, lo: int) -> Iterator[Row]:
    # q with p, p for lo..u-1 steps, r with p, one quiet step
    yield _row(q=True, p=True)
    yield from (_row(p=True) for _ in range(rng.randint(lo, u - 1)))
    yield _row(p=True, r=True)
    yield _row()


def _recur_glb(rng: random.Random, u: int, lo: int) -> Iterator[Row]:
    # p again after 1..u steps
    yield from _quiet(rng.randint(1, u) - 1)
    yield _row(p=True)


def _recur_bqr(rng: random.Random, u: int, lo: int) -> Iterator[Row]:
    # q; 1..7 times p after 1..u steps; the last gap again before r and after it
    yield _row(q=True)
    gap = 1
    for _ in range(rng.randint(1, 7)):
        gap = rng.randint(1, u)
        yield from _quiet(gap - 1)
        yield _row(p=True)
    yield from _quiet(gap - 1)
    yield _row(r=True)
    yield from _quiet(gap - 1)


def _respond_glb(rng: random.Random, u: int, lo: int) -> Iterator[Row]:
    # p, then s exactly lo + 1..u steps later
    yield _row(p=True)
    yield from _quiet(rng.randint(lo + 1, u) - 1)
    yield _row(s=True)


def _respond_bqr(rng: random.Random, u: int, lo: int) -> Iterator[Row]:
    # q, a quiet step, 1..7 responses (p, s lo + 1..u steps later, a quiet step), r
    yield _row(q=True)
    yield _row()
    for _ in range(rng.randint(1, 7)):
        yield _row(p=True)
        yield from _quiet(rng.randint(lo + 1, u) - 1)
        yield _row(s=True)
        yield _row()
    yield _row(r=True)


_FAMILIES: dict[str, Callable[[random.Random, int, int], Iterator[Row]]] = {
    "AbsentAQ": _absent_aq, "AbsentBR": _absent_br, "AbsentBQR": _absent_bqr,
    "AlwaysAQ": _always_aq, "AlwaysBR": _always_br, "AlwaysBQR": _always_bqr,
    "RecurGLB": _recur_glb, "RecurBQR": _recur_bqr,
    "RespondGLB": _respond_glb, "RespondBQR": _respond_bqr,
}
"""One period of each family's trace (RecurGLB's first row is p, then periods)."""


def make_trace(family: str, bound: int, n_rows: int, seed: int = 0) -> dict[str, np.ndarray]:
    """N rows of the family's trace at ``bound`` as 0/1 float columns p, q, r, s."""
    rng = random.Random(seed)
    u, lo = bound, bound * 3 // 10
    rows: list[Row] = [_row(p=True)] if family == "RecurGLB" else []
    period = _FAMILIES[family]
    while len(rows) < n_rows:
        rows.extend(period(rng, u, lo))
    rows = rows[:n_rows]
    return {x: np.array([row[x] for row in rows], dtype=np.float64) for x in PROPOSITIONS}


# --------------------------------------------------------------------------- the tools


def _run_reelay(prop: Property, events: list[Row]) -> Measured:
    import reelay

    monitor, setup = _timed(lambda: reelay.discrete_timed_monitor(pattern=prop.reelay,
                                                                    condense=False))
    update = monitor.update
    verdicts, run_s = _timed(lambda: [update(e)["value"] for e in events])
    return Measured(np.array(verdicts, dtype=bool), setup, run_s)


def _run_rtamt(prop: Property, trace: dict[str, np.ndarray], n: int) -> Measured:
    import rtamt

    def parse() -> Any:
        spec = rtamt.StlDiscreteTimeSpecification()
        for name in ("p", "q", "r", "z"):  # rtamt reserves s: the Timescales rtamt files use z
            spec.declare_var(name, "float")
        spec.declare_var("out", "float")
        spec.spec = f"out = {prop.rtamt}"
        with contextlib.redirect_stdout(io.StringIO()):  # ANTLR's version notice
            spec.parse()
        return spec

    spec, setup = _timed(parse)
    # a proposition is true as 1 and false as -1: rtamt's robustness > 0 is the verdict
    rows = [[(name, 2.0 * trace[col][i] - 1.0) for name, col in
             (("p", "p"), ("q", "q"), ("r", "r"), ("z", "s"))] for i in range(n)]
    update = spec.update
    robustness: list[float] = []
    start = time.perf_counter()
    for i, row in enumerate(rows):  # until n rows or the time budget
        robustness.append(update(i, row))
        if i % 100 == 99 and time.perf_counter() - start > RTAMT_BUDGET_S:
            break
    run_s = time.perf_counter() - start
    return Measured(np.array(robustness, dtype=np.float64) > 0.0, setup, run_s)


@dataclass(frozen=True)
class QreRun:
    measured: dict[str, Measured]
    states: int
    size: int
    compile_s: dict[str, float]


def _run_qre(prop: Property, trace: dict[str, np.ndarray]) -> QreRun:
    monitor, compile_s = _timed(lambda: qre(QRE_PROPOSITIONS + prop.qre, alphabet=["e"]))
    codes = np.zeros(len(trace["p"]), dtype=np.int64)
    measured, prepared = {}, {}
    for engine in ("table", "codegen"):
        _, prepare_s = _timed(lambda e=engine: monitor.prepare(e))
        prepared[engine] = compile_s + prepare_s
        out, run_s = _best(lambda e=engine: monitor.run(codes, trace, engine=e))
        verdicts = np.where(out.status == 1, out.value, -1.0)
        measured[engine] = Measured(verdicts, prepared[engine], run_s)
    return QreRun(measured, len(monitor.dt.states), monitor.dt.size, prepared)


def _check(prop: Property, tool: str, expected: np.ndarray, got: np.ndarray,
           trace: dict[str, np.ndarray]) -> None:
    differ = np.flatnonzero(expected[:len(got)].astype(np.float64) != got.astype(np.float64))
    if len(differ):
        k = int(differ[0])
        rows = [", ".join(f"{x}={int(trace[x][i])}" for x in PROPOSITIONS)
                for i in range(max(0, k - 5), k + 1)]
        raise AssertionError(f"{prop.name}: {tool} differs from reelay first at row {k} "
                             f"(reelay {bool(expected[k])}, {tool} {got[k]}); rows up to "
                             f"it: {' | '.join(rows)}")


# --------------------------------------------------------------------------- report


def run(n_rows: int, rtamt_rows: int, bounds: tuple[int, ...],
        families: tuple[str, ...]) -> list[dict[str, Any]]:
    """Every property on every tool, cross-checked; one row per property."""
    out = []
    for bound in bounds:
        for prop in properties(bound):
            if prop.family not in families:
                continue
            trace = make_trace(prop.family, bound, n_rows)
            events = [{x: bool(trace[x][i]) for x in PROPOSITIONS} for i in range(n_rows)]
            mine = _run_qre(prop, trace)
            theirs = _run_reelay(prop, events)
            rt = (_run_rtamt(prop, trace, min(rtamt_rows, n_rows))
                  if rtamt_rows and prop.rtamt is not None else None)
            for engine, m in mine.measured.items():
                _check(prop, f"qre {engine}", theirs.verdicts, m.verdicts, trace)
            if rt is not None:
                _check(prop, "rtamt", theirs.verdicts, rt.verdicts, trace)
            codegen, table = mine.measured["codegen"], mine.measured["table"]
            out.append({
                "property": prop.name, "bound": bound, "rows": n_rows,
                "states": mine.states, "size": mine.size, "state_bytes": 9 * mine.states,
                "compile_s": mine.compile_s["codegen"], "reelay": theirs.rate,
                "rtamt": None if rt is None else rt.rate,
                "rtamt_rows": None if rt is None else len(rt.verdicts), "table": table.rate,
                "codegen": codegen.rate, "true": float(np.mean(theirs.verdicts)),
                "vs_reelay": codegen.rate / theirs.rate,
                "table_vs_reelay": table.rate / theirs.rate,
                "vs_rtamt": None if rt is None else codegen.rate / rt.rate,
            })
            print(f"{prop.name}: codegen {codegen.rate:,.0f} ev/s, reelay {theirs.rate:,.0f}"
                  f" ev/s ({codegen.rate / theirs.rate:.1f}x), {mine.states} states",
                  flush=True)
    return out


def markdown(rows: list[dict[str, Any]], rtamt_rows: int, command: str) -> str:
    n = rows[0]["rows"]
    lines = [
        f"## Timescales: bounded past MTL against reelay and rtamt ({n:,} rows)",
        "",
        "The ten Timescales families (D. Ulus, RV 2019) at bounds ×10, ×100, ×1000, "
        "discrete time, traces generated from the published definitions "
        "(benchmarks/timescales.py). Outputs cross-checked on every row: qre table and "
        f"codegen and reelay on all rows, rtamt on the rows it read (the first "
        f"{rtamt_rows:,}, or fewer within {RTAMT_BUDGET_S:.0f} s). Rates in "
        "events/s; qre: fastest of 3 passes of `Monitor.run`; reelay: its Python API, "
        "one `update` per row (its C++ core has no batch entry point from Python); "
        "rtamt: those rows. `compile s`: query to DT plus the "
        "codegen kernel (or its load from the disk cache); `state B`: a key's bytes in "
        "the kernels.",
        "",
        "| property | states | size | state B | compile s | reelay | rtamt (rows) | qre table "
        "| qre codegen | codegen × reelay | table × reelay | codegen × rtamt | true |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for r in rows:
        rt = "" if r["rtamt"] is None else f"{r['rtamt']:,.0f} ({r['rtamt_rows']:,})"
        vs_rt = "" if r["vs_rtamt"] is None else f"{r['vs_rtamt']:,.0f}×"
        lines.append(
            f"| {r['property']} | {r['states']} | {r['size']} | {r['state_bytes']} | "
            f"{r['compile_s']:.2f} | {r['reelay']:,.0f} | {rt} | {r['table']:,.0f} | "
            f"{r['codegen']:,.0f} | {r['vs_reelay']:.1f}× | {r['table_vs_reelay']:.1f}× | "
            f"{vs_rt} | {100 * r['true']:.1f}% |")
    worst = min(rows, key=lambda r: r["vs_reelay"])
    met = "met" if worst["vs_reelay"] >= GOAL_VS_REELAY else "NOT met"
    lines += [
        "",
        f"qre codegen: at least {worst['vs_reelay']:.1f}× reelay's Python API on every "
        f"property (lowest: {worst['property']}); the goal of ≥ {GOAL_VS_REELAY}× is {met}. "
        f"reelay {_version('reelay')}, rtamt {_version('rtamt')}.",
        "",
        f"Reproduce: `{command}`",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--rtamt-events", type=int, default=20_000)
    parser.add_argument("--bounds", type=int, nargs="+", default=list(BOUNDS))
    parser.add_argument("--families", nargs="+", default=list(_FAMILIES))
    parser.add_argument("--no-write", action="store_true",
                        help="print the table without writing benchmarks/RESULTS.md")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    rows = run(args.events, args.rtamt_events, tuple(args.bounds), tuple(args.families))
    command = "python benchmarks/timescales.py " + " ".join(sys.argv[1:] if argv is None
                                                          else argv)
    text = markdown(rows, args.rtamt_events, command.strip())
    print(text)
    print(f"({time.perf_counter() - start:.0f} s)")
    if not args.no_write:
        write_section(RESULTS, "timescales", text)


if __name__ == "__main__":
    main()
