"""AST → QRE-Past query text (seed 003, §5.3; docs/API.md, "Query text").

:func:`to_text` writes a :class:`~qre.language.ast.Program`, any query node, an
operation or a ``let`` as text that :func:`qre.language.parser.parse` reads back to an
equal AST (spans aside): ``parse(to_text(p)) == p``. Parentheses are minimal
for the precedence of ``qre/language/grammar.lark`` (loosest first: ``<->``, ``->``,
``||``, ``&&``, ``since``/``wsince``, comparisons, ``+ -``, ``* /``, ``!``), and present
where a chain would otherwise be read differently (``->`` is right-associative, the
others left-associative, comparisons and ``<->`` do not chain).

Layout: ``alphabet a, b;`` first, each ``let NAME = Q;`` on its own line, the
final query last; a space after every comma and around binary operators.
Terms print with ``str(term)`` (:mod:`dt.terms`), init values as term literals
(``-inf``, ``nan``, ``-0.0``).

A node that no text can express raises ``ValueError``: a name, tag or
parameter that is not an identifier or is a keyword (:data:`qre.language.parser.KEYWORDS`),
the wildcard tag ``_`` in an alphabet.
"""

from __future__ import annotations

import re

from dt.terms import Const

from .ast import (
    ANY_TAG,
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
    FoldBody,
    Hist,
    Iter,
    JoinRows,
    Lambda,
    Let,
    Matches,
    MatchRows,
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
    Split,
    TagDecl,
    WindowFunction,
    WindowSignal,
)
from .clock import format_duration
from .parser import KEYWORDS

__all__ = ["bound_text", "to_text"]

# Precedence levels, loosest first (as in grammar.lark); primaries bind tightest.
_IFF, _IMP, _OR, _AND, _SINCE, _CMP, _SUM, _PRODUCT, _UNARY, _PRIMARY = range(1, 11)
_CONNECTIVE_PREC = {"<->": _IFF, "->": _IMP, "||": _OR, "&&": _AND}
_ARITH_PREC = {"+": _SUM, "-": _SUM, "*": _PRODUCT, "/": _PRODUCT}

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def to_text(node: Program | Let | Query | Op) -> str:
    """Query text for ``node`` that parses back to an equal node.

    >>> from qre.language.parser import parse
    >>> print(to_text(parse("alphabet a;let s=iter(atom(a,cur),0,+);!(s>eps(3))&&(s)<s")))
    alphabet a;
    let s = iter(atom(a, cur), 0, +);
    !(s > eps(3)) && s < s
    """
    if isinstance(node, Program):
        lines = []
        if node.alphabet is not None:
            lines.append(f"alphabet {', '.join(_declared_tag(t) for t in node.alphabet)};")
        if node.period is not None:
            lines.append(f"period {format_duration(node.period)};")
        lines.extend(_tag_decl(d) for d in node.tags)
        lines.extend(to_text(let) for let in node.lets)
        lines.append(_query(node.query))
        return "\n".join(lines)
    if isinstance(node, Let):
        return f"let {_ident(node.name, 'name')} = {_query(node.query)};"
    if isinstance(node, BuiltinOp | Lambda):
        return _op(node)
    return _query(node)


def _ident(name: str, role: str) -> str:
    if not isinstance(name, str) or not _IDENTIFIER.fullmatch(name) or name in KEYWORDS:
        raise ValueError(f"{name!r} cannot be written as a {role} in query text: "
                         "it must be an identifier and not a keyword")
    return name


def _declared_tag(tag: str) -> str:
    if tag == ANY_TAG:
        raise ValueError(f"{tag!r} is the wildcard tag: it cannot be written in an alphabet")
    return _ident(tag, "tag")


def _tag_decl(d: TagDecl) -> str:
    source = "" if d.source == ANY_TAG else f"{_ident(d.source, 'tag')} where "
    return f"tag {_declared_tag(d.name)} = {source}{d.predicate};"


def _aggregate(q: Aggregate) -> str:
    f = q.function
    if isinstance(f, Matches):
        fn = _matches(f)
    elif isinstance(f, WindowFunction):
        args = [] if f.arg is None else [str(f.arg)]
        fn = f"{f.name}({', '.join(args + ([] if f.p is None else [_init(f.p)]))})"
    else:
        fn = _fold(f)
    extent = str if q.events else format_duration  # a number of events, or a duration
    args = [fn, f"session({format_duration(q.size)})" if q.session else extent(q.size)]
    if q.slide != q.size:
        args.append(extent(q.slide))
    if q.tags is not None:
        args.append(f"[{', '.join(_ident(t, 'tag') for t in q.tags)}]")
    return f"aggregate({', '.join(args)})"


def _fold(f: FoldBody) -> str:
    """A fold's text, the same for a window function and a running fold."""
    regs = ", ".join(_ident(r, "fold register") for r in f.registers)
    inits = ", ".join(_init(v) for v in f.init)
    updates = ", ".join(str(u) for u in f.update)
    return f"fold([{inits}], ({regs}) -> [{updates}], ({regs}) -> {f.output})"


def _pattern(p: Pattern | PatternNot) -> str:
    if isinstance(p, PatternTag):
        return _ident(p.tag, "tag")
    if isinstance(p, PatternNot):
        return f"not({' | '.join(_ident(t, 'tag') for t in p.tags)})"
    if isinstance(p, PatternSeq):
        return f"seq{_contiguity(p.contiguity)}({', '.join(_pattern(x) for x in p.parts)})"
    if isinstance(p, PatternOr | PatternAnd):
        word = "or" if isinstance(p, PatternOr) else "and"
        return f"{word}({_pattern(p.left)}, {_pattern(p.right)})"
    if isinstance(p, PatternPlus):
        return f"plus{_contiguity(p.contiguity, p.greedy)}({_pattern(p.body)})"
    if isinstance(p, PatternTimes):
        hi = "inf" if p.hi is None else str(p.hi)
        return f"times{_contiguity(p.contiguity, p.greedy)}({_pattern(p.body)}, {p.lo}, {hi})"
    if isinstance(p, PatternWithin | PatternGap):
        word = "within" if isinstance(p, PatternWithin) else "gap"
        return f"{word}({_pattern(p.body)}, {format_duration(p.duration)})"
    raise TypeError(f"not a pattern node: {p!r}")


def _contiguity(c: str | None, greedy: bool = False) -> str:
    """A node's brackets: its contiguity, and ``greedy`` for a greedy repetition."""
    names = [*([] if c is None else [c]), *(["greedy"] if greedy else [])]
    return f"[{', '.join(names)}]" if names else ""


def _match_rows(q: MatchRows) -> str:
    options = [] if q.within is None else [f"within {format_duration(q.within)}"]
    if q.skip != "no_skip":
        options.append(f"skip {q.skip}" + ("" if q.skip_var is None else f" {q.skip_var}"))
    if q.strategy != "any":
        options.append(f"strategy {q.strategy}")
    if q.consume:
        options.append("consume")
    if q.timeouts:
        options.append("timeouts")
    if q.measures:
        shown = ", ".join(f"{m.function}({m.var}{'' if m.field is None else '.' + m.field}) "
                          f"as {m.name}" for m in q.measures)
        options.append(f"measures [{shown}]")
    return f"match({', '.join([_pattern(q.pattern), *options])})"


def bound_text(bound: PastBound) -> str:
    """``[lo, hi]``: event counts, or durations (``inf`` for an open end)."""
    def end(value: int) -> str:
        return str(value) if bound.events else format_duration(value)

    return f"[{end(bound.lo)}, {'inf' if bound.hi is None else end(bound.hi)}]"


_PARTIAL_FORMS = {"avg": "avg_last({k}, {t})", "sum": "window({k}, {t}, +)",
                  "min": "window({k}, {t}, min)", "max": "window({k}, {t}, max)"}
"""The text of a partial window (:func:`qre.language.sugar.stored_last_k`)."""


def _window_signal(q: WindowSignal) -> str:
    """``NAME_over(size[, t][, p])``: the size a duration or a number of events; a partial
    window as the ``avg_last`` or ``window`` it stands for."""
    if q.partial:
        return _PARTIAL_FORMS[q.function].format(k=q.size.amount, t=q.arg)
    size = str(q.size.amount) if q.size.events else format_duration(q.size.amount)
    args = [size, *([] if q.arg is None else [str(q.arg)]),
            *([] if q.p is None else [_init(q.p)])]
    return f"{q.function}_over({', '.join(args)})"


def _matches(q: Matches) -> str:
    return f"{'matches' if q.count else 'matched'}({_pattern(q.pattern)})"


def _prec(q: Query) -> int:
    if isinstance(q, BoolOp):
        return _CONNECTIVE_PREC[q.op]
    if isinstance(q, Since) or (isinstance(q, BoundedPast) and q.op == "since"):
        return _SINCE
    if isinstance(q, Compare):
        return _CMP
    if isinstance(q, Arith):
        return _ARITH_PREC[q.op]
    if isinstance(q, Not):
        return _UNARY
    return _PRIMARY


def _at_least(q: Query, prec: int) -> str:
    """``q`` as an operand that must bind at least as tightly as ``prec``."""
    text = _query(q)
    return f"({text})" if _prec(q) < prec else text


def _init(value: float) -> str:
    return str(Const(float(value)))


def _op(op: Op) -> str:
    if isinstance(op, BuiltinOp):
        return op.symbol
    params = ", ".join(_ident(p, "lambda parameter") for p in op.params)
    return f"({params}) -> {op.body}"


def _query(q: Query) -> str:
    if isinstance(q, Name):
        return _ident(q.name, "query name")
    if isinstance(q, Atom):
        return f"atom({_ident(q.tag, 'tag')}, {q.term})"
    if isinstance(q, Eps):
        return f"eps({q.term})"
    if isinstance(q, Or):
        return f"or({_query(q.left)}, {_query(q.right)})"
    if isinstance(q, Split):
        return f"split({_query(q.left)}, {_query(q.right)}, {_op(q.op)})"
    if isinstance(q, Iter | PrefixSum):
        word = "iter" if isinstance(q, Iter) else "prefix_sum"
        return f"{word}({_query(q.body)}, {_init(q.init)}, {_op(q.op)})"
    if isinstance(q, Combine):
        # Only the last argument is read as an operation: a query named min stays a query.
        args = ", ".join(_query(a) for a in q.args)
        return f"combine({args}, {_op(q.op)})"
    if isinstance(q, Fill | Prev | Hist | Once):
        word = {Fill: "fill", Prev: "prev", Hist: "hist", Once: "once"}[type(q)]
        return f"{word}({_query(q.body)})"
    if isinstance(q, RunningFold):
        return _fold(q)
    if isinstance(q, Aggregate):
        return _aggregate(q)
    if isinstance(q, Matches):
        return _matches(q)
    if isinstance(q, MatchRows):
        return _match_rows(q)
    if isinstance(q, JoinRows):
        slide = "" if q.slide is None else f", {format_duration(q.slide)}"
        return f"join({q.left}, {q.right}, {format_duration(q.size)}{slide})"
    if isinstance(q, WindowSignal):
        return _window_signal(q)
    if isinstance(q, FillWith):
        return f"fill_with({_query(q.body)}, {_query(q.default)})"
    if isinstance(q, SignalFunction):
        from .parser import reads_as_term  # the parser reads f(args) as terms first

        args = [_query(a) for a in q.args]
        if all(reads_as_term(a) for a in args):
            return f"{q.name}({', '.join(args)})"
        return f"pointwise({q.name}, {', '.join(args)})"
    if isinstance(q, Not):
        return "!" + _at_least(q.body, _UNARY)
    if isinstance(q, Compare):
        # Comparisons do not chain: both operands bind tighter.
        return f"{_at_least(q.left, _SUM)} {q.op} {_at_least(q.right, _SUM)}"
    if isinstance(q, Arith):  # left-associative
        prec = _ARITH_PREC[q.op]
        return f"{_at_least(q.left, prec)} {q.op} {_at_least(q.right, prec + 1)}"
    if isinstance(q, Since):
        word = "since" if q.strong else "wsince"
        return f"{_at_least(q.left, _SINCE)} {word} {_at_least(q.right, _SINCE + 1)}"
    if isinstance(q, BoundedPast):
        if q.op == "since":
            left, right = q.operands
            return (f"{_at_least(left, _SINCE)} since{bound_text(q.bound)} "
                    f"{_at_least(right, _SINCE + 1)}")
        return f"{q.op}{bound_text(q.bound)}({_query(q.operands[0])})"
    if isinstance(q, BoolOp):
        prec = _CONNECTIVE_PREC[q.op]
        if q.op == "<->":  # does not chain
            left, right = prec + 1, prec + 1
        elif q.op == "->":  # right-associative
            left, right = prec + 1, prec
        else:  # left-associative
            left, right = prec, prec + 1
        return f"{_at_least(q.left, left)} {q.op} {_at_least(q.right, right)}"
    raise TypeError(f"not a query node: {q!r}")
