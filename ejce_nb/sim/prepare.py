"""The input layer of ``ej.simulate``: every argument checked once, with an error naming it, and
turned into what the compiled loop reads (``Run``: the tables of ``records`` and what the result
needs)."""
import numbers
import os

import numpy as np

from ..calls import workspaces
from ..calls.python_layer import paths
from ..algorithms.crba import crba_one
from ..calls.kernels import NO_FORCE
from ..model import inputs
from .control import ControlLaw
from .records import CTRL_CONST, CTRL_STEP, TAU_CONST, TAU_INTERVAL, TAU_STEP, DofTables
from .tableaux import METHODS
from ..model.model import Model

# the joint limits' law (``limits=True``): MuJoCo's default solref, a time constant of 0.02 s and
# a damping ratio of 1 (critical damping)
LIMIT_TIME_CONSTANT = 0.02
LIMIT_DAMPING_RATIO = 1.0


class Run:
    """Everything a run needs, checked once: arrays for the kernel and what the result needs."""


def dof_tables(model):
    """(DOFQ, DOFJ, COORDJ): for each velocity variable the coordinate whose rate it is (-1: a
    quaternion's angular velocity) and its joint; for each coordinate its joint."""
    DOFQ = np.full(model.nv, -1, dtype=np.int64)
    DOFJ = np.zeros(model.nv, dtype=np.int64)
    COORDJ = np.zeros(model.nq, dtype=np.int64)
    quat = {j for j, _ in model.quaternion_blocks()}
    for j in range(1, model.nbodies + 1):
        qs, nq = int(model.jnt_qadr[j]), int(model.jnt_nq[j])
        vs, nv = int(model.jnt_dofadr[j]), int(model.jnt_nv[j])
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
        j = [j for j in range(1, model.nbodies + 1) if model.jnt_dofadr[j] <= k < model.jnt_dofadr[j] + model.jnt_nv[j]][0]
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


def neutral_mass(model):
    """The mass matrix at the neutral configuration, as ``mass_matrix`` gives it (bit for bit:
    the same CRBA; a model with couplers: G^T M_full G of its expansion), by ``crba_one``, which
    compiles the CRBA alone."""
    km, mim = inputs.kernel_model(model)
    q = model.neutral()[None]
    qk = np.ascontiguousarray(q if mim is None else mim.q(q))
    M = np.empty((1, km.nv, km.nv))
    w = workspaces.one_workspace(km)
    try:
        crba_one(km._mb, w, qk[0], 0.0, paths(km), M[0])
    finally:
        workspaces.release(km, w)
    return (M if mim is None else mim.mass(M))[0]


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
    with np.errstate(all="ignore"):
        M = neutral_mass(model)
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


def prepare(model, q0, qd0, t_final, dt, method, tau, record_every, t_eval, rtol, atol, max_step, damping,
             stiffness, spring_ref, f_ext, max_energy, limits=True, ctrl=None, act0=None, errors="raise",
             record_forces=True):
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
    run = Run()
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
    run.DOFQ, run.DOFJ, run.COORDJ = dof_tables(model)
    run.DMP, run.STF, run.SREF = _passive_tables(model, damping, stiffness, spring_ref, run.DOFQ)
    run.LIM, run.limits = _limit_table(model, limits, run.DOFQ)
    run.passive = bool(np.any(run.DMP != 0) or np.any(run.STF != 0) or run.limits is not None)
    run.dof = DofTables(run.DMP, run.STF, run.SREF, run.LIM, run.DOFQ, run.DOFJ, run.COORDJ)

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
    run.F = NO_FORCE if f_ext is None else inputs.fext_array(model, f_ext, B)
    actuation_input(run, ctrl, act0, errors, record_forces)
    need = nrec * n * (model.nq + model.nv + 2) * 8
    if need > _memory_limit():
        raise ValueError(f"the records would take {need / 2 ** 30:.1f} GiB ({nrec} recorded times x {n} "
                         f"trajectories x (nq + nv + 2) numbers), more than half of this machine's memory; "
                         f"record fewer states (record_every=k keeps every k-th step)")
    run.nrec = nrec
    return run


def spring_energy(run, q):
    """sum of 1/2 stiffness (q - spring_ref)^2 over the springs of a run."""
    k = (run.DOFQ >= 0) & (run.STF != 0.0)
    d = q[run.DOFQ[k]] - run.SREF[k]
    return float(np.sum(0.5 * run.STF[k] * d * d))


# ---------------------------------------------------------------------------- controls and activations
def _ctrl_where(run, idx):
    """'control k (actuator 'name') of step n of trajectory b' for an index into the (rows, 1|B, nu) table."""
    i, b, k = (int(x) for x in idx)
    names = run.actuation.ctrl_names
    what = f"ctrl[{k}] (actuator {names[k]!r})" if k < len(names) else f"ctrl[{k}]"
    if run.cmode == CTRL_STEP:
        what += f" of step {i}"
    if run.CTRL.shape[1] > 1:
        what += f" of trajectory {b}"
    return what


def ctrl_table(run, ctrl, nu, name="ctrl"):
    """(CTRL (rows, 1 or B, nu), mode) of the controls ``ctrl``: (nu,) or (B, nu) held over the
    whole run, (nsteps, nu) or (nsteps, B, nu) one row per step (fixed-step methods)."""
    B, nsteps = run.B, run.nsteps
    dopri = run.method == "dopri5"
    try:
        a = np.array(ctrl, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an array of numbers, got {type(ctrl).__name__}") from None
    shapes = [((nu,), CTRL_CONST, lambda: a.reshape(1, 1, nu))]
    if B is not None:
        shapes.append(((B, nu), CTRL_CONST, lambda: a.reshape(1, B, nu)))
    if not dopri:
        shapes.append(((nsteps, nu), CTRL_STEP, lambda: a.reshape(nsteps, 1, nu)))
        if B is not None:
            shapes.append(((nsteps, B, nu), CTRL_STEP, lambda: a))
    for shape, mode, make in shapes:
        if a.shape == shape and (mode == CTRL_CONST or nsteps > 0):
            return np.ascontiguousarray(make()), mode
    b = "" if B is None else f"{B}, "
    want = [f"({nu},)"] + ([f"({B}, {nu})"] if B is not None else []) + \
        ([f"({nsteps}, {b}{nu}) (one row per step)"] if not dopri else [])
    raise ValueError(f"{name} must have shape {' or '.join(want)} ({nu} controls"
                     f"{': ' + ', '.join(run.actuation.ctrl_names[:8]) if run.actuation is not None and nu else ''}"
                     f"{', ...' if nu > 8 else ''}), got {a.shape}" +
                     ("; dopri5 has no fixed steps, so no per-step control" if dopri and a.ndim >= 2 else ""))


def act_limits(actuation):
    """(na, 3): for each activation the lower and upper clamp (-inf, inf where its actuator is
    not ``actlimited``) and the time constant of a ``filterexact`` activation (max(1e-15,
    dynprm[0]), MuJoCo's mjMINVAL; 0 for the Euler update of every other kind)."""
    from ..actuation.tables import DYN_FILTEREXACT
    na = int(actuation.na)
    L = np.zeros((na, 3))
    L[:, 0], L[:, 1] = -np.inf, np.inf
    for i in range(int(actuation.nu_mj)):
        adr, num = int(actuation.actuator_actadr[i]), int(actuation.actuator_actnum[i])
        if adr < 0 or num <= 0:
            continue
        if int(actuation.actuator_dyntype[i]) == DYN_FILTEREXACT:
            L[adr:adr + num, 2] = max(1e-15, float(actuation.actuator_dynprm[i, 0]))
        if int(actuation.actuator_actlimited[i]):
            L[adr:adr + num, 0] = actuation.actuator_actrange[i, 0]
            L[adr:adr + num, 1] = actuation.actuator_actrange[i, 1]
    return L


def actuation_input(run, ctrl, act0, errors="raise", record_forces=True):
    """The controls and initial activations of a run: ``run.actuation`` (None: the model has no
    actuation, and ctrl / act0 must be None or empty), ``CTRL``, ``cmode``, ``ACT0`` (n, na),
    ``ACTLIM``; a NaN control raises (errors="raise") or stops its trajectory in the loop."""
    model = run.model
    act = getattr(model, "actuation", None)
    run.actuation = act
    run.record_forces = bool(record_forces)
    if act is None:
        for name, x in (("ctrl", ctrl), ("act0", act0)):
            if x is not None and np.size(x) != 0:
                raise ValueError(f"{name} given, but the model has no actuation (model.actuation is None: no "
                                 "actuators, tendons or force elements); give ctrl=None")
        return
    if model.has_loops:
        raise ValueError("simulate with actuation (model.actuation) is not supported yet for a model with loop "
                         "closures")
    nu, na = int(act.nu), int(act.na)
    if ctrl is None:
        run.CTRL, run.cmode = np.zeros((1, 1, nu)), CTRL_CONST
    else:
        run.CTRL, run.cmode = ctrl_table(run, ctrl, nu)
    bad = np.argwhere(~np.isfinite(run.CTRL))
    if len(bad) and errors == "raise":
        raise ValueError(f"{_ctrl_where(run, bad[0])} is {run.CTRL[tuple(bad[0])]}: controls must be finite")
    n = run.n
    if act0 is None:
        A0 = np.zeros((n, na))
    else:
        try:
            A0 = np.array(act0, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"act0 must be an array of numbers, got {type(act0).__name__}") from None
        if A0.shape == (na,):
            A0 = np.tile(A0, (n, 1))
        elif not (run.B is not None and A0.shape == (n, na)):
            want = f"({na},)" + ("" if run.B is None else f" or ({run.B}, {na})")
            raise ValueError(f"act0 must have shape {want} (activations {', '.join(act.act_names[:8])}), "
                             f"got {A0.shape}")
        badact = np.argwhere(~np.isfinite(A0))
        if len(badact):
            b, k = (int(x) for x in badact[0])
            raise ValueError(f"act0[{k}] (activation {act.act_names[k] if k < len(act.act_names) else k!r})"
                             + ("" if run.B is None else f" of trajectory {b}") + " is not finite")
    run.ACT0 = np.ascontiguousarray(A0)
    run.ACTLIM = act_limits(act)
