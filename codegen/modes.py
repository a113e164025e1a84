"""Status modes: a small DT's event loop specialised to the statuses it runs in.

Why. A DT's statuses do not depend on the data (seed 003, §5.1, Equation (1)): a
transition's status is the lifting of its sources' statuses, a state's the join of its
writers'; no term's value enters (terms are total: they never fail). So the status vector
after an event is a function of the vector before and of the tag — a finite automaton
over the tags — and from the initial configuration it reaches few vectors: a running sum
two (before and after the first event), failure since success three, the last five
against the stream seven (one per event until the window is full). For such a vector (a
*mode*) and a tag the step can be specialised: every status is a constant, each defined
state's value is its one firing writer's term (no select, no lifting), the others are
NaN. The general loop's status locals, their lifts and joins, and the selects that
chain every value to them are gone.

Loop. A long stream ends in a set of modes that no tag leaves (the bottom strongly
connected components of the modes' graph: a running sum's one mode after its first
event, failure since success's two), its *steady* modes; ``segment_modes`` specialises
those only, so a window's first events cost no code. ``segment`` runs the general loop
of :mod:`codegen.emit` (``segment_general``, the configuration in the arrays) until the
statuses are a steady mode (at once if they are one already; a configuration that never
gets there — one resumed from a vector the initial configuration does not reach — stays
in it), then ``segment_modes`` on the rest of the events: it matches the statuses
against the steady modes and runs every event in a specialised body, the statuses
carried as one small integer and written back from it after the loop. Both compute the same bits:
the same terms, in the same order, on the same operands. The loop branches on the tag;
under it, modes whose step on that tag is the same code (the same writers fire, to the
same next mode and output statuses) share one body, so it branches on the mode only
where the code differs: failure since success never does, its two modes differ in
states no step reads. A body's constants fold (LLVM): with the constants that
:func:`codegen.optimize.propagate_constants` puts into the terms, failure since
success's output is a literal or a loop invariant on each tag, not a chain through the
previous event's.

Bounds: a DT whose tag steps have no cyclic block (a block's values would need the order
in which its Kleene iteration defines them), with at most :data:`MAX_MODES` reachable
modes and :data:`MAX_BODY_STATES` states over all specialised bodies (compile time).
"""

from __future__ import annotations

from collections.abc import Callable

from dt.values import BOT, TOP, XValue, lift, union

from .emit import _code_test, _Emitter, _Function, _Label, _safe

__all__ = ["MAX_BODY_STATES", "MAX_MODES", "Statuses", "is_steady", "mode_function",
           "reachable_modes", "steady_modes", "step_statuses"]

Statuses = tuple[int, ...]
"""A status per state: 0 ⊥, 1 defined, 2 ⊤."""

MAX_MODES = 64
"""At most this many reachable modes; a DT that reaches more runs the general loop only."""

MAX_BODY_STATES = 256
"""At most this many states written over all specialised bodies (steady modes × tags ×
states a step writes): each is a line or two more for Numba to compile."""


_AS_VALUE = (BOT, 0.0, TOP)
"""A status as an extended value of :mod:`dt.values` (any defined value will do)."""


def _status(x: XValue) -> int:
    return 0 if x is BOT else 2 if x is TOP else 1


def _lift(statuses: list[int]) -> int:
    """A transition's status from its sources': :func:`dt.values.lift` on statuses (⊥ if
    one is ⊥, else ⊤ if one is ⊤)."""
    return _status(lift(lambda *_: 0.0, [_AS_VALUE[s] for s in statuses]))


def _join(a: int, b: int) -> int:
    """``a ⊔ b`` on statuses: :func:`dt.values.union` (⊥ the identity, else ⊤)."""
    return _status(union(_AS_VALUE[a], _AS_VALUE[b]))


def step_statuses(em: _Emitter, label: int, before: Statuses,
                  seeds: dict[int, int] | None = None) -> Statuses:
    """The status vector after ``label``'s step from ``before`` (``seeds``: the initial
    vector's statuses at init), as the kernels compute it: blocks in order, a cyclic
    block by Kleene iteration from ⊥."""
    seeds = seeds or {}
    new = [seeds.get(q, 0) for q in range(em.tables.n_states)]  # seeds stay where unwritten

    def union(q: int, writers: list[int]) -> int:
        acc = seeds.get(q, 0)
        for tau in writers:
            acc = _join(acc, _lift([new[p] if primed else before[p]
                                    for p, primed in em.sources(tau)]))
        return acc

    for cyclic, entries in em.blocks(label):
        changed = True
        while changed:
            changed = False
            for q, writers in entries:
                status = union(q, writers)
                changed |= cyclic and status != new[q]
                new[q] = status
    return tuple(new)


def reachable_modes(em: _Emitter) -> list[Statuses] | None:
    """The status vectors reachable on tags from the initial configuration of a defined
    initial vector, that one first; None if the DT is out of bounds (module docstring)."""
    t = em.tables
    labels = [1 + group[0] for group in em.tag_groups()]
    if not labels or not t.n_states or any(cyclic for label in labels
                                           for cyclic, _ in em.blocks(label)):
        return None
    start = step_statuses(em, 0, (0,) * t.n_states, {q: 1 for q in t.initial.tolist()})
    modes, index = [start], {start: 0}
    for before in modes:  # breadth first; the list grows while it is read
        for label in labels:
            after = step_statuses(em, label, before)
            if after not in index:
                index[after] = len(modes)
                modes.append(after)
                if len(modes) > MAX_MODES:
                    return None
    return modes


def steady_modes(em: _Emitter) -> list[Statuses] | None:
    """The modes a long stream ends in, which ``segment_modes`` specialises: those of the
    bottom strongly connected components of the modes' graph (edges: a tag's step), a
    set that no tag leaves; None if the DT is out of bounds (module docstring). The
    others (a window's first events) are passed once each, by the general loop."""
    modes = reachable_modes(em)
    if modes is None:
        return None
    labels = [1 + group[0] for group in em.tag_groups()]
    after = {m: {step_statuses(em, label, m) for label in labels} for m in modes}
    reach = {}
    for m in modes:
        seen, todo = {m}, [m]
        while todo:
            for n in after[todo.pop()] - seen:
                seen.add(n)
                todo.append(n)
        reach[m] = seen
    steady = [m for m in modes if all(m in reach[n] for n in reach[m])]
    written = sum(len(entries) for label in labels for _, entries in em.blocks(label))
    return steady if len(steady) * written <= MAX_BODY_STATES else None


def is_steady(modes: list[Statuses], status_of: Callable[[int], str]) -> str:
    """The test that the statuses (state q's is ``status_of(q)``) are one of ``modes``."""
    return " | ".join(f"({_is_mode(m, status_of)})" for m in modes)


def _is_mode(mode: Statuses, status_of: Callable[[int], str]) -> str:
    """The test that the statuses are ``mode``."""
    return " & ".join(f"({status_of(q)} == {s})" for q, s in enumerate(mode))


def mode_function(em: _Emitter, modes: list[Statuses]) -> list[str]:
    """``segment_modes(codes, data, i0, i1, status, value, out_s, out_v)``: if the
    configuration's statuses are a mode, run the events from there (as ``segment``
    does: configuration in place, outputs at the rows) and return True; else False (which
    ``segment`` makes an error: it calls this only once the statuses are a steady mode),
    having changed nothing."""
    t = em.tables
    finals = t.final.tolist()
    index = {statuses: k for k, statuses in enumerate(modes)}
    fn = _Function()
    fn.add(1, '"""segment, from a configuration whose statuses are a mode (codegen.modes): '
              'then True."""')
    for q in range(t.n_states):
        fn.add(1, f"s{q} = _get(status, {q})  # {_safe(em.states[q])}")
    fn.add(1, "mode = -1")
    for k, statuses in enumerate(modes):
        fn.add(1, f"{'if' if k == 0 else 'elif'} {_is_mode(statuses, lambda q: f's{q}')}:")
        fn.add(2, f"mode = {k}")
    fn.add(1, "if mode < 0:")
    fn.add(2, "return False")
    fn.add(1, "# A value is exactly NaN unless defined.")
    for q in range(t.n_states):
        fn.add(1, f"v{q} = _pick(s{q} == 1, _get(value, {q}), np.nan)")
    varying = [j for j, q in enumerate(finals) if len({m[q] for m in modes}) > 1]
    for j in varying:
        fn.add(1, f"os{j} = s{finals[j]}  # output {j}'s status")
    fn.add(1, "for i in range(i0, i1):")
    fn.add(2, "row = i")
    fn.add(2, "code = _get(codes, row)")
    for j, group in enumerate(em.tag_groups()):
        names = ", ".join(_safe(repr(em.tags[c])) for c in group)
        fn.add(2, f"{'if' if j == 0 else 'elif'} {_code_test(group)}:  # {names}")
        label = 1 + group[0]
        afters = [step_statuses(em, label, before) for before in modes]
        shared = _shared_bodies(em, label, modes, afters, [index[a] for a in afters], varying)
        for g, ks in enumerate(shared):
            indent = 3
            if len(shared) > 1:
                fn.add(3, f"{'if' if g == 0 else 'elif'} {_mode_test(ks)}:")
                indent = 4
            before, after = modes[ks[0]], afters[ks[0]]
            lines = len(fn.lines)
            _body(em, fn, indent, label, f"{label}g{g}", before, after)
            for q in range(t.n_states):  # NaN unless defined; a NaN stays NaN
                if after[q] != 1 and any(modes[k][q] == 1 for k in ks):
                    fn.add(indent, f"v{q} = np.nan")
            if any(index[after] != k for k in ks):
                fn.add(indent, f"mode = {index[after]}")
            for j_out in varying:
                fn.add(indent, f"os{j_out} = {after[finals[j_out]]}")
            if len(fn.lines) == lines:
                fn.add(indent, "pass  # nothing changes")
    for j, q in enumerate(finals):
        if j in varying:
            fn.add(2, f"_put2(out_s, row, {j}, os{j})  # output {j}: {_safe(em.states[q])}")
        fn.add(2, f"_put2(out_v, row, {j}, v{q})")
    for j, q in enumerate(finals):
        if j not in varying:
            fn.add(1, f"for i in range(i0, i1):  # output {j}'s status, every mode's")
            fn.add(2, f"_put2(out_s, i, {j}, {modes[0][q]})")
    for k, statuses in enumerate(modes):
        fn.add(1, f"{'if' if k == 0 else 'elif'} mode == {k}:  # the statuses back")
        for q, s in enumerate(statuses):
            fn.add(2, f"_put(status, {q}, {s})")
    for q in range(t.n_states):
        fn.add(1, f"_put(value, {q}, v{q})")
    fn.add(1, "return True")
    return ["@numba.jit(**_JIT)",
            "def segment_modes(codes, data, i0, i1, status, value, out_s, out_v):", *fn.lines]


def _body(em: _Emitter, fn: _Function, indent: int, label: int, suffix: str,
          before: Statuses, after: Statuses) -> None:
    """One specialised step: the values of the states defined after it, from their firing
    writers, into ``v<q>`` (locals ``v<q>_<suffix>``). The states not defined after it are
    the caller's (each is NaN)."""
    lab = _Label(suffix, {})
    where = len(fn.lines)
    for _, entries in em.blocks(label):
        (q, writers), = entries  # no cyclic block (reachable_modes)
        if after[q] != 1:
            lab.primed[q] = (str(after[q]), "np.nan")
            continue
        tau, = [w for w in writers  # the one that fires: ⊤ otherwise
                if _lift([after[p] if primed else before[p] for p, primed in em.sources(w)]) == 1]
        fn.add(indent, f"# {_safe(em.states[q])}' by τ{tau}: {_safe(em.describe(tau))}")
        fn.add(indent, f"v{q}_{lab.number} = {em.expression(fn, indent, tau, lab)}")
        lab.primed[q] = ("1", f"v{q}_{lab.number}")
    fn.lines[where:where] = [
        "    " * indent + f"cur{c}_{lab.number} = _get2(data, row, {c})"
        for c in sorted(lab.columns)]
    for q, (status, value) in sorted(lab.primed.items()):
        if status == "1":
            fn.add(indent, f"v{q} = {value}")


def _shared_bodies(em: _Emitter, label: int, modes: list[Statuses], afters: list[Statuses],
                   nexts: list[int], varying: list[int]) -> list[list[int]]:
    """The modes grouped by the code of ``label``'s step from them: modes whose bodies are
    the same text, with the same next mode and the same statuses of the ``varying``
    outputs, share one (the statuses they differ in do not change which writer fires),
    so the event loop branches on the mode only where the code differs."""
    finals = em.tables.final.tolist()
    groups: dict[tuple[str, int, tuple[int, ...]], list[int]] = {}
    for k, (before, after) in enumerate(zip(modes, afters, strict=True)):
        scratch = _Function()
        _body(em, scratch, 0, label, "", before, after)
        key = ("\n".join(scratch.lines), nexts[k], tuple(after[finals[j]] for j in varying))
        groups.setdefault(key, []).append(k)
    return list(groups.values())


def _mode_test(ks: list[int]) -> str:
    """The test that the mode is one of ``ks`` (bitwise: no short-circuit branches)."""
    return " | ".join(f"(mode == {k})" for k in ks)
