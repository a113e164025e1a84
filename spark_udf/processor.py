"""The stateful processors' shared shape: a group's new rows, or its fired timer, is one step.

Pipeline position: under :mod:`spark_udf.stream` (a bucket of a DT monitor's keys) and
:mod:`spark_udf.match_stream` (a match query's key), inside Spark's
``transformWithStateInPandas``. Takes Spark's calls; gives each processor's ``_step``
the group, its events (None for a timer) with the operator's column names, the
watermark and the fired timer. Costs one concatenation of a group's Arrow batches.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pandas as pd
from pyspark.sql.streaming import StatefulProcessor

__all__ = ["SteppedProcessor", "move_timer"]


class SteppedProcessor(StatefulProcessor):
    """``handleInputRows`` and ``handleExpiredTimer`` as ``_step(group, events,
    watermark_ms, fired_ms)``; subclasses name the input columns (``_columns``)."""

    def handleInputRows(self, key: Any, rows: Iterator[pd.DataFrame],
                        timerValues: Any) -> Iterator[pd.DataFrame]:
        frames = list(rows)
        events = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
        # By position: Spark renames a column whose name starts with "__" on the way.
        events.columns = self._columns()
        yield from self._step(key[0], events, timerValues.getCurrentWatermarkInMs(), None)

    def handleExpiredTimer(self, key: Any, timerValues: Any,
                           expiredTimerInfo: Any) -> Iterator[pd.DataFrame]:
        yield from self._step(key[0], None, timerValues.getCurrentWatermarkInMs(),
                              expiredTimerInfo.getExpiryTimeInMs())

    def close(self) -> None:
        pass

    def _columns(self) -> list[str]:
        raise NotImplementedError

    def _step(self, group: Any, events: pd.DataFrame | None, watermark_ms: int,
              fired_ms: int | None) -> Iterator[pd.DataFrame]:
        raise NotImplementedError


def move_timer(handle: Any, timer: int | None, wake: int | None, fired_ms: int | None) -> None:
    """Keep one timer per group, at ``wake`` (None: none) instead of ``timer``. Spark
    deletes a fired timer itself, after the call that handles it."""
    if timer is not None and timer != wake and timer != fired_ms:
        handle.deleteTimer(timer)
    if wake is not None and (wake != timer or timer == fired_ms):
        handle.registerTimer(wake)
