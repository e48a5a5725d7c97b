"""The ``ejce-nb`` command (also ``python -m ejce_nb``).

  ejce-nb                     the paper's example, then batch kinematics and dynamics on a shipped model
  ejce-nb info MODEL          summary of a model (shipped name, .json, .urdf, .xml (MJCF) or .osim)
  ejce-nb bench MODEL         throughput of batched kinematics on a model
  ejce-nb sweep MODEL --n N --quantities Q,... --out DIR
                              Monte Carlo sweep into a store (resumable; see ej.sweep)
  ejce-nb report DIR          summary table of a sweep, and a plot of histograms and workspace
  ejce-nb simulate MODEL      integrate the dynamics from rest (or --q0 / --qd0): summary, file, plot
  ejce-nb compile [MODEL...]  compile the kernels models need into the on-disk cache (--all: every function)
  ejce-nb view MODEL          show a model (and a trajectory, --traj FILE) in 3-D in the browser

Every command that loads a model takes ``--joints FILE.py`` (a Python file that defines and
registers user joints, e.g. examples/user_joints.py for data/scapula.json) and, for URDF files,
``--floating-base PARAM``.  The first use of a kernel compiles it (announced on standard error;
EJCE_NB_QUIET=1 silences it); later runs load it from the cache.
"""
import argparse
import sys
import time
import warnings

import numpy as np

from . import ModelBuilder, ModelError, SweepError, forward_kinematics, joint_terms, open_sweep, sweep
from ._jit import cache_is_cold, compile_elsewhere
from .calls.public import aba, rnea
from .core import joints
from .core.euler import euler_rate_matrix
from .io.zoo import SHIPPED, load, random_states
from .precompile import BASIC, FUNCTIONS, precompile
from .sim.animate import MAX_FRAMES, effective_fps, frame_rows, playback, writer_for
from .sim.driver import simulate
from .sim.plot import require_matplotlib
from .sim.status import SimulationError, SimulationStatus

PAPER_SEQUENCES = ("ZXZ", "ZYX", "XYZ", "YXY", "zxz", "zyx", "xyz", "yzy")

DESCRIPTION = ("Rigid multibody kinematics and dynamics with the EJCE method: run the paper's example and "
               "measure throughput (no command, or demo), summarise a model (info), measure batched "
               "kinematics (bench), run and report Monte Carlo sweeps (sweep, report) and simulate a "
               "model's dynamics (simulate).")


def load_joints(path):
    """Run the Python file ``path`` that defines user joints and make them known to model files:
    its ``register()`` when it has one, else every ``ej.joints.Custom`` it defines."""
    import importlib.util
    import os

    if not os.path.isfile(path) or not path.endswith(".py"):
        raise ValueError(f"--joints: {path!r} is not a Python file (.py) that defines user joints")
    name = "ejce_nb_user_joints_" + "".join(c if c.isalnum() else "_" for c in os.path.abspath(path))
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    except Exception as e:          # noqa: BLE001 - the user's file: say which and why
        raise ValueError(f"--joints {path}: running it raised {type(e).__name__}: {e}") from e
    if callable(getattr(mod, "register", None)):
        mod.register()
        return
    found = [x for x in vars(mod).values() if isinstance(x, joints.Custom)]
    if not found:
        raise ValueError(f"--joints {path}: it defines no ej.joints.Custom joint and no register() function")
    for j in found:
        joints.register(j)


def load_model(args):
    """The model a command names, after registering its ``--joints`` files; URDF files with
    ``--floating-base``."""
    for path in getattr(args, "joints", None) or []:
        load_joints(path)
    fb = getattr(args, "floating_base", None)
    name = args.model
    if fb is not None:
        if not str(name).lower().endswith(".urdf"):
            raise ValueError(f"--floating-base applies to URDF models, not {name!r}")
        return load(name, floating_base=fb)
    return load(name)


def paper_example(n_states=5, seed=2026, out=None):
    """A spherical joint between two bodies: the Jacobian of the generic EJCE method beside the
    matrix of Euler's kinematic equations, for several sequences and random states (one batch
    of states per sequence: the batch kernel is the one ``bench`` runs, so the example compiles
    nothing more).  Returns the largest difference."""
    out = out or sys.stdout
    rng = np.random.default_rng(seed)
    worst = 0.0
    print("Paper example: spherical joint between two bodies, Jacobian of the EJCE method vs "
          "Euler's kinematic equations", file=out)
    print(f"  {'sequence':>8s}  {'angles (rad)':>30s}  {'max |J_w - E|':>14s}", file=out)
    for seq in PAPER_SEQUENCES:
        b = ModelBuilder()
        b.add_body("body1", joint=joints.Fixed(), mass=1.0, inertia=np.eye(3))
        b.add_body("body2", parent="body1", joint=joints.Spherical(seq), mass=1.0, inertia=np.eye(3))
        model = b.build()
        Q = rng.uniform(-np.pi, np.pi, (n_states, 3))
        J = joint_terms(model, Q, rng.normal(size=(n_states, 3))).J
        for q, Jq in zip(Q, J):
            diff = float(np.abs(Jq[:3, :] - euler_rate_matrix(seq, q)).max())
            worst = max(worst, diff)
            print(f"  {seq:>8s}  {np.array2string(q, precision=4, floatmode='fixed'):>30s}  {diff:14.3e}", file=out)
    print(f"  largest difference over all sequences and states: {worst:.3e}", file=out)
    return worst


def bench(model, batch=100_000, repeats=3, threads=None, out=None):
    """Throughput (states/s) of batched forward kinematics with accelerations."""
    import numba

    out = out or sys.stdout
    if threads:
        numba.set_num_threads(threads)
    q, qd, qdd = random_states(model, batch, 0)
    res = forward_kinematics(model, q, qd, qdd)               # compile or load; allocate the outputs
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        forward_kinematics(model, q, qd, qdd, out=res)
        best = min(best, time.perf_counter() - t0)
    rate = batch / best
    print(f"batch forward kinematics with accelerations: {batch} states of {model.nbodies} bodies "
          f"in {best * 1e3:.1f} ms on {numba.get_num_threads()} thread(s): {rate:,.0f} states/s", file=out)
    return rate


def dynamics_elsewhere(args, batch=8):
    """The batch calls of ``dynamics_demo`` (``rnea`` and ``aba`` on a batch) on the model of
    ``args``: run by ``compile_elsewhere`` in a second process, which compiles their kernels while
    the first compiles the others (about half the compiling each)."""
    model = load_model(args)
    q, qd, qdd = random_states(model, batch, 1)
    aba(model, q, qd, rnea(model, q, qd, qdd))


def dynamics_demo(model, batch=20_000, out=None, compiled=None):
    """rnea and aba on one state and on a batch: time per call, states per second, and
    aba(rnea(qdd)) = qdd.  Returns the largest relative error.  ``compiled``: called before the
    first batch (the wait for ``dynamics_elsewhere`` in a second process)."""
    import numba

    out = out or sys.stdout
    q, qd, qdd = random_states(model, batch, 1)
    one = (q[0], qd[0], qdd[0]), (q[1], qd[1], qdd[1])
    tau1 = [rnea(model, *one[j]) for j in range(2)]
    k = 2000
    t0 = time.perf_counter()
    for j in range(k):
        rnea(model, *one[j & 1])
    t_r = (time.perf_counter() - t0) / k
    aba(model, one[0][0], one[0][1], tau1[0])
    t0 = time.perf_counter()
    for j in range(k):
        aba(model, one[j & 1][0], one[j & 1][1], tau1[j & 1])
    t_a = (time.perf_counter() - t0) / k
    if compiled is not None:
        compiled()
    tau = rnea(model, q, qd, qdd)
    err = float(np.abs(aba(model, q, qd, tau) - qdd).max() / max(1.0, np.abs(qdd).max()))
    t0 = time.perf_counter()
    rnea(model, q, qd, qdd)
    b_r = batch / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    aba(model, q, qd, tau)
    b_a = batch / (time.perf_counter() - t0)
    print(f"dynamics: one call rnea {t_r * 1e6:.2f} us, aba {t_a * 1e6:.2f} us; a batch of {batch} on "
          f"{numba.get_num_threads()} thread(s): rnea {b_r:,.0f}, aba {b_a:,.0f} states/s; "
          f"aba(rnea(qdd)) - qdd: {err:.1e}", file=out)
    return err


def _number(text, what, ok):
    """``text`` as a number for which ``ok`` holds, else an argument error naming ``what``."""
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
    if not ok(x):
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
    return x


def _count(text):
    """A positive integer, also written like 1e6."""
    return int(_number(text, "a positive integer", lambda x: x.is_integer() and x > 0))


def run_sweep(args, out=None):
    """The ``sweep`` command: ej.sweep with a progress bar, then a line of figures."""
    import numba

    out = out or sys.stdout
    if args.threads:
        numba.set_num_threads(args.threads)
    model = load_model(args)
    client = None
    if args.scheduler:
        try:
            from distributed import Client
        except ImportError:
            raise ValueError('--scheduler needs dask.distributed: pip install ".[dask]"') from None
        client = Client(args.scheduler)
    try:
        res = sweep(model, args.n, args.quantities, args.out, chunk_size=args.chunk_size, seed=args.seed,
                    t=args.t, scheduler=client, progress=not args.no_progress,
                    store_inputs=not args.no_store_inputs, independent=args.independent)
    finally:
        if client is not None:
            client.close()
    info = res.run_info
    where = "on the Dask cluster" if client is not None else f"on {numba.get_num_threads()} thread(s)"
    if model.has_loops:
        print(f"{res.path}: loops {', '.join(repr(L.name) for L in model.loops)} closed for each sample from its "
              f"independent coordinates {', '.join(res.spec['loops']['independent'])}", file=out)
    if info["computed"]:
        # run_info's seconds leave compiling out (run_info["compile_seconds"])
        rate = info["computed"] / max(info["seconds"], 1e-12)
        print(f"{res.path}: {info['computed']:,} states of {args.model} ({', '.join(res.quantities)}) in "
              f"{info['seconds']:.2f} s {where}: {rate:,.0f} states/s"
              + (f" (after {info['compile_seconds']:.2f} s compiling or loading the kernels)"
                 if info["compile_seconds"] >= 0.01 else "")
              + (f"; {info['resumed_chunks']} chunks were already done" if info["resumed_chunks"] else "")
              + (f"; {info['flagged']:,} samples flagged (see their status with ejce-nb report)"
                 if info["flagged"] else ""), file=out)
    else:
        print(f"{res.path}: all {res.n:,} states were already done", file=out)
    return 0


def run_report(args, out=None):
    """The ``report`` command: the summary table, recorded failures, and the plot."""
    out = out or sys.stdout
    res = open_sweep(args.dir)
    print(res.summary(), file=out)
    for f in res.failures():
        print(f"failed: chunk {f['chunk']} (samples {f['first']}..{f['stop'] - 1}): {f['reason']}", file=out)
    if not res.complete:
        print(f"missing: {res.n - res.n_done:,} states in {res.nchunks - len(res.chunks_done)} chunks; "
              "rerun the sweep with the same arguments to finish it", file=out)
    if not args.no_plot:
        path = res.plot(args.plot, bins=args.bins)
        print(f"wrote {path}", file=out)
    return 0


def _vector(text, n, what):
    """n numbers from "a,b,c" (or spaces), a .npy file or a text file of numbers."""
    import os
    try:
        if text.endswith(".npy"):
            x = np.load(text)
        elif os.path.isfile(text):
            with open(text) as f:
                x = np.array(f.read().replace(",", " ").split(), dtype=float)
        else:
            x = np.array(text.replace(",", " ").split(), dtype=float)
    except ValueError:
        raise ValueError(f"{what}: expected {n} numbers separated by commas (or a .npy file), got {text!r}") from None
    x = np.asarray(x, dtype=float).reshape(-1)
    if x.shape != (n,):
        raise ValueError(f"{what}: expected {n} numbers for this model, got {x.shape[0]}")
    return x


def _controls(path, model, nsteps):
    """The controls of ``--ctrl FILE``: a .npy or .csv file (commas; a first line of names is
    skipped) of shape (nsteps, nu), one row per step, or (nu,) held over the run."""
    import os
    act = getattr(model, "actuation", None)
    if act is None:
        raise ValueError("--ctrl: the model has no actuators or force elements to control")
    nu = int(act.nu)
    if not os.path.isfile(path):
        raise ValueError(f"--ctrl: no such file {path!r}")
    try:
        if path.lower().endswith(".npy"):
            x = np.load(path, allow_pickle=False)
        elif path.lower().endswith(".csv"):
            try:
                x = np.loadtxt(path, delimiter=",", ndmin=2)
            except ValueError:
                x = np.loadtxt(path, delimiter=",", ndmin=2, skiprows=1)
            if x.shape[0] == 1:
                x = x[0]
        else:
            raise ValueError(f"--ctrl: the file name must end in .npy or .csv, got {path!r}")
        x = np.asarray(x, dtype=np.float64)
    except (OSError, ValueError) as e:
        if str(e).startswith("--ctrl"):
            raise
        raise ValueError(f"--ctrl: cannot read {path!r} as numbers: {e}") from None
    if x.ndim == 2 and x.shape[1] == nu and x.shape[0] == nsteps or x.shape == (nu,):
        return x
    raise ValueError(f"--ctrl: {path} holds shape {x.shape}; this run needs ({nsteps}, {nu}) (one row per step of "
                     f"--t / --dt) or ({nu},) (held over the run), the controls being "
                     f"{', '.join(act.ctrl_names[:10])}{', ...' if nu > 10 else ''}")


def simulate_command(args, out=None, err=None):
    """``ejce-nb simulate``: returns the exit status (0 done, 3 the simulation stopped early)."""
    import numba

    out = out or sys.stdout
    err = err or sys.stderr
    if args.plot:
        try:
            require_matplotlib()
        except ImportError as e:
            raise ImportError(f"--plot: {e}") from None
    if args.plot and not args.plot.lower().endswith((".png", ".pdf", ".svg", ".jpg", ".jpeg")):
        raise ValueError(f"--plot: the file name must end in .png, .pdf, .svg or .jpg, got {args.plot!r}")
    if args.animate:
        try:
            writer_for(args.animate, args.fps)
        except (ImportError, RuntimeError, ValueError) as e:
            raise ValueError(f"--animate: {e}") from None
    if args.threads:
        numba.set_num_threads(args.threads)
    model = load_model(args)
    q0 = model.neutral() if args.q0 is None else _vector(args.q0, model.nq, "--q0")
    qd0 = np.zeros(model.nv) if args.qd0 is None else _vector(args.qd0, model.nv, "--qd0")
    if model.has_loops:
        q0 = _closed_start(model, q0, args.independent, "--q0" if args.q0 is not None else "neutral()", out)
    elif args.independent is not None:
        raise ValueError("--independent: the model has no loop closures")
    snapshots = None
    if args.snapshot:
        try:
            snapshots = [float(x) for x in args.snapshot.replace(",", " ").split()]
        except ValueError:
            raise ValueError(f"--snapshot: expected times separated by commas, got {args.snapshot!r}") from None
    if args.out and not args.out.lower().endswith((".npz", ".csv")):
        raise ValueError(f"--out: the file name must end in .npz (exact, Trajectory.load) or .csv, got {args.out!r}")
    progress = False
    if not args.no_progress:
        try:
            import tqdm  # noqa: F401
            progress = True
        except ImportError:
            progress = None
    kw = dict(method=args.method, record_every=args.record_every, progress=progress, damping=args.damping,
              limits=not args.no_limits)
    if model.has_loops:
        kw["redundant"] = args.redundant
    if args.method == "dopri5":
        kw.update(rtol=args.rtol, atol=args.atol)
    if args.max_energy is not None:
        kw["max_energy"] = args.max_energy
    warm = {}
    if args.ctrl is not None:
        kw["ctrl"] = _controls(args.ctrl, model, int(round(args.t / args.dt)))
        warm["ctrl"] = kw["ctrl"][:1] if kw["ctrl"].ndim == 2 else kw["ctrl"]
    if args.act0 is not None:
        act = getattr(model, "actuation", None)
        if act is None:
            raise ValueError("--act0: the model has no actuators")
        kw["act0"] = _vector(args.act0, int(act.na), "--act0")
    status = 0
    # compile or load the time loop first, so that the progress bar and steps/s measure the run
    try:
        simulate(model, q0, qd0, min(args.t, args.dt), args.dt,
                 **dict(kw, progress=False, max_energy=np.inf, **warm))
    except SimulationError:
        pass                        # the run itself reports it
    t0 = time.perf_counter()
    try:
        traj = simulate(model, q0, qd0, args.t, args.dt, **kw)
    except SimulationError as e:
        # the options of the command line, where the message names those of the Python call
        print("ejce-nb: " + str(e).replace("pass redundant='lstsq'", "pass --redundant lstsq"), file=err)
        traj, status = e.partial, 3
    except KeyboardInterrupt as e:
        if getattr(e, "partial", None) is None:
            raise
        traj, status = e.partial, 130
        print(f"ejce-nb: {traj.message}", file=err)
    wall = time.perf_counter() - t0
    steps = int(traj.steps)
    stopped = ""
    if traj.status != 0:
        stopped = f" (stopped: {SimulationStatus(int(traj.status)).name.lower().replace('_', ' ')})"
    print(f"simulate {args.model}: {model.nbodies} bodies, nq {model.nq}, nv {model.nv}; {args.method}, "
          f"dt {args.dt:g}, t = 0 .. {traj.stop_time:g} of {args.t:g}{stopped}", file=out)
    kernel = traj.info.get("wall_time", wall)
    print(f"  {steps:,} steps in {kernel:.3g} s ({steps / max(kernel, 1e-12):,.0f} steps/s; {len(traj.t):,} states "
          "recorded)" + (f", {traj.info['nfev'][0]:,} evaluations, {traj.info['nrejected'][0]:,} rejected steps"
                         if args.method == "dopri5" else ""), file=out)
    _energy_lines(traj, args.method, out)
    if traj.info.get("limits"):
        lm = traj.info["limits"]
        print(f"  joint limits: {lm['coordinates']} coordinates, spring-damper time constant {lm['time_constant']:g} s, "
              f"damping ratio {lm['damping_ratio']:g} (--no-limits turns them off)", file=out)
    if len(traj.t) < 2:
        # nothing but the initial state: no file or picture that would look like a result
        print(f"  no file, plot or animation written: the run stopped at t = {traj.stop_time:g}, before its first "
              "recorded step", file=out)
        return status
    if args.out:
        if args.out.lower().endswith(".csv"):
            traj.to_csv(args.out)
        else:
            traj.save(args.out)
        print(f"  wrote {args.out}", file=out)
    if args.plot:
        traj.plot(model, args.plot, snapshots=snapshots)
        print(f"  wrote {args.plot}", file=out)
    if args.animate:
        fps = effective_fps(args.animate, args.fps)
        rows = frame_rows(traj, fps=fps)
        shown, speed = playback(traj, rows, fps)
        pace = "in real time" if abs(speed - 1.0) < 0.01 else f"at {speed:.3g} x real time"
        if speed > 1.01 and len(rows) >= MAX_FRAMES:
            pace += f" (at most {MAX_FRAMES} frames: a lower --fps plays slower)"
        elif speed > 1.01:
            pace += (f" (every recorded state is a frame: a smaller --record-every, or --fps {fps / speed:.3g}, "
                     "plays in real time)")
        rate = f"{fps:.3g} frames/s"
        if fps != args.fps:
            rate += " (a GIF's frames last whole hundredths of a second)"
        print(f"  writing {args.animate}: {len(rows)} frames at {rate}, {shown:g} s of motion played {pace}", file=out,
              flush=True)
        traj.animate(model, args.animate, fps=args.fps, progress=bool(progress))
        print(f"  wrote {args.animate}", file=out)
    return status


_ORDER = {"rk4": 4, "rk2": 2, "euler": 1, "symplectic": 1}


def _energy_lines(traj, method, out):
    """The energy lines of ``simulate``'s summary: the drift of a conservative run, else the
    balance of E(end) - E(0) against the work of the limits and of the damping, the rest split
    where joint limits engage (``Trajectory.energy_balance``)."""
    if len(traj.t) < 2:
        print(f"  energy: E(0) = {traj.energy[0]:.9g} J; no step was taken", file=out)
        return
    b = traj.energy_balance()
    upto = "" if traj.status == 0 else f", up to the stop at t = {traj.stop_time:g}"
    forced, rheonomic = traj.info.get("forced"), traj.info.get("rheonomic")
    if b["limit_work"] is None and b["damping_work"] is None and not forced and not rheonomic:
        print(f"  energy: E(0) = {b['E0']:.9g}, E(end) = {b['E0'] + b['dE']:.9g}, drift max|E - E0| / max(|E0|, max T) "
              f"= {traj.energy_drift():.3g} (a conservative run: the integration error{upto})", file=out)
        return
    parts = []
    if b["limit_work"] is not None:
        parts.append(f"joint limits {b['limit_work']:.6g} J" + (
            f" (within about {b['quadrature']:.2g} J: the trapezoid rule over the recorded states)"
            if b["quadrature"] > 1e-12 * max(1.0, abs(b["E0"])) else ""))
    if b["damping_work"] is not None:
        parts.append(f"damping {b['damping_work']:.6g} J")
    what = " and ".join(w for w, on in (("joint forces", forced), ("time-driven joints", rheonomic)) if on)
    parts.append(f"rest {b['rest']:.6g} J (" + (f"work of the {what} + " if what else "") + "integration error)")
    print(f"  energy balance{upto}: E(0) = {b['E0']:.9g}, E(end) - E(0) = {b['dE']:.6g} J = work of "
          + ", ".join(parts), file=out)
    if b["limit_events"]:
        steps = "steps" if traj.info.get("record_every", 1) == 1 and method != "dopri5" else "recorded intervals"
        order = _ORDER.get(method)
        why = (f"where {method} is first order: it shrinks like dt, not dt^{order}; a smaller --dt or --method dopri5 "
               "reduces it" if order and order > 1 else
               "where the steps are shortened by dopri5's error control" if method == "dopri5" else
               f"where {method} is first order, as everywhere")
        print(f"    of the rest, {b['rest_at_limits']:.3g} J over the {b['limit_events']} {steps} where a joint limit "
              f"engages or releases (its damping force switches on or off inside them, {why}) and "
              f"{b['rest'] - b['rest_at_limits']:.3g} J over the others", file=out)


def _closed_start(model, q0, independent, what, out):
    """The initial state of a loop model, closed with its independent coordinates kept (``--independent``,
    default ``independent_variables``'s); a ValueError naming the loops where none closes."""
    from .algorithms.loops.assembly import assemble, independent_variables
    from .algorithms.loops.reference import ConstraintError

    held = independent_variables(model, independent, q0)
    names = ", ".join(model.velocity_names[k] for k in held) or "nothing"
    try:
        q, info = assemble(model, q0, fixed=held, return_info=True)
    except ConstraintError as e:
        raise ValueError(f"{what}: the loops cannot be closed with {names} kept (--independent chooses others): "
                         f"{e}") from None
    moved = float(np.max(np.abs(q - q0))) if model.nq else 0.0
    if info["iterations"]:
        print(f"  initial state: the loops closed from {what} with {names} kept (coordinates moved by up to "
              f"{moved:.3g}; position residual {info['residual']:.2g})", file=out)
    return q


def compile_command(args, out=None):
    """``ejce-nb compile``: the kernels of the models named (default: every shipped model) into
    the on-disk cache; exit 1 where a function failed on a model."""
    from .io.zoo import SHIPPED

    if args.functions:
        functions = tuple(f.strip() for f in args.functions.split(",") if f.strip())
        bad = [f for f in functions if f not in FUNCTIONS]
        if bad:
            raise ValueError(f"--functions: unknown {', '.join(map(repr, bad))}; expected some of {', '.join(FUNCTIONS)}")
    else:
        functions = FUNCTIONS if args.all else BASIC
    specs = [(m, tuple(args.joints or ()), args.floating_base) for m in (args.models or list(SHIPPED))]
    return 1 if precompile(specs, functions, args.processes, out=out) else 0


def _positive_float(text):
    return _number(text, "a positive number", lambda x: x > 0 and x < float("inf"))


def main(argv=None):
    parser = argparse.ArgumentParser(prog="ejce-nb", description=DESCRIPTION,
                                     epilog="commands:\n" + __doc__.split("\n\n", 1)[1].split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    model_opts = argparse.ArgumentParser(add_help=False)
    model_opts.add_argument("--joints", action="append", metavar="FILE.py",
                            help="a Python file that defines and registers user joints (e.g. examples/user_joints.py "
                                 "for data/scapula.json); may be repeated")
    model_opts.add_argument("--floating-base", default=None, metavar="PARAM",
                            help="URDF models: attach the root link by a free joint with this rotation "
                                 "parameterisation (quaternion, ZYX, rotvec, ...)")
    sub = parser.add_subparsers(dest="cmd")
    p_demo = sub.add_parser("demo", parents=[model_opts],
                            help="the paper's example, then batched kinematics and dynamics throughput (the default)")
    p_demo.add_argument("--model", default="arm7", help="model of the batched kinematics and dynamics (default: arm7)")
    p_demo.add_argument("--batch", type=_count, default=100_000,
                        help="states of the kinematics batch (the dynamics batch takes a fifth of it)")
    p_info = sub.add_parser("info", parents=[model_opts], help="summary of a model")
    p_info.add_argument("model", help="shipped model name, .json, .urdf, .xml (MJCF) or .osim file")
    p_bench = sub.add_parser("bench", parents=[model_opts], help="throughput of batched kinematics")
    p_bench.add_argument("model", nargs="?", default="arm7",
                         help="shipped model name, .json, .urdf, .xml (MJCF) or .osim file (default: arm7)")
    p_bench.add_argument("--batch", type=_count, default=100_000,
                         help="states of the batch (default 100000; 1e5 is accepted)")
    p_bench.add_argument("--threads", type=_count, default=None,
                         help="Numba threads of the batch (default: every CPU)")
    p_sweep = sub.add_parser("sweep", parents=[model_opts],
                             help="Monte Carlo sweep of quantities over sampled states into a store")
    p_sweep.add_argument("model", help="shipped model name, .json, .urdf, .xml (MJCF) or .osim file")
    p_sweep.add_argument("--n", type=_count, required=True, help="number of states (1e6 is accepted)")
    p_sweep.add_argument("--quantities", required=True,
                         help="comma-separated: rnea, aba, mass_matrix, nonlinear_effects, kinetic_energy, "
                              "joint_terms, forward_kinematics:BODY, body_jacobian:BODY; for a model with loop "
                              "closures constrained_dynamics, loop_residual and the kinematic ones")
    p_sweep.add_argument("--independent", default=None, metavar="NAMES",
                         help="models with loop closures: the coordinates sampled (names or indices separated by "
                              "commas); the others close the loops for each sample (default: the first ones in tree "
                              "order that determine the others, e.g. a four-bar's crank)")
    p_sweep.add_argument("--out", required=True, help="directory or URL of the zarr store (rerun to resume)")
    p_sweep.add_argument("--chunk-size", type=_count, default=100_000,
                         help="states computed and written together (default 100000); no result depends on it")
    p_sweep.add_argument("--seed", type=int, default=0, help="seed of the sampled inputs (default 0)")
    p_sweep.add_argument("--t", type=float, default=0.0, help="time of every state (rheonomic models)")
    p_sweep.add_argument("--threads", type=_count, default=None, help="Numba threads of this process")
    p_sweep.add_argument("--scheduler", default=None, help="address of a Dask scheduler to run the chunks on")
    p_sweep.add_argument("--no-progress", action="store_true", help="no progress bar")
    p_sweep.add_argument("--no-store-inputs", action="store_true",
                         help="do not store the sampled inputs: they are drawn again when read")
    p_report = sub.add_parser("report", help="summary table and plot of a sweep")
    p_report.add_argument("dir", help="directory of the sweep")
    p_report.add_argument("--plot", default=None, help="figure to write (default DIR.report.png)")
    p_report.add_argument("--no-plot", action="store_true", help="only the table")
    p_report.add_argument("--bins", type=_count, default=50, help="bins of each histogram (default 50)")
    p_comp = sub.add_parser("compile", parents=[model_opts],
                            help="compile the kernels that models need into the on-disk cache, in parallel processes",
                            description="Compile the kernels that the models need into the on-disk cache (for "
                            "Docker images, clusters, CI): one state and a batch of each function, once per kind of "
                            "model, shared out between processes. Later runs of the same version load them.")
    p_comp.add_argument("models", nargs="*", metavar="MODEL",
                        help="shipped model names or .json, .urdf, .xml (MJCF), .osim files (default: the shipped "
                             "models " + ", ".join(SHIPPED) + ")")
    p_comp.add_argument("--all", action="store_true",
                        help="every function (joint terms, body Jacobians, energies, derivatives, simulate, "
                             "constrained dynamics), not only rnea, aba, mass_matrix and forward_kinematics")
    p_comp.add_argument("--functions", default=None,
                        help="comma-separated functions to compile instead (of: " + ", ".join(FUNCTIONS) + ")")
    p_comp.add_argument("--processes", type=_count, default=None, help="processes (default: one per CPU)")
    p_sim = sub.add_parser("simulate", parents=[model_opts], help="integrate the dynamics of a model",
                           description="Integrate a model's forward dynamics from its neutral configuration at "
                           "rest (or --q0 / --qd0); print steps/s and the energy drift; write the trajectory "
                           "and a plot.")
    p_sim.add_argument("model", help="shipped model name, .json, .urdf, .xml (MJCF) or .osim file")
    p_sim.add_argument("--t", type=_positive_float, default=10.0, help="final time, s (default 10)")
    p_sim.add_argument("--dt", type=_positive_float, default=1e-3,
                       help="time step, s (default 1e-3; dopri5: first step)")
    p_sim.add_argument("--method", default="rk4", choices=("rk4", "rk2", "euler", "symplectic", "dopri5"),
                       help="integrator: fixed-step Runge-Kutta of order 4, 2, 1, semi-implicit Euler, or adaptive "
                            "Dormand-Prince 5(4) (default rk4)")
    p_sim.add_argument("--record-every", type=_count, default=1, metavar="K", help="keep every K-th step")
    p_sim.add_argument("--rtol", type=float, default=1e-8, help="dopri5 relative tolerance")
    p_sim.add_argument("--atol", type=float, default=1e-10, help="dopri5 absolute tolerance")
    p_sim.add_argument("--q0", help="initial coordinates: nq numbers 'a,b,...' or a .npy file (default: neutral)")
    p_sim.add_argument("--qd0", help="initial velocities: nv numbers or a .npy file (default: zero)")
    p_sim.add_argument("--ctrl", metavar="FILE", default=None,
                       help="controls of the model's actuators: a .npy or .csv file of shape (steps, nu), one row per "
                            "step (held over it), or (nu,) held over the run (default: zero)")
    p_sim.add_argument("--act0", default=None, help="initial activations: na numbers or a .npy file (default: zero)")
    p_sim.add_argument("--damping", type=float, default=None,
                       help="viscous damping on every velocity variable (default: the model's)")
    p_sim.add_argument("--max-energy", type=_positive_float, default=None, help="stop when |T + V| exceeds this (J)")
    p_sim.add_argument("--no-limits", action="store_true",
                       help="ignore the model's joint limits (default: a stiff one-sided spring-damper at each)")
    p_sim.add_argument("--out", help="write the trajectory: .npz (exact) or .csv")
    p_sim.add_argument("--plot", help="write a figure: energy drift, coordinates, stick figures (matplotlib)")
    p_sim.add_argument("--snapshot", help="times of the stick figures, 't1,t2,...' (default: start, middle, end)")
    p_sim.add_argument("--animate", metavar="FILE", help="write an animation of the mechanism: FILE.gif (Pillow) or "
                       "FILE.mp4 (ffmpeg, where installed)")
    p_sim.add_argument("--fps", type=_positive_float, default=30.0, help="frames per second of --animate (default 30)")
    p_sim.add_argument("--no-progress", action="store_true", help="no progress bar")
    p_sim.add_argument("--threads", type=_count, default=None,
                       help="Numba threads (default: every CPU; a batch of one trajectory runs on one)")
    p_sim.add_argument("--redundant", default="raise", choices=("raise", "lstsq"),
                       help="models with loop closures: a rank-deficient loop constraint (a planar linkage closed by "
                            "a revolute joint repeats three constraints) stops the run ('raise', the default) or is "
                            "solved in the least-squares sense ('lstsq'), as simulate(redundant=...)")
    p_sim.add_argument("--independent", default=None, metavar="NAMES",
                       help="models with loop closures: the coordinates kept while the initial state is closed "
                            "(names or indices separated by commas, as ej.assemble(fixed=...); default: the first "
                            "ones in tree order that determine the others, e.g. a four-bar's crank)")
    from .view import add_parser as add_view_parser, view_command
    add_view_parser(sub, parents=[model_opts])
    args = parser.parse_args(argv)
    # a warning (a model file's, a loop model's) printed as its message alone, not with Python's
    # file, line and source of where it was raised
    with warnings.catch_warnings():
        warnings.showwarning = _print_warning
        return _command(parser, args, argv)


def _print_warning(message, category, filename, lineno, file=None, line=None):
    print(f"ejce-nb: warning: {message}", file=sys.stderr, flush=True)


def _command(parser, args, argv):
    """Run the command that ``main`` parsed; the exit status."""
    try:
        if args.cmd == "info":
            print(load_model(args).summary())
            return 0
        if args.cmd not in ("info", "report") and cache_is_cold():
            print("ejce-nb: first run of this version: the kernels this command needs are compiled now (each is "
                  "announced; minutes on a small machine) and cached for later runs", file=sys.stderr, flush=True)
        if args.cmd == "view":
            return view_command(args)
        if args.cmd == "bench":
            bench(load_model(args), batch=args.batch, threads=args.threads)
            return 0
        if args.cmd == "sweep":
            return run_sweep(args)
        if args.cmd == "report":
            return run_report(args)
        if args.cmd == "simulate":
            return simulate_command(args)
        if args.cmd == "compile":
            return compile_command(args)
        if args.cmd is None:
            args = parser.parse_args(["demo"] + list(sys.argv[1:] if argv is None else argv))
        model = load_model(args)
        # on a cold cache, the kernels of the dynamics batches compile in a second process meanwhile
        compiled = compile_elsewhere(dynamics_elsewhere, args)
        worst = paper_example()
        print()
        print(f"model {args.model!r}: {model.nbodies} bodies, nq {model.nq}, nv {model.nv}")
        bench(model, batch=args.batch)
        err = dynamics_demo(model, batch=max(2, args.batch // 5), compiled=compiled)
        return 0 if worst < 1e-12 and err < 1e-9 else 1
    except SweepError as e:
        print(f"ejce-nb: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        if args.cmd != "sweep":
            raise
        print("ejce-nb: interrupted; the finished chunks are kept: run the same command again to resume",
              file=sys.stderr)
        return 130
    except (ModelError, OSError, ValueError, ImportError) as e:
        print(f"ejce-nb: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
