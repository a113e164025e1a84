"""Extended data values: undefined (⊥), a defined float64, conflict (⊤).

Seed 003, §5.1. An extended value is a multiset of data values seen through
its size: ⊥ is the empty multiset, a float is a singleton, ⊤ is "two or more".
Hence the two tables of §5.1:

* union ``⊔``: ⊥ is the identity, anything else meets anything else in ⊤ —
  *including two equal floats*: ``1.0 ⊔ 1.0 = ⊤``. Never dedupe equal values.
* a lifted k-ary operation is ⊥ if any argument is ⊥, else ⊤ if any
  argument is ⊤, else the operation applied to the floats.

Representation. In Python an extended value (:data:`XValue`) is the singleton
:data:`BOT`, the singleton :data:`TOP`, or a ``float`` (a defined value; NaN is
a *defined* value, the IEEE result of e.g. ``0/0``). Outside the reference
interpreter a vector of extended values is the flat pair of arrays of the
public contract (``docs/API.md``): ``status`` (``uint8``: 0 undefined,
1 defined, 2 conflict) and ``value`` (``float64``, NaN where not defined);
:func:`encode` and :func:`decode` convert between the two.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from enum import IntEnum
from typing import Final

import numpy as np

__all__ = [
    "BOT",
    "TOP",
    "Status",
    "XValue",
    "decode",
    "encode",
    "is_defined",
    "lift",
    "show",
    "status_of",
    "union",
    "union_all",
]


class Status(IntEnum):
    """The status code of an extended value, as stored in ``status`` arrays."""

    UNDEFINED = 0
    DEFINED = 1
    CONFLICT = 2


class _Special:
    """One of the two non-data extended values; compared by identity."""

    __slots__ = ("_name", "_status")

    def __init__(self, name: str, status: Status) -> None:
        self._name = name
        self._status = status

    def __repr__(self) -> str:
        return self._name

    def __reduce__(self) -> str:
        # Pickling returns the module-level singleton, so identity survives.
        return "BOT" if self._status is Status.UNDEFINED else "TOP"


BOT: Final = _Special("⊥", Status.UNDEFINED)
"""Undefined: no value (the empty multiset)."""

TOP: Final = _Special("⊤", Status.CONFLICT)
"""Conflict: two or more values met (e.g. an ambiguous parse)."""

XValue = _Special | float
"""An extended value: :data:`BOT`, :data:`TOP` or a defined ``float``."""


def is_defined(x: XValue) -> bool:
    """True for a defined value (a float, NaN included)."""
    return x is not BOT and x is not TOP


def status_of(x: XValue) -> Status:
    """The :class:`Status` of an extended value."""
    if x is BOT:
        return Status.UNDEFINED
    if x is TOP:
        return Status.CONFLICT
    return Status.DEFINED


def union(a: XValue, b: XValue) -> XValue:
    """Multiset union ``a ⊔ b``: ⊥ is the identity, otherwise ⊤.

    >>> union(BOT, 2.0), union(2.0, 2.0), union(TOP, BOT)
    (2.0, ⊤, ⊤)
    """
    if a is BOT:
        return b
    if b is BOT:
        return a
    return TOP


def union_all(xs: Iterable[XValue]) -> XValue:
    """``⊔`` over any number of values (⊥ for none)."""
    acc: XValue = BOT
    for x in xs:
        acc = union(acc, x)
        if acc is TOP:
            return TOP
    return acc


def lift(fn: Callable[..., float], args: Sequence[XValue]) -> XValue:
    """Apply a k-ary operation to extended values (the second table of §5.1).

    ⊥ if any argument is ⊥; otherwise ⊤ if any is ⊤; otherwise ``fn(*args)``.

    >>> lift(lambda a, b: a + b, [1.0, TOP]), lift(lambda a, b: a + b, [TOP, BOT])
    (⊤, ⊥)
    """
    if any(a is BOT for a in args):
        return BOT
    if any(a is TOP for a in args):
        return TOP
    return float(fn(*args))


def show(x: XValue) -> str:
    """A short human-readable form: ``⊥``, ``⊤`` or the float's repr."""
    return repr(x)


def encode(xs: Sequence[XValue]) -> tuple[np.ndarray, np.ndarray]:
    """A vector of extended values as the contract's ``(status, value)`` arrays.

    >>> s, v = encode([BOT, 1.5, TOP]); s.tolist(), v.tolist()
    ([0, 1, 2], [nan, 1.5, nan])
    """
    status = np.fromiter((status_of(x) for x in xs), dtype=np.uint8, count=len(xs))
    value = np.fromiter(
        (x if is_defined(x) else np.nan for x in xs), dtype=np.float64, count=len(xs)
    )
    return status, value


def decode(status: Sequence[int] | np.ndarray, value: Sequence[float] | np.ndarray) -> list[XValue]:
    """Inverse of :func:`encode`: ``(status, value)`` arrays to extended values."""
    if len(status) != len(value):
        raise ValueError(f"status and value differ in length: {len(status)} != {len(value)}")
    out: list[XValue] = []
    for s, v in zip(status, value, strict=True):
        code = int(s)
        if code == Status.UNDEFINED:
            out.append(BOT)
        elif code == Status.DEFINED:
            out.append(float(v))
        elif code == Status.CONFLICT:
            out.append(TOP)
        else:
            raise ValueError(f"invalid status code {code}: expected 0, 1 or 2")
    return out
