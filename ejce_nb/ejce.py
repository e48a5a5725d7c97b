"""The explicit joint constraint equation of every joint, from its pose function alone.

For the pose R(q, t), r(q, t) of C in P (EJCE.md section 1):

    [omega_rel; v_rel] = J u + sigma            J[:, k] = [axial(dR/du_k R^T); dr/du_k]
    [alpha_rel; a_rel] = J u' + b               b = [axial(R''0 R^T); r''0]

with u the joint's velocity variables (coordinate rates, or a quaternion's angular velocity in C
axes, q' = N(q) u) and ''0 the second derivative along the motion with u' = 0.  One evaluation of
the pose on jets seeded with q -> (q, N u, N' u, N e_k), t -> (t, 1, 0) gives all of them.
Hand-written paths for revolute and prismatic joints are exact specialisations, checked against
this generic path in the tests.
"""
import numpy as np

from ._jit import jit
from .joints import codes as C
from .joints.pose import pose


@jit
def _seed(qt, vt, nq, k, quat_off):
    """Jet of coordinate k of a joint (k >= nq: zero), from the joint's coordinates qt (7-tuple)
    and velocities vt (6-tuple)."""
    if k >= nq:
        return (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    if quat_off < 0 or k < quat_off:
        # ordinary coordinate: its rate is velocity variable k (quaternions come last in a joint)
        return (qt[k], vt[k], 0.0,
                1.0 if k == 0 else 0.0, 1.0 if k == 1 else 0.0, 1.0 if k == 2 else 0.0,
                1.0 if k == 3 else 0.0, 1.0 if k == 4 else 0.0, 1.0 if k == 5 else 0.0)
    # unit quaternion (w, x, y, z) with angular velocity u in C axes: q' = 1/2 q (x) (0, u)
    o = quat_off
    w = qt[o]
    x = qt[o + 1]
    y = qt[o + 2]
    z = qt[o + 3]
    ux = vt[o]
    uy = vt[o + 1]
    uz = vt[o + 2]
    c = k - quat_off
    if c == 0:
        n0, n1, n2, val = -x, -y, -z, w
    elif c == 1:
        n0, n1, n2, val = w, -z, y, x
    elif c == 2:
        n0, n1, n2, val = z, w, -x, y
    else:
        n0, n1, n2, val = -y, x, w, z
    # q''0 = 1/2 q' (x) (0, u) = -|u|^2 / 4 q
    d2 = -0.25 * (ux * ux + uy * uy + uz * uz) * val
    g0 = 0.5 * n0
    g1 = 0.5 * n1
    g2 = 0.5 * n2
    # the three angular velocities occupy gradient slots o..o+2 (o = 0 or 3)
    return (val, g0 * ux + g1 * uy + g2 * uz, d2,
            g0 if o == 0 else 0.0, g1 if o == 0 else 0.0, g2 if o == 0 else 0.0,
            g0 if o == 3 else 0.0, g1 if o == 3 else 0.0, g2 if o == 3 else 0.0)


@jit
def quaternion_offset(jtype, params, adr):
    """Offset of a unit-quaternion block within the joint's q (-1: none)."""
    if (jtype == C.SPHERICAL or jtype == C.FREE) and int(params[adr]) == C.ROT_QUATERNION:
        return 0 if jtype == C.SPHERICAL else 3
    return -1


@jit
def _axial_RT(R, A, i):
    """axial(A R^T) where A is entry i of 9 jets (row-major)."""
    m01 = A[0][i] * R[3] + A[1][i] * R[4] + A[2][i] * R[5]
    m02 = A[0][i] * R[6] + A[1][i] * R[7] + A[2][i] * R[8]
    m10 = A[3][i] * R[0] + A[4][i] * R[1] + A[5][i] * R[2]
    m12 = A[3][i] * R[6] + A[4][i] * R[7] + A[5][i] * R[8]
    m20 = A[6][i] * R[0] + A[7][i] * R[1] + A[8][i] * R[2]
    m21 = A[6][i] * R[3] + A[7][i] * R[4] + A[8][i] * R[5]
    return 0.5 * (m21 - m12), 0.5 * (m02 - m20), 0.5 * (m10 - m01)


@jit
def joint_eval_generic(jtype, params, adr, q, v, t, qs, nq, vs, nv, i, Rrel, rrel, J, sigma, bias, vrel):
    """Pose, Jacobian columns, sigma, bias and relative twist of joint i by the generic path.

    Writes Rrel[i] (3, 3), rrel[i] (3,), J[:, vs:vs+nv] (P axes), sigma[i], bias[i], vrel[i] (6,).
    Whole arrays and an index, not row views: views passed to a call cost reference counting."""
    qo = quaternion_offset(jtype, params, adr)
    qt = (q[qs] if nq > 0 else 0.0, q[qs + 1] if nq > 1 else 0.0, q[qs + 2] if nq > 2 else 0.0,
          q[qs + 3] if nq > 3 else 0.0, q[qs + 4] if nq > 4 else 0.0, q[qs + 5] if nq > 5 else 0.0,
          q[qs + 6] if nq > 6 else 0.0)
    vt = (v[vs] if nv > 0 else 0.0, v[vs + 1] if nv > 1 else 0.0, v[vs + 2] if nv > 2 else 0.0,
          v[vs + 3] if nv > 3 else 0.0, v[vs + 4] if nv > 4 else 0.0, v[vs + 5] if nv > 5 else 0.0)
    # indices as runtime integers: literal arguments would compile one _seed per index
    k0 = nq - nq
    qj = (_seed(qt, vt, nq, k0, qo), _seed(qt, vt, nq, k0 + 1, qo), _seed(qt, vt, nq, k0 + 2, qo),
          _seed(qt, vt, nq, k0 + 3, qo), _seed(qt, vt, nq, k0 + 4, qo), _seed(qt, vt, nq, k0 + 5, qo),
          _seed(qt, vt, nq, k0 + 6, qo))
    tj = (t, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    Rj, rj = pose(jtype, params, adr, qj, tj)
    R = (Rj[0][0], Rj[1][0], Rj[2][0], Rj[3][0], Rj[4][0], Rj[5][0], Rj[6][0], Rj[7][0], Rj[8][0])
    for a in range(3):
        rrel[i, a] = rj[a][0]
        for b in range(3):
            Rrel[i, a, b] = R[3 * a + b]
    for k in range(nv):
        w0, w1, w2 = _axial_RT(R, Rj, 3 + k)
        J[0, vs + k] = w0
        J[1, vs + k] = w1
        J[2, vs + k] = w2
        J[3, vs + k] = rj[0][3 + k]
        J[4, vs + k] = rj[1][3 + k]
        J[5, vs + k] = rj[2][3 + k]
    w0, w1, w2 = _axial_RT(R, Rj, k0 + 1)
    vrel[i, 0] = w0
    vrel[i, 1] = w1
    vrel[i, 2] = w2
    w0, w1, w2 = _axial_RT(R, Rj, k0 + 2)
    bias[i, 0] = w0
    bias[i, 1] = w1
    bias[i, 2] = w2
    for a in range(3):
        vrel[i, 3 + a] = rj[a][1]
        bias[i, 3 + a] = rj[a][2]
    # sigma: what of the relative twist the velocities do not explain (explicit time dependence)
    for a in range(6):
        s = vrel[i, a]
        for k in range(nv):
            s -= J[a, vs + k] * v[vs + k]
        sigma[i, a] = s


@jit
def has_fast_path(jtype):
    """Joints with hand-written terms (checked against the generic path in the tests)."""
    return jtype == C.REVOLUTE or jtype == C.PRISMATIC or jtype == C.FIXED


@jit
def fast_terms(jtype, ax, ay, az, qk, u):
    """Exact terms of a revolute (angle qk about axis a), prismatic (slide qk along a) or fixed
    joint, from scalars: (R 9-tuple, r 3-tuple, J column 6-tuple); sigma and b vanish and the
    relative twist is J u.  The first three parameters of every joint are readable (padding)."""
    if jtype == C.REVOLUTE:
        s = np.sin(qk)
        c = np.cos(qk)
        k = 1.0 - c
        R = (c + k * ax * ax, k * ax * ay - s * az, k * ax * az + s * ay,
             k * ax * ay + s * az, c + k * ay * ay, k * ay * az - s * ax,
             k * ax * az - s * ay, k * ay * az + s * ax, c + k * az * az)
        return R, (0.0, 0.0, 0.0), (ax, ay, az, 0.0, 0.0, 0.0)
    I = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)
    if jtype == C.PRISMATIC:
        return I, (ax * qk, ay * qk, az * qk), (0.0, 0.0, 0.0, ax, ay, az)
    return I, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)


@jit
def joint_eval(jtype, params, adr, q, v, t, qs, nq, vs, nv, i, Rrel, rrel, J, sigma, bias, vrel, generic):
    """EJCE terms of joint i into the workspace rows i (and J's columns vs..vs+nv): the
    hand-written path where there is one (unless ``generic``), else the generic path."""
    if generic or not has_fast_path(jtype):
        joint_eval_generic(jtype, params, adr, q, v, t, qs, nq, vs, nv, i, Rrel, rrel, J, sigma, bias, vrel)
        return
    qk = q[qs] if nq > 0 else 0.0
    u = v[vs] if nv > 0 else 0.0
    R, r, S = fast_terms(jtype, params[adr], params[adr + 1], params[adr + 2], qk, u)
    for a in range(3):
        rrel[i, a] = r[a]
        for b in range(3):
            Rrel[i, a, b] = R[3 * a + b]
    for a in range(6):
        if nv > 0:
            J[a, vs] = S[a]
        sigma[i, a] = 0.0
        bias[i, a] = 0.0
        vrel[i, a] = S[a] * u


@jit
def all_joints(parent, jtype, q_start, nq_joint, v_start, nv_joint, param_adr, params,
               q, v, t, Rrel, rrel, J, sigma, bias, vrel, generic):
    """EJCE terms of every joint of one state into the workspace arrays."""
    for i in range(1, parent.shape[0]):
        joint_eval(jtype[i], params, param_adr[i], q, v, t, q_start[i], nq_joint[i], v_start[i],
                   nv_joint[i], i, Rrel, rrel, J, sigma, bias, vrel, generic)
