"""The kernels of the dynamics derivatives (``derivatives``): one state, the single-state entry
and the batch, on preallocated workspaces.

    tau = ID(q, v, a, t):    dtau_dq, dtau_dv (the tangent sweeps), dtau_da = M (crba), dtau_dt
    qdd = FD(q, v, tau, t):  qdd = aba(q, v, tau), then at a = qdd
                             dqdd_dq = -M^-1 dtau_dq,  dqdd_dv = -M^-1 dtau_dv,  dqdd_dt = -M^-1 dtau_dt,
                             dqdd_dtau = M^-1 (M = L L^T by Cholesky, M^-1 column by column)

A state's own scratch is one flat float64 array (``scratch_size``): the sweeps' rows D
(``tangent_sweeps``), the affected-body marks, a copy of q and of v that the joints' own
differences perturb, qdd, a vector, and two nv x nv matrices.  The kernels allocate nothing.
"""
from numba import prange

from ..model import inputs
from .._jit import entry, jit, pjit
from .aba import aba_state
from .crba import chol_factor, chol_subst, crba_after
from .kinematics import forward
from .rnea import fext, rnea_forces
from .tangent_sweeps import direction, rows, time_direction
from ..model.layout import H_REC, model_view, record_view, scratch_view, vec
from ..model.layout import rows as table_rows
from ..core.spatial import inertia_mul, ld3, ld6, ld9, mtv, st6


def scratch_size(n1, nq, nv):
    """Entries of one state's scratch of the derivative kernels (see the module)."""
    return 6 * rows.py_func(n1, nv) + n1 + max(nq, 1) + 3 * nv + 2 * nv * nv


@jit
def _views(X, n1, nq, nv):
    """(D, aff, qp, vp, qdd, tmp, W0, W1): the named parts of one state's scratch X."""
    nd = rows(n1, nv)
    o = 6 * nd
    qn = max(nq, 1)
    return (table_rows(X, 0, nd, 6), vec(X, o, n1), vec(X, o + n1, qn), vec(X, o + n1 + qn, nv),
            vec(X, o + n1 + qn + nv, nv), vec(X, o + n1 + qn + 2 * nv, nv),
            table_rows(X, o + n1 + qn + 3 * nv, nv, nv), table_rows(X, o + n1 + qn + 3 * nv + nv * nv, nv, nv))


@jit
def _chol_inverse(M, L, e, Minv):
    """M^-1 into Minv (L, e: scratch), row by row (M is symmetric); False where M is not clearly
    positive definite."""
    n = M.shape[0]
    for x in range(n):
        for y in range(n):
            L[x, y] = M[x, y]
    if chol_factor(L, 1e-13) >= 0:
        return False
    for c in range(n):
        for x in range(n):
            e[x] = 0.0
        e[c] = 1.0
        chol_subst(L, e, Minv[c])
    return True


@jit
def _left_mul_neg(Minv, A, W):
    """A <- -Minv A (W: scratch of A's shape)."""
    n = Minv.shape[0]
    # row by row (contiguous), each entry summed over k in order
    for x in range(n):
        for y in range(A.shape[1]):
            W[x, y] = 0.0
        for k in range(n):
            c = Minv[x, k]
            for y in range(A.shape[1]):
                W[x, y] -= c * A[k, y]
    for x in range(n):
        for y in range(A.shape[1]):
            A[x, y] = W[x, y]


@jit
def rnea_derivatives_state(m, r, s, D, aff, JR, q, v, a, t, F, fb, want_t, qp, vp, tau, dq, dv, dt, M):
    """tau, dtau/dq, dtau/dv, M and (want_t) dtau/dt at (q, v, a, t)."""
    n1 = m.body_parent.shape[0]
    nv = dq.shape[0]
    has_f = F.shape[0] > 0
    forward(m, r, s, q, v, a, t, 2, has_f, False)
    rnea_forces(m, r, s, F, fb, a, tau)
    crba_after(m, r, s, M)
    IV = 9 * n1 + nv + 10
    for i in range(1, n1):
        st6(D, IV + i, inertia_mul(m.body_mass[i], ld3(m.body_hC, i), ld9(m.body_IC, i), ld6(r.vel, i)))
    if has_f:
        # each body's wrench in C axes (moment about the body origin, force)
        for i in range(1, n1):
            R = ld9(r.RC, i)
            st6(D, 7 * n1 + i, mtv(R, (fext(F, fb, i, 0), fext(F, fb, i, 1), fext(F, fb, i, 2)))
                + mtv(R, (fext(F, fb, i, 3), fext(F, fb, i, 4), fext(F, fb, i, 5))))
    for x in range(q.shape[0]):
        qp[x] = q[x]
    for x in range(v.shape[0]):
        vp[x] = v[x]
    for j in range(1, n1):
        for c in range(m.jnt_nv[j]):
            direction(m, r, s, D, aff, j, c, m.jnt_dofadr[j] + c, q, v, a, t, qp, vp, has_f, dq, dv)
    if want_t:
        time_direction(m, r, s, D, JR, q, v, a, t, qp, vp, has_f, dt)
    else:
        for x in range(dt.shape[0]):
            dt[x] = 0.0


@jit
def derivatives_state(m, r, s, X, JR, q, v, x, t, F, fb, kind, want_t, dq, dv, dt, MM):
    """One state: kind 0, x = qdd: dtau/d(q, v, t) and M; kind 1, x = tau: dqdd/d(q, v, t) and
    M^-1 at qdd = aba.  Returns (status, joint) (``inputs``)."""
    st, j = inputs.check(m, q, v, x, 2, t)
    if st != 0:
        return st, j
    n1 = m.body_parent.shape[0]
    nv = dq.shape[0]
    D, aff, qp, vp, qdd, tmp, W0, W1 = _views(X, n1, q.shape[0], nv)
    if kind == 0:
        rnea_derivatives_state(m, r, s, D, aff, JR, q, v, x, t, F, fb, want_t, qp, vp, tmp, dq, dv, dt, MM)
        return 0, -1
    st, j = aba_state(m, r, s, q, v, x, t, F, fb, False, qdd)
    if st != 0 and st != inputs.NEAR_SINGULAR:
        return st, j
    rnea_derivatives_state(m, r, s, D, aff, JR, q, v, qdd, t, F, fb, want_t, qp, vp, tmp, dq, dv, dt, W0)
    if not _chol_inverse(W0, W1, tmp, MM):
        return inputs.SINGULAR_MASS, -1
    _left_mul_neg(MM, dq, W1)
    _left_mul_neg(MM, dv, W1)
    for a in range(nv):
        s2 = 0.0
        for k in range(nv):
            s2 -= MM[a, k] * dt[k]
        tmp[a] = s2
    for a in range(nv):
        dt[a] = tmp[a]
    return 0, -1


@entry
def derivatives_one(mb, w, X, JR, q, v, x, t, F, kind, want_t, dq, dv, dt, MM):
    """The single-state entry: the workspace w (record, then scratch) and the derivative scratch X
    of one state; returns (status, joint)."""
    m = model_view(mb)
    r = record_view(mb, w, 0)
    s = scratch_view(mb, w, mb[H_REC])
    return derivatives_state(m, r, s, X, JR, q, v, x, t, F, 0, kind, want_t, dq, dv, dt, MM)


@jit
def derivatives_samples(mb, R, S, per_state, X, JR, Q, V, A, T, F, kind, want_t, DQ, DV, DT, MM, status, c,
                        nchunk):
    """The samples of chunk c of nchunk, each on the chunk's scratch (its own record where
    ``per_state``): bit for bit the single-state result."""
    B = Q.shape[0]
    m = model_view(mb)
    s = scratch_view(mb, S[c], 0)
    for b in range(c * B // nchunk, (c + 1) * B // nchunk):
        r = record_view(mb, R[b] if per_state else R[c], 0)
        fb = b if F.shape[0] > 1 else 0
        st, j = derivatives_state(m, r, s, X[c], JR, Q[b], V[b], A[b], T[b], F, fb, kind, want_t,
                                  DQ[b], DV[b], DT[b], MM[b])
        status[b, 0] = st
        status[b, 1] = j


@pjit
def derivatives_many(mb, R, S, per_state, X, JR, Q, V, A, T, F, kind, want_t, DQ, DV, DT, MM, status):
    """A batch: the chunks in parallel (``engine.n_chunks``)."""
    nchunk = S.shape[0]
    for c in prange(nchunk):
        derivatives_samples(mb, R, S, per_state, X, JR, Q, V, A, T, F, kind, want_t, DQ, DV, DT, MM, status, c,
                            nchunk)
