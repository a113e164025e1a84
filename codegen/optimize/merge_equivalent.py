"""Equivalent states merged: a state whose equations are another's is replaced by it.

Rule. Two non-initial states are *equivalent* under a partition P of the states
when they are written by the same multiset of transitions up to P: the same
labels, the same terms, reading states of the same classes (primed alike). A
partition in which every two states of a class are equivalent is *stable*; the
pass finds one (below), and in each class keeps one state, its *representative*
(the first final state of the class, else its first state): every other state
of the class that is neither initial nor final is dropped, with its writers,
and every read of it becomes a read of the representative. The compiled DTs
need this: each ``let`` a query reads twice, and each copy of a sub-query the
constructions of §5.2 make (a ``since``'s operands, a ``split``'s counters),
is a structurally identical block of states beside the first.

Why it is exact (seed 003, §5.1, Equation (1)). Induction on the events: two
equivalent states hold the same value (status and value) before the first event
(both ⊥) and after each step. Within a step the primed values are the least
solution of Equation (1), the limit of its Kleene iteration from ⊥ everywhere;
if at one iteration the states of every class hold equal values (true at the
start, and for the unprimed values by induction), then at the next each state
of a class joins the same multiset of term values — the terms are the same and
read equal values — so they hold equal values again; the limit too. Initial
states are never merged (the initial vector and restarts, Definition 5.4, seed
each with its own value), so every class of P holds equal values in every
configuration, and reading the representative instead of a member changes no
term's value. Multiplicities are compared, and no transition is merged: two
writers giving d give d ⊔ d = ⊤.

Finding a stable partition: Moore's refinement (split each class by its
members' transitions up to the current partition, until no class splits) is
sound from *any* starting partition, since it stops only at a stable one. It
starts here from a structural numbering that makes it converge in a few rounds
on compiled DTs: states numbered by their writers, dependencies first (the
strongly connected components of the read graph in topological order, so an
acyclic state's class is final when it is numbered: value numbering), and a
state on a cycle numbered as if the states of its own component were one
unknown class (so isomorphic cycles start in the same classes and the rounds
check them). Should refinement need more than :data:`MAX_ROUNDS` rounds, the
pass merges nothing (a partition it has not seen stabilize is not known stable).

Preconditions: none.

Cost: linear in the DT's size per round (hashing each transition's label, term
and source classes), a few rounds in practice.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Mapping

from dt.model import DT
from dt.terms import Term, Var

from ._common import rebuild, redirect, sccs_topological

__all__ = ["MAX_ROUNDS", "merge_equivalent"]

MAX_ROUNDS = 64
"""Refinement rounds after which :func:`merge_equivalent` gives up and merges nothing."""

_Writer = tuple[str, Term, frozenset[Var]]
"""A transition as compared: its label, its term and its sources."""


def merge_equivalent(dt: DT) -> DT:
    """Drop every state equivalent to its class's representative (module docstring).

    >>> from codegen.optimize._common import from_dump
    >>> d = from_dump('''
    ...   alphabet: a
    ...   states:   i, s, t, f
    ...   initial:  i
    ...   final:    f
    ...     init: {i'} -> s' := i'
    ...     a: {s} -> s' := s + cur
    ...     init: {i'} -> t' := i'
    ...     a: {t} -> t' := t + cur
    ...     eps: {s', t'} -> f' := s' * t'
    ... ''')
    >>> print(merge_equivalent(d).dump())
    alphabet: a
    states:   i, s, f
    initial:  i
    final:    f
    size:     16 (3 states, 3 transitions)
      init: {i'} -> s' := i'
      a: {s} -> s' := s + cur
      eps: {s'} -> f' := s' * s'
    """
    writers: dict[str, list[_Writer]] = {q: [] for q in dt.states}
    for t in dt.transitions:
        writers[t.target].append((t.on, t.term, t.sources))
    classes = _stable(dt, writers, _structural(dt, writers))
    if classes is None:
        return dt
    rep = _representatives(dt, classes)
    if not rep:
        return dt
    transitions = [redirect(t, rep) for t in dt.transitions if t.target not in rep]
    return rebuild(dt, (q for q in dt.states if q not in rep), transitions)


def _signature(writers: list[_Writer], class_of: Mapping[str, Hashable]) -> frozenset:
    """The multiset of a state's writers up to the classes ``class_of`` gives."""
    def up_to_classes(term: Term, sources: frozenset[Var]) -> tuple[Term, frozenset[Var]]:
        named = {v: Var(f"_{class_of[v.name]}", v.primed) for v in sources}
        return term.rename(named), frozenset(named.values())

    return frozenset(Counter((on, *up_to_classes(term, sources))
                             for on, term, sources in writers).items())


def _structural(dt: DT, writers: dict[str, list[_Writer]]) -> dict[str, int]:
    """The starting partition (module docstring): value numbering along the read graph's
    components, a component's own states read as one unknown class."""
    initial = set(dt.initial)
    reads: dict[str, set[str]] = {q: set() for q in dt.states}
    for q, ws in writers.items():
        if q in initial:  # numbered alone, whatever it reads: on no cycle of numbering
            continue
        for _, _, sources in ws:
            for v in sources:
                reads[v.name].add(q)  # an edge from each source to its reader
    numbers: dict[Hashable, int] = {}
    classes: dict[str, int] = {}
    for component in sccs_topological(list(dt.states), reads):
        cyclic = len(component) > 1 or component[0] in reads[component[0]]
        inside = _Outside(classes, set(component)) if cyclic else classes
        for q in component:
            key = ("initial", q) if q in initial else (cyclic, _signature(writers[q], inside))
            classes[q] = numbers.setdefault(key, len(numbers))
    return classes


class _Outside:
    """The classes numbered so far, the states of ``component`` (being numbered) read as
    one unknown class."""

    def __init__(self, classes: dict[str, int], component: set[str]) -> None:
        self.classes, self.component = classes, component

    def __getitem__(self, q: str) -> int:
        return -1 if q in self.component else self.classes[q]


def _stable(dt: DT, writers: dict[str, list[_Writer]], classes: dict[str, int]
            ) -> dict[str, int] | None:
    """Moore's refinement of ``classes`` until no class splits (None after
    :data:`MAX_ROUNDS` rounds)."""
    initial = set(dt.initial)
    count = len(set(classes.values()))
    for _ in range(MAX_ROUNDS):
        numbers: dict[Hashable, int] = {}
        refined = {q: numbers.setdefault(
            ("initial", q) if q in initial else (classes[q], _signature(writers[q], classes)),
            len(numbers)) for q in dt.states}
        if len(numbers) == count:
            return classes
        classes, count = refined, len(numbers)
    return None


def _representatives(dt: DT, classes: dict[str, int]) -> dict[str, str]:
    """``{q: r}`` for every state q dropped for its class's representative r."""
    final, initial = set(dt.final), set(dt.initial)
    first: dict[int, str] = {}
    for q in (*dt.final, *dt.states):
        first.setdefault(classes[q], q)
    return {q: first[classes[q]] for q in dt.states
            if q not in initial and q not in final and first[classes[q]] != q}
