"""Conditioning on undefined and conflict values: the "support" DTs of seed 003, §5.2.1.

Given a DT ``A : I → F`` and a data value ``d⋆``, the three DTs

* ``[A = ⊥]``  — outputs ``d⋆`` at f when ``[[A]](x, w)(f) = ⊥``,
* ``[A ∈ D]``  — outputs ``d⋆`` at f when ``[[A]](x, w)(f)`` is defined,
* ``[A = ⊤]``  — outputs ``d⋆`` at f when ``[[A]](x, w)(f) = ⊤``,

and ``⊥`` otherwise, for every all-defined initial vector ``x ∈ D^I`` (by
Theorem 5.2 the status does not depend on which one). They have *no* initial
states and one final state per final state of A, in the same order.

Construction (§5.2.1). Each state q of A becomes three *rails*
``(q,⊥), (q,⋆), (q,⊤)``; after every step exactly one of them is ``d⋆`` and the
other two are ``⊥`` — the one naming q's status. Within one step, q's new status
is a Boolean function of its writers' source statuses, built as a circuit of DT
transitions:

* AND of rails = one transition whose sources are the rails and whose term is
  the constant ``d⋆`` (a lifted term is ⊥ if a source is ⊥, and a rail is never ⊤);
* OR = several transitions into one state. Because ``d⋆ ⊔ d⋆ = ⊤``, every OR is
  over *mutually exclusive* conjunctions: each output rail of a two-input gate
  is the disjunction, over the input status pairs (a, b) that yield it, of
  ``acc.a ∧ x.b`` — exclusive because each input has exactly one rail set. A
  row (column) whose three pairs all yield the same status collapses to the
  rail ``acc.a`` alone (``x.b`` alone), which is still exclusive with the rest.

The status of a lifted term over sources x1..xj is folded source by source with
``lift(a, b) = ⊥ if ⊥ ∈ {a, b} else max(a, b)`` (j = 0 gives ⋆, j = 1 the
source itself); the status of q' is folded over its writers with the union
table (no writer gives ⊥). Primed sources read the rails of the current step,
unprimed sources the rails of the previous step. Circuits are per label: the
writers of q on σ differ per σ (a state whose writers are all epsilon
transitions gets one epsilon circuit instead). A state with no writer on σ
becomes ⊥: its ⊥-rail copies the helper state ``one``, which is ``d⋆`` on every
step (an epsilon transition with no source).

This needs A to be *acyclic* (no within-step dependency cycle, see
:func:`is_acyclic`), otherwise the circuit would contain cycles whose least
fixpoint is not the Boolean function. A cyclic A is first replaced by the
equivalent acyclic :func:`unroll` ("preliminary stage" of §5.2.1).

Sizes (Σ the alphabet, A0 = A with its initial states fixed, size(A0) =
size(A) + 2|I| ≤ 3·size(A)). A two-input gate costs at most 3 states and 27
size units (7 transitions of size ≤ 4, one of size 3). For one state q and one
label, a writer with j sources folds with max(j-1, 0) lift gates and m writers
with m-1 union gates: at most ``Σ_τ size(τ) - 1`` gates, since size(τ) ≥ j + 2;
with no gate the rails are copied (9), with no writer one copy (3). Adding the
3|Q| rails and the helper (3):

* acyclic A: ``size([A = ·]) ≤ 30·(|Σ|+1)·size(A0) + 3 ≤ 90·(|Σ|+1)·size(A) + 3``
  (:data:`SUPPORT_FACTOR` = 30), linear;
* cyclic A: the same applied to ``unroll(A0)``, whose size is at most
  ``L·size(A0)`` with ``L ≤ 2|Q|`` levels (:func:`unroll_levels`), so
  ``size([A = ·]) ≤ 30·(|Σ|+1)·L·size(A0) + 3``, quadratic.

In practice the circuits are smaller (wires that are constant ⊥ are not
built): random DTs stay under 5·(|Σ|+1)·L·size(A0).

:func:`support_size_bound` computes the bound for a given DT.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from .builder import Builder
from .errors import PreconditionError
from .model import DT, EPS, INIT, Facts, Transition
from .terms import Const, Var
from .values import Status

__all__ = [
    "SUPPORT_FACTOR",
    "dependency_cycles",
    "is_acyclic",
    "support",
    "support_size_bound",
    "supports",
    "unroll",
    "unroll_levels",
]

SUPPORT_FACTOR = 30
"""The constant C of ``size([A = ·]) ≤ C·(|Σ|+1)·size(A0) + 3`` for an acyclic A0."""

_U, _D, _C = Status.UNDEFINED, Status.DEFINED, Status.CONFLICT
_STATUSES = (_U, _D, _C)


# --------------------------------------------------------------------------- acyclicity


def _labels(dt: DT) -> tuple[str, ...]:
    """The labels a step can have: init and every tag (eps belongs to all of them)."""
    return (INIT, *dt.alphabet)


def _find_cycle(nodes: Iterable[str], edges: dict[str, set[str]]) -> tuple[str, ...] | None:
    """One cycle of the directed graph, as the states along it, or None (iterative DFS)."""
    color: dict[str, int] = {}  # absent: unvisited, 1: on the stack, 2: done
    for root in nodes:
        if root in color:
            continue
        path: list[str] = [root]
        iters = [iter(sorted(edges.get(root, ())))]
        color[root] = 1
        while iters:
            nxt = next(iters[-1], None)
            if nxt is None:
                color[path.pop()] = 2
                iters.pop()
            elif color.get(nxt) == 1:
                return tuple(path[path.index(nxt):])
            elif nxt not in color:
                color[nxt] = 1
                path.append(nxt)
                iters.append(iter(sorted(edges.get(nxt, ()))))
    return None


def dependency_cycles(dt: DT) -> dict[str, tuple[str, ...]]:
    """Per label with a within-step dependency cycle, one such cycle (§5.2.1).

    The within-step graph of label σ has an edge p → q for every transition of
    Δ_σ (epsilon transitions included) with target q' and a *primed* source
    p'. Unprimed sources are previous-step values and add no edge. The
    returned cycle lists the states along it: ``(q1, …, qk)`` with edges
    q1 → q2 → … → qk → q1. Labels without a cycle are absent.
    """
    out: dict[str, tuple[str, ...]] = {}
    for label in _labels(dt):
        edges: dict[str, set[str]] = {}
        for t in dt.on(label).transitions:
            for v in t.sources:
                if v.primed:
                    edges.setdefault(v.name, set()).add(t.target)
        cycle = _find_cycle(dt.states, edges)
        if cycle is not None:
            out[label] = cycle
    return out


def is_acyclic(dt: DT) -> bool:
    """True if no label has a within-step dependency cycle (see :func:`dependency_cycles`)."""
    return not dependency_cycles(dt)


# --------------------------------------------------------------------------- unrolling


def unroll_levels(dt: DT) -> int:
    """The number of levels :func:`unroll` uses by default: ``max(1, 2·|W|)``.

    W is the set of states that are initial or the target of some transition.
    The paper iterates Equation (1) 2|Q| times; this is the same argument with
    fewer coordinates: the Kleene chain c_0 = ⊥ ≤ c_1 ≤ … of a step only ever
    raises coordinates in W (the others have no seed and no writer, so stay ⊥),
    each at most twice (⊥ → d → ⊤), and a chain that stops rising once is
    stable; so c_{2|W|} is the least fixpoint.
    """
    written = set(dt.initial) | {t.target for t in dt.transitions}
    return max(1, 2 * len(written))


def unroll(dt: DT, levels: int | None = None) -> DT:
    """An equivalent acyclic DT: the "preliminary stage" of the support construction (§5.2.1).

    Each step's least fixpoint is the Kleene iterate c_L of Equation (1), with
    ``c_0 = ⊥`` and ``c_k(q') = x(q) ⊔ ⊔_τ [[t]](c_{k-1})``; L = :func:`unroll_levels`
    suffices (the paper's 2|Q| is the special case W = Q). The result has level
    copies (q, 1..L) of each state. A transition of level k reads its primed
    sources at level k-1 and its unprimed sources at level L (which plays the
    role of q between steps); at level 1 a transition with a primed source
    would read c_0 = ⊥, so it is dropped. The initial vector is part of the
    union at *every* level, so each initial state i gets a fresh initial state
    with epsilon copies into every level copy of i (epsilon, not init, so
    that restarts Δ_{σ,x} behave the same). Final states are the level-L copies,
    in the order of ``dt.final``.

    ``levels`` overrides L (at least 1); fewer levels than needed give a
    different (wrong) DT, which the tests use to show the bound is tight.

    Equivalence holds configuration-wise: the level-L values of the result are
    the configuration of ``dt`` after every step, with or without restart, and
    each step of the result depends only on them. Hence the facts of ``dt``
    (restartable, output-synchronized) carry over.

    Size: ``L·size(dt) + |I|·(3L + 1)`` at most — O(|Q|·size), quadratic.
    """
    n_levels = unroll_levels(dt) if levels is None else levels
    if n_levels < 1:
        raise PreconditionError(f"unroll needs at least one level, got {levels}")
    b = Builder(dt.alphabet)
    # level[k][q] is the copy (q, k); level 0 (c_0 = ⊥) has no states.
    level: list[dict[str, str]] = [{}]
    level += [{q: b.state(f"{q}_l{k}_") for q in dt.states} for k in range(1, n_levels + 1)]
    last = level[n_levels]
    for k in range(1, n_levels + 1):
        for t in dt.transitions:
            if k == 1 and any(v.primed for v in t.sources):
                continue  # it would read c_0 = ⊥
            mapping = {
                v: Var(level[k - 1][v.name], True) if v.primed else Var(last[v.name], False)
                for v in t.sources
            }
            b.add(t.on, mapping.values(), level[k][t.target], t.term.rename(mapping))
    fresh_initial = []
    for q in dt.initial:
        i = b.state(f"{q}_in")
        fresh_initial.append(i)
        for k in range(1, n_levels + 1):
            b.copy(i, level[k][q])
    return b.freeze(fresh_initial, [last[f] for f in dt.final], dt.facts)


# --------------------------------------------------------------------------- circuits

Signal = Var | None
"""A wire of the circuit: a state that is ``d⋆`` or ⊥ (primed: this step; unprimed:
the previous step), or None for the constant ⊥."""

Rails = tuple[Signal, Signal, Signal]
"""The three rails (⊥, ⋆, ⊤) of a status, indexed by :class:`Status`."""


def _lift_status(a: Status, b: Status) -> Status:
    """Status of a lifted term from two partial results: ⊥ wins, then ⊤ (§5.1)."""
    if _U in (a, b):
        return _U
    return max(a, b)


def _union_status(a: Status, b: Status) -> Status:
    """Status of ``a ⊔ b``: ⊥ is the identity, two non-⊥ make ⊤ (§5.1)."""
    if a == _U:
        return b
    if b == _U:
        return a
    return _C


@dataclass(frozen=True)
class _Gate:
    """A two-input status gate as exclusive conjunctions per output rail.

    ``terms[s]`` lists pairs (a, b): a or b is None when that input is
    unconstrained (a whole row or column of the table yields s).
    """

    terms: tuple[tuple[tuple[Status | None, Status | None], ...], ...]

    @classmethod
    def of(cls, fn: Callable[[Status, Status], Status]) -> _Gate:
        out = []
        for s in _STATUSES:
            pairs = {(a, b) for a in _STATUSES for b in _STATUSES if fn(a, b) == s}
            terms: list[tuple[Status | None, Status | None]] = []
            for a in _STATUSES:  # a full row: acc.a alone covers it
                row = {(a, b) for b in _STATUSES}
                if row <= pairs:
                    terms.append((a, None))
                    pairs -= row
            for b in _STATUSES:  # a full, still uncovered column: x.b alone
                col = {(a, b) for a in _STATUSES}
                if col <= pairs:
                    terms.append((None, b))
                    pairs -= col
            terms.extend(sorted(pairs))
            out.append(tuple(terms))
        return cls(tuple(out))


_LIFT_GATE = _Gate.of(_lift_status)
_UNION_GATE = _Gate.of(_union_status)


class _Circuit:
    """Emits the Boolean circuits of one label into a builder.

    Every signal belongs to a *family* (the rails of one status); two different
    rails of one family are never both set, so a conjunction holding both is
    constant ⊥ and is dropped. A wire reused as a gate output keeps its old
    family (conservative: it is then never dropped against the new ones).
    """

    def __init__(self, b: Builder, label: str, d_star: float, one: Var) -> None:
        self.b = b
        self.label = label
        self.term = Const(d_star)
        self.one = one
        self.family: dict[Var, tuple[int, Status]] = {}
        self._families = 0

    def tag(self, rails: Rails) -> None:
        """Register ``rails`` as one new family (signals already in one keep theirs)."""
        fam = self._families
        self._families += 1
        for s, sig in zip(_STATUSES, rails, strict=True):
            if sig is not None and sig not in self.family:
                self.family[sig] = (fam, s)

    def conj(self, signals: Sequence[Signal]) -> frozenset[Var] | None:
        """The sources of an AND gate, or None if it is constant ⊥."""
        if any(s is None for s in signals):
            return None
        seen: dict[int, Status] = {}
        for s in signals:
            fam = self.family.get(s)  # type: ignore[arg-type]
            if fam is not None and seen.setdefault(fam[0], fam[1]) != fam[1]:
                return None  # two rails of one status: never both set
        srcs = frozenset(s for s in signals if s is not None and s != self.one)
        return srcs or frozenset({self.one})

    def disj(self, conjs: Iterable[frozenset[Var] | None], hint: str,
             into: str | None = None) -> Signal:
        """OR of mutually exclusive conjunctions, into ``into`` or a fresh state."""
        live = [c for c in conjs if c is not None]
        assert len(set(live)) == len(live), "an OR repeated a conjunction"
        if into is None:
            if not live:
                return None
            if len(live) == 1 and len(live[0]) == 1:
                return next(iter(live[0]))  # a plain wire: no state needed
            into = self.b.state(hint)
        for c in live:
            self.b.add(self.label, c, into, self.term)
        return Var(into, True)

    def gate(self, gate: _Gate, acc: Rails, x: Rails, hint: str,
             into: tuple[str, str, str] | None = None) -> Rails:
        """The rails of ``gate(acc, x)``; each output rail an exclusive OR of ANDs."""
        out: list[Signal] = []
        for s in _STATUSES:
            conjs = [
                self.conj([acc[a]] if b is None else [x[b]] if a is None else [acc[a], x[b]])
                for a, b in gate.terms[s]
            ]
            out.append(self.disj(conjs, f"{hint}{'udc'[s]}", None if into is None else into[s]))
        rails: Rails = (out[0], out[1], out[2])
        self.tag(rails)
        return rails

    def copy(self, rails: Rails, into: tuple[str, str, str]) -> None:
        """Write each rail of ``rails`` into the matching state of ``into``."""
        for s in _STATUSES:
            self.disj([self.conj([rails[s]])], "", into[s])


@dataclass(frozen=True)
class _RailsDT:
    """The built circuits: the builder and the three rail states of every state."""

    builder: Builder
    rails: dict[str, tuple[str, str, str]]
    final: tuple[str, ...]


def _fix_initial(dt: DT, d_star: float) -> DT:
    """A0: the initial states fed ``d⋆`` by init transitions; no initial states left."""
    extra = tuple(Transition(INIT, frozenset(), q, Const(d_star)) for q in dt.initial)
    return DT(dt.alphabet, dt.states, (), dt.final, dt.transitions + extra)


def _build_rails(dt: DT, d_star: float) -> _RailsDT:
    a0 = _fix_initial(dt, d_star)
    if not is_acyclic(a0):
        a0 = unroll(a0)
    b = Builder(a0.alphabet)
    one = b.state("one")
    b.add(EPS, (), one, Const(d_star))
    one_var = Var(one, True)
    rails = {q: (b.state(f"{q}_u"), b.state(f"{q}_d"), b.state(f"{q}_c")) for q in a0.states}
    # States whose writers are all epsilon transitions (one pass: DTs can be large).
    eps_only = set(a0.states) - {t.target for t in a0.transitions if t.on != EPS}
    for label in (EPS, *_labels(a0)):
        circuit = _Circuit(b, label, d_star, one_var)
        for q in a0.states:  # each state's rails, primed and unprimed, are families
            circuit.tag(_rails_of(rails[q], True))
            circuit.tag(_rails_of(rails[q], False))
        index = a0.on(INIT if label == EPS else label)
        for q in a0.states:
            if (label == EPS) != (q in eps_only):
                continue
            writers = [index.transitions[k] for k in index.writers.get(q, ())]
            _emit_state(circuit, writers, rails, q)
    return _RailsDT(b, rails, a0.final)


def _rails_of(states: tuple[str, str, str], primed: bool) -> Rails:
    return (Var(states[0], primed), Var(states[1], primed), Var(states[2], primed))


def _emit_state(circuit: _Circuit, writers: list[Transition],
                rails: dict[str, tuple[str, str, str]], q: str) -> None:
    """The circuit for q's new rails on one label, written into ``rails[q]``.

    The last gate writes straight into q's rails; when there is no gate at all
    (one writer with at most one source, or no writer), the rails are copied.
    """
    into = rails[q]
    if not writers:
        circuit.copy((circuit.one, None, None), into)
        return
    # Each writer's status is a fold of lift gates over its sources; then the
    # writers' statuses are folded with union gates.
    folds: list[list[Rails]] = []
    for t in writers:
        sources = sorted(t.sources, key=lambda v: (v.name, v.primed))
        folds.append([_rails_of(rails[v.name], v.primed) for v in sources]
                     or [(None, circuit.one, None)])
    n_gates = sum(len(f) - 1 for f in folds) + len(folds) - 1
    done = 0

    def target() -> tuple[str, str, str] | None:
        nonlocal done
        done += 1
        return into if done == n_gates else None

    statuses: list[Rails] = []
    for w, fold in enumerate(folds):
        acc = fold[0]
        for x in fold[1:]:
            acc = circuit.gate(_LIFT_GATE, acc, x, f"{q}_t{w}_", target())
        statuses.append(acc)
    acc = statuses[0]
    for x in statuses[1:]:
        acc = circuit.gate(_UNION_GATE, acc, x, f"{q}_or_", target())
    if n_gates == 0:
        circuit.copy(acc, into)


# --------------------------------------------------------------------------- public


def _check(kind: object, d_star: object) -> float:
    if isinstance(d_star, bool) or not isinstance(d_star, int | float):
        raise PreconditionError(
            f"support needs a defined data value d_star (a float), got {d_star!r}")
    if kind is not None and not isinstance(kind, Status):
        raise PreconditionError(
            f"support kind must be a dt.values.Status (UNDEFINED, DEFINED, CONFLICT), "
            f"got {kind!r}")
    return float(d_star)


def _freeze(built: _RailsDT, kind: Status) -> DT:
    final = [built.rails[f][kind] for f in built.final]
    # Not restartable (§5.2.2: support is the one construction that does not
    # preserve it); a DT with at most one output is output-synchronized.
    facts = Facts(restartable=None, output_synchronized=True if len(final) <= 1 else None)
    return built.builder.freeze((), final, facts)


def support(dt: DT, kind: Status, d_star: float = 1.0) -> DT:
    """``[A = ⊥]``, ``[A ∈ D]`` or ``[A = ⊤]`` (``kind`` UNDEFINED, DEFINED, CONFLICT), §5.2.1.

    The result has no initial states and one final state per final state of
    ``dt`` (same order). After every prefix w its output at f is exactly
    ``d_star`` if ``[[dt]](x, w)(f)`` has status ``kind`` for all-defined x,
    and ⊥ otherwise. See the module docstring for the construction and
    :func:`support_size_bound` for its size (linear if ``dt`` is acyclic,
    quadratic otherwise).

    Preconditions (:class:`~dt.errors.PreconditionError`): ``kind`` is a
    :class:`~dt.values.Status`; ``d_star`` is a float (a defined value; NaN
    is allowed and then is the output). Any DT is accepted.
    Facts: not restartable (None); output-synchronized when |F| ≤ 1.
    """
    d = _check(kind, d_star)
    return _freeze(_build_rails(dt, d), kind)


def supports(dt: DT, d_star: float = 1.0) -> tuple[DT, DT, DT]:
    """``([A = ⊥], [A ∈ D], [A = ⊤])`` from one circuit build (same states in all three)."""
    d = _check(None, d_star)
    built = _build_rails(dt, d)
    return (_freeze(built, _U), _freeze(built, _D), _freeze(built, _C))


def support_size_bound(dt: DT) -> int:
    """The documented upper bound on ``size(support(dt, ·))`` (module docstring).

    ``C·(|Σ|+1)·S + 3`` with C = :data:`SUPPORT_FACTOR`, where S = size(A0) if
    A0 (dt with its initial states fixed) is acyclic, else ``L·size(A0)`` with
    L = :func:`unroll_levels` (≤ 2|Q|).
    """
    a0 = _fix_initial(dt, 1.0)
    s = a0.size
    if not is_acyclic(a0):
        s *= unroll_levels(a0)
    return SUPPORT_FACTOR * (len(dt.alphabet) + 1) * s + 3
