"""codegen: compiled engines for data transducers.

Pipeline position: DT (package ``dt``) → optimized DT → **flat transition
tables interpreted by one Numba kernel** (engine ``"table"``) or **a Numba
kernel generated for one query** (engine ``"codegen"``) → Spark.

What exists now (seed 003, §5.1):

* :mod:`codegen.tables` — :func:`~codegen.tables.flatten` turns a
  :class:`dt.DT` into :class:`~codegen.tables.Tables`: plain numpy arrays
  (per label, the strongly connected components of the within-step
  dependencies in topological order; terms as postfix bytecode);
* :mod:`codegen.kernels` — the ``"table"`` engine: one generic Numba kernel
  (compiled once, cached on disk) that runs any query's tables;
  :class:`~codegen.kernels.TableEngine` (``initial_config``, ``advance`` on the
  contract's flat ``status``/``value`` arrays) for the Monitor, and
  :func:`~codegen.kernels.table_initial` / :func:`~codegen.kernels.table_evaluate`
  mirroring :mod:`dt.reference` (the oracle; tests check bit-for-bit equality).

Not yet: the per-query generated kernel (``"codegen"``), restart (Definition
5.4) in the table engine, and the Monitor's use of the table engine.
"""
