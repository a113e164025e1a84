"""Tests of dt.support: acyclicity, unrolling and the support DTs of seed 003, §5.2.1.

Expectations are computed independently with the reference evaluator on the
original DT (statuses of its outputs), with a matrix-power acyclicity check,
and with hand-made DTs whose fixpoints are known.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import (
    arbitrary_dts,
    data_values,
    initial_vectors,
    words,
)
from util import assert_same_outputs, same, same_vector

from dt.errors import PreconditionError
from dt.model import DT, EPS, INIT, Facts, Transition
from dt.reference import evaluate, initial_config, step
from dt.support import (
    SUPPORT_FACTOR,
    dependency_cycles,
    is_acyclic,
    support,
    support_size_bound,
    supports,
    unroll,
    unroll_levels,
)
from dt.terms import Apply, Cur, Var
from dt.values import BOT, TOP, Status, status_of

D_STARS = st.sampled_from([1.0, -2.5, 0.0])


any_dts = st.one_of(arbitrary_dts(), arbitrary_dts(acyclic=True))


def _cyclic_by_matrix(dt: DT) -> set[str]:
    """Labels whose within-step graph has a cycle: the adjacency matrix is not nilpotent."""
    pos = dt.state_index
    n = len(dt.states)
    out = set()
    for label in (INIT, *dt.alphabet):
        m = np.zeros((n, n), dtype=np.int64)
        for t in dt.transitions:
            if t.on in (label, EPS):
                for v in t.sources:
                    if v.primed:
                        m[pos[v.name], pos[t.target]] = 1
        power = np.linalg.matrix_power(m, n)
        if power.any():
            out.add(label)
    return out


# --------------------------------------------------------------------------- acyclicity


@given(any_dts)
def test_acyclicity_matches_nilpotent_adjacency(dt):
    cycles = dependency_cycles(dt)
    assert set(cycles) == _cyclic_by_matrix(dt)
    assert is_acyclic(dt) == (not cycles)
    for label, cycle in cycles.items():  # each witness is a real cycle of that label
        edges = {(v.name, t.target) for t in dt.transitions if t.on in (label, EPS)
                 for v in t.sources if v.primed}
        assert cycle
        for a, b in zip(cycle, cycle[1:] + cycle[:1], strict=True):
            assert (a, b) in edges


@given(arbitrary_dts(acyclic=True))
def test_generated_acyclic_dts_are_acyclic(dt):
    assert is_acyclic(dt)


def test_acyclicity_examples():
    ab = ("a", "b")
    x, xp = Var("x"), Var("x", True)
    # unprimed self-read: previous value, no within-step edge
    counter = DT(ab, ("x",), ("x",), ("x",), (Transition("a", frozenset({x}), "x", x),))
    assert is_acyclic(counter)
    # primed self-read on a only
    loop = DT(ab, ("x",), (), ("x",), (Transition("a", frozenset({xp}), "x", xp),))
    assert dependency_cycles(loop) == {"a": ("x",)}
    # an eps cycle is a cycle of every label
    eps_loop = DT(ab, ("x",), (), ("x",), (Transition(EPS, frozenset({xp}), "x", xp),))
    assert set(dependency_cycles(eps_loop)) == {INIT, "a", "b"}


# --------------------------------------------------------------------------- unroll


@given(st.data())
def test_unroll_is_acyclic_and_equivalent(data):
    dt = data.draw(any_dts)
    u = unroll(dt)
    assert is_acyclic(u)
    assert len(u.initial) == len(dt.initial) and len(u.final) == len(dt.final)
    assert u.facts == dt.facts
    x = data.draw(initial_vectors(dt))  # extended values: ⊥ and ⊤ included
    w = data.draw(words(dt.alphabet, 6))
    assert_same_outputs(evaluate(u, x, w), evaluate(dt, x, w))


@given(st.data())
def test_unroll_equivalent_under_restarts(data):
    """Δ_{σ,x}: the restart vector reaches every level through the fresh initial states."""
    dt = data.draw(arbitrary_dts())
    u = unroll(dt)
    x = data.draw(initial_vectors(dt))
    c, cu = initial_config(dt, x), initial_config(u, x)
    for tag, d in data.draw(words(dt.alphabet, 5)):
        r = data.draw(st.none() | initial_vectors(dt))
        c, cu = step(dt, c, tag, d, r), step(u, cu, tag, d, r)
        final = [c[dt.state_index[f]] for f in dt.final]
        final_u = [cu[u.state_index[f]] for f in u.final]
        assert same_vector(final_u, final)


@given(any_dts)
def test_unroll_size_is_levels_times_size(dt):
    levels = unroll_levels(dt)
    assert 1 <= levels <= max(1, 2 * len(dt.states))
    assert unroll(dt).size <= levels * dt.size + len(dt.initial) * (3 * levels + 1)


def _ring(n: int) -> DT:
    """A ring of primed copies q0' → q1' → … → q0' with q0 initial (eps: every label)."""
    states = tuple(f"q{k}" for k in range(n))
    trs = tuple(
        Transition(EPS, frozenset({Var(states[k], True)}), states[(k + 1) % n],
                   Var(states[k], True))
        for k in range(n)
    )
    return DT(("a",), states, ("q0",), (states[-1],), trs)


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_paper_bound_of_2n_levels_is_tight(n):
    """The defined value goes round the ring once (n iterations), then ⊤ goes round: 2n."""
    dt = _ring(n)
    assert evaluate(dt, (5.0,), [])[0] == (TOP,)
    assert unroll_levels(dt) == 2 * n
    assert evaluate(unroll(dt), (5.0,), [])[0] == (TOP,)
    short = evaluate(unroll(dt, levels=2 * n - 1), (5.0,), [])[0]
    assert short != (TOP,)


def test_unroll_rejects_zero_levels():
    with pytest.raises(PreconditionError):
        unroll(_ring(2), levels=0)


# --------------------------------------------------------------------------- support


def _check_supports(dt: DT, x, word, d_star: float) -> None:
    want = [tuple(status_of(v) for v in out) for out in evaluate(dt, x, word)]
    got = [evaluate(s, (), word) for s in supports(dt, d_star)]
    for kind, outs in zip(Status, got, strict=True):
        assert len(outs) == len(want)
        for k, (g, w) in enumerate(zip(outs, want, strict=True)):
            expected = tuple(d_star if s == kind else BOT for s in w)
            assert same_vector(g, expected), f"[A {kind.name}] after {k} events: {g} vs {w}"
    # exactly one of the three is defined at every output after every prefix
    for k in range(len(want)):
        for f in range(len(dt.final)):
            assert sum(not same(outs[k][f], BOT) for outs in got) == 1


@given(st.data())
def test_support_matches_output_status(data):
    dt = data.draw(any_dts)
    x = data.draw(initial_vectors(dt, data_values))
    word = data.draw(words(dt.alphabet, 6))
    _check_supports(dt, x, word, data.draw(D_STARS))


@given(st.data())
def test_support_of_cyclic_dts(data):
    dt = data.draw(arbitrary_dts(max_transitions=10).filter(lambda d: not is_acyclic(d)))
    x = data.draw(initial_vectors(dt, data_values))
    word = data.draw(words(dt.alphabet, 6))
    _check_supports(dt, x, word, 1.0)


@given(any_dts, D_STARS)
def test_support_shape_and_size(dt, d_star):
    for kind in Status:
        s = support(dt, kind, d_star)
        assert s.initial == () and len(s.final) == len(dt.final)
        assert s.alphabet == dt.alphabet
        assert is_acyclic(s)
        assert s.facts.restartable is None
        assert s.size <= support_size_bound(dt)
    a0_size = dt.size + 2 * len(dt.initial)
    sigma = len(dt.alphabet) + 1
    size = support(dt, Status.UNDEFINED, d_star).size
    if is_acyclic(dt):  # linear: no unrolling
        assert size <= SUPPORT_FACTOR * sigma * a0_size + 3
        assert size <= 3 * SUPPORT_FACTOR * sigma * dt.size + 3
    else:  # quadratic: L ≤ 2|Q| levels of A0
        assert size <= SUPPORT_FACTOR * sigma * 2 * len(dt.states) * a0_size + 3


def test_support_of_a_counter_needs_no_unrolling():
    """An acyclic DT's support has no level copies: its size stays small."""
    ab = ("a", "b")
    x, f = Var("x"), Var("f")
    dt = DT(ab, ("x", "f"), ("x",), ("f",), (
        Transition("a", frozenset({x}), "x", Apply("add", (x, Cur()))),
        Transition("b", frozenset({x}), "x", x),
        Transition("b", frozenset({x, f}), "f", Apply("add", (x, f))),
        Transition(EPS, frozenset({Var("x", True)}), "f", Var("x", True)),
    ))
    assert is_acyclic(dt)
    s = support(dt, Status.DEFINED)
    assert s.size <= 3 * dt.size * (len(ab) + 1)


def test_support_example_conflict_and_undefined():
    """f' := x' on eps, and f' := x on a: after a, f = x ⊔ x' = ⊤; initially f = x."""
    a = ("a",)
    x, xp = Var("x"), Var("x", True)
    dt = DT(a, ("x", "f"), ("x",), ("f",), (
        Transition(EPS, frozenset({xp}), "f", xp),
        Transition("a", frozenset({x}), "f", x),
        Transition("a", frozenset({x}), "x", x),
    ))
    word = [("a", 1.0), ("a", 2.0)]
    assert [status_of(o[0]) for o in evaluate(dt, (3.0,), word)] == [
        Status.DEFINED, Status.CONFLICT, Status.CONFLICT]
    u, d, c = supports(dt, 7.0)
    assert evaluate(d, (), word) == [(7.0,), (BOT,), (BOT,)]
    assert evaluate(c, (), word) == [(BOT,), (7.0,), (7.0,)]
    assert evaluate(u, (), word) == [(BOT,), (BOT,), (BOT,)]


def test_support_output_synchronized_fact():
    dt = _ring(2)
    assert support(dt, Status.DEFINED).facts == Facts(None, True)
    two = DT(dt.alphabet, dt.states, dt.initial, dt.states, dt.transitions)
    assert support(two, Status.DEFINED).facts.output_synchronized is None


@pytest.mark.parametrize("kind, d_star", [("defined", 1.0), (1, 1.0), (Status.DEFINED, BOT),
                                          (Status.DEFINED, TOP), (Status.DEFINED, "1"),
                                          (Status.DEFINED, True)])
def test_support_preconditions(kind, d_star):
    with pytest.raises(PreconditionError):
        support(_ring(2), kind, d_star)


@given(st.data())
def test_support_does_not_depend_on_data(data):
    """Theorem 5.2: any defined x gives the statuses the support DTs report."""
    dt = data.draw(any_dts)
    word = data.draw(words(dt.alphabet, 5))
    x1 = data.draw(initial_vectors(dt, data_values))
    x2 = data.draw(initial_vectors(dt, data_values))
    s1 = [tuple(status_of(v) for v in o) for o in evaluate(dt, x1, word)]
    s2 = [tuple(status_of(v) for v in o) for o in evaluate(dt, x2, word)]
    assert s1 == s2

