"""What each entry point imports (issue 20, point 4): most of the fixed cost of ``qre`` is
importing modules, so the heavy ones load only on the paths that use them.

``import qre`` loads the version alone (:mod:`qre` imports its names on first use);
``qre --version`` and ``--help`` parse arguments without the compiler, pandas or Numba;
``qre run`` on a small file interprets it ("auto" resolves to the reference engine:
:meth:`qre.Monitor.resolve_engine`) without Numba; no command imports Spark. Each case
runs in a fresh interpreter; a test fails when someone adds an eager import back.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = {"numpy", "pandas", "pyarrow", "numba", "llvmlite", "lark", "pyspark", "py4j"}


def _imported(code: str, cache: Path | None = None) -> set[str]:
    """The top-level packages in ``sys.modules`` after running ``code`` in a new Python
    (``codegen.generated`` by its full name: the codegen engine)."""
    script = (f"import json, sys\n{code}\n"
              "names = {m.split('.')[0] for m in sys.modules} | ({'codegen.generated'} & "
              "set(sys.modules))\nprint(json.dumps(sorted(names)))")
    env = {k: v for k, v in os.environ.items() if k != "QRE_CACHE_DIR"}
    if cache is not None:
        env["QRE_CACHE_DIR"] = str(cache)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def _cli(*argv: str) -> str:
    """Code that runs the ``qre`` command on ``argv`` (its output swallowed; it must
    succeed)."""
    return ("import contextlib, io\nfrom qre.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    assert main({list(argv)!r}) == 0")


def test_import_qre_imports_nothing_heavy():
    assert not _imported("import qre") & (HEAVY | {"dt", "codegen"})


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["run", "--help"],
                                  ["check", "equiv", "--help"]])
def test_version_and_help_import_neither_the_compiler_nor_pandas_nor_numba(argv):
    # numpy is allowed: the --time-unit choices come from qre.language.clock.
    assert not _imported(_cli(*argv)) & (HEAVY - {"numpy"} | {"dt", "codegen"})


@pytest.fixture
def events(tmp_path: Path) -> Path:
    path = tmp_path / "events.csv"
    rows = [f"{t},{'ab'[t % 2]},{t * 1.5}" for t in range(10)]
    path.write_text("ts,tag,v\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return path


def test_a_small_run_is_interpreted_without_numba(events, tmp_path):
    imported = _imported(_cli("run", "alphabet a, b; sum(cur)", "--input", str(events),
                              "--value", "v"), tmp_path / "cache")
    assert {"pandas", "lark"} <= imported
    assert not imported & {"numba", "llvmlite", "pyspark", "py4j", "codegen.generated"}


def test_compile_imports_no_numba_and_no_spark():
    imported = _imported(_cli("compile", "alphabet a, b; avg(cur) > 2"))
    assert not imported & {"numba", "llvmlite", "pyspark", "py4j"}


def test_a_codegen_run_imports_no_spark(events, codegen_cache):
    imported = _imported(_cli("run", "alphabet a, b; combine(max(cur), sum(cur * 2), +)", "--input",
                              str(events), "--value", "v", "--engine", "codegen"),
                         codegen_cache)
    assert {"numba", "codegen.generated"} <= imported
    assert not imported & {"pyspark", "py4j"}
