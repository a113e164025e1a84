"""The codegen engine (codegen.emit + codegen.generated) against the reference and the table engine.

Differential and exact (seed 003, §5.1): statuses bit for bit and values bit for
bit except the sign/payload of a NaN (``util.same``: NaN equals NaN, -0.0
differs from 0.0), after every prefix, on random DTs with cycles, unprimed
reads, init and eps transitions, and on DTs compiled from random queries; in
both code shapes (configuration in locals or in the arrays). Numba compiles one
module per DT (about a second), so the property tests draw few examples and
each example checks several properties of the same compiled DT.
"""

from __future__ import annotations

import ast
import itertools
import json
import math
import os
import stat
import subprocess
import sys
from pathlib import Path
from unittest.mock import patch

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from query_strategies import base_queries, temporal_queries
from strategies import (
    alphabets,
    arbitrary_dts,
    cyclic_dts,
    initial_vectors,
    keyed_cases,
    replicated_dts,
    sized_words,
)
from util import assert_same_outputs, same, same_vector

import codegen.grouping as grouping_module
from codegen import generated
from codegen.emit import MAX_REGISTER_STATES, MAX_UNROLLED_STATES, _Emitter, emit
from codegen.generated import CodegenEngine, is_ready
from codegen.kernels import TableEngine, engine_evaluate
from codegen.modes import reachable_modes, steady_modes, step_statuses
from codegen.tables import flatten
from dt.model import DT, EPS, Transition
from dt.reference import evaluate, initial_config, run
from dt.terms import OPS, Apply, Const, Cur, Var, evaluate_term, parse_term
from dt.values import decode, encode
from qre import qre
from qre.language import ast as qast
from qre.language.compiler import compile_query
from qre.language.typing import check

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module", autouse=True)
def cache_dir(codegen_cache):
    """A fresh module cache for this test module (``QRE_CACHE_DIR``)."""
    return codegen_cache


def encode_word(dt, word):
    codes = np.array([dt.alphabet.index(tag) for tag, _ in word], dtype=np.int64)
    return codes, np.array([d for _, d in word], dtype=np.float64)


def rows(status, value):
    return [tuple(decode(s, v)) for s, v in zip(status, value, strict=True)]


def assert_same_arrays(got, want):
    """(status, value) arrays: statuses equal, values as ``util.same`` where defined and
    exactly the contract's NaN elsewhere."""
    g_s, g_v = got
    w_s, w_v = want
    assert g_s.dtype == np.uint8 and g_v.dtype == np.float64
    assert g_s.shape == w_s.shape and np.array_equal(g_s, w_s)
    for s, a, b in zip(g_s.ravel(), g_v.ravel(), w_v.ravel(), strict=True):
        assert same(float(a), float(b)) if s == 1 else math.isnan(a)


# --------------------------------------------------------------------------- differential


def check_engine(dt, x, word, shape, data):
    """Everything one compiled DT must do: Δ_i, outputs after every prefix, the final
    configuration, skipped events, resuming from a mid-stream configuration."""
    engine = CodegenEngine(dt, **shape)
    table = TableEngine(dt)
    assert same_vector(decode(*engine.initial_config(x)), initial_config(dt, x))
    want = evaluate(dt, x, word)
    assert_same_outputs(engine_evaluate(engine, x, word), want)
    codes, cur = encode_word(dt, word)
    if not engine.columns:
        cur = None
    status0, value0 = engine.initial_config(x)
    got = engine.advance(status0, value0, codes, cur)
    assert same_vector(decode(got[0], got[1]), run(dt, x, word)[-1])
    ref = table.advance(*table.initial_config(x), codes, cur)
    for k in (0, 2):
        assert_same_arrays(got[k:k + 2], ref[k:k + 2])
    # Resumable: two batches from the configuration in between = one batch.
    cut = data.draw(st.integers(0, len(word)), label="cut")
    s1, v1, o1_s, o1_v = engine.advance(status0, value0, codes[:cut],
                                        None if cur is None else cur[:cut])
    s2, v2, o2_s, o2_v = engine.advance(s1, v1, codes[cut:], None if cur is None else cur[cut:])
    assert_same_arrays((s2, v2), got[:2])
    assert_same_arrays((np.concatenate([o1_s, o2_s]), np.concatenate([o1_v, o2_v])), got[2:])
    # Skipped events (code -1) keep the configuration and repeat the previous output row.
    skips = sorted(data.draw(st.lists(st.integers(0, len(word)), max_size=3), label="skips"))
    codes_x, cur_x = list(codes), [] if cur is None else list(cur)
    for k in reversed(skips):
        codes_x.insert(k, -1)
        if cur is not None:
            cur_x.insert(k, 99.0)
    out = engine.advance(status0, value0, np.array(codes_x, dtype=np.int64),
                         None if cur is None else np.array(cur_x))
    assert_same_arrays(out[:2], got[:2])
    expected, k = [], 0
    for code in codes_x:
        k += code >= 0
        expected.append(want[k])
    assert_same_outputs(rows(out[2], out[3]), expected)


# The code shapes: the default (locals for small DTs), the array shape that larger DTs get
# (registers=False) and the loop shape of the largest (codegen.loops); forcing locals on a
# large DT would only cost compile time.
SHAPES = st.sampled_from([{}, {"registers": False}, {"loops": True}])


@settings(max_examples=22)
@given(st.one_of(arbitrary_dts(), cyclic_dts()), SHAPES, st.data())
def test_random_dts_match_the_reference_and_the_table_engine(dt, shape, data):
    """Random DTs, and DTs dense in primed reads (multi-state cycles, Kleene blocks)."""
    x = data.draw(initial_vectors(dt), label="x")
    word = data.draw(sized_words(dt.alphabet), label="word")
    check_engine(dt, x, word, shape, data)


@settings(max_examples=300)  # no compilation: cheap
@given(st.one_of(arbitrary_dts(), cyclic_dts()), st.data())
def test_status_modes_follow_the_reference_statuses(dt, data):
    """Statuses do not depend on the data (codegen.modes): the status vectors that
    step_statuses computes from the initial vector's statuses, tag by tag, are the
    reference evaluator's after every prefix, whatever the values; and from a defined
    initial vector every one of them is a mode (the modes are closed under the tags)."""
    x = data.draw(initial_vectors(dt), label="x")
    word = data.draw(sized_words(dt.alphabet), label="word")
    em = _Emitter(flatten(dt), dt.states, dt.alphabet, True)
    seeds = dict(zip(em.tables.initial.tolist(), encode(list(x))[0].tolist(), strict=True))
    statuses = [step_statuses(em, 0, (0,) * len(dt.states), seeds)]
    for tag, _ in word:
        statuses.append(step_statuses(em, 1 + dt.alphabet.index(tag), statuses[-1]))
    want = [tuple(encode(list(config))[0].tolist()) for config in run(dt, x, word)]
    assert statuses == want
    modes = reachable_modes(em)
    if modes is not None and all(encode([v])[0][0] == 1 for v in x):
        assert set(statuses) <= set(modes) and modes[0] == statuses[0]
    steady = steady_modes(em)
    if steady is not None:  # closed under the tags, and reached from every mode
        labels = range(1, len(dt.alphabet) + 1)
        assert {step_statuses(em, label, m) for m in steady for label in labels} <= \
            set(steady)
        assert steady and set(steady) <= set(modes)


@settings(max_examples=6)  # each compiles a kernel (1-2 s)
@given(arbitrary_dts(acyclic=True), st.data())
def test_the_mode_loop_and_the_general_loop_agree(dt, data):
    """A DT with steady status modes, run from the initial configuration of a defined
    initial vector (the general loop until a steady mode, then the specialised one) and
    of any initial vector (perhaps the general loop throughout), with skipped events,
    split in two batches (the second perhaps starting in a steady mode): the table
    engine's outputs and configurations."""
    em = _Emitter(flatten(dt), dt.states, dt.alphabet, True)
    assume(steady_modes(em))
    engine, table = CodegenEngine(dt), TableEngine(dt)
    assert "def segment_modes(" in engine.source
    word = data.draw(sized_words(dt.alphabet, 12), label="word")
    codes, cur = encode_word(dt, word)
    codes[data.draw(st.lists(st.integers(0, max(len(word) - 1, 0)), max_size=3))
          if len(word) else []] = -1
    cur = cur if engine.columns else None
    cut = data.draw(st.integers(0, len(word)), label="cut")
    for x in ([1.0] * len(dt.initial), data.draw(initial_vectors(dt), label="x")):
        config = table.initial_config(x)
        mine = config
        for part in (slice(0, cut), slice(cut, None)):
            batch = (codes[part], None if cur is None else cur[part])
            want = table.advance(*config, *batch)
            got = engine.advance(*mine, *batch)
            for k in (0, 2):
                assert_same_arrays(got[k:k + 2], want[k:k + 2])
            config, mine = want[:2], got[:2]


@settings(max_examples=6)  # each compiles a kernel (1-2 s); the random-DT test draws loops too
@given(replicated_dts(), st.data())
def test_replicated_dts_in_the_loop_shape(dt, data):
    """Copies of a DT chained by links: blocks of one shape run in one loop, their states
    and constants from tables (codegen.loops), in an order that keeps every copy after
    the one it reads; the same outputs as the reference and the table engine."""
    x = data.draw(initial_vectors(dt), label="x")
    word = data.draw(sized_words(dt.alphabet), label="word")
    check_engine(dt, x, word, {"loops": True}, data)


@settings(max_examples=8)
@given(alphabets(2, 3).flatmap(lambda a: st.tuples(
    st.just(a), st.one_of(base_queries(a, depth=2), temporal_queries(a, depth=2)),
    sized_words(a))), SHAPES)
def test_compiled_queries_match_the_reference(case, shape):
    alphabet, query, word = case
    dt = compile_query(check(query, alphabet).query, alphabet).value
    assume(len(dt.states) <= 100)  # larger ones cost seconds of compilation: see below
    engine = CodegenEngine(dt, **shape)
    assert_same_outputs(engine_evaluate(engine, [0.0], word), evaluate(dt, [0.0], word))


def test_a_larger_compiled_dt_matches_the_table_engine():
    """combine(…, +) nested 8 deep (benchmarks/query_sizes.py): more than
    MAX_UNROLLED_STATES states, so the default code keeps the configuration in the
    arrays and steps in loops (codegen.loops); a long random word with skipped events,
    against the table engine, in that shape and in the straight-line one."""
    plus = qast.BuiltinOp("+")
    query: qast.Query = qast.Iter(qast.Atom("a", Cur()), 0.0, plus)
    for _ in range(8):
        query = qast.Combine((query, qast.Iter(qast.Atom("a", Cur()), 1.0, plus)), plus)
    query = qast.Split(query, qast.Atom("b", Cur()), plus)
    dt = compile_query(query, ("a", "b"), lean=None).value  # large: as §5.2 prints it
    assert len(dt.states) > MAX_UNROLLED_STATES
    rng = np.random.default_rng(7)
    codes = rng.integers(-1, 2, 5000).astype(np.int64)
    cur = rng.choice([-2.0, -0.5, 0.0, 1.0, 3.0], 5000)
    table = TableEngine(dt)
    status, value = table.initial_config([0.0])
    want = table.advance(status, value, codes, cur)
    for loops in (None, False):
        engine = CodegenEngine(dt, loops=loops)
        assert ("SLOTS = np.array" in engine.source) == (loops is None)
        assert_same_arrays(engine.initial_config([0.0]), (status, value))
        got = engine.advance(status, value, codes, cur)
        for k in (0, 2):
            assert_same_arrays(got[k:k + 2], want[k:k + 2])


def grouping(keys, n_keys):
    """Key g's rows in input order, by a plain scan: (groups, order, offsets)."""
    groups = [[r for r, k in enumerate(keys) if k == g] for g in range(n_keys)]
    order = np.array([r for group in groups for r in group], dtype=np.int64)
    offsets = np.cumsum([0] + [len(group) for group in groups]).astype(np.int64)
    return groups, order, offsets


@settings(max_examples=8)
@given(keyed_cases(), SHAPES)
def test_advance_keys_equals_each_key_alone(case, shape):
    """advance_keys = advance on every key's rows alone = the table engine's advance_keys."""
    dt, x, n_keys, rows_ = case
    engine = CodegenEngine(dt, **shape)
    status0, value0 = engine.initial_config(x)
    codes = np.array([c for _, c, _ in rows_], dtype=np.int64)
    cur = np.array([d for _, _, d in rows_], dtype=np.float64)
    cur = cur if engine.columns else None
    groups, order, offsets = grouping([k for k, _, _ in rows_], n_keys)
    got = engine.advance_keys(order, offsets, codes, cur, status0, value0)
    assert got[0].shape == (n_keys, engine.tables.n_states)
    assert got[2].shape == (len(rows_), len(dt.final))
    want = TableEngine(dt).advance_keys(order, offsets, codes, cur, status0, value0)
    for k in (0, 2):
        assert_same_arrays(got[k:k + 2], want[k:k + 2])
    # The rows grouped by key already (order None): the same, at the grouped rows.
    for by_groups in (engine, TableEngine(dt)):
        grouped = by_groups.advance_keys(None, offsets, codes[order],
                                         None if cur is None else cur[order], status0, value0)
        assert_same_arrays(grouped[:2], got[:2])
        assert_same_arrays(grouped[2:], (got[2][order], got[3][order]))
    # Given the key of each row: run_rows in input order (small DTs with registers), else
    # a counting sort and advance_keys; both engines.
    keys = np.array([k for k, _, _ in rows_], dtype=np.int64)
    present = np.unique(keys, return_inverse=True)[1].astype(np.int64)  # ids 0..k-1, all used
    for by_ids in (engine, TableEngine(dt)):
        assert_same_arrays(by_ids.advance_ids(present, codes, cur, status0, value0), got[2:])
    # run_rows in blocks of a few keys (each block's rows apart, side by side), the rows
    # partitioned and merged back in 1 to 3 parts.
    for budget, threads in ((0, 1), (9 * 2 * len(engine.tables.final), 2), (200, 3)):
        with patch.object(generated, "_BLOCK_BYTES", budget), \
                patch.object(generated, "_PARALLEL_ROWS", 0), \
                patch.object(grouping_module, "_PARTS_ROWS", 1), \
                patch.object(grouping_module.numba, "get_num_threads", lambda t=threads: t):
            assert_same_arrays(engine.advance_ids(present, codes, cur, status0, value0),
                               got[2:])
    # Resumed from a table of configurations, a row per key, updated in place (codegen:
    # run_rows with the kept states apart, the others written to the table by the kernel).
    for by_table in (engine, TableEngine(dt)):
        table_s, table_v = np.tile(status0, (n_keys, 1)), np.tile(value0, (n_keys, 1))
        assert_same_arrays(by_table.advance_table(keys, codes, cur, table_s, table_v),
                           got[2:])
        assert_same_arrays((table_s, table_v), got[:2])
    for g, group in enumerate(groups):
        idx = np.array(group, dtype=np.int64)
        s, v, alone_s, alone_v = engine.advance(status0, value0, codes[idx],
                                                None if cur is None else cur[idx])
        assert_same_arrays((got[0][g], got[1][g]), (s, v))
        assert_same_arrays((got[2][idx], got[3][idx]), (alone_s, alone_v))


def test_small_dts_run_keyed_rows_in_input_order(monkeypatch):
    """advance_ids takes run_rows (no grouping) for a small DT with registers, and groups
    the rows otherwise."""
    dt = DT(("a", "b"), ("q",), ("q",), ("q",), (_tr("a", ["q"], "q", "q + cur"),
                                                  _tr("b", ["q"], "q", "q * 0.5")))
    calls = []
    monkeypatch.setattr(CodegenEngine, "_call", lambda self, name, *args: calls.append(name)
                        or getattr(self.module(), name)(*args))
    status0, value0 = TableEngine(dt).initial_config([1.0])
    codes, cur = np.array([0, 1, 0, 0], dtype=np.int64), np.array([1.0, 2.0, 3.0, 4.0])
    keys = np.array([1, 0, 1, 0])
    want = TableEngine(dt).advance_ids(keys, codes, cur, status0, value0)
    assert want[1][:, 0].tolist() == [2.0, 0.5, 5.0, 4.5]
    for registers, runner in ((None, "run_rows"), (False, "run_chunk")):
        calls.clear()
        engine = CodegenEngine(dt, registers=registers)
        assert_same_arrays(engine.advance_ids(keys, codes, cur, status0, value0), want)
        assert set(calls) == {runner}
        with pytest.raises(ValueError, match=r"key ids must be in 0\.\.3"):  # index arrays
            engine.advance_ids(np.array([0, 9, 0, 1]), codes, cur, status0, value0)


def test_tags_with_the_same_step_share_one_branch():
    """Tags a and c step alike (the query only tells b apart): one branch for both, the
    outputs still the reference evaluator's on every prefix."""
    m = qre("alphabet a, b, c; fill_with(split(any_word(), atom(b, cur), snd), const(0))")
    engine = CodegenEngine(m.dt)
    assert "if (code == 0) | (code == 2):  # tags 'a', 'c'" in engine.source
    assert "elif code == 1:  # tag 'b'" in engine.source
    rng = np.random.default_rng(3)
    tags = list(rng.choice(["a", "b", "c"], 60))
    values = list(rng.choice([-1.5, 0.0, 2.0, 4.0], 60))
    want = m.run(tags, values, engine="reference")
    got = m.run(tags, values, engine="codegen")
    assert_same_arrays((got.status, got.value), (want.status, want.value))


def test_modes_share_a_tags_body_where_its_code_is_the_same():
    """Failure since success has two steady modes (after ok, after fail), but on each tag
    the same writers fire from both: the event loop branches on the tag only. x and y take
    turns on a (two steady modes, x defined or y): a, b and c's steps differ by mode, so
    they branch on it. Failure since success's outputs are the reference's on 300 random
    tags; the other DT's outputs and configurations are the table engine's, from the
    initial configuration, in two batches with skipped events."""
    fs = qre("let failed = fill_with(split(any_word(), atom(fail, 1), snd), const(0)) > const(0);"
             "let ok = fill_with(split(any_word(), atom(ok, 1), snd), const(0)) > const(0);"
             "!ok since failed", alphabet=["ok", "fail"])
    assert len(steady_modes(_Emitter(flatten(fs.dt), fs.dt.states, fs.dt.alphabet, True))) == 2
    engine = CodegenEngine(fs.dt)
    loop = engine.source.split("def segment_modes")[1].split("def segment_general")[0]
    assert "for i in range" in loop and "mode ==" not in loop.split("for i in range")[1] \
        .split("the statuses back")[0]
    tags = list(np.random.default_rng(4).choice(["ok", "fail"], 300))
    want, got = fs.run(tags, engine="reference"), fs.run(tags, engine="codegen")
    assert_same_arrays((got.status, got.value), (want.status, want.value))

    dt = DT(("a", "b", "c"), ("i", "x", "y", "z", "f", "g"), ("i",), ("f", "g"),
            (_tr("init", ["i'"], "x", "i'"), _tr("a", ["x"], "y", "x + cur"),
             _tr("a", ["y"], "x", "y * 2"), _tr("b", ["x"], "x", "x"),
             _tr("b", ["y"], "y", "y"), _tr("c", ["x"], "x", "x"), _tr("c", ["y"], "y", "y"),
             _tr("c", [], "z", "cur"), _tr("eps", ["x'"], "f", "x'"),
             _tr("eps", ["y'"], "f", "y' - 1"), _tr("eps", ["x'"], "g", "x'")))
    engine = CodegenEngine(dt)
    loop = engine.source.split("def segment_modes")[1].split("def segment_general")[0]
    assert loop.count("            if (mode == ") == 3  # a, b and c
    rng = np.random.default_rng(5)
    codes = rng.choice(np.array([0, 1, 2, -1], dtype=np.int8), 200)
    cur = rng.choice([-1.5, 0.0, 2.0, 0.25], 200)
    table = TableEngine(dt)
    want = got = table.initial_config([3.0])
    for part in (slice(0, 77), slice(77, None)):
        want = table.advance(*want[:2], codes[part], cur[part])
        got = engine.advance(*got[:2], codes[part], cur[part])
        for k in (0, 2):
            assert_same_arrays(got[k:k + 2], want[k:k + 2])


@pytest.mark.parametrize("status", [0, 1, 2])
def test_an_output_whose_status_no_step_changes_is_stored_after_the_loop(status):
    """q := q + cur on a, q := q * 0.5 on b: no step changes q's status, so the event loop
    stores only q's value and its status is written once after; r's status changes (b
    writes r from q', a does not write r). From q ⊥, defined or ⊤, with skipped events,
    the outputs are the table engine's. (o and p, a cycle on b, keep status modes out:
    with them the general loop runs only until a steady mode, codegen.modes.)"""
    dt = DT(("a", "b"), ("q", "r", "o", "p"), ("q",), ("q", "r"),
            (_tr("a", ["q"], "q", "q + cur"), _tr("b", ["q"], "q", "q * 0.5"),
             _tr("b", ["q'"], "r", "q' - cur"), _tr("b", ["q'"], "o", "q'"),
             _tr("b", ["p'"], "o", "p'"), _tr("b", ["o'"], "p", "o'")))
    engine = CodegenEngine(dt)
    assert "segment_modes" not in engine.source
    segment = engine.source.split("def segment")[1].split("def run_chunk")[0]
    assert "_put2(out_v, row, 0, v0)  # output 0: q, its status after the loop" in segment
    assert "_put2(out_s, row, 1, s1)  # output 1: r" in segment
    assert "_put2(out_s, i, 0, s0)" in segment and "_put2(out_s, row, 0," not in segment
    status0 = np.array([status, 1, 0, 0], dtype=np.uint8)
    value0 = np.array([2.5 if status == 1 else np.nan, 1.0, np.nan, np.nan])
    codes = np.array([0, -1, 1, 0, -1, 1], dtype=np.int8)
    cur = np.array([1.0, 9.0, 2.0, -0.0, 9.0, 0.5])
    got = engine.advance(status0, value0, codes, cur)
    want = TableEngine(dt).advance(status0, value0, codes, cur)
    for k in (0, 2):
        assert_same_arrays(got[k:k + 2], want[k:k + 2])
    assert got[2][:, 0].tolist() == [status] * 6


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8,
                                   np.uint64, np.float64])
def test_tag_codes_of_any_numeric_dtype_are_checked_then_narrowed(dtype):
    """The kernels read int8 codes for a small alphabet: codes of every dtype give the same
    outputs, and a code out of range is refused before narrowing could wrap it (256 as
    int8 is 0)."""
    dt = DT(("a", "b"), ("q",), ("q",), ("q",), (_tr("a", ["q"], "q", "q + cur"),
                                                  _tr("b", ["q"], "q", "q * 0.5")))
    table, engine = TableEngine(dt), CodegenEngine(dt)
    status0, value0 = table.initial_config([1.0])
    codes, cur = np.array([0, 1, 1, 0]).astype(dtype), np.array([1.0, 2.0, 3.0, 4.0])
    want = table.advance(status0, value0, codes.astype(np.int64), cur)
    for e in (table, engine):
        got = e.advance(status0, value0, codes, cur)
        assert_same_arrays(got[2:], want[2:])
    wide = np.dtype(dtype).itemsize > 1
    bad = np.array([0, 256 if wide else 100, 0, 0]).astype(dtype)
    for e in (table, engine):
        with pytest.raises(ValueError, match=r"tag codes must be in -1\.\.1"):
            e.advance(status0, value0, bad, cur)


def test_advance_keys_many_keys_in_parallel_threads():
    """Enough rows for the thread pool: thousands of skewed keys, every code shape."""
    dt = DT(("a", "b"), ("q", "r"), ("q",), ("q", "r"),
            (_tr("a", ["q"], "q", "q + cur"), _tr("b", ["q"], "q", "q * 0.5"),
             _tr("b", ["q'"], "r", "q' - cur")))
    rng = np.random.default_rng(1)
    n = 3 * generated._PARALLEL_ROWS
    keys = np.minimum(rng.zipf(1.5, n), 3000) - 1
    codes = rng.integers(-1, 2, n).astype(np.int64)
    cur = rng.normal(size=n)
    order = np.argsort(keys, kind="stable").astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(np.bincount(keys, minlength=3000))]).astype(np.int64)
    table = TableEngine(dt)
    status0, value0 = table.initial_config([0.0])
    want = table.advance_keys(order, offsets, codes, cur, status0, value0)
    for shape in ({}, {"registers": False}, {"loops": True}):
        got = CodegenEngine(dt, **shape).advance_keys(order, offsets, codes, cur, status0,
                                                      value0)
        for a, b in zip(got, want, strict=True):
            assert np.array_equal(a, b, equal_nan=True)


# --------------------------------------------------------------------------- terms and edges


def _tr(on: str, sources: list[str], target: str, term: str) -> Transition:
    t = parse_term(term)
    extra = {Var(s.rstrip("'"), s.endswith("'")) for s in sources}
    return Transition(on, frozenset(t.variables() | extra), target, t)


EDGES = [0.0, -0.0, math.nan, math.inf, -math.inf, 1.0, -1.5, 2.0, 3.0]


@pytest.mark.parametrize("shape", [{}, {"registers": False}, {"loops": True}])
def test_every_operation_on_edge_values(shape):
    """Each op of OPS on signed zeros, NaN, infinities, zero divisors and mod signs: the same
    bits as dt.terms and as the table engine. Constant operands test the emitted literals
    (-0.0, NaN, ±inf; in the loop shape, constants read from a table); a primed operand
    tests the primed locals."""
    names = sorted(OPS)
    fields = ("x", "y", "z")
    transitions = []
    for name in names:
        arity = OPS[name].arity
        transitions.append(Transition("a", frozenset(), f"r_{name}",
                                      Apply(name, tuple(Cur(f) for f in fields[:arity]))))
        args2 = (Const(-0.0), Var(f"r_{name}", True), Const(math.nan))[:arity]
        transitions.append(Transition("a", frozenset({Var(f"r_{name}", True)}), f"c_{name}",
                                      Apply(name, args2)))
        args3 = (Cur("y"), Const(math.inf), Const(-math.inf))[:arity]
        transitions.append(Transition("a", frozenset(), f"i_{name}", Apply(name, args3)))
    states = tuple(f"{p}_{n}" for n in names for p in ("r", "c", "i"))
    dt = DT(("a",), states, (), states, tuple(transitions))
    combos = list(itertools.product(EDGES, repeat=3))
    engine = CodegenEngine(dt, **shape)
    status, value = engine.initial_config([])
    codes = np.zeros(len(combos), dtype=np.int64)
    got = engine.advance(status, value, codes, np.array(combos))
    want = TableEngine(dt).advance(status, value, codes, np.array(combos))
    assert_same_arrays(got[2:], want[2:])
    for row, combo in enumerate(combos):
        cur = dict(zip(fields, combo, strict=True))
        out = decode(got[2][row], got[3][row])
        for k, t in enumerate(transitions):
            env = {Var(t.target.replace("c_", "r_"), True): out[k - 1]} if t.sources else {}
            expected = evaluate_term(t.term, env, cur)
            assert same(out[k], expected), f"{t.term} on {combo}: got {out[k]}, want {expected}"


def test_deep_terms_spill_to_temporaries():
    """A term nested 300 deep: the emitted source stays parseable (no parenthesis limit)."""
    term = Cur()
    for k in range(300):
        term = Apply("add" if k % 3 else "max", (term, Const(float(k % 7) - 3.0)))
    term = Apply("add", (Var("q"), term))
    dt = DT(("a",), ("q",), ("q",), ("q",), (Transition("a", frozenset({Var("q")}), "q", term),))
    engine = CodegenEngine(dt)
    ast.parse(engine.source)
    assert max(len(line) for line in engine.source.splitlines()) < 1000
    word = [("a", d) for d in (1.0, -2.0, 0.5)]
    assert_same_outputs(engine_evaluate(engine, [0.0], word), evaluate(dt, [0.0], word))


def test_degenerate_dts():
    """No states at all, and a tag without transitions (every state becomes ⊥); both
    code shapes."""
    empty = DT(("a", "b"), (), (), (), ())
    dt = DT(("a", "b"), ("q",), ("q",), ("q",), (_tr("a", ["q"], "q", "q + 1"),))
    word = [("a", 0.0), ("b", 0.0), ("a", 0.0)]
    for loops in (None, True):
        assert engine_evaluate(CodegenEngine(empty, loops=loops), [],
                               [("a", 1.0), ("b", 2.0)]) == [(), (), ()]
        assert_same_outputs(engine_evaluate(CodegenEngine(dt, loops=loops), [1.0], word),
                            evaluate(dt, [1.0], word))


def test_values_of_undefined_states_are_ignored():
    """A configuration with a stale value under status ⊥ (not the contract's NaN): the
    generated code never lets it through, not even into the output row of a leading
    skipped event or through a copy transition."""
    dt = DT(("a", "b"), ("q", "r"), ("q",), ("q", "r"),
            (_tr("a", ["q"], "q", "q + 1"), _tr("b", ["q"], "r", "q")))
    for shape in ({}, {"registers": False}, {"loops": True}):
        engine = CodegenEngine(dt, **shape)
        s, v, out_s, out_v = engine.advance(np.array([0, 0], np.uint8), np.array([5.0, 6.0]),
                                            np.array([-1, 1, 0]))
        assert out_s.tolist() == [[0, 0]] * 3 and s.tolist() == [0, 0]
        assert np.isnan(out_v).all() and np.isnan(v).all()


def test_record_events_and_validation():
    """``cur.FIELD`` columns, and the same input validation (one copy) as the table engine."""
    dt = DT(("a", "b"), ("s", "m"), ("s",), ("s", "m"), (
        _tr("a", ["s"], "s", "s + cur.x * cur.y"),
        _tr("b", ["m"], "m", "max(m, cur.y)"),
        _tr("init", [], "m", "0"),
    ))
    word = [("a", {"x": 2.0, "y": 3.0}), ("b", {"x": -1.0, "y": 5.0})]
    engine = CodegenEngine(dt)
    assert engine.columns == ("x", "y")
    assert_same_outputs(engine_evaluate(engine, [1.0], word), evaluate(dt, [1.0], word))
    status, value = engine.initial_config([1.0])
    codes = np.zeros(2, dtype=np.int64)
    bad_calls = [
        lambda e: e.advance(status, value, np.array([0, 2]), {"x": [1, 2], "y": [1, 2]}),
        lambda e: e.advance(status, value, codes, {"x": [1.0, 2.0]}),
        lambda e: e.advance(status, value, codes, np.zeros(2)),
        lambda e: e.advance(status[:1], value[:1], codes, np.zeros((2, 2))),
        lambda e: e.advance(np.array([3, 1], np.uint8), value, codes, np.zeros((2, 2))),
        lambda e: e.advance_keys(np.array([0, 0]), np.array([0, 2]), codes, np.zeros((2, 2)),
                                 status, value),
        lambda e: e.initial_config([1.0, 2.0]),
    ]
    for call in bad_calls:
        messages = []
        for e in (engine, TableEngine(dt)):
            with pytest.raises(ValueError) as err:
                call(e)
            messages.append(str(err.value))
        assert messages[0] == messages[1]


# --------------------------------------------------------------------------- emitted source


def test_emit_is_pure_and_readable():
    dt = DT(("a",), ("p", "q"), ("p",), ("q",), (
        _tr("a", ["q'"], "p", "q' + 1"), _tr("a", ["p'"], "q", "p' * -0.0"),
        _tr("a", ["p"], "q", "p"), _tr(EPS, ["p'"], "q", "min(p', inf)")))
    tables = flatten(dt)
    text = emit(tables, states=dt.states, tags=dt.alphabet)
    assert text == emit(flatten(dt), states=dt.states, tags=dt.alphabet)
    ast.parse(text)
    assert "# cyclic block {p', q'}" in text and "(-0.0)" in text and "np.inf" in text
    assert "# tag 'a'" in text
    # Default names, and the other code shape: still valid Python, different text.
    other = emit(tables, registers=False)
    ast.parse(other)
    assert other != text and "_put(status, 1," in other
    assert MAX_REGISTER_STATES >= 1


# --------------------------------------------------------------------------- cache


def test_same_dt_same_module_no_recompile(cache_dir):
    dt = DT(("a",), ("q",), ("q",), ("q",), (_tr("a", ["q"], "q", "q * 2 + cur"),))
    first = CodegenEngine(dt)
    assert first.path.parent == cache_dir
    assert first.path.name == f"qre_{first.digest}.py"
    assert not is_ready(dt) and not first.is_ready()
    first.compile()
    assert is_ready(dt) and first.is_ready()
    assert first.path.read_text(encoding="utf-8") == first.source
    second = CodegenEngine(DT.from_json(dt.to_json()))  # equal, not the same object
    assert second.path == first.path and second.module() is first.module()
    mod = first.module()
    counts = {f: len(getattr(mod, f).signatures) for f in ("init", "run_chunk")}
    status, value = second.initial_config([1.0])
    second.advance(status, value, np.zeros(3, dtype=np.int64), np.ones(3))
    second.advance_keys(np.arange(3), np.array([0, 3]), np.zeros(3, dtype=np.int64),
                        np.ones(3), status, value)
    assert counts == {f: len(getattr(mod, f).signatures) for f in counts} == {
        "init": 1, "run_chunk": 1}
    other = DT(("a",), ("q",), ("q",), ("q",), (_tr("a", ["q"], "q", "q * 3 + cur"),))
    assert CodegenEngine(other).path != first.path


def test_a_fresh_process_loads_from_disk(cache_dir):
    """A second process with the same DT loads Numba's cache: is_ready before any compile,
    cache hits and no misses, the same outputs. It loads without refreshing Numba's
    target context (0.1 s: codegen.numba_cache), the table engine's parallel kernel too."""
    dt = DT(("a", "b"), ("q", "r"), ("q",), ("r",), (
        _tr("a", ["q"], "q", "q + cur"), _tr("b", ["q'"], "r", "q' % 3"),
        _tr("b", ["q"], "q", "q")))
    engine = CodegenEngine(dt)
    engine.compile()
    codes = [0, 1, 0, 1, -1, 1]
    cur = [1.5, 0.0, -7.0, 0.0, 0.0, 0.0]
    _, _, out_s, out_v = engine.advance(*engine.initial_config([1.0]), np.array(codes),
                                        np.array(cur))
    keys = (np.arange(6), np.array([0, 2, 6]))
    table = TableEngine(dt)
    table_v = table.advance_keys(*keys, np.array(codes), np.array(cur),
                                 *table.initial_config([1.0]))[3]  # in Numba's cache now
    script = f"""
import json, numpy as np
from numba.core.base import BaseContext
from dt.model import DT
from codegen.generated import CodegenEngine, is_ready
from codegen.kernels import TableEngine
def refresh(self):
    raise AssertionError("loading refreshed Numba's target context")
BaseContext.refresh = refresh
dt = DT.from_json({dt.to_json()!r})
ready = is_ready(dt)
e = CodegenEngine(dt)
_, _, s, v = e.advance(*e.initial_config([1.0]), np.array({codes}), np.array({cur}))
stats = {{f: getattr(e.module(), f).stats for f in ("init", "run_chunk")}}
t = TableEngine(dt)
tv = t.advance_keys(np.arange(6), np.array([0, 2, 6]), np.array({codes}), np.array({cur}),
                    *t.initial_config([1.0]))[3]
print(json.dumps({{"ready": ready, "path": str(e.path), "s": s.tolist(), "v": v.tolist(),
    "hits": sum(sum(st.cache_hits.values()) for st in stats.values()),
    "misses": sum(sum(st.cache_misses.values()) for st in stats.values()),
    "table": tv.tolist()}}))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=ROOT, env={**_env(), "QRE_CACHE_DIR": str(cache_dir)},
                          timeout=120, check=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["ready"] and result["path"] == str(engine.path)
    assert result["hits"] == 2 and result["misses"] == 0
    assert result["s"] == out_s.tolist()
    assert np.array_equal(np.array(result["v"]), out_v, equal_nan=True)
    assert np.array_equal(np.array(result["table"]), table_v, equal_nan=True)


def test_compile_apart_compiles_in_another_process(cache_dir, monkeypatch):
    """Issue 19.16: the background compile runs in a child process (its own interpreter
    lock); this process only loads the machine code from the disk cache."""
    dt = DT(("a",), ("q",), ("q",), ("q",), (_tr("a", ["q"], "q", "q * 0.75 + cur"),))
    engine = CodegenEngine(dt)
    assert not engine.is_ready()
    engine.compile_apart()
    stats = {f: getattr(engine.module(), f).stats for f in ("init", "run_chunk")}
    assert sum(sum(st.cache_hits.values()) for st in stats.values()) == 2
    assert sum(sum(st.cache_misses.values()) for st in stats.values()) == 0
    _, value, _, _ = engine.advance(*engine.initial_config([4.0]), np.array([0]),
                                    np.array([1.0]))
    assert value.tolist() == [4.0]
    other = CodegenEngine(DT(("a",), ("q",), ("q",), ("q",),
                             (_tr("a", ["q"], "q", "q * 0.25 + cur"),)))
    monkeypatch.setattr(generated, "_CHILD", "import sys; sys.exit('no numba here')")
    with pytest.raises(RuntimeError, match=r"compiling process failed.*no numba here"):
        other.compile_apart()
    assert not other.is_ready()


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "QRE_CACHE_DIR"}


def test_an_unwritable_cache_falls_back_to_a_private_directory(tmp_path, monkeypatch, caplog):
    blocker = tmp_path / "a-file"
    blocker.write_text("", encoding="utf-8")
    monkeypatch.setenv("QRE_CACHE_DIR", str(blocker / "cache"))  # cannot be a directory
    dt = DT(("a",), ("q",), ("q",), ("q",), (_tr("a", ["q"], "q", "q - cur * 5"),))
    engine = CodegenEngine(dt)
    with caplog.at_level("WARNING", logger="codegen.generated"):
        _, value, _, _ = engine.advance(*engine.initial_config([1.0]), np.array([0, 0]),
                                        np.array([1.0, 2.0]))
    assert value.tolist() == [1.0 - 5.0 - 10.0]
    assert "cannot write" in caplog.text
    assert (generated._fallback_dir() / engine.path.name).read_text(encoding="utf-8") == \
        engine.source


def test_write_once_is_atomic_and_repairs(tmp_path):
    path = tmp_path / "sub" / "qre_x.py"
    generated._write_once(path, "A = 1\n")
    stamp = path.stat().st_mtime_ns
    generated._write_once(path, "A = 1\n")  # already there: not rewritten
    assert path.stat().st_mtime_ns == stamp
    path.write_text("A = ", encoding="utf-8")  # a damaged file is replaced
    generated._write_once(path, "A = 1\n")
    assert path.read_text(encoding="utf-8") == "A = 1\n"
    path.write_bytes(b"A = \x9d")  # even one that is not UTF-8 (a flipped bit)
    generated._write_once(path, "A = 1\n")
    assert path.read_text(encoding="utf-8") == "A = 1\n"
    assert sorted(p.name for p in path.parent.iterdir()) == ["qre_x.py"]  # no temporaries


# --------------------------------------------------------------------------- damaged caches

_DAMAGE = {
    "truncated index": lambda files: files[".nbi"].write_bytes(files[".nbi"].read_bytes()[:9]),
    "truncated object code": lambda files: files[".nbc"].write_bytes(
        files[".nbc"].read_bytes()[:100]),
    "garbage index": lambda files: files[".nbi"].write_bytes(b"\x80\x05not a pickle"),
    "empty object code": lambda files: files[".nbc"].write_bytes(b""),
}


def _numba_files(path: Path, function: str) -> dict[str, Path]:
    """The index and the (one) object file of a generated module's function."""
    pycache = path.parent / "__pycache__"
    return {ext: next(pycache.glob(f"{path.stem}.{function}-*{ext}")) for ext in (".nbi", ".nbc")}


_AUTO_RUN = """
import json, logging, numpy as np
from dt.model import DT
from qre import Monitor
logging.basicConfig(level=logging.WARNING)
m = Monitor.from_dt(DT.from_json({dt!r}), optimize=False)
engine = m.resolve_engine("auto")
out = m.run(["a"] * 4, [1.0, 2.0, 3.0, 4.0], engine="auto")
print(json.dumps({{"engine": engine, "value": out.value.tolist()}}))
"""


@pytest.mark.parametrize("damage", list(_DAMAGE))
def test_a_damaged_numba_cache_is_compiled_again(cache_dir, damage):
    """Issue 19, point 8: a truncated or corrupted cache file is a miss: a warning, a
    compile, the right outputs — and the next process loads the rewritten cache silently."""
    scale = 2.0 + list(_DAMAGE).index(damage)  # a module of its own per case
    dt = DT(("a",), ("q",), ("q",), ("q",), (_tr("a", ["q"], "q", f"q * {scale} + cur"),))
    engine = CodegenEngine(dt, registers=None)
    engine.compile()
    want = engine.advance(*engine.initial_config([0.0]), np.zeros(4, dtype=np.int64),
                          np.array([1.0, 2.0, 3.0, 4.0]))[3][:, 0].tolist()
    _DAMAGE[damage](_numba_files(engine.path, "run_chunk"))
    script = _AUTO_RUN.format(dt=dt.to_json())
    env = {**_env(), "QRE_CACHE_DIR": str(cache_dir)}
    for attempt in ("damaged", "repaired"):
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              cwd=ROOT, env=env, timeout=300, check=False)
        assert done.returncode == 0, done.stderr[-2000:]
        result = json.loads(done.stdout.strip().splitlines()[-1])
        assert result == {"engine": "codegen", "value": want}, attempt
        warned = "disk cache of run_chunk" in done.stderr and "is damaged" in done.stderr
        assert warned == (attempt == "damaged"), done.stderr[-2000:]


def test_every_cached_kernel_function_is_guarded():
    """The table engine's kernels and a generated module's functions treat a damaged disk
    cache as a miss (codegen.numba_cache): none is left unguarded."""
    from numba.core.caching import Cache
    from numba.core.dispatcher import Dispatcher

    from codegen import kernels

    dt = DT(("a",), ("q",), ("q",), ("q",), (_tr("a", ["q"], "q", "q - cur"),))
    for module in (kernels, CodegenEngine(dt).module()):
        cached = [v for v in vars(module).values()
                  if isinstance(v, Dispatcher) and isinstance(v._cache, Cache)]
        assert cached, module
        assert all(getattr(v._cache, "_qre_guarded", False) for v in cached), module


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_generated_modules_take_the_umask_like_any_file(tmp_path, monkeypatch, umask, mode):
    """Issue 19, point 18: modules were created 0600 (mkstemp's mode), so a cache directory
    shared by a group was unusable by all but their creator; they are now what the umask
    gives any new file (as Numba's own cache files are), when written and when repaired."""
    monkeypatch.setenv("QRE_CACHE_DIR", str(tmp_path / "shared"))
    dt = DT(("a",), ("q",), ("q",), ("q",), (_tr("a", ["q"], "q", f"q + cur * {umask}"),))
    old = os.umask(umask)
    try:
        engine = CodegenEngine(dt)
        generated._write_once(engine.path, engine.source)
        assert stat.S_IMODE(engine.path.stat().st_mode) == mode
        engine.path.write_text("damaged", encoding="utf-8")
        os.chmod(engine.path, 0o600)
        generated._write_once(engine.path, engine.source)  # repaired: a new file
        assert stat.S_IMODE(engine.path.stat().st_mode) == mode
    finally:
        os.umask(old)
