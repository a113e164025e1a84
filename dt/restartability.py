"""Deciding restartability (seed 003, §5.2.2, Definition 5.4 and Theorem 5.6).

Definition 5.4: a DT is *restartable* if a simulation ``c ~ [c1, …, ck]``
exists that holds at initialization (i), is preserved by an update with
restarts ``Δ_{σ,x}`` against updating every thread ``ci`` separately and
starting fresh threads ``Δ_i(x1), …`` with ``x = x1 ⊔ …`` (ii), and implies
equal outputs, ``F(c) = F(c1) ⊔ … ⊔ F(ck)`` (iii). The restart vectors range
over ``X = {⊥}^I ∪ (D ∪ {⊤})^I``.

Proof of Theorem 5.6, as implemented here:

* A is restartable iff its unit projection P is (the lemma of the proof), so
  the search runs on unit configurations (:mod:`dt.projection`); restart
  vectors become ``{0}^I ∪ {1, 2}^I`` (statuses ⊥, ⋆, ⊤).
* The reachable relation R (closure of (i) and (ii)) is a simulation iff
  (iii) holds on every reachable pair; so the DT is *not* restartable iff a
  reachable pair ``(p, [p1, …, pk])`` violates (iii).
* Take a violation with k minimal and let ``pk`` be the thread started last.
  The pair without it, ``(q, [p1, …, p(k-1)])`` — where q is the run that
  omits pk's initial vector from its restart — is reachable with fewer
  threads, so ``F(q) = F(p1) ⊔ … ⊔ F(p(k-1))``. The violation therefore shows
  on a *triple* ``(p, q, pk)``: ``F(p) ≠ F(q) ⊔ F(pk)``. Before pk starts, p
  and q coincide (a single configuration with arbitrary restarts, phase 1);
  at pk's start, p restarts with ``xa ⊔ xk``, q with ``xa`` and pk is
  ``Δ_i(xk)``; afterwards no thread starts and all three step with Δ_σ
  (phase 2). The k = 0 case (``Δ_i(⊥) ~ []``: outputs must stay ⊥ without
  restarts) is searched on its own (phase 0).

The paper guesses this path nondeterministically (PSPACE); here it is a
breadth-first search over the finitely many unit configurations, single ones
in phases 0 and 1 and triples in phase 2 — at most ``3^|Q|`` and ``27^|Q|``
of them, far fewer in practice.

A triple found is turned into a concrete witness: one thread per non-⊥
restart of q's run plus pk. The witness is *replayed* with
:mod:`dt.reference` on data (the restarted run against the union of the
separate runs, as Definition 5.4 states) before it is returned. If the full
thread list happens to agree (q's own pair may violate (iii) instead), a
shorter prefix of the thread list does not, by telescoping; that prefix is the
witness.

Reading of the definition (documented choice): in (ii) the new threads are the
fresh threads ``Δ_i(x1), …, Δ_i(xl)`` of the base case (i), as the proof's
search assumes; a thread may start with the all-⊥ vector (``⊥^I ∈ X``).

:func:`output_synchronized` (§5.2): in every configuration reachable from
``Δ_i(x)``, ``x ∈ X``, by plain updates Δ_σ, the final states are all ⊥ or all
non-⊥.
"""

from __future__ import annotations

import itertools
import logging
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from .errors import PreconditionError
from .model import DT
from .projection import UnitConfig, UnitEvaluator, unit_evaluator
from .reference import initial_config, outputs, step
from .search import vector_with_statuses
from .values import BOT, XValue, status_of, union

__all__ = [
    "RestartWitness",
    "Restartability",
    "check_restartable",
    "output_synchronized",
    "replay",
    "restart_vectors",
]

log = logging.getLogger(__name__)

Vector = tuple[int, ...]
"""Statuses of an initial vector (0 ⊥, 1 ⋆, 2 ⊤), aligned with ``dt.initial``."""

_STAR_VALUE = 1.0
"""The data value that stands for ⋆ when a witness is replayed on data."""


@dataclass(frozen=True)
class RestartWitness:
    """A violation of Definition 5.4 (iii) on a concrete run.

    ``tags`` — the tag string read; ``threads`` — the started threads as
    ``(position, initial statuses)``: position 0 is the initialization Δ_i,
    position t ≥ 1 a restart together with the t-th event (Δ_{σ_t, x});
    ``restarted`` — the output statuses after the whole tag string of the
    single run restarted with the union of the threads' vectors at their
    positions; ``separate`` — the union of the output statuses of the threads
    run separately. They differ.
    """

    tags: tuple[str, ...]
    threads: tuple[tuple[int, Vector], ...]
    restarted: Vector
    separate: Vector


@dataclass(frozen=True)
class Restartability:
    """The answer of :func:`check_restartable`.

    ``explored`` counts the search nodes visited (unit configurations in
    phases 0 and 1, triples in phase 2; see the module docstring).
    """

    restartable: bool
    witness: RestartWitness | None
    explored: int


# --------------------------------------------------------------------------- statuses


def _join(a: int, b: int) -> int:
    """⊔ on statuses: ⊥ is neutral, two non-⊥ contributions are ⊤."""
    if a == 0:
        return b
    if b == 0:
        return a
    return 2


def _join_vectors(a: Sequence[int], b: Sequence[int]) -> Vector:
    return tuple(_join(u, v) for u, v in zip(a, b, strict=True))


def restart_vectors(n: int) -> tuple[Vector, ...]:
    """The unit projection of X over n initial states: ``{0}^n ∪ {1, 2}^n`` (⊥-vector first)."""
    vectors = [(0,) * n]
    vectors.extend(v for v in itertools.product((1, 2), repeat=n) if v != vectors[0])
    return tuple(vectors)


# --------------------------------------------------------------------------- search

# Search nodes: ("0", p) | ("1", p) | ("2", p, q, r). Parents record how a node
# was first reached: (parent node or None, tag or None, restart vector(s)).
_Node = tuple
_Parent = tuple


class _Search:
    """Breadth-first search of the phases of the module docstring."""

    def __init__(self, dt: DT, max_states: int) -> None:
        self.dt = dt
        self.ev: UnitEvaluator = unit_evaluator(dt)
        self.alphabet = dt.alphabet
        self.xs = restart_vectors(len(dt.initial))
        self.bottom = self.xs[0]
        self.fresh = {x: self.ev.initial(x) for x in self.xs}  # Δ_i(x): a new thread
        self.max_states = max_states
        self.parent: dict[_Node, _Parent] = {}
        self.queue: deque[_Node] = deque()
        # Unit steps memoized per (configuration, tag, restart): the triples of phase 2
        # recombine far fewer distinct configurations, each stepped once per tag.
        self._steps: dict[tuple[UnitConfig, str, Vector | None], UnitConfig] = {}

    def step(self, config: UnitConfig, tag: str, x: Vector | None = None) -> UnitConfig:
        key = (config, tag, x)
        hit = self._steps.get(key)
        if hit is None:
            hit = self._steps[key] = self.ev.step(config, tag, x)
        return hit

    def visit(self, node: _Node, parent: _Parent) -> None:
        if node in self.parent:
            return
        if len(self.parent) >= self.max_states:
            raise PreconditionError(
                f"restartability search exceeded max_states={self.max_states}")
        self.parent[node] = parent
        self.queue.append(node)

    def violates(self, node: _Node) -> bool:
        out = self.ev.outputs
        if node[0] == "0":
            return any(out(node[1]))
        if node[0] == "2":
            return out(node[1]) != _join_vectors(out(node[2]), out(node[3]))
        return False

    def run(self) -> _Node | None:
        ev, xs = self.ev, self.xs
        self.visit(("0", ev.initial(self.bottom)), (None, None, ()))
        for x in xs:
            self.visit(("1", ev.initial(x)), (None, None, (x,)))
        for xa, xk in itertools.product(xs, repeat=2):
            p = ev.initial(_join_vectors(xa, xk))
            self.visit(("2", p, ev.initial(xa), ev.initial(xk)), (None, None, (xa, xk)))
        while self.queue:
            node = self.queue.popleft()
            if self.violates(node):
                return node
            self.expand(node)
        return None

    def expand(self, node: _Node) -> None:
        for tag in self.alphabet:
            if node[0] == "0":
                self.visit(("0", self.step(node[1], tag)), (node, tag, ()))
            elif node[0] == "2":
                p, q, r = (self.step(c, tag) for c in node[1:])
                self.visit(("2", p, q, r), (node, tag, ()))
            else:
                self.expand_phase1(node, tag)

    def expand_phase1(self, node: _Node, tag: str) -> None:
        c = node[1]
        after: dict[Vector, UnitConfig] = {x: self.step(c, tag, x) for x in self.xs}
        for x in self.xs:
            self.visit(("1", after[x]), (node, tag, (x,)))
        # Thread k starts here: q restarts with xa, p with xa ⊔ xk.
        for xa, xk in itertools.product(self.xs, repeat=2):
            joined = _join_vectors(xa, xk)
            p = after[joined] if joined in after else self.step(c, tag, joined)
            self.visit(("2", p, after[xa], self.fresh[xk]), (node, tag, (xa, xk)))

    def history(self, node: _Node) -> tuple[tuple[str, ...], list[tuple[int, Vector]]]:
        """The tag string to ``node`` and its threads (q's non-⊥ restarts, then pk)."""
        steps: list[tuple[str | None, _Node, tuple[Vector, ...]]] = []
        current: _Node | None = node
        while current is not None:
            parent, tag, vectors = self.parent[current]
            steps.append((tag, current, vectors))
            current = parent
        steps.reverse()
        tags = tuple(tag for tag, _, _ in steps if tag is not None)
        threads: list[tuple[int, Vector]] = []
        last: tuple[int, Vector] | None = None
        position = 0
        previous_phase = None
        for tag, current, vectors in steps:
            if tag is not None:
                position += 1
            entering = current[0] == "2" and previous_phase != "2"
            if current[0] == "1" or entering:
                xa = vectors[0]
                if xa != self.bottom:
                    threads.append((position, xa))
            if entering:
                last = (position, vectors[1])
            previous_phase = current[0]
        if last is not None:
            threads.append(last)
        return tags, threads


# --------------------------------------------------------------------------- witnesses


def _unit_outcome(ev: UnitEvaluator, tags: Sequence[str], threads: Sequence[tuple[int, Vector]],
                  bottom: Vector) -> tuple[Vector, Vector]:
    """(restarted outputs, union of separate outputs) after ``tags``, on statuses."""
    restarts: dict[int, Vector] = {}
    for position, x in threads:
        restarts[position] = _join_vectors(restarts.get(position, bottom), x)
    config = ev.initial(restarts.get(0, bottom))
    for t, tag in enumerate(tags, start=1):
        config = ev.step(config, tag, restarts.get(t))
    separate: Vector = (0,) * len(ev.outputs(config))
    for position, x in threads:
        thread = ev.initial(x)
        for tag in tags[position:]:
            thread = ev.step(thread, tag)
        separate = _join_vectors(separate, ev.outputs(thread))
    return ev.outputs(config), separate


def replay(dt: DT, witness: RestartWitness) -> tuple[tuple[XValue, ...], tuple[XValue, ...]]:
    """Run ``witness`` on data with :mod:`dt.reference` (⋆ ↦ 1.0, every event value 1.0).

    Returns (outputs of the restarted run, union of the outputs of the
    separate runs) after the whole tag string, as Definition 5.4 compares them.
    """
    bottom = (BOT,) * len(dt.initial)
    restarts: dict[int, tuple[XValue, ...]] = {}
    for position, x in witness.threads:
        prior = restarts.get(position, bottom)
        fresh = vector_with_statuses(x, _STAR_VALUE)
        restarts[position] = tuple(union(a, b) for a, b in zip(prior, fresh, strict=True))
    config = initial_config(dt, restarts.get(0, bottom))
    for t, tag in enumerate(witness.tags, start=1):
        config = step(dt, config, tag, _STAR_VALUE, restart=restarts.get(t))
    separate: tuple[XValue, ...] = (BOT,) * len(dt.final)
    for position, x in witness.threads:
        thread = initial_config(dt, vector_with_statuses(x, _STAR_VALUE))
        for tag in witness.tags[position:]:
            thread = step(dt, thread, tag, _STAR_VALUE)
        separate = tuple(union(a, b) for a, b in zip(separate, outputs(dt, thread),
                                                      strict=True))
    return outputs(dt, config), separate


def _statuses(values: Sequence[XValue]) -> Vector:
    return tuple(int(status_of(v)) for v in values)


def _witness(search: _Search, node: _Node) -> RestartWitness:
    """The concrete witness of a violating node, checked on statuses and replayed on data."""
    tags, threads = search.history(node)
    # Telescoping (module docstring): some prefix of the thread list violates.
    for j in range(len(threads) + 1):
        restarted, separate = _unit_outcome(search.ev, tags, threads[:j], search.bottom)
        if restarted != separate:
            witness = RestartWitness(tags, tuple(threads[:j]), restarted, separate)
            break
    else:  # pragma: no cover - a bug in the search
        raise AssertionError(f"no prefix of the threads {threads} on {tags} violates (iii)")
    got, want = replay(search.dt, witness)
    if _statuses(got) != witness.restarted or _statuses(want) != witness.separate:
        raise AssertionError(  # pragma: no cover - a bug in the projection or the search
            f"replay of {witness} on data disagrees: restarted {got}, separate {want}")
    return witness


def check_restartable(dt: DT, *, max_states: int = 1_000_000) -> Restartability:
    """Decide Definition 5.4 for ``dt`` by the search of Theorem 5.6's proof.

    Raises :class:`~dt.errors.PreconditionError` when more than ``max_states``
    search nodes would be needed. A witness is replayed on data with
    :mod:`dt.reference` before it is returned (AssertionError if not: a bug).
    """
    search = _Search(dt, max_states)
    node = search.run()
    explored = len(search.parent)
    if node is None:
        log.debug("restartable: %d search nodes", explored)
        return Restartability(True, None, explored)
    witness = _witness(search, node)
    log.debug("not restartable after %d search nodes: %s", explored, witness)
    return Restartability(False, witness, explored)


def output_synchronized(dt: DT) -> bool:
    """§5.2: every configuration reachable from Δ_i(x), x ∈ X, by Δ_σ has its final
    states all ⊥ or all non-⊥ (BFS on unit configurations)."""
    ev = unit_evaluator(dt)
    seen: set[UnitConfig] = set()
    queue: deque[UnitConfig] = deque()
    for x in restart_vectors(len(dt.initial)):
        config = ev.initial(x)
        if config not in seen:
            seen.add(config)
            queue.append(config)
    while queue:
        config = queue.popleft()
        out = ev.outputs(config)
        if any(out) and not all(out):
            return False
        for tag in dt.alphabet:
            nxt = ev.step(config, tag)
            if nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    return True
