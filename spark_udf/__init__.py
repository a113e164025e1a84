"""spark_udf: monitors over Spark DataFrames, batch and streaming (API.md, "Spark").

Pipeline position: the last stage, after the compiled engines (``codegen``):
a ``qre.Monitor`` runs once per key inside Spark's Python workers.

Takes a DataFrame of events (key, event time, tag, value columns) and a
compiled Monitor; returns one output row per input event with the input's
columns (``keep=``: some of them) plus ``status`` and ``value`` (named by
:mod:`qre.runtime.output`'s rule, ``prefix=``; never over an input column). Equal
times are ordered by :mod:`qre.runtime.order`'s rule, as everywhere.

* :func:`local_session` (:mod:`~spark_udf.session`) — the embedded
  ``local[*]`` SparkSession: no UI, few shuffle partitions, Arrow on.
* :func:`monitor_frame` (:mod:`~spark_udf.batch`) — batch: events ordered
  by time within each key (a documented tie rule); partitions sorted by key
  and time, run by ``mapInArrow`` through the monitor's Numba kernel.
* :func:`monitor_stream`, :func:`monitor_stream_frame`
  (:mod:`~spark_udf.stream`) — Structured Streaming: a stateful operator
  per bucket of keys (``transformWithStateInPandas``; :mod:`~spark_udf.buckets`)
  whose rules for time — watermark, late events, idle keys — are
  :mod:`~spark_udf.keyed`'s; exactly-once
  through Spark's checkpoints. A ``match(...)`` query's stream is
  :mod:`~spark_udf.match_stream`'s: a match session per key in the state store.
* :func:`stream_state` (:mod:`~spark_udf.stream_state`) — a stream's state per key,
  read back from its checkpoint (configuration and window contents' bytes).
* :class:`FinalRows` (:mod:`~spark_udf.final_rows`) — the sink barrier of an
  optimistic stream: a ``foreachBatch`` writer of its final rows only.
* :class:`LocalStream` (:mod:`~spark_udf.local_stream`) — the same streaming rules
  in this process, over pandas micro-batches handed over one by one (no Spark).
* :func:`monitor_timed` (:mod:`~spark_udf.timed`) — timed monitors (window
  aggregates, clock ticks, CER patterns, derived tags): per key, the rows of
  ``Monitor.run_timed``.
* :func:`op_stateless`, :func:`op_keyed_ordered`, :func:`op_keyed_unordered`
  (:mod:`~spark_udf.templates`) — seed 003's operator templates: stateful
  operators in a few Python functions whose output is deterministic up to its
  type however Spark partitions the rows.
* :class:`Shadow` (:mod:`~spark_udf.shadow`) — two streaming queries' outputs
  compared online as traces (``foreachBatch`` sinks): a candidate shadowing
  production.
* :func:`spark_udf.dgs.run_plan` (:mod:`~spark_udf.dgs`) — a DGS synchronization
  plan (seed 003 §4) over a DataFrame at rest: leaves as barrier tasks, inner workers
  in the driver.
* :func:`spark_udf.dataflow.to_spark` (:mod:`~spark_udf.dataflow`) — seed 000's
  operators over Spark DataFrames at rest (``Stream.to_spark`` of a
  :class:`qre.runtime.dataflow.Flow` whose sources are Spark DataFrames): Aggregates as
  ``applyInPandas`` per window instance, Spark's own map, filter and join, the loops
  of X and A∞ run by the driver. From streaming DataFrames, :mod:`~spark_udf.dataflow_stream`: the
  in-process engine's nodes per key in ``transformWithStateInPandas`` (Spark's
  watermark, a phase per row so that chained operators see the in-process order).
* :mod:`~spark_udf.plan` — what travels from the driver to the workers.

Costs: batch, one shuffle by key, then a sort and O(DT size) per event in the
kernel per partition (about 600,000 rows/s per core for a small query, 1.0x a
native Spark SQL window, benchmarks/spark_frame.py); streaming, a shuffle per
micro-batch and per bucket one state read and write, numpy bookkeeping and one
kernel call (94,000 to 102,000 rows/s on 2 cores at 10,000 keys with 10 events
each, benchmarks/spark_stream.py).
"""

from .batch import monitor_frame
from .final_rows import FinalRows
from .local_stream import LocalStream
from .plan import monitor_fingerprint
from .session import local_session
from .shadow import Shadow
from .stream import monitor_stream, monitor_stream_frame
from .stream_state import stream_state
from .templates import op_keyed_ordered, op_keyed_unordered, op_stateless
from .timed import monitor_timed

__all__ = ["FinalRows", "LocalStream", "Shadow", "local_session", "monitor_fingerprint",
           "monitor_frame", "monitor_stream", "monitor_stream_frame", "monitor_timed",
           "op_keyed_ordered", "op_keyed_unordered", "op_stateless", "stream_state"]
