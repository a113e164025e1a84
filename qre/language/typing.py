"""Rates and typing of QRE-Past (seed 003, §5.3.1, Figure 26).

Pipeline position: AST → **typed AST** → DT. :func:`check` takes a parsed
:class:`~qre.language.ast.Program` (or a bare query) and returns a :class:`Typed`:
the query with every ``let`` name substituted, its alphabet, its kind and
the rate of every base subquery. Anything that breaks a rule is a
:class:`~qre.language.errors.QreTypeError` located at the offending construct.

Kinds (Figure 26): *base* quantitative queries α (atom, eps, or, split, iter,
combine, prefix_sum, and the running fold ``fold(...)``, rate Σ*), *top-level*
quantitative queries β (α, fill, fill_with, the arithmetic of signals
``β1 + β2``, ``-``, ``*``, ``/``: issue 21, and the sliding windows ``avg_over(2d, t)``:
issue 23, beyond Figure 26) and *temporal* queries φ
(comparisons, connectives, prev, hist, once, since, wsince). Base constructs
take base operands — so fill, fill_with and arithmetic appear only at the top
level, under a comparison or in arithmetic — comparisons take quantitative
operands, temporal operators temporal ones, arithmetic any (a temporal query is a
0/1 signal).

Rates (the regular expression L̄(α), the words on which α is defined or ⊤)
follow the second column of Figure 26 and are decided with the automata of
:mod:`qre.language.automata`. The restrictions:

* ``combine(α1, …, αk, op)`` needs L̄(α1) = … = L̄(αk) (so that the parallel
  composition is output-synchronized and the result restartable);
* ``prefix_sum(α, init, op)`` needs L(α) = Σ*: α *defined* on every word;
* ``β1 comp β2`` needs L(β1) = L(β2) = Σ* under a connective or past operator
  (elsewhere a partial side makes a partial boolean: issue 21).

L(α) — where α is defined, not ⊤ — is not a function of the rates (it depends
on ambiguity), so the last two rules are decided exactly on the compiled DT
through its unit projection (:func:`qre.language.automata.dt_language`, Theorem 5.2).

Also checked: tags are in the alphabet; atom terms read only ``cur``, eps
terms and ``init`` nothing; a lambda has as many parameters as its construct
passes (2, or k for combine) and reads only them.

Lets. Substituting the ``let`` names makes the query a DAG (every use of a name is
one object), which the checker visits once per object. The compiler builds one DT
per *use* (§5.3.2: a query compiles as a tree; only the identical operands of one
combine, comparison or connective share one), so a chain of lets that each use the
previous one twice doubles at every line: :func:`check` refuses a query whose
expanded size (:func:`qre.language.ast.query_size` with shared operands) passes both
:data:`MAX_EXPANDED_SIZE` and the size of its text, naming the let that crosses it,
before compiling anything (a size bound, not a DAG compile: a DT reads its own copy
of the events, so two uses of a name in different contexts — ``split(x, x, op)`` —
need two sub-DTs; they may share only where they see the same input and words).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from enum import Enum

from dt.metric import MAX_METRIC_SLOTS
from dt.metric import slots as metric_slots
from dt.terms import Var
from dt.windows import MAX_SLOTS

from . import ast
from . import automata as fa
from .clock import UNIT_NS, format_duration
from .compiler import Compiler
from .errors import QreTypeError
from .event_data import check_event_data

__all__ = ["MAX_EXPANDED_SIZE", "MAX_STORED_TICKS", "Kind", "Typed", "check", "check_fold",
           "resolve"]

MAX_EXPANDED_SIZE = 10_000
"""The largest query, let names expanded (Theorem 5.7's size, operands shared as the
compiler shares them), that :func:`check` accepts when its lets make it larger than its
text: the worst family of benchmarks/compile_cost.py compiles that in about 15 s. A
query as large as its text is never refused: its author wrote every part of it."""


class Kind(Enum):
    """The three kinds of query of Figure 26."""

    BASE = "base quantitative"
    TOP = "top-level quantitative"
    TEMPORAL = "temporal"


@dataclass(frozen=True)
class Typed:
    """A checked query: names resolved, alphabet fixed, kind and base rates known."""

    query: ast.Query
    alphabet: tuple[str, ...]
    kind: Kind
    rate: fa.Regex | None
    """L̄ of the whole query (None for fill/fill_with: their rate involves L(α))."""
    period: int | None = None
    """The clock period in nanoseconds (declared, or an aggregate's slide), or None."""
    derived: tuple[ast.TagDecl, ...] = ()
    """The program's derived tags, in declaration order."""


def resolve(program: ast.Program) -> ast.Query:
    """The final query with every ``let`` name replaced by its (resolved) definition.

    Every use of a name is the same object (a DAG, built in time linear in the text).
    :func:`qre.language.semantics.resolve` does the same for the oracle on purpose: the
    oracle shares no code with the pipeline it checks.
    """
    return _resolve(program)[1]


def _resolve(program: ast.Program) -> tuple[dict[str, ast.Query], ast.Query]:
    """The resolved definition of every let name, and the resolved final query."""
    env: dict[str, ast.Query] = {}
    for let in program.lets:
        env[let.name] = _substitute(let.query, env)
    return env, _substitute(program.query, env)


def _substitute(q: ast.Query, env: dict[str, ast.Query]) -> ast.Query:
    if isinstance(q, ast.Name):
        if q.name not in env:
            raise QreTypeError(f"unknown name {q.name!r}", span=q.span)
        return env[q.name]
    changes = {}
    for f in fields(q):
        value = getattr(q, f.name)
        if _is_query(value):
            changes[f.name] = _substitute(value, env)
        elif isinstance(value, tuple) and value and all(_is_query(v) for v in value):
            changes[f.name] = tuple(_substitute(v, env) for v in value)
    return replace(q, **changes) if changes else q


def _is_query(value: object) -> bool:
    return isinstance(value, ast.Query)  # type: ignore[arg-type]


def mentioned_tags(q: ast.Query) -> list[str]:
    """Tags of the atoms of a resolved query, in order of first appearance."""
    out: list[str] = []
    stack = [q]
    seen: set[int] = set()  # a DAG of substituted lets: each object once (the query holds it)
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, ast.Atom) and node.tag not in out and node.tag != ast.ANY_TAG:
            out.append(node.tag)
        if isinstance(node, ast.Aggregate):
            out.extend(t for t in node.tags or () if t not in out)
            if isinstance(node.function, ast.Matches):
                stack.append(node.function)
        if isinstance(node, ast.JoinRows):
            out.extend(t for t in (node.left, node.right) if t not in out)
        if isinstance(node, ast.Matches | ast.MatchRows):
            from .patterns import pattern_tags

            out.extend(t for t in pattern_tags(node.pattern) if t not in out)
        for f in reversed(fields(node)):
            value = getattr(node, f.name)
            if _is_query(value):
                stack.append(value)
            elif isinstance(value, tuple):
                stack.extend(v for v in reversed(value) if _is_query(v))
    return out


def check(
    program: ast.Program | ast.Query,
    alphabet: Sequence[str] | None = None,
    text: str | None = None,
) -> Typed:
    """Type-check a program (or query) and fix its alphabet (API.md).

    The alphabet is the program's ``alphabet`` declaration or the
    ``alphabet`` argument (they must agree when both are given); without
    either, the tags the query mentions. ``text`` is the query's source, used
    to show errors with a caret.
    """
    if not isinstance(program, ast.Program):
        program = ast.Program(None, (), program)
    try:
        env, query = _resolve(program)
        _check_expansion(program, env, query)
        period = _period(program, query)
        sigma = _timed_alphabet(_alphabet(program, query, alphabet), program, period)
        if isinstance(query, ast.MatchRows):
            from .match_query import check_match_rows

            kind, rate = Kind.TOP, None
            check_match_rows(query, sigma)
        elif isinstance(query, ast.JoinRows):
            kind, rate = Kind.TOP, None
            _check_join(query, sigma)
        elif isinstance(query, ast.Aggregate | ast.Matches):
            kind, rate = Kind.TOP, None
            _check_timed(query, sigma)
        else:
            kind, rate = _Checker(sigma, text).visit(query)
        check_event_data(query)
    except QreTypeError as err:
        raise err.located(text) if text is not None else err from None
    return Typed(query, sigma, kind, rate, period, program.tags)


def _check_expansion(program: ast.Program, env: dict[str, ast.Query],
                     query: ast.Query) -> None:
    """Refuse a query that expands past :data:`MAX_EXPANDED_SIZE` (module docstring),
    naming the first let that the final query uses and that alone passes it."""
    total = ast.query_size(query, shared_operands=True)
    written = sum(ast.query_size(let.query) for let in program.lets)
    if total <= max(MAX_EXPANDED_SIZE, written + ast.query_size(program.query)):
        return
    used = _objects(query)
    for let in program.lets:
        size = ast.query_size(env[let.name], shared_operands=True)
        if size > MAX_EXPANDED_SIZE and id(env[let.name]) in used:
            raise QreTypeError(_expansion_message(f"let {let.name}", let.query, size),
                               span=let.span)
    raise QreTypeError(_expansion_message("the query", program.query, total),
                       span=getattr(program.query, "span", None) or program.span)


def _expansion_message(what: str, body: ast.Query, size: int) -> str:
    uses = _name_uses(body)
    most = max(uses, key=uses.__getitem__) if uses else None
    why = (f" ({most} is used {uses[most]} times in it)" if most is not None
           and uses[most] > 1 else "")
    return (f"{what} expands to a query of size {size:,}{why}, more than the "
            f"{MAX_EXPANDED_SIZE:,} that compile in reasonable time: a let-bound query is "
            f"compiled once per use (§5.3.2), except identical operands of one combine, "
            f"comparison or connective, which share one DT; use the names fewer times in "
            f"the lets that build on each other")


def _objects(q: ast.Query) -> set[int]:
    """The ids of every query object in ``q`` (a DAG: each visited once)."""
    return {id(node) for node in _nodes(q, once=True)}


def _name_uses(q: ast.Query) -> dict[str, int]:
    """How many times each let name is used in ``q`` (an unresolved definition: a tree)."""
    uses: dict[str, int] = {}
    for node in _nodes(q, once=False):
        if isinstance(node, ast.Name):
            uses[node.name] = uses.get(node.name, 0) + 1
    return uses


def _nodes(q: ast.Query, *, once: bool) -> list[ast.Query]:
    """The query nodes of ``q``, iteratively; ``once``: each object once (a DAG)."""
    out: list[ast.Query] = []
    seen: set[int] = set()
    stack: list[object] = [q]
    while stack:
        node = stack.pop()
        if isinstance(node, tuple):
            stack.extend(node)
        elif _is_query(node) and not (once and id(node) in seen):
            seen.add(id(node))
            out.append(node)  # type: ignore[arg-type]
            stack.extend(getattr(node, f.name) for f in fields(node))  # type: ignore[arg-type]
    return out


def _period(program: ast.Program, query: ast.Query) -> int | None:
    """The clock period: the declared one, or a top-level aggregate's slide (a session
    window's gap)."""
    if not isinstance(query, ast.Aggregate):
        return program.period
    if query.events and program.period is not None:
        raise QreTypeError("a window of events closes at an event, not at clock ticks: leave "
                           "out the period declaration", span=program.span)
    if query.session and program.period is not None:
        raise QreTypeError("a session window's clock ticks a gap after each session's last "
                           "event, not periodically: leave out the period declaration",
                           span=program.span)
    if program.period is not None and program.period != query.period:
        raise QreTypeError("the declared period differs from the window's slide: a window "
                           "aggregate ticks at its slide (a stored window at the greatest "
                           "common divisor of its size and slide)", span=program.span)
    return query.period


def _timed_alphabet(sigma: tuple[str, ...], program: ast.Program,
                    period: int | None) -> tuple[str, ...]:
    """The alphabet with the sources and names of derived tags and, with a clock, the
    tick tag appended (those not in it already)."""
    from dt.windows import TICK

    names = [d.name for d in program.tags]
    if TICK in names:
        raise QreTypeError(f"{TICK!r} is the clock's tag: it cannot be derived",
                           span=program.span)
    sources = [d.source for d in program.tags if d.source != ast.ANY_TAG]
    out = list(sigma)
    for tag in [*sources, *names, *([TICK] if period is not None else [])]:
        if tag not in out:
            out.append(tag)
    return tuple(out)


def _check_join(q: ast.JoinRows, sigma: tuple[str, ...]) -> None:
    """A join's two tags are event tags of the alphabet; its slide is at most its size."""
    from dt.windows import TICK

    for tag in (q.left, q.right):
        if tag not in sigma or tag == TICK:
            raise QreTypeError(f"join tag {tag!r} is not an event tag of the alphabet "
                               f"({', '.join(t for t in sigma if t != TICK)})", span=q.span)
    if q.slide is not None and q.slide > q.size:
        raise QreTypeError(f"a join's slide ({format_duration(q.slide)}) is at most its size "
                           f"({format_duration(q.size)}): every pair falls in a window",
                           span=q.span)


def _check_timed(q: ast.Aggregate | ast.Matches, sigma: tuple[str, ...]) -> None:
    """A window aggregate's tags, a pattern's tags and where it may stand."""
    from dt.windows import TICK

    from .patterns import check_pattern, pattern_tags

    matches = q if isinstance(q, ast.Matches) else q.function
    if isinstance(matches, ast.WindowFold):
        check_fold(matches)
    if isinstance(matches, ast.Matches):
        check_pattern(matches, windowed=isinstance(q, ast.Aggregate))
        for tag in pattern_tags(matches.pattern):
            if tag not in sigma or tag == TICK:
                raise QreTypeError(f"pattern tag {tag!r} is not an event tag of the alphabet "
                                   f"({', '.join(t for t in sigma if t != TICK)})",
                                   span=matches.span)
    if isinstance(q, ast.Aggregate) and q.slots > MAX_SLOTS and not q.stored:
        raise QreTypeError(_too_many_slots(q), span=q.span)
    if isinstance(q, ast.Aggregate) and q.period is not None and q.stored and \
            q.size // q.period > MAX_STORED_TICKS:
        raise QreTypeError(
            f"this window closes at multiples of {format_duration(q.period)} (the greatest "
            f"common divisor of its size and slide), {q.size // q.period:,} clock ticks per "
            f"window size, more than {MAX_STORED_TICKS:,}: every key would tick that often "
            f"after its last event; use a slide that divides the size, or a longer one",
            span=q.span)
    for tag in (q.tags if isinstance(q, ast.Aggregate) else None) or ():
        if tag not in sigma or tag == TICK:
            raise QreTypeError(f"aggregated tag {tag!r} is not an event tag of the alphabet "
                               f"({', '.join(t for t in sigma if t != TICK)})", span=q.span)


MAX_STORED_TICKS = 10_000
"""The most clock ticks per window size (size / gcd(size, slide)) of a window aggregate the
window store computes: a key ticks that many times after its last event."""


def _too_many_slots(q: ast.Aggregate) -> str:
    """Why a window with more than :data:`dt.windows.MAX_SLOTS` open instances is refused,
    and the same window with the shortest slide that keeps within it."""
    from .printer import to_text

    least = -(-q.slots // MAX_SLOTS)  # the slide must grow by this factor at least
    factor = next((f for f in range(least, least + 10_000) if q.slots % f == 0), q.slots)
    instead = to_text(replace(q, slide=q.slide * factor, span=None))
    return (f"this window keeps {q.slots:,} instances open at once (its size over its "
            f"slide), more than {MAX_SLOTS:,}: the DT holds every open instance, so it "
            f"would take too long to build and to run; use a longer slide, e.g. "
            f"{instead}, or a shorter size")


def check_fold(f: ast.FoldBody) -> None:
    """A fold's shape (the text syntax guarantees it; a fold built in code may break it):
    distinct registers, one initial value and one update per register, updates reading
    the registers and cur, the output the registers only."""
    registers = {Var(r) for r in f.registers}
    if len(registers) != len(f.registers) or not registers:
        raise QreTypeError(f"a fold has distinct registers, at least one: "
                           f"{', '.join(f.registers)}", span=f.span)
    if not len(f.init) == len(f.update) == len(f.registers):
        raise QreTypeError(f"a fold has one initial value and one update term per register "
                           f"({len(f.registers)} register(s), {len(f.init)} initial value(s), "
                           f"{len(f.update)} update(s))", span=f.span)
    for what, term in [*(("update", u) for u in f.update), ("output", f.output)]:
        unknown = sorted(str(v) for v in term.variables() - registers)
        if unknown:
            raise QreTypeError(f"the fold's {what} {term} reads {', '.join(unknown)}, which is "
                               f"not one of its registers ({', '.join(f.registers)})",
                               span=f.span)
    if f.output.reads_cur():
        raise QreTypeError(f"the fold's output {f.output} reads cur: it sees only the "
                           "registers", span=f.span)


def _alphabet(program: ast.Program, query: ast.Query,
              given: Sequence[str] | None) -> tuple[str, ...]:
    if isinstance(given, str):
        raise QreTypeError("alphabet is a list of tags, not a single string")
    if given is not None:
        given = _checked_tags(given)
    declared = program.alphabet
    if given is not None and declared is not None and set(given) != set(declared):
        raise QreTypeError(
            f"the query declares alphabet {', '.join(declared)} but alphabet="
            f"[{', '.join(given)}] was passed", span=program.span)
    sigma = tuple(declared if declared is not None else
                  given if given is not None else mentioned_tags(query))
    if not sigma:
        raise QreTypeError("the query mentions no tag: declare an alphabet "
                           "(`alphabet a, b;` or alphabet=[...])", span=program.span)
    if ast.ANY_TAG in sigma:
        raise QreTypeError(f"{ast.ANY_TAG!r} is the wildcard tag (any event), not a tag of an "
                           f"alphabet", span=program.span)
    if len(set(sigma)) != len(sigma):
        raise QreTypeError(f"alphabet lists a tag twice: {', '.join(sigma)}", span=program.span)
    return sigma


def _checked_tags(given: object) -> list[str]:
    """``alphabet=`` as a list of strings; anything else is a TypeError saying so."""
    try:
        tags = list(given)  # type: ignore[call-overload]
    except TypeError:  # not iterable (a number, None..., a 0-d array)
        raise TypeError(f"alphabet must be a list of tags (strings), not "
                        f"{type(given).__name__}") from None
    for odd in tags:
        if not isinstance(odd, str):
            raise TypeError(f"alphabet must be a list of tags (strings); {odd!r} is a "
                            f"{type(odd).__name__}")
        if not (odd.isidentifier() and odd.isascii()):  # as DT tags are (automata.Sym)
            raise QreTypeError(f"alphabet: a tag is an ASCII identifier, not {odd!r}")
    return tags


_BASE_NAMES = {
    ast.Or: "or", ast.Split: "split", ast.Iter: "iter", ast.Combine: "combine",
    ast.PrefixSum: "prefix_sum", ast.RunningFold: "fold", ast.Fill: "fill",
    ast.FillWith: "fill_with",
    ast.Prev: "prev", ast.Hist: "hist", ast.Once: "once", ast.Not: "!",
}


def _widened(q: ast.BoundedPast) -> ast.BoundedPast:
    """``q`` with the narrowest bound from the same start that :func:`metric_slots` fits
    in :data:`MAX_METRIC_SLOTS` (2 + (lo − 2) // (width + 2) ≤ MAX), the width rounded up
    to whole units of the start (an hour for 1h)."""
    lo = q.bound.lo
    width = max(1, (lo - 2) // (MAX_METRIC_SLOTS - 1) - 1)
    if not q.bound.events:
        unit = max(u for u in UNIT_NS.values() if lo % u == 0)
        width = -(-width // unit) * unit
    return replace(q, bound=replace(q.bound, hi=lo + width))


def _construct(q: ast.Query) -> str:
    if isinstance(q, ast.Compare | ast.BoolOp | ast.Arith):
        return f"'{q.op}'"
    if isinstance(q, ast.SignalFunction):
        return q.name
    if isinstance(q, ast.BoundedPast):
        from .printer import bound_text

        return f"{q.op}{bound_text(q.bound)}"
    if isinstance(q, ast.Since):
        return "since" if q.strong else "wsince"
    return _BASE_NAMES.get(type(q), type(q).__name__.lower())


def _short(q: ast.Query) -> str:
    """The query's text for a message (sugar prints expanded), or a placeholder if long.

    The size is checked first (linear in a DAG of substituted lets; the text is at least
    as long), so a let chain that doubles is never printed in full."""
    from .printer import to_text

    if ast.query_size(q) > _SHORT:
        return "<this query>"
    text = to_text(q)
    return text if len(text) <= _SHORT else "<this query>"


_SHORT = 40
"""The longest query text a message quotes."""


def _source(q: ast.Query, text: str | None) -> str | None:
    """``q`` as the user wrote it (its span of ``text``, blanks collapsed), if short."""
    span = getattr(q, "span", None)
    if text is None or span is None:
        return None
    lines = text.split("\n")[span.line - 1:span.end_line]
    if not lines:
        return None
    lines[-1] = lines[-1][:span.end_column - 1]
    lines[0] = lines[0][span.column - 1:]
    written = " ".join(" ".join(lines).split())
    return written if 0 < len(written) <= _SHORT else None


@dataclass(frozen=True)
class _Partial:
    """Why a comparison is partial: its side not defined on every word, and the shortest
    word after which that side is ⊥ or ⊤. Filed by the comparison's id, which stays its
    own: ``_Checker._done`` keeps every visited node."""

    side: str
    operand: ast.Query
    missing: str


def _partial_windows(q: object) -> list[ast.WindowSignal]:
    """The partial sliding windows in ``q`` (``avg_last(k, t)`` beyond 100 events), which
    are ⊥ before their k-th event although their DT reads a field defined at every step:
    the runtime makes them ⊥ (:mod:`qre.runtime.window_fields`)."""
    if isinstance(q, ast.WindowSignal):
        return [q] if q.partial else []
    if isinstance(q, tuple):
        return [w for item in q for w in _partial_windows(item)]
    if not isinstance(q, ast.Arith | ast.SignalFunction | ast.Compare):
        return []  # anywhere else a window is refused as not base, or as partial
    return [w for f in fields(q) if f.name != "span"
            for w in _partial_windows(getattr(q, f.name))]


def _default_hint(q: ast.Query, quoted: str) -> str:
    """How to give ``q`` (``quoted`` in the message) a value wherever it has none."""
    partial = _partial_windows(q)
    if partial:
        w = partial[0]
        return (f"{w.function}_over({w.size.amount}, {w.arg}) instead (the last "
                f"{w.size.amount} events, fewer at first: defined on every word)")
    if isinstance(q, ast.Arith):
        return (f"a default for each side of {q.op} that is not defined everywhere, as in "
                f"fill_with(q, const(0)) {q.op} ...")
    if isinstance(q, ast.SignalFunction):
        return (f"a default for each argument of {q.name} that is not defined everywhere, "
                f"as in {q.name}(fill_with(q, const(0)), ...)")
    if isinstance(q, ast.Fill | ast.FillWith | ast.Aggregate | ast.Matches):
        return "a default inside it, on the base query it reads (fill_with(q, const(0)))"
    return f"fill_with({quoted}, const(0))"


class _Checker:
    def __init__(self, alphabet: tuple[str, ...], text: str | None = None) -> None:
        self.alphabet = alphabet
        self.text = text
        """The query's source, to quote a query as it was written (sugar unexpanded)."""
        self.sigma_star = fa.all_strings(alphabet)
        self.compiler = Compiler(alphabet)  # the operands compiled to decide L(q) = Σ*
        self._done: dict[int, tuple[ast.Query, tuple[Kind, fa.Regex | None]]] = {}
        self._partial: dict[int, _Partial] = {}
        """Comparisons with a side not defined on every word: why, by the node's id."""

    def show(self, rate: fa.Regex) -> str:
        return fa.show(rate, self.alphabet)

    def quote(self, q: ast.Query) -> str:
        """``q`` for a message: as written if its source is short, else printed."""
        return _source(q, self.text) or _short(q)

    def visit(self, q: ast.Query) -> tuple[Kind, fa.Regex | None]:
        """Kind and rate of ``q``, each object once (a DAG of substituted lets)."""
        done = self._done.get(id(q))
        if done is None:
            done = self._done[id(q)] = (q, getattr(self, f"_{type(q).__name__.lower()}")(q))
        return done[1]

    def operand(self, parent: ast.Query, q: ast.Query, *kinds: Kind) -> fa.Regex | None:
        kind, rate = self.visit(q)
        if kind not in kinds:
            wanted = " or ".join(k.value for k in kinds)
            hint = (" (fill, fill_with and the arithmetic of queries are allowed only at the "
                    "top level, under a comparison or in arithmetic of queries; inside, "
                    "combine queries of one rate: combine(q1, q2, (x, y) -> x - y))"
                    if kind is Kind.TOP else "")
            raise QreTypeError(f"{_construct(parent)} expects a {wanted} query here, not a "
                               f"{kind.value} one{hint}", span=getattr(q, "span", None)
                               or parent.span)
        return rate

    def base(self, parent: ast.Query, q: ast.Query) -> fa.Regex:
        rate = self.operand(parent, q, Kind.BASE)
        assert rate is not None
        return rate

    def op(self, parent: ast.Query, op: ast.Op, arity: int) -> None:
        if isinstance(op, ast.Lambda):
            if op.arity != arity:
                raise QreTypeError(
                    f"{_construct(parent)} passes {arity} value(s) to its operation, but the "
                    f"lambda takes {op.arity} ({', '.join(op.params)})",
                    span=op.span or parent.span)
            unknown = sorted(v.name for v in op.body.variables()
                             if v.primed or v.name not in op.params)
            if unknown:
                raise QreTypeError(f"the lambda reads {', '.join(unknown)}, which is not one "
                                   f"of its parameters ({', '.join(op.params)})",
                                   span=op.span or parent.span)
            if op.body.reads_cur():
                raise QreTypeError("a lambda combines values and cannot read cur",
                                   span=op.span or parent.span)
        elif arity != 2:
            raise QreTypeError(f"{_construct(parent)} of {arity} queries needs a lambda with "
                               f"{arity} parameters; {op.symbol} takes 2",
                               span=op.span or parent.span)

    def undefined_after(self, q: ast.Query) -> str | None:
        """A shortest word after which ``q`` is ⊥ or ⊤ (formatted), or None if L(q) = Σ*:
        decided on the compiled DT (Theorem 5.2)."""
        if _partial_windows(q):
            return fa.format_word(())  # ⊥ on ε: before the k-th event
        dt = self.compiler.compile(q).value
        missing = fa.shortest_word(fa.complement(fa.dt_language(dt, "defined")))
        return None if missing is None else fa.format_word(missing)

    def defined_everywhere(self, parent: ast.Query, q: ast.Query, what: str) -> None:
        """L(q) = Σ*, else a located error that names a default to give ``q``."""
        missing = self.undefined_after(q)
        if missing is not None:
            raise QreTypeError(
                f"{what} must be defined on every word (its L must be Σ*), but it is undefined "
                f"or conflicting after {missing}: give it a default there, e.g. "
                f"{_default_hint(q, self.quote(q))}",
                span=getattr(q, "span", None) or parent.span)

    # ------------------------------------------------------------------ base queries

    def _atom(self, q: ast.Atom) -> tuple[Kind, fa.Regex]:
        if q.tag == ast.ANY_TAG:
            if q.term.variables():
                names = ", ".join(sorted(str(v) for v in q.term.variables()))
                raise QreTypeError(f"an atom's term reads only cur, not {names}", span=q.span)
            return Kind.BASE, fa.any_tag(self.alphabet)
        if q.tag not in self.alphabet:
            raise QreTypeError(f"unknown tag {q.tag!r}: the alphabet is "
                               f"{', '.join(self.alphabet)}", span=q.span)
        if q.term.variables():
            names = ", ".join(sorted(str(v) for v in q.term.variables()))
            raise QreTypeError(f"an atom's term reads only cur, not {names}", span=q.span)
        return Kind.BASE, fa.Sym(q.tag)

    def _eps(self, q: ast.Eps) -> tuple[Kind, fa.Regex]:
        if q.term.variables() or q.term.reads_cur():
            raise QreTypeError("eps(t) takes a constant term (no cur, no variables)",
                               span=q.span)
        return Kind.BASE, fa.Epsilon()

    def _or(self, q: ast.Or) -> tuple[Kind, fa.Regex]:
        return Kind.BASE, fa.alt(self.base(q, q.left), self.base(q, q.right))

    def _split(self, q: ast.Split) -> tuple[Kind, fa.Regex]:
        rate = fa.cat(self.base(q, q.left), self.base(q, q.right))
        self.op(q, q.op, 2)
        return Kind.BASE, rate

    def _iter(self, q: ast.Iter) -> tuple[Kind, fa.Regex]:
        rate = fa.star(self.base(q, q.body))
        self.op(q, q.op, 2)
        return Kind.BASE, rate

    def _combine(self, q: ast.Combine) -> tuple[Kind, fa.Regex]:
        rates = [self.base(q, a) for a in q.args]
        self.op(q, q.op, len(q.args))
        for k, rate in enumerate(rates[1:], start=1):
            why = fa.explain_difference(rates[0], rate, self.alphabet,
                                        ("the first", f"query {k + 1}"))
            if why is not None:
                raise QreTypeError(
                    f"combine needs equal rates, but query 1 has rate {self.show(rates[0])} "
                    f"and query {k + 1} has rate {self.show(rate)} ({why})", span=q.span)
        return Kind.BASE, rates[0]

    def _prefixsum(self, q: ast.PrefixSum) -> tuple[Kind, fa.Regex]:
        self.base(q, q.body)
        self.op(q, q.op, 2)
        self.defined_everywhere(q, q.body, "the query under prefix_sum")
        return Kind.BASE, self.sigma_star

    def _runningfold(self, q: ast.RunningFold) -> tuple[Kind, fa.Regex]:
        """A fold over every event so far: defined on every word (rate Σ*)."""
        check_fold(q)
        return Kind.BASE, self.sigma_star

    # ------------------------------------------------------------------ top level

    def _aggregate(self, q: ast.Aggregate | ast.Matches | ast.JoinRows) -> tuple[Kind, None]:
        word = ("aggregate" if isinstance(q, ast.Aggregate) else
                "join(...)" if isinstance(q, ast.JoinRows) else "a pattern query")
        raise QreTypeError(f"{word} is a whole query: it cannot be part of another one",
                           span=q.span)

    _matches = _aggregate
    _joinrows = _aggregate

    def _fill(self, q: ast.Fill) -> tuple[Kind, None]:
        self.base(q, q.body)
        return Kind.TOP, None

    def _fillwith(self, q: ast.FillWith) -> tuple[Kind, None]:
        self.base(q, q.body)
        self.base(q, q.default)
        return Kind.TOP, None

    def _arith(self, q: ast.Arith | ast.SignalFunction) -> tuple[Kind, None]:
        """A signal: each side is any query, read on every prefix (issue 21 §1)."""
        for operand in (q.left, q.right) if isinstance(q, ast.Arith) else q.args:
            self.operand(q, operand, Kind.BASE, Kind.TOP, Kind.TEMPORAL)
        return Kind.TOP, None

    _signalfunction = _arith

    def _windowsignal(self, q: ast.WindowSignal) -> tuple[Kind, None]:
        """A sliding window's aggregate after every event (issue 23): a top-level query
        defined on every word, its term over the events' data only."""
        if q.arg is not None and q.arg.variables():
            names = ", ".join(sorted(str(v) for v in q.arg.variables()))
            raise QreTypeError(f"{q.function}_over's term reads only cur, not {names}",
                               span=q.span)
        return Kind.TOP, None

    # ------------------------------------------------------------------ temporal

    def _compare(self, q: ast.Compare) -> tuple[Kind, fa.Regex | None]:
        """Sides defined on every word: a comparison of §5.3.1, rate Σ*. A partial side
        (issue 21): a partial boolean signal, ⊥ where a side is ⊥ (rate None), which
        the connectives and past operators refuse (:meth:`temporal`)."""
        for operand in (q.left, q.right):
            self.operand(q, operand, Kind.BASE, Kind.TOP)
        for side, operand in (("left", q.left), ("right", q.right)):
            missing = self.undefined_after(operand)
            if missing is not None:
                self._partial[id(q)] = _Partial(side, operand, missing)
                return Kind.TEMPORAL, None
        return Kind.TEMPORAL, self.sigma_star

    def temporal(self, q: ast.Query, *operands: ast.Query) -> tuple[Kind, fa.Regex]:
        """Temporal operands defined on every word: a comparison with a partial side is
        refused here, naming the side to give a default."""
        for operand in operands:
            if self.operand(q, operand, Kind.TEMPORAL) is None:
                why = self._partial[id(operand)]
                raise QreTypeError(
                    f"{_construct(q)} needs its operand defined after every event, but "
                    f"{self.quote(operand)} is undefined or conflicting after {why.missing} "
                    f"(its {why.side} side is): give that side a default, e.g. "
                    f"{_default_hint(why.operand, self.quote(why.operand))}",
                    span=getattr(operand, "span", None) or q.span)
        return Kind.TEMPORAL, self.sigma_star

    def _boolop(self, q: ast.BoolOp) -> tuple[Kind, fa.Regex]:
        return self.temporal(q, q.left, q.right)

    def _not(self, q: ast.Not) -> tuple[Kind, fa.Regex]:
        return self.temporal(q, q.body)

    def _prev(self, q: ast.Prev) -> tuple[Kind, fa.Regex]:
        return self.temporal(q, q.body)

    def _hist(self, q: ast.Hist) -> tuple[Kind, fa.Regex]:
        return self.temporal(q, q.body)

    def _once(self, q: ast.Once) -> tuple[Kind, fa.Regex]:
        return self.temporal(q, q.body)

    def _since(self, q: ast.Since) -> tuple[Kind, fa.Regex]:
        return self.temporal(q, q.left, q.right)

    def _boundedpast(self, q: ast.BoundedPast) -> tuple[Kind, fa.Regex]:
        """A metric-bounded past operator (issue 21 §2): temporal operands, and a bound
        whose live intervals (:func:`dt.metric.slots`) fit in the DT."""
        bound = q.bound
        needed = 1 if q.op == "prev" else metric_slots(bound.lo, bound.hi)
        if needed > MAX_METRIC_SLOTS:
            raise QreTypeError(
                f"{_construct(q)} would keep up to {needed} intervals per key (at most "
                f"{MAX_METRIC_SLOTS}): a bound much narrower than its start keeps the times "
                f"of the events apart; widen it, e.g. to {_construct(_widened(q))}",
                span=q.span)
        return self.temporal(q, *q.operands)
