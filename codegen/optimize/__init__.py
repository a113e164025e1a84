"""DT optimizer: exact rewrites of a data transducer before it is flattened.

Pipeline position: text → AST → typed AST → DT (package ``dt``, the
constructions of seed 003 §5.2) → **optimized DT** → tables
(:func:`codegen.tables.flatten`) → kernel → Spark.

The constructions of §5.2 are succinct but not lean: every parallel
composition, union, concatenation and iteration glues its components with
epsilon copies ``(ε, p', q', p')``, and the compiled queries carry constant
terms, states that nothing defines and branches nothing reads. Each pass below
is one pure function ``DT -> DT`` in its own module, whose docstring states the
rule, why it is *exact* (seed 003, §5.1, Equation (1)) and its preconditions:

* :func:`fold_constants` — evaluate constant subterms with the operations of
  :data:`dt.terms.OPS` (same IEEE bits), pick the branch of a constant ``if``,
  and reduce ``fst``/``snd``; never touches a source list;
* :func:`propagate_constants` — a state that only ever holds one constant (a ``0``
  the constructions copy from state to state) is read as that constant, its
  sources kept;
* :func:`collapse_copies` — a non-initial state that is, on every label, the
  copy of one other state is replaced by it in every read (chains fully);
* :func:`merge_equivalent` — states written by the same transitions up to a
  stable partition (the copies of a sub-query the constructions make) are
  merged into one;
* :func:`inline_single_use` — a state written by one transition and read (primed)
  by one other is substituted into its reader;
* :func:`prune_dead` — remove transitions that never fire non-⊥ and states that
  are never non-⊥ (a per-label least fixpoint, initial states seeded at every
  step because of restarts, Definition 5.4);
* :func:`prune_useless` — remove states that no final state depends on.

One more pass is not in a round: :func:`break_copy_cycles` rewrites a cycle of
epsilon copies without initial states (⊥ or ⊤ as a whole) so that no within-step
cycle is left. It may add transitions (each entry of the cycle, twice), so it is
not in a round; the compiler runs it on the DT a support construction reads
(:mod:`dt.support` unrolls cyclic DTs, quadratically).

:func:`optimize` runs the passes in that order, round after round, until a round
changes nothing (at most :data:`MAX_ROUNDS`): pruning can leave a state with a
single copy writer, collapsing can leave a copy useless. Then it breaks the copy
cycles left and runs the rounds again, and keeps that DT if it is smaller: once
a cycle is one state's entries, the rest of it are copies and its states are ⊥ or
⊤ together, which the rounds fold away (the iterations of ``benchmarks/compile_cost.py``'s
``eps fill 24``: 1,060 states to 423; a kernel step of a cyclic block is a Kleene
iteration, of an acyclic one a single pass).

Exactness, for every pass and so for :func:`optimize`: for every initial vector
and every word, with restarts (``dt.reference.step(..., restart=x)``) or not,
the outputs after every prefix are the same, status and value bit for bit.
The interface is kept: the same alphabet, ``initial`` and ``final`` in the same
order, kept states in their original order under their original names, the
same ``facts``. Transitions are never merged, even when identical: two writers
giving d give d ⊔ d = ⊤. The optimized DT may read fewer event fields than the
original (a removed or folded-away term read them).

Cost: each pass is linear in the DT's size (times the number of labels for the
per-label passes); :func:`optimize` is a few rounds of them — well under a
second for compiled DTs of ~10k states.
"""

from __future__ import annotations

from collections.abc import Callable

from dt.model import DT

from .break_copy_cycles import break_copy_cycles
from .collapse_copies import collapse_copies
from .fold_constants import fold_constants
from .inline_single_use import inline_single_use
from .merge_equivalent import merge_equivalent
from .propagate_constants import propagate_constants
from .prune_dead import prune_dead
from .prune_useless import prune_useless

__all__ = ["MAX_ROUNDS", "PASSES", "break_copy_cycles", "collapse_copies", "fold_constants",
           "inline_single_use", "merge_equivalent", "optimize", "propagate_constants",
           "prune_dead", "prune_useless"]

PASSES: tuple[Callable[[DT], DT], ...] = (fold_constants, propagate_constants, collapse_copies,
                                           merge_equivalent, inline_single_use, prune_dead,
                                           prune_useless)
"""The passes of one round, in order."""

MAX_ROUNDS = 16
"""Rounds after which :func:`optimize` stops even if the last round changed something."""


def optimize(dt: DT) -> DT:
    """Run :data:`PASSES` until a round changes nothing (at most :data:`MAX_ROUNDS`), then
    again after :func:`break_copy_cycles` if that makes the DT smaller.

    >>> from codegen.optimize._common import from_dump
    >>> d = from_dump('''
    ...   alphabet: a
    ...   states:   i, c, d, s, u, f
    ...   initial:  i
    ...   final:    f
    ...     eps: {i'} -> c' := i'
    ...     a: {c} -> s' := c + cur * (2 - 1)
    ...     a: {d} -> s' := d
    ...     a: {s'} -> u' := -s'
    ...     eps: {s'} -> f' := s'
    ... ''')
    >>> print(optimize(d).dump())
    alphabet: a
    states:   i, f
    initial:  i
    final:    f
    size:     9 (2 states, 1 transitions)
      a: {i} -> f' := i + cur * 1
    """
    dt = _rounds(dt)
    broken = break_copy_cycles(dt)
    if broken is not dt:
        broken = _rounds(broken)
        if broken.size < dt.size:
            return broken
    return dt


def _rounds(dt: DT) -> DT:
    """Run :data:`PASSES` until a round changes nothing (at most :data:`MAX_ROUNDS`)."""
    for _ in range(MAX_ROUNDS):
        before = dt
        for run_pass in PASSES:
            dt = run_pass(dt)
        if dt == before:
            break
    return dt
