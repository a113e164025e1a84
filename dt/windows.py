"""Window aggregates as data transducers: seed 004's Aggregate A(Γ(WA, WS), f) (issue 7).

Meaning. The events of a key fall in window instances [l·WA, l·WA + WS),
aligned on the epoch and closed on the left (seed 000, §3; seed 004, §3.1);
with WS = k·WA every event is in k instances. An instance that holds events
outputs f of them, in event-time order, when it closes; an empty instance
outputs nothing.

Time reaches the DT as clock ticks (:mod:`qre.clock`): the runtime puts an
event of tag ``tick`` at every multiple of WA that a key's event time crosses,
before any event at the same time. Between two ticks the open instances are
exactly k, the same ones, so a DT with one register set per open instance
computes every window:

* slot 0 is the instance that closes at the next tick, slot k−1 the newest;
* an event of an aggregated tag folds ``update`` into every slot (a slot that
  is still empty starts from ``init``);
* a tick outputs ``output`` of slot 0 (⊥ if slot 0 is empty: its registers are
  ⊥) and shifts the slots: slot j takes slot j+1, slot k−1 opens empty.

An empty slot has ⊥ registers and a defined marker ``e``; a slot with events
has defined registers and a ⊥ marker, so exactly one of the two update
transitions of a register fires (no conflict). Events of other tags copy
every slot unchanged. The output register is written only by ticks: the DT's
output is ⊥ at events and at ticks that close an empty instance, which is how
"empty windows emit nothing" reaches the runtime.

Why one register set per open instance and not per pane (a pane = WA) with a
merge at each tick: every instance folds its own events in order, so the
value is bit for bit the sequential fold that a brute-force recomputation
does (a pane merge would re-associate float sums), and a user-defined fold
needs no merge function. The price is k updates per event instead of one;
the DT has k·(m+1) + 2 states for m registers.

Why a direct construction and not sugar: as QRE-Past, a tumbling window is a
split on the last tick and a sliding one k nested splits, each compiled with
its identity DT; the direct DT is linear in k·m and runs k·m transitions per
event.

Static facts. After k consecutive ticks with no aggregated event between them
every slot is empty: a further tick outputs ⊥ and changes only the output
register, which no transition reads. So the runtime may skip every tick of an
idle gap after the k-th (the clock's horizon, :class:`qre.clock.Clock`) and
compute the same outputs. The DT is not restartable (it is a top-level
query, never composed), and its facts say nothing about it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .builder import Builder
from .errors import DTError
from .model import DT
from .terms import Const, Term, Var

__all__ = ["TICK", "Fold", "window_aggregate"]

TICK = "tick"
"""The tag of a clock tick (reserved in a query that declares a period)."""


@dataclass(frozen=True)
class Fold:
    """An aggregation function f as a fold: registers, their initial values, one update
    term per register (over the registers and ``cur``) and an output term (registers).

    >>> from dt.terms import parse_term
    >>> mean = Fold(("s", "n"), (0.0, 0.0), (parse_term("s + cur"), parse_term("n + 1")),
    ...             parse_term("s / n"))
    >>> mean.registers
    ('s', 'n')
    """

    registers: tuple[str, ...]
    init: tuple[float, ...]
    update: tuple[Term, ...]
    output: Term

    def __post_init__(self) -> None:
        if not self.registers:
            raise DTError("a fold has at least one register")
        if len(set(self.registers)) != len(self.registers):
            raise DTError(f"fold registers must be distinct: {', '.join(self.registers)}")
        if not (len(self.init) == len(self.update) == len(self.registers)):
            raise DTError(f"a fold gives one initial value and one update term per register: "
                          f"{len(self.registers)} register(s), {len(self.init)} initial "
                          f"value(s), {len(self.update)} update term(s)")
        known = {Var(r) for r in self.registers}
        for what, term in [*(("update", u) for u in self.update), ("output", self.output)]:
            extra = term.variables() - known
            if extra:
                raise DTError(f"the {what} term {term} reads {', '.join(map(str, extra))}, "
                              f"which is not a register of the fold")
        if self.output.reads_cur():
            raise DTError(f"the output term {self.output} reads cur: it sees only registers")


def window_aggregate(alphabet: Iterable[str], fold: Fold, slots: int, *,
                     tags: Sequence[str] | None = None) -> DT:
    """The DT of A(Γ(WA, k·WA), fold) over ``alphabet`` (which holds :data:`TICK`):
    ``slots`` = k open instances; ``tags`` the tags whose events are aggregated
    (default: every tag but the tick). See the module docstring."""
    sigma = tuple(alphabet)
    if TICK not in sigma:
        raise DTError(f"a window aggregate needs the tag {TICK!r} in its alphabet")
    if slots < 1:
        raise DTError(f"a window spans at least one slide (slots = {slots})")
    folded = [t for t in sigma if t != TICK] if tags is None else list(tags)
    for t in folded:
        if t not in sigma or t == TICK:
            raise DTError(f"aggregated tag {t!r} is not an event tag of the alphabet")
    b = Builder(sigma)
    start = b.state("x")
    out = b.state("out")
    regs = [b.states(f"w{j}_{r}" for r in fold.registers) for j in range(slots)]
    empty = [b.state(f"e{j}_") for j in range(slots)]
    for e in empty:
        b.add("init", [Var(start, True)], e, Const(0.0))
    # Events: fold into every slot; other tags keep the slots.
    for tag in sigma:
        if tag == TICK:
            continue
        for slot, marker in zip(regs, empty, strict=True):
            if tag in folded:
                here = {Var(r): Var(q) for r, q in zip(fold.registers, slot, strict=True)}
                first = {Var(r): Const(v) for r, v in zip(fold.registers, fold.init,
                                                         strict=True)}
                for q, u in zip(slot, fold.update, strict=True):
                    b.add(tag, [Var(s) for s in slot], q, u.substitute(here))
                    b.add(tag, [Var(marker)], q, u.substitute(first))
            else:
                for q in (*slot, marker):
                    b.add(tag, [Var(q)], q, Var(q))
    # Ticks: output the closing slot, shift, open an empty newest slot.
    oldest = {Var(r): Var(q) for r, q in zip(fold.registers, regs[0], strict=True)}
    b.add(TICK, [Var(q) for q in regs[0]], out, fold.output.substitute(oldest))
    for j in range(slots - 1):
        for q, newer in zip((*regs[j], empty[j]), (*regs[j + 1], empty[j + 1]), strict=True):
            b.add(TICK, [Var(newer)], q, Var(newer))
    b.add(TICK, [], empty[-1], Const(0.0))
    return b.freeze([start], [out])
