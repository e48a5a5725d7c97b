"""Figures of a simulated trajectory (matplotlib, the ``plot`` extra): ``Trajectory.plot``.

* the energy balance: for a conservative run (no damping, no active limits, no joint forces,
  no time-driven joints) the relative drift (E - E0) / max(|E0|, max T), an integration error;
  otherwise E - E0 beside the work of the joint limits and of the damping, and what remains
  (the work of the joint forces and of time-driven joints, plus the integration error);
* every coordinate (or those selected), by joint name and unit (rad, m), one panel per unit; the
  rotation of a unit quaternion as its rotation vector (rad), not its four components;
* given the model, 3-D stick figures of the mechanism (body origins, parent to child, and each
  loop closure's links from its bodies' origins to its joint, ``stick_segments``) at chosen
  times, on equal axes (``equal_axes``: one scale on x, y and z, so links keep their lengths),
  seen with the model's up (against gravity, ``orient``) up.

``animate`` writes the same stick figure as an animation.

What is left out (coordinates not selected, snapshot times past the end of a stopped or
interrupted run) is said in the figure; a long message is wrapped, never cut.
"""
import textwrap

import numpy as np

from ..calls.public import forward_kinematics, joint_terms
from .prepare import dof_tables
from .status import as_status


def _matplotlib():
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError("plots need matplotlib (pip install matplotlib, or the 'plot' extra)") from None
    return Figure


def require_matplotlib():
    """Raise the ImportError of a missing matplotlib now (before a long run whose plot needs it)."""
    _matplotlib()


def equal_axes(ax, points):
    """Give a 3-D axes the same scale on x, y and z: a cube of limits around ``points`` (n, 3),
    drawn as a cube, so that a link of length l looks l long in any direction."""
    points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    points = points[np.all(np.isfinite(points), axis=1)]
    if len(points) == 0:
        points = np.zeros((1, 3))
    c = 0.5 * (points.max(0) + points.min(0))
    r = 0.55 * max(float(np.max(points.max(0) - points.min(0))), 1e-9)
    ax.set_xlim(c[0] - r, c[0] + r)
    ax.set_ylim(c[1] - r, c[1] + r)
    ax.set_zlim(c[2] - r, c[2] + r)
    ax.set_box_aspect((1, 1, 1))


def vertical_axis(model):
    """(axis name, sign) of the model's up: the world axis most opposed to its gravity (z, +1
    without gravity); an OpenSim model (gravity along -y) is y-up."""
    g = np.asarray(model.gravity, dtype=np.float64)
    if not np.any(g):
        return "z", 1.0
    k = int(np.argmax(np.abs(g)))
    return "xyz"[k], (-1.0 if g[k] > 0 else 1.0)


def orient(ax, model):
    """Turn a 3-D axes so that the model's up (``vertical_axis``) points up on the page."""
    axis, sign = vertical_axis(model)
    ax.view_init(elev=20.0, azim=-60.0 if axis == "z" else 30.0, vertical_axis=axis)
    if sign < 0:
        getattr(ax, f"invert_{axis}axis")()


def stick_segments(model, R, p):
    """The links of the stick figure at one configuration (world rotations R (N+1, 3, 3) and
    origins p (N+1, 3) of the bodies): (links (k, 2, 3), gaps (n_loops, 2, 3)): every body's
    parent origin to its origin, then for every loop closure its body_a's origin to the origin
    of its frame A and its body_b's origin to that of frame B (the links that close the loop);
    ``gaps``: each loop's frame A origin to its frame B origin (zero length where it closes)."""
    links = [(p[model.body_parent[j]], p[j]) for j in range(1, model.nbodies + 1)]
    gaps = []
    for L in model.loops:
        oa = p[L.body_a] + R[L.body_a] @ np.asarray(L.placement_a.translation, dtype=np.float64)
        ob = p[L.body_b] + R[L.body_b] @ np.asarray(L.placement_b.translation, dtype=np.float64)
        links += [(p[L.body_a], oa), (p[L.body_b], ob)]
        gaps.append((oa, ob))
    return np.array(links, dtype=np.float64).reshape(-1, 2, 3), np.array(gaps, dtype=np.float64).reshape(-1, 2, 3)


def wrap(text, width=150):
    """``text`` broken into lines of at most ``width`` characters (a figure title is never cut)."""
    return "\n".join(textwrap.wrap(text, width, break_long_words=False, break_on_hyphens=False)) or text


def _rotvec(qw):
    """Rotation vectors (T, 3) of unit quaternions (T, 4) (w, x, y, z)."""
    w = np.clip(qw[:, 0], -1.0, 1.0)
    xyz = qw[:, 1:4]
    s = np.linalg.norm(xyz, axis=1)
    sign = np.where(w < 0, -1.0, 1.0)             # the shorter of the two rotations
    ang = 2.0 * np.arctan2(s, np.abs(w))
    with np.errstate(invalid="ignore", divide="ignore"):
        f = np.where(s > 1e-12, ang / np.where(s > 1e-12, s, 1.0), 2.0)
    return (sign * f)[:, None] * xyz


def velocity_units(model):
    """The unit of each velocity variable's coordinate: "rad" where its motion turns the body at
    ``model.neutral()`` (a hinge, a coupled knee angle that also slides the shank, a unit
    quaternion's angular velocity), "m" where it only translates it, "" where it does not move
    it there."""
    J = np.asarray(joint_terms(model, model.neutral()).J) if model.nv else np.zeros((6, 0))
    # a model with couplers has the terms of its expansion: each own velocity's column there
    col = model._own()[1] if model.has_couplers else np.arange(model.nv)
    out = []
    for k in range(model.nv):
        ang, lin = np.linalg.norm(J[:3, col[k]]), np.linalg.norm(J[3:, col[k]])
        out.append("rad" if ang > 1e-12 else ("m" if lin > 0 else ""))
    return out


def coordinate_series(traj, model=None, trajectory=0):
    """[(label, unit, values (T,))] of every coordinate of a trajectory: named by joint; with the
    model, in rad or m (a coordinate whose motion turns its body, a coupled knee angle that also
    slides the shank among them: rad; one that only translates it: m; "" where it does not move
    it at the neutral configuration), a unit quaternion as the three components of its rotation
    vector (rad)."""
    one = (lambda x: x) if traj.batch is None else (lambda x: x[:, trajectory])
    q = one(traj.q)
    names = traj.info.get("coordinate_names") or [f"q[{k}]" for k in range(q.shape[1])]
    if model is None:
        return [(names[k], "", q[:, k]) for k in range(q.shape[1])]
    DOFQ, _, _ = dof_tables(model)
    vu = velocity_units(model)
    unit_of = {int(DOFQ[k]): vu[k] for k in range(model.nv) if DOFQ[k] >= 0}
    quat = {sl.start: (j, sl) for j, sl in model.quaternion_blocks()}
    out = []
    k = 0
    while k < model.nq:
        if k in quat:
            j, sl = quat[k]
            rv = _rotvec(q[:, sl])
            for a, axis in enumerate("xyz"):
                out.append((f"{model.joint_names[j]}.rotvec_{axis}", "rad", rv[:, a]))
            k = sl.stop
            continue
        out.append((names[k], unit_of.get(k, ""), q[:, k]))
        k += 1
    return out


def _energy_panel(ax, traj, trajectory):
    one = (lambda x: x) if traj.batch is None else (lambda x: x[:, trajectory])
    t, T, E = traj.t, one(traj.kinetic), one(traj.energy)
    ok = np.isfinite(E)
    W_lim = traj.limit_work
    W_dmp = traj.damping_work
    W_lim = None if W_lim is None else one(W_lim)
    W_dmp = None if W_dmp is None else one(W_dmp)
    scale = max(abs(E[ok][0]) if ok.any() else 0.0, float(np.nanmax(np.abs(T))) if ok.any() else 0.0, 1e-300)
    # limits that were never touched (work at rounding of the energy) leave a conservative run so
    used_limits = W_lim is not None and np.nanmax(np.abs(W_lim), initial=0.0) > 1e-12 * scale
    forced = bool(traj.info.get("forced")) or bool(traj.info.get("rheonomic"))
    method = f"{traj.info.get('method', '')}, dt = {traj.info.get('dt', float('nan')):g}"
    if not ok.any():
        ax.set_title("energy: no finite state recorded")
        return
    if np.count_nonzero(ok) < 2:
        ax.plot(t[ok], E[ok], "o", color="k")
        ax.set_ylabel("energy (J)")
        ax.set_title(f"energy: one state recorded, E = {E[ok][0]:.6g} J; no step was taken")
        return
    if W_dmp is None and not used_limits and not forced:
        ax.plot(t[ok], (E[ok] - E[ok][0]) / scale, lw=1.0)
        ax.set_ylabel("(E - E0) / max(|E0|, max T)")
        ax.set_title(f"energy drift of a conservative run: an integration error ({method})")
    else:
        dE = E - E[ok][0]
        ax.plot(t[ok], dE[ok], lw=1.2, color="k", label="E - E0")
        rest = dE.copy()
        if W_lim is not None:
            ax.plot(t[ok], W_lim[ok], lw=1.0, label="work of the joint limits")
            rest = rest - W_lim
        if W_dmp is not None:
            ax.plot(t[ok], W_dmp[ok], lw=1.0, label="work of the damping")
            rest = rest - W_dmp
        what = []
        if traj.info.get("forced"):
            what.append("joint forces")
        if traj.info.get("rheonomic"):
            what.append("time-driven joints")
        label = ("work of the " + " and ".join(what) + " + integration error") if what else "integration error"
        quad = ""
        if used_limits:
            # where the limits engage or release: the rest gained there (first order in dt), marked
            b = traj.energy_balance(trajectory)
            if b["limit_events"]:
                label += (f", {b['rest_at_limits']:.2g} J of it over the {b['limit_events']} intervals (grey "
                          "lines) where a limit engages or releases")
                x = one(traj.q)[:, np.asarray(traj.info["limit_coordinates"])]
                LIM = np.asarray(traj.info["limit_table"], dtype=np.float64).reshape(-1, 4)
                beyond = (x < LIM[:, 0]) | (x > LIM[:, 1])
                for k in np.nonzero(np.any(beyond[1:] != beyond[:-1], axis=1))[0]:
                    ax.axvline(0.5 * (t[k] + t[k + 1]), color="0.75", lw=0.6, zorder=0)
            if b["quadrature"] > 0:
                quad = f" (limits' work within about {b['quadrature']:.2g} J)"
                if b["quadrature"] > 0.1 * abs(b["rest"]):
                    label = label.replace("integration error", "integration error + the limits' quadrature error", 1)
        ax.plot(t[ok], rest[ok], lw=1.0, ls="--", label=f"rest: {label}")
        ax.set_ylabel("energy (J)")
        ax.set_title(f"energy balance ({method}); trapezoid rule over the recorded states{quad}", fontsize=10)
        ax.legend(fontsize=7)
    ax.grid(alpha=0.3)


def plot_trajectory(traj, model=None, path=None, snapshots=None, coordinates=None, trajectory=0):
    """``Trajectory.plot``: energy balance, coordinates by name and unit, stick figures."""
    Figure = _matplotlib()
    series = coordinate_series(traj, model, trajectory)
    n_all = len(series)
    if coordinates is not None:
        labels = [s[0] for s in series]
        raw = traj.info.get("coordinate_names") or []
        pick = []
        for c in coordinates:
            if isinstance(c, str):
                hits = [k for k, lab in enumerate(labels) if lab == c or lab.startswith(c + ".")
                        or lab.startswith(c + "[")]
                if not hits and c in raw and model is None:
                    hits = [raw.index(c)]
                if not hits:
                    raise ValueError(f"coordinates: no coordinate named {c!r}; the names are {labels}")
                pick += hits
            else:
                k = int(c)
                if not 0 <= k < n_all:
                    raise ValueError(f"coordinates: index {k} is out of range (the trajectory has {n_all})")
                pick.append(k)
        series = [series[k] for k in dict.fromkeys(pick)]
    units = list(dict.fromkeys(s[1] for s in series))
    stick = model is not None and model.nbodies > 0
    rows = 1 + max(1, len(units))
    fig = Figure(figsize=(14 if stick else 9, 3.2 * rows + 0.8), layout="constrained")
    grid = fig.add_gridspec(rows, 2 if stick else 1, width_ratios=[1.2, 1] if stick else None)
    ax = fig.add_subplot(grid[0, 0])
    _energy_panel(ax, traj, trajectory)
    t = traj.t
    for r, unit in enumerate(units or [""]):
        axr = fig.add_subplot(grid[1 + r, 0], sharex=ax)
        mine = [s for s in series if s[1] == unit]
        for label, _, y in mine:
            axr.plot(t, y, lw=1.0, label=label, marker="o" if len(t) < 2 else None)
        name = {"rad": "angles (rad)", "m": "lengths (m)"}.get(
            unit, f"coordinates ({unit})" if unit else "coordinates (no motion at neutral(): unit unknown)")
        axr.set_ylabel(name)
        if mine:
            axr.legend(fontsize=7, ncol=min(4, 1 + len(mine) // 8), loc="best")
        axr.grid(alpha=0.3)
        if r == len(units or [""]) - 1:
            axr.set_xlabel("t (s)")
    notes = []
    if len(series) < n_all:
        notes.append(f"{len(series)} of {n_all} coordinates shown (coordinates=)")
    st = np.atleast_1d(np.asarray(traj.status))
    b = trajectory if traj.batch is not None else 0
    stop = float(np.atleast_1d(np.asarray(traj.stop_time))[b]) if traj.stop_time is not None else t[-1]
    if st[b] != 0:
        msg = traj.message[b] if isinstance(traj.message, list) else traj.message
        notes.append(f"stopped at t = {stop:.6g}: " + (msg.split(": ", 1)[-1] if msg else str(as_status(st[b]))))
    if stick:
        _stick_figures(fig, grid, traj, model, snapshots, trajectory, stop, notes)
    if notes:
        fig.suptitle(wrap("; ".join(notes), 150 if stick else 100), fontsize=9)
    if path is not None:
        fig.savefig(path, dpi=110)
    return fig


def _stick_figures(fig, grid, traj, model, snapshots, trajectory, stop, notes):
    import matplotlib
    one = (lambda x: x) if traj.batch is None else (lambda x: x[:, trajectory])
    t, q = traj.t, one(traj.q)
    ax3 = fig.add_subplot(grid[:, 1], projection="3d")
    good = np.nonzero(np.all(np.isfinite(q), axis=1))[0]
    last = t[good[-1]] if len(good) else t[0]
    times = [t[0], t[len(t) // 2], last] if snapshots is None else [float(x) for x in snapshots]
    dropped = [x for x in times if x > last + 1e-12]
    if dropped:
        notes.append(f"snapshots at t = {', '.join(f'{x:g}' for x in dropped)} left out (past the last "
                     f"recorded state, t = {last:.6g})")
    times = [x for x in times if x <= last + 1e-12]
    # the recorded state nearest to each time, each once (a run of one state has one figure)
    rows = list(dict.fromkeys(int(good[np.argmin(np.abs(t[good] - ts))]) if len(good) else 0 for ts in times))
    cmap = matplotlib.colormaps["viridis"]
    pts = []
    for i, k in enumerate(rows):
        kin = forward_kinematics(model, np.ascontiguousarray(q[k]), t=float(t[k]))
        links, gaps = stick_segments(model, kin.R, kin.p)
        pts.append(links.reshape(-1, 3))
        color = cmap(0.85 * i / max(1, len(rows) - 1))
        for n, (a, e) in enumerate(links):
            ax3.plot([a[0], e[0]], [a[1], e[1]], [a[2], e[2]], color=color, lw=1.5,
                     label=f"t = {t[k]:.4g} s" if n == 0 else None)
        for a, e in gaps:
            if np.linalg.norm(e - a) > 1e-9 * max(1.0, float(np.abs(kin.p).max())):
                ax3.plot([a[0], e[0]], [a[1], e[1]], [a[2], e[2]], color="r", lw=1.0, ls=":")
        ax3.scatter(kin.p[1:, 0], kin.p[1:, 1], kin.p[1:, 2], color=color, s=6)
    if pts:
        equal_axes(ax3, np.concatenate(pts))
        ax3.legend(fontsize=8)
    orient(ax3, model)
    up, sign = vertical_axis(model)
    ax3.set_title("body origins, parent to child" + (", and the loops' closing links" if model.loops else "")
                  + f" (equal axes; {'-' if sign < 0 else '+'}{up} up"
                  + (", against gravity)" if np.any(model.gravity) else ")"), fontsize=9)
    ax3.set_xlabel("x (m)")
    ax3.set_ylabel("y (m)")
    ax3.set_zlabel("z (m)")
