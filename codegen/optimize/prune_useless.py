"""Useless code: states that cannot influence any output, and their transitions.

Rule. A state is *useful* if it is final, or if it is a source (primed or not)
of a transition whose target is useful: backward reachability from F through
the sources. Every transition whose target is not useful is removed, and so is
every state that is not useful — except the initial states, which stay (the
initial vector is fed to I by position), keeping no transition that writes them.

Why it is exact (seed 003, §5.1, Equation (1)). The equations of the useful
states only read useful states (a source of a transition into a useful state is
useful by definition), so they form a closed subsystem: its least solution is
the restriction of the least solution of the whole system, at ``init`` and on
every step, with or without restart (Definition 5.4 seeds initial states, which
are kept). The outputs c|F are among the useful states. A removed transition
writes a useless state; a useless initial state may then hold a different value
than before, but nothing that reaches the outputs reads it.

Preconditions: none.

Cost: linear in the size of the DT.
"""

from __future__ import annotations

from dt.model import DT, Transition

from ._common import rebuild

__all__ = ["prune_useless"]


def prune_useless(dt: DT) -> DT:
    """Remove the states that no final state depends on, and the transitions into them.

    >>> from codegen.optimize._common import from_dump
    >>> d = from_dump('''
    ...   alphabet: a
    ...   states:   i, j, s, u, f
    ...   initial:  i, j
    ...   final:    f
    ...     a: {i} -> s' := i + cur
    ...     a: {s', i} -> u' := s' * i
    ...     eps: {u'} -> j' := u'
    ...     eps: {s'} -> f' := s'
    ... ''')
    >>> print(prune_useless(d).dump())
    alphabet: a
    states:   i, j, s, f
    initial:  i, j
    final:    f
    size:     12 (4 states, 2 transitions)
      a: {i} -> s' := i + cur
      eps: {s'} -> f' := s'
    """
    writers: dict[str, list[Transition]] = {}
    for t in dt.transitions:
        writers.setdefault(t.target, []).append(t)
    useful = set(dt.final)
    stack = list(dt.final)
    while stack:
        for t in writers.get(stack.pop(), ()):
            for v in t.sources:
                if v.name not in useful:
                    useful.add(v.name)
                    stack.append(v.name)
    transitions = [t for t in dt.transitions if t.target in useful]
    return rebuild(dt, useful, transitions)
