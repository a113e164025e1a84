"""Seed 003 §4.5 in miniature: the DGS applications against the number of workers
(issue 25; the seed's Figs 20, 22, 23).

Run (from the repository root)::

    .venv/bin/python benchmarks/dgs_applications.py [--events 100000] [--work 0 20]

(a few minutes on 2 cores) and writes benchmarks/RESULTS.md, section
"dgs_applications" (``--output``).

Applications (:mod:`dt.dgs.examples`), laid out as the seed's artifact lays them out:
per parallel stream ``--events`` events at times 1, 2, 3, ...;

* value barrier (event-based windowing): two value streams, a barrier stream with a
  barrier every 1,000 time units and a heartbeat every 100;
* fraud detection: two transaction streams, a rule stream as the barriers;
* page-view join: two users, each with a page-view stream (an event each time unit),
  a read every 1,000 and an address update every 10,000 with heartbeats every 100;
* key counter (Figure 15): two keys, each with an increment stream and a read-reset
  every 1,000.

Each application runs sequentially (the specification's ``update`` over the streams
merged by time — the merge included, as the runtimes get separate streams too), on
the process runtime with the optimizer's plan for 1 and 2 workers (leaves), and, at
no extra work, on Spark (local[2], data at rest: leaves as barrier tasks); the value
barrier also as a broadcast-style Spark job (barrier times broadcast to every
partition of the values, which sum per window, then a group-by): what a Spark user
writes when the dependence is that simple. Every run's outputs are compared with the
sequential ones (they must be equal, in event order).

``--work`` adds that many microseconds of computation to each event's update (a
model's score, a parse; seed 000's per-tuple cost knob): the protocol costs a few
microseconds an event, so parallelism pays once the work is heavier than that.
Beyond 2 workers the table projects from the two measurements (t(1) = s + l,
t(2) = s + l/2, t(N) = s + l/N): a projection, not a measurement.

Latency against heartbeats (§4.4.4): a flagged transaction leaves its worker only
once the rule stream is known to have no earlier rule — the rule stream's heartbeat
period bounds its latency from below. Measured in event time: all workers in one
process, the input fed in time order one item at a time, each output's latency the
input time when it appeared minus its event's time; and the process runtime's
throughput at each heartbeat period (a heartbeat is a message).
"""

from __future__ import annotations

import argparse
import ast
import functools
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
from results import RESULTS, write_section

from dt.dgs import examples
from dt.dgs.optimizer import optimize
from dt.dgs.spec import Event, Spec
from qre.runtime.dgs.host import Host, local_packets
from qre.runtime.dgs.inputs import INF, Heartbeat, input_rates, ranks, sequential_input
from qre.runtime.dgs.parallel import run_parallel
from qre.runtime.dgs.worker import WorkerRuntime

PROJECTED = (4, 8, 16)


def _burn(n: int) -> int:
    x = 1
    for _ in range(n):
        x = (x * 1103515245 + 12345) & 0xFFFFFFFF
    return x


@functools.cache
def _loop_seconds() -> float:
    """One loop of :func:`_burn`, best of five timings (measured once per run)."""
    best = math.inf
    for _ in range(5):
        start = time.perf_counter()
        _burn(200_000)
        best = min(best, (time.perf_counter() - start) / 200_000)
    return best


def _burner(micros: float) -> Callable[[], int]:
    """A function that computes for about ``micros`` microseconds."""
    loops = int(micros * 1e-6 / _loop_seconds())
    return lambda: _burn(loops)


def with_work(spec: Spec, micros: float) -> Spec:
    """``spec`` with ``micros`` of extra computation in every update."""
    if micros <= 0:
        return spec
    burn = _burner(micros)

    def heavy(update):
        def update_with_work(state, event):
            burn()
            return update(state, event)
        return update_with_work
    return replace(spec, states=tuple(replace(s, update=heavy(s.update)) for s in spec.states))


def barrier_streams(events: int, kind: str, value_tag: str, barrier_tag: str,
                    beat: int = 100, every: int = 1000) -> dict:
    streams = {barrier_tag: [Event(barrier_tag, None, t) if t % every == 0 else Heartbeat(t)
                             for t in range(beat, events + 1, beat)]}
    for i in range(2):
        streams[f"{kind}{i}"] = [Event((value_tag, i), (t * 7919 + i) % 5000, t)
                                 for t in range(1, events + 1)]
    return streams


def page_view_streams(events: int) -> dict:
    streams = {}
    for user in range(2):
        streams[f"views{user}"] = [Event(("view", user), t % 97, t) for t in range(1, events + 1)]
        streams[f"gets{user}"] = [Event(("get", user), None, t)
                                  for t in range(1000, events + 1, 1000)]
        streams[f"updates{user}"] = [Event(("update", user), t, t) if t % 10_000 == 0
                                     else Heartbeat(t) for t in range(100, events + 1, 100)]
    return streams


def counter_streams(events: int) -> dict:
    streams = {}
    for key in range(2):
        streams[f"inc{key}"] = [Event(("i", key), None, t) for t in range(1, events + 1)]
        streams[f"reads{key}"] = [Event(("r", key), None, t) if t % 1000 == 0 else Heartbeat(t)
                                  for t in range(100, events + 1, 100)]
    return streams


APPLICATIONS = {
    "value barrier": (examples.value_barrier,
                      lambda n: barrier_streams(n, "A", "a", "b")),
    "fraud detection": (examples.fraud_detection,
                        lambda n: barrier_streams(n, "T", "tx", "rule")),
    "page-view join": (examples.page_view_join, page_view_streams),
    "key counter": (examples.key_counter, counter_streams),
}


def timed(run: Callable[..., list], *args: object, repeat: int = 1) -> tuple[float, list]:
    """The best wall time of ``repeat`` calls ``run(*args)``, and the outputs."""
    best, outputs = float("inf"), []
    for _ in range(repeat):
        start = time.perf_counter()
        outputs = run(*args)
        best = min(best, time.perf_counter() - start)
    return best, outputs


def sequential(spec: Spec, streams: dict) -> list:
    return spec.run(sequential_input(streams))


def on_processes(spec: Spec, streams: dict, workers: int) -> list:
    plan = optimize(spec, input_rates(streams), workers)
    return run_parallel(spec, plan, streams).outputs


def on_spark(spec: Spec, streams: dict, spark) -> list:
    from spark_udf.dgs import run_plan
    rows = [(name, e.time, repr(e.tag), e.payload) for name, items in streams.items()
            for e in items if isinstance(e, Event)]
    frame = spark.createDataFrame(rows, "stream string, time long, tag string, payload long")
    plan = optimize(spec, input_rates(streams), 2)
    return run_plan(spec, plan, frame, parse_tag=ast.literal_eval,
                    stream_order=list(streams)).outputs


def broadcast_barrier(streams: dict, spark) -> list:
    """Value barrier as a Spark user writes it: barrier times broadcast to the values'
    partitions, sums per window, a group-by."""
    import pandas as pd
    barriers = np.array([e.time for e in streams["b"] if isinstance(e, Event)])
    shared = spark.sparkContext.broadcast(barriers)
    rows = [(e.time, e.payload) for name, items in streams.items() if name != "b"
            for e in items]
    values = spark.createDataFrame(rows, "time long, value long").repartition(2)

    def windows(frames):
        ends = shared.value
        for frame in frames:
            window = np.searchsorted(ends, frame["time"].to_numpy(), side="right")  # b first
            part = pd.DataFrame({"window": window, "value": frame["value"]})
            yield part.groupby("window", as_index=False)["value"].sum()

    sums = (values.mapInPandas(windows, "window long, value long")
            .groupBy("window").sum("value").toPandas())
    total = dict(zip(sums["window"], sums["sum(value)"], strict=True))
    return [("sum", int(t), int(total.get(w, 0))) for w, t in enumerate(barriers)]


def latency(spec: Spec, streams: dict) -> list[float]:
    """Event-time latency of each output: all workers in one host, the input in time
    order; an output's latency is the input time when it appears minus its event's."""
    plan = optimize(spec, input_rates(streams), 2)
    host = Host({w.name: WorkerRuntime(spec, plan, w.name) for w in plan.workers()},
                lambda receiver, messages: None)
    host.start()
    rank = ranks(streams)
    seen = {name: 0 for name in host.runtimes}
    found: list[float] = []
    for packet in local_packets(plan, set(host.runtimes), streams, 1, rank):
        now = max(m[2][-1][0][0] if m[0] == "events" else m[2][0]
                  for messages in packet.values() for m in messages)
        for receiver, messages in packet.items():
            host.deliver(receiver, messages)
        for name, runtime in host.runtimes.items():
            fresh = runtime.outputs[seen[name]:]
            seen[name] = len(runtime.outputs)
            found += [now - key[0] for key, out in fresh if out[0] == "flag" and now != INF]
    return found


def _burn_many(n: int) -> int:
    return _burn(n)


def ceiling(repeat: int) -> float:
    """What two processes give here for perfectly parallel work: two equal burns one after
    the other against side by side (median of ``repeat`` rounds)."""
    import multiprocessing
    loops = int(0.4 / _loop_seconds())
    ratios = []
    with multiprocessing.get_context("fork").Pool(2) as pool:
        pool.map(_burn_many, [1000, 1000])
        for _ in range(repeat):
            start = time.perf_counter()
            _burn(loops)
            _burn(loops)
            alone = time.perf_counter() - start
            start = time.perf_counter()
            pool.map(_burn_many, [loops, loops])
            ratios.append(alone / (time.perf_counter() - start))
    return statistics.median(ratios)


def measure(args: argparse.Namespace) -> str:
    lines = [
        "## dgs_applications: seed 003 §4.5, the DGS applications against workers (issue 25)",
        "",
        f"`.venv/bin/python benchmarks/dgs_applications.py --events {args.events} --work "
        f"{' '.join(f'{w:g}' for w in args.work)} --work-events {args.work_events} "
        f"--repeat {args.repeat}`. Events per parallel stream: {args.events:,} at "
        f"no extra work, {args.work_events:,} with; times in seconds, medians of "
        f"{args.repeat} rounds (a round runs the three one after the other; the speed-up "
        "is the median of the rounds' ratios); every run's outputs equal the sequential "
        "ones. The machine's ceiling: two processes doing equal pure-Python work side by "
        f"side finish {ceiling(args.repeat):.2f}x as fast as one after the other (a "
        "virtual machine's two cores; the speed-ups below are against it, not 2x).",
        "",
        "| application | work µs/event | events | sequential | 1 worker | 2 workers | "
        "speed-up 2 vs seq | projected 4 / 8 / 16 | Spark DGS (local[2]) | Spark broadcast |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    spark = None
    if not args.no_spark:
        from spark_udf import local_session
        spark = local_session("dgs-bench", master="local[2]")
    for name, (make, layout) in APPLICATIONS.items():
        for work in args.work:
            n = args.events if work == 0 else args.work_events
            streams = layout(n)
            spec = with_work(make(), work)
            events = sum(isinstance(i, Event) for items in streams.values() for i in items)
            # Paired rounds (sequential, 1 worker, 2 workers, one after the other): this
            # machine's speed drifts by tens of percent, and a ratio within a round
            # cancels most of it. Medians over the rounds.
            rounds = []
            for _ in range(args.repeat):
                t_seq, expected = timed(sequential, spec, streams)
                t_one, got_one = timed(on_processes, spec, streams, 1)
                t_two, got_two = timed(on_processes, spec, streams, 2)
                assert got_one == expected and got_two == expected, (name, work)
                rounds.append((t_seq, t_one, t_two))
            t_seq, t_one, t_two = (statistics.median(r[k] for r in rounds) for k in range(3))
            ratio = statistics.median(r[0] / r[2] for r in rounds)
            leaf = 2 * (t_one - t_two)
            serial = t_one - leaf
            projected = " / ".join(f"{serial + leaf / k:.2f}" if leaf > 0 else "—"
                                   for k in PROJECTED)
            spark_cell = broadcast_cell = "—"
            if spark is not None and work == 0:
                t, got = timed(on_spark, spec, streams, spark)
                assert got == expected, (name, "spark")
                spark_cell = f"{t:.2f}"
                if name == "value barrier":
                    t, got = timed(broadcast_barrier, streams, spark)
                    assert got == expected, (name, "broadcast")
                    broadcast_cell = f"{t:.2f}"
            lines.append(f"| {name} | {work:g} | {events:,} | {t_seq:.2f} | {t_one:.2f} | "
                         f"{t_two:.2f} | {ratio:.2f}x | {projected} | "
                         f"{spark_cell} | {broadcast_cell} |")
            print(lines[-1], flush=True)
    lines += ["", "The seed (Figs 20, 23: Flink, Timely and its Erlang DGSStream on up to 20 "
              "EC2 nodes) reports the maximum throughput of these applications growing with the "
              "number of nodes, near linearly for the value barrier and fraud detection, with "
              "its synchronization plans; the figures' numbers are not in the text we have. "
              "Here, 2 cores: the protocol costs 1–3 µs an event in Python (its worker reads "
              "its own stream, buffers, releases runs), so with no extra work a plan is slower "
              "than the sequential program (which still pays for merging the streams by time); "
              "from about 20 µs of work an event two workers tend to beat it, and more work "
              "gains more, up to the machine's ceiling (measured above; runs of the same "
              "command differ by tens of percent on this machine). "
              "Spark (data at rest, local[2]) pays a "
              "job's start, the split of the frame and a shuffle: seconds, flat in these "
              "sizes; the "
              "broadcast-style job for the value barrier is the native way where the "
              "dependence is as simple as a barrier (it has no answer for the fraud "
              "detection's retraining on every transaction, which the plan runs).", "",
              "Latency against the rule stream's heartbeats (fraud detection, "
              f"{args.events:,} transactions per stream, a rule every 1,000 time units; "
              "latency in time units of the flagged transactions' outputs):", "",
              "| rule heartbeat period | latency median | latency p90 | 2 workers s |",
              "|---|---|---|---|"]
    for period in (1000, 100, 10):
        streams = barrier_streams(args.events, "T", "tx", "rule", beat=period)
        spec = examples.fraud_detection()
        waits = latency(spec, streams)
        t, got = timed(on_processes, spec, streams, 2)
        assert got == sequential(spec, streams)
        lines.append(f"| {period} | {statistics.median(waits):.0f} | "
                     f"{np.percentile(waits, 90):.0f} | {t:.2f} |")
        print(lines[-1], flush=True)
    lines += ["", monitor_table(args.monitor_events)]
    return "\n".join(lines)


SINCE_R = ("alphabet i, r; split(or(eps(0), split(any_word(), atom(r, 0), snd)), "
           "split(iter(atom(i, cur), 0, +), atom(r, 0), fst), snd)")


def monitor_table(n: int) -> str:
    """A monitor as a DGS program: the sum of the i values since the last r, read at
    each r, integer values; the sequential engines against workers=2, for r at 1%,
    0.1% and 0.01% of the events."""
    from qre import qre
    m = qre(SINCE_R)
    rows = ["Monitor `" + SINCE_R.split("; ")[1] + f"` (the sum of i since the last r, read at "
            f"r), {n:,} events, integer values: `Monitor.run` against `run(..., workers=2)` "
            "(the DT's derivation: i parallel, a fold by +; a leaf advances its runs with the "
            "monitor's kernel; outputs equal bit for bit).", "",
            "| r among the events | sequential, kernel (s) | sequential, reference (s) | "
            "workers=2 (s) | workers=2 events/s |", "|---|---|---|---|---|"]
    rng = np.random.default_rng(0)
    values = rng.integers(-1000, 1000, n).astype(float)
    for rate in (0.01, 0.001, 0.0001):
        tags = (rng.random(n) < rate).astype(np.int8)
        m.run(tags[:10], values[:10])  # load the kernel outside the timing
        expected = m.run(tags, values)
        cells = []
        for kwargs in ({}, {"engine": "reference"}, {"workers": 2}):
            t, out = timed(functools.partial(m.run, tags, values, **kwargs))
            assert np.array_equal(out.status, expected.status)
            assert np.array_equal(out.value, expected.value, equal_nan=True)
            cells.append(t)
        rows.append(f"| {rate:.2%} | {cells[0]:.2f} | {cells[1]:.2f} | {cells[2]:.2f} | "
                    f"{n / cells[2]:,.0f} |")
        print(rows[-1], flush=True)
    rows += ["", "Each synchronizing event costs a round trip of requests, states and forks "
             "through the processes' queues (about a millisecond here): at 1% of the events "
             "they bound the run; between them the protocol's Python costs a few microseconds "
             "an event. The compiled sequential kernel stays 20x or more faster: a plan pays "
             "on this machine only for heavy updates (the table above), not for a DT's "
             "microsecond steps."]
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--work-events", type=int, default=10_000)
    parser.add_argument("--work", type=float, nargs="+", default=[0, 20])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--monitor-events", type=int, default=200_000)
    parser.add_argument("--no-spark", action="store_true")
    parser.add_argument("--output", default=str(RESULTS))
    args = parser.parse_args()
    write_section(Path(args.output), "dgs_applications", measure(args))


if __name__ == "__main__":
    main()
