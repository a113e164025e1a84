"""DGS (seed 003 §4): specifications, consistency, plans, the optimizer and the runtimes.

The oracle is the sequential specification on the sorted input (Theorem 4.13): for
random valid input instances (several streams, random heartbeats), every S-valid plan
(the optimizer's for random rates and worker counts, or a random one) and every
delivery order of the messages, the outputs are the sequential program's. The
programs are the seed's applications and a case built to need the worker dependence
(tests/dgs_cases.py). Inconsistent specifications are caught by the checker.
"""

from __future__ import annotations

import random
from dataclasses import replace

import numpy as np
import pytest
from dgs_cases import CASES, instance, two_readers
from hypothesis import given
from hypothesis import strategies as st

from dt.dgs import examples
from dt.dgs.consistency import InconsistentSpec, assert_consistent, check_consistency
from dt.dgs.optimizer import InputStream, optimize, random_plan
from dt.dgs.plan import ImplTag, Plan, PlanError, Worker, sequential, validate
from dt.dgs.spec import Event, Join
from dt.errors import PreconditionError
from qre.runtime.dgs.inputs import Heartbeat, InputError, sequential_input
from qre.runtime.dgs.parallel import WorkerFailed, run_parallel
from qre.runtime.dgs.simulate import simulate


def _amount(tag, rng):
    return rng.randint(0, 3000)


def _itags(case):
    return [ImplTag(t, name) for name, tags in case.streams.items() for t in tags]


# -- consistency (Definition 4.3) ---------------------------------------------------

@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_the_applications_are_consistent(case):
    assert check_consistency(case.spec, case.sample, payload=_amount, examples=400) is None


def test_a_fork_that_copies_the_counts_breaks_c2_and_the_example_is_minimal():
    found = check_consistency(examples.key_counter_wrong_fork(),
                              [(k, n) for k in "ir" for n in range(2)])
    assert found.condition == "C2"
    text = str(found)
    # One increment before the fork is the smallest state that shows double counting.
    assert text.count("('i',") == 1 and "fork 'fork' with left {}, right {}" in text
    assert "join(fork(s, p1, p2)) = {" in text


def test_a_dependence_that_frees_read_resets_breaks_c3():
    spec = replace(examples.key_counter(), dependence=lambda a, b: False)
    assert check_consistency(spec, [(k, 0) for k in "ir"]) is not None
    found = check_consistency(spec, [(k, 0) for k in "ir"], conditions=["C3"])
    assert found.condition == "C3"
    e1, e2 = found.example.events
    assert {e1.tag, e2.tag} == {("i", 0), ("r", 0)} and found.example.wire.steps == ()


def test_a_join_that_is_not_the_forks_inverse_breaks_c1():
    spec = examples.value_barrier()
    spec = replace(spec, joins=(Join("add", ("Values", "Values"), "Window", max),
                                Join("add values", ("Values", "Values"), "Values", max)))
    found = check_consistency(spec, ["b", ("a", 0)], payload=lambda t, r: r.randint(1, 9))
    assert found.condition in ("C1", "C2")
    with pytest.raises(InconsistentSpec, match=found.condition):
        assert_consistent(spec, ["b", ("a", 0)], payload=lambda t, r: r.randint(1, 9))


def test_an_asymmetric_dependence_is_reported():
    spec = replace(examples.key_counter(), dependence=lambda a, b: a[0] == "r")
    found = check_consistency(spec, [("i", 0), ("r", 0)])
    assert found.condition == "the dependence's symmetry"


def test_a_raising_update_is_a_counterexample():
    def update(state, event):
        if event.tag == ("r", 1):
            raise KeyError("boom")
        return examples.key_counter().states[0].update(state, event)
    base = examples.key_counter()
    spec = replace(base, states=(replace(base.states[0], update=update),))
    found = check_consistency(spec, [("i", 1), ("r", 1)])
    assert "KeyError: 'boom'" in str(found)


def test_spec_preconditions():
    base = examples.value_barrier()
    with pytest.raises(PreconditionError, match="must accept every tag"):
        replace(base, states=base.states[::-1])
    with pytest.raises(PreconditionError, match="unknown state types"):
        replace(base, joins=(Join("j", ("Values", "Nope"), "Window", max),))


# -- plans (Definitions 4.5, 4.6) and the optimizer (§4.4.3) ------------------------

def _leaf(name, state, *itags):
    return Worker(name, state, frozenset(itags))


def test_s_validity():
    spec = examples.value_barrier()
    b, a0, a1 = ImplTag("b", "B"), ImplTag(("a", 0), "A0"), ImplTag(("a", 1), "A1")
    good = Plan(Worker("w1", "Window", frozenset({b}),
                       (_leaf("w2", "Values", a0), _leaf("w3", "Values", a1)), "split", "add"))
    validate(good, spec)
    with pytest.raises(PlanError, match=r"\('i', 1\)@s1 \('w2''s side\) depends on"):  # (V2)
        validate(Plan(Worker("w1", "State", frozenset(),
                             (_leaf("w2", "State", ImplTag(("i", 1), "s1")),
                              _leaf("w3", "State", ImplTag(("r", 1), "s2"))), "fork", "join")),
                 examples.key_counter())
    with pytest.raises(PlanError, match="does not accept"):  # (V1): Values never see b
        validate(Plan(Worker("w1", "Window", frozenset({a0, a1}),
                             (_leaf("w2", "Values", b), _leaf("w3", "Values")),
                             "split", "add")), spec)
    with pytest.raises(PlanError, match="goes Values"):  # (V1): the fork's types
        validate(replace(good, root=replace(good.root, fork="split values")), spec)
    with pytest.raises(PlanError, match="not State_0"):
        validate(Plan(_leaf("w1", "Values", a0)), spec)
    with pytest.raises(PlanError, match="handled by both"):
        Plan(Worker("w1", "Window", frozenset({b}),
                    (_leaf("w2", "Values", a0), _leaf("w3", "Values", a0)), "split", "add"))
    with pytest.raises(PlanError, match="binary tree"):
        Worker("w1", "Window", frozenset(), (_leaf("w2", "Values", a0),), "split", "add")


def test_the_optimizer_gives_leaves_the_heavy_streams():
    spec = examples.value_barrier()
    streams = [InputStream("B", {"b": 1})] + [InputStream(f"A{i}", {("a", i): 1000})
                                              for i in range(4)]
    plan = optimize(spec, streams, workers=4)
    assert plan.root.itags == {ImplTag("b", "B")} and len(plan.leaves()) == 4
    assert len(optimize(spec, streams, workers=2).leaves()) == 2
    assert len(optimize(spec, streams, workers=1).workers()) == 1


def test_no_parallel_plan_when_everything_depends_on_everything(caplog):
    spec = replace(examples.fraud_detection(), dependence=lambda a, b: True)
    streams = [InputStream("R", {"rule": 1}), InputStream("T", {("tx", 0): 100}),
               InputStream("U", {("tx", 1): 100})]
    with caplog.at_level("INFO", logger="dt.dgs.optimizer"):
        plan = optimize(spec, streams, workers=4)
    assert len(plan.workers()) == 1 and "never splits" in caplog.text


# -- Theorem 4.13 ---------------------------------------------------------------------

@given(st.integers(0, 2**32 - 1), st.sampled_from(CASES))
def test_every_valid_plan_and_schedule_computes_the_sequential_outputs(seed, case):
    rng = random.Random(seed)
    streams = instance(case, rng)
    if rng.random() < 0.5:
        plan = optimize(case.spec, case.inputs(rng), workers=rng.randint(1, 5))
    else:
        plan = random_plan(case.spec, _itags(case), rng)
    expected = case.spec.run(sequential_input(streams))
    result = simulate(case.spec, plan, streams, seed=seed)
    # The outputs, ordered by the events that produced them, are the sequential ones
    # (for these programs an event's outputs do not move between events; Theorem
    # 4.13 promises the multiset, which this implies).
    assert result.outputs == expected, str(plan)


def test_readers_of_a_shared_count_need_the_worker_dependence():
    """Parent {r1, r2}, children on i: without ordering r1 and r2 through the children's
    i, some schedules deadlock (found by this test before the fix)."""
    spec = two_readers()
    plan = Plan(Worker("p", "Count", frozenset({ImplTag("r1", "A"), ImplTag("r2", "B")}),
                       (_leaf("c1", "Count", ImplTag("i", "C")),
                        _leaf("c2", "Count", ImplTag("i", "D"))),
                       "fork", "join"))
    case = next(c for c in CASES if c.name == "two_readers")
    for seed in range(300):
        streams = instance(case, random.Random(seed), length=6)
        expected = spec.run(sequential_input(streams))
        assert simulate(spec, plan, streams, seed=seed).outputs == expected


def test_a_wrong_fork_shows_in_the_outputs_and_the_checker_catches_it_first():
    spec = examples.key_counter_wrong_fork()
    case = next(c for c in CASES if c.name == "key_counter")
    wrong = 0
    for seed in range(40):
        rng = random.Random(seed)
        streams = instance(case, rng)
        plan = random_plan(spec, _itags(case), rng)
        expected = spec.run(sequential_input(streams))
        wrong += simulate(spec, plan, streams, seed=seed).outputs != expected
    assert wrong > 0
    assert check_consistency(spec, case.sample) is not None


# -- the runtimes on processes and threads ---------------------------------------------

@pytest.mark.parametrize("backend", ["processes", "threads"])
def test_parallel_backends_compute_the_sequential_outputs(backend):
    for case in CASES:
        rng = random.Random(7)
        streams = instance(case, rng, length=400, beats=0.05)
        plan = optimize(case.spec, case.inputs(rng), workers=3)
        expected = case.spec.run(sequential_input(streams))
        result = run_parallel(case.spec, plan, streams, backend=backend, batch=16, timeout=60)
        assert result.outputs == expected, case.name


@pytest.mark.parametrize("backend", ["processes", "threads"])
def test_a_failing_update_names_its_worker(backend):
    base = examples.value_barrier()

    def update(total, event):
        if event.payload == 13:
            raise ValueError("unlucky")
        return base.states[1].update(total, event)
    spec = replace(base, states=(base.states[0], replace(base.states[1], update=update)))
    streams = {"B": [Event("b", None, 5)], "A0": [Event(("a", 0), v, v) for v in range(1, 20)],
               "A1": [Event(("a", 1), 1, 1)]}
    plan = optimize(spec, [InputStream("B", {"b": 1}), InputStream("A0", {("a", 0): 9}),
                           InputStream("A1", {("a", 1): 9})], workers=2)
    with pytest.raises(WorkerFailed, match=r"(?s)worker 'w.'.*ValueError: unlucky"):
        run_parallel(spec, plan, streams, backend=backend, timeout=60)


def test_input_errors_name_the_stream_and_the_item():
    spec = examples.value_barrier()
    plan = sequential(spec, {ImplTag("b", "B"), ImplTag(("a", 0), "A")})
    with pytest.raises(InputError, match="stream 'A', item 1: time 1 does not follow 2"):
        simulate(spec, plan, {"B": [], "A": [Event(("a", 0), 1, 2), Event(("a", 0), 1, 1)]})
    with pytest.raises(InputError, match=r"stream 'A', item 0: no worker .* \('a', 1\)"):
        simulate(spec, plan, {"B": [], "A": [Event(("a", 1), 1, 2)]})
    with pytest.raises(InputError, match="neither an Event nor a Heartbeat"):
        simulate(spec, plan, {"B": [(1, "b")], "A": []})
    assert simulate(spec, plan, {"B": [Heartbeat(1), Event("b", None, 3)],
                                 "A": [Event(("a", 0), 4, 2)]}).outputs == [("sum", 3, 4)]
    numpy_times = {"B": [Event("b", None, np.int64(3))], "A": [Event(("a", 0), 4, np.float32(2))]}
    assert simulate(spec, plan, numpy_times).outputs == [("sum", 3, 4)]
    with pytest.raises(InputError, match="time True is not a number"):
        simulate(spec, plan, {"B": [Event("b", None, True)], "A": []})
