"""The command ``qre diff`` (:mod:`qre.cli`): two output files, the same stream up to a dependence?

Reads LEFT and RIGHT (CSV or Parquet, as ``qre run`` reads its input), turns each
row into an item and runs the DiffStream matcher (:mod:`qre.traces`) over them
side by side. Prints the verdict: equivalent, or the first row with no partner,
where (file and row, counted from 0 over the data rows) and why. Exit 0 when
equivalent, 1 when not, 2 on a usage or input error.
"""

from __future__ import annotations

import argparse
import math

from .cli import EXIT_NO, EXIT_OK, UsageError, emit
from .cli_run import read_frame
from .traces import DependenceSyntaxError, ItemError, compare_streams, to_dependence

__all__ = ["cmd_diff"]


def cmd_diff(args: argparse.Namespace) -> int:
    try:
        dependence = to_dependence(args.dependence, args.header)
    except DependenceSyntaxError as error:
        raise UsageError(f"--dependence: {error.message}, at column {error.column}") from error
    left, right = read_frame(args.left, option="LEFT"), read_frame(args.right, option="RIGHT")
    if args.equal is None and set(left.columns) != set(right.columns):
        raise UsageError(
            f"{args.left} and {args.right} have different columns ({', '.join(left.columns)} "
            f"and {', '.join(right.columns)}): compare some with --equal COL")
    names = (args.left, args.right) if args.left != args.right else ("LEFT", "RIGHT")
    try:
        verdict = compare_streams(left, right, dependence, equal=args.equal, names=names)
    except ItemError as error:
        raise UsageError(str(error)) from error
    mismatch = verdict.mismatch
    data = {"equivalent": verdict.equivalent, "rows": list(verdict.counts),
            "matched": verdict.matched, "peak_unmatched": verdict.peak_unmatched,
            "mismatch": None if mismatch is None else {
                "file": mismatch.side, "row": mismatch.position,
                "item": _jsonable(mismatch.item), "reason": mismatch.reason,
                "other": None if mismatch.other is None else {
                    "file": mismatch.other[0], "row": mismatch.other[1],
                    "item": _jsonable(mismatch.other[2])}}}
    emit(args, data, [str(verdict)])
    return EXIT_OK if verdict.equivalent else EXIT_NO


def _jsonable(row: dict) -> dict:
    """A row as JSON values: numbers and text as they are, the rest (NaN, ±inf,
    datetimes) as text."""
    return {str(k): v if isinstance(v, bool | int | str) or v is None
            or (isinstance(v, float) and math.isfinite(v)) else str(v) for k, v in row.items()}
