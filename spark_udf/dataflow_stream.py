"""Seed 000's operators on Spark Structured Streaming: a :class:`~qre.runtime.dataflow.Flow`
whose sources are streaming DataFrames.

Pipeline position: a Flow plan → **this module** → a streaming DataFrame of the stream's
tuples (``time`` and the ``schema``'s columns) to write with ``writeStream`` in append
mode. :meth:`Stream.to_spark <qre.runtime.dataflow.Stream.to_spark>` calls
:func:`to_spark_stream` when the sources stream.

Every operator runs the in-process engine's own nodes (:func:`~qre.runtime.dataflow.flow.
fragment_of`: the same code as :meth:`~qre.runtime.dataflow.Stream.collect`): a node
without state (Map, Filter) in ``mapInPandas``; a node with state partitioned by key
(Aggregate, Join, A∞; :meth:`~qre.runtime.dataflow.engine.Node.partition_key`) as a
``transformWithStateInPandas`` grouped by its key, one node per key whose state
(:meth:`~qre.runtime.dataflow.engine.Node.state`) is pickled in Spark's state store, with
an event-time timer at its :meth:`~qre.runtime.dataflow.engine.Node.next_time` so that a
key without new tuples still fires. A loop (X of Listing 3, A∞ through Aggregates) is
refused: a streaming query has no cycles.

Time. Spark keeps one watermark per query: the least over the sources of their greatest
event time less their ``delay``, moved after each micro-batch. The arrival sequence every
operator sees is the in-process one of a source whose watermark comes after each
micro-batch — batch 1's rows, W₁, batch 2's rows, W₂, … (Spark's watermark in ms, as
whole δ, rounded down; W of 0 ms is none) — each batch's rows in time order per key.
Spark hands a micro-batch's watermark to every operator at once, so an operator's output
would reach the next one after the watermark that caused it (the seed's Observation 1
wants it before). Each row carries its *phase* for that: 0 if its operator made it before
taking the watermark (while reading the rows of phase 0, or firing), 1 after it (while
reading the rows of phase 1; a source's rows are of phase 1). An operator reads its rows
of phase 0, takes the watermark, then reads those of phase 1: the in-process order. A row
of phase 0 is never late for the operator that reads it (its operator fired it since the
last watermark), so a key's state holds no watermark and is removed once no window waits.

Spark checks that an operator declaring its output's event time emits no row below the
watermark (``EMITTING_ROWS_OLDER_THAN_WATERMARK_NOT_ALLOWED``), which an Aggregate's
output stamped end − δ always is: the operators here declare none, and rely on the
phases instead of Spark's propagation.

Exactly once: the state and the sources' offsets are checkpointed with each micro-batch
(the query's ``checkpointLocation``), so a restarted query neither loses nor repeats rows.

Cost per micro-batch: a pickle per tuple and operator, a shuffle per stateful operator,
and per key with rows (or a due timer) one state read and write of its node.
"""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable, Hashable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from qre.runtime.dataflow.engine import Fragment, Node, Tuple
from qre.runtime.dataflow.flow import fragment_of, sources_of
from qre.runtime.times import UNIT_NS

from .dataflow import _columns, _frame, _records, _tuples, _union
from .processor import SteppedProcessor, move_timer
from .stream import _use_rocksdb

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from qre.runtime.dataflow.flow import Stream

__all__ = ["to_spark_stream"]

PHASED = "time long, data binary, phase int"
KEYED = "port int, k binary, time long, data binary, phase int"
NS_PER_MS = 1_000_000


def to_spark_stream(stream: Stream, schema: str) -> DataFrame:
    """The stream's tuples as a streaming DataFrame: ``time`` and the columns of
    ``schema`` (as :func:`spark_udf.dataflow.to_spark`'s)."""
    sources = sources_of(stream)
    if not all(s.options.get("streaming") for s in sources):
        raise ValueError("a flow's sources are all streaming DataFrames or none: a stream "
                         "and a DataFrame at rest do not meet in one plan")
    _use_rocksdb(sources[0].options["spark"].sparkSession)
    built = _plan(stream, {}, UNIT_NS[stream.flow.scale.unit])
    return _columns(built.select("time", "data"), stream, schema)


def _plan(stream: Stream, memo: dict[int, DataFrame], ns: int) -> DataFrame:
    if id(stream) not in memo:
        if stream.kind == "source":
            memo[id(stream)] = _source(stream, ns)
        else:
            parents = [_plan(p, memo, ns) for p in stream.parents]
            fragment = fragment_of(stream, f"{stream.kind}{len(memo)}")
            memo[id(stream)] = _fragment_frame(fragment, parents, ns)
    return memo[id(stream)]


def _source(stream: Stream, ns: int) -> DataFrame:
    """A streaming DataFrame as tuples of phase 1, with Spark's watermark ``delay``
    behind its greatest event time (τ as a timestamp: τ·δ, in µs)."""
    from pyspark.sql import functions as F

    o = stream.options
    tuples = _tuples(o["spark"], o["time"], stream.flow.time_unit)
    event = F.timestamp_micros(F.floor(F.col("time") * F.lit(ns) / 1000).cast("long"))
    return (tuples.withColumn("phase", F.lit(1))
            .withColumn("__qre_event", event)
            .withWatermark("__qre_event", f"{o['delay'] * ns // 1000} microseconds")
            .drop("__qre_event"))


def _fragment_frame(fragment: Fragment, inputs: list[DataFrame], ns: int) -> DataFrame:
    """The output of ``fragment``'s nodes, run on ``inputs`` (its input streams)."""
    members = {id(n) for n in fragment.nodes}
    feeds: dict[int, dict[int, list[Any]]] = {id(n): {} for n in fragment.nodes}
    for i, entries in enumerate(fragment.inputs):
        for node, port in entries:
            feeds[id(node)].setdefault(port, []).append(inputs[i])
    for node in fragment.nodes:
        for successor, port, loop in node.outs:
            if id(successor) not in members:
                continue
            if loop:
                raise ValueError(f"{node.name} loops back into {successor.name} (seed 000 "
                                 f"P3): a streaming query has no cycles. Map, Filter and "
                                 f"Join through A (X's loop) and A∞ through Aggregates "
                                 f"run in process or on DataFrames at rest; on streams, "
                                 f"use via='aggregate_plus' (Map, Filter, Join) or "
                                 f"'dedicated'")
            feeds[id(successor)].setdefault(port, []).append(node)
    built: dict[int, DataFrame] = {}

    def frame_of(node: Node) -> DataFrame:
        if id(node) not in built:
            ports = {port: [frame_of(x) if isinstance(x, Node) else x for x in sources]
                     for port, sources in feeds[id(node)].items()}
            built[id(node)] = _node_frame(node, ports, ns)
        return built[id(node)]
    return frame_of(fragment.output)


def _node_frame(node: Node, ports: dict[int, list[DataFrame]], ns: int) -> DataFrame:
    """One node on Spark: in ``mapInPandas`` without state, per key with it."""
    node.outs = []
    if not node.STATE:  # Map, Filter
        return _union(ports[0]).mapInPandas(_stateless(node), PHASED)
    keys = {port: node.partition_key(port) for port in ports}
    if any(k is None for k in keys.values()):
        raise ValueError(f"{node.name}'s state is not partitioned by key: it cannot run "
                         f"on a Spark stream")
    keyed = _union([_keyed(_union(frames), keys[port], port) for port, frames in ports.items()])
    return keyed.groupBy("k").transformWithStateInPandas(
        statefulProcessor=_NodeProcessor(node, ns), outputStructType=PHASED,
        outputMode="Append", timeMode="EventTime")


class _Collect:
    """Stands for the engine's scheduler: keeps what a node sends (tuples, not
    watermarks) in ``out``."""

    def __init__(self, out: list[Tuple]) -> None:
        self.out = out

    def push(self, node: Node, port: int, what: Any) -> None:
        if isinstance(what, list):
            self.out.extend(what)


def _attach(node: Node, out: list[Tuple]) -> None:
    node.scheduler = _Collect(out)  # type: ignore[assignment]
    node.outs = [(node, 0, False)]


def _phased(made: list[tuple[int, list[Tuple]]]) -> pd.DataFrame:
    """Each phase's tuples as the stream representation, with their phase."""
    frame = _frame([(t[0], t[1:]) for _, ts in made for t in ts])
    return frame.assign(phase=np.array([p for p, ts in made for _ in ts], dtype=np.int32))


def _stateless(node: Node) -> Callable[[Iterator[pd.DataFrame]], Iterator[pd.DataFrame]]:
    def run(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        for batch in batches:
            made = []
            for phase in (0, 1):
                out: list[Tuple] = []
                _attach(node, out)
                node.on_tuples(0, list(_records(batch[batch["phase"] == phase])))
                made.append((phase, out))
            yield _phased(made)
    return run


def _keyed(frame: DataFrame, key: Callable[[Tuple], Hashable], port: int) -> DataFrame:
    """Each tuple with its port and its pickled key (the group Spark runs it in)."""
    def run(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        for batch in batches:
            keys = [pickle.dumps(key(t)) for t in _records(batch)]
            yield pd.DataFrame({"port": np.full(len(batch), port, dtype=np.int32), "k": keys,
                                "time": batch["time"], "data": batch["data"],
                                "phase": batch["phase"]})
    return frame.mapInPandas(run, KEYED)


class _NodeProcessor(SteppedProcessor):
    """Per key one value state ``node``: the key's node state and its timer (ms), pickled."""

    def __init__(self, node: Node, ns: int) -> None:
        self.template = node
        self.fresh = pickle.dumps(node.state())
        self.ns = ns

    def init(self, handle: Any) -> None:
        self.handle = handle
        self.state = handle.getValueState("node", "data binary")

    def _columns(self) -> list[str]:
        return ["port", "k", "time", "data", "phase"]

    def _step(self, key: Any, events: pd.DataFrame | None, watermark_ms: int,
              fired_ms: int | None) -> Iterator[pd.DataFrame]:
        node = copy.copy(self.template)
        saved = self.state.get()
        state, timer = (pickle.loads(self.fresh), None) if saved is None else pickle.loads(
            saved[0])
        node.restore(state)
        before: list[Tuple] = []
        after: list[Tuple] = []
        _attach(node, before)
        self._read(node, events, 0)
        if watermark_ms > 0:
            w = watermark_ms * NS_PER_MS // self.ns
            for port in range(len(node.marks)):
                node.on_watermark(port, w)
        _attach(node, after)
        self._read(node, events, 1)
        wake = node.next_time()
        # Spark's watermark starts at 0 ms (none) and fires a timer once it passes a
        # later one: a window that ends by 0 ms waits for the first watermark (1 ms on).
        wake_ms = None if wake is None else max(1, -(-wake * self.ns // NS_PER_MS))
        move_timer(self.handle, timer, wake_ms, fired_ms)
        if wake is None:
            self.state.clear()
        else:
            self.state.update((pickle.dumps((node.state(), wake_ms)),))
        if before or after:
            yield _phased([(0, before), (1, after)])

    @staticmethod
    def _read(node: Node, events: pd.DataFrame | None, phase: int) -> None:
        """The key's rows of ``phase``, port by port, each port's in time order."""
        if events is None:
            return
        rows = events[events["phase"] == phase]
        for port, part in rows.groupby("port", sort=True):
            part = part.sort_values("time", kind="stable")
            node.on_tuples(int(port), list(_records(part)))
