"""docs/API.md, the project's contract, is true: every public name it lists exists, and
every example on it runs (issue 18, point 14).

Python blocks run in order, in one namespace, in a temporary working directory (the
page's examples build on each other); ``$ qre ...`` lines of ``sh`` blocks run through
the command line and must exit 0, or N when the line ends with ``# exits N``. The
Spark examples use the tests' shared session (``local_session`` returns it).
"""

from __future__ import annotations

import contextlib
import importlib
import io
import re
import shlex
from pathlib import Path

import pytest

from qre.cli import main

DOC = Path(__file__).resolve().parents[1] / "docs" / "API.md"
TEXT = DOC.read_text()
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


def _names() -> list[str]:
    section = TEXT[TEXT.index("\n## Names"):]
    return re.findall(r"^\| `([\w.]+)` \|", section, re.M)


def _resolve(name: str) -> object:
    """A dotted name: the longest importable module prefix, then attributes."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(name)


def test_the_page_lists_the_public_names():
    names = _names()
    assert len(names) >= 30
    for name in names:
        assert _resolve(name) is not None, name
    for package in ("qre", "spark_udf"):
        exported = importlib.import_module(package).__all__
        for name in exported:
            assert f"{package}.{name}" in names, f"{package}.{name} is public but not listed"


def _command(line: str) -> tuple[list[str], int]:
    text, _, comment = line.partition("   #")
    expected = re.search(r"exits (\d)", comment)
    return shlex.split(text)[2:], int(expected.group(1)) if expected else 0  # after "$ qre"


def test_every_example_runs(spark, tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "api_doc"}
    ran = {"python": 0, "sh": 0}
    for kind, body in BLOCK.findall(TEXT):
        if kind == "python":
            exec(compile(body, f"{DOC.name} example {ran['python']}", "exec"), namespace)
            ran["python"] += 1
        elif kind == "sh":
            for line in body.splitlines():
                if not line.startswith("$ qre "):
                    continue
                argv, want = _command(line)
                with contextlib.redirect_stdout(io.StringIO()), \
                        contextlib.redirect_stderr(io.StringIO()) as err:
                    code = main(argv)
                assert code == want, f"{line}: exit {code}, {err.getvalue()}"
                ran["sh"] += 1
    assert ran["python"] >= 8 and ran["sh"] >= 6


@pytest.mark.parametrize("section", ["Install", "Values and outputs", "Events", "Python API",
                                     "Query text (QRE-Past)", "Timed queries",
                                     "Data transducers as files", "Command line", "Spark",
                                     "Streams as traces", "Names"])
def test_the_sections_are_there(section):
    assert f"\n## {section}\n" in TEXT
