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
        super().__init__(self._render())

    def _render(self) -> str:
        lines = self.text.splitlines() or [""]
        src = lines[self.line - 1] if 0 < self.line <= len(lines) else ""
        caret = " " * max(self.column - 1, 0) + "^"
        return f"{self.message} at line {self.line}, column {self.column}\n  {src}\n  {caret}"


class TermSyntaxError(SourceError):
    """A term (``TERM`` in ../shared/API.md) that does not parse."""


class DTError(ValueError):
    """An invalid data transducer; the message names the offending part."""


class PreconditionError(ValueError):
    """A construction of §5.2 applied outside its preconditions."""


class EvaluationError(ValueError):
    """An event that a term cannot read (e.g. ``cur.x`` on an event without field x)."""
