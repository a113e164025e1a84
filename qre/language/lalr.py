"""The LALR parser of ``grammar.lark`` and its errors in the query's words.

Pipeline position: query text → **lark tree** (:func:`lalr_parser`) → AST
(:mod:`qre.language.parser`). A lark error becomes a
:class:`~qre.language.errors.QreSyntaxError` (:func:`syntax_error`): what was
found, what was expected — lark's terminals named as a reader would
(``a query``, ``an operator (...)``) — and where, with a caret.

The LALR tables are built once and kept in qre's disk cache (:func:`lalr_parser`): a
later process loads them in 6 ms instead of building them in 80 ms.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import sys
from copy import copy
from functools import cache
from pathlib import Path

import lark
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from codegen.cache_files import cache_dir, new_temporary, seal, unseal
from dt import terms as _dt_terms
from dt.terms import KEYWORDS as TERM_KEYWORDS

from .ast import Span
from .errors import QreSyntaxError

__all__ = ["KEYWORDS", "lalr_parser", "syntax_error"]

log = logging.getLogger(__name__)

KEYWORDS = frozenset({
    "atom", "eps", "or", "split", "iter", "combine", "prefix_sum", "fill", "fill_with",
    "prev", "hist", "once", "since", "wsince", "let", "alphabet", "aggregate", "period", "tag",
    "matched", "matches", "match", "fold", "join",
}) | TERM_KEYWORDS
"""Words that cannot be a query name, a tag or a lambda parameter."""

_PARSER_OPTIONS = {"parser": "lalr", "lexer": "contextual", "propagate_positions": True,
                   "maybe_placeholders": False, "start": ["start", "query", "term"]}
"""``query`` is a second start rule: an argument of a signal function (``max(q1, q2)``),
parsed as a term first (``NAME(args)`` takes terms), is parsed again as a query;
``term`` a third: the printer asks whether an argument's text reads as a term."""


@cache
def lalr_parser() -> lark.Lark:
    """The LALR parser of ``grammar.lark``, from qre's disk cache if an earlier process
    built it.

    Building takes about 80 ms (lark's LALR analysis), loading about 6 ms: a sixth of the
    fixed cost of ``qre run``. The file's name is a hash of everything the tables depend
    on (both grammars, the options, lark's and Python's versions), so a changed grammar
    never loads old tables; the file is sealed (:mod:`codegen.cache_files`), so a
    damaged one is built again (a warning) rather than loaded.
    """
    terms = Path(_dt_terms.__file__).parent
    grammar = (Path(__file__).parent / "grammar.lark").read_text()
    key = hashlib.sha256("\0".join([
        grammar, (terms / "term.lark").read_text(), repr(sorted(_PARSER_OPTIONS.items())),
        lark.__version__, sys.version]).encode()).hexdigest()
    path = cache_dir() / f"parser_{key}.lark"
    try:
        raw = path.read_bytes()
    except OSError:
        pass  # not built yet (or unreadable): build it
    else:
        try:
            return lark.Lark.load(io.BytesIO(unseal(raw, path.name)))
        except Exception as err:  # anything that fails to load is built again
            log.warning("qre's parser cache %s is damaged (%s: %s); building the parser "
                        "again", path, type(err).__name__, err)
    parser = lark.Lark(grammar, import_paths=[terms], **_PARSER_OPTIONS)
    _save(parser, path)
    return parser


def _save(parser: lark.Lark, path: Path) -> None:
    """Write the parser's tables to ``path`` (sealed, under a temporary name first), or
    log why not: an unwritable cache only costs the next process the build."""
    data = io.BytesIO()
    parser.save(data)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = new_temporary(path)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(seal(data.getvalue()))
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    except OSError as err:
        log.info("cannot cache the parser in %s (%s)", path.parent, err)


def syntax_error(text: str, err: UnexpectedInput) -> QreSyntaxError:
    """A lark error as a QreSyntaxError: what was found, what was expected, where."""
    line = getattr(err, "line", -1) or -1
    column = getattr(err, "column", -1) or -1
    expected = _expected(err)
    at_end = isinstance(err, UnexpectedEOF) or (
        isinstance(err, UnexpectedToken) and err.token.type == "$END")
    if isinstance(err, UnexpectedCharacters):
        what = f"unexpected character {text[err.pos_in_stream]!r}"
    elif at_end:
        what = "unexpected end of query"
        if "LET" in expected and expected >= _QUERY_START:
            what = "the final query is missing (after the let bindings)"
        lines = text.split("\n")  # as the lexer counts lines (see dt.errors.render_location)
        line, column = len(lines), len(lines[-1].rstrip("\r")) + 1
    else:
        assert isinstance(err, UnexpectedToken)
        token = err.token
        what = f"unexpected {str(token)!r}"
        if str(token) in KEYWORDS and token.type != "NAME":
            what = f"unexpected keyword {str(token)!r}"
    previous = _last_value(err)
    if (expected in ({"LPAR"}, {"LPAR", "LSQB"}) and isinstance(previous, lark.Token)
            and previous.type != "NAME" and str(previous) in KEYWORDS):
        what += f" after {str(previous)!r}, a keyword (it cannot be a name)"
    if expected:
        what += f"; expected {_describe(expected)}"
    if line < 1 or column < 1:
        line, column = 1, 1
    return QreSyntaxError(what, text, Span(line, column, line, column))


def _expected(err: UnexpectedInput) -> set[str]:
    """The terminals that could have come where ``err`` happened.

    LALR merges lookaheads, and lark's own sets come from the contextual lexer
    (which folds keywords into NAME) or skip the namespaced term terminals; so
    each candidate is tried on a copy of the parser, as lark's ``accepts`` does.
    """
    fallback = set(getattr(err, "expected", None) or getattr(err, "allowed", None) or ())
    parser = getattr(err, "interactive_parser", None)
    if parser is None:
        return fallback
    try:
        return _accepts(parser)
    except Exception:  # only an error message is at stake: never let it mask the error
        return fallback


def _last_value(err: UnexpectedInput) -> object:
    """The token or tree just before the error (top of the parser's value stack)."""
    try:
        return err.interactive_parser.parser_state.value_stack[-1]  # type: ignore[union-attr]
    except (AttributeError, IndexError):
        return None


def _accepts(parser: lark.parsers.lalr_interactive_parser.InteractiveParser) -> set[str]:
    conf = copy(parser.parser_state.parse_conf)
    conf.callbacks = {}  # no tree building while probing
    terminals = {t.name for t in lalr_parser().terminals} | {"$END"}
    accepted = set()
    for name in parser.choices():
        if name not in terminals:
            continue
        probe = parser.copy(deepcopy_values=False)
        probe.parser_state.parse_conf = conf
        try:
            probe.feed_token(parser.lexer_thread._Token(name, ""))
        except UnexpectedInput:
            continue
        accepted.add(name)
    return accepted


# Terminals that can start a query / a term, and the binary operators after one.
_QUERY_START = frozenset({
    "ATOM", "EPS", "OR", "SPLIT", "ITER", "COMBINE", "PREFIX_SUM", "FILL", "FILL_WITH",
    "PREV", "HIST", "ONCE", "NAME", "LPAR", "BANG",
})
_TERM_START = frozenset({"NUMBER", "TRUE", "FALSE", "INF", "NAN", "CUR", "NAME", "LPAR",
                         "MINUS", "BANG"})
_QUERY_OPERATORS = frozenset({"IFF", "ARROW", "OROR", "AMPAMP", "SINCE", "WSINCE", "CMP",
                              "PLUS", "MINUS", "STAR", "SLASH"})
_TERM_OPERATORS = frozenset({"term__OROR", "term__AMPAMP", "term__CMP_OP", "term__ADD_OP",
                             "term__MUL_OP"})
_GROUPS = [
    (_QUERY_START, "a query"),
    (_TERM_START, "a term"),
    (frozenset({"MINUS", "NUMBER", "INF", "NAN", "TRUE", "FALSE"}),
     "an initial value (a number, inf, -inf, nan, true or false)"),
    (_QUERY_OPERATORS, "an operator (<->, ->, ||, &&, since, wsince, <, <=, >, >=, ==, +, -, "
                       "*, /)"),
    (_TERM_OPERATORS, "a term operator"),
]
_TOKEN_NAMES = {"NAME": "a name", "NUMBER": "a number", "CMP": "a comparison",
                "$END": "end of query", "term__CMP_OP": "a comparison",
                "term__ADD_OP": "'+' or '-'", "term__MUL_OP": "'*', '/' or '%'",
                "BOUND_SEP": "',' or ':' (a bound is [lo, hi])"}


def _describe(expected: set[str]) -> str:
    """Readable names for lark's expected terminals, grouped where a whole class fits."""
    rest = set(expected)
    shown: list[str] = []
    for group, label in _GROUPS:
        if group <= rest:
            shown.append(label)
            rest -= group
    patterns = {t.name: t.pattern for t in lalr_parser().terminals}
    for name in sorted(rest):
        if name in _TOKEN_NAMES:
            shown.append(_TOKEN_NAMES[name])
        elif name in patterns and patterns[name].type == "str":
            shown.append(repr(patterns[name].value))
        else:
            shown.append(name.lower())
    if len(shown) == 1:
        return shown[0]
    if len(shown) > 10:
        shown = [*shown[:10], "…"]
    return "one of: " + ", ".join(shown)
