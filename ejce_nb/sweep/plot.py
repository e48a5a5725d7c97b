"""The figure of a sweep: histograms of its quantities (each x-axis the quantity's name and
unit, ``array_units``) and, for each body pose, the workspace cloud in 3-D and two projections.
matplotlib is imported only here, when a figure is drawn."""
import os

import numpy as np


def plot(self, path, bins, max_points, names):
    """``SweepResult.plot``: the figure of a result's histograms and workspace clouds."""
    try:
        from matplotlib.figure import Figure
        from matplotlib.backends.backend_agg import FigureCanvasAgg
    except ImportError:
        raise ValueError('plotting needs matplotlib: pip install ".[plot]"') from None
    from ..sim.plot import orient, vertical_axis
    if path is None:
        if self._target.local is None:
            raise ValueError(f"{self.path} is not a local directory: give plot(path=...) for the figure")
        path = self._target.local + ".report.png"
    path = os.fspath(path)
    if names is None:
        names = [a for a in self._arrays if self._arrays[a]["role"] == "output"]
    else:
        names = [self._canonical(x) for x in names]
    clouds = [q for q in self.quantities if q.startswith("forward_kinematics:")]
    hists = [x for x in names if x not in clouds]
    # a grid of 6 columns: histograms three to a row (a shorter last row has wider panels), each
    # workspace cloud a row of its own (3-D view and two projections), so no slot is left empty
    hrows = [hists[k:k + 3] for k in range(0, len(hists), 3)]
    nrow = len(hrows) + len(clouds)
    fig = Figure(figsize=(15.0 if nrow else 5.0, 3.8 * max(nrow, 1)), layout="constrained")
    FigureCanvasAgg(fig)
    grid = fig.add_gridspec(max(nrow, 1), 6)
    for r, row in enumerate(hrows):
        w = 6 // len(row)
        for k, name in enumerate(row):
            _histogram(self, fig.add_subplot(grid[r, k * w:(k + 1) * w]), name, bins)
    for r, name in enumerate(clouds, start=len(hrows)):
        p = self.workspace(name, max_points=max_points)
        body = name.split(":", 1)[1]
        ax = fig.add_subplot(grid[r, 0:2], projection="3d")
        ax.scatter(p[:, 0], p[:, 1], p[:, 2], s=0.5, alpha=0.4, c=p[:, 2], cmap="viridis")
        orient(ax, self.model)
        up, sign = vertical_axis(self.model)
        ax.set_title(f"workspace of {body} ({len(p):,} points; {'-' if sign < 0 else '+'}{up} up)", fontsize=9)
        ax.set_xlabel("x (m)")
        ax.set_ylabel("y (m)")
        ax.set_zlabel("z (m)")
        for k, (a, b) in enumerate(((0, 1), (0, 2))):
            ax = fig.add_subplot(grid[r, 2 + 2 * k:4 + 2 * k])
            sc = ax.scatter(p[:, a], p[:, b], s=0.5, alpha=0.3, c=p[:, 2], cmap="viridis", rasterized=True)
            ax.set_aspect("equal", adjustable="datalim")
            ax.set_xlabel(f"{'xyz'[a]} (m)")
            ax.set_ylabel(f"{'xyz'[b]} (m)")
            ax.set_title(f"workspace of {body}, {'xyz'[a]}-{'xyz'[b]} projection", fontsize=9)
        fig.colorbar(sc, ax=ax, label="z of the point (m), the colour of every panel of this row")
    fig.savefig(path, dpi=110)
    return path


def entry_labels(model, name, trail):
    """Labels of the entries of an array of trailing shape ``trail``: the model's coordinate
    names for q, its velocity names for vectors (and matrices) over the velocities, else the
    index."""
    if trail == (model.nq,) and name == "q":
        return [str(x) for x in model.coordinate_names]
    if name == "constrained_dynamics.wrench":
        return [f"{L.name} {w} {a}" for L in model.loops for w in ("moment", "force") for a in "xyz"]
    vn = [str(x) for x in model.velocity_names]
    if trail == (model.nv,):
        return vn
    if trail == (model.nv, model.nv):
        return [f"{vn[i]}, {vn[j]}" for i in range(model.nv) for j in range(model.nv)]
    return [f"[{','.join(map(str, ix))}]" for ix in np.ndindex(*trail)]


# what each array holds, for the axis of its histogram (the arrays of a quantity by their suffix)
LABELS = {"q": "coordinates", "qd": "velocities", "qdd": "accelerations", "tau": "joint forces", "t": "time",
          "rnea": "joint forces of inverse dynamics", "aba": "accelerations of forward dynamics",
          "nonlinear_effects": "nonlinear effects h", "mass_matrix": "mass matrix entries",
          "kinetic_energy": "kinetic energy", "joint_terms.J": "joint Jacobian entries",
          "joint_terms.sigma": "joint twists sigma", "joint_terms.bias": "joint bias accelerations",
          "body_jacobian": "world Jacobian entries", "forward_kinematics": "pose entries",
          "constrained_dynamics.qdd": "accelerations of the closed mechanism",
          "constrained_dynamics.tau_constraint": "constraint forces Jc^T lam",
          "constrained_dynamics.wrench": "constraint wrenches on body_b",
          "loop_residual.position": "loop position residual", "loop_residual.velocity": "loop velocity residual",
          "mass": "body masses", "com": "centres of mass", "placement": "joint placements",
          "placement_angle": "joint placement rotations"}


def array_units(model, name, trail):
    """(what the array ``name`` of trailing shape ``trail`` holds, the unit of each of its entries,
    in ``np.ndindex`` order): SI units from the coordinates' kinds (``sim.plot.velocity_units``:
    a velocity variable in rad or m, so a force in N m or N, an acceleration in rad/s^2 or
    m/s^2, a mass matrix entry in kg m^2, kg m or kg)."""
    from ..sim.plot import velocity_units

    kind = name.split(":", 1)[0]
    label = LABELS.get(name, LABELS.get(kind, name))
    n = int(np.prod(trail, dtype=np.int64))
    if kind in ("kinetic_energy",):
        return label, ["J"] * n
    if kind == "t":
        return label, ["s"] * n
    if kind == "mass":
        return label, ["kg"] * n
    if kind in ("com", "placement"):
        return label, ["m"] * n
    if kind in ("placement_angle",):
        return label, ["rad"] * n
    if name == "loop_residual.position":
        return label, ["m or rad"] * n
    if name == "loop_residual.velocity":
        return label, ["m/s or rad/s"] * n
    vu = velocity_units(model)
    force = {"rad": "N m", "m": "N"}
    rate = {"rad": "rad/s", "m": "m/s"}
    accel = {"rad": "rad/s^2", "m": "m/s^2"}
    if kind == "q":
        DOFQ = _coordinate_units(model, vu)
        return label, [DOFQ[k] for k in range(model.nq)]
    per_v = {"qd": rate, "qdd": accel, "aba": accel, "constrained_dynamics.qdd": accel, "tau": force, "rnea": force,
             "nonlinear_effects": force, "constrained_dynamics.tau_constraint": force}
    if name in per_v or kind in per_v:
        table = per_v.get(name, per_v.get(kind))
        return label, [table.get(u, "?") for u in vu]
    if kind == "mass_matrix":
        mm = {("rad", "rad"): "kg m^2", ("rad", "m"): "kg m", ("m", "rad"): "kg m", ("m", "m"): "kg"}
        return label, [mm.get((a, b), "?") for a in vu for b in vu]
    if name == "constrained_dynamics.wrench":
        return label, ["N m", "N m", "N m", "N", "N", "N"] * (n // 6)
    if name in ("joint_terms.sigma", "joint_terms.bias"):
        u = ("rad/s", "m/s") if name.endswith("sigma") else ("rad/s^2", "m/s^2")
        return label, [u[x // 3] for _ in range(n // 6) for x in range(6)]
    if name == "joint_terms.J" or kind == "body_jacobian":
        nvx = trail[1]
        cols = vu if nvx == model.nv else [""] * nvx
        per = {("rad", 0): "1", ("rad", 1): "m", ("m", 0): "1/m", ("m", 1): "1"}
        return label, [per.get((cols[c], r // 3), "?") for r in range(6) for c in range(nvx)]
    if kind == "forward_kinematics":
        return label, ["m" if (c == 3 and r < 3) else "1" for r in range(4) for c in range(4)]
    return label, ["?"] * n


def _coordinate_units(model, vu):
    """The unit of each coordinate (rad, m; a unit quaternion's components 1)."""
    from ..sim.prepare import dof_tables

    DOFQ = dof_tables(model)[0]
    out = ["1"] * model.nq
    for k in range(model.nv):
        if DOFQ[k] >= 0:
            out[int(DOFQ[k])] = vu[k] or "?"
    return out


def _axis_unit(units):
    """One axis unit for entries of these units: the one they share, else each once, with 'or'."""
    seen = list(dict.fromkeys(u for u in units if u != "?")) or ["unit unknown"]
    return " or ".join(seen)


def _histogram(self, ax, name, bins):
    """One panel: the histogram of every entry of ``name`` (labelled by coordinate or velocity
    name), or of all entries together when there are more than 12."""
    counts, edges = self.histogram(name, bins=bins)
    trail = counts.shape[:-1]
    entries = list(np.ndindex(*trail))
    what, units = array_units(self.model, name, trail)
    mixed = len(set(units)) > 1
    if len(entries) <= 12:
        labels = entry_labels(self.model, name, trail)
        for ix, label, unit in zip(entries, labels, units):
            ax.stairs(counts[ix], edges[ix], label=(f"{label} ({unit})" if mixed else label) if ix else None)
        if len(entries) > 1:
            ax.legend(fontsize=6, ncol=2)
        ax.set_title(name, fontsize=9)
    else:
        lo, hi = float(edges[..., 0].min()), float(edges[..., -1].max())
        c, e = self.histogram(name, bins=bins, range=(lo, hi))
        ax.stairs(c.reshape(-1, bins).sum(axis=0), e.reshape(-1, bins + 1)[0])
        ax.set_title(f"{name} (all {len(entries)} entries together)", fontsize=9)
    ax.set_xlabel(f"{what} ({_axis_unit(units)})", fontsize=8)
    ax.set_ylabel("samples")
