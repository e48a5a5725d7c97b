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
def _seed(q, v, qs, vs, nq, k, quat_off):
    """Jet of coordinate k of a joint (k >= nq: zero)."""
    if k >= nq:
        return (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    if quat_off < 0 or k < quat_off:
        # ordinary coordinate: its rate is velocity variable k (quaternions come last in a joint)
        g = k
        return (q[qs + k], v[vs + k], 0.0,
                1.0 if g == 0 else 0.0, 1.0 if g == 1 else 0.0, 1.0 if g == 2 else 0.0,
                1.0 if g == 3 else 0.0, 1.0 if g == 4 else 0.0, 1.0 if g == 5 else 0.0)
    # unit quaternion (w, x, y, z) with angular velocity u in C axes: q' = 1/2 q (x) (0, u)
    o = qs + quat_off
    w = q[o]
    x = q[o + 1]
    y = q[o + 2]
    z = q[o + 3]
    ux = v[vs + quat_off]
    uy = v[vs + quat_off + 1]
    uz = v[vs + quat_off + 2]
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
    b = quat_off                            # gradient slots of the three angular velocities
    return (val, g0 * ux + g1 * uy + g2 * uz, d2,
            g0 if b == 0 else 0.0, g1 if b == 0 else 0.0, g2 if b == 0 else 0.0,
            g0 if b == 3 else 0.0, g1 if b == 3 else 0.0, g2 if b == 3 else 0.0)


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
def joint_eval_generic(jtype, params, adr, q, v, t, qs, nq, vs, nv, Rrel, rrel, J, sigma, bias, vrel):
    """Pose, Jacobian columns, sigma, bias and relative twist of one joint by the generic path.

    Writes Rrel (3, 3), rrel (3,), J[:, vs:vs+nv] (P axes), sigma (6,), bias (6,), vrel (6,)."""
    qo = quaternion_offset(jtype, params, adr)
    # indices as runtime integers: literal arguments would compile one _seed per index
    k0 = nq - nq
    qj = (_seed(q, v, qs, vs, nq, k0, qo), _seed(q, v, qs, vs, nq, k0 + 1, qo),
          _seed(q, v, qs, vs, nq, k0 + 2, qo), _seed(q, v, qs, vs, nq, k0 + 3, qo),
          _seed(q, v, qs, vs, nq, k0 + 4, qo), _seed(q, v, qs, vs, nq, k0 + 5, qo),
          _seed(q, v, qs, vs, nq, k0 + 6, qo))
    tj = (t, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    Rj, rj = pose(jtype, params, adr, qj, tj)
    R = (Rj[0][0], Rj[1][0], Rj[2][0], Rj[3][0], Rj[4][0], Rj[5][0], Rj[6][0], Rj[7][0], Rj[8][0])
    for a in range(3):
        rrel[a] = rj[a][0]
        for b in range(3):
            Rrel[a, b] = R[3 * a + b]
    for k in range(nv):
        w0, w1, w2 = _axial_RT(R, Rj, 3 + k)
        J[0, vs + k] = w0
        J[1, vs + k] = w1
        J[2, vs + k] = w2
        J[3, vs + k] = rj[0][3 + k]
        J[4, vs + k] = rj[1][3 + k]
        J[5, vs + k] = rj[2][3 + k]
    w0, w1, w2 = _axial_RT(R, Rj, k0 + 1)
    vrel[0] = w0
    vrel[1] = w1
    vrel[2] = w2
    w0, w1, w2 = _axial_RT(R, Rj, k0 + 2)
    bias[0] = w0
    bias[1] = w1
    bias[2] = w2
    for a in range(3):
        vrel[3 + a] = rj[a][1]
        bias[3 + a] = rj[a][2]
    # sigma: what of the relative twist the velocities do not explain (explicit time dependence)
    for a in range(6):
        s = vrel[a]
        for k in range(nv):
            s -= J[a, vs + k] * v[vs + k]
        sigma[a] = s


@jit
def joint_eval(jtype, params, adr, q, v, t, qs, nq, vs, nv, Rrel, rrel, J, sigma, bias, vrel, generic):
    """``joint_eval_generic`` with exact hand-written paths for revolute and prismatic joints."""
    if generic or (jtype != C.REVOLUTE and jtype != C.PRISMATIC and jtype != C.FIXED):
        joint_eval_generic(jtype, params, adr, q, v, t, qs, nq, vs, nv, Rrel, rrel, J, sigma, bias, vrel)
        return
    for a in range(6):
        sigma[a] = 0.0
        bias[a] = 0.0
        vrel[a] = 0.0
    if jtype == C.FIXED:
        for a in range(3):
            rrel[a] = 0.0
            for b in range(3):
                Rrel[a, b] = 1.0 if a == b else 0.0
        return
    ax = params[adr]
    ay = params[adr + 1]
    az = params[adr + 2]
    qk = q[qs]
    u = v[vs]
    if jtype == C.REVOLUTE:
        s = np.sin(qk)
        c = np.cos(qk)
        k = 1.0 - c
        Rrel[0, 0] = c + k * ax * ax
        Rrel[0, 1] = k * ax * ay - s * az
        Rrel[0, 2] = k * ax * az + s * ay
        Rrel[1, 0] = k * ax * ay + s * az
        Rrel[1, 1] = c + k * ay * ay
        Rrel[1, 2] = k * ay * az - s * ax
        Rrel[2, 0] = k * ax * az - s * ay
        Rrel[2, 1] = k * ay * az + s * ax
        Rrel[2, 2] = c + k * az * az
        rrel[0] = 0.0
        rrel[1] = 0.0
        rrel[2] = 0.0
        J[0, vs] = ax
        J[1, vs] = ay
        J[2, vs] = az
        J[3, vs] = 0.0
        J[4, vs] = 0.0
        J[5, vs] = 0.0
        vrel[0] = ax * u
        vrel[1] = ay * u
        vrel[2] = az * u
    else:
        for a in range(3):
            for b in range(3):
                Rrel[a, b] = 1.0 if a == b else 0.0
        rrel[0] = ax * qk
        rrel[1] = ay * qk
        rrel[2] = az * qk
        J[0, vs] = 0.0
        J[1, vs] = 0.0
        J[2, vs] = 0.0
        J[3, vs] = ax
        J[4, vs] = ay
        J[5, vs] = az
        vrel[3] = ax * u
        vrel[4] = ay * u
        vrel[5] = az * u


@jit
def all_joints(parent, jtype, q_start, nq_joint, v_start, nv_joint, param_adr, params,
               q, v, t, Rrel, rrel, J, sigma, bias, vrel, generic):
    """EJCE terms of every joint of one state into the workspace arrays."""
    for i in range(1, parent.shape[0]):
        joint_eval(jtype[i], params, param_adr[i], q, v, t, q_start[i], nq_joint[i], v_start[i],
                   nv_joint[i], Rrel[i], rrel[i], J, sigma[i], bias[i], vrel[i], generic)
