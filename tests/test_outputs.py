"""Named outputs and frames of outputs (qre.runtime.output): qre({name: query}), Output.to_pandas,
pd.DataFrame(output), the naming rule and its collision check."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from query_strategies import temporal_queries, top_queries
from strategies import words

from dt import DT, Transition, Var
from dt.terms import Apply, Const, Cur
from qre import Monitor, QreSyntaxError, QreTypeError, qre
from qre.language.printer import to_text
from qre.runtime.output import Output, check_no_collision, result_columns

ALPHABET = ("a", "b")


@settings(max_examples=25)
@given(st.data(), st.sampled_from(["reference", "table"]))
def test_a_dict_of_queries_equals_each_query_alone(data, engine):
    """Each output of qre({p: q1, q: q2}) is, status and value bit for bit, what the
    query computes alone over the same alphabet."""
    first = data.draw(top_queries(ALPHABET, depth=2))
    second = data.draw(temporal_queries(ALPHABET, depth=2))
    word = data.draw(words(ALPHABET))
    tags, values = [t for t, _ in word], [v for _, v in word]
    both = qre({"first": to_text(first), "second": second}, alphabet=ALPHABET)
    assert both.outputs == ("first", "second")  # not the compiled DT's state names
    out = both.run(tags, values, engine=engine)
    assert out.names == ("first", "second") and out.status.shape == (len(word), 2)
    for j, query in enumerate((first, second)):
        alone = qre(query, alphabet=ALPHABET).run(tags, values, engine="reference")
        np.testing.assert_array_equal(out.status[:, j], alone.status)
        np.testing.assert_array_equal(out.value[:, j].view(np.int64),
                                      alone.value.view(np.int64))


def test_a_dict_names_the_columns_everywhere():
    m = qre({"mean": "avg(cur)", "alarm": "avg(cur) > const(2)"}, alphabet=["m"])
    out = m.run(["m", "m", "m"], [1.0, 2.0, 6.0])
    frame = out.to_pandas()
    assert list(frame.columns) == ["status_mean", "value_mean", "status_alarm", "value_alarm"]
    assert frame["value_mean"].tolist() == [1.0, 1.5, 3.0]
    assert frame["value_alarm"].tolist() == [0.0, 0.0, 1.0]
    assert frame["status_mean"].dtype == np.uint8
    pd.testing.assert_frame_equal(pd.DataFrame(out), frame, check_dtype=False)
    assert out.to_pandas(prefix="q_").columns[0] == "q_status_mean"


def test_the_alphabet_of_a_dict():
    """Declared alphabets must agree; else the union of the mentioned tags, in order."""
    m = qre({"x": "atom(b, cur)", "n": "count()", "y": "atom(a, 1)"})
    assert m.alphabet == ("b", "a")
    assert qre({"s": "alphabet a, b; sum(cur)", "n": "count()"}).alphabet == ("a", "b")
    with pytest.raises(QreTypeError, match="different alphabets"):
        qre({"s": "alphabet a; sum(cur)", "n": "alphabet a, b; count()"})
    with pytest.raises(QreTypeError, match="output 'bad'") as caught:
        qre({"ok": "atom(a, cur)",
             "bad": "combine(atom(a, cur), split(atom(a, cur), atom(b, cur), +), +)"})
    assert caught.value.line == 1 and "^" in str(caught.value)
    with pytest.raises(QreSyntaxError):
        qre({"ok": "atom(a, cur)", "bad": "atom(a,"})
    with pytest.raises(ValueError, match="timed query"):
        qre({"w": "alphabet a; aggregate(count(), 1min)"})
    with pytest.raises(ValueError, match="empty"):
        qre({})


def test_a_hand_written_dt_names_its_outputs_by_its_final_states():
    """A DT's outputs are named by its final states as written, or by ``outputs=``."""
    i = Var("i")
    d = DT(("a",), ("i", "total", "t2", "double"), ("i",), ("total", "double"), (
        Transition("a", frozenset({i}), "i", i),
        Transition("a", frozenset({Var("total")}), "t2", Apply("add", (Var("total"), Cur()))),
        Transition("init", frozenset({Var("i", True)}), "t2", Const(0.0)),
        Transition("eps", frozenset({Var("t2", True)}), "total", Var("t2", True)),
        Transition("eps", frozenset({Var("total", True)}), "double",
                   Apply("mul", (Var("total", True), Const(2.0)))),
    ))
    m = Monitor.from_dt(d)
    assert m.outputs == ("total", "double")
    assert list(m.run(["a", "a"], [1.0, 2.0]).to_pandas().columns) == [
        "status_total", "value_total", "status_double", "value_double"]
    renamed = Monitor.from_dt(d, outputs=["sum", "twice"])
    assert renamed.run(["a"], [4.0]).to_pandas()["value_twice"].tolist() == [8.0]
    with pytest.raises(ValueError, match="distinct"):
        Monitor.from_dt(d, outputs=["x", "x"])
    with pytest.raises(ValueError, match="2 output"):
        Monitor.from_dt(d, outputs=["x"])


def test_one_output_frames():
    out = qre("sum(cur)", alphabet=["a"]).run(["a", "a"], [1.0, 2.0])
    assert list(out) == [{"status": 1, "value": 1.0}, {"status": 1, "value": 3.0}]
    assert pd.DataFrame(out)["value"].tolist() == [1.0, 3.0]
    assert pd.DataFrame(Output(np.zeros(0, np.uint8), np.zeros(0), ("x",))).empty


def test_the_naming_rule_and_collisions():
    assert result_columns(["x"], "p_") == [("p_status", "p_value")]
    check_no_collision(["status", "value"], ["tag", "amount"], "{prefix}")
    with pytest.raises(ValueError, match=r"'status'.*prefix=_qre_"):
        check_no_collision(["status"], ["status", "qre_status"], "prefix={prefix}")
    with pytest.raises(TypeError):
        result_columns(["x"], prefix=None)  # type: ignore[arg-type]
