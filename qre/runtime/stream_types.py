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
                                       → ``K(row)``
=====================================  =============================================

where ``K(row)`` is ``PartitionBy(key, Seq(row))``: each key's rows in order, keys
independent (``run_timed`` without keys: ``Bag(event)`` → ``Seq(row)``).

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

from collections.abc import Sequence
from dataclasses import dataclass

from dt.traces import Bag, PartitionBy, Schema, Seq, Sync, Typed, typed

EVENT = "event"
ROW = "row"
BATCH = "batch"

ENTRY_POINTS = ("run", "session", "run_keys", "run_timed", "monitor_frame", "monitor_timed",
                "monitor_stream")


@dataclass(frozen=True)
class StreamType:
    """An entry point's input and output types (schemas over ``event``/``batch`` and ``row``)."""

    entry: str
    input: Schema
    output: Schema

    def output_dependence(self) -> Typed:
        """The output's dependence: every row is a ``row``."""
        return typed(self.output)

    def input_dependence(self, header: str | None = None) -> Typed:
        """The input's dependence; a stream's needs ``header``, the field that says
        whether an item is an ``event`` or the ``batch`` marker."""
        return typed(self.input, header)


def stream_type(entry: str, key: str | Sequence[str] | None = None) -> StreamType:
    """The declared types of ``entry`` (one of :data:`ENTRY_POINTS`) with key column(s)
    ``key`` (None: one stream; ``run`` and ``session`` have none)."""
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
        return StreamType(entry, Sync(BATCH, per_key(Bag(EVENT))), output)
    return StreamType(entry, per_key(Bag(EVENT)), output)
