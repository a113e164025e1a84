"""``qre(text, alphabet=None) -> Monitor``: the whole pipeline behind one call (API.md).

text → :func:`qre.parser.parse` (AST, :class:`~qre.errors.QreSyntaxError`) →
:func:`qre.typing.check` (names resolved, alphabet fixed, rates checked,
:class:`~qre.errors.QreTypeError`) → :func:`qre.compiler.compile_query`
(the DT pair A_α, I_α of §5.3.2) → :func:`codegen.optimize.optimize` →
:class:`~qre.monitor.Monitor`.

Cost: parsing and typing are linear in the query except for the rate checks,
which build automata (exponential in the worst case, small in practice);
compilation is quadratic (Theorem 5.7).
"""

from __future__ import annotations

from collections.abc import Sequence

from . import ast
from .clock import Clock
from .compiler import compile_query
from .derive import derivation
from .monitor import Monitor
from .parser import parse
from .typing import check

__all__ = ["qre"]


def qre(query: str | ast.Program | ast.Query, alphabet: Sequence[str] | None = None, *,
        optimize: bool = True) -> Monitor:
    """Compile a QRE-Past query into a :class:`Monitor`.

    ``query`` is query text (API.md syntax) or an AST built with
    :mod:`qre.combinators`. The alphabet is ``alphabet=[...]`` or the query's
    ``alphabet a, b;`` declaration; without either, the tags the query
    mentions, in order of first appearance (integer tag codes index it).
    ``optimize=False`` runs the DT exactly as compiled (``m.dt`` is then A_α).

    >>> m = qre("iter(atom(a, cur), 0, +)", alphabet=["a", "b"])
    >>> m.run(["a", "b", "a"], [1.0, 2.0, 3.0]).status.tolist()
    [1, 0, 0]
    """
    text = query if isinstance(query, str) else None
    program = parse(query) if isinstance(query, str) else query
    typed = check(program, alphabet, text)
    compiled = compile_query(typed.query, typed.alphabet)
    clock = None
    if typed.period is not None:
        # A window aggregate is silent after `slots` idle ticks (dt.windows).
        window = typed.query if isinstance(typed.query, ast.Aggregate) else None
        clock = Clock(typed.period, None if window is None else window.slots,
                      None if window is None else window.size)
    return Monitor.from_dt(compiled.value, optimize=optimize, identity=compiled.identity,
                           source=text, clock=clock,
                           derivation=derivation(typed.derived, typed.alphabet))
