"""The kernels' workspaces: pooled per model, or an ``ej.Data``'s, and how a batch is split into
chunks (``kernels`` runs them).

A single state runs on one flat workspace (record, then scratch: ``layout``); a batch of B states
on a record array (one row per chunk, or one per state when an ``ej.Data`` keeps them) and a
scratch array (one row per chunk, with room for a group of states computed at once where the
model allows: ``lanes``).  Chunks are a few per thread, so threads stay busy; a
state's result is bit for bit its result alone (a group does each state's operations in the same
order), so nothing depends on the chunking or the thread count.
"""
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np

from .._jit import callees_first, n_chunks, remember_callees
from ..model import layout


_POOLS = {}
_POOLS_LOCK = threading.Lock()


def _thread_pool(n):
    """This process's pool of n threads (a forked child starts its own)."""
    key = (os.getpid(), n)
    pool = _POOLS.get(key)
    if pool is None:
        with _POOLS_LOCK:
            pool = _POOLS.get(key)
            if pool is None:
                pool = _POOLS[key] = ThreadPoolExecutor(n, thread_name_prefix="ejce_nb")
    return pool


def run_chunks(kernel, nchunk, *args, serial=False, kernels=None):
    """``kernel(*args, c, nchunk)`` for the chunks c = 0 .. nchunk - 1 of a batch: thread k of
    ``numba.get_num_threads()`` runs the chunks k, k + nt, ... (the kernels release the GIL; this
    thread is thread 0); where that is one thread or ``serial`` (a batch too small to pay for
    waking threads: tens of microseconds), one call ``kernel(*args, 0, 1)`` on this thread runs
    the whole batch on the first chunk's workspace (each call from Python costs a microsecond or
    two; every state's result is that of a lone call, whichever chunk it is in).

    For the large per-state kernels (the derivatives), in place of a compiled ``prange`` driver,
    which ran slower when loaded from the cache (benchmarks/README.md; page faults found since may
    have been part of it). The callees declared with ``_jit.load_after`` of the compiled kernels
    load before them (``callees_first``): ``kernels``, those a Python chunk function ``kernel``
    calls, by default ``kernel`` itself."""
    kernels = (kernel,) if kernels is None else kernels
    for k in kernels:
        callees_first(k)
    nt = 1 if serial else min(numba.get_num_threads(), nchunk)
    if nt <= 1:
        kernel(*args, 0, 1)
    else:
        def share(k):
            for c in range(k, nchunk, nt):
                kernel(*args, c, nchunk)
        futures = [_thread_pool(nt - 1).submit(share, k) for k in range(1, nt)]
        try:
            share(0)
        finally:
            for f in futures:
                f.result()
    for k in kernels:
        remember_callees(k)


def new_workspace(km):
    return np.zeros(int(km._mb[layout.H_REC] + km._mb[layout.H_SCR]))


def one_workspace(km):
    """A workspace for one state of the kernel model ``km``, from its pool (give it back with
    ``release``): concurrent calls from several Python threads each get their own."""
    try:
        return km._wpool.pop()
    except IndexError:
        return new_workspace(km)


def release(km, w):
    km._wpool.append(w)


def acquire(model, data):
    """(workspace, pool to give it back to) for a one-state call on ``model`` (itself a kernel
    model): the Data's own workspace (pool None), a pooled one, or (None, None) when the call
    must go through the input layer (a mimic model, a Data of another kind)."""
    if data is None:
        pool = model._wpool
        if pool is None:
            return None, None
        try:
            return pool.pop(), pool
        except IndexError:
            return new_workspace(model), pool
    if data.model is model and data.batch is None and model._mb is not None:
        return data._w, None
    return None, None

def check_errors(errors):
    """``errors`` must be "raise" or "flag" (on every call, whichever path serves it)."""
    if not (type(errors) is str and (errors == "raise" or errors == "flag")):
        raise ValueError(f'errors must be "raise" or "flag", got {errors!r}')


def batch_workspace(km, B, data):
    """(records, scratch, per_state) for a batch of B states: the Data's records (one per state)
    or pooled per-chunk records."""
    if data is not None:
        data._check_batch(B)
        return data._R, data._S, True, None
    nchunk = n_chunks(B)
    pool = km._pool.setdefault(nchunk, [])
    try:
        R, S = pool.pop()
    except IndexError:
        R = np.zeros((nchunk, int(km._mb[layout.H_REC])))
        # each chunk's scratch row is followed by a group's workspace where groups run (lanes)
        S = np.zeros((nchunk, int(km._mb[layout.H_SCR]) + layout.lane_size(km._mb)))
    return R, S, False, (pool, (R, S))


def release_batch(token):
    if token is not None:
        token[0].append(token[1])


def result_array(out, n, nv, usable=True):
    """``out`` where it can hold the (n, nv) result of a batch (C-ordered, writeable float64), else
    a new array: callers that reuse their result buffers from batch to batch (the sweeps) do not
    fault fresh pages in every time."""
    if (usable and out is not None and out.shape == (n, nv) and out.dtype == np.float64
            and out.flags.c_contiguous and out.flags.writeable):
        return out
    return np.empty((n, nv))
