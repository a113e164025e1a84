"""spark_udf on a real local Spark: monitor_frame against the monitor's own keyed runs.

One SparkSession for all Spark tests (tests/conftest.py). The
expectation is tests/keyed_oracle.py's, computed without Spark and without
spark_udf's sort (numpy's lexsort, then ``Monitor.run_keys`` on the table
engine, itself differential-tested against the reference evaluator); every
output row must match, status and value bit for bit (NaN sign aside). Spark's rows
(``toPandas``, each key's rows in the order its group emitted them) and the oracle's
(each key's in processing order) are compared as traces of monitor_frame's output type
(qre.runtime.stream_types: each key's rows in order, keys independent), never sorted.
"""

from __future__ import annotations

import io

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from keyed_oracle import expected_rows, sorted_events
from query_strategies import temporal_queries, top_queries
from strategies import keyed_events

from dt import DT, Transition, Var, parse_term
from qre import Monitor, examples, qre
from qre.language.printer import to_text
from qre.runtime.stream_types import stream_type
from qre.testing import assert_equivalent_streams

pyspark = pytest.importorskip("pyspark")

from spark_udf import monitor_fingerprint, monitor_frame  # noqa: E402
from spark_udf.batch import METHODS  # noqa: E402

ALPHABET = ("a", "b")
OUTPUT = stream_type("monitor_frame", "k").output_dependence()
"""PartitionBy(k, Seq(row)): each key's rows in order, keys independent."""
RESULTS = ["k", "t", "tag", "status", "value"]


@pytest.mark.parametrize("method", METHODS)
@settings(max_examples=12)
@given(st.one_of(top_queries(ALPHABET, 2), temporal_queries(ALPHABET, 1)).map(to_text),
       keyed_events())
def test_random_queries_match_run_keys(spark, method, text, frame) -> None:  # type: ignore[no-untyped-def]
    m = qre(text, list(ALPHABET))
    df = spark.createDataFrame(frame, "k long, t long, tag string, v double")
    out = monitor_frame(df, m, key="k", time="t", tag="tag", value="v", method=method)
    assert out.schema.simpleString() == ("struct<k:bigint,t:bigint,tag:string,v:double,"
                                         "status:tinyint,value:double>")
    assert out.where("value IS NULL").count() == 0  # NaN unless defined, never null
    got = out.toPandas()
    want = expected_rows(m, frame, ["v"])
    # Every input row once, its columns as they were (kept beside the outputs), each
    # key's in the oracle's processing order; and the results, bit for bit.
    want["v"] = sorted_events(frame, "k", ["t", "tag", "v"], ["v"])["v"]
    assert_equivalent_streams(got, want, OUTPUT, equal=[*RESULTS, "v"],
                              names=("spark", "oracle"))


@pytest.mark.parametrize("method", METHODS)
def test_ties_follow_the_tiebreak_then_tag_then_value(spark, method) -> None:  # type: ignore[no-untyped-def]
    """Equal times: the 'seq' column decides if given; else tag, then value (NaN last)."""
    m = qre("iter(atom(_, cur), 0, (x, y) -> 10 * x + y)", list(ALPHABET))
    frame = pd.DataFrame({"k": [1, 1, 1, 1], "t": [5, 5, 5, 4], "tag": ["b", "a", "a", "b"],
                          "v": [1.0, 3.0, 2.0, 9.0], "seq": [0, 2, 1, 3]})
    df = spark.createDataFrame(frame)
    got = monitor_frame(df, m, key="k", time="t", tag="tag", value="v",
                        method=method).toPandas()
    # t=4 first (9), then t=5: a 2, a 3, b 1 → 9, 92, 923, 9231
    assert got["value"].tolist() == [9.0, 92.0, 923.0, 9231.0]
    got = monitor_frame(df, m, key="k", time="t", tag="tag", value="v", tiebreak="seq",
                        method=method).toPandas()
    # t=4 first (9), then seq 0, 1, 2: b 1, a 2, a 3
    assert got["value"].tolist() == [9.0, 91.0, 912.0, 9123.0]
    assert list(got.columns) == ["k", "t", "tag", "v", "seq", "status", "value"]
    assert_equivalent_streams(got, expected_rows(m, frame, ["v"], ["seq"]), OUTPUT,
                              equal=RESULTS, names=("spark", "oracle"))


@pytest.mark.parametrize("method", METHODS)
def test_records_and_several_outputs(spark, method) -> None:  # type: ignore[no-untyped-def]
    """A DT from JSON with two outputs reading cur.x and cur.y, times as floats."""
    d = DT(ALPHABET, ("s", "p"), ("s", "p"), ("s", "p"), (
        Transition("a", frozenset({Var("s")}), "s", parse_term("s + cur.x")),
        Transition("a", frozenset({Var("p")}), "p", parse_term("p")),
        Transition("b", frozenset({Var("s")}), "s", parse_term("s")),
        Transition("b", frozenset({Var("p")}), "p", parse_term("p + cur.y"))))
    m = Monitor.from_dt(DT.from_json(d.to_json()))
    frame = pd.DataFrame({"k": [7, 7, 8, 7], "t": [1.5, 0.5, 1.0, 2.5],
                          "tag": ["a", "b", "a", "b"], "x": [1.0, 2.0, 3.0, 4.0],
                          "y": [2.0, 3.0, 4.0, 5.0]})
    out = monitor_frame(spark.createDataFrame(frame), m, key="k", time="t", tag="tag",
                        value=["x", "y"], method=method)
    got = out.toPandas()
    assert list(got.columns) == ["k", "t", "tag", "x", "y", "status_s", "value_s", "status_p",
                                 "value_p"]
    # key 7 in time order: b (y=3), a (x=1), b (y=5); key 8: a (x=3)
    want = pd.DataFrame({"k": [7, 7, 7, 8], "t": [0.5, 1.5, 2.5, 1.0],
                         "value_s": [0.0, 1.0, 1.0, 3.0], "value_p": [3.0, 3.0, 8.0, 0.0],
                         "status_s": [1, 1, 1, 1], "status_p": [1, 1, 1, 1]})
    assert_equivalent_streams(got, want, OUTPUT, equal=list(want.columns),
                              names=("spark", "expected"))


@pytest.mark.parametrize("method", METHODS)
def test_outputs_keep_the_input_columns_and_never_overwrite_one(spark, method) -> None:  # type: ignore[no-untyped-def]
    """Every input column comes back beside the outputs (keep= chooses), so a result
    joins back without guessing; an output named like a kept column is an error until a
    prefix names it apart. A pandas frame is converted with the active session."""
    frame = pd.DataFrame({"id": [10, 11, 12], "k": [1, 1, 2], "t": [2, 1, 1],
                          "tag": ["a", "a", "a"], "value": [1.0, 2.0, 4.0],
                          "note": ["x", "y", "z"]})
    m = qre("iter(atom(a, cur), 0, +)", list(ALPHABET))
    with pytest.raises(ValueError, match=r"'value' would overwrite.*prefix='qre_'"):
        monitor_frame(spark.createDataFrame(frame), m, key="k", time="t", tag="tag",
                      value="value", method=method)
    out = monitor_frame(frame, m, key="k", time="t", tag="tag", value="value", prefix="qre_",
                        method=method)
    got = out.toPandas()
    assert list(got.columns) == ["id", "k", "t", "tag", "value", "note", "qre_status",
                                 "qre_value"]
    # Each input row with its columns as they were; key 1: t=1 (2), then t=2 (+1).
    want = frame.iloc[[1, 0, 2]].assign(qre_value=[2.0, 3.0, 4.0])
    assert_equivalent_streams(got, want, OUTPUT, equal=[*frame.columns, "qre_value"],
                              names=("spark", "expected"))
    out = monitor_frame(frame, m, key="k", time="t", tag="tag", value="value", keep=["id"],
                        method=method)
    assert out.columns == ["id", "k", "t", "tag", "status", "value"]
    with pytest.raises(ValueError, match="no column 'nope' to keep"):
        monitor_frame(frame, m, key="k", time="t", tag="tag", value="value", keep="nope")


def test_bad_columns_fail_before_the_job(spark) -> None:  # type: ignore[no-untyped-def]
    df = spark.createDataFrame(pd.DataFrame({"k": [1], "t": [1], "tag": ["a"], "v": [1.0]}))
    m = qre("iter(atom(a, cur), 0, +)", list(ALPHABET))
    with pytest.raises(ValueError, match="no column 'time' for time"):
        monitor_frame(df, m, key="k", time="time", tag="tag", value="v")
    with pytest.raises(ValueError, match="exactly one value column, not 0"):
        monitor_frame(df, m, key="k", time="t", tag="tag")
    fields = qre("iter(atom(a, cur.x), 0, +)", list(ALPHABET))
    with pytest.raises(ValueError, match=r"reads cur.x: add 'x'"):
        monitor_frame(df, fields, key="k", time="t", tag="tag", value=["v"])
    with pytest.raises(ValueError, match="unknown method 'fast'"):
        monitor_frame(df, m, key="k", time="t", tag="tag", value="v", method="fast")


@pytest.mark.parametrize("method", METHODS)
def test_null_time_and_unknown_tags_fail_the_job_with_the_key(spark, method) -> None:  # type: ignore[no-untyped-def]
    from pyspark.errors import PythonException

    m = qre("iter(atom(a, cur), 0, +)", list(ALPHABET))
    df = spark.createDataFrame([(3, None, "a", 1.0)], "k long, t long, tag string, v double")
    with pytest.raises(PythonException, match=r"column 't' \(time\) is null for key 3"):
        monitor_frame(df, m, key="k", time="t", tag="tag", value="v", method=method).collect()
    df = spark.createDataFrame([(3, 1, "zz", 1.0), (3, 2, "a", 2.0)],
                               "k long, t long, tag string, v double")
    with pytest.raises(PythonException, match="unknown tag 'zz'"):
        monitor_frame(df, m, key="k", time="t", tag="tag", value="v", method=method).collect()
    out = monitor_frame(df, m, key="k", time="t", tag="tag", value="v", unknown_tags="skip",
                        method=method)
    assert out.toPandas()["value"].tolist() == [0.0, 2.0]  # one key: its rows in order


def test_fingerprint_tells_queries_apart() -> None:
    a, b = qre("iter(atom(a, cur), 0, +)"), qre("iter(atom(a, cur), 0, +)")
    assert monitor_fingerprint(a) == monitor_fingerprint(b)
    assert monitor_fingerprint(a) != monitor_fingerprint(qre("iter(atom(a, cur), 1, +)"))


def test_the_demo_runs_the_login_query_per_user_in_time_order(spark, capsys) -> None:  # type: ignore[no-untyped-def]
    """``make demo``'s Spark half: its printed values are each user's outputs in ts order."""
    from spark_udf import demo

    assert demo.main([]) == 0
    printed = capsys.readouterr().out.splitlines()[2:]
    events = pd.read_csv(io.StringIO(examples.read_text("logins.csv"))).sort_values(["user", "ts"],
                                                                    kind="mergesort")
    m = qre(examples.read_text("failed_since_ok.qre"))
    want = []
    for _, rows in events.groupby("user", sort=True):
        want += m.run(rows["tag"].tolist()).value.tolist()
    assert [float(line.split()[-1]) for line in printed] == want
    assert len(printed) == len(events) == 12
