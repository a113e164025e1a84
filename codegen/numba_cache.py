"""Numba's disk cache, robust to damaged files: a damaged cache is a cache miss.

Pipeline position: beside the kernels. Both engines' kernels are compiled with
``cache=True``: Numba keeps a function's machine code in its ``__pycache__``
as an index (``<function>-<line>.py311.nbi``) and object files (``.nbc``),
pickled, and loads them instead of compiling. A truncated or corrupted file
(a full disk, a killed process on a file system without atomic rename, a copy
gone wrong) makes Numba's loader raise — ``UnpicklingError``, ``EOFError``, or
LLVM refusing the object code — at the first call of the function, in this
process and in every later one, until someone deletes the file.

:func:`guard` makes a dispatcher's cache treat any failure to *load* as a miss:
it logs a warning naming the function and the directory, writes a fresh empty
index over the damaged one (Numba then numbers new object files from 1,
overwriting the damaged ones), and returns nothing, so that Numba compiles the
function and saves it again — the next process loads it cleanly. A failure to
*save* is logged and the compiled function runs all the same (a cache only
saves time). :func:`guard_namespace` guards every cached dispatcher of a module:
:mod:`codegen.kernels` guards its own at import, :mod:`codegen.generated` each
generated module once imported.

Damage that still unpickles is caught too: a flipped bit in the object code
would make LLVM abort the process (or, worse, run other machine code), and a
flipped digit in the index could point a signature at another signature's
file. So a guarded cache *seals* what it saves (:mod:`codegen.cache_files`): each
data file is a magic prefix, a BLAKE2b digest and the pickle, and the pickle holds
the index key beside the data. Loading checks the digest before unpickling and the
key after; a mismatch is damage (a warning, a compile). A file without the prefix
(saved by an unguarded Numba, or by qre before sealing) is a quiet miss.

A guarded cache also loads faster: without the refresh of Numba's target context
that ``Cache.load_overload`` starts with (every typing and lowering registry, 0.1 s in
a fresh process, needed to compile, not to link machine code: :func:`_load_unrefreshed`).

Cost: one ``try`` around each load and save, and one digest of the object code
(hundreds of kB: under a millisecond), i.e. once per function and signature per
process; nothing per call.
"""

from __future__ import annotations

import functools
import logging
import pickle
from collections.abc import Callable, Mapping
from typing import Any

from numba.core.caching import Cache, IndexDataCacheFile
from numba.core.dispatcher import Dispatcher
from numba.core.runtime import rtsys

from .cache_files import DamagedCacheError, ForeignFile, seal, unseal

__all__ = ["guard", "guard_namespace"]

logger = logging.getLogger(__name__)

_GUARDED = "_qre_guarded"
"""Marks a cache object already guarded (guarding twice would log twice)."""

_LOAD_METHODS = ("_load_overload", "_guard_against_spurious_io_errors")
"""The methods of Numba's ``Cache`` that loading without a refresh calls (private: checked,
so that a Numba without them loads as it does itself)."""

_SEALED_METHODS = ("save", "load", "_save_data", "_load_data", "_dump", "_open_for_write",
                   "_data_path")
"""The methods of Numba's ``IndexDataCacheFile`` that sealing uses or replaces (private:
checked, so that a Numba without them runs unsealed rather than failing at import)."""


def guard(dispatcher: Dispatcher) -> None:
    """Make the disk cache of ``dispatcher`` (if it has one) treat a damaged file as a miss."""
    cache = getattr(dispatcher, "_cache", None)
    if not isinstance(cache, Cache) or getattr(cache, _GUARDED, False):
        return
    name = getattr(dispatcher.py_func, "__qualname__", repr(dispatcher))
    load = cache.load_overload
    if all(hasattr(cache, method) for method in _LOAD_METHODS):
        load = functools.partial(_load_unrefreshed, cache)
    else:  # another Numba's cache (these are its internals): it loads as it does itself
        logger.debug("Numba's cache has no %s: it refreshes the context to load",
                     ", ".join(_LOAD_METHODS))
    cache.load_overload = _loading(cache, name, load)
    cache.save_overload = _saving(cache, name, cache.save_overload)
    _seal(cache._cache_file)
    setattr(cache, _GUARDED, True)


def guard_namespace(namespace: Mapping[str, Any]) -> None:
    """:func:`guard` every Numba dispatcher among the values of ``namespace`` (a module's)."""
    for value in list(namespace.values()):
        if isinstance(value, Dispatcher):
            guard(value)


def _load_unrefreshed(cache: Cache, sig: Any, target_context: Any) -> Any:
    """Numba's ``Cache.load_overload`` without its ``target_context.refresh()``.

    The refresh installs every typing and lowering registry of Numba — what a compile
    needs — and costs about 0.1 s in a fresh process (measured: 0.10 s of the 0.11 s
    that the first call of a cached function takes). Machine code from the cache needs
    none of it: it is linked against Numba's C helpers (registered when the target
    context is made), the threading layer (started by a parallel kernel's own reload
    hook), the C library and :mod:`codegen.kernels`' ``pow``, and Numba's runtime (NRT),
    initialized here as the refresh would. A compile still refreshes the context first
    (Numba's ``compile_extra`` does).
    """
    rtsys.initialize(target_context)
    with cache._guard_against_spurious_io_errors():
        return cache._load_overload(sig, target_context)


def _loading(cache: Cache, name: str, load: Callable[..., Any]) -> Callable[..., Any]:
    def load_overload(sig: Any, target_context: Any) -> Any:
        try:
            return load(sig, target_context)
        except ForeignFile:
            logger.info("Numba's disk cache of %s in %s is not sealed; compiling it again",
                        name, cache.cache_path)
            _reset(cache, name)
            return None
        except Exception as err:  # anything that fails to load is a miss, not an error
            logger.warning("Numba's disk cache of %s in %s is damaged (%s: %s); compiling it "
                           "again", name, cache.cache_path, type(err).__name__, err)
            _reset(cache, name)
            return None

    return load_overload


def _saving(cache: Cache, name: str, save: Callable[..., Any]) -> Callable[..., Any]:
    def save_overload(sig: Any, data: Any) -> None:
        try:
            save(sig, data)
        except Exception as err:  # the function is compiled: it runs, uncached
            logger.warning("cannot save %s to Numba's disk cache in %s (%s: %s); it runs "
                           "uncached", name, cache.cache_path, type(err).__name__, err)

    return save_overload


def _reset(cache: Cache, name: str) -> None:
    """An empty index over the damaged one (written atomically by Numba), so that the
    recompiled function is saved and found by the next process."""
    try:
        cache.flush()
    except OSError as err:
        logger.warning("cannot reset Numba's disk cache of %s in %s (%s)", name,
                       cache.cache_path, err)


def _seal(file: IndexDataCacheFile) -> None:
    """Make ``file`` write sealed data files and load only intact ones (module docstring).

    Replaces four methods of this one instance: ``save``/``load`` put the index key
    beside the data and check it; ``_save_data``/``_load_data`` write and check the
    magic prefix and the digest.
    """
    if not all(hasattr(file, name) for name in _SEALED_METHODS):
        # Another Numba's cache file (these are its internals): unsealed, as before.
        logger.debug("Numba's cache file has no %s: its data files are not sealed",
                     ", ".join(_SEALED_METHODS))
        return
    save, load = file.save, file.load

    def save_sealed(key: Any, data: Any) -> None:
        save(key, (key, data))

    def load_sealed(key: Any) -> Any:
        found = load(key)
        if found is None:
            return None
        if not (isinstance(found, tuple) and len(found) == 2 and found[0] == key):
            raise DamagedCacheError("its data file holds another function or signature")
        return found[1]

    def save_data(name: str, data: Any) -> None:
        with file._open_for_write(file._data_path(name)) as f:
            f.write(seal(file._dump(data)))

    def load_data(name: str) -> Any:
        with open(file._data_path(name), "rb") as f:
            return pickle.loads(unseal(f.read(), name))

    file.save, file.load = save_sealed, load_sealed  # type: ignore[method-assign]
    file._save_data, file._load_data = save_data, load_data  # type: ignore[method-assign]
