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
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from ..language.clock import UNIT_NS, format_duration

__all__ = ["TimeScale", "event_times"]

_MICRO = "us"
_LIMIT = 2.0**62
"""Largest magnitude of a time in δ (int64 with room for the ticks past it)."""


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
        """One time like the column's (a watermark), floored to whole δ."""
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
            return int(value) * self.per_unit
        return int(_to_whole(np.array([float(value)]), self.per_unit, what, floor=True)[0])


def event_times(times: Any, time_unit: str) -> tuple[np.ndarray, TimeScale]:
    """Event times as int64 counts of δ, and how to read them back (module docstring).

    ``times`` is a pandas Series, Index or extension array, a numpy array, or any
    sequence; a missing time, or one that is neither a number nor a datetime, is a
    ValueError naming its row.
    """
    if not isinstance(time_unit, str) or time_unit not in UNIT_NS:
        raise ValueError(f"time_unit must be one of {', '.join(UNIT_NS)}, not {time_unit!r}")
    series = times if isinstance(times, pd.Series) else pd.Series(
        times.array if isinstance(times, pd.Index) else times
        if isinstance(times, np.ndarray | pd.api.extensions.ExtensionArray) else list(times))
    missing = series.isna().to_numpy()
    if missing.any():
        raise ValueError(f"row {int(np.flatnonzero(missing)[0])} of times: the event time is "
                         f"missing")
    dtype = series.dtype
    if pd.api.types.is_datetime64_any_dtype(dtype):
        tz = getattr(dtype, "tz", None)
        if tz is not None:
            series = series.dt.tz_convert("UTC").dt.tz_localize(None)
        ns = series.to_numpy(dtype="datetime64[ns]").astype(np.int64)
        return np.floor_divide(ns, UNIT_NS[_MICRO]), TimeScale("datetime", _MICRO, time_unit, tz)
    if pd.api.types.is_integer_dtype(dtype):
        return series.to_numpy(dtype=np.int64), TimeScale("int", time_unit, time_unit)
    if pd.api.types.is_float_dtype(dtype):
        scale = TimeScale("float", "ns" if UNIT_NS[time_unit] < UNIT_NS[_MICRO] else _MICRO,
                          time_unit)
        return _to_whole(series.to_numpy(dtype=np.float64), scale.per_unit, "times"), scale
    if len(series) == 0:  # an empty list: no dtype to go by
        return np.zeros(0, dtype=np.int64), TimeScale("int", time_unit, time_unit)
    bad = next(k for k, x in enumerate(series)
               if isinstance(x, bool) or not isinstance(x, int | float | np.number))
    raise ValueError(f"row {bad} of times: {series.iloc[bad]!r} is neither a number nor "
                     f"a datetime")


def _to_whole(x: np.ndarray, k: int, what: str, floor: bool = False) -> np.ndarray:
    """The float products x·k as int64, rounded to the nearest (ties to even) or floored;
    a ValueError naming the row of a time that is infinite or out of range."""
    p = x * k
    bad = ~(np.abs(p) < _LIMIT)  # also inf and NaN
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        why = "is out of range" if math.isfinite(x[row]) else "is not a time"
        raise ValueError(f"row {row} of {what}: {float(x[row])!r} {why}")
    return (np.floor(p) if floor else np.rint(p)).astype(np.int64)
