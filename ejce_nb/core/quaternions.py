"""Unit quaternions: the kinematic map q' = N(q) u of a quaternion joint, the retraction
q (+) delta on the configuration manifold and the rates of its tangent increment, and the joint
terms of the quaternion path (EJCE.md section 2):

    R = 1 + (2/n)(w v^ + v^ v^)  (n = |q|^2),   S = [1; 0],   vJ = [u; 0],   cJ = 0

for a spherical joint; a free joint adds S = [0; R^T] for rdot in P axes and cJ = [0; -w x R^T rdot].
"""
import numpy as np

from .._jit import jit
from .lanes import get
from .placement import place
from .spatial import ZERO3, ZERO6, cross, ld9, mtv, st6


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
            w1, x1, y1, z1 = q[a], q[a + 1], q[a + 2], q[a + 3]
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



# ---------------------------------------------------------------------------- unit quaternions
@jit(forceinline=True)
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


@jit(forceinline=True)
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

