"""MuJoCo's actuator force laws, one actuator at a time (MuJoCo's ``mj_fwdActuation``,
``mju_muscleGain``, ``mju_muscleBias``, ``mju_muscleDynamics``).

With the transmission's length l and velocity lv, the control c (clamped to ``ctrlrange`` where
``ctrllimited``) and the activation a (``act``; with ``actearly`` the next step's
``a + h act_dot``, or ``a + act_dot tau (1 - exp(-h / tau))`` for ``filterexact``, clamped to
``actrange`` where ``actlimited``; h is ``opt.timestep``):

    force = gain * (c if dyntype is none else a) + bias,   clamped to forcerange where forcelimited
    gain  = prm[0]                          (fixed)
          = prm[0] + prm[1] l + prm[2] lv   (affine; bias likewise with biasprm)
          = muscle_gain(l, lv, lengthrange, acc0, gainprm)
    bias  = 0 (none) | affine | muscle_bias(l, lengthrange, acc0, biasprm)
    act_dot = c (integrator) | (c - a) / max(MINVAL, prm[0]) (filter, filterexact)
            | muscle_dynamics(c, a, dynprm) (muscle)

Muscles (prm = range[0:2], force, scale, lmin, lmax, vmax, fpmax, fvmax): force < 0 means
``scale / acc0``; L0 = (lengthrange[1] - lengthrange[0]) / (range[1] - range[0]),
L = range[0] + (l - lengthrange[0]) / L0, V = lv / (L0 vmax); the active force is
-force FL(L) FV(V) (MuJoCo's piecewise-quadratic curves), the passive one -force fpmax FP(L).
Muscle activation (prm = tau_act, tau_deact, smoothing width): with c and a clamped to [0, 1],
tau_act' = tau_act (0.5 + 1.5 a), tau_deact' = tau_deact / (0.5 + 1.5 a), dctrl = c - a and
act_dot = dctrl / max(MINVAL, tau) where tau switches between them on the sign of dctrl (hard),
or through the quintic sigmoid of dctrl / width + 0.5 (smooth).
"""
import numpy as np

from .._jit import jit
from .tables import (BIAS_AFFINE, BIAS_MUSCLE, DYN_FILTER, DYN_FILTEREXACT, DYN_INTEGRATOR, DYN_MUSCLE,
                     DYN_NONE, GAIN_AFFINE, GAIN_MUSCLE)

MINVAL = 1e-15


@jit(forceinline=True)
def _clip(x, lo, hi):
    return lo if x < lo else (hi if x > hi else x)


@jit(forceinline=True)
def muscle_gain_length(L, lmin, lmax):
    """MuJoCo's normalised active force-length curve (``mju_muscleGainLength``)."""
    if L < lmin or L > lmax:
        return 0.0
    a = 0.5 * (lmin + 1.0)
    b = 0.5 * (1.0 + lmax)
    if L <= a:
        x = (L - lmin) / max(MINVAL, a - lmin)
        return 0.5 * x * x
    if L <= 1.0:
        x = (1.0 - L) / max(MINVAL, 1.0 - a)
        return 1.0 - 0.5 * x * x
    if L <= b:
        x = (L - 1.0) / max(MINVAL, b - 1.0)
        return 1.0 - 0.5 * x * x
    x = (lmax - L) / max(MINVAL, lmax - b)
    return 0.5 * x * x


@jit(forceinline=True)
def _muscle_scale(prm, acc0, lr0, lr1):
    force = prm[2]
    if force < 0.0:
        force = prm[3] / max(MINVAL, acc0)
    L0 = (lr1 - lr0) / max(MINVAL, prm[1] - prm[0])
    return force, L0


@jit(forceinline=True)
def muscle_gain(length, vel, lr0, lr1, acc0, prm):
    """MuJoCo's ``mju_muscleGain``."""
    force, L0 = _muscle_scale(prm, acc0, lr0, lr1)
    L = prm[0] + (length - lr0) / max(MINVAL, L0)
    V = vel / max(MINVAL, L0 * prm[6])
    FL = muscle_gain_length(L, prm[4], prm[5])
    fvmax = prm[8]
    y = fvmax - 1.0
    if V <= -1.0:
        FV = 0.0
    elif V <= 0.0:
        FV = (V + 1.0) * (V + 1.0)
    elif V <= y:
        FV = fvmax - (y - V) * (y - V) / max(MINVAL, y)
    else:
        FV = fvmax
    return -force * FL * FV


@jit(forceinline=True)
def muscle_bias(length, lr0, lr1, acc0, prm):
    """MuJoCo's ``mju_muscleBias``."""
    force, L0 = _muscle_scale(prm, acc0, lr0, lr1)
    L = prm[0] + (length - lr0) / max(MINVAL, L0)
    b = 0.5 * (1.0 + prm[5])
    fpmax = prm[7]
    if L <= 1.0:
        return 0.0
    if L <= b:
        x = (L - 1.0) / max(MINVAL, b - 1.0)
        return -force * fpmax * 0.5 * x * x
    x = (L - b) / max(MINVAL, b - 1.0)
    return -force * fpmax * (0.5 + x)


@jit(forceinline=True)
def _sigmoid(x):
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    return x * x * x * (3.0 * x * (2.0 * x - 5.0) + 10.0)


@jit(forceinline=True)
def muscle_dynamics(ctrl, act, prm):
    """MuJoCo's ``mju_muscleDynamics``: d act / dt."""
    c = _clip(ctrl, 0.0, 1.0)
    a = _clip(act, 0.0, 1.0)
    tau_act = prm[0] * (0.5 + 1.5 * a)
    tau_deact = prm[1] / (0.5 + 1.5 * a)
    width = prm[2]
    dctrl = c - act
    if width < MINVAL:
        tau = tau_act if dctrl > 0.0 else tau_deact
    else:
        tau = tau_deact + (tau_act - tau_deact) * _sigmoid(dctrl / width + 0.5)
    return dctrl / max(MINVAL, tau)


@jit(forceinline=True)
def act_rate(dyntype, prm, ctrl, act):
    """d act / dt of one actuator's (last) activation."""
    if dyntype == DYN_INTEGRATOR:
        return ctrl
    if dyntype == DYN_FILTER or dyntype == DYN_FILTEREXACT:
        return (ctrl - act) / max(MINVAL, prm[0])
    if dyntype == DYN_MUSCLE:
        return muscle_dynamics(ctrl, act, prm)
    return 0.0


@jit(forceinline=True)
def actuator_force_one(a, i, length, vel, ctrl, act, act_dot):
    """The force of actuator i (before the force range) from its length, velocity, clamped
    control and activations (``a``: the actuation's views)."""
    dyn = a.actuator_dyntype[i]
    gt = a.actuator_gaintype[i]
    gp = a.actuator_gainprm[i]
    if gt == GAIN_AFFINE:
        gain = gp[0] + gp[1] * length + gp[2] * vel
    elif gt == GAIN_MUSCLE:
        gain = muscle_gain(length, vel, a.actuator_lengthrange[i, 0], a.actuator_lengthrange[i, 1],
                           a.actuator_acc0[i], gp)
    else:
        gain = gp[0]
    if dyn == DYN_NONE or a.actuator_actadr[i] < 0:
        x = ctrl
    else:
        k = a.actuator_actadr[i] + a.actuator_actnum[i] - 1
        x = act[k]
        if a.actuator_actearly[i] != 0:
            h = a.opt_timestep[0]
            if dyn == DYN_FILTEREXACT:
                tau = max(MINVAL, a.actuator_dynprm[i, 0])
                x = x + act_dot[k] * tau * (1.0 - np.exp(-h / tau))
            else:
                x = x + act_dot[k] * h
            if a.actuator_actlimited[i] != 0:
                x = _clip(x, a.actuator_actrange[i, 0], a.actuator_actrange[i, 1])
    f = gain * x
    bt = a.actuator_biastype[i]
    bp = a.actuator_biasprm[i]
    if bt == BIAS_AFFINE:
        f += bp[0] + bp[1] * length + bp[2] * vel
    elif bt == BIAS_MUSCLE:
        f += muscle_bias(length, a.actuator_lengthrange[i, 0], a.actuator_lengthrange[i, 1], a.actuator_acc0[i], bp)
    if a.actuator_forcelimited[i] != 0:
        f = _clip(f, a.actuator_forcerange[i, 0], a.actuator_forcerange[i, 1])
    return f
