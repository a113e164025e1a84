"""A key's window contents between calls (issue 23 §4): the events a later step's window
can still reach.

Pipeline position: a resumed run (:class:`qre.runtime.monitor.Session`, a Spark stream's
key state) → **the carried contents put before the new steps** → the window store
(:meth:`qre.runtime.window_fields.WindowPlan.resume`) → the contents after them, kept
for the next call. A window's value at a step depends only on the events in it, so
running the store over the carried events and then the new steps gives the new steps
the values of one run over everything, bit for bit; the carried events' own values are
dropped.

What is carried: the key's entering steps (events; ticks never enter a window) from the
earliest one that some window of the key's last step holds: for every window that is
also the earliest any later step's window can hold, since a later step is at the same
time or after (the last k events for a count window, those less than the window's span
before the last step for a time window). Per event: its time (δ of the run), its tag's
code (a window aggregate of some tags reads it) and each window's term; per window, the
events it has had in all (a window of events closes at every slide-th of them).

Serialized (:meth:`WindowContents.to_bytes`): int64 n, int64 W, int64 form, int64
counts[W], then the payload, all little-endian. Form 0, raw: int64 times[n], int32
codes[n], float64 terms[n·W] (row-major), 12 + 8·W bytes an event. Form 1, compressed (seed 001's
compressed state, for contents idle for a while: a stream's ``compress_windows``): the
same arrays with the times delta-encoded and every array byte-shuffled (byte k of every
item together; the terms column by column), compressed with lz4 (the codec
benchmarks/linear_road.py chose for A_C). Cost: the store runs over the carried events
again at every call (as many as the widest window holds); compressing is one pass over
the bytes each way.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

__all__ = ["WindowContents"]

_HEADER = 24
_RAW, _COMPRESSED = 0, 1
_CODEC = "lz4"


@dataclass(frozen=True, eq=False)
class WindowContents:
    """The carried events of one key, in processing order (module docstring)."""

    times: np.ndarray
    """int64[n]: each event's time in δ of the run (0 in an untimed run)."""
    codes: np.ndarray
    """int32[n]: each event's tag, its index in the monitor's alphabet."""
    terms: np.ndarray
    """float64[n, W]: window k's term at each event."""
    counts: np.ndarray
    """int64[W]: the events window k has had in all (those of its tags), these included."""

    @classmethod
    def empty(cls, windows: int) -> WindowContents:
        """No event yet: a key's contents before its first call."""
        return cls(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int32),
                   np.zeros((0, windows)), np.zeros(windows, dtype=np.int64))

    def __len__(self) -> int:
        return len(self.times)

    def to_bytes(self, *, compress: bool = False) -> bytes:
        """The layout of the module docstring, raw or (``compress``) compressed.

        >>> c = WindowContents(np.array([3, 5]), np.array([0, 1]), np.array([[1.5], [-0.0]]),
        ...                    np.array([7]))
        >>> for data in (c.to_bytes(), c.to_bytes(compress=True)):
        ...     back = WindowContents.from_bytes(data)
        ...     print(back.times.tolist(), back.codes.tolist(), back.terms.tolist(),
        ...           back.counts.tolist())
        [3, 5] [0, 1] [[1.5], [-0.0]] [7]
        [3, 5] [0, 1] [[1.5], [-0.0]] [7]
        >>> len(c.to_bytes()) == 24 + 8 + 2 * (12 + 8)
        True
        """
        n, w = self.terms.shape
        head = _header(n, w, _COMPRESSED if compress else _RAW) + np.ascontiguousarray(
            self.counts, dtype="<i8").tobytes()
        times = np.ascontiguousarray(self.times, dtype="<i8")
        codes = np.ascontiguousarray(self.codes, dtype="<i4")
        terms = np.ascontiguousarray(self.terms, dtype="<f8")
        if not compress:
            return b"".join([head, times.tobytes(), codes.tobytes(), terms.tobytes()])
        deltas = np.diff(times, prepend=np.int64(0))  # int64: wraps, undone by the sum
        payload = b"".join([_shuffled(deltas), _shuffled(codes),
                            *(_shuffled(np.ascontiguousarray(terms[:, k])) for k in range(w))])
        return head + pa.compress(payload, codec=_CODEC, asbytes=True)

    @staticmethod
    def is_compressed(data: bytes) -> bool:
        """Whether :meth:`to_bytes` wrote ``data`` compressed."""
        return _read_header(data)[2] == _COMPRESSED

    @classmethod
    def from_bytes(cls, data: bytes) -> WindowContents:
        """The contents :meth:`to_bytes` wrote (a ValueError if the bytes are not such)."""
        n, w, form = _read_header(data)
        size, start = n * (12 + 8 * w), _HEADER + 8 * w
        if len(data) < start or (form == _RAW and len(data) != start + size):
            raise ValueError(f"window contents: {len(data)} bytes do not hold {n} events of "
                             f"{w} windows")
        counts = np.frombuffer(data, dtype="<i8", count=w, offset=_HEADER).astype(np.int64)
        if form == _RAW:
            times = np.frombuffer(data, dtype="<i8", count=n, offset=start)
            codes = np.frombuffer(data, dtype="<i4", count=n, offset=start + 8 * n)
            terms = np.frombuffer(data, dtype="<f8", count=n * w, offset=start + 12 * n)
            return cls(times.astype(np.int64), codes.astype(np.int32),
                       terms.astype(np.float64).reshape(n, w), counts)
        raw = np.frombuffer(pa.decompress(data[start:], decompressed_size=size, codec=_CODEC,
                                          asbytes=True), dtype=np.uint8)
        times = np.cumsum(_unshuffled(raw[:8 * n], "<i8", n))
        codes = _unshuffled(raw[8 * n:12 * n], "<i4", n)
        terms = np.empty((n, w))
        for k in range(w):
            lo = 12 * n + 8 * n * k
            terms[:, k] = _unshuffled(raw[lo:lo + 8 * n], "<f8", n)
        return cls(times.astype(np.int64), codes.astype(np.int32), terms, counts)


def _header(n: int, w: int, form: int) -> bytes:
    return np.array([n, w, form], dtype="<i8").tobytes()


def _read_header(data: bytes) -> tuple[int, int, int]:
    if len(data) < _HEADER:
        raise ValueError(f"window contents: {len(data)} bytes, not a header of {_HEADER}")
    n, w, form = (int(v) for v in np.frombuffer(data, dtype="<i8", count=3))
    if n < 0 or w < 0 or form not in (_RAW, _COMPRESSED):
        raise ValueError(f"window contents: a header of {n} events, {w} windows and form "
                         f"{form} is not one")
    return n, w, form


def _shuffled(items: np.ndarray) -> bytes:
    """Byte k of every item together, for k = 0 .. itemsize − 1."""
    return items.view(np.uint8).reshape(len(items), items.itemsize).T.tobytes()


def _unshuffled(raw: np.ndarray, dtype: str, n: int) -> np.ndarray:
    size = np.dtype(dtype).itemsize
    return np.ascontiguousarray(raw.reshape(size, n).T).view(dtype).reshape(n)
