"""Simulation of models with loop closures: the constrained forward dynamics
(``ej.constrained_dynamics``) integrated by the methods of ``ej.simulate``, with the state
projected back onto the loop constraints after every step, so that drift does not accumulate:

    q <- assemble(q)                       (minimum-norm Gauss-Newton onto the position constraints)
    v <- v - M^-1 Jc^T (Jc M^-1 Jc^T)^+ (Jc v + s)   (the kinetic-energy-nearest velocity on them)

Each stage solves the acceleration-level constraint exactly (Jc qdd + bc = 0).  The trajectory
reports the constraint residuals at every recorded time: ``position_residual`` (the largest pose
error of a loop, |e| of ``ej.assemble``) and ``velocity_residual`` (max |Jc v + s|).  The time
loop runs in Python; each stage is one call of the compiled constrained dynamics of one state
(``closure_kernel``), which also gives the residuals that decide whether a state is projected
and the velocity projection; ``assemble``, where the position residual exceeds the tolerance,
runs in Python.  A batch runs its
trajectories one after the other, each exactly as alone.
"""
import time

import numpy as np

from ..algorithms.closures import retract
from ..algorithms.constrained import constrained_qdd, loop_terms
from ..algorithms.assembly import assemble, project_velocity
from ..algorithms.api import kinetic_energy, potential_energy
from .tableaux import DP_E as _DP_E, METHODS, _DP_A, _DP_B, _DP_C
from .trajectory import Trajectory

_TABLEAUX = {
    "euler": (np.zeros((1, 1)), np.array([1.0]), np.array([0.0])),
    "rk2": (np.array([[0.0, 0.0], [0.5, 0.0]]), np.array([0.0, 1.0]), np.array([0.0, 0.5])),
    "rk4": (np.array([[0, 0, 0, 0], [0.5, 0, 0, 0], [0, 0.5, 0, 0], [0, 0, 1.0, 0]], dtype=float),
            np.array([1 / 6, 1 / 3, 1 / 3, 1 / 6]), np.array([0.0, 0.5, 0.5, 1.0])),
}


def project(model, q, qd, t=0.0, tol=1e-12, qc0=None):
    """(q, qd) projected onto the position and velocity constraints of every loop; returns
    (q, qd, qc, terms), qc the closure coordinates, terms the ``LoopTerms`` at the returned state
    (None when the velocity was corrected)."""
    lt = loop_terms(model, q, qd, t, qc0)
    if lt.position_residual > tol:
        q = assemble(model, q, t=t, tol=tol)
        lt = loop_terms(model, q, qd, t, lt.qc)
    if lt.velocity_residual > tol:
        return q, project_velocity(model, q, qd, t, terms=lt), lt.qc, None
    return q, qd, lt.qc, lt


def _torque(tau, t, q, v, nv):
    if tau is None:
        return np.zeros(nv)
    if callable(tau):
        return np.asarray(tau(t, q, v), dtype=float).reshape(nv)
    return tau


def _passive(model, damping, stiffness, spring_ref):
    """(damping, stiffness, spring_ref) per velocity variable, the model's by default; springs
    need coordinates whose rate is their velocity (nq == nv)."""
    d = model.dof_damping if damping is None else np.broadcast_to(np.asarray(damping, dtype=float), (model.nv,))
    k = model.dof_stiffness if stiffness is None else np.broadcast_to(np.asarray(stiffness, dtype=float), (model.nv,))
    r = model.dof_springref if spring_ref is None else np.broadcast_to(np.asarray(spring_ref, dtype=float),
                                                                       (model.nv,))
    if np.any(k != 0.0) and model.nq != model.nv:
        raise ValueError("simulate: joint springs on a loop model with unit quaternions are not supported")
    return np.array(d), np.array(k), np.array(r)


def simulate_loops(model, q0, qd0, t_final, dt, method="rk4", tau=None, record_every=1, rtol=1e-8,
                   atol=1e-10, max_step=None, redundant="raise", tol=1e-12, damping=None, stiffness=None,
                   spring_ref=None, unsupported=None):
    """``ej.simulate`` of a model with loop closures (see the module's docstring).  ``tau``: None,
    a constant (nv,) or a Python callable tau(t, q, qd) evaluated at every stage; passive joint
    forces as ``ej.simulate``; joint limits are not applied."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    for k, x in (unsupported or {}).items():
        if x is not None:
            raise ValueError(f"simulate: {k} is not supported for a model with loop closures")
    DMP, STF, SREF = _passive(model, damping, stiffness, spring_ref)
    passive = bool(np.any(DMP != 0.0) or np.any(STF != 0.0))
    q0 = np.asarray(q0, dtype=float)
    qd0 = np.asarray(qd0, dtype=float)
    if q0.ndim == 2:
        taus = [tau if tau is None or callable(tau) or np.ndim(tau) == 1 else tau[b] for b in range(q0.shape[0])]
        parts = [simulate_loops(model, q0[b], qd0[b], t_final, dt, method, taus[b], record_every, rtol, atol, max_step,
                                redundant, tol, damping, stiffness, spring_ref) for b in range(q0.shape[0])]
        tr = Trajectory(parts[0].t, np.stack([p.q for p in parts], 1), np.stack([p.qd for p in parts], 1),
                        np.stack([p.kinetic for p in parts], 1), np.stack([p.potential for p in parts], 1),
                        status=np.zeros(len(parts), dtype=int), steps=np.array([p.steps for p in parts]),
                        stop_time=np.array([p.stop_time for p in parts]), message=[""] * len(parts),
                        info=parts[0].info)
        tr.position_residual = np.stack([p.position_residual for p in parts], 1)
        tr.velocity_residual = np.stack([p.velocity_residual for p in parts], 1)
        return tr
    if isinstance(tau, np.ndarray) and tau.ndim > 1 or not (tau is None or callable(tau) or np.ndim(tau) == 1):
        raise ValueError("simulate: a loop model takes tau as None, a constant (nv,) or a callable tau(t, q, qd)")
    if q0.shape != (model.nq,) or qd0.shape != (model.nv,):
        raise ValueError(f"q0 / qd0: expected shapes ({model.nq},) / ({model.nv},), got {q0.shape} / {qd0.shape}")
    if callable(tau) or tau is None:
        tau_c = tau
    else:
        tau_c = np.asarray(tau, dtype=float).reshape(model.nv)
    wall = time.perf_counter()
    nsteps = int(round(t_final / dt))
    rec = list(range(0, nsteps + 1, int(record_every)))
    if rec[-1] != nsteps:
        rec.append(nsteps)
    nfev = [0]

    qc = [None]
    # the accelerations of the projected state, for the step's first stage (same q, v, t)
    known = [None]

    def forces(t, q, v):
        f = _torque(tau_c, t, q, v, model.nv)
        if passive:
            f = f - DMP * v - (STF * (q - SREF) if model.nq == model.nv else 0.0)
        return f

    def accel(t, q, v):
        nfev[0] += 1
        k = known[0]
        known[0] = None
        if k is not None and k[0] is q and k[1] is v and k[2] == t:
            return k[3]
        return constrained_qdd(model, q, v, forces(t, q, v), t, redundant, qc[0])[0]

    def proj(q, v, t):
        # the compiled stage gives the state's residuals, its accelerations (the next step's first
        # stage where the state is kept) and the velocity projection; assemble where the pose is off
        f = forces(t, q, v)
        qdd, (pres, vres), dv = constrained_qdd(model, q, v, f, t, redundant, qc[0])
        if pres > tol and dv is not None:
            q = assemble(model, q, t=t, tol=tol)
            qdd, (pres, vres), dv = constrained_qdd(model, q, v, forces(t, q, v), t, redundant, qc[0])
        if pres <= tol and vres <= tol:
            known[0] = (q, v, t, qdd)
            return q, v
        if pres <= tol and dv is not None:
            return q, v + dv
        q, v, qc[0], _ = project(model, q, v, t, tol, qc[0])
        return q, v

    q, v = proj(q0, qd0, 0.0)
    Q, V, T = [q], [v], [0.0]
    t = 0.0
    k = 0
    rec_set = set(rec)
    h_try = dt
    nrej = 0
    while k < nsteps:
        t = k * dt
        if method == "symplectic":
            vn = v + dt * accel(t, q, v)
            qn = retract(model, q, dt * vn)
        elif method == "dopri5":
            qn, vn, h_try, nr = _dopri_interval(model, accel, proj, q, v, t, dt, h_try, rtol, atol, max_step)
            nrej += nr
        else:
            A, b, c = _TABLEAUX[method]
            Kq, Kv = [], []
            for j in range(len(b)):
                dq = sum((dt * A[j, l] * Kq[l] for l in range(j)), np.zeros(model.nv))
                dv = sum((dt * A[j, l] * Kv[l] for l in range(j)), np.zeros(model.nv))
                vj = v if j == 0 else v + dv
                Kq.append(vj)
                Kv.append(accel(t + c[j] * dt, q if j == 0 else retract(model, q, dq), vj))
            qn = retract(model, q, dt * sum(bj * kq for bj, kq in zip(b, Kq)))
            vn = v + dt * sum(bj * kv for bj, kv in zip(b, Kv))
        k += 1
        q, v = proj(qn, vn, k * dt)
        if k in rec_set:
            Q.append(q)
            V.append(v)
            T.append(k * dt)
    Q, V, T = np.array(Q), np.array(V), np.array(T)
    kin = np.array([kinetic_energy(model, x, y) for x, y in zip(Q, V)])
    pot = np.array([potential_energy(model, x) for x in Q])
    if np.any(STF != 0.0):
        pot = pot + 0.5 * np.sum(STF * (Q - SREF) ** 2, axis=1)
    info = dict(method=method, dt=dt, record_every=record_every, nfev=nfev[0], nrejected=nrej,
                wall=time.perf_counter() - wall, loops=[L.name for L in model.loops], projection_tol=tol)
    tr = Trajectory(T, Q, V, kin, pot, status=0, steps=nsteps, stop_time=float(T[-1]), message="", info=info)
    lts = [loop_terms(model, x, y, s) for x, y, s in zip(Q, V, T)]
    tr.position_residual = np.array([lt.position_residual for lt in lts])
    tr.velocity_residual = np.array([lt.velocity_residual for lt in lts])
    return tr


def _dopri_interval(model, accel, proj, q, v, t0, dt, h, rtol, atol, max_step):
    """Dormand-Prince 5(4) over [t0, t0 + dt] with step-size control, the state projected after
    every accepted step."""
    t_end = t0 + dt
    t = t0
    nrej = 0
    hmax = dt if max_step is None else min(dt, max_step)
    h = min(h, hmax)
    while t < t_end - 1e-14 * max(1.0, abs(t_end)):
        h = min(h, t_end - t)
        Kq, Kv = [], []
        for j in range(7):
            dq = sum((h * _DP_A[j, l] * Kq[l] for l in range(j)), np.zeros(model.nv))
            dv = sum((h * _DP_A[j, l] * Kv[l] for l in range(j)), np.zeros(model.nv))
            vj = v if j == 0 else v + dv
            Kq.append(vj)
            Kv.append(accel(t + _DP_C[j] * h, q if j == 0 else retract(model, q, dq), vj))
        dq = h * sum(b * k for b, k in zip(_DP_B, Kq))
        vn = v + h * sum(b * k for b, k in zip(_DP_B, Kv))
        eq = h * sum(e * k for e, k in zip(_DP_E, Kq))
        ev = h * sum(e * k for e, k in zip(_DP_E, Kv))
        sc = np.concatenate([eq / (atol + rtol * np.abs(dq)), ev / (atol + rtol * np.maximum(np.abs(v), np.abs(vn)))])
        err = float(np.sqrt(np.mean(sc * sc))) if sc.size else 0.0
        if err <= 1.0:
            t += h
            q, v = proj(retract(model, q, dq), vn, t)
            h = h * min(5.0, max(0.2, 0.9 * (1.0 / max(err, 1e-10)) ** 0.2))
        else:
            nrej += 1
            h = h * max(0.2, 0.9 * err ** -0.2)
        h = min(h, hmax)
    return q, v, h, nrej
