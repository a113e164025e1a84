"""The demo program (`make demo`) and its bundled sample data (package qre.examples)."""

from __future__ import annotations

import csv
import io

from dt import DT
from qre import Monitor, examples
from qre.demo import main


def _sums_since_reset() -> list[tuple[str, float, float | None]]:
    """The expected table, computed directly: the sum of the amounts since the last reset,
    undefined (None) on a reset event (no amount since)."""
    rows, total = [], 0.0
    with io.StringIO(examples.read_text("events.csv"), newline="") as f:
        for row in csv.DictReader(f):
            value = float(row["value"])
            if row["tag"] == "reset":
                total = 0.0
                rows.append((row["tag"], value, None))
            else:
                total += value
                rows.append((row["tag"], value, total))
    return rows


def test_example_dt_file_is_in_canonical_form():
    text = examples.read_text("running_sum.json")
    assert DT.from_json(text).to_json() == text.rstrip("\n")


def test_example_monitor_computes_sums_since_the_last_reset():
    want = _sums_since_reset()
    assert len(want) >= 15 and any(w is None for _, _, w in want)
    d = DT.from_json(examples.read_text("running_sum.json"))
    out = Monitor.from_dt(d).run([t for t, _, _ in want], [v for _, v, _ in want])
    assert out.status.tolist() == [0 if w is None else 1 for _, _, w in want]
    assert [v for v, (_, _, w) in zip(out.value, want, strict=True) if w is not None] == [
        w for _, _, w in want if w is not None]


def test_demo_prints_the_dump_and_one_row_per_event(capsys):
    assert main([]) == 0
    text = capsys.readouterr().out
    d = DT.from_json(examples.read_text("running_sum.json"))
    assert d.dump() in text
    lines = text.splitlines()
    header = next(k for k, line in enumerate(lines) if line.split()[:2] == ["#", "tag"])
    assert set(lines[header + 1]) == {"-"}
    rows = [line.split() for line in lines[header + 2:]]
    want = _sums_since_reset()
    assert len(rows) == len(want)
    for k, (row, (tag, value, total)) in enumerate(zip(rows, want, strict=True)):
        assert row[:3] == [str(k), tag, f"{value:g}"]
        if total is None:
            assert row[3:5] == ["0", "⊥"]
        else:
            assert row[3:] == ["1", f"{total:g}"]
