"""Queries composed in Python: functions that build the AST of :mod:`qre.language.ast`.

Seed 003, §5.3.1 (Figure 26) and docs/API.md, "Query text". Every function
here returns exactly the node that :func:`qre.language.parser.parse` builds for the
corresponding text (spans aside), so a query may be written as text, in code,
or both — ``qre.qre(...)`` takes either::

    >>> from qre import qre
    >>> from qre.language import combinators as q
    >>> spikes = q.iter_(q.atom("a", "cur > 10"), 0, "+")
    >>> from qre.language.parser import parse
    >>> spikes == parse("iter(atom(a, cur > 10), 0, +)").query
    True
    >>> qre(spikes, alphabet=["a", "b"]).run(["a", "a", "a"], [11.0, 50.0, 3.0]).value.tolist()
    [1.0, 2.0, 2.0]

=====================================  ==============================================
function                               text form
=====================================  ==============================================
``atom(tag, t)``                       ``atom(TAG, t)`` (``tag="_"``: any tag)
``eps(t)``                             ``eps(t)``
``or_(q1, q2)``                        ``or(q1, q2)``
``split(q1, q2, op)``                  ``split(q1, q2, op)``
``iter_(q, init, op)``                 ``iter(q, init, op)``
``combine(q1, …, qk, op=op)``          ``combine(q1, …, qk, op)``
``prefix_sum(q, init, op)``            ``prefix_sum(q, init, op)``
``fold(regs, init, update, output)``   ``fold([i1, …], (r1, …) -> [u1, …], (r1, …) -> out)``
``fill(q)``, ``fill_with(q, d)``       ``fill(q)``, ``fill_with(q, d)``
``add(q1, q2)``, ``sub(q1, q2)``       ``q1 + q2``, ``q1 - q2`` (signals, issue 21)
``mul(q1, q2)``, ``div(q1, q2)``       ``q1 * q2``, ``q1 / q2``
``signal(f, q1, …)``                   ``f(q1, …)``: ``max(q1, q2)``, ``abs(q)``, …
``lt(q1, q2)``, ``le(q1, q2)``         ``q1 < q2``, ``q1 <= q2``
``gt(q1, q2)``, ``ge(q1, q2)``         ``q1 > q2``, ``q1 >= q2``
``eq(q1, q2)``                         ``q1 == q2``
``land(p1, p2, …)``                    ``p1 && p2 && …`` (left-nested, as text reads it)
``lor(p1, p2, …)``                     ``p1 || p2 || …`` (left-nested)
``lnot(p)``                            ``!p``
``implies(p1, p2)``, ``iff(p1, p2)``   ``p1 -> p2``, ``p1 <-> p2``
``prev(p)``, ``hist(p)``, ``once(p)``  ``prev(p)``, ``hist(p)``, ``once(p)``
``since(p1, p2)``, ``wsince(p1, p2)``  ``p1 since p2``, ``p1 wsince p2``
``once(p, bound=(lo, hi))``            ``once[lo, hi](p)`` (also prev, hist, since;
                                       ints count events, ``"10s"`` is a duration)
``ref(name)``                          ``name`` (a query bound by ``let``)
``let(name, q)``                       ``let name = q;``
``program(q, lets=…, alphabet=…)``     ``alphabet a, b; let …; q``
``lam(params, body)``                  ``(p1, …, pk) -> body``
=====================================  ==============================================

The sugar forms of :mod:`qre.language.sugar`, under their text names (a trailing ``_``
where the text name is a Python builtin): ``any_(t)`` is ``any(t)``,
``sum_(t)`` is ``sum(t)``, ``max_(t)``/``min_(t)`` are ``max(t)``/``min(t)``;
``any_word()``, ``const(c)``, ``count()``,
``avg(t)``, ``var(t)``, ``std(t)``, ``last(t)``, ``window(k, t, op)`` and
``avg_last(k, t)`` keep their names; ``is_(tag)`` is ``is(tag)``; the sliding windows
(issue 23) ``count_over(size)``, ``sum_over(size, t)``, ``avg_over(size, t)``,
``min_over(size, t)``, ``max_over(size, t)``, ``median_over(size, t)``,
``distinct_over(size, t)`` and ``quantile_over(size, t, p)`` take a size in events (an
int) or a duration (``"2d"``). Each returns the core
expansion that the text form stands for (see :mod:`qre.language.sugar` for the table).

Arguments, as in the text:

* a *query* is a node built here, or a number (not a bool): ``gt(avg("cur"), 3)``
  is ``avg(cur) > 3``, i.e. ``gt(avg("cur"), const(3))``.
* a *term* ``t`` is a :class:`dt.terms.Term`, TERM text (``"cur.price * 2"``,
  read with :func:`dt.terms.parse_term`) or a number (a constant). What it may
  read is checked where the text syntax checks it: an atom's term and a sugar
  term read only ``cur``/``cur.FIELD``, an eps term is constant, a lambda body
  reads its (unprimed) parameters and never ``cur``.
* an *operation* ``op`` is an :class:`~qre.language.ast.BuiltinOp` or
  :class:`~qre.language.ast.Lambda`, a builtin symbol (``"+"``, ``"*"``, ``"min"``,
  ``"max"``, ``"fst"``, ``"snd"``), lambda text ``"(x, y) -> x + y"`` or
  ``lam(("x", "y"), "x + y")``. Whether a lambda has the arity its construct
  needs is a typing matter (:mod:`qre.language.typing`), as in text.
* ``init`` and ``c`` are numbers (``float("-inf")``, ``math.nan``, ``True``
  as 1 — text's ``-inf``, ``nan``, ``true``); ``k`` is a positive integer.
* a *name* (``let``, ``ref``, lambda parameters) is an ASCII identifier that
  is not a keyword (:data:`qre.language.parser.KEYWORDS`); a *tag* is such a name, or
  ``"_"`` (any tag) in ``atom``. So every query built here can also be written
  as text: :func:`qre.language.printer.to_text` prints it.

Arguments are checked when a function is called; a bad one raises
:class:`~qre.language.errors.QreSyntaxError` (a ``ValueError``) that names the function
and the argument — with line, column and a caret when TERM or lambda text does
not parse. Typing rules (kinds, rates, arities, tags in the alphabet) are
checked later by :func:`qre.language.typing.check`, i.e. by ``qre.qre``.
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Iterable, Mapping, Sequence

from dt.errors import TermSyntaxError
from dt.terms import Const, Term, parse_term

from . import ast
from . import sugar as _sugar
from .clock import UNIT_NS, duration_ns
from .errors import QreSyntaxError
from .parser import KEYWORDS

__all__ = [
    "add",
    "any_",
    "any_word",
    "atom",
    "avg",
    "avg_last",
    "avg_over",
    "combine",
    "const",
    "count",
    "count_over",
    "distinct_over",
    "div",
    "eps",
    "eq",
    "fill",
    "fill_with",
    "fold",
    "ge",
    "gt",
    "hist",
    "iff",
    "implies",
    "is_",
    "iter_",
    "lam",
    "land",
    "last",
    "le",
    "let",
    "lnot",
    "lor",
    "lt",
    "max_",
    "max_over",
    "median_over",
    "min_",
    "min_over",
    "mul",
    "once",
    "or_",
    "prefix_sum",
    "prev",
    "program",
    "quantile_over",
    "ref",
    "signal",
    "since",
    "split",
    "std",
    "sub",
    "sum_",
    "sum_over",
    "var",
    "window",
    "wsince",
]

TermLike = Term | str | float | int
"""A term argument: a Term, TERM text, or a number (a constant term)."""

OpLike = ast.Op | str
"""An operation argument: a BuiltinOp/Lambda, a builtin symbol, or lambda text."""

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Blanks as the lark lexer skips them (common.WS), not Python's \s.
_LAMBDA_HEAD = re.compile(r"[ \t\f\r\n]*\(([^()]*)\)[ \t\f\r\n]*->")


# --------------------------------------------------------------------------- checking


def _error(where: str, message: str) -> QreSyntaxError:
    return QreSyntaxError(f"{where}: {message}")


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _name(value: object, where: str, role: str) -> str:
    """A name usable in query text: an ASCII identifier that is not a keyword."""
    if not isinstance(value, str):
        raise _error(where, f"{role} must be a str, not {type(value).__name__} {_show(value)}")
    if not _IDENTIFIER.fullmatch(value):
        raise _error(where, f"{role} {value!r} is not an identifier (ASCII letters, digits "
                            "and _, not starting with a digit)")
    if value in KEYWORDS:
        raise _error(where, f"{role} {value!r} is a keyword")
    return value


def _tag(value: object, where: str) -> str:
    if value == ast.ANY_TAG:
        return ast.ANY_TAG
    return _name(value, where, "tag")


def _query(value: object, where: str, role: str = "argument") -> ast.Query:
    """A query node, or a number for ``const(c)`` (as in the text); the hint says what to
    write for the usual mistakes."""
    if isinstance(value, ast.Query):
        return value
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return _sugar.const(float(value))
    if isinstance(value, ast.BuiltinOp | ast.Lambda):
        hint = "; an operation cannot stand here"
    elif isinstance(value, str):
        hint = ("; query text is read by qre.language.parser.parse(text).query, a let-bound name "
                "is ref(name)")
    elif isinstance(value, bool):
        hint = f"; for a constant query write const({int(value)})"
    elif isinstance(value, ast.Program):
        hint = "; a program cannot be nested, use its .query"
    else:
        hint = ""
    raise _error(where, f"{role} must be a query, not {type(value).__name__} "
                        f"{_show(value)}{hint}")


def _number(value: object, where: str, role: str) -> float:
    if isinstance(value, numbers.Real):
        return float(value)
    raise _error(where, f"{role} must be a number (e.g. 0, 1.5, float('-inf')), not "
                        f"{type(value).__name__} {_show(value)}")


def _count(value: object, where: str) -> int:
    """``k``: a positive integer (an integral float as well, as text's ``3.0``)."""
    k = _number(value, where, "k")
    if not (k >= 1 and k.is_integer()):
        raise _error(where, f"k must be a positive integer, not {_show(value)}")
    return int(k)


def _masked(text: str, start: int) -> str:
    """``text`` with its first ``start`` characters blanked, newlines kept, so that a
    parse of the rest reports the line and column of the whole text."""
    return re.sub(r"[^\n]", " ", text[:start]) + text[start:]


def _parse_term_text(text: str, where: str, start: int = 0) -> Term:
    try:
        return parse_term(_masked(text, start))
    except TermSyntaxError as err:
        span = ast.Span(err.line, err.column, err.line, err.column)
        raise QreSyntaxError(f"{where}: {err.message}", text, span) from None


def _forbidden(t: Term, position: str, params: Sequence[str]) -> str | None:
    """Why ``t`` may not stand at ``position`` (as :mod:`qre.language.parser` rules), or None."""
    variables = sorted(t.variables(), key=lambda v: (v.name, v.primed))
    if position in ("atom", "sugar"):
        if variables:
            whose = "an atom's term" if position == "atom" else "a term argument"
            return (f"unknown variable {str(variables[0])!r}: {whose} reads only cur and "
                    "cur.FIELD (variables belong to lambdas)")
        return None
    if position == "fold":
        for v in variables:
            if v.primed or v.name not in params:
                return (f"unknown variable {str(v)!r}: a fold's update reads its registers "
                        f"({', '.join(params)}) and cur")
        return None
    if position == "eps":
        if t.reads_cur():
            return "eps takes a constant term: it matches no event, so there is no cur"
        if variables:
            return f"unknown variable {str(variables[0])!r}: eps takes a constant term"
        return None
    assert position == "lambda"
    if t.reads_cur():
        return ("a lambda combines the values of queries: its body reads its parameters, "
                "not cur (read events inside atom)")
    for v in variables:
        if v.primed:
            return f"{str(v)!r}: lambda parameters are not primed"
        if v.name not in params:
            return f"unknown variable {v.name!r}: this lambda's parameters are {', '.join(params)}"
    return None


def _term(value: object, where: str, position: str, params: Sequence[str] = ()) -> Term:
    """A term argument at ``position`` (atom, eps, sugar or lambda)."""
    if isinstance(value, Term):
        t = value
    elif isinstance(value, str):
        t = _parse_term_text(value, where)
    elif isinstance(value, numbers.Real):
        t = Const(float(value))
    else:
        raise _error(where, f"a term must be a Term, TERM text or a number, not "
                            f"{type(value).__name__} {_show(value)}")
    problem = _forbidden(t, position, params)
    if problem:
        shown = f" (in {value!r})" if isinstance(value, str) else ""
        raise _error(where, problem + shown)
    return t


def _params(value: object, where: str) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise _error(where, f"parameters are a sequence of names such as ('x', 'y'), not "
                            f"{_show(value)}")
    params = tuple(_name(p, where, "lambda parameter") for p in value)
    if not params:
        raise _error(where, "a lambda needs at least one parameter")
    for i, p in enumerate(params):
        if p in params[:i]:
            raise _error(where, f"lambda parameter {p!r} is repeated")
    return params


def _lambda_text(text: str, where: str) -> ast.Lambda:
    """``"(x, y) -> body"``: the parameters up to the first ``)`` followed by ``->``
    (TERM has neither ``->`` nor parameters lists, so this is the top-level arrow)."""
    head = _LAMBDA_HEAD.match(text)
    if head is None:
        raise _error(where, f"{text!r} is not an operation: a lambda is written "
                            "(x, y) -> TERM, with its parameters in parentheses")
    names = [p.strip(" \t\f\r\n") for p in head.group(1).split(",")]
    params = _params(names if names != [""] else [], where)
    body = _parse_term_text(text, where, head.end())
    problem = _forbidden(body, "lambda", params)
    if problem:
        raise _error(where, f"{problem} (in {text!r})")
    return ast.Lambda(params, body)


def _op(value: object, where: str) -> ast.Op:
    """An operation argument (see the module docstring)."""
    if isinstance(value, ast.BuiltinOp):
        return value
    if isinstance(value, ast.Lambda):
        return _lambda(value.params, value.body, where)
    if isinstance(value, str):
        symbol = value.strip(" \t\f\r\n")
        if symbol in ast.BUILTIN_OPS:
            return ast.BuiltinOp(symbol)
        if "->" in value:
            return _lambda_text(value, where)
        raise _error(where, f"unknown operation {value!r}: an operation is +, *, min, max, "
                            "fst, snd or a lambda (x, y) -> TERM")
    raise _error(where, f"an operation must be a BuiltinOp, a Lambda, a builtin symbol or "
                        f"lambda text, not {type(value).__name__} {_show(value)}")


# --------------------------------------------------------------------------- operations


def lam(params: Sequence[str], body: TermLike) -> ast.Lambda:
    """``(p1, …, pk) -> body``: a lambda from its parameter names and its body term.

    >>> str(lam(("s", "n"), "s / n").body)
    's / n'
    """
    return _lambda(params, body, "lam")


def _lambda(params: object, body: object, where: str) -> ast.Lambda:
    names = _params(params, where)
    return ast.Lambda(names, _term(body, where, "lambda", names))


# --------------------------------------------------------------------------- base queries


def atom(tag: str, term: TermLike) -> ast.Atom:
    """``atom(tag, term)``: one event of ``tag`` (``"_"``: any tag), valued ``term``."""
    return ast.Atom(_tag(tag, "atom"), _term(term, "atom", "atom"))


def eps(term: TermLike) -> ast.Eps:
    """``eps(term)``: the empty word, valued the constant ``term``."""
    return ast.Eps(_term(term, "eps", "eps"))


def or_(q1: ast.Query, q2: ast.Query) -> ast.Or:
    """``or(q1, q2)``."""
    return ast.Or(_query(q1, "or_", "q1"), _query(q2, "or_", "q2"))


def split(q1: ast.Query, q2: ast.Query, op: OpLike) -> ast.Split:
    """``split(q1, q2, op)``."""
    return ast.Split(_query(q1, "split", "q1"), _query(q2, "split", "q2"), _op(op, "split"))


def iter_(q: ast.Query, init: float, op: OpLike) -> ast.Iter:
    """``iter(q, init, op)``."""
    return ast.Iter(_query(q, "iter_", "q"), _number(init, "iter_", "init"), _op(op, "iter_"))


def combine(*qs: ast.Query, op: OpLike) -> ast.Combine:
    """``combine(q1, …, qk, op)``; the operation is the keyword argument ``op``."""
    if not qs:
        raise _error("combine", "needs at least one query before op=")
    args = tuple(_query(q, "combine", f"argument {i}") for i, q in enumerate(qs, 1))
    return ast.Combine(args, _op(op, "combine"))


def prefix_sum(q: ast.Query, init: float, op: OpLike) -> ast.PrefixSum:
    """``prefix_sum(q, init, op)``."""
    return ast.PrefixSum(_query(q, "prefix_sum", "q"), _number(init, "prefix_sum", "init"),
                         _op(op, "prefix_sum"))


def fold(registers: Sequence[str], init: Sequence[float], update: Sequence[TermLike],
         output: TermLike) -> ast.RunningFold:
    """``fold([i1, …], (r1, …) -> [u1, …], (r1, …) -> output)``: registers from ``init``,
    every event sets them all to ``update`` (terms over the registers and cur, reading
    the registers before the event), the value is ``output`` (over the registers).

    >>> from qre.language.printer import to_text
    >>> to_text(fold(["s", "n"], [0, 0], ["s + cur", "n + 1"], "s / n"))
    'fold([0, 0], (s, n) -> [s + cur, n + 1], (s, n) -> s / n)'
    """
    where = "fold"
    names = _params(registers, where)
    inits = _sequence(init, where, "init")
    updates = _sequence(update, where, "update")
    if not len(inits) == len(updates) == len(names):
        raise _error(where, f"one initial value and one update term per register "
                            f"({len(names)} register(s), {len(inits)} initial value(s), "
                            f"{len(updates)} update(s))")
    return ast.RunningFold(names, tuple(_number(v, where, "init") for v in inits),
                           tuple(_term(u, where, "fold", names) for u in updates),
                           _term(output, where, "lambda", names))


def _sequence(value: object, where: str, role: str) -> tuple[object, ...]:
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise _error(where, f"{role} is a sequence (one per register), not {_show(value)}")
    return tuple(value)


def fill(q: ast.Query) -> ast.Fill:
    """``fill(q)`` (top level or under a comparison only: a typing rule)."""
    return ast.Fill(_query(q, "fill", "q"))


def fill_with(q: ast.Query, default: ast.Query) -> ast.FillWith:
    """``fill_with(q, default)``."""
    return ast.FillWith(_query(q, "fill_with", "q"), _query(default, "fill_with", "default"))


# --------------------------------------------------------------------------- signals


def signal(name: str, *queries: ast.Query) -> ast.SignalFunction:
    """``name(q1, …)``: a TERM function of signals (``signal("max", q1, q2)`` is
    ``max(q1, q2)``; ``abs``, ``sqrt``, ``exp``, ``log``, ``floor``, ``ceil``, ``min``,
    ``max``, ``pow``, ``if``)."""
    arity = ast.SIGNAL_FUNCTIONS.get(name)
    if arity is None:
        raise _error("signal", f"name must be one of {', '.join(sorted(ast.SIGNAL_FUNCTIONS))}, "
                               f"not {_show(name)}")
    if len(queries) != arity:
        raise _error("signal", f"{name} takes {arity} query argument(s), got {len(queries)}")
    return ast.SignalFunction(name, tuple(_query(x, "signal", f"q{k + 1}")
                                          for k, x in enumerate(queries)))


def _arith(symbol: str, where: str, q1: ast.Query, q2: ast.Query) -> ast.Arith:
    return ast.Arith(symbol, _query(q1, where, "q1"), _query(q2, where, "q2"))


def add(q1: ast.Query, q2: ast.Query) -> ast.Arith:
    """``q1 + q2``: after every event, the sum of both queries' values (issue 21)."""
    return _arith("+", "add", q1, q2)


def sub(q1: ast.Query, q2: ast.Query) -> ast.Arith:
    """``q1 - q2``."""
    return _arith("-", "sub", q1, q2)


def mul(q1: ast.Query, q2: ast.Query) -> ast.Arith:
    """``q1 * q2``."""
    return _arith("*", "mul", q1, q2)


def div(q1: ast.Query, q2: ast.Query) -> ast.Arith:
    """``q1 / q2``."""
    return _arith("/", "div", q1, q2)


# --------------------------------------------------------------------------- temporal queries


def _compare(symbol: str, where: str, q1: ast.Query, q2: ast.Query) -> ast.Compare:
    return ast.Compare(symbol, _query(q1, where, "q1"), _query(q2, where, "q2"))


def lt(q1: ast.Query, q2: ast.Query) -> ast.Compare:
    """``q1 < q2``."""
    return _compare("<", "lt", q1, q2)


def le(q1: ast.Query, q2: ast.Query) -> ast.Compare:
    """``q1 <= q2``."""
    return _compare("<=", "le", q1, q2)


def gt(q1: ast.Query, q2: ast.Query) -> ast.Compare:
    """``q1 > q2``."""
    return _compare(">", "gt", q1, q2)


def ge(q1: ast.Query, q2: ast.Query) -> ast.Compare:
    """``q1 >= q2``."""
    return _compare(">=", "ge", q1, q2)


def eq(q1: ast.Query, q2: ast.Query) -> ast.Compare:
    """``q1 == q2``."""
    return _compare("==", "eq", q1, q2)


def _chain(symbol: str, where: str, ps: tuple[ast.Query, ...]) -> ast.BoolOp:
    if len(ps) < 2:
        raise _error(where, f"needs at least two queries, got {len(ps)}")
    args = [_query(p, where, f"argument {i}") for i, p in enumerate(ps, 1)]
    result = ast.BoolOp(symbol, args[0], args[1])
    for p in args[2:]:  # left-nested, as the text p1 && p2 && p3 is read
        result = ast.BoolOp(symbol, result, p)
    return result


def land(*ps: ast.Query) -> ast.BoolOp:
    """``p1 && p2 && …`` (at least two; ``((p1 && p2) && p3)``)."""
    return _chain("&&", "land", ps)


def lor(*ps: ast.Query) -> ast.BoolOp:
    """``p1 || p2 || …`` (at least two; ``((p1 || p2) || p3)``)."""
    return _chain("||", "lor", ps)


def lnot(p: ast.Query) -> ast.Not:
    """``!p``."""
    return ast.Not(_query(p, "lnot", "p"))


def implies(p1: ast.Query, p2: ast.Query) -> ast.BoolOp:
    """``p1 -> p2``."""
    return ast.BoolOp("->", _query(p1, "implies", "p1"), _query(p2, "implies", "p2"))


def iff(p1: ast.Query, p2: ast.Query) -> ast.BoolOp:
    """``p1 <-> p2``."""
    return ast.BoolOp("<->", _query(p1, "iff", "p1"), _query(p2, "iff", "p2"))


BoundLike = tuple[int | str | None, int | str | None]
"""A past operator's bound ``(lo, hi)``: event counts (ints) or durations (``"10s"``,
``"500ms"``; a bare 0 too), None for 0 (lo) or ∞ (hi)."""

_DURATION = re.compile(r"([0-9]+(?:\.[0-9]*)?)([a-z]+)")


def _duration(number: str, unit: str) -> int | None:
    try:
        return duration_ns(number, unit)
    except ValueError:
        return None


def _bound(value: object, where: str) -> ast.PastBound:
    """``(lo, hi)`` as the parser reads ``[lo, hi]``."""
    if not (isinstance(value, tuple) and len(value) == 2):
        raise _error(where, f"bound must be a pair (lo, hi), not {_show(value)}")
    timed = any(isinstance(end, str) for end in value)
    ends: list[int | None] = []
    for role, end in zip(("lo", "hi"), value, strict=True):
        if end is None:
            ends.append(None)
        elif isinstance(end, int) and not isinstance(end, bool) and end >= 0 and (
                not timed or end == 0):
            ends.append(end)
        elif isinstance(end, str) and (match := _DURATION.fullmatch(end)) and \
                (ns := _duration(match[1], match[2])) is not None:
            ends.append(ns)
        else:
            raise _error(where, f"bound {role} must be an event count (an int ≥ 0) or, with "
                                f"the other end a duration too, a duration such as '10s' "
                                f"(units {', '.join(UNIT_NS)}), not {_show(end)}")
    lo, hi = ends[0] or 0, ends[1]
    if hi is not None and hi < lo:
        raise _error(where, f"bound {value!r} needs lo ≤ hi")
    return ast.PastBound(lo, hi, events=not timed)


def _past(op: str, operands: tuple[ast.Query, ...], bound: BoundLike) -> ast.BoundedPast:
    return ast.BoundedPast(op, operands, _bound(bound, op))


def prev(p: ast.Query, bound: BoundLike | None = None) -> ast.Prev | ast.BoundedPast:
    """``prev(p)``; with ``bound=(lo, hi)`` ``prev[lo, hi](p)`` (issue 21 §2)."""
    body = _query(p, "prev", "p")
    return ast.Prev(body) if bound is None else _past("prev", (body,), bound)


def hist(p: ast.Query, bound: BoundLike | None = None) -> ast.Hist | ast.BoundedPast:
    """``hist(p)``; with ``bound=(lo, hi)`` ``hist[lo, hi](p)``."""
    body = _query(p, "hist", "p")
    return ast.Hist(body) if bound is None else _past("hist", (body,), bound)


def once(p: ast.Query, bound: BoundLike | None = None) -> ast.Once | ast.BoundedPast:
    """``once(p)``; with ``bound=(lo, hi)`` ``once[lo, hi](p)``: ``once(p, ("0s", "10min"))``."""
    body = _query(p, "once", "p")
    return ast.Once(body) if bound is None else _past("once", (body,), bound)


def since(p1: ast.Query, p2: ast.Query,
          bound: BoundLike | None = None) -> ast.Since | ast.BoundedPast:
    """``p1 since p2`` (strong); with ``bound=(lo, hi)`` ``p1 since[lo, hi] p2``."""
    operands = (_query(p1, "since", "p1"), _query(p2, "since", "p2"))
    return ast.Since(*operands, True) if bound is None else _past("since", operands, bound)


def wsince(p1: ast.Query, p2: ast.Query) -> ast.Since:
    """``p1 wsince p2`` (weak)."""
    return ast.Since(_query(p1, "wsince", "p1"), _query(p2, "wsince", "p2"), False)


# --------------------------------------------------------------------------- programs


def ref(name: str) -> ast.Name:
    """``name``: a reference to a query bound by ``let`` (see :func:`program`)."""
    return ast.Name(_name(name, "ref", "name"))


def let(name: str, q: ast.Query) -> ast.Let:
    """``let name = q;``"""
    return ast.Let(_name(name, "let", "name"), _query(q, "let", "q"))


def _refs(node: object) -> Iterable[str]:
    """The names that ``node`` refers to (iteratively: built queries may be deep)."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, ast.Name):
            yield current.name
        elif isinstance(current, tuple):
            stack.extend(current)
        elif isinstance(current, ast.Query):
            stack.extend(getattr(current, f) for f in current.__dataclass_fields__
                         if f != "span")


def _lets(lets: object) -> tuple[ast.Let, ...]:
    where = "program"
    if isinstance(lets, Mapping):
        lets = list(lets.items())
    if isinstance(lets, str) or not isinstance(lets, Iterable):
        raise _error(where, f"lets must be a mapping or a sequence of let(name, q) or "
                            f"(name, q) pairs, not {_show(lets)}")
    out: list[ast.Let] = []
    for item in lets:
        if isinstance(item, ast.Let):
            out.append(let(item.name, item.query))
        elif isinstance(item, tuple) and len(item) == 2:
            out.append(let(*item))
        else:
            raise _error(where, f"a let is let(name, q) or a (name, q) pair, not {_show(item)}")
    return tuple(out)


def _alphabet(alphabet: object) -> tuple[str, ...] | None:
    where = "program"
    if alphabet is None:
        return None
    if isinstance(alphabet, str) or not isinstance(alphabet, Iterable):
        raise _error(where, f"alphabet is a sequence of tags, not {_show(alphabet)}")
    tags = tuple(alphabet)
    for i, tag in enumerate(tags):
        if tag == ast.ANY_TAG:
            raise _error(where, f"{ast.ANY_TAG!r} is the wildcard tag (atom('_', t) matches "
                                "any event): it cannot be declared in an alphabet")
        _name(tag, where, "tag")
        if tag in tags[:i]:
            raise _error(where, f"tag {tag!r} is declared twice")
    if not tags:
        raise _error(where, "an alphabet declares at least one tag")
    return tags


def program(
    query: ast.Query,
    *,
    lets: Mapping[str, ast.Query] | Iterable[ast.Let | tuple[str, ast.Query]] = (),
    alphabet: Sequence[str] | None = None,
) -> ast.Program:
    """``alphabet a, b; let n1 = q1; …; query``: a whole program.

    ``lets`` is a mapping name → query (in order) or a sequence of
    :func:`let` nodes or ``(name, query)`` pairs; each may :func:`ref` the
    earlier ones, the final query any of them.

    >>> p = program(gt(ref("s"), const(3)), lets={"s": sum_("cur")}, alphabet=["a"])
    >>> from qre.language.printer import to_text
    >>> print(to_text(p))
    alphabet a;
    let s = iter(atom(_, cur), 0, +);
    s > iter(atom(_, 0), 3, fst)
    """
    where = "program"
    bindings = _lets(lets)
    bound: list[str] = []
    for binding in bindings:
        if binding.name in bound:
            raise _error(where, f"{binding.name!r} is bound twice; each let needs its own name")
        _check_bound(binding.query, bound, f"the let of {binding.name!r}")
        bound.append(binding.name)
    final = _query(query, where, "query")
    _check_bound(final, bound, "the query")
    return ast.Program(_alphabet(alphabet), bindings, final)


def _check_bound(q: ast.Query, bound: list[str], what: str) -> None:
    for name in _refs(q):
        if name not in bound:
            earlier = f" (bound before it: {', '.join(bound)})" if bound else ""
            raise _error("program", f"{what} refers to {name!r}, which no earlier let "
                                    f"binds{earlier}")


# --------------------------------------------------------------------------- sugar


def _sugar_term(value: object, where: str) -> Term:
    return _term(value, where, "sugar")


def any_(t: TermLike) -> ast.Query:
    """``any(t)``: one event of any tag, valued ``t``."""
    return _sugar.any_event(_sugar_term(t, "any_"))


def any_word() -> ast.Query:
    """``any_word()``: every word, value 0."""
    return _sugar.any_word()


def const(c: float) -> ast.Query:
    """``const(c)``: ``c`` on every word."""
    return _sugar.const(_number(c, "const", "c"))


def count() -> ast.Query:
    """``count()``: the number of events so far."""
    return _sugar.count()


def sum_(t: TermLike) -> ast.Query:
    """``sum(t)``: the sum of ``t`` over the events so far."""
    return _sugar.sum_of(_sugar_term(t, "sum_"))


def avg(t: TermLike) -> ast.Query:
    """``avg(t)``: the mean of ``t`` so far (NaN on the empty word)."""
    return _sugar.avg(_sugar_term(t, "avg"))


def max_(t: TermLike) -> ast.Query:
    """``max(t)``: the largest ``t`` so far (-inf on the empty word)."""
    return _sugar.running_max(_sugar_term(t, "max_"))


def min_(t: TermLike) -> ast.Query:
    """``min(t)``: the smallest ``t`` so far (inf on the empty word)."""
    return _sugar.running_min(_sugar_term(t, "min_"))


def var(t: TermLike) -> ast.Query:
    """``var(t)``: the population variance of ``t`` so far."""
    return _sugar.var(_sugar_term(t, "var"))


def std(t: TermLike) -> ast.Query:
    """``std(t)``: the population standard deviation of ``t`` so far."""
    return _sugar.std(_sugar_term(t, "std"))


def last(t: TermLike) -> ast.Query:
    """``last(t)``: ``t`` at the last event (undefined on the empty word)."""
    return _sugar.last(_sugar_term(t, "last"))


def is_(tag: str) -> ast.Query:
    """``is(tag)``: 1 if the last event has ``tag``, else 0 (0 on the empty word)."""
    return _sugar.is_tag(_name(tag, "is_", "tag"))


def window(k: int, t: TermLike, op: OpLike) -> ast.Query:
    """``window(k, t, op)``: ``op`` folded over ``t`` on the last ``k`` events."""
    args = _count(k, "window"), _sugar_term(t, "window"), _op(op, "window")
    try:
        return _sugar.window(*args)
    except ValueError as err:  # beyond 100 events an op other than + min max
        raise _error("window", str(err)) from None


def avg_last(k: int, t: TermLike) -> ast.Query:
    """``avg_last(k, t)``: the mean of ``t`` over the last ``k`` events."""
    return _sugar.avg_last(_count(k, "avg_last"), _sugar_term(t, "avg_last"))


def _window_size(value: object, where: str) -> ast.WindowSize:
    """A sliding window's size: a number of events (an int ≥ 1) or a duration (``"2d"``)."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return ast.WindowSize(value, events=True)
    if isinstance(value, str) and (match := _DURATION.fullmatch(value)) and \
            (ns := _duration(match[1], match[2])) is not None and ns >= 1:
        return ast.WindowSize(ns, events=False)
    raise _error(where, f"size must be a number of events (an int ≥ 1) or a duration such as "
                        f"'2d' (units {', '.join(UNIT_NS)}), not {_show(value)}")


def _over(function: str, size: object, t: TermLike | None = None,
          p: float | None = None) -> ast.WindowSignal:
    where = f"{function}_over"
    return ast.WindowSignal(function, _window_size(size, where),
                            None if t is None else _sugar_term(t, where),
                            None if p is None else _number(p, where, "p"))


def count_over(size: int | str) -> ast.WindowSignal:
    """``count_over(size)``: the number of events in the sliding window (issue 23)."""
    return _over("count", size)


def sum_over(size: int | str, t: TermLike) -> ast.WindowSignal:
    """``sum_over(size, t)``: the sum of ``t`` over the sliding window (exact, rounded once)."""
    return _over("sum", size, t)


def avg_over(size: int | str, t: TermLike) -> ast.WindowSignal:
    """``avg_over(size, t)``: the mean of ``t`` over the sliding window:
    ``avg_over("2d", "cur")`` is the mean of the last two days' events."""
    return _over("avg", size, t)


def min_over(size: int | str, t: TermLike) -> ast.WindowSignal:
    """``min_over(size, t)``: the least ``t`` in the sliding window."""
    return _over("min", size, t)


def max_over(size: int | str, t: TermLike) -> ast.WindowSignal:
    """``max_over(size, t)``: the greatest ``t`` in the sliding window."""
    return _over("max", size, t)


def median_over(size: int | str, t: TermLike) -> ast.WindowSignal:
    """``median_over(size, t)``: the median of ``t`` over the sliding window."""
    return _over("median", size, t)


def quantile_over(size: int | str, t: TermLike, p: float) -> ast.WindowSignal:
    """``quantile_over(size, t, p)``: the p-quantile of ``t`` over the sliding window."""
    return _over("quantile", size, t, p)


def distinct_over(size: int | str, t: TermLike) -> ast.WindowSignal:
    """``distinct_over(size, t)``: the number of distinct values of ``t`` in the window."""
    return _over("distinct", size, t)
