"""The standard family of §5.4.2's gap: "the n-th letter from the end is a".

An r-AFA (and an acyclic DT) with n states recognizes it — a shift register:
q1 is "the last letter is a", q(k+1) takes qk's previous value — while its
minimal DFA has 2^n states: it must remember the last n letters' a-ness.
"""

from __future__ import annotations

from ..model import DT
from .model import FALSE, RAFA, TRUE, Formula, Lit
from .translate import dt_from_rafa

__all__ = ["nth_from_end", "nth_from_end_dt"]


def nth_from_end(n: int, alphabet: tuple[str, ...] = ("a", "b")) -> RAFA:
    """The r-AFA of "the n-th letter from the end is ``alphabet[0]``" (n ≥ 1 states)."""
    if n < 1:
        raise ValueError(f"n starts at 1, not {n}")
    states = tuple(f"q{k}" for k in range(1, n + 1))
    delta: dict[tuple[str, str], Formula] = {}
    for tag in alphabet:
        delta["q1", tag] = TRUE if tag == alphabet[0] else FALSE
        for k in range(2, n + 1):
            delta[f"q{k}", tag] = Lit(f"q{k - 1}")
    return RAFA(alphabet, states, delta, frozenset(), states[-1])


def nth_from_end_dt(n: int, alphabet: tuple[str, ...] = ("a", "b")) -> DT:
    """Its acyclic DT (:func:`~dt.afa.translate.dt_from_rafa`)."""
    return dt_from_rafa(nth_from_end(n, alphabet))
