"""Rollouts: many initial states, each with its own control sequence, integrated in the compiled
time loop of ``ej.simulate`` (the same loop, stages and actuation), in parallel over the batch,
as MuJoCo's ``rollout`` does for its models.

Sample b is the trajectory

    (q, qd, act)(0) = (q0_b, qd0_b, act0_b),   step n of size dt with ctrl[b, n] held over it,

recorded at t = k dt for k = 0, r, 2r, ... and the last step (r = ``record_every``), bit for bit
what ``ej.simulate(model, q0[b], qd0[b], T dt, dt, ctrl=ctrl[b], act0=act0[b])`` gives, whatever
the number of threads and the batch it runs in.
"""
import os

import numpy as np

from ..model import inputs
from ..model.model import Model
from ..sim.driver import _run_compiled
from ..sim.prepare import prepare
from ..sim.results import raise_or_flag
from ..sim.status import as_status


class Rollout:
    """The result of ``ej.rollout``, sample-major (B first, like the controls (B, T, nu)):

    ``t`` (R,) the recorded times; ``q`` (B, R, nq), ``qd`` (B, R, nv), ``act`` (B, R, na),
    ``actuator_force`` (B, R, nu) (MuJoCo's ``actuator_force`` at each recorded state with the
    controls of the step that starts there, the last step's at the end; None with
    ``record_forces=False`` or without actuation), ``kinetic``, ``potential`` (B, R); rows after
    a sample stopped are NaN.  ``status`` (B,) ``SimulationStatus`` codes (0: reached the end),
    ``steps`` (B,), ``stop_time`` (B,), ``message`` (B,) list of strings ("" where it did not
    stop).  A single sample (q0 (nq,), ctrl (T, nu)) has no B axis.  ``trajectory``: the same
    run as an ``ej.Trajectory`` (time-major, (R, B, ...))."""

    def __init__(self, traj):
        self.trajectory = traj
        self._batch = traj.batch
        batch = traj.batch is not None

        def major(x):
            return None if x is None else (np.moveaxis(x, 1, 0) if batch else x)
        self.t = traj.t
        self.q, self.qd = major(traj.q), major(traj.qd)
        self.act, self.actuator_force = major(traj.act), major(traj.actuator_force)
        self.kinetic, self.potential = major(traj.kinetic), major(traj.potential)
        self.status = np.asarray(traj.status) if batch else as_status(traj.status)
        self.steps, self.stop_time, self.message = traj.steps, traj.stop_time, traj.message
        self.info = traj.info

    @property
    def batch(self):
        """The number of samples, or None for one."""
        return self._batch

    def __repr__(self):
        bad = int(np.count_nonzero(np.atleast_1d(self.status)))
        return (f"<ej.Rollout {self.batch or 1} samples x {len(self.t)} recorded times, {self.info.get('method')}"
                f"{f', stopped: {bad}' if bad else ''}>")


def _batch_of(x, n, name):
    """Batch size of a state-like argument x with trailing size n: None (one), or B."""
    if x is None:
        return None
    a = np.asarray(x)
    return a.shape[0] if a.ndim == 2 else None


def rollout(model, q0, qd0, ctrl, act0=None, dt=None, method="rk4", record_every=1, errors="flag", progress=None,
            *, record_forces=True, segment_steps=None, max_energy=None, limits=False):
    """Integrate B initial states, each under its own control sequence; returns a ``Rollout``.

    ``ctrl`` (B, T, nu): sample b's control of step n, held over the step (as MuJoCo holds
    ``ctrl`` over ``mj_step``), T steps of ``dt``; or (T, nu), one sequence for every sample.
    ``q0`` (B, nq) or (nq,), ``qd0`` (B, nv) or (nv,), ``act0`` (B, na), (na,) or None (zero):
    a state without the B axis is shared by every sample.  A model without actuation takes
    ``ctrl`` with nu = 0 ((B, T, 0) or (T, 0)): its rollouts are ``ej.simulate``'s.

    ``dt``: the step (default: the MJCF's ``option timestep``, when the model has one);
    ``method``: a fixed-step method of ``ej.simulate`` ("rk4", "rk2", "euler", "symplectic":
    MuJoCo's ``RK4`` and ``Euler`` without implicit damping); ``record_every``: the recorded
    steps 0, k, 2k, ... and the last; ``record_forces``: record ``actuator_force`` (one more
    evaluation of the actuation per recorded state).  ``limits``: the joint-limit law of
    ``ej.simulate`` (off by default: MuJoCo's rollouts here are compared with limits disabled);
    joint damping and springs act as in ``ej.simulate``.

    ``errors="flag"`` (default): a sample that stops (a NaN control, a non-finite state, an
    energy blow-up, an actuation that fails) keeps what it recorded, NaN after, and its code in
    ``status``; the others run to the end.  ``errors="raise"``: a ``SimulationError`` for the
    first stop, and a NaN control is a ``ValueError`` before anything runs.  ``progress``: a tqdm
    bar (None: when the run is predicted to last more than a few seconds).

    The samples run in the compiled loop of ``ej.simulate`` on chunks of the batch in parallel
    (Numba's thread count), each bit for bit as alone."""
    if not isinstance(model, Model):
        raise ValueError(f"rollout needs an ej.Model, got {type(model).__name__}")
    if method == "dopri5":
        raise ValueError("rollout takes a fixed-step method ('rk4', 'rk2', 'euler', 'symplectic'), not 'dopri5'")
    act = getattr(model, "actuation", None)
    nu = 0 if act is None else int(act.nu)
    c = inputs.real_array(ctrl, "ctrl") if ctrl is not None else None
    if c is None or c.ndim not in (2, 3) or c.shape[-1] != nu:
        got = None if c is None else c.shape
        raise ValueError(f"ctrl must have shape (B, T, {nu}) or (T, {nu}) (T steps of {nu} controls), got {got}")
    if c.shape[-2] < 1:
        raise ValueError(f"ctrl has no steps (shape {c.shape})")
    T = c.shape[-2]
    Bc = c.shape[0] if c.ndim == 3 else None
    Bs = [b for b in (Bc, _batch_of(q0, model.nq, "q0"), _batch_of(qd0, model.nv, "qd0"),
                      _batch_of(act0, 0, "act0")) if b is not None]
    if len(set(Bs)) > 1:
        raise ValueError(f"the batch sizes of ctrl, q0, qd0 and act0 differ: {sorted(set(Bs))}")
    B = Bs[0] if Bs else None
    q0, qd0 = _spread(q0, B, "q0"), _spread(qd0, B, "qd0")
    if act0 is not None and act is not None:
        act0 = _spread(act0, B, "act0")
    if dt is None:
        ts = None if act is None else getattr(act, "opt_timestep", None)
        if ts is None or not float(np.asarray(ts).ravel()[0]) > 0:
            raise ValueError("dt is required (the model has no MJCF timestep)")
        dt = float(np.asarray(ts).ravel()[0])
    dt = float(dt)
    t_final = T * dt
    if int(round(t_final / dt)) != T:
        raise ValueError(f"dt = {dt!r}: T dt / dt does not round to T = {T}")
    if nu == 0:
        cc = None
    elif Bc is None:
        cc = c                                     # (T, nu): shared, one row per step
    else:
        cc = np.ascontiguousarray(np.swapaxes(c, 0, 1))     # (T, B, nu)
    inputs.check_errors_arg(errors)
    run = prepare(model, q0, qd0, t_final, dt, method, None, record_every, None, 1e-8, 1e-10, None, None, None,
                  None, None, max_energy, limits, cc, act0, errors, record_forces)
    run.redundant = "raise"
    traj = _run_compiled(run, progress, segment_steps)
    out = raise_or_flag(traj, run, errors)
    if isinstance(out, tuple):
        out = out[0]
    return Rollout(out)


def _spread(x, B, name):
    """x (n,) repeated to (B, n) when the batch has B samples; as given otherwise."""
    if x is None or B is None:
        return x
    a = inputs.real_array(x, name)
    if a.ndim == 1:
        return np.ascontiguousarray(np.broadcast_to(a, (B, a.shape[0])))
    return a


def rollout_dask(client, model, q0, qd0, ctrl, act0=None, dt=None, method="rk4", record_every=1, chunk=256,
                 record_forces=True, max_energy=None, limits=False):
    """``rollout`` of a batch split into chunks of ``chunk`` samples, one task each on a
    ``dask.distributed.Client``'s workers; returns the ``Rollout`` of the whole batch (its
    ``trajectory`` is None), each sample bit for bit as ``rollout`` computes it.  As the sweep's
    Dask runner does (``sweep.cluster``), every worker must run the same sources as this process
    (a ``RuntimeError`` otherwise: the compile cache is keyed by them), the kernels are compiled
    once here and their cache files installed on every worker before the chunks
    (``_jit.cache_files``); errors="flag"."""
    from .._jit import cache_files, install_cache_files
    act = getattr(model, "actuation", None)
    c = inputs.real_array(ctrl, "ctrl")
    if c.ndim != 3:
        raise ValueError(f"rollout_dask takes ctrl of shape (B, T, nu), got {c.shape}")
    B = c.shape[0]
    q0, qd0 = _spread(q0, B, "q0"), _spread(qd0, B, "qd0")
    if act0 is not None and act is not None:
        act0 = _spread(act0, B, "act0")
    kw = dict(dt=dt, method=method, record_every=record_every, errors="flag", progress=False,
              record_forces=record_forces, max_energy=max_energy, limits=limits)
    # compile here (one short sample), then hand the cache to the workers
    rollout(model, q0[:1], qd0[:1], c[:1, :1], None if act0 is None else act0[:1], **kw)
    mine = _sources_key()
    other = {w: k for w, k in client.run(_sources_key).items() if k != mine}
    if other:
        w, k = next(iter(other.items()))
        raise RuntimeError(f"the Dask worker {w} runs ejce_nb sources {k}, not this process's {mine} (a changed or "
                           "another installation): install the same version on every worker, or restart them")
    files = cache_files()
    if files:
        client.run(install_cache_files, files)
    mf = client.scatter(model, broadcast=True)
    futures = []
    for lo in range(0, B, int(chunk)):
        hi = min(B, lo + int(chunk))
        futures.append(client.submit(_chunk, mf, q0[lo:hi], qd0[lo:hi], c[lo:hi],
                                     None if act0 is None else act0[lo:hi], kw, pure=False))
    parts = client.gather(futures)
    return _joined(parts)


def _sources_key():
    """The key of the sources this process's kernels are compiled from (its cache's hash)."""
    from .. import _jit
    return _jit._source_hash() if _jit.CACHE_DIR is None else os.path.basename(_jit.CACHE_DIR)


def _chunk(model, q0, qd0, ctrl, act0, kw):
    r = rollout(model, q0, qd0, ctrl, act0, **kw)
    return {k: getattr(r, k) for k in ("t", "q", "qd", "act", "actuator_force", "kinetic", "potential", "status",
                                       "steps", "stop_time", "message", "info")}


def _joined(parts):
    out = Rollout.__new__(Rollout)
    out.trajectory = None
    first = parts[0]
    out._batch = sum(len(p["status"]) for p in parts)
    out.t, out.info = first["t"], first["info"]
    for k in ("q", "qd", "act", "actuator_force", "kinetic", "potential", "status", "steps", "stop_time"):
        out.__dict__[k] = None if first[k] is None else np.concatenate([np.asarray(p[k]) for p in parts])
    out.message = [m for p in parts for m in p["message"]]
    return out
