"""Spark columns of the wrong type (issue 19, points 5 and 10).

Column types are checked on the driver, before any job, by every entry point: a time
that is not a number or a timestamp (Spark sorted string times as text, "10" before
"9"; a boolean time raised a bare StopIteration in a worker), a value that is not a
number (strings were parsed, timestamps read as microseconds), a date or decimal time
where a timed run writes stamps back in the column's type.
"""

from __future__ import annotations

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
