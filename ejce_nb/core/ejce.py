"""The explicit joint constraint equation of every joint, and the one function every algorithm
calls to evaluate a joint.

For the pose R(q, t), r(q, t) of the outboard frame C in the inboard frame P (EJCE.md section 1),

    [omega_rel; v_rel] = J u + sigma            J[:, k] = [axial(dR/du_k R^T); dr/du_k]
    [alpha_rel; a_rel] = J u' + b               b = [axial(R''0 R^T); r''0]

with u the joint's velocity variables (coordinate rates, or a quaternion's angular velocity in C
axes, q' = N(q) u) and ''0 the second derivative along the motion with u' = 0.  The algorithms see
a joint in its outboard frame (EJCE.md section 2):

    S  = [R^T J_w; R^T J_v]                      motion subspace (C axes, at the origin of C)
    vJ = [R^T w_rel; R^T v_rel] = S u + R^T sigma
    cJ = [R^T b_w; R^T (b_v - w_rel x v_rel)]    = d/dt (vJ in C coordinates) - S u'

and X_i, the transform from the parent's C frame to C_i: E = (Xt_i R)^T, d = pt_i + Xt_i r.

Three ways compute them, chosen once per joint when the model is built (``jnt_path``):

* the generic EJCE path (``jets_joint``): the pose function of ``joints.pose`` evaluated once on
  jets (``jets``), seeded q -> (q, N u, N' u, N e_k), t -> (t, 1, 0).  It knows nothing of the joint
  and serves every joint; it is the reference every other path is tested against.
* products of elementary screw motions (``screw_position`` / ``screw_velocity``): a joint that is
  T = T_0(f_0) T_1(f_1) ... (rotations about and translations along constant axes, by amounts
  f_m(q, t)) has, with S_m the unit twist of motion m seen from C,
      S[:, k] = sum_m df_m/dq_k S_m,    vJ = sum_m f'_m S_m,
      cJ = sum_m f''0_m S_m + sum_{m < n} f'_m f'_n (S_m x S_n),
  which needs no derivative of a pose and no jets.  Every built-in joint but the non-Euler
  rotation parameterisations is such a product, composite joints included (their amounts are
  evaluated on jets: value, gradient, rate and second derivative at once).
* unit quaternions (``quat_position`` / ``quat_velocity``): S = [1; 0] (spherical), vJ = [u; 0],
  cJ = 0; a free joint adds [0; R^T rdot] and cJ = [0; -w x R^T rdot].
* user-defined joints (``user_joint``): the generic path again, on the user's own pose function
  compiled for jets (``joints.custom``), called through its address.

The position part (X, S) depends on (q, t) only; the velocity part (vJ, cJ) also on u, and is
computed from the position part where the path allows, so that a later stage on the same
configuration (``mass_matrix`` then ``nonlinear_effects``) does not evaluate the pose again.
"""
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, overload
from numba.np.arrayobj import make_array

from .._jit import jit
from .jets import jconst
from .joints import codes as C
from .joints.pose import coord_function, function1, pose, simple_coord
from .lanes import LANES, get, load_row, pack, scalar_only, store_row, zero_of
from .spatial import (EYE9, ZERO3, ZERO6, add, axpy6, cross, crm, ld3, ld6, ld9, mm, mtv, mv,
                      rot_axis, st3, st6, st9)

PATH_FIXED = 0
PATH_SCREW = 1
PATH_QUAT = 2
PATH_JETS = 3
PATH_USER = 4
assert LANES == 4          # the lane function amounts below are written for four lanes


# ---------------------------------------------------------------------------- the kinematic map
@jit
def quat_rate_row(w, x, y, z, c):
    """Row c of N(q): the unit quaternion (w, x, y, z) moves as q' = N(q) u = 1/2 q (x) (0, u)
    for the angular velocity u in its own (C) axes."""
    if c == 0:
        return -0.5 * x, -0.5 * y, -0.5 * z
    if c == 1:
        return 0.5 * w, -0.5 * z, 0.5 * y
    if c == 2:
        return 0.5 * z, 0.5 * w, -0.5 * x
    return -0.5 * y, 0.5 * x, 0.5 * w


# Below this squared angle Exp and dexpinv use their Taylor series: the closed forms lose
# digits to cancellation there, the series' first neglected term is below 1e-20.
_SMALL_ANGLE2 = 1e-4


@jit
def quat_exp(x, y, z):
    """Exp of the rotation vector (x, y, z): the unit quaternion (cos |th|/2, sin(|th|/2) th/|th|)."""
    a2 = x * x + y * y + z * z
    if a2 < _SMALL_ANGLE2:
        w = 1.0 - a2 / 8.0 + a2 * a2 / 384.0
        k = 0.5 - a2 / 48.0 + a2 * a2 / 3840.0
    else:
        a = np.sqrt(a2)
        w = np.cos(0.5 * a)
        k = np.sin(0.5 * a) / a
    return w, k * x, k * y, k * z


@jit
def quat_dexpinv(tx, ty, tz, ux, uy, uz):
    """J_r(th)^-1 u: the rate of the rotation vector th of q = q0 (x) Exp(th) that moves with the
    angular velocity u in q's own axes (q' = 1/2 q (x) (0, u)),

        th' = u + 1/2 th x u + (1/|th|^2 - cot(|th|/2) / (2 |th|)) th x (th x u)

    (the inverse right Jacobian of SO(3); singular only at |th| = 2 pi)."""
    a2 = tx * tx + ty * ty + tz * tz
    if a2 < _SMALL_ANGLE2:
        c = 1.0 / 12.0 + a2 / 720.0 + a2 * a2 / 30240.0
    else:
        a = np.sqrt(a2)
        c = 1.0 / a2 - np.cos(0.5 * a) / (2.0 * a * np.sin(0.5 * a))
    # th x u, then th x (th x u)
    cx = ty * uz - tz * uy
    cy = tz * ux - tx * uz
    cz = tx * uy - ty * ux
    dx = ty * cz - tz * cy
    dy = tz * cx - tx * cz
    dz = tx * cy - ty * cx
    return ux + 0.5 * cx + c * dx, uy + 0.5 * cy + c * dy, uz + 0.5 * cz + c * dz


@jit
def retract(m, q, delta, out):
    """out = q (+) delta for a tangent vector delta (nv): every coordinate whose rate is its
    velocity variable moves by it, each unit quaternion turns by the rotation vector at its
    angular velocity variables, q (x) Exp(delta) (right: the velocity is in the joint's C axes),
    renormalised against rounding.  ``out`` may be ``q``."""
    for i in range(1, m.body_parent.shape[0]):
        qs = m.jnt_qadr[i]
        vs = m.jnt_dofadr[i]
        o = m.jnt_quat[i]
        n_plain = m.jnt_nq[i] if o < 0 else o
        for k in range(n_plain):
            out[qs + k] = q[qs + k] + delta[vs + k]
        if o >= 0:
            a = qs + o
            b = vs + o
            w1 = q[a]
            x1 = q[a + 1]
            y1 = q[a + 2]
            z1 = q[a + 3]
            w2, x2, y2, z2 = quat_exp(delta[b], delta[b + 1], delta[b + 2])
            w = w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2
            x = w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2
            y = w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2
            z = w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2
            n = np.sqrt(w * w + x * x + y * y + z * z)
            out[a] = w / n
            out[a + 1] = x / n
            out[a + 2] = y / n
            out[a + 3] = z / n


@jit
def tangent_rates(m, delta, v, out):
    """The rate of the tangent increment delta of ``retract`` along the velocities v: v itself,
    except at each unit quaternion's angular velocity, dexpinv(delta) u."""
    for i in range(1, m.body_parent.shape[0]):
        vs = m.jnt_dofadr[i]
        o = m.jnt_quat[i]
        n_plain = m.jnt_nv[i] if o < 0 else o
        for k in range(n_plain):
            out[vs + k] = v[vs + k]
        if o >= 0:
            b = vs + o
            out[b], out[b + 1], out[b + 2] = quat_dexpinv(delta[b], delta[b + 1], delta[b + 2],
                                                          v[b], v[b + 1], v[b + 2])


# ---------------------------------------------------------------------------- placement
@jit(inline="always")
def place(m, r, i, R, p):
    """Record the relative pose (R, p) of C_i in P_i and X_i: E = (Xt R)^T, d = pt + Xt p."""
    st9(r.Rrel, i, R)
    st3(r.rrel, i, p)
    X = ld9(m.jnt_Xt, i)
    XR = mm(X, R)
    st9(r.E, i, (XR[0], XR[3], XR[6], XR[1], XR[4], XR[7], XR[2], XR[5], XR[8]))
    if p[0] == 0.0 and p[1] == 0.0 and p[2] == 0.0:
        st3(r.d, i, ld3(m.jnt_pt, i))
    else:
        st3(r.d, i, add(ld3(m.jnt_pt, i), mv(X, p)))


# ---------------------------------------------------------------------------- generic: jets
@jit
def _seed(q, v, qs, nq, vs, k, quat_off):
    """Jet of coordinate k of a joint (k >= nq: zero) along q' = N(q) v, t' = 1: value, rate,
    second derivative with v' = 0, and gradient over the joint's velocity variables."""
    if k >= nq:
        return jconst(0.0)
    if quat_off < 0 or k < quat_off:
        # an ordinary coordinate: its rate is velocity variable k (quaternions come last in a joint)
        return (q[qs + k], v[vs + k], 0.0,
                1.0 if k == 0 else 0.0, 1.0 if k == 1 else 0.0, 1.0 if k == 2 else 0.0,
                1.0 if k == 3 else 0.0, 1.0 if k == 4 else 0.0, 1.0 if k == 5 else 0.0)
    o = qs + quat_off
    b = vs + quat_off
    w = q[o]
    x = q[o + 1]
    y = q[o + 2]
    z = q[o + 3]
    ux = v[b]
    uy = v[b + 1]
    uz = v[b + 2]
    c = k - quat_off
    n0, n1, n2 = quat_rate_row(w, x, y, z, c)
    # q''0 = N(q') u = 1/2 q' (x) (0, u) = -|u|^2 / 4 q
    d2 = -0.25 * (ux * ux + uy * uy + uz * uz) * q[o + c]
    # the three angular velocities occupy gradient slots quat_off .. quat_off + 2 (0 or 3)
    f = quat_off == 0
    return (q[o + c], n0 * ux + n1 * uy + n2 * uz, d2,
            n0 if f else 0.0, n1 if f else 0.0, n2 if f else 0.0,
            0.0 if f else n0, 0.0 if f else n1, 0.0 if f else n2)


@jit
def seeds(q, v, qs, nq, vs, quat_off):
    """The jets of a joint's coordinates (7, unused ones zero)."""
    # indices as runtime integers: literal arguments would compile one _seed per index
    k0 = nq - nq
    return (_seed(q, v, qs, nq, vs, k0, quat_off), _seed(q, v, qs, nq, vs, k0 + 1, quat_off),
            _seed(q, v, qs, nq, vs, k0 + 2, quat_off), _seed(q, v, qs, nq, vs, k0 + 3, quat_off),
            _seed(q, v, qs, nq, vs, k0 + 4, quat_off), _seed(q, v, qs, nq, vs, k0 + 5, quat_off),
            _seed(q, v, qs, nq, vs, k0 + 6, quat_off))


@jit
def _axial_RT(R, A, k):
    """axial(A R^T), A the slot k of 9 jets (row-major)."""
    m01 = A[0][k] * R[3] + A[1][k] * R[4] + A[2][k] * R[5]
    m02 = A[0][k] * R[6] + A[1][k] * R[7] + A[2][k] * R[8]
    m10 = A[3][k] * R[0] + A[4][k] * R[1] + A[5][k] * R[2]
    m12 = A[3][k] * R[6] + A[4][k] * R[7] + A[5][k] * R[8]
    m20 = A[6][k] * R[0] + A[7][k] * R[1] + A[8][k] * R[2]
    m21 = A[6][k] * R[3] + A[7][k] * R[4] + A[8][k] * R[5]
    return 0.5 * (m21 - m12), 0.5 * (m02 - m20), 0.5 * (m10 - m01)


@jit
def jets_terms(m, i, q, v, t, JP):
    """The EJCE terms of joint i in P axes by the generic path: (R, r, twist J u + sigma, bias),
    with J's columns in the rows of JP."""
    qs = m.jnt_qadr[i]
    nq = m.jnt_nq[i]
    vs = m.jnt_dofadr[i]
    qj = seeds(q, v, qs, nq, vs, m.jnt_quat[i])
    Rj, rj = pose(m.jnt_type[i], m.jnt_params, m.jnt_padr[i], qj, (t, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0))
    R = (Rj[0][0], Rj[1][0], Rj[2][0], Rj[3][0], Rj[4][0], Rj[5][0], Rj[6][0], Rj[7][0], Rj[8][0])
    for k in range(m.jnt_nv[i]):
        w0, w1, w2 = _axial_RT(R, Rj, 3 + k)
        JP[k, 0] = w0
        JP[k, 1] = w1
        JP[k, 2] = w2
        JP[k, 3] = rj[0][3 + k]
        JP[k, 4] = rj[1][3 + k]
        JP[k, 5] = rj[2][3 + k]
    one = nq - nq + 1
    tw = _axial_RT(R, Rj, one) + (rj[0][1], rj[1][1], rj[2][1])
    bias = _axial_RT(R, Rj, one + 1) + (rj[0][2], rj[1][2], rj[2][2])
    return R, (rj[0][0], rj[1][0], rj[2][0]), tw, bias


@jit
def jets_joint(m, r, s, i, q, v, t):
    """Position and velocity terms of joint i by the generic path, turned into C axes."""
    R, p, tw, b = jets_terms(m, i, q, v, t, s.JP)
    from_inboard(m, r, s, i, R, p, tw, b)


@jit
def from_inboard(m, r, s, i, R, p, tw, b):
    """Record joint i from its EJCE terms in P axes (pose R, p; J's columns in the rows of s.JP;
    twist J u + sigma; bias b): S = R^T J, vJ = R^T twist, cJ = [R^T b_w; R^T (b_v - w x v)]."""
    place(m, r, i, R, p)
    vs = m.jnt_dofadr[i]
    for k in range(m.jnt_nv[i]):
        w = mtv(R, (s.JP[k, 0], s.JP[k, 1], s.JP[k, 2]))
        u = mtv(R, (s.JP[k, 3], s.JP[k, 4], s.JP[k, 5]))
        st6(r.S, vs + k, w + u)
    w_rel = (tw[0], tw[1], tw[2])
    v_rel = (tw[3], tw[4], tw[5])
    st6(r.vJ, i, mtv(R, w_rel) + mtv(R, v_rel))
    wv = cross(w_rel, v_rel)
    st6(r.cJ, i, mtv(R, (b[0], b[1], b[2])) + mtv(R, (b[3] - wv[0], b[4] - wv[1], b[5] - wv[2])))


# ---------------------------------------------------------------------------- products of screws
@jit(inline="always")
def screw_position(m, r, s, i, q, t):
    """X_i and S_i of a product of elementary motions T_0 T_1 ... T_{n-1}: walking from the last
    motion to the first, H = T_{m+1} ... T_{n-1} (the pose of C in the frame motion m moves),
    S_m = Ad(H^-1) [a_m; 0] for a rotation, [0; R_H^T a_m] for a translation."""
    qs = m.jnt_qadr[i]
    m0 = m.jnt_madr[i]
    nm = m.jnt_nmot[i]
    Z = zero_of(r.vel)
    RH = (1.0 + Z, Z, Z, Z, 1.0 + Z, Z, Z, Z, 1.0 + Z)
    pH = (Z, Z, Z)
    first = True
    for k in range(m0 + nm - 1, m0 - 1, -1):
        a = ld3(m.mot_axis, k)
        c = m.mot_coord[k]
        if c >= 0:
            f = m.mot_scale[k] * get(q, qs + c)
        else:
            f = function_amount(m, r, s, i, q, t, k, Z)
        if m.mot_kind[k] == C.MOTION_ROT:
            if first:
                st6(r.mS, k, a + ZERO3)
            else:
                st6(r.mS, k, mtv(RH, a) + mtv(RH, cross(a, pH)))
            Rm = rot_axis(a, np.sin(f), np.cos(f))
            if first:
                RH = Rm
            else:
                RH = mm(Rm, RH)
                pH = mv(Rm, pH)
        else:
            if first:
                st6(r.mS, k, ZERO3 + a)
            else:
                st6(r.mS, k, ZERO3 + mtv(RH, a))
            pH = (pH[0] + a[0] * f, pH[1] + a[1] * f, pH[2] + a[2] * f)
        first = False
    place(m, r, i, RH, pH)
    vs = m.jnt_dofadr[i]
    if nm == 1 and m.mot_coord[m0] == 0 and m.jnt_nv[i] == 1:
        st6(r.S, vs, axpy6(m.mot_scale[m0], ld6(r.mS, m0), ZERO6))
        return
    # S[:, j] = sum_m df_m/dq_j S_m
    for j in range(m.jnt_nv[i]):
        st6(r.S, vs + j, ZERO6)
    for k in range(m0, m0 + nm):
        Sk = ld6(r.mS, k)
        c = m.mot_coord[k]
        if c >= 0:
            st6(r.S, vs + c, axpy6(m.mot_scale[k], Sk, ld6(r.S, vs + c)))
        else:
            for j in range(m.jnt_nv[i]):
                g = load_row(r.mg, k, j)
                if g != 0.0:
                    st6(r.S, vs + j, axpy6(g, Sk, ld6(r.S, vs + j)))


def _function_amount(m, r, s, i, q, t, k, Z):
    """The amount of motion k, a function of the coordinates and time evaluated on jets along
    u = 0: value, and its gradient into r.mg[k] (one Poly or Spline term of a coordinate: by
    ``function1``, in plain numbers)."""
    c = simple_coord(m.jnt_params, m.mot_fadr[k])
    if c >= 0:
        f, d1, _ = function1(m.jnt_params, m.mot_fadr[k], q[m.jnt_qadr[i] + c])
        for j in range(6):
            r.mg[k, j] = 0.0
        r.mg[k, c] = d1
        return f
    qj = seeds(q, s.zv, m.jnt_qadr[i], m.jnt_nq[i], m.jnt_dofadr[i], -1)
    fj, _ = coord_function(m.jnt_params, m.mot_fadr[k], qj, (t, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0))
    for j in range(6):
        r.mg[k, j] = fj[3 + j]
    return fj[0]


def _function_rates(m, r, i, q, v, t, k, Z):
    """(first, second derivative along the motion) of motion k's function amount."""
    c = simple_coord(m.jnt_params, m.mot_fadr[k])
    if c >= 0:
        _, d1, d2 = function1(m.jnt_params, m.mot_fadr[k], q[m.jnt_qadr[i] + c])
        w = v[m.jnt_dofadr[i] + c]
        return d1 * w, d2 * w * w
    qj = seeds(q, v, m.jnt_qadr[i], m.jnt_nq[i], m.jnt_dofadr[i], -1)
    fj, _ = coord_function(m.jnt_params, m.mot_fadr[k], qj, (t, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0))
    return fj[1], fj[2]


def _lane_function_amount(m, r, s, i, q, t, k, Z):
    # lane models' function amounts are all one Poly or Spline term of a coordinate: each lane
    # as ``_function_amount`` computes it
    p = m.mot_fadr[k]
    c = simple_coord(m.jnt_params, p)
    row = m.jnt_qadr[i] + c
    f0, g0, _ = function1(m.jnt_params, p, q[row, 0])
    f1, g1, _ = function1(m.jnt_params, p, q[row, 1])
    f2, g2, _ = function1(m.jnt_params, p, q[row, 2])
    f3, g3, _ = function1(m.jnt_params, p, q[row, 3])
    for j in range(6):
        store_row(r.mg, k, j, Z)
    store_row(r.mg, k, c, pack(g0, g1, g2, g3))
    return pack(f0, f1, f2, f3)


def _lane_function_rates(m, r, i, q, v, t, k, Z):
    p = m.mot_fadr[k]
    c = simple_coord(m.jnt_params, p)
    row = m.jnt_qadr[i] + c
    col = m.jnt_dofadr[i] + c
    _, a0, b0 = function1(m.jnt_params, p, q[row, 0])
    _, a1, b1 = function1(m.jnt_params, p, q[row, 1])
    _, a2, b2 = function1(m.jnt_params, p, q[row, 2])
    _, a3, b3 = function1(m.jnt_params, p, q[row, 3])
    w0 = v[col, 0]
    w1 = v[col, 1]
    w2 = v[col, 2]
    w3 = v[col, 3]
    return (pack(a0 * w0, a1 * w1, a2 * w2, a3 * w3),
            pack(b0 * w0 * w0, b1 * w1 * w1, b2 * w2 * w2, b3 * w3 * w3))


def function_amount(m, r, s, i, q, t, k, Z):
    return _function_amount(m, r, s, i, q, t, k, Z)


def function_rates(m, r, i, q, v, t, k, Z):
    return _function_rates(m, r, i, q, v, t, k, Z)


@overload(function_amount)
def _ov_amount(m, r, s, i, q, t, k, Z):
    # the lane kernels take only models whose amounts are scale * coordinate
    return _lane_function_amount if isinstance(q, types.Array) and q.ndim == 2 else _function_amount


@overload(function_rates)
def _ov_rates(m, r, i, q, v, t, k, Z):
    return _lane_function_rates if isinstance(q, types.Array) and q.ndim == 2 else _function_rates


@jit(inline="always")
def screw_velocity(m, r, i, q, v, t):
    """vJ = sum_m f'_m S_m and cJ = sum_m f''0_m S_m + sum_{m<n} f'_m f'_n (S_m x S_n), summed from
    the last motion, with V the twist of the motions after m."""
    vs = m.jnt_dofadr[i]
    m0 = m.jnt_madr[i]
    Z = zero_of(r.vel)
    V = (Z, Z, Z, Z, Z, Z)
    cJ = (Z, Z, Z, Z, Z, Z)
    last = m0 + m.jnt_nmot[i] - 1
    for k in range(last, m0 - 1, -1):
        Sk = ld6(r.mS, k)
        c = m.mot_coord[k]
        if c >= 0:
            fd = m.mot_scale[k] * get(v, vs + c)
        else:
            fd, f2 = function_rates(m, r, i, q, v, t, k, Z)
            cJ = axpy6(f2, Sk, cJ)
        if k != last:
            cJ = axpy6(fd, crm(Sk, V), cJ)
        V = axpy6(fd, Sk, V)
    st6(r.vJ, i, V)
    st6(r.cJ, i, cJ)


# ---------------------------------------------------------------------------- unit quaternions
@jit(inline="always")
def quat_position(m, r, i, q):
    """R of the quaternion (normalised: R = 1 + (2/n)(w v^ + v^ v^), n = |q|^2); S = [0 1; R^T 0]
    for a free joint (rdot in P axes, angular velocity in C axes), [1; 0] for a spherical one."""
    qs = m.jnt_qadr[i]
    o = qs + m.jnt_quat[i]
    w = get(q, o)
    x = get(q, o + 1)
    y = get(q, o + 2)
    z = get(q, o + 3)
    k = 2.0 / (w * w + x * x + y * y + z * z)
    R = (1.0 - k * (y * y + z * z), k * (x * y - w * z), k * (x * z + w * y),
         k * (x * y + w * z), 1.0 - k * (x * x + z * z), k * (y * z - w * x),
         k * (x * z - w * y), k * (y * z + w * x), 1.0 - k * (x * x + y * y))
    vs = m.jnt_dofadr[i]
    if m.jnt_quat[i] == 3:
        place(m, r, i, R, (get(q, qs), get(q, qs + 1), get(q, qs + 2)))
        for c in range(3):
            st6(r.S, vs + c, ZERO3 + (R[3 * c], R[3 * c + 1], R[3 * c + 2]))
        vs += 3
    else:
        place(m, r, i, R, ZERO3)
    for c in range(3):
        st6(r.S, vs + c, (1.0 if c == 0 else 0.0, 1.0 if c == 1 else 0.0, 1.0 if c == 2 else 0.0,
                          0.0, 0.0, 0.0))


@jit(inline="always")
def quat_velocity(m, r, i, v):
    vs = m.jnt_dofadr[i]
    if m.jnt_quat[i] == 3:
        R = ld9(r.Rrel, i)
        u = mtv(R, (get(v, vs), get(v, vs + 1), get(v, vs + 2)))
        w = (get(v, vs + 3), get(v, vs + 4), get(v, vs + 5))
        st6(r.vJ, i, w + u)
        wu = cross(w, u)
        st6(r.cJ, i, (0.0, 0.0, 0.0, -wu[0], -wu[1], -wu[2]))
    else:
        st6(r.vJ, i, (get(v, vs), get(v, vs + 1), get(v, vs + 2), 0.0, 0.0, 0.0))
        st6(r.cJ, i, ZERO6)


# ---------------------------------------------------------------------------- user-defined joints
@intrinsic
def _call_user(typingctx, addr, q, qs, v, vs, t, params, padr, out, JP):
    """Call the compiled wrapper at ``addr`` (``joints.custom``) with pointers into q (from qs),
    v (from vs) and params (from padr), and the output buffers."""
    sig = types.void(addr, q, qs, v, vs, t, params, padr, out, JP)

    def codegen(context, builder, sig, args):
        dbl = ir.DoubleType().as_pointer()
        fnty = ir.FunctionType(ir.VoidType(), [dbl, dbl, ir.DoubleType(), dbl, dbl, dbl])
        fn = builder.inttoptr(args[0], fnty.as_pointer())

        def data(k, off=None):
            a = make_array(sig.args[k])(context, builder, args[k])
            if off is None:
                return a.data
            return cgutils.gep(builder, a.data, context.cast(builder, args[off], sig.args[off], types.intp))

        builder.call(fn, [data(1, 2), data(3, 4), context.cast(builder, args[5], sig.args[5], types.float64),
                          data(6, 7), data(8), data(9)])
        return context.get_dummy_value()

    return sig, codegen


@jit
def user_joint(m, r, s, i, q, v, t):
    """Position and velocity terms of the user-defined joint i, from its compiled pose wrapper."""
    _call_user(m.jnt_fptr[i], q, m.jnt_qadr[i], v, m.jnt_dofadr[i], t, m.jnt_params, m.jnt_padr[i], s.uout, s.JP)
    u = s.uout
    from_inboard(m, r, s, i, (u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8]), (u[9], u[10], u[11]),
                 (u[12], u[13], u[14], u[15], u[16], u[17]), (u[18], u[19], u[20], u[21], u[22], u[23]))


# the generic and user paths evaluate one state (the lane kernels take models without them)
jets_joint_of = scalar_only(jets_joint)
user_joint_of = scalar_only(user_joint)


# ---------------------------------------------------------------------------- the one entry point
# ``full`` says which paths a kernel compiles: None for a model whose joints are all fixed,
# products of screws or quaternions (the jets and user paths are then never typed, which halves
# a cold compile), True for any other model (``driver.paths``).  A model's generic twin
# (``Model.with_generic_joints``) sends its joints to the jets path through its own table.
@jit(inline="always")
def _position_fast(m, r, s, i, q, v, t):
    path = m.jnt_path[i]
    if path == PATH_SCREW:
        screw_position(m, r, s, i, q, t)
    elif path == PATH_QUAT:
        quat_position(m, r, i, q)
    else:
        place(m, r, i, EYE9, ZERO3)


@jit(inline="always")
def _position_full(m, r, s, i, q, v, t):
    path = m.jnt_path[i]
    if path == PATH_SCREW:
        screw_position(m, r, s, i, q, t)
    elif path == PATH_QUAT:
        quat_position(m, r, i, q)
    elif path == PATH_JETS:
        jets_joint_of(m, r, s, i, q, v, t)
    elif path == PATH_USER:
        user_joint_of(m, r, s, i, q, v, t)
    else:
        place(m, r, i, EYE9, ZERO3)


@jit(inline="always")
def _velocity_fast(m, r, s, i, q, v, t, position_fresh):
    path = m.jnt_path[i]
    if path == PATH_SCREW:
        screw_velocity(m, r, i, q, v, t)
    elif path == PATH_QUAT:
        quat_velocity(m, r, i, v)
    else:
        st6(r.vJ, i, ZERO6)
        st6(r.cJ, i, ZERO6)


@jit(inline="always")
def _velocity_full(m, r, s, i, q, v, t, position_fresh):
    path = m.jnt_path[i]
    if path == PATH_SCREW:
        screw_velocity(m, r, i, q, v, t)
    elif path == PATH_QUAT:
        quat_velocity(m, r, i, v)
    elif path == PATH_JETS:
        if not position_fresh:
            jets_joint_of(m, r, s, i, q, v, t)
    elif path == PATH_USER:
        if not position_fresh:
            user_joint_of(m, r, s, i, q, v, t)
    else:
        st6(r.vJ, i, ZERO6)
        st6(r.cJ, i, ZERO6)


def joint_position(m, r, s, i, q, v, t, full):
    """X_i and S_i of joint i at (q, t); the generic path, which evaluates everything at once,
    also records vJ_i and cJ_i at the velocities v."""
    # the Python path (NUMBA_DISABLE_JIT); the compiled one is the overload's
    if full is None:
        return _position_fast(m, r, s, i, q, v, t)
    return _position_full(m, r, s, i, q, v, t)


def joint_velocity(m, r, s, i, q, v, t, full, position_fresh):
    """vJ_i and cJ_i at (q, v, t), the position part being recorded for (q, t).  The generic path
    evaluates the pose again unless ``position_fresh``: evaluated at these v a moment ago."""
    if full is None:
        return _velocity_fast(m, r, s, i, q, v, t, position_fresh)
    return _velocity_full(m, r, s, i, q, v, t, position_fresh)


@overload(joint_position, inline="always")
def _joint_position(m, r, s, i, q, v, t, full):
    if isinstance(full, types.NoneType):
        return lambda m, r, s, i, q, v, t, full: _position_fast(m, r, s, i, q, v, t)
    return lambda m, r, s, i, q, v, t, full: _position_full(m, r, s, i, q, v, t)


@overload(joint_velocity, inline="always")
def _joint_velocity(m, r, s, i, q, v, t, full, position_fresh):
    if isinstance(full, types.NoneType):
        return lambda m, r, s, i, q, v, t, full, position_fresh: _velocity_fast(m, r, s, i, q, v, t, position_fresh)
    return lambda m, r, s, i, q, v, t, full, position_fresh: _velocity_full(m, r, s, i, q, v, t, position_fresh)
