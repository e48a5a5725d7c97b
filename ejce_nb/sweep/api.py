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
          scheduler=None, progress=True, store_inputs=True):
    """Evaluate ``quantities`` on ``n`` sampled states of ``model``, chunk by chunk, into the
    zarr store ``out`` (a directory, a URL zarr opens, or a zarr store object); returns a
    ``SweepResult``.

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
    bar (states/s, time left), started once the kernels are compiled.  ``store_inputs=False``:
    inputs drawn from distributions (not those given as arrays or functions) are not written, and
    reading them draws them again, the same bits.  A chunk that fails as a whole (a sampler
    raising, a wrong shape, an invalid perturbed model, a store error) raises ``ej.SweepError``
    naming its samples and the reason, after the chunks finished before it have been kept.
    ``result.run_info``: computed, seconds (the chunks), compile_seconds (the kernels' compile or
    cache load before them), chunks, resumed_chunks, flagged.  Needs zarr and, for the bar, tqdm
    (``pip install "ejce_nb[sweep]"``)."""
    if scheduler is not None and not (hasattr(scheduler, "submit") and hasattr(scheduler, "scatter")):
        raise ValueError(f"scheduler must be None or a dask.distributed.Client, got {type(scheduler).__name__}")
    zarr_module()
    if progress:
        _tqdm()
    plan = Plan(model, n, quantities, sampler, chunk_size, seed, t, store_inputs)
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
    """Reopen a finished or partial sweep (``SweepResult``) from its directory, URL or store."""
    return SweepResult(out)
