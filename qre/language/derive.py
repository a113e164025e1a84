"""Derived tags: field predicates evaluated per event before the DT (issue 7, point 3).

Pipeline position: events (tag codes and data) → **tag codes** → the DT.
``tag hot = reading where cur.temp > 30;`` gives an event of tag ``reading``
whose ``temp`` exceeds 30 the tag ``hot`` instead; without ``SOURCE where``
any event qualifies. Declarations are tried in order and the first whose
source matches and whose predicate is true (non-zero, as ``if`` and the
connectives read it: NaN is true, a comparison with NaN is 0) wins; an event
that none matches keeps its tag. The DT then sees one tag per event, so it
stays a DT over a finite alphabet: predicates on data become letters.

Map and Filter, the other stateless operators of seed 004, need nothing new:
Map is the term of an atom (``atom(hot, cur.temp * 1.8 + 32)``), Filter a
derived tag that the query reads while ignoring the others
(``aggregate(max(cur.temp), 1min, [hot])``, or atoms of that tag only).

The predicates are evaluated by the table engine over a one-state-per-tag
DT, so they have exactly the semantics of DT terms, vectorised. Cost: one
kernel pass over the events per call, a few operations per predicate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from dt.model import DT, Transition

from .ast import ANY_TAG, TagDecl

__all__ = ["Derivation", "derivation"]

_EVENT = "event"


@dataclass(frozen=True)
class Derivation:
    """The derived tags of a query over its alphabet (codes index ``alphabet``)."""

    tags: tuple[TagDecl, ...]
    alphabet: tuple[str, ...]

    @cached_property
    def predicates(self) -> DT:
        """A DT whose output k is predicate k at every event (sources: none)."""
        states = tuple(f"p{k}" for k in range(len(self.tags)))
        transitions = tuple(Transition(_EVENT, frozenset(), q, d.predicate)
                            for q, d in zip(states, self.tags, strict=True))
        return DT((_EVENT,), states, (), states, transitions)

    @cached_property
    def monitor(self) -> Any:
        """The predicates as a Monitor (its data needs say which values to pass)."""
        from ..runtime.monitor import Monitor

        return Monitor.from_dt(self.predicates, optimize=False)

    def apply(self, codes: np.ndarray, values: Any, engine: str = "table") -> np.ndarray:
        """``codes`` with each event's derived tag where a declaration matches it."""
        n = len(codes)
        if n == 0:
            return codes
        truth = self.monitor.run(np.zeros(n, dtype=np.int64), values, engine=engine)
        holds = (truth.value != 0).reshape(n, len(self.tags))  # NaN is true, as in terms
        out = codes.copy()
        decided = codes < 0  # a skipped event stays skipped
        for k, d in enumerate(self.tags):
            match = holds[:, k] & ~decided
            if d.source != ANY_TAG:
                match &= codes == self.alphabet.index(d.source)
            out[match] = self.alphabet.index(d.name)
            decided |= match
        return out


def derivation(tags: Sequence[TagDecl], alphabet: Sequence[str]) -> Derivation | None:
    """The :class:`Derivation` of ``tags``, or None when there are none."""
    return Derivation(tuple(tags), tuple(alphabet)) if tags else None
