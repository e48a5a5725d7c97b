"""Energies and centre of mass of the whole system.

    T = 1/2 sum_i v_i^T I_i v_i + 1/2 sum_k armature_k qd_k^2
                                         (v_i the body twist, including sigma of rheonomic joints;
                                           for scleronomic models T = 1/2 qd^T M(q) qd)
    V = - sum_i m_i g . c_i               (c_i the world position of body i's centre of mass)
    c = sum_i m_i c_i / sum_i m_i

from the forward sweep (``kinematics.forward``: twists and the world frames of C_i).
"""
import numpy as np
from numba import prange

from . import engine
from ..model import inputs
from .._jit import call, entry, jit, pjit
from .kinematics import forward
from ..model.layout import REC_JOINT, model_view, record_view, scratch_view, views
from ..core.spatial import add, dot6, inertia_mul, ld3, ld6, ld9, mv


@jit
def energy_state(m, r, s, q, v, t, level, generic, out):
    """out = (T, V, sum m c_x, sum m c_y, sum m c_z); T only from level 1."""
    forward(m, r, s, q, v, v, t, level, True, generic)
    kin = 0.0
    pot = 0.0
    m0 = 0.0
    m1 = 0.0
    m2 = 0.0
    g = m.gravity
    for i in range(1, m.body_parent.shape[0]):
        mass = m.body_mass[i]
        if level >= 1:
            vi = ld6(r.vel, i)
            kin += 0.5 * dot6(vi, inertia_mul(mass, ld3(m.body_hC, i), ld9(m.body_IC, i), vi))
        c = add(ld3(r.oC, i), mv(ld9(r.RC, i), ld3(m.body_cC, i)))
        pot -= mass * (g[0] * c[0] + g[1] * c[1] + g[2] * c[2])
        m0 += mass * c[0]
        m1 += mass * c[1]
        m2 += mass * c[2]
    if level >= 1:
        for k in range(m.dof_armature.shape[0]):
            kin += 0.5 * m.dof_armature[k] * v[k] * v[k]
    out[0] = kin
    out[1] = pot
    out[2] = m0
    out[3] = m1
    out[4] = m2


@entry
def energy_one(mb, w, q, v, t, level, out):
    m, r, s = views(mb, w)
    generic = s.flags[0] != 0.0
    st, j = inputs.check(m, q, v, v, level, t)
    if st != 0:
        r.hdr[REC_JOINT] = j
        return st
    energy_state(m, r, s, q, v, t, level, generic, out)
    return 0


@pjit
def energy_many(mb, R, S, per_state, Q, V, T, level, generic, out, status):
    B = Q.shape[0]
    nchunk = S.shape[0]
    for c in prange(nchunk):
        m = model_view(mb)
        s = scratch_view(mb, S[c], 0)
        for b in range(c * B // nchunk, (c + 1) * B // nchunk):
            r = record_view(mb, R[b] if per_state else R[c], 0)
            v = V[b] if level >= 1 else s.zv
            st, j = inputs.check(m, Q[b], v, v, level, T[b])
            status[b, 0] = st
            status[b, 1] = j
            if st == 0:
                energy_state(m, r, s, Q[b], v, T[b], level, generic, out[b])


def _energies(model, q, qd, t, data, errors, what):
    inputs.check_errors_arg(errors)
    vecs = () if qd is None else ((qd, "qd"),)
    B, q2, vs, t1 = inputs.states(model, q, vecs, t)
    if data is not None:
        data._check(model, B)
    km, mim = inputs.kernel_model(model)
    n = q2.shape[0]
    level = 0 if qd is None else 1
    if mim is None:
        qk, V = q2, (np.zeros((n, km.nv)) if qd is None else vs[0])
    else:
        qk, V, _ = mim.expand(q2, None if qd is None else vs[0])
        V = np.zeros((n, km.nv)) if V is None else V
    out = np.empty((n, 5))
    status = engine.status_array(n)
    if B is None:
        w = data._w if data is not None else engine.one_workspace(km)
        status[0, 0] = call(energy_one, km._mb, w, qk[0], V[0], t1[0], level, out[0])
        status[0, 1] = int(w[REC_JOINT])
        if data is None:
            engine.release(km, w)
    else:
        R, S, per_state, token = engine.batch_workspace(km, n, data)
        energy_many(km._mb, R, S, per_state, qk, V, t1, level, False, out, status)
        engine.release_batch(token)
    out[status[:, 0] != 0] = np.nan
    names = ["q"] + [nm for _, nm in vecs]
    res = inputs.flag_or_raise(errors, model, status, what, names, [q2] + list(vs), t1, B, out)
    return (B, res) if errors == "raise" else (B, res[0], res[1])


def _pick(B, out, col, errors, status=None):
    x = out[:, col]
    x = float(x[0]) if B is None else x
    return x if errors == "raise" else (x, status)


def kinetic_energy(model, q, qd, t=0.0, data=None, errors="raise"):
    """Kinetic energy 1/2 sum_i v_i^T I_i v_i of all bodies (a float, or (B,) for a batch)."""
    if qd is None:
        raise ValueError("qd is required")
    B, out, *st = _energies(model, q, qd, t, data, errors, "kinetic_energy")
    return _pick(B, out, 0, errors, *st)


def potential_energy(model, q, t=0.0, data=None, errors="raise"):
    """Gravitational potential energy -sum_i m_i g . c_i (zero at the world origin)."""
    B, out, *st = _energies(model, q, None, t, data, errors, "potential_energy")
    return _pick(B, out, 1, errors, *st)


def center_of_mass(model, q, t=0.0, data=None, errors="raise"):
    """World position (..., 3) of the centre of mass of all bodies."""
    mtot = float(np.sum(model.body_mass))
    if not mtot > 0.0:
        raise ValueError("center_of_mass: the model has no mass (every body is massless)")
    B, out, *st = _energies(model, q, None, t, data, errors, "center_of_mass")
    c = out[:, 2:5] / mtot
    c = c[0] if B is None else c
    return c if errors == "raise" else (c, *st)
