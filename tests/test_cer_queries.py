"""``match(p, options)`` queries end to end (issue 26): text → Matcher → rows, against
the brute-force oracle per key; the syntax, its errors and its printing."""

from __future__ import annotations

import json
import math
import random

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dt.cer.oracle import enumerate_matches, enumerate_timeouts
from qre import qre
from qre.language.errors import QreSyntaxError, QreTypeError
from qre.language.match_query import match_query
from qre.language.parser import parse
from qre.language.printer import to_text
from qre.runtime.cer.matches import Matcher

TAGS = ("a", "b", "c")


def _pattern_text(rng: random.Random, depth: int = 3) -> str:
    roll = rng.random()
    if depth == 0 or roll < 0.3:
        return rng.choice(TAGS)
    inner = _pattern_text(rng, depth - 1)
    contiguity = rng.choice(["", "", "[strict]", "[next]", "[any]"])
    greedy = rng.choice(["", "", "", "[greedy]", "[reluctant]"]) if not contiguity else (
        rng.choice([contiguity, contiguity, contiguity[:-1] + ", greedy]"]))
    if roll < 0.5:
        parts = [inner, _pattern_text(rng, depth - 1)]
        if rng.random() < 0.2:
            parts.insert(1, f"not({rng.choice(TAGS)})")
        return f"seq{contiguity}({', '.join(parts)})"
    if roll < 0.6:
        word = rng.choice(["or", "and"])
        return f"{word}({inner}, {_pattern_text(rng, depth - 1)})"
    if roll < 0.85:
        return rng.choice([f"plus{greedy}({inner})", f"star{greedy}({inner})",
                           f"optional({inner})", f"times{contiguity}({inner}, 2)",
                           f"times{greedy}({inner}, 1, 2)", f"times({inner}, 2, inf)",
                           f"optional[greedy]({inner})"])
    return f"{rng.choice(['within', 'gap'])}({inner}, {rng.randint(1, 4)}s)"


def _query_text(rng: random.Random) -> str:
    options = []
    pattern = _pattern_text(rng)
    if rng.random() < 0.4:
        options.append(f"within {rng.randint(1, 5)}s")
        if rng.random() < 0.4:
            pattern = f"seq({pattern}, not({rng.choice(TAGS)}))"
    skip = rng.choice(["no_skip", "to_next", "past_last", "to_first", "to_last"])
    if skip in ("to_first", "to_last"):
        skip += f" {rng.choice([t for t in TAGS if t in pattern] or ['a'])}"
    options.append(f"skip {skip}")
    options.append(f"strategy {rng.choice(['strict', 'next', 'any'])}")
    if rng.random() < 0.2:
        options.append("consume")
    if options[0].startswith("within") and rng.random() < 0.5:
        options.append("timeouts")
    return f"alphabet a, b, c; match({', '.join([pattern, *options])})"


def _compiled(text: str) -> Matcher | None:
    try:
        m = qre(text)
        m.tables(10**9)
    except QreTypeError as err:  # a skip variable the pattern lacks, a greedy repetition
        assert "no variable" in err.message or "greedy" in err.message  # last or of ε
        return None
    except ValueError as err:  # an ambiguous nesting the automaton refuses
        assert "ambiguous" in str(err)
        return None
    assert isinstance(m, Matcher)
    return m


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32))
def test_match_rows_equal_the_oracle_per_key(seed: int) -> None:
    """Random query text, random keyed events in a random row order: each key's rows
    are its events sorted by time (ties by tag), matched as the oracle says."""
    rng = random.Random(seed)
    text = _query_text(rng)
    m = _compiled(text)
    if m is None:
        return
    # at most 12 events in all: the oracle enumerates a key's subsequences up to 12
    n = rng.randint(0, 10 if "timeouts" in text else 12)
    keys = [rng.choice("xy") for _ in range(n)]
    times = [rng.randint(0, 8) for _ in range(n)]
    tags = [rng.choice(TAGS) for _ in range(n)]
    got = m.run_timed(times, tags, keys=keys, per="match")
    query = match_query(m.query, m.alphabet, 10**9)
    want_rows = []
    for key in dict.fromkeys(keys):
        rows = sorted((i for i in range(n) if keys[i] == key),
                      key=lambda i: (times[i], tags[i], i))
        sat = np.zeros((len(rows), 3), dtype=np.bool_)
        sat[np.arange(len(rows)), [TAGS.index(tags[i]) for i in rows]] = True
        clock = np.array([times[i] for i in rows])
        found = [(m, 0 if query.ending else 2) for m in enumerate_matches(query, sat, clock)]
        if query.timeouts:
            found += [(m, 1) for m in enumerate_timeouts(query, sat, clock)]
        found.sort(key=lambda mp: (mp[0].emitted, mp[1]))  # stable: each list is in order
        for match, _ in found:
            want_rows.append((key, [rows[e] for e in match.events], list(match.names)))
    assert [(k, r, v) for k, r, v in zip(got.get("key", []), got["rows"], got["vars"],
                                         strict=True)] == want_rows, text
    events = m.run_timed(times, tags, keys=keys, per="event")
    assert events["row"].tolist() == [r for _, rows, _ in want_rows for r in rows]
    assert (events["time"].to_numpy() == np.array(times, dtype=np.int64)[events["row"]]).all()


def test_match_rows_columns_and_stamps() -> None:
    m = qre("alphabet login, fail, ok; "
            "match(seq(fail, plus(fail), ok), within 1min, skip past_last, strategy next)")
    ts = pd.to_datetime(["2026-11-25T10:00:00Z", "2026-11-25T10:00:05Z",
                         "2026-11-25T10:00:10Z", "2026-11-25T10:00:20Z"])
    rows = m.run_timed(ts, ["fail", "fail", "fail", "ok"], keys=["u"] * 4)
    assert rows.columns.tolist() == ["key", "match", "start", "end", "time", "rows", "vars"]
    assert rows["rows"].tolist() == [[0, 1, 2, 3]]
    assert rows["vars"].tolist() == [["fail", "fail", "fail", "ok"]]
    assert str(rows["end"].dt.tz) == "UTC" and rows["end"][0] == ts[3]
    absent = qre("alphabet fail, ok; match(seq(fail, not(ok)), within 60s)")
    out = absent.run_timed([0, 5, 20, 200], ["fail", "fail", "ok", "fail"])
    assert out["rows"].tolist() == [[3]] and out["time"].tolist() == [259]


def test_untimed_run_keeps_input_order() -> None:
    m = qre("alphabet a, b; match(seq[strict](a, b), skip to_next)")
    out = m.run(["a", "a", "b", "b"], keys=[1, 2, 1, 2])
    assert out["rows"].tolist() == [[0, 2], [1, 3]] and out["key"].tolist() == [1, 2]
    with pytest.raises(ValueError, match="run_timed"):
        qre("alphabet a; match(within(plus(a), 1s))").run(["a"])


def test_derived_tags_are_conditions() -> None:
    m = qre("alphabet r; tag hot = r where cur > 30; match(seq[next](hot, plus(r), hot))")
    out = m.run(["r"] * 5, [31.0, 5.0, 6.0, 40.0, 1.0])
    # next: plus(r) starts at the first r after the hot (r1), and the last hot follows
    assert out["rows"].tolist() == [[0, 1, 2, 3], [0, 1, 3]]


@pytest.mark.parametrize("text", [
    "alphabet a, b, c; match(seq[next](a, plus[strict](b), not(c)), within 5s, "
    "skip to_first b, strategy next, consume)",
    "match(seq(a, times(b, 2, 2), times(c, 0, 1), times(b, 0, inf), times[any](a, 1, inf), "
    "gap(seq(a, b), 2s)))",
    "match(seq(plus[greedy](a), times[strict, greedy](b, 0, 1), star[next, greedy](c), a))",
])
def test_printed_text_reads_back(text: str) -> None:
    program = parse(text)
    assert parse(to_text(program)) == program


@pytest.mark.parametrize(("text", "error", "message"), [
    ("match(a, within 1s, within 2s)", QreSyntaxError, "given twice"),
    ("once(match(a))", QreSyntaxError, "whole query"),
    ("match(seq[soon](a, b))", QreSyntaxError, "'soon' in brackets"),
    ("match(seq[greedy](a, b))", QreSyntaxError, "are for plus, star"),
    ("match(seq(plus[greedy, strict, reluctant](a), b))", QreSyntaxError, "one contiguity"),
    ("match(seq(a, plus[greedy](b)))", QreTypeError, "can end a match"),
    ("match(seq(plus[greedy](star(a)), b))", QreTypeError, "empty sequence"),
    ("match(seq(times[greedy](a, 2), b))", QreTypeError, "fixed count"),
    ("matched(seq(plus[greedy](a), b))", QreTypeError, "are for match"),
    ("match(a, skip to_first)", QreSyntaxError, "takes a variable"),
    ("match(a, skip past_last a)", QreSyntaxError, "takes none"),
    ("match(a, strategy eager)", QreSyntaxError, "strategy eager"),
    ("match(times(a, 3, 2))", QreSyntaxError, "lo ≤ hi"),
    ("match(seq(a, not(b)))", QreTypeError, "needs the option within"),
    ("alphabet a, b; match(a, skip to_last b)", QreTypeError, "no variable 'b'"),
    ("alphabet a; match(seq(a, c))", QreTypeError, "not an event tag"),
    ("matched(seq(a, not(b)))", QreSyntaxError, "stands between"),
    ("matches(times(a, 2))", QreTypeError, "are for match"),
    ("matched(seq[next](a, b))", QreTypeError, "are for match"),
])
def test_errors_show_where(text: str, error: type, message: str) -> None:
    with pytest.raises(error, match=message) as caught:
        qre(text)
    assert "^" in str(caught.value)


def test_the_command_line_runs_a_match_query(capsys, tmp_path) -> None:
    from qre.cli import main

    events = tmp_path / "events.csv"
    events.write_text("user,ts,tag\nu,0,fail\nu,5,fail\nv,6,fail\nu,9,ok\nv,100,ok\n")
    query = "alphabet fail, ok; match(seq[next](fail, ok), within 1min)"
    code = main(["run", query, "--input", str(events), "--time", "ts", "--key", "user",
                 "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    rows = json.loads(out)
    # each fail is followed by its first ok; v's ok comes too late
    assert [(r["key"], json.loads(r["rows"])) for r in rows] == [("u", [0, 3]), ("u", [1, 3])]
    for argv in (["compile", query], ["run", query, "--input", str(events)]):
        assert main(argv) == 2
        out, err = capsys.readouterr()
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32))
def test_measures_are_functions_of_each_match_events(seed: int) -> None:
    """Each measure, recomputed from the match's rows and variables in plain Python."""
    rng = random.Random(seed)
    pattern = _pattern_text(rng, 2)
    var = rng.choice([t for t in TAGS if t in pattern] or ["a"])
    text = (f"alphabet a, b, c; match({pattern}, measures [first({var}.x) as f, "
            f"last({var}.x) as l, count({var}) as n, sum({var}.x) as s, min({var}.x) as lo, "
            f"max({var}.x) as hi, avg({var}.x) as mean])")
    m = _compiled(text)
    if m is None:
        return
    n = rng.randint(0, 9)
    tags = [rng.choice(TAGS) for _ in range(n)]
    x = [rng.choice([0.5, 1.0, -2.0, 1e16, float("nan")]) for _ in range(n)]
    out = m.run_timed(list(range(n)), tags, {"x": x})
    for row in out.itertuples(index=False):
        picked = [x[r] for r, v in zip(row.rows, row.vars, strict=True) if v == var]
        assert row.n == len(picked)
        if not picked:
            assert all(math.isnan(getattr(row, c)) for c in ("f", "l", "s", "lo", "hi", "mean"))
            continue
        want = {"f": picked[0], "l": picked[-1], "s": math.fsum(picked),
                "lo": min(picked) if not any(map(math.isnan, picked)) else math.nan,
                "hi": max(picked) if not any(map(math.isnan, picked)) else math.nan,
                "mean": math.fsum(picked) / len(picked)}
        for column, value in want.items():
            got = getattr(row, column)
            assert got == value or (math.isnan(got) and math.isnan(value)), (column, text)


@pytest.mark.parametrize(("text", "values", "message"), [
    ("alphabet a; match(a, measures [first(a) as f])", {"x": [1.0]}, "reads the event values"),
    ("alphabet a; match(a, measures [first(a.y) as f])", {"x": [1.0]}, "field 'y'"),
    ("alphabet a; match(a, measures [first(a.y) as f])", [1.0], "field 'y'"),
])
def test_measures_name_what_they_lack(text: str, values: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        qre(text).run(["a"], values)


@pytest.mark.parametrize(("text", "error", "message"), [
    ("alphabet a, b; match(a, measures [count(b) as n])", QreTypeError, "no variable 'b'"),
    ("match(a, measures [median(a) as m])", QreSyntaxError, "measure median"),
    ("match(a, measures [count(a) as rows])", QreSyntaxError, "is a column"),
    ("match(a, measures [count(a) as n, sum(a) as n])", QreSyntaxError, "one name"),
])
def test_measure_errors(text: str, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        qre(text)


def test_timeouts_need_the_option_within() -> None:
    with pytest.raises(QreTypeError, match="timeouts need the option within"):
        qre("alphabet a, b; match(seq(a, b), timeouts)")


def test_a_gap_times_out_before_the_within() -> None:
    """An order waits at most 10 minutes for its payment (the gap), an hour for the
    whole: the unpaid order times out 10 minutes after it, stamped then."""
    orders = qre("alphabet order, pay, ship; match(gap(seq(order, pay, ship), 10min), "
                 "within 1h, strategy next, timeouts)")
    rows = orders.run_timed([0, 300, 800, 1000], ["order", "pay", "ship", "order"])
    assert rows["rows"].tolist() == [[0, 1, 2], [3]]
    assert rows["timeout"].tolist() == [False, True]
    assert rows["time"].tolist() == [800, 1000 + 600 - 1]
