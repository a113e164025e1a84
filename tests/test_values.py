"""Extended values (seed 003, §5.1): the union and lifted-operation tables, lattice laws,
and the (status, value) encoding of docs/API.md.

The expected tables are written out by hand from the paper, not computed with
:mod:`dt.values`, so every test here can disagree with the implementation.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import extended_values
from util import same, same_vector

from dt.values import (
    BOT,
    TOP,
    Status,
    decode,
    encode,
    is_defined,
    lift,
    show,
    status_of,
    union,
    union_all,
)

D1, D2 = 1.0, 2.0
CARRIER = [BOT, D1, D2, TOP]

# Extended values with awkward floats too: NaN is a defined value, ±0.0 differ bitwise.
awkward_values = st.one_of(
    extended_values,
    st.sampled_from([math.nan, -0.0, 0.0, math.inf, -math.inf, 5e-324]),
    st.floats(allow_nan=True, allow_infinity=True),
)


def _name(x: object) -> str:
    return "bot" if x is BOT else "top" if x is TOP else f"d{x:g}"


# --------------------------------------------------------------------------- the ⊔ table


# The first table of §5.1, row = left argument, column = right argument. "d1" and
# "d2" are the data values themselves; ⊤ whenever two non-⊥ values meet.
UNION_TABLE = {
    (BOT, BOT): BOT, (BOT, D2): D2, (BOT, TOP): TOP,
    (D1, BOT): D1, (D1, D2): TOP, (D1, TOP): TOP,
    (TOP, BOT): TOP, (TOP, D2): TOP, (TOP, TOP): TOP,
}


@pytest.mark.parametrize(("a", "b"), list(UNION_TABLE), ids=lambda x: _name(x))
def test_union_table(a, b):
    assert same(union(a, b), UNION_TABLE[a, b])


@pytest.mark.parametrize(("a", "b"), list(itertools.product(CARRIER, CARRIER)),
                         ids=lambda x: _name(x))
def test_union_exhaustive(a, b):
    """Over {⊥, d1, d2, ⊤}²: ⊥ is the identity, any two non-⊥ values give ⊤."""
    if a is BOT:
        want = b
    elif b is BOT:
        want = a
    else:
        want = TOP
    assert same(union(a, b), want)


@pytest.mark.parametrize("d", [0.0, -0.0, 1.0, -2.5, math.inf, math.nan])
def test_union_of_equal_values_is_conflict(d):
    """d ⊔ d = ⊤ even when both are the same value (§5.1: 'even if d1 = d2')."""
    assert union(d, d) is TOP
    assert union(d, float(d)) is TOP
    assert union_all([d, d]) is TOP


# --------------------------------------------------------------------------- the op table


# The second table of §5.1 for a binary op: ⊥ absorbs, then ⊤, then op(d1, d2).
def _sub(a: float, b: float) -> float:
    return a - b


OP_TABLE = {
    (BOT, BOT): BOT, (BOT, D2): BOT, (BOT, TOP): BOT,
    (D1, BOT): BOT, (D1, D2): D1 - D2, (D1, TOP): TOP,
    (TOP, BOT): BOT, (TOP, D2): TOP, (TOP, TOP): TOP,
}


@pytest.mark.parametrize(("a", "b"), list(OP_TABLE), ids=lambda x: _name(x))
def test_lift_table(a, b):
    # Subtraction is not commutative, so a transposed table would be caught.
    assert same(lift(_sub, [a, b]), OP_TABLE[a, b])


def _expected_lift(fn, args):
    """The k-ary rule of §5.1: ⊥ if any argument is ⊥, else ⊤ if any is ⊤, else fn."""
    if any(a is BOT for a in args):
        return BOT
    if any(a is TOP for a in args):
        return TOP
    return float(fn(*args))


@pytest.mark.parametrize("k", [0, 1, 2, 3])
def test_lift_kary_exhaustive(k):
    """Every k-ary argument tuple over {⊥, d1, d2, ⊤}, k = 0..3."""

    def fn(*xs: float) -> float:
        # Position-sensitive, so argument order matters.
        return sum((i + 1) * 10.0 ** i * x for i, x in enumerate(xs)) + 0.5

    for args in itertools.product(CARRIER, repeat=k):
        got = lift(fn, list(args))
        assert same(got, _expected_lift(fn, args)), (args, got)


def test_lift_nullary_is_a_constant():
    assert same(lift(lambda: 7.0, []), 7.0)


def test_lift_bottom_beats_top_regardless_of_position():
    for k in range(2, 5):
        for pos_bot, pos_top in itertools.permutations(range(k), 2):
            args = [D1] * k
            args[pos_bot], args[pos_top] = BOT, TOP
            assert lift(lambda *xs: 0.0, args) is BOT


def test_lift_does_not_call_the_operation_on_special_values():
    calls = []

    def fn(*xs):
        calls.append(xs)
        return 0.0

    for args in itertools.product(CARRIER, repeat=2):
        lift(fn, list(args))
    assert calls == [(D1, D1), (D1, D2), (D2, D1), (D2, D2)]


def test_lift_returns_a_float():
    got = lift(lambda a, b: np.float64(a) + np.float64(b), [1.0, 2.0])
    assert type(got) is float and got == 3.0


# --------------------------------------------------------------------------- lattice laws


def _leq(a, b) -> bool:
    """The order of §5.1: ⊥ ≤ d ≤ ⊤; distinct data values are incomparable."""
    return a is BOT or b is TOP or same(a, b)


@given(awkward_values, awkward_values)
def test_union_commutative(a, b):
    assert same(union(a, b), union(b, a))


@given(awkward_values, awkward_values, awkward_values)
def test_union_associative(a, b, c):
    assert same(union(union(a, b), c), union(a, union(b, c)))


@given(awkward_values)
def test_union_identity_and_absorption(a):
    assert same(union(BOT, a), a)
    assert same(union(a, BOT), a)
    assert union(TOP, a) is TOP
    assert union(a, TOP) is TOP


@given(awkward_values, awkward_values)
def test_union_is_least_upper_bound(a, b):
    """a ⊔ b is an upper bound of both; the least one unless a, b are both data."""
    u = union(a, b)
    assert _leq(a, u) and _leq(b, u)


@given(st.lists(awkward_values, max_size=6))
def test_union_all_is_a_fold(xs):
    want = BOT
    for x in xs:
        want = union(want, x)
    assert same(union_all(xs), want)
    defined = [x for x in xs if x is not BOT]
    # ⊔ counts: none → ⊥, exactly one non-⊥ → that value, two or more → ⊤.
    assert same(union_all(xs), BOT if not defined else defined[0] if len(defined) == 1 else TOP)


@given(awkward_values, awkward_values, awkward_values)
def test_lift_distributes_over_union(a, b, c):
    """§5.1: all k-ary operations distribute over ⊔ (here in each argument)."""

    def op(x, y):
        return x * 3.0 - y

    assert same(lift(op, [union(a, b), c]), union(lift(op, [a, c]), lift(op, [b, c])))
    assert same(lift(op, [c, union(a, b)]), union(lift(op, [c, a]), lift(op, [c, b])))


@given(awkward_values, awkward_values, awkward_values)
def test_lift_is_monotone(a, b, c):
    """If a ≤ b then op(a, c) ≤ op(b, c)."""

    def op(x, y):
        return x + y

    b = union(a, b)  # forces a ≤ b
    assert _leq(a, b)
    assert _leq(lift(op, [a, c]), lift(op, [b, c]))


# --------------------------------------------------------------------------- status and helpers


def test_status_codes_match_the_contract():
    assert (Status.UNDEFINED, Status.DEFINED, Status.CONFLICT) == (0, 1, 2)
    assert status_of(BOT) == 0 and status_of(TOP) == 2
    assert status_of(3.0) == 1 and status_of(math.nan) == 1


def test_nan_is_a_defined_value():
    assert is_defined(math.nan)
    assert not is_defined(BOT) and not is_defined(TOP)


def test_show():
    assert show(BOT) == "⊥" and show(TOP) == "⊤" and show(1.5) == "1.5"


def test_specials_survive_pickling_and_copy():
    import copy
    import pickle

    for x in (BOT, TOP):
        assert pickle.loads(pickle.dumps(x)) is x
        assert copy.deepcopy(x) is x


# --------------------------------------------------------------------------- encode / decode


def test_encode_example():
    status, value = encode([BOT, 1.5, TOP, math.nan, -0.0])
    assert status.dtype == np.uint8 and value.dtype == np.float64
    assert status.tolist() == [0, 1, 2, 1, 1]
    assert math.isnan(value[0]) and value[1] == 1.5 and math.isnan(value[2])
    assert math.isnan(value[3])  # a defined NaN: status 1 tells it apart
    assert math.copysign(1.0, value[4]) == -1.0


def test_encode_empty():
    status, value = encode([])
    assert status.shape == (0,) and value.shape == (0,)
    assert status.dtype == np.uint8 and value.dtype == np.float64
    assert decode(status, value) == []


@given(st.lists(awkward_values, max_size=10))
def test_encode_contract(xs):
    """status 0/1/2 per value; value = the float where defined, NaN elsewhere."""
    status, value = encode(xs)
    assert status.dtype == np.uint8 and value.dtype == np.float64
    assert len(status) == len(value) == len(xs)
    for x, s, v in zip(xs, status.tolist(), value.tolist(), strict=True):
        if x is BOT:
            assert s == 0 and math.isnan(v)
        elif x is TOP:
            assert s == 2 and math.isnan(v)
        else:
            assert s == 1 and same(v, x)


@given(st.lists(awkward_values, max_size=10))
def test_encode_decode_round_trip(xs):
    back = decode(*encode(xs))
    assert same_vector(back, xs)
    assert all(type(x) is float for x in back if is_defined(x))


@given(st.lists(st.tuples(st.sampled_from([0, 1, 2]), st.floats()), max_size=10))
def test_decode_ignores_value_where_not_defined(pairs):
    """Any float under status 0 or 2 decodes to ⊥ / ⊤; lists work as well as arrays."""
    status = [s for s, _ in pairs]
    value = [v for _, v in pairs]
    got = decode(status, value)
    for (s, v), x in zip(pairs, got, strict=True):
        assert same(x, BOT if s == 0 else TOP if s == 2 else v)
    s2, _ = encode(got)
    assert s2.tolist() == status


@pytest.mark.parametrize("bad", [3, 7, 255, -1])
def test_decode_rejects_bad_status_codes(bad):
    with pytest.raises(ValueError, match=f"invalid status code {bad}"):
        decode([0, bad], [0.0, 0.0])


def test_decode_rejects_bad_code_in_uint8_array():
    with pytest.raises(ValueError, match="invalid status code 3"):
        decode(np.array([1, 3], dtype=np.uint8), np.array([1.0, 2.0]))


@pytest.mark.parametrize(("n_status", "n_value"), [(2, 1), (0, 1), (1, 0), (3, 5)])
def test_decode_rejects_length_mismatch(n_status, n_value):
    with pytest.raises(ValueError, match="differ in length"):
        decode(np.zeros(n_status, dtype=np.uint8), np.zeros(n_value))
