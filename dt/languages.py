"""Emptiness and universality of the languages L and L̄ of a DT's outputs (seed 003, §5.2.2, §5.3).

For a DT A and one of its final states f, the *language* L(A, f) is the set
of tag strings after which the output at f is defined, and the *rate*
L̄(A, f) the set after which it is defined or conflict (§5.3.1: "the rate
expresses the set of strings on which the compiled DT is defined *or*
conflict"; the typing rules of QRE-Past compare rates, e.g. ``L̄ = Σ*`` for
temporal queries and ``L = Σ*`` for the argument of prefix-sum). Words are
tag strings, not data words: by Theorem 5.2 the status of every state after
a data word depends only on its tag string (and on the statuses of the
initial vector), so L and L̄ are well defined and regular.

What is decided, for every output at once and for given initial statuses:
is L empty, is L universal (= Σ*), is L̄ empty, is L̄ universal — each with a
*shortest* witness where one exists: a shortest string in L, a shortest
string not in L, a shortest in L̄, a shortest not in L̄. The four booleans
follow from the witnesses (L is empty iff no string is in L, universal iff
no string is outside L).

Why it is exact: by Theorem 5.2 the statuses are computed by the unit
projection P of A (:mod:`dt.projection`), a DT with at most 3^|Q| unit
configurations; the output status after a tag string is a function of the
configuration reached, so each language is recognized by the finite
automaton of *reachable* unit configurations. A breadth-first search from
the initial configuration, in a fixed tag order (sorted tag names), visits
every configuration of depth k before any of depth k + 1 and classifies each
output of each configuration on discovery: the first configuration found
with a given property is reached by a shortest string with it, and when the
search exhausts the reachable configurations, a property never met holds of
no string at all. The search stops early once every witness of every output
is found (then nothing is empty or universal).

Every witness is replayed on the reference evaluator (:mod:`dt.reference`,
data 0.0, initial vector with the given statuses) before it is returned: the
claimed status must show after the whole string and not after any proper
prefix (a prefix with the property would be a shorter witness). A failure is
an AssertionError, a bug in this module or in the projection.

Cost: at most ``max_configs`` configurations are kept (tuples of |Q| small
ints, 3^|Q| in the worst case, typically far fewer for compiled queries);
each is expanded once per tag by one unit step, O(size) each
(:mod:`dt.projection`). Past the limit the answer is unknown and
:class:`LanguageLimitError` is raised.

Example: ``atom(a, cur)`` as a DT, whose language is {a}:

>>> from dt.model import DT, Transition
>>> from dt.terms import Var
>>> atom = DT(("a", "b"), ("i", "f"), ("i",), ("f",),
...           (Transition("a", frozenset({Var("i")}), "f", Var("i")),))
>>> (out,) = languages(atom)
>>> out.in_l, out.not_in_l, out.empty, out.universal
(('a',), (), False, False)
>>> out.rate_universal, out.explored  # all four witnesses known after "a": stop
(False, 2)
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .model import DT
from .projection import UnitConfig, status_vector, unit_evaluator
from .reference import evaluate
from .search import SearchLimitError, default_statuses, path_to, vector_with_statuses
from .values import Status

__all__ = ["KINDS", "LanguageLimitError", "OutputLanguages", "languages"]

log = logging.getLogger(__name__)

_BOT, _STAR, _TOP = int(Status.UNDEFINED), int(Status.DEFINED), int(Status.CONFLICT)

KINDS: dict[str, Callable[[int], bool]] = {
    "in_l": lambda s: s == _STAR,
    "not_in_l": lambda s: s != _STAR,
    "in_rate": lambda s: s != _BOT,
    "not_in_rate": lambda s: s == _BOT,
}
"""The four witness kinds and the output statuses (0 ⊥, 1 defined, 2 ⊤) they ask for."""


class LanguageLimitError(SearchLimitError):
    """The search met more than ``max_configs`` reachable configurations before an answer.

    Some witnesses were still missing, so emptiness or universality is
    unknown for some output. ``explored`` is the number of configurations
    discovered.
    """

    def __init__(self, explored: int, max_configs: int) -> None:
        super().__init__("languages", "unit configurations", explored, max_configs)
        self.max_configs = max_configs


@dataclass(frozen=True)
class OutputLanguages:
    """L and L̄ of one output (see the module docstring), with shortest witnesses.

    ``final`` — the final state; ``in_l`` / ``not_in_l`` — a shortest tag
    string after which the output is defined / is not defined (⊥ or ⊤);
    ``in_rate`` / ``not_in_rate`` — a shortest tag string after which it is
    defined or ⊤ / is ⊥. ``None`` when no string has the property. Among
    strings of the least length the first in the order of the search (sorted
    tags, lexicographic) is given. ``explored`` — configurations discovered by
    the search (shared by all outputs of one call).
    """

    final: str
    in_l: tuple[str, ...] | None
    not_in_l: tuple[str, ...] | None
    in_rate: tuple[str, ...] | None
    not_in_rate: tuple[str, ...] | None
    explored: int

    @property
    def empty(self) -> bool:
        """L = ∅: the output is never defined."""
        return self.in_l is None

    @property
    def universal(self) -> bool:
        """L = Σ*: the output is defined after every tag string, the empty one included."""
        return self.not_in_l is None

    @property
    def rate_empty(self) -> bool:
        """L̄ = ∅: the output is ⊥ after every tag string."""
        return self.in_rate is None

    @property
    def rate_universal(self) -> bool:
        """L̄ = Σ*: the output is never ⊥ (defined or ⊤ after every tag string)."""
        return self.not_in_rate is None


def languages(dt: DT, x_status: Sequence[int] | None = None, *,
              max_configs: int = 1_000_000) -> tuple[OutputLanguages, ...]:
    """Decide emptiness and universality of L and L̄ for every output; see the module docstring.

    ``x_status``: the statuses (0 ⊥, 1 defined, 2 ⊤) of the initial vector,
    one per initial state; by default all defined. Returns one
    :class:`OutputLanguages` per final state, in the order of ``dt.final``.
    Raises :class:`LanguageLimitError` (a ValueError) when more than
    ``max_configs`` configurations are met before every answer is known.
    """
    x = default_statuses(dt, x_status)
    ev = unit_evaluator(dt)
    tags = sorted(dt.alphabet)  # a fixed order makes the shortest witnesses deterministic
    n_out = len(dt.final)
    # found[(f, kind)]: the first configuration discovered whose output f has that kind.
    found: dict[tuple[int, str], UnitConfig] = {}
    wanted = n_out * len(KINDS)

    def classify(config: UnitConfig) -> None:
        for f, status in enumerate(ev.outputs(config)):
            for kind, holds in KINDS.items():
                if (f, kind) not in found and holds(status):
                    found[(f, kind)] = config

    start = ev.initial(x)
    parents: dict[UnitConfig, tuple[UnitConfig, str] | None] = {start: None}
    classify(start)
    work = deque([start])
    # Classified on discovery: every configuration of depth k is discovered
    # before any of depth k + 1, so the first one with a property is a shortest.
    while work and len(found) < wanted:
        config = work.popleft()
        for tag in tags:
            succ = ev.step(config, tag)
            if succ in parents:
                continue
            parents[succ] = (config, tag)
            classify(succ)
            if len(found) == wanted:
                break
            if len(parents) > max_configs:
                raise LanguageLimitError(len(parents), max_configs)
            work.append(succ)
    explored = len(parents)
    witnesses = {key: path_to(parents, config) for key, config in found.items()}
    _replay(dt, x, witnesses)
    log.debug("languages of %d outputs after %d configurations", n_out, explored)
    return tuple(
        OutputLanguages(name, *(witnesses.get((f, kind)) for kind in KINDS), explored)
        for f, name in enumerate(dt.final))


def _replay(dt: DT, x_status: Sequence[int],
            witnesses: dict[tuple[int, str], tuple[str, ...]]) -> None:
    """Check every witness on the reference evaluator with data 0.0 everywhere.

    The output must have the claimed kind after the whole witness and not
    after any proper prefix (else a shorter witness exists and the search was
    not breadth-first). A failure is a bug in this module or the projection.
    """
    x = vector_with_statuses(x_status)
    for (f, kind), word in witnesses.items():
        statuses = [status_vector(y)[f] for y in evaluate(dt, x, [(t, 0.0) for t in word])]
        holds = KINDS[kind]
        if not holds(statuses[-1]):
            raise AssertionError(f"witness {word} ({kind}) of output {dt.final[f]} does not "
                                 f"replay: the reference evaluator gives status {statuses[-1]}")
        for k in range(len(word)):
            if holds(statuses[k]):
                raise AssertionError(f"witness {word} ({kind}) of output {dt.final[f]} is not "
                                     f"shortest: its prefix {word[:k]} already has status "
                                     f"{statuses[k]}")
