"""The geometry of loop closures (``ModelBuilder.add_loop``): the reference (Python) path.

Loop ``l`` holds frame B (on body b) at a pose of its closure joint in frame A (on body a).  The
relative twist of B w.r.t. A, in A axes, referred to the origin of B,

    t_rel = [R_A^T (w_b - w_a);  R_A^T (v_oB - v_oA - w_a x (o_B - o_A))] = G(q) v + s(t, q),

must lie in the closure joint's motion: t_rel = J_c(q_c) v_c + sigma_c for the closure
coordinates q_c that place B in A (found from the pose, ``closure_coordinates``).  With N_c an
orthonormal basis of the complement of range(J_c) (6 - nv_c columns), the constraints are

    velocity:      Jc v = N_c^T (G v + s - sigma_c) = 0
    acceleration:  Jc v' + bc = 0,   bc = N_c^T (gamma - b_c),

gamma the relative acceleration at v' = 0 (the tree's velocity-product terms, from one forward
kinematics pass with zero accelerations) and b_c the closure joint's EJCE bias at (q_c, v_c):
since N_c^T J_c = 0 the unknown closure accelerations drop out exactly.  The closure coordinates
come from Gauss-Newton on the pose error e = [log(R_rel R_c(q_c)^T); r_rel - r_c(q_c)] (6 per loop,
A axes), whose derivative along q_c is J_c.  ``constrained`` solves the dynamics with these
terms; ``kernel`` computes the same in compiled code.
"""
import numpy as np

from ...errors import ModelError
from ...calls.public import body_jacobian, forward_kinematics, joint_terms, mass_matrix, nonlinear_effects
from ...model.builder import ModelBuilder


class ConstraintError(ValueError):
    """The loop constraints are rank-deficient (redundant closures, e.g. a revolute closure of a
    planar linkage, whose out-of-plane rows repeat; or a singular configuration) or cannot be
    closed near the given ``q``; the message names each loop and direction ("loop 'pin':
    rotation about x of its frame A") or each loop's residual.  A ``ValueError``; the loop
    functions take no ``errors="flag"``."""


def _cross(a, b):
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])


def _skew(v):
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


def _log_rotation(E):
    """Rotation vector of the rotation matrix E (robust near 0 and pi)."""
    c = max(-1.0, min(1.0, 0.5 * (E[0, 0] + E[1, 1] + E[2, 2] - 1.0)))
    th = np.arccos(c)
    w = 0.5 * np.array([E[2, 1] - E[1, 2], E[0, 2] - E[2, 0], E[1, 0] - E[0, 1]])
    if th < 1e-6:
        return w * (1.0 + th * th / 6.0)
    if np.pi - th < 1e-6:
        # near pi: axis from the symmetric part
        B = 0.5 * (E + np.eye(3))
        k = int(np.argmax(np.diag(B)))
        ax = B[:, k] / np.sqrt(max(B[k, k], 1e-300))
        if ax @ w < 0:
            ax = -ax
        return th * ax
    return w * (th / np.sin(th))


_CLOSURE_MODELS = {}


def closure_model(loop):
    """A one-joint model of the loop's closure joint (world -> B), for its EJCE terms."""
    key = repr(loop.joint.to_dict())
    m = _CLOSURE_MODELS.get(key)
    if m is None:
        b = ModelBuilder(gravity=(0.0, 0.0, 0.0))
        b.add_body("closure", joint=loop.joint, mass=1.0, inertia=np.eye(3))
        m = _CLOSURE_MODELS[key] = b.build()
    return m


def closure_terms(cm, qc, vc=None):
    """(J (6, nv), sigma, bias, R, r) of the closure joint of the one-joint model ``cm`` at
    (qc, vc): its EJCE terms in its inboard frame A (``joint_terms``)."""
    nv = cm.nv
    v = np.zeros(nv) if vc is None else vc
    jt = joint_terms(cm, qc, v)
    return jt.J, jt.sigma[1], jt.bias[1], jt.R[1], jt.r[1]


def closure_tree(model):
    """A model of every loop's closure joint side by side (body k + 1: world -> B of loop k), so
    that one call gives all their EJCE terms; made once per model."""
    ct = model.__dict__.get("_closure_tree")
    if ct is None:
        b = ModelBuilder(gravity=(0.0, 0.0, 0.0))
        for k, L in enumerate(model.loops):
            b.add_body(f"closure_{k}", joint=L.joint, mass=1.0, inertia=np.eye(3))
        ct = model.__dict__["_closure_tree"] = b.build()
    return ct


def _closure_all(model, qcs, vcs=None):
    """[(J (6, nv_c), sigma, bias, R, r)] of every loop's closure joint at its (q_c, v_c), from one
    call of ``joint_terms`` on ``closure_tree``."""
    ct = closure_tree(model)
    qa = np.concatenate([np.asarray(x, dtype=float) for x in qcs]) if qcs else np.zeros(0)
    va = np.zeros(ct.nv) if vcs is None else (np.concatenate(vcs) if vcs else np.zeros(0))
    jt = joint_terms(ct, qa, va)
    out = []
    for k in range(len(model.loops)):
        j = k + 1
        vs, nv = int(ct.v_start[j]), int(ct.nv_joint[j])
        out.append((jt.J[:, vs:vs + nv], jt.sigma[j], None if vcs is None else jt.bias[j], jt.R[j], jt.r[j]))
    return out


def sweep(model, q, qd=None, t=0.0):
    """The tree's terms at (q, qd, t) with zero accelerations: its kinematics (the accelerations
    the velocity-product terms), joint terms, mass matrix and nonlinear effects, as a dict named
    as ``ej.evaluate``'s results (each from its one-state entry)."""
    qd = np.zeros(model.nv) if qd is None else qd
    tree = model.open_tree()
    return {"forward_kinematics": forward_kinematics(tree, q, qd, np.zeros(model.nv), t=t),
            "joint_terms": joint_terms(tree, q, qd, t=t), "mass_matrix": mass_matrix(tree, q, t=t),
            "rnea": nonlinear_effects(tree, q, qd, t=t)}


def world_jacobians(model, sw, bodies, q=None, t=0.0):
    """{body: world-frame Jacobian (6, nv) of its origin} from one sweep's joint terms: the columns
    of joint j are its EJCE Jacobian (P axes, at the origin of its C frame, the body origin) turned
    into world axes and moved to the body's origin, for every j on the body's path to the world."""
    bodies = sorted(set(int(b) for b in bodies))
    nv = model.nv
    if model.has_couplers:
        return {b: world_jacobian(model, q, b, t) for b in bodies}
    kin, jt = sw["forward_kinematics"], sw["joint_terms"]
    n1 = model.nbodies + 1
    jb = np.zeros(nv, dtype=int)  # the body of each velocity variable
    for j in range(1, n1):
        vs = int(model.v_start[j])
        jb[vs:vs + int(model.nv_joint[j])] = j
    RP = kin.R[jb] @ np.swapaxes(jt.R[jb], 1, 2)
    W = np.einsum("kab,bk->ak", RP, jt.J[:3])
    Vd = np.einsum("kab,bk->ak", RP, jt.J[3:])
    P = kin.p[jb]
    par = model.body_parent
    out = {}
    for b in bodies:
        Jw = np.zeros((6, nv))
        if b != 0:
            anc = set()
            j = b
            while j != 0:
                anc.add(j)
                j = int(par[j])
            m = np.fromiter((x in anc for x in jb), dtype=bool, count=nv)
            w = W[:, m]
            d = kin.p[b] - P[m]
            Jw[:3, m] = w
            Jw[3:, m] = Vd[:, m] + np.array([w[1] * d[:, 2] - w[2] * d[:, 1], w[2] * d[:, 0] - w[0] * d[:, 2],
                                             w[0] * d[:, 1] - w[1] * d[:, 0]])
        out[b] = Jw
    return out


def world_jacobian(model, q, body, t=0.0):
    """World-frame Jacobian (6, nv) of body's origin (zero for the world)."""
    if body == 0:
        return np.zeros((6, model.nv))
    return body_jacobian(model, q, body, t=t)


def retract(model, q, dv):
    """q (+) dv: coordinates whose rate is their velocity move by it, unit quaternions turn by
    q (x) Exp(dv) (angular velocity in the joint's C axes)."""
    if not model.quaternion_blocks() and model.nq == model.nv:
        return np.asarray(q, dtype=float) + dv
    out = np.array(q, dtype=float)
    quat = dict(model.quaternion_blocks())
    for j in range(1, model.nbodies + 1):
        qs, vs = int(model.q_start[j]), int(model.v_start[j])
        nq, nv = int(model.nq_joint[j]), int(model.nv_joint[j])
        if j in quat:
            n_plain = nq - 4
            out[qs:qs + n_plain] += dv[vs:vs + n_plain]
            th = dv[vs + n_plain:vs + nv]
            a = np.linalg.norm(th)
            h = 0.5 * a
            s = 0.5 if a < 1e-8 else np.sin(h) / a
            w2, x2, y2, z2 = np.cos(h), s * th[0], s * th[1], s * th[2]
            w1, x1, y1, z1 = out[qs + n_plain:qs + nq]
            qn = np.array([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                           w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2])
            out[qs + n_plain:qs + nq] = qn / np.linalg.norm(qn)
        else:
            out[qs:qs + nq] += dv[vs:vs + nv]
    return out


def _frame(kin, body, T, vel):
    R = kin.R[body] @ T.rotation
    d = kin.R[body] @ T.translation
    o = kin.p[body] + d
    if not vel:
        return R, o, d, None, None, None, None
    w = kin.omega[body]
    vo = kin.v[body] + _cross(w, d)
    al = kin.alpha[body]
    ao = kin.a[body] + _cross(al, d) + _cross(w, _cross(w, d))
    return R, o, d, w, vo, al, ao


def relative_pose(model, q, t=0.0, kin=None):
    """[(R_rel, r_rel)] of every loop: the pose of frame B in frame A."""
    if kin is None:
        kin = forward_kinematics(model, q, t=t)
    out = []
    for L in model.loops:
        RA, oA, *_ = _frame(kin, L.body_a, L.placement_a, False)
        RB, oB, *_ = _frame(kin, L.body_b, L.placement_b, False)
        out.append((RA.T @ RB, RA.T @ (oB - oA)))
    return out


def _pose_error(Rrel, rrel, Rj, rj):
    """6-vector pose error of B in A against the closure joint's pose, in A axes."""
    return np.concatenate([_log_rotation(Rrel @ Rj.T), rrel - rj])


def _initial_guess(loop, cm, Rrel):
    """Where the search for a closure's coordinates starts: a unit quaternion's rotation is the
    relative rotation itself; other joints start from their neutral pose."""
    q0 = cm.__dict__.get("_neutral")
    if q0 is None:
        q0 = cm.__dict__["_neutral"] = cm.neutral()
    q = q0.copy()
    if getattr(loop.joint, "quaternion", False):
        R = Rrel
        w = 0.5 * np.sqrt(max(0.0, 1.0 + R[0, 0] + R[1, 1] + R[2, 2]))
        if w > 1e-3:
            qv = np.array([w, (R[2, 1] - R[1, 2]) / (4 * w), (R[0, 2] - R[2, 0]) / (4 * w), (R[1, 0] - R[0, 1]) / (4 * w)])
            q[cm.nq - 4:] = qv / np.linalg.norm(qv)
    return q


def closure_coordinates(model, q, t=0.0, qc0=None, kin=None, tol=1e-14, max_iter=30):
    """The closure coordinates q_c of every loop (a list of arrays): the pose of the closure joint
    nearest to the pose of B in A (Gauss-Newton from the joint's neutral pose, or ``qc0``), and
    the remaining pose errors (the loops' position residuals, 6 each, in A axes)."""
    qcs, errs, _ = _closures(model, relative_pose(model, q, t, kin), qc0, tol, max_iter)
    return qcs, errs


def _closures(model, rel, qc0=None, tol=1e-14, max_iter=30):
    """``closure_coordinates`` from the relative poses ``rel``, with each loop's closure J and
    sigma at its q_c; all loops iterate together (one call of their closure joints' terms per
    Gauss-Newton iteration; a loop that has converged keeps its coordinates)."""
    n = len(model.loops)
    qcs = [_initial_guess(L, closure_model(L), rel[k][0]) if qc0 is None or qc0[k] is None
           else np.array(qc0[k], dtype=float) for k, L in enumerate(model.loops)]
    errs, terms = [None] * n, [None] * n
    last = [np.inf] * n
    active = list(range(n))
    for _ in range(max_iter):
        ct = _closure_all(model, qcs)
        nxt = []
        for k in active:
            J, sig, _, Rj, rj = ct[k]
            e = _pose_error(rel[k][0], rel[k][1], Rj, rj)
            errs[k], terms[k] = e, (J, sig)
            if J.shape[1] == 0:
                continue
            step = np.linalg.lstsq(J, e, rcond=None)[0]
            res = np.linalg.norm(e - J @ step)
            if np.linalg.norm(step) <= tol * (1.0 + np.linalg.norm(qcs[k])) or abs(last[k] - res) <= 1e-3 * tol:
                continue
            last[k] = res
            qcs[k] = retract(closure_model(model.loops[k]), qcs[k], step)
            nxt.append(k)
        active = nxt
        if not active:
            break
    if active:
        # iterations exhausted: the terms at the last coordinates
        ct = _closure_all(model, qcs)
        for k in active:
            terms[k] = ct[k][:2]
    return qcs, errs, terms


def _complement(J):
    """Orthonormal basis (6, 6 - nv) of the complement of range(J), J (6, nv)."""
    nv = J.shape[1]
    if nv == 0:
        return np.eye(6)
    U, _, _ = np.linalg.svd(J, full_matrices=True)
    N = U[:, nv:]
    # a sign convention, so that the basis is a function of J alone
    for c in range(N.shape[1]):
        k = int(np.argmax(np.abs(N[:, c])))
        if N[k, c] < 0:
            N[:, c] = -N[:, c]
    return N


def _require_loops(model, what):
    if not getattr(model, "has_loops", False):
        raise ModelError(f"{what}: the model has no loop closures (ModelBuilder.add_loop); use ej.aba")


