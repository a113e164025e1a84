"""Monitor.run_keys and Monitor.session (API.md) against plain runs, on random DTs and words.

* ``run_keys`` equals running each key's events alone, scattered back to the input rows;
* a session fed in arbitrary chunks equals one ``run``, and so does a session
  restored from ``Session.state`` between chunks.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import arbitrary_dts, data_values

from qre import Monitor


@st.composite
def keyed_runs(draw):
    dt = draw(arbitrary_dts())
    n = draw(st.integers(0, 12))
    tags = draw(st.lists(st.sampled_from(dt.alphabet), min_size=n, max_size=n))
    values = draw(st.lists(data_values, min_size=n, max_size=n))
    keys = draw(st.lists(st.sampled_from(["k1", "k2", 3, None]), min_size=n, max_size=n))
    return Monitor.from_dt(dt), keys, tags, values


def _assert_same(a, b):
    np.testing.assert_array_equal(a.status, b.status)
    np.testing.assert_array_equal(a.value, b.value)


@given(keyed_runs())
def test_run_keys_equals_each_key_alone(case):
    m, keys, tags, values = case
    together = m.run_keys(keys, tags, values)
    for key in set(keys):
        rows = [k for k, kk in enumerate(keys) if kk == key]
        alone = m.run([tags[k] for k in rows], [values[k] for k in rows])
        np.testing.assert_array_equal(together.status[rows], alone.status)
        np.testing.assert_array_equal(together.value[rows], alone.value)


@given(keyed_runs(), st.data())
def test_session_in_chunks_equals_one_run(case, data):
    m, _, tags, values = case
    whole = m.run(tags, values)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(tags)), max_size=4)))
    bounds = [0, *cuts, len(tags)]
    session = m.session()
    restored = m.session()
    parts, parts_restored = [], []
    for lo, hi in itertools.pairwise(bounds):
        parts.append(session.feed(tags[lo:hi], values[lo:hi]))
        # Save and restore the state between chunks: nothing is lost.
        restored = m.session(state=restored.state.copy())
        parts_restored.append(restored.feed(tags[lo:hi], values[lo:hi]))
    for chunks in (parts, parts_restored):
        status = np.concatenate([p.status for p in chunks]) if chunks else whole.status
        value = np.concatenate([p.value for p in chunks]) if chunks else whole.value
        np.testing.assert_array_equal(status, whole.status)
        np.testing.assert_array_equal(value, whole.value)
    np.testing.assert_array_equal(np.asarray(session.output[0]), np.asarray(restored.output[0]))
    np.testing.assert_array_equal(np.asarray(session.output[1]), np.asarray(restored.output[1]))


def test_state_is_flat_and_checked():
    from dt import DT

    d = DT.from_json('{"alphabet": ["a"], "states": ["i", "f"], "initial": ["i"], '
                     '"final": ["f"], "transitions": [{"on": "a", "sources": ["i"], '
                     '"target": "f", "term": "i + cur"}]}')
    m = Monitor.from_dt(d)
    s = m.session()
    assert s.state.dtype == np.float64 and s.state.shape == (4,)
    assert s.state.tolist()[:2] == [1.0, 0.0]  # statuses of i, f after init: defined, undefined
    s.feed(["a"], [2.0])
    assert s.output == (1, 2.0)
    with pytest.raises(ValueError, match="flat array of 4 floats"):
        m.session(state=np.zeros(3))
    with pytest.raises(ValueError, match="keys has 1 entries"):
        m.run_keys(["k"], ["a", "a"], [1.0, 2.0])


@given(keyed_runs(), st.data())
def test_engines_agree_through_the_monitor(case, data):
    """run, run_keys and sessions: the table engine gives the reference engine's rows."""
    m, keys, tags, values = case
    ref = m.run(tags, values, engine="reference")
    _assert_same(m.run(tags, values, engine="table"), ref)
    _assert_same(m.run_keys(keys, tags, values, engine="table"),
                 m.run_keys(keys, tags, values, engine="reference"))
    cut = data.draw(st.integers(0, len(tags)))
    session = m.session(engine="table")
    first = session.feed(tags[:cut], values[:cut])
    resumed = m.session(state=session.state, engine="reference")
    second = resumed.feed(tags[cut:], values[cut:])
    np.testing.assert_array_equal(np.concatenate([first.status, second.status]), ref.status)
    np.testing.assert_array_equal(np.concatenate([first.value, second.value]), ref.value)
