"""Data-trace types: streams as partial orders, and testing two streams for the same trace.

Seed 003 §2–3. Pipeline position: beside the DT pipeline, not in it. It types
the streams that the runtime and Spark take and emit (what order of the items
matters) and compares two such streams — a parallel run against a sequential
one, Spark against local, a candidate against production — without sorting
them (which hides reordering bugs) or demanding one arrival order (which
reports false ones).

Takes and returns: :mod:`~dt.traces.schema` — synchronization schemas
(Bag, Seq, Sync, PartitionBy, Par; Definition 2.6), well-formed by construction,
their dependence tables (Definition 2.13) and relaxation (Definition 2.20);
:mod:`~dt.traces.dependence` — dependence relations on items, as a predicate or
from a schema, and the combinators ``ordered``, ``unordered``, ``by_key``,
``punctuated``; :mod:`~dt.traces.diffstream` — the online matcher of §3.4
(:class:`StreamMatcher`, :func:`compare`), which reports the first item with no
partner and why.

Costs: a schema's table and a relaxation check are quadratic in its headers;
the matcher holds only unmatched items and spends a few dictionary probes per
item for a schema's dependence, a scan of the unmatched items for a predicate.
"""

from .dependence import (
    Dependence,
    ItemError,
    Predicate,
    Typed,
    as_dependence,
    by_key,
    ordered,
    punctuated,
    typed,
    unordered,
)
from .diffstream import Mismatch, StreamMatcher, Verdict, compare, item_key
from .schema import Bag, Header, Par, PartitionBy, Schema, Seq, Sync

__all__ = ["Bag", "Dependence", "Header", "ItemError", "Mismatch", "Par", "PartitionBy",
           "Predicate", "Schema", "Seq", "StreamMatcher", "Sync", "Typed", "Verdict",
           "as_dependence", "by_key", "compare", "item_key", "ordered", "punctuated", "typed",
           "unordered"]
