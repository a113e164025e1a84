"""The DT constructions of seed 003 §5.2 (and the base DTs of §5.3.2).

Each function builds a *new* DT with fresh state names from its components
(via :class:`~dt.builder.Builder`), checks its preconditions when it is built
(:class:`~dt.errors.PreconditionError`), and records in ``facts`` what
Theorem 5.5 proves about the result. Notation: ``A : I ⇉ F`` is a DT with
initial states I and final states F; interfaces are matched *positionally*
(the paper's bijections π, ρ). Sizes are as defined in :mod:`dt.model`; each
docstring states the exact overhead this implementation adds.

Semantic preconditions (restartable, output-synchronized) are read from the
components' ``facts``, which the constructions establish. Where restartability
is not established (a DT read from JSON, say) it is decided (Theorem 5.6), and
a DT that is not restartable is replaced by its restartable form
(:func:`dt.cra.make_restartable`, §5.2.2 last paragraph; logged with its cost),
so concatenation and iteration take any DT that has one. Output
synchronization is required as established; ``assume=True`` skips every check
(the caller takes responsibility for the preconditions).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from .builder import Builder
from .cra import make_restartable
from .errors import PreconditionError
from .functions import DataFunction
from .model import DT, EPS, Facts
from .restartability import check_restartable
from .terms import Term, Var

__all__ = [
    "INPUT",
    "atom",
    "concat",
    "epsilon",
    "extend_initial",
    "identity_atom",
    "identity_epsilon",
    "iterate",
    "parallel",
    "prefix_sum",
    "union",
]

log = logging.getLogger(__name__)

INPUT = Var("x")
"""The variable that stands for the input value in :func:`atom` and :func:`epsilon` terms."""


def _proven(*conditions: bool | None) -> bool | None:
    """True if every condition is established, else unknown (None)."""
    return True if all(c is True for c in conditions) else None


def _require(fact: bool | None, what: str, assume: bool) -> None:
    if fact is not True and not assume:
        raise PreconditionError(
            f"{what} is not established; pass assume=True to take responsibility for it"
        )


def _restartable(a: DT, what: str, assume: bool) -> DT:
    """``a`` if its restartability is proven, assumed or decided (Theorem 5.6); otherwise its
    restartable form (§5.2.2, last paragraph: through a CRA, exponential at worst), which
    raises :class:`PreconditionError` when no restartable DT is equivalent."""
    if a.facts.restartable is True or assume:
        return a
    try:
        if check_restartable(a, max_states=_DECIDE_LIMIT).restartable:
            return a.with_facts(restartable=True)
        conversion = make_restartable(a, max_states=_DECIDE_LIMIT)
    except PreconditionError as err:
        raise PreconditionError(f"{what}: {err}; pass assume=True to take responsibility "
                                f"for it") from None
    log.info("%s: made restartable; %s", what, conversion.summary())
    return conversion.dt


_DECIDE_LIMIT = 200_000
"""Search nodes (and CRA control states) spent deciding or establishing restartability."""


def _same_alphabet(dts: Iterable[DT]) -> tuple[str, ...]:
    dts = list(dts)
    alphabet = dts[0].alphabet
    for d in dts[1:]:
        if d.alphabet != alphabet:
            raise PreconditionError(
                f"components have different alphabets: ({', '.join(alphabet)}) and "
                f"({', '.join(d.alphabet)})"
            )
    return alphabet


def _check_input_term(term: Term, *, allow_cur: bool, what: str) -> None:
    extra = term.variables() - {INPUT}
    if extra:
        names = ", ".join(sorted(str(v) for v in extra))
        raise PreconditionError(f"{what} term {term} may read only x (the input) "
                                f"{'and cur ' if allow_cur else ''}, not {names}")
    if not allow_cur and term.reads_cur():
        raise PreconditionError(f"{what} term {term} cannot read cur (it reads no event)")


# --------------------------------------------------------------------------- base DTs


def atom(alphabet: Iterable[str], tag: str | Iterable[str], term: Term) -> DT:
    """A_atom(σ, t) (§5.3.2): matches a single event (σ, d) and returns t.

    Two states ``i ⇉ f`` and one transition ``(σ, {i}, f', t[x := i])``: the
    output is t with ``cur = d`` and ``x`` = the input value, defined after
    exactly one σ event. ``t`` may read ``cur`` and :data:`INPUT`. Restartable
    (the worked example after Definition 5.4). Size 2 + 2 + size(t).

    ``tag`` may also be several tags: one such transition per tag, the DT
    matching one event of any of them (the same DT as the union of the atoms,
    without the union's copy states). Size 2 + k(2 + size(t)).
    """
    alphabet = tuple(alphabet)
    tags = (tag,) if isinstance(tag, str) else tuple(tag)
    for t in tags:
        if t not in alphabet:
            raise PreconditionError(f"tag {t!r} is not in the alphabet ({', '.join(alphabet)})")
    if not tags or len(set(tags)) != len(tags):
        raise PreconditionError(f"an atom needs distinct tags, got {tags}")
    _check_input_term(term, allow_cur=True, what="atom")
    b = Builder(alphabet)
    i, f = b.state("i"), b.state("f")
    for t in tags:
        b.add(t, [Var(i)], f, term.rename({INPUT: Var(i)}))
    return b.freeze([i], [f], Facts(restartable=True, output_synchronized=True))


def epsilon(alphabet: Iterable[str], term: Term) -> DT:
    """A_eps(t) (§5.3.2): matches the empty word and returns t.

    Two states ``i ⇉ f`` and the epsilon transition ``(ε, {i'}, f', t[x := i'])``:
    f is defined in the very step in which i receives a value, so the output is
    defined on the empty word only. ``t`` may read :data:`INPUT`, not ``cur``.
    Restartable. Size 2 + 2 + size(t).
    """
    alphabet = tuple(alphabet)
    _check_input_term(term, allow_cur=False, what="epsilon")
    b = Builder(alphabet)
    i, f = b.state("i"), b.state("f")
    primed = Var(i, primed=True)
    b.add(EPS, [primed], f, term.rename({INPUT: primed}))
    return b.freeze([i], [f], Facts(restartable=True, output_synchronized=True))


def identity_atom(alphabet: Iterable[str], tag: str | Iterable[str]) -> DT:
    """I_atom(σ) (§5.3.2): like :func:`atom` but returns its input unchanged."""
    return atom(alphabet, tag, INPUT)


def identity_epsilon(alphabet: Iterable[str]) -> DT:
    """I_eps (§5.3.2): like :func:`epsilon` but returns its input unchanged."""
    return epsilon(alphabet, INPUT)


# --------------------------------------------------------------------------- §5.2.1


def extend_initial(a: DT, count: int) -> DT:
    """A with ``count`` extra initial states that nothing reads (§5.2.1, "benignly extend").

    Parallel composition and union pair initial states positionally; a DT
    with fewer of them (a support DT has none) is padded with fresh initial
    states that no transition reads, which changes no output. Facts are kept.
    Size: size(A) + count.
    """
    if count < 0:
        raise PreconditionError(f"cannot add {count} initial states")
    b = Builder(a.alphabet)
    rename = b.embed(a)
    extra = b.states(["x"] * count)
    return b.freeze([*(rename[i] for i in a.initial), *extra], [rename[f] for f in a.final],
                    a.facts)




def parallel(*dts: DT, same_rate: bool = False) -> DT:
    """A1 ∥ … ∥ Ak (§5.2.1): feed the same input to every component.

    ``[[A1 ∥ A2]](x, w) = ([[A1]](x, w), [[A2]](x, w))``: the final states are
    the components' final states, in order. Every component needs the same
    number of initial states |I|; fresh states I are copied into each
    component's initial states by epsilon transitions (so restarts reach
    them). Restartable if every component is (Theorem 5.5). Output-synchronized
    only if the rates are equal: pass ``same_rate=True`` when the caller knows
    that (QRE typing of ``combine``) and every component is output-synchronized.

    Size: Σ size(Ai) + |I| + k·3|I|  (one fresh state and k copies of size 3 per input).
    """
    if not dts:
        raise PreconditionError("parallel composition needs at least one DT")
    alphabet = _same_alphabet(dts)
    arity = len(dts[0].initial)
    for d in dts[1:]:
        if len(d.initial) != arity:
            raise PreconditionError(
                f"parallel components need the same number of initial states: "
                f"{arity} and {len(d.initial)}"
            )
    b = Builder(alphabet)
    inputs = b.states(dts[0].initial)
    finals: list[str] = []
    for d in dts:
        rename = b.embed(d)
        for i, di in zip(inputs, d.initial, strict=True):
            b.copy(i, rename[di])
        finals += [rename[f] for f in d.final]
    synced = len(finals) <= 1 or (same_rate and all(d.facts.output_synchronized for d in dts))
    facts = Facts(
        restartable=_proven(*(d.facts.restartable for d in dts)),
        output_synchronized=True if synced else None,
    )
    return b.freeze(inputs, finals, facts)


def union(a1: DT, a2: DT) -> DT:
    """A1 ⊔ A2 (§5.2.1): ``[[A1 ⊔ A2]](x, w) = [[A1]](x, w) ⊔ [[A2]](x, w)``.

    Fresh initial states are copied into both components, and both
    components' finals are copied into the *same* fresh final states, so two
    defined outputs meet in ⊤. Needs |I1| = |I2| and |F1| = |F2|. Restartable
    and output-synchronized if both components are (Theorem 5.5).

    Size: size(A1) + size(A2) + |I| + |F| + 2·3(|I| + |F|).
    """
    alphabet = _same_alphabet([a1, a2])
    if len(a1.initial) != len(a2.initial) or len(a1.final) != len(a2.final):
        raise PreconditionError(
            f"union needs equal interfaces: {len(a1.initial)} ⇉ {len(a1.final)} and "
            f"{len(a2.initial)} ⇉ {len(a2.final)}"
        )
    b = Builder(alphabet)
    inputs = b.states(a1.initial)
    outputs = b.states(a1.final)
    for d in (a1, a2):
        rename = b.embed(d)
        for i, di in zip(inputs, d.initial, strict=True):
            b.copy(i, rename[di])
        for f, df in zip(outputs, d.final, strict=True):
            b.copy(rename[df], f)
    facts = Facts(
        restartable=_proven(a1.facts.restartable, a2.facts.restartable),
        output_synchronized=_proven(a1.facts.output_synchronized, a2.facts.output_synchronized),
    )
    return b.freeze(inputs, outputs, facts)


def prefix_sum(a: DT, g: DataFunction, *, total: bool = False) -> DT:
    """⊕_G A (§5.2.1): fold G over A's outputs on every prefix.

    ``A : I ⇉ Z`` and ``G : F ∪ Z ⇒ F`` where ``g.inputs`` lists the
    accumulators F first (one per ``g.outputs``, same order), then one input
    per final state of A. The result ``I ∪ F ⇉ F`` (initial vector ``(x, y)``)
    implements::

        out(ε)     = G(y,        [[A]](x, ε))
        out(w·e)   = G(out(w),   [[A]](x, w·e))

    Construction: G as a memoryless DT; A's outputs and the initial
    accumulators are copied into G's inputs by epsilon transitions, and on
    every tag G's previous outputs (unprimed) flow back into its accumulator
    inputs. Restartable (Theorem 5.5) if A is restartable and
    output-synchronized, every output of G is given by a single term, and
    L̄(A) = Σ*, which the caller asserts with ``total=True`` (QRE typing).

    Size: size(A) + size(G-as-DT) + |F| + 3(|Z| + |F|) + 3|F|·|Σ|.
    """
    n_acc, n_z = len(g.outputs), len(a.final)
    if len(g.inputs) != n_acc + n_z:
        raise PreconditionError(
            f"prefix sum: G needs {n_acc} accumulator inputs then {n_z} inputs for A's "
            f"outputs ({n_acc + n_z} in all); it has {len(g.inputs)}"
        )
    b = Builder(a.alphabet)
    rename = b.embed(a)
    gdt = g.to_dt(a.alphabet)
    grename = b.embed(gdt)
    g_in = [grename[q] for q in gdt.initial]
    g_out = [grename[q] for q in gdt.final]
    accumulators = b.states(["y"] * n_acc)
    for k, z in enumerate(a.final):
        b.copy(rename[z], g_in[n_acc + k])
    for j, y in enumerate(accumulators):
        b.copy(y, g_in[j])
        previous = Var(g_out[j])
        for tag in a.alphabet:
            b.add(tag, [previous], g_in[j], previous)
    single_terms = len(g.entries) == n_acc and {e.output for e in g.entries} == set(g.outputs)
    facts = Facts(
        restartable=_proven(a.facts.restartable, a.facts.output_synchronized, total,
                            single_terms),
        output_synchronized=True if n_acc <= 1 else None,
    )
    return b.freeze([*(rename[i] for i in a.initial), *accumulators], g_out, facts)


# --------------------------------------------------------------------------- §5.2.2


def concat(left: DT | DataFunction, right: DT | DataFunction, *, assume: bool = False) -> DT:
    """Concatenation A1 · A2, and its data-function forms A · G and G · A (§5.2.2).

    * ``DT · DT`` (``A1 : I ⇉ Z``, ``A2 : Z ⇉ F``): every output of A1 is
      copied into A2's initial states, on initialization and on every
      step (restarting A2). If A1 is output-synchronized and A2 restartable::

          [[A1 · A2]](x, w) = ⊔ over w = w1 w2 of [[A2]]([[A1]](x, w1), w2)

      A2 that is not restartable is replaced by its restartable form;
      A1's output synchronization is required (``assume=True`` skips both).
      Restartable if A1 is restartable too (Theorem 5.5).
      Size: size(A1) + size(A2) + 3|Z|.
    * ``DT · G`` (``G : Z ⇒ F``): ``[[A · G]](x, w) = G([[A]](x, w))``; no
      precondition (G has no memory). Size: size(A) + size(G-as-DT) + 3|Z|.
    * ``G · DT`` (``G : I ⇒ Z``): ``[[G · A]](x, w) = [[A]](G(x), w)``. Every
      entry of G must have a source, or G would restart A on every step.
      Size: size(G-as-DT) + size(A) + 3|Z|.
    """
    if isinstance(left, DataFunction) and isinstance(right, DataFunction):
        raise PreconditionError("concatenate at least one DT (G · G is just composition)")
    if isinstance(right, DataFunction):
        assert isinstance(left, DT)
        _check_arity(len(left.final), len(right.inputs), "A · G: A's outputs", "G's inputs")
        return _concat(left, right.to_dt(left.alphabet))
    if isinstance(left, DataFunction):
        _check_arity(len(left.outputs), len(right.initial), "G · A: G's outputs",
                     "A's initial states")
        if not left.strict_entries:
            constant = next(e for e in left.entries if not e.sources)
            raise PreconditionError(
                f"G · A: the entry {constant.output} := {constant.term} has no source, so it "
                f"would restart A on every event"
            )
        return _concat(left.to_dt(right.alphabet), right)
    _check_arity(len(left.final), len(right.initial), "A1 · A2: A1's final states",
                 "A2's initial states")
    _require(left.facts.output_synchronized, "A1 · A2: output synchronization of A1", assume)
    return _concat(left, _restartable(right, "A1 · A2: restartability of A2", assume))


def _check_arity(n: int, m: int, what: str, against: str) -> None:
    if n != m:
        raise PreconditionError(f"{what} ({n}) do not match {against} ({m})")


def _concat(a1: DT, a2: DT) -> DT:
    """The construction itself: Δ1 ∪ Δ2 ∪ {(ε, {f1'}, π(f1)', f1')}."""
    _same_alphabet([a1, a2])
    b = Builder(a1.alphabet)
    r1 = b.embed(a1)
    r2 = b.embed(a2)
    for f1, i2 in zip(a1.final, a2.initial, strict=True):
        b.copy(r1[f1], r2[i2])
    facts = Facts(
        restartable=_proven(a1.facts.restartable, a1.facts.output_synchronized,
                            a2.facts.restartable),
        output_synchronized=_proven(a1.facts.output_synchronized, a2.facts.output_synchronized),
    )
    return b.freeze([r1[i] for i in a1.initial], [r2[f] for f in a2.final], facts)


def iterate(a: DT, *, assume: bool = False) -> DT:
    """Iteration A* (§5.2.2), for ``A : I ⇉ I`` restartable and output-synchronized.

    Fresh states I are both initial and final: they are copied into A's
    initial states, and A's final states are copied back into them, so every
    output of A restarts A (a cycle through primed variables)::

        [[A*]](x, w) = ⊔ over w = w1 … wk of [[A]](…[[A]]([[A]](x, w1), w2)…, wk)

    If A produces output on the empty word, the cycle carries a defined value
    round and A* is ⊤ on the empty word (the paper's "always ⊤"; later
    outputs are ⊤ only where that ⊤ still reaches the loop). Restartable and
    output-synchronized when A is (Theorem 5.5). A that is not restartable is
    replaced by its restartable form; ``assume=True`` skips the checks.

    Size: size(A) + |I| + 2·3|I|.
    """
    if len(a.initial) != len(a.final):
        raise PreconditionError(
            f"iteration needs as many final as initial states: {len(a.initial)} ⇉ {len(a.final)}"
        )
    _require(a.facts.output_synchronized, "A*: output synchronization of A", assume)
    a = _restartable(a, "A*: restartability of A", assume)
    b = Builder(a.alphabet)
    loop = b.states(a.initial)
    rename = b.embed(a)
    for q, i, f in zip(loop, a.initial, a.final, strict=True):
        b.copy(q, rename[i])
        b.copy(rename[f], q)
    facts = Facts(
        restartable=_proven(a.facts.restartable, a.facts.output_synchronized),
        output_synchronized=a.facts.output_synchronized,
    )
    return b.freeze(loop, loop, facts)
