"""What a ``monitor_stream`` query keeps per key, read back from its checkpoint.

Pipeline position: beside :mod:`spark_udf.stream`, after a query ran: its checkpoint →
Spark's state data source (``format("statestore")``, the value state ``bucket`` of
:class:`spark_udf.stream._MonitorProcessor`) → each bucket's
:class:`~spark_udf.buckets.Bucket` → one row per key. Use it to see what a query's state
costs (issue 23 §4: the window contents' bytes per key, compressed or not by
``compress_windows``).

Cost: one batch job reading the state store's latest version, then O(keys) pandas.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from qre.runtime.window_contents import WindowContents

from .buckets import GROUP, Bucket

__all__ = ["stream_state"]

COLUMNS = ["key", "config_bytes", "window_events", "window_bytes", "compressed", "waiting"]


def stream_state(spark: Any, checkpoint: str) -> pd.DataFrame:
    """One row per key that a ``monitor_stream`` query with this ``checkpoint`` keeps
    state for, at its last committed micro-batch: ``key`` (as the state groups it: the
    key's text for a numeric key column), ``config_bytes`` (the DT configuration, 9 bytes
    a DT state), ``window_events`` and ``window_bytes`` (the sliding windows' contents:
    :mod:`qre.runtime.window_contents`; 0 without windows), ``compressed`` (whether
    they are stored compressed, ``compress_windows``), ``waiting`` (events waiting for
    the watermark).

    Reads the checkpoint with Spark's state data source (experimental in Spark 4).
    """
    state = spark.read.format("statestore").option("stateVarName", "bucket").load(
        str(checkpoint)).select("value.keys", "value.pending").toPandas()
    rows = []
    for keys, pending in zip(state["keys"], state["pending"], strict=True):
        frame = Bucket.from_bytes(bytes(keys), bytes(pending)).keys
        for row in frame.to_dict("records"):
            windows = row.get("windows")
            contents = None if windows is None else WindowContents.from_bytes(windows)
            rows.append((row[GROUP], 0 if row["config"] is None else len(row["config"]),
                         0 if contents is None else len(contents),
                         0 if windows is None else len(windows),
                         windows is not None and WindowContents.is_compressed(windows),
                         int(row.get("waiting") or 0)))
    return pd.DataFrame(rows, columns=COLUMNS)
