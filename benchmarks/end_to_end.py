"""qre's keyed runs end to end against what a user would write instead (issue 20, goal 1).

What is compared. One frame of N events (default 10,000,000) over K keys (default
100,000), read from Parquet the way each tool's user reads it (pandas'
``read_parquet`` for qre, the hand-written loop and pandas; ``polars.read_parquet``
for polars; a DuckDB table loaded from the file for DuckDB): a text key
(``user000042``), a text tag (``ok`` 10%, ``fail`` 5%, ``info`` 85%), a float
reading ``v`` and an integer time ``t`` in seconds (row i at ⌊i · 3600 / N⌋ plus 0 to
9 s: an hour of arrivals, each key's slightly out of order, some at equal times), keys
interleaved at random. Five per-key queries, the first four one output per row, each by:

* **qre**: ``Monitor.run_keys(frame.key, frame.tag, frame.v, engine="codegen")`` — text
  keys and tags in, one output per row out (status and value arrays);
* **hand-written Numba**: ``pd.factorize`` of the keys, the tags compared to their
  texts, then one ``@njit`` loop in input order with each key's state in arrays — the
  loop a Numba user writes for that query (the z-score with qre's arithmetic: Welford's
  update on readings shifted by the first one, so its outputs are bit for bit qre's);
* **pandas**: the fastest vectorised ``groupby`` form we found (cumulative sums and
  shifts, ``ffill``);
* **polars**: window expressions ``.over("key")`` on its own frame;
* **DuckDB**: window SQL (``OVER (PARTITION BY key ORDER BY row)``), the result in input
  row order, fetched as numpy.

Queries: running sum of ``v``; the average of the last 5 readings (undefined before
5); the z-score alarm of ``qre/examples/last_five.qre`` (is the average of the last 5
more than two population standard deviations above the mean so far?); and "did a
login fail since the last success?" (``qre/examples/failed_since_ok.qre``: 1 if the
last ``ok``/``fail`` event is a ``fail``). qre's queries are over the alphabet
``ok, fail, info`` (every event is a reading).

The fifth is timed: each key's average reading over a sliding window of 5 minutes every
minute, ``aggregate(avg(cur), 5min, 1min)``. Its rows are qre's window semantics
(API.md, "Window aggregates"): the windows [60·l, 60·l + 300) s, epoch-aligned, closed
on the left, of each key's events in event-time order; one row (key, window start,
average = sum / count) for every window that holds an event — those that start before a
key's first event and end after its last included, empty ones left out (6.4M rows at
the default size). By:

* **qre**: ``Monitor.run_timed(frame.t, frame.tag, frame.v, keys=frame.key,
  engine="codegen")``, the user's DataFrame of emitted rows (key, time, start, tag,
  row, status, value);
* **hand-written Numba**: ``pd.factorize`` of the keys, a stable ``argsort`` of the
  times, then one ``@njit`` loop in time order keeping each key's 5 open windows in a
  ring (a reading is added to each); a key's windows are emitted as its time passes
  their end, the rest at the end of the input; the keys' texts taken back;
* **pandas**: panes — ``groupby(["key", minute])`` sums and counts, each pane spread
  over the 5 windows that hold it (``concat``), summed per (key, start);
* **polars**: ``group_by_dynamic("t", every="60i", period="300i", offset="-240i",
  group_by="key", closed="left")`` after a sort by key and ``t`` (it wants each key's
  times sorted; sorted by ``t`` alone it took 3.5 times as long), ``mean``;
* **DuckDB**: the same panes in SQL (``GROUP BY key, t // 60``, joined to ``range(5)``),
  fetched as numpy.

Checks before timing: every tool's output equals qre's on every row — NaN where qre's
status is not "defined", values within 1e-9 (relative) for the averages that the
peers compute in another order, exactly for the rest; the z-score alarm compares two
floats that the peers compute another way, so a row may flip only where those floats
are within 1e-9 of each other (the script counts such rows and prints them). The timed
query: the same (key, start) windows, in any order, averages within 1e-9 (the peers sum
panes; the hand-written loop sums in time order as qre does, but takes equal times in
input order where qre orders them by tag, then reading).

What the numbers mean: seconds of one call, the best of 5 in a row after a warm-up
(which compiles and caches every kernel) and one more call (the output check). The
tools start :data:`LOAD_SETTLE` seconds after every tool has loaded the data: for some
seconds after polars and DuckDB load 10M rows, the calls of others run slower. The
shorter calls vary most: qre's running sum took 0.15 to 0.33 s from run to run of this
script before that pause.
Each tool's own frame is in memory, its result
built (qre: output arrays, or run_timed's DataFrame; pandas: a Series; polars: a Series,
or a DataFrame; DuckDB: a numpy column, or columns). ``hand / qre``: the hand-written
loop's seconds / qre's (below 1: the loop is faster); ``qre ×``: the tool's seconds /
qre's (above 1: qre is faster).
Ratios are the claim, measured in one run.

Run::

    .venv/bin/pip install duckdb            # the one peer not among the test tools
    .venv/bin/python benchmarks/end_to_end.py [--events N] [--keys K] [--write]

``--write`` puts the table in benchmarks/RESULTS.md (section ``end-to-end``).
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import platform
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numba
import numpy as np
import pandas as pd
from results import RESULTS, write_section

import qre

EXAMPLES = Path(qre.__file__).parent / "examples"
ALPHABET = "alphabet ok, fail, info;"
QUERIES = {
    "running sum": f"{ALPHABET} sum(cur)",
    "average of the last 5": f"{ALPHABET} avg_last(5, cur)",
    "z-score alarm (last_five.qre)":
        (EXAMPLES / "last_five.qre").read_text().replace("alphabet m;", ALPHABET),
    "failure since success (failed_since_ok.qre)":
        (EXAMPLES / "failed_since_ok.qre").read_text().replace("alphabet ok, fail;", ALPHABET),
}
SIZE, SLIDE = 300, 60
"""The sliding window of the timed query, in seconds: 5 minutes, sliding by 1 minute."""
TIMED = {"sliding 5 min average (run_timed)":
         f"{ALPHABET} aggregate(avg(cur), {SIZE // 60}min, {SLIDE // 60}min)"}
SPAN, JITTER = 3600, 10
"""Event times: row i at ⌊i · SPAN / N⌋ s plus 0..JITTER−1 s (an hour of arrivals, slightly
out of order)."""
TOOLS = ("qre (codegen)", "hand-written Numba", "pandas", "polars", "DuckDB")
LOAD_SETTLE = 10.0
"""Seconds of pause once every tool has loaded the data: for a few seconds after polars and
DuckDB load 10M rows, calls of the others run slower (qre's running sum 0.28 s against
0.16 s after this pause; 3 s were not enough)."""


# --------------------------------------------------------------------------- data


def make_parquet(path: Path, n: int, k: int) -> None:
    rng = np.random.default_rng(0)
    names = np.array([f"user{j:06d}" for j in range(k)], dtype=object)
    tags = np.array(["ok", "fail", "info"], dtype=object)
    frame = pd.DataFrame({
        "key": names[rng.integers(0, k, n)],
        "tag": tags[rng.choice(3, n, p=[0.10, 0.05, 0.85])],
        "v": np.round(rng.normal(10.0, 3.0, n), 3),
    })
    frame["row"] = np.arange(n, dtype=np.int64)
    frame["t"] = frame["row"] * SPAN // n + rng.integers(0, JITTER, n)
    frame.to_parquet(path, index=False)


# --------------------------------------------------------------------------- hand-written


@numba.njit(cache=True)
def _hand_sum(ids, v, k):
    total = np.zeros(k)
    out = np.empty(len(v))
    for i in range(len(v)):
        total[ids[i]] += v[i]
        out[i] = total[ids[i]]
    return out


@numba.njit(cache=True)
def _hand_avg5(ids, v, k):
    ring = np.zeros((k, 5))
    count = np.zeros(k, dtype=np.int64)
    out = np.empty(len(v))
    for i in range(len(v)):
        g = ids[i]
        ring[g, count[g] % 5] = v[i]
        count[g] += 1
        out[i] = _last5(ring, g, count[g]) if count[g] >= 5 else np.nan
    return out


@numba.njit(cache=True)
def _last5(ring, g, c):
    s = ring[g, c % 5]  # the oldest of the five, then the newer ones: qre's order
    for j in range(1, 5):
        s += ring[g, (c + j) % 5]
    return s / 5


@numba.njit(cache=True)
def _hand_zscore(ids, v, k):
    ring = np.zeros((k, 5))
    count = np.zeros(k, dtype=np.int64)
    total = np.zeros(k)
    first, mean, sq = np.zeros(k), np.zeros(k), np.zeros(k)
    out = np.empty(len(v))
    for i in range(len(v)):
        g, x = ids[i], v[i]
        n = count[g]
        if n == 0:
            first[g] = x
        d = x - first[g] - mean[g]  # Welford's update on readings shifted by the first
        sq[g] = sq[g] + d * d * n / (n + 1)
        mean[g] = mean[g] + d / (n + 1)
        ring[g, n % 5] = x
        count[g] = n + 1
        total[g] += x
        avg = total[g] / (n + 1)
        recent = _last5(ring, g, n + 1) if n + 1 >= 5 else avg
        out[i] = 1.0 if recent > avg + 2 * math.sqrt(sq[g] / (n + 1)) else 0.0
    return out


@numba.njit(cache=True)
def _hand_failure(ids, marker, k):
    last = np.full(k, -1, dtype=np.int8)
    out = np.empty(len(ids))
    for i in range(len(ids)):
        if marker[i] >= 0:
            last[ids[i]] = marker[i]
        out[i] = 1.0 if last[ids[i]] == 1 else 0.0
    return out


def hand(name: str, frame: pd.DataFrame) -> np.ndarray:
    ids, uniques = pd.factorize(frame["key"])
    k = len(uniques)
    if name.startswith("failure"):
        tags = frame["tag"].to_numpy()
        marker = np.where(tags == "fail", 1, np.where(tags == "ok", 0, -1)).astype(np.int8)
        return _hand_failure(ids, marker, k)
    v = frame["v"].to_numpy()
    kernel = {"running sum": _hand_sum, "average of the last 5": _hand_avg5}.get(name,
                                                                                _hand_zscore)
    return kernel(ids, v, k)


@numba.njit(cache=True)
def _hand_windows(ids, t, v, by_time, k):
    """Every key's non-empty windows [l·SLIDE, l·SLIDE + SIZE), events in time order: an
    event adds its reading to the SIZE / SLIDE windows open at its time (slot ⌊t / SLIDE⌋
    b: windows b − w + 1 .. b, kept in a ring per key); a key's windows close when its time
    reaches their end, the rest at the end of the input."""
    w = SIZE // SLIDE
    sums, counts = np.zeros((k, w)), np.zeros((k, w), dtype=np.int64)
    none = np.iinfo(np.int64).min
    slot = np.full(k, none)  # each key's latest slot
    out = np.empty(len(t), dtype=np.int64), np.empty(len(t), dtype=np.int64), np.empty(len(t))
    m = 0
    for i in by_time:
        g, b = ids[i], t[i] // SLIDE
        if b != slot[g]:
            if slot[g] != none:
                out, m = _close(g, slot[g] - w + 1, min(slot[g], b - w), sums, counts, out, m)
            slot[g] = b
        for l in range(b - w + 1, b + 1):  # noqa: E741
            sums[g, l % w] += v[i]
            counts[g, l % w] += 1
    for g in range(k):
        out, m = _close(g, slot[g] - w + 1, slot[g], sums, counts, out, m)
    return out[0][:m], out[1][:m], out[2][:m]


@numba.njit(cache=True)
def _close(g, first, last, sums, counts, out, m):
    """Emit key g's non-empty windows first..last (key, start, average) and empty them."""
    w = sums.shape[1]
    for l in range(first, last + 1):  # noqa: E741
        if counts[g, l % w]:
            if m == len(out[0]):  # twice the room
                out = (np.concatenate((out[0], out[0])), np.concatenate((out[1], out[1])),
                       np.concatenate((out[2], out[2])))
            out[0][m], out[1][m] = g, l * SLIDE
            out[2][m] = sums[g, l % w] / counts[g, l % w]
            sums[g, l % w], counts[g, l % w] = 0.0, 0
            m += 1
    return out, m


def hand_timed(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    ids, uniques = pd.factorize(frame["key"])
    t = frame["t"].to_numpy()
    by_time = np.argsort(t, kind="stable")
    g, start, value = _hand_windows(ids, t, frame["v"].to_numpy(), by_time, len(uniques))
    return uniques[g], start, value


# --------------------------------------------------------------------------- peers


def pandas_form(name: str, frame: pd.DataFrame) -> np.ndarray:
    g = frame.groupby("key", sort=False)["v"]
    if name == "running sum":
        return g.cumsum().to_numpy()
    if name.startswith("failure"):
        marker = frame["tag"].map({"ok": 0.0, "fail": 1.0})
        return (marker.groupby(frame["key"], sort=False).ffill() == 1).to_numpy(float)
    last5 = sum(g.shift(j) for j in range(4, 0, -1)) + frame["v"]
    last5 = last5 / 5
    if name == "average of the last 5":
        return last5.to_numpy()
    n = g.cumcount() + 1
    mean = g.cumsum() / n
    var = (frame["v"] ** 2).groupby(frame["key"], sort=False).cumsum() / n - mean ** 2
    recent = last5.fillna(mean)
    return (recent > mean + 2 * np.sqrt(var.clip(lower=0))).to_numpy(float)


def polars_form(name: str, frame: object) -> np.ndarray:
    import polars as pl

    v = pl.col("v")
    if name == "running sum":
        expr = v.cum_sum().over("key")
    elif name == "average of the last 5":
        expr = v.rolling_mean(5).over("key")
    elif name.startswith("failure"):
        marker = pl.when(pl.col("tag") == "fail").then(1.0).when(pl.col("tag") == "ok") \
            .then(0.0).otherwise(None)
        expr = (marker.forward_fill().over("key") == 1.0).fill_null(False).cast(pl.Float64)
    else:
        n = pl.int_range(1, pl.len() + 1).over("key")
        mean = v.cum_sum().over("key") / n
        var = (v * v).cum_sum().over("key") / n - mean ** 2
        recent = v.rolling_mean(5).over("key").fill_null(mean)
        expr = (recent > mean + 2 * var.clip(0).sqrt()).cast(pl.Float64)
    return frame.select(expr.alias("out"))["out"].to_numpy()


DUCK_SQL = {
    "running sum": "sum(v) OVER (k ROWS UNBOUNDED PRECEDING)",
    "average of the last 5":
        "CASE WHEN count(*) OVER (k ROWS 4 PRECEDING) = 5 THEN avg(v) OVER "
        "(k ROWS 4 PRECEDING) END",
    "failure since success":
        "CASE WHEN last_value(CASE tag WHEN 'fail' THEN 1 WHEN 'ok' THEN 0 END IGNORE NULLS)"
        " OVER (k ROWS UNBOUNDED PRECEDING) = 1 THEN 1.0 ELSE 0.0 END",
    "z-score":
        "CASE WHEN coalesce(CASE WHEN count(*) OVER (k ROWS 4 PRECEDING) = 5 THEN avg(v) OVER "
        "(k ROWS 4 PRECEDING) END, avg(v) OVER (k ROWS UNBOUNDED PRECEDING)) > "
        "avg(v) OVER (k ROWS UNBOUNDED PRECEDING) + 2 * stddev_pop(v) OVER "
        "(k ROWS UNBOUNDED PRECEDING) THEN 1.0 ELSE 0.0 END",
}


def duckdb_form(name: str, con: object) -> np.ndarray:
    sql = DUCK_SQL[next(key for key in DUCK_SQL if name.startswith(key))]
    query = (f"SELECT {sql} AS out FROM events WINDOW k AS (PARTITION BY key ORDER BY row) "
             f"ORDER BY row")
    out = con.execute(query).fetchnumpy()["out"]  # type: ignore[attr-defined]
    return np.ma.filled(np.ma.asarray(out, dtype=float), np.nan)  # a NULL: undefined


Rows = tuple[np.ndarray, np.ndarray, np.ndarray]
"""A timed query's result as (key, window start, average), one entry per window."""


def pandas_timed(frame: pd.DataFrame) -> pd.Series:
    """Panes: sums and counts per key and slot, each slot's added to the SIZE / SLIDE
    windows that hold it."""
    panes = (frame.assign(slot=frame["t"] // SLIDE).groupby(["key", "slot"], sort=False)["v"]
             .agg(["sum", "count"]).reset_index())
    spread = pd.concat([panes.assign(start=(panes["slot"] - j) * SLIDE)
                        for j in range(SIZE // SLIDE)])
    windows = spread.groupby(["key", "start"], sort=False)[["sum", "count"]].sum()
    return windows["sum"] / windows["count"]


def polars_timed(frame: object) -> object:
    import polars as pl

    return (frame.sort("key", "t")  # type: ignore[attr-defined]
            .group_by_dynamic("t", every=f"{SLIDE}i", period=f"{SIZE}i",
                              offset=f"-{SIZE - SLIDE}i", group_by="key", closed="left",
                              start_by="window")
            .agg(pl.col("v").mean()))


def duckdb_timed(con: object) -> dict[str, np.ndarray]:
    query = (f"WITH panes AS (SELECT key, t // {SLIDE} AS slot, sum(v) AS s, count(*) AS c "
             f"FROM events GROUP BY ALL) "
             f"SELECT key, (slot - j) * {SLIDE} AS start, sum(s) / sum(c) AS v "
             f"FROM panes, range({SIZE // SLIDE}) AS spread(j) GROUP BY ALL")
    return con.execute(query).fetchnumpy()  # type: ignore[attr-defined, no-any-return]


def timed_rows(tool: str, result: Any) -> Rows:
    """(key, start, average) of each tool's result."""
    if tool == TOOLS[0]:
        return result["key"], result["start"], result["value"]
    if tool == TOOLS[1]:
        return result  # type: ignore[no-any-return]
    if tool == TOOLS[2]:
        return result.index.get_level_values(0), result.index.get_level_values(1), result
    if tool == TOOLS[3]:
        return result["key"], result["t"], result["v"]
    return result["key"], result["start"], result["v"]


# --------------------------------------------------------------------------- run


def qre_form(m: qre.Monitor, frame: pd.DataFrame) -> np.ndarray:
    out = m.run_keys(frame["key"], frame["tag"], frame["v"], engine="codegen")
    return np.where(out.status == 1, out.value, np.nan)


def best_of(f: Callable[[], object], repeat: int) -> tuple[float, object]:
    best, result = math.inf, None
    for _ in range(repeat):
        start = time.perf_counter()
        result = f()
        best = min(best, time.perf_counter() - start)
    return best, result


def check(name: str, tool: str, got: np.ndarray, want: np.ndarray, frame: pd.DataFrame,
          m: qre.Monitor) -> str:
    got = np.asarray(got, dtype=float)
    assert np.array_equal(np.isnan(got), np.isnan(want)), (name, tool, "undefined rows differ")
    if not name.startswith("z-score"):
        ok = np.isclose(got, want, rtol=1e-9, atol=1e-9, equal_nan=True)
        assert ok.all(), (name, tool, int((~ok).sum()), np.flatnonzero(~ok)[:5])
        return ""
    flipped = np.flatnonzero(got != want)
    if len(flipped):  # only where recent and bound are within rounding of each other
        margin = _zscore_margin(frame, m)
        assert (np.abs(margin[flipped]) <= 1e-9 * (1 + np.abs(frame["v"].to_numpy()[flipped]))
                ).all(), (name, tool, flipped[:5])
    return f"{tool}: {len(flipped)} rows flipped at a tie within rounding" if len(flipped) else ""


def _zscore_margin(frame: pd.DataFrame, m: qre.Monitor) -> np.ndarray:
    """recent − bound of every row (qre's arithmetic, through a query of their difference)."""
    text = QUERIES["z-score alarm (last_five.qre)"].replace("recent > bound", "recent - bound")
    return qre_form(qre.qre(text), frame)


def qre_timed(m: qre.Monitor, frame: pd.DataFrame) -> pd.DataFrame:
    return m.run_timed(frame["t"], frame["tag"], frame["v"], keys=frame["key"],
                       engine="codegen")


def sorted_rows(rows: Rows) -> pd.DataFrame:
    """One order for every tool's rows: by key, then window start."""
    keys, starts, values = rows
    frame = pd.DataFrame({"key": np.asarray(keys, dtype=object),
                          "start": np.asarray(starts, dtype=np.int64),
                          "value": np.asarray(values, dtype=float)})
    return frame.sort_values(["key", "start"], ignore_index=True)


def check_timed(name: str, tool: str, got: pd.DataFrame, want: pd.DataFrame) -> None:
    """The same windows (key and start) with the same averages, within 1e-9: the peers add
    the readings in another order."""
    assert len(got) == len(want), (name, tool, len(got), len(want))
    for column in ("key", "start"):
        same = got[column].to_numpy() == want[column].to_numpy()
        assert same.all(), (name, tool, column, np.flatnonzero(~same)[:5])
    ok = np.isclose(got["value"], want["value"], rtol=1e-9, atol=1e-9)
    assert ok.all(), (name, tool, int((~ok).sum()), np.flatnonzero(~ok)[:5])


def row_forms(name: str, m: qre.Monitor, frame: pd.DataFrame, pl_frame: object,
              con: object) -> dict[str, Callable[[], object]]:
    return {
        TOOLS[0]: lambda: qre_form(m, frame),
        TOOLS[1]: lambda: hand(name, frame),
        TOOLS[2]: lambda: pandas_form(name, frame),
        TOOLS[3]: lambda: polars_form(name, pl_frame),
        TOOLS[4]: lambda: duckdb_form(name, con),
    }


def timed_forms(m: qre.Monitor, frame: pd.DataFrame, pl_frame: object,
                con: object) -> dict[str, Callable[[], object]]:
    return {
        TOOLS[0]: lambda: qre_timed(m, frame),
        TOOLS[1]: lambda: hand_timed(frame),
        TOOLS[2]: lambda: pandas_timed(frame),
        TOOLS[3]: lambda: polars_timed(pl_frame),
        TOOLS[4]: lambda: duckdb_timed(con),
    }


def run(n: int, k: int, repeat: int = 5) -> tuple[list[dict[str, object]], list[str]]:
    import duckdb
    import polars as pl

    rows, notes = [], []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "events.parquet"
        make_parquet(path, n, k)
        frame = pd.read_parquet(path)
        pl_frame = pl.read_parquet(path)
        con = duckdb.connect()
        con.execute(f"CREATE TABLE events AS SELECT * FROM read_parquet('{path}')")
        time.sleep(LOAD_SETTLE)
        for name, text in {**QUERIES, **TIMED}.items():
            m = qre.qre(text)
            timed = name in TIMED
            forms = (timed_forms if timed else partial(row_forms, name))(m, frame, pl_frame,
                                                                       con)
            want = forms[TOOLS[0]]()  # warm-up: compiles or loads the kernels
            if timed:
                want = sorted_rows(timed_rows(TOOLS[0], want))
            seconds = {}
            for tool, form in forms.items():
                if timed:
                    check_timed(name, tool, sorted_rows(timed_rows(tool, form())), want)
                else:
                    note = check(name, tool, form(), want, frame, m)
                    if note:
                        notes.append(f"{name}: {note}")
                seconds[tool] = best_of(form, repeat)[0]
            rows.append({"query": name, "states": len(m.dt.states), **seconds})
            print(name, {t: round(s, 3) for t, s in seconds.items()}, flush=True)
    return rows, notes


def markdown(rows: list[dict[str, object]], notes: list[str], n: int, k: int,
             load: tuple[float, float], repeat: int) -> str:
    head = ("| query | DT states | " + " | ".join(f"{t} s" for t in TOOLS)
            + " | hand / qre | qre × pandas | qre × polars | qre × DuckDB |")
    lines = [head, "|---|" + "---:|" * (len(TOOLS) + 5)]
    for r in rows:
        q = float(r[TOOLS[0]])  # type: ignore[arg-type]
        lines.append(
            f"| {r['query']} | {r['states']} | "
            + " | ".join(f"{float(r[t]):.2f}" for t in TOOLS)  # type: ignore[arg-type]
            + f" | {float(r[TOOLS[1]]) / q:.2f}x"  # type: ignore[arg-type]
            + "".join(f" | {float(r[t]) / q:.2f}x" for t in TOOLS[2:])  # type: ignore[arg-type]
            + " |")
    stamp = datetime.date.today().isoformat()
    versions = (f"Python {platform.python_version()}, numba {numba.__version__}, "
                f"pandas {pd.__version__}, polars {__import__('polars').__version__}, "
                f"DuckDB {__import__('duckdb').__version__}")
    text = [
        "## End to end: run_keys and run_timed against a hand-written loop, pandas, polars and "
        "DuckDB",
        "",
        f"Produced by `.venv/bin/python benchmarks/end_to_end.py --events {n} --keys {k} "
        f"--write` on {stamp} ({platform.machine()}, {os.cpu_count()} cores, {versions}). "
        f"{n:,} events over {k:,} text keys read from Parquet; seconds of one call, best of "
        f"{repeat} in a row after a warm-up, {LOAD_SETTLE:g} s after every tool had loaded "
        f"the data; see the "
        f"script's docstring for what each tool runs. "
        "`hand / qre` below 1: the hand-written loop is faster. The machine's load average "
        f"(1 min) was {load[0]:.1f} at the start and {load[1]:.1f} at the end: a shared "
        "machine times noisily.",
        "",
        *lines,
        "",
        "- every tool's output checked against qre's on every row before timing (the timed "
        "query: the same windows, averages within 1e-9)",
        *[f"- {note}" for note in notes],
    ]
    return "\n".join(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--write", action="store_true", help="update benchmarks/RESULTS.md")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    rows, notes = run(args.events, args.keys, args.repeat)
    text = markdown(rows, notes, args.events, args.keys, (load, os.getloadavg()[0]),
                    args.repeat)
    print(text)
    if args.write:
        write_section(RESULTS, "end-to-end", text)


if __name__ == "__main__":
    main()
