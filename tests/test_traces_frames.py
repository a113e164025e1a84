"""Streams as traces from a user's data: qre.traces, qre.testing and ``qre diff``.

The matcher itself is tests/test_traces.py's; here: frames of every kind become
the same items, equality column by column (NaN equals NaN), the reports name
rows, and the CLI's exit codes and errors.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from test_cli import assert_user_error, run_cli

from qre.testing import assert_equivalent_streams
from qre.traces import ItemError, by_key, compare_streams, punctuated

LOCAL = pd.DataFrame({"key": [1, 2, 1, 2], "status": [1, 1, 0, 1],
                      "value": [1.0, 5.0, np.nan, 6.0]})
PARALLEL = LOCAL.iloc[[1, 0, 3, 2]].reset_index(drop=True)  # keys interleaved otherwise
SWAPPED = LOCAL.iloc[[2, 1, 0, 3]].reset_index(drop=True)  # key 1's rows swapped


@pytest.mark.parametrize("convert", [lambda f: f, pa.Table.from_pandas, pl.from_pandas,
                                     lambda f: f.to_dict("records")])
def test_every_kind_of_frame_is_a_stream_of_rows(convert):
    assert compare_streams(convert(LOCAL), convert(PARALLEL), "by_key(key)").equivalent
    verdict = compare_streams(convert(LOCAL), convert(SWAPPED), by_key("key"))
    assert not verdict.equivalent and verdict.mismatch.position == 0


def test_equality_is_by_column_and_nan_equals_nan():
    other = PARALLEL.assign(value=PARALLEL["value"] + 0.0)
    assert_equivalent_streams(LOCAL, other, "by_key(key)")
    changed = PARALLEL.assign(status=[1, 1, 1, 1])
    with pytest.raises(AssertionError,
                       match=r"right row 3 .* depends on left row 2 .*or right lacks it"):
        assert_equivalent_streams(LOCAL, changed, "by_key(key)")
    assert_equivalent_streams(LOCAL, changed, "by_key(key)", equal=["key", "value"])
    assert_equivalent_streams(LOCAL, changed.drop(columns="status"), "by_key(key)",
                              equal=["key", "value"])


def test_a_missing_column_is_named():
    with pytest.raises(ItemError, match="right has no column 'key', which the dependence reads"):
        compare_streams(LOCAL, LOCAL.rename(columns={"key": "k"}), "by_key(key)")
    with pytest.raises(ItemError, match="equal= names column 'v'"):
        compare_streams(LOCAL, LOCAL, "unordered", equal=["v"])


def test_a_schema_with_markers_reads_the_header_column():
    rows = pd.DataFrame({"kind": ["ride", "ride", "EOD", "ride"], "taxi": [1, 2, 0, 1],
                         "km": [3.0, 4.0, 0.0, 5.0]})
    text = "Sync(EOD, PartitionBy(taxi, Seq(ride)))"
    assert compare_streams(rows, rows.iloc[[1, 0, 2, 3]], text, header="kind").equivalent
    late = rows.iloc[[0, 2, 1, 3]]  # taxi 2's ride after the end of day
    assert not compare_streams(rows, late, text, header="kind").equivalent
    marked = punctuated(lambda r: r["kind"] == "EOD", by_key("taxi"))
    assert not compare_streams(rows, late, marked).equivalent


def test_qre_diff(tmp_path, capsys):
    a, b, c = tmp_path / "local.csv", tmp_path / "parallel.parquet", tmp_path / "swapped.csv"
    LOCAL.to_csv(a, index=False)
    PARALLEL.to_parquet(b)
    SWAPPED.to_csv(c, index=False)
    code, out, err = run_cli(capsys, "diff", str(a), str(b), "--dependence", "by_key(key)")
    assert code == 0 and out.startswith("equivalent (4 and 4 rows read, 4 matched)"), (out, err)
    code, out, _ = run_cli(capsys, "diff", str(a), str(c), "--dependence", "by_key(key)",
                           "--json")
    report = json.loads(out)
    assert code == 1 and not report["equivalent"]
    assert report["mismatch"]["file"] == str(c) and report["mismatch"]["row"] == 0
    assert report["mismatch"]["item"]["value"] == "nan"
    code, out, _ = run_cli(capsys, "diff", str(a), str(c), "--dependence", "unordered")
    assert code == 0


def test_qre_diff_errors(tmp_path, capsys):
    a = tmp_path / "a.csv"
    LOCAL.to_csv(a, index=False)
    assert_user_error(*run_cli(capsys, "diff", str(a), str(a), "--dependence", "by_key(key"),
                      "--dependence: expected ')', at column 11")
    assert_user_error(*run_cli(capsys, "diff", str(a), str(a), "--dependence", "by_key(k)"),
                      "has no column 'k'")
    assert_user_error(*run_cli(capsys, "diff", str(a), str(tmp_path / "b.csv"),
                               "--dependence", "ordered"), "no such file")
    other = tmp_path / "other.csv"
    LOCAL.rename(columns={"value": "v"}).to_csv(other, index=False)
    assert_user_error(*run_cli(capsys, "diff", str(a), str(other), "--dependence", "ordered"),
                      "have different columns")
    assert_user_error(*run_cli(capsys, "diff", str(a), str(a), "--dependence",
                               "Sync(EOD, Bag(ride))"), "say which one an item has")
