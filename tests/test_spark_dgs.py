"""DGS plans on Spark (spark_udf.dgs): leaves as barrier tasks, inner workers in the driver.

The oracle is the sequential specification on the events sorted by time (streams by
name where times tie), as in tests/test_dgs.py; here on Spark for the seed's
applications with the optimizer's plans.
"""

from __future__ import annotations

import ast
import random
import sys
from dataclasses import replace

import dgs_cases
import pytest
from dgs_cases import CASES, instance

from dt.dgs import examples
from dt.dgs.optimizer import InputStream, optimize
from dt.dgs.spec import Event
from qre.runtime.dgs.inputs import InputError, sequential_input

pytest.importorskip("pyspark")
from pyspark import cloudpickle

from spark_udf.dgs import run_plan

cloudpickle.register_pickle_by_value(dgs_cases)
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def _frame(spark, streams):
    rows = [(name, item.time, repr(item.tag), item.payload)
            for name, items in streams.items() for item in items if isinstance(item, Event)]
    return spark.createDataFrame(rows, "stream string, time long, tag string, payload long")


def _at_rest(streams):
    """No heartbeats (data at rest), streams in the order Spark gives them (by name)."""
    return {name: [i for i in streams[name] if isinstance(i, Event)]
            for name in sorted(streams, key=repr)}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_spark_runs_the_plan_like_the_sequential_program(spark, case):
    rng = random.Random(3)
    streams = _at_rest(instance(case, rng, length=60))
    plan = optimize(case.spec, case.inputs(rng), workers=3)
    result = run_plan(case.spec, plan, _frame(spark, streams), parse_tag=ast.literal_eval)
    assert result.outputs == case.spec.run(sequential_input(streams)), str(plan)


def test_spark_errors(spark):
    spec = examples.value_barrier()
    plan = optimize(spec, [InputStream("A", {("a", 0): 9}), InputStream("B", {"b": 1}),
                           InputStream("C", {("a", 1): 9})], workers=2)
    frame = spark.createDataFrame([("A", 1, "('a', 5)", 1)], "stream string, time long, "
                                  "tag string, payload long")
    with pytest.raises(InputError, match=r"stream 'A', time 1: .* \('a', 5\)"):
        run_plan(spec, plan, frame, parse_tag=ast.literal_eval)
    twice = spark.createDataFrame([("A", 1, "('a', 0)", 1), ("A", 1, "('a', 0)", 2),
                                   ("B", 2, "'b'", 0)],
                                  "stream string, time long, tag string, payload long")
    with pytest.raises(Exception, match="stream 'A', item 1: time 1 does not follow 1"):
        run_plan(spec, plan, twice, parse_tag=ast.literal_eval)


def _unlucky(total, event):
    if event.payload == 13:
        raise ValueError("unlucky")
    return examples.value_barrier().states[1].update(total, event)


def test_a_failing_leaf_fails_the_run(spark):
    base = examples.value_barrier()
    spec = replace(base, states=(base.states[0], replace(base.states[1], update=_unlucky)))
    plan = optimize(spec, [InputStream("A", {("a", 0): 9}), InputStream("B", {"b": 1}),
                           InputStream("C", {("a", 1): 9})], workers=2)
    rows = [("A", t, "('a', 0)", t) for t in range(1, 20)] + [("B", 10, "'b'", 0),
                                                              ("C", 3, "('a', 1)", 1)]
    frame = spark.createDataFrame(rows, "stream string, time long, tag string, payload long")
    with pytest.raises(Exception, match="unlucky"):
        run_plan(spec, plan, frame, parse_tag=ast.literal_eval, timeout=60)


def test_a_root_without_tags_leaves_its_tasks_their_sockets(spark):
    """The root of this plan owns no tag: the driver is done at once, and must keep the
    tasks' sockets open until they have read their input (they poll them meanwhile)."""
    case = next(c for c in CASES if c.name == "page_view_join")
    streams = _at_rest(instance(case, random.Random(5), length=40_000))
    plan = optimize(case.spec, case.inputs(random.Random(1)), workers=2)
    assert not plan.root.itags
    result = run_plan(case.spec, plan, _frame(spark, streams), parse_tag=ast.literal_eval)
    assert result.outputs == case.spec.run(sequential_input(streams))
