"""A mutable builder that freezes into an immutable :class:`~dt.model.DT`.

Every construction of §5.2 is written the same way: make a :class:`Builder`,
``embed`` the component DTs (their states are renamed to fresh names, so
components never clash), add the construction's own states and glue
transitions, and ``freeze`` with the new initial and final states.

Fresh names keep a hint of the original (``i``, ``f``, ``q``…) followed by a
number unique within the builder, so dumps stay readable: ``i0``, ``f1``, ``q7``.
"""

from __future__ import annotations

from collections.abc import Iterable

from .model import DT, EPS, Facts, Transition
from .terms import Term, Var

__all__ = ["Builder"]


class Builder:
    """Collects states and transitions over one alphabet, then freezes a DT."""

    def __init__(self, alphabet: Iterable[str]) -> None:
        self.alphabet = tuple(alphabet)
        self._states: list[str] = []
        self._transitions: list[Transition] = []
        self._counter = 0

    def state(self, hint: str = "q") -> str:
        """A fresh state named after ``hint`` (trailing digits dropped)."""
        base = hint.rstrip("0123456789") or "q"
        name = f"{base}{self._counter}"
        self._counter += 1
        self._states.append(name)
        return name

    def states(self, hints: Iterable[str]) -> tuple[str, ...]:
        """One fresh state per hint."""
        return tuple(self.state(h) for h in hints)

    def embed(self, dt: DT) -> dict[str, str]:
        """Copy ``dt``'s states (renamed fresh) and transitions; return old→new names."""
        if dt.alphabet != self.alphabet:
            raise ValueError(
                f"alphabets differ: building over ({', '.join(self.alphabet)}), "
                f"component over ({', '.join(dt.alphabet)})"
            )
        rename = {q: self.state(q) for q in dt.states}
        for t in dt.transitions:
            var_map = {v: Var(rename[v.name], v.primed) for v in t.sources}
            self._transitions.append(
                Transition(
                    t.on,
                    frozenset(var_map.values()),
                    rename[t.target],
                    t.term.rename(var_map),
                )
            )
        return rename

    def add(self, on: str, sources: Iterable[Var], target: str, term: Term) -> None:
        """Add the transition ``(on, sources, target', term)``."""
        self._transitions.append(Transition(on, frozenset(sources), target, term))

    def copy(self, source: str, target: str, on: str = EPS) -> None:
        """Add ``target' := source'`` (an epsilon copy by default, as in §5.2)."""
        v = Var(source, primed=True)
        self.add(on, [v], target, v)

    def freeze(
        self, initial: Iterable[str], final: Iterable[str], facts: Facts | None = None
    ) -> DT:
        """The immutable DT; validation happens here."""
        return DT(
            self.alphabet,
            tuple(self._states),
            tuple(initial),
            tuple(final),
            tuple(self._transitions),
            facts or Facts(),
        )
