"""spark_udf.keyed, the per-key rules of monitor_stream, without Spark.

A simulator (tests/stream_simulator.py) plays Spark's part. The outputs are checked
against the oracle (tests/keyed_oracle.py): every event is output exactly
once; the events not flagged late, per key, are output in time order with
exactly the oracle's results on those events; late events are flagged with
no result and are, with a watermark, exactly the events that arrived at or
below it, and without one, events that sort before something their key had
processed; when every event arrives ahead of the watermark (or, without a
watermark, in order), nothing is late and the outputs are the oracle's on
all events. And the outputs, as a multiset, do not depend on batches without
data (Spark runs one when the watermark moves, e.g. before a query stops), which
is what makes a restarted query output the rows an uninterrupted one does (a
key's late rows may come in another place: test_batches_without_data_change_nothing).

Outputs are compared as traces of monitor_stream's output type
(qre.runtime.stream_types: each key's rows in order, keys independent), not sorted,
except with and without batches without data; outputs against the events that
arrived (a bag within each micro-batch), as multisets.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from keyed_oracle import expected_rows
from query_strategies import temporal_queries, top_queries
from stream_simulator import ALPHABET, US, arrivals, simulate

from qre import Monitor, qre
from qre.language.printer import to_text
from qre.runtime.stream_types import stream_type
from qre.testing import assert_equivalent_streams
from spark_udf.keyed import LATE, TIME_US, KeyState, Rules, step, wake_ms
from spark_udf.plan import make_plan, order_of, time_ordered

QUERIES = st.one_of(top_queries(ALPHABET, 2), temporal_queries(ALPHABET, 1)).map(to_text)
RESULTS = ["k", "t", "tag", "status", "value"]
OUTPUT = stream_type("monitor_stream", "k").output_dependence()
"""PartitionBy(k, Seq(row)): each key's rows in order, keys independent."""


def arrived(rows: pd.DataFrame, events: pd.DataFrame, columns: list[str]) -> None:
    """The rows are the events, as a multiset: events arrive in any order (a bag of
    each key's within a micro-batch), rows come in the order the stream processes them."""
    assert_equivalent_streams(rows, events, "unordered", equal=columns,
                              names=("rows", "events"))


def check(m: Monitor, batches: list[pd.DataFrame], rows: pd.DataFrame, behind: pd.DataFrame,
          rules: Rules, ttl: int | None) -> None:
    """The properties of the module docstring; late events are told apart by (key, time),
    so a stream with late events must have distinct times."""
    events = pd.concat(batches, ignore_index=True)
    arrived(rows, events, ["k", "t", "tag"])
    is_late = rows[LATE].to_numpy(dtype=bool)
    late, on_time = rows[is_late], rows[~is_late]
    assert (late["status"] == 0).all() and late["value"].isna().all()
    if rules.watermark:  # late: exactly the events that arrived at or below the watermark
        arrived(late, behind, ["k", "t"])
    else:  # late: output after an event of its key that sorts later
        def pairs(frame: pd.DataFrame) -> set[tuple]:
            return set(frame[["k", "t"]].itertuples(index=False, name=None))

        assert pairs(late) <= pairs(behind)
        for p in np.flatnonzero(is_late):
            before = rows.iloc[:p]
            key, t = rows["k"].iloc[p], rows["t"].iloc[p]
            assert ((before["k"] == key) & ~before[LATE] & (before["t"] > t)).any()
    for _, group in on_time.groupby("k", sort=False):
        assert group["t"].is_monotonic_increasing
    processed = events[~events.set_index(["k", "t"]).index.isin(
        late.set_index(["k", "t"]).index)]
    want = expected_rows(m, processed, ["v"], ttl=ttl)
    assert_equivalent_streams(on_time, want, OUTPUT, equal=RESULTS,
                              names=("stream", "oracle"))


@settings(max_examples=60)
@given(QUERIES, arrivals(jitter=0), st.sampled_from([None, 0, 3]))
def test_in_order_arrivals_give_the_oracle(text, batches, delay) -> None:  # type: ignore[no-untyped-def]
    """In-order arrivals, ties split across micro-batches, with or without a watermark."""
    m = qre(text, list(ALPHABET))
    rules = Rules(watermark=delay is not None)
    rows, behind = simulate(m, batches, rules, delay)
    if not len(behind):
        check(m, batches, rows, behind, rules, None)
    else:  # a tie split across micro-batches may sort before what its key processed
        arrived(rows, pd.concat(batches), ["k", "t", "tag"])


@settings(max_examples=60)
@given(QUERIES, arrivals(jitter=6, distinct=True), st.sampled_from([0, 2, 6, 10]),
       st.sampled_from([None, 0, 1, 2, 4]))
def test_out_of_order_events_within_the_watermark_are_processed_in_order(
        text, batches, delay, ttl) -> None:  # type: ignore[no-untyped-def]
    m = qre(text, list(ALPHABET))
    rules = Rules(watermark=True, ttl_us=None if ttl is None else ttl * US)
    rows, behind = simulate(m, batches, rules, delay)
    check(m, batches, rows, behind, rules, ttl)


@settings(max_examples=40)
@given(QUERIES, arrivals(jitter=6, distinct=True))
def test_without_a_watermark_late_events_are_flagged(text, batches) -> None:  # type: ignore[no-untyped-def]
    m = qre(text, list(ALPHABET))
    rules = Rules(watermark=False)
    rows, behind = simulate(m, batches, rules, None)
    check(m, batches, rows, behind, rules, None)


def _events(times: list[int], plan_tags: str = "a") -> pd.DataFrame:
    frame = pd.DataFrame({"k": 0, "t": times, "tag": plan_tags, "v": 1.0})
    frame[TIME_US] = frame["t"] * US
    return frame


def test_an_idle_state_is_dropped_only_once_the_watermark_is_past_last_plus_ttl() -> None:
    m = qre("iter(atom(a, cur), 0, +)", ["a"])
    plan = make_plan("test", _events([1]), m, "k", "t", "tag", "v", (), "table", "error")
    rules = Rules(watermark=True, ttl_us=5 * US)

    def arrive_then_release(state: KeyState, t: int) -> tuple[KeyState | None, list[float]]:
        waiting, rows = step(plan, rules, m, "table", 0, state, _events([t]), t * US - 1)
        assert waiting is not None and waiting.pending is not None and len(rows) == 0
        assert wake_ms(waiting, rules) == t * 1000
        state, rows = step(plan, rules, m, "table", 0, waiting, None, t * US)
        return state, rows["value"].tolist()

    state, values = arrive_then_release(KeyState(), 10)
    assert state is not None and state.last_us == 10 * US and values == [1.0]
    assert wake_ms(state, rules) == 15_000 + 1
    kept, _ = step(plan, rules, m, "table", 0, state, None, 15 * US)
    assert kept is not None and kept.last_us == 10 * US
    dropped, rows = step(plan, rules, m, "table", 0, state, None, 15 * US + 1)
    assert dropped is None and len(rows) == 0
    # An event exactly ttl after the last one continues the key; one more starts afresh.
    state, values = arrive_then_release(state, 15)
    assert values == [2.0]
    _, values = arrive_then_release(state, 21)
    assert values == [1.0]


def test_late_fail_names_the_key_and_both_times() -> None:
    m = qre("iter(atom(a, cur), 0, +)", ["a"])
    plan = make_plan("test", _events([1]), m, "k", "t", "tag", "v", (), "table", "error")
    rules = Rules(watermark=False, late="fail")
    state, _ = step(plan, rules, m, "table", 0, KeyState(), _events([10]), None)
    assert state is not None
    with pytest.raises(ValueError, match=r"key 0 received an event at t = 3 after processing "
                                         r"one at 10 \(late=\"fail\"\)"):
        step(plan, rules, m, "table", 0, state, _events([3]), None)


@settings(max_examples=100)
@given(QUERIES, arrivals(jitter=6, distinct=True), st.sampled_from([None, 0, 2, 6]),
       st.sampled_from([None, 0, 1, 4]))
def test_batches_without_data_change_nothing(text, batches, delay, ttl) -> None:  # type: ignore[no-untyped-def]
    """Spark runs a batch without data when the watermark moves and no data waits: timers
    fire then instead of with the next data. The outputs must not tell the difference."""
    ttl = None if delay is None else ttl
    m = qre(text, list(ALPHABET))
    rules = Rules(watermark=delay is not None, ttl_us=None if ttl is None else ttl * US)
    empty = batches[0].iloc[:0]
    with_idle = [b for batch in batches for b in (batch, empty)]
    rows, _ = simulate(m, batches, rules, delay)
    rows_idle, _ = simulate(m, with_idle, rules, delay)
    # A timer firing in a batch without data emits a key's released rows before the
    # late row of an event in the next batch; without that batch, the late row comes
    # first (spark_udf.keyed.step): late rows are a side output in the output type.
    assert_equivalent_streams(rows_idle, rows, OUTPUT, equal=[*RESULTS, LATE],
                              names=("with idle batches", "without"))


@settings(max_examples=100)
@given(st.data())
def test_time_ordered_is_pandas_stable_sort_with_na_last(data) -> None:  # type: ignore[no-untyped-def]
    """spark_udf.plan.time_ordered (a lexsort) against pandas' own stable sort, with a
    float or a datetime time (NaN and NaT ties among them); order_of with groups (many
    keys' events at once) against the same sort after the group."""
    n = data.draw(st.integers(0, 12))

    def column(elements):  # type: ignore[no-untyped-def]
        return data.draw(st.lists(elements, min_size=n, max_size=n))

    frame = pd.DataFrame({
        "t": column(st.sampled_from([1.0, 2.0, -0.0, 0.0, float("nan")])),
        "seq": pd.array(column(st.sampled_from([1, 2, None])), dtype="Int64"),
        "when": pd.to_datetime(column(st.sampled_from(["2026-01-01", "2026-01-02", None]))),
        "tag": column(st.sampled_from(["a", "b", None])),
        "v": column(st.sampled_from([0.5, -1.0, float("nan")])),
        "row": range(n),
    })
    time, ties = data.draw(st.sampled_from([("t", ("seq", "when")), ("when", ("seq",))]))
    plan = make_plan("test", frame.rename(columns={"row": "k"}), qre("atom(a, cur)", ["a", "b"]),
                     "k", time, "tag", "v", ties, "table", "error")
    want = frame.sort_values(plan.order, kind="mergesort", na_position="last",
                             ignore_index=True)
    assert time_ordered(frame, plan)["row"].tolist() == want["row"].tolist()
    groups = np.array(column(st.integers(0, 2)), dtype=np.int64)
    by_group = frame.assign(g=groups).sort_values(["g", *plan.order], kind="mergesort",
                                                  na_position="last")
    assert order_of(frame, plan, groups).tolist() == by_group["row"].tolist()


@pytest.mark.parametrize("times", [[float("nan")] * 3, pd.to_datetime([None] * 3)])
def test_order_of_orders_missing_times_by_the_other_columns(times) -> None:
    """Rows whose times are all NaN (or NaT) tie: the tag orders them, in a group too."""
    frame = pd.DataFrame({"k": [0, 0, 0], "t": times, "tag": ["b", "c", "a"], "v": [0.0] * 3})
    plan = make_plan("test", frame, qre("atom(a, cur)", ["a", "b", "c"]), "k", "t", "tag", "v",
                     (), "table", "error")
    assert order_of(frame, plan).tolist() == [2, 0, 1]
    assert order_of(frame, plan, np.array([1, 0, 1])).tolist() == [1, 2, 0]
