"""Seed 000's stream operators: Aggregate, A⁺, A∞, and Map, Filter, Join through them or dedicated.

Pipeline position: keyed, timestamped tuples (from frames) → **dataflow** (an
in-process engine: :mod:`~.engine` — nodes, FIFO streams, watermarks, a scheduler)
→ output tuples. :mod:`~.aggregate` is A and A⁺, :mod:`~.dedicated` the operators an
SPE offers directly, :mod:`~.listings` the seed's Aggregate-only compositions
(Listings 1–3, 6) and :mod:`~.gates` the watermark rules of its loops (Listings 4–5).
:mod:`dt.dataflow` defines what each must output. Cost: Python per batch per node and
per tuple per operator (f calls, dict lookups); see each module.
"""
