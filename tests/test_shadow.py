"""Shadowing a streaming query by a candidate (spark_udf/shadow.py), on real Structured Streaming.

Two ``monitor_stream`` queries read the same files and write through
``foreachBatch`` into one Shadow: the same monitor on another engine and bucket
count agrees (the matcher, under the output type a key's rows in order); a
candidate with a bug is reported at its first wrong row. A batch that Spark
hands over again is not fed twice.
"""

from __future__ import annotations

import pandas as pd
import pytest

from qre import qre
from qre.runtime.stream_types import stream_type

pytest.importorskip("pyspark")

from spark_udf import monitor_stream
from spark_udf.shadow import Shadow

SCHEMA = "k long, t long, tag string, v double"


def batches() -> list[pd.DataFrame]:
    frame = pd.DataFrame({"k": [i % 5 for i in range(60)], "t": list(range(60)),
                          "tag": ["a"] * 60, "v": [float(i % 7) for i in range(60)]})
    return [frame.iloc[i:i + 20] for i in range(0, 60, 20)]


def run_both(spark, tmp_path, production, candidate, shadow, **options):  # type: ignore[no-untyped-def]
    source = tmp_path / "in"
    source.mkdir(parents=True)
    for i, batch in enumerate(batches()):
        batch.to_parquet(source / f"batch-{i}.parquet")
    stream = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(source))
    queries = [monitor_stream(stream, m, "k", "t", "tag", "v", checkpoint=str(tmp_path / name),
                              output=out, trigger={"availableNow": True}, **opts)
               for m, name, out, opts in ((production, "p", shadow.left, {}),
                                          (candidate, "c", shadow.right, options))]
    for query in queries:
        query.awaitTermination()


def test_a_candidate_that_agrees_and_one_that_does_not(spark, tmp_path):
    m = qre("alphabet a; sum(cur)")
    output = stream_type("monitor_stream", "k").output_dependence()
    same = Shadow(output)
    run_both(spark, tmp_path / "same", m, m, same, engine="table", buckets=3)
    verdict = same.verdict()
    assert verdict.equivalent, verdict
    assert verdict.counts == (60, 60) and same.batches == [3, 3]

    found: list = []
    buggy = Shadow(output, on_mismatch=found.append)
    run_both(spark, tmp_path / "buggy", m, qre("alphabet a; max(cur)"), buggy)
    assert buggy.mismatch is not None and found == [buggy.mismatch]
    assert not buggy.verdict().equivalent


def test_a_batch_run_again_is_skipped():
    shadow = Shadow("by_key(k)")
    rows = pd.DataFrame({"k": [1, 1], "v": [1.0, 2.0]})
    shadow.left(rows, 0)
    shadow.left(rows, 0)  # Spark ran batch 0 again after a failure
    shadow.right(rows, 0)
    assert shadow.verdict().equivalent and shadow.batches == [1, 1]
