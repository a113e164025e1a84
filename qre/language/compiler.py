"""Compilation of QRE-Past to data transducers (seed 003, §5.3.2).

Pipeline position: typed AST → **DT**. Input: a query whose names are
resolved and which passed :mod:`qre.language.typing` (kinds, arities, rates). Output:
a DT with one initial and one final state; run it with any defined initial
value (the monitor uses 0.0).

Every quantitative base query α compiles to the pair (A_α, I_α) of §5.3.2:
A_α computes α's value, I_α is *equivalent* to it (same status on every word)
but returns its input — it is how ``split`` and ``iter`` save a value for
later. I_α stays linear in the query and A_α at most quadratic (Theorem 5.7).

=================  ==========================================================
α                  A_α                                      I_α
=================  ==========================================================
atom(σ, t)         atom(σ, t)  (σ = _: one per tag)         atom(σ, x)
eps(t)             eps(t)                                   eps(x)
or(α1, α2)         A1 ⊔ A2                                  I1 ⊔ I2
split(α1, α2, op)  (A1 · (I2 ∥ A2)) · G_op                  I1 · I2
iter(α, init, op)  G_init · ((I ∥ A) · G_op)*               I*
combine(αi, op)    (A1 ∥ … ∥ Ak) · G_op                     (I1 ∥ … ∥ Ik) · G_y1
prefix_sum(α,i,op) G_init,init · ⊕_Gop A                    G_x,x · ⊕_fst I
fold(...)          the fold DT (dt.windows.running_fold)    (atom(_, x))*
=================  ==========================================================

The paper gives I_combine with the A's; the I's are equivalent and keep I
linear. The paper does not spell out I_prefix_sum; ``⊕_fst I`` keeps the
input as long as α is defined, which is α's status. A running fold (beyond
Figure 26) is defined on every word, as ``count()`` is, so its I is count's.

Top-level and temporal queries (no I needed):

* fill_with(α1, α2) = combine(A1, A+, fst) ⊔ combine(A2, A−, fst) and
  fill(α1) = ⊕_G (combine(A1, A+, fst) ∥ A−), with A+ = [I1 ∈ D] and
  A− = [I1 = ⊥] ⊔ [I1 = ⊤] (the support constructions, padded with an unused
  initial state so they compose in parallel);
* comparisons and connectives: (A1 ∥ A2) · G_op;
* prev(φ) = (A_φ · I_Σ) ⊔ eps(0) — I_Σ matches one event of any tag; the
  epsilon part makes prev false on the empty word, as the semantics says;
* hist, once, since, wsince: prefix sums of ∧, ∨ and the since recurrence
  ``s := φ2 || (φ1 && s)`` from 1 (hist, wsince) or 0 (once, since);
* their metric-bounded forms (issue 21 §2): :func:`dt.metric.metric_past` and
  :func:`dt.metric.metric_prev` over the operands in parallel, reading the event
  time as ``within_clock`` and the bound's ends as duration fields in δ (as
  ``within`` does, :mod:`qre.language.patterns`), or counting the events.

Sharing and pruning (both exact: the same outputs after every prefix, status and
value, so Theorem 5.5's facts carry over):

* a query whose ``let`` names are substituted is a DAG (every use of a name is
  the same object); each object is compiled once (memoized), and the identical
  operands of one parallel composition — ``combine(x, x, op)``, ``x < x``,
  ``x && x`` — are one sub-DT whose output G reads twice: two copies would get
  the same input and the same events, so their configurations are equal at every
  step. Other repeated uses (``split(x, x, op)``, ``or(x, x)``) are separate
  sub-DTs, as §5.3.2 builds them: :func:`qre.language.typing.check` refuses a query
  whose expansion is too large before it gets here;
* with ``lean`` (the default, :data:`LEAN_STATES`), every intermediate DT with more
  states than that is run through :func:`codegen.optimize.optimize` as soon as it is
  built — before the next construction embeds (copies) it, and before a support
  DT (whose size is quadratic in its input's for a cyclic I, :mod:`dt.support`)
  is built from it. The optimizer is exact for every initial vector *and every
  restart* (Definition 5.4), which is all a component sees of its context: the
  constructions only write its initial states and read its final states.
  ``lean=None`` builds the constructions of §5.2 exactly as printed.

A sliding window (``avg_over(2d, cur)``, issue 23) is :func:`dt.windows.field_signal`:
the DT reads its value at each step as the field :func:`window_field` (k), which a
window store fills before the DT (:mod:`qre.runtime.window_fields`); ``compile_query``
lists the query's windows in :attr:`Compiled.windows` and makes the DT read plain
``cur`` as the field :data:`PLAIN_FIELD` (a DT reads cur or fields, not both).

A window aggregate that the window store computes (:attr:`ast.Aggregate.stored`: median,
quantile, distinct, a function given in Python, a window of events, or a window a DT
cannot hold) is a field read at the ticks only (at the events of its tags for a window
of events): the store gives each closing step its window's value and the runtime makes
the output ⊥ at the other steps and at empty windows.

A window aggregate (a whole query) is otherwise the direct construction of
:func:`dt.windows.window_aggregate` with the fold of its function
(:func:`qre.language.sugar.window_fold`, or :func:`qre.language.patterns.window_pattern` for
``matches(p)``); a pattern query is :func:`dt.windows.event_fold` of
:func:`qre.language.patterns.event_pattern`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from dt import constructions as c
from dt.functions import DataFunction, FunctionEntry
from dt.metric import MetricBound, metric_past, metric_prev, slots
from dt.model import DT
from dt.support import support
from dt.terms import Apply, Const, Cur, Term, Var
from dt.values import Status
from dt.window_aggregates import aggregate_values
from dt.windows import TICK, event_fold, field_signal, running_fold, window_aggregate

from . import ast
from .event_data import PLAIN_FIELD, window_field
from .patterns import CLOCK_FIELD, duration_field, event_pattern, window_pattern
from .sugar import window_fold

__all__ = ["LEAN_STATES", "Compiled", "Compiler", "compile_query", "window_empty"]

LEAN_STATES = 64
"""An intermediate DT with more states than this is optimized as soon as it is built
(``lean``): smaller DTs cost little to embed. The input of a support construction is
optimized whatever its size (its cycles broken first): the support's size is quadratic
in a cyclic input's, so even a 37-state identity DT became an 8,215-state support."""


@dataclass(frozen=True)
class Compiled:
    """A_α (value) and I_α (identity, equivalent to A_α); I is None above base level.
    ``windows``: a whole query's sliding windows (issue 23), the k-th read by its DT as
    the field :func:`window_field` (k)."""

    value: DT
    identity: DT | None = None
    windows: tuple[ast.WindowSignal | ast.Aggregate, ...] = ()


def compile_query(query: ast.Query, alphabet: Sequence[str], *,
                  lean: int | None = LEAN_STATES) -> Compiled:
    """Compile a resolved, well-typed query over ``alphabet`` (see module docstring).

    ``lean``: optimize every intermediate DT of more states than this (None: never).
    A query with sliding windows reads plain ``cur`` as the field :data:`PLAIN_FIELD`.
    """
    compiler = Compiler(tuple(alphabet), lean=lean)
    compiled = compiler.compile(query)
    if not compiler.windows:
        return compiled
    return Compiled(_plain_cur_as_field(compiled.value), None, tuple(compiler.windows))


def compile_queries(queries: Sequence[ast.Query], alphabet: Sequence[str], *,
                    lean: int | None = LEAN_STATES
                    ) -> tuple[list[DT], tuple[ast.WindowSignal | ast.Aggregate, ...]]:
    """The DTs (A_α) of several queries run side by side over ``alphabet`` (one monitor,
    one output each) and their sliding windows, numbered across all of them (a window two
    queries share is computed once); with windows every DT reads plain ``cur`` as the
    field :data:`PLAIN_FIELD`."""
    compiler = Compiler(tuple(alphabet), lean=lean)
    dts = [compiler.compile(q).value for q in queries]
    if compiler.windows:
        dts = [_plain_cur_as_field(d) for d in dts]
    return dts, tuple(compiler.windows)


def window_empty(q: ast.WindowSignal) -> float:
    """A sliding window's value on an empty window (and on the empty word): NaN for a
    function given in Python."""
    if q.user is not None:
        return math.nan
    return aggregate_values((), q.function, 0.5 if q.p is None else q.p)


def _plain_cur_as_field(dt: DT) -> DT:
    """``dt`` with every read of plain ``cur`` made a read of :data:`PLAIN_FIELD`."""
    def term(t: Term) -> Term:
        if isinstance(t, Cur):
            return Cur(PLAIN_FIELD) if t.field is None else t
        if isinstance(t, Apply):
            return Apply(t.op, tuple(term(a) for a in t.args))
        return t

    if not dt.reads_scalar_cur:
        return dt
    moved = tuple(replace(tr, term=term(tr.term)) for tr in dt.transitions)
    return DT(dt.alphabet, dt.states, dt.initial, dt.final, moved, dt.facts)


def _g(inputs: Sequence[str], term: Term | float) -> DataFunction:
    """A one-output data function ``y := term`` strict in all inputs."""
    t = Const(float(term)) if isinstance(term, int | float) else term
    return DataFunction.of(inputs, {"y": t})


def _op_function(op: ast.Op, slots: Sequence[int]) -> DataFunction:
    """G_op: ``y := op(y_s1, …, y_sk)`` over inputs y1…ym, operand j read from input
    ``slots[j]`` + 1 (``range(k)`` for k distinct operands; a shared operand's slot repeats)."""
    names = [f"y{k + 1}" for k in range(max(slots) + 1)]
    return _g(names, op.term(tuple(Var(names[k]) for k in slots)))


def _constants(*values: float) -> DataFunction:
    """G_{v1,…,vk}: one input x, outputs the constants (each strict in x)."""
    return DataFunction.of(["x"], [(f"c{k}", Const(float(v))) for k, v in enumerate(values)])


_FST = _g(["y1", "y2"], Var("y1"))


def _truth(v: Term) -> Term:
    return Apply("ne", (v, Const(0.0)))


_CONNECTIVE_TERMS = {
    "&&": Apply("and", (Var("y1"), Var("y2"))),
    "||": Apply("or", (Var("y1"), Var("y2"))),
    "->": Apply("or", (Apply("not", (Var("y1"),)), Var("y2"))),
    "<->": Apply("eq", (_truth(Var("y1")), _truth(Var("y2")))),
}


class Compiler:
    """Compiles queries over one alphabet; a query object is compiled once (a DAG of
    substituted lets, or the operands that typing compiles again, cost nothing twice)."""

    def __init__(self, alphabet: tuple[str, ...], *, lean: int | None = LEAN_STATES) -> None:
        self.alphabet = alphabet
        self.lean_states = lean
        self._done: dict[int, tuple[ast.Query, Compiled]] = {}
        self.windows: list[ast.WindowSignal | ast.Aggregate] = []
        """The sliding windows met so far, distinct by value: the k-th is field k."""

    def compile(self, q: ast.Query) -> Compiled:
        """(A_α, I_α) of ``q``, or (A_β, None) above base level."""
        done = self._done.get(id(q))
        if done is not None:
            return done[1]
        method = getattr(self, f"_{type(q).__name__.lower()}", None)
        if method is None:
            raise TypeError(f"cannot compile {type(q).__name__}: resolve names first")
        compiled: Compiled = method(q)
        compiled = Compiled(self.lean(compiled.value),
                            None if compiled.identity is None else self.lean(compiled.identity))
        self._done[id(q)] = (q, compiled)  # q is kept so that its id stays its own
        return compiled

    def lean(self, dt: DT) -> DT:
        """``dt`` optimized if it has more than ``lean`` states (exact, facts kept)."""
        if self.lean_states is None or len(dt.states) <= self.lean_states:
            return dt
        from codegen.optimize import optimize

        return optimize(dt)

    def acyclic(self, dt: DT) -> DT:
        """With ``lean``, ``dt`` with its cycles of copies broken, then optimized: the input
        of a support construction, whose size is quadratic in a cyclic DT's (§5.2.1)."""
        if self.lean_states is None:
            return dt
        from codegen.optimize import break_copy_cycles, optimize

        return optimize(break_copy_cycles(dt))

    def distinct(self, operands: Sequence[ast.Query],
                 part: Callable[[Compiled], DT]) -> tuple[list[DT], list[int]]:
        """``part`` of each distinct operand (by identity) and each operand's index in them.

        Identical operands of one parallel composition share one sub-DT: both copies
        would read the same input and the same events, so they would be equal.
        """
        firsts: list[ast.Query] = []
        slots = []
        for q in operands:
            k = next((j for j, seen in enumerate(firsts) if seen is q), len(firsts))
            if k == len(firsts):
                firsts.append(q)
            slots.append(k)
        return [part(self.compile(q)) for q in firsts], slots

    def value(self, q: ast.Query) -> DT:
        return self.compile(q).value

    def identity(self, q: ast.Query) -> DT:
        ident = self.compile(q).identity
        if ident is None:
            raise TypeError(f"{type(q).__name__} is not a base query (it has no I)")
        return ident

    # ------------------------------------------------------------------ base queries α

    def _atom(self, q: ast.Atom) -> Compiled:
        tags = self.alphabet if q.tag == ast.ANY_TAG else q.tag
        return Compiled(c.atom(self.alphabet, tags, q.term),
                        c.identity_atom(self.alphabet, tags))

    def _eps(self, q: ast.Eps) -> Compiled:
        return Compiled(c.epsilon(self.alphabet, q.term), c.identity_epsilon(self.alphabet))

    def _or(self, q: ast.Or) -> Compiled:
        left, right = self.compile(q.left), self.compile(q.right)
        return Compiled(c.union(left.value, right.value),
                        c.union(_id(left), _id(right)))

    def _split(self, q: ast.Split) -> Compiled:
        left, right = self.compile(q.left), self.compile(q.right)
        saved = c.parallel(_id(right), right.value, same_rate=True)
        value = c.concat(c.concat(left.value, saved), _op_function(q.op, (0, 1)))
        return Compiled(value, c.concat(_id(left), _id(right)))

    def _iter(self, q: ast.Iter) -> Compiled:
        body = self.compile(q.body)
        step = c.concat(c.parallel(_id(body), body.value, same_rate=True),
                        _op_function(q.op, (0, 1)))
        value = c.concat(_constants(q.init), c.iterate(step))
        return Compiled(value, c.iterate(_id(body)))

    def _combine(self, q: ast.Combine) -> Compiled:
        values, slots = self.distinct(q.args, lambda p: p.value)
        value = c.concat(c.parallel(*values, same_rate=True), _op_function(q.op, slots))
        identities, _ = self.distinct(q.args, _id)
        names = [f"y{j + 1}" for j in range(len(identities))]
        identity = c.concat(c.parallel(*identities, same_rate=True), _g(names, Var("y1")))
        return Compiled(value, identity)

    def _prefixsum(self, q: ast.PrefixSum) -> Compiled:
        body = self.compile(q.body)
        fold = DataFunction.of(["acc", "z"], {"acc": q.op.term((Var("acc"), Var("z")))})
        value = c.concat(_constants(q.init, q.init), c.prefix_sum(body.value, fold, total=True))
        keep = DataFunction.of(["acc", "z"], {"acc": Var("acc")})
        copies = DataFunction.of(["x"], [("x1", Var("x")), ("x2", Var("x"))])
        identity = c.concat(copies, c.prefix_sum(_id(body), keep, total=True))
        return Compiled(value, identity)

    def _runningfold(self, q: ast.RunningFold) -> Compiled:
        # I_α: any word returns its input, as I of count() (iter of one event of any tag).
        identity = c.iterate(c.identity_atom(self.alphabet, self.alphabet))
        return Compiled(running_fold(self.alphabet, window_fold(q)), identity)

    # ------------------------------------------------------------------ top level β

    def _defined_and_not(self, q: ast.Query) -> tuple[DT, DT, DT]:
        """(A_α, A+, A−) for the fill constructions, supports padded to one input."""
        body = self.compile(q)
        ident = self.acyclic(_id(body))
        plus = c.extend_initial(self.lean(support(ident, Status.DEFINED)), 1)
        minus = c.extend_initial(self.lean(c.union(
            self.lean(support(ident, Status.UNDEFINED)),
            self.lean(support(ident, Status.CONFLICT)))), 1)
        return body.value, plus, minus

    def _when_defined(self, value: DT, plus: DT) -> DT:
        """combine(A, A+, fst): A's value where A is defined, ⊥ elsewhere."""
        return c.concat(c.parallel(value, plus), _FST)

    def _fillwith(self, q: ast.FillWith) -> Compiled:
        value, plus, minus = self._defined_and_not(q.body)
        default = self.value(q.default)
        filled = c.union(self._when_defined(value, plus),
                         c.concat(c.parallel(default, minus), _FST))
        return Compiled(filled)

    def _fill(self, q: ast.Fill) -> Compiled:
        value, plus, minus = self._defined_and_not(q.body)
        signals = c.parallel(self._when_defined(value, plus), minus)
        # acc := v (α defined now) ⊔ acc (α not defined now): exactly one fires.
        keep_last = DataFunction(
            ("acc", "v", "m"), ("acc",),
            (FunctionEntry("acc", frozenset({"v"}), Var("v")),
             FunctionEntry("acc", frozenset({"acc", "m"}), Var("acc"))),
        )
        # The accumulator starts ⊥ (no entry defines c1): fill is ⊥ until α is defined.
        start = DataFunction(("x",), ("c0", "c1"), (FunctionEntry("c0", frozenset({"x"}),
                                                                  Var("x")),))
        return Compiled(c.concat(start, c.prefix_sum(signals, keep_last)))

    def _aggregate(self, q: ast.Aggregate) -> Compiled:
        if q.stored:  # the window store's value at the ticks (the events) closing a window
            return Compiled(field_signal(self.alphabet, self.window(q), None,
                                         tags=q.tags if q.events else (TICK,)))
        fold = (window_pattern(q.function, self.alphabet) if isinstance(q.function, ast.Matches)
                else window_fold(q.function))
        return Compiled(window_aggregate(self.alphabet, fold, q.slots, tags=q.tags))

    def _matches(self, q: ast.Matches) -> Compiled:
        fold, start = event_pattern(q, self.alphabet)
        return Compiled(event_fold(self.alphabet, fold, start))

    def _windowsignal(self, q: ast.WindowSignal) -> Compiled:
        """A sliding window (issue 23): a window store computes its value at each step
        before the DT (:mod:`qre.runtime.window_fields`); the DT reads it as a field."""
        return Compiled(field_signal(self.alphabet, self.window(q), window_empty(q)))

    def window(self, q: ast.WindowSignal | ast.Aggregate) -> str:
        """The field that carries ``q``'s value from the window store."""
        if q not in self.windows:
            self.windows.append(replace(q, span=None))
        return window_field(self.windows.index(q))

    # ------------------------------------------------------------------ temporal φ

    def _pointwise(self, operands: Sequence[ast.Query], term: Term) -> Compiled:
        """The operands' values in parallel, then ``term`` over y1, y2, … (operand k is
        y{k+1}) as a data function: one sub-DT, read twice, for identical operands."""
        values, slots = self.distinct(operands, lambda p: p.value)
        names = [f"y{k + 1}" for k in range(len(values))]
        shared = term.substitute({Var(f"y{k + 1}"): Var(names[slot])
                                  for k, slot in enumerate(slots)})
        return Compiled(c.concat(c.parallel(*values), _g(names, shared)))

    def _binary(self, left: ast.Query, right: ast.Query, term: Term) -> Compiled:
        return self._pointwise((left, right), term)

    def _arith(self, q: ast.Arith) -> Compiled:
        """Issue 21 §1: both sides' values in parallel, then the operation as a data
        function — ⊥ or ⊤ on a side makes the result ⊥ or ⊤ (a term that reads an
        undefined variable is undefined), so no rate condition is needed."""
        return self._binary(q.left, q.right,
                            Apply(ast.ARITHMETIC[q.op], (Var("y1"), Var("y2"))))

    def _signalfunction(self, q: ast.SignalFunction) -> Compiled:
        """``f(β1, …)`` (issue 21): as :meth:`_arith`, with f a TERM function."""
        return self._pointwise(q.args, Apply(q.name, tuple(Var(f"y{k + 1}")
                                                           for k in range(len(q.args)))))

    def _compare(self, q: ast.Compare) -> Compiled:
        return self._binary(q.left, q.right,
                            Apply(ast.COMPARISONS[q.op], (Var("y1"), Var("y2"))))

    def _boolop(self, q: ast.BoolOp) -> Compiled:
        return self._binary(q.left, q.right, _CONNECTIVE_TERMS[q.op])

    def _not(self, q: ast.Not) -> Compiled:
        return Compiled(c.concat(self.value(q.body), _g(["y1"], Apply("not", (Var("y1"),)))))

    def _prev(self, q: ast.Prev) -> Compiled:
        # I_Σ: one event of any tag, returning its input.
        shifted = c.concat(self.value(q.body), c.identity_atom(self.alphabet, self.alphabet))
        return Compiled(c.union(shifted, c.epsilon(self.alphabet, Const(0.0))))

    def _fold(self, body: DT, start: float, term: Term, inputs: Sequence[str]) -> Compiled:
        fold = DataFunction.of(["acc", *inputs], {"acc": term})
        return Compiled(c.concat(_constants(*([start] * (len(inputs) + 1))),
                                 c.prefix_sum(body, fold)))

    def _hist(self, q: ast.Hist) -> Compiled:
        return self._fold(self.value(q.body), 1.0, Apply("and", (Var("acc"), Var("z"))), ["z"])

    def _once(self, q: ast.Once) -> Compiled:
        return self._fold(self.value(q.body), 0.0, Apply("or", (Var("acc"), Var("z"))), ["z"])

    def _since(self, q: ast.Since) -> Compiled:
        both = c.parallel(self.value(q.left), self.value(q.right))
        since = Apply("or", (Var("z2"), Apply("and", (Var("z1"), Var("acc")))))
        # The constants feed both the input of `both` (any defined value) and acc.
        fold = DataFunction.of(["acc", "z1", "z2"], {"acc": since})
        start = 0.0 if q.strong else 1.0
        return Compiled(c.concat(_constants(start, start), c.prefix_sum(both, fold)))

    def _boundedpast(self, q: ast.BoundedPast) -> Compiled:
        values, _ = self.distinct(q.operands, lambda p: p.value)
        body = values[0] if len(values) == 1 else c.parallel(*values)
        if len(q.operands) == 2 and len(values) == 1:  # φ since φ: one DT, read twice
            body = c.concat(body, DataFunction.of(["y"], [("y1", Var("y")), ("y2", Var("y"))]))
        bound = _metric_bound(q.bound, 1 if q.op == "prev" else slots(q.bound.lo, q.bound.hi))
        if q.op == "prev":
            return Compiled(metric_prev(body, bound))
        return Compiled(metric_past(body, bound, negate=q.op == "hist"))


def _metric_bound(bound: ast.PastBound, k: int) -> MetricBound:
    """The bound [lo, hi] as the half-open [A, B) of :mod:`dt.metric`: event counts as
    constants; durations as the fields in δ that a timed run supplies (A = ⌈lo/δ⌉,
    B = ⌈(hi + 1 ns)/δ⌉: for whole δ, lo ≤ d ≤ hi exactly when A ≤ d/δ < B); ``k`` slots."""
    if bound.events:
        hi = math.inf if bound.hi is None else bound.hi + 1
        return MetricBound(None, Const(float(bound.lo)), Const(float(hi)), k)
    lo = Cur(duration_field(bound.lo)) if bound.lo else Const(0.0)
    end = Const(math.inf) if bound.hi is None else Cur(duration_field(bound.hi + 1))
    return MetricBound(Cur(CLOCK_FIELD), lo, end, k)


def _id(compiled: Compiled) -> DT:
    assert compiled.identity is not None, "base queries always have an identity DT"
    return compiled.identity

