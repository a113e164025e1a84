"""Emit the Python source of a Numba kernel specialised to one data transducer.

Seed 003, §5.1: one step Δ_σ(c, d) is the least c' with

    c'(q') = seed(q) ⊔ ⊔_{(σ, X, q', t) ∈ Δ_σ} [[t]](c ∪ c'|X, d)          (Equation (1))

(``seed`` is the initial vector x on I at init, ⊥ otherwise; Theorem 5.1 bounds
a step by O(size) operations). The ``"table"`` engine (:mod:`codegen.kernels`)
*interprets* :class:`~codegen.tables.Tables` for every query; :func:`emit`
writes that interpreter's work out for one query, with the schedule of
:func:`~codegen.tables.flatten` (reused, not recomputed):

* per event, integer dispatch on the tag code (``if``/``elif``); per label, its
  blocks in topological order: an acyclic block computes its state once, a
  cyclic block runs the Kleene iteration of the table kernel (from ⊥ until no
  status changes); a state the label does not write becomes ⊥ (the seed is ⊥
  on tag steps; restart, Definition 5.4, is not part of this engine);
* per transition, the lifting of §5.1 from its *source list* X (⊥ if a source is
  ⊥, else ⊤ if a source is ⊤, else the term); per state, the union ⊔ (⊥ the
  identity, d ⊔ d' = ⊤ even for equal d, ⊤ absorbs). Statuses are small ints
  (0 ⊥, 1 defined, 2 ⊤), so both are integer ``select``s (the intrinsics
  ``_lift`` and ``_join``); a value is kept with ``_pick`` only where its status
  is 1 and is exactly ``np.nan`` elsewhere;
* terms become expressions with exactly the IEEE semantics of the table kernel
  (``error_model="numpy"``; ``%``, ``min``, ``max``, ``pow`` call its jitted
  helpers — ``_pow`` reaches the C library's ``pow`` under a name LLVM does not
  rewrite, so a literal exponent gives the bits a run-time one does —, the
  others the same numpy functions, comparisons ``_b``);
* what is known at generation time is resolved then: constants are literals
  (NaN, ±inf and -0.0 spelled exactly), a primed source that the label never
  writes is ⊥ (the transition is dropped), a copy ``q' := p`` is a plain
  assignment, and the union's status is tracked statically while it is known
  (⊥ before the first writer, defined after an unconditional one, ⊤ ends it).

Compile time shapes the code. Numba's own passes and LLVM grow faster than
linearly with a function's basic blocks × variables that are assigned more than
once or used across blocks (SSA reconstruction, stack slots for SROA). So a
label's code has **no branches** — every term is computed and its value kept
only if defined (terms are pure and never raise under
``error_model="numpy"``) — and **every local is assigned once**: the new value
of q on label ℓ is ``s<q>_<ℓ>``/``v<q>_<ℓ>``, the partial unions before it
``s<q>_<ℓ>_<j>``. Only the configuration is carried across events: in locals
``s<q>``/``v<q>`` for DTs of at most :data:`MAX_REGISTER_STATES` states
(registers, fastest), in the ``status``/``value`` arrays for larger ones (it
would be spilled anyway, and 2·|Q| loop-carried locals make compile time
explode: ≈ quadratic in |Q|). Straight-line code still grows with the DT (about 17
lines per state, a few hundred lines compiled a second): above
:data:`MAX_UNROLLED_STATES` states :func:`emit` writes the loop shape of
:mod:`codegen.loops` instead (``loops=``), one loop body per shape of block.

Generated functions (module globals ``N_STATES``, ``N_TAGS``, ``N_OUT``):

* ``init(x_s, x_v, status, value)`` — Δ_i(x) with x over I (in ``dt.initial``
  order) written into the configuration arrays;
* ``segment(codes, data, i0, i1, status, value, out_s, out_v)`` — the events
  i0..i1-1 (code -1: skipped, the configuration stays and the output row repeats),
  configuration updated in place, the output vector after each event at its row of
  ``out``. No index array: one stream's rows are in order, and a key's rows are
  gathered into buffers first, so the loop reads no row numbers. For a DT with
  status modes (:mod:`codegen.modes`) it calls ``segment_general`` (that loop, the
  configuration in the arrays, until the statuses reach a steady mode) and then
  ``segment_modes`` (the loop specialised to the steady modes) with the same arguments;
* ``run_chunk(codes, data, order, offsets, g0, g1, status0, value0, out_s, out_v,
  fin_s, fin_v, gather)`` — the keyed streams g0..g1-1 (key g's rows
  ``order[offsets[g]:offsets[g+1]]`` with ``gather``, each key's events copied together
  first; without, rows ``offsets[g]..offsets[g+1]-1`` themselves: one stream), each from
  status0/value0, final configurations at ``fin[g]`` (none into ``fin`` arrays of no
  rows); without the GIL, so that the engine runs chunks of keys in parallel threads. The
  table kernel's ``prange`` would cost more than a second of parfor compilation per query;
* ``run_rows(codes, data, keys, i0, i1, status, value, full_s, full_v, out_s, out_v)`` —
  only for DTs of at most :data:`MAX_ROW_STATES` states (:data:`MAX_ROW_KEPT` kept):
  rows i0..i1-1 in input order, row i of key ``keys[i]``, without the GIL. No grouping.
  Row ``keys[i]`` of the tables ``status``/``value`` holds that key's states
  ``ROW_STATES`` (a module global: those a step reads from the previous configuration,
  and the outputs), loaded before the event and stored after; the other states are
  written to row ``keys[i]`` of ``full_s``/``full_v`` (all Q states) unless those have
  no rows. A run that wants only the outputs keeps one narrow table per key: a running
  sum's is 9 bytes a key, not 36, and 100k keys' rows stay in the core's cache (4x
  faster on 10M events); larger tables run in blocks of keys that fit it
  (:func:`codegen.grouping.block_rows`).

:func:`emit` is pure: the same tables (and names) give the same text, so the
text's hash names the compiled module in the cache (:mod:`codegen.generated`).
"""

from __future__ import annotations

import hashlib
import inspect
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cache

from dt.terms import OPS, Apply, Const, Cur, Term, Var

from .tables import OP_CONST, OP_CUR, OP_NEW, OP_OLD, OPCODES, Tables

__all__ = ["FUNCTIONS", "MAX_REGISTER_STATES", "MAX_ROW_KEPT", "MAX_ROW_STATES",
           "MAX_UNROLLED_STATES", "emit"]

FUNCTIONS = ("init", "segment", "run_chunk")
"""The jitted functions of every emitted module (small DTs also have ``run_rows``)."""

MAX_REGISTER_STATES = 128
"""Up to this many states the configuration lives in local variables across events;
beyond, it stays in the arrays (see the module docstring: compile time)."""

MAX_UNROLLED_STATES = MAX_REGISTER_STATES
"""Up to this many states a label's step is straight-line code, one stretch per state;
beyond, blocks of states of one shape step in loops over per-state tables
(:mod:`codegen.loops`). The straight-line code has about 17 lines per state and Numba
compiles a few hundred lines a second; just above :data:`MAX_REGISTER_STATES` (the
configuration in arrays either way) the loops already compile in less time at about the
same speed per event (benchmarks/RESULTS.md, "Codegen kernel shapes")."""

MAX_ROW_STATES = 64
"""Up to this many states, and :data:`MAX_ROW_KEPT` kept states, the module also has
``run_rows``: keyed rows in input order, each key's kept states loaded from and stored to
a table around every event. That beats grouping the rows by key (a sort, then scattered
reads and writes) while the table fits a core's cache, which the engine arranges by
running blocks of keys (:func:`codegen.grouping.block_rows`): on 10M rows over 100k keys
(benchmarks/end_to_end.py) 0.16 s against 0.37 s for 10 kept states, 0.33 against 0.48
for 27. A second copy of the step costs compile time (+0.8 s at 32 states), hence the
bound."""

MAX_ROW_KEPT = 32
"""Up to this many kept states (:meth:`_Emitter.row_states`) a module has ``run_rows``."""

_OP_NAME = {code: name for name, code in OPCODES.items()}

_SPILL_DEPTH = 16
"""Nesting depth at which a subterm goes to a temporary: keeps lines readable and far
from the parser's limit on nested parentheses (terms of compiled queries can be deep)."""

_COMMENT_WIDTH = 96

# Static knowledge of a union's status while its code is generated.
_BOT, _DEF, _TOP, _DYN = "bot", "def", "top", "dyn"

Pair = tuple[str, str]
"""Status and value expressions of an extended value."""


# --------------------------------------------------------------------------- terms


def _literal(x: float) -> str:
    """A float literal that Numba reads back as exactly ``x`` (NaN only up to payload)."""
    if math.isnan(x):
        return "(-np.nan)" if math.copysign(1.0, x) < 0 else "np.nan"
    if math.isinf(x):
        return "np.inf" if x > 0 else "(-np.inf)"
    text = repr(float(x))
    return f"({text})" if text.startswith("-") else text


def _code_test(codes: list[int]) -> str:
    """The branch condition for a group of tag codes (one comparison or one range test;
    bitwise ``&``/``|``: no short-circuit branches)."""
    if len(codes) == 1:
        return f"code == {codes[0]}"
    if codes == list(range(codes[0], codes[-1] + 1)):
        return f"(code >= {codes[0]}) & (code <= {codes[-1]})"
    return " | ".join(f"(code == {c})" for c in codes)


def _binop(symbol: str) -> str:
    return "({a} " + symbol + " {b})"


def _test(cond: str) -> str:
    return "_b(" + cond + ")"


# Each argument placeholder occurs once: arguments are never evaluated twice. No
# conditional expressions: ``_b``/``_pick`` are calls, so a label stays one basic block.
_TEMPLATES: dict[str, str] = {
    "or": _test("({a} != 0.0) | ({b} != 0.0)"),
    "and": _test("({a} != 0.0) & ({b} != 0.0)"),
    "eq": _test("{a} == {b}"),
    "ne": _test("{a} != {b}"),
    "lt": _test("{a} < {b}"),
    "le": _test("{a} <= {b}"),
    "gt": _test("{a} > {b}"),
    "ge": _test("{a} >= {b}"),
    "add": _binop("+"),
    "sub": _binop("-"),
    "mul": _binop("*"),
    "div": _binop("/"),
    "mod": "_mod({a}, {b})",
    "neg": "(-{a})",
    "not": _test("{a} == 0.0"),
    "min": "_fmin({a}, {b})",
    "max": "_fmax({a}, {b})",
    "abs": "abs({a})",
    "sqrt": "np.sqrt({a})",
    "exp": "np.exp({a})",
    "log": "np.log({a})",
    "pow": "_pow({a}, {b})",
    "floor": "np.floor({a})",
    "ceil": "np.ceil({a})",
    "if": "_pick({a} != 0.0, {b}, {c})",
    "fst": "{a}",
    "snd": "{b}",
}
assert frozenset(_TEMPLATES) == frozenset(OPS), "dt.terms.OPS changed: update codegen.emit"


def _safe(text: str) -> str:
    """Text fit for a ``#`` comment: non-printable characters escaped, long text cut."""
    out = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return out if len(out) <= _COMMENT_WIDTH else out[:_COMMENT_WIDTH - 1] + "…"


@cache
def _runtime_digest() -> str:
    """A hash of :mod:`codegen.kernels`, whose jitted helpers the emitted code calls.

    Numba's disk cache keys a function on its own file only: if a helper
    changed, a cached generated kernel would keep the old machine code. The
    digest goes into the emitted text, hence into its file name.
    """
    from . import kernels

    return hashlib.sha256(inspect.getsource(kernels).encode()).hexdigest()[:16]


# --------------------------------------------------------------------------- emitter


@dataclass
class _Function:
    """Lines of one function body being generated, with its temporaries counter."""

    lines: list[str] = field(default_factory=list)
    temps: int = 0

    def add(self, indent: int, text: str) -> None:
        self.lines.append("    " * indent + text)

    def temp(self) -> str:
        self.temps += 1
        return f"e{self.temps}"


@dataclass
class _Label:
    """What the code of one label knows while it is generated."""

    number: int | str
    """0 for init, 1 + k for tag k: suffix of the label's locals (a string in the bodies of
    :mod:`codegen.modes`)."""
    primed: dict[int, Pair]
    """The primed states with a value at this point: their status/value locals."""
    columns: set[int] = field(default_factory=set)
    """Data columns read (loaded once at the top of the label's branch)."""


@dataclass
class _Emitter:
    tables: Tables
    states: tuple[str, ...]
    tags: tuple[str, ...]
    registers: bool
    """The configuration in locals across events (else it stays in the arrays)."""

    # ------------------------------------------------------------------ schedule access

    def blocks(self, label: int) -> list[tuple[bool, list[tuple[int, list[int]]]]]:
        """Label's blocks in topological order: (cyclic, [(state, writers)])."""
        t = self.tables
        out = []
        for b in range(t.label_start[label], t.label_start[label + 1]):
            entries = []
            for e in range(t.block_start[b], t.block_start[b + 1]):
                writers = t.writers[t.writer_start[e]:t.writer_start[e + 1]].tolist()
                entries.append((int(t.entry_state[e]), writers))
            out.append((bool(t.block_cyclic[b]), entries))
        return out

    def sources(self, tau: int) -> list[tuple[int, bool]]:
        t = self.tables
        k0, k1 = t.src_start[tau], t.src_start[tau + 1]
        return [(int(p), bool(m)) for p, m in zip(t.src_state[k0:k1], t.src_primed[k0:k1],
                                                   strict=True)]

    def term(self, tau: int) -> Term:
        """The transition's term, rebuilt from its bytecode (for comments)."""
        t = self.tables
        stack: list[Term] = []
        for pc in range(t.code_start[tau], t.code_start[tau + 1]):
            op, arg = int(t.code_op[pc]), int(t.code_arg[pc])
            if op == OP_CONST:
                stack.append(Const(float(t.consts[arg])))
            elif op in (OP_NEW, OP_OLD):
                stack.append(Var(self.states[arg], op == OP_NEW))
            elif op == OP_CUR:
                stack.append(Cur(t.columns[arg]))
            else:
                name = _OP_NAME[op]
                k = OPS[name].arity
                args = tuple(stack[-k:])
                del stack[-k:]
                stack.append(Apply(name, args))
        return stack[0]

    def describe(self, tau: int) -> str:
        srcs = ", ".join(self.states[p] + ("'" if m else "") for p, m in self.sources(tau))
        return f"{{{srcs}}} := {self.term(tau)}"

    def is_copy(self, tau: int, source: tuple[int, bool]) -> bool:
        """True if τ's term is exactly its one source variable."""
        t = self.tables
        c0 = t.code_start[tau]
        return (t.code_start[tau + 1] - c0 == 1 and int(t.code_arg[c0]) == source[0]
                and int(t.code_op[c0]) == (OP_NEW if source[1] else OP_OLD))

    def const(self, pc: int) -> str:
        """The constant operand of bytecode position ``pc``: a literal."""
        return _literal(float(self.tables.consts[self.tables.code_arg[pc]]))

    def cur(self, column: int, lab: _Label) -> str:
        """Data column ``column`` of the event: loaded once at the top of the label."""
        lab.columns.add(column)
        return f"cur{column}_{lab.number}"

    def old(self, p: int) -> Pair:
        """Status and value of p in the previous configuration."""
        if self.registers:
            return f"s{p}", f"v{p}"
        return f"_get(status, {p})", f"_get(value, {p})"

    def tag_groups(self) -> list[list[int]]:
        """The tags (codes) grouped by step: tags whose labels have the same transitions
        (sources, target, term) in the same schedule share one branch of the event loop —
        fewer mispredicted branches when tags interleave (a running sum over three tags
        is one branch), and less code to compile."""
        groups: dict[tuple[object, ...], list[int]] = {}
        for k in range(len(self.tags)):
            groups.setdefault(self.step_signature(1 + k), []).append(k)
        return list(groups.values())

    def row_states(self) -> list[int]:
        """The states ``run_rows`` keeps per key: those a tag step reads from the previous
        configuration (a source without a prime) and the outputs (a skipped event repeats
        them). No step reads any other state's previous value (only, if at all, its new
        one, written first in that step), so that value matters only to a caller that wants
        the configurations."""
        t = self.tables
        kept = set(t.final.tolist())
        for label in range(1, len(self.tags) + 1):
            for _, entries in self.blocks(label):
                for _, writers in entries:
                    kept.update(p for tau in writers for p, m in self.sources(tau) if not m)
        return sorted(kept)

    def step_signature(self, label: int) -> tuple[object, ...]:
        """What label's step computes, with transition numbers replaced by their content."""
        t = self.tables

        def transition(tau: int) -> tuple[object, ...]:
            code = range(t.code_start[tau], t.code_start[tau + 1])
            return (tuple(self.sources(tau)),
                    tuple((int(t.code_op[pc]), float(t.consts[t.code_arg[pc]]).hex()
                           if t.code_op[pc] == OP_CONST else int(t.code_arg[pc]))
                          for pc in code))

        return tuple((cyclic, tuple((q, tuple(transition(w) for w in writers))
                                    for q, writers in entries))
                     for cyclic, entries in self.blocks(label))

    # ------------------------------------------------------------------ expressions

    def expression(self, fn: _Function, indent: int, tau: int, lab: _Label) -> str:
        """The term of ``tau`` as an expression; deep subterms spill to temporaries."""
        t = self.tables
        stack: list[tuple[str, int]] = []  # (expression, nesting depth)
        for pc in range(t.code_start[tau], t.code_start[tau + 1]):
            op, arg = int(t.code_op[pc]), int(t.code_arg[pc])
            if op == OP_CONST:
                stack.append((self.const(pc), 0))
            elif op == OP_NEW:
                stack.append((lab.primed[arg][1], 0))
            elif op == OP_OLD:
                stack.append((self.old(arg)[1], 0))
            elif op == OP_CUR:
                stack.append((self.cur(arg, lab), 0))
            else:
                name = _OP_NAME[op]
                k = OPS[name].arity
                args = stack[-k:]
                del stack[-k:]
                text = _TEMPLATES[name].format(**dict(zip("abc", (a for a, _ in args),
                                                          strict=False)))
                depth = 1 + max(d for _, d in args)
                if depth >= _SPILL_DEPTH:
                    temp = fn.temp()
                    fn.add(indent, f"{temp} = {text}")
                    text, depth = temp, 0
                stack.append((text, depth))
        assert len(stack) == 1
        return stack[0][0]

    # ------------------------------------------------------------------ one label

    def union(self, fn: _Function, indent: int, dst: Pair, seed: Pair | None,
              writers: list[int], lab: _Label) -> None:
        """Assign ``dst ← seed ⊔ ⊔ lift(τ)`` over the writers, without branches.

        Each partial union gets fresh locals (``dst`` plus ``_<j>``), the last one
        ``dst`` itself: every local is assigned once. The union's status is
        tracked statically while it is known.
        """
        live = []
        for tau in writers:
            dead = [p for p, m in self.sources(tau) if m and p not in lab.primed]
            if dead:
                fn.add(indent, f"# τ{tau} never fires here ({self.states[dead[0]]}' is ⊥): "
                               f"{_safe(self.describe(tau))}")
            else:
                live.append(tau)
        acc, cur = (_BOT, ("0", "np.nan")) if seed is None else (_DYN, seed)
        for j, tau in enumerate(live, start=1):
            fn.add(indent, f"# τ{tau}: {_safe(self.describe(tau))}")
            last = j == len(live)
            out = dst if last else (f"{dst[0]}_{j}", f"{dst[1]}_{j}")
            acc, cur = self.writer(fn, indent, tau, acc, cur, out, lab)
            if acc == _TOP and not last:
                fn.add(indent, "# ⊤ absorbs: the remaining writers cannot change the union")
                fn.add(indent, f"{dst[0]} = 2")
                fn.add(indent, f"{dst[1]} = np.nan")
                return
        if not live or cur != dst:  # no writer can fire: the seed (or ⊥) as it is
            fn.add(indent, f"{dst[0]} = {cur[0]}")
            fn.add(indent, f"{dst[1]} = {cur[1]}")

    def writer(self, fn: _Function, indent: int, tau: int, acc: str, cur: Pair, out: Pair,
               lab: _Label) -> tuple[str, Pair]:
        """``out ← cur ⊔ lift(τ)``; returns the new static knowledge and ``out``."""
        srcs = self.sources(tau)
        status = sorted({lab.primed[p][0] if m else self.old(p)[0] for p, m in srcs})
        if acc == _BOT and len(srcs) == 1 and self.is_copy(tau, srcs[0]):
            # A copy q' := p: lifting is the identity, and p's value is already exactly
            # NaN unless p is defined.
            p, m = srcs[0]
            src = lab.primed[p] if m else self.old(p)
            fn.add(indent, f"{out[0]} = {src[0]}")
            fn.add(indent, f"{out[1]} = {src[1]}")
            return _DYN, out
        x = self.expression(fn, indent, tau, lab)
        cs, cv = cur
        if not status:  # no sources: the term's value, statically defined
            if acc == _BOT:
                value, stat, acc = x, "1", _DEF
            elif acc == _DEF:
                value, stat, acc = "np.nan  # d ⊔ d' = ⊤", "2", _TOP
            else:
                value, stat = f"_pick({cs} == 0, {x}, np.nan)", f"_join({cs}, 1)"
        else:
            t = status[0]
            for other in status[1:]:
                t = f"_lift({t}, {other})"
            if len(status) > 1:
                fn.add(indent, f"t{tau}_{lab.number} = {t}")
                t = f"t{tau}_{lab.number}"
            if acc == _BOT:
                value, stat = f"_pick({t} == 1, {x}, np.nan)", t
            elif acc == _DEF:
                value, stat = f"_pick({t} == 0, {cv}, np.nan)", f"_join(1, {t})"
            else:
                value = f"_pick({t} == 0, {cv}, _pick(({cs} == 0) & ({t} == 1), {x}, np.nan))"
                stat = f"_join({cs}, {t})"
            acc = _DYN
        fn.add(indent, f"{out[1]} = {value}")
        fn.add(indent, f"{out[0]} = {stat}")
        return acc, out

    def label(self, fn: _Function, indent: int, label: int, seeds: dict[int, Pair]
              ) -> tuple[set[int], _Label]:
        """The body of Δ_label: locals ``s<q>_<ℓ>``/``v<q>_<ℓ>`` for every written state.

        ``seeds[q]``: the seed locals of initial states at init, empty for tag
        steps. Returns the written states and what the label read.
        """
        lab = _Label(label, dict(seeds))
        n = label
        written: set[int] = set()
        for cyclic, entries in self.blocks(label):
            if not cyclic:
                (q, writers), = entries
                fn.add(indent, f"# {self.states[q]}'")
                self.union(fn, indent, (f"s{q}_{n}", f"v{q}_{n}"), seeds.get(q), writers, lab)
                written.add(q)
                lab.primed[q] = (f"s{q}_{n}", f"v{q}_{n}")
                continue
            names = ", ".join(f"{self.states[q]}'" for q, _ in entries)
            fn.add(indent, f"# cyclic block {{{_safe(names)}}}: Kleene iteration from ⊥ "
                           "until no status changes")
            for q, _ in entries:
                fn.add(indent, f"s{q}_{n} = 0")
                fn.add(indent, f"v{q}_{n} = np.nan")
                written.add(q)
                lab.primed[q] = (f"s{q}_{n}", f"v{q}_{n}")
            fn.add(indent, "changed = True")
            fn.add(indent, "while changed:")
            fn.add(indent + 1, "changed = False")
            for q, writers in entries:
                fn.add(indent + 1, f"# {self.states[q]}'")
                acc = (f"k{q}s_{n}", f"k{q}v_{n}")
                self.union(fn, indent + 1, acc, seeds.get(q), writers, lab)
                fn.add(indent + 1, f"changed = changed | ({acc[0]} != s{q}_{n})")
                fn.add(indent + 1, f"s{q}_{n} = {acc[0]}")
                fn.add(indent + 1, f"v{q}_{n} = {acc[1]}")
        return written, lab

    # ------------------------------------------------------------------ functions

    def emit_init(self) -> list[str]:
        t = self.tables
        fn = _Function()
        fn.add(1, '"""Δ_i(x): the least vector of Equation (1) with x (over I, in order) as '
                  'seed."""')
        seeds: dict[int, Pair] = {}
        for k, q in enumerate(t.initial.tolist()):
            fn.add(1, f"xs{q} = _get(x_s, {k})  # seed of {self.states[q]}")
            fn.add(1, f"xv{q} = _pick(xs{q} == 1, _get(x_v, {k}), np.nan)")
            seeds[q] = (f"xs{q}", f"xv{q}")
        _, lab = self.label(fn, 1, 0, seeds)
        assert not lab.columns, "an init transition reads cur"
        for q in range(t.n_states):
            s_q, v_q = lab.primed.get(q, ("0", "np.nan"))
            fn.add(1, f"_put(status, {q}, {s_q})  # {self.states[q]}")
            fn.add(1, f"_put(value, {q}, {v_q})")
        return ["@numba.jit(**_JIT)", "def init(x_s, x_v, status, value):", *fn.lines]

    def emit_segment(self) -> list[str]:
        """``segment``: one stream's events, the configuration carried across them; before
        it, for a small DT with status modes, ``segment_modes`` (:mod:`codegen.modes`),
        and ``segment_general`` (the general loop), which ``segment`` calls in turn."""
        from .modes import mode_function, steady_modes  # they build on this emitter

        modes = steady_modes(self) if self.registers else None
        if not modes:
            return self._event_loop(by_row=False)
        # The general loop runs a few events a stream (until a steady mode): the
        # configuration in the arrays, which compiles in less time than in locals.
        general = replace(self, registers=False)
        return [*mode_function(self, modes), "", "",
                *general._event_loop(by_row=False, modes=modes), "", "", *_SEGMENT_OF_MODES]

    def emit_rows(self) -> list[str]:
        """``run_rows``: rows in input order, each key's configuration in a row of tables."""
        return self._event_loop(by_row=True)

    def _event_loop(self, by_row: bool, modes: list[tuple[int, ...]] | None = None
                    ) -> list[str]:
        """``run_rows`` or ``segment``; with the steady ``modes`` of :mod:`codegen.modes`
        (the configuration in the arrays), ``segment_general``, which returns at once if
        the statuses are a steady mode, or after the event that makes them one, with the
        index of the next event (``i1`` if none)."""
        from .modes import is_steady

        assert not (modes and self.registers), "segment_general keeps the configuration " \
            "in the arrays: segment_modes reads it there"
        t = self.tables
        fn = _Function()
        if by_row:
            fn.add(1, '"""Rows i0..i1-1 in input order, row i of key keys[i]: that key\'s '
                      'states ROW_STATES are')
            fn.add(1, "row keys[i] of status/value (uint8[k, len(ROW_STATES)], float64[...], "
                      "a value exactly")
            fn.add(1, "NaN unless defined), loaded before the event and stored after; the "
                      "other states go")
            fn.add(1, "to row keys[i] of full_s/full_v (uint8[k, Q], float64[k, Q]) unless "
                      "those have no rows;")
            fn.add(1, 'outputs at the rows."""')
        else:
            fn.add(1, '"""Events i0..i1-1 (code -1 skips one); configuration in place, '
                      'outputs at the rows."""')
        if self.registers and not by_row:
            fn.add(1, "# The configuration in locals; a value is exactly NaN unless defined.")
            for q in range(t.n_states):
                fn.add(1, f"s{q} = _get(status, {q})  # {self.states[q]}")
                fn.add(1, f"v{q} = _pick(s{q} == 1, _get(value, {q}), np.nan)")
        elif not by_row:
            fn.add(1, "# The configuration stays in the arrays (too many states for registers);")
            fn.add(1, "# a value is exactly NaN unless defined.")
            fn.add(1, "for q in range(N_STATES):")
            fn.add(2, "_put(value, q, _pick(_get(status, q) == 1, _get(value, q), np.nan))")
        if modes:
            fn.add(1, f"if {is_steady(modes, lambda q: self.old(q)[0])}:")
            fn.add(2, "return i0  # a steady mode already: segment_modes runs the events")
        kept = self.row_states() if by_row else list(range(t.n_states))
        if by_row:
            fn.add(1, "full = full_s.shape[0] != 0")
        fn.add(1, "for i in range(i0, i1):")
        if by_row:
            fn.add(2, "row = i")
            fn.add(2, "g = _get(keys, i)")
            for j, q in enumerate(kept):
                fn.add(2, f"s{q} = _get2(status, g, {j})  # {self.states[q]}")
                fn.add(2, f"v{q} = _get2(value, g, {j})")
        else:
            fn.add(2, "row = i")
        fn.add(2, "code = _get(codes, row)")
        # Outputs whose status no step changes: stored once after the loop, not per event.
        fixed_status = set(t.final.tolist()) if self.registers and not by_row else set()
        for j, group in enumerate(self.tag_groups()):
            k = group[0]
            names = ", ".join(_safe(repr(self.tags[c])) for c in group)
            fn.add(2, f"{'if' if j == 0 else 'elif'} {_code_test(group)}:  "
                      f"# tag{'s' if len(group) > 1 else ''} {names}")
            where = len(fn.lines)
            written, lab = self.label(fn, 3, 1 + k, {})
            # Event data: each column the label's terms read, loaded once.
            fn.lines[where:where] = [
                "            " + f"cur{c}_{lab.number} = _get2(data, row, {c})  # "
                + ("cur" if t.columns[c] is None else _safe(f"cur.{t.columns[c]}"))
                for c in sorted(lab.columns)]
            fixed_status &= _unchanged_statuses(fn.lines[where:], lab, written)
            fn.add(3, "# the new configuration: a state the tag does not write is ⊥")
            for q in kept:
                new_s, new_v = lab.primed[q] if q in written else ("0", "np.nan")
                if self.registers:
                    fn.add(3, f"s{q} = {new_s}")
                    fn.add(3, f"v{q} = {new_v}")
                else:
                    fn.add(3, f"_put(status, {q}, {new_s})")
                    fn.add(3, f"_put(value, {q}, {new_v})")
            rest = sorted(set(range(t.n_states)) - set(kept))
            if rest:  # by_row: the states only a caller that wants configurations keeps
                fn.add(3, "if full:")
                for q in rest:
                    new_s, new_v = lab.primed[q] if q in written else ("0", "np.nan")
                    fn.add(4, f"_put2(full_s, g, {q}, {new_s})  # {self.states[q]}")
                    fn.add(4, f"_put2(full_v, g, {q}, {new_v})")
            if not t.n_states:
                fn.add(3, "pass")
        if self.tags:
            fn.add(2, "# code -1: a skipped event keeps the configuration")
        for j, q in enumerate(t.final.tolist()):
            s_q, v_q = self.old(q)
            if q in fixed_status:
                fn.add(2, f"_put2(out_v, row, {j}, {v_q})  # output {j}: {self.states[q]}, "
                          "its status after the loop")
            else:
                fn.add(2, f"_put2(out_s, row, {j}, {s_q})  # output {j}: {self.states[q]}")
                fn.add(2, f"_put2(out_v, row, {j}, {v_q})")
        for j, q in enumerate(t.final.tolist()):
            if q in fixed_status:
                fn.add(1, f"for i in range(i0, i1):  # output {j}'s status: no step changes it")
                fn.add(2, f"_put2(out_s, i, {j}, s{q})")
        if modes:
            fn.add(2, f"if {is_steady(modes, lambda q: self.old(q)[0])}:")
            fn.add(3, "return i + 1  # a steady mode: segment_modes runs the rest")
        if by_row:
            for j, q in enumerate(kept):
                fn.add(2, f"_put2(status, g, {j}, s{q})")
                fn.add(2, f"_put2(value, g, {j}, v{q})")
        elif self.registers:
            for q in range(t.n_states):
                fn.add(1, f"_put(status, {q}, s{q})")
                fn.add(1, f"_put(value, {q}, v{q})")
        if by_row:
            return ["@numba.jit(**_JIT, nogil=True)",
                    "def run_rows(codes, data, keys, i0, i1, status, value, full_s, full_v, "
                    "out_s, out_v):",
                    *fn.lines]
        if modes:
            fn.add(1, "return i1")
            return ["@numba.jit(**_JIT)",
                    "def segment_general(codes, data, i0, i1, status, value, out_s, out_v):",
                    *fn.lines]
        return ["@numba.jit(**_JIT)",
                "def segment(codes, data, i0, i1, status, value, out_s, out_v):",
                *fn.lines]


def _unchanged_statuses(lines: list[str], lab: _Label, written: set[int]) -> set[int]:
    """The states whose new status the code of one label (``lines``) sets to their old one:
    ``s<q>_<ℓ>`` resolves, through locals assigned once from another local, to ``s<q>``.

    A running sum's output (``s1_1 = s1``) is one: no event changes its status, so the
    event loop need not store it per event (a byte store beside the value's costs the
    loop a fifth of its speed when it is bound by memory); it is stored once after.
    """
    assigned: dict[str, list[str]] = {}
    for line in lines:
        target, sep, expr = line.strip().partition(" = ")
        if sep and target.startswith(("s", "k")) and target.replace("_", "").isalnum():
            assigned.setdefault(target, []).append(expr.split("  #")[0])

    def resolve(name: str) -> str:
        for _ in range(len(assigned) + 1):  # a chain of copies, never a cycle
            exprs = assigned.get(name)
            if exprs is None or len(exprs) != 1 or not exprs[0].isidentifier():
                return name
            name = exprs[0]
        return name

    return {q for q in written if resolve(lab.primed[q][0]) == f"s{q}"}


_SEGMENT_OF_MODES = [
    "@numba.jit(**_JIT)",
    "def segment(codes, data, i0, i1, status, value, out_s, out_v):",
    '    """Events i0..i1-1 (code -1 skips one); configuration in place, outputs at the rows:',
    "    the general loop until the statuses reach a steady mode, segment_modes from there",
    '    (codegen.modes)."""',
    "    i = segment_general(codes, data, i0, i1, status, value, out_s, out_v)",
    "    if i < i1 and not segment_modes(codes, data, i, i1, status, value, out_s, out_v):",
    '        raise AssertionError("codegen.modes: the general loop stopped outside a steady '
    'mode")',
]
"""``segment`` of a module with status modes."""


_RUNNERS = '''
@numba.jit(**_JIT, nogil=True)
def run_chunk(codes, data, order, offsets, g0, g1, status0, value0, out_s, out_v, fin_s,
              fin_v, gather):
    """Keys g0..g1-1, each from status0/value0: outputs at the rows, final configurations
    at fin[g] (none if fin has no rows: the caller does not want them). Without the GIL:
    the engine runs chunks of keys in parallel threads.

    With ``gather``, key g's rows are order[offsets[g]:offsets[g+1]]: its events are
    first copied into contiguous buffers and its outputs copied back after (keys
    interleaved in the input scatter a key's rows, and the step's long loop body would
    wait on every scattered read and write, 3-6x slower on 10M rows over 100k keys;
    tight copy loops overlap those misses). Without, key g's rows are
    offsets[g]..offsets[g+1]-1 themselves (one stream: order is not read)."""
    status = np.empty(N_STATES, dtype=np.uint8)
    value = np.empty(N_STATES)
    finals = fin_s.shape[0] != 0
    longest = 0
    if gather:
        for g in range(g0, g1):
            longest = max(longest, _get(offsets, g + 1) - _get(offsets, g))
    c_buf = np.empty(longest, dtype=codes.dtype)
    d_buf = np.empty((longest, data.shape[1]))
    s_buf = np.empty((longest, N_OUT), dtype=np.uint8)
    v_buf = np.empty((longest, N_OUT))
    for g in range(g0, g1):
        for q in range(N_STATES):
            _put(status, q, _get(status0, q))
            _put(value, q, _get(value0, q))
        start, end = _get(offsets, g), _get(offsets, g + 1)
        # One call of segment (one inlined copy of the step): on the buffers or in place.
        ev_c, ev_d, i0, i1, ev_s, ev_v = codes, data, start, end, out_s, out_v
        if gather:
            for j in range(end - start):
                r = _get(order, start + j)
                _put(c_buf, j, _get(codes, r))
                for c in range(data.shape[1]):
                    _put2(d_buf, j, c, _get2(data, r, c))
            ev_c, ev_d, i0, i1, ev_s, ev_v = c_buf, d_buf, 0, end - start, s_buf, v_buf
        segment(ev_c, ev_d, i0, i1, status, value, ev_s, ev_v)
        if gather:
            for j in range(end - start):
                r = _get(order, start + j)
                for k in range(N_OUT):
                    _put2(out_s, r, k, _get2(s_buf, j, k))
                    _put2(out_v, r, k, _get2(v_buf, j, k))
        if finals:
            for q in range(N_STATES):
                _put2(fin_s, g, q, _get(status, q))
                _put2(fin_v, g, q, _get(value, q))
'''


def emit(tables: Tables, *, states: Sequence[str] | None = None,
         tags: Sequence[str] | None = None, registers: bool | None = None,
         loops: bool | None = None) -> str:
    """The source of a module of Numba functions for the DT of ``tables``.

    ``states`` and ``tags`` (``dt.states``, ``dt.alphabet``) only name things in
    comments; by default states are ``q0, q1, …`` and the number of tags is
    read from the tables. ``registers``: the configuration in locals (default: up
    to :data:`MAX_REGISTER_STATES` states). ``loops``: the loop shape of
    :mod:`codegen.loops` (default: above :data:`MAX_UNROLLED_STATES` states; the
    configuration is in arrays then). Pure: equal arguments give equal text.
    """
    n_tags = len(tables.label_start) - 2
    states = tuple(states) if states is not None else tuple(f"q{k}"
                                                            for k in range(tables.n_states))
    tags = tuple(tags) if tags is not None else tuple(f"tag{k}" for k in range(n_tags))
    if len(states) != tables.n_states or len(tags) != n_tags:
        raise ValueError(f"names for {len(states)} states and {len(tags)} tags; the tables "
                         f"have {tables.n_states} and {n_tags}")
    if loops is None:
        loops = tables.n_states > MAX_UNROLLED_STATES
    if registers is None:
        registers = tables.n_states <= MAX_REGISTER_STATES and not loops
    if loops and registers:
        raise ValueError("the loop shape keeps the configuration in arrays: registers=True "
                         "and loops=True exclude each other")
    em = _Emitter(tables, states, tags, registers)
    header = [
        '"""A Numba kernel for one data transducer, generated by codegen.emit (seed 003, §5.1).',
        "",
        f"{tables.n_states} states, {n_tags} tags, {len(tables.final)} outputs, "
        f"{len(tables.src_start) - 1} transitions. The configuration is in "
        + ("locals s<q>/v<q>." if registers else
           "the arrays; blocks of states step in loops (codegen.loops)." if loops else
           "the arrays."),
        "s<q>_<l>/v<q>_<l>: the new value q' on label l (0 init, 1 + k tag k). Status 0 ⊥,",
        "1 defined, 2 ⊤. Generated: do not edit (the file is named by the sha256 of this text).",
        '"""',
        f"# runtime: codegen.kernels helpers {_runtime_digest()}",
        "",
        "import numba",
        "import numpy as np",
        "",
        "from codegen.kernels import (_b, _fmax, _fmin, _get, _get2, _join, _lift, _mod, _pick,",
        "                             _pow, _put, _put2)",
        "",
        '_JIT = {"nopython": True, "cache": True, "error_model": "numpy"}',
        f"N_STATES = {tables.n_states}",
        f"N_TAGS = {n_tags}",
        f"N_OUT = {len(tables.final)}",
        "# states: " + _safe(", ".join(f"{k} {q}" for k, q in enumerate(states))),
        "",
        "",
    ]
    if loops:
        from .loops import loop_module  # it builds on this module's emitter

        body = [*loop_module(em), "", *_RUNNERS.splitlines()]
    else:
        body = [*em.emit_init(), "", "", *em.emit_segment(), "", *_RUNNERS.splitlines()]
    if registers and tables.n_states <= MAX_ROW_STATES and len(em.row_states()) <= MAX_ROW_KEPT:
        body += ["", "", f"ROW_STATES = {tuple(em.row_states())}", "", "", *em.emit_rows()]
    return "\n".join(header + body) + "\n"
