"""The example queries of README.md give the outputs the README shows.

Each ``#### title`` section holds a query in a code block and a table: a row of
events ``tag value``, optionally a row of times (seconds: the query runs through
``run_timed``), and a row of outputs (``⊥``, ``⊤`` or a number); a cell ending in
``×n`` stands for n equal cells. With times, a ``tick`` cell is a clock tick that
``run_timed`` makes (not an input), its time the stamp of its row.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from qre import qre

README = (Path(__file__).parent.parent / "README.md").read_text()
SECTIONS = re.findall(r"^#### (.+?)\n\n```\n(.*?)\n```\n\n\| event \| ([^\n]+) \|\n\|[-|]+\n"
                      r"(?:\| time \| ([^\n]+) \|\n)?\| output \| ([^\n]+) \|$", README,
                      flags=re.M | re.S)


def test_the_readme_has_eight_examples():
    assert len(SECTIONS) == 8


def _cells(row: str) -> list[str]:
    """The cells of a table row, ``x ×n`` expanded to n cells ``x``."""
    out = []
    for cell in row.split(" | "):
        repeated = re.fullmatch(r"(.+) ×(\d+)", cell)
        out += [repeated[1]] * int(repeated[2]) if repeated else [cell]
    return out


def test_repeated_cells():
    assert _cells("m 10 ×3 | m 2") == ["m 10", "m 10", "m 10", "m 2"]


@pytest.mark.parametrize(("title", "text", "events", "times", "outputs"), SECTIONS,
                         ids=[s[0] for s in SECTIONS])
def test_readme_example(title, text, events, times, outputs):
    steps = [[*e.split(), "0"][:2] for e in _cells(events)]  # a tick has no value
    tags, values = zip(*steps, strict=True)
    m = qre(text)
    if times:
        stamps = [int(t) for t in _cells(times)]
        given = [(t, tag) for t, tag in zip(stamps, tags, strict=True) if tag != "tick"]
        rows = m.run_timed([t for t, _ in given], [tag for _, tag in given],
                           tiebreak=list(range(len(given))), undefined="keep")
        assert rows["tag"].tolist() == list(tags) and rows["time"].tolist() == stamps
        out = pd.DataFrame({"status": rows["status"], "value": rows["value"]})
    else:
        out = m.run(list(tags), [float(v) for v in values])
    want = _cells(outputs)
    status = [0 if w == "⊥" else 2 if w == "⊤" else 1 for w in want]
    np.testing.assert_array_equal(out.status, status)
    defined = out.status == 1
    np.testing.assert_allclose(out.value[defined],
                               [float(w) for w, s in zip(want, status, strict=True) if s == 1])


SIZES = re.findall(r"^#### .+?\n\n```\n(.*?)\n```\n.*?^DT: (\d+) states, size (\d+); "
                   r"optimized: (\d+) states, size (\d+)\.$", README, flags=re.M | re.S)


def test_the_readme_states_the_dt_size_of_each_example():
    assert len(SIZES) == len(SECTIONS)
    for text, *numbers in SIZES:
        s = qre(text).stats
        assert [int(k) for k in numbers] == [s.unoptimized_states, s.unoptimized_size,
                                             s.states, s.size], text


# The command-line transcripts: "$ qre ARGS" then the exact stdout, in ``` blocks.
TRANSCRIPTS = re.findall(r"^\$ qre (.+)\n((?:(?!\$ |```).*\n)*)", README, flags=re.M)


def test_the_readme_has_command_transcripts():
    assert len(TRANSCRIPTS) >= 2


@pytest.mark.parametrize(("argv", "output"), TRANSCRIPTS, ids=[t[0][:40] for t in TRANSCRIPTS])
def test_readme_transcript(argv, output, capsys):
    from qre.cli import main

    main(shlex.split(argv))
    assert capsys.readouterr().out == output
