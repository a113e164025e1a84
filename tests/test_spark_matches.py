"""``match(...)`` queries on Spark (issue 26): per key, the rows of Matcher.run_timed."""

from __future__ import annotations

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
