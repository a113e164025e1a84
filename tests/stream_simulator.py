"""A stream of micro-batches played through spark_udf.keyed's rules, without Spark.

:func:`simulate` plays Spark's part: micro-batches arrive, the watermark of
a batch is the largest time of the batches before it minus the delay (never
decreasing), each key with events gets one :func:`step`, then each key whose
timer is due gets one more, as Spark fires event-time timers; a last batch
with an infinite watermark flushes what waits. tests/test_stream_rules.py
checks it against the oracle; tests/test_spark_stream.py checks Spark
against it. :func:`simulate_buckets` plays the same stream through
spark_udf.buckets' steps, keys hashed into buckets with one timer each, as
monitor_stream runs it; tests/test_stream_buckets.py checks it against
:func:`simulate`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import strategies as st

from qre import Monitor
from spark_udf.buckets import GROUP, Bucket, BucketRules, step_bucket
from spark_udf.keyed import TIME_US, KeyState, Rules, step, wake_ms
from spark_udf.plan import concat_rows, make_plan

ALPHABET = ("a", "b")
US = 1_000_000  # times are whole seconds
FLUSH_MS = 2**52


def simulate(m: Monitor, batches: list[pd.DataFrame], rules: Rules,
             delay: int | None, *, states: dict[object, KeyState] | None = None,
             marks: list[tuple[int, int]] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The rows of a stream of ``batches``, and the events that arrived behind: at or
    below the watermark in force (with a watermark), at or before the latest time
    their key had received (without one). ``states`` receives the keys' states at the
    end; ``marks`` one (number of rows output so far, watermark in ms) per micro-batch,
    the flush included.

    After each micro-batch it checks what Spark's user sees: every event received at
    or below the watermark less the allowed lateness (every event, without a
    watermark) has been output, and no key
    keeps state once the watermark has passed its last event by ttl with nothing
    pending (so its timer fired)."""
    plan = make_plan("test", batches[0], m, "k", "t", "tag", "v", (), "table", "error",
                     timed=rules.timed)
    states = {} if states is None else states
    outputs, behind, watermark_ms, latest = [], [], 0, None
    seen: dict[object, float] = {}
    received = []
    for batch in [*batches, None]:
        if batch is None:
            watermark_ms = FLUSH_MS
            batch = batches[0].iloc[:0]
        received.append(batch)
        for key, events in batch.groupby("k", sort=False):
            if rules.watermark:
                behind.append(events[events[TIME_US] <= rules.release_us(watermark_ms * 1000)])
            else:
                behind.append(events[events["t"] <= seen.get(key, -np.inf)])
                seen[key] = max(seen.get(key, -np.inf), events["t"].max())
            outputs.append(_step(plan, rules, m, states, key, events, watermark_ms))
        for key in list(states):
            wake = wake_ms(states[key], rules)
            if wake is not None and wake <= watermark_ms:
                outputs.append(_step(plan, rules, m, states, key, None, watermark_ms))
        if marks is not None:
            marks.append((sum(len(o) for o in outputs), watermark_ms))
        if not rules.timed and not rules.optimistic:  # else not one row per event
            _check_progress(pd.concat(received), [o["t"] for o in outputs], states, rules,
                            rules.release_us(watermark_ms * 1000) if rules.watermark
                            else None)
        if len(batch) and delay is not None:
            latest = max(latest or 0, int(batch[TIME_US].max()))
            watermark_ms = max(watermark_ms, (latest - delay * US) // 1000)
    return (concat_rows([o for o in outputs if len(o)] or outputs[:1]),
            pd.concat([batches[0].iloc[:0], *behind], ignore_index=True))


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
def arrivals(draw, jitter: int, distinct: bool = False, min_events: int = 1):  # type: ignore[no-untyped-def]
    """Events of 1..4 keys at whole seconds 1..30 (ties unless ``distinct``), arriving
    in time order give or take ``jitter`` seconds, cut into 1..5 micro-batches. Whole
    seconds put events exactly on the watermark and gaps exactly equal to a ttl."""
    n = draw(st.integers(min_events, 30))
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


def simulate_buckets(m: Monitor, batches: list[pd.DataFrame], rules: Rules,
                     delay: int | None, n_buckets: int, compress_after_us: int | None = None,
                     stored: list[Bucket] | None = None) -> pd.DataFrame:
    """The rows of :func:`simulate`'s stream, each key's state in the bucket
    ``k % n_buckets``: a bucket steps when it has events, then once more when its
    earliest key's wake-up is due (its timer); between steps it is stored as the state
    store holds it (``Bucket.to_bytes``), window contents compressed after
    ``compress_after_us`` of idleness. ``stored`` receives every bucket stored."""
    plan = make_plan("test", batches[0], m, "k", "t", "tag", "v", (), "table", "error",
                     timed=rules.timed)
    spec = BucketRules(plan, rules, m, "table", lambda group: group, compress_after_us)
    buckets = {b: Bucket.empty(spec) for b in range(n_buckets)}
    stored = [] if stored is None else stored
    outputs, watermark_ms, latest = [], 0, None
    for batch in [*batches, None]:
        if batch is None:
            watermark_ms = FLUSH_MS
            batch = batches[0].iloc[:0]
        watermark_us = watermark_ms * 1000 if rules.watermark else None
        batch = batch.assign(**{GROUP: batch["k"]})
        for b in range(n_buckets):
            events = batch[batch["k"] % n_buckets == b]
            if len(events):
                new, rows = step_bucket(spec, buckets[b], events, watermark_us)
                buckets[b] = Bucket.from_bytes(*new.to_bytes())
                stored.append(buckets[b])
                outputs.append(rows)
        for b in range(n_buckets):
            wake = (buckets[b].keys["wake_ms"].dropna() if rules.watermark
                    else pd.Series([], dtype=float))
            if len(wake) and wake.min() <= watermark_ms:
                new, rows = step_bucket(spec, buckets[b], None, watermark_us)
                buckets[b] = Bucket.from_bytes(*new.to_bytes())
                stored.append(buckets[b])
                outputs.append(rows)
        if len(batch) and delay is not None:
            latest = max(latest or 0, int(batch[TIME_US].max()))
            watermark_ms = max(watermark_ms, (latest - delay * US) // 1000)
    return concat_rows([o for o in outputs if len(o)] or outputs[:1])
