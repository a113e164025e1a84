"""Test helpers for users of qre (as ``pandas.testing`` is for pandas users).

:func:`assert_equivalent_streams` fails a test when two outputs are not the same
trace under a dependence (seed 003 §3: DiffStream), with the located report of
:mod:`dt.traces.diffstream` as the message. Use it instead of sorting both
outputs (which hides reordering bugs) or comparing them row by row (which fails
on a legitimate reordering by a parallel run).

>>> import pandas as pd
>>> local = pd.DataFrame({"key": [1, 2, 1], "value": [1.0, 5.0, 3.0]})
>>> spark = pd.DataFrame({"key": [2, 1, 1], "value": [5.0, 1.0, 3.0]})
>>> assert_equivalent_streams(local, spark, dependence="by_key(key)")
>>> assert_equivalent_streams(local, spark.iloc[[0, 2, 1]], dependence="by_key(key)")
... # doctest: +ELLIPSIS
Traceback (most recent call last):
  ...
AssertionError: not equivalent (2 and 2 rows read, 1 matched): right row 1 {'key': 1, ...
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .traces import Equal, compare_streams

__all__ = ["assert_equivalent_streams"]


def assert_equivalent_streams(left: Any, right: Any, dependence: Any, *, equal: Equal = None,
                              header: str | Callable[[Any], str] | None = None,
                              names: tuple[str, str] = ("left", "right")) -> None:
    """Raise ``AssertionError`` unless ``left`` ≡ ``right`` under ``dependence``.

    The arguments are :func:`qre.traces.compare_streams`'s.
    """
    __tracebackhide__ = True  # pytest shows the caller's line
    verdict = compare_streams(left, right, dependence, equal=equal, header=header, names=names)
    if not verdict.equivalent:
        raise AssertionError(str(verdict))
