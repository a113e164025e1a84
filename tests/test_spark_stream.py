"""monitor_stream on a real local Spark: equivalence, time rules, restarts, killed workers.

Events go into Parquet files read by Spark's file source one file per
micro-batch (files are picked up in modification-time order, which the
tests set); outputs go to a Parquet file sink, read back as committed and in
micro-batch order (:func:`read_sink`: the sink's log, batch by batch).
``availableNow`` runs every file present, then the trailing batch in which
the watermark passes the last events. A "sentinel" file, an event of key 99
far in the future, moves the watermark past everything else; its own row is
left out of the results.

The oracles: ``monitor_frame`` and tests/keyed_oracle.py's ``expected_rows``
for streams in order; tests/stream_simulator.py (checked against the oracle
by tests/test_stream_rules.py) for out-of-order streams with late events and
idle keys; an uninterrupted run for the restarted and killed ones. Rows are
compared as traces of monitor_stream's output type (qre.runtime.stream_types: each
key's rows in order, keys independent), status and value bit for bit, not sorted —
except a stream restarted from its checkpoint against an uninterrupted one (see
test_a_restarted_stream_neither_loses_nor_repeats_a_row) and the final rows of an
optimistic stream (multisets). Spark tests are slow (seconds per query), so they are
few and draw few examples.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import sys
from dataclasses import replace
from pathlib import Path
from urllib.parse import unquote, urlparse

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from keyed_oracle import expected_rows
from query_strategies import temporal_queries, top_queries
from strategies import keyed_events
from stream_simulator import ALPHABET, arrivals, simulate

from qre import Monitor, qre
from qre.language.printer import to_text
from qre.runtime.stream_types import stream_type
from qre.testing import assert_equivalent_streams

pyspark = pytest.importorskip("pyspark")

from spark_udf import monitor_frame, monitor_stream, monitor_stream_frame  # noqa: E402
from spark_udf import stream as stream_module  # noqa: E402
from spark_udf.keyed import LATE, Rules  # noqa: E402

SCHEMA = "k long, t long, tag string, v double"
SENTINEL = pd.DataFrame({"k": [99], "t": [10**9], "tag": ["a"], "v": [0.0]})
QUERIES = st.one_of(top_queries(ALPHABET, 2), temporal_queries(ALPHABET, 1)).map(to_text)
RESULTS = ["k", "t", "tag", "status", "value"]
FEW = settings(max_examples=2, suppress_health_check=[HealthCheck.function_scoped_fixture])
OUTPUT = stream_type("monitor_stream", "k").output_dependence()
"""PartitionBy(k, Seq(row)): each key's rows in order, keys independent."""


def write_batches(directory: Path, batches: list[pd.DataFrame], first: int = 0) -> None:
    """One Parquet file per micro-batch, modification times one second apart."""
    directory.mkdir(parents=True, exist_ok=True)
    for i, batch in enumerate(batches, start=first):
        path = directory / f"batch-{i:03d}.parquet"
        batch[["k", "t", "tag", "v"]].astype({"k": "int64", "t": "int64"}).to_parquet(path)
        os.utime(path, (1_700_000_000 + i, 1_700_000_000 + i))


def run(spark, m: Monitor, source: Path, checkpoint: Path, output: Path,  # type: ignore[no-untyped-def]
        **options) -> pd.DataFrame:
    """Run the stream over the files in ``source`` until they are processed; all the
    rows its sink holds (from this run and earlier runs on the same checkpoint)."""
    rows, _ = run_query(spark, m, source, checkpoint, output, **options)
    return rows


def run_query(spark, m: Monitor, source: Path, checkpoint: Path, output: Path,  # type: ignore[no-untyped-def]
              **options) -> tuple[pd.DataFrame, object]:
    """:func:`run`'s rows, and the query (its progress reports)."""
    df = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(source))
    query = monitor_stream(df, m, "k", "t", "tag", "v", checkpoint=str(checkpoint),
                           output=str(output), trigger={"availableNow": True}, **options)
    query.awaitTermination()
    rows = read_sink(output)
    return rows[rows["k"] != SENTINEL["k"][0]].reset_index(drop=True), query


def read_sink(output: Path) -> pd.DataFrame:
    """The rows a Parquet file sink committed, in micro-batch order (a key's rows in
    the order the query wrote them). ``spark.read.parquet`` reads the same files in an
    order of its own (by size). The sink's log ``_spark_metadata`` has a file per batch,
    ``<batch id>`` (a line "v1", then a JSON object per file written, with its "path"),
    and now and then ``<batch id>.compact``, which lists the files of every batch up to
    it: read from the latest compact file on, in batch order, each batch's files in
    the listed order. Value is never null (NaN unless defined)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    logs = {}
    for entry in (output / "_spark_metadata").iterdir():
        batch, _, kind = entry.name.partition(".")
        if batch.isdigit() and kind in ("", "compact"):
            logs[int(batch)] = entry
    start = max((b for b, entry in logs.items() if entry.suffix == ".compact"), default=0)
    tables = []
    for batch in sorted(b for b in logs if b >= start):
        version, *lines = logs[batch].read_text().splitlines()
        assert version == "v1", f"{logs[batch]}: a sink log of version {version!r}"
        for line in lines:
            entry = json.loads(line)
            assert entry.get("action", "add") == "add", entry
            tables.append(pq.read_table(unquote(urlparse(entry["path"]).path)))
    assert tables, f"{output}: the sink committed no file"
    table = pa.concat_tables(tables)
    assert table.column("value").null_count == 0  # NaN unless defined, never null
    return table.to_pandas()


def in_time_cuts(frame: pd.DataFrame, cuts: list[int], seed: int) -> list[pd.DataFrame]:
    """The events cut into micro-batches by time (equal times in one batch), each
    batch's rows shuffled."""
    bounds = [-np.inf, *sorted(set(cuts)), np.inf]
    rng = np.random.default_rng(seed)
    batches = []
    for lo, hi in itertools.pairwise(bounds):
        batch = frame[(frame["t"] > lo) & (frame["t"] <= hi)]
        if len(batch):
            batches.append(batch.iloc[rng.permutation(len(batch))])
    return batches


@pytest.mark.parametrize("watermark", [None, "0 seconds", "3 seconds"])
@FEW
@given(QUERIES, keyed_events(min_events=8, max_events=30, keys=4, times=(1, 9)),
       st.lists(st.integers(1, 9), min_size=1, max_size=3))
def test_a_stream_in_time_order_equals_batch_and_the_oracle(
        spark, tmp_path_factory, watermark, text, frame, cuts) -> None:  # type: ignore[no-untyped-def]
    """Spark streaming (several micro-batches), Spark batch and run_keys: the same rows."""
    m = qre(text, list(ALPHABET))
    tmp = tmp_path_factory.mktemp("stream")
    batches = in_time_cuts(frame, cuts, len(frame))
    write_batches(tmp / "in", [*batches, SENTINEL] if watermark else batches)
    got = run(spark, m, tmp / "in", tmp / "ckpt", tmp / "out", watermark=watermark)
    assert not got[LATE].any()
    batch = monitor_frame(spark.createDataFrame(frame, SCHEMA), m, "k", "t", "tag", "v")
    want = expected_rows(m, frame, ["v"])
    assert_equivalent_streams(got, want, OUTPUT, equal=RESULTS, names=("stream", "oracle"))
    assert_equivalent_streams(batch.toPandas(), want, OUTPUT, equal=RESULTS,
                              names=("batch", "oracle"))


@pytest.mark.parametrize(("delay", "ttl"), [(None, None), (0, 1), (2, 4)])
@settings(max_examples=2, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(QUERIES, arrivals(jitter=6, distinct=True, min_events=20))
def test_late_events_and_idle_keys_as_the_rules_say(
        spark, tmp_path_factory, delay, ttl, text, batches) -> None:  # type: ignore[no-untyped-def]
    """Out-of-order micro-batches: Spark's rows (late flags included) are the simulator's."""
    m = qre(text, list(ALPHABET))
    tmp = tmp_path_factory.mktemp("late")
    write_batches(tmp / "in", [*batches, SENTINEL] if delay is not None else batches)
    got, query = run_query(spark, m, tmp / "in", tmp / "ckpt", tmp / "out",
                           watermark=None if delay is None else f"{delay} seconds",
                           ttl=None if ttl is None else f"{ttl} seconds")
    rules = Rules(watermark=delay is not None, ttl_us=None if ttl is None else ttl * 10**6)
    want, _ = simulate(m, batches, rules, delay)
    assert_equivalent_streams(got, want, OUTPUT, equal=[*RESULTS, LATE],
                              names=("spark", "simulator"))
    # Each micro-batch counts its rows and late rows in the query's progress.
    counted = [p["observedMetrics"][stream_module.METRICS] for p in query.recentProgress
               if stream_module.METRICS in p["observedMetrics"]]
    assert sum(c["late"] for c in counted) == int(got[LATE].sum())
    assert sum(c["rows"] for c in counted) == len(got) + (delay == 0)  # the sentinel's row


def _restart_events() -> list[pd.DataFrame]:
    """Four micro-batches of three keys, a little out of order, one key idle for a while."""
    rng = np.random.default_rng(7)
    frames = []
    for i in range(4):
        n = 12
        keys = rng.integers(0, 3, n) if i != 2 else rng.integers(0, 2, n)
        frames.append(pd.DataFrame({"k": keys, "t": 10 * i + rng.integers(-16, 12, n),
                                    "tag": rng.choice(list(ALPHABET), n),
                                    "v": rng.integers(-3, 4, n).astype(float)}))
    return [*frames, SENTINEL]


RESTART_QUERY = "iter(or(atom(a, cur), atom(b, -cur)), 0, +)"
RESTART_OPTIONS = {"watermark": "4 seconds", "ttl": "9 seconds"}


def _uninterrupted(spark, tmp: Path, m: Monitor) -> pd.DataFrame:  # type: ignore[no-untyped-def]
    write_batches(tmp / "all", _restart_events())
    return run(spark, m, tmp / "all", tmp / "ckpt-all", tmp / "out-all", **RESTART_OPTIONS)


def test_a_restarted_stream_neither_loses_nor_repeats_a_row(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    m = qre(RESTART_QUERY, list(ALPHABET))
    events = _restart_events()
    write_batches(tmp_path / "in", events[:2])
    first = run(spark, m, tmp_path / "in", tmp_path / "ckpt", tmp_path / "out",
                **RESTART_OPTIONS)
    assert 0 < len(first) < 24  # events wait for the watermark across the restart
    write_batches(tmp_path / "in", events[2:], first=2)
    both = run(spark, m, tmp_path / "in", tmp_path / "ckpt", tmp_path / "out",
               **RESTART_OPTIONS)
    want = _uninterrupted(spark, tmp_path, m)
    assert len(want) == 48 and want[LATE].any()  # the stream exercises late events
    # The first run's last batch (no data) releases a key's rows before the late rows of
    # the next run's first batch; uninterrupted, the late rows come first: late rows are
    # a side output in the output type.
    assert_equivalent_streams(both, want, OUTPUT, equal=[*RESULTS, LATE],
                              names=("restarted", "uninterrupted"))


class _KillingProcessor(stream_module._MonitorProcessor):
    """Kills its own Python worker (SIGKILL, no cleanup) on key 1's events, once: the
    first worker to see the marker file deletes it and dies."""

    marker = ""

    def handleInputRows(self, key, rows, timerValues):  # type: ignore[no-untyped-def]
        frames = list(rows)
        # By position: the key column comes first; a long key is read as it is here.
        if any((f.iloc[:, 0] == 1).any() for f in frames) and os.path.exists(self.marker):
            os.remove(self.marker)
            os.kill(os.getpid(), signal.SIGKILL)
        yield from super().handleInputRows(key, iter(frames), timerValues)


def test_a_killed_worker_neither_loses_nor_repeats_a_row(spark, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A worker killed mid-batch fails the query (local mode does not retry tasks);
    restarted from its checkpoint, it redoes that micro-batch and goes on."""
    from pyspark import cloudpickle
    from pyspark.errors import StreamingQueryException

    m = qre(RESTART_QUERY, list(ALPHABET))
    write_batches(tmp_path / "in", _restart_events()[:2])
    run(spark, m, tmp_path / "in", tmp_path / "ckpt", tmp_path / "out", **RESTART_OPTIONS)
    write_batches(tmp_path / "in", _restart_events()[2:], first=2)
    marker = tmp_path / "kill-me"
    marker.touch()

    class Killing(_KillingProcessor):
        pass

    Killing.marker = str(marker)
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    monkeypatch.setattr(stream_module, "_MonitorProcessor", Killing)
    with pytest.raises(StreamingQueryException):
        run(spark, m, tmp_path / "in", tmp_path / "ckpt", tmp_path / "out", **RESTART_OPTIONS)
    assert not marker.exists()  # a worker did die
    monkeypatch.undo()
    got = run(spark, m, tmp_path / "in", tmp_path / "ckpt", tmp_path / "out", **RESTART_OPTIONS)
    want = _uninterrupted(spark, tmp_path, m)
    assert_equivalent_streams(got, want, OUTPUT, equal=[*RESULTS, LATE],
                              names=("restarted", "uninterrupted"))


def test_a_checkpoint_refuses_another_monitor(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from pyspark.errors import StreamingQueryException

    events = _restart_events()
    write_batches(tmp_path / "in", events[:1])
    run(spark, qre(RESTART_QUERY, list(ALPHABET)), tmp_path / "in", tmp_path / "ckpt",
        tmp_path / "out")
    other = qre("iter(atom(a, cur), 0, +)", list(ALPHABET))
    with pytest.raises(ValueError, match="was written by another monitor"):
        run(spark, other, tmp_path / "in", tmp_path / "ckpt", tmp_path / "out")
    # Without the record next to the checkpoint, the state itself refuses it.
    (tmp_path / "ckpt" / stream_module.SIDECAR).unlink()
    write_batches(tmp_path / "in", events[1:2], first=1)
    with pytest.raises(StreamingQueryException,
                       match=r"state for bucket \d+ was written by another monitor"):
        run(spark, other, tmp_path / "in", tmp_path / "ckpt", tmp_path / "out")


def test_a_checkpoint_of_another_state_layout_is_refused(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A checkpoint recorded before numeric keys were grouped by their text (no layout in
    its record) would resume under other groups, losing or repeating output: refused."""
    import json

    m = qre(RESTART_QUERY, list(ALPHABET))
    write_batches(tmp_path / "in", _restart_events()[:1])
    run(spark, m, tmp_path / "in", tmp_path / "ckpt", tmp_path / "out")
    sidecar = tmp_path / "ckpt" / stream_module.SIDECAR
    record = json.loads(sidecar.read_text())
    assert record["layout"] == stream_module.STATE_LAYOUT
    del record["layout"]
    sidecar.write_text(json.dumps(record))
    sidecar.with_name(f".{sidecar.name}.crc").unlink()  # Hadoop's checksum of the old text
    with pytest.raises(ValueError, match=r"another version of qre \(state layout 1, this "
                                         rf"one {stream_module.STATE_LAYOUT}.*new checkpoint "
                                         r"directory"):
        run(spark, m, tmp_path / "in", tmp_path / "ckpt", tmp_path / "out")


def test_a_null_time_fails_the_query_naming_the_key(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from pyspark.errors import StreamingQueryException

    events = pd.DataFrame({"k": [3, 3], "t": [1, None], "tag": ["a", "a"], "v": [1.0, 2.0]})
    events.astype({"t": "Int64"}).to_parquet(tmp_path / "in.parquet")
    (tmp_path / "in").mkdir()
    (tmp_path / "in.parquet").rename(tmp_path / "in" / "0.parquet")
    with pytest.raises(StreamingQueryException, match=r"column 't' \(time\) is null for key 3"):
        run(spark, qre("iter(atom(a, cur), 0, +)", list(ALPHABET)), tmp_path / "in",
            tmp_path / "ckpt", tmp_path / "out")


def test_times_of_every_unit_and_type(spark) -> None:  # type: ignore[no-untyped-def]
    """The event times the watermark compares, in µs, from each kind of time column."""
    from pyspark.sql import functions as F

    rows = spark.createDataFrame([(1_700_000_000, 1.5)], "n long, x double").withColumn(
        "ts", F.to_timestamp(F.lit("2023-11-14 22:13:20.25")))

    def us(column: str, unit: str):  # type: ignore[no-untyped-def]
        return stream_module._time_us(F.col(column), rows.schema[column].dataType, unit,
                                      column, F.lit("k"))

    got = rows.select(us("n", "s").alias("s"), us("n", "ms").alias("ms"),
                      us("n", "us").alias("us"), us("n", "ns").alias("ns"),
                      us("x", "s").alias("x"), us("ts", "s").alias("ts")).first()
    assert got.asDict() == {"s": 1_700_000_000_000_000, "ms": 1_700_000_000_000,
                            "us": 1_700_000_000, "ns": 1_700_000, "x": 1_500_000,
                            "ts": 1_700_000_000_250_000}


def test_arguments_are_checked_before_anything_runs(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    m = qre("iter(atom(a, cur), 0, +)", list(ALPHABET))
    batch = spark.createDataFrame(SENTINEL, SCHEMA)
    with pytest.raises(ValueError, match="not streaming"):
        monitor_stream_frame(batch, m, "k", "t", "tag", "v")
    stream = spark.readStream.schema(SCHEMA).parquet(str(tmp_path))
    for options, message in [
            ({"ttl": "1 minute"}, "ttl needs a watermark"),
            ({"lateness": "1 minute"}, "lateness needs a watermark"),
            ({"watermark": "soon"}, "watermark 'soon' is not a duration"),
            ({"watermark": "-5 seconds"}, "is negative"),
            ({"time_unit": "days"}, "time_unit must be one of s, ms, us, ns"),
            ({"late": "drop"}, "late must be one of flag, fail")]:
        with pytest.raises(ValueError, match=message):
            monitor_stream_frame(stream, m, "k", "t", "tag", "v", **options)
    with pytest.raises(ValueError, match="give output"):
        monitor_stream(stream, m, "k", "t", "tag", "v", checkpoint=str(tmp_path / "c"))


@pytest.mark.parametrize(("text", "delay", "lateness"), [
    ("alphabet a, b; aggregate(sum(cur.v), 4s, 2s)", 0, None),
    ("alphabet a, b; aggregate(matches(seq(a, b)), 3s)", 2, "2 seconds"),
    ("alphabet a, b; matched(within(seq(a, b), 3s))", 1, None),
    # issue 21 §2: past operators bounded by event time
    ("alphabet a, b; is(b) since[0s, 3s] is(a) || once[1s, 4s](fill_with(last(cur.v), "
     "const(0)) > 0.5)", 1, None),
    # issue 21 §3: sessions, with results emitted on time and updated
    ("alphabet a, b; aggregate(sum(cur.v), session(2s))", 1, "2 seconds"),
])
@settings(max_examples=1, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(arrivals(jitter=5, distinct=True, min_events=20))
def test_timed_monitors_stream_as_the_rules_say(
        spark, tmp_path_factory, text, delay, lateness, batches) -> None:  # type: ignore[no-untyped-def]
    """Windows closed by watermark timers, patterns with within, allowed lateness: Spark's
    rows (late flags included) are the simulator's (tests/test_stream_timed.py checks
    the simulator against run_timed)."""
    m = qre(text)
    tmp = tmp_path_factory.mktemp("timed")
    write_batches(tmp / "in", [*batches, SENTINEL])
    got = run(spark, m, tmp / "in", tmp / "ckpt", tmp / "out", watermark=f"{delay} seconds",
              lateness=lateness)
    lateness_us = 0 if lateness is None else 2 * 10**6
    rules = Rules(True, None, "flag", lateness_us, m.clock, True, 10**6, "integral")
    want, _ = simulate(m, batches, rules, delay)
    assert len(got)
    assert_equivalent_streams(got, want, OUTPUT, equal=[*RESULTS, LATE],
                              names=("spark", "simulator"))


def test_a_window_over_a_timestamp_column_stamps_a_microsecond_early(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Ticks of a timestamp column: stamps back in the column's type; the window still
    open at the last watermark is not emitted (run_timed emits it: its input is complete)."""
    frame = pd.DataFrame({"k": [1, 1, 1, 2, 9], "tag": ["a"] * 5,
                          "ts": pd.to_datetime(["2026-11-25 10:00:01", "2026-11-25 10:00:30",
                                                "2026-11-25 10:01:05", "2026-11-25 10:00:10",
                                                "2026-11-25 12:00:00"]).tz_localize("UTC"),
                          "v": [1.0, 2.0, 4.0, 8.0, 0.0]})
    (tmp_path / "in").mkdir()
    frame.to_parquet(tmp_path / "in" / "b0.parquet", coerce_timestamps="us")
    m = qre("alphabet a; aggregate(sum(cur.v), 1min)")
    df = spark.readStream.schema("k long, ts timestamp, tag string, v double").parquet(
        str(tmp_path / "in"))
    query = monitor_stream(df, m, "k", "ts", "tag", "v", checkpoint=str(tmp_path / "ck"),
                           output=str(tmp_path / "out"), watermark="10 seconds",
                           trigger={"availableNow": True})
    query.awaitTermination()
    got = read_sink(tmp_path / "out")
    want = m.run_timed(frame["ts"], frame["tag"], {"v": frame["v"]}, keys=frame["k"])
    # run_timed stamps in the input's zone (UTC); Spark's pandas come naive, in UTC.
    assert want["time"].dt.tz is not None
    want = want[want["key"] != 9].rename(columns={"key": "k"})  # key 9's window: still open
    assert want["value"].tolist() == [3.0, 4.0, 8.0]
    assert_equivalent_streams(got.assign(ts=got["ts"].astype(str)),
                              want.assign(ts=want["time"].dt.tz_convert(None).astype(str)),
                              OUTPUT, equal=["k", "ts", "value"], names=("spark", "run_timed"))


def test_a_late_event_updates_a_window_already_emitted(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Allowed lateness on Spark (seed 000): key 1's window [0, 2) is emitted once the
    watermark passes 2 s (its timer fires in the second micro-batch, whose only event is
    another key's), emitted again when an event 3 s late but within the lateness changes
    it, and not a third time when it settles; [2, 4) only when the stream is flushed."""
    m = qre("alphabet a; aggregate(sum(cur.v), 2s)")
    batches = [pd.DataFrame({"k": [1, 1], "t": [1, 3], "tag": ["a", "a"], "v": [1.0, 2.0]}),
               pd.DataFrame({"k": [2], "t": [3], "tag": ["a"], "v": [0.0]}),
               pd.DataFrame({"k": [1], "t": [0], "tag": ["a"], "v": [4.0]}), SENTINEL]
    write_batches(tmp_path / "in", batches)
    got = run(spark, m, tmp_path / "in", tmp_path / "ckpt", tmp_path / "out",
              watermark="0 seconds", lateness="5 seconds")
    got = got[got["k"] == 1]  # one key: its rows in the order written
    rows = list(zip(got["t"], got["start"], got["value"], got[LATE], strict=True))
    assert rows == [(1, 0, 1.0, False), (1, 0, 5.0, False), (3, 2, 2.0, False)]


@pytest.mark.parametrize(("text", "batches", "delay", "speculate"), [
    ("sum(cur)", "DISORDER", 5, None),
    ("alphabet a, b; aggregate(sum(cur.v), session(3s))", "EXTENDED", 9, None),
    ("sum(cur)", "DISORDER", 5, 2)])
def test_an_optimistic_stream_restarted_writes_the_simulators_changelog(
        spark, tmp_path, text, batches, delay, speculate) -> None:  # type: ignore[no-untyped-def]
    """Issue 22: optimistic=True on Spark gives the simulator's changelog, retractions
    included (tests/test_optimistic.py checks it against run_timed), through the bucket
    state store and a restart from the checkpoint in the middle: nothing lost, nothing
    repeated; with a speculation bound, rows held back come out when their key's timer
    fires."""
    from qre.runtime.changelog import CHANGE, RETRACT
    from qre.runtime.timed import is_timed
    from tests import test_optimistic

    m = qre(text, list(ALPHABET))
    events = [b.drop(columns="__qre_time_us") for b in getattr(test_optimistic, batches)]
    write_batches(tmp_path / "in", events[:2])
    options = {"watermark": f"{delay} seconds", "optimistic": True,
               "speculate": None if speculate is None else f"{speculate} seconds"}
    run(spark, m, tmp_path / "in", tmp_path / "ckpt", tmp_path / "out", **options)
    write_batches(tmp_path / "in", [*events[2:], SENTINEL], first=2)
    got, query = run_query(spark, m, tmp_path / "in", tmp_path / "ckpt", tmp_path / "out",
                           **options)
    rules = (Rules(True, None, "flag", 0, m.clock, True, 10**6, "integral", optimistic=True)
             if is_timed(m) else Rules(True, optimistic=True))
    rules = replace(rules, speculate_us=None if speculate is None else speculate * 10**6)
    want, _ = simulate(m, getattr(test_optimistic, batches), rules, delay)
    assert speculate is not None or (got[CHANGE] == RETRACT).any()
    # A changelog has the output type too: a key's inserts and retractions in order.
    assert_equivalent_streams(got, want, OUTPUT, equal=[*RESULTS, LATE, CHANGE],
                              names=("spark", "simulator"))
    assert "retracted" in query.lastProgress["observedMetrics"]["qre_monitor"]


def test_optimistic_needs_a_watermark(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    stream = spark.readStream.schema(SCHEMA).parquet(str(tmp_path))
    with pytest.raises(ValueError, match="optimistic=True needs a watermark"):
        monitor_stream_frame(stream, qre("sum(cur)", list(ALPHABET)), "k", "t", "tag", "v",
                             optimistic=True)


@pytest.mark.parametrize(("text", "batches", "delay"), [
    ("sum(cur)", "DISORDER", 5),
    ("alphabet a, b; aggregate(sum(cur.v), session(3s))", "EXTENDED", 9)])
def test_final_rows_of_an_optimistic_stream_are_the_pessimistic_rows(
        spark, tmp_path, text, batches, delay) -> None:  # type: ignore[no-untyped-def]
    """Issue 22, point 3 on Spark: FinalRows, the sink barrier as a foreachBatch writer,
    writes the default policy's rows, each once, across a restart from the checkpoint
    (a partition per micro-batch, overwritten if Spark runs one again)."""
    from qre.runtime.timed import is_timed
    from spark_udf import FinalRows
    from tests import test_optimistic

    m = qre(text, list(ALPHABET))
    events = [b.drop(columns="__qre_time_us") for b in getattr(test_optimistic, batches)]
    seen: list[int] = []

    def write(frame, batch_id: int) -> None:  # type: ignore[no-untyped-def]
        assert "change" not in frame.columns
        seen.append(batch_id)
        frame.write.mode("overwrite").parquet(str(tmp_path / "out" / f"batch={batch_id}"))

    def start() -> None:
        df = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(
            str(tmp_path / "in"))
        monitor_stream(df, m, "k", "t", "tag", "v", checkpoint=str(tmp_path / "ckpt"),
                       output=FinalRows(write), trigger={"availableNow": True},
                       watermark=f"{delay} seconds", optimistic=True).awaitTermination()

    write_batches(tmp_path / "in", events[:2])
    start()
    write_batches(tmp_path / "in", [*events[2:], SENTINEL], first=2)
    start()
    got = spark.read.parquet(str(tmp_path / "out")).toPandas()
    got = got[got["k"] != SENTINEL["k"][0]]
    rules = (Rules(True, None, "flag", 0, m.clock, True, 10**6, "integral")
             if is_timed(m) else Rules(True))
    want, _ = simulate(m, getattr(test_optimistic, batches), rules, delay)
    assert len(seen) == len(set(seen)) > len(events)  # each batch once, no-data ones too
    assert len(got)
    # Final rows are released by time, not in the order the pessimistic policy emits
    # them (a late row comes when its event arrives): the same rows, as a multiset.
    assert_equivalent_streams(got, want, "unordered", equal=[*RESULTS, LATE],
                              names=("spark", "simulator"))
