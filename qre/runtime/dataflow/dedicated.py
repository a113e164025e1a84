"""Dedicated operators (seed 000 §3: "Dedicated" as opposed to AggBased): Map, Filter, Join, A∞.

Each is written directly, as an SPE offers it, and is what the Aggregate-based
compositions of :mod:`~qre.runtime.dataflow.listings` are measured and checked against:

* :class:`Map` — ``f_M(t)`` returns payloads, each output ``(t.τ, *payload)``; no
  state, no wait for watermarks.
* :class:`Filter` — the tuples for which ``f_C`` holds.
* :class:`Join` — a symmetric window join (the seed's D "compares as tuples are being
  fed", §6.1): a tuple accepted into its aligned instances (by the lateness rule of
  :mod:`dt.dataflow.definitions`) is compared with the other side's tuples already
  there, each match ``(γ.l + WS − δ, t1, t2)`` sent at once. State: both sides'
  tuples per (instance, key) until end + L.
* :class:`Unbounded` — A∞ (§5.2) kept as one state per key: tuples wait in a buffer
  until their period closes, then fold in (``f_c``, ``f_a``) and ``f_o(state)`` is
  sent, stamped at the period's end.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Hashable, Iterable
from typing import Any

from dt.dataflow.definitions import windows_of

from .engine import Node, Tuple

__all__ = ["Filter", "Join", "Map", "Unbounded"]


class Map(Node):
    """M(S, f_M)."""

    def __init__(self, name: str, f_m: Callable[[Tuple], Iterable[Tuple]]) -> None:
        super().__init__(name)
        self.f_m = f_m

    def on_tuples(self, port: int, batch: list[Tuple]) -> None:
        f_m = self.f_m
        self.send([(t[0], *p) for t in batch for p in f_m(t)])


class Filter(Node):
    """F(S, f_C)."""

    def __init__(self, name: str, f_c: Callable[[Tuple], bool]) -> None:
        super().__init__(name)
        self.f_c = f_c

    def on_tuples(self, port: int, batch: list[Tuple]) -> None:
        f_c = self.f_c
        self.send([t for t in batch if f_c(t)])


class Join(Node):
    """J(Γ(WA, WS, S1, f_K1, L), Γ(WA, WS, S2, f_K2, L), f_P): port 0 is S1, port 1 S2."""

    def __init__(self, name: str, advance: int, size: int, f_k1: Callable[[Tuple], Hashable],
                 f_k2: Callable[[Tuple], Hashable], f_p: Callable[[Tuple, Tuple], bool], *,
                 lateness: int = 0) -> None:
        super().__init__(name, ports=2)
        self.advance_, self.size, self.lateness = advance, size, lateness
        self.keys = (f_k1, f_k2)
        self.f_p = f_p
        self.kept: dict[tuple[int, Hashable], tuple[list[Tuple], list[Tuple]]] = {}
        self.purge: list[tuple[int, int, tuple[int, Hashable]]] = []
        self.made = 0
        self.dropped = 0

    STATE = ("kept", "purge", "made", "dropped")

    def partition_key(self, port: int) -> Callable[[Tuple], Hashable]:
        return self.keys[port]

    def next_time(self) -> int | None:
        return self.purge[0][0] if self.purge else None

    def on_tuples(self, port: int, batch: list[Tuple]) -> None:
        wa, ws, lateness, w = self.advance_, self.size, self.lateness, self.w
        key, f_p, kept = self.keys[port], self.f_p, self.kept
        out: list[Tuple] = []
        for t in batch:
            k = key(t)
            for left in windows_of(t[0], wa, ws):
                if w >= left + ws + lateness:
                    self.dropped += 1
                    continue
                sides = kept.get((left, k))
                if sides is None:
                    sides = kept[(left, k)] = ([], [])
                    self.made += 1
                    heapq.heappush(self.purge, (left + ws + lateness, self.made, (left, k)))
                sides[port].append(t)
                stamp = left + ws - 1
                if port == 0:
                    out.extend((stamp, t, u) for u in sides[1] if f_p(t, u))
                else:
                    out.extend((stamp, u, t) for u in sides[0] if f_p(u, t))
        self.send(out)

    def advance(self, w: int) -> None:
        purge = self.purge
        while purge and purge[0][0] <= w:
            del self.kept[heapq.heappop(purge)[2]]


class Unbounded(Node):
    """A∞(f_c, f_a, f_m, f_o, P, f_k, S) kept directly: output ``((l + 1)·P, key,
    *f_o(state))`` once the watermark passes the period's window end (l + 1)·P + δ."""

    def __init__(self, name: str, f_c: Callable[[Tuple], Any],
                 f_a: Callable[[Any, Tuple], Any], f_o: Callable[[Any], Tuple], period: int,
                 f_k: Callable[[Tuple], Hashable]) -> None:
        super().__init__(name)
        self.f_c, self.f_a, self.f_o, self.period, self.f_k = f_c, f_a, f_o, period, f_k
        self.states: dict[Hashable, list[Any]] = {}  # key → [state, next period, buffer]
        # (the next period is the least among the key's tuples until one is output)
        self.due: list[tuple[int, int, Hashable]] = []
        self.made = 0
        self.dropped = 0

    STATE = ("states", "due", "made", "dropped")

    def partition_key(self, port: int) -> Callable[[Tuple], Hashable]:
        return self.f_k

    def next_time(self) -> int | None:
        return self.due[0][0] if self.due else None

    def on_tuples(self, port: int, batch: list[Tuple]) -> None:
        for t in batch:
            k = self.f_k(t)
            entry = self.states.get(k)
            p = t[0] // self.period
            if entry is None:
                entry = self.states[k] = [None, p + 1, []]
            if p < entry[1]:
                if entry[0] is not None:
                    self.dropped += 1  # its period was output: a late tuple
                    continue
                entry[1] = p
                self.made += 1
                heapq.heappush(self.due, ((p + 1) * self.period + 1, self.made, k))
            entry[2].append(t)

    def advance(self, w: int) -> None:
        out: list[Tuple] = []
        due, period = self.due, self.period
        while due and due[0][0] <= w:
            end, made, k = heapq.heappop(due)
            entry = self.states[k]
            boundary = end - 1
            if boundary != (entry[1] + 1) * period:
                continue  # superseded by an earlier first period
            state, keep = entry[0], []
            for t in entry[2]:
                if t[0] < boundary:
                    state = self.f_c(t) if state is None else self.f_a(state, t)
                else:
                    keep.append(t)
            entry[0], entry[2] = state, keep
            entry[1] += 1
            out.append((boundary, k, *self.f_o(state)))
            heapq.heappush(due, (end + period, made, k))
        self.send(out)
