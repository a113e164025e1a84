"""spark_udf.keyed, the per-key rules of monitor_stream, without Spark.

A small simulator plays Spark's part: micro-batches arrive, the watermark of
a batch is the largest time of the batches before it minus the delay (never
decreasing), each key with events gets one :func:`step`, then each key whose
timer is due gets one more, as Spark fires event-time timers; a last batch
with an infinite watermark flushes what waits. The outputs are checked
against the oracle (tests/keyed_oracle.py): every event is output exactly
once; the events not flagged late, per key, are output in time order with
exactly the oracle's results on those events; late events are flagged with
no result and really do sort before something their key had processed; and
when every event arrives ahead of the watermark (or, without a watermark, in
order), nothing is late and the outputs are the oracle's on all events.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st
from keyed_oracle import canonical, expected_rows
from query_strategies import temporal_queries, top_queries

from qre import Monitor, qre
from qre.printer import to_text
from spark_udf.keyed import LATE, TIME_US, KeyState, Rules, step, wake_ms
from spark_udf.plan import make_plan

ALPHABET = ("a", "b")
US = 1_000_000  # times are whole seconds
FLUSH_MS = 2**52


def simulate(m: Monitor, batches: list[pd.DataFrame], rules: Rules,
             delay: int | None) -> tuple[pd.DataFrame, bool]:
    """The rows of a stream of ``batches``, and whether every event arrived ahead of the
    watermark in force (with a watermark) or in its key's order (without)."""
    plan = make_plan("test", batches[0], m, "k", "t", "tag", "v", (), "table", "error")
    states: dict[object, KeyState] = {}
    outputs, ahead, watermark_ms, latest = [], True, 0, None
    seen: dict[object, float] = {}
    for batch in [*batches, None]:
        if batch is None:
            watermark_ms = FLUSH_MS
            batch = batches[0].iloc[:0]
        for key, events in batch.groupby("k", sort=False):
            if rules.watermark:
                ahead &= bool((events[TIME_US] > watermark_ms * 1000).all())
            else:
                ahead &= bool(events["t"].min() > seen.get(key, -np.inf))
                seen[key] = max(seen.get(key, -np.inf), events["t"].max())
            outputs.append(_step(plan, rules, m, states, key, events, watermark_ms))
        for key in list(states):
            wake = wake_ms(states[key], rules)
            if wake is not None and wake <= watermark_ms:
                outputs.append(_step(plan, rules, m, states, key, None, watermark_ms))
        if len(batch) and delay is not None:
            latest = max(latest or 0, int(batch[TIME_US].max()))
            watermark_ms = max(watermark_ms, (latest - delay * US) // 1000)
    return pd.concat([o for o in outputs if len(o)], ignore_index=True), ahead


def _step(plan, rules, m, states, key, events, watermark_ms):  # type: ignore[no-untyped-def]
    watermark_us = watermark_ms * 1000 if rules.watermark else None
    new, rows = step(plan, rules, m, "table", key, states.get(key, KeyState()), events,
                     watermark_us)
    if new is None:
        states.pop(key, None)
    else:
        states[key] = new
    return rows


@st.composite
def arrivals(draw, jitter: int, distinct: bool = False):  # type: ignore[no-untyped-def]
    """Events of 1..4 keys at times 1..30 (ties unless ``distinct``: then each time gets
    a distinct fraction), arriving in time order give or take ``jitter`` seconds, cut
    into 1..5 micro-batches."""
    n = draw(st.integers(1, 30))
    frame = pd.DataFrame({
        "k": draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)),
        "t": draw(st.lists(st.integers(1, 30), min_size=n, max_size=n)),
        "tag": draw(st.lists(st.sampled_from(ALPHABET), min_size=n, max_size=n)),
        "v": draw(st.lists(st.sampled_from([-1.0, 0.0, 0.5, 2.0, float("nan")]),
                           min_size=n, max_size=n)),
    })
    if distinct:
        frame["t"] = frame["t"] + np.arange(n) / 1000
    frame[TIME_US] = np.round(frame["t"] * US).astype(np.int64)
    noise = draw(st.lists(st.integers(0, jitter), min_size=n, max_size=n))
    frame = frame.iloc[np.argsort(frame["t"].to_numpy() + np.array(noise), kind="stable")]
    cuts = sorted(draw(st.lists(st.integers(1, max(1, n - 1)), max_size=4)))
    return [frame.iloc[lo:hi] for lo, hi in zip([0, *cuts], [*cuts, n], strict=True)
            if hi > lo]


QUERIES = st.one_of(top_queries(ALPHABET, 2), temporal_queries(ALPHABET, 1)).map(to_text)
RESULTS = ["k", "t", "tag", "status", "value"]


def check(m: Monitor, batches: list[pd.DataFrame], rows: pd.DataFrame, ahead: bool,
          ttl: int | None) -> None:
    """The properties of the module docstring; late events are told apart by (key, time),
    so a stream with late events must have distinct times."""
    events = pd.concat(batches, ignore_index=True)
    assert canonical(rows, ["k", "t", "tag"]) == canonical(events, ["k", "t", "tag"])
    is_late = rows[LATE].to_numpy(dtype=bool)
    late, on_time = rows[is_late], rows[~is_late]
    assert (late["status"] == 0).all() and late["value"].isna().all()
    if ahead:
        assert not is_late.any()
    for _, group in on_time.groupby("k", sort=False):
        assert group["t"].is_monotonic_increasing
    for p in np.flatnonzero(is_late):  # output after an event of its key that sorts later
        before = rows.iloc[:p]
        key, t = rows["k"].iloc[p], rows["t"].iloc[p]
        assert ((before["k"] == key) & ~before[LATE] & (before["t"] > t)).any()
    processed = events[~events.set_index(["k", "t"]).index.isin(
        late.set_index(["k", "t"]).index)]
    want = expected_rows(m, processed, ["v"], ttl=ttl)
    assert canonical(on_time, RESULTS) == canonical(want, RESULTS)


@settings(max_examples=60)
@given(QUERIES, arrivals(jitter=0), st.sampled_from([None, 0, 3]))
def test_in_order_arrivals_give_the_oracle(text, batches, delay) -> None:  # type: ignore[no-untyped-def]
    """In-order arrivals, ties split across micro-batches, with or without a watermark."""
    m = qre(text, list(ALPHABET))
    rows, ahead = simulate(m, batches, Rules(watermark=delay is not None), delay)
    if ahead:
        check(m, batches, rows, ahead, None)
    else:  # a tie split across micro-batches may sort before what its key processed
        assert canonical(rows, ["k", "t", "tag"]) == canonical(
            pd.concat(batches), ["k", "t", "tag"])


@settings(max_examples=60)
@given(QUERIES, arrivals(jitter=6, distinct=True), st.sampled_from([0, 2, 6, 10]),
       st.sampled_from([None, 0, 1, 4]))
def test_out_of_order_events_within_the_watermark_are_processed_in_order(
        text, batches, delay, ttl) -> None:  # type: ignore[no-untyped-def]
    m = qre(text, list(ALPHABET))
    rules = Rules(watermark=True, ttl_us=None if ttl is None else ttl * US)
    rows, ahead = simulate(m, batches, rules, delay)
    check(m, batches, rows, ahead, ttl)


@settings(max_examples=40)
@given(QUERIES, arrivals(jitter=6, distinct=True))
def test_without_a_watermark_late_events_are_flagged(text, batches) -> None:  # type: ignore[no-untyped-def]
    m = qre(text, list(ALPHABET))
    rows, ahead = simulate(m, batches, Rules(watermark=False), None)
    check(m, batches, rows, ahead, None)
