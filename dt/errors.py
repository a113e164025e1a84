"""Errors of the ``dt`` package.

Every error is a ``ValueError`` so that callers can catch bad input in one place.
Errors about text (a term) carry their location and render a caret under it;
errors about a DT name the offending transition.
"""

from __future__ import annotations

__all__ = [
    "DTError",
    "EvaluationError",
    "PreconditionError",
    "SourceError",
    "TermSyntaxError",
    "render_location",
]


class SourceError(ValueError):
    """An error located in source text: message, line, column and a caret.

    ``line`` and ``column`` are 1-based. ``str(err)`` reads::

        unexpected ')' at line 1, column 5
          i + )
              ^
    """

    def __init__(self, message: str, text: str, line: int, column: int) -> None:
        self.message = message
        self.text = text
        self.line = line
        self.column = column
        super().__init__(render_location(message, text, line, column))


def render_location(message: str, text: str, line: int, column: int) -> str:
    """``message at line L, column C`` followed by the source line and a caret under C."""
    # Split on "\n" only, as lark and json count lines: splitlines() also breaks at
    # \f, \v, \r, \x1c-\x1e, \x85, \u2028 and would show the wrong source line.
    lines = text.split("\n")
    src = lines[line - 1].rstrip("\r") if 0 < line <= len(lines) else ""
    caret = " " * max(column - 1, 0) + "^"
    return f"{message} at line {line}, column {column}\n  {src}\n  {caret}"


class TermSyntaxError(SourceError):
    """A term (``TERM`` in docs/API.md) that does not parse."""


class DTError(ValueError):
    """An invalid data transducer; the message names the offending part."""


class PreconditionError(ValueError):
    """A construction of §5.2 applied outside its preconditions."""


class EvaluationError(ValueError):
    """An event that a term cannot read (e.g. ``cur.x`` on an event without field x)."""
