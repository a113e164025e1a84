"""Data-trace types and DiffStream (dt.traces) against seed 003's definitions.

The oracles are in tests/trace_oracle.py.

Each property is checked against brute force on small streams: the schema's
dependence table against Definition 2.13 item by item; relaxation against the
equivalence classes it must contain; the matcher against trace enumeration by
adjacent swaps and against the parse of both streams into series-parallel
streams (Proposition 2.19), under both of its implementations (indexed for a
schema, scanning for a predicate) and any interleaving of the two streams.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st
from trace_oracle import depends, parse, schemas, trace_class, universe

from dt.errors import PreconditionError
from dt.traces import (
    Bag,
    Header,
    ItemError,
    Par,
    PartitionBy,
    Predicate,
    Seq,
    StreamMatcher,
    Sync,
    by_key,
    compare,
    ordered,
    punctuated,
    typed,
    unordered,
)
from dt.traces.consistency import find_inconsistency, reorder
from dt.traces.notation import parse_dependence

NAMES = ("A", "B", "C")


def matcher_verdict(dependence, left, right, order) -> bool:
    """The matcher's verdict with the two streams' items pushed in ``order`` (0/1 per push)."""
    m = StreamMatcher(dependence)
    streams = [iter(left), iter(right)]
    for side in order:
        m.push(side, next(streams[side]))
    return m.finish().equivalent


def interleaving(rng: random.Random, n: int, k: int) -> list[int]:
    order = [0] * n + [1] * k
    rng.shuffle(order)
    return order


# -- schemas ------------------------------------------------------------------------------

def test_well_formedness_is_checked_when_a_schema_is_built():
    with pytest.raises(PreconditionError, match="'A' appears twice"):
        Sync("A", Bag(["A", "B"]))
    with pytest.raises(PreconditionError, match=r"partitioned by taxi, which is not one"):
        PartitionBy("taxi", Seq(Header("GPS", ["location"])))
    with pytest.raises(PreconditionError, match="PartitionBy by k again"):
        PartitionBy("k", Par(Bag("A"), PartitionBy(["k", "j"], Seq("B"))))
    with pytest.raises(PreconditionError, match="at least two"):
        Par(Bag("A"))
    PartitionBy("taxi", Seq("GPS"))  # undeclared fields: the key is read from each item


def test_the_papers_examples_of_relaxation_and_order_equivalence():
    gps, ride = Header("GPS", ["location", "taxiID"]), Header("RideCompleted", ["taxiID"])
    taxis = Sync("EndOfHour", Par(PartitionBy("taxiID", Seq(gps)), Bag(ride)))  # Example 2.7
    unordered_gps = Sync("EndOfHour", Par(PartitionBy("taxiID", Bag(gps)), Bag(ride)))
    flat = Sync("EndOfHour", Bag([gps, ride]))  # Example 2.21
    assert unordered_gps.relaxes(taxis) and not taxis.relaxes(unordered_gps)
    assert unordered_gps.order_equivalent(flat)
    assert Sync("EndOfHour", Seq("GPS")).order_equivalent(Seq(["EndOfHour", "GPS"]))
    assert not Seq("GPS").relaxes(taxis)  # fewer headers: not a relaxation


@given(schemas(NAMES))
def test_the_dependence_table_is_definition_2_13(schema):
    d = typed(schema, header="h")
    items = universe(NAMES)
    for x in items:
        for y in items:
            assert d.depends(x, y) == depends(schema, x, y), (x, y)


@given(schemas(NAMES), schemas(NAMES), st.integers(0, 2**32))
def test_relaxation_is_containment_of_equivalence_classes(s1, s2, seed):
    rng = random.Random(seed)
    items = universe(NAMES)
    words = [(x, y) for x in items for y in items]
    words += [tuple(rng.choice(items) for _ in range(3)) for _ in range(40)]
    brute = all(trace_class(w, lambda x, y: depends(s2, x, y))
                <= trace_class(w, lambda x, y: depends(s1, x, y)) for w in words)
    assert s1.relaxes(s2) == brute
    assert s1.order_equivalent(s2) == (brute and s2.relaxes(s1))


@given(schemas(NAMES))
def test_a_schema_prints_as_its_notation(schema):
    parsed = parse_dependence(repr(schema), header="h").schema  # fields are not written
    assert repr(parsed) == repr(schema) and parsed.conditions() == schema.conditions()
    assert repr(Seq(["my col", "it's"])) == """Seq(["it's", 'my col'])"""
    assert parse_dependence(repr(Seq(["my col", "it's"])), header="h").schema.header_names \
        == {"my col", "it's"}


def test_relaxation_needs_every_header():
    assert Bag(["A", "B"]).relaxes(Seq("A"))
    assert not Bag("A").relaxes(Seq(["A", "B"]))


# -- the matcher ----------------------------------------------------------------------------

@st.composite
def stream_pairs(draw: st.DrawFn):
    """A schema, a stream of its items, and a second stream: a random walk of swaps of
    independent neighbours (equivalent), a permutation, or one item changed."""
    schema = draw(schemas(NAMES))
    items = universe(NAMES)
    size = draw(st.integers(3, 7))
    left = draw(st.lists(st.sampled_from(items), min_size=size, max_size=size))
    rng = random.Random(draw(st.integers(0, 2**32)))  # not st.randoms: it shrinks to no shuffle
    right = list(left)
    how = draw(st.sampled_from(["swaps", "permutation", "changed"]))
    if how == "swaps":
        for _ in range(3 * len(right)):
            i = rng.randrange(max(len(right) - 1, 1))
            if i + 1 < len(right) and not depends(schema, right[i], right[i + 1]):
                right[i], right[i + 1] = right[i + 1], right[i]
    elif how == "permutation":
        rng.shuffle(right)
    elif right:
        right[rng.randrange(len(right))] = rng.choice(items)
    return schema, left, right, rng


@given(stream_pairs())
def test_the_matcher_decides_trace_equivalence(pair):
    schema, left, right, rng = pair
    truth = parse(schema, left) == parse(schema, right)
    assert truth == (tuple(right) in trace_class(left, lambda x, y: depends(schema, x, y)))
    for dependence in (typed(schema, header="h"), Predicate(lambda x, y: depends(schema, x, y))):
        for _ in range(3):
            order = interleaving(rng, len(left), len(right))
            assert matcher_verdict(dependence, left, right, order) == truth, order


@given(stream_pairs())
def test_a_mismatch_is_reported_at_an_item_that_has_no_partner(pair):
    schema, left, right, _ = pair
    verdict = compare(left, right, typed(schema, header="h"))
    if verdict.equivalent:
        assert verdict.matched == len(left) == len(right) and verdict.unmatched == (0, 0)
        return
    m = verdict.mismatch
    stream = left if m.side == "left" else right
    assert stream[m.position] == m.item
    if m.other is not None:  # a dependent item of the other stream that it overtook
        side, position, item = m.other
        assert (left if side == "left" else right)[position] == item
        assert depends(schema, m.item, item)


def test_memory_is_the_unmatched_items():
    items = [{"k": i % 10, "v": i} for i in range(1000)]
    shifted = items[5:] + items[:5]  # the first five items of keys 0-4 arrive last
    verdict = compare(items, shifted, by_key("k"))
    assert not verdict.equivalent  # keys 0-4 now end with their first item
    same = compare(items, sorted(items, key=lambda x: x["k"]), by_key("k"))
    assert same.equivalent
    assert compare(items, items, ordered()).peak_unmatched <= 1  # matched as they come


def test_the_extended_taxi_example_as_a_predicate_and_as_a_schema():
    """Fig. 7: EOD ordered with everything, EOMs with each other, taxi events per taxiID."""
    def fig7(a, b):
        return (a["kind"] == "EOD" or b["kind"] == "EOD"
                or (a["kind"] == "EOM" and b["kind"] == "EOM")
                or (a["kind"] == "taxi" == b["kind"] and a["taxiID"] == b["taxiID"]))

    schema = typed(Sync("EOD", Par(Seq("EOM"), PartitionBy("taxiID", Seq("taxi")))),
                   header="kind")
    rng = random.Random(7)
    for _ in range(200):
        stream = [rng.choice([{"kind": "EOD"}, {"kind": "EOM"},
                              {"kind": "taxi", "taxiID": rng.randrange(2), "km": rng.randrange(2)},
                              {"kind": "taxi", "taxiID": rng.randrange(2), "km": rng.randrange(2)}])
                  for _ in range(6)]
        other = list(stream)
        rng.shuffle(other)
        verdicts = {compare(stream, other, d).equivalent for d in (Predicate(fig7), schema)}
        assert len(verdicts) == 1


def test_combinators():
    a, b = {"k": 1, "v": 1}, {"k": 2, "v": 2}
    assert compare([a, b], [b, a], unordered()) and not compare([a, b], [b, a], ordered())
    assert compare([a, b], [b, a], by_key("k"))
    mark = {"k": 0, "v": "#"}
    within = punctuated(lambda x: x["v"] == "#", by_key("k"))
    assert compare([a, b, mark, b], [b, a, mark, b], within)
    assert not compare([a, mark, b], [a, b, mark], within)
    assert not compare([a], [a, a], unordered())


def test_reports_name_the_item_and_why():
    verdict = compare([{"k": 1, "v": 1}, {"k": 1, "v": 2}], [{"k": 1, "v": 2}, {"k": 1, "v": 1}],
                      by_key("k"))
    assert str(verdict.mismatch) == (
        "right item 0 {'k': 1, 'v': 2} depends on left item 0 {'k': 1, 'v': 1}, which has no "
        "equal item in right before it: the streams order the two differently, or right lacks it")
    verdict = compare([1, 2, 3], [1, 2], unordered())
    assert str(verdict.mismatch) == "left item 2 3 has no equal item in right"
    assert str(verdict).startswith("not equivalent (3 and 2 items read, 2 matched)")
    with pytest.raises(ItemError, match=r"right item 1 \{'v': 3\}: it has no field 'k'"):
        compare([{"k": 1}, {"k": 2}], [{"k": 1}, {"v": 3}], by_key("k"))
    with pytest.raises(ItemError, match="header 'x' is not one of the schema's"):
        compare([{"h": "x"}], [], typed(Seq(["a", "b"]), header="h"))
    with pytest.raises(PreconditionError, match="say which one an item has"):
        typed(Seq(["a", "b"]))


def test_equality_can_ignore_fields_and_nans_are_equal():
    left = [{"k": 1, "v": float("nan"), "at": 5}]
    right = [{"k": 1, "v": float("nan"), "at": 9}]
    assert not compare(left, right, by_key("k"))
    assert compare(left, right, by_key("k"), key=lambda x: (x["k"], str(x["v"])))
    assert compare(left, [dict(left[0])], by_key("k"))


# -- consistency (Definition 2.24) ---------------------------------------------------------

@given(schemas(NAMES), st.lists(st.sampled_from(universe(NAMES)), min_size=1, max_size=5),
       st.integers(0, 2**32))
def test_reorderings_are_exactly_the_trace(schema, stream, seed):
    """Random flattenings (schema) and random topological orders (predicate) are
    equivalent to the stream, and in 300 draws reach every member of its class."""
    whole = trace_class(stream, lambda x, y: depends(schema, x, y))
    rng = random.Random(seed)
    for dependence in (typed(schema, header="h"), Predicate(lambda x, y: depends(schema, x, y))):
        drawn = {tuple(stream[p] for p in reorder(stream, dependence, rng)) for _ in range(300)}
        assert drawn <= whole
        if len(whole) <= 24:
            assert drawn == whole


def test_an_inconsistent_function_is_caught_and_a_consistent_one_is_not():
    items = [{"k": k, "v": v} for v, k in enumerate([1, 2, 1, 3, 2, 1])]

    def running_sum(stream):  # per key: consistent from by_key to by_key
        total: dict = {}
        out = []
        for x in stream:
            total[x["k"]] = total.get(x["k"], 0) + x["v"]
            out.append({"k": x["k"], "sum": total[x["k"]]})
        return out

    def global_sum(stream):  # across keys: depends on the interleaving of keys
        out, total = [], 0
        for x in stream:
            total += x["v"]
            out.append({"k": x["k"], "sum": total})
        return out

    assert find_inconsistency(running_sum, items, by_key("k"), by_key("k")) is None
    found = find_inconsistency(global_sum, items, by_key("k"), by_key("k"))
    assert found is not None and not found.verdict.equivalent
    assert find_inconsistency(global_sum, items, ordered(), by_key("k")) is None
