"""The ``"table"`` engine: one generic Numba kernel interpreting :class:`~codegen.tables.Tables`.

Seed 003, §5.1 (Equation (1), Theorem 5.1). The kernel is compiled once (and
cached on disk) for every query: a query only changes the table *arrays*. It is
bit-for-bit equal to :mod:`dt.reference` — terms follow the IEEE semantics of
:mod:`dt.terms` (``error_model="numpy"`` so ``x/0`` is ±inf/NaN, never an
exception) — and the tests check it differentially.

Arrays follow the public contract (docs/API.md): a configuration is
``status uint8[Q]`` (0 ⊥, 1 defined, 2 ⊤) and ``value float64[Q]`` (NaN where
not defined); events are ``codes int[n]`` (any integer dtype, narrowed to
:func:`codegen.tables.code_dtype`; index into the alphabet; -1 = an
event of another tag, skipped: the configuration stays and the output row
repeats) and data ``float64[n, f]`` in the order of ``Tables.columns``.

Public API:

* :func:`run_table` / :func:`run_table_keys` / :func:`initial` — the raw kernels over
  table arrays (one stream; many keyed streams in parallel; Δ_i);
* :class:`ArrayEngine` — the array API for the Monitor (``initial_config``, ``advance``,
  ``advance_keys``) with the one copy of its input validation, shared with the
  ``"codegen"`` engine (:class:`codegen.generated.CodegenEngine`);
  :class:`TableEngine` — that API over this kernel;
* :func:`chunk_bounds` / :func:`default_chunks` — the parallel split of keys (both engines);
  :func:`in_range` — the one-pass check of tag codes; :func:`narrowed` — that check
  while narrowing them to the kernels' dtype;
  helpers of the generated kernels: ``_b``, ``_mod``, ``_fmin``, ``_fmax``, ``_pow`` (terms,
  shared with this kernel) and the intrinsics ``_pick``, ``_lift``, ``_join`` and the element access
  ``_get``/``_put``/``_get2``/``_put2``;
* :func:`table_initial` / :func:`table_evaluate` / :func:`engine_evaluate` — mirrors of
  :func:`dt.reference.initial_config` / :func:`dt.reference.evaluate` (for tests).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import llvmlite.binding as llvm
import numba
import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

from dt.errors import EvaluationError
from dt.model import DT
from dt.terms import EventValue
from dt.values import XValue, decode, encode

from .grouping import group_rows, is_permutation
from .numba_cache import guard_namespace
from .tables import OPCODES, Tables, code_dtype, flatten

__all__ = ["ArrayEngine", "TableEngine", "chunk_bounds", "default_chunks", "engine_evaluate",
           "in_range", "initial", "narrowed", "run_table", "run_table_keys", "table_evaluate",
           "table_initial"]

_JIT = {"nopython": True, "cache": True, "error_model": "numpy"}

_CODE_INPUTS = tuple(np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
"""Code dtypes checked as they are; others (unsigned, floats) go through int64 first."""

# Opcodes as plain globals: Numba freezes them into the compiled code.
_OR, _AND, _EQ, _NE = OPCODES["or"], OPCODES["and"], OPCODES["eq"], OPCODES["ne"]
_LT, _LE, _GT, _GE = OPCODES["lt"], OPCODES["le"], OPCODES["gt"], OPCODES["ge"]
_ADD, _SUB, _MUL, _DIV = OPCODES["add"], OPCODES["sub"], OPCODES["mul"], OPCODES["div"]
_MOD, _NEG, _NOT, _MIN = OPCODES["mod"], OPCODES["neg"], OPCODES["not"], OPCODES["min"]
_MAX, _ABS, _SQRT, _EXP = OPCODES["max"], OPCODES["abs"], OPCODES["sqrt"], OPCODES["exp"]
_LOG, _POW, _FLOOR, _CEIL = OPCODES["log"], OPCODES["pow"], OPCODES["floor"], OPCODES["ceil"]
_IF, _FST, _SND = OPCODES["if"], OPCODES["fst"], OPCODES["snd"]


# --------------------------------------------------------------------------- kernels


@intrinsic
def _b(typingctx, x):  # type: ignore[no-untyped-def]
    """``1.0 if x else 0.0`` (x a bool) as one instruction (``uitofp``): no call, no branch."""
    if not isinstance(x, types.Boolean):
        return None

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        return builder.uitofp(args[0], ir.DoubleType())

    return types.float64(types.boolean), codegen


@numba.jit(**_JIT)
def _mod(a: float, b: float) -> float:
    """np.mod exactly: numpy's npy_divmod remainder (Numba's np.mod differs on zero signs)."""
    mod = np.fmod(a, b)
    if b == 0.0:
        return mod
    if mod != 0.0:
        if (b < 0.0) != (mod < 0.0):
            mod += b
    else:
        mod = math.copysign(0.0, b)
    return mod


@numba.jit(**_JIT)
def _fmin(a: float, b: float) -> float:
    """np.minimum exactly: NaN propagates; on ties (0.0 vs -0.0) the second argument wins."""
    if math.isnan(a) or math.isnan(b):
        return a + b
    return a if a < b else b


@numba.jit(**_JIT)
def _fmax(a: float, b: float) -> float:
    """np.maximum exactly: NaN propagates; on ties (0.0 vs -0.0) the second argument wins."""
    if math.isnan(a) or math.isnan(b):
        return a + b
    return a if a > b else b


_POW_SYMBOL = "qre_c_pow"
"""The C library's ``pow`` under a name LLVM does not know (see :func:`_pow`)."""


def _register_pow() -> None:
    """Make :data:`_POW_SYMBOL` the address the JIT links for C's ``pow`` (the function
    Python's ``math.pow`` calls too). Registered at import, before any kernel — compiled
    or loaded from Numba's disk cache — is linked."""
    address = llvm.address_of_symbol("pow")
    if not address:  # pragma: no cover - every C library has pow
        raise ImportError("codegen.kernels: the C library's pow is not loaded in this process")
    llvm.add_symbol(_POW_SYMBOL, address)


_register_pow()


@intrinsic
def _c_pow(typingctx, a, b):  # type: ignore[no-untyped-def]
    """The C library's ``pow(a, b)``, called under a name of its own (:data:`_POW_SYMBOL`).

    Not LLVM's ``llvm.pow`` or ``pow``: LLVM would rewrite a call whose exponent it
    knows (a literal of a generated kernel) — ``pow(x, 0.5)`` into ``sqrt``, ``pow(x,
    2)`` into ``x * x``, ``pow(x, -1)`` into ``1 / x`` — and a C library need not round
    those alike (glibc differs about once in a thousand), so the generated kernel would
    differ from this one, whose constants are read at run time. :func:`_pow` makes those
    three cases part of the definition instead. ``readnone``, as ``llvm.pow``.
    """
    if not (isinstance(a, types.Float) and isinstance(b, types.Float)):
        return None

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        double = ir.DoubleType()
        fn = cgutils.get_or_insert_function(builder.module,
                                            ir.FunctionType(double, [double, double]),
                                            _POW_SYMBOL)
        fn.attributes.add("nounwind")
        fn.attributes.add("readnone")
        x, y = (context.cast(builder, v, t, types.float64)
                for v, t in zip(args, signature.args, strict=True))
        return builder.call(fn, [x, y])

    return types.float64(a, b), codegen


@numba.jit(**_JIT)
def _pow(a: float, b: float) -> float:
    """``pow`` as :data:`dt.terms.OPS` defines it: ``a * a``, ``√a`` and ``1 / a`` for the
    exponents 2, 0.5 and -1 (one correctly rounded IEEE operation each, with C99's
    ``pow(-0, 0.5) = +0`` and ``pow(-inf, 0.5) = +inf``), else the C library's ``pow``.

    For a literal exponent (a generated kernel) LLVM folds the tests away: ``pow(x, 2)``
    costs a multiplication, as LLVM's own rewrite would, on every engine alike.
    """
    if b == 2.0:
        return a * a
    if b == 0.5:
        return np.inf if a == -np.inf else abs(np.sqrt(a))
    if b == -1.0:
        return 1.0 / a
    return _c_pow(a, b)


@intrinsic
def _pick(typingctx, c, a, b):  # type: ignore[no-untyped-def]
    """``a if c else b`` (c a bool, a and b floats) as one ``select`` instruction.

    For the generated kernels (:mod:`codegen.emit`): a conditional expression is
    a branch in Numba's IR and a jitted helper is a call with an error-status
    check, and Numba's and LLVM's compile times grow with both; an intrinsic
    keeps a label's code one basic block.
    """
    if not isinstance(c, types.Boolean):
        return None

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        return builder.select(*args)

    return types.float64(types.boolean, types.float64, types.float64), codegen


@intrinsic
def _lift(typingctx, a, b):  # type: ignore[no-untyped-def]
    """The lifted status of two sources (§5.1): 0 if one is ⊥ (0), else their max (⊤ = 2
    wins over defined = 1). Associative, so k sources fold pairwise. One ``select``
    chain, no call and no branch (see :func:`_pick`)."""
    if not (isinstance(a, types.Integer) and isinstance(b, types.Integer)):
        return None

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        x, y = (context.cast(builder, v, t, types.int64)
                for v, t in zip(args, signature.args, strict=True))
        zero = ir.Constant(ir.IntType(64), 0)
        bot = builder.or_(builder.icmp_signed("==", x, zero), builder.icmp_signed("==", y, zero))
        return builder.select(bot, zero, builder.select(builder.icmp_signed(">", x, y), x, y))

    return types.int64(a, b), codegen


@intrinsic
def _join(typingctx, a, b):  # type: ignore[no-untyped-def]
    """The status of a union a ⊔ b (§5.1): ``min(a + b, 2)`` — ⊥ (0) is the identity,
    anything else meets anything else in ⊤ (2), equal values included."""
    if not (isinstance(a, types.Integer) and isinstance(b, types.Integer)):
        return None

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        x, y = (context.cast(builder, v, t, types.int64)
                for v, t in zip(args, signature.args, strict=True))
        total = builder.add(x, y)
        two = ir.Constant(ir.IntType(64), 2)
        return builder.select(builder.icmp_signed(">", total, two), two, total)

    return types.int64(a, b), codegen


def _element(context, builder, aryty, ary, indices):  # type: ignore[no-untyped-def]
    """Pointer to an element of a C-contiguous array value: no stack copy of the array
    struct (Numba's own indexing makes one per access, and LLVM's SROA pass then takes
    time superlinear in their number)."""
    data = builder.extract_value(ary, 4)  # the array model's fields: meminfo, parent,
    offset = indices[-1]  # nitems, itemsize, data, shape, strides
    if len(indices) == 2:
        ncols = builder.extract_value(builder.extract_value(ary, 5), 1)
        offset = builder.add(builder.mul(indices[0], ncols), offset)
    return builder.gep(data, [offset], inbounds=True)


def _contiguous(ary, ndim: int) -> bool:  # type: ignore[no-untyped-def]
    return isinstance(ary, types.Array) and ary.ndim == ndim and ary.layout == "C"


@intrinsic
def _get(typingctx, ary, i):  # type: ignore[no-untyped-def]
    """``ary[i]`` for a 1-D C-contiguous array (no bounds or sign check: i in range)."""
    if not (_contiguous(ary, 1) and isinstance(i, types.Integer)):
        return None

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        index = context.cast(builder, args[1], signature.args[1], types.intp)
        return builder.load(_element(context, builder, ary, args[0], [index]))

    return ary.dtype(ary, i), codegen


@intrinsic
def _put(typingctx, ary, i, x):  # type: ignore[no-untyped-def]
    """``ary[i] = x`` for a 1-D C-contiguous array, x cast to its dtype."""
    if not (_contiguous(ary, 1) and isinstance(i, types.Integer)):
        return None

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        index = context.cast(builder, args[1], signature.args[1], types.intp)
        value = context.cast(builder, args[2], signature.args[2], ary.dtype)
        builder.store(value, _element(context, builder, ary, args[0], [index]))
        return context.get_dummy_value()

    return types.none(ary, i, x), codegen


@intrinsic
def _get2(typingctx, ary, i, j):  # type: ignore[no-untyped-def]
    """``ary[i, j]`` for a 2-D C-contiguous array (no bounds or sign check)."""
    if not (_contiguous(ary, 2) and isinstance(i, types.Integer)
            and isinstance(j, types.Integer)):
        return None

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        index = [context.cast(builder, a, t, types.intp)
                 for a, t in zip(args[1:], signature.args[1:], strict=True)]
        return builder.load(_element(context, builder, ary, args[0], index))

    return ary.dtype(ary, i, j), codegen


@intrinsic
def _put2(typingctx, ary, i, j, x):  # type: ignore[no-untyped-def]
    """``ary[i, j] = x`` for a 2-D C-contiguous array, x cast to its dtype."""
    if not (_contiguous(ary, 2) and isinstance(i, types.Integer)
            and isinstance(j, types.Integer)):
        return None

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        index = [context.cast(builder, a, t, types.intp)
                 for a, t in zip(args[1:3], signature.args[1:3], strict=True)]
        value = context.cast(builder, args[3], signature.args[3], ary.dtype)
        builder.store(value, _element(context, builder, ary, args[0], index))
        return context.get_dummy_value()

    return types.none(ary, i, j, x), codegen


@numba.jit(**_JIT)
def _binary(op: int, a: float, b: float) -> float:
    """A binary operation of dt.terms.OPS, same IEEE semantics."""
    if op == _ADD:
        return a + b
    if op == _SUB:
        return a - b
    if op == _MUL:
        return a * b
    if op == _DIV:
        return a / b
    if op == _MOD:
        return _mod(a, b)
    if op == _LT:
        return _b(a < b)
    if op == _LE:
        return _b(a <= b)
    if op == _GT:
        return _b(a > b)
    if op == _GE:
        return _b(a >= b)
    if op == _EQ:
        return _b(a == b)
    if op == _NE:
        return _b(a != b)
    if op == _OR:
        return _b(a != 0.0 or b != 0.0)
    if op == _AND:
        return _b(a != 0.0 and b != 0.0)
    if op == _MIN:
        return _fmin(a, b)
    if op == _MAX:
        return _fmax(a, b)
    if op == _POW:
        return _pow(a, b)
    if op == _FST:
        return a
    return b  # _SND


@numba.jit(**_JIT)
def _is_unary(op: int) -> bool:
    return op in (_NEG, _NOT, _ABS, _SQRT, _EXP, _LOG, _FLOOR, _CEIL)


@numba.jit(**_JIT)
def _unary(op: int, a: float) -> float:
    if op == _NEG:
        return -a
    if op == _NOT:
        return _b(a == 0.0)
    if op == _ABS:
        return abs(a)
    if op == _SQRT:
        return np.sqrt(a)
    if op == _EXP:
        return np.exp(a)
    if op == _LOG:
        return np.log(a)
    if op == _FLOOR:
        return np.floor(a)
    return np.ceil(a)  # _CEIL


@numba.jit(**_JIT)
def _segment(src_start, src_state, src_primed, code_start, code_op, code_arg, consts,
             label_start, block_start, block_cyclic, entry_state, writer_start, writers,
             final, labels, data, seed_s, seed_v, rows, i0, i1, old_s, old_v, new_s, new_v,
             stack, out_s, out_v):
    """The engine: one step of Equation (1) per row ``rows[i0:i1]`` (label -1 = skip).

    Starts from ``old``; ``new`` and ``stack`` are scratch; writes the outputs
    after every event at its row of ``out``; returns the final configuration
    (one of the two buffers). Every per-event operation is in this one
    function on purpose: Numba reference-counts array arguments at every
    non-inlined call (and an ``inline="always"`` step function measured 2x
    slower), which costs more than the work of a whole transition; callers pay
    it once per segment. ``seed`` is added at every step (the initial vector
    at init, all ⊥ for tag steps).
    """
    n_states = old_s.shape[0]
    n_out = final.shape[0]
    for i in range(i0, i1):
        row = rows[i]
        label = labels[row]
        if label >= 0:
            for q in range(n_states):
                new_s[q] = seed_s[q]
                new_v[q] = seed_v[q]
            for b in range(label_start[label], label_start[label + 1]):
                e0 = block_start[b]
                e1 = block_start[b + 1]
                cyclic = block_cyclic[b] != 0
                if cyclic:
                    # Kleene iteration from ⊥: statuses only rise, so ≤ 2·|b|+1 rounds.
                    for e in range(e0, e1):
                        new_s[entry_state[e]] = 0
                        new_v[entry_state[e]] = np.nan
                changed = True
                while changed:
                    changed = False
                    for e in range(e0, e1):
                        q = entry_state[e]
                        # seed(q) ⊔ ⊔ over q's writers of their lifted values.
                        acc_s = seed_s[q]
                        acc_v = seed_v[q]
                        for w in range(writer_start[e], writer_start[e + 1]):
                            if acc_s == 2:
                                break  # ⊤ absorbs everything: the other writers cannot matter
                            tau = writers[w]
                            status = 1
                            for k in range(src_start[tau], src_start[tau + 1]):
                                p = src_state[k]
                                s = new_s[p] if src_primed[k] else old_s[p]
                                if s == 0:
                                    status = 0
                                    break
                                if s == 2:
                                    status = 2
                            if status == 0:
                                continue  # ⊥ is the identity of ⊔
                            if acc_s != 0 or status == 2:
                                acc_s = 2
                                acc_v = np.nan
                                continue
                            # All sources defined: run the term's postfix bytecode.
                            sp = 0
                            for pc in range(code_start[tau], code_start[tau + 1]):
                                op = code_op[pc]
                                if op == 0:
                                    stack[sp] = consts[code_arg[pc]]
                                    sp += 1
                                elif op == 1:
                                    stack[sp] = new_v[code_arg[pc]]
                                    sp += 1
                                elif op == 2:
                                    stack[sp] = old_v[code_arg[pc]]
                                    sp += 1
                                elif op == 3:
                                    stack[sp] = data[row, code_arg[pc]]
                                    sp += 1
                                elif op == _IF:
                                    sp -= 2
                                    c = stack[sp - 1]
                                    stack[sp - 1] = stack[sp] if c != 0.0 else stack[sp + 1]
                                elif _is_unary(op):
                                    stack[sp - 1] = _unary(op, stack[sp - 1])
                                else:
                                    sp -= 1
                                    stack[sp - 1] = _binary(op, stack[sp - 1], stack[sp])
                            acc_s = 1
                            acc_v = stack[0]
                        if cyclic and acc_s != new_s[q]:
                            changed = True
                        new_s[q] = acc_s
                        new_v[q] = acc_v
            old_s, new_s = new_s, old_s
            old_v, new_v = new_v, old_v
        for j in range(n_out):
            out_s[row, j] = old_s[final[j]]
            out_v[row, j] = old_v[final[j]]
    return old_s, old_v


@numba.jit(**_JIT)
def _run(src_start, src_state, src_primed, code_start, code_op, code_arg, consts,
         label_start, block_start, block_cyclic, entry_state, writer_start, writers,
         max_stack, final, labels, data, seed_s, seed_v, status0, value0):
    """One stream: :func:`_segment` over all rows of ``labels`` from ``status0``/``value0``."""
    n_states = status0.shape[0]
    n = labels.shape[0]
    n_out = final.shape[0]
    out_s = np.zeros((n, n_out), dtype=np.uint8)
    out_v = np.full((n, n_out), np.nan)
    old_s, old_v = _segment(
        src_start, src_state, src_primed, code_start, code_op, code_arg, consts,
        label_start, block_start, block_cyclic, entry_state, writer_start, writers,
        final, labels, data, seed_s, seed_v, np.arange(n), 0, n, status0.copy(),
        value0.copy(), np.zeros(n_states, dtype=np.uint8), np.full(n_states, np.nan),
        np.empty(max_stack), out_s, out_v)
    return old_s, old_v, out_s, out_v


@numba.jit(**_JIT)
def in_range(codes, lo, hi):
    """Whether every code is in lo..hi: one pass (numpy's min and max take two), without
    branches in the loop so that LLVM vectorises it."""
    low, high = lo, hi
    for i in range(codes.shape[0]):
        low = min(low, codes[i])
        high = max(high, codes[i])
    return low >= lo and high <= hi


def narrowed(codes: np.ndarray, lo: int, hi: int, dtype: np.dtype) -> np.ndarray | None:
    """``codes`` (a one-dimensional integer array) as a contiguous ``dtype`` array if every
    code is in lo..hi, else None: one pass that checks and copies (numpy's check and
    cast take two, 0.6 ms for 1M int64 codes against 0.3).

    >>> narrowed(np.array([0, 2, -1]), -1, 2, np.dtype(np.int8))
    array([ 0,  2, -1], dtype=int8)
    >>> narrowed(np.array([0, 300]), -1, 2, np.dtype(np.int8)) is None
    True
    """
    codes = np.ascontiguousarray(codes)
    if codes.dtype not in _CODE_INPUTS:
        codes = codes.astype(np.int64)
    if codes.dtype == dtype:
        if dtype.itemsize < 8:  # numpy's min and max vectorise these (1M int8: 0.02 ms)
            ok = not len(codes) or (int(codes.min()) >= lo and int(codes.max()) <= hi)
        else:
            ok = in_range(codes, lo, hi)
        return codes if ok else None
    out = np.empty(codes.shape[0], dtype=dtype)
    return out if _narrow(codes, lo, hi, out) else None


@numba.jit(**_JIT)
def _narrow(codes, lo, hi, out):
    """:func:`in_range`, copying each code into ``out`` on the way (an out-of-range code
    is copied wrapped: the caller drops ``out`` then)."""
    low, high = lo, hi
    for i in range(codes.shape[0]):
        x = codes[i]
        low = min(low, x)
        high = max(high, x)
        out[i] = x
    return low >= lo and high <= hi


@numba.jit(**_JIT)
def chunk_bounds(offsets, n, n_chunks):
    """Split keys into at most ``n_chunks`` runs of consecutive keys with about equal rows.

    Chunk c is keys ``bounds[c]:bounds[c+1]``; it ends at the first key boundary
    at or after row (c + 1)·n / n_chunks (``offsets`` as in :func:`run_table_keys`).
    Shared by the keyed kernels of both engines.
    """
    n_keys = offsets.shape[0] - 1
    n_chunks = max(1, min(n_keys, n_chunks))
    bounds = np.empty(n_chunks + 1, dtype=np.int64)
    bounds[0] = 0
    for c in range(1, n_chunks + 1):
        bounds[c] = np.searchsorted(offsets, (c * n) // n_chunks)
    bounds[n_chunks] = n_keys
    return bounds


@numba.jit(**_JIT, parallel=True)
def _run_keys(src_start, src_state, src_primed, code_start, code_op, code_arg, consts,
              label_start, block_start, block_cyclic, entry_state, writer_start, writers,
              max_stack, final, labels, data, order, offsets, status0, value0, n_chunks,
              finals):
    """Many keyed streams: key g's rows are ``order[offsets[g]:offsets[g+1]]``.

    Every key starts from ``status0``/``value0`` (tag steps: seed all ⊥). Keys
    are independent, so chunks of consecutive keys with about equal row counts
    run in parallel (``prange``); each chunk owns its scratch configuration and
    stack. Outputs land at the original rows; with ``finals``, the final
    configuration of key g is row g of the returned ``(status, value)``, else
    those have no rows (keys × |Q| × 9 bytes: 0.9 GB for 1M keys of 100 states).
    """
    n_states = status0.shape[0]
    n = labels.shape[0]
    n_out = final.shape[0]
    n_keys = offsets.shape[0] - 1
    out_s = np.zeros((n, n_out), dtype=np.uint8)
    out_v = np.full((n, n_out), np.nan)
    fin_s = np.empty((n_keys if finals else 0, n_states), dtype=np.uint8)
    fin_v = np.empty((n_keys if finals else 0, n_states))
    seed_s = np.zeros(n_states, dtype=np.uint8)
    seed_v = np.full(n_states, np.nan)
    bounds = chunk_bounds(offsets, n, n_chunks)
    for c in numba.prange(bounds.shape[0] - 1):
        a_s = np.empty(n_states, dtype=np.uint8)
        a_v = np.empty(n_states)
        b_s = np.empty(n_states, dtype=np.uint8)
        b_v = np.empty(n_states)
        stack = np.empty(max_stack)
        for g in range(bounds[c], bounds[c + 1]):
            a_s[:] = status0
            a_v[:] = value0
            end_s, end_v = _segment(
                src_start, src_state, src_primed, code_start, code_op, code_arg, consts,
                label_start, block_start, block_cyclic, entry_state, writer_start, writers,
                final, labels, data, seed_s, seed_v, order, offsets[g], offsets[g + 1],
                a_s, a_v, b_s, b_v, stack, out_s, out_v)
            if finals:
                fin_s[g, :] = end_s
                fin_v[g, :] = end_v
    return fin_s, fin_v, out_s, out_v


def run_table(src_start, src_state, src_primed, code_start, code_op, code_arg, consts,
              label_start, block_start, block_cyclic, entry_state, writer_start, writers,
              max_stack, final, codes, data, status0, value0):
    """Run tag ``codes`` with ``data`` (``float64[n, f]``) from ``status0``/``value0``.

    The arrays are those of :meth:`Tables.kernel_args`. Returns ``(status, value,
    out_status uint8[n, |F|], out_value float64[n, |F|])``: the final configuration
    and the output vector after every event. Code ``c ≥ 0`` is label ``1 + c``;
    code -1 skips the event (the previous output row repeats).
    """
    n_states = status0.shape[0]
    labels = np.where(codes >= 0, codes + 1, -1).astype(np.int64)
    return _run(src_start, src_state, src_primed, code_start, code_op, code_arg, consts,
                label_start, block_start, block_cyclic, entry_state, writer_start, writers,
                max_stack, final, labels, data, np.zeros(n_states, dtype=np.uint8),
                np.full(n_states, np.nan), status0, value0)


def run_table_keys(src_start, src_state, src_primed, code_start, code_op, code_arg, consts,
                   label_start, block_start, block_cyclic, entry_state, writer_start, writers,
                   max_stack, final, order, offsets, codes, data, status0, value0,
                   finals=True):
    """Run many keyed streams, each from ``status0``/``value0``, keys in parallel.

    ``order`` int64[n] lists the rows grouped by key (each key's rows in input
    order) and key g owns ``order[offsets[g]:offsets[g+1]]`` (``offsets``
    int64[k + 1]). Returns ``(status uint8[k, Q], value float64[k, Q],
    out_status uint8[n, |F|], out_value float64[n, |F|])``: the final
    configuration of every key (none without ``finals``: zero rows) and the
    outputs at the original rows. Equal to :func:`run_table` on every key's rows alone.
    """
    labels = np.where(codes >= 0, codes + 1, -1).astype(np.int64)
    return _run_keys(src_start, src_state, src_primed, code_start, code_op, code_arg, consts,
                     label_start, block_start, block_cyclic, entry_state, writer_start,
                     writers, max_stack, final, labels, data, order, offsets, status0, value0,
                     default_chunks(), bool(finals))


def initial(tables: Tables, x_status: np.ndarray, x_value: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray]:
    """Δ_i(x) on raw tables: ``x_status``/``x_value`` over the initial states, in order."""
    q = tables.n_states
    seed_s = np.zeros(q, dtype=np.uint8)
    seed_v = np.full(q, np.nan)
    seed_s[tables.initial] = x_status
    seed_v[tables.initial] = np.where(np.asarray(x_status) == 1, x_value, np.nan)
    status, value, _, _ = _run(*tables.kernel_args(), tables.max_stack, tables.final,
                               np.zeros(1, dtype=np.int64), np.zeros((1, 0)), seed_s, seed_v,
                               np.zeros(q, dtype=np.uint8), np.full(q, np.nan))
    return status, value


# --------------------------------------------------------------------------- Python API


def default_chunks() -> int:
    """Parallel chunks of keys for a keyed kernel: a few per thread balance skewed keys.

    Read in Python and passed in: ``numba.get_num_threads()`` inside a kernel would
    make it uncacheable (a dynamic global).
    """
    return 4 * numba.get_num_threads()


class ArrayEngine:
    """The array interface shared by the compiled engines (``"table"`` and ``"codegen"``).

    One copy of the input validation and of the data-matrix building: the
    kernels do not check bounds, so everything they index is checked here.
    Subclasses implement the three hooks ``_initial``, ``_advance`` and
    ``_advance_keys`` on validated, contiguous arrays. Configurations are the
    contract's flat ``status uint8[Q]`` / ``value float64[Q]`` (seed 003, §5.1);
    a Monitor keeps one per key and advances it batch by batch.
    """

    def __init__(self, dt: DT) -> None:
        self.dt = dt
        self.tables: Tables = flatten(dt)

    @property
    def columns(self) -> tuple[str | None, ...]:
        """Event data columns the DT reads (``None`` = plain ``cur``), in data order."""
        return self.tables.columns

    def initial_config(
        self, x: Sequence[XValue] | tuple[np.ndarray, np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Δ_i(x) as ``(status uint8[Q], value float64[Q])``.

        ``x`` is a sequence of extended values over ``dt.initial``, or its
        ``(status, value)`` arrays.
        """
        if isinstance(x, tuple) and len(x) == 2 and all(isinstance(a, np.ndarray) for a in x):
            x_status = np.ascontiguousarray(x[0], dtype=np.uint8)
            x_value = np.ascontiguousarray(x[1], dtype=np.float64)
        else:
            x_status, x_value = encode(list(x))  # type: ignore[arg-type]
        if len(x_status) != len(self.dt.initial) or len(x_value) != len(x_status):
            raise ValueError(f"initial vector has {len(x_status)} values; the DT has "
                             f"{len(self.dt.initial)} initial states")
        if x_status.size and int(x_status.max()) > 2:
            raise ValueError("invalid status code: expected 0, 1 or 2")
        # The contract: value is NaN wherever status is not 1.
        x_value = np.where(x_status == 1, x_value, np.nan)
        return self._initial(x_status, x_value)

    def advance(
        self,
        status: np.ndarray,
        value: np.ndarray,
        codes: np.ndarray,
        cur_or_fields: np.ndarray | Mapping[str, np.ndarray] | None = None,
        *,
        valid_codes: bool = False,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Run a batch of events from configuration ``(status, value)``.

        ``codes`` int[n] indexes ``dt.alphabet`` (-1 = skip the event; any integer
        dtype: the kernels read :func:`~codegen.tables.code_dtype`);
        ``cur_or_fields`` is ``float64[n]`` (plain ``cur``), ``float64[n, f]``
        in the order of :attr:`columns`, or a mapping from field name to column.
        Returns the final configuration and ``out_status uint8[n, |F|]``,
        ``out_value float64[n, |F|]`` (outputs after every event).

        ``valid_codes``: the caller vouches that every code is in -1..|Σ|−1 (the
        Monitor's tag conversion makes them so), and the O(n) check is skipped: the
        kernels do not check bounds, so only a caller that made the codes passes it.
        """
        codes = self._codes(codes, valid_codes)
        data = self._data(codes.shape[0], cur_or_fields)
        status, value = self._config(status, value)
        return self._advance(codes, data, status, value)

    def advance_keys(
        self,
        order: np.ndarray | None,
        offsets: np.ndarray,
        codes: np.ndarray,
        cur_or_fields: np.ndarray | Mapping[str, np.ndarray] | None,
        status: np.ndarray,
        value: np.ndarray,
        *,
        finals: bool = True,
        valid_codes: bool = False,
    ) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray, np.ndarray]:
        """Run many keyed streams at once, every key from configuration ``(status, value)``.

        ``codes``/``cur_or_fields`` are all rows in input order, as in
        :meth:`advance`; ``order`` int64[n] is a permutation of the rows grouped
        by key, each key's rows in input order, and key g owns
        ``order[offsets[g]:offsets[g+1]]`` (``offsets`` int64[k + 1], from 0 to
        n); ``order`` None: the rows are grouped by key already, key g owning rows
        ``offsets[g]`` to ``offsets[g+1] − 1``. Keys run in parallel. Returns the final
        configurations ``status uint8[k, Q]``, ``value float64[k, Q]`` (None, None with
        ``finals=False``: they take k · |Q| · 9 bytes, and a caller that only wants the
        outputs should not pay for them) and ``out_status uint8[n, |F|]``,
        ``out_value float64[n, |F|]`` at the original rows: for every key, what
        :meth:`advance` gives on that key's rows alone. ``valid_codes`` as in
        :meth:`advance`.
        """
        codes = self._codes(codes, valid_codes)
        n = codes.shape[0]
        data = self._data(n, cur_or_fields)
        offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        # The kernel does not check bounds: validate the grouping (O(n), cheap next to a run).
        if (offsets.ndim != 1 or len(offsets) == 0 or offsets[0] != 0 or offsets[-1] != n
                or np.any(np.diff(offsets) < 0)):
            raise ValueError(f"offsets must rise from 0 to the number of rows {n}")
        if order is not None:
            order = np.ascontiguousarray(order, dtype=np.int64)
            if order.shape != (n,) or not is_permutation(order):
                raise ValueError(f"order must be a permutation of the {n} rows")
        status, value = self._config(status, value)
        fin_s, fin_v, out_s, out_v = self._advance_keys(order, offsets, codes, data, status,
                                                        value, finals)
        return (fin_s, fin_v, out_s, out_v) if finals else (None, None, out_s, out_v)

    def advance_ids(
        self,
        key_ids: np.ndarray,
        codes: np.ndarray,
        cur_or_fields: np.ndarray | Mapping[str, np.ndarray] | None,
        status: np.ndarray,
        value: np.ndarray,
        *,
        valid_codes: bool = False,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Many keyed streams, each from configuration ``(status, value)``, given the key
        of every row: ``key_ids`` int64[n] in 0..n−1 (:func:`qre.runtime.keys.stream_ids`
        numbers keys so), each key's events in input order. Returns ``out_status
        uint8[n, |F|]``, ``out_value float64[n, |F|]``: what :meth:`advance_keys` gives
        on the grouping of the rows by key, which is how this runs unless the engine has
        a faster way (:meth:`_advance_rows`). ``valid_codes`` as in :meth:`advance`."""
        codes = self._codes(codes, valid_codes)
        n = codes.shape[0]
        data = self._data(n, cur_or_fields)
        key_ids = np.ascontiguousarray(key_ids, dtype=np.int64)
        if key_ids.shape != (n,):
            raise ValueError(f"{n} tag codes but {key_ids.shape} key ids")
        n_keys = int(key_ids.max(initial=-1)) + 1
        if n and (int(key_ids.min()) < 0 or n_keys > n):  # ids index per-key arrays
            raise ValueError(f"key ids must be in 0..{n - 1} (number the keys, e.g. with "
                             f"pd.factorize)")
        status, value = self._config(status, value)
        out = self._advance_rows(key_ids, n_keys, codes, data, status, value)
        if out is not None:
            return out
        order, offsets = group_rows(key_ids, n_keys)
        _, _, out_s, out_v = self._advance_keys(order, offsets, codes, data, status, value,
                                                False)
        return out_s, out_v

    def advance_table(
        self,
        key_ids: np.ndarray,
        codes: np.ndarray,
        cur_or_fields: np.ndarray | Mapping[str, np.ndarray] | None,
        table_s: np.ndarray,
        table_v: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Many keyed streams, each resumed from its own configuration: row i belongs to
        stream ``key_ids[i]`` (int64 in 0..k−1, a stream's rows in the order to process
        them), and stream g starts from row g of ``table_s`` uint8[k, Q] /
        ``table_v`` float64[k, Q] and ends there: the tables are updated in place to the
        final configurations (rows of streams without events stay). Returns
        ``out_status uint8[n, |F|]``, ``out_value float64[n, |F|]`` at the rows: what one
        :meth:`advance` per stream gives. The bulk form of resuming a session per key
        (:mod:`spark_udf.buckets` keeps a bucket of keys' configurations so)."""
        codes = self._codes(codes)
        n = codes.shape[0]
        data = self._data(n, cur_or_fields)
        key_ids = np.ascontiguousarray(key_ids, dtype=np.int64)
        q = self.tables.n_states
        k = len(table_s)
        # The kernels write into the tables and do not check bounds.
        for name, table, dtype in (("table_s", table_s, np.uint8), ("table_v", table_v,
                                                                    np.float64)):
            if (not isinstance(table, np.ndarray) or table.shape != (k, q)
                    or table.dtype != dtype or not table.flags.c_contiguous
                    or not table.flags.writeable):
                raise ValueError(f"{name} must be a writeable C-contiguous {np.dtype(dtype)} "
                                 f"array of shape (keys, {q})")
        if key_ids.shape != (n,):
            raise ValueError(f"{n} tag codes but {key_ids.shape} key ids")
        if n and (int(key_ids.min()) < 0 or int(key_ids.max()) >= k):
            raise ValueError(f"key ids must be in 0..{k - 1} (rows of the tables)")
        if table_s.size and int(table_s.max()) > 2:
            raise ValueError("invalid status code in the tables: expected 0, 1 or 2")
        np.copyto(table_v, np.nan, where=table_s != 1)  # the contract: NaN unless defined
        return self._advance_table(key_ids, codes, data, table_s, table_v)

    # ------------------------------------------------------------------ engine hooks

    def _advance_rows(self, key_ids: np.ndarray, n_keys: int, codes: np.ndarray,
                      data: np.ndarray, status: np.ndarray, value: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray] | None:
        """:meth:`advance_ids` without grouping the rows, if the engine can (else None)."""
        return None

    def _initial(self, x_status: np.ndarray, x_value: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
        """Δ_i on validated ``uint8``/``float64`` arrays over ``dt.initial`` (NaN if not 1)."""
        raise NotImplementedError

    def _advance(self, codes: np.ndarray, data: np.ndarray, status: np.ndarray,
                 value: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`advance` on validated contiguous arrays (``data`` float64[n, f])."""
        raise NotImplementedError

    def _advance_keys(self, order: np.ndarray | None, offsets: np.ndarray, codes: np.ndarray,
                      data: np.ndarray, status: np.ndarray, value: np.ndarray,
                      finals: bool = True
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`advance_keys` on validated contiguous arrays (``order`` None: the rows
        grouped already); without ``finals`` the final configurations may have no rows
        (the caller drops them)."""
        raise NotImplementedError

    def _advance_table(self, key_ids: np.ndarray, codes: np.ndarray, data: np.ndarray,
                       table_s: np.ndarray, table_v: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`advance_table` on validated arrays: one :meth:`_advance` per stream with
        events (an engine with a kernel over per-key tables overrides this)."""
        n, n_out = codes.shape[0], len(self.tables.final)
        out_s, out_v = np.empty((n, n_out), dtype=np.uint8), np.empty((n, n_out))
        order, offsets = group_rows(key_ids, len(table_s))
        for g in np.flatnonzero(np.diff(offsets)).tolist():
            rows = order[offsets[g]:offsets[g + 1]]
            table_s[g], table_v[g], out_s[rows], out_v[rows] = self._advance(
                codes[rows], data[rows], table_s[g], table_v[g])
        return out_s, out_v

    # ------------------------------------------------------------------ validation

    def _codes(self, codes: np.ndarray, valid: bool = False) -> np.ndarray:
        """The codes checked and narrowed to :func:`~codegen.tables.code_dtype` (the
        kernels' one code type): any integer array in range is accepted."""
        codes = np.asarray(codes)
        if codes.ndim != 1:
            raise ValueError(f"tag codes must be one-dimensional; got shape {codes.shape}")
        n_tags = len(self.dt.alphabet)
        if valid:
            return np.ascontiguousarray(codes, dtype=code_dtype(n_tags))
        checked = narrowed(codes, -1, n_tags - 1, code_dtype(n_tags))
        if checked is None:
            raise ValueError(f"tag codes must be in -1..{n_tags - 1}")
        return checked

    def _config(self, status: np.ndarray, value: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        q = self.tables.n_states
        if len(status) != q or len(value) != q:
            # The kernel does not check bounds: a short configuration would read garbage.
            raise ValueError(f"a configuration has {q} entries; got {len(status)} and "
                             f"{len(value)}")
        status = np.ascontiguousarray(status, dtype=np.uint8)
        if q and int(status.max()) > 2:
            raise ValueError("invalid status code in the configuration: expected 0, 1 or 2")
        return status, np.ascontiguousarray(value, dtype=np.float64)

    def _data(self, n: int, cur_or_fields: object) -> np.ndarray:
        """The ``float64[n, f]`` data matrix in the order of :attr:`columns`."""
        columns = self.columns
        if cur_or_fields is None:
            if columns:
                raise ValueError(f"the DT reads event data {_names(columns)}; none given")
            return np.zeros((n, 0))
        if isinstance(cur_or_fields, Mapping):
            missing = [c for c in columns if c is not None and c not in cur_or_fields]
            if None in columns or missing:
                raise ValueError(f"the DT reads {_names(columns)}; the record columns are "
                                 f"{', '.join(sorted(cur_or_fields)) or 'none'}")
            cols = [np.asarray(cur_or_fields[c], dtype=np.float64) for c in columns]
            data = np.stack(cols, axis=1) if cols else np.zeros((n, 0))
        else:
            data = np.asarray(cur_or_fields, dtype=np.float64)
            if data.ndim == 1:
                if len(columns) > 1:
                    raise ValueError(f"the DT reads {_names(columns)}; give one column each")
                data = data.reshape(-1, 1) if columns else np.zeros((n, 0))
            elif data.ndim != 2 or data.shape[1] != len(columns):
                raise ValueError(f"event data of shape {data.shape}: expected (n, {len(columns)})"
                                 f" for {_names(columns)}")
        if data.shape[0] != n:
            raise ValueError(f"{n} tag codes but {data.shape[0]} data rows")
        return np.ascontiguousarray(data)


class TableEngine(ArrayEngine):
    """The table engine of one DT: flat tables plus the shared kernel.

    ``initial_config(x)`` and ``advance(...)`` work on the contract's flat
    ``status``/``value`` arrays; a Monitor keeps one configuration per key and
    advances it batch by batch (validation: :class:`ArrayEngine`).
    """

    def __init__(self, dt: DT) -> None:
        super().__init__(dt)
        self._args = self.tables.kernel_args()

    def _initial(self, x_status: np.ndarray, x_value: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
        return initial(self.tables, x_status, x_value)

    def _advance(self, codes: np.ndarray, data: np.ndarray, status: np.ndarray,
                 value: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        t = self.tables
        return run_table(*self._args, t.max_stack, t.final, codes, data, status, value)

    def _advance_keys(self, order: np.ndarray | None, offsets: np.ndarray, codes: np.ndarray,
                      data: np.ndarray, status: np.ndarray, value: np.ndarray,
                      finals: bool = True
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        t = self.tables
        if order is None:
            order = np.arange(codes.shape[0], dtype=np.int64)
        return run_table_keys(*self._args, t.max_stack, t.final, order, offsets, codes, data,
                              status, value, finals)


def _names(columns: Iterable[str | None]) -> str:
    return ", ".join("cur" if c is None else f"cur.{c}" for c in columns) or "nothing"


def engine_evaluate(
    engine: ArrayEngine, x: Sequence[XValue], word: Iterable[tuple[str, EventValue]]
) -> list[tuple[XValue, ...]]:
    """Mirror of :func:`dt.reference.evaluate` on any :class:`ArrayEngine`: the outputs
    after every prefix (the empty one included)."""
    dt = engine.dt
    events = list(word)
    for tag, _ in events:
        if tag not in dt.alphabet:
            raise ValueError(f"unknown tag {tag!r}; the alphabet is {', '.join(dt.alphabet)}")
    codes = np.array([dt.alphabet.index(tag) for tag, _ in events], dtype=np.int64)
    data = np.array([[_column(cur, c) for c in engine.columns] for _, cur in events],
                    dtype=np.float64).reshape(len(events), len(engine.columns))
    status, value = engine.initial_config(x)
    final = engine.tables.final
    first = tuple(decode(status[final], value[final]))
    _, _, out_s, out_v = engine.advance(status, value, codes, data)
    return [first] + [tuple(decode(s, v)) for s, v in zip(out_s, out_v, strict=True)]


def table_initial(dt: DT, x: Sequence[XValue]) -> tuple[XValue, ...]:
    """Mirror of :func:`dt.reference.initial_config` on the table engine."""
    status, value = TableEngine(dt).initial_config(x)
    return tuple(decode(status, value))


def table_evaluate(
    dt: DT, x: Sequence[XValue], word: Iterable[tuple[str, EventValue]]
) -> list[tuple[XValue, ...]]:
    """Mirror of :func:`dt.reference.evaluate`: the outputs after every prefix."""
    return engine_evaluate(TableEngine(dt), x, word)


def _column(cur: EventValue, column: str | None) -> float:
    if column is None:
        if isinstance(cur, Mapping):
            raise EvaluationError("the DT reads cur but events are records; use cur.FIELD")
        return float(cur)
    if not isinstance(cur, Mapping) or column not in cur:
        raise EvaluationError(f"the DT reads cur.{column} but the event has no such field")
    return float(cur[column])


# A damaged disk cache of these kernels is a miss, not an error in every later run.
guard_namespace(globals())
