"""Assembly of a loop model: the coordinates nearest to a guess that close every loop.

Unknowns: the tree's free coordinates (all but ``fixed``) and the closure coordinates q_c of every
loop.  Residual: each loop's pose error of frame B in frame A against its closure joint's pose,
e = [log(R_rel R_c(q_c)^T); r_rel - r_c(q_c)] (6 per loop, A axes), whose derivative is
[G, -J_c] in the tangent coordinates (G the relative-twist Jacobian, J_c the closure joint's
EJCE Jacobian).  Gauss-Newton with minimum-norm steps (the smallest correction of the
coordinates, so the solution stays nearest the guess) and a backtracking line search on |e|.
"""
import numpy as np

from .reference import (ConstraintError, _closure_all, _frame, _pose_error, _require_loops, _skew,
                       closure_coordinates, closure_model, retract, sweep, world_jacobians)
from .constrained import loop_terms
from ...calls.public import mass_matrix


def _residual_and_jacobian(model, q, qcs, t, want_jac):
    sw = sweep(model, q, None, t)
    kin = sw["forward_kinematics"]
    es, rows = [], []
    cl = [(x[0], x[3], x[4]) for x in _closure_all(model, qcs)]
    if want_jac:
        jac = world_jacobians(model, sw, [b for L in model.loops for b in (L.body_a, L.body_b)], q, t)
    ncols_c = sum(closure_model(L).nv for L in model.loops)
    c0 = 0
    for k, L in enumerate(model.loops):
        cm = closure_model(L)
        RA, oA, dA, *_ = _frame(kin, L.body_a, L.placement_a, False)
        RB, oB, dB, *_ = _frame(kin, L.body_b, L.placement_b, False)
        Jj, Rj, rj = cl[k]
        es.append(_pose_error(RA.T @ RB, RA.T @ (oB - oA), Rj, rj))
        if want_jac:
            Ja, Jb = jac[L.body_a], jac[L.body_b]
            JvA = Ja[3:] - _skew(dA) @ Ja[:3]
            JvB = Jb[3:] - _skew(dB) @ Jb[:3]
            G = np.vstack([RA.T @ (Jb[:3] - Ja[:3]), RA.T @ (JvB - JvA + _skew(oB - oA) @ Ja[:3])])
            C = np.zeros((6, ncols_c))
            C[:, c0:c0 + cm.nv] = -Jj
            rows.append(np.hstack([G, C]))
        c0 += cm.nv
    e = np.concatenate(es)
    return e, (np.vstack(rows) if want_jac else None)


def _split(model, dx):
    out, c0 = [], model.nv
    for L in model.loops:
        n = closure_model(L).nv
        out.append(dx[c0:c0 + n])
        c0 += n
    return dx[:model.nv], out


def assemble(model, q, fixed=(), t=0.0, tol=1e-12, max_iter=100, return_info=False):
    """The coordinates nearest to ``q`` that close every loop of the model, with the coordinates
    ``fixed`` held (velocity-variable indices or velocity / coordinate names of coordinates whose
    rate is their velocity).  Raises ``ConstraintError`` when Gauss-Newton finds no closure near
    ``q`` (the residual stalls above ``tol``).  ``return_info=True`` returns ``(q, info)``, info
    with the closure coordinates ``qc``, ``iterations`` and the final ``residual``."""
    _require_loops(model, "assemble")
    q = np.array(q, dtype=float)
    t = float(t)
    if q.shape != (model.nq,) or not np.all(np.isfinite(q)):
        raise ValueError(f"assemble: q must be {model.nq} finite numbers, got shape {q.shape}")
    vnames = list(model.velocity_names)
    cnames = list(model.coordinate_names)
    held = set()
    for x in ([fixed] if isinstance(fixed, (str, int, np.integer)) else list(fixed)):
        if isinstance(x, str):
            if x in vnames:
                x = vnames.index(x)
            elif x in cnames:
                x = cnames.index(x)
            else:
                raise ValueError(f"assemble: fixed: no coordinate named {x!r}")
        if not 0 <= int(x) < model.nv:
            raise ValueError(f"assemble: fixed: index {x} out of range (nv = {model.nv})")
        held.add(int(x))
    free = np.array([k for k in range(model.nv) if k not in held], dtype=int)
    qcs, _ = closure_coordinates(model, q, t)
    e, Jx = _residual_and_jacobian(model, q, qcs, t, True)
    nrm = np.linalg.norm(e)
    it = 0
    cols = np.concatenate([free, np.arange(model.nv, Jx.shape[1])])
    while nrm > tol and it < max_iter:
        it += 1
        dx = np.zeros(Jx.shape[1])
        dx[cols] = np.linalg.lstsq(Jx[:, cols], -e, rcond=1e-12)[0]
        step = 1.0
        while True:
            dq, dcs = _split(model, step * dx)
            qn = retract(model, q, dq)
            qcn = [retract(closure_model(L), qc, d) for L, qc, d in zip(model.loops, qcs, dcs)]
            en, _ = _residual_and_jacobian(model, qn, qcn, t, False)
            if np.linalg.norm(en) < nrm or step < 1e-4:
                break
            step *= 0.5
        if np.linalg.norm(en) >= nrm:
            break
        q, qcs = qn, qcn
        e, Jx = _residual_and_jacobian(model, q, qcs, t, True)
        nrm = np.linalg.norm(e)
    if nrm > max(tol, 1e-9):
        worst = [(L.name, float(np.linalg.norm(e[6 * k:6 * k + 6]))) for k, L in enumerate(model.loops)]
        raise ConstraintError(
            f"assemble: no closure of the loops found near q (residual {nrm:.3g} after {it} Gauss-Newton "
            f"iterations, fixed {sorted(held)}); per loop: "
            + ", ".join(f"{n!r} {r:.3g}" for n, r in worst))
    if return_info:
        return q, {"qc": qcs, "iterations": it, "residual": float(nrm)}
    return q


def project_velocity(model, q, qd, t=0.0, M=None, terms=None):
    """The velocity nearest to ``qd`` in the kinetic-energy metric that satisfies the velocity
    constraints Jc v + s = 0: v - M^-1 Jc^T (Jc M^-1 Jc^T)^+ (Jc v + s)."""
    lt = loop_terms(model, q, qd, t) if terms is None else terms
    if lt.Jc.shape[0] == 0:
        return np.array(qd, dtype=float)
    M = (lt.M if getattr(lt, "M", None) is not None else mass_matrix(model, q, t=t)) if M is None else M
    MJ = np.linalg.solve(M, lt.Jc.T)
    A = lt.Jc @ MJ
    return qd - MJ @ np.linalg.lstsq(A, lt.velocity_error, rcond=1e-12)[0]
