"""Projection to the unit signature and a status-only evaluator (seed 003, §5.1, Theorem 5.2).

Proof of Theorem 5.2: collapse every data value to one value ⋆. A DT ``A``
becomes a DT ``P = project(A)`` over the unit signature: same states, labels,
sources, initial and final states; every term is replaced by the constant ⋆
(here ``Const(0.0)`` stands for ⋆). The sources are kept: they carry the
strictness (a transition is ⊥ if a source is ⊥, else ⊤ if a source is ⊤), and
transitions that become identical are all kept, because ``⋆ ⊔ ⋆ = ⊤`` — the
multiplicity of defined contributions is what ⊔ counts. The projection is a
homomorphism: the status of every state after every prefix is the same in A
and in P, whatever the data of the word and of the initial vector (only their
statuses matter). Hence (i) equivalent inputs with equal tag strings give
equivalent outputs, and (ii) P has at most 3^|Q| configurations.

The status-only evaluator runs P directly on statuses, without terms or data:
a *unit configuration* (:data:`UnitConfig`) is a tuple of ints, the
:class:`~dt.values.Status` codes (0 ⊥, 1 ⋆, 2 ⊤) of the states in the order of
``dt.states``; it is hashable, so the analyses of §5.2.2 (equivalence and
restartability checking, Theorem 5.6) can search the finite configuration
space breadth-first. It accepts A or P alike (terms are ignored).

Cost: :class:`UnitEvaluator` compiles each label's transitions once (O(size));
a step is the worklist least fixpoint of Figure 25 on statuses: each
transition is evaluated once plus once per rise of a primed source (a state
rises at most twice), and unions are kept as counters, so a step costs
O(Σ_τ |X_τ|·(1 + 2·|X_τ|)) — O(size) when source sets are small.
"""

from __future__ import annotations

import weakref
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .model import DT, INIT, Transition
from .terms import Const
from .values import Status, XValue, status_of

__all__ = [
    "UNIT",
    "UnitConfig",
    "UnitEvaluator",
    "project",
    "status_vector",
    "unit_evaluate",
    "unit_evaluator",
    "unit_initial",
    "unit_outputs",
    "unit_run",
    "unit_step",
]

UNIT = Const(0.0)
"""The term that stands for the unit value ⋆ in a projected DT."""

UnitConfig = tuple[int, ...]
"""Statuses (0 ⊥, 1 ⋆, 2 ⊤; the :class:`~dt.values.Status` codes), aligned with ``dt.states``."""

_BOT, _STAR, _TOP = int(Status.UNDEFINED), int(Status.DEFINED), int(Status.CONFLICT)


def project(dt: DT) -> DT:
    """The projection P of ``dt`` to the unit signature (proof of Theorem 5.2).

    Same states, labels, sources, initial and final states; every term becomes
    :data:`UNIT`. Duplicate transitions are kept (they count in ⊔). Facts are
    preserved: restartability and output-synchronization depend only on
    statuses (§5.2.2, proof of Theorem 5.6).
    """
    transitions = tuple(Transition(t.on, t.sources, t.target, UNIT) for t in dt.transitions)
    return DT(dt.alphabet, dt.states, dt.initial, dt.final, transitions, dt.facts)


def status_vector(values: Iterable[XValue]) -> tuple[int, ...]:
    """The status codes of extended values (e.g. a configuration of :mod:`dt.reference`)."""
    return tuple(int(status_of(v)) for v in values)


@dataclass(frozen=True)
class _Table:
    """Δ_σ compiled for statuses: per transition its sources and target as positions."""

    sources: tuple[tuple[tuple[bool, int], ...], ...]  # (primed, state position)
    target: tuple[int, ...]
    readers: tuple[tuple[int, ...], ...]  # per state: transitions reading it primed


def _compile(dt: DT, label: str) -> _Table:
    index = dt.on(label)
    pos = dt.state_index
    sources = tuple(
        tuple(sorted((v.primed, pos[v.name]) for v in t.sources)) for t in index.transitions
    )
    readers = tuple(index.readers.get(q, ()) for q in dt.states)
    target = tuple(pos[t.target] for t in index.transitions)
    return _Table(sources, target, readers)


class UnitEvaluator:
    """Status-only evaluation of one DT (its projection P); see the module docstring."""

    def __init__(self, dt: DT) -> None:
        # No reference to dt is kept, so that the cache of unit_evaluator
        # does not keep DTs alive.
        self.alphabet = dt.alphabet
        self.states = dt.states
        self._n = len(dt.states)
        pos = dt.state_index
        self._initial = tuple(pos[q] for q in dt.initial)
        self._final = tuple(pos[q] for q in dt.final)
        self._tables = {label: _compile(dt, label) for label in (INIT, *dt.alphabet)}

    def _seed(self, x: Sequence[int] | None) -> list[int]:
        seed = [_BOT] * self._n
        if x is None:
            return seed
        if len(x) != len(self._initial):
            raise ValueError(f"initial vector has {len(x)} statuses; the DT has "
                             f"{len(self._initial)} initial states")
        for p, s in zip(self._initial, x, strict=True):
            code = int(s)
            if code not in (_BOT, _STAR, _TOP):
                raise ValueError(f"invalid status code {code}: expected 0, 1 or 2")
            seed[p] = code
        return seed

    def initial(self, x_status: Sequence[int]) -> UnitConfig:
        """Δ_i on statuses: the unit configuration after initialization."""
        return self._fixpoint(self._tables[INIT], None, self._seed(x_status))

    def step(self, config: UnitConfig, tag: str,
             restart: Sequence[int] | None = None) -> UnitConfig:
        """Δ_σ on statuses, or the update-with-restart Δ_{σ,x} when ``restart`` is given."""
        table = self._tables.get(tag)
        if table is None or tag == INIT:
            raise ValueError(f"unknown tag {tag!r}; the alphabet is "
                             f"{', '.join(self.alphabet)}")
        if len(config) != self._n:
            raise ValueError(f"configuration has {len(config)} statuses; "
                             f"the DT has {self._n} states")
        return self._fixpoint(table, config, self._seed(restart))

    def outputs(self, config: UnitConfig) -> tuple[int, ...]:
        """The statuses of the final states, in the order of ``dt.final``."""
        return tuple(config[p] for p in self._final)

    def run(self, x_status: Sequence[int], tags: Iterable[str]) -> list[UnitConfig]:
        """The unit configurations c0, …, cn on a tag string."""
        config = self.initial(x_status)
        out = [config]
        for tag in tags:
            config = self.step(config, tag)
            out.append(config)
        return out

    def evaluate(self, x_status: Sequence[int], tags: Iterable[str]) -> list[tuple[int, ...]]:
        """Output statuses after every prefix of the tag string, the empty one included."""
        return [self.outputs(c) for c in self.run(x_status, tags)]

    def _fixpoint(self, table: _Table, old: UnitConfig | None, seed: list[int]) -> UnitConfig:
        """The least solution of Equation (1) on statuses, by a worklist (Figure 25)."""
        new = list(seed)
        # The union at each state is kept as counters: non-⊥ contributions and
        # whether one is ⊤ (values only rise, so counters only grow).
        nonbot = [1 if s != _BOT else 0 for s in seed]
        conflict = [s == _TOP for s in seed]
        tval = [_BOT] * len(table.target)
        work = deque(range(len(table.target)))
        queued = [True] * len(table.target)
        while work:
            k = work.popleft()
            queued[k] = False
            value = _STAR
            for primed, p in table.sources[k]:
                s = new[p] if primed else old[p]  # type: ignore[index]
                if s == _BOT:
                    value = _BOT
                    break
                if s == _TOP:
                    value = _TOP
            before = tval[k]
            if value == before:
                continue
            tval[k] = value
            q = table.target[k]
            if before == _BOT:
                nonbot[q] += 1
            if value == _TOP:
                conflict[q] = True
            status = _TOP if conflict[q] or nonbot[q] >= 2 else _STAR if nonbot[q] else _BOT
            if status != new[q]:
                new[q] = status
                for r in table.readers[q]:
                    if not queued[r]:
                        queued[r] = True
                        work.append(r)
        return tuple(new)


_CACHE: dict[int, tuple[weakref.ref[DT], UnitEvaluator]] = {}


def unit_evaluator(dt: DT) -> UnitEvaluator:
    """The (cached) :class:`UnitEvaluator` of ``dt``; hold it in loops to skip the lookup."""
    key = id(dt)
    hit = _CACHE.get(key)
    if hit is not None and hit[0]() is dt:
        return hit[1]
    ev = UnitEvaluator(dt)
    # The callback drops the entry when dt dies (binding the dict, not the
    # global, keeps it safe at interpreter shutdown).
    _CACHE[key] = (weakref.ref(dt, lambda _ref, key=key, cache=_CACHE: cache.pop(key, None)), ev)
    return ev


def unit_initial(dt: DT, x_status: Sequence[int]) -> UnitConfig:
    """Δ_i of the projection on an initial status vector (0 ⊥, 1 ⋆, 2 ⊤)."""
    return unit_evaluator(dt).initial(x_status)


def unit_step(dt: DT, config: UnitConfig, tag: str,
              restart: Sequence[int] | None = None) -> UnitConfig:
    """Δ_σ (or Δ_{σ,x} with ``restart``) of the projection on a unit configuration."""
    return unit_evaluator(dt).step(config, tag, restart)


def unit_outputs(dt: DT, config: UnitConfig) -> tuple[int, ...]:
    """The output statuses of a unit configuration."""
    return unit_evaluator(dt).outputs(config)


def unit_run(dt: DT, x_status: Sequence[int], tags: Iterable[str]) -> list[UnitConfig]:
    """The unit configurations after every prefix of a tag string."""
    return unit_evaluator(dt).run(x_status, tags)


def unit_evaluate(dt: DT, x_status: Sequence[int], tags: Iterable[str]) -> list[tuple[int, ...]]:
    """The output statuses after every prefix of a tag string."""
    return unit_evaluator(dt).evaluate(x_status, tags)
