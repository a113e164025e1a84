"""Final rows of an optimistic streaming query: seed 002's sink barrier on Spark (issue 22).

Pipeline position: the sink of :func:`spark_udf.monitor_stream` with ``optimistic=True``.
The query's rows are a changelog (inserts and retractions, :mod:`spark_udf.optimistic`);
:class:`FinalRows` is a ``foreachBatch`` function that keeps them in a
:class:`qre.runtime.changelog.Barrier` and hands the user's writer, each micro-batch, only
the rows that the watermark has made final, in time order, without the ``change``
column: exactly the rows the default (pessimistic) policy writes, in the micro-batch
whose watermark makes them final.

Which rows are final: those stamped at or below the release point
(``Rules.release_us``: the watermark less the allowed lateness; with a periodic clock, the
last instant before the clock's boundary below that) of the watermark the micro-batch
ran with — Spark writes it in the checkpoint's offset log
(``<checkpoint>/offsets/<batch>``, ``batchWatermarkMs``) before the batch runs, so a
batch run again releases the same rows. No later event can change a row there: it
would be late.

State: the held rows live in the query's checkpoint directory
(``<checkpoint>/qre-final-rows/held-<batch>.parquet``, the two latest kept), so a
restarted query neither loses nor repeats a final row: a micro-batch that Spark runs
again starts from the rows held before it and releases the same rows. The writer is
called once per micro-batch (with an empty DataFrame when nothing became final); as
for any ``foreachBatch`` function, exactly-once output needs it idempotent on the batch
id (e.g. overwriting a partition per batch), since Spark may run a batch again after a
failure.

Cost: the micro-batch's rows are collected to the driver (Arrow) and the held rows
are read and written there as one Parquet file per batch: seed 002's single buffer,
sized by the rows of the last watermark delay.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from qre.runtime.changelog import INSERT, Barrier

from .keyed import Rules

__all__ = ["FinalRows"]

log = logging.getLogger(__name__)

DIRECTORY = "qre-final-rows"
"""The directory in a query's checkpoint that keeps the rows held for the watermark."""

_HELD = re.compile(r"held-(\d+)\.parquet")


class FinalRows:
    """A ``foreachBatch`` function writing an optimistic query's final rows (module
    docstring): ``monitor_stream(..., optimistic=True, output=FinalRows(write))`` calls
    ``write(batch_df, batch_id)`` with each micro-batch's final rows."""

    def __init__(self, write: Callable[[Any, int], None]) -> None:
        if not callable(write):
            raise TypeError(f"FinalRows: write is a function f(batch_df, batch_id), not "
                            f"{type(write).__name__}")
        self.write = write
        self._sink: tuple[Rules, int | None, str, str, Path] | None = None

    def bind(self, rules: Rules, unit: int | None, time: str, change: str,
             checkpoint: str) -> None:
        """Called by :func:`spark_udf.monitor_stream`: the query's time rules, the µs per
        unit of a numeric time column (None: ns), its time and change columns and its
        checkpoint directory."""
        if not rules.optimistic:
            raise ValueError("monitor_stream: output=FinalRows(...) is for optimistic=True "
                             "(the default policy's rows are final already: pass the writer "
                             "itself)")
        self._sink = (rules, unit, time, change, Path(checkpoint))

    def __call__(self, batch: Any, batch_id: int) -> None:
        import pyarrow as pa
        from pyspark.sql.types import StructType

        if self._sink is None:
            raise RuntimeError("FinalRows: pass it to monitor_stream as output= (it needs "
                               "the query's watermark rules)")
        rules, unit, time, change, checkpoint = self._sink
        directory = checkpoint / DIRECTORY
        table = batch.toArrow()
        schema = table.schema.remove(table.schema.get_field_index(change))
        barrier = _load(directory, batch_id, time, change)
        barrier.push(table.to_pandas(types_mapper=pd.ArrowDtype))
        release_us = rules.release_us(_batch_watermark_us(checkpoint, batch_id))
        assert release_us is not None  # optimistic: a watermark
        point = _release_point(release_us, table.schema.field(time).type, unit)
        final = barrier.release(point)
        _save(directory, batch_id, barrier, schema)
        rows = (schema.empty_table() if final is None
                else pa.Table.from_pandas(final, preserve_index=False).cast(schema))
        fields = StructType([f for f in batch.schema.fields if f.name != change])
        self.write(batch.sparkSession.createDataFrame(rows, schema=fields), batch_id)


def _batch_watermark_us(checkpoint: Path, batch_id: int) -> int:
    """The watermark micro-batch ``batch_id`` ran with, in µs: its offset log entry's
    ``batchWatermarkMs`` (a version line, then that JSON, then the sources' offsets)."""
    path = checkpoint / "offsets" / str(batch_id)
    try:
        metadata = json.loads(path.read_text().splitlines()[1])
        return int(metadata["batchWatermarkMs"]) * 1000
    except (OSError, IndexError, KeyError, ValueError) as e:
        raise RuntimeError(f"FinalRows: cannot read micro-batch {batch_id}'s watermark from "
                           f"Spark's offset log {path} ({e}); the checkpoint must be a local "
                           f"directory") from None


def _release_point(release_us: int, time_type: Any, unit: int | None) -> Any:
    """The largest value of the time column (Arrow type; ``unit`` µs per unit of a numeric
    one, None for ns) that the stream's rule (``LocalStream._micros``, Spark's cast
    alike) turns into at most ``release_us`` µs."""
    import pyarrow as pa

    if pa.types.is_timestamp(time_type):
        stamp = pd.Timestamp(release_us, unit="us", tz="UTC")
        return stamp if time_type.tz is not None else stamp.tz_localize(None)
    if pa.types.is_integer(time_type):  # t·unit, or ⌊t / 1000⌋ for ns
        return release_us // unit if unit else release_us * 1000 + 999
    # Floats: round(t·unit) or ⌊t / 1000⌋; the bound, then down to the last float in.
    point = (release_us + 0.5) / unit if unit else (release_us + 1) * 1000.0
    while (round(point * unit) if unit else math.floor(point / 1000)) > release_us:
        point = math.nextafter(point, -math.inf)
    return point


def _load(directory: Path, batch_id: int, time: str, change: str) -> Barrier:
    """A barrier holding the rows held after the latest batch before ``batch_id``."""
    import pyarrow.parquet as pq

    barrier = Barrier(time=time, change=change)
    before = [b for b in _held_batches(directory) if b < batch_id]
    if before:
        held = pq.read_table(directory / f"held-{max(before)}.parquet")
        barrier.push(held.to_pandas(types_mapper=pd.ArrowDtype).assign(**{change: INSERT}))
    return barrier


def _save(directory: Path, batch_id: int, barrier: Barrier, schema: Any) -> None:
    """Keep the held rows (``schema``: the rows' without the change column) as batch
    ``batch_id``'s, written whole, then renamed; forget all but the two latest batches'."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    directory.mkdir(parents=True, exist_ok=True)
    held = barrier.held_rows()
    table = schema.empty_table() if held is None else pa.Table.from_pandas(
        held, preserve_index=False).cast(schema)
    part = directory / f"held-{batch_id}.parquet.tmp"
    pq.write_table(table, part)
    os.replace(part, directory / f"held-{batch_id}.parquet")
    for old in sorted(b for b in _held_batches(directory) if b < batch_id)[:-1]:
        (directory / f"held-{old}.parquet").unlink(missing_ok=True)
    log.debug("FinalRows: batch %d holds %d rows", batch_id, barrier.held)


def _held_batches(directory: Path) -> list[int]:
    """The batches whose held rows the directory keeps."""
    if not directory.is_dir():
        return []
    return [int(m.group(1)) for name in os.listdir(directory)
            if (m := _HELD.fullmatch(name))]
