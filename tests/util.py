"""Comparison helpers shared by the tests: extended values compared exactly.

Two extended values are the same when they have the same status and, if
defined, the same float bit for bit (so NaN equals NaN, and -0.0 differs from 0.0).
"""

from __future__ import annotations

from collections.abc import Sequence

from dt.values import BOT, TOP, XValue, is_defined


def same(a: XValue, b: XValue) -> bool:
    if a is BOT or b is BOT or a is TOP or b is TOP:
        return a is b
    return float(a).hex() == float(b).hex()


def same_vector(a: Sequence[XValue], b: Sequence[XValue]) -> bool:
    return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))


def assert_same_outputs(got: Sequence[Sequence[XValue]], want: Sequence[Sequence[XValue]]) -> None:
    """Outputs after every prefix: same length, same vectors; the message shows the first diff."""
    assert len(got) == len(want), f"{len(got)} outputs, expected {len(want)}"
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        assert same_vector(g, w), f"after {k} events: got {g}, expected {w}"


def status_vector(xs: Sequence[XValue]) -> tuple[str, ...]:
    return tuple("d" if is_defined(x) else repr(x) for x in xs)
