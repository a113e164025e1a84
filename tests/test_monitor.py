"""qre.Monitor: agreement with dt.reference.evaluate, every accepted input form, every
error path (docs/API.md, "Python API" and "Values and outputs")."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dt import DT, Transition
from dt.errors import DTError
from dt.reference import evaluate
from dt.terms import Apply, Const, Cur, Term, Var
from dt.values import BOT, TOP, XValue
from qre import Monitor, Output, QreTypeError, qre
from tests.strategies import arbitrary_dts, data_values, words
from tests.util import assert_same_outputs

API_EXAMPLE = DT(
    ("a", "b"), ("i", "f"), ("i",), ("f",),
    (Transition("a", frozenset({Var("i")}), "f", Apply("add", (Var("i"), Cur()))),),
)


def _expected_arrays(rows: list[tuple[XValue, ...]]) -> tuple[np.ndarray, np.ndarray]:
    """(status, value) of API.md, computed from extended values without dt.values.encode."""
    status = [[0 if x is BOT else 2 if x is TOP else 1 for x in row] for row in rows]
    value = [[x if isinstance(x, float) else math.nan for x in row] for row in rows]
    return np.array(status, dtype=np.uint8), np.array(value, dtype=np.float64)


def assert_output_matches(out: Output, d: DT, rows: list[tuple[XValue, ...]]) -> None:
    """``out`` encodes ``rows`` (one output vector per event) exactly, in API.md's layout."""
    status, value = _expected_arrays(rows)
    status = status.reshape(len(rows), len(d.final))
    value = value.reshape(len(rows), len(d.final))
    if len(d.final) == 1:
        status, value = status[:, 0], value[:, 0]
    assert out.names == d.final
    assert out.status.dtype == np.uint8 and out.value.dtype == np.float64
    assert out.status.shape == status.shape and out.value.shape == value.shape
    np.testing.assert_array_equal(out.status, status)
    # Bit for bit (NaN == NaN, -0.0 != 0.0).
    assert out.value.tobytes() == value.tobytes()
    assert np.isnan(out.value[out.status != 1]).all()


# --------------------------------------------------------------------------- agreement


@st.composite
def dts_and_words(draw, **kw):
    d = draw(arbitrary_dts(**kw))
    return d, draw(words(d.alphabet, max_len=8))


@given(dts_and_words())
def test_run_equals_reference_evaluate(case):
    d, word = case
    m = Monitor.from_dt(d)
    want = evaluate(d, [0.0] * len(d.initial), word)
    tags = [t for t, _ in word]
    values = [v for _, v in word]
    for engine in ("reference", "auto"):
        assert_output_matches(m.run(tags, values, engine=engine), d, want[1:])
    status, value = m.initial
    (want_status,), (want_value,) = (a.reshape(1, -1) for a in _expected_arrays(want[:1]))
    if len(d.final) == 1:
        assert isinstance(status, int) and isinstance(value, float)
        assert status == want_status[0] and value.hex() == float(want_value[0]).hex()
    else:
        np.testing.assert_array_equal(status, want_status)
        assert np.asarray(value).tobytes() == want_value.tobytes()


@given(dts_and_words())
def test_output_xvalues_decode_the_arrays(case):
    d, word = case
    out = Monitor.from_dt(d).run([t for t, _ in word], [v for _, v in word])
    assert len(out) == len(word)
    assert_same_outputs(out.xvalues(), evaluate(d, [0.0] * len(d.initial), word)[1:])


def _fields(term: Term, field: str) -> Term:
    """``term`` with every plain ``cur`` replaced by ``cur.field``."""
    if isinstance(term, Cur):
        return Cur(field)
    if isinstance(term, Apply):
        return Apply(term.op, tuple(_fields(a, field) for a in term.args))
    return term


@given(dts_and_words(), st.data())
def test_record_events_equal_reference(case, data):
    d, word = case
    d = DT(d.alphabet, d.states, d.initial, d.final, tuple(
        Transition(t.on, t.sources, t.target, _fields(t.term, "xy"[k % 2]))
        for k, t in enumerate(d.transitions)))
    ys = data.draw(st.lists(data_values, min_size=len(word), max_size=len(word)))
    events = [(tag, {"x": x, "y": y}) for (tag, x), y in zip(word, ys, strict=True)]
    want = evaluate(d, [0.0] * len(d.initial), events)[1:]
    tags = [t for t, _ in word]
    xs = [x for _, x in word]
    m = Monitor.from_dt(d)
    for values in ({"x": xs, "y": ys, "unused": ["text"] * len(xs)},
                   {"y": np.array(ys), "x": np.array(xs)},
                   pd.DataFrame({"x": xs, "y": ys, "z": 0.0})):
        assert_output_matches(m.run(tags, values), d, want)


@given(dts_and_words())
def test_every_input_form_gives_the_same_result(case):
    d, word = case
    m = Monitor.from_dt(d)
    tags = [t for t, _ in word]
    values = [v for _, v in word]
    want = m.run(tags, values)
    codes = np.array([d.alphabet.index(t) for t in tags], dtype=np.int64)
    reversed_categories = pd.Categorical(tags, categories=[*reversed(d.alphabet), "zzz"])
    tag_forms = [
        tuple(tags), np.array(tags, dtype=str), np.array(tags, dtype=object), pd.Series(tags),
        pd.Categorical(tags, categories=list(d.alphabet)), reversed_categories,
        pd.Series(reversed_categories), codes, codes.astype(np.int8), codes.astype(np.uint16),
    ]
    value_forms = [tuple(values), np.array(values), np.array(values, dtype=np.float32),
                   pd.Series(values), pd.array(values, dtype="Float64"),
                   np.array(values, dtype=object)]
    for form in tag_forms:
        got = m.run(form, values)
        np.testing.assert_array_equal(got.status, want.status)
        assert got.value.tobytes() == want.value.tobytes()
    for form in value_forms:
        got = m.run(tags, form)
        np.testing.assert_array_equal(got.status, want.status)
        assert got.value.tobytes() == want.value.tobytes()


@given(dts_and_words(), st.lists(st.integers(0, 8), max_size=3))
def test_skipped_unknown_tags_repeat_the_previous_output(case, positions):
    d, word = case
    word_with_unknown = list(word)
    for p in sorted(positions, reverse=True):
        word_with_unknown.insert(min(p, len(word_with_unknown)), ("unknown!", 5.0))
    # Expectation: evaluate the word without the unknown events, then repeat outputs.
    outputs = evaluate(d, [0.0] * len(d.initial), word)
    want, seen = [], 0
    for tag, _ in word_with_unknown:
        if tag != "unknown!":
            seen += 1
        want.append(outputs[seen])
    out = Monitor.from_dt(d).run([t for t, _ in word_with_unknown],
                                 [v for _, v in word_with_unknown], unknown_tags="skip")
    assert_output_matches(out, d, want)


def test_skipped_missing_categorical_value():
    m = Monitor.from_dt(API_EXAMPLE)
    tags = pd.Categorical(["a", None, "b"], categories=["a", "b"])
    out = m.run(tags, [1.0, 2.0, 3.0], unknown_tags="skip")
    assert out.status.tolist() == [1, 1, 0] and out.value[:2].tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match=r"missing tag at position 1 \(nan\)"):
        m.run(tags, [1.0, 2.0, 3.0])


@pytest.mark.parametrize("n_tags, dtype", [(2, np.int8), (128, np.int8), (129, np.int16)])
def test_tag_codes_come_in_the_kernels_narrow_dtype(n_tags, dtype):
    """Every form of tags becomes codes of the dtype the kernels read (one byte a code for
    up to 128 tags), long columns (Numba's paths) and short ones alike."""
    from qre.runtime.tag_codes import tag_codes

    alphabet = [f"t{k}" for k in range(n_tags)]
    for n in (5, 50_000):
        tags = [alphabet[k % n_tags] for k in range(n)]
        want = np.arange(n) % n_tags
        for form in (tags, np.array(tags, dtype=object), pd.Categorical(tags),
                     want.astype(np.int64), pd.array(want, dtype="Int64")):
            codes = tag_codes(form, alphabet)
            assert codes.dtype == dtype and codes.tolist() == want.tolist()


# --------------------------------------------------------------------------- shapes and values


def test_api_example_output():
    m = Monitor.from_dt(API_EXAMPLE)
    out = m.run(["a", "b", "a"], [1.0, 2.0, 3.0])
    assert out.status.tolist() == [1, 0, 0]
    assert out.value[0] == 1.0 and np.isnan(out.value[1:]).all()
    status, value = m.initial
    assert status == 0 and math.isnan(value)


def test_several_final_states_give_two_dimensional_outputs():
    d = DT(("a",), ("n", "s"), (), ("s", "n"), (
        Transition("init", frozenset(), "n", Const(0.0)),
        Transition("a", frozenset({Var("n")}), "n", Apply("add", (Var("n"), Const(1.0)))),
        Transition("a", frozenset({Var("n", True)}), "s", Apply("mul", (Var("n", True), Cur()))),
    ))
    m = Monitor.from_dt(d)
    out = m.run(["a", "a"], [10.0, 20.0])
    assert out.names == ("s", "n")
    assert out.status.shape == (2, 2) and out.value.shape == (2, 2)
    assert out.value.tolist() == [[10.0, 1.0], [40.0, 2.0]]
    status, value = m.initial
    assert status.tolist() == [0, 1] and value[1] == 0.0 and math.isnan(value[0])


def test_no_final_states():
    d = DT(("a",), ("q",), (), (), ())
    out = Monitor.from_dt(d).run(["a"] * 3)
    assert out.status.shape == (3, 0) and out.xvalues() == [(), (), ()]


def test_empty_stream():
    out = Monitor.from_dt(API_EXAMPLE).run([], [])
    assert out.status.shape == (0,) and out.value.shape == (0,) and len(out) == 0


def test_nan_and_inf_pass_through_as_defined_values():
    d = DT(("a",), ("f",), (), ("f",), (Transition("a", frozenset(), "f", Cur()),))
    out = Monitor.from_dt(d).run(["a"] * 4, [math.nan, math.inf, -math.inf, -0.0])
    assert out.status.tolist() == [1, 1, 1, 1]
    assert math.isnan(out.value[0]) and out.value[1:3].tolist() == [math.inf, -math.inf]
    assert math.copysign(1.0, out.value[3]) == -1.0
    # A missing entry of a nullable pandas column is NaN, a defined value.
    out = Monitor.from_dt(d).run(["a", "a"], pd.array([1.5, None], dtype="Float64"))
    assert out.status.tolist() == [1, 1] and out.value[0] == 1.5 and math.isnan(out.value[1])


def test_values_may_be_omitted_when_the_dt_never_reads_cur():
    d = DT(("a", "b"), ("n",), ("n",), ("n",), (
        Transition("a", frozenset({Var("n")}), "n", Apply("add", (Var("n"), Const(1.0)))),
        Transition("b", frozenset({Var("n")}), "n", Var("n")),
    ))
    out = Monitor.from_dt(d).run(["a", "b", "a"])
    assert out.value.tolist() == [1.0, 1.0, 2.0]


def test_stats():
    m = Monitor.from_dt(API_EXAMPLE)
    s = m.stats
    assert (s.states, s.transitions, s.size, s.registers) == (2, 1, 7, 2)
    assert s.ops_per_event == 1 + 3  # on a: one transition, term i + cur has 3 nodes
    d = DT(("a", "b"), ("p", "q"), ("p",), ("q",), (
        Transition("eps", frozenset({Var("p", True)}), "q", Var("p", True)),  # 1 + 1, every tag
        Transition("a", frozenset({Var("q")}), "p", Apply("neg", (Var("q"),))),  # 1 + 2
        Transition("b", frozenset(), "p", Const(1.0)),  # 1 + 1
        Transition("init", frozenset(), "p", Const(1.0)),  # not an event
    ))
    s = Monitor.from_dt(d).stats
    assert (s.states, s.transitions, s.registers) == (2, 4, 2)
    assert s.size == 2 + (1 + 1 + 1) + (1 + 1 + 2) + (0 + 1 + 1) + (0 + 1 + 1)
    assert s.ops_per_event == max(2 + 3, 2 + 2)


def test_alphabet_order_and_extension():
    m = Monitor.from_dt(API_EXAMPLE, alphabet=["b", "c", "a"])
    assert m.alphabet == ("b", "c", "a") and m.dt.alphabet == ("b", "c", "a")
    out = m.run(np.array([2, 1, 0]), [1.0, 2.0, 3.0])
    assert out.status.tolist() == [1, 0, 0] and out.value[0] == 1.0
    # An added tag fires only eps transitions: here none, so the output is undefined.
    assert m.run(["c"], [1.0]).status.tolist() == [0]
    with pytest.raises(ValueError, match="alphabet lacks tag"):
        Monitor.from_dt(API_EXAMPLE, alphabet=["a"])
    with pytest.raises(ValueError, match="listed twice"):
        Monitor.from_dt(API_EXAMPLE, alphabet=["a", "b", "a"])
    with pytest.raises(TypeError):
        Monitor.from_dt(API_EXAMPLE, alphabet="ab")
    with pytest.raises(TypeError):
        Monitor.from_dt("not a DT")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- errors

RECORD_DT = DT(("a",), ("f",), (), ("f",), (
    Transition("a", frozenset(), "f", Apply("sub", (Cur("x"), Cur("y")))),
))

ERRORS = [
    # (id, dt, args, kwargs, exception, regex)
    ("unknown tag", API_EXAMPLE, (["a", "a", "zz"], [1, 2, 3]), {}, ValueError,
     r"unknown tag 'zz' at position 2"),
    ("unknown tag in array", API_EXAMPLE, (np.array(["a", "q"]), [1, 2]), {}, ValueError,
     r"unknown tag 'q' at position 1"),
    ("int list is not codes", API_EXAMPLE, ([0, 1], [1, 2]), {}, ValueError,
     r"unknown tag 0 at position 0.*numpy integer array"),
    ("code too large", API_EXAMPLE, (np.array([0, 1, 2]), [1, 2, 3]), {}, ValueError,
     r"tag code 2 at position 2 is out of range"),
    ("negative code", API_EXAMPLE, (np.array([-1]), [1]), {"unknown_tags": "skip"}, ValueError,
     r"tag code -1 at position 0"),
    ("2-D codes", API_EXAMPLE, (np.zeros((1, 1), dtype=int), [1]), {}, ValueError,
     r"one-dimensional"),
    ("2-D tags", API_EXAMPLE, (np.array([["a"]]), [1]), {}, ValueError, r"one-dimensional"),
    ("tags a string", API_EXAMPLE, ("ab", [1, 2]), {}, TypeError, r"not a single string"),
    ("unknown engine", API_EXAMPLE, (["a"], [1]), {"engine": "fast"}, ValueError,
     r"unknown engine 'fast'"),
    ("bad unknown_tags", API_EXAMPLE, (["a"], [1]), {"unknown_tags": "ignore"}, ValueError,
     r"unknown_tags must be"),
    ("values too short", API_EXAMPLE, (["a", "b"], [1.0]), {}, ValueError,
     r"values has 1 entries but there are 2 tags"),
    ("value not a number", API_EXAMPLE, (["a", "b", "a"], [1.0, 2.0, "x"]), {}, ValueError,
     r"row 2 of values: 'x' is not a number"),
    ("value None", API_EXAMPLE, (["a", "b"], [None, 2.0]), {}, ValueError,
     r"row 0 of values: None is not a number"),
    ("value complex", API_EXAMPLE, (["a"], np.array([1j])), {}, ValueError,
     r"row 0 of values: .*is not a number"),
    ("values a string", API_EXAMPLE, (["a"], "1"), {}, TypeError, r"not a single string"),
    ("values 2-D", API_EXAMPLE, (["a"], np.zeros((1, 2))), {}, ValueError, r"one-dimensional"),
    ("values missing", API_EXAMPLE, (["a"],), {}, ValueError, r"the DT reads cur: pass values"),
    ("records for scalar cur", API_EXAMPLE, (["a"], {"x": [1.0]}), {}, ValueError,
     r"reads cur \(one float per event\) but values are records"),
    ("scalar for records", RECORD_DT, (["a"], [1.0]), {}, ValueError,
     r"record fields \(cur.x, cur.y\)"),
    ("record values missing", RECORD_DT, (["a"],), {}, ValueError, r"reads cur.x, cur.y"),
    ("missing field", RECORD_DT, (["a"], {"x": [1.0], "z": [2.0]}), {}, ValueError,
     r"lack the field\(s\) y"),
    ("column too long", RECORD_DT, (["a"], {"x": [1.0], "y": [2.0, 3.0]}), {}, ValueError,
     r"column 'y' has 2 entries but there are 1 tags"),
    ("unused column too short", RECORD_DT, (["a"], {"x": [1.0], "y": [2.0], "note": []}), {},
     ValueError, r"column 'note' has 0 entries but there are 1 tags"),
    ("column not numbers", RECORD_DT, (["a", "a"], pd.DataFrame({"x": [1.0, 2.0],
                                                                 "y": ["1", "b"]})), {},
     ValueError, r"row 0 of column 'y': '1' is not a number"),
    ("column of dates", RECORD_DT, (["a"], pd.DataFrame({"x": [1.0],
                                                         "y": pd.to_datetime(["2024-01-01"])})),
     {}, ValueError, r"row 0 of column 'y'.*is not a number"),
]


@pytest.mark.parametrize(("d", "args", "kwargs", "exc", "pattern"),
                         [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_error_paths(d, args, kwargs, exc, pattern):
    with pytest.raises(exc, match=pattern):
        Monitor.from_dt(d).run(*args, **kwargs)


def test_a_dt_reading_cur_and_a_field_is_refused_at_load():
    """Issue 19, point 18: such a DT loaded, then failed at every run (no event is both a
    number and a record); it is refused where it is built into a monitor or read, and a
    query that mixes them is a type error at the construct reading the field."""
    both = "combine(iter(atom(a, cur), 0, +), iter(atom(a, cur.x), 0, +), +)"
    with pytest.raises(QreTypeError, match=r"reads cur\.x, but the query also reads cur "
                       r"\(line 1, column 14\).*not both: pass values as a dict or DataFrame "
                       r"of columns and read them as cur\.FIELD at line 1, column 40"):
        qre(both)
    dt = qre(both.replace("cur.x", "cur"), optimize=False).dt
    mixed = DT(dt.alphabet, dt.states, dt.initial, dt.final,
               (*dt.transitions, Transition("a", frozenset(), dt.states[0], Cur("x"))))
    with pytest.raises(DTError, match=r"reads both cur and cur\.x"):
        Monitor.from_dt(mixed)
    with pytest.raises(DTError, match=r"reads both cur and cur\.x"):
        DT.from_json(mixed.to_json())
