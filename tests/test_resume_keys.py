"""Monitor.resume_keys: many sessions at once, against one Session per key.

Random queries and keyed words cut in two: each key's session fed its first part
gives the states to resume from; resume_keys over the second part must give, bit for
bit, the outputs and states of those sessions fed the rest — on every engine (the
codegen engine's per-key table pass for small DTs, the per-key loop for the others).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from query_strategies import temporal_queries, top_queries

from qre import qre
from qre.language.printer import to_text

ALPHABET = ("a", "b")
QUERIES = st.one_of(top_queries(ALPHABET, 2), temporal_queries(ALPHABET, 1)).map(to_text)
VALUES = st.sampled_from([-1.0, 0.0, 0.5, 2.0, float("nan")])


@settings(max_examples=40, deadline=None)
@given(QUERIES, st.lists(st.tuples(st.integers(0, 3), st.sampled_from(ALPHABET), VALUES),
                         max_size=30), st.integers(0, 30),
       st.sampled_from(["reference", "table", "codegen"]))
def test_resume_keys_is_a_session_per_key(text, events, cut, engine) -> None:  # type: ignore[no-untyped-def]
    m = qre(text, list(ALPHABET))
    keys = np.array([k for k, _, _ in events], dtype=np.int64)
    tags = np.array([t for _, t, _ in events], dtype=object)
    values = np.array([v for _, _, v in events])
    cut = min(cut, len(events))
    sessions = [m.session(engine="table") for _ in range(4)]
    for g, session in enumerate(sessions):
        rows = np.flatnonzero(keys[:cut] == g)
        session.feed(tags[rows], values[rows])
    states = np.array([s.state for s in sessions])
    out, finals = m.resume_keys(states, keys[cut:], tags[cut:], values[cut:], engine=engine)
    status = np.zeros(len(events) - cut, dtype=np.uint8)
    value = np.full(len(events) - cut, np.nan)
    for g, session in enumerate(sessions):
        rows = np.flatnonzero(keys[cut:] == g)
        want = session.feed(tags[cut:][rows], values[cut:][rows])
        status[rows], value[rows] = want.status, want.value
        assert np.array_equal(finals[g], session.state, equal_nan=True)
    assert np.array_equal(out.status, status)
    assert np.array_equal(out.value, value, equal_nan=True)


def test_resume_keys_checks_its_states_and_ids() -> None:
    m = qre("sum(cur)", ["a"])
    state = m.initial_state
    assert m.resume_keys(state[None, :], [0, 0], ["a", "a"], [1.0, 2.0])[0].value.tolist() \
        == [1.0, 3.0]
    with pytest.raises(ValueError, match="one row of"):
        m.resume_keys(state, [0], ["a"], [1.0])
    with pytest.raises(ValueError, match="key_ids must be"):
        m.resume_keys(state[None, :], [1], ["a"], [1.0], engine="table")
    with pytest.raises(ValueError, match="key_ids must be"):
        m.resume_keys(state[None, :], [1], ["a"], [1.0], engine="reference")
    bad = state.copy()
    bad[0] = 5
    with pytest.raises(ValueError, match="status codes"):
        m.resume_keys(bad[None, :], [0], ["a"], [1.0])
