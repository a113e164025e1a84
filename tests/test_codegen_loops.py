"""The loop shape of the codegen engine (codegen.loops): its schedule, its size, large DTs.

The differential tests of every code shape (random DTs, replicated DTs, compiled queries,
edge values, keyed runs) are in test_codegen_engine.py; here: the schedule of runs is a
valid order of every label's step (checked without compiling, on many DTs), isomorphic
blocks share their code (a 1,000-state window is a few hundred lines), and DTs above
MAX_UNROLLED_STATES take the loop shape by default and match the table engine.
"""

from __future__ import annotations

import ast

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import arbitrary_dts, cyclic_dts, replicated_dts
from test_codegen_engine import assert_same_arrays

from codegen.emit import MAX_UNROLLED_STATES, _Emitter, emit
from codegen.generated import CodegenEngine
from codegen.kernels import TableEngine
from codegen.loops import _layout
from codegen.tables import flatten
from qre import qre


def window(slots: int) -> str:
    return f"alphabet a; aggregate(avg(cur), {slots}s, 1s)"


@settings(max_examples=200)
@given(st.one_of(arbitrary_dts(), cyclic_dts(), replicated_dts()))
def test_runs_are_a_valid_order_of_every_step(dt):
    """Replaying the runs' tables: every block's states are written once, after every
    state the block reads primed (written before on the label, or seeded at init), and
    the states a label does not write are exactly its CLEAR list."""
    tables = flatten(dt)
    em = _Emitter(tables, dt.states, dt.alphabet, registers=False)
    lay = _layout(em)
    shapes = dict(lay.shapes.values())
    initial = set(tables.initial.tolist())
    used = 0
    for label in range(len(tables.label_start) - 1):
        written: set[int] = set()
        for r in range(lay.run_start[label], lay.run_start[label + 1]):
            block = shapes[lay.run_shape[r]]
            width, targets = len(block.slots), len(block.entries)
            assert lay.run_slot[r] == used  # the runs' slots follow each other
            used += lay.run_count[r] * width
            for i in range(lay.run_count[r]):
                base = lay.run_slot[r] + i * width
                states = lay.slots[base:base + width]
                for (_, primed), j in block.slots.items():
                    if primed and j >= targets:
                        assert states[j] in written or (label == 0 and states[j] in initial)
                assert not written & set(states[:targets]), "a state written twice"
                written |= set(states[:targets])
        schedule = {q for _, entries in em.blocks(label) for q, _ in entries}
        assert written == schedule
        clear = lay.clear[lay.clear_start[label]:lay.clear_start[label + 1]]
        assert sorted(clear) == sorted(set(range(tables.n_states)) - written)
    assert used == len(lay.slots)


def test_a_window_of_1000_states_shares_its_code():
    """333 slots of a window: 1,001 states, a few shapes, a few hundred lines (the straight-
    line code has about 16 per state); the module parses and every table is read."""
    m = qre(window(333))
    assert len(m.dt.states) > MAX_UNROLLED_STATES
    source = CodegenEngine(m.dt).source
    ast.parse(source)
    assert "codegen.loops" in source.split('"""')[1]
    assert source.count("shape ==") <= 8
    assert source.count("\n") < 1000
    assert emit(flatten(m.dt), states=m.dt.states, tags=m.dt.alphabet) == source


def test_the_loop_shape_is_the_default_above_the_threshold():
    """Below MAX_UNROLLED_STATES the straight-line code (unchanged), above it the loops."""
    small, large = qre(window(10)), qre(window(MAX_UNROLLED_STATES // 3 + 1))
    assert len(small.dt.states) <= MAX_UNROLLED_STATES < len(large.dt.states)
    for m, loops in ((small, False), (large, True)):
        tables = flatten(m.dt)
        assert emit(tables) == emit(tables, loops=loops)
        assert ("SLOTS = np.array" in emit(tables)) == loops


def test_a_large_window_matches_the_table_engine():
    """A window of 100 slots (302 states, the loop shape by default): a long random word
    with skipped events, one stream and many keys, against the table engine."""
    m = qre(window(100))
    engine, table = CodegenEngine(m.dt), TableEngine(m.dt)
    assert "RUN_START" in engine.source
    rng = np.random.default_rng(5)
    n = 6000
    codes = rng.integers(-1, len(m.dt.alphabet), n).astype(np.int64)
    data = rng.choice([-2.0, -0.5, 0.0, 1.0, 3.0, np.nan], (n, len(engine.columns)))
    status, value = table.initial_config([0.0] * len(m.dt.initial))
    assert_same_arrays(engine.initial_config([0.0] * len(m.dt.initial)), (status, value))
    got, want = engine.advance(status, value, codes, data), table.advance(status, value, codes,
                                                                         data)
    for k in (0, 2):
        assert_same_arrays(got[k:k + 2], want[k:k + 2])
    keys = rng.integers(0, 40, n)
    order = np.argsort(keys, kind="stable").astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(np.bincount(keys, minlength=40))]).astype(np.int64)
    got = engine.advance_keys(order, offsets, codes, data, status, value)
    want = table.advance_keys(order, offsets, codes, data, status, value)
    for k in (0, 2):
        assert_same_arrays(got[k:k + 2], want[k:k + 2])
