"""Metric-bounded past operators (issue 21 §2): ``once[a, b]``, ``hist[a, b]``, ``since[a, b]``,
``prev[a, b]`` over event time or event counts (dt/metric.py).

* the slot bound K (:func:`dt.metric.slots`) holds: a simulation of the exact set of
  intervals never has more than K alive, at every resolution δ;
* the compiled DT equals the denotational oracle (qre.language.semantics) after every
  prefix, on random formulas (time and count bounds, nested, under connectives and the
  unbounded operators) and random timed words;
* ``run_timed`` on every engine equals an independent brute-force past-MTL evaluator
  written here from the definition, and reelay's discrete-time monitors (run in a
  child process: reelay is a C++ extension) agree with both;
* state per key is constant for a = 0 and bounded by K otherwise; parse, print and
  error messages.
"""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from util import assert_same_outputs

from dt.metric import MAX_METRIC_SLOTS, slots
from dt.reference import evaluate
from dt.terms import Cur
from qre import QreSyntaxError, QreTypeError, qre
from qre.language import ast, sugar
from qre.language.compiler import compile_query
from qre.language.parser import parse
from qre.language.patterns import CLOCK_FIELD, durations
from qre.language.printer import to_text
from qre.language.semantics import prefix_meanings
from qre.language.typing import check

SECOND = 1_000_000_000


# --------------------------------------------------------------------------- the slot bound


def _live_counts(lo: int, hi: int | None, times: list[int], hits: list[bool]) -> list[int]:
    """The intervals [t + lo, t + hi + 1) of the hits, merged when they touch, alive (end >
    t) after each event: the exact state that dt.metric keeps in K slots."""
    live: list[list[float]] = []
    counts = []
    for t, hit in zip(times, hits, strict=True):
        live = [iv for iv in live if iv[1] > t]
        if hit:
            start, end = t + lo, math.inf if hi is None else t + hi + 1
            if live and start <= live[-1][1]:
                live[-1][1] = max(live[-1][1], end)
            else:
                live.append([start, end])
        counts.append(len([iv for iv in live if iv[1] > t]))
    return counts


@settings(max_examples=300)
@given(st.integers(0, 40), st.one_of(st.none(), st.integers(0, 12)), st.integers(1, 7),
       st.lists(st.tuples(st.integers(0, 3), st.booleans()), max_size=40))
def test_no_more_intervals_are_alive_than_the_slots(lo_ns, width, delta, steps):
    """K computed in nanoseconds bounds the live intervals at every δ (times whole δ,
    the bound rounded as a run rounds it: A = ⌈lo/δ⌉, B = ⌈(hi + 1)/δ⌉)."""
    hi_ns = None if width is None else lo_ns + width
    times, t = [], 0
    for gap, _ in steps:
        t += gap
        times.append(t)
    hits = [hit for _, hit in steps]
    a = -(-lo_ns // delta)
    b = None if hi_ns is None else -(-(hi_ns + 1) // delta) - 1
    if b is not None and b < a:
        return  # no whole distance fits: the operator is constant
    assert max(_live_counts(a, b, times, hits), default=0) <= slots(lo_ns, hi_ns)


def test_slots_of_common_bounds():
    assert slots(0, 10 * 60 * SECOND) == 1  # a = 0: two registers whatever the rate
    assert slots(5 * 60 * SECOND, None) == 1
    assert slots(5 * 60 * SECOND, 6 * 60 * SECOND) == 6  # about a / (b − a) + 1
    assert slots(3, 3) == 2 and slots(10, 10) == 6  # event counts: exact


# --------------------------------------------------------------------------- formulas


TAGS = ("p", "q", "r")


@st.composite
def bounds(draw, timed: bool) -> ast.PastBound:
    """Small bounds: event counts, or durations in units of 500 ms against δ = 1 s (so
    that rounding to whole δ is exercised)."""
    unit = SECOND // 2 if timed else 1
    lo = draw(st.integers(0, 5))
    hi = draw(st.one_of(st.none(), st.integers(lo, lo + 5)))
    return ast.PastBound(lo * unit, None if hi is None else hi * unit, events=not timed)


def _proposition(tag: str) -> ast.Query:
    return sugar.is_tag(tag)


def _above(c: float) -> ast.Query:
    # cur.x of the last event, 0 before any: a signal defined on every word
    last_x = ast.FillWith(sugar.last(Cur("x")), sugar.const(0.0))
    return ast.Compare(">", last_x, sugar.const(c))


@st.composite
def formulas(draw, depth: int = 3, timed: bool = True) -> ast.Query:
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        if draw(st.booleans()):
            return _proposition(draw(st.sampled_from(TAGS)))
        return _above(draw(st.sampled_from([0.0, 1.0, 2.0])))
    sub = formulas(depth - 1, timed)
    kind = draw(st.sampled_from(["once", "hist", "since", "prev", "not", "and", "or",
                                 "plain"]))
    if kind in ("once", "hist", "prev"):
        bound = draw(bounds(timed and draw(st.booleans())))
        return ast.BoundedPast(kind, (draw(sub),), bound)
    if kind == "since":
        bound = draw(bounds(timed and draw(st.booleans())))
        return ast.BoundedPast("since", (draw(sub), draw(sub)), bound)
    if kind == "not":
        return ast.Not(draw(sub))
    if kind in ("and", "or"):
        return ast.BoolOp("&&" if kind == "and" else "||", draw(sub), draw(sub))
    return draw(st.sampled_from([ast.Once, ast.Hist]))(draw(sub))


@st.composite
def timed_words(draw, max_len: int = 9):
    n = draw(st.integers(0, max_len))
    gaps = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    times = [sum(gaps[:k + 1]) for k in range(n)]
    tags = draw(st.lists(st.sampled_from(TAGS), min_size=n, max_size=n))
    xs = draw(st.lists(st.sampled_from([0.0, 1.0, 2.0, 3.0]), min_size=n, max_size=n))
    return times, tags, xs


def _records(dt, times, xs, delta_ns):
    """The records a timed run gives the DT: x, the time in δ, the durations in δ."""
    ends = {name: float(-(-ns // delta_ns)) for name, ns in durations(dt.fields).items()}
    return [{"x": x, CLOCK_FIELD: float(t), **ends} for t, x in zip(times, xs, strict=True)]


@settings(max_examples=150)
@given(formulas(), timed_words())
def test_the_dt_equals_the_oracle_on_every_prefix(query, word):
    typed = check(query, TAGS)
    dt = compile_query(typed.query, TAGS).value
    times, tags, xs = word
    records = _records(dt, times, xs, SECOND)
    events = list(zip(tags, records, strict=True))
    want = [(v,) for v in prefix_meanings(query, events)]
    assert_same_outputs(evaluate(dt, [0.0], events), want)


# --------------------------------------------------------------------------- brute force


def _mtl(f, times: list[int], tags: list[str], n: int) -> bool:
    """Point-based past MTL at event n, from the definition (an independent evaluator):
    f is ("tag", σ) | ("not", f) | ("and", f, g) | ("or", f, g) | ("once", lo, hi, f) |
    ("hist", lo, hi, f) | ("since", lo, hi, f, g) | ("prev", lo, hi, f); distances are
    in time units (lo ≤ t_n − t_k ≤ hi, hi None for ∞)."""
    op = f[0]
    if op == "tag":
        return tags[n] == f[1]
    if op == "not":
        return not _mtl(f[1], times, tags, n)
    if op in ("and", "or"):
        join = all if op == "and" else any
        return join(_mtl(g, times, tags, n) for g in f[1:])
    lo, hi = f[1], f[2]

    def inside(k: int) -> bool:
        d = times[n] - times[k]
        return lo <= d and (hi is None or d <= hi)

    if op == "once":
        return any(inside(k) and _mtl(f[3], times, tags, k) for k in range(n + 1))
    if op == "hist":
        return all(_mtl(f[3], times, tags, k) for k in range(n + 1) if inside(k))
    if op == "prev":
        return n >= 1 and inside(n - 1) and _mtl(f[3], times, tags, n - 1)
    return any(inside(k) and _mtl(f[4], times, tags, k)
               and all(_mtl(f[3], times, tags, m) for m in range(k + 1, n + 1))
               for k in range(n + 1))


def _random_formula(rng: random.Random, depth: int, reelay: bool = False):
    if depth == 0 or rng.random() < 0.25:
        return ("tag", rng.choice(TAGS))
    ops = ["not", "and", "or", "once", "hist", "since"] + ([] if reelay else ["prev"])
    op = rng.choice(ops)
    if op == "not":
        return ("not", _random_formula(rng, depth - 1, reelay))
    if op in ("and", "or"):
        return (op, _random_formula(rng, depth - 1, reelay),
                _random_formula(rng, depth - 1, reelay))
    lo = rng.randint(0, 4)
    hi = None if rng.random() < 0.2 else lo + rng.randint(0, 4)
    if reelay and hi == 0:
        hi = 1  # reelay 25.0 reads an upper bound 0 as none: [0:0] is its [0:]
    body = [_random_formula(rng, depth - 1, reelay) for _ in range(2 if op == "since" else 1)]
    return (op, lo, hi, *body)


def _exact(f) -> bool:
    """Whether f has an exact time distance [a, a], a > 0 (refused for durations: it
    would keep every event time within a; test_misuse_says_what_to_write)."""
    if f[0] == "tag":
        return False
    if f[0] in ("not", "and", "or"):
        return any(_exact(g) for g in f[1:])
    lo, hi, *body = f[1:]
    return (f[0] != "prev" and 0 < lo == hi) or any(_exact(g) for g in body)


def _qre_text(f, unit: str) -> str:
    """The formula as query text; bounds in ``unit`` ("s": durations, "": event counts)."""
    op = f[0]
    if op == "tag":
        return f"is({f[1]})"
    if op == "not":
        return f"!({_qre_text(f[1], unit)})"
    if op in ("and", "or"):
        joint = " && " if op == "and" else " || "
        return "(" + joint.join(_qre_text(g, unit) for g in f[1:]) + ")"
    bound = f"[{f[1]}{unit}, {'inf' if f[2] is None else f'{f[2]}{unit}'}]"
    if op == "since":
        return f"(({_qre_text(f[3], unit)}) since{bound} ({_qre_text(f[4], unit)}))"
    return f"{op}{bound}({_qre_text(f[3], unit)})"


def _reelay_text(f) -> str:
    op = f[0]
    if op == "tag":
        return "{" + f[1] + "}"
    if op == "not":
        return f"not({_reelay_text(f[1])})"
    if op in ("and", "or"):
        return "(" + f" {op} ".join(_reelay_text(g) for g in f[1:]) + ")"
    bound = f"[{f[1]}:{'' if f[2] is None else f[2]}]"
    if op == "since":
        return f"(({_reelay_text(f[3])}) since{bound} ({_reelay_text(f[4])}))"
    word = "historically" if op == "hist" else "once"
    return f"{word}{bound}({_reelay_text(f[3])})"


def _random_trace(rng: random.Random, n: int, max_gap: int):
    times, t = [], 0
    for _ in range(n):
        t += rng.randint(0, max_gap) if times else 0
        times.append(t)
    return times, [rng.choice(TAGS) for _ in range(n)]


@pytest.mark.parametrize("engine", ["reference", "table", "codegen"])
def test_run_timed_equals_brute_force_past_mtl(engine):
    """Random formulas over random timed traces with ties and gaps: time bounds through
    run_timed, count bounds through run, on every engine (codegen: a few formulas, each
    compiles a kernel)."""
    rng = random.Random(21)
    cases = 4 if engine == "codegen" else 40
    for _ in range(cases):
        f = _random_formula(rng, 3)
        times, tags = _random_trace(rng, 25, 3)
        want = [float(_mtl(f, times, tags, n)) for n in range(len(times))]
        if _exact(f):
            with pytest.raises(QreTypeError, match="widen it"):
                qre(f"alphabet p, q, r; {_qre_text(f, 's')}")
            continue
        timed = qre(f"alphabet p, q, r; {_qre_text(f, 's')}")
        rows = timed.run_timed(times, tags, time_unit="s", engine=engine,
                               tiebreak=list(range(len(tags))))  # ties in the given order
        assert rows["value"].tolist() == want, _qre_text(f, "s")
        counted = qre(f"alphabet p, q, r; {_qre_text(f, '')}")
        steps = list(range(len(tags)))  # one time unit per event: distances count events
        want_counts = [float(_mtl(f, steps, tags, n)) for n in range(len(tags))]
        assert counted.run(tags, engine=engine).value.tolist() == want_counts


_REELAY = """
import json, sys, reelay
out = []
for pattern, tags in json.load(sys.stdin):
    m = reelay.discrete_timed_monitor(pattern=pattern, condense=False)
    out.append([int(m.update({t: t == tag for t in "pqr"})["value"]) for tag in tags])
json.dump(out, sys.stdout)
"""


def test_reelay_discrete_monitors_agree():
    """reelay's discrete-time monitors (one time unit per event) on 150 random formulas:
    qre (count bounds, and time bounds with one second per event) gives the same
    verdict after every event, and so does the brute-force evaluator."""
    pytest.importorskip("reelay")
    rng = random.Random(2)
    formulas_ = [_random_formula(rng, 3, reelay=True) for _ in range(150)]
    traces = [[rng.choice(TAGS) for _ in range(20)] for _ in formulas_]
    jobs = [(_reelay_text(f), tags) for f, tags in zip(formulas_, traces, strict=True)]
    done = subprocess.run([sys.executable, "-c", _REELAY], input=json.dumps(jobs),
                          capture_output=True, text=True, check=True, timeout=300)
    verdicts = json.loads(done.stdout)
    for f, tags, theirs in zip(formulas_, traces, verdicts, strict=True):
        steps = list(range(len(tags)))
        mine = qre(f"alphabet p, q, r; {_qre_text(f, '')}").run(tags, engine="table")
        brute = [int(_mtl(f, steps, tags, n)) for n in steps]
        assert theirs == brute == mine.value.astype(int).tolist(), _reelay_text(f)
        if not _exact(f):
            timed = qre(f"alphabet p, q, r; {_qre_text(f, 's')}").run_timed(
                steps, tags, time_unit="s", engine="table")
            assert timed["value"].astype(int).tolist() == theirs, _reelay_text(f)


# --------------------------------------------------------------------------- state, text


def test_state_is_constant_for_a_zero_start_and_bounded_otherwise():
    def registers(bound: str) -> int:
        return qre(f"alphabet p, q; once[{bound}](is(p))").stats.registers

    zero = registers("0s, 10min")  # one register: the end of the latest interval
    assert registers("0s, 1h") == registers("0s, inf") == zero
    assert registers("5s, inf") == zero + 1  # its start too
    # K = 6 slots of two registers, a ring index and the latest end
    assert registers("5min, 6min") == zero - 1 + 2 * 6 + 2


def test_a_failure_within_the_last_ten_minutes():
    m = qre("alphabet login, fail; once[0s, 10min](is(fail))")
    rows = m.run_timed([0, 60, 600, 601, 2000], ["fail", "login", "login", "login", "login"],
                       time_unit="s")
    assert rows["value"].tolist() == [1.0, 1.0, 1.0, 0.0, 0.0]  # 600 s back still counts
    held = qre("alphabet m; hist[0s, 30s](fill_with(last(cur.x), const(0)) > 5)")
    rows = held.run_timed([0, 10, 20, 50, 55], ["m"] * 5, {"x": [6, 7, 4, 9, 8]},
                          time_unit="s")
    assert rows["value"].tolist() == [1.0, 1.0, 0.0, 0.0, 1.0]  # 20 is 30 s before 50


def test_bounds_parse_and_print_back():
    for text in ("once[0s, 10min](is(p))", "hist[0, 10](is(p))", "prev[1s, inf](is(p))",
                 "is(p) since[2, 5] !is(q)"):
        program = parse(f"alphabet p, q; {text}")
        assert parse(to_text(program)) == program
    assert parse("alphabet p; once[:10](is(p))").query.bound == ast.PastBound(0, 10, True)
    assert parse("alphabet p; once[0, 1h](is(p))").query.bound == \
        ast.PastBound(0, 3600 * SECOND, False)
    assert parse("alphabet p; once[2:](is(p))").query.bound == ast.PastBound(2, None, True)


def test_misuse_says_what_to_write():
    with pytest.raises(QreSyntaxError, match="two durations"):
        parse("alphabet p; once[1, 10s](is(p))")
    with pytest.raises(QreSyntaxError, match=r"expected ',' or ':' \(a bound is \[lo, hi\]\)"):
        parse("alphabet p; once[5s](is(p))")
    with pytest.raises(QreSyntaxError, match="lo ≤ hi"):
        parse("alphabet p; once[5s, 1s](is(p))")
    with pytest.raises(QreTypeError, match=r"widen it, e\.g\. to once\[1h, "):
        qre("alphabet p; once[1h, 1h](is(p))")
    with pytest.raises(QreTypeError, match=r"cur\.FIELD"):
        qre("alphabet p; once[0s, 10s](fill_with(last(cur), const(0)) > 3)")
    with pytest.raises(ValueError, match="run_timed"):
        qre("alphabet p; once[0s, 10s](is(p))").run(["p"])
    with pytest.raises(QreTypeError, match="defined after every event"):
        qre("alphabet p; once[0, 3](avg_last(2, cur) > 1)")
    assert slots(3600 * SECOND, 3600 * SECOND) > MAX_METRIC_SLOTS
