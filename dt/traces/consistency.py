"""Consistency of a stream function with its types: equivalent inputs give equivalent outputs.

Definition 2.24 (seed 003): f is (X, Y)-consistent if u ≡_X v implies f(u) ≡_Y f(v).
A parallel or distributed implementation may see any v equivalent to the input
it was given (Spark repartitions, a stream's micro-batches interleave keys), so
its output is deterministic up to its output type iff the function is consistent.

:func:`reorder` draws such a v: a random flattening (Definition 2.18) of the
input's series-parallel stream for a schema's dependence — bags shuffled,
partitions and parallel parts interleaved at random, markers kept in place — or a
random topological order of the items for a predicate (O(n²)).
:func:`find_inconsistency` runs f on the input and on random reorderings and
compares the outputs with the DiffStream matcher; it returns the first pair
whose outputs are not the same trace (a counterexample), or None.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from .dependence import Dependence, Typed, as_dependence, key_values
from .diffstream import Verdict, compare
from .schema import Bag, Par, PartitionBy, Schema, Sync


def reorder(items: Sequence[Any], dependence: Dependence | Any,
            rng: random.Random) -> list[int]:
    """Positions of ``items`` in a random order equivalent to theirs under ``dependence``."""
    dependence = as_dependence(dependence)
    positions = list(range(len(items)))
    if isinstance(dependence, Typed):
        headers = [dependence.header_of(item) for item in items]
        return _flatten(dependence.schema, positions, items, headers, rng)
    return _topological(items, dependence, rng)


def _flatten(schema: Schema, positions: list[int], items: Sequence[Any], headers: list[str],
             rng: random.Random) -> list[int]:
    """A random flattening of the SPS that the items at ``positions`` parse into."""
    if isinstance(schema, Bag):
        shuffled = list(positions)
        rng.shuffle(shuffled)
        return shuffled
    if isinstance(schema, Sync):
        markers = {h.name for h in schema.markers}
        result: list[int] = []
        segment: list[int] = []
        for p in positions:
            if headers[p] in markers:
                result += [*_flatten(schema.within, segment, items, headers, rng), p]
                segment = []
            else:
                segment.append(p)
        return result + _flatten(schema.within, segment, items, headers, rng)
    if isinstance(schema, PartitionBy):
        keys = sorted(schema.keys)
        groups: dict[tuple[Hashable, ...], list[int]] = {}
        for p in positions:
            groups.setdefault(key_values(items[p], keys), []).append(p)
        parts = [_flatten(schema.within, g, items, headers, rng) for g in groups.values()]
    else:
        assert isinstance(schema, Par)
        names = [p.header_names for p in schema.parts]
        parts = [_flatten(part, [p for p in positions if headers[p] in inside], items, headers,
                          rng) for part, inside in zip(schema.parts, names, strict=True)]
    return _interleave(parts, rng)


def _interleave(parts: list[list[int]], rng: random.Random) -> list[int]:
    """A uniformly random interleaving of sequences (each keeps its order)."""
    labels = [i for i, part in enumerate(parts) for _ in part]
    rng.shuffle(labels)
    iterators = [iter(part) for part in parts]
    return [next(iterators[i]) for i in labels]


def _topological(items: Sequence[Any], dependence: Dependence, rng: random.Random) -> list[int]:
    """A random linear extension of the order that ``items`` and a predicate D induce."""
    n = len(items)
    waiting = [0] * n
    after: list[list[int]] = [[] for _ in range(n)]
    for j in range(n):
        for i in range(j):
            if dependence.depends(items[i], items[j]):
                waiting[j] += 1
                after[i].append(j)
    ready = [j for j in range(n) if not waiting[j]]
    order = []
    while ready:
        i = ready.pop(rng.randrange(len(ready)))
        order.append(i)
        for j in after[i]:
            waiting[j] -= 1
            if not waiting[j]:
                ready.append(j)
    return order


@dataclass(frozen=True)
class Inconsistency:
    """Two equivalent inputs whose outputs are not the same trace."""

    input: list[Any]
    reordered: list[Any]
    output: list[Any]
    reordered_output: list[Any]
    verdict: Verdict

    def __str__(self) -> str:
        return (f"equivalent inputs of {len(self.input)} items gave outputs that are "
                f"{self.verdict}")


def find_inconsistency(function: Callable[[list[Any]], Sequence[Any]], items: Sequence[Any],
                       input: Dependence | Any, output: Dependence | Any, *, tries: int = 20,
                       seed: int = 0, key: Callable[[Any], Hashable] | None = None
                       ) -> Inconsistency | None:
    """Definition 2.24 tested: ``function`` on ``items`` and on ``tries`` random
    reorderings equivalent under ``input``; the first whose output is not
    equivalent under ``output`` to the original's, or None."""
    rng = random.Random(seed)
    items = list(items)
    expected = list(function(items))
    for _ in range(tries):
        reordered = [items[p] for p in reorder(items, input, rng)]
        got = list(function(reordered))
        verdict = compare(expected, got, output, key=key, names=("original", "reordered"))
        if not verdict.equivalent:
            return Inconsistency(items, reordered, expected, got, verdict)
    return None
