"""DGS plans on Spark for data at rest: leaves as Spark tasks, inner workers in the driver.

Seed 003 §4.4 on Spark. The events of a DataFrame (a stream name, a time, a tag and a
payload per row) are split by the worker of the plan that handles them. The leaves'
events stay in Spark: they are partitioned by leaf (several leaves share a task when
there are more leaves than task slots) and run in one *barrier* stage, so that all
tasks run at once and can wait for their parents. The inner workers' events — the
synchronizing ones, rare by the optimizer's choice — are collected to the driver,
where the inner workers run. Between synchronizing events the leaves run in
parallel; at one, the owner joins its subtree's states (the protocol of
:mod:`qre.runtime.dgs.worker`), the messages going over a socket between each task
and the driver (``multiprocessing.connection``, authenticated by a random key).

Why not Spark's own channel: a barrier task's ``allGather`` took 0.85 s a call here
(local[2]), once per synchronizing event; a socket round trip takes well under a
millisecond. Spark starts no task of a barrier stage until it can start them all,
so a stage needs as many task slots as it has tasks (``tasks=``, default: the
leaves, at most the slots).

Why not Structured Streaming: its stateful operators keep state per grouping key and
meet only at micro-batch ends, with no channel between keys inside a batch; a leaf
cannot wait there for its parent. The design that fits the model: leaves as keys
of a stateful operator, each synchronizing event closing a micro-batch; at the end
of a batch the leaves emit their states as rows, the driver (``foreachBatch``) joins
them, applies the batch's synchronizing events and forks, and the forked states
enter the next batch as input rows that replace the leaves' states. It costs one
micro-batch (seconds) per synchronizing event; it is not built.

Cost: one pass over the frame to split it and collect the synchronizing events, a
shuffle of the leaves' events, then the protocol (:mod:`qre.runtime.dgs`); outputs
are collected to the driver.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import threading
from collections import Counter, defaultdict
from collections.abc import Callable, Hashable, Sequence
from multiprocessing.connection import Client, Listener, wait
from typing import Any

from dt.dgs.plan import Plan, validate
from dt.dgs.spec import Event, Spec
from qre.runtime.dgs.host import Host, local_packets
from qre.runtime.dgs.inputs import InputError, check_instance
from qre.runtime.dgs.simulate import Result
from qre.runtime.dgs.worker import WorkerRuntime

log = logging.getLogger(__name__)

BATCH = 1024


def run_plan(spec: Spec, plan: Plan, frame: Any, *, stream: str = "stream", time: str = "time",
             tag: str = "tag", payload: str | None = "payload",
             parse_tag: Callable[[Any], Hashable] | None = None,
             stream_order: Sequence[Hashable] | None = None, tasks: int | None = None,
             timeout: float = 600.0) -> Result:
    """Run ``plan`` on the events of ``frame`` (one row an event: its stream, time, tag
    and payload columns; an array tag is a tuple, ``parse_tag`` turns the column's value
    into the specification's tag); the outputs in event order.

    Where times tie, events are in the order of their streams in ``stream_order``
    (default: the plan's streams sorted by ``repr``), as the sequential specification
    sees them."""
    validate(plan, spec)
    session = frame.sparkSession
    context = session.sparkContext
    owner = plan.owner()
    leaves = plan.leaves()
    slots = tasks or _slots(context)
    task_of = {leaf: n % max(min(slots, len(leaves)), 1) for n, leaf in enumerate(leaves)}
    part = {(itag.tag, itag.stream): task_of.get(owner[itag], -1) for itag in owner}
    names = sorted({itag.stream for itag in owner}, key=repr)
    if stream_order is not None:
        missing = set(names) - set(stream_order)
        if missing:
            raise ValueError(f"stream_order lacks the plan's streams {sorted(missing, key=repr)}")
        names = list(stream_order)
    rank = {name: n for n, name in enumerate(names)}
    columns = [stream, time, tag] + ([payload] if payload else [])
    rows = frame.select(*columns).rdd.map(lambda row: _keyed(row, part, parse_tag))

    inner = rows.filter(lambda pair: pair[0] < 0).collect()
    unknown = [r for p, r in inner if p == -2]
    if unknown:
        s, t, g, _ = unknown[0]
        raise InputError(f"stream {s!r}, time {t!r}: no worker of the plan handles tag {g!r} "
                         "on this stream")
    inner_names = [w.name for w in plan.workers() if w.children]
    key = secrets.token_bytes(16)
    listener = Listener(("127.0.0.1" if _local(context) else _driver_host(context), 0),
                        authkey=key)
    address = listener.address
    count = len(set(task_of.values()))
    leaf_rows = rows.filter(lambda pair: pair[0] >= 0).partitionBy(count, lambda p: p)
    remote = address if inner_names else None
    job = _Job(leaf_rows.barrier().mapPartitions(
        lambda it: _task(it, spec, plan, task_of, names, rank, remote, key)))
    job.start()
    log.info("DGS on Spark: %d leaves in %d barrier tasks, %d synchronizing events in the "
             "driver", len(leaves), count, len(inner))
    connections: dict[int, Any] = {}
    try:
        driver_outputs = _drive(spec, plan, inner_names, [r for _, r in inner], names, rank,
                                listener, connections, count, task_of, job, timeout)
        job.join()  # the tasks may still read their input: keep their sockets open
    finally:
        listener.close()
        for conn in connections.values():
            conn.close()
    return Result.of(driver_outputs + job.result(), Counter())


def _keyed(row: Any, part: dict, parse_tag: Callable | None) -> tuple[int, tuple]:
    values = tuple(row)
    tag = _hashable(values[2]) if parse_tag is None else parse_tag(values[2])
    event = (values[0], values[1], tag, values[3] if len(values) > 3 else None)
    return part.get((tag, values[0]), -2), event


def _hashable(value: Any) -> Hashable:
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    return value


def _streams(rows: list[tuple], names: list) -> dict:
    """Events by stream in time order (equal times in a stream: :func:`check_instance`'s
    error)."""
    grouped: dict[Hashable, list] = defaultdict(list)
    for s, t, g, p in rows:
        grouped[s].append(Event(g, p, t))
    streams = {name: sorted(grouped.get(name, ()), key=lambda e: e.time) for name in names}
    check_instance(streams)
    return streams


def _drive(spec: Spec, plan: Plan, inner: list, rows: list, names: list, rank: dict,
           listener: Listener, connections: dict, count: int, task_of: dict, job: _Job,
           timeout: float) -> list:
    """The driver's side: accept the tasks (into ``connections``), run the inner
    workers, route messages."""
    threading.Thread(target=_accept, args=(listener, count, connections), daemon=True).start()
    if not inner:
        return []

    def send(receiver: Hashable, messages: list) -> None:
        connections[task_of[receiver]].send((receiver, messages))

    host = Host({n: WorkerRuntime(spec, plan, n) for n in inner}, send)
    waited = 0.0
    while len(connections) < count:
        job.raise_if_failed()
        if waited > timeout:
            raise TimeoutError(f"the Spark tasks did not connect within {timeout} s")
        threading.Event().wait(0.05)
        waited += 0.05
    host.start()
    for packet in local_packets(plan, set(inner), _streams(rows, names), BATCH, rank):
        for receiver, messages in packet.items():
            host.deliver(receiver, messages)
    while not host.done():
        job.raise_if_failed()
        for conn in wait(list(connections.values()), timeout=0.5):
            try:
                receiver, messages = conn.recv()
            except EOFError:
                continue  # the task ended (or failed: the job says which)
            host.deliver(receiver, messages)
    return host.outputs()


def _accept(listener: Listener, count: int, connections: dict) -> None:
    for _ in range(count):
        try:
            conn = listener.accept()
        except OSError:  # closed: the run ended or failed
            return
        index = conn.recv()
        connections[index] = conn


def _task(rows: Any, spec: Spec, plan: Plan, task_of: dict, names: list, rank: dict,
          address: Any, key: bytes) -> Any:
    """A barrier task: its leaves over its partition's events, talking to the driver."""
    from pyspark import BarrierTaskContext

    index = BarrierTaskContext.get().partitionId()
    leaves = [leaf for leaf, n in task_of.items() if n == index]
    streams = _streams([r for _, r in rows], names)
    conn = None
    if address is not None:  # a plan of one worker has no parent to talk to
        conn = Client(address, authkey=key)
        conn.send(index)
    host = Host({leaf: WorkerRuntime(spec, plan, leaf) for leaf in leaves},
                lambda receiver, messages: conn.send((receiver, messages)))
    host.start()
    for packet in local_packets(plan, set(leaves), streams, BATCH, rank):
        for receiver, messages in packet.items():
            host.deliver(receiver, messages)
        while conn is not None and conn.poll():
            host.deliver(*conn.recv())
    while not host.done():
        host.deliver(*conn.recv())
    if conn is not None:
        conn.close()
    yield from host.outputs()


class _Job(threading.Thread):
    """The barrier stage, collected in a thread while the driver routes messages."""

    def __init__(self, rdd: Any) -> None:
        super().__init__(daemon=True, name="dgs-spark-job")
        self.rdd = rdd
        self.outputs: list | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.outputs = self.rdd.collect()
        except BaseException as error:  # raised in the caller's thread
            self.error = error

    def raise_if_failed(self) -> None:
        if self.error is not None:
            raise self.error

    def result(self) -> list:
        self.raise_if_failed()
        return self.outputs or []


def _local(context: Any) -> bool:
    return context.master.startswith("local")


def _driver_host(context: Any) -> str:
    return context.getConf().get("spark.driver.host", "127.0.0.1")


def _slots(context: Any) -> int:
    """Task slots: N of local[N] (local[*]: the cores), else Spark's default parallelism.

    >>> class Local:
    ...     master, defaultParallelism = "local[3]", 8
    >>> _slots(Local())
    3
    """
    found = re.fullmatch(r"local(?:\[(\*|\d+)(?:,\s*\d+)?\])?", context.master)
    if found is None:
        return context.defaultParallelism
    count = found.group(1)
    if count is None:
        return 1
    return (os.cpu_count() or 1) if count == "*" else int(count)
