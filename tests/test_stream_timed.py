"""Timed monitors in streams (issue 7, points 1 and 2), without Spark: the simulator of
micro-batches, watermarks and timers (tests/stream_simulator.py) through spark_udf.keyed
and spark_udf.clocked, against Monitor.run_timed on the events that were not late."""

from __future__ import annotations

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st
from stream_simulator import US, arrivals, simulate

from qre import Monitor, qre
from spark_udf.keyed import LATE, Rules

WINDOWS = ["aggregate(sum(cur.v), 4s, 2s)", "aggregate(count(), 3s)",
           "aggregate(last(cur.v), 6s, 2s, [a])", "aggregate(matches(seq(a, b)), 4s, 2s)"]
PATTERNS = ["matched(within(seq(a, b), 3s))", "matches(seq(a, not(b), a))"]


def rules(m: Monitor, watermark: bool = True, lateness: int = 0) -> Rules:
    return Rules(watermark, None, "flag", lateness * US, m.clock, True, US, "integral")


def on_time_rows(m: Monitor, batches: list[pd.DataFrame], rows: pd.DataFrame) -> pd.DataFrame:
    """run_timed over the events that were not flagged late (told apart by key, time)."""
    events = pd.concat(batches, ignore_index=True)
    late = rows[rows[LATE]]
    keep = ~events.set_index(["k", "t"]).index.isin(late.set_index(["k", "t"]).index)
    events = events[keep]
    want = m.run_timed(events["t"], events["tag"], {"v": events["v"]}, keys=events["k"])
    return want.rename(columns={"key": "k", "time": "t"})


def canonical(frame: pd.DataFrame) -> list[tuple]:
    return sorted((int(k), int(t), str(g), int(s), repr(float(v))) for k, t, g, s, v in zip(
        frame["k"], frame["t"], frame["tag"], frame["status"], frame["value"], strict=True))


@settings(max_examples=40)
@given(st.sampled_from(WINDOWS + PATTERNS), arrivals(jitter=4, distinct=True),
       st.sampled_from([0, 2, 5]))
def test_stream_rows_are_run_timed_on_the_events_in_time(text, batches, delay):
    m = qre("alphabet a, b; " + text)
    states: dict = {}
    rows, behind = simulate(m, batches, rules(m), delay, states=states)
    late = rows[rows[LATE]]
    assert len(late) == len(behind) and (late["status"] == 0).all()
    assert canonical(rows[~rows[LATE]]) == canonical(on_time_rows(m, batches, rows))
    if m.clock is not None:  # every window closed at the final flush: no state is kept
        assert not states


@settings(max_examples=30)
@given(st.sampled_from(WINDOWS + PATTERNS), arrivals(jitter=6, distinct=True),
       st.sampled_from([0, 2]), st.sampled_from([1, 3]))
def test_allowed_lateness_is_a_longer_watermark_for_the_rules(text, batches, delay, lateness):
    m = qre("alphabet a, b; " + text)
    with_lateness, _ = simulate(m, batches, rules(m, lateness=lateness), delay)
    longer, _ = simulate(m, batches, rules(m), delay + lateness)
    pd.testing.assert_frame_equal(with_lateness.reset_index(drop=True),
                                  longer.reset_index(drop=True))


@settings(max_examples=30)
@given(st.sampled_from(WINDOWS + PATTERNS), arrivals(jitter=0, distinct=True))
def test_without_a_watermark_windows_close_when_later_events_come(text, batches):
    m = qre("alphabet a, b; " + text)
    rows, _ = simulate(m, batches, rules(m, watermark=False), None)
    events = pd.concat(batches, ignore_index=True)
    want = on_time_rows(m, batches, rows)
    if m.clock is not None:  # no flush without a watermark: windows after the last event
        period = m.clock.period_ns // 10**9
        last = events.groupby("k")["t"].max()
        want = want[want["t"] + 1 <= want["k"].map(last) // period * period]
    assert canonical(rows) == canonical(want)
