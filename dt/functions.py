"""Data functions G : I ⇒ F and their conversion to DTs (seed 003, §5.2.1).

A data function is a plain function of extended values given by terms: each
:class:`FunctionEntry` defines one output from some inputs, and an output
defined by several entries is their union ``⊔`` (so two defined entries make
⊤). An entry is *strict* in its ``sources``: it is ⊥ if any source is ⊥, else
⊤ if any source is ⊤, exactly like a transition's term (Equation (1)). Its
``sources`` may include inputs its term does not read: the paper's G_init
(the constant ``init``) must still wait for its input, or it would fire on
every step.

Conversion to a DT (as in the prefix-sum construction): states = the inputs
and the outputs (fresh names); one *epsilon* transition per entry, from the
primed inputs to the primed output. The DT has no memory: its outputs are G of
whatever reaches its inputs in the same step.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from .builder import Builder
from .model import DT, EPS, Facts
from .terms import Term, Var, evaluate_term, parse_term
from .values import BOT, XValue, lift, union

__all__ = ["DataFunction", "FunctionEntry"]


@dataclass(frozen=True, slots=True)
class FunctionEntry:
    """One term of a data function: ``output := term`` strict in ``sources``."""

    output: str
    sources: frozenset[str]
    term: Term

    def evaluate(self, env: Mapping[str, XValue]) -> XValue:
        """The entry's value given extended values of the inputs."""
        names = sorted(self.sources)
        return lift(
            lambda *vals: evaluate_term(self.term, {Var(n): v for n, v in zip(names, vals,
                                                                               strict=True)}),
            [env[n] for n in names],
        )


@dataclass(frozen=True)
class DataFunction:
    """G : inputs ⇒ outputs, a collection of :class:`FunctionEntry` (§5.2.1)."""

    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    entries: tuple[FunctionEntry, ...]

    def __post_init__(self) -> None:
        if len(set(self.inputs)) != len(self.inputs):
            raise ValueError(f"data function inputs must be distinct: {self.inputs}")
        if len(set(self.outputs)) != len(self.outputs):
            raise ValueError(f"data function outputs must be distinct: {self.outputs}")
        inputs = set(self.inputs)
        for e in self.entries:
            if e.output not in self.outputs:
                raise ValueError(f"entry {e.output} := {e.term}: {e.output!r} is not an output")
            if not e.sources <= inputs:
                extra = ", ".join(sorted(e.sources - inputs))
                raise ValueError(f"entry {e.output} := {e.term}: sources {extra} are not inputs")
            bad = [v for v in e.term.variables() if v.primed or v.name not in e.sources]
            if bad:
                names = ", ".join(sorted(str(v) for v in bad))
                raise ValueError(f"entry {e.output} := {e.term}: reads {names}, "
                                 f"which is not among its sources")
            if e.term.reads_cur():
                raise ValueError(f"entry {e.output} := {e.term}: a data function cannot read cur")

    @classmethod
    def of(
        cls,
        inputs: Iterable[str],
        definitions: Mapping[str, Term | str] | Iterable[tuple[str, Term | str]],
        *,
        sources: Iterable[str] | None = None,
    ) -> DataFunction:
        """Build G from ``output: term`` definitions (terms as Term or TERM text).

        Outputs are ordered by first appearance. Each entry is strict in
        ``sources`` if given, else in *all* inputs (the paper's G_op, G_init).

        >>> g = DataFunction.of(["y1", "y2"], {"y": "y1 + y2"})
        >>> g.apply([1.0, 2.0])
        (3.0,)
        """
        inputs = tuple(inputs)
        items = definitions.items() if isinstance(definitions, Mapping) else definitions
        strict = frozenset(inputs if sources is None else sources)
        outputs: list[str] = []
        entries = []
        for output, term in items:
            if output not in outputs:
                outputs.append(output)
            t = parse_term(term) if isinstance(term, str) else term
            entries.append(FunctionEntry(output, strict, t))
        return cls(inputs, tuple(outputs), tuple(entries))

    @property
    def size(self) -> int:
        """Total length of the terms (§5.2.1)."""
        return sum(e.term.size for e in self.entries)

    def apply(self, x: Sequence[XValue]) -> tuple[XValue, ...]:
        """[[G]](x): positional over ``inputs``, result positional over ``outputs``."""
        if len(x) != len(self.inputs):
            raise ValueError(f"{len(x)} values for {len(self.inputs)} inputs")
        env = dict(zip(self.inputs, x, strict=True))
        out: dict[str, XValue] = {o: BOT for o in self.outputs}
        for e in self.entries:
            out[e.output] = union(out[e.output], e.evaluate(env))
        return tuple(out[o] for o in self.outputs)

    @property
    def strict_entries(self) -> bool:
        """Every entry waits for at least one input (none fires on its own)."""
        return all(e.sources for e in self.entries)

    @property
    def synchronizing(self) -> bool:
        """Every output has entries and every entry is strict in all inputs.

        Then all outputs are ⊥ together or non-⊥ together whenever the inputs
        are (output synchronization is preserved).
        """
        every_input = frozenset(self.inputs)
        defined = {e.output for e in self.entries}
        return defined == set(self.outputs) and all(e.sources == every_input
                                                    for e in self.entries)

    def to_dt(self, alphabet: Iterable[str]) -> DT:
        """G as a memoryless DT: inputs → outputs by epsilon transitions (§5.2.1).

        Restartable when every entry has a source (``strict_entries``): with k
        restarted threads the inputs are ⊤ for k ≥ 2, so every output is ⊤,
        the union of the threads' outputs.
        """
        b = Builder(alphabet)
        ins = {name: b.state("g") for name in self.inputs}
        outs = {name: b.state("h") for name in self.outputs}
        for e in self.entries:
            rename = {Var(n): Var(ins[n], primed=True) for n in e.sources}
            b.add(EPS, rename.values(), outs[e.output], e.term.rename(rename))
        facts = Facts(
            restartable=True if self.strict_entries else None,
            output_synchronized=True if (len(self.outputs) <= 1 or self.synchronizing) else None,
        )
        return b.freeze(ins.values(), outs.values(), facts)

