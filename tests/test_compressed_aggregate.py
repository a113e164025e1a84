"""Seed 001's A_C (qre/runtime/compressed_aggregate.py): the outputs do not depend on D.

For random keyed tuples in time order (many on instance boundaries), random watermarks
between them, and every D — 0 (compress after every update), small, large, ∞ — A_C gives
the same outputs in the same order, bit for bit, as without compression, and as a brute
force that recomputes every instance [l·WA, l·WA + WS) from the tuples; compression is
lossless on any floats.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qre.runtime.compressed_aggregate import (
    CODECS,
    CompressedAggregate,
    _Gamma,
    _Packed,
    pack,
    unpack,
)

VALUES = st.one_of(st.integers(-2, 2).map(float),
                   st.sampled_from([0.5, -0.0, math.nan, math.inf, 5e-324, 1e300]))


def total(values: np.ndarray) -> float:
    return float(np.sum(values))


@st.composite
def streams(draw):  # type: ignore[no-untyped-def]
    """Tuples (key, time, value) in time order, with watermarks (key None) between."""
    n = draw(st.integers(0, 40))
    time = draw(st.integers(-30, 30))
    out = []
    for _ in range(n):
        time += draw(st.sampled_from([0, 0, 1, 2, 5, 10, 40]))
        if draw(st.integers(0, 5)) == 0:
            out.append((None, time, math.nan))
        else:
            out.append((draw(st.integers(0, 3)), time, draw(VALUES)))
    return out


def run(stream, advance: int, size: int, idle: int | None, codec: str = "lz4"):
    a = CompressedAggregate(advance, size, idle=idle, output=total, codec=codec)
    out = []
    for key, time, value in stream:
        out += a.advance_to(time) if key is None else a.process(key, time, value)
    return out + a.flush(), a


def brute_force(stream, advance: int, size: int):
    """Every non-empty instance of every key: (key, l, stamp, f_O), by stamp then key."""
    tuples = [(k, t, v) for k, t, v in stream if k is not None]
    out = []
    for key in {k for k, _, _ in tuples}:
        mine = [(t, v) for k, t, v in tuples if k == key]
        lo = (min(t for t, _ in mine) - size) // advance + 1
        for left in range(lo * advance, max(t for t, _ in mine) + 1, advance):
            inside = [v for t, v in mine if left <= t < left + size]
            if inside:
                out.append((key, left, left + size - 1, total(np.array(inside))))
    return sorted(out, key=lambda o: (o[2], o[0]))


def bits(outputs):
    return [(k, left, s, np.float64(v).view(np.int64) if not math.isnan(v) else "nan")
            for k, left, s, v in outputs]


@settings(max_examples=200, deadline=None)
@given(streams(), st.integers(1, 10), st.integers(0, 3))
def test_outputs_are_the_same_for_every_d_and_equal_a_recomputation(stream, advance, extra):
    size = advance * (extra + 1) + (advance // 2 if extra else 0)  # slides that don't divide
    plain, a = run(stream, advance, size, None)
    assert a.counters.compressions == 0
    assert sorted(bits(plain), key=lambda o: (o[2], o[0])) == bits(brute_force(stream, advance,
                                                                               size))
    for idle in (0, 1, 5, 20):
        squeezed, b = run(stream, advance, size, idle)
        assert bits(squeezed) == bits(plain), idle  # same outputs, same order
        assert not b.gammas  # the flush emptied everything


def test_a_tuple_on_the_right_boundary_is_not_in_the_closing_instance():
    """Defect 1 of Algorithm 1: ``e_l + WS < t.τ`` would add a tuple at exactly e_l + WS to
    γ before [e_l, e_l + WS) is output."""
    a = CompressedAggregate(10, 10, idle=None, output=len)
    assert a.process("k", 0, 1.0) == []
    assert a.process("k", 10, 1.0) == [("k", 0, 9, 1.0)]  # not 2.0


def test_a_removed_gamma_leaves_the_bookkeeping_and_idle_ones_are_compressed():
    """Defect 2 of Algorithm 1: a γ removed as empty after a shift stayed in k_τ and τ_K,
    and L37 would later compress a γ that is gone."""
    a = CompressedAggregate(10, 20, idle=15, output=len)
    a.process("old", 0, 1.0)
    a.process("new", 12, 1.0)  # old idle for 12 < 15: kept as it is
    assert a.process("new", 21, 1.0) == [("old", 0, 19, 1.0), ("new", 0, 19, 1.0)]
    assert list(a.gammas) == ["new"] and list(a.last_update) == ["new"]  # old is gone
    assert a.counters.compressions == 0
    assert a.process("other", 36, 1.0) == [("new", 10, 29, 2.0)]
    assert isinstance(a.gammas["new"], _Packed)  # idle since 21: 15 ≥ D
    assert isinstance(a.gammas["other"], _Gamma)
    assert a.counters.compressions == 1 and a.compressed_share == 0.5


def test_d_zero_compresses_after_every_update_and_d_infinite_never():
    stream = [(k, t, float(t)) for t, k in enumerate([0, 1, 0, 1, 2] * 4)]
    _, zero = run(stream, 3, 6, 0)
    _, never = run(stream, 3, 6, None)
    assert zero.counters.compressions >= len(stream)
    assert never.counters.compressions == never.counters.decompressions == 0


@pytest.mark.parametrize("codec", CODECS)
@settings(max_examples=30, deadline=None)
@given(values=st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=50),
       times=st.lists(st.integers(-2**62, 2**62), max_size=50))
def test_packing_is_lossless(codec, values, times):
    n = min(len(values), len(times))
    t = np.array(sorted(times[:n]), dtype=np.int64)
    v = np.array(values[:n], dtype=np.float64)
    back_t, back_v = unpack(pack(t, v, codec), n, codec)
    assert back_t.tolist() == t.tolist()
    assert back_v.view(np.int64).tolist() == v.view(np.int64).tolist()


def test_bad_arguments():
    with pytest.raises(ValueError, match="WA ≤ WS"):
        CompressedAggregate(10, 5, idle=None, output=len)
    with pytest.raises(ValueError, match="unknown codec"):
        CompressedAggregate(1, 5, idle=None, output=len, codec="rar")
    a = CompressedAggregate(1, 5, idle=None, output=len)
    a.process("k", 5, 1.0)
    with pytest.raises(ValueError, match="time order"):
        a.process("k", 4, 1.0)


def test_a_compressed_gamma_is_decompressed_only_when_a_tuple_leaves_it():
    """A γ carries f_O of its tuples when compressed: closes that drop none of its tuples
    output that value without decompressing (Algorithm 1 decompresses at every close)."""
    a = CompressedAggregate(10, 50, idle=0, output=len)
    a.process("gone", 3, 1.0)
    out = a.process("gone", 14, 1.0)  # [-40, 10) closes; γ [3, 14], compressed again
    assert a.counters.decompressions == 1  # for the update
    out += a.advance_to(60)  # instances [-30, 20) … [10, 60) close
    assert [(left, v) for _, left, _, v in out] == [(-40, 1.0), (-30, 2.0), (-20, 2.0),
                                                    (-10, 2.0), (0, 2.0), (10, 1.0)]
    # Only the closes of [0, 50) (3 leaves) and [10, 60) (14 leaves) needed the tuples.
    assert a.counters.decompressions == 1 + 2
    assert not a.gammas
