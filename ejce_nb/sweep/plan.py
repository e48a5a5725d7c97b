"""A sweep's plan: its arguments checked and described (the store's ``spec`` and its
fingerprint), and the computation of any chunk from them.  Picklable, so that Dask workers get it
once: the model travels as its JSON form and is rebuilt where it is used."""
import re
import threading

import numpy as np

from .._version import __version__
from ..errors import ModelError
from ..model.model import Model
from . import fingerprint, quantities as qty
from .distributions import as_sampler
from .libm import digest as numerics
from .manifold import bind_source
from .params import Params, param_rows
from .sources import Constant
from ..algorithms.loops.assembly import independent_variables
from ..algorithms.loops.kernel import ST_INPUT
from ..errors import Status
from ..sim.closed import assemble_batch

FORMAT = "ejce_nb.sweep"
# 4: every chunk written through zarr; the store is complete once .sweep/done exists
FORMAT_VERSION = 4
STATUS = "status"
# the status of a sample whose chunk is not finished
NOT_COMPUTED = -1
# states of the warm-up that compiles the kernels before the chunks: groups of lanes and a tail
WARM_STATES = 67


class SweepError(RuntimeError):
    """A sweep stopped (a ``RuntimeError``): a chunk failed as a whole (``chunk``, ``samples`` =
    the range of its samples, ``sample_indices`` = the offending samples when known,
    ``reason``).  The chunks finished before it stay in ``result`` (the partial
    ``SweepResult``) and a rerun with the same arguments resumes."""

    def __init__(self, message, chunk=None, samples=None, sample_indices=None, reason=None, result=None):
        super().__init__(message)
        self.chunk = chunk
        self.samples = samples
        self.sample_indices = sample_indices
        self.reason = reason
        self.result = result


class ChunkFailure(Exception):
    """Raised where a chunk is computed or written (a thread or a Dask worker); picklable."""

    def __init__(self, chunk, first, stop, reason, sample_indices=None):
        super().__init__(chunk, first, stop, reason, sample_indices)
        self.chunk, self.first, self.stop, self.reason = chunk, first, stop, reason
        self.sample_indices = sample_indices

    def __str__(self):
        return f"chunk {self.chunk} (samples {self.first}..{self.stop - 1}): {self.reason}"


def count(n, what):
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


_SAFE = re.compile(r"[^A-Za-z0-9_.\-]")


def _array_paths(names):
    """Name of each array in the group: the array's name made portable (':' and other characters
    become '.' or '_'), unique."""
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


class Plan:
    """The arguments of ``ej.sweep`` checked and bound to the model: the quantities, each input's
    source, the arrays written, the store's description (``spec``) and its fingerprint."""

    def __init__(self, model, n, quantities, sampler, chunk_size, seed, t, store_inputs, independent=None):
        if not isinstance(model, Model):
            raise ValueError(f"model must be an ej.Model (e.g. ej.models.load('arm7')), got {type(model).__name__}")
        self.n = count(n, "n")
        self.chunk_size = min(count(chunk_size, "chunk_size"), self.n)
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
        self.quantities = qty.parse(quantities, model)
        sampler = as_sampler(sampler)
        # a model with loop closures: the velocity variables held while each sample is assembled
        self.hold = None
        if model.has_loops:
            if sampler.tolerances is not None:
                raise ValueError("Tolerances: a tolerance study of a model with loop closures is not supported (each "
                                 "perturbed model would need its own assembly)")
            ind = independent_variables(model, independent)
            self.hold = np.zeros(model.nv)
            self.hold[ind] = 1.0
            self.independent = [model.velocity_names[k] for k in ind]
        elif independent is not None:
            raise ValueError("independent: the model has no loop closures; every coordinate is sampled independently")
        needed = ["q", "qd"]
        for _, kind, _ in self.quantities:
            needed += [x for x in qty.QUANTITIES[kind].inputs if x not in needed]
        if sampler.sources["t"] is not None:
            needed.append("t")
        unused = [k for k, v in sampler.sources.items() if v is not None and k not in needed]
        if unused:
            raise ValueError(f"sampler gives {', '.join(unused)}, which none of the quantities "
                             f"{[q[0] for q in self.quantities]} uses")
        self.sources = {k: bind_source(sampler.sources[k], k, model, self.n, self.t) for k in needed}
        self.params = None if sampler.tolerances is None else Params(sampler.tolerances, model)
        self.input_shapes = {k: s.shape for k, s in self.sources.items()}
        if self.params is not None:
            self.input_shapes.update(dict(self.params.fields))
        self.output_shapes = dict(a for q in self.quantities for a in qty.output_arrays(q, model))
        # inputs drawn again when read instead of stored
        self.regenerated = set()
        if not store_inputs:
            self.regenerated = {k for k, s in self.sources.items() if s.regenerable}
            self.regenerated |= {f for f, _ in self.params.fields} if self.params is not None else set()
            if self.hold is not None:
                # the closed states are stored: drawing again gives the samples before assembly
                self.regenerated -= {"q", "qd"}
        names = list(self.input_shapes) + list(self.output_shapes) + [STATUS]
        self.written = [nm for nm in names if nm not in self.regenerated]
        self.paths = _array_paths(names)
        shapes = self.input_shapes | self.output_shapes

        def entry(nm):
            role = "input" if nm in self.input_shapes else "status" if nm == STATUS else "output"
            return {"path": self.paths[nm], "role": role, "shape": [self.n] + list(shapes.get(nm, ())),
                    "dtype": "int8" if nm == STATUS else "float64", "stored": nm not in self.regenerated}
        self.spec = {
            "format": FORMAT, "version": FORMAT_VERSION, "ejce_nb": __version__,
            "n": self.n, "chunk_size": self.chunk_size, "seed": list(self.entropy), "t": self.t,
            "quantities": [q[0] for q in self.quantities],
            "sampler": {k: s.describe() for k, s in self.sources.items()},
            "tolerances": None if self.params is None else self.params.describe(),
            "store_inputs": bool(store_inputs),
            "model": model.to_dict(),
            "arrays": {nm: entry(nm) for nm in names},
        }
        if self.hold is not None:
            self.spec["loops"] = {"independent": self.independent}
        self.fingerprint = fingerprint.fingerprint(self.spec)
        self.code = fingerprint.package_hash()
        self.numerics = numerics()
        self._model = model
        self._buffers = {}
        self._opened = {}

    # -- pickling: the model goes as its JSON form, scratch arrays and open stores stay behind
    def __getstate__(self):
        d = dict(self.__dict__)
        d["_model"], d["_buffers"], d["_opened"] = None, {}, {}
        return d

    def opened(self, key, make):
        """What this process opened for the plan (the store's arrays on a Dask worker), made once."""
        if key not in self._opened:
            self._opened[key] = make()
        return self._opened[key]

    @property
    def model(self):
        if self._model is None:
            self._model = Model.from_dict(self.spec["model"], source="sweep model")
        return self._model

    def rows(self, k):
        first = k * self.chunk_size
        return first, min(self.n, first + self.chunk_size)

    def _buf(self, slot, name):
        """Scratch arrays of one input or of the outputs in one slot of this thread, kept from
        chunk to chunk of this sweep (fresh memory costs a page fault per page); the warm-up has
        a slot of its own."""
        pool = self._buffers.setdefault((threading.get_ident(), slot, name), {})

        def buf(tag, shape):
            a = pool.get(tag)
            if a is None or a.shape[1:] != tuple(shape[1:]) or a.shape[0] < shape[0]:
                rows = shape[0] if slot == "warm" else max(shape[0], self.chunk_size)
                a = pool[tag] = np.empty((rows,) + tuple(shape[1:]))
            return a[:shape[0]]
        return buf

    def compute(self, k, slot=0, inputs_drawn=None):
        """The arrays chunk k writes: {array name: (m, ...)}, the status included; raises
        ChunkFailure.  The arrays live in the scratch of ``slot`` until that slot computes again.
        ``inputs_drawn({name: array})``, when given, receives the stored inputs as soon as they
        are drawn, before the kernels run."""
        first, stop = self.rows(k)
        return self._compute(k, first, stop, slot, inputs_drawn)

    def warm(self):
        """Compile (or load) every kernel the chunks run: the first few states through the same
        calls, the results thrown away."""
        self._compute(-1, 0, min(self.n, WARM_STATES), "warm", None)

    def _compute(self, k, first, stop, slot, inputs_drawn):
        m = stop - first
        x = {}
        for name, src in self.sources.items():
            if isinstance(src, Constant):
                continue
            try:
                x[name] = src.draw(self.entropy, name, first, m, self._buf(slot, name))
            except Exception as e:
                raise ChunkFailure(k, first, stop, f"drawing {name} failed: {type(e).__name__}: {e}") from e
        x.setdefault("t", self.t)
        closed = None
        if self.hold is not None:
            closed = self._close(k, first, stop, x)
        stored = {name: a for name, a in x.items() if name not in self.regenerated and name in self.input_shapes}
        if inputs_drawn is not None and stored:
            inputs_drawn(dict(stored))
        status = np.zeros(m, dtype=np.int8)
        out = {}
        try:
            if self.params is None:
                qty.evaluate(self.model, self.quantities, x, out, status, buf=self._buf(slot, "outputs"))
            else:
                out = {name: np.empty((m,) + shape) for name, shape in self.output_shapes.items()}
                params = self._evaluate_groups(k, first, stop, x, out, status)
                stored.update({f: a for f, a in params.items() if f not in self.regenerated})
        except qty.EvalError as e:
            raise ChunkFailure(k, first, stop, f"{e.quantity}: {type(e.exc).__name__}: {e.exc} (sample "
                               f"numbers in the message count from sample {first} of the sweep)") from e.exc
        if closed is not None and closed.any():
            # a sample that does not close: its outputs NaN, its status says why
            for a in out.values():
                a[closed] = np.nan
            status[closed] = np.where(x["_closed"][3][closed, 0] == ST_INPUT, int(Status.NONFINITE_INPUT),
                                      int(Status.LOOP_NOT_CLOSED))
        stored.update(out)
        stored[STATUS] = status
        return stored

    def _close(self, k, first, stop, x):
        """Assemble the chunk's samples (model with loop closures): q and qd replaced by the closed
        state (the held coordinates kept), x["_closed"] the constrained dynamics there
        (``sim.closed.assemble_batch``); returns which samples did not close."""
        m = stop - first
        nv = self.model.nv
        q = np.array(x["q"], dtype=np.float64, order="C")
        qd = np.array(x["qd"], dtype=np.float64, order="C")
        tau = np.array(x["tau"], dtype=np.float64, order="C") if "tau" in x else np.zeros((m, nv))
        try:
            res = assemble_batch(self.model, q, qd, tau, x["t"], self.hold)
        except Exception as e:
            raise ChunkFailure(k, first, stop, f"assembling the loops failed: {type(e).__name__}: {e}") from e
        x["q"], x["qd"], x["_closed"] = q, qd, res
        return res[3][:, 0] != 0

    def _evaluate_groups(self, k, first, stop, x, out, status):
        """Tolerance study: each group of samples in the chunk on its own perturbed model."""
        rows, groups = param_rows(self.params, self.entropy, first, stop)
        for gi, a, b, value in groups:
            try:
                model = self.params.model(value)
            except ModelError as e:
                raise ChunkFailure(k, first, stop, f"the perturbed model of samples {first + a}..{first + b - 1} "
                                   f"(group {gi}) is invalid: {e}", list(range(first + a, first + b))) from e
            sub = {name: (v[a:b] if isinstance(v, np.ndarray) else v) for name, v in x.items()}
            qty.evaluate(model, self.quantities, sub, out, status, rows=slice(a, b))
        return rows
