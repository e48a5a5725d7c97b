"""The one Numba decorator of the package.

Compiled kernels are cached on disk.  Numba's cache does not notice edits to helpers that live in
another module, so the cache lives in a directory keyed by a hash of the package's sources: any
change to the package gives a fresh cache, an unchanged package starts warm.

Environment switches:
  EJCE_NB_CACHE=0      compile in memory only (no on-disk cache)
  NUMBA_CACHE_DIR=...  use this cache directory as it is (Numba's own switch)
"""
import hashlib
import os
import tempfile

import numba

_PKG = os.path.dirname(os.path.abspath(__file__))


def _source_hash():
    h = hashlib.sha1()
    for root, dirs, files in os.walk(_PKG):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__")))
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(root, name)
                with open(path, "rb") as f:
                    h.update(os.path.relpath(path, _PKG).encode())
                    h.update(f.read())
    h.update(numba.__version__.encode())
    return h.hexdigest()[:16]


def _cache_root():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    for root in (base, tempfile.gettempdir()):
        path = os.path.join(root, "ejce_nb", _source_hash())
        try:
            os.makedirs(path, exist_ok=True)
            if os.access(path, os.W_OK):
                return path
        except OSError:
            continue
    return None


CACHE = os.environ.get("EJCE_NB_CACHE", "1").strip().lower() not in ("0", "false", "no", "off")
if CACHE and not os.environ.get("NUMBA_CACHE_DIR"):
    _root = _cache_root()
    if _root is None:
        CACHE = False
    else:
        numba.config.CACHE_DIR = _root


def jit(*args, **kwargs):
    """``numba.njit`` with the package's options (cache, no fastmath: results must be exact)."""
    kwargs.setdefault("cache", CACHE)
    kwargs.setdefault("nogil", True)
    kwargs.setdefault("error_model", "numpy")
    if args and callable(args[0]):
        return numba.njit(**kwargs)(args[0])
    return numba.njit(*args, **kwargs)


def pjit(*args, **kwargs):
    """The batch drivers: ``jit`` with ``parallel=True`` (prange over samples)."""
    kwargs["parallel"] = True
    return jit(*args, **kwargs)
