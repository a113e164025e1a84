"""Event times as a timed run reads them: whole numbers of δ, and back (issue 18, point 8).

Pipeline position: timed events → **times** → order and clock ticks
(:mod:`qre.runtime.timed`, :mod:`qre.language.clock`) → the DT → stamps in the input's type.

The rule. δ, the resolution a run computes in (the granularity of order,
ticks and stamps), depends on the type of the times column, never on its
values, so that results do not depend on how the data is split into calls or
partitions:

=================  ==================================  ==================  ================
times              δ                                   to whole δ          stamps, starts
=================  ==================================  ==================  ================
integers           one ``time_unit``                   exact               int64, time_unit
floats             1 µs (1 ns when time_unit is "ns")  nearest, ties even  float64, time_unit
datetimes          1 µs                                floor (ns → µs)     datetime64[us],
                                                                           the input's zone
=================  ==================================  ==================  ================

Why a microsecond for floats: a float64 count of epoch seconds holds about
0.24 µs (its spacing is 2^-22 s between 2^30 and 2^31 s, i.e. 2004–2038), so a
finer δ would order events by rounding noise, and the microsecond is the
resolution of Spark's timestamps and of the datetimes here. Floats of
nanoseconds keep whole nanoseconds (every float64 above 2^53 ns is one).
Rounding is of the float product t × (δ per time_unit), to the nearest
integer, ties to even — numpy's ``rint`` here, Spark SQL's ``bround`` in
``monitor_stream`` — so every entry point computes the same δ counts from the
same floats, Spark's SQL included. (The product is itself rounded: for the
rare floats within an ulp of a half δ it may round the other way than the
float's exact value would, e.g. ``3.0000005`` s, a hair above 3 000 000.5 µs,
gives the tie 3000000.5 and so 3 000 000 µs; the exact tie ``1/128`` s =
7812.5 µs gives 7812.)

Durations (a window's size and slide, a clock period) must be whole numbers
of δ; a ``within`` duration D is ⌈D / δ⌉ δ (for whole δ, t − s < D exactly
when t − s < ⌈D / δ⌉). Terms read ``cur.time`` in ``time_unit`` (a float:
rounded floats come back as the rounded time; datetimes as microseconds since
the epoch). The watermark is read like the times and floored to δ (ticks
fire at the boundaries at or before it). A time zone is kept: datetimes are
converted to UTC to compute and stamps come back in the input's zone;
naive datetimes stay naive.

Range (issue 19). A time is less than 2**62 δ from the epoch, and so is the
watermark: the clock's ticks past a time and a window's start before it must
fit in int64 (beyond, numpy wrapped them into stamps near −9.2e18). A missing
time, ±inf, a larger one, an unsigned integer beyond int64, a boolean or
anything else that is not a number or a datetime is a :class:`TimeError`
naming its row (:func:`time_series`), which the command line turns into the
``--time`` column and row and Spark into the column and key.
"""

from __future__ import annotations

import datetime
import math
import numbers
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from ..language.clock import UNIT_NS, duration_ns, format_duration
from . import columns

__all__ = ["MICROSECONDS", "TimeError", "TimeScale", "duration_count", "event_times",
           "int64_times", "time_series"]

_MICRO = "us"
_LIMIT = 2**62
"""Times in δ lie strictly within ±_LIMIT (int64 with room for the ticks past them and
the window starts before them)."""


@dataclass(frozen=True)
class TimeScale:
    """How a run's times map to int64 counts of δ (``unit``) and back (module docstring)."""

    kind: Literal["int", "float", "datetime"]
    unit: str
    """The unit of δ: ``time_unit`` for integers, ``us`` for datetimes and most floats."""
    time_unit: str
    """What the input numbers count."""
    tz: Any = None
    """The time zone of the input datetimes (None: naive, or not datetimes)."""

    @property
    def per_unit(self) -> int:
        """δ per ``time_unit`` (1 for integers and datetimes)."""
        return UNIT_NS[self.time_unit] // UNIT_NS[self.unit] if self.kind == "float" else 1

    def whole(self, ns: int, what: str) -> int:
        """The duration ``ns`` as a whole number of δ; a ValueError naming ``what`` if it is
        not one, saying how to reach a finer δ."""
        count, rest = divmod(ns, UNIT_NS[self.unit])
        if rest == 0:
            return count
        if self.kind == "int":
            hint = (f"is not a whole number of the time unit {self.unit!r}: give the times as "
                    f"integers of a finer unit and name it with time_unit")
        else:
            hint = (f"is finer than a microsecond, the resolution of "
                    f"{'float' if self.kind == 'float' else 'datetime'} times: give the times "
                    f"as integers of a finer unit (e.g. of ns with time_unit='ns')")
        raise ValueError(f"{what} ({format_duration(ns)}) {hint}")

    def ceil(self, ns: int) -> int:
        """The duration ``ns`` rounded up to whole δ (a ``within``'s bound)."""
        return -(-ns // UNIT_NS[self.unit])

    def time_values(self, counts: np.ndarray) -> np.ndarray:
        """``cur.time`` at these times: float64 in ``time_unit`` (µs for datetimes)."""
        return counts.astype(np.float64) / self.per_unit

    def stamps(self, counts: np.ndarray) -> Any:
        """Times in δ as values of the input's type: int64 or float64 in ``time_unit``, or
        datetimes in the input's time zone."""
        if self.kind == "int":
            return counts
        if self.kind == "float":
            return self.time_values(counts)
        naive = counts.astype(f"datetime64[{_MICRO}]")
        if self.tz is None:
            return naive
        return pd.DatetimeIndex(naive).tz_localize("UTC").tz_convert(self.tz).array

    def point(self, value: Any, what: str) -> int:
        """One time like the column's (a watermark), floored to whole δ: a datetime for
        datetimes, a number for numbers (a duration is neither), within ±2**62 δ."""
        if isinstance(value, np.timedelta64 | datetime.timedelta):  # numpy: an integer
            raise ValueError(f"{what} is a duration ({value!r}), not a "
                             f"{'datetime' if self.kind == 'datetime' else 'number'} like "
                             f"the times")
        if self.kind == "datetime":
            if isinstance(value, int | float | np.number):
                raise ValueError(f"{what} is a number but the times are datetimes")
            stamp = pd.Timestamp(value)
            if stamp.tz is not None:
                stamp = stamp.tz_convert("UTC").tz_localize(None)
            return int(stamp.as_unit("ns").value) // UNIT_NS[_MICRO]
        if isinstance(value, bool) or not isinstance(value, int | float | np.number):
            raise ValueError(f"{what} is {value!r}, not a number like the times")
        if isinstance(value, int | np.integer):
            count: float = int(value) * self.per_unit
        else:
            count = float(value) * self.per_unit
        if not -_LIMIT < count < _LIMIT:  # NaN too
            raise ValueError(f"{what} {value!r} is out of range (times lie within 2**62 δ "
                             f"of the epoch)")
        return int(count) if isinstance(count, int) else math.floor(count)


def duration_count(value: float | str, scale: TimeScale, time_unit: str, what: str, *,
                   zero: bool = False) -> int:
    """A duration in whole δ: text (``"30s"``) or a number of ``time_unit``; positive
    (or zero, with ``zero``), else a ValueError naming ``what``."""
    if isinstance(value, str):
        number = value[:len(value) - len(value.lstrip("0123456789."))]
        ns = duration_ns(number, value[len(number):])
    elif isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool):
        ns = round(float(value) * UNIT_NS[time_unit])
    else:
        raise ValueError(f"{what} is a duration (a number of {time_unit} or text like '30s'), "
                         f"not {value!r}")
    if ns < 0 or (ns == 0 and not zero):
        raise ValueError(f"{what} is a {'non-negative' if zero else 'positive'} duration, "
                         f"not {value!r}")
    return scale.whole(ns, what)


class TimeError(ValueError):
    """A time that is not one: missing, not a number or datetime, or out of range.

    ``row`` is its position in the times given (None when the whole column is of a
    type that holds no times), ``value`` what it holds, ``reason`` the message without
    the position, so that callers can say where the row came from (the command line
    names the input row and the ``--time`` column, Spark the key)."""

    def __init__(self, row: int | None, value: Any, reason: str, what: str = "times") -> None:
        where = what if row is None else f"row {row} of {what}"
        super().__init__(f"{where}: {reason}")
        self.row, self.value, self.reason = row, value, reason


def time_series(times: Any) -> pd.Series:
    """``times`` as a pandas Series of numbers or datetimes, checked: a missing time, a
    boolean or other non-time is a :class:`TimeError` naming its row. Columns of Python
    objects are typed by their values first."""
    times = columns.column(times, "times")
    series = times if isinstance(times, pd.Series) else pd.Series(
        times.array if isinstance(times, pd.Index) else times
        if isinstance(times, np.ndarray | pd.api.extensions.ExtensionArray) else list(times))
    missing = series.isna().to_numpy()
    if missing.any():
        row = int(np.flatnonzero(missing)[0])
        raise TimeError(row, series.iloc[row], "the event time is missing")
    if series.dtype == object:
        series = series.infer_objects()
    dtype = series.dtype
    if pd.api.types.is_bool_dtype(dtype):
        raise TimeError(None, None, f"booleans are not times (row 0 holds "
                                    f"{bool(series.iloc[0])}): give numbers or datetimes")
    if pd.api.types.is_complex_dtype(dtype):
        raise TimeError(None, None, "complex numbers are not times")
    if pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_datetime64_any_dtype(dtype) \
            or pd.api.types.is_timedelta64_dtype(dtype) or len(series) == 0:
        return series
    raise _not_a_time(list(series))


def _not_a_time(values: list[Any]) -> TimeError:
    """Why a column of Python objects that pandas could not type holds no times: the
    first entry that is not a number (a datetime among numbers, or neither), else the
    first number numpy cannot hold (an integer beyond 64 bits, a Fraction...). Among
    datetimes only, the first whose time zone is there where row 0's is not, or the
    reverse."""
    if values and all(isinstance(x, datetime.datetime) for x in values):
        zoned = [x.tzinfo is not None for x in values]
        if not all(zoned[0] == z for z in zoned):
            bad = zoned.index(not zoned[0])
            x = values[bad]
            return TimeError(bad, x, f"{columns.shown(x)} has {'a' if zoned[bad] else 'no'} time "
                                     f"zone but row 0 has {'one' if zoned[0] else 'none'}: "
                                     f"give every time a zone, or none")
        bad = next((k for k, x in enumerate(values) if x.tzinfo != values[0].tzinfo), 0)
        x = values[bad]
        return TimeError(bad, x, f"{columns.shown(x)} is in another time zone than row 0 "
                                 f"({values[0].tzinfo}): give the times in one zone, e.g. "
                                 f"pd.to_datetime(times, utc=True)")
    bad = next((k for k, x in enumerate(values)
                if isinstance(x, bool) or not isinstance(x, numbers.Real)), None)
    if bad is not None:
        x = values[bad]
        if isinstance(x, datetime.datetime | np.datetime64):
            return TimeError(bad, x, f"{columns.shown(x)} is a datetime among numbers: give every "
                                     f"time as a number, or every time as a datetime")
        return TimeError(bad, x, f"{columns.shown(x)} is neither a number nor a datetime")
    bad = next((k for k, x in enumerate(values)
                if not isinstance(x, int | float | np.number)
                or (isinstance(x, int) and not -(2**63) <= x < 2**63)), 0)
    x = values[bad]
    if isinstance(x, int):
        return TimeError(bad, x, f"{x} is out of range (beyond int64)")
    return TimeError(bad, x, f"{columns.shown(x)} is a number numpy holds no type for: give "
                             f"integers, floats or datetimes")


def int64_times(series: pd.Series) -> np.ndarray:
    """Integer times as int64; an unsigned one beyond int64 is a TimeError naming its row
    (numpy would wrap it to a negative time)."""
    values = series.to_numpy()
    if values.dtype.kind == "u" and len(values):
        too_big = values > np.iinfo(np.int64).max
        if too_big.any():
            row = int(np.flatnonzero(too_big)[0])
            raise TimeError(row, int(values[row]), f"{int(values[row])} is out of range "
                                                   f"(beyond int64)")
    return series.to_numpy(dtype=np.int64)


MICROSECONDS = TimeScale("int", _MICRO, _MICRO)
"""Integer microseconds: the times a stream's key state keeps (Spark's unit)."""


def event_times(times: Any, time_unit: str) -> tuple[np.ndarray, TimeScale]:
    """Event times as int64 counts of δ, and how to read them back (module docstring).

    ``times`` is a pandas Series, Index or extension array, a numpy array, or any
    sequence; a time that is missing, neither a number nor a datetime, or beyond
    ±2**62 δ (infinite, 1e20 s, an int64 near its limits: the clock's ticks past it
    would overflow) is a :class:`TimeError` naming its row.
    """
    if not isinstance(time_unit, str) or time_unit not in UNIT_NS:
        raise ValueError(f"time_unit must be one of {', '.join(UNIT_NS)}, not {time_unit!r}")
    series = time_series(times)
    dtype = series.dtype
    if pd.api.types.is_datetime64_any_dtype(dtype):
        tz = getattr(dtype, "tz", None)
        if tz is not None:
            series = series.dt.tz_convert("UTC").dt.tz_localize(None)
        ns = series.to_numpy(dtype="datetime64[ns]").astype(np.int64)
        return np.floor_divide(ns, UNIT_NS[_MICRO]), TimeScale("datetime", _MICRO, time_unit, tz)
    if pd.api.types.is_float_dtype(dtype):
        scale = TimeScale("float", "ns" if UNIT_NS[time_unit] < UNIT_NS[_MICRO] else _MICRO,
                          time_unit)
        return _to_whole(series.to_numpy(dtype=np.float64), scale.per_unit, "times"), scale
    if pd.api.types.is_integer_dtype(dtype) or len(series) == 0:  # empty: no type to go by
        values = series.to_numpy()  # uint64 compared as it is, before the int64 cast
        _check_range(values, values, "times")
        return int64_times(series), TimeScale("int", time_unit, time_unit)
    raise TimeError(None, None, f"times must be numbers or datetimes, not {dtype}")


def _check_range(x: np.ndarray, counts: np.ndarray, what: str) -> None:
    """A TimeError naming the first row whose count of δ is not within ±2**62 (NaN and
    ±inf included): ticks past it, and window starts before it, must fit in int64."""
    bad = ~((counts > -_LIMIT) & (counts < _LIMIT))
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        value = x[row].item()
        why = "is out of range" if math.isfinite(value) else "is not a time"
        raise TimeError(row, value, f"{value!r} {why} (a time is less than 2**62 δ from "
                                    f"the epoch; δ is the time unit for integers, 1 µs for "
                                    f"floats, 1 ns for floats of ns)", what)


def _to_whole(x: np.ndarray, k: int, what: str) -> np.ndarray:
    """The float products x·k as int64, rounded to the nearest (ties to even); a
    TimeError naming the row of a time that is infinite or out of range."""
    with np.errstate(over="ignore"):  # an infinite product is reported just below
        p = x * k
    _check_range(x, p, what)
    return np.rint(p).astype(np.int64)
