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

Cost: linear in the DT's size for the first round (hashing each transition's label,
term in prefix form and source classes); a later round signs again only the readers of
the states that changed class, so a long chain of splits (compiled iterations: 13
rounds on average on ``eps fill 24`` of benchmarks/compile_cost.py) no longer costs a
pass over the whole DT per round (that query's ``qre()`` 7.7 s -> 2.9 s).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Mapping

from dt.model import DT
from dt.terms import Apply, Term, Var

from ._common import rebuild, redirect, sccs_topological

__all__ = ["MAX_ROUNDS", "merge_equivalent"]

MAX_ROUNDS = 64
"""Refinement rounds after which :func:`merge_equivalent` gives up and merges nothing."""

_Writer = tuple[str, tuple[object, ...], frozenset[Var]]
"""A transition as compared: its label, its term in prefix order (:func:`_prefix`) and its
sources."""


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
        writers[t.target].append((t.on, _prefix(t.term), t.sources))
    classes = _stable(dt, writers, _structural(dt, writers))
    if classes is None:
        return dt
    rep = _representatives(dt, classes)
    if not rep:
        return dt
    transitions = [redirect(t, rep) for t in dt.transitions if t.target not in rep]
    return rebuild(dt, (q for q in dt.states if q not in rep), transitions)


def _signature(writers: list[_Writer], class_of: Mapping[str, Hashable]) -> frozenset:
    """The multiset of a state's writers up to the classes ``class_of`` gives: each
    variable read as its class (primed alike), in the term and in the sources."""
    def up_to_classes(v: Var) -> tuple[Hashable, bool]:
        return class_of[v.name], v.primed

    return frozenset(Counter(
        (on, tuple(up_to_classes(x) if isinstance(x, Var) else x for x in prefix),
         frozenset(up_to_classes(v) for v in sources))
        for on, prefix, sources in writers).items())


def _prefix(term: Term) -> tuple[object, ...]:
    """``term`` in prefix order: an operation as ``(name,)`` (its arity is the
    operation's), a constant, ``cur`` or a variable as itself. Two terms are equal
    exactly when their prefix forms are, so a signature compares these, read up to
    classes, instead of terms renamed every round.

    >>> from dt.terms import parse_term
    >>> _prefix(parse_term("x' + 2 * cur"))
    (('add',), Var(name='x', primed=True), ('mul',), Const(value=2.0), Cur(field=None))
    """
    out: list[object] = []
    todo = [term]
    while todo:
        t = todo.pop()
        if isinstance(t, Apply):
            out.append((t.op,))
            todo.extend(reversed(t.args))
        else:
            out.append(t)
    return tuple(out)


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
    :data:`MAX_ROUNDS` rounds).

    Incremental: a class that splits keeps its number for its largest part, so only the
    states that moved have a new class, and only their readers' signatures change; a
    round recomputes those and splits only their classes. The partitions are Moore's,
    round by round."""
    readers: dict[str, set[str]] = {q: set() for q in dt.states}
    for q, ws in writers.items():
        for _, _, sources in ws:
            for v in sources:
                readers[v.name].add(q)
    classes = dict(classes)
    members: dict[int, list[str]] = {}
    for q in dt.states:
        members.setdefault(classes[q], []).append(q)
    initial = set(dt.initial)  # each alone in its class (_structural): never split
    signature = {q: _signature(writers[q], classes) for q in dt.states if q not in initial}
    dirty = set(members)
    fresh = max(members, default=0) + 1
    for _ in range(MAX_ROUNDS):
        moved: list[str] = []
        for c in sorted(dirty):
            parts: dict[frozenset, list[str]] = {}
            for q in members[c]:
                parts.setdefault(signature.get(q, frozenset()), []).append(q)
            if len(parts) < 2:
                continue
            largest = max(parts.values(), key=len)
            members[c] = largest
            for part in parts.values():
                if part is not largest:
                    members[fresh] = part
                    for q in part:
                        classes[q] = fresh
                    moved.extend(part)
                    fresh += 1
        if not moved:
            return classes
        touched = {r for q in moved for r in readers[q] if r not in initial}
        for r in touched:
            signature[r] = _signature(writers[r], classes)
        dirty = {classes[r] for r in touched}
    return None


def _representatives(dt: DT, classes: dict[str, int]) -> dict[str, str]:
    """``{q: r}`` for every state q dropped for its class's representative r."""
    final, initial = set(dt.final), set(dt.initial)
    first: dict[int, str] = {}
    for q in (*dt.final, *dt.states):
        first.setdefault(classes[q], q)
    return {q: first[classes[q]] for q in dt.states
            if q not in initial and q not in final and first[classes[q]] != q}
