"""Making a DT restartable (seed 003, §5.2.2, last paragraph): DT → CRA → restartable DT.

Theorem 5.8's two translations composed: :func:`~dt.cra.from_dt.cra_from_dt`
(exponential in general) then :func:`~dt.cra.to_dt.cra_to_dt` (linear).
The result computes the same outputs as the DT on every initial vector a
restarted thread can start with — all ⊥, or none ⊥ (Definition 5.4's X) —
and is restartable by construction. Mixed vectors (some inputs ⊥) give ⊥.

A DT has a restartable equivalent only if (i) with every input ⊥ it never
outputs (Definition 5.4 (i) with no thread) and (ii) started with two threads'
union it outputs the union of their outputs. The conversion checks (i) on the
CRA, and then checks the result against the DT on statuses for every restart
vector's statuses (:func:`dt.equivalence.status_equivalent`, Theorem 5.3):
the values are equal by construction (the same terms, per thread). A
difference is reported with its tag string; with one input it shows that (ii)
fails, so no restartable DT is equivalent.

Cost (:class:`Conversion`): the CRA's control states (at most 2^|Q|) and the
sizes before and after; the status checks explore pairs of configurations.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from ..equivalence import status_equivalent
from ..model import DT
from ..restartability import restart_vectors
from .from_dt import cra_from_dt
from .model import CRA
from .to_dt import NoRestartableForm, cra_to_dt

__all__ = ["Conversion", "make_restartable"]

log = logging.getLogger(__name__)

_STATUS = "⊥⋆⊤"


@dataclass(frozen=True)
class Conversion:
    """A restartable DT equivalent to ``original`` on restart vectors, and what it cost."""

    original: DT
    cra: CRA
    dt: DT
    seconds: float

    def summary(self) -> str:
        """One line: sizes and control states."""
        return (f"restartable form: size {self.original.size} -> {self.dt.size} "
                f"({len(self.original.states)} -> {len(self.dt.states)} states) through a CRA "
                f"of {len(self.cra.states)} control states, in {self.seconds:.3f} s")


def make_restartable(dt: DT, *, max_states: int = 100_000) -> Conversion:
    """Convert ``dt`` (module docstring). Raises :class:`~dt.cra.to_dt.NoRestartableForm`
    (a :class:`~dt.errors.PreconditionError`) with the tag string and input statuses that
    show why, or a PreconditionError when the CRA exceeds ``max_states``."""
    began = time.perf_counter()
    cra = cra_from_dt(dt, max_states=max_states)
    result = cra_to_dt(cra)
    if len(dt.final) > 1:  # the same outputs on restart vectors: the same synchronization
        result = result.with_facts(output_synchronized=dt.facts.output_synchronized)
    for v in restart_vectors(len(dt.initial)):
        answer = status_equivalent(dt, result, v, v)
        if not answer.equivalent:
            assert answer.statuses is not None and answer.counterexample is not None
            shown = "".join(_STATUS[s] for s in v)
            got, want = ("".join(_STATUS[s] for s in y) for y in answer.statuses)
            why = (": with one input, two threads' union differs from their outputs' union "
                   "(Definition 5.4 (ii)), so no restartable DT is equivalent"
                   if len(dt.initial) == 1 else
                   " (with several inputs, a ⊤ input reaches a constant's register)")
            raise NoRestartableForm(
                f"no restartable form found: on inputs {shown} after tags "
                f"({', '.join(answer.counterexample) or 'none'}) the DT outputs {got}, "
                f"the thread construction {want}{why}", answer.counterexample, tuple(v))
    seconds = time.perf_counter() - began
    conversion = Conversion(dt, cra, result, seconds)
    log.debug("%s", conversion.summary())
    return conversion
