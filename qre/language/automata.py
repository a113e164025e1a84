"""Regular rates and finite automata over tags, for QRE-Past typing (seed 003, §5.3.1).

Every QRE-Past query has a *rate*, a regular expression over the tags Σ
(Figure 26): ``atom(σ, t)`` has rate σ, ``or`` the union, ``split`` the
concatenation, ``iter`` the star, ``combine`` the intersection, prefix sums
and temporal queries Σ*. The typing rules compare rates (``combine`` needs
equal rates, ``prefix-sum`` L(α) = Σ*, comparisons L(β) = Σ*). This module
decides such questions with automata written here, and no dependency:

* :class:`Regex` — frozen dataclasses :class:`Empty` (∅), :class:`Epsilon`
  (ε), :class:`Sym`, :class:`Alt` (|), :class:`Cat` (·), :class:`Star` (*)
  and :class:`And` (&, intersection); the smart constructors :func:`alt`,
  :func:`cat`, :func:`star`, :func:`intersect` simplify the obvious cases so
  that printed rates stay short; :func:`show` prints them (Σ and Σ* when the
  alphabet is known), :func:`parse_regex` reads that syntax back.
* :class:`DFA` — complete deterministic automata; :func:`to_dfa` (Thompson
  NFA + subset construction; an ``And`` node becomes the product of the
  DFAs of its operands, embedded in the NFA), :func:`minimize` (Moore's
  partition refinement, then a canonical numbering: two minimal DFAs of the
  same language over the same alphabet order are *equal*), :func:`product`,
  :func:`complement`, and :func:`to_regex` (state elimination) back.
* Decisions — :func:`is_empty`, :func:`is_universal`, :func:`shortest_word`,
  :func:`equivalent` (a shortest separating word or None), :func:`includes`,
  :func:`shortest_difference`, :func:`explain_difference` (for type errors).
  They accept a regex or a DFA wherever a language is expected
  (:func:`as_dfa`); a regex needs the alphabet, a DFA carries its own.
* :func:`dt_language` — L(A) and L̄(A) of a data transducer (§5.1, after
  Theorem 5.2), by breadth-first search over the configurations of its unit
  projection (:mod:`dt.projection`).

Syntax of printed rates, loosest first: ``r & s`` (intersection, spaced),
``r|s``, ``r·s``, ``r*``; parentheses only where needed; ``∅``, ``ε``, tags
as identifiers, ``Σ`` for "any tag" and ``Σ*`` for all strings. Words are
tuples of tags, printed ``a·b·a`` (ε when empty) by :func:`format_word`.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

from dt.graphs import co_reachable
from dt.model import DT
from dt.projection import unit_evaluator

__all__ = [
    "DFA",
    "Alt",
    "And",
    "Cat",
    "Empty",
    "Epsilon",
    "Regex",
    "Star",
    "StateLimitError",
    "Sym",
    "all_strings",
    "alt",
    "any_tag",
    "as_dfa",
    "cat",
    "complement",
    "dt_language",
    "equivalent",
    "explain_difference",
    "format_word",
    "includes",
    "intersect",
    "is_empty",
    "is_universal",
    "minimize",
    "parse_regex",
    "product",
    "shortest_difference",
    "shortest_word",
    "show",
    "star",
    "tags_of",
    "to_dfa",
    "to_regex",
    "word",
]

Word = tuple[str, ...]


# --------------------------------------------------------------------------- regexes


class _Node:
    """Base of the regex nodes: ``str(r)`` is :func:`show` without an alphabet."""

    __slots__ = ()

    def __str__(self) -> str:
        return show(self)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True, repr=False)
class Empty(_Node):
    """∅: the empty language."""

    def __repr__(self) -> str:
        return "Empty()"


@dataclass(frozen=True, slots=True, repr=False)
class Epsilon(_Node):
    """ε: the language of the empty word."""

    def __repr__(self) -> str:
        return "Epsilon()"


@dataclass(frozen=True, slots=True, repr=False)
class Sym(_Node):
    """One tag σ ∈ Σ."""

    tag: str

    def __post_init__(self) -> None:
        # ASCII identifiers, as DT tags are: then ∅, ε and Σ can never be tags.
        if not (isinstance(self.tag, str) and self.tag.isidentifier() and self.tag.isascii()):
            raise ValueError(f"a tag must be an ASCII identifier, not {self.tag!r}")

    def __repr__(self) -> str:
        return f"Sym({self.tag!r})"


@dataclass(frozen=True, slots=True, repr=False)
class Alt(_Node):
    """left | right: union."""

    left: Regex
    right: Regex

    def __repr__(self) -> str:
        return f"Alt({self.left!r}, {self.right!r})"


@dataclass(frozen=True, slots=True, repr=False)
class Cat(_Node):
    """left · right: concatenation."""

    left: Regex
    right: Regex

    def __repr__(self) -> str:
        return f"Cat({self.left!r}, {self.right!r})"


@dataclass(frozen=True, slots=True, repr=False)
class Star(_Node):
    """inner*: Kleene star."""

    inner: Regex

    def __repr__(self) -> str:
        return f"Star({self.inner!r})"


@dataclass(frozen=True, slots=True, repr=False)
class And(_Node):
    """left & right: intersection (the rate of ``combine``, Figure 26)."""

    left: Regex
    right: Regex

    def __repr__(self) -> str:
        return f"And({self.left!r}, {self.right!r})"


Regex = Empty | Epsilon | Sym | Alt | Cat | Star | And
"""A regular expression over tags."""

EMPTY = Empty()
EPSILON = Epsilon()


def _operands(r: Regex, kind: type) -> list[Regex]:
    """The operands of a chain of one associative operator, left to right.

    Iterative: a chain is as long as the query has operands in a row, which lets that
    use a name twice (``split(x, x, +)``) double at every line.
    """
    out: list[Regex] = []
    stack = [r]
    while stack:
        node = stack.pop()
        if isinstance(node, kind):
            stack += [node.right, node.left]  # type: ignore[attr-defined]
        else:
            out.append(node)
    return out


def _fold(kind: type, items: Sequence[Regex]) -> Regex:
    """A chain of ``kind`` over ``items`` (at least one), as a balanced tree: its depth is
    logarithmic, so equality, hashing and printing of long chains do not recurse deeply
    (the operator is associative, and :func:`_operands` reads the chain back in order)."""
    level = list(items)
    while len(level) > 1:
        pairs = [kind(level[k], level[k + 1]) for k in range(0, len(level) - 1, 2)]
        level = pairs + level[len(level) - len(level) % 2:]
    return level[0]


def alt(*rs: Regex) -> Regex:
    """r1 | … | rk, simplified: ∅ operands dropped, repeated operands kept once.

    Chains are flattened and rebuilt (balanced, :func:`_fold`) in first-occurrence order,
    so ``alt(a, alt(b, a))`` is ``a|b``. ``alt()`` is ∅.
    """
    items: list[Regex] = []
    for r in rs:
        for item in _operands(r, Alt):
            if not isinstance(item, Empty) and item not in items:
                items.append(item)
    return _fold(Alt, items) if items else EMPTY


def cat(*rs: Regex) -> Regex:
    """r1 · … · rk, simplified: ∅ absorbs, ε is dropped. ``cat()`` is ε."""
    items: list[Regex] = []
    for r in rs:
        for item in _operands(r, Cat):
            if isinstance(item, Empty):
                return EMPTY
            if not isinstance(item, Epsilon):
                items.append(item)
    return _fold(Cat, items) if items else EPSILON


def star(r: Regex) -> Regex:
    """r*, simplified: ∅* = ε* = ε, (r*)* = r*, (ε|r)* = r*."""
    if isinstance(r, Alt):
        # ε inside a starred alternative adds nothing: (ε|r)* = r*.
        r = alt(*(item for item in _operands(r, Alt) if not isinstance(item, Epsilon)))
    if isinstance(r, Empty | Epsilon):
        return EPSILON
    if isinstance(r, Star):
        return r
    return Star(r)


def intersect(*rs: Regex) -> Regex:
    """r1 & … & rk, simplified: ∅ absorbs, repeated operands kept once.

    ``intersect()`` has no neutral element without an alphabet (Σ*): it is an error.
    """
    if not rs:
        raise ValueError("intersect() needs at least one regular expression")
    items: list[Regex] = []
    for r in rs:
        for item in _operands(r, And):
            if isinstance(item, Empty):
                return EMPTY
            if item not in items:
                items.append(item)
    return _fold(And, items)


def word(tags: Iterable[str]) -> Regex:
    """The regex of one word: its tags concatenated (ε for the empty word)."""
    return cat(*(Sym(t) for t in tags))


def any_tag(alphabet: Iterable[str]) -> Regex:
    """Σ: any one tag, as an :class:`Alt` of :class:`Sym` in alphabet order (∅ if Σ = ∅)."""
    return alt(*(Sym(t) for t in alphabet))


def all_strings(alphabet: Iterable[str]) -> Regex:
    """Σ*: every string of tags."""
    return star(any_tag(alphabet))


def tags_of(r: Regex) -> frozenset[str]:
    """The tags that occur in ``r`` (iteratively: chains may be long)."""
    tags: set[str] = set()
    stack = [r]
    while stack:
        match stack.pop():
            case Sym(tag):
                tags.add(tag)
            case Alt(a, b) | Cat(a, b) | And(a, b):
                stack += [a, b]
            case Star(inner):
                stack.append(inner)
    return frozenset(tags)


# --------------------------------------------------------------------------- printing

# Binding strength: & loosest (it is printed with spaces, so it reads loosest), then |, ·, *.
_AND, _ALT, _CAT, _STAR, _ATOM = 1, 2, 3, 4, 5


def _is_any_tag(r: Regex, alphabet: frozenset[str] | None) -> bool:
    if alphabet is None or len(alphabet) < 2 or not isinstance(r, Alt):
        return False
    items = _operands(r, Alt)
    return (all(isinstance(i, Sym) for i in items) and len(items) == len(alphabet)
            and {i.tag for i in items} == alphabet)  # type: ignore[union-attr]


def _show(r: Regex, alphabet: frozenset[str] | None) -> tuple[str, int]:
    """The text of ``r`` and its binding strength."""
    if _is_any_tag(r, alphabet):
        return "Σ", _ATOM
    match r:
        case Empty():
            return "∅", _ATOM
        case Epsilon():
            return "ε", _ATOM
        case Sym(tag):
            return tag, _ATOM
        case Star(inner):
            return _wrap(inner, _STAR, alphabet) + "*", _STAR
        case Cat():
            return "·".join(_wrap(i, _CAT, alphabet) for i in _operands(r, Cat)), _CAT
        case Alt():
            return "|".join(_wrap(i, _ALT, alphabet) for i in _operands(r, Alt)), _ALT
        case And():
            return " & ".join(_wrap(i, _AND, alphabet) for i in _operands(r, And)), _AND
    raise TypeError(f"not a regular expression: {r!r}")


def _wrap(r: Regex, level: int, alphabet: frozenset[str] | None) -> str:
    # An operand of the same associative operator is flattened by _operands, so
    # anything that binds no tighter than the context gets parentheses.
    text, strength = _show(r, alphabet)
    return text if strength > level else f"({text})"


def show(r: Regex, alphabet: Iterable[str] | None = None) -> str:
    """``r`` as text with minimal parentheses; with the alphabet, Σ for any tag (so Σ*).

    Examples: ``∅``, ``ε``, ``a·b``, ``(a|b)*``, ``a & b``, ``a·Σ*``.
    """
    return _show(r, frozenset(alphabet) if alphabet is not None else None)[0]


def format_word(w: Iterable[str]) -> str:
    """A word in regex syntax: ``a·b·a``, or ``ε`` for the empty word."""
    w = tuple(w)
    return "·".join(w) if w else "ε"


_TOKEN = re.compile(r"\s*(?:([A-Za-z_][A-Za-z0-9_]*)|(.))")


def parse_regex(text: str, alphabet: Iterable[str] | None = None) -> Regex:
    """Read the syntax of :func:`show` back (``.`` is accepted for ``·``).

    ``Σ`` needs the alphabet. The result is built with the smart constructors,
    so ``parse_regex(show(r, Σ), Σ)`` has the language of ``r``.
    """
    tokens = [m.group(1) or m.group(2) for m in _TOKEN.finditer(text) if m.group(0).strip()]
    sigma = tuple(alphabet) if alphabet is not None else None
    pos = 0

    def peek() -> str | None:
        return tokens[pos] if pos < len(tokens) else None

    def take(expected: str | None = None) -> str:
        nonlocal pos
        tok = peek()
        if tok is None or (expected is not None and tok != expected):
            want = f"{expected!r}" if expected else "a regular expression"
            raise ValueError(f"regex {text!r}: expected {want} at token {pos + 1}, "
                             f"found {tok!r}")
        pos += 1
        return tok

    def p_and() -> Regex:
        items = [p_alt()]
        while peek() == "&":
            take()
            items.append(p_alt())
        return intersect(*items)

    def p_alt() -> Regex:
        items = [p_cat()]
        while peek() == "|":
            take()
            items.append(p_cat())
        return alt(*items)

    def p_cat() -> Regex:
        items = [p_star()]
        while peek() in ("·", "."):
            take()
            items.append(p_star())
        return cat(*items)

    def p_star() -> Regex:
        r = p_atom()
        while peek() == "*":
            take()
            r = star(r)
        return r

    def p_atom() -> Regex:
        tok = take()
        if tok == "(":
            r = p_and()
            take(")")
            return r
        if tok == "∅":
            return EMPTY
        if tok == "ε":
            return EPSILON
        if tok == "Σ":
            if sigma is None:
                raise ValueError(f"regex {text!r}: Σ needs the alphabet")
            return any_tag(sigma)
        if tok.isidentifier():
            return Sym(tok)
        raise ValueError(f"regex {text!r}: unexpected {tok!r} at token {pos}")

    r = p_and()
    if peek() is not None:
        raise ValueError(f"regex {text!r}: unexpected {peek()!r} at token {pos + 1}")
    return r


# --------------------------------------------------------------------------- DFAs


@dataclass(frozen=True)
class DFA:
    """A complete DFA: ``delta[state][k]`` is the successor on ``alphabet[k]``.

    States are ``0 … n-1``. Every row has one entry per tag (complete), so the
    complement is just the other accepting set. The alphabet order is the
    order of :func:`shortest_word`'s tie-break.
    """

    alphabet: tuple[str, ...]
    delta: tuple[tuple[int, ...], ...]
    start: int
    accepting: frozenset[int]

    def __post_init__(self) -> None:
        n, k = len(self.delta), len(self.alphabet)
        if len(set(self.alphabet)) != k:
            raise ValueError(f"repeated tag in the alphabet ({', '.join(self.alphabet)})")
        if not 0 <= self.start < n:
            raise ValueError(f"start state {self.start} out of range 0..{n - 1}")
        for s, row in enumerate(self.delta):
            if len(row) != k or not all(0 <= t < n for t in row):
                raise ValueError(f"row {s} of the transition table must have {k} targets "
                                 f"in 0..{n - 1}: {row}")
        if not all(0 <= s < n for s in self.accepting):
            raise ValueError(f"accepting states out of range 0..{n - 1}")

    @property
    def n_states(self) -> int:
        return len(self.delta)

    @cached_property
    def tag_index(self) -> dict[str, int]:
        return {t: k for k, t in enumerate(self.alphabet)}

    def state_after(self, w: Iterable[str]) -> int:
        """The state reached from the start on ``w`` (ValueError on an unknown tag)."""
        s = self.start
        index = self.tag_index
        for t in w:
            if t not in index:
                raise ValueError(f"unknown tag {t!r}; the alphabet is {', '.join(self.alphabet)}")
            s = self.delta[s][index[t]]
        return s

    def accepts(self, w: Iterable[str]) -> bool:
        return self.state_after(w) in self.accepting


def _canonical(d: DFA) -> DFA:
    """The reachable part of ``d``, numbered in breadth-first order (tags in alphabet order)."""
    number = {d.start: 0}
    order = [d.start]
    for s in order:  # order grows while we walk it: a BFS queue
        for t in d.delta[s]:
            if t not in number:
                number[t] = len(order)
                order.append(t)
    delta = tuple(tuple(number[t] for t in d.delta[s]) for s in order)
    accepting = frozenset(number[s] for s in order if s in d.accepting)
    return DFA(d.alphabet, delta, 0, accepting)


def minimize(d: DFA) -> DFA:
    """The minimal complete DFA of L(d), canonically numbered (seed-independent).

    Unreachable states are dropped, then Moore's partition refinement: split
    classes by (class, classes of the successors) until the number of classes
    is stable — at most n rounds of O(n·|Σ|). The quotient is renumbered in
    BFS order, so equal languages give equal (``==``) minimal DFAs over the
    same alphabet tuple.
    """
    d = _canonical(d)
    n = d.n_states
    cls = [1 if s in d.accepting else 0 for s in range(n)]
    count = len(set(cls))
    while True:
        signatures: dict[tuple[int, ...], int] = {}
        new = [signatures.setdefault((cls[s], *(cls[t] for t in d.delta[s])), len(signatures))
               for s in range(n)]
        cls = new
        if len(signatures) == count:
            break
        count = len(signatures)
    rep: dict[int, int] = {}
    for s in range(n):
        rep.setdefault(cls[s], s)
    delta = tuple(tuple(cls[t] for t in d.delta[rep[c]]) for c in range(count))
    accepting = frozenset(cls[s] for s in d.accepting)
    return _canonical(DFA(d.alphabet, delta, cls[d.start], accepting))


# --------------------------------------------------------------------------- regex → DFA


class _NFA:
    """A Thompson NFA under construction: ε-edges and tag edges per state."""

    def __init__(self, alphabet: tuple[str, ...]) -> None:
        self.alphabet = alphabet
        self.index = {t: k for k, t in enumerate(alphabet)}
        self.eps: list[list[int]] = []
        self.edges: list[list[tuple[int, int]]] = []  # (tag index, target)

    def state(self) -> int:
        self.eps.append([])
        self.edges.append([])
        return len(self.eps) - 1

    def fragment(self, r: Regex) -> tuple[int, int]:
        """States (entry, exit) of a fragment for ``r``: words from entry to exit = L(r)."""
        entry, exit_ = self.state(), self.state()
        match r:
            case Empty():
                pass
            case Epsilon():
                self.eps[entry].append(exit_)
            case Sym(tag):
                if tag not in self.index:
                    raise ValueError(f"tag {tag!r} of the regular expression is not in the "
                                     f"alphabet ({', '.join(self.alphabet)})")
                self.edges[entry].append((self.index[tag], exit_))
            case Alt():  # a chain at once: no recursion along it (chains may be long)
                for part in _operands(r, Alt):
                    s, e = self.fragment(part)
                    self.eps[entry].append(s)
                    self.eps[e].append(exit_)
            case Cat():
                last = entry
                for part in _operands(r, Cat):
                    s, e = self.fragment(part)
                    self.eps[last].append(s)
                    last = e
                self.eps[last].append(exit_)
            case Star(inner):
                s, e = self.fragment(inner)
                self.eps[entry] += [s, exit_]
                self.eps[e] += [s, exit_]
            case And(a, b):
                # Intersection is not a Thompson operator: decide it on DFAs and
                # embed the (trimmed) product as a sub-automaton.
                self._embed(product(to_dfa(a, self.alphabet), to_dfa(b, self.alphabet), "and"),
                            entry, exit_)
            case _:
                raise TypeError(f"not a regular expression: {r!r}")
        return entry, exit_

    def _embed(self, d: DFA, entry: int, exit_: int) -> None:
        live = _co_reachable(d)
        if d.start not in live:
            return
        states = {s: self.state() for s in sorted(live)}
        for s, q in states.items():
            for k, t in enumerate(d.delta[s]):
                if t in live:
                    self.edges[q].append((k, states[t]))
            if s in d.accepting:
                self.eps[q].append(exit_)
        self.eps[entry].append(states[d.start])

    def closure(self, states: Iterable[int]) -> frozenset[int]:
        seen = set(states)
        stack = list(seen)
        while stack:
            for t in self.eps[stack.pop()]:
                if t not in seen:
                    seen.add(t)
                    stack.append(t)
        return frozenset(seen)

    def determinize(self, entry: int, exit_: int) -> DFA:
        """Subset construction; the empty set is the (complete DFA's) dead state."""
        start = self.closure([entry])
        number = {start: 0}
        order = [start]
        rows: list[tuple[int, ...]] = []
        for subset in order:
            moves: list[set[int]] = [set() for _ in self.alphabet]
            for s in subset:
                for k, t in self.edges[s]:
                    moves[k].add(t)
            row = []
            for targets in moves:
                nxt = self.closure(targets)
                if nxt not in number:
                    number[nxt] = len(order)
                    order.append(nxt)
                row.append(number[nxt])
            rows.append(tuple(row))
        accepting = frozenset(i for i, subset in enumerate(order) if exit_ in subset)
        return DFA(self.alphabet, tuple(rows), 0, accepting)


def _co_reachable(d: DFA) -> set[int]:
    """States from which an accepting state is reachable."""
    return co_reachable(d.accepting, ((s, t) for s, row in enumerate(d.delta) for t in row))


def to_dfa(r: Regex, alphabet: Iterable[str]) -> DFA:
    """The minimal complete DFA of L(r) over ``alphabet`` (its order is kept).

    Construction: a Thompson NFA (one fragment of two states per node, ε-edges
    for |, ·, *) and the subset construction. ``And`` is the one operator
    Thompson's construction lacks: both operands are compiled to DFAs, their
    product is trimmed and embedded in the NFA as a sub-automaton. The NFA
    has O(|r|) states outside intersections; the subset construction is
    exponential in the worst case, as it must be. The result is minimized.
    ValueError if ``r`` uses a tag outside the alphabet.
    """
    alphabet = tuple(alphabet)
    nfa = _NFA(alphabet)
    entry, exit_ = nfa.fragment(r)
    return minimize(nfa.determinize(entry, exit_))


Language = Regex | DFA
"""A regular language given by a regex (with an alphabet) or a DFA."""


def _reorder(d: DFA, alphabet: tuple[str, ...]) -> DFA:
    if d.alphabet == alphabet:
        return d
    if set(d.alphabet) != set(alphabet):
        raise ValueError(f"alphabets differ: ({', '.join(d.alphabet)}) and "
                         f"({', '.join(alphabet)})")
    cols = [d.tag_index[t] for t in alphabet]
    return DFA(alphabet, tuple(tuple(row[c] for c in cols) for row in d.delta),
               d.start, d.accepting)


def as_dfa(x: Language, alphabet: Iterable[str] | None = None) -> DFA:
    """``x`` as a DFA: a DFA is returned as is (columns reordered to ``alphabet`` if
    given; its tags must be the same set), a regex is compiled with :func:`to_dfa`
    (the alphabet is then required)."""
    if isinstance(x, DFA):
        return _reorder(x, tuple(alphabet)) if alphabet is not None else x
    if not isinstance(x, _Node):
        raise TypeError(f"expected a regular expression or a DFA, not {x!r}")
    if alphabet is None:
        raise ValueError(f"the regular expression {x} needs an alphabet to become a DFA")
    return to_dfa(x, alphabet)


def _alphabet_of(xs: Sequence[Language], alphabet: Iterable[str] | None) -> tuple[str, ...]:
    if alphabet is not None:
        return tuple(alphabet)
    for x in xs:
        if isinstance(x, DFA):
            return x.alphabet
    raise ValueError("an alphabet is needed when no DFA is given")


# --------------------------------------------------------------------------- operations

Op = Literal["and", "or", "diff", "xor"]
_OPS: dict[str, Callable[[bool, bool], bool]] = {
    "and": lambda p, q: p and q,
    "or": lambda p, q: p or q,
    "diff": lambda p, q: p and not q,
    "xor": lambda p, q: p != q,
}


def product(a: Language, b: Language, op: Op, *,
            alphabet: Iterable[str] | None = None) -> DFA:
    """The product DFA for L(a) ∩ L(b) (``"and"``), ∪ (``"or"``), L(a) \\ L(b)
    (``"diff"``) or the symmetric difference (``"xor"``); reachable pairs only.

    The alphabet is ``alphabet``, else the first DFA's; both operands are
    aligned to it (same set of tags required). The result is not minimized.
    """
    if op not in _OPS:
        raise ValueError(f"unknown product operation {op!r}; expected one of {', '.join(_OPS)}")
    sigma = _alphabet_of([a, b], alphabet)
    da, db = as_dfa(a, sigma), as_dfa(b, sigma)
    keep = _OPS[op]
    start = (da.start, db.start)
    number = {start: 0}
    order = [start]
    rows: list[tuple[int, ...]] = []
    for p, q in order:
        row = []
        for k in range(len(sigma)):
            nxt = (da.delta[p][k], db.delta[q][k])
            if nxt not in number:
                number[nxt] = len(order)
                order.append(nxt)
            row.append(number[nxt])
        rows.append(tuple(row))
    accepting = frozenset(i for i, (p, q) in enumerate(order)
                          if keep(p in da.accepting, q in db.accepting))
    return DFA(sigma, tuple(rows), 0, accepting)


def complement(x: Language, alphabet: Iterable[str] | None = None) -> DFA:
    """Σ* \\ L(x) (the DFA is complete, so: swap accepting and rejecting states)."""
    d = as_dfa(x, alphabet)
    return DFA(d.alphabet, d.delta, d.start, frozenset(range(d.n_states)) - d.accepting)


# --------------------------------------------------------------------------- decisions


def shortest_word(x: Language, alphabet: Iterable[str] | None = None) -> Word | None:
    """A shortest word of L(x), the least in alphabet order among those; None if L(x) = ∅.

    BFS from the start with tags tried in alphabet order: the first time a
    state is discovered, its BFS path is its shortest, lexicographically least
    word, and states are discovered in that order too, so the first accepting
    state discovered gives the answer.
    """
    d = as_dfa(x, alphabet)
    parent: dict[int, tuple[int, int] | None] = {d.start: None}
    queue = deque([d.start])
    found = d.start if d.start in d.accepting else None
    while queue and found is None:
        s = queue.popleft()
        for k, t in enumerate(d.delta[s]):
            if t not in parent:
                parent[t] = (s, k)
                if t in d.accepting:
                    found = t
                    break
                queue.append(t)
    if found is None:
        return None
    tags: list[str] = []
    link = parent[found]
    while link is not None:
        s, k = link
        tags.append(d.alphabet[k])
        link = parent[s]
    return tuple(reversed(tags))


def is_empty(x: Language, alphabet: Iterable[str] | None = None) -> bool:
    """L(x) = ∅."""
    return shortest_word(x, alphabet) is None


def is_universal(x: Language, alphabet: Iterable[str] | None = None) -> bool:
    """L(x) = Σ*."""
    return is_empty(complement(x, alphabet))


def equivalent(a: Language, b: Language, alphabet: Iterable[str] | None = None) -> Word | None:
    """None if L(a) = L(b); else a shortest word in exactly one of them (least in
    alphabet order among the shortest)."""
    return shortest_word(product(a, b, "xor", alphabet=alphabet))


def shortest_difference(a: Language, b: Language,
                        alphabet: Iterable[str] | None = None) -> Word | None:
    """A shortest word in L(a) \\ L(b), or None if L(a) ⊆ L(b)."""
    return shortest_word(product(a, b, "diff", alphabet=alphabet))


def includes(a: Language, b: Language, alphabet: Iterable[str] | None = None) -> bool:
    """L(a) ⊇ L(b)."""
    return shortest_difference(b, a, alphabet) is None


def explain_difference(a: Language, b: Language, alphabet: Iterable[str] | None = None,
                       names: tuple[str, str] = ("the first", "the second")) -> str | None:
    """None if L(a) = L(b); else a sentence for a type error, naming a shortest
    separating word and which side has it, e.g. ``"a·a is in the second only"``."""
    w = equivalent(a, b, alphabet)
    if w is None:
        return None
    sigma = _alphabet_of([a, b], alphabet)
    side = names[0] if as_dfa(a, sigma).accepts(w) else names[1]
    return f"{format_word(w)} is in {side} only"


# --------------------------------------------------------------------------- DFA → regex


def to_regex(x: Language, alphabet: Iterable[str] | None = None) -> Regex:
    """A regex for L(x), by state elimination on the trimmed minimal DFA.

    Edge labels are alternations of tags in alphabet order (Σ when they cover
    the alphabet); states are eliminated fewest (in × out) first, which keeps
    the result small on the DFAs of rates. Meant for printing a language that
    was computed as an automaton (for instance L(α) of a compiled query).
    """
    d = minimize(as_dfa(x, alphabet))
    live = _co_reachable(d)
    if d.start not in live:
        return EMPTY
    start, final = -1, -2
    edges: dict[tuple[int, int], Regex] = {}

    def add(p: int, q: int, r: Regex) -> None:
        edges[(p, q)] = alt(edges.get((p, q), EMPTY), r)

    add(start, d.start, EPSILON)
    for s in sorted(live):
        by_target: dict[int, list[str]] = {}
        for k, t in enumerate(d.delta[s]):
            if t in live:
                by_target.setdefault(t, []).append(d.alphabet[k])
        for t, tags in by_target.items():
            add(s, t, any_tag(tags))
        if s in d.accepting:
            add(s, final, EPSILON)
    remaining = set(live)
    while remaining:
        k = min(remaining, key=lambda s: _elimination_cost(edges, s))
        remaining.remove(k)
        loop = star(edges.pop((k, k), EMPTY))
        ins = [(p, r) for (p, q), r in edges.items() if q == k]
        outs = [(q, r) for (p, q), r in edges.items() if p == k]
        for p, _ in ins:
            del edges[(p, k)]
        for q, _ in outs:
            del edges[(k, q)]
        for p, rin in ins:
            for q, rout in outs:
                add(p, q, cat(rin, loop, rout))
    return edges.get((start, final), EMPTY)


def _elimination_cost(edges: dict[tuple[int, int], Regex], k: int) -> tuple[int, int]:
    """(in-degree × out-degree, k): eliminating k creates at most that many edges."""
    ins = sum(1 for (p, q) in edges if q == k and p != k)
    outs = sum(1 for (p, q) in edges if p == k and q != k)
    return ins * outs, k


# --------------------------------------------------------------------------- DT languages


class StateLimitError(ValueError):
    """The unit projection of a DT has more reachable configurations than allowed."""


LanguageKind = Literal["defined", "extended"]


def dt_language(dt: DT, kind: LanguageKind = "extended", *, max_states: int | None = None,
                minimal: bool = True) -> DFA:
    """L(A) (``"defined"``) or L̄(A) (``"extended"``) of a DT, as a DFA over ``dt.alphabet``.

    §5.1, after Theorem 5.2: L(A) is the set of tag strings after which every
    final state is defined, for an all-defined initial vector x ∈ D^I; L̄(A)
    those after which every final state is defined or conflict (not ⊥). The
    paper lets x range over (D ∪ {⊤})^I for L̄; we use the all-defined x, and
    this is no restriction: whether a state is ⊥ never depends on ⋆ versus ⊤
    in the inputs (a transition is ⊥ iff a source is ⊥, a union is ⊥ iff all
    its contributions are), so every x in (D ∪ {⊤})^I gives the same L̄(A).
    With no final states both languages are Σ* (vacuously).

    Construction (proof of Theorem 5.2): states are the unit configurations
    (statuses ⊥/⋆/⊤ per DT state, :mod:`dt.projection`) reachable from Δ_i(x)
    by breadth-first search, one :class:`~dt.projection.UnitEvaluator` step
    per (configuration, tag); a configuration accepts by its output statuses.
    Cost: O(#configurations · |Σ| · size(A)); the number of configurations is
    at most 3^|Q|, so exponential in the worst case (compiled QRE-Past
    queries stay small in practice). ``max_states`` bounds the search and
    raises :class:`StateLimitError` beyond it. The result is minimized unless
    ``minimal=False`` (then its states are the configurations in BFS order).
    """
    if kind not in ("defined", "extended"):
        raise ValueError(f"kind must be 'defined' or 'extended', not {kind!r}")
    ev = unit_evaluator(dt)
    accept: Callable[[tuple[int, ...]], bool] = (
        (lambda out: all(s == 1 for s in out)) if kind == "defined"
        else (lambda out: all(s != 0 for s in out))
    )
    start = ev.initial((1,) * len(dt.initial))
    number = {start: 0}
    order = [start]
    rows: list[tuple[int, ...]] = []
    for config in order:
        row = []
        for tag in dt.alphabet:
            nxt = ev.step(config, tag)
            if nxt not in number:
                if max_states is not None and len(order) >= max_states:
                    raise StateLimitError(
                        f"the unit projection of this DT ({len(dt.states)} states) has more than "
                        f"{max_states} reachable configurations (the bound is 3^{len(dt.states)})"
                    )
                number[nxt] = len(order)
                order.append(nxt)
            row.append(number[nxt])
        rows.append(tuple(row))
    accepting = frozenset(i for i, c in enumerate(order) if accept(ev.outputs(c)))
    d = DFA(dt.alphabet, tuple(rows), 0, accepting)
    return minimize(d) if minimal else d
