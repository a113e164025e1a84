"""Every engine through the Monitor, on random queries: one corpus, three engines, one oracle.

A query compiled by :func:`qre.qre` (optimized, the default) runs on ``reference``,
``table`` and ``codegen``; each must give, after every event, exactly (status and
value, bit for bit) what the Figure 25 reference evaluator gives on the
*unoptimized* DT A_α — so the optimizer and the compiled engines are checked
together against the oracle. ``run_keys`` and sessions fed in chunks (state
saved and restored across engines) must agree with single runs.

Numba compiles a codegen kernel per DT (about a second), so these tests draw
fewer examples than the DT-level ones (tests/test_codegen_engine.py).
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from query_strategies import base_queries, temporal_queries
from strategies import data_values

from dt.model import DT, Transition
from dt.reference import evaluate
from dt.terms import Apply, Const, Cur, Var
from dt.values import encode
from qre import Monitor, qre
from qre.runtime.monitor import SMALL_RUN

ROOT = Path(__file__).resolve().parents[1]
ALPHABET = ("a", "b")
ENGINES = ("reference", "table", "codegen")


@st.composite
def query_runs(draw):
    query = draw(st.one_of(base_queries(ALPHABET), temporal_queries(ALPHABET)))
    n = draw(st.integers(0, 10))
    tags = draw(st.lists(st.sampled_from(ALPHABET), min_size=n, max_size=n))
    values = draw(st.lists(data_values, min_size=n, max_size=n))
    keys = draw(st.lists(st.sampled_from(["k1", "k2", "k3"]), min_size=n, max_size=n))
    return qre(query, alphabet=list(ALPHABET)), keys, tags, values


def _oracle(m, tags, values):
    """Outputs after every event by the reference evaluator on the unoptimized DT."""
    dt = m.unoptimized
    rows = evaluate(dt, [0.0] * len(dt.initial), list(zip(tags, values, strict=True)))[1:]
    status = np.zeros((len(rows), len(dt.final)), dtype=np.uint8)
    value = np.full((len(rows), len(dt.final)), np.nan)
    for k, row in enumerate(rows):
        status[k], value[k] = encode(list(row))
    return status.reshape(-1), value.reshape(-1)


def _assert_bitwise(status, value, want_status, want_value):
    """Equal statuses; values equal bit for bit (-0.0 is not 0.0), except that any NaN
    equals any NaN: a NaN's sign and payload are not part of the semantics (LLVM may fold
    0/0 to a NaN of the other sign; numpy does not define them either)."""
    np.testing.assert_array_equal(status, want_status)
    value, want_value = np.asarray(value), np.asarray(want_value)
    np.testing.assert_array_equal(np.isnan(value), np.isnan(want_value))
    keep = ~np.isnan(want_value)
    np.testing.assert_array_equal(value[keep].view(np.int64), want_value[keep].view(np.int64))


@settings(max_examples=12)
@given(query_runs(), st.data())
def test_every_engine_equals_the_reference_on_the_unoptimized_dt(case, data):
    m, keys, tags, values = case
    assert m.unoptimized is not None and m.stats.size <= m.stats.unoptimized_size
    want = _oracle(m, tags, values)
    for engine in ENGINES:
        out = m.run(tags, values, engine=engine)
        _assert_bitwise(out.status, out.value, *want)
    # run_keys: every key alone, through every engine.
    together = {e: m.run_keys(keys, tags, values, engine=e) for e in ENGINES}
    for key in set(keys):
        rows = [k for k, kk in enumerate(keys) if kk == key]
        alone = _oracle(m, [tags[k] for k in rows], [values[k] for k in rows])
        for out in together.values():
            _assert_bitwise(out.status[rows], out.value[rows], *alone)
    # A session moved across engines through its flat state, cut anywhere.
    first, second = data.draw(st.permutations(ENGINES))[:2]
    cut = data.draw(st.integers(0, len(tags)))
    session = m.session(engine=first)
    a = session.feed(tags[:cut], values[:cut])
    b = m.session(state=session.state, engine=second).feed(tags[cut:], values[cut:])
    _assert_bitwise(np.concatenate([a.status, b.status]), np.concatenate([a.value, b.value]),
                    *want)


def test_auto_picks_codegen_once_prepared(tmp_path, monkeypatch):
    """``auto`` runs the table engine until the query's codegen kernel is ready, then codegen."""
    monkeypatch.setenv("QRE_CACHE_DIR", str(tmp_path))
    m = qre("combine(sum(cur * 3), const(0.5), +)", alphabet=["x"])
    assert m.resolve_engine("auto") == "table"
    m.prepare("codegen")
    assert m.resolve_engine("auto") == "codegen"
    out = m.run(["x", "x"], [1.0, 2.0])
    assert out.value.tolist() == [3.5, 9.5]


def test_auto_interprets_a_small_run_that_is_its_process_only_one(tmp_path, monkeypatch):
    """Issue 20: ``resolve_engine("auto", events=n)`` (``qre run``'s) is the reference
    engine up to SMALL_RUN event operations, cheaper than importing Numba for them;
    beyond, or without ``events`` (``run``, sessions), the rule is unchanged."""
    monkeypatch.setenv("QRE_CACHE_DIR", str(tmp_path))
    m = qre("combine(sum(cur * 5), const(0.75), +)", alphabet=["x"])
    small = SMALL_RUN // m.stats.ops_per_event
    assert m.resolve_engine("auto", events=0) == "reference"
    assert m.resolve_engine("auto", events=small) == "reference"
    assert m.resolve_engine("auto", events=small + 1) == "table"
    assert m.resolve_engine("auto") == "table"
    assert [m.resolve_engine(e, events=1) for e in ("table", "codegen")] == ["table", "codegen"]


def test_optimize_false_runs_the_dt_as_compiled():
    m = qre("sum(cur)", alphabet=["x"], optimize=False)
    assert m.unoptimized is None and m.stats.unoptimized_size is None
    assert m.run(["x", "x"], [1.0, 2.0], engine="table").value.tolist() == [1.0, 3.0]


@settings(max_examples=10)
@given(query_runs(), st.lists(st.integers(0, 10), max_size=4), st.sampled_from(ENGINES[1:]))
def test_a_session_fed_in_chunks_equals_one_run(case, cuts, engine):
    """Chunks of any sizes (empty ones too), state saved and restored between chunks."""
    m, _, tags, values = case
    whole = m.run(tags, values, engine=engine)
    bounds = [0, *sorted(min(c, len(tags)) for c in cuts), len(tags)]
    session = m.session(engine=engine)
    parts = []
    for lo, hi in itertools.pairwise(bounds):
        session = m.session(state=session.state, engine=engine)
        parts.append(session.feed(tags[lo:hi], values[lo:hi]))
    _assert_bitwise(np.concatenate([p.status for p in parts]),
                    np.concatenate([p.value for p in parts]), whole.status, whole.value)


@pytest.mark.parametrize("engine", ["table", "codegen"])
def test_run_keys_does_not_keep_every_keys_final_configuration(engine, codegen_cache):
    """Issue 19, point 17: run_keys returns outputs only, so it must not allocate a
    configuration per key (keys × states × 9 bytes: 933 MB for 1M keys × 46 states)."""
    n_states, n_keys = 120, 40_000
    states = tuple(f"q{k}" for k in range(n_states))
    transitions = tuple(Transition("a", frozenset({Var(q)}), q,
                                   Apply("add", (Var(q), Apply("mul", (Cur(), Const(float(k)))))))
                        for k, q in enumerate(states))
    m = Monitor.from_dt(DT(("a",), states, states, states[-1:], transitions), optimize=False)
    keys = np.arange(n_keys)
    codes = np.zeros(n_keys, dtype=np.int64)
    cur = np.arange(n_keys, dtype=np.float64)
    m.run_keys(keys[:10], codes[:10], cur[:10], engine=engine)  # compiled, loaded
    tracemalloc.start()
    out = m.run_keys(keys, codes, cur, engine=engine)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert out.value.tolist() == (cur * (n_states - 1)).tolist()
    finals = n_keys * n_states * 9
    assert peak < finals / 4, f"{peak / 1e6:.1f} MB; the final configurations: {finals / 1e6:.1f}"


@pytest.mark.parametrize("engine", ["table", "codegen"])
def test_advance_keys_without_finals_gives_the_same_outputs(engine, codegen_cache):
    m = qre("combine(sum(cur), max(cur), +)", alphabet=["x"])
    arrays = m._engine(engine)
    codes, cur = np.zeros(6, dtype=np.int64), np.array([1.0, -2.0, 3.0, 0.5, 7.0, -1.0])
    order, offsets = np.array([0, 2, 4, 1, 3, 5]), np.array([0, 3, 6])
    config = m._initial_config
    with_finals = arrays.advance_keys(order, offsets, codes, cur, *config)
    without = arrays.advance_keys(order, offsets, codes, cur, *config, finals=False)
    assert with_finals[0].shape == (2, len(m.dt.states)) and without[:2] == (None, None)
    np.testing.assert_array_equal(without[2], with_finals[2])
    np.testing.assert_array_equal(without[3], with_finals[3])


def test_auto_picks_codegen_after_a_codegen_run(tmp_path, monkeypatch):
    """Issue 19, point 18: a run with engine="codegen" compiles (and caches) what a run
    needs, so that "auto" picks codegen from then on, here and in a fresh process."""
    monkeypatch.setenv("QRE_CACHE_DIR", str(tmp_path))
    text = "combine(sum(cur * 7), const(0.125), +)"
    m = qre(text, alphabet=["x"])
    assert m.resolve_engine("auto") == "table"
    assert m.run(["x", "x"], [1.0, 2.0], engine="codegen").value.tolist() == [7.125, 21.125]
    assert m.resolve_engine("auto") == "codegen"
    script = (f"from qre import qre; m = qre({text!r}, alphabet=['x']); "
              f"print(m.resolve_engine('auto'))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, check=True, cwd=ROOT,
                          env={**os.environ, "QRE_CACHE_DIR": str(tmp_path)})
    assert done.stdout.split() == ["codegen"]


def _held_compile(monkeypatch, *, real: bool = True):
    """Make every background compile wait for the returned event, then (``real``) compile
    for real, in another process."""
    import threading

    from codegen.generated import CodegenEngine

    release, original = threading.Event(), CodegenEngine.compile_apart

    def held(self):  # type: ignore[no-untyped-def]
        if not release.wait(120):
            raise TimeoutError("the test never released the compile")
        return original(self) if real else 0.0

    monkeypatch.setattr(CodegenEngine, "compile_apart", held)
    return release


def test_a_background_compile_leaves_auto_on_the_table_engine_until_ready(tmp_path,
                                                                          monkeypatch):
    """Issue 19.16: ``prepare("codegen", background=True)`` returns while the kernel
    compiles (in another process); ``auto`` runs the table engine meanwhile, then codegen
    — the same outputs, and a session carries on across the switch."""
    monkeypatch.setenv("QRE_CACHE_DIR", str(tmp_path))
    release = _held_compile(monkeypatch)
    # A query no other test compiles: a kernel loaded in this process is ready anywhere.
    m = qre("combine(sum(cur * 3), const(0.625), +)", alphabet=["x"])
    thread = m.prepare("codegen", background=True)
    assert thread.is_alive() and thread.daemon
    assert m.prepare("codegen", background=True) is thread  # one compile per monitor
    assert m.resolve_engine("auto") == "table"
    session = m.session()
    assert session.feed(["x", "x"], [1.0, 2.0]).value.tolist() == [3.625, 9.625]
    release.set()
    thread.join(300)
    assert not thread.is_alive() and m.resolve_engine("auto") == "codegen"
    assert list((tmp_path / "__pycache__").glob("*.nbc"))  # the child's machine code
    resumed = m.session(state=session.state)
    assert resumed.feed(["x"], [4.0]).value.tolist() == [21.625]


def test_a_failed_background_compile_is_logged_and_auto_stays_on_table(tmp_path,
                                                                       monkeypatch, caplog):
    from codegen.generated import CodegenEngine

    monkeypatch.setenv("QRE_CACHE_DIR", str(tmp_path))

    def broken(self):  # type: ignore[no-untyped-def]
        raise OSError("no space left on device")

    monkeypatch.setattr(CodegenEngine, "compile_apart", broken)
    m = qre("sum(cur) > 1.375", alphabet=["x"])
    m.prepare("codegen", background=True).join(60)
    assert m.resolve_engine("auto") == "table"
    assert "background compile failed" in caplog.text
    assert m.run(["x", "x"], [1.0, 2.0]).value.tolist() == [0.0, 1.0]


def test_spark_plans_do_not_wait_for_the_kernel(tmp_path, monkeypatch):
    """Issue 19.16: ``make_plan`` with ``auto`` compiled the kernel on the driver before
    any data moved (minutes for thousands of states); now it starts the compile and
    returns, and workers pick the kernel up from the disk cache when it is there."""
    import pandas as pd

    from spark_udf.plan import make_plan

    monkeypatch.setenv("QRE_CACHE_DIR", str(tmp_path))
    release = _held_compile(monkeypatch, real=False)
    m = qre("sum(cur * 1.125)", alphabet=["x"])
    df = pd.DataFrame({"k": [1], "t": [0], "tag": ["x"], "v": [1.0]})
    plan = make_plan("monitor_frame", df, m, "k", "t", "tag", "v", (), "auto", "error")
    assert plan.engine == "auto" and m.resolve_engine("auto") == "table"
    thread = m.prepare("codegen", background=True)  # the one make_plan started
    assert thread.is_alive()
    release.set()
    thread.join(60)
    assert not thread.is_alive()


def test_a_large_auto_run_starts_the_background_compile(tmp_path, monkeypatch):
    """A run through auto of AUTO_COMPILE_EVENTS events or more, whose kernel is not ready,
    runs the table engine and starts the compile in the background (a smaller run, or a
    run on a named engine, does not): the runs after it take codegen once it is ready."""
    from qre.runtime import monitor as monitor_module

    monkeypatch.setenv("QRE_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(monitor_module, "AUTO_COMPILE_EVENTS", 3)
    release = _held_compile(monkeypatch)
    m = qre("combine(sum(cur * 5), const(0.375), +)", alphabet=["x"])
    started, original = [], monitor_module.Monitor._compile_in_background
    monkeypatch.setattr(monitor_module.Monitor, "_compile_in_background",
                        lambda self: started.append(1) or original(self))
    assert m.run(["x", "x"], [1.0, 2.0]).value.tolist() == [5.375, 15.375]
    m.run(["x"] * 3, [1.0] * 3, engine="table")
    assert not started  # two events; a named engine
    want = [5.375, 10.375, 15.375]
    assert m.run_keys([0, 1, 0, 1], ["x"] * 4, [1.0] * 4).value.tolist() == [5.375, 5.375,
                                                                               10.375, 10.375]
    assert started and m.resolve_engine("auto") == "table"
    release.set()
    monitor_module._BACKGROUND[m._engine("codegen").path].join(300)
    assert m.resolve_engine("auto") == "codegen"
    assert m.run(["x"] * 3, [1.0] * 3).value.tolist() == want
