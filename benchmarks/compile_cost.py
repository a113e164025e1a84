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


def run_one(root: Path, kind: str, text: str, timeout: float) -> dict[str, object]:
    """One measurement in a fresh process of the checkout ``root``."""
    env = dict(os.environ, PYTHONPATH=str(root))
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
    parser.add_argument("--one", choices=["compile", "codegen"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:  # a child: the query on stdin, the measurement on stdout
        measure = measure_compile if args.one == "compile" else measure_codegen
        try:
            print(json.dumps(measure(sys.stdin.read())))
        except Exception as err:  # a refused query (QreTypeError), or a failure to show
            kind = type(err).__name__
            print(json.dumps({"error": "refused" if kind == "QreTypeError" else kind}))
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


if __name__ == "__main__":
    main()
