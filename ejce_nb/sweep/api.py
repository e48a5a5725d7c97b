"""``ej.sweep`` and ``ej.open_sweep``: check the arguments, prepare the store, compile the
kernels (timed apart), then run the pending chunks locally or on a Dask cluster under a progress
bar."""
import threading
import time

from . import cluster, local
from .plan import ChunkFailure, Plan, SweepError
from .result import SweepResult
from .store import INSTALL, Lock, Target, check_directory, prepare, record_failure, zarr_module


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

    def __init__(self, enabled, total, initial):
        self.bar = None
        self.lock = threading.Lock()
        if enabled:
            self.bar = _tqdm()(total=total, initial=initial, unit=" states", unit_scale=True, desc="sweep",
                               dynamic_ncols=True, smoothing=0.1)

    def update(self, m):
        if self.bar is not None:
            with self.lock:
                self.bar.update(m)

    def close(self):
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def sweep(model, n, quantities, out, sampler=None, chunk_size=100_000, seed=0, t=0.0,
          scheduler=None, progress=True, store_inputs=True, independent=None):
    """Evaluate ``quantities`` on ``n`` sampled states of ``model``, chunk by chunk, into the
    zarr store ``out``; returns a ``SweepResult``.

    ``out`` is where the zarr (format 3) group goes: a local directory (a path), a URL zarr opens
    through fsspec (``file://...``, ``s3://...``, ...) or a zarr store object
    (``zarr.storage.LocalStore``, ``ZipStore``, ``MemoryStore``, ``FsspecStore``, ...); every
    chunk is written with zarr's own API.  A zip file is written in full only when its owner
    closes the ``ZipStore``, so a sweep killed before that cannot be resumed from it; a local
    directory is locked while a sweep writes it.

    quantities: public function names (a list, or one comma-separated string), stored per
    sample as ``"rnea"``, ``"aba"``, ``"nonlinear_effects"`` (nv,), ``"mass_matrix"`` (nv, nv),
    ``"kinetic_energy"`` (), ``"joint_terms"`` (the arrays ``joint_terms.J`` (6, nv),
    ``joint_terms.sigma``, ``joint_terms.bias`` (N+1, 6)), ``"forward_kinematics:BODY"`` (the
    body's world pose (4, 4), ``[[R, p], [0, 0, 0, 1]]``) and ``"body_jacobian:BODY"`` (6, nv),
    ``BODY`` a body name or index.
    The inputs are q and qd, with qdd for ``rnea`` and tau for ``aba``; by default q is uniform
    (``ej.Uniform``: joint limits, angles in [-pi, pi), unit quaternions uniform on SO(3), Euler
    angles away from gimbal lock) and qd, qdd, tau standard normal; ``sampler`` (an ``ej.Sampler``,
    or for q alone a distribution, an array or a function ``f(rng, size)``; or an
    ``ej.Tolerances``, or a dict of ``ej.Sampler``'s arguments) changes that.

    A model with loop closures is swept on closed states: each sample's independent coordinates
    (``independent``: velocity indices or names, as ``fixed=`` in ``ej.assemble``; default the
    first ones in tree order that determine the others, ``assembly.independent_variables``, e.g.
    a four-bar's crank) keep their drawn values, the others are found from their drawn values by
    Levenberg-Marquardt so that every loop closes (to 1e-12; steps of at most 0.5 per coordinate,
    fixed kicks where it stalls, ``sim.closed.closed_assemble``), qd is projected onto the velocity
    constraints (the kinetic-energy-nearest), and the stored q and qd are the closed state's.
    Its quantities are ``"constrained_dynamics"`` (the arrays ``.qdd``, ``.tau_constraint`` (nv,)
    and ``.wrench`` (n_loops, 6) of ``ej.constrained_dynamics`` with ``redundant="lstsq"``, at
    the sampled tau), ``"loop_residual"`` (``.position``, ``.velocity`` ()) and the kinematic
    ones; ``rnea``, ``aba``, ``mass_matrix`` and ``nonlinear_effects`` (the open tree's) are
    refused.  A sample that does not close gets ``ej.Status.LOOP_NOT_CLOSED`` and NaN outputs (a
    configuration the loops cannot reach, or rarely one the iteration does not find from the drawn
    values: 1 of 20,000 uniform samples of a spatial four-bar, none of a planar one).

    Every quantity is computed with ``errors="flag"``: a sample the engine cannot compute (NaN in
    its inputs, a gimbal lock, ...) gets NaN rows in the quantities it breaks and the sweep goes
    on; ``result["status"]`` (n,) int8 is each sample's ``ej.Status`` code (the first non-zero
    over the quantities, in their order), -1 where its chunk is not finished.

    The same ``seed`` gives bitwise the same inputs and outputs whatever ``chunk_size``, thread
    count or number of Dask workers.  Running again with the same arguments on the same ``out``
    resumes it (skips the finished chunks), also after the process was killed; different
    arguments on the same ``out`` are a ``ValueError`` naming what differs.  Stores of the
    previous format (version 3) are read; rerunning one is refused, naming the version.
    ``scheduler``: None (this process, the kernels on all Numba threads) or a
    ``dask.distributed.Client``: the kernels are compiled once, on the client, and their cache
    files sent to the workers, which load them; each worker computes its chunks and writes them
    into ``out`` itself, which must then be a store every worker can write (a directory they all
    see, or a URL; a ``MemoryStore`` or ``ZipStore`` is refused).  ``progress``: a tqdm bar
    (states/s, time left), started once the kernels are compiled.  ``store_inputs=False``:
    inputs drawn from ``ej.Uniform``, ``ej.Normal`` and ``ej.Tolerances`` are not written, and
    reading them draws them again, the same bits (refused on a machine whose math library draws
    other bits); inputs given as arrays or functions are stored all the same.

    Errors: invalid arguments (unknown quantities or bodies, ``n <= 0``, a sampler of the wrong
    shape, an input no quantity uses, zarr missing, ...) are a ``ValueError``.  A chunk that fails
    as a whole (a sampler function raising or returning the wrong shape, an invalid perturbed
    model, a store error) raises ``ej.SweepError`` naming its samples and the reason, after the
    chunks finished before it have been kept (a rerun resumes).
    ``result.run_info``: computed, seconds (the chunks), compile_seconds (the kernels' compile or
    cache load before them), chunks, resumed_chunks, flagged.  Needs zarr and, for the bar, tqdm
    (``pip install ".[sweep]"``, with fsspec for URLs)."""
    if scheduler is not None and not (hasattr(scheduler, "submit") and hasattr(scheduler, "scatter")):
        raise ValueError(f"scheduler must be None or a dask.distributed.Client, got {type(scheduler).__name__}")
    zarr_module()
    if progress:
        _tqdm()
    plan = Plan(model, n, quantities, sampler, chunk_size, seed, t, store_inputs, independent)
    target = Target(out)
    session = None if scheduler is None else cluster.Session(plan, target, scheduler)
    try:
        check_directory(target, plan)
        with Lock(target.local):
            done = prepare(target, plan)
            pending = [k for k in range(plan.nchunks) if k not in done]
            initial = sum(plan.rows(k)[1] - plan.rows(k)[0] for k in done)
            t0 = time.perf_counter()
            if pending:
                _warm(plan) if session is None else session.warm()
            compile_seconds = time.perf_counter() - t0 if pending else 0.0
            bar = _Progress(bool(progress) and bool(pending), plan.n, initial)
            t0 = time.perf_counter()
            try:
                flagged = local.run(plan, target, pending, bar) if session is None else session.run(pending, bar)
            except ChunkFailure as fail:
                bar.close()
                result = SweepResult(target)
                record_failure(target, fail, result.chunks_done, time.strftime("%Y-%m-%dT%H:%M:%S"))
                raise SweepError(
                    f"sweep {target.label}: {fail}; {len(result.chunks_done)} of {plan.nchunks} chunks are "
                    "finished and kept (rerun with the same arguments to resume)",
                    chunk=fail.chunk, samples=range(fail.first, fail.stop), sample_indices=fail.sample_indices,
                    reason=fail.reason, result=result) from (fail.__cause__ or fail)
            finally:
                bar.close()
            seconds = time.perf_counter() - t0
    finally:
        if session is not None:
            session.close()
    result = SweepResult(target)
    result.run_info = {"computed": plan.n - initial, "seconds": seconds, "compile_seconds": compile_seconds,
                       "chunks": len(pending), "resumed_chunks": len(done), "flagged": flagged}
    return result


def _warm(plan):
    """Compile (or load) the kernels; a failure here is reported by its chunk."""
    try:
        plan.warm()
    except Exception:            # noqa: BLE001
        pass


def open_sweep(out):
    """Reopen a finished or partial sweep (``SweepResult``) from its directory, URL or store
    (``out`` as for ``sweep``), or the path of a ``.zip`` file of one."""
    return SweepResult(out)
