"""The loop shape of a generated kernel: a large DT's step as loops over per-state tables.

Why. The straight-line code of :mod:`codegen.emit` grows with the DT: about 17 lines
per state, and Numba compiles a few hundred lines a second (typing every call,
lowering, LLVM's passes — measured on a window of 333 slots, 1,001 states: 16,757
lines, 34 s of CPU). But a large DT repeats itself: the states of a window's slots, of a
nested query's levels, step by the same formula on other states. So here a label's
step is cut into *blocks* (the strongly connected components of
:func:`codegen.tables.flatten`) and every block is reduced to its **shape**: its
transitions with the states they read and write replaced by *slots* (numbered by
first use, target states first), its constants by constant slots. Blocks of one
shape share one loop body, emitted once (with :class:`codegen.emit._Emitter`'s union
and lifting: the same code, hence the same bits); what tells them apart — the states
of each slot, the constants — is read from tables that the module holds as
global arrays (Numba freezes them into the machine code). A window of 1,001 states
has 6 shapes, a nested query of 1,000 states a few dozen.

Schedule. A label runs a list of *runs*: (shape, count, first slot, first constant).
A run is a loop over blocks of one shape in order; a block reads primed values only
of blocks before it (in earlier runs, or earlier in its own run). The blocks are
reordered so that runs are long: :func:`_schedule` takes the fewer runs of two
topological orders (by dependency depth, or greedily extending the current shape).

State. The configuration lives in two rows of arrays ``S``/``V`` (statuses, values),
the old one ``o`` and the new one ``w = 1 - o``; after an event they swap roles (an
index, not a copy). A state the label does not write is set to ⊥ from a per-label
list (``CLEAR``). Per event this costs a few index loads per block more than the
straight-line code, and no branch per state.

Code. The shapes' loops are in a few jitted helpers, ``_init<g>`` and ``_step<g>``, of
about :data:`_GROUP_LINES` lines each, called once per run; ``init`` and ``segment`` keep
the arguments and outputs of :mod:`codegen.emit`'s (``run_chunk`` is shared). Module
globals besides ``N_STATES``, ``N_TAGS``, ``N_OUT``: ``INITIAL``, ``FINAL``,
``RUN_START`` (per label, its runs), ``RUN_SHAPE``, ``RUN_COUNT``, ``RUN_SLOT``,
``RUN_CONST``, ``SLOTS`` (the states of every block's slots, block after block),
``CONSTS``, ``CLEAR_START`` and ``CLEAR``.

Cost (benchmarks/RESULTS.md, "Codegen kernel shapes"): a cold compile of seconds
instead of tens of seconds for 1,000 states, about as fast per event as the
straight-line code with the configuration in arrays.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from dataclasses import dataclass, field

from .emit import Pair, _Emitter, _Function, _Label, _literal, _safe
from .tables import OP_CONST, OP_NEW, OP_OLD

__all__ = ["loop_module"]

_GROUP_LINES = 400
"""About this many lines of shapes per jitted function: Numba's analyses of one function
(liveness, SSA) take time superlinear in its blocks × variables, and each function costs
a fixed part (about 0.1 s). A nested query of 1,068 states (35 shapes, 2,000 lines)
compiled in 5.2-5.4 s CPU with 150 or 400 lines per function, 5.8-6.1 s with 1,000 and
5.9-6.8 s in one function; one of 798 states (24 shapes, 1,200 lines) in 2.5-3.0 s
either way (two rounds, benchmarks/compile_cost.py's "eps fill 24" and "split fill 44")."""

_WIDTH = 96
"""Characters per line of a table's literal."""


@dataclass
class _Block:
    """One block of a label's schedule, as its shape sees it."""

    cyclic: bool
    entries: list[tuple[int, list[int]]]
    """(state, live writers) per state of the block."""
    seeded: tuple[bool, ...]
    """Per entry: an initial state at init (its seed joins the union)."""
    slots: dict[tuple[int, bool], int] = field(default_factory=dict)
    """(state, primed) → slot, numbered by first use: the block's states first."""
    consts: dict[int, int] = field(default_factory=dict)
    """Bytecode position of a constant → constant slot."""
    key: tuple[object, ...] = ()
    """The shape: equal keys, equal code up to the slots' states and constants."""
    reads: set[int] = field(default_factory=set)
    """States read primed (new values of this label)."""


def _block(em: _Emitter, cyclic: bool, entries: list[tuple[int, list[int]]],
           live: set[int], seeded: set[int]) -> _Block:
    """The block with its slots and shape; ``live``: the states with a new value on the
    label (written, or seeded at init), so that a writer reading another primed state
    never fires and is left out (as :meth:`codegen.emit._Emitter.union` does)."""
    t = em.tables
    kept = [(q, [tau for tau in writers
                 if all(not m or p in live for p, m in em.sources(tau))])
            for q, writers in entries]
    block = _Block(cyclic, kept, tuple(q in seeded for q, _ in kept))

    def slot(p: int, primed: bool) -> int:
        return block.slots.setdefault((p, primed), len(block.slots))

    index = {q: e for e, (q, _) in enumerate(kept)}

    def local(tau: int) -> tuple[object, ...]:
        """τ without the states it reads, except the block's own: an order of the
        writers (their union is commutative) that blocks of one shape share."""
        code = tuple((int(op), index.get(int(arg), -1) if op == OP_NEW else
                      -1 if op in (OP_OLD, OP_CONST) else int(arg))
                     for op, arg in zip(t.code_op[t.code_start[tau]:t.code_start[tau + 1]],
                                        t.code_arg[t.code_start[tau]:t.code_start[tau + 1]],
                                        strict=True))
        return code, tuple(sorted((index.get(p, -1) if m else -1, m)
                                  for p, m in em.sources(tau)))

    kept = [(q, sorted(writers, key=local)) for q, writers in kept]
    block.entries = kept
    for q, _ in kept:
        slot(q, True)
    shape: list[object] = []
    for _, writers in kept:
        for tau in writers:
            # the term's variables first, then the sources it does not read: the order of
            # the sources does not matter (lifting is symmetric)
            code: list[tuple[int, int]] = []
            for pc in range(t.code_start[tau], t.code_start[tau + 1]):
                op, arg = int(t.code_op[pc]), int(t.code_arg[pc])
                if op in (OP_NEW, OP_OLD):
                    arg = slot(arg, op == OP_NEW)
                elif op == OP_CONST:
                    arg = block.consts.setdefault(pc, len(block.consts))
                code.append((op, arg))
            sources = tuple(sorted((slot(p, m), m) for p, m in em.sources(tau)))
            block.reads.update(p for p, m in em.sources(tau) if m)
            shape.append((sources, tuple(code)))
        shape.append(len(writers))
    block.key = (cyclic, block.seeded, tuple(shape))
    return block


def _schedule(blocks: list[_Block]) -> list[list[int]]:
    """Runs of blocks of one shape, in an order where every block comes after the blocks
    whose states it reads primed: the fewer runs of two topological orders."""
    owner = {q: b for b, block in enumerate(blocks) for q, _ in block.entries}
    deps = [{owner[p] for p in block.reads if p in owner} - {b}
            for b, block in enumerate(blocks)]
    depth: list[int] = []
    for b in range(len(blocks)):  # blocks come in topological order
        depth.append(1 + max((depth[d] for d in deps[b]), default=-1))
    by_depth: dict[tuple[int, tuple[object, ...]], list[int]] = {}
    for b in sorted(range(len(blocks)), key=lambda b: depth[b]):
        by_depth.setdefault((depth[b], blocks[b].key), []).append(b)
    greedy = _greedy(blocks, deps)
    return min(list(by_depth.values()), greedy, key=len)


def _greedy(blocks: list[_Block], deps: list[set[int]]) -> list[list[int]]:
    """A topological order that keeps to one shape while blocks of it are ready, then
    takes the shape with the most ready blocks (ties: the earliest block)."""
    waiting = [len(d) for d in deps]
    users: dict[int, list[int]] = defaultdict(list)
    for b, d in enumerate(deps):
        for a in d:
            users[a].append(b)
    ready: dict[tuple[object, ...], list[int]] = {}
    for b in range(len(blocks)):
        if not waiting[b]:
            ready.setdefault(blocks[b].key, []).append(b)
    runs: list[list[int]] = []
    while ready:
        key = max(ready, key=lambda k: (len(ready[k]), -ready[k][0]))
        heap = ready.pop(key)
        heapq.heapify(heap)
        run: list[int] = []
        while heap:
            b = heapq.heappop(heap)
            run.append(b)
            for u in users[b]:
                waiting[u] -= 1
                if not waiting[u]:
                    if blocks[u].key == key:
                        heapq.heappush(heap, u)
                    else:
                        ready.setdefault(blocks[u].key, []).append(u)
        runs.append(run)
        for k in ready:
            ready[k].sort()
    return runs


class _LoopEmitter(_Emitter):
    """:class:`codegen.emit._Emitter` with state references through slot locals: the
    union and lifting code of one block, valid for every block of its shape."""

    def __init__(self, em: _Emitter) -> None:
        super().__init__(em.tables, em.states, em.tags, registers=False)
        self._old: dict[int, Pair] = {}
        self._consts: dict[int, str] = {}

    def old(self, p: int) -> Pair:
        return self._old[p]

    def const(self, pc: int) -> str:
        return self._consts[pc]

    def cur(self, column: int, lab: _Label) -> str:
        return f"cur{column}"  # loaded once per event

    def body(self, fn: _Function, indent: int, block: _Block, n: int, init: bool) -> None:
        """Code for one block of shape ``n`` (its slots at ``SLOTS[s<n>:]``, its constants
        at ``CONSTS[k<n>:]``): every state it reads loaded once into locals, its states'
        new values stored in the new row (``status``/``value`` at init)."""
        if init:
            def get(array: str, a: str) -> str:
                return f"_get({'status' if array == 'S' else 'value'}, {a})"

            def put(array: str, a: str, x: str) -> str:
                return f"_put({'status' if array == 'S' else 'value'}, {a}, {x})"
        else:
            def get(array: str, a: str) -> str:
                return f"_get2({array}, w, {a})"

            def put(array: str, a: str, x: str) -> str:
                return f"_put2({array}, w, {a}, {x})"
        targets = len(block.entries)
        self._old, primed = {}, {}
        for (p, new), j in block.slots.items():
            a = f"a{j}_{n}"
            fn.add(indent, f"{a} = _get(SLOTS, s{n} + {j})  # e.g. "
                           f"{_safe(self.states[p])}{chr(39) if new else ''}")
            if j < targets:  # a state of the block: written, read (cyclic) as a local
                primed[p] = (f"s{j}_{n}", f"v{j}_{n}")
            elif new:
                primed[p] = (f"ps{j}_{n}", f"pv{j}_{n}")
                fn.add(indent, f"ps{j}_{n} = {get('S', a)}")
                fn.add(indent, f"pv{j}_{n} = {get('V', a)}")
            else:
                self._old[p] = (f"os{j}_{n}", f"ov{j}_{n}")
                fn.add(indent, f"os{j}_{n} = _get2(S, o, {a})")
                fn.add(indent, f"ov{j}_{n} = _get2(V, o, {a})")
        t = self.tables
        self._consts = {}
        for pc, j in block.consts.items():
            self._consts[pc] = f"c{j}_{n}"
            fn.add(indent, f"c{j}_{n} = _get(CONSTS, k{n} + {j})  # e.g. "
                           f"{_literal(float(t.consts[t.code_arg[pc]]))}")
        lab = _Label(n, primed)
        seeds: dict[int, Pair] = {}
        for e, (q, _) in enumerate(block.entries):
            if block.seeded[e]:  # init: the seed is in the row already (see init)
                seeds[q] = (f"x{e}s_{n}", f"x{e}v_{n}")
                fn.add(indent, f"x{e}s_{n} = {get('S', f'a{e}_{n}')}")
                fn.add(indent, f"x{e}v_{n} = {get('V', f'a{e}_{n}')}")
        if not block.cyclic:
            (q, writers), = block.entries
            self.union(fn, indent, primed[q], seeds.get(q), writers, lab)
        else:
            fn.add(indent, "# cyclic block: Kleene iteration from ⊥ until no status changes")
            for e in range(targets):
                fn.add(indent, f"s{e}_{n} = 0")
                fn.add(indent, f"v{e}_{n} = np.nan")
            fn.add(indent, f"changed_{n} = True")
            fn.add(indent, f"while changed_{n}:")
            fn.add(indent + 1, f"changed_{n} = False")
            for e, (q, writers) in enumerate(block.entries):
                acc = (f"k{e}s_{n}", f"k{e}v_{n}")
                self.union(fn, indent + 1, acc, seeds.get(q), writers, lab)
                fn.add(indent + 1, f"changed_{n} = changed_{n} | ({acc[0]} != s{e}_{n})")
                fn.add(indent + 1, f"s{e}_{n} = {acc[0]}")
                fn.add(indent + 1, f"v{e}_{n} = {acc[1]}")
        for e in range(targets):
            fn.add(indent, put("S", f"a{e}_{n}", f"s{e}_{n}"))
            fn.add(indent, put("V", f"a{e}_{n}", f"v{e}_{n}"))
        fn.add(indent, f"s{n} += {len(block.slots)}")
        if block.consts:
            fn.add(indent, f"k{n} += {len(block.consts)}")


@dataclass
class _Layout:
    """The tables of the module and the shapes' representative blocks."""

    run_start: list[int] = field(default_factory=lambda: [0])
    run_shape: list[int] = field(default_factory=list)
    run_count: list[int] = field(default_factory=list)
    run_slot: list[int] = field(default_factory=list)
    run_const: list[int] = field(default_factory=list)
    slots: list[int] = field(default_factory=list)
    consts: list[float] = field(default_factory=list)
    clear_start: list[int] = field(default_factory=lambda: [0])
    clear: list[int] = field(default_factory=list)
    shapes: dict[tuple[object, ...], tuple[int, _Block]] = field(default_factory=dict)
    """key (with whether the block is of init) → (shape number, a block of it)."""


def _layout(em: _Emitter) -> _Layout:
    t = em.tables
    lay = _Layout()
    initial = set(t.initial.tolist())
    for label in range(len(t.label_start) - 1):
        raw = em.blocks(label)
        written = {q for _, entries in raw for q, _ in entries}
        seeded = initial if label == 0 else set()
        blocks = [_block(em, cyclic, entries, written | seeded, seeded)
                  for cyclic, entries in raw]
        for run in _schedule(blocks):
            first = blocks[run[0]]
            # init's shapes apart from the steps': they are in another function
            key = (label == 0, *first.key)
            number, _ = lay.shapes.setdefault(key, (len(lay.shapes), first))
            lay.run_shape.append(number)
            lay.run_count.append(len(run))
            lay.run_slot.append(len(lay.slots))
            lay.run_const.append(len(lay.consts))
            for b in run:
                block = blocks[b]
                lay.slots.extend(p for p, _ in block.slots)  # dicts keep slot order
                lay.consts.extend(float(t.consts[t.code_arg[pc]]) for pc in block.consts)
        lay.run_start.append(len(lay.run_shape))
        lay.clear.extend(q for q in range(t.n_states) if q not in written)
        lay.clear_start.append(len(lay.clear))
    return lay


def _array(name: str, values: list[int] | list[float], dtype: str) -> list[str]:
    """``name = np.array([...], dtype=...)`` over lines of at most :data:`_WIDTH`."""
    text = [_literal(v) if dtype == "np.float64" else str(v) for v in values]
    lines, line = [f"{name} = np.array(["], "   "
    for item in text:
        if len(line) + len(item) + 2 > _WIDTH:
            lines.append(line)
            line = "   "
        line += f" {item},"
    if line.strip():
        lines.append(line)
    lines.append(f"], dtype={dtype})")
    return lines


def _groups(em: _LoopEmitter, lay: _Layout, init: bool) -> list[tuple[str, int, list[str]]]:
    """The shapes of init (or of the steps) packed, in order, into functions of about
    :data:`_GROUP_LINES` lines: (the function's name, its last shape number, its lines).
    A function runs the blocks of one run: ``count`` blocks of shape ``shape``."""
    groups: list[tuple[list[int], _Function]] = []
    for key, (number, block) in lay.shapes.items():
        if key[0] != init:
            continue
        if not groups or len(groups[-1][1].lines) >= _GROUP_LINES:
            groups.append(([], _Function()))
        numbers, fn = groups[-1]
        names = _safe(", ".join(em.states[q] for q, _ in block.entries))
        fn.add(1, f"{'elif' if numbers else 'if'} shape == {number}:  # "
                  f"{'cyclic' if block.cyclic else 'acyclic'}, e.g. {names}")
        numbers.append(number)
        fn.add(2, f"s{number} = s")
        if block.consts:
            fn.add(2, f"k{number} = k")
        fn.add(2, "for _ in range(count):")
        em.body(fn, 3, block, number, init)
    out = []
    for g, (numbers, fn) in enumerate(groups):
        name = f"_{'init' if init else 'step'}{g}"
        if init:
            head = f"def {name}(status, value, shape, s, k, count):"
        else:
            head = f"def {name}(S, V, w, data, row, shape, s, k, count):"
            # o from w: o is the literal 0 before the first event, and an argument typed
            # as a literal would compile the function twice
            fn.lines[:0] = ["    o = 1 - w"] + [f"    cur{c} = _get2(data, row, {c})"
                                              for c in range(len(em.tables.columns))]
        doc = (f'    """Blocks of shapes {numbers[0]}..{numbers[-1]}: ``count`` of shape '
               '``shape``, their slots at SLOTS[s:], their constants at CONSTS[k:]."""')
        out.append((name, numbers[-1],
                    ["", "", "@numba.jit(**_JIT)", head, doc, *fn.lines]))
    return out


def _dispatch(fn: _Function, indent: int, groups: list[tuple[str, int, list[str]]],
              init: bool, label: str, after: str) -> None:
    """The loop over the runs of ``label`` (``after``: the next label): per run, the
    function of its shape's group."""
    fn.add(indent, f"for r in range(_get(RUN_START, {label}), _get(RUN_START, {after})):")
    if not groups:
        fn.add(indent + 1, "pass")
        return
    fn.add(indent + 1, "shape = _get(RUN_SHAPE, r)")
    fn.add(indent + 1, "s, k, count = _get(RUN_SLOT, r), _get(RUN_CONST, r), "
                       "_get(RUN_COUNT, r)")
    call = f"({'status, value' if init else 'S, V, w, data, row'}, shape, s, k, count)"
    if len(groups) == 1:
        fn.add(indent + 1, groups[0][0] + call)
        return
    for g, (name, last, _) in enumerate(groups):
        fn.add(indent + 1, "else:" if g == len(groups) - 1 else
               f"{'elif' if g else 'if'} shape <= {last}:")
        fn.add(indent + 2, name + call)


def loop_module(em: _Emitter) -> list[str]:
    """The tables and the functions ``init`` and ``segment`` of the loop shape."""
    t = em.tables
    lay = _layout(em)
    lem = _LoopEmitter(em)
    i64, f64 = "np.int64", "np.float64"
    tables = [
        *_array("INITIAL", t.initial.tolist(), i64),
        *_array("FINAL", t.final.tolist(), i64),
        "# per label (0 init, 1 + k tag k) its runs: a shape, a count of blocks, the first",
        "# slot and constant of the first block",
        *_array("RUN_START", lay.run_start, i64),
        *_array("RUN_SHAPE", lay.run_shape, i64),
        *_array("RUN_COUNT", lay.run_count, i64),
        *_array("RUN_SLOT", lay.run_slot, i64),
        *_array("RUN_CONST", lay.run_const, i64),
        *_array("SLOTS", lay.slots, i64),
        *_array("CONSTS", lay.consts, f64),
        "# per label the states it does not write (⊥ after its step)",
        *_array("CLEAR_START", lay.clear_start, i64),
        *_array("CLEAR", lay.clear, i64),
    ]

    init_groups, step_groups = _groups(lem, lay, True), _groups(lem, lay, False)
    init, seg = _Function(), _Function()
    _dispatch(init, 1, init_groups, True, "0", "1")
    _dispatch(seg, 3, step_groups, False, "code + 1", "code + 2")
    helpers = [line for _, _, lines in init_groups + step_groups for line in lines]
    return [*tables, *helpers, "", "",
            *_INIT.replace("    # RUNS\n", "\n".join([*init.lines, ""])).splitlines(), "", "",
            *_SEGMENT.replace("            # RUNS\n", "\n".join([*seg.lines, ""])).splitlines()]


_INIT = '''@numba.jit(**_JIT)
def init(x_s, x_v, status, value):
    """Δ_i(x): the least vector of Equation (1) with x (over I, in order) as seed."""
    for q in range(N_STATES):
        _put(status, q, 0)
        _put(value, q, np.nan)
    for j in range(INITIAL.shape[0]):  # the seeds, joined by the blocks
        q = _get(INITIAL, j)
        _put(status, q, _get(x_s, j))
        _put(value, q, _pick(_get(x_s, j) == 1, _get(x_v, j), np.nan))
    # RUNS
'''

_SEGMENT = '''@numba.jit(**_JIT)
def segment(codes, data, i0, i1, status, value, out_s, out_v):
    """Events i0..i1-1 (code -1 skips one); configuration in place, outputs at the rows."""
    # rows o (old) and w = 1 - o (new) of the configuration; a value is exactly NaN
    # unless defined
    S = np.empty((2, N_STATES), dtype=np.uint8)
    V = np.empty((2, N_STATES))
    for q in range(N_STATES):
        _put2(S, 0, q, _get(status, q))
        _put2(V, 0, q, _pick(_get(status, q) == 1, _get(value, q), np.nan))
    o = 0
    for i in range(i0, i1):
        row = i
        code = _get(codes, row)
        if code >= 0:  # code -1: a skipped event keeps the configuration
            w = 1 - o
            for j in range(_get(CLEAR_START, code + 1), _get(CLEAR_START, code + 2)):
                _put2(S, w, _get(CLEAR, j), 0)
                _put2(V, w, _get(CLEAR, j), np.nan)
            # RUNS
            o = w
        for j in range(N_OUT):
            _put2(out_s, row, j, _get2(S, o, _get(FINAL, j)))
            _put2(out_v, row, j, _get2(V, o, _get(FINAL, j)))
    for q in range(N_STATES):
        _put(status, q, _get2(S, o, q))
        _put(value, q, _get2(V, o, q))
'''
"""The fixed parts of ``init`` and ``segment``; ``# RUNS``: the loop over the label's runs."""
