"""The ``"codegen"`` engine: a Numba kernel generated for one query, cached on disk.

Seed 003, §5.1 (Equation (1), Theorem 5.1). :func:`codegen.emit.emit` writes the
Python source of a module specialised to one DT (straight-line code per label,
the configuration in local variables for small DTs; above
:data:`codegen.emit.MAX_UNROLLED_STATES` states, loops over tables of alike blocks of
states, :mod:`codegen.loops`, which compile in seconds); :class:`CodegenEngine`
imports it and runs it behind the array interface of
:class:`codegen.kernels.TableEngine` (same validation —
:class:`codegen.kernels.ArrayEngine` — same outputs bit for bit up to the sign
of a NaN, same errors). One stream is one key of the keyed kernel
``run_chunk``; a keyed batch is split into chunks of keys with about equal rows
(:func:`codegen.kernels.chunk_bounds`) run on a pool of threads (the kernel
releases the GIL), as many as Numba's threads.

Cache. The module is written to ``$QRE_CACHE_DIR`` (default
``~/.cache/qre/codegen``) as ``qre_<sha256 of the source>.py``; the source is a
function of the DT, so the name is too. Numba's ``cache=True`` then stores the
machine code next to it in ``__pycache__`` (``<module>.<function>-<line>.py311.nbi``
index files and ``.nbc`` object files), and another process with the same DT
loads it instead of compiling. Files are created atomically (a temporary file
then a link or ``os.replace``) so that no process sees a half-written module,
and an existing module is never rewritten (Numba's index is keyed on the
file's modification time). Loaded modules are kept per hash in this process.
A damaged Numba cache file is a cache miss (:mod:`codegen.numba_cache`): a
warning, a compile, fresh files for the next process.

Readiness. :func:`is_ready` (or :meth:`CodegenEngine.is_ready`) says whether
running (``advance``, ``advance_keys``) will not compile: ``run_chunk`` is
compiled in this process, or its Numba cache files exist — after
:meth:`CodegenEngine.compile` or after any run. :meth:`CodegenEngine.compile`
compiles (or loads) everything eagerly, ``init`` too, and logs the time;
without it the first ``advance`` pays that cost (and ``init`` compiles on
the first ``initial_config``). :meth:`CodegenEngine.compile_apart` compiles in another
Python process into the disk cache, then loads from it: a compile of seconds (more for a
DT of thousands of states) then holds neither this process's interpreter lock nor
Numba's compiler lock, so runs on the table engine meanwhile go at full speed.
"""

from __future__ import annotations

import hashlib
import importlib.util
import itertools
import logging
import os
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType

import numba
import numpy as np

from dt.model import DT

from .cache_files import cache_dir, new_temporary
from .emit import emit
from .grouping import block_rows, merge_blocks
from .kernels import ArrayEngine, chunk_bounds, default_chunks
from .numba_cache import guard_namespace
from .tables import code_dtype

__all__ = ["CodegenEngine", "cache_dir", "is_ready"]

logger = logging.getLogger(__name__)

_RUN = ("run_chunk", "run_rows")
"""The functions a run calls (``segment`` is compiled into ``run_chunk``; ``run_rows``
where the module has it, small DTs): what readiness asks for. ``init`` (Δ_i) is not
among them: a Monitor computes its initial configuration with the reference evaluator,
so a run never compiles ``init`` — had readiness waited for it, ``auto`` would never
pick a kernel that ``engine="codegen"`` runs had compiled."""

_LOADED: dict[str, ModuleType] = {}
"""Imported generated modules by source hash (this process)."""

_CALLED: set[tuple[str, str]] = set()
"""(source hash, function) of the entry points called in this process: no compile or
cache load is due on their next call (asking Numba, ``fn.signatures``, costs about 20 µs
a call, a tenth of a million-event run of a running sum)."""

_LOCK = threading.RLock()

_DIGESTS: weakref.WeakKeyDictionary[DT, str] = weakref.WeakKeyDictionary()
"""Source hash per DT, so that :func:`is_ready` does not emit twice."""

_PARALLEL_ROWS = 10_000
"""Below this many rows a keyed batch runs in the calling thread (threads cost more)."""

_POOL: ThreadPoolExecutor | None = None

_ROW_TABLE = 4
"""``run_rows`` is used while the keys' kept states (``ROW_STATES``) hold at most this many
entries per row (beyond, e.g. a key per row, the table would outweigh the data it saves a
sort of)."""


_BLOCK_BYTES = 1 << 20
"""``run_rows`` runs keys in blocks whose tables hold at most this many bytes (half a core's
L2 cache here), when one table of all keys would hold more."""

_NO_ROWS = np.zeros(0, dtype=np.int64)
"""``run_chunk``'s order of rows grouped already (it reads none)."""


def _pool() -> ThreadPoolExecutor:
    """The threads that run chunks of keys (as many as Numba's threads), made once."""
    global _POOL
    with _LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=numba.get_num_threads(),
                                       thread_name_prefix="qre-codegen")
        return _POOL


def _fallback_dir() -> Path:
    """A private directory of this user under the system's temporary directory."""
    user = os.getuid() if hasattr(os, "getuid") else 0
    path = Path(tempfile.gettempdir()) / f"qre-codegen-{user}"
    path.mkdir(mode=0o700, exist_ok=True)
    return path


def module_name(digest: str) -> str:
    """The module (and file stem) of a generated source with sha256 ``digest``."""
    return f"qre_{digest}"


class CodegenEngine(ArrayEngine):
    """The codegen engine of one DT: ``initial_config``, ``advance``, ``advance_keys``
    exactly as :class:`codegen.kernels.TableEngine`, run by a generated kernel.

    Building the engine emits the source (cheap); the module is written and
    imported on first use, and Numba compiles (or loads from its disk cache)
    each function on its first call — or all at once with :meth:`compile`.
    """

    def __init__(self, dt: DT, *, registers: bool | None = None,
                 loops: bool | None = None) -> None:
        """``registers``: keep the configuration in local variables across events (by
        default for DTs of at most :data:`codegen.emit.MAX_REGISTER_STATES` states).
        ``loops``: step blocks of states of one shape in loops (:mod:`codegen.loops`; by
        default for DTs of more than :data:`codegen.emit.MAX_UNROLLED_STATES` states)."""
        super().__init__(dt)
        self.source: str = emit(self.tables, states=dt.states, tags=dt.alphabet,
                                registers=registers, loops=loops)
        self.digest: str = hashlib.sha256(self.source.encode()).hexdigest()
        if registers is None and loops is None:
            _DIGESTS[dt] = self.digest

    @property
    def path(self) -> Path:
        """The module's file in the cache directory (as configured now: an engine
        unpickled in another process uses that process's cache)."""
        return cache_dir() / f"{module_name(self.digest)}.py"

    # ------------------------------------------------------------------ module

    def module(self) -> ModuleType:
        """The generated module, written to the cache directory and imported once."""
        with _LOCK:
            mod = _LOADED.get(self.digest)
            if mod is None:
                path = self.path
                try:
                    _write_once(path, self.source)
                except OSError as err:
                    # An unwritable cache (read-only home, a locked-down executor): still run,
                    # from a private temporary directory, but say so.
                    path = _fallback_dir() / path.name
                    logger.warning("codegen: cannot write %s (%s); using %s", self.path, err,
                                   path)
                    _write_once(path, self.source)
                mod = _import(path, module_name(self.digest))
                guard_namespace(vars(mod))  # a damaged Numba cache file: recompile, warn
                _LOADED[self.digest] = mod
            return mod

    def is_ready(self) -> bool:
        """True if running needs no compilation: ``run_chunk`` is compiled in this process,
        or Numba's cache files of it are on disk (see :data:`_RUN`)."""
        return _ready(self.digest, self.path)

    def compile(self) -> float:
        """Compile (or load from the disk cache) every entry point now; the seconds taken.

        Logged at INFO level with whether the machine code came from the disk cache.
        """
        start = time.perf_counter()
        on_disk = _on_disk(self.path)
        if not on_disk:
            self._announce("the kernel")
        mod = self.module()
        q, i = self.tables.n_states, len(self.dt.initial)
        # The same argument types as _initial: one signature.
        mod.init(np.zeros(i, dtype=np.uint8), np.full(i, np.nan), np.zeros(q, dtype=np.uint8),
                 np.full(q, np.nan))
        _compile_runs(mod, q, len(self.columns), len(self.tables.final))
        elapsed = time.perf_counter() - start
        logger.info("codegen %s: %s in %.3f s (%d states, DT size %d, %d source lines)",
                    self.digest[:12], "loaded from the disk cache" if on_disk else "compiled",
                    elapsed, q, self.dt.size, self.source.count("\n"))
        return elapsed

    def compile_apart(self) -> float:
        """Compile every entry point in a fresh Python process, which leaves the machine
        code in the disk cache, then load it here (:meth:`compile`); the seconds taken.

        The child rebuilds this engine from the DT's JSON and checks that it generates
        the same source (the same hash); a child that fails raises ``RuntimeError`` with
        the end of its error output. If no process can be started, compiles here.
        """
        start = time.perf_counter()
        if not self.is_ready():
            root = str(Path(__file__).resolve().parent.parent)  # the dt and codegen packages
            env = dict(os.environ, QRE_CACHE_DIR=str(self.path.parent),
                       PYTHONPATH=os.pathsep.join(filter(None, [root,
                                                                os.environ.get("PYTHONPATH")])))
            self._announce("the kernel in another process")
            try:
                done = subprocess.run([sys.executable, "-c", _CHILD, self.digest],
                                      input=self.dt.to_json(indent=None), capture_output=True,
                                      text=True, env=env, check=False)
            except OSError as err:
                logger.info("codegen %s: cannot start a process (%s); compiling here",
                            self.digest[:12], err)
                return self.compile()
            if done.returncode:
                tail = " ".join(done.stderr.strip().splitlines()[-3:])
                raise RuntimeError(f"codegen {self.digest[:12]}: the compiling process "
                                   f"failed (exit {done.returncode}): {tail}")
        self.compile()  # loads from the disk cache
        return time.perf_counter() - start

    # ------------------------------------------------------------------ engine hooks

    def _initial(self, x_status: np.ndarray, x_value: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
        q = self.tables.n_states
        status, value = np.empty(q, dtype=np.uint8), np.empty(q)
        self._call("init", x_status, x_value, status, value)
        return status, value

    def _advance(self, codes: np.ndarray, data: np.ndarray, status: np.ndarray,
                 value: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        n = codes.shape[0]
        fin_s, fin_v, out_s, out_v = self._advance_keys(
            None, np.array([0, n], dtype=np.int64), codes, data, status, value)
        return fin_s[0], fin_v[0], out_s, out_v

    def _advance_keys(self, order: np.ndarray | None, offsets: np.ndarray, codes: np.ndarray,
                      data: np.ndarray, status: np.ndarray, value: np.ndarray,
                      finals: bool = True
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Chunks of consecutive keys (about equal rows, :func:`codegen.kernels.chunk_bounds`)
        run by the GIL-free ``run_chunk`` in parallel threads; each writes its own
        keys' rows of the outputs and of the final configurations (with ``finals``:
        the kernel writes none into arrays of no rows). Keys whose rows are scattered
        (an ``order``) have each key's events copied together first; ``order`` None: the
        rows are grouped already, and run where they are."""
        n, n_keys = codes.shape[0], offsets.shape[0] - 1
        q, n_out = self.tables.n_states, len(self.tables.final)
        # Every row belongs to one key and the kernel writes every row: no fill needed.
        out_s, out_v = np.empty((n, n_out), dtype=np.uint8), np.empty((n, n_out))
        k = n_keys if finals else 0
        fin_s, fin_v = np.empty((k, q), dtype=np.uint8), np.empty((k, q))
        bounds = chunk_bounds(offsets, n, default_chunks()).tolist()
        chunks = [(g0, g1) for g0, g1 in itertools.pairwise(bounds) if g1 > g0] or [(0, 0)]

        def run(chunk: tuple[int, int]) -> None:
            self._call("run_chunk", codes, data, _NO_ROWS if order is None else order, offsets,
                       chunk[0], chunk[1], status, value, out_s, out_v, fin_s, fin_v,
                       order is not None)

        if len(chunks) == 1 or n < _PARALLEL_ROWS:
            for chunk in chunks:
                run(chunk)
        else:
            if not self.module().run_chunk.signatures:
                run(chunks[0])  # compiles (or loads) once, before the threads start
                chunks = chunks[1:]
            list(_pool().map(run, chunks))
        return fin_s, fin_v, out_s, out_v

    def _advance_rows(self, key_ids: np.ndarray, n_keys: int, codes: np.ndarray,
                      data: np.ndarray, status: np.ndarray, value: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray] | None:
        """``run_rows`` over the rows in input order, when the module has it (a small DT)
        and the keys' kept states (k · |ROW_STATES| · 9 bytes) are not much larger than
        the rows' data: no sort by key. A table larger than :data:`_BLOCK_BYTES` is run
        in blocks of keys whose tables fit a core's cache, side by side
        (:func:`codegen.grouping.block_rows`): the kept states are loaded and stored
        around every event, and from memory further out than the cache that wait is most
        of a step (10M rows over 100k keys, 10 kept states: 0.35 s in one table, 0.16 s
        in blocks, partitioning and merging included)."""
        mod = self.module()
        if not hasattr(mod, "run_rows"):
            return None
        kept = list(mod.ROW_STATES)  # only these: the other states are not wanted here
        if n_keys * len(kept) > _ROW_TABLE * len(codes):
            return None
        n, n_out = codes.shape[0], len(self.tables.final)
        entry = 9 * max(1, len(kept))  # a key's bytes in the table
        if n_keys * entry <= _BLOCK_BYTES or n < _PARALLEL_ROWS:
            out_s, out_v = np.empty((n, n_out), dtype=np.uint8), np.empty((n, n_out))
            self._run_rows(kept, codes, data, key_ids, 0, n, n_keys, status, value, out_s,
                           out_v)
            return out_s, out_v
        shift = max(0, (_BLOCK_BYTES // entry).bit_length() - 1)  # 2^shift keys a block
        blocks = block_rows(key_ids, n_keys, shift, codes, data)
        block_s, block_v = np.empty((n, n_out), dtype=np.uint8), np.empty((n, n_out))

        def run(b: int) -> None:
            keys = min(1 << shift, n_keys - (b << shift))
            self._run_rows(kept, blocks.codes, blocks.data, blocks.keys,
                           int(blocks.starts[b]), int(blocks.starts[b + 1]), keys, status,
                           value, block_s, block_v)

        self._run_rows_once(kept, codes, data, status, value)  # compiled before the threads
        list(_pool().map(run, range(len(blocks.starts) - 1)))
        return merge_blocks(key_ids, blocks, block_s, block_v)

    def _run_rows(self, kept: list[int], codes: np.ndarray, data: np.ndarray,
                  keys: np.ndarray, i0: int, i1: int, n_keys: int, status: np.ndarray,
                  value: np.ndarray, out_s: np.ndarray, out_v: np.ndarray) -> None:
        """``run_rows`` on rows i0..i1-1 of keys 0..n_keys-1 in a fresh table (every key
        from ``status``/``value``), outputs at the rows; the configurations are dropped."""
        q = self.tables.n_states
        table_s = np.empty((n_keys, len(kept)), dtype=np.uint8)
        table_v = np.empty((n_keys, len(kept)))
        table_s[:] = status[kept]
        table_v[:] = np.where(status == 1, value, np.nan)[kept]  # loaded as they are
        self._call("run_rows", codes, data, keys, i0, i1, table_s, table_v,
                   np.zeros((0, q), dtype=np.uint8), np.zeros((0, q)), out_s, out_v)

    def _run_rows_once(self, kept: list[int], codes: np.ndarray, data: np.ndarray,
                       status: np.ndarray, value: np.ndarray) -> None:
        """One empty call of ``run_rows``: compiles (or loads) it in this thread, once."""
        if not self.module().run_rows.signatures:
            n_out = len(self.tables.final)
            self._run_rows(kept, codes, data, np.zeros(0, dtype=np.int64), 0, 0, 0, status,
                           value, np.empty((0, n_out), dtype=np.uint8), np.empty((0, n_out)))

    def _advance_table(self, key_ids: np.ndarray, codes: np.ndarray, data: np.ndarray,
                       table_s: np.ndarray, table_v: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray]:
        """``run_rows`` on the caller's tables when the module has it (a small DT): one
        pass over the rows, each key's configuration loaded from and stored to its row."""
        mod = self.module()
        if not hasattr(mod, "run_rows"):
            return super()._advance_table(key_ids, codes, data, table_s, table_v)
        n, n_out = codes.shape[0], len(self.tables.final)
        out_s, out_v = np.empty((n, n_out), dtype=np.uint8), np.empty((n, n_out))
        # The states a step reads in narrow tables; the kernel writes the others in place.
        kept = list(mod.ROW_STATES)
        kept_s = np.ascontiguousarray(table_s[:, kept])
        kept_v = np.ascontiguousarray(table_v[:, kept])
        self._call("run_rows", codes, data, key_ids, 0, n, kept_s, kept_v, table_s, table_v,
                   out_s, out_v)
        table_s[:, kept], table_v[:, kept] = kept_s, kept_v
        return out_s, out_v

    def _call(self, name: str, *args: object):  # type: ignore[no-untyped-def]
        """Call an entry point; the first call in this process (a compile or a cache
        load) is timed and logged."""
        fn = getattr(self.module(), name)
        if (self.digest, name) in _CALLED:
            return fn(*args)
        if fn.signatures:
            _CALLED.add((self.digest, name))
            return fn(*args)
        # The run functions compile all at once: readiness (auto) asks for every one.
        what = "the run functions" if name in _RUN else name
        if not _on_disk(self.path):
            self._announce(what)
        start = time.perf_counter()
        if name in _RUN:
            _compile_runs(self.module(), self.tables.n_states, len(self.columns),
                          len(self.tables.final))
        out = fn(*args)
        _CALLED.add((self.digest, name))
        logger.info("codegen %s: %s ready in %.3f s", self.digest[:12], what,
                    time.perf_counter() - start)
        return out


    def _announce(self, what: str) -> None:
        """Say, before it starts, that a compile is coming: seconds for a small DT, more
        for a large one (README), during which nothing else would show."""
        logger.info("codegen %s: compiling %s with Numba (%d states, DT size %d); then "
                    "cached in %s", self.digest[:12], what, self.tables.n_states,
                    self.dt.size, self.path.parent)


_CHILD = """\
import sys
from codegen.generated import CodegenEngine
from dt.model import DT
engine = CodegenEngine(DT.from_json(sys.stdin.read()))
if engine.digest != sys.argv[1]:
    sys.exit(f"the DT's JSON generates another kernel ({engine.digest[:12]})")
engine.compile()
"""
"""The program :meth:`CodegenEngine.compile_apart` runs: the DT's JSON on its standard
input, the expected source hash as its argument."""


def _compile_runs(mod: ModuleType, q: int, f: int, n_out: int) -> None:
    """Compile (or load) every function of :data:`_RUN` the module has, on no rows with
    the argument types of ``_advance_keys`` and ``_advance_rows``: one signature each."""
    status, value = np.zeros(q, dtype=np.uint8), np.full(q, np.nan)
    codes, data = np.zeros(0, dtype=code_dtype(mod.N_TAGS)), np.zeros((0, f))
    rows = np.zeros(0, dtype=np.int64)
    out_s, out_v = np.zeros((0, n_out), dtype=np.uint8), np.zeros((0, n_out))
    mod.run_chunk(codes, data, rows, np.zeros(1, dtype=np.int64), 0, 0, status, value,
                  out_s, out_v, np.zeros((0, q), dtype=np.uint8), np.zeros((0, q)), True)
    if hasattr(mod, "run_rows"):
        kept = list(mod.ROW_STATES)
        mod.run_rows(codes, data, rows, 0, 0, status[kept].reshape(1, -1),
                     value[kept].reshape(1, -1), np.zeros((0, q), dtype=np.uint8),
                     np.zeros((0, q)), out_s, out_v)


def is_ready(dt: DT) -> bool:
    """True if the codegen engine of ``dt`` runs without compiling (see the module docstring)."""
    digest = _DIGESTS.get(dt)
    if digest is None:
        return CodegenEngine(dt).is_ready()
    return _ready(digest, cache_dir() / f"{module_name(digest)}.py")


# --------------------------------------------------------------------------- files


def _ready(digest: str, path: Path) -> bool:
    mod = _LOADED.get(digest)
    if mod is not None and all(getattr(mod, f).signatures for f in _RUN if hasattr(mod, f)):
        return True
    return _on_disk(path)


_FOUND_ON_DISK: set[Path] = set()
"""Modules whose cache files were found: they stay valid, so they are not looked up again
(a glob of a cache directory with thousands of files costs milliseconds)."""


def _on_disk(path: Path) -> bool:
    """Numba's cache files (an index ``.nbi`` and object code ``.nbc``) for every function
    of :data:`_RUN` of the module at ``path``. Numba checks the index against the source's
    modification time when loading; we never rewrite a module, so it stays valid."""
    if path in _FOUND_ON_DISK:
        return True
    if not path.exists():
        return False
    pycache = path.parent / "__pycache__"
    has_rows = "\ndef run_rows(" in path.read_text(encoding="utf-8", errors="replace")
    for name in _RUN if has_rows else _RUN[:1]:
        stem = f"{path.stem}.{name}-"
        if not any(pycache.glob(f"{stem}*.nbi")) or not any(pycache.glob(f"{stem}*.nbc")):
            return False
    _FOUND_ON_DISK.add(path)
    return True


def _write_once(path: Path, source: str) -> None:
    """Create ``path`` with ``source`` atomically, unless it already holds exactly that."""
    try:
        # Bytes, not text: a damaged file need not even be UTF-8 (the cache fuzz flips bits).
        if path.read_bytes() == source.encode("utf-8"):
            return
        replace = True  # a damaged file: replace it (its Numba cache is stale anyway)
    except FileNotFoundError:
        replace = False
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = new_temporary(path)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(source)
            f.flush()
            os.fsync(f.fileno())
        if replace:
            os.replace(tmp, path)
            return
        try:
            # link() fails if another process created the file meanwhile: keep theirs,
            # whose modification time its Numba cache may already record.
            os.link(tmp, path)
        except FileExistsError:
            pass
        except OSError:  # no hard links on this file system
            os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _import(path: Path, name: str) -> ModuleType:
    """Import the module at ``path`` as ``name`` (registered in ``sys.modules``, as Numba's
    cache expects of a function's module)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        del sys.modules[name]
        raise
    return mod
