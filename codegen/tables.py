"""Flat transition tables of a data transducer, for the ``"table"`` engine.

Seed 003, §5.1: one step Δ_σ(c, d) is the least vector c' with

    c'(q') = seed(q) ⊔ ⊔_{(σ, X, q', t) ∈ Δ_σ} [[t]](c ∪ c'|X, d)

(Equation (1); ``seed`` is the initial vector x on I at init, ⊥ otherwise).
:func:`flatten` turns a :class:`dt.DT` into plain numpy arrays (:class:`Tables`)
that one generic Numba kernel (:mod:`codegen.kernels`) interprets for every
query, instead of the worklist of Figure 25:

* **labels** — label 0 is ``init``, label ``1 + k`` is the tag ``dt.alphabet[k]``;
  an ``eps`` transition belongs to every label (§5.2.1);
* **schedule** — per label, the states written on that label grouped into the
  strongly connected components of the within-step dependency graph (edge
  p → q when a transition of the label targets q' and reads p'), in
  topological order. A block of one state without a self-edge is *acyclic*:
  its value is computed once. A *cyclic* block is solved by Kleene iteration
  from ⊥: every value rises at most ⊥ → d → ⊤, so at most 2·|block| + 1
  rounds reach the least fixpoint (we stop at the first round that changes no
  status; a defined value, once reached, never changes — the iterates form a
  chain in the flat order);
* **terms** — postfix bytecode for a stack machine (one opcode per operation
  of :data:`dt.terms.OPS`, same IEEE semantics);
* **lifting** — per transition from its *source list* X (which may contain
  variables the term does not read): ⊥ if a source is ⊥, else ⊤ if a source
  is ⊤, else the term's value.

Hot loop of one step (``seed`` all ⊥ except at init)::

    new ← seed
    for b in blocks of label:
        rounds ← 1 if acyclic(b) else until no status changes
        repeat rounds:
            for q in states of b:
                acc ← seed[q]
                for τ in writers of q on the label:
                    acc ← acc ⊔ lift(τ.sources, run bytecode of τ)
                new[q] ← acc
    outputs ← new[final]

Transitions that are always ⊥ on a label (a primed source never written on
that label) are left out of its schedule
(:func:`codegen.optimize.prune_dead.live_labels`).

Events are tag codes (:func:`code_dtype`: int8 for up to 128 tags) and a data
matrix; skipped events (tag code -1) leave the configuration as it is.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dt.model import DT, INIT
from dt.terms import OPS, Apply, Const, Cur, Term, Var

from .optimize._common import sccs_topological
from .optimize.prune_dead import live_labels

__all__ = [
    "OPCODES",
    "OP_CONST",
    "OP_CUR",
    "OP_NEW",
    "OP_OLD",
    "Tables",
    "code_dtype",
    "flatten",
    "label_of",
]

# ----------------------------------------------------------------- bytecode opcodes

OP_CONST = 0
"""Push ``consts[arg]``."""
OP_NEW = 1
"""Push the new value of state ``arg`` (a primed source, q')."""
OP_OLD = 2
"""Push the previous configuration's value of state ``arg`` (an unprimed source)."""
OP_CUR = 3
"""Push column ``arg`` of the event data (``cur`` or ``cur.FIELD``)."""

_FIRST_OP = 4
OPCODES: dict[str, int] = {name: _FIRST_OP + k for k, name in enumerate(OPS)}
"""Opcode of each operation of :data:`dt.terms.OPS`: pops its arity, pushes one value."""

# codegen.kernels dispatches on exactly these operations: fail at import if OPS changes.
_KNOWN = frozenset({"or", "and", "eq", "ne", "lt", "le", "gt", "ge", "add", "sub", "mul", "div",
                    "mod", "neg", "not", "min", "max", "abs", "sqrt", "exp", "log", "pow",
                    "floor", "ceil", "if", "fst", "snd"})
assert frozenset(OPS) == _KNOWN, "dt.terms.OPS changed: update codegen.kernels"


def label_of(dt: DT, tag: str) -> int:
    """The label number of a tag (``init`` is 0)."""
    return 1 + dt.alphabet.index(tag)


def code_dtype(n_tags: int) -> np.dtype:
    """The dtype of the tag codes the kernels read for an alphabet of ``n_tags`` tags: the
    narrowest signed integer holding -1..n_tags-1.

    A kernel reads one code per event, and a running sum's loop is bound by memory:
    eight bytes of code beside eight of ``cur`` cost it a quarter of its speed, one
    byte almost nothing. Every engine entry point narrows the codes it is given
    (:meth:`codegen.kernels.ArrayEngine.advance`), and the Monitor's tag conversion
    makes them narrow at once (:func:`qre.runtime.tag_codes.tag_codes`).

    >>> code_dtype(2), code_dtype(128), code_dtype(129)
    (dtype('int8'), dtype('int8'), dtype('int16'))
    """
    for dtype in (np.int8, np.int16, np.int32):
        if n_tags - 1 <= np.iinfo(dtype).max:
            return np.dtype(dtype)
    return np.dtype(np.int64)


@dataclass(frozen=True, eq=False)
class Tables:
    """A DT as flat arrays (see the module docstring). ``T`` transitions, ``Q`` states,
    ``L = 1 + |Σ|`` labels, ``B`` blocks in all, ``E`` block entries in all."""

    n_states: int
    """Q: a configuration is ``status uint8[Q]``, ``value float64[Q]`` aligned with dt.states."""
    columns: tuple[str | None, ...]
    """Event data columns: ``None`` is plain ``cur``, a string is ``cur.FIELD``."""

    initial: np.ndarray
    """int64[|I|]: state of each initial state, in the order of the initial vector."""
    final: np.ndarray
    """int64[|F|]: state of each final state, in the order of the output vector."""

    src_start: np.ndarray
    """int64[T + 1]: transition τ's sources are ``src_state[src_start[τ]:src_start[τ+1]]``."""
    src_state: np.ndarray
    """int64[S]: the state of each source."""
    src_primed: np.ndarray
    """uint8[S]: 1 for a primed source q' (read from the new values), 0 for q (old)."""

    code_start: np.ndarray
    """int64[T + 1]: τ's bytecode is ``code_op/code_arg[code_start[τ]:code_start[τ+1]]``."""
    code_op: np.ndarray
    """int64[C]: opcodes (``OP_*`` or an entry of :data:`OPCODES`), postfix order."""
    code_arg: np.ndarray
    """int64[C]: operand: index into ``consts`` (OP_CONST), a state (OP_NEW/OP_OLD),
    a data column (OP_CUR); 0 for operations."""
    consts: np.ndarray
    """float64[K]: the literals of all terms."""
    max_stack: int
    """The deepest stack any term needs (≥ 1)."""

    label_start: np.ndarray
    """int64[L + 1]: label ℓ's blocks are ``label_start[ℓ]:label_start[ℓ+1]``, topologically
    ordered (a block reads primed values only of earlier blocks and of itself)."""
    block_start: np.ndarray
    """int64[B + 1]: block b's entries are ``block_start[b]:block_start[b+1]``."""
    block_cyclic: np.ndarray
    """uint8[B]: 1 if the block is a cyclic SCC (Kleene iteration), 0 if evaluated once."""
    entry_state: np.ndarray
    """int64[E]: the state an entry computes."""
    writer_start: np.ndarray
    """int64[E + 1]: entry e's writers are ``writers[writer_start[e]:writer_start[e+1]]``."""
    writers: np.ndarray
    """int64[W]: transitions (indices into dt.transitions) whose target is the entry's state
    and that fire on the block's label; their union is the state's new value."""

    def kernel_args(self) -> tuple[np.ndarray, ...]:
        """The arrays in the order :func:`codegen.kernels.run_table` takes them."""
        return (self.src_start, self.src_state, self.src_primed, self.code_start,
                self.code_op, self.code_arg, self.consts, self.label_start,
                self.block_start, self.block_cyclic, self.entry_state, self.writer_start,
                self.writers)


# ----------------------------------------------------------------- flattening


def flatten(dt: DT) -> Tables:
    """The :class:`Tables` of ``dt``."""
    columns = _columns(dt)
    column_of = {c: k for k, c in enumerate(columns)}
    pos = dt.state_index

    src_start, src_state, src_primed = [0], [], []
    code_start, code_op, code_arg = [0], [], []
    consts: list[float] = []
    max_stack = 1
    for t in dt.transitions:
        for v in sorted(t.sources, key=lambda v: (v.name, v.primed)):
            src_state.append(pos[v.name])
            src_primed.append(1 if v.primed else 0)
        src_start.append(len(src_state))
        depth = _compile_term(t.term, pos, column_of, consts, code_op, code_arg)
        max_stack = max(max_stack, depth)
        code_start.append(len(code_op))

    label_start, block_start, block_cyclic = [0], [0], []
    entry_state, writer_start, writers = [], [0], []
    live = live_labels(dt)
    for label in (INIT, *dt.alphabet):
        number = 0 if label == INIT else label_of(dt, label)
        fires = [k for k, labels in enumerate(live) if number in labels]
        by_target: dict[int, list[int]] = {}
        for k in fires:
            by_target.setdefault(pos[dt.transitions[k].target], []).append(k)
        edges: dict[int, set[int]] = {q: set() for q in by_target}
        for q, ks in by_target.items():
            for k in ks:
                for v in dt.transitions[k].sources:
                    if v.primed and pos[v.name] in by_target:
                        edges[pos[v.name]].add(q)
        for scc in sccs_topological(sorted(by_target), edges):
            cyclic = len(scc) > 1 or scc[0] in edges[scc[0]]
            for q in scc:
                entry_state.append(q)
                writers.extend(by_target[q])
                writer_start.append(len(writers))
            block_cyclic.append(1 if cyclic else 0)
            block_start.append(len(entry_state))
        label_start.append(len(block_cyclic))

    i64 = np.int64
    return Tables(
        n_states=len(dt.states),
        columns=columns,
        initial=np.array([pos[q] for q in dt.initial], dtype=i64),
        final=np.array([pos[q] for q in dt.final], dtype=i64),
        src_start=np.array(src_start, dtype=i64),
        src_state=np.array(src_state, dtype=i64),
        src_primed=np.array(src_primed, dtype=np.uint8),
        code_start=np.array(code_start, dtype=i64),
        code_op=np.array(code_op, dtype=i64),
        code_arg=np.array(code_arg, dtype=i64),
        consts=np.array(consts, dtype=np.float64),
        max_stack=max_stack,
        label_start=np.array(label_start, dtype=i64),
        block_start=np.array(block_start, dtype=i64),
        block_cyclic=np.array(block_cyclic, dtype=np.uint8),
        entry_state=np.array(entry_state, dtype=i64),
        writer_start=np.array(writer_start, dtype=i64),
        writers=np.array(writers, dtype=i64),
    )


def _columns(dt: DT) -> tuple[str | None, ...]:
    """Plain ``cur`` (if read) first, then the fields read, sorted."""
    plain: tuple[str | None, ...] = (None,) if dt.reads_scalar_cur else ()
    return plain + tuple(sorted(dt.fields))


def _compile_term(term: Term, pos: dict[str, int], column_of: dict[str | None, int],
                  consts: list[float], code_op: list[int], code_arg: list[int]) -> int:
    """Append the postfix code of ``term``; return the stack depth it needs.

    Iterative post-order walk (terms may be deep). Depth: the classic rule for a
    node whose children need d_1..d_k: max_j (j + d_j) over 0-based child j.
    """
    need: dict[int, int] = {}
    stack: list[tuple[Term, bool]] = [(term, False)]
    while stack:
        node, expanded = stack.pop()
        if isinstance(node, Apply) and not expanded:
            stack.append((node, True))
            stack.extend((a, False) for a in reversed(node.args))
            continue
        if isinstance(node, Const):
            code_op.append(OP_CONST)
            code_arg.append(len(consts))
            consts.append(float(node.value))
            need[id(node)] = 1
        elif isinstance(node, Var):
            code_op.append(OP_NEW if node.primed else OP_OLD)
            code_arg.append(pos[node.name])
            need[id(node)] = 1
        elif isinstance(node, Cur):
            code_op.append(OP_CUR)
            code_arg.append(column_of[node.field])
            need[id(node)] = 1
        else:
            assert isinstance(node, Apply)
            code_op.append(OPCODES[node.op])
            code_arg.append(0)
            need[id(node)] = max(j + need[id(a)] for j, a in enumerate(node.args))
    return need[id(term)]
