"""Sliding windows in streams (issue 23 §4): a key's window contents travel in its state
(``KeyState.windows``; in a bucket, the ``windows`` column of ``Bucket.to_bytes``; in an
optimistic checkpoint), so a stream of micro-batches gives the rows of one run over the
events it accepted.

Oracle: ``run_timed`` over every event not flagged late (tests/test_optimistic.py's
``expected``), for the pessimistic policy key by key and through buckets stored as the
state store holds them, and for the optimistic policy after every micro-batch (inserts
minus retractions, rolled back to checkpoints that carry the contents). Events arrive
out of order, in micro-batches, with watermark delays that leave some late.
"""

from __future__ import annotations

from collections import Counter

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st
from stream_simulator import US, arrivals, simulate, simulate_buckets

from qre import qre
from qre.runtime.timed import is_timed
from qre.runtime.window_contents import WindowContents
from spark_udf.keyed import LATE, Rules
from tests.test_optimistic import CHECKPOINTS, check_changelog, disordered, expected

WINDOWED = [
    "avg_over(3s, cur.v) - median_over(2, cur.v)",  # timed, no clock
    "aggregate(median(cur.v), 4s, 3s)",  # a stored window aggregate: ticks
    "once(max_over(5s, cur.v) > 1) && count_over(2) == 2",
    "sum_over(3, cur.v) + distinct_over(2, cur.v)",  # untimed: count windows only
    "aggregate(median(cur.v), 3, 2, [a])",  # a window of events: the count carried
]
BATCHES = st.one_of(disordered(), arrivals(jitter=8, distinct=True, min_events=12))


def _held(rows: pd.DataFrame) -> Counter:
    on_time = rows[~rows[LATE].astype(bool)]
    return Counter((int(k), int(t), str(tag), int(s), repr(float(v))) for k, t, tag, s, v in zip(
        on_time["k"], on_time["t"], on_time["tag"], on_time["status"], on_time["value"],
        strict=True))


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(WINDOWED), BATCHES, st.sampled_from([2, 9]), st.integers(0, 2),
       st.sampled_from([None, 0, 1, 3]))
def test_a_stream_keeps_its_windows(text, batches, delay, buckets, idle):
    """Key by key, and through buckets stored as bytes with the contents of keys idle for
    D seconds compressed (seed 001's D: lossless, the same rows for every D)."""
    m = qre("alphabet a, b; " + text)
    rules = Rules(True, None, "flag", 0, m.clock, is_timed(m), US, "integral")
    if buckets:
        stored: list = []
        rows = simulate_buckets(m, batches, rules, delay, buckets,
                                None if idle is None else idle * US, stored)
        forms = {WindowContents.is_compressed(w) for b in stored
                 for w in b.keys["windows"] if w is not None}
        assert idle is not None or forms <= {False}  # D = ∞ compresses nothing
        assert idle != 0 or forms <= {True}  # D = 0 compresses everything
    else:
        rows, _ = simulate(m, batches, rules, delay)
    late = rows[rows[LATE].astype(bool)].set_index(["k", "t"]).index
    events = pd.concat(batches, ignore_index=True)
    events = events[~events.set_index(["k", "t"]).index.isin(late)]
    assert _held(rows) == expected(m, events, 2**40)


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(WINDOWED), BATCHES, st.sampled_from([2, 9]), st.sampled_from([0, 3]),
       CHECKPOINTS)
def test_an_optimistic_stream_rolls_its_windows_back(text, batches, delay, lateness, every):
    check_changelog(text, batches, delay, lateness, every)


def test_the_fingerprint_tells_windows_apart():
    """Two queries whose DTs are the same but whose windows differ may not resume each
    other's checkpoint."""
    from spark_udf.plan import monitor_fingerprint

    a, b = qre("alphabet a; sum_over(3, cur)"), qre("alphabet a; distinct_over(3, cur)")
    assert a.dt.to_json() == b.dt.to_json()
    assert monitor_fingerprint(a) != monitor_fingerprint(b)
    assert monitor_fingerprint(a) == monitor_fingerprint(qre("alphabet a;  sum_over(3,cur)"))
