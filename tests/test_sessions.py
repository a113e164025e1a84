"""Session windows, ``aggregate(f, session(gap))`` (issue 21 §3): every engine, the numpy
and Numba step builders, float and datetime times and watermarks against the
brute-force sessions of tests/window_oracle.py."""

from __future__ import annotations

from unittest.mock import patch

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from codegen.grouping import interleave_ticks, tick_counts
from qre import qre
from qre.language import ast
from qre.language.clock import clock_steps
from qre.language.errors import QreSyntaxError, QreTypeError
from qre.language.parser import parse
from qre.language.printer import to_text
from qre.runtime import keys as keys_module
from tests import window_oracle as oracle
from tests.test_windows import ALPHABET, FUNCTION_TEXT, key_events, timed_events


def expected_sessions(frame: pd.DataFrame, gap: int, name: str, tags: tuple[str, ...],
                      until: int | None = None) -> list[tuple[object, int, float, int]]:
    """(key, stamp, value, start) of every closed session with an event of ``tags``."""
    return [(key, stamp, value, start) for key, events in key_events(frame)
            for stamp, value, start in oracle.sessions(events, gap, oracle.FUNCTIONS[name],
                                                       tags, ALPHABET, until)]


def assert_sessions(got: pd.DataFrame, want: list[tuple[object, int, float, int]]) -> None:
    assert (got["status"] == 1).all()
    assert (got["row"] == -1).all() and (got["tag"] == "tick").all()
    assert list(zip(got["key"], got["time"], got["start"], strict=True)) == [
        (k, t, s) for k, t, _, s in want]
    np.testing.assert_array_equal(got["value"].to_numpy(dtype=float),
                                  np.array([v for _, _, v, _ in want], dtype=float))


@given(timed_events(), st.sampled_from(sorted(oracle.FUNCTIONS)), st.integers(1, 8),
       st.sampled_from([None, ("a",)]), st.sampled_from([None, 5, 20]),
       st.sampled_from(["table", "codegen", "reference"]), st.booleans())
def test_sessions_equal_brute_force(frame, name, gap, tags, until, engine, numba_steps):
    tag_arg = "" if tags is None else ", [a]"
    m = qre(f"alphabet a, b; aggregate({FUNCTION_TEXT[name]}, session({gap}s){tag_arg})")
    with patch.object(keys_module, "NUMBA_ROWS", 0 if numba_steps else 10**9):
        got = m.run_timed(frame["t"], frame["tag"], {"x": frame["x"]}, keys=frame["k"],
                          engine=engine, watermark=until)
    assert_sessions(got, expected_sessions(frame, gap, name, tags or ALPHABET, until))


@given(st.lists(st.integers(-30, 30), max_size=12).map(sorted), st.integers(1, 7),
       st.sampled_from([None, -5, 0, 17, 40]))
def test_session_clock_steps_equal_enumeration(times, gap, until):
    steps = clock_steps(np.zeros(len(times), dtype=np.int64), np.array(times, dtype=np.int64),
                        gap, 1, until, session=True)
    got = [("e" if e >= 0 else "t", int(t)) for e, t in zip(steps.event, steps.time,
                                                            strict=True)]
    assert got == oracle.session_ticks(times, gap, until)


@given(st.lists(st.tuples(st.integers(0, 2), st.integers(-30, 30)), max_size=20),
       st.integers(1, 7), st.sampled_from([None, -5, 0, 40]))
def test_numba_session_ticks_are_the_clock_steps(events, gap, until):
    events.sort()
    key = np.array([k for k, _ in events], dtype=np.int64)
    time = np.array([t for _, t in events], dtype=np.int64)
    order = np.arange(len(events))
    want = clock_steps(key, time, gap, 1, until, session=True)
    counts = tick_counts(key, time, gap, 1, until, session=True)
    rows, times, _, offsets = interleave_ticks(order, key, time, order, counts, 9, gap, 3)
    assert rows.tolist() == want.event.tolist()
    assert times.tolist() == want.time.tolist()
    assert offsets.tolist() == np.searchsorted(want.key, np.arange(4)).tolist()


def test_a_session_closes_a_gap_after_its_last_event():
    m = qre("alphabet a; aggregate(count(), session(10s))")
    # 0, 9 and 18 are each less than 10 s apart: one session; 28 is 10 s after 18: the next.
    got = m.run_timed([0, 9, 18, 28], ["a"] * 4)
    assert got["time"].tolist() == [27, 37] and got["start"].tolist() == [0, 28]
    assert got["value"].tolist() == [3, 1]


def test_every_event_extends_a_session_but_only_the_tags_given_are_aggregated():
    m = qre("alphabet click, view; aggregate(sum(cur), session(10s), [click])")
    got = m.run_timed([0, 8, 15, 40, 45], ["click", "view", "click", "view", "view"],
                      [1.0, 5.0, 2.0, 7.0, 7.0])
    # The view at 8 keeps the session open until the click at 15; the last session holds
    # no click: no row.
    assert got[["time", "start", "value"]].values.tolist() == [[24, 0, 3.0]]


def test_datetime_sessions_and_a_watermark():
    m = qre("alphabet a; aggregate(avg(cur), session(30min))")
    times = pd.to_datetime(["2026-11-26 09:00", "2026-11-26 09:20", "2026-11-26 10:00",
                            "2026-11-26 10:10"])
    got = m.run_timed(times, ["a"] * 4, [1.0, 3.0, 10.0, 20.0], keys=["u", "u", "u", "v"],
                      watermark=pd.Timestamp("2026-11-26 10:35"))
    # v's session closes at 10:40, after the watermark: not yet.
    assert got["key"].tolist() == ["u", "u"]
    assert got["time"].astype(str).tolist() == ["2026-11-26 09:49:59.999999",
                                                "2026-11-26 10:29:59.999999"]
    assert got["start"].astype(str).tolist() == ["2026-11-26 09:00:00", "2026-11-26 10:00:00"]
    assert got["value"].tolist() == [2.0, 10.0]


def test_kept_event_rows_have_no_start():
    m = qre("alphabet a; aggregate(count(), session(5s))")
    got = m.run_timed([0, 2], ["a", "a"], undefined="keep")
    assert got["start"].isna().tolist() == [True, True, False]
    assert got["start"].iloc[-1] == 0 and got["time"].iloc[-1] == 6


def test_a_session_of_matches_counts_the_matches_inside_it():
    m = qre("alphabet a, b; aggregate(matches(seq(a, b)), session(10s))")
    got = m.run_timed([0, 1, 2, 30, 31], ["a", "b", "b", "b", "a"])
    assert got["value"].tolist() == [2, 0] and got["start"].tolist() == [0, 30]


@pytest.mark.parametrize("text", ["aggregate(count(), session(30min))",
                                  "aggregate(sum(cur.x), session(1500ms), [a, b])",
                                  "aggregate(matches(seq(a, b)), session(1h))"])
def test_session_windows_print_and_parse_back(text):
    program = parse(f"alphabet a, b; {text}")
    assert isinstance(program.query, ast.Aggregate) and program.query.session
    assert to_text(program.query) == text
    assert parse(f"alphabet a, b; {to_text(program.query)}") == program


def test_session_is_still_a_name_elsewhere():
    m = qre("alphabet session; aggregate(count(), session(1s), [session])")
    assert m.run_timed([0], ["session"])["value"].tolist() == [1]


@pytest.mark.parametrize(("text", "error", "message"), [
    ("alphabet a; aggregate(count(), session(0s))", QreSyntaxError, "positive whole number"),
    ("alphabet a; aggregate(count(), session(10s, 5s))", QreSyntaxError, r"expected '\)'"),
    ("alphabet a; period 10s; aggregate(count(), session(10s))", QreTypeError,
     "leave out the period declaration"),
    ("alphabet a; aggregate(count(), session(10s)) > const(1)", QreTypeError,
     "cannot be part of another one"),
])
def test_misuse_is_refused_with_a_location(text, error, message):
    with pytest.raises(error, match=message) as info:
        qre(text)
    assert "^" in str(info.value)


def test_run_refuses_a_session_window():
    m = qre("alphabet a; aggregate(count(), session(1s))")
    with pytest.raises(ValueError, match=r"timed \(a window aggregate\).*run_timed"):
        m.run(["a"], [1.0])
