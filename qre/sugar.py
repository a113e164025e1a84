"""Sugar: common queries written short, each expanding to core QRE-Past (§5.3.1).

Every form is a function returning a core AST; the parser calls the same
functions for the text forms, so text and code mean the same. ``t`` is a term
over ``cur`` (``cur``, ``cur.price * 2``…), ``k`` a positive integer. The
expansions use the wildcard atom ``atom(_, t)`` (one event of any tag), so no
form depends on the alphabet.

=====================  ==========================================================  ========
form                   expansion                                                   rate
=====================  ==========================================================  ========
``any(t)``             ``atom(_, t)``                                              Σ
``any_word()``         ``iter(atom(_, 0), 0, fst)`` — value 0                      Σ*
``const(c)``           ``iter(atom(_, 0), c, fst)`` — value c on every word        Σ*
``count()``            ``iter(atom(_, 1), 0, +)``                                  Σ*
``sum(t)``             ``iter(atom(_, t), 0, +)``                                  Σ*
``avg(t)``             ``combine(sum(t), count(), (s, n) -> s / n)`` — NaN on ε     Σ*
``var(t)``             ``combine(sum(t * t), sum(t), count(),                      Σ*
                       (q, s, n) -> q / n - (s / n) * (s / n))`` (population)
``std(t)``             ``var`` with ``sqrt(...)`` around the lambda body           Σ*
``last(t)``            ``split(any_word(), atom(_, t), snd)`` — t at the last      Σ⁺
                       event
``window(k, t, op)``   ``split(any_word(), W_k, snd)``, W_1 = ``atom(_, t)``,       Σ^≥k
                       W_j = ``split(W_{j-1}, atom(_, t), op)``: op folded over
                       t on the last k events
``avg_last(k, t)``     ``split(any_word(), W_k(+), (_w, s) -> s / k)``              Σ^≥k
=====================  ==========================================================  ========

Σ⁺ and Σ^≥k queries are undefined on shorter words; ``fill_with(q, d)``
gives them a default where a comparison needs a value on every word.

Window functions (the first argument of ``aggregate``) are folds
(:class:`dt.windows.Fold`: registers from initial values, one update per
event, an output), the same definitions as the running forms above; the
window DT is a direct construction (:mod:`dt.windows` says why):

=============  =============================  ====================================  ==========
function       registers (initial)            update                                output
=============  =============================  ====================================  ==========
``count()``    n (0)                          n + 1                                 n
``sum(t)``     s (0)                          s + t                                 s
``min(t)``     m (inf)                        min(m, t)                             m
``max(t)``     m (-inf)                       max(m, t)                             m
``avg(t)``     s, n (0, 0)                    s + t, n + 1                          s / n
``var(t)``     q, s, n (0, 0, 0)              q + t * t, s + t, n + 1               q/n − (s/n)²
``std(t)``     as var                         as var                                sqrt(var)
``first(t)``   f, n (0, 0)                    if(n == 0, t, f), n + 1               f
``last(t)``    v (0)                          t                                     v
=============  =============================  ====================================  ==========
"""

from __future__ import annotations

import math

from dt.terms import Apply, Const, Cur, Term, Var
from dt.windows import Fold

from . import ast

__all__ = [
    "MAX_WINDOW",
    "SUGAR_FORMS",
    "any_event",
    "any_word",
    "avg",
    "avg_last",
    "const",
    "count",
    "last",
    "std",
    "sum_of",
    "var",
    "window",
    "window_fold",
]

_PLUS = ast.BuiltinOp("+")
_FST = ast.BuiltinOp("fst")
_SND = ast.BuiltinOp("snd")


def _v(name: str) -> Var:
    return Var(name)


def _div(a: Term, b: Term) -> Term:
    return Apply("div", (a, b))


def any_event(t: Term) -> ast.Query:
    """``any(t)``: one event of any tag, valued t."""
    return ast.Atom(ast.ANY_TAG, t)


def const(c: float) -> ast.Query:
    """``const(c)``: the constant c on every word (Σ*)."""
    return ast.Iter(any_event(Const(0.0)), float(c), _FST)


def any_word() -> ast.Query:
    """``any_word()``: matches every word (Σ*), value 0."""
    return const(0.0)


def count() -> ast.Query:
    """``count()``: the number of events so far."""
    return ast.Iter(any_event(Const(1.0)), 0.0, _PLUS)


def sum_of(t: Term) -> ast.Query:
    """``sum(t)``: the sum of t over the events so far (0 on the empty word)."""
    return ast.Iter(any_event(t), 0.0, _PLUS)


def avg(t: Term) -> ast.Query:
    """``avg(t)``: the mean of t over the events so far (NaN on the empty word, 0/0)."""
    return ast.Combine((sum_of(t), count()),
                       ast.Lambda(("s", "n"), _div(_v("s"), _v("n"))))


def _variance_term() -> Term:
    mean = _div(_v("s"), _v("n"))
    return Apply("sub", (_div(_v("q"), _v("n")), Apply("mul", (mean, mean))))


def var(t: Term) -> ast.Query:
    """``var(t)``: the population variance of t so far (E[t²] − E[t]²)."""
    return ast.Combine((sum_of(Apply("mul", (t, t))), sum_of(t), count()),
                       ast.Lambda(("q", "s", "n"), _variance_term()))


def std(t: Term) -> ast.Query:
    """``std(t)``: the population standard deviation of t so far."""
    return ast.Combine((sum_of(Apply("mul", (t, t))), sum_of(t), count()),
                       ast.Lambda(("q", "s", "n"), Apply("sqrt", (_variance_term(),))))


def last(t: Term) -> ast.Query:
    """``last(t)``: t at the last event (undefined on the empty word)."""
    return ast.Split(any_word(), any_event(t), _SND)


MAX_WINDOW = 100
"""The largest k of ``window``/``avg_last``: the expansion nests k splits, and every
stage after parsing walks the query recursively (the parser bounds text nesting the
same way, :data:`qre.parser.MAX_DEPTH`)."""


def _last_k(k: int, t: Term, op: ast.Op) -> ast.Query:
    if k < 1 or int(k) != k:
        raise ValueError(f"the number of events must be a positive integer, not {k}")
    if k > MAX_WINDOW:
        raise ValueError(f"windows of more than {MAX_WINDOW} events are not supported "
                         f"(got {int(k)}): the expansion nests one split per event")
    block: ast.Query = any_event(t)
    for _ in range(int(k) - 1):
        block = ast.Split(block, any_event(t), op)
    return block


def window(k: int, t: Term, op: ast.Op) -> ast.Query:
    """``window(k, t, op)``: op folded over t on the last k events (defined from k events)."""
    return ast.Split(any_word(), _last_k(k, t, op), _SND)


def avg_last(k: int, t: Term) -> ast.Query:
    """``avg_last(k, t)``: the mean of t over the last k events (defined from k events)."""
    lam = ast.Lambda(("_w", "s"), _div(_v("s"), Const(float(k))))
    return ast.Split(any_word(), _last_k(k, t, _PLUS), lam)


SUGAR_FORMS = {
    "any": any_event,
    "any_word": any_word,
    "const": const,
    "count": count,
    "sum": sum_of,
    "avg": avg,
    "var": var,
    "std": std,
    "last": last,
    "window": window,
    "avg_last": avg_last,
}
"""Text name → the function building its expansion."""


def _fold(registers: str, init: tuple[float, ...], update: tuple[Term, ...],
          output: Term) -> Fold:
    return Fold(tuple(registers.split()), init, update, output)


def window_fold(fn: ast.WindowFunction | ast.WindowFold) -> Fold:
    """The fold of a window function (table in the module docstring)."""
    if isinstance(fn, ast.WindowFold):
        return Fold(fn.registers, fn.init, fn.update, fn.output)
    t = fn.arg if fn.arg is not None else Cur()
    n, s = _v("n"), _v("s")
    plus = lambda a, b: Apply("add", (a, b))  # noqa: E731
    one = Const(1.0)
    folds = {
        "count": lambda: _fold("n", (0.0,), (plus(n, one),), n),
        "sum": lambda: _fold("s", (0.0,), (plus(s, t),), s),
        "min": lambda: _fold("m", (math.inf,), (Apply("min", (_v("m"), t)),), _v("m")),
        "max": lambda: _fold("m", (-math.inf,), (Apply("max", (_v("m"), t)),), _v("m")),
        "avg": lambda: _fold("s n", (0.0, 0.0), (plus(s, t), plus(n, one)), _div(s, n)),
        "var": lambda: _fold("q s n", (0.0, 0.0, 0.0),
                             (plus(_v("q"), Apply("mul", (t, t))), plus(s, t), plus(n, one)),
                             _variance_term()),
        "first": lambda: _fold("f n", (0.0, 0.0),
                               (Apply("if", (Apply("eq", (n, Const(0.0))), t, _v("f"))),
                                plus(n, one)), _v("f")),
        "last": lambda: _fold("v", (0.0,), (t,), _v("v")),
    }
    if fn.name == "std":
        var_fold = folds["var"]()
        return Fold(var_fold.registers, var_fold.init, var_fold.update,
                    Apply("sqrt", (var_fold.output,)))
    return folds[fn.name]()
