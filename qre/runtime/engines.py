"""The names of the engines that run a monitor (API.md, "Engines").

Apart from :mod:`qre.runtime.monitor`, which chooses among them
(:meth:`~qre.runtime.monitor.Monitor.resolve_engine`), because that module imports
pandas: the command line lists the names in its ``--help`` without importing it.
"""

__all__ = ["ENGINES"]

ENGINES = ("auto", "reference", "table", "codegen")
"""Engine names of API.md."""
