"""codegen: compiled engines for data transducers.

Pipeline position: DT (package ``dt``) → optimized DT → **flat transition
tables interpreted by one Numba kernel** (engine ``"table"``) or **a Numba
kernel generated for one query** (engine ``"codegen"``) → Spark.

Both engines run Equation (1) of seed 003, §5.1 (one least fixpoint per event,
Theorem 5.1) bit for bit like the reference interpreter :mod:`dt.reference`,
behind one array interface (:class:`~codegen.kernels.ArrayEngine`:
``initial_config``, ``advance``, ``advance_keys`` on the contract's flat
``status``/``value`` arrays, with one copy of the input validation):

* :mod:`codegen.optimize` — :func:`~codegen.optimize.optimize`: exact DT
  rewrites, one pass per module (fold constants, collapse copies, merge
  equivalent states, inline single-use states, prune dead and useless states);
  same outputs after every prefix, with restarts too, and the same interface (I
  and F in order). The
  Monitor runs the optimized DT on every engine;
* :mod:`codegen.tables` — :func:`~codegen.tables.flatten` turns a
  :class:`dt.DT` into :class:`~codegen.tables.Tables`: plain numpy arrays
  (per label, the strongly connected components of the within-step
  dependencies in topological order; terms as postfix bytecode);
* :mod:`codegen.kernels` — the ``"table"`` engine: one generic Numba kernel
  (compiled once, cached on disk) that interprets any query's tables;
  :class:`~codegen.kernels.TableEngine`, and the jitted term helpers and
  intrinsics the generated kernels share;
* :mod:`codegen.grouping` — linear-time grouping of keyed rows: object columns
  numbered by identity (:func:`~codegen.grouping.identity_ids`), a counting sort
  of key ids (:func:`~codegen.grouping.group_rows`), the engines' permutation check;
  ``ArrayEngine.advance_ids`` takes each row's key id and groups the rows (or, for
  small DTs on the codegen engine, runs them in input order with the states a step
  reads kept per key: ``run_rows``, in blocks of keys whose tables fit a core's cache,
  :func:`~codegen.grouping.block_rows`);
* :mod:`codegen.emit` — :func:`~codegen.emit.emit` writes the Python source of
  a module specialised to one DT from its tables: per label straight-line,
  branch-free code (lifting and union as integer selects on status locals,
  each local assigned once), constants inlined, the configuration in local
  variables (small DTs) or in the arrays; :mod:`codegen.loops` — above
  ``MAX_UNROLLED_STATES`` states, one loop body per shape of block (blocks
  that compute alike on other states), their states and constants in tables:
  code that grows with the shapes, not the states (compile time);
  :mod:`codegen.modes` — for small DTs, the event loop specialised to the status
  vectors a long stream stays in (statuses do not depend on the data: a finite
  automaton over the tags), every status a constant and only the defined states'
  values computed; the general loop runs a stream's first events until then;
* :mod:`codegen.generated` — the ``"codegen"`` engine:
  :class:`~codegen.generated.CodegenEngine` writes that module to
  ``$QRE_CACHE_DIR`` (default ``~/.cache/qre/codegen``) under the sha256 of its
  text and imports it, so Numba's ``cache=True`` keeps the machine code on
  disk for the next process; :func:`~codegen.generated.is_ready` says whether
  running will compile, :meth:`~codegen.generated.CodegenEngine.compile`
  compiles eagerly. Keyed streams run in chunks of keys on parallel threads
  (the kernel releases the GIL);
* :mod:`codegen.numba_cache` — Numba's disk cache made robust (a damaged file
  is a miss) and quick to load (no compile-time setup), on the sealed files
  of :mod:`codegen.cache_files`, which also holds the cache directory.

Cost model: optimizing is linear in the DT's size per round (milliseconds for
hundreds of states, under a second for 10k); the table engine is ready at once
for any query; the codegen engine costs about a second of compilation for a
small query (a second or two more with status modes; a few seconds for a
thousand states in the loop shape) and then runs one to two orders of magnitude
faster. Tag codes are int8 in the kernels for up to 128 tags
(:func:`codegen.tables.code_dtype`).

Not yet: restart (Definition 5.4) in the compiled engines.
"""
