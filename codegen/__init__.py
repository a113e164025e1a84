"""codegen: compiled engines for data transducers (empty for now).

Pipeline position: DT (package ``dt``) → optimized DT → **flat transition
tables interpreted by one Numba kernel** (engine ``"table"``) or **a Numba
kernel generated for one query** (engine ``"codegen"``) → Spark.

It will take a :class:`dt.DT` and return a compiled program that maps a
configuration (flat ``status``/``value`` arrays, one entry per state) and a
batch of events (tag codes, float columns) to the outputs of every event and
the final configuration, equal to :mod:`dt.reference` on every input.

This package is empty: it arrives with the [exec] issue. Until then
``qre.Monitor.run`` refuses ``engine="table"`` and ``engine="codegen"``.
"""
