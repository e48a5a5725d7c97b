"""Derivatives of inverse and forward dynamics for any EJCE joint: d tau / d(q, v, qdd, t) of the
recursive Newton-Euler algorithm and d qdd / d(q, v, tau, t) of forward dynamics.

    tau = ID(q, v, a, t):    dtau_dq, dtau_dv, dtau_da = M, dtau_dt
    qdd = FD(q, v, tau, t):  dqdd_dq = -M^-1 dtau_dq,  dqdd_dv = -M^-1 dtau_dv,  dqdd_dtau = M^-1,
                             dqdd_dt = -M^-1 dtau_dt         (all at a = FD(q, v, tau, t))

The q-derivative is taken on the tangent space: a unit quaternion moves as q (x) Exp(dtheta),
dtheta in its own (C) axes, as its velocity variables do (Pinocchio's convention); every other
coordinate is its own tangent (plain partial derivatives).  ``tangent_map`` gives the matrix that
turns these columns into derivatives with respect to the coordinates.

Method: forward-mode differentiation of the recursive sweeps (the tangent of RNEA, in the spirit
of Carpentier and Mansard, RSS 2018), one direction per velocity variable, each an O(N) sweep over
the subtree the direction moves and the path back to the root.  In each body's outboard frame
C_i, with the joint's X_i, S_i, vJ_i, cJ_i:

    dv_i = X_i dv_p + [dv_i^J]                 da_i = X_i da_p + dv_i x vJ_i + [da_i^J]
    df_i = I_i da_i + dv_i x* I_i v_i + v_i x* I_i dv_i + [dz_i x* f_ext,i]
    dtau_i = S_i^T df_i + [dS_i^T f_i],        df_p += X_i^T df_i + [X_i^T (xi x* f_i)]

the bracketed terms only where the direction moves joint i itself.  A displacement of joint i's
coordinates by dq moves C_i by the twist xi = S_i dq (C axes), so dX_i = -(xi x) X_i exactly for
every joint; and with dS_i, dvJ_i, dcJ_i the joint's own derivatives,

    dv_i^J = (X_i v_p) x xi + dvJ_i,    da_i^J = (X_i a_p) x xi + dS_i u'_i + dcJ_i + v_i x dvJ_i

(dz: the displacement of each frame, for the world-fixed external wrenches).  A velocity direction
moves only vJ_i (by S_i e_k) and cJ_i.  The time direction of a rheonomic model moves every driven
joint at once, with xi = R^T sigma.

The joint's own derivatives come from the joint's terms:

* products of elementary screw motions with amounts scale * q_k (revolute, prismatic, helical,
  cylindrical, universal, planar, translation, every Euler-angle spherical and free joint): the
  twist S_m of motion m seen from C depends on the later amounts only, dS_m/df_p = S_m x S_p
  (p > m), so dS, dvJ = sum_m f'_m dS_m and dcJ (of cJ = sum_{m<n} f'_m f'_n S_m x S_n) are
  brackets of the recorded S_m: exact.
* unit quaternions (spherical and free): closed forms (S constant, the free joint's translation
  columns R^T e_k turn with the rotation): exact.
* dcJ/du for every joint: cJ is exactly quadratic in u (the EJCE bias), so its polarisation
  (cJ(u + h e_k) - cJ(u - h e_k)) / 2h, from the joint's own jets, is exact to rounding.
* joints given by a general pose function (composite joints whose amounts are functions:
  splines, drives; rotation-vector, Gibbs and modified-Rodrigues spherical joints; ``Custom``
  joints): dS, dvJ and dcJ with respect to the joint's coordinates and time need third
  derivatives of the pose, which its second-order jets do not carry; they come from a
  Richardson-extrapolated central difference of the joint's own exact terms (S, vJ, cJ from its
  jets) over its own coordinates, step 1e-3 (relative error about 1e-11; at a spline knot the
  third derivative jumps and the result is the mean of both sides).  Everything else is exact.

Couplers (mimic joints): tau = G^T tau_full(phi(q), G v, G a + Gdot v) differentiated by the chain
rule on the expansion's derivatives; G's derivatives come from the couplers' jets (polarisation,
exact), the q-derivative of Gdot v (third derivatives of the coupler functions) from a
Richardson difference of the coupler map.
"""
import numpy as np
from numba import prange

from . import engine
from ..model import inputs
from .._jit import jit, pjit
from .aba import aba_state
from .api import aba, rnea
from .crba import crba_state
from .kinematics import forward
from .rnea import fext, rnea_forces
from ..core.ejce import PATH_JETS, PATH_QUAT, PATH_SCREW, PATH_USER, joint_position, joint_velocity
from ..model.layout import H_REC, model_view, record_view, scratch_view, table
from ..core.spatial import (ZERO6, add6, axpy6, crf, crm, cross, dot6, inertia_mul, ld3, ld6, ld9, mtv, st6, sub6,
                            xforce_T, xmotion)

FD_STEP = 1e-3


# ---------------------------------------------------------------------------- the joint's own terms
@jit
def _exact_path(m, i):
    """Whether joint i's derivatives have closed forms (screws with linear amounts, quaternions)."""
    p = m.jnt_path[i]
    return (p == PATH_SCREW and m.jnt_fn[i] == 0) or p == PATH_QUAT


@jit
def screw_tangent(m, r, i, c, v, D, X0):
    """Joint i a product of screws with linear amounts; direction: its coordinate c (q) and its
    velocity variable c (u).  Writes xi, dvJ, dcJ, dcJ/du_c and the rows of dS into D from X0."""
    vs = m.jnt_dofadr[i]
    nvj = m.jnt_nv[i]
    m0 = m.jnt_madr[i]
    m1 = m0 + m.jnt_nmot[i]
    for k in range(nvj):
        st6(D, X0 + 4 + k, ZERO6)
    dvj = ZERO6
    dcj = ZERO6
    dcu = ZERO6
    for p in range(m0, m1):
        if m.mot_coord[p] != c:
            continue
        sp = m.mot_scale[p]
        Sp = ld6(r.mS, p)
        for a in range(m0, p):
            Sa = ld6(r.mS, a)
            ca = m.mot_coord[a]
            X = crm(Sa, Sp)
            st6(D, X0 + 4 + ca, axpy6(m.mot_scale[a] * sp, X, ld6(D, X0 + 4 + ca)))
            fa = m.mot_scale[a] * v[vs + ca]
            dvj = axpy6(fa * sp, X, dvj)
            dcu = axpy6(fa * sp, X, dcu)
        for n in range(p + 1, m1):
            dcu = axpy6(sp * m.mot_scale[n] * v[vs + m.mot_coord[n]], crm(Sp, ld6(r.mS, n)), dcu)
        # cJ = sum_{a<n} f'_a f'_n S_a x S_n, and dS_a/df_p = S_a x S_p for p > a
        for a in range(m0, p):
            Sa = ld6(r.mS, a)
            fa = m.mot_scale[a] * v[vs + m.mot_coord[a]]
            dSa = crm(Sa, Sp)
            for n in range(a + 1, m1):
                fn = m.mot_scale[n] * v[vs + m.mot_coord[n]]
                Sn = ld6(r.mS, n)
                coef = fa * fn * sp
                dcj = axpy6(coef, crm(dSa, Sn), dcj)
                if p > n:
                    dcj = axpy6(coef, crm(Sa, crm(Sn, Sp)), dcj)
    st6(D, X0, ld6(r.S, vs + c))
    st6(D, X0 + 1, dvj)
    st6(D, X0 + 2, dcj)
    st6(D, X0 + 3, dcu)


@jit
def quat_tangent(m, r, i, c, v, D, X0):
    """Joint i a spherical or free joint on a unit quaternion: closed forms.  The rotation's
    tangent is dtheta in C axes (q (x) Exp(dtheta)); a free joint's translation is in P axes."""
    vs = m.jnt_dofadr[i]
    nvj = m.jnt_nv[i]
    for k in range(nvj):
        st6(D, X0 + 4 + k, ZERO6)
    st6(D, X0, ld6(r.S, vs + c))
    st6(D, X0 + 1, ZERO6)
    st6(D, X0 + 2, ZERO6)
    st6(D, X0 + 3, ZERO6)
    if m.jnt_quat[i] != 3:
        return
    R = ld9(r.Rrel, i)
    # R^T rdot and the angular velocity w (C axes)
    rd = (R[0] * v[vs] + R[3] * v[vs + 1] + R[6] * v[vs + 2],
          R[1] * v[vs] + R[4] * v[vs + 1] + R[7] * v[vs + 2],
          R[2] * v[vs] + R[5] * v[vs + 1] + R[8] * v[vs + 2])
    w = (v[vs + 3], v[vs + 4], v[vs + 5])
    if c < 3:
        # u-direction rdot_c: cJ = [0; -w x R^T rdot]
        col = (R[3 * c], R[3 * c + 1], R[3 * c + 2])
        x = cross(w, col)
        st6(D, X0 + 3, (0.0, 0.0, 0.0, -x[0], -x[1], -x[2]))
        return
    e = (1.0 if c == 3 else 0.0, 1.0 if c == 4 else 0.0, 1.0 if c == 5 else 0.0)
    x = cross(e, rd)
    st6(D, X0 + 3, (0.0, 0.0, 0.0, -x[0], -x[1], -x[2]))
    # a rotation dtheta = e turns every vector R^T y by -e x (R^T y)
    for k in range(3):
        col = (R[3 * k], R[3 * k + 1], R[3 * k + 2])
        y = cross(e, col)
        st6(D, X0 + 4 + k, (0.0, 0.0, 0.0, -y[0], -y[1], -y[2]))
    st6(D, X0 + 1, (0.0, 0.0, 0.0, -x[0], -x[1], -x[2]))
    z = cross(w, x)
    st6(D, X0 + 2, (0.0, 0.0, 0.0, z[0], z[1], z[2]))


@jit
def _eval_joint(m, r, s, i, q, v, t):
    joint_position(m, r, s, i, q, v, t, False)
    joint_velocity(m, r, s, i, q, v, t, False, True)


@jit
def general_tangent(m, r, s, i, c, q, v, t, qp, vp, D, X0):
    """Joint i given by a general pose function; direction: coordinate c (c < 0: time) and, for
    c >= 0, velocity variable c.  dS, dvJ, dcJ by Richardson's extrapolation of central
    differences of the joint's exact terms; dcJ/du_c by polarisation (exact: cJ is quadratic in
    u).  The record's entries of joint i are restored."""
    vs = m.jnt_dofadr[i]
    nvj = m.jnt_nv[i]
    qs = m.jnt_qadr[i]
    for k in range(nvj):
        st6(D, X0 + 4 + k, ZERO6)
    if c >= 0:
        st6(D, X0, ld6(r.S, vs + c))
    else:
        # xi = R^T sigma = vJ - S u
        x = ld6(r.vJ, i)
        for k in range(nvj):
            x = axpy6(-v[vs + k], ld6(r.S, vs + k), x)
        st6(D, X0, x)
    x0 = q[qs + c] if c >= 0 else t
    h = FD_STEP * (1.0 + abs(x0))
    dvj = ZERO6
    dcj = ZERO6
    for e in range(4):
        if e == 0:
            step, w = h, -1.0 / (6.0 * h)
        elif e == 1:
            step, w = -h, 1.0 / (6.0 * h)
        elif e == 2:
            step, w = 0.5 * h, 4.0 / (3.0 * h)
        else:
            step, w = -0.5 * h, -4.0 / (3.0 * h)
        if c >= 0:
            qp[qs + c] = x0 + step
            _eval_joint(m, r, s, i, qp, v, t)
        else:
            _eval_joint(m, r, s, i, q, v, t + step)
        for k in range(nvj):
            st6(D, X0 + 4 + k, axpy6(w, ld6(r.S, vs + k), ld6(D, X0 + 4 + k)))
        dvj = axpy6(w, ld6(r.vJ, i), dvj)
        dcj = axpy6(w, ld6(r.cJ, i), dcj)
    if c >= 0:
        qp[qs + c] = x0
    st6(D, X0 + 1, dvj)
    st6(D, X0 + 2, dcj)
    _eval_joint(m, r, s, i, q, v, t)
    if c >= 0:
        hu = 1.0 + abs(v[vs + c])
        vp[vs + c] = v[vs + c] + hu
        joint_velocity(m, r, s, i, q, vp, t, False, False)
        cp = ld6(r.cJ, i)
        vp[vs + c] = v[vs + c] - hu
        joint_velocity(m, r, s, i, q, vp, t, False, False)
        cm = ld6(r.cJ, i)
        vp[vs + c] = v[vs + c]
        st6(D, X0 + 3, axpy6(0.5 / hu, sub6(cp, cm), ZERO6))
        joint_velocity(m, r, s, i, q, v, t, False, False)


@jit
def joint_tangent(m, r, s, i, c, q, v, t, qp, vp, D, X0):
    if m.jnt_path[i] == PATH_QUAT:
        quat_tangent(m, r, i, c, v, D, X0)
    elif _exact_path(m, i):
        screw_tangent(m, r, i, c, v, D, X0)
    else:
        general_tangent(m, r, s, i, c, q, v, t, qp, vp, D, X0)


# ---------------------------------------------------------------------------- the tangent sweeps
@jit
def _joint_accel(m, r, i, a):
    """X_i a_p (a_0 = -g): the body's acceleration less the joint's own part."""
    x = sub6(sub6(ld6(r.acc, i), ld6(r.cJ, i)), crm(ld6(r.vel, i), ld6(r.vJ, i)))
    for k in range(m.jnt_dofadr[i], m.jnt_dofadr[i] + m.jnt_nv[i]):
        x = axpy6(-a[k], ld6(r.S, k), x)
    return x


@jit
def _body_force(m, i, vi, dvi, dai):
    mass = m.body_mass[i]
    h = ld3(m.body_hC, i)
    I = ld9(m.body_IC, i)
    return add6(add6(inertia_mul(mass, h, I, dai), crf(dvi, inertia_mul(mass, h, I, vi))),
                crf(vi, inertia_mul(mass, h, I, dvi)))


@jit
def _wrench_turn(m, i, dz, D, FC):
    """The change of body i's external wrench in C_i when C_i turns by dz's rotation: the wrench
    keeps its world axes and its point of application, the body origin (fixed in C_i at bo_i);
    D[FC + i] holds its moment (about the body origin) and force in C axes."""
    w = (dz[0], dz[1], dz[2])
    n0 = (D[FC + i, 0], D[FC + i, 1], D[FC + i, 2])
    f0 = (D[FC + i, 3], D[FC + i, 4], D[FC + i, 5])
    b = ld3(m.body_bo, i)
    wn = cross(w, n0)
    wf = cross(w, f0)
    bwf = cross(b, wf)
    return (-wn[0] - bwf[0], -wn[1] - bwf[1], -wn[2] - bwf[2], -wf[0], -wf[1], -wf[2])


@jit
def direction(m, r, s, D, aff, j, c, k, q, v, a, t, qp, vp, has_f, dq, dv):
    """Columns k of dtau/dq and dtau/dv: coordinate (tangent) c and velocity variable c of joint j."""
    n1 = m.body_parent.shape[0]
    nv = dq.shape[0]
    DVQ, DAQ, DFQ, DVU, DAU, DFU, DZ, FC = 0, n1, 2 * n1, 3 * n1, 4 * n1, 5 * n1, 6 * n1, 7 * n1
    X0 = 9 * n1 + nv
    joint_tangent(m, r, s, j, c, q, v, t, qp, vp, D, X0)
    for x in range(nv):
        dq[x, k] = 0.0
        dv[x, k] = 0.0
    xi = ld6(D, X0)
    for i in range(j, n1):
        l = m.body_parent[i]
        if i == j:
            aff[i] = 1.0
        else:
            aff[i] = aff[l] if l >= j else 0.0
        if aff[i] == 0.0:
            continue
        vi = ld6(r.vel, i)
        vJ = ld6(r.vJ, i)
        if i == j:
            dvJ = ld6(D, X0 + 1)
            dvq = add6(crm(sub6(vi, vJ), xi), dvJ)
            daq = add6(crm(_joint_accel(m, r, i, a), xi), ld6(D, X0 + 2))
            for x in range(m.jnt_nv[i]):
                daq = axpy6(a[m.jnt_dofadr[i] + x], ld6(D, X0 + 4 + x), daq)
            daq = add6(daq, add6(crm(dvq, vJ), crm(vi, dvJ)))
            Sc = ld6(r.S, m.jnt_dofadr[i] + c)
            dvu = Sc
            dau = add6(ld6(D, X0 + 3), add6(crm(Sc, vJ), crm(vi, Sc)))
            dz = xi
        else:
            E = ld9(r.E, i)
            d = ld3(r.d, i)
            dvq = xmotion(E, d, ld6(D, DVQ + l))
            daq = add6(xmotion(E, d, ld6(D, DAQ + l)), crm(dvq, vJ))
            dvu = xmotion(E, d, ld6(D, DVU + l))
            dau = add6(xmotion(E, d, ld6(D, DAU + l)), crm(dvu, vJ))
            dz = xmotion(E, d, ld6(D, DZ + l))
        st6(D, DVQ + i, dvq)
        st6(D, DAQ + i, daq)
        st6(D, DVU + i, dvu)
        st6(D, DAU + i, dau)
        st6(D, DZ + i, dz)
        fq = _body_force(m, i, vi, dvq, daq)
        if has_f:
            fq = sub6(fq, _wrench_turn(m, i, dz, D, FC))
        st6(D, DFQ + i, fq)
        st6(D, DFU + i, _body_force(m, i, vi, dvu, dau))
    l = m.body_parent[j]
    while l > 0:
        st6(D, DFQ + l, ZERO6)
        st6(D, DFU + l, ZERO6)
        l = m.body_parent[l]
    for i in range(n1 - 1, j - 1, -1):
        if aff[i] == 0.0:
            continue
        fq = ld6(D, DFQ + i)
        fu = ld6(D, DFU + i)
        fi = ld6(s.f, i)
        vs = m.jnt_dofadr[i]
        for x in range(m.jnt_nv[i]):
            dq[vs + x, k] = dot6(ld6(r.S, vs + x), fq)
            dv[vs + x, k] = dot6(ld6(r.S, vs + x), fu)
            if i == j:
                dq[vs + x, k] += dot6(ld6(D, X0 + 4 + x), fi)
        l = m.body_parent[i]
        if l > 0:
            E = ld9(r.E, i)
            d = ld3(r.d, i)
            if i == j:
                fq = add6(fq, crf(xi, fi))
            st6(D, DFQ + l, add6(ld6(D, DFQ + l), xforce_T(E, d, fq)))
            st6(D, DFU + l, add6(ld6(D, DFU + l), xforce_T(E, d, fu)))
    l = m.body_parent[j]
    while l > 0:
        fq = ld6(D, DFQ + l)
        fu = ld6(D, DFU + l)
        vs = m.jnt_dofadr[l]
        for x in range(m.jnt_nv[l]):
            dq[vs + x, k] = dot6(ld6(r.S, vs + x), fq)
            dv[vs + x, k] = dot6(ld6(r.S, vs + x), fu)
        p = m.body_parent[l]
        if p > 0:
            E = ld9(r.E, l)
            d = ld3(r.d, l)
            st6(D, DFQ + p, add6(ld6(D, DFQ + p), xforce_T(E, d, fq)))
            st6(D, DFU + p, add6(ld6(D, DFU + p), xforce_T(E, d, fu)))
        l = p


@jit
def time_direction(m, r, s, D, JR, q, v, a, t, qp, vp, has_f, dt):
    """dtau/dt of a rheonomic model: every driven joint (JR[i] != 0) moves with time."""
    n1 = m.body_parent.shape[0]
    nv = dt.shape[0]
    DV, DA, DF, DZ, FC, XT, DST = 0, n1, 2 * n1, 6 * n1, 7 * n1, 8 * n1, 9 * n1
    X0 = 9 * n1 + nv
    for i in range(1, n1):
        l = m.body_parent[i]
        vi = ld6(r.vel, i)
        vJ = ld6(r.vJ, i)
        vs = m.jnt_dofadr[i]
        if l > 0:
            E = ld9(r.E, i)
            d = ld3(r.d, i)
            dvi = xmotion(E, d, ld6(D, DV + l))
            dai = xmotion(E, d, ld6(D, DA + l))
            dz = xmotion(E, d, ld6(D, DZ + l))
        else:
            dvi = ZERO6
            dai = ZERO6
            dz = ZERO6
        if JR[i] != 0:
            general_tangent(m, r, s, i, -1, q, v, t, qp, vp, D, X0)
            xi = ld6(D, X0)
            dvJ = ld6(D, X0 + 1)
            dvi = add6(dvi, add6(crm(sub6(vi, vJ), xi), dvJ))
            dai = add6(dai, add6(crm(_joint_accel(m, r, i, a), xi), ld6(D, X0 + 2)))
            for x in range(m.jnt_nv[i]):
                dai = axpy6(a[vs + x], ld6(D, X0 + 4 + x), dai)
                st6(D, DST + vs + x, ld6(D, X0 + 4 + x))
            dai = add6(dai, crm(vi, dvJ))
            dz = add6(dz, xi)
            st6(D, XT + i, xi)
        else:
            st6(D, XT + i, ZERO6)
            for x in range(m.jnt_nv[i]):
                st6(D, DST + vs + x, ZERO6)
        dai = add6(dai, crm(dvi, vJ))
        st6(D, DV + i, dvi)
        st6(D, DA + i, dai)
        st6(D, DZ + i, dz)
        f = _body_force(m, i, vi, dvi, dai)
        if has_f:
            f = sub6(f, _wrench_turn(m, i, dz, D, FC))
        st6(D, DF + i, f)
    for i in range(n1 - 1, 0, -1):
        df = ld6(D, DF + i)
        fi = ld6(s.f, i)
        vs = m.jnt_dofadr[i]
        for x in range(m.jnt_nv[i]):
            dt[vs + x] = dot6(ld6(r.S, vs + x), df) + dot6(ld6(D, DST + vs + x), fi)
        l = m.body_parent[i]
        if l > 0:
            df = add6(df, crf(ld6(D, XT + i), fi))
            st6(D, DF + l, add6(ld6(D, DF + l), xforce_T(ld9(r.E, i), ld3(r.d, i), df)))


# ---------------------------------------------------------------------------- one state
@jit
def _chol_inverse(M, L, Minv):
    """M^-1 into Minv by Cholesky (L: scratch); False where M is not clearly positive definite."""
    n = M.shape[0]
    for j in range(n):
        s = M[j, j]
        for k in range(j):
            s -= L[j, k] * L[j, k]
        if not (s > 0.0 and s > 1e-13 * M[j, j]):
            return False
        ljj = np.sqrt(s)
        L[j, j] = ljj
        for i in range(j + 1, n):
            s2 = M[i, j]
            for k in range(j):
                s2 -= L[i, k] * L[j, k]
            L[i, j] = s2 / ljj
    for c in range(n):
        # solve L y = e_c, then L^T x = y, into column c
        for i in range(n):
            s = 1.0 if i == c else 0.0
            for k in range(i):
                s -= L[i, k] * Minv[k, c]
            Minv[i, c] = s / L[i, i]
        for i in range(n - 1, -1, -1):
            s = Minv[i, c]
            for k in range(i + 1, n):
                s -= L[k, i] * Minv[k, c]
            Minv[i, c] = s / L[i, i]
    return True


@jit
def _left_mul_neg(Minv, A, W):
    """A <- -Minv A (W: scratch of A's shape)."""
    n = Minv.shape[0]
    for x in range(n):
        for y in range(A.shape[1]):
            s = 0.0
            for k in range(n):
                s -= Minv[x, k] * A[k, y]
            W[x, y] = s
    for x in range(n):
        for y in range(A.shape[1]):
            A[x, y] = W[x, y]


@jit
def rnea_derivatives_state(m, r, s, D, aff, JR, q, v, a, t, F, fb, want_t, qp, vp, tau, dq, dv, dt, M):
    """tau, dtau/dq, dtau/dv, M and (want_t) dtau/dt at (q, v, a, t)."""
    n1 = m.body_parent.shape[0]
    has_f = F.shape[0] > 0
    forward(m, r, s, q, v, a, t, 2, has_f, False)
    rnea_forces(m, r, s, F, fb, a, tau)
    crba_state(m, r, s, q, t, False, M)
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
def derivatives_samples(mb, R, S, per_state, DD, AF, QP, VP, WM, JR, Q, V, A, T, F, kind, want_t,
                        DQ, DV, DT, MM, status, c, nchunk):
    """Samples of chunk c of nchunk.  kind 0: A holds qdd, the results are dtau/d(q, v, t) and M;
    kind 1: A holds tau, the results are dqdd/d(q, v, t) and M^-1 (at qdd = aba)."""
    B = Q.shape[0]
    m = model_view(mb)
    s = scratch_view(mb, S[c], 0)
    nv = V.shape[1]
    for b in range(c * B // nchunk, (c + 1) * B // nchunk):
        r = record_view(mb, R[b] if per_state else R[c], 0)
        fb = b if F.shape[0] > 1 else 0
        st, j = inputs.check(m, Q[b], V[b], A[b], 2, T[b])
        if st == 0 and kind == 1:
            qdd = VP[c, 1]
            st, j = aba_state(m, r, s, Q[b], V[b], A[b], T[b], F, fb, False, qdd)
            if st == inputs.NEAR_SINGULAR:
                st = 0
        status[b, 0] = st
        status[b, 1] = j
        if st != 0:
            continue
        if kind == 0:
            rnea_derivatives_state(m, r, s, DD[c], AF[c], JR, Q[b], V[b], A[b], T[b], F, fb, want_t, QP[c],
                                   VP[c, 0], VP[c, 2], DQ[b], DV[b], DT[b], MM[b])
        else:
            rnea_derivatives_state(m, r, s, DD[c], AF[c], JR, Q[b], V[b], VP[c, 1], T[b], F, fb, want_t,
                                   QP[c], VP[c, 0], VP[c, 2], DQ[b], DV[b], DT[b], WM[c, 0])
            if not _chol_inverse(WM[c, 0], WM[c, 1], MM[b]):
                status[b, 0] = inputs.SINGULAR_MASS
                status[b, 1] = -1
                continue
            _left_mul_neg(MM[b], DQ[b], WM[c, 1])
            _left_mul_neg(MM[b], DV[b], WM[c, 1])
            for x in range(nv):
                s2 = 0.0
                for k in range(nv):
                    s2 -= MM[b, x, k] * DT[b, k]
                VP[c, 2, x] = s2
            for x in range(nv):
                DT[b, x] = VP[c, 2, x]


@pjit
def derivatives_many(mb, R, S, per_state, DD, AF, QP, VP, WM, JR, Q, V, A, T, F, kind, want_t,
                     DQ, DV, DT, MM, status):
    nchunk = S.shape[0]
    for c in prange(nchunk):
        derivatives_samples(mb, R, S, per_state, DD, AF, QP, VP, WM, JR, Q, V, A, T, F, kind, want_t,
                            DQ, DV, DT, MM, status, c, nchunk)


# ---------------------------------------------------------------------------- Python
_ND = np.ndarray


def _prepared(km):
    """The kernel model's per-joint time flags (driven and user-defined joints) and a pool of
    one-state scratch, kept on the model."""
    p = km.__dict__.get("_derivatives")
    if p is None:
        path = table(km._mb, km._mb, "jnt_path", (km.nbodies + 1,))
        jr = np.array([1 if (s.is_rheonomic() or path[j] == PATH_USER) else 0
                       for j, s in enumerate(km.joint_specs)], dtype=np.int64)
        p = (jr, [])
        object.__setattr__(km, "_derivatives", p)
    return p


def _scratch(km, n):
    """Per-chunk scratch of the derivative sweeps for n chunks."""
    n1, nq, nv = km.nbodies + 1, km.nq, km.nv
    return (np.zeros((n, 9 * n1 + nv + 10, 6)), np.zeros((n, n1)), np.zeros((n, max(nq, 1))),
            np.zeros((n, 3, nv)), np.zeros((n, 2, nv, nv)))


def _run(km, q2, v2, x2, t1, F, kind, want_t, data, B):
    """The kernels on the kernel model (no couplers): (DQ, DV, DT, MM, status)."""
    jr, pool = _prepared(km)
    n, nv = q2.shape[0], km.nv
    DQ = np.empty((n, nv, nv))
    DV = np.empty((n, nv, nv))
    DT = np.empty((n, nv))
    MM = np.empty((n, nv, nv))
    status = np.zeros((n, 2), dtype=np.int64)
    if B is None:
        w = data._w if data is not None else engine.one_workspace(km)
        try:
            scr = pool.pop()
        except IndexError:
            scr = _scratch(km, 1)
        R = w.reshape(1, -1)
        rec = int(km._mb[H_REC])
        S = w[rec:].reshape(1, -1)
        derivatives_samples(km._mb, R, S, False, *scr, jr, q2, v2, x2, t1, F, kind, want_t,
                            DQ, DV, DT, MM, status, 0, 1)
        pool.append(scr)
        if data is None:
            engine.release(km, w)
    else:
        R, S, per_state, token = engine.batch_workspace(km, n, data)
        scr = _scratch(km, S.shape[0])
        derivatives_many(km._mb, R, S, per_state, *scr, jr, q2, v2, x2, t1, F, kind, want_t,
                         DQ, DV, DT, MM, status)
        engine.release_batch(token)
    return DQ, DV, DT, MM, status


def _coupled_rnea(model, q2, v2, a2, t1, F, want_t, data, B):
    """Reduced derivatives of a model with couplers from its expansion's:
    tau = G^T tau_f(phi(q), G v, G a + Gdot v), by the chain rule."""
    km = model.expanded()
    n, nv = q2.shape[0], model.nv
    G = model.coupler_jacobian(q2)
    qf = model.expand(q2)
    vf = np.einsum("bij,bj->bi", G, v2)
    af = model.expand_a(a2, q2, v2)
    DQf, DVf, DTf, Mf, status = _run(km, qf, vf, af, t1, F, 0, want_t, None, 0)
    tauf = rnea(km, qf, vf, af, t1, None if F.shape[0] == 0 else F, errors="flag")[0]
    GT = np.transpose(G, (0, 2, 1))
    M = GT @ Mf @ G
    DQ = GT @ DQf @ G
    DV = GT @ DVf @ G
    DT = np.einsum("bji,bj->bi", G, DTf)
    if not model.couplers_linear:
        # d(Gdot v)/dv exactly (Gdot v is quadratic in v); d/dq of G (times v, a, and of G^T tau_f)
        # and of Gdot v by Richardson differences of the coupler map
        z = np.zeros_like(a2)
        gv = np.empty((n, km.nv, nv))
        for k in range(nv):
            e = np.zeros(nv)
            e[k] = 1.0 + np.abs(v2[:, k]).max()
            gv[:, :, k] = (model.expand_a(z, q2, v2 + e) - model.expand_a(z, q2, v2 - e)) / (2 * e[k])
        DV += GT @ Mf @ gv
        quat = np.zeros(nv, dtype=bool)
        for j, _ in model.quaternion_blocks():
            quat[model.v_slice(j)] = True
        vq = {}
        for j in range(1, model.nbodies + 1):
            for x in range(int(model.nv_joint[j])):
                vq[int(model.v_start[j]) + x] = int(model.q_start[j]) + x
        for k in range(nv):
            if quat[k]:
                continue
            kq = vq[k]
            h = FD_STEP * (1.0 + np.abs(q2[:, kq]).max())
            dG = np.zeros((n, km.nv, nv))
            dgv = np.zeros((n, km.nv))
            for step, w in ((h, -1 / (6 * h)), (-h, 1 / (6 * h)), (h / 2, 4 / (3 * h)), (-h / 2, -4 / (3 * h))):
                qs = q2.copy()
                qs[:, kq] += step
                dG += w * model.coupler_jacobian(qs)
                dgv += w * model.expand_a(z, qs, v2)
            dvf = np.einsum("bij,bj->bi", dG, v2)
            daf = np.einsum("bij,bj->bi", dG, a2) + dgv
            DQ[:, :, k] += (np.einsum("bji,bj->bi", dG, tauf) + np.einsum("bji,bj->bi", G, np.einsum(
                "bij,bj->bi", DVf, dvf) + np.einsum("bij,bj->bi", Mf, daf)))
    return DQ, DV, DT, M, status, tauf


def _one_state(model, q, qd, x, t, kind, time_derivative, errors):
    """One plain state (1-D float64 arrays of the right sizes, a float t, no wrenches, couplers or
    Data) straight to the kernel; None when the call must go through the input layer (a bad
    state included, which the input layer reports)."""
    if (model.has_couplers or type(q) is not _ND or type(qd) is not _ND or type(x) is not _ND
            or type(t) is not float or q.dtype != np.float64 or qd.dtype != np.float64 or x.dtype != np.float64
            or q.shape != (model.nq,) or qd.shape != (model.nv,) or x.shape != (model.nv,)
            or not (q.flags.c_contiguous and qd.flags.c_contiguous and x.flags.c_contiguous)):
        return None
    engine.check_errors(errors)
    want_t = bool(time_derivative) and model.rheonomic
    DQ, DV, DT, MM, status = _run(model, q.reshape(1, -1), qd.reshape(1, -1), x.reshape(1, -1), np.array([t]),
                                  _NO_FORCE[model.nbodies + 1], kind, want_t, None, None)
    if status[0, 0] != 0:
        return None
    out = (DQ[0], DV[0], MM[0]) + ((DT[0],) if time_derivative else ())
    return out + (0,) if errors == "flag" else out


class _NoForce(dict):
    def __missing__(self, n1):
        self[n1] = np.zeros((0, n1, 6))
        return self[n1]


_NO_FORCE = _NoForce()


def _derivatives(model, q, qd, x, t, f_ext, data, errors, kind, time_derivative, what):
    if f_ext is None and data is None:
        res = _one_state(model, q, qd, x, t, kind, time_derivative, errors)
        if res is not None:
            return res
    inputs.check_errors_arg(errors)
    B, q2, (v2, x2), t1 = inputs.states(model, q, ((qd, "qd"), (x, "qdd" if kind == 0 else "tau")), t)
    if data is not None:
        data._check(model, B)
    F = inputs.fext_array(model, f_ext, B)
    want_t = bool(time_derivative) and model.rheonomic
    if not model.has_couplers:
        DQ, DV, DT, MM, status = _run(model, q2, v2, x2, t1, F, kind, want_t, data, B)
    else:
        if kind == 0:
            DQ, DV, DT, MM, status, _ = _coupled_rnea(model, q2, v2, x2, t1, F, want_t, data, B)
        else:
            qdd, st = aba(model, q2, v2, x2, t1, None if F.shape[0] == 0 else F, errors="flag")
            ok = np.isfinite(qdd).all(axis=1)
            qdd = np.where(ok[:, None], qdd, 0.0)
            DQ, DV, DT, M, status, _ = _coupled_rnea(model, q2, v2, qdd, t1, F, want_t, data, B)
            MM = np.full_like(M, np.nan)
            for b in range(q2.shape[0]):
                if not ok[b]:
                    status[b] = (st[b], -1)
                    continue
                try:
                    L = np.linalg.cholesky(M[b])
                except np.linalg.LinAlgError:
                    status[b] = (inputs.SINGULAR_MASS, -1)
                    continue
                Li = np.linalg.inv(L)
                MM[b] = Li.T @ Li
            DQ = -MM @ DQ
            DV = -MM @ DV
            DT = -np.einsum("bij,bj->bi", MM, DT)
    bad = (status[:, 0] != 0) & (status[:, 0] != inputs.NEAR_SINGULAR)
    for A in (DQ, DV, DT, MM):
        A[bad] = np.nan
    out = [inputs.unbatch(B, DQ), inputs.unbatch(B, DV), inputs.unbatch(B, MM)]
    if time_derivative:
        out.append(inputs.unbatch(B, DT))
    res = inputs.flag_or_raise(errors, model, status, what, ["q", "qd", "qdd" if kind == 0 else "tau"],
                               [q2, v2, x2], t1, B, tuple(out))
    if errors == "flag":
        return tuple(res[0]) + (res[1],)
    return res


def rnea_derivatives(model, q, qd, qdd, t=0.0, f_ext=None, data=None, errors="raise", time_derivative=False):
    """Partial derivatives of inverse dynamics tau = rnea(q, qd, qdd, t, f_ext):
    ``(dtau_dq, dtau_dv, M)``, each (nv, nv) or (B, nv, nv), with dtau_dqdd = M (the mass matrix,
    armature included); ``time_derivative=True`` adds dtau_dt (nv,) or (B, nv) (zero for a model
    without driven joints).  dtau_dq is taken on the tangent space: a unit quaternion's columns
    are its rotation dtheta in its own axes, q (x) Exp(dtheta) (``tangent_map`` turns the columns
    into coordinate derivatives); every other column is the partial derivative with respect to
    that coordinate.  External wrenches are world-fixed: their moments turn with the bodies.
    ``errors="flag"``: the tuple, then the status codes."""
    return _derivatives(model, q, qd, qdd, t, f_ext, data, errors, 0, time_derivative, "rnea_derivatives")


def aba_derivatives(model, q, qd, tau, t=0.0, f_ext=None, data=None, errors="raise", time_derivative=False):
    """Partial derivatives of forward dynamics qdd = aba(q, qd, tau, t, f_ext):
    ``(dqdd_dq, dqdd_dv, Minv)``, each (nv, nv) or (B, nv, nv), with dqdd_dtau = Minv = M^-1;
    ``time_derivative=True`` adds dqdd_dt.  dqdd_dq = -M^-1 dtau_dq and dqdd_dv = -M^-1 dtau_dv
    at qdd = aba(q, qd, tau) (``rnea_derivatives``; the same tangent-space convention).  A
    singular joint or mass matrix is reported as by ``aba``."""
    return _derivatives(model, q, qd, tau, t, f_ext, data, errors, 1, time_derivative, "aba_derivatives")


def tangent_map(model, q):
    """T (nv, nq) with d/dq (coordinates) = d/dq (tangent, as the derivative functions give it) @ T:
    the identity for every coordinate whose rate is its velocity variable, and 4 N(q)^T for a
    unit quaternion block (dtheta = 4 N(q)^T dq for q' = N(q) u; zero along q, which every
    function normalises away)."""
    q = np.asarray(q, dtype=float)
    T = np.zeros((model.nv, model.nq))
    own = model  # velocity and coordinate slices of each joint
    for j in range(1, own.nbodies + 1):
        qs, vs = int(own.q_start[j]), int(own.v_start[j])
        nq, nv = int(own.nq_joint[j]), int(own.nv_joint[j])
        quat = getattr(own.joint_specs[j], "quaternion", False) and nq != nv
        nplain = nv - 3 if quat else nv
        for x in range(nplain):
            T[vs + x, qs + x] = 1.0
        if quat:
            w, x, y, z = q[qs + nq - 4: qs + nq]
            N = 0.5 * np.array([[-x, -y, -z], [w, -z, y], [z, w, -x], [-y, x, w]])
            T[vs + nplain: vs + nv, qs + nq - 4: qs + nq] = 4.0 * N.T
    return T
