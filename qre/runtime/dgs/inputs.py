"""Input instances of a DGS program: several streams of timed events and heartbeats.

Seed 003 §4.4.1 and Definition 4.8. Each input stream is a sequence of
:class:`~dt.dgs.spec.Event` (with ``time`` set) and :class:`Heartbeat` in strictly
increasing time. Events of different streams are ordered by time, then by the
stream's position among the streams (the order relation O of §4.4.1): that is the
order in which the sequential specification sees them (:func:`sequential_input`).

Every runtime closes each stream with a heartbeat at +∞ (the progress condition (2) of
Definition 4.8 for finite input), so heartbeats in the input only lower latency.

A position in O is a *key* ``(time, rank, 0)``; ``(time, rank, -1)`` lies just before it
(a bound "everything before this item"), see :mod:`qre.runtime.dgs.mailbox`.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

from dt.dgs.optimizer import InputStream
from dt.dgs.spec import Event

INF = math.inf
FIRST = (-INF, -1, 0)
"""A key before every item."""
LAST = (INF, INF, 0)
"""A key after every item."""


@dataclass(frozen=True)
class Heartbeat:
    """The absence of events on a stream up to ``time`` (§4.4.4)."""

    time: float


class InputError(ValueError):
    """An input instance that breaks Definition 4.8 (the message names stream and item)."""


Streams = Mapping[Hashable, Sequence[Event | Heartbeat]]


def ranks(streams: Streams) -> dict:
    """Stream name → its position, which breaks ties of equal times."""
    return {name: rank for rank, name in enumerate(streams)}


def key(time: float, rank: int) -> tuple:
    return (time, rank, 0)


def check_instance(streams: Streams) -> None:
    """Raise :class:`InputError` unless every stream's times strictly increase (Def. 4.8 (1))."""
    for name, items in streams.items():
        previous = -INF
        for position, item in enumerate(items):
            if not isinstance(item, (Event, Heartbeat)):
                raise InputError(f"stream {name!r}, item {position}: {item!r} is neither an "
                                 "Event nor a Heartbeat")
            time = item.time
            if not isinstance(time, numbers.Real) or isinstance(time, bool) or math.isnan(time):
                raise InputError(f"stream {name!r}, item {position}: time {time!r} is not a number")
            if time <= previous:
                raise InputError(f"stream {name!r}, item {position}: time {time!r} does not "
                                 f"follow {previous!r} (a stream's times strictly increase)")
            previous = time


def input_rates(streams: Streams) -> list[InputStream]:
    """The optimizer's input: each stream's tags with their counts of events as rates."""
    found = []
    for name, items in streams.items():
        counts: dict = {}
        for item in items:
            if isinstance(item, Event):
                counts[item.tag] = counts.get(item.tag, 0) + 1
        found.append(InputStream(name, counts))
    return found


def sequential_input(streams: Streams) -> list[Event]:
    """The events of all streams in the order O, heartbeats dropped (``sort_O`` of §4.4.5)."""
    rank = ranks(streams)
    keyed = [(key(item.time, rank[name]), item) for name, items in streams.items()
             for item in items if isinstance(item, Event)]
    keyed.sort(key=lambda pair: pair[0])
    return [item for _, item in keyed]
