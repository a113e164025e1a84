"""Run a plan on OS processes or threads: one per worker, each reading its own input.

Each worker of the plan runs in a :class:`~qre.runtime.dgs.host.Host` of its own.
It reads the input streams of its implementation tags itself — the seed's setting,
where streams are produced where their workers run — in packets of ``batch`` items,
merged by time, and exchanges only the protocol's messages
(requests, progress, states, forks) with its parent and children over queues. A
queue keeps each sender's messages in order, which is what the protocol needs.

``backend="processes"`` (the default) runs workers in forked processes: they see the
input and the specification's functions without pickling them (they need not be
picklable); states and outputs are pickled on the way. ``"threads"`` runs them in
threads of this process: only work that releases the GIL (numpy, Numba ``nogil``
kernels) runs in parallel, but nothing is copied.

A failure in a worker (a user function raising) stops the run and is raised here as
:class:`WorkerFailed` with the worker's name and traceback.

Cost: per event, the protocol in Python (an append, and a release per run of events)
on top of ``update``; per synchronizing event, a request, a state and a fork for
every worker below its owner, through the queues. What it buys depends on how heavy
``update`` is: see ``benchmarks/dgs_applications.py``.
"""

from __future__ import annotations

import multiprocessing
import queue
import threading
import traceback
from collections import Counter
from collections.abc import Hashable
from typing import Any

from dt.dgs.plan import Plan, validate
from dt.dgs.spec import Spec

from .host import Host, local_packets
from .inputs import Streams, check_instance, ranks
from .simulate import Result, check_tags
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
    check_tags(plan, streams)
    names = [w.name for w in plan.workers()]
    if backend == "processes":
        context = multiprocessing.get_context("fork")
        inboxes = {n: context.Queue() for n in names}
        results = context.Queue()
        runners = [context.Process(target=_worker_main,
                                   args=(spec, plan, n, streams, batch, inboxes, results),
                                   daemon=True, name=f"dgs-{n}") for n in names]
    else:
        inboxes = {n: queue.SimpleQueue() for n in names}
        results = queue.SimpleQueue()
        runners = [threading.Thread(target=_worker_main,
                                    args=(spec, plan, n, streams, batch, inboxes, results),
                                    daemon=True, name=f"dgs-{n}") for n in names]
    for runner in runners:
        runner.start()
    try:
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


def _worker_main(spec: Spec, plan: Plan, name: str, streams: Streams, batch: int,
                 inboxes: dict, results: Any) -> None:
    try:
        counts: Counter = Counter()

        def send(receiver: Hashable, messages: list) -> None:
            inboxes[receiver].put((name, messages))

        host = Host({name: WorkerRuntime(spec, plan, name)}, send)
        host.start()
        inbox = inboxes[name]
        for packet in local_packets(plan, {name}, streams, batch, ranks(streams)):
            for receiver, messages in packet.items():
                counts.update(m[0] for m in messages)
                host.deliver(receiver, messages)
            if not _take_waiting(host, name, inbox, counts):
                return
        while not host.done():
            sender, messages = inbox.get()
            if sender is None:  # the run failed elsewhere
                return
            counts.update(m[0] for m in messages)
            host.deliver(name, messages)
        results.put(("done", name, host.outputs(), counts))
    except BaseException:  # reported to the caller, who raises it
        results.put(("failed", name, traceback.format_exc(), None))


def _take_waiting(host: Host, name: str, inbox: Any, counts: Counter) -> bool:
    """Deliver the messages already in the inbox; False if the run was stopped."""
    while True:
        try:
            sender, messages = inbox.get_nowait()
        except queue.Empty:
            return True
        if sender is None:
            return False
        counts.update(m[0] for m in messages)
        host.deliver(name, messages)


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
