"""Transmissions: each actuator's length and moment arms (MuJoCo's ``mj_transmission``), dense
rows ``actuator_moment[i]`` of the kernel model's velocities.

* joint / jointinparent on a hinge or slide: length = gear[0] q, moment[dof] = gear[0];
* on a ball joint (quaternion p): length = r(p) . g, moment[dof:dof+3] = g, where r(p) is the
  rotation vector of p (MuJoCo's ``mju_quat2Vel``: angle in (-pi, pi]) and g = gear[0:3]
  (``joint``) or gear[0:3] turned by p^-1 (``jointinparent``);
* on a free joint: length 0, moment[dof:dof+3] = gear[0:3], moment[dof+3:dof+6] = gear[3:6]
  (``joint``) or gear[3:6] turned by p^-1 (``jointinparent``, p the joint's quaternion);
* tendon: length = gear[0] ten_length[t], moment = gear[0] ten_J[t];
* site s (world axes R_s, origin p_s), no refsite: length 0, moment = J_p(s)^T R_s gear[0:3] +
  J_w(s)^T R_s gear[3:6] (J_p, J_w the translational and rotational world Jacobians);
* site s with refsite f: length = (R_f^T (p_s - p_f)) . gear[0:3] + r(R_f^T R_s) . gear[3:6] (r the
  rotation vector, MuJoCo's ``mju_subQuat``), moment = (J_p(s) - J_p(f))^T R_f gear[0:3] +
  (J_w(s) - J_w(f))^T R_f gear[3:6], with the columns of the joints that move both sites
  (the common ancestors of their bodies) zeroed, as MuJoCo does;
* slider-crank (crank site c, slider site s with axis a = R_s e_z, rod length r): with
  v = p_c - p_s, det = (a.v)^2 + r^2 - v.v, length = a.v - sqrt(det) (a.v where det <= 0), and
  moment = dl/da . J_a + dl/dv . (J_p(c) - J_p(s)), J_a the Jacobian of the axis (omega x a), all
  times gear[0].

Then actuator_velocity = moment . qd.
"""
import numpy as np
from numba import types
from numba.extending import overload

from .._jit import jit
from ..core.spatial import cross, dot, mTm, mtv, mv, sub
from .tendons import _m9, _p3, apply_wrench, geometric
from .tables import JNT_BALL, JNT_FREE, TRN_JOINT, TRN_JOINTINPARENT, TRN_SITE, TRN_SLIDERCRANK, TRN_TENDON


@jit(forceinline=True)
def _unit_quat(q, o):
    w, x, y, z = q[o], q[o + 1], q[o + 2], q[o + 3]
    n = np.sqrt(w * w + x * x + y * y + z * z)
    if n < 1e-15:
        return 1.0, 0.0, 0.0, 0.0
    return w / n, x / n, y / n, z / n


@jit(forceinline=True)
def _quat2vel(w, x, y, z):
    """MuJoCo's ``mju_quat2Vel(res, quat, 1)``: the rotation vector of a unit quaternion."""
    s = np.sqrt(x * x + y * y + z * z)
    if s < 1e-15:
        ax, ay, az = 1.0, 0.0, 0.0
    else:
        ax, ay, az = x / s, y / s, z / s
    speed = 2.0 * np.arctan2(s, w)
    if speed > np.pi:
        speed -= 2.0 * np.pi
    return ax * speed, ay * speed, az * speed


@jit(forceinline=True)
def _rot_inv(w, x, y, z, g0, g1, g2):
    """g turned by the conjugate of the unit quaternion (w, x, y, z): R(p)^T g."""
    # R(p)^T g = g + 2 w' (u' x g) + 2 u' x (u' x g) with u' = -u
    ux, uy, uz = -x, -y, -z
    cx = uy * g2 - uz * g1
    cy = uz * g0 - ux * g2
    cz = ux * g1 - uy * g0
    ccx = uy * cz - uz * cy
    ccy = uz * cx - ux * cz
    ccz = ux * cy - uy * cx
    return g0 + 2.0 * (w * cx + ccx), g1 + 2.0 * (w * cy + ccy), g2 + 2.0 * (w * cz + ccz)


@jit(forceinline=True)
def _mat2quat(R):
    """The unit quaternion (w, x, y, z) of a rotation matrix (9 numbers, row by row)."""
    tr = R[0] + R[4] + R[8]
    if tr > 0.0:
        s = 2.0 * np.sqrt(1.0 + tr)
        qw, qx, qy, qz = 0.25 * s, (R[7] - R[5]) / s, (R[2] - R[6]) / s, (R[3] - R[1]) / s
    elif R[0] > R[4] and R[0] > R[8]:
        s = 2.0 * np.sqrt(1.0 + R[0] - R[4] - R[8])
        qw, qx, qy, qz = (R[7] - R[5]) / s, 0.25 * s, (R[1] + R[3]) / s, (R[2] + R[6]) / s
    elif R[4] > R[8]:
        s = 2.0 * np.sqrt(1.0 + R[4] - R[0] - R[8])
        qw, qx, qy, qz = (R[2] - R[6]) / s, (R[1] + R[3]) / s, 0.25 * s, (R[5] + R[7]) / s
    else:
        s = 2.0 * np.sqrt(1.0 + R[8] - R[0] - R[4])
        qw, qx, qy, qz = (R[3] - R[1]) / s, (R[2] + R[6]) / s, (R[5] + R[7]) / s, 0.25 * s
    if qw < 0.0:
        qw, qx, qy, qz = -qw, -qx, -qy, -qz
    n = np.sqrt(qw * qw + qx * qx + qy * qy + qz * qz)
    return qw / n, qx / n, qy / n, qz / n


@jit(forceinline=True)
def _zero_common(K, b0, b1, row):
    """Zero the columns of the joints on the path from the common ancestor of bodies b0 and b1
    to the root (the motions that move both)."""
    parent, dofadr, nvj = K[0], K[1], K[2]
    x, y = b0, b1
    while x != y:
        if x > y:
            x = parent[x]
        else:
            y = parent[y]
    while x > 0:
        for k in range(dofadr[x], dofadr[x] + nvj[x]):
            row[k] = 0.0
        x = parent[x]


@jit(forceinline=True)
def _site_transmission(a, K, w, i, g, row):
    """(length, moment row) of a site transmission (see the module's docstring)."""
    sid = a.actuator_trnid[i, 0]
    ref = a.actuator_trnid[i, 1]
    b0 = a.site_bodyid[sid]
    Rs, ps = _m9(w.site_xmat, sid), _p3(w.site_xpos, sid)
    if ref < 0:
        apply_wrench(K, b0, ps, mv(Rs, (g[0], g[1], g[2])), mv(Rs, (g[3], g[4], g[5])), 1.0, row)
        return 0.0
    b1 = a.site_bodyid[ref]
    Rf, pf = _m9(w.site_xmat, ref), _p3(w.site_xpos, ref)
    L = dot(mtv(Rf, sub(ps, pf)), (g[0], g[1], g[2]))
    if g[3] != 0.0 or g[4] != 0.0 or g[5] != 0.0:
        # the rotation vector of R_f^T R_s
        qw, qx, qy, qz = _mat2quat(mTm(Rf, Rs))
        L += dot(_quat2vel(qw, qx, qy, qz), (g[3], g[4], g[5]))
    wt = mv(Rf, (g[0], g[1], g[2]))
    wr = mv(Rf, (g[3], g[4], g[5]))
    for k in range(2):
        apply_wrench(K, b0 if k == 0 else b1, ps if k == 0 else pf, wt, wr, 1.0 if k == 0 else -1.0, row)
    _zero_common(K, b0, b1, row)
    return L


@jit(forceinline=True)
def _slider_crank(a, K, w, i, g, row):
    """(length, moment row) of a slider-crank transmission (see the module's docstring)."""
    cid = a.actuator_trnid[i, 0]
    sid = a.actuator_trnid[i, 1]
    rod = a.actuator_cranklength[i]
    Rs, ps = _m9(w.site_xmat, sid), _p3(w.site_xpos, sid)
    pc = _p3(w.site_xpos, cid)
    ax = (Rs[2], Rs[5], Rs[8])
    vec = sub(pc, ps)
    av = dot(vec, ax)
    det = av * av + rod * rod - dot(vec, vec)
    if det <= 0.0:
        L = av
        dlda = vec
        dldv = ax
    else:
        sdet = np.sqrt(det)
        L = av - sdet
        c1 = 1.0 - av / sdet
        dldv = (ax[0] * c1 + vec[0] / sdet, ax[1] * c1 + vec[1] / sdet, ax[2] * c1 + vec[2] / sdet)
        dlda = (vec[0] * c1, vec[1] * c1, vec[2] * c1)
    bs = a.site_bodyid[sid]
    # d axis / dq_k = omega_k x axis, so dlda . (omega_k x axis) = omega_k . (axis x dlda): the
    # slider's term -g (J_p^T dldv + J_w^T (dlda x axis))
    Z = (0.0, 0.0, 0.0)
    for k in range(2):
        apply_wrench(K, a.site_bodyid[cid] if k == 0 else bs, pc if k == 0 else ps, dldv,
                     Z if k == 0 else cross(dlda, ax), g[0] if k == 0 else -g[0], row)
    return L * g[0]


def site_length(ab, a, K, w, i, g, row):
    """Site and slider-crank transmissions where the actuation has geometry (``tendons.geometric``);
    0 (and no code) where it has none."""
    if not geometric(ab):
        return 0.0
    if a.actuator_trntype[i] == TRN_SITE:
        return _site_transmission(a, K, w, i, g, row)
    return _slider_crank(a, K, w, i, g, row)


@overload(site_length, jit_options={"forceinline": True})
def _site_length(ab, a, K, w, i, g, row):
    if not isinstance(ab, types.BaseTuple):
        return lambda ab, a, K, w, i, g, row: 0.0

    def impl(ab, a, K, w, i, g, row):
        if a.actuator_trntype[i] == TRN_SITE:
            return _site_transmission(a, K, w, i, g, row)
        return _slider_crank(a, K, w, i, g, row)
    return impl


@jit(forceinline=True)
def transmission(ab, a, K, w, q, v):
    """actuator_length, actuator_moment and actuator_velocity of MuJoCo's actuators (tendon
    states and site frames first: ``tendons.tendon_state``, ``state.frames``)."""
    nu = a.actuator_trntype.shape[0]
    nv = w.actuator_moment.shape[1]
    for i in range(nu):
        for k in range(nv):
            w.actuator_moment[i, k] = 0.0
        trn = a.actuator_trntype[i]
        g = a.actuator_gear[i]
        L = 0.0
        if trn == TRN_JOINT or trn == TRN_JOINTINPARENT:
            jt = a.actuator_jnttype[i]
            qa = a.actuator_qadr[i]
            da = a.actuator_dofadr[i]
            if jt == JNT_BALL:
                pw, px, py, pz = _unit_quat(q, qa)
                r0, r1, r2 = _quat2vel(pw, px, py, pz)
                if trn == TRN_JOINT:
                    g0, g1, g2 = g[0], g[1], g[2]
                else:
                    g0, g1, g2 = _rot_inv(pw, px, py, pz, g[0], g[1], g[2])
                L = r0 * g0 + r1 * g1 + r2 * g2
                w.actuator_moment[i, da] = g0
                w.actuator_moment[i, da + 1] = g1
                w.actuator_moment[i, da + 2] = g2
            elif jt == JNT_FREE:
                if trn == TRN_JOINT:
                    g3, g4, g5 = g[3], g[4], g[5]
                else:
                    pw, px, py, pz = _unit_quat(q, qa + 3)
                    g3, g4, g5 = _rot_inv(pw, px, py, pz, g[3], g[4], g[5])
                for k in range(3):
                    w.actuator_moment[i, da + k] = g[k]
                w.actuator_moment[i, da + 3] = g3
                w.actuator_moment[i, da + 4] = g4
                w.actuator_moment[i, da + 5] = g5
            else:
                L = q[qa] * g[0]
                w.actuator_moment[i, da] = g[0]
                w.actuator_length[i] = L
                w.actuator_velocity[i] = g[0] * v[da]
                continue
        elif trn == TRN_TENDON:
            t = a.actuator_trnid[i, 0]
            L = w.ten_length[t] * g[0]
            for k in range(nv):
                w.actuator_moment[i, k] = w.ten_J[t, k] * g[0]
        elif trn == TRN_SITE or trn == TRN_SLIDERCRANK:
            L = site_length(ab, a, K, w, i, g, w.actuator_moment[i])
        w.actuator_length[i] = L
        s = 0.0
        for k in range(nv):
            s += w.actuator_moment[i, k] * v[k]
        w.actuator_velocity[i] = s
