"""Choosing a synchronization plan: the greedy optimizer of §4.4.3, and random plans.

Seed 003 §4.4.3. Every S-valid plan is correct, so choosing one is only about speed.
The seed's heuristic maximizes the events that leaves process (leaves never block):
take the graph whose vertices are the implementation tags and whose edges are their
dependences; remove the tag with the lowest rate until the graph falls apart into at
least two components; the removed tags go to this worker, the components to two
children (split so that their rates balance), and each child recurses. (The seed's
artifact gives each component a child and binarizes them as a chain; balanced halves
keep the tree shallow, which matters when ``workers`` bounds the leaves.) Then the tag
tree is matched with the specification's forks and joins (exhaustively, both child
orders), collapsing a subtree into one worker where no fork fits its state type.

``workers`` bounds the number of leaves — the workers that run at the same time:
a parent only runs while its children wait for it.

:func:`random_plan` draws any S-valid plan (random tags kept at each worker, random
splits of the independent rest); the tests run every runtime on it (Theorem 4.13 holds
for every S-valid plan, not only the optimizer's).

>>> from dt.dgs.examples import key_counter
>>> streams = [InputStream("E0", {("r", 2): 10}), InputStream("E1", {("r", 1): 15, ("i", 1): 100}),
...            InputStream("E2", {("i", 2): 200}), InputStream("E3", {("i", 2): 300})]
>>> print(optimize(key_counter(), streams, workers=4))   # Example 4.7: Figure 18's tree
w1 [State] {-} fork=fork join=join
  w2 [State] {('r', 2)@E0} fork=fork join=join
    w3 [State] {('i', 2)@E3}
    w4 [State] {('i', 2)@E2}
  w5 [State] {('i', 1)@E1, ('r', 1)@E1}
"""

from __future__ import annotations

import itertools
import logging
import random
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from .plan import ImplTag, Plan, Worker, validate
from .spec import Spec, Tag

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class InputStream:
    """An input stream: its name and the rate (events per second) of each tag on it."""

    name: Hashable
    rates: Mapping[Tag, float] = field(default_factory=dict)


@dataclass(frozen=True)
class _Node:
    """A node of the tag tree before state types are assigned."""

    itags: frozenset
    children: tuple[_Node, ...] = ()

    def all_itags(self) -> frozenset:
        return self.itags.union(*(c.all_itags() for c in self.children))


def optimize(spec: Spec, streams: Sequence[InputStream], workers: int) -> Plan:
    """The seed's greedy plan for ``streams`` with at most ``workers`` leaves (§4.4.3)."""
    if workers < 1:
        raise ValueError(f"workers must be at least 1, not {workers}")
    rates = {ImplTag(tag, s.name): float(rate) for s in streams for tag, rate in s.rates.items()}
    tree = _split(spec, frozenset(rates), rates, workers)
    plan = _typed_plan(spec, tree)
    if len(plan.workers()) == 1:
        log.info("no parallel plan: %s", _why_sequential(spec, tree, workers))
    return plan


def _split(spec: Spec, itags: frozenset, rates: dict, budget: int) -> _Node:
    """The seed's greedy removal of the lowest-rate tags until the graph splits."""
    if budget <= 1 or len(itags) <= 1:
        return _Node(itags)
    remaining = set(itags)
    removed: set = set()
    parts = components(spec, remaining)
    while len(parts) < 2:
        if not remaining:
            return _Node(itags)
        lowest = min(remaining, key=lambda t: (rates[t], repr(t)))
        remaining.discard(lowest)
        removed.add(lowest)
        parts = components(spec, remaining)
    left, right = _balance(parts, rates)
    total = sum(rates[t] for t in remaining) or 1.0
    share = sum(rates[t] for t in left) / total
    left_budget = min(max(round(budget * share), 1), budget - 1)
    return _Node(frozenset(removed), (_split(spec, left, rates, left_budget),
                                      _split(spec, right, rates, budget - left_budget)))


def components(spec: Spec, itags: Iterable[ImplTag]) -> list[frozenset]:
    """The connected components of the dependence graph on ``itags``."""
    pending = sorted(itags, key=repr)
    found: list[frozenset] = []
    while pending:
        seed = pending.pop(0)
        part, frontier = {seed}, [seed]
        while frontier:
            a = frontier.pop()
            linked = [b for b in pending if spec.dependence(a.tag, b.tag)]
            for b in linked:
                pending.remove(b)
            part.update(linked)
            frontier += linked
        found.append(frozenset(part))
    return found


def _balance(parts: list[frozenset], rates: dict) -> tuple[frozenset, frozenset]:
    """Two groups of components with rates as equal as largest-first assignment makes them."""
    def weight(part: frozenset) -> float:
        return sum(rates[t] for t in part)
    groups: list[set] = [set(), set()]
    totals = [0.0, 0.0]
    for part in sorted(parts, key=lambda p: (-weight(p), repr(sorted(p, key=repr)))):
        side = 0 if totals[0] <= totals[1] else 1
        groups[side] |= part
        totals[side] += weight(part)
    return frozenset(groups[0]), frozenset(groups[1])


def _typed_plan(spec: Spec, tree: _Node) -> Plan:
    names = (f"w{n}" for n in itertools.count(1))
    worker = _typed(spec, tree, spec.initial)
    plan = Plan(_named(worker, names))
    validate(plan, spec)
    return plan


def _typed(spec: Spec, node: _Node, state: str) -> Worker:
    """Match the tag tree with forks and joins; collapse a subtree none fits."""
    if node.children:
        for fork in spec.forks:
            if fork.source != state:
                continue
            for join in spec.joins:
                if join.sources != fork.targets or join.target != state:
                    continue
                for left, right in (node.children, node.children[::-1]):
                    children = _fits(spec, (left, right), fork.targets)
                    if children is not None:
                        return Worker("", state, node.itags, children, fork.name, join.name)
    return Worker("", state, node.all_itags())


def _fits(spec: Spec, children: tuple[_Node, _Node], states: tuple[str, str]
          ) -> tuple[Worker, Worker] | None:
    typed = []
    for child, state in zip(children, states, strict=True):
        accepts = spec.state(state).accepts
        if not all(accepts(t.tag) for t in child.all_itags()):
            return None
        typed.append(_typed(spec, child, state))
    return typed[0], typed[1]


def _named(worker: Worker, names: Iterator) -> Worker:
    name = next(names)
    children = tuple(_named(c, names) for c in worker.children)
    return Worker(name, worker.state, worker.itags, children, worker.fork, worker.join)


def _why_sequential(spec: Spec, tree: _Node, workers: int) -> str:
    if workers == 1:
        return "one worker asked for"
    if not tree.children:
        return "the implementation tags' dependence graph never splits"
    return f"no fork from {spec.initial!r} whose states accept the two sides"


def random_plan(spec: Spec, itags: Iterable[ImplTag], rng: random.Random) -> Plan:
    """A random S-valid plan over ``itags``: random tags kept at each worker, the rest
    split into two groups of its dependence components while it has two or more."""
    return _typed_plan(spec, _random_tree(spec, frozenset(itags), rng))


def _random_tree(spec: Spec, itags: frozenset, rng: random.Random) -> _Node:
    kept = frozenset(t for t in itags if rng.random() < 0.25)
    parts = components(spec, itags - kept)
    if len(parts) < 2 or rng.random() < 0.2:
        return _Node(itags)
    rng.shuffle(parts)
    cut = rng.randint(1, len(parts) - 1)
    left = frozenset().union(*parts[:cut])
    right = frozenset().union(*parts[cut:])
    return _Node(kept, (_random_tree(spec, left, rng), _random_tree(spec, right, rng)))
