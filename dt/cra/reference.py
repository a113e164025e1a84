"""Running a CRA on a data word: the oracle for its translations (seed 003, §5.4.1).

A configuration is ``(p, registers)``: the control state and a value (float or
⊤) per live register of p. One step on ``(σ, d)`` moves to ``delta[p, σ]`` and
evaluates every update over the *old* registers at once. An update is ⊤ if
it is :data:`~dt.cra.model.CONFLICT` or one of its reads is ⊤ (as a DT
transition with a ⊤ source); otherwise its term's value. Cost per event: the
size of the step's updates.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from ..terms import EventValue, Var, evaluate_term
from ..values import BOT, TOP, XValue
from .model import CRA, Step, Update

__all__ = ["CRAConfig", "cra_evaluate", "cra_initial", "cra_outputs", "cra_step"]

CRAConfig = tuple[str, dict[str, XValue]]
"""The control state and the live registers' values (float or ⊤)."""


def _value(u: Update, env: Mapping[str, XValue], cur: EventValue | None) -> XValue:
    if u.term is None or any(env[r] is TOP for r in u.reads):
        return TOP
    return evaluate_term(u.term, {Var(r): env[r] for r in u.reads}, cur)  # type: ignore[misc]


def _apply(step: Step, env: Mapping[str, XValue], cur: EventValue | None) -> CRAConfig:
    return step.target, {r: _value(u, env, cur) for r, u in step.updates.items()}


def cra_initial(cra: CRA, x: Sequence[XValue]) -> CRAConfig:
    """The start configuration on the initial vector ``x`` (chosen by which inputs are ⊥)."""
    if len(x) != len(cra.inputs):
        raise ValueError(f"initial vector has {len(x)} values; the CRA has "
                         f"{len(cra.inputs)} inputs")
    defined = tuple(0 if v is BOT else 1 for v in x)
    env = {name: v for name, v in zip(cra.inputs, x, strict=True) if v is not BOT}
    return _apply(cra.start[defined], env, None)


def cra_step(cra: CRA, config: CRAConfig, tag: str, cur: EventValue) -> CRAConfig:
    """One event ``(tag, cur)``."""
    p, env = config
    step = cra.delta.get((p, tag))
    if step is None:
        raise ValueError(f"unknown tag {tag!r}; the alphabet is {', '.join(cra.alphabet)}")
    return _apply(step, env, cur)


def cra_outputs(cra: CRA, config: CRAConfig) -> tuple[XValue, ...]:
    """The output vector in ``config`` (⊥ where the state gives none)."""
    p, env = config
    return tuple(BOT if u is None else _value(u, env, None) for u in cra.output[p])


def cra_evaluate(cra: CRA, x: Sequence[XValue],
                 word: Iterable[tuple[str, EventValue]]) -> list[tuple[XValue, ...]]:
    """The outputs after every prefix of ``word``, the empty one included."""
    config = cra_initial(cra, x)
    out = [cra_outputs(cra, config)]
    for tag, cur in word:
        config = cra_step(cra, config, tag, cur)
        out.append(cra_outputs(cra, config))
    return out
