"""The hand-checked DTs of seed 003, §5.2.2 (after Definition 5.4), shared by the tests.

Both read ``i`` (initial, 0.0 under a Monitor) on tag ``a``; ``b`` does nothing.
"""

from __future__ import annotations

from dt.model import DT, Transition
from dt.terms import Apply, Cur, Var

STATE_I, STATE_I_PRIMED = Var("i"), Var("i", True)


def paper_example() -> DT:
    """On a, f' := i + cur; i is not kept, so only the first a answers (restartable)."""
    return DT(("a", "b"), ("i", "f"), ("i",), ("f",), (
        Transition("a", frozenset({STATE_I}), "f", Apply("add", (STATE_I, Cur()))),
    ))


def paper_counterexample() -> DT:
    """On a, i' := i and f' := i' + cur; every a answers (not restartable)."""
    return DT(("a", "b"), ("i", "f"), ("i",), ("f",), (
        Transition("a", frozenset({STATE_I}), "i", STATE_I),
        Transition("a", frozenset({STATE_I_PRIMED}), "f", Apply("add", (STATE_I_PRIMED, Cur()))),
    ))
