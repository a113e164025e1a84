"""QRE-Past query text → AST (seed 003, §5.3; docs/API.md, "Query text").

:func:`parse` reads a whole query text into a :class:`~qre.language.ast.Program`: an
optional ``alphabet a, b, c;`` declaration, ``let NAME = Q;`` bindings, and
the final query. The grammar is ``qre/language/grammar.lark`` (LALR(1)); it imports the
TERM grammar of ``dt/term.lark``, and terms are built by
:func:`dt.terms.term_from_tree`, so query terms and DT terms are one language.

What the grammar cannot say is checked here, each error a
:class:`~qre.language.errors.QreSyntaxError` with line, column and a caret:

* a keyword (:data:`KEYWORDS`) used as a name, tag or lambda parameter; a primed
  name (only term variables are primed);
* a ``let`` name bound twice; a query name not bound by an EARLIER ``let``;
  a tag declared twice in ``alphabet``, or the wildcard tag ``_`` declared there;
* what a term may read: ``atom`` terms read ``cur``/``cur.FIELD`` only,
  ``eps`` terms are constant, a lambda body reads its (unprimed) parameters and
  never ``cur`` (a lambda combines values, it does not read events);
* ``combine``: queries, then exactly one operation, last; builtin operations
  are ``+ * min max fst snd`` (these four words stay usable as query names:
  only the operation position reads them as operations). After the first
  argument of ``combine``, ``(x) -> ...`` is a one-parameter lambda; an
  implication whose left side is a bare name needs no parentheses there;
* comparisons and ``<->`` do not chain (``a < b < c`` asks for parentheses);
* nesting deeper than :data:`MAX_DEPTH` (query and term levels together), where a
  ``let``-bound name counts as deep as its definition: the pipeline substitutes it
  (:func:`qre.language.typing.resolve`), so 250 chained lets nest 250 levels.

Wrong lambda arity is *not* a syntax error: the type checker reports it.
Tags are identifiers in the text syntax (an alphabet given in Python may hold
any strings; text can mention only the identifier-shaped ones); ``_`` is the
wildcard tag of ``atom(_, t)``. A ``;`` after the final query is allowed.

Spans (:class:`~qre.language.ast.Span`) are 1-based; the end is exclusive (the column
just after the node's last character), as lark counts.

A number where a query is expected (``avg(cur) > 3``, ``fill_with(q, -1)``;
also ``inf``, ``-inf``, ``nan``) is the query ``const(c)`` of :mod:`qre.language.sugar`,
spanning the number; an ``init``, a duration and a term keep reading numbers as
numbers. ``fold([i, …], (r, …) -> [u, …], (r, …) -> out)`` is a running fold
(:class:`~qre.language.ast.RunningFold`) as a query and a window function inside
``aggregate``; ``fold`` is a keyword.

Sugar: a call ``NAME(arg, …)`` whose name is not a construct is looked up in
:data:`SUGAR` and expanded at parse time; its arguments are terms over ``cur``
(a number is a constant term) or operations. See :data:`Sugar` and
:func:`sugar_macro`, which turns a plain function such as ``window(k, t, op)``
into a macro.

:func:`parse` raises nothing but :class:`QreSyntaxError`, whatever the input.

The LALR parser and its errors in the query's words are :mod:`qre.language.lalr`'s.
"""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, fields, replace

import lark
from lark.exceptions import UnexpectedInput

from dt.errors import TermSyntaxError
from dt.terms import MAX_TERM_DEPTH, OPS, Const, Term, Var, term_from_tree

from .ast import (
    ANY_TAG,
    BUILTIN_OPS,
    CONTIGUITIES,
    MATCH_COLUMNS,
    MEASURES,
    REPETITION_MODES,
    SIGNAL_FUNCTIONS,
    SKIPS,
    Aggregate,
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
    JoinRows,
    Lambda,
    Let,
    Matches,
    MatchRows,
    Measure,
    Name,
    Not,
    Once,
    Op,
    Or,
    PastBound,
    Pattern,
    PatternAnd,
    PatternGap,
    PatternNot,
    PatternOr,
    PatternPlus,
    PatternSeq,
    PatternTag,
    PatternTimes,
    PatternWithin,
    PrefixSum,
    Prev,
    Program,
    Query,
    RunningFold,
    SignalFunction,
    Since,
    Span,
    Split,
    TagDecl,
    UserFunction,
    WindowFold,
    WindowFunction,
    WindowSize,
)
from .clock import UNIT_NS, duration_ns
from .errors import QreError, QreSyntaxError
from .lalr import KEYWORDS, lalr_parser, syntax_error
from .sugar import SUGAR_FORMS, const, user_over

__all__ = [
    "KEYWORDS",
    "MAX_DEPTH",
    "SUGAR",
    "Sugar",
    "SugarArg",
    "parse",
    "sugar_macro",
]

MAX_DEPTH = MAX_TERM_DEPTH
"""Deepest nesting :func:`parse` accepts, counting query levels (parentheses
included) and the term levels below them together, so that every recursive
walk of a parsed program (equality, hashing, printing, typing, compiling)
stays far from Python's recursion limit."""


@dataclass(frozen=True, slots=True)
class SugarArg:
    """An argument of a sugar call: a term over ``cur`` (numbers are constant terms)
    or an operation (a bare ``min``, ``max``, ``fst``, ``snd``, ``+``, ``*`` or a
    lambda), with its place in the text."""

    value: Term | Op | WindowSize
    span: Span | None = field(default=None, compare=False)


Sugar = Callable[[tuple[SugarArg, ...], Span], Query]
"""A macro: ``expand(args, span)`` returns the query a call stands for.

A macro reports a bad argument by raising :class:`~qre.language.errors.QreSyntaxError`
with a message and the argument's ``span`` (no text), or ``ValueError`` (then
reported at the call). Names in an expansion must be ``let``-bound, as usual."""

SUGAR: dict[str, Sugar] = {}
"""Query-level functions expanded at parse time, by name (see :func:`sugar_macro`);
holds the forms of :mod:`qre.language.sugar` (registered below :func:`sugar_macro`)."""


def sugar_macro(name: str, fn: Callable[..., Query]) -> Sugar:
    """The macro for ``name(args)`` that calls ``fn`` with its arguments converted by
    ``fn``'s annotations: ``int``/``float`` take a constant term's value, an ``Op``
    annotation an operation, anything else the term itself. Arity and kinds are
    checked with errors at the offending argument.

    >>> from dt.terms import Cur
    >>> from qre.language.ast import Iter, Atom, BuiltinOp
    >>> SUGAR["total"] = sugar_macro("total", lambda t: Iter(Atom("_", t), 0, BuiltinOp("+")))
    >>> parse("total(cur.x)").query == Iter(Atom("_", Cur("x")), 0, BuiltinOp("+"))
    True
    >>> del SUGAR["total"]
    """
    params = list(inspect.signature(fn).parameters.values())
    kinds = [_param_kind(p.annotation) for p in params]
    usage = f"{name}({', '.join(p.name for p in params)})"

    def expand(args: tuple[SugarArg, ...], span: Span) -> Query:
        if len(args) != len(params):
            raise QreSyntaxError(f"{usage} takes {len(params)} argument(s), got {len(args)}",
                                 span=span)
        values = [_sugar_value(arg, kind, param.name, usage)
                  for arg, kind, param in zip(args, kinds, params, strict=True)]
        return fn(*values)

    return expand


def reads_as_term(text: str) -> bool:
    """Whether ``text`` parses as a TERM (the printer's test for ``f(q)`` of signals)."""
    try:
        lalr_parser().parse(text, start="term")
    except UnexpectedInput:
        return False
    return True


def _arity(name: str) -> int:
    """The number of arguments of the sugar form ``name``."""
    return len(inspect.signature(SUGAR_FORMS[name]).parameters)


def _param_kind(annotation: object) -> str:
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    if text in ("int", "float"):
        return text
    if text == "str":
        return "tag"
    if text.split(".")[-1] == "WindowSize":
        return "size"
    return "op" if text.split(".")[-1] in ("Op", "BuiltinOp", "Lambda") else "term"


def _sugar_value(arg: SugarArg, kind: str, param: str, usage: str) -> object:
    value = arg.value
    if kind == "size":
        return _window_size(value, param, usage, arg.span)
    if isinstance(value, WindowSize):
        raise QreSyntaxError(f"{usage}: {param} is a {'term' if kind == 'term' else kind}, "
                             "not a duration", span=arg.span)
    if kind == "op":
        if not isinstance(value, BuiltinOp | Lambda):
            raise QreSyntaxError(f"{usage}: {param} is an operation (+, *, min, max, fst, snd "
                                 "or a lambda)", span=arg.span)
        return value
    if isinstance(value, BuiltinOp | Lambda):
        raise QreSyntaxError(f"{usage}: {param} is a {'term' if kind == 'term' else 'number'}, "
                             "not an operation", span=arg.span)
    if kind == "tag":
        if not isinstance(value, Var):
            raise QreSyntaxError(f"{usage}: {param} is a tag name", span=arg.span)
        return value.name
    if isinstance(value, Var):
        raise QreSyntaxError(f"unknown variable {value.name!r}: a term argument reads only cur "
                             "and cur.FIELD (variables belong to lambdas)", span=arg.span)
    if kind == "term":
        return value
    if not isinstance(value, Const) or (kind == "int" and not float(value.value).is_integer()):
        what = "an integer" if kind == "int" else "a number"
        raise QreSyntaxError(f"{usage}: {param} must be {what}", span=arg.span)
    return int(value.value) if kind == "int" else value.value


def _window_size(value: object, param: str, usage: str, span: Span | None) -> WindowSize:
    """A sliding window's size: a duration as written (``2d``), or a positive whole
    number of events."""
    if isinstance(value, WindowSize):
        return value
    if isinstance(value, Const) and float(value.value).is_integer() and value.value >= 1:
        return WindowSize(int(value.value), events=True)
    raise QreSyntaxError(f"{usage}: {param} is a duration (2d, 10min) or a positive whole "
                         f"number of events", span=span)


SUGAR.update({name: sugar_macro(name, fn) for name, fn in SUGAR_FORMS.items()})


# --------------------------------------------------------------------------- entry point


def parse(text: str, functions: Mapping[str, UserFunction] | None = None) -> Program:
    """The :class:`~qre.language.ast.Program` of query ``text``; spans on every node.
    ``functions``: window functions given in Python, by name (``NAME(t)`` in
    ``aggregate(...)``, ``NAME_over(size, t)``).

    >>> from qre.language.printer import to_text
    >>> to_text(parse("let s = iter(atom(a, cur), 0, +);  s>=fill(s)&&!prev(s<s) # big"))
    'let s = iter(atom(a, cur), 0, +);\\ns >= fill(s) && !prev(s < s)'
    """
    if not isinstance(text, str):
        raise TypeError(f"query text must be a str, not {type(text).__name__}")
    if _BLANK.fullmatch(text):
        raise QreSyntaxError("empty query: the text has no query, only blanks and comments",
                             text, Span(1, 1, 1, 1))
    try:
        tree = lalr_parser().parse(text, start="start")
    except UnexpectedInput as err:
        raise syntax_error(text, err) from None
    try:
        return _Converter(text, functions or {}).program(tree)
    except RecursionError:  # a safety net: MAX_DEPTH should stop recursion long before
        raise QreSyntaxError("query nested too deeply", text, Span(1, 1, 1, 1)) from None


_WHOLE = re.compile(r"[0-9]+")

# Lark's common.WS, as the lexer skips it (not Python's \s, which also skips \v, \x85, …).
_BLANK = re.compile(r"(?:[ \t\f\r\n]|#[^\n]*)*")


# --------------------------------------------------------------------------- tree → AST


def _span(node: lark.Tree | lark.Token) -> Span:
    if isinstance(node, lark.Token):
        return Span(node.line or 1, node.column or 1, node.end_line or node.line or 1,
                    node.end_column or node.column or 1)
    meta = node.meta
    if meta.empty:  # cannot happen for the rules of grammar.lark; be safe anyway
        return Span(1, 1, 1, 1)
    return Span(meta.line, meta.column, meta.end_line, meta.end_column)


def _kind(tree: lark.Tree) -> str:
    return str(tree.data)


_QUERY_KINDS = frozenset({
    "atom", "eps", "or_", "split", "iter", "combine", "prefix_sum", "fill", "fill_with",
    "prev", "hist", "once", "call", "name", "paren_name", "paren", "boolop", "since",
    "compare", "arith", "not_", "aggregate", "matched", "matches", "match_rows", "join_rows",
    "fold",
    "literal",
    "prev_bounded", "hist_bounded", "once_bounded", "since_bounded", "pointwise",
})


class _Converter:
    """One pass over the parse tree; ``bound`` holds the let names seen so far."""

    def __init__(self, text: str, functions: Mapping[str, UserFunction]) -> None:
        self.text = text
        self.functions = functions
        self.user_forms = {f"{name}_over": sugar_macro(f"{name}_over", user_over(f))
                           for name, f in functions.items()}
        """``NAME_over(size, t)`` of each function given in Python."""
        self.bound: dict[str, Span] = {}
        self.heights: dict[str, int] = {}
        """Per let name, the levels its definition nests, let names counted in full."""
        self.reached = 0
        """The deepest level reached so far in the definition being read."""

    def reach(self, depth: int) -> None:
        """Record that the definition being read nests ``depth`` levels (at least)."""
        self.reached = max(self.reached, depth)

    def error(self, message: str, where: lark.Tree | lark.Token | Span) -> QreSyntaxError:
        span = where if isinstance(where, Span) else _span(where)
        return QreSyntaxError(message, self.text, span)

    # ----------------------------------------------------------------- program

    def program(self, tree: lark.Tree) -> Program:
        alphabet: tuple[str, ...] | None = None
        period: int | None = None
        tags: list[TagDecl] = []
        lets: list[Let] = []
        query: Query | None = None
        for child in tree.children:
            if isinstance(child, lark.Token):  # the optional final ";"
                continue
            kind = _kind(child)
            if kind == "alphabet_decl":
                alphabet = self.alphabet(child)
            elif kind == "period_decl":
                period = self.duration(child.children[0])
            elif kind == "tag_decl":
                tags.append(self.tag_decl(child, tags))
            elif kind == "let_decl":
                lets.append(self.let(child))
            else:
                query = self.query(child, 1)
        assert query is not None, "the grammar requires a final query"
        return Program(alphabet, tuple(lets), query, _span(tree), period, tuple(tags))

    def duration(self, tree: lark.Tree) -> int:
        """A duration ``NUMBER UNIT`` in nanoseconds: a positive whole number of ns."""
        ns = self.nanoseconds(tree)
        if ns < 1:
            raise self.error("a duration is a positive whole number of nanoseconds", tree)
        return ns

    def events(self, tree: lark.Tree) -> int:
        """A number of events: a positive whole number."""
        text = str(tree.children[0])
        if not _WHOLE.fullmatch(text) or int(text) < 1:
            raise self.error(f"a window of events is a positive whole number of them, not "
                             f"{text}", tree)
        return int(text)

    def nanoseconds(self, tree: lark.Tree) -> int:
        """``NUMBER UNIT`` in nanoseconds: a whole number of them."""
        number, unit = tree.children
        try:
            return duration_ns(str(number), str(unit))
        except ValueError as err:
            raise self.error(str(err), unit if str(unit) not in UNIT_NS else tree) from None

    def past_bound(self, tree: lark.Tree) -> PastBound:
        """``[lo, hi]`` of a bounded past operator: durations (nanoseconds, 0 allowed,
        a bare 0 too) or event counts; lo left out is 0, hi left out or ``inf`` is ∞."""
        sides = {_kind(t): t.children[0] for t in tree.children if isinstance(t, lark.Tree)}
        lo_tree, hi_tree = sides.get("past_lo"), sides.get("past_hi")
        ends = [t for t in (lo_tree, hi_tree) if t is not None]
        timed = any(_kind(t) == "past_duration" for t in ends)
        for end in ends:  # a bare 0 is also a duration (once[0, 10min])
            if timed and _kind(end) == "past_events" and float(str(end.children[0])) != 0:
                raise self.error("a bound is two durations (once[0s, 10min]) or two event "
                                 "counts (once[0, 10]), not one of each", end)
        if lo_tree is not None and _kind(lo_tree) == "past_inf":
            raise self.error("a bound starts at a finite distance (inf ends it)", lo_tree)
        lo = 0 if lo_tree is None else self.past_end(lo_tree)
        hi = None if hi_tree is None or _kind(hi_tree) == "past_inf" else self.past_end(hi_tree)
        if hi is not None and hi < lo:
            raise self.error("a bound [lo, hi] needs lo ≤ hi", tree)
        return PastBound(lo, hi, events=not timed)

    def past_end(self, tree: lark.Tree) -> int:
        """One end of a bound: nanoseconds of a duration, or a count of events."""
        number = str(tree.children[0])
        if _kind(tree) == "past_events":
            if not float(number).is_integer():
                raise self.error("an event count is a whole number", tree)
            return int(float(number))
        return self.nanoseconds(tree)

    def tag_decl(self, tree: lark.Tree, earlier: list[TagDecl]) -> TagDecl:
        name_token, *source, predicate = tree.children
        name = self.identifier(name_token, "a tag")
        if name == ANY_TAG or any(d.name == name for d in earlier):
            raise self.error(f"tag {name!r} cannot be derived here: it is the wildcard or "
                             "already derived", name_token)
        tag = self.identifier(source[0], "a tag") if source else ANY_TAG
        return TagDecl(name, tag, self.term(predicate, 1, "sugar"), _span(tree))

    def aggregate(self, tree: lark.Tree, depth: int) -> Aggregate:
        fn_tree, *rest = tree.children
        session = _kind(rest[0]) == "window_session"
        extents = [t for t in (rest[0].children if session else rest)
                   if _kind(t) in ("duration", "window_events")]
        counted = {_kind(t) == "window_events" for t in extents}
        if len(counted) > 1:
            raise self.error("a window's size and slide are both durations or both numbers "
                             "of events", tree)
        events = counted == {True}
        lengths = [self.events(t) if events else self.duration(t) for t in extents]
        tag_lists = [t for t in rest if _kind(t) == "tag_list"]
        tags = (tuple(self.identifier(t, "a tag") for t in tag_lists[0].children)
                if tag_lists else None)
        size, slide = lengths[0], lengths[-1]
        if _kind(fn_tree) == "window_matches":
            function = Matches(self.pattern(fn_tree.children[0], depth + 1), True,
                               _span(fn_tree))
        elif _kind(fn_tree) == "window_builtin":
            fname, *args = fn_tree.children
            terms = [self.term(a, depth + 1, "sugar") for a in args]
            p = None
            if len(terms) == 2:  # quantile(t, p): p a number
                if not isinstance(terms[1], Const):
                    raise self.error(f"{fname}(t, p): p is a number", args[1])
                p = terms[1].value
            try:
                function: WindowFunction | WindowFold | Matches = WindowFunction(
                    str(fname), terms[0] if terms else None, _span(fn_tree), p,
                    self.functions.get(str(fname)))
            except ValueError as err:
                raise self.error(str(err), fn_tree) from None
        else:
            function = self.fold(fn_tree, depth + 1, WindowFold)
        try:
            return Aggregate(function, size, slide, tags, _span(tree), session, events)
        except ValueError as err:  # a slide beyond the size, or not dividing it for a fold
            raise self.error(str(err), tree) from None

    def pattern(self, tree: lark.Tree, depth: int, *, top: bool = False) -> Pattern:
        """A CER pattern; ``not(...)`` only between two parts of a seq, or last in the
        ``top`` seq of a ``match(...)`` (a negation at the end)."""
        if depth > MAX_DEPTH:
            raise self.error(f"pattern nested too deeply (more than {MAX_DEPTH} levels)", tree)
        self.reach(depth)
        kind, kids, span, d = _kind(tree), tree.children, _span(tree), depth + 1
        contiguity, greedy = None, False
        if kids and isinstance(kids[0], lark.Tree) and _kind(kids[0]) == "modifiers":
            contiguity, greedy = self.modifiers(kids[0], repetition=kind != "p_seq")
            kids = kids[1:]
        if kind == "p_tag":
            return PatternTag(self.identifier(kids[0], "a tag"), span)
        if kind == "p_seq":
            return self.seq(kids, d, span, contiguity, top)
        if kind in ("p_or", "p_and"):
            node = PatternOr if kind == "p_or" else PatternAnd
            return node(self.pattern(kids[0], d), self.pattern(kids[1], d), span)
        if kind == "p_plus":
            return PatternPlus(self.pattern(kids[0], d), span, contiguity, greedy)
        if kind in ("p_star", "p_optional"):
            hi = None if kind == "p_star" else 1
            return PatternTimes(self.pattern(kids[0], d), 0, hi, span, contiguity, greedy)
        if kind == "p_times":
            return self.times(kids, d, span, contiguity, greedy)
        body, duration = self.pattern(kids[0], d), self.duration(kids[1])
        if kind == "p_gap":
            return PatternGap(body, duration, span)
        assert kind == "p_within"
        return PatternWithin(body, duration, span)

    def seq(self, kids: list[lark.Tree], depth: int, span: Span, contiguity: str | None,
            top: bool) -> PatternSeq:
        parts = [self.pattern(k, depth) if _kind(k) != "p_not" else PatternNot(
            tuple(self.identifier(t, "a tag") for t in k.children), _span(k)) for k in kids]
        for k, part in enumerate(parts):
            last = k == len(parts) - 1
            if isinstance(part, PatternNot) and (k == 0 or (last and not top) or isinstance(
                    parts[k - 1], PatternNot)):
                raise self.error("not(...) stands between two parts of a seq: it says that "
                                 "no such event comes between them (or last in the seq of "
                                 "a match(...), with within: none comes after a match)",
                                 kids[k])
        return PatternSeq(tuple(parts), span, contiguity)

    def modifiers(self, tree: lark.Tree, *, repetition: bool) -> tuple[str | None, bool]:
        """``[contiguity]``, and on a repetition ``[greedy]``, ``[reluctant]`` or both
        kinds (``[strict, greedy]``): the contiguity (None: the query's) and greediness."""
        contiguity: str | None = None
        mode: str | None = None
        modes = REPETITION_MODES if repetition else ()
        for token in tree.children:
            name = str(token)
            if name in CONTIGUITIES and contiguity is None:
                contiguity = name
            elif name in modes and mode is None:
                mode = name
            elif name in (*CONTIGUITIES, *modes):
                raise self.error(f"{name!r}: the brackets name one contiguity"
                                 f"{' and one of greedy, reluctant' if repetition else ''}",
                                 token)
            else:
                allowed = ", ".join((*CONTIGUITIES, *modes))
                hint = ("" if repetition or name not in REPETITION_MODES
                        else " (greedy and reluctant are for plus, star, optional and times)")
                raise self.error(f"{name!r} in brackets: one of {allowed}{hint}", token)
        return contiguity, mode == "greedy"

    def times(self, kids: list[lark.Tree | lark.Token], depth: int, span: Span,
              contiguity: str | None, greedy: bool) -> PatternTimes:
        """``times(p, lo[, hi])``: whole numbers, hi ≥ max(lo, 1), ``inf`` for no bound."""
        body, lo_token, *rest = kids
        counts = [lo_token, *(t.children[0] for t in rest)]
        for token in counts:
            if str(token) != "inf" and not _WHOLE.fullmatch(str(token)):
                raise self.error(f"times(p, lo, hi) counts whole numbers, not {token}", token)
        lo = int(str(lo_token))
        hi = lo if not rest else None if str(counts[1]) == "inf" else int(str(counts[1]))
        if hi is not None and (hi < lo or hi < 1):
            raise self.error(f"times(p, {lo}, {hi}): need lo ≤ hi and hi ≥ 1",
                             rest[0] if rest else lo_token)
        return PatternTimes(self.pattern(body, depth), lo, hi, span, contiguity, greedy)

    def match_rows(self, tree: lark.Tree, depth: int) -> MatchRows:
        """``match(p, options)``: each option once."""
        pattern_tree, *options = tree.children
        found: dict[str, lark.Tree] = {}
        for option in options:
            kind = _kind(option)
            if kind in found:
                raise self.error(f"option {kind[3:]} given twice", option)
            found[kind] = option
        within = found.get("mo_within")
        skip, skip_var = "no_skip", None
        if "mo_skip" in found:
            skip, *var = (str(t) for t in found["mo_skip"].children)
            if skip not in SKIPS:
                raise self.error(f"skip {skip}: one of {', '.join(SKIPS)}", found["mo_skip"])
            if bool(var) != (skip in ("to_first", "to_last")):
                raise self.error(f"skip {skip} {'takes a variable' if not var else 'takes none'}",
                                 found["mo_skip"])
            skip_var = self.identifier(found["mo_skip"].children[1], "a variable") if var else None
        strategy = "any"
        if "mo_strategy" in found:
            strategy = str(found["mo_strategy"].children[0])
            if strategy not in CONTIGUITIES:
                raise self.error(f"strategy {strategy}: one of {', '.join(CONTIGUITIES)}",
                                 found["mo_strategy"])
        measures = tuple(self.measure(t) for t in found["mo_measures"].children
                         ) if "mo_measures" in found else ()
        names = [m.name for m in measures]
        if len(set(names)) != len(names):
            raise self.error("two measures have one name", found["mo_measures"])
        return MatchRows(self.pattern(pattern_tree, depth, top=True),
                         None if within is None else self.duration(within.children[0]),
                         skip, skip_var, strategy, "mo_consume" in found, _span(tree),
                         measures, "mo_timeouts" in found)

    def measure(self, tree: lark.Tree) -> Measure:
        """``FUNCTION(VAR[.FIELD]) as NAME``."""
        function, _, *field, name = (str(t) for t in tree.children)
        if function not in MEASURES:
            raise self.error(f"measure {function}: one of {', '.join(MEASURES)}", tree)
        if name in MATCH_COLUMNS:
            raise self.error(f"measure name {name!r} is a column of every match row "
                             f"({', '.join(MATCH_COLUMNS)})", tree.children[-1])
        return Measure(function, self.identifier(tree.children[1], "a variable"),
                       field[0] if field else None, self.identifier(tree.children[-1],
                                                                    "a measure"), _span(tree))

    def fold(self, tree: lark.Tree, depth: int,
             node: type[WindowFold] | type[RunningFold]) -> WindowFold | RunningFold:
        """A fold (rule ``fold_args`` under ``tree``) as a window function or a query."""
        *inits, update, output = tree.children[0].children
        *params, _arrow = (c for c in update.children if not _kind_is(c, "term"))
        registers = [self.identifier(p, "a fold register") for p in params]
        if len(set(registers)) != len(registers):
            raise self.error("fold registers must be distinct", update)
        terms = [c for c in update.children if _kind_is(c, "term")]
        if len(terms) != len(registers) or len(inits) != len(registers):
            raise self.error(f"a fold has one initial value and one update term per register "
                             f"({len(registers)} register(s): {', '.join(registers)})", tree)
        updates = tuple(self.term(t, depth, "fold", registers) for t in terms)
        out = self.op(output, depth)
        assert isinstance(out, Lambda)
        if list(out.params) != registers:
            raise self.error(f"the output lambda takes the registers ({', '.join(registers)})",
                             output)
        return node(tuple(registers), tuple(self.init(i) for i in inits), updates, out.body,
                    _span(tree))

    def alphabet(self, tree: lark.Tree) -> tuple[str, ...]:
        seen: dict[str, lark.Token] = {}
        for token in tree.children:
            name = self.identifier(token, "a tag")
            if name == ANY_TAG:
                raise self.error(f"{ANY_TAG!r} is the wildcard tag (atom({ANY_TAG}, t) matches "
                                 "any event): it cannot be declared in an alphabet", token)
            if name in seen:
                first = seen[name]
                raise self.error(f"tag {name!r} is declared twice (first at line {first.line}, "
                                 f"column {first.column})", token)
            seen[name] = token
        return tuple(seen)

    def let(self, tree: lark.Tree) -> Let:
        token, body = tree.children
        name = self.identifier(token, "a query name")
        if name in self.bound:
            first = self.bound[name]
            raise self.error(f"{name!r} is already defined (at line {first.line}, column "
                             f"{first.column}); each let needs its own name", token)
        self.reached = 0
        query = self.query(body, 1)  # before binding: a let cannot refer to itself
        self.bound[name] = _span(token)
        self.heights[name] = self.reached
        return Let(name, query, _span(tree))

    def identifier(self, token: lark.Token, role: str) -> str:
        """A NAME token used as ``role``: not a keyword, not primed."""
        name = str(token)
        if name.endswith("'"):
            raise self.error(f"{name!r} cannot be {role}: only variables in terms are primed",
                             token)
        if name in KEYWORDS:
            raise self.error(f"{name!r} is a keyword and cannot be {role}", token)
        return name

    # ----------------------------------------------------------------- queries

    def query(self, tree: lark.Tree | lark.Token, depth: int) -> Query:
        """The query of ``tree`` at nesting ``depth``."""
        if not isinstance(tree, lark.Tree) or _kind(tree) not in _QUERY_KINDS:
            raise self.error(self.not_a_query(tree), tree)
        if depth > MAX_DEPTH:
            raise self.error(f"query nested too deeply (more than {MAX_DEPTH} levels, terms "
                             "included)", tree)
        self.reach(depth)
        kind, kids, span = _kind(tree), tree.children, _span(tree)
        d = depth + 1
        if kind in ("name", "paren_name"):
            return self.name(kids[0], depth)
        if kind == "paren":
            return self.query(kids[0], d)
        if kind == "atom":
            tag = self.identifier(kids[0], "a tag")
            return Atom(tag, self.term(kids[1], d, "atom"), span)
        if kind == "eps":
            return Eps(self.term(kids[0], d, "eps"), span)
        if kind == "or_":
            return Or(self.query(kids[0], d), self.query(kids[1], d), span)
        if kind == "split":
            return Split(self.query(kids[0], d), self.query(kids[1], d), self.op(kids[2], d),
                         span)
        if kind in ("iter", "prefix_sum"):
            node = Iter if kind == "iter" else PrefixSum
            return node(self.query(kids[0], d), self.init(kids[1]), self.op(kids[2], d), span)
        if kind == "combine":
            return self.combine(tree, d)
        if kind == "fold":
            return self.fold(tree, d, RunningFold)
        if kind == "literal":  # sugar: a number where a query stands is const(c)
            return replace(const(self.init(tree)), span=span)
        if kind in ("fill", "prev", "hist", "once"):
            node = {"fill": Fill, "prev": Prev, "hist": Hist, "once": Once}[kind]
            return node(self.query(kids[0], d), span)
        if kind == "fill_with":
            return FillWith(self.query(kids[0], d), self.query(kids[1], d), span)
        if kind == "not_":
            return Not(self.query(kids[1], d), span)
        if kind == "since":
            left, token, right = kids
            return Since(self.query(left, d), self.query(right, d), token.type == "SINCE", span)
        if kind in ("prev_bounded", "hist_bounded", "once_bounded"):
            bound, body = kids
            return BoundedPast(kind.removesuffix("_bounded"), (self.query(body, d),),
                               self.past_bound(bound), span)
        if kind == "since_bounded":
            left, _, bound, right = kids
            return BoundedPast("since", (self.query(left, d), self.query(right, d)),
                               self.past_bound(bound), span)
        if kind in ("compare", "boolop"):
            return self.binary(tree, d)
        if kind == "arith":
            left, token, right = kids
            return Arith(str(token), self.query(left, d), self.query(right, d), span)
        if kind == "pointwise":
            name, *args = kids
            return self.signal_function(tree, str(name), [self.query(a, d) for a in args])
        if kind == "aggregate":
            return self.aggregate(tree, d)
        if kind in ("matched", "matches"):
            return Matches(self.pattern(kids[0], d), kind == "matches", span)
        if kind == "match_rows":
            if depth > 1:
                raise self.error("match(...) is a whole query: its rows are matches, not "
                                 "values of each event", tree)
            return self.match_rows(tree, d)
        if kind == "join_rows":
            if depth > 1:
                raise self.error("join(...) is a whole query: its rows are pairs of events, "
                                 "not values of each event", tree)
            left, right, size, *slide = kids
            return JoinRows(self.identifier(left, "a tag"), self.identifier(right, "a tag"),
                            self.duration(size), self.duration(slide[0]) if slide else None,
                            span)
        assert kind == "call"
        return self.call(tree, d)

    def not_a_query(self, node: lark.Tree | lark.Token) -> str:
        kind = _kind(node) if isinstance(node, lark.Tree) else ""
        if kind in ("op_symbol", "lambda"):
            return "an operation cannot stand here: a query is expected"
        return "a query is expected here"

    def name(self, token: lark.Token, depth: int) -> Name:
        """A let-bound name at nesting ``depth``: its definition nests on from here."""
        name = self.identifier(token, "a query name")
        if name not in self.bound:
            raise self.error(self.undefined(name), token)
        self.nest_name(name, depth, token)
        return Name(name, _span(token))

    def nest_name(self, name: str, depth: int, where: lark.Token | Span) -> None:
        """Count ``name``'s definition as nested at ``depth`` (what substitution builds).

        Every stage after the parser (typing, the compiler, the printer, the oracle)
        walks the query with its names substituted, recursively; bounding that depth
        here is what keeps them clear of Python's recursion limit.
        """
        deepest = depth - 1 + self.heights[name]
        if deepest > MAX_DEPTH:
            raise self.error(
                f"query nested too deeply: {name!r} nests {self.heights[name]} levels and "
                f"stands at level {depth}, more than {MAX_DEPTH} levels together (a let-bound "
                f"name counts as deep as its definition, terms included); shorten the chain "
                f"of lets that build on each other", where)
        self.reach(deepest)

    def undefined(self, name: str) -> str:
        if name in BUILTIN_OPS:
            return (f"{name!r} is not defined: as an operation it belongs in the last argument "
                    "of split, iter, combine or prefix_sum")
        message = f"{name!r} is not defined"
        if self.bound:
            message += f" (defined so far: {', '.join(self.bound)})"
        return message + "; a name must be bound by an earlier let NAME = ...;"

    def binary(self, tree: lark.Tree, depth: int) -> Query:
        """A comparison or a connective; comparisons and <-> do not chain."""
        left, token, right = tree.children
        op = str(token)
        chains = (token.type == "CMP" and isinstance(left, lark.Tree)
                  and _kind(left) == "compare") or (
            op == "<->" and isinstance(left, lark.Tree) and _kind(left) == "boolop"
            and str(left.children[1]) == "<->")
        if chains:
            what = "comparisons" if token.type == "CMP" else "'<->'"
            raise self.error(f"{what} do not chain: add parentheses, as in (a {op} b) {op} c "
                             f"or a {op} (b {op} c)", token)
        node = Compare if token.type == "CMP" else BoolOp
        return node(op, self.query(left, depth), self.query(right, depth), _span(tree))

    def combine(self, tree: lark.Tree, depth: int) -> Combine:
        *queries, last = tree.children
        if isinstance(last, lark.Tree) and _kind(last) == "name" and str(
                last.children[0]) in BUILTIN_OPS:
            op: Op = BuiltinOp(str(last.children[0]), _span(last))
        elif isinstance(last, lark.Tree) and _kind(last) in ("op_symbol", "lambda"):
            op = self.op(last, depth)
        else:
            raise self.error("the last argument of combine must be an operation: +, *, min, "
                             "max, fst, snd or a lambda (x, y) -> TERM", last)
        if not queries:
            raise self.error("combine needs at least one query before its operation", tree)
        for arg in queries:
            if isinstance(arg, lark.Tree) and _kind(arg) in ("op_symbol", "lambda"):
                hint = ""
                if _kind(arg) == "lambda" and len(arg.children) == 3:
                    hint = ("; for an implication between queries drop the parentheses "
                            "around the left side")
                raise self.error("an operation can only be the last argument of combine"
                                 + hint, arg)
        args = tuple(self.query(q, depth) for q in queries)
        return Combine(args, op, _span(tree))

    def call(self, tree: lark.Tree, depth: int) -> Query:
        token, *args = tree.children
        fname = str(token)
        if fname in KEYWORDS:
            raise self.error(f"{fname!r} is a keyword and cannot be a function name", token)
        macro = SUGAR.get(fname) or self.user_forms.get(fname)
        if fname in SIGNAL_FUNCTIONS and (macro is None or len(args) != _arity(fname)):
            for arg in args:  # f(cur, …) is a term of the event, not a function of signals
                if _reads_cur(arg):
                    written = re.sub(r"\s+", " ", self.text[tree.meta.start_pos:
                                                            tree.meta.end_pos])
                    running = (f", or {fname}(t) for the running {fname}" if macro else "")
                    raise self.error(f"{fname}(...) of queries computes on signals, and cur "
                                     f"is not one: write the term in last(...): "
                                     f"last({written}){running}", arg)
            return self.signal_function(tree, fname,
                                        [self.query_argument(a, depth) for a in args])
        if macro is None:
            message = f"unknown query function {fname!r}"
            if fname in self.bound:
                message += f" ({fname} is a let-bound query: write it without arguments)"
            elif SUGAR:
                message += f"; known: {', '.join(sorted([*SUGAR, *self.user_forms]))}"
            if fname.endswith("_over"):
                message += (f" (a window function of your own: qre(..., functions="
                            f"{{{fname[:-5]!r}: fn}}))")
            raise self.error(message, token)
        values = tuple(self.sugar_arg(a, depth) for a in args)
        span = _span(tree)
        try:
            result = macro(values, span)
        except QreError as err:
            raise QreSyntaxError(err.message, self.text, err.span or span) from None
        except ValueError as err:
            raise QreSyntaxError(str(err), self.text, span) from None
        for name in _names(result):
            if name.name not in self.bound:
                raise self.error(self.undefined(name.name), name.span or span)
            # Where the expansion puts it is unknown: count it one level below the call.
            self.nest_name(name.name, depth + 1, name.span or span)
        # The expansion stands where the call is: later errors point at it.
        return result if result.span is not None else replace(result, span=span)

    def signal_function(self, tree: lark.Tree, fname: str, args: list[Query]) -> Query:
        """``f(q1, …)`` or ``pointwise(f, q1, …)`` of signals (issue 21)."""
        if fname not in SIGNAL_FUNCTIONS:
            raise self.error(f"pointwise takes a function of {', '.join(SIGNAL_FUNCTIONS)}, "
                             f"not {fname!r}", tree)
        if len(args) != SIGNAL_FUNCTIONS[fname]:
            params = ", ".join(f"q{k + 1}" for k in range(SIGNAL_FUNCTIONS[fname]))
            raise self.error(f"{fname}({params}) of signals takes {SIGNAL_FUNCTIONS[fname]} "
                             f"query argument(s), got {len(args)}", tree)
        return SignalFunction(fname, tuple(args), _span(tree))

    def query_argument(self, tree: lark.Tree, depth: int) -> Query:
        """An argument of ``f(...)``, read as a term by the grammar, read as a query: the
        text before it blanked, so that positions (and carets) stay those of the text."""
        start, end = tree.meta.start_pos, tree.meta.end_pos
        blanked = re.sub(r"[^\n]", " ", self.text[:start]) + self.text[start:end]
        try:
            parsed = lalr_parser().parse(blanked, start="query")
        except UnexpectedInput as err:
            raise syntax_error(self.text, err) from None
        return self.query(parsed, depth)

    def sugar_arg(self, tree: lark.Tree, depth: int) -> SugarArg:
        span = _span(tree)
        if _kind(tree) in ("op_symbol", "lambda"):
            return SugarArg(self.op(tree, depth), span)
        if _kind(tree) == "duration":
            return SugarArg(WindowSize(self.duration(tree), events=False), span)
        (expr,) = tree.children
        if isinstance(expr, lark.Tree) and str(expr.data).endswith("var"):
            name = str(expr.children[0])
            # a bare name: an operation (min, max, fst, snd) or a tag (is(fail))
            return SugarArg(BuiltinOp(name, span) if name in BUILTIN_OPS else Var(name), span)
        return SugarArg(self.term(tree, depth, "sugar"), span)

    # ----------------------------------------------------------------- operations

    def op(self, tree: lark.Tree, depth: int) -> Op:
        kind, kids = _kind(tree), tree.children
        if kind == "op_symbol":
            return BuiltinOp(str(kids[0]), _span(tree))
        if kind == "op_name":
            name = str(kids[0])
            if name not in BUILTIN_OPS:
                raise self.error(f"unknown operation {name!r}: an operation is +, *, min, max, "
                                 "fst, snd or a lambda (x, y) -> TERM", kids[0])
            return BuiltinOp(name, _span(tree))
        assert kind == "lambda"
        *params, _arrow, body = kids
        names: list[str] = []
        for token in params:
            name = self.identifier(token, "a lambda parameter")
            if name in names:
                raise self.error(f"lambda parameter {name!r} is repeated", token)
            names.append(name)
        return Lambda(tuple(names), self.term(body, depth + 1, "lambda", names), _span(tree))

    def init(self, tree: lark.Tree) -> float:
        tokens = [str(t) for t in tree.children]
        sign = -1.0 if tokens[0] == "-" else 1.0
        word = tokens[-1]
        value = {"inf": math.inf, "nan": math.nan, "true": 1.0, "false": 0.0}.get(word)
        return sign * (float(word) if value is None else value)

    # ----------------------------------------------------------------- terms

    def term(self, tree: lark.Tree, depth: int, where: str,
             params: list[str] | None = None) -> Term:
        """The term of ``tree`` (rule ``term``), checked for what ``where`` may read."""
        (expr,) = tree.children
        for node in _term_leaves(expr):
            problem = _forbidden(node, where, params or [])
            if problem:
                raise self.error(problem, node)
        try:
            term = term_from_tree(expr, self.text, depth)
        except TermSyntaxError as err:
            raise QreSyntaxError(err.message, self.text,
                                 Span(err.line, err.column, err.line, err.column)) from None
        self.reach(depth + _term_height(term) - 1)
        return term


def _term_height(term: Term) -> int:
    """Levels of a term (a leaf is 1), iteratively: terms may be deep."""
    height, stack = 0, [(term, 1)]
    while stack:
        node, level = stack.pop()
        height = max(height, level)
        stack.extend((child, level + 1) for child in node.children())
    return height


def _reads_cur(node: lark.Tree) -> bool:
    """Whether a call argument, read as a term, is a term of the event: cur outside every
    query call (``cur + 1``, ``max(cur, 1)``; not ``avg_last(2, cur)``)."""
    kind = _kind(node)
    if kind in ("term__cur", "term__cur_field"):
        return True
    if kind == "term__call":
        name, *args = node.children
        spec = OPS.get(str(name))
        if spec is None or spec.style != "call" or spec.arity != len(args):
            return False  # a query function (sugar, atom, ...): its cur is its own
    return any(_reads_cur(child) for child in node.children if isinstance(child, lark.Tree))


def _kind_is(node: lark.Tree | lark.Token, kind: str) -> bool:
    return isinstance(node, lark.Tree) and _kind(node) == kind


def _term_leaves(tree: lark.Tree) -> Iterator[lark.Tree]:
    """The var/cur nodes of a term tree in text order (iteratively: terms may be deep)."""
    stack: list[object] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, lark.Tree):
            kind = str(node.data).rpartition("__")[2]
            if kind in ("var", "cur", "cur_field"):
                yield node
            stack.extend(reversed(node.children))


def _forbidden(node: lark.Tree, where: str, params: list[str]) -> str | None:
    """Why ``node`` (a var or cur node) may not appear in a term of ``where``, or None."""
    kind = str(node.data).rpartition("__")[2]
    if kind != "var":
        if where == "eps":
            return "eps takes a constant term: it matches no event, so there is no cur"
        if where == "lambda":
            return ("a lambda combines the values of queries: its body reads its parameters, "
                    "not cur (read events inside atom)")
        return None
    text = str(node.children[0])
    if where == "fold":
        return None if text in params else (
            f"unknown variable {text!r}: a fold's update reads its registers "
            f"({', '.join(params)}) and cur")
    if where in ("atom", "sugar"):
        whose = "an atom's term" if where == "atom" else "a term argument"
        return (f"unknown variable {text!r}: {whose} reads only cur and cur.FIELD "
                "(variables belong to lambdas)")
    if where == "eps":
        return f"unknown variable {text!r}: eps takes a constant term"
    base = text.rstrip("'")
    if base != text and base in params:
        return f"{text!r}: lambda parameters are not primed"
    if text not in params:
        names = ", ".join(params)
        return f"unknown variable {text!r}: this lambda's parameters are {names}"
    return None


def _names(query: Query) -> Iterator[Name]:
    """Every Name node in ``query`` (iteratively)."""
    stack: list[object] = [query]
    while stack:
        node = stack.pop()
        if isinstance(node, Name):
            yield node
        elif isinstance(node, tuple):
            stack.extend(node)
        elif hasattr(node, "__dataclass_fields__") and not isinstance(node, Term):
            stack.extend(getattr(node, f.name) for f in fields(node))  # type: ignore[arg-type]
