"""Tests of dt.projection: the unit-signature projection and the status-only evaluator.

Theorem 5.2 (i) of seed 003: statuses depend only on the statuses of the
initial vector and on the tag string. Expectations come from the reference
evaluator run on the original DT with real data.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import arbitrary_dts, data_values, extended_values, initial_vectors, words

from dt.model import DT, EPS, Facts, Transition
from dt.projection import (
    UNIT,
    UnitEvaluator,
    project,
    status_vector,
    unit_evaluate,
    unit_evaluator,
    unit_initial,
    unit_outputs,
    unit_run,
    unit_step,
)
from dt.reference import evaluate, initial_config, run, step
from dt.terms import Var
from dt.values import BOT, TOP, is_defined


def _statuses(configs):
    return [status_vector(c) for c in configs]


@st.composite
def _same_status_vector(draw, x):
    """Another initial vector with the same statuses as ``x`` but fresh data."""
    return tuple(draw(data_values) if is_defined(v) else v for v in x)


@given(arbitrary_dts())
def test_project_keeps_everything_but_terms(dt):
    p = project(dt)
    assert (p.alphabet, p.states, p.initial, p.final) == (dt.alphabet, dt.states,
                                                          dt.initial, dt.final)
    assert len(p.transitions) == len(dt.transitions)
    for t, u in zip(dt.transitions, p.transitions, strict=True):
        assert (u.on, u.sources, u.target) == (t.on, t.sources, t.target)
        assert u.term == UNIT


def test_project_keeps_facts_and_duplicates():
    xp = Var("x", True)
    dt = DT(("a",), ("x", "f"), ("x",), ("f",), (
        Transition(EPS, frozenset({xp}), "f", xp),
        Transition(EPS, frozenset({xp}), "f", xp),  # a duplicate: f = x ⊔ x = ⊤
    ), Facts(True, True))
    p = project(dt)
    assert p.facts == Facts(True, True)
    assert len(p.transitions) == 2
    assert evaluate(p, (4.0,), []) == [(TOP,)]
    assert unit_evaluate(dt, (1,), []) == [(2,)]


@given(st.data())
def test_theorem_5_2_statuses_follow_the_projection(data):
    """Every state after every prefix: status in A = status in P = the unit evaluator's."""
    dt = data.draw(arbitrary_dts())
    x = data.draw(initial_vectors(dt))  # ⊥, ⊤ and data
    word = data.draw(words(dt.alphabet, 6))
    tags = [t for t, _ in word]
    want = _statuses(run(dt, x, word))
    x_status = status_vector(x)
    assert unit_run(dt, x_status, tags) == want
    assert unit_run(project(dt), x_status, tags) == want  # P itself, terms ignored
    unit_x = tuple(0.0 if is_defined(v) else v for v in x)  # x projected: data ↦ ⋆
    projected = run(project(dt), unit_x, word)  # the reference on P: values stay ⋆
    assert _statuses(projected) == want
    assert all(v is BOT or v is TOP or v == 0.0 for c in projected for v in c)
    outs = unit_evaluate(dt, x_status, tags)
    assert outs == [status_vector(o) for o in evaluate(dt, x, word)]


@given(st.data())
def test_theorem_5_2_same_tags_different_data(data):
    """(i): x1 ≡ x2 and w1↓Σ = w2↓Σ give equivalent outputs (and configurations)."""
    dt = data.draw(arbitrary_dts())
    x1 = data.draw(initial_vectors(dt))
    x2 = data.draw(_same_status_vector(x1))
    w1 = data.draw(words(dt.alphabet, 6))
    w2 = [(tag, data.draw(data_values)) for tag, _ in w1]
    assert _statuses(run(dt, x1, w1)) == _statuses(run(dt, x2, w2))


@given(st.data())
def test_unit_step_with_restart(data):
    """Δ_{σ,x} on statuses matches the reference's update-with-restart."""
    dt = data.draw(arbitrary_dts())
    ev = UnitEvaluator(dt)
    x = data.draw(initial_vectors(dt))
    c = initial_config(dt, x)
    u = ev.initial(status_vector(x))
    assert u == status_vector(c)
    for tag, d in data.draw(words(dt.alphabet, 5)):
        r = data.draw(st.none() | initial_vectors(dt, extended_values))
        c = step(dt, c, tag, d, r)
        u = ev.step(u, tag, None if r is None else status_vector(r))
        assert u == status_vector(c)
        assert ev.outputs(u) == status_vector(c[dt.state_index[f]] for f in dt.final)


@given(arbitrary_dts())
def test_unit_configs_are_hashable_int_tuples(dt):
    c = unit_initial(dt, (1,) * len(dt.initial))
    assert isinstance(c, tuple) and all(type(s) is int and s in (0, 1, 2) for s in c)
    assert {c: 1}[tuple(int(s) for s in c)] == 1
    for tag in dt.alphabet:
        c2 = unit_step(dt, c, tag)
        assert isinstance(hash(c2), int)
        assert unit_outputs(dt, c2) == tuple(c2[dt.state_index[f]] for f in dt.final)


def test_unit_evaluator_is_cached_per_dt():
    dt = DT(("a",), ("x",), ("x",), ("x",), ())
    assert unit_evaluator(dt) is unit_evaluator(dt)
    other = DT(("a",), ("x",), ("x",), ("x",), ())
    assert unit_evaluator(other) is not unit_evaluator(dt)


def test_unit_evaluator_rejects_bad_input():
    dt = DT(("a",), ("x",), ("x",), ("x",), ())
    with pytest.raises(ValueError):
        unit_initial(dt, ())
    with pytest.raises(ValueError):
        unit_initial(dt, (3,))
    with pytest.raises(ValueError):
        unit_step(dt, (1,), "b")
    with pytest.raises(ValueError):
        unit_step(dt, (1,), "init")
    with pytest.raises(ValueError):
        unit_step(dt, (1, 1), "a")


def test_finitely_many_unit_configurations():
    """(ii): breadth-first search over unit configurations terminates (≤ 3^|Q|)."""
    x, xp = Var("x"), Var("x", True)
    dt = DT(("a", "b"), ("x", "y"), ("x",), ("y",), (
        Transition("a", frozenset({x}), "x", x),
        Transition("b", frozenset({x}), "y", x),
        Transition("b", frozenset({x}), "x", x),
        Transition(EPS, frozenset({xp}), "y", xp),
    ))
    ev = unit_evaluator(dt)
    start = ev.initial((1,))
    seen, frontier = {start}, [start]
    while frontier:
        nxt = []
        for c in frontier:
            for tag in dt.alphabet:
                d = ev.step(c, tag)
                if d not in seen:
                    seen.add(d)
                    nxt.append(d)
        frontier = nxt
    # initially y = x' (⋆); after a: x' = x (⋆), y ⋆; after b: y = x ⊔ x' = ⊤
    assert seen == {(1, 1), (1, 2)}
