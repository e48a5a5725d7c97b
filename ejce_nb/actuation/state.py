"""The actuation of one state, compiled: ``actuation_forces`` (the contract every integrator
calls), and the entries of ``ej.actuation`` and ``ej.forward_dynamics`` (one state, a batch).

``actuation_forces(ab, ib, eb, m, r, q, v, ctrl, act, t, work, qfrc, act_dot)`` -> (status, index),
after the forward sweep of (q, v, t) with world frames (``kinematics.forward`` at level >= 1):

    qfrc = qfrc_actuator + qfrc_tendon + qfrc_gravcomp (the part not routed to the actuators)

with qfrc_actuator = actuator_moment^T actuator_force (+ gravity compensation of joints with
``actuatorgravcomp``, then clamped per joint where ``actfrclimited``), qfrc_tendon the tendons'
springs and dampers (``tendons``), qfrc_gravcomp = sum_b J_b^T (-gravcomp_b m_b g) at each body's
centre of mass; the OpenSim elements' generalised forces (``elements.add_element_forces_split``,
nothing for eb None) are in it too: their actuators' in qfrc_actuator, the other elements' in
qfrc_tendon (the passive side).  The joints' own damping and springs are not included (``simulate`` and
``forward_dynamics`` add them).  act_dot (na) is MuJoCo's activation rate (``mujoco_forces``).
``ab`` is a float64 array, or a 1-tuple of it for an actuation with sites or spatial tendons
(``Actuation.packed``): only those compile the geometry (sites' frames, spatial paths and
wrapping, site and slider-crank transmissions).  ``work`` is a float64 scratch of ``Actuation.work_size()`` entries (its named views,
``views.work_view``, hold every intermediate: ten_length, ten_J, actuator_moment, ...).
Status 0 = ok; ``NONFINITE_INPUT`` with index -1 where ctrl or act holds NaN or inf;
``BAD_SHAPE`` where act has the wrong length; an element's status and index where its
force is not finite.
"""
import numpy as np
from numba import types
from numba.extending import overload

from .._jit import jit
from ..algorithms.aba import aba_solve
from ..algorithms.kinematics import forward
from ..core.spatial import add, mv
from ..errors import BAD_SHAPE
from ..model import inputs
from ..model.layout import model_view, record_view, scratch_view
from .mujoco_forces import _clip, act_rate, actuator_force_one
from .points import add_wrench, body_frame, placed
from .tables import (F_ACTUATION, F_CLAMPCTRL, F_GRAVCOMP, H_WORLD, JNT_HINGE, JNT_SLIDE, TRN_JOINT,
                     TRN_JOINTINPARENT, WRAP_CYLINDER, WRAP_SPHERE)
from .tendons import act_view_of, geometric, tendon_passive, tendon_state
from .transmission import transmission
from .views import work_view

from .elements import add_element_forces_split

NONFINITE = inputs.NONFINITE
LEVEL1 = np.int64(1)
NO_FORCE = np.zeros((0, 1, 6))


@jit(forceinline=True)
def frames(a, m, r, w):
    """World frames of the sites (``w.site_xpos``, ``site_xmat``) and of the geoms that tendons
    wrap around (``w.wrap_xpos``, ``wrap_xmat``); body 0 is the world."""
    nsite = a.site_bodyid.shape[0]
    nwrap = a.wrap_type.shape[0]
    for h in range(nsite + nwrap):
        k = h if h < nsite else h - nsite
        if h >= nsite and a.wrap_type[k] != WRAP_SPHERE and a.wrap_type[k] != WRAP_CYLINDER:
            continue
        b = a.site_bodyid[k] if h < nsite else a.wrap_geombody[k]
        if b == 0:
            R, p = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0), (0.0, 0.0, 0.0)
        else:
            R, p = body_frame(m, r, b)
        S = a.site_mat[k] if h < nsite else a.wrap_geommat[k]
        x = a.site_pos[k] if h < nsite else a.wrap_geompos[k]
        Rs, ps = placed(R, p, S, x)
        X = w.site_xmat if h < nsite else w.wrap_xmat
        P = w.site_xpos if h < nsite else w.wrap_xpos
        for c in range(9):
            X[k, c] = Rs[c]
        for c in range(3):
            P[k, c] = ps[c]


def frames_if(ab, a, m, r, w):
    """``frames`` where the actuation has geometry (``tendons.geometric``), else nothing."""
    if geometric(ab):
        frames(a, m, r, w)


@overload(frames_if, jit_options={"forceinline": True})
def _frames_if(ab, a, m, r, w):
    if isinstance(ab, types.BaseTuple):
        return lambda ab, a, m, r, w: frames(a, m, r, w)
    return lambda ab, a, m, r, w: None


@jit(forceinline=True)
def actuation_forces(ab, ib, eb, m, r, q, v, ctrl, act, t, work, qfrc, act_dot):
    """qfrc (nv) and act_dot (na) of one state (see the module's docstring)."""
    a = act_view_of(ab, ib)
    w = work_view(ib, work)
    nu = a.actuator_trntype.shape[0]
    na = act_dot.shape[0]
    nv = qfrc.shape[0]
    if act.shape[0] != na:
        return BAD_SHAPE, -1
    for k in range(ctrl.shape[0]):
        if not np.isfinite(ctrl[k]):
            return NONFINITE, -1
    for k in range(na):
        if not np.isfinite(act[k]):
            return NONFINITE, -1
    for k in range(na):
        act_dot[k] = 0.0
    for k in range(nv):
        w.qfrc_actuator[k] = 0.0
        w.qfrc_gravcomp[k] = 0.0
    # tendons, transmissions (lengths, moments, velocities)
    K = (m.body_parent, m.jnt_dofadr, m.jnt_nv, r.RC, r.oC, r.S)
    frames_if(ab, a, m, r, w)
    tendon_state(ab, a, K, w, q, v)
    transmission(ab, a, K, w, q, v)
    if a.opt_flags[F_ACTUATION] != 0:
        clamp = a.opt_flags[F_CLAMPCTRL] != 0
        for i in range(nu):
            c = ctrl[i]
            if clamp and a.actuator_ctrllimited[i] != 0:
                c = _clip(c, a.actuator_ctrlrange[i, 0], a.actuator_ctrlrange[i, 1])
            w.ctrl[i] = c
        for i in range(nu):
            k = a.actuator_actadr[i]
            if k >= 0:
                k += a.actuator_actnum[i] - 1
                act_dot[k] = act_rate(a.actuator_dyntype[i], a.actuator_dynprm[i], w.ctrl[i], act[k])
        for i in range(nu):
            f = actuator_force_one(a, i, w.actuator_length[i], w.actuator_velocity[i], w.ctrl[i], act, act_dot)
            w.actuator_force[i] = f
            trn = a.actuator_trntype[i]
            jt = a.actuator_jnttype[i]
            if (trn == TRN_JOINT or trn == TRN_JOINTINPARENT) and (jt == JNT_HINGE or jt == JNT_SLIDE):
                # one nonzero moment arm: gear[0] at the joint's velocity variable
                da = a.actuator_dofadr[i]
                w.qfrc_actuator[da] += w.actuator_moment[i, da] * f
            else:
                for k in range(nv):
                    w.qfrc_actuator[k] += w.actuator_moment[i, k] * f
    else:
        for i in range(nu):
            w.ctrl[i] = ctrl[i]
            w.actuator_force[i] = 0.0
    # gravity compensation: -gravcomp m g at each centre of mass
    if a.opt_flags[F_GRAVCOMP] != 0:
        g = m.gravity
        for i in range(1, a.body_gravcomp.shape[0]):
            gc = a.body_gravcomp[i]
            if gc != 0.0:
                s = -gc * m.body_mass[i]
                R, p = body_frame(m, r, i)
                xw = add(p, mv(R, (a.body_ipos[i, 0], a.body_ipos[i, 1], a.body_ipos[i, 2])))
                add_wrench(K[0], K[1], K[2], K[3], K[4], K[5], i, xw, (s * g[0], s * g[1], s * g[2]),
                           (0.0, 0.0, 0.0), 1.0, w.qfrc_gravcomp)
    tendon_passive(a, w)
    # the OpenSim elements: actuators' forces with the actuators', the others with the passive ones
    st, j = add_element_forces_split(eb, m, r, q, v, ctrl, t, w.qfrc_actuator, w.qfrc_tendon)
    if st != 0:
        return st, j
    for k in range(nv):
        if a.dof_actgravcomp[k] != 0 and a.opt_flags[F_ACTUATION] != 0:
            w.qfrc_actuator[k] += w.qfrc_gravcomp[k]
        if a.dof_actfrclimited[k] != 0:
            w.qfrc_actuator[k] = _clip(w.qfrc_actuator[k], a.dof_actfrcrange[k, 0], a.dof_actfrcrange[k, 1])
        qk = w.qfrc_actuator[k] + w.qfrc_tendon[k]
        if a.dof_actgravcomp[k] == 0:
            qk += w.qfrc_gravcomp[k]
        qfrc[k] = qk
    return 0, -1


@jit(forceinline=True)
def joint_passive(pb, q, v, qfrc):
    """qfrc += -damping qd - stiffness (q - springref) per velocity variable (``pb``: damping,
    stiffness, springref and the coordinate of each velocity variable, -1 where none, nv each)."""
    nv = qfrc.shape[0]
    for k in range(nv):
        f = -pb[k] * v[k]
        c = int(pb[3 * nv + k])
        if c >= 0 and pb[nv + k] != 0.0:
            f -= pb[nv + k] * (q[c] - pb[2 * nv + k])
        qfrc[k] += f


@jit(forceinline=True)
def state_step(m, r, s, ab, ib, eb, pb, q, v, ctrl, act, tau, t, full, work, qfrc, act_dot, qdd, fd):
    """One state: the input check, the forward sweep (twists; world frames where the actuation
    reads them), the actuation; with ``fd`` also the forward dynamics M qdd = tau + qfrc + joint
    passive forces - c."""
    st, j = inputs.check(m, q, v, v, LEVEL1, t)
    if st != 0:
        return st, j
    forward(m, r, s, q, v, s.zv, t, LEVEL1, ib[H_WORLD] != 0, full)
    st, j = actuation_forces(ab, ib, eb, m, r, q, v, ctrl, act, t, work, qfrc, act_dot)
    if st != 0:
        return st, j
    if fd:
        nv = qfrc.shape[0]
        for k in range(nv):
            if not np.isfinite(tau[k]):
                return NONFINITE, -1
        tt = s.tq
        for k in range(nv):
            tt[k] = qfrc[k] + tau[k]
        joint_passive(pb, q, v, tt)
        st, j = aba_solve(m, r, s, tt, NO_FORCE, np.int64(0), qdd)
    return st, j


@jit
def chunk_states(mb, R, S, full, ab, ib, eb, pb, Q, V, C, A, TAU, T, WORK, QFRC, ADOT, QDD, fd, status, c, nchunk):
    """The states of chunk c of nchunk, one by one on the chunk's workspace (row c of R and S):
    the actuation of each, and with ``fd`` its forward dynamics into QDD.  One compiled kernel
    serves one state (c = 0, nchunk = 1) and a batch, whose chunks run on threads
    (``workspaces.run_chunks``); each state's result is that of a lone call."""
    B = Q.shape[0]
    m = model_view(mb)
    s = scratch_view(mb, S[c], 0)
    r = record_view(mb, R[c], 0)
    # WORK: one scratch per state (its results are wanted), or one per chunk
    own = WORK.shape[0] == B
    for b in range(c * B // nchunk, (c + 1) * B // nchunk):
        st, j = state_step(m, r, s, ab, ib, eb, pb, Q[b], V[b], C[b], A[b], TAU[b], T[b], full,
                           WORK[b if own else c], QFRC[b], ADOT[b], QDD[b], fd)
        status[b, 0] = st
        status[b, 1] = j
