"""The joint-space mass matrix by the composite rigid body algorithm (Featherstone, RBDA
section 6.2) for any EJCE joint, and forward dynamics through it.

    M(q, t) = sum_i J_i^T I_i J_i + diag(armature),   computed as   I^c_i = I_i + sum_{children c} X_c^T I^c_c X_c,
    M[i, i] = S_i^T I^c_i S_i,   M[j, i] = S_j^T (X_..^T I^c_i S_i)   for each ancestor j of i

in each body's outboard joint frame C_i.  S depends on q (Euler angles, universal, spline and
coupled joints) and, for rheonomic joints, on t; it never depends on qd, and sigma does not enter M.

``forward_dynamics_crba`` solves M qdd = tau - h(q, qd, t) (+ J^T f_ext) by Cholesky, O(nv^3): a
cross-check of ``aba`` that reports the same singular configurations.
"""
import numpy as np
from numba import prange

from ..model import inputs
from .._jit import jit, pjit
from .kinematics import forward
from ..model.layout import views
from ..core.spatial import add21, ld21, ld3, ld6, ld9, rigid21, st21, sym_mul, sym_to_parent, xforce_T


@jit
def crba_state(m, r, s, q, t, full, M):
    """M of one state (the forward sweep to the joints, then ``crba_after``)."""
    forward(m, r, s, q, s.zv, s.zv, t, np.int64(0), np.bool_(False), full)
    crba_after(m, r, s, M)


@jit
def crba_one(mb, w, q, t, full, M):
    """``crba_state`` of one state on the one-state workspace w: a mass matrix whose compile holds
    the CRBA alone (``simulate`` computes the joint limits' stiffness from one; the public
    ``mass_matrix`` entry compiles every other one-state quantity with it)."""
    m, r, s = views(mb, w)
    crba_state(m, r, s, q, t, full, M)


@jit
def crba_after(m, r, s, M):
    """M from the joints of the record r (X_i, S_i): composite inertias inward, then each
    column block I^c_i S_i carried to the ancestors."""
    n1 = m.body_parent.shape[0]
    IC = s.IA
    F = s.W
    for i in range(1, n1):
        st21(IC, i, rigid21(m.body_mass[i], ld3(m.body_hC, i), ld9(m.body_IC, i)))
    for x in range(M.shape[0]):
        for y in range(M.shape[1]):
            M[x, y] = 0.0
    # composite inertias: children (higher indices) are complete before they reach the parent
    for i in range(n1 - 1, 0, -1):
        l = m.body_parent[i]
        if l > 0:
            add21(IC, l, sym_to_parent(ld9(r.E, i), ld3(r.d, i), ld21(IC, i)))
    for i in range(1, n1):
        vs = m.jnt_dofadr[i]
        nvj = m.jnt_nv[i]
        Ic = ld21(IC, i)
        # F = I^c_i S_i, one row per column of S, carried to each ancestor j as X^T F
        for k in range(nvj):
            Fk = sym_mul(Ic, ld6(r.S, vs + k))
            for x in range(6):
                F[k, x] = Fk[x]
        for k in range(nvj):
            for k2 in range(k, nvj):
                v = 0.0
                for x in range(6):
                    v += r.S[vs + k2, x] * F[k, x]
                M[vs + k2, vs + k] = v
                M[vs + k, vs + k2] = v
        j = i
        while nvj > 0 and m.body_parent[j] > 0:
            Ej = ld9(r.E, j)
            dj = ld3(r.d, j)
            for k in range(nvj):
                ft = xforce_T(Ej, dj, ld6(F, k))
                for x in range(6):
                    F[k, x] = ft[x]
            j = m.body_parent[j]
            vj = m.jnt_dofadr[j]
            for k in range(nvj):
                for a in range(m.jnt_nv[j]):
                    v = 0.0
                    for x in range(6):
                        v += r.S[vj + a, x] * F[k, x]
                    M[vj + a, vs + k] = v
                    M[vs + k, vj + a] = v
    # rotor inertias (armature) on the diagonal
    for k in range(M.shape[0]):
        M[k, k] += m.dof_armature[k]


@jit
def crba_checked(m, r, s, q, t, full, M):
    """``crba_state``, then ``rank_status``."""
    crba_state(m, r, s, q, t, full, M)
    return rank_status(m, r, s)


@jit
def rank_status(m, r, s):
    """The rank of every joint's Jacobian S_i in the record r: (SINGULAR_JOINT, joint) where one
    lost rank, (NEAR_SINGULAR, joint) near that, else (0, -1)."""
    st = 0
    j = -1
    for i in range(1, m.body_parent.shape[0]):
        if m.jnt_nv[i] > 0:
            resid = inputs.subspace_residual(r.S, m.jnt_dofadr[i], m.jnt_nv[i], s.W)
            if resid < inputs.SINGULAR_RANK:
                return inputs.SINGULAR_JOINT, i
            if resid < inputs.NEAR_RANK and st == 0:
                st = inputs.NEAR_SINGULAR
                j = i
    return st, j


@jit
def chol_factor(M, scale_tol):
    """Cholesky M = L L^T in place of M's lower triangle; returns the first column whose pivot is
    not clearly positive (-1: none; ``scale_tol`` relative to its diagonal, 0: any positive)."""
    n = M.shape[0]
    for j in range(n):
        s = M[j, j]
        for k in range(j):
            s -= M[j, k] * M[j, k]
        # a pivot lost to cancellation against its own diagonal: M is singular there
        if not (s > 0.0 and s > scale_tol * M[j, j]):
            return j
        ljj = np.sqrt(s)
        M[j, j] = ljj
        for i in range(j + 1, n):
            s2 = M[i, j]
            for k in range(j):
                s2 -= M[i, k] * M[j, k]
            M[i, j] = s2 / ljj
    return -1


@jit
def chol_subst(M, rhs, out):
    """x = (L L^T)^-1 rhs into out (which may be rhs itself), L in M's lower triangle
    (``chol_factor``): L y = rhs forward, then L^T x = y backward."""
    n = M.shape[0]
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


@jit
def _chol_solve(M, rhs, out, scale_tol):
    """Solve M x = rhs by Cholesky in place of M's lower triangle; returns the first column whose
    pivot is not clearly positive (-1: none; out is then NaN)."""
    j = chol_factor(M, scale_tol)
    if j >= 0:
        for x in range(M.shape[0]):
            out[x] = np.nan
        return j
    chol_subst(M, rhs, out)
    return -1


@pjit
def _chol_solve_batch(M, rhs, out, col, scale_tol):
    for b in prange(M.shape[0]):
        col[b] = _chol_solve(M[b], rhs[b], out[b], scale_tol)
