"""Window contents carried between calls (issue 23 §4): a session fed in any chunks,
resumed anywhere from its state and its windows' contents, gives the outputs of one run
over everything, bit for bit — count windows, windows over durations, stored window
aggregates (with clock ticks), partial windows — and carries no more events than its
windows can still reach."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dt.windows import TICK
from qre import qre
from qre.language import ast
from qre.runtime.window_contents import WindowContents
from tests.test_window_signals import ALPHABET, VALUES, windowed_queries


def _bits(out) -> list:  # type: ignore[no-untyped-def]
    return list(zip(out.status.reshape(-1).tolist(),
                    np.nan_to_num(out.value.reshape(-1), nan=7.5).view(np.int64).tolist(),
                    strict=True))


def _chunks(n: int, cuts: list[int]) -> list[tuple[int, int]]:
    points = sorted({0, n, *(c % (n + 1) for c in cuts)})
    return list(itertools.pairwise(points))


@settings(max_examples=60, deadline=None)
@given(st.data(), st.lists(st.tuples(st.sampled_from(ALPHABET), VALUES), max_size=14),
       st.lists(st.integers(0, 20), max_size=4), st.sampled_from(["table", "reference"]))
def test_a_session_in_chunks_equals_one_run(data, word, cuts, engine):
    query = data.draw(windowed_queries())
    m = qre(ast.Program(ALPHABET, (), query))
    tags = [t for t, _ in word]
    values = np.array([v for _, v in word], dtype=np.float64)
    whole = m.run(tags, values, engine=engine)
    state, windows, outs = None, None, []
    for lo, hi in _chunks(len(word), cuts):
        s = m.session(state, engine=engine, windows=windows)
        outs.append(s.feed(tags[lo:hi], values[lo:hi]))
        state, windows = s.state, WindowContents.from_bytes(s.windows.to_bytes())
    got = [b for out in outs for b in _bits(out)]
    assert got == _bits(whole)


@settings(max_examples=40, deadline=None)
@given(st.data(), st.lists(st.tuples(st.integers(0, 4), st.sampled_from(ALPHABET), VALUES),
                           max_size=14),
       st.lists(st.integers(0, 20), max_size=4))
def test_a_timed_session_in_chunks_equals_run_timed(data, rows, cuts):
    """Times in µs, as a stream feeds them; windows over durations of whole seconds. The
    rows are fed in run_timed's processing order (time, tag, value, NaN last)."""
    query = data.draw(windowed_queries(timed=True))
    m = qre(ast.Program(ALPHABET, (), query))
    rows = sorted(rows, key=lambda r: (r[1], np.isnan(r[2]), 0.0 if np.isnan(r[2]) else r[2]))
    times = np.cumsum([gap for gap, _, _ in rows]).astype(np.int64) * 700_000
    tags = [t for _, t, _ in rows]
    values = np.array([v for _, _, v in rows], dtype=np.float64)
    frame = m.run_timed(times, tags, values, time_unit="us", undefined="keep",
                        engine="table")
    state, windows, got = None, None, []
    for lo, hi in _chunks(len(rows), cuts):
        s = m.session(state, engine="table", windows=windows)
        got += _bits(s.feed(tags[lo:hi], values[lo:hi], times=times[lo:hi]))
        state, windows = s.state, s.windows
    want = list(zip(frame["status"].tolist(),
                    np.nan_to_num(frame["value"].to_numpy(dtype=np.float64), nan=7.5)
                    .view(np.int64).tolist(), strict=True))
    assert got == want


def test_ticks_read_a_stored_aggregate_and_do_not_enter():
    """A stored window aggregate through a session fed ticks (as a stream's key is): the
    outputs of run_timed at the ticks, ⊥ elsewhere."""
    m = qre("alphabet a; aggregate(median(cur), 4s, 3s)")
    second = 1_000_000
    times = np.array([0, 1, 1, 2, 3, 4, 5, 6, 7, 9]) * second
    tags = ["a", TICK, "a", TICK, "a", TICK, TICK, TICK, TICK, "a"]
    values = np.array([5.0, np.nan, 1.0, np.nan, 3.0, np.nan, np.nan, np.nan, np.nan, 2.0])
    s = m.session()
    outs = [s.feed(tags[:4], values[:4], times=times[:4], derive=False)]
    s = m.session(s.state, windows=s.windows)
    outs.append(s.feed(tags[4:], values[4:], times=times[4:], derive=False))
    status = np.concatenate([o.status.reshape(-1) for o in outs])
    value = np.concatenate([o.value.reshape(-1) for o in outs])
    # The tick at 1 s closes [-3, 1) (5), the one at 4 s closes [0, 4) (median of 5, 1, 3),
    # the one at 7 s [3, 7) (3 at 3 s); the others close no window.
    assert status.tolist() == [0, 1, 0, 0, 0, 1, 0, 0, 1, 0]
    assert value[status == 1].tolist() == [5.0, 3.0, 3.0]


def test_the_contents_hold_what_the_windows_can_reach():
    m = qre("alphabet a; avg_over(3, cur) + max_over(2s, cur)")
    s = m.session()
    second = 1_000_000
    s.feed(["a"] * 6, np.arange(6.0), times=np.array([0, 0, 1, 5, 6, 6]) * second)
    # The last three events (the count window); those after 6 s − 2 s (5, 6, 6): the same.
    assert s.windows.times.tolist() == [5 * second, 6 * second, 6 * second]
    assert s.windows.terms.shape == (3, 2)
    s.feed(["a"], [9.0], times=[20 * second])
    assert s.windows.times.tolist() == [6 * second, 6 * second, 20 * second]


def test_bad_window_contents():
    with pytest.raises(ValueError, match="do not hold"):
        WindowContents.from_bytes(WindowContents.empty(2).to_bytes() + b"x")
    with pytest.raises(ValueError, match="has none"):
        qre("alphabet a; avg(cur)").session(windows=WindowContents.empty(1))


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 3), st.lists(st.tuples(st.integers(-2**63, 2**63 - 1),
                                             st.integers(-2**31, 2**31 - 1)), max_size=40),
       st.data())
def test_contents_round_trip_raw_and_compressed(w, events, data):
    """Lossless either way, bit for bit (NaN payloads, −0.0, any int64 times)."""
    bits = data.draw(st.lists(st.integers(-2**63, 2**63 - 1), min_size=len(events) * w,
                              max_size=len(events) * w))
    counts = data.draw(st.lists(st.integers(0, 2**63 - 1), min_size=w, max_size=w))
    c = WindowContents(np.array([t for t, _ in events], dtype=np.int64),
                       np.array([k for _, k in events], dtype=np.int32),
                       np.array(bits, dtype=np.int64).view(np.float64).reshape(len(events), w),
                       np.array(counts, dtype=np.int64))
    for compress in (False, True):
        data_bytes = c.to_bytes(compress=compress)
        assert WindowContents.is_compressed(data_bytes) == compress
        back = WindowContents.from_bytes(data_bytes)
        assert back.times.tolist() == c.times.tolist()
        assert back.codes.tolist() == c.codes.tolist()
        assert back.terms.view(np.int64).tolist() == c.terms.view(np.int64).tolist()
        assert back.terms.shape == (len(events), w)
        assert back.counts.tolist() == counts
