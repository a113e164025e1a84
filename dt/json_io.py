"""DTs as JSON documents: the file format of docs/API.md ("Data transducers as files").

A document is one object with exactly the keys ``alphabet``, ``states``,
``initial``, ``final`` (lists of strings) and ``transitions`` (a list of
objects with exactly the keys ``on``, ``sources``, ``target``, ``term``)::

    {
      "alphabet": ["a", "b"],
      "states": ["i", "f"],
      "initial": ["i"],
      "final": ["f"],
      "transitions": [
        {"on": "a", "sources": ["i"], "target": "f", "term": "i + cur"}
      ]
    }

This is the 5-tuple (Q, Σ, Δ, I, F) of seed 003, §5.1: ``on`` is a tag,
``"init"`` (the paper's initial label i) or ``"eps"`` (the ε shorthand of
§5.2.1); ``sources`` is X ⊆ Q ∪ Q', a primed source q' written ``"q'"``;
``term`` is TERM text (:func:`dt.terms.parse_term`) over the sources and
``cur``. The order of every list is kept: it is the order of configurations,
initial vectors and output vectors. ``facts`` (what constructions proved) are
not part of the format; a DT read from JSON has unknown facts.

Writing is deterministic (sources sorted, keys in the order above, one
transition per line), and ``dt_from_json(dt_to_json(d)) == d``.

Reading rejects every malformed document with a :class:`~dt.errors.DTError`
whose message says where (the JSON line and column, the key, or the
transition's index and a short rendering of it) and what is wrong.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .errors import DTError, TermSyntaxError, render_location
from .model import DT, Transition
from .terms import Term, Var, parse_term

__all__ = ["dt_from_json", "dt_to_json"]

_TOP_KEYS = ("alphabet", "states", "initial", "final", "transitions")
_TRANSITION_KEYS = ("on", "sources", "target", "term")

# A source is a state name with at most one trailing apostrophe (the prime).
_SOURCE = re.compile(r"([^']*)('?)")


# --------------------------------------------------------------------------- writing


def _transition_object(t: Transition) -> dict[str, Any]:
    return {
        "on": t.on,
        "sources": sorted(str(v) for v in t.sources),
        "target": t.target,
        "term": str(t.term),
    }


def _document(dt: DT) -> dict[str, Any]:
    return {
        "alphabet": list(dt.alphabet),
        "states": list(dt.states),
        "initial": list(dt.initial),
        "final": list(dt.final),
        "transitions": [_transition_object(t) for t in dt.transitions],
    }


def dt_to_json(dt: DT, indent: int | None = 2) -> str:
    """``dt`` as a JSON document in the format of docs/API.md.

    With ``indent`` (the default, 2) the layout is the one of API.md: one key
    per line, lists of names on one line, one transition per line. With
    ``indent=None`` the whole document is on one line.
    """
    doc = _document(dt)
    if indent is None:
        return json.dumps(doc, ensure_ascii=False)
    pad = " " * indent

    def one_line(value: Any) -> str:
        return json.dumps(value, ensure_ascii=False)

    lines = ["{"]
    for key in _TOP_KEYS[:-1]:
        lines.append(f"{pad}{one_line(key)}: {one_line(doc[key])},")
    rows = [f"{pad}{pad}{one_line(obj)}" for obj in doc["transitions"]]
    if rows:
        lines.append(f'{pad}"transitions": [')
        lines.append(",\n".join(rows))
        lines.append(f"{pad}]")
    else:
        lines.append(f'{pad}"transitions": []')
    lines.append("}")
    return "\n".join(lines)


# --------------------------------------------------------------------------- reading


def dt_from_json(text: str | bytes) -> DT:
    """Read a DT from a JSON document; every malformed input is a :class:`DTError`."""
    if isinstance(text, bytes | bytearray):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as err:
            raise DTError(f"invalid JSON: not UTF-8 text ({err})") from None
    if not isinstance(text, str):
        raise TypeError(f"expected JSON text (str or bytes), got {type(text).__name__}")
    doc = _load(text)
    if not isinstance(doc, dict):
        raise DTError(f"a DT document is a JSON object with keys {_key_list(_TOP_KEYS)}; "
                      f"got {_kind(doc)}")
    _check_keys(doc, _TOP_KEYS, "the DT document")
    names = {key: _string_list(doc[key], key) for key in _TOP_KEYS[:-1]}
    raw = doc["transitions"]
    if not isinstance(raw, list):
        raise DTError(f"\"transitions\" must be a list of transition objects, got {_kind(raw)}")
    transitions = tuple(_transition(k, obj) for k, obj in enumerate(raw))
    try:
        dt = DT(names["alphabet"], names["states"], names["initial"], names["final"],
                transitions)
        dt.check_event_data()  # refused at load, not at the first run that cannot be
        return dt
    except DTError as err:
        # The model's own checks name the transition by its index in Δ, which is
        # its index in the document; they only need to say where they come from.
        raise DTError(f"invalid DT: {err}") from None


class _Object(dict):
    """A JSON object that remembers keys written more than once (json keeps the last)."""

    duplicates: tuple[str, ...] = ()


def _object(pairs: list[tuple[str, Any]]) -> _Object:
    obj = _Object(pairs)
    if len(obj) != len(pairs):
        counts: dict[str, int] = {}
        for key, _ in pairs:
            counts[key] = counts.get(key, 0) + 1
        obj.duplicates = tuple(k for k, n in counts.items() if n > 1)
    return obj


def _load(text: str) -> Any:
    try:
        return json.loads(text, object_pairs_hook=_object)
    except json.JSONDecodeError as err:
        raise DTError(render_location(f"invalid JSON: {err.msg}", text, err.lineno,
                                      err.colno)) from None


def _kind(value: Any) -> str:
    """A short description of a JSON value for error messages."""
    # bool before int/float: in Python a bool is an int.
    kinds = ((dict, "an object"), (list, "a list"), (str, "a string"), (bool, "a boolean"),
             (int | float, "a number"), (type(None), "null"))
    name = next((n for t, n in kinds if isinstance(value, t)), type(value).__name__)
    shown = json.dumps(value, ensure_ascii=False)
    if len(shown) > 40:
        shown = shown[:37] + "..."
    return f"{name} ({shown})"


def _key_list(keys: tuple[str, ...]) -> str:
    return ", ".join(f'"{k}"' for k in keys)


def _check_keys(obj: dict[str, Any], keys: tuple[str, ...], where: str) -> None:
    missing = [k for k in keys if k not in obj]
    unknown = sorted(k for k in obj if k not in keys)
    problems = []
    duplicates = getattr(obj, "duplicates", ())
    if duplicates:
        problems.append(f"key(s) {_key_list(duplicates)} given more than once")
    if missing:
        problems.append(f"missing key(s) {_key_list(tuple(missing))}")
    if unknown:
        problems.append(f"unknown key(s) {_key_list(tuple(unknown))}")
    if problems:
        raise DTError(f"{where}: {' and '.join(problems)}; the keys are {_key_list(keys)}")


def _string_list(value: Any, key: str) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise DTError(f'"{key}" must be a list of strings, got {_kind(value)}')
    for k, item in enumerate(value):
        if not isinstance(item, str):
            raise DTError(f'"{key}"[{k}] must be a string, got {_kind(item)}')
    return tuple(value)


def _render(obj: Any) -> str:
    """A one-line JSON rendering (of a transition, a term), shortened for messages."""
    shown = json.dumps(obj, ensure_ascii=False)
    return shown if len(shown) <= 100 else shown[:97] + "..."


def _transition(k: int, obj: Any) -> Transition:
    """Transition ``k`` of the document, checked for shape, sources and term syntax.

    Which states and labels exist, vars(t) ⊆ X and the rules for init/eps
    transitions are checked by :class:`~dt.model.DT` itself.
    """
    where = f"transition {k} ({_render(obj)})"
    if not isinstance(obj, dict):
        raise DTError(f"{where}: a transition is an object with keys "
                      f"{_key_list(_TRANSITION_KEYS)}")
    _check_keys(obj, _TRANSITION_KEYS, where)
    for key in ("on", "target", "term"):
        if not isinstance(obj[key], str):
            hint = ' (TERM text, e.g. "0")' if key == "term" else ""
            raise DTError(f'{where}: "{key}" must be a string{hint}, got {_kind(obj[key])}')
    sources = obj["sources"]
    if not isinstance(sources, list):
        raise DTError(f'{where}: "sources" must be a list of state names (e.g. ["i", "f\'"]), '
                      f"got {_kind(sources)}")
    variables = [_source(where, j, s) for j, s in enumerate(sources)]
    seen: set[Var] = set()
    for v in variables:
        if v in seen:
            raise DTError(f"{where}: source \"{v}\" is listed twice")
        seen.add(v)
    term = _term(where, obj["term"])
    return Transition(obj["on"], frozenset(variables), obj["target"], term)


def _source(where: str, j: int, text: Any) -> Var:
    if not isinstance(text, str):
        raise DTError(f'{where}: "sources"[{j}] must be a string, got {_kind(text)}')
    match = _SOURCE.fullmatch(text)
    if match is None:
        raise DTError(f"{where}: source {json.dumps(text)}: a primed source is written with "
                      f"one apostrophe after the state name, e.g. \"i'\"")
    name, prime = match.groups()
    if not name:
        raise DTError(f"{where}: source {json.dumps(text)} has no state name")
    return Var(name, primed=bool(prime))


def _term(where: str, text: str) -> Term:
    try:
        return parse_term(text)
    except TermSyntaxError as err:
        raise DTError(f"{where}: bad term {_render(text)}: {err}") from None
