"""CRAs as JSON documents (the format of docs/API.md, "Cost register automata as files").

One object with exactly the keys ``alphabet``, ``inputs``, ``outputs``
(lists of strings), ``states``, ``start`` and ``steps``::

    {
      "alphabet": ["a", "b"], "inputs": ["i"], "outputs": ["f"],
      "states": [{"name": "s0", "registers": [], "output": [null]},
                 {"name": "s1", "registers": ["i", "f"],
                  "output": [{"term": "f", "reads": ["f"]}]}],
      "start": [{"inputs": "0", "target": "s0", "updates": {}},
                {"inputs": "1", "target": "s1", "updates": {"i": {"term": "i", "reads": ["i"]}}}],
      "steps": [{"from": "s1", "tag": "a", "target": "s1",
                 "updates": {"f": {"term": "i + cur", "reads": ["i"]}, "i": {"conflict": true}}}]
    }

An update is ``{"term": TERM, "reads": [...]}`` (:func:`dt.terms.parse_term`
text over the registers it reads, or over the inputs in a start) or
``{"conflict": true}`` (⊤); an output is an update or ``null`` (⊥). A start's
``inputs`` is the definedness of the initial vector, one ``0``/``1`` per input;
there is one start per vector and one step per control state and tag.
Writing is deterministic; reading rejects a malformed document with a
:class:`~dt.errors.DTError` that says where.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import DTError
from ..json_io import _check_keys, _kind, _load, _string_list, _term
from .model import CONFLICT, CRA, Step, Update

__all__ = ["cra_from_json", "cra_to_json"]

_TOP_KEYS = ("alphabet", "inputs", "outputs", "states", "start", "steps")


def _update(u: Update) -> dict[str, Any]:
    if u.term is None:
        return {"conflict": True}
    return {"term": str(u.term), "reads": sorted(u.reads)}


def _step(step: Step) -> dict[str, Any]:
    return {"target": step.target, "updates": {r: _update(u) for r, u in step.updates.items()}}


def cra_to_json(cra: CRA) -> str:
    """``cra`` as a JSON document: a key per line, a state, start or step per line."""
    one = lambda value: json.dumps(value, ensure_ascii=False)  # noqa: E731
    states = [{"name": p, "registers": list(cra.live[p]),
               "output": [None if u is None else _update(u) for u in cra.output[p]]}
              for p in cra.states]
    start = [{"inputs": "".join(map(str, v)), **_step(s)} for v, s in cra.start.items()]
    steps = [{"from": p, "tag": tag, **_step(s)} for (p, tag), s in cra.delta.items()]
    lines = ["{"] + [f'  "{k}": {one(getattr(cra, k))},' for k in _TOP_KEYS[:3]]
    for key, rows in (("states", states), ("start", start), ("steps", steps)):
        body = ",\n".join(f"    {one(r)}" for r in rows)
        lines.append(f'  "{key}": [\n{body}\n  ]' + ("," if key != "steps" else ""))
    return "\n".join([*lines, "}"])


def _read_update(obj: Any, where: str) -> Update:
    if not isinstance(obj, dict):
        raise DTError(f"{where}: an update is an object, got {_kind(obj)}")
    if "conflict" in obj:
        _check_keys(obj, ("conflict",), where)
        if obj["conflict"] is not True:
            raise DTError(f'{where}: "conflict" can only be true')
        return CONFLICT
    _check_keys(obj, ("term", "reads"), where)
    if not isinstance(obj["term"], str):
        raise DTError(f'{where}: "term" must be a string, got {_kind(obj["term"])}')
    try:
        return Update(_term(where, obj["term"]), frozenset(_string_list(obj["reads"], "reads")))
    except DTError as err:
        raise DTError(f"{where}: {err}") from None


def _read_step(obj: dict[str, Any], where: str) -> Step:
    updates = obj["updates"]
    if not isinstance(updates, dict):
        raise DTError(f'{where}: "updates" must be an object, got {_kind(updates)}')
    return Step(str(obj["target"]), {r: _read_update(u, f"{where}, register {r}")
                                     for r, u in updates.items()})


def _rows(doc: dict[str, Any], key: str, keys: tuple[str, ...]) -> list[dict[str, Any]]:
    rows = doc[key]
    if not isinstance(rows, list):
        raise DTError(f'"{key}" must be a list of objects, got {_kind(rows)}')
    for k, row in enumerate(rows):
        if not isinstance(row, dict):
            raise DTError(f'"{key}"[{k}] must be an object, got {_kind(row)}')
        _check_keys(row, keys, f'"{key}"[{k}]')
    return rows


def cra_from_json(text: str) -> CRA:
    """Read a CRA; every malformed document is a :class:`~dt.errors.DTError`."""
    doc = _load(text)
    if not isinstance(doc, dict):
        raise DTError(f"a CRA document is a JSON object, got {_kind(doc)}")
    _check_keys(doc, _TOP_KEYS, "the CRA document")
    alphabet, inputs, outputs = (_string_list(doc[k], k) for k in _TOP_KEYS[:3])
    live: dict[str, tuple[str, ...]] = {}
    output: dict[str, tuple[Update | None, ...]] = {}
    for k, row in enumerate(_rows(doc, "states", ("name", "registers", "output"))):
        where = f'"states"[{k}]'
        name = row["name"]
        live[name] = _string_list(row["registers"], "registers")
        outs = row["output"]
        if not isinstance(outs, list):
            raise DTError(f'{where}: "output" must be a list, got {_kind(outs)}')
        output[name] = tuple(None if u is None else _read_update(u, f"{where}, output {j}")
                             for j, u in enumerate(outs))
    start = {}
    for k, row in enumerate(_rows(doc, "start", ("inputs", "target", "updates"))):
        bits = row["inputs"]
        if not isinstance(bits, str) or set(bits) - {"0", "1"} or len(bits) != len(inputs):
            raise DTError(f'"start"[{k}]: "inputs" is a string of {len(inputs)} 0/1, '
                          f"got {json.dumps(bits)}")
        start[tuple(int(b) for b in bits)] = _read_step(row, f'"start"[{k}]')
    delta = {}
    for k, row in enumerate(_rows(doc, "steps", ("from", "tag", "target", "updates"))):
        delta[row["from"], row["tag"]] = _read_step(row, f'"steps"[{k}]')
    try:
        return CRA(alphabet, inputs, outputs, tuple(live), live, start, delta, output)
    except (DTError, KeyError) as err:
        raise DTError(f"invalid CRA: {err}") from None
