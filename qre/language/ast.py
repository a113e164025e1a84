"""The QRE-Past abstract syntax (seed 003, §5.3.1, Figure 26).

Pipeline position: text → **AST** → typed AST → DT. The parser
(:mod:`qre.language.parser`) and the combinator API (:mod:`qre.language.combinators`) build these
nodes; the printer (:mod:`qre.language.printer`) writes them back as text that parses to
an equal AST; the type checker (:mod:`qre.language.typing`) computes rates; the compiler
(:mod:`qre.language.compiler`) turns them into DTs; the denotational interpreter
(:mod:`qre.language.semantics`) is the oracle.

Nodes are frozen dataclasses. Every node has a ``span`` (where it came from in
the query text, for error messages) that does not take part in equality, so a
parsed query equals the same query built in code.

Three kinds of query (Figure 26):

* quantitative base queries α — :class:`Atom`, :class:`Eps`, :class:`Or`,
  :class:`Split`, :class:`Iter`, :class:`Combine`, :class:`PrefixSum`, and
  :class:`RunningFold` (this project's one base construct beyond Figure 26: a
  fold with several registers over the events so far, which ``iter`` cannot
  express since it folds one value; the ``var`` and ``std`` sugar use it);
* top-level quantitative queries β — α, :class:`Fill`, :class:`FillWith`, and
  :class:`Arith` and :class:`SignalFunction` (signals, issue 21: pointwise
  arithmetic and functions of top-level queries, beyond Figure 26);
* temporal queries φ — :class:`Compare`, :class:`BoolOp`, :class:`Not`,
  :class:`Prev`, :class:`Hist`, :class:`Once`, :class:`Since`, and
  :class:`BoundedPast` (their metric-bounded forms, issue 21 §2, with a
  :class:`PastBound`).

Signals over sliding windows (issue 23): :class:`WindowSignal` (``avg_over(2d, cur)``,
a top-level query defined on every word) with its :class:`WindowSize`.

Plus :class:`Name` (a reference to a ``let``-bound query) and
:class:`Program` (the alphabet declaration, the bindings and the final query).

Timed queries (issue 7): :class:`Aggregate` (a window aggregate, top level
only) with its function (:class:`WindowFunction`, :class:`WindowFold` or
:class:`Matches`); :class:`Matches` (CER patterns, top level only) over
:data:`Pattern` nodes;
:class:`TagDecl` (a tag derived from a field predicate) and a clock period
are declarations of the :class:`Program`. Durations are integers of
nanoseconds.

Operations (``OP`` in API.md) are :class:`BuiltinOp` (``+ * min max fst snd``)
or :class:`Lambda` (``(x, y) -> TERM``). Terms are :class:`dt.terms.Term`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, fields

import numpy as np

from dt.terms import Apply, Term, Var

__all__ = [
    "ANY_TAG",
    "ARITHMETIC",
    "BUILTIN_OPS",
    "COMPARISONS",
    "CONNECTIVES",
    "CONTIGUITIES",
    "HOLISTIC_FUNCTIONS",
    "MATCH_COLUMNS",
    "MEASURES",
    "PARAMETERS",
    "PAST_OPERATORS",
    "REPETITION_MODES",
    "SIGNAL_FUNCTIONS",
    "SKIPS",
    "STORED_FUNCTIONS",
    "WINDOW_FUNCTIONS",
    "WINDOW_SIGNALS",
    "Aggregate",
    "Arith",
    "Atom",
    "BoolOp",
    "BoundedPast",
    "BuiltinOp",
    "Combine",
    "Compare",
    "Eps",
    "Fill",
    "FillWith",
    "FoldBody",
    "Hist",
    "Iter",
    "JoinRows",
    "Lambda",
    "Let",
    "MatchRows",
    "Matches",
    "Measure",
    "Name",
    "Not",
    "Once",
    "Op",
    "Or",
    "PastBound",
    "Pattern",
    "PatternAnd",
    "PatternGap",
    "PatternNot",
    "PatternOr",
    "PatternPlus",
    "PatternSeq",
    "PatternTag",
    "PatternTimes",
    "PatternWithin",
    "PrefixSum",
    "Prev",
    "Program",
    "Query",
    "RunningFold",
    "SignalFunction",
    "Since",
    "Span",
    "Split",
    "TagDecl",
    "UserFunction",
    "WindowFold",
    "WindowFunction",
    "WindowSignal",
    "WindowSize",
    "query_size",
]


@dataclass(frozen=True, slots=True)
class Span:
    """A region of the query text: 1-based line and column of its start and end."""

    line: int
    column: int
    end_line: int
    end_column: int


_NO_SPAN = field(default=None, compare=False, repr=False)


# --------------------------------------------------------------------------- operations


BUILTIN_OPS = {
    "+": "add",
    "*": "mul",
    "min": "min",
    "max": "max",
    "fst": "fst",
    "snd": "snd",
}
"""Builtin binary operations: their text and the :data:`dt.terms.OPS` name."""


@dataclass(frozen=True, slots=True)
class BuiltinOp:
    """A named binary operation: ``+``, ``*``, ``min``, ``max``, ``fst``, ``snd``."""

    symbol: str
    span: Span | None = _NO_SPAN

    def __post_init__(self) -> None:
        if self.symbol not in BUILTIN_OPS:
            raise ValueError(f"unknown operation {self.symbol!r}; known: "
                             f"{', '.join(BUILTIN_OPS)}")

    @property
    def arity(self) -> int:
        return 2

    def term(self, args: tuple[Term, ...]) -> Term:
        """The operation applied to argument terms."""
        return Apply(BUILTIN_OPS[self.symbol], args)


@dataclass(frozen=True, slots=True)
class Lambda:
    """``(p1, …, pk) -> body``: a k-ary operation given by a term over its parameters."""

    params: tuple[str, ...]
    body: Term
    span: Span | None = _NO_SPAN

    def __post_init__(self) -> None:
        if len(set(self.params)) != len(self.params):
            raise ValueError(f"lambda parameters must be distinct: {', '.join(self.params)}")

    @property
    def arity(self) -> int:
        return len(self.params)

    def term(self, args: tuple[Term, ...]) -> Term:
        """The body with the parameters replaced by the argument terms."""
        return self.body.substitute({Var(p): a for p, a in zip(self.params, args, strict=True)})


Op = BuiltinOp | Lambda


# --------------------------------------------------------------------------- queries


def _canonical_init(value: float) -> float:
    """``init`` as a float, every NaN the one object ``math.nan``: a float NaN is not
    equal to itself, but dataclass equality compares fields in a tuple, where
    identical objects are equal, so two ``iter(α, nan, op)`` nodes compare (and
    hash) equal, as their texts do."""
    value = float(value)
    return math.nan if math.isnan(value) else value


ANY_TAG = "_"
"""The wildcard tag: ``atom(_, t)`` matches one event of *any* tag (rate Σ).

It keeps "any event" independent of the alphabet until the alphabet is fixed
(typing); the compiler expands it to one transition per tag, which is the
``or`` of one atom per tag. ``_`` cannot be a tag of an alphabet."""


@dataclass(frozen=True, slots=True)
class Atom:
    """``atom(σ, t)``: matches one event (σ, d) and returns t with cur = d. Rate {σ}.

    With σ = :data:`ANY_TAG` (``atom(_, t)``) it matches one event of any tag.
    """

    tag: str
    term: Term
    span: Span | None = _NO_SPAN


@dataclass(frozen=True, slots=True)
class Eps:
    """``eps(t)``: matches the empty word and returns the constant term t. Rate {ε}."""

    term: Term
    span: Span | None = _NO_SPAN


@dataclass(frozen=True, slots=True)
class Or:
    """``or(α1, α2)``: α1 or α2, whichever matches; ⊤ if both do. Rate L̄1 ∪ L̄2."""

    left: Query
    right: Query
    span: Span | None = _NO_SPAN


@dataclass(frozen=True, slots=True)
class Split:
    """``split(α1, α2, op)``: w = w1 w2 with α1 on w1, α2 on w2; op of the two. Rate L̄1·L̄2."""

    left: Query
    right: Query
    op: Op
    span: Span | None = _NO_SPAN


@dataclass(frozen=True, slots=True)
class Iter:
    """``iter(α, init, op)``: w = w1…wk, fold op over α(wi) from init. Rate L̄*."""

    body: Query
    init: float
    op: Op
    span: Span | None = _NO_SPAN

    def __post_init__(self) -> None:
        object.__setattr__(self, "init", _canonical_init(self.init))


@dataclass(frozen=True, slots=True)
class Combine:
    """``combine(α1, …, αk, op)``: op of all αi on the same word. Rate ∩ L̄i (equal rates)."""

    args: tuple[Query, ...]
    op: Op
    span: Span | None = _NO_SPAN


@dataclass(frozen=True, slots=True)
class PrefixSum:
    """``prefix_sum(α, init, op)``: fold op over α on every prefix, from init. Rate Σ*."""

    body: Query
    init: float
    op: Op
    span: Span | None = _NO_SPAN

    def __post_init__(self) -> None:
        object.__setattr__(self, "init", _canonical_init(self.init))


@dataclass(frozen=True, slots=True)
class FoldBody:
    """Registers, their initial values, one update term per register (over the registers
    and cur) and an output term (over the registers): what :class:`RunningFold` and
    :class:`WindowFold` share (:class:`dt.windows.Fold` is its DT-level form)."""

    registers: tuple[str, ...]
    init: tuple[float, ...]
    update: tuple[Term, ...]
    output: Term
    span: Span | None = _NO_SPAN

    def __post_init__(self) -> None:
        object.__setattr__(self, "init", tuple(_canonical_init(v) for v in self.init))


@dataclass(frozen=True, slots=True)
class RunningFold(FoldBody):
    """``fold([i1, …], (r1, …) -> [u1, …], (r1, …) -> out)``: registers r1, … start at
    i1, …; every event sets them all at once to u1, … (terms over the registers' old
    values and cur); the value is out (a term over the registers) — on every word, the
    empty one included (out of the initial values). Rate Σ*.

    The same fold as an ``aggregate`` function (:class:`WindowFold`) runs over each
    window's events instead; compiled by :func:`dt.windows.running_fold`.
    """


@dataclass(frozen=True, slots=True)
class Fill:
    """``fill(α)``: the last defined value of α (top level only). Rate L(α)·Σ*."""

    body: Query
    span: Span | None = _NO_SPAN


@dataclass(frozen=True, slots=True)
class FillWith:
    """``fill_with(α1, α2)``: α1 where defined, else α2 (top level only). Rate L(α1) ∪ L̄(α2)."""

    body: Query
    default: Query
    span: Span | None = _NO_SPAN


COMPARISONS = {"<": "lt", "<=": "le", ">": "gt", ">=": "ge", "==": "eq"}
"""Comparison operators of temporal queries and their :data:`dt.terms.OPS` names."""


@dataclass(frozen=True, slots=True)
class Compare:
    """``β1 comp β2``: 1/0; both sides defined on every prefix. Rate Σ*."""

    op: str
    left: Query
    right: Query
    span: Span | None = _NO_SPAN

    def __post_init__(self) -> None:
        if self.op not in COMPARISONS:
            raise ValueError(f"unknown comparison {self.op!r}")


ARITHMETIC = {"+": "add", "-": "sub", "*": "mul", "/": "div"}
"""Arithmetic operators of signals and their :data:`dt.terms.OPS` names."""


@dataclass(frozen=True, slots=True)
class Arith:
    """``β1 op β2`` for op in + - * /: a signal (issue 21 §1). After every prefix w, the
    value op(β1(w), β2(w)), lifted: ⊥ if a side is ⊥, else ⊤ if a side is ⊤. Each side
    is read on the prefix as a top-level query, so no rate equality is needed (unlike
    ``combine``). Top-level quantitative; rate: the prefixes where both sides are
    defined or ⊤ (not computed)."""

    op: str
    left: Query
    right: Query
    span: Span | None = _NO_SPAN

    def __post_init__(self) -> None:
        if self.op not in ARITHMETIC:
            raise ValueError(f"unknown arithmetic operator {self.op!r}")


CONNECTIVES = ("&&", "||", "->", "<->")
"""Binary boolean connectives of temporal queries."""


@dataclass(frozen=True, slots=True)
class BoolOp:
    """``φ1 && φ2``, ``||``, ``->`` (implies), ``<->`` (iff). Rate Σ*."""

    op: str
    left: Query
    right: Query
    span: Span | None = _NO_SPAN

    def __post_init__(self) -> None:
        if self.op not in CONNECTIVES:
            raise ValueError(f"unknown connective {self.op!r}")


@dataclass(frozen=True, slots=True)
class Not:
    """``!φ``. Rate Σ*."""

    body: Query
    span: Span | None = _NO_SPAN


@dataclass(frozen=True, slots=True)
class Prev:
    """``prev(φ)``: φ held at the previous event; false on the first one and initially."""

    body: Query
    span: Span | None = _NO_SPAN


@dataclass(frozen=True, slots=True)
class Hist:
    """``hist(φ)``: φ held at every prefix so far (the empty one included)."""

    body: Query
    span: Span | None = _NO_SPAN


@dataclass(frozen=True, slots=True)
class Once:
    """``once(φ)``: φ held at some prefix so far (the empty one included)."""

    body: Query
    span: Span | None = _NO_SPAN


@dataclass(frozen=True, slots=True)
class Since:
    """``φ1 since φ2`` (strong) / ``φ1 wsince φ2`` (weak: also true if φ1 always held)."""

    left: Query
    right: Query
    strong: bool = True
    span: Span | None = _NO_SPAN


SIGNAL_FUNCTIONS = {"abs": 1, "sqrt": 1, "exp": 1, "log": 1, "floor": 1, "ceil": 1,
                    "min": 2, "max": 2, "pow": 2, "if": 3}
"""The TERM functions that also apply to signals, with their arities (:class:`SignalFunction`)."""


@dataclass(frozen=True, slots=True)
class SignalFunction:
    """``f(β1, …)``: a TERM function of signals, pointwise after every event (issue 21):
    ``max(avg_last(5, cur), avg(cur))``, ``abs(r - m)``. Lifted like :class:`Arith`. Top
    level."""

    name: str
    args: tuple[Query, ...]
    span: Span | None = _NO_SPAN

    def __post_init__(self) -> None:
        if SIGNAL_FUNCTIONS.get(self.name) != len(self.args):
            raise ValueError(f"{self.name} is not a function of {len(self.args)} signal(s)")


PAST_OPERATORS = ("prev", "hist", "once", "since")
"""The past operators that take a metric bound (:class:`BoundedPast`)."""


@dataclass(frozen=True, slots=True)
class PastBound:
    """``[lo, hi]``: the distances, both ends included, from an earlier event to the
    current one that a bounded past operator reads (issue 21 §2): nanoseconds of event
    time, or with ``events`` counts of events (the current event is 0 events back).
    ``hi`` None is ∞."""

    lo: int
    hi: int | None
    events: bool = False

    def __post_init__(self) -> None:
        if self.lo < 0 or (self.hi is not None and self.hi < self.lo):
            raise ValueError(f"a bound [lo, hi] has 0 ≤ lo ≤ hi, not [{self.lo}, {self.hi}]")


@dataclass(frozen=True, slots=True)
class BoundedPast:
    """``prev[lo, hi](φ)``, ``hist[lo, hi](φ)``, ``once[lo, hi](φ)``, ``φ1 since[lo, hi] φ2``:
    the past operator over the events whose distance back is in the bound (point-based
    past MTL, :mod:`dt.metric`). ``operands``: (φ,), or (φ1, φ2) for ``since``. Rate Σ*."""

    op: str
    operands: tuple[Query, ...]
    bound: PastBound
    span: Span | None = _NO_SPAN

    def __post_init__(self) -> None:
        if self.op not in PAST_OPERATORS:
            raise ValueError(f"unknown past operator {self.op!r}")
        if len(self.operands) != (2 if self.op == "since" else 1):
            raise ValueError(f"{self.op} takes {2 if self.op == 'since' else 1} operand(s)")


WINDOW_FUNCTIONS = ("count", "sum", "min", "max", "avg", "var", "std", "first", "last",
                    "median", "quantile", "distinct", "top")
"""The builtin functions of a window aggregate (:mod:`qre.language.sugar` gives the folds)."""

HOLISTIC_FUNCTIONS = ("median", "quantile", "distinct", "top")
"""Window functions that need the window's values, not a fold: the window store computes
them (issue 23, :mod:`qre.runtime.window_fields`)."""

STORED_FUNCTIONS = ("count", "sum", "min", "max", "avg", *HOLISTIC_FUNCTIONS)
"""Window functions the window store computes: the holistic ones always, the others when
the DT cannot hold the window (:attr:`Aggregate.stored`)."""


@dataclass(frozen=True, slots=True)
class UserFunction:
    """A window function given in Python (``qre(..., functions={"iqr": fn})``, issue 23
    §1): ``fn`` maps a window's values (a read-only float64 numpy array, in the events'
    order, never empty) to a number. Written ``NAME(t)`` in ``aggregate(...)`` and ``NAME_over(size,
    t)`` as a sliding window; an empty window's value is NaN. Equal by name and function;
    shown and fingerprinted by name only (a checkpoint resumed with another body under the
    same name is not told apart)."""

    name: str
    fn: Callable[[np.ndarray], float] = field(repr=False)

    def __call__(self, values: np.ndarray) -> float:
        """``fn`` of the values as a float; its failure names the function."""
        try:
            return float(self.fn(values))
        except Exception as err:
            raise ValueError(f"window function {self.name!r} failed on a window of "
                             f"{len(values)} values: {type(err).__name__}: {err}") from err


def _check_user(user: UserFunction, name: str, arg: Term | None, p: float | None,
                usage: str) -> None:
    """A node naming a function given in Python: its name, one term, no number."""
    if user.name != name:
        raise ValueError(f"the function {user.name!r} is written {name!r}")
    if arg is None or p is not None:
        raise ValueError(f"{usage} takes one term")


PARAMETERS = {"quantile": "a probability p", "top": "a whole number k"}
"""The window functions that take a number besides their term: ``quantile(t, p)``, and
``top(t, k)``, the k-th greatest value (k = 1: the max; NaN with fewer than k values)."""


def _check_parameter(name: str, p: float | None, usage: str) -> None:
    """``p`` given exactly to the functions of :data:`PARAMETERS`, and in range."""
    if (p is None) != (name not in PARAMETERS):
        raise ValueError(f"{usage} takes {PARAMETERS[name]}" if name in PARAMETERS
                         else f"{usage} takes no number besides its term")
    if name == "quantile" and p is not None and not 0.0 <= p <= 1.0:
        raise ValueError(f"a quantile's p is between 0 and 1, not {p}")
    if name == "top" and p is not None and not (float(p).is_integer() and 1 <= p < 2**53):
        raise ValueError(f"top's k is a whole number from 1, not {p:g}")


@dataclass(frozen=True, slots=True)
class WindowFunction:
    """A builtin window function: ``count()``, ``NAME(t)`` or ``quantile(t, p)``, t a
    term over cur, p a probability."""

    name: str
    arg: Term | None
    span: Span | None = _NO_SPAN
    p: float | None = None
    user: UserFunction | None = None
    """A function given in Python, named ``name`` (:class:`UserFunction`)."""

    def __post_init__(self) -> None:
        if self.user is not None:
            _check_user(self.user, self.name, self.arg, self.p, f"{self.name}(t)")
            return
        if self.name not in WINDOW_FUNCTIONS:
            raise ValueError(f"unknown window function {self.name!r}; known: "
                             f"{', '.join(WINDOW_FUNCTIONS)} (a window function of your own: "
                             f"qre(..., functions={{{self.name!r}: fn}}))")
        if (self.arg is None) != (self.name == "count"):
            raise ValueError("count() takes no argument" if self.name == "count"
                             else f"{self.name}(t) takes one term argument")
        _check_parameter(self.name, self.p, f"{self.name}(t, ...)" if self.name in PARAMETERS
                         else f"{self.name}(t)")


@dataclass(frozen=True, slots=True)
class WindowFold(FoldBody):
    """``fold([i1, …], (r1, …) -> [u1, …], (r1, …) -> out)``: a user-defined window
    function; the updates read the registers and cur, the output the registers."""


@dataclass(frozen=True, slots=True)
class PatternTag:
    """A pattern of one event of ``tag`` (derived tags give predicates on data)."""

    tag: str
    span: Span | None = _NO_SPAN


@dataclass(frozen=True, slots=True)
class PatternNot:
    """``not(a | b)`` between two parts of a ``seq``: no event of these tags in between."""

    tags: tuple[str, ...]
    span: Span | None = _NO_SPAN


@dataclass(frozen=True, slots=True)
class PatternSeq:
    """``seq(p1, …, pk)``: the parts in order, any events skipped between them;
    :class:`PatternNot` parts stand between two others (and, in ``match(...)``, last:
    a negation at the end). ``contiguity`` (``seq[next](...)``, issue 26): how the parts'
    events relate, ``None`` for the query's strategy."""

    parts: tuple[Pattern | PatternNot, ...]
    span: Span | None = _NO_SPAN
    contiguity: str | None = None


@dataclass(frozen=True, slots=True)
class PatternOr:
    """``or(p1, p2)``: a match of either."""

    left: Pattern
    right: Pattern
    span: Span | None = _NO_SPAN


@dataclass(frozen=True, slots=True)
class PatternAnd:
    """``and(p1, p2)``: a match of each, one after the other in either order."""

    left: Pattern
    right: Pattern
    span: Span | None = _NO_SPAN


@dataclass(frozen=True, slots=True)
class PatternPlus:
    """``plus(p)``: one or more matches of p, one after the other (Kleene plus);
    ``greedy`` (``plus[greedy](p)``, ``match`` only): the event after it cannot start
    another match of p."""

    body: Pattern
    span: Span | None = _NO_SPAN
    contiguity: str | None = None
    greedy: bool = False


@dataclass(frozen=True, slots=True)
class PatternTimes:
    """``times(p, lo[, hi])``, ``optional(p)`` (0 to 1), ``star(p)`` (0 or more): lo to hi
    (``None``: unbounded) matches of p one after the other (issue 26, ``match`` only);
    ``greedy`` as :class:`PatternPlus`'s."""

    body: Pattern
    lo: int
    hi: int | None
    span: Span | None = _NO_SPAN
    contiguity: str | None = None
    greedy: bool = False


@dataclass(frozen=True, slots=True)
class PatternGap:
    """``gap(p, D)``: a match of p whose consecutive events are less than D (ns) apart
    (issue 26, ``match`` only)."""

    body: Pattern
    duration: int
    span: Span | None = _NO_SPAN


@dataclass(frozen=True, slots=True)
class PatternWithin:
    """``within(p, D)``: a match of p from first to last event shorter than D (ns)."""

    body: Pattern
    duration: int
    span: Span | None = _NO_SPAN


WINDOW_SIGNALS = ("count", "sum", "avg", "min", "max", "median", "quantile", "distinct",
                  "top")
"""The aggregates of a sliding window at every event, written ``NAME_over(size, …)``
(:class:`WindowSignal`; :mod:`dt.window_aggregates` defines each one)."""


@dataclass(frozen=True, slots=True)
class WindowSize:
    """A sliding window's extent: ``amount`` nanoseconds of event time (the window
    (now − amount, now]), or with ``events`` the last ``amount`` events."""

    amount: int
    events: bool

    def __post_init__(self) -> None:
        if self.amount < 1:
            raise ValueError("a window's size is a positive duration or number of events")


@dataclass(frozen=True, slots=True)
class WindowSignal:
    """``NAME_over(size, t)`` (``count_over(size)``, ``quantile_over(size, t, p)``): the
    aggregate of t over the key's events in a sliding window ending at the current step
    (issue 23): the events of the last ``size`` of event time, the current one
    included, or the last ``size.amount`` events. A top-level query defined on every
    word (an empty window has the aggregate's empty value: 0 for count and sum, NaN for
    avg, median and quantile, inf for min, -inf for max); a window store computes it
    before the DT (:mod:`qre.runtime.window_fields`)."""

    function: str
    size: WindowSize
    arg: Term | None = None
    p: float | None = None
    span: Span | None = _NO_SPAN
    partial: bool = False
    """⊥ until the window holds ``size`` events: ``avg_last(k, t)`` and ``window(k, t,
    op)`` for op + min max, k beyond :data:`qre.language.sugar.MAX_WINDOW` (their meaning
    is the expansion's, with the sum exact, computed by the window store)."""
    user: UserFunction | None = None
    """A function given in Python, named ``function`` (:class:`UserFunction`)."""

    def __post_init__(self) -> None:
        if self.user is not None:
            if self.partial:
                raise ValueError("a function given in Python is not partial")
            _check_user(self.user, self.function, self.arg, self.p,
                        f"{self.function}_over(size, t)")
            return
        if self.partial and not (self.size.events and self.function in ("sum", "avg", "min",
                                                                         "max")):
            raise ValueError("only sum, avg, min and max over a number of events are partial")
        if self.function not in WINDOW_SIGNALS:
            raise ValueError(f"unknown window aggregate {self.function!r}; known: "
                             f"{', '.join(WINDOW_SIGNALS)}")
        if (self.arg is None) != (self.function == "count"):
            raise ValueError("count_over(size) takes no term" if self.function == "count"
                             else f"{self.function}_over(size, t) takes one term")
        _check_parameter(self.function, self.p, f"{self.function}_over(size, t, ...)"
                         if self.function in PARAMETERS else f"{self.function}_over")


Pattern = (PatternTag | PatternSeq | PatternOr | PatternAnd | PatternPlus | PatternWithin
           | PatternTimes | PatternGap)

CONTIGUITIES = ("strict", "next", "any")
REPETITION_MODES = ("greedy", "reluctant")
"""A repetition's bracket may also say ``greedy`` (the event after it cannot start
another iteration) or ``reluctant`` (every count its own match: the default)."""
"""How consecutive events of a match relate (dt/cer/pattern.py): adjacent, the first
that fits, any later one."""

SKIPS = ("no_skip", "to_next", "past_last", "to_first", "to_last")
"""After-match skip policies of ``match(..., skip ...)`` (dt/cer/pattern.py)."""


MEASURES = ("first", "last", "count", "sum", "min", "max", "avg")
MATCH_COLUMNS = ("key", "match", "start", "end", "time", "rows", "vars")
"""The columns of every row of ``match(...)`` (qre/runtime/cer/matches.py)."""
"""Functions of a variable's values in a match (``measures [sum(b.amount) as total]``)."""


@dataclass(frozen=True, slots=True)
class Measure:
    """``FUNCTION(VAR[.FIELD]) as NAME``: a column of ``match(...)``'s rows, the function
    of the values (``cur``, or the field) of the match's events bound to VAR."""

    function: str
    var: str
    field: str | None
    name: str
    span: Span | None = _NO_SPAN


@dataclass(frozen=True, slots=True)
class MatchRows:
    """``match(p, options)``: every match of p, a row each (issue 26; a whole query).
    ``within`` (ns) bounds the whole match, ``skip`` (with ``skip_var`` for
    ``to_first``/``to_last``) is the after-match skip policy, ``strategy`` the
    contiguity of junctions that name none, ``consume`` discards matches sharing an
    event with a kept one."""

    pattern: Pattern
    within: int | None = None
    skip: str = "no_skip"
    skip_var: str | None = None
    strategy: str = "any"
    consume: bool = False
    span: Span | None = _NO_SPAN
    measures: tuple[Measure, ...] = ()
    timeouts: bool = False


@dataclass(frozen=True, slots=True)
class JoinRows:
    """``join(L, R, size[, slide])``: each pair of an L event and an R event of one key
    that fall in one window [l·slide, l·slide + size) (seed 000's window Join, §2.1: a
    row per pair and window, stamped at the window's end − δ; issue 27; a whole query).
    ``size`` and ``slide`` in ns (no slide: tumbling)."""

    left: str
    right: str
    size: int
    slide: int | None = None
    span: Span | None = _NO_SPAN


@dataclass(frozen=True, slots=True)
class Matches:
    """``matched(p)`` (``count=False``: 1 if a match of p ends at this event, else 0) or
    ``matches(p)`` (the number of matches ending at this event), skip-till-any-match;
    as a window function, the matches that start in the window's first slide."""

    pattern: Pattern
    count: bool
    span: Span | None = _NO_SPAN


@dataclass(frozen=True, slots=True)
class Aggregate:
    """``aggregate(f, size[, slide][, [tags]])``: f over each window instance
    [l·slide, l·slide + size) of the events of ``tags`` (default: all), output when
    the instance closes; slide ≤ size (tumbling when equal), a divisor of it unless the
    window store computes the window (:attr:`stored`).
    ``aggregate(f, session(gap)[, [tags]])`` (``session``; size = slide = gap): f over
    each session of the key's events — consecutive events less than the gap apart —
    output when the session closes, a gap after its last event (issue 21 §3).
    ``aggregate(f, n[, m][, [tags]])`` (``events``; issue 23 §1): the same over the key's
    events of ``tags`` numbered from 0 — instance l holds those numbered l·m to
    l·m + n − 1 and is output at the last of them (the ones of negative l hold fewer),
    ⊥ at every other event; no clock. Top level only; compiled by
    :func:`dt.windows.window_aggregate` (one instance open at a time for a session), its
    clock by :mod:`qre.language.clock`, or read from the window store (:attr:`stored`)."""

    function: WindowFunction | WindowFold | Matches
    size: int
    slide: int
    tags: tuple[str, ...] | None = None
    span: Span | None = _NO_SPAN
    session: bool = False
    events: bool = False
    """``size`` and ``slide`` count events, not nanoseconds."""

    def __post_init__(self) -> None:
        if self.slide <= 0 or self.size <= 0:
            raise ValueError("a window's size and slide are positive durations or numbers "
                             "of events")
        if self.events and not self.stored:
            raise ValueError(f"a window of events computes {', '.join(STORED_FUNCTIONS)} or "
                             f"a function of your own, not {self.function_name}")
        if self.slide > self.size:
            raise ValueError("a window's slide is at most its size")
        if self.size % self.slide and not self.stored:
            raise ValueError(f"a window's size must be a multiple of its slide for "
                             f"{self.function_name}: {', '.join(STORED_FUNCTIONS[:-1])} and "
                             f"{STORED_FUNCTIONS[-1]} take any slide up to the size")
        if self.session and isinstance(self.function, WindowFunction) and \
                self.function.user is not None:
            raise ValueError(f"{self.function.name}(t), a function given in Python, runs over "
                             f"windows of a size and slide, not sessions")
        if self.session and self.size != self.slide:
            raise ValueError("a session window has one duration, its gap")

    @property
    def function_name(self) -> str:
        """The window function's name as written (``fold`` and ``matches`` for those)."""
        if isinstance(self.function, WindowFunction):
            return f"{self.function.name}()"
        return "fold(...)" if isinstance(self.function, WindowFold) else "matches(...)"

    @property
    def stored(self) -> bool:
        """Whether the window store computes this window (issue 23): a holistic function,
        or count, sum, min, max, avg over windows a DT cannot hold — a size that is not a
        multiple of the slide, or more than :data:`dt.windows.MAX_SLOTS` open at once."""
        from dt.windows import MAX_SLOTS

        f = self.function
        if self.session or not isinstance(f, WindowFunction):
            return False
        if f.user is not None:  # a function given in Python reads the window's values
            return True
        if f.name not in STORED_FUNCTIONS:
            return False
        return self.events or f.name in HOLISTIC_FUNCTIONS or bool(self.size % self.slide) \
            or self.size // self.slide > MAX_SLOTS

    @property
    def period(self) -> int | None:
        """The clock period: the slide, or for a stored window the greatest common divisor
        of size and slide (every window closes at l·slide + size, a multiple of it); None
        for a window of events (it closes at an event)."""
        if self.events:
            return None
        return math.gcd(self.size, self.slide) if self.stored else self.slide

    @property
    def slots(self) -> int:
        """The window instances open at any time: size / slide (rounded up)."""
        return -(-self.size // self.slide)


@dataclass(frozen=True, slots=True)
class TagDecl:
    """``tag NAME = [SOURCE where] TERM;``: an event of tag SOURCE (any tag if
    :data:`ANY_TAG`) whose data satisfy TERM (non-zero) gets the tag NAME; the
    declarations are tried in order and the first that holds wins."""

    name: str
    source: str
    predicate: Term
    span: Span | None = _NO_SPAN


@dataclass(frozen=True, slots=True)
class Name:
    """A reference to a query bound by ``let NAME = Q;``."""

    name: str
    span: Span | None = _NO_SPAN


Query = (Atom | Eps | Or | Split | Iter | Combine | PrefixSum | RunningFold | Fill | FillWith
         | Arith | SignalFunction | Compare | BoolOp | Not | Prev | Hist | Once | Since
         | BoundedPast | WindowSignal | Name | Aggregate | Matches | MatchRows | JoinRows)


@dataclass(frozen=True, slots=True)
class Let:
    """``let NAME = Q;``"""

    name: str
    query: Query
    span: Span | None = _NO_SPAN


@dataclass(frozen=True, slots=True)
class Program:
    """A whole query text: ``alphabet a, b;`` (optional), ``period D;`` (optional, in
    nanoseconds), ``tag`` declarations, ``let`` bindings, the final query."""

    alphabet: tuple[str, ...] | None
    lets: tuple[Let, ...]
    query: Query
    span: Span | None = _NO_SPAN
    period: int | None = None
    tags: tuple[TagDecl, ...] = ()


def query_size(node: object, *, shared_operands: bool = False) -> int:
    """The length of a query (Theorem 5.7's measure): its nodes, term nodes and operations.

    A query whose ``let`` names are substituted (:func:`qre.language.typing.resolve`) is a
    DAG: every use of a name is the same object. The size is that of the tree it stands
    for (a name used twice counts twice), computed once per object, in time linear in
    the DAG. ``shared_operands`` counts identical operands (the same object) of one
    :class:`Combine`, :class:`Arith`, :class:`Compare` or :class:`BoolOp` once: the
    compiler builds one DT for them (:mod:`qre.language.compiler`).
    """
    return _size(node, {}, shared_operands)


_SHARING = ("Combine", "Arith", "SignalFunction", "Compare", "BoolOp", "BoundedPast")
"""The nodes whose identical operands the compiler compiles once (a parallel composition)."""


def _size(node: object, memo: dict[int, tuple[object, int]], shared: bool) -> int:
    if isinstance(node, Term):
        return node.size
    if isinstance(node, tuple):
        return sum(_size(x, memo, shared) for x in node)
    if not hasattr(node, "__dataclass_fields__"):
        return 0
    known = memo.get(id(node))
    if known is not None:
        return known[1]
    children = [getattr(node, f.name) for f in fields(node) if f.name != "span"]
    if shared and type(node).__name__ in _SHARING:
        children = _distinct(children)
    size = 1 + sum(_size(child, memo, shared) for child in children)
    memo[id(node)] = (node, size)  # the node is kept so that its id stays its own
    return size


def _distinct(children: list[object]) -> list[object]:
    """Operands (flattening a tuple of them) with repeated objects dropped."""
    out: list[object] = []
    for child in children:
        for item in child if isinstance(child, tuple) else (child,):
            if not any(item is seen for seen in out):
                out.append(item)
    return out
