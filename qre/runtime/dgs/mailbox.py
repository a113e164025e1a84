"""A worker's mailbox: selective reordering by dependence, timers advanced by heartbeats.

Seed 003 §4.4.4. A mailbox holds, per implementation tag it receives, a FIFO buffer
of items (events of the worker's own tags; join requests for its ancestors' tags)
and a *timer*: a bound such that every item of that tag with a key up to the bound
has arrived. An item at key k at the head of its buffer may be released when, for
every tag it depends on, the timer has reached k and that tag's buffer holds nothing
earlier — then every dependent item before it has been released, and none can come.

Keys are ``(time, rank, 0)`` (:mod:`qre.runtime.dgs.inputs`); distinct items have
distinct keys. :meth:`Mailbox.bound` is what a parent tells its children about a tag:
everything up to it has been released, so ``(time, rank, -1)`` just before a waiting
item when the buffer holds one.

The dependence a mailbox uses is the worker's, not the specification's alone: two of
its tags also depend on each other when descendants' tags link them (see
:func:`worker_dependence`). Without that, a parent may run ``r1`` at time 3 before an
independent ``r2`` at time 1 while a child's event at time 2 depends on both: the
child can run neither before nor after the parent's join, and the run deadlocks.

Cost: an append per item; a release looks at the heads of the buffers the tag
depends on once for a whole run of items (:meth:`Mailbox.releasable`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from dt.dgs.plan import ImplTag

from .inputs import FIRST, INF, LAST


class Mailbox:
    """Buffers and timers for ``tags``; ``depends(a, b)`` says which must keep their order."""

    def __init__(self, tags: Sequence[ImplTag], depends: Callable[[ImplTag, ImplTag], bool]
                 ) -> None:
        self.tags = list(tags)
        self.index = {tag: i for i, tag in enumerate(self.tags)}
        self.dependents = [[j for j, b in enumerate(self.tags) if j != i and depends(a, b)]
                           for i, a in enumerate(self.tags)]
        self.buffers: list[deque] = [deque() for _ in self.tags]
        self.timers: list[tuple] = [FIRST] * len(self.tags)

    def add(self, tag: int, key: tuple, item: Any) -> None:
        """An item of tag number ``tag`` at ``key`` (keys of a tag arrive increasing)."""
        self.buffers[tag].append((key, item))
        self.timers[tag] = key

    def add_many(self, tag: int, entries: list[tuple[tuple, Any]]) -> None:
        """Items ``(key, item)`` of one tag, in increasing keys."""
        self.buffers[tag].extend(entries)
        self.timers[tag] = entries[-1][0]

    def advance(self, tag: int, bound: tuple) -> None:
        """Every item of the tag up to ``bound`` has arrived (a heartbeat, a parent's progress)."""
        if bound > self.timers[tag]:
            self.timers[tag] = bound

    def releasable(self) -> tuple[int, int] | None:
        """``(tag, n)``: the first ``n`` items of the tag's buffer may be released, its
        head having the least key of all releasable heads; None if nothing may be."""
        best = None
        for i, buffer in enumerate(self.buffers):
            if buffer and (best is None or buffer[0][0] < best[1]):
                limit = self._limit(i)
                if buffer[0][0] <= limit:
                    best = (i, buffer[0][0], limit)
        if best is None:
            return None
        i, _, limit = best
        buffer = self.buffers[i]
        if buffer[-1][0] <= limit:
            return i, len(buffer)
        for n, (key, _) in enumerate(buffer):  # iterating a deque is O(1) a step
            if key > limit:
                return i, n
        return i, len(buffer)

    def _limit(self, tag: int) -> tuple:
        """The last key the tag's items may have to be released: every tag it depends on
        has arrived up to it and holds nothing earlier."""
        limit = LAST
        for j in self.dependents[tag]:
            timer = self.timers[j]
            if timer < limit:
                limit = timer
            buffer = self.buffers[j]
            if buffer and buffer[0][0] <= limit:
                time, rank, _ = buffer[0][0]
                limit = (time, rank, -1)
        return limit

    def bound(self, tag: int) -> tuple:
        """Every item of the tag up to this key has been released."""
        buffer = self.buffers[tag]
        if buffer:
            time, rank, _ = buffer[0][0]
            return (time, rank, -1)
        return self.timers[tag]

    def drained(self) -> bool:
        """Every tag has ended (its timer's time is +∞) and every buffer is empty."""
        return all(t[0] == INF for t in self.timers) and not any(self.buffers)


def worker_dependence(depends: Callable[[ImplTag, ImplTag], bool], below: Sequence[ImplTag]
                      ) -> Callable[[ImplTag, ImplTag], bool]:
    """Tags a and b of a worker must keep their order if they depend on each other, or
    are linked by a path of dependences through tags handled below the worker."""
    below = list(below)
    reach: dict[ImplTag, frozenset] = {}

    def reached(a: ImplTag) -> frozenset:
        if a not in reach:
            seen: set = set()
            frontier = [d for d in below if depends(a, d)]
            while frontier:
                d = frontier.pop()
                if d in seen:
                    continue
                seen.add(d)
                frontier += [e for e in below if e not in seen and depends(d, e)]
            reach[a] = frozenset(seen)
        return reach[a]

    def linked(a: ImplTag, b: ImplTag) -> bool:
        return depends(a, b) or any(depends(d, b) for d in reached(a))

    return linked
