"""The reference evaluator (Figure 25) and the DT model of seed 003, §5.1.

* Differential: the worklist of :mod:`dt.reference` against a plain Kleene
  iteration of Equation (1) written here, independently — for Δ_i(x), Δ_σ(c, d)
  and the update-with-restart Δ_{σ,x}(c, d) of Definition 5.4 — on random DTs
  with cycles and unprimed reads; every state after every prefix, exactly.
* The least fixpoint on cycles; the restartable example of §5.2.2 and its
  counterexample; Theorem 5.2 (i); the API of ``evaluate``.
* :class:`dt.model.DT` validation and ``size``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import (
    alphabets,
    arbitrary_dts,
    data_values,
    extended_values,
    initial_vectors,
    terms,
    words,
)
from util import assert_same_outputs, same, same_vector

from dt.errors import DTError, EvaluationError
from dt.model import DT, EPS, INIT, Transition
from dt.reference import evaluate, initial_config, outputs, run, step
from dt.terms import Apply, EventValue, Term, Var, evaluate_term, parse_term
from dt.values import BOT, TOP, XValue

Config = tuple[XValue, ...]

# --------------------------------------------------------------------------- the oracle


def _join(a: XValue, b: XValue) -> XValue:
    """⊔ written out again (§5.1), so the oracle does not share dt.values.union."""
    if a is BOT:
        return b
    if b is BOT:
        return a
    return TOP


def _leq(a: XValue, b: XValue) -> bool:
    return a is BOT or b is TOP or same(a, b)


def _transition_value(t: Transition, value_of: Callable[[Var], XValue],
                      cur: EventValue | None) -> XValue:
    """[[t]](c'|X): ⊥ if some source is ⊥, else ⊤ if some source is ⊤, else the term."""
    values = {v: value_of(v) for v in t.sources}
    if any(x is BOT for x in values.values()):
        return BOT
    if any(x is TOP for x in values.values()):
        return TOP
    return evaluate_term(t.term, values, cur)  # type: ignore[arg-type]


def kleene(dt: DT, label: str, old: Config | None, cur: EventValue | None,
           seed: Mapping[str, XValue]) -> Config:
    """The least c' with c'(q') = seed(q) ⊔ ⊔_{(label, X, q', t)} [[t]](c'|X), by Kleene iteration.

    Start every primed variable at ⊥ and recompute all of them *simultaneously*
    from the previous iterate until nothing changes. The map is monotone, so the
    iterates rise; each value rises at most twice (⊥ → d → ⊤), which bounds the
    number of rounds by 2|Q| + 1.
    """
    fires = [t for t in dt.transitions if t.on == label or t.on == EPS]
    position = {q: k for k, q in enumerate(dt.states)}
    now: dict[str, XValue] = {q: BOT for q in dt.states}
    for _ in range(2 * len(dt.states) + 2):

        def value_of(v: Var, now: dict[str, XValue] = now) -> XValue:
            if v.primed:
                return now[v.name]
            assert old is not None
            return old[position[v.name]]

        nxt = {}
        for q in dt.states:
            acc = seed.get(q, BOT)
            for t in fires:
                if t.target == q:
                    acc = _join(acc, _transition_value(t, value_of, cur))
            nxt[q] = acc
        assert all(_leq(now[q], nxt[q]) for q in dt.states), "Kleene iterates must rise"
        if all(same(now[q], nxt[q]) for q in dt.states):
            return tuple(now[q] for q in dt.states)
        now = nxt
    raise AssertionError("Kleene iteration did not converge within 2|Q| + 1 rounds")


def _seed(dt: DT, x: Sequence[XValue]) -> dict[str, XValue]:
    return dict(zip(dt.initial, x, strict=True))


def oracle_run(dt: DT, x: Sequence[XValue], word, restarts=None) -> list[Config]:
    """Configurations after every prefix, by the oracle (restarts[k] for event k, or None)."""
    config = kleene(dt, INIT, None, None, _seed(dt, x))
    configs = [config]
    for k, (tag, cur) in enumerate(word):
        seed = {} if restarts is None or restarts[k] is None else _seed(dt, restarts[k])
        config = kleene(dt, tag, config, cur, seed)
        configs.append(config)
    return configs


def _project(dt: DT, config: Config) -> tuple[XValue, ...]:
    return tuple(config[dt.states.index(f)] for f in dt.final)


def _assert_same_configs(got: list[Config], want: list[Config]) -> None:
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        assert same_vector(g, w), f"configuration after {k} events: got {g}, expected {w}"


# --------------------------------------------------------------------------- differential



@st.composite
def lively_dts(draw) -> DT:
    """DTs where most states have a writer on every label, so values stay defined longer.

    arbitrary_dts leaves most states without a writer, hence mostly ⊥; here each
    (label, state) gets 0, 1 (usually) or 2 transitions (two writers: a conflict),
    with sources biased towards unprimed states (the previous configuration).
    """
    alphabet = draw(alphabets(1, 2))
    n = draw(st.integers(1, 4))
    states = tuple(f"q{k}" for k in range(n))
    initial = tuple(draw(st.lists(st.sampled_from(states), unique=True, min_size=1,
                                  max_size=min(n, 2))))
    final = tuple(draw(st.lists(st.sampled_from(states), unique=True, min_size=1, max_size=n)))
    transitions = []
    for label in (*alphabet, INIT, EPS):
        for q in states:
            for _ in range(draw(st.sampled_from([0, 1, 1, 1, 2] if label != EPS else [0, 0, 1]))):
                stepwise = label not in (INIT, EPS)
                primed = [Var(p, True) for p in states]
                pool = [Var(p) for p in states] * 2 + primed if stepwise else primed
                sources = draw(st.lists(st.sampled_from(pool), unique=True, max_size=3))
                term = draw(terms(sources, allow_cur=stepwise, max_leaves=3))
                # Make the value depend on every source: a worklist that reads a
                # source at the wrong time then shows in the output.
                for v in sorted(set(sources) - term.variables(), key=str):
                    term = Apply("add", (term, v))
                transitions.append(Transition(label, frozenset(sources), q, term))
    return DT(alphabet, states, initial, final, tuple(transitions))


def nonempty_words(alphabet: tuple[str, ...]):
    """Words of 1 to 8 events (shared ``words`` is mostly empty under derandomization)."""
    return st.lists(st.tuples(st.sampled_from(alphabet), data_values), min_size=1, max_size=8)


def some_initial_vectors(dt: DT):
    """Extended initial vectors, or (half the time) all-defined ones."""
    return st.one_of(initial_vectors(dt), initial_vectors(dt, data_values))


# Few states and many transitions make cycles through primed variables common.
dense_dts = arbitrary_dts(max_states=3, max_transitions=10)
any_dts = st.one_of(arbitrary_dts(), dense_dts, lively_dts())


# The differential tests are the heart of this file: more examples than the profile's
# default (never fewer), since the orders that expose worklist bugs are rare.
differential = settings(max_examples=max(200, settings.default.max_examples))


@st.composite
def dts_and_reorderings(draw) -> tuple[DT, DT]:
    """A DT and the same DT with its states and transitions listed in another order.

    The least fixpoint does not depend on these orders, but the worklist's visiting
    order does: running both makes order-dependent bugs far more likely to show.
    """
    dt = draw(any_dts)
    states = tuple(draw(st.permutations(dt.states)))
    transitions = tuple(draw(st.permutations(dt.transitions)))
    return dt, DT(dt.alphabet, states, dt.initial, dt.final, transitions)


def _in_order_of(dt: DT, other: DT, config: Config) -> Config:
    """``config`` of ``other`` (same states, other order) re-listed in ``dt.states`` order."""
    by_name = dict(zip(other.states, config, strict=True))
    return tuple(by_name[q] for q in dt.states)


@differential
@given(st.data())
def test_initial_config_is_the_least_fixpoint(data):
    dt, again = data.draw(dts_and_reorderings())
    x = data.draw(some_initial_vectors(dt))
    want = kleene(dt, INIT, None, None, _seed(dt, x))
    assert same_vector(initial_config(dt, x), want)
    assert same_vector(_in_order_of(dt, again, initial_config(again, x)), want)


@differential
@given(st.data())
def test_run_matches_kleene_iteration(data):
    """Δ_i(x) then Δ_σ(c, d) per event: every state after every prefix."""
    dt, again = data.draw(dts_and_reorderings())
    x = data.draw(some_initial_vectors(dt))
    word = data.draw(nonempty_words(dt.alphabet))
    want = oracle_run(dt, x, word)
    _assert_same_configs(run(dt, x, word), want)
    _assert_same_configs([_in_order_of(dt, again, c) for c in run(again, x, word)], want)
    assert_same_outputs(evaluate(dt, x, word), [_project(dt, c) for c in want])
    assert_same_outputs(evaluate(again, x, word), [_project(dt, c) for c in want])


@differential
@given(st.data())
def test_step_matches_kleene_iteration_from_any_config(data):
    """Δ_σ(c, d) from an arbitrary (even unreachable) configuration c."""
    dt, again = data.draw(dts_and_reorderings())
    config = data.draw(st.tuples(*[extended_values] * len(dt.states)))
    tag = data.draw(st.sampled_from(dt.alphabet))
    cur = data.draw(data_values)
    want = kleene(dt, tag, config, cur, {})
    assert same_vector(step(dt, config, tag, cur), want)
    config2 = _in_order_of(again, dt, config)
    assert same_vector(_in_order_of(dt, again, step(again, config2, tag, cur)), want)


@differential
@given(st.data())
def test_step_with_restarts_matches_kleene_iteration(data):
    """Δ_{σ,x}(c, d) of Definition 5.4: restart vectors (or none) on every event."""
    dt, again = data.draw(dts_and_reorderings())
    x = data.draw(some_initial_vectors(dt))
    word = data.draw(nonempty_words(dt.alphabet))
    restarts = data.draw(st.lists(st.none() | some_initial_vectors(dt), min_size=len(word),
                                  max_size=len(word)))
    want = oracle_run(dt, x, word, restarts)
    for machine in (dt, again):
        config = initial_config(machine, x)
        got = [config]
        for (tag, cur), restart in zip(word, restarts, strict=True):
            config = step(machine, config, tag, cur, restart=restart)
            got.append(config)
        _assert_same_configs([_in_order_of(dt, machine, c) for c in got], want)


@given(st.data())
def test_restart_with_all_bottom_is_a_plain_step(data):
    dt = data.draw(any_dts)
    config = data.draw(st.tuples(*[extended_values] * len(dt.states)))
    tag = data.draw(st.sampled_from(dt.alphabet))
    cur = data.draw(data_values)
    plain = step(dt, config, tag, cur)
    assert same_vector(step(dt, config, tag, cur, restart=(BOT,) * len(dt.initial)), plain)


# --------------------------------------------------------------------------- least fixpoint


def _t(on: str, sources: str, target: str, term: str) -> Transition:
    """A transition from text: sources as a space-separated list like "i f'"."""
    return Transition(on, frozenset(_var(s) for s in sources.split()), target, parse_term(term))


def _var(text: str) -> Var:
    return Var(text.rstrip("'"), text.endswith("'"))


def _cycle_dt(n: int, *, feed: bool) -> DT:
    """p feeds q0 → q1 → … → q{n-1} → q0 (epsilon copies); on 'a' p' := cur if ``feed``."""
    qs = [f"q{k}" for k in range(n)]
    trs = [_t(EPS, "p'", "q0", "p'")]
    trs += [_t(EPS, f"{qs[k]}'", qs[(k + 1) % n], f"{qs[k]}'") for k in range(n)]
    if feed:
        trs.append(_t("a", "", "p", "cur"))
    return DT(("a", "b"), ("p", *qs), ("p",), tuple(qs), tuple(trs))


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_cycle_carrying_a_value_is_conflict(n):
    """A defined value flowing round a primed cycle meets itself: ⊤ on the whole cycle."""
    dt = _cycle_dt(n, feed=True)
    # Initialization: x(p) = 7 enters the cycle.
    assert initial_config(dt, (7.0,)) == (7.0, *[TOP] * n)
    # An 'a' event: p' := cur enters the cycle.
    c = step(dt, (BOT,) * (n + 1), "a", 1.0)
    assert c == (1.0, *[TOP] * n)


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_cycle_with_no_input_is_undefined(n):
    dt = _cycle_dt(n, feed=True)
    assert initial_config(dt, (BOT,)) == (BOT,) * (n + 1)
    # 'b' feeds nothing (p has no 'b' transition), whatever the previous configuration.
    assert step(dt, (5.0, *[TOP] * n), "b", 1.0) == (BOT,) * (n + 1)
    assert step(dt, (5.0, *[3.0] * n), "b", 1.0) == (BOT,) * (n + 1)


def test_self_loop_fed_nothing_is_undefined():
    dt = DT(("a",), ("q",), (), ("q",), (_t("a", "q'", "q", "q' + 1"),))
    assert initial_config(dt, ()) == (BOT,)
    assert evaluate(dt, (), [("a", 1.0), ("a", 2.0)]) == [(BOT,), (BOT,), (BOT,)]
    assert step(dt, (5.0,), "a", 1.0) == (BOT,)


def test_self_loop_fed_a_value_is_conflict():
    dt = DT(("a",), ("p", "q"), (), ("q",),
            (_t("a", "", "p", "cur"), _t("a", "p'", "q", "p'"), _t("a", "q'", "q", "q' + 1")))
    assert step(dt, (BOT, BOT), "a", 1.0) == (1.0, TOP)


def test_two_equal_contributions_are_conflict():
    """Two transitions writing the same value to one state: d ⊔ d = ⊤, never deduplicated."""
    dt = DT(("a",), ("q",), (), ("q",), (_t("a", "", "q", "cur"), _t("a", "", "q", "cur")))
    assert step(dt, (BOT,), "a", 2.0) == (TOP,)


def test_chain_listed_backwards_propagates_forward():
    """q0' := cur; q{k+1}' := q{k}' + 1, transitions listed last-first (worklist order)."""
    n = 6
    trs = [_t("a", f"q{k}'", f"q{k + 1}", f"q{k}' + 1") for k in reversed(range(n - 1))]
    trs.append(_t("a", "", "q0", "cur"))
    dt = DT(("a",), tuple(f"q{k}" for k in range(n)), (), (f"q{n - 1}",), tuple(trs))
    assert step(dt, (BOT,) * n, "a", 10.0) == tuple(10.0 + k for k in range(n))


def test_unprimed_source_undefined_in_the_previous_config():
    """[[t]] is ⊥ when an unprimed source was ⊥ before the step, even if the primed one is set."""
    dt = DT(("a",), ("p", "q", "r"), ("p",), ("r",),
            (_t("a", "", "q", "cur"), _t("a", "p q'", "r", "p + q'")))
    assert step(dt, (BOT, BOT, BOT), "a", 1.0) == (BOT, 1.0, BOT)
    assert step(dt, (4.0, BOT, BOT), "a", 1.0) == (BOT, 1.0, 5.0)
    assert step(dt, (TOP, BOT, BOT), "a", 1.0) == (BOT, 1.0, TOP)


def test_unprimed_source_reads_the_previous_config_after_its_primed_copy_is_set():
    """r' := p + q' is applied only once q' is known, after p' has its new value: p is still old."""
    dt = DT(("a",), ("p", "q", "r"), ("p",), ("r",),
            (_t("a", "", "p", "cur"), _t("a", "", "q", "cur + 1"), _t("a", "p q'", "r", "p + q'")))
    assert step(dt, (100.0, BOT, BOT), "a", 1.0) == (1.0, 2.0, 102.0)
    # Also when the new value of p comes from a restart (Definition 5.4).
    assert step(dt, (100.0, BOT, BOT), "a", 1.0, restart=(50.0,)) == (TOP, 2.0, 102.0)
    dt2 = DT(("a",), ("p", "q", "r"), ("p",), ("r",),
             (_t("a", "", "q", "cur + 1"), _t("a", "p q'", "r", "p + q'")))
    assert step(dt2, (100.0, BOT, BOT), "a", 1.0, restart=(50.0,)) == (50.0, 2.0, 102.0)


def test_unused_source_still_gates_the_transition():
    """X may contain variables the term does not use; a ⊥ or ⊤ among them still counts."""
    dt = DT(("a",), ("p", "q"), ("p",), ("q",), (_t("a", "p", "q", "cur"),))
    assert step(dt, (BOT, BOT), "a", 3.0) == (BOT, BOT)
    assert step(dt, (TOP, BOT), "a", 3.0) == (BOT, TOP)
    assert step(dt, (0.0, BOT), "a", 3.0) == (BOT, 3.0)


def test_conflict_reaches_a_state_read_before_it_rose():
    """r reads q' which is first defined, then ⊤: the final value of r is ⊤."""
    dt = DT(("a",), ("p", "q", "r"), (), ("r",),
            (_t("a", "q'", "r", "q' * 2"), _t("a", "", "q", "cur"), _t("a", "p'", "q", "p'"),
             _t("a", "", "p", "1")))
    assert step(dt, (BOT, BOT, BOT), "a", 3.0) == (1.0, TOP, TOP)


# --------------------------------------------------------------------------- §5.2.2 examples


def _restartable_example() -> DT:
    """Q = {i, f}, Σ = {a, b}, I = {i}, F = {f}, on a: f' := i + cur (§5.2.2)."""
    return DT(("a", "b"), ("i", "f"), ("i",), ("f",), (_t("a", "i", "f", "i + cur"),))


def _counterexample() -> DT:
    """Q = {i, f}, I = {i}, F = {f}, on a: i' := i and f' := i' + cur (§5.2.2)."""
    return DT(("a", "b"), ("i", "f"), ("i",), ("f",),
              (_t("a", "i", "i", "i"), _t("a", "i'", "f", "i' + cur")))


@given(data_values, data_values, data_values)
def test_restartable_example_configurations(x, d, z):
    dt = _restartable_example()
    # Starting with x gives (x, ⊥).
    c = initial_config(dt, (x,))
    assert same_vector(c, (x, BOT))
    # Updating with (a, d) and restarting with z gives (z, x + d).
    assert same_vector(step(dt, c, "a", d, restart=(z,)), (z, x + d))
    # Without a restart i is not kept (no transition writes i').
    assert same_vector(step(dt, c, "a", d), (BOT, x + d))
    assert same_vector(step(dt, c, "b", d, restart=(z,)), (z, BOT))


@given(extended_values, words(("a", "b")))
def test_restartable_example_outputs(x, word):
    """Output x + d on exactly the input (x, (a, d)); ⊥ on every other word shape."""
    got = evaluate(_restartable_example(), (x,), word)
    want = []
    for k in range(len(word) + 1):
        prefix = word[:k]
        if len(prefix) == 1 and prefix[0][0] == "a":
            d = prefix[0][1]
            want.append((x if x is BOT or x is TOP else x + d,))
        else:
            want.append((BOT,))
    assert_same_outputs(got, want)


@given(st.lists(st.tuples(st.sampled_from(("a", "b")), data_values,
                          st.lists(extended_values, max_size=3)), max_size=6),
       st.lists(extended_values, max_size=3))
def test_restartable_example_simulation(events, starts):
    """Definition 5.4 with the paper's relation c ~ [c1..ck] iff c = ⊔ ci.

    Threads run separately (each started by Δ_i, then plain Δ_σ); the single
    configuration receives all new threads at once through Δ_{σ,x} with x their
    union. Properties (ii) and (iii): it equals the union of the threads, and so
    does its output.
    """
    dt = _restartable_example()

    def join_all(vectors):
        acc = (BOT,) * len(dt.states)
        for v in vectors:
            acc = tuple(_join(a, b) for a, b in zip(acc, v, strict=True))
        return acc

    def join_values(xs):
        acc = BOT
        for x in xs:
            acc = _join(acc, x)
        return acc

    threads = [initial_config(dt, (x,)) for x in starts]
    single = initial_config(dt, (join_values(starts),))
    assert same_vector(single, join_all(threads))  # (i)
    for tag, d, new in events:
        threads = [step(dt, c, tag, d) for c in threads] + [initial_config(dt, (x,)) for x in new]
        single = step(dt, single, tag, d, restart=(join_values(new),))
        assert same_vector(single, join_all(threads))  # (ii)
        assert same_vector(outputs(dt, single), join_all(threads)[1:])  # (iii)


@given(data_values, data_values, data_values)
def test_counterexample_violates_restartability(x1, d, x2):
    """Start x1, then Δ_{a,x2} gives (⊤, ⊤); the threads' outputs join to x1 + d, not ⊤."""
    dt = _counterexample()
    c0 = initial_config(dt, (x1,))
    assert same_vector(c0, (x1, BOT))
    restarted = step(dt, c0, "a", d, restart=(x2,))
    assert restarted == (TOP, TOP)
    # The threads of property (ii): the old thread stepped, and a new thread for x2.
    old_thread = step(dt, c0, "a", d)
    new_thread = initial_config(dt, (x2,))
    assert same_vector(old_thread, (x1, x1 + d))
    assert same_vector(new_thread, (x2, BOT))
    thread_output = _join(outputs(dt, old_thread)[0], outputs(dt, new_thread)[0])
    assert same(thread_output, x1 + d)
    # Property (iii) would need the single configuration's output to equal it: it does not.
    assert outputs(dt, restarted) == (TOP,)
    assert not same(outputs(dt, restarted)[0], thread_output)


# --------------------------------------------------------------------------- evaluate API


def test_evaluate_length_and_empty_word():
    dt = _restartable_example()
    assert evaluate(dt, (1.0,), []) == [(BOT,)]
    out = evaluate(dt, (1.0,), [("a", 2.0), ("b", 0.0), ("a", 1.0)])
    assert out == [(BOT,), (3.0,), (BOT,), (BOT,)]


@given(st.data())
def test_evaluate_has_one_output_per_prefix(data):
    dt = data.draw(arbitrary_dts())
    x = data.draw(some_initial_vectors(dt))
    word = data.draw(words(dt.alphabet))
    out = evaluate(dt, x, word)
    assert len(out) == len(word) + 1
    assert all(len(y) == len(dt.final) for y in out)
    assert same_vector(out[0], outputs(dt, initial_config(dt, x)))


def test_evaluate_accepts_any_iterable_word():
    dt = _restartable_example()
    assert evaluate(dt, (1.0,), iter([("a", 2.0)])) == [(BOT,), (3.0,)]


def test_unknown_tag():
    dt = _restartable_example()
    with pytest.raises(ValueError, match="unknown tag 'z'"):
        evaluate(dt, (1.0,), [("a", 1.0), ("z", 1.0)])
    with pytest.raises(ValueError, match="unknown tag 'init'"):
        step(dt, (BOT, BOT), INIT, 1.0)
    with pytest.raises(ValueError, match="unknown tag 'eps'"):
        step(dt, (BOT, BOT), EPS, 1.0)


@pytest.mark.parametrize("x", [(), (1.0, 2.0)])
def test_wrong_initial_vector_length(x):
    dt = _restartable_example()
    with pytest.raises(ValueError, match="initial vector has"):
        evaluate(dt, x, [])
    with pytest.raises(ValueError, match="initial vector has"):
        initial_config(dt, x)
    with pytest.raises(ValueError, match="initial vector has"):
        step(dt, (BOT, BOT), "a", 1.0, restart=x)


def test_record_events():
    dt = DT(("t",), ("s", "last"), ("s",), ("s", "last"),
            (_t("t", "s", "s", "s + cur.price * cur.qty"), _t("t", "", "last", "cur.ts")))
    word = [("t", {"price": 2.0, "qty": 3.0, "ts": 10.0}),
            ("t", {"price": 1.5, "qty": 2.0, "ts": 11.0})]
    assert evaluate(dt, (0.0,), word) == [(0.0, BOT), (6.0, 10.0), (9.0, 11.0)]


def test_missing_field_is_an_evaluation_error():
    dt = DT(("t",), ("s",), ("s",), ("s",), (_t("t", "s", "s", "s + cur.price"),))
    with pytest.raises(EvaluationError, match="price"):
        evaluate(dt, (0.0,), [("t", {"qty": 1.0})])


def test_missing_field_not_read_while_a_source_is_undefined():
    """The term is evaluated only when its sources are defined (Equation (1))."""
    dt = DT(("t",), ("s",), ("s",), ("s",), (_t("t", "s", "s", "s + cur.price"),))
    assert evaluate(dt, (BOT,), [("t", {"qty": 1.0})]) == [(BOT,), (BOT,)]


# --------------------------------------------------------------------------- Theorem 5.2 (i)


def _status(x: XValue) -> str:
    return "⊥" if x is BOT else "⊤" if x is TOP else "d"


@given(st.data())
def test_status_depends_only_on_tags_and_statuses(data):
    """Theorem 5.2 (i): x1 ≡ x2 and equal tag strings give ≡ outputs (and configurations)."""
    dt = data.draw(any_dts)
    x1 = data.draw(some_initial_vectors(dt))
    # x2: same status as x1 position by position, other data.
    x2 = tuple(v if v is BOT or v is TOP else data.draw(data_values) for v in x1)
    tags = data.draw(st.lists(st.sampled_from(dt.alphabet), max_size=7))
    d1 = data.draw(st.lists(data_values, min_size=len(tags), max_size=len(tags)))
    d2 = data.draw(st.lists(data_values, min_size=len(tags), max_size=len(tags)))
    run1 = run(dt, x1, list(zip(tags, d1, strict=True)))
    run2 = run(dt, x2, list(zip(tags, d2, strict=True)))
    for k, (c1, c2) in enumerate(zip(run1, run2, strict=True)):
        assert [_status(v) for v in c1] == [_status(v) for v in c2], f"after {k} events"
        assert [_status(v) for v in outputs(dt, c1)] == [_status(v) for v in outputs(dt, c2)]


# --------------------------------------------------------------------------- DT validation


def _dt(transitions=(), *, alphabet=("a",), states=("p", "q"), initial=("p",),
        final=("q",)) -> DT:
    return DT(alphabet, states, initial, final, tuple(transitions))


BAD_TRANSITIONS = [
    (_t("z", "p", "q", "p"), "label 'z' is not a tag"),
    (_t("a", "p", "nope", "p"), "target 'nope' is not a state"),
    (Transition("a", frozenset({Var("r")}), "q", parse_term("1")), "source r is not a state"),
    (Transition("a", frozenset({Var("r", True)}), "q", parse_term("1")),
     "source r' is not a state"),
    (Transition("a", frozenset(), "q", parse_term("p + 1")), "reads p, which is not among"),
    (Transition("a", frozenset({Var("p")}), "q", parse_term("p'")), "reads p'"),
    (_t(INIT, "p", "q", "p"), "init transition reads only primed sources, not p"),
    (_t(EPS, "p' q", "q", "p'"), "eps transition reads only primed sources, not q"),
    (_t(INIT, "", "q", "cur"), "init transition cannot read cur"),
    (_t(EPS, "p'", "q", "p' + cur.x"), "eps transition cannot read cur"),
]


@pytest.mark.parametrize(("bad", "fragment"), BAD_TRANSITIONS,
                         ids=[f for _, f in BAD_TRANSITIONS])
def test_invalid_transition_is_named(bad, fragment):
    good = _t("a", "p", "q", "p + cur")
    with pytest.raises(DTError) as info:
        _dt([good, bad])
    message = str(info.value)
    assert fragment in message
    # The message names the offending transition: its index and its text.
    assert f"transition 1 ({bad})" in message


BAD_DTS = [
    (dict(states=("p", "q", "p")), "state 'p' is listed twice"),
    (dict(alphabet=("a", "init")), "tag 'init' is reserved"),
    (dict(alphabet=("a", "eps")), "tag 'eps' is reserved"),
    (dict(alphabet=("a", "a")), "tag 'a' is listed twice"),
    (dict(alphabet=("a", "")), "tag ''"),
    (dict(initial=("r",)), "initial state 'r' is not a state"),
    (dict(final=("q", "r")), "final state 'r' is not a state"),
    (dict(initial=("p", "p")), "initial state 'p' is listed twice"),
    (dict(states=("p", "q", "cur")), "state 'cur'"),
    (dict(states=("p", "q", "nan")), "state 'nan'"),
    (dict(states=("p", "q", "true")), "state 'true'"),
    (dict(states=("p", "q", "1x")), "state '1x'"),
    (dict(states=("p", "q", "a b")), "state 'a b'"),
    (dict(states=("p", "q", "q'")), "state \"q'\""),
]


@pytest.mark.parametrize(("kwargs", "fragment"), BAD_DTS, ids=[f for _, f in BAD_DTS])
def test_invalid_dt_is_named(kwargs, fragment):
    with pytest.raises(DTError) as info:
        _dt(**kwargs)
    assert fragment in str(info.value)
    assert isinstance(info.value, ValueError)


def test_valid_dt_with_every_label():
    dt = _dt([_t("a", "p q'", "q", "p + q' + cur"), _t(INIT, "p'", "q", "p'"),
              _t(EPS, "p'", "q", "-p'")])
    assert len(dt.transitions) == 3
    assert [t.on for t in dt.on("a").transitions] == ["a", EPS]
    assert [t.on for t in dt.on(INIT).transitions] == [INIT, EPS]


def test_size_hand_computed():
    """size = |Q| + Σ (|X| + 1 + nodes(t)) (§5.1, dt.model docstring)."""
    dt = DT(("a",), ("i", "f", "g"), ("i",), ("f", "g"), (
        _t("a", "i", "f", "i + cur"),      # 1 source + 1 target + 3 nodes = 5
        _t(INIT, "i'", "g", "i' * 2"),     # 1 + 1 + 3 = 5
        _t(EPS, "f'", "g", "-f'"),         # 1 + 1 + 2 = 4
        _t("a", "i f'", "g", "1"),         # 2 + 1 + 1 = 4 (unused sources count)
    ))
    assert dt.size == 3 + 5 + 5 + 4 + 4
    assert [t.size for t in dt.transitions] == [5, 5, 4, 4]
    assert _dt().size == 2


@given(arbitrary_dts())
def test_size_formula(dt):
    def nodes(t: Term) -> int:
        return 1 + sum(nodes(c) for c in t.children())

    want = len(dt.states) + sum(len(t.sources) + 1 + nodes(t.term) for t in dt.transitions)
    assert dt.size == want
