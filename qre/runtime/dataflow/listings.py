"""Map, Filter, Join and A∞ written only with Aggregates: seed 000's Listings 1–3 and 6.

One function per construct, each returning a :class:`Fragment` (its nodes, where its
input streams enter, the node whose output is its output):

* :func:`embed_map` — E_M, Listing 1 (Theorem 1): A(Γ(δ, δ, S, T(S), L), f_O) keyed
  by the whole tuple, so a window instance holds identical tuples only and its output
  ``(τ, T, −1)`` carries f_M's outputs for all of them (T concatenates them — the
  listing's ∪ is read as the proof of Lemma 2 reads it, a concatenation, so identical
  inputs keep their multiplicity). With ``plus`` it is the A⁺ of §5.1 instead,
  which outputs f_M's tuples directly: Map via A⁺ needs no X.
* :func:`embed_join` — E_J, Listing 2 (Theorem 2): A1, A2 wrap each side's tuples as
  ``(τ, T, ())`` / ``(τ, (), T)``, A3 keys both by the original side's f_K and joins
  within γ; ``plus`` outputs the pairs directly (A⁺). A1 and A2 also read the other
  side's watermarks (through an A that outputs nothing), so that theirs is the join's.
* :func:`unfold` — X, Listing 3 (Theorem 3) with Listings 4–5
  (:mod:`~qre.runtime.dataflow.gates`): A1 turns ``(τ, T, −1)`` into ``(τ, T, 0)``
  and loops ``(τ, T, i)`` to ``(τ, T, i + 1)``; A2 outputs ``T[i]``. The listing's
  loop test ``t[2] < t[1]`` is read as ``t[2] < |t[1]| − 1`` (§4.4's text: A2 reads
  index t[2] of t[1], so the last index is |t[1]| − 1).
* :func:`unbounded` — A∞, Listing 6 (Lemma 5): M1 wraps input tuples, A1 (a sliding
  Γ(P, P + δ, ·, f_k, L), L > d) folds a period's tuples into the state that
  loops back into the next period, M2 applies f_o.

Windows that only wrap tuples (δ-windows keyed by the whole tuple) refine by
*discarding*: a late tuple fires its instance with itself alone, so it is output once
(accumulating would output the earlier identical tuples again). Listing 6's A1 does
the same: its late firings (a state tuple also falls in the window it came from, at
that window's last instant) then see only tuples f_o skips.

The f_O and f_K of the listings are module functions (:func:`map_outputs`,
:func:`unfold_next`, :func:`unfold_output`, :func:`join_side`, :func:`join_key`,
:func:`join_pairs`): :mod:`spark_udf.dataflow` runs the same ones. A Join through
Aggregates has allowed lateness 0 (:func:`embed_join` takes none; an Aggregate's late
firing outputs its window again, so pairs would repeat, and the seed leaves ingress
lateness out, §3). Times are whole δ (δ = 1).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any

from dt.dataflow.definitions import Gamma

from .aggregate import Aggregate, Window, whole_tuple
from .engine import Fragment, Tuple
from .gates import StateLoopIn, SuccessorsIn, SuccessorsOut

__all__ = ["embed_join", "embed_map", "filter_as_map", "join_key", "join_pairs", "join_side",
           "map_outputs", "nothing", "unbounded", "unfold", "unfold_next", "unfold_output"]


# The listings' functions (f_O, f_K), engine-independent: spark_udf.dataflow runs the same.

def map_outputs(f_m: Callable[[Tuple], Iterable[Tuple]], plus: bool) -> Callable[[Gamma], Any]:
    """E_M's f_O (Listing 1): ``(T, −1)`` with f_M's outputs for γ's tuples (None if
    there are none) — with ``plus`` the outputs themselves (Map through A⁺)."""
    if plus:
        def f_o(gamma: Gamma) -> list[Tuple]:
            return [p for t in gamma.tuples for p in f_m(t)]
        return f_o

    def f_o(gamma: Gamma) -> tuple[Any, ...] | None:
        made = tuple(p for t in gamma.tuples for p in f_m(t))
        return (made, -1) if made else None
    return f_o


def filter_as_map(f_c: Callable[[Tuple], bool]) -> Callable[[Tuple], list[Tuple]]:
    """F as an M (§4: M outputs 0 or 1 tuples without changing the type): the tuple's
    values, or nothing."""
    return lambda t: [t[1:]] if f_c(t) else []


def unfold_next(gamma: Gamma) -> tuple[Any, ...] | None:
    """X's A1 (Listing 3, lines 1–9): E's ``(T, −1)`` tuples of γ become ``(T, 0)``;
    ``(T, i)`` becomes ``(T, i + 1)`` while an element is left."""
    t = gamma.tuples[0]
    if t[2] == -1:
        return tuple(p for u in gamma.tuples for p in u[1]), 0
    if t[2] < len(t[1]) - 1:
        return t[1], t[2] + 1
    return None


def unfold_output(gamma: Gamma) -> Tuple:
    """X's A2 (lines 10–12): element t[2] of t[1], for γ's first tuple."""
    t = gamma.tuples[0]
    return t[1][t[2]]


def join_side(first: bool) -> Callable[[Gamma], tuple[Any, ...]]:
    """E_J's A1 (``first``) or A2 (Listing 2, lines 1–8): γ's tuples as ``(T, ())`` or
    ``((), T)``."""
    def f_o(gamma: Gamma) -> tuple[Any, ...]:
        return (gamma.tuples, ()) if first else ((), gamma.tuples)
    return f_o


def join_key(f_k1: Callable[[Tuple], Hashable],
             f_k2: Callable[[Tuple], Hashable]) -> Callable[[Tuple], Hashable]:
    """E_J's A3 key-by (lines 9–11): the original side's key of a wrapped tuple."""
    def f_k(t: Tuple) -> Hashable:
        return f_k1(t[1][0]) if not t[2] else f_k2(t[2][0])
    return f_k


def join_pairs(f_p: Callable[[Tuple, Tuple], bool], plus: bool) -> Callable[[Gamma], Any]:
    """E_J's A3 f_O (lines 12–21): the matching pairs of γ's two sides, as ``(T, −1)``
    (None if none) — with ``plus`` the pairs themselves (Join through A⁺)."""
    def pairs(gamma: Gamma) -> list[tuple[Tuple, Tuple]]:
        win1: list[Tuple] = []
        win2: list[Tuple] = []
        found: list[tuple[Tuple, Tuple]] = []
        for t in gamma.tuples:
            if not t[2]:
                for u in t[1]:
                    found.extend((u, v) for v in win2 if f_p(u, v))
                    win1.append(u)
            else:
                for v in t[2]:
                    found.extend((u, v) for u in win1 if f_p(u, v))
                    win2.append(v)
        return found

    if plus:
        return pairs

    def f_o(gamma: Gamma) -> tuple[Any, ...] | None:
        found = tuple(pairs(gamma))
        return (found, -1) if found else None
    return f_o


def nothing(gamma: Gamma) -> None:
    """An f_O that outputs nothing: the A passes its input's watermarks only."""
    return None


def _delta(key: Callable[[Tuple], Hashable] = whole_tuple, lateness: int = 0) -> Window:
    return Window(1, 1, key, lateness)


def embed_map(name: str, f_m: Callable[[Tuple], Iterable[Tuple]], *, lateness: int = 0,
              plus: bool = False) -> Fragment:
    """E_M (Listing 1), or Map itself through A⁺ with ``plus``."""
    node = Aggregate(name, _delta(lateness=lateness), map_outputs(f_m, plus), plus=plus,
                     refinement="discarding")
    return Fragment([node], [[(node, 0)]], node, {name: node})


def unfold(name: str, *, lateness: int = 0) -> Fragment:
    """X (Listing 3) with its watermark gates. A1's allowed lateness L' is δ (enough
    with the gate of :class:`~.gates.SuccessorsIn`; Theorem 3 asks L' ≥ d) plus
    ``lateness``, when E's tuples may be late by that much; A2's is ``lateness``."""
    gate_in = SuccessorsIn(f"{name}.C2", lateness=1 + lateness)
    a1 = Aggregate(f"{name}.A1", _delta(lateness=1 + lateness), unfold_next,
                   refinement="discarding")
    gate_out = SuccessorsOut(f"{name}.C3")
    a2 = Aggregate(f"{name}.A2", _delta(lateness=lateness), unfold_output,
                   refinement="discarding")
    gate_in.to(a1)
    a1.to(gate_in, 1, loop=True)
    a1.to(gate_out).to(a2)
    nodes = [gate_in, a1, gate_out, a2]
    return Fragment(nodes, [[(gate_in, 0)]], a2, {n.name: n for n in nodes})


def embed_join(name: str, advance: int, size: int, f_k1: Callable[[Tuple], Hashable],
               f_k2: Callable[[Tuple], Hashable], f_p: Callable[[Tuple, Tuple], bool], *,
               plus: bool = False) -> Fragment:
    """E_J (Listing 2), or Join itself through A⁺ with ``plus``. A1 and A2 keep
    their δ-windows open for WS − δ: a tuple late for its δ-window may still fall in an
    aligned window A3 has not fired (Join's own lateness rule)."""

    # A1 wraps S1's tuples, and also reads S2's watermarks through an A that outputs
    # nothing (F(S2, false) as an A), so that its watermark is Join's — the least of
    # both inputs' (§2.2): a tuple late for its own side's watermark but not for the
    # other's still reaches A3. Likewise A2. They keep their δ-windows open for WS − δ
    # (discarding), so that every tuple A3 may still accept gets through.
    a1 = Aggregate(f"{name}.A1", _delta(lateness=size - 1), join_side(True),
                   refinement="discarding", ports=2)
    a2 = Aggregate(f"{name}.A2", _delta(lateness=size - 1), join_side(False),
                   refinement="discarding", ports=2)
    marks1 = Aggregate(f"{name}.W1", Window(1, 1), nothing, refinement="discarding")
    marks2 = Aggregate(f"{name}.W2", Window(1, 1), nothing, refinement="discarding")
    a3 = Aggregate(f"{name}.A3", Window(advance, size, join_key(f_k1, f_k2)),
                   join_pairs(f_p, plus), plus=plus, ports=2)
    marks2.to(a1, 1)
    marks1.to(a2, 1)
    a1.to(a3, 0)
    a2.to(a3, 1)
    nodes = [a1, a2, marks1, marks2, a3]
    return Fragment(nodes, [[(a1, 0), (marks1, 0)], [(a2, 0), (marks2, 0)]], a3,
                    {n.name: n for n in nodes})


@dataclass(frozen=True)
class UnboundedParts:
    """Listing 6's functions: M1's (wrap a tuple), A1's key-by and f_O (fold a
    period's tuples into the state), M2's (output a state), for any engine to wire."""

    wrap: Callable[[Tuple], list[Tuple]]
    key: Callable[[Tuple], Hashable]
    fold: Callable[[Gamma], tuple[Any, ...] | None]
    output: Callable[[Tuple], list[Tuple]]


def unbounded_parts(f_c: Callable[[Tuple], Any], f_a: Callable[[Any, Tuple], Any],
                    f_m: Callable[[Any, Any], Any], f_o: Callable[[Any], Tuple], period: int,
                    f_k: Callable[[Tuple], Hashable]) -> UnboundedParts:
    """A∞'s parts (Listing 6): M1 wraps t as ``(τ, t, None, None)``; A1, over windows
    [l·P, (l + 1)·P + δ) keyed by the original tuple's key (or a state tuple's), folds
    the previous state ``(τ, None, key, state)`` and the period's tuples into the
    next state, stamped (l + 1)·P; M2 outputs ``(key, *f_o(state))``."""

    def wrap(t: Tuple) -> list[Tuple]:  # M1: t → (t, ∅)
        return [(t, None, None)]

    def fold(gamma: Gamma) -> tuple[Any, ...] | None:  # A1's f_o, lines 1–15
        state, made = None, False
        for t in gamma.tuples:
            if t[0] == gamma.l + period:  # also in the next window: processed there
                continue
            if t[1] is not None:
                state = f_a(state, t[1]) if made else f_c(t[1])
            else:
                state = f_m(state, t[3]) if made else t[3]
            made = True
        return (None, gamma.key, state) if made else None

    def key(t: Tuple) -> Hashable:
        return f_k(t[1]) if t[1] is not None else t[2]

    def output(t: Tuple) -> list[Tuple]:  # M2: f_o(t[2]), with the key
        return [(t[2], *f_o(t[3]))]

    return UnboundedParts(wrap, key, fold, output)


def unbounded(name: str, f_c: Callable[[Tuple], Any], f_a: Callable[[Any, Tuple], Any],
              f_m: Callable[[Any, Any], Any], f_o: Callable[[Any], Tuple], period: int,
              f_k: Callable[[Tuple], Hashable], *,
              maps: Callable[[str, Callable[[Tuple], Iterable[Tuple]]], Fragment]) -> Fragment:
    """A∞ (Listing 6): ``maps(name, f)`` builds its two Maps (M1, M2), so that they
    too may be Aggregate-based. A1's allowed lateness is δ (Lemma 5 asks L > d; the
    gate, :class:`~.gates.StateLoopIn`, needs no C1, so d = 0)."""
    parts = unbounded_parts(f_c, f_a, f_m, f_o, period, f_k)
    wrap, key, fold, output = parts.wrap, parts.key, parts.fold, parts.output
    m1 = maps(f"{name}.M1", wrap)
    gate = StateLoopIn(f"{name}.C2", period, f_k)
    a1 = Aggregate(f"{name}.A1", Window(period, period + 1, key, 1), fold,
                   refinement="discarding")
    m2 = maps(f"{name}.M2", output)
    m1.output.to(gate)
    gate.to(a1)
    a1.to(gate, 1, loop=True)
    m2.enter(0, a1)
    return Fragment([*m1.nodes, gate, a1, *m2.nodes], m1.inputs, m2.output,
                    {**m1.parts, gate.name: gate, a1.name: a1, **m2.parts})
