"""Acyclic DTs ↔ reversed alternating automata, and the gap to DFAs (seed 003, §5.4.2).

Oracles: the r-AFA's own run (Boolean formulas over the previous valuation)
and the DT's status evaluator (dt.projection, the unit projection of Theorem
5.2) — L̄ after every prefix — on random r-AFAs with negation and random
acyclic DTs; the family's language against its definition; the minimal DFA's
size from qre.language.automata (Moore's minimization).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import arbitrary_dts

from dt.afa import (
    FALSE,
    RAFA,
    TRUE,
    Both,
    Either,
    Lit,
    Neg,
    dt_from_rafa,
    formula_size,
    nth_from_end,
    nth_from_end_dt,
    rafa_from_dt,
)
from dt.errors import PreconditionError
from dt.model import DT, EPS, Transition
from dt.projection import unit_evaluate
from dt.terms import Const, Var
from qre.language.automata import dt_language, equivalent

AB = ("a", "b")


def accepted(dt: DT, word) -> list[bool]:  # type: ignore[no-untyped-def]
    """L̄(A) after every prefix: the final state is not ⊥."""
    return [out[0] != 0 for out in unit_evaluate(dt, (), word)]


def formulas(states: tuple[str, ...]):  # type: ignore[no-untyped-def]
    leaf = st.one_of(st.sampled_from([TRUE, FALSE]), st.sampled_from(states).map(Lit))
    return st.recursive(leaf, lambda sub: st.one_of(
        sub.map(Neg), st.builds(Both, sub, sub), st.builds(Either, sub, sub)), max_leaves=6)


@st.composite
def rafas(draw) -> RAFA:  # type: ignore[no-untyped-def]
    n = draw(st.integers(1, 4))
    states = tuple(f"p{k}" for k in range(n))
    delta = {(q, tag): draw(formulas(states)) for q in states for tag in AB}
    initial = frozenset(draw(st.lists(st.sampled_from(states), unique=True)))
    return RAFA(AB, states, delta, initial, draw(st.sampled_from(states)))


words = st.lists(st.sampled_from(AB), max_size=8)


@given(rafa=rafas(), word=words)
@settings(max_examples=200)
def test_the_dt_of_an_rafa_accepts_what_it_does(rafa, word):
    dt = dt_from_rafa(rafa)
    assert accepted(dt, word) == rafa.run(word)
    back = rafa_from_dt(dt)  # the DT is acyclic: it translates back
    assert back.run(word) == rafa.run(word)
    # Linear: a state and a complement per state, a transition per disjunct.
    assert dt.size <= 2 * len(rafa.states) + 16 * formula_size(rafa.delta.values())


@st.composite
def acyclic_unit_dts(draw) -> DT:  # type: ignore[no-untyped-def]
    dt = draw(arbitrary_dts(AB, max_states=5, max_transitions=9, acyclic=True))
    return DT(dt.alphabet, dt.states, (), dt.final[:1], dt.transitions)


@given(dt=acyclic_unit_dts(), word=words)
@settings(max_examples=200)
def test_the_rafa_of_an_acyclic_dt_accepts_its_extended_language(dt, word):
    rafa = rafa_from_dt(dt)
    assert rafa.run(word) == accepted(dt, word)
    # §5.4.2: δ's size is bounded by the DT's (per tag: its transitions fire on every tag).
    assert formula_size(rafa.delta.values()) <= len(AB) * dt.size + 2
    assert accepted(dt_from_rafa(rafa), word) == accepted(dt, word)
    # Decided for every tag string: the minimal DFAs of L̄ (⋆ and ⊤ may differ: the
    # translation keeps whether a state is ⊥, which is what L̄ reads).
    assert equivalent(dt_language(dt_from_rafa(rafa)), dt_language(dt)) is None


def test_a_cyclic_dt_is_refused():
    loop = DT(AB, ("p", "q"), (), ("q",), (
        Transition(EPS, frozenset({Var("q", True)}), "p", Const(0.0)),
        Transition(EPS, frozenset({Var("p", True)}), "q", Const(0.0))))
    with pytest.raises(PreconditionError, match="not acyclic"):
        rafa_from_dt(loop)
    with pytest.raises(PreconditionError, match="no initial states"):
        rafa_from_dt(DT(AB, ("i",), ("i",), ("i",), ()))


def test_negation_uses_the_complement_state():
    """δ(p, a) = ¬p: p alternates on a; the DT keeps p's complement."""
    rafa = RAFA(AB, ("p",), {("p", "a"): Neg(Lit("p")), ("p", "b"): Lit("p")},
                frozenset(), "p")
    dt = dt_from_rafa(rafa)
    assert len(dt.states) == 2
    word = ["a", "b", "a", "a"]
    assert accepted(dt, word) == rafa.run(word) == [False, True, True, False, True]


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6])
def test_nth_letter_from_the_end_n_states_against_2_to_the_n(n):
    dt = nth_from_end_dt(n)
    assert len(dt.states) == n  # the complements are never read: dropped
    assert dt_language(dt).n_states == 2 ** n  # the minimal DFA
    word = list("abbabaabab")
    want = [len(word[:k]) >= n and word[:k][-n] == "a" for k in range(len(word) + 1)]
    assert accepted(dt, word) == nth_from_end(n).run(word) == want
