"""The tangents of the recursive Newton-Euler algorithm: dtau/dq and dtau/du (with M = dtau/du')
for any EJCE joint, in the world frame (Carpentier and Mansard, RSS 2018, with the joints' own
derivatives added), and dtau/dt by one forward-mode sweep of the body-frame recursion.

**q and u** (``rnea_tangents``).  Every quantity in world coordinates (world axes, about the world
origin): body twists v_i, accelerations a_i (a_0 = -g), world motion subspaces S_i, rigid
inertias Y_i, composite forces F_i.  Moving coordinate c of joint j moves the subtree of j rigidly
by the twist xi = S_jc; seen from the moving subtree (the co-moving derivative d' = d - xi x) every
body of the subtree has the same twist and acceleration changes

    dV = v_p x xi + dvJ,       da'_i = dA + dV x v_i,
    dA = a_p x xi + (dS u' + dcJ) + v_j x dvJ - dV x v_p          (p the parent of j)

with dvJ, dcJ, dS the joint's own derivatives (``joint_tangents``) in world coordinates; a velocity
variable c of joint j changes them by dV = xi, dA = dcJ/du_c + (v_j + v_p) x xi.  The body force
f_i = Y_i a_i + v_i x* Y_i v_i - f_ext,i then changes by Y_i dA + B_i dV - E_i w(xi) with

    B_i = -(Y_i [v_i x] + (Y_i [v_i x])^T) - [[n^, F^], [F^, 0]] = [[B11, 0], [-2 F^, 0]]
          for Y_i v_i = [n; F]  (``_variation``: 12 numbers a body),

E_i w the co-moving change of a world-fixed external wrench ([moment about the body origin p;
force] = [n; F]: E w = [n^ w + p^ (F^ w); F^ w]), and the composite force of the subtree of k by
Yc_k dA + Bc_k dV - Ec_k w with the subtree sums Yc, Bc, Ec.  Since tau_k = S_k . F_k and a rigid
motion changes neither S_k . F_k of a moved joint nor S_k of an unmoved one:

    dtau_k/dq_jc = S_k . (Yc_k dA + Bc_k dV - Ec_k w)  (+ dS_kc . F_j for k = j)    k in subtree(j)
    dtau_k/dq_jc = S_k . (Yc_j dA + Bc_j dV - Ec_j w + xi x* F_j)                    k an ancestor of j

the first as (Yc_k S_k) . dA + (Bc_k^T S_k) . dV - (Ec_k^T S_k) . w: the sums of each body are
met once in each direction, O(N d) in all; M = S_k . Yc_k S_jc on the same pairs.

**t** (``time_direction``, rheonomic models).  In each body's outboard frame C_i, with the
joint's X_i, S_i, vJ_i, cJ_i:

    dv_i = X_i dv_p + [dv_i^J]                 da_i = X_i da_p + dv_i x vJ_i + [da_i^J]
    df_i = I_i da_i + dv_i x* I_i v_i + v_i x* I_i dv_i + [dz_i x* f_ext,i]
    dtau_i = S_i^T df_i + [dS_i^T f_i],        df_p += X_i^T df_i + [X_i^T (xi x* f_i)]

the bracketed terms at the driven joints, which move C_i by xi = R^T sigma:
dv_i^J = (X_i v_p) x xi + dvJ_i, da_i^J = (X_i a_p) x xi + dS_i u'_i + dcJ_i + v_i x dvJ_i (dz: the
displacement of each frame, for the world-fixed external wrenches).

The rows of the sweeps' scratch D (n1 bodies, nv velocity variables; ``d_rows``):

    0 dv, n1 da, 2 n1 df, 3 n1 dz, 4 n1 the external wrenches in C axes, 5 n1 xi of each driven
    joint (those of the time sweep), 6 n1 dS (nv rows), X0 = 6 n1 + nv the joint's own terms
    (10 rows, both sweeps), X0 + 10 the momenta I_i v_i (n1 rows, the time sweep).
"""
import numpy as np

from .._jit import jit
from .joint_tangents import general_tangent, joint_tangent, no_own_terms
from .rnea import fext
from ..core.spatial import (ZERO6, add, add6, axpy6, crf, crm, cross, dot6, force_out, inertia_mul, ld3, ld6, ld9,
                            motion_out, mtv, mv, rigid_out, scale3, st6, sub, sub6, xforce_T, xmotion)


@jit
def rows(n1, nv):
    """Rows of the sweeps' scratch D (see the module)."""
    return 7 * n1 + nv + 10


@jit
def d_rows(n1, nv):
    """The first rows of D's parts: (dv, da, df, dz, wrenches, xi, dS, X0 the joint's own terms,
    the momenta), see the module."""
    return 0, n1, 2 * n1, 3 * n1, 4 * n1, 5 * n1, 6 * n1, 6 * n1 + nv, 6 * n1 + nv + 10


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
def world_rows(n1, nv):
    """Rows (of 6) of the world sweep's scratch T: v, a and F of each body, Bc (2 rows a body: B11
    and f), Ec (3 rows a body: its columns), the diagonal blocks' own terms (one row per velocity
    variable)."""
    return 8 * n1 + nv


@jit
def column_rows():
    """Rows of the world sweep's column table C (one column per velocity variable)."""
    return 42


@jit
def _variation(m, h, I, v):
    """(B11, f) of B = [[B11, 0], [-2 f^, 0]]: the change of v x* Y v + Y (dV x v) per twist change
    dV for the rigid inertia Y = (m, h, I) and twist v = [w; u] (``rnea_tangents``), with
    Y v = [n; f] and A = I w^:  B11 = -(A + A^T) - (u h^T + h u^T) + 2 (h.u) 1 - n^."""
    w = (v[0], v[1], v[2])
    u = (v[3], v[4], v[5])
    # columns of A = I w^: I (w x e_k)
    a0 = (I[1] * w[2] - I[2] * w[1], I[4] * w[2] - I[5] * w[1], I[7] * w[2] - I[8] * w[1])
    a1 = (I[2] * w[0] - I[0] * w[2], I[5] * w[0] - I[3] * w[2], I[8] * w[0] - I[6] * w[2])
    a2 = (I[0] * w[1] - I[1] * w[0], I[3] * w[1] - I[4] * w[0], I[6] * w[1] - I[7] * w[0])
    n = add(mv(I, w), cross(h, u))
    f = sub(scale3(m, u), cross(h, w))
    hu = 2.0 * (h[0] * u[0] + h[1] * u[1] + h[2] * u[2])
    b01 = -(a1[0] + a0[1]) - (u[0] * h[1] + h[0] * u[1])
    b02 = -(a2[0] + a0[2]) - (u[0] * h[2] + h[0] * u[2])
    b12 = -(a2[1] + a1[2]) - (u[1] * h[2] + h[1] * u[2])
    return ((-2.0 * (a0[0] + u[0] * h[0]) + hu, b01 + n[2], b02 - n[1],
             b01 - n[2], -2.0 * (a1[1] + u[1] * h[1]) + hu, b12 + n[0],
             b02 + n[1], b12 - n[0], -2.0 * (a2[2] + u[2] * h[2]) + hu), f)


@jit
def _bmul(T, o, x):
    """B x for B (``_variation``) in rows o, o + 1 of T: [B11 x_w; -2 f x x_w]."""
    b = ld6(T, o)
    c = ld6(T, o + 1)
    f = (c[3], c[4], c[5])
    g = cross(f, (x[0], x[1], x[2]))
    return (b[0] * x[0] + b[1] * x[1] + b[2] * x[2], b[3] * x[0] + b[4] * x[1] + b[5] * x[2],
            c[0] * x[0] + c[1] * x[1] + c[2] * x[2], -2.0 * g[0], -2.0 * g[1], -2.0 * g[2])


@jit
def _btmul(T, o, x):
    """B^T x for B in rows o, o + 1 of T: [B11^T x_w + 2 f x x_u; 0]."""
    b = ld6(T, o)
    c = ld6(T, o + 1)
    g = cross((c[3], c[4], c[5]), (x[3], x[4], x[5]))
    return (b[0] * x[0] + b[3] * x[1] + c[0] * x[2] + 2.0 * g[0],
            b[1] * x[0] + b[4] * x[1] + c[1] * x[2] + 2.0 * g[1],
            b[2] * x[0] + b[5] * x[1] + c[2] * x[2] + 2.0 * g[2], 0.0, 0.0, 0.0)


@jit
def _external(m, r, F, fb, i, T, o):
    """The columns of E (rows o .. o + 2 of T) for the world-fixed wrench [n; F] on body i, applied
    at its origin p: E w = [n^ w + p^ (F^ w); F^ w]."""
    p = add(ld3(r.oC, i), mv(ld9(r.RC, i), ld3(m.body_bo, i)))
    n = (fext(F, fb, i, 0), fext(F, fb, i, 1), fext(F, fb, i, 2))
    f = (fext(F, fb, i, 3), fext(F, fb, i, 4), fext(F, fb, i, 5))
    for e in range(3):
        w = (1.0 if e == 0 else 0.0, 1.0 if e == 1 else 0.0, 1.0 if e == 2 else 0.0)
        fw = cross(f, w)
        mo = add(cross(n, w), cross(p, fw))
        st6(T, o + e, (mo[0], mo[1], mo[2], fw[0], fw[1], fw[2]))


@jit
def _ext_dot(T, o, w):
    """E w for E's columns in rows o .. o + 2 of T."""
    return axpy6(w[2], ld6(T, o + 2), axpy6(w[1], ld6(T, o + 1), axpy6(w[0], ld6(T, o), ZERO6)))


@jit
def ldc(C, r0, k):
    """Column k of rows r0 .. r0 + 5 of C as a 6-tuple."""
    return (C[r0, k], C[r0 + 1, k], C[r0 + 2, k], C[r0 + 3, k], C[r0 + 4, k], C[r0 + 5, k])


@jit
def stc(C, r0, k, x):
    """x into column k of rows r0 .. r0 + 5 of C."""
    C[r0, k] = x[0]
    C[r0 + 1, k] = x[1]
    C[r0 + 2, k] = x[2]
    C[r0 + 3, k] = x[3]
    C[r0 + 4, k] = x[4]
    C[r0 + 5, k] = x[5]


@jit
def _lower(C, row, lo, hi, ys, bs, es, dq, dv, M):
    """Entries (row, lo .. hi - 1): a joint's row against the columns of itself and its ancestors,
    (Yc S) . dA + (Bc^T S) . dV - (Ec^T S) . w (es: zero without external wrenches), the same for
    u, and M = (Yc S) . S (B^T S has no linear part: ``_btmul``).  One loop per matrix, the column
    index unsigned: Numba then adds no negative-index wrap-around, and LLVM vectorises them."""
    for kk in range(hi - lo):
        k = np.uint64(lo + kk)
        dq[row, k] = (ys[0] * C[12, k] + ys[1] * C[13, k] + ys[2] * C[14, k] + ys[3] * C[15, k] + ys[4] * C[16, k]
                      + ys[5] * C[17, k] + bs[0] * C[6, k] + bs[1] * C[7, k] + bs[2] * C[8, k]
                      + (es[0] * C[0, k] + es[1] * C[1, k] + es[2] * C[2, k]))
    for kk in range(hi - lo):
        k = np.uint64(lo + kk)
        dv[row, k] = (ys[0] * C[18, k] + ys[1] * C[19, k] + ys[2] * C[20, k] + ys[3] * C[21, k]
                      + ys[4] * C[22, k] + ys[5] * C[23, k] + bs[0] * C[0, k] + bs[1] * C[1, k] + bs[2] * C[2, k])
    _row_dot(C, 0, row, lo, hi, ys, M)


@jit
def _row_dot(C, r0, row, lo, hi, x, A):
    """A[row, k] = x . C[r0 .. r0 + 5, k] for k in lo .. hi - 1 (unsigned k, as in ``_lower``)."""
    for kk in range(hi - lo):
        k = np.uint64(lo + kk)
        A[row, k] = (x[0] * C[r0, k] + x[1] * C[r0 + 1, k] + x[2] * C[r0 + 2, k] + x[3] * C[r0 + 3, k]
                     + x[4] * C[r0 + 4, k] + x[5] * C[r0 + 5, k])


@jit
def _zero(row, lo, hi, dq, dv, M):
    """Entries (row, lo .. hi - 1) of the three matrices zero: no joint of these columns is an
    ancestor or a descendant of the row's."""
    for kk in range(hi - lo):
        k = np.uint64(lo + kk)
        dq[row, k] = 0.0
        dv[row, k] = 0.0
        M[row, k] = 0.0


@jit
def _upper(C, row, lo, hi, sr, dq, dv, M):
    """Entries (row, lo .. hi - 1): an ancestor's row against the columns of a descendant, S . the
    change of the descendant's subtree force (C rows 24, 30, 36: q, u, M)."""
    _row_dot(C, 24, row, lo, hi, sr, dq)
    _row_dot(C, 30, row, lo, hi, sr, dv)
    _row_dot(C, 36, row, lo, hi, sr, M)


@jit
def rnea_tangents(m, r, s, D, T, C, YC, mark, q, v, a, t, qp, vp, F, fb, has_f, dq, dv, M, full):
    """dtau/dq, dtau/du and M (armature on its diagonal) at the state of the record r, after the
    forward sweep with world frames and RNEA's forces (s.f: the composite forces in C axes); see
    the module.  D: the joints' own terms (rows X0 ..); T (rows of 6: ``world_rows``), C (one
    column per velocity variable: S, dV, dA, dA/du, then the subtree force changes for q, u and
    M, 6 rows each), YC (composite inertias) and mark (one per body): the world sweep's scratch.
    Each entry is written by a loop over a run of consecutive columns (a chain's ancestors, a
    subtree's descendants), the rows of C contiguous along it."""
    n1 = m.body_parent.shape[0]
    nv = dq.shape[0]
    X0 = d_rows(n1, nv)[7]
    OV, OA, FW, BC, EC, EX = 0, n1, 2 * n1, 3 * n1, 5 * n1, 8 * n1
    grav = m.gravity
    # outward: the world quantities of each body and the changes of each column
    for i in range(1, n1):
        l = m.body_parent[i]
        R = ld9(r.RC, i)
        o = ld3(r.oC, i)
        vi = motion_out(R, o, ld6(r.vel, i))
        st6(T, OV + i, vi)
        st6(T, OA + i, motion_out(R, o, ld6(r.acc, i)))
        if l > 0:
            vl = ld6(T, OV + l)
            al = ld6(T, OA + l)
        else:
            vl = ZERO6
            al = (0.0, 0.0, 0.0, -grav[0], -grav[1], -grav[2])
        fi = ld6(s.f, i)
        st6(T, FW + i, force_out(R, o, fi))
        mass = m.body_mass[i]
        h, I = rigid_out(mass, ld3(m.body_hC, i), ld9(m.body_IC, i), R, o)
        YC[i, 0] = mass
        for k in range(3):
            YC[i, 1 + k] = h[k]
        for k in range(9):
            YC[i, 4 + k] = I[k]
        b, f = _variation(mass, h, I, vi)
        st6(T, BC + 2 * i, (b[0], b[1], b[2], b[3], b[4], b[5]))
        st6(T, BC + 2 * i + 1, (b[6], b[7], b[8], f[0], f[1], f[2]))
        if has_f:
            _external(m, r, F, fb, i, T, EC + 3 * i)
        vs = m.jnt_dofadr[i]
        nvj = m.jnt_nv[i]
        own_terms = not no_own_terms(m, i)
        for c in range(nvj):
            xi = motion_out(R, o, ld6(r.S, vs + c))
            stc(C, 0, vs + c, xi)
            if not own_terms:
                dV = crm(vl, xi)
                stc(C, 6, vs + c, dV)
                stc(C, 12, vs + c, sub6(crm(al, xi), crm(dV, vl)))
                stc(C, 18, vs + c, crm(add6(vi, vl), xi))
                st6(T, EX + vs + c, ZERO6)
                continue
            joint_tangent(m, r, s, i, c, q, v, t, qp, vp, D, X0, full)
            dvJ = motion_out(R, o, ld6(D, X0 + 1))
            own = ld6(D, X0 + 2)
            for x in range(nvj):
                own = axpy6(a[vs + x], ld6(D, X0 + 4 + x), own)
                # the diagonal block's own term dS_xc . F_i (any common axes)
                T[EX + vs + c, x] = dot6(ld6(D, X0 + 4 + x), fi)
            dV = add6(crm(vl, xi), dvJ)
            stc(C, 6, vs + c, dV)
            stc(C, 12, vs + c, add6(add6(crm(al, xi), motion_out(R, o, own)), sub6(crm(vi, dvJ), crm(dV, vl))))
            stc(C, 18, vs + c, add6(motion_out(R, o, ld6(D, X0 + 3)), crm(add6(vi, vl), xi)))
    # inward: the subtree sums; the rows of each joint against its own and its ancestors'
    # columns, and the changes of its subtree's force per column
    for i in range(n1 - 1, 0, -1):
        l = m.body_parent[i]
        vs = m.jnt_dofadr[i]
        nvj = m.jnt_nv[i]
        Ym = YC[i, 0]
        Yh = (YC[i, 1], YC[i, 2], YC[i, 3])
        YI = (YC[i, 4], YC[i, 5], YC[i, 6], YC[i, 7], YC[i, 8], YC[i, 9], YC[i, 10], YC[i, 11], YC[i, 12])
        B0 = BC + 2 * i
        for x in range(nvj):
            Sx = ldc(C, 0, vs + x)
            ys = inertia_mul(Ym, Yh, YI, Sx)
            bs = _btmul(T, B0, Sx)
            es = ZERO6
            if has_f:
                es = (-dot6(ld6(T, EC + 3 * i), Sx), -dot6(ld6(T, EC + 3 * i + 1), Sx),
                      -dot6(ld6(T, EC + 3 * i + 2), Sx), 0.0, 0.0, 0.0)
            row = vs + x
            # the columns of i and of its ancestors, in runs of consecutive indices (descending),
            # the others before vs + nvj zero
            lo = vs
            hi = vs + nvj
            j = l
            while j > 0:
                nj = m.jnt_nv[j]
                if nj > 0:
                    if m.jnt_dofadr[j] + nj != lo:
                        _lower(C, row, lo, hi, ys, bs, es, dq, dv, M)
                        _zero(row, m.jnt_dofadr[j] + nj, lo, dq, dv, M)
                        hi = m.jnt_dofadr[j] + nj
                    lo = m.jnt_dofadr[j]
                j = m.body_parent[j]
            _lower(C, row, lo, hi, ys, bs, es, dq, dv, M)
            if lo > 0:
                _zero(row, 0, lo, dq, dv, M)
            for c in range(nvj):
                dq[row, vs + c] += T[EX + vs + c, x]
        if l > 0:
            # the columns of i against its ancestors' rows: the changes of its subtree's force
            fw = ld6(T, FW + i)
            for col in range(vs, vs + nvj):
                xi = ldc(C, 0, col)
                fq = add6(add6(inertia_mul(Ym, Yh, YI, ldc(C, 12, col)), _bmul(T, B0, ldc(C, 6, col))), crf(xi, fw))
                if has_f:
                    fq = sub6(fq, _ext_dot(T, EC + 3 * i, (xi[0], xi[1], xi[2])))
                stc(C, 24, col, fq)
                stc(C, 30, col, add6(inertia_mul(Ym, Yh, YI, ldc(C, 18, col)), _bmul(T, B0, xi)))
                stc(C, 36, col, inertia_mul(Ym, Yh, YI, xi))
            for k in range(13):
                YC[l, k] += YC[i, k]
            for x in range(2):
                st6(T, BC + 2 * l + x, add6(ld6(T, BC + 2 * l + x), ld6(T, B0 + x)))
            if has_f:
                for x in range(3):
                    st6(T, EC + 3 * l + x, add6(ld6(T, EC + 3 * l + x), ld6(T, EC + 3 * i + x)))
    # the rows of each joint against the columns of its strict descendants, in runs (ascending),
    # the other columns after its own zero
    for l in range(1, n1):
        nl = m.jnt_nv[l]
        if nl == 0:
            continue
        mark[l] = 1.0
        done = m.jnt_dofadr[l] + nl
        lo = done
        hi = done
        for k in range(l + 1, n1 + 1):
            if k < n1:
                p = m.body_parent[k]
                mark[k] = mark[p] if p >= l else 0.0
                if mark[k] == 0.0 or m.jnt_nv[k] == 0:
                    continue
                if m.jnt_dofadr[k] == hi:
                    hi += m.jnt_nv[k]
                    continue
            for x in range(nl):
                row = m.jnt_dofadr[l] + x
                if lo > done:
                    _zero(row, done, lo, dq, dv, M)
                if hi > lo:
                    _upper(C, row, lo, hi, ldc(C, 0, row), dq, dv, M)
            done = hi
            if k < n1:
                lo = m.jnt_dofadr[k]
                hi = lo + m.jnt_nv[k]
        for x in range(nl):
            if nv > done:
                _zero(m.jnt_dofadr[l] + x, done, nv, dq, dv, M)
    for k in range(nv):
        M[k, k] += m.dof_armature[k]


@jit
def time_direction(m, r, s, D, JR, q, v, a, t, qp, vp, F, fb, has_f, dt, full):
    """dtau/dt of a rheonomic model: every driven joint (JR[i] != 0) moves with time."""
    n1 = m.body_parent.shape[0]
    nv = dt.shape[0]
    DV, DA, DF, DZ, FC, XT, DST, X0, IV = d_rows(n1, nv)
    for i in range(1, n1):
        st6(D, IV + i, inertia_mul(m.body_mass[i], ld3(m.body_hC, i), ld9(m.body_IC, i), ld6(r.vel, i)))
        if has_f:
            # the body's wrench in C axes (moment about the body origin, force)
            R = ld9(r.RC, i)
            st6(D, FC + i, mtv(R, (fext(F, fb, i, 0), fext(F, fb, i, 1), fext(F, fb, i, 2)))
                + mtv(R, (fext(F, fb, i, 3), fext(F, fb, i, 4), fext(F, fb, i, 5))))
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
            general_tangent(m, r, s, i, np.int64(-1), q, v, t, qp, vp, D, X0, full)
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
        tangent_body(m, D, i, DV, DA, DZ, DF, FC, IV, vi, dvi, dai, dz, has_f)
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
