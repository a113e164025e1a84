"""Tests of dt.value_equivalence: equivalence on statuses and values (issue 5, points 1 and 3).

Independent expectations: the reference evaluator run on random data words
(every prefix) for soundness of "proven", a second run of the table engine
on every counterexample, the optimizer (which preserves outputs exactly:
a compiled query and its optimization must be *proven* equivalent), and the
algebraic laws of QRE (seed 003, §5.3), which hold on every word.
"""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from query_strategies import base_queries, const_terms, ops, temporal_queries
from strategies import alphabets, arbitrary_dts, data_values, initial_vectors, terms

from codegen.optimize import optimize
from dt.model import DT, Transition
from dt.reference import evaluate
from dt.symbolic import same_value
from dt.terms import Apply, Const, Cur, Var, parse_term
from dt.value_equivalence import ValueEquivalence, value_equivalent
from dt.values import BOT, TOP, is_defined
from qre.api import qre
from qre.language import ast
from qre.language.compiler import compile_query
from qre.language.typing import check
from qre.runtime.monitor import Monitor

EDGE = [0.0, -0.0, 1.0, -1.0, 0.5, 3.0, 1e16, math.inf, -math.inf, math.nan]
edge_words = st.lists(st.tuples(st.sampled_from(("a", "b", "c")), st.sampled_from(EDGE)),
                      max_size=8)


def same(a, b) -> bool:  # type: ignore[no-untyped-def]
    if is_defined(a) and is_defined(b):
        return same_value(a, b)
    return a is b


def first_difference(a: DT, b: DT, xa, xb, word) -> int | None:  # type: ignore[no-untyped-def]
    out_a, out_b = evaluate(a, xa, word), evaluate(b, xb, word)
    for k, (ya, yb) in enumerate(zip(out_a, out_b, strict=True)):
        if not all(same(u, v) for u, v in zip(ya, yb, strict=True)):
            return k
    return None


def check_answer(r: ValueEquivalence, a: DT, b: DT, xa, xb, words) -> None:  # type: ignore[no-untyped-def]
    """A proof must survive every word; a counterexample must separate the outputs."""
    if r.counterexample is not None:
        c = r.counterexample
        word = list(zip(c.tags, c.data, strict=True))
        ya, yb = evaluate(a, xa, word)[-1], evaluate(b, xb, word)[-1]
        assert not same(ya[c.output], yb[c.output])
    if r.proven:
        for word in words:
            word = [(t, d) for t, d in word if t in a.alphabet]
            assert first_difference(a, b, xa, xb, word) is None, word


# --------------------------------------------------------------------------- random DTs


def mutate_term(dt: DT, draw) -> DT:  # type: ignore[no-untyped-def]
    """Replace one transition's term by another over the same sources: a *value* change."""
    ts = list(dt.transitions)
    assume(ts)
    k = draw(st.integers(0, len(ts) - 1))
    t = ts[k]
    term = draw(terms(sorted(t.sources, key=str), allow_cur=t.on not in ("init", "eps"),
                      max_leaves=3))
    ts[k] = Transition(t.on, t.sources, t.target, term)
    return DT(dt.alphabet, dt.states, dt.initial, dt.final, tuple(ts))


@st.composite
def value_pairs(draw):  # type: ignore[no-untyped-def]
    alphabet = draw(alphabets(1, 3))
    a = draw(arbitrary_dts(alphabet))
    kind = draw(st.sampled_from(("mutate", "optimize", "same")))
    b = mutate_term(a, draw) if kind == "mutate" else optimize(a) if kind == "optimize" else a
    x = draw(initial_vectors(a))
    return a, b, x


@settings(max_examples=120)
@given(value_pairs(), st.lists(edge_words, min_size=20, max_size=20))
def test_answers_are_sound_on_random_pairs(case, words) -> None:  # type: ignore[no-untyped-def]
    a, b, x = case
    r = value_equivalent(a, b, x, x, random_words=20)
    check_answer(r, a, b, x, x, words)
    if r.equivalent is None:  # not proven: none of the search's words may differ either
        assert r.bound >= 0 and r.random_words == 20


@given(arbitrary_dts(), st.data())
def test_optimized_dts_are_proven(dt, data) -> None:  # type: ignore[no-untyped-def]
    x = data.draw(initial_vectors(dt))
    r = value_equivalent(dt, optimize(dt), x, x)
    assert r.equivalent is True, r


@st.composite
def compiled(draw) -> DT:  # type: ignore[no-untyped-def]
    alphabet = draw(alphabets(2, 3))
    query = draw(st.one_of(base_queries(alphabet, depth=3), temporal_queries(alphabet, depth=2)))
    return compile_query(check(query, alphabet).query, alphabet).value


@given(compiled())
def test_compiled_queries_are_proven_equal_to_their_optimization(dt) -> None:  # type: ignore[no-untyped-def]
    r = value_equivalent(dt, optimize(dt))
    assert r.equivalent is True, r


# --------------------------------------------------------------------------- hand examples


def sum_dt(term: str) -> DT:
    """x' := TERM over x and cur on every a; x is initial and final."""
    return DT(("a",), ("x",), ("x",), ("x",), (
        Transition("a", frozenset({Var("x")}), "x", parse_term(term)),))


def test_commuted_sum_is_proven_and_a_product_is_refuted() -> None:
    a, b = sum_dt("x + cur"), sum_dt("cur + x")
    r = value_equivalent(a, b)
    assert r.equivalent is True and r.proven and r.counterexample is None
    assert "proven equal on every data word" in " ".join(r.summary())
    r = value_equivalent(a, sum_dt("x * cur"))
    assert r.equivalent is False and r.counterexample.found_by == "symbolic search"
    assert r.status.equivalent  # the statuses agree: only values separate them


def test_rounding_differences_are_real_differences() -> None:
    """(x + cur) + cur and x + (cur + cur) differ in float64; 0.1 style data shows it."""
    a = sum_dt("(x + cur) + 2 * cur")
    b = sum_dt("x + (cur + 2 * cur)")
    r = value_equivalent(a, b)
    assert r.equivalent is False
    c = r.counterexample
    word = list(zip(c.tags, c.data, strict=True))
    assert not same(evaluate(a, (0.0,), word)[-1][0], evaluate(b, (0.0,), word)[-1][0])


def test_signed_zero_matters() -> None:
    r = value_equivalent(sum_dt("x + cur"), sum_dt("x + cur"), (0.0,), (-0.0,))
    assert r.equivalent is False and r.counterexample.tags == ()
    assert r.counterexample.outputs == ((0.0,), (-0.0,))


def test_equal_values_beyond_the_proof_are_reported_as_tested() -> None:
    """x + cur + 0 equals x + cur here (the sum never is -0.0), but no exact rewrite shows it."""
    r = value_equivalent(sum_dt("x + cur"), sum_dt("x + cur + 0"), max_depth=5,
                         random_words=30)
    assert r.equivalent is None and not r.proven and r.counterexample is None
    assert r.bound == 5 and r.unresolved >= 1 and r.random_words == 30
    text = " ".join(r.summary())
    assert "length <= 5" in text and "30 random words" in text and "not proven" in text


def test_random_testing_finds_what_the_bounded_search_cannot_reach() -> None:
    """The outputs differ only once the sum exceeds 50: never at depth 0."""
    a = sum_dt("x + cur")
    b = sum_dt("if(x > 50, x + cur + 1, x + cur)")
    r = value_equivalent(a, b, max_depth=0, random_words=200, seed=1)
    assert r.equivalent is False and r.counterexample.found_by == "random testing"
    assert r.bound == 0


def test_status_difference_comes_with_zero_data() -> None:
    a = sum_dt("x + cur")
    b = DT(("a",), ("x",), ("x",), ("x",), ())
    r = value_equivalent(a, b)
    assert r.equivalent is False and r.counterexample.found_by == "statuses"
    # B has no transition: x is ⊥ after any event, while A's sum stays defined.
    assert (r.counterexample.tags, r.counterexample.data) == (("a",), (0.0,))
    assert "the statuses differ" in r.summary()[0]


def test_record_events() -> None:
    a = DT(("a",), ("x",), (), ("x",), (Transition("a", frozenset(), "x", parse_term("cur.p")),))
    b = DT(("a",), ("x",), (), ("x",), (Transition("a", frozenset(), "x", parse_term("cur.q")),))
    r = value_equivalent(a, b)
    assert r.equivalent is False
    (event,) = r.counterexample.data
    assert set(event) == {"p", "q"} and not same_value(event["p"], event["q"])
    plain = DT(("a",), ("x",), (), ("x",), (Transition("a", frozenset(), "x", Cur()),))
    with pytest.raises(ValueError, match="plain cur and the other record fields"):
        value_equivalent(a, plain)


def test_registers_of_the_same_shape_are_not_confused() -> None:
    """x and y start equal, then a gives x + cur and y - cur; b copies them and outputs x
    (first DT) or y (second). The copies have the same shape, so an invariant that forgot
    which class each old register is in would "prove" the outputs equal."""
    def dt(out: str) -> DT:
        x, y = Var("x"), Var("y")
        return DT(("a", "b"), ("x", "y", "o"), ("x", "y"), ("o",), (
            Transition("a", frozenset({x}), "x", Apply("add", (x, Cur()))),
            Transition("a", frozenset({y}), "y", Apply("sub", (y, Cur()))),
            Transition("b", frozenset({x}), "x", x),
            Transition("b", frozenset({y}), "y", y),
            Transition("b", frozenset({Var(out)}), "o", Var(out)),
        ))
    r = value_equivalent(dt("x"), dt("y"))
    assert r.equivalent is False and r.counterexample.tags == ("a", "b")
    assert value_equivalent(dt("x"), dt("x")).equivalent is True


def test_constant_registers_are_proven_per_configuration() -> None:
    """f := 1 on a, f := 2 on b (g is defined after b only, so each flag value has its own
    configuration); o := (previous f) > 0. Two DTs whose flags differ (1/2 vs 5/7) give
    the same o: proven by constant classes; but f itself differs after b."""
    def dt(one: float, two: float, out: str) -> DT:
        f, positive = Var("f"), Apply("gt", (Var("f"), Const(0.0)))
        return DT(("a", "b"), ("f", "g", "o"), (), (out,), (
            Transition("b", frozenset(), "g", Const(0.0)),
            Transition("a", frozenset(), "f", Const(float(one))),
            Transition("b", frozenset(), "f", Const(float(two))),
            Transition("a", frozenset({f}), "o", positive),
            Transition("b", frozenset({f}), "o", positive),
        ))
    assert value_equivalent(dt(1, 2, "o"), dt(5, 7, "o")).equivalent is True
    r = value_equivalent(dt(1, 2, "f"), dt(1, 7, "f"))
    assert r.equivalent is False and r.counterexample.tags == ("b",)
    r = value_equivalent(dt(1, 2, "f"), dt(1, 1, "f"))
    assert r.equivalent is False and r.counterexample.tags == ("b",)


def test_conflicts_are_exact() -> None:
    """x' := cur twice is ⊤ (d ⊔ d), whatever the values: not equal to x' := cur once."""
    once = DT(("a",), ("x",), (), ("x",), (Transition("a", frozenset(), "x", Cur()),))
    twice = DT(("a",), ("x",), (), ("x",), once.transitions * 2)
    r = value_equivalent(once, twice)
    assert r.equivalent is False and r.counterexample.outputs[1] == (TOP,)
    assert value_equivalent(twice, twice).equivalent is True
    undefined = DT(("a",), ("x",), ("x",), ("x",), (
        Transition("a", frozenset({Var("x")}), "x", Apply("add", (Var("x"), Const(1.0)))),))
    assert value_equivalent(undefined, undefined, (BOT,), (BOT,)).equivalent is True


# --------------------------------------------------------------------------- QRE laws


def dts(left: ast.Query, right: ast.Query, alphabet: tuple[str, ...]) -> tuple[DT, DT]:
    """Both queries compiled (unoptimized: the constructions themselves are compared)."""
    return tuple(compile_query(check(q, alphabet).query, alphabet).value  # type: ignore[return-value]
                 for q in (left, right))


ALPHABET = ("a", "b")
queries = base_queries(ALPHABET, depth=2)
SND, FST = ast.BuiltinOp("snd"), ast.BuiltinOp("fst")


def assert_proven(left: ast.Query, right: ast.Query) -> None:
    a, b = dts(left, right, ALPHABET)
    r = value_equivalent(a, b)
    assert r.equivalent is True, (r.summary(), r.counterexample)


@given(queries, queries)
def test_law_or_is_commutative(f, g) -> None:  # type: ignore[no-untyped-def]
    assert_proven(ast.Or(f, g), ast.Or(g, f))


@given(queries, queries, queries)
def test_law_or_is_associative(f, g, h) -> None:  # type: ignore[no-untyped-def]
    assert_proven(ast.Or(ast.Or(f, g), h), ast.Or(f, ast.Or(g, h)))


@given(queries, const_terms())
def test_law_eps_is_a_unit_of_split(f, c) -> None:  # type: ignore[no-untyped-def]
    assert_proven(ast.Split(ast.Eps(c), f, SND), f)
    assert_proven(ast.Split(f, ast.Eps(c), FST), f)


@given(queries, data_values, ops())
def test_law_iteration_unrolled_once(f, c, op) -> None:  # type: ignore[no-untyped-def]
    """iter(f, c, op) = or(eps(c), split(iter(f, c, op), f, op)), for f not matching ε
    (with ε ∈ L̄(f) the iteration has unboundedly many splits of every word)."""
    a, _ = dts(f, f, ALPHABET)
    assume(not is_defined_or_conflict_on_empty(a))
    it = ast.Iter(f, c, op)
    assert_proven(it, ast.Or(ast.Eps(Const(c)), ast.Split(it, f, op)))


@given(queries, ops())
def test_law_combine_with_a_projection(f, op) -> None:  # type: ignore[no-untyped-def]
    """combine(f, g, fst) = f when g has f's rate (here g = f with another op inside)."""
    assert_proven(ast.Combine((f, f), FST), f)


def is_defined_or_conflict_on_empty(dt: DT) -> bool:
    return evaluate(dt, (0.0,) * len(dt.initial), [])[0][0] is not BOT


# --------------------------------------------------------------------------- wrong rewrites

BAND = """let recent = fill_with(avg_last(5, cur), avg(cur));
           let bound = combine(avg(cur), std(cur), (m, s) -> m + K * s);
           recent > bound"""

WRONG = [
    # (left, right): each pair differs on some data word.
    ("split(atom(a, cur), atom(b, cur), (x, y) -> x - y)",
     "split(atom(a, cur), atom(b, cur), (x, y) -> y - x)"),
    ("iter(atom(a, cur), 0, +)", "iter(atom(a, cur), 1, +)"),
    ("iter(atom(a, cur), 0, (x, y) -> x - y)", "iter(atom(a, cur), 0, (x, y) -> y - x)"),
    ("iter(atom(a, cur), 0, +)", "or(eps(0), split(iter(atom(a, cur), 0, +), atom(a, cur), *))"),
    ("split(atom(a, cur), atom(b, cur), +)", "split(atom(a, cur), atom(b, cur), fst)"),
    ("combine(iter(atom(a, cur), 0, +), iter(atom(a, cur), 0, max), +)",
     "combine(iter(atom(a, cur), 0, max), iter(atom(a, cur), 0, max), +)"),
    ("prefix_sum(iter(or(atom(a, cur), atom(b, 0)), 0, snd), 0, +)",
     "prefix_sum(iter(or(atom(a, cur), atom(b, 0)), 0, snd), 0, max)"),
    ("once(fill_with(last(cur), eps(0)) > const(3))",
     "once(fill_with(last(cur), eps(0)) >= const(3))"),
    ("avg_last(3, cur)", "avg_last(4, cur)"),
    # A deviation band: separated only by a calm stretch and then a jump (plateau data).
    (BAND.replace("K", "2"), BAND.replace("K", "3")),
]


@pytest.mark.parametrize(("left", "right"), WRONG)
def test_wrong_rewrites_are_caught_with_a_replayed_counterexample(left, right) -> None:  # type: ignore[no-untyped-def]
    ma, mb = qre(left, ["a", "b"]), qre(right, ["a", "b"])
    r = value_equivalent(ma.unoptimized or ma.dt, mb.unoptimized or mb.dt)
    assert r.equivalent is False, r.summary()
    # Independently of the reference replay: the table engine on the optimized DTs.
    c = r.counterexample
    outs = [Monitor.run(m, list(c.tags), list(c.data), engine="table") if c.tags else None
            for m in (ma, mb)]
    if outs[0] is None:
        assert not same(c.outputs[0][c.output], c.outputs[1][c.output])
    else:
        (sa, va), (sb, vb) = ((o.status[-1], o.value[-1]) for o in outs)
        assert sa != sb or not same_value(float(va), float(vb)), (c, sa, va, sb, vb)


# --------------------------------------------------------------------------- exhaustive proofs


def _last_is(tag: str) -> str:
    return f"(fill_with(split(any_word(), atom({tag}, 1), snd), const(0)) > const(0))"


_formulas = st.recursive(
    st.sampled_from([_last_is("a"), _last_is("b")]),
    lambda inner: st.one_of(
        inner.map(lambda p: f"prev({p})"), inner.map(lambda p: f"once({p})"),
        inner.map(lambda p: f"hist({p})"), inner.map(lambda p: f"!{p}"),
        st.tuples(inner, inner, st.sampled_from(["&&", "||", "since", "wsince"])).map(
            lambda t: f"({t[0]} {t[2]} {t[1]})")),
    max_leaves=4)


def _all_words(alphabet: tuple[str, ...], length: int):  # type: ignore[no-untyped-def]
    for n in range(length + 1):
        yield from itertools.product(alphabet, repeat=n)


@settings(max_examples=40, deadline=None)
@given(_formulas, _formulas)
def test_boolean_monitors_are_decided_exhaustively(f, g) -> None:  # type: ignore[no-untyped-def]
    """Past-time formulas over "the last event is a/b" hold finitely many values, so the
    symbolic search meets every reachable configuration: always decided, and right on
    every tag string up to length 6 (the reference evaluator, one run per string)."""
    a, b = (qre(f"alphabet a, b; {q}").dt for q in (f, g))
    r = value_equivalent(a, b)
    assert r.equivalent is not None, r.summary()
    differs = any(first_difference(a, b, (0.0,) * len(a.initial), (0.0,) * len(b.initial),
                                   [(t, 0.0) for t in w]) is not None
                  for w in _all_words(("a", "b"), 6))
    if r.equivalent:
        assert r.proof in ("invariant", "exhaustive") and not differs
    else:
        assert len(r.counterexample.tags) > 6 or differs


def test_a_search_stopped_by_its_bound_proves_nothing() -> None:
    """count() < 5 and true agree on every string of length < 5, on all data; a search cut
    at length 3 must not call that a proof (random testing then finds the difference)."""
    a = qre("alphabet a; count() < const(5)").dt
    b = qre("alphabet a; const(1) > const(0)").dt
    r = value_equivalent(a, b, max_depth=3)
    assert r.bound == 3 and r.unresolved == 0 and not r.proven
    assert r.equivalent is False and r.counterexample.found_by == "random testing"
    r = value_equivalent(a, b, max_depth=3, random_words=0)
    assert r.equivalent is None and "length <= 3" in " ".join(r.summary())
    # Unbounded, the search reaches length 5 and finds it symbolically.
    r = value_equivalent(a, b)
    assert r.equivalent is False and r.counterexample.tags == ("a",) * 5
