"""Restartability checking (seed 003, §5.2.2, Definition 5.4, Theorems 5.5-5.7).

The checker (dt.restartability) searches the unit projection; these tests
judge it against independent expectations: the paper's example and
counterexample, DTs that Theorem 5.5 (constructions) and Theorem 5.7 (base
queries) prove restartable, and random DTs, where a "not restartable" answer
must come with a witness that disagrees on data (dt.reference), and a
"restartable" answer must survive random restarted runs compared with the
union of the separate runs, exactly (Definition 5.4 (iii)).
"""

from __future__ import annotations

from components import components
from hypothesis import given, settings
from hypothesis import strategies as st
from paper_examples import paper_counterexample, paper_example
from query_strategies import base_queries, temporal_queries
from restarts import restart_runs, restarted_vs_separate, x_vectors
from strategies import alphabets, arbitrary_dts, sized_words
from util import same_vector

import dt.constructions as c
from codegen.optimize import optimize
from dt.errors import PreconditionError
from dt.functions import DataFunction
from dt.model import DT, INIT, Transition
from dt.projection import status_vector
from dt.reference import initial_config, outputs, step
from dt.restartability import (
    Restartability,
    RestartWitness,
    check_restartable,
    output_synchronized,
    replay,
    restart_vectors,
)
from dt.terms import Apply, Const, Cur, Var
from dt.values import BOT, TOP
from dt.windows import event_fold, running_fold
from qre.language.compiler import compile_query
from qre.language.sugar import variance_fold
from qre.language.typing import check

# --------------------------------------------------------------------------- independent oracle


def assert_witness_replays(dt: DT, result: Restartability) -> None:
    w = result.witness
    assert not result.restartable and isinstance(w, RestartWitness)
    assert w.restarted != w.separate
    got, want = replay(dt, w)
    assert status_vector(got) == w.restarted and status_vector(want) == w.separate
    # The same run through the independent oracle of this module.
    word = [(tag, 1.0) for tag in w.tags]
    threads = [(pos, tuple(BOT if s == 0 else TOP if s == 2 else 1.0 for s in x))
               for pos, x in w.threads]
    single, joined = restarted_vs_separate(dt, word, threads)[-1]
    assert not same_vector(single, joined)


# --------------------------------------------------------------------------- the paper


def test_paper_example_is_restartable():
    r = check_restartable(paper_example())
    assert r == Restartability(True, None, r.explored) and r.explored > 0
    assert output_synchronized(paper_example())


def test_paper_counterexample_is_not_restartable():
    dt = paper_counterexample()
    r = check_restartable(dt)
    assert_witness_replays(dt, r)
    # The paper's own scenario: x1 at initialization, then (a, d) with restart x2.
    single, joined = restarted_vs_separate(dt, [("a", 5.0)], [(0, (1.0,)), (1, (2.0,))])[-1]
    assert single == (TOP,) and joined == (6.0,)


def test_output_from_nothing_is_not_restartable():
    # Δ_i(⊥) ~ [] (k = 0) needs ⊥ outputs without threads; f' := 1 at init breaks it.
    dt = DT(("a",), ("i", "f"), ("i",), ("f",), (
        Transition(INIT, frozenset(), "f", Const(1.0)),
    ))
    r = check_restartable(dt)
    assert_witness_replays(dt, r)
    assert r.witness.threads == () and r.witness.tags == ()


def test_no_initial_states():
    # X = {()}: any number of threads Δ_i(()); two of them conflict at f.
    dt = DT(("a",), ("f",), (), ("f",), (Transition("a", frozenset(), "f", Cur()),))
    assert_witness_replays(dt, check_restartable(dt))
    silent = DT(("a",), ("f",), (), ("f",), ())
    assert check_restartable(silent).restartable


def test_max_states_is_enforced():
    try:
        check_restartable(paper_example(), max_states=3)
    except PreconditionError as e:
        assert "max_states" in str(e)
    else:
        raise AssertionError("expected PreconditionError")


def test_restart_vectors():
    assert restart_vectors(0) == ((),)
    assert restart_vectors(1) == ((0,), (1,), (2,))
    assert len(restart_vectors(3)) == 1 + 8 and restart_vectors(3)[0] == (0, 0, 0)


def test_output_synchronized_parallel_of_different_rates():
    a = c.atom(("a", "b"), "a", Cur())
    b = c.atom(("a", "b"), "b", Cur())
    assert output_synchronized(a) and output_synchronized(c.parallel(a, a, same_rate=True))
    assert not output_synchronized(c.parallel(a, b))
    # Restartable (Theorem 5.5) though not output-synchronized.
    assert check_restartable(c.parallel(a, b)).restartable
    add = DataFunction.of(("p", "q"), {"r": Apply("add", (Var("p"), Var("q")))})
    # The PSPACE-hardness gadget of Theorem 5.6: (N1 ∥ N2) · G with u = a, v = b,
    # "b" ∈ L(N1) after a restart, "ab" ∈ L(N2) from the start: not restartable.
    joined = c.concat(c.parallel(b, c.concat(a, b)), add, assume=True)
    assert_witness_replays(joined, check_restartable(joined))
    # Equal rates: (A ∥ A) · G is restartable (Theorem 5.5).
    same = c.concat(c.parallel(a, a, same_rate=True), add)
    assert check_restartable(same).restartable


# --------------------------------------------------------------------------- theorems 5.5 and 5.7


@given(data=st.data(), alphabet=alphabets(2, 3))
@settings(max_examples=30)
def test_constructions_are_restartable(data, alphabet):
    k = data.draw(components(alphabet, depth=3))
    assert k.dt.facts.restartable is True
    r = check_restartable(k.dt)
    assert r.restartable, r.witness
    assert output_synchronized(k.dt)


@given(data=st.data(), alphabet=alphabets(2, 3))
@settings(max_examples=30)
def test_base_queries_compile_to_restartable_dts(data, alphabet):
    query = data.draw(base_queries(alphabet, depth=3))
    compiled = compile_query(check(query, alphabet).query, alphabet)
    for dt in (compiled.value, compiled.identity):
        r = check_restartable(dt)
        assert r.restartable, (query, r.witness)


def test_running_folds_are_restartable_and_pattern_folds_are_not():
    """dt.windows.running_fold (the var/std sugar's DT) claims restartability by the
    conflict semantics — a fresh thread's initial registers meet an older thread's
    update in ⊤, as the union of two threads' outputs is — and the checker agrees; the
    top-level event_fold, whose registers start by *init* transitions that a restart
    never fires, is not restartable (a witness replays)."""
    for alphabet in (("a",), ("a", "b")):
        running = running_fold(alphabet, variance_fold(Cur()))
        assert running.facts.restartable and output_synchronized(running)
        assert check_restartable(running).restartable
        top_level = event_fold(alphabet, variance_fold(Cur()), Const(0.0))
        assert_witness_replays(top_level, check_restartable(top_level))


# --------------------------------------------------------------------------- random DTs


@given(data=st.data())
@settings(max_examples=80)
def test_random_dts_agree_with_restarted_runs(data):
    dt = data.draw(arbitrary_dts(max_states=4, max_transitions=6))
    r = check_restartable(dt)
    if not r.restartable:
        assert_witness_replays(dt, r)
        return
    for _ in range(3):
        word, threads = data.draw(restart_runs(dt))
        for single, joined in restarted_vs_separate(dt, word, threads):
            assert same_vector(single, joined), (word, threads, single, joined)


@given(data=st.data())
@settings(max_examples=60)
def test_output_synchronized_on_random_runs(data):
    dt = data.draw(arbitrary_dts(max_states=4, max_transitions=6))
    if not output_synchronized(dt):
        return
    x = data.draw(x_vectors(len(dt.initial)))
    word = data.draw(sized_words(dt.alphabet, max_len=6))
    config = initial_config(dt, x)
    configs = [config]
    for tag, d in word:
        config = step(dt, config, tag, d)
        configs.append(config)
    for config in configs:
        out = status_vector(outputs(dt, config))
        assert all(s == 0 for s in out) or all(s != 0 for s in out)


# --------------------------------------------------------------------------- the optimizer


@given(data=st.data())
@settings(max_examples=80)
def test_the_optimizer_keeps_restartability(data):
    """qre check restartable searches the optimized DT: the answers must agree, and a
    witness found there must break (iii) on the original too (proof of Theorem 5.6:
    restartability depends only on the outputs of runs with restarts, which the
    optimizer keeps)."""
    if data.draw(st.booleans()):
        dt = data.draw(arbitrary_dts(max_states=4, max_transitions=6))
    else:
        alphabet = data.draw(alphabets(2, 2))
        query = data.draw(st.one_of(base_queries(alphabet, depth=2),
                                    temporal_queries(alphabet, depth=2)))
        dt = compile_query(check(query, alphabet).query, alphabet).value
    small = optimize(dt)
    r, s = check_restartable(dt), check_restartable(small)
    assert r.restartable == s.restartable
    assert output_synchronized(dt) == output_synchronized(small)
    if s.witness is not None:
        got, want = replay(dt, s.witness)
        assert (status_vector(got), status_vector(want)) == (s.witness.restarted,
                                                             s.witness.separate)
