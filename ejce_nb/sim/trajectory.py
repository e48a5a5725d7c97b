"""The record of a simulation: ``Trajectory`` (states, energies, status, the work of the passive
forces), its files (``save`` / ``load``, ``to_csv``) and its pictures (``plot``, ``animate``)."""
import json

import numpy as np

from .animate import MAX_FRAMES, animate_trajectory
from .plot import plot_trajectory
from .status import as_status


def coordinate_names(model):
    """Names of q's entries (``Model.coordinate_names``)."""
    return list(model.coordinate_names)


def velocity_names(model):
    return _names(model, model.jnt_nv)


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
    ``limit_work``, ``damping_work``: the work (J) of the joint limits and of the joint damping
    since t = 0 (T, [B]), by the trapezoid rule over the recorded states (None when the run had
    none; a step that enters or leaves a limit from the crossing point), so that E(t) - E(0) =
    limit_work + damping_work + the work of tau, f_ext and time-driven joints, plus the
    integration error (first order in dt at a contact, where the damping force jumps: 1% of the
    limit's work at dt = 1e-4 on a pendulum swung into its limit at 4 rad/s).  ``info``: method,
    dt, t_final, record_every, rtol, atol, ``coordinate_names``, ``velocity_names``, ``nfev`` and
    ``nrejected`` (dopri5), ``wall_time``, ``limits``, ``damping``, ``forced``, ``rheonomic``, ...
    ``batch``: B or None; ``len(traj)`` = T.  A loop model's trajectory adds
    ``position_residual`` and ``velocity_residual`` (T, [B]).  An actuated model's (``ctrl=``)
    has ``act`` (T, [B], na), the activations, and ``actuator_force`` (T, [B], nu), MuJoCo's
    ``actuator_force`` at each recorded state with the controls of the step that starts there
    (the last step's at the end; the columns of OpenSim force elements' controls are NaN), NaN
    after a stop; both None without actuation.

    ``energy_drift()``, ``save(path)`` / ``Trajectory.load(path)``, ``to_csv(path)``,
    ``plot(...)``, ``animate(...)``: below."""

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
        self.act = None
        self.actuator_force = None

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

    def energy_balance(self, trajectory=0):
        """The energy balance of one trajectory (of a batch: number ``trajectory``) over its
        recorded states up to its last finite one, a dict: ``E0``, ``dE`` = E(end) - E(0),
        ``limit_work`` and ``damping_work`` (None where there are none), ``rest`` = dE less those
        (the work of the joint forces and of time-driven joints, and the integration error);
        with joint limits also ``limit_events``, the recorded intervals in which a limited
        coordinate enters or leaves its limit, ``rest_at_limits``, the part of ``rest`` gained over
        them (a limit's damping force switches on or off inside such an interval, where a
        fixed-step method is first order, so this part shrinks like dt, not like the method's
        order), and ``quadrature``, an estimate of the error of ``limit_work`` (the trapezoid rule
        on the recorded states): a third of its change when every second state is left out."""
        one = (lambda x: x) if self.batch is None else (lambda x: x[:, trajectory])
        E = one(self.energy)
        good = np.nonzero(np.isfinite(E))[0]
        last = int(good[-1]) if len(good) else 0
        E = E[:last + 1]
        out = dict(E0=float(E[0]), dE=float(E[-1] - E[0]), limit_work=None, damping_work=None, limit_events=0,
                   rest_at_limits=0.0, quadrature=0.0)
        rest = E - E[0]
        W = self.limit_work
        if W is not None:
            W = one(W)[:last + 1]
            out["limit_work"] = float(W[-1])
            rest = rest - W
            LIM = np.array(self.info["limit_table"], dtype=np.float64).reshape(-1, 4)
            DQ = np.array(self.info["limit_coordinates"], dtype=np.int64)
            k = np.nonzero((DQ >= 0) & (LIM[:, 2] + LIM[:, 3] > 0))[0]
            x = one(self.q)[:last + 1][:, DQ[k]]
            beyond = (x < LIM[k, 0]) | (x > LIM[k, 1])
            events = np.any(beyond[1:] != beyond[:-1], axis=1)
            out["limit_events"] = int(np.count_nonzero(events))
            if last >= 2:
                even = last - last % 2
                half = limit_work(self.t[:even + 1:2], LIM, DQ, one(self.q)[:even + 1:2], one(self.qd)[:even + 1:2])
                out["quadrature"] = abs(float(W[even] - half[-1])) / 3.0
        D = self.damping_work
        if D is not None:
            D = one(D)[:last + 1]
            out["damping_work"] = float(D[-1])
            rest = rest - D
        out["rest"] = float(rest[-1])
        if out["limit_events"]:
            out["rest_at_limits"] = float(np.sum(np.diff(rest)[events]))
        return out

    def energy_drift(self):
        """max_t |E(t) - E(0)| / max(|E(0)|, max_t T(t)): a float, or (B,) per trajectory (NaN
        rows ignored)."""
        with np.errstate(invalid="ignore"):
            d = np.nanmax(np.abs(self.energy - self.energy[:1]), axis=0)
            scale = np.maximum(np.abs(self.energy[0]), np.nanmax(np.abs(self.kinetic), axis=0))
            out = d / np.maximum(scale, np.finfo(float).tiny)
        return float(out) if np.ndim(out) == 0 else out

    # ------------------------------------------------------------------ files
    _ARRAYS = ("t", "q", "qd", "kinetic", "potential", "status", "steps", "stop_time")
    _OPTIONAL = ("act", "actuator_force")

    def save(self, path):
        """Write the trajectory to ``path`` (NumPy ``.npz``); ``Trajectory.load`` reads it back
        bit for bit."""
        arrays = {k: np.asarray(getattr(self, k)) for k in self._ARRAYS}
        for k in self._OPTIONAL:
            if getattr(self, k, None) is not None:
                arrays[k] = np.asarray(getattr(self, k))
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
            extra = {k: f[k] for k in cls._OPTIONAL if k in f.files}
            meta = json.loads(str(f["meta"]))
        message = meta.pop("message", "")
        scalar = a["q"].ndim == 2
        for k in ("status", "steps", "stop_time"):
            if scalar:
                a[k] = a[k].item()
        if scalar:
            a["status"] = as_status(a["status"])
        out = cls(a["t"], a["q"], a["qd"], a["kinetic"], a["potential"], a["status"], a["steps"], a["stop_time"],
                  message, meta)
        for k, x in extra.items():
            setattr(out, k, x)
        return out

    def to_csv(self, path):
        """Write a spreadsheet: a header ``t, q:<coordinate>..., qd:<velocity>..., kinetic,
        potential, energy`` (coordinates named by their joints), then for an actuated model
        ``act:<activation>...`` and ``actuator_force:<actuator>...``, one row per time; a batch
        gets a first column ``trajectory`` and one block of rows per trajectory.  Numbers are
        written with 17 significant digits (exact)."""
        qn = self.info.get("coordinate_names") or [f"q{k}" for k in range(self.q.shape[-1])]
        vn = self.info.get("velocity_names") or [f"qd{k}" for k in range(self.qd.shape[-1])]
        cols = ["t"] + [f"q:{n}" for n in qn] + [f"qd:{n}" for n in vn] + ["kinetic", "potential", "energy"]
        extra = []
        if self.act is not None:
            an = self.info.get("act_names") or [f"act{k}" for k in range(self.act.shape[-1])]
            cols += [f"act:{n}" for n in an]
            extra.append(self.act)
        if self.actuator_force is not None:
            cn = self.info.get("ctrl_names") or [f"u{k}" for k in range(self.actuator_force.shape[-1])]
            cols += [f"actuator_force:{n}" for n in cn]
            extra.append(self.actuator_force)
        if self.batch is None:
            data = np.column_stack([self.t, self.q, self.qd, self.kinetic, self.potential, self.energy] + extra)
        else:
            blocks = []
            for b in range(self.batch):
                blocks.append(np.column_stack([np.full(len(self.t), b), self.t, self.q[:, b], self.qd[:, b],
                                               self.kinetic[:, b], self.potential[:, b], self.energy[:, b]]
                                              + [x[:, b] for x in extra]))
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
        middle, end).  Coordinates are labelled by joint name, one panel per unit (rad, m, from
        the joint's motion; given ``model``), a unit quaternion as the three components of its
        rotation vector (``<joint>.rotvec_x`` ...).  Equal axes: the three axes of a stick figure
        share one scale (a cube of limits around every drawn point, drawn as a cube), so a link
        looks as long in every direction.  What is left out (unselected coordinates, snapshots
        past the last recorded state) is said in the figure's title.  ``trajectory``: which one of
        a batch.  Saved to ``path`` when given; returns the matplotlib Figure
        (``ejce_nb.sim.plot``)."""
        return plot_trajectory(self, model, path, snapshots, coordinates, trajectory)

    def animate(self, model, path, fps=30, stride=None, trajectory=0, max_frames=MAX_FRAMES, dpi=80, progress=None):
        """Write an animation of the mechanism (the stick figure of ``plot``: body origins,
        parent to child, and the links that close each loop, on equal axes fixed over the whole
        run, the model's up against gravity up) to ``path`` with matplotlib's animation writers:
        a ``.gif`` through Pillow, an ``.mp4`` (or ``.mkv``, ``.mov``, ``.avi``) through ffmpeg,
        which must be installed (otherwise a ``RuntimeError`` saying so, before anything is
        drawn); any other suffix is a ``ValueError``.  By default the frames are the finite
        recorded states nearest to real time at ``fps`` frames per second (all of them where
        they are recorded more sparsely), at most ``max_frames`` (then spread evenly: faster
        than real time; the title says the speed); ``stride``: every ``stride``-th finite
        recorded state instead; the last one always, each with its time.  ``trajectory``: which
        one of a batch; ``progress``: a tqdm bar over the frames (None: when there are more than
        100).  Returns the number of frames written (``ejce_nb.sim.animate``; ``frame_rows`` and
        ``playback`` say which and at what speed).  Needs the ``plot`` extra."""
        return animate_trajectory(self, model, path, fps=fps, stride=stride, trajectory=trajectory,
                                  max_frames=max_frames, dpi=dpi, progress=progress)


def limit_torques(LIM, DOFQ, Q, V):
    """The joint limits' forces (..., nv) at states Q (..., nq), V (..., nv): ``stage.limit_force``
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
    leaves a limit from the point where the coordinate crosses it (linear in the step), the power
    there taken on the limit's side (the damping force as the coordinate enters, not the zero
    force just outside), so that the jump of the damping force at contact costs no first-order
    error."""
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
            # at the bound on the limit's side: penetration zero, the damping force on
            Pc = power(np.full(uc.shape, np.nextafter(bound, -np.inf if bound == LIM[k, 0] else np.inf)), uc)
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
