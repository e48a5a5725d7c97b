"""What identifies a sweep: hashes of array and function inputs, the canonical description and
its SHA-256 fingerprint, what differs between two descriptions (in words), and the hash of the
package's sources.  (The digest of this machine's math library is ``libm.digest``.)"""
import functools
import hashlib
import inspect
import json
import pickle

import numpy as np

from .._jit import _source_hash


def hash_array(a, n):
    """SHA-256 of an array-like's first n rows, read in blocks (memory stays bounded)."""
    h = hashlib.sha256()
    step = max(1, (1 << 23) // max(1, int(np.prod(a.shape[1:], dtype=np.int64))))
    for start in range(0, n, step):
        h.update(np.ascontiguousarray(np.asarray(a[start:min(n, start + step)], dtype="<f8")).tobytes())
    return h.hexdigest()


def _hash_code(code, h):
    h.update(code.co_code)
    h.update(repr(code.co_names).encode())
    for c in code.co_consts:
        if inspect.iscode(c):
            _hash_code(c, h)
        elif isinstance(c, frozenset):
            # the repr of a set follows string hashing, which changes from process to process
            h.update(repr(sorted(map(repr, c))).encode())
        else:
            h.update(repr(c).encode())


def describe_callable(f):
    """Name and code of a sampler function: what a resumed sweep compares (a function is known by
    its name, code, defaults and closure values; a global it reads cannot be seen)."""
    h = hashlib.sha256()
    target = f.func if isinstance(f, functools.partial) else f
    name = f"{getattr(target, '__module__', '?')}.{getattr(target, '__qualname__', type(target).__name__)}"
    code = getattr(target, "__code__", None)
    if code is not None:
        _hash_code(code, h)
        for extra in (getattr(target, "__defaults__", None), getattr(target, "__kwdefaults__", None)):
            h.update(repr(extra).encode())
        for cell in getattr(target, "__closure__", None) or ():
            try:
                h.update(pickle.dumps(cell.cell_contents))
            except Exception:
                h.update(repr(type(cell.cell_contents)).encode())
    else:
        try:
            h.update(pickle.dumps(target))
        except Exception:
            h.update(repr(target).encode())
    if isinstance(f, functools.partial):
        h.update(pickle.dumps((f.args, sorted(f.keywords.items()))))
    return {"type": "function", "name": name, "code": h.hexdigest()}



def canonical(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False)


def fingerprint(spec):
    return hashlib.sha256(canonical(spec).encode()).hexdigest()


@functools.lru_cache(maxsize=1)
def package_hash():
    """Hash of this package's sources (the kernel cache's key): a Dask worker must run the same
    code as its client."""
    return _source_hash()


def diff(stored, given):
    """What differs between two sweep descriptions, in words."""
    out = []
    for key in ("n", "chunk_size", "seed", "t", "quantities", "store_inputs", "loops"):
        if stored.get(key) != given.get(key):
            out.append(f"{key}: stored {stored.get(key)!r}, given {given.get(key)!r}")
    if stored.get("model") != given.get("model"):
        out.append("the model differs from the one the sweep was run with")
    for key in ("sampler", "tolerances"):
        if stored.get(key) != given.get(key):
            s, g = stored.get(key) or {}, given.get(key) or {}
            if key == "sampler":
                for name in sorted(set(s) | set(g)):
                    if s.get(name) != g.get(name):
                        out.append(f"sampler of {name}: stored {_short(s.get(name))}, given {_short(g.get(name))}")
            else:
                out.append(f"tolerances: stored {_short(s)}, given {_short(g)}")
    if stored.get("ejce_nb") != given.get("ejce_nb"):
        out.append(f"written by ejce_nb {stored.get('ejce_nb')}, this is {given.get('ejce_nb')}")
    if stored.get("version") != given.get("version"):
        out.append(f"sweep format version {stored.get('version')}, this ejce_nb writes {given.get('version')}")
    return out or ["the stored description differs"]


def _short(obj, most=120):
    s = json.dumps(obj)
    return s if len(s) <= most else s[:most - 3] + "..."

