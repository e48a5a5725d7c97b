"""Animations of a simulated trajectory (matplotlib's animation writers, the ``plot`` extra):
``Trajectory.animate`` and ``ejce-nb simulate ... --animate FILE``.

The mechanism is drawn as the stick figure of ``Trajectory.plot`` (body origins from
``ej.forward_kinematics``, parent to child) on equal axes that hold the whole motion, one frame
per chosen recorded state, with its time.  A ``.gif`` is written by Pillow (a dependency of
matplotlib); ``.mp4``, ``.mkv``, ``.mov`` and ``.avi`` by ffmpeg, which must be installed on the
machine (matplotlib only calls it).
"""
import os

import numpy as np

from .plot import equal_axes, require_matplotlib
from ..calls.public import forward_kinematics
from ..model.model import Model

FFMPEG_SUFFIXES = (".mp4", ".mkv", ".mov", ".avi")


def writer_for(path, fps):
    """The matplotlib animation writer for ``path`` (by its suffix); refuses a suffix it cannot
    write, and a video when ffmpeg is not installed, before any work is done."""
    require_matplotlib()
    from matplotlib import animation
    fps = float(fps)
    if not (np.isfinite(fps) and fps > 0):
        raise ValueError(f"animate: fps must be a positive number, got {fps}")
    ext = os.path.splitext(str(path))[1].lower()
    if ext == ".gif":
        return animation.PillowWriter(fps=fps)
    if ext in FFMPEG_SUFFIXES:
        if not animation.writers.is_available("ffmpeg"):
            raise RuntimeError(f"animate: writing {ext} needs ffmpeg, which is not installed on this machine "
                               f"(matplotlib looks for {animation.FFMpegWriter.bin_path()!r}); install ffmpeg or "
                               "write a .gif (Pillow)")
        return animation.FFMpegWriter(fps=fps)
    raise ValueError(f"animate: the file name must end in .gif (Pillow) or {', '.join(FFMPEG_SUFFIXES)} (ffmpeg), "
                     f"got {str(path)!r}")


def frame_rows(traj, trajectory=0, stride=None, max_frames=300):
    """The recorded rows an animation shows: the finite states, every ``stride``-th (default:
    at most ``max_frames``), the last one always."""
    one = (lambda x: x) if traj.batch is None else (lambda x: x[:, trajectory])
    good = np.nonzero(np.all(np.isfinite(one(traj.q)), axis=1))[0]
    if len(good) == 0:
        raise ValueError("animate: the trajectory has no finite recorded state")
    if stride is None:
        stride = max(1, -(-len(good) // int(max_frames)))
    if isinstance(stride, bool) or int(stride) != stride or stride < 1:
        raise ValueError(f"animate: stride must be a positive integer, got {stride!r}")
    rows = good[::int(stride)]
    if rows[-1] != good[-1]:
        rows = np.append(rows, good[-1])
    return rows


def animate_trajectory(traj, model, path, fps=30, stride=None, trajectory=0, max_frames=300, dpi=80):
    """``Trajectory.animate``: returns the number of frames written."""
    from matplotlib import animation
    from matplotlib.figure import Figure
    if not isinstance(model, Model):
        raise ValueError(f"animate needs the trajectory's ej.Model, got {type(model).__name__}")
    if traj.q.shape[-1] != model.nq:
        raise ValueError(f"animate: the trajectory has {traj.q.shape[-1]} coordinates, the model nq = {model.nq}")
    if traj.batch is not None and not 0 <= trajectory < traj.batch:
        raise ValueError(f"animate: trajectory {trajectory} is out of range (the batch has {traj.batch})")
    writer = writer_for(path, fps)
    rows = frame_rows(traj, trajectory, stride, max_frames)
    q = traj.q if traj.batch is None else traj.q[:, trajectory]
    pts = np.stack([forward_kinematics(model, np.ascontiguousarray(q[k]), t=float(traj.t[k])).p for k in rows])
    parent = np.asarray(model.parent)
    kids = np.arange(1, model.nbodies + 1)
    # every link as one segment of a single line: parent, child, a break
    seg = np.full((len(rows), 3 * len(kids), 3), np.nan)
    seg[:, 0::3] = pts[:, parent[kids]]
    seg[:, 1::3] = pts[:, kids]
    fig = Figure(figsize=(5.0, 5.0), layout="constrained")
    ax = fig.add_subplot(projection="3d")
    equal_axes(ax, pts.reshape(-1, 3))
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    ax.set_zlabel("z (m)")
    (links,) = ax.plot(seg[0, :, 0], seg[0, :, 1], seg[0, :, 2], color="C0", lw=2.0)
    (dots,) = ax.plot(pts[0, 1:, 0], pts[0, 1:, 1], pts[0, 1:, 2], "o", color="C1", ms=3)
    title = ax.set_title("")

    def draw(i):
        links.set_data_3d(seg[i, :, 0], seg[i, :, 1], seg[i, :, 2])
        dots.set_data_3d(pts[i, 1:, 0], pts[i, 1:, 1], pts[i, 1:, 2])
        title.set_text(f"t = {traj.t[rows[i]]:.4g} s")
        return links, dots, title

    anim = animation.FuncAnimation(fig, draw, frames=len(rows), blit=False, cache_frame_data=False)
    anim.save(str(path), writer=writer, dpi=dpi)
    return len(rows)
