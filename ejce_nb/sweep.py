"""Monte Carlo sweeps: sample millions of states (and, for tolerance studies, model parameters),
evaluate public quantities on them chunk by chunk, and store inputs and outputs on disk, locally
on threads or on a Dask cluster, resumable after any interruption and bitwise reproducible.

    result = ej.sweep(model, 1_000_000, ["rnea", "aba"], "arm.sweep")
    tau = np.asarray(result["rnea"])            # (n, nv); result["q"], result["qd"], ...

Storage.  ``out`` is a zarr (format 3) group created with the zarr library: one array per input
and per output and the array ``status``, chunked along the sample axis with one store chunk per
sweep chunk, raw little-endian values (random inputs and dynamics outputs do not compress, and a
compressor would cost more than the kernels).  zarr, Dask and xarray read it like any zarr group.
Chunk files are written here, those bytes as zarr lays them out (an edge chunk padded to the full
chunk), by ``O_DIRECT`` where the file system takes it: the page cache's pages cost more CPU to
fill than the kernels take to compute their contents.
zarr and tqdm are the ``sweep`` extra (``pip install "ejce_nb[sweep]"``), imported only when a
sweep runs or is opened.  The bookkeeping is zarr too: the group ``.sweep`` with the array
``done`` (one byte per chunk) and the recorded failures in its attributes.

Per-sample status.  Every quantity is computed with ``errors="flag"``: a sample the engine cannot
compute (NaN or inf in its inputs, a quaternion far from unit norm, a gimbal lock, a singular mass
matrix) gets NaN rows in the quantities it breaks and its ``ej.Status`` code in ``status`` (the
first non-zero code over the quantities, in their order); the chunk goes on.  What is not a
sample's fault (a sampler that raises or returns the wrong shape, an invalid perturbed model, a
disk error) stops the sweep with ``SweepError``.

Seeding.  Every random number belongs to one sample.  Each input has its own stream, numpy's
``np.random.Philox`` (Philox4x64-10) under the key ``np.random.SeedSequence(seed, spawn_key=(input,
draw))`` gives; an input drawing k numbers per sample takes sample i's from the stream's 64-bit
words [i k, (i + 1) k).  The words are computed in compiled code beside the kernels
(``ejce_nb.streams``), bit for bit those of numpy's generator, and any word is reached without the
ones before it.  Uniforms are numpy's ``Generator.random`` of those words (one word each); normals
take one word each too, by a 256-layer ziggurat whose rare rejections continue on words outside
the main stream, so that a sample's position in its stream does not depend on the values drawn
before it.  Nothing depends on the chunk a sample falls in, on the thread that draws it or on the
worker that runs it, and the batch kernels compute each state on its own, so inputs and outputs
are bitwise the same whatever ``chunk_size``, thread count or number of Dask workers, on machines
with the same numerical libraries (the ziggurat's tail and the rotation samplers use libm).

Inputs that are pure functions of (seed, index), those of ``ej.Uniform``, ``ej.Normal`` and
``ej.Tolerances``, need not be stored (``store_inputs=False``): ``result[name]`` draws them again
when read, the same bits.  The store keeps a digest of this machine's libm on a fixed draw, and
reading regenerated inputs (or computing them on a Dask worker) where the digest differs is
refused rather than answered with other bits.

Atomicity and resume.  Each chunk file is written under a temporary name and renamed into
place; once a chunk's files are written and flushed to disk, its byte of ``.sweep/done`` (its
marker) is written: a chunk counts as finished only when that marker exists (and, for a resumed
sweep, all its files), so a sweep killed at any moment (Ctrl-C, SIGKILL) leaves finished chunks
and perhaps files of unfinished ones, which the next run removes and writes again, never a chunk
that looks finished and is not.  The root attributes hold a description of the arguments (model,
n, quantities, chunk size, seed, t, sampler, store_inputs) and its SHA-256 fingerprint, written
last when the store is created; running ``sweep`` again with the same arguments skips the
finished chunks, and different arguments on the same directory are refused, naming what differs.
A lock on the directory (``flock``) keeps two processes from driving the same sweep at once.

Dask.  With ``scheduler=client`` (a ``dask.distributed.Client``) the plan is scattered to every
worker once and each chunk is one task: the worker draws the chunk's inputs, runs the Numba
kernels and writes the chunk into ``out`` itself, so ``out`` must be a path every worker sees
(one machine, or a shared file system).  A worker writes a chunk while it computes its next one
(two slots of buffers); when the tasks are done the client waits for every worker's writes and
runs again, once, any chunk whose marker is still missing (a worker lost after its task
returned).  The client only keeps a bounded number of tasks in flight, updates the progress bar
and stops at the first failed chunk.  Workers check that they run the same ejce_nb sources as the
client.

Memory stays bounded by a few chunks whatever ``n`` is: locally one chunk is evaluated while the
previous one waits and the one before is written (a writer thread overlaps the disk with the
kernels), on Dask a worker holds two, and ``SweepResult`` summaries read one chunk at a
time.  A finished sweep leaves its buffers to the next one in the same process (``SPARE_BYTES``).
Quantities of the same states share what they can: ``rnea`` and ``aba`` run on one forward sweep
(``aba.rnea_and_aba``).  A new store is created on the writing thread while the first chunk is
computed.  Progress: a tqdm bar (states/s, time left); ``progress=False`` turns it off.
"""
import concurrent.futures
import copy
import fnmatch
import functools
import hashlib
import inspect
import json
import logging
import math
import mmap
import os
import pickle
import queue
import re
import threading
import time
import uuid
import zlib

import numpy as np
from numba import prange

from . import streams
from ._jit import _source_hash, jit, pjit
from .errors import ModelError, Status

FORMAT = "ejce_nb.sweep"
FORMAT_VERSION = 3
INSTALL = 'pip install "ejce_nb[sweep]"'

# quantity -> (inputs it needs besides q and t, description)
QUANTITIES = {
    "rnea": (("qd", "qdd"), "joint forces tau (nv,) of inverse dynamics at (q, qd, qdd)"),
    "aba": (("qd", "tau"), "accelerations qdd (nv,) of forward dynamics at (q, qd, tau)"),
    "mass_matrix": ((), "joint-space mass matrix (nv, nv)"),
    "nonlinear_effects": (("qd",), "h(q, qd) (nv,)"),
    "kinetic_energy": (("qd",), "kinetic energy ()"),
    "joint_terms": (("qd",), "EJCE terms: J (6, nv), sigma and bias (N+1, 6), P axes"),
    "forward_kinematics": ((), "pose of a body (4, 4): [[R, p], [0, 0, 0, 1]], world frame"),
    "body_jacobian": ((), "world-frame Jacobian (6, nv) of a body origin"),
}
_BODY_QUANTITIES = ("forward_kinematics", "body_jacobian")
INPUTS = ("q", "qd", "qdd", "tau", "t")
STATUS = "status"
# the status of a sample whose chunk is not finished
NOT_COMPUTED = -1


class SweepError(RuntimeError):
    """A sweep stopped: a chunk failed (``chunk``, ``samples`` = range of its samples,
    ``sample_indices`` = the offending samples when known, ``reason``).  Finished chunks stay in
    ``result`` (a ``SweepResult``) and a rerun with the same arguments resumes."""

    def __init__(self, message, chunk=None, samples=None, sample_indices=None, reason=None, result=None):
        super().__init__(message)
        self.chunk = chunk
        self.samples = samples
        self.sample_indices = sample_indices
        self.reason = reason
        self.result = result


class _ChunkFailure(Exception):
    """Raised where a chunk is computed (a thread or a Dask worker); picklable."""

    def __init__(self, chunk, first, stop, reason, sample_indices=None):
        super().__init__(chunk, first, stop, reason, sample_indices)
        self.chunk, self.first, self.stop, self.reason = chunk, first, stop, reason
        self.sample_indices = sample_indices

    def __str__(self):
        return f"chunk {self.chunk} (samples {self.first}..{self.stop - 1}): {self.reason}"


def _ej():
    # the public API, looked up when used: this module is imported while the package initialises
    import ejce_nb
    return ejce_nb


def _zarr():
    try:
        import zarr
    except ImportError:
        raise ValueError(f"sweeps are stored with zarr, which is not installed: {INSTALL}") from None
    return zarr


# ============================================================================ random streams
def _stream_code(name):
    return zlib.crc32(name.encode("utf-8"))


@functools.lru_cache(maxsize=4096)
def _key(entropy, stream, call):
    """Philox key of draw number ``call`` of the input ``stream`` (a name) under the seed."""
    ss = np.random.SeedSequence(entropy=list(entropy), spawn_key=(_stream_code(stream), call))
    return tuple(int(x) for x in ss.generate_state(2, np.uint64))


def _rows(fill, key, first, out):
    """fill(k0, k1, first, rows) on out viewed as (m, k) rows, through a C-ordered copy when out
    is not one."""
    m = out.shape[0]
    if out.size == 0:
        return
    k0, k1 = np.uint64(key[0]), np.uint64(key[1])
    rows = out.reshape(m, -1) if out.flags.c_contiguous and out.dtype == np.float64 else None
    if rows is None:
        rows = np.empty((m, out.size // m))
        fill(k0, k1, first, rows)
        out[...] = rows.reshape(out.shape)
    else:
        fill(k0, k1, first, rows)


def _uniform_rows(key, first, out):
    """out[i, j] = numpy's double (Generator.random) of word (first + i) k + j of the Philox
    stream of ``key``, k = out.shape[1]: row i is sample first + i's k words."""
    _rows(streams.uniform_rows, key, first, out)


def _normal_rows(key, first, out):
    """out[i] = standard normals of sample first + i: the ziggurat normals of its k words of the
    stream of ``key`` (k = out.shape[1]), one word each."""
    _rows(streams.normal_rows, key, first, out)


class StreamRNG:
    """Random draws for a block of consecutive samples, one row per sample: row i comes from
    sample ``indices[i]``'s own part of the stream, so a sampler function that builds row i from
    row i's draws (and ``indices[i]``) gives the same values whatever the chunking.

    Each method call is a new draw with its own stream; ``size`` is the number of samples (the
    chunk's, given to the sampler) or a shape that starts with it, like ``(size, 7)``."""

    def __init__(self, entropy, stream, first, size):
        self._entropy = tuple(entropy)
        self._stream = stream
        self.first = int(first)
        self.size = int(size)
        self._calls = 0

    @property
    def indices(self):
        """Global sample indices of the rows (first, first + 1, ...)."""
        return np.arange(self.first, self.first + self.size, dtype=np.int64)

    def _draw(self, size, rows):
        if size is None:
            shape = (self.size,)
        else:
            shape = (int(size),) if np.ndim(size) == 0 else tuple(int(s) for s in size)
        if not shape or shape[0] != self.size:
            raise ValueError(f"sampler draws must have one row per sample: size must be {self.size} or "
                             f"start with {self.size}, got {size!r}")
        key = _key(self._entropy, self._stream, self._calls)
        self._calls += 1
        out = np.empty((self.size, int(np.prod(shape[1:], dtype=np.int64))))
        rows(key, self.first, out)
        return out.reshape(shape)

    def random(self, size=None):
        """Uniform in [0, 1)."""
        return self._draw(size, _uniform_rows)

    def uniform(self, low=0.0, high=1.0, size=None):
        u = self.random(size)
        return np.asarray(low, dtype=float) + (np.asarray(high, dtype=float) - np.asarray(low, dtype=float)) * u

    def standard_normal(self, size=None):
        return self._draw(size, _normal_rows)

    def normal(self, loc=0.0, scale=1.0, size=None):
        return np.asarray(loc, dtype=float) + np.asarray(scale, dtype=float) * self.standard_normal(size)

    def integers(self, low, high=None, size=None):
        """Integers in [low, high) (or [0, low)); exact for ranges below 2**53."""
        if high is None:
            low, high = 0, low
        low, high = np.asarray(low, dtype=np.int64), np.asarray(high, dtype=np.int64)
        if np.any(high <= low):
            raise ValueError(f"integers: high must exceed low, got low={low}, high={high}")
        u = self.random(size)
        span = (high - low).astype(float)
        return np.minimum(low + np.floor(u * span).astype(np.int64), high - 1)


# ============================================================================ distributions
def _vector(x, n, what, allow_nan=False):
    try:
        a = np.array(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a number or {n} numbers, got {x!r}") from None
    if a.ndim == 0:
        a = np.full(n, float(a))
    if a.shape != (n,):
        raise ValueError(f"{what} must be a number or an array of shape ({n},), got shape {a.shape}")
    bad = np.isinf(a) | (np.isnan(a) if not allow_nan else False)
    if np.any(bad):
        raise ValueError(f"{what} must be finite, got {a.tolist()}")
    return a


def _json_vector(a):
    a = np.asarray(a, dtype=float)
    return [None if np.isnan(x) else float(x) for x in a.ravel()]


class Uniform:
    """Uniform distribution.

    For ``q`` (the default): each coordinate uniform between ``low`` and ``high`` (``None`` or
    NaN entries: the model's joint limits; coordinates without limits: angles in [-pi, pi),
    lengths (prismatic, planar and free-joint translations) in [-length, length)); unit
    quaternions uniform on SO(3); rotation vectors, Gibbs and modified Rodrigues vectors without
    limits: those of a rotation uniform on SO(3) (with limits: uniform in the box, a missing
    bound being -pi or pi for rotation vectors, -1 or 1 for the others); the middle angle of every
    Euler-angle joint kept at least ``gimbal_margin`` radians from its gimbal lock (|cos| >=
    sin(margin) for Tait-Bryan sequences like ZYX, |sin| >= sin(margin) for proper ones like ZXZ),
    uniform on what remains.  Composite joints' coordinates count as angles.

    For ``qd``, ``qdd``, ``tau`` or ``t``: uniform between ``low`` and ``high`` (both required)."""

    def __init__(self, low=None, high=None, *, length=1.0, gimbal_margin=0.1):
        self.low, self.high = low, high
        self.length = float(length)
        self.gimbal_margin = float(gimbal_margin)
        if not (np.isfinite(self.length) and self.length > 0):
            raise ValueError(f"Uniform length must be positive, got {length!r}")
        if not (np.isfinite(self.gimbal_margin) and 0 <= self.gimbal_margin < np.pi / 4):
            raise ValueError(f"Uniform gimbal_margin must be in [0, pi/4), got {gimbal_margin!r}")

    def __repr__(self):
        return (f"Uniform(low={self.low!r}, high={self.high!r}, length={self.length}, "
                f"gimbal_margin={self.gimbal_margin})")


class Normal:
    """Normal distribution: ``mean + std * z`` with z standard normal per component.

    For ``q``: Gaussian around the configuration ``mean`` (default ``model.neutral()``):
    ``q = mean (+) delta`` with ``delta`` normal of standard deviations ``std`` (a number or one
    per velocity variable, (nv,)): added to each coordinate, and for a unit-quaternion block the
    rotation ``exp(delta)`` (a rotation vector in C axes) applied on the right of the mean's
    quaternion.  Limits are not enforced.  For the other inputs ``mean`` defaults to 0."""

    def __init__(self, mean=None, std=1.0):
        self.mean, self.std = mean, std

    def __repr__(self):
        return f"Normal(mean={self.mean!r}, std={self.std!r})"


class Tolerances:
    """Model-parameter sampling for tolerance studies: every ``group`` consecutive samples share
    one perturbed model (group k: samples k*group .. (k+1)*group - 1; each its own state).

    * ``mass``: relative standard deviation of each body's mass, log-normal
      (``m' = m exp(mass z)``), the rotational inertia scaled with it (a density tolerance);
    * ``com``: standard deviation (model units) of each coordinate of the centre of mass;
    * ``length``: relative standard deviation of each joint placement's offset from its parent
      (the link length), log-normal: ``c' = c exp(length z)``;
    * ``offset``: standard deviation of each coordinate of the joint placement offset;
    * ``angle``: standard deviation (rad) of a rotation of the joint placement, ``E' = E exp(phi)``.

    ``bodies``: names (or glob patterns) of the bodies whose parameters vary, default all.  The
    sampled parameters are stored as inputs: ``mass`` (n, k), ``com`` (n, k, 3), ``placement``
    (n, k, 3: the placement translations) and ``placement_angle`` (n, k, 3: phi), k bodies, for the
    fields that vary; ``SweepResult.sample_model(i)`` rebuilds sample i's model from them.  A model
    is built per group (about a millisecond each for a 7-DOF arm): prefer groups of hundreds of
    states or more for large sweeps."""

    FIELDS = ("mass", "com", "length", "offset", "angle")

    def __init__(self, mass=0.0, com=0.0, length=0.0, offset=0.0, angle=0.0, bodies=None, group=1):
        vals = {}
        for name, v in zip(self.FIELDS, (mass, com, length, offset, angle)):
            try:
                v = float(v)
            except (TypeError, ValueError):
                raise ValueError(f"Tolerances {name} must be a number, got {v!r}") from None
            if not (np.isfinite(v) and v >= 0):
                raise ValueError(f"Tolerances {name} must be finite and >= 0, got {v!r}")
            vals[name] = v
        if not any(vals.values()):
            raise ValueError("Tolerances: every standard deviation is zero; nothing would vary")
        self.__dict__.update(vals)
        if isinstance(group, bool) or not isinstance(group, (int, np.integer)) or group < 1:
            raise ValueError(f"Tolerances group must be a positive integer, got {group!r}")
        self.group = int(group)
        self.bodies = None if bodies is None else ([bodies] if isinstance(bodies, str) else list(bodies))

    def __repr__(self):
        f = ", ".join(f"{k}={getattr(self, k)}" for k in self.FIELDS if getattr(self, k))
        return f"Tolerances({f}, bodies={self.bodies!r}, group={self.group})"


class Sampler:
    """Where each input of a sweep comes from.

    Each of ``q``, ``qd``, ``qdd``, ``tau`` and ``t`` is ``None`` (the default: ``Uniform()`` for
    q, standard normal for qd, qdd and tau, the sweep's ``t`` for t), a ``Uniform`` or ``Normal``,
    an array (or array-like, e.g. a zarr array or memmap) of n rows whose rows [a, b) are read for
    each chunk, or a function ``f(rng, size)`` returning ``size`` rows, where ``rng`` is a
    ``StreamRNG`` of that chunk (row i of every draw belongs to sample ``rng.indices[i]``).
    ``tolerances``: a ``Tolerances`` for model-parameter sampling.  A sampled ``t`` is stored as
    the input ``"t"`` (n,)."""

    def __init__(self, q=None, qd=None, qdd=None, tau=None, t=None, tolerances=None):
        self.sources = {"q": q, "qd": qd, "qdd": qdd, "tau": tau, "t": t}
        if tolerances is not None and not isinstance(tolerances, Tolerances):
            raise ValueError(f"tolerances must be an ej.Tolerances, got {tolerances!r}")
        self.tolerances = tolerances

    def __repr__(self):
        given = ", ".join(f"{k}={v!r}" for k, v in self.sources.items() if v is not None)
        return f"Sampler({given}{', ' if given and self.tolerances else ''}" \
               f"{'tolerances=' + repr(self.tolerances) if self.tolerances else ''})"


def _as_sampler(sampler):
    """``sweep(sampler=...)``: a Sampler, a dict of its arguments, a Tolerances, or a q source."""
    if sampler is None:
        return Sampler()
    if isinstance(sampler, Sampler):
        return sampler
    if isinstance(sampler, Tolerances):
        return Sampler(tolerances=sampler)
    if isinstance(sampler, dict):
        unknown = set(sampler) - set(INPUTS) - {"tolerances"}
        if unknown:
            raise ValueError(f"sampler dict has unknown keys {sorted(unknown)}; expected some of "
                             f"{list(INPUTS) + ['tolerances']}")
        return Sampler(**sampler)
    return Sampler(q=sampler)


# ---------------------------------------------------------------------------- fingerprints
def _hash_array(a, n):
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


def _describe_callable(f):
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


# ---------------------------------------------------------------------------- bound sources
class _Source:
    """An input's distribution bound to a model and a shape; picklable (Dask ships it).

    ``draw(entropy, name, first, m, buf)`` returns the rows of samples first .. first + m - 1;
    ``buf(tag, shape)`` hands out scratch arrays that are reused from chunk to chunk (fresh
    arrays would be page-faulted in again every chunk).  ``regenerable``: the rows are a function
    of (seed, index) alone, so they can be drawn again instead of stored."""
    shape = ()
    regenerable = True

    def draw(self, entropy, name, first, m, buf):
        raise NotImplementedError

    def describe(self):
        raise NotImplementedError


class _Constant(_Source):
    def __init__(self, value):
        self.value = float(value)

    def describe(self):
        return {"type": "constant", "value": self.value}


class _Array(_Source):
    def __init__(self, arr, name, shape, n):
        ashape = tuple(getattr(arr, "shape", np.shape(arr)))
        want = (n,) + shape
        if ashape != want:
            raise ValueError(f"sampler {name}: the array has shape {ashape}; expected {want} "
                             f"(one row per sample)")
        self.arr, self.shape, self.name = arr, shape, name
        self._description = {"type": "array", "shape": list(ashape),
                             "sha256": _hash_array(arr, n)}

    regenerable = False

    def draw(self, entropy, name, first, m, buf):
        out = buf("out", (m,) + self.shape)
        out[...] = self.arr[first:first + m]
        return out

    def describe(self):
        return self._description


class _Function(_Source):
    def __init__(self, f, name, shape):
        self.f, self.name, self.shape = f, name, shape
        self._description = _describe_callable(f)

    regenerable = False

    def draw(self, entropy, name, first, m, buf):
        out = self.f(StreamRNG(entropy, name, first, m), m)
        try:
            a = np.asarray(out, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"sampler function for {name} returned {type(out).__name__}, not an "
                             "array of numbers") from None
        if a.shape != (m,) + self.shape:
            raise ValueError(f"sampler function for {name} returned shape {a.shape}; expected "
                             f"{(m,) + self.shape} (size = {m} rows of {self.shape or 'one number'})")
        return a

    def describe(self):
        return self._description


class _PlainUniform(_Source):
    def __init__(self, dist, name, shape):
        dim = int(np.prod(shape, dtype=np.int64))
        if dist.low is None or dist.high is None:
            raise ValueError(f"Uniform for {name} needs low and high")
        self.low = _vector(dist.low, dim, f"Uniform low of {name}")
        self.high = _vector(dist.high, dim, f"Uniform high of {name}")
        if np.any(self.high < self.low):
            raise ValueError(f"Uniform for {name}: high {self.high.tolist()} is below low {self.low.tolist()}")
        self.shape = shape

    def draw(self, entropy, name, first, m, buf):
        u = buf("out", (m, self.low.shape[0]))
        _uniform_rows(_key(entropy, name, 0), first, u)
        u *= self.high - self.low
        u += self.low
        return u.reshape((m,) + self.shape)

    def describe(self):
        return {"type": "Uniform", "low": self.low.tolist(), "high": self.high.tolist()}


class _PlainNormal(_Source):
    def __init__(self, dist, name, shape):
        dim = int(np.prod(shape, dtype=np.int64))
        self.mean = _vector(0.0 if dist.mean is None else dist.mean, dim, f"Normal mean of {name}")
        self.std = _vector(dist.std, dim, f"Normal std of {name}")
        if np.any(self.std < 0):
            raise ValueError(f"Normal std of {name} must be >= 0, got {self.std.tolist()}")
        self.shape = shape

    def draw(self, entropy, name, first, m, buf):
        z = buf("out", (m, self.mean.shape[0]))
        _normal_rows(_key(entropy, name, 0), first, z)
        if np.any(self.std != 1.0) or np.any(self.mean != 0.0):
            z *= self.std
            z += self.mean
        return z.reshape((m,) + self.shape)

    def describe(self):
        return {"type": "Normal", "mean": self.mean.tolist(), "std": self.std.tolist()}


# -- configurations
_ROT_KIND = {"quaternion": 0, "rotvec": 1, "rodrigues": 2, "mrp": 3}


def _coordinate_kinds(model):
    """Per joint with coordinates: (joint, q slice, v slice, kinds of its coordinates, rotation
    parameterisation or None, Euler sequence or None)."""
    out = []
    for j in range(1, model.nbodies + 1):
        qs, vs = model.q_slice(j), model.v_slice(j)
        if qs.stop == qs.start:
            continue
        d = model.joint_specs[j].to_dict()
        typ = d["type"]
        rot = seq = None
        if typ in ("Revolute", "Helical"):
            kinds = ["angle"]
        elif typ == "Prismatic":
            kinds = ["length"]
        elif typ == "Cylindrical":
            kinds = ["angle", "length"]
        elif typ == "Universal":
            kinds = ["angle", "angle"]
        elif typ == "Planar":
            kinds = ["length", "length", "angle"]
        elif typ == "Translation":
            kinds = ["length"] * 3
        elif typ in ("Spherical", "Free"):
            param = d["param"]
            kinds = ["length"] * 3 if typ == "Free" else []
            if param in _ROT_KIND:
                rot = param
                kinds += ["rotation"] * (4 if param == "quaternion" else 3)
            else:
                seq = param
                kinds += ["angle", "euler_proper" if param[0].lower() == param[2].lower() else "euler_tait", "angle"]
        elif typ == "Composite":
            kinds = ["angle"] * (qs.stop - qs.start)
        else:
            raise ValueError(f"joint {model.joint_names[j]!r}: no default sampling for a {typ} joint; "
                             "give q explicitly (an array, a function or Normal)")
        if len(kinds) != qs.stop - qs.start:
            raise ValueError(f"joint {model.joint_names[j]!r}: {typ} has {qs.stop - qs.start} coordinates, "
                             f"expected {len(kinds)}")
        out.append((j, qs, vs, kinds, rot, seq))
    return out


def _allowed_intervals(a, b, kind, margin):
    """[a, b) as a list of (start, length), less the bands within ``margin`` of an Euler middle
    angle's singular values (k pi for proper sequences, pi/2 + k pi for Tait-Bryan ones)."""
    if kind not in ("euler_proper", "euler_tait") or margin == 0.0:
        return [(a, b - a)]
    off = 0.0 if kind == "euler_proper" else 0.5 * np.pi
    k0 = math.floor((a - margin - off) / np.pi)
    k1 = math.ceil((b + margin - off) / np.pi)
    pieces, start = [], a
    for k in range(k0, k1 + 1):
        s = off + k * np.pi
        lo, hi = s - margin, s + margin
        if hi <= start or lo >= b:
            continue
        if lo > start:
            pieces.append((start, lo - start))
        start = max(start, hi)
    if start < b:
        pieces.append((start, b - start))
    return [p for p in pieces if p[1] > 0]


class _ConfigUniform(_Source):
    def __init__(self, dist, model):
        nq = model.nq
        self.shape = (nq,)
        nan = np.full(nq, np.nan)
        low = nan if dist.low is None else _vector(dist.low, nq, "Uniform low of q", allow_nan=True)
        high = nan if dist.high is None else _vector(dist.high, nq, "Uniform high of q", allow_nan=True)
        lo = np.where(np.isnan(low), model.q_lower, low)
        hi = np.where(np.isnan(high), model.q_upper, high)
        self.columns = []            # (q index, starts, cumulative lengths, total)
        self.rotations = []          # (q start, kind code)
        L, margin = dist.length, dist.gimbal_margin
        for j, qs, vs, kinds, rot, seq in _coordinate_kinds(model):
            name = model.joint_names[j]
            rot_start = qs.stop - (4 if rot == "quaternion" else 3)
            boxed = rot is not None and rot != "quaternion" and np.any(np.isfinite(
                np.concatenate([lo[rot_start:qs.stop], hi[rot_start:qs.stop]])))
            if rot is not None and not boxed:
                self.rotations.append((rot_start, _ROT_KIND[rot]))
            for x, kind in enumerate(kinds):
                i = qs.start + x
                if kind == "rotation" and not boxed:
                    continue
                h = {"angle": np.pi, "length": L, "rotation": np.pi if rot == "rotvec" else 1.0}.get(kind, np.pi)
                a, b = lo[i], hi[i]
                if not np.isfinite(a):
                    a = -h if not np.isfinite(b) or b > -h else b - 2 * h
                if not np.isfinite(b):
                    b = h if a < h else a + 2 * h
                if b < a:
                    raise ValueError(f"q[{i}] of joint {name!r}: lower bound {a} exceeds upper bound {b}")
                pieces = _allowed_intervals(a, b, kind, margin)
                if not pieces:
                    raise ValueError(f"q[{i}], the middle Euler angle of joint {name!r} ({seq}): the range "
                                     f"[{a:.6g}, {b:.6g}] leaves nothing {margin} rad away from gimbal lock")
                starts = np.array([p[0] for p in pieces])
                cum = np.concatenate([[0.0], np.cumsum([p[1] for p in pieces])])
                self.columns.append((i, starts, cum[:-1].copy(), float(cum[-1])))
        self.rot_start = np.array([r[0] for r in self.rotations], dtype=np.int64)
        self.rot_kind = np.array([r[1] for r in self.rotations], dtype=np.int64)
        # the interval program of _intervals: word c of a sample's stream is coordinate col[c]
        self.col = np.array([c[0] for c in self.columns], dtype=np.int64)
        self.cnt = np.array([len(c[1]) for c in self.columns], dtype=np.int64)
        self.off = np.concatenate([[0], np.cumsum(self.cnt)[:-1]]).astype(np.int64)
        self.starts = np.concatenate([c[1] for c in self.columns] + [np.zeros(0)])
        self.cums = np.concatenate([c[2] for c in self.columns] + [np.zeros(0)])
        self.totals = np.array([c[3] for c in self.columns], dtype=np.float64)
        self._description = {"type": "Uniform", "low": _json_vector(low), "high": _json_vector(high),
                             "length": L, "gimbal_margin": margin}

    def draw(self, entropy, name, first, m, buf):
        q = buf("out", (m,) + self.shape)
        if len(self.col) < self.shape[0]:
            q[...] = 0.0
        if len(self.col):
            u = buf("u", (m, len(self.col)))
            _uniform_rows(_key(entropy, name, 0), first, u)
            _intervals(u, self.col, self.off, self.cnt, self.starts, self.cums, self.totals, q)
        if len(self.rotations):
            z = buf("z", (m, 4 * len(self.rotations)))
            _normal_rows(_key(entropy, name, 1), first, z)
            _rotations_from_normals(z, self.rot_start, self.rot_kind, q)
        return q

    def describe(self):
        return self._description


@pjit
def _intervals(U, col, off, cnt, starts, cums, totals, Q):
    """Q[i, col[c]] = U[i, c] mapped uniformly onto the union of the intervals of coordinate c:
    starts[off[c]:off[c] + cnt[c]], with cumulative lengths cums there and total totals[c]."""
    for i in prange(U.shape[0]):
        for c in range(col.shape[0]):
            x = U[i, c] * totals[c]
            o = off[c]
            p = 0
            while p + 1 < cnt[c] and x >= cums[o + p + 1]:
                p += 1
            Q[i, col[c]] = starts[o + p] + (x - cums[o + p])


@pjit
def _rotations_from_normals(Z, start, kind, Q):
    """Rotation blocks of Q from 4 normals each: a uniform unit quaternion (w, x, y, z), or
    (w >= 0) its rotation vector, Gibbs vector or modified Rodrigues parameters."""
    for i in prange(Z.shape[0]):
        for r in range(start.shape[0]):
            w, x, y, z = Z[i, 4 * r], Z[i, 4 * r + 1], Z[i, 4 * r + 2], Z[i, 4 * r + 3]
            nrm = math.sqrt(w * w + x * x + y * y + z * z)
            w, x, y, z = w / nrm, x / nrm, y / nrm, z / nrm
            s = start[r]
            if kind[r] == 0:
                Q[i, s], Q[i, s + 1], Q[i, s + 2], Q[i, s + 3] = w, x, y, z
                continue
            if w < 0.0:
                w, x, y, z = -w, -x, -y, -z
            if kind[r] == 1:
                sv = math.sqrt(x * x + y * y + z * z)
                f = 2.0 * math.atan2(sv, w) / sv if sv > 0.0 else 2.0
            elif kind[r] == 2:
                f = 1.0 / w
            else:
                f = 1.0 / (1.0 + w)
            Q[i, s], Q[i, s + 1], Q[i, s + 2] = f * x, f * y, f * z


@pjit
def _quaternion_perturb(Q, D, qstart, vstart):
    """Q[i, block] <- Q[i, block] * exp(D[i, vblock] / 2): a right (C axes) rotation by the
    rotation vector of the perturbation, renormalised."""
    for i in prange(Q.shape[0]):
        for r in range(qstart.shape[0]):
            s, v = qstart[r], vstart[r]
            px, py, pz = D[i, v], D[i, v + 1], D[i, v + 2]
            th = math.sqrt(px * px + py * py + pz * pz)
            if th < 1e-8:
                c, f = 1.0 - th * th / 8.0, 0.5 - th * th / 48.0
            else:
                c, f = math.cos(0.5 * th), math.sin(0.5 * th) / th
            bw, bx, by, bz = c, f * px, f * py, f * pz
            aw, ax, ay, az = Q[i, s], Q[i, s + 1], Q[i, s + 2], Q[i, s + 3]
            w = aw * bw - ax * bx - ay * by - az * bz
            x = aw * bx + ax * bw + ay * bz - az * by
            y = aw * by - ax * bz + ay * bw + az * bx
            z = aw * bz + ax * by - ay * bx + az * bw
            n = math.sqrt(w * w + x * x + y * y + z * z)
            Q[i, s], Q[i, s + 1], Q[i, s + 2], Q[i, s + 3] = w / n, x / n, y / n, z / n


class _ConfigNormal(_Source):
    def __init__(self, dist, model):
        nq, nv = model.nq, model.nv
        self.shape = (nq,)
        given = None if dist.mean is None else _vector(dist.mean, nq, "Normal mean of q")
        mean = model.neutral().copy() if given is None else given.copy()
        self.std = _vector(dist.std, nv, "Normal std of q (one per velocity variable)")
        if np.any(self.std < 0):
            raise ValueError(f"Normal std of q must be >= 0, got {self.std.tolist()}")
        qi, vi, qstart, vstart = [], [], [], []
        for j, qs, vs, kinds, rot, seq in _coordinate_kinds(model):
            n_lin = qs.stop - qs.start - (4 if rot == "quaternion" else 0)
            if rot == "quaternion":
                qb, vb = qs.stop - 4, vs.stop - 3
                quat = mean[qb:qs.stop]
                nrm = float(np.sqrt(np.sum(quat * quat)))
                if abs(nrm - 1.0) > 1e-6:
                    raise ValueError(f"Normal mean: q[{qb}:{qs.stop}], the quaternion of joint "
                                     f"{model.joint_names[j]!r}, has norm {nrm:.6g}; a unit quaternion is required")
                mean[qb:qs.stop] = quat / nrm
                qstart.append(qb)
                vstart.append(vb)
            if n_lin != (vs.stop - vs.start) - (3 if rot == "quaternion" else 0):
                raise ValueError(f"Normal for q: joint {model.joint_names[j]!r} has no coordinate-wise "
                                 "tangent; give q as an array or a function")
            qi += list(range(qs.start, qs.start + n_lin))
            vi += list(range(vs.start, vs.start + n_lin))
        self.mean, self.qi, self.vi = mean, np.array(qi, dtype=np.int64), np.array(vi, dtype=np.int64)
        self.qstart, self.vstart = np.array(qstart, dtype=np.int64), np.array(vstart, dtype=np.int64)
        # the mean as given: drawing again from the description repeats the normalisation
        self._description = {"type": "Normal", "mean": None if given is None else given.tolist(),
                             "std": self.std.tolist()}

    def draw(self, entropy, name, first, m, buf):
        d = buf("d", (m, self.std.shape[0]))
        _normal_rows(_key(entropy, name, 0), first, d)
        d *= self.std
        q = buf("out", (m,) + self.shape)
        q[:] = self.mean
        q[:, self.qi] = self.mean[self.qi] + d[:, self.vi]
        if self.qstart.shape[0]:
            _quaternion_perturb(q, d, self.qstart, self.vstart)
        return q

    def describe(self):
        return self._description


def _bind_source(obj, name, model, n, t):
    """The bound source of input ``name`` (q, qd, qdd, tau, t) from what the user gave."""
    shape = {"q": (model.nq,), "t": ()}.get(name, (model.nv,))
    if obj is None:
        if name == "q":
            return _ConfigUniform(Uniform(), model)
        if name == "t":
            return _Constant(t)
        return _PlainNormal(Normal(), name, shape)
    if isinstance(obj, Uniform):
        return _ConfigUniform(obj, model) if name == "q" else _PlainUniform(obj, name, shape)
    if isinstance(obj, Normal):
        return _ConfigNormal(obj, model) if name == "q" else _PlainNormal(obj, name, shape)
    if isinstance(obj, (Sampler, Tolerances)):
        raise ValueError(f"sampler {name}: expected a distribution, an array or a function, got {obj!r}")
    if callable(obj) and not hasattr(obj, "shape"):
        return _Function(obj, name, shape)
    if hasattr(obj, "shape") and hasattr(obj, "__getitem__"):
        return _Array(obj, name, shape, n)
    if isinstance(obj, (list, tuple)):
        return _Array(np.asarray(obj, dtype=np.float64), name, shape, n)
    raise ValueError(f"sampler {name}: expected None, ej.Uniform, ej.Normal, an array of shape "
                     f"{(n,) + shape} or a function f(rng, size), got {type(obj).__name__}")


def _source_from_description(name, d, model, n, t):
    """The bound source a stored description came from (for inputs drawn again when read)."""
    if d["type"] == "Uniform":
        dist = Uniform(d["low"], d["high"], **({"length": d["length"], "gimbal_margin": d["gimbal_margin"]}
                                              if name == "q" else {}))
    elif d["type"] == "Normal":
        dist = Normal(d["mean"], d["std"])
    else:
        raise ValueError(f"input {name!r} ({d['type']}) is stored, not drawn")
    src = _bind_source(dist, name, model, n, t)
    if src.describe() != d:
        raise ValueError(f"the stored description of {name!r} does not rebuild its sampler")
    return src


# -- model parameters
@jit
def _exp_into(f, o):
    for i in range(f.shape[0]):
        o[i] = math.exp(f[i])


def _exp_each(a):
    """exp of every entry by libm's scalar exp: numpy's vectorised exp may round differently, and
    ``sample_model`` must rebuild the sampled bits."""
    a = np.ascontiguousarray(a, dtype=np.float64)
    out = np.empty_like(a)
    _exp_into(a.reshape(-1), out.reshape(-1))
    return out


def _rotation_exp(phi):
    """Rotation matrix of a rotation vector (Rodrigues), in scalar libm arithmetic so that
    sampling and ``sample_model`` rebuild the same bits."""
    x, y, z = float(phi[0]), float(phi[1]), float(phi[2])
    th = math.sqrt(x * x + y * y + z * z)
    if th < 1e-8:
        a, b = 1.0 - th * th / 6.0, 0.5 - th * th / 24.0
    else:
        a, b = math.sin(th) / th, (1.0 - math.cos(th)) / (th * th)
    K = ((0.0, -z, y), (z, 0.0, -x), (-y, x, 0.0))
    R = [[0.0] * 3 for _ in range(3)]
    for r in range(3):
        for c in range(3):
            kk = K[r][0] * K[0][c] + K[r][1] * K[1][c] + K[r][2] * K[2][c]
            R[r][c] = (1.0 if r == c else 0.0) + a * K[r][c] + b * kk
    return R


class _Params:
    """Tolerances bound to a model: which bodies, which fields, and how to build a model from a
    row of sampled parameters."""

    def __init__(self, tol, model):
        self.tol = tol
        names = list(model.body_names[1:])
        if tol.bodies is None:
            idx = list(range(1, model.nbodies + 1))
        else:
            idx = []
            for pat in tol.bodies:
                hit = [i + 1 for i, b in enumerate(names) if fnmatch.fnmatchcase(b, pat)]
                if not hit:
                    raise ValueError(f"Tolerances bodies: no body matches {pat!r} (bodies: {', '.join(names)})")
                idx += [i for i in hit if i not in idx]
            idx.sort()
        if not idx:
            raise ValueError("Tolerances: the model has no bodies to vary")
        self.bodies = idx
        self.body_names = [model.body_names[i] for i in idx]
        self.base = model.to_dict()
        rows = [self.base["bodies"][i - 1] for i in idx]
        self.mass0 = np.array([float(b["mass"]) for b in rows])
        self.com0 = np.array([b["com"] for b in rows], dtype=float)
        self.pos0 = np.array([b["placement"]["translation"] for b in rows], dtype=float)
        self.group = tol.group
        self.fields = []                 # (stored name, trailing shape)
        if tol.mass:
            self.fields.append(("mass", (len(idx),)))
        if tol.com:
            self.fields.append(("com", (len(idx), 3)))
        if tol.length or tol.offset:
            self.fields.append(("placement", (len(idx), 3)))
        if tol.angle:
            self.fields.append(("placement_angle", (len(idx), 3)))

    def describe(self):
        t = self.tol
        return {"type": "Tolerances", "mass": t.mass, "com": t.com, "length": t.length, "offset": t.offset,
                "angle": t.angle, "bodies": self.body_names, "group": self.group}

    def draw(self, entropy, g0, G):
        """Parameters of groups g0 .. g0 + G - 1: {field: (G, ...)}."""
        k = len(self.bodies)
        t = self.tol
        widths = {"mass": k if t.mass else 0, "com": 3 * k if t.com else 0,
                  "length": k if t.length else 0, "offset": 3 * k if t.offset else 0,
                  "angle": 3 * k if t.angle else 0}
        z = StreamRNG(entropy, "params", g0, G).standard_normal((G, sum(widths.values())))
        parts, at = {}, 0
        for f in Tolerances.FIELDS:
            parts[f] = z[:, at:at + widths[f]]
            at += widths[f]
        out = {}
        if t.mass:
            out["mass"] = self.mass0 * _exp_each(t.mass * parts["mass"])
        if t.com:
            out["com"] = self.com0 + t.com * parts["com"].reshape(G, k, 3)
        if t.length or t.offset:
            pos = np.broadcast_to(self.pos0, (G, k, 3)).copy()
            if t.length:
                pos = pos * _exp_each(t.length * parts["length"])[:, :, None]
            if t.offset:
                pos = pos + t.offset * parts["offset"].reshape(G, k, 3)
            out["placement"] = pos
        if t.angle:
            out["placement_angle"] = t.angle * parts["angle"].reshape(G, k, 3)
        return out

    def model(self, values):
        """The model of one row of sampled parameters {field: (k, ...)}."""
        d = copy.deepcopy(self.base)
        for r, i in enumerate(self.bodies):
            b = d["bodies"][i - 1]
            if "mass" in values:
                m1 = float(values["mass"][r])
                m0 = float(b["mass"])
                if m0 > 0.0:
                    s = m1 / m0
                    b["inertia"] = [[float(v) * s for v in row] for row in b["inertia"]]
                b["mass"] = m1
            if "com" in values:
                b["com"] = [float(v) for v in values["com"][r]]
            pl = b.setdefault("placement", {})
            if "placement" in values:
                pl["translation"] = [float(v) for v in values["placement"][r]]
            if "placement_angle" in values:
                E = pl.get("rotation") or [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
                D = _rotation_exp(values["placement_angle"][r])
                pl["rotation"] = [[E[a][0] * D[0][c] + E[a][1] * D[1][c] + E[a][2] * D[2][c] for c in range(3)]
                                  for a in range(3)]
        return _ej().Model.from_dict(d, source="perturbed model")


# ============================================================================ quantities
def _parse_quantities(quantities, model):
    """[(name, kind, body index or None)] from names or one comma-separated string."""
    if isinstance(quantities, str):
        items = [s.strip() for s in quantities.split(",") if s.strip()]
    else:
        try:
            items = list(quantities)
        except TypeError:
            raise ValueError(f"quantities must be names or a comma-separated string, got {quantities!r}") from None
    if not items:
        raise ValueError("quantities is empty; name at least one of " + ", ".join(_quantity_names()))
    out, seen = [], set()
    for q in items:
        if not isinstance(q, str):
            raise ValueError(f"quantity names must be strings, got {q!r}")
        kind, _, body = q.partition(":")
        if kind not in QUANTITIES:
            raise ValueError(f"unknown quantity {q!r}; known: {', '.join(_quantity_names())}")
        if kind in _BODY_QUANTITIES:
            if not body:
                raise ValueError(f"quantity {q!r} needs a body: '{kind}:BODY' with BODY one of "
                                 f"{', '.join(model.body_names[1:])}")
            try:
                b = model.body_index(int(body) if body.isdigit() and body not in model.body_names else body)
            except ModelError:
                raise ValueError(f"quantity {q!r}: the model has no body {body!r}; bodies: "
                                 f"{', '.join(model.body_names)}") from None
            name = f"{kind}:{model.body_names[b]}"
        else:
            if body:
                raise ValueError(f"quantity {q!r}: {kind} takes no body")
            name, b = kind, None
        if name in seen:
            raise ValueError(f"quantity {name!r} is listed twice")
        seen.add(name)
        out.append((name, kind, b))
    return out


def _quantity_names():
    return [k + (":BODY" if k in _BODY_QUANTITIES else "") for k in QUANTITIES]


def _output_arrays(quantity, model):
    """[(array name, trailing shape)] stored for a quantity."""
    name, kind, _ = quantity
    nv, n1 = model.nv, model.nbodies + 1
    if kind in ("rnea", "aba", "nonlinear_effects"):
        return [(name, (nv,))]
    if kind == "mass_matrix":
        return [(name, (nv, nv))]
    if kind == "kinetic_energy":
        return [(name, ())]
    if kind == "forward_kinematics":
        return [(name, (4, 4))]
    if kind == "body_jacobian":
        return [(name, (6, nv))]
    # joint_terms of a model with mimic joints are those of its expansion
    nvx = model.expanded().nv if model.has_mimic else nv
    return [(name + ".J", (6, nvx)), (name + ".sigma", (n1, 6)), (name + ".bias", (n1, 6))]


class _EvalError(Exception):
    """A batch call failed as a whole (not one sample) on the states of samples offset, ..."""

    def __init__(self, quantity, exc, offset):
        super().__init__(quantity, exc, offset)
        self.quantity, self.exc, self.offset = quantity, exc, offset


def _evaluate(model, quantities, x, out, rows, offset, status, buf=None):
    """Every quantity at the states x (dict of input arrays; t a float or (m,)) into
    out[array][rows], or with ``rows`` None into out[array] (the arrays the calls return, not
    copied, or for rnea and aba ``buf(name, shape)``'s arrays, reused from chunk to chunk);
    ``status[rows]`` gets each sample's first non-zero ``ej.Status`` code over the quantities.
    ``offset`` is the sweep index of x's first sample (for error reports)."""
    ej = _ej()
    from .aba import forward_dynamics, rnea_and_aba
    from .rnea import inverse_dynamics
    own_buffer = (lambda name: buf(name, (len(q), model.nv))) if buf is not None and rows is None else (
        lambda name: None)
    q, t = x["q"], x["t"]
    rows = slice(None) if rows is None else rows
    own = status[rows]
    kin = None
    # rnea and aba of the same states share their forward sweep: one call gives both
    names = {kind: name for name, kind, _ in quantities}
    pair = None
    if "rnea" in names and "aba" in names:
        try:
            pair = rnea_and_aba(model, q, x["qd"], x["qdd"], x["tau"], t=t,
                                out=(own_buffer(names["rnea"]), own_buffer(names["aba"])))
        except Exception as e:
            raise _EvalError(names["rnea"], e, offset) from e

    def put(name, value):
        if name in out:
            out[name][rows] = value
        else:
            out[name] = value

    def flag(st):
        np.copyto(own, st, where=(own == 0) & (st != 0), casting="unsafe")

    for name, kind, body in quantities:
        try:
            # rnea and aba by the functions their batch calls run, into the sweep's own buffers
            if pair is not None and kind in ("rnea", "aba"):
                value, st = pair[0] if kind == "rnea" else pair[1]
            elif kind == "rnea":
                value, st = inverse_dynamics(model, q, x["qd"], x["qdd"], t=t, errors="flag", out=own_buffer(name))
            elif kind == "aba":
                value, st = forward_dynamics(model, q, x["qd"], x["tau"], t=t, errors="flag", out=own_buffer(name))
            elif kind == "mass_matrix":
                value, st = ej.mass_matrix(model, q, t=t, errors="flag")
            elif kind == "nonlinear_effects":
                value, st = ej.nonlinear_effects(model, q, x["qd"], t=t, errors="flag")
            elif kind == "kinetic_energy":
                value, st = ej.kinetic_energy(model, q, x["qd"], t=t, errors="flag")
            elif kind == "forward_kinematics":
                if kin is None:
                    kin = ej.forward_kinematics(model, q, t=t, errors="flag")
                R, p = kin[0].R[:, body], kin[0].p[:, body]
                value = np.empty((len(q), 4, 4))
                value[:, :3, :3] = R
                value[:, :3, 3] = p
                value[:, 3, :3] = 0.0
                value[:, 3, 3] = 1.0
                st = kin[1]
                value[st != 0] = np.nan
            elif kind == "body_jacobian":
                value, st = ej.body_jacobian(model, q, body, t=t, errors="flag")
            else:
                terms, st = ej.joint_terms(model, q, x["qd"], t=t, errors="flag")
                put(name + ".J", terms.J)
                put(name + ".sigma", terms.sigma)
                put(name + ".bias", terms.bias)
                flag(st)
                continue
        except Exception as e:
            raise _EvalError(name, e, offset) from e
        put(name, value)
        flag(st)


# ============================================================================ the store
_SAFE = re.compile(r"[^A-Za-z0-9_.\-]")
_FINGERPRINT = "ejce_nb.sweep.fingerprint"
_NUMERICS = "ejce_nb.sweep.numerics"
# the root's only attribute while a store is being created: a directory holding it is ours
_CREATING = "ejce_nb.sweep.creating"
# chunk files are written under a name with this suffix and renamed into place (as zarr does)
_PARTIAL = ".partial"
_SYNC = getattr(os, "fdatasync", os.fsync)


def _array_paths(names):
    """Directory of each array in the group: the name made portable (':' and other characters
    become '_' or '.'), unique."""
    paths, used = {}, set()
    for name in names:
        p = _SAFE.sub("_", name.replace(":", "."))
        if p.startswith("__") or p in ("", ".", "..") or p.startswith(".sweep"):
            p = "a" + p
        base, k = p, 1
        while p.lower() in used:
            k += 1
            p = f"{base}_{k}"
        used.add(p.lower())
        paths[name] = p
    return paths


def _bare_bytes(arr):
    """Whether zarr keeps arr's chunks as their bare little-endian C-ordered bytes (the layout of
    the arrays a sweep creates: no filters, no compressor, one bytes codec)."""
    codecs = arr.metadata.codecs
    if len(codecs) != 1 or type(codecs[0]).__name__ != "BytesCodec" or arr.order != "C":
        return False
    endian = getattr(codecs[0].endian, "value", codecs[0].endian)
    return endian == "little" or (endian is None and np.dtype(arr.dtype).itemsize == 1)


# O_DIRECT writes go from the array to the disk without the page cache, whose pages cost more CPU
# to fill than the kernels take to compute them; they need this alignment of memory, offset and size
_ALIGN = 4096
_DIRECT = getattr(os, "O_DIRECT", 0)
# buffers from this size on are memory maps (of huge pages where there are)
_HUGE = 2 << 20
_staging = threading.local()


def _aligned_empty(shape, dtype=np.float64):
    """An empty C-ordered array whose data starts on an _ALIGN boundary.  Large ones are
    anonymous memory maps of transparent huge pages where the system has them: touching fresh
    memory for the first time costs a page fault per page, and the sweep's buffers are large."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if nbytes >= _HUGE and hasattr(mmap, "MADV_HUGEPAGE"):
        try:
            m = mmap.mmap(-1, nbytes)
            m.madvise(mmap.MADV_HUGEPAGE)
            return np.frombuffer(m, dtype=dtype, count=nbytes // dtype.itemsize).reshape(shape)
        except (OSError, ValueError):
            pass
    raw = np.empty(nbytes + _ALIGN, dtype=np.uint8)
    at = -raw.ctypes.data % _ALIGN
    return raw[at:at + nbytes].view(dtype).reshape(shape)


# Buffers of finished sweeps, kept for the next sweep of this process (by shape), up to this many
# bytes: a sweep's buffers are tens of megabytes, and touching fresh memory costs a page fault per
# page (about 2 ms a megabyte), which repeated sweeps, like repeated batch calls on malloc's
# reused memory, need not pay again.
SPARE_BYTES = 512 << 20
_spare = {}
_spare_lock = threading.Lock()


def _take_spare(shape):
    with _spare_lock:
        pool = _spare.get(shape)
        return pool.pop() if pool else None


def _keep_spare(arrays):
    """Give the arrays (each from ``_aligned_empty``) to the next sweep, within SPARE_BYTES."""
    with _spare_lock:
        held = sum(a.nbytes for pool in _spare.values() for a in pool)
        for a in arrays:
            if held + a.nbytes <= SPARE_BYTES:
                _spare.setdefault(a.shape, []).append(a)
                held += a.nbytes


def _chunk_bytes(data, rows, fill, aligned):
    """The bytes of a chunk file: data's rows then fill up to ``rows`` rows; in _ALIGN-aligned
    memory when ``aligned`` (a copy into this thread's staging buffer where data is not)."""
    row_bytes = data.nbytes // data.shape[0]
    total = rows * row_bytes
    if data.shape[0] == rows and (not aligned or data.ctypes.data % _ALIGN == 0):
        return memoryview(data.reshape(-1)).cast("B")
    buf = getattr(_staging, "buf", None)
    if buf is None or buf.size < total:
        buf = _staging.buf = _aligned_empty((total,), np.uint8)
    out = buf[:total]
    out[:data.nbytes] = data.reshape(-1).view(np.uint8)
    if data.shape[0] < rows:
        pad = np.full((rows - data.shape[0],) + data.shape[1:], fill, data.dtype)
        out[data.nbytes:] = pad.reshape(-1).view(np.uint8)
    return memoryview(out)


def _pwrite_all(fd, view, offset):
    if not hasattr(os, "pwrite"):         # Windows
        os.lseek(fd, offset, os.SEEK_SET)
    while view.nbytes:
        done = os.pwrite(fd, view, offset) if hasattr(os, "pwrite") else os.write(fd, view)
        view, offset = view[done:], offset + done


def _write_chunk(path, a, dtype, rows, fill):
    """One chunk file of ``rows`` samples (an edge chunk padded with ``fill``, as zarr stores it)
    written under a temporary name and on the disk (flushed, so that the marker written after it
    never outlives it, a power cut included) before it is renamed into place.  The whole 4 KiB
    blocks go by O_DIRECT where the file system takes it, the rest through the page cache, whose
    pages are then dropped: a sweep writes each byte once.  The disk wait is I/O on a writing
    thread, off the CPU."""
    data = np.ascontiguousarray(a, dtype=np.dtype(dtype).newbyteorder("<"))
    view = _chunk_bytes(data, rows, fill, aligned=bool(_DIRECT))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{uuid.uuid4().hex}{_PARTIAL}"
    head = view.nbytes // _ALIGN * _ALIGN if _DIRECT else 0
    fd = None
    if head:
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _DIRECT, 0o666)
        except OSError:                 # a file system without O_DIRECT (tmpfs, some network ones)
            head = 0
    if fd is None:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        if head:
            try:
                _pwrite_all(fd, view[:head], 0)
            except OSError:
                head = 0
            # the unaligned rest through the page cache: O_DIRECT off on the same descriptor
            import fcntl                # where O_DIRECT is, so is fcntl
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~_DIRECT)
        _pwrite_all(fd, view[head:], head)
        _SYNC(fd)
        if hasattr(os, "posix_fadvise"):
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    except BaseException:
        os.close(fd)
        os.remove(tmp)
        raise
    os.close(fd)
    os.replace(tmp, path)


_IO_THREADS = 4
_io = []
_io_lock = threading.Lock()


def _io_pool():
    """The threads that write chunk files (they mostly wait for the disk)."""
    with _io_lock:
        if not _io:
            _io.append(concurrent.futures.ThreadPoolExecutor(_IO_THREADS, "ejce_nb-sweep-io"))
        return _io[0]


if hasattr(os, "register_at_fork"):
    # a forked child has none of the parent's threads: it makes its own pool
    os.register_at_fork(after_in_child=_io.clear)


def _write_marker(path):
    """A chunk's byte of ``.sweep/done`` (a one-byte uint8 chunk of value 1), renamed into place;
    not flushed: a lost marker only costs recomputing its chunk."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{uuid.uuid4().hex}{_PARTIAL}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        os.write(fd, b"\x01")
    finally:
        os.close(fd)
    os.replace(tmp, path)


def _remove_partials(path):
    """zarr's temporary files left by writers that were killed (called under the lock)."""
    for dirpath, _, files in os.walk(path):
        for f in files:
            if f.endswith(_PARTIAL):
                try:
                    os.remove(os.path.join(dirpath, f))
                except OSError:
                    pass


def _canonical(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False)


@functools.lru_cache(maxsize=1)
def _package_hash():
    """Hash of this package's sources (the kernel cache's key): a Dask worker must run the same
    code as its client."""
    return _source_hash()


@functools.lru_cache(maxsize=1)
def _numerics():
    """Digest of a fixed draw through every transform of the samplers that calls libm
    (the ziggurat's tail and wedges, the rotations' atan2, the quaternion perturbation's sine and
    cosine, the tolerances' exp).  numpy's uniforms and IEEE arithmetic are the same on every
    machine; these functions need not be, and two machines with the same digest draw the same
    bits."""
    z = np.empty((2048, 16))
    _normal_rows(_key((0,), "numerics", 0), 0, z)
    q = np.zeros((2048, 16))
    _rotations_from_normals(z, np.array([0, 4, 8, 12], dtype=np.int64), np.arange(4, dtype=np.int64), q)
    _quaternion_perturb(q, z, np.array([0], dtype=np.int64), np.array([5], dtype=np.int64))
    h = hashlib.sha256()
    for a in (z, q, _exp_each(z)):
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


def _param_rows(params, entropy, first, stop):
    """Sampled model parameters of samples first .. stop - 1: ({field: (m, ...)}, [(group, a, b,
    {field: value})] with [a, b) the group's rows counted from first)."""
    g = params.group
    g0, g1 = first // g, (stop - 1) // g
    vals = params.draw(entropy, g0, g1 - g0 + 1)
    m = stop - first
    rows = {f: np.empty((m,) + shape) for f, shape in params.fields}
    groups = []
    for gi in range(g0, g1 + 1):
        a, b = max(first, gi * g) - first, min(stop, (gi + 1) * g) - first
        value = {f: v[gi - g0] for f, v in vals.items()}
        for f in rows:
            rows[f][a:b] = value[f]
        groups.append((gi, a, b, value))
    return rows, groups


class _Plan:
    """Everything a chunk needs: picklable, so that Dask workers get it once (the model travels as
    its JSON form and is rebuilt where it is used)."""

    def __init__(self, model, n, quantities, out, sampler, chunk_size, seed, t, store_inputs):
        ej = _ej()
        if not isinstance(model, ej.Model):
            raise ValueError(f"model must be an ej.Model (e.g. ej.models.load('arm7')), got {type(model).__name__}")
        self.n = _count(n, "n")
        cs = _count(chunk_size, "chunk_size")
        self.chunk_size = min(cs, self.n)
        self.nchunks = -(-self.n // self.chunk_size)
        self.entropy = _seed_entropy(seed)
        try:
            self.t = float(t)
        except (TypeError, ValueError):
            raise ValueError(f"t must be a number (per-sample times go in ej.Sampler(t=...)), got {t!r}") from None
        if not np.isfinite(self.t):
            raise ValueError(f"t must be finite, got {t!r}")
        if not isinstance(store_inputs, (bool, np.bool_)):
            raise ValueError(f"store_inputs must be True or False, got {store_inputs!r}")
        self.quantities = _parse_quantities(quantities, model)
        sampler = _as_sampler(sampler)
        needed = ["q", "qd"]
        for _, kind, _ in self.quantities:
            needed += [x for x in QUANTITIES[kind][0] if x not in needed]
        if sampler.sources["t"] is not None:
            needed.append("t")
        unused = [k for k, v in sampler.sources.items() if v is not None and k not in needed]
        if unused:
            raise ValueError(f"sampler gives {', '.join(unused)}, which none of the quantities "
                             f"{[q[0] for q in self.quantities]} uses")
        self.sources = {k: _bind_source(sampler.sources[k], k, model, self.n, self.t) for k in needed}
        self.params = None if sampler.tolerances is None else _Params(sampler.tolerances, model)
        self.input_shapes = {k: s.shape for k, s in self.sources.items()}
        if self.params is not None:
            self.input_shapes.update(dict(self.params.fields))
        self.output_shapes = dict(a for q in self.quantities for a in _output_arrays(q, model))
        # inputs drawn again when read instead of stored
        self.regenerated = set()
        if not store_inputs:
            self.regenerated = {k for k, s in self.sources.items() if s.regenerable}
            self.regenerated |= {f for f, _ in self.params.fields} if self.params is not None else set()
        names = list(self.input_shapes) + list(self.output_shapes) + [STATUS]
        self.written = [nm for nm in names if nm not in self.regenerated]
        self.paths = _array_paths(names)
        self.path = os.path.abspath(os.fspath(out))
        self.model_dict = model.to_dict()

        def entry(nm):
            role = "input" if nm in self.input_shapes else "status" if nm == STATUS else "output"
            trail = (self.input_shapes | self.output_shapes).get(nm, ())
            return {"path": self.paths[nm], "role": role, "shape": [self.n] + list(trail),
                    "dtype": "int8" if nm == STATUS else "float64", "stored": nm not in self.regenerated}
        self.spec = {
            "format": FORMAT, "version": FORMAT_VERSION, "ejce_nb": ej.__version__,
            "n": self.n, "chunk_size": self.chunk_size, "seed": list(self.entropy), "t": self.t,
            "quantities": [q[0] for q in self.quantities],
            "sampler": {k: s.describe() for k, s in self.sources.items()},
            "tolerances": None if self.params is None else self.params.describe(),
            "store_inputs": bool(store_inputs),
            "model": self.model_dict,
            "arrays": {nm: entry(nm) for nm in names},
        }
        self.fingerprint = hashlib.sha256(_canonical(self.spec).encode()).hexdigest()
        self.code = _package_hash()
        self.numerics = _numerics()
        self._model = model
        self._setup()

    def _setup(self):
        self._buffers = {}
        self._store_arrays = None
        self._store_lock = threading.Lock()

    def _buf(self, slot, name):
        """Scratch arrays of one input (its tag "out", and its temporaries) or of the outputs
        (name "outputs", a tag per quantity) in one pipeline slot of this thread, kept between
        chunks.  Only what the writer reads later needs a slot of its own: an input's temporaries
        and the inputs not stored share slot 0, so that fewer fresh pages are touched."""
        tid = threading.get_ident()
        own = self._buffers.setdefault((tid, slot if name not in self.regenerated else 0, name), {})
        shared = self._buffers.setdefault((tid, 0, name), {})

        def buf(tag, shape):
            pool = own if tag == "out" or name == "outputs" else shared
            a = pool.get(tag)
            rows = max(shape[0], self.chunk_size) if shape else 0
            if a is None or a.shape[1:] != tuple(shape[1:]) or a.shape[0] < shape[0]:
                full = (rows,) + tuple(shape[1:])
                # aligned, so that chunk files are written from it directly
                a = _take_spare(full)
                a = pool[tag] = a if a is not None else _aligned_empty(full)
            return a[:shape[0]]
        return buf

    def release_buffers(self):
        """Hand the scratch arrays to later sweeps of this process (when no chunk of this plan is
        being computed or written any more)."""
        arrays = [a for pool in self._buffers.values() for a in pool.values()]
        self._buffers = {}
        _keep_spare(arrays)

    # -- pickling: the model goes as its JSON form, open arrays and scratch stay behind
    def __getstate__(self):
        d = dict(self.__dict__)
        for k in ("_model", "_buffers", "_store_arrays", "_store_lock"):
            d.pop(k)
        return d

    def __setstate__(self, d):
        self.__dict__.update(d)
        self._model = None
        self._setup()

    @property
    def model(self):
        if self._model is None:
            self._model = _ej().Model.from_dict(self.model_dict, source="sweep model")
        return self._model

    def rows(self, k):
        first = k * self.chunk_size
        return first, min(self.n, first + self.chunk_size)

    # -- one chunk
    def compute(self, k, slot=0, inputs_drawn=None):
        """The arrays chunk k writes: {array name: (m, ...)}, the status included; raises
        _ChunkFailure.  The inputs live in the scratch arrays of ``slot`` until that slot computes
        again.  ``inputs_drawn({name: array})``, when given, receives the stored inputs as soon as
        they are drawn, before the kernels run."""
        first, stop = self.rows(k)
        m = stop - first
        x = {}
        for name, src in self.sources.items():
            if isinstance(src, _Constant):
                continue
            try:
                x[name] = src.draw(self.entropy, name, first, m, self._buf(slot, name))
            except Exception as e:
                raise _ChunkFailure(k, first, stop, f"drawing {name} failed: {type(e).__name__}: {e}") from e
        stored = {name: a for name, a in x.items() if name not in self.regenerated}
        if inputs_drawn is not None and stored:
            inputs_drawn(dict(stored))
        x.setdefault("t", self.t)
        status = np.zeros(m, dtype=np.int8)
        out = {}
        try:
            if self.params is None:
                _evaluate(self.model, self.quantities, x, out, None, first, status, self._buf(slot, "outputs"))
            else:
                out = {name: np.empty((m,) + shape) for name, shape in self.output_shapes.items()}
                params = self._evaluate_groups(k, first, stop, x, out, status)
                stored.update({f: a for f, a in params.items() if f not in self.regenerated})
        except _EvalError as e:
            raise _ChunkFailure(k, first, stop, f"{e.quantity}: {type(e.exc).__name__}: {e.exc} (sample "
                                f"numbers in the message count from sample {e.offset} of the sweep)") from e.exc
        stored.update(out)
        stored[STATUS] = status
        return stored

    def _evaluate_groups(self, k, first, stop, x, out, status):
        """Tolerance study: each group of samples in the chunk on its own perturbed model."""
        rows, groups = _param_rows(self.params, self.entropy, first, stop)
        for gi, a, b, value in groups:
            try:
                model = self.params.model(value)
            except ModelError as e:
                raise _ChunkFailure(k, first, stop, f"the perturbed model of samples {first + a}..{first + b - 1} "
                                    f"(group {gi}) is invalid: {e}", list(range(first + a, first + b))) from e
            sub = {name: (v[a:b] if isinstance(v, np.ndarray) else v) for name, v in x.items()}
            _evaluate(model, self.quantities, sub, out, slice(a, b), first + a, status)
        return rows

    # -- the store
    def _store(self):
        """({array name: zarr array} of the arrays written, the marker array), opened once per
        process (a Dask worker opens them at its first chunk)."""
        if self._store_arrays is None:
            with self._store_lock:
                if self._store_arrays is None:
                    g = _zarr().open_group(self.path, mode="r+")
                    arrays = {nm: g[self.paths[nm]] for nm in self.written}
                    # the chunk files are written here, in the layout these arrays declare
                    for nm, a in list(arrays.items()) + [(".sweep/done", g[".sweep/done"])]:
                        if not _bare_bytes(a):
                            raise ValueError(f"{self.path}: the array {nm!r} is not stored as bare bytes "
                                             f"(codecs {a.metadata.codecs}); a sweep creates its arrays so")
                    self._store_arrays = (arrays, g[".sweep/done"])
        return self._store_arrays

    def chunk_file(self, name, k):
        a = self._store()[0][name]
        key = a.metadata.encode_chunk_key((k,) + (0,) * (a.ndim - 1))
        return os.path.join(self.path, self.paths[name], *key.split("/"))

    def write_files(self, k, arrays):
        """Chunk k's files of ``arrays``, each flushed to disk, several at once (their waits for
        the disk overlap); raises _ChunkFailure."""
        z, _ = self._store()
        jobs = [(self.chunk_file(name, k), a, z[name].dtype, self.chunk_size, z[name].fill_value)
                for name, a in arrays.items()]
        futures = [_io_pool().submit(_write_chunk, *job) for job in jobs]
        errors = [f.exception() for f in futures]
        for e in errors:
            if isinstance(e, OSError):
                first, stop = self.rows(k)
                raise _ChunkFailure(k, first, stop, f"writing the chunk failed: {e}") from e
            if e is not None:
                raise e

    def mark(self, k):
        """Chunk k's marker, after all its files: a lost marker only costs recomputing the chunk,
        so it need not wait for the disk."""
        done = self._store()[1]
        _write_marker(os.path.join(self.path, ".sweep", "done", *done.metadata.encode_chunk_key((k,)).split("/")))

    def write_checked(self, k, arrays):
        self.write_files(k, arrays)
        self.mark(k)


def _marker_dir(path):
    # zarr's default key of chunk k of the one-dimensional array .sweep/done is c/<k>
    return os.path.join(path, ".sweep", "done", "c")


def _state_attrs(path):
    try:
        return _zarr().open_group(path, path=".sweep", mode="r").attrs.asdict()
    except Exception:
        return {}


def _record_failure(path, fail, done):
    """Keep the reason of a failed chunk in the attributes of ``.sweep`` (the driving process is
    their only writer); failures of chunks finished since are dropped."""
    attrs = _state_attrs(path)
    failures = {k: v for k, v in attrs.get("failures", {}).items() if k.isdigit() and int(k) not in done}
    failures[str(fail.chunk)] = {"chunk": fail.chunk, "first": fail.first, "stop": fail.stop,
                                 "reason": fail.reason, "samples": (fail.sample_indices or [])[:100],
                                 "time": time.strftime("%Y-%m-%dT%H:%M:%S")}
    try:
        _zarr().open_group(path, path=".sweep", mode="r+").attrs.update({"failures": failures})
    except OSError:
        pass


def _count(n, what):
    if isinstance(n, bool):
        raise ValueError(f"{what} must be a positive integer, got {n!r}")
    if isinstance(n, (float, np.floating)) and float(n).is_integer():
        n = int(n)
    if not isinstance(n, (int, np.integer)):
        raise ValueError(f"{what} must be a positive integer, got {n!r}")
    if n <= 0:
        raise ValueError(f"{what} must be a positive integer, got {n}")
    return int(n)


def _seed_entropy(seed):
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) and seed >= 0:
        return (int(seed),)
    if isinstance(seed, (list, tuple)) and seed and all(
            isinstance(s, (int, np.integer)) and not isinstance(s, bool) and s >= 0 for s in seed):
        return tuple(int(s) for s in seed)
    raise ValueError(f"seed must be a non-negative integer (or a list of them), got {seed!r}")


# ---------------------------------------------------------------------------- opening the store
def _diff(stored, given):
    """What differs between two sweep descriptions, in words."""
    out = []
    for key in ("n", "chunk_size", "seed", "t", "quantities", "store_inputs"):
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


def _root_attrs(path):
    """The attributes of the zarr group at ``path``, None when it has no root metadata."""
    zarr = _zarr()
    if not os.path.exists(os.path.join(path, "zarr.json")):
        return None
    try:
        return zarr.open_group(path, mode="r").attrs.asdict()
    except Exception as e:
        raise ValueError(f"{path!r} is not a sweep: zarr cannot read its root metadata ({e})") from None


def _read_root(path):
    attrs = _root_attrs(path)
    if attrs is None:
        raise ValueError(f"{path!r} is not a sweep: it has no zarr.json")
    spec = attrs.get(FORMAT)
    if spec is None and _CREATING in attrs:
        raise ValueError(f"{path!r}: the creation of this sweep was interrupted; run the sweep again")
    if not isinstance(spec, dict) or spec.get("format") != FORMAT:
        raise ValueError(f"{path!r} is a zarr store but not an ejce_nb sweep")
    return {"spec": spec, "fingerprint": attrs.get(_FINGERPRINT), "numerics": attrs.get(_NUMERICS)}


def _check_out(plan):
    """Refuse an ``out`` that is a file, a foreign directory or a different sweep; create the
    directory of a new one."""
    path = plan.path
    if os.path.exists(path) and not os.path.isdir(path):
        raise ValueError(f"out {path!r} exists and is not a directory")
    attrs = _root_attrs(path)
    if attrs is not None and FORMAT in attrs:
        _check_same(plan)
    elif attrs is not None and _CREATING not in attrs:
        raise ValueError(f"out {path!r} is a zarr store but not an ejce_nb sweep; give a new or empty directory")
    elif os.path.isdir(path):
        # an empty directory, or one whose creation was interrupted before its description
        ours = set(plan.paths.values()) | {".sweep", "zarr.json"}
        other = sorted(e for e in os.listdir(path) if e not in ours and not e.endswith(_PARTIAL))
        if other:
            raise ValueError(f"out {path!r} exists and is not an ejce_nb sweep (it holds "
                             f"{', '.join(other[:5])}{' ...' if len(other) > 5 else ''}); give a new "
                             "or empty directory")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise ValueError(f"cannot write the sweep to {path!r}: {e.strerror or e}") from None
    if not os.access(path, os.W_OK):
        raise ValueError(f"cannot write the sweep to {path!r}: permission denied")


def _check_same(plan):
    stored = _read_root(plan.path)
    if stored["fingerprint"] != plan.fingerprint:
        raise ValueError(f"{plan.path} holds a different sweep; " + "; ".join(_diff(stored["spec"], plan.spec))
                         + ". Use another directory, or the same arguments to resume it")
    if plan.regenerated and stored["numerics"] != plan.numerics:
        raise ValueError(f"{plan.path}: this sweep does not store its sampled inputs (store_inputs=False), "
                         "and this machine's math library draws them with other bits than the one that "
                         "began it; finish it there, or start it anew in another directory")


def _init_store(plan):
    """Create the group, its arrays and the marker array of a new store (under the lock), or
    check an existing one again."""
    zarr = _zarr()
    path = plan.path
    attrs = _root_attrs(path)
    if attrs is not None and FORMAT in attrs:
        _check_same(plan)
        return
    if attrs is None:
        g = zarr.create_group(store=path, zarr_format=3, attributes={_CREATING: plan.fingerprint})
    else:
        g = zarr.open_group(path, mode="r+")
    shapes = plan.input_shapes | plan.output_shapes
    for name in plan.written:
        trail = shapes.get(name, ())
        status = name == STATUS
        g.create_array(plan.paths[name], shape=(plan.n,) + trail, chunks=(plan.chunk_size,) + trail,
                       dtype="int8" if status else "float64", fill_value=NOT_COMPUTED if status else np.nan,
                       compressors=None, dimension_names=["sample"] + [None] * len(trail),
                       attributes={"ejce_nb.name": name, "role": plan.spec["arrays"][name]["role"]},
                       overwrite=True)
    g.create_group(".sweep", overwrite=True).create_array(
        "done", shape=(plan.nchunks,), chunks=(1,), dtype="uint8", fill_value=0, compressors=None,
        dimension_names=["chunk"], attributes={"description": "1 where the chunk of that index is finished"})
    # the description last: with it the store is complete
    g.attrs.put({FORMAT: plan.spec, _FINGERPRINT: plan.fingerprint, _NUMERICS: plan.numerics})


def _done_chunks(path, nchunks, plan=None):
    """Chunks with a marker (and, given the plan, all their files present)."""
    try:
        names = os.listdir(_marker_dir(path))
    except OSError:
        return set()
    done = {int(x) for x in names if x.isdigit() and int(x) < nchunks}
    if plan is not None:
        done = {k for k in done if all(os.path.exists(plan.chunk_file(nm, k)) for nm in plan.written)}
    return done


class _Lock:
    """An exclusive lock on the sweep's directory for the process that drives it (the OS releases
    it if that process dies)."""

    def __init__(self, path):
        self.path = path
        self.fd = None

    def __enter__(self):
        try:
            import fcntl
        except ImportError:          # no advisory locks on this platform
            return self
        self.fd = os.open(self.path, os.O_RDONLY)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(self.fd)
            self.fd = None
            raise ValueError(f"{self.path} is being written by another process (it holds the "
                             "directory's lock); wait for it or use another directory") from None
        return self

    def __exit__(self, *exc):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


# ============================================================================ progress
def _tqdm():
    try:
        from tqdm.auto import tqdm
    except ImportError:
        raise ValueError(f"the progress bar needs tqdm, which is not installed: {INSTALL} "
                         "(or progress=False)") from None
    return tqdm


class _Progress:
    """A tqdm bar (states/s, time left) updated from the writer thread or the Dask loop; nothing
    when off."""

    def __init__(self, enabled, total, initial, desc):
        self.bar = None
        self.lock = threading.Lock()
        if enabled:
            self.bar = _tqdm()(total=total, initial=initial, unit=" states", unit_scale=True, desc=desc,
                               dynamic_ncols=True, smoothing=0.1)

    def update(self, m):
        if self.bar is not None:
            with self.lock:
                self.bar.update(m)

    def close(self):
        if self.bar is not None:
            self.bar.close()
            self.bar = None


# ============================================================================ running
def _run_local(plan, pending, progress, create=None):
    """Compute chunk after chunk on this thread while a second thread writes the previous ones:
    the writes overlap the serial parts of the batch calls.  Three slots of scratch inputs: when
    chunk i is computed, chunk i-1 may wait in the queue and chunk i-2 be in writing, and chunk
    i-3 (the slot reused) is on disk.  ``create``: a function that creates the store, which the
    writing thread calls before its first write, while the first chunk is computed.  Returns the
    number of flagged samples."""
    todo = queue.Queue(maxsize=1)
    failed = []
    not_created = []
    flagged = [0]

    def writer():
        if create is not None:
            try:
                create()
            except BaseException as e:          # raised by the computing thread
                not_created.append(e)
                failed.append(e)
        while True:
            item = todo.get()
            if item is None:
                return
            if failed:
                continue
            k, arrays = item
            try:
                plan.write_checked(k, arrays)
                flagged[0] += int(np.count_nonzero(arrays[STATUS]))
                progress.update(len(arrays[STATUS]))
            except BaseException as e:          # reported by the computing thread
                failed.append(e)

    th = threading.Thread(target=writer, name="ejce_nb-sweep-writer", daemon=True)
    th.start()
    try:
        for i, k in enumerate(pending):
            if failed:
                break
            todo.put((k, plan.compute(k, slot=i % 3)))
    finally:
        # the queued chunks are written before this returns, also on Ctrl-C
        todo.put(None)
        th.join()
        if not_created:
            raise not_created[0]
    plan.release_buffers()
    if failed:
        raise failed[0]
    return flagged[0]


class _DeferredWriter:
    """On a Dask worker, a task's chunk is written while the worker computes its next chunk: two
    slots of buffers, one being computed into while the other's files go to the disk on this
    writer's thread.  A task waits for the write that last used its slot (and raises that chunk's
    failure); the client drains every worker's writer when the tasks are done (``_drain``) and
    checks that every chunk's marker is there, since a finished task's write may still be lost
    with its worker."""

    def __init__(self, plan):
        self.plan = plan
        self.turn = 0
        self.writes = [None, None]
        self.pool = concurrent.futures.ThreadPoolExecutor(1, "ejce_nb-sweep-deferred")

    def run(self, k):
        slot = self.turn % 2
        self.turn += 1
        previous, self.writes[slot] = self.writes[slot], None
        if previous is not None:
            previous.result()               # a failure is reported once, here
        # the inputs' files go first, while the kernels run; the writer's one thread keeps the order
        early = []
        arrays = self.plan.compute(k, slot=slot, inputs_drawn=lambda ins: early.append(
            (set(ins), self.pool.submit(self.plan.write_files, k, ins))))
        written = set().union(*(names for names, _ in early))
        rest = {name: a for name, a in arrays.items() if name not in written}
        self.writes[slot] = self.pool.submit(self._finish, k, rest, [f for _, f in early])
        return len(arrays[STATUS]), int(np.count_nonzero(arrays[STATUS]))

    def _finish(self, k, rest, early):
        for f in early:
            f.result()
        self.plan.write_files(k, rest)
        self.plan.mark(k)

    def drain(self):
        """Wait for the writes in flight; the first failure among them, or None."""
        failure = None
        for i, f in enumerate(self.writes):
            if f is not None:
                try:
                    f.result()
                except BaseException as e:     # noqa: B902 -- reported to the client
                    failure = failure or e
                self.writes[i] = None
        self.pool.shutdown()
        return failure


_WRITERS = {}
_WRITERS_LOCK = threading.Lock()


def _dask_task(plan, k, run):
    if _package_hash() != plan.code:
        import ejce_nb
        raise RuntimeError(f"this worker runs ejce_nb from {os.path.dirname(ejce_nb.__file__)} "
                           f"(sources {_package_hash()}), not the client's (sources {plan.code}); "
                           "install the same version on every worker (or set PYTHONPATH)")
    if plan.regenerated and _numerics() != plan.numerics:
        raise RuntimeError("this worker's math library draws the sampled inputs with other bits than the "
                           "client's, and the sweep does not store them (store_inputs=False): run it on "
                           "machines with the same numerical libraries, or with store_inputs=True")
    key = (run, threading.get_ident())
    with _WRITERS_LOCK:
        writer = _WRITERS.get(key)
        if writer is None:
            writer = _WRITERS[key] = _DeferredWriter(plan)
    return (k,) + writer.run(k)


def _drain(run, finished=False):
    """On a worker: finish the writes of the sweep run ``run``; the first failure, or None.
    ``finished``: every task of the run has returned, and its buffers go to later sweeps."""
    with _WRITERS_LOCK:
        writers = [_WRITERS.pop(key) for key in [key for key in _WRITERS if key[0] == run]]
    failures = [w.drain() for w in writers]
    if finished:
        for plan in {id(w.plan): w.plan for w in writers}.values():
            plan.release_buffers()
    return next((f for f in failures if f is not None), None)


def _run_dask(plan, pending, progress, client):
    """The pending chunks as tasks on the cluster, then every worker's writes drained; chunks whose
    markers are still missing (a worker lost after its task returned) run again, once."""
    try:
        import distributed  # noqa: F401
    except ImportError:
        raise ValueError('scheduler=client needs dask.distributed: pip install "ejce_nb[dask]"') from None
    plan_future = client.scatter(plan, broadcast=True, hash=False)
    flagged = 0
    try:
        for attempt in range(2):
            run = uuid.uuid4().hex[:8]
            finished = False
            try:
                flagged += _run_tasks(plan, plan_future, pending, progress, client, run)
                finished = True
            finally:
                failure = _drain_workers(client, run, finished)
            if failure is not None:
                raise failure
            missing = sorted(set(pending) - _done_chunks(plan.path, plan.nchunks, plan))
            if not missing:
                return flagged
            pending = missing
        k = missing[0]
        first, stop = plan.rows(k)
        raise _ChunkFailure(k, first, stop, f"chunks {missing} were computed twice but their files never reached "
                            "the store (are the workers' paths the client's?)")
    finally:
        plan_future.release()


def _drain_workers(client, run, finished=False):
    """Finish the writes of ``run`` on every worker that is still there; the first failure."""
    try:
        results = client.run(_drain, run, finished)
    except Exception as e:            # a worker lost meanwhile: its chunks show as missing
        logging.getLogger(__name__).warning("draining the workers' writes: %s", e)
        return None
    return next((f for f in results.values() if f is not None), None)


def _run_tasks(plan, plan_future, pending, progress, client, run):
    from distributed import as_completed
    nthreads = sum(client.nthreads().values()) or 1
    window = max(2, 2 * nthreads)
    todo = iter(pending)
    queue = as_completed()
    futures = []
    flagged = 0

    def submit():
        for k in todo:
            f = client.submit(_dask_task, plan_future, k, run, key=f"ejce_nb-sweep-{run}-{k}",
                              pure=False, retries=0)
            futures.append(f)
            queue.add(f)
            return True
        return False

    for _ in range(window):
        if not submit():
            break
    try:
        for fut in queue:
            if fut.status == "error":
                exc = fut.exception()
                for f in futures:
                    if not f.done():
                        f.cancel()
                if isinstance(exc, _ChunkFailure):
                    raise exc
                k = int(fut.key.rsplit("-", 1)[1])
                first, stop = plan.rows(k)
                raise _ChunkFailure(k, first, stop, f"{type(exc).__name__}: {exc}") from exc
            _, m, bad = fut.result()
            flagged += bad
            progress.update(m)
            fut.release()
            submit()
    except KeyboardInterrupt:
        for f in futures:
            if not f.done():
                f.cancel()
        raise
    return flagged


def sweep(model, n, quantities, out, sampler=None, chunk_size=100_000, seed=0, t=0.0,
          scheduler=None, progress=True, store_inputs=True):
    """Evaluate ``quantities`` on ``n`` sampled states of ``model``, chunk by chunk, into the
    zarr store ``out``; returns a ``SweepResult``.

    quantities: names (or one comma-separated string) of ``"rnea"``, ``"aba"``,
    ``"mass_matrix"``, ``"nonlinear_effects"``, ``"kinetic_energy"``, ``"joint_terms"``,
    ``"forward_kinematics:BODY"`` (the body's pose, (4, 4)) and ``"body_jacobian:BODY"``.
    The inputs are q and qd, with qdd for ``rnea`` and tau for ``aba``; by default q is uniform
    (``ej.Uniform``: joint limits, angles in [-pi, pi), unit quaternions uniform on SO(3), Euler
    angles away from gimbal lock) and qd, qdd, tau standard normal; ``sampler`` (an ``ej.Sampler``,
    or for q alone a distribution, an array or a function ``f(rng, size)``; or an
    ``ej.Tolerances``) changes that.

    A sample the engine cannot compute (NaN in its inputs, a gimbal lock, ...) gets NaN rows in the
    quantities it breaks and its ``ej.Status`` code in ``result["status"]``; the sweep goes on.
    The same ``seed`` gives bitwise the same inputs and outputs whatever ``chunk_size``, thread
    count or number of Dask workers.  Running again with the same arguments on the same ``out``
    skips the finished chunks; other arguments are refused.  ``scheduler``: None (this process,
    the kernels on all Numba threads) or a ``dask.distributed.Client``.  ``progress``: a progress
    bar (states/s, time left).  ``store_inputs=False``: inputs drawn from distributions (not those
    given as arrays or functions) are not written, and reading them draws them again, the same
    bits.  A chunk that fails as a whole (a sampler raising, a wrong shape, an invalid perturbed
    model, a disk error) raises ``ej.SweepError`` naming its samples and the reason, after the
    chunks finished before it have been kept.  Needs zarr and, for the bar, tqdm
    (``pip install "ejce_nb[sweep]"``)."""
    if scheduler is not None and not (hasattr(scheduler, "submit") and hasattr(scheduler, "scatter")):
        raise ValueError(f"scheduler must be None or a dask.distributed.Client, got {type(scheduler).__name__}")
    _zarr()
    if progress:
        _tqdm()
    plan = _Plan(model, n, quantities, out, sampler, chunk_size, seed, t, store_inputs)
    _check_out(plan)
    with _Lock(plan.path):
        def prepare():
            _init_store(plan)
            _remove_partials(plan.path)

        create = None
        if scheduler is None and _root_attrs(plan.path) is None:
            # a new store: created on the writing thread while the first chunk is computed
            create, done = prepare, set()
        else:
            prepare()
            done = _done_chunks(plan.path, plan.nchunks, plan)
        pending = [k for k in range(plan.nchunks) if k not in done]
        initial = sum(plan.rows(k)[1] - plan.rows(k)[0] for k in done)
        bar = _Progress(bool(progress) and bool(pending), plan.n, initial, "sweep")
        t0 = time.perf_counter()
        try:
            if scheduler is None:
                flagged = _run_local(plan, pending, bar, create)
            else:
                flagged = _run_dask(plan, pending, bar, scheduler)
        except _ChunkFailure as fail:
            bar.close()
            result = SweepResult(plan.path)
            _record_failure(plan.path, fail, result.chunks_done)
            raise SweepError(
                f"sweep {plan.path}: {fail}; {len(result.chunks_done)} of {plan.nchunks} chunks are "
                "finished and kept (rerun with the same arguments to resume)",
                chunk=fail.chunk, samples=range(fail.first, fail.stop), sample_indices=fail.sample_indices,
                reason=fail.reason, result=result) from (fail.__cause__ or fail)
        finally:
            bar.close()
        seconds = time.perf_counter() - t0
    result = SweepResult(plan.path)
    result.run_info = {"computed": plan.n - initial, "seconds": seconds, "chunks": len(pending),
                       "resumed_chunks": len(done), "flagged": flagged}
    return result


def open_sweep(out):
    """Reopen a finished or partial sweep (``SweepResult``)."""
    return SweepResult(out)


# ============================================================================ results
class SweepArray:
    """One array of a sweep, read lazily: ``np.asarray`` loads it (missing chunks of a partial
    sweep read as NaN, and as -1 in ``status``), indexing reads only the chunks it touches,
    ``iter_chunks`` yields the finished chunks one at a time.  A stored array is read with zarr;
    an input the sweep did not store is drawn again from (seed, index), the same bits."""

    def __init__(self, result, name):
        self._r = result
        self.name = name
        meta = result._arrays[name]
        self.shape = tuple(meta["shape"])
        self.dtype = np.dtype(meta["dtype"])
        self.stored = meta["stored"]
        self.chunks = (result.chunk_size,) + self.shape[1:]
        self._path = meta["path"]
        self._z = None

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

    def __len__(self):
        return self.shape[0]

    def __repr__(self):
        done = f"{len(self._r.chunks_done)}/{self._r.nchunks}"
        how = "" if self.stored else ", drawn when read"
        return f"<SweepArray {self.name!r} shape={self.shape} ({done} chunks{how})>"

    def _fill(self):
        return np.nan if self.dtype.kind == "f" else NOT_COMPUTED

    def read_chunk(self, k):
        """Rows of chunk k (NaN, or -1 for ``status``, if the chunk is not finished)."""
        first = k * self._r.chunk_size
        stop = min(self.shape[0], first + self._r.chunk_size)
        if k not in self._r.chunks_done:
            return np.full((stop - first,) + self.shape[1:], self._fill(), dtype=self.dtype)
        if not self.stored:
            return self._r._draw(self.name, first, stop)
        if self._z is None:
            self._z = self._r._group()[self._path]
        return self._z[first:stop]

    def iter_chunks(self):
        """(first, stop, rows) of each finished chunk, in order."""
        for k in sorted(self._r.chunks_done):
            first = k * self._r.chunk_size
            yield first, min(self.shape[0], first + self._r.chunk_size), self.read_chunk(k)

    def __array__(self, dtype=None, copy=None):
        if copy is False:
            raise ValueError(f"{self.name!r} is on disk: reading it makes a copy")
        out = np.empty(self.shape, dtype=self.dtype)
        cs = self._r.chunk_size
        for k in range(self._r.nchunks):
            out[k * cs:(k + 1) * cs] = self.read_chunk(k)
        return out if dtype is None else out.astype(dtype)

    def __getitem__(self, key):
        key = key if isinstance(key, tuple) else (key,)
        head, rest = key[0], key[1:]
        if head is Ellipsis:
            return np.asarray(self)[key]
        cs = self._r.chunk_size
        if isinstance(head, (int, np.integer)):
            i = int(head) + (self.shape[0] if head < 0 else 0)
            if not 0 <= i < self.shape[0]:
                raise IndexError(f"index {head} is out of range for {self.shape[0]} samples")
            return self.read_chunk(i // cs)[(i % cs,) + rest]
        if isinstance(head, slice):
            idx = np.arange(*head.indices(self.shape[0]))
        else:
            idx = np.asarray(head)
            if idx.dtype == bool:
                idx = np.nonzero(idx)[0]
            idx = np.where(idx < 0, idx + self.shape[0], idx).astype(np.int64)
            if idx.size and (idx.min() < 0 or idx.max() >= self.shape[0]):
                raise IndexError(f"indices out of range for {self.shape[0]} samples")
        out = np.empty((idx.size,) + self.shape[1:], dtype=self.dtype)
        ck = idx // cs
        for k in np.unique(ck):
            sel = ck == k
            out[sel] = self.read_chunk(int(k))[idx[sel] - k * cs]
        return out[(slice(None),) + rest] if rest else out

    def to_dask(self):
        """A dask array of the data, chunked as stored."""
        try:
            import dask.array as da
        except ImportError:
            raise ValueError('to_dask needs dask: pip install "ejce_nb[dask]"') from None
        return da.from_array(self, chunks=self.chunks, asarray=True, fancy=False)


class _Fields:
    """The arrays of one quantity stored as several (``joint_terms``: J, sigma, bias)."""

    def __init__(self, result, name, fields):
        self._fields = {f: result[f"{name}.{f}"] for f in fields}
        self.name = name

    def __getattr__(self, f):
        try:
            return self.__dict__["_fields"][f]
        except KeyError:
            raise AttributeError(f) from None

    def __getitem__(self, f):
        return self._fields[f]

    def keys(self):
        return self._fields.keys()

    def __repr__(self):
        return f"<{self.name}: {', '.join(self._fields)}>"


class Stats:
    """count, min, max, mean, std of an array over its samples (each of the trailing shape)."""

    def __init__(self, name, count, minimum, maximum, mean, std):
        self.name, self.count = name, count
        self.min, self.max, self.mean, self.std = minimum, maximum, mean, std

    def __repr__(self):
        return f"<Stats {self.name}: count={self.count}, shape {np.shape(self.mean)}>"


class Summary(dict):
    """{array name: Stats}; ``status`` = {ej.Status: count} of the finished samples;
    ``str()`` is a table (one line per entry, or one per array for arrays of more than 12 entries
    per sample), after a line naming the flagged samples' codes."""

    def __init__(self, result, stats):
        super().__init__(stats)
        self.status = result.status_counts()
        self.header = (f"sweep {result.path}: {result.n_done:,} of {result.n:,} states "
                       f"({len(result.chunks_done)}/{result.nchunks} chunks), model with "
                       f"{result.model.nbodies} bodies, nq {result.model.nq}, nv {result.model.nv}")
        bad = {s: c for s, c in self.status.items() if s != Status.OK}
        self.flagged = (f"{sum(bad.values()):,} samples flagged (NaN in what they break): " +
                        ", ".join(f"{c:,} {s.name}" for s, c in sorted(bad.items())) if bad else
                        "no sample flagged")

    def table(self):
        lines = [self.header, self.flagged, f"{'array':<34s} {'count':>10s} {'min':>12s} {'max':>12s} {'mean':>12s} {'std':>12s}"]

        def row(label, c, lo, hi, mu, sd):
            lines.append(f"{label:<34s} {c:>10d} {lo:>12.5g} {hi:>12.5g} {mu:>12.5g} {sd:>12.5g}")

        for name, s in self.items():
            shape = np.shape(s.mean)
            size = int(np.prod(shape, dtype=np.int64))
            if size <= 12:
                for ix in np.ndindex(*shape):
                    label = name + (f"[{','.join(map(str, ix))}]" if ix else "")
                    row(label, s.count, s.min[ix], s.max[ix], s.mean[ix], s.std[ix])
                continue
            if shape == (4, 4) and name.startswith("forward_kinematics:"):
                for x, ax in enumerate("xyz"):
                    row(f"{name} p{ax}", s.count, s.min[x, 3], s.max[x, 3], s.mean[x, 3], s.std[x, 3])
                continue
            # pooled over entries: the spread of all entries together
            mu = float(np.mean(s.mean))
            var = float(np.mean(s.std ** 2 + (s.mean - mu) ** 2))
            row(f"{name} ({size} entries)", s.count, float(np.min(s.min)), float(np.max(s.max)), mu, math.sqrt(var))
        return "\n".join(lines)

    __str__ = table


class SweepResult:
    """A sweep's store: ``result[name]`` for every quantity and input and for ``"status"`` (a
    ``SweepArray``; ``result["joint_terms"]`` has ``.J``, ``.sigma``, ``.bias``), ``n``,
    ``quantities``, ``inputs``, ``path``, ``model``, ``complete``; ``summary()``,
    ``status_counts()``, ``histogram()``, ``workspace()``, ``plot()``, ``sample_model(i)``."""

    def __init__(self, out):
        self.path = os.path.abspath(os.fspath(out))
        if not os.path.isdir(self.path):
            raise ValueError(f"{self.path!r} is not a sweep directory (it does not exist)")
        root = _read_root(self.path)
        self.spec, self.fingerprint, self._numerics = root["spec"], root["fingerprint"], root["numerics"]
        if self.spec.get("version") != FORMAT_VERSION:
            raise ValueError(f"{self.path}: sweep format version {self.spec.get('version')}; this ejce_nb "
                             f"reads version {FORMAT_VERSION}")
        self.n = int(self.spec["n"])
        self.chunk_size = int(self.spec["chunk_size"])
        self.nchunks = -(-self.n // self.chunk_size)
        self.quantities = tuple(self.spec["quantities"])
        self._arrays = self.spec["arrays"]
        self.inputs = tuple(k for k, v in self._arrays.items() if v["role"] == "input")
        self.seed = self.spec["seed"]
        self.t = self.spec["t"]
        self._model = None
        self._params = None
        self._zgroup = None
        self._sources = None
        self.run_info = None
        self.refresh()

    def _group(self):
        if self._zgroup is None:
            self._zgroup = _zarr().open_group(self.path, mode="r")
        return self._zgroup

    def _draw(self, name, first, stop):
        """Rows first .. stop - 1 of an input the sweep did not store, drawn as the sweep drew them."""
        if self._sources is None:
            if self._numerics != _numerics():
                raise ValueError(f"{self.path}: {name!r} was not stored (store_inputs=False) and this machine's "
                                 "math library draws it with other bits than the one that ran the sweep; "
                                 "read it there")
            self._sources = {k: _source_from_description(k, d, self.model, self.n, self.t)
                             for k, d in self.spec["sampler"].items() if not self._arrays[k]["stored"]}
        entropy = tuple(self.seed)
        if name in self._sources:
            return self._sources[name].draw(entropy, name, first, stop - first, lambda tag, shape: np.empty(shape))
        return _param_rows(self._param_sampler(), entropy, first, stop)[0][name]

    def _param_sampler(self):
        if self._params is None:
            t = self.spec["tolerances"]
            self._params = _Params(Tolerances(t["mass"], t["com"], t["length"], t["offset"], t["angle"],
                                              bodies=t["bodies"], group=t["group"]), self.model)
        return self._params

    def refresh(self):
        """Re-read which chunks are finished (another process may be writing)."""
        self.chunks_done = frozenset(_done_chunks(self.path, self.nchunks))
        return self

    @property
    def n_done(self):
        cs = self.chunk_size
        return sum(min(self.n, (k + 1) * cs) - k * cs for k in self.chunks_done)

    @property
    def complete(self):
        return len(self.chunks_done) == self.nchunks

    def missing(self):
        """(first, stop) sample ranges of the unfinished chunks."""
        cs = self.chunk_size
        return [(k * cs, min(self.n, (k + 1) * cs)) for k in range(self.nchunks) if k not in self.chunks_done]

    def failures(self):
        """Recorded failures of unfinished chunks: [{chunk, first, stop, reason, samples, time}]."""
        f = _state_attrs(self.path).get("failures", {})
        return [f[k] for k in sorted(f, key=int) if int(k) not in self.chunks_done]

    @property
    def model(self):
        if self._model is None:
            self._model = _ej().Model.from_dict(self.spec["model"], source=f"{self.path} (sweep model)")
        return self._model

    @property
    def arrays(self):
        """Names of every stored array."""
        return tuple(self._arrays)

    def keys(self):
        return tuple(self.inputs) + tuple(self.quantities) + (STATUS,)

    def status_counts(self):
        """{ej.Status: number of finished samples with that code}, for the codes that occur."""
        counts = {}
        for _, _, s in self[STATUS].iter_chunks():
            codes, c = np.unique(s, return_counts=True)
            for code, k in zip(codes.tolist(), c.tolist()):
                counts[code] = counts.get(code, 0) + k
        return {Status(code): k for code, k in sorted(counts.items())}

    def __contains__(self, name):
        return name in self._arrays or name in self.quantities

    def _canonical(self, name):
        kind, sep, body = name.partition(":")
        if sep and kind in _BODY_QUANTITIES and name not in self.quantities and body.isdigit():
            b = int(body)
            if 0 <= b <= self.model.nbodies:
                return f"{kind}:{self.model.body_names[b]}"
        return name

    def __getitem__(self, name):
        name = self._canonical(name)
        if name in self._arrays:
            return SweepArray(self, name)
        if name in self.quantities and name == "joint_terms":
            return _Fields(self, name, ("J", "sigma", "bias"))
        raise KeyError(f"{name!r} is not in this sweep; it holds {', '.join(self.keys())}")

    def __repr__(self):
        return (f"<SweepResult {self.path}: {self.n_done:,}/{self.n:,} states, "
                f"quantities {list(self.quantities)}, inputs {list(self.inputs)}>")

    def to_dask(self, name):
        return self[name].to_dask()

    def sample_model(self, i):
        """The model of sample i: the sweep's model, or for a tolerance study the perturbed model
        rebuilt from the stored parameters."""
        if self.spec.get("tolerances") is None:
            return self.model
        params = self._param_sampler()
        row = {f: self[f][i] for f, _ in params.fields}
        return params.model(row)

    # -- summaries, each one pass per array over the finished chunks
    def summary(self, names=None):
        """Summary of every input and quantity array (or of ``names``) over the finished chunks,
        each over its finite rows (a flagged sample's NaN rows are left out)."""
        names = [a for a in self._arrays if a != STATUS] if names is None else [self._canonical(x) for x in names]
        stats = {}
        for name in names:
            if name not in self._arrays:
                if name in self.quantities:          # a quantity of several arrays
                    names += [a for a in self._arrays if a.startswith(name + ".") and a not in names]
                    continue
                raise KeyError(f"{name!r} is not in this sweep; it holds {', '.join(self._arrays)}")
            stats[name] = self._stats(name)
        return Summary(self, stats)

    def _stats(self, name):
        arr = self[name]
        count, mean, m2 = 0, 0.0, 0.0
        lo = hi = None
        for _, _, a in arr.iter_chunks():
            a = _finite_rows(a)
            c = a.shape[0]
            if c == 0:
                continue
            mu = a.mean(axis=0)
            d2 = ((a - mu) ** 2).sum(axis=0)
            if count == 0:
                mean, m2, lo, hi = mu, d2, a.min(axis=0), a.max(axis=0)
            else:
                # Chan et al.: merge the chunk's mean and squared deviations into the running ones
                tot = count + c
                delta = mu - mean
                mean = mean + delta * (c / tot)
                m2 = m2 + d2 + delta ** 2 * (count * c / tot)
                lo, hi = np.minimum(lo, a.min(axis=0)), np.maximum(hi, a.max(axis=0))
            count += c
        if count == 0:
            nan = np.full(arr.shape[1:], np.nan)
            return Stats(name, 0, nan, nan, nan, nan)
        return Stats(name, count, lo, hi, mean, np.sqrt(m2 / count))

    def histogram(self, name, bins=50, range=None):
        """Histogram of each entry of an array over the finished chunks' finite rows: (counts, edges) of
        shapes trailing + (bins,) and trailing + (bins + 1,); ``range`` (lo, hi) for all entries,
        else each entry's own min..max."""
        name = self._canonical(name)
        arr = self[name]
        if not isinstance(arr, SweepArray):
            raise ValueError(f"{name!r} holds several arrays ({', '.join(arr.keys())}); name one, "
                             f"e.g. '{name}.J'")
        bins = _count(bins, "bins")
        trail = arr.shape[1:]
        if range is None:
            s = self._stats(name)
            lo, hi = s.min, s.max
        else:
            lo, hi = np.broadcast_to(float(range[0]), trail), np.broadcast_to(float(range[1]), trail)
        lo = np.where(np.isfinite(lo), lo, 0.0)
        hi = np.where(np.isfinite(hi), hi, 1.0)
        hi = np.where(hi > lo, hi, lo + 1.0)
        edges = np.linspace(lo, hi, bins + 1, axis=-1)
        counts = np.zeros(trail + (bins,), dtype=np.int64)
        for _, _, a in arr.iter_chunks():
            a = _finite_rows(a)
            for ix in np.ndindex(*trail):
                counts[ix] += np.histogram(a[(slice(None),) + ix], bins=edges[ix])[0]
        return counts, edges

    def workspace(self, body=None, max_points=None):
        """Workspace point cloud: positions (k, 3) of a body origin over the finished samples (the
        flagged ones left out),
        from a ``forward_kinematics:BODY`` quantity (``body`` names it when there are several);
        ``max_points`` keeps every j-th sample to at most that many."""
        fk = [q for q in self.quantities if q.startswith("forward_kinematics:")]
        if body is None:
            if len(fk) != 1:
                raise ValueError("workspace needs a forward_kinematics:BODY quantity" if not fk else
                                 f"several bodies have poses ({', '.join(fk)}); give body=")
            name = fk[0]
        else:
            body = str(body)
            name = self._canonical(body if body.startswith("forward_kinematics:") else f"forward_kinematics:{body}")
            if name not in fk:
                raise ValueError(f"no pose of body {body!r} in this sweep; poses: {', '.join(fk) or 'none'}")
        stride = 1
        if max_points is not None:
            stride = max(1, -(-self.n_done // _count(max_points, "max_points")))
        parts, seen = [], 0
        for first, stop, a in self[name].iter_chunks():
            # every stride-th finished sample, counted across chunks
            off = (-seen) % stride
            parts.append(_finite_rows(a[off::stride, :3, 3]))
            seen += stop - first
        return np.concatenate(parts) if parts else np.zeros((0, 3))

    def plot(self, path=None, bins=50, max_points=20000, names=None):
        """Write a figure (PNG, PDF, ... by extension; default ``<out>.report.png``, beside the
        store) of the histograms of the quantities (or ``names``) and, for each body pose, the
        workspace cloud; returns its path.  Needs matplotlib."""
        try:
            from matplotlib.figure import Figure
            from matplotlib.backends.backend_agg import FigureCanvasAgg
        except ImportError:
            raise ValueError('plotting needs matplotlib: pip install "ejce_nb[plot]"') from None
        path = self.path + ".report.png" if path is None else os.fspath(path)
        if names is None:
            names = [a for a in self._arrays if self._arrays[a]["role"] == "output"]
        else:
            names = [self._canonical(x) for x in names]
        clouds = [q for q in self.quantities if q.startswith("forward_kinematics:")]
        hists = [x for x in names if x not in clouds]
        npanel = len(hists) + 3 * len(clouds)
        ncol = min(3, max(1, npanel))
        nrow = -(-npanel // ncol)
        fig = Figure(figsize=(5.0 * ncol, 3.8 * nrow), layout="constrained")
        FigureCanvasAgg(fig)
        panel = 0
        for name in hists:
            panel += 1
            ax = fig.add_subplot(nrow, ncol, panel)
            counts, edges = self.histogram(name, bins=bins)
            trail = counts.shape[:-1]
            entries = list(np.ndindex(*trail))
            if len(entries) <= 12:
                for ix in entries:
                    e = edges[ix]
                    ax.stairs(counts[ix], e, label=(f"[{','.join(map(str, ix))}]" if ix else None))
                if len(entries) > 1:
                    ax.legend(fontsize=6, ncol=2)
            else:
                lo, hi = float(edges[..., 0].min()), float(edges[..., -1].max())
                c, e = self.histogram(name, bins=bins, range=(lo, hi))
                ax.stairs(c.reshape(-1, bins).sum(axis=0), e.reshape(-1, bins + 1)[0])
                ax.set_title(f"{name} (all {len(entries)} entries)", fontsize=9)
            if len(entries) <= 12:
                ax.set_title(name, fontsize=9)
            ax.set_xlabel("value")
            ax.set_ylabel("samples")
        for name in clouds:
            p = self.workspace(name, max_points=max_points)
            body = name.split(":", 1)[1]
            panel += 1
            ax = fig.add_subplot(nrow, ncol, panel, projection="3d")
            ax.scatter(p[:, 0], p[:, 1], p[:, 2], s=0.5, alpha=0.4, c=p[:, 2], cmap="viridis")
            ax.set_title(f"workspace of {body} ({len(p):,} points)", fontsize=9)
            ax.set_xlabel("x")
            ax.set_ylabel("y")
            ax.set_zlabel("z")
            for a, b in ((0, 1), (0, 2)):
                panel += 1
                ax = fig.add_subplot(nrow, ncol, panel)
                ax.scatter(p[:, a], p[:, b], s=0.5, alpha=0.3, c=p[:, 2], cmap="viridis", rasterized=True)
                ax.set_aspect("equal", adjustable="datalim")
                ax.set_xlabel("xyz"[a])
                ax.set_ylabel("xyz"[b])
                ax.set_title(f"workspace of {body}, {'xyz'[a]}-{'xyz'[b]} projection", fontsize=9)
        fig.savefig(path, dpi=110)
        return path


def _finite_rows(a):
    """The rows of a (one per sample) without NaN or inf: flagged samples are NaN in what they break."""
    if a.dtype.kind != "f":
        return a
    ok = np.isfinite(a.reshape(a.shape[0], -1)).all(axis=1)
    return a if ok.all() else a[ok]
