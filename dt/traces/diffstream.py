"""DiffStream: are two streams the same trace? Online, with a located report (seed 003, §3.4).

Items of two streams arrive interleaved in any order (``push(side, item)``). Each
side keeps the items that have no partner yet on the other side, ``u_left`` and
``u_right``; the matcher holds nothing else, so its memory is the unmatched
items (optimal, [42] in the seed). For an item x arriving on side i, with j the
other side (Algorithm DiffStream):

    if no item of u_i depends on x            # x is minimal in u_i ∪ {x}
       and u_j has an item y equal to x that no earlier item of u_j depends on:
        drop y from u_j                       # x and y are partners
    elif some y in u_j depends on x:
        mismatch                              # side j has y before x's partner,
                                              # side i has x before y's partner
    else:
        add x to u_i

and at the end the streams are equivalent iff both unmatched sets are empty.
Equality is by a key of the item (the item itself by default; a dict by its
fields); it must be *compatible* with D: equal items have the same dependents.

Cost per item: with a :class:`~dt.traces.dependence.Typed` dependence, a few
dictionary probes per header pair of the item (unmatched items are indexed by
header and key values, each index in arrival order); with a
:class:`~dt.traces.dependence.Predicate`, a scan of the unmatched items (the
seed's implementation), so O(n · unmatched) in all.

>>> from dt.traces.dependence import by_key
>>> m = StreamMatcher(by_key("k"))
>>> for item in [{"k": 1, "v": 1}, {"k": 2, "v": 5}, {"k": 1, "v": 2}]:
...     _ = m.push(0, item)
>>> for item in [{"k": 2, "v": 5}, {"k": 1, "v": 2}]:
...     print(m.push(1, item))  # doctest: +ELLIPSIS
None
right item 1 {'k': 1, 'v': 2} depends on left item 0 {'k': 1, 'v': 1}, which has no equal item...
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import PreconditionError
from .dependence import Dependence, ItemError, Typed, as_dependence, key_values

SIDES = ("left", "right")


class _Float:
    """A float that Python's ``==`` gets wrong as a key: every NaN is one value (NaN ≠
    NaN in Python) and −0.0 is not 0.0 (``1 / x`` tells them apart): equality of
    floats is by their bits, as everywhere in qre, except for the NaN's sign and payload."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


NAN = _Float("nan")
NEGATIVE_ZERO = _Float("-0.0")


def normalized(value: Any) -> Hashable:
    """A value as it is compared: numpy scalars as Python ones, floats by :class:`_Float`."""
    if hasattr(value, "item") and getattr(value, "ndim", None) == 0:
        value = value.item()
    if isinstance(value, float):
        if math.isnan(value):
            return NAN
        if value == 0.0 and math.copysign(1.0, value) < 0:
            return NEGATIVE_ZERO
    return value


def item_key(item: Any) -> Hashable:
    """The default equality of items: a mapping by its fields, a tuple or list by its
    values, anything else by itself (each value :func:`normalized`)."""
    if isinstance(item, Mapping):
        return frozenset((k, normalized(v)) for k, v in item.items())
    if isinstance(item, tuple | list):
        return tuple(normalized(v) for v in item)
    return normalized(item)


def show(item: Any, limit: int = 200) -> str:
    text = repr(item)
    return text if len(text) <= limit else text[:limit - 1] + "…"


@dataclass(frozen=True)
class Mismatch:
    """Where two streams stop being the same trace: an item and why it has no partner.

    ``side`` and ``position`` locate the item (0-based, in its own stream);
    ``other`` locates the item of the other stream it conflicts with, if any.
    """

    side: str
    position: int
    item: Any
    reason: str
    other: tuple[str, int, Any] | None = None
    noun: str = "item"
    """What the report calls an item ("row" for frames)."""

    def __str__(self) -> str:
        return f"{self.side} {self.noun} {self.position} {show(self.item)} {self.reason}"


@dataclass(frozen=True)
class Verdict:
    """The outcome of a comparison: equivalent or the first mismatch found, with counts."""

    mismatch: Mismatch | None
    counts: tuple[int, int]
    matched: int
    unmatched: tuple[int, int]
    peak_unmatched: int
    """The most items the matcher held at once: its memory, in items."""
    noun: str = "item"

    @property
    def equivalent(self) -> bool:
        return self.mismatch is None

    def __bool__(self) -> bool:
        return self.equivalent

    def __str__(self) -> str:
        counts = (f"{self.counts[0]} and {self.counts[1]} {self.noun}s read, "
                  f"{self.matched} matched")
        if self.mismatch is None:
            return f"equivalent ({counts})"
        return f"not equivalent ({counts}): {self.mismatch}"


@dataclass
class _Entry:
    position: int
    item: Any
    key: Hashable
    header: str | None
    keys: dict[tuple[str, ...], tuple] | None  # Typed: values on each key tuple it is filed by


class _Unmatched:
    """One side's unmatched items, in arrival order, found by key."""

    def __init__(self) -> None:
        self.entries: dict[int, _Entry] = {}
        self.by_key: dict[Hashable, dict[int, None]] = {}

    def __len__(self) -> int:
        return len(self.entries)

    def add(self, entry: _Entry) -> None:
        self.entries[entry.position] = entry
        self.by_key.setdefault(entry.key, {})[entry.position] = None

    def remove(self, entry: _Entry) -> None:
        del self.entries[entry.position]
        same = self.by_key[entry.key]
        del same[entry.position]
        if not same:
            del self.by_key[entry.key]

    def first_equal(self, key: Hashable) -> _Entry | None:
        same = self.by_key.get(key)
        return self.entries[next(iter(same))] if same else None

    def first_dependent(self, entry: _Entry, before: int | None = None) -> _Entry | None:
        """The earliest unmatched item that depends on ``entry`` (earlier than ``before``)."""
        raise NotImplementedError


class _Scanned(_Unmatched):
    """Unmatched items of a :class:`Predicate` dependence: found by scanning."""

    def __init__(self, depends: Callable[[Any, Any], bool]) -> None:
        super().__init__()
        self.depends = depends

    def first_dependent(self, entry: _Entry, before: int | None = None) -> _Entry | None:
        for position, other in self.entries.items():
            if before is not None and position >= before:
                return None
            if self.depends(other.item, entry.item):
                return other
        return None


class _Indexed(_Unmatched):
    """Unmatched items of a :class:`Typed` dependence, filed by (header, keys, values)."""

    def __init__(self, dependence: Typed) -> None:
        super().__init__()
        self.dependence = dependence
        self.index: dict[tuple, dict[int, None]] = {}

    def add(self, entry: _Entry) -> None:
        super().add(entry)
        for keys, values in entry.keys.items():
            self.index.setdefault((entry.header, keys, values), {})[entry.position] = None

    def remove(self, entry: _Entry) -> None:
        super().remove(entry)
        for keys, values in entry.keys.items():
            filed = self.index[entry.header, keys, values]
            del filed[entry.position]
            if not filed:
                del self.index[entry.header, keys, values]

    def first_dependent(self, entry: _Entry, before: int | None = None) -> _Entry | None:
        first = None
        for header, keys in self.dependence.lookups[entry.header]:
            filed = self.index.get((header, keys, entry.keys[keys]))
            if filed:
                position = next(iter(filed))
                if first is None or position < first:
                    first = position
        if first is None or (before is not None and first >= before):
            return None
        return self.entries[first]


class StreamMatcher:
    """Online equivalence of two streams up to a dependence (Algorithm DiffStream, §3.4).

    ``dependence``: a :class:`~dt.traces.dependence.Dependence`, a one-header schema
    or a symmetric function of two items. ``key``: the equality of items as a
    function to a hashable value (default :func:`item_key`); override it to ignore
    fields that may differ (timestamps of processing, metadata). ``names`` name
    the two streams in reports, and ``noun`` what they call an item.

    After the first mismatch further items are counted but not compared.
    """

    def __init__(self, dependence: Dependence | Any, *,
                 key: Callable[[Any], Hashable] | None = None,
                 names: tuple[str, str] = SIDES, noun: str = "item") -> None:
        self.dependence = as_dependence(dependence)
        self.noun = noun
        self.key = key if key is not None else item_key
        if len(names) != 2 or names[0] == names[1]:
            raise PreconditionError(f"names are two different stream names, not {names!r}")
        self.names = tuple(names)
        typed = isinstance(self.dependence, Typed)
        self.sides = tuple(_Indexed(self.dependence) if typed
                           else _Scanned(self.dependence.depends) for _ in range(2))
        self.counts = [0, 0]
        self.matched = 0
        self.peak = 0
        self.mismatch: Mismatch | None = None

    def push(self, side: int, item: Any, key: Hashable | None = None) -> Mismatch | None:
        """Compare the next item of stream ``side`` (0 or 1); the mismatch if there is one.

        ``key``: the item's equality key if the caller computed it (frames do it
        column by column).
        """
        if side not in (0, 1):
            raise ValueError(f"side is 0 ({self.names[0]}) or 1 ({self.names[1]}), not {side!r}")
        position = self.counts[side]
        self.counts[side] += 1
        if self.mismatch is not None:
            return self.mismatch
        entry = self._entry(side, position, item, key)
        mine, theirs = self.sides[side], self.sides[1 - side]
        if mine.first_dependent(entry) is None:
            partner = theirs.first_equal(entry.key)
            if partner is not None and theirs.first_dependent(partner, partner.position) is None:
                theirs.remove(partner)
                self.matched += 1
                return None
        blocker = theirs.first_dependent(entry)
        if blocker is not None:
            self.mismatch = self._blocked(side, entry, blocker)
            return self.mismatch
        mine.add(entry)
        self.peak = max(self.peak, len(mine) + len(theirs))
        return None

    def extend(self, side: int, items: Iterable[Any]) -> Mismatch | None:
        """Push many items of one stream; the first mismatch, if any."""
        for item in items:
            self.push(side, item)
        return self.mismatch

    def finish(self) -> Verdict:
        """Both streams have ended: equivalent iff every item found its partner."""
        mismatch = self.mismatch or self._leftover()
        return Verdict(mismatch, (self.counts[0], self.counts[1]), self.matched,
                       (len(self.sides[0]), len(self.sides[1])), self.peak, self.noun)

    def _entry(self, side: int, position: int, item: Any, key: Hashable | None) -> _Entry:
        try:
            if key is None:
                key = self.key(item)
            hash(key)
            if not isinstance(self.dependence, Typed):
                return _Entry(position, item, key, None, None)
            header = self.dependence.header_of(item)
            return _Entry(position, item, key, header,
                          {keys: key_values(item, keys)
                           for keys in self.dependence.stores[header]})
        except (ItemError, TypeError) as error:
            raise ItemError(f"{self.names[side]} {self.noun} {position} {show(item)}: {error}"
                            ) from None

    def _blocked(self, side: int, entry: _Entry, blocker: _Entry) -> Mismatch:
        mine, theirs = self.names[side], self.names[1 - side]
        noun = self.noun
        return Mismatch(mine, entry.position, entry.item,
                        f"depends on {theirs} {noun} {blocker.position} {show(blocker.item)}, "
                        f"which has no equal {noun} in {mine} before it: the streams order the "
                        f"two differently, or {mine} lacks it",
                        (theirs, blocker.position, blocker.item), noun)

    def _leftover(self) -> Mismatch | None:
        firsts = [(next(iter(s.entries.values())), i) for i, s in enumerate(self.sides)
                  if s.entries]
        if not firsts:
            return None
        entry, side = min(firsts, key=lambda pair: (pair[0].position, pair[1]))
        left = len(self.sides[side])
        more = f" ({left - 1} more of its {self.noun}s have none)" if left > 1 else ""
        return Mismatch(self.names[side], entry.position, entry.item,
                        f"has no equal {self.noun} in {self.names[1 - side]}{more}", None,
                        self.noun)


def compare(left: Iterable[Any], right: Iterable[Any], dependence: Dependence | Any, *,
            key: Callable[[Any], Hashable] | None = None,
            keys: tuple[Sequence[Hashable] | None, Sequence[Hashable] | None] = (None, None),
            names: tuple[str, str] = SIDES, noun: str = "item") -> Verdict:
    """Two finished streams compared as traces, their items fed alternately (a
    mismatch is found at the first item of either stream that proves it). ``keys``:
    each side's equality keys if the caller computed them (None: ``key`` of each item)."""
    matcher = StreamMatcher(dependence, key=key, names=names, noun=noun)
    streams = [iter(zip(items, side_keys, strict=True)) if side_keys is not None
               else ((item, None) for item in items)
               for items, side_keys in zip((left, right), keys, strict=True)]
    live = [True, True]
    while any(live) and matcher.mismatch is None:
        for side in (0, 1):
            if live[side]:
                pair = next(streams[side], None)
                if pair is None:
                    live[side] = False
                else:
                    matcher.push(side, *pair)
    return matcher.finish()
