"""Acyclic DTs over the unit signature ↔ r-AFAs (seed 003, §5.4.2).

Over D = {⋆}, with no initial states and one final state, a DT defines the
language L̄(A) of the tag strings after which its final state is not ⊥. Whether
a state is ⊥ is a Boolean of the previous step's: a transition is non-⊥ iff
all its sources are, a state iff one of its transitions is (⊤ is non-⊥ too:
two contributions that meet are still a contribution). So:

* :func:`rafa_from_dt` — δ(q, σ) is the disjunction, over the transitions of
  Δ_σ into q, of the conjunction of their sources: an unprimed source is a
  literal, a primed one the formula of that state in this step (hence the DT
  must be *acyclic*: no cycle through primed sources in a step). The initial
  valuation is the DT's after Δ_i. Formulas are built shared (a DAG), so δ's
  size (:func:`~dt.afa.model.formula_size`) is at most the DT's.
* :func:`dt_from_rafa` — negation removed the standard way: every state q
  gets a complement q̄ with δ(q̄, σ) the dual of δ(q, σ) (De Morgan, so both
  are negation-free; q̄ initially true iff q is not). Then a conjunction is
  one transition whose sources are its conjuncts (``op``), a disjunction
  several transitions into one state (⊔); a literal is an unprimed source, a
  compound conjunct a fresh state of the same step. Linear in δ; states that
  the final state never reads (a complement no negation uses) are dropped.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..errors import PreconditionError
from ..graphs import co_reachable
from ..model import DT, INIT, Transition
from ..projection import unit_evaluator
from ..terms import Const, Var
from .model import FALSE, RAFA, TRUE, Both, Either, Formula, Lit, Neg, Truth

__all__ = ["dt_from_rafa", "rafa_from_dt"]

_UNIT = Const(0.0)


def _any(parts: list[Formula]) -> Formula:
    parts = [p for p in parts if p != FALSE]
    if not parts:
        return FALSE
    if TRUE in parts:
        return TRUE
    result = parts[0]
    for p in parts[1:]:
        result = Either(result, p)
    return result


def _all(parts: list[Formula]) -> Formula:
    parts = [p for p in parts if p != TRUE]
    if FALSE in parts:
        return FALSE
    if not parts:
        return TRUE
    result = parts[0]
    for p in parts[1:]:
        result = Both(result, p)
    return result


def rafa_from_dt(dt: DT) -> RAFA:
    """The r-AFA of an acyclic unit-signature DT with no initial states and one final state
    (terms are ignored: only statuses matter). Raises PreconditionError otherwise."""
    if dt.initial or len(dt.final) != 1:
        raise PreconditionError(f"§5.4.2 compares DTs with no initial states and one final "
                                f"state; this one has {len(dt.initial)} and {len(dt.final)}")
    delta: dict[tuple[str, str], Formula] = {}
    for tag in dt.alphabet:
        trs = dt.on(tag).transitions
        into: dict[str, list[Transition]] = {}
        for t in trs:
            into.setdefault(t.target, []).append(t)
        done: dict[str, Formula] = {}

        def formula(q: str, path: tuple[str, ...], tag: str = tag,
                    into: dict[str, list[Transition]] = into,
                    done: dict[str, Formula] = done) -> Formula:
            if q in done:
                return done[q]
            if q in path:
                cycle = " -> ".join((*path[path.index(q):], q))
                raise PreconditionError(f"the DT is not acyclic: on {tag}, {cycle} (primed)")
            f = _any([_all([formula(v.name, (*path, q)) if v.primed else Lit(v.name)
                            for v in sorted(t.sources, key=str)]) for t in into.get(q, [])])
            done[q] = f
            return f

        for q in dt.states:
            delta[q, tag] = formula(q, ())
    start = unit_evaluator(dt).initial(())
    initial = frozenset(q for q, s in zip(dt.states, start, strict=True) if s)
    return RAFA(dt.alphabet, dt.states, delta, initial, dt.final[0])


def _positive(f: Formula, negate: bool, complement: dict[str, str]) -> Formula:
    """``f`` (or ¬f) without negation: ¬q is the complement state's literal."""
    if isinstance(f, Truth):
        return Truth(f.value != negate)
    if isinstance(f, Lit):
        return Lit(complement[f.q]) if negate else f
    if isinstance(f, Neg):
        return _positive(f.arg, not negate, complement)
    left, right = (_positive(g, negate, complement) for g in (f.left, f.right))
    conjunction = isinstance(f, Both) != negate
    return _all([left, right]) if conjunction else _any([left, right])


class _Emitter:
    """DT transitions of one tag for negation-free formulas (module docstring)."""

    def __init__(self, tag: str, names: set[str]) -> None:
        self.tag = tag
        self.names = names
        self.transitions: list[Transition] = []
        self.states: list[str] = []
        self._nodes: dict[Formula, str] = {}

    def into(self, target: str, f: Formula) -> None:
        for sources in self.disjuncts(f):
            self.transitions.append(Transition(self.tag, frozenset(sources), target, _UNIT))

    def disjuncts(self, f: Formula) -> Iterator[list[Var]]:
        if isinstance(f, Either):
            yield from self.disjuncts(f.left)
            yield from self.disjuncts(f.right)
        elif f != FALSE:
            yield list(self.conjuncts(f))

    def conjuncts(self, f: Formula) -> Iterator[Var]:
        if isinstance(f, Both):
            yield from self.conjuncts(f.left)
            yield from self.conjuncts(f.right)
        elif isinstance(f, Lit):
            yield Var(f.q)
        elif isinstance(f, Either):  # a disjunction inside a conjunction: a state of its own
            node = self._nodes.get(f)
            if node is None:
                node = self._nodes[f] = _fresh(f"or_{self.tag}", self.names)
                self.states.append(node)
                self.into(node, f)
            yield Var(node, True)
        # TRUE adds no source (FALSE never reaches here: _all drops the conjunction)


def _fresh(hint: str, names: set[str]) -> str:
    k = len(names)
    while f"{hint}{k}" in names:
        k += 1
    names.add(f"{hint}{k}")
    return f"{hint}{k}"


def dt_from_rafa(rafa: RAFA) -> DT:
    """The acyclic DT of ``rafa``: its states, their complements, and one state per
    disjunction nested in a conjunction; no initial states, final ``rafa.final``."""
    names = set(rafa.states)
    complement = {q: _fresh(f"not_{q}_", names) for q in rafa.states}
    states = [*rafa.states, *complement.values()]
    trs = [Transition(INIT, frozenset(), q, _UNIT) for q in rafa.states if q in rafa.initial]
    trs += [Transition(INIT, frozenset(), complement[q], _UNIT) for q in rafa.states
            if q not in rafa.initial]
    for tag in rafa.alphabet:
        emit = _Emitter(tag, names)
        for q in rafa.states:
            f = rafa.delta[q, tag]
            emit.into(q, _positive(f, False, complement))
            emit.into(complement[q], _positive(f, True, complement))
        states += emit.states
        trs += emit.transitions
    # Only what the final state reads (through any number of steps) is kept: a complement
    # that no negation reads goes.
    used = co_reachable({rafa.final}, ((v.name, t.target) for t in trs for v in t.sources))
    return DT(rafa.alphabet, tuple(q for q in states if q in used), (), (rafa.final,),
              tuple(t for t in trs if t.target in used))
