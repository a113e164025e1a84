"""The DiffStream matcher's throughput and memory against disorder, and its overhead when
shadowing a monitor_stream query (issue 24; seed 003 §3.5, Fig. 12).

Run (from the repository root)::

    .venv/bin/python benchmarks/diffstream_throughput.py [--items 200000] [--keys 1000]

(about five minutes on 2 cores) and writes the table to benchmarks/RESULTS.md,
section "diffstream_throughput" (``--output``).

Matcher: two streams of the same ``--items`` rows (``{"k": key, "v": i}``,
``--keys`` keys drawn at random), the second a different interleaving of the keys
with each key's rows in order — equivalent under ``by_key("k")`` — in which a row
is displaced by up to ``d`` positions (each row's position i + U(0, d), then each
key's rows given that key's positions in order). The two are pushed alternately,
one row each. Reported per ``d``: rows per second through the indexed matcher (a
schema's dependence; equality keys computed beforehand, as ``compare_streams`` does
column by column) and through the scanning one (the same relation as a Python
predicate, the seed's implementation, on fewer rows: it is O(rows · unmatched)),
the peak number of unmatched rows (the matcher's memory), and for scale the time
of what a test did before, sorting both streams by (key, position) in Python.
From frames: ``compare_streams`` on two pandas frames of those rows (the
conversion included).

Shadowing (Fig. 12's question: what does checking cost a running application?):
``monitor_stream`` (``avg_last(5, cur)``, watermark 10 s) over ``--batches``
Parquet files of ``--batch-events`` events, run as a production query and a
candidate (another engine) side by side, both into ``foreachBatch`` writers that
collect each micro-batch to the driver (``toPandas``, as the Shadow does) and drop
it, then both into one :class:`spark_udf.Shadow`. Reported: the wall time of each
pair (best of ``--repeat``), the shadowed pair's ratio to the bare pair (the cost
of matching), and the Shadow's peak unmatched rows (how far one query ran ahead).
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path
from typing import Any

import pandas as pd
from results import RESULTS, write_section
from spark_stream import write_files

from dt.traces import Predicate, StreamMatcher, by_key
from qre import qre
from qre.runtime.stream_types import stream_type
from qre.traces import compare_streams
from spark_udf import local_session, monitor_stream
from spark_udf.shadow import Shadow

DISORDER = (0, 10, 100, 1000, 10_000, 100_000)
SCANNED_ITEMS = 20_000
SCANNED_DISORDER = (0, 10, 100, 1000)


def streams(items: int, keys: int, d: int, seed: int = 0) -> tuple[list[dict], list[dict]]:
    """Two interleavings of the same keyed rows, the second displaced by up to ``d``."""
    rng = random.Random(seed)
    left = [{"k": rng.randrange(keys), "v": i} for i in range(items)]
    order = sorted(range(items), key=lambda i: i + rng.uniform(0, d))
    slots: dict[int, list[int]] = {}
    for p in range(items):
        slots.setdefault(left[p]["k"], []).append(p)
    rows = {k: iter(v) for k, v in slots.items()}
    return left, [left[next(rows[left[p]["k"]])] for p in order]


def matched(dependence: Any, left: list[dict], right: list[dict]) -> tuple[float, int, bool]:
    """Rows per second through a matcher, its peak unmatched rows, and the verdict."""
    matcher = StreamMatcher(dependence)
    keys = [[(r["k"], r["v"]) for r in side] for side in (left, right)]
    start = time.perf_counter()
    for a, b, ka, kb in zip(left, right, keys[0], keys[1], strict=True):
        matcher.push(0, a, ka)
        matcher.push(1, b, kb)
    verdict = matcher.finish()
    return (len(left) + len(right)) / (time.perf_counter() - start), verdict.peak_unmatched, \
        verdict.equivalent


def sorted_seconds(left: list[dict], right: list[dict]) -> float:
    start = time.perf_counter()
    same = (sorted((r["k"], r["v"]) for r in left) == sorted((r["k"], r["v"]) for r in right))
    assert same
    return time.perf_counter() - start


def matcher_rows(items: int, keys: int) -> list[str]:
    same_key = Predicate(lambda a, b: a["k"] == b["k"])
    lines = ["| disorder d | indexed rows/s | peak unmatched | scanning rows/s "
             f"({SCANNED_ITEMS:,} rows) | sorting both (s) | compare_streams on frames, rows/s |",
             "|---|---|---|---|---|---|"]
    for d in DISORDER:
        left, right = streams(items, keys, d)
        rate, peak, ok = matched(by_key("k"), left, right)
        assert ok
        scanned = "—"
        if d in SCANNED_DISORDER:
            small = streams(SCANNED_ITEMS, keys, d)
            scan_rate, _, scan_ok = matched(same_key, *small)
            assert scan_ok
            scanned = f"{scan_rate:,.0f}"
        frames = [pd.DataFrame(side) for side in (left, right)]
        start = time.perf_counter()
        assert compare_streams(frames[0], frames[1], by_key("k")).equivalent
        frame_rate = 2 * items / (time.perf_counter() - start)
        lines.append(f"| {d:,} | {rate:,.0f} | {peak:,} | {scanned} | "
                     f"{sorted_seconds(left, right):.2f} | {frame_rate:,.0f} |")
    return lines


def shadow_rows(spark: Any, batches: int, batch_events: int, keys: int, repeat: int) -> list[str]:
    tmp = Path(tempfile.mkdtemp(prefix="qre-shadow-"))
    source = tmp / f"events-{keys}"
    write_files(source, batches, batch_events, keys)
    m = qre("avg_last(5, cur)", ["m"])
    schema = "k long, t double, tag string, v double"
    def run(shadow: Shadow | None, n: int) -> float:
        stream = (spark.readStream.schema(schema).option("maxFilesPerTrigger", 1)
                  .parquet(str(source)))

        def collect(batch: Any, batch_id: int) -> None:
            batch.toPandas()

        outputs = (collect, collect) if shadow is None else (shadow.left, shadow.right)
        start = time.perf_counter()
        queries = [monitor_stream(stream, m, "k", "t", "tag", "v", output=out,
                                  checkpoint=str(tmp / f"ckpt-{n}-{side}"), engine=engine,
                                  watermark="10 seconds", trigger={"availableNow": True})
                   for side, (out, engine) in enumerate(zip(outputs, ("table", "codegen"),
                                                            strict=True))]
        for query in queries:
            query.awaitTermination()
        return time.perf_counter() - start

    bare, shadowed = [], []
    for n in range(repeat):
        bare.append(run(None, 2 * n))
        shadow = Shadow(stream_type("monitor_stream", "k").output_dependence())
        shadowed.append(run(shadow, 2 * n + 1))
        verdict = shadow.verdict()
        assert verdict.equivalent, verdict
    rows = 2 * batches * batch_events
    return [
        f"| pair of queries ({rows:,} rows out) | wall s (best of {repeat}) | ratio |",
        "|---|---|---|",
        f"| both collected (toPandas) and dropped | {min(bare):.1f} | 1.00x |",
        f"| both into one Shadow | {min(shadowed):.1f} | {min(shadowed) / min(bare):.2f}x |",
        "",
        f"Peak unmatched rows in the Shadow: {verdict.peak_unmatched:,} (the rows one query "
        "ran ahead of the other).",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=200_000)
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--batches", type=int, default=6)
    parser.add_argument("--batch-events", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    lines = [
        "## diffstream_throughput: the matcher against disorder, and shadowing a stream "
        "(issue 24)",
        "",
        f"`.venv/bin/python benchmarks/diffstream_throughput.py --items {args.items} "
        f"--keys {args.keys} --batches {args.batches} --batch-events {args.batch_events}`. "
        f"Two streams of {args.items:,} rows of {args.keys:,} keys, equivalent under "
        "`by_key(\"k\")`, the second displaced by up to d positions, pushed alternately.",
        "",
        *matcher_rows(args.items, args.keys),
        "",
    ]
    spark = local_session("diffstream-throughput")
    lines += [f"Shadowing: `monitor_stream` of `avg_last(5, cur)` over {args.batches} "
              f"micro-batches of {args.batch_events:,} events of {args.keys:,} keys, "
              "production (table engine) and candidate (codegen) run side by side.", "",
              *shadow_rows(spark, args.batches, args.batch_events, args.keys, args.repeat)]
    text = "\n".join(lines)
    print(text)
    write_section(args.output, "diffstream_throughput", text)


if __name__ == "__main__":
    main()
