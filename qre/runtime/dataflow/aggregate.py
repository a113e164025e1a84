"""The Aggregate A(Γ(WA, WS, S_I, f_K, L), f_O) and A⁺ (seed 000 §2.1, §5.1) as an engine node.

Per key, window instances γ = [l·WA, l·WA + WS); ``f_O(γ)`` (a
:class:`~dt.dataflow.Gamma`: γ.l, the key, γ.ζ) runs when the watermark reaches γ's
end and again for each late tuple γ accepts (:mod:`dt.dataflow.definitions` states
the rules); A outputs ``(end − δ, *f_O(γ))`` unless f_O returns None, A⁺ one tuple per
payload f_O returns.

State: the instances not yet purged (end + L above the watermark), each a list of its
tuples — emptied at each firing when the refinement is ``"discarding"``; a heap of
unfired instances by end, and one of fired instances by purge time. Per tuple: its
key, one dict lookup per instance holding it (WS / WA of them), a list append.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from dt.dataflow.definitions import Gamma, windows_of

from .engine import Node, Tuple

__all__ = ["Aggregate", "Window", "whole_tuple"]

Refinement = Literal["accumulating", "discarding"]


def whole_tuple(t: Tuple) -> Tuple:
    """f_K = T(S): key by every attribute (the seed's Listings 1–3)."""
    return t


def no_key(t: Tuple) -> None:
    """f_K = ∅: one key for every tuple."""
    return None


@dataclass(frozen=True)
class Window:
    """Γ(WA, WS, ·, f_K, L): advance, size, key-by (None: one key), allowed lateness,
    all in δ. Tumbling when advance = size, sliding when advance < size."""

    advance: int
    size: int
    key: Callable[[Tuple], Hashable] | None = None
    lateness: int = 0

    def __post_init__(self) -> None:
        for name in ("advance", "size", "lateness"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"a window's {name} is a whole number of δ, not {value!r}")
        if self.advance < 1 or self.size < self.advance:
            raise ValueError(f"a window needs 1 ≤ advance ≤ size (δ), not advance "
                             f"{self.advance}, size {self.size}")
        if self.lateness < 0:
            raise ValueError(f"allowed lateness is ≥ 0, not {self.lateness}")

    @property
    def key_of(self) -> Callable[[Tuple], Hashable]:
        return self.key if self.key is not None else no_key


class _Instance:
    __slots__ = ("end", "fired", "tuples")

    def __init__(self, end: int) -> None:
        self.end = end
        self.tuples: list[Tuple] = []
        self.fired = False


class Aggregate(Node):
    """A (``plus=False``: f_O returns a payload tuple or None) or A⁺ (``plus=True``:
    an iterable of payload tuples) over ``ports`` merged inputs (P1), ``loops`` among
    them carrying tuples only."""

    def __init__(self, name: str, window: Window, f_o: Callable[[Gamma], Any], *,
                 plus: bool = False, refinement: Refinement = "accumulating",
                 ports: int = 1, loops: Iterable[int] = ()) -> None:
        super().__init__(name, ports, loops)
        if refinement not in ("accumulating", "discarding"):
            raise ValueError(f"refinement is 'accumulating' or 'discarding', not {refinement!r}")
        self.window = window
        self.f_o = f_o
        self.plus = plus
        self.discarding = refinement == "discarding"
        self.instances: dict[tuple[int, Hashable], _Instance] = {}
        self.due: list[tuple[int, int, tuple[int, Hashable]]] = []
        self.purge: list[tuple[int, int, tuple[int, Hashable]]] = []
        self.made = 0  # instances made: orders equal ends by first tuple
        self.dropped = 0

    STATE = ("instances", "due", "purge", "made", "dropped")

    def partition_key(self, port: int) -> Callable[[Tuple], Hashable]:
        return self.window.key_of

    def next_time(self) -> int | None:
        return min((heap[0][0] for heap in (self.due, self.purge) if heap), default=None)

    def on_tuples(self, port: int, batch: list[Tuple]) -> None:
        wa, ws, lateness = self.window.advance, self.window.size, self.window.lateness
        key = self.window.key_of
        instances = self.instances
        w = self.w
        out: list[Tuple] = []
        for t in batch:
            tau = t[0]
            k = key(t)
            for left in ((tau // wa * wa,) if wa == ws else windows_of(tau, wa, ws)):
                end = left + ws
                if w >= end + lateness:
                    self.dropped += 1
                    continue
                lk = (left, k)
                inst = instances.get(lk)
                if inst is None:
                    inst = instances[lk] = _Instance(end)
                    self.made += 1
                    if w < end:
                        heapq.heappush(self.due, (end, self.made, lk))
                inst.tuples.append(t)
                if w >= end:  # late: fire now
                    self._fire(lk, inst, out)
        self.send(out)

    def advance(self, w: int) -> None:
        out: list[Tuple] = []
        due, instances = self.due, self.instances
        while due and due[0][0] <= w:
            _, _, lk = heapq.heappop(due)
            self._fire(lk, instances[lk], out)
        purge = self.purge
        while purge and purge[0][0] <= w:
            del instances[heapq.heappop(purge)[2]]
        self.send(out)

    def _fire(self, lk: tuple[int, Hashable], inst: _Instance, out: list[Tuple]) -> None:
        if not inst.fired:
            inst.fired = True
            gone = inst.end + self.window.lateness
            if gone <= self.w:
                del self.instances[lk]
            else:
                self.made += 1
                heapq.heappush(self.purge, (gone, self.made, lk))
        made = self.f_o(Gamma(lk[0], lk[1], tuple(inst.tuples)))
        if self.discarding:
            inst.tuples = []
        stamp = inst.end - 1
        if self.plus:
            if made is not None:
                out.extend((stamp, *p) for p in made)
        elif made is not None:
            out.append((stamp, *made))
