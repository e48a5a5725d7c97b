"""The compiled time loop: explicit Runge-Kutta-Munthe-Kaas steps, semi-implicit Euler and
Dormand-Prince 5(4), advancing the trajectories of a run segment by segment.

The configuration moves on its manifold (``quaternions.retract``): stage j of a step of size h from
(q, v, t) sits at q (+) Delta_j, Delta_j = h sum_l a_jl K_l, with the stage rate
K_j = dexpinv(Delta_j) u_j (``quaternions.tangent_rates``) and the acceleration of ``stage.accel`` at
t + c_j h; the step ends at q (+) h sum_j b_j K_j.

Both kinds of stepping share their start (``_begin``: the carried state, the energy threshold,
the first records), recording (``_record``: the state and its energies, the energy check),
acceptance of a step's end state (``_end_state``: ``stage.project``, then the finite check),
failure handling (``_fail``, ``_fail_at``) and the hand-over to the next segment (``_finish``).
Everything a trajectory carries between segments lives in its row of the ``Carry`` record, so
the segmentation changes no bit of the result.
"""
import math

from .._jit import jit
from ..core.quaternions import retract, tangent_rates
from ..model.layout import model_view, record_view, scratch_view
from .actuate import (act_accept, act_begin, act_dense, act_end, act_error, act_finish, act_fsal, act_hold, act_k1_load,
                      act_k1_save, act_record, act_stage, act_stage0, act_step)
from .records import TAU_INTERVAL, TAU_STEP
from .stage import accel, energies, nonfinite_joint, project
from .status import ENERGY_FACTOR, ST_CONTROL, ST_ENERGY, ST_NONFINITE, ST_UNDERFLOW
from .tableaux import ALPHA, BETA, EPS, FACMAX, FACMIN, M_SYMPLECTIC, SAFETY


# ---------------------------------------------------------------------------- shared by both kinds
# Inlined into each integrator: a compiled call between them passes the model, record and scratch
# views (hundreds of array fields) across a call boundary, and compiling those boundaries cost a
# first RK4 run about 7 s more than compiling the code twice costs a later Dormand-Prince run
# (2-3 s).
@jit(inline="always")
def _copy(q, v, q_to, v_to):
    """q_to, v_to <- q, v."""
    for k in range(q.shape[0]):
        q_to[k] = q[k]
    for k in range(v.shape[0]):
        v_to[k] = v[k]


@jit(inline="always")
def _fail(cr, b, code, joint, n, t, h, e):
    """Trajectory b stops: ``code`` at ``joint`` after n steps, the event at time t (step size h,
    energy e)."""
    cr.status[b] = code
    cr.joint[b] = joint
    cr.failstep[b] = n
    cr.tfail[b] = t
    cr.hfail[b] = h
    cr.efail[b] = e


@jit(inline="always")
def _fail_at(cr, b, code, joint, n, t, h, q, v):
    """``_fail``, keeping the state (q, v) where it happened (for the message)."""
    _copy(q, v, cr.fq[b], cr.fv[b])
    _fail(cr, b, code, joint, n, t, h, 0.0)


@jit(inline="always")
def _record(mb, R, S, m, r, s, cp, par, dof, cr, rec, ac, b, k, q, v, t, n, h):
    """Record state k of trajectory b at time t (and its activations ac.at); a total energy beyond
    its threshold stops it (after n steps, h the step size)."""
    act_record(ac, cp, mb, R, S, q, v, t, n, par.full, k, b)
    for x in range(q.shape[0]):
        rec.q[k, b, x] = q[x]
    for x in range(v.shape[0]):
        rec.v[k, b, x] = v[x]
    kin, pot = energies(m, r, s, cp, par, dof, q, v, t)
    rec.kinetic[k, b] = kin
    rec.potential[k, b] = pot
    e = kin + pot
    if not abs(e) <= cr.emax[b]:
        _fail(cr, b, ST_ENERGY, -1, n, t, h, e)


@jit(inline="always")
def _begin(mb, R, S, m, r, s, cp, con, par, dof, cr, rec, ac, b, q, v, t, h):
    """q, v <- the carried state of trajectory b; on its first segment also the state projected
    onto the constraints (``stage.project``), its energy threshold (unless one was given) and its
    records at the start time t.  Returns the next record."""
    _copy(cr.q[b], cr.v[b], q, v)
    act_begin(ac, b)
    nxt = cr.next[b]
    if not cr.started[b]:
        code, joint, moved = project(con, m, r, s, q, v, t)
        if code != 0:
            _fail_at(cr, b, code, joint, cr.step[b], t, h, q, v)
            return nxt
        if par.emax > 0.0:
            cr.emax[b] = par.emax
        else:
            kin, pot = energies(m, r, s, cp, par, dof, q, v, t)
            cr.emax[b] = ENERGY_FACTOR * max(abs(kin), abs(pot), 1.0)
        cr.started[b] = True
        while nxt < par.trec.shape[0] and par.trec[nxt] == t:
            _record(mb, R, S, m, r, s, cp, par, dof, cr, rec, ac, b, nxt, q, v, t, cr.step[b], h)
            nxt += 1
    return nxt


@jit(inline="always")
def _end_state(m, r, s, con, dof, q, v, t):
    """A step's end state (q, v) at t: projected onto the constraints (``stage.project``), then
    checked; returns (status, joint, whether the projection moved it)."""
    code, joint, moved = project(con, m, r, s, q, v, t)
    if code != 0:
        return code, joint, moved
    joint = nonfinite_joint(q, v, dof)
    if joint != -2:
        return ST_NONFINITE, joint, moved
    return 0, -1, moved


@jit(inline="always")
def _views(mb, R, S, mbc, SC):
    """The model, record and scratch views of a chunk's buffers, and the integrators' chart and
    scratch.  The integrators and ``stages`` build them from the buffers they are handed: views
    handed across a call cross it as hundreds of array fields, boundaries whose compiling cost a
    first RK4 run about 4 s and a Dormand-Prince run about 3 s.  (``stage.accel``, called at
    every stage, is still handed the views: building them there compiled longer.)"""
    return model_view(mb), record_view(mb, R, 0), scratch_view(mb, S, 0), model_view(mbc), scratch_view(mbc, SC, 0)


@jit(inline="always")
def _finish(cr, ac, b, q, v, n, nxt, done):
    """Hand trajectory b's state (and activations) to the next segment."""
    _copy(q, v, cr.q[b], cr.v[b])
    act_finish(ac, b)
    cr.step[b] = n
    cr.next[b] = nxt
    if done:
        cr.done[b] = True


@jit(inline="always")
def _inputs_of(par, b):
    """Trajectory b's column of tau, its row of the law's parameters and of the wrenches."""
    tb = b if par.tau.shape[1] > 1 else 0
    prow = par.law_params[b] if par.law_params.shape[0] > 1 else par.law_params[0]
    fb = b if par.f_ext.shape[0] > 1 else 0
    return tb, prow, fb


@jit(inline="always")
def _tau_index(par, n, nxt):
    """The row of ``par.tau`` of the joint forces given for step n (the next record nxt): an
    index, since a kernel that counts no references returns no view."""
    if par.taumode == TAU_STEP:
        return n
    if par.taumode == TAU_INTERVAL:
        return max(nxt - 1, 0)
    return 0


@jit(inline="always")
def _step_end(mc, q, v, h, W, KQ, KV, dq, qo, vo):
    """The end of a step of size h from (q, v) with the stage weights W (7 numbers):
    qo = q (+) h sum_j W_j KQ_j, vo = v + h sum_j W_j KV_j."""
    for k in range(v.shape[0]):
        d, x = _weighted(W, KQ, KV, k)
        dq[k] = h * d
        vo[k] = v[k] + h * x
    retract(mc, q, dq, qo)


@jit(inline="always")
def _weighted(W, KQ, KV, k):
    """(sum_j W_j KQ[j, k], sum_j W_j KV[j, k]) over the 7 stages, zero weights skipped."""
    d = 0.0
    x = 0.0
    for j in range(7):
        w = W[j]
        if w != 0.0:
            d += w * KQ[j, k]
            x += w * KV[j, k]
    return d, x


@jit
def stages(mb, R, S, mbc, SC, cp, par, dof, q, v, t, h, first, row, prow, fb, ac):
    """Stages first..ns-1 of an explicit RKMK step of size h from (q, v, t): rates sc.KQ[j],
    accelerations sc.KV[j] (with actuation the activations' rates ac.KA[j]); the last stage's
    state stays in sc.qx, sc.vx (on the chunk's buffers, ``_views``).  Returns (status, joint,
    the time of the stage that failed)."""
    m, r, s, mc, sc = _views(mb, R, S, mbc, SC)
    nv = v.shape[0]
    A = par.A
    KQ = sc.KQ
    KV = sc.KV
    qs = sc.qx
    vs = sc.vx
    dq = sc.dq
    for st in range(first, par.stages):
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
        act_stage(ac, st, h, A)
        ts = t + par.c[st] * h
        code, joint = accel(m, r, s, sc, cp, par, dof, qs, vs, ts, row, prow, fb, KV[st], ac, st)
        if code != 0:
            return code, joint, ts
        tangent_rates(mc, dq, vs, KQ[st])
    return 0, -1, t


# ---------------------------------------------------------------------------- fixed step
@jit
def advance_fixed(mb, R, S, mbc, SC, cp, con, par, dof, cr, rec, ac, b, budget):
    """Up to ``budget`` fixed steps of trajectory b from its carried state, on the chunk's
    buffers (``run_fixed``)."""
    m, r, s, mc, sc = _views(mb, R, S, mbc, SC)
    dt = par.dt
    ns = par.stages
    n = cr.step[b]
    q, v, qn, vn, KQ, KV, dq = sc.qt, sc.vt, sc.qx, sc.vx, sc.KQ, sc.KV, sc.dq
    nxt = _begin(mb, R, S, m, r, s, cp, con, par, dof, cr, rec, ac, b, q, v, n * dt, dt)
    tb, prow, fb = _inputs_of(par, b)
    nv = v.shape[0]
    nrec = par.rstep.shape[0]
    end = min(par.nsteps, n + budget)
    while n < end and cr.status[b] == 0:
        t = n * dt
        row = par.tau[_tau_index(par, n, nxt), tb]
        bad = act_step(ac, n)
        if bad >= 0:
            _fail_at(cr, b, ST_CONTROL, bad, n, t, dt, q, v)
            break
        if par.kind == M_SYMPLECTIC:
            act_stage0(ac)
            code, joint = accel(m, r, s, sc, cp, par, dof, q, v, t, row, prow, fb, KV[0], ac, ns - ns)
            if code != 0:
                _fail_at(cr, b, code, joint, n, t, dt, q, v)
                break
            for k in range(nv):
                x = v[k] + dt * KV[0, k]
                vn[k] = x
                dq[k] = dt * x
            retract(mc, q, dq, qn)
            act_end(ac, dt, (1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0))
        else:
            code, joint, ts = stages(mb, R, S, mbc, SC, cp, par, dof, q, v, t, dt, ns - ns, row, prow, fb, ac)
            if code != 0:
                _fail_at(cr, b, code, joint, n, ts, dt, sc.qx, sc.vx)
                break
            b7 = par.b
            W = (b7[0], b7[1], b7[2], b7[3], b7[4], b7[5], b7[6])
            _step_end(mc, q, v, dt, W, KQ, KV, dq, qn, vn)
            act_end(ac, dt, W)
        code, joint, moved = _end_state(m, r, s, con, dof, qn, vn, (n + 1) * dt)
        if code != 0:
            _fail_at(cr, b, code, joint, n, t, dt, qn, vn)
            break
        _copy(qn, vn, q, v)
        act_accept(ac)
        n += 1
        if nxt < nrec and par.rstep[nxt] == n:
            _record(mb, R, S, m, r, s, cp, par, dof, cr, rec, ac, b, nxt, q, v, n * dt, n, dt)
            nxt += 1
    _finish(cr, ac, b, q, v, n, nxt, n == par.nsteps)


# ---------------------------------------------------------------------------- Dormand-Prince
@jit
def error_norm(q, v, qn, vn, h, E, KQ, KV, DOFQ, rtol, atol, acc0, n0):
    """RMS of the embedded error h sum_j e_j K_j (tangent increment, then velocities), each
    component over atol + rtol * its magnitude (a quaternion's rotation: 1 rad), with n0 more
    components whose squares sum to acc0 (the activations', ``actuate.act_error``)."""
    nv = v.shape[0]
    if 2 * nv + n0 == 0:
        return 0.0
    acc = acc0
    for k in range(nv):
        eq, ev = _weighted(E, KQ, KV, k)
        c = DOFQ[k]
        mq = max(abs(q[c]), abs(qn[c])) if c >= 0 else 1.0
        xq = h * eq / (atol + rtol * mq)
        xv = h * ev / (atol + rtol * max(abs(v[k]), abs(vn[k])))
        acc += xq * xq + xv * xv
    return math.sqrt(acc / (2 * nv + n0))


@jit
def dense(m, q, v, h, theta, P, KQ, KV, dq, qo, vo):
    """The state at t + theta h of the last step from (q, v): q (+) h sum_j b_j(theta) KQ_j."""
    t2 = theta * theta
    t3 = t2 * theta
    t4 = t3 * theta
    W = (_poly(P, 0, theta, t2, t3, t4), _poly(P, 1, theta, t2, t3, t4), _poly(P, 2, theta, t2, t3, t4),
         _poly(P, 3, theta, t2, t3, t4), _poly(P, 4, theta, t2, t3, t4), _poly(P, 5, theta, t2, t3, t4),
         _poly(P, 6, theta, t2, t3, t4))
    _step_end(m, q, v, h, W, KQ, KV, dq, qo, vo)


@jit(inline="always")
def _poly(P, j, t1, t2, t3, t4):
    return P[j, 0] * t1 + P[j, 1] * t2 + P[j, 2] * t3 + P[j, 3] * t4


@jit
def advance_dopri(mb, R, S, mbc, SC, cp, con, par, dof, cr, rec, ac, b, budget):
    """Up to ``budget`` attempted Dormand-Prince steps of trajectory b from its carried state, on
    the chunk's buffers (``run_dopri``)."""
    m, r, s, mc, sc = _views(mb, R, S, mbc, SC)
    t, h, errold, n = cr.t[b], cr.h[b], cr.errold[b], cr.step[b]
    q, v, qn, vn, KQ, KV = sc.qt, sc.vt, sc.qx, sc.vx, sc.KQ, sc.KV
    nxt = _begin(mb, R, S, m, r, s, cp, con, par, dof, cr, rec, ac, b, q, v, t, h)
    tb, prow, fb = _inputs_of(par, b)
    nv = v.shape[0]
    tend = par.tend
    trec = par.trec
    nrec = trec.shape[0]
    if cr.have_k1[b]:
        for k in range(nv):
            KV[0, k] = cr.a[b, k]
        act_k1_load(ac, b)
    tries = 0
    while t < tend and tries < budget and cr.status[b] == 0:
        tries += 1
        row = par.tau[_tau_index(par, n, nxt), tb]
        bad = act_step(ac, n)
        if bad >= 0:
            _fail_at(cr, b, ST_CONTROL, bad, n, t, h, q, v)
            break
        if not cr.have_k1[b]:
            act_stage0(ac)
            code, joint = accel(m, r, s, sc, cp, par, dof, q, v, t, row, prow, fb, KV[0], ac, n - n)
            cr.nfev[b] += 1
            if code != 0:
                _fail_at(cr, b, code, joint, n, t, h, q, v)
                break
            cr.have_k1[b] = True
        for k in range(nv):
            KQ[0, k] = v[k]
        # land exactly on t_final, and on each recording time when the torque changes there
        target = tend
        if par.taumode == TAU_INTERVAL and nxt < nrec and trec[nxt] < target:
            target = trec[nxt]
        hh = min(h, par.hmax)
        landing = t + hh >= target
        if landing:
            hh = target - t
        if not hh > 16.0 * EPS * max(abs(t), tend):
            _fail(cr, b, ST_UNDERFLOW, -1, n, t, hh, 0.0)
            break
        code, joint, ts = stages(mb, R, S, mbc, SC, cp, par, dof, q, v, t, hh, par.stages - 6, row, prow, fb, ac)
        cr.nfev[b] += 6
        if code != 0:
            _fail_at(cr, b, code, joint, n, ts, hh, sc.qx, sc.vx)
            break
        b7 = par.b
        act_end(ac, hh, (b7[0], b7[1], b7[2], b7[3], b7[4], b7[5], b7[6]))
        e7 = par.e
        acc0, n0 = act_error(ac, hh, (e7[0], e7[1], e7[2], e7[3], e7[4], e7[5], e7[6]), par.rtol, par.atol)
        err = error_norm(q, v, qn, vn, hh, par.e, KQ, KV, dof.dof_coord, par.rtol, par.atol, acc0, n0)
        if err <= 1.0:
            tn = target if landing else t + hh
            code, joint, moved = _end_state(m, r, s, con, dof, qn, vn, tn)
            if code != 0:
                _fail_at(cr, b, code, joint, n, t, hh, qn, vn)
                break
            # the activations: ac.at the step's end (recorded at tn), ac.a0 its start
            act_hold(ac)
            while nxt < nrec and trec[nxt] <= tn and cr.status[b] == 0:
                tr = trec[nxt]
                if tr == tn:
                    _record(mb, R, S, m, r, s, cp, par, dof, cr, rec, ac, b, nxt, qn, vn, tr, n + 1, hh)
                else:
                    # the continuous extension, into the trajectory's failed-state rows (free until then)
                    dense(mc, q, v, hh, (tr - t) / hh, par.p, KQ, KV, sc.dq, cr.fq[b], cr.fv[b])
                    # recorded states lie on the constraints too
                    code, joint, moved = project(con, m, r, s, cr.fq[b], cr.fv[b], tr)
                    if code != 0:
                        _fail_at(cr, b, code, joint, n + 1, tr, hh, cr.fq[b], cr.fv[b])
                        break
                    act_dense(ac, hh, (tr - t) / hh, par.p)
                    _record(mb, R, S, m, r, s, cp, par, dof, cr, rec, ac, b, nxt, cr.fq[b], cr.fv[b], tr, n + 1, hh)
                    act_accept(ac)
                nxt += 1
            fac = SAFETY * err ** (-ALPHA) * errold ** BETA
            fac = min(FACMAX, max(FACMIN, fac))
            if cr.rejected[b]:
                fac = min(fac, 1.0)
                cr.rejected[b] = False
            h = hh * fac
            errold = max(err, 1e-4)
            _copy(qn, vn, q, v)
            for k in range(nv):
                KV[0, k] = KV[6, k]
            stale = act_fsal(ac)
            # the last stage ran at t + hh; landing on a target may round that differently, and
            # a torque given per recorded time changes there: then K1 is not the last stage's
            # (nor where the activations' end was clamped or updated exactly, ``act_fsal``)
            if moved or stale or landing and (par.taumode == TAU_INTERVAL or t + hh != tn):
                cr.have_k1[b] = False
            t = tn
            n += 1
        else:
            cr.nrejected[b] += 1
            cr.rejected[b] = True
            if err > 0.0:
                h = hh * max(FACMIN, SAFETY * err ** (-ALPHA))
            else:
                h = hh * FACMIN                  # err is NaN: a stage diverged, try a much smaller step
    for k in range(nv):
        cr.a[b, k] = KV[0, k]
    act_k1_save(ac, b)
    cr.t[b] = t
    cr.h[b] = h
    cr.errold[b] = errold
    _finish(cr, ac, b, q, v, n, nxt, t >= tend)


# ---------------------------------------------------------------------------- one chunk of a batch
# One kernel per family of integrators, so that a run compiles the integrator it uses and no
# other (benchmarks/README.md: Dormand-Prince's loop alone compiles for about 16 s after RK4's).
@jit
def run_fixed(mb, R, S, mbc, SC, cp, con, par, dof, cr, rec, ac, lo, hi, budget):
    """Advance the unfinished trajectories lo..hi-1 by up to ``budget`` fixed steps each, one
    after the other, on the chunk's record R and scratch S (mb: the model's buffer; mbc, SC: the
    integrators' chart and scratch, the model's own for a model without couplers).  Chunks run
    in parallel on Python threads (the kernel releases the GIL): a parallel-loop kernel of this
    size took Numba a quarter of a minute more to compile."""
    for b in range(lo, hi):
        if cr.status[b] == 0 and not cr.done[b]:
            advance_fixed(mb, R, S, mbc, SC, cp, con, par, dof, cr, rec, ac, b, budget)


@jit
def run_dopri(mb, R, S, mbc, SC, cp, con, par, dof, cr, rec, ac, lo, hi, budget):
    """``run_fixed`` for Dormand-Prince: up to ``budget`` tries of a step each."""
    for b in range(lo, hi):
        if cr.status[b] == 0 and not cr.done[b]:
            advance_dopri(mb, R, S, mbc, SC, cp, con, par, dof, cr, rec, ac, b, budget)
