"""Shadow a streaming query by a candidate: both outputs compared online as traces (seed 003 §3).

Pipeline position: a sink. Two Structured Streaming queries — production and a
candidate (a new monitor, another engine, more partitions) — write through
``foreachBatch`` into one :class:`Shadow`, which feeds each micro-batch's rows, in
the order Spark hands them over, to a DiffStream matcher
(:class:`qre.traces.FrameMatcher`) under the output's dependence (for
``monitor_stream``: ``stream_type("monitor_stream", key).output_dependence()``, a
key's rows in order). The first mismatch is logged (``WARNING``) and kept in
``mismatch`` as soon as it is certain; ``verdict()`` says whether the outputs so
far agree, with the rows still waiting for a partner.

Spark runs each query's ``foreachBatch`` on the driver, one batch at a time per
query, the two queries in separate threads: a lock serialises them. A batch that
Spark runs again after a failure (same id) is skipped, so a restart does not
feed rows twice; a Shadow lives in the driver, so restarting the driver restarts
the comparison. Memory: the unmatched rows — as many as one query runs ahead of
the other. Cost: the rows are collected to the driver (``toPandas``), then a few
dictionary operations per row.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from qre.traces import Equal, FrameMatcher, Mismatch, Verdict

__all__ = ["Shadow"]

log = logging.getLogger(__name__)


class Shadow:
    """Two queries' outputs, compared as they stream: pass ``shadow.left`` and
    ``shadow.right`` as their ``foreachBatch`` outputs (``monitor_stream(...,
    output=shadow.left)``). Arguments as :func:`qre.traces.compare_streams`'s;
    ``on_mismatch(mismatch)`` is called once, when the first mismatch is found."""

    def __init__(self, dependence: Any, *, equal: Equal = None,
                 header: str | Callable[[Any], str] | None = None,
                 names: tuple[str, str] = ("production", "candidate"),
                 on_mismatch: Callable[[Mismatch], None] | None = None) -> None:
        self._matcher = FrameMatcher(dependence, equal=equal, header=header, names=names)
        self._lock = threading.Lock()
        self._last_batch = [-1, -1]
        self._on_mismatch = on_mismatch
        self.batches = [0, 0]
        """Micro-batches fed per side."""

    def left(self, batch: Any, batch_id: int) -> None:
        """``foreachBatch`` of the first query (production)."""
        self._feed(0, batch, batch_id)

    def right(self, batch: Any, batch_id: int) -> None:
        """``foreachBatch`` of the second query (the candidate)."""
        self._feed(1, batch, batch_id)

    def _feed(self, side: int, batch: Any, batch_id: int) -> None:
        if batch_id <= self._last_batch[side]:
            log.info("shadow: %s batch %d again (a restart): skipped", self._matcher.names[side],
                     batch_id)
            return
        rows = batch.toPandas() if hasattr(batch, "toPandas") else batch
        with self._lock:
            before = self._matcher.mismatch
            self._matcher.feed(side, rows)
            self._last_batch[side] = batch_id
            self.batches[side] += 1
            found = self._matcher.mismatch
        if found is not None and before is None:
            log.warning("shadow: the outputs differ: %s", found)
            if self._on_mismatch is not None:
                self._on_mismatch(found)

    @property
    def mismatch(self) -> Mismatch | None:
        """The first mismatch, once one is certain."""
        return self._matcher.mismatch

    def verdict(self) -> Verdict:
        """The comparison so far: equivalent iff no mismatch and no row waits for a partner
        (call it when both queries have processed the same input)."""
        with self._lock:
            return self._matcher.finish()
