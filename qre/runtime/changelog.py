"""Results as a changelog, and the sink barrier that turns one into final rows (issue 22;
seed 002, §V.D and Algorithm 3).

Pipeline position: after a monitor that processes events optimistically
(:mod:`spark_udf.optimistic`): its output rows carry a :data:`CHANGE` column,
:data:`INSERT` or :data:`RETRACT`. A consumer that applies them in order — add an
inserted row, remove one equal row for a retraction — holds the current results at
any moment. :class:`Barrier` is seed 002's single buffer at the end of the pipeline:
it holds the inserted rows, drops each one a retraction cancels, and releases, in
time order, the rows that the watermark has made final.

Rows are compared on every column (:func:`row_changes`): floats by their bits
(``-0.0`` is not ``0.0``; every NaN is one value) and the missing cells (None, NA,
NaT; in a column of Python objects also NaN, which pandas does not keep apart from
None: ``pd.concat`` turns one into the other) alike, so a retraction cancels exactly
the row it repeats.

Cost: vectorized per float column, a dict lookup per cell of other columns, a sort of
the rows; O(rows held) memory.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import numpy as np
import pandas as pd

from .order import float_order

__all__ = ["CHANGE", "INSERT", "RETRACT", "Barrier", "row_changes"]

CHANGE = "change"
"""The column that says whether a row inserts or retracts a result."""

INSERT = "insert"
"""A new result (Flink's ``+I`` / ``+U``, Delta's ``insert``)."""

RETRACT = "retract"
"""A result withdrawn: the row as it was inserted (Flink's ``-U`` / ``-D``, Delta's
``delete``)."""


def row_changes(before: pd.DataFrame | None, after: pd.DataFrame | None
                ) -> tuple[pd.DataFrame | None, pd.DataFrame | None]:
    """The rows of ``before`` not in ``after`` and those of ``after`` not in ``before``,
    as multisets of rows compared on every column (module docstring); None for none.

    >>> a = pd.DataFrame({"t": [1, 2], "value": [1.0, float("nan")]})
    >>> b = pd.DataFrame({"t": [2, 3], "value": [float("nan"), -0.0]})
    >>> gone, new = row_changes(a, b)
    >>> gone["t"].tolist(), new["t"].tolist()
    ([1], [3])
    """
    if before is None or not len(before) or after is None or not len(after):
        return _some(before), _some(after)  # nothing to compare
    ids = row_ids(pd.concat([before, after], ignore_index=True))
    old, new = ids[:len(before)], ids[len(before):]
    n = int(ids.max()) + 1
    kept = np.minimum(np.bincount(old, minlength=n), np.bincount(new, minlength=n))
    # A row is matched if fewer equal rows come before it on its side than both sides share.
    return (_some(before[_rank_among_equal(old) >= kept[old]]),
            _some(after[_rank_among_equal(new) >= kept[new]]))


def row_ids(frame: pd.DataFrame) -> np.ndarray:
    """A number per row of ``frame``, equal exactly where the rows are (module docstring):
    a float column by :func:`qre.runtime.order.float_order` (the project's one rule of
    equal floats), other columns cell by cell (:func:`_cell`)."""
    if not len(frame.columns):
        return np.zeros(len(frame), dtype=np.int64)
    codes = np.stack([_column_codes(frame[c]) for c in frame.columns], axis=1)
    return np.unique(codes, axis=0, return_inverse=True)[1].reshape(-1).astype(np.int64)


def _column_codes(column: pd.Series) -> np.ndarray:
    """int64 codes of a column's cells, equal where the cells are."""
    kind = column.dtype.kind if isinstance(column.dtype, np.dtype) else "O"
    if kind == "f":
        return float_order(column.to_numpy()).astype(np.int64)
    if kind in "iubMm":  # exact as they are; NaT is one (missing) value
        return pd.factorize(column.to_numpy())[0].astype(np.int64)
    objects = isinstance(column.dtype, np.dtype)  # pandas' object columns: NaN is missing
    seen: dict[Hashable, int] = {}
    return np.array([seen.setdefault(("null",) if objects and v != v else _cell(v), len(seen))
                     for v in column.tolist()], dtype=np.int64)


def _rank_among_equal(ids: np.ndarray) -> np.ndarray:
    """For each row, how many rows with its id come before it."""
    order = np.argsort(ids, kind="stable")
    sorted_ids = ids[order]
    first = np.searchsorted(sorted_ids, sorted_ids, side="left")
    rank = np.empty(len(ids), dtype=np.int64)
    rank[order] = np.arange(len(ids)) - first
    return rank


def _cell(v: Any) -> Hashable:
    """A cell of a column of objects: a float by its :func:`float_order` key, the missing
    cells (None, NA, NaT) alike, anything else as it is."""
    if v is None or v is pd.NA or v is pd.NaT:
        return ("null",)
    if isinstance(v, float | np.floating):
        return ("f", int(float_order(np.array([v]))[0]))
    return ("v", v)


def _some(frame: pd.DataFrame | None) -> pd.DataFrame | None:
    return frame if frame is not None and len(frame) else None


class Barrier:
    """Seed 002's sink barrier (Algorithm 3) over changelog rows.

    :meth:`push` takes rows with a ``change`` column: an insert is held, a retraction
    removes one held row equal to it (every column but ``change``). :meth:`release`
    returns, and forgets, the held rows whose ``time`` is at or below a point no event
    can change any more (the watermark less the allowed lateness, as the monitor's
    rules define it), ordered by time, then by arrival; without ``change``.

    >>> b = Barrier()
    >>> b.push(pd.DataFrame({"time": [5, 9], "value": [1.0, 3.0],
    ...                      "change": ["insert", "insert"]}))
    >>> b.push(pd.DataFrame({"time": [9, 9], "value": [3.0, 13.0],
    ...                      "change": ["retract", "insert"]}))
    >>> b.release(9)["value"].tolist()
    [1.0, 13.0]
    """

    def __init__(self, time: str = "time", change: str = CHANGE) -> None:
        self.time, self.change = time, change
        self._held: pd.DataFrame | None = None

    @property
    def held(self) -> int:
        """How many rows wait for the watermark."""
        return 0 if self._held is None else len(self._held)

    def held_rows(self) -> pd.DataFrame | None:
        """The rows held (without ``change``), in arrival order; None if none."""
        return None if self._held is None else self._held.copy()

    def push(self, rows: pd.DataFrame) -> None:
        """Apply changelog ``rows`` in their order (an insert, then its retraction,
        cancel within one call)."""
        if self.change not in rows:
            raise ValueError(f"Barrier.push: the rows have no {self.change!r} column")
        if not len(rows):
            return
        kinds = set(rows[self.change].unique())
        if not kinds <= {INSERT, RETRACT}:
            other = sorted(map(str, kinds - {INSERT, RETRACT}))
            raise ValueError(f"Barrier.push: {self.change!r} holds {other!r}; it is "
                             f"{INSERT!r} or {RETRACT!r}")
        plain = rows.drop(columns=self.change)
        both = plain if self._held is None else pd.concat([self._held, plain],
                                                         ignore_index=True)
        ids = row_ids(both)
        sign = np.ones(len(both), dtype=np.int64)
        sign[len(both) - len(rows):][(rows[self.change] == RETRACT).to_numpy()] = -1
        # Rows equal on every column are one result: per row, in arrival order, the
        # held count must not go below zero (a retraction cancels an earlier insert).
        order = np.argsort(ids, kind="stable")
        counts = np.cumsum(sign[order])
        first = np.searchsorted(ids[order], ids[order], side="left")
        held = counts - (counts[first] - sign[order][first])
        if (held < 0).any():
            bad = both.iloc[int(order[np.flatnonzero(held < 0)[0]])]
            raise ValueError(f"Barrier.push: {int((held < 0).sum())} retraction(s) of rows "
                             f"not held, e.g. {bad.to_dict()}")
        # What stays of each row: its first inserts, as many as it is held.
        total = np.bincount(ids, weights=sign).astype(np.int64)
        inserted = np.flatnonzero(sign > 0)
        keep = inserted[_rank_among_equal(ids[inserted]) < total[ids[inserted]]]
        self._held = both.iloc[keep].reset_index(drop=True) if len(keep) else None

    def release(self, final_until: Any) -> pd.DataFrame | None:
        """The held rows with ``time`` ≤ ``final_until``, in time order (None if none)."""
        if self._held is None:
            return None
        ready = (self._held[self.time] <= final_until).to_numpy()
        if not ready.any():
            return None
        out = self._held[ready].sort_values(self.time, kind="stable")
        rest = self._held[~ready]
        self._held = rest.reset_index(drop=True) if len(rest) else None
        return out.reset_index(drop=True)
