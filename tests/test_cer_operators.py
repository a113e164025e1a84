"""Seed 004's operators (issue 26): S&P, T-CER and R-CER against their definitions —
Theorems 1, 2 and 3 — on random keyed streams."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qre import qre
from qre.runtime.cer import rule_based_cer, sort_and_preprocess, time_based_cer


def _events(rng: random.Random, n: int) -> pd.DataFrame:
    return pd.DataFrame({"k": [rng.choice("xy") for _ in range(n)],
                         "time": [rng.randint(0, 30) for _ in range(n)],
                         "tag": [rng.choice("ab") for _ in range(n)],
                         "v": [rng.randint(0, 3) for _ in range(n)]}
                        ).astype({"time": "int64", "v": "int64"})  # integers even when empty


@given(st.integers(0, 2**32))
def test_sort_and_preprocess_sees_each_group_once(seed: int) -> None:
    """Theorem 1: f_p is called once per (key, time) group with exactly its tuples (in
    input order), and its outputs carry the group's key and time, in time order."""
    rng = random.Random(seed)
    frame = _events(rng, rng.randint(0, 25))
    calls: list[tuple[str, int, list[int]]] = []

    def f_p(group: pd.DataFrame) -> list[dict]:
        calls.append((group["k"].iloc[0], int(group["time"].iloc[0]), group["v"].tolist()))
        return [{"n": len(group), "total": int(group["v"].sum())}]

    out = sort_and_preprocess(frame, f_p, key="k")
    groups = {(k, t): frame[(frame.k == k) & (frame.time == t)]["v"].tolist()
              for k, t in zip(frame.k, frame.time, strict=True)}
    assert sorted((k, t) for k, t, _ in calls) == sorted(groups)
    assert all(groups[(k, t)] == v for k, t, v in calls)
    assert out.get("n", pd.Series(dtype=int)).sum() == len(frame)
    for _, rows in out.groupby("k", sort=False):
        assert rows["time"].is_monotonic_increasing
    identical = sort_and_preprocess(frame, lambda g: {"copies": len(g)})  # f_K*: whole tuple
    copies = Counter(map(tuple, frame.to_numpy().tolist())).values()
    assert sorted(identical.get("copies", [])) == sorted(copies)


def _pairs(state, row):
    """f_C: every a before a b (an instance per pair)."""
    seen = state or []
    if row["tag"] == "a":
        return [*seen, (row["time"], row["v"])], None
    return seen, [{"first": t, "last": row["time"], "va": v, "vb": row["v"]} for t, v in seen]


@settings(max_examples=40)
@given(st.integers(0, 2**32))
def test_time_based_cer_reports_each_instance_once(seed: int) -> None:
    """Theorem 2: with WA ≤ WS − D_C + δ and WS ≥ D_C, each instance shorter than D_C
    that f_C finds over the whole stream is reported exactly once, by the window
    ⌊first / WA⌋ · WA."""
    rng = random.Random(seed)
    frame = _events(rng, rng.randint(0, 20))
    d_c = rng.randint(1, 8)
    size = rng.randint(d_c, 3 * d_c)
    slide = rng.randint(1, size - d_c + 1)
    got = time_based_cer(frame, _pairs, d_c=d_c, size=size, slide=slide, key="k")
    want: list[tuple] = []
    for k, rows in frame.groupby("k", sort=False):
        state = None
        for row in rows.sort_values("time", kind="stable").to_dict("records"):
            state, found = _pairs(state, row)
            want += [(k, o["first"] // slide * slide, o["first"], o["last"], o["va"], o["vb"])
                     for o in found or () if o["last"] - o["first"] < d_c]
    got_rows = [tuple(r) for r in got[["k", "start", "first", "last", "va", "vb"]]
                .itertuples(index=False)] if len(got) else []
    assert Counter(got_rows) == Counter(want)
    assert (got["time"] == got["start"] + size - 1).all() if len(got) else True


@settings(max_examples=30)
@given(st.integers(0, 2**32))
def test_time_based_cer_with_a_matcher(seed: int) -> None:
    """A match query as f_C: its matches shorter than D_C, once each."""
    rng = random.Random(seed)
    frame = _events(rng, rng.randint(0, 16))
    text = rng.choice(["alphabet a, b; match(seq(a, b))",
                       "alphabet a, b; match(seq[next](a, plus(b)))",
                       "alphabet a, b; match(seq[strict](a, b, a))",
                       "alphabet a, b; match(seq(a, times[next](b, 1, 2)), strategy next)"])
    m = qre(text)
    d_c = rng.randint(1, 10)
    got = time_based_cer(frame, m, d_c=d_c, key="k")
    # T-CER feeds equal times in arrival order: the whole run breaks ties the same way
    whole = m.run_timed(frame["time"], frame["tag"], keys=frame["k"],
                        tiebreak=np.arange(len(frame)))
    want = Counter((k, tuple(r)) for k, r, s, e in zip(whole["key"], whole["rows"],
                                                       whole["start"], whole["end"],
                                                       strict=True) if e - s < d_c)
    assert Counter((k, tuple(r)) for k, r in zip(got["k"], got.get("rows", []), strict=True)
                   ) == want


def test_time_based_cer_checks_its_windows() -> None:
    frame = pd.DataFrame({"time": [0], "tag": ["a"], "v": [1]})
    with pytest.raises(ValueError, match="WA ≤ WS − D_C"):
        time_based_cer(frame, _pairs, d_c=5, size=6, slide=3)
    with pytest.raises(ValueError, match="WS ≥ D_C"):
        time_based_cer(frame, _pairs, d_c=5, size=4, slide=1)
    with pytest.raises(ValueError, match="lacks 'first'"):
        time_based_cer(frame, lambda s, r: (s, {"x": 1}), d_c=5)
    skipping = qre("alphabet a; match(a, skip past_last)")
    with pytest.raises(ValueError, match="no skip policy"):
        time_based_cer(frame, skipping, d_c=5)
    seconds = pd.DataFrame({"time": pd.to_datetime(["2026-01-01T00:00:00",
                                                    "2026-01-01T00:00:20"]),
                            "tag": ["a", "b"], "v": [1, 2]})
    found = time_based_cer(seconds, _pairs, d_c="30s")
    assert found[["start", "first", "last"]].values.tolist() == [
        list(pd.to_datetime(["2026-01-01T00:00:00", "2026-01-01T00:00:00",
                             "2026-01-01T00:00:20"]))]  # windows of 60 s sliding by 30 s


@given(st.integers(0, 2**32))
def test_rule_based_cer_folds_in_time_then_tie_order(seed: int) -> None:
    """Theorem 3: f_M sees each key's tuples once, in time order, equal times by f_T,
    and each output carries its input tuple's time."""
    rng = random.Random(seed)
    frame = _events(rng, rng.randint(0, 25))

    def f_m(total, row):
        total = (total or 0) + row["v"]
        return total, {"total": total} if row["tag"] == "b" else None

    out = rule_based_cer(frame, f_m, key="k", f_t=lambda row: -row["v"])
    want = []
    for k, rows in frame.groupby("k", sort=False):
        total = 0
        ordered = sorted(rows.to_dict("records"), key=lambda r: (r["time"], -r["v"]))
        for row in ordered:
            total += row["v"]
            if row["tag"] == "b":
                want.append((k, row["time"], total))
    assert list(zip(out.get("k", []), out.get("time", []), out.get("total", []),
                    strict=True)) == want
    assert (frame["time"].to_numpy()[out["row"].to_numpy(dtype=np.int64)]
            == out["time"].to_numpy()).all()
