"""The fixed cost of ``qre run`` on a 10-row file, per engine (issue 20, goal 4).

Run (from the repository root)::

    .venv/bin/python benchmarks/cli_cost.py [--before CHECKOUT [--before-name NAME]] [--runs 5]

and it writes the table to benchmarks/RESULTS.md, section "cli-cost" (``--output``).
``--before`` names another checkout of qre (e.g. ``git worktree add /tmp/before main``)
measured the same way, beside this one.

What is measured: the wall time of the whole command as a user runs it, in a new
process each time (``python -m qre run @q.qre --input t.csv --key k --value v --engine
E``: interpreter start, imports, the query's compile, reading and writing the CSV, the
engine, the exit), best of ``--runs``, after one warm-up run that fills the caches (the
parser's tables, the query's kernel in a temporary ``$QRE_CACHE_DIR``, Numba's machine
code). Runs of every cell alternate, so that a load on the machine spreads over all of
them. Two columns: as the environment runs Python (``PYTHONDONTWRITEBYTECODE=1``
recompiles qre's modules at every start), and with bytecode cached, as a pip install
has it (a temporary ``PYTHONPYCACHEPREFIX``).

References: ``python -c "import qre"`` and ``python -m qre --version``, and the floors
no change to qre removes: the interpreter, ``import pandas`` (reading a CSV), ``import
pandas, numba`` and a cached ``@njit`` function called beside pandas (what running a
compiled engine costs before qre does anything). "auto" shows the engine it picked.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results import RESULTS, write_section

ROOT = Path(__file__).resolve().parent.parent
ENGINES = ("auto", "codegen", "table", "reference")
QUERY = "alphabet a, b;\nsum(cur)\n"
KERNEL = """\
import numba


@numba.njit(cache=True)
def total(x):
    s = 0.0
    for v in x:
        s += v
    return s
"""
"""A module with one cached Numba function: the floor of loading any compiled kernel."""

FLOORS = {
    "`python -c pass`": "pass",
    "`python -c \"import pandas\"`": "import pandas",
    "`python -c \"import pandas, numba\"`": "import pandas, numba",
    "pandas and a cached `@njit` function called": (
        "import numpy, pandas, kernel; kernel.total(numpy.ones(3))"),
}


def write_inputs(work: Path) -> None:
    """The query, the 10-row events and the floor's Numba module, in ``work``."""
    (work / "q.qre").write_text(QUERY, encoding="utf-8")
    rows = [f"{t},{'ab'[t % 2]},{'ab'[t % 2]},{t}" for t in range(1, 11)]
    (work / "t.csv").write_text("ts,k,tag,v\n" + "\n".join(rows) + "\n", encoding="utf-8")
    (work / "kernel.py").write_text(KERNEL, encoding="utf-8")


def run_args(work: Path, engine: str) -> list[str]:
    return ["-m", "qre", "run", f"@{work / 'q.qre'}", "--input", str(work / "t.csv"),
            "--key", "k", "--value", "v", "--engine", engine]


def environment(root: Path, work: Path, side: str, bytecode: bool) -> dict[str, str]:
    """The environment of one column: the checkout on the path, its own kernel cache,
    and bytecode cached in a directory of its own (or not written at all)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), str(work)]),
               QRE_CACHE_DIR=str(work / f"cache-{side}"))
    if bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(work / f"pycache-{side}")
    return env


def timed(args: list[str], env: dict[str, str], cwd: Path) -> tuple[float, str]:
    """Seconds of wall time of ``python ARGS``, and its standard error."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, *args], env=env, cwd=cwd, check=False,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - start
    if done.returncode:
        raise RuntimeError(f"python {' '.join(args)}: exit {done.returncode}\n{done.stderr}")
    return seconds, done.stderr


def measure(sides: list[tuple[str, Path]], work: Path, runs: int
            ) -> tuple[dict[tuple[str, ...], float], dict[str, str]]:
    """Best wall times by (side, variant, row), and the engine "auto" picked per side."""
    cells: list[tuple[tuple[str, ...], list[str], dict[str, str], Path]] = []
    picked: dict[str, str] = {}
    for side, root in sides:
        for variant in ("here", "bytecode"):
            env = environment(root, work, side, variant == "bytecode")
            rows = {**{f"run {e}": run_args(work, e) for e in ENGINES},
                    "import qre": ["-c", "import qre"], "version": ["-m", "qre", "--version"]}
            if side == sides[-1][0]:  # the floors do not depend on the checkout
                rows.update({name: ["-c", code] for name, code in FLOORS.items()})
            for row, args in rows.items():
                _, err = timed([*args[:2], "-v", *args[2:]] if row == "run auto" else args,
                               env, root)  # the warm-up: fills every cache
                found = re.search(r"\(engine (\w+)\)", err)
                if row == "run auto" and found:
                    picked[side] = found.group(1)
                cells.append(((side, variant, row), args, env, root))
    best: dict[tuple[str, ...], float] = {}
    for _ in range(runs):
        for key, args, env, root in cells:
            seconds, _ = timed(args, env, root)
            best[key] = min(best.get(key, seconds), seconds)
    return best, picked


def table(sides: list[tuple[str, Path]], best: dict[tuple[str, ...], float],
          picked: dict[str, str]) -> str:
    names = [side for side, _ in sides]
    head = ("| command | engine | " + " | ".join(
        f"{s}: wall s | {s}: wall s, bytecode cached" for s in names) + " |")
    lines = [head, "|---|---|" + "---:|---:|" * len(names)]

    def cells(row: str) -> str:
        return " | ".join(f"{best[(s, 'here', row)]:.2f} | {best[(s, 'bytecode', row)]:.2f}"
                          for s in names)

    for engine in ENGINES:
        shown = engine if engine != "auto" else "auto → " + " / ".join(
            picked.get(s, "?") for s in names)
        lines.append(f"| `qre run @q.qre --input t.csv --key k --value v --engine {engine}` "
                     f"| {shown} | {cells(f'run {engine}')} |")
    lines.append(f"| `python -c \"import qre\"` | | {cells('import qre')} |")
    lines.append(f"| `python -m qre --version` | | {cells('version')} |")
    last = names[-1]
    for name in FLOORS:
        floor = (f"{best[(last, 'here', name)]:.2f} | {best[(last, 'bytecode', name)]:.2f}")
        lines.append(f"| {name} (floor) | | " + " | ".join([floor] * len(names)) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", type=Path, help="another checkout to measure beside")
    parser.add_argument("--before-name", help="what --before is, for the text (default: "
                        "its directory's name)")
    parser.add_argument("--runs", type=int, default=5, help="timed runs per cell (best)")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    sides = ([("before", args.before.resolve())] if args.before else []) + [("now", ROOT)]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        write_inputs(work)
        best, picked = measure(sides, work, args.runs)
    command = ("python benchmarks/cli_cost.py" + (" --before CHECKOUT" if args.before else "")
               + f" --runs {args.runs}")
    text = "\n\n".join([
        "## CLI cost: `qre run` on a 10-row file",
        f"`{command}` on {platform.machine()} ({os.cpu_count()} cores, shared), Python "
        f"{platform.python_version()}, PYTHONDONTWRITEBYTECODE="
        f"{os.environ.get('PYTHONDONTWRITEBYTECODE', 'unset')}. Wall seconds of the whole "
        f"command in a new process, best of {args.runs} after a warm-up run that fills "
        "the caches (the parser's tables, the kernel, Numba's machine code); the query is "
        "`alphabet a, b; sum(cur)`, the file 10 rows of two keys. \"bytecode cached\": "
        "qre's and the libraries' `.pyc` kept, as after a pip install. The floors are "
        "what the interpreter, pandas (reading the CSV) and Numba (any compiled engine) "
        "cost before qre does anything: no compiled engine runs below `import pandas, "
        "numba`, and the reference engine (\"auto\" on so small a file) not below "
        "`import pandas`"
        + (f"; \"before\": {args.before_name or args.before.name}." if args.before
           else "."),
        table(sides, best, picked),
    ])
    write_section(args.output, "cli-cost", text)
    print(text)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
