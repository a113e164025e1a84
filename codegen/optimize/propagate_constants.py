"""Constant propagation: a state that only ever holds one value is read as that constant.

Rule. A non-initial state q *holds* the constant c if every transition that writes q
(on any label) has the term ``c`` or the term ``p`` / ``p'`` for a state p that holds c
(the greatest such assignment: a cycle of copies around a constant holds it). Every read
of such a state inside a compound term — primed or not — becomes ``Const(c)``; the
source lists stay as they are. A copy (a term that is one variable) is left alone: it
computes nothing, and :func:`collapse_copies` recognises the aliases by their copy
terms. Constants compare bitwise (:class:`~dt.terms.Const`): ``-0.0`` is not
``0.0``. A NaN is never propagated (``Const`` equality does not tell NaNs' sign and
payload apart).

Why. The constructions of §5.2 thread constants through epsilon copies: failure since
success's ``since`` carries a ``0`` that every event copies from one state to another
and compares against (``h' > i'``). Read as a constant, such a comparison folds
(:func:`fold_constants`), and in a status mode (:mod:`codegen.modes`) where the other
operand is a constant too, the whole term does: a loop-carried chain of the event loop
becomes a literal.

Why it is exact (seed 003, §5.1, Equation (1)). A state's value, when defined, is the
value of the one transition that writes it (two writers give ⊤), evaluated on defined
sources. By induction over the steps and, within a step, over the iterates of the least
fixpoint (each starts from ⊥): when q is defined its value is its writer's term on
defined values, a constant c or the value of a state that holds c, which is c. Initial
states are excluded: the initial vector and every restart (Definition 5.4) seed them
with any value. Replacing a read by the value it always has changes no term's value on
any reachable configuration, and the source list (hence lifting: ⊥ if a source is ⊥,
⊤ if one is ⊤) is untouched, so every state keeps its status and value.

Preconditions: none.

Cost: linear in the DT's size (each state's assignment changes at most twice: unknown,
a constant, varying).
"""

from __future__ import annotations

import math
from collections import defaultdict

from dt.model import DT, Transition
from dt.terms import Const, Term, Var

from ._common import rebuild

__all__ = ["propagate_constants"]

_VARYING = object()
"""Assignment of a state that may hold two values (or an initial state's any value)."""


def propagate_constants(dt: DT) -> DT:
    """Read every state that holds one constant as that constant (see the module docstring).

    >>> from codegen.optimize._common import from_dump
    >>> d = from_dump('''
    ...   alphabet: a
    ...   states:   i, z, c, s
    ...   initial:  i
    ...   final:    s
    ...     eps: {i'} -> z' := 0
    ...     a: {z} -> c' := z
    ...     eps: {c'} -> z' := c'
    ...     a: {i, c'} -> s' := cur > c'
    ... ''')
    >>> print(propagate_constants(d).dump())
    alphabet: a
    states:   i, z, c, s
    initial:  i
    final:    s
    size:     19 (4 states, 4 transitions)
      eps: {i'} -> z' := 0
      a: {z} -> c' := z
      eps: {c'} -> z' := c'
      a: {c', i} -> s' := cur > 0
    """
    held = _held_constants(dt)
    if not held:
        return dt
    transitions = [_read_constants(t, held) for t in dt.transitions]
    return rebuild(dt, dt.states, transitions)


def _held_constants(dt: DT) -> dict[str, Const]:
    """``{q: c}`` for every state that holds the constant c."""
    writers: dict[str, list[Term]] = defaultdict(list)
    readers: dict[str, set[str]] = defaultdict(set)  # p -> the states that copy p
    for t in dt.transitions:
        writers[t.target].append(t.term)
        if isinstance(t.term, Var):
            readers[t.term.name].add(t.target)
    held: dict[str, object] = {q: _VARYING for q in dt.initial}
    todo = [q for q in dt.states if q not in held]
    while todo:  # a state's assignment only rises: unknown (absent), a constant, varying
        q = todo.pop()
        value = _join_writers(writers[q], held)
        if value is not None and held.get(q) != value and held.get(q) is not _VARYING:
            held[q] = value
            todo.extend(readers[q])
    return {q: c for q, c in held.items() if isinstance(c, Const)}


def _join_writers(terms: list[Term], held: dict[str, object]) -> object | None:
    """What the terms give under ``held``: one constant, :data:`_VARYING`, or None (no
    writer gives anything known yet)."""
    value: object | None = None
    for term in terms:
        got = held.get(term.name) if isinstance(term, Var) else (
            term if isinstance(term, Const) and not math.isnan(term.value) else _VARYING)
        if got is None:
            continue
        if value is not None and got != value:
            return _VARYING
        value = got
    return value


def _read_constants(t: Transition, held: dict[str, Const]) -> Transition:
    mapping = {v: held[v.name] for v in t.term.variables() if v.name in held}
    if not mapping or isinstance(t.term, Var):
        return t
    return Transition(t.on, t.sources, t.target, t.term.substitute(mapping))
