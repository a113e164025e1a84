"""DGS programs, stream layouts and random input instances for the DGS tests.

A case is a specification, the input streams it is run on (which tags arrive on
which stream), a sample of tags for the consistency checker and a payload drawer.
:func:`instance` draws a valid input instance (Definition 4.8): per stream, strictly
increasing times, random events of the stream's tags and random heartbeats.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from dt.dgs import examples
from dt.dgs.optimizer import InputStream
from dt.dgs.spec import Event, Spec, one_state
from qre.runtime.dgs.inputs import Heartbeat


def _reader_update(count: tuple, event: Event) -> tuple[tuple, tuple]:
    base, delta = count
    if event.tag == "i":
        return (base, delta + 1), ()
    return count, ((event.tag, event.time, base + delta),)


def _reader_fork(count: tuple, left, right) -> tuple[tuple, tuple]:
    # Both sides may read the count (r1 on one, r2 on the other): each gets it as a
    # base, and increments are kept apart as deltas that the join adds.
    total = count[0] + count[1]
    return (total, 0), (total, 0)


def two_readers() -> Spec:
    """Increments ``i`` read by two independent readers ``r1`` and ``r2``: the case where
    a parent owning both readers must order them through its children's ``i``."""
    return one_state("Count", _reader_update, _reader_fork, lambda a, b: (a[0], a[1] + b[1]),
                     dependence=lambda a, b: (a == "i") != (b == "i"), init=lambda: (0, 0),
                     equal=lambda a, b: sum(a) == sum(b))


def _amount(tag, rng: random.Random) -> int:
    return rng.randint(0, 3000)


@dataclass(frozen=True)
class Case:
    name: str
    spec: Spec
    streams: dict  # stream name -> its tags
    sample: tuple  # tags for the consistency checker

    def inputs(self, rng: random.Random) -> list[InputStream]:
        """The streams with random rates, as the optimizer takes them."""
        return [InputStream(name, {t: rng.choice((1, 10, 100, 1000)) for t in tags})
                for name, tags in self.streams.items()]


CASES = (
    Case("key_counter", examples.key_counter(),
         {"E0": [("r", 0)], "E1": [("r", 1), ("i", 1)], "E2": [("i", 0)], "E3": [("i", 0)],
          "E4": [("i", 1)]},
         tuple((k, n) for k in "ir" for n in range(3))),
    Case("value_barrier", examples.value_barrier(),
         {"B": ["b"], "A0": [("a", 0)], "A1": [("a", 1)], "A2": [("a", 1)]},
         ("b", ("a", 0), ("a", 1))),
    Case("fraud_detection", examples.fraud_detection(),
         {"R": ["rule"], "T0": [("tx", 0)], "T1": [("tx", 1)], "T2": [("tx", 0)]},
         ("rule", ("tx", 0), ("tx", 1))),
    Case("page_view_join", examples.page_view_join(),
         {"U0": [("update", 0)], "U1": [("update", 1)], "G": [("get", 0), ("get", 1)],
          "V0": [("view", 0)], "V1": [("view", 0), ("view", 1)], "V2": [("view", 1)]},
         tuple((k, u) for k in ("view", "get", "update") for u in (0, 1))),
    Case("two_readers", two_readers(),
         {"A": ["r1"], "B": ["r2"], "C": ["i"], "D": ["i"]}, ("r1", "r2", "i")),
)


def instance(case: Case, rng: random.Random, length: int = 12, beats: float = 0.3) -> dict:
    """A random valid input instance: each stream strictly increasing in time, events of
    its tags with random payloads, heartbeats with probability ``beats``."""
    streams = {}
    for name, tags in case.streams.items():
        time, items = 0, []
        for _ in range(rng.randint(0, length)):
            time += rng.randint(1, 3)
            if rng.random() < beats:
                items.append(Heartbeat(time))
            else:
                tag = rng.choice(tags)
                items.append(Event(tag, _amount(tag, rng), time))
        streams[name] = items
    return streams
