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
from .joint_motion import (ZERO6, add21, add6, crf, crm, dot6, inertia_mul, joint_pass, ld21, ld3,
                           ld33, ld6, ld9, rigid21, spd_inverse, st21, st6, sub6, sym_mul,
                           sym_sub_outer, sym_to_parent, external_wrench_in_C, xforce_T, xmotion)


@jit
def _fail(qdd, status, b, i, code):
    for k in range(qdd.shape[1]):
        qdd[b, k] = np.nan
    status[b, 0] = i
    status[b, 1] = code


@jit
def aba_range(parent, jtype, q_start, nq_joint, v_start, nv_joint, adr, params, Xt, pt, mass, hC,
              Ib, bo, iscale, grav, Q, V, TAU, T, F, has_fext, lo, hi, generic,
              Rrel, rrel, J, sigma, bias, vrel, E, d, ST, vJ, c, vel, acc, pA, RC, IA, U, Dinv, uu, sc, W,
              QDD, status):
    """qdd of samples lo..hi-1 into QDD; status[b] = (-1, 0), or (joint, code) with QDD[b] NaN
    when D_i is singular.  The workspace (Rrel .. W) is one chunk's; c holds cJ from the joint
    pass, then c_i = cJ_i + v_i x vJ_i."""
    n1 = parent.shape[0]
    a_base = (0.0, 0.0, 0.0, -grav[0], -grav[1], -grav[2])
    for b in range(lo, hi):
        status[b, 0] = -1
        status[b, 1] = jm.OK
        bad = joint_pass(jtype, q_start, nq_joint, v_start, nv_joint, adr, params, Xt, pt, Q, b, V, b,
                         T[b], generic, True, Rrel, rrel, J, sigma, bias, vrel, E, d, ST, vJ, c, W)
        if bad >= 0:
            _fail(QDD, status, b, bad, jm.RANK_LOSS)
            continue
        fb = b if F.shape[0] > 1 else 0
        # -- outward: twists, velocity-product accelerations, rigid inertias and bias forces
        for i in range(1, n1):
            l = parent[i]
            Ei = ld9(E, i)
            vJi = ld6(vJ, i)
            vi = add6(xmotion(Ei, ld3(d, i), ZERO6 if l == 0 else ld6(vel, l)), vJi)
            st6(vel, i, vi)
            st6(c, i, add6(ld6(c, i), crm(vi, vJi)))
            m = mass[i]
            h = ld3(hC, i)
            I = ld33(Ib, i)
            st21(IA, i, rigid21(m, h, I))
            sc[i] = iscale[i]
            pi = crf(vi, inertia_mul(m, h, I, vi))
            if has_fext:
                pi = sub6(pi, external_wrench_in_C(F, fb, i, l, Ei, RC, bo))
            st6(pA, i, pi)
        # -- inward: articulated inertias and bias forces
        failed = False
        for i in range(n1 - 1, 0, -1):
            vs = v_start[i]
            nvj = nv_joint[i]
            l = parent[i]
            Ai = ld21(IA, i)
            pi = ld6(pA, i)
            # pivots are judged against the bodies' own inertias (the largest in the subtree): a
            # massless subtree, or masses on the joint axis, leave D_i at rounding of that scale,
            # while the lever arms of a long chain, which grow I^A_i like N^3 in directions away
            # from S, do not make an ordinary joint look singular
            ref = sc[i]
            for k in range(vs, vs + nvj):
                Sk = ld6(ST, k)
                st6(U, k, sym_mul(Ai, Sk))
                uu[k] = TAU[b, k] - dot6(Sk, pi)
            if nvj == 1:
                Sk = ld6(ST, vs)
                D = dot6(Sk, ld6(U, vs))
                if not D > jm.PIVOT_TOL * ref * dot6(Sk, Sk):
                    failed = True
                else:
                    Dinv[vs, 0] = 1.0 / D
            elif nvj > 1:
                for j in range(nvj):
                    for k in range(j, nvj):
                        s = dot6(ld6(ST, vs + j), ld6(U, vs + k))
                        W[0, j, k] = s
                        W[0, k, j] = s
                failed = not spd_inverse(W, nvj, ST, vs, ref, Dinv)
            if failed:
                _fail(QDD, status, b, i, jm.ARTICULATED_SINGULAR)
                break
            if l == 0:
                continue
            # I^a = I^A - U D^-1 U^T,  p^a = p^A + I^a c + U D^-1 u
            Ia = Ai
            pa = pi
            for k in range(nvj):
                x0 = 0.0
                x1 = 0.0
                x2 = 0.0
                x3 = 0.0
                x4 = 0.0
                x5 = 0.0
                for j in range(nvj):
                    w = Dinv[vs + j, k]
                    x0 += U[vs + j, 0] * w
                    x1 += U[vs + j, 1] * w
                    x2 += U[vs + j, 2] * w
                    x3 += U[vs + j, 3] * w
                    x4 += U[vs + j, 4] * w
                    x5 += U[vs + j, 5] * w
                UDk = (x0, x1, x2, x3, x4, x5)
                Ia = sym_sub_outer(Ia, UDk, ld6(U, vs + k))
                w = uu[vs + k]
                pa = (pa[0] + x0 * w, pa[1] + x1 * w, pa[2] + x2 * w, pa[3] + x3 * w, pa[4] + x4 * w,
                      pa[5] + x5 * w)
            pa = add6(pa, sym_mul(Ia, ld6(c, i)))
            Ei = ld9(E, i)
            di = ld3(d, i)
            add21(IA, l, sym_to_parent(Ei, di, Ia))
            st6(pA, l, add6(ld6(pA, l), xforce_T(Ei, di, pa)))
            if sc[i] > sc[l]:
                sc[l] = sc[i]
        if failed:
            continue
        # -- outward: accelerations
        for i in range(1, n1):
            vs = v_start[i]
            nvj = nv_joint[i]
            l = parent[i]
            ap = add6(xmotion(ld9(E, i), ld3(d, i), a_base if l == 0 else ld6(acc, l)), ld6(c, i))
            for k in range(vs, vs + nvj):
                uu[k] -= dot6(ld6(U, k), ap)
            a0, a1, a2, a3, a4, a5 = ap
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
              ws[9][0], ws[10][0], ws[11][0], ws[12][0], ws[13][0], ws[14][0], ws[16][0], ws[17][0],
              ws[18][0], ws[19][0], ws[20][0], ws[21][0], QDD, status)


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
                  ws[7][c], ws[8][c], ws[9][c], ws[10][c], ws[11][c], ws[12][c], ws[13][c], ws[14][c],
                  ws[16][c], ws[17][c], ws[18][c], ws[19][c], ws[20][c], ws[21][c], QDD, status)


def run_aba(model, q2, qd2, tau2, t1, fext, has_fext, generic=False):
    """qdd (B, nv) and status (B, 2) of a validated batch of a model without mimic joints."""
    n = q2.shape[0]
    qdd = np.zeros((n, max(model.nv, 1)))
    status = np.zeros((n, 2), dtype=np.int64)
    jm.run(aba_serial, aba_parallel, jm.tables(model), model,
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
