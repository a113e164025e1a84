"""Constant folding: evaluate the parts of a term that do not depend on the step.

Rule. Bottom-up in every transition's term:

* an :class:`~dt.terms.Apply` whose arguments are all :class:`~dt.terms.Const`
  becomes the constant ``OPS[op].fn(*values)`` — the very implementation that
  :func:`dt.terms.evaluate_term` (and so the reference evaluator) runs, hence
  the same IEEE float64 bits: NaN, ``-0.0``, ``±inf`` results included;
* ``if(c, a, b)`` with a constant ``c`` becomes ``a`` when ``c != 0`` (NaN is
  true, as in :data:`dt.terms.OPS`) and ``b`` otherwise;
* ``fst(a, b)`` becomes ``a`` and ``snd(a, b)`` becomes ``b``, whatever they are.

Why it is exact (seed 003, §5.1, Equation (1)). A transition contributes
``[[t]](c'|X)``: ⊥ if a source in X is ⊥, else ⊤ if one is ⊤, else the value of
``t``. The rule never touches the source list X — lifting depends on X, not on
the variables the term happens to read, so ``fst(x', y')`` over ``{x', y'}``
becomes ``x'`` over the *same* ``{x', y'}`` and is still ⊥ when ``y'`` is — and
it only replaces a term by one with the same value on every environment:
operations are pure total functions on floats (they never raise). Constants
compare bitwise (:class:`~dt.terms.Const`), so ``nan`` folds to ``nan`` and
``-0.0`` is never confused with ``0.0``. No algebraic identity is used (``x + 0``
is not ``x`` when ``x = -0.0``).

Preconditions: none. Terms dropped by ``if``/``fst``/``snd`` may read ``cur``
fields, so the optimized DT may read fewer event fields (:attr:`dt.model.DT.fields`)
than the original; its outputs are the same.

Cost: linear in the total term size.
"""

from __future__ import annotations

from dt.model import DT, Transition
from dt.terms import OPS, Apply, Const, Term

from ._common import rebuild

__all__ = ["fold_constants"]


def fold_constants(dt: DT) -> DT:
    """Fold constant subterms, constant ``if`` conditions, ``fst`` and ``snd``.

    >>> from codegen.optimize._common import from_dump
    >>> d = from_dump('''
    ...   alphabet: a
    ...   states:   s, r
    ...   initial:  s
    ...   final:    r
    ...     a: {s} -> s' := s + (0 - 0) * -1
    ...     a: {r, s'} -> r' := if(0 / 0, fst(s', r), cur) + 2 * 3
    ... ''')
    >>> print(fold_constants(d).dump())
    alphabet: a
    states:   s, r
    initial:  s
    final:    r
    size:     13 (2 states, 2 transitions)
      a: {s} -> s' := s + -0.0
      a: {r, s'} -> r' := s' + 6
    """
    transitions = tuple(_fold_transition(t) for t in dt.transitions)
    return rebuild(dt, dt.states, transitions)


def _fold_transition(t: Transition) -> Transition:
    term = _fold_term(t.term)
    if term == t.term:
        return t
    # The sources X stay as they are: lifting (⊥/⊤) depends on X, not on the term.
    return Transition(t.on, t.sources, t.target, term)


def _fold_term(term: Term) -> Term:
    """The folded form of one term (the rule of the module docstring).

    >>> from dt.terms import parse_term
    >>> str(_fold_term(parse_term("x' * (1 / 0) + snd(x', -0.0) * pow(-8, 1 / 3)")))
    "x' * inf + nan"
    """
    if not isinstance(term, Apply):
        return term
    args = tuple(_fold_term(a) for a in term.args)
    if term.op == "if" and isinstance(args[0], Const):
        # Same test as OPS["if"]: any non-zero value, NaN included, is true.
        return args[1] if args[0].value != 0 else args[2]
    if term.op == "fst":
        return args[0]
    if term.op == "snd":
        return args[1]
    if all(isinstance(a, Const) for a in args):
        values = [a.value for a in args]  # type: ignore[attr-defined]
        return Const(float(OPS[term.op].fn(*values)))
    return Apply(term.op, args)
