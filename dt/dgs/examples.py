"""The seed's DGS applications as specifications (seed 003 §4.1, §4.3.1, §4.5).

Each returns a :class:`~dt.dgs.spec.Spec`; the tests run them through the consistency
checker, every plan and every runtime, and ``benchmarks/dgs_applications.py`` measures
them.

* :func:`key_counter` — Figure 15: a map from keys to counters; ``("i", k)`` increments
  key k, ``("r", k)`` outputs ``(k, count)`` and resets it. Increments of a key commute;
  a read-reset synchronizes with its key.
* :func:`key_counter_wrong_fork` — the same with a fork that copies every count to both
  states: joins then count twice, and the checker says so (C2).
* :func:`value_barrier` — event-based windowing: values ``("a", i)`` (one tag per input
  stream) summed between barriers ``"b"``; a barrier outputs ``("sum", time, total)``
  and starts a new window. Values commute; a barrier synchronizes with all of them.
  Two state types: forked states accept values only.
* :func:`fraud_detection` — §4.1: transactions ``("tx", i)`` with an amount, and rules
  ``"rule"``. A rule retrains the model on the transactions since the previous rule
  (here: their sum) and outputs ``("model", time, sum)``; a transaction is flagged,
  ``("flag", time, amount)``, when its amount agrees with the model modulo 1000.
  Transactions depend only on rules — the broadcast pattern cannot express the
  retraining's dependence on every transaction. The state counts the rules it has
  seen, so that a join keeps the newer model (a first version kept the left one:
  the consistency checker found it, C1 with the rule on the right, and then that the
  running sum must go to the side that sees the rules).
* :func:`page_view_join` — per user u: page views ``("view", u)``, reads ``("get", u)``
  and address updates ``("update", u)`` (payload: the zip code). Views and reads output
  the user's current zip, ``("view", u, time, zip)``; an update depends on all of its
  user's events, views and reads only on updates; users are independent.

The seed's artifact (the Erlang prototype) runs the same three; its value barrier
keeps a cumulative sum, the Flink baseline a sum per window as here.
"""

from __future__ import annotations

from collections.abc import Callable

from .spec import Event, Fork, Join, Spec, StateType, Tag, one_state


def _counter_update(state: dict, event: Event) -> tuple[dict, tuple]:
    kind, key = event.tag
    if kind == "i":
        state[key] = state.get(key, 0) + 1
        return state, ()
    count = state.get(key, 0)
    state[key] = 0
    return state, ((key, count),)


def _counter_dependence(a: Tag, b: Tag) -> bool:
    return a[1] == b[1] and "r" in (a[0], b[0])


def _counter_fork(state: dict, left: Callable, right: Callable) -> tuple[dict, dict]:
    # A key's count goes with its read-reset: to the left if the left state will see
    # r(k), else to the right (which then sees r(k) or nobody does, and the count
    # only waits there for the join).
    ones: dict = {}
    twos: dict = {}
    for key, count in state.items():
        (ones if left(("r", key)) else twos)[key] = count
    return ones, twos


def _counter_join(one: dict, two: dict) -> dict:
    for key, count in two.items():
        one[key] = one.get(key, 0) + count
    return one


def _counts_equal(a: dict, b: dict) -> bool:
    # A missing key and a zero count are the same counter (s[k] defaults to 0).
    return {k: v for k, v in a.items() if v} == {k: v for k, v in b.items() if v}


def key_counter() -> Spec:
    """Figure 15: increments ``("i", k)`` and read-resets ``("r", k)`` → ``(k, count)``."""
    return one_state("State", _counter_update, _counter_fork, _counter_join,
                     dependence=_counter_dependence, init=dict, equal=_counts_equal)


def _copy_fork(state: dict, left: Callable, right: Callable) -> tuple[dict, dict]:
    return dict(state), dict(state)


def key_counter_wrong_fork() -> Spec:
    """Figure 15 with a fork that gives both states every count (inconsistent: C2)."""
    return one_state("State", _counter_update, _copy_fork, _counter_join,
                     dependence=_counter_dependence, init=dict, equal=_counts_equal)


def _barrier_update(total: float, event: Event) -> tuple[float, tuple]:
    if event.tag == "b":
        return 0, (("sum", event.time, total),)
    return total + event.payload, ()


def _is_value(tag: Tag) -> bool:
    return tag != "b"


def _barrier_dependence(a: Tag, b: Tag) -> bool:
    return "b" in (a, b)


def _barrier_fork(total: float, left: Callable, right: Callable) -> tuple[float, float]:
    return total, 0


def _add(one: float, two: float) -> float:
    return one + two


def value_barrier() -> Spec:
    """Sums of values ``("a", i)`` between barriers ``"b"`` → ``("sum", time, total)``."""
    return Spec(dependence=_barrier_dependence, init=lambda: 0,
                states=(StateType("Window", _barrier_update),
                        StateType("Values", _barrier_update, _is_value)),
                forks=(Fork("split", "Window", ("Values", "Values"), _barrier_fork),
                       Fork("split values", "Values", ("Values", "Values"), _barrier_fork)),
                joins=(Join("add", ("Values", "Values"), "Window", _add),
                       Join("add values", ("Values", "Values"), "Values", _add)))


def _fraud_update(state: tuple, event: Event) -> tuple[tuple, tuple]:
    total, model, version = state
    if event.tag == "rule":
        return (0, total, version + 1), (("model", event.time, total),)
    amount = event.payload
    flagged = (("flag", event.time, amount),) if amount % 1000 == model % 1000 else ()
    return (total + amount, model, version), flagged


def _fraud_dependence(a: Tag, b: Tag) -> bool:
    return "rule" in (a, b)


def _fraud_fork(state: tuple, left: Callable, right: Callable) -> tuple[tuple, tuple]:
    # The running sum goes with the rules (the side that retrains on it), as Figure 15's
    # counts go with their read-resets.
    total, model, version = state
    if right("rule"):
        return (0, model, version), (total, model, version)
    return (total, model, version), (0, model, version)


def _fraud_join(one: tuple, two: tuple) -> tuple:
    # At most one side sees rules (they depend on every transaction); its model is the
    # newer one, which its version (rules seen) tells.
    newer = one if one[2] >= two[2] else two
    return one[0] + two[0], newer[1], newer[2]


def fraud_detection() -> Spec:
    """Transactions ``("tx", i)`` flagged against a model that rules ``"rule"`` retrain."""
    return one_state("Detector", _fraud_update, _fraud_fork, _fraud_join,
                     dependence=_fraud_dependence, init=lambda: (0, 0, 0))


def _page_update(zips: dict, event: Event) -> tuple[dict, tuple]:
    kind, user = event.tag
    if kind == "update":
        zips[user] = event.payload
    return zips, ((kind, user, event.time, zips.get(user)),)


def _page_dependence(a: Tag, b: Tag) -> bool:
    return a[1] == b[1] and "update" in (a[0], b[0])


def _page_fork(zips: dict, left: Callable, right: Callable) -> tuple[dict, dict]:
    # Both sides may read a user's address (views of one user on two workers); at most
    # one updates it, and then the other sees none of that user's events.
    ones: dict = {}
    twos: dict = {}
    for user, zip_code in zips.items():
        tags = [(kind, user) for kind in ("view", "get", "update")]
        on_left = any(map(left, tags))
        if on_left:
            ones[user] = zip_code
        if any(map(right, tags)) or not on_left:
            twos[user] = zip_code
    return ones, twos


def _page_join(ones: dict, twos: dict) -> dict:
    for user, zip_code in twos.items():
        ones.setdefault(user, zip_code)
    return ones


def page_view_join() -> Spec:
    """Per user: views and reads joined with the address that updates set."""
    return one_state("Addresses", _page_update, _page_fork, _page_join,
                     dependence=_page_dependence, init=dict)
