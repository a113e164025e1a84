"""Running a data transducer over an event stream: :class:`Monitor` and :class:`Output`.

``Monitor.from_dt(d)`` wraps a DT (hand-written, read from JSON, or built with
the constructions of §5.2) and runs it through the API of docs/API.md:
``m.run(tags, values)`` returns one output per event, ``m.initial`` is the
output on the empty stream, ``m.stats`` the sizes of §5.1 (Theorem 5.1).

Semantics (seed 003, §5.1). The initial vector gives 0.0 to every initial
state; the configuration after the empty stream is Δ_i(x), and each event
(σ, d) applies Δ_σ(c, d) (Equation 1, least fixpoint). The output after an
event is the configuration restricted to the final states F.

Output encoding (API.md "Values and outputs"): ``status`` is ``uint8``
(0 undefined ⊥, 1 defined, 2 conflict ⊤) and ``value`` is ``float64``, NaN
where ``status != 1``. With exactly one final state both arrays are 1-D
(one entry per event); with any other number of final states they are 2-D,
shape ``(n_events, n_final)``, columns in the order of ``dt.final``, named by
``Output.names`` (= :attr:`Monitor.outputs`: the names the user gave, e.g. the
keys of ``qre({"mean": ..., "sd": ...})``). :mod:`qre.runtime.output` names the
columns of a frame of outputs.

Events. ``tags`` are strings, a pandas Categorical, or an integer array
of codes into ``m.alphabet`` (a numpy one is the fast path; a code outside
``0..len(alphabet)-1`` is always an error). ``values`` is a float sequence or
1-D array (``cur``), or a dict / DataFrame of float columns (``cur.FIELD``);
every column must have one entry per tag, and columns the DT does not read
are otherwise ignored. Any column may also be Arrow data — pyarrow arrays and
tables, polars Series and DataFrames (records) —, converted at the boundary by
:mod:`qre.runtime.columns`. Data are IEEE float64: NaN and ±inf are ordinary
defined values and flow through the terms (``nan + 1`` is NaN with status 1);
only ⊥/⊤ come from the DT's structure. Nullable pandas and Arrow
columns turn missing entries (``pd.NA``, nulls) into NaN; anything that is not a
number (a string, ``None`` in a Python list, a date) is an error naming its
row (0-based position) and column. A missing tag is an error naming its
position, unless unknown tags are skipped.

Unknown tags. A tag outside the alphabet is a ``ValueError`` naming the tag
and its position. With ``unknown_tags="skip"`` such an event is dropped: the
configuration is left unchanged and its output row repeats the previous
output (the initial output for a leading skipped event).

Optimization. ``Monitor.from_dt`` (and :func:`qre.qre`) run the DT through
:func:`codegen.optimize.optimize` unless ``optimize=False``: the result gives
the same outputs after every prefix, status and value, with fewer states and
transitions. ``m.dt`` is the DT every engine runs (so a ``Session.state`` is
the same for all engines); ``m.unoptimized`` the DT before, and ``m.stats``
gives the sizes of both.

Engines. ``"codegen"`` runs a Numba kernel generated for this query
(:mod:`codegen.generated`; compiled on first use — seconds for a large DT —
and cached on disk by a hash of the DT, so later processes load it);
``"table"`` runs flat transition tables in one Numba kernel compiled once for
all queries (:mod:`codegen.kernels`); ``"reference"`` is the worklist
interpreter of Figure 25 (:mod:`dt.reference`), the oracle. All give the same
outputs bit for bit. ``"auto"`` (the default) picks the fastest engine that is
ready: ``"codegen"`` if its kernel is compiled (in this process or in the disk
cache), else ``"table"``; :meth:`Monitor.prepare` compiles an engine ahead of
use, e.g. ``m.prepare("codegen")`` before a long run, or
``m.prepare("codegen", background=True)`` to compile in another process while
``"auto"`` runs the table engine (seconds for a DT of a thousand states, more beyond).
A run through ``"auto"`` of at least :data:`AUTO_COMPILE_EVENTS` events starts that
background compile itself when the kernel is not ready. For a run that is its process's
only one, as ``qre run``'s, ``resolve_engine("auto", events=n)`` picks the reference
engine when the run is small (:data:`SMALL_RUN`): then interpreting costs less than
importing Numba and loading a kernel.
"""

from __future__ import annotations

import logging
import numbers
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from dt import reference
from dt.model import DT
from dt.terms import EventValue
from dt.values import XValue, decode, encode
from dt.windows import TICK

from ..language.ast import Aggregate, WindowSignal
from ..language.clock import Clock
from ..language.derive import Derivation
from ..language.patterns import WITHIN_PREFIX
from . import columns
from .engines import ENGINES
from .keys import group_by_key, key_offsets, stream_ids_beside
from .order import processing_order, sortable_times
from .output import Output, check_output_names
from .tag_codes import tag_codes
from .times import MICROSECONDS
from .window_contents import WindowContents
from .window_fields import DataReads, WindowPlan, check_runnable, without

__all__ = ["AUTO_COMPILE_EVENTS", "ENGINES", "SMALL_RUN", "Monitor", "Output", "Session",
           "Stats"]

log = logging.getLogger(__name__)

FlatConfig = tuple[np.ndarray, np.ndarray]
"""A configuration as ``(status uint8[Q], value float64[Q])`` over ``dt.states``."""


class _ReferenceEngine:
    """The Figure 25 interpreter behind the interface of :class:`codegen.kernels.TableEngine`."""

    def __init__(self, dt: DT) -> None:
        self.dt = dt
        self.final = [dt.state_index[f] for f in dt.final]

    def initial_config(self, x: list[XValue]) -> FlatConfig:
        return encode(reference.initial_config(self.dt, x))

    def advance(self, status: np.ndarray, value: np.ndarray, codes: np.ndarray,
                data: np.ndarray | Mapping[str, np.ndarray], *, valid_codes: bool = True
                ) -> tuple[np.ndarray, ...]:
        """Events from a configuration: the final one and one output row per event (the
        codes are the Monitor's, hence valid: ``valid_codes`` is the compiled engines'
        keyword)."""
        dt, n = self.dt, len(codes)
        if isinstance(data, Mapping):
            def at(k: int) -> EventValue:
                return {name: float(col[k]) for name, col in data.items()}
        else:
            def at(k: int) -> EventValue:
                return float(data[k])
        config = tuple(decode(status, value))
        out_status, out_value = _empty_output(n, len(dt.final))
        row_status, row_value = status[self.final], value[self.final]
        for k in range(n):
            code = int(codes[k])
            if code >= 0:  # a skipped event (-1) keeps the configuration and the output
                config = reference.step(dt, config, dt.alphabet[code], at(k))
                row_status, row_value = encode(reference.outputs(dt, config))
            out_status[k], out_value[k] = row_status, row_value
        return (*encode(config), out_status, out_value)

_UNKNOWN_TAGS = ("error", "skip")

AUTO_COMPILE_EVENTS = 1_000_000
"""A run through ``auto`` with at least this many events, whose codegen kernel is not
ready, runs the table engine and starts compiling the kernel in the background (what
``prepare("codegen", background=True)`` does): the runs after it take codegen once the
kernel is ready, and none waits for a compile. A compile takes seconds (DTs of ~1,000
states: 2–6 s, benchmarks/RESULTS.md "codegen-shapes"), which the table engine spends on a
few million events; a smaller run is left as it is (the caller may still prepare)."""

SMALL_RUN = 20_000
"""The most event operations (events × ``Stats.ops_per_event``) that ``auto`` interprets
in a run that is its process's only one (:meth:`Monitor.resolve_engine`): 15 to 30 ms
of the reference engine (1 to 1.5 µs per operation, measured), several times less
than importing Numba and loading a compiled kernel in a fresh process
(benchmarks/cli_cost.py)."""


@dataclass(frozen=True)
class Stats:
    """Sizes of a monitor's DT (seed 003, §5.1 and Theorem 5.1).

    ``states`` |Q|; ``transitions`` |Δ| (an ``eps`` transition counts once);
    ``size`` the DT size of §5.1; ``registers`` the float registers that hold
    a configuration (one per state); ``ops_per_event`` the worst case, over
    the tags σ of the alphabet, of |Δ_σ| plus the term nodes of Δ_σ — the
    transitions that fire on σ (eps ones included) and the operations they
    evaluate, i.e. the per-event work bound of Theorem 5.1.
    """

    states: int
    transitions: int
    size: int
    registers: int
    ops_per_event: int
    identity_size: int | None = None
    """Size of I_α, the identity DT of a base query (linear in the query,
    Theorem 5.7); None for top-level and temporal queries and for DTs."""
    unoptimized_states: int | None = None
    """|Q| before the optimizer (None if the monitor was built with ``optimize=False``)."""
    unoptimized_transitions: int | None = None
    """|Δ| before the optimizer."""
    unoptimized_size: int | None = None
    """The DT size before the optimizer."""


def _stats(dt: DT, identity: DT | None, unoptimized: DT | None) -> Stats:
    per_tag = [
        sum(1 + t.term.size for t in dt.on(tag).transitions) for tag in dt.alphabet
    ]
    return Stats(
        states=len(dt.states),
        transitions=len(dt.transitions),
        size=dt.size,
        registers=len(dt.states),
        ops_per_event=max(per_tag, default=0),
        identity_size=None if identity is None else identity.size,
        unoptimized_states=None if unoptimized is None else len(unoptimized.states),
        unoptimized_transitions=None if unoptimized is None else len(unoptimized.transitions),
        unoptimized_size=None if unoptimized is None else unoptimized.size,
    )


@dataclass(frozen=True)
class Monitor:
    """A DT ready to run over event streams: :func:`qre.qre` or :meth:`from_dt` build one.

    ``dt`` is the DT the engines run (optimized, unless built with
    ``optimize=False``) and ``unoptimized`` the DT before the optimizer (None
    if not optimized); ``identity`` is I_α when the DT was compiled from a
    base query (its size goes into :attr:`stats`); ``source`` the query text
    it came from.
    """

    dt: DT
    identity: DT | None = None
    source: str | None = None
    unoptimized: DT | None = None
    clock: Clock | None = None
    """The clock of a timed query (a period declared, or a window's slide): see
    :meth:`run_timed`."""
    derivation: Derivation | None = None
    """The query's derived tags (``tag NAME = ...;``), applied to every event first."""
    output_names: tuple[str, ...] | None = None
    """The outputs' names as the user chose them (None: the DT's final states as given);
    :attr:`outputs` is the one to read."""
    windows: WindowPlan | None = None
    """The query's sliding windows (``avg_over(2d, cur)``, issue 23) or stored window
    aggregate (``aggregate(median(cur), 1h)``), which a window store computes before the
    DT (:mod:`qre.runtime.window_fields`); None if it has none."""

    @classmethod
    def from_dt(cls, d: DT, alphabet: Sequence[str] | None = None, *, optimize: bool = True,
                identity: DT | None = None, source: str | None = None,
                clock: Clock | None = None, derivation: Derivation | None = None,
                outputs: Sequence[str] | None = None,
                windows: Sequence[WindowSignal | Aggregate] = ()) -> Monitor:
        """A monitor running ``d`` with every initial state set to 0.0 (API.md).

        ``alphabet`` fixes the tag order (the meaning of integer tag codes) and
        may add tags: it must list every tag of ``d.alphabet``. An added tag
        fires only ``d``'s ``eps`` transitions, as in the DT over the larger
        alphabet (§5.1). ``optimize`` runs :func:`codegen.optimize.optimize`
        (same outputs, smaller DT); ``m.dt`` is the DT that runs and
        ``m.unoptimized`` the one before. ``identity`` and ``source`` are
        recorded as given, as are ``clock`` and ``derivation`` (see the class docstring).
        ``windows``: the sliding windows (and stored window aggregate) of the query ``d``
        was compiled from, in the order of the fields that carry them
        (:attr:`qre.language.compiler.Compiled.windows`).
        ``outputs`` names the outputs, one per final state in order (default: the final
        states' names in ``d``; the optimizer renames states, not outputs). A DT
        whose terms read both ``cur`` and ``cur.FIELD`` is refused (:class:`dt.DTError`):
        no event could run it.
        """
        if not isinstance(d, DT):
            raise TypeError(f"Monitor.from_dt takes a dt.DT, got {type(d).__name__}")
        d.check_event_data()  # a DT reading cur and cur.FIELD could never run: say so now
        if alphabet is not None:
            if isinstance(alphabet, str):
                raise TypeError("alphabet is a list of tags, not a single string")
            tags = tuple(alphabet)
            missing = [t for t in d.alphabet if t not in set(tags)]
            if missing:
                raise ValueError(f"alphabet lacks tag(s) of the DT: {', '.join(missing)} "
                                 f"(the DT's alphabet is {', '.join(d.alphabet)})")
            if tags != d.alphabet:
                d = DT(tags, d.states, d.initial, d.final, d.transitions, d.facts)
        names = None if outputs is None else check_output_names(outputs, len(d.final))
        plan = WindowPlan.of(d, windows) if windows else None
        if not optimize:
            return cls(d, identity, source, clock=clock, derivation=derivation,
                       output_names=names, windows=plan)
        from codegen.optimize import optimize as optimize_dt

        start = time.perf_counter()
        optimized = optimize_dt(d)
        log.info("optimized to %d states (size %d) in %.2f s", len(optimized.states),
                 optimized.size, time.perf_counter() - start)
        return cls(optimized, identity, source, unoptimized=d, clock=clock,
                   derivation=derivation, output_names=names, windows=plan)

    # ------------------------------------------------------------------ properties

    @property
    def alphabet(self) -> tuple[str, ...]:
        """The tags; an integer tag code k means ``alphabet[k]``."""
        return self.dt.alphabet

    @property
    def outputs(self) -> tuple[str, ...]:
        """The outputs' names, in order: the columns of a 2-D :class:`Output` and the
        suffixes of ``status_NAME`` / ``value_NAME`` (:func:`qre.runtime.output.result_columns`)."""
        return self.output_names or self._source_dt.final

    @cached_property
    def stats(self) -> Stats:
        """Sizes and per-event work: see :class:`Stats`."""
        return _stats(self.dt, self.identity, self.unoptimized)

    @cached_property
    def _initial_config(self) -> FlatConfig:
        return self._engine("reference").initial_config([0.0] * len(self.dt.initial))

    @cached_property
    def _engines(self) -> dict[str, Any]:
        return {}

    def _engine(self, name: str) -> Any:
        """The engine object for a resolved engine name, built once per monitor."""
        if name not in self._engines:
            if name == "codegen":
                from codegen.generated import CodegenEngine

                self._engines[name] = CodegenEngine(self.dt)
            elif name == "table":
                from codegen.kernels import TableEngine

                self._engines[name] = TableEngine(self.dt)
            else:
                self._engines[name] = _ReferenceEngine(self.dt)
        return self._engines[name]

    def resolve_engine(self, engine: str = "auto", *, events: int | None = None) -> str:
        """The engine a call with ``engine`` runs: ``auto`` is ``codegen`` if its kernel
        is ready (compiled in this process or cached on disk), else ``table`` (a run of at
        least :data:`AUTO_COMPILE_EVENTS` events then starts the kernel's compile in the
        background).

        ``events``: the number of events (clock ticks included) of a run that is its
        process's only one, as ``qre run``'s is. ``auto`` then interprets a small run
        (``reference``: events × ``stats.ops_per_event`` at most :data:`SMALL_RUN`),
        which costs less than importing Numba and loading a kernel. ``run`` and
        ``run_keys`` do not pass it: a process running many small batches would
        interpret every one of them.

        Resolve once and pass the result when calling many times (per key, per
        batch): checking the disk cache costs more than a small run.
        """
        if not isinstance(engine, str):  # an array would compare element-wise
            raise TypeError(f"engine must be a string ({', '.join(ENGINES)}), not "
                            f"{type(engine).__name__}")
        if engine == "auto":
            if events is not None and events * self.stats.ops_per_event <= SMALL_RUN:
                return "reference"
            from codegen.generated import is_ready

            return "codegen" if is_ready(self.dt) else "table"
        if engine in ENGINES:
            return engine
        raise ValueError(f"unknown engine {engine!r}; engines: {', '.join(ENGINES)}")

    def prepare(self, engine: str = "codegen", *,
                background: bool = False) -> threading.Thread | None:
        """Build ``engine`` now (for ``"codegen"``: generate and compile its kernel, or load
        it from the disk cache), so that runs do not wait for it and ``"auto"`` picks it.

        ``background=True`` (codegen): return at once a daemon thread (``join()`` waits)
        that compiles the kernel in another Python process
        (:meth:`codegen.generated.CodegenEngine.compile_apart`: this one's runs keep their
        interpreter lock and core) and then loads it; meanwhile ``"auto"`` runs the table
        engine, and it runs codegen from the first call after the kernel is ready (the
        same outputs bit for bit, and a session's state moves between engines). Started
        once per kernel in a process; a failure is logged and leaves ``"auto"`` on the
        table engine.
        """
        name = self.resolve_engine(engine)
        if background and name == "codegen":
            return self._compile_in_background()
        obj = self._engine(name)
        if name == "codegen":
            obj.compile()
        elif name == "table":
            obj.initial_config([0.0] * len(self.dt.initial))  # loads the shared kernel
        return None

    def _compile_for_large_runs(self, engine: str, chosen: str, events: int) -> None:
        """``auto`` on the table engine for a run of :data:`AUTO_COMPILE_EVENTS` events or
        more: compile the codegen kernel in the background for the runs that follow."""
        if engine == "auto" and chosen == "table" and events >= AUTO_COMPILE_EVENTS:
            self._compile_in_background()

    def _compile_in_background(self) -> threading.Thread:
        """The thread compiling the codegen kernel (started once per kernel: monitors of
        one DT share it)."""
        with _BACKGROUND_LOCK:
            engine = self._engine("codegen")  # made here: _engines is not locked
            thread = _BACKGROUND.get(engine.path)
            if thread is None:
                # The table kernel first, in this thread, so that a table run does not
                # wait for Numba's compiler lock while the codegen kernel loads.
                self.prepare("table")
                thread = threading.Thread(target=_compile_quietly, args=(engine,),
                                          name="qre-codegen-compile", daemon=True)
                _BACKGROUND[engine.path] = thread
                thread.start()
            return thread

    @property
    def _source_dt(self) -> DT:
        """The DT as given or compiled: events are checked against the data *it* reads (the
        optimizer may drop every read of a field, which must not make a missing one legal)."""
        return self.dt if self.unoptimized is None else self.unoptimized

    @property
    def _data_reads(self) -> DT | DataReads:
        """What the user's events must carry: the source DT's reads, or with sliding
        windows their terms' and the rest of the query's (the DT reads the windows'
        values and plain cur as fields that :attr:`windows` adds)."""
        return self._source_dt if self.windows is None else self.windows.reads

    @property
    def initial(self) -> tuple[Any, Any]:
        """``(status, value)`` on the empty stream.

        With one final state: an ``int`` status and a ``float`` value (NaN
        unless defined); otherwise two arrays over :attr:`outputs`.
        """
        return _current_output(self.dt, self._initial_config)

    # ------------------------------------------------------------------ running

    def run(
        self,
        tags: Any,
        values: Any = None,
        *,
        times: Any = None,
        tiebreak: Any = None,
        engine: str = "auto",
        unknown_tags: Literal["error", "skip"] = "error",
        workers: int | None = None,
    ) -> Output:
        """One output per event, aligned with the input: see the module docstring.

        Events are processed in input order or, given ``times``, in time order, equal
        times by :mod:`qre.runtime.order`'s rule (``tiebreak`` columns, the tag's text, the value
        columns); the outputs stay aligned with the input rows either way.

        ``workers=N`` runs the monitor on a DGS plan of N workers where its DT allows
        one (:mod:`qre.runtime.dgs.monitor`; the same outputs), else as without."""
        if workers is not None and (not isinstance(workers, numbers.Integral) or workers < 1):
            raise ValueError(f"workers must be a positive integer, not {workers!r}")
        if workers is not None and workers > 1:
            why = ("times given (a plan runs events in input order)" if times is not None
                   else "unknown tags skipped" if unknown_tags == "skip"
                   else "sliding windows or derived tags (state beside the DT's)"
                   if self.windows is not None or self.derivation is not None else None)
            if why is None:
                from .dgs.monitor import run_monitor
                codes, events = self._events(tags, values, unknown_tags)
                if events.scalar is not None:
                    return run_monitor(self, codes, events.scalar, workers=workers,
                                       sequential=lambda: self.run(tags, values, engine=engine))
                why = "values are records (a plan takes one number per event)"
            log.info("running sequentially: %s", why)
        return self.run_keys(None, tags, values, times=times, tiebreak=tiebreak,
                             engine=engine, unknown_tags=unknown_tags)

    def run_keys(
        self,
        keys: Any,
        tags: Any,
        values: Any = None,
        *,
        times: Any = None,
        tiebreak: Any = None,
        engine: str = "auto",
        unknown_tags: Literal["error", "skip"] = "error",
    ) -> Output:
        """Many independent keyed streams at once (API.md).

        Row k belongs to the stream of ``keys[k]`` (any hashable values, e.g.
        a pandas Series, equal by :mod:`qre.runtime.keys`' rule; None: one stream);
        each key's events are processed in input order from the initial
        configuration — or, given ``times``, in time order, ties by
        :mod:`qre.runtime.order`'s rule (``tiebreak``, tag, values) — and the
        outputs are aligned with the input rows: ``run_keys(keys, tags,
        values)[k]`` is the output of key ``keys[k]`` after reading its events up
        to and including row k.

        A monitor with a clock (a window aggregate, a declared period) is refused: its
        outputs come at the clock's ticks, which :meth:`run_timed` makes, so a run here
        would be all ⊥ (feed ticks yourself through :meth:`session` if that is meant).
        """
        self._check_untimed("run" if keys is None else "run_keys")
        chosen = self.resolve_engine(engine)
        if times is None and tiebreak is not None:
            raise ValueError("tiebreak orders events with equal times: pass times too")
        if keys is None:
            codes, events = self._events(tags, values, unknown_tags)
            key_ids = None
        else:  # one stream per key, by qre.runtime.keys' rule
            (key_ids, _), (codes, events) = stream_ids_beside(
                keys, lambda: self._events(tags, values, unknown_tags))
        self._compile_for_large_runs(engine, chosen, len(codes))
        if self.windows is not None:
            return self._run_windowed(chosen, key_ids, codes, events, tags, values, times,
                                      tiebreak)
        if keys is None and times is None:  # one stream in input order: no grouping to do
            return self._advance(chosen, self._initial_config, codes, events)[1]
        n = len(codes)
        if key_ids is None:  # one stream in time order
            key_ids = np.zeros(n, dtype=np.int64)
        if len(key_ids) != n:
            raise ValueError(f"keys has {len(key_ids)} entries but there are {n} tags")
        if times is None:
            engine_obj = self._engine(chosen)
            if hasattr(engine_obj, "advance_ids"):  # the compiled engines group the rows
                status, value = engine_obj.advance_ids(key_ids, codes, events.data(),
                                                       *self._initial_config,
                                                       valid_codes=True)
                return _output(status, value, self.outputs)
            order, offsets = group_by_key(key_ids)
            return self._run_grouped(chosen, order, offsets, codes, events)
        stamps = sortable_times(columns.column(times, "times"))
        if len(stamps) != n:
            raise ValueError(f"times has {len(stamps)} entries but there are {n} tags")
        order = processing_order(key_ids.astype(np.int64), stamps, tags, codes,
                                 self.alphabet, values, tiebreak)
        # Key g (ids 0..k-1 from factorize, all present) owns order[offsets[g]:offsets[g+1]].
        return self._run_grouped(chosen, order, key_offsets(key_ids), codes, events)

    def _run_windowed(self, chosen: str, key_ids: np.ndarray | None, codes: np.ndarray,
                      events: _Events, tags: Any, values: Any, times: Any,
                      tiebreak: Any) -> Output:
        """:meth:`run_keys` of a monitor with sliding windows: each key's events grouped
        in processing order, the window store's values added, then the DT."""
        assert self.windows is not None
        n = len(codes)
        if n == 0:  # no key, no window: the engine's empty output
            return _output(*_empty_output(0, len(self.dt.final)), self.outputs)
        ids = np.zeros(n, dtype=np.int64) if key_ids is None else key_ids
        if len(ids) != n:
            raise ValueError(f"keys has {len(ids)} entries but there are {n} tags")
        if times is None:
            order, offsets = (None, np.array([0, n], dtype=np.int64)) if key_ids is None \
                else group_by_key(ids)
        else:
            stamps = sortable_times(columns.column(times, "times"))
            if len(stamps) != n:
                raise ValueError(f"times has {len(stamps)} entries but there are {n} tags")
            order = processing_order(ids.astype(np.int64), stamps, tags, codes, self.alphabet,
                                     values, tiebreak)
            offsets = key_offsets(ids)
        windowed, undefined = self.windows.events(events, order, offsets, codes=codes,
                                                  alphabet=self.alphabet)
        return without(self._run_grouped(chosen, order, offsets, codes, windowed), undefined)

    def _check_untimed(self, caller: str) -> None:
        """Refuse a monitor that needs clock ticks (as spark_udf.monitor_frame does)."""
        if self.clock is not None:
            what = "a window aggregate" if self.clock.windowed else "a query with a clock period"
            raise ValueError(f"Monitor.{caller}: this monitor is timed ({what}): its outputs "
                             f"come at clock ticks, which run_timed makes — use "
                             f"m.run_timed(times, tags, values)")
        if any(f.startswith(WITHIN_PREFIX) for f in self._source_dt.fields) or (
                self.windows is not None and self.windows.by_time):
            raise ValueError(f"Monitor.{caller}: this monitor reads the event time (a within "
                             f"pattern, a past operator bounded by durations or a window "
                             f"over a duration) — use m.run_timed(times, tags, values)")

    def _run_grouped(self, chosen: str, order: np.ndarray | None, offsets: np.ndarray,
                     codes: np.ndarray, events: _Events) -> Output:
        """Key g's events are rows ``order[offsets[g]:offsets[g+1]]`` (``order`` None: rows
        ``offsets[g]`` to ``offsets[g+1] − 1``, grouped already), in processing order;
        each key starts from the initial configuration; outputs aligned with the rows."""
        engine_obj = self._engine(chosen)
        if hasattr(engine_obj, "advance_keys"):
            # The compiled engines run all keys in one parallel kernel call; the keys' final
            # configurations are not wanted (k × |Q| × 9 bytes: 0.9 GB for 1M keys × 100 states).
            _, _, status, value = engine_obj.advance_keys(
                order, offsets, codes, events.data(), *self._initial_config, finals=False,
                valid_codes=True)
            return _output(status, value, self.outputs)
        status, value = _empty_output(len(codes), len(self.dt.final))
        for g in range(len(offsets) - 1):
            rows = np.arange(offsets[g], offsets[g + 1]) if order is None else \
                order[offsets[g]:offsets[g + 1]]
            _, out = self._advance(chosen, self._initial_config, codes[rows], events.take(rows))
            status[rows] = out.status.reshape(len(rows), -1)
            value[rows] = out.value.reshape(len(rows), -1)
        return _output(status, value, self.outputs)

    def _events(self, tags: Any, values: Any, unknown_tags: str,
                derive: bool = True) -> tuple[np.ndarray, _Events]:
        """Tag codes (derived tags applied unless ``derive`` is false; −1 for a skipped
        tag) and the data the DT reads."""
        if not isinstance(unknown_tags, str) or unknown_tags not in _UNKNOWN_TAGS:
            raise ValueError(f"unknown_tags must be 'error' or 'skip', got {unknown_tags!r}")
        codes = tag_codes(tags, self.alphabet, skip_unknown=unknown_tags == "skip")
        values = columns.values(values)
        events = _event_values(self._data_reads, values, len(codes))
        if self.derivation is not None and derive:
            codes = self.derivation.apply(codes, values)
        return codes, events

    def run_timed(self, times: Any, tags: Any, values: Any = None, **options: Any) -> Any:
        """Timed, keyed events in event-time order, with the clock's ticks: a pandas
        DataFrame of emitted outputs (see :func:`qre.runtime.timed.run_timed`)."""
        from .timed import run_timed

        return run_timed(self, times, tags, values, **options)

    @property
    def initial_state(self) -> np.ndarray:
        """The :attr:`Session.state` of a fresh session: the initial configuration."""
        status, value = self._initial_config
        return np.concatenate([status.astype(np.float64), value])

    def resume_keys(self, states: np.ndarray, key_ids: Any, tags: Any, values: Any = None, *,
                    engine: str = "auto", unknown_tags: Literal["error", "skip"] = "error"
                    ) -> tuple[Output, np.ndarray]:
        """Many sessions at once (API.md): row i is an event of stream ``key_ids[i]``
        (integers 0..k−1; each stream's rows in the order to read them), and stream g
        resumes from ``states[g]`` (float64[k, 2·|Q|], each row a :attr:`Session.state`,
        e.g. :attr:`initial_state`). Returns the outputs, aligned with the rows, and the
        streams' states after their events — what a session per stream, resumed from its
        state and fed its rows, gives. Derived tags are applied, as ``Session.feed``
        does."""
        check_runnable(self, "Monitor.resume_keys")
        chosen = self.resolve_engine(engine)
        codes, events = self._events(tags, values, unknown_tags)
        n, q = len(codes), len(self.dt.states)
        flat = np.asarray(states, dtype=np.float64)
        if flat.ndim != 2 or flat.shape[1] != 2 * q:
            raise ValueError(f"states must have one row of {2 * q} floats (a Session.state) "
                             f"per stream, not shape {flat.shape}")
        ids = np.asarray(key_ids)
        if ids.shape != (n,) or (n and ids.dtype.kind not in "iu"):
            raise ValueError(f"key_ids must be {n} integers (one per tag), not "
                             f"{ids.dtype} of shape {ids.shape}")
        if n and (int(ids.min()) < 0 or int(ids.max()) >= len(flat)):
            raise ValueError(f"key_ids must be in 0..{len(flat) - 1} (rows of states)")
        if not np.isin(flat[:, :q], (0.0, 1.0, 2.0)).all():
            raise ValueError("a state's first half holds status codes 0, 1 or 2")
        table_s = np.ascontiguousarray(flat[:, :q], dtype=np.uint8)
        table_v = np.ascontiguousarray(flat[:, q:])
        engine_obj = self._engine(chosen)
        if hasattr(engine_obj, "advance_table"):
            status, value = engine_obj.advance_table(ids, codes, events.data(), table_s,
                                                     table_v)
        else:
            status, value = _empty_output(n, len(self.dt.final))
            order = np.argsort(ids, kind="stable")
            bounds = np.searchsorted(ids[order], np.arange(len(flat) + 1))
            for g in np.flatnonzero(np.diff(bounds)).tolist():
                rows = order[bounds[g]:bounds[g + 1]]
                (table_s[g], table_v[g]), out = self._advance(
                    chosen, (table_s[g], np.where(table_s[g] == 1, table_v[g], np.nan)),
                    codes[rows], events.take(rows))
                status[rows] = out.status.reshape(len(rows), -1)
                value[rows] = out.value.reshape(len(rows), -1)
        finals = np.concatenate([table_s.astype(np.float64),
                                 np.where(table_s == 1, table_v, np.nan)], axis=1)
        return _output(status, value, self.outputs), finals

    def session(self, state: np.ndarray | None = None, *, engine: str = "auto",
                windows: WindowContents | None = None) -> Session:
        """A resumable run: feed events in chunks; ``state`` restores a saved ``Session.state``
        and ``windows`` a saved :attr:`Session.windows` (a query with sliding windows)."""
        if windows is not None and self.windows is None:
            raise ValueError("Monitor.session: windows= restores a query's sliding windows; "
                             "this query has none")
        config = self._initial_config if state is None else _config_from_state(self.dt, state)
        if self.windows is not None and windows is None:
            windows = WindowContents.empty(len(self.windows.windows))
        # Resolved once: a session runs one engine (an unknown name fails here).
        return Session(self, config, self.resolve_engine(engine), windows)

    def _advance(self, engine: str, config: FlatConfig, codes: np.ndarray,
                 events: _Events) -> tuple[FlatConfig, Output]:
        """Run events from ``config``: the final configuration and one output per event."""
        status, value, out_status, out_value = self._engine(self.resolve_engine(engine)).advance(
            config[0], config[1], codes, events.data(), valid_codes=True)
        return (status, value), _output(out_status, out_value, self.outputs)


class Session:
    """A monitor's run that continues across :meth:`feed` calls (API.md ``m.session()``).

    Feeding events in any number of chunks gives the same outputs as one
    ``run`` over all of them. :attr:`state` is the configuration as a flat
    float64 array of length 2·|Q|: the status codes (0, 1, 2) of the states in
    the order of ``dt.states``, then their values (NaN where not defined); pass
    it to ``monitor.session(state=...)`` to resume elsewhere; a query with sliding
    windows also carries :attr:`windows`, the events its windows can still reach.
    """

    def __init__(self, monitor: Monitor, config: FlatConfig, engine: str,
                 windows: WindowContents | None = None) -> None:
        self.monitor = monitor
        self._config = config
        self._engine = engine
        self._windows = windows

    def feed(self, tags: Any, values: Any = None, *,
             unknown_tags: Literal["error", "skip"] = "error", derive: bool = True,
             times: Any = None) -> Output:
        """Read more events; one output per event, as :meth:`Monitor.run`.

        ``derive=False`` takes the tags as final: the monitor's derived tags are not
        applied (a caller that applied them already, or that feeds clock ticks).
        ``times``: the events' times as integers of microseconds, in order, needed by a
        sliding window over a duration (a stream's key feeds them)."""
        m = self.monitor
        codes, events = m._events(tags, values, unknown_tags, derive=derive)
        undefined = None
        if m.windows is not None:
            assert self._windows is not None
            events, undefined, (self._windows,) = m.windows.resume(
                events, np.array([0, len(codes)]), [self._windows], codes,
                enters=(codes >= 0) & (codes != _tick_code(m.alphabet)),
                times=None if times is None else np.asarray(times, dtype=np.int64),
                scale=None if times is None else MICROSECONDS, alphabet=m.alphabet)
        self._config, out = m._advance(self._engine, self._config, codes, events)
        return without(out, undefined)

    @property
    def windows(self) -> WindowContents | None:
        """A query with sliding windows: the events its windows can still reach (pass
        it to ``monitor.session(windows=...)`` with :attr:`state` to resume); None for
        a query without."""
        return self._windows

    @property
    def output(self) -> tuple[Any, Any]:
        """The current output, like :attr:`Monitor.initial`."""
        return _current_output(self.monitor.dt, self._config)

    @property
    def state(self) -> np.ndarray:
        """The configuration as a flat float64 array (see the class docstring)."""
        status, value = self._config
        return np.concatenate([status.astype(np.float64), value])


_BACKGROUND_LOCK = threading.Lock()
_BACKGROUND: dict[Path, threading.Thread] = {}
"""The background compile of each codegen kernel (by its module file: the source hash in
the cache directory) started in this process."""


def _tick_code(alphabet: Sequence[str]) -> int:
    """The clock tick's code in ``alphabet`` (−2, no code, without one): ticks do not
    enter a window."""
    return alphabet.index(TICK) if TICK in alphabet else -2


def _compile_quietly(engine: Any) -> None:
    """Compile a codegen engine in another process and load it; a failure is logged
    (``"auto"`` keeps the table engine)."""
    try:
        engine.compile_apart()
    except Exception:  # a background thread has no caller to raise to
        log.warning("codegen: the background compile failed; \"auto\" keeps running the "
                    "table engine", exc_info=True)


def _current_output(dt: DT, config: FlatConfig) -> tuple[Any, Any]:
    """``(status, value)`` of a configuration: scalars with one final state, else arrays."""
    final = [dt.state_index[f] for f in dt.final]
    status, value = config[0][final], config[1][final]
    if len(dt.final) == 1:
        return int(status[0]), float(value[0])
    return status, value


def _config_from_state(dt: DT, state: np.ndarray) -> FlatConfig:
    try:
        flat = np.asarray(state, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise TypeError(f"state must be a saved Session.state (a flat float array), not "
                        f"{type(state).__name__} ({e})") from None
    n = len(dt.states)
    if flat.shape != (2 * n,):
        raise ValueError(f"a state of this monitor is a flat array of {2 * n} floats "
                         f"(2 per DT state), not shape {flat.shape}")
    codes = flat[:n]
    if not np.isin(codes, (0.0, 1.0, 2.0)).all():
        raise ValueError("a state's first half holds status codes 0, 1 or 2")
    status = codes.astype(np.uint8)
    # Canonical form: NaN wherever the status is not "defined".
    value = np.where(status == 1, flat[n:], np.nan)
    return status, value


def _empty_output(n: int, n_final: int) -> tuple[np.ndarray, np.ndarray]:
    """Output arrays for n events, shape (n, n_final); :func:`_output` squeezes them."""
    return (np.zeros((n, n_final), dtype=np.uint8),
            np.full((n, n_final), np.nan, dtype=np.float64))


def _output(status: np.ndarray, value: np.ndarray, names: tuple[str, ...]) -> Output:
    """The Output of API.md: 1-D arrays with one output, else (n, n_outputs)."""
    if len(names) == 1:
        status, value = status[:, 0], value[:, 0]
    return Output(status, value, names)


@dataclass(frozen=True)
class _Events:
    """The data of every event: one float column (``cur``) or named columns (``cur.f``)."""

    scalar: np.ndarray | None
    fields: Mapping[str, np.ndarray]

    def data(self) -> np.ndarray | dict[str, np.ndarray]:
        """What an engine's ``advance`` takes: the ``cur`` column or the field columns."""
        return self.scalar if self.scalar is not None else dict(self.fields)

    def take(self, rows: np.ndarray) -> _Events:
        """The events at the given row positions, in that order."""
        scalar = None if self.scalar is None else self.scalar[rows]
        return _Events(scalar, {name: col[rows] for name, col in self.fields.items()})


def _event_values(dt: DT | DataReads, values: Any, n: int) -> _Events:
    fields = sorted(dt.fields)
    if values is None:
        if dt.reads_scalar_cur or fields:
            reads = "cur" if dt.reads_scalar_cur else ", ".join(f"cur.{f}" for f in fields)
            raise ValueError(f"the DT reads {reads}: pass values (a float sequence, or a dict "
                             f"or DataFrame of columns for cur.FIELD)")
        # No term reads cur: any value will do, NaN says "no data".
        return _Events(np.full(n, np.nan), {})
    if isinstance(values, Mapping | pd.DataFrame):
        return _record_values(dt, values, fields, n)
    if fields:
        raise ValueError(f"the DT reads record fields ({', '.join(f'cur.{f}' for f in fields)}): "
                         f"pass values as a dict or DataFrame with columns {', '.join(fields)}")
    column = _float_column(values, "values")
    _check_length(column, n, "values")
    return _Events(column, {})


def _record_values(dt: DT | DataReads, values: Any, fields: list[str], n: int) -> _Events:
    if dt.reads_scalar_cur:
        raise ValueError("the DT reads cur (one float per event) but values are records "
                         "(a dict or DataFrame); pass a float sequence")
    columns = list(values.keys())
    missing = [f for f in fields if f not in columns]
    if missing:
        raise ValueError(f"values lack the field(s) {', '.join(missing)} that the DT reads "
                         f"(cur.FIELD); columns given: {', '.join(map(str, columns)) or 'none'}")
    for name in columns:
        # Every column must align with the tags, even one the DT does not read.
        if hasattr(values[name], "__len__") and len(values[name]) != n:
            raise ValueError(f"column {name!r} has {len(values[name])} entries but there are "
                             f"{n} tags")
    out = {}
    for name in fields:
        column = _float_column(values[name], f"column {name!r}")
        _check_length(column, n, f"column {name!r}")
        out[name] = column
    return _Events(None, out)


def _check_length(column: np.ndarray, n: int, what: str) -> None:
    if len(column) != n:
        raise ValueError(f"{what} has {len(column)} entries but there are {n} tags")


def _float_column(data: Any, label: str) -> np.ndarray:
    """``data`` as a 1-D float64 array; the first non-number is an error naming its row."""
    if isinstance(data, pd.Series | pd.Index):
        data = data.array
    if isinstance(data, pd.api.extensions.ExtensionArray):
        if pd.api.types.is_numeric_dtype(data.dtype) or pd.api.types.is_bool_dtype(data.dtype):
            data = data.to_numpy(dtype=np.float64, na_value=np.nan)
        else:  # text, dates...: a missing entry is NaN, any other one must be a number
            data = np.where(np.asarray(data.isna(), dtype=bool), np.nan,
                            np.asarray(data, dtype=object))
    if isinstance(data, np.ndarray):
        array = data
    else:
        try:
            array = np.asarray(data)
        except ValueError:  # ragged rows ([[], [0]]): objects, each reported below
            array = np.asarray(data, dtype=object)
        if array.dtype.kind not in "biuf":
            # Mixed lists become strings in numpy ([1.0, "a"] -> ["1.0", "a"]): keep the
            # items as they are, so the error below names the row that is not a number.
            array = np.asarray(data, dtype=object)
    if array.ndim != 1:
        raise ValueError(f"{label} must be one-dimensional, got shape {array.shape}")
    if array.dtype.kind in "biuf":
        return array.astype(np.float64, copy=False)
    # Objects, strings, dates...: accept real numbers one by one, report the first other thing.
    out = np.empty(len(array), dtype=np.float64)
    for k, item in enumerate(array):
        if not isinstance(item, numbers.Real):
            raise ValueError(f"row {k} of {label}: {columns.shown(item)} is not a number")
        try:
            out[k] = float(item)
        except OverflowError:  # an int beyond 1.8e308: no float holds it
            raise ValueError(f"row {k} of {label}: {columns.shown(item)} is too large for a 64-bit "
                             f"float") from None
    return out

