"""The streaming-algorithm IR: STREAM(Op) with the regularity restriction (seed 003, §5.4.3).

An algorithm keeps Boolean variables and data variables. Its *init* and
*update* programs are loop-free: assignments, sequences and conditionals.
Data variables are only read and written through the operations of the DT
signature (``dt.terms`` terms, with ``cur`` in update and the inputs in init);
Boolean variables support every Boolean operation, and — the regularity
restriction that Theorem 5.11 needs — they and the conditions of ``if`` depend
on the input tags alone: constants, Boolean variables and tag tests, never on
data. The output is a data term over the variables, present when a Boolean
flag holds.

The nodes are frozen dataclasses; statements carry their source line and
column (1-based) for error messages.
"""

from __future__ import annotations

from dataclasses import dataclass

from dt.boolean import Both, Either, Neg, Truth, tree_size
from dt.terms import Term

__all__ = ["Algorithm", "Assign", "BVar", "BoolExpr", "If", "Statement", "TagIn"]


@dataclass(frozen=True)
class BVar:
    """A Boolean variable's current value."""

    name: str


@dataclass(frozen=True)
class TagIn:
    """The current event's tag is one of ``tags`` (``tag == "a"``, ``tag in ("a", "b")``)."""

    tags: frozenset[str]


BoolExpr = Truth | BVar | TagIn | Neg | Both | Either
"""A Boolean: :mod:`dt.boolean`'s connectives over constants, variables and tag tests."""


@dataclass(frozen=True)
class Assign:
    """``name = value``: a data term, or a Boolean expression for a Boolean variable."""

    name: str
    value: Term | BoolExpr
    line: int
    column: int


@dataclass(frozen=True)
class If:
    """``if cond: then else: orelse`` (``elif`` is an ``If`` in ``orelse``)."""

    cond: BoolExpr
    then: tuple[Statement, ...]
    orelse: tuple[Statement, ...]
    line: int
    column: int


Statement = Assign | If


@dataclass(frozen=True)
class Algorithm:
    """A regular streaming algorithm (module docstring).

    ``inputs`` — init's parameters (the DT's initial states); ``booleans`` and
    ``data`` — the variables, in order of first assignment; ``flag`` and
    ``result`` — the output ``result`` when ``flag`` holds, else none (⊥).
    """

    alphabet: tuple[str, ...]
    inputs: tuple[str, ...]
    booleans: tuple[str, ...]
    data: tuple[str, ...]
    init: tuple[Statement, ...]
    update: tuple[Statement, ...]
    flag: BoolExpr
    result: Term

    @property
    def size(self) -> int:
        """Statements, expression nodes and variables: what the DT's size is linear in."""
        return (len(self.inputs) + len(self.booleans) + len(self.data)
                + _block_size(self.init) + _block_size(self.update)
                + tree_size(self.flag) + self.result.size)


def _block_size(block: tuple[Statement, ...]) -> int:
    total = 0
    for s in block:
        if isinstance(s, Assign):
            value = s.value
            total += 1 + (tree_size(value) if not isinstance(value, Term) else value.size)
        else:
            total += 1 + tree_size(s.cond) + _block_size(s.then) + _block_size(s.orelse)
    return total
