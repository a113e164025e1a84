"""The Spark half of ``make demo``: a query over bundled login events on local Spark.

Usage: ``python -m spark_udf.demo [--query FILE.qre] [--events FILE.csv]``.

It compiles the bundled ``failed_since_ok.qre`` (:mod:`qre.examples`: "did a
login fail since the last successful one?"), reads the bundled ``logins.csv`` (columns
``user,ts,tag``, rows deliberately out of time order) with Spark, runs
:func:`spark_udf.monitor_frame` per user in event-time order on the embedded
``local[*]`` session, and prints the output rows ordered by user and time.

This is a command-line program, so it prints to stdout; the library modules
do not.
"""

from __future__ import annotations

import argparse
import sys
from contextlib import nullcontext
from pathlib import Path

from qre import examples, qre

from .batch import monitor_frame
from .session import local_session


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spark_udf.demo",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--query", type=Path,
                        help="a query file (default: the bundled failed_since_ok.qre)")
    parser.add_argument("--events", type=Path,
                        help="a CSV file with columns user,ts,tag (default: the bundled "
                             "logins.csv)")
    args = parser.parse_args(argv)

    query_name = "failed_since_ok.qre" if args.query is None else args.query.name
    m = qre(examples.read_text(query_name) if args.query is None else args.query.read_text())
    spark = local_session("qre-demo")
    events_file = (examples.as_file("logins.csv") if args.events is None
                   else nullcontext(args.events))
    with events_file as path:
        events = spark.read.csv(str(path), header=True,
                                schema="user string, ts long, tag string")
        out = monitor_frame(events, m, key="user", time="ts", tag="tag")
        rows = out.orderBy("user", "ts").toPandas()
    print(f"query {query_name} ({len(m.dt.states)} states after the optimizer), "
          f"{len(rows)} events from {path.name}, run per user on Spark "
          f"{spark.version} ({spark.sparkContext.master}):")
    print(rows.to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
