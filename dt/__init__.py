"""Data transducers: the model, its reference semantics and the constructions of §5.2.

Pipeline position: text → AST → typed AST → **DT** → optimized DT → tables →
kernel → Spark. The language compiler (package ``qre``) produces DTs with the
constructions here; ``codegen`` flattens them; every faster engine is tested
against :mod:`dt.reference`.

Takes and returns: immutable :class:`DT` values (Q, Σ, Δ, I, F) whose
transitions carry :class:`~dt.terms.Term` trees; configurations are vectors of
extended values (⊥, float, ⊤), flat ``(status, value)`` arrays at the boundary.

Costs: the reference evaluator does O(size) work per event (Theorem 5.1);
parallel, union, concatenation, iteration and prefix sum add O(|I| + |F|) to
the sum of their components' sizes; support is quadratic for cyclic DTs and
linear for acyclic ones.

Modules: :mod:`~dt.values` (extended values), :mod:`~dt.terms` (terms, their
syntax and evaluation), :mod:`~dt.model` (the DT), :mod:`~dt.builder`,
:mod:`~dt.reference` (Figure 25), :mod:`~dt.functions` (data functions),
:mod:`~dt.constructions` (§5.2), :mod:`~dt.support` (conditioning on ⊥/D/⊤),
the direct constructions of timed queries — :mod:`~dt.windows` (window aggregates
and folds) and :mod:`~dt.metric` (metric-bounded past operators, O(K) per event),
:mod:`~dt.projection` (unit signature, Theorem 5.2), the analyses on it —
:mod:`~dt.equivalence` (status-level equivalence, Theorem 5.3) and
:mod:`~dt.restartability` (Theorem 5.6, output-synchronization) — and on
values, :mod:`~dt.symbolic` (symbolic evaluation, normalized hash-consed
terms) and :mod:`~dt.value_equivalence` (proof by inductive invariant,
bounded symbolic search, random testing), then
:mod:`~dt.json_io`, :mod:`~dt.render`. Beside the DT, the automata it is
compared with (§5.4): :mod:`dt.cra` (cost register automata, Theorem 5.8, and
the restartable form of §5.2.2) and :mod:`dt.afa` (reversed alternating
automata, §5.4.2); :mod:`~dt.graphs` holds their shared reachability and :mod:`~dt.boolean` the
Boolean connectives the r-AFA shares with the streaming-algorithm IR.
"""

from .errors import DTError, EvaluationError, PreconditionError, SourceError, TermSyntaxError
from .model import DT, EPS, INIT, Facts, Transition
from .terms import Apply, Const, Cur, Term, Var, parse_term
from .values import BOT, TOP, Status, XValue

__all__ = [
    "BOT",
    "DT",
    "EPS",
    "INIT",
    "TOP",
    "Apply",
    "Const",
    "Cur",
    "DTError",
    "EvaluationError",
    "Facts",
    "PreconditionError",
    "SourceError",
    "Status",
    "Term",
    "TermSyntaxError",
    "Transition",
    "Var",
    "XValue",
    "parse_term",
]
