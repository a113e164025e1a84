"""Tests of dt.symbolic: symbolic evaluation along tag strings, hash-consed normalized terms.

The oracle is the reference evaluator (Figure 25): the symbolic output terms
of a tag string, evaluated on the word's data, must give the reference's
outputs on every prefix, status and value; and every normalizing rewrite must
keep the value of a term on all the edge values (signed zeros, infinities, NaN).
"""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import arbitrary_dts, cyclic_dts, initial_vectors, terms, words

from dt.model import DT, Transition
from dt.reference import evaluate
from dt.symbolic import SYM_BOT, SYM_TOP, SymbolicEvaluator, TermTable, data_symbol, same_value
from dt.terms import Apply, Const, Cur, Var, evaluate_term
from dt.values import BOT, TOP

EDGE = [0.0, -0.0, 1.0, -1.0, 2.5, math.inf, -math.inf, math.nan, 1e308, 5e-324]
X, Y, Z = Var("x"), Var("y"), Var("z")


def _entry(table: TermTable, v) -> int:  # type: ignore[no-untyped-def]
    return SYM_BOT if v is BOT else SYM_TOP if v is TOP else table.const(v)


def _decode(table: TermTable, entry: int, assignment: dict[str, float]):  # type: ignore[no-untyped-def]
    if entry == SYM_BOT:
        return BOT
    if entry == SYM_TOP:
        return TOP
    return table.evaluate([entry], assignment)[0]


def _same(a, b) -> bool:  # type: ignore[no-untyped-def]
    if a is BOT or b is BOT or a is TOP or b is TOP:
        return a is b
    return same_value(a, b)


def _symbolic_outputs(dt: DT, x, word) -> list[tuple]:  # type: ignore[no-untyped-def]
    """Symbolic terms per prefix, evaluated on the word's data."""
    table = TermTable()
    ev = SymbolicEvaluator(dt, table)
    config = ev.initial([_entry(table, v) for v in x])
    configs = [config]
    for k, (tag, _) in enumerate(word, start=1):
        config = ev.step(config, tag, lambda field, k=k: table.symbol(data_symbol(k, field)))
        configs.append(config)
    assignment = {data_symbol(k, None): d for k, (_, d) in enumerate(word, start=1)}
    return [tuple(_decode(table, e, assignment) for e in ev.outputs(c)) for c in configs]


@given(st.data())
def test_symbolic_terms_evaluate_to_the_reference_outputs(data) -> None:  # type: ignore[no-untyped-def]
    dt = data.draw(arbitrary_dts())
    x = data.draw(initial_vectors(dt))
    word = data.draw(words(dt.alphabet))
    want = evaluate(dt, x, word)
    got = _symbolic_outputs(dt, x, word)
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        assert all(_same(a, b) for a, b in zip(g, w, strict=True)), (k, g, w)


@given(st.data())
def test_symbolic_terms_on_cyclic_dts(data) -> None:  # type: ignore[no-untyped-def]
    dt = data.draw(cyclic_dts())
    x = data.draw(initial_vectors(dt))
    word = data.draw(words(dt.alphabet, max_len=5))
    want = evaluate(dt, x, word)
    got = _symbolic_outputs(dt, x, word)
    for g, w in zip(got, want, strict=True):
        assert all(_same(a, b) for a, b in zip(g, w, strict=True))


@settings(max_examples=300)  # cheap: every op on edge values, folded and symbolic
@given(terms([X, Y, Z], allow_cur=False, max_leaves=6),
       st.tuples(*[st.sampled_from(EDGE)] * 3))
def test_normalization_keeps_the_value(term, values) -> None:  # type: ignore[no-untyped-def]
    env = dict(zip((X, Y, Z), values, strict=True))
    table = TermTable()
    node = table.from_term(term, lambda v: table.symbol(v.name), lambda f: -99)
    got = table.evaluate([node], {v.name: d for v, d in env.items()})[0]
    want = evaluate_term(term, env)
    assert same_value(got, want)
    # The same term with the values as constants: constant folding must agree too.
    folded = table.from_term(term.substitute({v: Const(d) for v, d in env.items()}),
                             lambda v: -99, lambda f: -99)
    assert table.node(folded)[0] == "c" and same_value(table.node(folded)[1], want)


def test_exact_rewrites_only() -> None:
    t = TermTable()
    x, y = t.symbol("x"), t.symbol("y")
    zero, mzero, one = t.const(0.0), t.const(-0.0), t.const(1.0)
    assert t.apply("add", (x, zero)) != x  # -0.0 + 0.0 is 0.0
    assert t.apply("add", (x, mzero)) == x
    assert t.apply("sub", (x, x)) != zero  # inf - inf is nan
    assert t.apply("min", (x, y)) != t.apply("min", (y, x))  # signed zeros
    assert t.apply("mul", (one, x)) == x
    assert t.apply("ge", (x, y)) == t.apply("le", (y, x))
    assert t.apply("neg", (t.apply("neg", (x,)),)) == x
    assert t.apply("if", (zero, x, y)) == y and t.apply("if", (t.const(math.nan), x, y)) == x
    xy, y1 = t.apply("add", (x, y)), t.apply("add", (y, one))
    assert t.apply("add", (xy, one)) != t.apply("add", (x, y1))  # not associative (rounding)
    assert t.const(math.nan) == t.const(-math.nan)
    assert t.apply("neg", (zero,)) == mzero  # folding keeps the sign of zero
    # np.minimum returns its second argument on equal inputs: not commutative on zeros
    assert t.apply("min", (zero, mzero)) == mzero and t.apply("min", (mzero, zero)) == zero
    assert t.const(0.0) != t.const(-0.0)


def test_dag_stays_small_where_the_tree_doubles() -> None:
    """x' := x + x on every a: the tree doubles per event, the DAG grows by one node."""
    d = DT(("a",), ("x",), ("x",), ("x",), (
        Transition("a", frozenset({X}), "x", Apply("add", (X, X))),))
    table = TermTable()
    ev = SymbolicEvaluator(d, table)
    config = ev.initial([table.symbol("x0")])
    for _ in range(200):
        config = ev.step(config, "a", lambda f: -99)
    assert len(table) < 210
    assert table.evaluate(list(config), {"x0": 1.0}) == [2.0 ** 200]


def test_long_chains_of_primed_copies_do_not_recurse() -> None:
    n = 3000
    states = tuple(f"q{k}" for k in range(n))
    trs = [Transition("a", frozenset(), "q0", Cur())]
    trs += [Transition("a", frozenset({Var(states[k - 1], True)}), states[k],
                       Apply("add", (Var(states[k - 1], True), Const(1.0)))) for k in range(1, n)]
    d = DT(("a",), states, (), (states[-1],), tuple(trs))
    table = TermTable()
    ev = SymbolicEvaluator(d, table)
    config = ev.step(ev.initial([]), "a", lambda f: table.symbol("d1"))
    assert table.evaluate(list(ev.outputs(config)), {"d1": 0.5}) == [0.5 + (n - 1)]
