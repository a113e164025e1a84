"""Copy collapsing: a state that is always a copy of another is replaced by it.

Rule. A non-initial state q is an *alias* of a state p ≠ q if on every label
(``init`` and each tag) the transitions of that label that write q' are exactly
one, with sources ``{p'}`` and term ``p'`` — typically the single epsilon copy
``(ε, p', q', p')`` that the constructions of §5.2 add between components. Then
every read of q' becomes p' and every read of q becomes p, in the sources and in
the terms; q and its copy transitions are dropped, unless q is final: a final
state stays (the outputs are read from it) and only its readers are redirected.
Chains collapse fully: the alias of an alias is resolved first, so every read
goes to the end of the chain. Aliases that form a cycle (q copies p, p copies
q), and those whose chain runs into one, are left alone: such states are always
⊥ (nothing seeds them), and :func:`prune_dead` removes them.

Why it is exact (seed 003, §5.1, Equation (1)). On every label q's equation is
``c'(q') = [[p']](c'|{p'}) = c'(p')``, status and value, and no initial vector
or restart seeds q (it is not initial). So every solution of Equation (1) —
the least one in particular — has ``c'(q') = c'(p')``, and substituting p' for
q' in the other equations does not change the set of solutions, hence not the
least one; each configuration reached, the initial one included, has
``c(q) = c(p)``, so an unprimed read of q can read p. A source set ``{p', q'}``
becoming ``{p'}`` lifts the same way, since the two values are equal. No
transition is merged: substitution may make two transitions identical, and both
stay (two writers giving d give d ⊔ d = ⊤).

Preconditions: none.

Cost: linear in the size of the DT times the number of labels (the writers of
each state on each label).
"""

from __future__ import annotations

from dt.model import DT, INIT, Transition
from dt.terms import Var

from ._common import rebuild, redirect

__all__ = ["collapse_copies"]


def collapse_copies(dt: DT) -> DT:
    """Replace every alias by the state it copies (see the module docstring).

    >>> from codegen.optimize._common import from_dump
    >>> d = from_dump('''
    ...   alphabet: a
    ...   states:   i, c1, c2, s, f
    ...   initial:  i
    ...   final:    f
    ...     eps: {i'} -> c1' := i'
    ...     eps: {c1'} -> c2' := c1'
    ...     a: {c2, c1'} -> s' := c2 + c1'
    ...     eps: {s'} -> f' := s'
    ... ''')
    >>> print(collapse_copies(d).dump())
    alphabet: a
    states:   i, s, f
    initial:  i
    final:    f
    size:     12 (3 states, 2 transitions)
      a: {i, i'} -> s' := i + i'
      eps: {s'} -> f' := s'
    """
    rep = _resolve(_aliases(dt))
    if not rep:
        return dt
    dropped = {q for q in rep if q not in dt.final}
    transitions = [redirect(t, rep) for t in dt.transitions if t.target not in dropped]
    return rebuild(dt, (q for q in dt.states if q not in dropped), transitions)


def _aliases(dt: DT) -> dict[str, str]:
    """``{q: p}`` for every alias q of p (one step: chains are not resolved), in state order."""
    copied: dict[str, str | None] = {}  # q -> p while q looks like an alias so far; None: not
    initial = set(dt.initial)
    for label in (INIT, *dt.alphabet):
        index = dt.on(label)
        for q in dt.states:
            if q in initial or copied.get(q, "") is None:
                continue
            p = _copy_source(index.transitions, index.writers.get(q, ()))
            previous = copied.setdefault(q, p)
            if p is None or p == q or p != previous:
                copied[q] = None
    return {q: p for q, p in copied.items() if p is not None}


def _copy_source(transitions: tuple[Transition, ...], writers: tuple[int, ...]) -> str | None:
    """p when ``writers`` is exactly one transition ``{p'} -> q' := p'``, else None."""
    if len(writers) != 1:
        return None
    t = transitions[writers[0]]
    if not isinstance(t.term, Var) or not t.term.primed or t.sources != {t.term}:
        return None
    return t.term.name


def _resolve(alias: dict[str, str]) -> dict[str, str]:
    """The end of each alias chain; states on or leading into an alias cycle are left out."""
    rep: dict[str, str | None] = {}
    for start in alias:
        path: list[str] = []
        on_path: set[str] = set()
        q = start
        while q in alias and q not in rep and q not in on_path:
            path.append(q)
            on_path.add(q)
            q = alias[q]
        # q is the chain's end, an already resolved state, or a state seen twice (a cycle).
        end = None if q in on_path else rep.get(q, q)
        for r in path:
            rep[r] = end
    return {q: p for q, p in rep.items() if p is not None}
