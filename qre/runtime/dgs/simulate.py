"""Run a plan with every message delivered in a random order: the protocol under test.

The workers of :mod:`~qre.runtime.dgs.worker` exchange messages over FIFO channels,
one per (sender, receiver) pair, as the seed assumes of Erlang (§4.4.5 (4)); input
streams are senders too. :func:`simulate` delivers the head of a randomly chosen
channel at each step, so a seed is one interleaving of a real distributed run — the
ones that processes or Spark rarely produce included. The tests check Theorem 4.13
on it: for every S-valid plan and every schedule, the outputs are the sequential
specification's on the sorted input.

Also shared by the other drivers: :func:`stream_packets` (what an input stream
sends to whom) and :class:`Result`.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict, deque
from collections.abc import Collection, Hashable, Iterator
from dataclasses import dataclass, field
from typing import Any

from dt.dgs.plan import Plan, validate
from dt.dgs.spec import Event, Spec

from .inputs import INF, Heartbeat, InputError, Streams, check_instance, ranks
from .worker import WorkerRuntime, tag_codes


class Deadlock(RuntimeError):
    """Workers left waiting with no message in flight (a bug in a runtime, never the input's)."""


@dataclass(frozen=True)
class Result:
    """The outputs of a run, in the order of the events that produced them, and its messages."""

    outputs: list[Any]
    keyed: list[tuple[tuple, Any]]
    messages: Counter = field(default_factory=Counter)

    @staticmethod
    def of(keyed: list[tuple[tuple, Any]], messages: Counter) -> Result:
        keyed = sorted(keyed, key=lambda pair: pair[0])  # stable: one event's outputs keep order
        return Result([o for _, o in keyed], keyed, messages)


def stream_packets(plan: Plan, streams: Streams, batch: int, *, rank: dict | None = None,
                   receivers: Collection[Hashable] | None = None
                   ) -> dict[Hashable, Iterator[tuple[float, dict[Hashable, list]]]]:
    """For each stream, its items cut into packets of ``batch``, closed by a heartbeat at
    +∞: ``(time of the first item, {worker: [message, ...]})``. A run of events of one
    tag is one ``events`` message; a heartbeat goes to the owner of each of the
    stream's implementation tags. ``rank`` numbers all the streams (default: their
    order in ``streams``); ``receivers`` keeps the messages for those workers only,
    for a host that reads a part of the input. The streams passed :func:`check_tags`."""
    owner = plan.owner()
    code = {itag: n for n, itag in enumerate(tag_codes(plan))}
    rank = ranks(streams) if rank is None else rank
    routes: dict[Hashable, dict] = {name: {} for name in streams}
    for itag in owner:
        if itag.stream in routes and (receivers is None or owner[itag] in receivers):
            routes[itag.stream][itag.tag] = (owner[itag], code[itag])

    def packets(name: Hashable) -> Iterator[tuple[float, dict[Hashable, list]]]:
        route, at_rank = routes[name], rank[name]
        beats = list(route.values())
        items = [*streams[name], Heartbeat(INF)]
        for start in range(0, len(items), batch):
            packet: dict[Hashable, list] = defaultdict(list)
            last: list | None = None  # the events message being extended
            last_code = None
            for item in items[start:start + batch]:
                if type(item) is Heartbeat:
                    at = (item.time, at_rank, 0)
                    for receiver, number in beats:
                        packet[receiver].append(("beat", number, at))
                    last = None
                    continue
                try:
                    receiver, number = route[item.tag]
                except KeyError:
                    continue  # another host's event (check_tags refused unknown ones)
                if last is None or number != last_code:
                    last, last_code = [], number
                    packet[receiver].append(("events", number, last))
                last.append(((item.time, at_rank, 0), item.payload))
            yield items[start].time, packet

    return {name: packets(name) for name in streams}


def check_tags(plan: Plan, streams: Streams) -> None:
    """Raise :class:`InputError` for a plan's stream that is missing or an event whose tag
    no worker handles on its stream (a host reading part of the input skips others')."""
    allowed: dict[Hashable, set] = {name: set() for name in streams}
    for itag in plan.itags():
        if itag.stream not in allowed:
            raise InputError(f"the plan handles {itag!r} but there is no stream {itag.stream!r}")
        allowed[itag.stream].add(itag.tag)
    for name, items in streams.items():
        tags = allowed[name]
        for position, item in enumerate(items):
            if isinstance(item, Event) and item.tag not in tags:
                raise InputError(f"stream {name!r}, item {position}: no worker of the plan "
                                 f"handles tag {item.tag!r} on this stream")


def simulate(spec: Spec, plan: Plan, streams: Streams, *, seed: int = 0) -> Result:
    """Run ``plan`` on ``streams`` delivering messages in a random order drawn from ``seed``."""
    check_instance(streams)
    validate(plan, spec)
    check_tags(plan, streams)
    rng = random.Random(seed)
    workers = {w.name: WorkerRuntime(spec, plan, w.name) for w in plan.workers()}
    channels: dict[tuple, deque] = {}
    sources = stream_packets(plan, streams, batch=rng.choice((1, 1, 2, 3)))
    messages: Counter = Counter()

    def send(sender: Hashable, sent: list) -> None:
        for receiver, message in sent:
            channels.setdefault((sender, receiver), deque()).append(message)

    for name, worker in workers.items():
        send(name, worker.start())
    while True:
        ready = [c for c, queue in channels.items() if queue]
        choices = len(ready) + len(sources)
        if not choices:
            break
        pick = rng.randrange(choices)
        if pick >= len(ready):
            name = list(sources)[pick - len(ready)]
            packet = next(sources[name], None)
            if packet is None:
                del sources[name]
            else:
                for receiver, sent in packet[1].items():
                    send(("stream", name), [(receiver, m) for m in sent])
            continue
        sender, receiver = ready[pick]
        message = channels[sender, receiver].popleft()
        messages[message[0]] += 1
        send(receiver, workers[receiver].receive(message))
    stuck = [n for n, w in workers.items() if not w.done()]
    if stuck:
        raise Deadlock(f"workers {stuck} did not finish ({[workers[n].status for n in stuck]})")
    return Result.of([pair for w in workers.values() for pair in w.outputs], messages)
