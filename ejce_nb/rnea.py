"""Inverse dynamics: the recursive Newton-Euler algorithm (Featherstone, RBDA section 5.3) for
any EJCE joint.

    tau = M(q, t) qdd + h(q, qd, t) - sum_i J_i(q, t)^T f_ext,i

computed in O(N) by one outward and one inward sweep in each body's outboard joint frame C_i
(``joint_motion``: X_i, S_i, vJ_i, cJ_i from the joint's J, sigma and bias):

    v_i = X_i v_p + vJ_i                              (vJ_i = S_i qd_i + sigma_i)
    a_i = X_i a_p + S_i qdd_i + cJ_i + v_i x vJ_i     (a_0 = -g: gravity as a base acceleration)
    f_i = I_i a_i + v_i x* I_i v_i - f_ext,i
    tau_i = S_i^T f_i,     f_p += X_i^T f_i

``f_ext`` are world-frame wrenches [moment about the body origin; force]; they are moved into C_i
with the world orientation of C_i, accumulated along the sweep only when given.
``nonlinear_effects`` is the same sweep with qdd = 0 (h: Coriolis, centrifugal, gravity and, for
rheonomic joints, the terms of the prescribed motion).
"""
import numpy as np
from numba import prange

from ._jit import jit, pjit
from . import joint_motion as jm
from .joint_motion import (ZERO6, add6, crf, crm, dot6, inertia_mul, joint_pass, ld3, ld33, ld6,
                           ld9, st6, sub6, external_wrench_in_C, xforce_T, xmotion)


@jit
def rnea_range(parent, jtype, q_start, nq_joint, v_start, nv_joint, adr, params, Xt, pt, mass, hC,
               Ib, bo, grav, Q, V, A, T, F, has_fext, lo, hi, generic,
               Rrel, rrel, J, sigma, bias, vrel, E, d, ST, vJ, cJ, vel, acc, f, RC, W, TAU):
    """tau of samples lo..hi-1 into TAU (F: (1 or B, N+1, 6) world wrenches, read when has_fext).
    The workspace (Rrel .. W) is one chunk's."""
    n1 = parent.shape[0]
    # the base accelerates upwards instead of gravity pulling every body down
    a_base = (0.0, 0.0, 0.0, -grav[0], -grav[1], -grav[2])
    for b in range(lo, hi):
        joint_pass(jtype, q_start, nq_joint, v_start, nv_joint, adr, params, Xt, pt, Q, b, V, b, T[b],
                   generic, False, Rrel, rrel, J, sigma, bias, vrel, E, d, ST, vJ, cJ, W)
        fb = b if F.shape[0] > 1 else 0
        for i in range(1, n1):
            l = parent[i]
            Ei = ld9(E, i)
            di = ld3(d, i)
            vJi = ld6(vJ, i)
            vi = add6(xmotion(Ei, di, ZERO6 if l == 0 else ld6(vel, l)), vJi)
            a0, a1, a2, a3, a4, a5 = add6(add6(xmotion(Ei, di, a_base if l == 0 else ld6(acc, l)),
                                               ld6(cJ, i)), crm(vi, vJi))
            for k in range(v_start[i], v_start[i] + nv_joint[i]):
                ak = A[b, k]
                a0 += ST[k, 0] * ak
                a1 += ST[k, 1] * ak
                a2 += ST[k, 2] * ak
                a3 += ST[k, 3] * ak
                a4 += ST[k, 4] * ak
                a5 += ST[k, 5] * ak
            ai = (a0, a1, a2, a3, a4, a5)
            st6(vel, i, vi)
            st6(acc, i, ai)
            m = mass[i]
            h = ld3(hC, i)
            I = ld33(Ib, i)
            fi = add6(inertia_mul(m, h, I, ai), crf(vi, inertia_mul(m, h, I, vi)))
            if has_fext:
                fi = sub6(fi, external_wrench_in_C(F, fb, i, l, Ei, RC, bo))
            st6(f, i, fi)
        for i in range(n1 - 1, 0, -1):
            fi = ld6(f, i)
            for k in range(v_start[i], v_start[i] + nv_joint[i]):
                TAU[b, k] = dot6(ld6(ST, k), fi)
            l = parent[i]
            if l > 0:
                st6(f, l, add6(ld6(f, l), xforce_T(ld9(E, i), ld3(d, i), fi)))


@jit
def rnea_serial(tabs, Q, V, A, T, F, has_fext, generic, TAU, ws):
    (parent, jtype, q_start, nq_joint, v_start, nv_joint, adr, params, Xt, pt, mass, hC, Ib, bo,
     cC, iscale, grav) = tabs
    rnea_range(parent, jtype, q_start, nq_joint, v_start, nv_joint, adr, params, Xt, pt, mass, hC,
               Ib, bo, grav, Q, V, A, T, F, has_fext, 0, Q.shape[0], generic,
               ws[0][0], ws[1][0], ws[2][0], ws[3][0], ws[4][0], ws[5][0], ws[6][0], ws[7][0],
               ws[8][0], ws[9][0], ws[10][0], ws[11][0], ws[12][0], ws[13][0], ws[14][0], ws[21][0], TAU)


@pjit
def rnea_parallel(tabs, Q, V, A, T, F, has_fext, generic, TAU, ws):
    (parent, jtype, q_start, nq_joint, v_start, nv_joint, adr, params, Xt, pt, mass, hC, Ib, bo,
     cC, iscale, grav) = tabs
    B = Q.shape[0]
    nchunk = ws[0].shape[0]
    for c in prange(nchunk):
        rnea_range(parent, jtype, q_start, nq_joint, v_start, nv_joint, adr, params, Xt, pt, mass, hC,
                   Ib, bo, grav, Q, V, A, T, F, has_fext, c * B // nchunk, (c + 1) * B // nchunk, generic,
                   ws[0][c], ws[1][c], ws[2][c], ws[3][c], ws[4][c], ws[5][c], ws[6][c], ws[7][c],
                   ws[8][c], ws[9][c], ws[10][c], ws[11][c], ws[12][c], ws[13][c], ws[14][c], ws[21][c],
                   TAU)


def run_rnea(model, q2, qd2, qdd2, t1, fext, has_fext, generic=False):
    """RNEA on a validated batch of a model without mimic joints; returns tau (B, nv).
    ``generic`` bypasses the hand-written joint paths (for checking them)."""
    tau = np.zeros((q2.shape[0], max(model.nv, 1)))
    jm.run(rnea_serial, rnea_parallel, jm.tables(model), model,
           (q2, qd2, qdd2, t1, fext, has_fext, generic, tau))
    return tau[:, :model.nv]


def _inverse(model, q, qd, qdd, t, f_ext):
    B, q2, (qd2, qdd2), t1 = jm.states(model, q, ((qd, "qd"), (qdd, "qdd")), t)
    fext, has = jm.fext_array(model, f_ext, B)
    ex = jm.expansion(model)
    if ex is None:
        tau = run_rnea(model, q2, qd2, qdd2, t1, fext, has)
    else:
        full, Gq, gq, Gv = ex
        tau = run_rnea(full, q2 @ Gq.T + gq, jm.pad_v(qd2[:, :model.nv] @ Gv.T),
                       jm.pad_v(qdd2[:, :model.nv] @ Gv.T), t1, fext, has)
        tau = tau @ Gv
    return B, tau


def rnea(model, q, qd, qdd, t=0.0, f_ext=None):
    """Joint forces tau (..., nv) that produce the accelerations qdd at (q, qd, t), with gravity
    from the model and optional external wrenches f_ext (..., N+1, 6) in world axes
    ([moment about the body origin; force] on each body, row 0 ignored).

    q (nq,) or (B, nq); qd, qdd (nv,) or (B, nv); t a float or (B,).  A batch runs in parallel."""
    B, tau = _inverse(model, q, qd, qdd, t, f_ext)
    return tau[0] if B is None else tau


def nonlinear_effects(model, q, qd, t=0.0):
    """h(q, qd, t) (..., nv): the joint forces at zero acceleration (Coriolis, centrifugal,
    gravity, and the effect of prescribed motion of rheonomic joints), so that
    rnea(q, qd, qdd) = mass_matrix(q) qdd + h."""
    if qd is None:
        raise ValueError("qd is required")
    B, h = _inverse(model, q, qd, np.zeros(np.shape(qd)), t, None)
    return h[0] if B is None else h
