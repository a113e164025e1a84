"""Which entering steps each step's window holds: two int64 arrays, one pass.

Pipeline position: the first pass of the window store (events in processing order →
**window bounds** → the aggregate kernels → per-step field values the DT reads). Every
aggregate kernel then only moves two cursors over the entering steps, adding the entries
it passes at the front and removing those it passes at the back: the window logic (count
or time, key boundaries, ticks) is here, once.

The entries. The entering steps, in processing order, numbered 0..m−1 (``entry = the
number of entering steps before it``): key g's entries are a contiguous run, because its
steps are. The window after step i is the entries ``first[i] .. end[i]−1``:

* ``end[i]`` — the entries up to and including step i;
* ``first[i]`` — for a count window, ``max(key's first entry, end[i] − size)``; for a time
  window, the first entry of the key with ``time[i] − time[entry] < size``.

Both are nondecreasing over all steps (key after key), so a kernel's cursors only move
forward: at a new key the back cursor jumps past the previous key's last entries, which
removes them, and the structure is empty again without a reset.

Cost: one pass, O(n + m) (the back cursor moves at most m times in all).
"""

from __future__ import annotations

import numba
import numpy as np

from ..numba_cache import guard_namespace

__all__ = ["window_bounds"]

_JIT = {"nopython": True, "cache": True, "nogil": True}

_INT64_MIN = -(2**63)


def window_bounds(offsets: np.ndarray, enters: np.ndarray, time: np.ndarray | None,
                  size: int, by_time: bool) -> tuple[np.ndarray, np.ndarray]:
    """``first``, ``end`` int64[n]: the window after step i is entries first[i]..end[i]−1
    (module docstring). ``offsets`` int64[K+1] from 0 to n, ``enters`` bool[n], ``time``
    int64[n] (read only ``by_time``; nondecreasing within each key, else ValueError).

    >>> first, end = window_bounds(np.array([0, 3, 5]),
    ...                            np.array([True, False, True, True, True]), None, 1, False)
    >>> first.tolist(), end.tolist()
    ([0, 0, 1, 2, 3], [1, 1, 2, 3, 4])
    >>> first, end = window_bounds(np.array([0, 4]), np.array([True, True, False, True]),
    ...                            np.array([0, 5, 6, 9]), 5, True)
    >>> first.tolist(), end.tolist()
    ([0, 1, 1, 1], [1, 2, 2, 3])
    """
    n = len(enters)
    first, end = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    if time is None:
        time = np.zeros(0, dtype=np.int64)  # never read by a count window
    step = _window_bounds(offsets, enters, time, size, by_time, first, end)
    if step >= 0:
        raise ValueError(f"time decreases within a key at step {step} "
                         f"({int(time[step - 1])} then {int(time[step])})")
    return first, end


@numba.jit(**_JIT)
def _window_bounds(offsets, enters, time, size, by_time, first, end):
    """Fills first/end; returns −1, or the first step whose time is below its key's
    previous step's (the back cursor would have to move back)."""
    # The entries' times, gathered as they are passed: the back cursor reads them again.
    entry_time = np.empty(enters.shape[0] if by_time else 0, dtype=np.int64)
    e = 0
    for g in range(offsets.shape[0] - 1):
        back = e  # the key's first entry: the window starts empty
        for i in range(offsets[g], offsets[g + 1]):
            if by_time and i > offsets[g] and time[i] < time[i - 1]:
                return i
            if enters[i]:
                if by_time:
                    entry_time[e] = time[i]
                e += 1
            if by_time:
                # time[i] − time[entry] ≥ size ⟺ time[entry] ≤ time[i] − size; below
                # INT64_MIN + size the bound is under every int64 time: nothing leaves
                # (and the subtraction would wrap).
                if time[i] >= _INT64_MIN + size:
                    bound = time[i] - size
                    while back < e and entry_time[back] <= bound:
                        back += 1
            else:
                back = max(back, e - size)
            first[i], end[i] = back, e
    return -1


guard_namespace(globals())
