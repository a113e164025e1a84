"""Optimistic processing (issue 22; seed 002 §V), without Spark: the stream simulator
(tests/stream_simulator.py) through spark_udf.optimistic. The oracle: after every
micro-batch, the inserts minus the retractions emitted so far are, row for row,
``run_timed`` on the events seen so far that were not late, with that batch's
watermark — the sorted prefix of what arrived, whatever the arrival order. Two
changelogs are compared as traces of the output type (qre.runtime.stream_types: each
key's inserts and retractions in order, keys independent); result sets as multisets."""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from query_strategies import temporal_queries, top_queries
from stream_simulator import ALPHABET, US, arrivals, simulate, simulate_buckets

from qre import Monitor, qre
from qre.language.printer import to_text
from qre.runtime.changelog import CHANGE, INSERT, RETRACT, Barrier, row_changes
from qre.runtime.stream_types import stream_type
from qre.runtime.timed import is_timed
from qre.testing import assert_equivalent_streams
from spark_udf import clocked
from spark_udf.keyed import LATE, TIME_US, Rules
from tests.test_stream_timed import PATTERNS, WINDOWS

RANDOM_QUERIES = st.one_of(top_queries(ALPHABET, 2), temporal_queries(ALPHABET, 1)).map(to_text)
UNTIMED = ["sum(cur)", "avg_last(2, cur) - avg(cur)", "once(is(b)) && fill_with(last(cur), "
           "const(0)) > 0", "!is(a) since is(b)"]


CHECKPOINTS = st.sampled_from([1, 2, 3, 256])
"""Events between a key's checkpoints: every one, a few, the default."""


SPECULATE = st.sampled_from([None, None, 0, 2])
"""How far past the release point rows are emitted (s): no bound, final rows only, 2 s."""


def rules(m: Monitor, lateness: int = 0, every: int = 256, speculate: int | None = None,
          ttl: int | None = None) -> Rules:
    return Rules(True, None if ttl is None else ttl * US, "flag", lateness * US, m.clock,
                 is_timed(m), US, "integral", optimistic=True, checkpoint_every=every,
                 speculate_us=None if speculate is None else speculate * US)


def current(rows: pd.DataFrame) -> Counter:
    """The result set a changelog consumer holds: inserts minus retractions."""
    held: Counter = Counter()
    for k, t, tag, status, value, change in zip(
            rows["k"], rows["t"], rows["tag"], rows["status"], rows["value"], rows[CHANGE],
            strict=True):
        row = (int(k), int(t), str(tag), int(status), repr(float(value)))
        held[row] += 1 if change == INSERT else -1
        assert held[row] >= 0, f"retracted a row that was not held: {row}"
    return +held


def expected(m: Monitor, events: pd.DataFrame, watermark: int, until: float = np.inf
             ) -> Counter:
    """``run_timed``'s rows on ``events`` with ``watermark`` (s), those stamped at most
    ``until``."""
    reads_records = bool(m._source_dt.fields)
    values = {"v": events["v"]} if reads_records else events["v"]
    want = m.run_timed(events["t"], events["tag"], values, keys=events["k"],
                       watermark=watermark, undefined="drop" if m.clock else "keep")
    return Counter((int(k), int(t), str(tag), int(s), repr(float(v))) for k, t, tag, s, v in zip(
        want["key"], want["time"], want["tag"], want["status"], want["value"], strict=True)
        if t <= until)


@st.composite
def disordered(draw):  # type: ignore[no-untyped-def]
    """Events of 1..3 keys at distinct whole seconds, arriving up to 8 s out of order in
    micro-batches of one to three events: many arrive before events with earlier times."""
    n = draw(st.integers(8, 24))
    times = draw(st.lists(st.integers(1, 40), min_size=n, max_size=n, unique=True))
    frame = pd.DataFrame({
        "k": draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)), "t": times,
        "tag": draw(st.lists(st.sampled_from(["a", "b"]), min_size=n, max_size=n)),
        "v": draw(st.lists(st.sampled_from([-1.0, 0.5, 2.0]), min_size=n, max_size=n))})
    frame[TIME_US] = frame["t"] * US
    noise = draw(st.lists(st.integers(0, 8), min_size=n, max_size=n))
    frame = frame.iloc[np.argsort(frame["t"].to_numpy() + np.array(noise), kind="stable")]
    sizes = draw(st.lists(st.integers(1, 3), min_size=n, max_size=n))
    cuts = np.cumsum(sizes)
    return [frame.iloc[lo:hi] for lo, hi in zip([0, *cuts], cuts, strict=False) if lo < n]


def check_changelog(text: str, batches: list[pd.DataFrame], delay: int, lateness: int,
                    every: int = 256, speculate: int | None = None) -> int:
    """The module docstring's oracle after every micro-batch; the number of retractions.
    With a speculation bound, the rows are those stamped at most that far past the
    release point, and with a bound of 0 (final rows only) nothing is retracted."""
    m = qre("alphabet a, b; " + text)
    marks: list[tuple[int, int]] = []
    r = rules(m, lateness, every, speculate)
    rows, _ = simulate(m, batches, r, delay, marks=marks)
    assert set(rows[CHANGE]) <= {INSERT, RETRACT}
    is_late = rows[LATE].astype(bool)
    assert (rows.loc[is_late, CHANGE] == INSERT).all() and (rows.loc[is_late, "status"] == 0).all()
    late_events = rows[is_late].set_index(["k", "t"]).index
    for i, (n_rows, watermark_ms) in enumerate(marks):
        part = rows.iloc[:n_rows]
        events = pd.concat(batches[:i + 1], ignore_index=True)
        events = events[~events.set_index(["k", "t"]).index.isin(late_events)]
        held = current(part[~part[LATE].astype(bool)])
        until = (np.inf if speculate is None
                 else r.release_us(watermark_ms * 1000) / US + speculate)
        assert held == expected(m, events, watermark_ms // 1000, until), (
            f"after micro-batch {i}")
    retracted = int((rows[CHANGE] == RETRACT).sum())
    assert speculate != 0 or retracted == 0
    return retracted


@settings(max_examples=60)
@given(st.sampled_from(WINDOWS + PATTERNS + UNTIMED),
       st.one_of(disordered(), arrivals(jitter=8, distinct=True, min_events=12)),
       st.sampled_from([2, 5, 9]), st.sampled_from([0, 3]), CHECKPOINTS, SPECULATE)
def test_inserts_minus_retractions_are_the_sorted_prefix(text, batches, delay, lateness, every,
                                                         speculate):
    check_changelog(text, batches, delay, lateness, every, speculate)


@settings(max_examples=40)
@given(RANDOM_QUERIES, disordered(), st.sampled_from([3, 9]), CHECKPOINTS)
def test_random_queries_too(text, batches, delay, every):
    """Random quantitative and past-time queries (tests/query_strategies.py)."""
    check_changelog(text, batches, delay, 0, every)


def _batches(*parts: list[tuple[int, int, str, float]]) -> list[pd.DataFrame]:
    out = []
    for part in parts:
        frame = pd.DataFrame(part, columns=["k", "t", "tag", "v"])
        out.append(frame.assign(**{TIME_US: frame["t"] * US}))
    return out


# Key 0's events at 4 and 6 arrive after those at 5, 7 and 9: within the watermark's
# delay of 5 s, so they are not late, and what was emitted after 5 and 7 changes.
DISORDER = _batches([(0, 5, "a", 1.0), (0, 7, "b", 2.0), (1, 3, "a", 1.0)],
                    [(0, 9, "a", 0.5), (0, 4, "b", 2.0)], [(0, 6, "a", -1.0), (1, 12, "b", 2.0)],
                    [(0, 20, "a", 1.0)])


# The session of 5 closes at 8 when 12 arrives; then 7 arrives and extends it to 10.
EXTENDED = _batches([(0, 5, "a", 1.0), (0, 12, "a", 1.0)], [(0, 7, "a", 2.0)],
                    [(0, 30, "a", 1.0)])


# A b at 7 arrives after the a's at 5 and 9: the match (5, 9) is no longer one.
SPLIT_MATCH = _batches([(0, 5, "a", 1.0), (0, 9, "a", 1.0)], [(0, 7, "b", 1.0)],
                       [(0, 30, "a", 1.0)])


# Key 0's only event, at 10, waits while key 1's events move the watermark (5 s behind)
# to 8 and then 9: with rows emitted up to 2 s past the release point, its row is due
# at 8, when key 0 has no event: its timer emits it.
HELD = _batches([(0, 10, "a", 1.0)], [(1, 13, "a", 1.0)], [(1, 14, "a", 1.0)],
                [(1, 30, "a", 1.0)])


@pytest.mark.parametrize("text", ["sum(cur)", "aggregate(sum(cur.v), 4s, 2s)"])
def test_a_held_row_is_emitted_once_the_release_point_is_near(text):
    check_changelog(text, HELD, 5, 0, speculate=2)


@pytest.mark.parametrize(("text", "batches", "delay"), [
    ("sum(cur)", DISORDER, 5), ("avg_last(2, cur) - avg(cur)", DISORDER, 5),
    ("aggregate(sum(cur.v), 4s, 2s)", DISORDER, 5), ("matches(seq(a, not(b), a))", SPLIT_MATCH, 9),
    ("aggregate(sum(cur.v), session(3s))", EXTENDED, 9)])
def test_an_out_of_order_event_retracts_what_it_changes(text, batches, delay):
    assert all(check_changelog(text, batches, delay, 0, every) > 0 for every in (1, 256))


def test_row_changes_compare_every_cell_exactly():
    a = pd.DataFrame({"t": [1, 1, 2], "value": [0.0, 0.0, float("nan")], "x": [None, None, 1]})
    b = pd.DataFrame({"t": [1, 2], "value": [-0.0, float("nan")], "x": [None, 1]})
    gone, new = row_changes(a, b)
    assert gone["t"].tolist() == [1, 1] and new["t"].tolist() == [1]
    assert row_changes(a, a) == (None, None)
    assert row_changes(None, b)[1].equals(b)


@settings(max_examples=40)
@given(st.sampled_from(WINDOWS + PATTERNS + UNTIMED),
       st.one_of(disordered(), arrivals(jitter=8, distinct=True, min_events=12)),
       st.sampled_from([2, 5, 9]), st.sampled_from([0, 3]), CHECKPOINTS, SPECULATE)
def test_the_barrier_releases_the_pessimistic_rows(text, batches, delay, lateness, every,
                                                   speculate):
    """Issue 22, point 5: the changelog through the sink barrier, released after each
    micro-batch up to the point its watermark makes final, is the pessimistic policy's
    output (with allowed lateness: each window's last row, as it settles)."""
    check_barrier(text, batches, delay, lateness, every, speculate)


def test_an_idle_key_keeps_the_rows_it_holds_back():
    """With allowed lateness, a window closed by the watermark is emitted before it is
    final; with ``speculate`` 0 it is held back instead, and an idle key (ttl) keeps it
    until its timer emits it."""
    idle = _batches([(0, 10, "a", 1.0)], *([(1, t, "a", 1.0)] for t in (19, 20, 21, 40)))
    check_barrier("aggregate(sum(cur.v), 4s, 2s)", idle, 5, 3, 256, 0, ttl=1)


def check_barrier(text: str, batches: list[pd.DataFrame], delay: int, lateness: int,
                  every: int, speculate: int | None, ttl: int | None = None) -> None:
    m = qre("alphabet a, b; " + text)
    optimistic = rules(m, lateness, every, speculate, ttl)
    marks: list[tuple[int, int]] = []
    rows, _ = simulate(m, batches, optimistic, delay, marks=marks)
    barrier, released, done = Barrier(time="t"), [], 0
    for n_rows, watermark_ms in marks:
        barrier.push(rows.iloc[done:n_rows])
        final = barrier.release(optimistic.release_us(watermark_ms * 1000) // US)
        released += [] if final is None else [final]
        done = n_rows
    assert barrier.held == 0
    got = pd.concat(released, ignore_index=True) if released else rows.iloc[:0]
    pessimistic = replace(optimistic, optimistic=False, speculate_us=None)
    want, _ = simulate(m, batches, pessimistic, delay)
    if clocked.updates(pessimistic):  # updates: a window's last row is its result
        want = want.groupby(["k", "t", LATE], sort=False).tail(1)
        want = want[(want["status"] != 0) | want[LATE].astype(bool)]
    columns = ["k", "t", "tag", "status", "value", LATE]

    def typed(frame: pd.DataFrame) -> pd.DataFrame:
        return frame.astype({"k": int, "t": int, "status": int, "value": float, LATE: bool})

    # The barrier releases rows by time, the pessimistic policy emits a late row when its
    # event arrives: the same rows, as a multiset (the order is checked below).
    assert_equivalent_streams(typed(got), typed(want), "unordered", equal=columns,
                              names=("barrier", "pessimistic"))
    in_time = got[~got[LATE].astype(bool)]  # a late event's row comes when it arrives
    for _, part in in_time.groupby("k"):
        assert part["t"].is_monotonic_increasing


@settings(max_examples=25)
@given(st.sampled_from(["sum(cur)", "!is(a) since is(b)", "aggregate(sum(cur.v), 4s, 2s)",
                        "aggregate(count(), session(2s), [a])"]),
       disordered(), st.sampled_from([2, 5]), st.sampled_from([0, 3]), st.integers(1, 2),
       CHECKPOINTS, SPECULATE)
def test_a_bucket_of_keys_stores_what_each_key_asserted(text, batches, delay, lateness,
                                                       n_buckets, every, speculate):
    """monitor_stream keeps keys in buckets, stored as Arrow between micro-batches: the
    rows asserted for pending events and the checkpoints among them survive that, and
    the changelog is the same."""
    m = qre("alphabet a, b; " + text)
    want, _ = simulate(m, batches, rules(m, lateness, every, speculate), delay)
    got = simulate_buckets(m, batches, rules(m, lateness, every, speculate), delay, n_buckets)
    assert_equivalent_streams(got, want, stream_type("monitor_stream", "k").output_dependence(),
                              equal=["k", "t", "tag", "status", "value", LATE, CHANGE],
                              names=("buckets", "per key"))


@pytest.mark.parametrize("text", ["sum(cur)", "aggregate(count(), session(2s), [a])"])
def test_checkpoints_survive_the_state_store(text):
    """A key's checkpoints, stored with its bucket as Arrow, come back as they were (the
    changelog would be right without them, only slower: so this is checked directly)."""
    from spark_udf.buckets import BucketRules, _key_row, _key_state
    from spark_udf.keyed import KeyState, step
    from spark_udf.plan import make_plan

    m = qre("alphabet a, b; " + text)
    r = rules(m, 0, 1)
    plan = make_plan("test", DISORDER[0], m, "k", "t", "tag", "v", (), "table", "error",
                     timed=r.timed)
    spec = BucketRules(plan, r, m, "table", lambda group: group)
    state = KeyState()
    for batch in DISORDER[:2]:
        state, _ = step(plan, r, m, "table", 0, state, batch[batch["k"] == 0], 0)
    assert len(state.checkpoints) >= 2
    back = _key_state(spec, pd.Series(_key_row(spec, 0, state, None)), state.pending)
    assert [(c.position, c.rows, c.state.last_us, c.state.clock_us, c.state.opened_us)
            for c in back.checkpoints] == [
        (c.position, c.rows, c.state.last_us, c.state.clock_us, c.state.opened_us)
        for c in state.checkpoints]
    for a, b in zip(back.checkpoints, state.checkpoints, strict=True):
        np.testing.assert_array_equal(a.state.config, b.state.config)


def test_events_in_order_are_not_replayed():
    """With checkpoints, a key continues from its last events when the next arrive in
    order (nothing run twice), and rolls back only to the checkpoint before a late one."""
    from spark_udf import LocalStream

    def feed(batches: list[pd.DataFrame]) -> int:
        stream = LocalStream(qre("alphabet a, b; sum(cur)"), "k", "t", "tag", "v",
                             watermark="100 seconds", optimistic=True, checkpoint_every=4)
        for batch in batches:
            stream.feed(batch.drop(columns=TIME_US))
        stream.advance(2**62)
        assert stream.pending == 0  # all settled: nothing kept but the configuration
        return stream.replayed

    ordered = _batches(*[[(0, 10 * i + j, "a", 1.0) for j in range(10)] for i in range(6)])
    assert feed(ordered) == 0
    # A b at 55 after 0..59 (after the a at 55): back to the checkpoint at 54 (every 4
    # from the last batch's first event, 50), then 54..59 again.
    assert feed([*ordered, *_batches([(0, 55, "b", 1.0)])]) == 6


CELLS = st.sampled_from([0.0, -0.0, float("nan"), 1.5])
OBJECTS = st.sampled_from([None, "a", "b", 0.0, -0.0, float("nan"), 2])


@settings(max_examples=60)
@given(st.lists(st.tuples(st.integers(0, 2), CELLS, OBJECTS), max_size=8),
       st.lists(st.tuples(st.integers(0, 2), CELLS, OBJECTS), max_size=8))
def test_row_changes_is_a_multiset_difference(before, after):
    """row_changes against a multiset of rows keyed cell by cell (floats by their bits,
    the missing cells alike; pandas keeps no NaN apart from None in a column of
    objects): each side keeps its unmatched rows, first ones matched."""
    def key(row: tuple) -> tuple:
        i, x, o = row  # in the column of objects, NaN is missing as None is
        return (i, "nan" if x != x else np.float64(x).tobytes(),
                ("null",) if o is None or o != o else ("f", np.float64(o).tobytes())
                if isinstance(o, float) else ("v", o))

    def frame(rows: list[tuple]) -> pd.DataFrame:
        f = pd.DataFrame(rows, columns=["i", "x", "o"]).astype({"x": float})
        f["o"] = pd.Series([r[2] for r in rows], dtype=object)
        return f

    gone, new = row_changes(frame(before), frame(after))
    shared = Counter(map(key, before)) & Counter(map(key, after))
    for rows, got in ((before, gone), (after, new)):
        left, want = shared.copy(), []
        for row in rows:
            if left[key(row)] > 0:
                left[key(row)] -= 1
            else:
                want.append(key(row))
        got_rows = [] if got is None else [key((int(i), float(x), o)) for i, x, o in zip(
            got["i"], got["x"], got["o"], strict=True)]
        assert got_rows == want


@settings(max_examples=60)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 3), st.sampled_from([0.0, -0.0, 1.0])),
                max_size=12), st.integers(1, 4), st.integers(0, 3))
def test_the_barrier_is_a_multiset_of_inserts_less_retractions(changes, n_pushes, until):
    """Barrier against a Counter applied row by row: the same rows held, in whatever pushes
    the changelog comes, and a retraction of a row not held is refused."""
    rows = pd.DataFrame([(t, v, RETRACT if r else INSERT) for r, t, v in changes],
                        columns=["time", "v", CHANGE]).astype({"time": int, "v": float})
    held: Counter = Counter()
    valid = True
    for r, t, v in changes:
        key = (t, np.float64(v).tobytes())
        held[key] += -1 if r else 1
        valid &= held[key] >= 0
    barrier = Barrier()
    cuts = np.linspace(0, len(rows), n_pushes + 1).astype(int)
    try:
        for lo, hi in itertools.pairwise(cuts):
            barrier.push(rows.iloc[lo:hi])
    except ValueError as e:
        assert not valid and "not held" in str(e)
        return
    assert valid
    out = barrier.release(until)
    got = Counter() if out is None else Counter(
        (int(t), np.float64(v).tobytes()) for t, v in zip(out["time"], out["v"], strict=True))
    assert got == Counter({k: c for k, c in held.items() if k[0] <= until and c > 0})
    assert barrier.held == sum(c for k, c in held.items() if k[0] > until)
    if out is not None:
        assert out["time"].is_monotonic_increasing
