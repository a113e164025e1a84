"""Theorem 5.9's family: restartable DTs of O(k) states whose CRAs need 2^k control states.

Over tags σ_1 … σ_k (named ``t1`` … ``tk``), A_i outputs the sum of the
values read so far if σ_i has occurred, else 0 (seed 003, §5.4.1, proof of
Theorem 5.9); A adds the outputs of A_1 … A_k. Each A_i is two running sums
— ``n_i`` while σ_i has not occurred, ``y_i`` once it has — and an output
``o_i``: ``y_i`` where defined, else 0 read from ``n_i``. Every state is
defined exactly when its thread is, so A is restartable (checked in the
tests), and a run's definedness configuration records which tags have
occurred: the CRA (:func:`~dt.cra.from_dt.cra_from_dt`) has 2^k control
states plus its start, while A has 3k + 2 states.
"""

from __future__ import annotations

from ..model import DT, EPS, Facts, Transition
from ..terms import Apply, Const, Cur, Term, Var

__all__ = ["seen_tags_sum"]


def _t(on: str, sources: list[Var], target: str, term: Term) -> Transition:
    return Transition(on, frozenset(sources), target, term)


def _add(*terms: Term) -> Term:
    total = terms[0]
    for term in terms[1:]:
        total = Apply("add", (total, term))
    return total


def seen_tags_sum(k: int) -> DT:
    """A = A_1 + … + A_k over tags ``t1`` … ``tk`` (module docstring); input ``x``, output
    ``z``. Restartable by construction (a thread starts its sums at 0 from ``x'``)."""
    if k < 1:
        raise ValueError(f"the family starts at k = 1, not {k}")
    tags = tuple(f"t{i}" for i in range(1, k + 1))
    x = Var("x", True)
    states = ["x", "z"]
    trs: list[Transition] = []
    for i, own in enumerate(tags, start=1):
        n, y, o = f"n{i}", f"y{i}", f"o{i}"
        states += [n, y, o]
        trs.append(_t(EPS, [x], n, Const(0.0)))
        for tag in tags:
            # The running sums move on every tag: n_i until σ_i, y_i from σ_i on.
            if tag == own:
                trs.append(_t(tag, [Var(n)], y, _add(Var(n), Cur())))
            else:
                trs.append(_t(tag, [Var(n)], n, _add(Var(n), Cur())))
            trs.append(_t(tag, [Var(y)], y, _add(Var(y), Cur())))
        trs.append(_t(EPS, [Var(y, True)], o, Var(y, True)))
        trs.append(_t(EPS, [Var(n, True)], o, Const(0.0)))
    outs = [Var(f"o{i}", True) for i in range(1, k + 1)]
    trs.append(_t(EPS, outs, "z", _add(*outs)))
    return DT(tags, tuple(states), ("x",), ("z",), tuple(trs),
              Facts(restartable=True, output_synchronized=True))
