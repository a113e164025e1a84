"""The reference evaluator: Figure 25 of seed 003 (§5.1), the oracle of the project.

Clarity over speed. A configuration (:data:`Config`) is a tuple of extended
values aligned with ``dt.states``. The three step functions of the paper:

* :func:`initial_config` — Δ_i(x): the least vector with
  ``c'(q') = x(q) ⊔ ⊔_{(i, X, q', t)} [[t]](c'|X)``;
* :func:`step` — Δ_σ(c, d): Equation (1) on one event ``(σ, d)``; with
  ``restart=x`` it is the update-with-restart Δ_{σ,x}(c, d) of Definition 5.4,
  which also places ``x`` on the primed initial states;
* :func:`evaluate` — the outputs after every prefix, the empty one included.

All three compute a least fixpoint with the worklist of Figure 25: a
transition is evaluated once all its sources are non-⊥ (``num_undef = 0``),
and re-evaluated when a primed source rises (⊥ → d → ⊤). Values only rise, so
each state changes at most twice and a step costs O(size) operations
(Theorem 5.1). A defined value that flows round a cycle of primed variables
meets itself and becomes ⊤; a cycle that nothing feeds stays ⊥.

Figure 25 as printed has two slips that this code corrects (the least
fixpoint of Equation (1) is the specification; tests check the worklist
against a plain Kleene iteration of it):

* when a state q' changes, the transitions to re-examine are those that
  *read* q' (the figure says "with target variable q'");
* ``num_undef(τ)`` is decremented when a source leaves ⊥, i.e. once the new
  union is known to be non-⊥, and counts unprimed sources that are ⊥ in the
  previous configuration (the figure decrements before taking the union).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence

from .model import DT, INIT
from .terms import EventValue, Var, evaluate_term
from .values import BOT, TOP, XValue, status_of, union

__all__ = ["Config", "evaluate", "initial_config", "outputs", "run", "step"]

Config = tuple[XValue, ...]
"""A configuration: one extended value per state, aligned with ``dt.states``."""


def initial_config(dt: DT, x: Sequence[XValue]) -> Config:
    """Δ_i(x): the configuration after initialization with initial vector ``x``."""
    return _least_fixpoint(dt, INIT, None, None, _seed(dt, x))


def step(
    dt: DT,
    config: Config,
    tag: str,
    cur: EventValue,
    restart: Sequence[XValue] | None = None,
) -> Config:
    """Δ_σ(c, d), or Δ_{σ,x}(c, d) when ``restart`` gives the vector x over I."""
    if tag not in dt.alphabet:
        raise ValueError(f"unknown tag {tag!r}; the alphabet is {', '.join(dt.alphabet)}")
    seed = _seed(dt, restart) if restart is not None else {}
    return _least_fixpoint(dt, tag, config, cur, seed)


def outputs(dt: DT, config: Config) -> tuple[XValue, ...]:
    """The output vector y = c|F, in the order of ``dt.final``."""
    index = dt.state_index
    return tuple(config[index[f]] for f in dt.final)


def run(dt: DT, x: Sequence[XValue], word: Iterable[tuple[str, EventValue]]) -> list[Config]:
    """The configurations c0, c1, …, cn on ``word`` (c0 = Δ_i(x))."""
    config = initial_config(dt, x)
    configs = [config]
    for tag, cur in word:
        config = step(dt, config, tag, cur)
        configs.append(config)
    return configs


def evaluate(
    dt: DT, x: Sequence[XValue], word: Iterable[tuple[str, EventValue]]
) -> list[tuple[XValue, ...]]:
    """[[A]](x, w[:k]) for k = 0..n: the output vector after every prefix."""
    return [outputs(dt, c) for c in run(dt, x, word)]


# --------------------------------------------------------------------------- worklist


def _seed(dt: DT, x: Sequence[XValue]) -> dict[str, XValue]:
    if len(x) != len(dt.initial):
        raise ValueError(
            f"initial vector has {len(x)} values; the DT has {len(dt.initial)} initial states"
        )
    return dict(zip(dt.initial, x, strict=True))


def _least_fixpoint(
    dt: DT,
    label: str,
    old: Config | None,
    cur: EventValue | None,
    seed: Mapping[str, XValue],
) -> Config:
    """The least c' of Equation (1) for Δ_label, previous config ``old`` (None at init)."""
    index = dt.on(label)
    trs = index.transitions
    pos = dt.state_index

    new: dict[str, XValue] = {q: BOT for q in dt.states}  # val(q')
    tval: list[XValue] = [BOT] * len(trs)  # val(τ)

    def source_value(v: Var) -> XValue:
        if v.primed:
            return new[v.name]
        assert old is not None, "initial transitions read only primed variables"
        return old[pos[v.name]]

    # num_undef(τ): sources still ⊥. Primed ones all start ⊥; unprimed ones are fixed.
    num_undef = [sum(1 for v in t.sources if source_value(v) is BOT) for t in trs]

    # worklist ← Q' ∪ Δσ (states as str, transitions as int)
    worklist: deque[str | int] = deque(dt.states)
    worklist.extend(range(len(trs)))
    queued: set[str | int] = set(worklist)

    def push(item: str | int) -> None:
        if item not in queued:
            queued.add(item)
            worklist.append(item)

    while worklist:
        item = worklist.popleft()
        queued.discard(item)
        if isinstance(item, int):
            t = trs[item]
            if num_undef[item] == 0:
                tval[item] = _apply(t.term, t.sources, source_value, cur)
            if new[t.target] is not TOP:
                push(t.target)
        else:
            q = item
            value = seed.get(q, BOT)
            for k in index.writers.get(q, ()):
                value = union(value, tval[k])
            before = new[q]
            if status_of(value) == status_of(before):
                continue  # values only rise, and a defined value is computed once
            if before is BOT:
                for k in index.readers.get(q, ()):
                    num_undef[k] -= 1
            new[q] = value
            for k in index.readers.get(q, ()):
                if tval[k] is not TOP:
                    push(k)
    return tuple(new[q] for q in dt.states)


def _apply(term, sources, source_value, cur) -> XValue:  # type: ignore[no-untyped-def]
    """[[t]](c'|X): ⊥ if a source is ⊥, else ⊤ if a source is ⊤, else the term's value."""
    env: dict[Var, float] = {}
    conflict = False
    for v in sources:
        value = source_value(v)
        if value is BOT:
            return BOT
        if value is TOP:
            conflict = True
        else:
            env[v] = value
    if conflict:
        return TOP
    return evaluate_term(term, env, cur)
