"""The engines side by side, and what the per-event loop costs: RESULTS.md, section "engines".

Run (from the repository root)::

    .venv/bin/python benchmarks/engines.py            # 1,000,000 events; about 10 minutes
    .venv/bin/python benchmarks/engines.py --events 100000 --output /tmp/RESULTS.md

Sections (every comparison is a ratio of runs made side by side in this one
process, on the same seeded random events; every output is cross-checked):

1. **Engines** — events/s of ``reference`` (on a prefix: it is a Python
   worklist), ``table`` and ``codegen`` through ``Monitor.run`` on: a running
   sum, the average of the last 5 events, the "last five vs whole stream"
   query of seed 003 §5.3 (examples/last_five.qre), a ``since`` query, and a
   nested query of size ≥ 100. Outputs of all engines are equal (status and
   value, bit for bit) on the events they all ran.
2. **Hand-written Numba loops** — the practical limit: ``codegen`` against a
   loop written by hand for each query of section 1 but the nested one (the running
   sum, the average of the last 5, the last five vs the stream, failure since
   success), producing the same ``(status, value)`` arrays bit for bit.
3. **Peers** — reelay and rtamt on the same past-time formulas
   (benchmarks/peers.py; needs ``pip install -e '.[benchmark]'``).
4. **Scaling** — per-event cost against DT size on a growing family
   (``avg_last(k, cur)``), codegen's compile time against query size, and the
   state's bytes per key.

Times exclude one-off compilation (each engine is prepared first); codegen's
compile time is reported on its own, measured cold (the run uses a fresh,
temporary kernel cache). Fast engines: best of 3 runs (5 against the
hand-written loops).
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import math
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numba
import numpy as np
from results import RESULTS, write_section

from codegen.emit import MAX_REGISTER_STATES
from codegen.generated import CodegenEngine
from codegen.tables import code_dtype
from qre import Monitor, examples, qre
from qre.language.ast import query_size
from qre.language.parser import parse
from qre.language.typing import resolve

QUERIES: dict[str, tuple[str, tuple[str, ...]]] = {
    "running sum": ("sum(cur)", ("m",)),
    "avg of last 5": ("avg_last(5, cur)", ("m",)),
    "last five vs stream": (examples.read_text("last_five.qre"), ("m",)),
    "failure since success": (
        "let failed = fill_with(split(any_word(), atom(fail, 1), snd), const(0)) > const(0);\n"
        "let ok     = fill_with(split(any_word(), atom(ok, 1), snd), const(0)) > const(0);\n"
        "!ok since failed",
        ("ok", "fail"),
    ),
    "nested": (
        "let recent = fill_with(avg_last(5, cur), avg(cur));\n"
        "let bound  = combine(avg(cur), std(cur), (m, s) -> m + 2 * s);\n"
        "let spike  = count() >= const(5) -> recent > bound;\n"
        "let dip    = fill_with(window(3, cur, min), const(0)) < const(-2);\n"
        "hist(spike) || (once(dip) since prev(!spike))",
        ("m",),
    ),
}

FAST_ENGINES = ("table", "codegen")


# --------------------------------------------------------------------------- helpers


def events(n: int, n_tags: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``n`` seeded random events: tag codes, in the dtype the Monitor makes from tags
    (:func:`codegen.tables.code_dtype`: int8, one byte a code, for these alphabets; a
    pandas Categorical's codes are int8 too), and normal values. Every engine and hand
    loop reads these same arrays."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, n_tags, n).astype(code_dtype(n_tags)), rng.normal(size=n)


def best_of(runs: int, fn: Callable[[], object]) -> tuple[float, object]:
    """The fastest of ``runs`` calls of ``fn`` (seconds) and its last result."""
    best, out = float("inf"), None
    for _ in range(runs):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def timed_run(m: Monitor, codes: np.ndarray, cur: np.ndarray, engine: str,
              runs: int = 3) -> tuple[float, object]:
    """Best-of-``runs`` seconds of ``m.run(codes, cur, engine=engine)`` and its output."""
    return best_of(runs, lambda: m.run(codes, cur, engine=engine))


def same_outputs(a_status, a_value, b_status, b_value) -> bool:
    """Equal statuses and bitwise-equal values (NaN equals NaN, -0.0 differs from 0.0)."""
    return (np.array_equal(a_status, b_status)
            and np.array_equal(np.asarray(a_value).view(np.int64),
                               np.asarray(b_value).view(np.int64)))


def prepared(m: Monitor, engine: str) -> float:
    """Make ``engine`` ready for ``m`` (compile or load); the seconds it took."""
    start = time.perf_counter()
    m.prepare(engine)
    return time.perf_counter() - start


def rate(n: int, seconds: float) -> str:
    return f"{n / seconds:,.0f}"


# --------------------------------------------------------------------------- 1. engines


@dataclass
class EngineRow:
    query: str
    size: int
    states_before: int
    states: int
    rates: dict[str, float]
    compile_s: float


def engines_section(n: int, n_ref: int) -> tuple[list[EngineRow], list[str]]:
    rows, notes = [], []
    for name, (text, alphabet) in QUERIES.items():
        m = qre(text, alphabet=list(alphabet))
        codes, cur = events(n, len(alphabet))
        compile_s = prepared(m, "codegen")
        m.prepare("table")
        rates, outs = {}, {}
        for engine in FAST_ENGINES:
            seconds, out = timed_run(m, codes, cur, engine)
            rates[engine], outs[engine] = n / seconds, out
        start = time.perf_counter()
        ref = m.run(codes[:n_ref], cur[:n_ref], engine="reference")
        rates["reference"] = n_ref / (time.perf_counter() - start)
        table, codegen = outs["table"], outs["codegen"]
        assert same_outputs(table.status, table.value, codegen.status, codegen.value), name
        assert same_outputs(ref.status, ref.value, table.status[:n_ref], table.value[:n_ref]), name
        stats = m.stats
        rows.append(EngineRow(name, query_size(resolve(parse(text))), stats.unoptimized_states,
                              stats.states, rates, compile_s))
    notes.append(f"outputs of reference (first {n_ref:,} events), table and codegen "
                 f"(all {n:,}) identical, status and value bit for bit")
    return rows, notes


def engines_markdown(rows: list[EngineRow]) -> str:
    lines = ["| query | size | DT states (optimized) | reference ev/s | table ev/s | "
             "codegen ev/s | codegen / table | codegen / reference | codegen compile s |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(
            f"| {r.query} | {r.size} | {r.states_before} → {r.states} | "
            f"{r.rates['reference']:,.0f} | {r.rates['table']:,.0f} | {r.rates['codegen']:,.0f} | "
            f"{r.rates['codegen'] / r.rates['table']:.1f}x | "
            f"{r.rates['codegen'] / r.rates['reference']:,.0f}x | {r.compile_s:.2f} |")
    return "\n".join(lines)


# --------------------------------------------------------------------------- 2. hand-written


@numba.njit(cache=True)
def hand_running_sum(codes: np.ndarray, cur: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``sum(cur)`` by hand: 0 + c1 + c2 + … after every event, always defined (one tag:
    the codes are not read)."""
    n = cur.shape[0]
    status = np.ones(n, dtype=np.uint8)
    value = np.empty(n)
    acc = 0.0
    for i in range(n):
        acc = acc + cur[i]
        value[i] = acc
    return status, value


@numba.njit(cache=True)
def hand_avg_last5(codes: np.ndarray, cur: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``avg_last(5, cur)`` by hand: ((((c1 + c2) + c3) + c4) + c5) / 5, oldest first,
    undefined before the fifth event (status 0, value NaN)."""
    n = cur.shape[0]
    status = np.zeros(n, dtype=np.uint8)
    value = np.full(n, np.nan)
    ring = np.zeros(5)
    for i in range(n):
        ring[i % 5] = cur[i]
        if i >= 4:
            acc = ring[(i + 1) % 5]
            for j in range(2, 6):
                acc = acc + ring[(i + j) % 5]
            status[i] = 1
            value[i] = acc / 5.0
    return status, value


@numba.njit(cache=True)
def hand_last_five(codes: np.ndarray, cur: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """examples/last_five.qre by hand: the last five readings in locals (oldest first, as
    qre adds them), the whole stream's mean and population deviation by Welford's update
    on readings shifted by the first (qre's arithmetic), 1.0 or 0.0, always defined."""
    n = cur.shape[0]
    status = np.ones(n, dtype=np.uint8)
    value = np.empty(n)
    a = b = c = d = 0.0  # the four readings before this one, oldest first
    first = mean = sq = total = 0.0
    for i in range(n):
        x = cur[i]
        if i == 0:
            first = x
        delta = x - first - mean
        sq = sq + delta * delta * i / (i + 1)
        mean = mean + delta / (i + 1)
        total += x
        avg = total / (i + 1)
        recent = ((((a + b) + c) + d) + x) / 5 if i >= 4 else avg
        value[i] = 1.0 if recent > avg + 2 * math.sqrt(sq / (i + 1)) else 0.0
        a, b, c, d = b, c, d, x
    return status, value


@numba.njit(cache=True)
def hand_failure_since_success(codes: np.ndarray,
                               cur: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``!ok since failed`` by hand over tags ok (0) and fail (1): 1.0 from a fail until the
    next ok, else 0.0, always defined."""
    n = codes.shape[0]
    status = np.ones(n, dtype=np.uint8)
    value = np.empty(n)
    flag = 0.0
    for i in range(n):
        if codes[i] == 1:
            flag = 1.0
        elif codes[i] == 0:
            flag = 0.0
        value[i] = flag
    return status, value


HAND_LOOPS = {"running sum": hand_running_sum, "avg of last 5": hand_avg_last5,
              "last five vs stream": hand_last_five,
              "failure since success": hand_failure_since_success}
"""The queries of section 1 with a loop written by hand (not the nested one: its loop would
be most of a DT interpreter's work, written once for one query)."""


def hand_section(n: int) -> str:
    lines = ["| query | hand-written Numba ev/s | codegen ev/s (`Monitor.run`) | hand / codegen | "
             "codegen ev/s (`CodegenEngine.advance`) | hand / that |",
             "|---|---:|---:|---:|---:|---:|"]
    for name, hand in HAND_LOOPS.items():
        text, alphabet = QUERIES[name]
        m = qre(text, alphabet=list(alphabet))
        codes, cur = events(n, len(alphabet))
        m.prepare("codegen")
        hand(codes[:10], cur[:10])
        hand_s, (h_status, h_value) = best_of(5, partial(hand, codes, cur))
        gen_s, out = timed_run(m, codes, cur, "codegen", runs=5)
        assert same_outputs(h_status, h_value, out.status, out.value), name
        # The engine's array API: no tag or value conversion, the configuration given.
        engine = CodegenEngine(m.dt)
        status0, value0 = engine.initial_config([0.0] * len(m.dt.initial))
        raw_s, _ = best_of(5, partial(engine.advance, status0, value0, codes, cur))
        lines.append(f"| {name} | {rate(n, hand_s)} | {rate(n, gen_s)} | {gen_s / hand_s:.2f}x | "
                     f"{rate(n, raw_s)} | {raw_s / hand_s:.2f}x |")
    return "\n".join(lines)


# --------------------------------------------------------------------------- 3. peers


def peers_section(n: int) -> str:
    # peers.py imports reelay and rtamt only when it runs them: look for them first.
    missing = [p for p in ("reelay", "rtamt") if importlib.util.find_spec(p) is None]
    if missing:
        return (f"Skipped: {', '.join(missing)} not installed. Install the peers with "
                "`.venv/bin/pip install -e '.[benchmark]'`.")
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import peers  # benchmarks/peers.py

    return peers.markdown(peers.run(n))


# --------------------------------------------------------------------------- 4. scaling


def scaling_section(n: int) -> str:
    lines = ["| query | size | DT states | DT size | table ns/event | codegen ns/event | "
             "codegen ns/event per 100 DT size | codegen compile s | state bytes/key |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    codes, cur = events(n, 1)
    for k in (2, 4, 8, 16, 32, 64):
        text = f"avg_last({k}, cur)"
        m = qre(text, alphabet=["m"])
        compile_s = prepared(m, "codegen")
        m.prepare("table")
        ns = {}
        for engine in FAST_ENGINES:
            seconds, _ = timed_run(m, codes, cur, engine)
            ns[engine] = 1e9 * seconds / n
        size = m.dt.size
        lines.append(f"| `{text}` | {query_size(resolve(parse(text)))} | {len(m.dt.states)} | "
                     f"{size} | {ns['table']:.0f} | {ns['codegen']:.0f} | "
                     f"{100 * ns['codegen'] / size:.2f} | {compile_s:.2f} | "
                     f"{state_bytes(m)} |")
    return "\n".join(lines)


def state_bytes(m: Monitor) -> int:
    """Bytes of one key's configuration in the kernels: a uint8 status and a float64 value
    per DT state (``Session.state`` stores both as float64: twice as many bytes per state)."""
    return 9 * len(m.dt.states)


# --------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--reference-events", type=int, default=5_000)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    n, n_ref = args.events, min(args.events, args.reference_events)
    command = " ".join(["benchmarks/engines.py", *sys.argv[1:]])
    # A fresh kernel cache: codegen compile times are cold compiles, not disk-cache loads.
    cache = tempfile.TemporaryDirectory(prefix="qre-bench-")
    os.environ["QRE_CACHE_DIR"] = cache.name

    rows, notes = engines_section(n, n_ref)
    engines_md = engines_markdown(rows)
    print(engines_md, flush=True)
    hand_md = hand_section(n)
    print(hand_md, flush=True)
    peers_md = peers_section(n)
    print(peers_md, flush=True)
    scaling_md = scaling_section(n)
    print(scaling_md, flush=True)

    machine = (f"{platform.machine()}, {os.cpu_count()} cores, Python "
               f"{platform.python_version()}, numba {numba.__version__}, "
               f"{numba.get_num_threads()} Numba threads")
    text = "\n".join([
        f"Produced by `.venv/bin/python {command}` on {datetime.date.today()} "
        f"({machine}). {n:,} events per run unless said otherwise; see the script's "
        "docstring for what each section measures. Rerun the command to reproduce.",
        "",
        "## Engines (events/s through `Monitor.run`)",
        "",
        engines_md,
        "",
        *[f"- {note}" for note in notes],
        "- size: the query's length (Theorem 5.7: AST, term nodes and operations, sugar "
        "expanded); DT states before and after the optimizer.",
        "",
        "## codegen against a hand-written Numba loop",
        "",
        hand_md,
        "",
        "The hand-written loops compute the same outputs (checked bit for bit) from the "
        "same arrays: tag codes as int8, the dtype the Monitor makes from tags "
        "(`codegen.tables.code_dtype`). Through `Monitor.run` a call also converts and "
        "checks the tags and values, validates the codes, allocates the outputs; "
        "`CodegenEngine.advance` is the engine's array API (codes and values as arrays, "
        "no conversion).",
        "",
        peers_md,
        "",
        "## Scaling: per-event cost against DT size, compile time, state per key",
        "",
        scaling_md,
        "",
        "State bytes per key: one uint8 status and one float64 value per DT state in the "
        "kernels; `Session.state` (the resumable form) stores both as float64. codegen keeps "
        "the configuration in local variables (registers) up to "
        f"{MAX_REGISTER_STATES} DT states and in arrays above (compile time), hence the "
        "step in its per-event cost there. Up to there it also specialises the event loop "
        "to the status vectors a long stream stays in (`codegen.modes`; here one, once "
        "the window is full), which costs compile time: a second general loop for the "
        "window's first events.",
        "",
    ])
    write_section(args.output, "engines", text)
    print(f"wrote {args.output}")
    cache.cleanup()


if __name__ == "__main__":
    main()
