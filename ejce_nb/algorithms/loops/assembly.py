"""Assembly of a loop model: the coordinates nearest to a guess that close every loop.

Unknowns: the tree's free coordinates (all but ``fixed``) and the closure coordinates q_c of every
loop.  Residual: each loop's pose error of frame B in frame A against its closure joint's pose,
e = [log(R_rel R_c(q_c)^T); r_rel - r_c(q_c)] (6 per loop, A axes), whose derivative is
[G, -J_c] in the tangent coordinates (G the relative-twist Jacobian, J_c the closure joint's
EJCE Jacobian).  Gauss-Newton with minimum-norm steps (the smallest correction of the
coordinates, so the solution stays nearest the guess) and a backtracking line search on |e|.

``independent_variables`` chooses the velocity variables that a sweep of a loop model samples
(the others follow from the loops), ``held_indices`` reads such a choice, and
``assembled_neutral`` is ``Model.neutral()`` of a loop model.
"""
import warnings

import numpy as np

from .reference import (ConstraintError, _closure_all, _frame, _pose_error, _require_loops, _skew,
                       closure_coordinates, closure_model, retract, sweep, world_jacobians)
from .constrained import loop_terms
from ...calls.public import mass_matrix
from ...errors import ClosureWarning


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


def held_indices(model, names, what):
    """Velocity-variable indices from indices or velocity / coordinate names (one, or a list, or
    a comma-separated string), in the order given; a ValueError naming ``what`` for an unknown
    name or an index out of range."""
    vnames = list(model.velocity_names)
    cnames = list(model.coordinate_names)
    if isinstance(names, str):
        names = [x.strip() for x in names.split(",") if x.strip()]
    out = []
    for x in ([names] if isinstance(names, (int, np.integer)) else list(names)):
        if isinstance(x, str):
            if x in vnames:
                x = vnames.index(x)
            elif x in cnames:
                x = cnames.index(x)
            elif x.lstrip("-").isdigit():
                x = int(x)
            else:
                raise ValueError(f"{what}: no coordinate named {x!r}; the velocity variables are "
                                 + ", ".join(map(repr, vnames)))
        if isinstance(x, bool) or not isinstance(x, (int, np.integer)) or not 0 <= int(x) < model.nv:
            raise ValueError(f"{what}: index {x!r} out of range (nv = {model.nv})")
        if int(x) not in out:
            out.append(int(x))
    return out


def _rank(A):
    if A.size == 0:
        return 0
    s = np.linalg.svd(A, compute_uv=False)
    return int(np.sum(s > 1e-9 * s[0])) if s[0] > 0 else 0


def independent_variables(model, independent=None, q=None, t=0.0):
    """The velocity variables (indices, increasing) whose coordinates determine the others through
    the loop constraints, checked at ``q`` (default ``model.neutral()``): ``independent`` as given
    (indices or names, ``held_indices``), or by default the first ones in tree order: going from
    the last velocity variable to the first (a unit quaternion's before the others), each that
    adds to the rank of the constraint Jacobian's columns chosen so far is dependent, until they
    reach the rank of Jc; the others are independent (a four-bar: the crank's angle).  A ValueError
    when the given ones do not determine the others (the dependent columns of Jc have a lower rank
    than Jc) or are more than the mechanism's freedoms (nv - rank Jc)."""
    from .constrained import loop_terms

    q = model.neutral() if q is None else np.asarray(q, dtype=float)
    Jc = loop_terms(model, q, np.zeros(model.nv), t).Jc
    r = _rank(Jc)
    nv = model.nv
    names = list(model.velocity_names)
    if independent is None:
        quat = set()
        for j, sl in model.quaternion_blocks():
            vs = model.v_slice(j)
            quat.update(range(vs.stop - 3, vs.stop))
        order = sorted(quat, reverse=True) + [k for k in range(nv - 1, -1, -1) if k not in quat]
        dep = []
        for k in order:
            if len(dep) and _rank(Jc[:, dep]) == r:
                break
            if _rank(Jc[:, dep + [k]]) > len(dep):
                dep.append(k)
        return [k for k in range(nv) if k not in dep]
    ind = sorted(held_indices(model, independent, "independent"))
    dep = [k for k in range(nv) if k not in ind]
    if len(ind) > nv - r:
        raise ValueError(f"independent: {', '.join(names[k] for k in ind)} are {len(ind)} velocity variables; the "
                         f"loops leave the mechanism {nv - r} degree(s) of freedom, so they cannot all be chosen "
                         "freely")
    if _rank(Jc[:, dep]) < r:
        raise ValueError(f"independent: {', '.join(names[k] for k in ind) or 'none'} do not determine the other "
                         f"coordinates through the loops (the mechanism has {nv - r} degree(s) of freedom); "
                         "the default would be "
                         + ", ".join(names[k] for k in independent_variables(model, None, q, t)))
    return ind


def assembled_neutral(model, q, t=0.0):
    """``Model.neutral()`` of a loop model: ``assemble`` from the tree's neutral configuration q,
    else from q displaced by a few fixed perturbations (a linkage drawn straight is a singular
    configuration, where Gauss-Newton cannot move); where none closes, q with a ClosureWarning."""
    try:
        return assemble(model, q, t=t)
    except ConstraintError as e:
        first = e
    rng = np.random.default_rng(0)
    for scale in (0.1, 0.1, 0.3, 0.3, 1.0, 1.0):
        try:
            return assemble(model, retract(model, q, rng.normal(0.0, scale, model.nv)), t=t)
        except ConstraintError:
            continue
    warnings.warn(f"the loop closures of this model cannot be assembled near its default coordinates, so neutral() "
                  f"returns them unclosed; pass a configuration that closes (ej.assemble from a guess). {first}",
                  ClosureWarning, stacklevel=3)
    return q


def assemble(model, q, fixed=(), t=0.0, tol=1e-12, max_iter=100, return_info=False):
    """The coordinates nearest to ``q`` that close every loop of the model, with the coordinates
    ``fixed`` held (velocity-variable indices or velocity / coordinate names of coordinates whose
    rate is their velocity) held exactly: Gauss-Newton with minimum-norm steps on the tree's free
    coordinates and the closure coordinates, backtracking on the pose error.  Raises
    ``ConstraintError`` naming each loop's residual when no closure is found near ``q`` (the
    residual stalls above ``tol``).  ``return_info=True`` returns ``(q, info)``, info with the
    closure coordinates ``qc``, ``iterations`` and the final ``residual``."""
    _require_loops(model, "assemble")
    q = np.array(q, dtype=float)
    t = float(t)
    if q.shape != (model.nq,) or not np.all(np.isfinite(q)):
        raise ValueError(f"assemble: q must be {model.nq} finite numbers, got shape {q.shape}")
    held = set(held_indices(model, fixed, "assemble: fixed"))
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
    M = (lt.M if getattr(lt, "M", None) is not None else mass_matrix(model.open_tree(), q, t=t)) if M is None else M
    MJ = np.linalg.solve(M, lt.Jc.T)
    A = lt.Jc @ MJ
    return qd - MJ @ np.linalg.lstsq(A, lt.velocity_error, rcond=1e-12)[0]
