"""Times as users have them (issue 18, points 8 and 11): float times rounded to the
microsecond by one rule that depends on the column's type only, time zones kept, window
rows with their start, durations in the run's resolution, and messages that speak of
what the user gave; times that are not times refused, naming the row, and idle ticks
bounded (issue 19, points 4, 10 and 12). Window and pattern results on float times are
checked against the brute-force oracles in tests/test_windows.py and tests/test_patterns.py."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from qre import qre
from qre.language import clock
from qre.language.clock import UNIT_NS
from qre.runtime.times import TimeError, event_times
from tests.window_oracle import nearest

SUM = qre("alphabet a, b; aggregate(sum(cur.x), 2s, 1s)")
WITHIN = qre("alphabet a, b; matched(within(seq(a, b), 5s))")


@given(st.lists(st.one_of(st.floats(-1e9, 4e9, allow_nan=False),
                          st.integers(-2**20, 2**20).map(lambda k: k / 128),
                          st.integers(0, 10**6).map(lambda k: k + 0.5e-6)), max_size=20),
       st.sampled_from(sorted(UNIT_NS)))
def test_floats_round_to_the_nearest_microsecond_of_their_product(xs, unit):
    per = max(UNIT_NS[unit] // 1000, 1)  # δ per unit: 1 µs, or 1 ns for ns
    xs = [x for x in xs if abs(x) * per < 2**62]
    counts, scale = event_times(np.array(xs, dtype=np.float64), unit)
    assert scale.kind == "float" and scale.unit == ("ns" if unit == "ns" else "us")
    assert counts.tolist() == [nearest(x, per) for x in xs]


def test_the_rule_is_the_column_type_not_its_values():
    # Whole floats are floats: δ is a microsecond, stamped in seconds as floats.
    floats = SUM.run_timed([0.0, 1.0], ["a", "a"], {"x": [1.0, 2.0]})
    ints = SUM.run_timed([0, 1], ["a", "a"], {"x": [1.0, 2.0]})
    assert floats["time"].tolist() == [0.999999, 1.999999, 2.999999]
    assert ints["time"].tolist() == [0, 1, 2] and ints["time"].dtype == np.int64
    assert floats["value"].tolist() == ints["value"].tolist() == [1.0, 3.0, 2.0]
    # So a key's rows do not depend on what else is in the call (a partition).
    times, tags, x = [0.0, 1.0, 0.25, 1.5], ["a"] * 4, [1.0, 2.0, 4.0, 8.0]
    together = SUM.run_timed(times, tags, {"x": x}, keys=["u", "u", "v", "v"])
    alone = SUM.run_timed(times[:2], tags[:2], {"x": x[:2]})
    pd.testing.assert_frame_equal(together[together["key"] == "u"].drop(columns="key")
                                  .reset_index(drop=True), alone)


def test_float_times_keep_their_fraction_in_cur_time_and_stamps():
    m = qre("alphabet a; last(cur.time)")
    got = m.run_timed([1.5, 2.0000004, 2.25], ["a"] * 3)
    assert got["time"].tolist() == got["value"].tolist() == [1.5, 2.0, 2.25]
    ms = m.run_timed(np.array([1500.25, 7.0]), ["a"] * 2, time_unit="ms")
    assert ms["time"].tolist() == [7.0, 1500.25]
    assert m.run_timed([3, 1], ["a"] * 2, time_unit="ms")["value"].tolist() == [1.0, 3.0]


def test_durations_convert_in_the_runs_resolution():
    # 1500ms is not whole seconds but is whole microseconds: float seconds take it.
    m = qre("alphabet a; aggregate(count(), 1500ms)")
    assert m.run_timed([0.0, 1.6], ["a"] * 2)["time"].tolist() == [1.499999, 2.999999]
    with pytest.raises(ValueError, match=r"clock period \(1500ms\) is not a whole number of "
                                         r"the time unit 's': give the times as integers"):
        m.run_timed([0, 2], ["a"] * 2)
    fine = qre("alphabet a; aggregate(count(), 1500ns)")
    with pytest.raises(ValueError, match=r"\(1500ns\) is finer than a microsecond, the "
                                         r"resolution of float times.*time_unit='ns'"):
        fine.run_timed([0.5], ["a"])
    with pytest.raises(ValueError, match="resolution of datetime times"):
        fine.run_timed(pd.to_datetime(["2026-01-01"]), ["a"])
    assert fine.run_timed([0, 1600], ["a"] * 2, time_unit="ns")["time"].tolist() == [1499, 2999]
    floats_of_ns = fine.run_timed([0.0, 1600.0], ["a"] * 2, time_unit="ns")
    assert floats_of_ns["time"].tolist() == [1499.0, 2999.0]


def test_watermark_is_read_like_the_times_and_floored():
    m = qre("alphabet a; aggregate(count(), 1s)")
    assert m.run_timed([0.5], ["a"], watermark=0.9999996).empty  # 999999.6 µs: before 1 s
    assert m.run_timed([0.5], ["a"], watermark=1)["time"].tolist() == [0.999999]
    assert m.run_timed([0], ["a"], watermark=1.5)["time"].tolist() == [0]
    with pytest.raises(ValueError, match="watermark is a number but the times are datetimes"):
        m.run_timed(pd.to_datetime(["2026-01-01"]), ["a"], watermark=5)
    with pytest.raises(ValueError, match="watermark is '5', not a number like the times"):
        m.run_timed([0], ["a"], watermark="5")


@pytest.mark.parametrize("tz", ["Europe/Paris", "America/New_York", None])
def test_datetimes_come_back_in_their_time_zone(tz):
    # Around the night Paris moves from UTC+1 to UTC+2.
    local = pd.Series(pd.to_datetime(["2026-03-29 00:59:59.5", "2026-03-29 03:00:00.25",
                                      "2026-03-29 03:00:01"], format="ISO8601")).dt.tz_localize(tz)
    events = pd.DataFrame({"t": local, "tag": ["a", "b", "a"]})
    got = WITHIN.run_timed(events["t"], events["tag"])
    want_type = np.dtype("datetime64[us]") if tz is None else pd.DatetimeTZDtype("us", tz)
    assert got["time"].dtype == want_type
    merged = events.reset_index(names="row").merge(got, on="row")
    assert len(merged) == 3 and (merged["t"] == merged["time"]).all()
    windows = SUM.run_timed(events["t"], events["tag"], {"x": [1.0, 2.0, 4.0]})
    assert windows["time"].dtype == windows["start"].dtype == want_type
    first = windows.iloc[0]
    assert first["start"] == local[0].floor("s") - pd.Timedelta("1s")
    assert first["time"] == local[0].ceil("s") - pd.Timedelta("1us")


def test_a_watermark_with_a_time_zone_is_an_instant():
    t = pd.Series(pd.to_datetime(["2026-01-01 10:00:00.5"])).dt.tz_localize("Europe/Paris")
    m = qre("alphabet a; aggregate(count(), 1s)")
    assert m.run_timed(t, ["a"], watermark=pd.Timestamp("2026-01-01 09:00:00.9", tz="UTC")).empty
    closed = m.run_timed(t, ["a"], watermark=pd.Timestamp("2026-01-01 10:00:01",
                                                          tz="Europe/Paris"))
    assert closed["time"].tolist() == [pd.Timestamp("2026-01-01 10:00:00.999999",
                                                    tz="Europe/Paris")]


def test_window_rows_carry_their_start():
    m = qre("alphabet a; aggregate(count(), 10s, 5s)")
    got = m.run_timed([3, 12], ["a", "a"])
    assert list(got.columns) == ["time", "start", "tag", "row", "status", "value"]
    assert list(zip(got["start"], got["time"], strict=True)) == [(-5, 4), (0, 9), (5, 14),
                                                                  (10, 19)]
    kept = m.run_timed([3, 12], ["a", "a"], undefined="keep")
    assert kept["start"].dtype == "Int64"
    assert kept["start"].isna().tolist() == (kept["row"] >= 0).tolist()
    floats = m.run_timed([3.0], ["a"], undefined="keep")
    assert math.isnan(floats["start"][0]) and floats["start"][1] == -5.0
    # A declared period is a clock, not a window: no start.
    assert "start" not in qre("alphabet a; period 5s; count()").run_timed([3], ["a"]).columns


def test_a_query_that_reads_no_value_takes_a_plain_column():
    # The column orders equal times and dedup reads it; the query reads only the time.
    plain = WITHIN.run_timed([1, 2], ["a", "b"], [1.0, 2.0])
    pd.testing.assert_frame_equal(plain, WITHIN.run_timed([1, 2], ["a", "b"]))
    with pytest.raises(ValueError, match=r"row 1 of values: 'x' is not a number"):
        WITHIN.run_timed([1, 2], ["a", "b"], [1.0, "x"])
    reads = qre("alphabet a, b, big; tag big = a where cur.x > 1; "
                "matched(within(seq(big, b), 5s))")
    with pytest.raises(ValueError) as error:
        reads.run_timed([1, 2], ["a", "b"], [1.0, 2.0])
    assert str(error.value) == ("the query reads cur.x: pass values as a dict or DataFrame "
                                "with columns x")
    scalar = qre("alphabet a, b, big; tag big = a where cur > 1; "
                 "matched(within(seq(big, b), 5s))")
    assert scalar.run_timed([1, 2], ["a", "b"], [2.0, 0.0])["value"].tolist() == [0.0, 1.0]


# ----------------------------------------------- times that are not times (issue 19)

PERIOD = qre("alphabet a; period 1s; iter(or(atom(a, cur), atom(tick, 0)), 0, +)")
"""A hand-written clock without a horizon: every idle tick is made."""
EDGES = [0, 1, -1, 2**62 - 1, -(2**62 - 1), 2**62, -(2**62), 2**63 - 1, -(2**63)]


def _first_out_of_range(counts: list[int] | list[float]) -> int | None:
    return next((k for k, c in enumerate(counts) if not -(2**62) < c < 2**62), None)


@given(st.lists(st.one_of(st.integers(-(2**63), 2**63 - 1), st.sampled_from(EDGES)),
                min_size=1, max_size=8),
       st.lists(st.one_of(st.floats(allow_nan=False), st.sampled_from([1e20, -1e20, 4.6e12])),
                min_size=1, max_size=8),
       st.lists(st.one_of(st.integers(0, 2**64 - 1), st.sampled_from([2**62, 2**63 + 5])),
                min_size=1, max_size=8))
def test_times_beyond_2_62_delta_are_refused_naming_the_row(ints, floats, unsigned):
    """Point 4: every time whose count of δ is not within ±2**62 (±inf, 1e20 s, uint64
    beyond int64, int64 near its limits) is an error naming its row; the others are
    read exactly (before: int64 and uint64 wrapped into stamps near −9.2e18)."""
    cases = [(np.array(ints, dtype=np.int64), ints, ints),  # exact Python ints
             (np.array(floats), [x * 1e6 for x in floats], None),  # the float product
             (np.array(unsigned, dtype=np.uint64), unsigned, unsigned)]
    for column, counts, exact in cases:
        bad = _first_out_of_range(counts)
        if bad is None:
            got, _ = event_times(column, "s")
            assert exact is None or got.tolist() == exact
            continue
        with pytest.raises(TimeError) as error:
            event_times(column, "s")
        assert error.value.row == bad and f"row {bad} of times" in str(error.value)


def test_out_of_range_times_never_reach_the_stamps():
    for times in ([1, 2**63 - 1], np.array([1, 2**63 + 5], dtype=np.uint64), [1.0, 1e20],
                  [1.0, math.inf]):
        with pytest.raises(ValueError, match=r"row 1 of times: .* (out of range|not a time)"):
            SUM.run_timed(times, ["a", "a"], {"x": [1.0, 2.0]})
    # A window's ticks past the largest int64 (before: a stamp of -5486744073709551617).
    huge = qre("alphabet a; aggregate(count(), 100000d, 50000d)")
    with pytest.raises(TimeError, match=r"row 1 of times: 4500000000000000000 is too late for "
                                        r"the clock: its ticks \(every 50000d\) after it would "
                                        r"pass the largest time int64 holds") as error:
        huge.run_timed([2, 45 * 10**17, 1], ["a"] * 3, time_unit="ns")
    assert error.value.row == 1
    with pytest.raises(ValueError, match=r"watermark 1e\+30 is out of range"):
        SUM.run_timed([1], ["a"], {"x": [1.0]}, watermark=1e30)
    with pytest.raises(ValueError, match=r"watermark 10{30} is out of range"):
        SUM.run_timed([1], ["a"], {"x": [1.0]}, watermark=10**30)


@pytest.mark.parametrize("times", [
    np.array([True, False]), [True, False], pd.array([True, False], dtype="boolean"),
    pd.Series([True, False], dtype=object)])
def test_boolean_times_are_refused_and_numbers_as_objects_are_read(times):
    """Point 10: booleans are not times (a bare StopIteration before, for some columns);
    a column of Python numbers is typed by its values."""
    m = qre("alphabet a; count()")
    for run in (lambda t: SUM.run_timed(t, ["a", "a"], {"x": [1.0, 2.0]}),
                lambda t: m.run(["a", "a"], times=t)):
        with pytest.raises(ValueError, match=r"booleans are not times \(row 0 holds True\)"):
            run(times)
    objects = pd.Series([2, 1], dtype=object)
    assert m.run(["a", "a"], times=objects).value.tolist() == [2.0, 1.0]
    assert SUM.run_timed(objects, ["a", "a"], {"x": [1.0, 2.0]})["value"].tolist() == [
        2.0, 3.0, 1.0]  # windows [0, 2), [1, 3), [2, 4)
    with pytest.raises(ValueError, match=r"row 1 of times: 'x' is neither a number"):
        m.run(["a", "a"], times=pd.Series([1, "x"], dtype=object))


@pytest.mark.parametrize("times, needle", [
    ([1, 2**64], r"row 1 of times: 18446744073709551616 is out of range \(beyond int64\)"),
    ([-1, 2**63], r"row 1 of times: 9223372036854775808 is out of range \(beyond int64\)"),
    ([1, pd.Timestamp("2020-01-01")], r"row 1 of times: .* is a datetime among numbers"),
    ([1, "x"], r"row 1 of times: 'x' is neither a number nor a datetime")])
def test_python_objects_that_are_not_times_are_named(times, needle):
    """Point 4: Python integers beyond 64 bits were reported as row 0's "1 is neither a
    number nor a datetime"; a datetime among numbers is said to be one."""
    m = qre("alphabet a; count()")
    for run in (lambda: SUM.run_timed(times, ["a", "a"], {"x": [1.0, 2.0]}),
                lambda: m.run(["a", "a"], times=times)):
        with pytest.raises(TimeError, match=needle):
            run()


def test_an_idle_gap_beyond_the_tick_limit_is_an_error_naming_it(monkeypatch):
    """Point 12: a clock without a horizon asked for 745 GiB of ticks by a 10**11 s gap
    (MemoryError); now an error naming the key, the gap and the limit, at once."""
    with pytest.raises(ValueError, match=r"tick 100,000,000,000 times in the idle gap of "
                                         r"key 'u' from 0 to 100000000000: more than "
                                         r"10,000,000"):
        PERIOD.run_timed([0, 10**11], ["a", "a"], [1.0, 2.0], keys=["u", "u"])
    with pytest.raises(ValueError, match="tick 99,999,999,995 times in the idle gap from 5"):
        PERIOD.run_timed([0, 5], ["a", "a"], [1.0, 2.0], watermark=10**11)
    monkeypatch.setattr(clock, "MAX_IDLE_TICKS", 5)
    assert (PERIOD.run_timed([0, 5], ["a", "a"], [1.0, 2.0])["tag"] == "tick").sum() == 5
    with pytest.raises(ValueError, match="tick 6 times in the idle gap from 0 to 6"):
        PERIOD.run_timed([0, 6], ["a", "a"], [1.0, 2.0])
    with pytest.raises(ValueError, match="tick 6 times in the idle gap from 2020-01-01"):
        PERIOD.run_timed(pd.to_datetime(["2020-01-01 00:00:00", "2020-01-01 00:00:06"]),
                         ["a", "a"], [1.0, 2.0])
    # A window aggregate's horizon bounds its idle ticks: any gap is fine.
    assert len(SUM.run_timed([0, 10**15], ["a", "a"], {"x": [1.0, 2.0]})) == 4


def test_a_watermark_of_the_other_kind_is_refused():
    """Point 12: a datetime watermark with numeric times, or the reverse (checked since
    issue 18; kept here beside the limits), and a duration for either."""
    with pytest.raises(ValueError, match="watermark is a number but the times are datetimes"):
        PERIOD.run_timed(pd.to_datetime(["2026-01-01"]), ["a"], [1.0], watermark=10**11)
    with pytest.raises(ValueError, match="not a number like the times"):
        PERIOD.run_timed([0], ["a"], [1.0], watermark=pd.Timestamp("2026-01-01"))
    # A duration is neither (numpy's timedelta64 is an integer: it raised a TypeError).
    for duration in (np.timedelta64(7, "s"), pd.Timedelta("7s")):
        with pytest.raises(ValueError, match=r"watermark is a duration .*, not a number like"):
            PERIOD.run_timed([0, 5], ["a", "a"], [1.0, 2.0], watermark=duration)
        with pytest.raises(ValueError, match=r"watermark is a duration .*, not a datetime like"):
            PERIOD.run_timed(pd.to_datetime(["2026-01-01"]), ["a"], [1.0], watermark=duration)


def test_datetimes_in_mixed_zones_are_an_error_naming_the_row():
    """Issue 19, point 13: a naive datetime among zoned ones (or two zones) was "row 0 of
    times: datetime(...) is neither a number nor a datetime"; the message now says what
    differs, at the first row that differs from row 0."""
    import datetime as dt

    utc, plus_one = dt.UTC, dt.timezone(dt.timedelta(hours=1))
    naive, zoned = dt.datetime(2026, 1, 1), dt.datetime(2026, 1, 2, tzinfo=utc)
    m = qre("iter(atom(a, cur), 0, +)")
    with pytest.raises(ValueError, match=r"row 1 of times: .* has a time zone but row 0 "
                                         r"has none"):
        m.run(["a", "a"], [1.0, 2.0], times=[naive, zoned])
    with pytest.raises(ValueError, match=r"row 1 of times: .* has no time zone but row 0 "
                                         r"has one"):
        PERIOD.run_timed([zoned, naive], ["a", "a"], [1.0, 2.0])
    with pytest.raises(ValueError, match=r"row 1 of times: .* in another time zone than "
                                         r"row 0 \(UTC\)"):
        m.run(["a", "a"], [1.0, 2.0], times=[zoned, zoned.astimezone(plus_one)])
