"""The embedded Spark: a local SparkSession set up for small jobs and tests (API.md, "Spark").

``local_session()`` returns the active session if there is one, else builds
``local[*]`` with what a laptop-sized job wants: no web UI, Spark's console
progress bar when stderr is a terminal (a long job shows its stages and
tasks; in a log file or a pipe it would be noise), few shuffle
partitions (the default 200 makes every small shuffle pay for 200 tasks),
Arrow for pandas conversions and pandas UDFs, UTC as the session time zone
(event times must not move with the machine's zone), RocksDB for streaming
state (which ``transformWithStateInPandas`` needs) with changelog checkpoints
(cheaper commits), and the Python workers
running this interpreter (so they see the same installed packages).

Cost: starting the JVM takes several seconds once per process; later calls
return the same session.
"""

from __future__ import annotations

import logging
import os
import sys

__all__ = ["DEFAULT_CONFIG", "default_config", "local_session"]

log = logging.getLogger(__name__)

DEFAULT_CONFIG: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "4",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.memory": "2g",
    # transformWithStateInPandas (monitor_stream) keeps its state in RocksDB only.
    "spark.sql.streaming.stateStore.providerClass":
        "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
    # A micro-batch commits a changelog of its state changes rather than RocksDB's files:
    # monitor_stream's commit at 10,000 keys x 10 events, 5 MB of state changed per
    # batch, 1.4 s -> 0.5 s (issue 20). Spark reads either kind of checkpoint.
    "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
}
"""Settings of :func:`local_session` (with :func:`default_config`'s progress bar);
``config`` entries override them."""


def default_config(terminal: bool | None = None) -> dict[str, str]:
    """:data:`DEFAULT_CONFIG`, with Spark's console progress bar on when ``terminal``
    (default: stderr is a terminal)."""
    if terminal is None:
        terminal = sys.stderr.isatty()
    return {**DEFAULT_CONFIG, "spark.ui.showConsoleProgress": "true" if terminal else "false"}


def local_session(app_name: str = "qre", *, master: str = "local[*]",
                  config: dict[str, str] | None = None, log_level: str = "ERROR"):
    """The embedded default SparkSession: ``local[*]``, no UI, few partitions, Arrow on.

    ``config`` adds or overrides Spark settings (see :data:`DEFAULT_CONFIG`; Spark's
    progress bar shows when stderr is a terminal, :func:`default_config`).
    If a session is already active it is returned as it is (Spark has one
    per JVM); ``config`` then only applies to runtime settings.
    """
    from pyspark.sql import SparkSession

    # Workers must run this interpreter: the venv that has qre, numba and pyarrow.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    settings = {**default_config(), **(config or {})}
    active = SparkSession.getActiveSession()
    if active is not None:
        for name, value in (config or {}).items():
            active.conf.set(name, value)
        return active
    builder = SparkSession.builder.master(master).appName(app_name)
    for name, value in settings.items():
        builder = builder.config(name, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(log_level)
    log.debug("local Spark session %s started (%s)", app_name, master)
    return spark
