"""Times as users have them (issue 18, points 8 and 11): float times rounded to the
microsecond by one rule that depends on the column's type only, time zones kept, window
rows with their start, durations in the run's resolution, and messages that speak of
what the user gave. Window and pattern results on float times are checked against the
brute-force oracles in tests/test_windows.py and tests/test_patterns.py."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from qre import qre
from qre.language.clock import UNIT_NS
from qre.runtime.times import event_times
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
