"""The command ``qre run`` (:mod:`qre.cli`): a query over a CSV or Parquet file of events.

The events are read with pandas (:mod:`qre.runtime.frames` checks their columns), run
through :meth:`~qre.runtime.monitor.Monitor.run_keys` (or ``run_timed`` for a timed
query) and written back as rows; :mod:`qre.cli` documents the options and the data
rules, parses the arguments and imports this module when ``run`` runs.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .cli import EXIT_OK, UsageError, emit, load_query, one_line, parse_alphabet
from .language.match_query import durations_used
from .runtime import columns, frames
from .runtime.cer.matches import Matcher
from .runtime.dataflow.joins import Joiner
from .runtime.monitor import Monitor
from .runtime.output import check_no_collision, result_columns
from .runtime.progress import Progress
from .runtime.timed import input_tags, is_timed
from .runtime.times import TimeError

__all__ = ["cmd_run"]


def read_frame(path: str, text_columns: Sequence[str] = (), option: str = "--input"
                ) -> pd.DataFrame:
    """The events of ``--input`` (or another ``option``): CSV (a path, or ``-`` for
    stdin) or Parquet.

    CSV cells of ``text_columns`` (the tag and key columns) are read as the
    text written: pandas would otherwise turn a tag ``NA`` or ``null`` into a
    missing value and merge keys ``007`` and ``7``. An empty cell is ``""``.
    Numbers are read as Python reads them (``float_precision="round_trip"``:
    pandas' default parser is an ulp off on about one number in four); a number
    beyond the largest float stays text here and :func:`frames.parse_numbers`
    reads it as ±inf. Parquet numbers of those columns keep their identity too
    (:func:`_read_parquet`).
    """
    stdin = path == "-"
    suffix = ".csv" if stdin else Path(path).suffix.lower()
    if suffix not in (".csv", ".parquet", ".pq"):
        raise UsageError(f"{option} {path}: expected a .csv or .parquet file, or - for CSV "
                         f"on stdin")
    name = "stdin" if stdin else path
    try:
        if suffix == ".csv":
            return pd.read_csv(sys.stdin if stdin else path, float_precision="round_trip",
                               converters={c: str for c in text_columns})
        return _read_parquet(path, text_columns)
    except FileNotFoundError as e:
        raise UsageError(f"cannot read {name}: no such file") from e
    except (OSError, ValueError, pd.errors.ParserError) as e:  # EmptyDataError is a ValueError
        raise UsageError(f"cannot read {name}: {one_line(str(e)) or type(e).__name__}") from e


def _read_parquet(path: str, exact_columns: Sequence[str]) -> pd.DataFrame:
    """A Parquet file as pandas reads it, but for the numeric ``exact_columns`` (the key
    and tag) with nulls: pandas would make floats of integers (merging keys 2**53 and
    2**53 + 1) and NaN of a float's null (merging it with NaN, another key:
    :mod:`qre.runtime.keys`); they become pandas' nullable Int64 / Float64 instead."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    frame = table.to_pandas()
    for name in exact_columns:
        if name in table.column_names and table.column(name).null_count and (
                pa.types.is_integer(table.column(name).type)
                or pa.types.is_floating(table.column(name).type)):
            frame[name] = columns.column(table.column(name), name, exact=True)
    return frame


def cmd_run(args: argparse.Namespace) -> int:
    """One output row per input row: the input columns plus status and value.

    Events run in input order, or with --time in event-time order (per key
    with --key, ties by the rule of qre.runtime.order); the outputs go back to the
    input rows either way.
    """
    progress = Progress(verbose=args.verbose > 0)
    with progress.stage("compile") as stage:
        m = load_query(args.query, parse_alphabet(args.alphabet), matches=True)
        stage.detail = ("a match query" if isinstance(m, Matcher)
                        else "a join query" if isinstance(m, Joiner)
                        else f"{len(m.dt.states)} states")
    with progress.stage("read") as stage:
        frame = read_frame(args.input, [c for c in (args.tag or "tag", args.key)
                                         if c is not None])
        stage.rows, stage.detail = len(frame), args.input
    tags = _tags(args, m, frame)
    with progress.stage("run") as stage:
        if isinstance(m, Matcher | Joiner):
            result = (_run_matches if isinstance(m, Matcher) else _run_joins)(args, m, frame, tags)
            stage.rows, stage.detail = len(frame), f"{len(result)} rows"
        elif is_timed(m):
            if args.time is None:
                raise UsageError("this query is timed (a window, a clock period, a within "
                                 "or a past operator bounded by durations): give the event "
                                 "times with --time COL")
            engine = m.resolve_engine(args.engine)  # its clock ticks are not counted yet
            result = _run_timed(args, m, frame, tags, engine)
        else:
            # The only run of this process: "auto" interprets a small one rather than
            # import Numba for it (Monitor.resolve_engine).
            engine = m.resolve_engine(args.engine, events=len(frame))
            result = _run_rows(args, m, frame, tags, engine)
        if not isinstance(m, Matcher | Joiner):
            stage.rows, stage.detail = len(frame), f"engine {engine}"
    with progress.stage("write") as stage:
        code = _write_result(args, result)
        stage.rows, stage.detail = len(result), args.output or "stdout"
    progress.finish()
    return code


def _run_matches(args: argparse.Namespace, m: Matcher, frame: pd.DataFrame,
                 tags: np.ndarray) -> pd.DataFrame:
    """A ``match(...)`` query: one row per match (``--per event``: per matched event);
    the rows and variables of a match as JSON lists in CSV and --json output."""
    keys = (None if args.key is None
            else frames.get_column(frame, args.key, "--key").to_numpy(dtype=object))
    named = {name: frames.value_column(frame, name) for name in args.value or []}
    fields = any(measure.field is not None for measure in m.query.measures)
    values = next(iter(named.values())) if len(named) == 1 and not fields else named or None
    unknown = "skip" if args.skip_unknown else "error"
    if args.time is None:
        if durations_used(m.query):
            raise UsageError("this match query reads event times (within or gap): give "
                             "them with --time COL")
        rows = m.run(tags, values, keys=keys, unknown_tags=unknown)
    else:
        times = frames.event_times(frames.get_column(frame, args.time, "--time"), args.time)
        with _time_rows(args.time):
            rows = m.run_timed(times, tags, values, keys=keys, time_unit=args.time_unit,
                               unknown_tags=unknown, tiebreak=_tiebreak(args, frame))
    if not (args.output or "").endswith(".parquet"):
        for name in ("rows", "vars"):
            rows[name] = [json.dumps(x) for x in rows[name]]
    return rows


def _run_joins(args: argparse.Namespace, m: Joiner, frame: pd.DataFrame,
               tags: np.ndarray) -> pd.DataFrame:
    """A ``join(...)`` query: one row per pair of events and window (docs/API.md)."""
    if args.time is None:
        raise UsageError("a join(...) query pairs events by their windows in time: give the "
                         "event times with --time COL")
    keys = (None if args.key is None
            else frames.get_column(frame, args.key, "--key").to_numpy(dtype=object))
    values = (None if m.derivation is None
              else frames.event_values(m.derivation.monitor, frame, args.value or []))
    times = frames.event_times(frames.get_column(frame, args.time, "--time"), args.time)
    with _time_rows(args.time):
        return m.run_timed(times, tags, values, keys=keys, time_unit=args.time_unit,
                           unknown_tags="skip" if args.skip_unknown else "error")


def _run_rows(args: argparse.Namespace, m: Monitor, frame: pd.DataFrame,
              tags: np.ndarray, engine: str) -> pd.DataFrame:
    """An untimed query: the input rows, each with its outputs."""
    pairs = result_columns(m.outputs, args.prefix)
    _no_collision([c for pair in pairs for c in pair], frame.columns)
    keys = (None if args.key is None
            else frames.get_column(frame, args.key, "--key").to_numpy(dtype=object))
    values = frames.event_values(m, frame, args.value or [])
    times = (None if args.time is None else
             frames.event_times(frames.get_column(frame, args.time, "--time"), args.time))
    # Skipped events keep the configuration; Monitor repeats the previous output for them.
    with _time_rows(args.time):
        out = m.run_keys(keys, tags, values, times=times, tiebreak=_tiebreak(args, frame),
                         engine=engine,
                         unknown_tags="skip" if args.skip_unknown else "error")
    result = frame.copy()
    for name, column in out.to_pandas(args.prefix).items():
        result[name] = column.to_numpy()
    return result


def _tags(args: argparse.Namespace, m: Monitor, frame: pd.DataFrame) -> np.ndarray:
    """The events' tags: the --tag column (default ``tag``), checked against the alphabet
    unless --skip-unknown; without --tag and without a ``tag`` column, a query whose
    events have one tag gives every event that tag."""
    if args.tag is None and "tag" not in frame.columns:
        event_tags = input_tags(m)
        if len(event_tags) == 1:
            return np.full(len(frame), event_tags[0], dtype=object)
        raise UsageError(f"--tag: no column 'tag' in the input (columns: "
                         f"{', '.join(map(str, frame.columns))}); the query's events have tags "
                         f"{', '.join(event_tags)}: name the column holding them with --tag COL")
    name = args.tag or "tag"
    tags = frames.tag_column(frame, name)
    if not args.skip_unknown:
        frames.check_tags(tags, m.alphabet, name)
    return tags


def _no_collision(outputs: list[str], inputs: Any) -> None:
    try:
        check_no_collision(outputs, inputs, "pass --prefix {prefix}")
    except ValueError as e:
        raise UsageError(str(e)) from None


def _tiebreak(args: argparse.Namespace, frame: pd.DataFrame) -> dict[str, Any] | None:
    """The --tiebreak columns (they order events with equal --time), in the order given."""
    if not args.tiebreak:
        return None
    if args.time is None:
        raise UsageError("--tiebreak orders events with equal times: give --time too")
    return {c: frames.get_column(frame, c, "--tiebreak").to_numpy() for c in args.tiebreak}


def _write_result(args: argparse.Namespace, result: pd.DataFrame) -> int:
    """The rows to --output (CSV or Parquet), or to stdout as CSV or --json records."""
    if args.output and args.output != "-":
        _write_frame(result, args.output)
        emit(args, {"rows": len(result), "output": args.output},
              [f"wrote {len(result)} rows to {args.output}"])
    elif args.json:
        print(_records_json(result))
    else:
        sys.stdout.write(result.to_csv(index=False))
    return EXIT_OK


def _run_timed(args: argparse.Namespace, m: Monitor, frame: pd.DataFrame,
               tags: np.ndarray, engine: str) -> pd.DataFrame:
    """A timed query (a window, a clock period, a pattern's within): the emitted rows of
    ``Monitor.run_timed``, per key in event-time order, each with its event's input
    columns (empty for a clock tick's row)."""
    emitted = [f"{args.prefix}{c}" for c in ("row", "start", "status", "value")]
    roles = {args.key or "key", args.time, args.tag or "tag"}
    _no_collision(emitted, [c for c in frame.columns if c not in roles])
    keys = (None if args.key is None
            else frames.get_column(frame, args.key, "--key").to_numpy(dtype=object))
    times = frames.event_times(frames.get_column(frame, args.time, "--time"), args.time)
    with _time_rows(args.time):
        rows = m.run_timed(times, tags, frames.event_values(m, frame, args.value or []),
                           keys=keys, time_unit=args.time_unit, engine=engine,
                           unknown_tags="skip" if args.skip_unknown else "error",
                           tiebreak=_tiebreak(args, frame))
    return _with_input_columns(rows, frame, args)


@contextmanager
def _time_rows(name: str | None) -> Iterator[None]:
    """A time the runtime refuses (a boolean, out of range: :class:`TimeError`) as a data
    error naming the --time column and the input row (the runtime gets the whole column,
    so its row is the data row)."""
    try:
        yield
    except TimeError as e:
        place = (f"--time column {name!r}" if e.row is None
                 else frames.where("--time", str(name), e.row))
        raise frames.FrameError(f"{place}: {e.reason}") from None


def _with_input_columns(rows: pd.DataFrame, frame: pd.DataFrame,
                        args: argparse.Namespace) -> pd.DataFrame:
    """Emitted rows: key, stamp (under the --time name) and tag, the input row's other
    columns as they were (an event's row; empty for a tick), then row, [start], status
    and value (prefixed with --prefix). The tag column holds the input's tag (``tick``
    for a tick), not a derived tag."""
    event = rows["row"].to_numpy()
    found = event >= 0
    inputs = frame.iloc[np.maximum(event, 0)].reset_index(drop=True)
    inputs = inputs.where(pd.Series(found), None) if not found.all() else inputs
    key, tag = args.key or "key", args.tag or "tag"
    out = pd.DataFrame({key: rows["key"]} if "key" in rows else {})
    out[args.time] = rows["time"].to_numpy()
    given = inputs[tag].astype(object) if tag in inputs else rows["tag"].astype(object)
    out[tag] = np.where(found, given, rows["tag"].astype(object))
    for c in frame.columns:
        if c not in out.columns:
            out[c] = inputs[c]
    for c in ("row", "start", "status", "value"):
        if c in rows:
            out[f"{args.prefix}{c}"] = rows[c].to_numpy()
    return out


def _records_json(frame: pd.DataFrame) -> str:
    """The rows as a JSON array of objects: floats exact (``DataFrame.to_json`` rounds to
    10 digits), NaN / ±inf / missing cells null, datetimes as ISO text."""
    def cell(x: Any) -> Any:
        if isinstance(x, float) and not np.isfinite(x):
            return None
        if x is None or x is pd.NaT or x is pd.NA:
            return None
        return x

    records = [{str(k): cell(v) for k, v in row.items()} for row in frame.to_dict("records")]
    return json.dumps(records, default=str, allow_nan=False)


def _write_frame(frame: pd.DataFrame, path: str) -> None:
    suffix = Path(path).suffix.lower()
    try:
        if suffix in (".parquet", ".pq"):
            frame.to_parquet(path, index=False)
        elif suffix == ".csv":
            frame.to_csv(path, index=False)
        else:
            raise UsageError(f"--output {path}: expected a .csv or .parquet file, or - for "
                             f"CSV on stdout")
    except OSError as e:
        raise UsageError(f"cannot write {path}: {e.strerror or e}") from e
