"""Seed 001's Aggregate A_C: time-based windows per key whose idle state is compressed.

Meaning (seed 001 §2.1). An Aggregate A(WA, WS, f_K, f_A, f_O, f_S) keeps, per key, the
tuples of its window instances [l·WA, l·WA + WS) and outputs f_O of each non-empty
instance when the instance closes, stamped γ.l + WS − δ. A_C (§4, Algorithm 1) adds a
knob D: the state γ of a key not updated for D units of event time is compressed
(losslessly) and decompressed whenever an update (f_A), an output (f_O) or a shift (f_S)
needs it. D = 0 compresses every γ after each update, D = ∞ (None) never. The outputs do
not depend on D: that is the oracle of the tests, with a brute-force recomputation.

Input (§3): tuples in timestamp order (a tuple's time is A_C's watermark); a watermark
may also advance without a tuple (:meth:`CompressedAggregate.advance`), and
:meth:`CompressedAggregate.flush` closes what is left at the end.

State. ``gammas``: key → :class:`_Gamma` (the key's tuples from the earliest open
instance on: times and values, uncompressed) or :class:`_Packed` (the same, compressed);
``earliest``: e_l, the earliest open left boundary; ``idle``: the keys whose γ is
uncompressed, by the time of their last update (τ_K and k_τ of Algorithm 1 in one
insertion-ordered dict: tuples come in time order, so a key's new time is the latest
and the oldest updates are first).

Algorithm 1 as printed has three defects, fixed here:

1. *The left-bound check.* L11 closes instances while ``e_l + WS < t.τ``; an instance
   [e_l, e_l + WS) excludes its right end, so a tuple at exactly e_l + WS would be added
   to γ and leak into the instance before it closes. Closed here while
   ``e_l + WS <= t.τ`` (and while ``<= watermark`` in :meth:`advance`: Definition 2).
2. *Stale key bookkeeping.* A γ removed when it empties after a shift (L15–16, L21–22)
   stays in k_τ and τ_K, so L37 later "compresses" a γ that no longer exists (or, once
   the key is back, compresses its fresh γ too early). Here a removed γ leaves the
   bookkeeping at once, so every key it names has its γ there, uncompressed.
3. *No final flush.* Nothing closes the instances still open when the input ends; here
   :meth:`flush` closes them all, in order.

Two more choices, which keep the outputs independent of D: one map of keys (compressed or
not), in the order their γs were created (a γ that empties is removed, whatever D), so
that the outputs of one instance come in that order (Algorithm 1's two loops emit the
uncompressed keys first, an order that depends on D); and when no key holds a tuple, e_l
jumps to the new tuple's earliest instance instead of stepping through empty instances
one WA at a time (no output is skipped: none exists).

Compression. A γ is two arrays, int64 times and float64 values; packed, the times are
delta-encoded (small, repetitive integers), both arrays are byte-shuffled (byte k of
every value together: the exponent bytes of nearby floats agree) and compressed by a
codec of ``pyarrow`` (:data:`CODECS`), lz4 by default: benchmarks/compressed_windows.py
measured a 3-hour γ of Linear Road reports at 0.050 of its 16 bytes a tuple with lz4 at
23 µs a round trip, zstd 0.031 at 43 µs (0.124 without the packing), brotli 0.026 at
96 µs; on Linear Road end to end (benchmarks/linear_road.py) lz4 costs about half
zstd's throughput loss for about 10 % more memory. Lossless: bit for bit the same
arrays come back.

What a compressed γ keeps uncompressed: its earliest tuple's time and f_O of its tuples
(computed when it is compressed). A γ always holds exactly the tuples of the next instance
to close, so an output needs no decompression — f_O of the same tuples is the same value
— and a shift needs one only when a tuple leaves. Algorithm 1 decompresses every
compressed γ at every instance close (L12–24); here a γ that went idle is decompressed
once per close that drops its tuples: for a vehicle that left the road, during the last
span of its journey's length before the window forgets it (benchmarks/linear_road.py).

Cost per tuple: O(1) dictionary work and an append; each instance close visits every key
(L12–24) and computes f_O of the uncompressed γs that changed since the last close;
compression visits only the keys that became idle.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from codegen.window_store.packing import shuffled, unshuffled

__all__ = ["CODECS", "CompressedAggregate", "Output", "pack", "unpack"]

CODECS = ("zstd", "lz4", "snappy", "gzip", "brotli")
"""The lossless codecs a γ may be compressed with (pyarrow's)."""

Output = tuple[Hashable, int, int, float]
"""(key, the instance's left boundary l, its stamp l + WS − δ, f_O of its tuples)."""


@dataclass
class _Gamma:
    """A key's tuples from the earliest open instance on, in time order (uncompressed)."""

    times: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    values: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.float64))
    length: int = 0
    """The tuples held: ``times[:length]`` (the arrays grow by doubling)."""
    known: float | None = None
    """f_O of the tuples held, if computed since they last changed (else None)."""

    def add(self, time: int, value: float) -> None:
        """f_A: append a tuple (times come in order)."""
        if self.length == len(self.times):
            grown = max(8, 2 * self.length)
            self.times = np.resize(self.times, grown)
            self.values = np.resize(self.values, grown)
        self.times[self.length] = time
        self.values[self.length] = value
        self.length += 1
        self.known = None

    def shift(self, left: int) -> None:
        """f_S: drop the tuples before the new left boundary ``left``."""
        cut = int(np.searchsorted(self.times[:self.length], left, side="left"))
        if cut:
            keep = self.length - cut
            self.times[:keep] = self.times[cut:self.length]
            self.values[:keep] = self.values[cut:self.length]
            self.length = keep
            self.known = None

    @property
    def nbytes(self) -> int:
        """The bytes of the tuples held (16 a tuple: its time and its value)."""
        return 16 * self.length


@dataclass(frozen=True)
class _Packed:
    """A compressed γ: :func:`pack`'s bytes, the number of tuples, and, uncompressed,
    the earliest tuple's time and f_O of the tuples (so that a close needs the tuples
    only when one of them leaves)."""

    data: bytes
    length: int
    first: int
    known: float

    @property
    def nbytes(self) -> int:
        return len(self.data)


def pack(times: np.ndarray, values: np.ndarray, codec: str = "lz4") -> bytes:
    """``times`` (int64) and ``values`` (float64) of equal length, compressed losslessly:
    times as their first value and differences, both arrays byte-shuffled
    (:func:`codegen.window_store.packing.shuffled`), then ``codec``.

    >>> t, v = np.array([0, 30, 60], dtype=np.int64), np.array([1.5, -0.0, np.nan])
    >>> back = unpack(pack(t, v), 3)
    >>> back[0].tolist(), back[1].view(np.int64).tolist() == v.view(np.int64).tolist()
    ([0, 30, 60], True)
    """
    return pa.compress(shuffled(times, values), codec=codec, asbytes=True)


def unpack(data: bytes, length: int, codec: str = "lz4") -> tuple[np.ndarray, np.ndarray]:
    """The times and values :func:`pack` compressed (``length`` of each)."""
    raw = pa.decompress(data, decompressed_size=16 * length, codec=codec, asbytes=True)
    return unshuffled(np.frombuffer(raw, dtype=np.uint8), length)


@dataclass
class Counters:
    """What A_C did (seed 001 §3's metrics)."""

    compressions: int = 0
    decompressions: int = 0


class CompressedAggregate:
    """A_C(WA, WS, D) with f_O ``output`` over each instance's values (in time order).

    ``advance`` WA and ``size`` WS in whole time units (δ = 1), WA ≤ WS; ``idle`` D in the
    same units, None for ∞ (never compress). Feed tuples in time order with
    :meth:`process`; each call returns the outputs it makes, in stamp order.

    >>> a = CompressedAggregate(10, 30, idle=0, output=len)
    >>> a.process("x", 5, 1.0), a.process("y", 12, 2.0)
    ([], [('x', -20, 9, 1.0)])
    >>> a.process("x", 31, 3.0)
    [('x', -10, 19, 1.0), ('y', -10, 19, 1.0), ('x', 0, 29, 1.0), ('y', 0, 29, 1.0)]
    >>> a.flush()
    [('y', 10, 39, 1.0), ('x', 10, 39, 1.0), ('x', 20, 49, 1.0), ('x', 30, 59, 1.0)]
    >>> a.counters
    Counters(compressions=3, decompressions=3)
    """

    def __init__(self, advance: int, size: int, *, idle: int | None,
                 output: Callable[[np.ndarray], float], codec: str = "lz4") -> None:
        if not 0 < advance <= size:
            raise ValueError(f"an Aggregate has 0 < WA ≤ WS, not WA={advance}, WS={size}")
        if idle is not None and idle < 0:
            raise ValueError(f"D is a duration ≥ 0 or None (∞), not {idle}")
        if codec not in CODECS:
            raise ValueError(f"unknown codec {codec!r}; one of {', '.join(CODECS)}")
        self.advance, self.size, self.idle = advance, size, idle
        self.output, self.codec = output, codec
        self.gammas: dict[Hashable, _Gamma | _Packed] = {}
        self.earliest: int | None = None
        self.idle_keys: dict[int, set[Hashable]] = {}
        self.last_update: dict[Hashable, int] = {}
        self.counters = Counters()
        self._watermark: int | None = None

    # ------------------------------------------------------------------ the operator

    def process(self, key: Hashable, time: int, value: float) -> list[Output]:
        """One tuple (Algorithm 1's ``process``): close the instances it shows closed,
        add it to its key's γ, compress the γs idle for D."""
        if self._watermark is not None and time < self._watermark:
            raise ValueError(f"tuples come in time order: {time} after {self._watermark}")
        self._watermark = time
        out = self._close(lambda end: end <= time)  # defect 1: <=, not <
        if not self.gammas:  # no tuple kept: start at the tuple's earliest instance
            self.earliest = self._earliest_left(time)
        gamma = self._unpacked(key)
        gamma.add(time, value)
        self._touched(key, time)
        self._compress_idle(time)
        return out

    def advance_to(self, watermark: int) -> list[Output]:
        """A watermark without a tuple: close the instances that end at or before it."""
        if self._watermark is not None and watermark < self._watermark:
            return []
        self._watermark = watermark
        out = self._close(lambda end: end <= watermark)
        self._compress_idle(watermark)
        return out

    def flush(self) -> list[Output]:
        """The end of the input (defect 3): close every instance still holding a tuple."""
        return self._close(lambda end: True)

    # ------------------------------------------------------------------ metrics

    @property
    def state_bytes(self) -> tuple[int, int]:
        """The bytes of the tuples held: uncompressed γs, compressed γs."""
        plain = sum(g.nbytes for g in self.gammas.values() if isinstance(g, _Gamma))
        packed = sum(g.nbytes for g in self.gammas.values() if isinstance(g, _Packed))
        return plain, packed

    @property
    def compressed_share(self) -> float:
        """The share of γs compressed (NaN with none)."""
        if not self.gammas:
            return math.nan
        return sum(isinstance(g, _Packed) for g in self.gammas.values()) / len(self.gammas)

    # ------------------------------------------------------------------ steps

    def _earliest_left(self, time: int) -> int:
        """getEarliestLeftBound: the least l·WA with l·WA + WS > time."""
        return ((time - self.size) // self.advance + 1) * self.advance

    def _close(self, closes: Callable[[int], bool]) -> list[Output]:
        """Output and shift every instance [e_l, e_l + WS) that ``closes`` (L11–25)."""
        out: list[Output] = []
        while self.gammas and self.earliest is not None and \
                closes(self.earliest + self.size):
            left = self.earliest
            for key in list(self.gammas):
                out.extend(self._close_one(key, left))
            self.earliest = left + self.advance
        return out

    def _close_one(self, key: Hashable, left: int) -> Iterator[Output]:
        """f_O of the key's instance [left, left + WS), then f_S to left + WA: γ holds
        exactly that instance's tuples (the earlier ones were shifted out, the later
        ones close it first). A compressed γ carries f_O of its tuples, so it is
        decompressed (and compressed again) only when a tuple leaves it."""
        stored = self.gammas[key]
        stamp, after = left + self.size - 1, left + self.advance
        if isinstance(stored, _Packed):
            yield key, left, stamp, stored.known
            if stored.first < after:
                times, values = self._unpack(stored)
                cut = int(np.searchsorted(times, after, side="left"))
                if cut == stored.length:
                    self._remove(key)
                else:
                    self.gammas[key] = self._pack(times[cut:], values[cut:], None)
            return
        if stored.known is None:
            stored.known = float(self.output(stored.values[:stored.length]))
        yield key, left, stamp, stored.known
        if stored.times[0] < after:
            stored.shift(after)
            if stored.length == 0:
                self._remove(key)

    def _remove(self, key: Hashable) -> None:
        """An empty γ is dropped, and leaves the bookkeeping at once (defect 2)."""
        del self.gammas[key]
        self._forget(key)

    def _unpacked(self, key: Hashable) -> _Gamma:
        """getOrCreate: the key's γ, decompressed if it was compressed."""
        stored = self.gammas.get(key)
        if stored is None:
            stored = self.gammas[key] = _Gamma()
        elif isinstance(stored, _Packed):
            times, values = self._unpack(stored)
            stored = self.gammas[key] = _Gamma(times, values, stored.length, stored.known)
        return stored

    def _touched(self, key: Hashable, time: int) -> None:
        """L30–33: the key's latest update is ``time``."""
        self._forget(key)
        self.last_update[key] = time
        self.idle_keys.setdefault(time, set()).add(key)

    def _forget(self, key: Hashable) -> None:
        before = self.last_update.pop(key, None)
        if before is not None:
            keys = self.idle_keys[before]
            keys.discard(key)
            if not keys:
                del self.idle_keys[before]

    def _compress_idle(self, now: int) -> None:
        """L34–42: compress the γs not updated for D, oldest updates first."""
        if self.idle is None:
            return
        while self.idle_keys:
            oldest = next(iter(self.idle_keys))  # insertion order is time order
            if now - oldest < self.idle:
                break
            for key in self.idle_keys.pop(oldest):
                del self.last_update[key]
                gamma = self.gammas[key]
                # Defect 2: a removed γ left the bookkeeping (_close_one), so it is here.
                assert isinstance(gamma, _Gamma), "an idle key's γ is there, uncompressed"
                n = gamma.length
                self.gammas[key] = self._pack(gamma.times[:n], gamma.values[:n], gamma.known)

    def _pack(self, times: np.ndarray, values: np.ndarray, known: float | None) -> _Packed:
        """A γ's tuples compressed, with f_O of them (``known`` if computed already): a
        close then needs the tuples only if one of them leaves (or an update comes)."""
        self.counters.compressions += 1
        if known is None:
            known = float(self.output(values))
        return _Packed(pack(times, values, self.codec), len(times), int(times[0]), known)

    def _unpack(self, packed: _Packed) -> tuple[np.ndarray, np.ndarray]:
        self.counters.decompressions += 1
        return unpack(packed.data, packed.length, self.codec)
