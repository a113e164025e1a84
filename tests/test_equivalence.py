"""Tests of dt.equivalence: status-level equivalence of DTs (seed 003, Theorem 5.3).

Expectations are computed independently of the pair search: hand-checked
examples (the restartable example of §5.2.2 and its non-restartable variant),
brute force over *all* tag strings up to a length L (the unit evaluator run
level by level on the tag tree, no deduplication of configurations), the
reference evaluator on random data (Theorem 5.2: statuses do not depend on
data), and the optimizer, which must preserve outputs exactly.
"""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from paper_examples import paper_counterexample, paper_example
from query_strategies import base_queries, temporal_queries
from strategies import alphabets, arbitrary_dts, data_values

from codegen.optimize import optimize
from dt.equivalence import (
    EquivalenceLimitError,
    StatusEquivalence,
    _replay,
    status_equivalent,
)
from dt.model import DT, EPS, INIT, Transition
from dt.projection import status_vector, unit_evaluator
from dt.reference import evaluate
from dt.terms import Var
from dt.values import BOT, TOP
from qre import examples
from qre.api import qre
from qre.language.compiler import compile_query
from qre.language.typing import check

L = 5  # brute-force depth: 3 tags give 364 strings

statuses = st.sampled_from((0, 1, 2))


def x_statuses(dt: DT):
    return st.tuples(*[statuses] * len(dt.initial))


# --------------------------------------------------------------------------- hand examples

V_I = Var("i")


def test_restartable_example_vs_variant():
    """After "a" both are defined; after "aa" only the variant is (the first lost i)."""
    r = status_equivalent(paper_example(), paper_counterexample())
    assert r == StatusEquivalence(False, ("a", "a"), ((0,), (1,)), r.explored)
    assert r.explored >= 3


def test_undefined_initial_makes_them_equivalent():
    r = status_equivalent(paper_example(), paper_counterexample(), (0,), (0,))
    assert r.equivalent and r.counterexample is None and r.statuses is None
    assert r.explored == 1  # everything stays ⊥: the initial pair is a fixpoint


def test_conflict_propagates_with_its_own_status():
    r = status_equivalent(paper_example(), paper_example(), (1,), (2,))
    assert (r.equivalent, r.counterexample, r.statuses) == (False, ("a",), ((1,), (2,)))


def test_empty_stream_can_differ():
    echo = DT(("a",), ("i",), ("i",), ("i",), ())
    r = status_equivalent(echo, echo, (1,), (0,))
    assert (r.equivalent, r.counterexample, r.statuses) == (False, (), ((1,), (0,)))


def test_duplicate_transition_is_a_conflict():
    """f' := i' twice gives ⊤ (d ⊔ d = ⊤ even for equal d): not equivalent to once."""
    once = paper_counterexample()
    twice = DT(once.alphabet, once.states, once.initial, once.final,
               (*once.transitions, once.transitions[1]))
    r = status_equivalent(once, twice)
    assert (r.counterexample, r.statuses) == (("a",), ((1,), (2,)))


def test_alphabet_order_does_not_matter():
    a = paper_example()
    b = DT(("b", "a"), a.states, a.initial, a.final, a.transitions)
    assert status_equivalent(a, b).equivalent
    assert status_equivalent(paper_counterexample(), b).counterexample == ("a", "a")


def test_shortest_counterexample_uses_sorted_tags():
    """Both "a" and "b" distinguish the DTs; ties are broken by tag name."""
    a = DT(("b", "a"), ("i",), ("i",), ("i",), ())
    b = DT(("a", "b"), ("i",), ("i",), ("i",), (
        Transition("a", frozenset({V_I}), "i", V_I), Transition("b", frozenset({V_I}), "i", V_I)))
    r = status_equivalent(a, b)
    assert (r.counterexample, r.statuses) == (("a",), ((0,), (1,)))


def test_interface_errors():
    a = paper_example()
    other = DT(("a", "c"), a.states, a.initial, a.final, a.transitions)
    with pytest.raises(ValueError, match=r"different alphabets.*only in the first: b"):
        status_equivalent(a, other)
    two = DT(a.alphabet, a.states, a.initial, ("f", "i"), a.transitions)
    with pytest.raises(ValueError, match="different numbers of outputs"):
        status_equivalent(a, two)
    with pytest.raises(ValueError, match="initial vector has 2 statuses"):
        status_equivalent(a, a, (1, 1))


def test_replay_rejects_wrong_claims():
    """The replay on the reference evaluator guards against a wrong or non-shortest answer."""
    a, b = paper_example(), paper_counterexample()
    _replay(a, b, (1,), (1,), ("a", "a"), ((0,), (1,)))  # the true answer passes
    with pytest.raises(AssertionError, match="does not replay"):
        _replay(a, b, (1,), (1,), ("a",), ((1,), (0,)))
    with pytest.raises(AssertionError, match="not shortest"):
        _replay(a, b, (1,), (1,), ("a", "a", "a"), ((0,), (1,)))


def test_max_pairs_is_an_explicit_unknown():
    a, b = paper_example(), paper_example()
    full = status_equivalent(a, b)
    assert full.equivalent and full.explored == 3  # (1,⊥) → (⊥,1) → (⊥,⊥)
    with pytest.raises(EquivalenceLimitError, match="undecided") as info:
        status_equivalent(a, b, max_pairs=2)
    assert info.value.explored == 3 and isinstance(info.value, ValueError)
    assert status_equivalent(a, b, max_pairs=3) == full


# --------------------------------------------------------------------------- brute force


def brute_first_difference(a: DT, b: DT, xa, xb, depth: int) -> tuple[int, set] | None:
    """The least k ≤ depth such that some tag string of length k separates the outputs,
    with all such strings; None if none does. Every string is run (no deduplication)."""
    ea, eb = unit_evaluator(a), unit_evaluator(b)
    level = [((), ea.initial(xa), eb.initial(xb))]
    for k in range(depth + 1):
        bad = {w for w, ca, cb in level if ea.outputs(ca) != eb.outputs(cb)}
        if bad:
            return k, bad
        level = [((*w, t), ea.step(ca, t), eb.step(cb, t))
                 for w, ca, cb in level for t in a.alphabet]
    return None


def with_outputs(dt: DT, k: int, draw) -> DT:
    """``dt`` with k distinct final states drawn from its states."""
    assume(len(dt.states) >= k)
    final = tuple(draw(st.lists(st.sampled_from(dt.states), min_size=k, max_size=k, unique=True)))
    return DT(dt.alphabet, dt.states, dt.initial, final, dt.transitions)


def mutate(dt: DT, draw) -> DT:
    """Drop, duplicate or reroute one transition: often a *late* difference."""
    ts = list(dt.transitions)
    assume(ts)
    k = draw(st.integers(0, len(ts) - 1))
    kind = draw(st.sampled_from(("drop", "dup", "retarget", "resource")))
    if kind == "resource":  # read another state (NFA DTs: move an edge's origin)
        t = ts[k]
        v = Var(draw(st.sampled_from(dt.states)), primed=t.on in (INIT, EPS))
        ts[k] = Transition(t.on, frozenset({v}), t.target, v)
    elif kind == "drop":
        del ts[k]
    elif kind == "dup":
        ts.append(ts[k])
    else:
        t = ts[k]
        ts[k] = Transition(t.on, t.sources, draw(st.sampled_from(dt.states)), t.term)
    return DT(dt.alphabet, dt.states, dt.initial, dt.final, tuple(ts))


@st.composite
def nfa_dts(draw, alphabet: tuple[str, ...]) -> DT:
    """An NFA read as a DT (proof of Theorem 5.3): an edge p -σ-> q is q' := p on σ.

    Statuses then count runs up to 2 (⊤), and differences can show late.
    """
    n = draw(st.integers(2, 5))
    states = tuple(f"q{k}" for k in range(n))
    edges = draw(st.lists(st.tuples(st.sampled_from(alphabet), st.sampled_from(states),
                                    st.sampled_from(states)), min_size=1, max_size=3 * n))
    transitions = tuple(Transition(tag, frozenset({Var(p)}), q, Var(p)) for tag, p, q in edges)
    final = tuple(draw(st.lists(st.sampled_from(states), min_size=1, max_size=2, unique=True)))
    return DT(alphabet, states, ("q0",), final, transitions)


@st.composite
def dt_pairs(draw):
    alphabet = draw(alphabets(1, 3))
    a = draw(st.one_of(arbitrary_dts(alphabet), nfa_dts(alphabet)))
    if draw(st.booleans()):
        b = mutate(a, draw)
    else:
        b = with_outputs(draw(arbitrary_dts(alphabet)), len(a.final), draw)
        if draw(st.booleans()):  # the same tags in another order
            b = DT(tuple(reversed(alphabet)), b.states, b.initial, b.final, b.transitions)
    xa = draw(x_statuses(a))
    xb = xa if draw(st.booleans()) and len(a.initial) == len(b.initial) else draw(x_statuses(b))
    return a, b, xa, xb


@st.composite
def nfa_pairs(draw):
    """An NFA DT and a one-edge mutation of it: differences are often several tags deep."""
    alphabet = draw(alphabets(2, 2))
    a = draw(nfa_dts(alphabet))
    return a, mutate(a, draw), (1,), (1,)


def detector(alphabet: tuple[str, ...], words: list[str]) -> DT:
    """f is defined (⊤ if several) after strings that end in one of ``words``: q0 loops on
    every tag, and a chain of fresh states from q0 to f spells each word."""
    states = ["q0", "f"]
    ts = [Transition(t, frozenset({Var("q0")}), "q0", Var("q0")) for t in alphabet]
    for k, word in enumerate(words):
        prev = "q0"
        for j, tag in enumerate(word):
            nxt = "f" if j == len(word) - 1 else f"s{k}_{j}"
            states += [nxt] if nxt != "f" else []
            ts.append(Transition(tag, frozenset({Var(prev)}), nxt, Var(prev)))
            prev = nxt
    return DT(alphabet, tuple(states), ("q0",), ("f",), tuple(ts))


@st.composite
def detector_pairs(draw):
    """Two word detectors: the first difference is often 2-4 tags deep and only in some
    branches of the tag tree (this is what catches a depth-first search)."""
    alphabet = draw(alphabets(2, 3))
    words = st.lists(st.text(alphabet="".join(alphabet), min_size=2, max_size=4),
                     min_size=1, max_size=3)
    return detector(alphabet, draw(words)), detector(alphabet, draw(words)), (1,), (1,)


def check_against_brute_force(a, b, xa, xb) -> StatusEquivalence:
    r = status_equivalent(a, b, xa, xb)
    brute = brute_first_difference(a, b, xa, xb, L)
    if brute is not None:
        k, bad = brute
        assert not r.equivalent
        assert len(r.counterexample) == k, (r.counterexample, sorted(bad))
        assert r.counterexample in bad
    elif not r.equivalent:
        assert len(r.counterexample) > L
    if not r.equivalent:
        ea, eb = unit_evaluator(a), unit_evaluator(b)
        got = (ea.evaluate(xa, r.counterexample)[-1], eb.evaluate(xb, r.counterexample)[-1])
        assert got == r.statuses and got[0] != got[1]
    return r


@given(dt_pairs())
def test_random_pairs_match_brute_force(case):
    check_against_brute_force(*case)


@given(nfa_pairs())
def test_nfa_pairs_match_brute_force(case):
    check_against_brute_force(*case)


@settings(max_examples=150)  # cheap; catches a depth-first search (tried)
@given(detector_pairs())
def test_detector_pairs_match_brute_force(case):
    check_against_brute_force(*case)


@given(dt_pairs(), st.data())
def test_counterexample_holds_for_any_data(case, data):
    """Theorem 5.2: the statuses after the counterexample do not depend on the data."""
    a, b, xa, xb = case
    r = status_equivalent(a, b, xa, xb)
    assume(not r.equivalent)

    def vector(xs):
        return tuple(BOT if s == 0 else TOP if s == 2 else data.draw(data_values) for s in xs)

    word = [(t, data.draw(data_values)) for t in r.counterexample]
    ya = evaluate(a, vector(xa), word)[-1]
    yb = evaluate(b, vector(xb), word)[-1]
    assert (status_vector(ya), status_vector(yb)) == r.statuses


def test_brute_force_sees_deep_differences():
    """A chain q0 → q1 → … → q4 shifted on every a: the variant differs only after 5 tags."""
    n = 5
    states = tuple(f"q{k}" for k in range(n))
    shift = tuple(Transition("a", frozenset({Var(states[k])}), states[k + 1], Var(states[k]))
                  for k in range(n - 1))
    a = DT(("a",), states, ("q0",), ("q4",), shift)
    late = DT(("a",), states, ("q0",), ("q4",),
              (*shift, Transition("a", frozenset({Var("q4")}), "q4", Var("q4"))))
    r = check_against_brute_force(a, late, (1,), (1,))
    assert r.counterexample == ("a",) * n and r.statuses == ((0,), (1,))
    assert brute_first_difference(a, late, (1,), (1,), n - 1) is None


def nfa(edges: str) -> DT:
    """An NFA DT from edges "p-a->q ..." (start q0, final f)."""
    states = ("q0", "p1", "r1", "r2", "f")
    transitions = []
    for edge in edges.split():
        p, rest = edge.split("-", 1)
        tag, q = rest.split("->")
        transitions.append(Transition(tag, frozenset({Var(p)}), q, Var(p)))
    return DT(("a", "b"), states, ("q0",), ("f",), tuple(transitions))


def test_shortest_is_not_the_first_found_depth_first():
    """Both "aa" and "bbb" separate the DTs; a depth-first search meets "bbb" first."""
    a = nfa("q0-a->p1 p1-a->f q0-b->r1 r1-b->r2 r2-b->f")
    b = nfa("q0-a->p1 q0-b->r1 r1-b->r2")
    r = check_against_brute_force(a, b, (1,), (1,))
    assert (r.counterexample, r.statuses) == (("a", "a"), ((1,), (0,)))
    r = status_equivalent(b, a)
    assert (r.counterexample, r.statuses) == (("a", "a"), ((0,), (1,)))


# --------------------------------------------------------------------------- the optimizer


@given(st.data())
def test_optimized_dts_are_equivalent(data):
    dt = data.draw(arbitrary_dts())
    x = data.draw(x_statuses(dt))
    r = status_equivalent(dt, optimize(dt), x, x)
    assert r.equivalent, r


@st.composite
def compiled(draw) -> DT:
    alphabet = draw(alphabets(2, 3))
    query = draw(st.one_of(base_queries(alphabet, depth=3), temporal_queries(alphabet, depth=2)))
    return compile_query(check(query, alphabet).query, alphabet).value


@given(compiled())
def test_compiled_queries_are_equivalent_to_their_optimization(dt):
    r = status_equivalent(dt, optimize(dt))
    assert r.equivalent, r
    assert r.explored >= 1


def test_last_five_example_unoptimized_vs_optimized():
    """examples/last_five.qre: the DT as the constructions build it and the optimized one
    (API.md ``qre check``)."""
    m = qre(examples.read_text("last_five.qre"))
    built = qre(examples.read_text("last_five.qre"), optimize=False).dt
    assert len(built.states) > len(m.dt.states)
    r = status_equivalent(built, m.dt)
    assert r.equivalent and r.explored >= 2
    # Dropping the optimized DT's last transition changes some status somewhere.
    broken = DT(m.dt.alphabet, m.dt.states, m.dt.initial, m.dt.final, m.dt.transitions[:-1])
    check_against_brute_force(built, broken, (1,), (1,))
