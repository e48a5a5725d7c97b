"""Sources bound to a model: each input's distribution (or array, or function) made ready to
draw the rows of any block of samples (``draw``), described for the store (``describe``), and
picklable, so that Dask ships them."""
import numpy as np

from . import rng
from .distributions import vector
from .fingerprint import describe_callable, hash_array


class Source:
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


class Constant(Source):
    def __init__(self, value):
        self.value = float(value)

    def describe(self):
        return {"type": "constant", "value": self.value}


class Array(Source):
    def __init__(self, arr, name, shape, n):
        ashape = tuple(getattr(arr, "shape", np.shape(arr)))
        want = (n,) + shape
        if ashape != want:
            raise ValueError(f"sampler {name}: the array has shape {ashape}; expected {want} "
                             f"(one row per sample)")
        self.arr, self.shape, self.name = arr, shape, name
        self._description = {"type": "array", "shape": list(ashape),
                             "sha256": hash_array(arr, n)}

    regenerable = False

    def draw(self, entropy, name, first, m, buf):
        out = buf("out", (m,) + self.shape)
        out[...] = self.arr[first:first + m]
        return out

    def describe(self):
        return self._description


class Function(Source):
    def __init__(self, f, name, shape):
        self.f, self.name, self.shape = f, name, shape
        self._description = describe_callable(f)

    regenerable = False

    def draw(self, entropy, name, first, m, buf):
        out = self.f(rng.StreamRNG(entropy, name, first, m), m)
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


class PlainUniform(Source):
    def __init__(self, dist, name, shape):
        dim = int(np.prod(shape, dtype=np.int64))
        if dist.low is None or dist.high is None:
            raise ValueError(f"Uniform for {name} needs low and high")
        self.low = vector(dist.low, dim, f"Uniform low of {name}")
        self.high = vector(dist.high, dim, f"Uniform high of {name}")
        if np.any(self.high < self.low):
            raise ValueError(f"Uniform for {name}: high {self.high.tolist()} is below low {self.low.tolist()}")
        self.shape = shape

    def draw(self, entropy, name, first, m, buf):
        u = buf("out", (m, self.low.shape[0]))
        rng.uniform_rows(rng.key(entropy, name, 0), first, u)
        u *= self.high - self.low
        u += self.low
        return u.reshape((m,) + self.shape)

    def describe(self):
        return {"type": "Uniform", "low": self.low.tolist(), "high": self.high.tolist()}


class PlainNormal(Source):
    def __init__(self, dist, name, shape):
        dim = int(np.prod(shape, dtype=np.int64))
        self.mean = vector(0.0 if dist.mean is None else dist.mean, dim, f"Normal mean of {name}")
        self.std = vector(dist.std, dim, f"Normal std of {name}")
        if np.any(self.std < 0):
            raise ValueError(f"Normal std of {name} must be >= 0, got {self.std.tolist()}")
        self.shape = shape

    def draw(self, entropy, name, first, m, buf):
        z = buf("out", (m, self.mean.shape[0]))
        rng.normal_rows(rng.key(entropy, name, 0), first, z)
        if np.any(self.std != 1.0) or np.any(self.mean != 0.0):
            z *= self.std
            z += self.mean
        return z.reshape((m,) + self.shape)

    def describe(self):
        return {"type": "Normal", "mean": self.mean.tolist(), "std": self.std.tolist()}


# -- configurations
_ROT_KIND = {"quaternion": 0, "rotvec": 1, "rodrigues": 2, "mrp": 3}
