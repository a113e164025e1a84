"""Every operation of the term signature on IEEE special values: all engines and the optimizer
compute the same bits (issue 19, point 3; seed 003, §5.1: terms are float64 operations).

The operations with a platform implementation — ``pow``, ``exp``, ``log`` — are C99's
(Annex F) as the C library computes them; the kernels call that library, so the reference
evaluator and the optimizer's constant folding must call it too (not numpy's scalar or SIMD
routines, which round differently and special-case ``pow(x, 0.5)``), and the generated
kernel must call it even for a constant operand (LLVM would rewrite ``pow(x, 0.5)`` into
``sqrt`` and ``pow(x, 2)`` into ``x * x``, which the library does not always round alike).

Three sweeps over ±0, ±inf, NaN, ± the smallest subnormal and normal, ±max and ordinary
values: every operation on event data (all engines through :class:`qre.Monitor`), with one
operand a constant (the generated kernel's literals; the table engine's constant pool), and
on constants alone (the optimizer's folding, against the kernels); then a property test over
arbitrary floats for the operations whose rounding is the library's.
"""

from __future__ import annotations

import itertools
import math
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codegen.kernels import TableEngine
from codegen.optimize import fold_constants, optimize
from dt.model import DT, Transition
from dt.terms import OPS, Apply, Const, Cur, Term, evaluate_term
from qre import Monitor

TINY = 5e-324
MIN_NORMAL = sys.float_info.min
MAX = sys.float_info.max
SPECIALS = [0.0, -0.0, math.inf, -math.inf, math.nan, TINY, -TINY, MIN_NORMAL, -MIN_NORMAL,
            MAX, -MAX, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, 1 / 3, 710.0, -745.5]
"""Special values, and ordinary ones that meet them (exponents 0.5, 2, -1, 1/3; exp's
overflow and underflow thresholds)."""

FIELDS = ("x", "y", "z")
ENGINES = ("reference", "table", "codegen")


# Special values on every engine are part of the fault-and-fuzz suite (`make fuzz`).
pytestmark = [pytest.mark.usefixtures("codegen_cache"), pytest.mark.fuzz]


def bits(values: np.ndarray) -> np.ndarray:
    """Values as comparable bit patterns: every NaN alike (its sign and payload are not part
    of the semantics, docs/API.md), -0.0 apart from 0.0."""
    values = np.where(np.isnan(values), np.nan, values)
    return values.view(np.int64)


def dt_of(terms: list[Term]) -> DT:
    """One state per term, each written at every event by its term (no sources)."""
    states = tuple(f"s{k}" for k in range(len(terms)))
    transitions = tuple(Transition("a", frozenset(), q, t)
                        for q, t in zip(states, terms, strict=True))
    return DT(("a",), states, (), states, transitions)


def on_data(op: str) -> Term:
    return Apply(op, tuple(Cur(f) for f in FIELDS[:OPS[op].arity]))


def with_constants(op: str) -> list[Term]:
    """``op`` with each special constant in each argument position, event data elsewhere."""
    arity = OPS[op].arity
    return [Apply(op, tuple(Const(c) if k == j else Cur(FIELDS[k]) for k in range(arity)))
            for j in range(arity) for c in SPECIALS]


def records(n_fields: int = 3) -> dict[str, np.ndarray]:
    """Every pair of specials as (x, y); z runs through them out of step with x and y."""
    pairs = np.array(list(itertools.product(SPECIALS, repeat=2)))
    z = np.array([SPECIALS[(7 * k) % len(SPECIALS)] for k in range(len(pairs))])
    return dict(zip(FIELDS[:n_fields], [pairs[:, 0], pairs[:, 1], z], strict=False))


def outputs(m: Monitor, data: dict[str, np.ndarray], engine: str) -> np.ndarray:
    n = len(next(iter(data.values())))
    out = m.run(np.zeros(n, dtype=np.int64), data, engine=engine)
    assert (out.status == 1).all()
    return out.value.reshape(n, -1)


def assert_engines_agree(terms: list[Term], data: dict[str, np.ndarray],
                         engines: tuple[str, ...] = ENGINES) -> np.ndarray:
    """Run the terms on every engine (unoptimized: constants reach the kernels as written);
    every value bit for bit as the reference's; returns the reference's values."""
    m = Monitor.from_dt(dt_of(terms), optimize=False)
    want = outputs(m, data, "reference")
    for engine in engines[1:]:
        got = outputs(m, data, engine)
        diff = np.argwhere(bits(got) != bits(want))
        if len(diff):
            row, col = diff[0]
            args = {f: data[f][row] for f in data}
            raise AssertionError(f"{engine}: {terms[col]} on {args} is {got[row, col]!r}, the "
                                 f"reference's {want[row, col]!r} ({len(diff)} differences)")
    return want


def test_every_operation_on_special_data_on_every_engine():
    ops = sorted(OPS)
    want = assert_engines_agree([on_data(op) for op in ops], records())
    # The reference is the term evaluator, cell by cell.
    data = records()
    for row in range(len(want)):
        cur = {f: float(data[f][row]) for f in data}
        for col, op in enumerate(ops):
            value = evaluate_term(on_data(op), {}, cur)
            assert bits(np.array([value]))[0] == bits(want[row:row + 1, col])[0], (op, cur)


@pytest.mark.parametrize("group", [
    ["pow", "div", "mul", "mod", "min", "max"],
    ["add", "sub", "eq", "ne", "lt", "le"],
    ["gt", "ge", "or", "and", "fst", "snd", "if"],
    ["neg", "not", "abs", "sqrt", "exp", "log", "floor", "ceil"],
])
def test_every_operation_with_a_special_constant_on_every_engine(group):
    """A constant operand is a literal of the generated kernel, where LLVM sees it: the
    values must still be those of the table kernel, which reads it from its pool."""
    terms = [t for op in group for t in with_constants(op)]
    assert_engines_agree(terms, records())


def test_pow_follows_c99_where_numpy_takes_a_shortcut():
    """C99 F.9.4.4: pow(-inf, y) = +inf and pow(-0, y) = +0 for y > 0 not an odd integer;
    numpy's scalar power computes pow(x, 0.5) as sqrt(x) (NaN and -0.0 there)."""
    for x, want in ((-math.inf, math.inf), (-0.0, 0.0), (math.inf, math.inf), (4.0, 2.0)):
        got = evaluate_term(Apply("pow", (Const(x), Const(0.5))), {})
        assert math.copysign(1.0, got) == math.copysign(1.0, want) and got == want, (x, got)
    m = Monitor.from_dt(dt_of([Apply("pow", (Cur(), Const(0.5)))]), optimize=False)
    for engine in ENGINES:
        out = m.run(["a", "a"], [-math.inf, -0.0], engine=engine).value
        assert out.tolist() == [math.inf, 0.0] and math.copysign(1.0, out[1]) == 1.0, engine


def test_pow_with_exponent_2_half_or_minus_1_is_one_correctly_rounded_operation():
    """pow(x, 2) = x * x, pow(x, 0.5) = sqrt(x) (C99's signs), pow(x, -1) = 1 / x on every
    engine: what LLVM makes of a literal exponent, and exact where glibc's pow is not."""
    x = np.concatenate([np.random.default_rng(3).lognormal(0.0, 20.0, 3000), SPECIALS])
    m = Monitor.from_dt(dt_of([Apply("pow", (Cur("x"), Cur("y"))) for _ in range(3)]
                              + [Apply("pow", (Cur("x"), Const(c))) for c in (2.0, 0.5, -1.0)]),
                        optimize=False)
    data = {"x": x, "y": np.full(len(x), 2.0)}
    with np.errstate(all="ignore"):
        want = [x * x, np.where(x == -np.inf, np.inf, np.abs(np.sqrt(x))), 1.0 / x]
    for engine in ENGINES:
        for k, y in enumerate((2.0, 0.5, -1.0)):
            got = outputs(m, {**data, "y": np.full(len(x), y)}, engine)
            assert np.array_equal(bits(got[:, k]), bits(want[k])), (engine, y)
            assert np.array_equal(bits(got[:, 3 + k]), bits(want[k])), (engine, y, "literal")


@pytest.mark.parametrize("op", sorted(OPS))
def test_constant_folding_computes_what_the_kernels_compute(op):
    """Every op on every tuple of specials: folded by the optimizer to one constant, bit for
    bit the value the table kernel computes on the same operands as event data."""
    arity = OPS[op].arity
    combos = list(itertools.product(SPECIALS, repeat=min(arity, 2)))
    if arity == 3:
        combos = [(c, a, b) for (c, a), b in zip(combos, itertools.cycle(SPECIALS[3:]))]
    data = np.array(combos)
    engine = TableEngine(dt_of([on_data(op)]))
    status, value = engine.initial_config([])
    kernel = engine.advance(status, value, np.zeros(len(data), dtype=np.int64), data)[3][:, 0]
    folded = fold_constants(dt_of([Apply(op, tuple(Const(float(a)) for a in args))
                                   for args in combos]))
    for k, t in enumerate(folded.transitions):
        assert isinstance(t.term, Const), (op, combos[k], t.term)
        assert bits(np.array([t.term.value]))[0] == bits(kernel[k:k + 1])[0], \
            f"{op}{combos[k]}: folded to {t.term.value!r}, the kernel computes {kernel[k]!r}"


def test_the_optimized_dt_computes_what_the_unoptimized_one_does():
    terms = [t for op in sorted(OPS) for t in with_constants(op)]
    dt = dt_of(terms)
    data = records()
    n = len(data["x"])
    plain = Monitor.from_dt(dt, optimize=False).run(np.zeros(n, dtype=np.int64), data,
                                                    engine="table")
    optimized = Monitor.from_dt(optimize(dt), optimize=False)
    assert len(optimized.dt.transitions) == len(dt.transitions)
    out = optimized.run(np.zeros(n, dtype=np.int64), data, engine="table")
    assert np.array_equal(bits(out.value), bits(plain.value))


# --------------------------------------------------------------------------- any float

LIBRARY_OPS = ("pow", "exp", "log", "sqrt")
"""The operations whose result the C library rounds (the others are exact in IEEE 754)."""

floats = st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True)
moderate = st.floats(-800.0, 800.0)


@settings(max_examples=30)
@given(st.lists(st.tuples(floats | moderate, floats | st.floats(-8.0, 8.0)), min_size=1,
                max_size=40))
def test_library_operations_agree_on_any_floats(pairs):
    terms = [Apply(op, (Cur("x"), Cur("y"))[:OPS[op].arity]) for op in LIBRARY_OPS]
    x, y = (np.array(c, dtype=np.float64) for c in zip(*pairs, strict=True))
    assert_engines_agree(terms, {"x": x, "y": y})


def test_library_operations_agree_on_a_wide_sample():
    """Seeded: many values of every magnitude, where numpy's SIMD exp/log/pow (AVX-512
    machines) and the C library round differently in a few percent of the cases."""
    rng = np.random.default_rng(19)
    n = 4000
    x = np.concatenate([rng.uniform(-750.0, 750.0, n), rng.lognormal(0.0, 30.0, n)])
    y = np.concatenate([rng.uniform(-4.0, 4.0, n), np.full(n, 0.5)])
    terms = [Apply(op, (Cur("x"), Cur("y"))[:OPS[op].arity]) for op in LIBRARY_OPS]
    terms += [Apply("pow", (Cur("x"), Const(c))) for c in (0.5, 2.0, -1.0)]
    assert_engines_agree(terms, {"x": x, "y": y})
