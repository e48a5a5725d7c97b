"""Dynamics of a tree closed by loop joints (``ModelBuilder.add_loop``), with the constraint
terms of ``reference`` (Jc v' + bc = 0: the acceleration-level loop constraints).  Forward
dynamics is the Lagrange-multiplier system (Featherstone, RBDA ch. 8)

    M v' + h = tau + Jc^T lam,     Jc v' + bc = 0,

solved by Cholesky of M and of the (m x m) operational inverse inertia Jc M^-1 Jc^T (compiled,
one state per call of ``kernel.constrained_state``; a batch in parallel).  The constraint
wrench of loop l on body b, [moment about o_B; force] in A axes (its opposite on body a), is
N_c lam_l.  A rank-deficient Jc (redundant or singular closures) is reported by loop and
direction, or solved in the least-squares sense (minimum-norm lam) with ``redundant="lstsq"``.
A state the kernel does not finish (bad input, a singular closure joint, an error to report)
runs the reference path here (``_solve_state``), which raises the documented error.
"""
import numpy as np

from . import kernel as ck
from ...calls import workspaces
from .reference import (ConstraintError, _closure_all, _closures, _complement, _cross, _frame, _require_loops, _skew,
                       closure_tree, relative_pose, sweep, world_jacobians)
from ...calls.python_layer import paths
from ...calls.kernels import NO_FORCE
from ...model import inputs
from ...model.couplers import coupled_chunks

# rank threshold of the constraint Jacobian, relative to its largest singular value
RANK_TOL = ck.RANK_TOL
_AXES = ("rotation about x", "rotation about y", "rotation about z",
         "translation along x", "translation along y", "translation along z")
__all__ = ["ConstraintError", "LoopTerms", "ConstrainedDynamics", "loop_terms", "constrained_dynamics",
           "constrained_inverse_dynamics"]


class LoopTerms:
    """The constraint terms of every loop at one state.

    ``Jc`` (nc, nv), ``bc`` (nc,): Jc v' + bc = 0 is the acceleration constraint; ``basis``: per
    loop the (6, nc_l) complement basis N_c (A axes); ``rows``: per loop its slice of rows;
    ``qc``, ``vc``: the closure coordinates and velocities; ``position_error`` (per loop, 6:
    N_c N_c^T of the pose error; 0 when closed), ``velocity_error`` (nc,): Jc v + N_c^T (s - sigma_c);
    ``M`` (nv, nv), ``h`` (nv,): the tree's mass matrix and nonlinear effects at the state;
    ``position_residual`` / ``velocity_residual``: the max norms of the pose and velocity
    errors."""

    def __init__(self, **kw):
        self.__dict__.update(kw)

    @property
    def position_residual(self):
        return max((float(np.linalg.norm(e)) for e in self.position_error), default=0.0)

    @property
    def velocity_residual(self):
        return float(np.max(np.abs(self.velocity_error))) if self.velocity_error.size else 0.0


def loop_terms(model, q, qd, t=0.0, qc0=None):
    """``LoopTerms`` of a loop model at one state (q (nq,), qd (nv,), t): the constraint Jacobian
    Jc (nc, nv), the acceleration bias bc (nc,) and the residuals (``ModelBuilder.add_loop``
    states the constraint), with the tree's mass matrix ``M`` and nonlinear effects ``h`` of the
    same sweep.  ``qc0``: closure coordinates to start their
    search from (e.g. the previous state's)."""
    _require_loops(model, "loop_terms")
    q = np.ascontiguousarray(q, dtype=float)
    qd = np.ascontiguousarray(qd, dtype=float)
    t = float(t)
    if q.shape != (model.nq,) or qd.shape != (model.nv,):
        raise ValueError(f"loop_terms: q and qd must have shapes ({model.nq},) and ({model.nv},), got {q.shape}, "
                         f"{qd.shape}")
    sw = sweep(model, q, qd, t)
    kin = sw["forward_kinematics"]
    qcs, errs, cterms = _closures(model, relative_pose(model, q, t, kin), qc0)
    nv = model.nv
    jac = world_jacobians(model, sw, [b for L in model.loops for b in (L.body_a, L.body_b)], q, t)
    nl = len(model.loops)
    geo, vcs = [None] * nl, [None] * nl
    for k, (L, qc) in enumerate(zip(model.loops, qcs)):
        RA, oA, dA, wa, vA, ala, aA = _frame(kin, L.body_a, L.placement_a, True)
        RB, oB, dB, wb, vB, alb, aB = _frame(kin, L.body_b, L.placement_b, True)
        Ja, Jb = jac[L.body_a], jac[L.body_b]
        D = oB - oA
        JvA = Ja[3:] - _skew(dA) @ Ja[:3]
        JvB = Jb[3:] - _skew(dB) @ Jb[:3]
        G = np.vstack([RA.T @ (Jb[:3] - Ja[:3]), RA.T @ (JvB - JvA + _skew(D) @ Ja[:3])])
        dv = vB - vA
        trel = np.concatenate([RA.T @ (wb - wa), RA.T @ (dv - _cross(wa, D))])
        gam = np.concatenate([RA.T @ (alb - ala - _cross(wa, wb - wa)),
                              RA.T @ (aB - aA - _cross(ala, D) - 2.0 * _cross(wa, dv)
                                      + _cross(wa, _cross(wa, D)))])
        Jc, sig = cterms[k]
        if Jc.shape[1]:
            vcs[k] = np.linalg.lstsq(Jc, trel - sig, rcond=None)[0]
        else:
            Jc, sig, vcs[k] = np.zeros((6, 0)), np.zeros(6), np.zeros(0)
        geo[k] = (G, trel, gam, Jc, sig)
    bcs = [np.zeros(6) if vcs[k].size == 0 else x[2].copy() for k, x in enumerate(_closure_all(model, qcs, vcs))]
    rows, blocks, bias, verr, bases, perr = [], [], [], [], [], []
    r0 = 0
    for k in range(nl):
        G, trel, gam, Jc, sig = geo[k]
        e = errs[k]
        N = _complement(Jc)
        blocks.append(N.T @ G)
        bias.append(N.T @ (gam - bcs[k]))
        verr.append(N.T @ (trel - sig))
        bases.append(N)
        perr.append(N @ (N.T @ e))
        rows.append(slice(r0, r0 + N.shape[1]))
        r0 += N.shape[1]
    Jc = np.vstack(blocks) if blocks else np.zeros((0, nv))
    return LoopTerms(Jc=Jc, bc=np.concatenate(bias) if bias else np.zeros(0), basis=bases, rows=rows,
                     qc=qcs, vc=vcs, position_error=perr,
                     velocity_error=np.concatenate(verr) if verr else np.zeros(0),
                     M=sw["mass_matrix"], h=sw["rnea"])


def _direction_names(model, lt, y):
    """Names of the loop directions a left null vector y of Jc (Jc^T y = 0) combines."""
    parts = []
    for L, N, rs in zip(model.loops, lt.basis, lt.rows):
        yl = y[rs]
        if np.linalg.norm(yl) < 1e-6:
            continue
        d = N @ yl
        k = int(np.argmax(np.abs(d)))
        parts.append(f"loop {L.name!r}: {_AXES[k]} of its frame A (direction {np.round(d / np.linalg.norm(d), 6).tolist()})")
    return parts


def _rank_check(model, lt, redundant):
    Jc = lt.Jc
    if Jc.shape[0] == 0:
        return Jc.shape[0]
    s = np.linalg.svd(Jc, compute_uv=False)
    smax = s[0] if s.size else 0.0
    rank = int(np.sum(s > RANK_TOL * max(smax, 1e-300))) if smax > 0 else 0
    if rank < Jc.shape[0] and redundant == "raise":
        U = np.linalg.svd(Jc, full_matrices=True)[0]
        names = []
        for c in range(rank, Jc.shape[0]):
            names += _direction_names(model, lt, U[:, c])
        raise ConstraintError(
            f"the loop constraint Jacobian has rank {rank} of {Jc.shape[0]} rows (redundant or singular closures): "
            + "; ".join(dict.fromkeys(names))
            + ". Close the loop with a joint that frees these directions, or pass redundant='lstsq' "
              "(least-squares constraint forces, exact accelerations where the constraints are consistent)")
    return rank


def _check_redundant(redundant):
    if redundant not in ("raise", "lstsq"):
        raise ValueError(f"redundant must be 'raise' or 'lstsq', got {redundant!r}")


class ConstrainedDynamics:
    """Result of ``ej.constrained_dynamics``: ``qdd`` (nv,), ``tau_constraint`` (nv,) = Jc^T lam,
    ``wrench`` (n_loops, 6): each loop's constraint wrench on body_b, [moment about o_B; force] in
    frame A's axes (its opposite acts on body_a), ``lam`` (nc,), ``rank`` of Jc, ``residual``
    (max |Jc qdd + bc|), and the ``terms`` (``LoopTerms``).  A batch stacks them on a leading axis
    (``terms`` and ``lam`` then lists).  ``terms`` and ``lam`` are made when first read (from the
    state, its closure coordinates and the wrench: lam_l = N_l^T wrench_l, N_l orthonormal)."""

    def __init__(self, lazy=None, **kw):
        self.__dict__.update(kw)
        self._lazy = lazy

    def _made(self, name):
        if name not in self.__dict__:
            self.__dict__["terms"], self.__dict__["lam"] = self._lazy()
        return self.__dict__[name]

    terms = property(lambda self: self._made("terms"))
    lam = property(lambda self: self._made("lam"))

    def __repr__(self):
        return f"<ConstrainedDynamics qdd{np.shape(self.qdd)}, {len(np.atleast_1d(self.rank))} state(s)>"


def _solve_state(model, q, qd, tau, t, redundant, qc0=None, terms=None):
    lt = loop_terms(model, q, qd, t, qc0) if terms is None else terms
    rank = _rank_check(model, lt, redundant)
    Lm = np.linalg.cholesky(lt.M)
    Jc = lt.Jc
    # M^-1 [tau - h, Jc^T] by one pair of triangular solves
    X = np.linalg.solve(Lm.T, np.linalg.solve(Lm, np.column_stack([tau - lt.h, Jc.T])))
    a0 = X[:, 0]
    if Jc.shape[0]:
        MJ = X[:, 1:]
        A = Jc @ MJ
        rhs = -(Jc @ a0 + lt.bc)
        if rank == Jc.shape[0]:
            lam = np.linalg.solve(A, rhs)
        else:
            lam = np.linalg.lstsq(A, rhs, rcond=RANK_TOL)[0]
        qdd = a0 + MJ @ lam
    else:
        lam = np.zeros(0)
        qdd = a0
    wr = np.array([N @ lam[rs] for N, rs in zip(lt.basis, lt.rows)]).reshape(len(model.loops), 6)
    res = float(np.max(np.abs(Jc @ qdd + lt.bc))) if Jc.shape[0] else 0.0
    return dict(qdd=qdd, tau_constraint=Jc.T @ lam, wrench=wr, lam=lam, rank=rank, residual=res, terms=lt)


def _stack(results):
    out = {}
    for k in results[0]:
        vals = [r[k] for r in results]
        out[k] = vals if k in ("terms", "lam") else np.array(vals)
    return out


def _states(model, q, qd, x, nx, names, finite=True):
    q = np.asarray(q, dtype=float)
    qd = np.asarray(qd, dtype=float)
    x = np.zeros(nx) if x is None else np.asarray(x, dtype=float)
    single = q.ndim == 1
    Q, V = np.atleast_2d(q), np.atleast_2d(qd)
    X = np.broadcast_to(x, (Q.shape[0], nx)) if x.ndim == 1 else x
    for a, n, name in ((Q, model.nq, names[0]), (V, model.nv, names[1]), (X, nx, names[2])):
        if a.ndim != 2 or a.shape != (Q.shape[0], n):
            raise ValueError(f"{name}: expected shape ({n},) or ({Q.shape[0]}, {n}), got {a.shape}")
        if finite and not np.all(np.isfinite(a)):
            raise ValueError(f"{name}: NaN or inf entries")
    # writeable C-contiguous float64, the one type the kernels are compiled for (a broadcast or
    # read-only view would compile them a second time)
    return single, *(inputs.real_array(a, nm) for a, nm in zip((Q, V, X), names))


# ---------------------------------------------------------------------------- the compiled path
def prepare(model):
    """The kernel's tables of a loop model, made once: its closure tree (``reference.closure_tree``),
    per loop LI = (body_a, body_b, closure joint, 0, nc_l, start of its unit quaternion in q_c or
    -1) and LF = (placement_a rotation, translation, placement_b rotation, translation), the
    neutral q_c, the workspace offsets, the tree the kernel runs (``km``: the expansion of a model
    with couplers, with their ``couplers.Coupled`` record ``cp``; else the model and None) and a
    pool of one-state workspaces."""
    p = model.__dict__.get("_closure_kernel")
    if p is None:
        ct = closure_tree(model)
        km = model.kernel_model()
        nl = len(model.loops)
        LI = np.zeros((nl, 6), dtype=np.int64)
        LF = np.zeros((nl, 24))
        qb = dict(ct.quaternion_blocks())
        for k, L in enumerate(model.loops):
            j = k + 1
            LI[k] = (L.body_a, L.body_b, j, 0, 6 - int(ct.nv_joint[j]), qb[j].start if j in qb else -1)
            LF[k] = np.concatenate([np.ravel(L.placement_a.rotation), L.placement_a.translation,
                                    np.ravel(L.placement_b.rotation), L.placement_b.translation])
        coupled = km is not model
        OFF, size = ck.offsets(model.nbodies + 1, model.nv, nl, int(LI[:, 4].sum()), ct.nbodies + 1, ct.nv,
                               (km.nq, km.nv) if coupled else None)
        p = model.__dict__["_closure_kernel"] = dict(
            ct=ct, LI=LI, LF=LF, qn=ct.neutral(), OFF=OFF, size=size, km=km, full=paths(km), cfull=paths(ct),
            cp=coupled_chunks(model, (km.nq, km.nv), 1)[0] if coupled else None, pool=[])
    return p


def _outputs(model, p, B):
    nv = model.nv
    return (np.empty((B, nv)), np.empty((B, nv)), np.empty((B, len(model.loops), 6)), np.empty((B, p["ct"].nq)),
            np.empty((B, 5)), np.empty((B, nv)))


def kernel_one(model, q, v, tau, t, lstsq):
    """[qdd, Jc^T lam, wrench, q_c, (status, rank, residual, position residual, velocity
    residual), velocity projection's correction] of one state (float64 arrays of the model's
    shapes) by ``kernel.constrained_state``."""
    p = prepare(model)
    try:
        w, cw, ws = p["pool"].pop()
    except IndexError:
        w, cw, ws = workspaces.new_workspace(p["km"]), workspaces.new_workspace(p["ct"]), np.zeros(p["size"])
    out = [x[0] for x in _outputs(model, p, 1)]
    ck.constrained_state(p["km"]._mb, w, p["ct"]._mb, cw, p["full"], p["cfull"], p["LI"], p["LF"], p["qn"],
                         p["OFF"], NO_FORCE, q, v, tau, t, lstsq, ws, *out, p["cp"])
    p["pool"].append((w, cw, ws))
    return out


def kernel_many(model, Q, V, TAU, T, lstsq):
    """``kernel_one`` of every state of a batch (Q (B, nq), V, TAU (B, nv), T (B,)), in parallel
    chunks: (QDD, TC, WR, QC, SC, DV), each row bit for bit that of ``kernel_one``."""
    p = prepare(model)
    B = Q.shape[0]
    nchunk = workspaces.n_chunks(B)
    W = np.zeros((nchunk, workspaces.new_workspace(p["km"]).shape[0]))
    CW = np.zeros((nchunk, workspaces.new_workspace(p["ct"]).shape[0]))
    WS = np.zeros((nchunk, p["size"]))
    out = _outputs(model, p, B)
    ck.constrained_many(p["km"]._mb, W, p["ct"]._mb, CW, p["full"], p["cfull"], p["LI"], p["LF"], p["qn"], p["OFF"],
                        NO_FORCE, Q, V, TAU, T, lstsq, WS, *out, p["cp"])
    return out


def _terms_and_lam(model, q, qd, t, qc, wrench):
    """The ``LoopTerms`` at the state (closure search from the kernel's q_c) and lam in their basis."""
    ct = prepare(model)["ct"]
    qc0 = [qc[int(ct.q_start[k + 1]):int(ct.q_start[k + 1] + ct.nq_joint[k + 1])] for k in range(len(model.loops))]
    lt = loop_terms(model, q, qd, t, qc0)
    lam = np.concatenate([N.T @ w for N, w in zip(lt.basis, wrench)]) if lt.basis else np.zeros(0)
    return lt, lam


def constrained_qdd(model, q, qd, tau, t, redundant, qc0=None):
    """(qdd, (position residual, velocity residual), dv) of one state (arrays of the model's
    shapes; no batch), dv the velocity projection's correction (``project_velocity``: qd + dv),
    by the kernel; where it does not finish, the reference path's (dv None)."""
    q, qd, tau = (np.ascontiguousarray(x, dtype=float) for x in (q, qd, tau))
    qdd, _, _, _, sc, dv = kernel_one(model, q, qd, tau, float(t), redundant == "lstsq")
    if sc[0] == 0:
        return qdd, (sc[3], sc[4]), dv
    r = _solve_state(model, q, qd, tau, t, redundant, qc0)
    return r["qdd"], (r["terms"].position_residual, r["terms"].velocity_residual), None


def constrained_dynamics(model, q, qd, tau=None, t=0.0, redundant="raise"):
    """Forward dynamics of a model with loop closures: the accelerations qdd that satisfy the
    acceleration-level loop constraints exactly, ``Jc qdd + bc = 0``, and the constraint forces,
    from ``M qdd + h = tau + Jc^T lam`` (Cholesky of M and of ``Jc M^-1 Jc^T``).  ``q`` (nq,) /
    ``qd`` (nv,) / ``tau`` (nv,; default zero) or a batch (B, ...); returns
    ``ConstrainedDynamics``, whose ``qdd`` (..., nv) satisfies ``Jc qdd + bc = 0`` to rounding.
    One state is one call of a compiled kernel (the tree's sweep, CRBA, RNEA, the closures'
    Gauss-Newton and EJCE terms, the KKT solve); a batch (B, nq) runs its states in parallel,
    each equal to its single call bitwise, whatever the thread count.  ``redundant``: "raise" (a
    rank-deficient Jc, from redundant closures or a singular configuration, raises
    ``ConstraintError`` naming each loop and direction) or "lstsq" (minimum-norm multipliers;
    accelerations exact where the constraints are consistent).  A model with couplers runs on
    its expansion, reduced by the couplers' Jacobian G (M = G^T M_full G, Jc = Jc_full G)."""
    _require_loops(model, "constrained_dynamics")
    _check_redundant(redundant)
    lstsq = redundant == "lstsq"
    tau1 = np.zeros(model.nv) if tau is None else tau
    if type(t) is float and _one_state(model, q, qd, tau1):
        # one state of float64 arrays: straight to the kernel
        out = kernel_one(model, q, qd, tau1, t, lstsq)
        if out[4][0] == 0:
            return _single(model, q, qd, t, out)
    single, Q, V, T = _states(model, q, qd, tau, model.nv, ("q", "qd", "tau"), finite=False)
    B = Q.shape[0]
    ts = inputs.real_array(np.broadcast_to(np.asarray(t, dtype=float), (B,)), "t")
    if single:
        out = kernel_one(model, Q[0], V[0], T[0], float(ts[0]), lstsq)
        if out[4][0] == 0:
            return _single(model, Q[0], V[0], float(ts[0]), out)
        QDD, TC, WR, QC, SC, _ = (x[None] for x in out)
    else:
        QDD, TC, WR, QC, SC, _ = kernel_many(model, Q, V, T, ts, lstsq)
    known = {}
    for b in np.flatnonzero(SC[:, 0] != 0):
        if SC[b, 0] == ck.ST_INPUT:
            _states(model, q, qd, tau, model.nv, ("q", "qd", "tau"))
        # the reference path: it raises the documented error, or computes the state
        r = _solve_state(model, Q[b], V[b], T[b], float(ts[b]), redundant)
        if single:
            return ConstrainedDynamics(**r)
        QDD[b], TC[b], WR[b], SC[b, 1], SC[b, 2] = r["qdd"], r["tau_constraint"], r["wrench"], r["rank"], r["residual"]
        known[b] = (r["terms"], r["lam"])

    def lazy():
        made = [known[b] if b in known else _terms_and_lam(model, Q[b], V[b], float(ts[b]), QC[b], WR[b])
                for b in range(B)]
        return [x[0] for x in made], [x[1] for x in made]
    return ConstrainedDynamics(lazy, qdd=QDD, tau_constraint=TC, wrench=WR, rank=SC[:, 1].astype(int),
                               residual=SC[:, 2].copy())


def _one_state(model, q, qd, tau):
    """Whether (q, qd, tau) are one state's float64 C-contiguous arrays of the model's shapes."""
    for x, n in ((q, model.nq), (qd, model.nv), (tau, model.nv)):
        if not (type(x) is np.ndarray and x.dtype == np.float64 and x.shape == (n,) and x.flags.c_contiguous
                and x.flags.writeable):
            return False
    return True


def _single(model, q, qd, t, out):
    """The ``ConstrainedDynamics`` of one state from the kernel's outputs (its terms made from a
    copy of the state when first read)."""
    qdd, tc, wr, qc, sc, _ = out
    q, qd = q.copy(), qd.copy()
    return ConstrainedDynamics(lambda: _terms_and_lam(model, q, qd, t, qc, wr), qdd=qdd, tau_constraint=tc,
                               wrench=wr, rank=int(sc[1]), residual=float(sc[2]))


def constrained_inverse_dynamics(model, q, qd, qdd_independent, independent, t=0.0, redundant="raise"):
    """Inverse dynamics of a loop model: given a state on the constraints and the accelerations of
    the independent velocity variables ``independent`` (indices or velocity names), the
    accelerations of all variables (from ``Jc qdd + bc = 0``) and the joint forces ``tau`` (nv,
    nonzero only at the independent variables) with the constraint forces that produce them:
    ``M qdd + h = tau + Jc^T lam``.  Returns ``ConstrainedDynamics`` with ``tau`` added.
    ``ConstraintError`` when the independent variables do not determine the others."""
    _require_loops(model, "constrained_inverse_dynamics")
    _check_redundant(redundant)
    names = list(model.velocity_names)
    idx = []
    for x in np.atleast_1d(independent).tolist():
        if isinstance(x, str):
            if x not in names:
                raise ValueError(f"independent: no velocity variable named {x!r}")
            x = names.index(x)
        if not 0 <= int(x) < model.nv:
            raise ValueError(f"independent: index {x} out of range (nv = {model.nv})")
        idx.append(int(x))
    I = np.array(idx, dtype=int)
    Dp = np.array([k for k in range(model.nv) if k not in set(idx)], dtype=int)
    single, Q, V, A = _states(model, q, qd, qdd_independent, len(I), ("q", "qd", "qdd_independent"))
    ts = inputs.real_array(np.broadcast_to(np.asarray(t, dtype=float), (Q.shape[0],)), "t")
    out = []
    for b in range(Q.shape[0]):
        lt = loop_terms(model, Q[b], V[b], float(ts[b]))
        rank = _rank_check(model, lt, redundant)
        Jc = lt.Jc
        qdd = np.zeros(model.nv)
        qdd[I] = A[b]
        rhs = -(lt.bc + Jc[:, I] @ A[b])
        sol, _, rk, _ = np.linalg.lstsq(Jc[:, Dp], rhs, rcond=RANK_TOL)
        if rk < len(Dp):
            raise ConstraintError(f"constrained_inverse_dynamics: the independent variables {idx} do not determine "
                                  f"the others (the constraint Jacobian's dependent columns have rank {rk} of "
                                  f"{len(Dp)}); choose other independent variables")
        qdd[Dp] = sol
        M, h = lt.M, lt.h
        # [S_I^T, Jc^T] [tau_I; lam] = M qdd + h
        S = np.zeros((model.nv, len(I)))
        S[I, np.arange(len(I))] = 1.0
        K = np.hstack([S, Jc.T])
        x = np.linalg.lstsq(K, M @ qdd + h, rcond=RANK_TOL)[0]
        tau = S @ x[:len(I)]
        lam = x[len(I):]
        wr = np.array([N @ lam[rs] for N, rs in zip(lt.basis, lt.rows)]).reshape(len(model.loops), 6)
        res = float(np.max(np.abs(Jc @ qdd + lt.bc))) if Jc.shape[0] else 0.0
        out.append(dict(qdd=qdd, tau=tau, tau_constraint=Jc.T @ lam, wrench=wr, lam=lam, rank=rank,
                        residual=res, terms=lt))
    return ConstrainedDynamics(**(out[0] if single else _stack(out)))
