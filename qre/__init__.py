"""qre: quantitative monitoring of event streams with data transducers.

Pipeline (seed 003, §5): query text → AST (:mod:`qre.language.parser`, :mod:`qre.language.ast`)
→ typed AST (:mod:`qre.language.typing`, rates with :mod:`qre.language.automata`) → DT
(:mod:`qre.language.compiler`, built with the constructions of package ``dt``) →
optimized DT → flat tables / a generated kernel (package ``codegen``) → Spark
(package ``spark_udf``).

This package is the user-facing end: :func:`qre` compiles a query into a
:class:`Monitor` (``run``, ``run_keys``, ``session``, ``initial``, ``dt``,
``stats``; API.md) — or a ``match(...)`` query into a :class:`Matcher`, whose rows are
matches (issue 26), and a ``join(...)`` query into a :class:`Joiner`, whose rows are
pairs (issue 27) — :meth:`Monitor.from_dt` runs a hand-written DT, and bad
queries raise :class:`QreSyntaxError` / :class:`QreTypeError` (both
``ValueError``) with line, column and a caret. :mod:`qre.language.semantics` is the
denotational oracle that the compiler is tested against; :mod:`qre.cli` is
the ``qre`` command (compile, check equiv / restartable, run), reading event
files through :mod:`qre.runtime.frames`.

Costs: compiling is quadratic in the query (Theorem 5.7), optimizing about
linear in the DT; running is O(DT size) per event on every engine
(``codegen`` adds a one-off compile of about a second for a small query).

Imports are lazy: ``import qre`` loads only the version, and each public name is
imported on first use (PEP 562), so that ``qre --version`` and ``qre --help`` do not
pay for pandas and the compiler (a third of a second), and Numba is imported only
when an engine needs it (:meth:`Monitor.resolve_engine`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__

if TYPE_CHECKING:
    from .api import qre
    from .language import combinators
    from .language.errors import QreSyntaxError, QreTypeError
    from .runtime.cer.matches import Matcher
    from .runtime.dataflow.joins import Joiner
    from .runtime.monitor import Monitor, Output, Session, Stats

__all__ = ["Joiner", "Matcher", "Monitor", "Output", "QreSyntaxError", "QreTypeError",
           "Session", "Stats", "__version__", "combinators", "qre"]

_LAZY = {"qre": (".api", "qre"), "combinators": (".language.combinators", None),
         "QreSyntaxError": (".language.errors", "QreSyntaxError"),
         "QreTypeError": (".language.errors", "QreTypeError"),
         "Matcher": (".runtime.cer.matches", "Matcher"),
         "Joiner": (".runtime.dataflow.joins", "Joiner"),
         **{name: (".runtime.monitor", name) for name in ("Monitor", "Output", "Session",
                                                          "Stats")}}
"""Each public name's module and its name there (None: the module itself)."""


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attribute = _LAZY[name]
    value = importlib.import_module(module, __name__)
    if attribute is not None:
        value = getattr(value, attribute)
    globals()[name] = value  # once: later lookups do not come here
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
