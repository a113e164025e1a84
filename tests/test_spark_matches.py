"""``match(...)`` queries on Spark (issue 26): per key, the rows of Matcher.run_timed."""

from __future__ import annotations

import os
import random

import numpy as np
import pandas as pd
import pytest

from qre import qre


def _frame(seed: int, n: int) -> pd.DataFrame:
    rng = random.Random(seed)
    return pd.DataFrame({
        "id": np.arange(n, dtype=np.int64),
        "k": [rng.choice(["x", "y", "z"]) for _ in range(n)],
        "ts": pd.to_datetime("2026-11-25") + pd.to_timedelta(
            [rng.randint(0, 40) for _ in range(n)], unit="s"),
        "tag": [rng.choice("abc") for _ in range(n)],
        "amount": [float(rng.randint(0, 9)) for _ in range(n)]})


@pytest.mark.parametrize("text", [
    "alphabet a, b, c; match(seq[next](a, plus(b), c), within 20s, skip past_last, "
    "measures [sum(b.amount) as total, count(b) as n])",
    "alphabet a, b, c; match(seq(a, not(c)), within 10s, measures [first(a.amount) as fa])",
    "alphabet a, b, c; match(seq[next](a, b, c), within 15s, timeouts)",
])
def test_matches_on_spark_equal_run_timed(spark, text):
    from spark_udf import monitor_timed

    m = qre(text)
    frame = _frame(7, 80)
    got = monitor_timed(spark.createDataFrame(frame), m, "k", "ts", "tag", ["amount"],
                        tiebreak="id").toPandas()
    want = m.run_timed(frame["ts"], frame["tag"], {"amount": frame["amount"]},
                       keys=frame["k"], tiebreak=frame["id"])
    assert len(want) > 0

    def rows_of(side: pd.DataFrame, key: str, events: pd.Series) -> list:
        measures = [c.name for c in m.query.measures] + (["timeout"] if m.query.timeouts
                                                          else [])
        return sorted((k, tuple(e), str(s), str(t), tuple(v), *(side[c].iloc[i]
                                                              for c in measures))
                      for i, (k, e, s, t, v) in enumerate(zip(
                          side[key], events, side["start"], side["time"], side["vars"],
                          strict=True)))

    spark_events = got["events"].map(lambda evs: [e["id"] for e in evs])
    assert rows_of(got, "k", spark_events) == rows_of(want, "key", want["rows"])
    assert got.columns.tolist()[:7] == ["k", "match", "start", "end", "time", "vars", "events"]
    first = got["events"][0][0]
    assert set(first) == {"id", "k", "ts", "tag", "amount"}
    assert (got.groupby("k")["match"].apply(lambda s: sorted(s) == list(range(len(s))))).all()


def test_match_options_that_do_not_apply(spark):
    from spark_udf import monitor_timed

    m = qre("alphabet a; match(a)")
    df = spark.createDataFrame(_frame(1, 3))
    with pytest.raises(ValueError, match="dedup, prefix"):
        monitor_timed(df, m, "k", "ts", "tag", dedup=True)
    with pytest.raises(ValueError, match="no column 'nope'"):
        monitor_timed(df, m, "k", "ts", "nope")


STREAM_CASES = [
    ("alphabet a, b, c; match(seq[next](a, plus(b), c), within 20s, skip past_last, "
     "measures [sum(b.amount) as total, count(b) as n])", None),
    ("alphabet a, b, c; match(seq(a, not(c)), within 10s, measures [first(a.amount) as fa])",
     "5 seconds"),
    ("alphabet a, b, c; match(seq[next](a, b, c), within 15s, timeouts)", "0 seconds"),
]


@pytest.mark.parametrize(("text", "watermark"), STREAM_CASES)
def test_a_match_stream_restarted_gives_the_rows_of_run_timed(spark, tmp_path, text,
                                                              watermark):
    """Micro-batches cut by time (one Parquet file each), the query stopped after half of
    them and restarted from its checkpoint: per key, the rows of one ``run_timed`` over
    all the events — none lost, none repeated; with a watermark, a sentinel key far in
    the future makes the keys' held matches and timeouts due."""
    from spark_udf import monitor_stream

    m = qre(text)
    frame = _frame(11, 60).sort_values(["ts", "id"]).reset_index(drop=True)
    if watermark is not None:
        frame = pd.concat([frame, pd.DataFrame({
            "id": [10**6], "k": ["sentinel"], "ts": [pd.Timestamp("2027-01-01")],
            "tag": ["c"], "amount": [0.0]})], ignore_index=True)
    seconds = (frame["ts"] - frame["ts"].min()).dt.total_seconds().to_numpy()
    cuts = np.searchsorted(seconds, [10, 20, 30, 45])
    source = tmp_path / "in"
    source.mkdir()

    def write(parts: range) -> None:
        for i in parts:
            lo, hi = ([0, *cuts][i], [*cuts, len(frame)][i])
            path = source / f"part-{i}.parquet"
            frame.iloc[lo:hi].to_parquet(path, coerce_timestamps="us")
            os.utime(path, (1_700_000_000 + i, 1_700_000_000 + i))

    def run() -> None:
        df = spark.readStream.schema(spark.createDataFrame(frame.iloc[:1]).schema).option(
            "maxFilesPerTrigger", 1).parquet(str(source))
        monitor_stream(df, m, "k", "ts", "tag", ["amount"], watermark=watermark,
                       tiebreak="id", checkpoint=str(tmp_path / "ckpt"),
                       output=str(tmp_path / "out"),
                       trigger={"availableNow": True}).awaitTermination()

    write(range(2))
    run()
    write(range(2, len(cuts) + 1))
    run()
    got = spark.read.parquet(str(tmp_path / "out")).toPandas()
    got = got[got["k"] != "sentinel"]
    assert not got["late"].any()
    want = m.run_timed(frame["ts"], frame["tag"], {"amount": frame["amount"]},
                       keys=frame["k"], tiebreak=frame["id"])
    want = want[want["key"] != "sentinel"]
    assert len(want) > 0
    columns = [c.name for c in m.query.measures] + (["timeout"] if m.query.timeouts else [])

    def rows_of(side: pd.DataFrame, key: str, ids: list) -> list:
        return sorted((k, tuple(e), str(s), str(t), tuple(v), *(side[c].iloc[i]
                                                               for c in columns))
                      for i, (k, e, s, t, v) in enumerate(zip(
                          side[key], ids, side["start"], side["time"], side["vars"],
                          strict=True)))

    ids = [[int(frame["id"][r]) for r in rows] for rows in want["rows"]]
    assert rows_of(got, "k", got["events"].map(lambda evs: [e["id"] for e in evs]).tolist()
                   ) == rows_of(want, "key", ids)
    assert (got.groupby("k")["match"].apply(lambda s: sorted(s) == list(range(len(s))))).all()


def test_a_match_stream_flags_or_fails_on_a_late_event(spark, tmp_path):
    """An event behind what its key processed (the third part's, after the watermark
    passed 20 s): a row with ``late`` true and the event, no match; ``late="fail"``
    stops the query naming the key. Options of DT monitors only are refused."""
    from pyspark.errors import StreamingQueryException

    from spark_udf import monitor_stream

    m = qre("alphabet a, b, c; match(seq[next](a, b), within 1h)")
    start = pd.Timestamp("2026-11-25")
    batches = [pd.DataFrame({"id": [0, 1], "k": ["x", "x"], "ts": [start + pd.Timedelta(s, "s")
                                                                  for s in (10, 20)],
                             "tag": ["a", "b"], "amount": [1.0, 2.0]}),
               pd.DataFrame({"id": [3], "k": ["x"], "ts": [start + pd.Timedelta(30, "s")],
                             "tag": ["a"], "amount": [4.0]}),
               pd.DataFrame({"id": [2], "k": ["x"], "ts": [start + pd.Timedelta(5, "s")],
                             "tag": ["b"], "amount": [3.0]})]
    source = tmp_path / "in"
    source.mkdir()
    for i, batch in enumerate(batches):
        path = source / f"part-{i}.parquet"
        batch.to_parquet(path, coerce_timestamps="us")
        os.utime(path, (1_700_000_000 + i, 1_700_000_000 + i))

    def run(name: str, **options) -> pd.DataFrame:
        df = spark.readStream.schema(spark.createDataFrame(batches[0]).schema).option(
            "maxFilesPerTrigger", 1).parquet(str(source))
        monitor_stream(df, m, "k", "ts", "tag", watermark="0 seconds",
                       checkpoint=str(tmp_path / name), output=str(tmp_path / f"{name}-out"),
                       trigger={"availableNow": True}, **options).awaitTermination()
        return spark.read.parquet(str(tmp_path / f"{name}-out")).toPandas()

    rows = run("flag").sort_values("late")
    assert rows["late"].tolist() == [False, True]
    assert [[e["id"] for e in evs] for evs in rows["events"]] == [[0, 1], [2]]
    assert rows["match"].isna().tolist() == [False, True]
    with pytest.raises(StreamingQueryException, match="key 'x': a late event"):
        run("fail", late="fail")
    df = spark.readStream.schema(spark.createDataFrame(batches[0]).schema).parquet(str(source))
    with pytest.raises(ValueError, match="ttl= is not for match queries"):
        monitor_stream(df, m, "k", "ts", "tag", watermark="1 second", ttl="1 hour",
                       checkpoint=str(tmp_path / "ttl"))
