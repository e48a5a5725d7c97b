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
``actlimited``.  Semi-implicit Euler advances act by h act_dot at the step's start (MuJoCo's Euler).

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


def actuate(ac, m, r, s, q, v, t, st, full, tq):
    """tq += the actuation's joint forces at the stage (q, v, ac.astage, t), KA[st] <- act_dot;
    returns (status, actuator or element) of ``actuation_forces`` (0, -1: fine)."""
    return 0, -1


def act_end(ac, h, W):
    """ac.ax <- the activations at the end of the step of size h with the stage weights W."""


def act_accept(ac):
    """ac.at <- ac.ax (the step is taken)."""


def act_record(ac, mb, R, S, q, v, t, n, full, k, b):
    """Record trajectory b's activations ac.at as record k, and (unless ``ac.rec_force`` is
    empty) the actuator forces at the recorded state (q, v, ac.at, t) after n steps, with the
    controls of step n (the step that starts there; the last step's at the end), on the chunk's
    model buffer, record and scratch (mb, R, S)."""


def act_finish(ac, b):
    """Hand trajectory b's activations to the next segment."""


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


@overload(actuate, jit_options={"forceinline": True})
def _actuate(ac, m, r, s, q, v, t, st, full, tq):
    if _none(ac):
        return lambda ac, m, r, s, q, v, t, st, full, tq: (0, -1)

    def impl(ac, m, r, s, q, v, t, st, full, tq):
        # the stage's sweep with world frames: the ABA that follows reuses it
        forward(m, r, s, q, v, s.zv, t, np.int64(1), np.bool_(True), full)
        qf = ac.qfrc
        code, index = actuation_forces(ac.ab, ac.ib, ac.eb, m, r, q, v, ac.ctrl[ac.idx[0], ac.idx[1]], ac.astage,
                                       t, ac.work, qf, ac.KA[st])
        if code != 0:
            return code, index
        for k in range(tq.shape[0]):
            tq[k] += qf[k]
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
def _act_record(ac, mb, R, S, q, v, t, n, full, k, b):
    if _none(ac):
        return lambda ac, mb, R, S, q, v, t, n, full, k, b: None

    def impl(ac, mb, R, S, q, v, t, n, full, k, b):
        na = ac.at.shape[0]
        for x in range(na):
            ac.rec_act[k, b, x] = ac.at[x]
        if ac.rec_force.shape[0] != 0:
            record_forces(ac, mb, R, S, q, v, t, n, full, k, b)
    return impl


@jit
def record_forces(ac, mb, R, S, q, v, t, n, full, k, b):
    """ac.rec_force[k, b] <- the actuator forces at (q, v, ac.at, t) with the controls of step n.
    A call, not inlined: the loop records at two places, and one copy of the actuation's code
    compiles faster; it is handed the chunk's buffers and builds its views of them (views handed
    across a call cross it as hundreds of array fields, at every call)."""
    m, r, s = model_view(mb), record_view(mb, R, 0), scratch_view(mb, S, 0)
    i = min(n, ac.ctrl.shape[0] - 1) if ac.cmode == CTRL_STEP else 0
    forward(m, r, s, q, v, s.zv, t, np.int64(1), np.bool_(True), full)
    # act_dot into ac.ax: free between steps
    code, index = actuation_forces(ac.ab, ac.ib, ac.eb, m, r, q, v, ac.ctrl[i, ac.idx[1]], ac.at, t, ac.work,
                                   ac.qfrc, ac.ax)
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
