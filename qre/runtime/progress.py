"""What a long command is doing: stage lines as it goes, a summary after a long run.

Pipeline position: beside the ``qre`` command (:mod:`qre.cli`), which reads a
file, compiles, runs and writes, each of which can take seconds on large
inputs. Each stage is logged at INFO (``qre -v`` shows them, as they start
and end, with the rows and seconds); without ``-v``, a run that took longer
than :data:`LONG_RUN_S` ends with one line on stderr saying how many rows
each stage handled and how long it took, so a long silent wait is explained.

>>> import io
>>> err = io.StringIO()
>>> progress = Progress(verbose=False, stream=err, long_run_s=0.0)
>>> with progress.stage("read") as stage:
...     stage.rows = 3
>>> progress.finish()
>>> err.getvalue().startswith("qre: read 3 rows in ")
True
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TextIO

__all__ = ["LONG_RUN_S", "Progress", "Stage", "configure_logging"]

log = logging.getLogger(__name__)

LONG_RUN_S = 2.0
"""A command that ran longer than this reports its stages even without ``-v``."""

PACKAGES = ("qre", "dt", "codegen", "spark_udf")
"""The loggers ``-v`` turns up."""


@dataclass
class Stage:
    """One stage of a command: what it is, how many rows it handled (set by the stage),
    and, once it ended, how long it took."""

    what: str
    rows: int | None = None
    detail: str = ""
    seconds: float = 0.0

    def __str__(self) -> str:
        rows = "" if self.rows is None else f" {self.rows:,} rows"
        detail = f" ({self.detail})" if self.detail else ""
        return f"{self.what}{rows} in {self.seconds:.2f} s{detail}"


@dataclass
class Progress:
    """The stages of one command (module docstring)."""

    verbose: bool
    stream: TextIO = field(default_factory=lambda: sys.stderr)
    long_run_s: float | None = None
    """Seconds after which a run reports without ``-v`` (None: :data:`LONG_RUN_S`)."""
    stages: list[Stage] = field(default_factory=list)

    @contextmanager
    def stage(self, what: str) -> Iterator[Stage]:
        """Time a stage; the caller fills in its rows and detail."""
        log.info("%s ...", what)
        current = Stage(what)
        start = time.perf_counter()
        yield current
        current.seconds = time.perf_counter() - start
        self.stages.append(current)
        log.info("%s", current)

    def finish(self) -> None:
        """After a long run without ``-v``: one line with every stage."""
        long_run_s = LONG_RUN_S if self.long_run_s is None else self.long_run_s
        if self.verbose or sum(s.seconds for s in self.stages) <= long_run_s:
            return
        print(f"qre: {'; '.join(map(str, self.stages))}", file=self.stream)


@contextmanager
def configure_logging(verbosity: int, stream: TextIO | None = None) -> Iterator[None]:
    """While the block runs, show the packages' log records on ``stream`` (stderr):
    INFO with ``verbosity`` 1 (``-v``), DEBUG with 2 (``-vv``); nothing added with 0."""
    if verbosity <= 0:
        yield
        return
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
    level = logging.INFO if verbosity == 1 else logging.DEBUG
    loggers = [logging.getLogger(name) for name in PACKAGES]
    saved = [(lg, lg.level) for lg in loggers]
    for lg in loggers:
        lg.addHandler(handler)
        lg.setLevel(level)
    try:
        yield
    finally:
        for lg, level_before in saved:
            lg.removeHandler(handler)
            lg.setLevel(level_before)
