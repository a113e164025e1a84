"""Window aggregates as data transducers: seed 004's Aggregate A(Γ(WA, WS), f) (issue 7).

Meaning. The events of a key fall in window instances [l·WA, l·WA + WS),
aligned on the epoch and closed on the left (seed 000, §2.1; seed 004, §2.1);
with WS = k·WA every event is in k instances. An instance that holds events
outputs f of them, in event-time order, when it closes; an empty instance
outputs nothing.

Time reaches the DT as clock ticks (:mod:`qre.language.clock`): the runtime puts an
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
split on the last tick — the sum is ``split(or(eps(0), split(any_word(),
atom(tick, 0), fst)), split(split(iter(atom(a, cur), 0, +), atom(a, cur), +),
atom(tick, 0), fst), snd)`` — and a sliding one k nested splits, each compiled
with its identity DT (quadratic, Theorem 5.7). Measured over the alphabet
(a, tick): that sugar compiles to a DT of size 277 (61 after the optimizer),
the direct one to 22 (tests/test_windows.py checks that both give the same
outputs). The direct DT is linear in k·m and runs k·m transitions per event.

Static facts. After k consecutive ticks with no aggregated event between them
every slot is empty: a further tick outputs ⊥ and changes only the output
register, which no transition reads. So the runtime may skip every tick of an
idle gap after the k-th (the clock's horizon, :class:`qre.language.clock.Clock`) and
compute the same outputs. The DT is not restartable (it is a top-level
query, never composed), and its facts say nothing about it.

The same folds also run over every event so far: :func:`event_fold` for the
pattern queries (top level, output after each event) and :func:`running_fold`
for the running folds of QRE-Past (``fold(...)`` as a query, and the ``var``
and ``std`` sugar): a restartable base DT whose output is defined on every
word, the empty one included, so that it composes like any base query.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .builder import Builder
from .errors import DTError
from .model import DT, EPS, INIT, Facts
from .terms import Const, Cur, Term, Var

__all__ = ["MAX_SLOTS", "START", "TICK", "Fold", "event_fold", "field_signal", "running_fold",
           "window_aggregate"]

MAX_SLOTS = 1_000
"""The most window instances open at once (size / slide) that a query may ask for.

The DT holds k·(m+1) + 2 states for k open instances and runs k·m updates per
event, so its size and every event's cost grow with k. On 2 shared cores
(benchmarks/RESULTS.md, compile-cost): 1,000 slots of ``count()`` build 2,002 states
in under a second, cost the table engine 25-90 µs per event or tick and compile to a
codegen kernel in about 1.5 minutes (in another process, :mod:`codegen.generated`);
10,000 build in 3 s but cost about 0.5 ms per step, and a kernel ten times as large;
100,000 took 31 s and 1.1 GB to build. :func:`qre.language.typing.check` refuses more
than 1,000, proposing a longer slide, until window state is held as data rather than
as DT states."""

TICK = "tick"
"""The tag of a clock tick (reserved in a query that declares a period)."""

START = Var("start")
"""A variable that update terms may read: the weight of a match starting at this
event (:mod:`qre.language.patterns`). The constructions replace it: :func:`window_aggregate`
by 1 in the newest slot and 0 in the others (a window reports the matches that
start in its first slide), :func:`event_fold` by the term it is given."""


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
    by_tag: tuple[tuple[str, tuple[Term, ...]], ...] = ()
    """Update terms for particular tags, replacing ``update`` at their events."""

    def __post_init__(self) -> None:
        if not self.registers:
            raise DTError("a fold has at least one register")
        if len(set(self.registers)) != len(self.registers) or START.name in self.registers:
            raise DTError(f"fold registers must be distinct and not {START.name!r}: "
                          f"{', '.join(self.registers)}")
        updates = [self.update, *(u for _, u in self.by_tag)]
        if not (len(self.init) == len(self.registers)
                and all(len(u) == len(self.registers) for u in updates)):
            raise DTError(f"a fold gives one initial value and one update term per register: "
                          f"{len(self.registers)} register(s), {len(self.init)} initial "
                          f"value(s), {len(self.update)} update term(s)")
        known = {Var(r) for r in self.registers} | {START}
        terms = [("update", u) for us in updates for u in us]
        for what, term in [*terms, ("output", self.output)]:
            extra = term.variables() - known
            if extra:
                raise DTError(f"the {what} term {term} reads {', '.join(map(str, extra))}, "
                              f"which is not a register of the fold")
        if self.output.reads_cur() or START in self.output.variables():
            raise DTError(f"the output term {self.output} reads cur or start: it sees only "
                          "registers")

    def updates(self, tag: str) -> tuple[Term, ...]:
        """The update terms at an event of ``tag``."""
        return dict(self.by_tag).get(tag, self.update)

    def renamed(self, names: Sequence[str], start: Term) -> tuple[dict[Var, Term], dict[Var, Term]]:
        """Substitutions: registers → ``names`` (as variables) and → initial values, both
        with :data:`START` → ``start``."""
        here: dict[Var, Term] = {Var(r): Var(q) for r, q in zip(self.registers, names,
                                                                strict=True)}
        first: dict[Var, Term] = {Var(r): Const(v) for r, v in zip(self.registers, self.init,
                                                                   strict=True)}
        return {**here, START: start}, {**first, START: start}


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
        for j, (slot, marker) in enumerate(zip(regs, empty, strict=True)):
            if tag in folded:
                here, first = fold.renamed(slot, Const(1.0 if j == slots - 1 else 0.0))
                for q, u in zip(slot, fold.updates(tag), strict=True):
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


def event_fold(alphabet: Iterable[str], fold: Fold, start: Term) -> DT:
    """A fold over every event, output after each one (R-CER: a per-key stateful function
    over the events in order, its output stamped with the event's time).

    The registers start at ``fold.init``; an event of tag σ sets them to
    ``fold.updates(σ)`` with :data:`START` replaced by ``start`` (a term over cur), and
    the output is ``fold.output`` of the new registers. Size linear in the fold's terms
    times the alphabet.
    """
    b, x, out, regs = _fold_states(alphabet, fold)
    for q, v in zip(regs, fold.init, strict=True):
        b.add("init", [Var(x, True)], q, Const(v))
    new = {Var(r): Var(q, True) for r, q in zip(fold.registers, regs, strict=True)}
    for tag in b.alphabet:
        _update(b, tag, fold, regs, start)
        b.add(tag, new.values(), out, fold.output.substitute(new))
    return b.freeze([x], [out])


def running_fold(alphabet: Iterable[str], fold: Fold) -> DT:
    """A fold over every event so far as a base DT ``x ⇉ out`` (a QRE-Past base query of
    rate Σ*): on the empty word the output is ``fold.output`` of ``fold.init``, after each
    event ``fold.output`` of the updated registers. The updates must not read
    :data:`START` (there is no match to start).

    Unlike :func:`event_fold`, the registers are set from ``x'`` by *epsilon* transitions,
    so a value placed on x in the middle of a run (a restart, §5.2.2) starts a fresh
    thread at init. Restartable (Definition 5.4): every update reads all the registers,
    so the registers are ⊥ with no thread (nothing else writes them), defined with one,
    and ⊤ — all of them, from then on — with two or more (the fresh thread's initial
    value meets the older thread's update); the output is then ⊤, which is the union
    of two threads' outputs, both defined on every word. Size: 2 + m + m·3 + |Σ|·Σ_j(m +
    1 + size(u_j)) + m + 1 + size(out) for m registers.
    """
    for u in (u for us in (fold.update, *(u for _, u in fold.by_tag)) for u in us):
        if START in u.variables():
            raise DTError(f"the update {u} reads {START.name}: a running fold starts no match")
    b, x, out, regs = _fold_states(alphabet, fold)
    for q, v in zip(regs, fold.init, strict=True):
        b.add(EPS, [Var(x, True)], q, Const(v))
    for tag in b.alphabet:
        _update(b, tag, fold, regs, Const(0.0))
    new = {Var(r): Var(q, True) for r, q in zip(fold.registers, regs, strict=True)}
    b.add(EPS, new.values(), out, fold.output.substitute(new))
    return b.freeze([x], [out], Facts(restartable=True, output_synchronized=True))


def _fold_states(alphabet: Iterable[str], fold: Fold) -> tuple[Builder, str, str, tuple[str, ...]]:
    """A builder with the input x, the output and one state per register."""
    b = Builder(tuple(alphabet))
    x = b.state("x")
    out = b.state("out")
    return b, x, out, b.states(f"r_{r}" for r in fold.registers)


def _update(b: Builder, tag: str, fold: Fold, regs: tuple[str, ...], start: Term) -> None:
    """The update transitions at ``tag``, each strict in every register and reading their
    old values (the updates are simultaneous)."""
    here, _ = fold.renamed(regs, start)
    for q, u in zip(regs, fold.updates(tag), strict=True):
        b.add(tag, [Var(s) for s in regs], q, u.substitute(here))


def field_signal(alphabet: Iterable[str], field: str, empty: float | None,
                 tags: Iterable[str] | None = None) -> DT:
    """A signal that a stage before the DT computes (issue 23: a sliding window's
    aggregate, :mod:`dt.window_aggregates`): after every event of ``tags`` (default: any
    tag) the event's field ``field``, ⊥ after others; on the empty word ``empty`` (None:
    ⊥).

    Two states ``i ⇉ f``: ``(init, {i'}, f', empty)`` and per tag ``(σ, {}, f',
    cur.field)``. A top-level query (it reads the key's whole stream, and does not
    restart with a split's restart), so no facts.
    """
    alphabet = tuple(alphabet)
    b = Builder(alphabet)
    i, f = b.state("i"), b.state("f")
    if empty is not None:
        b.add(INIT, [Var(i, primed=True)], f, Const(float(empty)))
    for tag in alphabet if tags is None else tags:
        b.add(tag, [], f, Cur(field))
    return b.freeze([i], [f])
