"""A regular streaming algorithm → a DT, in linear time (seed 003, Theorem 5.11).

The proof sketch's encoding: a data variable is a DT state that is always
defined; a Boolean variable b is two states, ``b_t`` defined iff b is true
and ``b_f`` iff it is false. The programs become DT transitions in one pass,
in single-assignment form:

* every assignment makes a new state (a *version* of its variable), written
  by one transition that reads the versions its expression reads (primed:
  values of this step) and the state of the current *path condition*;
  ``cur`` (and each ``cur.FIELD``) is read from a state set on every tag;
* a path condition is a state defined iff control reaches there: the root is
  ``init_on`` (defined at initialization) or ``step_on`` (on every event); an
  ``if c`` makes ``pc ∧ c`` and ``pc ∧ ¬c`` (one transition each); after the
  ``if``, a variable assigned in a branch gets a merged version fed by both
  branches' versions — exactly one is defined, so the merge is not ⊤ (a
  branch that left it alone contributes the old version guarded by its own
  path condition);
* Boolean operations on pairs: ``not`` swaps them; ``a and b`` is true from
  {a_t, b_t}, false from {a_f} or {a_t, b_f} — disjoint, so one contribution
  is defined; ``or`` dually. A tag test ``tag in S`` is true on the tags of S
  and false on the others (sourceless transitions per tag);
* the variables' values between events are states ``v`` (``v_t``/``v_f``),
  copied from the last version of init (label ``init``) or of update (``eps``:
  update's versions are ⊥ at initialization); update starts from a copy of
  them per tag (the one place a transition reads the previous step);
* the output ``y`` is the result term over the new values, read together with
  the flag's true state.

The regularity restriction is what makes this work: every condition is a
Boolean of the tags, hence a pair of states whose definedness is the
condition, with no data test that a DT could not express (Theorem 5.10).

Size: linear in the algorithm, plus one copy per tag and variable, and one
transition per tag for ``cur`` (per field read) and per distinct tag test:
the DT reads the previous step and the event only through a tag's
transitions. The updates themselves are ``eps`` transitions guarded by
``step_on``, so they are not repeated per tag.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dt.boolean import Both, Either, Neg, Truth
from dt.builder import Builder
from dt.model import DT, EPS, INIT
from dt.terms import Apply, Const, Cur, Term, Var

from .ir import Algorithm, Assign, BoolExpr, BVar, If, Statement, TagIn

__all__ = ["algorithm_to_dt"]

_UNIT = Const(0.0)

Pair = tuple[str | None, str | None]
"""A Boolean: the state defined iff true, the one defined iff false (None: never)."""

Version = str | Pair


@dataclass
class _Program:
    """One program's compilation context: its label, its root path condition, tag tests."""

    b: Builder
    label: str  # INIT or EPS
    root: str
    alphabet: tuple[str, ...]
    tag_tests: dict[frozenset[str], Pair]
    cur_states: dict[str | None, str] = field(default_factory=dict)

    def guard(self, sources: list[str | None], hint: str) -> str | None:
        """A state defined iff all ``sources`` are (None if one never is)."""
        return self.either([sources], hint)

    def either(self, options: list[list[str | None]], hint: str,
               values: list[str | None] | None = None) -> str | None:
        """A state defined iff one of the (disjoint) source sets is all defined; its value
        that option's ``values`` state (the unit without ``values``: a Boolean's state)."""
        values = values or [None] * len(options)
        live = [(o, v) for o, v in zip(options, values, strict=True)
                if all(s is not None for s in o)]
        if not live:
            return None
        q = self.b.state(hint)
        for sources, value in live:
            term = _UNIT if value is None else Var(value, True)
            self.b.add(self.label, [Var(s, True) for s in sources], q, term)  # type: ignore[arg-type]
        return q

    def boolean(self, e: BoolExpr, env: dict[str, Version]) -> Pair:
        if isinstance(e, Truth):
            return (self.root, None) if e.value else (None, self.root)
        if isinstance(e, BVar):
            return env[e.name]  # type: ignore[return-value]
        if isinstance(e, Neg):
            t, f = self.boolean(e.arg, env)
            return f, t
        if isinstance(e, TagIn):
            return self.tag_test(e.tags)
        (lt, lf), (rt, rf) = self.boolean(e.left, env), self.boolean(e.right, env)
        if isinstance(e, Both):
            return (self.guard([lt, rt], "and_t"), self.either([[lf], [lt, rf]], "and_f"))
        assert isinstance(e, Either)
        return (self.either([[lt], [lf, rt]], "or_t"), self.guard([lf, rf], "or_f"))

    def tag_test(self, tags: frozenset[str]) -> Pair:
        hit = self.tag_tests.get(tags)
        if hit is None:
            t, f = self.b.state("tag_t"), self.b.state("tag_f")
            for tag in self.alphabet:
                self.b.add(tag, [], t if tag in tags else f, _UNIT)
            hit = self.tag_tests[tags] = (t, f)
        return hit

    def block(self, block: tuple[Statement, ...], env: dict[str, Version],
              pc: str | None) -> None:
        for s in block:
            if isinstance(s, Assign):
                env[s.name] = self.assign(s, env, pc)
            else:
                self.branch(s, env, pc)

    def assign(self, s: Assign, env: dict[str, Version], pc: str | None) -> Version:
        if not isinstance(s.value, Term):
            t, f = self.boolean(s.value, env)
            return (self.guard([t, pc], f"{s.name}_t"), self.guard([f, pc], f"{s.name}_f"))
        q = self.b.state(s.name)
        if pc is None:  # a branch that never runs: the version stays ⊥
            return q
        reads = {v: Var(env[v.name], True) for v in s.value.variables()}  # type: ignore[arg-type]
        term = self.read_cur(s.value.rename(reads))
        self.b.add(self.label, [*term.variables(), Var(pc, True)], q, term)
        return q

    def read_cur(self, term: Term) -> Term:
        """``term`` with ``cur`` (and ``cur.FIELD``) read from a state set on every tag: an
        ``eps`` transition fires at initialization too, where there is no event."""
        if isinstance(term, Cur):
            state = self.cur_states.get(term.field)
            if state is None:
                state = self.cur_states[term.field] = self.b.state(f"cur_{term.field or ''}")
                for tag in self.alphabet:
                    self.b.add(tag, [], state, term)
            return Var(state, True)
        if isinstance(term, Apply):
            return Apply(term.op, tuple(self.read_cur(a) for a in term.args))
        return term

    def branch(self, s: If, env: dict[str, Version], pc: str | None) -> None:
        t, f = self.boolean(s.cond, env)
        guards = (self.guard([pc, t], "then"), self.guard([pc, f], "else"))
        envs = [dict(env), dict(env)]
        self.block(s.then, envs[0], guards[0])
        self.block(s.orelse, envs[1], guards[1])
        for name, before in env.items():
            versions = [e[name] for e in envs]
            if all(v == before for v in versions):
                continue
            if isinstance(before, tuple):
                env[name] = tuple(  # type: ignore[assignment]
                    self.merge([v[k] for v in versions], before[k], guards,  # type: ignore[index]
                               f"{name}_{'tf'[k]}", data=False)
                    for k in (0, 1))
            else:
                env[name] = self.merge(versions, before, guards, name,  # type: ignore[arg-type]
                                       data=True)

    def merge(self, versions: list[str | None], before: str | None,
              guards: tuple[str | None, str | None], hint: str, data: bool) -> str | None:
        """One version from both branches': a branch's own (already guarded), or the old
        one under the branch's path condition; a data version carries its value."""
        options = [[v] if v != before else [before, g]
                   for v, g in zip(versions, guards, strict=True)]
        values = [o[0] for o in options] if data else None
        return self.either(options, hint, values)


def algorithm_to_dt(algorithm: Algorithm) -> DT:
    """The DT of ``algorithm`` (module docstring): inputs its init parameters, output ``y``."""
    a = algorithm
    b = Builder(a.alphabet)
    inputs = b.states(a.inputs)
    init_on, step_on = b.state("init_on"), b.state("step_on")
    b.add(INIT, [], init_on, _UNIT)
    for tag in a.alphabet:
        b.add(tag, [], step_on, _UNIT)
    held: dict[str, Version] = {}  # the values between events
    for v in a.data:
        held[v] = b.state(v)
    for v in a.booleans:
        held[v] = (b.state(f"{v}_t"), b.state(f"{v}_f"))
    tests: dict[frozenset[str], Pair] = {}
    init = _Program(b, INIT, init_on, a.alphabet, tests)
    env: dict[str, Version] = dict(zip(a.inputs, inputs, strict=True))
    init.block(a.init, env, init_on)
    _hold(b, INIT, env, held)
    update = _Program(b, EPS, step_on, a.alphabet, tests)
    env = {}
    for v, state in held.items():  # update starts from the held values: a copy per tag
        if isinstance(state, str):
            env[v] = _entry(b, state, v, carry=True)
        else:
            env[v] = tuple(_entry(b, s, f"{v}_{'tf'[k]}", carry=False)  # type: ignore[assignment,arg-type]
                           for k, s in enumerate(state))
    update.block(a.update, env, step_on)
    _hold(b, EPS, env, held)
    running = b.state("running")
    b.copy(init_on, running)
    b.copy(step_on, running)
    out = _Program(b, EPS, running, a.alphabet, {})
    flag, _ = out.boolean(a.flag, held)
    y = b.state("y")
    if flag is not None:
        reads = {v: Var(held[v.name], True) for v in a.result.variables()}  # type: ignore[arg-type]
        b.add(EPS, [*reads.values(), Var(flag, True)], y, a.result.rename(reads))
    return b.freeze(inputs, [y])


def _entry(b: Builder, held: str, hint: str, *, carry: bool) -> str:
    """A state that, on every tag, holds ``held``'s value from the previous step (its value
    if ``carry``, else the unit: a Boolean's state)."""
    entry = b.state(f"{hint}_in")
    for tag in b.alphabet:
        b.add(tag, [Var(held)], entry, Var(held) if carry else _UNIT)
    return entry


def _hold(b: Builder, label: str, env: dict[str, Version], held: dict[str, Version]) -> None:
    """Copy a program's last versions into the held values."""
    for v, state in held.items():
        last = env[v]
        pairs = [(last, state)] if isinstance(state, str) else list(zip(last, state, strict=True))
        for src, dst in pairs:
            if src is not None:
                b.copy(src, dst, on=label)  # type: ignore[arg-type]
