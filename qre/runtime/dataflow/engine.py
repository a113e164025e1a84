"""The in-process dataflow engine: operators, FIFO streams between them, a scheduler, ingresses.

A :class:`Node` receives batches of tuples and watermarks on numbered input ports and
sends its own to its successors. Streams are FIFO; a *loop* stream (seed 000 P3)
carries tuples only: the watermark of a node is the least of the latest watermarks on
its other inputs (§2.2), since its own output cannot hold its own watermark back.
Operations are not concurrent (§4.5's assumption): the :class:`Scheduler` delivers one
batch or watermark at a time, in one of two orders —

* ``"fifo"``: the order things were sent; the ingress sends its next item only when
  nothing is in flight (each input item runs to completion, as in a pipeline with no
  buffering: the lowest latency and memory);
* ``"random"`` (with a seed): any stream with something in flight may deliver next,
  and the ingress races the operators — the orders of an asynchronous engine, that
  the loop rules of §4.5 exist for. Tests run compositions under many of them.

Several ingresses take turns, an item each. Each ends with the watermark ``until``
(the end of input), sent once every ingress has sent its items and nothing is in
flight: so the ends never reorder the input, and the loops' gates
(:mod:`~.gates`) release what they hold step by step.

Times are whole numbers of δ (δ = 1). Cost: a Python call per batch per node, plus
each node's own work per tuple.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

__all__ = ["MIN_TIME", "Egress", "Fragment", "Ingress", "Node", "Scheduler", "run",
           "watermarks_for"]

MIN_TIME = -(1 << 62)
Tuple = tuple[Any, ...]
Order = Literal["fifo", "random"]


class Node:
    """An operator: ``on_tuples(port, batch)`` for tuples; watermarks per port, the
    node's own the least over its non-loop ports, ``advance(w)`` when it grows and
    then sent on (after whatever ``advance`` output: §2.2, Observation 1)."""

    def __init__(self, name: str, ports: int = 1, loops: Iterable[int] = ()) -> None:
        self.name = name
        self.marks = [MIN_TIME] * ports
        self.loops = frozenset(loops)
        self.w = MIN_TIME
        self.outs: list[tuple[Node, int, bool]] = []
        self.scheduler: Scheduler | None = None

    def to(self, node: Node, port: int = 0, *, loop: bool = False) -> Node:
        """Send this node's output to ``node``'s ``port`` (a loop stream: tuples only)."""
        if loop != (port in node.loops):
            raise ValueError(f"{node.name} port {port} is {'' if port in node.loops else 'not '}"
                             "a loop port")
        self.outs.append((node, port, loop))
        return node

    STATE: tuple[str, ...] = ()
    """The attributes that hold what the node remembers between calls (besides its
    watermarks): :meth:`state` saves them, :meth:`restore` puts them back."""

    def on_tuples(self, port: int, batch: list[Tuple]) -> None:
        raise NotImplementedError

    def state(self) -> dict[str, Any]:
        """What the node remembers, as data (picklable if its tuples are): so that an
        engine can keep it elsewhere between calls — Spark's state store, per key."""
        return {name: getattr(self, name) for name in ("marks", "w", *self.STATE)}

    def restore(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            setattr(self, name, value)

    def partition_key(self, port: int) -> Callable[[Tuple], Hashable] | None:
        """The function of a tuple on ``port`` that partitions the node's state (tuples
        of different keys never meet): an engine may run the node per key. None for a
        node without state (it runs on any split of its input) or whose state is one."""
        return None

    def next_time(self) -> int | None:
        """The least watermark at which :meth:`advance` would output or forget
        something (None: none would): when a key without new tuples must be woken."""
        return None

    def on_watermark(self, port: int, w: int) -> None:
        if w <= self.marks[port]:
            return
        self.marks[port] = w
        mark = min(m for p, m in enumerate(self.marks) if p not in self.loops)
        if mark > self.w:
            self.w = mark
            self.advance(mark)
            self.send_watermark(mark)

    def advance(self, w: int) -> None:
        """The node's watermark grew to ``w`` (before ``w`` is sent on)."""

    def send(self, batch: list[Tuple]) -> None:
        if batch:
            for node, port, _ in self.outs:
                self.scheduler.push(node, port, batch)

    def send_watermark(self, w: int) -> None:
        for node, port, loop in self.outs:
            if not loop:
                self.scheduler.push(node, port, w)


class Egress(Node):
    """Collects the tuples it receives, in order."""

    def __init__(self, name: str = "egress") -> None:
        super().__init__(name)
        self.tuples: list[Tuple] = []

    def on_tuples(self, port: int, batch: list[Tuple]) -> None:
        self.tuples.extend(batch)


def watermarks_for(times: Sequence[int], *, delay: int, every: int) -> list[tuple[int, int]]:
    """Bounded out-of-orderness (Flink's ``forBoundedOutOfOrderness``, Spark's
    ``withWatermark``): after every ``every`` tuples, W = the greatest τ so far − delay
    when that grew. Returns (position, W): W comes after the first ``position`` tuples.

    >>> watermarks_for([3, 1, 5, 4, 9], delay=1, every=2)
    [(2, 2), (4, 4)]
    """
    clock = np.asarray(times, dtype=np.int64)
    at = np.arange(every, len(clock) + 1, every)
    if not len(at):
        return []
    marks = np.maximum.accumulate(clock)[at - 1] - delay
    grew = np.concatenate(([True], marks[1:] > marks[:-1]))
    return list(zip(at[grew].tolist(), marks[grew].tolist(), strict=True))


class Ingress(Node):
    """Sends an arrival sequence (tuples, in batches between watermarks, and
    watermarks), then ``until``: the end of input."""

    def __init__(self, items: Sequence[tuple[str, Any]], *, until: int,
                 name: str = "ingress") -> None:
        super().__init__(name, ports=0)
        self.items = self._batched([*items, ("w", until)])
        self.pos = 0

    @staticmethod
    def _batched(items: Sequence[tuple[str, Any]]) -> list[tuple[str, Any]]:
        out: list[tuple[str, Any]] = []
        for kind, x in items:
            if kind == "w":
                out.append((kind, x))
            elif out and out[-1][0] == "t":
                out[-1][1].append(x)
            else:
                out.append(("t", [x]))
        return out

    def pending(self) -> bool:
        """Whether items remain before the end of input."""
        return self.pos < len(self.items) - 1

    def next_item(self) -> tuple[str, Any] | None:
        """Send the next item and return it; None when all are sent."""
        if self.pos == len(self.items):
            return None
        kind, x = self.items[self.pos]
        self.pos += 1
        if kind == "t":
            self.send(x)
        else:
            self.send_watermark(x)
        return kind, x

    def on_tuples(self, port: int, batch: list[Tuple]) -> None:
        raise TypeError("an ingress has no input")


class Scheduler:
    """Delivers what nodes send, one batch or watermark at a time (see the module's
    docstring for the two orders)."""

    def __init__(self, nodes: Sequence[Node], ingresses: Sequence[Ingress], *,
                 order: Order = "fifo", seed: int = 0, record: bool = False) -> None:
        self.nodes = list(nodes)
        self.ingresses = list(ingresses)
        self.order = order
        self.rng = random.Random(seed)
        self.queue: deque[tuple[Node, int, Any]] = deque()
        self.streams: dict[tuple[int, int], deque[tuple[Node, int, Any]]] = {}
        self.record: list[tuple[int, tuple[str, Any]]] | None = [] if record else None
        """With ``record``: every ingress's arrivals, in the order sent, as (ingress
        index, item) — the input a definition of :mod:`dt.dataflow` reads."""
        for node in [*self.nodes, *self.ingresses]:
            node.scheduler = self

    def push(self, node: Node, port: int, what: Any) -> None:
        if self.order == "fifo":
            self.queue.append((node, port, what))
        else:
            self.streams.setdefault((id(node), port), deque()).append((node, port, what))

    def run(self) -> None:
        if self.order == "fifo":
            self._run_fifo()
        else:
            self._run_random()

    def _sent(self, ingress: Ingress) -> bool:
        item = ingress.next_item()
        if item is not None and self.record is not None:
            kind, x = item
            index = self.ingresses.index(ingress)
            if kind == "t":
                self.record.extend((index, ("t", t)) for t in x)
            else:
                self.record.append((index, item))
        return item is not None

    def _run_fifo(self) -> None:
        queue = self.queue
        live = list(self.ingresses)
        while live:
            # round robin, each item run to completion; the ends after all input
            inputs = any(ingress.pending() for ingress in live)
            for ingress in [i for i in live if i.pending() or not inputs]:
                if not self._sent(ingress):
                    live.remove(ingress)
                while queue:
                    node, port, what = queue.popleft()
                    if isinstance(what, list):
                        node.on_tuples(port, what)
                    else:
                        node.on_watermark(port, what)

    def _run_random(self) -> None:
        live = list(self.ingresses)
        while True:
            ready = [s for s in self.streams.values() if s]
            inputs = any(ingress.pending() for ingress in live)
            sending = [i for i in live if i.pending() or not (ready or inputs)]  # ends: last
            if sending and (not ready or self.rng.random() < 0.5):
                ingress = self.rng.choice(sending)
                if not self._sent(ingress):
                    live.remove(ingress)
                continue
            if not ready:
                return
            node, port, what = self.rng.choice(ready).popleft()
            if isinstance(what, list):
                node.on_tuples(port, what)
            else:
                node.on_watermark(port, what)


@dataclass
class Fragment:
    """Nodes wired together: input stream i enters at every (node, port) of
    ``inputs[i]``; ``output`` sends the fragment's output; ``parts`` names its nodes."""

    nodes: list[Node]
    inputs: list[list[tuple[Node, int]]]
    output: Node
    parts: dict[str, Node] = field(default_factory=dict)

    def enter(self, i: int, source: Node) -> None:
        """``source``'s output as the fragment's input stream i."""
        for node, port in self.inputs[i]:
            source.to(node, port)

    def then(self, other: Fragment) -> Fragment:
        """This fragment's output as ``other``'s first input."""
        other.enter(0, self.output)
        return Fragment([*self.nodes, *other.nodes], self.inputs, other.output,
                        {**self.parts, **other.parts})


def run(fragment: Fragment, inputs: Sequence[Sequence[tuple[str, Any]]], *, until: int,
        order: Order = "fifo", seed: int = 0,
        record: bool = False) -> tuple[list[Tuple], Scheduler]:
    """Feed arrival sequence i into ``fragment``'s input i and run to the end:
    the tuples its output sent, in order, and the scheduler (its ``record``)."""
    egress = Egress()
    fragment.output.to(egress)
    ingresses = []
    for i, items in enumerate(inputs):
        ingress = Ingress(items, until=until, name=f"ingress{i}")
        fragment.enter(i, ingress)
        ingresses.append(ingress)
    scheduler = Scheduler([*fragment.nodes, egress], ingresses, order=order, seed=seed,
                          record=record)
    scheduler.run()
    return egress.tuples, scheduler
