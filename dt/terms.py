"""Terms ``Tm[X ∪ {cur}]``: the expressions that compute a transition's value.

Seed 003, §5.1: a term is an expression over source variables and ``cur`` (the
current event's value) built from a signature of operations. Here the data
domain is float64 and the signature is the registry :data:`OPS`.

Node classes (immutable, hashable, plain data so codegen can flatten them):

* :class:`Const` — a float literal (``true``/``false`` are 1 and 0);
* :class:`Var` — a variable, optionally primed (``q'``: its value after this step);
* :class:`Cur` — ``cur``, or ``cur.FIELD`` for record-valued events;
* :class:`Apply` — an operation of :data:`OPS` applied to argument terms.

``size`` is the node count (the "length of description" of §5.1).
``str(term)`` prints the TERM syntax of docs/API.md with minimal
parentheses; :func:`parse_term` reads it back, and ``parse_term(str(t)) == t``.

Arithmetic follows IEEE 754 float64 semantics and never raises:
``x/0 = ±inf``, ``0/0 = nan``, ``x % 0 = nan``, ``%`` is floored (``np.mod``:
the result has the divisor's sign), ``sqrt(-1) = nan``, ``log(0) = -inf``,
``exp(1000) = inf``, ``pow(-8, 1/3) = nan``; ``min``/``max`` propagate NaN.
Comparisons return 1.0/0.0 (any comparison with NaN is 0, except ``!=``).
Boolean connectives and ``if`` treat any non-zero value, NaN included, as true.

``exp``, ``log`` and ``pow`` are the C library's (C99 Annex F: ``pow(-inf, 0.5) =
inf``, ``pow(-0.0, 0.5) = 0.0``), the functions the compiled kernels call
(:mod:`codegen.kernels`), so that every engine and the optimizer's constant folding
compute the same bits — except ``pow(x, 2)``, ``pow(x, 0.5)`` and ``pow(x, -1)``,
which are ``x * x``, ``sqrt(x)`` and ``1 / x`` (correctly rounded; see ``_pow``).
IEEE 754 does not fix the rounding of those functions, and other implementations
differ in the last bit: numpy's own SIMD ``exp``/``log``/``power`` (AVX-512 machines)
in a few percent of the cases, numpy's scalar ``power`` takes ``sqrt`` for an
exponent of 0.5 without C99's signs (``-0.0`` and NaN above) — none of them may
compute a term.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import ClassVar

import numpy as np

from .errors import EvaluationError, TermSyntaxError

__all__ = [
    "KEYWORDS",
    "MAX_TERM_DEPTH",
    "OPS",
    "Apply",
    "Const",
    "Cur",
    "EventValue",
    "OpSpec",
    "Term",
    "Var",
    "evaluate_term",
    "parse_term",
    "term_from_tree",
]

EventValue = float | Mapping[str, float]
"""The data of one event: a float (``cur``) or a record of named floats (``cur.f``)."""

KEYWORDS = frozenset({"cur", "true", "false", "inf", "nan"})

MAX_TERM_DEPTH = 200
"""Deepest nesting :func:`parse_term` accepts, so that every recursive walk of a
parsed term (size, printing, evaluation) stays far from Python's recursion limit."""
"""Words that cannot name a variable or a state."""


# --------------------------------------------------------------------------- operations


def _div(a: float, b: float) -> float:
    try:
        return a / b
    except ZeroDivisionError:
        if a == 0.0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)


def _mod(a: float, b: float) -> float:
    with np.errstate(all="ignore"):
        return float(np.mod(np.float64(a), np.float64(b)))


def _np1(fn: Callable[[np.float64], np.float64]) -> Callable[[float], float]:
    """An exactly specified numpy operation (floor, ceil) on one float, warnings off."""
    def apply(a: float) -> float:
        with np.errstate(all="ignore"):
            return float(fn(np.float64(a)))

    apply.__name__ = fn.__name__
    return apply


# The C library's functions, through Python's math module (which calls them for finite
# operands and treats the special ones by the same C99 Annex F), with the results that C
# returns where math raises instead: a NaN for a domain error, ±inf for a pole or an overflow.


def _odd_integer(y: float) -> bool:
    """``y`` is an odd integer (as C99 F.9.4.4 asks of a power's exponent)."""
    return math.fmod(abs(y), 2.0) == 1.0


def _pow(a: float, b: float) -> float:
    """C99 ``pow`` (F.9.4.4), as the C library rounds it — but for the exponents 2, 0.5
    and -1, whose result is one IEEE operation, correctly rounded: ``a * a``, ``√a`` (with
    C99's ``+0`` at ``-0`` and ``+inf`` at ``-inf``) and ``1 / a``. C libraries need not
    round those alike (glibc differs about once in a thousand), and LLVM substitutes the
    operation for a literal exponent: the definition takes it, so that every engine
    computes it and ``pow(x, 2)`` stays a multiplication (:func:`codegen.kernels._pow`)."""
    if b == 2.0:
        return a * a
    if b == 0.5:
        return math.inf if a == -math.inf else abs(_sqrt(a))
    if b == -1.0:
        return _div(1.0, a)
    try:
        return math.pow(a, b)
    except ValueError:  # ±0 to a negative power (a pole), or a negative base to a non-integer
        if a == 0.0:
            return math.copysign(math.inf, a) if _odd_integer(b) else math.inf
        return math.nan
    except OverflowError:  # |a^b| beyond the largest float: its sign is the base's if b is odd
        return -math.inf if a < 0.0 and _odd_integer(b) else math.inf


def _exp(a: float) -> float:
    """C99 ``exp`` (F.9.3.1)."""
    try:
        return math.exp(a)
    except OverflowError:
        return math.inf


def _log(a: float) -> float:
    """C99 ``log`` (F.9.3.7): ``log(±0) = -inf``, ``log(x < 0) = nan``."""
    try:
        return math.log(a)
    except ValueError:
        return -math.inf if a == 0.0 else math.nan


def _sqrt(a: float) -> float:
    """IEEE 754 ``squareRoot`` (exactly rounded everywhere): ``sqrt(-0.0) = -0.0``."""
    try:
        return math.sqrt(a)
    except ValueError:
        return math.nan


def _min(a: float, b: float) -> float:
    return float(np.minimum(a, b))


def _max(a: float, b: float) -> float:
    return float(np.maximum(a, b))


def _b(x: bool) -> float:
    return 1.0 if x else 0.0


@dataclass(frozen=True)
class OpSpec:
    """One operation of the signature.

    ``style`` says how it is written: ``"infix"`` (``symbol`` between the two
    arguments, binding with ``prec``; higher binds tighter), ``"prefix"``
    (``symbol`` before its one argument) or ``"call"`` (``name(args)``).
    """

    name: str
    arity: int
    fn: Callable[..., float]
    style: str
    symbol: str
    prec: int


# Precedence levels, loosest first; unary operators bind tighter than all infix ones.
_OR, _AND, _CMP, _ADD, _MUL, _UNARY, _ATOM = range(1, 8)

OPS: dict[str, OpSpec] = {
    spec.name: spec
    for spec in [
        OpSpec("or", 2, lambda a, b: _b(a != 0 or b != 0), "infix", "||", _OR),
        OpSpec("and", 2, lambda a, b: _b(a != 0 and b != 0), "infix", "&&", _AND),
        OpSpec("eq", 2, lambda a, b: _b(a == b), "infix", "==", _CMP),
        OpSpec("ne", 2, lambda a, b: _b(a != b), "infix", "!=", _CMP),
        OpSpec("lt", 2, lambda a, b: _b(a < b), "infix", "<", _CMP),
        OpSpec("le", 2, lambda a, b: _b(a <= b), "infix", "<=", _CMP),
        OpSpec("gt", 2, lambda a, b: _b(a > b), "infix", ">", _CMP),
        OpSpec("ge", 2, lambda a, b: _b(a >= b), "infix", ">=", _CMP),
        OpSpec("add", 2, lambda a, b: a + b, "infix", "+", _ADD),
        OpSpec("sub", 2, lambda a, b: a - b, "infix", "-", _ADD),
        OpSpec("mul", 2, lambda a, b: a * b, "infix", "*", _MUL),
        OpSpec("div", 2, _div, "infix", "/", _MUL),
        OpSpec("mod", 2, _mod, "infix", "%", _MUL),
        OpSpec("neg", 1, lambda a: -a, "prefix", "-", _UNARY),
        OpSpec("not", 1, lambda a: _b(a == 0), "prefix", "!", _UNARY),
        OpSpec("min", 2, _min, "call", "min", _ATOM),
        OpSpec("max", 2, _max, "call", "max", _ATOM),
        OpSpec("abs", 1, abs, "call", "abs", _ATOM),
        OpSpec("sqrt", 1, _sqrt, "call", "sqrt", _ATOM),
        OpSpec("exp", 1, _exp, "call", "exp", _ATOM),
        OpSpec("log", 1, _log, "call", "log", _ATOM),
        OpSpec("pow", 2, _pow, "call", "pow", _ATOM),
        OpSpec("floor", 1, _np1(np.floor), "call", "floor", _ATOM),
        OpSpec("ceil", 1, _np1(np.ceil), "call", "ceil", _ATOM),
        OpSpec("if", 3, lambda c, a, b: a if c != 0 else b, "call", "if", _ATOM),
        OpSpec("fst", 2, lambda a, b: a, "call", "fst", _ATOM),
        OpSpec("snd", 2, lambda a, b: b, "call", "snd", _ATOM),
    ]
}

_INFIX = {spec.symbol: spec for spec in OPS.values() if spec.style == "infix"}
_CALLS = {spec.symbol: spec for spec in OPS.values() if spec.style == "call"}


# --------------------------------------------------------------------------- nodes


class Term:
    """Base class of term nodes. Subclasses are frozen dataclasses."""

    __slots__ = ()
    prec: ClassVar[int] = _ATOM

    @property
    def size(self) -> int:
        """Number of nodes."""
        return 1 + sum(arg.size for arg in self.children())

    def children(self) -> tuple[Term, ...]:
        return ()

    def variables(self) -> frozenset[Var]:
        """The variables the term reads."""
        out: set[Var] = set()
        stack: list[Term] = [self]
        while stack:
            t = stack.pop()
            if isinstance(t, Var):
                out.add(t)
            stack.extend(t.children())
        return frozenset(out)

    def reads_cur(self) -> bool:
        """True if the term reads ``cur`` or a field of it."""
        return isinstance(self, Cur) or any(c.reads_cur() for c in self.children())

    def reads_plain_cur(self) -> bool:
        """True if the term reads ``cur`` itself (one float per event), not only fields."""
        if isinstance(self, Cur):
            return self.field is None
        return any(c.reads_plain_cur() for c in self.children())

    def fields(self) -> frozenset[str]:
        """The record fields read through ``cur.FIELD``."""
        if isinstance(self, Cur):
            return frozenset() if self.field is None else frozenset({self.field})
        return frozenset().union(*(c.fields() for c in self.children()))

    def rename(self, mapping: Mapping[Var, Var]) -> Term:
        """Replace variables by variables (constructions rename states)."""
        return self.substitute(mapping)

    def substitute(self, mapping: Mapping[Var, Term]) -> Term:
        """Replace variables by terms; variables not in ``mapping`` stay."""
        raise NotImplementedError

    def __str__(self) -> str:
        return _print(self)


@dataclass(frozen=True, eq=False, slots=True)
class Const(Term):
    """A float literal. Equality is bitwise, so ``nan == nan`` and ``-0.0 != 0.0``."""

    value: float

    def _key(self) -> str:
        return float(self.value).hex()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Const) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(("Const", self._key()))

    def substitute(self, mapping: Mapping[Var, Term]) -> Term:
        return self


@dataclass(frozen=True, slots=True)
class Var(Term):
    """A variable; ``primed`` marks a DT state's value after the current step."""

    name: str
    primed: bool = False

    def substitute(self, mapping: Mapping[Var, Term]) -> Term:
        return mapping.get(self, self)

    def __str__(self) -> str:
        return self.name + ("'" if self.primed else "")


@dataclass(frozen=True, slots=True)
class Cur(Term):
    """The current event's value (``cur``) or one of its fields (``cur.FIELD``)."""

    field: str | None = None

    def substitute(self, mapping: Mapping[Var, Term]) -> Term:
        return self


@dataclass(frozen=True, slots=True)
class Apply(Term):
    """An operation of :data:`OPS` applied to its arguments."""

    op: str
    args: tuple[Term, ...]

    def __post_init__(self) -> None:
        spec = OPS.get(self.op)
        if spec is None:
            raise ValueError(f"unknown operation {self.op!r}; known: {', '.join(sorted(OPS))}")
        if len(self.args) != spec.arity:
            raise ValueError(f"{self.op} takes {spec.arity} argument(s), got {len(self.args)}")

    def children(self) -> tuple[Term, ...]:
        return self.args

    def substitute(self, mapping: Mapping[Var, Term]) -> Term:
        return Apply(self.op, tuple(a.substitute(mapping) for a in self.args))


# --------------------------------------------------------------------------- evaluation


def evaluate_term(term: Term, env: Mapping[Var, float], cur: EventValue | None = None) -> float:
    """The value of ``term`` with defined variables ``env`` and event data ``cur``.

    Lifting to ⊥/⊤ happens at the transition level (§5.1, Equation 1): by the
    time a term is evaluated every source is defined. Raises
    :class:`~dt.errors.EvaluationError` if the term reads event data that
    ``cur`` does not have.
    """
    if isinstance(term, Const):
        return term.value
    if isinstance(term, Var):
        return env[term]
    if isinstance(term, Cur):
        return _read_cur(term, cur)
    assert isinstance(term, Apply)
    args = [evaluate_term(a, env, cur) for a in term.args]
    return float(OPS[term.op].fn(*args))


def _read_cur(term: Cur, cur: EventValue | None) -> float:
    if cur is None:
        raise EvaluationError(f"{term} read outside an event (initial transitions have no cur)")
    if term.field is None:
        if isinstance(cur, Mapping):
            names = ", ".join(sorted(cur)) or "none"
            raise EvaluationError(
                f"the term reads cur but events are records (fields: {names}); use cur.FIELD"
            )
        return float(cur)
    if not isinstance(cur, Mapping):
        raise EvaluationError(f"the term reads {term} but events carry a single value")
    if term.field not in cur:
        names = ", ".join(sorted(cur)) or "none"
        raise EvaluationError(f"the term reads {term} but events have no field {term.field!r} "
                              f"(fields: {names})")
    return float(cur[term.field])


# --------------------------------------------------------------------------- printing


def _prec(term: Term) -> int:
    if isinstance(term, Apply):
        return OPS[term.op].prec
    if isinstance(term, Const) and (term.value < 0 or math.copysign(1.0, term.value) < 0):
        return _UNARY
    return _ATOM


def _literal(value: float) -> str:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if value == 0.0 and math.copysign(1.0, value) < 0:
        return "-0.0"
    if value.is_integer() and abs(value) < 1e16:
        return str(int(value))
    return repr(value)


def _print(term: Term) -> str:
    if isinstance(term, Const):
        return _literal(term.value)
    if isinstance(term, Var):
        return str(term)
    if isinstance(term, Cur):
        return "cur" if term.field is None else f"cur.{term.field}"
    assert isinstance(term, Apply)
    spec = OPS[term.op]
    if spec.style == "call":
        return f"{spec.symbol}({', '.join(_print(a) for a in term.args)})"
    if spec.style == "prefix":
        (arg,) = term.args
        inner = _print(arg)
        # A negated literal needs parentheses: "-3" would read back as the constant -3.
        if _prec(arg) < _UNARY or (spec.symbol == "-" and isinstance(arg, Const)):
            inner = f"({inner})"
        return spec.symbol + inner
    left, right = term.args
    ltxt, rtxt = _print(left), _print(right)
    # Infix operators are left-associative; comparisons do not chain at all.
    if _prec(left) < spec.prec or (spec.prec == _CMP and _prec(left) == _CMP):
        ltxt = f"({ltxt})"
    if _prec(right) <= spec.prec:
        rtxt = f"({rtxt})"
    return f"{ltxt} {spec.symbol} {rtxt}"


# --------------------------------------------------------------------------- parsing


@cache
def _parser():  # type: ignore[no-untyped-def]
    import lark

    grammar = (Path(__file__).parent / "term.lark").read_text()
    return lark.Lark(grammar, parser="lalr", propagate_positions=False, maybe_placeholders=False)


def parse_term(text: str) -> Term:
    """Parse TERM text (docs/API.md) into a :class:`Term`.

    A minus sign directly in front of a numeric literal makes a negative
    constant (``-3`` is ``Const(-3.0)``; ``-(3)`` is ``neg`` of 3).

    >>> str(parse_term("i' +  cur*2"))
    "i' + cur * 2"
    """
    import lark

    try:
        tree = _parser().parse(text)
    except lark.exceptions.UnexpectedInput as err:
        raise _syntax_error(text, err) from None
    return term_from_tree(tree, text)


def term_from_tree(tree: object, text: str, depth: int = 0) -> Term:
    """The :class:`Term` of a lark parse tree of term.lark's ``expr``.

    Also accepts the tree of a grammar that ``%import``s ``expr`` (the query
    grammar of :mod:`qre.language.parser` does): lark prefixes the imported rule names
    with a namespace (``term__binop``), which is ignored here. ``text`` is the
    whole source the tree came from (for the error's caret); ``depth`` is how
    deeply the tree is already nested in that source, so that the
    :data:`MAX_TERM_DEPTH` limit bounds the nesting of the whole text.
    Raises :class:`~dt.errors.TermSyntaxError`.
    """
    try:
        return _to_term(tree, depth)
    except _BadNode as err:
        raise TermSyntaxError(err.message, text, err.line, err.column) from None


def _syntax_error(text: str, err: Exception) -> TermSyntaxError:
    import lark

    line = getattr(err, "line", -1)
    column = getattr(err, "column", -1)
    if isinstance(err, lark.exceptions.UnexpectedCharacters):
        what = f"unexpected character {text[err.pos_in_stream]!r}"
    elif isinstance(err, lark.exceptions.UnexpectedEOF) or (
        isinstance(err, lark.exceptions.UnexpectedToken) and err.token.type == "$END"
    ):
        what = "unexpected end of term"
        lines = text.split("\n")  # as the lexer counts lines (see SourceError)
        line, column = len(lines), len(lines[-1].rstrip("\r")) + 1
    else:
        assert isinstance(err, lark.exceptions.UnexpectedToken)
        what = f"unexpected {str(err.token)!r}"
    expected = sorted(getattr(err, "expected", None) or getattr(err, "allowed", None) or [])
    if expected:
        shown = ", ".join(_TOKEN_NAMES.get(e, e) for e in expected[:8])
        what += f"; expected one of: {shown}"
    if line < 1:
        line, column = 1, 1
    return TermSyntaxError(what, text, line, column)


_TOKEN_NAMES = {
    "NAME": "a name", "NUMBER": "a number", "LPAR": "'('", "RPAR": "')'", "COMMA": "','",
    "MINUS": "'-'", "BANG": "'!'", "CMP_OP": "a comparison", "ADD_OP": "'+' or '-'",
    "MUL_OP": "'*', '/' or '%'", "OROR": "'||'", "AMPAMP": "'&&'", "CUR": "'cur'",
    "TRUE": "'true'", "FALSE": "'false'", "INF": "'inf'", "NAN": "'nan'", "DOT": "'.'",
    "$END": "end of term",
}


class _BadNode(Exception):
    def __init__(self, message: str, token: object) -> None:
        self.message = message
        self.line = getattr(token, "line", 1) or 1
        self.column = getattr(token, "column", 1) or 1


def _to_term(tree: object, depth: int = 0) -> Term:
    """Bottom-up conversion of a lark tree (see term.lark) to a Term."""
    import lark

    if depth > MAX_TERM_DEPTH:
        raise _BadNode(f"term nested more than {MAX_TERM_DEPTH} levels deep", _locate(tree))

    if not isinstance(tree, lark.Tree):
        raise AssertionError(f"unexpected parse node {tree!r}")
    kind, kids = _kind(tree), tree.children
    if kind == "number":
        return Const(float(kids[0]))
    if kind in ("true", "false", "inf", "nan"):
        return Const({"true": 1.0, "false": 0.0, "inf": math.inf, "nan": math.nan}[kind])
    if kind == "cur":
        return Cur()
    if kind == "cur_field":
        return Cur(_plain_name(kids[0]))
    if kind == "var":
        name = str(kids[0])
        primed = name.endswith("'")
        base = name[:-1] if primed else name
        if base in KEYWORDS:
            raise _BadNode(f"{base!r} is a keyword, not a variable", kids[0])
        return Var(base, primed)
    if kind == "paren":
        return _to_term(kids[0], depth + 1)
    if kind == "neg":
        (child,) = kids
        if isinstance(child, lark.Tree) and _kind(child) in ("number", "inf"):
            return Const(-_to_term(child, depth + 1).value)  # type: ignore[attr-defined]
        return Apply("neg", (_to_term(child, depth + 1),))
    if kind == "not_":
        return Apply("not", (_to_term(kids[0], depth + 1),))
    if kind in ("or_", "and_"):
        return Apply(kind[:-1], (_to_term(kids[0], depth + 1), _to_term(kids[-1], depth + 1)))
    if kind in ("cmp", "binop"):
        left, op, right = kids
        return Apply(_INFIX[str(op)].name, (_to_term(left, depth + 1), _to_term(right, depth + 1)))
    if kind == "call":
        fname = _plain_name(kids[0])
        spec = _CALLS.get(fname)
        if spec is None:
            known = ", ".join(sorted(_CALLS))
            raise _BadNode(f"unknown function {fname!r} (known: {known})", kids[0])
        args = tuple(_to_term(k, depth + 1) for k in kids[1:])
        if len(args) != spec.arity:
            raise _BadNode(f"{fname} takes {spec.arity} argument(s), got {len(args)}", kids[0])
        return Apply(spec.name, args)
    raise AssertionError(f"unexpected parse node {kind}")


def _kind(tree: object) -> str:
    """The rule (alias) name of a node; an importing grammar's namespace is dropped
    ("term__binop" is "binop")."""
    return str(tree.data).rpartition("__")[2]  # type: ignore[attr-defined]


def _locate(tree: object) -> object:
    """Something with ``line``/``column`` for ``tree``: its own position when the
    parser recorded positions (propagate_positions), else its leftmost token."""
    meta = getattr(tree, "_meta", None)  # lark creates meta lazily: do not trigger it
    if meta is not None and not meta.empty:
        return meta
    stack = [tree]
    while stack:  # iteratively: the tree may be very deep
        node = stack.pop()
        children = getattr(node, "children", None)
        if children is None:
            return node
        stack.extend(reversed(children))
    return None


def _plain_name(token: object) -> str:
    name = str(token)
    if name.endswith("'"):
        raise _BadNode(f"{name!r}: only variables can be primed", token)
    return name
