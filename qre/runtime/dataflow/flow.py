"""Seed 000's operators as a user writes them: a :class:`Flow` of streams over pandas frames.

    flow = Flow(time_unit="s")
    edits = flow.source(frame, time="time", delay="2s")
    words = edits.map(top_words, columns=["word"], via="aggregate_plus")
    counts = words.aggregate(count, size="10s", key="word", columns=["word", "n"])
    counts.collect()                                  # a DataFrame: time, word, n

A stream is a plan: nothing runs until :meth:`Stream.collect`, which builds the
engine's nodes (:mod:`~.engine`) for the streams it depends on, feeds every source's
rows in their order with its watermarks, and returns the output as a frame.

Tuples reach your functions as Python tuples ``(τ, *values)``: τ the time in whole
δ (see :mod:`qre.runtime.times`: ``time_unit`` for integers, microseconds for floats
and datetimes), then the stream's columns in order (``stream.columns``). Functions
return payloads without the time, which the operator sets (§2.1).

``via`` chooses how Map, Filter, Join and A∞ run: ``"dedicated"`` (written directly),
``"aggregate"`` (only through A: the seed's Listings 1–3, 6 with the loop gates) or
``"aggregate_plus"`` (through A⁺, §5.1: no loop). They output the same tuples
(tests/test_dataflow.py); only the order across keys and times may differ.

Cost: per tuple, a Python call of your function and a few dict operations per
operator, more through Aggregates (each tuple is wrapped, windowed and, through A,
unfolded around a loop once per output); ``benchmarks/dataflow_operators.py`` measures
it.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from dt.dataflow.definitions import Gamma

from ..times import TimeScale, duration_count, event_times
from .aggregate import Aggregate, Window
from .dedicated import Filter, Join, Map, Unbounded
from .engine import Egress, Fragment, Ingress, Node, Order, Scheduler, Tuple, watermarks_for
from .listings import embed_join, embed_map, filter_as_map, unbounded, unfold

__all__ = ["Flow", "Stream", "fragment_of", "sources_of"]

Via = Literal["dedicated", "aggregate", "aggregate_plus"]
VIAS = ("dedicated", "aggregate", "aggregate_plus")
Key = str | Sequence[str] | Callable[[Tuple], Hashable] | None


class Flow:
    """A graph of streams from frames. ``time_unit``: what numeric times count;
    ``order``: ``"fifo"`` (each input row runs through the flow before the next) or
    ``"random"`` (an asynchronous order, drawn from ``seed``: for testing)."""

    def __init__(self, *, time_unit: str = "s", order: Order = "fifo", seed: int = 0) -> None:
        if order not in ("fifo", "random"):
            raise ValueError(f"order is 'fifo' or 'random', not {order!r}")
        self.time_unit = time_unit
        self.order: Order = order
        self.seed = seed
        self.scale: TimeScale | None = None

    def source(self, frame: Any, *, time: str = "time", delay: float | str = 0,
               every: int = 1) -> Stream:
        """The rows of ``frame`` in their order, as tuples ``(τ, *other columns)``;
        watermarks by bounded out-of-orderness (Flink's ``forBoundedOutOfOrderness``,
        Spark's ``withWatermark``): after every ``every`` rows, the greatest time so far
        less ``delay``. A row whose time is below the watermark before it is late.
        ``frame`` is a pandas DataFrame, or a Spark DataFrame run in Spark by
        :meth:`Stream.to_spark`: at rest (complete input, without watermarks) or
        streaming (Spark's watermark, ``delay`` behind, after each micro-batch)."""
        spark = not isinstance(frame, pd.DataFrame)
        if spark and type(frame).__name__ != "DataFrame":
            raise TypeError(f"a source is a pandas or Spark DataFrame, not {type(frame).__name__}")
        if time not in frame.columns:
            raise ValueError(f"no time column {time!r} (columns: "
                             f"{', '.join(map(str, frame.columns))})")
        if not isinstance(every, int) or every < 1:
            raise ValueError(f"every is a whole number of rows ≥ 1, not {every!r}")
        if spark:
            return self._spark_source(frame, time, delay, every)
        clock, scale = event_times(frame[time], self.time_unit)
        self._adopt(scale, time)
        lag = duration_count(delay, scale, self.time_unit, "delay", zero=True)
        columns = tuple(str(c) for c in frame.columns if c != time)
        values = frame[[c for c in frame.columns if c != time]]
        times = clock.tolist()
        tuples = [(tau, *row) for tau, row in
                  zip(times, values.itertuples(index=False, name=None), strict=True)]
        marks = watermarks_for(times, delay=lag, every=every)
        items: list[tuple[str, Any]] = []
        done = 0
        for position, w in marks:
            items.extend(("t", t) for t in tuples[done:position])
            items.append(("w", w))
            done = position
        items.extend(("t", t) for t in tuples[done:])
        late = _latest_lateness(clock, marks)
        return Stream(self, "source", (), {"items": items, "last": max(times, default=0)},
                      columns, horizon=0, lateness=late)

    def _spark_source(self, frame: Any, time: str, delay: float | str, every: int) -> Stream:
        """A Spark DataFrame at rest (complete input, so no watermarks and no late row:
        :func:`spark_udf.dataflow.to_spark`), or a streaming one (Spark's watermark,
        ``delay`` behind the greatest time, after each micro-batch:
        :mod:`spark_udf.dataflow_stream`)."""
        from pyspark.sql.types import StructType

        # The time column's type, as pandas reads it (a streaming frame has no toPandas).
        empty = frame.sparkSession.createDataFrame([], StructType([frame.schema[time]]))
        _, scale = event_times(empty.toPandas()[time], self.time_unit)
        self._adopt(scale, time)
        columns = tuple(c for c in frame.columns if c != time)
        options = {"spark": frame, "time": time, "streaming": frame.isStreaming}
        if frame.isStreaming:
            if every != 1:
                raise ValueError("every= is for pandas sources: Spark moves a streaming "
                                 "source's watermark after each micro-batch")
            options["delay"] = duration_count(delay, scale, self.time_unit, "delay", zero=True)
        return Stream(self, "source", (), options, columns, horizon=0, lateness=0)

    def _adopt(self, scale: TimeScale, time: str) -> None:
        if self.scale is not None and scale != self.scale:
            raise ValueError(f"every source's times have one type: {time!r} is "
                             f"{scale.kind}, an earlier source's {self.scale.kind}")
        self.scale = scale

    def duration(self, value: float | str, what: str, *, zero: bool = False) -> int:
        """A duration (a number of ``time_unit`` or text like ``"30s"``) in whole δ of
        the sources' times; ``what`` names it in errors."""
        if self.scale is None:
            raise ValueError("a flow reads durations after its first source (its time type)")
        return duration_count(value, self.scale, self.time_unit, what, zero=zero)


@dataclass(frozen=True, eq=False)
class Stream:
    """A stream of a :class:`Flow` (made by its methods, not by hand). ``columns``:
    the names of the values after the time; ``horizon``: how far past the inputs'
    last time its windows may wait; ``lateness``: how late its tuples may be."""

    flow: Flow
    kind: str
    parents: tuple[Stream, ...]
    options: dict[str, Any] = field(repr=False)
    columns: tuple[str, ...]
    horizon: int
    lateness: int

    def _check(self, via: str) -> None:
        if via not in VIAS:
            raise ValueError(f"via is one of {', '.join(VIAS)}, not {via!r}")

    def _derived(self, kind: str, options: dict[str, Any], columns: Sequence[str] | None,
                 *, parents: tuple[Stream, ...] | None = None, horizon: int = 0,
                 lateness: int | None = None) -> Stream:
        parents = (self,) if parents is None else parents
        names = self.columns if columns is None else tuple(map(str, columns))
        return Stream(self.flow, kind, parents, options, names,
                      max(p.horizon for p in parents) + horizon,
                      max(p.lateness for p in parents) if lateness is None else lateness)

    def key_function(self, key: Key) -> Callable[[Tuple], Hashable]:
        """A key-by as a function of tuples: column name(s), a function, or None."""
        if key is None or callable(key):
            return key or (lambda t: None)
        names = [key] if isinstance(key, str) else list(key)
        for name in names:
            if name not in self.columns:
                raise ValueError(f"no column {name!r} to key by (columns: "
                                 f"{', '.join(self.columns)})")
        at = [1 + self.columns.index(name) for name in names]
        if len(at) == 1:
            i = at[0]
            return lambda t: t[i]
        return lambda t: tuple(t[i] for i in at)

    def map(self, f: Callable[[Tuple], Iterable[Tuple]], *, columns: Sequence[str] | None = None,
            via: Via = "dedicated") -> Stream:
        """M(S, f): ``f(t)`` returns zero or more payload tuples, each output at t's
        time; ``columns`` names them (default: this stream's)."""
        self._check(via)
        return self._derived("map", {"f": f, "via": via}, columns)

    def filter(self, f: Callable[[Tuple], bool], *, via: Via = "dedicated") -> Stream:
        """F(S, f): the tuples for which ``f(t)`` holds (through Aggregates: as a Map
        returning t or nothing, §4)."""
        self._check(via)
        return self._derived("filter", {"f": f, "via": via}, None)

    def aggregate(self, f: Callable[[Gamma], Any], *, size: float | str,
                  advance: float | str | None = None, key: Key = None,
                  lateness: float | str = 0, plus: bool = False,
                  refinement: Literal["accumulating", "discarding"] = "accumulating",
                  columns: Sequence[str] | None = None) -> Stream:
        """A(Γ(advance, size, S, key, lateness), f) — A⁺ with ``plus``: ``f(γ)`` (a
        :class:`~dt.dataflow.Gamma`: ``γ.l``, ``γ.key``, ``γ.tuples``) returns a
        payload or None (A), or payloads (A⁺), stamped at γ's end − δ."""
        ws = self.flow.duration(size, "size")
        wa = ws if advance is None else self.flow.duration(advance, "advance")
        lag = self.flow.duration(lateness, "lateness", zero=True)
        window = Window(wa, ws, self.key_function(key), lag)
        return self._derived("aggregate", {"f": f, "window": window, "plus": plus,
                                           "refinement": refinement}, columns,
                             horizon=ws + lag, lateness=lag)

    def join(self, other: Stream, *, size: float | str, advance: float | str | None = None,
             key: Key = None, other_key: Key = None,
             on: Callable[[Tuple, Tuple], bool] | None = None, lateness: float | str = 0,
             via: Via = "dedicated") -> Stream:
        """J(Γ(advance, size, self, key, L), Γ(advance, size, other, other_key, L), on):
        each pair of tuples in aligned windows with equal keys for which ``on(t1, t2)``
        holds, once, as ``(γ.l + size − δ, t1, t2)``; its frame flattens t1 and t2 into
        ``left_time``, this stream's columns, ``right_time``, the other's (times in the
        sources' type)."""
        self._check(via)
        if other.flow is not self.flow:
            raise ValueError("a join's two streams are of one flow")
        ws = self.flow.duration(size, "size")
        wa = ws if advance is None else self.flow.duration(advance, "advance")
        lag = self.flow.duration(lateness, "lateness", zero=True)
        if via != "dedicated" and lag:
            raise ValueError("a join through Aggregates has lateness 0: an Aggregate's late "
                             "firing outputs its whole window again, so pairs would repeat "
                             "(via='dedicated' compares each pair once)")
        names = _pair_names(self.columns, other.columns)
        options = {"advance": wa, "size": ws, "keys": (self.key_function(key),
                   other.key_function(key if other_key is None else other_key)),
                   "on": on or (lambda t1, t2: True), "via": via, "lateness": lag}
        return self._derived("join", options, names, parents=(self, other), horizon=ws,
                             lateness=lag)

    def unbounded(self, create: Callable[[Tuple], Any], add: Callable[[Any, Tuple], Any],
                  merge: Callable[[Any, Any], Any], output: Callable[[Any], Tuple], *,
                  period: float | str, key: Key = None,
                  columns: Sequence[str] | None = None, via: Via = "dedicated") -> Stream:
        """A∞(create, add, merge, output, period, key) (§5.2): per key, a state of all
        its tuples so far — ``create`` from the first, ``add`` the rest, ``merge`` two
        states (an order-insensitive fold: the periods group tuples differently from
        their arrival) — and at the end of every period from the key's first on,
        ``(period end, key, *output(state))``. Needs a source without late tuples."""
        self._check(via)
        if self.lateness:
            raise ValueError("A∞ needs a stream without late tuples (its loop assumes "
                             "none, seed 000 §3): raise the source's delay")
        p = self.flow.duration(period, "period")
        options = {"f": (create, add, merge, output), "period": p,
                   "key": self.key_function(key), "via": via}
        names = ("key", *(columns or ("state",)))
        return self._derived("unbounded", options, names, horizon=p + 1, lateness=0)

    def collect(self, *, until: float | str | None = None) -> pd.DataFrame:
        """Run the flow to the end of its sources and return this stream's tuples: a
        frame of ``time`` (in the sources' type) and the columns. The end of input is
        the watermark ``until`` (a time like the sources'; default: the last time plus
        the longest wait of the windows on the way, so every window closes)."""
        sources = sources_of(self)
        if any("spark" in s.options for s in sources):
            raise ValueError("this stream reads Spark DataFrames: to_spark(schema) returns "
                             "its DataFrame")
        if until is None:
            end = max(s.options["last"] for s in sources) + 1 + self.horizon
        else:
            end = self.flow.scale.point(until, "until")
        built = _Built(end)
        output = built.node(self)
        egress = Egress()
        output.to(egress)
        Scheduler([*built.nodes, egress], built.ingresses, order=self.flow.order,
                  seed=self.flow.seed).run()
        return self._frame(egress.tuples)

    def to_spark(self, schema: str, *, until: float | str | None = None) -> Any:
        """The stream as a Spark DataFrame (lazy; its sources are Spark DataFrames):
        ``time`` and the columns of the DDL ``schema`` (``"user string, n long"``).
        At rest, every window closes once, on time (:mod:`spark_udf.dataflow`); from
        streaming sources, a streaming DataFrame to write with ``writeStream`` in
        append mode, windows closing with Spark's watermark
        (:mod:`spark_udf.dataflow_stream`; ``until`` does not apply)."""
        if any(s.options.get("streaming") for s in sources_of(self)):
            from spark_udf.dataflow_stream import to_spark_stream

            if until is not None:
                raise ValueError("until= is for DataFrames at rest: a stream's windows close "
                                 "with its watermark")
            return to_spark_stream(self, schema)
        from spark_udf.dataflow import to_spark

        end = None if until is None else self.flow.scale.point(until, "until")
        return to_spark(self, schema, end)

    def _frame(self, tuples: list[Tuple]) -> pd.DataFrame:
        if self.kind == "join":
            tuples = [(t[0], *t[1], *t[2]) for t in tuples]
        width = 1 + len(self.columns)
        for t in tuples:
            if len(t) != width:
                raise ValueError(f"an output {t!r} has {len(t) - 1} values, the stream's "
                                 f"columns {list(self.columns)} {width - 1}: name them with "
                                 f"columns=")
        data = {}
        for i, name in enumerate(("time", *self.columns)):
            data[name] = [t[i] for t in tuples]
        for name in ("time", "left_time", "right_time") if self.kind == "join" else ("time",):
            data[name] = self.flow.scale.stamps(np.array(data[name], dtype=np.int64))
        return pd.DataFrame(data, columns=["time", *self.columns])


def _latest_lateness(clock: np.ndarray, marks: list[tuple[int, int]]) -> int:
    """How far below the watermark before it the latest row is (0: none is late)."""
    if not marks:
        return 0
    at = np.array([p for p, _ in marks])
    w = np.array([m for _, m in marks])
    before = np.searchsorted(at, np.arange(len(clock)), side="right") - 1
    seen = before >= 0
    return int(max(0, (w[before[seen]] - clock[seen]).max(initial=0)))


def _pair_names(left: Sequence[str], right: Sequence[str]) -> tuple[str, ...]:
    both = set(left) & set(right)
    return ("left_time", *(f"{c}_left" if c in both else c for c in left),
            "right_time", *(f"{c}_right" if c in both else c for c in right))


def sources_of(stream: Stream) -> list[Stream]:
    """The source streams ``stream`` reads (one per path to a source)."""
    if stream.kind == "source":
        return [stream]
    return [s for p in stream.parents for s in sources_of(p)]


class _Built:
    """The engine's nodes for a plan: one output node per stream (memoized, so a
    stream read twice is computed once and sent to both readers)."""

    def __init__(self, until: int) -> None:
        self.until = until
        self.nodes: list[Node] = []
        self.ingresses: list[Ingress] = []
        self.outputs: dict[int, Node] = {}

    def node(self, stream: Stream) -> Node:
        if id(stream) not in self.outputs:
            self.outputs[id(stream)] = self._build(stream)
        return self.outputs[id(stream)]

    def _build(self, stream: Stream) -> Node:
        if stream.kind == "source":
            ingress = Ingress(stream.options["items"], until=self.until,
                              name=f"source{len(self.ingresses)}")
            self.ingresses.append(ingress)
            return ingress
        fragment = fragment_of(stream, f"{stream.kind}{len(self.outputs)}")
        for i, parent in enumerate(stream.parents):
            fragment.enter(i, self.node(parent))
        self.nodes.extend(fragment.nodes)
        return fragment.output


def fragment_of(stream: Stream, name: str) -> Fragment:
    """The engine's nodes for ``stream``'s operator (not its parents), wired: one
    input per parent. Every engine runs these same nodes: in process
    (:meth:`Stream.collect`) and on a Spark stream (:mod:`spark_udf.dataflow_stream`)."""
    o = stream.options
    late = max(p.lateness for p in stream.parents)
    if stream.kind in ("map", "filter"):
        f = o["f"] if stream.kind == "map" else filter_as_map(o["f"])
        if o["via"] == "dedicated":
            node = Map(name, f) if stream.kind == "map" else Filter(name, o["f"])
            return Fragment([node], [[(node, 0)]], node)
        return _map(name, f, o["via"], late)
    if stream.kind == "aggregate":
        node = Aggregate(name, o["window"], o["f"], plus=o["plus"], refinement=o["refinement"])
        return Fragment([node], [[(node, 0)]], node)
    if stream.kind == "join":
        args = (o["advance"], o["size"], *o["keys"], o["on"])
        if o["via"] == "dedicated":
            node = Join(name, *args, lateness=o["lateness"])
            return Fragment([node], [[(node, 0)], [(node, 1)]], node)
        joined = embed_join(name, *args, plus=o["via"] == "aggregate_plus")
        return joined if o["via"] == "aggregate_plus" else joined.then(unfold(f"{name}.X"))
    create, add, merge, output = o["f"]
    if o["via"] == "dedicated":
        node = Unbounded(name, create, add, output, o["period"], o["key"])
        return Fragment([node], [[(node, 0)]], node)
    return unbounded(name, create, add, merge, output, o["period"], o["key"],
                     maps=lambda part, f: _map(part, f, o["via"], 0))


def _map(name: str, f: Callable[[Tuple], Iterable[Tuple]], via: str, lateness: int) -> Fragment:
    """Map through A (E_M then X) or A⁺, keeping tuples up to ``lateness`` late."""
    if via == "aggregate_plus":
        return embed_map(name, f, lateness=lateness, plus=True)
    return embed_map(name, f, lateness=lateness).then(unfold(f"{name}.X", lateness=lateness))
