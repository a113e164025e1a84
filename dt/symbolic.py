"""Symbolic evaluation of DTs: the value of every register as a term over the data (beyond §5.1).

Seed 003, Theorem 5.2: the *status* of every state after a tag string does
not depend on the data. So along a fixed tag string each defined state holds
the value of exactly one term over the data of the events (and of the
initial vector): the term of the one transition that defines it (Equation 1:
two defined contributions would make it ⊤), with its sources replaced by the
terms they hold. This module computes those terms. The value analyses of
:mod:`dt.value_equivalence` compare them.

Terms are *hash-consed* in a :class:`TermTable`: a node is an int id, equal
nodes get the same id, so a term is a DAG whose size grows with the work done,
not with the (possibly exponential) size of the tree it stands for. Every node
is normalized when it is built, by rewrites that are **exact in IEEE float64**
(up to the sign and payload of a NaN, which no operation of
:data:`~dt.terms.OPS` observes), so equal ids mean equal values for all data:

* constant folding, with the very functions the reference evaluator applies;
* ``fst(a, b) = a``, ``snd(a, b) = b``; ``if(c, a, a) = a``; ``if`` on a constant;
* commutativity of ``+ * == != && ||`` (arguments ordered by id);
  ``a > b = b < a``, ``a >= b = b <= a``;
* ``a * 1 = 1 * a = a``, ``a / 1 = a``, ``a - 0 = a``, ``a + -0.0 = a``, ``--a = a``.

Not applied, because they are false on floats: associativity and
distributivity (rounding), ``a + 0 = a`` (``-0.0 + 0 = 0.0``), ``a - a = 0``
(``inf - inf`` is NaN), commutativity of ``min``/``max`` (signed zeros). Two
terms with different ids may still be equal; :mod:`dt.value_equivalence`
then searches data that separates them.

A symbolic configuration (:data:`SymConfig`) holds per state a node id, or
:data:`SYM_BOT` / :data:`SYM_TOP`. :class:`SymbolicEvaluator` steps one DT:
statuses come from the unit evaluator (:mod:`dt.projection`), terms from the
unique defining contribution. Cost per step: O(size) node constructions.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence

from .model import DT, INIT, Transition
from .projection import UnitConfig, unit_evaluator
from .terms import OPS, Apply, Const, Cur, Term, Var
from .values import Status

__all__ = [
    "SYM_BOT",
    "SYM_TOP",
    "SymConfig",
    "SymbolicEvaluator",
    "TermTable",
    "data_symbol",
    "same_value",
]

SYM_BOT = -1
"""A ⊥ entry of a :data:`SymConfig`."""
SYM_TOP = -2
"""A ⊤ entry of a :data:`SymConfig`."""

SymConfig = tuple[int, ...]
"""Per state (in ``dt.states`` order) a node id of a :class:`TermTable`, SYM_BOT or SYM_TOP."""

_COMMUTATIVE = frozenset({"add", "mul", "eq", "ne", "and", "or"})
_MIRRORED = {"gt": "lt", "ge": "le"}


def same_value(a: float, b: float) -> bool:
    """Equality of defined values: bit for bit, except that all NaNs are one value.

    >>> same_value(0.0, -0.0), same_value(math.nan, -math.nan)
    (False, True)
    """
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


def data_symbol(position: int, field: str | None) -> str:
    """The symbol of the data of event ``position`` (1-based), or of one of its fields."""
    return f"d{position}" if field is None else f"d{position}.{field}"


def _const_key(value: float) -> str:
    return "nan" if math.isnan(value) else float(value).hex()


class TermTable:
    """Hash-consed, normalized terms (see the module docstring).

    A node is ``("c", value)`` (a constant), ``("s", name)`` (a symbol: event
    data or an unknown register value) or ``("a", op, args)``. Children always
    have smaller ids than their parents.

    >>> t = TermTable()
    >>> x, y = t.symbol("x"), t.symbol("y")
    >>> t.apply("add", (x, y)) == t.apply("add", (y, x))
    True
    >>> t.apply("snd", (x, t.apply("mul", (y, t.const(1.0))))) == y
    True
    >>> t.show(t.apply("gt", (x, t.apply("add", (y, t.const(0.0))))))
    'y + 0 < x'
    """

    def __init__(self) -> None:
        self._nodes: list[tuple] = []
        self._ids: dict[tuple, int] = {}

    def clear(self) -> None:
        """Forget every node (ids restart at 0); evaluators sharing the table stay usable."""
        self._nodes.clear()
        self._ids.clear()

    def __len__(self) -> int:
        return len(self._nodes)

    def node(self, i: int) -> tuple:
        return self._nodes[i]

    def _intern(self, key: tuple, node: tuple) -> int:
        i = self._ids.get(key)
        if i is None:
            i = self._ids[key] = len(self._nodes)
            self._nodes.append(node)
        return i

    def const(self, value: float) -> int:
        value = math.nan if math.isnan(value) else float(value)
        return self._intern(("c", _const_key(value)), ("c", value))

    def symbol(self, name: str) -> int:
        return self._intern(("s", name), ("s", name))

    def constant(self, i: int) -> float | None:
        """The value of node ``i`` if it is a constant, else None."""
        node = self._nodes[i]
        return node[1] if node[0] == "c" else None

    def _is_const(self, i: int, value: float) -> bool:
        c = self.constant(i)
        return c is not None and _const_key(c) == _const_key(value)

    def apply(self, op: str, args: Sequence[int]) -> int:
        """The normalized node of ``op(args)``."""
        args = tuple(args)
        if op in ("fst", "snd"):
            return args[0] if op == "fst" else args[1]
        consts = [self.constant(a) for a in args]
        if all(c is not None for c in consts):
            return self.const(float(OPS[op].fn(*consts)))
        simpler = self._identity(op, args, consts)
        if simpler is not None:
            return simpler
        if op in _MIRRORED:
            op, args = _MIRRORED[op], (args[1], args[0])
        elif op in _COMMUTATIVE and args[0] > args[1]:
            args = (args[1], args[0])
        return self._intern(("a", op, args), ("a", op, args))

    def _identity(self, op: str, args: tuple[int, ...],
                  consts: list[float | None]) -> int | None:
        """An exact algebraic identity that removes the node, if one applies."""
        if op == "if":
            _cond, then, other = args
            if consts[0] is not None:
                return then if consts[0] != 0 else other
            return then if then == other else None
        if op == "neg":
            inner = self._nodes[args[0]]
            return inner[2][0] if inner[0] == "a" and inner[1] == "neg" else None
        if op == "mul":
            if self._is_const(args[1], 1.0):
                return args[0]
            if self._is_const(args[0], 1.0):
                return args[1]
        if op == "div" and self._is_const(args[1], 1.0):
            return args[0]
        if op == "sub" and self._is_const(args[1], 0.0):
            return args[0]
        if op == "add":
            if self._is_const(args[1], -0.0):
                return args[0]
            if self._is_const(args[0], -0.0):
                return args[1]
        return None

    def from_term(self, term: Term, var: Callable[[Var], int],
                  cur: Callable[[str | None], int]) -> int:
        """The node of a DT term, with its variables and ``cur`` given as nodes."""
        if isinstance(term, Const):
            return self.const(term.value)
        if isinstance(term, Var):
            return var(term)
        if isinstance(term, Cur):
            return cur(term.field)
        assert isinstance(term, Apply)
        return self.apply(term.op, [self.from_term(a, var, cur) for a in term.args])

    def symbols(self, roots: Iterable[int]) -> set[str]:
        """The symbols the nodes ``roots`` depend on."""
        return {self._nodes[i][1] for i in self._reachable(roots) if self._nodes[i][0] == "s"}

    def _reachable(self, roots: Iterable[int]) -> list[int]:
        """The nodes below ``roots``, in increasing id order (children first)."""
        seen: set[int] = set()
        stack = [r for r in roots if r >= 0]
        while stack:
            i = stack.pop()
            if i in seen:
                continue
            seen.add(i)
            node = self._nodes[i]
            if node[0] == "a":
                stack.extend(node[2])
        return sorted(seen)

    def evaluate(self, roots: Sequence[int], assignment: Mapping[str, float]) -> list[float]:
        """The values of ``roots`` when each symbol has its value in ``assignment``.

        Each shared node is computed once (children have smaller ids). Raises
        KeyError for a symbol without a value.
        """
        return self.evaluator(roots)(assignment)

    def evaluator(self, roots: Sequence[int]) -> Callable[[Mapping[str, float]], list[float]]:
        """:meth:`evaluate` for fixed ``roots``, compiled once: a straight-line program over
        the nodes below them, children first (cheap to run on many assignments)."""
        order = self._reachable(roots)
        slot = {i: k for k, i in enumerate(order)}
        program: list[tuple] = []
        for i in order:
            node = self._nodes[i]
            if node[0] == "a":
                program.append(("a", OPS[node[1]].fn, tuple(slot[a] for a in node[2])))
            else:
                program.append(node)
        outputs = [slot[r] for r in roots]

        def run(assignment: Mapping[str, float]) -> list[float]:
            values: list[float] = []
            for kind, x, *args in program:
                if kind == "c":
                    values.append(x)
                elif kind == "s":
                    values.append(float(assignment[x]))
                else:
                    values.append(float(x(*(values[k] for k in args[0]))))
            return [values[k] for k in outputs]

        return run

    def show(self, i: int, limit: int = 400) -> str:
        """A node as TERM text (symbols as names), cut with ``…`` beyond ``limit`` characters."""
        text = str(self._to_term(i, [limit]))
        return text if len(text) <= limit else text[:limit] + "…"

    def _to_term(self, i: int, budget: list[int]) -> Term:
        budget[0] -= 1
        node = self._nodes[i]
        if node[0] == "c":
            return Const(node[1])
        if node[0] == "s" or budget[0] < 0:
            return Var(node[1]) if node[0] == "s" else Var("…")
        return Apply(node[1], tuple(self._to_term(a, budget) for a in node[2]))


class SymbolicEvaluator:
    """Symbolic steps of one DT into a shared :class:`TermTable` (see the module docstring)."""

    def __init__(self, dt: DT, table: TermTable) -> None:
        self.dt = dt
        self.table = table
        self._unit = unit_evaluator(dt)
        self._pos = dt.state_index
        self._initial = {self._pos[q]: k for k, q in enumerate(dt.initial)}
        self._final = tuple(self._pos[q] for q in dt.final)
        # Per label and state position: the transitions that write the state.
        self._writers = {label: self._writers_on(label) for label in (INIT, *dt.alphabet)}

    def _writers_on(self, label: str) -> tuple[tuple[Transition, ...], ...]:
        index = self.dt.on(label)
        return tuple(tuple(index.transitions[k] for k in index.writers.get(q, ()))
                     for q in self.dt.states)

    def initial(self, x: Sequence[int]) -> SymConfig:
        """Δ_i on an initial vector of node ids (or SYM_BOT / SYM_TOP), one per initial state."""
        if len(x) != len(self.dt.initial):
            raise ValueError(f"initial vector has {len(x)} entries; the DT has "
                             f"{len(self.dt.initial)} initial states")
        statuses = self._unit.initial([_status(v) for v in x])
        return self._build(INIT, None, statuses, x, lambda field: _no_cur(field))

    def step(self, config: SymConfig, tag: str, cur: Callable[[str | None], int]) -> SymConfig:
        """Δ_tag on a symbolic configuration; ``cur(field)`` gives the event's data as a node."""
        statuses = self._unit.step(tuple(_status(v) for v in config), tag)
        return self._build(tag, config, statuses, None, cur)

    def outputs(self, config: SymConfig) -> tuple[int, ...]:
        """The output entries (node ids, SYM_BOT or SYM_TOP) in the order of ``dt.final``."""
        return tuple(config[p] for p in self._final)

    def _build(self, label: str, old: SymConfig | None, statuses: UnitConfig,
               seed: Sequence[int] | None, cur: Callable[[str | None], int]) -> SymConfig:
        defining = self._defining(label, old, statuses, seed)
        new: dict[int, int] = {}
        for p, s in enumerate(statuses):
            if s not in (_BOT, _TOP) and p not in new:
                self._resolve(p, defining, old, seed, cur, new)
        return tuple(SYM_BOT if s == _BOT else SYM_TOP if s == _TOP else new[p]
                     for p, s in enumerate(statuses))

    def _defining(self, label: str, old: SymConfig | None, statuses: UnitConfig,
                  seed: Sequence[int] | None) -> dict[int, Transition | None]:
        """Per defined state, its one non-⊥ contribution: a transition, or None for the seed.

        The statuses are final, so a contribution is non-⊥ iff all its sources
        are non-⊥; a defined state has exactly one (Equation 1: two make ⊤).
        """
        pos, writers = self._pos, self._writers[label]

        def source_status(v: Var) -> int:
            return statuses[pos[v.name]] if v.primed else _status(old[pos[v.name]])  # type: ignore[index]

        defining: dict[int, Transition | None] = {}
        for p, s in enumerate(statuses):
            if s in (_BOT, _TOP):
                continue
            found: list[Transition | None] = [
                t for t in writers[p] if all(source_status(v) != _BOT for v in t.sources)]
            if seed is not None and p in self._initial and seed[self._initial[p]] != SYM_BOT:
                found.append(None)
            if len(found) != 1:
                raise AssertionError(f"state {self.dt.states[p]} is defined with "
                                     f"{len(found)} non-⊥ contributions")
            defining[p] = found[0]
        return defining

    def _resolve(self, p: int, defining: Mapping[int, Transition | None], old: SymConfig | None,
                 seed: Sequence[int] | None, cur: Callable[[str | None], int],
                 new: dict[int, int]) -> None:
        """The node of defined state ``p`` and of the primed states it reads, into ``new``.

        Depth first with an explicit stack: chains of primed copies can be far
        longer than Python's recursion limit. The defining transitions of
        defined states never form a cycle (a cycle would be ⊥ or ⊤).
        """
        pos = self._pos
        stack, entered = [p], set()
        while stack:
            q = stack[-1]
            if q in new:
                stack.pop()
                continue
            t = defining[q]
            if t is None:
                new[q] = seed[self._initial[q]]  # type: ignore[index]
                stack.pop()
                continue
            missing = [pos[v.name] for v in t.sources if v.primed and pos[v.name] not in new]
            if missing:
                if q in entered:
                    raise AssertionError("a defined state depends on itself within one step")
                entered.add(q)
                stack.extend(missing)
                continue

            def var(v: Var) -> int:
                return new[pos[v.name]] if v.primed else old[pos[v.name]]  # type: ignore[index]

            new[q] = self.table.from_term(t.term, var, cur)
            stack.pop()


_BOT, _TOP = int(Status.UNDEFINED), int(Status.CONFLICT)


def _status(entry: int) -> int:
    return _BOT if entry == SYM_BOT else _TOP if entry == SYM_TOP else int(Status.DEFINED)


def _no_cur(field: str | None) -> int:
    raise AssertionError("an initial transition read cur")
