"""Monitors as DGS programs (issue 25, point 4): the derivation from a DT, its
specification, and ``Monitor.run(..., workers=N)``.

Oracles: the monitor's own sequential run (reference engine) bit for bit, status and
value, on every event; and, for the specification, the consistency checker and the
sequential specification (Theorem 4.13) under random plans and schedules. Queries:
a family built to have parallel tags (a fold of the parallel events since the last
synchronizing one, read at it; random terms, folds and inits), and random queries of
every construct (tests/query_strategies.py), whose derivation must be sound whenever
it finds a parallel tag.
"""

from __future__ import annotations

import logging
import math
import random

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from query_strategies import base_queries

from dt.dgs.consistency import check_consistency
from dt.dgs.monitors import INEXACT, derive, monitor_spec
from dt.dgs.optimizer import random_plan
from dt.dgs.plan import ImplTag
from qre import qre
from qre.language.printer import to_text
from qre.runtime.dgs.monitor import run_monitor
from qre.runtime.dgs.simulate import simulate

ALPHABET = ("i", "j", "r")
SINCE_R = "split(or(eps(0), split(any_word(), atom(r, 0), snd)), {body}, snd)"


def since_r(body: str) -> str:
    """``body`` over the events since the last r (or the start), read at each r; the
    alphabet is r and the tags the body reads (another tag would break its block)."""
    tags = "i, j" if "atom(j" in body else "i"
    return f"alphabet {tags}, r; " + SINCE_R.format(body=f"split({body}, atom(r, 0), fst)")


FAMILY = {
    "sum": since_r("iter(atom(i, cur), 0, +)"),
    "count": since_r("iter(atom(i, 1), 0, +)"),
    "max": since_r("iter(atom(i, cur), -inf, max)"),
    "min of two tags": since_r("iter(or(atom(i, cur), atom(j, 2 * cur)), inf, min)"),
}


def _monitor(text: str):
    return qre(text)


@st.composite
def family_queries(draw) -> str:
    op, init = draw(st.sampled_from([("+", 0), ("min", "inf"), ("max", "-inf"), ("+", 7)]))
    left = draw(st.sampled_from(["cur", "1", "2 * cur", "cur - 1", "abs(cur)"]))
    right = draw(st.sampled_from(["cur", "3", "-cur"]))
    body = (f"iter(atom(i, {left}), {init}, {op})" if draw(st.booleans())
            else f"iter(or(atom(i, {left}), atom(j, {right})), {init}, {op})")
    return since_r(body)


def _word(rng: random.Random, n: int, floats: bool, alphabet=ALPHABET
          ) -> tuple[list[str], list[float]]:
    tags = [rng.choice([t for t in "iiiiijjr" if t in alphabet]) for _ in range(n)]
    pool = [-2.0, -1.0, 0.0, -0.0, 1.0, 3.0] + ([0.5, -2.25, math.nan, math.inf] if floats
                                                   else [])
    return tags, [rng.choice(pool) for _ in range(n)]


def _simulated(seed: int):
    def run(spec, plan, streams):
        rng = random.Random(seed)
        itags = [ImplTag(e.tag, name) for name, items in streams.items() for e in items]
        return simulate(spec, random_plan(spec, set(itags), rng) if rng.random() < 0.5
                        else plan, streams, seed=seed)
    return run


def _same(a, b) -> bool:
    """Equal statuses; defined values equal bit for bit (−0.0 is not 0.0), NaN as NaN
    (a NaN's sign and payload are not observable: dt.symbolic)."""
    defined = a.status == 1
    x, y = a.value[defined], b.value[defined]
    nan = np.isnan(x)
    return (np.array_equal(a.status, b.status) and np.array_equal(nan, np.isnan(y))
            and np.array_equal(x[~nan].view(np.int64), y[~nan].view(np.int64))
            and np.isnan(b.value[~defined]).all())


# -- the derivation ------------------------------------------------------------------

def test_the_derivation_finds_the_folds_and_says_why_not():
    found = {name: derive(_monitor(text).dt) for name, text in FAMILY.items()}
    assert found["sum"].parallel == ("i",) and found["sum"].sync == ("r",)
    assert found["min of two tags"].parallel == ("i", "j")
    ops = {name: {r.op for r in d.registers.values() if r.kind == "fold"}
           for name, d in found.items()}
    assert ops == {"sum": {"add"}, "count": {"add"}, "max": {"max"}, "min of two tags": {"min"}}
    total = derive(_monitor("alphabet i, r; sum(cur)").dt)
    assert total.parallel == () and "its events have an output" in total.why_not()
    mixed = derive(_monitor(since_r("iter(or(atom(i, cur), atom(j, 1)), 0, +)")).dt)
    assert mixed.parallel == ("i", "j")  # a sum and a count into one register
    product = derive(_monitor(since_r("iter(atom(i, cur), 1, *)")).dt)
    assert product.parallel == () and "is not a fold r ⊕ t(data)" in product.why_not()


@pytest.mark.parametrize("name", sorted(FAMILY))
def test_the_derived_specification_is_consistent_on_exact_data(name):
    spec = monitor_spec(derive(_monitor(FAMILY[name]).dt))
    integers = lambda tag, rng: float(rng.randint(-3, 3)) or 1.0  # noqa: E731 - no ±0 ties
    tags = list(_monitor(FAMILY[name]).alphabet)
    assert check_consistency(spec, tags, payload=integers, examples=400) is None


def test_signed_zeros_break_c3_of_max_which_the_witness_reports():
    spec = monitor_spec(derive(_monitor(FAMILY["max"]).dt))
    found = check_consistency(spec, ["i", "r"], payload=lambda t, rng: rng.choice([0.0, -0.0]),
                              conditions=["C3"])
    assert found is not None and "-0.0" in str(found)
    from dt.dgs.spec import Event
    state, _ = spec.states[0].update(spec.init(), Event("i", 0.0))
    state, _ = spec.states[0].update(state, Event("i", -0.0))
    assert spec.states[0].update(state, Event("r", 0.0))[1] == (INEXACT,)


# -- Monitor.run(..., workers=N) against the sequential run ----------------------------

@given(family_queries(), st.integers(0, 2**32 - 1), st.booleans())
def test_a_parallel_run_is_the_sequential_run_bit_for_bit(text, seed, floats):
    m = _monitor(text)
    rng = random.Random(seed)
    tags, values = _word(rng, rng.randint(0, 60), floats, m.alphabet)
    expected = m.run(tags, values, engine="reference")
    codes = np.array([m.alphabet.index(t) for t in tags], np.int8)
    got = run_monitor(m, codes, np.array(values), workers=rng.randint(2, 4),
                      block=rng.randint(1, 5),
                      sequential=lambda: m.run(tags, values, engine="reference"),
                      runner=_simulated(seed), kernel_run=rng.choice([1, 3, 256]))
    assert _same(expected, got)


@given(st.data(), st.integers(0, 2**32 - 1))
def test_random_queries_with_parallel_tags_run_the_same(data, seed):
    """The derivation is sound on every construct: when it finds parallel tags, the
    specification's outputs at the synchronizing events are the monitor's."""
    query = data.draw(base_queries(ALPHABET))
    m = qre(to_text(query), alphabet=list(ALPHABET))
    derivation = derive(m.dt)
    rng = random.Random(seed)
    tags, values = _word(rng, rng.randint(0, 30), floats=False)
    expected = m.run(tags, values, engine="reference")
    if not derivation.parallel:
        assert set(derivation.reasons) == set(ALPHABET)  # each tag says why not
        return
    status = expected.status.reshape(len(tags), len(m.outputs))
    assert all((status[k] == 0).all() for k, t in enumerate(tags) if t in derivation.parallel)
    codes = np.array([m.alphabet.index(t) for t in tags], np.int8)
    got = run_monitor(m, codes, np.array(values), workers=2, block=rng.randint(1, 4),
                      sequential=lambda: m.run(tags, values, engine="reference"),
                      runner=_simulated(seed), kernel_run=rng.choice([1, 3]))
    assert _same(expected, got)


def test_monitor_run_with_workers(caplog):
    m = _monitor(FAMILY["sum"])
    rng = np.random.default_rng(5)
    n = 3000
    tags = (rng.random(n) < 0.02).astype(np.int8)  # 1 is r
    values = rng.integers(-9, 9, n).astype(float)
    with caplog.at_level(logging.INFO, logger="qre.runtime"):
        assert _same(m.run(tags, values), m.run(tags, values, workers=2))
        assert "sequentially" not in caplog.text
        assert _same(m.run(tags, values + 0.25), m.run(tags, values + 0.25, workers=2))
        assert "not exact in another order" in caplog.text
        m.run(tags, values, workers=2, times=np.arange(n))
        assert "times given" in caplog.text
        qre("alphabet i, r; sum(cur)").run(["i", "r"], [1.0, 2.0], workers=2)
        assert "its events have an output" in caplog.text
        windowed = qre("alphabet i, r; avg_over(3, cur)")
        assert _same(windowed.run(["i", "r", "i"], [1.0, 2.0, 4.0], workers=2),
                     windowed.run(["i", "r", "i"], [1.0, 2.0, 4.0]))
        assert "sliding windows or derived tags" in caplog.text
    with pytest.raises(ValueError, match="unknown tag"):
        m.run(["i", "x"], [1.0, 2.0], workers=2)
    with pytest.raises(ValueError, match="workers must be a positive integer, not 0"):
        m.run(["i"], [1.0], workers=0)
