"""Oracles for data-trace types, straight from seed 003's definitions.

Nothing here shares code with dt.traces:

* :func:`depends` — D_S by Definition 2.13, recursively on the schema, for two items;
* :func:`trace_class` — ≡_D by Definition 2.14: every sequence reachable by swapping
  adjacent independent items (breadth-first; short sequences only);
* :func:`parse` — the unique series-parallel stream of a sequence (Proposition 2.19,
  Definition 2.9): two sequences are equivalent iff they parse to the same SPS;
* strategies for random well-formed schemas over a few headers and for items.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence

from hypothesis import strategies as st

from dt.traces import Bag, Header, Par, PartitionBy, Schema, Sync

KEYS = ("k0", "k1", "k2")
"""Every header has these fields, each 0 or 1: partition keys are drawn from them."""


class Rec(Mapping):
    """A hashable record: its header ``h`` and its key fields (plus a payload ``v``)."""

    def __init__(self, h: str, **fields: int) -> None:
        self._fields = {"h": h, **fields}

    def __getitem__(self, name: str) -> object:
        return self._fields[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._fields)

    def __len__(self) -> int:
        return len(self._fields)

    def __hash__(self) -> int:
        return hash(tuple(sorted(self._fields.items())))

    def __repr__(self) -> str:
        return f"{self._fields['h']}{tuple(v for k, v in self._fields.items() if k != 'h')}"


def headers_of(schema: Schema) -> set[str]:
    if isinstance(schema, Bag):
        return {h.name for h in schema.of}
    if isinstance(schema, Sync):
        return {h.name for h in schema.markers} | headers_of(schema.within)
    if isinstance(schema, PartitionBy):
        return headers_of(schema.within)
    return set().union(*(headers_of(p) for p in schema.parts))


def depends(schema: Schema, x: Mapping, y: Mapping) -> bool:
    """x D_S y by Definition 2.13 (both items of headers in the schema)."""
    if isinstance(schema, Bag):
        return False
    if isinstance(schema, Sync):
        markers = {h.name for h in schema.markers}
        return x["h"] in markers or y["h"] in markers or depends(schema.within, x, y)
    if isinstance(schema, PartitionBy):
        return (depends(schema.within, x, y)
                and all(x[k] == y[k] for k in schema.keys))
    for part in schema.parts:
        inside = headers_of(part)
        if x["h"] in inside and y["h"] in inside:
            return depends(part, x, y)
    return False


def trace_class(sequence: Sequence, dependent: Callable[[object, object], bool]) -> set[tuple]:
    """All sequences ≡_D to ``sequence`` (Definition 2.14), by adjacent swaps."""
    start = tuple(sequence)
    seen, frontier = {start}, [start]
    while frontier:
        word = frontier.pop()
        for i in range(len(word) - 1):
            if not dependent(word[i], word[i + 1]):
                swapped = (*word[:i], word[i + 1], word[i], *word[i + 2:])
                if swapped not in seen:
                    seen.add(swapped)
                    frontier.append(swapped)
    return seen


def parse(schema: Schema, sequence: Sequence[Mapping]) -> object:
    """The series-parallel stream of which ``sequence`` is a flattening (Proposition 2.19)."""
    if isinstance(schema, Bag):
        return frozenset(Counter(sequence).items())
    if isinstance(schema, Sync):
        markers = {h.name for h in schema.markers}
        stream, segment = [], []
        for item in sequence:
            if item["h"] in markers:
                stream += [parse(schema.within, segment), item]
                segment = []
            else:
                segment.append(item)
        return (*stream, parse(schema.within, segment))
    if isinstance(schema, PartitionBy):
        keys = sorted(schema.keys)
        groups: dict[tuple, list] = {}
        for item in sequence:
            groups.setdefault(tuple(item[k] for k in keys), []).append(item)
        return frozenset((v, parse(schema.within, g)) for v, g in groups.items())
    return tuple(parse(p, [x for x in sequence if x["h"] in headers_of(p)])
                 for p in schema.parts)


def universe(names: Sequence[str]) -> list[Rec]:
    """Every item of these headers: each key field 0 or 1."""
    return [Rec(h, **dict(zip(KEYS, values, strict=True)))
            for h in names for values in itertools.product((0, 1), repeat=len(KEYS))]


@st.composite
def schemas(draw: st.DrawFn, names: Sequence[str], scope: frozenset[str] = frozenset(),
            depth: int = 0) -> Schema:
    """A well-formed schema that places every header of ``names`` once."""
    names = list(names)
    free = [k for k in KEYS if k not in scope]
    kinds = ["bag"] + (["sync"] if names else []) + (["part"] if free else []) + ["par"]
    kind = draw(st.sampled_from(kinds if depth < 4 else ["bag", "sync"] if names else ["bag"]))
    if kind == "bag":
        return Bag([Header(h, KEYS) for h in names])
    if kind == "sync":
        markers = draw(st.lists(st.sampled_from(names), min_size=1, unique=True))
        rest = [h for h in names if h not in markers]
        return Sync([Header(h, KEYS) for h in markers],
                    draw(schemas(rest, scope, depth + 1)))
    if kind == "part":
        keys = draw(st.lists(st.sampled_from(free), min_size=1, unique=True))
        return PartitionBy(keys, draw(schemas(names, scope | set(keys), depth + 1)))
    split = draw(st.lists(st.booleans(), min_size=len(names), max_size=len(names)))
    return Par(draw(schemas([h for h, s in zip(names, split, strict=True) if s], scope, depth + 1)),
               draw(schemas([h for h, s in zip(names, split, strict=True) if not s], scope,
                            depth + 1)))
