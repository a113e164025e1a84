"""Random and mutated query text through every entry point that reads a query: only
documented errors, and engines that agree on whatever compiles (issue 19, the
fault-and-fuzz suite).

* random text and random bytes → :func:`qre.qre`: a monitor or a
  :class:`~qre.language.errors.QreError` (located when it points into the text);
* valid queries (docs/API.md's, the packaged examples, random well-typed ones
  printed as text) mutated by a few character and token edits → ``qre``: the
  same, within a time bound; what compiles runs on the reference evaluator and
  the table engine with the same bits;
* the same mutations through the command line (``qre compile``, ``qre check
  language``, ``qre run``): exit code 0–3, one message, never a traceback;
* mutated JSON DTs → :meth:`dt.DT.from_json` and a monitor: a ``ValueError``
  (DTError) or a DT that runs the same on both engines.

``make fuzz`` runs twenty times as many examples (``QRE_FUZZ_SCALE=20``), each run
with new random draws (``HYPOTHESIS_PROFILE=dev``).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import signal
from collections.abc import Iterator
from importlib.resources import files
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import event, given, note, settings
from hypothesis import strategies as st
from query_strategies import temporal_queries, top_queries

from dt import DT
from qre import Monitor, qre
from qre.cli import main
from qre.language.errors import QreError
from qre.language.printer import to_text
from qre.runtime.timed import is_timed, needed_fields

pytestmark = pytest.mark.fuzz

ROOT = Path(__file__).resolve().parent.parent
SCALE = int(os.environ.get("QRE_FUZZ_SCALE", "1"))
"""Examples per test, times this (``make fuzz`` sets 20)."""
SECONDS = 30
"""The bound on one query's compile and run: a mutation must not make qre work unboundedly."""


def _documented_queries() -> list[str]:
    """Every query text of docs/API.md and README.md, and the packaged examples."""
    text = (ROOT / "docs" / "API.md").read_text() + (ROOT / "README.md").read_text()
    found = set(re.findall(r'qre\("([^"\n]+)"', text))
    found |= {p.read_text() for p in (ROOT / "qre" / "examples").glob("*.qre")}
    return sorted(found)


DOCUMENTED = _documented_queries()
TOKENS = ["(", ")", ",", ";", "cur", "cur.x", "+", "-", "*", "/", "<", "&&", "!", "let x = ",
          "x", "atom", "iter", "split", "or", "combine", "fill", "fill_with", "prefix_sum",
          "fold", "since", "prev", "hist", "once", "aggregate", "matches", "within", "seq",
          "count()", "sum(cur)", "avg_last(3, cur)", "0", "-0.0", "1e308", "1e400", "nan",
          "inf", "2s", "1ns", "1000000d", "a", "b", "_", "alphabet a, b;", "period 1s;",
          "tag t = cur > 1;", "\n", "#", "'", '"', "\\", "\x00", "é", "∞"]


def _well_typed() -> st.SearchStrategy[str]:
    sigma = ("a", "b")
    return st.one_of(top_queries(sigma), temporal_queries(sigma)).map(to_text)


LEXEME = re.compile(r"-?\d+(?:\.\d*)?(?:e[-+]?\d+)?(?:ns|us|ms|s|min|h|d)?|cur\.\w+"
                    r"|[A-Za-z_]\w*|&&|\|\||[<>!=]=|[-+*/<>!]")
KINDS = [
    ["0", "-0.0", "1", "3", "0.5", "1e308", "1e400", "nan", "inf", "-inf", "99999999999999999999"],
    ["1s", "2s", "1ns", "10s", "1min", "1000000d", "0s"],
    ["a", "b", "_", "ok", "fail", "pay", "x"],
    ["iter", "split", "or", "combine", "prefix_sum", "fill", "fill_with", "prev", "hist",
     "once", "count", "sum", "avg", "last", "var", "std", "max", "min", "avg_last", "window",
     "seq", "within", "matches", "matched", "aggregate"],
    ["abs", "exp", "log", "sqrt", "pow", "min", "max", "fst", "snd", "if", "floor", "ceil"],
    ["cur", "cur.x", "p0", "p1", "r0", "r1", "n", "k", "m", "q"],
    ["+", "-", "*", "/", "<", ">", "<=", ">=", "==", "!=", "&&", "||", "!"],
]
"""Lexemes a swap puts in place of one of the same kind: a query with one word, number
or operator changed still parses often, so the typing and the compiler see it."""


def _kind(lexeme: str) -> list[str]:
    return next((kind for kind in KINDS if lexeme in kind), KINDS[0] if lexeme[-1].isdigit()
                else KINDS[3])


@st.composite
def mutated_queries(draw: st.DrawFn) -> str:
    """A valid query with one to three edits anywhere: mostly a lexeme swapped for one of
    its kind, else a piece of text deleted, inserted, replaced or repeated."""
    text = draw(st.one_of(st.sampled_from(DOCUMENTED), _well_typed()))
    rng = draw(st.randoms(use_true_random=False))  # uniform positions, unlike integers()
    for _ in range(rng.choice([1, 1, 2, 3])):
        lexemes = list(LEXEME.finditer(text))
        if lexemes and rng.random() < 0.75:
            found = rng.choice(lexemes)
            other = rng.choice(_kind(found.group()))
            text = text[:found.start()] + other + text[found.end():]
            continue
        at = rng.randrange(len(text) + 1)
        piece = rng.choice(TOKENS) if rng.random() < 0.8 else chr(rng.randrange(0x30000))
        edit = rng.choice(["delete", "insert", "replace", "repeat"])
        if edit == "delete":
            text = text[:at] + text[at + rng.randint(1, 8):]
        elif edit == "insert":
            text = text[:at] + piece + text[at:]
        elif edit == "replace":
            text = text[:at] + piece + text[at + len(piece):]
        else:
            start = rng.randrange(len(text) + 1)
            text = text[:at] + text[start:start + rng.randint(1, 30)] + text[at:]
    return text


@contextlib.contextmanager
def bounded(seconds: int = SECONDS) -> Iterator[None]:
    """Fail (TimeoutError) if the block runs longer than ``seconds``."""
    def expire(*_: object) -> None:
        raise TimeoutError(f"more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def compiled_or_query_error(text: str) -> Monitor | None:
    """``qre(text)``, or None after a QreError that is located in ``text`` when it says so."""
    note(f"query: {text!r}")
    try:
        with bounded():
            m = qre(text)
    except QreError as error:
        event("query error")
        if error.line is not None:
            assert f"line {error.line}, column {error.column}" in str(error)
            assert "^" in str(error).splitlines()[-1], str(error)
        return None
    event("compiled" + " (timed)" * is_timed(m))
    return m


def run_on_both_engines(m: Monitor, seed: int) -> None:
    """A random word of ten events on the reference evaluator and the table engine: the
    same status and value bits (timed monitors through run_timed)."""
    rng = np.random.default_rng(seed)
    n = 10
    tags = list(rng.choice(m.alphabet, n))
    column = rng.choice([0.0, -0.0, 1.0, -1.5, 2.0, np.nan, np.inf], n)
    fields = sorted(needed_fields(m))
    values = {f: column for f in fields} if fields else column
    with bounded():
        if is_timed(m):
            times = np.cumsum(rng.integers(0, 3, n))  # in ns: any clock period is whole
            a, b = (m.run_timed(times, tags, values, engine=e, time_unit="ns")
                    for e in ("reference", "table"))
            pd.testing.assert_frame_equal(a, b)
        else:
            a, b = (m.run(tags, values, engine=e) for e in ("reference", "table"))
            np.testing.assert_array_equal(a.status, b.status)
            assert np.array_equal(a.value, b.value, equal_nan=True)


@settings(max_examples=100 * SCALE)
@given(st.one_of(st.text(max_size=60),
                 st.binary(max_size=60).map(lambda b: b.decode("latin-1"))))
def test_random_text_is_a_monitor_or_a_query_error(text: str) -> None:
    compiled_or_query_error(text)


@settings(max_examples=400 * SCALE)
@given(mutated_queries(), st.integers(0, 2**32 - 1))
def test_mutated_queries_compile_or_fail_cleanly_and_engines_agree(text: str,
                                                                   seed: int) -> None:
    m = compiled_or_query_error(text)
    if m is not None:
        run_on_both_engines(m, seed)


@pytest.fixture(scope="module")
def events_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("fuzz") / "events.csv"
    rng = np.random.default_rng(7)
    pd.DataFrame({"key": rng.integers(0, 3, 30), "t": np.arange(30),
                  "tag": rng.choice(["a", "b"], 30), "x": rng.normal(size=30)}).to_csv(
        path, index=False)
    return path


def _command(argv: list[str]) -> tuple[int, str]:
    """``qre ARGV`` in this process: its exit code and stderr."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()), bounded():
        code = main(argv)
    return code, err.getvalue()


@settings(max_examples=100 * SCALE)
@given(text=mutated_queries(), command=st.sampled_from(["compile", "language", "run"]))
def test_the_command_line_exits_with_a_message_never_a_traceback(
        events_csv: Path, text: str, command: str) -> None:
    argv = {"compile": ["compile", text, "--stats"], "language": ["check", "language", text],
            "run": ["run", text, "--input", str(events_csv), "--key", "key", "--time", "t",
                    "--tag", "tag", "--value", "x"]}[command]
    code, err = _command(argv)
    event(f"{command}: exit {code}")
    assert code in (0, 1, 2, 3), (code, err)
    assert "Traceback" not in err, err
    if code == 2:  # "qre: ..." or argparse's "qre compile: ..." (a query text "-x")
        assert err.startswith("qre"), err


def _json_dt() -> str:
    return files("qre.examples").joinpath("running_sum.json").read_text()


@st.composite
def mutated_json(draw: st.DrawFn) -> str:
    """The packaged JSON DT with a value replaced somewhere in its tree, or its text cut."""
    if draw(st.booleans()):
        text = _json_dt()
        at = draw(st.integers(0, len(text)))
        return text[:at] + draw(st.sampled_from(["", "{", "]", '"', "0", "null"])) + \
            text[at + draw(st.integers(0, 5)):]
    tree = json.loads(_json_dt())
    paths = list(_paths(tree))
    path = draw(st.sampled_from(paths))
    odd = draw(st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(),
                         st.text(max_size=6), st.just([]), st.just({}),
                         st.sampled_from(["x + ", "cur.x", "s0", "q0", "nan", "a"])))
    _replace(tree, path, odd)
    return json.dumps(tree)


def _paths(node: object, path: tuple = ()) -> Iterator[tuple]:
    yield path
    items = node.items() if isinstance(node, dict) else enumerate(node) \
        if isinstance(node, list) else ()
    for key, child in items:
        yield from _paths(child, (*path, key))


def _replace(tree: object, path: tuple, value: object) -> None:
    if not path:
        return
    *parents, last = path
    for key in parents:
        tree = tree[key]  # type: ignore[index]
    tree[last] = value  # type: ignore[index]


@settings(max_examples=100 * SCALE)
@given(mutated_json(), st.integers(0, 2**32 - 1))
def test_a_mutated_json_dt_is_refused_or_runs_alike(text: str, seed: int) -> None:
    note(text)
    try:
        m = Monitor.from_dt(DT.from_json(text))
    except ValueError:  # DTError, JSONDecodeError: documented as ValueErrors
        event("refused")
        return
    event("loaded")
    run_on_both_engines(m, seed)
