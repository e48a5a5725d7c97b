"""Tendons: lengths, Jacobians and velocities (MuJoCo's ``mj_tendon``), and their passive forces.

A fixed tendon t of joint wraps k (coefficient ``wrap_prm[k]`` on the coordinate of a hinge or
slide joint) is linear in the coordinates:

    ten_length[t] = sum_k wrap_prm[k] q[wrap_qadr[k]],   ten_J[t, wrap_dofadr[k]] += wrap_prm[k]
    ten_velocity[t] = ten_J[t] . qd

A spatial tendon is a path through sites (``WRAP_SITE``), with pulleys (``WRAP_PULLEY``, divisor
``wrap_prm``) that start a new branch whose length and Jacobian count 1 / divisor: each straight
segment from site p0 (body b0) to site p1 (body b1) adds |p1 - p0| / divisor to the length and,
where b0 != b1, (J_p1 - J_p0)^T e / divisor to ten_J with e = (p1 - p0) / |p1 - p0| (the points'
world Jacobians taken as fixed on their bodies: MuJoCo's definition).

A sphere or cylinder (``WRAP_SPHERE``, ``WRAP_CYLINDER``) between two sites wraps the segment
around the geom as MuJoCo's ``mju_wrap`` does: in the plane through the sphere's centre and the
two sites (the cylinder's cross-section), the shortest of the two tangent paths (the one on the
side of the side site where one is given; ``wrap_inside`` where the side site lies inside the
circle), the two tangent points fixed on the geom's body; the cylinder's path climbs as a helix.
The segment is then three pieces (site, tangent point, tangent point, site), the arc between the
tangent points on one body.

Its spring-damper (MuJoCo's ``mj_passive``) is a force along the tendon,
f = stiffness (lower - length) below ``tendon_lengthspring[t, 0]``, stiffness (upper - length)
above ``[t, 1]``, 0 between, minus damping ten_velocity, applied as qfrc_tendon += ten_J^T f.
"""
import numpy as np
from numba import types
from numba.extending import overload

from .._jit import jit
from ..core.spatial import cross, sub
from .points import add_wrench
from .views import act_view
from .tables import F_DAMPER, F_SPRING, WRAP_CYLINDER, WRAP_JOINT, WRAP_PULLEY, WRAP_SPHERE

MINVAL = 1e-15


# ---------------------------------------------------------------------------- wrapping (mju_wrap)
@jit(forceinline=True)
def _norm2(x, y):
    n = np.sqrt(x * x + y * y)
    if n < MINVAL:
        return 1.0, 0.0, n
    return x / n, y / n, n


@jit(forceinline=True)
def _acos(x):
    return np.arccos(min(1.0, max(-1.0, x)))


@jit(forceinline=True)
def _asin(x):
    return np.arcsin(min(1.0, max(-1.0, x)))


@jit(forceinline=True)
def _intersect(p1x, p1y, p2x, p2y, p3x, p3y, p4x, p4y):
    """Whether the 2D segments p1-p2 and p3-p4 intersect."""
    det = (p4y - p3y) * (p2x - p1x) - (p4x - p3x) * (p2y - p1y)
    if abs(det) < MINVAL:
        return False
    a = ((p4x - p3x) * (p1y - p3y) - (p4y - p3y) * (p1x - p3x)) / det
    b = ((p2x - p1x) * (p1y - p3y) - (p2y - p1y) * (p1x - p3x)) / det
    return a >= 0.0 and a <= 1.0 and b >= 0.0 and b <= 1.0


@jit(forceinline=True)
def _length_circle(p0x, p0y, p1x, p1y, ind, radius):
    ax, ay, _ = _norm2(p0x, p0y)
    bx, by, _ = _norm2(p1x, p1y)
    angle = _acos(ax * bx + ay * by)
    cr = p0y * p1x - p0x * p1y
    if (cr > 0.0 and ind) or (cr < 0.0 and not ind):
        angle = 2.0 * np.pi - angle
    return radius * angle


@jit(forceinline=True)
def _wrap_circle(e0, e1, e2, e3, has_side, sx, sy, radius):
    """(length or -1, tangent points x0, y0, x1, y1) of the 2D circle wrap."""
    sq0 = e0 * e0 + e1 * e1
    sq1 = e2 * e2 + e3 * e3
    sqr = radius * radius
    if sq0 < sqr or sq1 < sqr or radius < MINVAL:
        return -1.0, 0.0, 0.0, 0.0, 0.0
    dx, dy = e2 - e0, e3 - e1
    dd = dx * dx + dy * dy
    if dd < MINVAL:
        return -1.0, 0.0, 0.0, 0.0, 0.0
    a = -(dx * e0 + dy * e1) / dd
    a = 0.0 if a < 0.0 else (1.0 if a > 1.0 else a)
    tx, ty = a * dx + e0, a * dy + e1
    if tx * tx + ty * ty > sqr and (not has_side or sx * tx + sy * ty >= 0.0):
        return -1.0, 0.0, 0.0, 0.0, 0.0
    r0 = np.sqrt(sq0 - sqr)
    r1 = np.sqrt(sq1 - sqr)
    best = 0
    g0 = 0.0
    g1 = 0.0
    for i in range(2):
        sg = 1.0 if i == 0 else -1.0
        ax = (e0 * sqr + sg * radius * e1 * r0) / sq0
        ay = (e1 * sqr - sg * radius * e0 * r0) / sq0
        bx = (e2 * sqr - sg * radius * e3 * r1) / sq1
        by = (e3 * sqr + sg * radius * e2 * r1) / sq1
        if has_side:
            ux, uy, _ = _norm2(ax + bx, ay + by)
            good = ux * sx + uy * sy
        else:
            good = -((ax - bx) * (ax - bx) + (ay - by) * (ay - by))
        if _intersect(e0, e1, ax, ay, e2, e3, bx, by):
            good = -10000.0
        if i == 0:
            g0 = good
        else:
            g1 = good
    best = 0 if g0 > g1 else 1
    sg = 1.0 if best == 0 else -1.0
    ax = (e0 * sqr + sg * radius * e1 * r0) / sq0
    ay = (e1 * sqr - sg * radius * e0 * r0) / sq0
    bx = (e2 * sqr - sg * radius * e3 * r1) / sq1
    by = (e3 * sqr + sg * radius * e2 * r1) / sq1
    if _intersect(e0, e1, ax, ay, e2, e3, bx, by):
        return -1.0, 0.0, 0.0, 0.0, 0.0
    return _length_circle(ax, ay, bx, by, best == 1, radius), ax, ay, bx, by


@jit(forceinline=True)
def _wrap_inside(e0, e1, e2, e3, radius):
    """(0 or -1, x0, y0, x1, y1) of the 2D inside wrap (MuJoCo's Newton iteration)."""
    len0 = np.sqrt(e0 * e0 + e1 * e1)
    len1 = np.sqrt(e2 * e2 + e3 * e3)
    dx, dy = e2 - e0, e3 - e1
    dd = dx * dx + dy * dy
    if len0 <= radius or len1 <= radius or radius < MINVAL or len0 < MINVAL or len1 < MINVAL:
        return -1.0, 0.0, 0.0, 0.0, 0.0
    if dd > MINVAL:
        a = -(dx * e0 + dy * e1) / dd
        if a > 0.0 and a < 1.0:
            tx, ty = e0 + a * dx, e1 + a * dy
            if np.sqrt(tx * tx + ty * ty) <= radius:
                return -1.0, 0.0, 0.0, 0.0, 0.0
    px, py, _ = _norm2(0.5 * (e0 + e2), 0.5 * (e1 + e3))
    px, py = px * radius, py * radius
    A = radius / len0
    B = radius / len1
    cosG = (len0 * len0 + len1 * len1 - dd) / (2.0 * len0 * len1)
    if cosG < -1.0 + MINVAL:
        return -1.0, 0.0, 0.0, 0.0, 0.0
    if cosG > 1.0 - MINVAL:
        return 0.0, px, py, px, py
    G = _acos(cosG)
    z = 1.0 - 1e-7
    f = _asin(A * z) + _asin(B * z) - 2.0 * _asin(z) + G
    if f > 0.0:
        return 0.0, px, py, px, py
    it = 0
    while it < 20 and abs(f) > 1e-6:
        df = (A / max(MINVAL, np.sqrt(1.0 - z * z * A * A)) + B / max(MINVAL, np.sqrt(1.0 - z * z * B * B))
              - 2.0 / max(MINVAL, np.sqrt(1.0 - z * z)))
        if df > -MINVAL:
            return 0.0, px, py, px, py
        z1 = z - f / df
        if z1 > z:
            return 0.0, px, py, px, py
        z = z1
        f = _asin(A * z) + _asin(B * z) - 2.0 * _asin(z) + G
        if f > 1e-6:
            return 0.0, px, py, px, py
        it += 1
    if it >= 20:
        return 0.0, px, py, px, py
    # converged as MuJoCo's iteration (|f| <= 1e-6): a few more Newton steps bring z to the
    # tangent point itself (MuJoCo 4.0.1's points agree to about 1e-8)
    for _ in range(4):
        if abs(f) <= 1e-15:
            break
        df = (A / max(MINVAL, np.sqrt(1.0 - z * z * A * A)) + B / max(MINVAL, np.sqrt(1.0 - z * z * B * B))
              - 2.0 / max(MINVAL, np.sqrt(1.0 - z * z)))
        if df > -MINVAL:
            break
        z1 = z - f / df
        f1 = _asin(A * z1) + _asin(B * z1) - 2.0 * _asin(z1) + G
        if not abs(f1) < abs(f):
            break
        z, f = z1, f1
    if e0 * e3 - e1 * e2 > 0.0:
        vx, vy, _ = _norm2(e0, e1)
        ang = _asin(z) - _asin(A * z)
    else:
        vx, vy, _ = _norm2(e2, e3)
        ang = _asin(z) - _asin(B * z)
    px = radius * (np.cos(ang) * vx - np.sin(ang) * vy)
    py = radius * (np.sin(ang) * vx + np.cos(ang) * vy)
    return 0.0, px, py, px, py


@jit(forceinline=True)
def _n3(x):
    n = np.sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2])
    if n < MINVAL:
        return (1.0, 0.0, 0.0), n
    return (x[0] / n, x[1] / n, x[2] / n), n


@jit
def wrap(x0, x1, gp, gR, radius, kind, has_side, side):
    """MuJoCo's ``mju_wrap``: (length of the wrapped arc or -1, first tangent point, second), world
    frame; gp, gR the geom's world position and axes (9 numbers, row by row)."""
    t0 = sub(x0, gp)
    t1 = sub(x1, gp)
    p0 = (gR[0] * t0[0] + gR[3] * t0[1] + gR[6] * t0[2], gR[1] * t0[0] + gR[4] * t0[1] + gR[7] * t0[2],
          gR[2] * t0[0] + gR[5] * t0[1] + gR[8] * t0[2])
    p1 = (gR[0] * t1[0] + gR[3] * t1[1] + gR[6] * t1[2], gR[1] * t1[0] + gR[4] * t1[1] + gR[7] * t1[2],
          gR[2] * t1[0] + gR[5] * t1[1] + gR[8] * t1[2])
    Z = (0.0, 0.0, 0.0)
    if np.sqrt(p0[0] * p0[0] + p0[1] * p0[1] + p0[2] * p0[2]) < MINVAL or \
            np.sqrt(p1[0] * p1[0] + p1[1] * p1[1] + p1[2] * p1[2]) < MINVAL:
        return -1.0, Z, Z
    if kind == WRAP_SPHERE:
        a0, _ = _n3(p0)
        nrm, nn = _n3(cross(p0, p1))
        if nn < MINVAL:
            i = 0
            if abs(a0[1]) > abs(a0[0]) and abs(a0[1]) > abs(a0[2]):
                i = 1
            if abs(a0[2]) > abs(a0[0]) and abs(a0[2]) > abs(a0[1]):
                i = 2
            b = (0.0 if i == 0 else 1.0, 0.0 if i == 1 else 1.0, 0.0 if i == 2 else 1.0)
            nrm, _ = _n3(cross(a0, b))
        a1, _ = _n3(cross(nrm, a0))
    else:
        a0 = (1.0, 0.0, 0.0)
        a1 = (0.0, 1.0, 0.0)
    d0 = p0[0] * a0[0] + p0[1] * a0[1] + p0[2] * a0[2]
    d1 = p0[0] * a1[0] + p0[1] * a1[1] + p0[2] * a1[2]
    d2 = p1[0] * a0[0] + p1[1] * a0[1] + p1[2] * a0[2]
    d3 = p1[0] * a1[0] + p1[1] * a1[1] + p1[2] * a1[2]
    sx = sy = 0.0
    inside = False
    if has_side:
        ts = sub(side, gp)
        sl = (gR[0] * ts[0] + gR[3] * ts[1] + gR[6] * ts[2], gR[1] * ts[0] + gR[4] * ts[1] + gR[7] * ts[2],
              gR[2] * ts[0] + gR[5] * ts[1] + gR[8] * ts[2])
        sx, sy, _ = _norm2(sl[0] * a0[0] + sl[1] * a0[1] + sl[2] * a0[2], sl[0] * a1[0] + sl[1] * a1[1] + sl[2] * a1[2])
        sx, sy = sx * radius, sy * radius
        inside = np.sqrt(sl[0] * sl[0] + sl[1] * sl[1] + sl[2] * sl[2]) < radius
    if inside:
        wl, q0, q1, q2, q3 = _wrap_inside(d0, d1, d2, d3, radius)
    else:
        wl, q0, q1, q2, q3 = _wrap_circle(d0, d1, d2, d3, has_side, sx, sy, radius)
    if wl < 0.0:
        return -1.0, Z, Z
    r0 = (a0[0] * q0 + a1[0] * q1, a0[1] * q0 + a1[1] * q1, a0[2] * q0 + a1[2] * q1)
    r1 = (a0[0] * q2 + a1[0] * q3, a0[1] * q2 + a1[1] * q3, a0[2] * q2 + a1[2] * q3)
    if kind == WRAP_CYLINDER:
        L0 = np.sqrt((p0[0] - r0[0]) * (p0[0] - r0[0]) + (p0[1] - r0[1]) * (p0[1] - r0[1]))
        L1 = np.sqrt((p1[0] - r1[0]) * (p1[0] - r1[0]) + (p1[1] - r1[1]) * (p1[1] - r1[1]))
        z0 = p0[2] + (p1[2] - p0[2]) * L0 / (L0 + wl + L1)
        z1 = p0[2] + (p1[2] - p0[2]) * (L0 + wl) / (L0 + wl + L1)
        r0 = (r0[0], r0[1], z0)
        r1 = (r1[0], r1[1], z1)
        h = abs(z1 - z0)
        wl = np.sqrt(wl * wl + h * h)
    w0 = (gR[0] * r0[0] + gR[1] * r0[1] + gR[2] * r0[2] + gp[0], gR[3] * r0[0] + gR[4] * r0[1] + gR[5] * r0[2] + gp[1],
          gR[6] * r0[0] + gR[7] * r0[1] + gR[8] * r0[2] + gp[2])
    w1 = (gR[0] * r1[0] + gR[1] * r1[1] + gR[2] * r1[2] + gp[0], gR[3] * r1[0] + gR[4] * r1[1] + gR[5] * r1[2] + gp[1],
          gR[6] * r1[0] + gR[7] * r1[1] + gR[8] * r1[2] + gp[2])
    return wl, w0, w1


@jit(forceinline=True)
def apply_wrench(K, b, x, f, n, scale, row):
    """row += scale (J_p(x)^T f + J_w^T n): a world force f at the point x of body b and a world
    torque n on it; ``K`` = (body_parent, jnt_dofadr, jnt_nv, RC, oC, S) of the model and record
    (``points.add_wrench``, compiled once and called)."""
    add_wrench(K[0], K[1], K[2], K[3], K[4], K[5], b, x, f, n, scale, row)


@jit(forceinline=True)
def _segments(K, pts, bods, npt, scale, row):
    """sum_k |p_k+1 - p_k| over the path's straight pieces (with 4 points the middle one is the arc
    on the wrapped geom, not counted); row += scale (J_p_k+1 - J_p_k)^T e_k where the bodies
    differ (e_k the unit direction of the piece)."""
    Z = (0.0, 0.0, 0.0)
    L = 0.0
    for k in range(npt - 1):
        p0 = pts[k]
        p1 = pts[k + 1]
        d = sub(p1, p0)
        n = np.sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
        if not (npt == 4 and k == 1):
            L += n
        if bods[k] != bods[k + 1]:
            e = (1.0, 0.0, 0.0) if n < MINVAL else (d[0] / n, d[1] / n, d[2] / n)
            for h in range(2):
                apply_wrench(K, bods[k + 1] if h == 0 else bods[k], p1 if h == 0 else p0, e, Z,
                             scale if h == 0 else -scale, row)
    return L


@jit(forceinline=True)
def _p3(X, k):
    return (X[k, 0], X[k, 1], X[k, 2])


@jit(forceinline=True)
def _m9(X, k):
    return (X[k, 0], X[k, 1], X[k, 2], X[k, 3], X[k, 4], X[k, 5], X[k, 6], X[k, 7], X[k, 8])


@jit(forceinline=True)
def _spatial(a, K, w, t, row):
    """Length of spatial tendon t; its Jacobian into row (site and geom frames in ``w``)."""
    adr = a.tendon_adr[t]
    num = a.tendon_num[t]
    L = 0.0
    div = 1.0
    j = 0
    while j < num - 1:
        t0 = a.wrap_type[adr + j]
        t1 = a.wrap_type[adr + j + 1]
        if t0 == WRAP_PULLEY or t1 == WRAP_PULLEY:
            if t0 == WRAP_PULLEY:
                div = a.wrap_prm[adr + j]
            j += 1
            continue
        s0 = a.wrap_objid[adr + j]
        p0 = _p3(w.site_xpos, s0)
        b0 = a.site_bodyid[s0]
        wl = -1.0
        if t1 == WRAP_SPHERE or t1 == WRAP_CYLINDER:
            g = adr + j + 1
            s1 = a.wrap_objid[adr + j + 2]
            p1 = _p3(w.site_xpos, s1)
            sid = int(np.round(a.wrap_prm[g]))
            wl, w0, w1 = wrap(p0, p1, _p3(w.wrap_xpos, g), _m9(w.wrap_xmat, g), a.wrap_radius[g], t1, sid >= 0,
                              _p3(w.site_xpos, sid if sid >= 0 else s0))
            gb = a.wrap_geombody[g]
            j += 2
        else:
            s1 = a.wrap_objid[adr + j + 1]
            p1 = _p3(w.site_xpos, s1)
            w0, w1, gb = p1, p1, a.site_bodyid[s1]
            j += 1
        b1 = a.site_bodyid[s1]
        if wl < 0.0:
            w0, w1, gb = p1, p1, b1
        npt = 2 if wl < 0.0 else 4
        # (no wrap: the points p0, p1 and two copies of p1 that _segments does not reach)
        pts = (p0, w0, w1, p1) if npt == 4 else (p0, p1, p1, p1)
        L += (_segments(K, pts, (b0, gb, gb, b1), npt, 1.0 / div, row) + max(wl, 0.0)) / div
    return L


def geometric(ab):
    """Whether the packed float buffer ``ab`` is that of an actuation with geometry (sites, spatial
    tendons: ``Actuation.packed`` hands it as a 1-tuple), a property of its compiled type."""
    return isinstance(ab, tuple)


def act_view_of(ab, ib):
    """The named views of the tables (``views.act_view``) of the packed buffers, ``ab`` the float
    array or its 1-tuple."""
    return act_view(ab[0] if isinstance(ab, tuple) else ab, ib)


@overload(act_view_of, jit_options={"forceinline": True})
def _act_view_of(ab, ib):
    if isinstance(ab, types.BaseTuple):
        return lambda ab, ib: act_view(ab[0], ib)
    return lambda ab, ib: act_view(ab, ib)


def spatial_length(ab, a, K, w, t, row):
    """``_spatial`` where the actuation has geometry; 0 (and no code) where it has none."""
    return _spatial(a, K, w, t, row) if geometric(ab) else 0.0


@overload(spatial_length, jit_options={"forceinline": True})
def _spatial_length(ab, a, K, w, t, row):
    if isinstance(ab, types.BaseTuple):
        return lambda ab, a, K, w, t, row: _spatial(a, K, w, t, row)
    return lambda ab, a, K, w, t, row: 0.0


@jit(forceinline=True)
def tendon_state(ab, a, K, w, q, v):
    """ten_length, ten_J and ten_velocity of every tendon (``w``: the work views, with the sites'
    and geoms' world frames for spatial tendons; ``K``: ``apply_wrench``'s arrays; ``ab``: the
    packed floats, whose type says whether spatial tendons are compiled at all)."""
    nt = a.tendon_adr.shape[0]
    nv = w.ten_J.shape[1]
    for t in range(nt):
        L = 0.0
        for k in range(nv):
            w.ten_J[t, k] = 0.0
        if a.tendon_num[t] > 0 and a.wrap_type[a.tendon_adr[t]] != WRAP_JOINT:
            L = spatial_length(ab, a, K, w, t, w.ten_J[t])
        for k in range(a.tendon_adr[t], a.tendon_adr[t] + a.tendon_num[t]):
            if a.wrap_type[k] == WRAP_JOINT:
                c = a.wrap_prm[k]
                L += c * q[a.wrap_qadr[k]]
                w.ten_J[t, a.wrap_dofadr[k]] += c
        w.ten_length[t] = L
        s = 0.0
        for k in range(nv):
            s += w.ten_J[t, k] * v[k]
        w.ten_velocity[t] = s


@jit(forceinline=True)
def tendon_passive(a, w):
    """qfrc_tendon = sum_t ten_J[t] f_t: the tendons' springs (dead band) and dampers."""
    nt = a.tendon_adr.shape[0]
    nv = w.qfrc_tendon.shape[0]
    for k in range(nv):
        w.qfrc_tendon[k] = 0.0
    spring = a.opt_flags[F_SPRING] != 0
    damper = a.opt_flags[F_DAMPER] != 0
    for t in range(nt):
        ks = a.tendon_stiffness[t] if spring else 0.0
        kd = a.tendon_damping[t] if damper else 0.0
        if ks == 0.0 and kd == 0.0:
            continue
        L = w.ten_length[t]
        lo = a.tendon_lengthspring[t, 0]
        hi = a.tendon_lengthspring[t, 1]
        f = 0.0
        if L > hi:
            f = ks * (hi - L)
        elif L < lo:
            f = ks * (lo - L)
        f -= kd * w.ten_velocity[t]
        for k in range(nv):
            w.qfrc_tendon[k] += w.ten_J[t, k] * f
