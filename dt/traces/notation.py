"""Dependences written as text: for the command line and for configuration files.

Grammar (names are field or header names: letters, digits, ``_``, ``.``, ``-``,
or any text in single or double quotes)::

    dependence := "ordered" | "unordered" | "by_key" "(" name ("," name)* ")" | schema
    schema     := "Bag" "(" [names] ")" | "Seq" "(" names ")"
                | "Sync" "(" names "," schema ")" | "PartitionBy" "(" names "," schema ")"
                | "Par" "(" schema ("," schema)+ ")"
    names      := name | "[" name ("," name)* "]"

A schema with more than one header needs ``header=``: which field of an item
holds its header's name. Errors carry the column and a caret.

>>> parse_dependence("Sync(EOD, PartitionBy(taxi, Seq(ride)))", header="kind").schema
Sync(EOD, PartitionBy(taxi, Seq(ride)))
>>> parse_dependence("by_key(user, [day])")
Traceback (most recent call last):
  ...
dt.traces.notation.DependenceSyntaxError: expected a name at line 1, column 14
  by_key(user, [day])
               ^
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, NoReturn

from ..errors import PreconditionError, SourceError
from .dependence import Typed, by_key, ordered, typed, unordered
from .schema import Bag, Par, PartitionBy, Schema, Seq, Sync

_TOKEN = re.compile(r"\s*(?:(?P<name>[A-Za-z0-9_.\-]+)|'(?P<single>[^']*)'|\"(?P<double>[^\"]*)\""
                    r"|(?P<punct>[()\[\],]))")


class DependenceSyntaxError(SourceError):
    """Dependence text that does not parse, or a schema in it that is not well-formed."""


class _Reader:
    """Tokens of one text, read left to right; errors point at the current token."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens: list[tuple[str, str, int]] = []  # (kind, text, offset)
        offset = 0
        while offset < len(text):
            match = _TOKEN.match(text, offset)
            if match is None:
                if not text[offset:].strip():
                    break
                start = offset + len(text[offset:]) - len(text[offset:].lstrip())
                self.fail(f"unexpected {text[start]!r}", start)
            kind = "punct" if match.group("punct") else "name"
            value = next(v for v in match.groups() if v is not None)
            self.tokens.append((kind, value, match.start(match.lastgroup)))
            offset = match.end()
        self.at = 0

    def fail(self, message: str, offset: int | None = None) -> NoReturn:
        if offset is None:
            offset = self.tokens[self.at][2] if self.at < len(self.tokens) else len(self.text)
        raise DependenceSyntaxError(message, self.text, 1, offset + 1)

    def peek(self) -> str | None:
        return self.tokens[self.at][1] if self.at < len(self.tokens) else None

    def punct(self, symbol: str) -> None:
        if self.at >= len(self.tokens) or self.tokens[self.at][:2] != ("punct", symbol):
            self.fail(f"expected {symbol!r}")
        self.at += 1

    def name(self) -> str:
        if self.at >= len(self.tokens) or self.tokens[self.at][0] != "name":
            self.fail("expected a name")
        self.at += 1
        return self.tokens[self.at - 1][1]

    def name_list(self, close: str) -> list[str]:
        """``name ("," name)* close``."""
        found = [self.name()]
        while self.peek() == ",":
            self.punct(",")
            found.append(self.name())
        self.punct(close)
        return found

    def names(self) -> list[str]:
        if self.peek() != "[":
            return [self.name()]
        self.punct("[")
        return self.name_list("]")


def _schema(reader: _Reader) -> Schema:
    start = reader.at
    word = reader.name()
    reader.punct("(")
    try:
        schema = _node(reader, word, start)
    except PreconditionError as error:
        reader.fail(str(error), reader.tokens[start][2])
    reader.punct(")")
    return schema


def _node(reader: _Reader, word: str, start: int) -> Schema:
    if word == "Bag":
        return Bag(reader.names() if reader.peek() != ")" else ())
    if word == "Seq":
        return Seq(reader.names())
    if word in ("Sync", "PartitionBy"):
        names = reader.names()
        reader.punct(",")
        return (Sync if word == "Sync" else PartitionBy)(names, _schema(reader))
    if word == "Par":
        parts = [_schema(reader)]
        while reader.peek() == ",":
            reader.punct(",")
            parts.append(_schema(reader))
        return Par(*parts)
    reader.at = start
    reader.fail(f"unknown schema {word!r} (Bag, Seq, Sync, PartitionBy, Par)")


def parse_dependence(text: str, header: str | Callable[[Any], str] | None = None) -> Typed:
    """The dependence that ``text`` names (see the module docstring)."""
    reader = _Reader(text)
    word = reader.peek()
    if word in ("ordered", "unordered") and len(reader.tokens) == 1:
        return ordered() if word == "ordered" else unordered()
    if word == "by_key":
        reader.name()
        reader.punct("(")
        dependence = by_key(*reader.name_list(")"))
    elif word is None:
        reader.fail("expected a dependence: ordered, unordered, by_key(...) or a schema")
    else:
        schema = _schema(reader)
        try:
            dependence = typed(schema, header)
        except PreconditionError as error:
            reader.fail(str(error), 0)
    if reader.at < len(reader.tokens):
        reader.fail("unexpected text after the dependence")
    return dependence
