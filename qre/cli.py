"""The ``qre`` command line (API.md, "Command line"): compile, check and run queries.

Subcommands::

    qre compile Q [--stats] [--dot FILE] [--emit FILE.json] [--json]
    qre check equiv Q1 Q2 [--alphabet a,b] [--json]
    qre check restartable Q [--json]
    qre run Q --input FILE [--key COL] [--tag COL] [--time COL] [--value COL ...]
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

import pandas as pd

from dt import DT
from dt.equivalence import status_equivalent
from dt.restartability import check_restartable

from .api import qre
from .errors import QreError
from .monitor import Monitor

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


def _read_frame(path: str) -> pd.DataFrame:
    suffix = Path(path).suffix.lower()
    if suffix not in (".csv", ".parquet", ".pq"):
        raise UsageError(f"--input {path}: expected a .csv or .parquet file")
    try:
        if suffix == ".csv":
            return pd.read_csv(path)
        return pd.read_parquet(path)
    except FileNotFoundError as e:
        raise UsageError(f"cannot read {path}: no such file") from e
    except (OSError, ValueError, pd.errors.ParserError) as e:
        raise UsageError(f"cannot read {path}: {_one_line(str(e))}") from e


def _column(frame: pd.DataFrame, name: str, option: str) -> pd.Series:
    if name not in frame.columns:
        raise UsageError(f"{option}: no column {name!r} in the input "
                         f"(columns: {', '.join(map(str, frame.columns))})")
    return frame[name]


def _event_values(m: Monitor, frame: pd.DataFrame, names: list[str]) -> Any:
    """One --value is plain ``cur`` unless the DT reads fields; otherwise a record of columns."""
    columns = {name: _column(frame, name, "--value").to_numpy() for name in names}
    if not columns:
        return None
    source = m.unoptimized or m.dt
    if len(columns) == 1 and not source.fields:
        return next(iter(columns.values()))
    return columns


def _cmd_run(args: argparse.Namespace) -> int:
    """One output row per input row: the input columns plus status and value."""
    m = _load(args.query)
    frame = _read_frame(args.input)
    tags = _column(frame, args.tag, "--tag").astype(str).to_numpy(dtype=object)
    if args.time is not None:
        _column(frame, args.time, "--time")  # passed through; ordering by time is not done
    values = _event_values(m, frame, args.value or [])
    if args.key is not None:
        out = m.run_keys(_column(frame, args.key, "--key"), tags, values)
    else:
        out = m.run(tags, values)
    result = frame.copy()
    status, value = out.status, out.value
    if status.ndim == 1:
        result["status"], result["value"] = status, value
    else:  # several outputs: one status / value pair per final state, in order
        # Named after the DT as given: the optimizer keeps the order of the outputs
        # but not necessarily the names of the final states.
        names = (m.unoptimized or m.dt).final
        for j, name in enumerate(names if len(names) == len(out.final) else out.final):
            result[f"status_{name}"], result[f"value_{name}"] = status[:, j], value[:, j]
    if args.output:
        _write_frame(result, args.output)
        _emit(args, {"rows": len(result), "output": args.output},
              [f"wrote {len(result)} rows to {args.output}"])
    elif args.json:
        print(result.to_json(orient="records"))
    else:
        sys.stdout.write(result.to_csv(index=False))
    return EXIT_OK


def _write_frame(frame: pd.DataFrame, path: str) -> None:
    suffix = Path(path).suffix.lower()
    try:
        if suffix in (".parquet", ".pq"):
            frame.to_parquet(path, index=False)
        elif suffix == ".csv":
            frame.to_csv(path, index=False)
        else:
            raise UsageError(f"--output {path}: expected a .csv or .parquet file")
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

    p = sub.add_parser("run", help="run Q over a CSV or Parquet file", epilog=_EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("query", metavar="Q")
    p.add_argument("--input", metavar="FILE", required=True, help=".csv or .parquet events")
    p.add_argument("--key", metavar="COL", help="run one independent stream per key")
    p.add_argument("--tag", metavar="COL", default="tag", help="tag column (default: tag)")
    p.add_argument("--time", metavar="COL", help="event time column (passed through)")
    p.add_argument("--value", metavar="COL", action="append",
                   help="value column; repeat for record fields (cur.COL)")
    p.add_argument("--output", metavar="FILE", help=".csv or .parquet (default: CSV on stdout)")
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
