"""The tangent of the recursive Newton-Euler algorithm: one direction of (q, u) or time at a time,
forward-mode differentiation of the sweeps (in the spirit of Carpentier and Mansard, RSS 2018).

Each direction is an O(N) sweep over the subtree it moves and the path back to the root.  In each
body's outboard frame C_i, with the joint's X_i, S_i, vJ_i, cJ_i:

    dv_i = X_i dv_p + [dv_i^J]                 da_i = X_i da_p + dv_i x vJ_i + [da_i^J]
    df_i = I_i da_i + dv_i x* I_i v_i + v_i x* I_i dv_i + [dz_i x* f_ext,i]
    dtau_i = S_i^T df_i + [dS_i^T f_i],        df_p += X_i^T df_i + [X_i^T (xi x* f_i)]

the bracketed terms only where the direction moves joint i itself.  A displacement of joint i's
coordinates by dq moves C_i by the twist xi = S_i dq (C axes), so dX_i = -(xi x) X_i exactly for
every joint; and with dS_i, dvJ_i, dcJ_i the joint's own derivatives (``joint_tangents``),

    dv_i^J = (X_i v_p) x xi + dvJ_i,    da_i^J = (X_i a_p) x xi + dS_i u'_i + dcJ_i + v_i x dvJ_i

(dz: the displacement of each frame, for the world-fixed external wrenches).  A velocity direction
moves only vJ_i (by S_i e_k) and cJ_i.  The time direction of a rheonomic model moves every driven
joint at once, with xi = R^T sigma.

The rows of the sweeps' scratch D (n1 bodies, nv velocity variables):

    0 dv (q), n1 da (q), 2 n1 df (q), 3 n1 dv (u), 4 n1 da (u), 5 n1 df (u), 6 n1 dz,
    7 n1 the external wrenches in C axes, 8 n1 xi of each driven joint (time), 9 n1 dS (time, nv rows),
    X0 = 9 n1 + nv the joint's own terms (10 rows), X0 + 10 the momenta I_i v_i (n1 rows).
"""
from .._jit import jit
from .joint_tangents import general_tangent, joint_tangent
from ..core.spatial import (ZERO6, add6, axpy6, crf, crm, cross, dot6, inertia_mul, ld3, ld6, ld9, st6, sub6,
                            xforce_T, xmotion)


@jit
def rows(n1, nv):
    """Rows of the sweeps' scratch D (see the module)."""
    return 10 * n1 + nv + 10


@jit
def _joint_accel(m, r, i, a):
    """X_i a_p (a_0 = -g): the body's acceleration less the joint's own part."""
    x = sub6(sub6(ld6(r.acc, i), ld6(r.cJ, i)), crm(ld6(r.vel, i), ld6(r.vJ, i)))
    for k in range(m.jnt_dofadr[i], m.jnt_dofadr[i] + m.jnt_nv[i]):
        x = axpy6(-a[k], ld6(r.S, k), x)
    return x


@jit
def _wrench_turn(m, i, dz, D, FC):
    """The change of body i's external wrench in C_i when C_i turns by dz's rotation: the wrench
    keeps its world axes and its point of application, the body origin (fixed in C_i at bo_i);
    D[FC + i] holds its moment (about the body origin) and force in C axes."""
    w = (dz[0], dz[1], dz[2])
    n0 = (D[FC + i, 0], D[FC + i, 1], D[FC + i, 2])
    f0 = (D[FC + i, 3], D[FC + i, 4], D[FC + i, 5])
    b = ld3(m.body_bo, i)
    wn = cross(w, n0)
    wf = cross(w, f0)
    bwf = cross(b, wf)
    return (-wn[0] - bwf[0], -wn[1] - bwf[1], -wn[2] - bwf[2], -wf[0], -wf[1], -wf[2])


@jit
def tangent_body(m, D, i, V, A, Z, F, FC, IV, vi, dvi, dai, dz, has_f):
    """One body of a forward tangent sweep: dv_i, da_i (and dz_i where world-fixed wrenches act)
    into rows V + i, A + i (Z + i) of D, and df_i = I_i da_i + dv_i x* I_i v_i + v_i x* I_i dv_i
    (less the turn of the external wrench) into row F + i; D[IV + i] holds I_i v_i."""
    st6(D, V + i, dvi)
    st6(D, A + i, dai)
    mass = m.body_mass[i]
    h = ld3(m.body_hC, i)
    I = ld9(m.body_IC, i)
    f = add6(add6(inertia_mul(mass, h, I, dai), crf(dvi, ld6(D, IV + i))), crf(vi, inertia_mul(mass, h, I, dvi)))
    if has_f:
        st6(D, Z + i, dz)
        f = sub6(f, _wrench_turn(m, i, dz, D, FC))
    st6(D, F + i, f)


@jit
def direction(m, r, s, D, aff, j, c, k, q, v, a, t, qp, vp, has_f, dq, dv):
    """Columns k of dtau/dq and dtau/dv: coordinate (tangent) c and velocity variable c of joint j,
    both on one sweep."""
    n1 = m.body_parent.shape[0]
    nv = dq.shape[0]
    DVQ, DAQ, DFQ, DVU, DAU, DFU, DZ, FC = 0, n1, 2 * n1, 3 * n1, 4 * n1, 5 * n1, 6 * n1, 7 * n1
    X0 = 9 * n1 + nv
    IV = X0 + 10
    joint_tangent(m, r, s, j, c, q, v, t, qp, vp, D, X0)
    for x in range(nv):
        dq[x, k] = 0.0
        dv[x, k] = 0.0
    xi = ld6(D, X0)
    for i in range(j, n1):
        l = m.body_parent[i]
        if i == j:
            aff[i] = 1.0
        else:
            aff[i] = aff[l] if l >= j else 0.0
        if aff[i] == 0.0:
            continue
        vi = ld6(r.vel, i)
        vJ = ld6(r.vJ, i)
        dz = ZERO6
        if i == j:
            dvJ = ld6(D, X0 + 1)
            dvq = add6(crm(sub6(vi, vJ), xi), dvJ)
            daq = add6(crm(_joint_accel(m, r, i, a), xi), ld6(D, X0 + 2))
            for x in range(m.jnt_nv[i]):
                daq = axpy6(a[m.jnt_dofadr[i] + x], ld6(D, X0 + 4 + x), daq)
            daq = add6(daq, add6(crm(dvq, vJ), crm(vi, dvJ)))
            Sc = ld6(r.S, m.jnt_dofadr[i] + c)
            dvu = Sc
            dau = add6(ld6(D, X0 + 3), add6(crm(Sc, vJ), crm(vi, Sc)))
            if has_f:
                dz = xi
        else:
            E = ld9(r.E, i)
            d = ld3(r.d, i)
            dvq = xmotion(E, d, ld6(D, DVQ + l))
            daq = add6(xmotion(E, d, ld6(D, DAQ + l)), crm(dvq, vJ))
            dvu = xmotion(E, d, ld6(D, DVU + l))
            dau = add6(xmotion(E, d, ld6(D, DAU + l)), crm(dvu, vJ))
            if has_f:
                dz = xmotion(E, d, ld6(D, DZ + l))
        tangent_body(m, D, i, DVQ, DAQ, DZ, DFQ, FC, IV, vi, dvq, daq, dz, has_f)
        tangent_body(m, D, i, DVU, DAU, DZ, DFU, FC, IV, vi, dvu, dau, ZERO6, False)
    l = m.body_parent[j]
    while l > 0:
        st6(D, DFQ + l, ZERO6)
        st6(D, DFU + l, ZERO6)
        l = m.body_parent[l]
    for i in range(n1 - 1, j - 1, -1):
        if aff[i] == 0.0:
            continue
        fq = ld6(D, DFQ + i)
        fu = ld6(D, DFU + i)
        fi = ld6(s.f, i)
        vs = m.jnt_dofadr[i]
        for x in range(m.jnt_nv[i]):
            dq[vs + x, k] = dot6(ld6(r.S, vs + x), fq)
            dv[vs + x, k] = dot6(ld6(r.S, vs + x), fu)
            if i == j:
                dq[vs + x, k] += dot6(ld6(D, X0 + 4 + x), fi)
        l = m.body_parent[i]
        if l > 0:
            E = ld9(r.E, i)
            d = ld3(r.d, i)
            if i == j:
                fq = add6(fq, crf(xi, fi))
            st6(D, DFQ + l, add6(ld6(D, DFQ + l), xforce_T(E, d, fq)))
            st6(D, DFU + l, add6(ld6(D, DFU + l), xforce_T(E, d, fu)))
    # the path back to the root: the forces of the moved subtree, carried inward
    l = m.body_parent[j]
    while l > 0:
        fq = ld6(D, DFQ + l)
        fu = ld6(D, DFU + l)
        vs = m.jnt_dofadr[l]
        for x in range(m.jnt_nv[l]):
            dq[vs + x, k] = dot6(ld6(r.S, vs + x), fq)
            dv[vs + x, k] = dot6(ld6(r.S, vs + x), fu)
        p = m.body_parent[l]
        if p > 0:
            E = ld9(r.E, l)
            d = ld3(r.d, l)
            st6(D, DFQ + p, add6(ld6(D, DFQ + p), xforce_T(E, d, fq)))
            st6(D, DFU + p, add6(ld6(D, DFU + p), xforce_T(E, d, fu)))
        l = p


@jit
def time_direction(m, r, s, D, JR, q, v, a, t, qp, vp, has_f, dt):
    """dtau/dt of a rheonomic model: every driven joint (JR[i] != 0) moves with time."""
    n1 = m.body_parent.shape[0]
    nv = dt.shape[0]
    DV, DA, DF, DZ, FC, XT, DST = 0, n1, 2 * n1, 6 * n1, 7 * n1, 8 * n1, 9 * n1
    X0 = 9 * n1 + nv
    for i in range(1, n1):
        l = m.body_parent[i]
        vi = ld6(r.vel, i)
        vJ = ld6(r.vJ, i)
        vs = m.jnt_dofadr[i]
        if l > 0:
            E = ld9(r.E, i)
            d = ld3(r.d, i)
            dvi = xmotion(E, d, ld6(D, DV + l))
            dai = xmotion(E, d, ld6(D, DA + l))
            dz = xmotion(E, d, ld6(D, DZ + l))
        else:
            dvi = ZERO6
            dai = ZERO6
            dz = ZERO6
        if JR[i] != 0:
            general_tangent(m, r, s, i, -1, q, v, t, qp, vp, D, X0)
            xi = ld6(D, X0)
            dvJ = ld6(D, X0 + 1)
            dvi = add6(dvi, add6(crm(sub6(vi, vJ), xi), dvJ))
            dai = add6(dai, add6(crm(_joint_accel(m, r, i, a), xi), ld6(D, X0 + 2)))
            for x in range(m.jnt_nv[i]):
                dai = axpy6(a[vs + x], ld6(D, X0 + 4 + x), dai)
                st6(D, DST + vs + x, ld6(D, X0 + 4 + x))
            dai = add6(dai, crm(vi, dvJ))
            dz = add6(dz, xi)
            st6(D, XT + i, xi)
        else:
            st6(D, XT + i, ZERO6)
            for x in range(m.jnt_nv[i]):
                st6(D, DST + vs + x, ZERO6)
        dai = add6(dai, crm(dvi, vJ))
        # dz is kept whatever has_f: the sweep reads it back at the children
        st6(D, DZ + i, dz)
        tangent_body(m, D, i, DV, DA, DZ, DF, FC, X0 + 10, vi, dvi, dai, dz, has_f)
    for i in range(n1 - 1, 0, -1):
        df = ld6(D, DF + i)
        fi = ld6(s.f, i)
        vs = m.jnt_dofadr[i]
        for x in range(m.jnt_nv[i]):
            dt[vs + x] = dot6(ld6(r.S, vs + x), df) + dot6(ld6(D, DST + vs + x), fi)
        l = m.body_parent[i]
        if l > 0:
            df = add6(df, crf(ld6(D, XT + i), fi))
            st6(D, DF + l, add6(ld6(D, DF + l), xforce_T(ld9(r.E, i), ld3(r.d, i), df)))
