"""Energies and centre of mass of the whole system.

    T = 1/2 sum_i v_i^T I_i v_i          (v_i the body twist, including sigma of rheonomic joints;
                                           for scleronomic models T = 1/2 qd^T M(q) qd)
    V = - sum_i m_i g . c_i               (c_i the world position of body i's centre of mass)
    c = sum_i m_i c_i / sum_i m_i

from one outward sweep in the outboard joint frames C_i (``joint_motion``), accumulating the
world orientation R_C,i = R_C,p E_i^T and origin o_C,i = o_C,p + R_C,p d_i of each frame.
"""
import numpy as np
from numba import prange

from ._jit import jit, pjit
from . import joint_motion as jm
from .joint_motion import (EYE9, ZERO6, add6, dot6, inertia_mul, joint_pass, ld3, ld33, ld6, ld9,
                           st3, st6, st9, xmotion)
from .spatial import mmT


@jit
def energy_range(parent, jtype, q_start, nq_joint, v_start, nv_joint, adr, params, Xt, pt, mass, hC,
                 Ib, cC, grav, Q, V, T, lo, hi, generic, Rrel, rrel, J, sigma, bias, vrel, E, d, ST,
                 vJ, cJ, vel, RC, oC, W, OUT):
    """OUT[b] = (T, V, sum m c_x, sum m c_y, sum m c_z) of samples lo..hi-1."""
    n1 = parent.shape[0]
    for b in range(lo, hi):
        joint_pass(jtype, q_start, nq_joint, v_start, nv_joint, adr, params, Xt, pt, Q, b, V, b, T[b],
                   generic, False, Rrel, rrel, J, sigma, bias, vrel, E, d, ST, vJ, cJ, W)
        kin = 0.0
        pot = 0.0
        m0 = 0.0
        m1 = 0.0
        m2 = 0.0
        for i in range(1, n1):
            l = parent[i]
            Ei = ld9(E, i)
            di = ld3(d, i)
            RCl = EYE9 if l == 0 else ld9(RC, l)
            oCl = (0.0, 0.0, 0.0) if l == 0 else ld3(oC, l)
            RCi = mmT(RCl, Ei)
            o = (oCl[0] + RCl[0] * di[0] + RCl[1] * di[1] + RCl[2] * di[2],
                 oCl[1] + RCl[3] * di[0] + RCl[4] * di[1] + RCl[5] * di[2],
                 oCl[2] + RCl[6] * di[0] + RCl[7] * di[1] + RCl[8] * di[2])
            st9(RC, i, RCi)
            st3(oC, i, o)
            vi = add6(xmotion(Ei, di, ZERO6 if l == 0 else ld6(vel, l)), ld6(vJ, i))
            st6(vel, i, vi)
            m = mass[i]
            kin += 0.5 * dot6(vi, inertia_mul(m, ld3(hC, i), ld33(Ib, i), vi))
            cc = ld3(cC, i)
            w0 = o[0] + RCi[0] * cc[0] + RCi[1] * cc[1] + RCi[2] * cc[2]
            w1 = o[1] + RCi[3] * cc[0] + RCi[4] * cc[1] + RCi[5] * cc[2]
            w2 = o[2] + RCi[6] * cc[0] + RCi[7] * cc[1] + RCi[8] * cc[2]
            pot -= m * (grav[0] * w0 + grav[1] * w1 + grav[2] * w2)
            m0 += m * w0
            m1 += m * w1
            m2 += m * w2
        OUT[b, 0] = kin
        OUT[b, 1] = pot
        OUT[b, 2] = m0
        OUT[b, 3] = m1
        OUT[b, 4] = m2


@jit
def energy_serial(tabs, Q, V, T, generic, OUT, ws):
    (parent, jtype, q_start, nq_joint, v_start, nv_joint, adr, params, Xt, pt, mass, hC, Ib, bo,
     cC, iscale, grav) = tabs
    energy_range(parent, jtype, q_start, nq_joint, v_start, nv_joint, adr, params, Xt, pt, mass, hC,
                 Ib, cC, grav, Q, V, T, 0, Q.shape[0], generic, ws[0][0], ws[1][0], ws[2][0], ws[3][0],
                 ws[4][0], ws[5][0], ws[6][0], ws[7][0], ws[8][0], ws[9][0], ws[10][0], ws[11][0],
                 ws[14][0], ws[15][0], ws[21][0], OUT)


@pjit
def energy_parallel(tabs, Q, V, T, generic, OUT, ws):
    (parent, jtype, q_start, nq_joint, v_start, nv_joint, adr, params, Xt, pt, mass, hC, Ib, bo,
     cC, iscale, grav) = tabs
    B = Q.shape[0]
    nchunk = ws[0].shape[0]
    for c in prange(nchunk):
        energy_range(parent, jtype, q_start, nq_joint, v_start, nv_joint, adr, params, Xt, pt, mass, hC,
                     Ib, cC, grav, Q, V, T, c * B // nchunk, (c + 1) * B // nchunk, generic, ws[0][c],
                     ws[1][c], ws[2][c], ws[3][c], ws[4][c], ws[5][c], ws[6][c], ws[7][c], ws[8][c],
                     ws[9][c], ws[10][c], ws[11][c], ws[14][c], ws[15][c], ws[21][c], OUT)


def _energies(model, q, qd, t):
    vecs = () if qd is None else ((qd, "qd"),)
    B, q2, vs, t1 = jm.states(model, q, vecs, t)
    n = q2.shape[0]
    v = vs[0] if vs else np.zeros((n, max(model.nv, 1)))
    ex = jm.expansion(model)
    if ex is not None:
        model, Gq, gq, Gv = ex
        q2 = q2 @ Gq.T + gq
        v = jm.pad_v(v[:, :Gv.shape[1]] @ Gv.T)
    out = np.zeros((n, 5))
    jm.run(energy_serial, energy_parallel, jm.tables(model), model, (q2, v, t1, False, out))
    return B, out


def kinetic_energy(model, q, qd, t=0.0):
    """Kinetic energy 1/2 sum_i v_i^T I_i v_i of all bodies (a float, or (B,) for a batch)."""
    if qd is None:
        raise ValueError("qd is required")
    B, out = _energies(model, q, qd, t)
    return float(out[0, 0]) if B is None else out[:, 0]


def potential_energy(model, q, t=0.0):
    """Gravitational potential energy -sum_i m_i g . c_i (zero at the world origin)."""
    B, out = _energies(model, q, None, t)
    return float(out[0, 1]) if B is None else out[:, 1]


def center_of_mass(model, q, t=0.0):
    """World position (..., 3) of the centre of mass of all bodies."""
    mtot = float(np.sum(model.body_mass))
    if not mtot > 0.0:
        raise ValueError("center_of_mass: the model has no mass (every body is massless)")
    B, out = _energies(model, q, None, t)
    c = out[:, 2:5] / mtot
    return c[0] if B is None else c
