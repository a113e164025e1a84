"""Synchronization schemas: the types of partially ordered streams (seed 003, §2.2).

A schema is a forest of headers (record types) that says which items of a stream
must stay in order (Definition 2.6)::

    S ::= Bag(H) | Sync(H, S) | PartitionBy(K, S) | Par(S, S)

``Bag(H)``: H-items in any order. ``Sync(H, S)``: H-items are markers, ordered
with each other and with every item of S (end-of-day markers). ``PartitionBy(K,
S)``: S per value of the key fields K, the partitions independent. ``Par(S1,
S2)``: S1 and S2 independent. ``Seq(H)`` is ``Sync(H, Bag())``: a total order.

The meaning of a schema is its dependence relation D_S on items (Definition
2.13): two items are ordered iff a ``Sync`` node holds the header of one and the
other is at or below it, and they agree on the keys of every ``PartitionBy``
above that node. As every header occurs once, D_S is a table from header pairs
to *never* or *the key fields on which the two items must agree* (∅: always).
:meth:`Schema.conditions` computes that table once; relaxation (Definition 2.20,
``S1 ≲ S2``: S1 orders no pair that S2 leaves unordered) compares two tables
pair by pair, in time quadratic in the headers (Proposition 2.23).

Preconditions (well-formedness, Definition 2.8) are checked when a node is built:
no header twice; a header in the scope of a partition key has that field
(when the header declares its fields); no ``PartitionBy`` re-partitions by a
key already in scope.

>>> gps = Header("GPS", ("location", "taxiID"))
>>> taxis = Sync("EndOfHour", Par(PartitionBy("taxiID", Seq(gps)), Bag("RideCompleted")))
>>> taxis.conditions()[("GPS", "GPS")]
frozenset({'taxiID'})
>>> Sync("EndOfHour", Bag(["GPS", "RideCompleted"])).relaxes(taxis)
True
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ..errors import PreconditionError

Conditions = Mapping[tuple[str, str], frozenset[str]]
"""D_S as a table: (header, header) → the key fields two items must agree on to be
ordered (the empty set: always ordered); a pair absent from the table is never ordered."""


@dataclass(frozen=True)
class Header:
    """A record type of stream items (Definition 2.4): a unique name and its fields.

    ``fields`` None means undeclared: a partition key is then looked up in each
    item when the stream is read, and a missing one is an error naming the item.
    """

    name: str
    fields: frozenset[str] | None = None

    def __init__(self, name: str, fields: Iterable[str] | None = None) -> None:
        if not isinstance(name, str) or not name:
            raise PreconditionError(f"a header's name is a non-empty string, not {name!r}")
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "fields", None if fields is None else _names(fields, "field"))

    def __repr__(self) -> str:
        if self.fields is None:
            return repr(self.name)
        return f"Header({self.name!r}, {sorted(self.fields)!r})"


HeaderLike = Header | str
Headers = HeaderLike | Iterable[HeaderLike]


def _names(names: str | Iterable[str], what: str) -> frozenset[str]:
    names = [names] if isinstance(names, str) else list(names)
    bad = [n for n in names if not isinstance(n, str) or not n]
    if bad:
        raise PreconditionError(f"a {what} name is a non-empty string, not {bad[0]!r}")
    return frozenset(names)


def _headers(headers: Headers) -> frozenset[Header]:
    items = [headers] if isinstance(headers, Header | str) else list(headers)
    result = frozenset(h if isinstance(h, Header) else Header(h) for h in items)
    names = [h.name for h in result]
    if len(set(names)) < len(names):
        raise PreconditionError(f"header {_duplicate(names)!r} appears twice in one set "
                                "(with different fields)")
    return result


def _duplicate(names: list[str]) -> str:
    seen: set[str] = set()
    return next(n for n in names if n in seen or seen.add(n))  # type: ignore[func-returns-value]


@dataclass(frozen=True)
class Schema:
    """A well-formed synchronization schema; the four constructors are its subclasses.

    ``headers`` are all the headers in the schema and ``partition_keys`` every key
    that a ``PartitionBy`` inside it partitions by: both derived from the children
    when a node is built, so that a parent checks Definition 2.8 without a walk.
    """

    headers: frozenset[Header] = field(init=False, repr=False, compare=False)
    partition_keys: frozenset[str] = field(init=False, repr=False, compare=False)

    def _derive(self, own: frozenset[Header], children: tuple[Schema, ...],
                keys: frozenset[str] = frozenset()) -> None:
        names = [h.name for h in own] + [h.name for c in children for h in c.headers]
        if len(set(names)) < len(names):
            raise PreconditionError(f"header {_duplicate(names)!r} appears twice in the schema "
                                    "(Definition 2.8 (1): a header has one place)")
        object.__setattr__(self, "headers", own.union(*(c.headers for c in children)))
        object.__setattr__(self, "partition_keys",
                           keys.union(*(c.partition_keys for c in children)))

    @property
    def header_names(self) -> frozenset[str]:
        return frozenset(h.name for h in self.headers)

    def conditions(self) -> Conditions:
        """D_S (Definition 2.13) as a table over header pairs; see :data:`Conditions`."""
        table: dict[tuple[str, str], frozenset[str]] = {}
        _fill(self, frozenset(), table)
        return table

    def relaxes(self, other: Schema) -> bool:
        """``self ≲ other`` (Definition 2.20): self has every header of other and orders
        no two of other's items that other leaves unordered; quadratic in the headers.

        A pair ordered under agreement on keys K1 here and K2 there is covered iff
        K2 ⊆ K1 (fields have at least two values, so a key outside K1 can differ).
        D_S is reflexive (Proposition 2.15): an item is never reordered with itself,
        so two items of one header that agree on all its declared fields (the same
        item) order nothing.
        """
        if not self.header_names >= other.header_names:
            return False
        mine, theirs = self.conditions(), other.conditions()
        fields = {h.name: h.fields for h in other.headers}
        names = sorted(fields)
        for h in names:
            for g in names:
                keys, required = mine.get((h, g)), theirs.get((h, g))
                if keys is None or (h == g and fields[h] is not None and keys >= fields[h]):
                    continue
                if required is None or not required <= keys:
                    return False
        return True

    def order_equivalent(self, other: Schema) -> bool:
        """``self ∼ other``: the same dependence relation, so the same traces."""
        return self.relaxes(other) and other.relaxes(self)


@dataclass(frozen=True)
class Bag(Schema):
    """Items of these headers in any order: D_S is empty."""

    of: frozenset[Header]

    def __init__(self, of: Headers = ()) -> None:
        object.__setattr__(self, "of", _headers(of))
        self._derive(self.of, ())

    def __repr__(self) -> str:  # the notation of dt.traces.notation
        return f"Bag({_show(self.of)})" if self.of else "Bag()"


@dataclass(frozen=True)
class Sync(Schema):
    """Markers of these headers, ordered with each other and with every item of ``within``."""

    markers: frozenset[Header]
    within: Schema

    def __init__(self, markers: Headers, within: Schema) -> None:
        object.__setattr__(self, "markers", _headers(markers))
        object.__setattr__(self, "within", _schema(within))
        if not self.markers:
            raise PreconditionError("Sync needs at least one marker header")
        self._derive(self.markers, (self.within,))

    def __repr__(self) -> str:
        if isinstance(self.within, Bag) and not self.within.of:
            return f"Seq({_show(self.markers)})"
        return f"Sync({_show(self.markers)}, {self.within!r})"


def Seq(headers: Headers) -> Sync:
    """A total order of these headers' items: ``Sync(headers, Bag())``."""
    return Sync(headers, Bag())


@dataclass(frozen=True)
class PartitionBy(Schema):
    """``within`` per value of the key fields; different values are independent."""

    keys: frozenset[str]
    within: Schema

    def __init__(self, keys: str | Iterable[str], within: Schema) -> None:
        object.__setattr__(self, "keys", _names(keys, "partition key"))
        object.__setattr__(self, "within", _schema(within))
        if not self.keys:
            raise PreconditionError("PartitionBy needs at least one key field")
        again = self.keys & self.within.partition_keys
        if again:
            raise PreconditionError(
                f"PartitionBy({_show(self.keys)}) contains a PartitionBy by {_show(again)} "
                "again (Definition 2.8 (3): a key partitions once)")
        for h in self.within.headers:
            if h.fields is not None and not self.keys <= h.fields:
                raise PreconditionError(
                    f"header {h.name!r} is partitioned by {_show(self.keys - h.fields)}, "
                    f"which is not one of its fields {_show(h.fields)} (Definition 2.8 (2))")
        self._derive(frozenset(), (self.within,), self.keys)

    def __repr__(self) -> str:
        return f"PartitionBy({_show(self.keys)}, {self.within!r})"


@dataclass(frozen=True)
class Par(Schema):
    """Independent streams side by side (Par(S1, S2, S3) = Par(Par(S1, S2), S3))."""

    parts: tuple[Schema, ...]

    def __init__(self, *parts: Schema) -> None:
        if len(parts) < 2:
            raise PreconditionError("Par composes at least two schemas")
        object.__setattr__(self, "parts", tuple(_schema(p) for p in parts))
        self._derive(frozenset(), self.parts)

    def __repr__(self) -> str:
        return f"Par({', '.join(map(repr, self.parts))})"


def _schema(value: object) -> Schema:
    if not isinstance(value, Schema):
        raise PreconditionError(f"expected a schema (Bag, Seq, Sync, PartitionBy, Par), "
                                f"not {value!r}")
    return value


def _show(names: Iterable[Header | str]) -> str:
    """Names as :mod:`dt.traces.notation` writes them (quoted unless plain words)."""
    names = sorted(_quoted(n.name if isinstance(n, Header) else n) for n in names)
    return names[0] if len(names) == 1 else "[" + ", ".join(names) + "]"


def _quoted(name: str) -> str:
    if re.fullmatch(r"[A-Za-z0-9_.\-]+", name):
        return name
    return f"'{name}'" if "'" not in name else f'"{name}"'


def _fill(schema: Schema, scope: frozenset[str], table: dict) -> None:
    """Definition 2.13, one node at a time: a Sync node orders its markers with every
    header at or below it under the keys in scope (the PartitionBys above it)."""
    if isinstance(schema, Sync):
        below = schema.header_names
        for marker in schema.markers:
            for other in below:
                table[marker.name, other] = table[other, marker.name] = scope
        _fill(schema.within, scope, table)
    elif isinstance(schema, PartitionBy):
        _fill(schema.within, scope | schema.keys, table)
    elif isinstance(schema, Par):
        for part in schema.parts:
            _fill(part, scope, table)
