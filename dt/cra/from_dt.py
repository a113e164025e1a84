"""DT → deterministic CRA (seed 003, Theorem 5.8, the direction "DT ⊆ SR").

The seed's proof sketch takes the CRA's control states to be {⊥, ⋆, ⊤}^Q and
its registers the DT's states Q. Here the control is the DT's *definedness*
configuration, {⊥, defined-or-⊤}^Q, and ⊤ is a register value (the refinement
documented in :mod:`dt.cra.model`). It is exact because definedness is
closed: a transition is non-⊥ iff all its sources are, a state iff one of its
contributions (or its seed) is — ⊤ and a value behave alike for ⊥-ness. So
the control of a step depends only on the previous control and the tag, and
the start only on which inputs are ⊥. At most 2^|Q| control states instead of
3^|Q|, and a single start for every initial vector with no ⊥ entry, which the
restartable conversion (:mod:`dt.cra.restartable`) needs.

Registers: in control s, the live registers are the DT states defined in s.
After ``s →σ s'`` a state q live in s' has the new value

* ⊤ (:data:`~dt.cra.model.CONFLICT`) if two or more transitions of Δ_σ into q'
  have all their sources defined (unprimed in s, primed in s') — their union
  is ⊤ whatever the values;
* otherwise the one such transition's term, with each primed source replaced
  by that source's own update (its new value). This substitution terminates:
  a cycle of primed sources that are each fed by one transition is ⊥ in the
  least fixpoint, so a defined cycle has a state fed twice, which is ⊤.

The update reads the transition's unprimed sources and, through the
substitution, the reads of its primed ones: a ⊤ among them makes it ⊤, as in
the DT. At initialization (Δ_i) the seed x(q) is one more contribution, read
as the input q.

Cost: the reachable control states are explored breadth-first from the
2^|I| starts (at most 2^|Q| states; Theorem 5.9's family shows the blow-up is
real); each costs one definedness step per tag (O(size)) and its updates.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Sequence

from ..errors import PreconditionError
from ..model import DT, INIT, Transition
from ..projection import UnitEvaluator, unit_evaluator
from ..terms import Var
from .model import CONFLICT, CRA, Step, Update, definedness_vectors

__all__ = ["DefinednessConfig", "cra_from_dt"]

log = logging.getLogger(__name__)

DefinednessConfig = tuple[int, ...]
"""1 where a DT state is defined or ⊤, 0 where it is ⊥; aligned with ``dt.states``."""


def _defined(config: Sequence[int]) -> DefinednessConfig:
    return tuple(1 if s else 0 for s in config)


def _updates(dt: DT, label: str, old: DefinednessConfig | None, new: DefinednessConfig,
             seeded: frozenset[str]) -> dict[str, Update]:
    """The update of every state defined in ``new`` (module docstring)."""
    pos = dt.state_index
    index = dt.on(label)

    def active(t: Transition) -> bool:
        return all((new if v.primed else old)[pos[v.name]]  # type: ignore[index]
                   for v in t.sources)

    feeding: dict[str, list[Transition]] = {}
    for t in index.transitions:
        if new[pos[t.target]] and active(t):
            feeding.setdefault(t.target, []).append(t)
    done: dict[str, Update] = {}

    def update(q: str, path: tuple[str, ...]) -> Update:
        hit = done.get(q)
        if hit is not None:
            return hit
        if q in path:  # pragma: no cover - excluded by the least fixpoint (docstring)
            raise AssertionError(f"a defined cycle of single contributions through {q}")
        trs = feeding.get(q, [])
        count = len(trs) + (q in seeded)
        if count >= 2:
            result = CONFLICT
        elif q in seeded:
            result = Update(Var(q), frozenset({q}))
        else:
            result = _substitute(trs[0], lambda p: update(p, (*path, q)))
        done[q] = result
        return result

    return {q: update(q, ()) for q, d in zip(dt.states, new, strict=True) if d}


def _substitute(t: Transition, new_value: Callable[[str], Update]) -> Update:
    """``t``'s term over old registers: each primed source replaced by its new value."""
    reads = {v.name for v in t.sources if not v.primed}
    mapping = {}
    for v in t.sources:
        if v.primed:
            u = new_value(v.name)
            if u.term is None:
                return CONFLICT  # a ⊤ source makes the transition ⊤
            reads |= u.reads
            mapping[v] = u.term
    return Update(t.term.substitute(mapping), frozenset(reads))


def cra_from_dt(dt: DT, *, max_states: int = 100_000) -> CRA:
    """The deterministic CRA of ``dt`` (Theorem 5.8); see the module docstring.

    Control states are named ``s0``, ``s1``, … in breadth-first order; their
    live registers are the DT states defined there. Raises
    :class:`~dt.errors.PreconditionError` past ``max_states`` control states.
    """
    ev: UnitEvaluator = unit_evaluator(dt)
    names: dict[DefinednessConfig, str] = {}
    queue: deque[DefinednessConfig] = deque()

    def name_of(config: DefinednessConfig) -> str:
        name = names.get(config)
        if name is None:
            if len(names) >= max_states:
                raise PreconditionError(
                    f"the CRA of this DT has more than max_states={max_states} control states "
                    f"(it can need 2^|Q|, Theorem 5.9)")
            name = names[config] = f"s{len(names)}"
            queue.append(config)
        return name

    start: dict[tuple[int, ...], Step] = {}
    for v in definedness_vectors(len(dt.initial)):
        config = _defined(ev.initial(v))
        seeded = frozenset(q for q, d in zip(dt.initial, v, strict=True) if d)
        start[v] = Step(name_of(config), _updates(dt, INIT, None, config, seeded))
    delta: dict[tuple[str, str], Step] = {}
    live: dict[str, tuple[str, ...]] = {}
    output: dict[str, tuple[Update | None, ...]] = {}
    pos = dt.state_index
    while queue:
        config = queue.popleft()
        p = names[config]
        live[p] = tuple(q for q, d in zip(dt.states, config, strict=True) if d)
        output[p] = tuple(Update(Var(f), frozenset({f})) if config[pos[f]] else None
                          for f in dt.final)
        for tag in dt.alphabet:
            after = _defined(ev.step(config, tag))
            delta[p, tag] = Step(name_of(after), _updates(dt, tag, config, after, frozenset()))
    log.debug("CRA of a DT of size %d: %d control states", dt.size, len(names))
    return CRA(dt.alphabet, dt.initial, dt.final, tuple(names.values()), live, start, delta,
               output)
