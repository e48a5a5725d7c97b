"""Each sample's own random numbers: the Philox key of an input's draw, rows of uniforms or
normals of consecutive samples (``streams``), and ``StreamRNG``, what a sampler function draws
from."""
import functools
import zlib

import numpy as np

from . import streams


def _stream_code(name):
    return zlib.crc32(name.encode("utf-8"))


@functools.lru_cache(maxsize=4096)
def key(entropy, stream, call):
    """Philox key of draw number ``call`` of the input ``stream`` (a name) under the seed
    ``entropy`` (a tuple of non-negative integers): ``np.random.SeedSequence(entropy,
    spawn_key=(crc32(stream), call))``."""
    ss = np.random.SeedSequence(entropy=list(entropy), spawn_key=(_stream_code(stream), call))
    return tuple(int(x) for x in ss.generate_state(2, np.uint64))


def _rows(fill, k, first, out):
    """fill(k0, k1, first, rows) on out viewed as (m, k) rows, through a C-ordered copy when out
    is not one."""
    m = out.shape[0]
    if out.size == 0:
        return
    k0, k1 = np.uint64(k[0]), np.uint64(k[1])
    if out.flags.c_contiguous and out.dtype == np.float64:
        fill(k0, k1, first, out.reshape(m, -1))
        return
    rows = np.empty((m, out.size // m))
    fill(k0, k1, first, rows)
    out[...] = rows.reshape(out.shape)


def uniform_rows(k, first, out):
    """out[i, j] = numpy's double (Generator.random) of word (first + i) w + j of the Philox
    stream of key ``k``, w = out.shape[1]: row i is sample first + i's w words."""
    _rows(streams.uniform_rows, k, first, out)


def normal_rows(k, first, out):
    """out[i] = standard normals of sample first + i: the ziggurat normals of its w words of the
    stream of key ``k`` (w = out.shape[1]), one word each."""
    _rows(streams.normal_rows, k, first, out)


class StreamRNG:
    """Random draws for a block of consecutive samples, one row per sample: row i comes from
    sample ``indices[i]``'s own part of the stream, so a sampler function that builds row i from
    row i's draws (and ``indices[i]``) gives the same values whatever the chunking.

    Methods ``random``, ``uniform``, ``normal``, ``standard_normal``, ``integers``; each call is
    a new draw with its own stream; ``size`` is the number of samples (the chunk's, given to the
    sampler) or a shape that starts with it, like ``(size, 7)``."""

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
        k = key(self._entropy, self._stream, self._calls)
        self._calls += 1
        out = np.empty((self.size, int(np.prod(shape[1:], dtype=np.int64))))
        rows(k, self.first, out)
        return out.reshape(shape)

    def random(self, size=None):
        """Uniform in [0, 1)."""
        return self._draw(size, uniform_rows)

    def uniform(self, low=0.0, high=1.0, size=None):
        u = self.random(size)
        return np.asarray(low, dtype=float) + (np.asarray(high, dtype=float) - np.asarray(low, dtype=float)) * u

    def standard_normal(self, size=None):
        return self._draw(size, normal_rows)

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
