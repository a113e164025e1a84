"""Inlining: a state computed by one transition and read by one other is folded into its reader.

Rule. A state h that is neither initial nor final is *inlined* when

* exactly one transition w writes h (``w : h' := t_w`` over sources W),
* exactly one transition r reads h, and only primed (``r : g' := t_r`` over
  sources X ∋ h'), with r ≠ w, h' not in W and g' not in W,
* r and w fire together on some label: the new transition fires on the labels
  both fire on (``eps`` ∩ σ = σ, ``eps`` ∩ ``init`` = ``init``; none in common: skip).

Then r becomes ``g' := t_r[h' ↦ t_w]`` over ``(X \\ {h'}) ∪ W`` on those labels,
and w and h are dropped. The constructions of §5.2 make many such states: the
glue of a concatenation ``(ε, {f5', f7'}, h10', f5')`` read once by
``(ε, {h10'}, i2', h10')``, or a data function G applied to one output.

Why it is exact (seed 003, §5.1, Equation (1)). h is not initial, so no initial
vector or restart (Definition 5.4) seeds it, and w is its only writer: on a
label where w fires, ``c'(h') = lift_W(t_w)``; elsewhere h' is ⊥. Where r fires
but w does not, r reads a ⊥ source and gives ⊥, the identity of ⊔: dropping r
there is exact. Where both fire, lifting over X is ⊥ iff a source of X \\ {h'} or
of W is ⊥ (h' is ⊥ iff a source of W is), else ⊤ iff one of them is ⊤, else
``t_r`` with h' = ``t_w`` — which is lifting over ``(X \\ {h'}) ∪ W`` of the
substituted term. Substituting an equation into the others keeps the least
fixpoint of Equation (1) (the system's solutions are the same). r reads h only
primed, so no later step needs h's old value. No transition is merged.

Preconditions: none. The inlined term's depth is capped (:data:`MAX_DEPTH`) so
terms stay printable and parseable (dt.terms.MAX_TERM_DEPTH) and compile fast.

Cost: linear in the size of the DT (a worklist; each inlining updates the
reader and writer indexes of the states involved).
"""

from __future__ import annotations

from collections import defaultdict

from dt.model import DT, EPS, Transition
from dt.terms import Apply, Term, Var

from ._common import rebuild

__all__ = ["MAX_DEPTH", "inline_single_use"]

MAX_DEPTH = 24
"""No inlining makes a term deeper than this."""


def inline_single_use(dt: DT) -> DT:
    """Fold every single-use state into its reader (see the module docstring).

    >>> from codegen.optimize._common import from_dump
    >>> d = from_dump('''
    ...   alphabet: a
    ...   states:   i, s, h, f
    ...   initial:  i
    ...   final:    f
    ...     a: {i} -> s' := i + cur
    ...     eps: {s'} -> h' := s' * 2
    ...     eps: {h', s'} -> f' := h' - s'
    ... ''')
    >>> print(inline_single_use(d).dump())
    alphabet: a
    states:   i, s, f
    initial:  i
    final:    f
    size:     15 (3 states, 2 transitions)
      a: {i} -> s' := i + cur
      eps: {s'} -> f' := s' * 2 - s'
    """
    trs: list[Transition | None] = list(dt.transitions)
    writers: dict[str, set[int]] = defaultdict(set)
    primed: dict[str, set[int]] = defaultdict(set)
    unprimed: dict[str, set[int]] = defaultdict(set)
    for k, t in enumerate(dt.transitions):
        writers[t.target].add(k)
        for v in t.sources:
            (primed if v.primed else unprimed)[v.name].add(k)
    protected = set(dt.initial) | set(dt.final)
    removed: set[str] = set()
    todo = [q for q in reversed(dt.states) if q not in protected]
    while todo:
        h = todo.pop()
        if h in removed or len(writers[h]) != 1 or unprimed[h] or len(primed[h]) != 1:
            continue
        (w_k,), (r_k,) = writers[h], primed[h]
        w, r = trs[w_k], trs[r_k]
        assert w is not None and r is not None
        new = _inlined(h, w, r)
        if new is None:
            continue
        trs[r_k], trs[w_k] = new, None
        removed.add(h)
        writers[h].clear()
        primed[h].clear()
        for v in w.sources:
            index = primed if v.primed else unprimed
            index[v.name].discard(w_k)
            index[v.name].add(r_k)
        # Their readers changed: the sources of w and the target of r may be inlinable now.
        todo.extend(q for q in (*sorted(v.name for v in w.sources), r.target)
                    if q not in protected and q not in removed)
    if not removed:
        return dt
    return rebuild(dt, (q for q in dt.states if q not in removed),
                   (t for t in trs if t is not None))


def _inlined(h: str, w: Transition, r: Transition) -> Transition | None:
    """r with h' replaced by w's term, or None if the rule does not apply."""
    h_new = Var(h, primed=True)
    if r is w or h_new in w.sources or Var(r.target, primed=True) in w.sources:
        return None
    on = _common_label(w.on, r.on)
    if on is None:
        return None
    if w.term.size > 1 and _occurrences(r.term, h_new) > 1:
        return None  # the reader would compute w's term twice per event
    term = r.term.substitute({h_new: w.term})
    if _depth(term) > MAX_DEPTH:
        return None
    return Transition(on, (r.sources - {h_new}) | w.sources, r.target, term)


def _common_label(a: str, b: str) -> str | None:
    """The label on which transitions labelled a and b both fire (None if there is none).

    >>> _common_label("eps", "a"), _common_label("init", "eps"), _common_label("a", "init")
    ('a', 'init', None)
    """
    if a == b or b == EPS:
        return a
    if a == EPS:
        return b
    return None  # two different tags, or a tag and init


def _occurrences(term: Term, var: Var) -> int:
    if isinstance(term, Apply):
        return sum(_occurrences(a, var) for a in term.args)
    return 1 if term == var else 0


def _depth(term: Term) -> int:
    if isinstance(term, Apply):
        return 1 + max(_depth(a) for a in term.args)
    return 1

