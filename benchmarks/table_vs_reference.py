"""Table engine against the reference evaluator on one compiled query, side by side.

Run: ``.venv/bin/python benchmarks/table_vs_reference.py QUERY TAGS [N]``, e.g.
``.venv/bin/python benchmarks/table_vs_reference.py "$(cat examples/last_five.qre)" m``.
Both engines read the same N random events (seeded) from the initial value 0.0;
the script checks that every output is identical, then prints events/s of each
and their ratio. The table kernel is compiled (or loaded from its cache) before
timing.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from codegen.kernels import TableEngine
from dt.reference import initial_config, outputs, step
from dt.values import decode
from qre import qre


def main(text: str, tags: str, n: int = 100_000) -> None:
    alphabet = tuple(tags.split(","))
    dt = qre(text, alphabet=alphabet).dt
    print(f"DT: {len(dt.states)} states, {len(dt.transitions)} transitions, size {dt.size}")
    rng = np.random.default_rng(0)
    codes = rng.integers(0, len(alphabet), n).astype(np.int64)
    cur = rng.normal(size=n)

    engine = TableEngine(dt)
    status, value = engine.initial_config([0.0])
    engine.advance(status, value, codes[:10], cur[:10])  # compile or load the kernel
    start = time.perf_counter()
    _, _, out_status, out_value = engine.advance(status, value, codes, cur)
    table_s = time.perf_counter() - start

    config = initial_config(dt, [0.0])
    reference_outputs = []
    start = time.perf_counter()
    for k in range(n):
        config = step(dt, config, alphabet[codes[k]], float(cur[k]))
        reference_outputs.append(outputs(dt, config))
    reference_s = time.perf_counter() - start

    for k in range(n):
        assert repr(tuple(decode(out_status[k], out_value[k]))) == repr(reference_outputs[k]), k
    print(f"outputs identical on all {n} events")
    print(f"table:     {n / table_s:>12,.0f} events/s")
    print(f"reference: {n / reference_s:>12,.0f} events/s")
    print(f"ratio:     {reference_s / table_s:>12,.0f}x")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], *(int(a) for a in sys.argv[3:4]))
