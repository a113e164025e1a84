"""Run a plan on OS processes or threads: one per worker, messages over queues.

Each worker of the plan runs :class:`~qre.runtime.dgs.worker.WorkerRuntime` in a loop:
take a packet (a list of messages from one sender) from its inbox, feed it, send what
comes out grouped by receiver. The caller's process plays the input streams: it cuts
each stream into packets of ``batch`` items and sends them in the order of their
first times, so the streams advance together. Per-sender order is what the protocol
needs, and a queue keeps each sender's puts in order.

``backend="processes"`` (the default) runs workers in forked processes: the
specification's functions need not be picklable, states and outputs are pickled on
the way. ``"threads"`` runs them in threads of this process: only work that releases
the GIL (numpy, Numba ``nogil`` kernels) runs in parallel, but nothing is copied.

A failure in a worker (a user function raising) stops the run and is raised here as
:class:`WorkerFailed` with the worker's name and traceback.

Cost: per event, a few microseconds of protocol in Python (mailbox, dispatch) on
top of ``update``, plus pickling in packets; per synchronizing event, a request,
a state and a fork per worker below it. What it buys depends on how heavy ``update``
is: see ``benchmarks/dgs_applications.py``.
"""

from __future__ import annotations

import heapq
import multiprocessing
import queue
import threading
import traceback
from collections import Counter, defaultdict
from collections.abc import Hashable
from typing import Any

from dt.dgs.plan import Plan, validate
from dt.dgs.spec import Spec

from .inputs import Streams, check_instance
from .simulate import Result, stream_packets
from .worker import WorkerRuntime

BACKENDS = ("processes", "threads")


class WorkerFailed(RuntimeError):
    """A worker raised (the message has its name and traceback)."""


def run_parallel(spec: Spec, plan: Plan, streams: Streams, *, backend: str = "processes",
                 batch: int = 1024, timeout: float | None = None) -> Result:
    """Run ``plan`` with one process (or thread) per worker; the outputs in event order."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, not {backend!r}")
    if batch < 1:
        raise ValueError(f"batch must be at least 1, not {batch}")
    check_instance(streams)
    validate(plan, spec)
    names = [w.name for w in plan.workers()]
    if backend == "processes":
        context = multiprocessing.get_context("fork")
        inboxes = {n: context.Queue() for n in names}
        results = context.Queue()
        runners = [context.Process(target=_worker_main, args=(spec, plan, n, inboxes, results),
                                   daemon=True, name=f"dgs-{n}") for n in names]
    else:
        inboxes = {n: queue.SimpleQueue() for n in names}
        results = queue.SimpleQueue()
        runners = [threading.Thread(target=_worker_main, args=(spec, plan, n, inboxes, results),
                                    daemon=True, name=f"dgs-{n}") for n in names]
    for runner in runners:
        runner.start()
    try:
        _feed(plan, streams, inboxes, batch)
        return _collect(results, len(names), timeout)
    except BaseException:
        for inbox in inboxes.values():
            inbox.put((None, None))
        raise
    finally:
        for runner in runners:
            runner.join(timeout=5)
            if isinstance(runner, multiprocessing.process.BaseProcess) and runner.is_alive():
                runner.terminate()


def _feed(plan: Plan, streams: Streams, inboxes: dict, batch: int) -> None:
    """Send every stream's packets, the packet with the earliest first time first."""
    sources = stream_packets(plan, streams, batch)
    heap = [(-float("inf"), n, name) for n, name in enumerate(sources)]
    while heap:
        _, n, name = heapq.heappop(heap)
        packet = next(sources[name], None)
        if packet is None:
            continue
        for receiver, messages in packet[1].items():
            inboxes[receiver].put((("stream", name), messages))
        heapq.heappush(heap, (packet[0], n, name))


def _worker_main(spec: Spec, plan: Plan, name: str, inboxes: dict, results: Any) -> None:
    try:
        worker = WorkerRuntime(spec, plan, name)
        _send(name, worker.start(), inboxes)
        counts: Counter = Counter()
        inbox = inboxes[name]
        while not worker.done():
            sender, messages = inbox.get()
            if sender is None:  # the run failed elsewhere
                return
            counts.update(m[0] for m in messages)
            _send(name, worker.receive_many(messages), inboxes)
        results.put(("done", name, worker.outputs, counts))
    except BaseException:  # reported to the caller, who raises it
        results.put(("failed", name, traceback.format_exc(), None))


def _send(name: str, out: list, inboxes: dict) -> None:
    grouped: dict[Hashable, list] = defaultdict(list)
    for receiver, message in out:
        grouped[receiver].append(message)
    for receiver, messages in grouped.items():
        inboxes[receiver].put((name, messages))


def _collect(results: Any, workers: int, timeout: float | None) -> Result:
    keyed: list = []
    messages: Counter = Counter()
    for _ in range(workers):
        try:
            kind, name, payload, counts = results.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"the run did not finish within {timeout} s") from None
        if kind == "failed":
            raise WorkerFailed(f"worker {name!r} failed:\n{payload}")
        keyed += payload
        messages.update(counts)
    return Result.of(keyed, messages)
