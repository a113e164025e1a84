"""Compile time and peak memory against query size (issue 19, points 14-16).

Run (from the repository root)::

    .venv/bin/python benchmarks/compile_cost.py [--before CHECKOUT] [--timeout 300]
        [--codegen-timeout 900]

and it writes the tables to benchmarks/RESULTS.md, section "compile-cost"
(``--output``). ``--before`` names another checkout of qre (e.g. ``git worktree
add /tmp/before 0ee0c81``) whose compiler is measured on the same queries, beside
this one.

Every measurement runs in a fresh Python process (``--one``), which reports the
seconds ``qre(text)`` took (parse, types, the DT of §5.3.2, the optimizer), the DT's
states as compiled (``m.stats.unoptimized_states``: with the compiler's lean mode,
already pruned per construction) and after the optimizer, and the process's peak
resident memory (``ru_maxrss``; a process that has imported qre and numpy holds
about 100 MB before it compiles anything). A process that passes ``--timeout`` is
killed and shown as such; one that fails shows its error.

Families:

* ``nested fill`` — fill over iterations nested n deep with a combine every third
  level (tests/test_lean_compile.py): the identity DT of the body has cycles of
  copies, which the support construction of §5.2.1 unrolls (quadratic);
* ``eps fill`` — fill over iterations of ``or(q, eps(k))``, half of them right of a
  split: copy cycles that the compiler now breaks before the support
  (:func:`codegen.optimize.break_copy_cycles`);
* ``split fill`` — fill over iter and split levels whose bodies never match the empty
  word (acyclic, and large after the optimizer): the lean constructions cost little
  where there is little to prune;
* ``let combine`` — n lets ``x_k = combine(x_{k-1}, x_{k-1}, +)``: 2^n copies when
  a let is substituted, one shared sub-DT now;
* ``let split`` — n lets ``x_k = split(x_{k-1}, x_{k-1}, +)``: two uses in
  different contexts, two sub-DTs; refused past the expansion bound;
* ``window`` — ``aggregate(avg(cur), k s, 1s)``: k open windows, k·3 + 2 states;
  refused past :data:`dt.windows.MAX_SLOTS`;
* ``codegen`` — the same windows over 10,000 events (two a second): a run on the
  table engine, a run with ``engine="auto"`` started right after
  ``prepare("codegen", background=True)`` (the table engine while the kernel
  compiles in another process), the seconds until the kernel is ready (a fresh
  cache directory) and a run on it.

Section "codegen shapes" (``--sections shapes``; issue 20, goal 3): the cold compile of
the codegen kernel (``CodegenEngine.compile``: every entry point, a fresh cache
directory, one fresh process per cell, wall and CPU seconds — the machine is shared,
CPU seconds vary less) in the straight-line shape (``loops=False``: what every DT got
before :mod:`codegen.loops`) and in the loop shape, on DTs of about 130 to 1,000
states (:data:`SHAPE_CASES`); then in one more process, both kernels loaded from that
cache: the events per second of each on the same seeded random events (engine
``advance``, alternating, best of 5) with their outputs checked equal bit for bit to
each other and to the table engine's; and the time to a first result on a cold
cache: ``m.run`` with ``engine="auto"`` (the table engine: auto never waits for a
compile), and ``m.prepare("codegen")`` then ``m.run`` (the compile on the caller's
path).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from results import RESULTS, write_section

ROOT = Path(__file__).resolve().parent.parent


def nested_fill(n: int) -> str:
    q = "atom(a, cur)"
    for k in range(n):
        q = (f"iter(combine({q}, {q.replace('cur', 'cur+1', 1)}, +), {k}, max)" if k % 3 == 2
             else f"iter({q}, {k}, +)")
    return f"alphabet a, b; fill({q})"


def eps_fill(n: int) -> str:
    """fill over iterations of queries that match the empty word (``or(q, eps(k))``),
    every other one right of a split: the identity DT has cycles of epsilon copies,
    which the optimizer could not remove once the support had unrolled them."""
    q = "atom(a, cur)"
    for k in range(n):
        q = (f"split(atom(b, {k}), iter(or({q}, eps({k})), {k}, +), +)" if k % 2
             else f"iter(or({q}, eps({k})), 0, max)")
    return f"alphabet a, b; fill({q})"


def split_fill(n: int) -> str:
    """fill over alternating iter / split levels whose bodies never match the empty word:
    an acyclic identity DT, and a fill that stays large after the optimizer."""
    tags = "abcd"
    q = "atom(a, cur)"
    for k in range(n):
        t = tags[k % len(tags)]
        q = (f"iter(or({q}, atom({t}, cur)), 0, +)" if k % 2 == 0
             else f"split({q}, atom({t}, {k}), max)")
    return f"alphabet {', '.join(tags)}; fill({q})"


def let_chain(n: int, body: str) -> str:
    lines = ["alphabet a, b;", "let x0 = iter(atom(a, cur), 0, +);"]
    lines += [f"let x{k} = {body.format(p=f'x{k - 1}')};" for k in range(1, n + 1)]
    return "\n".join([*lines, f"x{n}"])


def window(k: int) -> str:
    return f"alphabet a; aggregate(avg(cur), {k}s, 1s)"


FAMILIES = {
    "nested fill": (nested_fill, (4, 8, 9, 12)),
    "eps fill": (eps_fill, (4, 8, 12, 16)),
    "split fill": (split_fill, (8, 16, 32, 64)),
    "let combine": (lambda n: let_chain(n, "combine({p}, {p}, +)"), (5, 10, 15, 20)),
    "let split": (lambda n: let_chain(n, "split({p}, {p}, +)"), (6, 8, 10, 11)),
    "window": (window, (10, 100, 1000, 10_000, 100_000)),
}
CODEGEN_SLOTS = (10, 100, 300, 1000)
SHAPE_CASES = {
    "`avg_last(64, cur)`": "alphabet m; avg_last(64, cur)",
    "window, 43 slots": window(43),
    "window, 85 slots": window(85),
    "window, 333 slots": window(333),
    "split fill 44": split_fill(44),
    "eps fill 24": eps_fill(24),
    "window, 1,000 slots": window(1000),
}
"""DTs for the "codegen shapes" table: windows and nested fills (above) near the
loop shape's threshold (:data:`codegen.emit.MAX_UNROLLED_STATES`), near 1,000 states,
and a window of 3,002."""
SHAPE_EVENTS = 20_000


# --------------------------------------------------------------------------- one process


def measure_compile(text: str) -> dict[str, object]:
    """In this process: qre(text), its seconds, states and the peak memory."""
    import resource
    import time

    from qre import qre

    start = time.perf_counter()
    m = qre(text)
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "compiled": m.stats.unoptimized_states,
            "states": m.stats.states,
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def measure_codegen(text: str) -> dict[str, object]:
    """In this process, with a fresh cache directory: a run on the table engine alone,
    then ``prepare("codegen", background=True)`` and at once a run with ``auto`` (the
    table engine while the kernel compiles in another process), the seconds until the
    kernel is ready, and a run on it."""
    import time

    import numpy as np

    from qre import qre

    n = 10_000
    times, tags, values = np.arange(n) * 0.5, ["a"] * n, np.ones(n)  # seconds

    def timed_run(engine: str) -> float:
        start = time.perf_counter()
        m.run_timed(times, tags, values, engine=engine)
        return time.perf_counter() - start

    with tempfile.TemporaryDirectory() as cache:
        os.environ["QRE_CACHE_DIR"] = cache
        m = qre(text)
        m.prepare("table")
        table = timed_run("table")
        start = time.perf_counter()
        thread = m.prepare("codegen", background=True)
        first_run = timed_run("auto")
        assert thread is not None and thread.is_alive(), "the kernel was ready too soon"
        thread.join()
        ready = time.perf_counter() - start
        assert m.resolve_engine("auto") == "codegen"
        codegen = timed_run("auto")
    return {"states": len(m.dt.states), "table": table, "first_run": first_run,
            "ready": ready, "codegen": codegen}


def measure_shape(text: str) -> dict[str, object]:
    """In this process, on the cache directory ``$QRE_CACHE_DIR``: compile the kernel of
    ``text`` in the shape ``$QRE_SHAPE`` (``lines``: straight-line; ``loops``)."""
    import time

    from codegen.generated import CodegenEngine
    from qre import qre

    m = qre(text)
    wall, cpu = time.perf_counter(), time.process_time()
    engine = CodegenEngine(m.dt, loops=os.environ["QRE_SHAPE"] == "loops")
    emitted = time.perf_counter() - wall
    engine.compile()
    return {"states": len(m.dt.states), "lines": engine.source.count("\n"),
            "emit": emitted, "wall": time.perf_counter() - wall,
            "cpu": time.process_time() - cpu}


def measure_speed(text: str) -> dict[str, object]:
    """In this process, both shapes loaded from ``$QRE_CACHE_DIR`` (compiled there by
    :func:`measure_shape`): ns per event of each and of the table engine, alternating,
    best of 5, outputs checked."""
    import time

    import numpy as np

    from codegen.generated import CodegenEngine
    from codegen.kernels import TableEngine
    from qre import qre

    m = qre(text)
    shapes = os.environ.get("QRE_SHAPES", "lines,loops").split(",")
    engines: dict[str, Any] = {shape: CodegenEngine(m.dt, loops=shape == "loops")
                               for shape in shapes}
    engines["table"] = TableEngine(m.dt)
    for engine in engines.values():
        if isinstance(engine, CodegenEngine):
            assert engine.is_ready(), "measure_shape did not compile it"
            engine.compile()  # loads
    rng = np.random.default_rng(0)
    codes = rng.integers(-1, len(m.dt.alphabet), SHAPE_EVENTS).astype(np.int64)
    cur = rng.choice([-2.0, -0.5, 0.0, 1.0, 3.0], (SHAPE_EVENTS, len(engines["table"].columns)))
    cur = cur[:, 0] if cur.shape[1] == 1 else None if not cur.shape[1] else cur
    status, value = engines["table"].initial_config([0.0] * len(m.dt.initial))
    best = dict.fromkeys(engines, float("inf"))
    outs = {}
    for _ in range(5):
        for name, engine in engines.items():
            start = time.perf_counter()
            outs[name] = engine.advance(status, value, codes, cur)
            best[name] = min(best[name], time.perf_counter() - start)
    for name in shapes:
        for got, want in zip(outs[name], outs["table"], strict=True):
            assert same_bits(got, want), f"{name} differs from the table engine"
    return {f"{k}_ns": 1e9 * v / SHAPE_EVENTS for k, v in best.items()}


def same_bits(a: Any, b: Any) -> bool:
    """Equal arrays, floats bit for bit except a NaN's sign and payload."""
    import numpy as np

    if a.dtype != np.float64:
        return bool(np.array_equal(a, b))
    nan = np.isnan(a)
    return bool(np.array_equal(nan, np.isnan(b))
                and np.array_equal(a[~nan].view(np.int64), b[~nan].view(np.int64)))


def measure_first(text: str) -> dict[str, object]:
    """In this process, on a fresh cache: the seconds to a first result of ``m.run`` (or
    ``run_timed``) with ``engine="auto"``, then of ``m.prepare("codegen")`` and a run."""
    import time

    import numpy as np

    from qre import qre
    from qre.runtime.timed import input_tags, is_timed

    with tempfile.TemporaryDirectory() as cache:
        os.environ["QRE_CACHE_DIR"] = cache
        m = qre(text)
        rng = np.random.default_rng(0)
        tags = list(rng.choice(input_tags(m), SHAPE_EVENTS))
        values = rng.normal(size=SHAPE_EVENTS)

        def run() -> float:
            start = time.perf_counter()
            if is_timed(m):
                m.run_timed(np.arange(SHAPE_EVENTS) * 0.5, tags, values)
            else:
                m.run(tags, values)
            return time.perf_counter() - start

        auto, engine = run(), m.resolve_engine("auto")
        start, cpu = time.perf_counter(), time.process_time()
        m.prepare("codegen")
        run()
    return {"auto_first": auto, "auto_engine": engine,
            "codegen_first": time.perf_counter() - start,
            "codegen_first_cpu": time.process_time() - cpu}


def ns(r: dict[str, object], key: str) -> str:
    return f"{r[key]:,.0f}" if key in r else "–"


def shapes_table(timeout: float) -> str:
    """The "codegen shapes" table: every case compiled in both shapes, then measured."""
    rows = ["| DT | states | lines: source lines | lines: compile s (CPU s) | "
            "loops: source lines | loops: compile s (CPU s) | lines ns/event | "
            "loops ns/event | table ns/event | first result, auto (table) s | "
            "first result, prepare(\"codegen\") + run s |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, text in SHAPE_CASES.items():
        with tempfile.TemporaryDirectory() as cache:
            env = {"QRE_CACHE_DIR": cache}
            lines = run_one(ROOT, "shape", text, timeout, dict(env, QRE_SHAPE="lines"))
            loops = run_one(ROOT, "shape", text, timeout, dict(env, QRE_SHAPE="loops"))
            compiled = [shape for shape, r in (("lines", lines), ("loops", loops))
                        if "error" not in r]
            speed = (run_one(ROOT, "speed", text, timeout,
                             dict(env, QRE_SHAPES=",".join(compiled)))
                     if compiled else {"error": "-"})
        first = run_one(ROOT, "first", text, timeout)
        speed = dict(speed, **first) if "error" not in first else first
        cells = [f"{r['lines']:,} | {r['wall']:.2f} ({r['cpu']:.2f})" if "error" not in r
                 else f"| {r['error']}" for r in (lines, loops)]
        tail = (f"{ns(speed, 'lines_ns')} | {ns(speed, 'loops_ns')} | "
                f"{ns(speed, 'table_ns')} | {speed['auto_first']:.2f} | "
                f"{speed['codegen_first']:.2f} ({speed['codegen_first_cpu']:.2f})"
                if "error" not in speed
                else f"{speed['error']} | | | |")
        states = next((f"{r['states']:,}" for r in (lines, loops) if "states" in r), "")
        rows.append(f"| {name} | {states} | " + " | ".join(cells) + f" | {tail} |")
        print(rows[-1], flush=True)
    return "\n".join(rows)


def run_one(root: Path, kind: str, text: str, timeout: float,
            env: dict[str, str] | None = None) -> dict[str, object]:
    """One measurement in a fresh process of the checkout ``root`` (``env``: more
    environment variables)."""
    env = dict(os.environ, PYTHONPATH=str(root), **(env or {}))
    cmd = [sys.executable, str(Path(__file__).resolve()), "--one", kind]
    try:
        done = subprocess.run(cmd, input=text, capture_output=True, text=True, env=env,
                              timeout=timeout, cwd=root)
    except subprocess.TimeoutExpired:
        return {"error": f"> {timeout:.0f} s (killed)"}
    if done.returncode:  # killed, or out of memory
        return {"error": f"exit {done.returncode}"}
    return json.loads(done.stdout)


# --------------------------------------------------------------------------- tables


def cell(r: dict[str, object]) -> str:
    if "error" in r:
        return f"{r['error']} | | "
    return f"{r['seconds']:.2f} | {r['peak_mb']:.0f} | {r['compiled']:,} → {r['states']:,}"


def compile_table(before: Path | None, timeout: float) -> str:
    sides = [("before", before)] if before else []
    sides.append(("now", ROOT))
    head = "| family | n | chars | " + " | ".join(
        f"{s} s | {s} peak MB | {s} states compiled → optimized" for s, _ in sides) + " |"
    rows = [head, "|---|---:|---:|" + "---:|---:|---:|" * len(sides)]
    for family, (make, sizes) in FAMILIES.items():
        for n in sizes:
            text = make(n)
            cells = [cell(run_one(root, "compile", text, timeout)) for _, root in sides]
            rows.append(f"| {family} | {n:,} | {len(text):,} | " + " | ".join(cells) + " |")
            print(rows[-1], flush=True)
    return "\n".join(rows)


def codegen_table(timeout: float) -> str:
    rows = ["| window slots | DT states | table run s | auto run during the compile s | "
            "kernel ready after s | codegen run s |", "|---:|---:|---:|---:|---:|---:|"]
    for k in CODEGEN_SLOTS:
        r = run_one(ROOT, "codegen", window(k), timeout)
        rows.append(f"| {k:,} | " + (f"{r['error']} | | | | |" if "error" in r else
                                     f"{r['states']:,} | {r['table']:.2f} | "
                                     f"{r['first_run']:.2f} | {r['ready']:.1f} | "
                                     f"{r['codegen']:.2f} |"))
        print(rows[-1], flush=True)
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", type=Path, help="another checkout to measure beside")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per process")
    parser.add_argument("--codegen-timeout", type=float, default=900.0,
                        help="seconds per process of the codegen table")
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--sections", default="compile-cost,codegen-shapes",
                        help="the RESULTS.md sections to measure, comma-separated")
    parser.add_argument("--one", choices=list(MEASURES), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:  # a child: the query on stdin, the measurement on stdout
        measure = MEASURES[args.one]
        try:
            print(json.dumps(measure(sys.stdin.read())))
        except Exception as err:  # a refused query (QreTypeError), or a failure to show
            kind = type(err).__name__
            print(json.dumps({"error": "refused" if kind == "QreTypeError" else kind}))
        return
    sections = args.sections.split(",")
    if "codegen-shapes" in sections:
        write_section(args.output, "codegen-shapes", "\n\n".join([
            "## Codegen kernel shapes: cold compile and per-event speed",
            f"`python benchmarks/compile_cost.py --sections codegen-shapes --codegen-timeout "
            f"{args.codegen_timeout:g}` on {platform.machine()} ({os.cpu_count()} cores, "
            f"shared), Python {platform.python_version()}. Compile: `CodegenEngine.compile()` "
            "(emit, write, every entry point) on a fresh cache, one fresh process per cell, "
            "wall seconds (CPU seconds of the process); \"lines\": the straight-line shape, "
            "what every DT got before `codegen.loops` (`loops=False`); \"loops\": blocks of "
            "states of one shape stepping in loops over per-state tables (the default "
            "above `MAX_UNROLLED_STATES` states). ns/event: `advance` on "
            f"{SHAPE_EVENTS:,} seeded random events (tags uniform, 1 in "
            "|tags|+1 skipped), best of 5, the engines alternating in one process, "
            "outputs equal bit for bit. First result: a fresh cache, `m.run(...)` of those "
            "events through `qre`'s Monitor; `auto` runs the table engine on a cold cache.",
            shapes_table(args.codegen_timeout),
            "The \"lines\" kernels are byte for byte those of the checkout before "
            "`codegen.loops` (same source hash), and DTs of at most 128 states still get "
            "them by default: their machine code, hence their speed per event, is "
            "unchanged."]))
        print(f"wrote {args.output}")
    if "compile-cost" not in sections:
        return
    command = ("python benchmarks/compile_cost.py" + (" --before CHECKOUT" if args.before
                                                      else "")
               + f" --timeout {args.timeout:g} --codegen-timeout {args.codegen_timeout:g}")
    before = args.before.name if args.before else "-"
    text = "\n\n".join([
        "## Compile cost: time and peak memory against query size",
        f"`{command}` on {platform.machine()} ({os.cpu_count()} cores, shared), Python "
        f"{platform.python_version()}; one fresh process per cell, killed after "
        f"{args.timeout:.0f} s ({args.codegen_timeout:.0f} s for codegen). \"before\": the "
        f"compiler of {before} (no lean constructions, lets substituted as trees, no "
        "window bound); \"now\": "
        "this checkout. Seconds are `qre(text)` (parse, types, DT, optimizer); peak MB is "
        "the process's `ru_maxrss` (about 100 MB with qre imported); states are the DT "
        "as compiled (now: already pruned construction by construction) → after the "
        "optimizer. \"refused\": a located QreTypeError, at once.",
        compile_table(args.before, args.timeout),
        "Codegen (a fresh cache; 10,000 events, two a second): the kernel's compile grows "
        "with the DT; with `prepare(\"codegen\", background=True)` it runs in another "
        "process and the first `auto` run returns on the table engine without waiting for "
        "it (`spark_udf`'s `make_plan` does the same).",
        codegen_table(args.codegen_timeout),
    ])
    write_section(args.output, "compile-cost", text)
    print(f"wrote {args.output}")


MEASURES = {"compile": measure_compile, "codegen": measure_codegen, "shape": measure_shape,
            "speed": measure_speed, "first": measure_first}


if __name__ == "__main__":
    main()
