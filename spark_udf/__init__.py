"""spark_udf: monitors over Spark DataFrames (API.md, "Spark").

Pipeline position: the last stage, after the compiled engines (``codegen``):
a ``qre.Monitor`` runs once per key inside Spark's Python workers.

Takes a DataFrame of events (key, event time, tag, value columns) and a
compiled Monitor; returns one output row per input event with the input's
key, time and tag columns plus ``status`` and ``value``.

* :func:`local_session` (:mod:`~spark_udf.session`) — the embedded
  ``local[*]`` SparkSession: no UI, few shuffle partitions, Arrow on.
* :func:`monitor_frame` (:mod:`~spark_udf.batch`) — batch: events ordered
  by time within each key (a documented tie rule); partitions sorted by key
  and time, run by ``mapInArrow`` through the monitor's Numba kernel.

Costs: one shuffle by key and a sort; then O(DT size) per event in the
kernel, plus a fixed cost per key and per Arrow batch (about 375,000 rows/s
on 2 cores for a small query, benchmarks/spark_frame.py). Structured
Streaming (``monitor_stream``) is not written yet.
"""

from .batch import monitor_fingerprint, monitor_frame
from .session import local_session

__all__ = ["local_session", "monitor_fingerprint", "monitor_frame"]
