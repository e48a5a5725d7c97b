"""The dynamics of one stage of the compiled time loop, qdd = aba(q, v, tau(t, q, v) + tau_passive, t),

    tau_passive = -damping v - stiffness (q - spring_ref) + limits(q, v),

for a model without couplers by ``aba_state``; for a model with couplers on its expansion
(``Model.expanded()``): q_full = phi(q), v_full = G v, and

    G^T M_full G qdd = tau - G^T rnea_full(q_full, v_full, Gdot v)

(``couplers``), solved by Cholesky (``coupled_accel``).  ``cp`` is None for a model without
couplers, else its ``records.Coupled`` record: the two kinds of model compile separate versions of
the loop, and a model without couplers compiles none of the coupled code.

A model with loop closures passes its ``records.Closed`` record as ``cp``: each stage is then
the constrained dynamics, Jc qdd + bc = 0 exactly (``closed.closed_accel``; with couplers on the
expansion, reduced by G), the energies those of the tree (of its expansion).

``project`` is where a step's end state meets constraints that are not coordinates (closed loops):
it is called on every accepted step, before the state is checked and recorded, and on the
initial state; ``con`` None (no such constraints) compiles to nothing, a ``Closed`` record
projects onto the loop constraints (``closed.closed_project``).
"""
import numpy as np
from numba import types
from numba.extending import overload

from .._jit import jit
from ..algorithms.aba import aba_solve, aba_state
from ..algorithms.crba import _chol_solve, crba_checked
from ..algorithms.energy import energy_state
from ..algorithms.rnea import rnea_state
from ..model import inputs
from ..model.couplers import expand_state, gt_mul
from .actuate import actuate
from .closed import closed_accel, closed_project
from .control import call_law
from .records import Closed
from .status import ST_ACTUATION, ST_TORQUE


@jit(inline="always")
def limit_force(x, u, LIM, k):
    """The force of the limits of coordinate x (rate u) on it: a one-sided spring-damper,
    stiffness LIM[k, 2] and damping LIM[k, 3], below LIM[k, 0] or above LIM[k, 1], that only
    pushes back (``trajectory.limit_torques``)."""
    if x < LIM[k, 0]:
        f = LIM[k, 2] * (LIM[k, 0] - x) - LIM[k, 3] * u
        return f if f > 0.0 else 0.0
    if x > LIM[k, 1]:
        f = LIM[k, 2] * (x - LIM[k, 1]) + LIM[k, 3] * u
        return -f if f > 0.0 else 0.0
    return 0.0


@jit
def forces(sc, par, dof, q, v, t, row, prow):
    """sc.tq = joint forces of a stage: the law's (at t, q, v), the input row and the passive
    ones (damping, springs, joint limits); returns the first velocity variable whose law output
    is not finite, or -1."""
    nv = v.shape[0]
    tq = sc.tq
    if par.law != 0:
        for k in range(nv):
            tq[k] = 0.0
        call_law(par.law, t, q, v, prow, tq)
        for k in range(nv):
            if not np.isfinite(tq[k]):
                return k
        for k in range(nv):
            tq[k] += row[k]
    else:
        for k in range(nv):
            tq[k] = row[k]
    if par.passive:
        DMP, STF, SREF, LIM, DOFQ = dof.damping, dof.stiffness, dof.spring_ref, dof.limits, dof.dof_coord
        for k in range(nv):
            x = tq[k] - DMP[k] * v[k]
            c = DOFQ[k]
            if c >= 0:
                if STF[k] != 0.0:
                    x -= STF[k] * (q[c] - SREF[k])
                x += limit_force(q[c], v[k], LIM, k)
            tq[k] = x
    return -1


def dynamics(cp, m, r, s, q, v, tau, t, F, fb, full, DOFJ, qdd):
    """qdd of one state into qdd; returns (status, joint).  ``full``: the joint paths compiled
    (``python_layer.paths`` of the kernel model: None where every joint has a fast path)."""
    raise NotImplementedError("compiled code only")


def stage_dynamics(ac, cp, m, r, s, q, v, tau, t, F, fb, full, DOFJ, qdd):
    """``dynamics``; for an actuated tree (``ac`` not None, ``cp`` None) the ABA's three loops
    alone (``aba_solve``): ``actuate`` has brought the record to the stage's state, which is all
    that ``aba_state``'s own forward sweep would find (the same bits, one call less)."""
    raise NotImplementedError("compiled code only")


def energy(cp, m, r, s, q, v, t, full):
    """(T, V of gravity) of one state into s.e5[0:2]."""
    raise NotImplementedError("compiled code only")


def project(con, m, r, s, q, v, t):
    """Bring the end state (q, v) of a step at time t onto the constraints ``con`` in place
    (positions, then velocities; m, r, s: the model, record and scratch of the dynamics);
    returns (status, joint, whether the state moved: dopri5's first stage is then stale).
    None: no constraints, nothing to do."""
    raise NotImplementedError("compiled code only")


def _closed(cp):
    return getattr(cp, "instance_class", None) is Closed


def _closed_coupled(cp):
    """Whether cp is the ``Closed`` record of a model with couplers."""
    return _closed(cp) and not isinstance(cp.types[cp.fields.index("cp")], types.NoneType)


@overload(dynamics)
def _dynamics_impl(cp, m, r, s, q, v, tau, t, F, fb, full, DOFJ, qdd):
    if isinstance(cp, types.NoneType):
        def plain(cp, m, r, s, q, v, tau, t, F, fb, full, DOFJ, qdd):
            return aba_state(m, r, s, q, v, tau, t, F, fb, full, qdd)
        return plain
    if _closed(cp):
        def constrained(cp, m, r, s, q, v, tau, t, F, fb, full, DOFJ, qdd):
            return closed_accel(cp, m, r, s, q, v, tau, t, F, fb, qdd, -1.0)
        return constrained

    def coupled(cp, m, r, s, q, v, tau, t, F, fb, full, DOFJ, qdd):
        return coupled_accel(cp, m, r, s, q, v, tau, t, F, fb, full, DOFJ, qdd)
    return coupled


@overload(stage_dynamics, jit_options={"forceinline": True})
def _stage_dynamics_impl(ac, cp, m, r, s, q, v, tau, t, F, fb, full, DOFJ, qdd):
    if not isinstance(ac, types.NoneType) and isinstance(cp, types.NoneType):
        def swept(ac, cp, m, r, s, q, v, tau, t, F, fb, full, DOFJ, qdd):
            return aba_solve(m, r, s, tau, F, fb, qdd)
        return swept

    def other(ac, cp, m, r, s, q, v, tau, t, F, fb, full, DOFJ, qdd):
        return dynamics(cp, m, r, s, q, v, tau, t, F, fb, full, DOFJ, qdd)
    return other


@overload(energy)
def _energy_impl(cp, m, r, s, q, v, t, full):
    if isinstance(cp, types.NoneType) or (_closed(cp) and not _closed_coupled(cp)):
        def plain(cp, m, r, s, q, v, t, full):
            energy_state(m, r, s, q, v, t, np.int64(1), full, s.e5)
        return plain
    if _closed(cp):
        def closed_coupled(cp, m, r, s, q, v, t, full):
            one = np.int64(1)
            cc = cp.cp
            _expand(cc, q, v, cc.za, one)
            energy_state(m, r, s, cc.qf, cc.vf, t, one, full, s.e5)
        return closed_coupled

    def coupled(cp, m, r, s, q, v, t, full):
        one = np.int64(1)
        _expand(cp, q, v, cp.za, one)
        energy_state(m, r, s, cp.qf, cp.vf, t, one, full, s.e5)
    return coupled


@overload(project)
def _project_impl(con, m, r, s, q, v, t):
    if isinstance(con, types.NoneType):
        def nothing(con, m, r, s, q, v, t):
            return 0, -1, False
        return nothing
    if _closed(con):
        def closed(con, m, r, s, q, v, t):
            return closed_project(con, m, r, s, q, v, t)
        return closed
    return None


@jit(inline="always")
def _expand(cp, q, v, a, level):
    expand_state(cp.own_q, cp.own_v, cp.cq, cp.cv, cp.cnind, cp.cind_q, cp.cind_v, cp.cfadr, cp.cscale, cp.params,
                 q, v, a, level, cp.qi, cp.vi, cp.qf, cp.vf, cp.af, cp.G)


@jit
def coupled_accel(cp, m, r, s, q, v, tau, t, F, fb, full, DOFJ, qdd):
    """qdd of a model with couplers: M = G^T M_full G (``crba_checked`` on the expansion),
    h = G^T rnea_full(q_full, v_full, Gdot v), M qdd = tau - h by Cholesky (``_chol_solve``);
    the statuses of ``forward_dynamics_crba``."""
    G, T, Mf, Mr, hf, rhs = cp.G, cp.T, cp.Mf, cp.Mr, cp.hf, cp.rhs
    # a_full = G 0 + Gdot v: the bias of the expansion's accelerations
    _expand(cp, q, v, cp.za, np.int64(2))
    rnea_state(m, r, s, cp.qf, cp.vf, cp.af, t, F, fb, full, hf)
    code, joint = crba_checked(m, r, s, cp.qf, t, full, Mf)
    if code != 0 and code != inputs.NEAR_SINGULAR:
        return code, joint
    # T = G^T M_full, M = G^T T^T (= G^T M_full G, M_full symmetric), rhs = tau - G^T h_full
    gt_mul(G, Mf, T)
    gt_mul(G, T.T, Mr)
    for a in range(G.shape[1]):
        x = tau[a]
        for k in range(G.shape[0]):
            if G[k, a] != 0.0:
                x -= G[k, a] * hf[k]
        rhs[a] = x
    col = _chol_solve(Mr, rhs, qdd, 1e-13)
    if col >= 0:
        return inputs.SINGULAR_MASS, DOFJ[col]
    return code, joint


@jit(forceinline=True)
def accel(m, r, s, sc, cp, par, dof, q, v, t, row, prow, fb, qdd, ac, st):
    """qdd at a stage (t, q, v) with the input row ``row`` and the law's parameters ``prow``;
    with actuation (``ac``, None without) the actuation's joint forces at the stage's activations
    ``ac.astage`` added and their act_dot into ``ac.KA[st]`` (``actuate``); returns (status,
    joint), or (ACTUATION, the actuator or element) when the actuation fails."""
    bad = forces(sc, par, dof, q, v, t, row, prow)
    if bad >= 0:
        return ST_TORQUE, dof.dof_joint[bad]
    code, index = actuate(ac, cp, m, r, s, q, v, t, st, par.full, sc.tq)
    if code != 0:
        return ST_ACTUATION, index
    code, joint = stage_dynamics(ac, cp, m, r, s, q, v, sc.tq, t, par.f_ext, fb, par.full, dof.dof_joint, qdd)
    if code == inputs.NEAR_SINGULAR:
        # near a lock the accelerations are computed (large, as the dynamics are there): go on;
        # at the lock itself the run stops
        return 0, -1
    return code, joint


@jit
def energies(m, r, s, cp, par, dof, q, v, t):
    """(T, V) of a state, V with the joint springs' 1/2 k (q - q_ref)^2."""
    energy(cp, m, r, s, q, v, t, par.full)
    pot = s.e5[1]
    STF, SREF, DOFQ = dof.stiffness, dof.spring_ref, dof.dof_coord
    for k in range(STF.shape[0]):
        c = DOFQ[k]
        if c >= 0 and STF[k] != 0.0:
            d = q[c] - SREF[k]
            pot += 0.5 * STF[k] * d * d
    return s.e5[0], pot


@jit
def nonfinite_joint(q, v, dof):
    """The joint of the first non-finite entry of (q, v), -2 if there is none (-1: the world)."""
    for k in range(q.shape[0]):
        if not np.isfinite(q[k]):
            return dof.coord_joint[k]
    for k in range(v.shape[0]):
        if not np.isfinite(v[k]):
            return dof.dof_joint[k]
    return -2
