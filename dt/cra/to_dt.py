"""CRA → DT, restartable (seed 003, Theorem 5.8, the direction "SR ⊆ DT"; §5.2.2, last paragraph).

The seed's sketch: a CRA with control states P and registers X becomes a DT
with states P × X. Here each control state p is a *slot*: DT states
``p__r`` hold register r of a run that is in p, and a marker ``p__`` says that
a run is there. One run (a *thread*) occupies one slot at a time, so the DT
simulates any number of threads at once: when two meet in a slot their
registers and marker meet as ⊤, exactly the union ⊔ of their outputs that
Definition 5.4 (iii) asks for. That makes the DT restartable by construction:

* the DT's initial states are the CRA's inputs; every ε transition (which
  fires at initialization *and* with every event, hence on a restart Δ_{σ,x})
  starts a thread in the extra slot ``start``: its marker from all inputs, its
  registers from the CRA's start for all-defined inputs. A restart vector is
  all ⊥ (no thread) or has no ⊥ (Definition 5.4's X), so that start is the
  only one a thread can take;
* on a tag σ every slot (``start`` too) moves its thread along ``delta[p, σ]``:
  the marker ``p'__ := p__`` and each register by its update, reading the
  old slot's registers (the marker stands in when the update reads none;
  :data:`~dt.cra.model.CONFLICT` is two transitions from the marker);
* every output is the union, over slots, of that slot's output (ε transitions
  reading the new slot).

The start slot is separate from the start state's own slot because a thread
that starts and one that arrives in the same step follow different
transitions in that step (Δ_i against Δ_σ).

Preconditions (checked; :class:`~dt.errors.PreconditionError`): no name is
both an input and an output, and a run started with every input ⊥ outputs
nothing ever (Definition 5.4 (i) with no thread: such a run *is* the restarted
DT with no thread). Without restarts (``restartable=False``) the thread
starts at initialization only, and a CRA without inputs — a function of the
word, as the seed's CRAs are — needs no precondition: its one thread starts
from nothing. With mixed inputs (some ⊥, some not — not restart vectors)
the DT outputs ⊥; with a ⊤ input the marker is ⊤, so a register that reads
only the marker (a constant, or ``cur``) is ⊤ where the CRA holds a value:
exact when no such register meets a ⊤-free output path — the conversion
(:mod:`dt.cra.restartable`) checks the result against the original DT.

A control state from which no output is reachable gets no slot: a thread
there can never output again, so it is dropped (its outputs are ⊥ forever).

Size: O(size of the CRA) — every update becomes one transition (two for ⊤),
plus a marker per control state and the start slot.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from ..errors import PreconditionError
from ..graphs import co_reachable
from ..model import DT, EPS, INIT, Facts, Transition
from ..terms import Const, Var
from .model import CRA, Update

__all__ = ["NoRestartableForm", "cra_to_dt", "silent_without_input"]

_MARK = Const(0.0)
"""The marker's value: any data value (only its status matters)."""

START = "start"


class NoRestartableForm(PreconditionError):
    """The DT (or CRA) has no restartable form: after ``tags``, started with inputs of
    statuses ``inputs`` (0 ⊥, 1 defined, 2 ⊤), it outputs what no restartable DT can."""

    def __init__(self, message: str, tags: tuple[str, ...], inputs: tuple[int, ...]) -> None:
        super().__init__(message)
        self.tags = tags
        self.inputs = inputs


def silent_without_input(cra: CRA) -> tuple[str, ...] | None:
    """None if the run started with every input ⊥ never outputs; else a tag string after
    which it does (breadth-first over the control states it reaches: a shortest one)."""
    first = cra.start[(0,) * len(cra.inputs)].target
    parents: dict[str, tuple[str, str] | None] = {first: None}
    queue = deque([first])
    while queue:
        p = queue.popleft()
        if any(u is not None for u in cra.output[p]):
            tags: list[str] = []
            while parents[p] is not None:
                p, tag = parents[p]  # type: ignore[misc]
                tags.append(tag)
            return tuple(reversed(tags))
        for tag in cra.alphabet:
            q = cra.delta[p, tag].target
            if q not in parents:
                parents[q] = (p, tag)
                queue.append(q)
    return None


def _may_output(cra: CRA) -> frozenset[str]:
    """The control states from which some output is reachable (a slot for each of them)."""
    outputs = (p for p in cra.states if any(u is not None for u in cra.output[p]))
    return frozenset(co_reachable(outputs, ((p, step.target)
                                            for (p, _tag), step in cra.delta.items())))


class _Slots:
    """State names ``{slot}__{register}`` and ``{slot}__`` (the marker), clash-free."""

    def __init__(self, cra: CRA) -> None:
        taken = set(cra.inputs) | set(cra.outputs)
        prefix = ""
        while any(n.startswith(f"{prefix}{s}__") for n in taken
                  for s in (START, *cra.states)):
            prefix += "k"
        self.prefix = prefix

    def register(self, slot: str, r: str) -> str:
        return f"{self.prefix}{slot}__{r}"

    def marker(self, slot: str) -> str:
        return f"{self.prefix}{slot}__"


def _value(on: str, target: str, u: Update, read: Callable[[str], Var],
           mark: Var) -> list[Transition]:
    """Transitions giving ``target`` the value of ``u``, its registers read by ``read``;
    the marker ``mark`` stands in when ``u`` reads none, and twice for ⊤."""
    if u.term is None:
        return [Transition(on, frozenset({mark}), target, _MARK)] * 2
    mapping = {Var(r): read(r) for r in u.reads}
    sources = frozenset(mapping.values()) or frozenset({mark})
    return [Transition(on, sources, target, u.term.rename(mapping))]


def cra_to_dt(cra: CRA, *, restartable: bool = True) -> DT:
    """The DT of ``cra`` (module docstring).

    ``restartable=True``: a thread starts at initialization and on every restart (ε);
    facts: restartable. ``restartable=False``: one thread, started at initialization
    only (label ``init``) — Theorem 5.8's direction for every CRA without inputs (the
    seed's CRAs compute functions of the word alone: the start marker has no source),
    and for one with inputs whose all-⊥ start never outputs.
    """
    if set(cra.inputs) & set(cra.outputs):
        both = ", ".join(sorted(set(cra.inputs) & set(cra.outputs)))
        raise PreconditionError(f"{both} is both an input and an output: the DT needs them "
                                f"apart (a start would seed an output)")
    if cra.inputs or restartable:
        loud = silent_without_input(cra)
        if loud is not None:
            raise NoRestartableForm(
                f"with every input ⊥ the run outputs after tags ({', '.join(loud) or 'none'}): "
                f"no restartable DT does (Definition 5.4 (i) with no thread), and no thread "
                f"starts from inputs that are all ⊥", loud, (0,) * len(cra.inputs))
    names = _Slots(cra)
    states: list[str] = [*cra.inputs, *cra.outputs]
    facts = Facts(restartable=True if restartable else None)
    first = cra.start[(1,) * len(cra.inputs)]
    useful = _may_output(cra)
    if first.target not in useful or (restartable and not cra.inputs):
        # No thread ever outputs (or, restartable without inputs, none ever starts).
        return DT(cra.alphabet, tuple(states), cra.inputs, cra.outputs, (), facts)
    slots = [(START, first.target), *((p, p) for p in cra.states if p in useful)]
    for slot, p in slots:
        states.append(names.marker(slot))
        states += [names.register(slot, r) for r in cra.live[p]]
    begin = EPS if restartable else INIT
    start_mark = Var(names.marker(START), True)
    out = [Transition(begin, frozenset(Var(i, True) for i in cra.inputs), start_mark.name,
                      _MARK)]
    for r, u in first.updates.items():
        out += _value(begin, names.register(START, r), u, lambda i: Var(i, True), start_mark)
    for slot, p in slots:
        old_mark, new_mark = Var(names.marker(slot)), Var(names.marker(slot), True)
        for tag in cra.alphabet:
            step = cra.delta[p, tag]
            if step.target not in useful:  # a thread that can never output again is dropped
                continue
            out.append(Transition(tag, frozenset({old_mark}), names.marker(step.target), _MARK))
            for r, u in step.updates.items():
                out += _value(tag, names.register(step.target, r), u,
                              lambda x, slot=slot: Var(names.register(slot, x)), old_mark)
        for f, u in zip(cra.outputs, cra.output[p], strict=True):
            if u is not None:
                out += _value(EPS, f, u, lambda x, slot=slot: Var(names.register(slot, x), True),
                              new_mark)
    return DT(cra.alphabet, tuple(states), cra.inputs, cra.outputs, tuple(out), facts)
