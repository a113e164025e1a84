"""One worker of a synchronization plan as a message-driven state machine (§4.4.4).

A :class:`WorkerRuntime` is fed messages and returns the messages it sends; the
drivers (:mod:`~qre.runtime.dgs.simulate`, :mod:`~qre.runtime.dgs.parallel`,
:mod:`spark_udf.dgs`) only
carry them, so every driver runs the same protocol.

Messages (tuples, first item the kind):

* ``("events", code, [(key, payload), ...])`` — input events of one of the worker's
  implementation tags, in order (``code`` numbers the plan's tags: :func:`tag_codes`);
* ``("beat", code, key)`` — a heartbeat of the stream of one of its tags;
* ``("request", code, key)`` — from the parent: it is about to process an item of that
  tag at ``key`` and needs this subtree's state;
* ``("progress", code, bound)`` — from the parent: no more requests for the tag up to
  ``bound``;
* ``("state", name, state)`` — from a child, its state for the pending join;
* ``("fork", state)`` — from the parent, the state to continue with.

The protocol (the seed's): when the mailbox releases an item, a worker with children
sends them a request and waits for both states; it joins them; for its own event it
updates the state (recording the outputs under the event's key) and forks the result
back; for an ancestor's request it sends the joined state up and waits for the fork.
A leaf updates directly (a whole releasable run of events in one loop) or sends its
state up. A non-root worker starts waiting for its first state, which the root forks
from ``init()`` down the tree.

After every step the worker tells its children how far each of its tags has been
released (``progress``), behind the requests it sent them. Heartbeats of an ancestor's
tag thus reach a worker through its parent, never around it: a heartbeat that
overtook a request would let the child run past the point the request marks. (The
seed's artifact sends an owner's requests, on arrival, and its heartbeats straight to
every descendant in one channel, which keeps them in order too; here a request leaves
when its event is released, so the progress must follow the same path.)
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Any

from dt.dgs.plan import ImplTag, Plan, Worker
from dt.dgs.spec import Event, Spec, TagSet

from .mailbox import Mailbox, worker_dependence

RUNNING, AWAIT_CHILDREN, AWAIT_PARENT = "running", "await children", "await parent"

Message = tuple
Outgoing = list[tuple[Hashable, Message]]


def tag_codes(plan: Plan) -> list[ImplTag]:
    """The plan's implementation tags in the order their codes number them."""
    return sorted(plan.itags(), key=repr)


class WorkerRuntime:
    """The worker ``name`` of ``plan`` running ``spec``."""

    def __init__(self, spec: Spec, plan: Plan, name: str) -> None:
        self.spec = spec
        self.name = name
        workers = {w.name: w for w in plan.workers()}
        worker: Worker = workers[name]
        parents = plan.parents()
        self.parent = parents[name]
        ancestors: list = []
        up = self.parent
        while up is not None:
            ancestors += sorted(workers[up].itags, key=repr)
            up = parents[up]
        own = sorted(worker.itags, key=repr)
        self.own = len(own)
        below = [t for c in worker.children for t in c.subtree_itags()]
        depends = worker_dependence(lambda a, b: spec.dependence(a.tag, b.tag), below)
        self.mailbox = Mailbox(own + ancestors, depends)
        codes = tag_codes(plan)
        self.local = {code: self.mailbox.index[t] for code, t in enumerate(codes)
                      if t in self.mailbox.index}
        self.code = [codes.index(t) for t in self.mailbox.tags]
        self.children = [c.name for c in worker.children]
        if worker.children:
            self.fork = spec.fork(worker.fork).function
            self.join = spec.join(worker.join).function
            self.sides = [TagSet(frozenset(t.tag for t in c.subtree_itags()))
                          for c in worker.children]
        self.update = spec.state(worker.state).update
        self.update_run = spec.state(worker.state).update_run
        self.state: Any = None
        self.status = AWAIT_PARENT if self.parent is not None else RUNNING
        self.pending: tuple | None = None
        self.joined: dict[str, Any] = {}
        self.sent = list(self.mailbox.timers)
        self.outputs: list[tuple[tuple, Any]] = []

    # -- the driver's interface -------------------------------------------------

    def start(self) -> Outgoing:
        """The root's first step: ``init()``, forked down the tree."""
        if self.parent is not None:
            return []
        out: Outgoing = []
        self._continue_with(self.spec.init(), out)
        return out

    def receive(self, message: Message) -> Outgoing:
        """Take one message; return what to send, as (destination, message) pairs."""
        return self.receive_many((message,))

    def receive_many(self, messages: Iterable[Message]) -> Outgoing:
        """Take messages in order; children hear of progress once, after the last."""
        out: Outgoing = []
        for message in messages:
            self._take(message, out)
            self._run(out)
        self._progress(out)
        return out

    def done(self) -> bool:
        """Every tag has ended and every item has been processed."""
        return self.status == RUNNING and self.mailbox.drained()

    # -- the protocol ---------------------------------------------------------------

    def _take(self, message: Message, out: Outgoing) -> None:
        kind = message[0]
        mailbox = self.mailbox
        if kind == "events":
            mailbox.add_many(self.local[message[1]], message[2])
        elif kind == "request":
            mailbox.add(self.local[message[1]], message[2], None)
        elif kind == "beat" or kind == "progress":
            mailbox.advance(self.local[message[1]], message[2])
        elif kind == "state":
            self.joined[message[1]] = message[2]
            if len(self.joined) == len(self.children):
                self._joined(out)
        elif kind == "fork":
            self._continue_with(message[1], out)
        else:
            raise ValueError(f"worker {self.name!r}: unknown message {kind!r}")

    def _run(self, out: Outgoing) -> None:
        mailbox = self.mailbox
        while self.status == RUNNING:
            run = mailbox.releasable()
            if run is None:
                return
            tag, n = run
            if self.children:
                key, payload = mailbox.buffers[tag].popleft()
                for child in self.children:
                    out.append((child, ("request", self.code[tag], key)))
                self.pending = (tag, key, payload)
                self.status = AWAIT_CHILDREN
            elif tag < self.own:
                self._update_run(tag, n)
            else:
                mailbox.buffers[tag].popleft()
                self._send_up(self.state, out)

    def _update_run(self, tag: int, n: int) -> None:
        """A leaf's hot loop: the first ``n`` events of one of its tags."""
        buffer = self.mailbox.buffers[tag]
        spec_tag = self.mailbox.tags[tag].tag
        if self.update_run is not None:
            entries = [buffer.popleft() for _ in range(n)]
            self.state, keyed = self.update_run(self.state, spec_tag, entries)
            self.outputs.extend(keyed)
            return
        update, state, outputs = self.update, self.state, self.outputs
        for _ in range(n):
            key, payload = buffer.popleft()
            state, out = update(state, Event(spec_tag, payload, key[0]))
            if out:
                outputs.extend((key, o) for o in out)
        self.state = state

    def _joined(self, out: Outgoing) -> None:
        state = self.join(self.joined[self.children[0]], self.joined[self.children[1]])
        self.joined = {}
        (tag, key, payload), self.pending = self.pending, None
        if tag < self.own:
            event = Event(self.mailbox.tags[tag].tag, payload, key[0])
            state, outputs = self.update(state, event)
            self.outputs.extend((key, o) for o in outputs)
            self._continue_with(state, out)
        else:
            self._send_up(state, out)

    def _send_up(self, state: Any, out: Outgoing) -> None:
        out.append((self.parent, ("state", self.name, state)))
        self.state = None
        self.status = AWAIT_PARENT

    def _continue_with(self, state: Any, out: Outgoing) -> None:
        self.status = RUNNING
        if not self.children:
            self.state = state
            return
        left, right = self.fork(state, self.sides[0], self.sides[1])
        self.state = None
        out.append((self.children[0], ("fork", left)))
        out.append((self.children[1], ("fork", right)))

    def _progress(self, out: Outgoing) -> None:
        if not self.children:
            return
        mailbox = self.mailbox
        for i in range(len(mailbox.tags)):
            bound = mailbox.bound(i)
            if bound > self.sent[i]:
                self.sent[i] = bound
                for child in self.children:
                    out.append((child, ("progress", self.code[i], bound)))
