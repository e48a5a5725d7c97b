"""Time integration of the forward dynamics,

    q' = N(q) u,    u' = aba(q, u, tau(t, q, u) + tau_passive, t),
    tau_passive = -damping u - stiffness (q - spring_ref),

in a compiled time loop (``integrators``), for one trajectory or a batch of initial states in parallel.

The configuration moves on its manifold: the tangent space has dimension nv; a coordinate whose
rate is its velocity variable moves by it, a unit quaternion by a rotation vector th at its joint's
three angular velocity variables u (C axes, q' = 1/2 q (x) (0, u)): q (+) th = q (x) Exp(th)
(``quaternions.retract``).  Runge-Kutta methods run in that chart (Runge-Kutta-Munthe-Kaas): stage j sits
at q (+) Delta_j, Delta_j = h sum_l a_jl K_l, with the stage rate K_j = dexpinv(Delta_j) u_j
(``quaternions.tangent_rates``); the step ends at q (+) h sum_j b_j K_j.  Quaternions thus stay unit
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
what it had recorded is kept.  A model with loop closures runs the same loop, the constrained
dynamics at every stage and its state projected onto the loop constraints after every accepted
step (``closed``); a loop that cannot be closed stops its trajectory (``CONSTRAINT``).

This module is the Python side of ``ej.simulate``: it checks the inputs (``prepare``), builds
the named records of the loop (``records``), runs the loop in segments over chunks of the batch
on threads (progress, Ctrl-C), and hands the result to ``results``.
"""
import time

import numpy as np

from ..calls import workspaces
from ..calls.python_layer import paths
from ..model import inputs, layout
from ..model.couplers import coupled_chunks
from .integrators import run_dopri, run_fixed
from .prepare import prepare
from .records import Actuated, SimParams, new_carry, new_recording, running
from .results import assemble, interrupted, raise_or_flag
from .status import ST_INTERRUPTED, ST_TORQUE
from .tableaux import DP_E, DP_P, M_DOPRI, TABLEAUX
from .closed import check_run, closed_chunks

SEGMENT_S = 0.25        # target length of one compiled segment (a progress update)


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


def sim_params(run):
    """The ``SimParams`` record of a run (every number of a fixed type: no new compilation; ``full``
    None or True, as the kernel model's joint paths ask, like the one-state entries: a model whose
    joints all have fast paths compiles none of the generic and user paths)."""
    tab = TABLEAUX[run.method]
    law = 0 if run.law is None else int(run.law.address)
    return SimParams(int(tab.kind), int(tab.stages), int(run.taumode), law, bool(run.passive), int(run.nsteps),
                     float(run.dt), float(run.tend), float(run.rtol), float(run.atol), float(run.hmax),
                     float(run.emax), tab.A, tab.b, tab.c, DP_E, DP_P, run.RSTEP, run.TREC, run.TAU, run.LP, run.F,
                     paths(run.model.kernel_model()))


class _Loop:
    """The compiled loop of one run over chunks of its batch: ``segment(budget)`` advances every
    running trajectory by up to ``budget`` steps (chunks in parallel on threads)."""

    def __init__(self, run):
        model = run.model
        n = run.n
        self.run = run
        self.par = sim_params(run)
        self.kernel = run_dopri if self.par.kind == M_DOPRI else run_fixed
        self.cr = new_carry(run.q0, run.v0, min(run.dt, run.hmax))
        self.rec = new_recording(run.nrec, n, model.nq, model.nv)
        nchunk = workspaces.n_chunks(n)
        km = model.kernel_model()
        self.mb = km._mb
        self.R = np.zeros((nchunk, model.record_size))
        self.S = np.zeros((nchunk, model.scratch_size))
        if model.has_couplers:
            # the integrators' chart and scratch in the model's own coordinates, the dynamics on
            # its expansion (``stage.coupled_accel``)
            self.mbc = _chart(model)
            self.SC = np.zeros((nchunk, int(self.mbc[layout.H_SCR])))
            self.cps = coupled_chunks(model, (km.nq, km.nv), nchunk)
        else:
            self.mbc, self.SC, self.cps = self.mb, self.S, [None] * nchunk
        # loop closures: the constrained dynamics at every stage and ``stage.project`` after every
        # step, on one ``Closed`` record per chunk (None: no constraints)
        self.cons = [None] * nchunk
        if model.has_loops:
            self.cps = self.cons = closed_chunks(model, nchunk, run.redundant, self.mbc)
        self.acs, self.act, self.rec_act, self.rec_force = _actuated_chunks(run, km, nchunk)
        self.bounds = [(c * n // nchunk, (c + 1) * n // nchunk) for c in range(nchunk)]
        self.pool = None
        if nchunk > 1:
            import numba
            from concurrent.futures import ThreadPoolExecutor
            self.pool = ThreadPoolExecutor(max_workers=max(1, min(nchunk, numba.get_num_threads())))

    def _chunk(self, c, budget):
        lo, hi = self.bounds[c]
        self.kernel(self.mb, self.R[c], self.S[c], self.mbc, self.SC[c], self.cps[c], self.cons[c], self.par,
                    self.run.dof, self.cr, self.rec, self.acs[c], lo, hi, budget)

    def segment(self, budget):
        b = np.int64(budget)
        if self.pool is None:
            self._chunk(0, b)
        else:
            for f in [self.pool.submit(self._chunk, c, b) for c in range(len(self.bounds))]:
                f.result()

    def done_units(self):
        """Progress: simulated seconds (dopri5) or steps, over the whole batch."""
        cr, run = self.cr, self.run
        if self.par.kind == M_DOPRI:
            return float(np.sum(np.where(cr.status == 0, cr.t, run.tend)))
        return int(np.sum(np.where(cr.status == 0, cr.step, run.nsteps)))

    def close(self, wait=True):
        if self.pool is not None:
            self.pool.shutdown(wait=wait)


def _run_compiled(run, progress, segment_steps):
    loop = _Loop(run)
    cr = loop.cr
    dopri = loop.par.kind == M_DOPRI
    n = run.n
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
            live = running(cr)
            if not live.any():
                break
            if pylaw is not None:
                _python_law_torques(run, pylaw, cr, live, dopri)
                cr.have_k1[:] = False           # the held torque changes at every step
                budget = 1
            before = loop.done_units()
            t0 = time.perf_counter()
            loop.segment(budget)
            el = time.perf_counter() - t0
            calls += 1
            if calls == 1:
                run.first_call = el
            now = loop.done_units()
            # the first call compiles or loads the kernel: its rate says nothing
            bar.update(now, (now - before) / max(el, 1e-9) if calls > 1 else 0.0)
            if segment_steps is None and pylaw is None and calls > 1:
                budget = int(min(max(1, budget * min(4.0, max(0.25, SEGMENT_S / max(el, 1e-6)))), 1 << 40))
            elif segment_steps is None and calls == 1:
                budget = max(1, int(SEGMENT_S / max(1e-7, _step_cost_guess(run.model, loop.par.stages, n))))
    except KeyboardInterrupt as e:
        bar.close()
        loop.close()
        _mark_interrupted(run, cr, dopri)
        e.partial = interrupted(assemble(run, loop.rec, cr, time.perf_counter() - t_start, loop), run)
        # the message of the stop (a bare KeyboardInterrupt says nothing): that of the first
        # trajectory it stopped
        msgs = e.partial.message if isinstance(e.partial.message, list) else [e.partial.message]
        e.args = (next((m for m in msgs if m), "simulation interrupted"),)
        raise
    bar.close()
    loop.close()
    return assemble(run, loop.rec, cr, time.perf_counter() - t_start, loop)


def _actuated_chunks(run, km, nchunk):
    """One ``records.Actuated`` per chunk (None for each without actuation), sharing the carried
    activations (n, na) and the recordings (T, n, na), (T, n, nu), each with its own scratch."""
    act = run.actuation
    if act is None:
        return [None] * nchunk, None, None, None
    from ..actuation.tables import SLOT
    ab, ib = act.packed()
    # ``actearly`` looks one step ahead with MuJoCo's opt.timestep: the run's step here
    ab = ab.copy()
    ab[int(ib[SLOT["opt_timestep"]])] = float(run.dt)
    eb = _element_buffers(act)
    n, na, nu, nrec = run.n, int(act.na), int(act.nu), run.nrec
    carried = run.ACT0.copy()
    ka0 = np.zeros((n, na))
    rec_act = np.full((nrec, n, na), np.nan)
    rec_force = np.full((nrec if run.record_forces else 0, n, nu), np.nan)
    foff = int(ib[SLOT["actuator_force"]])
    wsize = int(act.work_size(km))
    acs = [Actuated(ab, ib, eb, run.CTRL, int(run.cmode), run.ACTLIM, carried, rec_act, rec_force, foff,
                    int(act.nu_mj), np.zeros(na), np.zeros(na), np.zeros(na), np.zeros((7, na)), np.zeros(wsize),
                    np.zeros(km.nv), np.zeros(2, dtype=np.int64), ka0, np.zeros(na)) for _ in range(nchunk)]
    return acs, carried, rec_act, rec_force


def _element_buffers(act):
    """The packed buffers of the actuation's OpenSim force elements, or None."""
    el = act.elements
    if el is None:
        return None
    return el.packed()


def _chart(model):
    """A model buffer of a model with couplers whose joint tables address its own coordinates
    (q, v without the dependent ones), the rest its expansion's: what ``retract``,
    ``tangent_rates`` and ``scratch_view`` read of the integrators' state (never dynamics)."""
    cached = model.__dict__.get("_chart_mb")
    if cached is not None:
        return cached
    full = model.expanded()
    sizes = dict(layout.sizes_of(full._mb), nq=model.nq, nv=model.nv)
    mb, _ = layout.pack_model(sizes, {t.name: getattr(model, t.name) for t in layout.MODEL})
    mb.flags.writeable = False
    object.__setattr__(model, "_chart_mb", mb)
    return mb


def _mark_interrupted(run, cr, dopri):
    """Trajectories still running when the run was interrupted stop with INTERRUPTED at their
    last computed state."""
    live = running(cr)
    cr.status[live] = ST_INTERRUPTED
    cr.joint[live] = -1
    cr.failstep[live] = cr.step[live]
    cr.tfail[live] = cr.t[live] if dopri else cr.step[live] * run.dt


def _step_cost_guess(model, ns, n):
    """Seconds per step of the whole batch, for the first segment's length (then measured)."""
    import numba
    per = 0.4e-6 * max(1, model.nbodies) * (ns + 0.5)
    return per * n / max(1, min(n, numba.get_num_threads()))


def _python_law_torques(run, law, cr, live, dopri):
    """The held joint forces of a Python callable tau(t, q, qd), at each running trajectory's
    current state."""
    for b in np.nonzero(live)[0]:
        t = cr.t[b] if dopri else cr.step[b] * run.dt
        try:
            x = np.asarray(law(t, cr.q[b].copy(), cr.v[b].copy()), dtype=np.float64)
        except (TypeError, ValueError) as e:
            raise ValueError(f"tau: the torque function raised {type(e).__name__}: {e}") from e
        if x.shape != (run.model.nv,):
            raise ValueError(f"tau: the torque function returned shape {x.shape}, expected ({run.model.nv},)")
        if not np.all(np.isfinite(x)):
            k = int(np.nonzero(~np.isfinite(x))[0][0])
            cr.status[b] = ST_TORQUE
            cr.joint[b] = run.DOFJ[k]
            cr.failstep[b] = cr.step[b]
            cr.tfail[b] = t
            continue
        run.TAU[0, b] = x


def simulate(model, q0, qd0, t_final, dt, method="rk4", tau=None, record_every=1, *, t_eval=None, rtol=1e-8,
             atol=1e-10, max_step=None, damping=None, stiffness=None, spring_ref=None, f_ext=None, max_energy=None,
             limits=True, errors="raise", progress=None, segment_steps=None, redundant="raise", ctrl=None,
             act0=None):
    """Integrate the forward dynamics from (q0, qd0) over [0, t_final]; returns a ``Trajectory``.

    q0 (nq,), qd0 (nv,), or (B, nq), (B, nv): a batch of B trajectories integrated in parallel,
    each bit for bit as alone.  Quaternion blocks of q0 further than 1e-3 from unit norm are a
    ``ValueError``; closer ones are normalised.  ``t_final >= 0`` and ``dt > 0`` are numbers (not
    text nor booleans); a fixed-step ``dt`` that would take no step of a ``t_final > 0`` (``dt >
    2 t_final``) is a ``ValueError``.

    ``method``: "rk4" (default), "rk2" (midpoint), "euler" (explicit Runge-Kutta with fixed step
    dt, orders 4, 2, 1), "symplectic" (semi-implicit Euler: qd += dt qdd, then q moves by dt qd;
    order 1) or "dopri5" (Dormand-Prince 5(4), adaptive: ``rtol`` (at least 1e-14), ``atol``
    (>= 0), ``max_step``; dt is its first trial step).  Unit quaternions move as q (x) Exp(theta)
    and stay unit; rheonomic joints see each stage's own time; fixed-step times are n dt.

    Recording: the state at steps 0, k, 2k, ... and the last (``record_every`` = k), i.e. at
    t = n dt; ``round(t_final / dt) + 1`` times from 0 by default.  dopri5 reports the same times
    by its continuous extension, or the times ``t_eval`` (dopri5 only, not with
    ``record_every``; strictly increasing, within [0, t_final]).

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
    on a unit quaternion's rotation (a ``ValueError``).  The dynamics functions (``rnea``,
    ``aba``, ...) never include these passive forces.  ``f_ext``: constant world-frame wrenches (N+1, 6) or
    (B, N+1, 6), as ``ej.aba``.

    ``limits``: the model's coordinate limits (``q_lower``, ``q_upper``) act on every coordinate
    whose rate is its velocity variable (not on a unit quaternion's components) as a stiff
    one-sided spring-damper, MuJoCo's soft-constraint law: below the lower limit (above the
    upper, mirrored) tau_k = max(0, m_k (x / (tc zeta)^2 - 2 qd_k / tc)), x the penetration,
    m_k = 1 / (M^-1)_kk the coordinate's apparent inertia at ``model.neutral()`` (MuJoCo's
    constraint-space inertia of a joint limit: the limit closes with time constant tc there;
    M_kk where M is singular, 1 where that is not positive); it only pushes.
    True (default, on for every model that has limits): tc = 0.02 s, zeta = 1 (critical damping;
    MuJoCo's default solref); (tc, zeta): other positive numbers; False: limits off.
    ``trajectory.limit_work`` is their work and ``trajectory.info["limits"]`` the settings,
    ``{"time_constant", "damping_ratio", "coordinates"}`` (None when off or the model has no
    limits).

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
    (dopri5: step attempts; default: about every quarter second); no result depends on it.  A
    bar opens after the first segment (which compiles or loads the loop), so its rate and time
    left are the run's.  Ctrl-C (SIGINT) stops the run between segments; the KeyboardInterrupt
    carries the trajectory so far as ``.partial``: status ``SimulationStatus.INTERRUPTED`` for
    every trajectory still running, ``stop_time`` its last computed time, a message saying so,
    ``info["interrupted"] = True``, and only the rows computed (one trajectory: its records, then
    its last computed state when it lies after them; a batch: the rows up to the last any
    trajectory recorded).

    Actuated models (``model.actuation``: MJCF actuators, tendons and gravity compensation,
    OpenSim actuators and force elements) take ``ctrl``, MuJoCo's controls (nu per trajectory,
    names ``model.actuation.ctrl_names``): None (zero), (nu,) or (B, nu) held over the run,
    (nsteps, nu) or (nsteps, B, nu) one row per step, held over it as MuJoCo holds ``ctrl`` over
    ``mj_step`` (fixed-step methods); and ``act0``, the initial activations (na,) or (B, na)
    (default zero).  Every stage adds the actuation's joint forces at its own (q, qd, act, t) to
    tau (``ej.actuation``'s ``qfrc_actuator`` + tendon springs and dampers + gravity
    compensation + the force elements'; the joints' own damping and springs as above), and the
    activations are state: integrated with q and qd by the method's tableau (act of stage j =
    act + h sum_l a_jl act_dot_l), the step ending at act + h sum_j b_j act_dot_j (a
    ``filterexact`` activation: act + tau (1 - exp(-h / tau)) sum_j b_j act_dot_j), clamped to
    ``actrange`` where ``actlimited`` (MuJoCo's ``mj_RungeKutta`` and ``mj_nextActivation``; for
    "symplectic", MuJoCo's Euler update act + h act_dot at the step's start).  The trajectory
    adds ``act`` (T, [B], na) and ``actuator_force`` (T, [B], nu): MuJoCo's ``actuator_force``
    at each recorded state with the controls of the step that starts there (the last step's at
    the end).  A NaN or inf control is a ``ValueError`` naming the actuator, step and trajectory
    (``errors="flag"``: that trajectory stops at that step with
    ``SimulationStatus.NONFINITE_CONTROL``); an actuation that fails stops its trajectory with
    ``SimulationStatus.ACTUATION``.  A model without actuation takes ``ctrl`` and ``act0`` of size
    0 (or None) and runs exactly as without them.  Not supported yet with actuation: models with
    loop closures.  "dopri5" integrates the activations with the velocities' tableau (first
    same as last), their embedded error counted in the step control as the velocities' are
    (|act| in the scale), the recorded times between steps by the continuous extension, clamped;
    ``ctrl`` is then held over the whole run.  A model with couplers computes the actuation on
    its expansion and reduces its joint forces by the couplers' Jacobian, G^T qfrc (as
    ``ej.forward_dynamics``).  ``ej.rollout`` runs many initial states with their own control
    sequences (B, T, nu) in this loop.

    A model with couplers (mimic joints and nonlinear couplers) runs in the same compiled loop,
    with every method, input, limit and stop: it integrates its own coordinates, its dynamics
    those of ``model.expanded()`` projected by the couplers' Jacobian
    (``ModelBuilder.add_coupler``).

    A model with loop closures runs in the same compiled time loop, by every method, each
    stage's accelerations those of ``ej.constrained_dynamics`` (``Jc qdd + bc = 0`` exactly;
    ``redundant`` as there), and projects the state back onto the loop constraints after every
    accepted step and at the start (dopri5: also each recorded state of its continuous
    extension), so drift does not accumulate: where the largest loop pose error ``|N_c^T e|``
    exceeds 1e-12, Gauss-Newton in the kinetic-energy metric, ``q <- q (+) (-M^-1 Jc^T (Jc M^-1
    Jc^T)^+ N_c^T e)`` with backtracking on ``|N_c^T e|`` until it is at most 1e-12 (as
    ``assemble``; a residual left above 1e-9 fails); then, where ``max |Jc v + s|`` exceeds
    1e-12, the velocity of ``project_velocity``.  Batches run in parallel, each trajectory bit
    for bit as alone; ``tau``, passive joint forces, joint limits, ``max_energy``, ``errors``,
    ``progress``, ``segment_steps`` as for a tree (a Python callable ``tau(t, q, qd)`` held over
    each step); ``t_eval`` and ``f_ext`` are not supported there (a ``ValueError``).  A loop
    model with couplers runs on its expansion, reduced by the couplers' Jacobian G (``M = G^T
    M_full G``, ``h = G^T h_full`` with the bias ``Gdot v`` in the expansion's sweep, ``Jc =
    Jc_full G``), as ``constrained_dynamics`` and ``loop_terms`` do; its energies are those of
    the expansion.  A loop that cannot be closed, a rank-deficient Jc under
    ``redundant="raise"`` or a closure kernel that does not converge stops the trajectory with
    ``SimulationStatus.CONSTRAINT`` and a message naming each loop's residual (or the loops and
    directions).  The trajectory adds ``position_residual`` and ``velocity_residual`` (T, [B])
    at the recorded times and ``info["loops"]``, ``info["projection_tol"]``."""
    inputs.check_errors_arg(errors)
    if getattr(model, "has_loops", False):
        check_run(model, t_eval, f_ext, redundant)
    run = prepare(model, q0, qd0, t_final, dt, method, tau, record_every, t_eval, rtol, atol, max_step, damping,
                   stiffness, spring_ref, f_ext, max_energy, limits, ctrl, act0, errors)
    run.redundant = redundant
    if segment_steps is not None and (isinstance(segment_steps, bool) or int(segment_steps) < 1):
        raise ValueError(f"segment_steps must be a positive integer, got {segment_steps!r}")
    traj = _run_compiled(run, progress, segment_steps)
    return raise_or_flag(traj, run, errors)
