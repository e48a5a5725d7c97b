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
from numba import prange

from numba import types
from numba.extending import overload

from . import engine
from ..model import inputs
from .._jit import call, entry, jit, pjit
from .kinematics import forward
from ..core.lanes import LANES, from_lanes, gather, get, lanes_of, put, to_lanes
from ..model.layout import H_LANES, H_SCR, REC_JOINT, group_views, model_view, record_view, scratch_view, views
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
def rnea_state(m, r, s, q, v, a, t, F, fb, generic, tau):
    forward(m, r, s, q, v, a, t, 2, F.shape[0] > 0, generic)
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


@entry
def rnea_one(mb, w, q, v, a, t, F, tau):
    m, r, s = views(mb, w)
    generic = s.flags[0] != 0.0
    st, j = inputs.check(m, q, v, a, 2, t)
    if st != 0:
        r.hdr[REC_JOINT] = j
        return st
    rnea_state(m, r, s, q, v, a, t, F, 0, generic, tau)
    return 0


@entry
def nle_one(mb, w, q, v, t, F, h):
    m, r, s = views(mb, w)
    generic = s.flags[0] != 0.0
    st, j = inputs.check(m, q, v, v, 1, t)
    if st != 0:
        r.hdr[REC_JOINT] = j
        return st
    rnea_state(m, r, s, q, v, s.zv, t, F, 0, generic, h)
    return 0


@pjit
def rnea_many(mb, R, S, per_state, Q, V, A, T, F, generic, TAU, status):
    """A = None-like (0 columns): qdd = 0 (nonlinear effects).  Where the model allows (and the
    records are not kept per state), states run in groups of LANES (``lanes``); a group with a
    bad sample runs state by state."""
    B = Q.shape[0]
    nchunk = S.shape[0]
    grouped = mb[H_LANES] != 0 and not per_state and not generic
    zero_a = A.shape[1] == 0 and TAU.shape[1] > 0
    for c in prange(nchunk):
        m = model_view(mb)
        s = scratch_view(mb, S[c], 0)
        b = c * B // nchunk
        end = (c + 1) * B // nchunk
        if grouped:
            rg, sg = group_views(mb, S[c], mb[H_SCR])
            while b + LANES <= end:
                if inputs.check_group(m, Q, V, A, zero_a, s.zv, T, b, status):
                    to_lanes(sg.lq, Q, b)
                    to_lanes(sg.lv, V, b)
                    if not zero_a:
                        to_lanes(sg.la, A, b)
                    fb = (b, 1) if F.shape[0] > 1 else (0, 0)
                    rnea_state(m, rg, sg, sg.lq, sg.lv, sg.zv if zero_a else sg.la, lanes_of(T, b), F, fb, False,
                               sg.lo)
                    from_lanes(TAU, b, sg.lo)
                else:
                    for b1 in range(b, b + LANES):
                        if status[b1, 0] == 0:
                            r = record_view(mb, R[c], 0)
                            rnea_state(m, r, s, Q[b1], V[b1], s.zv if zero_a else A[b1], T[b1], F,
                                       b1 if F.shape[0] > 1 else 0, False, TAU[b1])
                b += LANES
        for b1 in range(b, end):
            r = record_view(mb, R[b1] if per_state else R[c], 0)
            a = s.zv if zero_a else A[b1]
            st, j = inputs.check(m, Q[b1], V[b1], a, 2, T[b1])
            status[b1, 0] = st
            status[b1, 1] = j
            if st != 0:
                continue
            rnea_state(m, r, s, Q[b1], V[b1], a, T[b1], F, b1 if F.shape[0] > 1 else 0, generic, TAU[b1])


_NO_FORCE = np.zeros((0, 1, 6))
_ND = np.ndarray


def rnea(model, q, qd, qdd, t=0.0, f_ext=None, data=None, errors="raise"):
    """Joint forces tau (..., nv) that produce the accelerations qdd at (q, qd, t), with gravity
    from the model and optional external wrenches f_ext (..., N+1, 6) in world axes
    ([moment about the body origin; force] on each body, row 0 ignored).

    q (nq,) or (B, nq); qd, qdd (nv,) or (B, nv); t a float or (B,).  A batch runs in parallel.
    ``data``: an ``ej.Data`` whose record is reused and kept; ``errors="flag"``: a batch returns
    (tau, status) with the rows of bad samples NaN (``ej.Status``)."""
    if f_ext is None and type(q) is _ND and q.ndim == 1 and type(t) is float:
        # one state, nothing to convert: straight to the kernel (anything else: the input layer)
        tau = engine.one_state(rnea_one, model, data, errors, "tau", model.nv, q, qd, qdd, t, _NO_FORCE)
        if tau is not None:
            return engine.flagged(errors, tau)
    return inverse_dynamics(model, q, qd, qdd, t, f_ext, data, errors)


def nonlinear_effects(model, q, qd, t=0.0, data=None, errors="raise"):
    """h(q, qd, t) (..., nv): the joint forces at zero acceleration (Coriolis, centrifugal,
    gravity, and the effect of prescribed motion of rheonomic joints), so that
    rnea(q, qd, qdd) = mass_matrix(q) qdd + h."""
    if qd is None:
        raise ValueError("qd is required")
    if type(q) is _ND and q.ndim == 1 and type(t) is float:
        h = engine.one_state(nle_one, model, data, errors, "h", model.nv, q, qd, t, _NO_FORCE)
        if h is not None:
            return engine.flagged(errors, h)
    return inverse_dynamics(model, q, qd, None, t, None, data, errors, what="nonlinear_effects")


def inverse_dynamics(model, q, qd, qdd, t=0.0, f_ext=None, data=None, errors="raise", generic=False,
                     what="rnea", out=None):
    """``rnea`` through the input layer (any shapes, mimic joints, data=, errors=); qdd None: 0.
    ``out``: a C-ordered (B, nv) float64 array a batch's result is written into instead of a new
    one (not with data= or mimic joints)."""
    inputs.check_errors_arg(errors)
    vecs = [(qd, "qd")] + ([] if qdd is None else [(qdd, "qdd")])
    B, q2, vs, t1 = inputs.states(model, q, vecs, t)
    if data is not None:
        data._check(model, B)
    F = inputs.fext_array(model, f_ext, B)
    km, mim = inputs.kernel_model(model)
    n = q2.shape[0]
    # h of a model with nonlinear couplers is G^T rnea_full(q_full, v_full, Gdot v): its
    # expansion's accelerations are not zero at zero qdd
    with_a = qdd is not None or (mim is not None and not model.couplers_linear)
    if mim is None:
        qk, vk = q2, vs
    else:
        qk, vf, af = mim.expand(q2, vs[0], vs[1] if qdd is not None else (np.zeros_like(vs[0]) if with_a else None))
        vk = [x for x in (vf, af) if x is not None]
    A = vk[1] if with_a else np.zeros((n, 0))
    key = "tau" if qdd is not None else "h"
    status = engine.status_array(n)
    if B is None:
        tau = data._result(key, (km.nv,)) if data is not None else np.empty(km.nv)
        w = data._w if data is not None else engine.one_workspace(km)
        engine.set_generic(km, w, generic)
        if not with_a:
            status[0, 0] = call(nle_one, km._mb, w, qk[0], vk[0][0], t1[0], F, tau)
        else:
            status[0, 0] = call(rnea_one, km._mb, w, qk[0], vk[0][0], A[0], t1[0], F, tau)
        engine.set_generic(km, w, False)
        status[0, 1] = int(w[REC_JOINT])
        if data is None:
            engine.release(km, w)
        tau = tau[None]
    else:
        tau = data._result(key, (n, km.nv)) if data is not None else engine.result_array(out, n, km.nv, mim is None)
        R, S, per_state, token = engine.batch_workspace(km, n, data)
        rnea_many(km._mb, R, S, per_state, qk, vk[0], A, t1, F, generic, tau, status)
        engine.release_batch(token)
    if mim is not None:
        tau = mim.tau(tau)
    if errors == "flag":
        tau[status[:, 0] != 0] = np.nan
    return inputs.flag_or_raise(errors, model, status, what, ["q"] + [nm for _, nm in vecs], [q2] + vs,
                                t1, B, inputs.unbatch(B, tau))
