"""Equivalence of two DTs on statuses *and values* (beyond seed 003, which decides statuses).

Two DTs started from given initial vectors are equivalent when every data
word gives the same output after every prefix: the same status and, where
defined, the same float (bit for bit, all NaNs being one value; -0.0 ≠ 0.0).
Statuses are decided exactly (Theorem 5.3, :mod:`dt.equivalence`). Values
are not decidable in general (the terms may compute anything); four steps,
from strongest to weakest claim:

1. **Statuses** — :func:`~dt.equivalence.status_equivalent`. A difference is a
   counterexample (proven; data 0.0 everywhere).
2. **Proof by inductive invariant** (for every tag string, all data). On each
   reachable pair of unit configurations P, guess which defined registers of
   the two DTs hold equal values (a partition of the defined states) and
   which hold a known constant (constant classes: flags, fixed defaults). One
   step from P on tag σ is evaluated *symbolically* (:mod:`dt.symbolic`), each
   class of P being one unknown (a constant class its constant); registers
   whose new terms normalize to the same node stay together in the
   successor's partition, a constant node makes a constant class. Partitions
   only get finer, so this greatest fixpoint (Houdini's algorithm, with
   constant propagation) is reached after finitely many steps; the initial
   pair is partitioned by the initial vectors' values. If at the fixpoint
   every pair of corresponding defined outputs is in one class, by induction
   on the length of the word the outputs are equal on every word: **proven**.
   Not expressible, hence not proven this way: relations other than equality
   (``f > 0`` for flags that differ but agree in sign), and equalities that
   need float-inexact algebra.
3. **Bounded symbolic search** (for every tag string up to a length k). The
   tag strings of length 0, 1, …, k are walked level by level with one symbol
   per event's data; a string that reaches a pair of symbolic configurations
   met before (at any level) is not explored again: its future is the same up
   to the names of the fresh data symbols, and term equality does not depend
   on names. Where the two output terms normalize to the same node, the
   outputs agree on that string for all data (proven up to k). Where they
   differ, data that separates them is searched: edge values (signed zeros,
   ±1, infinities, NaN, extremes, decimals such as 0.1 that expose rounding)
   for all symbols, then plateaus and random mixes; a separation is a
   **counterexample**. Otherwise the pair stays *unresolved* (tested only).
   When a level brings nothing new, every reachable pair has been compared:
   if all outputs agreed, the values are **proven** equal on every word
   ("exhaustive"; monitors whose registers hold finitely many values, such as
   the boolean temporal queries, are decided this way).
4. **Random testing** on longer words (reference evaluator, every prefix),
   when nothing was proven or refuted.

Every counterexample is replayed on the reference evaluator (Figure 25) of
both DTs before it is reported; a failed replay is an AssertionError (a bug).

Costs: step 2 evaluates each (pair, tag) edge symbolically, O(size) per
evaluation, once plus once per refinement of the source pair's partition
(at most |Q1| + |Q2| refinements per pair). Step 3 costs O(size) per string
explored, at most ``max_strings`` strings and ``max_depth`` levels, and goes
no deeper than the level where 256 cases are unresolved; each unresolved case
costs up to ``data_tries`` evaluations of the two terms (the edge values only
after the first 64 cases). Step 4 is ``random_words`` runs of the reference
evaluator.
"""

from __future__ import annotations

import logging
import math
import random
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .equivalence import EquivalenceLimitError, StatusEquivalence, status_equivalent
from .model import DT
from .projection import UnitConfig, status_vector
from .reference import evaluate
from .symbolic import (
    SYM_BOT,
    SYM_TOP,
    SymbolicEvaluator,
    SymConfig,
    TermTable,
    data_symbol,
    same_value,
)
from .terms import EventValue
from .values import BOT, TOP, XValue, is_defined

__all__ = ["DataCounterexample", "ValueEquivalence", "value_equivalent"]

log = logging.getLogger(__name__)

EDGE_VALUES = (0.0, -0.0, 1.0, -1.0, 2.0, 0.5, -3.0, 0.1, 0.2, 0.3, 1e16, -1e16, 1e308,
               -1e308, 5e-324, math.inf, -math.inf, math.nan)
"""Values tried first when searching data that separates two terms."""

_FULL_SEARCHES = 64
"""Unresolved cases searched with the full ``data_tries``; later ones with the edge values."""

_MAX_UNRESOLVED = 256
"""The bounded search goes no deeper once this many cases are unresolved."""


@dataclass(frozen=True)
class DataCounterexample:
    """A data word after whose last event the two DTs output different values.

    ``outputs`` are the two output vectors there (extended values), ``output``
    the index of the first output that differs; ``found_by`` says which step
    found it ("statuses", "symbolic search", "random testing").
    """

    tags: tuple[str, ...]
    data: tuple[EventValue, ...]
    output: int
    outputs: tuple[tuple[XValue, ...], tuple[XValue, ...]]
    found_by: str


@dataclass(frozen=True)
class ValueEquivalence:
    """The answer of :func:`value_equivalent`: what was proven, refuted or only tested.

    * ``status`` — the status-level answer (always decided, Theorem 5.3);
    * ``proven`` — values equal on every word: ``proof`` says how, "invariant"
      (step 2) or "exhaustive" (step 3 met every reachable symbolic
      configuration, up to the names of the data, and all outputs agreed);
    * ``counterexample`` — a replayed data word that separates the DTs, or None;
    * ``bound`` — every tag string of length ≤ ``bound`` was evaluated
      symbolically (-1: the search was not run); ``strings`` how many
      distinct symbolic configurations it met; ``unresolved`` how many
      (string, output) cases had different terms and no separating data
      (their equality is only tested);
    * ``random_words`` / ``random_length`` — random words (up to that length)
      run on both DTs without a difference;
    * ``explored`` — pairs of unit configurations searched for the invariant.
    """

    status: StatusEquivalence
    proven: bool
    proof: str
    counterexample: DataCounterexample | None
    bound: int
    strings: int
    unresolved: int
    random_words: int
    random_length: int
    explored: int

    @property
    def equivalent(self) -> bool | None:
        """True if proven, False if refuted by a counterexample, None if only tested."""
        if self.counterexample is not None:
            return False
        return True if self.proven else None

    def summary(self) -> list[str]:
        """What holds, in words (the CLI prints these lines)."""
        if self.counterexample is not None:
            if self.counterexample.found_by == "statuses":
                return ["not equivalent: the statuses differ after this tag string whatever the "
                        "data, and no shorter tag string separates them (Theorem 5.3)"]
            return [f"not equivalent: found by {self.counterexample.found_by}, replayed on the "
                    f"reference evaluator"]
        lines = ["statuses: proven equal on every tag string (Theorem 5.3)"]
        if self.proof == "invariant":
            lines.append("values: proven equal on every data word (inductive invariant over "
                         f"{self.explored} pairs of configurations)")
            return lines
        if self.proof == "exhaustive":
            lines.append(f"values: proven equal on every data word (all {self.strings} "
                         f"reachable symbolic configurations compared, tag strings up to "
                         f"length {self.bound})")
            return lines
        lines.append("values: not proven for all words")
        if self.bound >= 0:
            lines.append(f"values: proven equal on every tag string of length <= {self.bound} "
                         f"for all data, except {self.unresolved} case(s) where the terms "
                         f"differ and no tried data separated them")
        if self.random_words:
            lines.append(f"values: tested equal on {self.random_words} random words of length "
                         f"<= {self.random_length}, every prefix")
        return lines


# --------------------------------------------------------------------------- entry point


def value_equivalent(a: DT, b: DT, x_a: Sequence[XValue] | None = None,
                     x_b: Sequence[XValue] | None = None, *, max_pairs: int = 1_000_000,
                     max_depth: int = 40, max_strings: int = 4_000, data_tries: int = 64,
                     random_words: int = 100, random_length: int = 40,
                     seed: int = 0) -> ValueEquivalence:
    """Compare ``a`` and ``b`` on statuses and values; see the module docstring.

    ``x_a`` / ``x_b`` are the initial vectors (default 0.0 everywhere, as a
    Monitor runs a DT). Raises ValueError if the alphabets or the numbers of
    outputs differ, or if one DT reads plain ``cur`` and the other record
    fields, and :class:`~dt.equivalence.EquivalenceLimitError` beyond
    ``max_pairs`` pairs of unit configurations.
    """
    xa = tuple(x_a) if x_a is not None else (0.0,) * len(a.initial)
    xb = tuple(x_b) if x_b is not None else (0.0,) * len(b.initial)
    fields = _fields(a, b)
    status = status_equivalent(a, b, status_vector(xa), status_vector(xb), max_pairs=max_pairs)
    pair = _Pair(a, b, xa, xb, fields)
    if not status.equivalent:
        word = tuple((tag, pair.event(lambda _: 0.0)) for tag in status.counterexample or ())
        found = pair.replay(word, "statuses")
        return ValueEquivalence(status, False, "", found, -1, 0, 0, 0, 0, status.explored)
    proven, explored = _prove(pair, max_pairs)
    if proven:
        return ValueEquivalence(status, True, "invariant", None, -1, 0, 0, 0, 0, explored)
    rng = random.Random(seed)
    search = _BoundedSearch(pair, rng, data_tries)
    found = search.run(max_depth, max_strings)
    if found is None and search.complete and search.unresolved == 0:
        return ValueEquivalence(status, True, "exhaustive", None, search.bound, search.strings,
                                0, 0, 0, explored)
    tested = 0
    if found is None:
        found, tested = _random_testing(pair, rng, random_words, random_length)
    return ValueEquivalence(status, False, "", found, search.bound, search.strings,
                            search.unresolved, tested, random_length if tested else 0, explored)


def _fields(a: DT, b: DT) -> tuple[str, ...] | None:
    """The record fields events must carry, or None for plain ``cur``."""
    fields = a.fields | b.fields
    if fields and (a.reads_scalar_cur or b.reads_scalar_cur):
        raise ValueError("one DT reads plain cur and the other record fields "
                         f"({', '.join(sorted(fields))}): their events cannot be the same")
    return tuple(sorted(fields)) if fields else None


class _Pair:
    """The two DTs with their initial vectors: events, replay, symbolic evaluators."""

    def __init__(self, a: DT, b: DT, xa: tuple[XValue, ...], xb: tuple[XValue, ...],
                 fields: tuple[str, ...] | None) -> None:
        self.a, self.b, self.xa, self.xb, self.fields = a, b, xa, xb, fields
        self.tags = sorted(a.alphabet)

    def event(self, value: Callable[[str | None], float]) -> EventValue:
        """An event's data: ``value(None)``, or a record of ``value(field)`` per field read."""
        if self.fields is None:
            return value(None)
        return {f: value(f) for f in self.fields}

    def evaluators(self, table: TermTable) -> tuple[SymbolicEvaluator, SymbolicEvaluator]:
        return SymbolicEvaluator(self.a, table), SymbolicEvaluator(self.b, table)

    def outputs(self, word: Sequence[tuple[str, EventValue]]) -> tuple[list, list]:
        return evaluate(self.a, self.xa, word), evaluate(self.b, self.xb, word)

    def first_difference(self, word: Sequence[tuple[str, EventValue]]) -> tuple[int, int] | None:
        """(prefix length, output index) of the first differing output, or None."""
        out_a, out_b = self.outputs(word)
        for k, (ya, yb) in enumerate(zip(out_a, out_b, strict=True)):
            for j, (va, vb) in enumerate(zip(ya, yb, strict=True)):
                if not _same(va, vb):
                    return k, j
        return None

    def replay(self, word: Sequence[tuple[str, EventValue]], found_by: str) -> DataCounterexample:
        """Check on the reference evaluator that the outputs differ after ``word``."""
        out_a, out_b = self.outputs(word)
        diffs = [j for j, (va, vb) in enumerate(zip(out_a[-1], out_b[-1], strict=True))
                 if not _same(va, vb)]
        if not diffs:
            raise AssertionError(f"counterexample {list(word)} ({found_by}) does not replay: "
                                 f"the reference evaluator gives {out_a[-1]} and {out_b[-1]}")
        return DataCounterexample(tuple(t for t, _ in word), tuple(d for _, d in word),
                                  diffs[0], (out_a[-1], out_b[-1]), found_by)


def _same(a: XValue, b: XValue) -> bool:
    if is_defined(a) and is_defined(b):
        return same_value(float(a), float(b))  # type: ignore[arg-type]
    return a is b


# --------------------------------------------------------------------------- step 2: proof


_Node = tuple[UnitConfig, UnitConfig]
_Const = tuple[str, float]  # a class whose registers hold this constant: (key, value)
_Partition = tuple[int | _Const, ...]  # per state of A then B: a class, -1 if not defined


def _entry(table: TermTable, v: XValue) -> int:
    return SYM_BOT if v is BOT else SYM_TOP if v is TOP else table.const(float(v))  # type: ignore[arg-type]


def _units(config: SymConfig) -> UnitConfig:
    return tuple(0 if e == SYM_BOT else 2 if e == SYM_TOP else 1 for e in config)


def _partition(table: TermTable, entries: Sequence[int]) -> _Partition:
    """Registers grouped by node id: a constant node is a constant class, other classes
    are numbered by first occurrence."""
    number: dict[int, int] = {}

    def label(e: int) -> int | _Const:
        if e < 0:
            return -1
        value = table.constant(e)
        if value is not None:
            return (float(value).hex(), value)
        return number.setdefault(e, len(number))

    return tuple(label(e) for e in entries)


def _meet(p: _Partition, q: _Partition) -> _Partition:
    """The coarsest partition finer than both (same definedness in both); a register
    stays a constant only if both say the same constant."""
    number: dict[tuple, int] = {}

    def label(x: int | _Const, y: int | _Const) -> int | _Const:
        if x == -1:
            return -1
        if isinstance(x, tuple) and x == y:
            return x
        return number.setdefault((x, y), len(number))

    return tuple(label(x, y) for x, y in zip(p, q, strict=True))


def _prove(pair: _Pair, max_pairs: int) -> tuple[bool, int]:
    """Step 2: Houdini's greatest fixpoint of register equalities; see the module docstring."""
    na = len(pair.a.states)
    table = TermTable()
    ev_a, ev_b = pair.evaluators(table)
    ca = ev_a.initial([_entry(table, v) for v in pair.xa])
    cb = ev_b.initial([_entry(table, v) for v in pair.xb])
    start = (_units(ca), _units(cb))
    parts: dict[_Node, _Partition] = {start: _partition(table, ca + cb)}
    work: deque[_Node] = deque([start])
    queued = {start}
    while work:
        node = work.popleft()
        queued.discard(node)
        for tag in pair.tags:
            succ, grouping = _symbolic_edge(ev_a, ev_b, node, parts[node], tag)
            before = parts.get(succ)
            after = grouping if before is None else _meet(before, grouping)
            if after != before:
                parts[succ] = after
                if len(parts) > max_pairs:
                    raise EquivalenceLimitError(len(parts), max_pairs)
                if succ not in queued:
                    queued.add(succ)
                    work.append(succ)
    fa = [pair.a.state_index[q] for q in pair.a.final]
    fb = [na + pair.b.state_index[q] for q in pair.b.final]
    proven = all(part[i] == part[j] for part in parts.values()
                 for i, j in zip(fa, fb, strict=True) if part[i] != -1 and part[j] != -1)
    log.debug("invariant over %d pairs: %s", len(parts), "proven" if proven else "not proven")
    return proven, len(parts)


def _symbolic_edge(ev_a: SymbolicEvaluator, ev_b: SymbolicEvaluator, node: _Node,
                   part: _Partition, tag: str) -> tuple[_Node, _Partition]:
    """One step on ``tag`` from ``node`` with each class of ``part`` an unknown."""
    table = ev_a.table
    table.clear()  # nothing is kept from one edge to the next but partitions
    na = len(node[0])
    units = node[0] + node[1]

    def unknown(c: int | _Const) -> int:
        return table.const(c[1]) if isinstance(c, tuple) else table.symbol(f"r{c}")

    old = tuple(SYM_BOT if s == 0 else SYM_TOP if s == 2 else unknown(part[i])
                for i, s in enumerate(units))

    def cur(field: str | None) -> int:
        return table.symbol(data_symbol(1, field))

    new_a = ev_a.step(old[:na], tag, cur)
    new_b = ev_b.step(old[na:], tag, cur)
    return (_units(new_a), _units(new_b)), _partition(table, new_a + new_b)


# --------------------------------------------------------------------------- step 3: bounded


class _BoundedSearch:
    """Step 3: symbolic evaluation of all tag strings up to a length, level by level."""

    def __init__(self, pair: _Pair, rng: random.Random, data_tries: int) -> None:
        self.pair, self.rng, self.data_tries = pair, rng, data_tries
        self.table = TermTable()
        self.ev_a, self.ev_b = pair.evaluators(self.table)
        self.bound = -1
        self.strings = 0
        self.unresolved = 0
        self.complete = False  # every reachable symbolic configuration pair was compared
        # Pairs met at any level. A pair met again later has the same future up to the
        # names of the data symbols its successors read (fresh for it either way), and
        # term equality does not depend on names: it need not be explored twice.
        self._seen: set[tuple[SymConfig, SymConfig]] = set()
        self._tried: set[tuple[int, int]] = set()

    def run(self, max_depth: int, max_strings: int) -> DataCounterexample | None:
        t = self.table
        level: dict[tuple[SymConfig, SymConfig], tuple[str, ...]] = {
            (self.ev_a.initial([_entry(t, v) for v in self.pair.xa]),
             self.ev_b.initial([_entry(t, v) for v in self.pair.xb])): ()}
        self._seen.update(level)
        for depth in range(max_depth + 1):
            for configs, word in level.items():
                found = self._compare(configs, word)
                if found is not None:
                    return found
            self.strings += len(level)
            self.bound = depth
            # Stop deepening at the string budget, or once many cases stayed unresolved:
            # longer strings then mostly repeat the same difference, at a growing cost.
            if (depth == max_depth or self.unresolved >= _MAX_UNRESOLVED
                    or self.strings + len(level) * len(self.pair.tags) > max_strings):
                break
            level = self._next_level(level, depth + 1)
            if not level:  # nothing new: every reachable pair has been compared
                self.complete = True
                break
        return None

    def _next_level(self, level: dict, position: int) -> dict:
        def cur(field: str | None) -> int:
            return self.table.symbol(data_symbol(position, field))

        nxt: dict[tuple[SymConfig, SymConfig], tuple[str, ...]] = {}
        for (ca, cb), word in level.items():
            for tag in self.pair.tags:
                succ = (self.ev_a.step(ca, tag, cur), self.ev_b.step(cb, tag, cur))
                if succ not in self._seen:
                    self._seen.add(succ)
                    nxt[succ] = (*word, tag)  # the first string reaching it is kept
        return nxt

    def _compare(self, configs: tuple[SymConfig, SymConfig],
                 word: tuple[str, ...]) -> DataCounterexample | None:
        for ya, yb in zip(self.ev_a.outputs(configs[0]), self.ev_b.outputs(configs[1]),
                          strict=True):
            if ya < 0 or ya == yb or (ya, yb) in self._tried:
                continue  # ⊥/⊤ (statuses are proven equal), equal terms, or already tried
            self._tried.add((ya, yb))
            found = self._separate(ya, yb, word)
            if found is not None:
                return found
            self.unresolved += 1
        return None

    def _separate(self, ya: int, yb: int, word: tuple[str, ...]) -> DataCounterexample | None:
        """Search data on which the terms ``ya`` and ``yb`` differ; replay it as a word."""
        names = sorted(self.table.symbols([ya, yb]))
        evaluate = self.table.evaluator([ya, yb])
        # The first cases get the full budget; later ones (longer strings, usually the
        # same difference again) only the edge values, which keeps undecided runs short.
        tries = self.data_tries if self.unresolved < _FULL_SEARCHES else len(EDGE_VALUES)
        for assignment in self._assignments(names, tries):
            va, vb = evaluate(assignment)
            if not same_value(va, vb):
                return self.pair.replay(self._word(word, assignment), "symbolic search")
        return None

    def _assignments(self, names: list[str], tries: int):  # type: ignore[no-untyped-def]
        """Edge values for all symbols at once, then random data profiles over the positions."""
        for value in EDGE_VALUES[:tries]:
            yield dict.fromkeys(names, value)
        # A symbol is data_symbol(position, field): one profile per field, read by position.
        where = {n: (int(n[1:].partition(".")[0]), n.partition(".")[2] or None) for n in names}
        n = max((p for p, _ in where.values()), default=0)
        fields = {f for _, f in where.values()}
        for _ in range(max(0, tries - len(EDGE_VALUES))):
            profiles = {f: _data_profile(self.rng, n) for f in fields}
            yield {name: profiles[f][p - 1] for name, (p, f) in where.items()}

    def _word(self, tags: tuple[str, ...], assignment: dict[str, float]) -> list:
        """The data word of a tag string whose event data the assignment gives."""
        return [(tag, self.pair.event(lambda f, k=k: assignment.get(data_symbol(k, f), 0.0)))
                for k, tag in enumerate(tags, start=1)]


def _random_value(rng: random.Random) -> float:
    """Edge values, small integers and random floats, in equal parts."""
    kind = rng.randrange(3)
    if kind == 0:
        return rng.choice(EDGE_VALUES)
    if kind == 1:
        return float(rng.randint(-10, 10))
    return rng.uniform(-100.0, 100.0)


_LEVELS = (0.0, 1.0, -1.0, 2.0, 10.0, -10.0, 100.0, 0.5, 1e6)


def _data_profile(rng: random.Random, n: int) -> list[float]:
    """Data for ``n`` events: independent random values, or (half the time) plateaus.

    Plateaus are up to four segments, each at a level with optional noise: a
    long calm stretch then a jump is what separates many statistical
    monitors (an average against a deviation band), and independent values
    almost never produce it.
    """
    if n == 0 or rng.random() < 0.5:
        return [_random_value(rng) for _ in range(n)]
    cuts = sorted(rng.sample(range(1, n), min(n - 1, rng.randint(0, 3)))) if n > 1 else []
    out: list[float] = []
    for start, end in zip([0, *cuts], [*cuts, n], strict=True):
        level, noise = rng.choice(_LEVELS), rng.choice((0.0, 0.0, 0.01, 1.0))
        out += [level + noise * rng.gauss(0.0, 1.0) for _ in range(end - start)]
    return out


# --------------------------------------------------------------------------- step 4: random


def _random_testing(pair: _Pair, rng: random.Random, words: int,
                    length: int) -> tuple[DataCounterexample | None, int]:
    """Random words on the reference evaluator; the first difference, cut to its prefix."""
    for n in range(words):
        size = rng.randint(1, length)
        profiles = {f: _data_profile(rng, size) for f in (pair.fields or (None,))}
        word = [(rng.choice(pair.tags), pair.event(lambda f, k=k, p=profiles: p[f][k]))
                for k in range(size)]
        diff = pair.first_difference(word)
        if diff is not None:
            return pair.replay(word[:diff[0]], "random testing"), n
    return None, words
