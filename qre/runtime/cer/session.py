"""A match query's run that continues across calls: a stream's parts in, matches out.

Pipeline position: beside :meth:`~qre.runtime.cer.matches.Matcher.run_timed`, for input
that arrives in parts (micro-batches, files, a socket): each :meth:`MatchSession.feed`
orders its events per key as ``run_timed`` does and resumes each key's match kernel
from the state the previous part left (:func:`codegen.cer.kernel.step_matches`);
:meth:`MatchSession.close` ends the input.

Meaning: the rows of all the calls are those of one ``run_timed`` over all the events
— the same matches, each emitted at the same event — when every key's events come in
time order across calls (an event before its key's last one fed is a ValueError naming
its row; events of equal time in different calls keep the calls' order). ``until`` (a
watermark, in the time column's unit; ignored before the first event) promises that no
later event comes before it: the
matches held for a negation at the end whose wait is over are emitted then, and the
partial matches that can no longer complete time out, instead of at the key's next
event. Rows: ``run_timed``'s columns; ``rows`` are the events' numbers in the session's
input (from 0 across the calls, in the order fed), ``match`` counts from 0 across the
calls.

State: per key, the live part of the match graph and the events it still names (their
row numbers and the values the measures read), no more: a pattern whose matches can
grow without bound (``plus`` without a ``within``) keeps its events.

Cost: per call, ``run_timed``'s on the call's events, plus O(live state) per key that has
events (and per key, with ``until``).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from itertools import chain, pairwise
from typing import Any, Literal

import numpy as np
import pandas as pd

from .. import columns
from ..keys import key_streams
from ..order import processing_events
from ..times import TimeScale, event_times
from .matches import (
    Matcher,
    _cat,
    _collector_paused,
    _delta_ns,
    _frame,
    _measured,
    _merged,
    conditions,
    with_measures,
)

__all__ = ["MatchSession"]


@dataclass
class _Key:
    """One key's state: the kernel's, and for each event it carries its row number in the
    session's input and the values its measures read (float64[c, measures])."""

    value: Any
    kernel: Any
    rows: np.ndarray
    values: np.ndarray
    last_time: int


class MatchSession:
    """A ``match(...)`` query's run over input that comes in parts (module docstring):
    ``matcher.session(time_unit="s", per="match")``."""

    def __init__(self, matcher: Matcher, time_unit: str = "s",
                 per: Literal["match", "event"] = "match") -> None:
        if per not in ("match", "event"):
            raise ValueError(f"per must be 'match' or 'event', got {per!r}")
        self.matcher = matcher
        self.time_unit = time_unit
        self.per = per
        self._scale: TimeScale | None = None
        self._keys: dict[Any, _Key] = {}
        self._fed = 0
        self._matches = 0
        self._closed = False
        self._keyed: bool | None = None
        self._until = -(2**62)  # the latest ``until``: no event may come before it

    def feed(self, times: Any, tags: Any, values: Any = None, *, keys: Any = None,
             until: Any = None, unknown_tags: Literal["error", "skip"] = "error",
             tiebreak: Any = None) -> pd.DataFrame:
        """The matches these events (and ``until``) complete, as ``run_timed``'s rows."""
        if self._closed:
            raise ValueError("MatchSession.feed: the session is closed")
        m = self.matcher
        clock, scale = event_times(columns.column(times, "times"), self.time_unit)
        if len(clock):  # an empty part's times have no type to go by
            self._check_scale(scale)
        codes = m._codes(tags, values, unknown_tags)
        n = len(codes)
        if len(clock) != n:
            raise ValueError(f"times has {len(clock)} entries but there are {n} tags")
        if self._keyed is not None and self._keyed != (keys is not None):
            raise ValueError("MatchSession.feed: give keys in every part or in none")
        self._keyed = keys is not None
        key_ids, key_values = key_streams(keys, n)
        kept = None if int(codes.min(initial=0)) >= 0 else np.flatnonzero(codes >= 0)
        in_order = processing_events(key_ids, clock, tags, codes, m.alphabet,
                                     columns.values(values), tiebreak, rows=kept)
        measured = self._measured(values, n)
        groups: dict[Any, tuple[np.ndarray, np.ndarray]] = {}
        bounds = np.flatnonzero(np.diff(in_order.key, prepend=-1, append=-1))
        for lo, hi in pairwise(bounds):
            identity = _identity(key_values[in_order.key[lo]])
            if identity not in self._keys:
                self._keys[identity] = self._new_key(key_values[in_order.key[lo]])
            groups[identity] = (in_order.order[lo:hi], in_order.time[lo:hi])
        for identity, (rows, time) in groups.items():  # checked before any key moves on
            key = self._keys[identity]
            if time[0] < max(key.last_time, self._until):
                raise ValueError(f"row {int(rows[0])}: the key {key.value!r} has an event "
                                 f"at time {scale.stamps(time[:1])[0]} before its last one "
                                 f"fed or an earlier part's until (a session's parts go "
                                 f"forward in time)")
        # before the first event there is nothing to release, nor a type to read it as
        limit = None if until is None or self._scale is None else self._watermark(until)
        out = self._step(groups, codes, measured, limit, last=False)
        self._fed += n
        if limit is not None:
            self._until = max(self._until, limit)
        return out

    def close(self) -> pd.DataFrame:
        """End the input: the rows of the matches held for a negation at the end and of
        the partial matches left (timeouts)."""
        if self._closed:
            raise ValueError("MatchSession.close: the session is closed")
        self._closed = True
        return self._step({}, np.zeros(0, dtype=np.int32), None, None, last=True)

    def _step(self, groups: dict[Any, tuple[np.ndarray, np.ndarray]], codes: np.ndarray,
              measured: np.ndarray | None, until: int | None, *, last: bool
              ) -> pd.DataFrame:
        """Each key with events (or every key, with ``until`` or ``last``) through the
        kernel; the rows found, in the keys' order of first appearance."""
        from codegen.cer.kernel import run_matches, step_matches

        m = self.matcher
        tables = m.tables(_delta_ns(self._scale) if self._scale else 1)
        width = len(m.alphabet)
        found, pool_rows, pool_values = [], [], []
        pooled = 0
        for k, (identity, key) in enumerate(self._keys.items()):
            if identity not in groups and until is None and not last:
                continue
            rows, time = groups.get(identity, (np.zeros(0, dtype=np.int64),
                                               np.zeros(0, dtype=np.int64)))
            sat = conditions(codes[rows], width)
            if last:
                out = run_matches(tables, sat, time, key.kernel)
                state = key.kernel
            else:
                out, state = step_matches(tables, sat, time, key.kernel, until)
            all_rows = np.concatenate([key.rows, self._fed + rows])
            all_times = np.concatenate([key.kernel.times, time])
            all_values = (key.values if measured is None else
                          np.concatenate([key.values, measured[rows]]))
            ids, t_ids = np.full(len(out[0]), k), np.full(len(out[4]), k)
            ids, offsets, events, positions, timed_out, stamps = _merged(
                out, bool(len(tables.ending)), ids, t_ids)
            local = events - key.kernel.first
            found.append((ids, offsets, pooled + local, all_times[local], positions, timed_out,
                          stamps))
            pool_rows.append(all_rows)
            pool_values.append(all_values)
            pooled += len(all_rows)
            if not last:
                drop = state.first - key.kernel.first
                key.kernel = state
                key.rows, key.values = all_rows[drop:], all_values[drop:]
                key.last_time = int(time[-1]) if len(time) else key.last_time
        key_values = np.array([key.value for key in self._keys.values()] or [None],
                              dtype=object)
        frame = _frame(found, tables, key_values, bool(self._keyed), self._scale or TimeScale(
            "int", self.time_unit, self.time_unit), self.per)
        if self.per == "match" and m.query.measures and pool_values:
            pool = np.concatenate(pool_values)
            column_of = {x.name: j for j, x in enumerate(m.query.measures)}
            frame = with_measures(frame, m.query.measures,
                                  lambda x: pool[:, column_of[x.name]])
        numbers = _cat(pool_rows)
        if self.per == "match":
            frame["rows"] = _renumbered(frame["rows"], numbers)
        else:
            frame["row"] = numbers[frame["row"].to_numpy(dtype=np.int64)]
        frame["match"] += self._matches
        self._matches += sum(len(f[1]) - 1 for f in found)
        return frame

    @property
    def fed(self) -> int:
        """How many events were fed: the next one's row number."""
        return self._fed

    def named_rows(self) -> np.ndarray:
        """The row numbers the keys' states still name (a caller keeping the rows to
        show a match's events later needs these, no others)."""
        return _cat([key.rows for key in self._keys.values()])

    def saved(self) -> dict[str, Any]:
        """The session's state without its query, picklable: resume it with
        :meth:`resumed` and the same query (a stream's state store keeps it)."""
        return {name: getattr(self, name) for name in _SAVED}

    @classmethod
    def resumed(cls, matcher: Matcher, saved: dict[str, Any]) -> MatchSession:
        """The session :meth:`saved` gave, for the same query."""
        session = cls(matcher, saved["time_unit"], saved["per"])
        for name in _SAVED:
            setattr(session, name, saved[name])
        return session

    def waiting(self) -> bool:
        """Whether time alone may emit rows: a match held for a negation at the end, or a
        partial match that may time out."""
        timeouts = self.matcher.query.timeouts
        return any(int(key.kernel.held_counts[0]) > 0
                   or (timeouts and bool((key.kernel.waiting >= 0).any()))
                   for key in self._keys.values())

    def _measured(self, values: Any, n: int) -> np.ndarray | None:
        """float64[n, measures]: the value each measure reads of each event fed."""
        measures = self.matcher.query.measures
        if not measures:
            return None
        data = columns.values(values)
        out = np.ones((n, len(measures)))
        for j, x in enumerate(measures):
            if x.function != "count":
                out[:, j] = _measured(data, x.field, x.name)
        return out

    def _new_key(self, value: Any) -> _Key:
        from codegen.cer.kernel import MatchState

        tables = self.matcher.tables(_delta_ns(self._scale))
        return _Key(value, MatchState.fresh(tables), np.zeros(0, dtype=np.int64),
                    np.zeros((0, len(self.matcher.query.measures))), -(2**62))

    def _check_scale(self, scale: TimeScale) -> None:
        """The first times fix how the session reads times; later ones must agree."""
        if self._scale is None:
            self._scale = scale
        elif (scale.kind, scale.unit) != (self._scale.kind, self._scale.unit):
            raise ValueError(f"MatchSession.feed: times are {scale.kind} here but were "
                             f"{self._scale.kind} before")

    def _watermark(self, until: Any) -> int:
        """``until`` as a time of the session's scale (a number as the events' numbers
        are: a float for float times, rounded down for whole ones)."""
        kind = self._scale.kind
        if kind == "float" and isinstance(until, numbers.Real):
            until = float(until)
        elif kind == "int" and isinstance(until, float) and math.isfinite(until):
            until = math.floor(until)
        clock, scale = event_times(pd.Series([until]), self.time_unit)
        self._check_scale(scale)
        return int(clock[0])


_SAVED = ("time_unit", "per", "_scale", "_keys", "_fed", "_matches", "_closed", "_keyed",
          "_until")


def _renumbered(rows: pd.Series, numbers: np.ndarray) -> pd.Series:
    """Each match's list of pool positions as the rows' numbers (one lookup for all
    matches, then list slices, as :func:`~.matches._frame` builds them)."""
    lengths = [len(r) for r in rows]
    flat = numbers[np.fromiter(chain.from_iterable(rows), dtype=np.int64,
                               count=sum(lengths))].tolist()
    bounds = np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)]).tolist()
    with _collector_paused():
        lists = [flat[lo:hi] for lo, hi in pairwise(bounds)]
    return pd.Series(lists, index=rows.index, dtype=object)


def _identity(value: Any) -> Any:
    """A key's identity in a dict, by :mod:`qre.runtime.keys`' rule: missing values one
    key, NaN another, −0.0 equal to 0.0."""
    if value is None or value is pd.NA or value is pd.NaT:
        return ("missing",)
    if isinstance(value, float) and math.isnan(value):
        return ("nan",)
    return value
