"""Forward dynamics: the articulated-body algorithm (Featherstone, RBDA section 7.3) for any EJCE
joint, O(N).

    qdd = M(q, t)^-1 (tau - h(q, qd, t) + sum_i J_i^T f_ext,i)

in each body's outboard joint frame C_i, with S_i, vJ_i (containing sigma_i) and cJ_i of the
joint from ``joint_motion``:

  outward:  v_i = X_i v_p + vJ_i,   c_i = cJ_i + v_i x vJ_i,
            I^A_i = I_i,   p^A_i = v_i x* I_i v_i - f_ext,i
  inward:   U_i = I^A_i S_i,   D_i = S_i^T U_i,   u_i = tau_i - S_i^T p^A_i,
            I^a = I^A_i - U_i D_i^-1 U_i^T,   p^a = p^A_i + I^a c_i + U_i D_i^-1 u_i,
            I^A_p += X_i^T I^a X_i,   p^A_p += X_i^T p^a
  outward:  a'_i = X_i a_p + c_i  (a_0 = -g),   qdd_i = D_i^-1 (u_i - U_i^T a'_i),
            a_i = a'_i + S_i qdd_i

D_i (nv_i x nv_i, up to 6 x 6) is inverted by Cholesky.  It is singular when S_i loses rank (a
gimbal lock of an Euler-angle joint, a degenerate universal joint) or when the subtree carried
by joint i has no inertia along S_i (a massless subtree); the kernel then stops that sample and
reports (joint, code), and Python raises ej.SingularJointError naming the joint, the
configuration and, in a batch, the samples.
"""
import numpy as np
from numba import prange

from ._jit import jit, pjit
from . import joint_motion as jm
from .joint_motion import (EYE9, ZERO6, add6, crf, crm, inertia_mul, inertia_to_parent, joint_step,
                           ld3, ld33, ld6, ld9, max_diag, mmT9, rigid_inertia_into, spd_inverse, st3,
                           st6, st9, sub6, subspace_full_rank, wrench_in_C, xforce_T, xmotion)


@jit
def _fail(qdd, status, b, i, code):
    for k in range(qdd.shape[1]):
        qdd[b, k] = np.nan
    status[b, 0] = i
    status[b, 1] = code


@jit
def aba_range(parent, jtype, q_start, nq_joint, v_start, nv_joint, adr, params, Xt, pt, mass, hC,
              Ib, bo, iscale, grav, Q, V, TAU, T, F, has_fext, lo, hi, generic,
              Rrel, rrel, J, sigma, bias, vrel, E, d, ST, c, vel, acc, pA, RC, IA, U, Dinv, uu, sc, W,
              QDD, status):
    """qdd of samples lo..hi-1 into QDD; status[b] = (-1, 0), or (joint, code) with QDD[b] NaN
    when D_i is singular.  The workspace (Rrel .. W) is one chunk's."""
    n1 = parent.shape[0]
    a_base = (0.0, 0.0, 0.0, -grav[0], -grav[1], -grav[2])
    for b in range(lo, hi):
        t = T[b]
        fb = b if F.shape[0] > 1 else 0
        status[b, 0] = -1
        status[b, 1] = jm.OK
        failed = False
        # -- outward: twists, velocity-product accelerations, rigid inertias and bias forces
        for i in range(1, n1):
            l = parent[i]
            vs = v_start[i]
            nvj = nv_joint[i]
            Ei, di, vJ, cJ = joint_step(jtype[i], params, adr[i], Q, b, V, b, t, q_start[i],
                                        nq_joint[i], vs, nvj, i, Xt, pt, generic,
                                        Rrel, rrel, J, sigma, bias, vrel, ST)
            if nvj > 0 and not subspace_full_rank(ST, vs, nvj, W):
                _fail(QDD, status, b, i, jm.RANK_LOSS)
                failed = True
                break
            st9(E, i, Ei)
            st3(d, i, di)
            vi = add6(xmotion(Ei, di, ZERO6 if l == 0 else ld6(vel, l)), vJ)
            st6(vel, i, vi)
            st6(c, i, add6(cJ, crm(vi, vJ)))
            m = mass[i]
            h = ld3(hC, i)
            I = ld33(Ib, i)
            rigid_inertia_into(m, h, I, IA, i)
            sc[i] = iscale[i]
            pi = crf(vi, inertia_mul(m, h, I, vi))
            if has_fext:
                RCi = mmT9(EYE9 if l == 0 else ld9(RC, l), Ei)
                st9(RC, i, RCi)
                pi = sub6(pi, wrench_in_C(RCi, ld3(bo, i), F, fb, i))
            st6(pA, i, pi)
        if failed:
            continue
        # -- inward: articulated inertias and bias forces
        for i in range(n1 - 1, 0, -1):
            vs = v_start[i]
            nvj = nv_joint[i]
            l = parent[i]
            pi = ld6(pA, i)
            # the largest inertia I^A_i was assembled from bounds its rounding: the pivots of D_i
            # are judged against it (a scale of real inertias, so it does not compound down a chain)
            md = max_diag(IA, i)
            ref = max(sc[i], md)
            for k in range(vs, vs + nvj):
                for x in range(6):
                    U[k, x] = (IA[i, x, 0] * ST[k, 0] + IA[i, x, 1] * ST[k, 1] + IA[i, x, 2] * ST[k, 2]
                               + IA[i, x, 3] * ST[k, 3] + IA[i, x, 4] * ST[k, 4] + IA[i, x, 5] * ST[k, 5])
                uu[k] = TAU[b, k] - (ST[k, 0] * pi[0] + ST[k, 1] * pi[1] + ST[k, 2] * pi[2]
                                     + ST[k, 3] * pi[3] + ST[k, 4] * pi[4] + ST[k, 5] * pi[5])
            if nvj > 0:
                for j in range(nvj):
                    for k in range(j, nvj):
                        s = 0.0
                        for x in range(6):
                            s += ST[vs + j, x] * U[vs + k, x]
                        W[0, j, k] = s
                        W[0, k, j] = s
                if not spd_inverse(W, nvj, ST, vs, ref, Dinv):
                    _fail(QDD, status, b, i, jm.ARTICULATED_SINGULAR)
                    failed = True
                    break
            if l == 0:
                continue
            # U D^-1 (6 x nvj) into W[0], then I^a = I^A - U D^-1 U^T into W[1]
            for x in range(6):
                for k in range(nvj):
                    s = 0.0
                    for j in range(nvj):
                        s += U[vs + j, x] * Dinv[vs + j, k]
                    W[0, x, k] = s
            for x in range(6):
                for y in range(x, 6):
                    s = IA[i, x, y]
                    for k in range(nvj):
                        s -= W[0, x, k] * U[vs + k, y]
                    W[1, x, y] = s
                    W[1, y, x] = s
            # p^a = p^A + I^a c + U D^-1 u
            p0, p1, p2, p3, p4, p5 = pi
            for k in range(nvj):
                w = uu[vs + k]
                p0 += W[0, 0, k] * w
                p1 += W[0, 1, k] * w
                p2 += W[0, 2, k] * w
                p3 += W[0, 3, k] * w
                p4 += W[0, 4, k] * w
                p5 += W[0, 5, k] * w
            for y in range(6):
                cy = c[i, y]
                p0 += W[1, 0, y] * cy
                p1 += W[1, 1, y] * cy
                p2 += W[1, 2, y] * cy
                p3 += W[1, 3, y] * cy
                p4 += W[1, 4, y] * cy
                p5 += W[1, 5, y] * cy
            Ei = ld9(E, i)
            di = ld3(d, i)
            inertia_to_parent(Ei, di, W, 1, IA, l)
            st6(pA, l, add6(ld6(pA, l), xforce_T(Ei, di, (p0, p1, p2, p3, p4, p5))))
            g = 1.0 + np.sqrt(di[0] * di[0] + di[1] * di[1] + di[2] * di[2])
            # rounding in I^a scales with the unprojected inertia, moved by the lever d
            e = md * g * g
            if e > sc[l]:
                sc[l] = e
        if failed:
            continue
        # -- outward: accelerations
        for i in range(1, n1):
            vs = v_start[i]
            nvj = nv_joint[i]
            l = parent[i]
            a0, a1, a2, a3, a4, a5 = add6(xmotion(ld9(E, i), ld3(d, i), a_base if l == 0 else ld6(acc, l)),
                                          ld6(c, i))
            for k in range(vs, vs + nvj):
                uu[k] -= U[k, 0] * a0 + U[k, 1] * a1 + U[k, 2] * a2 + U[k, 3] * a3 + U[k, 4] * a4 + U[k, 5] * a5
            for j in range(nvj):
                s = 0.0
                for k in range(nvj):
                    s += Dinv[vs + j, k] * uu[vs + k]
                QDD[b, vs + j] = s
                a0 += ST[vs + j, 0] * s
                a1 += ST[vs + j, 1] * s
                a2 += ST[vs + j, 2] * s
                a3 += ST[vs + j, 3] * s
                a4 += ST[vs + j, 4] * s
                a5 += ST[vs + j, 5] * s
            st6(acc, i, (a0, a1, a2, a3, a4, a5))


@jit
def aba_serial(tabs, Q, V, TAU, T, F, has_fext, generic, QDD, status, ws):
    (parent, jtype, q_start, nq_joint, v_start, nv_joint, adr, params, Xt, pt, mass, hC, Ib, bo,
     cC, iscale, grav) = tabs
    aba_range(parent, jtype, q_start, nq_joint, v_start, nv_joint, adr, params, Xt, pt, mass, hC,
              Ib, bo, iscale, grav, Q, V, TAU, T, F, has_fext, 0, Q.shape[0], generic,
              ws[0][0], ws[1][0], ws[2][0], ws[3][0], ws[4][0], ws[5][0], ws[6][0], ws[7][0], ws[8][0],
              ws[10][0], ws[11][0], ws[12][0], ws[13][0], ws[14][0], ws[16][0], ws[17][0], ws[18][0],
              ws[19][0], ws[20][0], ws[21][0], QDD, status)


@pjit
def aba_parallel(tabs, Q, V, TAU, T, F, has_fext, generic, QDD, status, ws):
    (parent, jtype, q_start, nq_joint, v_start, nv_joint, adr, params, Xt, pt, mass, hC, Ib, bo,
     cC, iscale, grav) = tabs
    B = Q.shape[0]
    nchunk = ws[0].shape[0]
    for c in prange(nchunk):
        aba_range(parent, jtype, q_start, nq_joint, v_start, nv_joint, adr, params, Xt, pt, mass, hC,
                  Ib, bo, iscale, grav, Q, V, TAU, T, F, has_fext, c * B // nchunk, (c + 1) * B // nchunk,
                  generic, ws[0][c], ws[1][c], ws[2][c], ws[3][c], ws[4][c], ws[5][c], ws[6][c],
                  ws[7][c], ws[8][c], ws[10][c], ws[11][c], ws[12][c], ws[13][c], ws[14][c], ws[16][c],
                  ws[17][c], ws[18][c], ws[19][c], ws[20][c], ws[21][c], QDD, status)


def run_aba(model, q2, qd2, tau2, t1, fext, has_fext, generic=False):
    """qdd (B, nv) and status (B, 2) of a validated batch of a model without mimic joints."""
    n = q2.shape[0]
    qdd = np.zeros((n, max(model.nv, 1)))
    status = np.zeros((n, 2), dtype=np.int64)
    jm.run(aba_serial, aba_parallel, jm.tables(model), None, model,
           (q2, qd2, tau2, t1, fext, has_fext, generic, qdd, status), articulated=True)
    return qdd[:, :model.nv], status


def aba(model, q, qd, tau, t=0.0, f_ext=None):
    """Accelerations qdd (..., nv) under joint forces tau, gravity and optional world-frame
    external wrenches f_ext (..., N+1, 6), in O(N) by the articulated-body algorithm.

    Raises ej.SingularJointError naming the joint and configuration (and the samples of a batch)
    where a joint's Jacobian loses rank or a massless subtree makes the dynamics singular.
    Models with mimic joints (coupled coordinates) are solved through the mass matrix."""
    if jm.expansion(model) is not None:
        from .crba import forward_dynamics_crba
        return forward_dynamics_crba(model, q, qd, tau, t, f_ext)
    B, q2, (qd2, tau2), t1 = jm.states(model, q, ((qd, "qd"), (tau, "tau")), t)
    fext, has = jm.fext_array(model, f_ext, B)
    qdd, status = run_aba(model, q2, qd2, tau2, t1, fext, has)
    jm.raise_singular(model, status, q2, t1, B, "aba")
    return qdd[0] if B is None else qdd
