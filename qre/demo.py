"""The demo program (``make demo``): a hand-written DT run over bundled sample events.

Usage: ``python -m qre.demo [--dt FILE.json] [--events FILE.csv]``.

It reads a DT in the JSON format of docs/API.md (default: the bundled
``running_sum.json``, :mod:`qre.examples`: the sum of the amounts since the last reset),
prints its one-line-per-transition dump and sizes, runs it with
:meth:`qre.Monitor.from_dt` (every initial state 0.0) over a CSV of events
with columns ``tag,value`` (default: the bundled ``events.csv``, read with
pandas), and prints one row per event: tag, value, output status and output.

This is a command-line program, so it prints to stdout; the library modules
do not.
"""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from dt import DT
from dt.values import Status

from . import examples
from .runtime.monitor import Monitor, Output

_SHOWN = {Status.UNDEFINED: "⊥ (undefined)", Status.CONFLICT: "⊤ (conflict)"}


def _cell(status: int, value: float) -> str:
    if status == Status.DEFINED:
        return f"{value:g}"
    return _SHOWN[Status(status)]


def table(tags: pd.Series, values: pd.Series, out: Output) -> str:
    """One line per event: position, tag, value, status code(s) and output(s) per final state."""
    status = out.status.reshape(len(out), -1)
    value = out.value.reshape(len(out), -1)
    header = f"{'#':>3}  {'tag':<10} {'value':>8}  {'status':>6}  output"
    rows = [header, "-" * len(header)]
    for k, (tag, v) in enumerate(zip(tags, values, strict=True)):
        cells = ", ".join(_cell(int(s), float(x)) for s, x in zip(status[k], value[k], strict=True))
        codes = ",".join(str(int(s)) for s in status[k])
        rows.append(f"{k:>3}  {tag!s:<10} {v:>8g}  {codes:>6}  {cells}")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m qre.demo", description=__doc__.split("\n")[0])
    parser.add_argument("--dt", type=Path,
                        help="a DT in the JSON format of docs/API.md (default: the bundled "
                             "running_sum.json)")
    parser.add_argument("--events", type=Path,
                        help="a CSV file with columns tag,value (default: the bundled "
                             "events.csv)")
    args = parser.parse_args(argv)

    dt_name = "running_sum.json" if args.dt is None else args.dt.name
    events_name = "events.csv" if args.events is None else args.events.name
    d = DT.from_json(examples.read_text(dt_name) if args.dt is None else args.dt.read_text())
    source = io.StringIO(examples.read_text(events_name)) if args.events is None else args.events
    events = pd.read_csv(source, dtype={"tag": "category", "value": "float64"})
    m = Monitor.from_dt(d)

    print(f"DT {dt_name}")
    print(d.dump())
    s = m.stats
    print(f"stats: {s.states} states, {s.transitions} transitions, size {s.size}, "
          f"{s.registers} registers, at most {s.ops_per_event} operations per event")
    status, value = (np.atleast_1d(a) for a in m.initial)
    empty = ", ".join(_cell(int(s), float(x)) for s, x in zip(status, value, strict=True))
    print(f"output on the empty stream: {empty}")
    print()
    out = m.run(events["tag"], events["value"])
    print(f"{len(events)} events from {events_name} (outputs: {', '.join(out.names)})")
    print(table(events["tag"], events["value"], out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
