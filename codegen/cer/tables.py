"""The match kernel's tables: a position automaton flattened into numpy arrays.

Pipeline position: :class:`~dt.cer.automaton.Automaton` → **:class:`MatchTables`** →
:mod:`codegen.cer.kernel`.

Layout (P positions, T transitions sorted by target, K Within scopes, C conditions):

==================  ==========  ===============================================
array               dtype       meaning
==================  ==========  ===============================================
``cond``            int32[P]    the condition a position's event satisfies
``initial``         bool[P]     a match may start at the position
``final``           bool[P]     a match may end at the position
``in_scope``        bool[P, K]  the position lies in scope k
``name_rank``       int32[P]    rank of the position's variable name (sorted)
``in_ptr``          int32[P+1]  transitions into q: ``in_ptr[q]:in_ptr[q+1]``
``src``, ``dst``    int32[T]    p and q of transition t
``mode``            int8[T]     0 strict, 1 next, 2 any
``forbid_ptr``      int32[T+1]  its forbidden conditions: ``forbid[forbid_ptr[t]:…]``
``forbid``          int32[·]    condition numbers
``exclude_ptr``     int32[T+1]  conditions q's event must not satisfy (greedy)
``exclude``         int32[·]    condition numbers
``gap``             int64[T]    its Gap bound in δ, −1 for none
``step``            int8[T, K]  0 none, 1 internal, 2 enters scope k
``duration``        int64[K]    each scope's bound in δ
``transition_of``   int32[P, P] the transition p → q, −1 for none
==================  ==========  ===============================================

``whole`` is the scope of the query's own ``within`` (−1 for none), ``within`` its
duration (0 for none), ``ending`` the
conditions of a negation at the end (int32[·]).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dt.cer.automaton import Automaton
from dt.cer.pattern import Contiguity, MatchQuery, SkipKind

__all__ = ["MODE", "SKIP", "MatchTables", "match_tables"]

MODE = {Contiguity.STRICT: 0, Contiguity.NEXT: 1, Contiguity.ANY: 2}
SKIP = {SkipKind.NO_SKIP: 0, SkipKind.TO_NEXT: 1, SkipKind.PAST_LAST: 2,
        SkipKind.TO_FIRST: 3, SkipKind.TO_LAST: 4}


@dataclass(frozen=True, eq=False)
class MatchTables:
    """The arrays of the module docstring, and the query's policies."""

    cond: np.ndarray
    initial: np.ndarray
    final: np.ndarray
    in_scope: np.ndarray
    name_rank: np.ndarray
    in_ptr: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    mode: np.ndarray
    forbid_ptr: np.ndarray
    forbid: np.ndarray
    exclude_ptr: np.ndarray
    exclude: np.ndarray
    gap: np.ndarray
    step: np.ndarray
    duration: np.ndarray
    transition_of: np.ndarray
    whole: int
    within: int
    ending: np.ndarray
    skip: int
    skip_names: np.ndarray
    consume: bool
    timeouts: bool
    names: tuple[str, ...]
    position_names: tuple[str, ...]

    @property
    def n_positions(self) -> int:
        return len(self.cond)


def match_tables(query: MatchQuery, auto: Automaton) -> MatchTables:
    """Flatten ``auto`` (the automaton of ``query``)."""
    positions, ts = auto.positions, auto.transitions
    n, k = len(positions), len(auto.scopes)
    names = tuple(sorted({p.name for p in positions}))
    in_scope = np.zeros((n, k), dtype=np.bool_)
    for q, p in enumerate(positions):
        in_scope[q, sorted(p.scopes)] = True
    in_ptr = np.zeros(n + 1, dtype=np.int32)
    for t in ts:
        in_ptr[t.target + 1] += 1
    transition_of = np.full((n, n), -1, dtype=np.int32)
    for i, t in enumerate(ts):
        transition_of[t.source, t.target] = i
    forbid = [sorted(t.forbid) for t in ts]
    exclude = [sorted(t.exclude) for t in ts]
    skip_var = query.skip.var
    return MatchTables(
        cond=np.array([p.cond for p in positions], dtype=np.int32),
        initial=np.isin(np.arange(n), auto.initial),
        final=np.isin(np.arange(n), auto.final),
        in_scope=in_scope,
        name_rank=np.array([names.index(p.name) for p in positions], dtype=np.int32),
        in_ptr=np.cumsum(in_ptr, dtype=np.int32),
        src=np.array([t.source for t in ts], dtype=np.int32),
        dst=np.array([t.target for t in ts], dtype=np.int32),
        mode=np.array([MODE[t.contiguity] for t in ts], dtype=np.int8),
        forbid_ptr=np.cumsum([0, *map(len, forbid)], dtype=np.int32),
        forbid=np.array([c for f in forbid for c in f], dtype=np.int32),
        exclude_ptr=np.cumsum([0, *map(len, exclude)], dtype=np.int32),
        exclude=np.array([c for f in exclude for c in f], dtype=np.int32),
        gap=np.array([-1 if t.gap is None else t.gap for t in ts], dtype=np.int64),
        step=np.array([[s.value for s in t.steps] for t in ts], dtype=np.int8).reshape(len(ts), k),
        duration=np.array([s.duration for s in auto.scopes], dtype=np.int64),
        transition_of=transition_of,
        whole=-1 if auto.whole is None else auto.whole,
        within=0 if query.within is None else query.within,
        ending=np.array(sorted(query.ending), dtype=np.int32),
        skip=SKIP[query.skip.kind],
        skip_names=np.array([p.name == skip_var for p in positions], dtype=np.bool_),
        consume=query.consume,
        timeouts=query.timeouts,
        names=names,
        position_names=tuple(p.name for p in positions),
    )


