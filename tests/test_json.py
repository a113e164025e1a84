"""DT JSON format (docs/API.md, "Data transducers as files"): round trips, the
API.md example, and one clear DTError per kind of malformed document."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dt import DT, DTError, Transition
from dt.reference import evaluate
from dt.terms import Apply, Const, Cur, Var
from dt.values import BOT, TOP
from tests.strategies import arbitrary_dts, data_values, words
from tests.util import assert_same_outputs

API_EXAMPLE = """{
  "alphabet": ["a", "b"],
  "states": ["i", "f"],
  "initial": ["i"],
  "final": ["f"],
  "transitions": [
    {"on": "a", "sources": ["i"], "target": "f", "term": "i + cur"}
  ]
}"""


# --------------------------------------------------------------------------- round trips


@given(arbitrary_dts())
def test_round_trip_random_dts(d):
    text = d.to_json()
    back = DT.from_json(text)
    assert back == d
    # Deterministic: writing the read-back DT gives the same text, compact or not.
    assert back.to_json() == text
    assert DT.from_json(d.to_json(indent=None)) == d


@given(arbitrary_dts())
def test_written_document_has_the_api_shape(d):
    doc = json.loads(d.to_json())
    assert list(doc) == ["alphabet", "states", "initial", "final", "transitions"]
    assert doc["states"] == list(d.states) and doc["final"] == list(d.final)
    assert len(doc["transitions"]) == len(d.transitions)
    for obj, t in zip(doc["transitions"], d.transitions, strict=True):
        assert list(obj) == ["on", "sources", "target", "term"]
        assert obj["sources"] == sorted(obj["sources"])
        # A source is its state name, with a trailing apostrophe when primed.
        assert {(s.rstrip("'"), s.endswith("'")) for s in obj["sources"]} == {
            (v.name, v.primed) for v in t.sources
        }


awkward_floats = st.one_of(
    st.sampled_from([math.nan, math.inf, -math.inf, -0.0, 0.0, -1.0, -2.5, 1e300, -1e-300,
                     5e-324, -123456789.125]),
    st.floats(allow_nan=True, allow_infinity=True),
)


@given(st.lists(awkward_floats, min_size=1, max_size=4), words(("a", "b"), max_len=4),
       data_values)
def test_round_trip_awkward_constants(constants, word, x):
    """NaN, ±inf, -0.0 and negative constants survive, bit for bit (Const equality is bitwise)."""
    term = Apply("add", (Var("i"), Cur()))
    for c in constants:
        term = Apply("mul", (term, Const(c)))
    d = DT(("a", "b"), ("i", "f"), ("i",), ("f",), (
        Transition("a", frozenset({Var("i")}), "f", term),
        Transition("b", frozenset({Var("i")}), "i", Apply("neg", (Const(constants[0]),))),
        Transition("init", frozenset(), "f", Const(constants[-1])),
    ))
    back = DT.from_json(d.to_json())
    assert back == d
    assert_same_outputs(evaluate(back, [x], word), evaluate(d, [x], word))


# --------------------------------------------------------------------------- the API.md example


def test_api_example_is_written_back_verbatim():
    d = DT.from_json(API_EXAMPLE)
    assert d.states == ("i", "f") and d.alphabet == ("a", "b")
    assert d.transitions == (
        Transition("a", frozenset({Var("i")}), "f", Apply("add", (Var("i"), Cur()))),
    )
    assert d.to_json() == API_EXAMPLE


@given(data_values, words(("a", "b"), max_len=5))
def test_api_example_runs(x, word):
    """§5.2.2: on input (x, (a, d)) the DT returns x + d; on every other input ⊥."""
    d = DT.from_json(API_EXAMPLE)
    got = evaluate(d, [x], word)
    want = [(BOT,)]
    for k in range(1, len(word) + 1):
        tag, value = word[k - 1]
        want.append((x + value,) if k == 1 and tag == "a" else (BOT,))
    assert_same_outputs(got, want)


def test_bytes_are_accepted():
    assert DT.from_json(API_EXAMPLE.encode()) == DT.from_json(API_EXAMPLE)


def test_primed_sources_and_labels_read_back():
    text = json.dumps({
        "alphabet": ["a"], "states": ["i", "s", "f"], "initial": ["i"], "final": ["f", "s", "i"],
        "transitions": [
            {"on": "init", "sources": ["i'"], "target": "s", "term": "i'"},
            {"on": "a", "sources": ["s", "s'"], "target": "f", "term": "s - s'"},
            {"on": "a", "sources": [], "target": "s", "term": "7"},
            {"on": "eps", "sources": [], "target": "i", "term": "-1"},
        ],
    })
    d = DT.from_json(text)
    assert d.transitions[1].sources == frozenset({Var("s"), Var("s", primed=True)})
    assert d.transitions[3].term == Const(-1.0)
    # init: i = x ⊔ -1 (eps) = ⊤ and s = i' = ⊤; f has no init transition.
    # a: i' = -1 (eps), s' = 7, f' = s - s' = ⊤ (old s is ⊤); a again: f' = 7 - 7.
    got = evaluate(d, [2.0], [("a", 0.0), ("a", 0.0)])
    assert_same_outputs(got, [(BOT, TOP, TOP), (TOP, 7.0, -1.0), (0.0, 7.0, -1.0)])


# --------------------------------------------------------------------------- invalid documents


def _doc(*transitions, **top):
    """A document over alphabet a,b and states i,f with a first, valid transition."""
    doc = {"alphabet": ["a", "b"], "states": ["i", "f"], "initial": ["i"], "final": ["f"],
           "transitions": [{"on": "a", "sources": ["i"], "target": "f", "term": "i + cur"},
                           *transitions]}
    doc.update(top)
    return json.dumps(doc)


def _tr(**fields):
    tr = {"on": "a", "sources": ["i"], "target": "f", "term": "i"}
    tr.update(fields)
    return {k: v for k, v in tr.items() if v is not _DROP}


_DROP = object()

INVALID = [
    # (id, document, substrings the message must contain)
    ("truncated json", '{"alphabet": ["a"],\n  "states": [',
     ["invalid JSON", "line 2", "column"]),
    ("trailing comma", '{"alphabet": ["a"],}',
     ["invalid JSON", "line 1, column 20", "\n" + " " * 21 + "^"]),
    ("not an object", "[1, 2]", ["JSON object", "got a list"]),
    ("missing key", json.dumps({"alphabet": [], "states": [], "initial": [], "final": []}),
     ['missing key(s) "transitions"']),
    ("unknown key", _doc(facts={}), ['unknown key(s) "facts"']),
    ("duplicate top key", '{"alphabet": [], "alphabet": [], "states": [], "initial": [],'
     ' "final": [], "transitions": []}', ['"alphabet"', "more than once"]),
    ("alphabet not a list", _doc(alphabet="ab"), ['"alphabet" must be a list', "a string"]),
    ("state not a string", _doc(states=["i", 3]), ['"states"[1] must be a string', "a number"]),
    ("transitions not a list", _doc(transitions={}), ['"transitions" must be a list']),
    ("transition not an object", _doc(["a", "i", "f"]), ["transition 1 ([", "is an object"]),
    ("transition missing key", _doc(_tr(term=_DROP)), ["transition 1 (", 'missing key(s) "term"']),
    ("transition unknown key", _doc(_tr(source=["i"])),
     ["transition 1 (", 'unknown key(s) "source"']),
    ("transition duplicate key", _doc(_tr()).replace('"term": "i"}', '"term": "i", "term": "0"}'),
     ["transition 1 (", '"term"', "more than once"]),
    ("on not a string", _doc(_tr(on=1)), ["transition 1 (", '"on" must be a string']),
    ("target not a string", _doc(_tr(target=None)), ["transition 1", '"target"', "null"]),
    ("term not a string", _doc(_tr(term=0)), ["transition 1", '"term" must be a string',
                                              'e.g. "0"']),
    ("sources a string", _doc(_tr(sources="i")), ["transition 1", '"sources" must be a list']),
    ("source not a string", _doc(_tr(sources=["i", 1])), ["transition 1", '"sources"[1]']),
    ("prime in front", _doc(_tr(sources=["'i"])), ["transition 1", "source \"'i\"",
                                                    "one apostrophe after the state name"]),
    ("two primes", _doc(_tr(sources=["i''"])), ["transition 1", "source \"i''\""]),
    ("prime inside", _doc(_tr(sources=["i'x"])), ["transition 1", "source \"i'x\""]),
    ("only a prime", _doc(_tr(sources=["'"])), ["transition 1", "has no state name"]),
    ("source twice", _doc(_tr(sources=["i", "i"])), ["transition 1", 'source "i" is listed twice']),
    ("bad term text", _doc(_tr(term="i + * 2")),
     ["transition 1", 'bad term "i + * 2"', "unexpected", "column 5", "\n      ^"]),
    ("unknown function", _doc(_tr(term="foo(i)")), ["transition 1", "unknown function 'foo'"]),
    ("unknown label", _doc(_tr(on="c")), ["transition 1", "label 'c' is not a tag"]),
    ("unknown target", _doc(_tr(target="g")), ["transition 1", "target 'g' is not a state"]),
    ("unknown source", _doc(_tr(sources=["g'"], term="g'")),
     ["transition 1", "source g' is not a state"]),
    ("term reads a non-source", _doc(_tr(sources=[], term="i")),
     ["transition 1", "reads i, which is not among the sources"]),
    ("primed in term, unprimed source", _doc(_tr(sources=["i"], term="i'")),
     ["transition 1", "reads i'"]),
    ("init reads unprimed", _doc(_tr(on="init")),
     ["transition 1", "init transition reads only primed sources", "not i"]),
    ("eps reads unprimed", _doc(_tr(on="eps")), ["transition 1", "eps transition"]),
    ("init reads cur", _doc(_tr(on="init", sources=[], term="cur + 1")),
     ["transition 1", "cannot read cur"]),
    ("eps reads cur field", _doc(_tr(on="eps", sources=[], term="cur.x")),
     ["transition 1", "cannot read cur"]),
    ("initial not a state", _doc(initial=["g"]), ["initial state 'g' is not a state"]),
    ("final listed twice", _doc(final=["f", "f"]), ["final state 'f' is listed twice"]),
    ("keyword state", _doc(states=["i", "f", "cur"]), ["state 'cur'"]),
    ("reserved tag", _doc(alphabet=["a", "b", "eps"]), ["tag 'eps' is reserved"]),
]


@pytest.mark.parametrize(("doc", "needles"), [(d, n) for _, d, n in INVALID],
                         ids=[i for i, _, _ in INVALID])
def test_invalid_documents_are_rejected_with_a_clear_message(doc, needles):
    with pytest.raises(DTError) as info:
        DT.from_json(doc)
    assert isinstance(info.value, ValueError)
    message = str(info.value)
    for needle in needles:
        assert needle in message, f"{needle!r} not in:\n{message}"


def test_message_shows_the_offending_transition():
    doc = _doc(_tr(target="nowhere"))
    with pytest.raises(DTError, match=r"transition 1 \(a: \{i\} -> nowhere' := i\)"):
        DT.from_json(doc)
    doc = _doc(_tr(term="i +"))
    with pytest.raises(DTError, match=r'transition 1 \(\{"on": "a", .*"term": "i \+"\}\)'):
        DT.from_json(doc)


def test_long_transitions_are_shortened_in_messages():
    term = " + ".join(["i"] * 200) + " +"
    with pytest.raises(DTError) as info:
        DT.from_json(_doc(_tr(term=term)))
    first_line = str(info.value).splitlines()[0]
    assert "transition 1 (" in first_line and "..." in first_line
    assert len(first_line) < 400


def test_non_text_input_is_a_type_error():
    with pytest.raises(TypeError):
        DT.from_json({"alphabet": []})  # type: ignore[arg-type]


def test_invalid_utf8_is_a_dt_error():
    with pytest.raises(DTError, match="UTF-8"):
        DT.from_json(b"\xff\xfe{}")


def test_error_line_numbers_follow_json():
    # \u2028 is a line break for str.splitlines() but not for JSON.
    text = '{"alphabet": ["a\u2028b"],\n "states": [}'
    with pytest.raises(DTError) as info:
        DT.from_json(text)
    assert "line 2" in str(info.value)
    assert '"states": [}' in str(info.value)
