"""A bucket of keys' steps at once: :mod:`spark_udf.keyed`'s rules over many keys.

Pipeline position: inside a Spark Python worker, between the state store and the
monitor's kernel. :mod:`spark_udf.stream` groups a stream by a *bucket* of keys
(a hash of the key modulo the number of buckets) and keeps one :class:`Bucket` per
bucket in Spark's state store; :func:`step_bucket` runs once per bucket per
micro-batch (and per fired timer) and returns the bucket's next state and its
output rows. Pure: pandas frames in, pandas frames out, no Spark, so it is tested
against :func:`spark_udf.keyed.step` per key without a cluster.

Why buckets (issue 20, goal 6): a state store round trip, a pandas frame and a
kernel call per key cost about 2.5 ms per key and micro-batch — 4,000 rows/s at
10,000 keys × 10 events. A bucket pays them once for all its keys: its keys'
states are one list (read and written whole), its waiting events another, and one
timer wakes it at its earliest key's wake-up.

The rules are :mod:`spark_udf.keyed`'s, key by key; a key takes a step when it has
events, or when its wake-up (:func:`spark_udf.keyed.wake_ms`) is due at the
watermark, exactly as when each key had its own timer. Two ways to take them:

* :func:`_step_each` — :func:`spark_udf.keyed.step` per key, for timed monitors
  (clock ticks, window updates: :mod:`spark_udf.clocked`);
* :func:`_step_all` — the same rules on all the bucket's keys at once, for untimed
  monitors: one sort of the bucket's events by key and processing order, one
  :meth:`qre.Monitor.resume_keys` call from every key's configuration, the keys'
  next states as columns. tests/test_stream_buckets.py checks it against
  :func:`_step_each`.

State per key (``Bucket.keys``, one row a key): the grouped key, the configuration
as bytes (``status uint8[Q]`` then ``value float64[Q]``: 9·|Q| bytes, the
kernel's own), the last processed event's order columns (without a watermark:
what a late event is compared with), its time in µs, the key's wake-up and number
of waiting events (with a watermark), a timed monitor's clock and unsettled
window results, and a query with sliding windows their contents (``windows``,
:meth:`qre.runtime.window_contents.WindowContents.to_bytes`; such a query steps key by
key). The waiting events (``Bucket.pending``) follow the keys' order,
each key's in processing order, without their key: the counts say whose they are
(the key's text on every waiting event was a sixth of a bucket's state).

Cost per bucket and step: a sort of its events (n log n), O(keys) numpy and a few
Python operations per key with events, the kernel's O(DT size) per event; the
bucket's state is rewritten whole (O(keys in the bucket)) when any key changes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from qre.runtime.keys import stream_ids
from qre.runtime.monitor import Monitor
from qre.runtime.tag_codes import tag_codes
from qre.runtime.window_contents import WindowContents

from . import keyed
from .keyed import TIME_US, Checkpoint, KeyState, Rules
from .plan import (
    Plan,
    concat_rows,
    event_data,
    frame_rows,
    name_unknown_tag,
    null_time_error,
    order_of,
    plain,
)

__all__ = ["GROUP", "Bucket", "BucketRules", "key_columns", "step_bucket"]

GROUP = "__qre_group"
"""The column of the key a bucket's rows are told apart by (the grouped key)."""


@dataclass(frozen=True)
class BucketRules:
    """What a bucket's step needs besides its state: the plan, the time rules, the
    monitor, and how to read a grouped key as the user's key."""

    plan: Plan
    rules: Rules
    monitor: Monitor
    engine: str
    key_of: Callable[[Any], Any]
    """The user's key from the grouped one (a numeric key is grouped by its text)."""
    compress_after_us: int | None = None
    """Seed 001's D for window contents: those of a key whose last event is at least this
    far behind the watermark are stored compressed (None: never; 0: always)."""

    def stored_windows(self, contents: WindowContents | None, last_us: int | None,
                       watermark_us: int | None) -> bytes | None:
        """A key's window contents as ``Bucket.keys`` stores them: compressed once the
        key has been idle for :attr:`compress_after_us`."""
        if contents is None:
            return None
        return contents.to_bytes(compress=self.idle(last_us, watermark_us))

    def idle(self, last_us: int | None, watermark_us: int | None) -> bool:
        """Whether a key whose last event is at ``last_us`` keeps its window contents
        compressed at this watermark (Algorithm 1's L34: not updated for D)."""
        d = self.compress_after_us
        return d is not None and (d == 0 or (
            last_us is not None and watermark_us is not None and watermark_us - last_us >= d))

    @property
    def key_columns(self) -> list[str]:
        """The columns of ``Bucket.keys``."""
        return key_columns(self.plan, self.rules)

    @property
    def pending_columns(self) -> list[str]:
        """The columns of ``Bucket.pending``: a waiting event's (its key is in
        ``Bucket.keys``, module docstring)."""
        return list(dict.fromkeys([*self.plan.order, *self.plan.carried, TIME_US]))


def key_columns(plan: Plan, rules: Rules) -> list[str]:
    """The columns of ``Bucket.keys`` (module docstring, "State per key"): the last
    event's order columns without a watermark (late events are those that sort
    before it), its time with one or for a timed monitor."""
    names = [GROUP, "config"]
    if not rules.watermark:
        names += [f"o{i}" for i in range(len(plan.order))]
    if rules.watermark or rules.timed:
        names.append("last_us")
    if rules.watermark:
        names += ["wake_ms", "waiting"]
    if rules.timed:
        names += ["clock_us", "ahead_us", "opened_us", "sent_us", "sent_status",
                  "sent_value"]
    if rules.optimistic:
        names += (["ahead_us"] if not rules.timed else []) + ["asserted", "checkpoints"]
    if plan.stored_windows:
        names.append("windows")
    return names


@dataclass(frozen=True)
class Bucket:
    """The keys of a bucket: one row per key (``BucketRules.key_columns``; integers
    nullable, ``config`` bytes or None) and the events waiting for the watermark
    (``BucketRules.pending_columns``): key after key in the keys' order, each key's
    ``waiting`` events in processing order."""

    keys: pd.DataFrame
    pending: pd.DataFrame

    def pending_ids(self) -> np.ndarray:
        """The key (row of ``keys``) of each waiting event."""
        if "waiting" not in self.keys:
            return np.zeros(0, dtype=np.int64)
        counts = self.keys["waiting"].to_numpy(dtype=np.int64)
        if int(counts.sum()) != len(self.pending):
            raise ValueError(f"monitor_stream: a bucket's state counts {int(counts.sum())} "
                             f"waiting events but holds {len(self.pending)}")
        return np.repeat(np.arange(len(counts)), counts)

    @staticmethod
    def empty(spec: BucketRules) -> Bucket:
        return Bucket(pd.DataFrame(columns=spec.key_columns),
                      pd.DataFrame(columns=spec.pending_columns))

    def to_bytes(self) -> tuple[bytes, bytes]:
        """The keys and the waiting events as two Arrow IPC streams: one value each in the
        state store, written and read at once (a list state's row per key or event costs
        Spark tens of microseconds each way)."""
        return _arrow_bytes(self.keys), _arrow_bytes(self.pending)

    @staticmethod
    def from_bytes(keys: bytes, pending: bytes) -> Bucket:
        """The bucket :meth:`to_bytes` stored."""
        frame = _arrow_frame(keys)
        for c in _NULLABLE_LONGS:
            if c in frame and frame[c].dtype != "Int64":  # e.g. all null: objects
                frame[c] = pd.array(frame[c].tolist(), dtype="Int64")
        for c in ("config", "asserted", "checkpoints", "windows"):
            if c in frame:
                frame[c] = frame[c].astype(object)
        return Bucket(frame, _arrow_frame(pending))


_NULLABLE_LONGS = ("last_us", "wake_ms", "clock_us", "ahead_us", "opened_us")
"""``Bucket.keys`` columns of longs that may be null (pandas' ``Int64``)."""


def _arrow_bytes(frame: pd.DataFrame) -> bytes:
    import pyarrow as pa

    # One thread: a bucket's few thousand rows cost less than starting pyarrow's pool.
    table = pa.Table.from_pandas(frame, preserve_index=False, nthreads=1)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def _arrow_frame(data: bytes) -> pd.DataFrame:
    import pyarrow as pa

    with pa.ipc.open_stream(data) as reader:
        return reader.read_all().to_pandas()


def step_bucket(spec: BucketRules, bucket: Bucket, events: pd.DataFrame | None,
                watermark_us: int | None) -> tuple[Bucket, pd.DataFrame]:
    """One step of every key of the bucket that has ``events`` (a frame of the input
    columns and :data:`GROUP`) or whose wake-up is due at the watermark; the bucket's
    next state and the output rows (as :func:`spark_udf.keyed.step`'s, key after key)."""
    if events is not None and events[spec.plan.time].isna().any():
        row = int(np.flatnonzero(events[spec.plan.time].isna().to_numpy())[0])
        raise null_time_error("monitor_stream", spec.plan, spec.key_of(events[GROUP].iloc[row]))
    if spec.rules.timed or spec.rules.optimistic or spec.plan.stored_windows:
        return _step_each(spec, bucket, events, watermark_us)
    return _step_all(spec, bucket, events, watermark_us)


# ---------------------------------------------------------------------- key by key

def _step_each(spec: BucketRules, bucket: Bucket, events: pd.DataFrame | None,
               watermark_us: int | None) -> tuple[Bucket, pd.DataFrame]:
    """:func:`spark_udf.keyed.step` for each key with events or due."""
    event_ids, uniques, touched = _number_keys(spec, bucket, events, watermark_us)
    k0 = len(bucket.keys)
    waiting_of = _rows_by_key(bucket.pending_ids(), len(uniques))
    events_of = None if events is None else _rows_by_key(event_ids, len(uniques))
    rows: list[dict[str, Any]] = []
    pending: list[pd.DataFrame] = []
    outputs: list[pd.DataFrame] = []
    for g in range(len(uniques)):
        waiting = bucket.pending.iloc[waiting_of[g]] if g < k0 else None
        if not touched[g]:
            rows.append(_idle_row(spec, bucket.keys.iloc[g].to_dict(), watermark_us))
            if waiting is not None and len(waiting):
                pending.append(waiting)
            continue
        state = _key_state(spec, bucket.keys.iloc[g], waiting) if g < k0 else KeyState()
        mine = None if events_of is None else events.iloc[events_of[g]]
        group = uniques[g]
        new, out = keyed.step(spec.plan, spec.rules, spec.monitor, spec.engine,
                              spec.key_of(group), state, mine if mine is not None and len(mine)
                              else None, watermark_us)
        if len(out):
            outputs.append(out)
        if new is not None:
            rows.append(_key_row(spec, group, new, watermark_us))
            if new.pending is not None:
                pending.append(new.pending[spec.pending_columns])
    keys = pd.DataFrame(rows, columns=spec.key_columns)
    if spec.rules.watermark:
        keys["waiting"] = keys["waiting"].astype(np.int32)
    waiting_rows = _concat([Bucket.empty(spec).pending, *pending])
    rows_out = concat_rows(outputs) if outputs else keyed.no_rows(spec.plan)
    return Bucket(keys, waiting_rows), rows_out


def _rows_by_key(ids: np.ndarray, n_keys: int) -> list[np.ndarray]:
    """Each key's row positions (in order), from the rows' key ids: one stable sort, not a
    scan of every row per key."""
    order = np.argsort(ids, kind="stable")
    bounds = np.searchsorted(ids[order], np.arange(n_keys + 1))
    return [order[bounds[g]:bounds[g + 1]] for g in range(n_keys)]


def _key_state(spec: BucketRules, row: pd.Series, pending: pd.DataFrame | None) -> KeyState:
    """A key's :class:`KeyState` from its row and waiting events."""
    last_us = _int(row.get("last_us"))
    if not spec.rules.watermark:
        last = None if row["config"] is None else tuple(
            plain(row[f"o{i}"]) for i in range(len(spec.plan.order)))
    else:
        last = None if last_us is None else ()  # only whether it processed anything
    sent = ()
    if spec.rules.timed and row["sent_us"] is not None:
        sent = tuple(zip(row["sent_us"], row["sent_status"], row["sent_value"], strict=True))
    waiting = None
    if pending is not None and len(pending):
        waiting = pending[spec.pending_columns].reset_index(drop=True)
    config = None if row["config"] is None else _flat(spec.monitor, [row["config"]])[0]
    asserted, checkpoints = row.get("asserted"), row.get("checkpoints")
    return KeyState(config, last, last_us, waiting, _int(row.get("clock_us")), sent,
                    _int(row.get("ahead_us")), _int(row.get("opened_us")),
                    None if asserted is None else _arrow_frame(asserted),
                    () if checkpoints is None else _checkpoints(spec, checkpoints),
                    windows=_windows(row.get("windows")))


def _idle_row(spec: BucketRules, row: dict[str, Any], watermark_us: int | None
              ) -> dict[str, Any]:
    """The row of a key that did not step: as it was, its window contents compressed if it
    has become idle for D (Algorithm 1's L34–42, seed 001)."""
    data = row.get("windows")
    if data is None or spec.compress_after_us is None or WindowContents.is_compressed(data) \
            or not spec.idle(_int(row.get("last_us")), watermark_us):
        return row
    return {**row, "windows": WindowContents.from_bytes(data).to_bytes(compress=True)}


def _key_row(spec: BucketRules, group: Any, state: KeyState, watermark_us: int | None
             ) -> dict[str, Any]:
    """A key's row of ``Bucket.keys`` from its state (at the watermark of the step)."""
    row: dict[str, Any] = {GROUP: group, "config": None if state.config is None
                           else _config_bytes(spec.monitor, state.config[None, :])[0]}
    if not spec.rules.watermark:
        last = state.last or (None,) * len(spec.plan.order)
        row.update({f"o{i}": v for i, v in enumerate(last)})
    row["last_us"] = state.last_us
    row["wake_ms"] = keyed.wake_ms(state, spec.rules) if spec.rules.watermark else None
    row["waiting"] = 0 if state.pending is None else len(state.pending)
    row["clock_us"], row["ahead_us"] = state.clock_us, state.ahead_us
    row["opened_us"] = state.opened_us
    # Optimistic processing: the rows asserted for the pending events, as Arrow IPC.
    row["asserted"] = None if state.asserted is None else _arrow_bytes(state.asserted)
    row["checkpoints"] = _checkpoint_bytes(spec, state.checkpoints)
    row["windows"] = spec.stored_windows(state.windows, state.last_us, watermark_us)
    sent = [list(column) for column in zip(*state.sent, strict=True)] or [[], [], []]
    row["sent_us"], row["sent_status"], row["sent_value"] = sent
    return {c: row[c] for c in spec.key_columns}


_CHECKPOINT_LONGS = ("position", "rows", "last_us", "clock_us", "opened_us")
"""A stored checkpoint's columns besides its configuration (``config``, bytes)."""


def _checkpoint_bytes(spec: BucketRules, checkpoints: tuple[Checkpoint, ...]) -> bytes | None:
    """A key's optimistic checkpoints as one Arrow IPC value (None: none): a row each,
    the :data:`_CHECKPOINT_LONGS` and the configuration as ``config`` stores it."""
    if not checkpoints:
        return None
    has = np.array([c.state.config is not None for c in checkpoints])
    states = np.stack([spec.monitor.initial_state if c.state.config is None else c.state.config
                       for c in checkpoints])
    frame = pd.DataFrame({"position": [c.position for c in checkpoints],
                          "rows": [c.rows for c in checkpoints],
                          **{f: pd.array([getattr(c.state, f) for c in checkpoints],
                                         dtype="Int64") for f in _CHECKPOINT_LONGS[2:]},
                          "config": _config_bytes(spec.monitor, states, has),
                          "windows": pd.array([None if c.state.windows is None
                                               else c.state.windows.to_bytes()
                                               for c in checkpoints], dtype=object)})
    return _arrow_bytes(frame)


def _checkpoints(spec: BucketRules, data: bytes) -> tuple[Checkpoint, ...]:
    """The checkpoints :func:`_checkpoint_bytes` stored (under a watermark, a state's
    ``last`` only says whether it processed anything: :func:`_key_state`)."""
    frame = _arrow_frame(data)
    blobs = frame["config"].to_numpy(dtype=object)
    stored = [b for b in blobs if b is not None]
    flat = iter(_flat(spec.monitor, stored) if stored else [])
    configs = [None if b is None else next(flat) for b in blobs]
    longs = {f: [_int(v) for v in frame[f].tolist()] for f in _CHECKPOINT_LONGS}
    windows = [_windows(w) for w in frame["windows"].tolist()]
    return tuple(
        Checkpoint(position, rows, KeyState(config, None if last_us is None else (), last_us,
                                            clock_us=clock_us, opened_us=opened_us,
                                            windows=contents))
        for config, contents, position, rows, last_us, clock_us, opened_us in zip(
            configs, windows, *longs.values(), strict=True))


def _windows(data: bytes | None) -> WindowContents | None:
    """A key's window contents as ``windows`` stores them (None: none)."""
    return None if data is None else WindowContents.from_bytes(data)


# ---------------------------------------------------------------------- all keys at once

def _step_all(spec: BucketRules, bucket: Bucket, events: pd.DataFrame | None,
              watermark_us: int | None) -> tuple[Bucket, pd.DataFrame]:
    """The rules of :func:`spark_udf.keyed.step` for an untimed monitor, on every key of
    the bucket at once (module docstring): sort the events out, run the ready ones from
    their keys' configurations, then the keys' next states."""
    plan, m = spec.plan, spec.monitor
    keys = bucket.keys
    if events is None:
        events = bucket.pending.iloc[:0].assign(**{GROUP: []})
    event_ids, uniques, touched = _number_keys(spec, bucket, events, watermark_us)
    n_keys = len(uniques)
    user_keys = np.array([spec.key_of(g) for g in uniques] + [None], dtype=object)[:-1]
    late, ready, waiting = _sort_out(spec, bucket, events, event_ids, uniques, user_keys,
                                     watermark_us)

    configs, has_config = _configs(m, keys, n_keys)
    last_us, known_us = np.full(n_keys, -1, dtype=np.int64), np.zeros(n_keys, dtype=bool)
    if "last_us" in keys:
        known_us[:len(keys)] = keys["last_us"].notna().to_numpy()
        last_us[:len(keys)][known_us[:len(keys)]] = keys["last_us"].dropna().to_numpy(
            dtype=np.int64)
    status, value, finals, segment_key = _run_ready(spec, ready.rows, ready.ids, configs,
                                                    has_config, last_us, known_us, user_keys)
    ends = _group_ends(ready.ids)
    processed = np.zeros(n_keys, dtype=bool)
    processed[ready.ids] = True
    last_segments = _group_ends(segment_key)
    configs[segment_key[last_segments]] = finals[last_segments]
    if spec.rules.watermark:
        last_us[ready.ids[ends]] = ready.rows[TIME_US].to_numpy(dtype=np.int64)[ends]
        known_us |= processed
    has_config |= processed

    outputs = []
    if len(late.rows):
        n_out = len(plan.result_pairs)
        outputs.append(frame_rows(plan, None, late.rows,
                                  np.zeros((len(late.rows), n_out), dtype=np.int8),
                                  np.full((len(late.rows), n_out), np.nan), late=True,
                                  row_keys=user_keys[late.ids]))
    if len(ready.rows):
        outputs.append(frame_rows(plan, None, ready.rows, status, value, late=False,
                                  row_keys=user_keys[ready.ids]))
    rows = concat_rows(outputs) if outputs else keyed.no_rows(plan)

    n_waiting = np.bincount(waiting.ids, minlength=n_keys)
    keep = has_config | (n_waiting > 0)  # a key with nothing processed nor waiting goes
    if spec.rules.ttl_us is not None:  # and so does an idle one (keyed.unless_idle)
        idle = (n_waiting == 0) & known_us & (
            spec.rules.effective(watermark_us) > last_us + spec.rules.ttl_us)
        keep &= ~(touched & idle)
    columns: dict[str, Any] = {GROUP: uniques, "config": _config_bytes(m, configs, has_config)}
    if not spec.rules.watermark:
        columns.update(_last_order(spec, keys, ready.rows, ready.ids, ends, n_keys))
    if "last_us" in spec.key_columns:
        columns["last_us"] = pd.array(np.where(known_us, last_us, 0), dtype="Int64")
        columns["last_us"][~known_us] = pd.NA
    if spec.rules.watermark:
        columns["wake_ms"] = _wake_ms(spec, waiting.rows, waiting.ids, n_keys, last_us,
                                      known_us)
        columns["waiting"] = n_waiting.astype(np.int32)
    frame = pd.DataFrame(columns, columns=spec.key_columns).iloc[np.flatnonzero(keep)]
    # Waiting events are grouped by key in the keys' order, and every key with waiting
    # events is kept: they are Bucket.pending as they are.
    return Bucket(frame.reset_index(drop=True), waiting.rows), rows


@dataclass(frozen=True)
class _Rows:
    """Events and their keys' ids."""

    rows: pd.DataFrame
    ids: np.ndarray


def _sort_out(spec: BucketRules, bucket: Bucket, events: pd.DataFrame, event_ids: np.ndarray,
              uniques: np.ndarray, user_keys: np.ndarray, watermark_us: int | None
              ) -> tuple[_Rows, _Rows, _Rows]:
    """The late events, the events to process now and those that wait (grouped by key,
    each key's in processing order; the waiting ones with ``BucketRules.pending_columns``
    only): ``keyed.sort_out`` on every key; the late-event policy ``"fail"`` raises
    here."""
    plan, rules = spec.plan, spec.rules
    release_us = rules.release_us(watermark_us)
    if not rules.watermark:
        candidates, candidate_ids = events.reset_index(drop=True), event_ids
        order = order_of(candidates, plan, candidate_ids)
        candidates, candidate_ids = candidates.take(order).reset_index(drop=True), \
            candidate_ids[order]
        now = ~_late_without_watermark(spec, bucket.keys, candidates, candidate_ids)
        late = _Rows(candidates[~now], candidate_ids[~now])
        _fail_if_late(spec, bucket, late, user_keys, release_us)
        return late, _Rows(candidates[now], candidate_ids[now]), \
            _Rows(bucket.pending.iloc[:0], candidate_ids[:0])
    behind = events[TIME_US].to_numpy() <= release_us
    late = _Rows(events[behind], event_ids[behind])
    _fail_if_late(spec, bucket, late, user_keys, release_us)
    arrived = events[~behind] if len(late.rows) else events
    candidates = _concat([bucket.pending, arrived[spec.pending_columns]])
    candidate_ids = np.concatenate([bucket.pending_ids(), event_ids[~behind]])
    # Sorted as two groups of keys — the ready events' first, then the waiting ones' —
    # each cut off by a slice, not gathered by a mask.
    waits = candidates[TIME_US].to_numpy() > release_us
    order = order_of(candidates, plan, candidate_ids + len(uniques) * waits)
    candidates, candidate_ids = candidates.take(order).reset_index(drop=True), \
        candidate_ids[order]
    n_ready = len(candidates) - int(np.count_nonzero(waits))
    return late, _Rows(candidates.iloc[:n_ready], candidate_ids[:n_ready]), \
        _Rows(candidates.iloc[n_ready:].reset_index(drop=True), candidate_ids[n_ready:])


def _fail_if_late(spec: BucketRules, bucket: Bucket, late: _Rows, user_keys: np.ndarray,
                  release_us: int | None) -> None:
    """The late-event policy ``"fail"``: raise naming the first late event's key."""
    if not len(late.rows) or spec.rules.late != "fail":
        return
    g = int(late.ids[0])
    state = (_key_state(spec, bucket.keys.iloc[g], None) if g < len(bucket.keys)
             else KeyState())
    keyed.late_rows(spec.plan, spec.rules, user_keys[g], late.rows.iloc[np.flatnonzero(
        late.ids == g)], state, release_us)  # raises


def _run_ready(spec: BucketRules, ready: pd.DataFrame, ready_ids: np.ndarray,
               configs: np.ndarray, has_config: np.ndarray, last_us: np.ndarray,
               known_us: np.ndarray, user_keys: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Run the ready events (grouped by key, in processing order): each key resumes from
    its configuration, afresh where its idle gap exceeds the ttl (``keyed._run``).
    Returns the outputs, the final configuration of each run segment and its key."""
    plan, rules, m = spec.plan, spec.rules, spec.monitor
    n, n_out = len(ready), len(plan.outputs)
    if not n:
        return (np.zeros((0, n_out), dtype=np.int8), np.zeros((0, n_out)),
                configs[:0], ready_ids)
    first = np.ones(n, dtype=bool)
    first[1:] = ready_ids[1:] != ready_ids[:-1]
    fresh = first & ~has_config[ready_ids]
    if rules.ttl_us is not None:
        us = ready[TIME_US].to_numpy(dtype=np.int64)
        gap = np.zeros(n, dtype=bool)
        gap[1:] = (~first[1:]) & (np.diff(us) > rules.ttl_us)
        resumed = first & known_us[ready_ids] & (us - last_us[ready_ids] > rules.ttl_us)
        fresh |= gap | resumed
    starts = first | fresh
    segment = np.cumsum(starts) - 1
    segment_key = ready_ids[starts]
    initial = m.initial_state
    start_states = np.where((first & ~fresh)[starts][:, None], configs[segment_key], initial)
    tags = ready[plan.tag].to_numpy(dtype=object)
    codes = tag_codes(tags, m.alphabet, skip_unknown=True)
    if int(codes.min(initial=0)) < 0 and plan.unknown_tags == "error":
        name_unknown_tag("monitor_stream", "this micro-batch's events", m, spec.engine, tags,
                         codes, ready_ids, user_keys)
    out, finals = m.resume_keys(start_states, segment, codes if int(codes.min(initial=0)) >= 0
                                else tags, event_data(ready, plan), engine=spec.engine,
                                unknown_tags=plan.unknown_tags)  # type: ignore[arg-type]
    return (out.status.reshape(n, n_out).astype(np.int8, copy=False),
            out.value.reshape(n, n_out), finals, segment_key)


def _late_without_watermark(spec: BucketRules, keys: pd.DataFrame, events: pd.DataFrame,
                            ids: np.ndarray) -> np.ndarray:
    """Which events (grouped by key, in processing order) sort before their key's last
    processed event: a prefix of each key's events (``keyed._late_prefix``), found by
    comparing a key's first event and then, only if it is late, the next ones."""
    late = np.zeros(len(events), dtype=bool)
    if not len(events) or not len(keys):
        return late
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    order = spec.plan.order
    cells = [events[c].to_numpy(dtype=object) for c in order]
    lasts = [keys[f"o{i}"].to_numpy(dtype=object) for i in range(len(order))]
    has = keys["config"].notna().to_numpy()
    for start in starts.tolist():
        g = int(ids[start])
        if g >= len(keys) or not has[g]:
            continue
        bound = keyed._sort_key(tuple(plain(last[g]) for last in lasts))
        i = start
        while (i < len(events) and ids[i] == g
               and keyed._sort_key(tuple(plain(c[i]) for c in cells)) < bound):
            late[i] = True
            i += 1
    return late


def _last_order(spec: BucketRules, keys: pd.DataFrame, ready: pd.DataFrame,
                ready_ids: np.ndarray, ends: np.ndarray, n_keys: int) -> dict[str, Any]:
    """Each key's last processed event's order columns: the stored ones, replaced by the
    last ready event's for keys that processed events now."""
    out = {}
    for i, c in enumerate(spec.plan.order):
        column = np.full(n_keys, None, dtype=object)
        column[:len(keys)] = keys[f"o{i}"].to_numpy(dtype=object)
        column[ready_ids[ends]] = ready[c].to_numpy(dtype=object)[ends]
        out[f"o{i}"] = column
    return out


def _wake_ms(spec: BucketRules, waiting: pd.DataFrame, waiting_ids: np.ndarray,
             n_keys: int, last_us: np.ndarray, known_us: np.ndarray) -> Any:
    """:func:`spark_udf.keyed.wake_ms` of every key (untimed: no clock)."""
    rules = spec.rules
    wake = np.full(n_keys, -1, dtype=np.int64)
    has = np.zeros(n_keys, dtype=bool)
    if rules.ttl_us is not None:
        has = known_us.copy()
        wake[has] = (last_us[has] + rules.ttl_us + rules.lateness_us) // 1000 + 1
    if len(waiting):
        first = np.full(n_keys, np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(first, waiting_ids, waiting[TIME_US].to_numpy(dtype=np.int64))
        pending = first < np.iinfo(np.int64).max
        wake[pending] = -(-(first[pending] + rules.lateness_us) // 1000)
        has |= pending
    result = pd.array(wake, dtype="Int64")
    result[~has] = pd.NA
    return result


def _group_ends(ids: np.ndarray) -> np.ndarray:
    """Positions of the last row of each run of equal ids."""
    return np.flatnonzero(np.r_[ids[1:] != ids[:-1], True]) if len(ids) else ids[:0]


def _number_keys(spec: BucketRules, bucket: Bucket, events: pd.DataFrame | None,
                 watermark_us: int | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The keys numbered 0..k−1 — the bucket's keys first, in their order, then new ones:
    the events' key ids, every key's grouped value, and which keys take a step (events,
    or a wake-up due at the watermark)."""
    groups = [bucket.keys[GROUP].to_numpy(dtype=object)]
    if events is not None:
        groups.append(events[GROUP].to_numpy(dtype=object))
    ids, uniques = stream_ids(np.concatenate(groups))
    event_ids = ids[len(bucket.keys):]
    touched = np.zeros(len(uniques), dtype=bool)
    touched[event_ids] = True
    touched[:len(bucket.keys)] |= _due(spec, bucket, watermark_us)
    return event_ids, uniques, touched


def _due(spec: BucketRules, bucket: Bucket, watermark_us: int | None) -> np.ndarray:
    """Which of the bucket's keys have a wake-up at or below the watermark."""
    if not spec.rules.watermark or watermark_us is None or not len(bucket.keys):
        return np.zeros(len(bucket.keys), dtype=bool)
    wake = bucket.keys["wake_ms"].to_numpy(dtype="float64", na_value=np.inf)
    return wake <= watermark_us // 1000


def _concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """The frames' rows (the first frame's columns if none has rows): pandas would warn
    about empty frames taking part in the result's dtypes."""
    full = [f for f in frames if len(f)]
    if not full:
        return frames[0].reset_index(drop=True)
    return full[0].reset_index(drop=True) if len(full) == 1 else pd.concat(full,
                                                                          ignore_index=True)


def _int(x: Any) -> int | None:
    return None if x is None or pd.isna(x) else int(x)


# ---------------------------------------------------------------------- configurations

def _configs(m: Monitor, keys: pd.DataFrame, n_keys: int) -> tuple[np.ndarray, np.ndarray]:
    """Every key's configuration as a :attr:`qre.Session.state` row (the initial one for
    keys without), and which keys have one."""
    states = np.tile(m.initial_state, (n_keys, 1))
    has = np.zeros(n_keys, dtype=bool)
    has[:len(keys)] = keys["config"].notna().to_numpy()
    stored = np.flatnonzero(has)
    if len(stored):
        states[stored] = _flat(m, keys["config"].to_numpy(dtype=object)[stored])
    return states, has


def _flat(m: Monitor, blobs: Any) -> np.ndarray:
    """Configurations stored as bytes (``status uint8[Q]``, ``value float64[Q]``) as
    :attr:`qre.Session.state` rows."""
    q = len(m.dt.states)
    raw = np.frombuffer(b"".join(bytes(b) for b in blobs), dtype=np.uint8).reshape(-1, 9 * q)
    value = np.ascontiguousarray(raw[:, q:]).view(np.float64)
    return np.concatenate([raw[:, :q].astype(np.float64), value], axis=1)


def _config_bytes(m: Monitor, states: np.ndarray, has: np.ndarray | None = None
                  ) -> np.ndarray:
    """:attr:`qre.Session.state` rows as the bytes stored (None where ``has`` is false)."""
    q = len(m.dt.states)
    raw = np.concatenate([states[:, :q].astype(np.uint8),
                          np.ascontiguousarray(states[:, q:]).view(np.uint8)], axis=1)
    out = np.full(len(states), None, dtype=object)
    for i in (range(len(states)) if has is None else np.flatnonzero(has).tolist()):
        out[i] = raw[i].tobytes()
    return out
