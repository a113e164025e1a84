"""The entry points are consistent with their declared stream types (qre/runtime/stream_types.py).

Definition 2.24 of seed 003, tested: each entry point runs on random inputs and
on random reorderings of them that the input type allows (dt.traces.consistency:
keys interleaved at random, a key's events shuffled where its type is a bag,
micro-batch boundaries kept), and on Spark under random repartitionings; every
output must be the same trace as the first under the output type (the DiffStream
matcher), status and value bit for bit. A deliberately wrong type is caught.
"""

from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import keyed_events

from dt.traces import Bag, PartitionBy, Predicate, Seq, typed
from dt.traces.consistency import find_inconsistency
from qre import qre
from qre.runtime.stream_types import BATCH, EVENT, stream_type
from qre.testing import assert_equivalent_streams

QUERIES = ["alphabet a, b; sum(cur)", "alphabet a, b; avg(cur) > const(0.4)",
           "alphabet a, b; fill_with(last(cur), const(-3))",
           "alphabet a, b; once(count() >= const(3))"]
COMPARED = ["k", "t", "tag", "status", "value"]
"""What a row of Spark and of run_timed both have (run_timed does not repeat the values)."""
TIMED = ["alphabet a, b; aggregate(sum(cur), 2s)", "alphabet a, b; aggregate(max(cur), 4s, 2s)"]


def events_of(frame: pd.DataFrame) -> list[dict]:
    return frame.to_dict("records")


def run_keys_rows(m, events: list[dict]) -> list[dict]:  # type: ignore[no-untyped-def]
    """``run_keys`` over the events in the given order: one row per event."""
    frame = pd.DataFrame(events, columns=["k", "t", "tag", "v"])
    out = m.run_keys(frame["k"].to_numpy(), frame["tag"].to_numpy(object),
                     frame["v"].to_numpy(float), engine="table")
    return frame.assign(status=out.status.astype(int), value=out.value).to_dict("records")


def run_timed_rows(m, events: list[dict]) -> list[dict]:  # type: ignore[no-untyped-def]
    """``run_timed`` over the events in the given order, without ``row`` (the input
    position, which a reordering changes by definition)."""
    frame = pd.DataFrame(events, columns=["k", "t", "tag", "v"])
    rows = m.run_timed(frame["t"], frame["tag"], frame["v"], keys=frame["k"],
                       engine="table")
    return rows.drop(columns="row").rename(columns={"key": "k", "time": "t"}).to_dict("records")


@pytest.mark.parametrize(("entry", "rows", "queries"), [
    ("run_keys", run_keys_rows, QUERIES), ("run_timed", run_timed_rows, QUERIES + TIMED)])
@settings(max_examples=20)
@given(st.data(), keyed_events(max_events=30), st.integers(0, 2**32))
def test_local_entry_points_are_consistent(entry, rows, queries, data, frame, seed):
    m = qre(data.draw(st.sampled_from(queries)))
    t = stream_type(entry, "k")
    found = find_inconsistency(lambda events: rows(m, events), events_of(frame),
                               t.input_dependence(), t.output_dependence(), tries=5, seed=seed)
    assert found is None, found


def stream_rows(m, items: list[dict], **options) -> list[dict]:  # type: ignore[no-untyped-def]
    """``LocalStream`` (monitor_stream's rules in this process) fed one micro-batch per
    run of events between ``batch`` markers, then (with a watermark) the watermark moved
    past them all."""
    from spark_udf import LocalStream

    stream = LocalStream(m, "k", "t", "tag", "v", **options)
    batches: list[list[dict]] = [[]]
    for item in items:
        if item["h"] == BATCH:
            batches.append([])
        else:
            batches[-1].append(item)
    frames = [stream.feed(pd.DataFrame(b, columns=["k", "t", "tag", "v"])) for b in batches]
    if options.get("watermark") is not None:
        frames.append(stream.advance(10**12))
    rows = [f[[*COMPARED, "late"]] for f in frames if f is not None and len(f)]
    return pd.concat(rows, ignore_index=True).to_dict("records") if rows else []


@settings(max_examples=15)
@given(st.sampled_from(QUERIES + TIMED), keyed_events(max_events=30),
       st.lists(st.integers(0, 30), max_size=3), st.sampled_from([None, "2 seconds"]),
       st.integers(0, 2**32))
def test_monitor_stream_rules_are_consistent(text, frame, cuts, watermark, seed):
    """monitor_stream's type: a bag of events per key within each micro-batch; the
    batches' boundaries (markers) stay. Run through LocalStream, Spark's rules in-process."""
    m = qre(text)
    items = [dict(e, h=EVENT) for e in events_of(frame)]
    for cut in sorted(cuts, reverse=True):
        items.insert(min(cut, len(items)), {"h": BATCH})
    if m.clock is not None and watermark is None:
        watermark = "0 seconds"  # a timed monitor on a stream needs a watermark
    t = stream_type("monitor_stream", "k")
    found = find_inconsistency(lambda i: stream_rows(m, i, watermark=watermark), items,
                               t.input_dependence(header="h"), t.output_dependence(), tries=4,
                               seed=seed)
    assert found is None, found


def test_a_wrong_type_is_caught():
    """run_keys runs events in input order: a bag of events per key is not its type."""
    m = qre(QUERIES[2])
    events = [{"k": 1, "t": 0, "tag": "a", "v": 1.0}, {"k": 1, "t": 0, "tag": "a", "v": 2.0}]
    wrong = typed(PartitionBy("k", Bag(EVENT)))
    found = find_inconsistency(lambda e: run_keys_rows(m, e), events, wrong,
                               stream_type("run_keys", "k").output_dependence())
    assert found is not None and "depends on" in str(found.verdict.mismatch)


def test_micro_batch_boundaries_matter():
    """Events moved across micro-batches meet another watermark: with lateness, the
    batch markers are part of monitor_stream's input type, and dropping them is caught."""
    m = qre(QUERIES[0])
    items = [{"h": EVENT, "k": 1, "t": 10, "tag": "a", "v": 1.0}, {"h": BATCH},
             {"h": EVENT, "k": 1, "t": 0, "tag": "a", "v": 2.0},
             {"h": EVENT, "k": 1, "t": 5, "tag": "a", "v": 3.0}]
    anywhere = Predicate(lambda a, b: False)  # the wrong claim: no order at all
    found = find_inconsistency(lambda i: stream_rows(m, i, watermark="2 seconds"), items,
                               anywhere, stream_type("monitor_stream", "k").output_dependence(),
                               tries=20)
    assert found is not None
    late = [[row["late"] for row in rows] for rows in (found.output, found.reordered_output)]
    assert late[0] != late[1]  # an event on time in one is late in the other


def test_stream_types_name_every_entry_point():
    assert stream_type("run").output == Seq("row")
    assert repr(stream_type("monitor_stream", "k").input) == \
        f"Sync({BATCH}, PartitionBy(k, Bag({EVENT})))"
    with pytest.raises(ValueError, match="give the key column"):
        stream_type("monitor_frame")
    with pytest.raises(ValueError, match="no stream type for 'walk'"):
        stream_type("walk", "k")


# -- Spark: random repartitionings ---------------------------------------------------------

def spark_rows(spark, frame: pd.DataFrame, partitions: int):  # type: ignore[no-untyped-def]
    schema = "k long, t long, tag string, v double"
    return spark.createDataFrame(frame, schema).repartition(partitions)


@settings(max_examples=6)
@given(st.sampled_from(QUERIES), keyed_events(max_events=40), st.integers(0, 2**32))
def test_monitor_frame_is_run_timed_up_to_its_output_type(spark, text, frame, seed):
    """Spark's rows (collected in Spark's order, 1 to 7 partitions) are the local rows'
    trace under ``PartitionBy(k, Seq(row))``: no sorting of either side."""
    from spark_udf import monitor_frame

    m = qre(text)
    rng = random.Random(seed)
    want = pd.DataFrame(run_timed_rows(m, events_of(frame)))
    output = stream_type("monitor_frame", "k").output_dependence()
    for partitions in (1, rng.randint(2, 7)):
        shuffled = frame.sample(frac=1.0, random_state=rng.randrange(2**31))
        got = monitor_frame(spark_rows(spark, shuffled, partitions), m, "k", "t", "tag", "v",
                            engine="table").toPandas()
        assert_equivalent_streams(got, want, output, equal=COMPARED,
                                  names=(f"spark ({partitions} partitions)", "run_timed"))


@settings(max_examples=4)
@given(st.sampled_from(TIMED), keyed_events(max_events=40), st.integers(0, 2**32))
def test_monitor_timed_is_run_timed_up_to_its_output_type(spark, text, frame, seed):
    from spark_udf import monitor_timed

    m = qre(text)
    rng = random.Random(seed)
    want = pd.DataFrame(run_timed_rows(m, events_of(frame)))
    output = stream_type("monitor_timed", "k").output_dependence()
    shuffled = frame.sample(frac=1.0, random_state=rng.randrange(2**31))
    got = monitor_timed(spark_rows(spark, shuffled, rng.randint(1, 7)), m, "k", "t", "tag",
                        "v", engine="table").toPandas()
    assert_equivalent_streams(got, want, output, equal=[*COMPARED, "start"],
                              names=("spark", "run_timed"))


def test_a_spark_reordering_bug_is_caught(spark):
    """What sorting would hide: a key's rows out of order are reported, with the row."""
    from spark_udf import monitor_frame

    m = qre(QUERIES[0])
    frame = pd.DataFrame({"k": [1, 1, 2], "t": [0, 1, 0], "tag": ["a"] * 3,
                          "v": [1.0, 2.0, 4.0]})
    got = monitor_frame(spark_rows(spark, frame, 2), m, "k", "t", "tag", "v",
                        engine="table").toPandas()
    backwards = got.iloc[np.argsort(-got["t"].to_numpy(), kind="stable")]
    with pytest.raises(AssertionError, match="depends on"):
        assert_equivalent_streams(got, backwards, stream_type("monitor_frame", "k")
                                  .output_dependence())
