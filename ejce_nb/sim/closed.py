"""Models with loop closures in the compiled time loop: each stage's accelerations are the
constrained forward dynamics (``ej.constrained_dynamics``, Jc qdd + bc = 0 exactly: the closure
kernel's ``constrained_views`` on the loop's views), and every accepted step's end state is
brought back onto the loop constraints (``stage.project``), so that drift does not accumulate:

    q <- q (+) dq,  dq = -M^-1 Jc^T (Jc M^-1 Jc^T)^+ N_c^T e      (Gauss-Newton on the pose errors e,
                                                                  until |N_c^T e| <= tol)
    v <- v - M^-1 Jc^T (Jc M^-1 Jc^T)^+ (Jc v + s)                  (the kinetic-energy-nearest velocity)

each only where its residual exceeds the tolerance (1e-12), the position steps backtracking on
|N_c^T e| like ``ej.assemble``; a closure that cannot be assembled (the residual stalls above
max(tol, 1e-9) after ``max_iter`` steps) stops the trajectory with ``SimulationStatus.CONSTRAINT``
and a message naming each loop's residual.  The initial state is projected the same way.  The
trajectory reports ``position_residual`` (the largest |N_c^T e| of a loop) and
``velocity_residual`` (max |Jc v + s|) at every recorded time, by the same kernel.  A model
with couplers runs the kernel on its expansion (M = G^T M_full G, Jc = Jc_full G: its ``Closed``
record carries the couplers' ``Coupled`` one) and moves q by the integrators' chart.

``assemble_batch`` closes the loops of a batch of states with chosen velocity variables held
(the sweeps of loop models, ``ej.sweep``): Levenberg-Marquardt on the same pose errors, each step
with the held entries zero (``_held_step``), then the velocity projection and the
constrained dynamics at the closed state (``assemble_rows``, chunks of the batch on threads).
"""
import numpy as np

from .._jit import jit
from ..algorithms.loops.dense import jacobi_rows, row_norm
from ..algorithms.loops import kernel as ck
from ..calls import workspaces
from ..algorithms.loops.assembly import assemble
from ..algorithms.loops.reference import ConstraintError
from ..algorithms.loops.constrained import _check_redundant, constrained_dynamics, kernel_many, prepare as kernel_tables
from ..core.quaternions import retract
from ..model.couplers import coupled_chunks
from ..model.layout import model_view, rows, views
from .records import Closed
from .status import ST_CONSTRAINT, ST_NONFINITE

PROJECTION_TOL = 1e-12
PROJECTION_ITER = 100
# the largest change of a coordinate (rad, m) in one step of ``closed_assemble``, and
# how many times it starts again, kicked, from where it stalls
ASSEMBLY_STEP = 0.5
ASSEMBLY_RESTARTS = 8


# ---------------------------------------------------------------------------- compiled
@jit
def closed_accel(con, m, r, s, q, v, tau, t, F, fb, qdd, quick):
    """qdd of the constrained dynamics at one state (the kernel's outputs in con's workspace;
    ``quick``: as ``constrained_views``; a model with couplers: m its expansion's views, the
    state its own); returns (status, joint)."""
    cm, cr, cs = views(con.cmb, con.cw)
    sc = con.sc
    qf, vf, af, G = ck.expansion(con.cp, con.ws, con.OFF, q, v, s.zv)
    ck.constrained_views(m, r, s, cm, cr, cs, con.full, con.cfull, con.LI, con.LF, con.qn, con.OFF, F, fb, qf, vf, af,
                         G, tau, t, con.lstsq, quick, con.ws, qdd, con.tauc, con.wrench, con.qc, sc, con.dvel)
    if sc[0] == 0:
        return 0, -1
    if sc[0] == ck.ST_INPUT:
        return ST_NONFINITE, -1
    return ST_CONSTRAINT, -1


@jit
def _position_norm(con):
    """|N_c^T e| over every loop, from the kernel's last call."""
    o = con.OFF[ck.O_PE]
    x = 0.0
    for i in range(con.OFF[ck.O_END + 1]):
        x += con.ws[o + i] * con.ws[o + i]
    return np.sqrt(x)


@jit
def closed_project(con, m, r, s, q, v, t):
    """(q, v) onto the loop constraints in place (the module's docstring); returns (status,
    joint, whether the state moved).  On failure q is left as it came."""
    nq, nv = q.shape[0], v.shape[0]
    F0 = con.wrench[:0].reshape((0, 1, 6))
    # the residuals first: most end states need no projection
    code, joint = closed_accel(con, m, r, s, q, v, con.zt, t, F0, np.int64(0), con.qa, con.tol)
    if code != 0:
        return code, joint, False
    moved = False
    if con.sc[3] > con.tol:
        q0, qt, dq, ws, o = con.q0, con.qt, con.dq, con.ws, con.OFF[ck.O_DP]
        mc = model_view(con.mbc)
        for k in range(nq):
            q0[k] = q[k]
        nrm = _position_norm(con)
        it = 0
        at_q = True
        while nrm > con.tol and it < con.max_iter:
            it += 1
            for k in range(nv):
                dq[k] = ws[o + k]
            step = 1.0
            better = False
            while step >= 1e-4:
                for k in range(nv):
                    con.dvel[k] = step * dq[k]
                retract(mc, q, con.dvel, qt)
                code, joint = closed_accel(con, m, r, s, qt, v, con.zt, t, F0, np.int64(0), con.qa, -1.0)
                at_q = False
                if code == 0 and _position_norm(con) < nrm:
                    better = True
                    break
                step *= 0.5
            if not better:
                break
            for k in range(nq):
                q[k] = qt[k]
            at_q = True
            nrm = _position_norm(con)
        if nrm > max(con.tol, 1e-9):
            for k in range(nq):
                q[k] = q0[k]
            return ST_CONSTRAINT, -1, False
        if not at_q:
            code, joint = closed_accel(con, m, r, s, q, v, con.zt, t, F0, np.int64(0), con.qa, -1.0)
            if code != 0:
                return code, joint, False
        moved = it > 0
    if con.sc[4] > con.tol:
        for k in range(nv):
            v[k] += con.dvel[k]
        moved = True
    return 0, -1, moved


@jit
def _held_step(con, hold, mu, dq):
    """dq: the Levenberg-Marquardt step of the positions with the velocity variables where
    hold != 0 kept (dq there zero), -Jc^T (Jc Jc^T + mu I)^-1 N_c^T e (mu 0: the minimum-norm
    solution of Jc dq = -N_c^T e), from the kernel's last call (Jc and N_c^T e in its workspace;
    its rank scratch reused): the rows of Jc, held columns zeroed, rotated orthogonal with N_c^T e
    (``dense.jacobi_rows``), rows below RANK_TOL times the largest cut."""
    OFF, ws = con.OFF, con.ws
    nv = dq.shape[0]
    nc = OFF[ck.O_END + 1]
    Jc = rows(ws, OFF[ck.O_JC], nc, nv)
    Y = rows(ws, OFF[ck.O_Y], nc, nv)
    r = rows(ws, OFF[ck.O_RHS], 1, nc)
    for i in range(nc):
        for c in range(nv):
            Y[i, c] = 0.0 if hold[c] != 0.0 else Jc[i, c]
        r[0, i] = ws[OFF[ck.O_PE] + i]
    jacobi_rows(Y, nc, nv, r)
    ymax = 0.0
    for i in range(nc):
        ymax = max(ymax, row_norm(Y, i, nv))
    for c in range(nv):
        dq[c] = 0.0
    for i in range(nc):
        si = row_norm(Y, i, nv)
        if si > ck.RANK_TOL * ymax:
            f = r[0, i] / (si * si + mu)
            for c in range(nv):
                dq[c] -= f * Y[i, c]


@jit
def closed_assemble(con, m, r, s, q, v, tau, t, hold, qdd):
    """The state (q, v) brought onto the loop constraints in place with the velocity variables
    where hold != 0 kept: Levenberg-Marquardt on the positions (``_held_step``, damping
    |N_c^T e|^2; backtracking on |N_c^T e|
    as ``closed_project``, each step at most ASSEMBLY_STEP in every coordinate; where it stalls
    above the tolerance, up to ASSEMBLY_RESTARTS fixed kicks of the free coordinates, of up to
    ASSEMBLY_STEP times their number) until
    |N_c^T e| <= con.tol, at most con.max_iter steps, then v <- the
    kinetic-energy-nearest velocity on the constraints; then the constrained dynamics at (q, v,
    tau) into qdd and con's outputs.  Returns the kernel's status (0: closed; else the residual
    stalled above max(tol, 1e-9), or the kernel's own status; q as far as it got)."""
    nq, nv = q.shape[0], v.shape[0]
    F0 = con.wrench[:0].reshape((0, 1, 6))
    zero = np.int64(0)
    code, joint = closed_accel(con, m, r, s, q, v, con.zt, t, F0, zero, con.qa, -1.0)
    if code != 0:
        return int(con.sc[0])
    mc = model_view(con.mbc)
    qt, dq = con.qt, con.dq
    nrm = _position_norm(con)
    it = 0
    restarts = 0
    while nrm > con.tol and it < con.max_iter:
        it += 1
        # damped by |N_c^T e|^2 (Yamashita-Fukushima): a descent direction far from the closure,
        # where Jc is nearly singular, and Gauss-Newton's quadratic convergence near it
        _held_step(con, hold, nrm * nrm, dq)
        # at most ASSEMBLY_STEP per coordinate: from a far guess a near-singular Jc gives huge steps,
        # which wander off by many turns
        big = 0.0
        for k in range(nv):
            big = max(big, abs(dq[k]))
        step = 1.0 if big <= ASSEMBLY_STEP else ASSEMBLY_STEP / big
        better = False
        while step >= 1e-4:
            for k in range(nv):
                con.dvel[k] = step * dq[k]
            retract(mc, q, con.dvel, qt)
            code, joint = closed_accel(con, m, r, s, qt, v, con.zt, t, F0, zero, con.qa, -1.0)
            if code == 0 and _position_norm(con) < nrm:
                better = True
                break
            step *= 0.5
        if not better:
            if restarts == ASSEMBLY_RESTARTS:
                break
            # stalled where the residual has no descent (a linkage drawn straight, a saddle of the
            # distance between the loop's ends): move the free coordinates off it, fixed kicks, each
            # larger
            restarts += 1
            for k in range(nv):
                kick = restarts * ASSEMBLY_STEP * np.sin(1.7 * (k + 1) * restarts + 1.0)
                con.dvel[k] = 0.0 if hold[k] != 0.0 else kick
            retract(mc, q, con.dvel, qt)
            code, joint = closed_accel(con, m, r, s, qt, v, con.zt, t, F0, zero, con.qa, -1.0)
            if code != 0:
                break
            for k in range(nq):
                q[k] = qt[k]
            nrm = _position_norm(con)
            continue
        for k in range(nq):
            q[k] = qt[k]
        nrm = _position_norm(con)
    if nrm > max(con.tol, 1e-9):
        return ck.ST_GN
    # the velocity projection at the closed q (the workspace may hold a rejected trial)
    code, joint = closed_accel(con, m, r, s, q, v, con.zt, t, F0, zero, con.qa, -1.0)
    if code != 0:
        return int(con.sc[0])
    for k in range(nv):
        v[k] += con.dvel[k]
    code, joint = closed_accel(con, m, r, s, q, v, tau, t, F0, zero, qdd, -1.0)
    return 0 if code == 0 else int(con.sc[0])


@jit
def assemble_rows(mb, w, con, Q, V, TAU, T, hold, lo, hi, QDD, TC, WR, SC):
    """``closed_assemble`` of the states lo .. hi - 1 of a batch, in place in Q and V, on one
    chunk's workspace ``w`` of the tree (its expansion's with couplers) and ``Closed`` record:
    QDD, TC (Jc^T lam), WR (wrenches), SC = (status, rank of Jc, max |Jc qdd + bc|, position and
    velocity residuals), NaN rows where a state did not close."""
    m, r, s = views(mb, w)
    for b in range(lo, hi):
        st = closed_assemble(con, m, r, s, Q[b], V[b], TAU[b], T[b], hold, QDD[b])
        if st == 0:
            for x in range(TC.shape[1]):
                TC[b, x] = con.tauc[x]
            for k in range(WR.shape[1]):
                for x in range(6):
                    WR[b, k, x] = con.wrench[k, x]
            for x in range(5):
                SC[b, x] = con.sc[x]
        else:
            for x in range(QDD.shape[1]):
                QDD[b, x] = np.nan
                TC[b, x] = np.nan
            for k in range(WR.shape[1]):
                for x in range(6):
                    WR[b, k, x] = np.nan
            SC[b, 0] = st
            for x in range(1, 5):
                SC[b, x] = np.nan


# ---------------------------------------------------------------------------- Python side
def check_run(model, t_eval, f_ext, redundant):
    """What a loop model's run cannot take, refused with a ValueError naming it."""
    _check_redundant(redundant)
    for name, x in (("t_eval", t_eval), ("f_ext", f_ext)):
        if x is not None:
            raise ValueError(f"simulate: {name} is not supported for a model with loop closures")


def closed_chunks(model, nchunk, redundant, mbc):
    """One ``Closed`` record per chunk of a run of a loop model (``mbc``: the integrators' chart,
    ``driver._chart``, of a model with couplers; else the model's buffer)."""
    p = kernel_tables(model)
    ct, km = p["ct"], p["km"]
    nq, nv = model.nq, model.nv
    cps = coupled_chunks(model, (km.nq, km.nv), nchunk) if km is not model else [None] * nchunk
    out = []
    for cp in cps:
        out.append(Closed(ct._mb, workspaces.new_workspace(ct), p["full"], p["cfull"], p["LI"], p["LF"], p["qn"], p["OFF"],
                          redundant == "lstsq", PROJECTION_TOL, PROJECTION_ITER, np.zeros(p["size"]), np.zeros(nv),
                          np.zeros((len(model.loops), 6)), np.zeros(ct.nq), np.zeros(5), np.zeros(nv), np.zeros(nv),
                          np.zeros(nv), np.zeros(nq), np.zeros(nq), np.zeros(nv), cp, mbc))
    return out


def _assembly_records(model, nchunk):
    """(workspace of the tree, ``Closed`` record) for each of nchunk chunks of ``assemble_batch``,
    from the model's pool (give them back with ``_release``): concurrent calls each get their own."""
    pool = model.__dict__.setdefault("_assembly_pool", [])
    out = []
    while pool and len(out) < nchunk:
        out.append(pool.pop())
    if len(out) < nchunk:
        km = kernel_tables(model)["km"]
        if model.has_couplers:
            from .driver import _chart
            mbc = _chart(model)
        else:
            mbc = model._mb
        out += [(workspaces.new_workspace(km), con)
                for con in closed_chunks(model, nchunk - len(out), "lstsq", mbc)]
    return out


def assemble_batch(model, Q, V, TAU, T, hold):
    """Close the loops of every state of a batch in place, Q (B, nq), V (B, nv) (C-contiguous
    float64), holding the velocity variables where ``hold`` (nv,) is nonzero (their coordinates
    keep their values), then project V onto the velocity constraints (kinetic-energy-nearest)
    and solve the constrained dynamics under joint forces TAU (B, nv) at times T (B,)
    (``redundant="lstsq"``): returns (QDD, TC, WR, SC) as ``assemble_rows``; SC[:, 0] is 0 where
    the state closed (position residual at most 1e-12), else the kernel's status (the rows NaN).
    The chunks run on threads; each state's result is that of a lone call, bit for bit."""
    import concurrent.futures

    import numba

    B = Q.shape[0]
    nv = model.nv
    km = kernel_tables(model)["km"]
    QDD, TC = np.empty((B, nv)), np.empty((B, nv))
    WR, SC = np.empty((B, len(model.loops), 6)), np.empty((B, 5))
    hold = np.ascontiguousarray(hold, dtype=np.float64)
    T = np.ascontiguousarray(np.broadcast_to(np.asarray(T, dtype=np.float64), (B,)))
    nchunk = workspaces.n_chunks(B) if B else 1
    recs = _assembly_records(model, nchunk)

    def one(c):
        w, con = recs[c]
        assemble_rows(km._mb, w, con, Q, V, TAU, T, hold, np.int64(c * B // nchunk), np.int64((c + 1) * B // nchunk),
                      QDD, TC, WR, SC)
    try:
        if nchunk == 1:
            one(0)
        else:
            with concurrent.futures.ThreadPoolExecutor(max(1, min(nchunk, numba.get_num_threads()))) as ex:
                for f in [ex.submit(one, c) for c in range(nchunk)]:
                    f.result()
    finally:
        model.__dict__["_assembly_pool"].extend(recs)
    return QDD, TC, WR, SC


def add_residuals(traj, model):
    """traj.position_residual, traj.velocity_residual (T, [B]) at its recorded states (NaN where
    the state is), by the closure kernel in parallel."""
    Q, V = np.asarray(traj.q), np.asarray(traj.qd)
    T = np.broadcast_to(np.asarray(traj.t, dtype=float).reshape((-1,) + (1,) * (Q.ndim - 2)), Q.shape[:-1])
    Qf = np.ascontiguousarray(Q.reshape(-1, model.nq))
    Vf = np.ascontiguousarray(V.reshape(-1, model.nv))
    ok = np.all(np.isfinite(Qf), axis=1) & np.all(np.isfinite(Vf), axis=1)
    pres = np.full(len(Qf), np.nan)
    vres = np.full(len(Qf), np.nan)
    if ok.any():
        Tf = np.ascontiguousarray(T.reshape(-1)[ok])
        SC = kernel_many(model, Qf[ok], Vf[ok], np.zeros((int(ok.sum()), model.nv)), Tf, True)[4]
        good = SC[:, 0] == 0
        pres[np.flatnonzero(ok)[good]] = SC[good, 3]
        vres[np.flatnonzero(ok)[good]] = SC[good, 4]
    traj.position_residual = pres.reshape(Q.shape[:-1])
    traj.velocity_residual = vres.reshape(Q.shape[:-1])
    return traj


def constraint_message(model, q, v, t, redundant):
    """Why the loop constraints stopped a trajectory at the state (q, v, t) (``CONSTRAINT``),
    from the reference path: the closure's assembly, else the constrained dynamics."""
    names = ", ".join(repr(L.name) for L in model.loops)
    if not (np.all(np.isfinite(q)) and np.all(np.isfinite(v))):
        return f"the loop constraints ({names}) failed at a state with NaN or inf"
    try:
        assemble(model, q, t=t, tol=PROJECTION_TOL)
    except ConstraintError as e:
        return f"the loop closures cannot be assembled there: {e}"
    try:
        constrained_dynamics(model, q, v, np.zeros(model.nv), t, redundant=redundant)
    except (ConstraintError, np.linalg.LinAlgError) as e:
        return f"the constrained dynamics of the loops failed there: {e}"
    return (f"the projection onto the loop constraints ({names}) did not converge within {PROJECTION_ITER} "
            f"Gauss-Newton steps to {PROJECTION_TOL:g}")
