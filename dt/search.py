"""Shared parts of the breadth-first searches over unit configurations (§5.1, Theorem 5.2).

The analyses — status equivalence (:mod:`dt.equivalence`, Theorem 5.3),
languages (:mod:`dt.languages`) and the value invariant
(:mod:`dt.value_equivalence`) — search the reachable unit configurations of
the projection (:mod:`dt.projection`) breadth-first from the initial one,
keep for each node the (node, tag) it was discovered from, and replay what
they report on the reference evaluator. This module holds what they share:
the default initial statuses, the tag string of a discovered node, an initial
vector with given statuses, and the error for a search that hit its limit.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

from .model import DT
from .values import BOT, TOP, Status, XValue

__all__ = ["SearchLimitError", "default_statuses", "path_to", "vector_with_statuses"]

Node = TypeVar("Node", bound=Hashable)


class SearchLimitError(ValueError):
    """A search met more than ``limit`` reachable nodes before its answer was known.

    The answer is then unknown: neither proven nor refuted. ``explored`` is the
    number of nodes discovered.
    """

    def __init__(self, what: str, nodes: str, explored: int, limit: int) -> None:
        super().__init__(f"{what} undecided: more than {limit} reachable {nodes} "
                         f"({explored} discovered) before an answer; raise the limit to "
                         f"search further")
        self.explored = explored
        self.limit = limit


def default_statuses(dt: DT, x_status: Sequence[int] | None) -> tuple[int, ...]:
    """All initial states defined (the Monitor feeds 0.0) unless statuses are given."""
    if x_status is None:
        return (int(Status.DEFINED),) * len(dt.initial)
    return tuple(int(s) for s in x_status)


def vector_with_statuses(x_status: Sequence[int], value: float = 0.0) -> tuple[XValue, ...]:
    """An initial vector with the given statuses; defined entries are ``value``."""
    return tuple(BOT if s == Status.UNDEFINED else TOP if s == Status.CONFLICT else value
                 for s in x_status)


def path_to(parents: Mapping[Node, tuple[Node, str] | None], node: Node) -> tuple[str, ...]:
    """The tag string that led the search from its start (parent None) to ``node``."""
    tags: list[str] = []
    link = parents[node]
    while link is not None:
        node, tag = link
        tags.append(tag)
        link = parents[node]
    return tuple(reversed(tags))
