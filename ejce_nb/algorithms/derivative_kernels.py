"""The kernels of the dynamics derivatives (``derivatives``): one state, the single-state entry
and the batch, on preallocated workspaces.

    tau = ID(q, v, a, t):    dtau_dq, dtau_dv, dtau_da = M (the tangent sweeps), dtau_dt
    qdd = FD(q, v, tau, t):  qdd = aba(q, v, tau), then at a = qdd
                             dqdd_dq = -M^-1 dtau_dq,  dqdd_dv = -M^-1 dtau_dv,  dqdd_dt = -M^-1 dtau_dt,
                             dqdd_dtau = M^-1      (M = L^T L along the tree, each M^-1 A by its
                                                    solves, row operations along the tree's paths)

For a large model (``derivatives.PRODUCTS_NV``) the kernels stop at the factor L: M^-1 = L^-1 L^-T
(``inverse_factor``) and its products with dtau/dq, dtau/dv are nv^3 multiply-adds each, which
numpy's matmul (BLAS) does several times faster than row operations.

A state's own scratch is one flat float64 array (``scratch_size``): the sweeps' rows D, the world
sweep's rows T, columns C, composite inertias YC and body marks (``tangent_sweeps``), a copy of q
and of v that the joints' own differences perturb, qdd, a vector, the parents of the velocity
variables and their runs, two nv x nv matrices, and the nv x (3 nv + 1) right-hand sides of the
solves with M.  The kernels allocate nothing; a batch's chunks run on threads (``workspaces.run_chunks``).
"""
import numpy as np
from numba import types
from numba.extending import overload

from ..model import inputs
from .._jit import entry, jit, load_after
from ..core.ejce import PATHS, paths_kind, runtime_paths
from .aba import aba_state
from .kinematics import forward
from .rnea import rnea_forces
from .tangent_sweeps import column_rows, rnea_tangents, rows, time_direction, world_rows
from ..model.layout import H_REC, model_view, record_view, scratch_view, vec
from ..model.layout import rows as table_rows


# the kind of derivative_state that leaves M^-1's products to the caller
PRODUCTS = 2
# added to kind 1 or 2: x is already qdd = aba(q, v, tau) (a batch's ABA, run on lanes before)
QDD_GIVEN = 4


def scratch_size(n1, nq, nv):
    """Entries of one state's scratch of the derivative kernels (see the module)."""
    return (6 * (rows.py_func(n1, nv) + world_rows.py_func(n1, nv)) + column_rows.py_func() * nv + 14 * n1
            + max(nq, 1) + 5 * nv + 2 * nv * nv + nv * (3 * nv + 1))


@jit
def _views(X, n1, nq, nv):
    """(D, T, C, YC, mark, qp, vp, qdd, tmp, lam, run, W0, W1, WB): the named parts of one state's
    scratch X (WB: nv x (3 nv + 1), the right-hand sides [1 | dtau/dq | dtau/dv | dtau/dt] of M^-1)."""
    nd = rows(n1, nv)
    nt = world_rows(n1, nv)
    nc = column_rows()
    o = 6 * (nd + nt)
    C = table_rows(X, o, nc, nv)
    o += nc * nv
    YC = table_rows(X, o, n1, 13)
    mark = vec(X, o + 13 * n1, n1)
    o += 14 * n1
    qn = max(nq, 1)
    return (table_rows(X, 0, nd, 6), table_rows(X, 6 * nd, nt, 6), C, YC, mark,
            vec(X, o, qn), vec(X, o + qn, nv), vec(X, o + qn + nv, nv), vec(X, o + qn + 2 * nv, nv),
            vec(X, o + qn + 3 * nv, nv), vec(X, o + qn + 4 * nv, nv),
            table_rows(X, o + qn + 5 * nv, nv, nv), table_rows(X, o + qn + 5 * nv + nv * nv, nv, nv),
            table_rows(X, o + qn + 5 * nv + 2 * nv * nv, nv, 3 * nv + 1))


@jit(inline="always")
def _dof_parents(m, lam, run):
    """lam[k]: the velocity variable before k on the path to the root (-1: none), as a float:
    the previous one of k's joint, else the last one of the nearest ancestor joint that has any;
    run[k]: the first of the consecutive variables k, k - 1, ... along that path."""
    for i in range(1, m.body_parent.shape[0]):
        vs = m.jnt_dofadr[i]
        for k in range(vs + 1, vs + m.jnt_nv[i]):
            lam[k] = k - 1
        if m.jnt_nv[i] > 0:
            p = m.body_parent[i]
            while p > 0 and m.jnt_nv[p] == 0:
                p = m.body_parent[p]
            lam[vs] = m.jnt_dofadr[p] + m.jnt_nv[p] - 1 if p > 0 else -1
    for k in range(lam.shape[0]):
        run[k] = run[k - 1] if k > 0 and lam[k] == k - 1 else k


@jit
def ltl_factor(H, lam, run, M, scale_tol):
    """M = L^T L in H's lower triangle (H a copy of M), with the tree's sparsity: L[k, i] is
    non-zero only for i = k or an ancestor of k (Featherstone, RBDA section 6.5), O(nv d^2) for
    depth d, each update along a run of consecutive ancestors one vectorised loop (its index
    unsigned: no negative-index wrap-around); returns the first variable whose pivot is not
    clearly positive (-1: none; ``scale_tol`` relative to M's diagonal there)."""
    for k in range(H.shape[0] - 1, -1, -1):
        # a pivot lost to cancellation against its own diagonal: M is singular there
        if not (H[k, k] > 0.0 and H[k, k] > scale_tol * M[k, k]):
            return k
        a = np.sqrt(H[k, k])
        H[k, k] = a
        i = int(lam[k])
        while i >= 0:
            H[k, i] /= a
            i = int(lam[i])
        i = int(lam[k])
        while i >= 0:
            c = H[k, i]
            j = i
            while j >= 0:
                a0 = int(run[j])
                for jj in range(j - a0 + 1):
                    x = np.uint64(a0 + jj)
                    H[i, x] -= c * H[k, x]
                j = int(lam[a0])
            i = int(lam[i])
    return -1


@jit(inline="always")
def _row_axpy(A, dst, src, c):
    """Row dst of A less c times row src."""
    for y in range(A.shape[1]):
        A[dst, y] -= c * A[src, y]


@jit(inline="always")
def _row_scale(A, i, c):
    """Row i of A times c."""
    for y in range(A.shape[1]):
        A[i, y] *= c


@jit
def ltl_solve_rows(L, lam, A):
    """A <- M^-1 A for M = L^T L (``ltl_factor``): L^T Y = A, then L Z = Y, each a sequence of
    row operations along the tree's paths (whole rows of A at once: several right-hand sides side
    by side make longer, better vectorised rows)."""
    n = A.shape[0]
    for i in range(n - 1, -1, -1):
        _row_scale(A, i, 1.0 / L[i, i])
        j = int(lam[i])
        while j >= 0:
            _row_axpy(A, j, i, L[i, j])
            j = int(lam[j])
    for i in range(n):
        j = int(lam[i])
        while j >= 0:
            _row_axpy(A, i, j, L[i, j])
            j = int(lam[j])
        _row_scale(A, i, 1.0 / L[i, i])


@jit
def inverse_factor(mb, L, lam, run, row):
    """L <- L^-1 for the factor L of ``ltl_factor`` (lower triangular, so is its inverse), in place,
    row by row: row i of L^-1 = (e_i - sum_j L[i, j] L^-1[j]) / L[i, i] over i's ancestors j
    (``_dof_parents`` into lam, run), each row zero beyond its own column (nv^3 / 6
    multiply-adds for a chain); ``row`` (nv) holds row i of L meanwhile."""
    _dof_parents(model_view(mb), lam, run)
    n = L.shape[0]
    for i in range(n):
        for y in range(i + 1):
            row[y] = L[i, y]
        for y in range(n):
            L[i, y] = 0.0
        L[i, i] = 1.0
        j = int(lam[i])
        while j >= 0:
            c = row[j]
            for y in range(j + 1):
                L[i, y] -= c * L[j, y]
            j = int(lam[j])
        d = 1.0 / row[i]
        for y in range(i + 1):
            L[i, y] *= d


# the per-state functions are inlined where they are called: a call boundary would copy the model,
# record and scratch views (hundreds of array fields) on every state
@jit(inline="always")
def rnea_derivatives_state(m, r, s, D, T, C, YC, mark, JR, q, v, a, t, F, fb, full, want_t, qp, vp, tau, dq, dv, dt,
                           M):
    """tau, dtau/dq, dtau/dv, M and (want_t) dtau/dt at (q, v, a, t) (``full``: the model's joint paths,
    ``ejce.PATHS``)."""
    has_f = F.shape[0] > 0
    forward(m, r, s, q, v, a, t, np.int64(2), np.bool_(True), full)
    rnea_forces(m, r, s, F, fb, a, tau)
    for x in range(q.shape[0]):
        qp[x] = q[x]
    for x in range(v.shape[0]):
        vp[x] = v[x]
    rnea_tangents(m, r, s, D, T, C, YC, mark, q, v, a, t, qp, vp, F, fb, has_f, dq, dv, M, full)
    if want_t:
        time_terms(m, r, s, D, JR, q, v, a, t, qp, vp, F, fb, has_f, dt, full)
    else:
        for x in range(dt.shape[0]):
            dt[x] = 0.0


def _no_time(m, r, s, D, JR, q, v, a, t, qp, vp, F, fb, has_f, dt, full):
    for x in range(dt.shape[0]):
        dt[x] = 0.0


def _time(m, r, s, D, JR, q, v, a, t, qp, vp, F, fb, has_f, dt, full):
    time_direction(m, r, s, D, JR, q, v, a, t, qp, vp, F, fb, has_f, dt, full)


def time_terms(m, r, s, D, JR, q, v, a, t, qp, vp, F, fb, has_f, dt, full):
    """dtau/dt (``tangent_sweeps.time_direction``), not compiled for the models whose ``full`` is
    None: none of their joints moves with time."""
    return (_no_time if full is None else _time)(m, r, s, D, JR, q, v, a, t, qp, vp, F, fb, has_f, dt, full)


@overload(time_terms, jit_options={"forceinline": True})
def _time_terms(m, r, s, D, JR, q, v, a, t, qp, vp, F, fb, has_f, dt, full):
    return _no_time if isinstance(full, types.NoneType) else _time


@jit(inline="always")
def inverse_state(m, r, s, X, JR, q, v, x, t, F, fb, full, kind, want_t, dq, dv, dt, MM):
    """One state of kind 0 alone (x = qdd: dtau/d(q, v, t) and M): the kernels of inverse dynamics,
    which compile no ABA and no solve.  Returns (status, joint) (``inputs``)."""
    st, j = inputs.check(m, q, v, x, 2, t)
    if st != 0:
        return st, j
    D, T, C, YC, mark, qp, vp, qdd, tmp, lam, run, W0, W1, WB = _views(X, m.body_parent.shape[0], q.shape[0],
                                                                        dq.shape[0])
    rnea_derivatives_state(m, r, s, D, T, C, YC, mark, JR, q, v, x, t, F, fb, full, want_t, qp, vp, tmp, dq, dv, dt,
                           MM)
    return 0, -1


@jit(inline="always")
def derivatives_state(m, r, s, X, JR, q, v, x, t, F, fb, full, kind, want_t, dq, dv, dt, MM):
    """One state of any kind: kind 0, x = qdd: dtau/d(q, v, t) and M; kind 1, x = tau: dqdd/d(q, v, t) and
    M^-1 at qdd = aba; kind 2 (``PRODUCTS``), x = tau: dtau/d(q, v, t) at qdd = aba and the
    factor L of M = L^T L in MM's lower triangle, M^-1 = L^-1 L^-T and -M^-1 dtau/d(q, v, t) left
    to the caller (``inverse_factor``, then BLAS: ``derivatives.inverse_products``, for large
    nv); kind 1 or 2 plus ``QDD_GIVEN``: the same with x = qdd, the ABA done before.  Returns
    (status, joint) (``inputs``)."""
    st, j = inputs.check(m, q, v, x, 2, t)
    if st != 0:
        return st, j
    n1 = m.body_parent.shape[0]
    nv = dq.shape[0]
    D, T, C, YC, mark, qp, vp, qdd, tmp, lam, run, W0, W1, WB = _views(X, n1, q.shape[0], nv)
    given = kind >= QDD_GIVEN
    kind = kind - QDD_GIVEN if given else kind
    if kind != 0 and not given:
        st, j = aba_state(m, r, s, q, v, x, t, F, fb, full, qdd)
        if st != 0 and st != inputs.NEAR_SINGULAR:
            return st, j
    # one inlined copy of the sweeps serves every kind
    rnea_derivatives_state(m, r, s, D, T, C, YC, mark, JR, q, v, x if kind == 0 or given else qdd, t, F, fb, full, want_t,
                           qp, vp, tmp, dq, dv, dt, MM if kind == 0 else W0)
    if kind == 0:
        return 0, -1
    # M = L^T L along the tree, then M^-1 and -M^-1 (dtau/dq, dtau/dv, dtau/dt) by its solves
    for a in range(nv):
        for k in range(nv):
            W1[a, k] = W0[a, k]
    _dof_parents(m, lam, run)
    if ltl_factor(W1, lam, run, W0, 1e-13) >= 0:
        return inputs.SINGULAR_MASS, -1
    if kind == PRODUCTS:
        for a in range(nv):
            for k in range(nv):
                MM[a, k] = W1[a, k]
        return 0, -1
    # M^-1 [1 | dtau/dq | dtau/dv | dtau/dt] in one pass of solves: rows of 3 nv + 1, not four of nv
    for a in range(nv):
        for k in range(nv):
            WB[a, k] = 1.0 if a == k else 0.0
            WB[a, nv + k] = dq[a, k]
            WB[a, 2 * nv + k] = dv[a, k]
        WB[a, 3 * nv] = dt[a] if want_t else 0.0
    ltl_solve_rows(W1, lam, WB)
    for a in range(nv):
        for k in range(nv):
            MM[a, k] = WB[a, k]
            dq[a, k] = -WB[a, nv + k]
            dv[a, k] = -WB[a, 2 * nv + k]
        if want_t:
            dt[a] = -WB[a, 3 * nv]
    return 0, -1


def _kernels(full, fd):
    """The single-state entry and the batch kernel of the models whose joint paths are ``full``
    (``ejce.PATHS``) for inverse dynamics alone (``fd`` None: ``inverse_state``) or forward dynamics
    too (True: ``derivatives_state``): the kernels compile only those paths and kinds."""
    state = inverse_state if fd is None else derivatives_state

    def derivatives_one(mb, w, X, JR, q, v, x, t, F, kind, want_t, dq, dv, dt, MM):
        """The single-state entry: the workspace w (record, then scratch) and the derivative
        scratch X of one state; returns (status, joint)."""
        m = model_view(mb)
        r = record_view(mb, w, 0)
        s = scratch_view(mb, w, mb[H_REC])
        return state(m, r, s, X, JR, q, v, x, t, F, np.int64(0), runtime_paths(full), kind, want_t, dq, dv, dt, MM)

    def derivatives_samples(mb, R, S, per_state, X, JR, Q, V, A, T, F, kind, want_t, DQ, DV, DT, MM, status, c,
                            nchunk):
        """A batch's chunk c of nchunk (``workspaces.run_chunks`` runs the chunks on threads),
        each state on the chunk's scratch (its own record where ``per_state``): bit for bit the
        single-state result."""
        B = Q.shape[0]
        m = model_view(mb)
        s = scratch_view(mb, S[c], 0)
        for b in range(c * B // nchunk, (c + 1) * B // nchunk):
            r = record_view(mb, R[b] if per_state else R[c], 0)
            fb = b if F.shape[0] > 1 else 0
            st, j = state(m, r, s, X[c], JR, Q[b], V[b], A[b], T[b], F, fb, runtime_paths(full), kind, want_t, DQ[b],
                          DV[b], DT[b], MM[b])
            status[b, 0] = st
            status[b, 1] = j

    # the copies of the tangent sweeps that Numba caches with these kernels ran slower than the
    # sweeps' own code (benchmarks/README.md): a process that loads them from the cache loads the
    # sweeps first
    key = f"{paths_kind(full)}{'' if fd is None else '.fd'}"
    callees = (rnea_tangents,) if full is None else (rnea_tangents, time_direction)
    return (load_after(entry(derivatives_one), callees, key), load_after(jit(derivatives_samples), callees, key))


# DERIVATIVES_ONE[kind][fd], DERIVATIVES_SAMPLES[kind][fd]: the kernels of each kind of model
# (``Model._paths``), for inverse dynamics alone (fd 0: kind 0) or forward dynamics too (fd 1)
_BY = tuple(tuple(_kernels(full, fd) for fd in (None, True)) for full in PATHS)
DERIVATIVES_ONE = tuple(tuple(k[0] for k in by) for by in _BY)
DERIVATIVES_SAMPLES = tuple(tuple(k[1] for k in by) for by in _BY)
