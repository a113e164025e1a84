"""Brute-force semantics of the §5.2 constructions (seed 003), the oracles of test_constructions.

Each function computes, for components given as DTs (and data functions), an
initial vector ``x`` and a data word ``w``, the output vector after *every*
prefix of ``w`` (the empty prefix first) — exactly the equation the paper
states for the construction, evaluated by running the *components* with the
reference interpreter (:mod:`dt.reference`) and combining their outputs with
:func:`dt.values.union`. Nothing here calls :mod:`dt.constructions`, and data
functions are applied by :func:`apply_function`, written from the definition
in §5.2.1 rather than with ``DataFunction.apply``, so the oracles are
independent of the code under test.

Unions are multiset unions: two distinct splits (factorizations, threads)
that give the same value still meet in ⊤; nothing is deduplicated.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from dt.functions import DataFunction
from dt.model import DT
from dt.reference import evaluate, initial_config, outputs, step
from dt.terms import EventValue, Var, evaluate_term
from dt.values import BOT, TOP, XValue, union

Vector = tuple[XValue, ...]
Outputs = list[Vector]
Word = Sequence[tuple[str, EventValue]]

__all__ = [
    "apply_function",
    "concat_outputs",
    "first_difference",
    "function_then_outputs",
    "iterate_outputs",
    "parallel_outputs",
    "prefix_sum_outputs",
    "restarted_outputs",
    "then_function_outputs",
    "threaded_outputs",
    "union_outputs",
    "union_vectors",
]


def union_vectors(a: Sequence[XValue], b: Sequence[XValue]) -> Vector:
    """Componentwise ``a ⊔ b``."""
    assert len(a) == len(b), (a, b)
    return tuple(union(p, q) for p, q in zip(a, b, strict=True))


def _bottom(n: int) -> Vector:
    return (BOT,) * n


# --------------------------------------------------------------------------- data functions


def _entry_value(sources: frozenset[str], term, env: dict[str, XValue]) -> XValue:  # type: ignore[no-untyped-def]
    """A term strict in ``sources`` (§5.1, Equation (1)): ⊥ if any is ⊥, else ⊤ if any is ⊤."""
    values = [env[s] for s in sources]
    if any(v is BOT for v in values):
        return BOT
    if any(v is TOP for v in values):
        return TOP
    return evaluate_term(term, {Var(s): env[s] for s in sources})


def apply_function(g: DataFunction, x: Sequence[XValue]) -> Vector:
    """[[G]](x) (§5.2.1): each output is the union of the values of its terms."""
    assert len(x) == len(g.inputs)
    env = dict(zip(g.inputs, x, strict=True))
    out = dict.fromkeys(g.outputs, BOT)
    for e in g.entries:
        out[e.output] = union(out[e.output], _entry_value(e.sources, e.term, env))
    return tuple(out[o] for o in g.outputs)


# --------------------------------------------------------------------------- §5.2.1


def parallel_outputs(dts: Sequence[DT], x: Sequence[XValue], word: Word) -> Outputs:
    """[[A1 ∥ … ∥ Ak]](x, w) = ([[A1]](x, w), …, [[Ak]](x, w))."""
    runs = [evaluate(d, x, word) for d in dts]
    return [tuple(v for run in runs for v in run[k]) for k in range(len(word) + 1)]


def union_outputs(a1: DT, a2: DT, x: Sequence[XValue], word: Word) -> Outputs:
    """[[A1 ⊔ A2]](x, w) = [[A1]](x, w) ⊔ [[A2]](x, w)."""
    r1, r2 = evaluate(a1, x, word), evaluate(a2, x, word)
    return [union_vectors(p, q) for p, q in zip(r1, r2, strict=True)]


def prefix_sum_outputs(
    a: DT, g: DataFunction, x: Sequence[XValue], y: Sequence[XValue], word: Word
) -> Outputs:
    """⊕_G A: out(ε) = G(y, A(x, ε)); out(w·e) = G(out(w), A(x, w·e))."""
    out: Outputs = []
    acc = tuple(y)
    for z in evaluate(a, x, word):
        acc = apply_function(g, (*acc, *z))
        out.append(acc)
    return out


# --------------------------------------------------------------------------- §5.2.2


def concat_outputs(left: DT, right: DT, x: Sequence[XValue], word: Word) -> Outputs:
    """[[A1 · A2]](x, w) = ⊔ over splits w = w1 w2 of [[A2]]([[A1]](x, w1), w2).

    A2 is started from A1's output after every prefix w1 = w[:k] (⊥ and ⊤
    entries included) and run on the rest of the word; the output after the
    prefix w[:n] is the union over k ≤ n of that run's output after w[k:n].
    """
    y1 = evaluate(left, x, word)
    out = [_bottom(len(right.final))] * (len(word) + 1)
    for k in range(len(word) + 1):
        run = evaluate(right, y1[k], word[k:])
        for j, y in enumerate(run):
            out[k + j] = union_vectors(out[k + j], y)
    return out


def then_function_outputs(a: DT, g: DataFunction, x: Sequence[XValue], word: Word) -> Outputs:
    """[[A · G]](x, w) = G([[A]](x, w))."""
    return [apply_function(g, y) for y in evaluate(a, x, word)]


def function_then_outputs(g: DataFunction, a: DT, x: Sequence[XValue], word: Word) -> Outputs:
    """[[G · A]](x, w) = [[A]](G(x), w)."""
    return evaluate(a, apply_function(g, x), word)


def iterate_outputs(a: DT, x: Sequence[XValue], word: Word) -> Outputs:
    """[[A*]](x, w) = ⊔ over factorizations w = w1 … wk (non-empty pieces) of A(…A(x, w1)…, wk).

    k = 0 contributes x on the empty word. Computed as
    ``R(y, s)[e] = [e = s]·y ⊔ ⊔_{s < j ≤ e} R(A(y, w[s:j]), j)[e]``, the
    union over factorizations of ``w[s:e]`` started from y; one run of A from
    position s gives A(y, w[s:j]) for every j at once. Memoized on (y, s)
    (the memo returns the same multiset, so repeated use keeps multiplicities).
    Exact when A is ⊥ on the empty word for every input (otherwise the paper
    says A* is ⊤, tested separately).
    """
    n = len(word)
    memo: dict[tuple[Vector, int], list[Vector]] = {}

    def run_from(y: Vector, s: int) -> list[Vector]:
        key = (y, s)
        if key in memo:
            return memo[key]
        out = [_bottom(len(y))] * (n + 1)
        out[s] = y
        for j, z in enumerate(evaluate(a, y, word[s:])):
            if j == 0:
                continue  # pieces are non-empty
            rest = run_from(tuple(z), s + j)
            for e in range(s + j, n + 1):
                out[e] = union_vectors(out[e], rest[e])
        memo[key] = out
        return out

    return run_from(tuple(x), 0)


# --------------------------------------------------------------------------- Definition 5.4


def restarted_outputs(
    dt: DT, x0: Sequence[XValue], word: Word, restarts: Sequence[Sequence[XValue]]
) -> Outputs:
    """One configuration updated with Δ_{σ,x}: restart ``restarts[k]`` with event k."""
    config = initial_config(dt, x0)
    out = [outputs(dt, config)]
    for (tag, cur), r in zip(word, restarts, strict=True):
        config = step(dt, config, tag, cur, restart=r)
        out.append(outputs(dt, config))
    return out


def threaded_outputs(
    dt: DT, x0: Sequence[XValue], word: Word, restarts: Sequence[Sequence[XValue]]
) -> Outputs:
    """The threads that Definition 5.4 says the single configuration simulates.

    Thread 0 is started with ``x0``; at event k every thread is updated with
    plain Δ_σ and a new thread Δ_i(restarts[k]) joins. The output after each
    event is the union of the threads' outputs (property (iii)).
    """
    threads = [initial_config(dt, x0)]
    out = [_union_of_outputs(dt, threads)]
    for (tag, cur), r in zip(word, restarts, strict=True):
        threads = [step(dt, c, tag, cur) for c in threads]
        threads.append(initial_config(dt, r))
        out.append(_union_of_outputs(dt, threads))
    return out


def _union_of_outputs(dt: DT, configs: Sequence[tuple[XValue, ...]]) -> Vector:
    acc = _bottom(len(dt.final))
    for c in configs:
        acc = union_vectors(acc, outputs(dt, c))
    return acc


def first_difference(
    got: Sequence[Sequence[XValue]], want: Sequence[Sequence[XValue]],
    same: Callable[[Sequence[XValue], Sequence[XValue]], bool],
) -> int | None:
    """The first prefix length at which two output lists differ, or None."""
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        if not same(g, w):
            return k
    return None
