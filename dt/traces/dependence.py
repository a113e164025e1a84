"""Dependence relations on stream items: which pairs must keep their order (seed 003, §2.1, §3.3).

Two streams are the same trace (≡_D, Definition 2.14) when one becomes the other
by swapping adjacent items that are not dependent. A :class:`Dependence` is the
symmetric relation D, in one of two forms:

* :class:`Predicate` — any symmetric function of two items (DiffStream's form,
  Figs 6–9); the matcher compares an item with every unmatched one.
* :class:`Typed` — a synchronization schema (:mod:`dt.traces.schema`) and a way
  to tell each item's header. Its relation is a table over header pairs ("never",
  or "when these key fields agree"), so the matcher indexes unmatched items by
  (header, key values) and looks a new item up in O(headers) dictionary probes.

The combinators build the common typed cases: :func:`ordered` (a sequence),
:func:`unordered` (a bag), :func:`by_key` (ordered per key, keys independent:
what a keyed job emits) and :func:`punctuated` (markers such as end-of-day that
every item is ordered against, with items between them per ``within``).

Items are read by field name: ``item[name]`` for a mapping (a dict, a row),
``getattr(item, name)`` otherwise (a named tuple, an object).

>>> d = by_key("taxi")
>>> d.depends({"taxi": 1, "km": 2.0}, {"taxi": 1, "km": 3.5}), d.depends({"taxi": 1}, {"taxi": 2})
(True, False)
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import PreconditionError
from .schema import Bag, PartitionBy, Schema, Seq, Sync

ITEM = "item"
"""The one header of the combinators' schemas."""
MARKER = "marker"
"""The header of :func:`punctuated`'s markers."""


class ItemError(ValueError):
    """An item that a dependence cannot read (a missing field, an unknown header)."""


def read_field(item: Any, name: str) -> Any:
    """``item[name]`` for a mapping, ``getattr(item, name)`` otherwise."""
    try:
        return item[name] if isinstance(item, Mapping) else getattr(item, name)
    except (KeyError, AttributeError):
        raise ItemError(f"it has no field {name!r}") from None


def key_values(item: Any, keys: Sequence[str]) -> tuple[Hashable, ...]:
    """The item's values on ``keys`` (a partition's key; an index of the matcher)."""
    return tuple(read_field(item, k) for k in keys)


class Dependence:
    """A symmetric relation on stream items (see the module docstring)."""

    def depends(self, a: Any, b: Any) -> bool:
        raise NotImplementedError


@dataclass(frozen=True)
class Predicate(Dependence):
    """D given as a function of two items, assumed symmetric and pure (§3.3)."""

    function: Callable[[Any, Any], bool]

    def depends(self, a: Any, b: Any) -> bool:
        return bool(self.function(a, b))

    def __repr__(self) -> str:
        return f"Predicate({getattr(self.function, '__name__', self.function)!r})"


@dataclass(frozen=True)
class Typed(Dependence):
    """D_S of a schema (Definition 2.13), items told apart by their header.

    ``header`` says which header an item has: None when the schema has one
    header; a field name whose value is the header's name; or a function of
    the item returning the name.
    """

    schema: Schema
    header: str | Callable[[Any], str] | None = None
    lookups: Mapping[str, tuple[tuple[str, tuple[str, ...]], ...]] = field(
        init=False, repr=False, compare=False)
    """Per header h: every (g, keys) with h-items and g-items ordered when they
    agree on keys (sorted): where the matcher looks for an h-item's dependents."""
    stores: Mapping[str, tuple[tuple[str, ...], ...]] = field(init=False, repr=False,
                                                              compare=False)
    """Per header h: the distinct key tuples of ``lookups[h]``: the indexes an
    unmatched h-item is filed under (D is symmetric, so the same key sets)."""

    def __post_init__(self) -> None:
        names = self.schema.header_names
        if self.header is None and len(names) != 1:
            raise PreconditionError(
                f"the schema has {len(names)} headers ({', '.join(sorted(names))}): say which "
                "one an item has with header= (a field name or a function of the item)")
        lookups: dict[str, list] = {h: [] for h in names}
        for (h, g), keys in sorted(self.schema.conditions().items()):
            lookups[h].append((g, tuple(sorted(keys))))
        object.__setattr__(self, "lookups", {h: tuple(v) for h, v in lookups.items()})
        object.__setattr__(self, "stores", {h: tuple(dict.fromkeys(k for _, k in v))
                                            for h, v in lookups.items()})

    def header_of(self, item: Any) -> str:
        """The name of ``item``'s header, checked against the schema."""
        if self.header is None:
            return next(iter(self.schema.header_names))
        name = read_field(item, self.header) if isinstance(self.header, str) else self.header(item)
        if name not in self.lookups:
            raise ItemError(f"its header {name!r} is not one of the schema's "
                            f"({', '.join(sorted(self.lookups))})")
        return name

    def depends(self, a: Any, b: Any) -> bool:
        g = self.header_of(b)
        for other, keys in self.lookups[self.header_of(a)]:
            if other == g:
                return all(read_field(a, k) == read_field(b, k) for k in keys)
        return False


def typed(schema: Schema, header: str | Callable[[Any], str] | None = None) -> Typed:
    """The dependence of ``schema`` (Definition 2.13); see :class:`Typed` for ``header``."""
    return Typed(schema, header)


def ordered() -> Typed:
    """Every item ordered with every other: streams are equivalent iff equal."""
    return Typed(Seq(ITEM))


def unordered() -> Typed:
    """No two items ordered: streams are equivalent iff they have the same multiset."""
    return Typed(Bag(ITEM))


def by_key(*fields: str) -> Typed:
    """Items ordered when they agree on ``fields``, independent otherwise (a keyed job)."""
    if not fields:
        raise PreconditionError("by_key needs at least one key field")
    return Typed(PartitionBy(fields, Seq(ITEM)))


def punctuated(is_marker: Callable[[Any], bool], within: Typed | None = None) -> Typed:
    """Markers (end-of-day, watermarks) ordered with every item; between two markers
    the other items are ordered as ``within`` says (default: not at all).

    ``Sync(marker, S)`` (Figs 6–7): an item between the k-th and the k+1-th marker
    must stay there, so every window's contents are the same in both streams.
    """
    inner = within if within is not None else unordered()
    if MARKER in inner.schema.header_names:
        raise PreconditionError(f"within already has a header named {MARKER!r}")

    def header(item: Any) -> str:
        return MARKER if is_marker(item) else inner.header_of(item)

    return Typed(Sync(MARKER, inner.schema), header)


def as_dependence(spec: Dependence | Schema | Callable[[Any, Any], bool]) -> Dependence:
    """A dependence from what a user passes: a :class:`Dependence`, a one-header
    schema, or a function of two items."""
    if isinstance(spec, Dependence):
        return spec
    if isinstance(spec, Schema):
        return Typed(spec)
    if callable(spec):
        return Predicate(spec)
    raise PreconditionError(f"a dependence is a Dependence (ordered(), by_key(...), ...), "
                            f"a schema or a function of two items, not {spec!r}")
