"""A host: some workers of a plan in one process, routing their messages.

A driver puts one or more :class:`~qre.runtime.dgs.worker.WorkerRuntime` in a
:class:`Host`; messages between two workers of the host are delivered in place (in
order, through a queue), messages to any other worker go out through ``send_remote``
(a process queue, a socket). :mod:`~qre.runtime.dgs.parallel` hosts one worker per
process or thread; :mod:`spark_udf.dgs` hosts a Spark task's leaves in the task and
the inner workers in the driver.
"""

from __future__ import annotations

import heapq
from collections import defaultdict, deque
from collections.abc import Callable, Collection, Hashable, Iterable, Iterator

from dt.dgs.plan import Plan

from .inputs import Streams
from .simulate import stream_packets
from .worker import Outgoing, WorkerRuntime

SendRemote = Callable[[Hashable, list], None]


class Host:
    """The workers ``runtimes`` (name → runtime) of one process."""

    def __init__(self, runtimes: dict[Hashable, WorkerRuntime], send_remote: SendRemote) -> None:
        self.runtimes = runtimes
        self.send_remote = send_remote
        self.pending: deque = deque()

    def start(self) -> None:
        """The root's first fork, if the root is here."""
        for runtime in self.runtimes.values():
            self._route(runtime.start())
        self._drain()

    def deliver(self, receiver: Hashable, messages: Iterable) -> None:
        """Messages for a worker of this host, and everything they set off here."""
        self.pending.append((receiver, messages))
        self._drain()

    def _drain(self) -> None:
        while self.pending:
            name, batch = self.pending.popleft()
            self._route(self.runtimes[name].receive_many(batch))

    def _route(self, out: Outgoing) -> None:
        grouped: dict[Hashable, list] = defaultdict(list)
        for receiver, message in out:
            grouped[receiver].append(message)
        for receiver, messages in grouped.items():
            if receiver in self.runtimes:
                self.pending.append((receiver, messages))
            else:
                self.send_remote(receiver, messages)

    def done(self) -> bool:
        return all(r.done() for r in self.runtimes.values())

    def outputs(self) -> list:
        return [pair for r in self.runtimes.values() for pair in r.outputs]


def local_packets(plan: Plan, names: Collection[Hashable], streams: Streams, batch: int,
                  rank: dict) -> Iterator[dict]:
    """The packets for the workers ``names`` from the input streams of their tags (all
    of which must be in ``streams``), merged by the time of each packet's first item."""
    mine = {itag.stream for w in plan.workers() if w.name in names for itag in w.itags}
    local = {s: streams[s] for s in streams if s in mine}
    sources = stream_packets(plan, local, batch, rank=rank, receivers=set(names))
    heap = []
    for stream, packets in sources.items():
        head = next(packets, None)
        if head is not None:
            heap.append((head[0], rank[stream], stream, head[1]))
    heapq.heapify(heap)
    while heap:
        _, n, stream, packet = heapq.heappop(heap)
        yield packet
        head = next(sources[stream], None)
        if head is not None:
            heapq.heappush(heap, (head[0], n, stream, head[1]))
