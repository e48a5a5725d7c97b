"""Joints that are products of elementary screw motions, T = T_0(f_0) T_1(f_1) ...: rotations
about and translations along constant axes, by amounts f_m(q, t).  With S_m the unit twist of
motion m seen from C (EJCE.md section 2),

    S[:, k] = sum_m df_m/dq_k S_m,    vJ = sum_m f'_m S_m,
    cJ = sum_m f''0_m S_m + sum_{m < n} f'_m f'_n (S_m x S_n),

which needs no derivative of a pose and no jets.  An amount that is a function of the coordinates
and time is evaluated on jets (value, gradient, rate and second derivative at once), or in plain
numbers when it is one Poly or Spline term of a coordinate.
"""
import numpy as np
from numba import types
from numba.extending import overload

from .._jit import jit
from .generic_path import seeds
from .joints import codes as C
from .joints.pose import coord_function, function1, simple_coord
from .lanes import LANES, get, load_row, pack, put, store_row, zero_of
from .placement import place
from .spatial import ZERO3, ZERO6, axpy6, cross, crm, ld3, ld6, mm, mtv, mv, rot_axis, st6

assert LANES == 4          # the lane function amounts below are written for four lanes


@jit(forceinline=True)
def screw_position(m, r, s, i, q, t, full):
    """X_i and S_i of a product of elementary motions T_0 T_1 ... T_{n-1}: walking from the last
    motion to the first, H = T_{m+1} ... T_{n-1} (the pose of C in the frame motion m moves),
    S_m = Ad(H^-1) [a_m; 0] for a rotation, [0; R_H^T a_m] for a translation.  ``full``: the
    model's kind of paths (``ejce``): None compiles no function amount."""
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
            f = function_amount(m, r, s, i, q, t, k, Z, full)
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


def _function_amount(m, r, s, i, q, t, k, Z, full):
    """The amount of motion k, a function of the coordinates and time evaluated on jets along
    u = 0: value, and its gradient into r.mg[k] (one Poly or Spline term of a coordinate: by
    ``function1``, in plain numbers)."""
    c = simple_coord(m.jnt_params, m.mot_fadr[k])
    if c >= 0:
        f, d1, d2 = function1(m.jnt_params, m.mot_fadr[k], q[m.jnt_qadr[i] + c])
        for j in range(6):
            r.mg[k, j] = 0.0
        r.mg[k, c] = d1
        r.mh[k] = d2
        return f
    qj = seeds(q, s.zv, m.jnt_qadr[i], m.jnt_nq[i], m.jnt_dofadr[i], -1)
    fj, _ = coord_function(m.jnt_params, m.mot_fadr[k], qj, (t, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0))
    for j in range(6):
        r.mg[k, j] = fj[3 + j]
    return fj[0]


def _function_rates(m, r, i, q, v, t, k, Z, full):
    """(first, second derivative along the motion) of motion k's function amount (one Poly or
    Spline term of a coordinate: from its derivatives the position stage recorded)."""
    c = simple_coord(m.jnt_params, m.mot_fadr[k])
    if c >= 0:
        return _simple_rates(m, r, i, v, k, c)
    qj = seeds(q, v, m.jnt_qadr[i], m.jnt_nq[i], m.jnt_dofadr[i], -1)
    fj, _ = coord_function(m.jnt_params, m.mot_fadr[k], qj, (t, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0))
    return fj[1], fj[2]


@jit(forceinline=True)
def _simple_rates(m, r, i, v, k, c):
    """f' = f_q w and f''0 = f_qq w^2 of an amount f(q_c) of the joint's coordinate c, w its rate
    (numbers, or a group's lanes)."""
    w = get(v, m.jnt_dofadr[i] + c)
    return load_row(r.mg, k, c) * w, get(r.mh, k) * w * w


def _lane_function_amount(m, r, s, i, q, t, k, Z, full):
    # lane models' function amounts are all one Poly or Spline term of a coordinate: each lane
    # as ``_function_amount`` computes it
    p = m.mot_fadr[k]
    c = simple_coord(m.jnt_params, p)
    row = m.jnt_qadr[i] + c
    f0, g0, h0 = function1(m.jnt_params, p, q[row, 0])
    f1, g1, h1 = function1(m.jnt_params, p, q[row, 1])
    f2, g2, h2 = function1(m.jnt_params, p, q[row, 2])
    f3, g3, h3 = function1(m.jnt_params, p, q[row, 3])
    for j in range(6):
        store_row(r.mg, k, j, Z)
    store_row(r.mg, k, c, pack(g0, g1, g2, g3))
    put(r.mh, k, pack(h0, h1, h2, h3))
    return pack(f0, f1, f2, f3)


def _lane_function_rates(m, r, i, q, v, t, k, Z, full):
    return _simple_rates(m, r, i, v, k, simple_coord(m.jnt_params, m.mot_fadr[k]))


def _no_amount(m, r, s, i, q, t, k, Z, full):
    # a model of the kind PATHS_SCREWS has no function amount: never called
    return Z


def _no_rates(m, r, i, q, v, t, k, Z, full):
    return Z, Z


def function_amount(m, r, s, i, q, t, k, Z, full):
    """The amount of motion k, a function of the coordinates and time (``_function_amount``; a
    group's lanes: ``_lane_function_amount``); not compiled for a model whose ``full`` is None."""
    if full is None:
        return _no_amount(m, r, s, i, q, t, k, Z, full)
    return _function_amount(m, r, s, i, q, t, k, Z, full)


def function_rates(m, r, i, q, v, t, k, Z, full):
    if full is None:
        return _no_rates(m, r, i, q, v, t, k, Z, full)
    return _function_rates(m, r, i, q, v, t, k, Z, full)


def _lanes(q):
    return isinstance(q, types.Array) and q.ndim == 2


@overload(function_amount)
def _ov_amount(m, r, s, i, q, t, k, Z, full):
    if isinstance(full, types.NoneType):
        return _no_amount
    # the lane kernels take only models whose function amounts are one term of a coordinate
    return _lane_function_amount if _lanes(q) else _function_amount


@overload(function_rates)
def _ov_rates(m, r, i, q, v, t, k, Z, full):
    if isinstance(full, types.NoneType):
        return _no_rates
    return _lane_function_rates if _lanes(q) else _function_rates


@jit(forceinline=True)
def screw_velocity(m, r, i, q, v, t, full):
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
            fd, f2 = function_rates(m, r, i, q, v, t, k, Z, full)
            cJ = axpy6(f2, Sk, cJ)
        if k != last:
            cJ = axpy6(fd, crm(Sk, V), cJ)
        V = axpy6(fd, Sk, V)
    st6(r.vJ, i, V)
    st6(r.cJ, i, cJ)

