"""The stream types of qre's entry points: which order of their input and output matters.

Seed 003 §2 types a stream by a dependence relation; here each entry point's
input and output are synchronization schemas (:mod:`dt.traces.schema`) over two
headers, ``event`` (an input row) and ``row`` (an output row), and for a stream
``batch`` (the end of a micro-batch). The entry points are consistent with these
types (Definition 2.24): inputs equivalent under the input type give outputs
equivalent under the output type, which tests/test_stream_types.py checks on
random reorderings (local runs) and random repartitionings (Spark). So two runs —
local and Spark, batch and stream, 1 and 8 partitions — are compared as traces
of the output type, not after sorting.

=====================================  =============================================
entry point                            input → output
=====================================  =============================================
``Monitor.run``, ``session``           ``Seq(event)`` → ``Seq(row)``
``run_keys``                           ``PartitionBy(key, Seq(event))`` → ``K(row)``
``run_timed``, ``monitor_frame``,      ``PartitionBy(key, Bag(event))`` → ``K(row)``
``monitor_timed``
``monitor_stream``                     ``Sync(batch, PartitionBy(key, Bag(event)))``
                                       → ``PartitionBy(key, Par(Seq(row), Seq(late)))``
=====================================  =============================================

where ``K(row)`` is ``PartitionBy(key, Seq(row))``: each key's rows in order, keys
independent (``run_timed`` without keys: ``Bag(event)`` → ``Seq(row)``). A stream's
rows for late events (``late`` true) are a side output, as Flink's: in order among
themselves, independent of the key's other rows — a late row is emitted when its
event arrives, the others when the watermark passes theirs, so which comes first
depends on when Spark runs a batch without data (tests/test_stream_rules.py).

A bag of events: the entry point orders each key's events itself (by time, then
:mod:`qre.runtime.order`'s rule). Events equal in everything that rule reads are
processed in input order where there is one; only which of such rows gets which
output can differ, so compare such outputs on the columns the rule reads and the
outputs (``equal=``). A micro-batch ends with a marker: which events arrive in
which batch decides the watermark they meet, hence lateness. An optimistic
stream's changelog has the output type too: a key's retractions and inserts in
order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dt.traces import Bag, Par, PartitionBy, Schema, Seq, Sync, Typed, typed

EVENT = "event"
ROW = "row"
LATE = "late"
BATCH = "batch"

ENTRY_POINTS = ("run", "session", "run_keys", "run_timed", "monitor_frame", "monitor_timed",
                "monitor_stream")


@dataclass(frozen=True)
class StreamType:
    """An entry point's input and output types (schemas over ``event``/``batch`` and ``row``)."""

    entry: str
    input: Schema
    output: Schema
    output_header: Callable[[Any], str] | None = None
    """Which header an output row has (a stream's: ``late`` or ``row``); None: ``row``."""

    def output_dependence(self) -> Typed:
        """The output's dependence."""
        return typed(self.output, self.output_header)

    def input_dependence(self, header: str | None = None) -> Typed:
        """The input's dependence; a stream's needs ``header``, the field that says
        whether an item is an ``event`` or the ``batch`` marker."""
        return typed(self.input, header)


def stream_type(entry: str, key: str | Sequence[str] | None = None, *,
                late: str = "late") -> StreamType:
    """The declared types of ``entry`` (one of :data:`ENTRY_POINTS`) with key column(s)
    ``key`` (None: one stream; ``run`` and ``session`` have none); ``late``: the name
    of a stream's late column (``prefix`` + ``late``)."""
    if entry not in ENTRY_POINTS:
        raise ValueError(f"no stream type for {entry!r}: one of {', '.join(ENTRY_POINTS)}")
    if entry in ("run", "session"):
        return StreamType(entry, Seq(EVENT), Seq(ROW))
    if key is None and entry != "run_timed":
        raise ValueError(f"{entry} runs per key: give the key column")

    def per_key(schema: Schema) -> Schema:
        return schema if key is None else PartitionBy(key, schema)

    output = per_key(Seq(ROW))
    if entry == "run_keys":
        return StreamType(entry, per_key(Seq(EVENT)), output)
    if entry == "monitor_stream":
        def header(row: Any) -> str:  # a row without the column (an oracle's) is on time
            flag = row.get(late) if isinstance(row, Mapping) else getattr(row, late, None)
            return LATE if flag is True or flag == 1 else ROW

        return StreamType(entry, Sync(BATCH, per_key(Bag(EVENT))),
                          per_key(Par(Seq(ROW), Seq(LATE))), header)
    return StreamType(entry, per_key(Bag(EVENT)), output)
