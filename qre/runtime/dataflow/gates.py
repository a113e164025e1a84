"""Watermarks around loops (seed 000 §4.5, Listings 4–5, and Lemma 5's loop for A∞).

An Aggregate whose output loops back to its input (P3) sees its own successors as
late arrivals; these nodes hold watermarks back so that no successor is dropped (C2)
and no output of the loop is late downstream (C3):

* :class:`SuccessorsIn` — Listing 4, on X's A1 input (E's stream and the loop
  merged): counts, per timestamp, the successors E's tuples will loop (|t[1]| each)
  and forwards watermarks W ≤ B = the earliest pending timestamp + L'. Where Listing 4
  holds a greater W until a later one fits, B itself is forwarded (a lower watermark is
  always a true one): Lemma 3 needs C1 for a held W to be followed by one that fits,
  and C1 as stated (consecutive watermarks, the first tuple to the first watermark)
  does not bound an out-of-order tuple before the first watermark — E's stream
  ``t(4), t(0), W 4`` holds 4 forever once t(0) sets B = 0 + L' < 4. So no C1 is
  needed and L' ≥ δ suffices (A1 must reach the earliest pending window's end).
* :class:`SuccessorsOut` — Listing 5, between A1 and A2: a first successor ``(τ, T,
  0)`` announces |T| − 1 more at τ; watermarks to A2 stay below the earliest τ with
  successors pending (Lemma 4). The listing tests ``t[2] = −1`` for the first
  successor, which A1 never outputs (it outputs index 0 first, §4.4's text): index 0 is
  read here, and an entry is removed when it reaches 0 either way (|T| = 1 adds 0).
  With nothing pending it forwards A1's own latest watermark (the listing: t.τ).
* :class:`StateLoopIn` — A∞'s A1 input (Lemma 5 assumes C2 for it; the seed gives no
  listing): each key's state tuple for period l + 1 comes back stamped (l + 1)·P and
  must reach A1 before the window [(l + 1)·P, (l + 2)·P + δ) closes, so watermarks
  stay ≤ the earliest expected stamp + P; a held watermark is forwarded as that bound
  (a lower watermark is always a true one), so no C1 is needed.

Cost: a dict and a heap of timestamps (lazy deletion) per gate; O(log n) per tuple.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Hashable

from .engine import MIN_TIME, Node, Tuple

__all__ = ["StateLoopIn", "SuccessorsIn", "SuccessorsOut"]


class _Pending:
    """succΓ: a TreeMap of timestamp → count, as a dict and a heap (lazy deletion)."""

    def __init__(self) -> None:
        self.counts: dict[int, int] = {}
        self.heap: list[int] = []

    def add(self, tau: int, n: int) -> None:
        count = self.counts.get(tau, 0) + n
        if count == 0:
            self.counts.pop(tau, None)
        else:
            if tau not in self.counts:
                heapq.heappush(self.heap, tau)
            self.counts[tau] = count

    def first(self) -> int | None:
        heap = self.heap
        while heap and heap[0] not in self.counts:
            heapq.heappop(heap)
        return heap[0] if heap else None


class SuccessorsIn(Node):
    """Listing 4. Port 0: E's stream (tuples ``(τ, T, −1)`` and watermarks); port 1:
    the loop from A1 (``(τ, T, i)``, i ≥ 0). Sends every tuple on, in order."""

    STATE = ("pending", "held")

    def __init__(self, name: str, lateness: int) -> None:
        super().__init__(name, ports=2, loops=(1,))
        self.lateness = lateness  # L', A1's allowed lateness
        self.pending = _Pending()
        self.held: list[int] = []  # pendingW

    def bound(self) -> float:
        first = self.pending.first()
        return float("inf") if first is None else first + self.lateness

    def on_tuples(self, port: int, batch: list[Tuple]) -> None:
        run: list[Tuple] = []
        for t in batch:
            run.append(t)
            self.pending.add(t[0], len(t[1]) if t[2] == -1 else -1)
            bound, nxt = self.bound(), None
            while self.held and self.held[0] <= bound:
                nxt = self.held.pop(0)
            if self.held:
                nxt = bound
            if nxt is not None and nxt > self.w:
                self.send(run)
                run = []
                self._forward(nxt)
        self.send(run)

    def on_watermark(self, port: int, w: int) -> None:
        bound = self.bound()
        if w <= bound:
            self._forward(w)
        else:
            self.held.append(w)
            self._forward(bound)

    def _forward(self, w: float) -> None:
        if w > self.w:
            self.w = int(w)
            self.send_watermark(self.w)


class SuccessorsOut(Node):
    """Listing 5: A1's output (tuples ``(τ, T, i)`` and watermarks) on to A2. When no
    successor is pending it forwards the latest watermark A1 sent (Listing 5 forwards
    t.τ after a tuple, which keeps A2's windows at t.τ open until A1's next
    watermark: an identical late chain would then share A2's window with the first
    and A2, reading γ.ζ[0], would output one of them)."""

    STATE = ("pending", "upstream")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.pending = _Pending()
        self.upstream = MIN_TIME  # the latest watermark from A1

    def on_tuples(self, port: int, batch: list[Tuple]) -> None:
        run: list[Tuple] = []
        for t in batch:
            run.append(t)
            self.pending.add(t[0], len(t[1]) - 1 if t[2] == 0 else -1)
            w = self._allowed()
            if w > self.w:
                self.send(run)
                run = []
                self.w = w
                self.send_watermark(w)
        self.send(run)

    def on_watermark(self, port: int, w: int) -> None:
        self.upstream = max(self.upstream, w)
        w = self._allowed()
        if w > self.w:
            self.w = w
            self.send_watermark(w)

    def _allowed(self) -> int:
        first = self.pending.first()
        return self.upstream if first is None else min(self.upstream, first - 1)


class StateLoopIn(Node):
    """A∞'s A1 input. Port 0: M1's stream ``(τ, t, None, None)`` and watermarks;
    port 1: the loop ``(τ, None, key, state)``."""

    STATE = ("expected", "heap", "made", "held")

    def __init__(self, name: str, period: int, f_k: Callable[[Tuple], Hashable]) -> None:
        super().__init__(name, ports=2, loops=(1,))
        self.period = period
        self.f_k = f_k
        self.expected: dict[Hashable, int] = {}  # key → stamp of its next state tuple
        self.heap: list[tuple[int, int, Hashable]] = []
        self.made = 0
        self.held: int | None = None  # the latest watermark not yet forwarded

    def bound(self) -> float:
        heap = self.heap
        while heap and self.expected.get(heap[0][2]) != heap[0][0]:
            heapq.heappop(heap)
        return float("inf") if not heap else heap[0][0] + self.period

    def on_tuples(self, port: int, batch: list[Tuple]) -> None:
        run: list[Tuple] = []
        for t in batch:
            run.append(t)
            if port == 0:
                k = self.f_k(t[1])
                if k in self.expected:
                    continue
                stamp = (t[0] // self.period + 1) * self.period
            else:
                k, stamp = t[2], t[0] + self.period
            self.expected[k] = stamp
            self.made += 1
            heapq.heappush(self.heap, (stamp, self.made, k))
            if self.held is not None and min(self.held, self.bound()) > self.w:
                self.send(run)
                run = []
                self._release()
        self.send(run)

    def on_watermark(self, port: int, w: int) -> None:
        self.held = w
        self._release()

    def _release(self) -> None:
        w = min(self.held, self.bound())
        if w > self.w:
            self.w = int(w)
            self.send_watermark(self.w)
        if self.w >= self.held:
            self.held = None
