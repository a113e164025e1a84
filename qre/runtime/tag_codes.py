"""Tags as the kernels' codes: the one conversion of every tag column a monitor reads.

Pipeline position: the user's tags (strings, categoricals, integer codes; numpy, pandas,
Arrow, polars) → **codes into the monitor's alphabet** (:func:`tag_codes`, the kernels'
narrow dtype) → the engines. Moved out of :mod:`qre.runtime.monitor` as it was.

Cost: O(n) with a hash lookup per distinct tag (a factorization of the column first).
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from codegen.tables import code_dtype

from . import columns
from . import keys as key_rules
from .keys import distinct_objects

__all__ = ["tag_codes"]


def tag_codes(tags: Any, alphabet: Sequence[str], *, skip_unknown: bool = False) -> np.ndarray:
    """Tags as codes into ``alphabet`` (the kernels' narrow dtype,
    :func:`codegen.tables.code_dtype`: int8 for up to 128 tags); -1 marks an unknown
    tag when skipping.

    Accepts strings (a list, tuple, numpy, pandas, Arrow or polars column), a
    pandas Categorical (or categorical Series), or an integer array of codes
    (numpy, pandas, Arrow, polars). Arrow data is converted by
    :func:`qre.runtime.columns.column`. A missing tag (None, NaN, a null) is not a tag: an
    error naming its position, unless skipped.
    """
    tags = columns.column(tags, "tags")
    if isinstance(tags, pd.Series | pd.Index):
        tags = tags.array if isinstance(tags.dtype, pd.api.extensions.ExtensionDtype) \
            else tags.to_numpy()
    if isinstance(tags, pd.Categorical):
        return _categorical_codes(tags, alphabet, skip_unknown)
    if isinstance(tags, np.ndarray) and tags.dtype.kind in "iu":
        return _checked_codes(tags, len(alphabet))
    if isinstance(tags, pd.api.extensions.ExtensionArray) and tags.dtype.kind in "iu":
        return _masked_codes(tags, alphabet, skip_unknown)
    if isinstance(tags, np.ndarray) and tags.ndim != 1:
        raise ValueError(f"tags must be one-dimensional, got shape {tags.shape}")
    if isinstance(tags, list | tuple):  # as an object column: hashed in C, not in a loop
        tags = _object_column(tags)
    split = distinct_objects(tags) if isinstance(tags, np.ndarray) and tags.dtype == object \
        else None
    if split is not None:  # a long column of few objects: map the objects, not the rows
        from codegen.grouping import lookup_codes  # a long column: Numba is in use already

        by_object, objects = split
        codes, first_unknown = lookup_codes(by_object, _alphabet_lookup(objects, alphabet))
        if first_unknown < 0:
            return codes
        return _resolve_unknown(codes, lambda k: tags[k], skip_unknown, alphabet)
    if isinstance(tags, np.ndarray) and tags.dtype.kind in "OU":
        try:  # hashing in C: a Python loop over the rows costs twice as much
            rows, distinct = pd.factorize(tags, use_na_sentinel=False)
        except TypeError:  # unhashable entries: certainly not tags; the loop below says so
            pass
        else:
            codes = _codes_through(distinct, rows, alphabet)
            return _resolve_unknown(codes, lambda k: tags[k], skip_unknown, alphabet)
    items = list(tags)
    if _hashable(items):
        codes = pd.Categorical(items, categories=list(alphabet)).codes.astype(
            code_dtype(len(alphabet)))
    else:  # e.g. lists inside the list: certainly not tags
        codes = np.full(len(items), -1, dtype=code_dtype(len(alphabet)))
    return _resolve_unknown(codes, lambda k: items[k], skip_unknown, alphabet)


def _object_column(items: list[Any] | tuple[Any, ...]) -> np.ndarray | list[Any]:
    """``items`` as a one-dimensional object array, or as a list when numpy would read
    nested sequences into more dimensions."""
    out = np.empty(len(items), dtype=object)
    try:
        out[:] = items
    except ValueError:
        return list(items)
    return out


def _hashable(items: list[Any]) -> bool:
    try:
        for item in items:
            hash(item)
    except TypeError:
        return False
    return True


def _checked_codes(codes: np.ndarray, n_tags: int) -> np.ndarray:
    if codes.ndim != 1:
        raise ValueError(f"tag codes must be one-dimensional, got shape {codes.shape}")
    # One pass on the fast path (Numba's for a long column, numpy's min and max for a
    # short one: no Numba import), narrowing on the way; the offending position only on
    # failure.
    if len(codes) >= key_rules.NUMBA_ROWS:
        from codegen.kernels import narrowed

        checked = narrowed(codes, 0, n_tags - 1, code_dtype(n_tags))
    else:
        valid = not len(codes) or (int(codes.min()) >= 0 and int(codes.max()) < n_tags)
        checked = codes.astype(code_dtype(n_tags)) if valid else None
    if checked is None:
        k = int(np.flatnonzero((codes < 0) | (codes >= n_tags))[0])
        raise ValueError(f"tag code {int(codes[k])} at position {k} is out of range: codes "
                         f"index the alphabet, 0..{n_tags - 1}")
    return checked


def _masked_codes(tags: Any, alphabet: Sequence[str], skip_unknown: bool) -> np.ndarray:
    """Integer codes with missing entries (pandas' nullable integers, Arrow with nulls):
    each present code checked like a numpy code, a missing one is a missing tag."""
    missing = np.asarray(tags.isna(), dtype=bool)
    codes = _checked_codes(tags.to_numpy(dtype=np.int64, na_value=0), len(alphabet))
    codes = np.where(missing, -1, codes)
    return _resolve_unknown(codes, lambda k: None, skip_unknown, alphabet)


def _categorical_codes(tags: pd.Categorical, alphabet: Sequence[str],
                       skip_unknown: bool) -> np.ndarray:
    codes = _codes_through(tags.categories, tags.codes, alphabet)
    return _resolve_unknown(codes, lambda k: tags[k], skip_unknown, alphabet)


def _codes_through(distinct: Sequence[Any], rows: np.ndarray,
                   alphabet: Sequence[str]) -> np.ndarray:
    """Alphabet codes of ``distinct[rows]`` (−1: not a tag, or ``rows`` is −1), mapping
    the distinct values, not the rows, through the alphabet: O(distinct + rows)."""
    table = _alphabet_lookup(distinct, alphabet)
    lookup = np.append(table, np.array([-1], dtype=table.dtype))
    return lookup[rows.astype(np.int64)]  # row code −1 reads the last entry


def _alphabet_lookup(distinct: Sequence[Any], alphabet: Sequence[str]) -> np.ndarray:
    """The alphabet code of each distinct value, −1 for one that is not a tag."""
    index = {tag: k for k, tag in enumerate(alphabet)}
    return np.array([index.get(d, -1) if isinstance(d, str) else -1 for d in distinct],
                    dtype=code_dtype(len(alphabet)))


def _resolve_unknown(codes: np.ndarray, tag_at: Any, skip_unknown: bool,
                     alphabet: Sequence[str]) -> np.ndarray:
    unknown = np.flatnonzero(codes < 0)
    if len(unknown) and not skip_unknown:
        k = int(unknown[0])
        tag = tag_at(k)
        if columns.is_null(tag):
            raise ValueError(f"missing tag at position {k} ({tag!r}); pass "
                             f"unknown_tags='skip' to drop such events")
        if isinstance(tag, np.generic):  # show np.str_('x') as 'x'
            tag = tag.item()
        hint = ""
        if isinstance(tag, numbers.Integral):
            hint = " (tags are strings; integer codes must come as a numpy integer array)"
        raise ValueError(f"unknown tag {tag!r} at position {k}; the alphabet is "
                         f"{', '.join(alphabet)}{hint}; pass unknown_tags='skip' to drop such "
                         f"events")
    return codes


# --------------------------------------------------------------------------- values
