"""Seed 003 §5.2.2 (end) and §5.4 measured: DTs against CRAs and DFAs, and what the
translations cost (issue 28). RESULTS.md section ``succinctness``.

Run: ``.venv/bin/python benchmarks/succinctness.py [--max-k 12] [--random 200]``.

1. Theorem 5.9: the family A_k (over k tags: the sum of the values if tag i has
   occurred, else 0, summed over i) as a hand-written restartable DT
   (``dt.cra.families.seen_tags_sum``) and as the CRA of Theorem 5.8
   (``cra_from_dt``): DT states O(k) against 2^k + 1 control states.
2. Theorem 5.7 on the same axes: the same function as a QRE-Past query
   (``if(once(is(ti)), sum(cur), const(0))`` summed over i), its length and
   its compiled DT's size (optimized), and that DT's CRA — checked equal to
   the hand-written DT on random words.
3. §5.2.2's restartable conversion on random DTs that are not restartable:
   conversion time, size blow-up, control states; how many have no
   restartable form (and why).
4. §5.4.2: "the n-th letter from the end is a": the acyclic DT's states
   against the minimal DFA's (``qre.language.automata.dt_language``).
5. Theorem 5.11: a streaming algorithm of n conditional updates, its DT's
   size and translation time (linear).

Sizes are exact counts; times are one run each on this machine.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from pathlib import Path

from results import RESULTS, write_section

from dt.afa import nth_from_end_dt, rafa_from_dt
from dt.cra import NoRestartableForm, cra_evaluate, cra_from_dt, make_restartable
from dt.cra.families import seen_tags_sum
from dt.model import DT, EPS, INIT, Transition
from dt.reference import evaluate
from dt.restartability import check_restartable
from dt.terms import Apply, Const, Cur, Var
from qre import qre
from qre.language.algorithm import algorithm_dt, parse_algorithm
from qre.language.automata import dt_language, is_empty


def _timed(fn):  # type: ignore[no-untyped-def]
    began = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - began


def family_query(k: int) -> str:
    tags = ", ".join(f"t{i}" for i in range(1, k + 1))
    body = " + ".join(f"if(once(is(t{i})), sum(cur), const(0))" for i in range(1, k + 1))
    return f"alphabet {tags}; {body}"


def theorem_5_9(max_k: int, rng: random.Random) -> list[str]:
    rows = ["| k | DT states | DT size | CRA control states | CRA size | CRA build s | "
            "query length | query DT states | query DT size | its CRA states |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for k in range(1, max_k + 1):
        dt = seen_tags_sum(k)
        cra, seconds = _timed(lambda dt=dt: cra_from_dt(dt, max_states=1 << 20))
        query = family_query(k)
        m = qre(query)
        word = [(f"t{rng.randint(1, k)}", float(rng.randint(-3, 3))) for _ in range(12)]
        want = evaluate(dt, (0.0,), word)
        assert cra_evaluate(cra, (0.0,), word) == want, k
        got = m.run([t for t, _ in word], [v for _, v in word]).value.tolist()
        assert got == [y[0] for y in want[1:]], (k, got, want)
        query_cra = len(cra_from_dt(m.dt).states) if k <= 10 else None
        rows.append(f"| {k} | {len(dt.states)} | {dt.size} | {len(cra.states)} | {cra.size:,} | "
                    f"{seconds:.2f} | {len(query)} | {len(m.dt.states)} | {m.dt.size} | "
                    f"{query_cra if query_cra is not None else '-'} |")
        print(rows[-1], flush=True)
    return rows


def random_dt(rng: random.Random, n: int) -> DT:
    """A DT over a, b with input i and output f, n states, random reads (primed and not)."""
    states = ["i", *(f"q{k}" for k in range(n - 2)), "f"]
    trs = []
    for _ in range(rng.randint(n, 2 * n + 2)):
        label = rng.choice(["a", "b", "a", "b", EPS, INIT])
        target = rng.choice(states[1:])
        pool = [Var(q, True) for q in states if q != target]
        if label not in (EPS, INIT):
            pool += [Var(q) for q in states]
        sources = rng.sample(pool, rng.randint(0 if rng.random() < 0.1 else 1, min(2, len(pool))))
        term = (Const(1.0) if not sources else sources[0] if label in (EPS, INIT)
                else Apply("add", (sources[0], Cur())))
        if len(sources) > 1 and rng.random() < 0.5:
            term = Apply("add", (term, sources[1]))
        trs.append(Transition(label, frozenset(sources), target, term))
    return DT(("a", "b"), tuple(states), ("i",), ("f",), tuple(trs))


def restartable_conversion(count: int, rng: random.Random) -> list[str]:
    rows = ["| states | DTs not restartable | converted | no form (⊥ input outputs / ⊤ "
            "not two threads) | size ×, median (max) | CRA control states, median (max) | "
            "seconds, median (max) |", "|---|---|---|---|---|---|---|"]
    for n in (3, 4, 6, 8, 12):
        blow, states, secs = [], [], []
        tried = loud = doubled = 0
        while tried < count:
            dt = random_dt(rng, n)
            # Only DTs that output something (L̄ not empty) and are not restartable.
            if is_empty(dt_language(dt)) or check_restartable(dt).restartable:
                continue
            tried += 1
            try:
                conversion = make_restartable(dt)
            except NoRestartableForm as err:
                loud += not any(err.inputs)
                doubled += any(err.inputs)
                continue
            assert check_restartable(conversion.dt).restartable
            blow.append(conversion.dt.size / dt.size)
            states.append(len(conversion.cra.states))
            secs.append(conversion.seconds)
        rows.append(f"| {n} | {tried} | {len(blow)} | {loud} / {doubled} | "
                    f"{statistics.median(blow):.2f} ({max(blow):.2f}) | "
                    f"{statistics.median(states):.0f} ({max(states)}) | "
                    f"{statistics.median(secs):.4f} ({max(secs):.4f}) |")
        print(rows[-1], flush=True)
    return rows


def nth_letter(max_n: int) -> list[str]:
    rows = ["| n | DT states | DT size | r-AFA size | minimal DFA states |",
            "|---|---|---|---|---|"]
    for n in range(1, max_n + 1):
        dt = nth_from_end_dt(n)
        dfa = dt_language(dt)
        rows.append(f"| {n} | {len(dt.states)} | {dt.size} | {rafa_from_dt(dt).size} | "
                    f"{dfa.n_states} |")
        print(rows[-1], flush=True)
    return rows


def algorithm_text(n: int) -> str:
    body = "\n".join(f'    if tag == "a" and b{k % 3}:\n        d = d + {k}.0\n'
                     f"    b{(k + 1) % 3} = not b{k % 3}" for k in range(n))
    return (f"def init(x):\n    d = x\n    b0 = True\n    b1 = False\n    b2 = True\n"
            f"def update(tag, cur):\n{body}\n    d = d + cur\ndef output():\n    return d\n")


def theorem_5_11() -> list[str]:
    rows = ["| conditional updates | algorithm size | DT states | DT size | DT size / "
            "algorithm size | translation ms |", "|---|---|---|---|---|---|"]
    for n in (10, 100, 1000, 4000):
        text = algorithm_text(n)
        algorithm = parse_algorithm(text, ["a", "b"])
        dt, seconds = _timed(lambda text=text: algorithm_dt(text, ["a", "b"]))
        rows.append(f"| {n} | {algorithm.size} | {len(dt.states)} | {dt.size} | "
                    f"{dt.size / algorithm.size:.2f} | {1000 * seconds:.1f} |")
        print(rows[-1], flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-k", type=int, default=12)
    parser.add_argument("--random", type=int, default=200,
                        help="non-restartable random DTs per size")
    parser.add_argument("--max-n", type=int, default=12)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    rng = random.Random(28)
    parts = [
        "## succinctness: DTs against CRAs and DFAs, and the translations (issue 28)",
        "",
        f"`.venv/bin/python benchmarks/succinctness.py --max-k {args.max_k} --random "
        f"{args.random} --max-n {args.max_n}` (seed 003 §5.2.2 end, §5.4; one run).",
        "",
        "Theorem 5.9's family A_k (the seed: the DT has O(k) states, a CRA needs 2^k), and "
        "Theorem 5.7's compiled query for the same function (its CRA computed up to k = 10). "
        "The query's CRA stays small: its `once(is(ti))` is a 0/1 *value* that `if` reads, "
        "so the control need not remember the tags seen — Theorem 5.9's gap holds for Op = "
        "{+}, as the seed states it, not for a signature with a conditional:",
        "", *theorem_5_9(args.max_k, rng), "",
        "The restartable conversion (§5.2.2, last paragraph: DT → CRA → restartable DT) on "
        "random DTs that are not restartable (the seed gives no figure; it warns of an "
        "exponential blow-up):", "", *restartable_conversion(args.random, rng), "",
        "§5.4.2: the n-th letter from the end (the seed: an n-state acyclic DT, a 2^n-state "
        "DFA):", "", *nth_letter(args.max_n), "",
        "Theorem 5.11: a streaming algorithm of n conditional updates (the seed: linear time "
        "and size):", "", *theorem_5_11(),
    ]
    write_section(args.output, "succinctness", "\n".join(parts))


if __name__ == "__main__":
    main()
