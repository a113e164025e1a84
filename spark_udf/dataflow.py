"""Seed 000's operators on Spark, batch: a :class:`~qre.runtime.dataflow.Flow` plan in Spark.

Pipeline position: a Flow whose sources are Spark DataFrames → **this module** → a Spark
DataFrame (lazy) of the stream's tuples: ``time`` (in the source's type) and the
columns of the ``schema`` you name. :meth:`Stream.to_spark
<qre.runtime.dataflow.Stream.to_spark>` calls :func:`to_spark`.

Between operators a stream is ``time long`` (whole δ) and ``data binary`` (the pickled
payload tuple), so that any Python values — the listings' nested tuples included —
travel through Spark. The operators:

* **A / A⁺** — every (window start, key) instance is a group: tuples are assigned to
  their instances and keyed in ``mapInPandas`` (or natively, for the δ-windows keyed
  by the whole tuple that wrap tuples: group by time and payload), and
  ``groupBy(...).applyInPandas`` runs f_O on each instance (γ's tuples in time order),
  stamped at its end − δ. A batch is complete input: every instance fires once, on
  time (lateness and refinement do not arise).
* **Dedicated** — Spark's own: Map with ``mapInPandas``, Filter with ``filter`` on a
  pandas UDF, Join as a native equi-join on (window start, key) of both sides'
  window assignments, ``on`` a pandas UDF filter of the pairs.
* **Through A** — X's loop (P3): Spark has no loops (seed 000 §4.5 cites it), so the
  driver runs it: each pass is A1 over the previous pass's output, materialized
  (``localCheckpoint``), until a pass outputs nothing (max |T| passes); A2 reads the
  union. Without watermarks the gates of Listings 4–5 have nothing to hold.
* **A∞** — dedicated: ``groupBy(key).applyInPandas``, the key's periods in order;
  through Aggregates: Listing 6's loop run by the driver, a Spark job per period.

Cost: a pickle per tuple and operator, a shuffle per Aggregate and per Join side; the
driver's loops add max |T| jobs (X) or one per period (A∞).
``benchmarks/dataflow_spark.py`` measures it: a whole-tuple δ-window is a group per
tuple, so ``applyInPandas``'s cost per group (ms) dominates the Aggregate-based
operators.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Hashable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from dt.dataflow.definitions import Gamma, windows_of
from qre.runtime.dataflow.listings import (
    UnboundedParts,
    filter_as_map,
    join_key,
    join_pairs,
    join_side,
    map_outputs,
    unbounded_parts,
    unfold_next,
    unfold_output,
)
from qre.runtime.times import event_times

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from qre.runtime.dataflow.flow import Stream

__all__ = ["to_spark"]

STREAM = "time long, data binary"
KEYED = "start long, k binary, time long, data binary"
Tuple = tuple[Any, ...]


def to_spark(stream: Stream, schema: str, until: int | None = None) -> DataFrame:
    """The stream's tuples as a Spark DataFrame: ``time`` and the columns of ``schema``
    (a DDL string, e.g. ``"user string, n long"``; a join's values are its two tuples
    flattened, times included). ``until`` (in δ) ends A∞'s periods, as in
    :meth:`~qre.runtime.dataflow.Stream.collect` (default: the sources' last time plus
    the stream's horizon: computed with a Spark job when the plan has an A∞)."""
    if until is None and _has_unbounded(stream):
        until = _last_time(stream) + 1 + stream.horizon
    built = _plan(stream, {}, until)
    return _columns(built, stream, schema)


def _has_unbounded(stream: Stream) -> bool:
    return stream.kind == "unbounded" or any(_has_unbounded(p) for p in stream.parents)


def _last_time(stream: Stream) -> int:
    from pyspark.sql import functions as F

    if stream.kind == "source":
        built = _tuples(stream.options["spark"], stream.options["time"], stream.flow.time_unit)
        return built.agg(F.max("time")).first()[0] or 0
    return max(_last_time(p) for p in stream.parents)


def _plan(stream: Stream, memo: dict[int, DataFrame], until: int | None) -> DataFrame:
    if id(stream) not in memo:
        parents = [_plan(p, memo, until) for p in stream.parents]
        memo[id(stream)] = _build(stream, parents, until)
    return memo[id(stream)]


def _build(stream: Stream, parents: list[DataFrame], until: int | None) -> DataFrame:
    o = stream.options
    if stream.kind == "source":
        return _tuples(o["spark"], o["time"], stream.flow.time_unit)
    if stream.kind in ("map", "filter"):
        f = o["f"] if stream.kind == "map" else filter_as_map(o["f"])
        if o["via"] == "dedicated" and stream.kind == "filter":
            return _filter(parents[0], o["f"])
        return _mapped(parents[0], f, o["via"])
    if stream.kind == "aggregate":
        w = o["window"]
        return _aggregate(parents[0], w.advance, w.size, w.key_of, o["f"], plus=o["plus"])
    if stream.kind == "join":
        wa, ws, (k1, k2), on = o["advance"], o["size"], o["keys"], o["on"]
        if o["via"] == "dedicated":
            return _join(parents[0], parents[1], wa, ws, k1, k2, on)
        left = _aggregate(parents[0], 1, 1, None, join_side(True))
        right = _aggregate(parents[1], 1, 1, None, join_side(False))
        plus = o["via"] == "aggregate_plus"
        joined = _aggregate(left.unionByName(right), wa, ws, join_key(k1, k2),
                            join_pairs(on, plus), plus=plus)
        return joined if plus else _unfold(joined)
    if o["via"] == "dedicated":
        return _unbounded(parents[0], *o["f"], o["period"], o["key"], until)
    return _unbounded_looped(parents[0], unbounded_parts(*o["f"], o["period"], o["key"]),
                             o["period"], until, o["via"])


def _mapped(stream: DataFrame, f: Callable[[Tuple], Any], via: str) -> DataFrame:
    """M(S, f): Spark's ``mapInPandas``, E_M then X, or through A⁺."""
    if via == "dedicated":
        return _map(stream, f)
    if via == "aggregate_plus":
        return _aggregate(stream, 1, 1, None, map_outputs(f, True), plus=True)
    return _unfold(_aggregate(stream, 1, 1, None, map_outputs(f, False)))


def _tuples(frame: DataFrame, time: str, time_unit: str) -> DataFrame:
    """A user's DataFrame as the stream representation."""
    names = [c for c in frame.columns if c != time]

    def convert(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        for batch in batches:
            clock, _ = event_times(batch[time], time_unit)
            rows = batch[names].itertuples(index=False, name=None)
            yield pd.DataFrame({"time": clock, "data": [pickle.dumps(r) for r in rows]})
    return frame.mapInPandas(convert, STREAM)


def _records(batch: pd.DataFrame) -> Iterator[Tuple]:
    for tau, data in zip(batch["time"].tolist(), batch["data"].tolist(), strict=True):
        yield (tau, *pickle.loads(data))


def _union(frames: list[DataFrame]) -> DataFrame:
    """The rows of every frame (of one schema), by column name."""
    out = frames[0]
    for frame in frames[1:]:
        out = out.unionByName(frame)
    return out


def _frame(rows: list[tuple[int, Tuple]]) -> pd.DataFrame:
    return pd.DataFrame({"time": np.array([r[0] for r in rows], dtype=np.int64),
                         "data": [pickle.dumps(tuple(r[1])) for r in rows]})


def _map(stream: DataFrame, f: Callable[[Tuple], Any]) -> DataFrame:
    def run(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        for batch in batches:
            yield _frame([(t[0], p) for t in _records(batch) for p in f(t)])
    return stream.mapInPandas(run, STREAM)


def _filter(stream: DataFrame, f: Callable[[Tuple], bool]) -> DataFrame:
    from pyspark.sql.functions import pandas_udf

    @pandas_udf("boolean")
    def keep(time: pd.Series, data: pd.Series) -> pd.Series:
        return pd.Series([bool(f(t)) for t in _records(pd.DataFrame({"time": time,
                                                                      "data": data}))])
    return stream.filter(keep("time", "data"))


def _assigned(stream: DataFrame, advance: int, size: int,
              key: Callable[[Tuple], Hashable] | None) -> DataFrame:
    """Each tuple once per instance holding it: (start, pickled key, time, data). Key
    None: the whole tuple, which for δ-windows Spark groups by natively."""
    if key is None and advance == size == 1:
        return stream.selectExpr("time AS start", "data AS k", "time", "data")

    def run(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        for batch in batches:
            out = {"start": [], "k": [], "time": [], "data": []}
            for t, data in zip(_records(batch), batch["data"].tolist(), strict=True):
                k = pickle.dumps(t if key is None else key(t))
                for start in windows_of(t[0], advance, size):
                    out["start"].append(start)
                    out["k"].append(k)
                    out["time"].append(t[0])
                    out["data"].append(data)
            yield pd.DataFrame(out)
    return stream.mapInPandas(run, KEYED)


def _aggregate(stream: DataFrame, advance: int, size: int,
               key: Callable[[Tuple], Hashable] | None, f_o: Callable[[Gamma], Any], *,
               plus: bool = False, start: int | None = None) -> DataFrame:
    """A (or A⁺) over a complete input: f_O once per instance (only those starting
    at ``start``, if given)."""
    def fire(group: pd.DataFrame) -> pd.DataFrame:
        group = group.sort_values(["time"], kind="stable")
        start = int(group["start"].iloc[0])
        tuples = tuple(_records(group))
        k = tuples[0] if key is None else pickle.loads(group["k"].iloc[0])
        made = f_o(Gamma(start, k, tuples))
        stamp = start + size - 1
        if plus:
            return _frame([(stamp, p) for p in made or ()])
        return _frame([] if made is None else [(stamp, made)])
    assigned = _assigned(stream, advance, size, key)
    if start is not None:
        assigned = assigned.filter(assigned["start"] == start)
    return assigned.groupBy("start", "k").applyInPandas(fire, STREAM)


def _unfold(embedded: DataFrame) -> DataFrame:
    """X over a complete input: the loop of A1 passes run by the driver, then A2."""
    passes = []
    current = embedded
    while True:
        current = _aggregate(current, 1, 1, None, unfold_next).localCheckpoint()
        if current.isEmpty():
            break
        passes.append(current)
    if not passes:
        return current
    return _aggregate(_union(passes), 1, 1, None, unfold_output)


def _join(left: DataFrame, right: DataFrame, advance: int, size: int,
          k1: Callable[[Tuple], Hashable], k2: Callable[[Tuple], Hashable],
          on: Callable[[Tuple, Tuple], bool]) -> DataFrame:
    from pyspark.sql.functions import pandas_udf

    a = _assigned(left, advance, size, k1).withColumnsRenamed({"time": "t1", "data": "d1"})
    b = _assigned(right, advance, size, k2).withColumnsRenamed({"time": "t2", "data": "d2"})

    @pandas_udf("boolean")
    def match(t1: pd.Series, d1: pd.Series, t2: pd.Series, d2: pd.Series) -> pd.Series:
        lhs = _records(pd.DataFrame({"time": t1, "data": d1}))
        rhs = _records(pd.DataFrame({"time": t2, "data": d2}))
        return pd.Series([bool(on(x, y)) for x, y in zip(lhs, rhs, strict=True)])

    pairs = a.join(b, ["start", "k"]).filter(match("t1", "d1", "t2", "d2"))

    def wrap(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        for batch in batches:
            lhs = _records(batch.rename(columns={"t1": "time", "d1": "data"}))
            rhs = _records(batch.rename(columns={"t2": "time", "d2": "data"}))
            stamps = (batch["start"] + size - 1).tolist()
            yield _frame(list(zip(stamps, zip(lhs, rhs, strict=True), strict=True)))
    return pairs.select("start", "t1", "d1", "t2", "d2").mapInPandas(wrap, STREAM)


def _unbounded(stream: DataFrame, create: Callable, add: Callable, merge: Callable,
               output: Callable, period: int, key: Callable[[Tuple], Hashable],
               until: int) -> DataFrame:
    """A∞ per key: one output per period from the key's first whose window
    [l·P, (l + 1)·P + δ) closes by ``until``, the state folding the tuples before the
    period's end (in time order)."""
    keyed = _assigned(stream, 1, 1, key)

    def run(group: pd.DataFrame) -> pd.DataFrame:
        k = pickle.loads(group["k"].iloc[0])
        tuples = sorted(_records(group), key=lambda t: t[0])
        rows, state, i = [], None, 0
        p = tuples[0][0] // period
        while (p + 1) * period + 1 <= until:
            while i < len(tuples) and tuples[i][0] < (p + 1) * period:
                state = create(tuples[i]) if state is None else add(state, tuples[i])
                i += 1
            rows.append(((p + 1) * period, (k, *output(state))))
            p += 1
        return _frame(rows)
    return keyed.groupBy("k").applyInPandas(run, STREAM)


def _unbounded_looped(stream: DataFrame, parts: UnboundedParts, period: int, until: int,
                      via: str) -> DataFrame:
    """A∞ through Aggregates (Listing 6) over a complete input: M1, then A1's loop run
    by the driver — pass l is A1's instance [l·P, (l + 1)·P + δ) of every key over
    the period's wrapped tuples and pass l − 1's states, materialized — then M2 over
    every pass's states. A Spark job per period, from the first tuple's to ``until``."""
    from pyspark.sql import functions as F

    wrapped = _mapped(stream, parts.wrap, via).localCheckpoint()
    first = wrapped.agg(F.min("time")).first()[0]
    if first is None:
        return wrapped
    states, passes = None, []
    for left in range(first // period * period, until - period, period):
        window = wrapped.filter((F.col("time") >= left) & (F.col("time") <= left + period))
        feed = window if states is None else window.unionByName(states)
        states = _aggregate(feed, period, period + 1, parts.key, parts.fold,
                            start=left).localCheckpoint()
        passes.append(states)
    if not passes:  # no period closes by until
        return wrapped.limit(0)
    return _mapped(_union(passes), parts.output, via)


def _columns(built: DataFrame, stream: Stream, schema: str) -> DataFrame:
    """The representation as ``time`` (the source's type) and the schema's columns."""
    from pyspark.sql.types import StructType, _parse_datatype_string

    fields = _parse_datatype_string(schema)
    if not isinstance(fields, StructType):
        raise ValueError(f"schema is a DDL list of columns (\"a string, b long\"), not {schema!r}")
    joined = stream.kind == "join"

    def run(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        for batch in batches:
            rows = [(t[0], *t[1], *t[2]) if joined else t for t in _records(batch)]
            data = {"time": [r[0] for r in rows]}
            for i, f in enumerate(fields.fields, 1):
                data[f.name] = [r[i] if i < len(r) else None for r in rows]
            yield pd.DataFrame(data)
    out = built.mapInPandas(run, f"time long, {schema}")
    return _stamps(out, stream.flow.scale, ["time", *(["left_time", "right_time"]
                                                       if joined else [])])


def _stamps(frame: DataFrame, scale: Any, names: list[str]) -> DataFrame:
    from pyspark.sql import functions as F

    for name in names:
        if name not in frame.columns:
            continue
        if scale.kind == "datetime":
            frame = frame.withColumn(name, F.timestamp_micros(name))
        elif scale.kind == "float":
            frame = frame.withColumn(name, F.col(name) / scale.per_unit)
    return frame
