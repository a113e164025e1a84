"""``qre(text, alphabet=None) -> Monitor``: the whole pipeline behind one call (API.md).

text → :func:`qre.language.parser.parse` (AST, :class:`~qre.language.errors.QreSyntaxError`) →
:func:`qre.language.typing.check` (names resolved, alphabet fixed, rates checked,
:class:`~qre.language.errors.QreTypeError`) → :func:`qre.language.compiler.compile_query`
(the DT pair A_α, I_α of §5.3.2) → :func:`codegen.optimize.optimize` →
:class:`~qre.runtime.monitor.Monitor`.

Cost: parsing and typing are linear in the query except for the rate checks,
which build automata (exponential in the worst case, small in practice);
compilation is quadratic (Theorem 5.7).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from dt import constructions

from .language import ast
from .language.clock import Clock
from .language.compiler import LEAN_STATES, compile_queries, compile_query
from .language.derive import derivation
from .language.errors import QreTypeError
from .language.lalr import KEYWORDS
from .language.parser import parse
from .language.sugar import SUGAR_FORMS
from .language.typing import Typed, check, mentioned_tags, resolve
from .runtime.cer.matches import Matcher
from .runtime.dataflow.joins import Joiner
from .runtime.monitor import Monitor

__all__ = ["qre"]

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

log = logging.getLogger(__name__)

Query = str | ast.Program | ast.Query


def qre(query: Query | Mapping[str, Query], alphabet: Sequence[str] | None = None, *,
        optimize: bool = True,
        functions: Mapping[str, Callable[[np.ndarray], float]] | None = None
        ) -> Monitor | Matcher | Joiner:
    """Compile a QRE-Past query into a :class:`Monitor`.

    ``query`` is query text (API.md syntax) or an AST built with
    :mod:`qre.language.combinators`. The alphabet is ``alphabet=[...]`` or the query's
    ``alphabet a, b;`` declaration; without either, the tags the query
    mentions, in order of first appearance (integer tag codes index it).
    ``optimize=False`` runs the DT exactly as the constructions of §5.2 build it (``m.dt``
    is then A_α); otherwise the compiler also optimizes its large intermediate DTs
    (:data:`qre.language.compiler.LEAN_STATES`) and ``m.unoptimized`` is its result.
    ``functions`` names window functions given in Python (issue 23 §1): ``fn(values)``
    maps a window's values (a read-only float64 array in the events' order) to a number,
    written ``NAME(t)`` in ``aggregate(...)`` and ``NAME_over(size, t)`` as a sliding
    window (NaN on an empty window).

    >>> spread = qre("alphabet a; spread_over(3, cur)", functions={"spread": np.ptp})
    >>> spread.run(["a"] * 4, [1.0, 5.0, 2.0, 2.5]).value.tolist()
    [0.0, 4.0, 4.0, 3.0]

    >>> m = qre("iter(atom(a, cur), 0, +)", alphabet=["a", "b"])
    >>> m.run(["a", "b", "a"], [1.0, 2.0, 3.0]).status.tolist()
    [1, 0, 0]

    A dict of queries is one monitor with one output per entry, named by its key
    (the DTs run in parallel, §5.2.1: one pass over the events):

    >>> m = qre({"total": "sum(cur)", "mean": "avg(cur)"}, alphabet=["a"])
    >>> m.outputs
    ('total', 'mean')
    >>> m.run(["a", "a"], [1.0, 2.0]).to_pandas()
       status_total  value_total  status_mean  value_mean
    0             1          1.0            1         1.0
    1             1          3.0            1         1.5
    """
    users = user_functions(functions)
    if isinstance(query, Mapping):
        return _several(query, alphabet, optimize, users)
    _check_query_type(query, "query")
    text = query if isinstance(query, str) else None
    start = time.perf_counter()
    program = parse(query, users) if isinstance(query, str) else query
    typed = check(program, alphabet, text)
    if isinstance(typed.query, ast.JoinRows):
        log.info("a join query over %d tags", len(typed.alphabet))
        return Joiner(typed.query, typed.alphabet, derivation(typed.derived, typed.alphabet),
                      text)
    if isinstance(typed.query, ast.MatchRows):
        log.info("a match query over %d tags", len(typed.alphabet))
        return Matcher(typed.query, typed.alphabet,
                       derivation(typed.derived, typed.alphabet), text)
    log.info("compiling a query of %d nodes over %d tags to a DT",
             ast.query_size(typed.query), len(typed.alphabet))
    compiled = compile_query(typed.query, typed.alphabet, lean=_lean(optimize))
    log.info("DT of %d states (size %d) after %.2f s%s", len(compiled.value.states),
             compiled.value.size, time.perf_counter() - start, "; optimizing" * optimize)
    clock = None
    if typed.period is not None:
        # A window aggregate is silent after `slots` idle ticks (dt.windows).
        window = typed.query if isinstance(typed.query, ast.Aggregate) else None
        if window is not None and window.session:
            clock = Clock(typed.period, 1, session=True)
        else:
            clock = Clock(typed.period, None if window is None else window.size // typed.period,
                          None if window is None else window.size)
    return Monitor.from_dt(compiled.value, optimize=optimize, identity=compiled.identity,
                           source=text, clock=clock,
                           derivation=derivation(typed.derived, typed.alphabet),
                           windows=compiled.windows)


def user_functions(functions: Mapping[str, Callable[[np.ndarray], float]] | None
                   ) -> dict[str, ast.UserFunction]:
    """``qre(..., functions=...)`` checked: a name that a query can write and that no
    builtin has, and a callable, each."""
    if functions is None:
        return {}
    if not isinstance(functions, Mapping):
        raise TypeError(f"qre: functions must be a dict of name → function, not "
                        f"{type(functions).__name__}")
    builtins = {*ast.WINDOW_FUNCTIONS, *ast.WINDOW_SIGNALS, *SUGAR_FORMS, *KEYWORDS}
    out = {}
    for name, fn in functions.items():
        if not isinstance(name, str) or not _IDENTIFIER.fullmatch(name):
            raise ValueError(f"qre: a function's name is an identifier, not {name!r}")
        if name in builtins or f"{name}_over" in SUGAR_FORMS:
            raise ValueError(f"qre: the function name {name!r} is a builtin's")
        if not callable(fn):
            raise TypeError(f"qre: functions[{name!r}] must be a function of a window's "
                            f"values, not {type(fn).__name__}")
        out[name] = ast.UserFunction(name, fn)
    return out


def _several(queries: Mapping[str, Query], alphabet: Sequence[str] | None,
             optimize: bool, users: Mapping[str, ast.UserFunction]) -> Monitor:
    """One monitor computing every query of ``queries``, its outputs named by the keys.

    The alphabet is ``alphabet``, else the one the queries declare (they must agree),
    else the tags any of them mentions. Timed queries (a clock, derived tags, windows over
    durations) run alone: their rows are emitted per window or event, not one per event.
    Sliding windows of events are numbered across the queries (one shared is computed
    once): ``{"top1": "top_over(100, cur, 1)", "top2": "top_over(100, cur, 2)"}``.
    """
    if not queries:
        raise ValueError("qre: the dict of queries is empty")
    names = list(queries)
    for name, q in queries.items():
        _check_query_type(q, f"query {name!r}")
    programs = {name: parse(q, users) if isinstance(q, str) else q
                for name, q in queries.items()}
    sigma = alphabet if alphabet is not None else _common_alphabet(queries, programs)
    typed: dict[str, Typed] = {}
    for name, program in programs.items():
        text = queries[name] if isinstance(queries[name], str) else None
        try:
            typed[name] = check(program, sigma, text)
        except QreTypeError as e:  # the same error, located, naming the output
            raise QreTypeError(f"output {name!r}: {e.message}", text, e.span) from None
        if typed[name].period is not None or typed[name].derived:
            raise ValueError(f"output {name!r} is a timed query (a window, a clock period "
                             f"or derived tags): compile it alone and run it with run_timed")
    common = typed[names[0]].alphabet  # the same set for all; one order for the DTs
    parts, windows = compile_queries([t.query for t in typed.values()], common,
                                     lean=_lean(optimize))
    for w in windows:
        if isinstance(w, ast.Aggregate) or w.partial:  # ⊥ by a mask over the whole row
            raise ValueError("a window aggregate or a partial window (avg_last beyond 100 "
                             "events) is undefined at some events, for its own query only: "
                             "compile it alone")
        if not w.size.events:  # run_timed runs one output; a dict runs in run and run_keys
            raise ValueError(f"{w.function}_over over a duration needs run_timed, which runs "
                             f"one output: compile each query with it alone")
    return Monitor.from_dt(constructions.parallel(*parts), optimize=optimize, outputs=names,
                           windows=windows)


def _check_query_type(query: object, what: str) -> None:
    """A query is text or an AST: anything else is a TypeError naming what was passed."""
    if not isinstance(query, str | ast.Program | ast.Query):  # type: ignore[arg-type]
        raise TypeError(f"qre: {what} must be query text (a str), an AST built with "
                        f"qre.combinators, or a dict of them, not {type(query).__name__}")


def _lean(optimize: bool) -> int | None:
    """The compiler's ``lean`` for ``qre(..., optimize=optimize)``."""
    return LEAN_STATES if optimize else None


def _common_alphabet(queries: Mapping[str, Query],
                     programs: Mapping[str, ast.Program | ast.Query]) -> list[str]:
    """The alphabet the queries declare (all the same), or every tag they mention."""
    declared = {name: p.alphabet for name, p in programs.items()
                if isinstance(p, ast.Program) and p.alphabet is not None}
    if len({frozenset(a) for a in declared.values()}) > 1:
        shown = "; ".join(f"{n}: {', '.join(a)}" for n, a in declared.items())
        raise QreTypeError(f"the queries declare different alphabets ({shown}): declare one, "
                           f"or pass alphabet=[...]")
    if declared:
        return list(next(iter(declared.values())))
    tags: list[str] = []
    for name, program in programs.items():
        whole = program if isinstance(program, ast.Program) else ast.Program(None, (), program)
        try:
            mentioned = mentioned_tags(resolve(whole))
        except QreTypeError:  # say it with the location: check reports the same error
            text = queries[name] if isinstance(queries[name], str) else None
            check(program, None, text)
            raise
        tags += [t for t in mentioned if t not in tags]
    return tags
