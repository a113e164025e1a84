"""Damaged disk caches, damaged at random: the next process warns, compiles again and
computes the same outputs — never a crash, never other machine code (issue 19, point 8;
the fault-and-fuzz suite; codegen.numba_cache).

Each example compiles a kernel of its own, damages one of its cache files (Numba's
index ``.nbi``, its object code ``.nbc``, or the generated module ``.py``) by flipping
bits, truncating, appending or replacing bytes, and runs the monitor with
``engine="auto"`` in a new process. A flipped bit in the object code used to abort the
process inside LLVM; sealed data files (digest and key) make it a miss.
"""

from __future__ import annotations

import json
import os
import pickle
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from test_codegen_engine import _AUTO_RUN, _env, _numba_files, _tr

from codegen.cache_files import MAGIC
from codegen.generated import CodegenEngine
from dt import DT

pytestmark = pytest.mark.fuzz

ROOT = Path(__file__).resolve().parents[1]
SCALE = int(os.environ.get("QRE_FUZZ_SCALE", "1"))
WORD = np.array([1.0, 2.0, 3.0, 4.0])


def _compiled(tag: float) -> tuple[DT, CodegenEngine, list[float]]:
    """A one-state DT of its own (``tag`` makes its module and cache files unique: no
    other test compiles ``q * 1000.x + cur``), its compiled kernel and WORD's outputs."""
    dt = DT(("a",), ("q",), ("q",), ("q",), (_tr("a", ["q"], "q", f"q * {tag!r} + cur"),))
    engine = CodegenEngine(dt, registers=None)
    engine.compile()
    want = engine.advance(*engine.initial_config([0.0]), np.zeros(4, dtype=np.int64),
                          WORD)[3][:, 0].tolist()
    return dt, engine, want


def _damage(path: Path, how: str, rng: random.Random) -> None:
    """Damage the file at positions drawn as fractions of its length (hypothesis replays
    an example: its draws may not depend on a size that differs between runs)."""
    data = bytearray(path.read_bytes())

    def position() -> int:
        return int(rng.random() * len(data))

    if how == "flip bits":
        for _ in range(rng.randint(1, 4)):
            k = position()
            data[k] ^= 1 << rng.randrange(8)
    elif how == "truncate":
        del data[position():]
    elif how == "append":
        data += rng.randbytes(rng.randint(1, 64))
    else:  # overwrite a stretch
        k = position()
        data[k:k + 16] = rng.randbytes(16)
    path.write_bytes(bytes(data))


def _run_auto(dt: DT, cache: Path) -> tuple[dict, str]:
    done = subprocess.run([sys.executable, "-c", _AUTO_RUN.format(dt=dt.to_json())],
                          capture_output=True, text=True, cwd=ROOT, timeout=300, check=False,
                          env={**_env(), "QRE_CACHE_DIR": str(cache)})
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


@settings(max_examples=3 * SCALE)
@given(target=st.sampled_from([".nbi", ".nbc", ".py"]),
       how=st.sampled_from(["flip bits", "truncate", "append", "overwrite"]),
       rng=st.randoms(use_true_random=False),
       tag=st.integers(0, 10**9).map(lambda k: 1000 + k / 1e9))
def test_a_randomly_damaged_cache_runs_the_same(codegen_cache: Path, target: str, how: str,
                                               rng: random.Random, tag: float) -> None:
    dt, engine, want = _compiled(tag)
    files = {**_numba_files(engine.path, "run_chunk"), ".py": engine.path}
    _damage(files[target], how, rng)
    result, stderr = _run_auto(dt, codegen_cache)
    assert result == {"engine": "codegen", "value": want}, stderr[-2000:]
    event(f"{target} {how}: " + ("warned" if "is damaged" in stderr else "quiet"))


def test_an_unsealed_data_file_is_a_quiet_miss(codegen_cache: Path) -> None:
    """A data file Numba saved without the seal (qre before sealing, or an unguarded
    Numba) is compiled again without a warning, then sealed."""
    dt, engine, want = _compiled(7.25)
    data = _numba_files(engine.path, "run_chunk")[".nbc"]
    sealed = data.read_bytes()
    assert sealed.startswith(MAGIC)
    _, payload = pickle.loads(sealed[len(MAGIC) + 32:])
    data.write_bytes(pickle.dumps(payload))  # what Numba itself writes
    result, stderr = _run_auto(dt, codegen_cache)
    assert result == {"engine": "codegen", "value": want}
    assert "damaged" not in stderr, stderr[-2000:]
    assert data.read_bytes().startswith(MAGIC)
