"""Spark columns of the wrong type, and times out of range (issue 19, points 4, 5 and 10).

Column types are checked on the driver, before any job, by every entry point: a time
that is not a number or a timestamp (Spark sorted string times as text, "10" before
"9"; a boolean time raised a bare StopIteration in a worker), a value that is not a
number (strings were parsed, timestamps read as microseconds), a date or decimal time
where a timed run writes stamps back in the column's type. A time that
``run_timed`` refuses on a worker (±inf, beyond ±2**62 δ) fails the job naming the
column and the key (it was an internal Arrow error, or stamps near -9.2e18).
"""

from __future__ import annotations

import math

import pytest

from qre import qre

pyspark = pytest.importorskip("pyspark")

from spark_udf import monitor_frame, monitor_stream_frame, monitor_timed  # noqa: E402

DIGITS = qre("alphabet a; iter(atom(a, cur), 0, (x, y) -> 10 * x + y)")
WINDOW = qre("alphabet a; aggregate(sum(cur), 2s)")


@pytest.mark.parametrize("schema, rows, needle", [
    ("k long, t string, tag string, v double", [(1, "10", "a", 1.0), (1, "9", "a", 5.0)],
     r"column 't' \(time\) is string, not a number or a timestamp: cast it"),
    ("k long, t boolean, tag string, v double", [(1, True, "a", 1.0)],
     r"column 't' \(time\) is boolean, not a number or a timestamp"),
    ("k long, t long, tag string, v string", [(1, 1, "a", "10")],
     r"column 'v' \(value\) is string, not a number: cast it"),
    ("k long, t long, tag string, v timestamp", [(1, 1, "a", None)],
     r"column 'v' \(value\) is timestamp, not a number"),
])
def test_columns_of_the_wrong_type_fail_before_the_job(spark, tmp_path, schema, rows,  # type: ignore[no-untyped-def]
                                                      needle) -> None:
    df = spark.createDataFrame(rows, schema)
    calls = [lambda: monitor_frame(df, DIGITS, "k", "t", "tag", "v"),
             lambda: monitor_frame(df, DIGITS, "k", "t", "tag", "v", method="grouped"),
             lambda: monitor_timed(df, WINDOW, "k", "t", "tag", "v")]
    for call in calls:
        with pytest.raises(ValueError, match=needle):
            call()
    stream = spark.readStream.schema(schema).parquet(str(tmp_path))
    with pytest.raises(ValueError, match=needle):
        monitor_stream_frame(stream, DIGITS, "k", "t", "tag", "v")


def test_times_that_cannot_hold_stamps_are_refused_where_stamps_are_written(spark) -> None:  # type: ignore[no-untyped-def]
    """A date or a decimal orders events (monitor_frame) but cannot hold a window's stamp
    (the end of a window minus a microsecond)."""
    df = spark.createDataFrame([(1, 1, "a", 1.0)], "k long, t long, tag string, v double")
    for cast, to in (("date", "timestamp"), ("decimal(10,0)", "double")):
        typed = df.withColumn("t", df["t"].cast("timestamp").cast(cast) if cast == "date"
                              else df["t"].cast(cast))
        with pytest.raises(ValueError, match=rf"column 't' \(time\) is .*cast it to {to}"):
            monitor_timed(typed, WINDOW, "k", "t", "tag", "v")
        assert [r.value for r in monitor_frame(typed, DIGITS, "k", "t", "tag",
                                               "v").collect()] == [1.0]


def test_local_method_orders_dates_and_decimals_as_spark_sorts_them(spark) -> None:  # type: ignore[no-untyped-def]
    """"local" ranks a date or decimal time itself (no float cast): the rows of Spark's sort."""
    # Key 1's times 10**17 + 1, 10**17, 1: a float would tie the first two (then v decides).
    rows = [(k % 2, t, "a", float(k)) for k, t in enumerate([3, 10**17 + 1, 2, 10**17, 5, 1])]
    df = spark.createDataFrame(rows, "k long, t long, tag string, v double")
    for typed in (df.withColumn("t", (df["t"] % 1000 * 86400).cast("timestamp").cast("date")),
                  df.withColumn("t", df["t"].cast("decimal(20,0)"))):
        got = [monitor_frame(typed, DIGITS, "k", "t", "tag", "v", method=method)
               .orderBy("k", "t").collect() for method in ("local", "sorted")]
        assert got[0] == got[1]


@pytest.mark.parametrize("schema, time", [("double", math.inf), ("double", 1e20),
                                          ("long", 2**63 - 1)])
def test_monitor_timed_names_the_column_and_key_of_a_time_out_of_range(spark, schema,  # type: ignore[no-untyped-def]
                                                                       time) -> None:
    from pyspark.errors import PythonException

    df = spark.createDataFrame([("u", type(time)(1), "a", 1.0), ("u", time, "a", 2.0)],
                               f"k string, t {schema}, tag string, v double")
    with pytest.raises(PythonException, match=r"monitor_timed: column 't' \(time\), key 'u': "
                                              r".* (is out of range|is not a time)"):
        monitor_timed(df, WINDOW, "k", "t", "tag", "v").collect()


@pytest.mark.parametrize("schema, time, options", [
    ("double", 1e20, {"watermark": "5 seconds"}), ("double", math.nan, {}),
    ("long", 2**63 - 1, {})])
def test_a_stream_names_the_column_and_key_of_a_time_out_of_range(spark, tmp_path, schema,  # type: ignore[no-untyped-def]
                                                                 time, options) -> None:
    """A timed stream's times in µs: Spark's cast failed without naming the column (or,
    without ANSI mode, wrapped); now the query fails naming the column and the key."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.errors import StreamingQueryException

    from spark_udf import monitor_stream

    (tmp_path / "in").mkdir()
    kind = pa.float64() if schema == "double" else pa.int64()
    pq.write_table(pa.table({"k": ["u", "u"], "t": pa.array([1, time], kind), "tag": ["a", "a"],
                             "v": [1.0, 2.0]}), tmp_path / "in" / "b.parquet")
    df = spark.readStream.schema(f"k string, t {schema}, tag string, v double").parquet(
        str(tmp_path / "in"))
    query = monitor_stream(df, WINDOW, "k", "t", "tag", "v", checkpoint=str(tmp_path / "c"),
                           output=str(tmp_path / "out"), trigger={"availableNow": True},
                           **options)
    with pytest.raises(StreamingQueryException, match=r"monitor_stream: column 't' \(time\), "
                                                      r"key u: .* is not a time within 2\*\*62"):
        query.awaitTermination()
