"""A sweep's store, written and read with zarr's public API only.

``out`` is a local directory, a URL that zarr opens through fsspec (``file://``, ``s3://``, ...)
or a zarr store object (``zarr.storage.LocalStore``, ``ZipStore``, ``MemoryStore``,
``FsspecStore``, ...).  The group holds one array per input and per output and ``status``,
chunked along the samples with one zarr chunk per sweep chunk, raw values (random inputs and
dynamics outputs do not compress); the group ``.sweep`` holds the array ``done`` (one byte per
chunk, its marker) and the recorded failures in its attributes.

A new store is made in this order: the root group with the description of the arguments (and
its fingerprint) in its attributes, the arrays, and last ``.sweep/done``; a store without it is one
whose creation was interrupted, made again by the next run.  A chunk's marker is written after
all its arrays: a chunk counts as finished exactly when its marker is 1, so a sweep killed at any
moment keeps the finished chunks and rewrites the others (zarr writes each chunk of a local
directory under a temporary name, renamed into place)."""
import contextlib
import os
import warnings

import numpy as np

from . import fingerprint as fp
from .plan import FORMAT, FORMAT_VERSION, NOT_COMPUTED, STATUS, ChunkFailure

INSTALL = 'pip install ".[sweep]"'
FINGERPRINT = "ejce_nb.sweep.fingerprint"
NUMERICS = "ejce_nb.sweep.numerics"
DONE = ".sweep/done"
READABLE_VERSIONS = (3, FORMAT_VERSION)


def zarr_module():
    try:
        import zarr
    except ImportError:
        raise ValueError(f"sweeps are stored with zarr, which is not installed: {INSTALL}") from None
    return zarr


class Target:
    """The zarr store ``out`` names; ``label`` names it in messages (the local path, the URL or
    the store's repr); ``local`` is its directory when it is one on this machine."""

    def __init__(self, out, read_only=False):
        zarr = zarr_module()
        from zarr.abc.store import Store
        self.local = None
        if isinstance(out, Store):
            self.store = out
            if isinstance(out, zarr.storage.LocalStore):
                self.local = os.path.abspath(str(out.root))
            self.label = self.local or str(out)
        elif isinstance(out, (str, os.PathLike)):
            s = os.fspath(out)
            if "://" in s:
                opts = {"auto_mkdir": True} if s.startswith("file:") else None
                self.store = zarr.storage.FsspecStore.from_url(s, storage_options=opts, read_only=read_only)
                self.label = s
            elif read_only and os.path.isfile(s) and s.endswith(".zip"):
                self.store = zarr.storage.ZipStore(s, mode="r")
                self.label = os.path.abspath(s)
            else:
                self.local = self.label = os.path.abspath(s)
                if read_only and not os.path.isdir(self.local):
                    raise ValueError(f"{self.local!r} is not a sweep directory (it does not exist)")
                self.store = zarr.storage.LocalStore(self.local, read_only=read_only)
        else:
            raise ValueError(f"out must be a directory, a URL or a zarr store, got {type(out).__name__}")

    @property
    def keeps_buffers(self):
        """Whether the store keeps the written arrays' memory itself (a MemoryStore holds the
        buffers zarr hands it, so what is written there must not be reused)."""
        return isinstance(self.store, zarr_module().storage.MemoryStore)

    @property
    def shared(self):
        """Whether other processes can write it (a Dask cluster's workers)."""
        zarr = zarr_module()
        return not isinstance(self.store, (zarr.storage.MemoryStore, zarr.storage.ZipStore))

    def group(self, mode="r"):
        """The root group; read through "r+" where the store is writable (zarr makes a
        read-only copy of a store only where the store class can)."""
        if mode == "r" and not self.store.read_only:
            mode = "r+"
        return zarr_module().open_group(self.store, mode=mode)

    def state(self):
        """(root attributes or None when there is no group yet, whether ``.sweep/done`` exists)."""
        zarr = zarr_module()
        try:
            g = self.group("r")
        except (FileNotFoundError, zarr.errors.GroupNotFoundError):
            return None, False
        except zarr.errors.ContainsArrayError:
            raise ValueError(f"{self.label!r} is a zarr array, not an ejce_nb sweep") from None
        return g.attrs.asdict(), DONE in g


def read_root(target):
    """{spec, fingerprint, numerics} of a complete sweep store; ValueError otherwise."""
    attrs, complete = target.state()
    if attrs is None:
        raise ValueError(f"{target.label!r} is not a sweep: it holds no zarr group")
    spec = attrs.get(FORMAT)
    if not isinstance(spec, dict) or spec.get("format") != FORMAT:
        raise ValueError(f"{target.label!r} is a zarr store but not an ejce_nb sweep")
    if not complete:
        raise ValueError(f"{target.label!r}: the creation of this sweep was interrupted; run the sweep again")
    if spec.get("version") not in READABLE_VERSIONS:
        raise ValueError(f"{target.label!r}: sweep format version {spec.get('version')}; this ejce_nb reads "
                         f"versions {', '.join(map(str, READABLE_VERSIONS))}")
    return {"spec": spec, "fingerprint": attrs.get(FINGERPRINT), "numerics": attrs.get(NUMERICS)}


def check_directory(target, plan):
    """A local ``out``: refuse a file or a foreign directory; make the directory of a new one."""
    path = target.local
    if path is None:
        return
    if os.path.exists(path) and not os.path.isdir(path):
        raise ValueError(f"out {path!r} exists and is not a directory")
    if os.path.isdir(path) and not os.path.exists(os.path.join(path, "zarr.json")):
        ours = set(plan.paths.values()) | {".sweep"}
        other = sorted(e for e in os.listdir(path) if e not in ours)
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


def prepare(target, plan):
    """Refuse an ``out`` that is a file, a foreign directory or store, or a different sweep;
    create a new store (or one whose creation was interrupted).  Returns the finished chunks."""
    attrs, complete = target.state()
    if attrs is not None and FORMAT not in attrs:
        raise ValueError(f"out {target.label!r} is a zarr store but not an ejce_nb sweep; give a new or empty one")
    if attrs is not None and complete:
        same(target, plan, {"spec": attrs[FORMAT], "fingerprint": attrs.get(FINGERPRINT),
                            "numerics": attrs.get(NUMERICS)})
        return done_chunks(target, plan.nchunks)
    _create(target, plan, again=attrs is not None)
    return set()


def same(target, plan, stored):
    if stored["fingerprint"] != plan.fingerprint:
        raise ValueError(f"{target.label} holds a different sweep; " + "; ".join(fp.diff(stored["spec"], plan.spec))
                         + ". Use another store, or the same arguments to resume it")
    if plan.regenerated and stored["numerics"] != plan.numerics:
        raise ValueError(f"{target.label}: this sweep does not store its sampled inputs (store_inputs=False), "
                         "and this machine's math library draws them with other bits than the one that "
                         "began it; finish it there, or start it anew in another store")


def _create(target, plan, again):
    zarr = zarr_module()
    attrs = {FORMAT: plan.spec, FINGERPRINT: plan.fingerprint, NUMERICS: plan.numerics}
    g = zarr.create_group(target.store, zarr_format=3, attributes=attrs, overwrite=again)
    shapes = plan.input_shapes | plan.output_shapes
    for name in plan.written:
        trail = shapes.get(name, ())
        status = name == STATUS
        g.create_array(plan.paths[name], shape=(plan.n,) + trail, chunks=(plan.chunk_size,) + trail,
                       dtype="int8" if status else "float64", fill_value=NOT_COMPUTED if status else np.nan,
                       compressors=None, dimension_names=["sample"] + [None] * len(trail),
                       attributes={"ejce_nb.name": name, "role": plan.spec["arrays"][name]["role"]},
                       config={"write_empty_chunks": True})
    # last: with it the store is complete
    g.create_group(".sweep").create_array(
        "done", shape=(plan.nchunks,), chunks=(1,), dtype="uint8", fill_value=0, compressors=None,
        dimension_names=["chunk"], attributes={"description": "1 where the chunk of that index is finished"})


def done_chunks(target, nchunks):
    """Chunks whose marker is written."""
    try:
        done = target.group("r")[DONE]
    except (KeyError, FileNotFoundError):
        return set()
    return set(np.flatnonzero(done[:nchunks]).tolist())


class Writer:
    """The arrays of a sweep opened for writing chunks, in this process (a Dask worker opens them
    at its first chunk)."""

    def __init__(self, target, plan):
        g = target.group("r+")
        self.plan = plan
        self.copy = target.keeps_buffers
        self.arrays = {nm: g[plan.paths[nm]] for nm in plan.written}
        self.done = g[DONE]

    def write(self, k, arrays):
        """Chunk k's rows of ``arrays`` (a part of what it writes); raises ChunkFailure."""
        first, stop = self.plan.rows(k)
        try:
            for name, a in arrays.items():
                self.arrays[name][first:stop] = a.copy() if self.copy else a
        except OSError as e:
            raise ChunkFailure(k, first, stop, f"writing the chunk failed: {e}") from e

    def mark(self, k):
        """Chunk k's marker, after all its arrays."""
        self.done[k] = 1


@contextlib.contextmanager
def _quiet_rewrites(target):
    # a zip file keeps a rewritten entry as a second one (the later is read): zipfile warns
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Duplicate name", UserWarning)
        yield


def failures(target):
    try:
        return target.group("r")[".sweep"].attrs.asdict().get("failures", {})
    except (KeyError, FileNotFoundError):
        return {}


def record_failure(target, fail, done, when):
    """Keep the reason of a failed chunk in the attributes of ``.sweep`` (the driving process is
    their only writer); failures of chunks finished since are dropped."""
    kept = {k: v for k, v in failures(target).items() if k.isdigit() and int(k) not in done}
    kept[str(fail.chunk)] = {"chunk": fail.chunk, "first": fail.first, "stop": fail.stop, "reason": fail.reason,
                             "samples": (fail.sample_indices or [])[:100], "time": when}
    try:
        with _quiet_rewrites(target):
            target.group("r+")[".sweep"].attrs.update({"failures": kept})
    except OSError:
        pass


class Lock:
    """An exclusive lock on a local sweep directory for the process that drives it (the OS
    releases it if that process dies); nothing for other stores."""

    def __init__(self, path):
        self.path = path
        self.fd = None

    def __enter__(self):
        try:
            import fcntl
        except ImportError:          # no advisory locks on this platform
            return self
        if self.path is None:
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
