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
    npanel = len(hists) + 3 * len(clouds)
    ncol = min(3, max(1, npanel))
    nrow = -(-npanel // ncol)
    fig = Figure(figsize=(5.0 * ncol, 3.8 * nrow), layout="constrained")
    FigureCanvasAgg(fig)
    panel = 0
    for name in hists:
        panel += 1
        ax = fig.add_subplot(nrow, ncol, panel)
        counts, edges = self.histogram(name, bins=bins)
        trail = counts.shape[:-1]
        entries = list(np.ndindex(*trail))
        if len(entries) <= 12:
            for ix in entries:
                e = edges[ix]
                ax.stairs(counts[ix], e, label=(f"[{','.join(map(str, ix))}]" if ix else None))
            if len(entries) > 1:
                ax.legend(fontsize=6, ncol=2)
        else:
            lo, hi = float(edges[..., 0].min()), float(edges[..., -1].max())
            c, e = self.histogram(name, bins=bins, range=(lo, hi))
            ax.stairs(c.reshape(-1, bins).sum(axis=0), e.reshape(-1, bins + 1)[0])
            ax.set_title(f"{name} (all {len(entries)} entries)", fontsize=9)
        if len(entries) <= 12:
            ax.set_title(name, fontsize=9)
        ax.set_xlabel("value")
        ax.set_ylabel("samples")
    for name in clouds:
        p = self.workspace(name, max_points=max_points)
        body = name.split(":", 1)[1]
        panel += 1
        ax = fig.add_subplot(nrow, ncol, panel, projection="3d")
        ax.scatter(p[:, 0], p[:, 1], p[:, 2], s=0.5, alpha=0.4, c=p[:, 2], cmap="viridis")
        ax.set_title(f"workspace of {body} ({len(p):,} points)", fontsize=9)
        ax.set_xlabel("x")
        ax.set_ylabel("y")
        ax.set_zlabel("z")
        for a, b in ((0, 1), (0, 2)):
            panel += 1
            ax = fig.add_subplot(nrow, ncol, panel)
            ax.scatter(p[:, a], p[:, b], s=0.5, alpha=0.3, c=p[:, 2], cmap="viridis", rasterized=True)
            ax.set_aspect("equal", adjustable="datalim")
            ax.set_xlabel("xyz"[a])
            ax.set_ylabel("xyz"[b])
            ax.set_title(f"workspace of {body}, {'xyz'[a]}-{'xyz'[b]} projection", fontsize=9)
    fig.savefig(path, dpi=110)
    return path
