"""Graphviz DOT rendering of a data transducer (seed 003, §5.1).

A DT is a hypergraph: a transition (σ, X, q', t) has many sources and one
target. The drawing makes each transition a node of its own:

* every state is an ellipse labelled with its name; final states are double
  circles; an initial state has an incoming arrow from an invisible point;
* every transition is a small box labelled ``σ: term`` (σ a tag, ``init`` or
  ``eps``), with an edge from each source state — *dashed* for a primed
  source q' (its value after this step), *solid* for an unprimed one (its
  value before the step) — and one edge to its target state.

The output has one statement per line and quotes every identifier and label
(backslashes, quotes and newlines escaped), so any tag text is safe.
Render it with ``dot -Tsvg``.
"""

from __future__ import annotations

from .model import DT, Transition

__all__ = ["to_dot"]


def _quote(text: str) -> str:
    """A DOT double-quoted string. In labels ``\\`` starts an escape, so it is doubled."""
    escaped = (
        text.replace("\\", "\\\\")
        .replace('"', '\\"')
        .replace("\r\n", "\\n")
        .replace("\n", "\\n")
        .replace("\r", "\\n")
    )
    return f'"{escaped}"'


def _state_id(q: str) -> str:
    return _quote(f"s:{q}")


def _transition_lines(k: int, t: Transition) -> list[str]:
    node = _quote(f"t:{k}")
    lines = [f"  {node} [shape=box, fontsize=10, label={_quote(f'{t.on}: {t.term}')}];"]
    for v in sorted(t.sources, key=str):
        style = "dashed" if v.primed else "solid"
        lines.append(f"  {_state_id(v.name)} -> {node} [style={style}];")
    lines.append(f"  {node} -> {_state_id(t.target)};")
    return lines


def to_dot(dt: DT) -> str:
    """The DOT text of ``dt``: see the module docstring for the drawing conventions."""
    lines = [
        "digraph DT {",
        "  rankdir=LR;",
        f"  labelloc=t; label={_quote('alphabet: ' + ', '.join(dt.alphabet))};",
        '  node [fontname="Helvetica"];',
    ]
    final = set(dt.final)
    for q in dt.states:
        shape = "doublecircle" if q in final else "ellipse"
        lines.append(f"  {_state_id(q)} [shape={shape}, label={_quote(q)}];")
    for q in dt.initial:
        start = _quote(f"start:{q}")
        lines.append(f"  {start} [shape=point, style=invis];")
        lines.append(f"  {start} -> {_state_id(q)};")
    for k, t in enumerate(dt.transitions):
        lines += _transition_lines(k, t)
    lines.append("}")
    return "\n".join(lines) + "\n"
