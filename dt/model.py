"""The data transducer 5-tuple (Q, Σ, Δ, I, F) of seed 003, §5.1.

A :class:`DT` is immutable and validated when built. Its parts:

* ``alphabet`` Σ — the tags, in a fixed order (tag codes index into it);
* ``states`` Q — state names (identifiers), in a fixed order: a configuration
  is a vector aligned with this tuple;
* ``initial`` I and ``final`` F — ordered subsets of Q. The order is the
  order of the initial vector and of the output vector, and the positional
  bijections that the constructions of §5.2 use between them;
* ``transitions`` Δ — :class:`Transition` ``(σ, X, q', t)``: on label σ (a tag,
  :data:`INIT`, or :data:`EPS`), sources X ⊆ Q ∪ Q', target q', term t with
  vars(t) ⊆ X. :data:`EPS` is the paper's epsilon shorthand (§5.2.1): the
  transition belongs to Δ_σ for every tag σ *and* to Δ_i.

Rules checked at construction (a :class:`~dt.errors.DTError` names the
transition): targets and sources are states; vars(t) ⊆ X; an initial or
epsilon transition reads only primed sources and never ``cur``.

``size`` is |Q| plus the length of every transition, where the length of
``(σ, X, q', t)`` is ``|X| + 1 + size(t)`` (sources, target, term nodes).

``facts`` records what the constructions *proved* (Theorem 5.5):
``restartable`` and ``output_synchronized`` are ``True`` when established and
``None`` when unknown (e.g. a DT read from JSON). A DT with at most one final
state is output-synchronized by definition, whatever it was built from. Facts
do not take part in equality.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from functools import cached_property

from .errors import DTError
from .terms import KEYWORDS, Term, Var

__all__ = ["DT", "EPS", "INIT", "RESERVED_LABELS", "Facts", "LabelIndex", "Transition"]

INIT = "init"
"""Label of an initial transition (the paper's ``i``)."""

EPS = "eps"
"""Label of an epsilon transition: every tag and init (§5.2.1)."""

RESERVED_LABELS = frozenset({INIT, EPS})


def _is_identifier(name: str) -> bool:
    return name.isidentifier() and name.isascii() and name not in KEYWORDS


@dataclass(frozen=True, slots=True)
class Transition:
    """``(on, sources, target', term)``: the target's new value is ``term`` over ``sources``."""

    on: str
    sources: frozenset[Var]
    target: str
    term: Term

    @property
    def size(self) -> int:
        """Length of description: sources, target and term nodes."""
        return len(self.sources) + 1 + self.term.size

    def fires_on(self, label: str) -> bool:
        """True if this transition is in Δ_label (``label`` a tag or :data:`INIT`)."""
        return self.on == label or self.on == EPS

    def __str__(self) -> str:
        srcs = ", ".join(sorted(str(v) for v in self.sources))
        return f"{self.on}: {{{srcs}}} -> {self.target}' := {self.term}"


@dataclass(frozen=True, slots=True)
class Facts:
    """Properties proved by construction (``None`` = not established)."""

    restartable: bool | None = None
    output_synchronized: bool | None = None


@dataclass(frozen=True)
class LabelIndex:
    """Δ_σ for one label σ with the lookups the evaluators need.

    ``transitions`` — the transitions that fire on σ, in DT order;
    ``writers[q]`` — indices (into ``transitions``) of those targeting q';
    ``readers[q]`` — indices of those with q' among their sources.
    """

    transitions: tuple[Transition, ...]
    writers: dict[str, tuple[int, ...]]
    readers: dict[str, tuple[int, ...]]


@dataclass(frozen=True)
class DT:
    """A data transducer (Q, Σ, Δ, I, F); see the module docstring."""

    alphabet: tuple[str, ...]
    states: tuple[str, ...]
    initial: tuple[str, ...]
    final: tuple[str, ...]
    transitions: tuple[Transition, ...]
    facts: Facts = field(default=Facts(), compare=False)

    def __post_init__(self) -> None:
        for name in ("alphabet", "states", "initial", "final", "transitions"):
            value = getattr(self, name)
            if not isinstance(value, tuple):
                object.__setattr__(self, name, tuple(value))
        self._validate()
        if len(self.final) <= 1 and self.facts.output_synchronized is None:
            # One output is all ⊥ or all non-⊥ by definition (§5.2, output-synchronized).
            object.__setattr__(self, "facts", replace(self.facts, output_synchronized=True))

    # ------------------------------------------------------------------ validation

    def _validate(self) -> None:
        _unique(self.alphabet, "tag")
        for tag in self.alphabet:
            if not isinstance(tag, str) or not tag:
                raise DTError(f"tag {tag!r}: tags are non-empty strings")
            if tag in RESERVED_LABELS:
                raise DTError(f"tag {tag!r} is reserved (labels 'init' and 'eps' are special)")
        _unique(self.states, "state")
        for q in self.states:
            if not isinstance(q, str) or not _is_identifier(q):
                raise DTError(f"state {q!r}: state names are identifiers other than "
                              f"{', '.join(sorted(KEYWORDS))}")
        states = set(self.states)
        for kind, subset in (("initial", self.initial), ("final", self.final)):
            _unique(subset, f"{kind} state")
            for q in subset:
                if q not in states:
                    raise DTError(f"{kind} state {q!r} is not a state")
        labels = set(self.alphabet) | RESERVED_LABELS
        for k, t in enumerate(self.transitions):
            problem = _transition_problem(t, states, labels)
            if problem is not None:  # only then print the transition: DTs can be large
                raise DTError(f"transition {k} ({t}): {problem}")

    # ------------------------------------------------------------------ derived views

    @property
    def size(self) -> int:
        """|Q| plus the length of every transition (§5.1)."""
        return len(self.states) + sum(t.size for t in self.transitions)

    @cached_property
    def state_index(self) -> dict[str, int]:
        """Position of each state in ``states`` (and in a configuration)."""
        return {q: k for k, q in enumerate(self.states)}

    @cached_property
    def _indexes(self) -> dict[str, LabelIndex]:
        return {label: self._build_index(label) for label in (INIT, *self.alphabet)}

    def on(self, label: str) -> LabelIndex:
        """Δ_label with its writer/reader lookups (``label`` a tag or :data:`INIT`)."""
        try:
            return self._indexes[label]
        except KeyError:
            raise ValueError(f"unknown tag {label!r}; the alphabet is "
                             f"{', '.join(self.alphabet)}") from None

    def _build_index(self, label: str) -> LabelIndex:
        trs = tuple(t for t in self.transitions if t.fires_on(label))
        writers: dict[str, list[int]] = {}
        readers: dict[str, list[int]] = {}
        for k, t in enumerate(trs):
            writers.setdefault(t.target, []).append(k)
            for v in t.sources:
                if v.primed:
                    readers.setdefault(v.name, []).append(k)
        return LabelIndex(
            trs,
            {q: tuple(ks) for q, ks in writers.items()},
            {q: tuple(ks) for q, ks in readers.items()},
        )

    @cached_property
    def fields(self) -> frozenset[str]:
        """Record fields the DT's terms read (``cur.FIELD``); computed once (O(size))."""
        return frozenset().union(*(t.term.fields() for t in self.transitions))

    @cached_property
    def reads_scalar_cur(self) -> bool:
        """True if some term reads plain ``cur`` (events carry one float); computed once."""
        return any(t.term.reads_plain_cur() for t in self.transitions)

    def check_event_data(self) -> None:
        """Raise :class:`DTError` if no event can run the DT: its terms read both plain
        ``cur`` and ``cur.FIELD``. An event's data is one number (``cur``) or a record of
        named numbers (``cur.FIELD``), never both (§5.1 leaves the data domain open; the
        evaluators, the kernels and the API take one or the other)."""
        if self.reads_scalar_cur and self.fields:
            fields = ", ".join(f"cur.{f}" for f in sorted(self.fields))
            raise DTError(f"the DT reads both cur and {fields}: an event carries one number "
                          f"(cur) or a record of named numbers (cur.FIELD), not both, so no "
                          f"event could run it")

    def with_facts(self, **facts: bool | None) -> DT:
        """The same DT with some facts replaced."""
        return replace(self, facts=replace(self.facts, **facts))

    # ------------------------------------------------------------------ rendering

    def dump(self) -> str:
        """A readable listing: header lines, then one line per transition."""
        lines = [
            f"alphabet: {', '.join(self.alphabet)}",
            f"states:   {', '.join(self.states)}",
            f"initial:  {', '.join(self.initial)}",
            f"final:    {', '.join(self.final)}",
            f"size:     {self.size} ({len(self.states)} states, "
            f"{len(self.transitions)} transitions)",
        ]
        lines += [f"  {t}" for t in self.transitions]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.dump()

    def to_dot(self) -> str:
        """Graphviz DOT: see :func:`dt.render.to_dot`."""
        from .render import to_dot

        return to_dot(self)

    def to_json(self, *, indent: int | None = 2) -> str:
        """JSON in the format of docs/API.md: see :mod:`dt.json_io`."""
        from .json_io import dt_to_json

        return dt_to_json(self, indent=indent)

    @classmethod
    def from_json(cls, text: str) -> DT:
        """Read the JSON format of docs/API.md: see :mod:`dt.json_io`."""
        from .json_io import dt_from_json

        return dt_from_json(text)


def _transition_problem(t: Transition, states: set[str], labels: set[str]) -> str | None:
    """What makes ``t`` invalid in a DT with these states and labels, or None."""
    if t.on not in labels:
        return f"label {t.on!r} is not a tag, 'init' or 'eps'"
    if t.target not in states:
        return f"target {t.target!r} is not a state"
    for v in t.sources:
        if v.name not in states:
            return f"source {v} is not a state"
    extra = t.term.variables() - t.sources
    if extra:
        names = ", ".join(sorted(str(v) for v in extra))
        return f"the term reads {names}, which is not among the sources"
    if t.on in RESERVED_LABELS:
        unprimed = sorted(str(v) for v in t.sources if not v.primed)
        if unprimed:
            return f"an {t.on} transition reads only primed sources, not {', '.join(unprimed)}"
        if t.term.reads_cur():
            return f"an {t.on} transition cannot read cur"
    return None


def _unique(items: Iterable[str], what: str) -> None:
    seen: set[str] = set()
    for item in items:
        if item in seen:
            raise DTError(f"{what} {item!r} is listed twice")
        seen.add(item)
