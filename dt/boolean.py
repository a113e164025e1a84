"""Boolean connectives over any leaves, shared by the r-AFA (:mod:`dt.afa`) and the
streaming-algorithm IR (:mod:`qre.language.algorithm.ir`), which add their own leaves.

Frozen dataclasses compared by value: equal subformulas are one node in
:func:`node_count` (a DAG's size), while :func:`tree_size` counts every occurrence.

>>> f = Both(Neg(TRUE), Neg(TRUE))
>>> node_count([f]), tree_size(f)
(3, 5)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["FALSE", "TRUE", "Both", "Either", "Neg", "Truth", "children", "node_count",
           "tree_size"]


@dataclass(frozen=True)
class Truth:
    """``True`` or ``False``."""

    value: bool


TRUE, FALSE = Truth(True), Truth(False)


@dataclass(frozen=True)
class Neg:
    """Not ``arg``."""

    arg: Any


@dataclass(frozen=True)
class Both:
    """``left`` and ``right``."""

    left: Any
    right: Any


@dataclass(frozen=True)
class Either:
    """``left`` or ``right``."""

    left: Any
    right: Any


def children(f: object) -> tuple[Any, ...]:
    """The operands of a connective (none for a leaf)."""
    if isinstance(f, Neg):
        return (f.arg,)
    if isinstance(f, Both | Either):
        return (f.left, f.right)
    return ()


def node_count(formulas: Iterable[object]) -> int:
    """Distinct nodes of the formulas (equal subformulas counted once)."""
    seen: set[object] = set()
    stack = list(formulas)
    while stack:
        f = stack.pop()
        if f not in seen:
            seen.add(f)
            stack.extend(children(f))
    return len(seen)


def tree_size(f: object) -> int:
    """Nodes of the formula as a tree (every occurrence counted)."""
    return 1 + sum(tree_size(c) for c in children(f))
