"""The oracle for key identity (issue 19, points 1 and 2): qre.runtime.keys' rule without pandas.

Each key becomes a token by the documented rule — a missing key (None, null, NA,
NaT) is one key, every NaN another, numbers equal as Python compares them (-0.0 is
0.0), nothing through a float cast — and each token's rows run in time order
through ``Monitor.run`` on the reference engine. The query spells the values in the
order it reads them, so a merged stream or a stream out of time order shows.
Used by tests/test_keys.py (Python entry points) and tests/test_spark_keys.py (Spark).
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
from hypothesis import strategies as st

from qre import qre

DIGITS = qre("alphabet a, b; iter(atom(_, cur), 0, (x, y) -> 10 * x + y)")

BIG = 2**53
KEY_CLASSES: dict[str, tuple[Any, list[Any]]] = {
    "long": (pa.int64(), [BIG, BIG + 1, BIG + 2, -(2**63), 2**63 - 1, 0, 7, None]),
    "double": (pa.float64(), [math.nan, -0.0, 0.0, 1.0, math.inf, -math.inf, float(BIG),
                              float(BIG + 2), None]),
    "string": (pa.string(), ["", "a", "NaN", "None", None]),
}
"""Keys of each Spark-like type, nulls included, that a float cast or pandas' merging
of missing values would confuse."""


def token(key: Any) -> tuple[Any, ...]:
    """The key's identity by the documented rule, computed without pandas."""
    if key is None or key is pd.NA or key is pd.NaT:
        return ("missing",)
    if isinstance(key, float) and math.isnan(key):
        return ("nan",)
    if isinstance(key, float) and key == 0:
        return ("number", 0)
    return ("number", key) if isinstance(key, int | float) else ("other", key)


def oracle(keys: list[Any], times: list[int] | None, tags: list[str],
           values: list[float]) -> tuple[list[int], list[float]]:
    """Status and value of every row: each token's rows in time order (input order
    without times), one stream each."""
    streams: dict[tuple[Any, ...], list[int]] = defaultdict(list)
    for row, key in enumerate(keys):
        streams[token(key)].append(row)
    status, value = [0] * len(keys), [math.nan] * len(keys)
    for rows in streams.values():
        if times is not None:
            rows.sort(key=lambda r: times[r])
        out = DIGITS.run([tags[r] for r in rows], [values[r] for r in rows],
                         engine="reference")
        for r, s, v in zip(rows, out.status.tolist(), out.value.tolist(), strict=True):
            status[r], value[r] = s, v
    return status, value


@st.composite
def keyed_rows(draw, kind: str | None = None):  # type: ignore[no-untyped-def]
    """(class name, keys, distinct times, tags, digit values) of a few rows."""
    kind = kind or draw(st.sampled_from(sorted(KEY_CLASSES)))
    n = draw(st.integers(1, 12))
    keys = draw(st.lists(st.sampled_from(KEY_CLASSES[kind][1]), min_size=n, max_size=n))
    times = draw(st.permutations(list(range(n))))
    tags = draw(st.lists(st.sampled_from(["a", "b"]), min_size=n, max_size=n))
    values = [float(draw(st.integers(1, 9))) for _ in range(n)]
    return kind, keys, list(times), tags, values


def containers(kind: str, keys: list[Any]) -> dict[str, Any]:
    """The same keys as a user may hold them: a list, an Arrow array, a pandas nullable
    array (missing entries as NA, NaN kept where the type can hold it)."""
    arrow = pa.array(keys, type=KEY_CLASSES[kind][0], from_pandas=False)
    pandas = arrow.to_pandas(types_mapper={pa.int64(): pd.Int64Dtype(),
                                           pa.float64(): pd.Float64Dtype(),
                                           pa.string(): pd.StringDtype()}.get).array
    if kind == "double":  # Arrow → Float64 turns NaN into NA: keep it a NaN
        data = np.array([0.0 if k is None else k for k in keys], dtype=np.float64)
        pandas = pd.arrays.FloatingArray(data, np.array([k is None for k in keys]))
    return {"list": keys, "arrow": arrow, "pandas": pandas}
