"""Time integration of the forward dynamics: q' = N(q) u, u' = aba(q, u, tau, t).

Explicit Runge-Kutta steps on the coordinates and velocities; unit quaternions are integrated
through their kinematic map q' = 1/2 q (x) (0, u) (``ejce.coordinate_rates``) and renormalised
after every stage.  The whole time loop runs in compiled code for a torque held constant or
given per step; a batch of initial states (B, nq) integrates B trajectories in parallel, each
alone (a batch equals its trajectories run one by one, bitwise).  A Python torque law
``tau(t, q, qd)`` is evaluated at every stage from Python.
"""
import numpy as np
from numba import prange

from . import engine, inputs
from ._jit import jit, pjit
from .aba import aba_state
from .ejce import coordinate_rates, normalize_quaternions
from .energy import energy_state
from .errors import SingularJointError
from .layout import model_view, record_view, scratch_view
from .rnea import _NO_FORCE


class Trajectory:
    """Result of ``simulate``: t (T,), q (T, [B,] nq), qd (T, [B,] nv), energy (T, [B])."""

    def __init__(self, t, q, qd, energy):
        self.t, self.q, self.qd, self.energy = t, q, qd, energy

    def __repr__(self):
        return f"<ej.Trajectory {len(self.t)} times, q{self.q.shape}>"


class SimulationError(SingularJointError):
    """The dynamics failed part-way; ``partial`` holds the trajectory up to the last good step."""

    def __init__(self, message, partial):
        super().__init__(message)
        self.partial = partial


_TABLEAUX = {
    "euler": ([[0.0]], [1.0], [0.0]),
    "rk2": ([[0.0, 0.0], [0.5, 0.0]], [0.0, 1.0], [0.0, 0.5]),
    "rk4": ([[0.0, 0.0, 0.0, 0.0], [0.5, 0.0, 0.0, 0.0], [0.0, 0.5, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]],
            [1 / 6, 1 / 3, 1 / 3, 1 / 6], [0.0, 0.5, 0.5, 1.0]),
}


@jit
def _energy(m, r, s, q, v, t, out5):
    energy_state(m, r, s, q, v, t, 1, False, out5)
    return out5[0] + out5[1]


@jit
def trajectory(m, r, s, q, v, TAU, per_step, dt, nsteps, A, bw, cw, KQ, KV, out5, Q, V, E, b):
    """Integrate one trajectory from (q, v) (overwritten: the state at the end) and record every
    step into Q[:, b], V[:, b], E[:, b]; returns (steps done, status, joint)."""
    nq = q.shape[0]
    nv = v.shape[0]
    ns = bw.shape[0]
    qs = s.qx
    vs = s.vx
    for k in range(nq):
        Q[0, b, k] = q[k]
    for k in range(nv):
        V[0, b, k] = v[k]
    E[0, b] = _energy(m, r, s, q, v, 0.0, out5)
    for n in range(nsteps):
        t = n * dt
        tau = TAU[n] if per_step else TAU[0]
        for st in range(ns):
            for k in range(nq):
                x = q[k]
                for j in range(st):
                    x += dt * A[st, j] * KQ[j, k]
                qs[k] = x
            for k in range(nv):
                x = v[k]
                for j in range(st):
                    x += dt * A[st, j] * KV[j, k]
                vs[k] = x
            if st > 0:
                normalize_quaternions(m, qs)
            coordinate_rates(m, qs, vs, KQ[st])
            code, joint = aba_state(m, r, s, qs, vs, tau, t + cw[st] * dt, _NO_FORCE, 0, False, KV[st])
            if code != 0:
                return n, code, joint
        for k in range(nq):
            x = 0.0
            for st in range(ns):
                x += bw[st] * KQ[st, k]
            q[k] += dt * x
        for k in range(nv):
            x = 0.0
            for st in range(ns):
                x += bw[st] * KV[st, k]
            v[k] += dt * x
        normalize_quaternions(m, q)
        for k in range(nq):
            Q[n + 1, b, k] = q[k]
        for k in range(nv):
            V[n + 1, b, k] = v[k]
        E[n + 1, b] = _energy(m, r, s, q, v, (n + 1) * dt, out5)
    return nsteps, 0, -1


@pjit
def simulate_many(mb, R, S, Q0, V0, TAU, per_step, dt, nsteps, A, bw, cw, Q, V, E, result):
    """Every trajectory of the batch; result[b] = (steps done, status, joint)."""
    B = Q0.shape[0]
    nchunk = S.shape[0]
    for c in prange(nchunk):
        m = model_view(mb)
        r = record_view(mb, R[c], 0)
        s = scratch_view(mb, S[c], 0)
        q = s.qt
        v = s.vt
        for b in range(c * B // nchunk, (c + 1) * B // nchunk):
            for k in range(q.shape[0]):
                q[k] = Q0[b, k]
            for k in range(v.shape[0]):
                v[k] = V0[b, k]
            tau = TAU[:, b] if TAU.shape[1] > 1 else TAU[:, 0]
            done, code, joint = trajectory(m, r, s, q, v, tau, per_step, dt, nsteps, A, bw, cw, s.KQ, s.KV, s.e5,
                                           Q, V, E, b)
            result[b, 0] = done
            result[b, 1] = code
            result[b, 2] = joint


def _torques(model, tau, B, nsteps):
    """tau as (1 or nsteps, max(B, 1), nv) and whether it is per step."""
    nv = model.nv
    n = 1 if B is None else B
    if tau is None:
        return np.zeros((1, 1, nv)), False
    try:
        a = np.array(tau, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"tau must be an array of numbers or a callable tau(t, q, qd), got "
                         f"{type(tau).__name__}") from None
    if not np.all(np.isfinite(a)):
        raise ValueError("tau contains NaN or inf")
    if a.shape == (nv,):
        return a.reshape(1, 1, nv), False
    if B is not None and a.shape == (B, nv):
        return np.ascontiguousarray(a.reshape(1, B, nv)), False
    if B is None and a.shape == (nsteps, nv):
        return np.ascontiguousarray(a.reshape(nsteps, 1, nv)), True
    if a.shape == (nsteps, n, nv):
        return np.ascontiguousarray(a), True
    per = f"({nsteps}, {nv})" if B is None else f"({nsteps}, {B}, {nv})"
    const = f"({nv},)" + ("" if B is None else f" or ({B}, {nv})")
    raise ValueError(f"tau must have shape {const} (held constant) or {per} (one row per step), "
                     f"got {a.shape}")


def simulate(model, q0, qd0, t_final, dt, method="rk4", tau=None, f_ext=None):
    """Integrate the forward dynamics from (q0, qd0) over [0, t_final] with step dt.

    tau: None (zero), an array (nv,) or (B, nv) held constant, an array with one row per step
    ((nsteps, nv), or (nsteps, B, nv) for a batch), or a callable tau(t, q, qd) evaluated at every
    stage.  Returns ``Trajectory`` with round(t_final / dt) + 1 times from 0.  On a singular
    configuration raises ``SimulationError`` whose ``partial`` is the trajectory so far."""
    if method not in _TABLEAUX:
        raise ValueError(f"method must be one of {sorted(_TABLEAUX)}, got {method!r}")
    try:
        dt = float(dt)
        t_final = float(t_final)
    except (TypeError, ValueError):
        raise ValueError("t_final and dt must be numbers") from None
    if not (np.isfinite(dt) and dt > 0):
        raise ValueError(f"dt must be a positive number, got {dt}")
    if not (np.isfinite(t_final) and t_final >= 0):
        raise ValueError(f"t_final must be a non-negative number, got {t_final}")
    nsteps = int(round(t_final / dt))
    q, B = inputs.state_array(q0, model.nq, "q0")
    v, _ = inputs.state_array(qd0, model.nv, "qd0", B)
    n = 1 if B is None else B
    q2 = q.reshape(n, model.nq).copy()
    v2 = v.reshape(n, model.nv).copy()
    for name, x in (("q0", q2), ("qd0", v2)):
        if not np.all(np.isfinite(x)):
            raise ValueError(f"{name} contains NaN or inf")
    for j, sl in model.quaternion_blocks():
        nrm = np.linalg.norm(q2[:, sl], axis=1)
        if np.any(np.abs(nrm - 1.0) > inputs.QUAT_TOL):
            raise ValueError(f"q0[{sl.start}:{sl.stop}], the quaternion of joint {model.joint_names[j]!r}, "
                             f"has norm {nrm[np.argmax(np.abs(nrm - 1.0))]:.6g}; a unit quaternion is required")
        q2[:, sl] /= nrm[:, None]
    if callable(tau) or f_ext is not None or model.has_mimic:
        return _simulate_python(model, q2, v2, B, nsteps, dt, method, tau, f_ext)
    TAU, per_step = _torques(model, tau, B, nsteps)
    A, bw, cw = (np.array(x, dtype=np.float64) for x in _TABLEAUX[method])
    ts = np.arange(nsteps + 1) * dt
    Q = np.empty((nsteps + 1, n, model.nq))
    V = np.empty((nsteps + 1, n, model.nv))
    E = np.empty((nsteps + 1, n))
    result = np.zeros((n, 3), dtype=np.int64)
    nchunk = engine.n_chunks(n)
    R = np.zeros((nchunk, model.record_size))
    S = np.zeros((nchunk, model.scratch_size))
    simulate_many(model._mb, R, S, q2, v2, TAU, per_step, dt, nsteps, A, bw, cw, Q, V, E, result)
    sq = (lambda x: x[:, 0]) if B is None else (lambda x: x)
    failed = np.nonzero(result[:, 1] != 0)[0]
    if len(failed):
        b = int(failed[np.argmin(result[failed, 0])])
        k = int(result[b, 0])
        part = Trajectory(ts[:k + 1], sq(Q[:k + 1]), sq(V[:k + 1]), sq(E[:k + 1]))
        st = np.array([[result[b, 1], result[b, 2]]])
        try:
            inputs.raise_status(model, st, "aba", ["q"], [Q[k, b][None]], np.array([k * dt]), None)
        except ValueError as e:
            where = "" if B is None else f" (trajectory {b})"
            raise SimulationError(f"simulation stopped at t = {k * dt:.6g} (step {k}){where}: {e}", part) from e
    return Trajectory(ts, sq(Q), sq(V), sq(E))


def _simulate_python(model, q, v, B, nsteps, dt, method, tau, f_ext):
    """The time loop in Python, for torque laws written in Python (and external wrenches)."""
    from .aba import aba
    from .energy import kinetic_energy, potential_energy
    km = model.kernel_model()
    if callable(tau):
        tau_fn = tau
    else:
        TAU, per_step = _torques(model, tau, B, nsteps)

        def tau_fn(t, q, v, _T=TAU, _p=per_step):
            row = _T[int(round(t / dt))] if _p else _T[0]
            return row[0] if B is None else (row if row.shape[0] == q.shape[0] else np.repeat(row, q.shape[0], 0))
    A, bw, c = _TABLEAUX[method]
    one = (lambda x: x[0]) if B is None else (lambda x: x)
    q = one(q)
    v = one(v)
    ts = np.arange(nsteps + 1) * dt
    shape_b = () if B is None else (B,)
    Q = np.empty((nsteps + 1,) + shape_b + (model.nq,))
    V = np.empty((nsteps + 1,) + shape_b + (model.nv,))
    E = np.empty((nsteps + 1,) + shape_b)

    def energy(t, q, v):
        return kinetic_energy(model, q, v, t) + potential_energy(model, q, t)

    def qdot(q, v):
        q2, v2 = np.atleast_2d(q), np.atleast_2d(v)
        if model.has_mimic:
            mim = inputs.Mimic(model)
            out = np.empty((q2.shape[0], km.nq))
            rates(km._mb, mim.q(q2), mim.v(v2), out)
            out = out[:, mim.own_q]
        else:
            out = np.empty(q2.shape)
            rates(km._mb, np.ascontiguousarray(q2), np.ascontiguousarray(v2), out)
        return out.reshape(np.shape(q))

    Q[0], V[0], E[0] = q, v, energy(0.0, q, v)
    for n in range(nsteps):
        t = ts[n]
        try:
            kq, kv = [], []
            for s in range(len(bw)):
                qs = q.copy()
                vs = v.copy()
                for r, a in enumerate(A[s][:s]):
                    if a != 0.0:
                        qs += dt * a * kq[r]
                        vs += dt * a * kv[r]
                if s:
                    _normalize(model, qs)
                kq.append(qdot(qs, vs))
                kv.append(aba(model, qs, vs, tau_fn(t + c[s] * dt, qs, vs), t + c[s] * dt, f_ext))
            q = q + dt * sum(w * k for w, k in zip(bw, kq))
            v = v + dt * sum(w * k for w, k in zip(bw, kv))
            _normalize(model, q)
            Q[n + 1], V[n + 1], E[n + 1] = q, v, energy(ts[n + 1], q, v)
        except SingularJointError as e:
            part = Trajectory(ts[:n + 1], Q[:n + 1], V[:n + 1], E[:n + 1])
            raise SimulationError(f"simulation stopped at t = {t:.6g} (step {n}): {e}", part) from e
    return Trajectory(ts, Q, V, E)


def _normalize(model, q):
    for _, sl in model.quaternion_blocks():
        q[..., sl] /= np.linalg.norm(q[..., sl], axis=-1, keepdims=True)


@jit
def rates(mb, Q, V, out):
    m = model_view(mb)
    for b in range(Q.shape[0]):
        coordinate_rates(m, Q[b], V[b], out[b])
