"""``match(p, options)`` queries: the typed AST → :class:`dt.cer.pattern.MatchQuery`.

Pipeline position: parsed and checked :class:`~qre.language.ast.MatchRows` (a whole
query) → **a match query per time resolution** → the match kernel (:mod:`codegen.cer`),
run by :mod:`qre.runtime.cer.matches`.

A pattern's tag names its variable and its condition: an event satisfies the
condition of tag t when its tag (after derivation: ``tag hot = reading where …``) is t;
condition numbers are alphabet indices, so the kernel's ``sat`` is the events' tag
codes one-hot. Junctions take the contiguity written in brackets (``seq[next](…)``,
``plus[strict](…)``, ``times[any](…)``), else the query's ``strategy``. ``and(p, q)``
is ``or(seq(p, q), seq(q, p))``, ``optional(p)`` ``times(p, 0, 1)``, ``star(p)``
``times(p, 0, inf)``. A ``not(c | d)`` last in the pattern's own ``seq`` is a negation
at its end (it needs the ``within`` option: the wait). Durations (``within``, ``gap``)
are whole δ, rounded up: ⌈D / δ⌉, as ``matched(within(p, D))`` reads them.

Cost: linear in the pattern; the automaton (:mod:`dt.cer.automaton`) is built per δ.
"""

from __future__ import annotations

from collections.abc import Sequence

from dt.cer.pattern import (
    Alt,
    Contiguity,
    Gap,
    Junction,
    MatchQuery,
    Pattern,
    Repeat,
    Seq,
    Skip,
    SkipKind,
    Var,
    Within,
)

from . import ast
from .errors import QreTypeError
from .patterns import pattern_tags, walk_pattern

__all__ = ["check_match_rows", "durations_used", "has_ending", "match_query"]


def check_match_rows(q: ast.MatchRows, alphabet: Sequence[str]) -> None:
    """QreTypeError unless ``q``'s tags are the alphabet's, its skip variable is one of
    its tags, a negation at its end has ``within``, and its pattern meets the IR's
    preconditions (:mod:`dt.cer.pattern`: greedy repetitions)."""
    from dt.windows import TICK

    for tag in pattern_tags(q.pattern):
        if tag not in alphabet or tag == TICK:
            raise QreTypeError(f"pattern tag {tag!r} is not an event tag of the alphabet "
                               f"({', '.join(t for t in alphabet if t != TICK)})", span=q.span)
    if q.skip_var is not None and q.skip_var not in _variables(q.pattern):
        raise QreTypeError(f"skip {q.skip} {q.skip_var}: the pattern has no variable "
                           f"{q.skip_var!r} (its variables are its tags)", span=q.span)
    for measure in q.measures:
        if measure.var not in _variables(q.pattern):
            raise QreTypeError(f"measure {measure.name}: the pattern has no variable "
                               f"{measure.var!r} (its variables are its tags)",
                               span=measure.span)
    if q.timeouts and q.within is None:
        raise QreTypeError("timeouts need the option within D: it bounds how long a partial "
                           "match may wait", span=q.span)
    if has_ending(q.pattern) and q.within is None:
        raise QreTypeError("not(...) at the end of a pattern needs the option within D: how "
                           "long to wait for the absent event", span=q.span)
    match_query(q, alphabet, 1)  # the pattern IR's own preconditions (greedy repetitions)


def durations_used(q: ast.MatchRows) -> bool:
    """Whether ``q`` reads event times (a within or a gap): it needs ``run_timed``."""
    return q.within is not None or any(
        isinstance(n, ast.PatternWithin | ast.PatternGap) for n in walk_pattern(q.pattern))


def match_query(q: ast.MatchRows, alphabet: Sequence[str], delta_ns: int) -> MatchQuery:
    """The match query of ``q`` (checked by :func:`check_match_rows`) for a run whose
    time resolution δ is ``delta_ns`` nanoseconds."""
    codes = {tag: i for i, tag in enumerate(alphabet)}
    strategy = Contiguity(q.strategy)
    body = q.pattern
    ending: frozenset[int] = frozenset()
    if has_ending(body):
        assert isinstance(body, ast.PatternSeq)
        last = body.parts[-1]
        assert isinstance(last, ast.PatternNot)
        ending = frozenset(codes[t] for t in last.tags)
        parts = body.parts[:-1]
        body = parts[0] if len(parts) == 1 else ast.PatternSeq(parts, body.span, body.contiguity)

    def ticks(ns: int) -> int:
        return -(-ns // delta_ns)

    def convert(p: ast.Pattern) -> Pattern:
        if isinstance(p, ast.PatternTag):
            return Var(p.tag, codes[p.tag])
        if isinstance(p, ast.PatternSeq):
            return _seq(p, convert, codes, strategy)
        if isinstance(p, ast.PatternOr):
            return Alt((convert(p.left), convert(p.right)))
        if isinstance(p, ast.PatternAnd):
            left, right = convert(p.left), convert(p.right)
            both = (Junction(strategy),)
            return Alt((Seq((left, right), both), Seq((right, left), both)))
        if isinstance(p, ast.PatternPlus | ast.PatternTimes):
            lo, hi = (1, None) if isinstance(p, ast.PatternPlus) else (p.lo, p.hi)
            body = convert(p.body)
            try:
                return Repeat(body, lo, hi, Junction(_contiguity(p, strategy)), p.greedy)
            except ValueError as err:  # a greedy repetition of an empty body, or fixed count
                raise QreTypeError(str(err), span=p.span) from None
        if isinstance(p, ast.PatternGap):
            return Gap(convert(p.body), ticks(p.duration))
        assert isinstance(p, ast.PatternWithin), f"not a pattern: {p!r}"
        return Within(convert(p.body), ticks(p.duration))

    skip = Skip(SkipKind(q.skip), q.skip_var)
    within = None if q.within is None else ticks(q.within)
    pattern = convert(body)
    try:
        return MatchQuery(pattern, skip, q.consume, within, ending, q.timeouts)
    except ValueError as err:  # a greedy repetition that can end a match
        raise QreTypeError(str(err), span=q.span) from None


def _seq(p: ast.PatternSeq, convert, codes: dict[str, int], strategy: Contiguity) -> Pattern:
    """The parts, each junction with the ``not`` tags written before the next part."""
    parts: list[Pattern] = []
    junctions: list[Junction] = []
    forbid: set[int] = set()
    for part in p.parts:
        if isinstance(part, ast.PatternNot):
            forbid |= {codes[t] for t in part.tags}
            continue
        if parts:
            junctions.append(Junction(_contiguity(p, strategy), frozenset(forbid)))
        parts.append(convert(part))
        forbid = set()
    return parts[0] if len(parts) == 1 else Seq(tuple(parts), tuple(junctions))


def _contiguity(p: ast.PatternSeq | ast.PatternPlus | ast.PatternTimes,
                strategy: Contiguity) -> Contiguity:
    return strategy if p.contiguity is None else Contiguity(p.contiguity)


def has_ending(p: ast.Pattern) -> bool:
    """Whether ``p`` ends in a negation (``seq(..., not(c))``)."""
    return isinstance(p, ast.PatternSeq) and isinstance(p.parts[-1], ast.PatternNot)


def _variables(p: ast.Pattern) -> set[str]:
    return {n.tag for n in walk_pattern(p) if isinstance(n, ast.PatternTag)}
