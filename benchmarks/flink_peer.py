"""Running a PyFlink job from a benchmark: Flink lives in its own virtualenv (apache-flink
is not a dependency of this project), so a job is a script run by that interpreter, its
inputs CSV files and JSON, its result JSON. Shared by benchmarks/flink_match_recognize.py
and benchmarks/flink_match_throughput.py."""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd


def write_events(frame: pd.DataFrame, path: Path) -> None:
    """``frame`` (its ``ts`` a datetime column) as a headerless CSV file Flink's
    filesystem connector reads as ``TIMESTAMP(3)``."""
    frame.assign(ts=frame["ts"].dt.strftime("%Y-%m-%d %H:%M:%S")).to_csv(
        path, index=False, header=False)


def run_job(flink_python: str, job: str, *args: str | Path) -> tuple[Any, str]:
    """Run the job script ``job`` with ``args`` then the path it writes its JSON result
    to; the result and the apache-flink version. A failed job ends the benchmark with
    the end of its error output."""
    with tempfile.TemporaryDirectory() as tmp:
        script, out = Path(tmp) / "job.py", Path(tmp) / "out.json"
        script.write_text(job)
        done = subprocess.run([flink_python, str(script), *map(str, args), str(out)],
                              capture_output=True, text=True)
        if done.returncode:
            raise SystemExit("the Flink job failed:\n" + "\n".join(
                done.stderr.splitlines()[-15:]))
        result = json.loads(out.read_text())
    version = subprocess.run([flink_python, "-c", "import importlib.metadata as m; "
                              "print(m.version('apache-flink'))"],
                             capture_output=True, text=True).stdout.strip()
    return result, version
