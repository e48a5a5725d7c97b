"""Forward dynamics: the articulated-body algorithm (Featherstone, RBDA section 7.3) for any EJCE
joint, O(N).

    qdd = M(q, t)^-1 (tau - h(q, qd, t) + sum_i J_i^T f_ext,i)

in each body's outboard joint frame C_i, after the forward sweep (``kinematics.forward``: v_i,
and S_i, vJ_i, cJ_i of the joints):

  outward:  c_i = cJ_i + v_i x vJ_i,   I^A_i = I_i,   p^A_i = v_i x* I_i v_i - f_ext,i
  inward:   U_i = I^A_i S_i,   D_i = S_i^T U_i + diag(armature_i),   u_i = tau_i - S_i^T p^A_i,
            I^a = I^A_i - U_i D_i^-1 U_i^T,   p^a = p^A_i + I^a c_i + U_i D_i^-1 u_i,
            I^A_p += X_i^T I^a X_i,   p^A_p += X_i^T p^a
  outward:  a'_i = X_i a_p + c_i  (a_0 = -g),   qdd_i = D_i^-1 (u_i - U_i^T a'_i),
            a_i = a'_i + S_i qdd_i

D_i (nv_i x nv_i, up to 6 x 6) is inverted by Cholesky.  It is singular when S_i loses rank (a
gimbal lock of an Euler-angle joint, a degenerate universal joint) or when the subtree carried
by joint i has no inertia along S_i (a massless subtree); the sample's status then says which
(``ej.Status``), and Python raises ej.SingularJointError naming the joint, the configuration and,
in a batch, the samples.
"""
import numpy as np
from numba import types
from numba.extending import overload

from ..model import inputs
from .._jit import jit
from .kinematics import forward
from ..core.lanes import get, load_row, minimum, put, store_row, zero_of
from .rnea import wrench_in_C
from ..core.spatial import (add21, add6, axpy6, crf, crm, dot6, inertia_mul, ld21, ld3, ld6, ld9, rigid21,
                      st21, st6, sub6, sym_mul, sym_sub_outer, sym_to_parent, xforce_T, xmotion)

# A pivot of D = S^T I^A S at or below this fraction of the subtree's inertia scale means the
# subtree offers no inertia along the joint's motion (massless subtree).
PIVOT_TOL = 1e-11


@jit
def spd_inverse(W, n, S, vs, ref, Dinv):
    """D^-1 of D = W[0:n, 0:n] (n <= 6, symmetric) into rows vs.. of Dinv, by Cholesky (L in
    W[6:12]; W[0:6] is overwritten).  Returns (massless, dependence): ``massless`` when a diagonal
    entry of D is not clearly positive against the inertia scale ``ref`` of the subtree (times
    |S_k|^2, its own units): no inertia along that column; ``dependence`` the smallest pivot
    relative to its diagonal entry (1: independent columns, about the square of a column's
    distance from the others' span; 0: D singular, Dinv not written)."""
    Z = zero_of(W)
    dep = 1.0 + Z
    for j in range(n):
        nrm = Z
        for x in range(6):
            nrm += load_row(S, vs + j, x) * load_row(S, vs + j, x)
        djj = load_row(W, j, j)
        # (lanes: any lane failing a test fails the group, which then runs state by state)
        if not djj > PIVOT_TOL * ref * nrm:
            return True, Z
        s = djj
        for k in range(j):
            s -= load_row(W, 6 + j, k) * load_row(W, 6 + j, k)
        rel = s / djj
        dep = minimum(rel, dep)
        if not rel > 1e-15:
            return False, Z
        ljj = np.sqrt(s)
        store_row(W, 6 + j, j, ljj)
        for i in range(j + 1, n):
            s2 = load_row(W, i, j)
            for k in range(j):
                s2 -= load_row(W, 6 + i, k) * load_row(W, 6 + j, k)
            store_row(W, 6 + i, j, s2 / ljj)
    # L^-1 (lower) into W[0:6], then D^-1 = L^-T L^-1
    for j in range(n):
        store_row(W, j, j, 1.0 / load_row(W, 6 + j, j))
        for i in range(j + 1, n):
            s = Z
            for k in range(j, i):
                s += load_row(W, 6 + i, k) * load_row(W, k, j)
            store_row(W, i, j, -s / load_row(W, 6 + i, i))
    for a in range(n):
        for b in range(a, n):
            s = Z
            for k in range(b, n):
                s += load_row(W, k, a) * load_row(W, k, b)
            store_row(Dinv, vs + a, b, s)
            store_row(Dinv, vs + b, a, s)
    return False, dep


def joint_residual(S, vs, nvj, W):
    """``inputs.subspace_residual`` of one state; 0 for a group's lanes, so that a group with a
    joint near a lock runs state by state (which names the joint and its distance)."""
    return inputs.subspace_residual(S, vs, nvj, W)


@overload(joint_residual)
def _joint_residual(S, vs, nvj, W):
    if isinstance(S, types.Array) and S.ndim == 3:
        return lambda S, vs, nvj, W: 0.0
    return lambda S, vs, nvj, W: inputs.subspace_residual(S, vs, nvj, W)


@jit(forceinline=True)
def aba_state(m, r, s, q, v, tau, t, F, fb, full, qdd):
    """qdd of one state; returns (status, joint): OK, an error, or NEAR_SINGULAR_JOINT with the
    accelerations computed.  Inlined where it is called (a call would copy the views)."""
    forward(m, r, s, q, v, s.zv, t, np.int64(1), F.shape[0] > 0, full)
    return aba_solve(m, r, s, tau, F, fb, qdd)


@jit
def aba_solve(m, r, s, tau, F, fb, qdd):
    """The three loops of the ABA after the forward sweep (the joints and twists in r; its
    accelerations, if any, are not read); returns what ``aba_state`` returns."""
    has_f = F.shape[0] > 0
    near = -1
    n1 = m.body_parent.shape[0]
    Z = zero_of(r.vel)
    grav = m.gravity
    a_base = (0.0, 0.0, 0.0, -grav[0], -grav[1], -grav[2])
    # -- outward: velocity-product accelerations, rigid inertias and bias forces
    for i in range(1, n1):
        vi = ld6(r.vel, i)
        st6(s.c, i, add6(ld6(r.cJ, i), crm(vi, ld6(r.vJ, i))))
        mass = m.body_mass[i]
        h = ld3(m.body_hC, i)
        I = ld9(m.body_IC, i)
        st21(s.IA, i, rigid21(mass, h, I))
        s.sc[i] = m.body_iscale[i]
        pi = crf(vi, inertia_mul(mass, h, I, vi))
        if has_f:
            pi = sub6(pi, wrench_in_C(m, r, F, fb, i))
        st6(s.f, i, pi)
    # -- inward: articulated inertias and bias forces
    for i in range(n1 - 1, 0, -1):
        vs = m.jnt_dofadr[i]
        nvj = m.jnt_nv[i]
        l = m.body_parent[i]
        Ai = ld21(s.IA, i)
        pi = ld6(s.f, i)
        # pivots are judged against the bodies' own inertias (the largest in the subtree): a
        # massless subtree, or masses on the joint axis, leave D_i at rounding of that scale,
        # while the lever arms of a long chain, which grow I^A_i like N^3 in directions away
        # from S, do not make an ordinary joint look singular
        ref = s.sc[i]
        if nvj == 1:
            # one velocity variable: D and u are numbers
            Sk = ld6(r.S, vs)
            Uk = sym_mul(Ai, Sk)
            D = dot6(Sk, Uk) + m.dof_armature[vs]
            u = get(tau, vs) - dot6(Sk, pi)
            if not D > PIVOT_TOL * ref * dot6(Sk, Sk):
                if not dot6(Sk, Sk) > inputs.ZERO_COLUMN ** 2:
                    return inputs.SINGULAR_JOINT, i
                return inputs.SINGULAR_ARTICULATED, i
            Dk = 1.0 / D
            st6(s.U, vs, Uk)
            store_row(s.Dinv, vs, 0, Dk)
            put(s.uu, vs, u)
            if l == 0:
                continue
            UD = (Uk[0] * Dk, Uk[1] * Dk, Uk[2] * Dk, Uk[3] * Dk, Uk[4] * Dk, Uk[5] * Dk)
            Ia = sym_sub_outer(Ai, UD, Uk)
            pa = axpy6(u, UD, pi)
        else:
            for k in range(vs, vs + nvj):
                Sk = ld6(r.S, k)
                st6(s.U, k, sym_mul(Ai, Sk))
                put(s.uu, k, get(tau, k) - dot6(Sk, pi))
            massless = False
            dep = 1.0 + Z
            if nvj > 1:
                for j in range(nvj):
                    for k in range(j, nvj):
                        x = dot6(ld6(r.S, vs + j), ld6(s.U, vs + k))
                        if j == k:
                            x = x + m.dof_armature[vs + j]
                        store_row(s.W, j, k, x)
                        store_row(s.W, k, j, x)
                massless, dep = spd_inverse(s.W, nvj, r.S, vs, ref, s.Dinv)
            # nearly dependent columns of D (about the square of S's): the joint itself is at or
            # near a lock, whatever inertia it carries
            if not dep >= 1e-6 or (massless and nvj > 1):
                resid = joint_residual(r.S, vs, nvj, s.W)
                if resid < inputs.SINGULAR_RANK or (dep == 0.0 and not massless):
                    return inputs.SINGULAR_JOINT, i
                if resid < inputs.NEAR_RANK:
                    near = i
            if massless:
                return inputs.SINGULAR_ARTICULATED, i
            if l == 0:
                continue
            # I^a = I^A - U D^-1 U^T,  p^a = p^A + I^a c + U D^-1 u
            Ia = Ai
            pa = pi
            for k in range(nvj):
                UDk = (Z, Z, Z, Z, Z, Z)
                for j in range(nvj):
                    UDk = axpy6(load_row(s.Dinv, vs + j, k), ld6(s.U, vs + j), UDk)
                Ia = sym_sub_outer(Ia, UDk, ld6(s.U, vs + k))
                pa = axpy6(get(s.uu, vs + k), UDk, pa)
        pa = add6(pa, sym_mul(Ia, ld6(s.c, i)))
        Ei = ld9(r.E, i)
        di = ld3(r.d, i)
        add21(s.IA, l, sym_to_parent(Ei, di, Ia))
        st6(s.f, l, add6(ld6(s.f, l), xforce_T(Ei, di, pa)))
        if s.sc[i] > s.sc[l]:
            s.sc[l] = s.sc[i]
    # -- outward: accelerations
    for i in range(1, n1):
        vs = m.jnt_dofadr[i]
        nvj = m.jnt_nv[i]
        l = m.body_parent[i]
        if l == 0:
            ap = add6(xmotion(ld9(r.E, i), ld3(r.d, i), a_base), ld6(s.c, i))
        else:
            ap = add6(xmotion(ld9(r.E, i), ld3(r.d, i), ld6(s.c, l)), ld6(s.c, i))
        if nvj == 1:
            x = load_row(s.Dinv, vs, 0) * (get(s.uu, vs) - dot6(ld6(s.U, vs), ap))
            put(qdd, vs, x)
            ai = axpy6(x, ld6(r.S, vs), ap)
        else:
            for k in range(vs, vs + nvj):
                put(s.uu, k, get(s.uu, k) - dot6(ld6(s.U, k), ap))
            ai = ap
            for j in range(nvj):
                x = Z
                for k in range(nvj):
                    x += load_row(s.Dinv, vs + j, k) * get(s.uu, vs + k)
                put(qdd, vs + j, x)
                ai = axpy6(x, ld6(r.S, vs + j), ai)
        # c_i is no longer needed: it holds the body's acceleration for its children
        st6(s.c, i, ai)
    if near >= 0:
        return inputs.NEAR_SINGULAR, near
    return 0, -1
