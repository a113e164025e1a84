"""The Spark half of ``make demo``: a query over bundled login events on local Spark.

Usage: ``python -m spark_udf.demo [--query FILE.qre] [--events FILE.csv]``.

It compiles ``examples/failed_since_ok.qre`` ("did a login fail since the
last successful one?"), reads ``examples/logins.csv`` (columns
``user,ts,tag``, rows deliberately out of time order) with Spark, runs
:func:`spark_udf.monitor_frame` per user in event-time order on the embedded
``local[*]`` session, and prints the output rows ordered by user and time.

This is a command-line program, so it prints to stdout; the library modules
do not.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from qre import qre

from .batch import monitor_frame
from .session import local_session

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spark_udf.demo",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--query", type=Path, default=EXAMPLES / "failed_since_ok.qre")
    parser.add_argument("--events", type=Path, default=EXAMPLES / "logins.csv",
                        help="a CSV file with columns user,ts,tag")
    args = parser.parse_args(argv)

    m = qre(args.query.read_text())
    spark = local_session("qre-demo")
    events = spark.read.csv(str(args.events), header=True,
                            schema="user string, ts long, tag string")
    out = monitor_frame(events, m, key="user", time="ts", tag="tag")
    rows = out.orderBy("user", "ts").toPandas()
    print(f"query {args.query.name} ({len(m.dt.states)} states after the optimizer), "
          f"{len(rows)} events from {args.events.name}, run per user on Spark "
          f"{spark.version} ({spark.sparkContext.master}):")
    print(rows.to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
