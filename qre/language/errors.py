"""Errors in query text: :class:`QreSyntaxError` and :class:`QreTypeError`.

Both are ``ValueError`` subclasses (API.md). When the query came from text,
the message shows line, column and a caret under the offending part::

    combine needs equal rates: a and a·b at line 1, column 1
      combine(atom(a, cur), split(atom(a, cur), atom(b, cur), +), +)
      ^

A query built in code has no text; its errors carry the message alone.
"""

from __future__ import annotations

from dt.errors import render_location

from .ast import Span

__all__ = ["QreError", "QreSyntaxError", "QreTypeError"]


class QreError(ValueError):
    """A bad query. ``line``/``column`` are 1-based, or None without source text."""

    def __init__(self, message: str, text: str | None = None, span: Span | None = None) -> None:
        self.message = message
        self.text = text
        self.span = span
        self.line = span.line if span else None
        self.column = span.column if span else None
        if text is not None and span is not None:
            super().__init__(render_location(message, text, span.line, span.column))
        else:
            super().__init__(message)

    def located(self, text: str) -> QreError:
        """The same error rendered against ``text`` (when it was raised without it)."""
        if self.text is not None or self.span is None:
            return self
        return type(self)(self.message, text, self.span)


class QreSyntaxError(QreError):
    """Query text that does not parse: what was found and what was expected."""


class QreTypeError(QreError):
    """A query that parses but breaks a typing rule of §5.3.1 (e.g. unequal rates)."""
