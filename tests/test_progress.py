"""Long work shows what it does: qre -v, the summary of a long run, codegen compiles
announced before they start, Spark's progress bar on a terminal (issue 18, point 12)."""

from __future__ import annotations

import logging

import pandas as pd

from qre import qre
from qre.cli import main
from qre.runtime import progress
from spark_udf.session import default_config


def _events(tmp_path):  # type: ignore[no-untyped-def]
    path = tmp_path / "e.csv"
    pd.DataFrame({"k": [1, 2, 1], "tag": ["a"] * 3, "v": [1.0, 2.0, 3.0]}).to_csv(path,
                                                                                  index=False)
    return str(path)


def test_verbose_run_says_each_stage_and_the_compile(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("QRE_CACHE_DIR", str(tmp_path / "cache"))  # a kernel not yet compiled
    assert main(["-v", "run", "alphabet a; sum(cur * 3.25)", "--input", _events(tmp_path),
                 "--key", "k", "--value", "v", "--engine", "codegen"]) == 0
    err = capsys.readouterr().err
    for line in ("qre.runtime.progress: read 3 rows in", "qre.runtime.progress: run 3 rows in",
                 "(engine codegen)", "qre.api: compiling a query of",
                 "codegen.generated: codegen", "compiling the run functions with Numba"):
        assert line in err, line
    # The announcement comes before the compile's result.
    assert err.index("compiling the run functions") < err.index("the run functions ready in")
    assert logging.getLogger("qre").level == logging.NOTSET  # -v is undone afterwards
    assert main(["run", "alphabet a; sum(cur)", "--input", _events(tmp_path), "--value",
                 "v"]) == 0
    assert capsys.readouterr().err == ""  # a short run without -v says nothing


def test_a_long_run_reports_its_rows_without_verbose(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(progress, "LONG_RUN_S", 0.0)
    assert main(["run", "alphabet a; sum(cur)", "--input", _events(tmp_path), "--value",
                 "v"]) == 0
    err = capsys.readouterr().err.strip()
    assert err.startswith("qre: compile in ") and "; read 3 rows in " in err
    assert "; run 3 rows in " in err and "; write 3 rows in " in err and "(stdout)" in err


def test_qre_logs_its_compile_stages(caplog):
    with caplog.at_level(logging.INFO, logger="qre"):
        qre("alphabet a; avg(cur)")
    messages = [r.getMessage() for r in caplog.records]
    assert any(m.startswith("compiling a query of") for m in messages)
    assert any(m.startswith("optimized to") for m in messages)


def test_spark_progress_bar_only_on_a_terminal():
    assert default_config(terminal=True)["spark.ui.showConsoleProgress"] == "true"
    assert default_config(terminal=False)["spark.ui.showConsoleProgress"] == "false"
