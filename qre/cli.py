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
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import math
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dt import DT
from dt.equivalence import EquivalenceLimitError, StatusEquivalence, status_equivalent
from dt.languages import languages
from dt.projection import status_vector
from dt.restartability import RestartWitness, check_restartable, output_synchronized
from dt.restartability import replay as restartability_replay
from dt.value_equivalence import value_equivalent
from dt.values import BOT, TOP, XValue, status_of

from ._version import __version__
from .api import qre
from .language.clock import UNIT_NS
from .language.errors import QreError
from .runtime import columns, frames
from .runtime.monitor import ENGINES, Monitor
from .runtime.output import check_no_collision, result_columns
from .runtime.progress import Progress, configure_logging
from .runtime.timed import input_tags, is_timed
from .runtime.times import TimeError

__all__ = ["UsageError", "build_parser", "main"]

log = logging.getLogger(__name__)

EXIT_OK = 0
EXIT_NO = 1
EXIT_ERROR = 2
EXIT_UNDECIDED = 3

_STATUS_NAMES = ("undefined", "defined", "conflict")
_STATUS_SCOPE = "proven for every tag string, Theorem 5.3; data values not compared"

_EPILOG = """\
Q is query text, @path/to/file.qre, or a path ending in .json holding a DT.

examples:
  qre compile 'iter(atom(a, cur), 0, +)' --stats
  qre compile @sum.qre --dot sum.dot --emit sum.json
  qre check equiv 'iter(atom(a, cur), 0, +)' sum.json --alphabet a,b
  qre check restartable 'alphabet a, b; once(count() >= const(3))'
  qre check language 'split(atom(a, cur), iter(atom(b, cur), 0, +), +)'
  qre run @sum.qre --input events.csv --key user --tag tag --value amount --output out.parquet

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
    """Equivalence of the two monitors' DTs: statuses (Theorem 5.3), then values."""
    a, b = _load_pair(args.q1, args.q2, _alphabet(args.alphabet))
    try:
        if args.statuses:
            return _equiv_statuses(args, status_equivalent(a.dt, b.dt, max_pairs=args.max_pairs))
        answer = value_equivalent(a.dt, b.dt, max_pairs=args.max_pairs)
    except EquivalenceLimitError as e:
        _emit(args, {"equivalent": None, "limit": str(e), "explored": e.explored},
              [f"undecided: {e}"])
        return EXIT_UNDECIDED
    summary = answer.summary()
    data: dict[str, Any] = {"equivalent": answer.equivalent, "level": "values",
                            "summary": summary, "proven": answer.proven,
                            "bound": answer.bound, "unresolved": answer.unresolved,
                            "random_words": answer.random_words,
                            "random_length": answer.random_length,
                            "explored": answer.explored}
    c = answer.counterexample
    if c is not None:
        data["counterexample"] = {
            "tags": list(c.tags), "data": [_json_event(d) for d in c.data],
            "output": c.output, "found_by": c.found_by,
            "outputs": [[_json_xvalue(v) for v in y] for y in c.outputs]}
        statuses = c.found_by == "statuses"
        lines = [f"not equivalent: the output {'statuses' if statuses else 'values'} differ",
                 f"{'shortest ' if statuses else ''}counterexample: "
                 f"{_data_word(c.tags, c.data)}",
                 f"  Q1 outputs: {', '.join(_show_xvalue(v) for v in c.outputs[0])}",
                 f"  Q2 outputs: {', '.join(_show_xvalue(v) for v in c.outputs[1])}",
                 summary[0].removeprefix("not equivalent: ")]
        _emit(args, data, lines)
        return EXIT_NO
    head = "equivalent" if answer.proven else "undecided: not proven, no counterexample found"
    _emit(args, data, [head, *(f"  {line}" for line in summary)])
    return EXIT_OK if answer.proven else EXIT_UNDECIDED


def _equiv_statuses(args: argparse.Namespace, answer: StatusEquivalence) -> int:
    """--statuses: Theorem 5.3 alone, a decision (shortest counterexample)."""
    data: dict[str, Any] = {"equivalent": answer.equivalent, "level": "statuses",
                            "explored": answer.explored}
    if answer.equivalent:
        lines = [f"equivalent on statuses ({_STATUS_SCOPE})"]
    else:
        word = answer.counterexample or ()
        first, second = answer.statuses or ((), ())
        data["counterexample"] = {"tags": list(word),
                                  "statuses": [_status_names(first), _status_names(second)]}
        lines = ["not equivalent: the output statuses differ",
                 f"shortest counterexample: {_tag_string(word)}",
                 f"  Q1 outputs: {', '.join(_status_names(first))}",
                 f"  Q2 outputs: {', '.join(_status_names(second))}",
                 "(whatever the data)"]
    _emit(args, data, lines)
    return EXIT_OK if answer.equivalent else EXIT_NO


def _load_pair(q1: str, q2: str, alphabet: list[str] | None) -> tuple[Monitor, Monitor]:
    """Both monitors over ``alphabet``; without it, over the union of their alphabets
    (a tag only one query mentions is then a tag the other ignores). A query that
    declares its alphabet cannot be widened: it is a usage error naming it."""
    a, b = _load(q1, alphabet), _load(q2, alphabet)
    if alphabet is not None or set(a.alphabet) == set(b.alphabet):
        return a, b
    union = list(dict.fromkeys([*a.alphabet, *b.alphabet]))
    pair = []
    for name, spec, m, other in (("Q1", q1, a, b), ("Q2", q2, b, a)):
        try:
            pair.append(_load(spec, union))
        except QreError:
            extra = [t for t in other.alphabet if t not in m.alphabet]
            raise UsageError(
                f"{name} declares the alphabet {', '.join(m.alphabet)}, but the other query "
                f"has the tag(s) {', '.join(extra)}: both are compared over one alphabet, so "
                f"declare the same alphabet in both (or in neither: the union of the tags "
                f"they mention is used)") from None
    return pair[0], pair[1]


def _json_xvalue(v: XValue) -> Any:
    """An extended value in JSON: "undefined", "conflict", a number, or "nan"/"inf"/"-inf"."""
    if v is BOT or v is TOP:
        return _STATUS_NAMES[int(status_of(v))]
    return _json_float(float(v))  # type: ignore[arg-type]


def _json_float(x: float) -> Any:
    return x if math.isfinite(x) else repr(x)


def _json_event(d: Any) -> Any:
    return {k: _json_float(v) for k, v in d.items()} if isinstance(d, dict) else _json_float(d)


def _show_xvalue(v: XValue) -> str:
    return _STATUS_NAMES[int(status_of(v))] if v is BOT or v is TOP else repr(float(v))  # type: ignore[arg-type]


def _data_word(tags: Sequence[str], data: Sequence[Any]) -> str:
    """``a(1.0) b(-0.0)``; record events as ``a(p=1.0, q=2.0)``."""
    if not tags:
        return "(the empty stream)"

    def show(d: Any) -> str:
        if isinstance(d, dict):
            return ", ".join(f"{k}={v!r}" for k, v in d.items())
        return repr(d)

    return " ".join(f"{t}({show(d)})" for t, d in zip(tags, data, strict=True))


def _cmd_restartable(args: argparse.Namespace) -> int:
    """Definition 5.4, searched on the optimized DT; a witness also replayed as compiled.

    The optimizer keeps the outputs of every run with restarts exactly
    (codegen.optimize; tested under restarts), and restartability depends on
    nothing else (proof of Theorem 5.6), so the smaller DT gives the same
    answer, several times faster. A witness is checked on the DT as compiled.
    """
    m = _load(args.query)
    answer = check_restartable(m.dt, max_states=args.max_states)
    if answer.witness is not None and m.unoptimized is not None:
        _replay_as_compiled(m.unoptimized, answer.witness)
    synchronized = output_synchronized(m.dt)
    data: dict[str, Any] = {"restartable": answer.restartable, "explored": answer.explored,
                            "output_synchronized": synchronized}
    sync_line = (f"output-synchronized: {'yes' if synchronized else 'no'} (the outputs are "
                 f"{'always' if synchronized else 'not always'} all undefined or all not)")
    if answer.restartable:
        lines = ["restartable", sync_line]
    else:
        w = answer.witness
        assert w is not None  # not restartable always comes with a witness
        threads = [{"position": p, "initial": _status_names(x)} for p, x in w.threads]
        data["witness"] = {"tags": list(w.tags), "threads": threads,
                           "restarted": _status_names(w.restarted),
                           "separate": _status_names(w.separate)}
        lines = ["not restartable", f"tags: {_tag_string(w.tags)}"]
        if threads:
            lines += [f"  thread at position {t['position']}: initial {', '.join(t['initial'])}"
                      for t in threads]
            lines += [f"restarted run outputs: {', '.join(_status_names(w.restarted))}",
                      f"separate threads give: {', '.join(_status_names(w.separate))}"]
        else:  # the union of no thread is all undefined: the DT outputs something from nothing
            lines += ["  no thread started (every initial value undefined)",
                      f"the run outputs: {', '.join(_status_names(w.restarted))}",
                      f"but no thread means: {', '.join(_status_names(w.separate))}"]
        lines.append(sync_line)
    _emit(args, data, lines)
    return EXIT_OK if answer.restartable else EXIT_NO


def _replay_as_compiled(dt: DT, witness: RestartWitness) -> None:
    """The witness found on the optimized DT must break (iii) on the compiled DT too."""
    restarted, separate = restartability_replay(dt, witness)
    got = (status_vector(restarted), status_vector(separate))
    if got != (witness.restarted, witness.separate):
        raise AssertionError(f"restartability witness {witness} does not replay on the DT as "
                             f"compiled ({got}): the optimizer changed a run with restarts")


def _cmd_language(args: argparse.Namespace) -> int:
    """Emptiness and universality of L (defined) and L̄ (defined or conflict) per output."""
    m = _load(args.query)
    outs = languages(m.dt, max_configs=args.max_configs)
    names = m.outputs
    data: dict[str, Any] = {"outputs": [], "explored": outs[0].explored if outs else 0}
    lines: list[str] = []
    for name, o in zip(names, outs, strict=True):
        data["outputs"].append({
            "output": name,
            "L": {"empty": o.empty, "universal": o.universal,
                  "shortest_in": _json_word(o.in_l), "shortest_not_in": _json_word(o.not_in_l)},
            "L_bar": {"empty": o.rate_empty, "universal": o.rate_universal,
                      "shortest_in": _json_word(o.in_rate),
                      "shortest_not_in": _json_word(o.not_in_rate)}})
        if len(outs) > 1:
            lines.append(f"output {name}:")
        lines += [f"L (defined):             {_language_line(o.in_l, o.not_in_l)}",
                  f"L-bar (defined or ⊤):    {_language_line(o.in_rate, o.not_in_rate)}"]
    _emit(args, data, lines)
    return EXIT_OK


def _json_word(word: tuple[str, ...] | None) -> list[str] | None:
    return None if word is None else list(word)


def _language_line(inside: tuple[str, ...] | None, outside: tuple[str, ...] | None) -> str:
    """"empty", "all tag strings", or both shortest witnesses."""
    if inside is None:
        return "empty (no tag string)"
    if outside is None:
        return "universal (every tag string)"
    return (f"neither empty nor universal: shortest in: {_tag_string(inside)}; "
            f"shortest not in: {_tag_string(outside)}")


# --------------------------------------------------------------------------- run

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


def _read_frame(path: str, text_columns: Sequence[str] = ()) -> pd.DataFrame:
    """The events of ``--input``: CSV (a path, or ``-`` for stdin) or Parquet.

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
        raise UsageError(f"--input {path}: expected a .csv or .parquet file, or - for CSV "
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
        raise UsageError(f"cannot read {name}: {_one_line(str(e)) or type(e).__name__}") from e


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


def _cmd_run(args: argparse.Namespace) -> int:
    """One output row per input row: the input columns plus status and value.

    Events run in input order, or with --time in event-time order (per key
    with --key, ties by the rule of qre.runtime.order); the outputs go back to the
    input rows either way.
    """
    progress = Progress(verbose=args.verbose > 0)
    with progress.stage("compile") as stage:
        m = _load(args.query, _alphabet(args.alphabet))
        stage.detail = f"{len(m.dt.states)} states"
    with progress.stage("read") as stage:
        frame = _read_frame(args.input, [c for c in (args.tag or "tag", args.key)
                                         if c is not None])
        stage.rows, stage.detail = len(frame), args.input
    tags = _tags(args, m, frame)
    with progress.stage("run") as stage:
        if is_timed(m):
            result = _run_timed(args, m, frame, tags)
        else:
            result = _run_rows(args, m, frame, tags)
        stage.rows, stage.detail = len(frame), f"engine {m.resolve_engine(args.engine)}"
    with progress.stage("write") as stage:
        code = _write_result(args, result)
        stage.rows, stage.detail = len(result), args.output or "stdout"
    progress.finish()
    return code


def _run_rows(args: argparse.Namespace, m: Monitor, frame: pd.DataFrame,
              tags: np.ndarray) -> pd.DataFrame:
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
                         engine=args.engine,
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
        _emit(args, {"rows": len(result), "output": args.output},
              [f"wrote {len(result)} rows to {args.output}"])
    elif args.json:
        print(_records_json(result))
    else:
        sys.stdout.write(result.to_csv(index=False))
    return EXIT_OK


def _run_timed(args: argparse.Namespace, m: Monitor, frame: pd.DataFrame,
               tags: np.ndarray) -> pd.DataFrame:
    """A timed query (a window, a clock period, a pattern's within): the emitted rows of
    ``Monitor.run_timed``, per key in event-time order, each with its event's input
    columns (empty for a clock tick's row)."""
    if args.time is None:
        raise UsageError("this query is timed (a window, a clock period or a within): give "
                         "the event times with --time COL")
    emitted = [f"{args.prefix}{c}" for c in ("row", "start", "status", "value")]
    roles = {args.key or "key", args.time, args.tag or "tag"}
    _no_collision(emitted, [c for c in frame.columns if c not in roles])
    keys = (None if args.key is None
            else frames.get_column(frame, args.key, "--key").to_numpy(dtype=object))
    times = frames.event_times(frames.get_column(frame, args.time, "--time"), args.time)
    with _time_rows(args.time):
        rows = m.run_timed(times, tags, frames.event_values(m, frame, args.value or []),
                           keys=keys, time_unit=args.time_unit, engine=args.engine,
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
    p.add_argument("--emit", metavar="FILE.json", help="write the optimized DT as JSON")
    json_flag(p)
    p.set_defaults(handler=_cmd_compile)

    check = sub.add_parser("check", help="decide properties of queries", epilog=_EPILOG,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    what = check.add_subparsers(dest="check", required=True, parser_class=_Parser)

    def add_check(name: str, handler: Any, summary: str, description: str,
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

    p = add_check("equiv", _cmd_equiv, "equivalence of two queries: statuses and values",
                  _EQUIV_DESCRIPTION, ("Q1", "Q2"), "--max-pairs",
                  "give up (exit 3) beyond N pairs of configurations")
    p.add_argument("--alphabet", metavar="a,b", help="compile both queries over these tags "
                   "(default: the union of the tags they mention)")
    p.add_argument("--statuses", action="store_true",
                   help="compare statuses only (Theorem 5.3): always decided")
    add_check("restartable", _cmd_restartable, "restartability (Definition 5.4)",
              _RESTARTABLE_DESCRIPTION, ("Q",), "--max-states",
              "give up (exit 2) beyond N search nodes")
    add_check("language", _cmd_language, "emptiness / universality of L and L-bar",
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
        with configure_logging(args.verbose):
            return int(args.handler(args))
    except BrokenPipeError:
        # The reader went away (``qre run ... | head``): nothing is wrong with the input,
        # so no message; stdout goes to devnull so that Python's exit flush stays quiet.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_ERROR
    except QreError as e:
        # A query error keeps its located message: line, column and caret.
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
        print(f"qre: {_one_line(str(e)) or type(e).__name__}", file=sys.stderr)
    return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
