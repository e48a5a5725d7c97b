"""Pose functions: the pose of the outboard frame C in the inboard frame P, R(q, t) and r(q, t),
written once per joint kind in jet arithmetic.  This is the only place that knows joint kinds;
``ejce.joint_eval`` turns any pose into J, sigma and the bias.

Every function takes the joint's coordinates as a tuple of MAX_NQ jets ``qj`` (unused ones zero),
time as a jet ``tj``, and the model's flat parameter table with the joint's block at ``adr``;
it returns (R as 9 jets row-major, r as 3 jets).
"""
import numpy as np

from ..._jit import jit
from ..jets import (jadd, jaddc, jaxpy, jconst, jfun, jmat_identity, jmat_mul, jmat_turn_cols,
                    jmat_turn_rows, jmat_vec, jmul, jneg, jrecip, jrot_axis, jrot_skew, jscale, jsincos)
from . import codes as C


@jit
def _rot(ax, ay, az, angle):
    s, c = jsincos(angle)
    return jrot_axis(ax, ay, az, s, c)


@jit
def _zero3():
    z = jconst(0.0)
    return (z, z, z)


@jit
def _sinc_series(s, second):
    """Value, d/ds and d2/ds2 of sin(th)/th (second=0) or (1-cos th)/th^2 (second=1), th^2 = s,
    by their power series (accurate for s < 1)."""
    f0 = 0.0
    f1 = 0.0
    f2 = 0.0
    fact = 1.0 if second == 0 else 0.5      # 1/(2n+1)! or 1/(2n+2)! at n = 0
    sign = 1.0
    for n in range(14):
        c = sign * fact
        f0 += c * s ** n
        if n >= 1:
            f1 += n * c * s ** (n - 1)
        if n >= 2:
            f2 += n * (n - 1) * c * s ** (n - 2)
        k = 2 * n + 2 + second
        fact /= k * (k + 1)
        sign = -sign
    return f0, f1, f2


@jit
def _sinc_jets(s):
    """A = sin(th)/th and B = (1 - cos th)/th^2 as jets of s = th^2 (smooth through th = 0)."""
    s0 = s[0]
    if s0 < 1.0:
        which = int(s0 - s0)        # a runtime 0: a literal would compile the series twice
        a0, a1, a2 = _sinc_series(s0, which)
        b0, b1, b2 = _sinc_series(s0, which + 1)
    else:
        th = np.sqrt(s0)
        sn = np.sin(th)
        cs = np.cos(th)
        # g(th), g', g'' then f(s) = g(sqrt s): f' = g'/(2 th), f'' = (g'' th - g')/(4 th^3)
        ga = sn / th
        ga1 = (th * cs - sn) / s0
        ga2 = -ga - 2.0 * ga1 / th
        gb = (1.0 - cs) / s0
        gb1 = sn / s0 - 2.0 * (1.0 - cs) / (s0 * th)
        gb2 = cs / s0 - 4.0 * sn / (s0 * th) + 6.0 * (1.0 - cs) / (s0 * s0)
        a0, a1, a2 = ga, ga1 / (2.0 * th), (ga2 * th - ga1) / (4.0 * s0 * th)
        b0, b1, b2 = gb, gb1 / (2.0 * th), (gb2 * th - gb1) / (4.0 * s0 * th)
    return jfun(s, a0, a1, a2), jfun(s, b0, b1, b2)


@jit
def rotation(params, adr, qj, off):
    """Rotation of a Spherical/Free parameter block at ``adr`` from the coordinates qj[off:]."""
    kind = int(params[adr])
    if kind == C.ROT_EULER:
        i0 = int(params[adr + 1])
        i1 = int(params[adr + 2])
        i2 = int(params[adr + 3])
        s0, c0 = jsincos(qj[off])
        s1, c1 = jsincos(qj[off + 1])
        s2, c2 = jsincos(qj[off + 2])
        R = jmat_turn_cols(jmat_identity(), i0, s0, c0)
        if params[adr + 4] != 0.0:
            # intrinsic, about the moving axes: R = R0 R1 R2
            return jmat_turn_cols(jmat_turn_cols(R, i1, s1, c1), i2, s2, c2)
        # extrinsic, about the fixed axes of P: R = R2 R1 R0
        return jmat_turn_rows(jmat_turn_rows(R, i1, s1, c1), i2, s2, c2)
    if kind == C.ROT_QUATERNION:
        w = qj[off]
        x = qj[off + 1]
        y = qj[off + 2]
        z = qj[off + 3]
        # R = I + (2/n)(w [v]x + [v]x^2), n = |q|^2: a rotation for any non-zero q
        k = jscale(jrecip(jadd(jadd(jmul(w, w), jmul(x, x)), jadd(jmul(y, y), jmul(z, z)))), 2.0)
        return jrot_skew(x, y, z, jmul(k, w), k)
    x = qj[off]
    y = qj[off + 1]
    z = qj[off + 2]
    s = jadd(jadd(jmul(x, x), jmul(y, y)), jmul(z, z))
    if kind == C.ROT_ROTVEC:
        a, b = _sinc_jets(s)
        return jrot_skew(x, y, z, a, b)
    if kind == C.ROT_GIBBS:
        k = jscale(jrecip(jaddc(s, 1.0)), 2.0)
        return jrot_skew(x, y, z, k, k)
    # modified Rodrigues: R = I + (4 (1 - s) [p]x + 8 [p]x^2) / (1 + s)^2
    d = jrecip(jaddc(s, 1.0))
    d2 = jmul(d, d)
    return jrot_skew(x, y, z, jscale(jmul(jaddc(jneg(s), 1.0), d2), 4.0), jscale(d2, 8.0))


@jit
def coord_function(params, p, qj, tj):
    """Evaluate the sum of terms starting at params[p]; returns (jet, next position)."""
    nterms = int(params[p])
    p += 1
    f = jconst(0.0)
    for _ in range(nterms):
        kind = int(params[p])
        if kind == C.FN_LINEAR:
            f = jaddc(f, params[p + 1])
            n = int(params[p + 2])
            for k in range(n):
                f = jaxpy(params[p + 3 + k], qj[k], f)
            p += 3 + n
        elif kind == C.FN_POLY:
            c = int(params[p + 1])
            x = tj if c < 0 else qj[c]
            n = int(params[p + 2])
            f = jadd(f, _horner(params, p + 3, n, x))
            p += 3 + n
        elif kind == C.FN_SPLINE:
            c = int(params[p + 1])
            x = tj if c < 0 else qj[c]
            n = int(params[p + 2])
            x0, y0, c1, c2, c3, inside = spline_piece(params, p + 3, n, x[0])
            if not inside:
                f = jadd(f, jaddc(jscale(jaddc(x, -x0), c1), y0))
            else:
                u = jaddc(x, -x0)
                acc = jaddc(jmul(jaddc(jmul(jaddc(jscale(u, c3), c2), u), c1), u), y0)
                f = jadd(f, acc)
            p += 3 + 3 * n
        elif kind == C.FN_MULTIPOLY:
            nc = int(params[p + 1])
            nt = int(params[p + 2])
            cs = p + 3
            t0 = cs + nc
            for k in range(nt):
                tp = t0 + k * (nc + 1)
                acc = jconst(params[tp])
                for j in range(nc):
                    x = qj[int(params[cs + j])]
                    for _ in range(int(params[tp + 1 + j])):
                        acc = jmul(acc, x)
                f = jadd(f, acc)
            p = t0 + nt * (nc + 1)
        elif kind == C.FN_TIMEPOLY:
            n = int(params[p + 1])
            f = jadd(f, _horner(params, p + 2, n, tj))
            p += 2 + n
        else:  # FN_HARMONIC
            s, c = jsincos(jaddc(jscale(tj, params[p + 2]), params[p + 3]))
            f = jaxpy(params[p + 1], s, f)
            p += 4
    return f, p


@jit
def _horner(params, c, n, x):
    """The polynomial sum_k params[c + k] x^k (n coefficients) of the jet x, by Horner's scheme."""
    acc = jconst(params[c + n - 1])
    for k in range(n - 2, -1, -1):
        acc = jaddc(jmul(acc, x), params[c + k])
    return acc


def simple_function_coord(params, p):
    """In Python: the coordinate read by the function at params[p] when it is one ``Poly`` or
    ``Spline`` term of a coordinate (evaluated by ``function1``, also four states at a time),
    else -1."""
    if int(params[p]) == 1 and int(params[p + 1]) in (C.FN_POLY, C.FN_SPLINE):
        return int(params[p + 2])
    return -1


@jit
def simple_coord(params, p):
    """``simple_function_coord`` in the kernels."""
    if int(params[p]) == 1:
        kind = int(params[p + 1])
        if kind == C.FN_POLY or kind == C.FN_SPLINE:
            return int(params[p + 2])
    return -1


@jit
def function1(params, p, x):
    """(value, first, second derivative) at x of the one-term ``Poly`` or ``Spline`` function at
    params[p] (``simple_coord``): the fast path of ``coord_function``, in plain numbers."""
    b = p + 1
    n = int(params[b + 2])
    if int(params[b]) == C.FN_POLY:
        # Horner's scheme with the derivatives
        f = params[b + 3 + n - 1]
        d1 = 0.0
        d2 = 0.0
        for k in range(n - 2, -1, -1):
            d2 = d2 * x + 2.0 * d1
            d1 = d1 * x + f
            f = f * x + params[b + 3 + k]
        return f, d1, d2
    x0, y0, c1, c2, c3, inside = spline_piece(params, b + 3, n, x)
    if not inside:
        return y0 + c1 * (x - x0), c1, 0.0
    u = x - x0
    return (y0 + u * (c1 + u * (c2 + u * c3)), c1 + u * (2.0 * c2 + 3.0 * c3 * u),
            2.0 * c2 + 6.0 * c3 * u)


@jit
def spline_piece(params, xs, n, xv):
    """The piece at xv of the cubic spline with n knots at params[xs:], their values and second
    derivatives M after them: (x0, y0, c1, c2, c3, inside), the cubic y0 + c1 u + c2 u^2 + c3 u^3
    in u = xv - x0 on the knot interval [x0, x1] of xv,

        c1 = (y1 - y0)/h - h (2 M0 + M1)/6,   c2 = M0/2,   c3 = (M1 - M0)/(6 h),   h = x1 - x0,

    or beyond the end knots (``inside`` False) the line y0 + c1 (xv - x0) from the end knot with
    the spline's slope there (the end knots themselves on the cubic, as OpenSim)."""
    ys = xs + n
    ms = ys + n
    if xv < params[xs] or xv > params[xs + n - 1]:
        i = 0 if xv < params[xs] else n - 2
        e = i if xv < params[xs] else i + 1
        h = params[xs + i + 1] - params[xs + i]
        slope = (params[ys + i + 1] - params[ys + i]) / h
        if e == i:
            slope -= h * (2.0 * params[ms + i] + params[ms + i + 1]) / 6.0
        else:
            slope += h * (params[ms + i] + 2.0 * params[ms + i + 1]) / 6.0
        return params[xs + e], params[ys + e], slope, 0.0, 0.0, False
    i = 0
    while i < n - 2 and xv >= params[xs + i + 1]:
        i += 1
    h = params[xs + i + 1] - params[xs + i]
    m0 = params[ms + i]
    m1 = params[ms + i + 1]
    c1 = (params[ys + i + 1] - params[ys + i]) / h - h * (2.0 * m0 + m1) / 6.0
    return params[xs + i], params[ys + i], c1, 0.5 * m0, (m1 - m0) / (6.0 * h), True


@jit
def composite(params, adr, qj, tj):
    """Product of elementary motions, each in the frame the previous ones moved to."""
    R = jmat_identity()
    r = _zero3()
    nmot = int(params[adr])
    p = adr + 1
    for _ in range(nmot):
        kind = int(params[p])
        ax = params[p + 1]
        ay = params[p + 2]
        az = params[p + 3]
        f, p = coord_function(params, p + 4, qj, tj)
        if kind == C.MOTION_ROT:
            R = jmat_mul(R, _rot(ax, ay, az, f))
        else:
            d = jmat_vec(R, (jscale(f, ax), jscale(f, ay), jscale(f, az)))
            r = (jadd(r[0], d[0]), jadd(r[1], d[1]), jadd(r[2], d[2]))
    return R, r


@jit
def pose(jtype, params, adr, qj, tj):
    """R(q, t), r(q, t) of any joint: the one dispatch on the joint type code."""
    if jtype == C.REVOLUTE:
        return _rot(params[adr], params[adr + 1], params[adr + 2], qj[0]), _zero3()
    if jtype == C.PRISMATIC:
        q = qj[0]
        return jmat_identity(), (jscale(q, params[adr]), jscale(q, params[adr + 1]), jscale(q, params[adr + 2]))
    if jtype == C.HELICAL or jtype == C.CYLINDRICAL:
        ax = params[adr]
        ay = params[adr + 1]
        az = params[adr + 2]
        d = jscale(qj[0], params[adr + 3]) if jtype == C.HELICAL else qj[1]
        return _rot(ax, ay, az, qj[0]), (jscale(d, ax), jscale(d, ay), jscale(d, az))
    if jtype == C.UNIVERSAL:
        R1 = _rot(params[adr], params[adr + 1], params[adr + 2], qj[0])
        R2 = _rot(params[adr + 3], params[adr + 4], params[adr + 5], qj[1])
        return jmat_mul(R1, R2), _zero3()
    if jtype == C.PLANAR:
        z = jconst(0.0)
        return _rot(0.0, 0.0, 1.0, qj[2]), (qj[0], qj[1], z)
    if jtype == C.TRANSLATION:
        return jmat_identity(), (qj[0], qj[1], qj[2])
    if jtype == C.SPHERICAL or jtype == C.FREE:
        # a runtime offset: a literal one would compile ``rotation`` twice
        off = 3 if jtype == C.FREE else 0
        R = rotation(params, adr, qj, off)
        if off == 0:
            return R, _zero3()
        return R, (qj[0], qj[1], qj[2])
    if jtype == C.COMPOSITE:
        return composite(params, adr, qj, tj)
    if jtype == C.ELLIPSOID:
        # body-fixed X-Y-Z rotation; the origin of C on the ellipsoid of radii (a, b, c) of P at
        # diag(a, b, c) n, n = R e_z the normal (Simbody's MobilizedBody::Ellipsoid)
        s0, c0 = jsincos(qj[0])
        s1, c1 = jsincos(qj[1])
        s2, c2 = jsincos(qj[2])
        ix = int(params[adr + 3])
        R = jmat_turn_cols(jmat_turn_cols(jmat_turn_cols(jmat_identity(), ix, s0, c0), ix + 1, s1, c1),
                           ix + 2, s2, c2)
        return R, (jscale(R[2], params[adr]), jscale(R[5], params[adr + 1]), jscale(R[8], params[adr + 2]))
    return jmat_identity(), _zero3()        # FIXED (and the world)
