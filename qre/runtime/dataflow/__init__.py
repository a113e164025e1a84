"""Seed 000's stream operators: Aggregate, A⁺, A∞, and Map, Filter, Join through them or dedicated.

Pipeline position: pandas frames of timestamped rows → **dataflow** → frames of output
tuples. :mod:`~.flow` is what a user writes (a :class:`Flow` of :class:`Stream` s);
it builds an in-process engine (:mod:`~.engine`: nodes, FIFO streams, watermarks, a
scheduler). :mod:`~.aggregate` is A and A⁺, :mod:`~.dedicated` the operators an
SPE offers directly, :mod:`~.listings` the seed's Aggregate-only compositions
(Listings 1–3, 6) and :mod:`~.gates` the watermark rules of its loops (Listings 4–5).
:mod:`dt.dataflow` defines what each must output. Cost: Python per batch per node and
per tuple per operator (f calls, dict lookups); see each module.
"""

from .flow import Flow, Stream

__all__ = ["Flow", "Stream"]
