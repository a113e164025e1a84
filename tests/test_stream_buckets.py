"""spark_udf.buckets: a bucket of keys' steps against spark_udf.keyed's step per key.

monitor_stream keeps many keys' states in one bucket; its step must give, key by
key, exactly the rows of :func:`spark_udf.keyed.step` (status, value and the late
flag), with or without a watermark, ttl and allowed lateness, and drop and wake
keys as it does. The per-key simulation (tests/stream_simulator.py) is the oracle;
tests/test_stream_rules.py checks that one against the queries' meaning. Rows are
compared as traces of monitor_stream's output type (qre.runtime.stream_types: each
key's rows in order, keys independent), never sorted.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from query_strategies import temporal_queries, top_queries
from stream_simulator import ALPHABET, US, arrivals, simulate, simulate_buckets

from qre import qre
from qre.language.printer import to_text
from qre.runtime.stream_types import stream_type
from qre.testing import assert_equivalent_streams
from spark_udf.buckets import GROUP, Bucket, BucketRules, step_bucket
from spark_udf.keyed import LATE, TIME_US, Rules
from spark_udf.plan import make_plan

QUERIES = st.one_of(top_queries(ALPHABET, 2), temporal_queries(ALPHABET, 1)).map(to_text)
COLUMNS = ["k", "t", "tag", "v", "status", "value", LATE]
OUTPUT = stream_type("monitor_stream", "k").output_dependence()
"""PartitionBy(k, Seq(row)): each key's rows in order, keys independent."""


def same_rows(got: pd.DataFrame, want: pd.DataFrame, columns: list[str] = COLUMNS) -> None:
    assert_equivalent_streams(got, want, OUTPUT, equal=columns, names=("buckets", "per key"))


@settings(max_examples=60, deadline=None)
@given(QUERIES, arrivals(jitter=6), st.sampled_from([None, 0, 2, 6]),
       st.sampled_from([None, 0, 1, 4]), st.sampled_from([0, 2]), st.integers(1, 3))
def test_a_bucket_of_keys_steps_as_each_key_alone(text, batches, delay, ttl, lateness,
                                                  n_buckets) -> None:  # type: ignore[no-untyped-def]
    """Random queries, arrivals out of order (ties too), every rule: the same rows."""
    watermark = delay is not None
    m = qre(text, list(ALPHABET))
    rules = Rules(watermark=watermark, ttl_us=ttl * US if watermark and ttl is not None
                  else None, lateness_us=lateness * US if watermark else 0)
    want, _ = simulate(m, batches, rules, delay)
    same_rows(simulate_buckets(m, batches, rules, delay, n_buckets), want)


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(["aggregate(sum(cur.v), 4s, 2s)", "matched(within(seq(a, b), 3s))"]),
       arrivals(jitter=4, distinct=True), st.sampled_from([None, 0, 3]),
       st.sampled_from([0, 2]), st.integers(1, 2))
def test_timed_monitors_step_each_key_of_a_bucket(text, batches, delay, lateness,
                                                  n_buckets) -> None:  # type: ignore[no-untyped-def]
    m = qre("alphabet a, b; " + text)
    watermark = delay is not None
    rules = Rules(watermark, None, "flag", lateness * US if watermark else 0, m.clock, True,
                  US, "integral")
    want, _ = simulate(m, batches, rules, delay)
    same_rows(simulate_buckets(m, batches, rules, delay, n_buckets), want, list(want.columns))


def _plan_and_spec(watermark: bool, late: str = "flag"):  # type: ignore[no-untyped-def]
    m = qre("sum(cur)", list(ALPHABET))
    frame = pd.DataFrame({"k": [0], "t": [1], "tag": ["a"], "v": [1.0]})
    plan = make_plan("test", frame, m, "k", "t", "tag", "v", (), "table", "error")
    return BucketRules(plan, Rules(watermark=watermark, late=late), m, "table", lambda g: g)


def _events(keys: list[int], times: list[int], tags: list[str] | None = None) -> pd.DataFrame:
    frame = pd.DataFrame({"k": keys, "t": times, "tag": tags or ["a"] * len(keys),
                          "v": np.arange(1.0, len(keys) + 1)})
    frame[TIME_US] = frame["t"] * US
    frame[GROUP] = frame["k"]
    return frame


def test_a_bucket_keeps_each_keys_configuration_in_nine_bytes_per_state() -> None:
    spec = _plan_and_spec(watermark=False)
    # Without a watermark a stream's rows have no times in µs.
    events = _events([1, 2, 1], [1, 1, 2]).drop(columns=TIME_US)
    bucket, rows = step_bucket(spec, Bucket.empty(spec), events, None)
    assert bucket.pending.empty
    same_rows(rows, pd.DataFrame({"k": [1, 1, 2], "value": [1.0, 4.0, 2.0]}), ["k", "value"])
    q = len(spec.monitor.dt.states)
    assert [len(b) for b in bucket.keys["config"]] == [9 * q, 9 * q]
    bucket, rows = step_bucket(spec, bucket, _events([2, 1], [5, 6]).drop(columns=TIME_US),
                               None)
    by_key = dict(zip(rows["k"], rows["value"], strict=True))
    assert by_key == {2: 2.0 + 1.0, 1: 1.0 + 3.0 + 2.0}


def test_late_fail_and_an_unknown_tag_name_their_key() -> None:
    spec = _plan_and_spec(watermark=False, late="fail")
    bucket, _ = step_bucket(spec, Bucket.empty(spec), _events([7], [5]), None)
    with pytest.raises(ValueError, match="key 7 received an event at t = 2"):
        step_bucket(spec, bucket, _events([8, 7], [1, 2]), None)
    spec = _plan_and_spec(watermark=False)
    with pytest.raises(ValueError, match=r"monitor_stream, key 9 .*'zzz'"):
        step_bucket(spec, Bucket.empty(spec), _events([8, 9], [1, 2], ["a", "zzz"]), None)


def test_a_null_time_names_its_key() -> None:
    spec = _plan_and_spec(watermark=True)
    events = _events([3, 4], [1, 2])
    events["t"] = events["t"].astype(float)
    events.loc[1, "t"] = np.nan
    with pytest.raises(ValueError, match=r"column 't' \(time\) is null for key 4;"):
        step_bucket(spec, Bucket.empty(spec), events, 0)
