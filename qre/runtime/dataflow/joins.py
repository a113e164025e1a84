"""``join(L, R, size[, slide])`` queries: seed 000's window Join over each key's events.

Pipeline position: a checked :class:`~qre.language.ast.JoinRows` (``qre(text)`` returns a
:class:`Joiner` for one) → **the pairs** → a pandas DataFrame, a row per pair and window:
``key`` (with keys), ``time`` (the window's end − δ, §2.1), ``start`` (its start; both
in the type of the times), ``left`` and ``right`` (the input rows of the L and the R
event). Every pair of an L event and an R event of one key that fall in one window
[l·slide, l·slide + size) (epoch-aligned, as window aggregates) is a row, once per
window holding both — Definition 2 of the seed with f_P true and f_K the key; a
condition on the events' data goes on each side first, as a derived tag (``tag big =
buy where cur.amount > 100;``). The input is complete (the pairs of a stream whose
watermarks move are :class:`~qre.runtime.dataflow.Flow`'s join).

Rows come ordered by key (first appearance), time, left row, right row. Cost: the
events of the two tags, once per window holding each (size / slide), and a hash join
on (key, window) in pandas: O(n · size / slide + pairs).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from ...language import ast
from ...language.derive import Derivation
from .. import columns
from ..keys import key_streams
from ..tag_codes import tag_codes
from ..times import event_times

__all__ = ["JOIN_COLUMNS", "Joiner"]

JOIN_COLUMNS = ("key", "time", "start", "left", "right")


@dataclass(frozen=True)
class Joiner:
    """A compiled ``join(...)`` query: ``qre(text)`` returns one for such a query."""

    query: ast.JoinRows
    alphabet: tuple[str, ...]
    derivation: Derivation | None = None
    source: str | None = field(default=None, compare=False)

    def __repr__(self) -> str:
        return f"Joiner({self.source!r})" if self.source else f"Joiner({self.query!r})"

    def run_timed(self, times: Any, tags: Any, values: Any = None, *, keys: Any = None,
                  time_unit: str = "s",
                  unknown_tags: Literal["error", "skip"] = "error") -> pd.DataFrame:
        """The pairs of each key's events (module docstring); times as in
        :meth:`qre.Monitor.run_timed`."""
        if unknown_tags not in ("error", "skip"):
            raise ValueError(f"unknown_tags must be 'error' or 'skip', got {unknown_tags!r}")
        clock, scale = event_times(columns.column(times, "times"), time_unit)
        codes = tag_codes(tags, self.alphabet, skip_unknown=unknown_tags == "skip")
        if len(codes) != len(clock):
            raise ValueError(f"times has {len(clock)} entries but there are {len(codes)} tags")
        if self.derivation is not None:
            codes = self.derivation.apply(codes, columns.values(values))
        key_ids, key_values = key_streams(keys, len(codes))
        size = scale.whole(self.query.size, "the join's size")
        slide = size if self.query.slide is None else scale.whole(self.query.slide,
                                                                  "the join's slide")
        sides = [_windowed(np.flatnonzero(codes == self.alphabet.index(tag)), clock, key_ids,
                           size, slide) for tag in (self.query.left, self.query.right)]
        pairs = sides[0].merge(sides[1], on=["key", "start"], suffixes=("_left", "_right"))
        pairs = pairs.sort_values(["key", "start", "row_left", "row_right"], kind="stable")
        start = pairs["start"].to_numpy(dtype=np.int64)
        frame: dict[str, Any] = {}
        if keys is not None:
            frame["key"] = key_values[pairs["key"].to_numpy(dtype=np.int64)]
        frame["time"] = scale.stamps(start + size - 1)
        frame["start"] = scale.stamps(start)
        frame["left"] = pairs["row_left"].to_numpy(dtype=np.int64)
        frame["right"] = pairs["row_right"].to_numpy(dtype=np.int64)
        return pd.DataFrame(frame)


def _windowed(rows: np.ndarray, clock: np.ndarray, key_ids: np.ndarray, size: int,
              slide: int) -> pd.DataFrame:
    """Each of ``rows`` once per window holding its time: (key, start, row)."""
    tau = clock[rows]
    first = -((size - 1 - tau) // slide)  # the least l with l·slide + size > τ
    count = tau // slide - first + 1
    at = np.repeat(np.arange(len(rows)), count)
    offset = np.arange(len(at)) - np.repeat(np.cumsum(count) - count, count)
    return pd.DataFrame({"key": key_ids[rows][at], "start": (first[at] + offset) * slide,
                         "row": rows[at]})
