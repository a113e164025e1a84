"""Match patterns: the intermediate form of complex event recognition with match output.

Pipeline position: the language's ``match(...)`` (:mod:`qre.language.match_query`) → **a
:class:`MatchQuery`** → the position automaton (:mod:`dt.cer.automaton`) → the match
kernel (:mod:`codegen.cer`). The brute-force enumerator (:mod:`dt.cer.oracle`) reads this
form directly: it is the meaning, and the tests' oracle.

Events. A key's events are numbered 0, 1, … in processing order; event i has a time
t_i (whole δ, non-decreasing) and satisfies some of the query's *conditions* — numbered
predicates on one event (a tag, a set of tags, a derived tag), given to every engine
as a boolean matrix ``sat[i, c]``.

Patterns (frozen nodes):

* :class:`Var` — one event satisfying condition ``cond``, bound to the variable
  ``name`` (several nodes may share a name: ``MEASURES`` read them together);
* :class:`Seq` — the parts one after the other; each :class:`Junction` between two
  parts says how the events on either side relate (below);
* :class:`Alt` — one of the parts;
* :class:`Repeat` — ``lo`` to ``hi`` (``None``: unbounded) non-empty iterations of the
  body, the ``loop`` junction between two iterations (a nullable body makes the count
  a bound only: its empty iterations are not counted); ``greedy`` (below);
* :class:`Within` — a match of the body whose last event is less than ``duration`` δ
  after its first (``within`` on a sub-pattern);
* :class:`Gap` — a match of the body whose consecutive events are less than
  ``duration`` δ apart.

A match is non-empty. Its *token stream* is its events in order with *junction
markers* between them, built from a parse: a non-empty ``Seq`` gives its parts' tokens
with its junction between every two consecutive parts (an empty part included: its
markers on both sides are kept), a ``Repeat`` its iterations' with ``loop`` between
them; an empty parse gives no tokens. Between two consecutive events x (event i) and
y (event j, bound to :class:`Var` v), the markers crossed say:

* contiguity — that of the *last* marker crossed (the junction entering y's part, as a
  Flink stage's contiguity): ``STRICT`` j = i + 1; ``NEXT`` no event strictly between i
  and j satisfies v's condition (skip-till-next-match: y is the first event after x
  that can play v); ``ANY`` nothing (skip-till-any-match);
* forbidden conditions — the union of every crossed marker's ``forbid``: no event
  strictly between i and j satisfies one (``seq(a, not(c), b)``).

* excluded conditions — the union of every crossed marker's ``exclude``: y satisfies
  none of them (the greedy marker, below).

A **greedy** ``Repeat`` (Flink CEP's ``greedy()``, SQL's ``B+`` as Flink runs it) takes
every event it can: the event right after an instance of it must not be one that could
start another iteration. Its parse leaves an *exclusion marker* after its tokens — when
it may iterate again (fewer than ``hi`` non-empty iterations), and also when it has
none (an empty parse: only that marker) — whose ``exclude`` is the conditions of the
events the body can start with. An exclusion marker has no contiguity (the run's is
its last junction's) and no forbid; an empty parse of a ``Seq``, ``Within`` or
``Gap`` keeps its parts' exclusion markers (as one), while a ``Repeat`` with no
iteration has none of its body's. A greedy ``Repeat``'s body is not nullable, and no
parse may end with it (a greedy repetition that can end a match — trailing parts all
empty — is refused, as Flink refuses a greedy last variable: nothing after it shows it
took all it could). Without ``greedy`` a repetition is *reluctant* in Flink's sense: every
number of iterations gives its own match (SQL's ``B+?``; under a skip policy the first
emitted per start is the shortest, SQL's reluctant match).

A parse *satisfies* the pattern when every such pair, every ``Within`` instance and
every ``Gap`` instance hold. A **match** is the events' numbers with, per event, its
*occurrence*: the :class:`Var` node (its path in the tree) and, for each enclosing
``Repeat``, the iteration's copy — ``min(iteration, hi)`` when bounded, else
``min(iteration, max(lo, 1))`` (iterations up to the lower bound are distinct, the rest
are one). Two parses giving the same match are one match (``plus(plus(a))`` reads "a a"
once).

:class:`MatchQuery` adds what happens across matches, in *emission order* (below; without
``ending``: by the event that completes them, their last, then their first event, their
events' numbers, their variables' names). ``skip`` (the after-match skip policies of SQL's
``MATCH_RECOGNIZE`` and Flink CEP) discards, once a match m' is kept, every later match
m in that order whose first event lies in a range given by m' (s', e' its first and
last event numbers):

* ``NO_SKIP`` — none: every match is kept;
* ``TO_NEXT`` — first(m) = s';
* ``PAST_LAST`` — s' ≤ first(m) ≤ e';
* ``TO_FIRST`` v — s' ≤ first(m) < the first event of v in m' (``TO_NEXT`` if v has none);
* ``TO_LAST`` v — s' ≤ first(m) < the last event of v in m' (``TO_NEXT`` if v has none).

``consume`` also discards every later match that shares an event with a kept one
(SASE's consumption of events). ``within`` bounds the whole pattern like
:class:`Within`; then ``ending`` names conditions that must not follow a match
(a negation at its end, Flink's ``notFollowedBy`` last): no event after the match's last
and before its first + ``within`` satisfies one, so the match is complete once time
reaches first + ``within``: it is emitted at the first event at that time or later,
before the matches that event completes (or at the end of the input, event number n:
:mod:`dt.cer.oracle` takes the input as complete).
A :class:`Match` records the event it is emitted at; the emission order sorts by that
event, then matches released by time before those the event completes, then first
event, events' numbers, variables' names.

``timeouts`` (with ``within``) also reports the partial matches that time out —
Flink's timeout side output: a partial match (a non-empty prefix of a match's events
with their occurrences, not itself a match) times out at the time τ a time bound
stops it — it could go on just before τ and not at τ, the events before τ being the
same (an event right after them could extend it at τ − δ, none at τ): the query's
``within`` after its first event, a ``Gap`` after its last, an inner ``Within`` after
the first event of its instance; τ is at most its first event's time + ``within``. It
is emitted at the first event at τ or later (n at the end), after the matches released
there by time and before those that event completes, unless a kept match emitted
before it discarded its start or consumed one of its events
(:func:`dt.cer.oracle.enumerate_timeouts`). A partial match that an event stops
(contiguity, a ``not``) does not time out.

Left out, with reasons in docs/API.md: conditions reading earlier events of the match
(Flink's iterative conditions, ``MATCH_RECOGNIZE``'s ``PREV``/``LAST`` in ``DEFINE``)
— they would make partial matches with equal events unequal, which the shared match
graph relies on.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import Enum


@dataclass(frozen=True, slots=True, order=True)
class Match:
    """One match: its events' numbers in order, the variable each is bound to, and the
    event it is emitted at (its last, or later for a negation at its end; n: the end);
    ``stamp``, for a timed-out partial match, the time it timed out at."""

    emitted: int
    events: tuple[int, ...]
    names: tuple[str, ...]
    stamp: int | None = None


class Contiguity(Enum):
    """How an event relates to the one before it in a match (see the module docstring)."""

    STRICT = "strict"
    NEXT = "next"
    ANY = "any"


@dataclass(frozen=True, slots=True)
class Junction:
    """Between two parts of a :class:`Seq` or two iterations of a :class:`Repeat`."""

    contiguity: Contiguity = Contiguity.ANY
    forbid: frozenset[int] = frozenset()


@dataclass(frozen=True, slots=True)
class Var:
    """One event satisfying condition ``cond``, bound to variable ``name``."""

    name: str
    cond: int


@dataclass(frozen=True, slots=True)
class Seq:
    """``parts`` in order, ``junctions[i]`` between parts i and i + 1."""

    parts: tuple[Pattern, ...]
    junctions: tuple[Junction, ...]

    def __post_init__(self) -> None:
        if len(self.parts) < 2 or len(self.junctions) != len(self.parts) - 1:
            raise ValueError(f"a Seq has at least two parts and one junction between two: "
                             f"{len(self.parts)} parts, {len(self.junctions)} junctions")


@dataclass(frozen=True, slots=True)
class Alt:
    """One of ``parts``."""

    parts: tuple[Pattern, ...]

    def __post_init__(self) -> None:
        if len(self.parts) < 2:
            raise ValueError("an Alt has at least two parts")


@dataclass(frozen=True, slots=True)
class Repeat:
    """``lo`` to ``hi`` iterations of ``body`` (``hi`` None: unbounded); ``greedy``: the
    event after it cannot start another iteration (see the module docstring)."""

    body: Pattern
    lo: int
    hi: int | None
    loop: Junction = field(default_factory=Junction)
    greedy: bool = False

    def __post_init__(self) -> None:
        if self.lo < 0 or (self.hi is not None and (self.hi < max(self.lo, 1))):
            raise ValueError(f"times({self.lo}, {self.hi}): need 0 ≤ lo ≤ hi and hi ≥ 1")
        if self.greedy and nullable(self.body):
            raise ValueError("a greedy repetition's body matches the empty sequence: which "
                             "events could start another iteration is then not one event's "
                             "condition")
        if self.greedy and self.hi == self.lo:
            raise ValueError(f"greedy times({self.lo}, {self.hi}): a fixed count has "
                             "nothing to be greedy about")

    @property
    def exclude(self) -> frozenset[int]:
        """The conditions of the events an iteration can start with (what a greedy
        repetition's exclusion marker excludes)."""
        return starts(self.body)


@dataclass(frozen=True, slots=True)
class Within:
    """A match of ``body`` whose last event is less than ``duration`` δ after its first."""

    body: Pattern
    duration: int

    def __post_init__(self) -> None:
        if self.duration < 1:
            raise ValueError(f"within: the duration is at least one δ, not {self.duration}")


@dataclass(frozen=True, slots=True)
class Gap:
    """A match of ``body`` whose consecutive events are less than ``duration`` δ apart."""

    body: Pattern
    duration: int

    def __post_init__(self) -> None:
        if self.duration < 1:
            raise ValueError(f"gap: the duration is at least one δ, not {self.duration}")


Pattern = Var | Seq | Alt | Repeat | Within | Gap


class SkipKind(Enum):
    """After-match skip policies (see the module docstring)."""

    NO_SKIP = "no_skip"
    TO_NEXT = "to_next"
    PAST_LAST = "past_last"
    TO_FIRST = "to_first"
    TO_LAST = "to_last"


@dataclass(frozen=True, slots=True)
class Skip:
    """An after-match skip policy; ``var`` names the variable of ``TO_FIRST``/``TO_LAST``."""

    kind: SkipKind = SkipKind.NO_SKIP
    var: str | None = None

    def __post_init__(self) -> None:
        if (self.var is not None) != (self.kind in (SkipKind.TO_FIRST, SkipKind.TO_LAST)):
            raise ValueError(f"skip {self.kind.value} {'takes' if self.var is None else 'takes no'}"
                             " variable")


@dataclass(frozen=True, slots=True)
class MatchQuery:
    """A pattern and what happens across its matches (see the module docstring)."""

    pattern: Pattern
    skip: Skip = field(default_factory=Skip)
    consume: bool = False
    within: int | None = None
    ending: frozenset[int] = frozenset()
    timeouts: bool = False

    def __post_init__(self) -> None:
        if self.within is not None and self.within < 1:
            raise ValueError(f"within: the duration is at least one δ, not {self.within}")
        if self.ending and self.within is None:
            raise ValueError("a negation at the end of a pattern needs within: nothing else "
                             "says how long to wait for the absent event")
        if self.timeouts and self.within is None:
            raise ValueError("timeouts need the query's within: it bounds how long a partial "
                             "match may wait")
        if ends_greedy(self.pattern):
            raise ValueError("a greedy repetition can end a match: nothing after it shows it "
                             "took every event it could (Flink refuses a greedy last "
                             "variable too); drop greedy — every length is then a match — or "
                             "add what must follow it")
        if self.skip.var is not None and self.skip.var not in variables(self.pattern):
            raise ValueError(f"skip {self.skip.kind.value} {self.skip.var}: the pattern has "
                             f"no variable {self.skip.var}")

    @property
    def conditions(self) -> frozenset[int]:
        """Every condition the query reads."""
        return frozenset(c for n in walk(self.pattern) for c in _node_conditions(n)) | self.ending


def walk(p: Pattern) -> Iterator[Pattern]:
    """``p`` and its descendants, in document order."""
    yield p
    for child in children(p):
        yield from walk(child)


def children(p: Pattern) -> tuple[Pattern, ...]:
    """The direct sub-patterns of ``p``."""
    if isinstance(p, Seq | Alt):
        return p.parts
    if isinstance(p, Repeat | Within | Gap):
        return (p.body,)
    return ()


def variables(p: Pattern) -> list[str]:
    """The variables' names, in order of first appearance."""
    out: list[str] = []
    for n in walk(p):
        if isinstance(n, Var) and n.name not in out:
            out.append(n.name)
    return out


def nullable(p: Pattern) -> bool:
    """Whether ``p`` matches the empty sequence."""
    if isinstance(p, Var):
        return False
    if isinstance(p, Seq):
        return all(nullable(c) for c in p.parts)
    if isinstance(p, Alt):
        return any(nullable(c) for c in p.parts)
    if isinstance(p, Repeat):
        return p.lo == 0 or nullable(p.body)
    return nullable(p.body)


def starts(p: Pattern) -> frozenset[int]:
    """The conditions of the events a non-empty match of ``p`` can start with."""
    if isinstance(p, Var):
        return frozenset((p.cond,))
    if isinstance(p, Seq):
        out: frozenset[int] = frozenset()
        for part in p.parts:
            out |= starts(part)
            if not nullable(part):
                break
        return out
    if isinstance(p, Alt):
        return frozenset(c for part in p.parts for c in starts(part))
    return starts(p.body)


def ends_greedy(p: Pattern) -> bool:
    """Whether some parse of ``p`` ends with a greedy repetition (followed only by empty
    parts), which :class:`MatchQuery` refuses."""
    if isinstance(p, Var):
        return False
    if isinstance(p, Seq):
        for part in reversed(p.parts):
            if ends_greedy(part):
                return True
            if not nullable(part):
                return False
        return False
    if isinstance(p, Alt):
        return any(ends_greedy(part) for part in p.parts)
    if isinstance(p, Repeat) and p.greedy:
        return True
    return ends_greedy(p.body)


def _node_conditions(n: Pattern) -> frozenset[int]:
    if isinstance(n, Var):
        return frozenset((n.cond,))
    if isinstance(n, Seq):
        return frozenset(c for j in n.junctions for c in j.forbid)
    if isinstance(n, Repeat):
        return n.loop.forbid
    return frozenset()
