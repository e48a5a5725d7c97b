"""``SweepResult``: a sweep's store reopened, its arrays, the finished chunks, the recorded
failures, summaries, histograms, workspace clouds and plots, and each sample's model."""
import numpy as np

from ..errors import Status
from ..model.model import Model
from . import summary
from .arrays import SweepArray, _Fields
from .distributions import Tolerances
from .libm import digest as numerics
from .manifold import source_from_description
from .params import Params, param_rows
from .plan import STATUS, count
from .plot import plot
from .quantities import QUANTITIES
from .store import Target, done_chunks, failures, read_root


class SweepResult:
    """A sweep's store (``ej.sweep``, ``ej.open_sweep``).

    ``result[name]`` for every quantity, for the sampled inputs ``"q"``, ``"qd"``, ``"qdd"`` (when
    an inverse-dynamics quantity needs it), ``"tau"`` (when a forward-dynamics one does), ``"t"``
    (when sampled) and the model parameters of a tolerance study, and for ``"status"``: a
    ``SweepArray`` with a leading axis of length n (``shape``, ``dtype``, ``len()``; indexing
    reads only the chunks it touches, ``np.asarray`` loads it, missing chunks read as NaN (-1 in
    ``status``); ``read_chunk(k)``, ``iter_chunks()`` -> ``(first, stop, rows)``,
    ``to_dask()``); ``result["joint_terms"]`` has ``.J``, ``.sigma``, ``.bias``.  ``keys()``,
    ``arrays``.

    Attributes: ``n``, ``n_done``, ``chunk_size``, ``nchunks``, ``chunks_done``, ``quantities``,
    ``inputs``, ``path`` (the local directory, else the URL or the store's name), ``store`` (the
    zarr store), ``seed``, ``t``, ``model``, ``complete``, ``run_info`` (after ``ej.sweep``:
    ``computed`` states, ``seconds`` of the chunks, ``compile_seconds`` of the kernels' compile or
    cache load before them, apart from ``seconds``; ``chunks``, ``resumed_chunks``,
    ``flagged``).

    Methods: ``refresh()`` (re-read the finished chunks), ``missing()`` (sample ranges of
    unfinished chunks), ``failures()`` (recorded chunk failures), ``status_counts()`` ->
    ``{ej.Status: count}``, ``summary(names=None)`` -> ``{array: Stats}`` (``count``, ``min``,
    ``max``, ``mean``, ``std`` over the finite rows; ``.status`` the status counts; ``str()`` a
    table naming the flagged samples' codes), ``histogram(name, bins=50, range=None)`` ->
    ``(counts, edges)`` per entry, ``workspace(body=None, max_points=None)`` -> (k, 3) positions
    of a ``forward_kinematics:BODY`` body's origin, ``plot(path=None, bins=50,
    max_points=20000, names=None)`` -> the path of a figure of the histograms and workspace
    clouds (default ``<out>.report.png`` beside a local directory, required for other stores;
    needs matplotlib, imported only then), ``sample_model(i)``, ``to_dask(name)``.  Summaries,
    histograms and clouds leave NaN rows out."""

    def __init__(self, out):
        self._target = out if isinstance(out, Target) else Target(out, read_only=True)
        self.path = self._target.label
        self.store = self._target.store
        root = read_root(self._target)
        self.spec, self.fingerprint, self._numerics = root["spec"], root["fingerprint"], root["numerics"]
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
            self._zgroup = self._target.group("r")
        return self._zgroup

    def _draw(self, name, first, stop):
        """Rows first .. stop - 1 of an input the sweep did not store, drawn as the sweep drew them."""
        if self._sources is None:
            if self._numerics != numerics():
                raise ValueError(f"{self.path}: {name!r} was not stored (store_inputs=False) and this machine's "
                                 "math library draws it with other bits than the one that ran the sweep; "
                                 "read it there")
            self._sources = {k: source_from_description(k, d, self.model, self.n, self.t)
                             for k, d in self.spec["sampler"].items() if not self._arrays[k]["stored"]}
        entropy = tuple(self.seed)
        if name in self._sources:
            return self._sources[name].draw(entropy, name, first, stop - first, lambda tag, shape: np.empty(shape))
        return param_rows(self._param_sampler(), entropy, first, stop)[0][name]

    def _param_sampler(self):
        if self._params is None:
            t = self.spec["tolerances"]
            self._params = Params(Tolerances(t["mass"], t["com"], t["length"], t["offset"], t["angle"],
                                              bodies=t["bodies"], group=t["group"]), self.model)
        return self._params

    def refresh(self):
        """Re-read which chunks are finished (another process may be writing)."""
        self.chunks_done = frozenset(done_chunks(self._target, self.nchunks))
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
        f = failures(self._target)
        return [f[k] for k in sorted(f, key=int) if int(k) not in self.chunks_done]

    @property
    def model(self):
        if self._model is None:
            self._model = Model.from_dict(self.spec["model"], source=f"{self.path} (sweep model)")
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
        if sep and kind in QUANTITIES and QUANTITIES[kind].body and name not in self.quantities and body.isdigit():
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
            stats[name] = summary.stats(self[name])
        return summary.Summary(self, stats)

    def histogram(self, name, bins=50, range=None):
        """Histogram of each entry of an array over the finished chunks' finite rows: (counts, edges) of
        shapes trailing + (bins,) and trailing + (bins + 1,); ``range`` (lo, hi) for all entries,
        else each entry's own min..max."""
        name = self._canonical(name)
        arr = self[name]
        if not isinstance(arr, SweepArray):
            raise ValueError(f"{name!r} holds several arrays ({', '.join(arr.keys())}); name one, "
                             f"e.g. '{name}.J'")
        return summary.histogram(arr, count(bins, "bins"), range)

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
            stride = max(1, -(-self.n_done // count(max_points, "max_points")))
        parts, seen = [], 0
        for first, stop, a in self[name].iter_chunks():
            # every stride-th finished sample, counted across chunks
            off = (-seen) % stride
            parts.append(summary.finite_rows(a[off::stride, :3, 3]))
            seen += stop - first
        return np.concatenate(parts) if parts else np.zeros((0, 3))

    def plot(self, path=None, bins=50, max_points=20000, names=None):
        """Write a figure (PNG, PDF, ... by extension; default ``<out>.report.png`` beside a local
        store) of the histograms of the quantities (or ``names``) and, for each body pose, the
        workspace cloud; returns its path.  Needs matplotlib, imported here."""
        return plot(self, path, bins, max_points, names)
