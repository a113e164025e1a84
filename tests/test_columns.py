"""Columns as the Python data world has them (issue 18, point 9): pyarrow arrays, chunked
arrays, tables and record batches, polars Series and DataFrames, for tags, values, keys
and times, in run, run_keys, Session.feed and run_timed. The oracle is the same data as
Python lists / pandas, which the runtime read before; nulls follow qre/runtime/columns.py."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

from qre import qre
from qre.runtime.columns import column, values

BALANCE = qre("iter(or(atom(deposit, cur), atom(withdraw, -cur)), 0, +)")
ROOT = Path(__file__).resolve().parents[1]
RECORDS = qre("alphabet deposit, withdraw; iter(or(atom(deposit, cur.x * cur.y), "
              "atom(withdraw, -cur.x)), 0, +)")
TAGS = ["deposit", "withdraw", "deposit", "deposit", "withdraw"]
AMOUNTS = [100.0, 30.0, None, 5.0, 2.5]
PLAIN = [math.nan if v is None else v for v in AMOUNTS]


def chunked(xs, kind=None):
    """Two chunks, so that conversions must join them."""
    return pa.chunked_array([xs[:2], xs[2:]], type=kind)


def dictionary_chunks(t):
    """Two dictionary-encoded chunks whose dictionaries differ (one has a null entry)."""
    first = pa.array(t[:2]).dictionary_encode()
    words = ["withdraw", None, "deposit"]
    second = pa.DictionaryArray.from_arrays(pa.array([words.index(x) for x in t[2:]],
                                                     pa.int8()), pa.array(words))
    return pa.chunked_array([first, second.cast(first.type)])


TAG_COLUMNS = {
    "pa string": lambda t: pa.array(t),
    "pa large_string": lambda t: pa.array(t, pa.large_string()),
    "pa string_view": lambda t: pa.array(t, pa.string_view()),
    "pa dictionary": lambda t: pa.array(t).dictionary_encode(),
    "pa chunked": lambda t: chunked(t),
    "pa chunked dictionaries": lambda t: dictionary_chunks(t),
    "pa codes": lambda t: pa.array([BALANCE.alphabet.index(x) for x in t], pa.int32()),
    "pl string": lambda t: pl.Series(t),
    "pl categorical": lambda t: pl.Series(t, dtype=pl.Categorical),
    "pl enum": lambda t: pl.Series(t, dtype=pl.Enum(["withdraw", "deposit"])),
    "pl codes": lambda t: pl.Series([BALANCE.alphabet.index(x) for x in t], dtype=pl.UInt8),
}

VALUE_COLUMNS = {
    "pa float with nulls": lambda v: pa.array(v),
    "pa chunked float": lambda v: chunked(v),
    "pa float32": lambda v: pa.array(v, pa.float32()),
    "pa decimal": lambda v: pa.array(v).cast(pa.decimal128(10, 1)),
    "pl float with null": lambda v: pl.Series(v),
}


@pytest.mark.parametrize("make", TAG_COLUMNS.values(), ids=TAG_COLUMNS)
@pytest.mark.parametrize("make_values", VALUE_COLUMNS.values(), ids=VALUE_COLUMNS)
def test_arrow_and_polars_columns_run_as_lists(make, make_values):
    want = BALANCE.run(TAGS, PLAIN)
    got = BALANCE.run(make(TAGS), make_values(AMOUNTS))
    np.testing.assert_array_equal(got.status, want.status)
    np.testing.assert_array_equal(got.value, want.value)


def test_integer_columns_of_any_library_are_codes():
    codes = [BALANCE.alphabet.index(t) for t in TAGS]
    want = BALANCE.run(np.array(codes), PLAIN)
    for column_of_codes in (pd.Series(codes), pd.Series(codes, dtype="Int8"), pa.array(codes),
                            pl.Series(codes)):
        np.testing.assert_array_equal(BALANCE.run(column_of_codes, PLAIN).value, want.value)
    with pytest.raises(ValueError, match="tag code 2 at position 0 is out of range"):
        BALANCE.run(pd.Series([2, None], dtype="Int64"), [1.0, 2.0])


def test_integer_values_with_nulls_are_exact_and_nan():
    got = BALANCE.run(pa.array(TAGS), pa.array([2**53 + 1, None, 1, 1, 1], pa.int64()))
    assert got.value[0] == float(2**53 + 1) and math.isnan(got.value[1])
    booleans = BALANCE.run(pl.Series(TAGS), pl.Series([True, None, False, True, True]))
    np.testing.assert_array_equal(booleans.value, [1.0, np.nan, np.nan, np.nan, np.nan])


RECORD_VALUES = {
    "pa table": lambda x, y: pa.table({"x": x, "y": y, "note": ["n"] * len(x)}),
    "pa record batch": lambda x, y: pa.RecordBatch.from_pydict({"x": x, "y": y}),
    "pa struct column": lambda x, y: pa.StructArray.from_arrays(
        [pa.array(x), pa.array(y)], names=["x", "y"]),
    "pl DataFrame": lambda x, y: pl.DataFrame({"x": x, "y": y, "note": ["n"] * len(x)}),
    "dict of pa": lambda x, y: {"x": pa.array(x), "y": chunked(y)},
    "dict of pl": lambda x, y: {"x": pl.Series(x), "y": pd.Series(y, dtype=float)},
}


@pytest.mark.parametrize("make", RECORD_VALUES.values(), ids=RECORD_VALUES)
def test_tables_are_records(make):
    y = [2.0, None, 1.0, 3.0, 4.0]
    want = RECORDS.run(TAGS, {"x": PLAIN, "y": [math.nan if v is None else v for v in y]})
    got = RECORDS.run(pa.array(TAGS), make(AMOUNTS, y))
    np.testing.assert_array_equal(got.status, want.status)
    np.testing.assert_array_equal(got.value, want.value)


def test_run_keys_and_feed_take_arrow_and_polars():
    keys = ["u", "v", "u", None, "v"]
    want = BALANCE.run_keys(pd.Series(keys, dtype=object), TAGS, PLAIN)
    for k in (pa.array(keys), pa.array(keys).dictionary_encode(), pl.Series(keys),
              pa.array([1, 2, 1, None, 2])):
        got = BALANCE.run_keys(k, pl.Series(TAGS), pa.array(AMOUNTS))
        np.testing.assert_array_equal(got.value, want.value)
    session = BALANCE.session()
    parts = [session.feed(pa.array(TAGS[:2]), pl.Series(AMOUNTS[:2])),
             session.feed(pl.Series(TAGS[2:], dtype=pl.Categorical), pa.array(AMOUNTS[2:]))]
    np.testing.assert_array_equal(np.concatenate([p.value for p in parts]),
                                  BALANCE.run(TAGS, PLAIN).value)


def test_nulls_in_tags_and_values():
    tags = ["deposit", None, "withdraw"]
    for column_of_tags in (pa.array(tags), pl.Series(tags), pa.array(tags).dictionary_encode(),
                           pa.array([0, None, 1])):
        with pytest.raises(ValueError, match=r"missing tag at position 1 \(.*\).*'skip'"):
            BALANCE.run(column_of_tags, [1.0, 2.0, 3.0])
        skipped = BALANCE.run(column_of_tags, [1.0, 2.0, 3.0], unknown_tags="skip")
        assert skipped.value.tolist() == [1.0, 1.0, -2.0]
    # Text as values: the first non-null entry that is not a number is the error.
    with pytest.raises(ValueError, match=r"row 1 of values: 'x' is not a number"):
        BALANCE.run(tags[:1] * 3, pa.array([None, "x", "1"]))
    with pytest.raises(ValueError, match=r"row 2 of column 'y': 'b' is not a number"):
        RECORDS.run(TAGS[:3], pl.DataFrame({"x": [1.0, 2.0, 3.0], "y": [None, None, "b"]}))


def test_tables_where_one_column_is_wanted():
    table = pa.table({"a": TAGS})
    with pytest.raises(TypeError, match=r"tags is one column, not a table \(columns a\)"):
        BALANCE.run(table, PLAIN)
    with pytest.raises(TypeError, match="keys is one column"):
        BALANCE.run_keys(pl.DataFrame({"k": [1] * 5}), TAGS, PLAIN)


def test_numpy_and_pandas_pass_through_untouched():
    codes = np.array([0, 1])
    frame = pd.DataFrame({"x": [1.0]})
    assert column(codes, "tags") is codes and values(frame) is frame
    plain = {"x": [1.0]}
    assert values(plain) is plain


# --------------------------------------------------------------------------- timed runs

WINDOW = qre("alphabet a, b; aggregate(sum(cur.x), 2s)")


def timed_frame() -> pd.DataFrame:
    return pd.DataFrame({"t": [0, 1, 3, 2, 5], "tag": ["a", "b", "a", "a", "b"],
                         "x": [1.0, 2.0, math.nan, 4.0, 8.0], "k": ["u", "v", "u", "u", "v"]})


def test_run_timed_takes_arrow_and_polars_columns():
    f = timed_frame()
    want = WINDOW.run_timed(f["t"], f["tag"], {"x": f["x"]}, keys=f["k"])
    table = pa.Table.from_pandas(f, preserve_index=False)
    polars = pl.from_pandas(f)
    for got in (
            WINDOW.run_timed(table["t"], table["tag"], table.select(["x"]), keys=table["k"]),
            WINDOW.run_timed(polars["t"], polars["tag"], polars.select("x"), keys=polars["k"]),
            WINDOW.run_timed(pa.array(f["t"]), pl.Series(f["tag"]), {"x": pa.array(f["x"])},
                             keys=pa.array(f["k"]).dictionary_encode())):
        pd.testing.assert_frame_equal(got, want)


@pytest.mark.parametrize("tz", [None, "Europe/Paris"])
def test_arrow_timestamps_are_datetimes(tz):
    stamps = pd.to_datetime(["2026-03-29 00:59:59", "2026-03-29 01:00:01",
                             "2026-03-29 01:00:03"]).tz_localize(tz or None)
    want = WINDOW.run_timed(pd.Series(stamps), ["a"] * 3, {"x": [1.0, 2.0, 4.0]})
    for times in (pa.array(stamps), pa.array(stamps, pa.timestamp("ms", tz=tz)),
                  pl.Series(stamps)):
        got = WINDOW.run_timed(times, ["a"] * 3, {"x": [1.0, 2.0, 4.0]})
        pd.testing.assert_frame_equal(got, want)


def test_null_times_name_their_row():
    for times in (pa.array([0, None, 2]), pl.Series([0.5, None, 1.0]),
                  pa.array([0, None, 2], pa.timestamp("s"))):
        with pytest.raises(ValueError, match="row 1 of times: the event time is missing"):
            WINDOW.run_timed(times, ["a"] * 3, {"x": [1.0, 2.0, 3.0]})


def test_dictionaries_of_numbers_and_with_null_entries():
    numbers = pa.DictionaryArray.from_arrays(pa.array([0, 1, None, 0]), pa.array([2.0, math.nan]))
    np.testing.assert_array_equal(column(numbers, "values"), [2.0, math.nan, math.nan, 2.0])
    text = pa.DictionaryArray.from_arrays(pa.array([0, 1, 2, 0], pa.int8()),
                                          pa.array(["deposit", None, "deposit"]))
    with pytest.raises(ValueError, match=r"missing tag at position 1"):
        BALANCE.run(text, [1.0] * 4)
    assert BALANCE.run(text, [1.0] * 4, unknown_tags="skip").value.tolist() == [1, 1, 2, 3]


def test_the_library_never_imports_polars():
    code = ("import sys, numpy as np, pyarrow as pa; from qre import qre; "
            "m = qre('alphabet a; aggregate(count(), 1s)'); "
            "m.run_timed(pa.array([0.5, 1.5]), pa.array(['a', 'a'])); "
            "qre('iter(atom(a, cur), 0, +)').run(np.array([0]), [1.0]); "
            "assert 'polars' not in sys.modules, 'polars imported'")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, check=False, cwd=ROOT)
    assert done.returncode == 0, done.stderr


# --------------------------------------------------------------------------- masked arrays

HIDDEN = [100.0, 30.0, 7.0, 5.0, 2.5]
"""The data under a mask: 7.0 is masked (the null of PLAIN), so no engine may read it."""
MASK = [False, False, True, False, False]


@pytest.mark.parametrize("engine", ["reference", "table", "codegen"])
def test_masked_values_are_nulls_on_every_engine(engine, codegen_cache):
    """A masked entry is a null: NaN, as pandas' NA and Arrow's null are (issue 19, point 6)."""
    masked = np.ma.MaskedArray(HIDDEN, mask=MASK)
    want = BALANCE.run(TAGS, PLAIN, engine="reference")
    for got in (BALANCE.run(TAGS, masked, engine=engine),
                BALANCE.run_keys(["u"] * 5, TAGS, masked, engine=engine),
                BALANCE.session(engine=engine).feed(TAGS, masked)):
        np.testing.assert_array_equal(got.status, want.status)
        np.testing.assert_array_equal(got.value, want.value)
    x = np.ma.MaskedArray([1.0, 2.0, 3.0, 4.0, 5.0], mask=[True] + [False] * 4)
    y = np.ma.MaskedArray(np.arange(5, dtype=np.int64), mask=[False, True, False, False, False])
    got = RECORDS.run(TAGS, {"x": x, "y": y}, engine=engine)
    plain = RECORDS.run(TAGS, {"x": [math.nan, 2.0, 3.0, 4.0, 5.0],
                               "y": [0.0, math.nan, 2.0, 3.0, 4.0]}, engine="reference")
    np.testing.assert_array_equal(got.value, plain.value)


def test_masked_tags_times_and_keys_are_missing():
    tags = np.ma.MaskedArray(["deposit", "withdraw", "deposit"], mask=[False, True, False])
    codes = np.ma.MaskedArray([0, 1, 0], mask=[False, True, False])
    for column_of_tags in (tags, codes):
        with pytest.raises(ValueError, match=r"missing tag at position 1"):
            BALANCE.run(column_of_tags, [1.0, 2.0, 3.0])
        assert BALANCE.run(column_of_tags, [1.0, 2.0, 3.0],
                           unknown_tags="skip").value.tolist() == [1.0, 1.0, 4.0]
    with pytest.raises(ValueError, match="row 1 of times: the event time is missing"):
        WINDOW.run_timed(np.ma.MaskedArray([0, 1, 2], mask=[False, True, False]), ["a"] * 3,
                         {"x": [1.0, 2.0, 3.0]})
    keys = np.ma.MaskedArray([7, 8, 7, 8, 9], mask=[False, False, False, True, True])
    got = BALANCE.run_keys(keys, TAGS, PLAIN)
    want = BALANCE.run_keys([7, 8, 7, None, None], TAGS, PLAIN)
    np.testing.assert_array_equal(got.value, want.value)
    # Masked tie-breakers are missing: they sort last, as None does.
    ties = np.ma.MaskedArray([2.0, 1.0, 0.0], mask=[False, False, True])
    times = [0, 0, 0]
    got = BALANCE.run(["deposit"] * 3, [1.0, 2.0, 4.0], times=times, tiebreak=ties)
    want = BALANCE.run(["deposit"] * 3, [1.0, 2.0, 4.0], times=times,
                       tiebreak=[2.0, 1.0, None])
    np.testing.assert_array_equal(got.value, want.value)


def test_unmasked_arrays_are_their_data():
    data = np.ma.MaskedArray([1.0, 2.0])
    assert type(column(data, "values")) is np.ndarray
    np.testing.assert_array_equal(column(data, "values"), [1.0, 2.0])
