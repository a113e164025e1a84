"""qre's disk cache: where it is, new files beside their final names, and sealed data.

Pipeline position: beside the engines and the parser. ``$QRE_CACHE_DIR`` (default
``~/.cache/qre/codegen``) keeps, for the next process: the generated kernel modules
(:mod:`codegen.generated`), Numba's machine code for them in ``__pycache__``
(:mod:`codegen.numba_cache`) and the query parser's tables (:mod:`qre.language.parser`).

A file is written under a temporary name (:func:`new_temporary`) and then linked or
renamed to its own, so that no process reads one half written. Pickled data is *sealed*
(:func:`seal`): a magic prefix, a BLAKE2b digest and the pickle; :func:`unseal` checks
the digest before anything is unpickled, so a damaged file (a flipped bit, a
truncation) is found rather than loaded.

This module imports neither Numba nor lark, so that the parser finds its cache without
importing an engine.

Cost: one digest of the data per load or save (hundreds of kB: under a millisecond).
"""

from __future__ import annotations

import hashlib
import os
import secrets
from pathlib import Path

__all__ = ["MAGIC", "DamagedCacheError", "ForeignFile", "cache_dir", "new_temporary", "seal",
           "unseal"]

MAGIC = b"qre-sealed-1\n"
"""The first bytes of a sealed file: then the digest, then the pickle."""

_DIGEST = 32
"""Bytes of the BLAKE2b digest of the pickle."""


class DamagedCacheError(Exception):
    """A sealed file whose digest (or key) does not match: damaged, not loaded."""


class ForeignFile(Exception):
    """A file that is not sealed (older or unguarded): a miss, not damage."""


def cache_dir() -> Path:
    """Where qre's cache lives: ``$QRE_CACHE_DIR`` if set, else ``~/.cache/qre/codegen``."""
    env = os.environ.get("QRE_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "qre" / "codegen"


def new_temporary(path: Path) -> tuple[int, str]:
    """A new file beside ``path``, open for writing, with the mode any new file of this
    process gets (0666 less the umask), as Numba's own cache files have: a cache directory
    shared by a group stays usable by all (``tempfile.mkstemp`` would make it 0600)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    while True:
        tmp = str(path.parent / f".{path.stem}.{secrets.token_hex(8)}.tmp")
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:  # pragma: no cover - 64 random bits
            continue


def seal(payload: bytes) -> bytes:
    """``payload`` (a pickle) as a sealed file's bytes: the magic prefix, its digest, it."""
    return MAGIC + hashlib.blake2b(payload, digest_size=_DIGEST).digest() + payload


def unseal(raw: bytes, name: str) -> bytes:
    """The payload of a sealed file's bytes ``raw``, checked against its digest.

    Raises :class:`DamagedCacheError` if the digest does not match or the file is cut
    short (``name`` names the file in the message), :class:`ForeignFile` if ``raw`` has
    no magic prefix (not sealed).
    """
    if MAGIC.startswith(raw[:len(MAGIC)]) and len(raw) <= len(MAGIC) + _DIGEST:
        raise DamagedCacheError(f"{name} is cut short")  # empty, or within the seal
    if not raw.startswith(MAGIC):
        raise ForeignFile(name)
    digest, payload = raw[len(MAGIC):len(MAGIC) + _DIGEST], raw[len(MAGIC) + _DIGEST:]
    if hashlib.blake2b(payload, digest_size=_DIGEST).digest() != digest:
        raise DamagedCacheError(f"{name} does not match its digest")
    return payload
