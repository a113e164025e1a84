"""qre: quantitative monitoring of event streams with data transducers.

Pipeline (seed 003, §5): query text → AST → typed AST → DT (package ``dt``,
built with the constructions of §5.2) → optimized DT → flat tables / a
generated kernel (package ``codegen``) → Spark (package ``spark_udf``).

This package is the user-facing end of that pipeline. For now it holds only
:class:`Monitor`, which runs a data transducer — hand-written, or read with
``dt.DT.from_json`` — over an event stream through the API of
../shared/API.md (``Monitor.from_dt(d)``, ``m.run``, ``m.initial``,
``m.stats``), and :class:`Output`, the ``(status, value)`` arrays it returns.
The QRE-Past language (``qre(text)``, ``QreSyntaxError``, ``QreTypeError``)
arrives with the language issue; the demo program is :mod:`qre.demo`.
"""

from .monitor import Monitor, Output, Stats

__all__ = ["Monitor", "Output", "Stats"]
