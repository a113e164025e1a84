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
import pytest
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
    watermark in force (with a watermark) or in its key's order (without).

    After each micro-batch it checks what Spark's user sees: every event received at
    or below the watermark (every event, without one) has been output, and no key
    keeps state once the watermark has passed its last event by ttl with nothing
    pending (so its timer fired)."""
    plan = make_plan("test", batches[0], m, "k", "t", "tag", "v", (), "table", "error")
    states: dict[object, KeyState] = {}
    outputs, ahead, watermark_ms, latest = [], True, 0, None
    seen: dict[object, float] = {}
    received = []
    for batch in [*batches, None]:
        if batch is None:
            watermark_ms = FLUSH_MS
            batch = batches[0].iloc[:0]
        received.append(batch)
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
        _check_progress(pd.concat(received), [o["t"] for o in outputs], states, rules,
                        watermark_ms * 1000 if rules.watermark else None)
        if len(batch) and delay is not None:
            latest = max(latest or 0, int(batch[TIME_US].max()))
            watermark_ms = max(watermark_ms, (latest - delay * US) // 1000)
    return pd.concat([o for o in outputs if len(o)], ignore_index=True), ahead


def _check_progress(received: pd.DataFrame, output_times: list[pd.Series],
                    states: dict[object, KeyState], rules: Rules,
                    watermark_us: int | None) -> None:
    out_us = np.concatenate([[], *output_times]) * US
    if watermark_us is None:
        assert len(out_us) == len(received)
    else:
        assert (out_us <= watermark_us).sum() == (received[TIME_US] <= watermark_us).sum()
    if rules.ttl_us is not None:
        for state in states.values():
            assert state.pending is not None or state.last_us + rules.ttl_us >= watermark_us


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
    """Events of 1..4 keys at whole seconds 1..30 (ties unless ``distinct``), arriving
    in time order give or take ``jitter`` seconds, cut into 1..5 micro-batches. Whole
    seconds put events exactly on the watermark and gaps exactly equal to a ttl."""
    n = draw(st.integers(1, 30))
    frame = pd.DataFrame({
        "k": draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)),
        "t": draw(st.lists(st.integers(1, 30), min_size=n, max_size=n, unique=distinct)),
        "tag": draw(st.lists(st.sampled_from(ALPHABET), min_size=n, max_size=n)),
        "v": draw(st.lists(st.sampled_from([-1.0, 0.0, 0.5, 2.0, float("nan")]),
                           min_size=n, max_size=n)),
    })
    frame[TIME_US] = frame["t"] * US
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
       st.sampled_from([None, 0, 1, 2, 4]))
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


def _events(times: list[int], plan_tags: str = "a") -> pd.DataFrame:
    frame = pd.DataFrame({"k": 0, "t": times, "tag": plan_tags, "v": 1.0})
    frame[TIME_US] = frame["t"] * US
    return frame


def test_an_idle_state_is_dropped_only_once_the_watermark_is_past_last_plus_ttl() -> None:
    m = qre("iter(atom(a, cur), 0, +)", ["a"])
    plan = make_plan("test", _events([1]), m, "k", "t", "tag", "v", (), "table", "error")
    rules = Rules(watermark=True, ttl_us=5 * US)
    state, rows = step(plan, rules, m, "table", 0, KeyState(), _events([10]), 10 * US)
    assert state is not None and state.last_us == 10 * US and rows["value"].tolist() == [1.0]
    assert wake_ms(state, rules) == 15_000 + 1
    kept, _ = step(plan, rules, m, "table", 0, state, None, 15 * US)
    assert kept is state
    dropped, rows = step(plan, rules, m, "table", 0, state, None, 15 * US + 1)
    assert dropped is None and len(rows) == 0
    # An event exactly ttl after the last one continues the key; one more starts afresh.
    on, rows = step(plan, rules, m, "table", 0, state, _events([15]), 15 * US)
    assert rows["value"].tolist() == [2.0]
    _, rows = step(plan, rules, m, "table", 0, on, _events([21]), 21 * US)
    assert rows["value"].tolist() == [1.0]


def test_late_fail_names_the_key_and_both_times() -> None:
    m = qre("iter(atom(a, cur), 0, +)", ["a"])
    plan = make_plan("test", _events([1]), m, "k", "t", "tag", "v", (), "table", "error")
    rules = Rules(watermark=False, late="fail")
    state, _ = step(plan, rules, m, "table", 0, KeyState(), _events([10]), None)
    assert state is not None
    with pytest.raises(ValueError, match=r"key 0 received an event at t = 3 after processing "
                                         r"one at 10 \(late=\"fail\"\)"):
        step(plan, rules, m, "table", 0, state, _events([3]), None)
