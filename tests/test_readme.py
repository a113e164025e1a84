"""The example queries of README.md give the outputs the README shows.

Each ``#### title`` section holds a query in a code block and a table: a row of
events ``tag value`` and a row of outputs (``⊥``, ``⊤`` or a number); a cell ending
in ``×n`` stands for n equal cells.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import numpy as np
import pytest

from qre import qre

README = (Path(__file__).parent.parent / "README.md").read_text()
SECTIONS = re.findall(r"^#### (.+?)\n\n```\n(.*?)\n```\n\n\| event \| ([^\n]+) \|\n\|[-|]+\n"
                      r"\| output \| ([^\n]+) \|$", README, flags=re.M | re.S)


def test_the_readme_has_six_examples():
    assert len(SECTIONS) == 6


def _cells(row: str) -> list[str]:
    """The cells of a table row, ``x ×n`` expanded to n cells ``x``."""
    out = []
    for cell in row.split(" | "):
        repeated = re.fullmatch(r"(.+) ×(\d+)", cell)
        out += [repeated[1]] * int(repeated[2]) if repeated else [cell]
    return out


def test_repeated_cells():
    assert _cells("m 10 ×3 | m 2") == ["m 10", "m 10", "m 10", "m 2"]


@pytest.mark.parametrize(("title", "text", "events", "outputs"), SECTIONS,
                         ids=[s[0] for s in SECTIONS])
def test_readme_example(title, text, events, outputs):
    tags, values = zip(*(e.split() for e in _cells(events)), strict=True)
    m = qre(text)
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
