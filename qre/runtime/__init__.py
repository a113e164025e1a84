"""Running monitors: events as users have them → the engines → outputs as users want them.

Pipeline position: after the language (:mod:`qre.language`) and the compiled engines
(package ``codegen``), before Spark (package ``spark_udf``). :mod:`~qre.runtime.monitor`
holds :class:`~qre.runtime.monitor.Monitor` and :class:`~qre.runtime.monitor.Session`
(run, run_keys, sessions, the engines; their names are in :mod:`~qre.runtime.engines`);
:mod:`~qre.runtime.columns` turns pyarrow, polars and pandas columns into numpy and
:mod:`~qre.runtime.tag_codes` tags into the kernels' codes;
:mod:`~qre.runtime.keys` the one rule of which rows form a stream;
:mod:`~qre.runtime.order` is the one order of equal times;
:mod:`~qre.runtime.output` the :class:`~qre.runtime.output.Output` and the naming of
output columns; :mod:`~qre.runtime.times` and :mod:`~qre.runtime.timed` run
timed queries (event times in whole δ, clock ticks, emitted rows);
:mod:`~qre.runtime.frames` reads event tables for the command line and
:mod:`~qre.runtime.progress` reports its stages; :mod:`~qre.runtime.changelog` is
the change column of optimistic streams and the sink barrier that releases their
final rows; :mod:`~qre.runtime.window_fields` computes sliding windows before the DT
and :mod:`~qre.runtime.window_contents` carries their contents between calls;
:mod:`~qre.runtime.compressed_aggregate` is seed 001's compressed Aggregate.

Takes a monitor and columns of events (tags, values, keys, times); returns one
output per event (``Output``) or the emitted rows of a timed run (a DataFrame). Cost:
O(DT size) per event in the kernel, plus O(n log n) to order timed events and O(n)
conversions at the boundary.
"""
