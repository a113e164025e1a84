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

Cost: one ``try`` around each load and save, i.e. once per function and
signature per process; nothing per call.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from numba.core.caching import Cache
from numba.core.dispatcher import Dispatcher

__all__ = ["guard", "guard_namespace"]

logger = logging.getLogger(__name__)

_GUARDED = "_qre_guarded"
"""Marks a cache object already guarded (guarding twice would log twice)."""


def guard(dispatcher: Dispatcher) -> None:
    """Make the disk cache of ``dispatcher`` (if it has one) treat a damaged file as a miss."""
    cache = getattr(dispatcher, "_cache", None)
    if not isinstance(cache, Cache) or getattr(cache, _GUARDED, False):
        return
    name = getattr(dispatcher.py_func, "__qualname__", repr(dispatcher))
    cache.load_overload = _loading(cache, name, cache.load_overload)
    cache.save_overload = _saving(cache, name, cache.save_overload)
    setattr(cache, _GUARDED, True)


def guard_namespace(namespace: Mapping[str, Any]) -> None:
    """:func:`guard` every Numba dispatcher among the values of ``namespace`` (a module's)."""
    for value in list(namespace.values()):
        if isinstance(value, Dispatcher):
            guard(value)


def _loading(cache: Cache, name: str, load: Callable[..., Any]) -> Callable[..., Any]:
    def load_overload(sig: Any, target_context: Any) -> Any:
        try:
            return load(sig, target_context)
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
