"""Seed 004's three CER operators, each an Aggregate over time windows, on pandas.

Pipeline position: a DataFrame of events (a time column, payload columns) and the
user's functions → **S&P / T-CER / R-CER** → a DataFrame of outputs. Times follow
:mod:`qre.runtime.times` (integers of ``time_unit`` exact, floats and datetimes to the
microsecond; stamps back in the input's type); durations are numbers of ``time_unit``
or text (``"30s"``), whole numbers of δ.

* :func:`sort_and_preprocess` — S&P (seed 004 §3, Theorem 1): the tuples sharing a key
  and a timestamp, handed together to ``f_p`` in time order; its outputs carry their
  group's key and time. The key defaults to the whole tuple (``f_K*``: identical tuples).
  As an Aggregate: a tumbling window of δ per key, each instance one group.
* :func:`time_based_cer` — T-CER (§4, Theorem 2): ``f_c(state, row) -> (state,
  outputs)`` runs from a fresh state over the tuples (equal times in arrival order)
  of each window instance
  ``[l, l + size)`` (l a multiple of ``slide``), and an output (a pattern instance, with
  ``first`` and ``last``: its least and greatest times) is kept by the instance unless
  it falls inside the next one ``[l + slide, l + slide + size)``: so each instance
  shorter than ``d_c`` is reported exactly once, by the last window holding it —
  ``l = ⌊first / slide⌋ · slide`` — when ``slide ≤ size − d_c + δ`` and ``size ≥ d_c``,
  checked before anything runs. Instances of ``d_c`` or longer are not T-CER's and are
  dropped. The key defaults to none (``f_K∅``: every tuple together). ``f_c`` may also
  be a :class:`~qre.runtime.cer.matches.Matcher`: its matches are the instances.
* :func:`rule_based_cer` — R-CER (§5, Theorem 3): ``f_m(state, row) -> (state,
  outputs)`` over each key's tuples in event-time order, ties by ``f_t(row)`` (then
  arrival: ``f_T*``); outputs are stamped with their input tuple's time. The key
  defaults to none: one state for the stream (the seed's text; its formula writes
  ``f_K*``, which §2.1 defines as per tuple).

Rows reach the user's functions as dicts of the frame's columns (the time as given);
outputs are dicts (or a list of them; None for none). Cost: one Python call per tuple
(per group for S&P) and, for T-CER, per tuple and window holding it (``size / slide``
windows; the Matcher runs its kernel per window instead).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import pairwise
from typing import Any

import numpy as np
import pandas as pd

from ...language.clock import UNIT_NS
from ...language.match_query import has_ending
from ..times import TimeScale, duration_count, event_times
from .matches import Matcher, conditions

__all__ = ["rule_based_cer", "sort_and_preprocess", "time_based_cer"]

Row = dict[str, Any]
Outputs = Row | Iterable[Row] | pd.DataFrame | None


def sort_and_preprocess(frame: pd.DataFrame, f_p: Callable[[pd.DataFrame], Outputs], *,
                        time: str = "time", key: str | Sequence[str] | None = None,
                        time_unit: str = "s") -> pd.DataFrame:
    """S&P: ``f_p(group)`` once per (key, timestamp) group, groups in time order per key
    (keys in order of first appearance), each group's rows in input order; its outputs
    with the group's key columns and ``time``."""
    clock, scale = _times(frame, time, time_unit)
    keys = [c for c in frame.columns if c != time] if key is None else _columns(frame, key)
    ids = _key_ids(frame, keys)
    order = np.lexsort((np.arange(len(frame)), clock, ids))
    out: list[Row] = []
    for lo, hi in _runs(ids[order], clock[order]):
        rows = order[lo:hi]
        group = frame.iloc[rows].reset_index(drop=True)
        stamp = {**{k: frame[k].iloc[rows[0]] for k in keys if key is not None},
                 time: scale.stamps(clock[rows[:1]])[0]}
        out += [{**stamp, **o} for o in _outputs(f_p(group), "f_p")]
    labels = keys if key is not None else []
    return pd.DataFrame(out, columns=[*labels, time] if not out else None)


def time_based_cer(frame: pd.DataFrame, f_c: Callable[[Any, Row], tuple[Any, Outputs]] | Matcher,
                   *, d_c: float | str, size: float | str | None = None,
                   slide: float | str | None = None, time: str = "time",
                   key: str | Sequence[str] | None = None, tag: str = "tag",
                   time_unit: str = "s") -> pd.DataFrame:
    """T-CER (module docstring): rows ``key`` columns, ``start`` (the reporting window's
    l), ``time`` (its end − δ), ``first``, ``last`` and the instance's fields. Window
    ``size`` defaults to 2·``d_c`` and ``slide`` to ``size − d_c`` (δ if that is 0): each
    tuple is in about two windows. A Matcher reads the ``tag`` column and its values, and its
    instances carry ``rows`` (input rows) and ``vars``."""
    clock, scale = _times(frame, time, time_unit)
    dc = duration_count(d_c, scale, time_unit, "d_c")
    ws = 2 * dc if size is None else duration_count(size, scale, time_unit, "size")
    wa = max(ws - dc, 1) if slide is None else duration_count(slide, scale, time_unit, "slide")
    if ws < dc:
        raise ValueError(f"T-CER needs size ≥ d_c (WS ≥ D_C): size is {ws} δ, d_c {dc} δ")
    if wa > ws - dc + 1:
        raise ValueError(f"T-CER needs slide ≤ size − d_c + δ (WA ≤ WS − D_C + δ): slide is "
                         f"{wa} δ, size − d_c + δ is {ws - dc + 1} δ: a pattern could fall "
                         f"across every window and never be reported")
    keys = [] if key is None else _columns(frame, key)
    ids = _key_ids(frame, keys)
    records = frame.to_dict("records")
    order = np.lexsort((np.arange(len(frame)), clock, ids))
    out: list[Row] = []
    for lo, hi in _runs(ids[order], np.zeros(len(order), dtype=np.int64)):
        rows = order[lo:hi]
        labels = {k: frame[k].iloc[rows[0]] for k in keys}
        for start in _window_starts(clock[rows], wa, ws):
            inside = rows[(clock[rows] >= start) & (clock[rows] < start + ws)]
            found = _instances(f_c, frame, records, inside, clock, scale, tag)
            for first, last, fields in found:
                if last - first >= dc or (first >= start + wa and last < start + wa + ws):
                    continue  # not T-CER's, or the next window reports it
                out.append({**labels, "start": start, "time": start + ws - 1,
                            "first": first, "last": last, **fields})
    result = pd.DataFrame(out, columns=[*keys, "start", "time", "first", "last"]
                          if not out else None)
    for c in ("start", "time", "first", "last"):
        result[c] = scale.stamps(result[c].to_numpy(dtype=np.int64))
    return result


def rule_based_cer(frame: pd.DataFrame, f_m: Callable[[Any, Row], tuple[Any, Outputs]], *,
                   time: str = "time", key: str | Sequence[str] | None = None,
                   f_t: Callable[[Row], Any] | None = None, initial: Any = None,
                   time_unit: str = "s") -> pd.DataFrame:
    """R-CER (module docstring): rows ``key`` columns, ``time`` (the input tuple's),
    ``row`` (its input row) and each output's fields, per key in processing order."""
    clock, scale = _times(frame, time, time_unit)
    keys = [] if key is None else _columns(frame, key)
    ids = _key_ids(frame, keys)
    records = frame.to_dict("records")
    order = np.lexsort((np.arange(len(frame)), clock, ids))
    if f_t is not None:  # ties among equal (key, time) by f_t, then arrival (stable)
        ranks = sorted(range(len(order)), key=lambda j: (ids[order[j]], clock[order[j]],
                                                         f_t(records[order[j]])))
        order = order[ranks]
    out: list[Row] = []
    state, current = initial, None
    for i in order:
        if ids[i] != current:
            state, current = initial, ids[i]
        state, produced = f_m(state, records[i])
        stamp = {**{k: records[i][k] for k in keys}, "time": clock[i], "row": int(i)}
        out += [{**stamp, **o} for o in _outputs(produced, "f_m")]
    result = pd.DataFrame(out, columns=[*keys, "time", "row"] if not out else None)
    result["time"] = scale.stamps(result["time"].to_numpy(dtype=np.int64))
    return result


def _instances(f_c: Callable[[Any, Row], tuple[Any, Outputs]] | Matcher, frame: pd.DataFrame,
               records: list[Row], rows: np.ndarray, clock: np.ndarray, scale: TimeScale,
               tag: str) -> Iterable[tuple[int, int, Row]]:
    """The pattern instances ``f_c`` finds in one window's rows (in processing order),
    with their first and last times in δ."""
    if isinstance(f_c, Matcher):
        yield from _matcher_instances(f_c, frame, rows, clock, scale, tag)
        return
    state = None
    for i in rows:
        state, produced = f_c(state, records[i])
        for o in _outputs(produced, "f_c"):
            if "first" not in o or "last" not in o:
                raise ValueError(f"f_c's output {o!r} lacks 'first' or 'last' (the least and "
                                 f"greatest times of its pattern instance)")
            first, last = (scale.point(o[f], f"f_c's {f}") for f in ("first", "last"))
            yield first, last, {k: v for k, v in o.items() if k not in ("first", "last")}


def _matcher_instances(m: Matcher, frame: pd.DataFrame, rows: np.ndarray, clock: np.ndarray,
                       scale: TimeScale, tag: str) -> Iterable[tuple[int, int, Row]]:
    from codegen.cer.kernel import run_matches

    if m.query.skip != "no_skip" or m.query.consume or has_ending(m.query.pattern):
        raise ValueError("T-CER needs a match query whose matches depend on their own events "
                         "only: no skip policy, no consume, no negation at the end")
    if tag not in frame.columns:
        raise ValueError(f"no tag column {tag!r} (columns: {', '.join(map(str, frame))})")
    records = None if m.derivation is None else {  # derived tags read the columns
        str(c): frame[c].to_numpy()[rows] for c in frame.columns}
    codes = m._codes(frame[tag].to_numpy()[rows], records, "error")
    sat = conditions(codes, len(m.alphabet))
    tables = m.tables(UNIT_NS[scale.unit])
    _, offsets, events, positions, *_ = run_matches(tables, sat, clock[rows])
    for j in range(len(offsets) - 1):
        ev = events[offsets[j]:offsets[j + 1]]
        yield int(clock[rows[ev[0]]]), int(clock[rows[ev[-1]]]), {
            "rows": rows[ev].tolist(),
            "vars": [tables.position_names[p] for p in positions[offsets[j]:offsets[j + 1]]]}


def _window_starts(times: np.ndarray, slide: int, size: int) -> list[int]:
    """The starts l (multiples of ``slide``) of the windows [l, l + size) holding a time."""
    ks: set[int] = set()
    for t in np.unique(times).tolist():
        ks.update(range((t - size) // slide + 1, t // slide + 1))
    return [k * slide for k in sorted(ks)]


def _times(frame: pd.DataFrame, time: str, time_unit: str) -> tuple[np.ndarray, TimeScale]:
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"expected a pandas DataFrame of events, not {type(frame).__name__}")
    if time not in frame.columns:
        raise ValueError(f"no time column {time!r} (columns: {', '.join(map(str, frame))})")
    return event_times(frame[time], time_unit)


def _columns(frame: pd.DataFrame, key: str | Sequence[str]) -> list[str]:
    names = [key] if isinstance(key, str) else list(key)
    for name in names:
        if name not in frame.columns:
            raise ValueError(f"no key column {name!r} (columns: {', '.join(map(str, frame))})")
    return names


def _key_ids(frame: pd.DataFrame, keys: list[str]) -> np.ndarray:
    """Key ids numbered by first appearance (0 for every row without keys)."""
    if not keys:
        return np.zeros(len(frame), dtype=np.int64)
    return frame.groupby(keys, sort=False, dropna=False).ngroup().to_numpy(dtype=np.int64)


def _runs(ids: np.ndarray, clock: np.ndarray) -> list[tuple[int, int]]:
    """The [lo, hi) runs of equal (id, time) in sorted arrays."""
    change = np.flatnonzero((np.diff(ids) != 0) | (np.diff(clock) != 0)) + 1
    bounds = [0, *change.tolist(), len(ids)] if len(ids) else []
    return list(pairwise(bounds))


def _outputs(produced: Outputs, what: str) -> list[Row]:
    """A function's outputs as a list of dicts."""
    if produced is None:
        return []
    if isinstance(produced, pd.DataFrame):
        return produced.to_dict("records")
    if isinstance(produced, Mapping):
        return [dict(produced)]
    try:
        items = list(produced)
    except TypeError:
        raise TypeError(f"{what} returns dicts (or a list of them, a DataFrame, None), not "
                        f"{type(produced).__name__}") from None
    if not all(isinstance(o, Mapping) for o in items):
        raise TypeError(f"{what} returns dicts (or a list of them, a DataFrame, None)")
    return [dict(o) for o in items]
