"""Helpers shared by the optimizer passes: rebuilding a DT, reading a dump back.

Not public API. :func:`rebuild` is how every pass makes its result, so that all
of them keep the interface the same way (seed 003, §5.1: the initial vector is
fed to I and the outputs are read from F *by position*): same alphabet, same
``initial`` and ``final`` in the same order, kept states in their original
order under their original names, the same ``facts``.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from typing import TypeVar

from dt.model import DT, Transition
from dt.terms import Var, parse_term

__all__ = ["from_dump", "rebuild", "redirect", "sccs_topological"]

T = TypeVar("T", int, str)


def rebuild(dt: DT, keep: Iterable[str], transitions: Iterable[Transition]) -> DT:
    """``dt`` restricted to the states ``keep`` (plus I and F) with ``transitions``.

    Returns ``dt`` itself when nothing changed, so that a pass at its fixpoint
    costs no new DT (and :func:`~codegen.optimize.optimize` can stop cheaply).
    """
    kept = set(keep) | set(dt.initial) | set(dt.final)
    states = tuple(q for q in dt.states if q in kept)
    new = tuple(transitions)
    if states == dt.states and new == dt.transitions:
        return dt
    # The constructor validates: a pass that breaks a DT rule fails loudly here.
    return DT(dt.alphabet, states, dt.initial, dt.final, new, dt.facts)


def redirect(t: Transition, rep: Mapping[str, str]) -> Transition:
    """``t`` reading ``rep[q]`` instead of each state q in ``rep`` (primed alike), in its
    sources and its term."""
    if not any(v.name in rep for v in t.sources):
        return t
    mapping = {v: Var(rep[v.name], v.primed) for v in t.sources if v.name in rep}
    sources = frozenset(mapping.get(v, v) for v in t.sources)
    return Transition(t.on, sources, t.target, t.term.rename(mapping))


_TRANSITION = re.compile(r"^\s*(\w+):\s*\{(.*?)\}\s*->\s*(\w+)'\s*:=\s*(.+?)\s*$")


def from_dump(text: str) -> DT:
    """Read back the listing of :meth:`dt.model.DT.dump` (the ``size`` line is optional).

    Used by the doctests so that a tiny DT reads like the dumps they print.

    >>> d = from_dump('''
    ...   alphabet: a
    ...   states:   i, f
    ...   initial:  i
    ...   final:    f
    ...     a: {i} -> f' := i + cur
    ... ''')
    >>> from_dump(d.dump()) == d, d.size
    (True, 7)
    """
    header: dict[str, tuple[str, ...]] = {}
    transitions: list[Transition] = []
    for line in text.strip("\n").splitlines():
        key, _, rest = line.strip().partition(":")
        if key in ("alphabet", "states", "initial", "final"):
            header[key] = tuple(name.strip() for name in rest.split(",") if name.strip())
            continue
        if key == "size" or not line.strip():
            continue
        match = _TRANSITION.match(line)
        if match is None:
            raise ValueError(f"not a dump line: {line!r}")
        on, sources, target, term = match.groups()
        variables = [s.strip() for s in sources.split(",") if s.strip()]
        transitions.append(Transition(
            on,
            frozenset(Var(v.rstrip("'"), v.endswith("'")) for v in variables),
            target,
            parse_term(term),
        ))
    return DT(header.get("alphabet", ()), header.get("states", ()), header.get("initial", ()),
              header.get("final", ()), tuple(transitions))


def sccs_topological(nodes: list[T], edges: Mapping[T, Collection[T]]) -> list[list[T]]:
    """Strongly connected components, each before every component it has edges to.

    Tarjan's algorithm with an explicit stack (no recursion limit). Tarjan emits
    a component after all components reachable from it, so the list is reversed.
    """
    index: dict[T, int] = {}
    low: dict[T, int] = {}
    on_stack: set[T] = set()
    comp_stack: list[T] = []
    out: list[list[T]] = []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work: list[tuple[T, list[T]]] = []
        index[root] = low[root] = counter
        counter += 1
        comp_stack.append(root)
        on_stack.add(root)
        work.append((root, sorted(edges[root], reverse=True)))
        while work:
            v, todo = work[-1]
            if todo:
                w = todo.pop()
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    comp_stack.append(w)
                    on_stack.add(w)
                    work.append((w, sorted(edges[w], reverse=True)))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
            if low[v] == index[v]:
                comp: list[T] = []
                while True:
                    w = comp_stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(sorted(comp))
    out.reverse()
    return out
