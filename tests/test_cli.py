"""The ``qre`` command line (qre/cli.py; API.md "Command line").

Each subcommand is called through ``main([...])`` for each exit code (0, 1,
2); ``--json`` output must parse; bad inputs give exit 2, one line on stderr
and no traceback. ``check equiv`` is judged against an independent brute
force over all tag strings up to a length (dt.reference on the DTs), ``run``
against sums and digit strings computed by hand and, with ``--time``, against
dt.reference on each key's events sorted by (time, input row) (a shuffled file
and its time-sorted copy must agree row for row), ``check restartable``
against the paper's example and counterexample (§5.2.2).
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from paper_examples import paper_counterexample, paper_example
from query_strategies import base_queries
from util import same

from dt.cra import cra_evaluate
from dt.cra.json_io import cra_from_json
from dt.model import DT, Transition
from dt.projection import status_vector
from dt.reference import evaluate
from dt.terms import Apply, Const, Cur, Var
from dt.values import BOT, TOP, XValue
from qre import examples, qre
from qre.cli import main
from qre.language.printer import to_text
from qre.runtime import progress
from qre.runtime.monitor import Monitor


@pytest.fixture(autouse=True, scope="module")
def _no_long_run_summary():  # type: ignore[no-untyped-def]
    """A run that compiles a kernel can take longer than progress.LONG_RUN_S and then
    summarises its stages on stderr; these tests read stderr for errors only (the summary
    is tests/test_progress.py's)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(progress, "LONG_RUN_S", math.inf)
        yield

SUM = "iter(atom(a, cur), 0, +)"
ROOT = Path(__file__).resolve().parent.parent


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def assert_user_error(code: int, out: str, err: str, *needles: str) -> None:
    """Exit 2, nothing on stdout, one line on stderr naming ``needles``, no traceback."""
    assert code == 2
    assert out == ""
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    for needle in needles:
        assert needle in err, err


# --------------------------------------------------------------------------- compile


def test_compile_summary_and_files(capsys, tmp_path):
    dot, emit = tmp_path / "s.dot", tmp_path / "s.json"
    code, out, err = run_cli(capsys, "compile", SUM, "--dot", str(dot), "--emit", str(emit))
    m = qre(SUM)
    assert code == 0 and err == ""
    assert (f"after optimizer: {len(m.dt.states)} states, {len(m.dt.transitions)} transitions, "
            f"size {m.dt.size}") in out
    assert f"before optimizer: {len(m.unoptimized.states)} states" in out
    assert dot.read_text().startswith("digraph")
    assert DT.from_json(emit.read_text()) == DT.from_json(m.dt.to_json())


def test_compile_json_and_stats(capsys, tmp_path):
    query = tmp_path / "q.qre"
    query.write_text("# the running sum\n" + SUM + "\n")
    code, out, _ = run_cli(capsys, "compile", f"@{query}", "--stats", "--json")
    data = json.loads(out)
    stats = qre(SUM).stats
    assert code == 0
    assert data["after"] == {"states": stats.states, "transitions": stats.transitions,
                             "size": stats.size}
    assert data["before"]["size"] == stats.unoptimized_size
    assert data["stats"]["ops_per_event"] == stats.ops_per_event
    assert data["alphabet"] == ["a"]


def test_compile_a_dt_file(capsys, tmp_path):
    path = tmp_path / "paper.json"
    path.write_text(paper_example().to_json())
    code, out, _ = run_cli(capsys, "compile", str(path), "--json")
    assert code == 0
    data = json.loads(out)
    assert data["before"]["states"] == 2 and data["before"]["transitions"] == 1
    assert data["alphabet"] == ["a", "b"]


@pytest.mark.parametrize("argv, needles", [
    (["compile", "iter(atom(a, cur), 0, "], ["line 1, column"]),
    (["compile", "@/nonexistent/q.qre"], ["cannot read", "q.qre"]),
    (["compile", "/nonexistent/d.json"], ["cannot read", "d.json"]),
    (["compile", SUM, "--frobnicate"], ["--frobnicate"]),
    (["frobnicate"], ["frobnicate"]),
    ([], ["required"]),
])
def test_compile_bad_input_exits_2(capsys, argv, needles):
    code, out, err = run_cli(capsys, *argv)
    assert code == 2 and out == "" and "Traceback" not in err
    for needle in needles:
        assert needle in err
    if argv and argv[0] == "compile" and not argv[1].startswith("iter"):
        assert len(err.strip().splitlines()) == 1


def test_query_error_shows_caret(capsys):
    code, out, err = run_cli(capsys, "compile", "iter(atom(a, cur), 0, ")
    assert code == 2 and out == ""
    assert "^" in err and "Traceback" not in err


@pytest.mark.parametrize("text", ['{"a": 1}', "{not json", '{"alphabet": ["a"], "states": ["i"], '
                                  '"initial": ["i"], "final": ["zz"], "transitions": []}'])
def test_bad_dt_json_exits_2(capsys, tmp_path, text):
    path = tmp_path / "bad.json"
    path.write_text(text)
    assert_user_error(*run_cli(capsys, "compile", str(path)))


def test_help_lists_examples(capsys):
    code, out, _ = run_cli(capsys, "--help")
    assert code == 0
    assert "examples:" in out and "qre check equiv" in out


# --------------------------------------------------------------------------- check equiv


def test_equiv_query_and_its_emitted_dt(capsys, tmp_path):
    emit = tmp_path / "s.json"
    assert run_cli(capsys, "compile", SUM, "--emit", str(emit))[0] == 0
    code, out, _ = run_cli(capsys, "check", "equiv", SUM, str(emit), "--alphabet", "a,b")
    assert code == 0
    assert out.startswith("equivalent\n") and "values: proven equal on every data word" in out
    code, out, _ = run_cli(capsys, "check", "equiv", SUM, str(emit), "--statuses")
    assert code == 0 and "data values not compared" in out


def test_equiv_status_counterexample(capsys):
    # The sum is defined after "", the atom only after exactly "a".
    code, out, _ = run_cli(capsys, "check", "equiv", SUM, "atom(a, cur)")
    assert code == 1
    assert "not equivalent: the output statuses differ" in out
    assert "shortest counterexample: (the empty stream)" in out
    assert "Q1 outputs: 0.0" in out and "Q2 outputs: undefined" in out
    code, out, _ = run_cli(capsys, "check", "equiv", SUM, "atom(a, cur)", "--json")
    data = json.loads(out)
    assert code == 1 and data["equivalent"] is False
    c = data["counterexample"]
    assert (c["tags"], c["data"], c["found_by"]) == ([], [], "statuses")
    assert c["outputs"] == [[0.0], ["undefined"]]
    code, out, _ = run_cli(capsys, "check", "equiv", SUM, "atom(a, cur)", "--statuses", "--json")
    data = json.loads(out)
    assert code == 1 and data["level"] == "statuses"
    assert data["counterexample"] == {"tags": [], "statuses": [["defined"], ["undefined"]]}


def test_equiv_value_counterexample_is_replayed_data(capsys):
    """max and + agree on statuses; -0.0 separates them (0 + -0.0 = 0.0, max(0, -0.0) = -0.0)."""
    code, out, _ = run_cli(capsys, "check", "equiv", SUM, "iter(atom(a, cur), 0, max)",
                           "--json")
    data = json.loads(out)
    assert code == 1 and data["equivalent"] is False
    c = data["counterexample"]
    m1, m2 = qre(SUM, ["a"]), qre("iter(atom(a, cur), 0, max)", ["a"])
    values = [float(v) for v in c["data"]]
    y1, y2 = (float(m.run(c["tags"], values, engine="reference").value[-1]) for m in (m1, m2))
    assert [[repr(y1)], [repr(y2)]] == [[repr(v) for v in y] for y in c["outputs"]]
    assert repr(y1) != repr(y2)
    code, out, _ = run_cli(capsys, "check", "equiv", SUM, "iter(atom(a, cur), 0, max)")
    assert "not equivalent: the output values differ" in out and "counterexample: a(" in out


def test_equiv_undecided_exits_3(capsys):
    """x + cur + 0 equals x + cur on these sums (never -0.0), but no exact rewrite proves it."""
    plus_zero = "iter(atom(a, cur), 0, (x, y) -> x + y + 0)"
    code, out, _ = run_cli(capsys, "check", "equiv", SUM, plus_zero)
    assert code == 3 and out.startswith("undecided")
    assert "proven equal on every tag string of length <=" in out and "random words" in out
    code, out, _ = run_cli(capsys, "check", "equiv", SUM, SUM, "--max-pairs", "1", "--json")
    assert code == 3 and json.loads(out)["equivalent"] is None


def test_equiv_laws(capsys):
    """or is commutative; iteration unrolled once (proven, exit 0)."""
    assert run_cli(capsys, "check", "equiv", "or(atom(a, cur), atom(b, 2 * cur))",
                   "or(atom(b, 2 * cur), atom(a, cur))")[0] == 0
    assert run_cli(capsys, "check", "equiv", SUM,
                   f"or(eps(0), split({SUM}, atom(a, cur), +))")[0] == 0


def test_equiv_over_the_union_of_the_alphabets(capsys):
    code, out, _ = run_cli(capsys, "check", "equiv", SUM, "split(atom(b, 0), " + SUM + ", snd)")
    assert code == 1 and "shortest counterexample: (the empty stream)" in out


def test_equiv_of_queries_declaring_different_alphabets(capsys):
    """The message names the declaring query and the tags, not an alphabet= never passed."""
    code, out, err = run_cli(capsys, "check", "equiv", "alphabet a; sum(cur)",
                             "alphabet a, b; sum(cur)")
    assert_user_error(code, out, err, "Q1 declares the alphabet a", "tag(s) b")
    assert "alphabet=" not in err


@pytest.mark.parametrize("argv, needles", [
    (["check", "equiv", SUM, "atom(b, cur)", "--alphabet", ","], ["--alphabet"]),
    (["check", "equiv", SUM, "atom(c, cur)", "--alphabet", "a,b"], []),
    (["check", "equiv", SUM, "atom(a, cur.x)"], ["plain cur"]),
    (["check", "equiv", SUM], ["Q2"]),
    (["check", "frob", SUM], ["frob"]),
])
def test_equiv_bad_input_exits_2(capsys, argv, needles):
    code, out, err = run_cli(capsys, *argv)
    assert code == 2 and out == "" and "Traceback" not in err
    for needle in needles:
        assert needle in err


def _statuses_up_to(d: DT, length: int) -> dict[tuple[str, ...], tuple[int, ...]]:
    """Output statuses after every tag string of length <= ``length`` (data 0.0)."""
    x = (0.0,) * len(d.initial)
    table: dict[tuple[str, ...], tuple[int, ...]] = {}
    for word in itertools.product(sorted(d.alphabet), repeat=length):
        outs = evaluate(d, x, [(t, 0.0) for t in word])
        for k, y in enumerate(outs):
            table[word[:k]] = status_vector(y)
    return table


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_equiv_agrees_with_brute_force(data):
    """Equivalent: no tag string of length <= 4 separates the statuses; otherwise the
    counterexample separates them and no shorter string does."""
    alphabet = ("a", "b")
    first = to_text(data.draw(base_queries(alphabet, depth=3)))
    # Besides a random second query (mostly separated by a short string), variants of
    # the first: combine(Q, Q, +) has Q's statuses but other data (equivalent on
    # statuses), or(Q, ...) turns some later outputs into conflicts.
    second = data.draw(st.one_of(
        base_queries(alphabet, depth=3).map(to_text),
        st.just(f"combine({first}, {first}, +)"),
        st.sampled_from(["atom(b, 0)", "split(atom(a, 1), atom(b, 2), +)",
                         "iter(atom(a, cur), 0, +)"]).map(lambda q: f"or({first}, {q})"),
    ))
    texts = [first, second]
    argv = ["check", "equiv", *texts, "--alphabet", "a,b", "--statuses", "--json"]
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(argv)
    answer = json.loads(buf.getvalue())
    a, b = (qre(t, alphabet).dt for t in texts)
    names = ("undefined", "defined", "conflict")
    if code == 0:
        assert answer["equivalent"] is True
        sa, sb = _statuses_up_to(a, 4), _statuses_up_to(b, 4)
        assert sa == sb
    else:
        assert code == 1 and answer["equivalent"] is False
        word = tuple(answer["counterexample"]["tags"])
        depth = max(len(word), 1)
        sa, sb = _statuses_up_to(a, depth), _statuses_up_to(b, depth)
        assert [names[s] for s in sa[word]] == answer["counterexample"]["statuses"][0]
        assert [names[s] for s in sb[word]] == answer["counterexample"]["statuses"][1]
        assert sa[word] != sb[word]
        assert all(sa[w] == sb[w] for w in sa if len(w) < len(word))


# --------------------------------------------------------------------------- check restartable


@pytest.mark.parametrize("query", [SUM, "alphabet a, b; once(count() >= const(3))"])
def test_restartable_query(capsys, query):
    """Theorem 5.7: compiled base queries (and this help example) are restartable."""
    code, out, _ = run_cli(capsys, "check", "restartable", query)
    assert code == 0 and out.splitlines()[0] == "restartable"
    code, out, _ = run_cli(capsys, "check", "restartable", query, "--json")
    assert code == 0 and json.loads(out)["restartable"] is True


def test_restartable_paper_example(capsys, tmp_path):
    path = tmp_path / "ok.json"
    path.write_text(paper_example().to_json())
    assert run_cli(capsys, "check", "restartable", str(path))[0] == 0


def test_not_restartable_paper_counterexample(capsys, tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(paper_counterexample().to_json())
    code, out, _ = run_cli(capsys, "check", "restartable", str(path))
    assert code == 1
    assert "not restartable" in out and "tags:" in out and "thread at position" in out
    code, out, _ = run_cli(capsys, "check", "restartable", str(path), "--json")
    data = json.loads(out)
    assert code == 1 and data["restartable"] is False
    w = data["witness"]
    assert w["restarted"] != w["separate"]
    assert set(w["tags"]) <= {"a", "b"} and w["threads"]


def test_a_witness_without_threads_says_so(capsys):
    """A DT that outputs something although no thread started (all initial values ⊥)."""
    d = DT(("a",), ("i", "f"), ("i",), ("f",), (Transition("init", frozenset(), "f",
                                                           Const(1.0)),))
    code, out, _ = run_cli(capsys, "check", "restartable", _dt_file(d))
    assert code == 1
    assert "no thread started" in out and "the run outputs: defined" in out
    assert "but no thread means: undefined" in out and "separate threads" not in out


def test_restartable_reports_output_synchronization(capsys):
    """combine(Q1, Q2) of different rates is not output-synchronized (§5.2); a sum is."""
    code, out, _ = run_cli(capsys, "check", "restartable", SUM, "--json")
    assert code == 0 and json.loads(out)["output_synchronized"] is True
    d = DT(("a", "b"), ("i", "f", "g"), ("i",), ("f", "g"), (
        Transition("a", frozenset({Var("i")}), "f", Var("i")),
        Transition("b", frozenset({Var("i")}), "g", Var("i"))))
    code, out, _ = run_cli(capsys, "check", "restartable", _dt_file(d))
    assert "output-synchronized: no" in out


def test_not_restartable_offers_and_writes_the_restartable_form(capsys, tmp_path):
    """§5.2.2, last paragraph: the restartable form is built, its cost printed, and written
    with --convert; it is restartable and computes what the DT does (dt.reference)."""
    path, out_path = tmp_path / "bad.json", tmp_path / "good.json"
    path.write_text(paper_counterexample().to_json())
    code, out, _ = run_cli(capsys, "check", "restartable", str(path))
    assert code == 1 and "restartable form: size 10 ->" in out and "--convert" in out
    code, out, _ = run_cli(capsys, "check", "restartable", str(path), "--convert",
                           str(out_path), "--json")
    data = json.loads(out)
    assert code == 1 and data["restartable_form"]["exists"] and data["convert"] == str(out_path)
    made = DT.from_json(out_path.read_text())
    assert run_cli(capsys, "check", "restartable", str(out_path))[0] == 0
    word = [("a", 1.0), ("a", 2.0), ("b", 3.0), ("a", 4.0)]
    assert evaluate(made, (5.0,), word) == evaluate(paper_counterexample(), (5.0,), word)


def test_no_restartable_form_says_why(capsys):
    d = DT(("a",), ("i", "f"), ("i",), ("f",), (Transition("init", frozenset(), "f",
                                                           Const(1.0)),))
    code, out, _ = run_cli(capsys, "check", "restartable", _dt_file(d))
    assert code == 1 and "no restartable form: with every input ⊥" in out


def test_compile_to_cra(capsys, tmp_path):
    """Theorem 5.8: the CRA of the optimized DT, its size printed and its JSON written; it
    computes the DT's outputs."""
    emit = tmp_path / "cra.json"
    code, out, _ = run_cli(capsys, "compile", SUM, "--to", "cra", "--emit", str(emit))
    assert code == 0 and "CRA (Theorem 5.8): 3 control states" in out
    cra = cra_from_json(emit.read_text())
    dt = qre(SUM).dt
    word = [("a", 1.5), ("a", 2.0)]
    assert cra_evaluate(cra, (0.0,), word) == evaluate(dt, (0.0,), word)
    code, out, _ = run_cli(capsys, "compile", SUM, "--to", "cra", "--json")
    assert json.loads(out)["cra"]["control_states"] == 3
    assert_user_error(*run_cli(capsys, "compile", SUM, "--to", "cra", "--dot",
                               str(tmp_path / "x.dot")))


ALGORITHM = examples.read_text("sum_since_alarm.py")


def test_a_streaming_algorithm_file_runs_and_checks(capsys, tmp_path):
    """A .py file is a streaming algorithm (Theorem 5.11): run, compiled, checked; a
    condition on data is refused with its line, column and caret."""
    algo, events = tmp_path / "alarm.py", tmp_path / "events.csv"
    algo.write_text(ALGORITHM)
    events.write_text("tag,value\nok,1\nalarm,2\nok,3\nreset,4\nok,5\nalarm,1\n")
    code, out, _ = run_cli(capsys, "run", str(algo), "--input", str(events), "--value",
                           "value", "--prefix", "q_")
    frame = pd.read_csv(io.StringIO(out))
    assert code == 0 and frame["q_value"].fillna(-1).tolist() == [-1, 3.0, 6.0, -1, -1, 10.0]
    code, out, _ = run_cli(capsys, "check", "restartable", str(algo))
    assert code == 1 and "no restartable form: with every input ⊥" in out
    algo.write_text(ALGORITHM.replace("if seen:", "if total > 3:"))
    code, out, err = run_cli(capsys, "compile", str(algo))
    assert code == 2 and "regularity" in err and "line 26, column 8" in err and "^" in err


def _dt_file(d: DT) -> str:
    path = Path(tempfile.mkdtemp()) / "d.json"
    path.write_text(d.to_json())
    return str(path)


# --------------------------------------------------------------------------- check language


def test_language_of_a_split(capsys):
    """split(a, b*): L = L̄ = a·b*: shortest in "a", shortest outside "" (independently
    checked on the reference evaluator below)."""
    q = "split(atom(a, cur), iter(atom(b, cur), 0, +), +)"
    code, out, _ = run_cli(capsys, "check", "language", q, "--json")
    (o,) = json.loads(out)["outputs"]
    assert code == 0
    assert o["L"] == {"empty": False, "universal": False, "shortest_in": ["a"],
                      "shortest_not_in": []}
    assert o["L_bar"] == o["L"]
    m = qre(q, ["a", "b"])
    assert m.run(["a"], [1.0], engine="reference").status[-1] == 1
    assert m.initial[0] == 0


def test_language_universal_and_empty(capsys):
    code, out, _ = run_cli(capsys, "check", "language", SUM)
    assert code == 0 and out.count("universal (every tag string)") == 2
    # Two defined contributions on every a: L is empty, L̄ is not.
    d = DT(("a",), ("i", "f"), ("i",), ("f",), (
        Transition("a", frozenset({Var("i")}), "f", Var("i")),
        Transition("a", frozenset({Var("i")}), "f", Var("i"))))
    code, out, _ = run_cli(capsys, "check", "language", _dt_file(d))
    assert code == 0
    assert "L (defined):             empty (no tag string)" in out
    assert "shortest in: a; shortest not in: (the empty stream)" in out


def test_language_several_outputs_and_limit(capsys):
    d = DT(("a", "b"), ("i", "f", "g"), ("i",), ("f", "g"), (
        Transition("a", frozenset({Var("i")}), "f", Var("i")),
        Transition("b", frozenset({Var("i")}), "g", Var("i"))))
    code, out, _ = run_cli(capsys, "check", "language", _dt_file(d))
    assert code == 0 and "output f:" in out and "output g:" in out
    assert_user_error(*run_cli(capsys, "check", "language", _dt_file(d), "--max-configs", "1"),
                      "undecided")


def test_restartable_bad_input_exits_2(capsys):
    assert_user_error(*run_cli(capsys, "check", "restartable", "@/nonexistent.qre"),
                      "nonexistent.qre")


# --------------------------------------------------------------------------- run


@pytest.fixture
def events(tmp_path) -> Path:
    path = tmp_path / "events.csv"
    pd.DataFrame({"k": ["x", "y", "x", "y", "x"], "tag": ["a", "b", "a", "a", "a"],
                  "v": [1.0, 2.0, 3.0, 4.0, 5.0], "w": [10.0, 20.0, 30.0, 40.0, 50.0],
                  "t": [1, 2, 3, 4, 5]}).to_csv(path, index=False)
    return path


SUM_AB = "alphabet a, b; iter(or(atom(a, cur), atom(b, 0)), 0, +)"


def test_run_csv_to_stdout(capsys, events):
    code, out, err = run_cli(capsys, "run", SUM_AB, "--input", str(events), "--value", "v")
    assert code == 0 and err == ""
    frame = pd.read_csv(io.StringIO(out))
    assert list(frame.columns) == ["k", "tag", "v", "w", "t", "status", "value"]
    assert frame["status"].tolist() == [1] * 5
    assert frame["value"].tolist() == [1.0, 1.0, 4.0, 8.0, 13.0]  # running sum of a's


def test_run_keyed_parquet(capsys, events, tmp_path):
    out_path = tmp_path / "out.parquet"
    code, out, _ = run_cli(capsys, "run", SUM_AB, "--input", str(events), "--key", "k",
                           "--value", "v", "--time", "t", "--output", str(out_path), "--json")
    assert code == 0 and json.loads(out) == {"rows": 5, "output": str(out_path)}
    frame = pd.read_parquet(out_path)
    # x: 1, 1+3, 1+3+5; y: b counts 0, then 4.
    assert frame["value"].tolist() == [1.0, 0.0, 4.0, 4.0, 9.0]
    assert frame["k"].tolist() == ["x", "y", "x", "y", "x"]


def test_run_parquet_in_record_fields_json(capsys, events, tmp_path):
    path = tmp_path / "events.parquet"
    pd.read_csv(events).to_parquet(path, index=False)
    query = "alphabet a, b; iter(or(atom(a, cur.v * cur.w), atom(b, 0)), 0, +)"
    code, out, _ = run_cli(capsys, "run", query, "--input", str(path), "--value", "v",
                           "--value", "w", "--json")
    rows = json.loads(out)
    assert code == 0
    assert [r["value"] for r in rows] == [10.0, 10.0, 100.0, 260.0, 510.0]


def test_run_undefined_outputs_as_empty(capsys, events):
    out_path = events.with_name("o.csv")
    code, _, _ = run_cli(capsys, "run", "alphabet a, b; atom(a, cur)", "--input",
                         str(events), "--value", "v", "--output", str(out_path))
    frame = pd.read_csv(out_path)
    assert code == 0
    assert frame["status"].tolist() == [1, 0, 0, 0, 0]
    assert frame["value"].isna().tolist() == [False, True, True, True, True]


def test_run_two_outputs(capsys, events, tmp_path):
    """A DT with final states f, g gives status_f, value_f, status_g, value_g."""
    i = Var("i")
    two = DT(("a", "b"), ("i", "f", "g"), ("i",), ("f", "g"), (
        Transition("a", frozenset({i}), "i", i),
        Transition("b", frozenset({i}), "i", i),
        Transition("a", frozenset({i}), "f", Apply("add", (i, Cur()))),
        Transition("b", frozenset({i}), "g", Apply("neg", (Cur(),))),
    ))
    path = tmp_path / "two.json"
    path.write_text(two.to_json())
    code, out, _ = run_cli(capsys, "run", str(path), "--input", str(events), "--value", "v")
    frame = pd.read_csv(io.StringIO(out))
    assert code == 0
    assert frame["status_f"].tolist() == [1, 0, 1, 1, 1]
    assert frame["status_g"].tolist() == [0, 1, 0, 0, 0]
    assert frame["value_f"].fillna(-1).tolist() == [1.0, -1, 3.0, 4.0, 5.0]
    assert frame["value_g"].fillna(-1).tolist() == [-1, -2.0, -1, -1, -1]


def test_run_never_overwrites_an_input_column(capsys, tmp_path):
    """The bundled events.csv has a column named value: an output may not replace it
    (before 0.2 it was silently overwritten); --prefix names the outputs apart."""
    path = tmp_path / "events.csv"
    path.write_text(examples.read_text("events.csv"))
    amounts = pd.read_csv(path)["value"].tolist()
    query = "alphabet amount, reset; sum(cur)"
    assert_user_error(*run_cli(capsys, "run", query, "--input", str(path), "--value", "value"),
                      "'value'", "overwrite", "--prefix qre_")
    rows = run_rows(capsys, query, "--input", str(path), "--value", "value",
                    "--prefix", "qre_")
    assert list(rows.columns) == ["tag", "value", "qre_status", "qre_value"]
    assert rows["value"].tolist() == amounts
    assert rows["qre_value"].tolist() == np.cumsum(amounts).tolist()


def test_run_without_a_tag_column_when_the_query_has_one_tag(capsys, tmp_path):
    path = write_csv(tmp_path / "r.csv", "sensor,temp\ns1,10\ns1,20\ns2,5\n")
    rows = run_rows(capsys, "alphabet m; avg(cur)", "--input", str(path), "--key", "sensor",
                    "--value", "temp")
    assert list(rows.columns) == ["sensor", "temp", "status", "value"]
    assert rows["value"].tolist() == [10.0, 15.0, 5.0]
    # Two tags: which column holds them must be said.
    assert_user_error(*run_cli(capsys, "run", SUM_AB, "--input", str(path), "--value",
                               "temp"), "no column 'tag'", "a, b", "--tag COL")
    # A --tag named explicitly must exist.
    assert_user_error(*run_cli(capsys, "run", "alphabet m; avg(cur)", "--input", str(path),
                               "--tag", "kind", "--value", "temp"), "--tag", "'kind'")
    # A timed query with one event tag (the tick is the clock's) works alike.
    path = write_csv(tmp_path / "w.csv", "t,temp\n1,10\n2,20\n70,5\n")
    rows = run_rows(capsys, "alphabet m; aggregate(max(cur), 1min)", "--input", str(path),
                    "--time", "t", "--value", "temp")
    assert rows["value"].tolist() == [20.0, 5.0] and (rows["tag"] == "tick").all()


def test_run_alphabet_option(capsys, events):
    """--alphabet as in check: the query mentions only a; the file also has b events."""
    rows = run_rows(capsys, "sum(cur)", "--input", str(events), "--value", "v",
                    "--alphabet", "a,b")
    assert rows["value"].tolist() == [1.0, 3.0, 6.0, 10.0, 15.0]
    assert_user_error(*run_cli(capsys, "run", "sum(cur)", "--input", str(events), "--value",
                               "v", "--alphabet", "a"), "unknown tag 'b'")


def test_run_two_outputs_collide_with_prefixed_names(capsys, events, tmp_path):
    """The proposed prefix avoids every input column, whatever they are called."""
    frame = pd.read_csv(events).assign(status=0, qre_status=0)
    path = tmp_path / "taken.csv"
    frame.to_csv(path, index=False)
    assert_user_error(*run_cli(capsys, "run", SUM_AB, "--input", str(path), "--value", "v"),
                      "'status'", "--prefix _qre_")


@pytest.mark.parametrize("extra, needles", [
    (["--value", "nope"], ["'nope'"]),
    (["--value", "v", "--tag", "label"], ["--tag", "'label'"]),
    (["--value", "v", "--key", "user"], ["--key", "'user'"]),
    (["--value", "v", "--time", "when"], ["--time", "'when'"]),
    ([], ["cur"]),
])
def test_run_missing_column_exits_2(capsys, events, extra, needles):
    assert_user_error(*run_cli(capsys, "run", SUM_AB, "--input", str(events), *extra),
                      *needles)


def test_run_unknown_tag_exits_2(capsys, events):
    assert_user_error(*run_cli(capsys, "run", SUM, "--input", str(events), "--value", "v"),
                      "'b'")


def test_run_bad_files_exit_2(capsys, events, tmp_path):
    assert_user_error(*run_cli(capsys, "run", SUM_AB, "--input", str(tmp_path / "no.csv"),
                               "--value", "v"), "no.csv")
    assert_user_error(*run_cli(capsys, "run", SUM_AB, "--input", str(tmp_path / "e.txt"),
                               "--value", "v"), "e.txt")
    assert_user_error(*run_cli(capsys, "run", SUM_AB, "--input", str(events), "--value", "v",
                               "--output", str(tmp_path / "o.xlsx")), "o.xlsx")
    assert_user_error(*run_cli(capsys, "run", SUM_AB, "--value", "v"), "--input")


# --------------------------------------------------------------------------- run: time order

DIGITS = "alphabet a, b; iter(or(atom(a, cur), atom(b, cur)), 0, (x, y) -> x * 10 + y)"
"""Order-sensitive: the output spells the values of the events read, in the order read."""
WINDOW = "alphabet a; aggregate(sum(cur), 2s)"
PERIOD = "alphabet a; period 1s; iter(or(atom(a, cur), atom(tick, 0)), 0, +)"
"""A clock without a horizon: every idle tick is made."""


def write_csv(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def run_rows(capsys: pytest.CaptureFixture[str], *argv: str) -> pd.DataFrame:
    """``qre run`` with CSV on stdout, parsed back exactly."""
    code, out, err = run_cli(capsys, "run", *argv)
    assert code == 0 and err == "", err
    return pd.read_csv(io.StringIO(out), float_precision="round_trip")


def test_run_orders_equal_times_by_tiebreak_then_tag_then_values(capsys, tmp_path):
    """qre.runtime.order's rule, not input position: the same rows in any order give the same
    outputs; --tiebreak comes first."""
    text = "tag,v,t,seq\nb,1,5,0\na,3,5,2\na,2,5,1\nb,0,1,3\n"
    path = write_csv(tmp_path / "e.csv", text)
    rows = run_rows(capsys, DIGITS, "--input", str(path), "--value", "v", "--time", "t")
    # t=1: b0; t=5 by tag, then value: a2, a3, b1.
    assert rows["value"].tolist() == [231.0, 23.0, 2.0, 0.0]
    rows = run_rows(capsys, DIGITS, "--input", str(path), "--value", "v", "--time", "t",
                    "--tiebreak", "seq")
    # t=5 by seq: b1 (0), a2 (1), a3 (2).
    assert rows["value"].tolist() == [1.0, 123.0, 12.0, 0.0]
    reversed_rows = "\n".join([text.splitlines()[0], *reversed(text.splitlines()[1:])]) + "\n"
    path = write_csv(tmp_path / "r.csv", reversed_rows)
    rows = run_rows(capsys, DIGITS, "--input", str(path), "--value", "v", "--time", "t")
    assert rows["value"].tolist() == [0.0, 2.0, 23.0, 231.0]
    assert_user_error(*run_cli(capsys, "run", DIGITS, "--input", str(path), "--value", "v",
                               "--tiebreak", "seq"), "--tiebreak", "--time")


def test_run_time_orders_events_and_keeps_rows(capsys, tmp_path):
    path = write_csv(tmp_path / "e.csv", "tag,v,t\na,1,30\nb,2,10\na,3,20\n")
    rows = run_rows(capsys, DIGITS, "--input", str(path), "--value", "v", "--time", "t")
    # Time order: 2 (t=10), 3 (t=20), 1 (t=30); rows stay in input order.
    assert rows["v"].tolist() == [1, 2, 3]
    assert rows["value"].tolist() == [231.0, 2.0, 23.0]
    # Without --time: input order.
    rows = run_rows(capsys, DIGITS, "--input", str(path), "--value", "v")
    assert rows["value"].tolist() == [1.0, 12.0, 123.0]


def test_run_time_ties_keep_input_order(capsys, tmp_path):
    path = write_csv(tmp_path / "e.csv", "tag,v,t\na,1,5\na,2,5\nb,3,1\na,4,5\nb,5,1\n")
    rows = run_rows(capsys, DIGITS, "--input", str(path), "--value", "v", "--time", "t")
    # Time 1: rows 2, 4 (3 then 5); time 5: rows 0, 1, 3 (1, 2, 4).
    assert rows["value"].tolist() == [351.0, 3512.0, 3.0, 35124.0, 35.0]


def test_run_time_keys_interleaved(capsys, tmp_path):
    path = write_csv(tmp_path / "e.csv",
                     "k,tag,v,t\nx,a,1,9\ny,a,2,3\nx,b,3,1\ny,b,4,3\nx,a,5,4\ny,a,6,0\n")
    rows = run_rows(capsys, DIGITS, "--input", str(path), "--value", "v", "--time", "t",
                    "--key", "k")
    # x in time order: 3 (t=1), 5 (t=4), 1 (t=9); y: 6 (t=0), 2, 4 (t=3, tie: input order).
    assert rows["value"].tolist() == [351.0, 62.0, 3.0, 624.0, 35.0, 6.0]


@pytest.mark.parametrize("times", [
    ["2024-05-01T12:00:00+02:00", "2024-05-01T09:00:00Z", "2024-05-01 11:00:00"],
    ["1.0e1", "9", "11.5"],
])
def test_run_time_text_columns(capsys, tmp_path, times):
    """ISO datetimes order by instant (offsets honoured, none = UTC); numbers as numbers.
    Both columns put row 1 first, then row 0, then row 2 (10:00, 09:00, 11:00 UTC)."""
    frame = pd.DataFrame({"tag": ["a", "a", "a"], "v": [1, 2, 3], "t": times})
    frame.to_csv(tmp_path / "e.csv", index=False)
    rows = run_rows(capsys, DIGITS, "--input", str(tmp_path / "e.csv"), "--value", "v",
                    "--time", "t")
    assert rows["value"].tolist() == [21.0, 2.0, 213.0]


def test_run_time_parquet_timestamps(capsys, tmp_path):
    """Time-zone aware timestamps and nanosecond integers (beyond float precision)."""
    stamps = pd.to_datetime(["2024-05-01T12:00:00+02:00", "2024-05-01T09:00:00+00:00",
                             "2024-05-01T11:00:00+00:00"], utc=True)
    base = 1_700_000_000_000_000_000
    frame = pd.DataFrame({"tag": ["a"] * 3, "v": [1.0, 2.0, 3.0], "ts": stamps,
                          "ns": [base + 2, base + 1, base + 3]})
    frame.to_parquet(tmp_path / "e.parquet", index=False)
    for column in ("ts", "ns"):
        out = tmp_path / f"o_{column}.parquet"
        code, _, err = run_cli(capsys, "run", DIGITS, "--input", str(tmp_path / "e.parquet"),
                               "--value", "v", "--time", column, "--output", str(out))
        assert code == 0, err
        got = pd.read_parquet(out)
        assert got["value"].tolist() == [21.0, 2.0, 213.0]
        assert got["ts"].tolist() == frame["ts"].tolist()  # passed through


@pytest.mark.parametrize("cells, needles", [
    (["1", "", "3"], ["--time column 't'", "row 1", "missing time"]),
    (["1", "2", "soon"], ["--time column 't'", "row 2", "'soon'", "not a number"]),
    (["2024-01-01", "later", "2024-01-03"], ["row 1", "'later'", "not a datetime"]),
    (["then", "later", "soon"], ["row 0", "'then'", "neither a number nor an ISO 8601"]),
])
def test_run_bad_times_exit_2(capsys, tmp_path, cells, needles):
    frame = pd.DataFrame({"tag": ["a"] * 3, "v": [1, 2, 3], "t": cells})
    frame.to_csv(tmp_path / "e.csv", index=False)
    assert_user_error(*run_cli(capsys, "run", DIGITS, "--input", str(tmp_path / "e.csv"),
                               "--value", "v", "--time", "t"), *needles, "0-based")


@pytest.mark.parametrize("big", ["1e400", "1E+400", "17976931348623159e292"])
def test_run_reads_numbers_beyond_the_largest_float_as_infinities(capsys, tmp_path, big):
    """Issue 19, point 18: ``inf`` was a time and a value but ``1e400`` was not a number;
    both are Python's float, inf, as times and as values."""
    for spelling in (big, "inf"):
        path = write_csv(tmp_path / "e.csv", f"tag,v,t\na,1,2\na,2,{spelling}\na,3,1\n")
        rows = run_rows(capsys, DIGITS, "--input", str(path), "--value", "v", "--time", "t")
        assert rows["value"].tolist() == [31.0, 312.0, 3.0], spelling  # t: 2, inf, 1
        negative = "-inf" if spelling == "inf" else f"-{big}"
        path = write_csv(tmp_path / "v.csv", f"tag,v\na,{spelling}\na,1\na,{negative}\n")
        rows = run_rows(capsys, SUM, "--input", str(path), "--value", "v")
        np.testing.assert_array_equal(rows["value"], [math.inf, math.inf, math.nan])


@settings(max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=1, max_size=20))
def test_run_reads_every_number_as_written(capsys, tmp_path, xs):
    """The shortest repr of a float reads back as that float, bit for bit (pandas' default
    CSV parser is an ulp off on about one number in four), in a numeric column and in one
    that pandas leaves as text (its last cell overflows)."""
    cells = "".join(f"a,{x!r},{x!r}\n" for x in xs)
    path = write_csv(tmp_path / "e.csv", f"tag,v,w\n{cells}a,1,1e400\n")
    out = tmp_path / "o.parquet"
    for column in ("v", "w"):
        code, _, err = run_cli(capsys, "run", "iter(atom(a, cur), 0, snd)", "--input",
                               str(path), "--value", column, "--output", str(out))
        assert code == 0, err
        got = pd.read_parquet(out)["value"].to_numpy()[:-1]
        assert [float(g).hex() for g in got] == [float(x).hex() for x in xs], column


@pytest.mark.parametrize("query, cells, needles", [
    (DIGITS, ["true", "false", "true"], ["--time column 't'", "booleans are not times"]),
    (WINDOW, ["1", "1e20", "3"], ["--time column 't', row 1", "1e+20 is out of range"]),
    (WINDOW, ["1", "inf", "3"], ["--time column 't', row 1", "inf is not a time"]),
    (WINDOW, ["1", "9223372036854775807", "3"], ["row 1", "out of range"]),
    (DIGITS, ["1", "18446744073709551000", "3"], ["--time column 't', row 1",
                                                  "beyond int64"]),
    (PERIOD, ["0", "100000000000", "1"], ["tick 99,999,999,999 times in the idle gap",
                                          "10,000,000"]),
])
def test_run_times_that_are_not_times_exit_2(capsys, tmp_path, query, cells, needles):
    """Issue 19, points 4, 10 and 12: booleans (a traceback before), times beyond
    ±2**62 δ (stamps near -9.2e18 before) and uint64 beyond int64 (ordered as negative),
    an idle gap needing more ticks than the limit (a MemoryError): one line naming the
    column (and the row)."""
    frame = pd.DataFrame({"tag": ["a"] * 3, "v": [1, 2, 3], "t": cells})
    frame.to_csv(tmp_path / "e.csv", index=False)
    assert_user_error(*run_cli(capsys, "run", query, "--input", str(tmp_path / "e.csv"),
                               "--value", "v", "--time", "t"), *needles)


def test_run_parquet_keys_keep_their_identity(capsys, tmp_path):
    """Issue 19, points 1 and 2: a Parquet long key column with a null became floats
    (2**53 + 1 merged into 2**53, written 9007199254740992.0) and a double's null NaN
    (merged with the NaN key)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    big = 2**53
    cases = [(pa.array([big, big + 1, None], pa.int64()), ["9007199254740992",
                                                           "9007199254740993", ""]),
             (pa.array([float("nan"), None, float("nan")], pa.float64(), from_pandas=False),
              ["nan", "", "nan"])]
    for keys, written in cases:
        pq.write_table(pa.table({"k": keys, "t": [1, 2, 3], "tag": ["a"] * 3,
                                 "v": [1.0, 5.0, 7.0]}), tmp_path / "e.parquet")
        code, out, _ = run_cli(capsys, "run", DIGITS, "--input", str(tmp_path / "e.parquet"),
                               "--key", "k", "--time", "t", "--value", "v")
        assert code == 0
        rows = pd.read_csv(io.StringIO(out), dtype={"k": str}, keep_default_na=False)
        assert rows["k"].tolist() == written
        assert rows["value"].tolist() == ([1.0, 5.0, 7.0] if written[0] != "nan"
                                          else [1.0, 5.0, 17.0])


def test_run_nan_time_in_parquet_exits_2(capsys, tmp_path):
    frame = pd.DataFrame({"tag": ["a"] * 3, "v": [1, 2, 3], "t": [1.0, 2.0, float("nan")],
                          "d": pd.to_datetime(["2024-01-01", None, "2024-01-02"])})
    frame.to_parquet(tmp_path / "e.parquet", index=False)
    for column, row in (("t", 2), ("d", 1)):
        assert_user_error(*run_cli(capsys, "run", DIGITS, "--input",
                                   str(tmp_path / "e.parquet"), "--value", "v", "--time",
                                   column), f"row {row}", f"column {column!r}")


def _xvalue(row: dict[str, Any]) -> XValue:
    """A JSON output row as an extended value (null value: NaN or ±inf when defined)."""
    status = row["status"]
    if status != 1:
        return BOT if status == 0 else TOP
    return float("nan") if row["value"] is None else row["value"]


def _expected(d: DT, events: list[tuple[str, str, int, int]], keyed: bool) -> list[XValue]:
    """Per row, the reference interpreter's output after the row's key's events up to it,
    sorted by (time, tag, value, input row) — qre.runtime.order's rule: computed without the CLI
    or the Monitor."""
    x = (0.0,) * len(d.initial)
    want: list[XValue] = [BOT] * len(events)
    for key in sorted({e[0] for e in events}) if keyed else [None]:
        rows = [k for k, e in enumerate(events) if not keyed or e[0] == key]
        rows.sort(key=lambda k: (events[k][3], events[k][1], events[k][2], k))
        outs = evaluate(d, x, [(events[k][1], float(events[k][2])) for k in rows])
        for position, k in enumerate(rows):
            want[k] = outs[position + 1][0]
    return want


def _json_run(argv: list[str]) -> list[dict[str, Any]]:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(argv)
    assert code == 0
    return json.loads(buf.getvalue())


EVENTS = st.lists(st.tuples(st.sampled_from("xyz"), st.sampled_from("ab"),
                            st.integers(-3, 3), st.integers(0, 4)), min_size=1, max_size=10)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(query=base_queries(("a", "b"), depth=2), events=EVENTS, keyed=st.booleans(),
       engine=st.sampled_from(["auto", "reference", "table"]), seed=st.randoms())
def test_run_time_order_matches_reference(query, events, keyed, engine, seed):
    """A shuffled file gives, row for row, the outputs of the time-sorted file, and both
    agree with dt.reference on each key's events sorted by (time, tag, value, row)."""
    text = "alphabet a, b; " + to_text(query)
    frame = pd.DataFrame(events, columns=["k", "tag", "v", "t"]).assign(id=range(len(events)))
    shuffled = frame.sample(frac=1, random_state=seed.randrange(2**32)).reset_index(drop=True)
    # The sorted file keeps ties in the shuffled file's order: the outputs must agree.
    ordered = shuffled.sort_values("t", kind="stable")
    want = _expected(qre(text).unoptimized,
                     list(shuffled[["k", "tag", "v", "t"]].itertuples(index=False, name=None)),
                     keyed)
    want_by_id = dict(zip(shuffled["id"], want, strict=True))
    with tempfile.TemporaryDirectory() as tmp:
        for name, table in (("shuffled", shuffled), ("ordered", ordered)):
            path = Path(tmp) / f"{name}.csv"
            table.to_csv(path, index=False)
            argv = ["run", text, "--input", str(path), "--value", "v", "--time", "t",
                    "--engine", engine, "--json", *(["--key", "k"] if keyed else [])]
            rows = _json_run(argv)
            assert [r["id"] for r in rows] == table["id"].tolist()  # input row order
            for r in rows:
                assert same(_xvalue(r), want_by_id[r["id"]]), (name, r, want_by_id[r["id"]])


# --------------------------------------------------------------------------- run: other options


def test_run_skip_unknown_repeats_previous_output(capsys, tmp_path):
    path = write_csv(tmp_path / "e.csv", "k,tag,v\nx,c,9\nx,a,1\ny,a,2\nx,zz,9\nx,b,3\ny,c,9\n")
    rows = run_rows(capsys, DIGITS, "--input", str(path), "--value", "v", "--key", "k",
                    "--skip-unknown")
    # x: c skipped (the empty-stream output 0), 1, zz skipped (1 again), 13; y: 2, c -> 2.
    assert rows["status"].tolist() == [1] * 6
    assert rows["value"].tolist() == [0.0, 1.0, 2.0, 1.0, 13.0, 2.0]
    # A skipped leading event of a query undefined on the empty stream: undefined, empty.
    rows = run_rows(capsys, "alphabet a, b; atom(a, cur)", "--input", str(path), "--value",
                    "v", "--skip-unknown")
    assert rows["status"].tolist() == [0, 1, 0, 0, 0, 0]
    assert rows["value"].isna().tolist() == [True, False, True, True, True, True]


def test_run_skip_unknown_with_time(capsys, tmp_path):
    """A skipped event repeats the output of the previous event in time order."""
    path = write_csv(tmp_path / "e.csv", "tag,v,t\na,1,1\nc,9,4\na,2,3\nc,9,2\n")
    rows = run_rows(capsys, DIGITS, "--input", str(path), "--value", "v", "--time", "t",
                    "--skip-unknown")
    assert rows["value"].tolist() == [1.0, 12.0, 12.0, 1.0]


def test_run_unknown_tag_names_row_and_option(capsys, tmp_path):
    path = write_csv(tmp_path / "e.csv", "tag,v,t\na,1,1\nb,2,0\nc,3,2\n")
    code, out, err = run_cli(capsys, "run", DIGITS, "--input", str(path), "--value", "v",
                             "--time", "t")
    assert_user_error(code, out, err, "row 2", "'c'", "--tag column 'tag'", "--skip-unknown",
                      "a, b")
    assert "unknown_tags" not in err


def test_run_text_tags_and_keys(capsys, tmp_path):
    """CSV tags and keys are text as written: a tag NA is a tag, keys 007 and 7 differ."""
    path = write_csv(tmp_path / "e.csv", "k,tag,v\n007,NA,1\n7,NA,2\n007,null,3\n")
    rows = run_rows(capsys, "alphabet NA, null; iter(or(atom(NA, cur), atom(null, cur)), 0, "
                    "(x, y) -> x * 10 + y)", "--input", str(path), "--value", "v", "--key", "k")
    assert rows["value"].tolist() == [1.0, 2.0, 13.0]


@pytest.mark.parametrize("text, needles", [
    ("tag,v\na,1\n,2\n", ["--tag column 'tag'", "row 1", "missing tag"]),
    ("tag,v\na,1\na,2\na,x7\n", ["--value column 'v'", "row 2", "'x7'", "not a number"]),
])
def test_run_data_errors_name_row_and_column(capsys, tmp_path, text, needles):
    path = write_csv(tmp_path / "e.csv", text)
    for extra in ([], ["--skip-unknown"]):
        assert_user_error(*run_cli(capsys, "run", DIGITS, "--input", str(path), "--value", "v",
                                   *extra), *needles, "0-based")


def test_run_bad_value_in_unread_column_exits_2(capsys, tmp_path):
    """Every --value column is checked, even one a record query does not read."""
    path = write_csv(tmp_path / "e.csv", "tag,x,y\na,1,1\na,2,oops\n")
    assert_user_error(*run_cli(capsys, "run", "alphabet a, b; iter(atom(a, cur.x), 0, +)",
                               "--input", str(path), "--value", "x", "--value", "y"),
                      "--value column 'y'", "row 1", "'oops'")


def test_run_nan_value_is_data(capsys, tmp_path):
    """An empty value cell is NaN, a defined value: NaN + anything stays NaN, status 1."""
    path = write_csv(tmp_path / "e.csv", "tag,v\na,1\na,\nb,3\na,NaN\n")
    rows = run_rows(capsys, SUM_AB, "--input", str(path), "--value", "v")
    assert rows["status"].tolist() == [1, 1, 1, 1]
    assert rows["value"].isna().tolist() == [False, True, True, True]
    rows = run_rows(capsys, "alphabet a, b; atom(_, cur)", "--input", str(path), "--value", "v")
    assert rows["status"].tolist() == [1, 0, 0, 0]


@pytest.mark.parametrize("extra, needles", [
    (["--value", "v", "--value", "w"], ["exactly one --value", "not 2"]),
])
def test_run_value_options_checked(capsys, events, extra, needles):
    assert_user_error(*run_cli(capsys, "run", SUM_AB, "--input", str(events), *extra), *needles)


def test_run_missing_field_names_the_option(capsys, events):
    query = "alphabet a, b; iter(or(atom(a, cur.v * cur.w), atom(b, 0)), 0, +)"
    assert_user_error(*run_cli(capsys, "run", query, "--input", str(events), "--value", "v"),
                      "cur.w", "--value w")


@pytest.mark.parametrize("engine", ["reference", "table", "codegen", "auto"])
def test_run_engine_is_passed_on(capsys, events, monkeypatch, engine):
    seen: list[str] = []
    for method in ("run", "run_keys"):
        original = getattr(Monitor, method)

        def spy(self, *args, _original=original, **kwargs):
            seen.append(kwargs["engine"])
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(Monitor, method, spy)
    for key in ([], ["--key", "k"]):
        code, out, err = run_cli(capsys, "run", SUM_AB, "--input", str(events), "--value", "v",
                                 "--engine", engine, *key)
        assert code == 0, err
        values = pd.read_csv(io.StringIO(out))["value"].tolist()
        assert values == ([1.0, 0.0, 4.0, 4.0, 9.0] if key else [1.0, 1.0, 4.0, 8.0, 13.0])
    # "auto" is resolved first, for this one run: five events are interpreted.
    passed = "reference" if engine == "auto" else engine
    assert seen == [passed, passed]


def test_run_default_engine_and_bad_engine(capsys, events, monkeypatch):
    seen: list[str] = []
    original = Monitor.run_keys

    def spy(self, *args, **kwargs):
        seen.append(kwargs.get("engine", "auto"))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Monitor, "run_keys", spy)
    assert run_cli(capsys, "run", SUM_AB, "--input", str(events), "--value", "v")[0] == 0
    assert seen == ["reference"]  # "auto", for a run this small
    assert_user_error(*run_cli(capsys, "run", SUM_AB, "--input", str(events), "--value", "v",
                               "--engine", "turbo"), "--engine", "turbo", "codegen")


def test_run_stdin_to_stdout(capsys, events, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO(events.read_text()))
    rows = run_rows(capsys, SUM_AB, "--input", "-", "--value", "v", "--output", "-")
    assert rows["value"].tolist() == [1.0, 1.0, 4.0, 8.0, 13.0]
    assert list(rows.columns) == ["k", "tag", "v", "w", "t", "status", "value"]
    monkeypatch.setattr(sys, "stdin", io.StringIO(events.read_text()))
    code, out, _ = run_cli(capsys, "run", SUM_AB, "--input", "-", "--value", "v", "--key", "k",
                           "--output", "-", "--json")
    assert code == 0 and [r["value"] for r in json.loads(out)] == [1.0, 0.0, 4.0, 4.0, 9.0]


def test_run_empty_stdin_exits_2(capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    assert_user_error(*run_cli(capsys, "run", SUM_AB, "--input", "-", "--value", "v"),
                      "stdin")


def test_run_json_floats_exact(capsys, tmp_path):
    path = write_csv(tmp_path / "e.csv", "tag,v\na,0.1\na,0.2\nb,\n")
    code, out, _ = run_cli(capsys, "run", SUM_AB, "--input", str(path), "--value", "v", "--json")
    rows = json.loads(out)
    assert code == 0
    assert [r["value"] for r in rows] == [0.1, 0.1 + 0.2, 0.1 + 0.2]
    assert rows[2]["v"] is None


def test_run_help_has_an_example_per_option(capsys):
    code, out, _ = run_cli(capsys, "run", "--help")
    assert code == 0
    examples = out[out.index("examples:"):]
    lines = [line for line in examples.splitlines() if "qre run" in line]
    for option in ("--input -", "--output -", "--output out", "--key", "--tag", "--time",
                   "--value x --value y", "--skip-unknown", "--engine", "--json", "--tiebreak",
                   "--prefix"):
        assert any(option in line for line in lines), option
    for rule in ("--tiebreak columns, then the tag", "input order", "counted from 0",
                 "repeats the output", "never an overwrite"):
        assert rule in " ".join(out.split()), rule


# --------------------------------------------------------------------------- installed script


def test_a_reader_that_went_away_is_no_error(tmp_path):
    """``qre run ... | head -1``: once the reader has gone, writing ends the command
    without a message (the read end is closed before qre writes: pipes here can hold
    a whole small output, so a reader that stops after a line would not be seen)."""
    path = write_csv(tmp_path / "e.csv", "tag,v\na,1\na,2\n")
    done = subprocess.Popen([sys.executable, "-m", "qre", "run", "alphabet a; sum(cur)",
                             "--input", str(path), "--value", "v"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=ROOT)
    assert done.stdout is not None and done.stderr is not None
    done.stdout.close()
    err = done.stderr.read().decode()
    done.wait(timeout=120)
    assert err == "" and done.returncode == 2


def test_console_script_help():
    script = Path(sys.executable).with_name("qre")
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "qre.cli"]
    done = subprocess.run([*cmd, "--help"], capture_output=True, text=True, cwd=ROOT,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "usage: qre" in done.stdout and "examples:" in done.stdout
    bad = subprocess.run([*cmd, "compile", "iter("], capture_output=True, text=True, cwd=ROOT,
                         timeout=120, check=False)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


def test_run_timed_stamps_keep_the_input_time_zone(capsys, tmp_path):
    path = tmp_path / "pay.parquet"
    pd.DataFrame({"ts": pd.to_datetime(["2026-11-25T10:00:05", "2026-11-25T10:00:50"])
                  .tz_localize("Europe/Paris"), "tag": ["pay", "pay"],
                  "amount": [5.0, 7.0]}).to_parquet(path)
    out = tmp_path / "out.parquet"
    code, _, err = run_cli(capsys, "run", "alphabet pay; aggregate(sum(cur.amount), 1min)",
                           "--input", str(path), "--time", "ts", "--value", "amount",
                           "--output", str(out))
    assert code == 0, err
    rows = pd.read_parquet(out)
    assert str(rows["ts"].dt.tz) == "Europe/Paris" and str(rows["start"].dt.tz) == "Europe/Paris"
    assert rows["start"].astype(str).tolist() == ["2026-11-25 10:00:00+01:00"]
    assert rows["value"].tolist() == [12.0]


def test_run_timed_query_emits_windows_per_key(capsys, tmp_path):
    data = tmp_path / "pay.csv"
    data.write_text("user,ts,kind,amount\nu1,2026-11-25T10:00:05,pay,5\n"
                    "u1,2026-11-25T10:00:50,pay,7\nu2,2026-11-25T10:01:10,pay,1\n"
                    "u1,2026-11-25T10:02:00,refund,2\n")
    query = "alphabet pay, refund; aggregate(sum(cur.amount), 1min, [pay])"
    code, out, err = run_cli(capsys, "run", query, "--input", str(data), "--key", "user",
                             "--time", "ts", "--tag", "kind", "--value", "amount")
    assert code == 0, err
    # Each row carries its event's input columns: empty (the amount) for a window's tick.
    assert out.splitlines() == [
        "user,ts,kind,amount,row,start,status,value",
        "u1,2026-11-25 10:00:59.999999,tick,,-1,2026-11-25 10:00:00,1,12.0",
        "u2,2026-11-25 10:01:59.999999,tick,,-1,2026-11-25 10:01:00,1,1.0"]
    code, out, err = run_cli(capsys, "run", query, "--input", str(data), "--tag", "kind",
                             "--value", "amount")
    assert code == 2 and "give the event times with --time COL" in err
    assert "Traceback" not in err


def test_a_let_chain_too_deep_is_a_located_error_not_a_traceback(capsys, tmp_path):
    """Issue 19.11: 250 chained lets ended in a RecursionError traceback."""
    lines = ["alphabet a, b;", "let x0 = atom(a, cur);"]
    lines += [f"let x{k} = or(x{k - 1}, atom(b, cur));" for k in range(1, 250)]
    path = tmp_path / "chain.qre"
    path.write_text("\n".join([*lines, "x249"]))
    code, out, err = run_cli(capsys, "compile", f"@{path}")
    assert code == 2 and out == ""
    assert "Traceback" not in err and "nested too deeply" in err and "line 201" in err
