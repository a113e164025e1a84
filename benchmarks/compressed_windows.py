"""Seed 001's A_C: which codec compresses a window's state (issue 23 §3).

Run (from the repository root)::

    .venv/bin/python benchmarks/compressed_windows.py [--repeat 200]

(seconds) and writes the table to benchmarks/RESULTS.md, section "compressed_windows"
(``--output``).

A γ of :mod:`qre.runtime.compressed_aggregate` is a key's tuples, int64 times and float64
values. Three kinds of γ, as a window holds them: Linear Road position reports (a
report every 30 s, speeds 0–100 as floats, a few stops), 40 of them (a 20-minute journey)
and 360 (3 hours); and 360 N(0, 1) readings a second apart (values with no pattern). For
each codec pyarrow offers, on the packed form (times delta-encoded, both arrays
byte-shuffled: :func:`qre.runtime.compressed_aggregate.pack`) and on the raw bytes: the
compressed size against the 16 bytes a tuple takes, and the microseconds to compress and
to decompress one γ (best of ``--repeat``).

The candidates this table leaves: on the packed form, zstd, 0.031 of the raw size at 43
µs a round trip, and lz4, 0.050 at 23 µs, the cheapest (brotli 0.026 at 96 µs and gzip
0.030 at 194 µs cost over twice as much); packing makes zstd's γ 4x smaller than on the
raw bytes (0.124). A_C's default between the two is chosen end to end, by
benchmarks/linear_road.py: lz4 (the goal of ≤ 15 % throughput loss holds only with it).
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
from results import RESULTS, write_section

from qre.runtime.compressed_aggregate import CODECS, pack, unpack


def linear_road(reports: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A vehicle's reports: every 30 s, a speed that drifts, stops now and then."""
    times = 3600 + 30 * np.arange(reports, dtype=np.int64)
    speed = np.clip(60 + np.cumsum(rng.integers(-5, 6, reports)), 0, 100).astype(np.float64)
    speed[rng.random(reports) < 0.05] = 0.0
    return times, speed


def readings(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    return np.arange(n, dtype=np.int64) + 1_700_000_000, rng.normal(size=n)


def best_us(job: Callable[[], object], repeat: int) -> float:
    best = np.inf
    for _ in range(repeat):
        start = time.perf_counter()
        job()
        best = min(best, time.perf_counter() - start)
    return best * 1e6


def measure(repeat: int) -> list[tuple[str, str, str, float, float, float]]:
    rng = np.random.default_rng(0)
    kinds = {"Linear Road, 40 reports": linear_road(40, rng),
             "Linear Road, 360 reports": linear_road(360, rng),
             "N(0, 1), 360 readings": readings(360, rng)}
    return [row for kind, (times, values) in kinds.items() for codec in CODECS
            for row in codec_rows(kind, times, values, codec, repeat)]


def codec_rows(kind: str, times: np.ndarray, values: np.ndarray, codec: str,
               repeat: int) -> list[tuple[str, str, str, float, float, float]]:
    """One codec on one γ, packed and raw: size ratio, compress and decompress µs."""
    n = len(times)
    raw = np.concatenate([times.view(np.uint8), values.view(np.uint8)]).tobytes()
    data = pack(times, values, codec)
    assert np.array_equal(unpack(data, n, codec)[0], times)
    plain = pa.compress(raw, codec=codec, asbytes=True)
    return [(kind, codec, "packed", len(data) / (16 * n),
             best_us(lambda: pack(times, values, codec), repeat),
             best_us(lambda: unpack(data, n, codec), repeat)),
            (kind, codec, "raw", len(plain) / (16 * n),
             best_us(lambda: pa.compress(raw, codec=codec, asbytes=True), repeat),
             best_us(lambda: pa.decompress(plain, decompressed_size=16 * n, codec=codec,
                                           asbytes=True), repeat))]


def table(rows: list[tuple[str, str, str, float, float, float]], repeat: int) -> str:
    lines = ["## compressed_windows: the codec of A_C's compressed windows (issue 23 §3)", "",
             f"`.venv/bin/python benchmarks/compressed_windows.py --repeat {repeat}` "
             f"({platform.machine()}, {os.cpu_count()} cores, Python "
             f"{platform.python_version()}, pyarrow {pa.__version__}); size relative to "
             f"16 bytes a tuple, best of {repeat}.", "",
             "| γ | codec | form | size | compress µs | decompress µs |",
             "|---|---|---|---:|---:|---:|"]
    for kind, codec, form, ratio, comp, decomp in rows:
        lines.append(f"| {kind} | {codec} | {form} | {ratio:.3f} | {comp:.1f} | "
                     f"{decomp:.1f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--output", default=str(RESULTS))
    args = parser.parse_args()
    text = table(measure(args.repeat), args.repeat)
    print(text)
    write_section(Path(args.output), "compressed_windows", text)


if __name__ == "__main__":
    main()
