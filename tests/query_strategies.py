"""Random *well-typed* QRE-Past queries (hypothesis strategies), well-typed by construction.

* ``base_queries`` — every base construct; ``combine`` gets arguments with one
  shared skeleton (equal rates, different terms and ops); ``or`` may repeat a
  query (an ambiguous parse, hence ⊤); ``iter`` bodies may match ε.
* ``total_queries`` — base queries defined on every word (L = Σ*): iterations
  of "any event" (an ``or`` of one atom per tag), running folds (random
  registers, updates and output; sometimes the ``var``/``std`` sugar), their
  prefix sums and combinations. They feed ``prefix_sum`` and comparisons.
* ``top_queries`` — fill, fill_with, base queries, and (issue 21) the arithmetic and
  TERM functions of signals (``β1 op β2``, ``max(β1, β2)``) over top-level or temporal
  sides and comparisons of top-level sides, partial ones included.
* ``temporal_queries`` — comparisons of total top-level queries (fill_with with
  a total default), connectives, prev, hist, once, since, wsince, and their forms
  bounded by event counts (issue 21 §2; time bounds need timed words:
  tests/test_metric.py).
"""

from __future__ import annotations

from hypothesis import strategies as st
from strategies import data_values, terms

from dt.terms import Var
from qre.language import ast, sugar

OPS = st.sampled_from(["+", "*", "min", "max", "fst", "snd"]).map(ast.BuiltinOp)


def lambdas(arity: int):
    params = tuple(f"p{k}" for k in range(arity))
    return terms([Var(p) for p in params], allow_cur=False, max_leaves=3).map(
        lambda body: ast.Lambda(params, body))


def ops(arity: int = 2):
    return st.one_of(OPS, lambdas(arity)) if arity == 2 else lambdas(arity)


def atom_terms():
    return terms([], allow_cur=True, max_leaves=3)


def const_terms():
    return terms([], allow_cur=False, max_leaves=2)


def atom_tags(alphabet: tuple[str, ...]):
    """A tag of the alphabet, or the wildcard ``_`` (any tag)."""
    return st.sampled_from((*alphabet, ast.ANY_TAG))


def any_event(alphabet: tuple[str, ...], draw) -> ast.Query:
    """Any single event: the wildcard atom, or an unambiguous ``or`` of one atom per tag."""
    if draw(st.booleans()):
        return ast.Atom(ast.ANY_TAG, draw(atom_terms()))
    query: ast.Query = ast.Atom(alphabet[0], draw(atom_terms()))
    for tag in alphabet[1:]:
        query = ast.Or(query, ast.Atom(tag, draw(atom_terms())))
    return query


@st.composite
def running_folds(draw) -> ast.Query:
    """A running fold of 1–3 registers (rate Σ*), or the var/std sugar (4 registers)."""
    if draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from([sugar.var, sugar.std]))(draw(atom_terms()))
    k = draw(st.integers(1, 3))
    registers = tuple(f"r{j}" for j in range(k))
    variables = [Var(r) for r in registers]
    updates = tuple(draw(terms(variables, allow_cur=True, max_leaves=3)) for _ in registers)
    inits = tuple(draw(data_values) for _ in registers)
    output = draw(terms(variables, allow_cur=False, max_leaves=3))
    return ast.RunningFold(registers, inits, updates, output)


def _reterm(q: ast.Query, draw) -> ast.Query:
    """The same skeleton (hence the same rate) with fresh terms, inits and ops."""
    if isinstance(q, ast.RunningFold):
        return draw(running_folds())
    if isinstance(q, ast.Atom):
        return ast.Atom(q.tag, draw(atom_terms()))
    if isinstance(q, ast.Eps):
        return ast.Eps(draw(const_terms()))
    if isinstance(q, ast.Or):
        return ast.Or(_reterm(q.left, draw), _reterm(q.right, draw))
    if isinstance(q, ast.Split):
        return ast.Split(_reterm(q.left, draw), _reterm(q.right, draw), draw(ops()))
    if isinstance(q, ast.Iter):
        return ast.Iter(_reterm(q.body, draw), draw(data_values), draw(ops()))
    if isinstance(q, ast.PrefixSum):
        return ast.PrefixSum(_reterm(q.body, draw), draw(data_values), draw(ops()))
    assert isinstance(q, ast.Combine)
    args = tuple(_reterm(a, draw) for a in q.args)
    return ast.Combine(args, draw(ops(len(args))))


@st.composite
def base_queries(draw, alphabet: tuple[str, ...], depth: int = 4,
                 min_depth: int = 0) -> ast.Query:
    """Base queries of nesting depth at most ``depth`` and at least ``min_depth``."""
    if min_depth > 0:
        # Composite constructs only, until the first operand has reached min_depth.
        first = draw(base_queries(alphabet, max(depth - 1, min_depth - 1), min_depth - 1))
        sub = base_queries(alphabet, max(depth - 1, 0))
        kind = draw(st.sampled_from(["or", "split", "iter", "combine"]))
        if kind == "or":
            return ast.Or(first, draw(sub))
        if kind == "split":
            return ast.Split(first, draw(sub), draw(ops()))
        if kind == "iter":
            return ast.Iter(first, draw(data_values), draw(ops()))
        return ast.Combine((first, _reterm(first, draw)), draw(ops(2)))
    if depth <= 0:
        return draw(st.one_of(
            st.builds(ast.Atom, atom_tags(alphabet), atom_terms()),
            st.builds(ast.Eps, const_terms()),
        ))
    sub = base_queries(alphabet, depth - 1)
    kind = draw(st.sampled_from(["atom", "eps", "or", "or_same", "split", "iter", "combine",
                                 "prefix_sum", "fold"]))
    if kind == "fold":
        return draw(running_folds())
    if kind == "atom":
        return ast.Atom(draw(atom_tags(alphabet)), draw(atom_terms()))
    if kind == "eps":
        return ast.Eps(draw(const_terms()))
    if kind == "or":
        return ast.Or(draw(sub), draw(sub))
    if kind == "or_same":  # an ambiguous parse wherever q matches: ⊤
        q = draw(sub)
        return ast.Or(q, _reterm(q, draw))
    if kind == "split":
        return ast.Split(draw(sub), draw(sub), draw(ops()))
    if kind == "iter":
        return ast.Iter(draw(sub), draw(data_values), draw(ops()))
    if kind == "combine":
        first = draw(sub)
        k = draw(st.integers(1, 3))
        args = (first, *(_reterm(first, draw) for _ in range(k - 1)))
        return ast.Combine(args, draw(ops(k)))
    return ast.PrefixSum(draw(total_queries(alphabet, depth - 1)), draw(data_values),
                         draw(ops()))


@st.composite
def total_queries(draw, alphabet: tuple[str, ...], depth: int = 2) -> ast.Query:
    """Base queries defined (not ⊤) on every word."""
    kind = draw(st.sampled_from(["iter", "iter", "fold", "prefix_sum", "combine"] if depth > 0
                                else ["iter", "fold"]))
    if kind == "iter":
        return ast.Iter(any_event(alphabet, draw), draw(data_values), draw(ops()))
    if kind == "fold":
        return draw(running_folds())
    sub = total_queries(alphabet, depth - 1)
    if kind == "prefix_sum":
        return ast.PrefixSum(draw(sub), draw(data_values), draw(ops()))
    return ast.Combine((draw(sub), draw(sub)), draw(ops(2)))


@st.composite
def top_queries(draw, alphabet: tuple[str, ...], depth: int = 3,
                comparisons: bool = True) -> ast.Query:
    """``comparisons=False``: not a comparison itself (a comparison's side)."""
    kinds = ["base", "fill", "fill_with"]
    if depth > 1:
        kinds += ["arith", "function", "compare"] if comparisons else ["arith", "function"]
    kind = draw(st.sampled_from(kinds))
    if kind == "base":
        return draw(base_queries(alphabet, depth))
    if kind == "arith":
        sides = st.one_of(top_queries(alphabet, depth - 1), temporal_queries(alphabet, 0))
        return ast.Arith(draw(st.sampled_from(list(ast.ARITHMETIC))), draw(sides), draw(sides))
    if kind == "function":  # a TERM function of signals (issue 21)
        name = draw(st.sampled_from(sorted(ast.SIGNAL_FUNCTIONS)))
        sides = st.one_of(top_queries(alphabet, depth - 1), temporal_queries(alphabet, 0))
        return ast.SignalFunction(name, tuple(draw(sides)
                                              for _ in range(ast.SIGNAL_FUNCTIONS[name])))
    if kind == "compare":  # sides that may be partial: a partial boolean signal (issue 21)
        side = top_queries(alphabet, depth - 1, comparisons=False)
        return ast.Compare(draw(st.sampled_from(list(ast.COMPARISONS))), draw(side), draw(side))
    if kind == "fill":
        return ast.Fill(draw(base_queries(alphabet, depth - 1)))
    return ast.FillWith(draw(base_queries(alphabet, depth - 1)),
                        draw(base_queries(alphabet, depth - 1)))


@st.composite
def defined_top_queries(draw, alphabet: tuple[str, ...], depth: int = 2) -> ast.Query:
    """Top-level queries defined on every word: comparison operands."""
    if draw(st.booleans()):
        return draw(total_queries(alphabet, depth))
    return ast.FillWith(draw(base_queries(alphabet, depth)), draw(total_queries(alphabet, 1)))


@st.composite
def temporal_queries(draw, alphabet: tuple[str, ...], depth: int = 3) -> ast.Query:
    if depth <= 0:
        return ast.Compare(draw(st.sampled_from(list(ast.COMPARISONS))),
                           draw(defined_top_queries(alphabet, 1)),
                           draw(defined_top_queries(alphabet, 1)))
    sub = temporal_queries(alphabet, depth - 1)
    kind = draw(st.sampled_from(["compare", "bool", "not", "prev", "hist", "once", "since",
                                 "bounded"]))
    if kind == "compare":
        return ast.Compare(draw(st.sampled_from(list(ast.COMPARISONS))),
                           draw(defined_top_queries(alphabet, depth - 1)),
                           draw(defined_top_queries(alphabet, depth - 1)))
    if kind == "bool":
        return ast.BoolOp(draw(st.sampled_from(ast.CONNECTIVES)), draw(sub), draw(sub))
    if kind == "not":
        return ast.Not(draw(sub))
    if kind == "since":
        return ast.Since(draw(sub), draw(sub), draw(st.booleans()))
    if kind == "bounded":
        op = draw(st.sampled_from(ast.PAST_OPERATORS))
        lo = draw(st.integers(0, 3))
        bound = ast.PastBound(lo, draw(st.one_of(st.none(), st.integers(lo, lo + 3))), True)
        return ast.BoundedPast(op, tuple(draw(sub) for _ in range(1 + (op == "since"))), bound)
    return {"prev": ast.Prev, "hist": ast.Hist, "once": ast.Once}[kind](draw(sub))
