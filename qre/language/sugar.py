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
``max(t)``             ``iter(atom(_, t), -inf, max)`` — -inf on ε                 Σ*
``min(t)``             ``iter(atom(_, t), inf, min)`` — inf on ε                   Σ*
``var(t)``             the *population* variance of t: ``fold(...)``, the running  Σ*
                       fold of the ``var`` window function below — NaN on ε
``std(t)``             ``sqrt`` of ``var(t)``: the same fold, output               Σ*
                       ``sqrt(q / n)``
``last(t)``            ``split(any_word(), atom(_, t), snd)`` — t at the last      Σ⁺
                       event
``window(k, t, op)``   ``split(any_word(), W_k, snd)``, W_1 = ``atom(_, t)``,       Σ^≥k
                       W_j = ``split(W_{j-1}, atom(_, t), op)``: op folded over
                       t on the last k events
``avg_last(k, t)``     ``split(any_word(), W_k(+), (_w, s) -> s / k)``              Σ^≥k
=====================  ==========================================================  ========

Beyond ``MAX_WINDOW`` (100) events, ``avg_last`` and ``window`` with op ``+``, ``min``
or ``max`` are not expansions but sliding windows of the window store
(:func:`stored_last_k`, below), ⊥ before the k-th event like the expansion; they are
top-level queries (at the top, in arithmetic and comparisons), and their sums are
exact, rounded once.

Sliding windows at every event (issue 23; :class:`~qre.language.ast.WindowSignal`,
not expansions: a window store computes them before the DT, so their cost does not
grow with the window): ``count_over(size)``, ``sum_over(size, t)``, ``avg_over``,
``min_over``, ``max_over``, ``median_over``, ``distinct_over`` and
``quantile_over(size, t, p)``, where size is a duration (``2d``: the events of
(now − 2d, now]) or a number of events (``1000``: the last 1000, fewer at first).
Top-level queries defined on every word (:mod:`dt.window_aggregates` gives each
aggregate and its value on an empty window).

Σ⁺ and Σ^≥k queries are undefined on shorter words; ``fill_with(q, d)``
gives them a default where a comparison needs a value on every word.

A number where a query is expected is ``const(c)``: ``avg(cur) > 3``,
``fill_with(last(cur), -1)``, ``combine(sum(cur), 2, *)`` (``-2.5``, ``inf``,
``-inf`` and ``nan`` too). ``max``/``min`` name the running forms only when called
with a term (``max(cur)``); in an operation position they are operations, inside
``aggregate`` window functions.

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
``var(t)``     n, k, m, q (0, 0, 0, 0)        n + 1, k₁ = if(n == 0, t, k),         q / n
                                              m + e / (n + 1),
                                              q + e · e · n / (n + 1)
                                              with e = (t − k₁) − m
``std(t)``     as var                         as var                                sqrt(q / n)
``first(t)``   f, n (0, 0)                    if(n == 0, t, f), n + 1               f
``last(t)``    v (0)                          t                                     v
=============  =============================  ====================================  ==========

``median(t)``, ``quantile(t, p)`` and ``distinct(t)`` are not folds: they need the
window's values, which the window store keeps (issue 23; :attr:`ast.Aggregate.stored`).

``var`` is the *population* variance (divided by n, as ``numpy.var``), computed by
Welford's update on the values shifted by the first one, k: n counts, m is the
mean of t − k and q the sum of squared deviations from it. Both steps are for
accuracy. The textbook E[t²] − E[t]² cancels catastrophically (values near
1e8–1e9 with a spread of a few tenths gave variances of 6 and −128, and NaN
standard deviations); Welford's update has an error
bound of about n·ε·√(var·(var + mean²)) (Chan, Golub and LeVeque 1983), the mean
being that of the values it sees — so shifting by k, which is one of the values
(and t − k is exact when t is within a factor 2 of k), makes the error relative
to the spread of the data rather than to their magnitude. The updates are
simultaneous (each reads the registers before the event), so k₁ and e are
written out in each term.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from dt.terms import Apply, Const, Cur, Term, Var
from dt.windows import Fold

from . import ast

__all__ = [
    "MAX_WINDOW",
    "OVER_FORMS",
    "SUGAR_FORMS",
    "any_event",
    "any_word",
    "avg",
    "avg_last",
    "const",
    "count",
    "count_over",
    "is_tag",
    "last",
    "quantile_over",
    "running",
    "running_max",
    "running_min",
    "std",
    "stored_last_k",
    "sum_of",
    "top_over",
    "user_over",
    "var",
    "variance_fold",
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


def running_max(t: Term) -> ast.Query:
    """``max(t)``: the largest t so far (-inf on the empty word, the identity of max)."""
    return ast.Iter(any_event(t), -math.inf, ast.BuiltinOp("max"))


def running_min(t: Term) -> ast.Query:
    """``min(t)``: the smallest t so far (inf on the empty word, the identity of min)."""
    return ast.Iter(any_event(t), math.inf, ast.BuiltinOp("min"))


def variance_fold(t: Term, *, sqrt: bool = False) -> Fold:
    """The fold of the population variance of t (its square root if ``sqrt``): Welford's
    update on t − k, k the first value (module docstring)."""
    n, k, m, q = _v("n"), _v("k"), _v("m"), _v("q")
    first = Apply("if", (Apply("eq", (n, Const(0.0))), t, k))
    e = Apply("sub", (Apply("sub", (t, first)), m))
    n1 = Apply("add", (n, Const(1.0)))
    squares = _div(Apply("mul", (Apply("mul", (e, e)), n)), n1)
    out = _div(q, n)
    return Fold(("n", "k", "m", "q"), (0.0, 0.0, 0.0, 0.0),
                (n1, first, Apply("add", (m, _div(e, n1))), Apply("add", (q, squares))),
                Apply("sqrt", (out,)) if sqrt else out)


def running(fold: Fold) -> ast.RunningFold:
    """The running fold (a base query over every event so far) of a fold."""
    return ast.RunningFold(fold.registers, fold.init, fold.update, fold.output)


def var(t: Term) -> ast.Query:
    """``var(t)``: the population variance of t so far (NaN on the empty word)."""
    return running(variance_fold(t))


def std(t: Term) -> ast.Query:
    """``std(t)``: the population standard deviation of t so far (NaN on the empty word)."""
    return running(variance_fold(t, sqrt=True))


def last(t: Term) -> ast.Query:
    """``last(t)``: t at the last event (undefined on the empty word)."""
    return ast.Split(any_word(), any_event(t), _SND)


MAX_WINDOW = 100
"""The largest k that ``window``/``avg_last`` expand: the expansion nests k splits, and
every stage after parsing walks the query recursively (the parser bounds text nesting the
same way, :data:`qre.language.parser.MAX_DEPTH`). Beyond it, ``avg_last`` and ``window``
with op + min max are computed by the window store (:func:`stored_last_k`): top-level
queries, ⊥ before the k-th event as the expansion is, with the sum exact (rounded once)
where the expansion adds left to right."""


_STORED_OPS = {"+": "sum", "min": "min", "max": "max"}
"""The operations whose ``window(k, t, op)`` beyond :data:`MAX_WINDOW` the window store
computes (:func:`stored_last_k`)."""


def stored_last_k(k: int, t: Term, function: str) -> ast.WindowSignal:
    """The last k events' ``function`` of t computed by the window store, ⊥ before the
    k-th event: ``window(k, t, op)`` and ``avg_last(k, t)`` beyond :data:`MAX_WINDOW`
    (issue 23), a top-level query."""
    return ast.WindowSignal(function, ast.WindowSize(int(k), events=True), t, partial=True)


def _checked_k(k: int) -> None:
    if k < 1 or int(k) != k:
        raise ValueError(f"the number of events must be a positive integer, not {k}")


def _last_k(k: int, t: Term, op: ast.Op) -> ast.Query:
    _checked_k(k)
    if k > MAX_WINDOW:
        raise ValueError(f"window(k, t, op) of more than {MAX_WINDOW} events takes op +, min "
                         f"or max (the window store computes those; got {int(k)} events): "
                         f"the expansion of another op nests one split per event")
    block: ast.Query = any_event(t)
    for _ in range(int(k) - 1):
        block = ast.Split(block, any_event(t), op)
    return block


def is_tag(tag: str) -> ast.Query:
    """``is(σ)``: 1 if the last event has tag σ, else 0 (0 on the empty word) — the
    proposition "σ now" that past operators read (``once[0s, 10min](is(fail))``)."""
    ends_with = ast.Split(any_word(), ast.Atom(tag, Const(1.0)), _SND)
    return ast.Compare(">", ast.FillWith(ends_with, const(0.0)), const(0.0))


def window(k: int, t: Term, op: ast.Op) -> ast.Query:
    """``window(k, t, op)``: op folded over t on the last k events (defined from k events);
    beyond :data:`MAX_WINDOW` events, for op + min max, :func:`stored_last_k`."""
    _checked_k(k)
    if k > MAX_WINDOW and isinstance(op, ast.BuiltinOp) and op.symbol in _STORED_OPS:
        return stored_last_k(k, t, _STORED_OPS[op.symbol])
    return ast.Split(any_word(), _last_k(k, t, op), _SND)


def avg_last(k: int, t: Term) -> ast.Query:
    """``avg_last(k, t)``: the mean of t over the last k events (defined from k events);
    beyond :data:`MAX_WINDOW` events, :func:`stored_last_k`."""
    _checked_k(k)
    if k > MAX_WINDOW:
        return stored_last_k(k, t, "avg")
    lam = ast.Lambda(("_w", "s"), _div(_v("s"), Const(float(k))))
    return ast.Split(any_word(), _last_k(k, t, _PLUS), lam)


def _over(function: str) -> Callable[..., ast.WindowSignal]:
    """The form ``function_over(size, t)``: :class:`ast.WindowSignal` (issue 23)."""
    def form(size: ast.WindowSize, t: Term) -> ast.WindowSignal:
        return ast.WindowSignal(function, size, t)

    form.__name__ = form.__qualname__ = f"{function}_over"
    form.__doc__ = (f"``{function}_over(size, t)``: the {function} of t over the sliding "
                    f"window of ``size`` ending at each event.")
    return form


def count_over(size: ast.WindowSize) -> ast.WindowSignal:
    """``count_over(size)``: the number of events in the sliding window of ``size``."""
    return ast.WindowSignal("count", size)


def quantile_over(size: ast.WindowSize, t: Term, p: float) -> ast.WindowSignal:
    """``quantile_over(size, t, p)``: the p-quantile of t over the sliding window of
    ``size`` (numpy's linear method)."""
    return ast.WindowSignal("quantile", size, t, float(p))


def user_over(user: ast.UserFunction) -> Callable[..., ast.WindowSignal]:
    """``NAME_over(size, t)`` of a window function given in Python."""
    def form(size: ast.WindowSize, t: Term) -> ast.WindowSignal:
        return ast.WindowSignal(user.name, size, t, user=user)

    form.__doc__ = f"``{user.name}_over(size, t)``: {user.name} of t's values in the window."
    return form


def top_over(size: ast.WindowSize, t: Term, k: int) -> ast.WindowSignal:
    """``top_over(size, t, k)``: the k-th greatest value of t over the sliding window of
    ``size`` (k = 1: the max; NaN with fewer than k values)."""
    return ast.WindowSignal("top", size, t, float(k))


OVER_FORMS: dict[str, Callable[..., ast.WindowSignal]] = {
    "count_over": count_over,
    **{f"{f}_over": _over(f) for f in ast.WINDOW_SIGNALS
       if f not in ("count", "quantile", "top")},
    "quantile_over": quantile_over,
    "top_over": top_over,
}
"""The sliding-window signals (issue 23), by text name."""

SUGAR_FORMS = {
    "any": any_event,
    "any_word": any_word,
    "const": const,
    "count": count,
    "sum": sum_of,
    "avg": avg,
    "max": running_max,
    "min": running_min,
    "var": var,
    "std": std,
    "last": last,
    "is": is_tag,
    "window": window,
    "avg_last": avg_last,
    **OVER_FORMS,
}
"""Text name → the function building its expansion."""


def _fold(registers: str, init: tuple[float, ...], update: tuple[Term, ...],
          output: Term) -> Fold:
    return Fold(tuple(registers.split()), init, update, output)


def window_fold(fn: ast.WindowFunction | ast.FoldBody) -> Fold:
    """The fold of a window function (table in the module docstring) or of a running
    fold."""
    if isinstance(fn, ast.FoldBody):
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
        "var": lambda: variance_fold(t),
        "std": lambda: variance_fold(t, sqrt=True),
        "first": lambda: _fold("f n", (0.0, 0.0),
                               (Apply("if", (Apply("eq", (n, Const(0.0))), t, _v("f"))),
                                plus(n, one)), _v("f")),
        "last": lambda: _fold("v", (0.0,), (t,), _v("v")),
    }
    return folds[fn.name]()
