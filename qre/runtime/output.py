"""A monitor's outputs and how they are named beside the user's data.

Pipeline position: the end of a run. :class:`Output` holds what
:meth:`qre.Monitor.run` returns (the encoding of API.md: ``status`` uint8,
0 undefined ⊥ / 1 defined / 2 conflict ⊤, and ``value`` float64, NaN unless
defined); :func:`result_columns` is the one naming rule for output columns,
used by :meth:`Output.to_pandas`, the ``qre run`` command and the Spark entry
points; :func:`check_no_collision` refuses outputs that would overwrite an
input column.

The naming rule. A monitor with one output writes the columns ``status`` and
``value``; with several, ``status_NAME`` and ``value_NAME`` per output, NAME
being the output's name (the keys of ``qre({"mean": ..., "sd": ...})``, or
the final states of a DT as written). Every result column name starts with
``prefix`` (default ``""``, so the names above are API.md's), which is how a
caller keeps outputs apart from input columns of the same name: an output
column never silently replaces an input column — it is an error that says
which prefix to pass.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dt.values import XValue, decode

__all__ = ["Output", "check_no_collision", "check_output_names", "result_columns"]


def result_columns(names: Sequence[str], prefix: str = "") -> list[tuple[str, str]]:
    """``(status, value)`` column names per output, in order (module docstring).

    >>> result_columns(["out"])
    [('status', 'value')]
    >>> result_columns(["mean", "sd"], prefix="qre_")
    [('qre_status_mean', 'qre_value_mean'), ('qre_status_sd', 'qre_value_sd')]
    """
    if not isinstance(prefix, str):
        raise TypeError(f"prefix is a string, not {type(prefix).__name__}")
    if len(names) == 1:
        return [(f"{prefix}status", f"{prefix}value")]
    return [(f"{prefix}status_{n}", f"{prefix}value_{n}") for n in names]


def check_no_collision(outputs: Iterable[str], inputs: Iterable[str], fix: str) -> None:
    """Refuse output columns named like input columns kept beside them.

    ``fix`` words the remedy for the caller (``--prefix P`` on the command line,
    ``prefix="P"`` in Python); the message proposes a prefix that avoids every
    input column.

    >>> check_no_collision(["status", "value"], ["tag", "value"], "pass prefix={prefix!r}")
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: the output column 'value' would overwrite ...: pass prefix='qre_' (...
    """
    outputs = list(outputs)
    taken = set(map(str, inputs))
    clash = [c for c in outputs if c in taken]
    if not clash:
        return
    prefix = "qre_"
    while any(f"{prefix}{c}" in taken for c in outputs):
        prefix = f"_{prefix}"
    raise ValueError(f"the output column {clash[0]!r} would overwrite the input column of that "
                     f"name: {fix.format(prefix=prefix)} (outputs then start with {prefix}), "
                     f"or rename or drop the input column")


def check_output_names(names: Sequence[Any], count: int) -> tuple[str, ...]:
    """User-chosen output names: ``count`` distinct non-empty strings."""
    names = tuple(names)
    if len(names) != count:
        raise ValueError(f"{len(names)} output name(s) for {count} output(s)")
    for name in names:
        if not isinstance(name, str) or not name:
            raise ValueError(f"an output name is a non-empty string, not {name!r}")
    if len(set(names)) != len(names):
        raise ValueError(f"output names must be distinct: {', '.join(names)}")
    return names


@dataclass(frozen=True, eq=False)
class Output:
    """Outputs of :meth:`Monitor.run`, one row per event (API.md).

    ``status``/``value`` are 1-D with one output and 2-D ``(n_events,
    n_outputs)`` otherwise; ``names`` names the outputs (the columns of the 2-D
    arrays). :meth:`to_pandas` gives a DataFrame with the columns of
    :func:`result_columns`; ``pd.DataFrame(output)`` gives the same frame (an
    Output iterates over its rows as dicts; ``to_pandas`` is the fast path).
    """

    status: np.ndarray
    value: np.ndarray
    names: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.status)

    def _columns(self) -> tuple[np.ndarray, np.ndarray]:
        status = self.status.reshape(len(self.status), len(self.names))
        return status, self.value.reshape(status.shape)

    def xvalues(self) -> list[tuple[XValue, ...]]:
        """The outputs as extended values (⊥, float, ⊤): one tuple over ``names`` per event."""
        status, value = self._columns()
        return [tuple(decode(s, v)) for s, v in zip(status, value, strict=True)]

    def to_pandas(self, prefix: str = "") -> pd.DataFrame:
        """One row per event: ``status`` (uint8) and ``value`` (float64), or
        ``status_NAME`` / ``value_NAME`` per output; every name starts with ``prefix``.

        >>> Output(np.array([1, 0], np.uint8), np.array([2.5, np.nan]), ("out",)).to_pandas()
           status  value
        0       1    2.5
        1       0    NaN
        """
        status, value = self._columns()
        frame = {}
        for j, (s, v) in enumerate(result_columns(self.names, prefix)):
            frame[s], frame[v] = status[:, j], value[:, j]
        return pd.DataFrame(frame)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """The rows as dicts (so that ``pd.DataFrame(output)`` and ``list(output)`` work)."""
        status, value = self._columns()
        pairs = result_columns(self.names)
        for s_row, v_row in zip(status, value, strict=True):
            row: dict[str, Any] = {}
            for (s, v), code, x in zip(pairs, s_row, v_row, strict=True):
                row[s], row[v] = int(code), float(x)
            yield row
