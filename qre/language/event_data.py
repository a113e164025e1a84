"""An event is one number or a record, never both: the check at the query's text.

A DT whose terms read both plain ``cur`` and ``cur.FIELD`` can run on no event
(:meth:`dt.model.DT.check_event_data` refuses it at load). :func:`check_event_data`
finds the same mistake in a typed query, before compiling, and reports it as a
:class:`~qre.language.errors.QreTypeError` located at the construct that reads a
field, so that the user sees a caret rather than a DT error.

A time-bounded past operator (``once[0s, 10s](φ)``, issue 21 §2) reads the event
time as a field of the record a timed run passes (:mod:`qre.language.patterns`), so
it counts as reading a field: its operands read ``cur.x``, not ``cur``.

A query with sliding windows (``avg_over(2d, cur)``, issue 23) reads their values as
fields a window store adds (:func:`window_field`), and plain ``cur`` as the field
:data:`PLAIN_FIELD`: those names are the DT's, never the user's.

Cost: one pass over the query's nodes (each shared node once: ``let`` may share).
"""

from __future__ import annotations

from dataclasses import fields, is_dataclass

from dt.terms import Term

from .ast import BoundedPast, Span
from .errors import QreTypeError

__all__ = ["PLAIN_FIELD", "WINDOW_FIELD_PREFIX", "check_event_data", "window_field"]

WINDOW_FIELD_PREFIX = "__window"
"""The fields that carry the sliding windows' values to the DT (:func:`window_field`)."""

PLAIN_FIELD = "__cur"
"""The field a query with sliding windows reads plain ``cur`` as: its events become
records (the windows' values beside the data), and a DT reads cur or fields, not both."""


def window_field(k: int) -> str:
    """The field holding the k-th sliding window's value at each step (issue 23)."""
    return f"{WINDOW_FIELD_PREFIX}{k}"



def check_event_data(query: object) -> None:
    """Raise :class:`QreTypeError` if ``query`` reads both ``cur`` and a ``cur.FIELD``.

    >>> from qre.language.parser import parse
    >>> from qre.language.typing import resolve
    >>> check_event_data(resolve(parse("combine(last(cur), last(cur.x), +)")))
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    qre.language.errors.QreTypeError: this reads cur.x, but the query also reads cur (line 1, ...
    """
    plain: Span | None = None  # where cur is read (the nearest located construct)
    record: tuple[Span | None, str] | None = None  # where a field is read, and what
    reads_plain = False
    seen: set[int] = set()
    stack: list[tuple[object, Span | None]] = [(query, None)]
    while stack:
        node, around = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        here = getattr(node, "span", None) or around
        if record is None and isinstance(node, BoundedPast) and not node.bound.events:
            record = here, f"the event time ({node.op}[...] with durations)"
        for value in _attributes(node):
            if isinstance(value, Term):
                if not reads_plain and value.reads_plain_cur():
                    reads_plain, plain = True, here
                if record is None and value.fields():
                    record = here, f"cur.{min(value.fields())}"
            elif is_dataclass(value) and not isinstance(value, Span | type):
                stack.append((value, here))
    if reads_plain and record is not None:
        span, name = record
        at = f" (line {plain.line}, column {plain.column})" if plain else ""
        raise QreTypeError(f"this reads {name}, but the query also reads cur{at}: an "
                           f"event carries one number (cur) or a record of named numbers "
                           f"(cur.FIELD), not both: pass values as a dict or DataFrame of "
                           f"columns and read them as cur.FIELD", span=span)

def _attributes(node: object) -> list[object]:
    """The node's field values, tuples flattened (a fold's updates, combine's operands)."""
    out: list[object] = []
    for f in fields(node):  # type: ignore[arg-type]
        value = getattr(node, f.name)
        out.extend(value if isinstance(value, tuple) else (value,))
    return out

