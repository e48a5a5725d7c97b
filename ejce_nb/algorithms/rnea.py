"""Inverse dynamics: the recursive Newton-Euler algorithm (Featherstone, RBDA section 5.3) for
any EJCE joint.

    tau = M(q, t) qdd + h(q, qd, t) - sum_i J_i(q, t)^T f_ext,i

(M includes the rotor inertias ``dof_armature`` on its diagonal: tau_k += armature_k qdd_k)

in O(N): the forward sweep (``kinematics.forward``: v_i, a_i with a_0 = -g), then

    f_i = I_i a_i + v_i x* I_i v_i - f_ext,i
    tau_i = S_i^T f_i,     f_p += X_i^T f_i            (children before parents)

``f_ext`` are world-frame wrenches [moment about the body origin; force], turned into C_i with
its world axes.  ``nonlinear_effects`` is the same with qdd = 0 (h: Coriolis, centrifugal,
gravity and, for rheonomic joints, the terms of the prescribed motion).
"""
import numpy as np
from numba import types
from numba.extending import overload

from .._jit import jit
from .kinematics import forward
from ..core.lanes import gather, get, put
from ..core.spatial import (add6, crf, dot6, inertia_mul, ld3, ld6, ld9, st6, sub6, xforce_T)


def fext(F, fb, i, k):
    """Entry k of the wrench on body i of sample fb: a number, or the group's lanes when fb is
    (first sample, step): samples fb[0], fb[0] + fb[1], ... (step 0: one wrench for all)."""
    return F[fb, i, k]


@overload(fext)
def _fext(F, fb, i, k):
    if isinstance(fb, types.UniTuple):
        return lambda F, fb, i, k: gather(F, (fb[0] * F.shape[1] + i) * 6 + k, fb[1] * F.shape[1] * 6)
    return lambda F, fb, i, k: F[fb, i, k]


@jit
def wrench_in_C(m, r, F, fb, i):
    """The world wrench F[fb, i] ([moment about the body origin; force]) on body i, in C_i: axes
    turned by RC_i, moment moved from the body origin (at bo_i in C_i) to the origin of C_i."""
    R = ld9(r.RC, i)
    b = ld3(m.body_bo, i)
    n0, n1, n2 = fext(F, fb, i, 0), fext(F, fb, i, 1), fext(F, fb, i, 2)
    F0, F1, F2 = fext(F, fb, i, 3), fext(F, fb, i, 4), fext(F, fb, i, 5)
    f0 = R[0] * F0 + R[3] * F1 + R[6] * F2
    f1 = R[1] * F0 + R[4] * F1 + R[7] * F2
    f2 = R[2] * F0 + R[5] * F1 + R[8] * F2
    return (R[0] * n0 + R[3] * n1 + R[6] * n2 + b[1] * f2 - b[2] * f1,
            R[1] * n0 + R[4] * n1 + R[7] * n2 + b[2] * f0 - b[0] * f2,
            R[2] * n0 + R[5] * n1 + R[8] * n2 + b[0] * f1 - b[1] * f0,
            f0, f1, f2)


@jit
def rnea_state(m, r, s, q, v, a, t, F, fb, full, tau):
    """tau of one state (the forward sweep, then ``rnea_forces``)."""
    forward(m, r, s, q, v, a, t, np.int64(2), F.shape[0] > 0, full)
    rnea_forces(m, r, s, F, fb, a, tau)


@jit
def rnea_forces(m, r, s, F, fb, a, tau):
    """The two loops of RNEA after the forward sweep (twists and accelerations in r): the body
    forces f_i outward, then tau_i = S_i^T f_i + armature_i qdd_i and f_p += X_i^T f_i inward
    (``a`` the accelerations qdd the sweep ran with)."""
    has_f = F.shape[0] > 0
    n1 = m.body_parent.shape[0]
    for i in range(1, n1):
        vi = ld6(r.vel, i)
        mass = m.body_mass[i]
        h = ld3(m.body_hC, i)
        I = ld9(m.body_IC, i)
        fi = add6(inertia_mul(mass, h, I, ld6(r.acc, i)), crf(vi, inertia_mul(mass, h, I, vi)))
        if has_f:
            fi = sub6(fi, wrench_in_C(m, r, F, fb, i))
        st6(s.f, i, fi)
    for i in range(n1 - 1, 0, -1):
        fi = ld6(s.f, i)
        for k in range(m.jnt_dofadr[i], m.jnt_dofadr[i] + m.jnt_nv[i]):
            put(tau, k, dot6(ld6(r.S, k), fi) + m.dof_armature[k] * get(a, k))
        l = m.body_parent[i]
        if l > 0:
            st6(s.f, l, add6(ld6(s.f, l), xforce_T(ld9(r.E, i), ld3(r.d, i), fi)))
