"""The ``qre`` command line (API.md, "Command line"): compile, check and run queries.

Subcommands::

    qre compile Q [--stats] [--dot FILE] [--emit FILE.json] [--json]
    qre check equiv Q1 Q2 [--alphabet a,b] [--json]
    qre check restartable Q [--json]
    qre run Q --input FILE [--key COL] [--tag COL] [--time COL] [--value COL ...]
            [--skip-unknown] [--engine {auto,reference,table,codegen}]
            [--output FILE] [--json]

``Q`` is query text, ``@path/to/file.qre`` (the text of that file) or a path
ending in ``.json`` holding a DT (the format of :mod:`dt.json_io`).

Exit codes: 0 success (equivalent, restartable), 1 a negative answer of
``check`` (not equivalent, not restartable; a counterexample or witness is
printed), 2 a usage or input error (bad query, unreadable file, bad JSON,
missing column, unknown tag). A user error is reported on stderr in one line
(a query error keeps its located message: line, column, caret), never as a
traceback.

``check equiv`` decides *status* equivalence only (seed 003, Theorem 5.3):
the output says so, since data values are not compared.
``check restartable`` decides Definition 5.4 (Theorem 5.6) on the query's
DT as compiled, before the optimizer.

``run`` writes one row per input row, in input order (like a pandas
transform): the input columns, then ``status`` (0 undefined, 1 defined,
2 conflict) and ``value`` (NaN unless defined), or ``status_F``/``value_F``
per output F. A row's output is the monitor's output (of its key, with
``--key``) after its event (seed 003, §5.1: the configuration after the
prefix, restricted to F). Events are processed in input order, or with
``--time COL`` in the order of that column, within each key: a *stable*
sort, so ties keep input order. Times are numbers (int/float), datetimes
(Parquet timestamps) or, in CSV, text read as numbers or ISO 8601 datetimes
(no offset: UTC). ``--input -`` reads CSV from stdin; ``--output -`` (or no
``--output``) writes CSV to stdout.

Data rules of ``run``: CSV tag and key cells are text as written; a missing
tag or time is an error, and so is a tag outside the alphabet unless
``--skip-unknown``: then the event is dropped (the configuration is left
unchanged, as :meth:`Monitor.run` with ``unknown_tags="skip"`` does) and its
row repeats its key's previous output (the empty-stream output if none) --
the output *is* unchanged after that row, and the kept tag column shows which
rows were skipped. A ``--value`` cell must be a number; an empty cell or NaN
is NaN, an ordinary data value. Data errors name the column and the row,
counted from 0 over the data rows (the CSV header is not a row).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dt import DT
from dt.equivalence import status_equivalent
from dt.restartability import check_restartable

from .api import qre
from .errors import QreError
from .monitor import ENGINES, Monitor

__all__ = ["UsageError", "build_parser", "main"]

log = logging.getLogger(__name__)

EXIT_OK = 0
EXIT_NO = 1
EXIT_ERROR = 2

_STATUS_NAMES = ("undefined", "defined", "conflict")
_EQUIV_SCOPE = "proven on statuses for every tag string; data values not compared yet"
_DIFFER_SCOPE = ("the output statuses differ after this tag string, whatever the data; "
                 "data values not compared yet")

_EPILOG = """\
Q is query text, @path/to/file.qre, or a path ending in .json holding a DT.

examples:
  qre compile 'iter(atom(a, cur), 0, +)' --stats
  qre compile @sum.qre --dot sum.dot --emit sum.json
  qre check equiv 'iter(atom(a, cur), 0, +)' sum.json --alphabet a,b
  qre check restartable 'alphabet a, b; once(count() >= const(3))'
  qre run @sum.qre --input events.csv --key user --tag tag --value amount --output out.parquet

exit codes: 0 success / equivalent / restartable, 1 not equivalent / not
restartable, 2 usage or input error.
"""


class UsageError(ValueError):
    """A user error the CLI reports in one line with exit code 2."""


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting, so :func:`main` returns the code."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message}")


# --------------------------------------------------------------------------- loading Q


def _load(spec: str, alphabet: Sequence[str] | None = None) -> Monitor:
    """A monitor for ``spec``: query text, ``@file`` (query text) or ``*.json`` (a DT)."""
    if spec.endswith(".json") and not spec.startswith("@"):
        return Monitor.from_dt(DT.from_json(_read_text(spec)), alphabet)
    if spec.startswith("@"):
        text = _read_text(spec[1:])
        if spec.endswith(".json"):
            return Monitor.from_dt(DT.from_json(text), alphabet)
        return qre(text, alphabet)
    return qre(spec, alphabet)


def _read_text(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"cannot read {path}: {getattr(e, 'strerror', None) or e}") from e


def _alphabet(text: str | None) -> list[str] | None:
    if text is None:
        return None
    tags = [t.strip() for t in text.split(",") if t.strip()]
    if not tags:
        raise UsageError("--alphabet needs at least one tag, e.g. --alphabet a,b")
    return tags


# --------------------------------------------------------------------------- output


def _emit(args: argparse.Namespace, data: dict[str, Any], lines: list[str]) -> None:
    """Print ``data`` as JSON with --json, else the human-readable ``lines``."""
    if args.json:
        print(json.dumps(data, indent=2, allow_nan=False))
    else:
        print("\n".join(lines))


def _write(path: str, text: str) -> None:
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as e:
        raise UsageError(f"cannot write {path}: {e.strerror or e}") from e


def _status_names(statuses: Sequence[int]) -> list[str]:
    return [_STATUS_NAMES[s] for s in statuses]


def _tag_string(tags: Sequence[str]) -> str:
    return " ".join(tags) if tags else "(the empty stream)"


# --------------------------------------------------------------------------- compile


def _cmd_compile(args: argparse.Namespace) -> int:
    """Sizes before / after the optimizer; --dot and --emit write the optimized DT."""
    m = _load(args.query)
    before = m.unoptimized or m.dt
    sizes = {
        "before": {"states": len(before.states), "transitions": len(before.transitions),
                   "size": before.size},
        "after": {"states": len(m.dt.states), "transitions": len(m.dt.transitions),
                  "size": m.dt.size},
    }
    data: dict[str, Any] = {"alphabet": list(m.alphabet), "final": list(m.dt.final), **sizes}
    lines = [f"alphabet: {', '.join(m.alphabet)}",
             f"outputs: {len(m.dt.final)}"]
    for when in ("before", "after"):
        s = sizes[when]
        lines.append(f"{when} optimizer: {s['states']} states, {s['transitions']} transitions, "
                     f"size {s['size']}")
    if args.stats:
        stats = dataclasses.asdict(m.stats)
        data["stats"] = stats
        lines += [f"  {k}: {v}" for k, v in stats.items()]
    if args.dot:
        _write(args.dot, m.dt.to_dot())
        data["dot"] = args.dot
        lines.append(f"wrote DOT to {args.dot}")
    if args.emit:
        _write(args.emit, m.dt.to_json())
        data["emit"] = args.emit
        lines.append(f"wrote DT JSON to {args.emit}")
    _emit(args, data, lines)
    return EXIT_OK


# --------------------------------------------------------------------------- check


def _cmd_equiv(args: argparse.Namespace) -> int:
    """Status equivalence (Theorem 5.3) of the two optimized DTs."""
    alphabet = _alphabet(args.alphabet)
    a, b = _load(args.q1, alphabet), _load(args.q2, alphabet)
    answer = status_equivalent(a.dt, b.dt)
    scope = _EQUIV_SCOPE if answer.equivalent else _DIFFER_SCOPE
    data: dict[str, Any] = {"equivalent": answer.equivalent, "scope": scope,
                            "explored": answer.explored}
    if answer.equivalent:
        lines = [f"equivalent ({_EQUIV_SCOPE})"]
    else:
        word = answer.counterexample or ()
        first, second = answer.statuses or ((), ())
        data.update(counterexample=list(word), statuses=[_status_names(first),
                                                         _status_names(second)])
        lines = ["not equivalent",
                 f"shortest counterexample: {_tag_string(word)}",
                 f"  Q1 outputs: {', '.join(_status_names(first))}",
                 f"  Q2 outputs: {', '.join(_status_names(second))}",
                 f"({_DIFFER_SCOPE})"]
    _emit(args, data, lines)
    return EXIT_OK if answer.equivalent else EXIT_NO


def _cmd_restartable(args: argparse.Namespace) -> int:
    """Definition 5.4 on the DT as compiled (before the optimizer)."""
    m = _load(args.query)
    answer = check_restartable(m.unoptimized or m.dt)
    data: dict[str, Any] = {"restartable": answer.restartable, "explored": answer.explored}
    if answer.restartable:
        lines = ["restartable"]
    else:
        w = answer.witness
        assert w is not None  # not restartable always comes with a witness
        threads = [{"position": p, "initial": _status_names(x)} for p, x in w.threads]
        data["witness"] = {"tags": list(w.tags), "threads": threads,
                           "restarted": _status_names(w.restarted),
                           "separate": _status_names(w.separate)}
        lines = ["not restartable", f"tags: {_tag_string(w.tags)}"]
        lines += [f"  thread at position {t['position']}: initial {', '.join(t['initial'])}"
                  for t in threads]
        lines += [f"restarted run outputs: {', '.join(_status_names(w.restarted))}",
                  f"separate threads give: {', '.join(_status_names(w.separate))}"]
    _emit(args, data, lines)
    return EXIT_OK if answer.restartable else EXIT_NO


# --------------------------------------------------------------------------- run

_RUN_EPILOG = """\
Q is query text, @path/to/file.qre, or a path ending in .json holding a DT.

output: every input row in input order (like a pandas transform), its columns
followed by status (0 undefined, 1 defined, 2 conflict) and value (empty/NaN
unless defined) -- status_F and value_F for each output F of a DT with several
outputs. A row's status and value are the monitor's output (of the row's key,
with --key) after the row's event, in the order events are processed.

order: without --time, events are processed in input order; with --time COL,
in order of that column (within each key with --key), ties in input order (a
stable sort). Times are numbers (int or float) or datetimes: Parquet
timestamps, or in CSV ISO 8601 text (2024-05-01T12:00:00+02:00; no offset
means UTC). A missing or unparsable time is an error.

data: CSV tag and key cells are read as text, exactly as written. A missing
tag (empty cell) is an error; so is a tag outside the query's alphabet unless
--skip-unknown is given: a skipped event leaves the monitor unchanged, so its
row repeats the output of its key's previous event (the output on the empty
stream if it is the first). --value cells must be numbers; an empty cell, NaN
or NA is the float NaN, an ordinary data value. Errors name the row, counted
from 0 over the data rows (the CSV header is not a row), and the column.

examples:
  qre run @sum.qre --input events.csv --value amount              # CSV to stdout
  qre run @sum.qre --input events.parquet --value amount --output out.parquet
  qre run @sum.qre --input events.csv --tag kind --value amount   # tags in column kind
  qre run @sum.qre --input events.csv --key user --value amount   # one stream per user
  qre run @sum.qre --input events.csv --key user --time ts --value amount
  qre run 'iter(atom(a, cur.x * cur.y), 0, +)' --input e.csv --value x --value y
  qre run @sum.qre --input events.csv --value amount --skip-unknown
  qre run @sum.qre --input events.csv --value amount --engine reference
  cat events.csv | qre run @sum.qre --input - --value amount --output - > out.csv
  qre run @sum.qre --input events.csv --value amount --json     # JSON records

exit codes: 0 success, 2 usage or input error (one line on stderr).
"""


def _where(option: str, column: str, row: int) -> str:
    """Where a data error is: rows count the data rows from 0 (a CSV header is not a row)."""
    return f"{option} column {column!r}, row {row} (0-based data row)"


def _read_frame(path: str, text_columns: Sequence[str] = ()) -> pd.DataFrame:
    """The events of ``--input``: CSV (a path, or ``-`` for stdin) or Parquet.

    CSV cells of ``text_columns`` (the tag and key columns) are read as the
    text written: pandas would otherwise turn a tag ``NA`` or ``null`` into a
    missing value and merge keys ``007`` and ``7``. An empty cell is ``""``.
    """
    stdin = path == "-"
    suffix = ".csv" if stdin else Path(path).suffix.lower()
    if suffix not in (".csv", ".parquet", ".pq"):
        raise UsageError(f"--input {path}: expected a .csv or .parquet file, or - for CSV "
                         f"on stdin")
    name = "stdin" if stdin else path
    try:
        if suffix == ".csv":
            return pd.read_csv(sys.stdin if stdin else path,
                               converters={c: str for c in text_columns})
        return pd.read_parquet(path)
    except FileNotFoundError as e:
        raise UsageError(f"cannot read {name}: no such file") from e
    except (OSError, ValueError, pd.errors.ParserError) as e:  # EmptyDataError is a ValueError
        raise UsageError(f"cannot read {name}: {_one_line(str(e)) or type(e).__name__}") from e


def _column(frame: pd.DataFrame, name: str, option: str) -> pd.Series:
    if name not in frame.columns:
        raise UsageError(f"{option}: no column {name!r} in the input "
                         f"(columns: {', '.join(map(str, frame.columns))})")
    return frame[name]


def _tags(frame: pd.DataFrame, name: str) -> np.ndarray:
    """The ``--tag`` column as strings; a missing tag (empty cell, null) is a data error."""
    cells = _column(frame, name, "--tag").to_numpy(dtype=object)
    missing = pd.isna(cells) | (cells == "")
    if missing.any():
        row = int(np.flatnonzero(missing)[0])
        raise UsageError(f"{_where('--tag', name, row)}: missing tag (empty cell)")
    return np.array([str(c) for c in cells], dtype=object)


def _check_tags(tags: np.ndarray, alphabet: Sequence[str], name: str) -> None:
    """Without --skip-unknown, the first tag outside the alphabet is a data error.

    Checked here rather than left to :meth:`Monitor.run`, whose message names
    the Python keyword ``unknown_tags='skip'`` and a position in the
    (possibly time-sorted) event array, not the input row and the option.
    """
    known = pd.Series(tags, dtype=object).isin(list(alphabet)).to_numpy()
    if not known.all():
        row = int(np.flatnonzero(~known)[0])
        raise UsageError(f"{_where('--tag', name, row)}: unknown tag {tags[row]!r}; the "
                         f"query's alphabet is {', '.join(alphabet)}; pass --skip-unknown "
                         f"to drop events with other tags")


def _value_column(frame: pd.DataFrame, name: str) -> np.ndarray:
    """A ``--value`` column as float64: numbers, and NaN for missing cells (a legal value)."""
    column = _column(frame, name, "--value")
    dtype = column.dtype
    if pd.api.types.is_bool_dtype(dtype) or (pd.api.types.is_numeric_dtype(dtype)
                                             and not pd.api.types.is_complex_dtype(dtype)):
        return column.to_numpy(dtype=np.float64, na_value=np.nan)
    if pd.api.types.is_datetime64_any_dtype(dtype) or pd.api.types.is_timedelta64_dtype(dtype):
        bad = column.notna().to_numpy()
    else:  # text (CSV strings) or Python objects: numbers parse, anything else is an error
        cells = column.astype(object)
        numbers = pd.to_numeric(cells, errors="coerce")
        bad = (numbers.isna() & cells.notna()).to_numpy()
        if not bad.any():
            return numbers.to_numpy(dtype=np.float64, na_value=np.nan)
    if not bad.any():  # all missing: NaN throughout
        return np.full(len(column), np.nan)
    row = int(np.flatnonzero(bad)[0])
    raise UsageError(f"{_where('--value', name, row)}: {column.iloc[row]!r} is not a number")


def _event_values(m: Monitor, frame: pd.DataFrame, names: list[str]) -> Any:
    """The data the query reads: ``cur`` from one --value, ``cur.F`` from --value F.

    The needs are checked here, against the DT as compiled (the optimizer may
    drop reads), so the message speaks of options; every --value column is
    converted (and its data errors reported) even if the query does not read it.
    """
    columns = {name: _value_column(frame, name) for name in names}
    source = m.unoptimized or m.dt
    if source.reads_scalar_cur:
        if len(columns) != 1:
            got = f", not {len(columns)}" if columns else ""
            raise UsageError(f"the query reads cur (one number per event): name its column "
                             f"with exactly one --value COL{got}")
        return next(iter(columns.values()))
    missing = sorted(source.fields - set(columns))
    if missing:
        reads = ", ".join(f"cur.{f}" for f in missing)
        raise UsageError(f"the query reads {reads}: add "
                         f"{' '.join(f'--value {f}' for f in missing)}")
    return {f: columns[f] for f in sorted(source.fields)} or None


def _sortable_times(column: pd.Series, name: str) -> np.ndarray:
    """The ``--time`` column as a numpy array whose order is the event-time order.

    Numbers stay numbers (int64 keeps nanosecond epochs exact); datetimes and
    timedeltas become int64 nanoseconds (time-zone aware ones in UTC); text
    (CSV) is read as numbers if at least as many cells parse as numbers as
    parse as ISO 8601 datetimes, else as datetimes (no offset: UTC).
    """
    dtype = column.dtype
    if pd.api.types.is_datetime64_any_dtype(dtype) or pd.api.types.is_timedelta64_dtype(dtype):
        _no_missing_time(column, name)
        if getattr(dtype, "tz", None) is not None:
            column = column.dt.tz_convert(None)
        return column.to_numpy().view(np.int64)
    if pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_complex_dtype(dtype):
        _no_missing_time(column, name)
        return column.to_numpy(dtype=getattr(dtype, "numpy_dtype", dtype))
    cells = column.astype(object)
    _no_missing_time(cells.map(lambda c: None if isinstance(c, str) and not c.strip() else c),
                     name)
    numbers = pd.to_numeric(cells, errors="coerce")
    dates = pd.to_datetime(cells, format="ISO8601", errors="coerce", utc=True)
    n_numbers, n_dates = int(numbers.notna().sum()), int(dates.notna().sum())
    chosen, kind = (numbers, "a number") if n_numbers >= n_dates else (dates, "a datetime")
    bad = chosen.isna().to_numpy()
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        why = ("is neither a number nor an ISO 8601 datetime" if max(n_numbers, n_dates) == 0
               else f"is not {kind} like the column's other times")
        raise UsageError(f"{_where('--time', name, row)}: {cells.iloc[row]!r} {why}")
    if chosen is dates:
        return dates.dt.tz_convert(None).to_numpy().view(np.int64)
    return numbers.to_numpy()


def _no_missing_time(column: pd.Series, name: str) -> None:
    missing = column.isna().to_numpy()
    if missing.any():
        row = int(np.flatnonzero(missing)[0])
        raise UsageError(f"{_where('--time', name, row)}: missing time (empty cell, NaN or "
                         f"NaT); every event needs one with --time")


def _time_order(frame: pd.DataFrame, name: str) -> np.ndarray:
    """Row positions in event-time order, ties in input order (a stable sort).

    One global stable sort suffices with --key too: :meth:`Monitor.run_keys`
    processes each key's rows in the order given, so each key sees its own
    events sorted by time, ties in input order.
    """
    times = _sortable_times(_column(frame, name, "--time"), name)
    return np.argsort(times, kind="stable")


def _take(data: Any, order: np.ndarray | None) -> Any:
    """Rows ``order`` of an array, of every array of a dict, or None as is."""
    if order is None or data is None:
        return data
    if isinstance(data, dict):
        return {name: column[order] for name, column in data.items()}
    return data[order]


def _input_order(outputs: np.ndarray, order: np.ndarray | None) -> np.ndarray:
    """Outputs computed on rows ``order`` (time order), put back at their input rows."""
    if order is None:
        return outputs
    aligned = np.empty_like(outputs)
    aligned[order] = outputs
    return aligned


def _cmd_run(args: argparse.Namespace) -> int:
    """One output row per input row: the input columns plus status and value.

    Events run in input order, or with --time in event-time order (per key
    with --key, stable); the outputs go back to the input rows either way.
    """
    m = _load(args.query)
    frame = _read_frame(args.input, [c for c in (args.tag, args.key) if c is not None])
    tags = _tags(frame, args.tag)
    keys = None if args.key is None else _column(frame, args.key, "--key").to_numpy(dtype=object)
    order = None if args.time is None else _time_order(frame, args.time)
    if not args.skip_unknown:
        _check_tags(tags, m.alphabet, args.tag)
    values = _event_values(m, frame, args.value or [])
    tags, values, keys = _take(tags, order), _take(values, order), _take(keys, order)
    # Skipped events keep the configuration; Monitor repeats the previous output for them.
    options: dict[str, Any] = {"engine": args.engine,
                               "unknown_tags": "skip" if args.skip_unknown else "error"}
    out = (m.run(tags, values, **options) if keys is None
           else m.run_keys(keys, tags, values, **options))
    status, value = _input_order(out.status, order), _input_order(out.value, order)
    result = frame.copy()
    if status.ndim == 1:
        result["status"], result["value"] = status, value
    else:  # several outputs: one status / value pair per final state, in order
        # Named after the DT as given: the optimizer keeps the order of the outputs
        # but not necessarily the names of the final states.
        names = (m.unoptimized or m.dt).final
        for j, name in enumerate(names if len(names) == len(out.final) else out.final):
            result[f"status_{name}"], result[f"value_{name}"] = status[:, j], value[:, j]
    if args.output and args.output != "-":
        _write_frame(result, args.output)
        _emit(args, {"rows": len(result), "output": args.output},
              [f"wrote {len(result)} rows to {args.output}"])
    elif args.json:
        print(_records_json(result))
    else:
        sys.stdout.write(result.to_csv(index=False))
    return EXIT_OK


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


# --------------------------------------------------------------------------- parser


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``qre`` (subcommands compile, check equiv/restartable, run)."""
    parser = _Parser(prog="qre", description="Compile, check and run QRE-Past queries "
                     "(data transducers, seed 003 §5).", epilog=_EPILOG,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def json_flag(p: argparse.ArgumentParser) -> None:
        p.add_argument("--json", action="store_true", help="machine-readable output")

    p = sub.add_parser("compile", help="compile Q and print its sizes", epilog=_EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("query", metavar="Q")
    p.add_argument("--stats", action="store_true", help="print all monitor statistics")
    p.add_argument("--dot", metavar="FILE", help="write the optimized DT as Graphviz DOT")
    p.add_argument("--emit", metavar="FILE.json", help="write the optimized DT as JSON")
    json_flag(p)
    p.set_defaults(handler=_cmd_compile)

    check = sub.add_parser("check", help="decide properties of queries", epilog=_EPILOG,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    what = check.add_subparsers(dest="check", required=True, parser_class=_Parser)
    p = what.add_parser("equiv", help="status equivalence of two queries (Theorem 5.3)")
    p.add_argument("q1", metavar="Q1")
    p.add_argument("q2", metavar="Q2")
    p.add_argument("--alphabet", metavar="a,b", help="compile both queries over these tags")
    json_flag(p)
    p.set_defaults(handler=_cmd_equiv)
    p = what.add_parser("restartable", help="restartability (Definition 5.4)")
    p.add_argument("query", metavar="Q")
    json_flag(p)
    p.set_defaults(handler=_cmd_restartable)

    p = sub.add_parser("run", help="run Q over a CSV or Parquet file", epilog=_RUN_EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("query", metavar="Q")
    p.add_argument("--input", metavar="FILE", required=True,
                   help=".csv or .parquet events; - reads CSV from stdin")
    p.add_argument("--key", metavar="COL", help="run one independent stream per key")
    p.add_argument("--tag", metavar="COL", default="tag", help="tag column (default: tag)")
    p.add_argument("--time", metavar="COL",
                   help="process events in order of this time column (per key; ties in "
                        "input order); output rows stay in input order")
    p.add_argument("--value", metavar="COL", action="append",
                   help="value column; repeat for record fields (cur.COL)")
    p.add_argument("--skip-unknown", action="store_true",
                   help="drop events whose tag is not in the alphabet (their rows repeat "
                        "the previous output) instead of failing")
    p.add_argument("--engine", choices=ENGINES, default="auto",
                   help="evaluation engine (default: auto, the fastest ready)")
    p.add_argument("--output", metavar="FILE",
                   help=".csv or .parquet; - or none: CSV on stdout")
    json_flag(p)
    p.set_defaults(handler=_cmd_run)
    return parser


def _one_line(message: str) -> str:
    return " ".join(part.strip() for part in message.splitlines() if part.strip())


def main(argv: list[str] | None = None) -> int:
    """Run the ``qre`` command line on ``argv`` (default ``sys.argv[1:]``); return the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except UsageError as e:
        print(str(e), file=sys.stderr)
        return EXIT_ERROR
    except SystemExit as e:  # --help and --version exit through argparse
        return int(e.code or 0) if not isinstance(e.code, str) else EXIT_ERROR
    try:
        return int(args.handler(args))
    except QreError as e:
        # A query error keeps its located message: line, column and caret.
        print(f"qre: {e}", file=sys.stderr)
    except (ValueError, TypeError, KeyError, OSError) as e:
        # Bad JSON DTs (DTError), unknown tags, bad values: one line, no traceback
        # (the traceback is still available to a caller that enables debug logging).
        log.debug("qre command failed", exc_info=True)
        print(f"qre: {_one_line(str(e)) or type(e).__name__}", file=sys.stderr)
    return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
