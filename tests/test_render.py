"""Graphviz DOT export (dt.render.to_dot): structure checked by a small DOT reader,
since no graphviz binary is available."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pytest
from hypothesis import given

from dt import DT, Transition
from dt.terms import Apply, Const, Cur, Var
from tests.strategies import arbitrary_dts

# One statement per line: a node with attributes, or an edge with optional attributes.
_STRING = r'"((?:[^"\\\n]|\\.)*)"'
_ATTRS = r"\[([^\n]*)\]"
_NODE = re.compile(rf"^  {_STRING} {_ATTRS};$")
_EDGE = re.compile(rf"^  {_STRING} -> {_STRING}(?: {_ATTRS})?;$")
_ATTR = re.compile(rf'(\w+)=(?:{_STRING}|([\w.]+))')


def _unquote(text: str) -> str:
    out, k = [], 0
    while k < len(text):
        if text[k] == "\\":
            nxt = text[k + 1]
            out.append({"n": "\n", '"': '"', "\\": "\\"}[nxt])
            k += 2
        else:
            out.append(text[k])
            k += 1
    return "".join(out)


def _attrs(text: str | None) -> dict[str, str]:
    if not text:
        return {}
    found = _ATTR.findall(text)
    # Every attribute parsed: nothing left but separators.
    rest = _ATTR.sub("", text).replace(",", "").strip()
    assert rest == "", f"unparsed attributes: {rest!r}"
    return {name: _unquote(quoted) if quoted or not bare else bare for name, quoted, bare in found}


@dataclass
class Graph:
    nodes: dict[str, dict[str, str]] = field(default_factory=dict)
    edges: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)
    label: str = ""


def read_dot(text: str) -> Graph:
    """Parse the subset of DOT that to_dot writes; fail on anything else."""
    lines = text.rstrip("\n").split("\n")
    assert lines[0] == "digraph DT {" and lines[-1] == "}"
    graph = Graph()
    for line in lines[1:-1]:
        if line in ("  rankdir=LR;", '  node [fontname="Helvetica"];'):
            continue
        if m := re.fullmatch(rf"  labelloc=t; label={_STRING};", line):
            graph.label = _unquote(m.group(1))
        elif m := _NODE.fullmatch(line):
            node = _unquote(m.group(1))
            assert node not in graph.nodes, f"node {node!r} declared twice"
            graph.nodes[node] = _attrs(m.group(2))
        elif m := _EDGE.fullmatch(line):
            graph.edges.append((_unquote(m.group(1)), _unquote(m.group(2)), _attrs(m.group(3))))
        else:
            raise AssertionError(f"unexpected DOT line: {line!r}")
    for a, b, _ in graph.edges:
        assert a in graph.nodes and b in graph.nodes, f"edge {a} -> {b} to an undeclared node"
    return graph


def check_structure(d: DT) -> Graph:
    g = read_dot(d.to_dot())
    states = {n: a for n, a in g.nodes.items() if a.get("shape") in ("ellipse", "doublecircle")}
    boxes = {n: a for n, a in g.nodes.items() if a.get("shape") == "box"}
    points = {n: a for n, a in g.nodes.items() if a.get("shape") == "point"}
    assert len(g.nodes) == len(states) + len(boxes) + len(points)
    # A node per state, labelled with its name; final states are double circles.
    assert sorted(a["label"] for a in states.values()) == sorted(d.states)
    for a in states.values():
        assert a["shape"] == ("doublecircle" if a["label"] in d.final else "ellipse")
    by_state = {a["label"]: n for n, a in states.items()}
    # An invisible point with one arrow into each initial state.
    assert len(points) == len(d.initial)
    assert all(a.get("style") == "invis" for a in points.values())
    starts = sorted(g.nodes[b]["label"] for a, b, _ in g.edges if a in points)
    assert starts == sorted(d.initial)
    # A box per transition labelled "σ: term", edges from its sources and one to its target.
    assert sorted(a["label"] for a in boxes.values()) == sorted(
        f"{t.on}: {t.term}" for t in d.transitions)
    assert len(g.edges) == len(d.initial) + sum(len(t.sources) + 1 for t in d.transitions)
    box_of = dict(zip([f"t:{k}" for k in range(len(d.transitions))], d.transitions, strict=True))
    assert set(box_of) == set(boxes)
    for node, t in box_of.items():
        incoming = sorted((g.nodes[a]["label"], attrs["style"]) for a, b, attrs in g.edges
                          if b == node)
        want = sorted((v.name, "dashed" if v.primed else "solid") for v in t.sources)
        assert incoming == want
        outgoing = [b for a, b, _ in g.edges if a == node]
        assert outgoing == [by_state[t.target]]
    return g


@given(arbitrary_dts())
def test_structure_of_random_dts(d):
    check_structure(d)


def test_api_example():
    d = DT(("a", "b"), ("i", "f"), ("i",), ("f",),
           (Transition("a", frozenset({Var("i")}), "f", Apply("add", (Var("i"), Cur()))),))
    g = check_structure(d)
    assert g.label == "alphabet: a, b"
    assert g.nodes["t:0"]["label"] == "a: i + cur"
    assert ("s:i", "t:0", {"style": "solid"}) in g.edges


@pytest.mark.parametrize("tag", ['say "hi"', "back\\slash", "two\nlines", "\\n", "x\\", "'"])
def test_awkward_tags_are_escaped(tag):
    d = DT((tag,), ("q",), ("q",), ("q",), (
        Transition(tag, frozenset({Var("q"), Var("q", True)}), "q",
                   Apply("add", (Var("q"), Const(-1.0)))),
    ))
    text = d.to_dot()
    g = check_structure(d)
    assert g.label == f"alphabet: {tag}"
    assert g.nodes["t:0"]["label"] == f"{tag}: q + -1"
    # The state is both initial and final; sources q (solid) and q' (dashed).
    assert sorted(attrs["style"] for a, b, attrs in g.edges if b == "t:0") == ["dashed", "solid"]
    assert text.count("\n") == len(text.splitlines())  # no raw newline inside a string


def test_empty_dt():
    g = check_structure(DT((), (), (), (), ()))
    assert g.nodes == {} and g.edges == []
