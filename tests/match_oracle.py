"""Brute-force enumeration of CER pattern matches (issue 7, point 5): every assignment of
events to a pattern's tags, straight from the definitions in qre/language/patterns.py, with none
of its automaton. For short streams only (the number of matches grows fast).
"""

from __future__ import annotations

from collections.abc import Sequence

from qre.language import ast

Match = tuple[int, int]
"""(position of the first event, position of the last event) of one match."""


def matches(p: ast.Pattern, tags: Sequence[str], times: Sequence[int],
            unit_ns: int = 10**9) -> list[Match]:
    """Every match of ``p`` (with multiplicity) over events with these tags and times
    (``times`` in units of ``unit_ns`` nanoseconds; a within's duration is in ns)."""
    if isinstance(p, ast.PatternTag):
        return [(i, i) for i, t in enumerate(tags) if t == p.tag]
    if isinstance(p, ast.PatternOr):
        return matches(p.left, tags, times, unit_ns) + matches(p.right, tags, times, unit_ns)
    if isinstance(p, ast.PatternAnd):
        both = ast.PatternOr(ast.PatternSeq((p.left, p.right)), ast.PatternSeq((p.right, p.left)))
        return matches(both, tags, times, unit_ns)
    if isinstance(p, ast.PatternWithin):
        limit = p.duration
        return [(f, last) for f, last in matches(p.body, tags, times, unit_ns)
                if (times[last] - times[f]) * unit_ns < limit]
    if isinstance(p, ast.PatternPlus):
        one = matches(p.body, tags, times, unit_ns)
        out, layer = list(one), list(one)
        while layer:
            layer = _then(layer, one, tags, set())
            out += layer
        return out
    assert isinstance(p, ast.PatternSeq)
    first, *rest = p.parts
    assert isinstance(first, ast.Pattern)  # type: ignore[arg-type]
    acc = matches(first, tags, times, unit_ns)
    forbidden: set[str] = set()
    for part in rest:
        if isinstance(part, ast.PatternNot):
            forbidden |= set(part.tags)
            continue
        acc = _then(acc, matches(part, tags, times, unit_ns), tags, forbidden)
        forbidden = set()
    return acc


def _then(left: list[Match], right: list[Match], tags: Sequence[str],
          forbidden: set[str]) -> list[Match]:
    """Pairs with the left match ending before the right one starts, no forbidden tag
    strictly between."""
    return [(f1, l2) for f1, l1 in left for f2, l2 in right
            if l1 < f2 and not any(tags[k] in forbidden for k in range(l1 + 1, f2))]


def ending_counts(p: ast.Pattern, tags: Sequence[str], times: Sequence[int],
                  unit_ns: int = 10**9) -> list[int]:
    """The number of matches ending at each event (``times`` as in :func:`matches`)."""
    counts = [0] * len(tags)
    for _, last in matches(p, tags, times, unit_ns):
        counts[last] += 1
    return counts
