"""Reachability over an edge list, shared by the automata of the project (CER, DFAs, CRAs).

>>> sorted(co_reachable({3}, [(1, 2), (2, 3), (4, 1), (5, 5)]))
[1, 2, 3, 4]
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import TypeVar

__all__ = ["co_reachable"]

N = TypeVar("N", bound=Hashable)


def co_reachable(targets: Iterable[N], edges: Iterable[tuple[N, N]]) -> set[N]:
    """The nodes from which one of ``targets`` is reachable along ``edges`` (source, target),
    the targets included. O(|edges|)."""
    sources: dict[N, list[N]] = {}
    for source, target in edges:
        sources.setdefault(target, []).append(source)
    found = set(targets)
    todo = list(found)
    while todo:
        for p in sources.get(todo.pop(), ()):
            if p not in found:
                found.add(p)
                todo.append(p)
    return found
