"""Time integration of the forward dynamics,

    q' = N(q) u,    u' = aba(q, u, tau(t, q, u) + tau_passive, t),
    tau_passive = -damping u - stiffness (q - spring_ref),

in compiled time loops (``run``), for one trajectory or a batch of initial states in parallel.

The configuration moves on its manifold: the tangent space has dimension nv; a coordinate whose
rate is its velocity variable moves by it, a unit quaternion by a rotation vector th at its joint's
three angular velocity variables u (C axes, q' = 1/2 q (x) (0, u)): q (+) th = q (x) Exp(th)
(``ejce.retract``).  Runge-Kutta methods run in that chart (Runge-Kutta-Munthe-Kaas): stage j sits
at q (+) Delta_j, Delta_j = h sum_l a_jl K_l, with the stage rate K_j = dexpinv(Delta_j) u_j
(``ejce.tangent_rates``); the step ends at q (+) h sum_j b_j K_j.  Quaternions thus stay unit
(renormalised against rounding only), and every method keeps its order.

Methods (``METHODS``):
  "euler", "rk2" (midpoint), "rk4"   explicit Runge-Kutta, fixed step, orders 1, 2, 4;
  "symplectic"                       semi-implicit (symplectic) Euler: u+ = u + h aba(q, u, t),
                                     q+ = q (+) h u+; order 1; symplectic for a constant mass matrix
                                     and forces from a potential (a pendulum's energy error stays
                                     bounded: no secular drift); with a configuration-dependent mass
                                     matrix, damping or torques it is a first-order explicit method;
  "dopri5"                           Dormand-Prince 5(4): FSAL, PI step-size control on the RMS of the
                                     embedded error of the tangent increment and the velocities,
                                     scaled by atol + rtol |y| (a quaternion's rotation counts
                                     against 1 rad); its quartic continuous extension gives the
                                     state at the recording times.

Time is explicit everywhere: stage j of the step from t_n = n dt is evaluated at t_n + c_j dt
(rheonomic joints see the right time), fixed-step times are computed as n dt, never accumulated.

The loop runs in segments so that Python can report progress; an integrator's whole state (for
"dopri5" the time, step size, controller memory and the FSAL derivative) is carried between
segments, so the segmentation changes no bit of the result, and a batch equals its trajectories
run one by one, bitwise.  A trajectory stops on a non-finite state, a singular step (``aba``'s
status: gimbal lock, massless subtree), an energy blow-up (|T + V| beyond ``max_energy``, checked
at the recorded states), a non-finite control output or (dopri5) a step size that underflows;
what it had recorded is kept.
"""
import enum
import json
import math
import numbers
import os
import time

import numpy as np
from numba import types
from numba.extending import overload

from ..algorithms import engine
from ..model import inputs, layout
from .._jit import jit
from ..algorithms.aba import aba_state
from .control import ControlLaw, call_law
from ..model.couplers import MAX_IND, expand_state
from ..algorithms.crba import _chol_solve, crba_checked
from ..core.ejce import retract, tangent_rates
from ..algorithms.energy import energy_state
from ..errors import SingularJointError
from ..model.layout import model_view, record_view, rows, scratch_view, vec
from ..algorithms.driver import _NO_FORCE
from ..algorithms.rnea import rnea_state

METHODS = ("euler", "rk2", "rk4", "symplectic", "dopri5")


class SimulationStatus(enum.IntEnum):
    """Why a trajectory stopped (0: it reached t_final).  The singular codes are those of ej.Status."""
    OK = 0
    SINGULAR_JOINT = 3                  # a joint's Jacobian lost rank (gimbal lock)
    SINGULAR_ARTICULATED_INERTIA = 4    # no inertia along a joint's motion (massless subtree)
    SINGULAR_MASS_MATRIX = 5            # (models with couplers) the mass matrix is singular
    NONFINITE_STATE = 10                # q or qd became NaN or inf: the integration diverged
    NONFINITE_TORQUE = 11               # the control law returned NaN or inf
    ENERGY_BLOWUP = 12                  # |T + V| exceeded max_energy at a recorded state
    STEP_SIZE_UNDERFLOW = 13            # dopri5: the step size fell below rounding of t
    INTERRUPTED = 14                    # the run was interrupted (Ctrl-C, SIGINT) before t_final


_ST_NONFINITE = int(SimulationStatus.NONFINITE_STATE)
_ST_TORQUE = int(SimulationStatus.NONFINITE_TORQUE)
_ST_ENERGY = int(SimulationStatus.ENERGY_BLOWUP)
_ST_UNDERFLOW = int(SimulationStatus.STEP_SIZE_UNDERFLOW)
_ST_INTERRUPTED = int(SimulationStatus.INTERRUPTED)

# the joint limits' law (``limits=True``): MuJoCo's default solref, a time constant of 0.02 s and
# a damping ratio of 1 (critical damping)
LIMIT_TIME_CONSTANT = 0.02
LIMIT_DAMPING_RATIO = 1.0

# default energy threshold: this many times the initial max(|T|, |V|, 1 J)
ENERGY_FACTOR = 1e6

# ---------------------------------------------------------------------------- tableaux
_DP_A = np.zeros((7, 7))
_DP_A[1, :1] = [1 / 5]
_DP_A[2, :2] = [3 / 40, 9 / 40]
_DP_A[3, :3] = [44 / 45, -56 / 15, 32 / 9]
_DP_A[4, :4] = [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729]
_DP_A[5, :5] = [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656]
_DP_A[6, :6] = [35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84]
_DP_B = _DP_A[6].copy()
_DP_C = np.array([0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0])
# b - b_hat (the embedded fourth-order solution), for the error estimate
_DP_E = np.array([-71 / 57600, 0.0, 71 / 16695, -71 / 1920, 17253 / 339200, -22 / 525, 1 / 40])
# continuous extension (Shampine's quartic): b_j(theta) = sum_p P[j, p] theta^(p+1)
_DP_P = np.array([
    [1.0, -8048581381 / 2820520608, 8663915743 / 2820520608, -12715105075 / 11282082432],
    [0.0, 0.0, 0.0, 0.0],
    [0.0, 131558114200 / 32700410799, -68118460800 / 10900136933, 87487479700 / 32700410799],
    [0.0, -1754552775 / 470086768, 14199869525 / 1410260304, -10690763975 / 1880347072],
    [0.0, 127303824393 / 49829197408, -318862633887 / 49829197408, 701980252875 / 199316789632],
    [0.0, -282668133 / 205662961, 2019193451 / 616988883, -1453857185 / 822651844],
    [0.0, 40617522 / 29380423, -110615467 / 29380423, 69997945 / 29380423]])


def _tableau(rows, b, c):
    A = np.zeros((7, 7))
    for k, row in enumerate(rows):
        A[k, :len(row)] = row
    bw = np.zeros(7)
    bw[:len(b)] = b
    cw = np.zeros(7)
    cw[:len(c)] = c
    return A, bw, cw, len(b)


TABLEAUX = {
    "euler": _tableau([[]], [1.0], [0.0]),
    "rk2": _tableau([[], [0.5]], [0.0, 1.0], [0.0, 0.5]),
    "rk4": _tableau([[], [0.5], [0.0, 0.5], [0.0, 0.0, 1.0]], [1 / 6, 1 / 3, 1 / 3, 1 / 6], [0.0, 0.5, 0.5, 1.0]),
    "symplectic": _tableau([[]], [1.0], [0.0]),
    "dopri5": (_DP_A, _DP_B, _DP_C, 7),
}

# ---------------------------------------------------------------------------- run parameters
# ip: integers of a run
IP_METHOD, IP_NS, IP_TAUMODE, IP_LAW, IP_PASSIVE, IP_NSTEPS, IP_PYLAW = range(7)
M_RK, M_SYMPLECTIC, M_DOPRI = 0, 1, 2
TAU_CONST, TAU_STEP, TAU_INTERVAL = 0, 1, 2
# fp: floats of a run
FP_DT, FP_TEND, FP_RTOL, FP_ATOL, FP_HMAX, FP_EMAX = range(6)
# CI[b]: a trajectory's carried integers
C_STEP, C_NEXT, C_STATUS, C_JOINT, C_NFEV, C_NREJ, C_FLAGS, C_FAILSTEP = range(8)
F_INIT, F_K1, F_REJECTED, F_DONE = 1, 2, 4, 8
# CF[b]: its carried floats
F_T, F_H, F_ERROLD, F_EMAX, F_TFAIL, F_HFAIL, F_EFAIL = range(7)

# the PI controller of Hairer's DOPRI5
_SAFETY = 0.9
_ALPHA = 0.17       # 1/5 - 0.75 beta
_BETA = 0.04
_FACMIN = 0.2
_FACMAX = 10.0
_EPS = 2.220446049250313e-16


# ---------------------------------------------------------------------------- compiled
@jit
def _forces(sc, q, v, t, row, law, prow, passive, DMP, STF, SREF, LIM, DOFQ):
    """sc.tq = joint forces of a stage: the law's (at t, q, v), the input row and the passive
    ones (damping, springs, joint limits); returns the first velocity variable whose law output
    is not finite, or -1."""
    nv = v.shape[0]
    tq = sc.tq
    if law != 0:
        for k in range(nv):
            tq[k] = 0.0
        call_law(law, t, q, v, prow, tq)
        for k in range(nv):
            if not np.isfinite(tq[k]):
                return k
        for k in range(nv):
            tq[k] += row[k]
    else:
        for k in range(nv):
            tq[k] = row[k]
    if passive:
        for k in range(nv):
            x = tq[k] - DMP[k] * v[k]
            c = DOFQ[k]
            if c >= 0:
                if STF[k] != 0.0:
                    x -= STF[k] * (q[c] - SREF[k])
                x += _limit_force(q[c], v[k], LIM, k)
            tq[k] = x
    return -1


@jit(inline="always")
def _limit_force(x, u, LIM, k):
    """The force of the limits of coordinate x (rate u) on it: a one-sided spring-damper,
    stiffness LIM[k, 2] and damping LIM[k, 3], below LIM[k, 0] or above LIM[k, 1], that only
    pushes back (``limit_torques``)."""
    if x < LIM[k, 0]:
        f = LIM[k, 2] * (LIM[k, 0] - x) - LIM[k, 3] * u
        return f if f > 0.0 else 0.0
    if x > LIM[k, 1]:
        f = LIM[k, 2] * (x - LIM[k, 1]) + LIM[k, 3] * u
        return -f if f > 0.0 else 0.0
    return 0.0


# ---------------------------------------------------------------------------- the dynamics of a stage
# A model with couplers integrates its own coordinates q (nq, nv) while the kernels run on its
# expansion (``Model.expanded()``): q_full = phi(q), v_full = G v, and
#     G^T M_full G qdd = tau - G^T rnea_full(q_full, v_full, Gdot v)
# (``couplers``), solved by Cholesky.  ``cp`` is None for a model without couplers, else the
# coupler tables and the chunk's workspace (``_coupling_views``): the two kinds of model compile
# separate versions of the loop, and a model without couplers compiles none of this.
def _dynamics(cp, m, r, s, q, v, tau, t, F, fb, DOFJ, qdd):
    """qdd of one state into qdd; returns (status, joint)."""
    raise NotImplementedError("compiled code only")


def _energy(cp, m, r, s, q, v, t):
    """(T, V of gravity) of one state into s.e5[0:2]."""
    raise NotImplementedError("compiled code only")


def _coupling_views(cpl, c):
    """None, or chunk c's coupler tables and workspace: (own_q, own_v, cq, cv, cnind, cind_q,
    cind_v, cfadr, cscale, params, qf, vf, af, G, qi, vi, Mf, T, Mr, hf, rhs, za)."""
    raise NotImplementedError("compiled code only")


@overload(_dynamics)
def _dynamics_impl(cp, m, r, s, q, v, tau, t, F, fb, DOFJ, qdd):
    if isinstance(cp, types.NoneType):
        def plain(cp, m, r, s, q, v, tau, t, F, fb, DOFJ, qdd):
            # flags and levels as run-time values: a literal argument would compile another
            # version of aba_state and of the whole forward sweep under it
            return aba_state(m, r, s, q, v, tau, t, F, fb, s.flags[0] != 0.0, qdd)
        return plain

    def coupled(cp, m, r, s, q, v, tau, t, F, fb, DOFJ, qdd):
        return _coupled_accel(cp, m, r, s, q, v, tau, t, F, fb, DOFJ, qdd)
    return coupled


@overload(_energy)
def _energy_impl(cp, m, r, s, q, v, t):
    if isinstance(cp, types.NoneType):
        def plain(cp, m, r, s, q, v, t):
            energy_state(m, r, s, q, v, t, _level1(m), s.flags[0] != 0.0, s.e5)
        return plain

    def coupled(cp, m, r, s, q, v, t):
        own_q, own_v, cq, cv, cnind, cind_q, cind_v, cfadr, cscale, params, qf, vf, af, G, qi, vi = cp[:16]
        one = _level1(m)
        expand_state(own_q, own_v, cq, cv, cnind, cind_q, cind_v, cfadr, cscale, params, q, v, cp[21], one,
                     qi, vi, qf, vf, af, G)
        energy_state(m, r, s, qf, vf, t, one, s.flags[0] != 0.0, s.e5)
    return coupled


@overload(_coupling_views)
def _coupling_views_impl(cpl, c):
    if isinstance(cpl, types.NoneType):
        return lambda cpl, c: None

    def views(cpl, c):
        own_q, own_v, cq, cv, cnind, cind_q, cind_v, cfadr, cscale, params, CWF = cpl
        w = CWF[c]
        nv = own_v.shape[0]
        nqf = own_q.shape[0] + cq.shape[0]
        nvf = nv + cv.shape[0]
        o = 0
        qf = vec(w, o, nqf)
        o += nqf
        vf = vec(w, o, nvf)
        o += nvf
        af = vec(w, o, nvf)
        o += nvf
        G = rows(w, o, nvf, nv)
        o += nvf * nv
        qi = vec(w, o, MAX_IND)
        o += MAX_IND
        vi = vec(w, o, MAX_IND)
        o += MAX_IND
        Mf = rows(w, o, nvf, nvf)
        o += nvf * nvf
        T = rows(w, o, nvf, nv)
        o += nvf * nv
        Mr = rows(w, o, nv, nv)
        o += nv * nv
        hf = vec(w, o, nvf)
        o += nvf
        rhs = vec(w, o, nv)
        o += nv
        za = vec(w, o, nv)
        return (own_q, own_v, cq, cv, cnind, cind_q, cind_v, cfadr, cscale, params, qf, vf, af, G, qi, vi, Mf, T,
                Mr, hf, rhs, za)
    return views


def _coupling_size(nqf, nvf, nv):
    """Entries of one chunk's coupled workspace (``_coupling_views``)."""
    return nqf + 3 * nvf + 2 * nvf * nv + 2 * MAX_IND + nvf * nvf + nv * nv + 2 * nv


@jit
def _coupled_accel(cp, m, r, s, q, v, tau, t, F, fb, DOFJ, qdd):
    """qdd of a model with couplers: M = G^T M_full G (``crba_checked`` on the expansion),
    h = G^T rnea_full(q_full, v_full, Gdot v), M qdd = tau - h by Cholesky (``_chol_solve``);
    the statuses of ``forward_dynamics_crba``."""
    own_q, own_v, cq, cv, cnind, cind_q, cind_v, cfadr, cscale, params, qf, vf, af, G, qi, vi, Mf, T, Mr, hf, rhs, za \
        = cp
    full = s.flags[0] == 0.0        # every joint path compiled (``ejce.joint_position``)
    two = _level1(m) + 1
    # a_full = G 0 + Gdot v: the bias of the expansion's accelerations
    expand_state(own_q, own_v, cq, cv, cnind, cind_q, cind_v, cfadr, cscale, params, q, v, za, two, qi, vi, qf, vf, af,
                 G)
    rnea_state(m, r, s, qf, vf, af, t, F, fb, full, hf)
    code, joint = crba_checked(m, r, s, qf, t, full, Mf)
    if code != 0 and code != inputs.NEAR_SINGULAR:
        return code, joint
    nvf = G.shape[0]
    nv = G.shape[1]
    # T = M_full G, M = G^T T, rhs = tau - G^T h_full; G is mostly zeros (rows of the identity)
    for x in range(nvf):
        for b in range(nv):
            T[x, b] = 0.0
    for k in range(nvf):
        for b in range(nv):
            g = G[k, b]
            if g != 0.0:
                for x in range(nvf):
                    T[x, b] += Mf[x, k] * g
    for a in range(nv):
        rhs[a] = tau[a]
        for b in range(nv):
            Mr[a, b] = 0.0
    for k in range(nvf):
        for a in range(nv):
            g = G[k, a]
            if g != 0.0:
                rhs[a] -= g * hf[k]
                for b in range(nv):
                    Mr[a, b] += g * T[k, b]
    col = _chol_solve(Mr, rhs, qdd, 1e-13)
    if col >= 0:
        return inputs.SINGULAR_MASS, DOFJ[col]
    return code, joint


@jit
def _accel(m, r, s, sc, cp, q, v, t, row, law, prow, passive, DMP, STF, SREF, LIM, DOFQ, DOFJ, F, fb, qdd):
    """qdd at a stage; returns (status, joint)."""
    bad = _forces(sc, q, v, t, row, law, prow, passive, DMP, STF, SREF, LIM, DOFQ)
    if bad >= 0:
        return _ST_TORQUE, DOFJ[bad]
    code, joint = _dynamics(cp, m, r, s, q, v, sc.tq, t, F, fb, DOFJ, qdd)
    if code == inputs.NEAR_SINGULAR:
        # near a lock the accelerations are computed (large, as the dynamics are there): go on;
        # at the lock itself the run stops
        return 0, -1
    return code, joint


@jit
def _stages(m, mc, r, s, sc, cp, q, v, t, h, A, cw, first, ns, row, law, prow, passive, DMP, STF, SREF, LIM, DOFQ,
            DOFJ, F, fb):
    """Stages first..ns-1 of an explicit RKMK step of size h from (q, v, t): rates sc.KQ[j],
    accelerations sc.KV[j]; the last stage's state stays in sc.qx, sc.vx.  Returns (status, joint,
    the time of the stage that failed)."""
    nv = v.shape[0]
    KQ = sc.KQ
    KV = sc.KV
    qs = sc.qx
    vs = sc.vx
    dq = sc.dq
    for st in range(first, ns):
        for k in range(nv):
            d = 0.0
            x = v[k]
            for j in range(st):
                a = A[st, j]
                if a != 0.0:
                    d += a * KQ[j, k]
                    x += h * a * KV[j, k]
            dq[k] = h * d
            vs[k] = x
        retract(mc, q, dq, qs)
        ts = t + cw[st] * h
        code, joint = _accel(m, r, s, sc, cp, qs, vs, ts, row, law, prow, passive, DMP, STF, SREF, LIM, DOFQ, DOFJ, F,
                             fb, KV[st])
        if code != 0:
            return code, joint, ts
        tangent_rates(mc, dq, vs, KQ[st])
    return 0, -1, t


@jit
def _nonfinite_joint(q, v, COORDJ, DOFJ):
    """The joint of the first non-finite entry of (q, v), -2 if there is none (-1: the world)."""
    for k in range(q.shape[0]):
        if not np.isfinite(q[k]):
            return COORDJ[k]
    for k in range(v.shape[0]):
        if not np.isfinite(v[k]):
            return DOFJ[k]
    return -2


@jit(inline="always")
def _level1(m):
    """The integer 1 as a run-time value (see ``_accel``)."""
    n1 = m.body_parent.shape[0]
    return n1 - n1 + 1


@jit
def _energies(m, r, s, cp, q, v, t, STF, SREF, DOFQ):
    """(T, V) of a state, V with the joint springs' 1/2 k (q - q_ref)^2."""
    _energy(cp, m, r, s, q, v, t)
    pot = s.e5[1]
    for k in range(STF.shape[0]):
        c = DOFQ[k]
        if c >= 0 and STF[k] != 0.0:
            d = q[c] - SREF[k]
            pot += 0.5 * STF[k] * d * d
    return s.e5[0], pot


@jit
def _record(m, r, s, cp, b, k, q, v, t, STF, SREF, DOFQ, Q, V, EK, EP):
    """Record state k of trajectory b; returns its total energy."""
    for x in range(q.shape[0]):
        Q[k, b, x] = q[x]
    for x in range(v.shape[0]):
        V[k, b, x] = v[x]
    kin, pot = _energies(m, r, s, cp, q, v, t, STF, SREF, DOFQ)
    EK[k, b] = kin
    EP[k, b] = pot
    return kin + pot


@jit
def _start(m, r, s, cp, b, q, v, t, fp, STF, SREF, DOFQ, CF):
    """The energy threshold of trajectory b from its initial state (unless one was given)."""
    if fp[FP_EMAX] > 0.0:
        CF[b, F_EMAX] = fp[FP_EMAX]
    else:
        kin, pot = _energies(m, r, s, cp, q, v, t, STF, SREF, DOFQ)
        CF[b, F_EMAX] = ENERGY_FACTOR * max(abs(kin), abs(pot), 1.0)


@jit(inline="always")
def _fail(CI, CF, b, code, joint, n, t, h, e):
    CI[b, C_STATUS] = code
    CI[b, C_JOINT] = joint
    CI[b, C_FAILSTEP] = n
    CF[b, F_TFAIL] = t
    CF[b, F_HFAIL] = h
    CF[b, F_EFAIL] = e


@jit(inline="always")
def _put_state(Q, V, b, q, v):
    """Row b of Q, V <- q, v (a trajectory's carried or failed state)."""
    for k in range(Q.shape[1]):
        Q[b, k] = q[k]
    for k in range(V.shape[1]):
        V[b, k] = v[k]


@jit(inline="always")
def _get_state(q, v, Q, V, b):
    """q, v <- row b of Q, V."""
    for k in range(Q.shape[1]):
        q[k] = Q[b, k]
    for k in range(V.shape[1]):
        v[k] = V[b, k]


@jit
def _advance_fixed(m, mc, r, s, sc, cp, b, ip, fp, A, BW, CW, RSTEP, TAU, tb, law, prow, DMP, STF, SREF, LIM, DOFQ, DOFJ,
                   COORDJ, F, fb, CQ, CV, CI, CF, FQ, FV, Q, V, EK, EP, budget):
    """Up to ``budget`` fixed steps of trajectory b from its carried state."""
    nq = CQ.shape[1]
    nv = CV.shape[1]
    q = sc.qt
    v = sc.vt
    _get_state(q, v, CQ, CV, b)
    dt = fp[FP_DT]
    nsteps = ip[IP_NSTEPS]
    method = ip[IP_METHOD]
    ns = ip[IP_NS]
    mode = ip[IP_TAUMODE]
    passive = ip[IP_PASSIVE] != 0
    nrec = RSTEP.shape[0]
    n = CI[b, C_STEP]
    nxt = CI[b, C_NEXT]
    if CI[b, C_FLAGS] & F_INIT == 0:
        _start(m, r, s, cp, b, q, v, 0.0, fp, STF, SREF, DOFQ, CF)
        CI[b, C_FLAGS] |= F_INIT
        if nxt < nrec and RSTEP[nxt] == n:
            E = _record(m, r, s, cp, b, nxt, q, v, n * dt, STF, SREF, DOFQ, Q, V, EK, EP)
            nxt += 1
            if not abs(E) <= CF[b, F_EMAX]:
                _fail(CI, CF, b, _ST_ENERGY, -1, n, n * dt, dt, E)
    end = min(nsteps, n + budget)
    KQ = sc.KQ
    KV = sc.KV
    qn = sc.qx
    vn = sc.vx
    dq = sc.dq
    while n < end and CI[b, C_STATUS] == 0:
        t = n * dt
        if mode == TAU_STEP:
            row = TAU[n, tb]
        elif mode == TAU_INTERVAL:
            row = TAU[max(nxt - 1, 0), tb]
        else:
            row = TAU[0, tb]
        if method == M_SYMPLECTIC:
            code, joint = _accel(m, r, s, sc, cp, q, v, t, row, law, prow, passive, DMP, STF, SREF, LIM, DOFQ, DOFJ,
                                 F, fb, KV[0])
            if code != 0:
                _put_state(FQ, FV, b, q, v)
                _fail(CI, CF, b, code, joint, n, t, dt, 0.0)
                break
            for k in range(nv):
                x = v[k] + dt * KV[0, k]
                vn[k] = x
                dq[k] = dt * x
            retract(mc, q, dq, qn)
        else:
            code, joint, ts = _stages(m, mc, r, s, sc, cp, q, v, t, dt, A, CW, ns - ns, ns, row, law, prow, passive,
                                      DMP, STF, SREF, LIM, DOFQ, DOFJ, F, fb)
            if code != 0:
                _put_state(FQ, FV, b, sc.qx, sc.vx)
                _fail(CI, CF, b, code, joint, n, ts, dt, 0.0)
                break
            for k in range(nv):
                d = 0.0
                x = 0.0
                for j in range(ns):
                    w = BW[j]
                    if w != 0.0:
                        d += w * KQ[j, k]
                        x += w * KV[j, k]
                dq[k] = dt * d
                vn[k] = v[k] + dt * x
            retract(mc, q, dq, qn)
        joint = _nonfinite_joint(qn, vn, COORDJ, DOFJ)
        if joint != -2:
            _put_state(FQ, FV, b, qn, vn)
            _fail(CI, CF, b, _ST_NONFINITE, joint, n, t, dt, 0.0)
            break
        for k in range(nq):
            q[k] = qn[k]
        for k in range(nv):
            v[k] = vn[k]
        n += 1
        if nxt < nrec and RSTEP[nxt] == n:
            E = _record(m, r, s, cp, b, nxt, q, v, n * dt, STF, SREF, DOFQ, Q, V, EK, EP)
            nxt += 1
            if not abs(E) <= CF[b, F_EMAX]:
                _fail(CI, CF, b, _ST_ENERGY, -1, n, n * dt, dt, E)
    _put_state(CQ, CV, b, q, v)
    CI[b, C_STEP] = n
    CI[b, C_NEXT] = nxt
    if n == nsteps:
        CI[b, C_FLAGS] |= F_DONE


@jit
def _error_norm(q, v, qn, vn, h, E, KQ, KV, DOFQ, rtol, atol):
    """RMS of the embedded error h sum_j e_j K_j (tangent increment, then velocities), each
    component over atol + rtol * its magnitude (a quaternion's rotation: 1 rad)."""
    nv = v.shape[0]
    if nv == 0:
        return 0.0
    acc = 0.0
    for k in range(nv):
        eq = 0.0
        ev = 0.0
        for j in range(7):
            e = E[j]
            if e != 0.0:
                eq += e * KQ[j, k]
                ev += e * KV[j, k]
        c = DOFQ[k]
        mq = max(abs(q[c]), abs(qn[c])) if c >= 0 else 1.0
        xq = h * eq / (atol + rtol * mq)
        xv = h * ev / (atol + rtol * max(abs(v[k]), abs(vn[k])))
        acc += xq * xq + xv * xv
    return math.sqrt(acc / (2 * nv))


@jit
def _dense(m, q, v, h, theta, P, KQ, KV, dq, qo, vo):
    """The state at t + theta h of the last step from (q, v): q (+) h sum_j b_j(theta) KQ_j."""
    t2 = theta * theta
    t3 = t2 * theta
    t4 = t3 * theta
    for k in range(v.shape[0]):
        d = 0.0
        x = 0.0
        for j in range(7):
            w = P[j, 0] * theta + P[j, 1] * t2 + P[j, 2] * t3 + P[j, 3] * t4
            if w != 0.0:
                d += w * KQ[j, k]
                x += w * KV[j, k]
        dq[k] = h * d
        vo[k] = v[k] + h * x
    retract(m, q, dq, qo)


@jit
def _advance_dopri(m, mc, r, s, sc, cp, b, ip, fp, A, CW, E, P, TREC, TAU, tb, law, prow, DMP, STF, SREF, LIM, DOFQ, DOFJ,
                   COORDJ, F, fb, CQ, CV, CA, CI, CF, FQ, FV, Q, V, EK, EP, budget):
    """Up to ``budget`` attempted Dormand-Prince steps of trajectory b from its carried state."""
    nq = CQ.shape[1]
    nv = CV.shape[1]
    q = sc.qt
    v = sc.vt
    _get_state(q, v, CQ, CV, b)
    KQ = sc.KQ
    KV = sc.KV
    qn = sc.qx
    vn = sc.vx
    tend = fp[FP_TEND]
    rtol = fp[FP_RTOL]
    atol = fp[FP_ATOL]
    hmax = fp[FP_HMAX]
    mode = ip[IP_TAUMODE]
    passive = ip[IP_PASSIVE] != 0
    ns = ip[IP_NS]
    nrec = TREC.shape[0]
    t = CF[b, F_T]
    h = CF[b, F_H]
    errold = CF[b, F_ERROLD]
    nxt = CI[b, C_NEXT]
    n = CI[b, C_STEP]
    if CI[b, C_FLAGS] & F_INIT == 0:
        _start(m, r, s, cp, b, q, v, t, fp, STF, SREF, DOFQ, CF)
        CI[b, C_FLAGS] |= F_INIT
        while nxt < nrec and TREC[nxt] == t:
            e0 = _record(m, r, s, cp, b, nxt, q, v, t, STF, SREF, DOFQ, Q, V, EK, EP)
            nxt += 1
            if not abs(e0) <= CF[b, F_EMAX]:
                _fail(CI, CF, b, _ST_ENERGY, -1, n, t, h, e0)
    if CI[b, C_FLAGS] & F_K1 != 0:
        for k in range(nv):
            KV[0, k] = CA[b, k]
    tries = 0
    while t < tend and tries < budget and CI[b, C_STATUS] == 0:
        tries += 1
        row = TAU[max(nxt - 1, 0), tb] if mode == TAU_INTERVAL else TAU[0, tb]
        if CI[b, C_FLAGS] & F_K1 == 0:
            code, joint = _accel(m, r, s, sc, cp, q, v, t, row, law, prow, passive, DMP, STF, SREF, LIM, DOFQ, DOFJ,
                                 F, fb, KV[0])
            CI[b, C_NFEV] += 1
            if code != 0:
                _put_state(FQ, FV, b, q, v)
                _fail(CI, CF, b, code, joint, n, t, h, 0.0)
                break
            CI[b, C_FLAGS] |= F_K1
        for k in range(nv):
            KQ[0, k] = v[k]
        # land exactly on t_final, and on each recording time when the torque changes there
        target = tend
        if mode == TAU_INTERVAL and nxt < nrec and TREC[nxt] < target:
            target = TREC[nxt]
        hh = min(h, hmax)
        landing = t + hh >= target
        if landing:
            hh = target - t
        if not hh > 16.0 * _EPS * max(abs(t), tend):
            _fail(CI, CF, b, _ST_UNDERFLOW, -1, n, t, hh, 0.0)
            break
        code, joint, ts = _stages(m, mc, r, s, sc, cp, q, v, t, hh, A, CW, ns - 6, ns, row, law, prow, passive, DMP,
                                  STF, SREF, LIM, DOFQ, DOFJ, F, fb)
        CI[b, C_NFEV] += 6
        if code != 0:
            _put_state(FQ, FV, b, sc.qx, sc.vx)
            _fail(CI, CF, b, code, joint, n, ts, hh, 0.0)
            break
        err = _error_norm(q, v, qn, vn, hh, E, KQ, KV, DOFQ, rtol, atol)
        if err <= 1.0:
            tn = target if landing else t + hh
            joint = _nonfinite_joint(qn, vn, COORDJ, DOFJ)
            if joint != -2:
                _put_state(FQ, FV, b, qn, vn)
                _fail(CI, CF, b, _ST_NONFINITE, joint, n, t, hh, 0.0)
                break
            while nxt < nrec and TREC[nxt] <= tn and CI[b, C_STATUS] == 0:
                tr = TREC[nxt]
                if tr == tn:
                    e1 = _record(m, r, s, cp, b, nxt, qn, vn, tr, STF, SREF, DOFQ, Q, V, EK, EP)
                else:
                    _dense(mc, q, v, hh, (tr - t) / hh, P, KQ, KV, sc.dq, FQ[b], FV[b])
                    e1 = _record(m, r, s, cp, b, nxt, FQ[b], FV[b], tr, STF, SREF, DOFQ, Q, V, EK, EP)
                nxt += 1
                if not abs(e1) <= CF[b, F_EMAX]:
                    _fail(CI, CF, b, _ST_ENERGY, -1, n + 1, tr, hh, e1)
            fac = _SAFETY * err ** (-_ALPHA) * errold ** _BETA
            fac = min(_FACMAX, max(_FACMIN, fac))
            if CI[b, C_FLAGS] & F_REJECTED != 0:
                fac = min(fac, 1.0)
                CI[b, C_FLAGS] &= ~F_REJECTED
            h = hh * fac
            errold = max(err, 1e-4)
            for k in range(nq):
                q[k] = qn[k]
            for k in range(nv):
                v[k] = vn[k]
                KV[0, k] = KV[6, k]
            # the last stage ran at t + hh; landing on a target may round that differently, and
            # a torque given per recorded time changes there: then K1 is not the last stage's
            if landing and (mode == TAU_INTERVAL or t + hh != tn):
                CI[b, C_FLAGS] &= ~F_K1
            t = tn
            n += 1
        else:
            CI[b, C_NREJ] += 1
            CI[b, C_FLAGS] |= F_REJECTED
            if err > 0.0:
                h = hh * max(_FACMIN, _SAFETY * err ** (-_ALPHA))
            else:
                h = hh * _FACMIN                  # err is NaN: a stage diverged, try a much smaller step
    _put_state(CQ, CV, b, q, v)
    for k in range(nv):
        CA[b, k] = KV[0, k]
    CF[b, F_T] = t
    CF[b, F_H] = h
    CF[b, F_ERROLD] = errold
    CI[b, C_STEP] = n
    CI[b, C_NEXT] = nxt
    if t >= tend:
        CI[b, C_FLAGS] |= F_DONE


@jit
def run_chunk(mb, R, S, mbc, SC, cpl, c, nchunk, ip, fp, A, BW, CW, E, P, RSTEP, TREC, TAU, LP, DMP, STF, SREF, LIM, DOFQ,
              DOFJ, COORDJ, F, CQ, CV, CA, CI, CF, FQ, FV, Q, V, EK, EP, budget):
    """Advance the unfinished trajectories of chunk c of nchunk by up to ``budget`` steps
    (dopri5: tries) each, one after the other, on the chunk's record R and scratch S.  Chunks
    run in parallel on Python threads (the kernel releases the GIL): a parallel-loop kernel of
    this size took Numba a quarter of a minute more to compile."""
    B = CQ.shape[0]
    method = ip[IP_METHOD]
    law = ip[IP_LAW]
    m = model_view(mb)
    r = record_view(mb, R, 0)
    s = scratch_view(mb, S, 0)
    mc = model_view(mbc)
    sc = scratch_view(mbc, SC, 0)
    cp = _coupling_views(cpl, c)
    for b in range(c * B // nchunk, (c + 1) * B // nchunk):
        if CI[b, C_STATUS] != 0 or CI[b, C_FLAGS] & F_DONE != 0:
            continue
        tb = b if TAU.shape[1] > 1 else 0
        prow = LP[b] if LP.shape[0] > 1 else LP[0]
        fb = b if F.shape[0] > 1 else 0
        if method == M_DOPRI:
            _advance_dopri(m, mc, r, s, sc, cp, b, ip, fp, A, CW, E, P, TREC, TAU, tb, law, prow, DMP, STF, SREF, LIM,
                           DOFQ, DOFJ, COORDJ, F, fb, CQ, CV, CA, CI, CF, FQ, FV, Q, V, EK, EP, budget)
        else:
            _advance_fixed(m, mc, r, s, sc, cp, b, ip, fp, A, BW, CW, RSTEP, TAU, tb, law, prow, DMP, STF, SREF, LIM,
                           DOFQ, DOFJ, COORDJ, F, fb, CQ, CV, CI, CF, FQ, FV, Q, V, EK, EP, budget)



# ---------------------------------------------------------------------------- Trajectory
def coordinate_names(model):
    """Names of q's entries (``Model.coordinate_names``)."""
    return list(model.coordinate_names)


def velocity_names(model):
    return _names(model, model.nv_joint)


def _names(model, counts):
    out = []
    for j in range(1, model.nbodies + 1):
        n = int(counts[j])
        name = model.joint_names[j]
        out += [name] if n == 1 else [f"{name}[{k}]" for k in range(n)]
    return out


class Trajectory:
    """A simulated trajectory (or batch of them), one row per recorded time.

    ``t`` (T,); ``q`` (T, [B,] nq); ``qd`` (T, [B,] nv); ``kinetic``, ``potential`` (gravity's,
    plus the joint springs' 1/2 stiffness (q - spring_ref)^2) and ``energy`` = kinetic + potential,
    (T, [B]).  ``status`` (an int, or (B,)): 0 when the
    trajectory reached the end, else its ``SimulationStatus``; ``steps``: steps taken (accepted
    steps for dopri5); ``stop_time``: the time of the last good state; ``message``: why it stopped
    ("" if it did not; a list for a batch).  Rows after a trajectory stopped are NaN; an
    interrupted run (``SimulationStatus.INTERRUPTED``) keeps only the rows it computed.
    ``limit_work``, ``damping_work``: the work of the joint limits and of the joint damping since
    t = 0 (T, [B]), so that E(t) - E(0) = limit_work + damping_work + the work of the joint forces
    tau and of time-driven joints.  ``info``:
    method, dt, record_every, tolerances, coordinate and velocity names, function evaluations
    (``nfev``) and rejected steps (``nrejected``, dopri5), wall time."""

    def __init__(self, t, q, qd, kinetic, potential, status=0, steps=None, stop_time=None, message="",
                 info=None):
        self.t = t
        self.q = q
        self.qd = qd
        self.kinetic = kinetic
        self.potential = potential
        self.energy = kinetic + potential
        self.status = status
        self.steps = steps
        self.stop_time = stop_time
        self.message = message
        self.info = dict(info or {})

    @property
    def batch(self):
        """The number of trajectories, or None for one."""
        return self.q.shape[1] if self.q.ndim == 3 else None

    def __len__(self):
        return len(self.t)

    def __repr__(self):
        what = "" if self.batch is None else f" x {self.batch} trajectories"
        st = ""
        if np.any(np.asarray(self.status) != 0):
            st = f", stopped: {np.count_nonzero(np.asarray(self.status))} of {self.batch or 1}"
        return f"<ej.Trajectory {len(self.t)} times{what}, {self.info.get('method', '?')}, q{self.q.shape}{st}>"

    @property
    def limit_work(self):
        """Work of the joint limits' forces since t = 0 (J; T, [B]) from the recorded states
        (``limit_work``); None when the run had no active limits."""
        lim = self.info.get("limit_table")
        if not lim:
            return None
        LIM = np.array(lim, dtype=np.float64).reshape(-1, 4)
        return limit_work(self.t, LIM, np.array(self.info["limit_coordinates"], dtype=np.int64), self.q, self.qd)

    @property
    def damping_work(self):
        """Work of the joint damping -damping qd since t = 0 (J, <= 0; T, [B]), trapezoid rule;
        None when the run had no damping."""
        d = self.info.get("damping")
        if not d or not np.any(np.asarray(d) != 0):
            return None
        return _cumulative_work(self.t, -np.sum(np.asarray(d) * self.qd * self.qd, axis=-1))

    def energy_drift(self):
        """max_t |E(t) - E(0)| / max(|E(0)|, max_t T(t)) (per trajectory; NaN rows ignored)."""
        with np.errstate(invalid="ignore"):
            d = np.nanmax(np.abs(self.energy - self.energy[:1]), axis=0)
            scale = np.maximum(np.abs(self.energy[0]), np.nanmax(np.abs(self.kinetic), axis=0))
            out = d / np.maximum(scale, np.finfo(float).tiny)
        return float(out) if np.ndim(out) == 0 else out

    # ------------------------------------------------------------------ files
    _ARRAYS = ("t", "q", "qd", "kinetic", "potential", "status", "steps", "stop_time")

    def save(self, path):
        """Write the trajectory to ``path`` (NumPy ``.npz``); ``Trajectory.load`` reads it back
        bit for bit."""
        arrays = {k: np.asarray(getattr(self, k)) for k in self._ARRAYS}
        meta = dict(self.info, message=self.message)
        np.savez(path, meta=np.array(json.dumps(meta)), **arrays)

    @classmethod
    def load(cls, path):
        """A trajectory written by ``save``."""
        with np.load(path, allow_pickle=False) as f:
            missing = [k for k in cls._ARRAYS + ("meta",) if k not in f.files]
            if missing:
                raise ValueError(f"{path}: not an ejce_nb trajectory file (missing {missing})")
            a = {k: f[k] for k in cls._ARRAYS}
            meta = json.loads(str(f["meta"]))
        message = meta.pop("message", "")
        scalar = a["q"].ndim == 2
        for k in ("status", "steps", "stop_time"):
            if scalar:
                a[k] = a[k].item()
        return cls(a["t"], a["q"], a["qd"], a["kinetic"], a["potential"], a["status"], a["steps"], a["stop_time"],
                   message, meta)

    def to_csv(self, path):
        """Write a spreadsheet: a header ``t, q:<coordinate>..., qd:<velocity>..., kinetic,
        potential, energy`` (coordinates named by their joints), one row per time; a batch gets
        a first column ``trajectory`` and one block of rows per trajectory.  Numbers are written
        with 17 significant digits (exact)."""
        qn = self.info.get("coordinate_names") or [f"q{k}" for k in range(self.q.shape[-1])]
        vn = self.info.get("velocity_names") or [f"qd{k}" for k in range(self.qd.shape[-1])]
        cols = ["t"] + [f"q:{n}" for n in qn] + [f"qd:{n}" for n in vn] + ["kinetic", "potential", "energy"]
        if self.batch is None:
            data = np.column_stack([self.t, self.q, self.qd, self.kinetic, self.potential, self.energy])
        else:
            blocks = []
            for b in range(self.batch):
                blocks.append(np.column_stack([np.full(len(self.t), b), self.t, self.q[:, b], self.qd[:, b],
                                               self.kinetic[:, b], self.potential[:, b], self.energy[:, b]]))
            data = np.concatenate(blocks)
            cols = ["trajectory"] + cols
        fmt = ["%d"] * (self.batch is not None) + ["%.17g"] * (data.shape[1] - (self.batch is not None))
        np.savetxt(path, data, delimiter=",", header=",".join(cols), comments="", fmt=fmt)

    def plot(self, model=None, path=None, snapshots=None, coordinates=None, trajectory=0):
        """A figure (matplotlib, the ``plot`` extra): the energy balance (for a conservative run
        the relative drift (E - E0) / max(|E0|, max T); with damping, limits or drives E - E0
        beside the work of each), every coordinate by name and unit (``coordinates``: indices or
        names to select; a unit quaternion's rotation as its rotation vector, rad) and, given
        ``model``, 3-D stick figures (equal axes; body origins from ``ej.forward_kinematics``,
        parent to child) at the recorded times nearest to ``snapshots`` (default: start,
        middle, end).  What is left out (times past a stop, unselected coordinates) is said in
        the figure.  Saved to ``path`` when given; returns the matplotlib Figure
        (``ejce_nb.plots``)."""
        from .plot import plot_trajectory
        return plot_trajectory(self, model, path, snapshots, coordinates, trajectory)


class SimulationError(SingularJointError):
    """A simulation stopped before its end: ``partial`` holds the trajectory up to the last good
    state, ``status`` the ``SimulationStatus``, ``time`` and ``joint`` (a name or None) where and
    at which joint it happened."""

    def __init__(self, message, partial, status=None, time=None, joint=None):
        super().__init__(message)
        self.partial = partial
        self.status = status
        self.time = time
        self.joint = joint


# ---------------------------------------------------------------------------- inputs
def _dof_tables(model):
    """(DOFQ, DOFJ, COORDJ): for each velocity variable the coordinate whose rate it is (-1: a
    quaternion's angular velocity) and its joint; for each coordinate its joint."""
    DOFQ = np.full(model.nv, -1, dtype=np.int64)
    DOFJ = np.zeros(model.nv, dtype=np.int64)
    COORDJ = np.zeros(model.nq, dtype=np.int64)
    quat = {j for j, _ in model.quaternion_blocks()}
    for j in range(1, model.nbodies + 1):
        qs, nq = int(model.q_start[j]), int(model.nq_joint[j])
        vs, nv = int(model.v_start[j]), int(model.nv_joint[j])
        COORDJ[qs:qs + nq] = j
        DOFJ[vs:vs + nv] = j
        plain = nv - 3 if j in quat else nv
        DOFQ[vs:vs + plain] = np.arange(qs, qs + plain)
    return DOFQ, DOFJ, COORDJ


def _passive_tables(model, damping, stiffness, spring_ref, DOFQ):
    out = []
    for name, x, own, nonneg in (("damping", damping, model.dof_damping, True),
                                 ("stiffness", stiffness, model.dof_stiffness, True),
                                 ("spring_ref", spring_ref, model.dof_springref, False)):
        if x is None:
            out.append(np.array(own, dtype=np.float64))    # writeable, as every kernel argument
            continue
        try:
            a = np.array(x, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be a number or an array of numbers, got {type(x).__name__}") from None
        if a.ndim == 0:
            a = np.full(model.nv, float(a))
        if a.shape != (model.nv,):
            raise ValueError(f"{name} must be a number or have shape ({model.nv},) (one per velocity variable), "
                             f"got {a.shape}")
        if not np.all(np.isfinite(a)) or (nonneg and np.any(a < 0)):
            raise ValueError(f"{name} must be finite" + (" and non-negative" if nonneg else "") + f", got {a}")
        out.append(np.ascontiguousarray(a))
    D, K, ref = out
    rot = np.nonzero((DOFQ < 0) & ((K != 0.0) | (ref != 0.0)))[0]
    if len(rot):
        k = int(rot[0])
        j = [j for j in range(1, model.nbodies + 1) if model.v_start[j] <= k < model.v_start[j] + model.nv_joint[j]][0]
        raise ValueError(f"stiffness / spring_ref at velocity variable {k}, an angular velocity of the unit quaternion "
                         f"of joint {model.joint_names[j]!r}: it is not the rate of a coordinate, so no spring can act "
                         "on it (damping is allowed; use a control law for a rotational spring)")
    return D, K, ref


def _record_steps(nsteps, record_every):
    steps = np.arange(0, nsteps + 1, record_every, dtype=np.int64)
    if steps[-1] != nsteps:
        steps = np.append(steps, np.int64(nsteps))
    return steps


def _torque_input(model, tau, B, nsteps, nrec, dopri):
    """(TAU (rows, 1 or B, nv), mode) for an array tau."""
    nv = model.nv
    try:
        a = np.array(tau, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"tau must be an array of numbers, an ej.control_law or a callable tau(t, q, qd), got "
                         f"{type(tau).__name__}") from None
    if not np.all(np.isfinite(a)):
        raise ValueError("tau contains NaN or inf")
    per_step = not dopri
    shapes = [((nv,), TAU_CONST, lambda: a.reshape(1, 1, nv))]
    if B is not None:
        shapes.append(((B, nv), TAU_CONST, lambda: a.reshape(1, B, nv)))
    if per_step:
        shapes.append(((nsteps, nv), TAU_STEP, lambda: a.reshape(nsteps, 1, nv)))
        if B is not None:
            shapes.append(((nsteps, B, nv), TAU_STEP, lambda: a))
    shapes.append(((nrec, nv), TAU_INTERVAL, lambda: a.reshape(nrec, 1, nv)))
    if B is not None:
        shapes.append(((nrec, B, nv), TAU_INTERVAL, lambda: a))
    for shape, mode, make in shapes:
        if a.shape == shape:
            return np.ascontiguousarray(make()), mode
    b = "" if B is None else f"{B}, "
    want = [f"({nv},)"] + ([f"({B}, {nv})"] if B is not None else []) + \
        ([f"({nsteps}, {b}{nv}) (one row per step)"] if per_step else []) + \
        [f"({nrec}, {b}{nv}) (one row per recorded time, held until the next)"]
    raise ValueError(f"tau must have shape {' or '.join(want)}, got {a.shape}" +
                     ("; dopri5 has no fixed steps, so no per-step torque" if dopri and a.ndim >= 2 else ""))


def _positive(x, name, allow_inf=False):
    x = _number(x, name)
    if not (x > 0 and (allow_inf or np.isfinite(x))):
        raise ValueError(f"{name} must be a positive number, got {x}")
    return x


def _memory_limit():
    try:
        return 0.5 * os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return np.inf


class _Run:
    """Everything a run needs, checked once: arrays for the kernel and what the result needs."""


def _spring_energy(run, q):
    """sum of 1/2 stiffness (q - spring_ref)^2 over the springs of a run."""
    k = (run.DOFQ >= 0) & (run.STF != 0.0)
    d = q[run.DOFQ[k]] - run.SREF[k]
    return float(np.sum(0.5 * run.STF[k] * d * d))


def limit_torques(LIM, DOFQ, Q, V):
    """The joint limits' forces (..., nv) at states Q (..., nq), V (..., nv): ``_limit_force``
    on arrays (LIM (nv, 4): lower, upper, stiffness, damping; DOFQ: the coordinate of each
    velocity variable, -1 for none)."""
    Q = np.asarray(Q, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    out = np.zeros(V.shape)
    k = np.nonzero((DOFQ >= 0) & (LIM[:, 2] + LIM[:, 3] > 0))[0]
    if len(k) == 0:
        return out
    x = Q[..., DOFQ[k]]
    u = V[..., k]
    lo, hi, kk, bb = LIM[k, 0], LIM[k, 1], LIM[k, 2], LIM[k, 3]
    with np.errstate(invalid="ignore"):
        below = np.maximum(kk * (lo - x) - bb * u, 0.0)
        above = np.maximum(kk * (x - hi) + bb * u, 0.0)
        out[..., k] = np.where(x < lo, below, 0.0) - np.where(x > hi, above, 0.0)
        out[..., k] = np.where(np.isfinite(x) & np.isfinite(u), out[..., k], np.nan)
    return out


def limit_work(t, LIM, DOFQ, Q, V):
    """The work (T, [B]) of the limits' forces since t[0] along recorded states Q (T, [B], nq),
    V (T, [B], nv): the trapezoid rule on each limited coordinate's power, where a step enters or
    leaves a limit from the point where the coordinate crosses it (linear in the step), so that
    the jump of the damping force at contact costs no first-order error."""
    Q = np.asarray(Q, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    W = np.zeros(V.shape[:-1])
    if len(t) < 2:
        return W
    dt = np.diff(t).reshape((-1,) + (1,) * (W.ndim - 1))
    inc = np.zeros(W[1:].shape)
    for k in np.nonzero((DOFQ >= 0) & (LIM[:, 2] + LIM[:, 3] > 0))[0]:
        x, u = Q[..., DOFQ[k]], V[..., k]
        one = LIM[k:k + 1]

        def power(x, u):
            return limit_torques(one, np.zeros(1, dtype=np.int64), x[..., None], u[..., None])[..., 0] * u
        P = power(x, u)
        part = 0.5 * (P[1:] + P[:-1]) * dt
        x0, x1, u0, u1 = x[:-1], x[1:], u[:-1], u[1:]
        for bound, out in ((LIM[k, 0], lambda y: y < LIM[k, 0]), (LIM[k, 1], lambda y: y > LIM[k, 1])):
            if not np.isfinite(bound):
                continue
            o0, o1 = out(x0), out(x1)
            cross = o0 != o1
            if not np.any(cross):
                continue
            with np.errstate(invalid="ignore", divide="ignore"):
                th = np.clip((bound - x0) / (x1 - x0), 0.0, 1.0)
            uc = u0 + th * (u1 - u0)
            Pc = power(np.full(uc.shape, bound), uc)
            part = np.where(cross & o1, 0.5 * (Pc + P[1:]) * (1.0 - th) * dt, part)
            part = np.where(cross & o0, 0.5 * (P[:-1] + Pc) * th * dt, part)
        inc = inc + part
    W[1:] = np.cumsum(inc, axis=0)
    return W


def _cumulative_work(t, P):
    """The integral of the power P (T, [B]) over t (T,) from t[0], by the trapezoid rule."""
    P = np.asarray(P, dtype=np.float64)
    W = np.zeros(P.shape)
    if len(t) > 1:
        dt = np.diff(t).reshape((-1,) + (1,) * (P.ndim - 1))
        W[1:] = np.cumsum(0.5 * (P[1:] + P[:-1]) * dt, axis=0)
    return W


def _limit_table(model, limits, DOFQ):
    """(LIM (nv, 4), settings or None) of the joint limits' law: for each velocity variable
    whose coordinate has a finite limit, lower, upper, stiffness m / (tc zeta)^2 and damping
    2 m / tc, m = 1 / (M^-1)_kk the coordinate's apparent inertia at the neutral configuration
    (the others free: MuJoCo's constraint-space inertia of a joint limit), so that a limit closes
    with the time constant tc and damping ratio zeta there; M_kk where M is singular."""
    LIM = np.zeros((model.nv, 4))
    LIM[:, 0], LIM[:, 1] = -np.inf, np.inf
    if limits is None or limits is True:
        tc, zeta = LIMIT_TIME_CONSTANT, LIMIT_DAMPING_RATIO
    elif limits is False:
        return LIM, None
    else:
        try:
            tc, zeta = limits
        except (TypeError, ValueError):
            raise ValueError("limits must be True, False or (time_constant, damping_ratio), got "
                             f"{limits!r}") from None
        tc, zeta = _positive(tc, "limits: time_constant"), _positive(zeta, "limits: damping_ratio")
    plain = np.nonzero(DOFQ >= 0)[0]
    lo, hi = model.q_lower[DOFQ[plain]], model.q_upper[DOFQ[plain]]
    has = np.isfinite(lo) | np.isfinite(hi)
    if not np.any(has):
        return LIM, None
    from ..algorithms.api import mass_matrix
    with np.errstate(all="ignore"):
        M = np.asarray(mass_matrix(model, model.neutral()))
        Md = np.diag(M)
        try:
            app = 1.0 / np.diag(np.linalg.inv(M))
        except np.linalg.LinAlgError:
            app = Md
    k = plain[has]
    m = np.where(np.isfinite(app[k]) & (app[k] > 0), app[k], np.where(np.isfinite(Md[k]) & (Md[k] > 0), Md[k], 1.0))
    LIM[k, 0], LIM[k, 1] = lo[has], hi[has]
    LIM[k, 2] = m / (tc * zeta) ** 2
    LIM[k, 3] = 2.0 * m / tc
    return LIM, dict(time_constant=tc, damping_ratio=zeta, coordinates=int(len(k)))


def _number(x, name):
    """x as a float: a real number (not text, not a bool)."""
    if isinstance(x, (str, bytes, bool, np.bool_)) or not isinstance(x, (numbers.Real, np.ndarray)) or \
            (isinstance(x, np.ndarray) and (x.ndim != 0 or x.dtype.kind not in "fiu")):
        raise ValueError(f"{name} must be a number, got {type(x).__name__} {x!r}")
    return float(x)


def _prepare(model, q0, qd0, t_final, dt, method, tau, record_every, t_eval, rtol, atol, max_step, damping,
             stiffness, spring_ref, f_ext, max_energy, limits=True):
    from ..model.model import Model
    if not isinstance(model, Model):
        raise ValueError(f"simulate needs an ej.Model, got {type(model).__name__}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(map(repr, METHODS))}, got {method!r}")
    dopri = method == "dopri5"
    dt = _positive(dt, "dt")
    t_final = _number(t_final, "t_final")
    if not (np.isfinite(t_final) and t_final >= 0):
        raise ValueError(f"t_final must be a non-negative number, got {t_final}")
    if isinstance(record_every, bool) or not isinstance(record_every, (int, np.integer)) or record_every < 1:
        raise ValueError(f"record_every must be a positive integer, got {record_every!r}")
    record_every = int(record_every)
    nsteps = int(round(t_final / dt))
    if not dopri and t_final > 0 and nsteps == 0:
        raise ValueError(f"dt = {dt:g} is larger than twice t_final = {t_final:g}: no step would be taken; "
                         "give a dt that divides t_final")
    run = _Run()
    run.model, run.method, run.dt, run.t_final, run.record_every = model, method, dt, t_final, record_every
    run.nsteps = nsteps
    if t_eval is not None:
        if not dopri:
            raise ValueError("t_eval needs method='dopri5' (fixed-step methods record every record_every-th step)")
        if record_every != 1:
            raise ValueError("give either t_eval or record_every, not both")
        try:
            te = np.array(t_eval, dtype=np.float64).reshape(-1)
        except (TypeError, ValueError):
            raise ValueError("t_eval must be an array of times") from None
        if len(te) == 0 or not np.all(np.isfinite(te)) or np.any(np.diff(te) <= 0) or te[0] < 0 or te[-1] > t_final:
            raise ValueError(f"t_eval must be strictly increasing times within [0, t_final = {t_final}]")
        run.TREC = np.ascontiguousarray(te)
        run.RSTEP = np.zeros(len(te), dtype=np.int64)
        run.tend = t_final
    else:
        run.RSTEP = _record_steps(nsteps, record_every)
        run.TREC = run.RSTEP * dt
        run.tend = nsteps * dt
    nrec = len(run.TREC)
    run.rtol = _positive(rtol, "rtol")
    if run.rtol < 1e-14:
        raise ValueError(f"rtol must be at least 1e-14 (the error estimate is rounding below that), got {run.rtol}")
    try:
        run.atol = float(atol)
    except (TypeError, ValueError):
        raise ValueError("atol must be a number") from None
    if not (np.isfinite(run.atol) and run.atol >= 0):
        raise ValueError(f"atol must be a non-negative number, got {atol}")
    run.hmax = np.inf if max_step is None else _positive(max_step, "max_step", allow_inf=True)
    run.emax = 0.0 if max_energy is None else _positive(max_energy, "max_energy", allow_inf=True)

    q, B = inputs.state_array(q0, model.nq, "q0")
    v, _ = inputs.state_array(qd0, model.nv, "qd0", B)
    n = 1 if B is None else B
    q2 = np.array(q.reshape(n, model.nq))
    v2 = np.array(v.reshape(n, model.nv))
    for name, x in (("q0", q2), ("qd0", v2)):
        bad = np.argwhere(~np.isfinite(x))
        if len(bad):
            where = "" if B is None else f" (trajectory {int(bad[0, 0])})"
            raise ValueError(f"{name} contains NaN or inf at index {int(bad[0, -1])}{where}")
    for j, sl in model.quaternion_blocks():
        nrm = np.linalg.norm(q2[:, sl], axis=1)
        if np.any(np.abs(nrm - 1.0) > inputs.QUAT_TOL):
            raise ValueError(f"q0[{sl.start}:{sl.stop}], the quaternion of joint {model.joint_names[j]!r}, "
                             f"has norm {nrm[np.argmax(np.abs(nrm - 1.0))]:.6g}; a unit quaternion is required")
        q2[:, sl] /= nrm[:, None]
    run.B, run.n, run.q0, run.v0 = B, n, q2, v2
    run.DOFQ, run.DOFJ, run.COORDJ = _dof_tables(model)
    run.DMP, run.STF, run.SREF = _passive_tables(model, damping, stiffness, spring_ref, run.DOFQ)
    run.LIM, run.limits = _limit_table(model, limits, run.DOFQ)
    run.passive = bool(np.any(run.DMP != 0) or np.any(run.STF != 0) or run.limits is not None)

    run.law, run.pylaw = None, None
    run.LP = np.zeros((1, 1))
    if tau is None:
        run.TAU, run.taumode = np.zeros((1, 1, model.nv)), TAU_CONST
    elif isinstance(tau, ControlLaw):
        run.law = tau
        run.LP = np.ascontiguousarray(tau.param_rows(B))
        run.TAU, run.taumode = np.zeros((1, 1, model.nv)), TAU_CONST
    elif callable(tau):
        run.pylaw = tau
        run.TAU, run.taumode = np.zeros((1, n, model.nv)), TAU_CONST
    else:
        run.TAU, run.taumode = _torque_input(model, tau, B, nsteps, nrec, dopri)
    run.F = _NO_FORCE if f_ext is None else inputs.fext_array(model, f_ext, B)
    need = nrec * n * (model.nq + model.nv + 2) * 8
    if need > _memory_limit():
        raise ValueError(f"the records would take {need / 2 ** 30:.1f} GiB ({nrec} recorded times x {n} "
                         f"trajectories x (nq + nv + 2) numbers), more than half of this machine's memory; "
                         f"record fewer states (record_every=k keeps every k-th step)")
    run.nrec = nrec
    return run


# ---------------------------------------------------------------------------- the driver
class _Progress:
    """A tqdm bar over ``total`` units, started when asked for or when the run is predicted to
    take more than ``AUTO_S`` seconds."""
    AUTO_S = 3.0

    def __init__(self, mode, total, unit, desc):
        self.mode, self.total, self.unit, self.desc = mode, total, unit, desc
        self.bar = None
        self.shown = 0

    def _open(self):
        try:
            from tqdm.auto import tqdm
        except ImportError:
            if self.mode is True:
                raise ImportError("progress=True needs tqdm (pip install tqdm, or the 'plot' extra)") from None
            self.mode = False
            return
        self.bar = tqdm(total=self.total, unit=self.unit, desc=self.desc, leave=True, dynamic_ncols=True)

    def update(self, done, rate):
        """``done`` units so far, at ``rate`` units per second lately.  A bar asked for opens at
        the first update, after the first segment (which compiles or loads the time loop), so its
        rate and time left measure the run alone."""
        if self.bar is None and self.mode is True:
            self._open()
        if self.bar is None and self.mode is None and done > 0 and self.total > done and rate > 0:
            if (self.total - done) / rate > self.AUTO_S:
                self._open()
        if self.bar is not None:
            self.bar.update(done - self.shown)
            self.shown = done

    def close(self):
        if self.bar is not None:
            self.bar.close()


SEGMENT_S = 0.25        # target length of one compiled segment (a progress update)


def _run_compiled(run, progress, segment_steps):
    model = run.model
    n, nq, nv = run.n, model.nq, model.nv
    A, BW, CW, ns = TABLEAUX[run.method]
    method = {"symplectic": M_SYMPLECTIC, "dopri5": M_DOPRI}.get(run.method, M_RK)
    dopri = method == M_DOPRI
    ip = np.array([method, ns, run.taumode, 0 if run.law is None else run.law.address, int(run.passive),
                   run.nsteps, int(run.pylaw is not None)], dtype=np.int64)
    fp = np.array([run.dt, run.tend, run.rtol, run.atol, run.hmax, run.emax])
    CQ = run.q0.copy()
    CV = run.v0.copy()
    CA = np.zeros((n, nv))
    CI = np.zeros((n, 8), dtype=np.int64)
    CF = np.zeros((n, 7))
    CF[:, F_H] = min(run.dt, run.hmax)
    CF[:, F_ERROLD] = 1e-4
    FQ = np.full((n, nq), np.nan)
    FV = np.full((n, nv), np.nan)
    Q = np.full((run.nrec, n, nq), np.nan)
    V = np.full((run.nrec, n, nv), np.nan)
    EK = np.full((run.nrec, n), np.nan)
    EP = np.full((run.nrec, n), np.nan)
    nchunk = engine.n_chunks(n)
    km = model.kernel_model()
    R = np.zeros((nchunk, model.record_size))
    S = np.zeros((nchunk, model.scratch_size))
    if model.has_couplers:
        # the integrators' chart and scratch in the model's own coordinates, the dynamics on its
        # expansion (``_coupled_accel``)
        mbc = _chart(model)
        SC = np.zeros((nchunk, int(mbc[layout.H_SCR])))
        cpl = model._coupler_tables() + (np.zeros((nchunk, _coupling_size(km.nq, km.nv, nv))),)
    else:
        mbc, SC, cpl = km._mb, S, None
    rest = (ip, fp, A, BW, CW, _DP_E, _DP_P, run.RSTEP, run.TREC, run.TAU, run.LP, run.DMP, run.STF, run.SREF,
            run.LIM, run.DOFQ, run.DOFJ, run.COORDJ, run.F, CQ, CV, CA, CI, CF, FQ, FV, Q, V, EK, EP)
    pool = None
    if nchunk > 1:
        import numba
        from concurrent.futures import ThreadPoolExecutor
        pool = ThreadPoolExecutor(max_workers=max(1, min(nchunk, numba.get_num_threads())))

    def segment(budget):
        b = np.int64(budget)
        if pool is None:
            run_chunk(km._mb, R[0], S[0], mbc, SC[0], cpl, 0, 1, *rest, b)
        else:
            for f in [pool.submit(run_chunk, km._mb, R[c], S[c], mbc, SC[c], cpl, c, nchunk, *rest, b)
                      for c in range(nchunk)]:
                f.result()

    def done_units():
        if dopri:
            return float(np.sum(np.where(CI[:, C_STATUS] == 0, CF[:, F_T], run.tend)))
        return int(np.sum(np.where(CI[:, C_STATUS] == 0, CI[:, C_STEP], run.nsteps)))

    total = run.tend * n if dopri else run.nsteps * n
    bar = _Progress(progress, total, "s" if dopri else "step",
                    f"simulate {run.method}" + ("" if run.B is None else f" x{n}"))
    pylaw = run.pylaw
    # the first call compiles (or loads) the kernel: one step, then segments timed to SEGMENT_S
    budget = 1 if segment_steps is None else int(segment_steps)
    t_start = time.perf_counter()
    run.first_call = 0.0
    calls = 0
    try:
        while True:
            running = (CI[:, C_STATUS] == 0) & (CI[:, C_FLAGS] & F_DONE == 0)
            if not running.any():
                break
            if pylaw is not None:
                _python_law_torques(run, pylaw, CQ, CV, CI, CF, running, dopri)
                CI[:, C_FLAGS] &= ~F_K1          # the held torque changes at every step
                budget = 1
            before = done_units()
            t0 = time.perf_counter()
            segment(budget)
            el = time.perf_counter() - t0
            calls += 1
            if calls == 1:
                run.first_call = el
            now = done_units()
            # the first call compiles or loads the kernel: its rate says nothing
            bar.update(now, (now - before) / max(el, 1e-9) if calls > 1 else 0.0)
            if segment_steps is None and pylaw is None and calls > 1:
                budget = int(min(max(1, budget * min(4.0, max(0.25, SEGMENT_S / max(el, 1e-6)))), 1 << 40))
            elif segment_steps is None and calls == 1:
                budget = max(1, int(SEGMENT_S / max(1e-7, _step_cost_guess(model, ns, n))))
    except KeyboardInterrupt as e:
        bar.close()
        if pool is not None:
            pool.shutdown(wait=True)
        _mark_interrupted(run, CI, CF, dopri)
        e.partial = _interrupted(_assemble(run, Q, V, EK, EP, CI, CF, FQ, FV, CQ, CV, time.perf_counter() - t_start),
                                 run)
        raise
    bar.close()
    if pool is not None:
        pool.shutdown()
    return _assemble(run, Q, V, EK, EP, CI, CF, FQ, FV, CQ, CV, time.perf_counter() - t_start)


def _chart(model):
    """A model buffer of a model with couplers whose joint tables address its own coordinates
    (q, v without the dependent ones), the rest its expansion's: what ``retract``,
    ``tangent_rates`` and ``scratch_view`` read of the integrators' state (never dynamics)."""
    cached = model.__dict__.get("_chart_mb")
    if cached is not None:
        return cached
    full = model.expanded()
    ints = {name: getattr(model, name) for name, _ in layout.INT_TABLES}
    floats = {name: getattr(model, name) for name, *_ in layout.FLOAT_TABLES}
    mb, _ = layout.pack_model(model.nbodies + 1, model.nq, model.nv, int(full._mb[layout.H_NMOT]), ints, floats)
    mb.flags.writeable = False
    object.__setattr__(model, "_chart_mb", mb)
    return mb


def _mark_interrupted(run, CI, CF, dopri):
    """Trajectories still running when the run was interrupted stop with INTERRUPTED at their
    last computed state."""
    running = (CI[:, C_STATUS] == 0) & (CI[:, C_FLAGS] & F_DONE == 0)
    CI[running, C_STATUS] = _ST_INTERRUPTED
    CI[running, C_JOINT] = -1
    CI[running, C_FAILSTEP] = CI[running, C_STEP]
    CF[running, F_TFAIL] = CF[running, F_T] if dopri else CI[running, C_STEP] * run.dt


def _interrupted(traj, run):
    """The trajectory of an interrupted run: only the rows it computed (one trajectory: its
    records, then its last computed state when that lies after them; a batch: the rows up to
    the last any trajectory recorded, NaN after each one's stop)."""
    if run.B is None:
        out = _truncated(traj, run)
    else:
        k = int(np.max(traj._last[3]))
        out = Trajectory(traj.t[:k], traj.q[:k], traj.qd[:k], traj.kinetic[:k], traj.potential[:k], traj.status,
                         traj.steps, traj.stop_time, traj.message, traj.info)
    del traj._last
    out.info["interrupted"] = True
    return out


def _step_cost_guess(model, ns, n):
    """Seconds per step of the whole batch, for the first segment's length (then measured)."""
    import numba
    per = 0.4e-6 * max(1, model.nbodies) * (ns + 0.5)
    return per * n / max(1, min(n, numba.get_num_threads()))


def _python_law_torques(run, law, CQ, CV, CI, CF, running, dopri):
    for b in np.nonzero(running)[0]:
        t = CF[b, F_T] if dopri else CI[b, C_STEP] * run.dt
        try:
            x = np.asarray(law(t, CQ[b].copy(), CV[b].copy()), dtype=np.float64)
        except (TypeError, ValueError) as e:
            raise ValueError(f"tau: the torque function raised {type(e).__name__}: {e}") from e
        if x.shape != (run.model.nv,):
            raise ValueError(f"tau: the torque function returned shape {x.shape}, expected ({run.model.nv},)")
        if not np.all(np.isfinite(x)):
            k = int(np.nonzero(~np.isfinite(x))[0][0])
            CI[b, C_STATUS] = _ST_TORQUE
            CI[b, C_JOINT] = run.DOFJ[k]
            CI[b, C_FAILSTEP] = CI[b, C_STEP]
            CF[b, F_TFAIL] = t
            continue
        run.TAU[0, b] = x


# ---------------------------------------------------------------------------- results and errors
def _message(run, b, code, joint, step, t0, t, h, e, fq):
    """Why trajectory b stopped: ``t0`` the time of its last good state (after ``step`` steps),
    ``t`` that of the event (a failing stage, a recorded state), ``fq`` the configuration there."""
    model = run.model
    jname = model.joint_names[joint] if joint >= 0 else None
    where = f"simulation stopped at t = {t0:.9g} (step {step}" + ("" if run.B is None else f", trajectory {b}") + ")"
    if code in (inputs.SINGULAR_JOINT, inputs.SINGULAR_ARTICULATED, inputs.SINGULAR_MASS):
        why = inputs._singular_message(model, code, joint, fq[None], np.array([t]), 0)
        return f"{where}: joint {jname!r} at t = {t:.9g}: {why}"
    if code == _ST_NONFINITE:
        at = f" (first at joint {jname!r})" if jname is not None else ""
        return (f"{where}: the state became NaN or inf{at} during the step of {h:.3g} s from t = {t0:.9g}: the "
                f"integration diverged (a step too large for the model's fastest motion, a stiff spring or an "
                f"unstable control law); try a smaller dt or method='dopri5'")
    if code == _ST_TORQUE:
        return (f"{where}: the control law returned NaN or inf for joint {jname!r} at t = {t:.9g}")
    if code == _ST_ENERGY:
        given = "" if run.emax > 0 else f" ({ENERGY_FACTOR:g} x the initial max(|T|, |V|, 1 J))"
        return (f"{where}: the total energy T + V = {e:.6g} exceeds max_energy = {run.emax_used[b]:.6g}{given}: the "
                "simulation is blowing up (a step too large, a stiff spring, an unstable control law); pass "
                "max_energy= to change the threshold")
    if code == _ST_INTERRUPTED:
        return (f"{where}: interrupted (Ctrl-C / SIGINT) before t_final = {run.t_final:g}; the states computed "
                "until then are kept")
    if code == _ST_UNDERFLOW:
        return (f"{where}: dopri5's step size fell to {h:.3g} s, below the rounding of t: the dynamics are too stiff "
                f"for an explicit method there, or singular or discontinuous")
    return f"{where}: status {code}"


def _assemble(run, Q, V, EK, EP, CI, CF, FQ, FV, CQ, CV, wall):
    model, B = run.model, run.B
    dopri = run.method == "dopri5"
    status = CI[:, C_STATUS].copy()
    steps = CI[:, C_STEP].copy()
    stop = np.where(status == 0, run.tend, CF[:, F_T] if dopri else steps * run.dt)
    run.emax_used = CF[:, F_EMAX]
    msgs = []
    for b in range(run.n):
        code = int(status[b])
        if code == 0:
            msgs.append("")
            continue
        msgs.append(_message(run, b, code, int(CI[b, C_JOINT]), int(steps[b]), float(stop[b]), CF[b, F_TFAIL],
                             CF[b, F_HFAIL], CF[b, F_EFAIL], FQ[b]))
    info = dict(method=run.method, dt=run.dt, t_final=run.t_final, record_every=run.record_every,
                rtol=run.rtol if dopri else None, atol=run.atol if dopri else None,
                coordinate_names=coordinate_names(model), velocity_names=velocity_names(model),
                nfev=CI[:, C_NFEV].tolist() if dopri else None,
                nrejected=CI[:, C_NREJ].tolist() if dopri else None, wall_time=wall,
                first_call_time=getattr(run, "first_call", 0.0),
                model=repr(model), energy_threshold=CF[:, F_EMAX].tolist(),
                stop_joint=np.where(status != 0, CI[:, C_JOINT], -1).tolist(),
                damping=run.DMP.tolist(), limits=run.limits, rheonomic=bool(model.rheonomic),
                forced=bool(run.law is not None or run.pylaw is not None or np.any(run.TAU != 0)
                            or run.F.shape[0] > 0),
                limit_table=run.LIM.tolist() if run.limits is not None else None,
                limit_coordinates=run.DOFQ.tolist() if run.limits is not None else None,
                stop_event_time=[float(CF[b, F_TFAIL]) if status[b] else None for b in range(run.n)])
    sq = (lambda x: x[:, 0]) if B is None else (lambda x: x)
    one = (lambda x: x[0]) if B is None else (lambda x: x)
    traj = Trajectory(run.TREC.copy(), sq(Q), sq(V), sq(EK), sq(EP), one(status) if B is not None else int(status[0]),
                      one(steps) if B is not None else int(steps[0]),
                      one(stop) if B is not None else float(stop[0]), msgs if B is not None else msgs[0], info)
    traj._last = (CQ, CV, stop, CI[:, C_NEXT].copy())
    return traj


def _truncated(traj, run):
    """A single trajectory cut after its last record, with the last good state appended when it
    lies after that record (its time is then off the recording grid)."""
    CQ, CV, stop, nxt = traj._last
    k = int(nxt[0])
    t, q, qd, T, Vp = traj.t[:k], traj.q[:k], traj.qd[:k], traj.kinetic[:k], traj.potential[:k]
    ts = float(stop[0])
    if (k == 0 or ts > t[-1]) and np.all(np.isfinite(CQ[0])) and np.all(np.isfinite(CV[0])):
        from ..algorithms.api import kinetic_energy, potential_energy
        km = run.model
        t = np.append(t, ts)
        q = np.vstack([q, CQ[0]])
        qd = np.vstack([qd, CV[0]])
        T = np.append(T, kinetic_energy(km, CQ[0], CV[0], ts))
        Vp = np.append(Vp, potential_energy(km, CQ[0], ts) + _spring_energy(run, CQ[0]))
    return Trajectory(t, q, qd, T, Vp, traj.status, traj.steps, traj.stop_time, traj.message, traj.info)


def _raise_or_flag(traj, run, errors):
    st = np.atleast_1d(np.asarray(traj.status))
    if errors == "flag":
        del traj._last
        return traj, traj.status
    bad = np.nonzero(st != 0)[0]
    if len(bad) == 0:
        del traj._last
        return traj
    stop = np.atleast_1d(np.asarray(traj.stop_time))
    b = int(bad[np.argmin(stop[bad])])
    msgs = traj.message if run.B is not None else [traj.message]
    partial = _truncated(traj, run) if run.B is None else traj
    if hasattr(traj, "_last"):
        del traj._last
    msg = msgs[b]
    if run.B is not None and len(bad) > 1:
        msg = f"{len(bad)} of {run.B} trajectories stopped (statuses in .partial.status); the first: {msg}"
    jt = int(traj.info["stop_joint"][b])
    j = run.model.joint_names[jt] if jt > 0 else None
    raise SimulationError(msg, partial, SimulationStatus(int(st[b])), float(traj.info["stop_event_time"][b]), j)


# ---------------------------------------------------------------------------- the public function
def simulate(model, q0, qd0, t_final, dt, method="rk4", tau=None, record_every=1, *, t_eval=None, rtol=1e-8,
             atol=1e-10, max_step=None, damping=None, stiffness=None, spring_ref=None, f_ext=None, max_energy=None,
             limits=True, errors="raise", progress=None, segment_steps=None):
    """Integrate the forward dynamics from (q0, qd0) over [0, t_final]; returns a ``Trajectory``.

    q0 (nq,), qd0 (nv,), or (B, nq), (B, nv): a batch of B trajectories integrated in parallel,
    each exactly as alone.  ``method``: "rk4" (default), "rk2", "euler", "symplectic" (fixed step
    dt) or "dopri5" (adaptive, ``rtol``, ``atol``, ``max_step``; dt is its first trial step); see
    the module's docstring for what each guarantees.  Unit quaternions move on the sphere.

    Recording: the state at steps 0, k, 2k, ... and the last (``record_every`` = k), i.e. at
    t = n dt; ``round(t_final / dt) + 1`` times by default.  dopri5 reports the same times by its
    continuous extension, or the times ``t_eval`` (strictly increasing, within [0, t_final]).

    ``tau`` (joint forces, nv per trajectory):
      * None (zero), an array (nv,) or (B, nv) held constant;
      * (nsteps, nv) or (nsteps, B, nv): one row per step (fixed-step methods);
      * (n_records, nv) or (n_records, B, nv): one row per recorded time, held until the next
        (dopri5 then lands on each recorded time); when nsteps equals n_records, per step;
      * an ``ej.control_law``: compiled, evaluated at every stage of every step (fast);
      * a Python callable tau(t, q, qd) -> (nv,): evaluated from Python once per step at the
        step's start and held constant over the step (for dopri5: over each step attempt), so the
        integration is first order in it; slow (the compiled loop returns to Python each step).
    ``damping``, ``stiffness``, ``spring_ref`` (numbers or (nv,)): passive joint forces
    -damping qd - stiffness (q - spring_ref) added to tau; default the model's ``dof_damping``,
    ``dof_stiffness``, ``dof_springref`` (``ModelBuilder.add_body(..., damping=...)``).  No spring
    on a unit quaternion's rotation.  ``f_ext``: constant world-frame wrenches (N+1, 6) or
    (B, N+1, 6), as ``ej.aba``.

    ``limits``: the model's coordinate limits (``q_lower``, ``q_upper``) act on every coordinate
    whose rate is its velocity variable (not on a unit quaternion's components) as a stiff
    one-sided spring-damper, MuJoCo's soft-constraint law: below the lower limit (above the
    upper, mirrored) tau_k = max(0, m_k (x / (tc zeta)^2 - 2 qd_k / tc)), x the penetration,
    m_k = 1 / (M^-1)_kk the coordinate's apparent inertia at the neutral configuration (MuJoCo's
    constraint-space inertia of a joint limit); it only pushes.
    True (default): tc = 0.02 s, zeta = 1 (critical damping; MuJoCo's default solref);
    (tc, zeta): others; False: limits off.  ``trajectory.limit_work`` is their work and
    ``trajectory.info["limits"]`` the settings (None when off or the model has no limits).

    A trajectory stops at a non-finite state, a singular configuration (gimbal lock, massless
    subtree), a control law output that is not finite, dopri5's step-size underflow, or when
    |T + V| at a recorded state exceeds ``max_energy`` (default 1e6 x the initial
    max(|T|, |V|, 1 J); ``np.inf`` disables it).  ``errors="raise"``: raises ``SimulationError``
    naming the time, the joint and the cause, its ``partial`` the trajectory so far (one
    trajectory: its records up to the stop, then the last good state; a batch: the whole batch,
    NaN after each stop).  ``errors="flag"``: returns (trajectory, status) instead, status the
    ``SimulationStatus`` (an int, or (B,)), also ``trajectory.status``, ``.steps``, ``.stop_time``.

    ``progress``: a tqdm bar (True, False, or None: only when the run is predicted to last more
    than a few seconds).  The compiled loop returns to Python every ``segment_steps`` steps
    (dopri5: step attempts; default: about every quarter second); no result depends on it.
    Ctrl-C (SIGINT) stops the run between segments; the KeyboardInterrupt carries the trajectory
    so far as ``.partial``: status ``SimulationStatus.INTERRUPTED``, ``stop_time`` its last
    computed time, a message saying so, and only the rows it computed.  A model with couplers
    (mimic joints among them) integrates its own coordinates, its dynamics those of
    ``model.expanded()`` projected by the couplers' Jacobian (see ``couplers``)."""
    inputs.check_errors_arg(errors)
    run = _prepare(model, q0, qd0, t_final, dt, method, tau, record_every, t_eval, rtol, atol, max_step, damping,
                   stiffness, spring_ref, f_ext, max_energy, limits)
    if segment_steps is not None and (isinstance(segment_steps, bool) or int(segment_steps) < 1):
        raise ValueError(f"segment_steps must be a positive integer, got {segment_steps!r}")
    traj = _run_compiled(run, progress, segment_steps)
    return _raise_or_flag(traj, run, errors)
