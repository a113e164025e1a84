"""Hypothesis strategies for QRE-Past ASTs (qre/language/ast.py; seed 003 §5.3, Figure 26).

Two flavours, chosen with ``wild``:

* ``wild=True`` (the default): everything the text syntax can express —
  every node kind, every term operation, odd but legal names (``min``,
  ``atomx``, ``since_``), record fields named like keywords (``cur.true``),
  special init values (``nan``, ``±inf``, ``-0.0``, subnormals). For syntax
  tests (parse/print round trip). Not well-typed in general.
* ``wild=False``: tags from :data:`strategies.TAGS`, constants from
  :data:`strategies.DATA`, the safe operations of :mod:`strategies`, plain
  ``cur`` — for random queries to run (still not guaranteed well-typed: filter
  with the type checker).

Atom tags may be the wildcard ``_`` (:data:`qre.language.ast.ANY_TAG`); alphabets never hold it.

In both flavours an operation has the arity its position needs (2 for split,
iter, prefix_sum; k for a k-ary combine), a lambda body reads only its
parameters, an atom term only ``cur``, an eps term is constant, and every
:class:`~qre.language.ast.Name` refers to a ``let`` bound earlier: every AST drawn here
can be printed and parsed back.
"""

from __future__ import annotations

import math
from dataclasses import fields, replace
from functools import cache

from hypothesis import strategies as st
from strategies import _SAFE_OPS, DATA, TAGS

from dt.terms import OPS, Apply, Const, Cur, Term, Var
from qre.language.ast import (
    ANY_TAG,
    ARITHMETIC,
    COMPARISONS,
    CONNECTIVES,
    SIGNAL_FUNCTIONS,
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
    Let,
    Name,
    Not,
    Once,
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
)
from qre.language.parser import KEYWORDS

__all__ = [
    "SPECIAL_FLOATS",
    "identifiers",
    "inits",
    "ops",
    "programs",
    "queries",
    "query_depth",
]

# Legal names that look like keywords, operations or term functions on purpose.
_TRICKY = ["min", "max", "fst", "snd", "atomx", "since_", "iter2", "letter", "curx", "nan_",
           "inf1", "prevs", "x", "_", "E", "e5", "abs", "if_"]

SPECIAL_FLOATS = [0.0, -0.0, 1.0, -1.0, 2.5, -3.0, 0.1, math.nan, math.inf, -math.inf, 1e300,
                  -1e-300, 5e-324, 1e16, -1e16, 123456789.125, 2.0**53 + 2]


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_"


@cache
def identifiers(wild: bool = True) -> st.SearchStrategy[str]:
    """Names for queries, tags and lambda parameters (never a keyword)."""
    if not wild:
        return st.sampled_from(["x", "y", "z", "u", "v", "w"])
    plain = st.builds(lambda first, rest: first + rest, st.sampled_from(_LETTERS),
                      st.text(_LETTERS + "0123456789", max_size=5))
    return st.one_of(plain, st.sampled_from(_TRICKY)).filter(lambda n: n not in KEYWORDS)


@cache
def _fields(wild: bool) -> st.SearchStrategy[str | None]:
    if not wild:
        return st.none()
    # A record field may be any identifier, keywords included (cur.true, cur.atom).
    return st.none() | identifiers() | st.sampled_from(sorted(KEYWORDS))


@cache
def _constants(wild: bool) -> st.SearchStrategy[Term]:
    if not wild:
        return st.builds(Const, st.sampled_from(DATA))
    return st.builds(Const, st.one_of(st.sampled_from(SPECIAL_FLOATS),
                                      st.floats(allow_nan=True, allow_infinity=True)))


@cache
def inits(wild: bool = True) -> st.SearchStrategy[float]:
    """Initial values of iter and prefix_sum."""
    if not wild:
        return st.sampled_from(DATA)
    return st.one_of(st.sampled_from(SPECIAL_FLOATS), st.floats())


def _apply(op: str):
    return lambda *args: Apply(op, args)


def _terms(leaves: st.SearchStrategy[Term], wild: bool, max_leaves: int = 5):
    names = sorted(OPS) if wild else _SAFE_OPS

    def extend(children):
        return st.one_of(*[st.builds(_apply(op), *[children] * OPS[op].arity) for op in names])

    return st.recursive(leaves, extend, max_leaves=max_leaves)


@cache
def _atom_terms(wild: bool) -> st.SearchStrategy[Term]:
    return _terms(st.one_of(_constants(wild), st.builds(Cur, _fields(wild))), wild)


@cache
def _eps_terms(wild: bool) -> st.SearchStrategy[Term]:
    return _terms(_constants(wild), wild)


# Lambda bodies are drawn over placeholder variables, renamed to the drawn parameters,
# so that one (cached) strategy serves every parameter list.
_SLOTS = tuple(Var(f"_slot{i}") for i in range(8))


def _make_lambda(params: list[str], body: Term) -> Lambda:
    return Lambda(tuple(params), body.rename(dict(zip(_SLOTS, map(Var, params), strict=False))))


@cache
def _lambdas(arity: int, wild: bool) -> st.SearchStrategy[Lambda]:
    body = _terms(st.one_of(_constants(wild), st.sampled_from(_SLOTS[:arity])), wild)
    params = st.lists(identifiers(wild), min_size=arity, max_size=arity, unique=True)
    return st.builds(_make_lambda, params, body)


@cache
def ops(arity: int = 2, wild: bool = True):
    """An operation of ``arity``: a builtin (binary only) or a lambda."""
    lambdas = _lambdas(arity, wild)
    if arity != 2:
        return lambdas
    return st.one_of(st.builds(BuiltinOp, st.sampled_from(["+", "*", "min", "max", "fst",
                                                            "snd"])), lambdas)


def _make_fold(registers: list[str], init: list[float], update: list[Term],
               output: Term) -> RunningFold:
    names = dict(zip(_SLOTS, map(Var, registers), strict=False))
    return RunningFold(tuple(registers), tuple(init[:len(registers)]),
                       tuple(u.rename(names) for u in update[:len(registers)]),
                       output.rename(names))


@cache
def _folds(k: int, wild: bool) -> st.SearchStrategy[RunningFold]:
    """Running folds of k registers: updates over the registers and cur, output over the
    registers (drawn over placeholder slots, as lambdas are)."""
    slots = st.sampled_from(_SLOTS[:k])
    update = _terms(st.one_of(_constants(wild), st.builds(Cur, _fields(wild)), slots), wild,
                    max_leaves=3)
    output = _terms(st.one_of(_constants(wild), slots), wild, max_leaves=3)
    return st.builds(_make_fold, st.lists(identifiers(wild), min_size=k, max_size=k, unique=True),
                     st.lists(inits(wild), min_size=k, max_size=k),
                     st.lists(update, min_size=k, max_size=k), output)


def queries(bound: tuple[str, ...] = (), *, tags: tuple[str, ...] | None = None,
            wild: bool = True, max_leaves: int = 10) -> st.SearchStrategy[Query]:
    """Queries of every node kind; names from ``bound``; tags from ``tags`` (default: any
    identifier when ``wild``, else :data:`strategies.TAGS`)."""
    shape = _queries(len(bound), tags, wild, max_leaves)
    if not bound:
        return shape
    return shape.map(lambda q: _rename(q, dict(zip(_refs(len(bound)), bound, strict=True))))


def _refs(n: int) -> tuple[str, ...]:
    return tuple(f"_ref{i}" for i in range(n))


def past_bounds():
    """Bounds of past operators: event counts, or durations (ns, 0 allowed)."""
    def bound(events: bool, lo: int, width: int | None) -> PastBound:
        scale = 1 if events else 1_000_000
        return PastBound(lo * scale, None if width is None else (lo + width) * scale, events)

    return st.builds(bound, st.booleans(), st.integers(0, 5),
                     st.one_of(st.none(), st.integers(0, 5)))


@cache
def _queries(n_bound: int, tags: tuple[str, ...] | None, wild: bool,
             max_leaves: int) -> st.SearchStrategy[Query]:
    """Queries whose names are the placeholders _ref0, _ref1, … (one strategy per shape)."""
    tag = st.sampled_from(tags) if tags else (identifiers() if wild else st.sampled_from(TAGS))
    leaves = [st.builds(Atom, tag, _atom_terms(wild)), st.builds(Eps, _eps_terms(wild)),
              st.one_of(*(_folds(k, wild) for k in (1, 2, 3)))]
    if n_bound:
        leaves.append(st.builds(Name, st.sampled_from(_refs(n_bound))))

    def extend(q):
        unary = [st.builds(node, q) for node in (Fill, Not, Prev, Hist, Once)]
        functions = st.sampled_from(sorted(SIGNAL_FUNCTIONS)).flatmap(
            lambda f: st.builds(SignalFunction, st.just(f),
                                st.tuples(*[q] * SIGNAL_FUNCTIONS[f])))
        combines = [st.builds(Combine, st.tuples(*[q] * k), ops(k, wild)) for k in (1, 2, 3, 4)]
        return st.one_of(
            st.builds(Or, q, q),
            st.builds(Split, q, q, ops(2, wild)),
            st.builds(Iter, q, inits(wild), ops(2, wild)),
            st.builds(PrefixSum, q, inits(wild), ops(2, wild)),
            *combines,
            st.builds(FillWith, q, q),
            st.builds(Compare, st.sampled_from(sorted(COMPARISONS)), q, q),
            st.builds(Arith, st.sampled_from(sorted(ARITHMETIC)), q, q),
            functions,
            st.builds(BoolOp, st.sampled_from(CONNECTIVES), q, q),
            st.builds(Since, q, q, st.booleans()),
            st.builds(BoundedPast, st.just("since"), st.tuples(q, q), past_bounds()),
            st.builds(BoundedPast, st.sampled_from(["prev", "hist", "once"]), st.tuples(q),
                      past_bounds()),
            *unary,
        )

    return st.recursive(st.one_of(*leaves), extend, max_leaves=max_leaves)


def _rename(node, names: dict[str, str]):
    """``node`` with every Name renamed through ``names``."""
    if isinstance(node, Name):
        return Name(names.get(node.name, node.name), node.span)
    if isinstance(node, tuple):
        return tuple(_rename(n, names) for n in node)
    if isinstance(node, _QUERY_TYPES):
        changes = {f.name: _rename(getattr(node, f.name), names) for f in fields(node)
                   if f.name != "span"}
        return replace(node, **changes)
    return node


@st.composite
def programs(draw, *, wild: bool = True, max_lets: int = 3, max_leaves: int = 10,
             tags: tuple[str, ...] | None = None) -> Program:
    """Programs: an optional alphabet, lets that refer to earlier lets, a final query."""
    # The wildcard tag "_" of atom(_, t) cannot be declared in an alphabet.
    declarable = (st.sampled_from(tags) if tags else identifiers(wild)).filter(
        lambda t: t != ANY_TAG)
    alphabet = draw(st.none() | st.lists(declarable, min_size=1, max_size=4,
                                         unique=True).map(tuple))
    names = draw(st.lists(identifiers(wild), max_size=max_lets, unique=True))
    lets = tuple(
        Let(name, draw(queries(tuple(names[:i]), tags=tags, wild=wild, max_leaves=max_leaves)))
        for i, name in enumerate(names))
    final = draw(queries(tuple(names), tags=tags, wild=wild, max_leaves=max_leaves))
    return Program(alphabet, lets, final)


_QUERY_TYPES = (Atom, Eps, Or, Split, Iter, Combine, PrefixSum, RunningFold, Fill, FillWith,
                Arith, SignalFunction, Compare, BoolOp, Not, Prev, Hist, Once, Since,
                BoundedPast, Name)


def query_depth(q: Query) -> int:
    """Nesting depth in query nodes (a leaf has depth 1)."""
    children = [getattr(q, f) for f in ("body", "left", "right", "default") if hasattr(q, f)]
    if isinstance(q, Combine | SignalFunction):
        children = list(q.args)
    if isinstance(q, BoundedPast):
        children = list(q.operands)
    return 1 + max((query_depth(c) for c in children if isinstance(c, _QUERY_TYPES)),
                   default=0)
