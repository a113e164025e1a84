"""Columns as users have them → the numpy / pandas arrays the runtime reads.

Pipeline position: the boundary. :meth:`qre.Monitor.run`, ``run_keys``,
``Session.feed`` and :func:`qre.runtime.timed.run_timed` pass every column they are
given (tags, values, keys, times) through :func:`column` or :func:`values`
first; everything after works on numpy and pandas only.

numpy arrays, pandas objects (Series, Index, DataFrame, extension arrays),
lists and tuples are returned as they are: the numpy fast paths cost one
``isinstance`` here. Arrow data is converted, whoever made it: pyarrow's
``Array``, ``ChunkedArray``, ``Table`` and ``RecordBatch``, and any object
with the Arrow PyCapsule interface (``__arrow_c_stream__`` or
``__arrow_c_array__``: a polars ``Series`` or ``DataFrame``, for one), so that
neither polars nor anything else is imported for it.

===============================  ==========================================  =================
Arrow type                       becomes                                     a null becomes
===============================  ==========================================  =================
string, large_string,            ``pd.Categorical`` (its categories are the  code −1: a missing
string_view, dictionary of text  distinct values)                            tag, NaN as a value
integer, boolean                 numpy int / bool; with nulls pandas'        ``pd.NA``
                                 nullable ``Int64``… / ``boolean`` array
floating, decimal                numpy float64 (decimals rounded to float)   NaN
null                             numpy float64                               NaN
timestamp (with or without       pandas datetime array, time zone kept       ``NaT``
a time zone), date
anything else                    what ``to_pandas()`` gives                  pyarrow's choice
other dictionaries               decoded, then as their values' type         (as there)
struct, Table, RecordBatch       records (:func:`values` only): a dict of    (per column)
                                 the columns, each converted as above
===============================  ==========================================  =================

numpy masked arrays (``np.ma``) are converted too: a masked entry is a null — NaN
in a float column, pandas' nullable ``Int64``… / ``boolean`` for integers and
booleans, ``NaT`` for datetimes, ``None`` otherwise — and an array with nothing
masked is its data. (Their data under the mask is not a value: read as it is by
a kernel and as NaN by Python, it would make the engines disagree.)

What the roles then make of a null (the runtime's rules, unchanged): a
missing tag is an error naming its position unless unknown tags are skipped
(:func:`qre.runtime.tag_codes.tag_codes`); a missing value is NaN, as pandas' ``NA``
is; a missing time is an error naming its row; a missing key is one key of
its own, apart from NaN (:mod:`qre.runtime.keys` converts keys with
``exact=True``: no float cast, nulls kept apart). Integer columns of tags are
codes into the alphabet, as numpy integer arrays are.

Cost: one pass over each Arrow column, into numpy; text is dictionary-encoded
in Arrow (C++), so strings become Python objects once per distinct value, not
once per row.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["column", "is_null", "shown", "values"]

_NATIVE = (np.ndarray, pd.Series, pd.Index, pd.DataFrame, pd.api.extensions.ExtensionArray,
           list, tuple, range, str, bytes, Mapping)
"""Types passed through untouched (checked first: pandas' DataFrame also speaks Arrow)."""


def column(data: Any, what: str, *, required: bool = True, exact: bool = False) -> Any:
    """One column (``what`` names it in errors: "tags", "keys", "times"): Arrow data and
    masked arrays as numpy / pandas (module docstring), other columns as they are.
    None is an error unless not ``required``; a scalar or a string is an error.

    ``exact`` (keys: :mod:`qre.runtime.keys`) keeps every value's identity where the
    table above would not: floats with nulls become pandas' ``Float64`` (a null masked,
    a NaN a NaN), decimals stay ``Decimal`` objects, a null column stays nulls."""
    if data is None and not required:
        return None
    _check_column(data, what)
    if isinstance(data, np.ma.MaskedArray):
        return _unmasked(data)
    arrow = _arrow(data)
    if arrow is None:
        return data
    if _is_records(arrow):
        raise TypeError(f"{what} is one column, not a table (columns "
                        f"{', '.join(_names(arrow))})")
    return _exact(arrow) if exact else _convert(arrow)


def values(data: Any) -> Any:
    """Event values: one column (as :func:`column`), or records — a dict of columns
    (each converted), an Arrow table or struct column (a dict of its converted columns);
    a pandas DataFrame or anything else as it is."""
    if isinstance(data, Mapping) and not isinstance(data, pd.DataFrame):
        if any(_arrow(c) is not None or isinstance(c, np.ma.MaskedArray)
               for c in data.values()):
            return {name: column(c, f"column {name!r}") for name, c in data.items()}
        return data
    if data is not None and not isinstance(data, pd.DataFrame):
        _check_column(data, "values")
    if isinstance(data, np.ma.MaskedArray):
        return _unmasked(data)
    arrow = _arrow(data)
    if arrow is None:
        return data
    if _is_records(arrow):
        return {name: _convert(c) for name, c in _columns(arrow).items()}
    return _convert(arrow)


def is_null(x: Any) -> bool:
    """True for a missing scalar: None, NaN, ``pd.NA``, ``NaT``."""
    return x is None or x is pd.NA or x is pd.NaT or (
        isinstance(x, float | np.floating) and math.isnan(x)) or (
        isinstance(x, np.datetime64 | np.timedelta64) and np.isnat(x))


def shown(x: Any, width: int = 80) -> str:
    """An entry for an error message: numpy scalars as the Python values they hold, the
    repr cut short (a 400-digit integer stays one line).

    >>> shown(np.float64(1.5)), len(shown(10**400))
    ('1.5', 80)
    """
    text = repr(x.item() if isinstance(x, np.generic) else x)
    return text if len(text) <= width else f"{text[:width - 3]}..."


def _check_column(data: Any, what: str) -> None:
    """A column is a sequence of entries: a scalar, None or one string is a TypeError
    naming the argument (instead of "'int' object is not iterable" from deep inside)."""
    if isinstance(data, str | bytes):
        raise TypeError(f"{what} is a column of entries, not a single string")
    if isinstance(data, np.ndarray) and data.ndim > 1:
        raise ValueError(f"{what} must be one-dimensional, got shape {data.shape}")
    if (isinstance(data, np.ndarray) and data.ndim == 0) or not (
            hasattr(data, "__iter__") or hasattr(data, "__arrow_c_stream__")
            or hasattr(data, "__arrow_c_array__")):
        raise TypeError(f"{what} must be a column (a list, a numpy array, a pandas Series, an "
                        f"Arrow or polars column), not {type(data).__name__}")


# --------------------------------------------------------------------------- numpy masks


def _unmasked(data: np.ma.MaskedArray) -> Any:
    """A masked array as a column whose masked entries are nulls (module docstring)."""
    mask = np.ma.getmaskarray(data)
    raw = np.ma.getdata(data)
    if not mask.any():
        return raw
    kind = raw.dtype.kind
    if kind == "f":
        return np.where(mask, np.nan, raw)
    if kind in "iu":
        return pd.arrays.IntegerArray(raw, mask)
    if kind == "b":
        return pd.arrays.BooleanArray(raw, mask)
    if kind in "mM":
        return np.where(mask, np.array("NaT", dtype=raw.dtype), raw)
    return np.where(mask, None, raw.astype(object))


# --------------------------------------------------------------------------- Arrow


def _arrow(data: Any) -> Any:
    """``data`` as a pyarrow ChunkedArray or Table if it is Arrow data, else None."""
    if isinstance(data, _NATIVE):
        return None
    if type(data).__module__.startswith("pyarrow"):
        import pyarrow as pa

        if isinstance(data, pa.Array):
            return pa.chunked_array([data])
        if isinstance(data, pa.ChunkedArray | pa.Table):
            return data
        if isinstance(data, pa.RecordBatch):
            return pa.Table.from_batches([data])
        return None
    if hasattr(data, "__arrow_c_stream__") or hasattr(data, "__arrow_c_array__"):
        import pyarrow as pa

        # A stream of a table (a polars DataFrame) arrives as a struct column.
        if hasattr(data, "__arrow_c_stream__"):
            return pa.chunked_array(data)
        return pa.chunked_array([pa.array(data)])
    return None


def _is_records(arrow: Any) -> bool:
    import pyarrow as pa

    return isinstance(arrow, pa.Table) or pa.types.is_struct(arrow.type)


def _names(arrow: Any) -> list[str]:
    import pyarrow as pa

    if isinstance(arrow, pa.Table):
        return list(arrow.column_names)
    return [arrow.type.field(i).name for i in range(arrow.type.num_fields)]


def _columns(arrow: Any) -> dict[str, Any]:
    """The columns of a Table or of a struct column, by name."""
    import pyarrow as pa

    if isinstance(arrow, pa.Table):
        return {name: arrow.column(name) for name in arrow.column_names}
    # flatten() folds a null struct row into nulls of its fields.
    return dict(zip(_names(arrow), arrow.flatten(), strict=True))


def _convert(chunked: Any) -> Any:
    """One Arrow column (a ChunkedArray) as numpy / pandas: the table of the docstring."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = chunked.type
    types = pa.types
    if types.is_dictionary(kind) and not _is_text(kind.value_type):
        return _convert(pc.cast(chunked, kind.value_type))  # e.g. numbers: decoded
    if types.is_dictionary(kind) or _is_text(kind):
        return _categorical(chunked)
    if types.is_null(kind):
        return np.full(len(chunked), np.nan)
    if types.is_floating(kind) or types.is_decimal(kind):
        return pc.cast(chunked, pa.float64()).to_numpy()  # nulls become NaN
    if types.is_integer(kind) or types.is_boolean(kind):
        if chunked.null_count == 0:
            return chunked.to_numpy()
        return _nullable(chunked)
    if types.is_timestamp(kind) or types.is_date(kind):
        return chunked.to_pandas(date_as_object=False).array
    return chunked.to_pandas().array


def _exact(chunked: Any) -> Any:
    """One Arrow column with nothing merged or rounded (:func:`column`'s ``exact``)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = chunked.type
    if pa.types.is_dictionary(kind) and not _is_text(kind.value_type):
        return _exact(pc.cast(chunked, kind.value_type))
    if pa.types.is_decimal(kind) or pa.types.is_null(kind):
        return chunked.to_pandas().array  # Decimal objects / None, as they are
    if pa.types.is_floating(kind) and chunked.null_count:
        mask = chunked.is_null().to_numpy(zero_copy_only=False)
        data = pc.fill_null(pc.cast(chunked, pa.float64()), 0.0).to_numpy()
        return pd.arrays.FloatingArray(data, mask)  # NaN stays a value, apart from null
    return _convert(chunked)


def _is_text(kind: Any) -> bool:
    import pyarrow as pa

    return pa.types.is_string(kind) or pa.types.is_large_string(kind) or \
        pa.types.is_string_view(kind)


def _nullable(chunked: Any) -> Any:
    """Integers or booleans with nulls as pandas' masked array (exact: no float detour)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    mask = chunked.is_null().to_numpy()
    data = pc.fill_null(chunked, False if pa.types.is_boolean(chunked.type) else 0).to_numpy()
    if data.dtype == bool:
        return pd.arrays.BooleanArray(data, mask)
    return pd.arrays.IntegerArray(data, mask)


def _categorical(chunked: Any) -> pd.Categorical:
    """Text, plain or dictionary-encoded, as a Categorical: distinct values, a code per row."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not pa.types.is_dictionary(chunked.type):
        # The encoding's dictionary is clean: distinct entries, nulls as null codes.
        return _from_dictionary(pc.dictionary_encode(chunked))
    try:
        return _from_dictionary(chunked)
    except ValueError:  # a dictionary repeating an entry or holding a null: encode afresh
        return _from_dictionary(pc.dictionary_encode(pc.cast(chunked, chunked.type.value_type)))


def _from_dictionary(chunked: Any) -> pd.Categorical:
    """A dictionary-encoded text column as a Categorical; a ValueError (pyarrow's or
    pandas') if its dictionaries repeat an entry or hold a null."""
    import pyarrow as pa
    import pyarrow.compute as pc

    encoded = chunked.unify_dictionaries().combine_chunks()
    codes = pc.fill_null(encoded.indices.cast(pa.int64()), -1).to_numpy(zero_copy_only=False)
    return pd.Categorical.from_codes(codes, categories=encoded.dictionary.to_pylist(),
                                     validate=False)
