"""The actuation of a model in the compiled time loop: the controls held over each step, the
activations integrated as state, and the actuators' joint forces at every stage.

With ``model.actuation`` the state of a trajectory is (q, v, act): each stage j of a step of size
h from (q, v, act, t) evaluates, at its own state,

    qfrc_j, act_dot_j = actuation_forces(q_j, v_j, ctrl_n, act_j, t + c_j h)

(``actuation.state``: the actuators' forces, the tendons' passive forces, gravity compensation and
the force elements', on the forward sweep of the stage with world frames, after which the stage
runs the ABA's three loops alone, ``stage.stage_dynamics``)
and adds qfrc_j to the stage's joint forces; ctrl_n is the row of the step (held over it, as
MuJoCo holds ``ctrl`` over ``mj_step``).  The activations go through the stages as the
velocities do, act_j = act + h sum_l a_jl act_dot_l, and the step ends at

    act_{n+1} = clamp(act + s_i sum_j b_j act_dot_j),   s_i = h, or tau_i (1 - exp(-h / tau_i))

for a ``filterexact`` activation of time constant tau_i (MuJoCo's ``mj_nextActivation``, applied to
the weighted act_dot of the step as ``mj_RungeKutta`` does), clamped to ``actrange`` where
``actlimited``.  Semi-implicit Euler advances act by h act_dot at the step's start (MuJoCo's Euler).  Dormand-Prince
runs the activations through its stages the same way (first same as last: K1 of a step is the
last stage's act_dot of the step before unless the end was clamped or a filterexact update), its
embedded error of the activations counted with the velocities' in the step control, and a
recorded time between steps takes act + h sum_j b_j(theta) act_dot_j (the continuous extension),
clamped.

A model with couplers computes the actuation on its expansion (q_full = phi(q), v_full = G v: the
kernel model's coordinates, which the actuation's tables address) and adds G^T qfrc to the
stage's joint forces (``sweep``, ``reduce``), as ``ej.forward_dynamics`` does.

Every function here takes the run's ``records.Actuated`` record ``ac``, or None for a model
without actuation: then each compiles to nothing (``numba.extending.overload`` on NoneType), and
the loop of such a model is the same code as before.  The overloads are inlined by LLVM
(``forceinline``): a compiled call would copy the model, record and scratch views at every stage.
The actuator forces of a recorded state (``record_forces``) are a call, on the chunk's buffers.
"""
import math

import numpy as np
from numba import types
from numba.extending import overload

from .._jit import jit
from ..actuation.state import actuation_forces
from ..algorithms.kinematics import forward
from ..model.couplers import Coupled, expand_state
from ..model.layout import model_view, record_view, scratch_view
from .records import CTRL_STEP


def act_begin(ac, b):
    """ac.at <- trajectory b's carried activations; the control column of b."""


def act_step(ac, n):
    """Select the control row of step n; returns the first control of it that is not finite, or -1."""
    return -1


def act_stage(ac, st, h, A):
    """ac.astage <- act + h sum_{j < st} A[st, j] KA[j]: the activations of stage st."""


def act_stage0(ac):
    """ac.astage <- ac.at: the activations at the step's start (semi-implicit Euler)."""


def actuate(ac, cp, m, r, s, q, v, t, st, full, tq):
    """tq += the actuation's joint forces at the stage (q, v, ac.astage, t), KA[st] <- act_dot;
    returns (status, actuator or element) of ``actuation_forces`` (0, -1: fine).  ``cp``: None,
    or the ``records.Coupled`` record of a model with couplers (``sweep``, ``reduce``)."""
    return 0, -1


def sweep(cp, m, r, s, q, v, t, full):
    """The forward sweep with world frames of the state (q, v) at t on the kernel model's record;
    returns the kernel model's (q, v): (q, v) itself without couplers (cp None), else the
    expansion (q_full = phi(q), v_full = G v, with G(q) in cp.G: ``couplers.expand_state``)."""
    raise NotImplementedError("compiled code only")


def reduce(cp, qfrc, tq):
    """tq += qfrc (cp None), or tq += G^T qfrc (qfrc: forces on the expansion's velocities)."""
    raise NotImplementedError("compiled code only")


def act_end(ac, h, W):
    """ac.ax <- the activations at the end of the step of size h with the stage weights W."""


def act_accept(ac):
    """ac.at <- ac.ax (the step is taken)."""


def act_record(ac, cp, mb, R, S, q, v, t, n, full, k, b):
    """Record trajectory b's activations ac.at as record k, and (unless ``ac.rec_force`` is
    empty) the actuator forces at the recorded state (q, v, ac.at, t) after n steps, with the
    controls of step n (the step that starts there; the last step's at the end), on the chunk's
    model buffer, record and scratch (mb, R, S)."""


def act_finish(ac, b):
    """Hand trajectory b's activations to the next segment."""


def act_k1_load(ac, b):
    """dopri5: KA[0] <- trajectory b's carried first-stage act_dot (FSAL across segments)."""


def act_k1_save(ac, b):
    """dopri5: trajectory b's carried first-stage act_dot <- KA[0]."""


def act_fsal(ac):
    """dopri5, a step taken: KA[0] <- KA[6]; returns whether the step's end activations ac.ax
    may differ from those of its last stage by more than rounding (one at its clamp, a
    filterexact update): K1 is then stale."""
    return False


def act_error(ac, h, E, rtol, atol):
    """dopri5: (sum of squares, count) of the activations' embedded error h sum_j E_j KA_j, each
    over atol + rtol max(|act|, |act_end|); (0, 0) without activations."""
    return 0.0, 0


def act_hold(ac):
    """dopri5, a step taken: ac.a0 <- ac.at (its start), ac.at <- ac.ax (its end)."""


def act_dense(ac, h, theta, P):
    """dopri5: ac.at <- the activations at t + theta h of the step from ac.a0 (the quartic
    continuous extension with act_dot's stages, clamped), for a record between steps."""


def _none(x):
    return isinstance(x, types.NoneType)


@overload(act_begin, jit_options={"forceinline": True})
def _act_begin(ac, b):
    if _none(ac):
        return lambda ac, b: None

    def impl(ac, b):
        for k in range(ac.at.shape[0]):
            ac.at[k] = ac.act[b, k]
        ac.idx[1] = b if ac.ctrl.shape[1] > 1 else 0
    return impl


@overload(act_step, jit_options={"forceinline": True})
def _act_step(ac, n):
    if _none(ac):
        return lambda ac, n: -1

    def impl(ac, n):
        i = n if ac.cmode == CTRL_STEP else 0
        ac.idx[0] = i
        c = ac.ctrl[i, ac.idx[1]]
        for k in range(c.shape[0]):
            if not np.isfinite(c[k]):
                return k
        return -1
    return impl


@overload(act_stage, jit_options={"forceinline": True})
def _act_stage(ac, st, h, A):
    if _none(ac):
        return lambda ac, st, h, A: None

    def impl(ac, st, h, A):
        KA = ac.KA
        for k in range(ac.at.shape[0]):
            x = ac.at[k]
            for j in range(st):
                a = A[st, j]
                if a != 0.0:
                    x += h * a * KA[j, k]
            ac.astage[k] = x
    return impl


@overload(act_stage0, jit_options={"forceinline": True})
def _act_stage0(ac):
    if _none(ac):
        return lambda ac: None

    def impl(ac):
        for k in range(ac.at.shape[0]):
            ac.astage[k] = ac.at[k]
    return impl


@overload(sweep, jit_options={"forceinline": True})
def _sweep(cp, m, r, s, q, v, t, full):
    if _none(cp):
        def plain(cp, m, r, s, q, v, t, full):
            forward(m, r, s, q, v, s.zv, t, np.int64(1), np.bool_(True), full)
            return q, v
        return plain
    if getattr(cp, "instance_class", None) is not Coupled:
        return None

    def coupled(cp, m, r, s, q, v, t, full):
        expand_state(cp.own_q, cp.own_v, cp.cq, cp.cv, cp.cnind, cp.cind_q, cp.cind_v, cp.cfadr, cp.cscale,
                     cp.params, q, v, cp.za, np.int64(1), cp.qi, cp.vi, cp.qf, cp.vf, cp.af, cp.G)
        forward(m, r, s, cp.qf, cp.vf, s.zv, t, np.int64(1), np.bool_(True), full)
        return cp.qf, cp.vf
    return coupled


@overload(reduce, jit_options={"forceinline": True})
def _reduce(cp, qfrc, tq):
    if _none(cp):
        def plain(cp, qfrc, tq):
            for k in range(tq.shape[0]):
                tq[k] += qfrc[k]
        return plain

    def coupled(cp, qfrc, tq):
        G = cp.G
        for a in range(tq.shape[0]):
            x = 0.0
            for k in range(G.shape[0]):
                g = G[k, a]
                if g != 0.0:
                    x += g * qfrc[k]
            tq[a] += x
    return coupled


@overload(actuate, jit_options={"forceinline": True})
def _actuate(ac, cp, m, r, s, q, v, t, st, full, tq):
    if _none(ac):
        return lambda ac, cp, m, r, s, q, v, t, st, full, tq: (0, -1)

    def impl(ac, cp, m, r, s, q, v, t, st, full, tq):
        # the stage's sweep with world frames (on the expansion with couplers): the ABA of a
        # tree that follows reuses it
        qk, vk = sweep(cp, m, r, s, q, v, t, full)
        qf = ac.qfrc
        code, index = actuation_forces(ac.ab, ac.ib, ac.eb, m, r, qk, vk, ac.ctrl[ac.idx[0], ac.idx[1]], ac.astage,
                                       t, ac.work, qf, ac.KA[st])
        if code != 0:
            return code, index
        reduce(cp, qf, tq)
        return 0, -1
    return impl


@overload(act_end, jit_options={"forceinline": True})
def _act_end(ac, h, W):
    if _none(ac):
        return lambda ac, h, W: None

    def impl(ac, h, W):
        KA = ac.KA
        L = ac.actlim
        for k in range(ac.at.shape[0]):
            d = 0.0
            for j in range(7):
                w = W[j]
                if w != 0.0:
                    d += w * KA[j, k]
            tau = L[k, 2]
            if tau > 0.0:
                x = ac.at[k] + d * tau * (1.0 - math.exp(-h / tau))
            else:
                x = ac.at[k] + d * h
            ac.ax[k] = min(max(x, L[k, 0]), L[k, 1])
    return impl


@overload(act_accept, jit_options={"forceinline": True})
def _act_accept(ac):
    if _none(ac):
        return lambda ac: None

    def impl(ac):
        for k in range(ac.at.shape[0]):
            ac.at[k] = ac.ax[k]
    return impl


@overload(act_record, jit_options={"forceinline": True})
def _act_record(ac, cp, mb, R, S, q, v, t, n, full, k, b):
    if _none(ac):
        return lambda ac, cp, mb, R, S, q, v, t, n, full, k, b: None

    def impl(ac, cp, mb, R, S, q, v, t, n, full, k, b):
        na = ac.at.shape[0]
        for x in range(na):
            ac.rec_act[k, b, x] = ac.at[x]
        if ac.rec_force.shape[0] != 0:
            record_forces(ac, cp, mb, R, S, q, v, t, n, full, k, b)
    return impl


@jit
def record_forces(ac, cp, mb, R, S, q, v, t, n, full, k, b):
    """ac.rec_force[k, b] <- the actuator forces at (q, v, ac.at, t) with the controls of step n
    (with couplers, ``cp``, at the expansion of (q, v)).
    A call, not inlined: the loop records at two places, and one copy of the actuation's code
    compiles faster; it is handed the chunk's buffers and builds its views of them (views handed
    across a call cross it as hundreds of array fields, at every call)."""
    m, r, s = model_view(mb), record_view(mb, R, 0), scratch_view(mb, S, 0)
    i = min(n, ac.ctrl.shape[0] - 1) if ac.cmode == CTRL_STEP else 0
    qk, vk = sweep(cp, m, r, s, q, v, t, full)
    # act_dot into ac.astage: free between steps (dopri5 keeps the step's end in ac.ax while it records)
    code, index = actuation_forces(ac.ab, ac.ib, ac.eb, m, r, qk, vk, ac.ctrl[i, ac.idx[1]], ac.at, t, ac.work,
                                   ac.qfrc, ac.astage)
    o = ac.foff
    for x in range(ac.nuf):
        ac.rec_force[k, b, x] = ac.work[o + x] if code == 0 else np.nan


@overload(act_finish, jit_options={"forceinline": True})
def _act_finish(ac, b):
    if _none(ac):
        return lambda ac, b: None

    def impl(ac, b):
        for x in range(ac.at.shape[0]):
            ac.act[b, x] = ac.at[x]
    return impl


@overload(act_k1_load, jit_options={"forceinline": True})
def _act_k1_load(ac, b):
    if _none(ac):
        return lambda ac, b: None

    def impl(ac, b):
        for x in range(ac.at.shape[0]):
            ac.KA[0, x] = ac.ka0[b, x]
    return impl


@overload(act_k1_save, jit_options={"forceinline": True})
def _act_k1_save(ac, b):
    if _none(ac):
        return lambda ac, b: None

    def impl(ac, b):
        for x in range(ac.at.shape[0]):
            ac.ka0[b, x] = ac.KA[0, x]
    return impl


@overload(act_fsal, jit_options={"forceinline": True})
def _act_fsal(ac):
    if _none(ac):
        return lambda ac: False

    def impl(ac):
        L = ac.actlim
        stale = False
        for x in range(ac.at.shape[0]):
            ac.KA[0, x] = ac.KA[6, x]
            if L[x, 2] > 0.0 or ac.ax[x] == L[x, 0] or ac.ax[x] == L[x, 1]:
                stale = True
        return stale
    return impl


@overload(act_error, jit_options={"forceinline": True})
def _act_error(ac, h, E, rtol, atol):
    if _none(ac):
        return lambda ac, h, E, rtol, atol: (0.0, 0)

    def impl(ac, h, E, rtol, atol):
        KA = ac.KA
        acc = 0.0
        na = ac.at.shape[0]
        for k in range(na):
            d = 0.0
            for j in range(7):
                w = E[j]
                if w != 0.0:
                    d += w * KA[j, k]
            x = h * d / (atol + rtol * max(abs(ac.at[k]), abs(ac.ax[k])))
            acc += x * x
        return acc, na
    return impl


@overload(act_hold, jit_options={"forceinline": True})
def _act_hold(ac):
    if _none(ac):
        return lambda ac: None

    def impl(ac):
        for k in range(ac.at.shape[0]):
            ac.a0[k] = ac.at[k]
            ac.at[k] = ac.ax[k]
    return impl


@overload(act_dense, jit_options={"forceinline": True})
def _act_dense(ac, h, theta, P):
    if _none(ac):
        return lambda ac, h, theta, P: None

    def impl(ac, h, theta, P):
        KA = ac.KA
        L = ac.actlim
        t2 = theta * theta
        t3 = t2 * theta
        t4 = t3 * theta
        for k in range(ac.at.shape[0]):
            d = 0.0
            for j in range(7):
                w = P[j, 0] * theta + P[j, 1] * t2 + P[j, 2] * t3 + P[j, 3] * t4
                d += w * KA[j, k]
            ac.at[k] = min(max(ac.a0[k] + h * d, L[k, 0]), L[k, 1])
    return impl
