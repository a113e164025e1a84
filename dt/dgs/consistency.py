"""Consistency of a DGS specification (C1–C3, Definition 4.3), searched for counterexamples.

A consistent specification is deterministic up to output reordering however it is
parallelized (Theorem 4.4), so every synchronization plan computes what the sequential
program computes. Consistency is a property of the user's functions, so it is tested,
not proved: :func:`check_consistency` draws random states, predicates and events from
a finite sample of tags, checks

* (C1) ``join(update(s1, e), s2) = update(join(s1, s2), e)`` with equal outputs,
  for ``e`` on either side of the join;
* (C2) ``join(fork(s, p1, p2)) = s``;
* (C3) ``update(update(s, e1), e2) = update(update(s, e2), e1)`` for independent
  ``e1``, ``e2``, with the same outputs (as multisets);

and shrinks the first failure to a minimal one (fewest events, fewest tags in the
fork's predicates) that it reports in words. It also checks that the dependence is
symmetric on the sample.

The equations are checked on the states a wire diagram can hold (Definition 4.2):
``s`` reached from ``init`` by updates and forks, forked states updated only with
events their predicate accepts. That is what the proof of Theorem 4.4 uses; read
for *all* states, the seed's own Figure 15 fails C1 (a right-hand state holding a
count for key k while the left one reads and resets k), although no plan can reach
such a pair.

Cost: each example runs the user's functions on a handful of events; the default
300 examples take well under a second for the seed's applications.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from .spec import Event, Fork, Join, Spec, Tag, TagSet

Payload = Callable[[Tag, random.Random], Any]
SYMMETRY = "the dependence's symmetry"


@dataclass(frozen=True)
class Descend:
    """A step of a wire's history: fork the state and keep one side."""

    fork: str
    left: frozenset
    right: frozenset
    side: int


@dataclass(frozen=True)
class Wire:
    """How a state is reached: updates and descents from ``init``, as a wire diagram does."""

    steps: tuple  # of Event | Descend


@dataclass(frozen=True)
class Example:
    """One instance of a condition: the state's history and what is applied to it."""

    condition: str
    wire: Wire
    fork: str | None = None
    join: str | None = None
    left: frozenset = frozenset()
    right: frozenset = frozenset()
    left_events: tuple = ()
    right_events: tuple = ()
    events: tuple = ()
    side: int = 0


@dataclass(frozen=True)
class Counterexample:
    """A failed condition with a minimal example and the two sides that differ."""

    condition: str
    example: Example
    expected: str
    got: str

    def __str__(self) -> str:
        if self.condition == SYMMETRY:
            return f"{self.condition} fails:\n{self.expected}\n{self.got}"
        return f"{self.condition} fails:\n  {describe(self.example)}\n{self.expected}\n{self.got}"


class InconsistentSpec(ValueError):
    """A specification whose forks, joins or updates break C1–C3 (the message says how)."""


def check_consistency(spec: Spec, tags: Sequence[Tag], *, payload: Payload | None = None,
                      examples: int = 300, seed: int = 0, max_events: int = 5,
                      conditions: Sequence[str] = ("C1", "C2", "C3")
                      ) -> Counterexample | None:
    """Search ``examples`` random instances of ``conditions`` over the sample ``tags``;
    the first failure, shrunk, or None. ``payload(tag, rng)`` draws an event's payload."""
    unknown = set(conditions) - {"C1", "C2", "C3"}
    if unknown or not conditions:
        raise ValueError(f"conditions are some of C1, C2, C3, not {sorted(unknown) or 'none'}")
    tags = list(dict.fromkeys(tags))
    asymmetric = _asymmetry(spec, tags)
    if asymmetric is not None:
        return asymmetric
    search = _Search(spec, tags, payload or (lambda tag, rng: None), random.Random(seed),
                     max_events)
    instances = [c for c in search.conditions() if c[0] in conditions]
    for n in range(examples if instances else 0):
        example = search.draw(instances[n % len(instances)])
        if example is not None and search.fails(example) is not None:
            return search.shrink(example)
    return None


def assert_consistent(spec: Spec, tags: Sequence[Tag], **options: Any) -> None:
    """:func:`check_consistency`, raising :class:`InconsistentSpec` with the counterexample."""
    found = check_consistency(spec, tags, **options)
    if found is not None:
        raise InconsistentSpec(str(found))


def describe(example: Example) -> str:
    """An example in words: the state's history, then what the condition applies."""
    parts = [f"s = init() then {_history(example.wire)}"]
    if example.fork is not None:
        parts.append(f"fork {example.fork!r} with left {_tags(example.left)}, "
                     f"right {_tags(example.right)}")
    if example.condition == "C1":
        parts.append(f"left updated with {_events(example.left_events)}, right with "
                     f"{_events(example.right_events)}; e = {_event(example.events[0])} on the "
                     f"{'left' if example.side == 0 else 'right'}; join {example.join!r}")
    elif example.condition == "C2":
        parts.append(f"join {example.join!r}")
    else:
        parts.append(f"e1 = {_event(example.events[0])}, e2 = {_event(example.events[1])}")
    return "\n  ".join(parts)


def _history(wire: Wire) -> str:
    words = []
    for step in wire.steps:
        if isinstance(step, Descend):
            words.append(f"fork {step.fork!r} (left {_tags(step.left)}, right {_tags(step.right)})"
                         f" keeping the {'left' if step.side == 0 else 'right'}")
        else:
            words.append(_event(step))
    return ", ".join(words) if words else "nothing"


def _tags(tags: frozenset) -> str:
    return repr(TagSet(tags))


def _event(event: Event) -> str:
    return repr(event.tag) if event.payload is None else f"{event.tag!r}:{event.payload!r}"


def _events(events: tuple) -> str:
    return "[" + ", ".join(map(_event, events)) + "]"


def _asymmetry(spec: Spec, tags: list) -> Counterexample | None:
    for a in tags:
        for b in tags:
            if bool(spec.dependence(a, b)) != bool(spec.dependence(b, a)):
                example = Example(SYMMETRY, Wire(()), events=(Event(a), Event(b)))
                return Counterexample(SYMMETRY, example,
                                      f"  dependence({a!r}, {b!r}) = {spec.dependence(a, b)}",
                                      f"  dependence({b!r}, {a!r}) = {spec.dependence(b, a)}")
    return None


class _Search:
    """Random examples over the sample tags, their evaluation and their shrinking."""

    def __init__(self, spec: Spec, tags: list, payload: Payload, rng: random.Random,
                 max_events: int) -> None:
        self.spec = spec
        self.tags = tags
        self.payload = payload
        self.rng = rng
        self.max_events = max_events
        self.routes = _fork_routes(spec)

    # -- drawing ---------------------------------------------------------------

    def conditions(self) -> list[tuple]:
        """Every (condition, fork, join) the specification has an instance of."""
        found: list[tuple] = []
        for fork in self.spec.forks:
            if fork.source not in self.routes:
                continue
            for join in self._joins_for(fork):
                found += [("C1", fork, join), ("C2", fork, join)]
        found += [("C3", None, None)]
        return found

    def _joins_for(self, fork: Fork) -> list[Join]:
        return [j for j in self.spec.joins
                if j.sources == fork.targets and j.target == fork.source]

    def draw(self, condition: tuple) -> Example | None:
        kind, fork, join = condition
        if kind == "C3":
            wire, allowed = self._wire(self.rng.choice(list(self.routes)))
            accepts = self.spec.state(self._type_of(wire)).accepts
            pool = [t for t in allowed if accepts(t)]
            pairs = [(a, b) for a in pool for b in pool if self.spec.independent(a, b)]
            if not pairs:
                return None
            a, b = self.rng.choice(pairs)
            return Example("C3", wire, events=(self._event(a), self._event(b)))
        wire, allowed = self._wire(fork.source)
        left, right = self._split(allowed, fork)
        example = Example(kind, wire, fork=fork.name, join=join.name, left=left, right=right)
        if kind == "C2":
            return example
        side = self.rng.randrange(2)
        chosen = left if side == 0 else right
        if not chosen:
            return None
        return replace(example, left_events=self._events(left), right_events=self._events(right),
                       events=(self._event(self.rng.choice(sorted(chosen, key=repr))),), side=side)

    def _wire(self, target: str) -> tuple[Wire, frozenset]:
        """A random history ending in a state of type ``target``, and its wire's tags."""
        steps: list = []
        allowed = frozenset(self.tags)
        for fork_name, side in self.routes[target]:
            steps += self._events(allowed, self._type_before(steps))
            fork = self.spec.fork(fork_name)
            left, right = self._split(allowed, fork)
            steps.append(Descend(fork_name, left, right, side))
            allowed = left if side == 0 else right
        steps += self._events(allowed, target)
        return Wire(tuple(steps)), allowed

    def _type_before(self, steps: list) -> str:
        return self._type_of(Wire(tuple(steps)))

    def _type_of(self, wire: Wire) -> str:
        kind = self.spec.initial
        for step in wire.steps:
            if isinstance(step, Descend):
                kind = self.spec.fork(step.fork).targets[step.side]
        return kind

    def _split(self, allowed: frozenset, fork: Fork) -> tuple[frozenset, frozenset]:
        """Two random independent subsets of ``allowed`` that the fork's targets accept."""
        accept = [self.spec.state(t).accepts for t in fork.targets]
        sides: tuple[set, set] = (set(), set())
        for tag in self.rng.sample(sorted(allowed, key=repr), len(allowed)):
            for side in self.rng.sample((0, 1), 2):
                other = sides[1 - side]
                if (accept[side](tag) and self.rng.random() < 0.6
                        and all(self.spec.independent(tag, o) for o in other)):
                    sides[side].add(tag)
        return frozenset(sides[0]), frozenset(sides[1])

    def _events(self, allowed: frozenset, kind: str | None = None) -> list[Event]:
        accepts = self.spec.state(kind).accepts if kind else (lambda tag: True)
        pool = sorted((t for t in allowed if accepts(t)), key=repr)
        if not pool:
            return []
        return [self._event(self.rng.choice(pool))
                for _ in range(self.rng.randint(0, self.max_events))]

    def _event(self, tag: Tag) -> Event:
        return Event(tag, self.payload(tag, self.rng))

    # -- evaluation ------------------------------------------------------------

    def fails(self, example: Example) -> Counterexample | None:
        """The counterexample this example is, or None if the condition holds on it."""
        try:
            return self._evaluate(example)
        except Exception as error:  # a user's function failing is a finding
            return Counterexample(example.condition, example,
                                  "  the specification's functions raised",
                                  f"  {type(error).__name__}: {error}")

    def _evaluate(self, example: Example) -> Counterexample | None:
        spec = self.spec
        state, kind = self._reach(example.wire)
        if example.condition == "C3":
            e1, e2 = example.events
            update = spec.state(kind).update
            s12, o1 = update(spec.copy(state), e1)
            s12, o2 = update(s12, e2)
            s21, p2 = update(spec.copy(state), e2)
            s21, p1 = update(s21, e1)
            return self._verdict(example, "update(update(s, e1), e2)", s12, [*o1, *o2],
                                 "update(update(s, e2), e1)", s21, [*p2, *p1], multiset=True)
        fork, join = spec.fork(example.fork), spec.join(example.join)
        one, two = fork.function(state, TagSet(example.left), TagSet(example.right))
        if example.condition == "C2":
            return self._verdict(example, "s", self._reach(example.wire)[0], [],
                                 "join(fork(s, p1, p2))", join.function(one, two), [])
        one = self._apply(one, fork.targets[0], example.left_events)
        two = self._apply(two, fork.targets[1], example.right_events)
        (event,) = example.events
        side_type = fork.targets[example.side]
        if example.side == 0:
            moved, out = spec.state(side_type).update(spec.copy(one), event)
            early = join.function(moved, spec.copy(two))
        else:
            moved, out = spec.state(side_type).update(spec.copy(two), event)
            early = join.function(spec.copy(one), moved)
        late, late_out = spec.state(join.target).update(join.function(one, two), event)
        name = "join(update(s1, e), s2)" if example.side == 0 else "join(s1, update(s2, e))"
        return self._verdict(example, name, early, list(out),
                             "update(join(s1, s2), e)", late, list(late_out))

    def _reach(self, wire: Wire) -> tuple[Any, str]:
        state, kind = self.spec.init(), self.spec.initial
        for step in wire.steps:
            if isinstance(step, Descend):
                fork = self.spec.fork(step.fork)
                pair = fork.function(state, TagSet(step.left), TagSet(step.right))
                state, kind = pair[step.side], fork.targets[step.side]
            else:
                state, _ = self.spec.state(kind).update(state, step)
        return state, kind

    def _apply(self, state: Any, kind: str, events: tuple) -> Any:
        update = self.spec.state(kind).update
        for event in events:
            state, _ = update(state, event)
        return state

    def _verdict(self, example: Example, left_name: str, left: Any, left_out: list,
                 right_name: str, right: Any, right_out: list, multiset: bool = False
                 ) -> Counterexample | None:
        same_outputs = (_same_multiset(left_out, right_out) if multiset
                        else left_out == right_out)
        if self.spec.equal(left, right) and same_outputs:
            return None
        return Counterexample(example.condition, example,
                              f"  {left_name} = {left!r}, outputs {left_out!r}",
                              f"  {right_name} = {right!r}, outputs {right_out!r}")

    # -- shrinking -------------------------------------------------------------

    def shrink(self, example: Example) -> Counterexample:
        """Greedily remove events and predicate tags while the condition still fails."""
        found = self.fails(example)
        progress = True
        while progress:
            progress = False
            for smaller in _smaller(example):
                if not _valid(self.spec, smaller):
                    continue
                failure = self.fails(smaller)
                if failure is not None:
                    example, found, progress = smaller, failure, True
                    break
        return found


def _smaller(example: Example):
    """Examples with one event or one predicate tag fewer."""
    steps = example.wire.steps
    for i, step in enumerate(steps):
        if not isinstance(step, Descend):
            yield replace(example, wire=Wire(steps[:i] + steps[i + 1:]))
    for field_name in ("left_events", "right_events"):
        events = getattr(example, field_name)
        for i in range(len(events)):
            yield replace(example, **{field_name: events[:i] + events[i + 1:]})
    for field_name in ("left", "right"):
        for tag in sorted(getattr(example, field_name), key=repr):
            yield replace(example, **{field_name: getattr(example, field_name) - {tag}})
    for i, step in enumerate(steps):
        if isinstance(step, Descend):
            for side in ("left", "right"):
                for tag in sorted(getattr(step, side), key=repr):
                    smaller = replace(step, **{side: getattr(step, side) - {tag}})
                    yield replace(example, wire=Wire((*steps[:i], smaller, *steps[i + 1:])))


def _valid(spec: Spec, example: Example) -> bool:
    """Every event stays within the predicate of the wire it is applied on."""
    allowed: frozenset | None = None
    for step in example.wire.steps:
        if isinstance(step, Descend):
            if allowed is not None and not (step.left | step.right) <= allowed:
                return False
            allowed = step.left if step.side == 0 else step.right
        elif allowed is not None and step.tag not in allowed:
            return False
    if example.condition == "C1":
        if allowed is not None and not (example.left | example.right) <= allowed:
            return False
        sides = (example.left, example.right)
        if any(e.tag not in example.left for e in example.left_events):
            return False
        if any(e.tag not in example.right for e in example.right_events):
            return False
        return example.events[0].tag in sides[example.side]
    return True


def _fork_routes(spec: Spec) -> dict[str, list[tuple[str, int]]]:
    """For each reachable state type, the shortest chain of (fork, side) from ``State_0``."""
    routes: dict[str, list[tuple[str, int]]] = {spec.initial: []}
    queue = deque([spec.initial])
    while queue:
        kind = queue.popleft()
        for fork in spec.forks:
            if fork.source != kind:
                continue
            for side, target in enumerate(fork.targets):
                if target not in routes:
                    routes[target] = routes[kind] + [(fork.name, side)]
                    queue.append(target)
    return routes


def _same_multiset(a: list, b: list) -> bool:
    rest = list(b)
    for item in a:
        for i, other in enumerate(rest):
            if other == item:
                del rest[i]
                break
        else:
            return False
    return not rest
