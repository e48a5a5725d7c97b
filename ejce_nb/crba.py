"""The joint-space mass matrix by the composite rigid body algorithm (Featherstone, RBDA
section 6.2) for any EJCE joint, and forward dynamics through it.

    M(q, t) = sum_i J_i^T I_i J_i,   computed as   I^c_i = I_i + sum_{children c} X_c^T I^c_c X_c,
    M[i, i] = S_i^T I^c_i S_i,   M[j, i] = S_j^T (X_..^T I^c_i S_i)   for each ancestor j of i

in each body's outboard joint frame C_i with S_i = [R^T J_w; R^T J_v] (``joint_motion``).  S
depends on q (Euler angles, universal, spline and coupled joints) and, for rheonomic joints, on t;
it never depends on qd, and sigma does not enter M.

``forward_dynamics_crba`` solves M qdd = tau - h(q, qd, t) (+ J^T f_ext) by Cholesky, O(nv^3):
a cross-check of ``aba`` that reports the same singular configurations.
"""
import numpy as np
from numba import prange

from ._jit import jit, pjit
from . import joint_motion as jm
from .joint_motion import (add21, joint_pass, ld21, ld3, ld33, ld6, ld9, rigid21, st21, sym_mul,
                           sym_to_parent, xforce_T)
from .rnea import run_rnea


@jit
def crba_range(parent, jtype, q_start, nq_joint, v_start, nv_joint, adr, params, Xt, pt, mass, hC,
               Ib, Q, Z, T, lo, hi, generic, Rrel, rrel, J, sigma, bias, vrel, E, d, ST, vJ, cJ, IC, W,
               M, status):
    """M of samples lo..hi-1; status[b] = (first joint whose S loses rank, code) or (-1, 0).
    Z: one row of zero velocities (S does not depend on them)."""
    n1 = parent.shape[0]
    for b in range(lo, hi):
        bad = joint_pass(jtype, q_start, nq_joint, v_start, nv_joint, adr, params, Xt, pt, Q, b, Z, 0,
                         T[b], generic, True, Rrel, rrel, J, sigma, bias, vrel, E, d, ST, vJ, cJ, W)
        status[b, 0] = bad
        status[b, 1] = jm.OK if bad < 0 else jm.RANK_LOSS
        for i in range(1, n1):
            st21(IC, i, rigid21(mass[i], ld3(hC, i), ld33(Ib, i)))
        for x in range(M.shape[1]):
            for y in range(M.shape[2]):
                M[b, x, y] = 0.0
        # composite inertias: children (higher indices) are complete before they reach the parent
        for i in range(n1 - 1, 0, -1):
            l = parent[i]
            if l > 0:
                add21(IC, l, sym_to_parent(ld9(E, i), ld3(d, i), ld21(IC, i)))
        for i in range(1, n1):
            vs = v_start[i]
            nvj = nv_joint[i]
            Ic = ld21(IC, i)
            # F = I^c_i S_i, one row of W[0] per column of S, carried to each ancestor j as X^T F
            for k in range(nvj):
                Fk = sym_mul(Ic, ld6(ST, vs + k))
                for x in range(6):
                    W[0, k, x] = Fk[x]
            for k in range(nvj):
                for k2 in range(k, nvj):
                    s = 0.0
                    for x in range(6):
                        s += ST[vs + k2, x] * W[0, k, x]
                    M[b, vs + k2, vs + k] = s
                    M[b, vs + k, vs + k2] = s
            j = i
            while nvj > 0 and parent[j] > 0:
                Ej = ld9(E, j)
                dj = ld3(d, j)
                for k in range(nvj):
                    ft = xforce_T(Ej, dj, (W[0, k, 0], W[0, k, 1], W[0, k, 2], W[0, k, 3], W[0, k, 4],
                                           W[0, k, 5]))
                    for x in range(6):
                        W[0, k, x] = ft[x]
                j = parent[j]
                vj = v_start[j]
                for k in range(nvj):
                    for m in range(nv_joint[j]):
                        s = 0.0
                        for x in range(6):
                            s += ST[vj + m, x] * W[0, k, x]
                        M[b, vj + m, vs + k] = s
                        M[b, vs + k, vj + m] = s


@jit
def crba_serial(tabs, Q, Z, T, generic, M, status, ws):
    (parent, jtype, q_start, nq_joint, v_start, nv_joint, adr, params, Xt, pt, mass, hC, Ib, bo,
     cC, iscale, grav) = tabs
    crba_range(parent, jtype, q_start, nq_joint, v_start, nv_joint, adr, params, Xt, pt, mass, hC,
               Ib, Q, Z, T, 0, Q.shape[0], generic, ws[0][0], ws[1][0], ws[2][0], ws[3][0], ws[4][0],
               ws[5][0], ws[6][0], ws[7][0], ws[8][0], ws[9][0], ws[10][0], ws[16][0], ws[21][0], M, status)


@pjit
def crba_parallel(tabs, Q, Z, T, generic, M, status, ws):
    (parent, jtype, q_start, nq_joint, v_start, nv_joint, adr, params, Xt, pt, mass, hC, Ib, bo,
     cC, iscale, grav) = tabs
    B = Q.shape[0]
    nchunk = ws[0].shape[0]
    for c in prange(nchunk):
        crba_range(parent, jtype, q_start, nq_joint, v_start, nv_joint, adr, params, Xt, pt, mass, hC,
                   Ib, Q, Z, T, c * B // nchunk, (c + 1) * B // nchunk, generic, ws[0][c], ws[1][c],
                   ws[2][c], ws[3][c], ws[4][c], ws[5][c], ws[6][c], ws[7][c], ws[8][c], ws[9][c],
                   ws[10][c], ws[16][c], ws[21][c], M, status)


def run_crba(model, q2, t1, generic=False):
    """M (B, nv, nv) and per-sample status (B, 2) of a validated batch (no mimic joints)."""
    n = q2.shape[0]
    nv = model.nv
    M = np.zeros((n, nv, nv))
    status = np.zeros((n, 2), dtype=np.int64)
    Z = np.zeros((1, max(nv, 1)))
    jm.run(crba_serial, crba_parallel, jm.tables(model), model, (q2, Z, t1, generic, M, status),
           composite=True)
    return M, status


def _mass(model, q2, t1):
    ex = jm.expansion(model)
    if ex is None:
        M, status = run_crba(model, q2, t1)
        return M, status, model, q2
    full, Gq, gq, Gv = ex
    qf = q2 @ Gq.T + gq
    M, status = run_crba(full, qf, t1)
    return Gv.T @ M @ Gv, status, full, qf


def mass_matrix(model, q, t=0.0):
    """Joint-space mass matrix M(q, t) (..., nv, nv), symmetric; positive definite except where a
    joint's Jacobian loses rank (gimbal lock) or a subtree is massless, where it is returned as
    it is (positive semi-definite): ``aba`` and ``forward_dynamics_crba`` report those."""
    B, q2, _, t1 = jm.states(model, q, (), t)
    M = _mass(model, q2, t1)[0]
    return M[0] if B is None else M


@jit
def _chol_solve_one(M, rhs, out, scale_tol):
    """Solve M x = rhs by Cholesky in place of M's lower triangle; returns the first column whose
    pivot is not clearly positive (-1: none)."""
    n = M.shape[0]
    for j in range(n):
        s = M[j, j]
        for k in range(j):
            s -= M[j, k] * M[j, k]
        # a pivot lost to cancellation against its own diagonal: M is singular there
        if not (s > 0.0 and s > scale_tol * M[j, j]):
            for x in range(n):
                out[x] = np.nan
            return j
        ljj = np.sqrt(s)
        M[j, j] = ljj
        for i in range(j + 1, n):
            s2 = M[i, j]
            for k in range(j):
                s2 -= M[i, k] * M[j, k]
            M[i, j] = s2 / ljj
    for i in range(n):
        s = rhs[i]
        for k in range(i):
            s -= M[i, k] * out[k]
        out[i] = s / M[i, i]
    for i in range(n - 1, -1, -1):
        s = out[i]
        for k in range(i + 1, n):
            s -= M[k, i] * out[k]
        out[i] = s / M[i, i]
    return -1


@pjit
def _chol_solve_batch(M, rhs, out, col, scale_tol):
    for b in prange(M.shape[0]):
        col[b] = _chol_solve_one(M[b], rhs[b], out[b], scale_tol)


def forward_dynamics_crba(model, q, qd, tau, t=0.0, f_ext=None):
    """qdd (..., nv) from M(q, t) qdd = tau - h(q, qd, t) + (external wrenches), by Cholesky of
    the CRBA mass matrix: O(nv^3), the same result as ``aba``.  Raises ej.SingularJointError
    (naming the joint, and the samples of a batch) where M is singular."""
    B, q2, (qd2, tau2), t1 = jm.states(model, q, ((qd, "qd"), (tau, "tau")), t)
    fext, has = jm.fext_array(model, f_ext, B)
    M, status, kmodel, kq = _mass(model, q2, t1)
    jm.raise_singular(kmodel, status, kq, t1, B, "forward_dynamics_crba")
    n, nv = q2.shape[0], model.nv
    zero = np.zeros((n, max(nv, 1)))
    ex = jm.expansion(model)
    if ex is None:
        h = run_rnea(model, q2, qd2, zero, t1, fext, has)
    else:
        full, Gq, gq, Gv = ex
        h = run_rnea(full, kq, jm.pad_v(qd2[:, :nv] @ Gv.T), np.zeros((n, max(full.nv, 1))), t1,
                     fext, has) @ Gv
    rhs = np.ascontiguousarray(tau2[:, :nv] - h)
    out = np.empty((n, nv))
    col = np.full(n, -1, dtype=np.int64)
    _chol_solve_batch(np.ascontiguousarray(M), rhs, out, col, 1e-13)
    if np.any(col >= 0):
        vjoint = np.repeat(np.arange(model.nbodies + 1), model.nv_joint)
        st = np.full((n, 2), -1, dtype=np.int64)
        bad = col >= 0
        st[bad, 0] = vjoint[col[bad]]
        st[bad, 1] = jm.MASS_MATRIX_SINGULAR
        jm.raise_singular(model, st, q2, t1, B, "forward_dynamics_crba")
    return out[0] if B is None else out
