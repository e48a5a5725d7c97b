"""The figure of a sweep: histograms of its quantities and, for each body pose, the workspace
cloud in 3-D and two projections.  matplotlib is imported only here, when a figure is drawn."""
import os

import numpy as np


def plot(self, path, bins, max_points, names):
    """``SweepResult.plot``: the figure of a result's histograms and workspace clouds."""
    try:
        from matplotlib.figure import Figure
        from matplotlib.backends.backend_agg import FigureCanvasAgg
    except ImportError:
        raise ValueError('plotting needs matplotlib: pip install "ejce_nb[plot]"') from None
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
        ax.set_title(f"workspace of {body} ({len(p):,} points)", fontsize=9)
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
    vn = [str(x) for x in model.velocity_names]
    if trail == (model.nv,):
        return vn
    if trail == (model.nv, model.nv):
        return [f"{vn[i]}, {vn[j]}" for i in range(model.nv) for j in range(model.nv)]
    return [f"[{','.join(map(str, ix))}]" for ix in np.ndindex(*trail)]


def _histogram(self, ax, name, bins):
    """One panel: the histogram of every entry of ``name`` (labelled by coordinate or velocity
    name), or of all entries together when there are more than 12."""
    counts, edges = self.histogram(name, bins=bins)
    trail = counts.shape[:-1]
    entries = list(np.ndindex(*trail))
    if len(entries) <= 12:
        labels = entry_labels(self.model, name, trail)
        for ix, label in zip(entries, labels):
            ax.stairs(counts[ix], edges[ix], label=label if ix else None)
        if len(entries) > 1:
            ax.legend(fontsize=6, ncol=2)
        ax.set_title(name, fontsize=9)
    else:
        lo, hi = float(edges[..., 0].min()), float(edges[..., -1].max())
        c, e = self.histogram(name, bins=bins, range=(lo, hi))
        ax.stairs(c.reshape(-1, bins).sum(axis=0), e.reshape(-1, bins + 1)[0])
        ax.set_title(f"{name} (all {len(entries)} entries together)", fontsize=9)
    ax.set_xlabel("value")
    ax.set_ylabel("samples")
