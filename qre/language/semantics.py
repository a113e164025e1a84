"""The denotational meaning of QRE-Past queries: the oracle of the language.

Seed 003, §5.3.2 describes each construct by its meaning on a data word and
then by a DT construction. This module implements the *meaning only*, straight
from the AST (:mod:`qre.language.ast`), following the contract of every construct
written in the project brief (``semantics.md``); it never builds a DT, so the
compiler (:mod:`qre.language.compiler`) can be tested against it.

A query maps every data word ``w`` (a list of ``(tag, value)``, the value a
float or a record of named floats) to an extended value ``D̄ = ⊥ | float | ⊤``
(:mod:`dt.values`). Two rules from §5.1 are used everywhere:

* every operation is *lifted* (:func:`dt.values.lift`): ⊥ if an argument is ⊥,
  else ⊤ if an argument is ⊤, else the operation on the floats;
* ``⊔`` (:func:`dt.values.union`) is a *multiset* union seen through its size:
  ``d ⊔ d = ⊤`` even for equal floats. Two different parses (splits,
  factorizations) that give the same value still meet in ⊤, so nothing below
  ever deduplicates by value.

The meaning of every construct (``w[:j]`` is the prefix of length j; inside
a subword ``w[i:j]`` the prefixes are ``w[i:k]`` for ``i ≤ k ≤ j``):

=================  =========================================================
atom(σ, t)         ``t[cur := d]`` if ``w = [(σ, d)]``, else ⊥
eps(t)             ``t`` if ``w = ε``, else ⊥
or(α1, α2)         ``α1(w) ⊔ α2(w)``
split(α1, α2, op)  ``⊔`` over the ``|w|+1`` splits ``w = u·v`` of ``op(α1(u), α2(v))``
iter(α, init, op)  see :func:`_iter` (fold over factorizations, plus the ε-rule)
combine(α…, op)    ``op(α1(w), …, αk(w))``
prefix_sum         ``s(|w|)``, ``s(-1) = init``, ``s(j) = op(s(j-1), α(w[:j]))``
fold(…)            ``out(r(|w|))``, ``r(0) = init``, ``r(j) = update(r(j-1), w[j-1])``
fill(α)            ``α(w[:j])`` for the largest ``j`` with a defined value; ⊥ if none
fill_with(α1, α2)  ``α1(w)`` if defined, else ``α2(w)``
β1 + - * / β2      ``op(β1(w), β2(w))``: signals (issue 21), any kind of side
f(β1, …)           ``f(β1(w), …)``: a TERM function of signals (issue 21)
β1 comp β2         ``comp(β1(w), β2(w))`` as 1.0/0.0, lifted (a partial side: ⊥ there)
&& || -> <-> !     on truth values, ``d ≠ 0`` (NaN included) is true; 1.0/0.0
prev(φ)            ``φ(w[:-1])`` if ``w ≠ ε``, else 0
hist, once, since  the past-time operators on finite traces, see :func:`_scan`
op[lo, hi]         the same over the events at a distance in [lo, hi] back,
                   ε excluded (issue 21 §2), see :func:`_bounded_past`
NAME_over(size, t) the aggregate of t over the events of the window ending now
                   (issue 23), recomputed from the word: :func:`_window_signal`
=================  =========================================================

Booleans from partial signals (issue 21): a comparison is lifted like every
operation, so a side that is ⊥ (⊤) makes it ⊥ (⊤); the typing admits such a
comparison only at the top level or in arithmetic, so the connectives and past
operators here only ever read 0/1 values on their operands — the paper's meaning —
and no third truth value is defined.

Evaluation memoizes ``α(w[i:j])`` per subquery node (by identity) and per
``(i, j)`` within one call, so split, combine and the prefix operators cost a
polynomial number of steps; iter enumerates factorizations with memoization on
(position, accumulator) and is exponential only in the number of distinct
accumulators, which is fine for the short words an oracle is run on.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from dt.terms import OPS, Const, EventValue, Var, evaluate_term
from dt.values import BOT, TOP, XValue, is_defined, lift, union
from dt.window_aggregates import aggregate_values
from dt.windows import TICK

from .ast import (
    ANY_TAG,
    ARITHMETIC,
    BUILTIN_OPS,
    COMPARISONS,
    Arith,
    Atom,
    BoolOp,
    BoundedPast,
    BuiltinOp,
    Combine,
    Compare,
    Eps,
    Fill,
    FillWith,
    Hist,
    Iter,
    Lambda,
    Name,
    Not,
    Once,
    Op,
    Or,
    PastBound,
    PrefixSum,
    Prev,
    Program,
    Query,
    RunningFold,
    SignalFunction,
    Since,
    Split,
    WindowSignal,
)
from .errors import QreTypeError
from .event_data import PLAIN_FIELD
from .patterns import CLOCK_FIELD, duration_field

__all__ = ["Word", "apply_op", "meaning", "prefix_meanings", "resolve", "run_program"]

Word = Sequence[tuple[str, EventValue]]
"""A data word: ``(tag, value)`` events, the value a float or a record of named floats."""


# --------------------------------------------------------------------------- public API


def meaning(query: Query, word: Word, env: Mapping[str, Query] | None = None) -> XValue:
    """The value of ``query`` on the whole data word ``word`` (§5.3.2).

    ``env`` maps let-names to queries for :class:`~qre.language.ast.Name` nodes (the
    bound queries may use each other, but not circularly).

    >>> from dt.terms import Cur
    >>> meaning(Iter(Atom("a", Cur()), 0.0, BuiltinOp("+")), [("a", 1.0), ("a", 2.0)])
    3.0
    """
    return _Evaluator(word).value(resolve(query, env), 0, len(word))


def prefix_meanings(query: Query, word: Word,
                    env: Mapping[str, Query] | None = None) -> list[XValue]:
    """``[query(w[:0]), query(w[:1]), …, query(w)]``: the output after every prefix."""
    resolved = resolve(query, env)
    ev = _Evaluator(word)  # one evaluator: the prefixes share every memoized subword
    return [ev.value(resolved, 0, j) for j in range(len(word) + 1)]


def run_program(program: Program, word: Word) -> list[XValue]:
    """The output of a whole program after every prefix ``w[:0], …, w[:n]`` (n+1 values).

    The ``let`` bindings are resolved in order: each may use the earlier ones
    only (a later ``let`` of the same name shadows an earlier one from there
    on). The alphabet declaration does not change the meaning (an event
    whose tag no atom mentions simply matches no atom), so it is not checked.
    """
    scope: dict[str, Query] = {}
    for let in program.lets:
        # Each binding sees exactly the bindings before it, already Name-free.
        scope[let.name] = resolve(let.query, scope, closed=True)
    return prefix_meanings(resolve(program.query, scope, closed=True), word)


def apply_op(op: Op, args: Sequence[XValue]) -> XValue:
    """An operation of a query (``+``, ``min``, …, or a lambda) applied, lifted, to values.

    A :class:`~qre.language.ast.BuiltinOp` is its :data:`dt.terms.OPS` entry; a
    :class:`~qre.language.ast.Lambda` evaluates its body with each parameter bound to
    its argument.
    """
    if len(args) != op.arity:
        raise QreTypeError(f"the operation takes {op.arity} argument(s), got {len(args)}",
                           span=op.span)
    if isinstance(op, BuiltinOp):
        return lift(OPS[BUILTIN_OPS[op.symbol]].fn, args)
    assert isinstance(op, Lambda)
    params = [Var(p) for p in op.params]
    return lift(lambda *xs: evaluate_term(op.body, dict(zip(params, xs, strict=True))), args)


def resolve(query: Query, env: Mapping[str, Query] | None = None, *,
            closed: bool = False) -> Query:
    """``query`` with every :class:`~qre.language.ast.Name` replaced by its bound query.

    Names inside ``env``'s queries are resolved through ``env`` too (unless
    ``closed``: then ``env``'s queries are taken as already Name-free); a
    circular binding or an unknown name is a :class:`~qre.language.errors.QreTypeError`.
    Every occurrence of a name becomes the *same* node object, so the
    evaluator's memo (keyed by node identity) shares its values.
    """
    env = env or {}
    done: dict[str, Query] = {}
    active: list[str] = []
    rebuilt: dict[int, Query] = {}

    def name(node: Name) -> Query:
        if node.name in done:
            return done[node.name]
        if node.name not in env:
            raise QreTypeError(f"unknown name {node.name!r}", span=node.span)
        if closed:
            done[node.name] = env[node.name]
            return env[node.name]
        if node.name in active:
            cycle = " -> ".join([*active[active.index(node.name):], node.name])
            raise QreTypeError(f"circular let bindings: {cycle}", span=node.span)
        active.append(node.name)
        done[node.name] = walk(env[node.name])
        active.pop()
        return done[node.name]

    def walk(node: Query) -> Query:
        if isinstance(node, Name):
            return name(node)
        key = id(node)
        if key not in rebuilt:
            changes = {}
            for f in dataclasses.fields(node):
                old = getattr(node, f.name)
                new = _map_children(old, walk)
                if new is not old:
                    changes[f.name] = new
            # Unchanged subtrees keep their identity (and so their memo entries).
            rebuilt[key] = dataclasses.replace(node, **changes) if changes else node
        return rebuilt[key]

    return walk(query)


def _map_children(value: object, fn: Callable[[Query], Query]) -> object:
    """Apply ``fn`` to a field that holds a query or a tuple of queries; other fields stay."""
    if isinstance(value, Query):
        return fn(value)
    if isinstance(value, tuple) and value and all(isinstance(v, Query) for v in value):
        new = tuple(fn(v) for v in value)
        return value if all(a is b for a, b in zip(new, value, strict=True)) else new
    return value


# --------------------------------------------------------------------------- the evaluator


def _truth(d: float) -> bool:
    """Truth of a defined value: anything but 0 is true, NaN included (§5.3.1)."""
    return d != 0


def _bool(b: bool) -> float:
    return 1.0 if b else 0.0


_CONNECTIVES: dict[str, Callable[[float, float], float]] = {
    "&&": lambda a, b: _bool(_truth(a) and _truth(b)),
    "||": lambda a, b: _bool(_truth(a) or _truth(b)),
    "->": lambda a, b: _bool(not _truth(a) or _truth(b)),
    "<->": lambda a, b: _bool(_truth(a) == _truth(b)),
}


def _key(x: XValue) -> object:
    """A dict key for an extended value that tells -0.0 from 0.0 and finds NaN again."""
    return x.hex() if isinstance(x, float) else x


class _Evaluator:
    """Values of Name-free queries on the subwords ``w[i:j]`` of one word, memoized.

    ``value(q, i, j)`` is the meaning of ``q`` on ``w[i:j]``. Queries are
    functions of the word alone, so ``(id(q), i, j)`` identifies a value; the
    memo lives as long as the evaluator (one call of the public API), during
    which the query tree keeps every node alive, so ids are not reused.
    """

    def __init__(self, word: Word) -> None:
        self.word = word
        self.memo: dict[tuple[int, int, int], XValue] = {}

    def value(self, q: Query, i: int, j: int) -> XValue:
        key = (id(q), i, j)
        got = self.memo.get(key)
        if got is None:
            rule = _RULES.get(type(q))
            if rule is None:
                raise TypeError(f"not a query node: {q!r}")
            got = rule(self, q, i, j)
            self.memo[key] = got
        return got


def _data(event: EventValue) -> EventValue:
    """The event's data as terms read it: a record that carries one number as the field
    :data:`PLAIN_FIELD` beside its time fields (a timed word for a query with a time
    window over plain cur, issue 23) is that number."""
    if isinstance(event, Mapping) and PLAIN_FIELD in event:
        return event[PLAIN_FIELD]
    return event


def _atom(ev: _Evaluator, q: Atom, i: int, j: int) -> XValue:
    """atom(σ, t)(w) = t[cur := d] if w = [(σ, d)], else ⊥; σ = _ matches any tag."""
    if j - i != 1:
        return BOT
    tag, data = ev.word[i]
    return evaluate_term(q.term, {}, _data(data)) if q.tag in (tag, ANY_TAG) else BOT


def _eps(ev: _Evaluator, q: Eps, i: int, j: int) -> XValue:
    """eps(t)(w) = t if w = ε, else ⊥ (t is constant: it is evaluated without cur)."""
    if i != j:
        return BOT
    return evaluate_term(q.term, {})


def _or(ev: _Evaluator, q: Or, i: int, j: int) -> XValue:
    """or(α1, α2)(w) = α1(w) ⊔ α2(w): ⊤ if both match, even with equal values."""
    return union(ev.value(q.left, i, j), ev.value(q.right, i, j))


def _split(ev: _Evaluator, q: Split, i: int, j: int) -> XValue:
    """split(α1, α2, op)(w) = ⊔ over the |w|+1 splits w = u·v of op(α1(u), α2(v)).

    A split whose left part is ⊥ contributes ⊥ whatever the right part is (the
    lifted op), so the right part is not evaluated there.
    """
    total: XValue = BOT
    for k in range(i, j + 1):
        left = ev.value(q.left, i, k)
        if left is BOT:
            continue
        total = union(total, apply_op(q.op, (left, ev.value(q.right, k, j))))
        if total is TOP:
            break  # ⊤ absorbs every further union
    return total


def _iter(ev: _Evaluator, q: Iter, i: int, j: int) -> XValue:
    """iter(α, init, op)(w): the fold of op over α's pieces, ⊔ over all factorizations.

    ``U(w) = ⊔`` over the factorizations ``w = w1…wk`` into *non-empty* pieces
    of ``op(…op(op(init, α(w1)), α(w2))…, α(wk))``; the only factorization of
    ε is the one with k = 0, whose value is ``init``.

    The ε-rule. If α matches the empty word (``α(ε) ≠ ⊥``), pieces equal to
    ε could be inserted anywhere, and each insertion gives another parse: a
    parse of value ``v ≠ ⊥`` yields ``op(v, α(ε)) ≠ ⊥`` and so on without end,
    infinitely many non-⊥ parses, so the multiset union is ⊤. A parse of value
    ⊥ stays ⊥ whatever is inserted (lifted ops never leave ⊥). Hence
    ``iter(w) = ⊤`` if ``α(ε) ≠ ⊥`` and ``U(w) ≠ ⊥``, else ``U(w)``; in
    particular ``iter(ε) = ⊤`` when α matches ε (``U(ε) = init`` is defined).

    ``U`` is computed by ``rest(s, acc)``: ⊔ over the factorizations of
    ``w[s:j]`` of the fold started from ``acc``, memoized on ``(s, acc)``.
    Memoizing on the accumulator is sound because the remaining fold depends
    on nothing else; it merges no parses, since ``rest`` returns the union
    over *all* factorizations of the remaining word and the caller unions it
    once per piece it tried. A ⊥ piece ends its parse (its fold stays ⊥).
    """
    memo: dict[tuple[int, object], XValue] = {}

    def rest(s: int, acc: XValue) -> XValue:
        if s == j:
            return acc
        key = (s, _key(acc))
        if key in memo:
            return memo[key]
        total: XValue = BOT
        for k in range(s + 1, j + 1):
            piece = ev.value(q.body, s, k)
            if piece is BOT:
                continue
            total = union(total, rest(k, apply_op(q.op, (acc, piece))))
            if total is TOP:
                break
        memo[key] = total
        return total

    folded = rest(i, q.init)
    if folded is not BOT and ev.value(q.body, i, i) is not BOT:
        return TOP
    return folded


def _combine(ev: _Evaluator, q: Combine, i: int, j: int) -> XValue:
    """combine(α1, …, αk, op)(w) = op(α1(w), …, αk(w)), lifted."""
    args = []
    for arg in q.args:
        v = ev.value(arg, i, j)
        if v is BOT:
            return BOT  # lifted: ⊥ whatever the others are
        args.append(v)
    return apply_op(q.op, args)


def _scan(ev: _Evaluator, q: Query, i: int, j: int, start: XValue,
          step: Callable[[XValue, int], XValue]) -> XValue:
    """``S(j)`` for a fold over prefixes: ``S(i-1) = start``, ``S(k) = step(S(k-1), k)``.

    ``k`` is the end of the prefix ``w[i:k]`` of the subword ``w[i:j]``; every
    ``S(k)`` is stored in the memo as the value of ``q`` on ``w[i:k]``, so the
    outputs after successive prefixes cost one step each.
    """
    k = j
    while k >= i and (id(q), i, k) not in ev.memo:
        k -= 1
    acc = ev.memo[(id(q), i, k)] if k >= i else start
    for m in range(k + 1, j + 1):
        acc = step(acc, m)
        ev.memo[(id(q), i, m)] = acc
    return acc


def _prefix_sum(ev: _Evaluator, q: PrefixSum, i: int, j: int) -> XValue:
    """prefix_sum(α, init, op)(w) = s(|w|), s(-1) = init, s(j) = op(s(j-1), α(w[:j]))."""
    return _scan(ev, q, i, j, q.init,
                 lambda acc, k: apply_op(q.op, (acc, ev.value(q.body, i, k))))


def _running_fold(ev: _Evaluator, q: RunningFold, i: int, j: int) -> XValue:
    """fold(init, update, out)(w) = out(r) after r := init, then for each event of w in
    order, every register at once to its update (each reads the registers *before* the
    event, and cur). Defined on every word: ``out(init)`` on ε."""
    registers = [Var(r) for r in q.registers]
    env = dict(zip(registers, q.init, strict=True))
    for _tag, data in ev.word[i:j]:
        new = [evaluate_term(u, env, _data(data)) for u in q.update]
        env = dict(zip(registers, new, strict=True))
    return evaluate_term(q.output, env)


def _fill(ev: _Evaluator, q: Fill, i: int, j: int) -> XValue:
    """fill(α)(w) = α(w[:k]) for the largest k ≤ |w| where it is defined; ⊥ if none."""
    for k in range(j, i - 1, -1):
        v = ev.value(q.body, i, k)
        if is_defined(v):
            return v
    return BOT


def _fill_with(ev: _Evaluator, q: FillWith, i: int, j: int) -> XValue:
    """fill_with(α1, α2)(w) = α1(w) if it is defined (a float), else α2(w)."""
    v = ev.value(q.body, i, j)
    return v if is_defined(v) else ev.value(q.default, i, j)


def _arith(ev: _Evaluator, q: Arith, i: int, j: int) -> XValue:
    """β1 op β2 = op(β1(w), β2(w)), lifted: each side read on the same word."""
    return lift(OPS[ARITHMETIC[q.op]].fn, (ev.value(q.left, i, j), ev.value(q.right, i, j)))


def _signal_function(ev: _Evaluator, q: SignalFunction, i: int, j: int) -> XValue:
    """f(β1, …) = f(β1(w), …), lifted: each argument read on the same word."""
    return lift(OPS[q.name].fn, tuple(ev.value(a, i, j) for a in q.args))


def _compare(ev: _Evaluator, q: Compare, i: int, j: int) -> XValue:
    """β1 comp β2 = comp(β1(w), β2(w)) as 1.0/0.0, lifted (NaN compares false but !=)."""
    return lift(OPS[COMPARISONS[q.op]].fn, (ev.value(q.left, i, j), ev.value(q.right, i, j)))


def _boolop(ev: _Evaluator, q: BoolOp, i: int, j: int) -> XValue:
    """&&, ||, -> (¬a ∨ b), <-> (equal truth) on truth values d ≠ 0, lifted."""
    return lift(_CONNECTIVES[q.op], (ev.value(q.left, i, j), ev.value(q.right, i, j)))


def _not(ev: _Evaluator, q: Not, i: int, j: int) -> XValue:
    """!φ = 1 if φ(w) = 0 else 0 (NaN is true, so !NaN = 0), lifted."""
    return lift(lambda d: _bool(not _truth(d)), (ev.value(q.body, i, j),))


def _prev(ev: _Evaluator, q: Prev, i: int, j: int) -> XValue:
    """prev(φ)(w) = φ(w[:-1]) if w ≠ ε, else 0 (false initially)."""
    return ev.value(q.body, i, j - 1) if j > i else 0.0


# The past-time operators on finite traces, as folds over the prefixes (lifted
# recurrences of the brief; for operands that are 0/1 on every prefix they are
# exactly the ∀/∃ definitions: hist ∀ j ≤ |w|, once ∃ j ≤ |w|, since ∃ j with
# φ2 at j and φ1 at every i in (j, |w|], wsince additionally ∀ i ≤ |w| φ1).
_AND = _CONNECTIVES["&&"]
_ORR = _CONNECTIVES["||"]


def _hist(ev: _Evaluator, q: Hist, i: int, j: int) -> XValue:
    """hist(φ): H(k) = φ(k) ∧ H(k-1), H(-1) = true — φ held at every prefix, ε included."""
    return _scan(ev, q, i, j, 1.0,
                 lambda acc, k: lift(_AND, (ev.value(q.body, i, k), acc)))


def _once(ev: _Evaluator, q: Once, i: int, j: int) -> XValue:
    """once(φ): O(k) = φ(k) ∨ O(k-1), O(-1) = false — φ held at some prefix, ε included."""
    return _scan(ev, q, i, j, 0.0,
                 lambda acc, k: lift(_ORR, (ev.value(q.body, i, k), acc)))


def _since(ev: _Evaluator, q: Since, i: int, j: int) -> XValue:
    """φ1 since φ2: S(k) = φ2(k) ∨ (φ1(k) ∧ S(k-1)); S(-1) = false (strong), true (weak).

    Strong: some prefix satisfied φ2 and every later prefix φ1. Weak: that, or
    φ1 held at every prefix (the true start value carries through φ1's run).
    """
    def step(acc: XValue, k: int) -> XValue:
        held = lift(_AND, (ev.value(q.left, i, k), acc))
        return lift(_ORR, (ev.value(q.right, i, k), held))

    return _scan(ev, q, i, j, 0.0 if q.strong else 1.0, step)


def _bounded_past(ev: _Evaluator, q: BoundedPast, i: int, j: int) -> XValue:
    """Point-based past MTL, by brute force over the events e_k (k < j) of ``w[i:j]``:
    with n = j − 1 the current event and d(k) its distance back from e_n (event counts
    n − k, or times in δ as the field ``within_clock`` gives them), k counts if
    lo ≤ d(k) ≤ hi, i.e. A ≤ d(k) < B for the ends A, B in whole units (the duration
    fields ⌈lo/δ⌉ and ⌈(hi + 1 ns)/δ⌉ of the current event, :mod:`dt.metric`):

    * ``once``: some counted k has φ(w[i:k+1]); ``hist``: every counted k has it;
    * ``φ1 since φ2``: some counted k has φ2 there and φ1 at every m in (k, n];
    * ``prev``: k = n − 1 is counted and has φ.

    Only events count (ε has no time): on ε, hist is 1 and the others 0. The operands
    are 0/1 on every prefix (the typing's rule); were one not, the result is lifted
    over the values read."""
    if j == i:
        return 1.0 if q.op == "hist" else 0.0
    n = j - 1
    lo, hi = _ends(ev, q.bound, n)
    counted = [k for k in range(i, n + 1) if lo <= _distance(ev, q.bound, k, n) < hi]
    read = {(p, k): ev.value(p, i, k + 1) for p in q.operands for k in range(i, n + 1)}
    if not all(isinstance(v, float) for v in read.values()):
        return BOT if BOT in read.values() else TOP

    def holds(p: Query, k: int) -> bool:
        return _truth(read[p, k])

    if q.op == "prev":
        return _bool(n - 1 in counted and holds(q.operands[0], n - 1))
    if q.op == "hist":
        return _bool(all(holds(q.operands[0], k) for k in counted))
    if q.op == "once":
        return _bool(any(holds(q.operands[0], k) for k in counted))
    left, right = q.operands
    return _bool(any(holds(right, k) and all(holds(left, m) for m in range(k + 1, n + 1))
                     for k in counted))


def _ends(ev: _Evaluator, bound: PastBound, n: int) -> tuple[float, float]:
    """[A, B) of the bound in whole units, as the current event e_n gives them."""
    if bound.events:
        return float(bound.lo), math.inf if bound.hi is None else float(bound.hi + 1)
    record = ev.word[n][1]
    assert isinstance(record, Mapping), "a time bound reads the event time from a record"
    lo = record[duration_field(bound.lo)] if bound.lo else 0.0
    return lo, math.inf if bound.hi is None else record[duration_field(bound.hi + 1)]


def _distance(ev: _Evaluator, bound: PastBound, k: int, n: int) -> float:
    """How far back e_k is from e_n: events, or δ of the field ``within_clock``."""
    if bound.events:
        return float(n - k)
    now, then = ev.word[n][1], ev.word[k][1]
    assert isinstance(now, Mapping) and isinstance(then, Mapping)
    return now[CLOCK_FIELD] - then[CLOCK_FIELD]


def _window_signal(ev: _Evaluator, q: WindowSignal, i: int, j: int) -> XValue:
    """``NAME_over(size, t)`` by brute force (issue 23): the aggregate
    (:func:`dt.window_aggregates.aggregate_values`) of t over the events e_k of ``w[i:j]``
    that fall in the window ending at e_n (n = j − 1): the last ``size`` events
    (counting only events, not clock ticks), or those with t_n − t_k below the size in δ
    (the times as the field ``within_clock`` gives them, the size as its duration field
    ⌈size/δ⌉). Ticks never enter; on ε the window is empty. A partial window
    (``avg_last(k, t)`` beyond 100 events) is ⊥ until k events have entered."""
    arg = Const(0.0) if q.arg is None else q.arg
    entered = [k for k in range(i, j) if ev.word[k][0] != TICK]
    if j > i and q.size.events:
        entered = entered[max(0, len(entered) - q.size.amount):]
    elif j > i:
        now = ev.word[j - 1][1]
        assert isinstance(now, Mapping), "a time window reads the event time from a record"
        size = now[duration_field(q.size.amount)]
        entered = [k for k in entered
                   if now[CLOCK_FIELD] - ev.word[k][1][CLOCK_FIELD] < size]  # type: ignore[index]
    if q.partial and len(entered) < q.size.amount:
        return BOT  # avg_last(k, t) beyond 100 events: ⊥ before the k-th, as its expansion
    values = [evaluate_term(arg, {}, _data(ev.word[k][1])) for k in entered]
    if q.user is not None:  # a function given in Python: NaN on an empty window
        window = np.array(values, dtype=np.float64)
        window.flags.writeable = False  # as the window store gives it
        return q.user(window) if values else math.nan
    return aggregate_values(values, q.function, 0.5 if q.p is None else q.p)


def _name(ev: _Evaluator, q: Name, i: int, j: int) -> XValue:
    raise QreTypeError(f"unresolved name {q.name!r} (resolve the query first)", span=q.span)


_RULES: dict[type, Callable[[_Evaluator, Query, int, int], XValue]] = {
    Atom: _atom,
    Eps: _eps,
    Or: _or,
    Split: _split,
    Iter: _iter,
    Combine: _combine,
    PrefixSum: _prefix_sum,
    RunningFold: _running_fold,
    Fill: _fill,
    FillWith: _fill_with,
    Arith: _arith,
    SignalFunction: _signal_function,
    Compare: _compare,
    BoolOp: _boolop,
    Not: _not,
    Prev: _prev,
    Hist: _hist,
    Once: _once,
    Since: _since,
    BoundedPast: _bounded_past,
    WindowSignal: _window_signal,
    Name: _name,
}
