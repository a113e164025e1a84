"""The ``qre`` command line (API.md, "Command line"): compile, check and run queries.

Subcommands::

    qre compile Q [--stats] [--dot FILE] [--emit FILE.json] [--json]
    qre check equiv Q1 Q2 [--alphabet a,b] [--statuses] [--max-pairs N] [--json]
    qre check restartable Q [--max-states N] [--json]
    qre check language Q [--max-configs N] [--json]
    qre run Q --input FILE [--key COL] [--tag COL] [--time COL] [--value COL ...]
            [--tiebreak COL ...] [--time-unit U] [--alphabet a,b] [--prefix P]
            [--skip-unknown] [--engine {auto,reference,table,codegen}]
            [--output FILE] [--json]
    qre diff LEFT RIGHT --dependence D [--header COL] [--equal COL ...] [--json]
    qre --version

``Q`` is query text, ``@path/to/file.qre`` (the text of that file) or a path
ending in ``.json`` holding a DT (the format of :mod:`dt.json_io`).

Exit codes: 0 success (equivalent, restartable), 1 a negative answer of
``check`` (not equivalent, not restartable; a counterexample or witness is
printed), 2 a usage or input error (bad query, unreadable file, bad JSON,
missing column, unknown tag), 3 equivalence undecided (API.md names 0, 1, 2;
3 is the honest answer when values are neither proven equal nor separated).
A user error is reported on stderr in one line (a query error keeps its
located message: line, column, caret), never as a traceback.

``check equiv`` compares statuses (decided, seed 003, Theorem 5.3) and values
(:mod:`dt.value_equivalence`: proven by an inductive invariant, else searched
up to a bound and tested), and says which; ``--statuses`` stops after the
statuses.
``check restartable`` decides Definition 5.4 (Theorem 5.6) on the optimized
DT (the optimizer keeps every run with restarts exactly, so the answer is the
DT-as-compiled's); a witness is replayed on the DT as compiled too.

``run`` writes one row per input row, in input order (like a pandas
transform): the input columns, unchanged, then ``status`` (0 undefined,
1 defined, 2 conflict) and ``value`` (NaN unless defined), or
``status_F``/``value_F`` per output F (:mod:`qre.runtime.output`; ``--prefix P``
starts each of these names with P, and an output named like an input column
is an error, never an overwrite). A row's output is the monitor's output (of
its key, with ``--key``) after its event (seed 003, §5.1: the configuration
after the prefix, restricted to F). Events are processed in input order, or
with ``--time COL`` in the order of that column within each key, equal times
by :mod:`qre.runtime.order`'s rule (``--tiebreak`` columns, the tag, the ``--value``
columns, then input order) — the rule of every entry point, Spark's
included. Times are numbers (int/float), datetimes (Parquet timestamps) or,
in CSV, text read as numbers or ISO 8601 datetimes (no offset: UTC); a time
the runtime refuses (a boolean, out of range: :class:`qre.runtime.times.TimeError`)
is an error naming the ``--time`` column and the row. Parquet key and tag columns
of numbers keep their identity (:mod:`qre.runtime.keys`).
``--input -`` reads CSV from stdin; ``--output -`` (or no ``--output``)
writes CSV to stdout. A timed query (windows, a clock, ``within``) writes
the rows it emits instead: key, stamp, tag, the event row's other columns
(empty for a window's row), ``row``, [``start``], ``status``, ``value``.

Data rules of ``run``: CSV tag and key cells are text as written; without
``--tag`` and without a ``tag`` column, a query whose events have one tag
gives it to every event; a missing tag or time is an error, and so is a tag
outside the alphabet unless ``--skip-unknown``: then the event is dropped (the
configuration is left unchanged, as :meth:`Monitor.run` with
``unknown_tags="skip"`` does) and its row repeats its key's previous output
(the empty-stream output if none) -- the output *is* unchanged after that row,
and the kept tag column shows which rows were skipped. A ``--value`` cell must
be a number; an empty cell or NaN is NaN, an ordinary data value. Data errors
name the column and the row, counted from 0 over the data rows (the CSV header
is not a row).

``diff`` compares two output files as streams up to a dependence (seed 003
§3, :mod:`qre.traces`): exit 0 equivalent, 1 not (the first row with no
partner is printed, with its file, row and why).

Modules: this one parses the arguments and reports errors; the commands are
:mod:`qre.cli_check` (compile, check), :mod:`qre.cli_run` (run) and
:mod:`qre.cli_diff` (diff), imported when one runs, so that ``qre --help`` and
``qre --version`` import neither the compiler nor pandas nor Numba (a tenth of a
second instead of half a second).
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._version import __version__
from .language.clock import UNIT_NS
from .runtime.engines import ENGINES
from .runtime.progress import configure_logging

if TYPE_CHECKING:
    from .runtime.cer.matches import Matcher
    from .runtime.dataflow.joins import Joiner
    from .runtime.monitor import Monitor

__all__ = ["UsageError", "build_parser", "console", "main"]

log = logging.getLogger(__name__)

EXIT_OK = 0
EXIT_NO = 1
EXIT_ERROR = 2
EXIT_UNDECIDED = 3

_EPILOG = """\
Q is query text, @path/to/file.qre, a path ending in .json holding a DT, or
one ending in .py holding a streaming algorithm (init, update(tag, cur),
output; see docs/API.md).

examples:
  qre compile 'iter(atom(a, cur), 0, +)' --stats
  qre compile @sum.qre --dot sum.dot --emit sum.json
  qre check equiv 'iter(atom(a, cur), 0, +)' sum.json --alphabet a,b
  qre check restartable 'alphabet a, b; once(count() >= const(3))'
  qre check restartable counter.json --convert restartable.json
  qre compile 'iter(atom(a, cur), 0, +)' --to cra --emit sum-cra.json
  qre check language 'split(atom(a, cur), iter(atom(b, cur), 0, +), +)'
  qre run @sum.qre --input events.csv --key user --tag tag --value amount --output out.parquet
  qre diff local.csv spark.parquet --dependence 'by_key(user)'

exit codes: 0 success / equivalent / restartable, 1 not equivalent / not
restartable, 2 usage or input error, 3 equivalence undecided.
"""


_EQUIV_DESCRIPTION = """\
Are Q1 and Q2 equivalent: the same status and value after every prefix of
every input? Values are equal bit for bit (all NaNs alike; -0.0 != 0.0).

1. statuses: decided for every tag string (seed 003, Theorem 5.3); a
   difference gives a shortest counterexample.
2. values: proven for every input when an inductive invariant (which
   registers of the two monitors hold equal values, per pair of reachable
   configurations) is found by symbolic evaluation of one step.
3. otherwise every tag string up to a length is evaluated symbolically;
   where the output terms differ, data that separates them is searched
   (signed zeros, infinities, NaN, 0.1-style rounding, plateaus, random
   values). When no new configuration appears (registers holding finitely
   many values, as in boolean temporal queries) this covers every input:
   proven.
4. then random words (reference evaluator, every prefix).
Every counterexample is replayed on the reference evaluator. The report
says what was proven and what was only tested, up to which length.

exit codes: 0 equivalent (proven), 1 not equivalent (a counterexample is
printed), 2 usage or input error, 3 undecided (statuses equal, values not
proven and no counterexample found; or the search limit was reached).
"""


_RESTARTABLE_DESCRIPTION = """\
Is Q's DT restartable (seed 003, Definition 5.4)? A restartable DT can
replace many threads of computation by one configuration; the constructions
of split and iter need it. Decided by the procedure of Theorem 5.6 on the
unit projection of the optimized DT, which keeps every run with restarts
exactly (hence the same answer, faster). A violation comes with a witness
(tags, the threads' start positions and initial statuses, the outputs of the
restarted run and of the separate threads) replayed on the reference
evaluator, on the DT as compiled as well. Compiled base queries are
restartable (Theorem 5.7); temporal queries need not be. Also says whether
the DT is output-synchronized.

When it is not, the restartable form is built (seed 003, §5.2.2 last
paragraph: through a deterministic cost register automaton, exponential at
worst) and its cost printed; --convert writes it. Some DTs have none (one
that outputs with every input undefined, say): the reason is printed.

exit codes: 0 restartable, 1 not (a witness is printed), 2 error (or the
search limit was reached).
"""

_LANGUAGE_DESCRIPTION = """\
For each output of Q: L, the tag strings after which it is defined, and
L-bar (the rate), those after which it is defined or a conflict. Says
whether each is empty or universal (every tag string), with a shortest tag
string in it and a shortest one outside it. Exact: statuses depend only on
the tag string (seed 003, Theorem 5.2), and the reachable configurations of
the unit projection are searched breadth-first; every witness is replayed on
the reference evaluator.

exit codes: 0 answered, 2 error (or the search limit was reached).
"""


_SCALE = """\
scale (benchmarks/checkers.py on 2 cores; table in benchmarks/CHECKERS.md):
the checks search the reachable status configurations of the DTs. Compiled
queries of size 50 to 100 (splits, iterations, combines, temporal operators)
reach 2 to 40 of them, and the checks answer in under 0.1 s, except
restartable on nested splits (its triples: 0.9 s and 14,593 at size 48, over
a minute at size 76) and an undecided equiv, whose bounded search and random
tests take about 2 s. What
limits them is that number: about 8,000 pairs/s for equiv on statuses, 700
to 1,000/s for the value invariant, 16,000 nodes/s for restartable, 30,000/s
for language. A query such as "the n-th last event is a" has 2^n: at size 48
(2,049 pairs) equiv takes 0.3 s, with values 3 s, restartable 11 s; at size
76 (262,145 pairs) about a minute. The limits (--max-pairs, --max-states,
--max-configs: 10^6 by default) stop a search after a few minutes.
"""


_RUN_EPILOG = """\
Q is query text, @path/to/file.qre, or a path ending in .json holding a DT.

output: every input row in input order (like a pandas transform), its columns
unchanged, followed by status (0 undefined, 1 defined, 2 conflict) and value
(empty/NaN unless defined) -- status_F and value_F for each output F of a
monitor with several outputs. --prefix P names them P+status, P+value; an
output named like an input column is an error (pass --prefix), never an
overwrite. A row's status and value are the monitor's output (of the row's
key, with --key) after the row's event, in the order events are processed.

timed queries (aggregate windows, a clock period, matched(within(...))) need
--time: the output is then the emitted rows of Monitor.run_timed -- per key in
event-time order, one row per non-empty window (stamped at the window's end
minus one time unit for integer times, one microsecond for float times and
datetimes) or per event with a defined output: the key, time and tag
columns, the event row's other input columns (empty for a window's row), row
(the input row, -1 for a clock tick), start (a window's start), status and
value. --time-unit says what a numeric time counts (s, ms, us, ns, min, h,
d); float times are rounded to the nearest microsecond (ns: nanosecond).

order: without --time, events are processed in input order; with --time COL,
in order of that column (within each key with --key), equal times ordered by
the --tiebreak columns, then the tag, then the --value columns, then input
order -- the rule of every qre entry point (Spark's too: it has no input
order, so the rule looks at the rows' contents first). Times are numbers (int
or float) or datetimes: Parquet timestamps, or in CSV ISO 8601 text
(2024-05-01T12:00:00+02:00; no offset means UTC). A missing, unparsable or
boolean time is an error, and so is one of a timed query 2**62 time units or
more from the epoch (or infinite).

data: CSV tag and key cells are read as text, exactly as written. Without
--tag and without a tag column, a query whose events have a single tag gives
it to every event. A missing tag (empty cell) is an error; so is a tag outside
the query's alphabet unless --skip-unknown is given: a skipped event leaves
the monitor unchanged, so its row repeats the output of its key's previous
event (the output on the empty stream if it is the first). --value cells must
be numbers; an empty cell, NaN or NA is the float NaN, an ordinary data value.
Errors name the row, counted from 0 over the data rows (the CSV header is not
a row), and the column.

examples:
  qre run @sum.qre --input events.csv --value amount              # CSV to stdout
  qre run @sum.qre --input events.parquet --value amount --output out.parquet
  qre run @sum.qre --input events.csv --tag kind --value amount   # tags in column kind
  qre run @sum.qre --input events.csv --key user --value amount   # one stream per user
  qre run @sum.qre --input events.csv --key user --time ts --value amount
  qre run @sum.qre --input events.csv --time ts --tiebreak seq --value amount
  qre run 'sum(cur)' --input events.csv --value value --prefix qre_   # input has "value"
  qre run 'iter(atom(a, cur.x * cur.y), 0, +)' --input e.csv --value x --value y
  qre run @sum.qre --input events.csv --value amount --skip-unknown
  qre run @sum.qre --input events.csv --value amount --engine reference
  cat events.csv | qre run @sum.qre --input - --value amount --output - > out.csv
  qre run @sum.qre --input events.csv --value amount --json     # JSON records

exit codes: 0 success, 2 usage or input error (one line on stderr).
"""


_DIFF_DESCRIPTION = """\
Are LEFT and RIGHT the same stream of rows, up to the reorderings that the
dependence allows (seed 003 §3, DiffStream)? Two rows that the dependence
relates must be in the same order in both files; others may swap. Use it to
compare a parallel or Spark run with a sequential one without sorting both
(which hides reordering bugs). Rows are equal when every column is (NaN
equals NaN), or the --equal columns only. CSV and Parquet are read as
``qre run`` reads its input.
"""

_DIFF_EPILOG = """\
dependences:
  ordered                      every row in order: the files are equal
  unordered                    any order: the same multiset of rows
  by_key(user)                 rows of a user in order, users independent
  Sync(EOD, PartitionBy(taxi, Seq(ride)))    with --header kind: EOD rows
                               ordered with all, ride rows per taxi

examples:
  qre diff local.csv spark.parquet --dependence 'by_key(key)'
  qre diff a.csv b.csv --dependence unordered --equal key --equal value --json
  qre diff a.csv b.csv --dependence 'Sync(EOD, Bag(ride))' --header kind

the first row with no partner is reported: its file, its row (counted from 0
over the data rows) and why. exit codes: 0 equivalent, 1 not equivalent,
2 usage or input error.
"""


class UsageError(ValueError):
    """A user error the CLI reports in one line with exit code 2."""


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting, so :func:`main` returns the code."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message}")


# --------------------------------------------------------------------------- for the commands


def load_query(spec: str, alphabet: Sequence[str] | None = None, *,
               matches: bool = False) -> Monitor | Matcher | Joiner:
    """A monitor for ``spec``: query text, ``@file`` (query text), ``*.json`` (a DT) or
    ``*.py`` (a streaming algorithm, :mod:`qre.language.algorithm`);
    a ``match(...)`` query's :class:`~qre.runtime.cer.matches.Matcher` (a ``join(...)``
    query's :class:`~qre.runtime.dataflow.joins.Joiner`) where ``matches`` (``qre run``),
    else a usage error: it has no DT to compile or check."""
    # Imported here: the compiler (and pandas, through the runtime) are for commands only.
    from dt import DT

    from .api import qre
    from .runtime.monitor import Monitor

    if spec.endswith((".json", ".py")) and not spec.startswith("@"):
        spec = f"@{spec}"
    text = spec
    if spec.startswith("@"):
        text = read_text(spec[1:])
        if spec.endswith(".json"):
            return Monitor.from_dt(DT.from_json(text), alphabet)
        if spec.endswith(".py"):  # a streaming algorithm (Theorem 5.11)
            from .language.algorithm import algorithm_dt

            return Monitor.from_dt(algorithm_dt(text, alphabet), alphabet)
    m = qre(text, alphabet)
    if not matches and not isinstance(m, Monitor):
        word, rows = ("join", "pairs") if m.__class__.__name__ == "Joiner" else ("match", "matches")
        raise UsageError(f"a {word}(...) query's rows are its {rows}: it runs with qre run, "
                         "and has no DT to compile or check")
    return m


def read_text(path: str) -> str:
    """The text of the file at ``path`` (UTF-8), or a usage error saying why not."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"cannot read {path}: {getattr(e, 'strerror', None) or e}") from e


def parse_alphabet(text: str | None) -> list[str] | None:
    """The tags of ``--alphabet a,b`` (None without the option)."""
    if text is None:
        return None
    tags = [t.strip() for t in text.split(",") if t.strip()]
    if not tags:
        raise UsageError("--alphabet needs at least one tag, e.g. --alphabet a,b")
    return tags


def emit(args: argparse.Namespace, data: dict[str, Any], lines: list[str]) -> None:
    """Print ``data`` as JSON with --json, else the human-readable ``lines``."""
    if args.json:
        print(json.dumps(data, indent=2, allow_nan=False))
    else:
        print("\n".join(lines))


# --------------------------------------------------------------------------- parser


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``qre`` (subcommands compile, check equiv/restartable, run)."""
    parser = _Parser(prog="qre", description="Compile, check and run QRE-Past queries "
                     "(data transducers, seed 003 §5).", epilog=_EPILOG,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version",
                        version=f"qre {__version__} (distribution qre-monitor)")
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="say what qre is doing on stderr: stages, rows and seconds, "
                             "compiles (-vv: debug)")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def json_flag(p: argparse.ArgumentParser) -> None:
        p.add_argument("--json", action="store_true", help="machine-readable output")

    p = sub.add_parser("compile", help="compile Q and print its sizes", epilog=_EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("query", metavar="Q")
    p.add_argument("--stats", action="store_true", help="print all monitor statistics")
    p.add_argument("--dot", metavar="FILE", help="write the optimized DT as Graphviz DOT")
    p.add_argument("--emit", metavar="FILE.json", help="write the optimized DT as JSON "
                   "(with --to cra, its CRA)")
    p.add_argument("--to", choices=("dt", "cra"), default="dt",
                   help="cra: also translate the optimized DT to a deterministic cost register "
                        "automaton (seed 003, Theorem 5.8; up to 2^states control states) and "
                        "print its size")
    json_flag(p)
    p.set_defaults(handler="cmd_compile")

    check = sub.add_parser("check", help="decide properties of queries", epilog=_EPILOG,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    what = check.add_subparsers(dest="check", required=True, parser_class=_Parser)

    def add_check(name: str, handler: str, summary: str, description: str,
                  queries: tuple[str, ...], limit: str, limit_help: str) -> argparse.ArgumentParser:
        p = what.add_parser(name, help=summary, description=f"{description}\n{_SCALE}",
                            epilog=_EPILOG,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
        for q in queries:  # Q is args.query as in compile and run; Q1, Q2 are args.q1, q2
            p.add_argument("query" if q == "Q" else q.lower(), metavar=q)
        p.add_argument(limit, metavar="N", type=int, default=1_000_000,
                       help=f"{limit_help} (default 1000000)")
        json_flag(p)
        p.set_defaults(handler=handler)
        return p

    p = add_check("equiv", "cmd_equiv", "equivalence of two queries: statuses and values",
                  _EQUIV_DESCRIPTION, ("Q1", "Q2"), "--max-pairs",
                  "give up (exit 3) beyond N pairs of configurations")
    p.add_argument("--alphabet", metavar="a,b", help="compile both queries over these tags "
                   "(default: the union of the tags they mention)")
    p.add_argument("--statuses", action="store_true",
                   help="compare statuses only (Theorem 5.3): always decided")
    p = add_check("restartable", "cmd_restartable", "restartability (Definition 5.4)",
                  _RESTARTABLE_DESCRIPTION, ("Q",), "--max-states",
                  "give up (exit 2) beyond N search nodes")
    p.add_argument("--convert", metavar="FILE.json",
                   help="write a restartable DT equivalent to Q's as JSON (Q's own DT if it "
                        "is restartable)")
    add_check("language", "cmd_language", "emptiness / universality of L and L-bar",
              _LANGUAGE_DESCRIPTION, ("Q",), "--max-configs",
              "give up (exit 2) beyond N configurations")

    p = sub.add_parser("run", help="run Q over a CSV or Parquet file", epilog=_RUN_EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("query", metavar="Q")
    p.add_argument("--input", metavar="FILE", required=True,
                   help=".csv or .parquet events; - reads CSV from stdin")
    p.add_argument("--key", metavar="COL", help="run one independent stream per key")
    p.add_argument("--tag", metavar="COL",
                   help="tag column (default: tag; without one, a query whose events have "
                        "a single tag gives it to every event)")
    p.add_argument("--alphabet", metavar="a,b",
                   help="compile the query over these tags (default: its declaration, or "
                        "the tags it mentions)")
    p.add_argument("--time", metavar="COL",
                   help="process events in order of this time column (per key; ties by "
                        "--tiebreak, tag, --value columns, then input order); output rows "
                        "stay in input order")
    p.add_argument("--value", metavar="COL", action="append",
                   help="value column; repeat for record fields (cur.COL)")
    p.add_argument("--tiebreak", metavar="COL", action="append",
                   help="order events with equal --time by this column first (repeatable); "
                        "then by tag, then by the --value columns")
    p.add_argument("--prefix", default="",
                   help="start every output column's name with this (e.g. qre_): an output "
                        "column may not overwrite an input column")
    p.add_argument("--time-unit", default="s", choices=list(UNIT_NS),
                   help="what a numeric --time counts, for timed queries (default: s)")
    p.add_argument("--skip-unknown", action="store_true",
                   help="drop events whose tag is not in the alphabet (their rows repeat "
                        "the previous output) instead of failing")
    p.add_argument("--engine", choices=ENGINES, default="auto",
                   help="evaluation engine (default: auto, the fastest ready: reference "
                        "for a small input, which needs no Numba)")
    p.add_argument("--output", metavar="FILE",
                   help=".csv or .parquet; - or none: CSV on stdout")
    json_flag(p)
    p.set_defaults(handler="cmd_run")

    p = sub.add_parser("diff", help="are two output files the same stream up to a dependence?",
                       description=_DIFF_DESCRIPTION, epilog=_DIFF_EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("left", metavar="LEFT", help=".csv or .parquet")
    p.add_argument("right", metavar="RIGHT", help=".csv or .parquet")
    p.add_argument("--dependence", metavar="D", required=True,
                   help="which rows must stay in order: ordered, unordered, by_key(COL, ...) "
                        "or a schema (Seq, Bag, Sync, PartitionBy, Par)")
    p.add_argument("--header", metavar="COL",
                   help="the column naming each row's header, for a schema with several")
    p.add_argument("--equal", metavar="COL", action="append",
                   help="compare rows on this column (repeatable; default: every column)")
    json_flag(p)
    p.set_defaults(handler="cmd_diff")
    return parser


def one_line(message: str) -> str:
    """An error message in one line (the CLI's errors are one line each)."""
    return " ".join(part.strip() for part in message.splitlines() if part.strip())


def _command(name: str) -> Callable[[argparse.Namespace], int]:
    """The function of a subcommand: ``cmd_run`` in :mod:`qre.cli_run`, the others in
    :mod:`qre.cli_check`, each module imported only now (its imports are the cost)."""
    if name == "cmd_run":
        from . import cli_run as module
    elif name == "cmd_diff":
        from . import cli_diff as module  # type: ignore[no-redef]
    else:
        from . import cli_check as module  # type: ignore[no-redef]
    return getattr(module, name)  # type: ignore[no-any-return]


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
    # Imported once there is a command to run (see the module docstring): the located
    # query errors' class comes with the compiler.
    from dt.errors import SourceError

    from .language.errors import QreError

    try:
        with configure_logging(args.verbose):
            return int(_command(args.handler)(args))
    except BrokenPipeError:
        # The reader went away (``qre run ... | head``): nothing is wrong with the input,
        # so no message; stdout goes to devnull so that Python's exit flush stays quiet.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_ERROR
    except (QreError, SourceError) as e:
        # A query's (or an algorithm's, or a term's) error keeps its located message:
        # line, column and caret.
        print(f"qre: {e}", file=sys.stderr)
    except RecursionError:
        # A safety net: the parser's nesting limit (lets included) keeps every stage
        # within Python's recursion limit; a query built some other way may not be.
        log.debug("qre command failed", exc_info=True)
        print("qre: the query is nested too deeply to compile (Python's recursion limit)",
              file=sys.stderr)
    except (ValueError, TypeError, KeyError, OSError) as e:
        # Bad JSON DTs (DTError), unknown tags, bad values: one line, no traceback
        # (the traceback is still available to a caller that enables debug logging).
        log.debug("qre command failed", exc_info=True)
        print(f"qre: {one_line(str(e)) or type(e).__name__}", file=sys.stderr)
    return EXIT_ERROR


def console() -> None:
    """The ``qre`` program (``[project.scripts]``, ``python -m qre``): :func:`main` on
    the process's arguments, then exit with its code.

    The garbage collector's objects are frozen first (``gc.freeze``): Python's shutdown
    would otherwise run full collections over every object numpy, pandas and Numba made
    (measured: 0.06 s after a small run, 0.1 s after loading a kernel, a sixth of the
    command's fixed cost). A finished command needs no collection: its files are
    closed, and Python still flushes stdout and stderr at exit.
    """
    code = main()
    gc.freeze()
    sys.exit(code)


if __name__ == "__main__":
    console()
