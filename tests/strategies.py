"""Hypothesis strategies shared by the tests: terms, extended values, words, arbitrary DTs.

Data values come from a small set of floats so that random words exercise
equalities and signs; every strategy is deterministic under the ``ci`` profile.
"""

from __future__ import annotations

import pandas as pd
from hypothesis import strategies as st

from dt.model import DT, EPS, INIT, Transition
from dt.terms import OPS, Apply, Const, Cur, Var
from dt.values import BOT, TOP

DATA = [-2.0, -1.0, -0.5, 0.0, 1.0, 2.0, 3.0]
TAGS = ("a", "b", "c")

data_values = st.sampled_from(DATA)
extended_values = st.one_of(st.just(BOT), st.just(TOP), data_values)

_SAFE_OPS = ["add", "sub", "mul", "min", "max", "neg", "lt", "eq", "if", "fst", "snd", "abs"]


def terms(variables: list[Var] | tuple[Var, ...], *, allow_cur: bool, max_leaves: int = 4):
    """Random terms over ``variables`` (and ``cur`` if allowed), every variable optional."""
    leaves = [st.builds(Const, data_values)]
    if variables:
        leaves.append(st.sampled_from(list(variables)))
    if allow_cur:
        leaves.append(st.just(Cur()))
    leaf = st.one_of(*leaves)

    def extend(children):
        return st.sampled_from(_SAFE_OPS).flatmap(
            lambda op: st.tuples(*[children] * OPS[op].arity).map(lambda args: Apply(op, args))
        )

    return st.recursive(leaf, extend, max_leaves=max_leaves)


def alphabets(min_size: int = 2, max_size: int = 3):
    return st.integers(min_size, max_size).map(lambda n: TAGS[:n])


def words(alphabet: tuple[str, ...], max_len: int = 7):
    """Data words: lists of (tag, float)."""
    return st.lists(st.tuples(st.sampled_from(alphabet), data_values), max_size=max_len)


@st.composite
def arbitrary_dts(draw, alphabet: tuple[str, ...] | None = None, max_states: int = 5,
                  max_transitions: int = 8, *, acyclic: bool = False) -> DT:
    """Any valid DT: cycles through primed variables, unprimed reads, init and eps transitions.

    With ``acyclic=True`` a primed source always comes from an earlier state than the
    target, so the within-step dependency graph is acyclic by construction.
    """
    if alphabet is None:
        alphabet = draw(alphabets(1, 3))
    n = draw(st.integers(1, max_states))
    states = tuple(f"q{k}" for k in range(n))
    initial = tuple(draw(st.lists(st.sampled_from(states), unique=True, max_size=min(n, 2))))
    final = tuple(draw(st.lists(st.sampled_from(states), unique=True, min_size=1,
                                max_size=min(n, 3))))
    transitions = []
    for _ in range(draw(st.integers(0, max_transitions))):
        label = draw(st.sampled_from([*alphabet, INIT, EPS]))
        stepwise = label not in (INIT, EPS)
        target = draw(st.integers(0, n - 1))
        pool = [Var(q, True) for q in (states[:target] if acyclic else states)]
        if stepwise:
            pool += [Var(q) for q in states]
        sources = draw(st.lists(st.sampled_from(pool), unique=True, max_size=3)) if pool else []
        term = draw(terms(sources, allow_cur=stepwise, max_leaves=3))
        sources = sorted(set(sources) | term.variables(), key=str)
        transitions.append(Transition(label, frozenset(sources), states[target], term))
    return DT(alphabet, states, initial, final, tuple(transitions))


def initial_vectors(dt: DT, values=extended_values):
    return st.tuples(*[values] * len(dt.initial))


def sized_words(alphabet, max_len=7):
    """Words whose length (0..max_len) is drawn first."""
    return st.integers(0, max_len).flatmap(
        lambda n: st.lists(st.tuples(st.sampled_from(alphabet), data_values),
                           min_size=n, max_size=n))


@st.composite
def cyclic_dts(draw):
    """DTs dense in primed reads, so that multi-state cycles (Kleene blocks) are common."""
    alphabet = draw(alphabets(1, 2))
    n = draw(st.integers(2, 4))
    states = tuple(f"q{k}" for k in range(n))
    transitions = []
    for _ in range(draw(st.integers(n, 3 * n))):
        label = draw(st.sampled_from([*alphabet, INIT, EPS]))
        stepwise = label not in (INIT, EPS)
        primed = draw(st.lists(st.sampled_from(states), min_size=1, max_size=2, unique=True))
        pool = [Var(q, True) for q in primed]
        if stepwise and draw(st.booleans()):
            pool.append(Var(draw(st.sampled_from(states))))
        term = draw(terms(pool, allow_cur=stepwise, max_leaves=3))
        transitions.append(Transition(label, frozenset(pool), draw(st.sampled_from(states)), term))
    initial = tuple(draw(st.lists(st.sampled_from(states), unique=True, max_size=2)))
    return DT(alphabet, states, initial, states, tuple(transitions))


@st.composite
def replicated_dts(draw):
    """k copies of a random DT side by side (states ``q_i``), copy i reading copy i-1
    through a link transition whose constant is i: blocks of one shape, in chains, that
    the loop shape of codegen (codegen.loops) runs in one loop with per-copy tables."""
    base = draw(st.one_of(arbitrary_dts(max_states=4, max_transitions=6), cyclic_dts()))
    k = draw(st.integers(2, 5))
    link = (draw(st.sampled_from([*base.alphabet, EPS])), draw(st.sampled_from(base.states)),
            draw(st.sampled_from(base.states)), draw(st.booleans()))
    transitions = []
    for i in range(k):
        names = {Var(q, p): Var(f"{q}_{i}", p) for q in base.states for p in (False, True)}
        transitions += [Transition(t.on, frozenset(names[v] for v in t.sources),
                                   f"{t.target}_{i}", t.term.substitute(names))
                        for t in base.transitions]
        label, source, target, linked = link
        if i and linked:
            before = Var(f"{source}_{i - 1}", True)
            transitions.append(Transition(label, frozenset({before}), f"{target}_{i}",
                                          Apply("add", (before, Const(float(i))))))

    def copies(qs):
        return tuple(f"{q}_{i}" for i in range(k) for q in qs)

    return DT(base.alphabet, copies(base.states), copies(base.initial), copies(base.final),
              tuple(transitions))


@st.composite
def keyed_cases(draw):
    """A DT, an initial vector and interleaved rows of 1..12 keys (some skipped, some keys
    empty); more keys than the engines' chunks (4 per thread), so a chunk runs several keys."""
    dt = draw(arbitrary_dts())
    x = draw(initial_vectors(dt))
    n_keys = draw(st.integers(1, 12))
    rows = draw(st.lists(st.tuples(st.integers(0, n_keys - 1),
                                   st.integers(-1, len(dt.alphabet) - 1), data_values),
                         max_size=30))
    return dt, x, n_keys, rows


@st.composite
def keyed_events(draw, *, min_events: int = 1, max_events: int = 40, keys: int = 5,  # type: ignore[no-untyped-def]
                 times: tuple[int, int] = (0, 6), tags: tuple[str, ...] = ("a", "b")):
    """A frame of events (columns k, t, tag, v) of up to ``keys`` keys at integer times
    in ``times`` (few: many ties), values with repeats and NaN."""
    n = draw(st.integers(min_events, max_events))
    return pd.DataFrame({
        "k": draw(st.lists(st.integers(0, keys - 1), min_size=n, max_size=n)),
        "t": draw(st.lists(st.integers(*times), min_size=n, max_size=n)),
        "tag": draw(st.lists(st.sampled_from(tags), min_size=n, max_size=n)),
        "v": draw(st.lists(st.sampled_from([-1.0, 0.0, 0.5, 2.0, float("nan")]),
                           min_size=n, max_size=n)),
    })
