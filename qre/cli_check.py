"""The commands ``qre compile`` and ``qre check equiv|restartable|language`` (:mod:`qre.cli`).

A query's DT, its sizes and the decision procedures of package ``dt`` on it
(statuses, Theorem 5.3; values, :mod:`dt.value_equivalence`; restartability,
Theorem 5.6, and the restartable form, §5.2.2; languages, Theorem 5.2; the CRA,
Theorem 5.8); :mod:`qre.cli` documents the options and the
exit codes, parses the arguments and imports this module when one of its commands runs.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dt import DT
from dt.cra import cra_from_dt, make_restartable
from dt.cra.json_io import cra_to_json
from dt.equivalence import EquivalenceLimitError, StatusEquivalence, status_equivalent
from dt.errors import PreconditionError
from dt.languages import languages
from dt.projection import status_vector
from dt.restartability import RestartWitness, check_restartable, output_synchronized
from dt.restartability import replay as restartability_replay
from dt.value_equivalence import value_equivalent
from dt.values import BOT, TOP, XValue, status_of

from .cli import EXIT_NO, EXIT_OK, EXIT_UNDECIDED, UsageError, emit, load_query, parse_alphabet
from .language.errors import QreError
from .runtime.monitor import Monitor

__all__ = ["cmd_compile", "cmd_equiv", "cmd_language", "cmd_restartable"]

_STATUS_NAMES = ("undefined", "defined", "conflict")
_STATUS_SCOPE = "proven for every tag string, Theorem 5.3; data values not compared"


def _write(path: str, text: str) -> None:
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as e:
        raise UsageError(f"cannot write {path}: {e.strerror or e}") from e


def _status_names(statuses: Sequence[int]) -> list[str]:
    return [_STATUS_NAMES[s] for s in statuses]


def _tag_string(tags: Sequence[str]) -> str:
    return " ".join(tags) if tags else "(the empty stream)"


# --------------------------------------------------------------------------- compile


def cmd_compile(args: argparse.Namespace) -> int:
    """Sizes before / after the optimizer; --dot and --emit write the optimized DT."""
    m = load_query(args.query)
    before = m.unoptimized or m.dt
    sizes = {
        "before": {"states": len(before.states), "transitions": len(before.transitions),
                   "size": before.size},
        "after": {"states": len(m.dt.states), "transitions": len(m.dt.transitions),
                  "size": m.dt.size},
    }
    data: dict[str, Any] = {"alphabet": list(m.alphabet), "final": list(m.dt.final), **sizes}
    lines = [f"alphabet: {', '.join(m.alphabet)}",
             f"outputs: {len(m.dt.final)}"]
    for when in ("before", "after"):
        s = sizes[when]
        lines.append(f"{when} optimizer: {s['states']} states, {s['transitions']} transitions, "
                     f"size {s['size']}")
    if args.stats:
        stats = dataclasses.asdict(m.stats)
        data["stats"] = stats
        lines += [f"  {k}: {v}" for k, v in stats.items()]
    if args.dot:
        _write(args.dot, m.dt.to_dot())
        data["dot"] = args.dot
        lines.append(f"wrote DOT to {args.dot}")
    text = m.dt.to_json() if args.emit else ""
    if args.to == "cra":
        if args.dot:
            raise UsageError("--dot draws the DT; with --to cra use --emit for the CRA's JSON")
        cra = cra_from_dt(m.dt)
        data["cra"] = {"control_states": len(cra.states), "registers": len(cra.registers),
                       "size": cra.size}
        lines.append(f"CRA (Theorem 5.8): {len(cra.states)} control states, "
                     f"{len(cra.registers)} registers, size {cra.size}")
        text = cra_to_json(cra) if args.emit else ""
    if args.emit:
        _write(args.emit, text)
        data["emit"] = args.emit
        lines.append(f"wrote {args.to.upper()} JSON to {args.emit}")
    emit(args, data, lines)
    return EXIT_OK


# --------------------------------------------------------------------------- check


def cmd_equiv(args: argparse.Namespace) -> int:
    """Equivalence of the two monitors' DTs: statuses (Theorem 5.3), then values."""
    a, b = _load_pair(args.q1, args.q2, parse_alphabet(args.alphabet))
    try:
        if args.statuses:
            return _equiv_statuses(args, status_equivalent(a.dt, b.dt, max_pairs=args.max_pairs))
        answer = value_equivalent(a.dt, b.dt, max_pairs=args.max_pairs)
    except EquivalenceLimitError as e:
        emit(args, {"equivalent": None, "limit": str(e), "explored": e.explored},
              [f"undecided: {e}"])
        return EXIT_UNDECIDED
    summary = answer.summary()
    data: dict[str, Any] = {"equivalent": answer.equivalent, "level": "values",
                            "summary": summary, "proven": answer.proven,
                            "bound": answer.bound, "unresolved": answer.unresolved,
                            "random_words": answer.random_words,
                            "random_length": answer.random_length,
                            "explored": answer.explored}
    c = answer.counterexample
    if c is not None:
        data["counterexample"] = {
            "tags": list(c.tags), "data": [_json_event(d) for d in c.data],
            "output": c.output, "found_by": c.found_by,
            "outputs": [[_json_xvalue(v) for v in y] for y in c.outputs]}
        statuses = c.found_by == "statuses"
        lines = [f"not equivalent: the output {'statuses' if statuses else 'values'} differ",
                 f"{'shortest ' if statuses else ''}counterexample: "
                 f"{_data_word(c.tags, c.data)}",
                 f"  Q1 outputs: {', '.join(_show_xvalue(v) for v in c.outputs[0])}",
                 f"  Q2 outputs: {', '.join(_show_xvalue(v) for v in c.outputs[1])}",
                 summary[0].removeprefix("not equivalent: ")]
        emit(args, data, lines)
        return EXIT_NO
    head = "equivalent" if answer.proven else "undecided: not proven, no counterexample found"
    emit(args, data, [head, *(f"  {line}" for line in summary)])
    return EXIT_OK if answer.proven else EXIT_UNDECIDED


def _equiv_statuses(args: argparse.Namespace, answer: StatusEquivalence) -> int:
    """--statuses: Theorem 5.3 alone, a decision (shortest counterexample)."""
    data: dict[str, Any] = {"equivalent": answer.equivalent, "level": "statuses",
                            "explored": answer.explored}
    if answer.equivalent:
        lines = [f"equivalent on statuses ({_STATUS_SCOPE})"]
    else:
        word = answer.counterexample or ()
        first, second = answer.statuses or ((), ())
        data["counterexample"] = {"tags": list(word),
                                  "statuses": [_status_names(first), _status_names(second)]}
        lines = ["not equivalent: the output statuses differ",
                 f"shortest counterexample: {_tag_string(word)}",
                 f"  Q1 outputs: {', '.join(_status_names(first))}",
                 f"  Q2 outputs: {', '.join(_status_names(second))}",
                 "(whatever the data)"]
    emit(args, data, lines)
    return EXIT_OK if answer.equivalent else EXIT_NO


def _load_pair(q1: str, q2: str, alphabet: list[str] | None) -> tuple[Monitor, Monitor]:
    """Both monitors over ``alphabet``; without it, over the union of their alphabets
    (a tag only one query mentions is then a tag the other ignores). A query that
    declares its alphabet cannot be widened: it is a usage error naming it."""
    a, b = load_query(q1, alphabet), load_query(q2, alphabet)
    if alphabet is not None or set(a.alphabet) == set(b.alphabet):
        return a, b
    union = list(dict.fromkeys([*a.alphabet, *b.alphabet]))
    pair = []
    for name, spec, m, other in (("Q1", q1, a, b), ("Q2", q2, b, a)):
        try:
            pair.append(load_query(spec, union))
        except QreError:
            extra = [t for t in other.alphabet if t not in m.alphabet]
            raise UsageError(
                f"{name} declares the alphabet {', '.join(m.alphabet)}, but the other query "
                f"has the tag(s) {', '.join(extra)}: both are compared over one alphabet, so "
                f"declare the same alphabet in both (or in neither: the union of the tags "
                f"they mention is used)") from None
    return pair[0], pair[1]


def _json_xvalue(v: XValue) -> Any:
    """An extended value in JSON: "undefined", "conflict", a number, or "nan"/"inf"/"-inf"."""
    if v is BOT or v is TOP:
        return _STATUS_NAMES[int(status_of(v))]
    return _json_float(float(v))  # type: ignore[arg-type]


def _json_float(x: float) -> Any:
    return x if math.isfinite(x) else repr(x)


def _json_event(d: Any) -> Any:
    return {k: _json_float(v) for k, v in d.items()} if isinstance(d, dict) else _json_float(d)


def _show_xvalue(v: XValue) -> str:
    return _STATUS_NAMES[int(status_of(v))] if v is BOT or v is TOP else repr(float(v))  # type: ignore[arg-type]


def _data_word(tags: Sequence[str], data: Sequence[Any]) -> str:
    """``a(1.0) b(-0.0)``; record events as ``a(p=1.0, q=2.0)``."""
    if not tags:
        return "(the empty stream)"

    def show(d: Any) -> str:
        if isinstance(d, dict):
            return ", ".join(f"{k}={v!r}" for k, v in d.items())
        return repr(d)

    return " ".join(f"{t}({show(d)})" for t, d in zip(tags, data, strict=True))


def cmd_restartable(args: argparse.Namespace) -> int:
    """Definition 5.4, searched on the optimized DT; a witness also replayed as compiled.

    The optimizer keeps the outputs of every run with restarts exactly
    (codegen.optimize; tested under restarts), and restartability depends on
    nothing else (proof of Theorem 5.6), so the smaller DT gives the same
    answer, several times faster. A witness is checked on the DT as compiled.
    """
    m = load_query(args.query)
    answer = check_restartable(m.dt, max_states=args.max_states)
    if answer.witness is not None and m.unoptimized is not None:
        _replay_as_compiled(m.unoptimized, answer.witness)
    synchronized = output_synchronized(m.dt)
    data: dict[str, Any] = {"restartable": answer.restartable, "explored": answer.explored,
                            "output_synchronized": synchronized}
    sync_line = (f"output-synchronized: {'yes' if synchronized else 'no'} (the outputs are "
                 f"{'always' if synchronized else 'not always'} all undefined or all not)")
    if answer.restartable:
        lines = ["restartable", sync_line]
    else:
        w = answer.witness
        assert w is not None  # not restartable always comes with a witness
        threads = [{"position": p, "initial": _status_names(x)} for p, x in w.threads]
        data["witness"] = {"tags": list(w.tags), "threads": threads,
                           "restarted": _status_names(w.restarted),
                           "separate": _status_names(w.separate)}
        lines = ["not restartable", f"tags: {_tag_string(w.tags)}"]
        if threads:
            lines += [f"  thread at position {t['position']}: initial {', '.join(t['initial'])}"
                      for t in threads]
            lines += [f"restarted run outputs: {', '.join(_status_names(w.restarted))}",
                      f"separate threads give: {', '.join(_status_names(w.separate))}"]
        else:  # the union of no thread is all undefined: the DT outputs something from nothing
            lines += ["  no thread started (every initial value undefined)",
                      f"the run outputs: {', '.join(_status_names(w.restarted))}",
                      f"but no thread means: {', '.join(_status_names(w.separate))}"]
        lines.append(sync_line)
        lines += _restartable_form(args, m.dt, data)
    if answer.restartable and args.convert:
        _write(args.convert, m.dt.to_json())
        data["convert"] = args.convert
        lines.append(f"wrote the DT (already restartable) to {args.convert}")
    emit(args, data, lines)
    return EXIT_OK if answer.restartable else EXIT_NO


def _restartable_form(args: argparse.Namespace, dt: DT, data: dict[str, Any]) -> list[str]:
    """Build the restartable form of a DT that is not restartable; write it with --convert."""
    try:
        conversion = make_restartable(dt, max_states=args.max_states)
    except PreconditionError as e:
        data["restartable_form"] = {"exists": False, "reason": str(e)}
        return [f"no restartable form: {e}"]
    result = conversion.dt
    data["restartable_form"] = {"exists": True, "size": result.size,
                                "states": len(result.states),
                                "cra_control_states": len(conversion.cra.states),
                                "seconds": round(conversion.seconds, 6)}
    lines = [conversion.summary()]
    if args.convert:
        _write(args.convert, result.to_json())
        data["convert"] = args.convert
        lines.append(f"wrote it to {args.convert}")
    else:
        lines.append("write it with --convert FILE.json")
    return lines


def _replay_as_compiled(dt: DT, witness: RestartWitness) -> None:
    """The witness found on the optimized DT must break (iii) on the compiled DT too."""
    restarted, separate = restartability_replay(dt, witness)
    got = (status_vector(restarted), status_vector(separate))
    if got != (witness.restarted, witness.separate):
        raise AssertionError(f"restartability witness {witness} does not replay on the DT as "
                             f"compiled ({got}): the optimizer changed a run with restarts")


def cmd_language(args: argparse.Namespace) -> int:
    """Emptiness and universality of L (defined) and L̄ (defined or conflict) per output."""
    m = load_query(args.query)
    outs = languages(m.dt, max_configs=args.max_configs)
    names = m.outputs
    data: dict[str, Any] = {"outputs": [], "explored": outs[0].explored if outs else 0}
    lines: list[str] = []
    for name, o in zip(names, outs, strict=True):
        data["outputs"].append({
            "output": name,
            "L": {"empty": o.empty, "universal": o.universal,
                  "shortest_in": _json_word(o.in_l), "shortest_not_in": _json_word(o.not_in_l)},
            "L_bar": {"empty": o.rate_empty, "universal": o.rate_universal,
                      "shortest_in": _json_word(o.in_rate),
                      "shortest_not_in": _json_word(o.not_in_rate)}})
        if len(outs) > 1:
            lines.append(f"output {name}:")
        lines += [f"L (defined):             {_language_line(o.in_l, o.not_in_l)}",
                  f"L-bar (defined or ⊤):    {_language_line(o.in_rate, o.not_in_rate)}"]
    emit(args, data, lines)
    return EXIT_OK


def _json_word(word: tuple[str, ...] | None) -> list[str] | None:
    return None if word is None else list(word)


def _language_line(inside: tuple[str, ...] | None, outside: tuple[str, ...] | None) -> str:
    """"empty", "all tag strings", or both shortest witnesses."""
    if inside is None:
        return "empty (no tag string)"
    if outside is None:
        return "universal (every tag string)"
    return (f"neither empty nor universal: shortest in: {_tag_string(inside)}; "
            f"shortest not in: {_tag_string(outside)}")
