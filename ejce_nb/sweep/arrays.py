"""One array of a sweep (``SweepArray``), read lazily through zarr, or drawn again where the
sweep did not store it; and the arrays of a quantity stored as several (``joint_terms``)."""
import numpy as np

from .plan import NOT_COMPUTED


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
            raise ValueError('to_dask needs dask: pip install ".[dask]"') from None
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
