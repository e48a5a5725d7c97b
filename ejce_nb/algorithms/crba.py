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

from . import engine
from ..model import inputs
from .._jit import call, entry, jit, pjit
from .kinematics import forward
from ..model.layout import REC_JOINT, model_view, record_view, scratch_view, views
from .rnea import _ND, inverse_dynamics
from ..core.spatial import add21, ld21, ld3, ld6, ld9, rigid21, st21, sym_mul, sym_to_parent, xforce_T


@jit
def crba_state(m, r, s, q, t, generic, M):
    forward(m, r, s, q, s.zv, s.zv, t, 0, False, generic)
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
def crba_checked(m, r, s, q, t, generic, M):
    """``crba_state``, then the rank of every joint's Jacobian: returns (SINGULAR_JOINT, joint)
    where one lost rank, (NEAR_SINGULAR, joint) near that, else (0, -1)."""
    crba_state(m, r, s, q, t, generic, M)
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


@entry
def crba_one(mb, w, q, t, M):
    m, r, s = views(mb, w)
    generic = s.flags[0] != 0.0
    st, j = inputs.check(m, q, q, q, 0, t)
    if st != 0:
        r.hdr[REC_JOINT] = j
        return st
    crba_state(m, r, s, q, t, generic, M)
    return 0


@jit
def crba_samples(mb, R, S, per_state, Q, T, generic, rank, M, status, c, nchunk):
    """M of the samples of chunk c of nchunk; with ``rank``, a sample whose joint Jacobians
    lose rank is marked."""
    B = Q.shape[0]
    m = model_view(mb)
    s = scratch_view(mb, S[c], 0)
    for b in range(c * B // nchunk, (c + 1) * B // nchunk):
        r = record_view(mb, R[b] if per_state else R[c], 0)
        st, j = inputs.check(m, Q[b], Q[b], Q[b], 0, T[b])
        if st == 0:
            if rank:
                st, j = crba_checked(m, r, s, Q[b], T[b], generic, M[b])
            else:
                crba_state(m, r, s, Q[b], T[b], generic, M[b])
        status[b, 0] = st
        status[b, 1] = j


@pjit
def crba_many(mb, R, S, per_state, Q, T, generic, rank, M, status):
    """M of every sample (``crba_samples``), the chunks in parallel."""
    nchunk = S.shape[0]
    for c in prange(nchunk):
        crba_samples(mb, R, S, per_state, Q, T, generic, rank, M, status, c, nchunk)


def _mass(model, q2, t1, B, data, generic=False):
    """M of the kernel model (n, nv, nv), its status, the kernel model and its coordinates."""
    km, mim = inputs.kernel_model(model)
    qk = q2 if mim is None else mim.q(q2)
    n = q2.shape[0]
    shape = (n, km.nv, km.nv)
    if data is not None and mim is None:
        M = data._result("M", shape[1:])[None] if B is None else data._result("M", shape)
    else:
        M = np.empty(shape)
    status = engine.status_array(n)
    if B is None:
        w = data._w if data is not None else engine.one_workspace(km)
        engine.set_generic(km, w, generic)
        status[0, 0] = call(crba_one, km._mb, w, qk[0], t1[0], M[0])
        engine.set_generic(km, w, False)
        status[0, 1] = int(w[REC_JOINT])
        if data is None:
            engine.release(km, w)
    else:
        R, S, per_state, token = engine.batch_workspace(km, n, data)
        crba_many(km._mb, R, S, per_state, qk, t1, generic, False, M, status)
        engine.release_batch(token)
    if mim is not None:
        M = mim.mass(M)
    return M, status, km, qk


def mass_matrix(model, q, t=0.0, data=None, errors="raise", condition=False):
    """Joint-space mass matrix M(q, t) (..., nv, nv), symmetric; positive definite except where a
    joint's Jacobian loses rank (gimbal lock) or a subtree is massless, where it is returned as
    it is (positive semi-definite): ``aba`` and ``forward_dynamics_crba`` report those.

    ``condition=True`` also returns M's condition number (2-norm; inf where M is singular),
    a float or (B,): ``(M, cond)`` (``(M, cond, status)`` with ``errors="flag"``)."""
    if condition:
        res = joint_space_inertia(model, q, t, data, errors)
        M = res[0] if errors == "flag" else res
        # flagged samples (NaN rows) get a NaN condition, the others M's
        M3 = M.reshape((-1,) + M.shape[-2:])
        ok = np.isfinite(M3).all(axis=(1, 2))
        c3 = np.full(M3.shape[0], np.nan)
        if ok.any():
            with np.errstate(all="ignore"):
                c3[ok] = np.linalg.cond(M3[ok]) if M3.shape[-1] else 1.0
            c3[ok] = np.where(np.isnan(c3[ok]), np.inf, c3[ok])
        cond = c3.reshape(M.shape[:-2])
        cond = float(cond) if np.ndim(cond) == 0 else cond
        return (M, cond, res[1]) if errors == "flag" else (M, cond)
    if type(q) is _ND and q.ndim == 1 and type(t) is float:
        M = engine.one_state(crba_one, model, data, errors, "M", (model.nv, model.nv), q, t)
        if M is not None:
            return engine.flagged(errors, M)
    return joint_space_inertia(model, q, t, data, errors)


def joint_space_inertia(model, q, t=0.0, data=None, errors="raise", generic=False):
    """``mass_matrix`` through the input layer (any shapes, mimic joints, data=, errors=)."""
    inputs.check_errors_arg(errors)
    B, q2, _, t1 = inputs.states(model, q, (), t)
    if data is not None:
        data._check(model, B)
    M, status, _, _ = _mass(model, q2, t1, B, data, generic)
    if errors == "flag":
        M[status[:, 0] != 0] = np.nan
    return inputs.flag_or_raise(errors, model, status, "mass_matrix", ["q"], [q2], t1, B, inputs.unbatch(B, M))


@jit
def _chol_solve(M, rhs, out, scale_tol):
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
        col[b] = _chol_solve(M[b], rhs[b], out[b], scale_tol)


def forward_dynamics_crba(model, q, qd, tau, t=0.0, f_ext=None, errors="raise"):
    """qdd (..., nv) from M(q, t) qdd = tau - h(q, qd, t) + (external wrenches), by Cholesky of
    the CRBA mass matrix: O(nv^3), the same result as ``aba``.  Raises ej.SingularJointError
    (naming the joint, and the samples of a batch) where M is singular."""
    inputs.check_errors_arg(errors)
    B, q2, (qd2, tau2), t1 = inputs.states(model, q, ((qd, "qd"), (tau, "tau")), t)
    n, nv = q2.shape[0], model.nv
    km, mim = inputs.kernel_model(model)
    qk = q2 if mim is None else mim.q(q2)
    Mk = np.empty((n, km.nv, km.nv))
    status = engine.status_array(n)
    R, S, per_state, token = engine.batch_workspace(km, n, None)
    if n == 1:
        # one state on this thread (no thread pool to wake)
        crba_samples(km._mb, R, S, per_state, qk, t1, False, True, Mk, status, 0, 1)
    else:
        crba_many(km._mb, R, S, per_state, qk, t1, False, True, Mk, status)
    engine.release_batch(token)
    M = Mk if mim is None else mim.mass(Mk)
    if B is None:
        # one state: the serial kernels (no thread pool to wake)
        h = inverse_dynamics(model, q2[0], qd2[0], None, float(t1[0]), f_ext, errors="flag")[0][None]
    else:
        h = inverse_dynamics(model, q2, qd2, None, t1, f_ext, errors="flag")[0]
    rhs = np.ascontiguousarray(tau2 - h)
    out = np.empty((n, nv))
    col = np.full(n, -1, dtype=np.int64)
    if n == 1:
        col[0] = _chol_solve(np.array(M[0]), rhs[0], out[0], 1e-13)
    else:
        _chol_solve_batch(np.ascontiguousarray(M), rhs, out, col, 1e-13)
    vjoint = np.repeat(np.arange(model.nbodies + 1), model.jnt_nv)
    for b in np.nonzero((col >= 0) & ((status[:, 0] == 0) | (status[:, 0] == inputs.NEAR_SINGULAR)))[0]:
        status[b] = (inputs.SINGULAR_MASS, vjoint[col[b]])
    out[(status[:, 0] != 0) & (status[:, 0] != inputs.NEAR_SINGULAR)] = np.nan
    fin = np.isfinite(tau2).all(axis=1) & np.isfinite(qd2).all(axis=1)
    status[(status[:, 0] == 0) & ~fin] = (inputs.NONFINITE, -1)
    return inputs.flag_or_raise(errors, model, status, "forward_dynamics_crba", ["q", "qd", "tau"],
                                [q2, qd2, tau2], t1, B, inputs.unbatch(B, out))
