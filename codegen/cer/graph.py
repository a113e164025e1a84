"""The match graph: every partial match of a key, shared, in one int64 array (CORE's
compact enumeration structure, Bucchi et al., VLDB'22, with time bounds per scope).

Pipeline position: the storage of :mod:`codegen.cer.kernel`.

A *set* of partial matches is a node id (−1: the empty set). Node 0 is ``BOTTOM``, the
set holding the empty match (a match starts at the event above it). Others are rows of
``nodes`` int64[capacity, FIELDS + K]:

==========  ===================================  =====================================
column      ``OUT`` (kind 0)                     ``UNION`` (kind 1)
==========  ===================================  =====================================
KIND        0                                    1
A           the event's number                   the left set
B           the position it plays                the right set
C           the set of matches it extends        −
TIME        the event's time                     max TIME of both (latest last event)
MINS, MAXS  least, greatest first event's number over the matches in the set
SUB + k     greatest start time of the matches' current instance of scope k
==========  ===================================  =====================================

An ``OUT`` node is the set {m · (event, position) : m ∈ C}: a partial match is a path
from an ``OUT`` node down to ``BOTTOM``, so matches sharing a prefix share its nodes and
a set of any size costs one node to extend or to join (``UNION``). The summaries
(TIME, MINS, MAXS, SUB) let the kernel drop a set none of whose matches can still go on
(a gap or a ``within`` passed, every start discarded) and let enumeration skip such
subsets.

``dead`` int64[capacity, 2] holds the discarded starts (skip policies) as disjoint
sorted inclusive ranges of event numbers, ``meta[1]`` of them; ``meta[0]`` counts the
nodes in use.
"""

from __future__ import annotations

import numba
import numpy as np

from ..numba_cache import guard_namespace

__all__ = [
    "BOTTOM",
    "FIELDS",
    "KIND",
    "MAXS",
    "MINS",
    "NO_TIME",
    "OUT",
    "SUB",
    "TIME",
    "UNION",
    "A",
    "B",
    "C",
    "compact",
    "covered",
    "empty_graph",
    "grow_rows",
    "merge_dead",
    "new_out",
    "new_union",
]

KIND, A, B, C, TIME, MINS, MAXS, SUB = range(8)
FIELDS = SUB
OUT, UNION, BOTTOM_KIND = 0, 1, 2
BOTTOM = 0
NO_TIME = -(2**62)
"""A time before any: an unset scope's start, the bound of no constraint."""

_JIT = {"nopython": True, "cache": True, "nogil": True}


@numba.jit(**_JIT)
def empty_graph(k, capacity=1024):
    """(nodes, dead, meta) holding only ``BOTTOM``, for ``k`` scopes."""
    nodes = np.zeros((capacity, FIELDS + k), dtype=np.int64)
    # BOTTOM's matches start at the event above it, unknown here: its summaries never
    # let a set holding it be dropped (no start is discarded before −1, none is late).
    nodes[BOTTOM, KIND] = BOTTOM_KIND
    nodes[BOTTOM, MINS] = -1
    nodes[BOTTOM, MAXS] = 2**62
    nodes[BOTTOM, SUB:] = 2**62
    return nodes, np.zeros((16, 2), dtype=np.int64), np.array([1, 0], dtype=np.int64)


@numba.jit(**_JIT)
def grow_rows(a, need):
    """``a`` with room for ``need`` rows (doubled, copied; the new rows unset: every
    caller writes a row before it reads it) or ``a`` itself."""
    if need <= a.shape[0]:
        return a
    size = max(a.shape[0], 1) * 2
    while size < need:
        size *= 2
    b = np.empty((size,) + a.shape[1:], dtype=a.dtype)  # noqa: RUF005 (Numba: no star)
    b[: a.shape[0]] = a
    return b


@numba.jit(**_JIT)
def new_union(nodes, meta, x, y):
    """The set x ∪ y (no node when one is empty); room for one node is the caller's."""
    if x < 0:
        return y
    if y < 0:
        return x
    u = meta[0]
    meta[0] += 1
    nodes[u, KIND] = UNION
    nodes[u, A] = x
    nodes[u, B] = y
    nodes[u, TIME] = max(nodes[x, TIME], nodes[y, TIME])
    nodes[u, MINS] = min(nodes[x, MINS], nodes[y, MINS])
    nodes[u, MAXS] = max(nodes[x, MAXS], nodes[y, MAXS])
    for j in range(SUB, nodes.shape[1]):
        nodes[u, j] = max(nodes[x, j], nodes[y, j])
    return u


@numba.jit(**_JIT)
def new_out(nodes, meta, event, position, child, time, mins, maxs, subs):
    """The set {m · (event, position) : m ∈ child}; room for one node is the caller's."""
    o = meta[0]
    meta[0] += 1
    nodes[o, KIND] = OUT
    nodes[o, A] = event
    nodes[o, B] = position
    nodes[o, C] = child
    nodes[o, TIME] = time
    nodes[o, MINS] = mins
    nodes[o, MAXS] = maxs
    for k in range(subs.shape[0]):
        nodes[o, SUB + k] = subs[k]
    return o


@numba.jit(**_JIT)
def _find(dead, n, x):
    """The index of the last range starting at or before x, −1 if none."""
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi) // 2
        if dead[mid, 0] <= x:
            lo = mid + 1
        else:
            hi = mid
    return lo - 1


@numba.jit(**_JIT)
def covered(dead, meta, lo, hi):
    """Whether every start in lo..hi is discarded (one range holds them all)."""
    n = meta[1]
    if n == 0:
        return False
    i = _find(dead, n, lo)
    return i >= 0 and dead[i, 1] >= hi


@numba.jit(**_JIT)
def merge_dead(dead, meta, lo, hi):
    """Discard lo..hi too, in place: ranges merged when they meet or touch. Room for one
    more range is the caller's (none is needed when lo..hi meets or touches a range)."""
    if hi < lo:
        return
    n = meta[1]
    i = _find(dead, n, lo)
    # ranges i+1.. start after lo; merge every range overlapping or touching lo..hi
    first = i if i >= 0 and dead[i, 1] >= lo - 1 else i + 1
    last = first
    new_lo, new_hi = lo, hi
    while last < n and dead[last, 0] <= hi + 1:
        new_lo = min(new_lo, dead[last, 0])
        new_hi = max(new_hi, dead[last, 1])
        last += 1
    removed = last - first
    if removed == 0:
        for j in range(n, first, -1):
            dead[j, 0] = dead[j - 1, 0]
            dead[j, 1] = dead[j - 1, 1]
        meta[1] = n + 1
    else:
        shift = removed - 1
        for j in range(last, n):
            dead[j - shift, 0] = dead[j, 0]
            dead[j - shift, 1] = dead[j, 1]
        meta[1] = n - shift
    dead[first, 0] = new_lo
    dead[first, 1] = new_hi


@numba.jit(**_JIT)
def compact(nodes, meta, dead, roots, t, whole, within, room):
    """The graph of the sets ``roots`` (replaced by their new ids) alone, with room for
    ``room`` more nodes: a set none of whose matches can still complete — every start
    discarded, or (``whole`` ≥ 0) every start ``within`` or more before time t — is
    dropped, and a union of a dropped set is its other set. Costs O(live nodes)."""
    old = meta[0]
    remap = np.full(old, -2, dtype=np.int64)  # −2 unseen, −1 dropped
    size = nodes.shape[0]
    out = np.zeros((size, nodes.shape[1]), dtype=np.int64)
    out[BOTTOM] = nodes[BOTTOM]
    remap[BOTTOM] = BOTTOM
    # per new node: the least first event of its matches but the empty one, and whether
    # it holds the empty one (BOTTOM), to make an OUT node's MINS exact again once some
    # of its matches were dropped (else old starts would stay named for ever)
    first = np.full(size, 2**62, dtype=np.int64)
    bottom = np.zeros(size, dtype=np.bool_)
    bottom[BOTTOM] = True
    meta[0] = 1
    stack = np.empty(64, dtype=np.int64)
    for r in range(roots.shape[0]):
        if roots[r] < 0:
            continue
        stack[0] = roots[r]
        top = 1
        while top > 0:
            x = stack[top - 1]
            if remap[x] != -2:
                top -= 1
                continue
            if covered(dead, meta, nodes[x, MINS], nodes[x, MAXS]) or (
                    whole >= 0 and nodes[x, SUB + whole] <= t - within):
                remap[x] = -1
                top -= 1
                continue
            pending = False
            if nodes[x, KIND] == UNION:
                for child in (nodes[x, A], nodes[x, B]):
                    if remap[child] == -2:
                        stack = _push(stack, top, child)
                        top += 1
                        pending = True
            elif remap[nodes[x, C]] == -2:
                stack = _push(stack, top, nodes[x, C])
                top += 1
                pending = True
            if pending:
                continue
            top -= 1
            if meta[0] + 1 + room > out.shape[0]:
                out = grow_rows(out, meta[0] + 1 + room)
                first = _grow(first, out.shape[0], 2**62)
                bottom = _grow(bottom, out.shape[0], False)
            if nodes[x, KIND] == UNION:
                a, b = remap[nodes[x, A]], remap[nodes[x, B]]
                y = new_union(out, meta, a, b)
                if a >= 0 and b >= 0:
                    first[y] = min(first[a], first[b])
                    bottom[y] = bottom[a] or bottom[b]
                remap[x] = y
            elif remap[nodes[x, C]] == -1:
                remap[x] = -1
            else:
                y = meta[0]
                meta[0] += 1
                c = remap[nodes[x, C]]
                out[y] = nodes[x]
                out[y, C] = c
                first[y] = min(nodes[x, A] if bottom[c] else 2**62, first[c])
                out[y, MINS] = first[y]
                remap[x] = y
        roots[r] = remap[roots[r]]
    if 2 * (meta[0] + room) > out.shape[0]:
        out = grow_rows(out, 2 * (meta[0] + room))
    return out


@numba.jit(**_JIT)
def _grow(a, size, fill):
    """``a`` extended to ``size`` entries with ``fill``."""
    b = np.full(size, fill, dtype=a.dtype)
    b[: a.shape[0]] = a
    return b


@numba.jit(**_JIT)
def _push(stack, top, x):
    stack = grow_rows(stack, top + 1)
    stack[top] = x
    return stack


guard_namespace(globals())
