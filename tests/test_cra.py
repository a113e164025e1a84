"""Cost register automata and the restartable conversion (seed 003, §5.4.1 Theorem 5.8, §5.2.2 end).

Oracles: dt.reference (Figure 25) on random DTs, initial vectors and words —
every prefix, status and value; the restartability checker (Theorem 5.6) and
the independent oracle of restarted runs (tests/restarts.py); the brute-force
§5.2.2 definitions of concatenation and iteration over the *original* DTs
(tests/brute.py).
"""

from __future__ import annotations

import pytest
from brute import concat_outputs, iterate_outputs
from components import components
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from paper_examples import paper_counterexample, paper_example
from restarts import restart_runs, restarted_vs_separate, x_vectors
from strategies import arbitrary_dts, cyclic_dts, extended_values, initial_vectors, sized_words
from util import assert_same_outputs, same_vector

from dt import constructions as c
from dt.cra import (
    CONFLICT,
    CRA,
    NoRestartableForm,
    Step,
    Update,
    cra_evaluate,
    cra_from_dt,
    cra_to_dt,
    make_restartable,
)
from dt.cra.families import seen_tags_sum
from dt.cra.json_io import cra_from_json, cra_to_json
from dt.errors import DTError, PreconditionError
from dt.model import DT, Transition
from dt.projection import status_vector
from dt.reference import evaluate
from dt.restartability import check_restartable
from dt.terms import Const, Cur, Var, parse_term
from dt.value_equivalence import value_equivalent
from dt.values import BOT, TOP

# --------------------------------------------------------------------------- DT → CRA


@given(data=st.data())
@settings(max_examples=150)
def test_the_cra_of_a_dt_computes_its_outputs(data):
    """Theorem 5.8 (DT ⊆ SR): on any initial vector (⊥, ⊤ and mixed entries included) and
    word, the CRA's outputs after every prefix are the DT's, bit for bit."""
    dt = data.draw(st.one_of(arbitrary_dts(max_states=4, max_transitions=7), cyclic_dts()))
    cra = cra_from_dt(dt)
    assert len(cra.states) <= 2 ** len(dt.states)
    for _ in range(3):
        x = data.draw(initial_vectors(dt))
        word = data.draw(sized_words(dt.alphabet, max_len=6))
        assert_same_outputs(cra_evaluate(cra, x, word), evaluate(dt, x, word))
    again = cra_from_json(cra_to_json(cra))
    assert again.dump() == cra.dump() and again.size == cra.size


def test_the_counterexample_of_5_2_2_as_a_cra():
    cra = cra_from_dt(paper_counterexample())
    # ⊥ input: a state with no register; defined input: i kept, f = i + cur on every a.
    assert [cra.start[v].target for v in ((0,), (1,))] == ["s0", "s1"]
    step = cra.delta["s1", "a"]
    assert str(step.updates["f"]) == "i + cur" and step.updates["f"].reads == {"i"}
    assert cra_evaluate(cra, (5.0,), [("a", 1.0), ("a", 2.0), ("b", 0.0)]) == [
        (BOT,), (6.0,), (7.0,), (BOT,)]
    assert cra_evaluate(cra, (TOP,), [("a", 1.0)]) == [(BOT,), (TOP,)]


def test_two_contributions_are_a_conflict_and_strict_sources_count():
    """A state fed twice is ⊤ whatever the values; a source the term does not read still
    makes the update ⊤ when it is (the DT's strictness, kept in ``reads``)."""
    dt = DT(("a",), ("i", "g", "f"), ("i",), ("f", "g"), (
        Transition("a", frozenset({Var("i")}), "g", Const(1.0)),
        Transition("a", frozenset({Var("i")}), "g", Const(1.0)),
        Transition("a", frozenset({Var("i"), Var("g", True)}), "f", Cur()),
    ))
    cra = cra_from_dt(dt)
    updates = cra.delta[cra.start[(1,)].target, "a"].updates
    assert updates["g"] is CONFLICT and updates["f"] is CONFLICT  # f reads g' (⊤)
    strict = DT(("a",), ("i", "j", "f"), ("i", "j"), ("f",), (
        Transition("a", frozenset({Var("i"), Var("j")}), "f", Var("i")),))
    cra = cra_from_dt(strict)
    assert str(cra.delta[cra.start[(1, 1)].target, "a"].updates["f"]) == "i  [also ⊤ if j is]"
    assert cra_evaluate(cra, (2.0, TOP), [("a", 0.0)])[-1] == (TOP,)
    assert cra_evaluate(cra, (2.0, 3.0), [("a", 0.0)])[-1] == (2.0,)


def test_a_cra_is_checked_when_built():
    one = {"r": Update(Var("r"), frozenset({"r"}))}
    parts = dict(alphabet=("a",), inputs=("r",), outputs=("y",), states=("p",),
                 live={"p": ("r",)}, start={(0,): Step("p", one), (1,): Step("p", one)},
                 output={"p": (Update(Var("r"), frozenset({"r"})),)})
    CRA(**parts, delta={("p", "a"): Step("p", one)})
    with pytest.raises(DTError, match="complete"):
        CRA(**parts, delta={})
    with pytest.raises(DTError, match="live registers"):
        CRA(**parts, delta={("p", "a"): Step("p", {})})
    with pytest.raises(DTError, match="among its reads"):
        Update(parse_term("r + s"), frozenset({"r"}))
    with pytest.raises(DTError, match="reads cur"):
        CRA(**{**parts, "output": {"p": (Update(Cur(), frozenset()),)}},
            delta={("p", "a"): Step("p", one)})


def test_cra_json_errors_say_where():
    text = cra_to_json(cra_from_dt(paper_counterexample()))
    with pytest.raises(DTError, match=r'"start"\[1\]'):
        cra_from_json(text.replace('"inputs": "1"', '"inputs": "2"'))
    with pytest.raises(DTError, match="bad term"):
        cra_from_json(text.replace('"term": "i + cur"', '"term": "i +"', 1))
    with pytest.raises(DTError, match="invalid CRA"):
        cra_from_json(text.replace('"target": "s2"', '"target": "s9"', 1))


# --------------------------------------------------------------------------- Theorem 5.9


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5])
def test_theorem_5_9_family_needs_2_to_the_k_control_states(k):
    dt = seen_tags_sum(k)
    assert len(dt.states) == 3 * k + 2
    assert check_restartable(dt).restartable
    cra = cra_from_dt(dt)
    assert len(cra.states) == 2 ** k + 1  # the subsets of tags seen, and the ⊥ start
    word = [(f"t{1 + (j * 7) % k}", float(j)) for j in range(9)]
    assert_same_outputs(cra_evaluate(cra, (0.0,), word), evaluate(dt, (0.0,), word))
    seen, total = set(), 0.0
    for tag, d in word:  # the specification, directly: sum of all values if σ_i occurred
        seen.add(tag)
        total += d
    assert evaluate(dt, (0.0,), word)[-1] == (total * len(seen),)


# --------------------------------------------------------------------------- the restartable form


def test_the_counterexample_of_5_2_2_becomes_restartable():
    dt = paper_counterexample()
    assert not check_restartable(dt).restartable
    conversion = make_restartable(dt)
    assert check_restartable(conversion.dt).restartable
    assert conversion.dt.facts.restartable is True
    assert "control states" in conversion.summary()
    # qre check equiv's procedure proves the values equal on every data word.
    answer = value_equivalent(dt, conversion.dt)
    assert answer.equivalent and answer.proven, answer.summary()
    word = [("a", 1.0), ("a", 2.0), ("b", 4.0), ("a", 8.0)]
    for x in ((5.0,), (BOT,), (TOP,)):
        assert_same_outputs(evaluate(conversion.dt, x, word), evaluate(dt, x, word))
    # The seed's scenario: x1 at initialization, (a, d) with restart x2 — now the union.
    single, joined = restarted_vs_separate(conversion.dt, [("a", 5.0)],
                                           [(0, (1.0,)), (1, (2.0,))])[-1]
    assert same_vector(single, joined) and single == (6.0,)
    assert check_restartable(make_restartable(paper_example()).dt).restartable


def test_what_has_no_restartable_form_is_refused_with_a_reason():
    loud = DT(("a",), ("i", "f"), ("i",), ("f",), (Transition("a", frozenset(), "f", Cur()),))
    with pytest.raises(NoRestartableForm, match="every input ⊥") as info:
        make_restartable(loud)
    assert info.value.tags == ("a",) and info.value.inputs == (0,)
    # ⊤ in, a value out: two threads' union would be ⊤ (Definition 5.4 (ii)).
    absorbing = DT(("a",), ("i", "f"), ("i",), ("f",), (
        Transition("a", frozenset({Var("i")}), "f", Const(1.0)),
        Transition("a", frozenset(), "f", Const(1.0)),
    ))
    with pytest.raises(PreconditionError):
        make_restartable(absorbing)
    both = DT(("a",), ("i",), ("i",), ("i",), ())
    with pytest.raises(PreconditionError, match="both an input and an output"):
        make_restartable(both)


def _assert_refusal_replays(dt: DT, err: NoRestartableForm) -> None:
    """The reason of a refusal holds on data: with every input ⊥ the DT outputs; or (one
    input) two threads started together differ from the union of the two run apart."""
    word = [(tag, 1.0) for tag in err.tags]
    if not any(err.inputs):
        assert any(s != 0 for s in status_vector(evaluate(dt, (BOT,) * len(dt.initial),
                                                          word)[-1]))
    elif len(dt.initial) == 1:
        single, joined = restarted_vs_separate(dt, word, [(0, (1.0,)), (0, (2.0,))])[-1]
        assert not same_vector(single, joined)


@given(data=st.data())
@settings(max_examples=120)
def test_the_restartable_form_is_restartable_and_equivalent(data):
    dt = data.draw(arbitrary_dts(max_states=4, max_transitions=6))
    assume(not set(dt.initial) & set(dt.final))
    restartable = check_restartable(dt).restartable
    try:
        conversion = make_restartable(dt)
    except NoRestartableForm as err:
        # A restartable DT with at most one input is its own restartable form: never refused.
        assert not (restartable and len(dt.initial) <= 1), err
        _assert_refusal_replays(dt, err)
        return
    b = conversion.dt
    assert check_restartable(b).restartable
    for _ in range(3):
        x = data.draw(x_vectors(len(dt.initial)))
        word = data.draw(sized_words(dt.alphabet, max_len=6))
        assert_same_outputs(evaluate(b, x, word), evaluate(dt, x, word))
        word, threads = data.draw(restart_runs(b))
        for single, joined in restarted_vs_separate(b, word, threads):
            assert same_vector(single, joined), (word, threads, single, joined)


@st.composite
def one_to_one_dts(draw, alphabet):
    """Any DT with one input and one output, different states (facts unknown)."""
    dt = draw(arbitrary_dts(alphabet, max_states=3, max_transitions=5))
    assume(len(dt.states) >= 2)
    return DT(dt.alphabet, dt.states, dt.states[:1], dt.states[-1:], dt.transitions)


@given(data=st.data())
@settings(max_examples=80)
def test_concatenation_and_iteration_take_any_dt(data):
    """A1 · A2 and A* with A2, A of unknown restartability (decided, or made restartable)
    mean the §5.2.2 definitions over the original DTs, on every prefix."""
    alphabet = ("a", "b")
    left = data.draw(components(alphabet, depth=2)).dt
    right = data.draw(one_to_one_dts(alphabet))
    x = (data.draw(extended_values),)
    word = data.draw(sized_words(alphabet, max_len=5))
    try:
        joined = c.concat(left, right)
    except PreconditionError:
        assume(False)
    assert joined.facts.restartable is True
    assert_same_outputs(evaluate(joined, x, word), concat_outputs(left, right, x, word))
    try:
        looped = c.iterate(right)
    except PreconditionError:
        return
    assert_same_outputs(evaluate(looped, x, word), iterate_outputs(right, x, word))


def test_the_dt_of_a_silent_cra_has_no_transitions():
    cra = cra_from_dt(DT(("a",), ("i", "f"), ("i",), ("f",), ()))
    assert cra_to_dt(cra).transitions == ()


@given(data=st.data())
@settings(max_examples=120)
def test_theorem_5_8_both_ways_for_functions_of_the_word(data):
    """A DT without inputs (a function of the word, as the seed's CRAs compute) → its CRA
    → a DT again (one thread, started at initialization): the same outputs, status and
    value, on every prefix — also when the DT outputs from nothing (no restart here)."""
    dt = data.draw(st.one_of(arbitrary_dts(max_states=4, max_transitions=7), cyclic_dts()))
    dt = DT(dt.alphabet, dt.states, (), dt.final, dt.transitions)
    back = cra_to_dt(cra_from_dt(dt), restartable=False)
    assert back.facts.restartable is None
    for _ in range(3):
        word = data.draw(sized_words(dt.alphabet, max_len=6))
        assert_same_outputs(evaluate(back, (), word), evaluate(dt, (), word))
