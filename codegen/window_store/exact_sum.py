"""Exact sliding sums: a fixed-point superaccumulator that adds and removes doubles exactly.

Pipeline position: an aggregate kernel of the window store (events in processing order →
window bounds → **sum / avg** → per-step field values the DT reads). Takes the window
bounds (:mod:`.bounds`) and the entries' values as int64 bits; gives ``sum`` or ``avg``
after every step, bit for bit :func:`dt.window_aggregates.exact_sum` (the exact sum
rounded once to nearest, ties to even; the NaN / infinity / −0.0 rules by counts).

Why not floats. A float accumulator that adds the entering value and subtracts the
leaving one drifts: [2^53, 1, 1] sums to 2^53, and 1e308 + 1e308 overflows for good
although the window's exact sum, once −1e308 comes in, is 1e308. Every finite double is
an integer multiple of 2^−1074 below 2^1024, so the window's finite values sum exactly
in a 2,100-bit integer that supports removal as well as addition.

The accumulator. ``limbs`` int64[:data:`LIMBS`]: the value is Σ limbs[k]·2^(32k − 1074).
A double ±m·2^(s − 1074) (m < 2^53 its integer significand, s = its biased exponent − 1,
0 for subnormals) is added as three 32-bit digits of m·2^(s mod 32) to limbs s//32,
s//32 + 1, s//32 + 2, with no carries: a limb may leave 0..2^32−1 and go negative; an
int64 holds 2^31 such digits before it could overflow. The limbs in use are lo..hi.

Per output, one carry pass over lo..hi makes every limb a digit in 0..2^32−1 but the top
one, which is signed and kept in [−2^29, 2^29) (extended upward, or folded into the digit
below while it is only a sign, 0 or −1), and lo the lowest nonzero limb. Then
(:func:`_rounded`) the top two limbs and part of the third give an integer A of 59 to 61
bits with V = A·2^s + R, 0 ≤ R < 2^s (R: the digits below, all nonnegative). Where R > 0,
(2A + 1)·2^(s−1) stands in for V: both lie strictly inside (A, A+1)·2^s, which holds no
rounding point of 53 bits (those are multiples of 2^(s+5) at this size), so both round
alike. 2A + [R > 0] is one int64, which ``float()`` rounds once, correctly; a multiply by
a power of two scales it, exactly (the sum is normal here: a subnormal one fits two limbs,
an exact int64) or to ±inf as IEEE overflow does.

Hot loop (:func:`_window_sums`), per step i::

    while front < end[i]: add entry front;  front += 1   # 3 limb adds, or a count
    while back < first[i]: remove entry back;  back += 1  # the same, negated
    carry pass over lo..hi; out[i] = rounded (or NaN / ±inf / ±0 from the counts) [/ count]

Cost: O(1) per step whatever the window: 3 limb updates per entry added or removed and a
carry pass over the limbs in use — 3 for N(0, 1) values (measured: 26 ns a step for the
kernel, window 5, on a quiet run of this VM; 47 on a busy one), as many as the window's
values span 32-bit digits, at most 70 (values from 1e−300 to 1e300: 85 ns a step).
"""

from __future__ import annotations

import numba
import numpy as np
from numba.cpython.unsafe.numbers import leading_zeros

from ..numba_cache import guard_namespace

__all__ = ["LIMBS", "window_sums"]

_JIT = {"nopython": True, "cache": True, "nogil": True}
_SCALAR = {**_JIT, "inline": "always"}
"""Helpers of the hot loop that take and return scalars only, inlined by Numba. The loop
keeps the limbs itself: a helper that takes the limbs array is either called (a call and
an error check per step) or, inlined by Numba, increments and decrements the array's
reference count per step; either way the loop took 2-3 times as long (measured: 70-100
ns a step against 26-35 for N(0, 1) values, window 5)."""

LIMBS = 72
"""Limbs of the accumulator: digit k weighs 2^(32k − 1074). A double reaches limb 65
(2^1024 is bit 2098); 2^63 of them sum below 2^1087, which with the top limb kept in
[−2^29, 2^29) is limb 68 at most."""

_DIGIT = 32
_MASK = (1 << _DIGIT) - 1
_TOP = 1 << 29
"""The normalized top limb lies in [−_TOP, _TOP): two limbs then make an int64 A with
|A| < 2^61, so 2A + 1 never overflows."""

_FRACTION = (1 << 52) - 1
_EXPONENT = 0x7FF
_NEGATIVE_ZERO = -(2**63)  # the bits of −0.0

_POWERS = np.ldexp(1.0, np.arange(-1022, 1024))
"""2^e for the normal exponents e = −1022..1023, at e + 1022 (a multiply by a power of
two is exact, and ldexp is a call into libm)."""


def window_sums(first: np.ndarray, end: np.ndarray, bits: np.ndarray, avg: bool) -> np.ndarray:
    """The exact sum (or, ``avg``, the sum / count) of entries first[i]..end[i]−1 for every
    step i: ``first``, ``end`` int64[n] nondecreasing (:func:`.bounds.window_bounds`),
    ``bits`` int64[m] the entries' values as bits (``x.view(np.int64)``).

    >>> bits = np.array([1e308, 1e308, -1e308, 2.0**53, 1.0, 1.0]).view(np.int64)
    >>> window_sums(np.array([0, 0, 0, 1, 2, 3]), np.array([1, 2, 3, 4, 5, 6]), bits,
    ...             False).tolist()
    [1e+308, inf, 1e+308, 9007199254740992.0, -1e+308, 9007199254740994.0]
    """
    out = np.empty(len(first), dtype=np.float64)
    _window_sums(first, end, bits, avg, out)
    return out


@numba.jit(**_JIT)
def _window_sums(first, end, bits, avg, out):
    limbs = np.zeros(LIMBS, dtype=np.int64)
    lo, hi = LIMBS, -1  # the limbs in use: none
    # Entries that are not summed, counted: their counts decide NaN, ±inf and −0.0.
    nans = plus_infs = minus_infs = minus_zeros = 0
    front = back = 0
    for i in range(first.shape[0]):
        while front < end[i] or back < first[i]:  # add the new entries, remove the old
            if front < end[i]:
                b, sign = bits[front], 1
                front += 1
            else:
                b, sign = bits[back], -1
                back += 1
            if (b >> 52) & _EXPONENT == _EXPONENT:
                if b & _FRACTION:
                    nans += sign
                elif b < 0:
                    minus_infs += sign
                else:
                    plus_infs += sign
            elif b == _NEGATIVE_ZERO:
                minus_zeros += sign
            else:
                k, d0, d1, d2 = _digits(b)
                limbs[k] += sign * d0  # no carries: they wait for the output
                limbs[k + 1] += sign * d1
                limbs[k + 2] += sign * d2
                lo, hi = min(lo, k), max(hi, k + 2)
        # Normalized at every step whatever the result: a limb then never holds more than
        # one step's digits beyond a digit (2^31 of them would overflow it: a step would
        # have to remove 2^31 entries, 16 GB of values). Afterwards
        # limbs lo..hi−1 are digits in 0..2^32−1, the top hi is in [−2^29, 2^29) and not
        # foldable into the digit below, lo is the lowest nonzero limb; (LIMBS, −1): zero.
        if lo <= hi:
            carry = 0
            for k in range(lo, hi):
                v = limbs[k] + carry
                limbs[k] = v & _MASK
                carry = v >> _DIGIT  # arithmetic: a borrow is −1
            top = limbs[hi] + carry
            while top >= _TOP or top < -_TOP:  # a wider top: one more limb
                limbs[hi] = top & _MASK
                top >>= _DIGIT
                hi += 1
            limbs[hi] = top
            while hi > lo and _foldable(top, limbs[hi - 1]):  # a top of 0 or −1: sign only
                top = _folded(top, limbs[hi - 1])
                limbs[hi] = 0
                hi -= 1
                limbs[hi] = top
            while lo < hi and limbs[lo] == 0:
                lo += 1
            if lo == hi and top == 0:
                lo, hi = LIMBS, -1
        count = end[i] - first[i]
        if nans > 0 or (plus_infs > 0 and minus_infs > 0):
            total = np.nan
        elif plus_infs > 0 or minus_infs > 0:
            total = np.inf if plus_infs > 0 else -np.inf
        elif lo > hi:  # an exact zero: −0.0 only from −0.0s alone
            total = -0.0 if count > 0 and minus_zeros == count else 0.0
        elif hi <= 1:  # below 2^61·2^−1074: an exact int64, rounded once by float()
            total = float((limbs[1] << _DIGIT) + limbs[0]) * 5e-324  # exact scaling
        else:
            total = _rounded(limbs[hi], limbs[hi - 1], limbs[hi - 2], lo < hi - 2, hi)
        if avg:
            total = total / count if count > 0 else np.nan
        out[i] = total


@numba.jit(**_SCALAR)
def _foldable(top, below):
    """Whether a top limb of 0 or −1 over digit ``below`` is one limb in [−2^29, 2^29)."""
    return (top == 0 and below < _TOP) or (top == -1 and below >= (1 << _DIGIT) - _TOP)


@numba.jit(**_SCALAR)
def _folded(top, below):
    """The one limb that a foldable top and its digit below make."""
    return below + (top << _DIGIT)


@numba.jit(**_SCALAR)
def _digits(b):
    """The finite nonzero double of bits ``b`` as ±m·2^(s − 1074): its first limb s // 32
    and the three signed 32-bit digits of ±m·2^(s mod 32), no bit shifted past bit 63."""
    exponent = (b >> 52) & _EXPONENT
    m = b & _FRACTION
    s = 0  # a subnormal's
    if exponent:
        m |= 1 << 52
        s = exponent - 1
    k, r = s >> 5, s & 31
    sign = (b >> 63) | 1  # −1 or 1, without a branch (the signs of data are random)
    return (k, sign * ((m & (_MASK >> r)) << r), sign * ((m >> (_DIGIT - r)) & _MASK),
            sign * ((m >> _DIGIT) >> (_DIGIT - r)))


@numba.jit(**_SCALAR)
def _rounded(top, below, third, lower_nonzero, hi):
    """The normalized value of top limb hi ≥ 2 (then 2^29 ≤ |top·2^32 + below|) rounded
    once to the nearest double (module docstring); ``lower_nonzero``: a digit below
    ``third`` is nonzero."""
    a = (top << _DIGIT) + below  # 2^29 ≤ |a| < 2^61
    length = 64 - leading_zeros(a if a >= 0 else -a)
    shift = max(0, 60 - length)  # |a|·2^shift: 59 to 61 bits
    rest = _DIGIT - shift
    a = (a << shift) + (third >> rest)
    sticky = (third & ((1 << rest) - 1)) != 0 or lower_nonzero
    return _scaled(float(2 * a + sticky), _DIGIT * (hi - 2) + rest - 1 - 1074)


@numba.jit(**_SCALAR)
def _scaled(f, e):
    """f·2^e for |f| in [2^58, 2^63] and a normal or overflowing result: exact, or ±inf."""
    if e > 1023:  # a sum of 2^58 values or more (the table's bound, for the record)
        return f * np.inf
    if e < -1022:  # in two exact steps (2^e is subnormal or not a double)
        return f * _POWERS[e + 64 + 1022] * _POWERS[-64 + 1022]
    return f * _POWERS[e + 1022]


guard_namespace(globals())
