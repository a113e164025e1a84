"""Status-level equivalence of two DTs (seed 003, §5.1, Theorem 5.3).

Proof of Theorem 5.3: project both DTs to the unit signature (Theorem 5.2,
:mod:`dt.projection`); A1 and A2 differ on statuses iff their projections P1
and P2 differ, and the pair (P1, P2) has at most 3^(|Q1|+|Q2|) configurations,
so a difference, if any, shows on a tag string of bounded length. The paper
guesses it letter by letter (NPSPACE); here the *reachable* pairs of unit
configurations are searched breadth-first from the initial pair, in a fixed
tag order (sorted tag names), comparing the output statuses of every pair as
it is discovered. Breadth-first discovery reaches every pair of depth k
before any pair of depth k + 1, so the first differing pair found lies at the
least depth: its tag string is a *shortest* counterexample. When the search
exhausts the reachable pairs without a difference, the DTs are equivalent on
statuses for the given initial statuses and every tag string, whatever the
data (the projection is a homomorphism for statuses).

What this does *not* decide: equality of the data values themselves (that
needs reasoning about the operations; Theorem 5.3 is about the unit
projection). Two DTs computing ``x + cur`` and ``x * cur`` are
status-equivalent.

Cost: at most ``max_pairs`` pairs are kept (each a pair of tuples of |Q|
small ints); every pair is expanded once per tag, and the unit steps of each
DT are memoized per (configuration, tag), since one configuration of A1
typically pairs with several of A2.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from .model import DT
from .projection import UnitConfig, UnitEvaluator, status_vector, unit_evaluator
from .reference import evaluate
from .search import SearchLimitError, default_statuses, path_to, vector_with_statuses

__all__ = ["EquivalenceLimitError", "StatusEquivalence", "status_equivalent"]

log = logging.getLogger(__name__)

_Pair = tuple[UnitConfig, UnitConfig]


class EquivalenceLimitError(SearchLimitError):
    """The search met more than ``max_pairs`` reachable pairs without finding a difference.

    The answer is then unknown (neither equivalence nor a counterexample was
    established). ``explored`` is the number of pairs discovered.
    """

    def __init__(self, explored: int, max_pairs: int) -> None:
        super().__init__("equivalence", "pairs of configurations", explored, max_pairs)
        self.max_pairs = max_pairs


@dataclass(frozen=True)
class StatusEquivalence:
    """The answer of :func:`status_equivalent` (seed 003, Theorem 5.3, on the unit projection).

    When ``equivalent`` is true it is *proven* that, started from the given
    initial status vectors, the two DTs output the same status (⊥, defined or
    ⊤) at every final position after every tag string, the empty one included,
    whatever the data of the events and of the initial vectors (only their
    statuses matter, Theorem 5.2). Data values are not compared.

    Otherwise ``counterexample`` is a shortest tag string after which the
    output statuses differ (``()``: already on the empty stream), and
    ``statuses`` the two output status vectors there (codes 0 ⊥, 1 defined,
    2 ⊤, in the order of each DT's final states); both are ``None`` when
    equivalent. ``explored`` is the number of distinct pairs of unit
    configurations discovered by the search.
    """

    equivalent: bool
    counterexample: tuple[str, ...] | None
    statuses: tuple[tuple[int, ...], tuple[int, ...]] | None
    explored: int


def _check_interfaces(a: DT, b: DT) -> None:
    """Same alphabet as sets (orders may differ) and the same number of outputs."""
    if set(a.alphabet) != set(b.alphabet):
        only_a = sorted(set(a.alphabet) - set(b.alphabet))
        only_b = sorted(set(b.alphabet) - set(a.alphabet))
        raise ValueError(f"the DTs have different alphabets: only in the first: "
                         f"{', '.join(only_a) or '-'}; "
                         f"only in the second: {', '.join(only_b) or '-'}")
    if len(a.final) != len(b.final):
        raise ValueError(f"the DTs have different numbers of outputs: {len(a.final)} final "
                         f"states vs {len(b.final)}; outputs are compared in order")


class _Stepper:
    """Unit steps of one DT, memoized per (configuration, tag)."""

    def __init__(self, ev: UnitEvaluator) -> None:
        self._ev = ev
        self._memo: dict[tuple[UnitConfig, str], UnitConfig] = {}

    def step(self, config: UnitConfig, tag: str) -> UnitConfig:
        key = (config, tag)
        hit = self._memo.get(key)
        if hit is None:
            hit = self._memo[key] = self._ev.step(config, tag)
        return hit


def status_equivalent(a: DT, b: DT, x_status_a: Sequence[int] | None = None,
                      x_status_b: Sequence[int] | None = None, *,
                      max_pairs: int = 1_000_000) -> StatusEquivalence:
    """Decide status-level equivalence of ``a`` and ``b`` (Theorem 5.3); see the module docstring.

    ``x_status_a`` / ``x_status_b`` are the statuses (0 ⊥, 1 defined, 2 ⊤) of
    the initial vectors, one per initial state; by default all defined. Raises
    ValueError if the alphabets differ as sets or the numbers of final states
    differ, and :class:`EquivalenceLimitError` (a ValueError) if more than
    ``max_pairs`` reachable pairs are met before an answer. A counterexample is
    replayed on the reference evaluator before it is returned.
    """
    _check_interfaces(a, b)
    xa, xb = default_statuses(a, x_status_a), default_statuses(b, x_status_b)
    ev_a, ev_b = unit_evaluator(a), unit_evaluator(b)
    step_a, step_b = _Stepper(ev_a), _Stepper(ev_b)
    tags = sorted(a.alphabet)  # a fixed order makes the shortest counterexample deterministic
    start = (ev_a.initial(xa), ev_b.initial(xb))
    parents: dict[_Pair, tuple[_Pair, str] | None] = {start: None}
    work = deque([start])
    found: _Pair | None = start if ev_a.outputs(start[0]) != ev_b.outputs(start[1]) else None
    while work and found is None:
        pair = work.popleft()
        for tag in tags:
            succ = (step_a.step(pair[0], tag), step_b.step(pair[1], tag))
            if succ in parents:
                continue
            parents[succ] = (pair, tag)
            # Compared on discovery: every pair of depth k is discovered before
            # any pair of depth k + 1, so the first difference is a shortest one.
            if ev_a.outputs(succ[0]) != ev_b.outputs(succ[1]):
                found = succ
                break
            if len(parents) > max_pairs:
                raise EquivalenceLimitError(len(parents), max_pairs)
            work.append(succ)
    explored = len(parents)
    if found is None:
        log.debug("status-equivalent after %d pairs", explored)
        return StatusEquivalence(True, None, None, explored)
    word = path_to(parents, found)
    statuses = (ev_a.outputs(found[0]), ev_b.outputs(found[1]))
    _replay(a, b, xa, xb, word, statuses)
    log.debug("not status-equivalent after %d pairs: %s", explored, word)
    return StatusEquivalence(False, word, statuses, explored)


def _replay(a: DT, b: DT, xa: Sequence[int], xb: Sequence[int], word: tuple[str, ...],
            statuses: tuple[tuple[int, ...], tuple[int, ...]]) -> None:
    """Check a counterexample on the reference evaluator with data 0.0 everywhere.

    It must give the claimed output statuses after the whole word, and the
    same statuses on both DTs after every proper prefix (else the search was
    not breadth-first). A failure is a bug in this module or the projection.
    """
    data = [(tag, 0.0) for tag in word]
    out_a = [status_vector(y) for y in evaluate(a, vector_with_statuses(xa), data)]
    out_b = [status_vector(y) for y in evaluate(b, vector_with_statuses(xb), data)]
    if (out_a[-1], out_b[-1]) != statuses or statuses[0] == statuses[1]:
        raise AssertionError(f"counterexample {word} does not replay: the reference evaluator "
                             f"gives {out_a[-1]} vs {out_b[-1]}, the search claimed {statuses}")
    for k in range(len(word)):
        if out_a[k] != out_b[k]:
            raise AssertionError(f"counterexample {word} is not shortest: the statuses already "
                                 f"differ after {word[:k]}: {out_a[k]} vs {out_b[k]}")
