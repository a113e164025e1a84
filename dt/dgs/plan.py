"""Synchronization plans: trees of workers, each responsible for some input (Definition 4.5).

Seed 003 §4.4.2. An input event carries an *implementation tag*: its specification tag
and the input stream it arrives on (:class:`ImplTag`), so that one tag arriving on two
streams can be handled by two workers (``i(2)_a``, ``i(2)_b`` of Figure 18). A plan is a
binary tree of :class:`Worker`: a worker processes the events of its ``itags``; a
worker with children first joins their states, updates, then forks the state back to
them. Leaves never wait for anyone but their ancestors.

:func:`validate` is S-validity (Definition 4.6), checked when a runtime is given a
plan: (V1) each worker's state type accepts the tags of its whole subtree and its fork
and join go between its state type and its children's; (V2) workers of which neither
is an ancestor of the other handle disjoint and pairwise independent tags. Every
S-valid plan computes the sequential specification's outputs (Theorem 4.13), so a
plan is a performance choice only (:mod:`dt.dgs.optimizer`).

>>> from dt.dgs.examples import key_counter
>>> left = Worker("w2", "State", frozenset({ImplTag(("i", 1), "s1")}))
>>> right = Worker("w3", "State", frozenset({ImplTag(("i", 1), "s2")}))
>>> plan = Plan(Worker("w1", "State", frozenset({ImplTag(("r", 1), "s0")}), (left, right),
...                    "fork", "join"))
>>> validate(plan, key_counter())
>>> plan.leaves()
['w2', 'w3']
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from dataclasses import dataclass

from ..errors import PreconditionError
from .spec import Spec, Tag


class PlanError(PreconditionError):
    """A plan that is not S-valid for its specification (the message names the workers)."""


@dataclass(frozen=True, order=True)
class ImplTag:
    """A specification tag on one input stream (§4.4.1)."""

    tag: Tag
    stream: Hashable

    def __repr__(self) -> str:
        return f"{self.tag!r}@{self.stream}"


@dataclass(frozen=True)
class Worker:
    """A node of a plan: its state type, the input it handles, its children and the fork
    and join (names in the specification) between its state and theirs."""

    name: str
    state: str
    itags: frozenset
    children: tuple[Worker, ...] = ()
    fork: str | None = None
    join: str | None = None

    def __post_init__(self) -> None:
        if len(self.children) not in (0, 2):
            raise PlanError(f"worker {self.name!r} has {len(self.children)} children: "
                            "a plan is a binary tree (0 or 2)")
        if self.children and (self.fork is None or self.join is None):
            raise PlanError(f"worker {self.name!r} has children but no fork and join")

    def walk(self) -> Iterator[Worker]:
        """This worker and its descendants, parents first."""
        yield self
        for child in self.children:
            yield from child.walk()

    def subtree_itags(self) -> frozenset:
        """The implementation tags of this worker and its descendants."""
        return frozenset().union(*(w.itags for w in self.walk()))

    def describe(self, depth: int = 0) -> str:
        tags = ", ".join(map(repr, sorted(self.itags, key=repr))) or "-"
        line = f"{'  ' * depth}{self.name} [{self.state}] {{{tags}}}"
        if self.children:
            line += f" fork={self.fork} join={self.join}"
        return "\n".join([line, *(c.describe(depth + 1) for c in self.children)])


@dataclass(frozen=True)
class Plan:
    """A synchronization plan: a tree of workers (Definition 4.5)."""

    root: Worker

    def __post_init__(self) -> None:
        names = [w.name for w in self.root.walk()]
        if len(set(names)) != len(names):
            raise PlanError(f"workers named twice: {names}")
        seen: dict = {}
        for worker in self.root.walk():
            for itag in worker.itags:
                if itag in seen:
                    raise PlanError(f"{itag!r} is handled by both {seen[itag]!r} and "
                                    f"{worker.name!r}")
                seen[itag] = worker.name

    def workers(self) -> list[Worker]:
        return list(self.root.walk())

    def leaves(self) -> list[str]:
        return [w.name for w in self.root.walk() if not w.children]

    def itags(self) -> frozenset:
        return self.root.subtree_itags()

    def owner(self) -> dict:
        """Implementation tag → the name of the worker that handles it."""
        return {itag: w.name for w in self.root.walk() for itag in w.itags}

    def parents(self) -> dict[str, str | None]:
        found: dict[str, str | None] = {self.root.name: None}
        for worker in self.root.walk():
            for child in worker.children:
                found[child.name] = worker.name
        return found

    def __str__(self) -> str:
        return self.root.describe()


def validate(plan: Plan, spec: Spec) -> None:
    """Raise :class:`PlanError` unless ``plan`` is S-valid for ``spec`` (Definition 4.6)."""
    if plan.root.state != spec.initial:
        raise PlanError(f"the root {plan.root.name!r} has state {plan.root.state!r}, "
                        f"not State_0 ({spec.initial!r})")
    for worker in plan.root.walk():
        _check_worker(worker, spec)


def _check_worker(worker: Worker, spec: Spec) -> None:
    names = {s.name for s in spec.states}
    if worker.state not in names:
        raise PlanError(f"worker {worker.name!r}: unknown state type {worker.state!r}")
    accepts = spec.state(worker.state).accepts
    refused = [t for t in worker.subtree_itags() if not accepts(t.tag)]
    if refused:  # (V1): pred_i must hold for every tag the state can be updated with
        raise PlanError(f"worker {worker.name!r}: state {worker.state!r} does not accept "
                        f"{sorted(refused, key=repr)}")
    if not worker.children:
        return
    left, right = worker.children
    _check_primitives(worker, left.state, right.state, spec)
    for a in left.subtree_itags():  # (V2): siblings' subtrees disjoint and independent
        for b in right.subtree_itags():
            if spec.dependence(a.tag, b.tag):
                raise PlanError(f"workers under {worker.name!r} are not independent: "
                                f"{a!r} ({left.name!r}'s side) depends on {b!r} "
                                f"({right.name!r}'s side)")


def _check_primitives(worker: Worker, left: str, right: str, spec: Spec) -> None:
    forks = {f.name: f for f in spec.forks}
    joins = {j.name: j for j in spec.joins}
    fork, join = forks.get(worker.fork), joins.get(worker.join)
    if fork is None or join is None:
        missing = worker.fork if fork is None else worker.join
        raise PlanError(f"worker {worker.name!r}: the specification has no fork or join "
                        f"named {missing!r}")
    if fork.source != worker.state or fork.targets != (left, right):
        raise PlanError(f"worker {worker.name!r}: fork {fork.name!r} goes {fork.source} → "
                        f"{fork.targets}, the plan needs {worker.state} → {(left, right)}")
    if join.sources != (left, right) or join.target != worker.state:
        raise PlanError(f"worker {worker.name!r}: join {join.name!r} goes {join.sources} → "
                        f"{join.target}, the plan needs {(left, right)} → {worker.state}")


def sequential(spec: Spec, itags: frozenset, name: str = "w1") -> Plan:
    """The plan with one worker: the sequential program (always S-valid)."""
    return Plan(Worker(name, spec.initial, frozenset(itags)))
