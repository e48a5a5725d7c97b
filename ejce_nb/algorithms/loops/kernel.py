"""Constrained forward dynamics of one state in compiled code (``reference`` and ``constrained``
state the equations; this is the kernel ``ej.constrained_dynamics`` runs).

For one state (q, v, tau, t) of a tree closed by loop joints:

1. the tree's forward sweep at zero accelerations (``kinematics.forward``), its world kinematics
   (frames A and B of every loop, gamma), M by the CRBA (``crba.crba_after``), h by RNEA at
   qdd = 0 (``rnea.rnea_forces``) and the world Jacobians of the loops' bodies;
2. per loop, the closure coordinates q_c by Gauss-Newton on the pose error
   e = [log(R_rel R_c(q_c)^T); r_rel - r_c(q_c)], the closure joint's EJCE terms (J_c, sigma_c,
   b_c) from the one-joint-per-loop closure tree (``reference.closure_tree``); each step the
   least-squares solution of J_c dq = e by a Householder QR J_c = [Q1 Q2] [R; 0], whose Q2 is the
   orthonormal complement basis N_c;
3. Jc = N_c^T G, bc = N_c^T (gamma - b_c(q_c, v_c)), v_c = R^-1 Q1^T (t_rel - sigma_c);
4. the KKT system M qdd - Jc^T lam = tau - h, Jc qdd = -bc: a0 = M^-1 (tau - h) and M^-1 Jc^T by
   Cholesky of M, then lam from the Cholesky of A = Jc M^-1 Jc^T, qdd = a0 + M^-1 Jc^T lam; with
   ``lstsq`` and a rank-deficient Jc, lam = A^+ (-(Jc a0 + bc)) (minimum norm; A's singular
   values below RANK_TOL times the largest cut, as ``numpy.linalg.lstsq`` with that rcond);
5. the corrections of the projections onto the constraints (``sim.closed``), from the same
   factors: velocity -M^-1 Jc^T A^+ (Jc v + s), position -M^-1 Jc^T A^+ N_c^T e (e the pose
   errors; A's singular values below VEL_TOL times the largest cut).

``constrained_views`` is the kernel on the views of one state's workspace (what the compiled
time loop calls at every stage); ``constrained_state`` makes the views from the buffers.

The rank of Jc is that of its singular values (one-sided Jacobi) above RANK_TOL times the
largest.  A state the kernel does not finish returns a status (bad input, a singular closure
joint, Gauss-Newton not converged, a rank-deficient Jc under "raise", M or A not positive
definite) and the Python path computes it, raising its documented error.
"""
import numpy as np
from numba import prange, types
from numba.extending import overload

from ..._jit import jit, pjit
from ...model import inputs
from ...model.couplers import MAX_IND, expand_state, gt_mul
from ...model.layout import rows, vec, views
from ...core.spatial import add, cross, ld3, ld9, mm, mmT, mTm, mtv, mv, sub
from ..crba import chol_factor, chol_subst, crba_after
from .dense import jacobi_rows, log_rotation, qr6, qr_lstsq, row_norm
from ..kinematics import body_jacobian_state, fk_out, forward, joint_terms_state, jt_out, world_kinematics
from ..rnea import rnea_forces

# statuses of the kernel (0: computed)
ST_INPUT, ST_CLOSURE, ST_GN, ST_RANK, ST_MASS, ST_SCHUR = range(1, 7)
RANK_TOL = 1e-9
# the cut of the velocity projection's pseudo-inverse (``assembly.project_velocity``)
VEL_TOL = 1e-12
GN_TOL = 1e-14
GN_ITER = 30
# the workspace of one state: the offsets of its parts (``offsets``)
(O_FK, O_CJT, O_JA, O_JB, O_M, O_H, O_X, O_JC, O_BC, O_A, O_Y, O_RHS, O_LAM, O_Q, O_R, O_E, O_U, O_STEP,
 O_VC, O_TG, O_ACT, O_PE, O_DP, O_QF, O_VF, O_AF, O_G, O_QI, O_VI, O_MF, O_HF, O_JCF, O_T, O_END) = range(34)


def offsets(n1, nv, nl, nc, n1c, nvc, full=None):
    """(offsets, size) of one state's workspace: the start of each part, its end (O_END) and nc.
    ``full``: (nq, nv) of the expansion of a model with couplers (its state, G, M, h, Jc and
    G^T M_full get parts of their own), None without couplers."""
    nqf, nf = (0, 0) if full is None else full
    ni = 0 if full is None else MAX_IND
    sizes = [24 * n1, 6 * nvc + 30 * n1c, 6 * max(nv, nf), 6 * max(nv, nf), nv * nv, nv, (1 + nc) * nv, nc * nv,
             nc, nc * nc, nc * max(nv, nc), 3 * nc, 3 * nc, 36 * nl, 36 * nl, 6, 6, 6, max(nvc, 1), 30 * nl, 2 * nl,
             nc, nv, nqf, nf, nf, nf * nv, ni, ni, nf * nf, nf, nc * nf, nv * nf]
    off = np.zeros(len(sizes) + 2, dtype=np.int64)
    off[1:-1] = np.cumsum(sizes)
    off[-1] = nc
    return off, int(off[-2])


# ---------------------------------------------------------------------------- small dense pieces
@jit
def _t9(A, k, o):
    return (A[k, o], A[k, o + 1], A[k, o + 2], A[k, o + 3], A[k, o + 4], A[k, o + 5], A[k, o + 6], A[k, o + 7],
            A[k, o + 8])


@jit
def _t3(A, k, o):
    return (A[k, o], A[k, o + 1], A[k, o + 2])


# ---------------------------------------------------------------------------- the state
@jit
def _frame(Rb, p, w, vo, al, ao, body, LF, k, o):
    """Frame (A: o = 0, B: o = 12) of loop k on ``body``: its axes, origin, offset from the body
    origin, angular velocity, origin velocity, angular and origin accelerations (world)."""
    Rw = ld9(Rb, body)
    R = mm(Rw, _t9(LF, k, o))
    d = mv(Rw, _t3(LF, k, o + 9))
    wb = ld3(w, body)
    alb = ld3(al, body)
    vp = add(ld3(vo, body), cross(wb, d))
    ap = add(add(ld3(ao, body), cross(alb, d)), cross(wb, cross(wb, d)))
    return R, add(ld3(p, body), d), d, wb, vp, alb, ap


@jit
def _retract_closure(qc, qs, nq, qoff, dv):
    """qc (+) dv on the closure block at qs: plain coordinates move by dv, a unit quaternion at
    qoff turns by q (x) Exp(dv) (rotation vector in its C axes)."""
    n_plain = nq if qoff < 0 else nq - 4
    for x in range(n_plain):
        qc[qs + x] += dv[x]
    if qoff < 0:
        return
    t0, t1, t2 = dv[n_plain], dv[n_plain + 1], dv[n_plain + 2]
    a = np.sqrt(t0 * t0 + t1 * t1 + t2 * t2)
    s = 0.5 if a < 1e-8 else np.sin(0.5 * a) / a
    w2, x2, y2, z2 = np.cos(0.5 * a), s * t0, s * t1, s * t2
    w1, x1, y1, z1 = qc[qoff], qc[qoff + 1], qc[qoff + 2], qc[qoff + 3]
    qw = w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2
    qx = w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2
    qy = w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2
    qz = w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2
    nn = np.sqrt(qw * qw + qx * qx + qy * qy + qz * qz)
    qc[qoff], qc[qoff + 1], qc[qoff + 2], qc[qoff + 3] = qw / nn, qx / nn, qy / nn, qz / nn


@jit
def _closure_sweep(cm, cr, cs, qc, vc, level, cfull, cbuf, n1c, nvc):
    """The EJCE terms of every closure joint at (qc, vc): views (J, sigma, bias, R, r)."""
    forward(cm, cr, cs, qc, vc, cs.zv, 0.0, level, np.bool_(False), cfull)
    J, sig, bias, tw, R, r = jt_out(cbuf, np.int64(1), n1c, nvc)
    joint_terms_state(cm, cr, vc, np.bool_(False), np.int64(0), J, sig, bias, tw, R, r)
    return J, sig, bias, R, r


@jit
def _closures(cm, cr, cs, cfull, LI, qn, OFF, ws, Rb, p, w, vo, al, ao, LF, qc, nl):
    """Gauss-Newton on every loop's closure coordinates qc (all loops together, a converged loop
    keeps its coordinates), leaving per loop its Q, R of J_c at q_c, its pose error left
    (ws[O_ACT + nl + k]) and its row of TG: t_rel, R_rel, r_rel, gamma, sigma_c (at v_c = 0)."""
    n1c = cm.body_parent.shape[0]
    nvc = cs.zv.shape[0]
    cbuf = vec(ws, OFF[O_CJT], OFF[O_CJT + 1] - OFF[O_CJT])
    act = vec(ws, OFF[O_ACT], 2 * nl)
    e = vec(ws, OFF[O_E], 6)
    u = vec(ws, OFF[O_U], 6)
    step = vec(ws, OFF[O_STEP], 6)
    TG = rows(ws, OFF[O_TG], nl, 30)
    for x in range(qn.shape[0]):
        qc[x] = qn[x]
    for k in range(nl):
        act[k] = 1.0
        act[nl + k] = np.inf
        RA, oA, dA, wa, vA, ala, aA = _frame(Rb, p, w, vo, al, ao, LI[k, 0], LF, k, 0)
        RB, oB, dB, wb, vB, alb, aB = _frame(Rb, p, w, vo, al, ao, LI[k, 1], LF, k, 12)
        D = sub(oB, oA)
        dv = sub(vB, vA)
        tr = mtv(RA, sub(wb, wa)) + mtv(RA, sub(dv, cross(wa, D)))
        gw = mtv(RA, sub(sub(alb, ala), cross(wa, sub(wb, wa))))
        gv = mtv(RA, add(sub(sub(sub(aB, aA), cross(ala, D)), cross((2.0 * wa[0], 2.0 * wa[1], 2.0 * wa[2]), dv)),
                         cross(wa, cross(wa, D))))
        Rrel = mTm(RA, RB)
        rrel = mtv(RA, D)
        for x in range(6):
            TG[k, x] = tr[x]
            TG[k, 18 + x] = (gw + gv)[x]
        for x in range(9):
            TG[k, 6 + x] = Rrel[x]
        for x in range(3):
            TG[k, 15 + x] = rrel[x]
        qo = LI[k, 5]
        if qo >= 0:
            R = Rrel
            qw = 0.5 * np.sqrt(max(0.0, 1.0 + R[0] + R[4] + R[8]))
            if qw > 1e-3:
                a1, a2, a3 = (R[7] - R[5]) / (4 * qw), (R[2] - R[6]) / (4 * qw), (R[3] - R[1]) / (4 * qw)
                nn = np.sqrt(qw * qw + a1 * a1 + a2 * a2 + a3 * a3)
                qc[qo], qc[qo + 1], qc[qo + 2], qc[qo + 3] = qw / nn, a1 / nn, a2 / nn, a3 / nn
    level = np.int64(1)
    for _ in range(GN_ITER):
        J, sig, bias, Rj, rj = _closure_sweep(cm, cr, cs, qc, cs.zv, level, cfull, cbuf, n1c, nvc)
        more = False
        for k in range(nl):
            if act[k] == 0.0:
                continue
            j = LI[k, 2]
            vs, n = cm.jnt_dofadr[j], cm.jnt_nv[j]
            Q = rows(ws, OFF[O_Q] + 36 * k, 6, 6)
            Rq = rows(ws, OFF[O_R] + 36 * k, 6, 6)
            Rrel = _t9(TG, k, 6)
            lg = log_rotation(mmT(Rrel, ld9(Rj, j)))
            rr = sub(_t3(TG, k, 15), ld3(rj, j))
            for x in range(3):
                e[x] = lg[x]
                e[3 + x] = rr[x]
            # the closure joint's sigma at zero velocity, kept for v_c
            for x in range(6):
                TG[k, 24 + x] = sig[j, x] if n > 0 else 0.0
            if n == 0:
                qr6(J[:, vs:vs], np.int64(0), Q, Rq, u)
                act[k] = 0.0
                act[nl + k] = qr_lstsq(Q, Rq, np.int64(0), e, step)
                _position_error(ws, OFF, LI, k, Q, n, e)
                continue
            if qr6(J[:, vs:vs + n], n, Q, Rq, u) < 1e-12:
                return ST_CLOSURE
            res = qr_lstsq(Q, Rq, n, e, step)
            qs, nq = cm.jnt_qadr[j], cm.jnt_nq[j]
            sn = 0.0
            qn2 = 0.0
            for x in range(n):
                sn += step[x] * step[x]
            for x in range(nq):
                qn2 += qc[qs + x] * qc[qs + x]
            if np.sqrt(sn) <= GN_TOL * (1.0 + np.sqrt(qn2)) or abs(act[nl + k] - res) <= 1e-3 * GN_TOL:
                # converged: the pose error left in the constrained directions, |N_c^T e|
                act[k] = 0.0
                act[nl + k] = res
                _position_error(ws, OFF, LI, k, Q, n, e)
                continue
            act[nl + k] = res
            _retract_closure(qc, qs, nq, LI[k, 5], step)
            more = True
        if not more:
            return 0
    return ST_GN


@jit
def _position_error(ws, OFF, LI, k, Q, n, e):
    """Loop k's rows of the position error N_c^T e (ws[O_PE]), Q[:, n:] = N_c."""
    r0 = 0
    for x in range(k):
        r0 += LI[x, 4]
    for i in range(n, 6):
        sm = 0.0
        for x in range(6):
            sm += Q[x, i] * e[x]
        ws[OFF[O_PE] + r0 + i - n] = sm


@jit
def _jc_rows(m, r, LI, LF, OFF, ws, Rb, p, w, vo, al, ao, bias, Jc, bc, nl, nv):
    """Jc = N_c^T G and bc = N_c^T (gamma - b_c) of every loop (rows in loop order)."""
    zero = np.int64(0)
    Ja = rows(ws, OFF[O_JA], 6, nv)
    Jb = rows(ws, OFF[O_JB], 6, nv)
    TG = rows(ws, OFF[O_TG], nl, 30)
    r0 = 0
    for k in range(nl):
        body_jacobian_state(m, r, LI[k, 0], zero, Ja)
        body_jacobian_state(m, r, LI[k, 1], zero, Jb)
        RA, oA, dA, wa, vA, ala, aA = _frame(Rb, p, w, vo, al, ao, LI[k, 0], LF, k, 0)
        RB, oB, dB, wb, vB, alb, aB = _frame(Rb, p, w, vo, al, ao, LI[k, 1], LF, k, 12)
        D = sub(oB, oA)
        n = 6 - LI[k, 4]
        Q = rows(ws, OFF[O_Q] + 36 * k, 6, 6)
        j = LI[k, 2]
        for c in range(nv):
            jwa = (Ja[0, c], Ja[1, c], Ja[2, c])
            jwb = (Jb[0, c], Jb[1, c], Jb[2, c])
            JvA = sub((Ja[3, c], Ja[4, c], Ja[5, c]), cross(dA, jwa))
            JvB = sub((Jb[3, c], Jb[4, c], Jb[5, c]), cross(dB, jwb))
            g = mtv(RA, sub(jwb, jwa)) + mtv(RA, add(sub(JvB, JvA), cross(D, jwa)))
            for i in range(6 - n):
                sm = 0.0
                for x in range(6):
                    sm += Q[x, n + i] * g[x]
                Jc[r0 + i, c] = sm
        for i in range(6 - n):
            sm = 0.0
            for x in range(6):
                sm += Q[x, n + i] * (TG[k, 18 + x] - (bias[j, x] if n > 0 else 0.0))
            bc[r0 + i] = sm
        r0 += 6 - n


def expansion(cp, ws, OFF, q, v, zv):
    """(q, v, a, G) of the tree the kernel runs at a state (q, v) of a model: with ``cp`` None the
    state itself, the zero accelerations ``zv`` and an empty G (0, 0); with ``cp`` a
    ``couplers.Coupled`` record (its tables: one record serves every thread) the expansion's
    q_full = phi(q), v_full = G v, the acceleration bias Gdot v and G, in the workspace."""
    raise NotImplementedError("compiled code only")


@overload(expansion)
def _expansion_impl(cp, ws, OFF, q, v, zv):
    if isinstance(cp, types.NoneType):
        def itself(cp, ws, OFF, q, v, zv):
            return q, v, zv, rows(ws, 0, 0, 0)
        return itself

    def expanded(cp, ws, OFF, q, v, zv):
        nqf, nvf, nv = OFF[O_QF + 1] - OFF[O_QF], OFF[O_VF + 1] - OFF[O_VF], v.shape[0]
        qf, vf, af = vec(ws, OFF[O_QF], nqf), vec(ws, OFF[O_VF], nvf), vec(ws, OFF[O_AF], nvf)
        G = rows(ws, OFF[O_G], nvf, nv)
        expand_state(cp.own_q, cp.own_v, cp.cq, cp.cv, cp.cnind, cp.cind_q, cp.cind_v, cp.cfadr, cp.cscale,
                     cp.params, q, v, zv, nvf - nvf + 2, vec(ws, OFF[O_QI], MAX_IND),
                     vec(ws, OFF[O_VI], MAX_IND), qf, vf, af, G)
        return qf, vf, af, G
    return expanded


@jit
def _reduce(G, Mf, hf, Jcf, T, M, h, Jc):
    """M = G^T M_full G (T = G^T M_full), h = G^T h_full, Jc = Jc_full G."""
    gt_mul(G, Mf, T)
    gt_mul(G, T.T, M)
    gt_mul(G, Jcf.T, Jc.T)
    for a in range(G.shape[1]):
        x = 0.0
        for k in range(G.shape[0]):
            x += G[k, a] * hf[k]
        h[a] = x


@jit
def constrained_state(mb, w, cmb, cw, full, cfull, LI, LF, qn, OFF, F0, q, v, tau, t, lstsq, ws, qdd, tauc,
                      wrench, qc, sc, dvel, cp):
    """Constrained forward dynamics of one state (the module's docstring) into qdd, tauc
    (Jc^T lam), wrench (n_loops, 6), qc (the closure coordinates) and sc = (status, rank of Jc,
    max |Jc qdd + bc|, position residual max_l |N_l^T e_l|, velocity residual
    max |N_c^T (t_rel - sigma_c)|) and dvel, the velocity projection's correction
    -M^-1 Jc^T A^+ (N_c^T (t_rel - sigma_c)) (A's singular values below VEL_TOL times the largest
    cut, as ``ej.project_velocity``); the workspace keeps the position error N_c^T e (``O_PE``)
    and its correction -M^-1 Jc^T A^+ N_c^T e (``O_DP``, the same cut).  ``cp``: None, or for a
    model with couplers its ``couplers.Coupled`` record (its tables; mb, w: its expansion's)."""
    m, r, s = views(mb, w)
    cm, cr, cs = views(cmb, cw)
    qf, vf, af, G = expansion(cp, ws, OFF, q, v, s.zv)
    constrained_views(m, r, s, cm, cr, cs, full, cfull, LI, LF, qn, OFF, F0, np.int64(0), qf, vf, af, G, tau, t,
                      lstsq, -1.0, ws, qdd, tauc, wrench, qc, sc, dvel)


@jit
def constrained_views(m, r, s, cm, cr, cs, full, cfull, LI, LF, qn, OFF, F0, fb, q, v, a0, G, tau, t, lstsq, quick,
                      ws, qdd, tauc, wrench, qc, sc, dvel):
    """``constrained_state`` on the views of the tree (m, r, s) and of the closure tree (cm, cr,
    cs), with external wrenches F0[:, fb] (none: F0 of shape (0, 1, 6)).  (q, v, a0, G) are
    ``couplers.expansion``'s: the tree's state, the accelerations of its forward sweep (zero, or
    Gdot v) and G, (0, 0) without couplers; with couplers M = G^T M_full G, h = G^T h_full,
    Jc = Jc_full G and tau, qdd, the corrections in the model's own velocities.  Where both
    residuals are at most ``quick`` it stops after them (sc[3], sc[4]; the rest not computed): a
    state that needs no projection (-1: never)."""
    n1 = m.body_parent.shape[0]
    nv = tau.shape[0]
    nvf = v.shape[0]
    coupled = G.shape[0] > 0
    nl = LI.shape[0]
    nvc = cs.zv.shape[0]
    nc = OFF[O_END + 1]
    for x in range(5):
        sc[x] = 0.0
    st, jj = inputs.check(m, q, v, v, 1, t)
    for c in range(nv):
        if not np.isfinite(tau[c]):
            st = inputs.NONFINITE
    if st != 0:
        sc[0] = ST_INPUT
        return
    zero = np.int64(0)
    two = np.int64(2)
    forward(m, r, s, q, v, a0, t, two, np.bool_(True), full)
    Rb, p, wv, vo, al, ao = fk_out(vec(ws, OFF[O_FK], 24 * n1), np.int64(1), n1, two)
    world_kinematics(m, r, two, zero, Rb, p, wv, vo, al, ao)
    st = _closures(cm, cr, cs, cfull, LI, qn, OFF, ws, Rb, p, wv, vo, al, ao, LF, qc, nl)
    if st != 0:
        sc[0] = st
        return
    # the closures' velocities v_c = J_c^+ (t_rel - sigma_c), then their bias at (q_c, v_c)
    vc = vec(ws, OFF[O_VC], nvc)
    e = vec(ws, OFF[O_E], 6)
    TG = rows(ws, OFF[O_TG], nl, 30)
    r0 = 0
    for k in range(nl):
        j = LI[k, 2]
        vs = cm.jnt_dofadr[j]
        for x in range(6):
            e[x] = TG[k, x] - TG[k, 24 + x]
        # the velocity error N_c^T (t_rel - sigma_c) of the state (rows r0.. of RHS[1])
        for i in range(cm.jnt_nv[j], 6):
            sm = 0.0
            for x in range(6):
                sm += ws[OFF[O_Q] + 36 * k + 6 * x + i] * e[x]
            ws[OFF[O_RHS] + nc + r0] = sm
            r0 += 1
            sc[4] = max(sc[4], abs(sm))
        sc[3] = max(sc[3], ws[OFF[O_ACT] + nl + k])
        qr_lstsq(rows(ws, OFF[O_Q] + 36 * k, 6, 6), rows(ws, OFF[O_R] + 36 * k, 6, 6), cm.jnt_nv[j], e,
                 vec(ws, OFF[O_VC] + vs, max(cm.jnt_nv[j], 1)))
    if sc[3] <= quick and sc[4] <= quick:
        return
    # h, M and Jc of the tree (its expansion's with couplers, then reduced by G)
    h = vec(ws, OFF[O_H], nv)
    hf = vec(ws, OFF[O_HF] if coupled else OFF[O_H], nvf)
    rnea_forces(m, r, s, F0, fb, a0, hf)
    M = rows(ws, OFF[O_M], nv, nv)
    Mf = rows(ws, OFF[O_MF] if coupled else OFF[O_M], nvf, nvf)
    crba_after(m, r, s, Mf)
    cbuf = vec(ws, OFF[O_CJT], OFF[O_CJT + 1] - OFF[O_CJT])
    J, sig, bias, Rj, rj = _closure_sweep(cm, cr, cs, qc, vc, zero + 1, cfull, cbuf, cm.body_parent.shape[0], nvc)
    Jc = rows(ws, OFF[O_JC], nc, nv)
    Jcf = rows(ws, OFF[O_JCF] if coupled else OFF[O_JC], nc, nvf)
    bc = vec(ws, OFF[O_BC], nc)
    _jc_rows(m, r, LI, LF, OFF, ws, Rb, p, wv, vo, al, ao, bias, Jcf, bc, nl, nvf)
    if coupled:
        _reduce(G, Mf, hf, Jcf, rows(ws, OFF[O_T], nv, nvf), M, h, Jc)
    # the rank of Jc: its singular values (one-sided Jacobi on a copy of its rows)
    Y = rows(ws, OFF[O_Y], nc, nv)
    for i in range(nc):
        for c in range(nv):
            Y[i, c] = Jc[i, c]
    jacobi_rows(Y, nc, nv, rows(ws, 0, 0, nc))
    smax = 0.0
    for i in range(nc):
        smax = max(smax, row_norm(Y, i, nv))
    rank = 0
    for i in range(nc):
        if smax > 0.0 and row_norm(Y, i, nv) > RANK_TOL * smax:
            rank += 1
    sc[1] = rank
    if rank < nc and not lstsq:
        sc[0] = ST_RANK
        return
    # a0 = M^-1 (tau - h) and M^-1 Jc^T by Cholesky of M
    if chol_factor(M, 0.0) >= 0:
        sc[0] = ST_MASS
        return
    X = rows(ws, OFF[O_X], 1 + nc, nv)
    for c in range(nv):
        X[0, c] = tau[c] - h[c]
        for i in range(nc):
            X[1 + i, c] = Jc[i, c]
    for i in range(1 + nc):
        chol_subst(M, X[i], X[i])
    A = rows(ws, OFF[O_A], nc, nc)
    RHS = rows(ws, OFF[O_RHS], 3, nc)
    LAM = rows(ws, OFF[O_LAM], 3, nc)
    rhs, ve, pe, lam, mu, nu = RHS[0], RHS[1], RHS[2], LAM[0], LAM[1], LAM[2]
    for i in range(nc):
        pe[i] = ws[OFF[O_PE] + i]
    for i in range(nc):
        sm = 0.0
        for c in range(nv):
            sm += Jc[i, c] * X[0, c]
        rhs[i] = -(sm + bc[i])
        for k in range(nc):
            sm = 0.0
            for c in range(nv):
                sm += Jc[i, c] * X[1 + k, c]
            A[i, k] = sm
    if rank == nc:
        if chol_factor(A, 0.0) >= 0:
            sc[0] = ST_SCHUR
            return
        chol_subst(A, rhs, lam)
        chol_subst(A, ve, mu)
        chol_subst(A, pe, nu)
    else:
        # minimum-norm lam = A^+ rhs, mu = A^+ ve: rows of A rotated orthogonal, rhs and ve with them
        jacobi_rows(A, nc, nc, RHS)
        amax = 0.0
        for i in range(nc):
            amax = max(amax, row_norm(A, i, nc))
        for k in range(nc):
            lam[k] = 0.0
            mu[k] = 0.0
            nu[k] = 0.0
        for i in range(nc):
            si = row_norm(A, i, nc)
            f = rhs[i] / (si * si) if si > RANK_TOL * amax else 0.0
            g = ve[i] / (si * si) if si > VEL_TOL * amax else 0.0
            gp = pe[i] / (si * si) if si > VEL_TOL * amax else 0.0
            for k in range(nc):
                lam[k] += f * A[i, k]
                mu[k] += g * A[i, k]
                nu[k] += gp * A[i, k]
    for c in range(nv):
        a = X[0, c]
        tc = 0.0
        for i in range(nc):
            a += lam[i] * X[1 + i, c]
            tc += Jc[i, c] * lam[i]
        qdd[c] = a
        tauc[c] = tc
        dv = 0.0
        dp = 0.0
        for i in range(nc):
            dv -= mu[i] * X[1 + i, c]
            dp -= nu[i] * X[1 + i, c]
        dvel[c] = dv
        ws[OFF[O_DP] + c] = dp
    r0 = 0
    for k in range(nl):
        n = cm.jnt_nv[LI[k, 2]]
        Q = rows(ws, OFF[O_Q] + 36 * k, 6, 6)
        for x in range(6):
            sm = 0.0
            for i in range(6 - n):
                sm += Q[x, n + i] * lam[r0 + i]
            wrench[k, x] = sm
        r0 += 6 - n
    res = 0.0
    for i in range(nc):
        sm = bc[i]
        for c in range(nv):
            sm += Jc[i, c] * qdd[c]
        res = max(res, abs(sm))
    sc[2] = res


@pjit
def constrained_many(mb, W, cmb, CW, full, cfull, LI, LF, qn, OFF, F0, Q, V, TAU, T, lstsq, WS, QDD, TC, WR, QC,
                     SC, DV, cp):
    """``constrained_state`` of every state of a batch, in chunks run in parallel (one workspace
    per chunk; ``cp`` as there): each state's result is bit for bit that of a lone call."""
    B = Q.shape[0]
    nchunk = W.shape[0]
    for c in prange(nchunk):
        for b in range(c * B // nchunk, (c + 1) * B // nchunk):
            constrained_state(mb, W[c], cmb, CW[c], full, cfull, LI, LF, qn, OFF, F0, Q[b], V[b], TAU[b], T[b],
                              lstsq, WS[c], QDD[b], TC[b], WR[b], QC[b], SC[b], DV[b], cp)
