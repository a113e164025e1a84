"""The table engine (codegen.tables + codegen.kernels) against the reference evaluator.

Differential and exact: statuses and values bit for bit (NaN equals NaN, -0.0
differs from 0.0), on random DTs with cycles, unprimed reads, init and eps
transitions (seed 003, §5.1), and on DTs compiled from random QRE queries.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from query_strategies import base_queries, temporal_queries
from strategies import (
    alphabets,
    arbitrary_dts,
    cyclic_dts,
    initial_vectors,
    keyed_cases,
    sized_words,
)
from util import assert_same_outputs, same, same_vector

from codegen.kernels import TableEngine, table_evaluate, table_initial
from codegen.tables import flatten
from dt.model import DT, EPS, INIT, Transition
from dt.reference import evaluate, initial_config, run
from dt.terms import OPS, Apply, Const, Cur, Var, evaluate_term, parse_term
from dt.values import BOT, TOP, decode
from qre.language.compiler import compile_query
from qre.language.typing import check


@st.composite
def dt_cases(draw):
    dt = draw(arbitrary_dts())
    return dt, draw(initial_vectors(dt)), draw(sized_words(dt.alphabet))


@given(dt_cases())
def test_arbitrary_dts_match_the_reference(case):
    dt, x, word = case
    assert same_vector(table_initial(dt, x), initial_config(dt, x))
    assert_same_outputs(table_evaluate(dt, x, word), evaluate(dt, x, word))
    # The whole final configuration, not only the outputs.
    engine = TableEngine(dt)
    status, value = engine.initial_config(x)
    codes = np.array([dt.alphabet.index(tag) for tag, _ in word], dtype=np.int64)
    cur = np.array([d for _, d in word], dtype=np.float64)
    status, value, _, _ = engine.advance(status, value, codes, cur)
    assert same_vector(decode(status, value), run(dt, x, word)[-1])


@given(cyclic_dts().flatmap(lambda dt: st.tuples(st.just(dt), initial_vectors(dt),
                                                 sized_words(dt.alphabet))))
def test_cyclic_dts_match_the_reference(case):
    dt, x, word = case
    assert_same_outputs(table_evaluate(dt, x, word), evaluate(dt, x, word))


@st.composite
def query_cases(draw):
    alphabet = draw(alphabets(2, 3))
    query = draw(st.one_of(base_queries(alphabet, depth=3), temporal_queries(alphabet, depth=2)))
    return alphabet, query, draw(sized_words(alphabet))


@given(query_cases())
def test_compiled_queries_match_the_reference(case):
    alphabet, query, word = case
    dt = compile_query(check(query, alphabet).query, alphabet).value
    assert_same_outputs(table_evaluate(dt, [0.0], word), evaluate(dt, [0.0], word))


@given(dt_cases(), st.data())
def test_skipped_events_keep_the_configuration(case, data):
    """Code -1 leaves the configuration alone and repeats the previous output row."""
    dt, x, word = case
    engine = TableEngine(dt)
    status, value = engine.initial_config(x)
    codes = [dt.alphabet.index(tag) for tag, _ in word]
    curs = [d for _, d in word]
    skips = data.draw(st.lists(st.integers(0, len(codes)), max_size=3))
    for k in sorted(skips, reverse=True):
        codes.insert(k, -1)
        curs.insert(k, 99.0)
    _, _, out_s, out_v = engine.advance(status, value, np.array(codes, dtype=np.int64),
                                        np.array(curs))
    rows = [tuple(decode(status[engine.tables.final], value[engine.tables.final]))]
    for s, v in zip(out_s, out_v, strict=True):
        rows.append(tuple(decode(s, v)))
    want = evaluate(dt, x, word)
    expected, k = [want[0]], 0
    for code in codes:
        k += code >= 0
        expected.append(want[k])
    assert_same_outputs(rows, expected)


def _tr(on: str, sources: list[str], target: str, term: str) -> Transition:
    t = parse_term(term)
    extra = {Var(s.rstrip("'"), s.endswith("'")) for s in sources}
    return Transition(on, frozenset(t.variables() | extra), target, t)


def test_record_events():
    """``cur.FIELD`` reads its column; a mapping of columns or an ordered matrix both work."""
    dt = DT(("a", "b"), ("s", "m", "r"), ("s",), ("s", "m", "r"), (
        _tr("a", ["s"], "s", "s + cur.x * cur.y"),
        _tr("b", ["m"], "m", "max(m, cur.y)"),
        _tr("a", ["m"], "m", "m"),
        _tr("init", [], "m", "0"),
        _tr(EPS, ["m'"], "r", "m' * 2"),
        _tr("b", ["r'"], "r", "r' + cur.x"),  # a cycle through r' on b: ⊤ once r' is defined
    ))
    word = [("a", {"x": 2.0, "y": 3.0}), ("b", {"x": -1.0, "y": 5.0}),
            ("a", {"x": 0.5, "y": -4.0}), ("b", {"x": 1.0, "y": float("nan")})]
    assert_same_outputs(table_evaluate(dt, [1.0], word), evaluate(dt, [1.0], word))
    engine = TableEngine(dt)
    assert engine.columns == ("x", "y")
    status, value = engine.initial_config([1.0])
    codes = np.array([dt.alphabet.index(t) for t, _ in word])
    columns = {f: np.array([d[f] for _, d in word]) for f in ("y", "x")}
    a = engine.advance(status, value, codes, columns)
    b = engine.advance(status, value, codes, np.stack([columns["x"], columns["y"]], axis=1))
    for left, right in zip(a, b, strict=True):
        assert left.tobytes() == right.tobytes()
    assert [decode(s, v)[2] for s, v in zip(a[2], a[3], strict=True)] == [0.0, TOP, 10.0, TOP]


EDGES = [0.0, -0.0, math.nan, math.inf, -math.inf, 1.0, -1.5, 2.0, 3.0]


def test_every_operation_on_edge_values():
    """Each op of OPS on signed zeros, NaN, infinities: the same bits as dt.terms."""
    names = sorted(OPS)
    fields = ("x", "y", "z")
    transitions = []
    for name in names:
        args = tuple(Cur(f) for f in fields[:OPS[name].arity])
        transitions.append(Transition("a", frozenset(), f"r_{name}", Apply(name, args)))
        # The same op on a constant and a primed variable: the other push opcodes.
        args2 = (Const(-0.0), Var(f"r_{name}", True), Const(math.nan))[:OPS[name].arity]
        transitions.append(Transition("a", frozenset({Var(f"r_{name}", True)}), f"c_{name}",
                                      Apply(name, args2)))
    states = tuple(f"{p}_{n}" for n in names for p in ("r", "c"))
    dt = DT(("a",), states, (), states, tuple(transitions))
    combos = list(itertools.product(EDGES, repeat=3))
    engine = TableEngine(dt)
    status, value = engine.initial_config([])
    data = np.array(combos)
    _, _, out_s, out_v = engine.advance(status, value, np.zeros(len(combos), dtype=np.int64),
                                        data)
    for row, combo in enumerate(combos):
        cur = dict(zip(fields, combo, strict=True))
        got = decode(out_s[row], out_v[row])
        for k, t in enumerate(transitions):
            env = {}
            if t.sources:
                env = {Var(t.target.replace("c_", "r_"), True): got[k - 1]}
            want = evaluate_term(t.term, env, cur)
            assert same(got[k], want), f"{t.term} on {combo}: got {got[k]}, want {want}"


def test_tables_layout():
    """Labels, blocks and bytecode of a small DT with a two-state cycle."""
    dt = DT(("a",), ("p", "q", "r"), ("p",), ("r",), (
        _tr("a", ["q'"], "p", "q' + 1"),
        _tr("a", ["r"], "p", "r"),
        _tr("a", ["p'"], "q", "p'"),
        _tr("a", ["p'", "q'"], "r", "p' * q'"),
        _tr(INIT, [], "r", "7"),
    ))
    t = flatten(dt)
    assert t.label_start.tolist() == [0, 1, 3]  # init: {r}; a: {p, q} then {r}
    assert t.block_cyclic.tolist() == [0, 1, 0]
    assert t.entry_state.tolist() == [2, 0, 1, 2]
    assert t.writers.tolist() == [4, 0, 1, 2, 3]
    assert t.max_stack == 2
    assert table_initial(dt, [BOT]) == (BOT, BOT, 7.0)
    # p = (q' + 1) ⊔ r = 8 ⊔ 7 = ⊤ in the least fixpoint, hence q and r too.
    assert table_evaluate(dt, [2.0], [("a", 0.0)]) == [(7.0,), (TOP,)]
    assert evaluate(dt, [2.0], [("a", 0.0)]) == [(7.0,), (TOP,)]


def test_tables_drop_transitions_always_bottom_on_a_label():
    """A cycle nothing feeds on a label is ⊥ in the least fixpoint: its transitions and
    their readers are left out of that label's schedule, with the same outputs."""
    dt = DT(("a", "b"), ("p", "q", "r"), ("p",), ("r",), (
        _tr("a", ["q'"], "p", "q' + 1"),
        _tr("a", ["p'"], "q", "p'"),
        _tr(EPS, ["p'", "q'"], "r", "p' * q'"),
        _tr("b", [], "p", "3"),
        _tr("b", ["p'"], "q", "p' + 1"),
    ))
    t = flatten(dt)
    assert t.label_start.tolist() == [0, 0, 0, 3]  # init, a: nothing; b: p, q, r
    assert t.entry_state.tolist() == [0, 1, 2]
    word = [("a", 1.0), ("b", 0.0), ("a", 2.0), ("b", 1.0)]
    for x in ([BOT], [2.0], [TOP]):
        assert_same_outputs(table_evaluate(dt, x, word), evaluate(dt, x, word))
    assert table_evaluate(dt, [2.0], word)[2] == (12.0,)


@given(keyed_cases())
def test_advance_keys_equals_each_key_alone(case):
    """advance_keys (keys in parallel) = advance on every key's rows alone, exactly."""
    dt, x, n_keys, rows = case
    engine = TableEngine(dt)
    status0, value0 = engine.initial_config(x)
    keys = [k for k, _, _ in rows]
    codes = np.array([c for _, c, _ in rows], dtype=np.int64)
    cur = np.array([d for _, _, d in rows], dtype=np.float64)
    # The grouping by a plain scan (not the Monitor's stable sort): key g's rows in input order.
    groups = [[r for r, k in enumerate(keys) if k == g] for g in range(n_keys)]
    order = np.array([r for group in groups for r in group], dtype=np.int64)
    offsets = np.cumsum([0] + [len(group) for group in groups]).astype(np.int64)
    fin_s, fin_v, out_s, out_v = engine.advance_keys(order, offsets, codes, cur, status0, value0)
    assert fin_s.shape == (n_keys, engine.tables.n_states)
    assert out_s.shape == (len(rows), len(dt.final))
    for g, group in enumerate(groups):
        idx = np.array(group, dtype=np.int64)
        s, v, alone_s, alone_v = engine.advance(status0, value0, codes[idx], cur[idx])
        assert same_vector(decode(fin_s[g], fin_v[g]), decode(s, v))
        for k, r in enumerate(group):
            assert same_vector(decode(out_s[r], out_v[r]), decode(alone_s[k], alone_v[k]))


def test_advance_keys_checks_the_grouping():
    dt = DT(("a",), ("q",), ("q",), ("q",), (_tr("a", ["q"], "q", "q + cur"),))
    engine = TableEngine(dt)
    status, value = engine.initial_config([1.0])
    codes, cur = np.zeros(3, dtype=np.int64), np.array([1.0, 2.0, 3.0])
    fin_s, fin_v, _, out_v = engine.advance_keys(np.array([0, 2, 1]), np.array([0, 2, 3]),
                                                 codes, cur, status, value)
    assert fin_s.tolist() == [[1], [1]] and fin_v.tolist() == [[5.0], [3.0]]
    assert out_v[:, 0].tolist() == [2.0, 3.0, 5.0]
    for order, offsets in [([0, 1, 1], [0, 3]), ([0, 1, 2], [0, 2]), ([0, 1, 3], [0, 3]),
                           ([0, 1, 2], [0, 2, 1, 3]), ([0, 1], [0, 3])]:
        with pytest.raises(ValueError):
            engine.advance_keys(np.array(order), np.array(offsets), codes, cur, status, value)


def test_advance_keys_many_skewed_keys():
    """Thousands of keys of very different lengths, many per parallel chunk."""
    dt = DT(("a", "b"), ("q", "r"), ("q",), ("q", "r"),
            (_tr("a", ["q"], "q", "q + cur"), _tr("b", ["q"], "q", "q * 0.5"),
             _tr("b", ["q'"], "r", "q' - cur")))
    engine = TableEngine(dt)
    status0, value0 = engine.initial_config([0.0])
    rng = np.random.default_rng(1)
    n = 20_000
    keys = np.minimum(rng.zipf(1.5, n), 3000) - 1  # one huge key, a long tail of small ones
    codes = rng.integers(-1, 2, n).astype(np.int64)
    cur = rng.normal(size=n)
    order = np.argsort(keys, kind="stable").astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(np.bincount(keys, minlength=3000))]).astype(np.int64)
    fin_s, fin_v, out_s, out_v = engine.advance_keys(order, offsets, codes, cur, status0, value0)
    for g in range(3000):
        rows = order[offsets[g]:offsets[g + 1]]
        s, v, alone_s, alone_v = engine.advance(status0, value0, codes[rows], cur[rows])
        assert np.array_equal(fin_s[g], s) and np.array_equal(fin_v[g], v, equal_nan=True)
        assert np.array_equal(out_s[rows], alone_s)
        assert np.array_equal(out_v[rows], alone_v, equal_nan=True)
