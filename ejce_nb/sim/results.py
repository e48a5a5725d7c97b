"""What a run returns: its ``Trajectory``, the message of every trajectory that stopped, and
``SimulationError`` (errors="raise") or (trajectory, status) (errors="flag")."""
import numpy as np

from ..model import inputs
from .closed import PROJECTION_TOL, add_residuals, constraint_message
from .prepare import spring_energy
from .status import (ENERGY_FACTOR, ST_ACTUATION, ST_CONSTRAINT, ST_CONTROL, ST_ENERGY, ST_INTERRUPTED, ST_NONFINITE,
                     ST_TORQUE, ST_UNDERFLOW, SimulationError, SimulationStatus, as_status)
from .trajectory import Trajectory, coordinate_names, velocity_names
from ..calls.public import kinetic_energy, potential_energy


def message(run, b, code, joint, step, t0, t, h, e, fq, fv=None):
    """Why trajectory b stopped: ``t0`` the time of its last good state (after ``step`` steps),
    ``t`` that of the event (a failing stage, a recorded state), ``fq``, ``fv`` the state there."""
    model = run.model
    where = f"simulation stopped at t = {t0:.9g} (step {step}" + ("" if run.B is None else f", trajectory {b}") + ")"
    if code in (ST_CONTROL, ST_ACTUATION):
        return f"{where}: {_actuation_message(run, b, code, joint, step, t)}"
    jname = model.joint_names[joint] if joint >= 0 else None
    if code in (inputs.SINGULAR_JOINT, inputs.SINGULAR_ARTICULATED, inputs.SINGULAR_MASS):
        why = inputs._singular_message(model, code, joint, fq[None], np.array([t]), 0)
        return f"{where}: joint {jname!r} at t = {t:.9g}: {why}"
    if code == ST_NONFINITE:
        at = f" (first at joint {jname!r})" if jname is not None else ""
        return (f"{where}: the state became NaN or inf{at} during the step of {h:.3g} s from t = {t0:.9g}: the "
                f"integration diverged (a step too large for the model's fastest motion, a stiff spring or an "
                f"unstable control law); try a smaller dt or method='dopri5'")
    if code == ST_TORQUE:
        return (f"{where}: the control law returned NaN or inf for joint {jname!r} at t = {t:.9g}")
    if code == ST_ENERGY:
        given = "" if run.emax > 0 else f" ({ENERGY_FACTOR:g} x the initial max(|T|, |V|, 1 J))"
        return (f"{where}: the total energy T + V = {e:.6g} exceeds max_energy = {run.emax_used[b]:.6g}{given}: the "
                "simulation is blowing up (a step too large, a stiff spring, an unstable control law); pass "
                "max_energy= to change the threshold")
    if code == ST_CONSTRAINT:
        at = "" if t == t0 else f" at t = {t:.9g}"
        return f"{where}{at}: {constraint_message(model, fq, fv, t, run.redundant)}"
    if code == ST_INTERRUPTED:
        return (f"{where}: interrupted (Ctrl-C / SIGINT) before t_final = {run.t_final:g}; the states computed "
                "until then are kept")
    if code == ST_UNDERFLOW:
        return (f"{where}: dopri5's step size fell to {h:.3g} s, below the rounding of t: the dynamics are too stiff "
                f"for an explicit method there, or singular or discontinuous")
    return f"{where}: status {code}"


def _actuation_message(run, b, code, index, step, t):
    """Why an actuated trajectory stopped: a control that is not finite, or the actuation's
    status (naming the actuator or force element)."""
    act = run.actuation
    names = act.ctrl_names
    if code == ST_CONTROL:
        name = f"ctrl[{index}] (actuator {names[index]!r})" if 0 <= index < len(names) else f"ctrl[{index}]"
        return f"{name} of step {step} is not finite (NaN or inf)"
    describe = getattr(act, "describe", None)
    if describe is not None:
        try:
            return f"at t = {t:.9g}: {describe(index)}"
        except Exception:       # noqa: BLE001 - the generic message below
            pass
    if index < 0:
        return f"at t = {t:.9g} the actuation's inputs (controls or activations) are not finite"
    el = act.elements
    enames = list(getattr(el, "names", ()) or ()) if el is not None else []
    name = f"force element {enames[index]!r}" if index < len(enames) else f"actuator or force element {index}"
    return (f"at t = {t:.9g} the actuation failed at {name} (status {code}): its force is not finite (a control, "
            "activation or state outside what it is defined for)")


def assemble(run, rec, cr, wall, loop=None):
    """The ``Trajectory`` of a run from its records and carried state (``wall``: seconds); with
    actuation its activations and actuator forces (``loop``: the compiled loop's records)."""
    model, B = run.model, run.B
    dopri = run.method == "dopri5"
    status = cr.status.copy()
    steps = cr.step.copy()
    stop = np.where(status == 0, run.tend, cr.t if dopri else steps * run.dt)
    run.emax_used = cr.emax
    msgs = []
    for b in range(run.n):
        code = int(status[b])
        if code == 0:
            msgs.append("")
            continue
        msgs.append(message(run, b, code, int(cr.joint[b]), int(steps[b]), float(stop[b]), cr.tfail[b],
                             cr.hfail[b], cr.efail[b], cr.fq[b], cr.fv[b]))
    info = dict(method=run.method, dt=run.dt, t_final=run.t_final, record_every=run.record_every,
                rtol=run.rtol if dopri else None, atol=run.atol if dopri else None,
                coordinate_names=coordinate_names(model), velocity_names=velocity_names(model),
                nfev=cr.nfev.tolist() if dopri else None,
                nrejected=cr.nrejected.tolist() if dopri else None, wall_time=wall,
                first_call_time=getattr(run, "first_call", 0.0),
                model=repr(model), energy_threshold=cr.emax.tolist(),
                stop_joint=np.where((status != 0) & (status != ST_CONTROL) & (status != ST_ACTUATION),
                                    cr.joint, -1).tolist(),
                damping=run.DMP.tolist(), limits=run.limits, rheonomic=bool(model.rheonomic),
                forced=bool(run.law is not None or run.pylaw is not None or np.any(run.TAU != 0)
                            or getattr(run, "actuation", None) is not None
                            or run.F.shape[0] > 0),
                limit_table=run.LIM.tolist() if run.limits is not None else None,
                limit_coordinates=run.DOFQ.tolist() if run.limits is not None else None,
                stop_event_time=[float(cr.tfail[b]) if status[b] else None for b in range(run.n)])
    sq = (lambda x: x[:, 0]) if B is None else (lambda x: x)
    last = (cr.q, cr.v, stop, cr.next.copy())
    if B is None:
        status, steps, stop, msgs = as_status(status[0]), int(steps[0]), float(stop[0]), msgs[0]
    traj = Trajectory(run.TREC.copy(), sq(rec.q), sq(rec.v), sq(rec.kinetic), sq(rec.potential), status, steps,
                      stop, msgs, info)
    act = getattr(run, "actuation", None)
    if act is not None and loop is not None:
        traj.act = sq(loop.rec_act)
        traj.actuator_force = sq(loop.rec_force) if loop.rec_force.shape[0] else None
        last = last + (loop.act,)
        traj.info.update(ctrl_names=list(act.ctrl_names), act_names=list(act.act_names),
                         ctrl_mode="per step" if run.cmode else "constant")
    traj._last = last
    return _with_loops(traj, run)


def _with_loops(traj, run):
    """A loop model's trajectory gets its constraint residuals (``closed.add_residuals``)."""
    if not run.model.has_loops:
        return traj
    traj.info.update(loops=[L.name for L in run.model.loops], projection_tol=PROJECTION_TOL)
    return add_residuals(traj, run.model)


def truncated(traj, run):
    """A single trajectory cut after its last record, with the last good state appended when it
    lies after that record (its time is then off the recording grid)."""
    CQ, CV, stop, nxt = traj._last[:4]
    k = int(nxt[0])
    t, q, qd, T, Vp = traj.t[:k], traj.q[:k], traj.qd[:k], traj.kinetic[:k], traj.potential[:k]
    ts = float(stop[0])
    act = None if traj.act is None else traj.act[:k]
    force = None if traj.actuator_force is None else traj.actuator_force[:k]
    if (k == 0 or ts > t[-1]) and np.all(np.isfinite(CQ[0])) and np.all(np.isfinite(CV[0])):
        km = run.model
        t = np.append(t, ts)
        q = np.vstack([q, CQ[0]])
        qd = np.vstack([qd, CV[0]])
        T = np.append(T, kinetic_energy(km, CQ[0], CV[0], ts))
        Vp = np.append(Vp, potential_energy(km, CQ[0], ts) + spring_energy(run, CQ[0]))
        if act is not None:
            act = np.vstack([act, traj._last[4][0]])
        if force is not None:
            force = np.vstack([force, np.full((1, force.shape[1]), np.nan)])
    out = Trajectory(t, q, qd, T, Vp, traj.status, traj.steps, traj.stop_time, traj.message, traj.info)
    out.act, out.actuator_force = act, force
    return _with_loops(out, run)


def raise_or_flag(traj, run, errors):
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
    partial = truncated(traj, run) if run.B is None else traj
    if hasattr(traj, "_last"):
        del traj._last
    msg = msgs[b]
    if run.B is not None and len(bad) > 1:
        msg = f"{len(bad)} of {run.B} trajectories stopped (statuses in .partial.status); the first: {msg}"
    jt = int(traj.info["stop_joint"][b])
    j = run.model.joint_names[jt] if jt > 0 else None
    raise SimulationError(msg, partial, SimulationStatus(int(st[b])), float(traj.info["stop_event_time"][b]), j)


def interrupted(traj, run):
    """The trajectory of an interrupted run: only the rows it computed (one trajectory: its
    records, then its last computed state when that lies after them; a batch: the rows up to
    the last any trajectory recorded, NaN after each one's stop)."""
    if run.B is None:
        out = truncated(traj, run)
    else:
        k = int(np.max(traj._last[3]))
        out = Trajectory(traj.t[:k], traj.q[:k], traj.qd[:k], traj.kinetic[:k], traj.potential[:k], traj.status,
                         traj.steps, traj.stop_time, traj.message, traj.info)
        out.act = None if traj.act is None else traj.act[:k]
        out.actuator_force = None if traj.actuator_force is None else traj.actuator_force[:k]
        out = _with_loops(out, run)
    del traj._last
    out.info["interrupted"] = True
    return out
