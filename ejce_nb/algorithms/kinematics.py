"""Recursive kinematics: one forward sweep over the parent table (EJCE.md section 3), in each
body's outboard joint frame C_i.

With the joint's X_i, S_i, vJ_i, cJ_i (``ejce``):

    v_i  = X_i v_p + vJ_i                                   body twist
    a_i  = X_i a_p + S_i u'_i + cJ_i + v_i x vJ_i           spatial acceleration (a_0 = -g)
    RC_i = RC_p E_i^T,   oC_i = oC_p + RC_p d_i             world axes and origin of C_i

The world-frame kinematics of the body origin (at bo_i in C_i, axes R_i = RC_i E_c,i^T) follow:
p_i = oC_i + RC_i bo_i, omega_i = RC_i w_i, v_i = RC_i (v_C + w x bo), alpha_i = RC_i w'_i and
the classical acceleration RC_i (a_C + w' x bo + w x (v_C + w x bo)) + g.

``forward`` keeps what it computed in the record of the state, and a later call on the same
state (bitwise) reuses it: the joints (X, S) for the same (q, t), the twists for the same qd, the
accelerations for the same qdd, the world frames for the same (q, t).
"""
from numba.extending import overload

from .._jit import jit
from ..core.ejce import joint_position, joint_velocity
from ..model.layout import REC_ACC, REC_POS, REC_T, REC_VEL, REC_WORLD, rows
from ..core.lanes import Lanes, get, zero_of
from ..core.spatial import (EYE9, ZERO3, ZERO6, add, add6, axpy6, cross, crm, ld3, ld6, ld9, mmT, mv, st3,
                      st6, st9, xmotion)


# ---------------------------------------------------------------------------- the forward sweep
def _same(key, x):
    """Whether the record's key equals x bit for bit (a group's record is never reused)."""
    return False


def _keep(key, x):
    """Store x as the record's key."""


def _keep_t(h, t):
    """Store the time t in the record's header."""


@overload(_same)
def _same_ov(key, x):
    if x.ndim == 2:
        return lambda key, x: False

    def impl(key, x):
        for k in range(x.shape[0]):
            if key[k] != x[k]:
                return False
        return True
    return impl


@overload(_keep)
def _keep_ov(key, x):
    if x.ndim == 2:
        return lambda key, x: None

    def impl(key, x):
        for k in range(x.shape[0]):
            key[k] = x[k]
    return impl


@overload(_keep_t)
def _keep_t_ov(h, t):
    if isinstance(t, Lanes):
        return lambda h, t: None

    def impl(h, t):
        h[REC_T] = t
    return impl


@jit
def forward(m, r, s, q, v, a, t, level, world, full):
    """Bring the record r to the state (q, v, a, t): the joints always, twists for level >= 1,
    accelerations (gravity as a base acceleration) for level 2, world frames with ``world``.
    What r already holds for this state is kept.  ``full``: which joint paths are compiled
    (``ejce.joint_position``).  Callers pass ``level``, ``world`` and ``full`` as run-time values
    (``np.int64(2)``, ``np.bool_(True)``): a constant argument is a type of its own, and each
    would compile this sweep once more (about 20 s)."""
    h = r.hdr
    pos = h[REC_POS] == 1.0 and h[REC_T] == t and _same(r.qkey, q)
    vel = level >= 1 and pos and h[REC_VEL] == 1.0 and _same(r.vkey, v)
    acc = level >= 2 and vel and h[REC_ACC] == 1.0 and _same(r.akey, a)
    need_vel = level >= 1 and not vel
    need_acc = level >= 2 and not acc
    need_world = world and not (pos and h[REC_WORLD] == 1.0)
    if pos and not need_vel and not need_acc and not need_world:
        return
    # what is about to be overwritten is no longer valid (accelerations hang on the twists)
    if not pos:
        h[REC_POS] = 0.0
        h[REC_WORLD] = 0.0
    if not pos or need_vel:
        h[REC_VEL] = 0.0
    if not pos or need_vel or need_acc:
        h[REC_ACC] = 0.0
    grav = m.gravity
    a_base = (0.0, 0.0, 0.0, -grav[0], -grav[1], -grav[2])
    Z = zero_of(r.vel)
    Z6 = (Z, Z, Z, Z, Z, Z)
    # the generic path evaluates position and velocity terms at once: at v when they are wanted
    vj = v if level >= 1 else s.zv
    for i in range(1, m.body_parent.shape[0]):
        l = m.body_parent[i]
        if not pos:
            joint_position(m, r, s, i, q, vj, t, full)
        if need_vel:
            joint_velocity(m, r, s, i, q, v, t, full, not pos and level >= 1)
            if l == 0:
                vi = add6(Z6, ld6(r.vJ, i))
            else:
                vi = add6(xmotion(ld9(r.E, i), ld3(r.d, i), ld6(r.vel, l)), ld6(r.vJ, i))
            st6(r.vel, i, vi)
        if need_acc:
            vJi = ld6(r.vJ, i)
            if l == 0:
                xa = xmotion(ld9(r.E, i), ld3(r.d, i), a_base)
            else:
                xa = xmotion(ld9(r.E, i), ld3(r.d, i), ld6(r.acc, l))
            a0, a1, a2, a3, a4, a5 = add6(add6(xa, ld6(r.cJ, i)), crm(ld6(r.vel, i), vJi))
            for k in range(m.jnt_dofadr[i], m.jnt_dofadr[i] + m.jnt_nv[i]):
                ak = get(a, k)
                Sk = ld6(r.S, k)
                a0 += Sk[0] * ak
                a1 += Sk[1] * ak
                a2 += Sk[2] * ak
                a3 += Sk[3] * ak
                a4 += Sk[4] * ak
                a5 += Sk[5] * ak
            st6(r.acc, i, (a0, a1, a2, a3, a4, a5))
        if need_world:
            Ei = ld9(r.E, i)
            di = ld3(r.d, i)
            if l == 0:
                st9(r.RC, i, mmT(EYE9, Ei))
                st3(r.oC, i, add(ZERO3, mv(EYE9, di)))
            else:
                RCl = ld9(r.RC, l)
                st9(r.RC, i, mmT(RCl, Ei))
                st3(r.oC, i, add(ld3(r.oC, l), mv(RCl, di)))
    if not pos:
        _keep(r.qkey, q)
        _keep_t(h, t)
        h[REC_POS] = 1.0
    if need_vel:
        _keep(r.vkey, v)
        h[REC_VEL] = 1.0
    if need_acc:
        _keep(r.akey, a)
        h[REC_ACC] = 1.0
    if need_world:
        h[REC_WORLD] = 1.0


# ---------------------------------------------------------------------------- forward kinematics
@jit
def fk_out(out, B, n1, level):
    """Views of the flat result buffer: R, p (always), omega, v (level >= 1), alpha, a (level 2);
    row b n1 + i is body i of sample b."""
    n = B * n1
    R = rows(out, 0, n, 9)
    p = rows(out, 9 * n, n, 3)
    w = rows(out, 12 * n, n if level >= 1 else 0, 3)
    vo = rows(out, 15 * n, n if level >= 1 else 0, 3)
    al = rows(out, 18 * n, n if level >= 2 else 0, 3)
    ao = rows(out, 21 * n, n if level >= 2 else 0, 3)
    return R, p, w, vo, al, ao


_FK_WIDTH = (12, 18, 24)      # numbers per body at level 0, 1, 2


def fk_size(B, n1, level):
    return B * n1 * _FK_WIDTH[level]


@jit
def world_kinematics(m, r, level, b, R, p, w, vo, al, ao):
    """World-frame kinematics of every body origin of sample b (EJCE.md section 3)."""
    n1 = m.body_parent.shape[0]
    o = b * n1
    grav = m.gravity
    st9(R, o, EYE9)
    st3(p, o, ZERO3)
    if level >= 1:
        st3(w, o, ZERO3)
        st3(vo, o, ZERO3)
    if level >= 2:
        st3(al, o, ZERO3)
        st3(ao, o, ZERO3)
    for i in range(1, n1):
        RC = ld9(r.RC, i)
        bo = ld3(m.body_bo, i)
        st9(R, o + i, mmT(RC, ld9(m.body_Ec, i)))
        st3(p, o + i, add(ld3(r.oC, i), mv(RC, bo)))
        if level >= 1:
            V = ld6(r.vel, i)
            wi = (V[0], V[1], V[2])
            vb = add((V[3], V[4], V[5]), cross(wi, bo))
            st3(w, o + i, mv(RC, wi))
            st3(vo, o + i, mv(RC, vb))
            if level >= 2:
                A = ld6(r.acc, i)
                ai = (A[0], A[1], A[2])
                ab = add(add((A[3], A[4], A[5]), cross(ai, bo)), cross(wi, vb))
                st3(al, o + i, mv(RC, ai))
                st3(ao, o + i, add(mv(RC, ab), (grav[0], grav[1], grav[2])))


class Kinematics:
    """World-frame kinematics of every body origin (``ej.forward_kinematics``): ``R`` (body ->
    world), ``p`` (origin), ``omega`` (angular velocity), ``v`` (origin velocity), ``alpha``
    (angular acceleration), ``a`` (classical origin acceleration, d/dt v), world axes,
    ``(..., N+1, 3, 3)`` and ``(..., N+1, 3)``, row 0 the world; omega, v need qd; alpha, a need
    qdd (None without)."""

    # the arrays are views of one flat result buffer, made when first looked at: a call that
    # only needs a few of them does not pay for the others
    __slots__ = ("_buf", "_lead", "_n1", "_level", "_cache")

    def __init__(self, buf, lead, n1, level):
        self._buf = buf
        self._lead = lead
        self._n1 = n1
        self._level = level
        self._cache = None

    def _field(self, k, width, need):
        if self._level < need:
            return None
        if self._cache is None:
            self._cache = {}
        a = self._cache.get(k)
        if a is None:
            n = (self._lead[0] if self._lead else 1) * self._n1
            off = (0, 9, 12, 15, 18, 21)[k] * n
            shape = self._lead + ((self._n1, 3, 3) if width == 9 else (self._n1, 3))
            a = self._cache[k] = self._buf[off:off + n * width].reshape(shape)
        return a

    R = property(lambda self: self._field(0, 9, 0))
    p = property(lambda self: self._field(1, 3, 0))
    omega = property(lambda self: self._field(2, 3, 1))
    v = property(lambda self: self._field(3, 3, 1))
    alpha = property(lambda self: self._field(4, 3, 2))
    a = property(lambda self: self._field(5, 3, 2))

    def __repr__(self):
        fields = [k for k in ("R", "p", "omega", "v", "alpha", "a") if getattr(self, k) is not None]
        return f"<ej.Kinematics {self.p.shape[:-1]}: {', '.join(fields)}>"


# ---------------------------------------------------------------------------- joint terms
@jit
def jt_out(out, B, n1, nv):
    """Views of the flat buffer of joint_terms: J (B 6, nv), sigma, bias, twist (B n1, 6),
    R (B n1, 9), r (B n1, 3)."""
    n = B * n1
    o = 6 * B * nv
    return (rows(out, 0, 6 * B, nv), rows(out, o, n, 6), rows(out, o + 6 * n, n, 6),
            rows(out, o + 12 * n, n, 6), rows(out, o + 18 * n, n, 9), rows(out, o + 27 * n, n, 3))


def jt_size(B, n1, nv):
    return B * (6 * nv + 30 * n1)


@jit
def joint_terms_state(m, r, v, outboard, b, J, sig, bias, tw, R, p):
    """The EJCE terms of every joint of sample b from the algorithms' view (EJCE.md section 2
    read backwards): J = R S, sigma = R (vJ - S u), b = [R cJ_w; R cJ_v + w_rel x v_rel],
    twist = R vJ (P axes); the same in C axes for ``outboard``."""
    n1 = m.body_parent.shape[0]
    o = b * n1
    for x in range(6):
        for k in range(J.shape[1]):
            J[6 * b + x, k] = 0.0
    st9(R, o, EYE9)
    st3(p, o, ZERO3)
    st6(sig, o, ZERO6)
    st6(bias, o, ZERO6)
    st6(tw, o, ZERO6)
    for i in range(1, n1):
        Rr = ld9(r.Rrel, i)
        st9(R, o + i, Rr)
        st3(p, o + i, ld3(r.rrel, i))
        if outboard:
            Rr = EYE9
        sg = ld6(r.vJ, i)
        for k in range(m.jnt_dofadr[i], m.jnt_dofadr[i] + m.jnt_nv[i]):
            Sk = ld6(r.S, k)
            w = mv(Rr, (Sk[0], Sk[1], Sk[2]))
            u = mv(Rr, (Sk[3], Sk[4], Sk[5]))
            for x in range(3):
                J[6 * b + x, k] = w[x]
                J[6 * b + 3 + x, k] = u[x]
            sg = axpy6(-v[k], Sk, sg)
        st6(sig, o + i, mv(Rr, (sg[0], sg[1], sg[2])) + mv(Rr, (sg[3], sg[4], sg[5])))
        V = ld6(r.vJ, i)
        wr = mv(Rr, (V[0], V[1], V[2]))
        vr = mv(Rr, (V[3], V[4], V[5]))
        st6(tw, o + i, wr + vr)
        c = ld6(r.cJ, i)
        st6(bias, o + i, mv(Rr, (c[0], c[1], c[2])) + add(mv(Rr, (c[3], c[4], c[5])), cross(wr, vr)))


class JointTerms:
    """EJCE terms of every joint (``ej.joint_terms``): ``J`` (..., 6, nv), ``sigma``, ``bias``
    (..., N+1, 6), with relative twist = J qd + sigma, relative acceleration = J qdd + bias;
    ``R`` (..., N+1, 3, 3), ``r`` (..., N+1, 3) the relative pose of C in P; ``twist`` the
    relative twist; ``frame`` the axes they are expressed in (``"inboard"``: P, ``"outboard"``: C).

    For a model with mimic joints the terms are those of ``model.expanded()`` (a mimic joint has
    no velocity of its own) and ``v_map`` maps the model's velocities to the expanded ones."""

    def __init__(self, J, sigma, bias, R, r, twist, frame, v_map=None):
        self.J, self.sigma, self.bias, self.R, self.r, self.twist, self.frame = J, sigma, bias, R, r, twist, frame
        self.v_map = v_map

    def __repr__(self):
        return f"<ej.JointTerms J{self.J.shape} frame={self.frame!r}>"


# ---------------------------------------------------------------------------- body Jacobians
@jit
def body_jacobian_state(m, r, body, b, Jb):
    """World-frame Jacobian of the origin of ``body`` (sample b) into Jb[6 b : 6 b + 6]: every joint
    on the path to the root contributes S turned into world axes (RC_j) and moved from the origin
    of C_j to the body origin."""
    for x in range(6):
        for k in range(Jb.shape[1]):
            Jb[6 * b + x, k] = 0.0
    if body == 0:
        return
    pb = add(ld3(r.oC, body), mv(ld9(r.RC, body), ld3(m.body_bo, body)))
    j = body
    while j > 0:
        RC = ld9(r.RC, j)
        oC = ld3(r.oC, j)
        dd = (pb[0] - oC[0], pb[1] - oC[1], pb[2] - oC[2])
        for k in range(m.jnt_dofadr[j], m.jnt_dofadr[j] + m.jnt_nv[j]):
            Sk = ld6(r.S, k)
            w = mv(RC, (Sk[0], Sk[1], Sk[2]))
            u = add(mv(RC, (Sk[3], Sk[4], Sk[5])), cross(w, dd))
            for x in range(3):
                Jb[6 * b + x, k] = w[x]
                Jb[6 * b + 3 + x, k] = u[x]
        j = m.body_parent[j]
