"""The deterministic copyful cost register automaton (seed 003, §5.4.1).

A CRA reads the same data words as a DT: a finite control moved by the tags
alone, and registers rewritten at every step by terms over the old registers
and the event's data. Registers may be read any number of times (copyful; the
Streamable Regular transductions of [14] the seed cites). Register values are
never terms, only values.

Parts of a :class:`CRA`:

* ``alphabet`` Σ, ``inputs`` (the initial vector's names) and ``outputs``
  (the output vector's names), as for a DT;
* ``states`` — the control states, each with its *live* registers
  (``live[p]``): those holding a value in p. A register that is not live is
  undefined there;
* ``start[v]`` — for every definedness vector v ∈ {0, 1}^inputs of the initial
  vector, the start state and the live registers' first values, terms over the
  inputs (:class:`Update`);
* ``delta[p, σ]`` — the next state and the new value of each of its live
  registers, terms over p's registers and ``cur``;
* ``output[p]`` — per output, an :class:`Update` over p's registers or ``None``
  (undefined in p).

Conflict is a value here (the documented refinement of the seed's
construction, :mod:`dt.cra.from_dt`): a register or an output may hold ⊤, a
term that reads a ⊤ register is ⊤ (as a DT transition is), and
:data:`CONFLICT` is the update whose value is ⊤ whatever the registers. The
control therefore follows only which registers are defined, and the start
depends only on which inputs are (⊥ or not).

Size (what the benchmarks count): the number of control states, and
``size`` = |P| plus, per update and output, ``|reads| + 1 + term size``.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..errors import DTError
from ..model import RESERVED_LABELS
from ..terms import Term

__all__ = ["CONFLICT", "CRA", "Step", "Update", "definedness_vectors"]


@dataclass(frozen=True, slots=True)
class Update:
    """A register's (or output's) new value: ``term`` over ``reads``, or ⊤.

    ``reads`` are the registers (inputs, in a start) whose ⊤ makes the value
    ⊤ — the sources of the DT transition it came from — and include every
    variable of ``term``. ``term is None`` is :data:`CONFLICT`.
    """

    term: Term | None
    reads: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if self.term is None:
            if self.reads:
                raise DTError("the conflict update reads no register")
            return
        extra = {v.name for v in self.term.variables()} - self.reads
        primed = [str(v) for v in self.term.variables() if v.primed]
        if primed:
            raise DTError(f"a CRA term reads old registers only, not {', '.join(primed)}")
        if extra:
            raise DTError(f"the term {self.term} reads {', '.join(sorted(extra))}, "
                          f"which is not among its reads")

    @property
    def size(self) -> int:
        return 1 if self.term is None else len(self.reads) + 1 + self.term.size

    def __str__(self) -> str:
        if self.term is None:
            return "⊤"
        extra = self.reads - {v.name for v in self.term.variables()}
        strict = f"  [also ⊤ if {', '.join(sorted(extra))} is]" if extra else ""
        return f"{self.term}{strict}"


CONFLICT = Update(None)
"""The update whose value is ⊤ (a DT state fed by two transitions at once)."""


@dataclass(frozen=True, slots=True)
class Step:
    """Where a step goes: the next control state and its live registers' new values."""

    target: str
    updates: Mapping[str, Update]


def definedness_vectors(n: int) -> tuple[tuple[int, ...], ...]:
    """{0, 1}^n in lexicographic order (all-⊥ first, all-defined last)."""
    return tuple(itertools.product((0, 1), repeat=n))


@dataclass(frozen=True, eq=False)
class CRA:
    """A deterministic copyful CRA with conflict values; see the module docstring."""

    alphabet: tuple[str, ...]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    states: tuple[str, ...]
    live: Mapping[str, tuple[str, ...]]
    start: Mapping[tuple[int, ...], Step]
    delta: Mapping[tuple[str, str], Step]
    output: Mapping[str, tuple[Update | None, ...]]
    _state_set: frozenset[str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_state_set", frozenset(self.states))
        self._validate()

    def _validate(self) -> None:
        for tag in self.alphabet:
            if tag in RESERVED_LABELS or not tag:
                raise DTError(f"tag {tag!r} is reserved or empty")
        if len(self._state_set) != len(self.states):
            raise DTError("a control state is listed twice")
        for v in definedness_vectors(len(self.inputs)):
            step = self.start.get(v)
            if step is None:
                raise DTError(f"no start for the inputs' definedness {v}")
            self._check_step(step, frozenset(self.inputs), f"start {v}")
            if any(u.term is not None and u.term.reads_cur() for u in step.updates.values()):
                raise DTError(f"start {v} reads cur: a start happens before any event")
        for p in self.states:
            live = frozenset(self.live[p])
            for tag in self.alphabet:
                step = self.delta.get((p, tag))
                if step is None:
                    raise DTError(f"no step from {p} on {tag!r}: a CRA is complete")
                self._check_step(step, live, f"step from {p} on {tag!r}")
            outs = self.output[p]
            if len(outs) != len(self.outputs):
                raise DTError(f"state {p} gives {len(outs)} outputs, not {len(self.outputs)}")
            for name, u in zip(self.outputs, outs, strict=True):
                if u is not None and not u.reads <= live:
                    raise DTError(f"output {name} in {p} reads registers that are not live there")
                if u is not None and u.term is not None and u.term.reads_cur():
                    raise DTError(f"output {name} in {p} reads cur: outputs read registers only")

    def _check_step(self, step: Step, readable: frozenset[str], where: str) -> None:
        if step.target not in self._state_set:
            raise DTError(f"{where}: target {step.target!r} is not a control state")
        if set(step.updates) != set(self.live[step.target]):
            raise DTError(f"{where}: updates {sorted(step.updates)} are not the live registers "
                          f"{list(self.live[step.target])} of {step.target}")
        for r, u in step.updates.items():
            if not u.reads <= readable:
                raise DTError(f"{where}: register {r} reads "
                              f"{', '.join(sorted(u.reads - readable))}, not readable there")

    @property
    def registers(self) -> tuple[str, ...]:
        """Every register live somewhere, in first-seen order."""
        return tuple(dict.fromkeys(r for p in self.states for r in self.live[p]))

    @property
    def size(self) -> int:
        """|P| plus the length of every update and output (module docstring)."""
        steps = itertools.chain(self.start.values(), self.delta.values())
        total = len(self.states) + sum(u.size for s in steps for u in s.updates.values())
        return total + sum(u.size for outs in self.output.values() for u in outs if u)

    def dump(self) -> str:
        """A readable listing: header, starts, then per control state its steps and outputs."""
        lines = [f"alphabet:  {', '.join(self.alphabet)}",
                 f"inputs:    {', '.join(self.inputs)}",
                 f"outputs:   {', '.join(self.outputs)}",
                 f"size:      {self.size} ({len(self.states)} control states, "
                 f"{len(self.registers)} registers)"]
        for v, step in self.start.items():
            lines.append(f"start {''.join(map(str, v)) or '()'} -> {_show_step(step)}")
        for p in self.states:
            outs = ", ".join(f"{n} = {'⊥' if u is None else u}"
                             for n, u in zip(self.outputs, self.output[p], strict=True))
            lines.append(f"{p} [{', '.join(self.live[p])}]  out: {outs}")
            lines += [f"  {tag}: -> {_show_step(self.delta[p, tag])}" for tag in self.alphabet]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.dump()


def _show_step(step: Step) -> str:
    updates = "; ".join(f"{r} := {u}" for r, u in step.updates.items())
    return f"{step.target}" + (f"  {updates}" if updates else "")
