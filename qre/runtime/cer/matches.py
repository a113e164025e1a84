"""Running ``match(p, options)`` queries: keyed events in, one row per match out.

Pipeline position: a checked :class:`~qre.language.ast.MatchRows` → its
:class:`~dt.cer.pattern.MatchQuery` for the run's δ (:mod:`qre.language.match_query`) →
the match kernel (:mod:`codegen.cer`) per key → a pandas DataFrame.

Events are ordered per key as every timed run orders them (S&P, seed 004 §3: time,
then ``tiebreak``, the tag's text, the values, the input position:
:mod:`qre.runtime.order`); :meth:`Matcher.run` keeps each key's rows in input order.
Derived tags (``tag hot = reading where cur.temp > 30;``) are applied first.

Rows (``per="match"``, MATCH_RECOGNIZE's ONE ROW PER MATCH): ``key`` (with ``keys``),
``match`` (numbered from 0 in the output's order: per key in the keys' order of first
appearance, then emission order), ``start`` and ``end`` (the times of the match's first
and last events), ``time`` (its stamp: the end, or for a negation at the end the first
event's time + within − δ, the last instant the absent event could have come, and for
a timed-out partial match the time it timed out − δ),
``rows`` (the input rows of its events, in order) and ``vars`` (the variable each plays).
``per="event"`` (ALL ROWS PER MATCH): a row per matched event — ``key``, ``match``,
``var``, ``row``, ``time`` (the event's). A match's rows are a subset of the input's:
zero, one or many matches may end at one event, and one event may be in many matches.

Cost: the kernel's O(positions + transitions) per event plus the matches' enumeration
(:mod:`codegen.cer.kernel`); one kernel call per key.
"""

from __future__ import annotations

import gc
import math
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

from codegen.cer.tables import MatchTables, match_tables
from dt.cer.automaton import automaton

from ...language import ast
from ...language.derive import Derivation
from ...language.match_query import durations_used, match_query
from .. import columns
from ..keys import key_streams
from ..order import processing_events
from ..tag_codes import tag_codes
from ..times import TimeScale, event_times

if TYPE_CHECKING:
    from .session import MatchSession

__all__ = ["Matcher", "conditions", "with_measures"]

_UNTIMED_DELTA_NS = 1
"""δ of an untimed run: no duration is read (:func:`durations_used` is false)."""


@dataclass(frozen=True, eq=False)
class Matcher:
    """A compiled ``match(...)`` query: ``qre(text)`` returns one for such a query."""

    query: ast.MatchRows
    alphabet: tuple[str, ...]
    derivation: Derivation | None = None
    source: str | None = None
    _tables: dict[int, MatchTables] = field(default_factory=dict, repr=False)

    def __repr__(self) -> str:
        return f"Matcher({self.source!r})" if self.source else f"Matcher({self.query!r})"

    def tables(self, delta_ns: int) -> MatchTables:
        """The kernel's tables for a run of resolution δ = ``delta_ns`` (cached)."""
        if delta_ns not in self._tables:
            query = match_query(self.query, self.alphabet, delta_ns)
            self._tables[delta_ns] = match_tables(query, automaton(query))
        return self._tables[delta_ns]

    def run(self, tags: Any, values: Any = None, *, keys: Any = None,
            per: Literal["match", "event"] = "match",
            unknown_tags: Literal["error", "skip"] = "error") -> pd.DataFrame:
        """The matches of each key's events in input order (no times: a query with a
        ``within`` or a ``gap`` needs :meth:`run_timed`). Columns as :meth:`run_timed`'s,
        without ``start``, ``end`` and ``time``."""
        if durations_used(self.query):
            raise ValueError("this match query reads event times (within or gap): run it "
                             "with run_timed")
        codes = self._codes(tags, values, unknown_tags)
        n = len(codes)
        (key_ids, key_values) = key_streams(keys, n)
        kept = np.flatnonzero(codes >= 0)
        order = kept[np.argsort(key_ids[kept], kind="stable")]
        rows = self._rows(order, key_ids[order], np.zeros(len(order), dtype=np.int64), codes,
                          key_values, keys is not None, None, per, _UNTIMED_DELTA_NS)
        return self._with_measures(rows, values, per)

    def run_timed(self, times: Any, tags: Any, values: Any = None, *, keys: Any = None,
                  time_unit: str = "s", per: Literal["match", "event"] = "match",
                  unknown_tags: Literal["error", "skip"] = "error",
                  tiebreak: Any = None) -> pd.DataFrame:
        """The matches of each key's events in event-time order (module docstring); the
        input is complete (a negation at the end is decided at its end)."""
        times = columns.column(times, "times")
        clock, scale = event_times(times, time_unit)
        codes = self._codes(tags, values, unknown_tags)
        n = len(codes)
        if len(clock) != n:
            raise ValueError(f"times has {len(clock)} entries but there are {n} tags")
        key_ids, key_values = key_streams(keys, n)
        kept = None if int(codes.min(initial=0)) >= 0 else np.flatnonzero(codes >= 0)
        in_order = processing_events(key_ids, clock, tags, codes, self.alphabet,
                                     columns.values(values), tiebreak, rows=kept)
        rows = self._rows(in_order.order, in_order.key, in_order.time, codes, key_values,
                          keys is not None, scale, per, _delta_ns(scale))
        return self._with_measures(rows, values, per)

    def session(self, time_unit: str = "s", per: Literal["match", "event"] = "match"
                ) -> MatchSession:
        """A run over input that comes in parts: ``feed`` each part (with a watermark,
        ``until``), ``close`` at its end; the rows are :meth:`run_timed`'s over the whole
        input (:mod:`qre.runtime.cer.session`)."""
        from .session import MatchSession

        return MatchSession(self, time_unit, per)

    def _with_measures(self, rows: pd.DataFrame, values: Any, per: str) -> pd.DataFrame:
        """``rows`` (per match) with a column per measure (:func:`with_measures`) reading
        the input's values."""
        if per != "match" or not self.query.measures:
            return rows
        data = columns.values(values)
        return with_measures(rows, self.query.measures,
                             lambda x: _measured(data, x.field, x.name))

    def _codes(self, tags: Any, values: Any, unknown_tags: str) -> np.ndarray:
        if unknown_tags not in ("error", "skip"):
            raise ValueError(f"unknown_tags must be 'error' or 'skip', got {unknown_tags!r}")
        codes = tag_codes(tags, self.alphabet, skip_unknown=unknown_tags == "skip")
        if self.derivation is not None:
            codes = self.derivation.apply(codes, columns.values(values))
        return codes

    def _rows(self, order: np.ndarray, key: np.ndarray, time: np.ndarray, codes: np.ndarray,
              key_values: np.ndarray, keyed: bool, scale: TimeScale | None, per: str,
              delta_ns: int) -> pd.DataFrame:
        """The kernel per key over ``order`` (rows grouped by key, each key's in
        processing order), as the frame of the module docstring."""
        if per not in ("match", "event"):
            raise ValueError(f"per must be 'match' or 'event', got {per!r}")
        tables = self.tables(delta_ns)
        bounds = np.flatnonzero(np.diff(key, prepend=-1, append=-1)) if len(key) else \
            np.zeros(1, dtype=np.int64)
        # keys in chunks of about _CHUNK events, so that the kernel's input (the sat
        # matrix) stays bounded whatever the number of events
        found: list[_Found] = []
        g = 0
        while g < len(bounds) - 1:
            end = max(g + 1, int(np.searchsorted(bounds, bounds[g] + _CHUNK, "right")) - 1)
            found.append(self._keys(tables, order, key, time, codes, bounds[g:end + 1]))
            g = end
        return _frame(found, tables, key_values, keyed, scale, per)

    def _keys(self, tables: MatchTables, order: np.ndarray, key: np.ndarray,
              time: np.ndarray, codes: np.ndarray, bounds: np.ndarray) -> _Found:
        """The matches of the keys whose rows (of ``order``) are ``bounds[j]:bounds[j + 1]``,
        through the kernel in one call (:func:`codegen.cer.kernel.run_keys`)."""
        from codegen.cer.kernel import run_keys  # Numba: imported when a run needs it

        lo, hi = bounds[0], bounds[-1]
        rows = order[lo:hi]
        out, per_key = run_keys(tables, conditions(codes[rows], len(self.alphabet)),
                                time[lo:hi], bounds - lo)
        # each match's key (a number of the chunk's), its events as positions in the chunk
        groups = np.arange(len(bounds) - 1)
        keys, t_keys = np.repeat(groups, per_key[:, 0]), np.repeat(groups, per_key[:, 1])
        first = bounds[:-1] - lo
        out = (out[0], out[1], out[2] + np.repeat(first[keys], np.diff(out[1])), out[3],
               out[4], out[5], out[6] + np.repeat(first[t_keys], np.diff(out[5])), *out[7:])
        key_of, offsets, events, positions, timed_out, stamps = _merged(
            out, bool(len(tables.ending)), keys, t_keys)
        return (key[lo + first[key_of]], offsets, rows[events], time[lo:hi][events], positions,
                timed_out, stamps)


_CHUNK = 1 << 20
"""Events per call of the match kernel over many keys (a key's own are never split)."""


_Found = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray,
               np.ndarray]
"""Matches: each one's key id, their offsets into the next three (per event: input rows,
times, positions), whether each is a timed-out partial match, and when it timed out (0
for a match)."""


def _merged(out: tuple[np.ndarray, ...], ending: bool, keys: np.ndarray, t_keys: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The kernel's matches and timed-out partial matches (``keys``, ``t_keys``: each
    one's key, key after key) in each key's emission order: at one event, matches
    released by time, then timeouts, then the matches the event completes
    (``dt.cer.pattern``); as each one's key, their offsets, events, positions, whether
    each timed out and when (0 for a match)."""
    (emitted, offsets, events, positions, t_emitted, t_offsets, t_events, t_positions,
     t_stamps) = out
    if len(t_emitted) == 0:
        none = np.zeros(len(emitted), dtype=np.int64)
        return keys, offsets, events, positions, none.astype(np.bool_), none
    phase = np.concatenate([np.full(len(emitted), 0 if ending else 2), np.ones(len(t_emitted))])
    order = np.lexsort((phase, np.concatenate([emitted, t_emitted]),
                        np.concatenate([keys, t_keys])))
    lengths = np.concatenate([np.diff(offsets), np.diff(t_offsets)])[order]
    starts = np.concatenate([offsets[:-1], len(events) + t_offsets[:-1]])[order]
    bounds = np.concatenate([[0], np.cumsum(lengths)])
    # each match's events, in the new order: its start plus 0, 1, … (no loop per match)
    picked = np.repeat(starts - bounds[:-1], lengths) + np.arange(bounds[-1])
    return (np.concatenate([keys, t_keys])[order], bounds,
            np.concatenate([events, t_events])[picked],
            np.concatenate([positions, t_positions])[picked], order >= len(emitted),
            np.concatenate([np.zeros(len(emitted), dtype=np.int64), t_stamps])[order])


def conditions(codes: np.ndarray, width: int) -> np.ndarray:
    """The kernel's ``sat`` bool[n, width]: each event satisfies its tag's condition."""
    sat = np.zeros((len(codes), width), dtype=np.bool_)
    sat[np.arange(len(codes)), codes] = True
    return sat


def with_measures(rows: pd.DataFrame, measures: tuple[ast.Measure, ...],
                  read: Callable[[ast.Measure], np.ndarray]) -> pd.DataFrame:
    """``rows`` (per match) with a column per measure: the function of the values of
    each match's events bound to its variable (:func:`_per_match`); ``read(measure)``
    gives the values the measure reads, indexed by the numbers in ``rows``."""
    lengths = np.array([len(r) for r in rows["rows"]], dtype=np.int64)
    match = np.repeat(np.arange(len(rows)), lengths)
    events = np.array([r for rs in rows["rows"] for r in rs], dtype=np.int64)
    names = np.array([v for vs in rows["vars"] for v in vs], dtype=object)
    for measure in measures:
        picked = names == measure.var
        values_read = (np.ones(int(picked.sum())) if measure.function == "count" else
                       read(measure)[events[picked]])
        rows[measure.name] = _per_match(measure.function, match[picked], values_read,
                                        len(rows))
    if "timeout" in rows:  # last, as on Spark
        rows["timeout"] = rows.pop("timeout")
    return rows


def _per_match(function: str, match: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """``function`` of each match's ``values`` (grouped by ``match``, in event order):
    count; sum and avg exact (``math.fsum``: rounded once); min and max (NaN if one is
    NaN); first and last; NaN for a match without such an event (count 0)."""
    out = np.zeros(n, dtype=np.int64) if function == "count" else np.full(n, np.nan)
    if len(match) == 0:
        return out
    ids, starts = np.unique(match, return_index=True)
    ends = np.append(starts[1:], len(match))
    if function in ("count", "first", "last", "min", "max"):
        pick = {"count": lambda: ends - starts, "first": lambda: values[starts],
                "last": lambda: values[ends - 1],
                "min": lambda: np.minimum.reduceat(values, starts),
                "max": lambda: np.maximum.reduceat(values, starts)}[function]
        out[ids] = pick()
        return out
    for i, lo, hi in zip(ids, starts, ends, strict=True):
        total = math.fsum(values[lo:hi])
        out[i] = total if function == "sum" else total / (hi - lo)
    return out


def _measured(data: Any, field: str | None, measure: str) -> np.ndarray:
    """The float64 values a measure reads: ``cur`` (the values column) or a field of
    records; a ValueError naming the measure when the values do not have it."""
    if field is None:
        if data is None or isinstance(data, Mapping | pd.DataFrame):
            raise ValueError(f"measure {measure} reads the event values (cur): pass one "
                             f"column of values")
        return np.asarray(data, dtype=np.float64)
    if not isinstance(data, Mapping | pd.DataFrame) or field not in data:
        raise ValueError(f"measure {measure} reads the field {field!r}: pass values as "
                         f"records (a dict of columns or a DataFrame) with it")
    return np.asarray(data[field], dtype=np.float64)


def _delta_ns(scale: TimeScale) -> int:
    from ...language.clock import UNIT_NS

    return UNIT_NS[scale.unit]


def _frame(found: list[_Found], tables: MatchTables, key_values: np.ndarray, keyed: bool,
           scale: TimeScale | None, per: str) -> pd.DataFrame:
    """The output rows of the matches found per key (module docstring)."""
    names = np.array(tables.position_names, dtype=object)
    keys = _cat([f[0] for f in found])
    match_ids = np.arange(len(keys), dtype=np.int64)
    frame: dict[str, Any] = {}
    if per == "event":
        lengths = np.concatenate([np.diff(o) for _, o, *_ in found]) if found else \
            np.zeros(0, dtype=np.int64)
        if keyed:
            frame["key"] = key_values[np.repeat(keys, lengths)]
        frame["match"] = np.repeat(match_ids, lengths)
        frame["var"] = names[_cat([f[4] for f in found])]
        frame["row"] = _cat([f[2] for f in found])
        if scale is not None:
            frame["time"] = scale.stamps(_cat([f[3] for f in found]))
        if tables.timeouts:
            frame["timeout"] = np.repeat(np.concatenate([f[5] for f in found]) if found else
                                         np.zeros(0, dtype=np.bool_), lengths)
        return pd.DataFrame(frame)
    # every key's matches at once: one list of the events' rows and one of their
    # variables, sliced per match (a Python loop of list slices, not of numpy calls)
    lengths = np.concatenate([np.diff(o) for _, o, *_ in found]) if found else \
        np.zeros(0, dtype=np.int64)
    bounds = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    flat_rows = _cat([f[2] for f in found]).tolist()
    flat_vars = names[_cat([f[4] for f in found])].tolist()
    cuts = list(zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True))
    with _collector_paused():
        rows = [flat_rows[lo:hi] for lo, hi in cuts]
        variables = [flat_vars[lo:hi] for lo, hi in cuts]
    if keyed:
        frame["key"] = key_values[keys]
    frame["match"] = match_ids
    if scale is not None:
        times = _cat([f[3] for f in found])
        start, end = times[bounds[:-1]], times[bounds[1:] - 1]
        frame["start"] = scale.stamps(start)
        frame["end"] = scale.stamps(end)
        # held for a negation at the end, or timed out: stamped at the last instant it
        # waited for (a timed-out one just before the time it timed out at)
        timed_out = _cat([f[5] for f in found]).astype(np.bool_)
        stamp = np.where(timed_out, _cat([f[6] for f in found]) - 1,
                         start + tables.within - 1 if len(tables.ending) else end)
        frame["time"] = scale.stamps(stamp)
    frame["rows"] = pd.Series(rows, dtype=object)
    frame["vars"] = pd.Series(variables, dtype=object)
    if tables.timeouts:
        frame["timeout"] = np.concatenate([f[5] for f in found]) if found else \
            np.zeros(0, dtype=np.bool_)
    return pd.DataFrame(frame)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while a block makes many lists that hold no
    cycles: with hundreds of thousands of them it would walk them again and again (2-3x
    the cost of making them)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _cat(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
