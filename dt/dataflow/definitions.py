"""Seed 000 §2.1–2.3 as brute force: what Map, Filter, Aggregate, Join and A∞ output.

An operator receives an *arrival sequence*: tuples and watermarks in the order they
reach it (:data:`Item`). A watermark W promises that later tuples have τ ≥ W; a tuple
with τ < W is *late* (§2.3). The definitions here fix the lateness rules this project
uses (the seed leaves them to the Dataflow model, its reference [1]):

* A window instance γ = [l·WA, l·WA + WS) of a key **accepts** a tuple that arrives
  while the operator's watermark W is below γ's end plus the allowed lateness L
  (W < l·WA + WS + L); otherwise the tuple is dropped from γ (it may still enter a
  later instance of a sliding window).
* γ **fires** when W first reaches its end (W ≥ l·WA + WS), if it holds a tuple: its
  output is stamped end − δ. Instances firing at one watermark fire in order of l, then
  of the key's first tuple in γ.
* A tuple accepted after γ fired (a late one) fires γ again at once. *Accumulating*
  (Flink's default, the Dataflow model's accumulating mode): f_O sees every tuple of γ;
  *discarding*: the tuples that arrived since γ last fired.

The run's end is a last watermark ``until``: windows whose end is past it never fire.

Join (Definition 2): each pair of accepted tuples (t1, t2) in aligned instances of
equal key is compared once, output ``(γ.l + WS − δ, t1, t2)`` when ``f_P`` holds; its
watermark is the least of its two inputs' (§2.2).

A∞ (§5.2, Lemma 5): per key, the state of all its tuples (``f_c`` on the first,
``f_a`` on the rest, in arrival order), output ``f_o(state)`` stamped (l + 1)·P at
the end of every period [l·P, (l + 1)·P) from the key's first tuple's period on, for
each period whose window [l·P, (l + 1)·P + δ) closes by ``until``. It assumes no late
tuple (the seed's assumption for its loops: ingresses deliver none).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["Gamma", "Item", "aggregate", "filter_", "join", "map_", "unbounded", "windows_of"]

Tuple = tuple[Any, ...]
Item = tuple[Literal["t"], Tuple] | tuple[Literal["w"], int]
"""An arrival: ``("t", tuple)`` or ``("w", watermark)``."""

Refinement = Literal["accumulating", "discarding"]


@dataclass(frozen=True, slots=True)
class Gamma:
    """A window instance as f_O sees it: its left boundary ``l`` (γ.l, in δ), its key
    and its tuples (γ.ζ, in arrival order)."""

    l: int  # noqa: E741 - the seed writes γ.l
    key: Hashable
    tuples: tuple[Tuple, ...]


def windows_of(tau: int, wa: int, ws: int) -> range:
    """The left boundaries l·WA of the instances [l·WA, l·WA + WS) holding time τ."""
    first = -((ws - 1 - tau) // wa)  # the least l with l·WA + WS > τ
    return range(first * wa, tau // wa * wa + 1, wa)


def map_(items: Sequence[Item], f_m: Callable[[Tuple], Iterable[Tuple]]) -> list[Tuple]:
    """M(S, f_M): every tuple, late or not, gives ``(t.τ, *p)`` for each payload p of
    ``f_M(t)``."""
    return [(t[0], *p) for kind, t in items if kind == "t" for p in f_m(t)]


def filter_(items: Sequence[Item], f_c: Callable[[Tuple], bool]) -> list[Tuple]:
    """F(S, f_C): the tuples for which ``f_C`` holds."""
    return [t for kind, t in items if kind == "t" and f_c(t)]


def aggregate(items: Sequence[Item], wa: int, ws: int, f_k: Callable[[Tuple], Hashable],
              f_o: Callable[[Gamma], Any], *, until: int, lateness: int = 0,
              refinement: Refinement = "accumulating", plus: bool = False) -> list[Tuple]:
    """A(Γ(WA, WS, S, f_K, L), f_O): ``f_O(γ)`` returns a payload or None (A), or an
    iterable of payloads (A⁺, ``plus``); each output is ``(end − δ, *payload)``."""
    contents: dict[tuple[int, Hashable], list[Tuple]] = {}
    shown: dict[tuple[int, Hashable], int] = {}  # tuples seen by the last firing
    out: list[Tuple] = []

    def fire(lk: tuple[int, Hashable]) -> None:
        left, k = lk
        tuples = contents[lk]
        seen = tuples if refinement == "accumulating" else tuples[shown.get(lk, 0):]
        shown[lk] = len(tuples)
        made = f_o(Gamma(left, k, tuple(seen)))
        stamp = left + ws - 1
        if plus:
            out.extend((stamp, *p) for p in made)
        elif made is not None:
            out.append((stamp, *made))

    w: float = float("-inf")
    for kind, x in [*items, ("w", until)]:
        if kind == "w":
            if x > w:
                w = x
                due = [lk for lk in contents if lk not in shown and lk[0] + ws <= w]
                for lk in sorted(due, key=lambda lk: lk[0]):  # stable: keys by first tuple
                    fire(lk)
            continue
        for left in windows_of(x[0], wa, ws):
            if w >= left + ws + lateness:
                continue
            lk = (left, f_k(x))
            contents.setdefault(lk, []).append(x)
            if w >= left + ws:
                fire(lk)
    return out


def join(items: Sequence[tuple[int, Item]], wa: int, ws: int,
         f_k1: Callable[[Tuple], Hashable], f_k2: Callable[[Tuple], Hashable],
         f_p: Callable[[Tuple, Tuple], bool], *, lateness: int = 0) -> list[Tuple]:
    """J(Γ(WA, WS, S1, f_K1, L), Γ(WA, WS, S2, f_K2, L), f_P) over the two inputs'
    arrivals ``(side, item)``, side 0 or 1: ``(end − δ, t1, t2)`` once per matching
    pair of accepted tuples."""
    marks = [float("-inf"), float("-inf")]
    kept: dict[tuple[int, Hashable], tuple[list[Tuple], list[Tuple]]] = {}
    out: list[Tuple] = []
    for side, (kind, x) in items:
        if kind == "w":
            marks[side] = max(marks[side], x)
            continue
        w = min(marks)
        for left in windows_of(x[0], wa, ws):
            if w >= left + ws + lateness:
                continue
            key = (f_k1 if side == 0 else f_k2)(x)
            sides = kept.setdefault((left, key), ([], []))
            sides[side].append(x)
            for y in sides[1 - side]:
                t1, t2 = (x, y) if side == 0 else (y, x)
                if f_p(t1, t2):
                    out.append((left + ws - 1, t1, t2))
    return out


def unbounded(items: Sequence[Item], f_c: Callable[[Tuple], Any],
              f_a: Callable[[Any, Tuple], Any], f_o: Callable[[Any], Tuple], period: int,
              f_k: Callable[[Tuple], Hashable], *, until: int) -> list[Tuple]:
    """A∞(f_c, f_a, f_m, f_o, P, f_k, S): ``(l·P + P, key, *f_o(state))`` for each
    key and period l from its first tuple's on whose window ends by ``until``; the
    state folds the key's tuples with τ < (l + 1)·P. (f_m, merging two states, is a
    way of computing the same fold: it does not change it.)"""
    by_key: dict[Hashable, list[Tuple]] = {}
    w: float = float("-inf")
    for kind, x in items:
        if kind == "w":
            w = max(w, x)
        elif x[0] < w:
            raise ValueError(f"A∞ is defined for streams without late tuples: {x!r} "
                             f"arrives after watermark {w}")
        else:
            by_key.setdefault(f_k(x), []).append(x)
    out: list[Tuple] = []
    for key, tuples in by_key.items():
        p = min(t[0] for t in tuples) // period
        while (p + 1) * period + 1 <= until:
            inside = [t for t in tuples if t[0] < (p + 1) * period]
            state = f_c(inside[0])
            for t in inside[1:]:
                state = f_a(state, t)
            out.append(((p + 1) * period, key, *f_o(state)))
            p += 1
    return out
