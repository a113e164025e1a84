"""Event tables → the arrays a monitor runs: tags, keys, values, event-time order.

Pipeline position: beside the monitor (text → … → kernel); it turns a pandas
DataFrame of events (read from CSV or Parquet by the ``qre run`` command,
:mod:`qre.cli`) into the inputs of :meth:`Monitor.run` / :meth:`Monitor.run_keys`
and puts the outputs back at the input rows.

Rules (the CLI's ``run --help`` states them to users):

* rows are counted from 0 over the data rows (a CSV header is not a row);
  every data error is a :class:`FrameError` naming the column and the row;
* a tag must be present (an empty cell is an error) and, unless unknown tags
  are skipped, in the monitor's alphabet;
* a value cell must be a number; an empty cell or NaN is the float NaN, an
  ordinary data value;
* numbers in text are read as Python reads a float literal
  (:func:`parse_numbers`): correctly rounded, beyond the largest float ±inf
  (``1e400`` is ``inf``, as ``inf`` is), whatever the column holds (pandas' own
  parser is off by an ulp on about one number in four, and rejects ``1e400``);
* with a time column, events run in event-time order, ties by the rule of
  :mod:`qre.runtime.order` (``--tiebreak`` columns, the tag, the ``--value`` columns,
  then input position); the outputs are returned in input order. Times are numbers,
  datetimes / timedeltas (as int64 nanoseconds, time-zone aware ones in UTC),
  or text read as numbers or ISO 8601 datetimes (no offset: UTC).

Messages name a column together with the ``qre run`` option that chose it
(``--tag``, ``--value``, ``--time``, ``--key``): the command line is the user
of this module.

Cost: O(n), one pass per column (the time order is the monitor's, :mod:`qre.runtime.order`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from numbers import Real
from typing import Any

import numpy as np
import pandas as pd

from .monitor import Monitor

__all__ = [
    "FrameError",
    "check_tags",
    "event_values",
    "get_column",
    "parse_numbers",
    "tag_column",
    "value_column",
    "value_columns_problem",
    "where",
]


class FrameError(ValueError):
    """A data error in an event table: the message names the column and the row."""


def where(option: str, column: str, row: int) -> str:
    """Where a data error is: rows count the data rows from 0 (a CSV header is not a row)."""
    return f"{option} column {column!r}, row {row} (0-based data row)"


def get_column(frame: pd.DataFrame, name: str, option: str) -> pd.Series:
    """Column ``name``; a missing one is a FrameError listing the columns there are."""
    if name not in frame.columns:
        raise FrameError(f"{option}: no column {name!r} in the input "
                         f"(columns: {', '.join(map(str, frame.columns))})")
    return frame[name]


def tag_column(frame: pd.DataFrame, name: str) -> np.ndarray:
    """The ``--tag`` column as strings; a missing tag (empty cell, null) is a data error."""
    cells = get_column(frame, name, "--tag").to_numpy(dtype=object)
    missing = pd.isna(cells) | (cells == "")
    if missing.any():
        row = int(np.flatnonzero(missing)[0])
        raise FrameError(f"{where('--tag', name, row)}: missing tag (empty cell)")
    return np.array([str(c) for c in cells], dtype=object)


def check_tags(tags: np.ndarray, alphabet: Sequence[str], name: str) -> None:
    """Without --skip-unknown, the first tag outside the alphabet is a data error.

    Checked here rather than left to :meth:`Monitor.run`, whose message names
    the Python keyword ``unknown_tags='skip'`` and a position in the
    (possibly time-sorted) event array, not the input row and the option.
    """
    known = pd.Series(tags, dtype=object).isin(list(alphabet)).to_numpy()
    if not known.all():
        row = int(np.flatnonzero(~known)[0])
        raise FrameError(f"{where('--tag', name, row)}: unknown tag {tags[row]!r}; the "
                         f"query's alphabet is {', '.join(alphabet)}; pass --skip-unknown "
                         f"to drop events with other tags")


def value_column(frame: pd.DataFrame, name: str) -> np.ndarray:
    """A ``--value`` column as float64: numbers, and NaN for missing cells (a legal value)."""
    column = get_column(frame, name, "--value")
    dtype = column.dtype
    if pd.api.types.is_bool_dtype(dtype) or (pd.api.types.is_numeric_dtype(dtype)
                                             and not pd.api.types.is_complex_dtype(dtype)):
        return column.to_numpy(dtype=np.float64, na_value=np.nan)
    if pd.api.types.is_datetime64_any_dtype(dtype) or pd.api.types.is_timedelta64_dtype(dtype):
        bad = column.notna().to_numpy()
    else:  # text (CSV strings) or Python objects: numbers parse, anything else is an error
        cells = column.astype(object)
        numbers, parsed = parse_numbers(cells)
        bad = ~parsed & cells.notna().to_numpy()
        if not bad.any():
            return numbers
    if not bad.any():  # all missing: NaN throughout
        return np.full(len(column), np.nan)
    row = int(np.flatnonzero(bad)[0])
    raise FrameError(f"{where('--value', name, row)}: {column.iloc[row]!r} is not a number")


def event_values(m: Monitor, frame: pd.DataFrame, names: list[str]) -> Any:
    """The events' values: ``cur`` from one --value, or a record of every --value
    column in the order given (``cur.F`` reads column F; all of them order equal
    times, :mod:`qre.runtime.order`), or None without --value.

    The needs are checked here, against the DT as compiled (the optimizer may
    drop reads), so the message speaks of options; every --value column is
    converted (and its data errors reported) even if the query does not read it.
    """
    from .timed import needed_fields

    columns = {name: value_column(frame, name) for name in names}
    source = m._data_reads
    fields = needed_fields(m)
    problem = value_columns_problem(
        fields, source.reads_scalar_cur, names,
        lambda col: "--value COL" if col is None else f"--value {col}")
    if problem is not None:
        raise FrameError(problem)
    if source.reads_scalar_cur:
        return next(iter(columns.values()))
    return columns or None


def value_columns_problem(fields: set[str] | frozenset[str], scalar: bool,
                          names: Sequence[str],
                          spell: Callable[[str | None], str]) -> str | None:
    """What is wrong with the value columns ``names`` for a query that reads plain
    ``cur`` (``scalar``) or the record ``fields``, or None.

    A query reading plain ``cur`` needs exactly one column; one reading ``cur.F``
    needs a column F for each field. ``spell(col)`` words how the caller names
    a value column (``spell(None)``: any one), e.g. ``--value COL`` on the
    command line; the Spark API words it its own way.
    """
    if scalar:
        if len(names) == 1:
            return None
        return (f"the query reads cur (one number per event): give exactly one {spell(None)}, "
                f"not {len(names)}")
    missing = sorted(set(fields) - set(names))
    if not missing:
        return None
    reads = ", ".join(f"cur.{f}" for f in missing)
    return f"the query reads {reads}: add {' '.join(spell(f) for f in missing)}"


def event_times(column: pd.Series, name: str) -> pd.Series:
    """The ``--time`` column as numbers or datetimes (timedeltas as they are).

    Datetimes keep their time zone (a Parquet timestamp with one gives stamps in
    it); text (CSV) is read as numbers if at least as many cells parse as numbers
    as parse as ISO 8601 datetimes, else as naive UTC datetimes (an offset is
    applied; no offset: UTC). A missing or unreadable time is a FrameError naming
    its row.
    """
    dtype = column.dtype
    if pd.api.types.is_datetime64_any_dtype(dtype) or pd.api.types.is_timedelta64_dtype(dtype):
        _no_missing_time(column, name)
        return column
    if pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_complex_dtype(dtype):
        _no_missing_time(column, name)
        return column
    cells = column.astype(object)
    _no_missing_time(cells.map(lambda c: None if isinstance(c, str) and not c.strip() else c),
                     name)
    values, parsed = parse_numbers(cells)
    numbers = pd.Series(np.where(parsed, values, np.nan), index=cells.index)  # NaN: no time
    dates = pd.to_datetime(cells, format="ISO8601", errors="coerce", utc=True)
    n_numbers, n_dates = int(numbers.notna().sum()), int(dates.notna().sum())
    chosen, kind = (numbers, "a number") if n_numbers >= n_dates else (dates, "a datetime")
    bad = chosen.isna().to_numpy()
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        why = ("is neither a number nor an ISO 8601 datetime" if max(n_numbers, n_dates) == 0
               else f"is not {kind} like the column's other times")
        raise FrameError(f"{where('--time', name, row)}: {cells.iloc[row]!r} {why}")
    return dates.dt.tz_convert(None) if chosen is dates else numbers


def parse_numbers(cells: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Cells as float64 numbers, and which ones are numbers: text as Python's ``float``
    reads it (the shortest repr of a float reads back as that float; ``1e400`` is ``inf``
    and ``-1e400`` ``-inf``, as ``inf`` is; ``nan``; surrounding blanks ignored) — but
    only ASCII text without ``_`` (Python also reads ``1_000`` and other scripts'
    digits, which no data file means as numbers); numbers (bools too) as they are.
    Missing cells (None, NaN, ``pd.NA``) are NaN and count as numbers; anything else
    is not a number (NaN, False).

    >>> values, parsed = parse_numbers(pd.Series(["1e400", " 0.1", "1_0", None, "x"]))
    >>> values.tolist()[:2], parsed.tolist()
    ([inf, 0.1], [True, True, False, True, False])
    """
    values = np.full(len(cells), np.nan)
    parsed = np.zeros(len(cells), dtype=bool)
    for k, cell in enumerate(cells):
        number = _number(cell)
        if number is not None:
            values[k], parsed[k] = number, True
    return values, parsed


def _number(cell: object) -> float | None:
    if isinstance(cell, str):
        text = cell.strip()
        if not text.isascii() or "_" in text:
            return None
        try:
            return float(text)
        except ValueError:
            return None
    if isinstance(cell, Real):
        return float(cell)
    return math.nan if pd.isna(cell) is True else None


def _no_missing_time(column: pd.Series, name: str) -> None:
    missing = column.isna().to_numpy()
    if missing.any():
        row = int(np.flatnonzero(missing)[0])
        raise FrameError(f"{where('--time', name, row)}: missing time (empty cell, NaN or "
                         f"NaT); every event needs one with --time")
