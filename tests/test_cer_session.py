"""A match query's run over input in parts (issue 26, point 1: matches on a stream):
:meth:`Matcher.session` against one ``run_timed`` over the whole input."""

from __future__ import annotations

import math
import random

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.test_cer_queries import TAGS, _compiled, _query_text

COLUMNS = ["key", "start", "end", "time", "rows", "vars", "var", "row", "timeout", "s", "n"]


def _per_key(frame: pd.DataFrame) -> dict[str, list[tuple]]:
    """Each key's rows in order, without the match numbers (they count across keys)."""
    out: dict[str, list[tuple]] = {}
    for row in frame.to_dict("records"):
        out.setdefault(row["key"], []).append(
            tuple(tuple(row[c]) if isinstance(row[c], list) else
                  "NaN" if isinstance(row[c], float) and math.isnan(row[c]) else row[c]
                  for c in COLUMNS if c in row))
    return out


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32))
def test_parts_give_the_rows_of_one_run(seed: int) -> None:
    """Random query text, random keyed events in parts cut where time moves on, with
    random watermarks: per key, the rows (and the row numbers) of one ``run_timed``."""
    rng = random.Random(seed)
    text = _query_text(rng)
    if rng.random() < 0.5:
        var = rng.choice([t for t in TAGS if t in text.split(";")[1]] or ["a"])
        text = text[:-1] + f", measures [sum({var}.x) as s, count({var}) as n])"
    m = _compiled(text)
    if m is None:
        return
    n = rng.randint(0, 16)
    times = sorted(rng.randint(0, 10) for _ in range(n))
    keys = [rng.choice("xy") for _ in range(n)]
    tags = [rng.choice(TAGS) for _ in range(n)]
    x = [rng.choice([0.5, 1.0, -2.0, 1e16]) for _ in range(n)]
    per = "event" if rng.random() < 0.25 else "match"
    whole = m.run_timed(times, tags, {"x": x}, keys=keys, per=per)
    cuts = sorted({i for i in range(1, n) if times[i] > times[i - 1] and rng.random() < 0.4})
    session = m.session(per=per)
    parts = []
    for lo, hi in zip([0, *cuts], [*cuts, n], strict=True):
        until = None if hi == n or rng.random() < 0.3 else rng.randint(times[hi - 1],
                                                                        times[hi])
        part = session.feed(times[lo:hi], tags[lo:hi], {"x": x[lo:hi]}, keys=keys[lo:hi],
                            until=until)
        parts.append(part)
    parts.append(session.close())
    got = pd.concat(parts, ignore_index=True)
    assert got["match"].unique().tolist() == list(range(got["match"].nunique()))
    assert _per_key(got) == _per_key(whole), text


def test_state_stays_a_window_and_errors_name_the_row() -> None:
    """A long keyed stream in parts under a within: each key carries a window's worth of
    events; parts that go back in time, or mix keyed and unkeyed, are refused."""
    m = _compiled("alphabet a, b, c; match(seq(plus(a), b), within 5s, strategy next)")
    rng = random.Random(7)
    s = m.session()
    for part in range(40):
        times = [part * 100 + j for j in range(100)]
        s.feed(times, [rng.choice(TAGS) for _ in times], keys=[rng.choice("xy") for _ in times],
               until=times[-1])
    assert max(key.kernel.events for key in s._keys.values()) <= 5
    with pytest.raises(ValueError, match="row 1: the key 'x' has an event at time 3998"):
        s.feed([4000, 3998], ["a", "a"], keys=["y", "x"])
    with pytest.raises(ValueError, match="keys in every part or in none"):
        s.feed([5000], ["a"])
    s.close()
    with pytest.raises(ValueError, match="closed"):
        s.feed([6000], ["a"], keys=["x"])


def test_until_reads_as_the_events_times() -> None:
    """A watermark before any event fixes nothing it should not; a whole-number watermark
    for float times, and a float one for whole times, read as those times."""
    m = _compiled("alphabet a, b, c; match(seq(a, not(b)), within 5s)")
    s = m.session()
    assert s.feed([], [], until=3).empty
    s.feed([4.5], ["a"], until=6)
    assert s.feed([10.25], ["c"], until=10)["rows"].tolist() == [[0]]
    s = m.session()
    s.feed([4], ["a"])
    assert s.feed([], [], until=9.5)["rows"].tolist() == [[0]]
    with pytest.raises(ValueError, match="times are float here but were int"):
        s.feed([10.5], ["a"])
