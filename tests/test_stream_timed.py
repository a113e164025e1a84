"""Timed monitors in streams (issue 7, points 1 and 2), without Spark: the simulator of
micro-batches, watermarks and timers (tests/stream_simulator.py) through spark_udf.keyed
and spark_udf.clocked, against Monitor.run_timed on the events that were not late.

Rows are compared as traces of the output type (qre.runtime.stream_types: each key's
rows in order, keys independent), status and value bit for bit, never sorted; only a
run's final rows, which settle in no particular order, are compared as multisets."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from stream_simulator import US, arrivals, simulate

from qre import Monitor, qre
from qre.runtime.stream_types import stream_type
from qre.testing import assert_equivalent_streams
from spark_udf.keyed import LATE, TIME_US, Rules

WINDOWS = ["aggregate(sum(cur.v), 4s, 2s)", "aggregate(count(), 3s)",
           "aggregate(last(cur.v), 6s, 2s, [a])", "aggregate(matches(seq(a, b)), 4s, 2s)",
           "aggregate(sum(cur.v), session(3s))", "aggregate(count(), session(2s), [a])",
           # issue 23: window aggregates of the window store (contents in the key's state)
           "aggregate(median(cur.v), 4s, 3s)", "aggregate(quantile(cur.v, 0.25), 5s, 2s, [a])"]
PATTERNS = ["matched(within(seq(a, b), 3s))", "matches(seq(a, not(b), a))",
            # issue 23: sliding windows over durations, no clock
            "max_over(3s, cur.v) > median_over(2, cur.v)"]
RESULTS = ["k", "t", "tag", "status", "value"]
OUTPUT = stream_type("monitor_stream", "k").output_dependence()
"""PartitionBy(k, Seq(row)): each key's rows in order, keys independent (run_timed's
output type too)."""


def rules(m: Monitor, watermark: bool = True, lateness: int = 0) -> Rules:
    return Rules(watermark, None, "flag", lateness * US, m.clock, True, US, "integral")


def on_time_rows(m: Monitor, batches: list[pd.DataFrame], rows: pd.DataFrame) -> pd.DataFrame:
    """run_timed over the events that were not flagged late (told apart by key, time)."""
    events = pd.concat(batches, ignore_index=True)
    late = rows[rows[LATE].astype(bool)]
    keep = ~events.set_index(["k", "t"]).index.isin(late.set_index(["k", "t"]).index)
    events = events[keep]
    want = m.run_timed(events["t"], events["tag"], {"v": events["v"]}, keys=events["k"])
    return want.rename(columns={"key": "k", "time": "t"})


def not_late(rows: pd.DataFrame) -> pd.DataFrame:
    return rows[~rows[LATE].astype(bool)]


def late_rows(rows: pd.DataFrame) -> pd.DataFrame:
    return rows[rows[LATE].astype(bool)]


@settings(max_examples=40)
@given(st.sampled_from(WINDOWS + PATTERNS), arrivals(jitter=4, distinct=True),
       st.sampled_from([0, 2, 5]))
def test_stream_rows_are_run_timed_on_the_events_in_time(text, batches, delay):
    m = qre("alphabet a, b; " + text)
    states: dict = {}
    rows, behind = simulate(m, batches, rules(m), delay, states=states)
    late = rows[rows[LATE].astype(bool)]
    assert len(late) == len(behind) and (late["status"] == 0).all()
    want = on_time_rows(m, batches, rows)
    assert_equivalent_streams(not_late(rows), want, OUTPUT, equal=RESULTS,
                              names=("stream", "run_timed"))
    if m.clock is not None:  # every window closed at the final flush: no state is kept
        assert not states
    if m.clock is not None and m.clock.windowed:  # each window's start too
        def ticks(frame: pd.DataFrame) -> pd.DataFrame:
            return frame[frame["tag"] == "tick"].astype({"start": int})

        assert_equivalent_streams(ticks(not_late(rows)), ticks(want), OUTPUT,
                                  equal=["k", "t", "start"], names=("stream", "run_timed"))
        assert rows.loc[rows[LATE].astype(bool), "start"].isna().all()


@settings(max_examples=30)
@given(st.sampled_from(WINDOWS + PATTERNS), arrivals(jitter=6, distinct=True),
       st.sampled_from([0, 2]), st.sampled_from([1, 3]))
def test_allowed_lateness_settles_as_a_longer_watermark(text, batches, delay, lateness):
    """What settles is a run with a watermark longer by the lateness: the same late
    events, the same pattern rows, and each window's last row is its result there."""
    m = qre("alphabet a, b; " + text)
    with_lateness, _ = simulate(m, batches, rules(m, lateness=lateness), delay)
    longer, _ = simulate(m, batches, rules(m), delay + lateness)
    assert_equivalent_streams(late_rows(with_lateness), late_rows(longer), OUTPUT, equal=RESULTS,
                              names=("lateness", "longer watermark"))
    if m.clock is None:
        pd.testing.assert_frame_equal(with_lateness.reset_index(drop=True),
                                      longer.reset_index(drop=True))
        return
    final = not_late(with_lateness).groupby(["k", "t"]).tail(1)
    # A window's last row may come after a later window's (a late event updates it):
    # the settled rows are the same as a multiset only.
    assert_equivalent_streams(final[final["status"] != 0], not_late(longer), "unordered",
                              equal=RESULTS, names=("lateness", "longer watermark"))


@settings(max_examples=40)
@given(st.sampled_from(WINDOWS), arrivals(jitter=6, distinct=True), st.sampled_from([0, 2]),
       st.sampled_from([1, 3, 8]))
def test_window_results_are_emitted_on_time_then_updated(text, batches, delay, lateness):
    """Seed 000's allowed lateness: after each micro-batch, the latest row of every window
    is its result over the events accepted so far, for exactly the windows that the
    watermark (not lessened by the lateness) has passed; and no row repeats the one
    before it for its window."""
    m = qre("alphabet a, b; " + text)
    marks: list[tuple[int, int]] = []
    rows, _ = simulate(m, batches, rules(m, lateness=lateness), delay, marks=marks)
    late = rows[rows[LATE].astype(bool)].set_index(["k", "t"]).index
    shown: dict[tuple[int, int], tuple[int, str]] = {}
    done = 0
    for i, (n_rows, watermark_ms) in enumerate(marks):
        for k, t, status, value, is_late in rows.iloc[done:n_rows][
                ["k", "t", "status", "value", LATE]].itertuples(index=False):
            if not is_late:
                assert shown.get((k, t)) != (status, repr(value)), "a row repeated"
                shown[(k, t)] = (status, repr(value))
        done = n_rows
        events = pd.concat(batches[:i + 1], ignore_index=True)
        events = events[~events.set_index(["k", "t"]).index.isin(late)
                        & (events["t"] <= watermark_ms // 1000)]  # waiting: not yet seen
        want = m.run_timed(events["t"], events["tag"], {"v": events["v"]}, keys=events["k"],
                           watermark=watermark_ms // 1000)
        assert {kt: sv for kt, sv in shown.items() if sv[0] != 0} == {
            (k, t): (s, repr(v)) for k, t, s, v in zip(want["key"], want["time"],
                                                       want["status"], want["value"],
                                                       strict=True)}


@settings(max_examples=30)
@given(st.sampled_from(WINDOWS + PATTERNS), arrivals(jitter=0, distinct=True))
def test_without_a_watermark_windows_close_when_later_events_come(text, batches):
    m = qre("alphabet a, b; " + text)
    rows, _ = simulate(m, batches, rules(m, watermark=False), None)
    events = pd.concat(batches, ignore_index=True)
    want = on_time_rows(m, batches, rows)
    if m.clock is not None:  # no flush without a watermark: no tick after the last event
        last = events.groupby("k")["t"].max()
        want = want[want["t"] + 1 <= want["k"].map(last)]
    assert_equivalent_streams(rows, want, OUTPUT, equal=RESULTS, names=("stream", "run_timed"))


def test_a_result_that_a_late_event_makes_undefined_is_cleared():
    """A clock's output that becomes ⊥ when a late event arrives gets a row with status 0
    (here: "an a right before the tick", then a late b between them)."""
    from spark_udf.keyed import TIME_US, KeyState, step
    from spark_udf.plan import make_plan

    m = qre("alphabet a, b; period 2s; split(any_word(), split(atom(a, cur.v), "
            "atom(tick, 1), fst), snd)")
    frame = pd.DataFrame({"k": [0, 0], "t": [1, 1], "tag": ["a", "b"], "v": [5.0, 6.0]})
    frame[TIME_US] = frame["t"] * US
    plan = make_plan("test", frame, m, "k", "t", "tag", "v", (), "table", "error", timed=True)
    lateness = rules(m, lateness=3)
    seen = []
    state: KeyState | None = KeyState()
    for events, watermark in [(frame.iloc[:1], 0), (None, 3), (frame.iloc[1:], 3), (None, 9)]:
        state, rows = step(plan, lateness, m, "table", 0, state, events, watermark * US)
        seen += [(t, s, v) for t, s, v in zip(rows["t"], rows["status"], rows["value"],
                                              strict=True)]
    assert repr(seen) == repr([(1, 1, 5.0), (1, 0, float("nan"))])
    assert state is not None and state.sent == ()


def test_an_event_behind_the_watermark_in_a_window_still_open_is_accepted():
    """Seed 000 §2.3 (with L = 0): at watermark 5 s, window [4, 8) is open, so an event at
    4 s joins it, while one at 3 s (its window [0, 4) closed at 4 s) is late."""
    from spark_udf.keyed import TIME_US, KeyState, step
    from spark_udf.plan import make_plan

    m = qre("alphabet a; aggregate(sum(cur.v), 4s)")
    frame = pd.DataFrame({"k": [0, 0, 0], "t": [1, 4, 3], "tag": ["a"] * 3, "v": [1.0, 2.0, 4.0]})
    frame[TIME_US] = frame["t"] * US
    plan = make_plan("test", frame, m, "k", "t", "tag", "v", (), "table", "error", timed=True)
    seen = []
    state: KeyState | None = KeyState()
    for events, watermark in [(frame.iloc[:1], 0), (frame.iloc[1:], 5), (None, 100)]:
        state, rows = step(plan, rules(m), m, "table", 0, state, events, watermark * US)
        seen += list(zip(rows["t"], rows["value"], rows[LATE], strict=True))
    assert repr(seen) == repr([(3, float("nan"), True), (3, 1.0, False), (7, 2.0, False)])


@settings(max_examples=30)
@given(st.sampled_from(WINDOWS + PATTERNS), arrivals(jitter=4, distinct=True),
       st.sampled_from([0, 2]), st.sampled_from([0.0, 0.25, 0.7500005, 1e-7]))
def test_float_times_in_a_stream_are_run_timed_on_floats(text, batches, delay, fraction):
    """A fractional time column: the stream rounds like run_timed (the float product to
    the nearest µs, ties to even: Spark's bround), stamps a tick at its boundary less one
    µs, as a float of the time unit, and cur.time and within read the same times."""
    import numpy as np

    from spark_udf.keyed import TIME_US

    batches = [b.assign(t=b["t"] + fraction) for b in batches]
    batches = [b.assign(**{TIME_US: np.rint(b["t"].to_numpy() * US).astype(np.int64)})
               for b in batches]
    m = qre("alphabet a, b; " + text)
    fractional = Rules(True, None, "flag", 0, m.clock, True, US, "fractional")
    rows, _ = simulate(m, batches, fractional, delay)
    got = rows[~rows[LATE].astype(bool)]
    want = on_time_rows(m, batches, rows)

    # Times as floats, bit for bit, like the values.
    assert_equivalent_streams(got.astype({"t": float}), want.astype({"t": float}), OUTPUT,
                              equal=RESULTS, names=("stream", "run_timed"))


def test_a_clock_without_a_horizon_refuses_an_idle_gap_beyond_the_limit():
    """Issue 19, point 12, in a stream: the final flush moves the watermark to 2**52 ms,
    and a hand-written period clock would tick once a second up to it (a MemoryError
    before); the error names the key and the gap."""
    m = qre("alphabet a, b; period 1s; iter(or(atom(a, cur.v), atom(tick, 0)), 0, +)")
    batch = pd.DataFrame({"k": [7], "t": [1], "tag": ["a"], "v": [1.0]})
    batch[TIME_US] = batch["t"] * US
    with pytest.raises(ValueError, match=r"monitor_stream: the clock would tick [\d,]+ times "
                                         r"in the idle gap of key 7 from 1000000 µs"):
        simulate(m, [batch], rules(m), 0)
