"""Derived tags (issue 7, point 3): the tag every event gets, against a Python
classification with the reference term evaluator; the text form round-trips."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dt.terms import evaluate_term
from qre import qre
from qre.language.errors import QreSyntaxError
from qre.language.parser import parse
from qre.language.printer import to_text

PREDICATES = ["cur.x > 0", "cur.x == cur.y", "cur.y", "!(cur.x < 1) && cur.y != 0",
              "cur.x * cur.y >= 0.5"]
WEIGHTS = {"a": 1, "b": 10, "hot": 100, "big": 1000}
SUM = "iter(or(or(atom(a, 1), atom(b, 10)), or(atom(hot, 100), atom(big, 1000))), 0, +)"
VALUES = [-1.0, 0.0, 0.5, 1.0, 2.0, math.nan]


@given(st.lists(st.tuples(st.sampled_from(["hot", "big"]), st.sampled_from(["_", "a", "b"]),
                          st.sampled_from(PREDICATES)), min_size=2, max_size=2,
                unique_by=lambda d: d[0]),
       st.lists(st.tuples(st.sampled_from("ab"), st.sampled_from(VALUES),
                          st.sampled_from(VALUES)), max_size=12),
       st.sampled_from(["table", "reference"]))
def test_each_event_gets_the_first_matching_derived_tag(decls, events, engine):
    text = "alphabet a, b;\n" + "".join(
        f"tag {name} = {'' if src == '_' else src + ' where '}{pred};\n"
        for name, src, pred in decls) + SUM
    program = parse(text)
    m = qre(text)
    tags = [e[0] for e in events]
    values = {"x": [e[1] for e in events], "y": [e[2] for e in events]}
    expected, total = [], 0.0
    for tag, x, y in events:
        new = tag
        for d in program.tags:
            if d.source in ("_", tag) and evaluate_term(d.predicate, {}, {"x": x, "y": y}) != 0:
                new = d.name
                break
        total += WEIGHTS[new]
        expected.append(total)
    out = m.run(tags, values, engine=engine)
    np.testing.assert_array_equal(out.value, np.array(expected, dtype=float))
    assert to_text(parse(to_text(program))) == to_text(program)


def test_a_derived_tag_filters_a_window():
    m = qre("alphabet r; tag hot = r where cur.temp > 30; aggregate(count(), 10s, [hot])")
    got = m.run_timed([1, 2, 3, 15], ["r"] * 4, {"temp": [31.0, 20.0, 40.0, 10.0]})
    assert got["value"].tolist() == [2.0]
    assert m.alphabet == ("r", "hot", "tick")


def test_declaration_errors():
    with pytest.raises(QreSyntaxError, match="already derived"):
        parse("tag hot = cur > 1; tag hot = cur > 2; atom(hot, 1)")
    with pytest.raises(QreSyntaxError, match="unknown variable 'z'"):
        parse("tag hot = z > 1; atom(hot, 1)")
