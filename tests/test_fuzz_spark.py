"""Wrong types into Spark's entry points: a TypeError or ValueError naming the argument,
raised before any Spark job (issue 19, point 13; the fault-and-fuzz suite).

``monitor_frame`` (both methods), ``monitor_timed``, ``monitor_stream_frame`` and
``monitor_stream`` check their arguments on the driver: a column name that is not a
string or not a column, a monitor that is not one, a frame that is not one, an option
outside its choices. Key identity under nulls, NaN and huge keys on every Spark path is
tests/test_spark_keys.py's property test (also part of this suite).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st
from test_fuzz_types import WRONG

from qre import qre

pyspark = pytest.importorskip("pyspark")

from spark_udf import (  # noqa: E402
    monitor_frame,
    monitor_stream,
    monitor_stream_frame,
    monitor_timed,
)

pytestmark = pytest.mark.fuzz

MONITOR = qre("iter(atom(a, cur), 0, +)", alphabet=["a", "b"])
WINDOW = qre("alphabet a, b; aggregate(sum(cur), 2s, 1s)")
ARGUMENTS = {"df": None, "monitor": MONITOR, "key": "k", "time": "t", "tag": "tag",
             "value": "v"}
OPTIONS = {
    monitor_frame: {"method": "sorted", "engine": "table", "unknown_tags": "error",
                    "tiebreak": (), "keep": None, "prefix": ""},
    monitor_timed: {"time_unit": "s", "engine": "table", "undefined": "drop", "keep": None,
                    "dedup": False},
    monitor_stream_frame: {"time_unit": "s", "engine": "table"},
}
COLUMN_NAMES = st.one_of(st.sampled_from(["nope", "", "k ", "K", "v.x", "`v`"]), WRONG)
"""Names of no column, and values that are no name at all."""


SCHEMA = "k long, t long, tag string, v double"


@pytest.fixture(scope="module")
def events(spark: Any) -> Any:
    return spark.createDataFrame([(1, 1, "a", 1.0), (1, 2, "b", 2.0), (2, 1, "a", 3.0)],
                                 SCHEMA)


@pytest.fixture(scope="module")
def stream(spark: Any, events: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The same rows as a streaming DataFrame (Parquet files; never started here)."""
    path = str(tmp_path_factory.mktemp("stream") / "in")
    events.write.parquet(path)
    return spark.readStream.schema(SCHEMA).parquet(path)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
@pytest.mark.parametrize("entry", [monitor_frame, monitor_timed, monitor_stream_frame],
                         ids=lambda f: f.__name__)
def test_a_wrong_argument_is_refused_before_any_job(spark: Any, events: Any, stream: Any,
                                                    entry: Any, data: st.DataObject) -> None:
    monitor = WINDOW if entry is monitor_timed else MONITOR
    df = stream if entry is monitor_stream_frame else events
    valid = {**ARGUMENTS, "df": df, "monitor": monitor, **OPTIONS[entry]}
    argument = data.draw(st.sampled_from(sorted(valid)), label="argument")
    wrong = data.draw(COLUMN_NAMES if argument in ("key", "time", "tag", "value") else WRONG,
                      label="value")
    note(f"{entry.__name__}({argument}={wrong!r})")
    jobs = spark.sparkContext.statusTracker().getJobIdsForGroup()
    arguments = {**valid, argument: wrong}
    df, monitor = arguments.pop("df"), arguments.pop("monitor")
    try:
        entry(df, monitor, **arguments)
    except (TypeError, ValueError) as error:
        message = str(error)
        event(f"{argument}: {type(error).__name__}")
        assert _names(message, argument, wrong), f"{type(error).__name__}: {message}"
    else:
        event(f"{argument}: accepted")
    assert spark.sparkContext.statusTracker().getJobIdsForGroup() == jobs, "a job ran"


def _names(message: str, argument: str, wrong: object) -> bool:
    words = {argument, argument.replace("_", " ")}
    if argument == "df":
        words |= {"DataFrame", "frame"}
    if argument == "monitor":
        words |= {"Monitor", "monitor"}
    if isinstance(wrong, str) and wrong:
        words.add(wrong)
    return any(w in message for w in words)


def test_monitor_stream_checks_its_arguments_before_starting(spark: Any, stream: Any,
                                                             events: Any, tmp_path: Any) -> None:
    """The streaming query is not started with a bad argument, which the error names (a
    batch frame is refused as one)."""
    for bad, named in (({"key": 5}, "key"), ({"key": "nope"}, "'nope'"),
                       ({"checkpoint": 5}, "checkpoint")):
        arguments = {"key": "k", "time": "t", "tag": "tag", "value": "v",
                     "checkpoint": str(tmp_path / "cp"), **bad}
        with pytest.raises((TypeError, ValueError), match=named):
            monitor_stream(stream, MONITOR, **arguments)
    with pytest.raises(ValueError, match="not streaming"):
        monitor_stream(events, MONITOR, key="k", time="t", tag="tag", value="v",
                       checkpoint=str(tmp_path / "cp"))
    assert not (tmp_path / "cp").exists()  # nothing was started
