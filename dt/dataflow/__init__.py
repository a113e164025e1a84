"""Seed 000's stream operators by their definitions (§2.1–2.3), the oracle of the dataflow engine.

Pipeline position: beside the engines, not in them. :mod:`~dt.dataflow.definitions` takes
what an operator receives — its input as an arrival sequence of tuples and watermarks —
and returns the multiset of tuples it outputs, computed the slowest and plainest way
(every window instance, every pair, every period), so that each engine (the dedicated
operators, the Aggregate-based compositions of the seed's Listings 1–3 and 6, Spark)
can be differential-tested against it.

Tuples are Python tuples ``(τ, a1, ..., an)`` with τ a whole number of δ (δ = 1),
as the seed writes them (``t[0] = t.τ``). Cost: O(items × instances) — for tests.
"""

from .definitions import (
    Gamma,
    Item,
    aggregate,
    filter_,
    join,
    map_,
    unbounded,
    windows_of,
)

__all__ = ["Gamma", "Item", "aggregate", "filter_", "join", "map_", "unbounded", "windows_of"]
