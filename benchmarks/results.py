"""benchmarks/RESULTS.md is written by several scripts, each owning a section.

A section is the text between ``<!-- begin NAME -->`` and ``<!-- end NAME -->``
lines; :func:`write_section` replaces it (or appends it) and leaves the
others as they are, so each script can be rerun on its own.

>>> import tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "R.md"
>>> write_section(p, "a", "## A\\n1"); write_section(p, "b", "## B")
>>> write_section(p, "a", "## A\\n2")
>>> print(p.read_text())
# Benchmark results
<BLANKLINE>
<!-- begin a -->
## A
2
<!-- end a -->
<BLANKLINE>
<!-- begin b -->
## B
<!-- end b -->
<BLANKLINE>
"""

from __future__ import annotations

import re
from pathlib import Path

RESULTS = Path(__file__).parent / "RESULTS.md"
TITLE = "# Benchmark results\n"


def write_section(path: Path, name: str, text: str) -> None:
    """Put ``text`` as section ``name`` of the markdown file ``path``."""
    block = f"<!-- begin {name} -->\n{text.strip()}\n<!-- end {name} -->\n"
    old = path.read_text() if path.exists() else TITLE
    pattern = re.compile(rf"<!-- begin {re.escape(name)} -->\n.*?<!-- end {re.escape(name)} -->\n",
                         re.S)
    new = (pattern.sub(lambda _: block, old) if pattern.search(old)
           else f"{old.rstrip()}\n\n{block}")
    path.write_text(new)
