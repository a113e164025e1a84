"""Dead code: transitions that never give a value, states that are never defined.

Rule. Compute which states are *possibly non-⊥*, per label, as a least fixpoint
(an over-approximation of the states that can be defined or ⊤):

* an initial state is possibly non-⊥ after *every* step, not only at ``init``:
  the update-with-restart of Definition 5.4 (§5.2.2) seeds the initial states
  mid-stream;
* q is possibly non-⊥ after a step with label σ (``init`` or a tag) if some
  transition of Δ_σ targeting q' has every primed source p' possibly non-⊥ after
  that same σ-step and every unprimed source p possibly non-⊥ after *some* step
  (the previous configuration came from any label, or from ``init``).

A transition is *live* if on some label it fires on, all its sources are
possibly non-⊥ as above; the others are removed. A state that is possibly
non-⊥ after no step is removed with its transitions, unless it is final (the
outputs are read by position: it stays, with no transition, always ⊥). An
epsilon transition is kept whole if it is live on one label: it is never split
per label (that would grow the DT).

Why it is exact (seed 003, §5.1, Equation (1)). A lifted term is ⊥ as soon as
one source is ⊥, and ⊥ is the identity of ⊔: a transition with a source that is
⊥ contributes nothing to its target's union. By induction on the Kleene
iteration of Equation (1) within a step, and on the steps, a state that is not
possibly non-⊥ is ⊥ in every configuration reached, for every initial vector
and every restart; so the removed transitions only ever contribute ⊥ and every
remaining state keeps its value. The analysis is a Horn-clause least model
(facts "q possibly non-⊥ after a σ-step"), solved in linear time by counting
the unmet sources of each clause.

Preconditions: none.

Cost: linear in the size of the DT times the number of labels (an epsilon
transition is one clause per label).
"""

from __future__ import annotations

from dt.model import DT, EPS, INIT

from ._common import rebuild

__all__ = ["live_labels", "prune_dead"]


def prune_dead(dt: DT) -> DT:
    """Remove transitions that never fire non-⊥ and states that are never non-⊥.

    >>> from codegen.optimize._common import from_dump
    >>> d = from_dump('''
    ...   alphabet: a, b
    ...   states:   i, n, s, t, f
    ...   initial:  i
    ...   final:    f
    ...     a: {i} -> s' := i + cur
    ...     a: {n} -> f' := n
    ...     b: {s'} -> t' := s'
    ...     eps: {t'} -> f' := t'
    ...     eps: {s'} -> f' := s'
    ... ''')
    >>> print(prune_dead(d).dump())
    alphabet: a, b
    states:   i, s, f
    initial:  i
    final:    f
    size:     11 (3 states, 2 transitions)
      a: {i} -> s' := i + cur
      eps: {s'} -> f' := s'

    ``n`` has no writer. ``t`` would copy ``s'`` on ``b``, but ``s`` is written on
    ``a`` only, so ``s'`` is always ⊥ on a ``b`` step: ``t`` is never defined.
    """
    live, possible = _liveness(dt, restarts=True, any_old_value=False)
    transitions = [t for t, labels in zip(dt.transitions, live, strict=True) if labels]
    return rebuild(dt, (q for q, ok in zip(dt.states, possible, strict=True) if ok), transitions)


def live_labels(dt: DT) -> list[frozenset[int]]:
    """Per transition, the labels (0 ``init``, ``1 + k`` tag k) on which it can be non-⊥
    in a step *without restarts* from *any* configuration — what an engine that never
    restarts may leave out of a label's schedule (:func:`codegen.tables.flatten`).

    The same least model as :func:`prune_dead`, with initial states seeded at ``init``
    only and every unprimed source assumed possibly non-⊥ (the previous configuration
    may be any, e.g. a restored ``Session.state``). A primed source p' is then ⊥ on a
    label unless that label can write p.

    >>> from codegen.optimize._common import from_dump
    >>> live_labels(from_dump('''
    ...   alphabet: a, b
    ...   states:   i, s, f
    ...   initial:  i
    ...   final:    f
    ...     a: {i} -> s' := i + cur
    ...     eps: {s'} -> f' := s'
    ... '''))
    [frozenset({1}), frozenset({1})]
    """
    return _liveness(dt, restarts=False, any_old_value=True)[0]


def _liveness(dt: DT, *, restarts: bool, any_old_value: bool
              ) -> tuple[list[frozenset[int]], list[bool]]:
    """(live labels per transition, possibly non-⊥ per state): the least model of the clauses.

    Atoms: ``l * n + q`` is "q possibly non-⊥ after a step with label l" (label 0
    is ``init``, label ``1 + k`` is tag k) and ``n_labels * n + q`` is "q possibly
    non-⊥ after some step". One clause per transition and label it fires on.
    ``restarts``: initial states are seeded on every label (Definition 5.4), else at
    ``init`` only; ``any_old_value``: every "after some step" atom holds from the start.
    """
    n = len(dt.states)
    labels = {INIT: 0} | {tag: 1 + k for k, tag in enumerate(dt.alphabet)}
    n_labels = len(labels)
    any_step = n_labels * n
    index = dt.state_index

    holds = bytearray((n_labels + 1) * n)
    watchers: dict[int, list[int]] = {}  # atom -> clauses with that atom in their body
    missing: list[int] = []  # per clause: body atoms not (yet) known to hold
    heads: list[int] = []
    owners: list[int] = []  # per clause: its transition
    ready: list[int] = []  # clauses whose body holds, heads still to assert

    for k, t in enumerate(dt.transitions):
        target = index[t.target]
        for label in range(n_labels) if t.on == EPS else (labels[t.on],):
            clause = len(heads)
            heads.append(label * n + target)
            owners.append(k)
            missing.append(len(t.sources))
            for v in t.sources:
                atom = (label if v.primed else n_labels) * n + index[v.name]
                watchers.setdefault(atom, []).append(clause)
            if not t.sources:
                ready.append(clause)

    pending: list[int] = []  # atoms that hold and whose watchers are not yet told

    def assert_atom(atom: int) -> None:
        if not holds[atom]:
            holds[atom] = 1
            pending.append(atom)

    for q in dt.initial:  # seeded at init and, by restarts, at every step
        for label in range(n_labels) if restarts else (0,):
            assert_atom(label * n + index[q])
    if any_old_value:
        for q in range(n):
            assert_atom(any_step + q)
    for clause in ready:
        assert_atom(heads[clause])
    while pending:
        atom = pending.pop()
        if atom < any_step:
            assert_atom(any_step + atom % n)
        for clause in watchers.get(atom, ()):
            missing[clause] -= 1
            if missing[clause] == 0:
                assert_atom(heads[clause])

    live: list[set[int]] = [set() for _ in dt.transitions]
    for clause, owner in enumerate(owners):
        if missing[clause] == 0:
            live[owner].add(heads[clause] // n)
    return [frozenset(x) for x in live], [bool(holds[any_step + q]) for q in range(n)]
