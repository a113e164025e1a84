"""An unkeyed monitor run by a DGS plan: ``Monitor.run(tags, values, workers=N)``.

:func:`dt.dgs.monitors.derive` finds the monitor's parallel tags (their events leave
the outputs undefined and fold into sums, counts, minima or maxima) and
:func:`dt.dgs.monitors.monitor_spec` the specification. Here the events are laid out
as input streams — the synchronizing events on one, the parallel ones dealt to
``workers`` streams in blocks of ``block`` — with their positions as times, the
optimizer picks the plan (the synchronizing stream at the root, one leaf a parallel
stream) and :func:`~qre.runtime.dgs.parallel.run_parallel` runs it. The outputs are
put back in place: undefined at parallel events, the DT's at synchronizing ones.

The result is the sequential run's bit for bit. Where it could not be — no tag is
parallel, one worker, a run with ``times`` (the plan needs the input order), records
as values (``Monitor.run`` decides those), or data on which a fold is not exact in
another order (a synchronizing event reports it) — the monitor runs sequentially,
and the log says why (INFO).

Cost: a leaf advances its runs of parallel events with the monitor's compiled kernel
(a session resumed from the state, :meth:`Monitor.session`) and checks the folds'
exactness with numpy; synchronizing events are the reference evaluator's steps, and
the protocol adds its few microseconds an event in Python — still far slower per event
than the sequential kernel (``benchmarks/dgs_applications.py`` measures it).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import numpy as np

from dt.dgs.monitors import INEXACT, KERNEL_RUN, decoded, derive, monitor_spec
from dt.dgs.optimizer import InputStream, optimize
from dt.dgs.plan import Plan
from dt.dgs.spec import Event, Spec
from dt.values import decode, encode

from ..output import Output
from .inputs import input_rates
from .parallel import run_parallel
from .simulate import Result

log = logging.getLogger(__name__)

BLOCK = 4096


def run_monitor(monitor: Any, codes: np.ndarray, data: np.ndarray, *, workers: int,
                sequential: Callable[[], Output], block: int = BLOCK,
                runner: Callable[[Spec, Plan, dict], Result] = run_parallel,
                kernel_run: int = KERNEL_RUN) -> Output:
    """The outputs of ``monitor`` on the events (tag codes, one value each) from a DGS
    plan of ``workers`` leaves where the DT allows one, else ``sequential()``.
    ``runner(spec, plan, streams)`` runs the plan (the tests pass a simulation);
    ``kernel_run`` is the shortest run of events a leaf gives the kernel."""
    derivation = derive(monitor.dt)
    if not derivation.parallel:
        log.info("running sequentially: no tag can run in parallel (%s)", derivation.why_not())
        return sequential()
    parallel = set(derivation.parallel)
    names = [monitor.alphabet[code] for code in codes.tolist()]
    count = sum(name in parallel for name in names)
    block = max(1, min(block, -(-count // workers)))  # every worker gets a share
    streams: dict[str, list[Event]] = {"sync": []}
    streams.update({f"part{k}": [] for k in range(workers)})
    dealt = 0
    for position, (tag, value) in enumerate(zip(names, data.tolist(), strict=True)):
        if tag in parallel:
            streams[f"part{(dealt // block) % workers}"].append(Event(tag, value, position))
            dealt += 1
        else:
            streams["sync"].append(Event(tag, value, position))
    spec = monitor_spec(derivation, _advance(monitor), kernel_run)
    # The synchronizing stream is given rate 0: the optimizer's greedy removal then puts
    # it at the root however often it synchronizes (the seed's heuristic assumes rare).
    rates = [InputStream(s.name, dict.fromkeys(s.rates, 0)) if s.name == "sync" else s
             for s in input_rates(streams)]
    plan = optimize(spec, rates, workers)
    if len(plan.leaves()) < 2:
        log.info("running sequentially: one leaf (%d events of parallel tags)", count)
        return sequential()
    monitor.session().feed(codes[:1], data[:1])  # its kernel loaded before workers fork
    result = runner(spec, plan, streams)
    if any(out == INEXACT for out in result.outputs):
        log.info("running sequentially: a fold is not exact in another order on this data")
        return sequential()
    width = len(monitor.outputs)
    status = np.zeros((len(codes), width), np.uint8)
    value = np.full((len(codes), width), np.nan)
    for key, out in result.keyed:
        status[key[0]], value[key[0]] = decoded(out)
    if width == 1:
        return Output(status[:, 0], value[:, 0], monitor.outputs)
    return Output(status, value, monitor.outputs)


def _advance(monitor: Any) -> Callable[[tuple, str, np.ndarray], tuple]:
    """A configuration advanced over events of one tag by the monitor's kernel."""
    def advance(config: tuple, tag: str, values: np.ndarray) -> tuple:
        status, value = encode(config)
        session = monitor.session(state=np.concatenate([status.astype(np.float64), value]))
        session.feed(np.full(len(values), monitor.alphabet.index(tag), np.int16), values,
                     derive=False)
        state = session.state
        return tuple(decode(state[:len(config)].astype(np.uint8), state[len(config):]))
    return advance
