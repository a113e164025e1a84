"""Reversed alternating finite automata (r-AFA; seed 003, §5.4.2, after [23, 59]).

An r-AFA (Q, Σ, δ, I, F) reads a tag string forward and keeps a Boolean per
state. δ gives, per state and tag, a Boolean combination of the states'
*previous* values: after reading σ, ``q`` becomes ``δ(q, σ)`` evaluated on the
valuation before σ. ``initial`` is the set of states true on the empty
string; the string is accepted when ``final`` is true. (An AFA reading the
string backwards accepts the same language.)

Formulas are the connectives of :mod:`dt.boolean` (:class:`Neg`,
:class:`Both`, :class:`Either`, :data:`TRUE`, :data:`FALSE`) over literals
:class:`Lit`, compared by value, so equal subformulas are one node in
:func:`formula_size` (the DAG's size, what the translations keep linear).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..boolean import FALSE, TRUE, Both, Either, Neg, Truth, children, node_count
from ..errors import DTError

__all__ = ["FALSE", "RAFA", "TRUE", "Both", "Either", "Formula", "Lit", "Neg", "Truth",
           "evaluate_formula", "formula_size"]


@dataclass(frozen=True)
class Lit:
    """The previous value of state ``q``."""

    q: str


Formula = Truth | Lit | Neg | Both | Either


def formula_size(formulas: Iterable[Formula]) -> int:
    """Distinct nodes of the formulas (equal subformulas counted once)."""
    return node_count(formulas)


def evaluate_formula(f: Formula, previous: Mapping[str, bool]) -> bool:
    if isinstance(f, Truth):
        return f.value
    if isinstance(f, Lit):
        return previous[f.q]
    if isinstance(f, Neg):
        return not evaluate_formula(f.arg, previous)
    if isinstance(f, Both):
        return evaluate_formula(f.left, previous) and evaluate_formula(f.right, previous)
    return evaluate_formula(f.left, previous) or evaluate_formula(f.right, previous)


def _literals(f: Formula) -> Iterable[str]:
    stack = [f]
    while stack:
        g = stack.pop()
        if isinstance(g, Lit):
            yield g.q
        stack.extend(children(g))


@dataclass(frozen=True, eq=False)
class RAFA:
    """A reversed alternating finite automaton; see the module docstring."""

    alphabet: tuple[str, ...]
    states: tuple[str, ...]
    delta: Mapping[tuple[str, str], Formula]
    initial: frozenset[str]
    final: str

    def __post_init__(self) -> None:
        states = set(self.states)
        if self.final not in states or not self.initial <= states:
            raise DTError("the final state and the initial states are states")
        for q in self.states:
            for tag in self.alphabet:
                f = self.delta.get((q, tag))
                if f is None:
                    raise DTError(f"no δ({q}, {tag})")
                unknown = set(_literals(f)) - states
                if unknown:
                    raise DTError(f"δ({q}, {tag}) reads {', '.join(sorted(unknown))}: not states")

    @property
    def size(self) -> int:
        """|Q| plus the distinct formula nodes of δ."""
        return len(self.states) + formula_size(self.delta.values())

    def run(self, tags: Iterable[str]) -> list[bool]:
        """Acceptance after every prefix of ``tags``, the empty one included."""
        value = {q: q in self.initial for q in self.states}
        out = [value[self.final]]
        for tag in tags:
            value = {q: evaluate_formula(self.delta[q, tag], value) for q in self.states}
            out.append(value[self.final])
        return out
