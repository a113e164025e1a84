"""Copy cycles: states that copy each other round a cycle are ⊥ or ⊤ together.

Rule. Take the graph with an edge p → q for every epsilon copy ``(ε, {p'}, q', p')``.
Let C be one of its strongly connected components that is a cycle (two states or
more, or one state that copies itself) and holds no initial state; call the other
transitions that write a state of C its *entries* (any label, any sources — they
may read C). Then C is rewritten so that no within-step cycle is left:

* the copies between states of C are removed;
* every entry is retargeted to r, the first state of C (in state order), and
  added *twice*;
* every other state q of C gets the copy ``(ε, {r'}, q', r')``.

Iterations of queries that match the empty word build such cycles (seed 003,
§5.2.2: A* of an A with an epsilon path from its input to its output); in an
identity DT I_α every step of the path is a copy. The support construction
(:mod:`dt.support`) must unroll a cyclic DT into 2|W| levels — quadratic — and
an acyclic one not at all, so this pass is what keeps ``fill`` linear there.

Why it is exact (seed 003, §5.1, Equation (1)), on every label, with any seeds
(restarts seed initial states, which are not in C). Let S be the least solution of
a step's equations. Round the cycle, every state of C is at least the value of
the one it copies, so all of C has one value v in S; a state q of C that an
entry writes has ``v = E ⊔ v``, so v is ⊤ if some entry is non-⊥ (d ⊔ d = ⊤) and,
if none is, v = ⊥ (setting C to ⊥ in S gives a pre-fixpoint, below the least
fixpoint). The rewritten equations say exactly that — r is the union of every
entry taken twice, which is ⊥ or ⊤, and the rest of C copies r — and are the same
elsewhere; so S solves them, and their least solution solves the original ones
(⊤ on C absorbs every copy, ⊥ on C means no entry fired). Both least solutions
are below each other: they are equal, every state keeps its value.

Preconditions: none.

Cost: linear in the size of the DT (Tarjan's algorithm on the copy graph).
"""

from __future__ import annotations

from dataclasses import replace

from dt.model import DT, EPS, Transition
from dt.terms import Var

from ._common import rebuild, sccs_topological

__all__ = ["break_copy_cycles"]


def break_copy_cycles(dt: DT) -> DT:
    """Rewrite every cycle of epsilon copies without initial states (module docstring).

    >>> from codegen.optimize._common import from_dump
    >>> d = from_dump('''
    ...   alphabet: a
    ...   states:   i, p, q, f
    ...   initial:  i
    ...   final:    f
    ...     eps: {i'} -> p' := i'
    ...     eps: {q'} -> p' := q'
    ...     eps: {p'} -> q' := p'
    ...     a: {p} -> f' := p + 1
    ... ''')
    >>> print(break_copy_cycles(d).dump())
    alphabet: a
    states:   i, p, q, f
    initial:  i
    final:    f
    size:     18 (4 states, 4 transitions)
      eps: {i'} -> p' := i'
      eps: {i'} -> p' := i'
      a: {p} -> f' := p + 1
      eps: {p'} -> q' := p'
    """
    representative = _cycles(dt)
    if not representative:
        return dt
    transitions: list[Transition] = []
    for t in dt.transitions:
        r = representative.get(t.target)
        if r is None:
            transitions.append(t)
        elif not (_is_copy(t) and representative.get(next(iter(t.sources)).name) == r):
            transitions += [replace(t, target=r)] * 2  # an entry: twice, so d ⊔ d = ⊤
    for q, r in representative.items():
        if q != r:
            transitions.append(Transition(EPS, frozenset({Var(r, True)}), q, Var(r, True)))
    return rebuild(dt, dt.states, transitions)


def _is_copy(t: Transition) -> bool:
    """``(ε, {p'}, q', p')``: an epsilon transition that copies one primed state."""
    return (t.on == EPS and isinstance(t.term, Var) and t.term.primed
            and t.sources == {t.term})


def _cycles(dt: DT) -> dict[str, str]:
    """Per state on a copy cycle without initial states, the first state of its cycle."""
    index = dt.state_index
    edges: dict[int, set[int]] = {k: set() for k in range(len(dt.states))}
    for t in dt.transitions:
        if _is_copy(t):
            edges[index[next(iter(t.sources)).name]].add(index[t.target])
    initial = {index[q] for q in dt.initial}
    out: dict[str, str] = {}
    for scc in sccs_topological(list(edges), edges):
        cyclic = len(scc) > 1 or scc[0] in edges[scc[0]]
        if cyclic and not initial.intersection(scc):
            r = dt.states[min(scc)]
            out.update((dt.states[k], r) for k in scc)
    return out
