"""Monte Carlo sweeps: sample millions of states (and, for tolerance studies, model parameters),
evaluate public quantities on them chunk by chunk, and store inputs and outputs in a zarr store,
locally on threads or on a Dask cluster, resumable after any interruption and bitwise
reproducible.

    result = ej.sweep(model, 1_000_000, ["rnea", "aba"], "arm.sweep")
    tau = np.asarray(result["rnea"])            # (n, nv); result["q"], result["qd"], ...

The modules, in the order a sweep uses them:

* ``streams``, ``rng``: each sample's own words of numpy's Philox streams, computed in compiled
  code beside the kernels (uniforms, and normals by a ziggurat whose rejections continue off the
  main stream), so that a sample's inputs do not depend on the chunk, thread or worker that draws
  them; ``StreamRNG`` is what a sampler function draws from.
* ``distributions``, ``sources``, ``manifold``, ``params``: ``Uniform``, ``Normal``, ``Sampler``,
  ``Tolerances`` and their binding to a model (the configuration manifold's samplers, the
  perturbed models of a tolerance study).
* ``fingerprint``: the description of the arguments and its SHA-256 (a rerun with the same
  arguments resumes; others are refused, naming what differs); ``libm``: the digest of this
  machine's math library on a fixed draw.
* ``quantities``: the registry of what a sweep evaluates, each by its batch call with
  ``errors="flag"`` (per-sample status), sharing work between quantities of the same states.
* ``plan``: the checked arguments and the computation of any chunk.
* ``store``: the zarr store, written and read through zarr's public API only: a directory, a
  URL zarr opens (fsspec) or any zarr store object; each chunk's marker after its arrays.
* ``local``, ``cluster``: the runners, local threads (each chunk written as soon as it is computed) or one
  Dask task per chunk, each worker writing its chunks itself; ``api``: ``sweep``, ``open_sweep``.
* ``result``, ``arrays``, ``summary``, ``plot``: reading the store (matplotlib only for a plot).

zarr and tqdm are the ``sweep`` extra (``pip install ".[sweep]"``), imported only when a
sweep runs or is opened.  Memory stays bounded by a few chunks whatever ``n`` is.
"""
from .api import open_sweep, sweep
from .arrays import SweepArray
from .distributions import Normal, Sampler, Tolerances, Uniform
from .plan import SweepError
from .quantities import QUANTITIES
from .result import SweepResult
from .rng import StreamRNG
from .summary import Stats, Summary

__all__ = ["sweep", "open_sweep", "SweepResult", "SweepArray", "SweepError", "Sampler", "Uniform", "Normal",
           "Tolerances", "StreamRNG", "Stats", "Summary", "QUANTITIES"]
