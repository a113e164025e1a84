"""The oracle for keyed, timed runs (Spark batch and streaming, spark_udf.keyed).

Computed without spark_udf: each key's events are sorted by (key, time,
tiebreak, tag, values; NaN last) with numpy's lexsort, optionally cut where
two consecutive events are more than ``ttl`` apart (each piece a fresh
stream), and run with ``Monitor.run_keys`` on the table engine (itself
differential-tested against the reference evaluator).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from qre import Monitor


def sorted_events(frame: pd.DataFrame, key: str, order: Sequence[str],
                  values: Sequence[str]) -> pd.DataFrame:
    """Rows sorted by key then ``order`` (value columns NaN last), stable."""
    sort_keys = []
    for c in (key, *order):
        if c in values:  # NaN last: sort on (isnan, value)
            v = frame[c].to_numpy(dtype=float)
            sort_keys += [np.isnan(v), np.nan_to_num(v, nan=0.0)]
        else:
            sort_keys.append(frame[c].to_numpy())
    return frame.iloc[np.lexsort(tuple(reversed(sort_keys)))].reset_index(drop=True)


def expected_rows(m: Monitor, frame: pd.DataFrame, values: Sequence[str],
                  ties: Sequence[str] = (), *, key: str = "k", time: str = "t",
                  tag: str = "tag", ttl: float | None = None) -> pd.DataFrame:
    """One output row per event, each key's in the order processed (sorted by key, then
    time order: a valid order of the output type, each key's rows in order): key, time,
    tag and the results (``status``/``value``, or ``status_F``/``value_F`` per output F
    of ``m``)."""
    rows = sorted_events(frame, key, [time, *ties, tag, *values], values)
    streams = rows[key].to_numpy()
    if ttl is not None:  # a new stream wherever a key's events are more than ttl apart
        t = rows[time].to_numpy(dtype=float)
        new = np.r_[True, (streams[1:] != streams[:-1]) | (np.diff(t) > ttl)]
        streams = np.cumsum(new)
    data = (None if not values else rows[values[0]].to_numpy(float) if len(values) == 1
            else {c: rows[c].to_numpy(float) for c in values})
    out = m.run_keys(streams, rows[tag].to_numpy(object), data, engine="table")
    result = pd.DataFrame({key: rows[key], time: rows[time], tag: rows[tag]})
    status = out.status.astype(np.int8).reshape(len(rows), -1)
    value = out.value.reshape(len(rows), -1)
    names = [""] if status.shape[1] == 1 else [f"_{f}" for f in out.names]
    for j, name in enumerate(names):
        result[f"status{name}"], result[f"value{name}"] = status[:, j], value[:, j]
    return result

