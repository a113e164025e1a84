"""Regular streaming algorithms → DTs (seed 003, §5.4.3, Theorem 5.11).

The oracle is CPython itself: the algorithm's own text is executed (init,
then update per event, then output), and the DT must give the same output
after every prefix — ⊥ where output returns None, else the same float bit
for bit. Random algorithms: Boolean and data variables, nested if/elif/else
on tag tests and Booleans, and/or/not, data terms over cur. ``min``/``max``
are the DT signature's (numpy's, which propagate NaN), given to Python too.
"""

from __future__ import annotations

import ast
import types

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from util import assert_same_outputs

from dt.errors import SourceError
from dt.reference import evaluate
from dt.values import BOT
from qre import examples
from qre.language.algorithm import algorithm_dt, parse_algorithm

TAGS = ("a", "b", "c")
_BUILTINS = {"min": lambda a, b: float(np.minimum(a, b)),
             "max": lambda a, b: float(np.maximum(a, b)), "abs": abs}


def run_python(text: str, x: float, word) -> list[tuple]:  # type: ignore[no-untyped-def]
    """The algorithm executed by CPython: outputs after every prefix (None → ⊥)."""
    fns = {f.name: f for f in ast.parse(text).body if isinstance(f, ast.FunctionDef)}

    def body(name: str):  # type: ignore[no-untyped-def]
        return compile(ast.Module(fns[name].body, []), name, "exec")

    init_code, update_code = body("init"), body("update")
    env: dict = {"__builtins__": _BUILTINS, fns["init"].args.args[0].arg: x}
    namespace: dict = {"__builtins__": _BUILTINS}
    exec(compile(ast.Module([fns["output"]], []), "output", "exec"), namespace)
    output = types.FunctionType(namespace["output"].__code__, env)

    def out() -> tuple:
        value = output()
        return (BOT,) if value is None else (float(value),)

    exec(init_code, env)
    outs = [out()]
    for tag, cur in word:
        env["tag"], env["cur"] = tag, cur
        exec(update_code, env)
        outs.append(out())
    return outs


# --------------------------------------------------------------------------- random algorithms

CONSTS = st.sampled_from(["0.5", "-2.0", "3.0", "1.0"])


def data_exprs(depth: int, *, cur: bool = True):  # type: ignore[no-untyped-def]
    leaves = [st.sampled_from(["d0", "d1"]), CONSTS]
    if cur:
        leaves.append(st.just("cur"))
    leaf = st.one_of(*leaves)
    if depth == 0:
        return leaf
    sub = data_exprs(depth - 1, cur=cur)
    return st.one_of(
        leaf,
        st.tuples(sub, st.sampled_from(["+", "-", "*"]), sub).map(
            lambda t: f"({t[0]} {t[1]} {t[2]})"),
        st.tuples(st.sampled_from(["min", "max"]), sub, sub).map(
            lambda t: f"{t[0]}({t[1]}, {t[2]})"),
        sub.map(lambda e: f"abs({e})"),
    )


def bool_exprs(depth: int, *, tag: bool = True):  # type: ignore[no-untyped-def]
    leaves = [st.sampled_from(["True", "False", "b0", "b1"])]
    if tag:
        leaves.append(st.sampled_from(['tag == "a"', 'tag != "b"', 'tag in ("a", "c")',
                                       '"c" == tag', 'tag not in ("b",)']))
    leaf = st.one_of(*leaves)
    if depth == 0:
        return leaf
    sub = bool_exprs(depth - 1, tag=tag)
    return st.one_of(
        leaf, sub.map(lambda e: f"not {e}"),
        st.tuples(sub, st.sampled_from(["and", "or"]), sub).map(
            lambda t: f"({t[0]} {t[1]} {t[2]})"),
    )


def statements(depth: int, indent: str):  # type: ignore[no-untyped-def]
    assign_data = st.tuples(st.sampled_from(["d0", "d1"]), data_exprs(2)).map(
        lambda t: [f"{indent}{t[0]} = {t[1]}"])
    augment = st.tuples(st.sampled_from(["d0", "d1"]), st.sampled_from(["+=", "-=", "*="]),
                        data_exprs(1)).map(lambda t: [f"{indent}{t[0]} {t[1]} {t[2]}"])
    assign_bool = st.tuples(st.sampled_from(["b0", "b1"]), bool_exprs(2)).map(
        lambda t: [f"{indent}{t[0]} = {t[1]}"])
    simple = st.one_of(assign_data, augment, assign_bool, st.just([f"{indent}pass"]))
    if depth == 0:
        return simple
    inner = blocks(depth - 1, indent + "    ")
    branch = st.tuples(bool_exprs(2), inner, st.lists(st.tuples(bool_exprs(1), inner), max_size=1),
                       st.one_of(st.none(), inner)).map(
        lambda t: [f"{indent}if {t[0]}:", *t[1],
                   *[line for c, b in t[2] for line in (f"{indent}elif {c}:", *b)],
                   *([f"{indent}else:", *t[3]] if t[3] is not None else [])])
    return st.one_of(simple, branch)


def blocks(depth: int, indent: str):  # type: ignore[no-untyped-def]
    return st.lists(statements(depth, indent), min_size=1, max_size=3).map(
        lambda parts: [line for part in parts for line in part])


@st.composite
def algorithms(draw) -> str:  # type: ignore[no-untyped-def]
    update = draw(blocks(2, "    "))
    output = draw(st.one_of(
        st.sampled_from(["d0", "d1"]).map(lambda v: f"    return {v}"),
        st.tuples(bool_exprs(1, tag=False), data_exprs(1, cur=False)).map(
            lambda t: f"    if {t[0]}:\n        return {t[1]}"),
        st.tuples(data_exprs(1, cur=False), bool_exprs(1, tag=False)).map(
            lambda t: f"    return {t[0]} if {t[1]} else None"),
    ))
    return "\n".join(["def init(x):", "    d0 = x", "    d1 = 1.0", "    b0 = False",
                      "    b1 = True", "", "def update(tag, cur):", *update, "",
                      "def output():", output, ""])


@given(text=algorithms(), x=st.sampled_from([0.0, 2.5, -1.0]),
       word=st.lists(st.tuples(st.sampled_from(TAGS), st.sampled_from([1.0, -0.5, 2.0, 0.0])),
                     max_size=6))
@settings(max_examples=150)
def test_the_dt_of_an_algorithm_outputs_what_python_does(text, x, word):
    algorithm = parse_algorithm(text, TAGS)
    dt = algorithm_dt(text, TAGS)
    assert_same_outputs(evaluate(dt, (x,), word), run_python(text, x, word))
    # Linear: the DT's size is bounded by a constant times the algorithm's, plus the
    # per-tag copies of the variables and of cur.
    variables = len(algorithm.booleans) * 2 + len(algorithm.data) + 1
    assert dt.size <= 40 * algorithm.size + 6 * len(TAGS) * (variables + 3)


ALARM = examples.read_text("sum_since_alarm.py")


def test_an_alarm_algorithm():
    word = [("ok", 1.0), ("alarm", 2.0), ("ok", 3.0), ("reset", 4.0), ("ok", 5.0), ("alarm", 1.0)]
    dt = algorithm_dt(ALARM)
    assert [y[0] for y in evaluate(dt, (10.0,), word)] == [BOT, BOT, 13.0, 16.0, BOT, BOT, 10.0]
    assert parse_algorithm(ALARM).alphabet == ("alarm", "reset", "ok")  # its ALPHABET
    untagged = ALARM.replace('ALPHABET = ("alarm", "reset", "ok")', "")
    assert parse_algorithm(untagged).alphabet == ("alarm", "reset")  # the tags it tests


def test_size_grows_linearly_with_the_program():
    """Theorem 5.11: n sequential conditional updates give a DT of size O(n)."""
    sizes = []
    for n in (10, 20, 40):
        body = "\n".join(f'    if tag == "a" and b{k % 3}:\n        d = d + {k}.0\n'
                         f"    b{(k + 1) % 3} = not b{k % 3}" for k in range(n))
        text = (f"def init(x):\n    d = x\n    b0 = True\n    b1 = False\n    b2 = True\n"
                f"def update(tag, cur):\n{body}\n    d = d + cur\ndef output():\n    return d\n")
        sizes.append(algorithm_dt(text, ["a", "b"]).size)
    assert sizes[2] - sizes[1] == 2 * (sizes[1] - sizes[0])  # exactly linear in n


@pytest.mark.parametrize(("text", "needle", "line"), [
    ("def init(x):\n    d = x\ndef update(tag, cur):\n    if d > 3:\n        d = 0\n"
     "def output():\n    return d\n", "regularity", 4),
    ("def init(x):\n    d = x\n    b = False\ndef update(tag, cur):\n    b = d > 1\n"
     "def output():\n    return d\n", "regularity", 5),
    ("def init(x):\n    d = x\ndef update(tag, cur):\n    while True:\n        pass\n"
     "def output():\n    return d\n", "loop-free", 4),
    ("def init(x):\n    d = y\ndef update(tag, cur):\n    pass\ndef output():\n    return d\n",
     "unknown name y", 2),
    ("def init(x):\n    if x:\n        d = 1\ndef update(tag, cur):\n    pass\n"
     "def output():\n    return d\n", "data", 2),
    ("def init(x):\n    d = x\ndef update(tag, cur):\n    e = 1\ndef output():\n    return d\n",
     "init assigns every variable", 4),
    ("def init(x):\n    d = cur\ndef update(tag, cur):\n    pass\ndef output():\n    return d\n",
     "only update reads it", 2),
    ("def init(x):\n    d = x\ndef update(t, cur):\n    pass\ndef output():\n    return d\n",
     "(tag, cur)", 3),
    ("def init(x):\n    d = x\ndef update(tag, cur):\n    d = (\ndef output():\n    return d\n",
     "invalid Python", 4),
])
def test_what_is_outside_the_subset_is_refused_where_it_is(text, needle, line):
    with pytest.raises(SourceError) as info:
        algorithm_dt(text, ["a"])
    assert needle in str(info.value) and info.value.line == line, str(info.value)
