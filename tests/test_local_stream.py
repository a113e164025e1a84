"""spark_udf.LocalStream: monitor_stream's rules in this process. The oracle is the
stream simulator (tests/stream_simulator.py), which plays Spark's watermarks and timers
and which tests/test_spark_stream.py checks against Spark; its rows and the stream's
are compared as traces of monitor_stream's output type (qre.runtime.stream_types: each
key's rows in order, keys independent), not sorted."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from stream_simulator import FLUSH_MS, US, arrivals, simulate

from qre import qre
from qre.runtime.changelog import CHANGE
from qre.runtime.stream_types import stream_type
from qre.runtime.timed import is_timed
from qre.testing import assert_equivalent_streams
from spark_udf import LocalStream
from spark_udf.keyed import LATE, TIME_US, Rules
from spark_udf.plan import concat_rows

OUTPUT = stream_type("monitor_stream", "k").output_dependence()
"""PartitionBy(k, Seq(row)): each key's rows in order, keys independent."""
TEXTS = ["sum(cur)", "!is(a) since is(b)", "aggregate(sum(cur.v), 4s, 2s)",
         "aggregate(count(), session(2s), [a])", "matched(within(seq(a, b), 3s))"]


@settings(max_examples=30)
@given(st.sampled_from(TEXTS), arrivals(jitter=5, distinct=True), st.sampled_from([0, 3]),
       st.booleans())
def test_a_local_stream_gives_the_simulators_rows(text, batches, delay, optimistic):
    m = qre("alphabet a, b; " + text)
    stream = LocalStream(m, "k", "t", "tag", "v", watermark=f"{delay} seconds",
                         optimistic=optimistic)
    got = [stream.feed(b.drop(columns=TIME_US)) for b in batches]
    got.append(stream.advance(FLUSH_MS * 1000))
    rules = (Rules(True, None, "flag", 0, m.clock, True, US, "integral", optimistic=optimistic)
             if is_timed(m) else Rules(True, optimistic=optimistic))
    want, _ = simulate(m, batches, rules, delay)
    columns = ["k", "t", "tag", "status", "value", LATE, *([CHANGE] * optimistic)]
    rows = concat_rows([g for g in got if len(g)] or got[:1])
    assert_equivalent_streams(rows, want, OUTPUT, equal=columns, names=("local", "simulator"))
    assert stream.pending == 0


def test_times_of_every_kind_and_the_key_rule():
    m = qre("alphabet a; aggregate(sum(cur.v), 10s)")
    stamps = pd.to_datetime(["2026-11-26 10:00:01", "2026-11-26 10:00:05",
                             "2026-11-26 10:00:12"]).tz_localize("UTC")
    for times in (stamps, np.array([1, 5, 12]), np.array([1.0, 5.0, 12.0])):
        stream = LocalStream(m, "k", "t", "tag", "v", watermark="0 seconds")
        keys = pd.Series([None, float("nan"), None], dtype=object)
        stream.feed(pd.DataFrame({"k": keys, "t": times,
                                  "tag": ["a"] * 3, "v": [1.0, 2.0, 4.0]}))
        rows = stream.advance(2**62)
        # NaN and null are two keys: null's window [0, 10) holds 1.0, NaN's 2.0, and
        # null's [10, 20) 4.0.
        assert sorted(rows["value"].tolist()) == [1.0, 2.0, 4.0]
        assert stream.keys == 0


def test_bad_options_are_refused():
    m = qre("alphabet a; sum(cur)")
    frame = pd.DataFrame({"k": [1], "t": [1], "tag": ["a"], "v": [1.0]})
    with pytest.raises(ValueError, match="optimistic=True needs a watermark"):
        LocalStream(m, "k", "t", "tag", "v", optimistic=True).feed(frame)
    with pytest.raises(ValueError, match="speculate bounds optimistic results"):
        LocalStream(m, "k", "t", "tag", "v", watermark="5 s", speculate="1 s").feed(frame)
    with pytest.raises(ValueError, match="speculate '-1 s' is negative"):
        LocalStream(m, "k", "t", "tag", "v", watermark="5 s", optimistic=True,
                    speculate="-1 s").feed(frame)
    with pytest.raises(ValueError, match="no column 'time'"):
        LocalStream(m, "k", "time", "tag", "v").feed(frame)
    with pytest.raises(TypeError, match="a batch is a pandas DataFrame"):
        LocalStream(m, "k", "t", "tag", "v").feed([1, 2])
    with pytest.raises(ValueError, match="has no watermark"):
        LocalStream(m, "k", "t", "tag", "v").advance(10)
