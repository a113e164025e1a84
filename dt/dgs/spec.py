"""DGS specifications: a sequential program, a dependence relation on tags, forks and joins.

Seed 003 §4.3, Definition 4.1. A specification says what a stream program computes
(``init`` and one ``update`` per state type, run over the events in order) and how it
may be parallelized: two events whose tags are not ``dependent`` may be processed by
different workers, whose states are split by a :class:`Fork` and merged back by a
:class:`Join`. Whether the parallel runs agree with the sequential one is a property of
the forks and joins (consistency, Definition 4.3), tested by
:func:`dt.dgs.consistency.check_consistency`; plans and runtimes take it for granted.

Tags are any hashable values; a parameterized tag such as ``i(k)`` of Figure 15 is a
tuple ``("i", k)``. The dependence is a function of two tags, symmetric. Predicates on
tags (a state type's ``accepts``, the two sets a fork is given) are functions of a tag;
the runtime passes a fork the :class:`TagSet` of the tags each forked state will see.

State is a user value. ``update(state, event)`` returns ``(new_state, outputs)`` and may
modify ``state`` in place (the seed's Figure 15 does): callers never use a state again
after handing it to ``update``, ``fork`` or ``join``, and the consistency checker copies
states (with ``copy``) before it does.

>>> def update(total, event):
...     return total + event.payload, ([total + event.payload] if event.tag == "read" else [])
>>> adder = Spec(dependence=lambda a, b: "read" in (a, b), init=lambda: 0,
...              states=(StateType("Sum", update),))
>>> adder.run([Event("add", 2), Event("add", 3), Event("read", 0)])
[5]
"""

from __future__ import annotations

import copy as copying
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ..errors import PreconditionError

Tag = Hashable
Update = Callable[[Any, "Event"], "tuple[Any, Sequence[Any]]"]


class Event(NamedTuple):
    """An input event of a specification: its tag, its payload and (in a runtime) its time.

    A named tuple: runtimes make one per event, and a tuple is made several times
    faster than a frozen dataclass."""

    tag: Tag
    payload: Any = None
    time: Any = None


def everything(tag: Tag) -> bool:
    """The predicate ``true`` (``pred_0`` of Definition 4.1)."""
    return True


@dataclass(frozen=True)
class TagSet:
    """A finite set of tags used as a predicate: what a forked state will be given."""

    tags: frozenset

    def __call__(self, tag: Tag) -> bool:
        return tag in self.tags

    def __repr__(self) -> str:
        return "{" + ", ".join(sorted(map(repr, self.tags))) + "}"


@dataclass(frozen=True)
class StateType:
    """A state type ``State_i`` with its ``update_i`` and the tags it may process (``pred_i``).

    ``update_run(state, tag, entries) -> (state, [(key, output), ...])``, if given, does
    what ``update`` does on each of ``entries`` (``(key, payload)`` pairs, times in
    ``key[0]``, all of one tag) in one call — a leaf's runs of events, for a state a
    compiled kernel can advance many events at once; ``update`` stays the definition."""

    name: str
    update: Update
    accepts: Callable[[Tag], bool] = everything
    update_run: Callable[[Any, Tag, list], tuple[Any, list]] | None = None


@dataclass(frozen=True)
class Fork:
    """``fork: (State_source, Pred, Pred) -> (State_left, State_right)`` (Definition 4.1 (7)).

    ``function(state, left_tags, right_tags)`` splits a state in two; each forked state
    is then updated only with events whose tags its predicate accepts, and the two
    predicates are independent (no tag of one depends on a tag of the other).
    """

    name: str
    source: str
    targets: tuple[str, str]
    function: Callable[[Any, Callable[[Tag], bool], Callable[[Tag], bool]], tuple[Any, Any]]


@dataclass(frozen=True)
class Join:
    """``join: (State_left, State_right) -> State_target`` (Definition 4.1 (7))."""

    name: str
    sources: tuple[str, str]
    target: str
    function: Callable[[Any, Any], Any]


@dataclass(frozen=True)
class Spec:
    """A DGS specification (Definition 4.1).

    ``states[0]`` is ``State_0``, the type of ``init()``; it accepts every tag.
    ``dependence(a, b)`` says whether events tagged ``a`` and ``b`` must be processed in
    their order; it must be symmetric (the checker tests it on sample tags).
    ``equal`` compares states (the checker's equations); ``copy`` duplicates one.
    """

    dependence: Callable[[Tag, Tag], bool]
    init: Callable[[], Any]
    states: tuple[StateType, ...]
    forks: tuple[Fork, ...] = ()
    joins: tuple[Join, ...] = ()
    equal: Callable[[Any, Any], bool] = field(default=lambda a, b: a == b)
    copy: Callable[[Any], Any] = copying.deepcopy

    def __post_init__(self) -> None:
        names = [s.name for s in self.states]
        if not names:
            raise PreconditionError("a specification needs at least one state type (State_0)")
        if len(set(names)) != len(names):
            raise PreconditionError(f"state types named twice: {names}")
        if self.states[0].accepts is not everything:
            raise PreconditionError(f"State_0 ({names[0]!r}) must accept every tag (pred_0 = true)")
        known = set(names)
        for fork in self.forks:
            _check_types(f"fork {fork.name!r}", (fork.source, *fork.targets), known)
        for join in self.joins:
            _check_types(f"join {join.name!r}", (*join.sources, join.target), known)
        for kind, prims in (("fork", self.forks), ("join", self.joins)):
            seen = [p.name for p in prims]
            if len(set(seen)) != len(seen):
                raise PreconditionError(f"{kind}s named twice: {seen}")

    def state(self, name: str) -> StateType:
        """The state type called ``name``."""
        for s in self.states:
            if s.name == name:
                return s
        raise KeyError(name)

    @property
    def initial(self) -> str:
        """The name of ``State_0``."""
        return self.states[0].name

    def fork(self, name: str) -> Fork:
        return next(f for f in self.forks if f.name == name)

    def join(self, name: str) -> Join:
        return next(j for j in self.joins if j.name == name)

    def independent(self, a: Tag, b: Tag) -> bool:
        """``indep`` of Definition 4.2: not dependent."""
        return not self.dependence(a, b)

    def run(self, events: Iterable[Event]) -> list[Any]:
        """The sequential specification ``spec``: every event in order through ``update_0``."""
        state = self.init()
        update = self.states[0].update
        outputs: list[Any] = []
        for event in events:
            state, out = update(state, event)
            outputs.extend(out)
        return outputs


def _check_types(what: str, names: Iterable[str], known: set[str]) -> None:
    unknown = [n for n in names if n not in known]
    if unknown:
        raise PreconditionError(f"{what} names unknown state types {unknown}")


def one_state(name: str, update: Update, fork: Callable, join: Callable[[Any, Any], Any], *,
              dependence: Callable[[Tag, Tag], bool], init: Callable[[], Any],
              update_run: Callable | None = None, **options: Any) -> Spec:
    """A specification of one state type ``name`` (with ``update_run`` if given) and one
    fork and one join, named "fork" and "join"; ``options`` as :class:`Spec`'s."""
    return Spec(dependence=dependence, init=init,
                states=(StateType(name, update, update_run=update_run),),
                forks=(Fork("fork", name, (name, name), fork),),
                joins=(Join("join", (name, name), name, join),), **options)
