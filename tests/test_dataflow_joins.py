"""``join(L, R, size[, slide])`` queries (issue 27): seed 000's window Join from qre(...).

Against the definition of dt.dataflow (every pair of accepted tuples in aligned windows
with equal keys, once per window) over complete input, and against the Flow's
dedicated join; derived tags as per-side conditions; errors with a caret.
"""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dt import dataflow as definition
from qre import QreSyntaxError, QreTypeError, qre
from qre.language.parser import parse
from qre.language.printer import to_text
from qre.runtime.dataflow import Flow

events = st.lists(st.tuples(st.integers(-20, 60), st.sampled_from(["a", "b", "c"]),
                            st.sampled_from(["k1", "k2"])), max_size=25)


@given(events, st.integers(1, 12), st.integers(0, 12), st.booleans())
def test_pairs_are_the_definitions(rows, slide, extra, same_tag):
    size = slide + extra
    left, right = ("a", "a") if same_tag else ("a", "b")
    j = qre(f"alphabet a, b, c; join({left}, {right}, {size}s, {slide}s)")
    times = [r[0] for r in rows]
    got = j.run_timed(times, [r[1] for r in rows], keys=[r[2] for r in rows])
    # the definition over complete input: tuples (τ, key, row), side 0 then side 1
    items = [(0, ("t", (t, k, i))) for i, (t, tag, k) in enumerate(rows) if tag == left]
    items += [(1, ("t", (t, k, i))) for i, (t, tag, k) in enumerate(rows) if tag == right]
    want = definition.join(items, slide, size, lambda t: t[1], lambda t: t[1],
                           lambda t1, t2: True)
    assert sorted((w[1][1], w[0], w[1][2], w[2][2]) for w in want) == \
        sorted(zip(got["key"], got["time"], got["left"], got["right"], strict=True))
    assert (got["time"] - got["start"] == size - 1).all()
    keys = [r[2] for r in rows]
    order = [(keys.index(k), t, a, b) for k, t, a, b in
             zip(got["key"], got["time"], got["left"], got["right"], strict=True)]
    assert order == sorted(order)


@given(events, st.integers(1, 8))
def test_pairs_are_the_flows_join(rows, size):
    frame = pd.DataFrame(rows, columns=["time", "tag", "key"]).reset_index(names="row")
    frame = frame[["time", "key", "tag", "row"]]
    flow = Flow()
    s = flow.source(frame, delay=1000)
    pairs = s.filter(lambda t: t[2] == "a").join(s.filter(lambda t: t[2] == "b"), size=size,
                                                 key="key").collect()
    j = qre(f"alphabet a, b, c; join(a, b, {size}s)")
    got = j.run_timed(frame["time"], frame["tag"], keys=frame["key"])
    assert sorted(zip(pairs["time"], pairs["row_left"], pairs["row_right"], strict=True)) == \
        sorted(zip(got["time"], got["left"], got["right"], strict=True))


def test_conditions_go_on_each_side_as_derived_tags():
    j = qre("alphabet click, buy; tag big = buy where cur.amount > 5; join(click, big, 1min)")
    rows = j.run_timed([0, 10, 20, 70, 80], ["click", "buy", "buy", "click", "buy"],
                       {"amount": [0.0, 9.0, 1.0, 0.0, 7.0]}, keys=["u"] * 5)
    assert rows.values.tolist() == [["u", 59, 0, 0, 1], ["u", 119, 60, 3, 4]]
    stamps = j.run_timed(pd.to_datetime([0, 10], unit="s", utc=True), ["click", "buy"],
                         {"amount": [0.0, 9.0]})
    assert str(stamps["time"].iloc[0]) == "1970-01-01 00:00:59.999999+00:00"


def test_the_text_round_trips():
    for text in ("join(a, b, 1min)", "join(a, a, 10s, 5s)"):
        assert to_text(parse(text).query) == text


@pytest.mark.parametrize("text, error, message", [
    ("alphabet a, b; join(a, c, 1min)", QreTypeError, "join tag 'c'"),
    ("alphabet a, b; join(a, b, 10s, 20s)", QreTypeError, "at most its size"),
    ("alphabet a, b; once(join(a, b, 1min))", QreSyntaxError, "whole query"),
    ("alphabet a, b; join(a, b, 10)", QreSyntaxError, "expected"),
])
def test_errors_point_at_the_join(text, error, message):
    with pytest.raises(error, match=message) as caught:
        qre(text)
    assert "^" in str(caught.value)


def test_qre_run_writes_the_pairs(tmp_path, capsys):
    from qre.cli import main

    path = tmp_path / "events.csv"
    path.write_text("time,tag,user,amount\n0,click,u,0\n10,buy,u,9\n20,buy,u,1\n"
                    "70,click,u,0\n80,buy,u,7\n")
    query = "alphabet click, buy; tag big = buy where cur.amount > 5; join(click, big, 1min)"
    assert main(["run", query, "--input", str(path), "--time", "time", "--key", "user",
                 "--value", "amount"]) == 0
    assert capsys.readouterr().out.splitlines() == ["key,time,start,left,right",
                                                    "u,59,0,0,1", "u,119,60,3,4"]
    assert main(["run", query, "--input", str(path), "--key", "user"]) == 2
    assert "--time" in capsys.readouterr().err
    assert main(["compile", "join(click, buy, 1min)"]) == 2
    assert "join(...) query's rows are its pairs" in capsys.readouterr().err
