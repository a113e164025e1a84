"""Seed 000's operators (issue 27): each engine against the definitions of dt.dataflow.

Random keyed streams with gaps, ties, identical tuples and late tuples (watermarks by
bounded out-of-orderness, sometimes below the tuples that follow them), under the
pipeline order and under random asynchronous orders (the races the loop rules of §4.5
exist for). Outputs are compared as multisets: Definition 2 fixes what is output, not
the order across keys (the Aggregate-based Map sorts its output by time, §4.2).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dt import dataflow as definition
from qre.runtime.dataflow.aggregate import Aggregate, Window
from qre.runtime.dataflow.dedicated import Filter, Join, Map, Unbounded
from qre.runtime.dataflow.engine import Fragment, run, watermarks_for
from qre.runtime.dataflow.listings import embed_join, embed_map, unbounded, unfold


def arrivals(tuples, delay, every):
    """Tuples in the given order, with bounded-out-of-orderness watermarks."""
    marks = dict(watermarks_for([t[0] for t in tuples], delay=delay, every=every))
    items = []
    for i, t in enumerate(tuples, 1):
        items.append(("t", t))
        if i in marks:
            items.append(("w", marks[i]))
    return items


def on_time(items):
    """The items without their late tuples (the seed's setting for its loops)."""
    w, out = None, []
    for kind, x in items:
        if kind == "w":
            w = x
        if kind == "w" or w is None or x[0] >= w:
            out.append((kind, x))
    return out


tuple_ = st.tuples(st.integers(0, 40), st.integers(0, 2), st.integers(0, 4))
streams = st.builds(arrivals, st.lists(tuple_, max_size=30), st.integers(0, 8),
                    st.integers(1, 4))
orders = st.one_of(st.just(("fifo", 0)), st.tuples(st.just("random"), st.integers(0, 10**6)))
UNTIL = 120


def single(node, ports=1):
    return Fragment([node], [[(node, p)] for p in range(ports)], node)


def outputs(fragment, inputs, order=("fifo", 0)):
    out, scheduler = run(fragment, inputs, until=UNTIL, order=order[0],
                         seed=order[1], record=True)
    return sorted(out, key=repr), scheduler.record


def f_m(t):
    """Selectivity 0, 1 or 2 by value."""
    return [(t[2] * 10 + j, t[1]) for j in range(t[2] % 3)]


def f_c(t):
    return t[2] % 2 == 0


@given(streams, st.integers(1, 5), st.integers(0, 6), st.integers(0, 6),
       st.sampled_from(["accumulating", "discarding"]), st.booleans())
def test_aggregate_equals_its_definition(items, advance, extra, lateness, refinement, plus):
    size = advance + extra

    def f_o(gamma):
        values = [t[2] for t in gamma.tuples]
        if plus:
            return [(gamma.key, v) for v in values if v % 2]
        return None if sum(values) % 5 == 4 else (gamma.key, gamma.l, len(values), sum(values))

    window = Window(advance, size, lambda t: t[1], lateness)
    node = Aggregate("a", window, f_o, plus=plus, refinement=refinement)
    got, record = outputs(single(node), [items])
    want = definition.aggregate([it for _, it in record], advance, size, lambda t: t[1], f_o,
                                until=UNTIL, lateness=lateness, refinement=refinement, plus=plus)
    assert got == sorted(want, key=repr)
    assert node.instances == {}


def via_unfold(f, items, order):
    """Map through A: E_M then X. Under an asynchronous order only on-time tuples (an
    identical copy of a late tuple may race its first copy into one window of X's A2,
    which outputs γ.ζ[0]: Lemma 2 assumes no late tuple from the ingress)."""
    if order[0] == "random":
        items = on_time(items)
    got, _ = outputs(embed_map("e", f, lateness=UNTIL).then(
        unfold("x", lateness=UNTIL)), [items], order)
    return got, items


def as_map(t):
    """F as an M (§4: M can output 0 or 1 tuples without changing the type)."""
    return [t[1:]] if f_c(t) else []


THREE_WAYS = {
    "map": (lambda: Map("m", f_m), f_m, lambda items: definition.map_(items, f_m)),
    "filter": (lambda: Filter("f", f_c), as_map, lambda items: definition.filter_(items, f_c)),
}


@pytest.mark.parametrize("operator", THREE_WAYS)
@given(items=streams, order=orders)
def test_map_and_filter_three_ways(operator, items, order):
    dedicated_node, f, defined = THREE_WAYS[operator]
    want = sorted(defined(items), key=repr)
    dedicated, _ = outputs(single(dedicated_node()), [items], order)
    via_plus, _ = outputs(embed_map("e", f, lateness=UNTIL, plus=True), [items], order)
    assert dedicated == via_plus == want
    via_a, fed = via_unfold(f, items, order)
    assert via_a == sorted(defined(fed), key=repr)


def f_p(t1, t2):
    return (t1[2] + t2[2]) % 3 != 0


def key(t):
    return t[1]


@given(streams, streams, st.integers(1, 5), st.integers(0, 6), orders)
def test_join_three_ways(left, right, advance, extra, order):
    size = advance + extra
    if order[0] == "random":  # an asynchronous order changes who is late where
        left, right = on_time(left), on_time(right)
    dedicated, record = outputs(
        single(Join("j", advance, size, key, key, f_p), 2), [left, right], order)
    want = sorted(definition.join(record, advance, size, key, key, f_p), key=repr)
    assert dedicated == want
    if order[0] == "fifo":  # the same arrivals reach every join
        via_plus, _ = outputs(embed_join("e", advance, size, key, key, f_p, plus=True),
                              [left, right])
        via_a, _ = outputs(embed_join("e", advance, size, key, key, f_p).then(
            unfold("x")), [left, right])
        assert via_plus == via_a == want


def f_k(t):
    return t[1]


def start(t):
    return (1, t[2])


def add(state, t):
    return (state[0] + 1, state[1] + t[2])


def merge(a, b):
    return (a[0] + b[0], a[1] + b[1])


@given(streams, st.integers(1, 7), orders, st.booleans())
def test_unbounded_three_ways(items, period, order, plus):
    items = on_time(items)
    want = sorted(definition.unbounded(items, start, add, lambda s: s, period, f_k,
                                       until=UNTIL), key=repr)
    dedicated, _ = outputs(single(Unbounded("u", start, add, lambda s: s, period, f_k)),
                           [items], order)

    def maps(name, f):
        if plus:
            return embed_map(name, f, plus=True)
        return embed_map(name, f).then(unfold(f"{name}.X"))

    via, _ = outputs(unbounded("u", start, add, merge, lambda s: s, period, f_k, maps=maps),
                     [items], order)
    assert dedicated == via == want


def test_unfold_needs_listing_5_under_an_asynchronous_order():
    """Without Listing 5 (A1's watermarks straight to A2) A2 fires a window before all
    of its successors arrive, and drops the late ones: some order of this stream shows
    it. (So the gate, and the random orders above, are not idle.)"""
    items = arrivals([(t, 0, 5) for t in range(10)], 0, 1)
    want = sorted(definition.map_(items, lambda t: [(j,) for j in range(4)]), key=repr)
    lost = 0
    for seed in range(30):
        fragment = embed_map("e", lambda t: [(j,) for j in range(4)]).then(
            unfold("x"))
        a1, gate, a2 = fragment.parts["x.A1"], fragment.parts["x.C3"], fragment.parts["x.A2"]
        a1.outs = [(n, p, loop) for n, p, loop in a1.outs if n is not gate]
        a1.to(a2)
        got, _ = outputs(fragment, [items], ("random", seed))
        lost += got != want
    assert lost > 0


def test_window_preconditions():
    with pytest.raises(ValueError, match="advance ≤ size"):
        Window(3, 2)
    with pytest.raises(ValueError, match="lateness"):
        Window(1, 1, lateness=-1)
    with pytest.raises(TypeError, match="whole number"):
        Window(1.5, 2)


@settings(max_examples=20)
@given(st.integers(-50, 50), st.integers(1, 6), st.integers(0, 6))
def test_windows_of_are_the_instances_holding_a_time(tau, advance, extra):
    size = advance + extra
    got = list(definition.windows_of(tau, advance, size))
    assert got == [s for s in range(-60, 60) if s % advance == 0 and s <= tau < s + size]


def per_key(make, arrival):
    """``make()``'s node run as Spark runs it (spark_udf.dataflow_stream) over
    ``arrival`` ((port, item) in order): a node per key, its state pickled between calls
    and dropped once nothing waits; one watermark, the least of the ports'; a key with
    tuples first takes it, a key without is woken once it passes the key's
    ``next_time``."""
    import copy
    import pickle

    template = make()
    marks = [None] * len(template.marks)
    saved, out, w = {}, [], None

    def call(k, feed):
        node = copy.deepcopy(template)  # nothing outside its state carries over
        state = pickle.loads(saved.pop(k, pickle.dumps(template.state())))
        state.pop("wake", None)
        node.restore(state)
        node.outs = [(node, 0, False)]
        node.scheduler = type("Collect", (), {"push": lambda self, n, p, x: out.extend(x)
                                              if isinstance(x, list) else None})()
        if w is not None:
            for p in range(len(node.marks)):
                node.on_watermark(p, w)
        feed(node)
        if node.next_time() is not None:
            saved[k] = pickle.dumps({**node.state(), "wake": node.next_time()})

    for port, (kind, x) in arrival:
        if kind == "w":
            marks[port] = x if marks[port] is None else max(marks[port], x)
            if None not in marks:
                w = min(marks)
                for k in [k for k in saved if pickle.loads(saved[k])["wake"] <= w]:
                    call(k, lambda node: None)
        else:
            call(pickle.dumps(template.partition_key(port)(x)),
                 lambda node, port=port, x=x: node.on_tuples(port, [x]))
    return sorted(out, key=repr)


NODES = {
    "aggregate": lambda: Aggregate("a", Window(2, 5, key, 3), lambda g: (g.key, len(g.tuples)),
                                   refinement="discarding"),
    "aggregate plus": lambda: Aggregate("a", Window(3, 3, key, 4),
                                        lambda g: [(t[2],) for t in g.tuples], plus=True),
    "join": lambda: Join("j", 2, 4, key, key, f_p, lateness=2),
    "unbounded": lambda: Unbounded("u", start, add, lambda s: (s,), 5, f_k),
}


@pytest.mark.parametrize("name", NODES)
@given(left=streams, right=streams)
def test_a_node_per_key_with_its_state_as_data_gives_the_same_tuples(name, left, right):
    inputs = [left, right] if name == "join" else [left]
    want, arrival = outputs(single(NODES[name](), len(inputs)), inputs)
    assert per_key(NODES[name], arrival) == want
