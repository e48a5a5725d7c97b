"""Time integration of the forward dynamics: q' = N(q) u, u' = aba(q, u, tau, t).

Explicit Runge-Kutta steps on the coordinates and velocities; unit quaternions are integrated
through their kinematic map q' = 1/2 q (x) (0, u) and renormalised after every step.  A batch of
initial states (B, nq) integrates B trajectories together, each stage one parallel ``aba`` call.
"""
import numpy as np

from . import _inputs
from .errors import SingularJointError


def qdot(model, q, v):
    """Coordinate rates q' = N(q) v (v are the joint velocities; quaternions take the angular
    velocity in C axes).  Shapes (nq,)/(nv,) or (B, nq)/(B, nv)."""
    q = np.asarray(q, dtype=float)
    v = np.asarray(v, dtype=float)
    out = np.empty(q.shape)
    plain = np.ones(model.nq, dtype=bool)
    for j, sl in model.quaternion_blocks():
        plain[sl] = False
        u = v[..., model.v_start[j] + model.nv_joint[j] - 3: model.v_start[j] + model.nv_joint[j]]
        w, x, y, z = (q[..., sl.start + k] for k in range(4))
        ux, uy, uz = u[..., 0], u[..., 1], u[..., 2]
        out[..., sl.start] = -0.5 * (x * ux + y * uy + z * uz)
        out[..., sl.start + 1] = 0.5 * (w * ux - z * uy + y * uz)
        out[..., sl.start + 2] = 0.5 * (z * ux + w * uy - x * uz)
        out[..., sl.start + 3] = 0.5 * (-y * ux + x * uy + w * uz)
    vmask = np.ones(model.nv, dtype=bool)
    for j, _ in model.quaternion_blocks():
        e = model.v_start[j] + model.nv_joint[j]
        vmask[e - 3:e] = False
    out[..., plain] = v[..., vmask]
    return out


def normalize_quaternions(model, q):
    """Project every quaternion block of q (in place) back to unit norm."""
    for _, sl in model.quaternion_blocks():
        q[..., sl] /= np.linalg.norm(q[..., sl], axis=-1, keepdims=True)
    return q


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
    "euler": ([[]], [1.0], [0.0]),
    "rk2": ([[], [0.5]], [0.0, 1.0], [0.0, 0.5]),
    "rk4": ([[], [0.5], [0.0, 0.5], [0.0, 0.0, 1.0]], [1 / 6, 1 / 3, 1 / 3, 1 / 6], [0.0, 0.5, 0.5, 1.0]),
}


def simulate(model, q0, qd0, t_final, dt, method="rk4", tau=None, f_ext=None):
    """Integrate the forward dynamics from (q0, qd0) over [0, t_final] with step dt.

    tau: None (zero), an array (nv,) or (B, nv) held constant, or a callable tau(t, q, qd).
    Returns ``Trajectory`` with round(t_final / dt) + 1 times from 0.  On a singular
    configuration raises ``SimulationError`` whose ``partial`` is the trajectory so far."""
    from .aba import aba
    from .energy import kinetic_energy, potential_energy

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
    q, B = _inputs.state_array(q0, model.nq, "q0")
    _inputs.check_quaternions(model, q, "q0")
    v, _ = _inputs.state_array(qd0, model.nv, "qd0", B)
    q = normalize_quaternions(model, q.copy())
    v = v.copy()
    if callable(tau):
        tau_fn = tau
    else:
        tau_c = np.zeros(model.nv) if tau is None else _inputs.state_array(tau, model.nv, "tau", B if np.ndim(tau) == 2 else None)[0]
        tau_fn = lambda t, q, v: tau_c  # noqa: E731

    A, bw, c = _TABLEAUX[method]
    shape_b = () if B is None else (B,)
    ts = np.arange(nsteps + 1) * dt
    Q = np.empty((nsteps + 1,) + shape_b + (model.nq,))
    V = np.empty((nsteps + 1,) + shape_b + (model.nv,))
    E = np.empty((nsteps + 1,) + shape_b)

    def energy(t, q, v):
        return kinetic_energy(model, q, v, t) + potential_energy(model, q, t)

    def accel(t, q, v):
        return aba(model, q, v, tau_fn(t, q, v), t, f_ext)

    Q[0], V[0], E[0] = q, v, energy(0.0, q, v)
    for n in range(nsteps):
        t = ts[n]
        try:
            kq, kv = [], []
            for s in range(len(bw)):
                qs = q.copy()
                vs = v.copy()
                for r, a in enumerate(A[s]):
                    if a != 0.0:
                        qs += dt * a * kq[r]
                        vs += dt * a * kv[r]
                if s:
                    normalize_quaternions(model, qs)
                kq.append(qdot(model, qs, vs))
                kv.append(accel(t + c[s] * dt, qs, vs))
            q = q + dt * sum(w * k for w, k in zip(bw, kq))
            v = v + dt * sum(w * k for w, k in zip(bw, kv))
            normalize_quaternions(model, q)
            Q[n + 1], V[n + 1], E[n + 1] = q, v, energy(ts[n + 1], q, v)
        except SingularJointError as e:
            part = Trajectory(ts[:n + 1], Q[:n + 1], V[:n + 1], E[:n + 1])
            raise SimulationError(f"simulation stopped at t = {t:.6g} (step {n}): {e}", part) from e
    return Trajectory(ts, Q, V, E)
