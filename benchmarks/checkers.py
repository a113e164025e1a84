"""The scale limits of the static checkers (seed 003, §5.2.2; issue 5, point 5): writes
benchmarks/CHECKERS.md.

Run (from the repository root)::

    .venv/bin/python benchmarks/checkers.py                 # about 5-10 minutes
    .venv/bin/python benchmarks/checkers.py --budget 10 --output /tmp/CHECKERS.md

For families of queries at sizes about 10, 25, 50, 75 and 100 (``qre.language.ast.query_size``
of the parsed query, ``let`` names resolved), built deterministically, it
compiles the query and a slightly changed variant, and runs every checker of
:data:`CHECKERS` on them, reporting the answer, the time and the search nodes
explored:

* ``equiv self`` — ``status_equivalent(m.unoptimized, m.dt)``: the query
  as compiled against its optimized self (Theorem 5.3; must be equivalent);
* ``equiv variant`` — ``status_equivalent(m.dt, v.dt)``, the query against
  the variant as ``qre check equiv --statuses`` compares them (one tag
  swapped or similar: usually a counterexample; temporal queries are always
  defined (rate Σ*, Figure 26), so their variants are status-equivalent and
  the search must exhaust the reachable pairs);
* ``values self`` / ``values variant`` — ``value_equivalent`` on the same
  pairs (what ``qre check equiv`` runs: statuses, then values by a proof by
  inductive invariant, bounded symbolic search with separating data, random
  testing; :mod:`dt.value_equivalence`); explored = pairs of unit
  configurations of the invariant;
* ``restartable`` — ``check_restartable(m.dt)`` (Theorem 5.6), as ``qre check
  restartable`` runs it (the optimized DT has the same answer);
* ``languages`` — ``languages(m.dt)``: emptiness and universality of L and L̄
  (:mod:`dt.languages`), as ``qre check language`` runs it.

Time: best of 3 runs, or a single run when it takes more than 2 s. Every run
happens in a forked child process killed after ``--budget`` seconds (default
60); a run that times out or meets a checker's search limit
(EquivalenceLimitError, PreconditionError, LanguageLimitError) is reported as
such, and that checker is skipped for the larger queries of the family.

To add a checker: append ``(name, function)`` to :data:`CHECKERS`; the
function takes a :class:`Case` and returns an :class:`Outcome` (a short
answer and the number of configurations explored).
"""

from __future__ import annotations

import argparse
import datetime
import multiprocessing
import os
import platform
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path

from dt.equivalence import EquivalenceLimitError, StatusEquivalence, status_equivalent
from dt.errors import PreconditionError
from dt.languages import LanguageLimitError, OutputLanguages, languages
from dt.restartability import check_restartable
from dt.value_equivalence import ValueEquivalence, value_equivalent
from qre import Monitor, qre
from qre.language.ast import query_size
from qre.language.parser import parse
from qre.language.typing import resolve

ROOT = Path(__file__).resolve().parent.parent
TARGETS = (10, 25, 50, 75, 100)
"""Query sizes aimed at; each family picks the nesting n whose size is closest."""
REPEAT_BELOW = 2.0
"""A run shorter than this (seconds) is repeated: best of 3."""
FAST = 5.0
"""The headline: the largest query each checker answers within this many seconds."""
LIMITS = (EquivalenceLimitError, PreconditionError, LanguageLimitError)


# --------------------------------------------------------------------------- query families


def nested_split(n: int, variant: bool = False) -> str:
    """split(a, split(b, split(a, … iter(c) …))): one word of n tags, then c*.

    Variant: the innermost atom's tag swapped (a → b): differs only at length n.
    """
    q = "iter(atom(c, cur), 0, +)"
    for k in range(1, n + 1):
        tag = "b" if (k % 2 == 0 or (variant and k == 1)) else "a"
        q = f"split(atom({tag}, cur), {q}, +)"
    return f"alphabet a, b, c;\n{q}"


def nested_iter(n: int, variant: bool = False) -> str:
    """iter(split(iter(split(… atom(a) …, atom(b), +), 0, +), atom(b), +), 0, +): the
    benchmarks/query_sizes.py family. Variant: the innermost atom(a) becomes atom(b)."""
    q = "atom(b, cur)" if variant else "atom(a, cur)"
    for _ in range(n):
        q = f"iter(split({q}, atom(b, cur), +), 0, +)"
    return f"alphabet a, b;\n{q}"


_AGGREGATES = (
    "iter(or(atom(a, cur), atom(b, -cur)), 0, +)",
    "count()",
    "sum(cur)",
    "iter(or(atom(a, cur), atom(b, cur)), 0, max)",
)


def wide_combine(n: int, variant: bool = False) -> str:
    """combine of n running aggregates (all of rate Σ*), summed. Variant: the last argument
    reads b twice, or(atom(b), atom(b)): same rate, but ⊤ after a b."""
    args = [_AGGREGATES[k % len(_AGGREGATES)] for k in range(n)]
    if variant:
        args[-1] = "iter(or(atom(a, cur), or(atom(b, cur), atom(b, cur))), 0, max)"
    params = ", ".join(f"x{k}" for k in range(n))
    body = " + ".join(f"x{k}" for k in range(n))
    return f"alphabet a, b;\ncombine({', '.join(args)}, ({params}) -> {body})"


def _last_is(tag: str) -> str:
    """The temporal atom "the last event has this tag" (the README's login pattern)."""
    return f"(fill_with(split(any_word(), atom({tag}, 1), snd), const(0)) > const(0))"


def temporal(n: int, variant: bool = False) -> str:
    """n nested past-time operators, cycling prev, once, hist, since, wsince, over the
    atoms "the last event is a/b". Variant: the innermost atom's tag swapped."""
    phi = _last_is("b" if variant else "a")
    for k in range(n):
        p = _last_is("b" if k % 2 else "a")
        phi = (f"prev({phi})", f"once({phi} && {p})", f"hist({phi} || {p})",
               f"({phi} since {p})", f"(!{phi} wsince {p})")[k % 5]
    return f"alphabet a, b;\n{phi}"


def kth_last(n: int, variant: bool = False) -> str:
    """split(any_word(), a · Σ^(n-1), snd): "the n-th last event is a", whose unit
    configurations remember which of the last n events were a: 2^n of them (the classic
    DFA blow-up). Variant: "the n-th last event is b"."""
    q = f"atom({'b' if variant else 'a'}, cur)"
    for _ in range(n - 1):
        q = f"split({q}, any(cur), fst)"
    return f"alphabet a, b;\nsplit(any_word(), {q}, snd)"


FAMILIES: dict[str, Callable[[int, bool], str]] = {
    "nested split": nested_split,
    "nested iter of split": nested_iter,
    "wide combine": wide_combine,
    "temporal nesting": temporal,
    "n-th last is a": kth_last,
}

_LOGIN = """alphabet fail, ok;
let failed = fill_with(split(any_word(), atom(fail, 1), snd), const(0)) > const(0);
let ok     = fill_with(split(any_word(), atom(ok, 1), snd), const(0)) > const(0);
!ok since failed"""
_LAST_FIVE = """alphabet m;
let recent = fill_with(avg_last({k}, cur), avg(cur));
let bound  = combine(avg(cur), std(cur), (m, s) -> m + 2 * s);
recent > bound"""

README: dict[str, tuple[str, str]] = {
    "running balance": (
        "alphabet deposit, withdraw;\n"
        "iter(or(atom(deposit, cur), atom(withdraw, -cur)), 0, +)",
        "alphabet deposit, withdraw;\n"
        "iter(or(atom(deposit, cur), atom(deposit, -cur)), 0, +)"),
    "max of last 3": ("alphabet r;\nwindow(3, cur, max)", "alphabet r;\nwindow(2, cur, max)"),
    "login failure since success": (_LOGIN, _LOGIN.replace("fail, 1", "ok, 1", 1)),
    "ambiguous split": (
        "alphabet a, b;\nsplit(iter(atom(a, cur), 0, +), iter(atom(a, cur), 0, +), +)",
        "alphabet a, b;\nsplit(iter(atom(a, cur), 0, +), iter(atom(b, cur), 0, +), +)"),
    "last five (§5.3)": (_LAST_FIVE.format(k=5), _LAST_FIVE.format(k=4)),
}
"""The README examples and their variants (text, variant text)."""


def size_of(text: str) -> int:
    return query_size(resolve(parse(text)))


def pick_sizes(family: Callable[[int, bool], str]) -> list[int]:
    """The nesting n whose query size is closest to each target (distinct, increasing)."""
    sizes: dict[int, int] = {}
    n = 1
    while True:
        sizes[n] = size_of(family(n, False))
        if sizes[n] >= 1.5 * TARGETS[-1]:
            break
        n += 1
    chosen = [min(sizes, key=lambda k, t=t: (abs(sizes[k] - t), k)) for t in TARGETS]
    return sorted(set(chosen))


# --------------------------------------------------------------------------- checkers


@dataclass(frozen=True)
class Case:
    """One query to check: its monitor and its variant's (both compiled, optimized)."""

    family: str
    label: str
    text: str
    size: int
    m: Monitor
    variant: Monitor


@dataclass(frozen=True)
class Outcome:
    """A checker's answer (short text) and the search nodes it explored."""

    answer: str
    explored: int


def _equivalence(r: StatusEquivalence) -> Outcome:
    if r.equivalent:
        return Outcome("equivalent", r.explored)
    assert r.counterexample is not None
    return Outcome(f"differ at length {len(r.counterexample)}", r.explored)


def _shape(empty: bool, universal: bool) -> str:
    return "=∅" if empty else "=Σ*" if universal else "⊊Σ*"


def _languages(outs: tuple[OutputLanguages, ...]) -> Outcome:
    answer = "; ".join(f"L{_shape(o.empty, o.universal)} L̄{_shape(o.rate_empty, o.rate_universal)}"
                       for o in outs)
    return Outcome(answer, outs[0].explored if outs else 0)


def _values(r: ValueEquivalence) -> Outcome:
    """Proven, refuted (how, at which length) or undecided (up to which length)."""
    if r.counterexample is not None:
        c = r.counterexample
        return Outcome(f"differ at length {len(c.tags)} ({c.found_by})", r.explored)
    if r.proven:
        return Outcome("proven", r.explored)
    return Outcome(f"undecided (symbolic to length {r.bound}, {r.random_words} random words)",
                   r.explored)


def _restartable(case: Case) -> Outcome:
    r = check_restartable(case.m.dt)
    if r.restartable:
        return Outcome("restartable", r.explored)
    assert r.witness is not None
    return Outcome(f"not (witness length {len(r.witness.tags)})", r.explored)


CHECKERS: list[tuple[str, Callable[[Case], Outcome]]] = [
    ("equiv self", lambda c: _equivalence(status_equivalent(c.m.unoptimized, c.m.dt))),
    ("equiv variant", lambda c: _equivalence(status_equivalent(c.m.dt, c.variant.dt))),
    ("values self", lambda c: _values(value_equivalent(c.m.unoptimized, c.m.dt))),
    ("values variant", lambda c: _values(value_equivalent(c.m.dt, c.variant.dt))),
    ("restartable", _restartable),
    ("languages", lambda c: _languages(languages(c.m.dt))),
]
"""(column name, checker): add a checker here to add a column."""


# --------------------------------------------------------------------------- measuring


@dataclass(frozen=True)
class Measure:
    """One checker on one case: ``status`` is "ok", "limit", "timeout", "skipped" or "error"."""

    status: str
    seconds: float
    outcome: Outcome | None = None
    detail: str = ""

    def cell(self) -> str:
        if self.status == "ok":
            assert self.outcome is not None
            return (f"{self.outcome.answer} · {_seconds(self.seconds)} · "
                    f"{self.outcome.explored:,}")
        if self.status == "limit":
            return f"**limit** after {_seconds(self.seconds)}: {self.detail}"
        if self.status == "timeout":
            return f"**timeout** > {self.seconds:.0f} s"
        return f"{self.status}{': ' + self.detail if self.detail else ''}".replace("|", "\\|")


def _seconds(s: float) -> str:
    return f"{s:.3f} s" if s < 1 else f"{s:.2f} s" if s < 10 else f"{s:.0f} s"


def _child(checker: Callable[[Case], Outcome], case: Case, conn: Connection) -> None:
    """Run in the forked child: best of 3 (or one run above REPEAT_BELOW), sent back."""
    start = time.perf_counter()
    try:
        best = float("inf")
        outcome = None
        for _ in range(3):
            start = time.perf_counter()
            outcome = checker(case)
            elapsed = time.perf_counter() - start
            best = min(best, elapsed)
            if elapsed > REPEAT_BELOW:
                break
        conn.send(Measure("ok", best, outcome))
    except LIMITS as exc:
        explored = getattr(exc, "explored", None)
        detail = f"{type(exc).__name__}" + (f", {explored:,} explored" if explored else "")
        conn.send(Measure("limit", time.perf_counter() - start, None, detail))
    except Exception as exc:  # a bug: reported in the table, not hidden
        conn.send(Measure("error", 0.0, None, f"{type(exc).__name__}: {exc}"[:200]))
    finally:
        conn.close()


def measure(checker: Callable[[Case], Outcome], case: Case, budget: float) -> Measure:
    """Run a checker in a forked child (the case is inherited, not pickled), killed after
    ``budget`` seconds."""
    ctx = multiprocessing.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_child, args=(checker, case, send), daemon=True)
    child.start()
    send.close()
    result = None
    if receive.poll(budget):
        try:
            result = receive.recv()
        except EOFError:
            result = Measure("error", 0.0, None, "the child died")
    child.join(timeout=1.0)
    if child.is_alive():
        child.kill()  # only this child, started above
        child.join()
    receive.close()
    return result if result is not None else Measure("timeout", budget)


# --------------------------------------------------------------------------- the report


@dataclass(frozen=True)
class Row:
    case: Case
    measures: tuple[Measure, ...]


def cases() -> list[tuple[str, list[tuple[str, str, str]]]]:
    """Per family, its (label, text, variant text) in increasing size."""
    out = []
    for name, family in FAMILIES.items():
        out.append((name, [(f"n={n}", family(n, False), family(n, True))
                           for n in pick_sizes(family)]))
    out.append(("README examples", [(label, text, variant)
                                    for label, (text, variant) in README.items()]))
    return out


def compile_case(family: str, label: str, text: str, variant: str) -> Case:
    return Case(family, label, text, size_of(text), qre(text), qre(variant))


def run(budget: float, log: Callable[[str], None]) -> list[Row]:
    rows = []
    for family, items in cases():
        stopped: dict[str, str] = {}  # checker → why its growth stopped in this family
        for label, text, variant in items:
            case = compile_case(family, label, text, variant)
            measures = []
            for name, checker in CHECKERS:
                if name in stopped and family != "README examples":
                    measures.append(Measure("skipped", 0.0, None, stopped[name]))
                    continue
                m = measure(checker, case, budget)
                if m.status in ("limit", "timeout", "error") or m.seconds > budget:
                    stopped[name] = f"{m.status} at size {case.size}"
                measures.append(m)
                log(f"{family:<22} {label:<28} |q|={case.size:<4} {name:<14} {m.cell()}")
            rows.append(Row(case, tuple(measures)))
    return rows


def headline(rows: list[Row]) -> list[str]:
    """Per checker: the largest query answered within FAST seconds (and what it explored), the
    most search nodes explored within FAST seconds, and the smallest query not answered within
    FAST seconds (slower, a timeout or a limit)."""
    lines = [f"| checker | largest query answered within {FAST:.0f} s: size (family) · time · "
             f"explored | most nodes explored within {FAST:.0f} s: size (family) · time · "
             f"explored (nodes/s) | "
             f"smallest query not answered within {FAST:.0f} s |", "|---|---|---|---|"]
    for k, (name, _) in enumerate(CHECKERS):
        def fast(r: Row, k: int = k) -> bool:
            return r.measures[k].status == "ok" and r.measures[k].seconds <= FAST

        def explored(r: Row, k: int = k) -> int:
            outcome = r.measures[k].outcome
            return outcome.explored if outcome else 0

        answered = [r for r in rows if fast(r)]
        slow = [r for r in rows if r.measures[k].status != "skipped" and not fast(r)]
        best = max(answered, key=lambda r, k=k: (r.case.size, -r.measures[k].seconds),
                   default=None)
        most = max(answered, key=explored, default=None)
        first = min(slow, key=lambda r: r.case.size, default=None)
        cells = []
        for r in (best, most):
            if r is None:
                cells.append("–")
                continue
            m = r.measures[k]
            rate = f" ({explored(r) / m.seconds:,.0f}/s)" if m.seconds > 0.05 else ""
            cells.append(f"{r.case.size} ({r.case.family} {r.case.label}) · "
                         f"{_seconds(m.seconds)} · {explored(r):,}"
                         + (rate if r is most else ""))
        if first is None:
            cells.append("none")
        else:
            cells.append(f"{first.case.size} ({first.case.family} {first.case.label}): "
                         f"{first.measures[k].cell()}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def per_family(rows: list[Row]) -> list[str]:
    """Checker × family: the largest query answered within FAST seconds, with its nodes."""
    families = list(dict.fromkeys(r.case.family for r in rows if r.case.family in FAMILIES))
    lines = ["| checker | " + " | ".join(families) + " |",
             "|---|" + "---|" * len(families)]
    for k, (name, _) in enumerate(CHECKERS):
        cells = []
        for family in families:
            ok = [r for r in rows if r.case.family == family and r.measures[k].status == "ok"
                  and r.measures[k].seconds <= FAST]
            best = max(ok, key=lambda r: r.case.size, default=None)
            outcome = best.measures[k].outcome if best else None
            cells.append(f"{best.case.size} ({outcome.explored:,} nodes)"
                         if best and outcome else "–")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f
                        if line.startswith("model name")), cpu)
    except OSError:
        pass
    return (f"{cpu}, {os.cpu_count()} cores, {platform.system()} {platform.release()}, "
            f"Python {platform.python_version()}")


def markdown(rows: list[Row], budget: float, command: str, elapsed: float) -> str:
    names = [name for name, _ in CHECKERS]
    lines = [
        "# Scale limits of the checkers",
        "",
        f"Generated by `{command}` on {datetime.date.today().isoformat()} "
        f"({machine()}); {elapsed:.0f} s in all. The script's docstring describes the "
        "families, the variants and the checkers.",
        "",
        "Each checker cell: answer · time (best of 3, or one run above "
        f"{REPEAT_BELOW:.0f} s) · search nodes explored (pairs of unit configurations for "
        "the equivalences, configurations and triples for restartability, configurations "
        "for languages, whose search stops once every witness is found). Every run is "
        f"killed after {budget:.0f} s (**timeout**); **limit** is a checker's own search "
        "limit (10⁶ nodes). After a limit or timeout the checker is skipped for the larger "
        "queries of the family. |A|: the DT as compiled (states / size); opt: after the "
        "optimizer (the checkers run on the optimized DTs, as the `qre check` commands do, "
        "except `equiv self` and `values self`, which compare the compiled DT with it).",
        "",
        "## Headline",
        "",
        f"Largest query size answered within {FAST:.0f} s, per family (search nodes explored "
        "there):",
        "",
        *per_family(rows),
        "",
        "Over all queries:",
        "",
        *headline(rows),
        "",
        "## All runs",
        "",
        "| family | query | size | A states / size | opt states / size | "
        + " | ".join(names) + " |",
        "|---|---|---:|---:|---:|" + "---|" * len(names),
    ]
    for r in rows:
        c = r.case
        cells = " | ".join(m.cell() for m in r.measures)
        lines.append(f"| {c.family} | {c.label} | {c.size} | {len(c.m.unoptimized.states)} / "
                     f"{c.m.unoptimized.size} | {len(c.m.dt.states)} / {c.m.dt.size} | "
                     f"{cells} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--budget", type=float, default=60.0,
                        help="seconds before a checker run is killed (default 60)")
    parser.add_argument("--output", type=Path, default=ROOT / "benchmarks" / "CHECKERS.md")
    args = parser.parse_args()
    command = ".venv/bin/python benchmarks/checkers.py"
    if args.budget != 60.0:
        command += f" --budget {args.budget:g}"
    start = time.perf_counter()
    rows = run(args.budget, lambda line: print(line, flush=True))
    text = markdown(rows, args.budget, command, time.perf_counter() - start)
    args.output.write_text(text)
    print()
    print(text)


if __name__ == "__main__":
    main()
