"""A window's tuples laid out for a codec: times delta-encoded, both arrays byte-shuffled.

Pipeline position: a key's window state (int64 times, float64 values: seed 001's γ,
:mod:`qre.runtime.compressed_aggregate`) → **these bytes** → a lossless codec (and back).

Layout of :func:`shuffled`'s uint8[16·n]: for k = 0..7 the byte k (little-endian) of every
time difference t[i] − t[i−1] (t[−1] = 0; int64 arithmetic, which wraps and is undone
by the running sum), n bytes each; then for k = 0..7 the byte k of every value's bits.
Nearby times differ by small, often equal amounts and nearby floats share their sign,
exponent and leading mantissa bytes, so each run of n bytes repeats: what a codec finds.

Cost: one pass over the tuples each way, about a nanosecond a byte; numpy's reshape,
transpose and ``diff`` took 7 µs to pack and 12 µs to unpack 40 tuples (per-call
overheads), these under a microsecond (benchmarks/compressed_windows.py).
"""

from __future__ import annotations

import numba
import numpy as np

from ..numba_cache import guard_namespace

__all__ = ["shuffled", "unshuffled"]

_JIT = {"nopython": True, "cache": True, "nogil": True}


def shuffled(times: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The layout of the module docstring, uint8[16·n], of int64 ``times`` and float64
    ``values`` of length n.

    >>> raw = shuffled(np.array([7, 9], dtype=np.int64), np.array([1.0, -0.0]))
    >>> raw[:2].tolist(), raw[2:16].tolist() == [0] * 14, raw[30:].tolist()
    ([7, 2], True, [63, 128])
    """
    out = np.empty(16 * len(times), dtype=np.uint8)
    _shuffle(np.ascontiguousarray(times, dtype=np.int64),
             np.ascontiguousarray(values, dtype=np.float64).view(np.int64), out)
    return out


def unshuffled(raw: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The times (int64[n]) and values (float64[n]) that :func:`shuffled` laid out in
    ``raw`` (uint8[16·n], read-only is fine)."""
    times = np.empty(n, dtype=np.int64)
    bits = np.empty(n, dtype=np.int64)
    _unshuffle(raw, n, times, bits)
    return times, bits.view(np.float64)


@numba.jit(**_JIT)
def _shuffle(times, bits, out):
    n = times.shape[0]
    previous = 0
    for i in range(n):
        delta = times[i] - previous
        previous = times[i]
        value = bits[i]
        for k in range(8):
            out[k * n + i] = (delta >> (8 * k)) & 0xFF
            out[(8 + k) * n + i] = (value >> (8 * k)) & 0xFF


@numba.jit(**_JIT)
def _unshuffle(raw, n, times, bits):
    total = 0
    for i in range(n):
        delta = 0
        value = 0
        for k in range(8):
            delta |= np.int64(raw[k * n + i]) << (8 * k)
            value |= np.int64(raw[(8 + k) * n + i]) << (8 * k)
        total += delta
        times[i] = total
        bits[i] = value


guard_namespace(globals())
