"""Monitors as DGS programs: the dependence and the fork/join a DT allows (issue 25, point 4).

A monitor reads one stream. Some of its tags may still be processed in parallel: a
tag σ is *parallel* when, from every configuration the DT can reach (their statuses,
Theorem 5.2), an event of σ

* leaves every output undefined (so no output depends on where it ran), and changes
  each defined register in one of three ways, the same for every parallel tag:
* *invariant*: the register keeps its value;
* *fold*: ``r' = r ⊕ t`` with ⊕ one of ``+``, ``min``, ``max`` and ``t`` a term of
  the event's data only (sums, counts, extrema of what the parallel events carry);
* *stable*: ``r'`` is one term of invariant registers and constants (a flag, a copy
  of an invariant, a register made undefined): after one parallel event or many,
  in any order, it holds the same;

and the statuses after one parallel event are those after any further ones. The
other tags *synchronize*: they depend on every tag. Parallel tags are independent of
each other. A fork gives the synchronizing side the state and the other side the
same with each fold at its identity (−0.0 for ``+``, +∞ for ``min``, −∞ for
``max``); a join folds the folds, keeps the invariants, and takes a stable register
from a side that saw an event (:func:`monitor_spec`).

Floating point makes ⊕ exact only on some data: ``+`` reassociates exactly when
every operand is an integer and the sum of their magnitudes stays below 2^53, and
``min``/``max`` unless +0.0 and −0.0 both occur. The state carries that *witness*
per fold; a synchronizing event whose joined state lacks it outputs
:data:`INEXACT` instead of its outputs, and the runner falls back to the sequential
run (same outputs bit for bit, always).

:func:`derive` is the analysis (it says why a tag is not parallel);
:func:`monitor_spec` the specification. Its ``update`` takes the reference evaluator's
step (:mod:`dt.reference`) for a synchronizing event and for the first parallel event
after a fork or a synchronizing one; after that, the statuses being fixed, a parallel
event only applies its folds (the derivation's ``folds_at``), and a leaf's long run of
them goes through a compiled kernel when there is one (``advance``).
The consistency checker and the runtimes test the derivation against the DT's own
semantics (tests/test_dgs_monitors.py).

Cost: the analysis explores the DT's reachable status configurations (up to
``limit``) with one symbolic step per configuration and tag (:mod:`dt.symbolic`).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from ..model import DT
from ..projection import unit_evaluator
from ..reference import Config, initial_config, outputs, step
from ..symbolic import SYM_BOT, SYM_TOP, SymbolicEvaluator, TermTable
from ..terms import OPS, Const, Cur, Term, evaluate_term, parse_term
from ..values import XValue, status_of
from .spec import Event, Spec, Tag, one_state

INVARIANT, FOLD, STABLE = "invariant", "fold", "stable"
IDENTITY = {"add": -0.0, "min": math.inf, "max": -math.inf}
EXACT_SUM = 2.0 ** 53

KERNEL_RUN = 256
"""The shortest run of parallel events that a leaf advances with the kernel."""

INEXACT = ("inexact",)
"""The output of a synchronizing event whose joined state is not exact (see above)."""


@dataclass(frozen=True)
class Register:
    """How parallel events change one register: its kind, and a fold's op and term."""

    kind: str
    op: str | None = None
    terms: tuple[tuple[str, Term], ...] = ()  # a fold's term per parallel tag


@dataclass(frozen=True)
class Derivation:
    """The parallel and synchronizing tags of a DT, how parallel events change each
    register, and why each synchronizing tag is not parallel."""

    dt: DT
    parallel: tuple[str, ...]
    sync: tuple[str, ...]
    registers: dict[int, Register] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    # Per status configuration that parallel events leave as it is, and per parallel
    # tag: the folds (register, op, term) such an event applies — all it changes.
    folds_at: dict[tuple, dict[str, tuple]] = field(default_factory=dict)

    @property
    def parallelizable(self) -> bool:
        return bool(self.parallel)

    def why_not(self) -> str:
        """Why no tag is parallel (or why the listed ones are not)."""
        return "; ".join(f"{tag}: {why}" for tag, why in self.reasons.items())


def derive(dt: DT, limit: int = 4096) -> Derivation:
    """Parallel tags (module docstring) and how their events change the registers.

    Greedy: starting from every tag, the first tag that fails is dropped (with the
    reason) until the rest pass together — a register must be changed alike by every
    parallel tag, so a tag may fail only beside another."""
    configs = _reachable(dt, limit)
    if configs is None:
        return Derivation(dt, (), dt.alphabet,
                          reasons={t: f"more than {limit} status configurations"
                                   for t in dt.alphabet})
    candidates = list(dt.alphabet)
    reasons: dict[str, str] = {}
    while candidates:
        found = _classify(dt, configs, candidates)
        if isinstance(found, _Refusal):
            reasons[found.tag] = found.why
            candidates.remove(found.tag)
            continue
        kinds, folds_at = found
        sync = tuple(t for t in dt.alphabet if t not in candidates)
        return Derivation(dt, tuple(candidates), sync, kinds, reasons, folds_at)
    return Derivation(dt, (), dt.alphabet, {}, reasons)


def _reachable(dt: DT, limit: int) -> list[tuple] | None:
    unit = unit_evaluator(dt)
    start = unit.initial([1] * len(dt.initial))
    seen, queue = {start}, deque([start])
    while queue:
        u = queue.popleft()
        for tag in dt.alphabet:
            v = unit.step(u, tag)
            if v not in seen:
                if len(seen) >= limit:
                    return None
                seen.add(v)
                queue.append(v)
    return sorted(seen)


class _Refusal(NamedTuple):
    """A tag that cannot be parallel beside the others, and why."""

    tag: str
    why: str


def _classify(dt: DT, configs: list[tuple], tags: list[str]
              ) -> tuple[dict[int, Register], dict] | _Refusal:
    """The registers' kinds and the folds at each fixed status configuration if every
    tag of ``tags`` is parallel, else the first refusal."""
    unit = unit_evaluator(dt)
    table = TermTable()
    symbolic = SymbolicEvaluator(dt, table)
    final = {dt.state_index[q] for q in dt.final}
    skipped = final | temporaries(dt)
    kinds: dict[int, Register] = {}
    folds_at: dict[tuple, dict[str, tuple]] = {}
    for u in configs:  # first the tags that fail alone
        for tag in tags:
            if any(unit.step(u, tag)[p] != 0 for p in final):
                return _Refusal(tag, "its events have an output")
    for u in configs:
        after = {tag: unit.step(u, tag) for tag in tags}
        for tag in tags:
            if after[tag] != after[tags[0]]:
                return _Refusal(tag, f"its events leave other statuses than {tags[0]}'s")
            if any(unit.step(after[tag], other) != after[tag] for other in tags):
                return _Refusal(tag, "the statuses after its events change with more "
                                      "parallel events")
        symbols = tuple(SYM_BOT if s == 0 else SYM_TOP if s == 2 else table.symbol(f"r{p}")
                        for p, s in enumerate(u))
        for tag in tags:
            new = symbolic.step(symbols, tag, lambda name: table.symbol(_cur(name)))
            found = {p: _register(table, symbols, p, new[p], u[p], after[tag][p], tag)
                     for p in range(len(u)) if p not in skipped}
            for p, kind in found.items():
                if isinstance(kind, str):
                    return _Refusal(tag, f"register {dt.states[p]}: {kind}")
                if kind is not None and kind.kind == STABLE and new[p] >= 0:
                    reads = {int(name[1:]) for name in table.symbols([new[p]])}
                    moving = [q for q in reads
                              if q not in skipped and found.get(q) != Register(INVARIANT)]
                    if moving:
                        return _Refusal(tag, f"register {dt.states[p]} is set from "
                                             f"{dt.states[moving[0]]}, which its events change")
                merged = _merge(kinds.get(p), kind)
                if merged is None:
                    return _Refusal(tag, f"register {dt.states[p]} is {_show(kind)} under it "
                                         f"but {_show(kinds[p])} elsewhere")
                kinds[p] = merged
            if after[tag] == u:  # a fixed configuration: its events only fold
                folds_at.setdefault(u, {})[tag] = tuple(
                    (p, k.op, k.terms[0][1]) for p, k in found.items()
                    if k is not None and k.kind == FOLD)
    for p in range(len(dt.states)):
        if p in skipped or p not in kinds:
            kinds[p] = Register(STABLE)
    return kinds, folds_at


def temporaries(dt: DT) -> set[int]:
    """Registers that carry nothing from one event to the next: not final, and read by
    no transition as an old (unprimed) value — a step's scratch values."""
    read = {v.name for t in dt.transitions for v in t.sources if not v.primed}
    return {dt.state_index[q] for q in dt.states if q not in read and q not in dt.final}


def _cur(field_name: str | None) -> str:
    return "cur" if field_name is None else f"cur.{field_name}"


def _is_data(symbol: str) -> bool:
    return symbol == "cur" or symbol.startswith("cur.")


def _register(table: TermTable, symbols: tuple, p: int, node: int, before: int, after: int,
              tag: str) -> Register | str | None:
    """How one event of ``tag`` changes register ``p`` from one configuration: a kind,
    None when it stays undefined (or a conflict) — no kind is told apart —, or why not."""
    if after != 1:
        return None if before == after else Register(STABLE)
    own = symbols[p]
    if node == own:
        return Register(INVARIANT)
    used = table.symbols([node])
    entry = table.node(node)
    if entry[0] == "a" and entry[1] in IDENTITY and own in entry[2] and own >= 0:
        other = entry[2][1] if entry[2][0] == own else entry[2][0]
        if all(_is_data(s) for s in table.symbols([other])):
            term = parse_term(table.show(other, limit=100_000))
            return Register(FOLD, entry[1], ((tag, term),))
    if not any(_is_data(s) for s in used):
        return Register(STABLE)
    return f"{table.show(node)} reads the event's data but is not a fold r ⊕ t(data)"


def _merge(known: Register | None, new: Register | None) -> Register | None:
    """One kind for a register from two configurations or tags; None if they clash."""
    if new is None or known is None:
        return known or new or Register(INVARIANT)
    if known == new:
        return known
    kinds = {known.kind, new.kind}
    if kinds == {INVARIANT, STABLE}:
        return Register(STABLE)
    if kinds == {INVARIANT, FOLD}:
        return known if known.kind == FOLD else new
    if known.kind == new.kind == FOLD and known.op == new.op:
        terms = dict(known.terms)
        for tag, term in new.terms:
            if terms.setdefault(tag, term) != term:
                return None
        return Register(FOLD, known.op, tuple(sorted(terms.items())))
    return None


def _show(register: Register) -> str:
    return register.kind if register.op is None else f"a fold by {register.op}"


# -- the specification ----------------------------------------------------------------

@dataclass
class MonitorState:
    """A DT configuration, whether a parallel event reached it since the last fork, and
    the exactness witness of each fold register (see the module docstring)."""

    config: Config
    touched: bool
    witness: dict[int, tuple]
    real: bool = True  # False for the side a fork gave the folds' identities
    folding: dict | None = None  # once touched: the derivation's folds_at entry


Advance = Callable[[Config, str, np.ndarray], Config]


def monitor_spec(derivation: Derivation, advance: Advance | None = None,
                 kernel_run: int = KERNEL_RUN) -> Spec:
    """The DGS specification of a derivation: events are ``Event(tag, cur)``; a
    synchronizing event outputs the DT's output vector (as (status, hex) pairs), or
    :data:`INEXACT`; parallel events output nothing (their outputs are ⊥).

    ``advance(config, tag, values)``, the configuration after events of ``tag`` with
    ``values`` (a compiled kernel: :mod:`qre.runtime.dgs.monitor`), gives the state
    type an ``update_run`` that advances a leaf's runs of at least ``kernel_run``
    parallel events at once (a kernel call costs a few hundred microseconds in
    Python: 359 µs against 51 µs for one reference step of a 55-size DT)."""
    dt = derivation.dt
    sync = frozenset(derivation.sync)
    scratch = temporaries(dt)  # their values never matter: states equal without them
    folds = {p: r for p, r in derivation.registers.items() if r.kind == FOLD}
    terms = {p: dict(r.terms) for p, r in folds.items()}

    def fresh_witness(config: Config) -> dict[int, tuple]:
        return {p: _witness_of(r.op, config[p]) for p, r in folds.items()}

    def init() -> MonitorState:
        config = initial_config(dt, [0.0] * len(dt.initial))
        return MonitorState(config, False, fresh_witness(config))

    def update(state: MonitorState, event: Event) -> tuple[MonitorState, tuple]:
        if state.touched and event.tag not in sync:
            return fold(state, event), ()
        config = step(dt, state.config, event.tag, event.payload)
        if event.tag in sync:
            exact = all(_exact(folds[p].op, w) for p, w in state.witness.items())
            out = (_encoded(outputs(dt, config)),) if exact else (INEXACT,)
            return MonitorState(config, False, fresh_witness(config), state.real), out
        witness = dict(state.witness)
        for p, register in folds.items():
            if isinstance(state.config[p], float):
                operand = evaluate_term(terms[p][event.tag], {}, event.payload) \
                    if event.tag in terms[p] else None
                if operand is not None:
                    witness[p] = _witness_add(register.op, witness[p], operand)
        folding = derivation.folds_at[tuple(int(status_of(x)) for x in config)]
        return MonitorState(config, True, witness, state.real, folding), ()

    def fold(state: MonitorState, event: Event) -> MonitorState:
        # After one parallel event the statuses are fixed and a parallel event only
        # folds (the derivation's table): the reference step is not needed.
        config = list(state.config)
        witness = dict(state.witness)
        for p, op, term in state.folding[event.tag]:
            operand = evaluate_term(term, {}, event.payload)
            config[p] = OPS[op].fn(config[p], operand)
            witness[p] = _witness_add(op, witness[p], operand)
        return MonitorState(tuple(config), True, witness, state.real, state.folding)

    def fork(state: MonitorState, left: Callable[[Tag], bool], right: Callable[[Tag], bool]
             ) -> tuple[MonitorState, MonitorState]:
        # The side that may see a synchronizing event keeps the values; the other
        # starts every fold from its identity.
        other = tuple(IDENTITY[folds[p].op] if p in folds and isinstance(x, float) else x
                      for p, x in enumerate(state.config))
        real = MonitorState(state.config, False, dict(state.witness), state.real)
        blank = MonitorState(other, False, {p: _witness_of(r.op, IDENTITY[r.op])
                                            for p, r in folds.items()}, False)
        return (blank, real) if any(right(t) for t in sync) else (real, blank)

    def join(one: MonitorState, two: MonitorState) -> MonitorState:
        # The real side holds the registers that only synchronizing events change; a
        # stable register comes from a side that saw a parallel event.
        real, blank = (two, one) if two.real and not one.real else (one, two)
        config = []
        for p, (a, b) in enumerate(zip(real.config, blank.config, strict=True)):
            kind = derivation.registers.get(p, Register(STABLE)).kind
            if kind == FOLD and isinstance(a, float) and isinstance(b, float):
                config.append(OPS[folds[p].op].fn(a, b) if one is real
                              else OPS[folds[p].op].fn(b, a))
            elif kind == STABLE and blank.touched and not real.touched:
                config.append(b)
            else:
                config.append(a)
        witness = {p: _witness_join(folds[p].op, one.witness[p], two.witness[p])
                   for p in folds}
        return MonitorState(tuple(config), one.touched or two.touched, witness,
                            one.real or two.real, one.folding or two.folding)

    def update_run(state: MonitorState, tag: str, entries: list) -> tuple[MonitorState, list]:
        if tag in sync or not entries:
            keyed = []
            for key, payload in entries:
                state, out = update(state, Event(tag, payload, key[0]))
                keyed += [(key, o) for o in out]
            return state, keyed
        if not state.touched:  # the first one settles the statuses (module docstring)
            state, _ = update(state, Event(tag, entries[0][1], entries[0][0][0]))
            entries = entries[1:]
        if len(entries) < kernel_run:
            for key, payload in entries:
                state, _ = update(state, Event(tag, payload, key[0]))
            return state, []
        values = np.fromiter((payload for _, payload in entries), np.float64, len(entries))
        witness = dict(state.witness)
        for p, op, term in state.folding[tag]:
            witness[p] = _witness_run(op, witness[p], _operands(term, values))
        return MonitorState(advance(state.config, tag, values), True, witness, state.real,
                            state.folding), []

    return one_state("Configuration", update, fork, join,
                     dependence=lambda a, b: a in sync or b in sync, init=init,
                     update_run=update_run if advance is not None else None,
                          equal=lambda a, b: all(_same(x, y) for p, (x, y)
                                            in enumerate(zip(a.config, b.config, strict=True))
                                            if p not in scratch))


def _encoded(values: tuple[XValue, ...]) -> tuple[tuple[int, str], ...]:
    """An output vector as (status, the value's hex) pairs: compared bit for bit."""
    return tuple((int(status_of(v)), v.hex() if isinstance(v, float) else "")
                 for v in values)


def decoded(output: tuple[tuple[int, str], ...]) -> tuple[list[int], list[float]]:
    """Statuses and values of an encoded output vector (NaN where not defined)."""
    return ([s for s, _ in output], [float.fromhex(h) if h else math.nan for _, h in output])


def _same(a: XValue, b: XValue) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (a == b and math.copysign(1, a) == math.copysign(1, b)) or (a != a and b != b)
    return a is b


def _witness_of(op: str, value: XValue) -> tuple:
    """The witness of a register holding ``value`` before any parallel event: for ``+``
    (the value and operands so far are integers, the sum of their magnitudes, the
    number of operands); for ``min``/``max`` (+0.0 seen, −0.0 seen)."""
    if op == "add":
        if not isinstance(value, float):
            return (True, 0.0, 0)
        finite = math.isfinite(value)
        return (finite and value.is_integer(), abs(value) if finite else math.inf, 0)
    return _zeros((False, False), value)


def _zeros(seen: tuple, value: XValue) -> tuple:
    if isinstance(value, float) and value == 0:
        negative = math.copysign(1, value) < 0
        return (seen[0] or not negative, seen[1] or negative)
    return seen


def _witness_add(op: str, witness: tuple, operand: float) -> tuple:
    if op != "add":
        return _zeros(witness, operand)
    ok, bound, count = witness
    finite = math.isfinite(operand)
    return (ok and finite and operand.is_integer(),
            bound + abs(operand) if finite else math.inf, count + 1)


def _operands(term: Term, values: np.ndarray) -> np.ndarray:
    """A fold's operands over a run of events: its term on each event's value."""
    if isinstance(term, Cur) and term.field is None:
        return values
    if isinstance(term, Const):
        return np.full(len(values), term.value)
    return np.array([evaluate_term(term, {}, float(v)) for v in values])


def _witness_run(op: str, witness: tuple, operands: np.ndarray) -> tuple:
    """:func:`_witness_add` over many operands at once."""
    if op != "add":
        zero = operands == 0
        negative = np.signbit(operands)
        return (witness[0] or bool((zero & ~negative).any()),
                witness[1] or bool((zero & negative).any()))
    ok, bound, count = witness
    finite = np.isfinite(operands)
    if not finite.all():
        return (False, math.inf, count + len(operands))
    return (ok and bool((operands == np.floor(operands)).all()),
            bound + math.fsum(np.abs(operands)), count + len(operands))


def _witness_join(op: str, one: tuple, two: tuple) -> tuple:
    if op == "add":
        return (one[0] and two[0], one[1] + two[1], one[2] + two[2])
    return (one[0] or two[0], one[1] or two[1])


def _exact(op: str, witness: tuple) -> bool:
    """Whether folding in any order gave the sequential result (module docstring)."""
    if op == "add":
        ok, bound, count = witness
        return count <= 1 or (ok and bound < EXACT_SUM)
    return not (witness[0] and witness[1])
