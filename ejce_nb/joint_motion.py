"""The joint as the dynamics algorithms see it: S, the joint twist and c_J in successor coordinates.

Every body i is worked on in its outboard joint frame C_i (origin o_C, axes R_P R), the frame
Featherstone calls the successor frame and Pinocchio the joint frame.  From the EJCE terms of
joint i (``ejce``: relative pose R, r of C in P; J, sigma, b in P axes; relative twist
[w_rel; v_rel] = J u + sigma) EJCE.md section 2 gives

    S_i  = [R^T J_w; R^T J_v]                            motion subspace (6 x nv_i, C axes, at o_C)
    vJ_i = [R^T w_rel; R^T v_rel] = S_i u + [R^T sigma_w; R^T sigma_v]
    cJ_i = [R^T b_w; R^T (b_v - w_rel x v_rel)]          (d/dt of vJ_i's C coordinates) - S_i u'

and the Pluecker transform from the parent's frame C_p to C_i,

    X_i = [E 0; -E d^ E],   E = (Xt_i R)^T,   d = pt_i + Xt_i r

where (Xt_i, pt_i) is the constant placement of P_i in C_p (Xt = E_c,p^T E_p,
pt = E_c,p^T (c_p - c_c,p)).  Then

    v_i = X_i v_p + vJ_i                    a_i = X_i a_p + S_i u' + cJ_i + v_i x vJ_i

for every joint, scleronomic or not: sigma (explicit time dependence) enters through vJ, and its
time derivatives through the bias b inside cJ.  This module also holds the per-model tables
(inertias moved into C), the per-chunk workspace and the input checks shared by rnea, crba, aba
and energy.
"""
import weakref

import numpy as np

from . import _inputs
from ._jit import jit
from .ejce import fast_terms, has_fast_path, joint_eval_generic
from .errors import SingularJointError
from .spatial import mmT
from .workspace import chunked, n_chunks

# A joint's Jacobian counts as rank deficient when one of its normalised columns lies within this
# distance of the span of the others (a 1e-10 rad neighbourhood of a gimbal lock).
RANK_TOL = 1e-10
# A column of S this short counts as zero (the joint does not move along that coordinate).
ZERO_COLUMN = 1e-12
# A pivot of D = S^T I^A S at or below this fraction of the subtree's inertia scale means the
# subtree offers no inertia along the joint's motion (massless subtree).
PIVOT_TOL = 1e-11

# status codes of the kernels (second entry of a sample's status; the first is the joint)
OK = 0
RANK_LOSS = 1
ARTICULATED_SINGULAR = 2
MASS_MATRIX_SINGULAR = 3


# --------------------------------------------------------------------------- tables per model
_TABLES = weakref.WeakKeyDictionary()


def tables(model):
    """The read-only tables of the dynamics kernels, computed once per model."""
    tab = _TABLES.get(model)
    if tab is not None:
        return tab
    n1 = model.nbodies + 1
    Ec, cc = model.joint_C_rot, model.joint_C_pos
    Ep, cp = model.joint_P_rot, model.joint_P_pos
    par = model.parent
    Xt = np.zeros((n1, 3, 3))
    pt = np.zeros((n1, 3))
    Xt[0] = np.eye(3)
    mass = np.array(model.body_mass, dtype=np.float64)
    hC = np.zeros((n1, 3))
    Ib = np.zeros((n1, 3, 3))
    bo = np.zeros((n1, 3))
    cC = np.zeros((n1, 3))
    iscale = np.zeros(n1)
    for i in range(1, n1):
        l = par[i]
        # the world row's C frame is the world frame itself
        Ecl = Ec[l] if l > 0 else np.eye(3)
        ccl = cc[l] if l > 0 else np.zeros(3)
        Xt[i] = Ecl.T @ Ep[i]
        pt[i] = Ecl.T @ (cp[i] - ccl)
        m = mass[i]
        c = Ec[i].T @ (model.body_com[i] - cc[i])
        cC[i] = c
        hC[i] = m * c
        Ib[i] = Ec[i].T @ model.body_inertia[i] @ Ec[i] + m * (np.dot(c, c) * np.eye(3) - np.outer(c, c))
        bo[i] = -(Ec[i].T @ cc[i])
        # the largest diagonal entry bounds every entry of a positive semi-definite inertia
        iscale[i] = max(m, float(np.max(np.diag(Ib[i]))))
    grav = np.array(model.gravity, dtype=np.float64)
    tab = tuple(model.kernel_args()[:8]) + (Xt, pt, mass, hC, Ib, bo, cC, iscale, grav)
    for a in tab:
        if isinstance(a, np.ndarray) and a.flags.writeable:
            a.flags.writeable = False
    _TABLES[model] = tab
    return tab


# --------------------------------------------------------------------------- workspace
class DynWork:
    """Per-chunk arrays of the dynamics sweeps; the arrays an algorithm does not need are
    allocated tiny.  Kernels take them whole and index them (row views handed to calls would
    cost reference counting in every body step)."""

    def __init__(self, model, nchunk=1, articulated=False, composite=False):
        n1, nv = model.nbodies + 1, max(model.nv, 1)
        big = articulated or composite
        self.arrays = (
            chunked(nchunk, n1, 3, 3),      # 0 Rrel   relative pose of C in P (generic joints)
            chunked(nchunk, n1, 3),         # 1 rrel
            chunked(nchunk, 6, nv),         # 2 J      EJCE Jacobian columns, P axes
            chunked(nchunk, n1, 6),         # 3 sigma
            chunked(nchunk, n1, 6),         # 4 bias
            chunked(nchunk, n1, 6),         # 5 vrel   relative twist J u + sigma, P axes
            chunked(nchunk, n1, 9),         # 6 E      rotation of X_i (parent C coordinates -> C_i), row-major
            chunked(nchunk, n1, 3),         # 7 d      origin of C_i in the parent's C frame
            chunked(nchunk, nv, 6),         # 8 ST     S columns, one row per velocity variable
            chunked(nchunk, n1, 6),         # 9 vJ     joint twist, C axes
            chunked(nchunk, n1, 6),         # 10 c     velocity-product acceleration cJ + v x vJ
            chunked(nchunk, n1, 6),         # 11 vel   body twist
            chunked(nchunk, n1, 6),         # 12 acc   body acceleration (minus gravity)
            chunked(nchunk, n1, 6),         # 13 f     body force (aba: bias force p^A)
            chunked(nchunk, n1, 9),         # 14 RC    world axes of C_i, row-major
            chunked(nchunk, n1, 3),         # 15 oC    world origin of C_i
            chunked(nchunk, n1 if big else 1, 21),        # 16 IA  articulated / composite inertia, packed
            chunked(nchunk, nv if articulated else 1, 6),  # 17 U   I^A S, one row per velocity
            chunked(nchunk, nv if articulated else 1, 6),  # 18 Dinv rows of D^-1
            chunked(nchunk, nv if articulated else 1),     # 19 uu  tau - S^T p^A
            chunked(nchunk, n1 if articulated else 1),     # 20 sc  inertia scale per subtree
            chunked(nchunk, 2, 6, 6),       # 21 scratch
        )


# --------------------------------------------------------------------------- tuple algebra
# 6-vectors and 3x3 matrices (row-major 9-tuples) live in registers as tuples; arrays are read
# and written by index.
ZERO6 = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
EYE9 = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)


@jit
def ld3(A, i):
    return (A[i, 0], A[i, 1], A[i, 2])


@jit
def ld6(A, i):
    return (A[i, 0], A[i, 1], A[i, 2], A[i, 3], A[i, 4], A[i, 5])


@jit
def ld9(A, i):
    return (A[i, 0], A[i, 1], A[i, 2], A[i, 3], A[i, 4], A[i, 5], A[i, 6], A[i, 7], A[i, 8])


@jit
def ld33(A, i):
    return (A[i, 0, 0], A[i, 0, 1], A[i, 0, 2], A[i, 1, 0], A[i, 1, 1], A[i, 1, 2],
            A[i, 2, 0], A[i, 2, 1], A[i, 2, 2])


@jit
def st3(A, i, x):
    A[i, 0] = x[0]
    A[i, 1] = x[1]
    A[i, 2] = x[2]


@jit
def st6(A, i, x):
    A[i, 0] = x[0]
    A[i, 1] = x[1]
    A[i, 2] = x[2]
    A[i, 3] = x[3]
    A[i, 4] = x[4]
    A[i, 5] = x[5]


@jit
def st9(A, i, x):
    for k in range(9):
        A[i, k] = x[k]


@jit
def add6(a, b):
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3], a[4] + b[4], a[5] + b[5])


@jit
def sub6(a, b):
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2], a[3] - b[3], a[4] - b[4], a[5] - b[5])


@jit
def dot6(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3] + a[4] * b[4] + a[5] * b[5]


@jit
def xmotion(E, d, m):
    """X m for X = (E, d): [E w; E (v - d x w)]."""
    w0 = m[0]
    w1 = m[1]
    w2 = m[2]
    u0 = m[3] - (d[1] * w2 - d[2] * w1)
    u1 = m[4] - (d[2] * w0 - d[0] * w2)
    u2 = m[5] - (d[0] * w1 - d[1] * w0)
    return (E[0] * w0 + E[1] * w1 + E[2] * w2,
            E[3] * w0 + E[4] * w1 + E[5] * w2,
            E[6] * w0 + E[7] * w1 + E[8] * w2,
            E[0] * u0 + E[1] * u1 + E[2] * u2,
            E[3] * u0 + E[4] * u1 + E[5] * u2,
            E[6] * u0 + E[7] * u1 + E[8] * u2)


@jit
def xforce_T(E, d, f):
    """X^T f (a force in C_i to the parent's frame): F = E^T f_F, n = E^T f_n + d x F."""
    F0 = E[0] * f[3] + E[3] * f[4] + E[6] * f[5]
    F1 = E[1] * f[3] + E[4] * f[4] + E[7] * f[5]
    F2 = E[2] * f[3] + E[5] * f[4] + E[8] * f[5]
    return (E[0] * f[0] + E[3] * f[1] + E[6] * f[2] + d[1] * F2 - d[2] * F1,
            E[1] * f[0] + E[4] * f[1] + E[7] * f[2] + d[2] * F0 - d[0] * F2,
            E[2] * f[0] + E[5] * f[1] + E[8] * f[2] + d[0] * F1 - d[1] * F0,
            F0, F1, F2)


@jit
def crm(v, m):
    """Motion cross product v x m = [w x mw; w x mv + vv x mw]."""
    return (v[1] * m[2] - v[2] * m[1],
            v[2] * m[0] - v[0] * m[2],
            v[0] * m[1] - v[1] * m[0],
            v[1] * m[5] - v[2] * m[4] + v[4] * m[2] - v[5] * m[1],
            v[2] * m[3] - v[0] * m[5] + v[5] * m[0] - v[3] * m[2],
            v[0] * m[4] - v[1] * m[3] + v[3] * m[1] - v[4] * m[0])


@jit
def crf(v, f):
    """Force cross product v x* f = [w x n + vv x F; w x F]."""
    return (v[1] * f[2] - v[2] * f[1] + v[4] * f[5] - v[5] * f[4],
            v[2] * f[0] - v[0] * f[2] + v[5] * f[3] - v[3] * f[5],
            v[0] * f[1] - v[1] * f[0] + v[3] * f[4] - v[4] * f[3],
            v[1] * f[5] - v[2] * f[4],
            v[2] * f[3] - v[0] * f[5],
            v[0] * f[4] - v[1] * f[3])


@jit
def inertia_mul(m, h, I, x):
    """I x for the rigid inertia [[I, h^], [-h^, m 1]] about o_C: [I w + h x v; m v - h x w]."""
    return (I[0] * x[0] + I[1] * x[1] + I[2] * x[2] + h[1] * x[5] - h[2] * x[4],
            I[3] * x[0] + I[4] * x[1] + I[5] * x[2] + h[2] * x[3] - h[0] * x[5],
            I[6] * x[0] + I[7] * x[1] + I[8] * x[2] + h[0] * x[4] - h[1] * x[3],
            m * x[3] - (h[1] * x[2] - h[2] * x[1]),
            m * x[4] - (h[2] * x[0] - h[0] * x[2]),
            m * x[5] - (h[0] * x[1] - h[1] * x[0]))


@jit
def external_wrench_in_C(F, fb, i, l, Ei, RC, bo):
    """The world wrench F[fb, i] ([moment about the body origin; force], world axes) on body i,
    in C_i: axes turned by C_i's world axes (recorded in RC[i] for the children, from the
    parent's RC and E_i), moment moved from the body origin (at bo[i] in C_i)."""
    R = mmT(EYE9 if l == 0 else ld9(RC, l), Ei)
    st9(RC, i, R)
    b = ld3(bo, i)
    fw = (F[fb, i, 0], F[fb, i, 1], F[fb, i, 2], F[fb, i, 3], F[fb, i, 4], F[fb, i, 5])
    f0 = R[0] * fw[3] + R[3] * fw[4] + R[6] * fw[5]
    f1 = R[1] * fw[3] + R[4] * fw[4] + R[7] * fw[5]
    f2 = R[2] * fw[3] + R[5] * fw[4] + R[8] * fw[5]
    return (R[0] * fw[0] + R[3] * fw[1] + R[6] * fw[2] + b[1] * f2 - b[2] * f1,
            R[1] * fw[0] + R[4] * fw[1] + R[7] * fw[2] + b[2] * f0 - b[0] * f2,
            R[2] * fw[0] + R[5] * fw[1] + R[8] * fw[2] + b[0] * f1 - b[1] * f0,
            f0, f1, f2)


# --------------------------------------------------------------------------- the joints
@jit
def joint_pass(jtype, q_start, nq_joint, v_start, nv_joint, adr, params, Xt, pt, Q, b, V, bv, t,
               generic, check_rank, Rrel, rrel, J, sigma, bias, vrel, E, d, ST, vJ, cJ, W):
    """The joints as the algorithms see them, for every body of state (Q[b], V[bv], t): X_i as
    E[i] (row-major) and d[i], S_i into rows v_start[i].. of ST, vJ[i] and cJ[i], all in C_i.

    Joints with a hand-written path (ejce.fast_terms) are evaluated from scalars, the others by
    the generic EJCE evaluation into the workspace rows.  With ``check_rank``, returns the first
    joint whose S loses rank (-1: none).  One call per state: the per-body step calls nothing
    that takes arrays (each such call costs reference counting) unless the joint needs it."""
    bad = -1
    for i in range(1, jtype.shape[0]):
        jt = jtype[i]
        vs = v_start[i]
        nvj = nv_joint[i]
        a0 = adr[i]
        if not generic and has_fast_path(jt):
            qs = q_start[i]
            u = V[bv, vs] if nvj > 0 else 0.0
            R, r, Sp = fast_terms(jt, params[a0], params[a0 + 1], params[a0 + 2],
                                  Q[b, qs] if nq_joint[i] > 0 else 0.0, u)
            tw = (Sp[0] * u, Sp[1] * u, Sp[2] * u, Sp[3] * u, Sp[4] * u, Sp[5] * u)
            bb = ZERO6
            if nvj > 0:
                for a in range(3):
                    ST[vs, a] = R[a] * Sp[0] + R[3 + a] * Sp[1] + R[6 + a] * Sp[2]
                    ST[vs, 3 + a] = R[a] * Sp[3] + R[3 + a] * Sp[4] + R[6 + a] * Sp[5]
        else:
            joint_eval_generic(jt, params, a0, Q[b], V[bv], t, q_start[i], nq_joint[i], vs, nvj, i,
                               Rrel, rrel, J, sigma, bias, vrel)
            R = (Rrel[i, 0, 0], Rrel[i, 0, 1], Rrel[i, 0, 2], Rrel[i, 1, 0], Rrel[i, 1, 1],
                 Rrel[i, 1, 2], Rrel[i, 2, 0], Rrel[i, 2, 1], Rrel[i, 2, 2])
            r = (rrel[i, 0], rrel[i, 1], rrel[i, 2])
            tw = (vrel[i, 0], vrel[i, 1], vrel[i, 2], vrel[i, 3], vrel[i, 4], vrel[i, 5])
            bb = (bias[i, 0], bias[i, 1], bias[i, 2], bias[i, 3], bias[i, 4], bias[i, 5])
            for k in range(vs, vs + nvj):
                for a in range(3):
                    ST[k, a] = R[a] * J[0, k] + R[3 + a] * J[1, k] + R[6 + a] * J[2, k]
                    ST[k, 3 + a] = R[a] * J[3, k] + R[3 + a] * J[4, k] + R[6 + a] * J[5, k]
        if check_rank and bad < 0 and nvj > 0:
            if nvj == 1:
                n2 = (ST[vs, 0] * ST[vs, 0] + ST[vs, 1] * ST[vs, 1] + ST[vs, 2] * ST[vs, 2]
                      + ST[vs, 3] * ST[vs, 3] + ST[vs, 4] * ST[vs, 4] + ST[vs, 5] * ST[vs, 5])
                if not n2 > ZERO_COLUMN * ZERO_COLUMN:
                    bad = i
            elif not subspace_full_rank(ST, vs, nvj, W):
                bad = i
        X = (Xt[i, 0, 0], Xt[i, 0, 1], Xt[i, 0, 2], Xt[i, 1, 0], Xt[i, 1, 1], Xt[i, 1, 2],
             Xt[i, 2, 0], Xt[i, 2, 1], Xt[i, 2, 2])
        # E = (Xt R)^T
        E[i, 0] = X[0] * R[0] + X[1] * R[3] + X[2] * R[6]
        E[i, 1] = X[3] * R[0] + X[4] * R[3] + X[5] * R[6]
        E[i, 2] = X[6] * R[0] + X[7] * R[3] + X[8] * R[6]
        E[i, 3] = X[0] * R[1] + X[1] * R[4] + X[2] * R[7]
        E[i, 4] = X[3] * R[1] + X[4] * R[4] + X[5] * R[7]
        E[i, 5] = X[6] * R[1] + X[7] * R[4] + X[8] * R[7]
        E[i, 6] = X[0] * R[2] + X[1] * R[5] + X[2] * R[8]
        E[i, 7] = X[3] * R[2] + X[4] * R[5] + X[5] * R[8]
        E[i, 8] = X[6] * R[2] + X[7] * R[5] + X[8] * R[8]
        d[i, 0] = pt[i, 0] + X[0] * r[0] + X[1] * r[1] + X[2] * r[2]
        d[i, 1] = pt[i, 1] + X[3] * r[0] + X[4] * r[1] + X[5] * r[2]
        d[i, 2] = pt[i, 2] + X[6] * r[0] + X[7] * r[1] + X[8] * r[2]
        # b_v - w_rel x v_rel: the classical relative acceleration made spatial
        x0 = bb[3] - (tw[1] * tw[5] - tw[2] * tw[4])
        x1 = bb[4] - (tw[2] * tw[3] - tw[0] * tw[5])
        x2 = bb[5] - (tw[0] * tw[4] - tw[1] * tw[3])
        for a in range(3):
            vJ[i, a] = R[a] * tw[0] + R[3 + a] * tw[1] + R[6 + a] * tw[2]
            vJ[i, 3 + a] = R[a] * tw[3] + R[3 + a] * tw[4] + R[6 + a] * tw[5]
            cJ[i, a] = R[a] * bb[0] + R[3 + a] * bb[1] + R[6 + a] * bb[2]
            cJ[i, 3 + a] = R[a] * x0 + R[3 + a] * x1 + R[6 + a] * x2
    return bad


# --------------------------------------------------------------------------- 6 x 6 inertias
# Articulated and composite inertias are symmetric: they are kept packed, the upper triangle row
# by row in 21 entries (row x starts at 6x - x(x-1)/2), and handled as tuples.
@jit
def ld21(A, i):
    return (A[i, 0], A[i, 1], A[i, 2], A[i, 3], A[i, 4], A[i, 5], A[i, 6], A[i, 7], A[i, 8], A[i, 9],
            A[i, 10], A[i, 11], A[i, 12], A[i, 13], A[i, 14], A[i, 15], A[i, 16], A[i, 17], A[i, 18],
            A[i, 19], A[i, 20])


@jit
def st21(A, i, x):
    for k in range(21):
        A[i, k] = x[k]


@jit
def add21(A, i, x):
    for k in range(21):
        A[i, k] += x[k]


@jit
def rigid21(m, h, I):
    """The rigid inertia [[I, h^], [-h^, m 1]] (about o_C), packed."""
    return (I[0], I[1], I[2], 0.0, -h[2], h[1],
            I[4], I[5], h[2], 0.0, -h[0],
            I[8], -h[1], h[0], 0.0,
            m, 0.0, 0.0,
            m, 0.0,
            m)


@jit
def sym_mul(A, x):
    """A x for a packed symmetric A."""
    return (A[0] * x[0] + A[1] * x[1] + A[2] * x[2] + A[3] * x[3] + A[4] * x[4] + A[5] * x[5],
            A[1] * x[0] + A[6] * x[1] + A[7] * x[2] + A[8] * x[3] + A[9] * x[4] + A[10] * x[5],
            A[2] * x[0] + A[7] * x[1] + A[11] * x[2] + A[12] * x[3] + A[13] * x[4] + A[14] * x[5],
            A[3] * x[0] + A[8] * x[1] + A[12] * x[2] + A[15] * x[3] + A[16] * x[4] + A[17] * x[5],
            A[4] * x[0] + A[9] * x[1] + A[13] * x[2] + A[16] * x[3] + A[18] * x[4] + A[19] * x[5],
            A[5] * x[0] + A[10] * x[1] + A[14] * x[2] + A[17] * x[3] + A[19] * x[4] + A[20] * x[5])


@jit
def sym_sub_outer(A, a, b):
    """A - a b^T on the upper triangle (for sums of such terms that are symmetric)."""
    return (A[0] - a[0] * b[0], A[1] - a[0] * b[1], A[2] - a[0] * b[2], A[3] - a[0] * b[3],
            A[4] - a[0] * b[4], A[5] - a[0] * b[5],
            A[6] - a[1] * b[1], A[7] - a[1] * b[2], A[8] - a[1] * b[3], A[9] - a[1] * b[4],
            A[10] - a[1] * b[5],
            A[11] - a[2] * b[2], A[12] - a[2] * b[3], A[13] - a[2] * b[4], A[14] - a[2] * b[5],
            A[15] - a[3] * b[3], A[16] - a[3] * b[4], A[17] - a[3] * b[5],
            A[18] - a[4] * b[4], A[19] - a[4] * b[5],
            A[20] - a[5] * b[5])


@jit
def sym_to_parent(E, d, A):
    """X^T A X for a packed symmetric inertia A in C_i and X = (E, d): the inertia in the parent's
    frame.  Rotating the blocks first (A' = E^T A_ww E, B' = E^T A_wv E, C' = E^T A_vv E) leaves
    the shift by d as cross products: [[A' + d^ B'^T - K d^, K], [K^T, C']], K = B' + d^ C'."""
    # blocks rotated into the parent's axes: E^T A_ww E (a), E^T A_wv E (b), E^T A_vv E (c)
    p00, p01, p02 = (A[0] * E[0] + A[1] * E[3] + A[2] * E[6],
        A[0] * E[1] + A[1] * E[4] + A[2] * E[7],
        A[0] * E[2] + A[1] * E[5] + A[2] * E[8])
    p10, p11, p12 = (A[1] * E[0] + A[6] * E[3] + A[7] * E[6],
        A[1] * E[1] + A[6] * E[4] + A[7] * E[7],
        A[1] * E[2] + A[6] * E[5] + A[7] * E[8])
    p20, p21, p22 = (A[2] * E[0] + A[7] * E[3] + A[11] * E[6],
        A[2] * E[1] + A[7] * E[4] + A[11] * E[7],
        A[2] * E[2] + A[7] * E[5] + A[11] * E[8])
    a00, a01, a02 = (E[0] * p00 + E[3] * p10 + E[6] * p20,
        E[0] * p01 + E[3] * p11 + E[6] * p21,
        E[0] * p02 + E[3] * p12 + E[6] * p22)
    a11, a12 = (E[1] * p01 + E[4] * p11 + E[7] * p21,
        E[1] * p02 + E[4] * p12 + E[7] * p22)
    a22 = E[2] * p02 + E[5] * p12 + E[8] * p22
    p00, p01, p02 = (A[3] * E[0] + A[4] * E[3] + A[5] * E[6],
        A[3] * E[1] + A[4] * E[4] + A[5] * E[7],
        A[3] * E[2] + A[4] * E[5] + A[5] * E[8])
    p10, p11, p12 = (A[8] * E[0] + A[9] * E[3] + A[10] * E[6],
        A[8] * E[1] + A[9] * E[4] + A[10] * E[7],
        A[8] * E[2] + A[9] * E[5] + A[10] * E[8])
    p20, p21, p22 = (A[12] * E[0] + A[13] * E[3] + A[14] * E[6],
        A[12] * E[1] + A[13] * E[4] + A[14] * E[7],
        A[12] * E[2] + A[13] * E[5] + A[14] * E[8])
    b00, b01, b02 = (E[0] * p00 + E[3] * p10 + E[6] * p20,
        E[0] * p01 + E[3] * p11 + E[6] * p21,
        E[0] * p02 + E[3] * p12 + E[6] * p22)
    b10, b11, b12 = (E[1] * p00 + E[4] * p10 + E[7] * p20,
        E[1] * p01 + E[4] * p11 + E[7] * p21,
        E[1] * p02 + E[4] * p12 + E[7] * p22)
    b20, b21, b22 = (E[2] * p00 + E[5] * p10 + E[8] * p20,
        E[2] * p01 + E[5] * p11 + E[8] * p21,
        E[2] * p02 + E[5] * p12 + E[8] * p22)
    p00, p01, p02 = (A[15] * E[0] + A[16] * E[3] + A[17] * E[6],
        A[15] * E[1] + A[16] * E[4] + A[17] * E[7],
        A[15] * E[2] + A[16] * E[5] + A[17] * E[8])
    p10, p11, p12 = (A[16] * E[0] + A[18] * E[3] + A[19] * E[6],
        A[16] * E[1] + A[18] * E[4] + A[19] * E[7],
        A[16] * E[2] + A[18] * E[5] + A[19] * E[8])
    p20, p21, p22 = (A[17] * E[0] + A[19] * E[3] + A[20] * E[6],
        A[17] * E[1] + A[19] * E[4] + A[20] * E[7],
        A[17] * E[2] + A[19] * E[5] + A[20] * E[8])
    c00, c01, c02 = (E[0] * p00 + E[3] * p10 + E[6] * p20,
        E[0] * p01 + E[3] * p11 + E[6] * p21,
        E[0] * p02 + E[3] * p12 + E[6] * p22)
    c11, c12 = (E[1] * p01 + E[4] * p11 + E[7] * p21,
        E[1] * p02 + E[4] * p12 + E[7] * p22)
    c22 = E[2] * p02 + E[5] * p12 + E[8] * p22
    d0 = d[0]
    d1 = d[1]
    d2 = d[2]
    # K = B' + d^ C'
    k00 = b00 + d1 * c02 - d2 * c01
    k10 = b10 + d2 * c00 - d0 * c02
    k20 = b20 + d0 * c01 - d1 * c00
    k01 = b01 + d1 * c12 - d2 * c11
    k11 = b11 + d2 * c01 - d0 * c12
    k21 = b21 + d0 * c11 - d1 * c01
    k02 = b02 + d1 * c22 - d2 * c12
    k12 = b12 + d2 * c02 - d0 * c22
    k22 = b22 + d0 * c12 - d1 * c02
    # A' + d^ B'^T - K d^: entry (x, y) adds (d x row y of B')_x + (d x row x of K)_y
    t00 = a00 + (d1 * b02 - d2 * b01) + (d1 * k02 - d2 * k01)
    t01 = a01 + (d1 * b12 - d2 * b11) + (d2 * k00 - d0 * k02)
    t02 = a02 + (d1 * b22 - d2 * b21) + (d0 * k01 - d1 * k00)
    t11 = a11 + (d2 * b10 - d0 * b12) + (d2 * k10 - d0 * k12)
    t12 = a12 + (d2 * b20 - d0 * b22) + (d0 * k11 - d1 * k10)
    t22 = a22 + (d0 * b21 - d1 * b20) + (d0 * k21 - d1 * k20)
    return (t00, t01, t02, k00, k01, k02, t11, t12, k10, k11, k12,
            t22, k20, k21, k22, c00, c01, c02, c11, c12, c22)



# --------------------------------------------------------------------------- singular joints
@jit
def subspace_full_rank(ST, vs, nvj, W):
    """False when a column of S_i is (nearly) zero or in the span of the others: modified
    Gram-Schmidt, twice, on the normalised columns (W[0] is 6 x 6 scratch)."""
    for k in range(nvj):
        s = 0.0
        for x in range(6):
            s += ST[vs + k, x] * ST[vs + k, x]
        n = np.sqrt(s)
        if not n > ZERO_COLUMN:
            return False
        if nvj == 1:
            return True
        for x in range(6):
            W[0, k, x] = ST[vs + k, x] / n
        for _ in range(2):
            for j in range(k):
                p = 0.0
                for x in range(6):
                    p += W[0, j, x] * W[0, k, x]
                for x in range(6):
                    W[0, k, x] -= p * W[0, j, x]
        s = 0.0
        for x in range(6):
            s += W[0, k, x] * W[0, k, x]
        n = np.sqrt(s)
        if not n > RANK_TOL:
            return False
        for x in range(6):
            W[0, k, x] /= n
    return True


@jit
def spd_inverse(W, n, ST, vs, ref, Dinv):
    """D^-1 of D = W[0][:n, :n] (n <= 6, symmetric) into rows vs.. of Dinv, by Cholesky (L in
    W[1]; W[0] is overwritten).  False when a pivot is not clearly positive against the inertia
    scale ``ref`` of the subtree (times |S_k|^2, the pivot's own units)."""
    for j in range(n):
        s = W[0, j, j]
        for k in range(j):
            s -= W[1, j, k] * W[1, j, k]
        nrm = 0.0
        for x in range(6):
            nrm += ST[vs + j, x] * ST[vs + j, x]
        if not s > PIVOT_TOL * ref * nrm:
            return False
        ljj = np.sqrt(s)
        W[1, j, j] = ljj
        for i in range(j + 1, n):
            s2 = W[0, i, j]
            for k in range(j):
                s2 -= W[1, i, k] * W[1, j, k]
            W[1, i, j] = s2 / ljj
    if n == 1:
        Dinv[vs, 0] = 1.0 / (W[1, 0, 0] * W[1, 0, 0])
        return True
    # L^-1 (lower) into W[0], then D^-1 = L^-T L^-1
    for j in range(n):
        W[0, j, j] = 1.0 / W[1, j, j]
        for i in range(j + 1, n):
            s = 0.0
            for k in range(j, i):
                s += W[1, i, k] * W[0, k, j]
            W[0, i, j] = -s / W[1, i, i]
    for a in range(n):
        for b in range(a, n):
            s = 0.0
            for k in range(b, n):
                s += W[0, k, a] * W[0, k, b]
            Dinv[vs + a, b] = s
            Dinv[vs + b, a] = s
    return True


# --------------------------------------------------------------------------- Python side
def expansion(model):
    """(model to run the kernels on, Gq, gq, Gv) for a model with mimic joints, else None."""
    if not getattr(model, "has_mimic", False):
        return None
    Gq, gq, Gv = model.mimic_map()
    return model.expanded(), Gq, gq, Gv


def fext_array(model, f_ext, B):
    """f_ext as (1 or B, N+1, 6) float64 and whether it is given (row 0, the world, is ignored)."""
    if f_ext is None:
        return np.zeros((1, 1, 6)), False
    n1 = model.nbodies + 1
    try:
        a = np.ascontiguousarray(f_ext, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"f_ext must be an array of numbers, got {type(f_ext).__name__}") from None
    want = f"({n1}, 6)" + ("" if B is None else f" or ({B}, {n1}, 6)")
    if a.shape == (n1, 6):
        a = a.reshape(1, n1, 6)
    elif not (B is not None and a.shape == (B, n1, 6)):
        raise ValueError(f"f_ext must have shape {want} (one world-frame wrench [moment about the body "
                         f"origin; force] per body, row 0 the world), got {a.shape}")
    fin = np.isfinite(a[:, 1:])
    if not np.all(fin):
        bad = np.argwhere(~fin)[0]
        body = model.body_names[int(bad[1]) + 1]
        where = f"sample {int(bad[0])}, " if a.shape[0] > 1 else ""
        raise ValueError(f"f_ext contains NaN or inf ({where}body {body!r})")
    return a, True


def _array(x, n, name, B, first=False):
    """``_inputs.state_array`` with a quick path for arrays that are already right (most calls).
    ``first``: x sets the batch size (q); later arrays must match B exactly."""
    if type(x) is np.ndarray and x.dtype == np.float64 and x.flags.c_contiguous:
        if (x.ndim == 1 and x.shape[0] == n and B is None) or (x.ndim == 2 and x.shape[1] == n and (
                x.shape[0] == B or (first and x.shape[0] > 0))):
            if np.isfinite(x).all():
                return x, (None if x.ndim == 1 else x.shape[0])
    return _inputs.state_array(x, n, name, _inputs.ANY if first else B)


_EXTRA = weakref.WeakKeyDictionary()


def _extra(model):
    """Python-side cache per model: its quaternion slices and the pool of workspaces."""
    got = _EXTRA.get(model)
    if got is None:
        got = _EXTRA[model] = {"quat": bool(model.quaternion_blocks()), "pool": {}}
    return got


def states(model, q, vectors, t):
    """Validate q (nq,) / (B, nq), the (array, name) pairs of length nv and t; returns
    (B or None, q2, [v2 ...], t1) with a batch axis always present and the velocity-sized arrays
    padded to at least one column (the kernels index them by v_start)."""
    q, B = _array(q, model.nq, "q", None, first=True)
    if _extra(model)["quat"]:
        _inputs.check_quaternions(model, q, "q")
    n = 1 if B is None else B
    q2 = q.reshape(n, model.nq)
    out = []
    for x, name in vectors:
        a, _ = _array(x, model.nv, name, B)
        out.append(pad_v(a.reshape(n, model.nv)))
    if B is None and type(t) in (float, int) and np.isfinite(t):
        t1 = np.full(1, float(t))
    else:
        t1 = _inputs.time_array(t, B)
    return B, q2, out, t1


def pad_v(a):
    if a.shape[1] > 0:
        return a
    return np.zeros((a.shape[0], 1))


def run(serial, parallel, tabs, model, args, articulated=False, composite=False):
    """Run a kernel over a validated batch: serially for one state, else over chunks in parallel.

    Workspaces are pooled per model (taken for the call, given back after it), so repeated calls
    do not allocate them again; concurrent calls from several threads each get their own."""
    n = args[0].shape[0]
    nchunk = n_chunks(n) if n > 1 else 1
    pool = _extra(model)["pool"].setdefault((nchunk, articulated, composite), [])
    try:
        work = pool.pop()
    except IndexError:
        work = DynWork(model, nchunk, articulated, composite)
    if n > 1:
        parallel(tabs, *args, work.arrays)
    else:
        serial(tabs, *args, work.arrays)
    pool.append(work)


def raise_singular(model, status, q2, t1, B, what):
    """Turn the kernels' per-sample status (joint, code) into a SingularJointError."""
    bad = np.nonzero(status[:, 0] >= 0)[0]
    if len(bad) == 0:
        return
    b = int(bad[0])
    j = int(status[b, 0])
    code = int(status[b, 1])
    name = model.joint_names[j]
    qs = model.q_slice(j)
    conf = f"q[{qs.start}:{qs.stop}] = {np.array2string(q2[b, qs], precision=6)}"
    if model.rheonomic:
        conf += f", t = {t1[b]:.6g}"
    if code == RANK_LOSS:
        why = (f"the joint's Jacobian loses rank at {conf}: its motion subspace S has linearly "
               f"dependent (or zero) columns (gimbal lock of {model.joint_specs[j]!r}); its velocity "
               "variables are not independent there, so the dynamics is undefined")
    elif code == ARTICULATED_SINGULAR:
        sub = [model.body_names[k] for k in model.subtree(j)]
        why = (f"the articulated inertia of the subtree it carries (bodies {sub}) is singular along "
               f"the joint's motion at {conf}: a massless subtree (or one without inertia about the "
               "joint's axes) makes the mass matrix singular")
    else:
        why = (f"the mass matrix is singular (not positive definite) at the velocity variables of "
               f"this joint, at {conf}: a massless subtree or a degenerate joint")
    if B is None:
        msg = f"{what}: joint {name!r}: {why}"
    else:
        listed = ", ".join(f"{int(k)} (joint {model.joint_names[int(status[k, 0])]!r})" for k in bad[:10])
        more = "" if len(bad) <= 10 else f", ... ({len(bad) - 10} more)"
        msg = (f"{what}: {len(bad)} of {B} samples are singular: samples {listed}{more}; "
               f"sample {b}, joint {name!r}: {why}")
    err = SingularJointError(msg)
    err.joint = name
    err.samples = bad if B is not None else None
    err.joints = [model.joint_names[int(status[k, 0])] for k in bad]
    raise err
