"""The window store's cost per step: every aggregate at count windows of 5, 1000 and 1e6.

Run (from the repository root)::

    .venv/bin/python benchmarks/window_store.py [--steps 1000000] [--repeat 3] [--sweep]

(15 s on 2 cores; 25 s more with ``--sweep``) and it prints a table of ns per step:
one key, every step entering, seeded N(0, 1) values; each cell is the best of
``--repeat`` calls of :func:`codegen.window_store.window_values` after a warm-up call (the
Numba kernels load from the disk cache or compile then), the window bounds, gathers and
sorts included. Two rows more: min through the Fenwick tree instead of the deque (the
measurement that chose the deque) and avg over values spread from 1e−300 to 1e300 (the
superaccumulator's worst case: every limb in use). Then the target: avg over the last
1000 costs at most twice avg over the last 5.

``--sweep`` adds the measurement behind :data:`codegen.window_store.SORTED_WIDTHS`: median
and distinct at widths 32 to 1024, through the sorted window and through the ranks.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from unittest import mock

import numpy as np

import codegen.window_store as window_store
from codegen.window_store import AGGREGATES, window_bounds, window_values
from codegen.window_store.fenwick import tree_values

SIZES = (5, 1000, 1_000_000)
SWEEP_WIDTHS = (32, 64, 128, 256, 512, 1024)


def best_ns(call: Callable[[], object], steps: int, repeat: int) -> float:
    """The best of ``repeat`` timed calls, in ns per step, after one untimed call."""
    call()
    return min(_seconds(call) for _ in range(repeat)) / steps * 1e9


def _seconds(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def _table(rows: dict[str, list[float]], columns: tuple[int, ...], title: str) -> None:
    width = max(len(name) for name in [*rows, title])
    print(f"{title:<{width}}  " + "  ".join(f"{c:>9,}" for c in columns))
    for name, cells in rows.items():
        print(f"{name:<{width}}  " + "  ".join(f"{c:9.1f}" for c in cells))


def _tree_min(offsets: np.ndarray, enters: np.ndarray, x: np.ndarray, size: int) -> np.ndarray:
    """min through the Fenwick tree, as :func:`window_values` would call it."""
    first, end = window_bounds(offsets, enters, None, size, False)
    return tree_values(offsets, first, end, x[enters], np.array([0, len(x)]), "min")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--sweep", action="store_true",
                        help="also time the sorted window against the ranks by width")
    args = parser.parse_args()
    n, repeat = args.steps, args.repeat
    rng = np.random.default_rng(7)
    offsets = np.array([0, n], dtype=np.int64)
    enters = np.ones(n, dtype=bool)
    x = rng.standard_normal(n)
    spread = x * 10.0 ** rng.integers(-300, 301, n)

    def timed(aggregate: str, size: int, values: np.ndarray = x) -> float:
        return best_ns(lambda: window_values(offsets, enters, values, None, size, False,
                                             aggregate, 0.9), n, repeat)

    rows = {aggregate: [timed(aggregate, size) for size in SIZES] for aggregate in AGGREGATES}
    rows["min (Fenwick)"] = [best_ns(lambda s=size: _tree_min(offsets, enters, x, s), n,
                                     repeat) for size in SIZES]
    rows["avg, 1e±300"] = [timed("avg", size, spread) for size in SIZES]
    _table(rows, SIZES, "ns/step")
    print(f"avg over 1000 / avg over 5: {rows['avg'][1] / rows['avg'][0]:.2f} (target ≤ 2)")
    if args.sweep:
        sweep: dict[str, list[float]] = {}
        for aggregate in ("median", "distinct"):
            for path, width in (("sorted window", 2**62), ("ranks", 0)):
                with mock.patch.dict(window_store.SORTED_WIDTHS, {aggregate: width}):
                    sweep[f"{aggregate}, {path}"] = [timed(aggregate, w) for w in SWEEP_WIDTHS]
        print()
        _table(sweep, SWEEP_WIDTHS, "ns/step by width")


if __name__ == "__main__":
    main()
