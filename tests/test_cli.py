"""The ``qre`` command line (qre/cli.py; API.md "Command line").

Each subcommand is called through ``main([...])`` for each exit code (0, 1,
2); ``--json`` output must parse; bad inputs give exit 2, one line on stderr
and no traceback. ``check equiv`` is judged against an independent brute
force over all tag strings up to a length (dt.reference on the DTs), ``run``
against sums computed by hand, ``check restartable`` against the paper's
example and counterexample (§5.2.2).
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from query_strategies import base_queries

from dt.model import DT, Transition
from dt.projection import status_vector
from dt.reference import evaluate
from dt.terms import Apply, Cur, Var
from qre import qre
from qre.cli import main
from qre.printer import to_text

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


def paper_dt(restartable: bool) -> DT:
    """§5.2.2: on a, f' := i + cur (restartable) / i' := i, f' := i' + cur (not)."""
    i, i_p = Var("i"), Var("i", True)
    if restartable:
        ts = (Transition("a", frozenset({i}), "f", Apply("add", (i, Cur()))),)
    else:
        ts = (Transition("a", frozenset({i}), "i", i),
              Transition("a", frozenset({i_p}), "f", Apply("add", (i_p, Cur()))))
    return DT(("a", "b"), ("i", "f"), ("i",), ("f",), ts)


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
    path.write_text(paper_dt(True).to_json())
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
    assert "proven on statuses for every tag string; data values not compared yet" in out


def test_equiv_counterexample(capsys):
    # The sum is defined after "", the atom only after exactly "a".
    code, out, _ = run_cli(capsys, "check", "equiv", SUM, "atom(a, cur)")
    assert code == 1
    assert "shortest counterexample: (the empty stream)" in out
    assert "Q1 outputs: defined" in out and "Q2 outputs: undefined" in out
    code, out, _ = run_cli(capsys, "check", "equiv", SUM, "atom(a, cur)", "--json")
    data = json.loads(out)
    assert code == 1 and data["equivalent"] is False
    assert data["counterexample"] == [] and data["statuses"] == [["defined"], ["undefined"]]


@pytest.mark.parametrize("argv, needles", [
    (["check", "equiv", SUM, "atom(b, cur)"], ["alphabets"]),
    (["check", "equiv", SUM, "atom(b, cur)", "--alphabet", ","], ["--alphabet"]),
    (["check", "equiv", SUM, "atom(c, cur)", "--alphabet", "a,b"], []),
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
    argv = ["check", "equiv", *texts, "--alphabet", "a,b", "--json"]
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
        word = tuple(answer["counterexample"])
        depth = max(len(word), 1)
        sa, sb = _statuses_up_to(a, depth), _statuses_up_to(b, depth)
        assert [names[s] for s in sa[word]] == answer["statuses"][0]
        assert [names[s] for s in sb[word]] == answer["statuses"][1]
        assert sa[word] != sb[word]
        assert all(sa[w] == sb[w] for w in sa if len(w) < len(word))


# --------------------------------------------------------------------------- check restartable


@pytest.mark.parametrize("query", [SUM, "alphabet a, b; once(count() >= const(3))"])
def test_restartable_query(capsys, query):
    """Theorem 5.7: compiled base queries (and this help example) are restartable."""
    code, out, _ = run_cli(capsys, "check", "restartable", query)
    assert code == 0 and out.strip() == "restartable"
    code, out, _ = run_cli(capsys, "check", "restartable", query, "--json")
    assert code == 0 and json.loads(out)["restartable"] is True


def test_restartable_paper_example(capsys, tmp_path):
    path = tmp_path / "ok.json"
    path.write_text(paper_dt(True).to_json())
    assert run_cli(capsys, "check", "restartable", str(path))[0] == 0


def test_not_restartable_paper_counterexample(capsys, tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(paper_dt(False).to_json())
    code, out, _ = run_cli(capsys, "check", "restartable", str(path))
    assert code == 1
    assert "not restartable" in out and "tags:" in out and "thread at position" in out
    code, out, _ = run_cli(capsys, "check", "restartable", str(path), "--json")
    data = json.loads(out)
    assert code == 1 and data["restartable"] is False
    w = data["witness"]
    assert w["restarted"] != w["separate"]
    assert set(w["tags"]) <= {"a", "b"} and w["threads"]


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


# --------------------------------------------------------------------------- installed script


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
