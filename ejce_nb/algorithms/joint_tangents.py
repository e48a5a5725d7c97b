"""The joint's own derivatives for the tangent sweeps (``tangent_sweeps``): for joint i and one
direction (its coordinate c, its velocity variable c, or time), the twist xi by which C_i moves,
the changes dvJ, dcJ of its twist vJ = S u + sigma and bias cJ, dcJ/du_c, and the rows dS of its
motion subspace, written to rows X0 .. X0 + 3 + nv_i of D:

    D[X0] = xi,  D[X0 + 1] = dvJ,  D[X0 + 2] = dcJ,  D[X0 + 3] = dcJ/du_c,  D[X0 + 4 + k] = dS_k.

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
  third derivative jumps and the result is the mean of both sides).
"""
from numba import types
from numba.extending import overload

from .._jit import jit
from ..core.ejce import PATH_QUAT, PATH_SCREW, joint_position, joint_velocity
from ..core.spatial import ZERO6, add6, axpy6, crm, cross, ld6, ld9, st6, sub6

FD_STEP = 1e-3


@jit
def _exact_path(m, i):
    """Whether joint i's derivatives have closed forms (screws with linear amounts, quaternions)."""
    p = m.jnt_path[i]
    return (p == PATH_SCREW and m.jnt_fn[i] == 0) or p == PATH_QUAT


@jit
def no_own_terms(m, i):
    """Whether joint i's S, vJ / u and cJ do not change with its coordinates: one screw motion of
    constant axis and linear amount (revolute, prismatic, helical) or a spherical joint on a unit
    quaternion (S = [1; 0], vJ = [u; 0], cJ = 0).  Its own terms are zero."""
    p = m.jnt_path[i]
    return ((p == PATH_SCREW and m.jnt_fn[i] == 0 and m.jnt_nmot[i] == 1)
            or (p == PATH_QUAT and m.jnt_nv[i] == 3))


@jit(inline="always")
def screw_tangent(m, r, i, c, v, D, X0):
    """Joint i a product of screws with linear amounts; direction: its coordinate c (q) and its
    velocity variable c (u).  Writes xi, dvJ, dcJ, dcJ/du_c and the rows of dS into D from X0.

    With f'_m = scale_m u_(coord m), W = sum_m f'_m S_m (= vJ), U_m = sum_(a<m) f'_a S_a and,
    for each motion p of coordinate c (scale s_p), B_ap = S_a x S_p = dS_a/df_p (a < p):

        dS_(coord a) += s_a s_p B_ap,     dvJ += s_p U_p x S_p,
        dcJ/du_c += s_p (2 U_p x S_p + S_p x W),
        dcJ += s_p sum_(a<p) f'_a B_ap x (W - 2 U_a - f'_a S_a),

    the last from cJ = sum_(a<n) f'_a f'_n S_a x S_n, whose S_a and S_n both turn with f_p."""
    vs = m.jnt_dofadr[i]
    nvj = m.jnt_nv[i]
    m0 = m.jnt_madr[i]
    m1 = m0 + m.jnt_nmot[i]
    for k in range(nvj):
        st6(D, X0 + 4 + k, ZERO6)
    W = ZERO6
    for n in range(m0, m1):
        W = axpy6(m.mot_scale[n] * v[vs + m.mot_coord[n]], ld6(r.mS, n), W)
    dvj = ZERO6
    dcj = ZERO6
    dcu = ZERO6
    for p in range(m0, m1):
        if m.mot_coord[p] != c:
            continue
        sp = m.mot_scale[p]
        Sp = ld6(r.mS, p)
        U = ZERO6
        for a in range(m0, p):
            Sa = ld6(r.mS, a)
            ca = m.mot_coord[a]
            fa = m.mot_scale[a] * v[vs + ca]
            B = crm(Sa, Sp)
            st6(D, X0 + 4 + ca, axpy6(m.mot_scale[a] * sp, B, ld6(D, X0 + 4 + ca)))
            dcj = axpy6(fa * sp, crm(B, sub6(sub6(W, axpy6(2.0, U, ZERO6)), axpy6(fa, Sa, ZERO6))), dcj)
            U = axpy6(fa, Sa, U)
        US = crm(U, Sp)
        dvj = axpy6(sp, US, dvj)
        dcu = axpy6(sp, add6(axpy6(2.0, US, ZERO6), crm(Sp, W)), dcu)
    st6(D, X0, ld6(r.S, vs + c))
    st6(D, X0 + 1, dvj)
    st6(D, X0 + 2, dcj)
    st6(D, X0 + 3, dcu)


@jit(inline="always")
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
def _eval_joint(m, r, s, i, q, v, t, full):
    joint_position(m, r, s, i, q, v, t, full)
    joint_velocity(m, r, s, i, q, v, t, full, True)


def general_tangent(m, r, s, i, c, q, v, t, qp, vp, D, X0, full):
    """The tangent of a joint given by a general pose function (``_general_tangent``), compiled
    for models that have such joints: for ``full`` None (``ejce.PATHS``) every joint has closed
    forms and this is never called."""
    if full is not None:
        _general_tangent(m, r, s, i, c, q, v, t, qp, vp, D, X0, full)


@overload(general_tangent)
def _general_tangent_of(m, r, s, i, c, q, v, t, qp, vp, D, X0, full):
    if isinstance(full, types.NoneType):
        return lambda m, r, s, i, c, q, v, t, qp, vp, D, X0, full: None
    return lambda m, r, s, i, c, q, v, t, qp, vp, D, X0, full: _general_tangent(m, r, s, i, c, q, v, t, qp, vp, D,
                                                                                X0, full)


@jit
def _general_tangent(m, r, s, i, c, q, v, t, qp, vp, D, X0, full):
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
            _eval_joint(m, r, s, i, qp, v, t, full)
        else:
            _eval_joint(m, r, s, i, q, v, t + step, full)
        for k in range(nvj):
            st6(D, X0 + 4 + k, axpy6(w, ld6(r.S, vs + k), ld6(D, X0 + 4 + k)))
        dvj = axpy6(w, ld6(r.vJ, i), dvj)
        dcj = axpy6(w, ld6(r.cJ, i), dcj)
    if c >= 0:
        qp[qs + c] = x0
    st6(D, X0 + 1, dvj)
    st6(D, X0 + 2, dcj)
    _eval_joint(m, r, s, i, q, v, t, full)
    if c >= 0:
        hu = 1.0 + abs(v[vs + c])
        vp[vs + c] = v[vs + c] + hu
        joint_velocity(m, r, s, i, q, vp, t, full, False)
        cp = ld6(r.cJ, i)
        vp[vs + c] = v[vs + c] - hu
        joint_velocity(m, r, s, i, q, vp, t, full, False)
        cm = ld6(r.cJ, i)
        vp[vs + c] = v[vs + c]
        st6(D, X0 + 3, axpy6(0.5 / hu, sub6(cp, cm), ZERO6))
        joint_velocity(m, r, s, i, q, v, t, full, False)


@jit(inline="always")
def joint_tangent(m, r, s, i, c, q, v, t, qp, vp, D, X0, full):
    """The rows X0 .. of D for joint i and its coordinate and velocity variable c (see the module).
    The closed forms are inlined where this is called: a call boundary would copy the model and
    record views (hundreds of array fields) on every column; the general path stays a call."""
    if m.jnt_path[i] == PATH_QUAT:
        quat_tangent(m, r, i, c, v, D, X0)
    elif _exact_path(m, i):
        screw_tangent(m, r, i, c, v, D, X0)
    else:
        general_tangent(m, r, s, i, c, q, v, t, qp, vp, D, X0, full)
