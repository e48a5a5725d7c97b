"""Animations of a simulated trajectory (matplotlib's animation writers, the ``plot`` extra):
``Trajectory.animate`` and ``ejce-nb simulate ... --animate FILE``.

The mechanism is drawn as the stick figure of ``Trajectory.plot`` (body origins from
``ej.forward_kinematics``, parent to child, and the links that close each loop) on equal axes
that hold the whole motion, the model's up (against gravity) up, one frame per chosen recorded
state, with its time: by default the states nearest to real time at the frame rate (at most
``MAX_FRAMES``; the playback speed is in the title), written under a progress bar (tqdm).  A
``.gif`` is written by Pillow (a dependency of matplotlib); ``.mp4``, ``.mkv``, ``.mov`` and
``.avi`` by ffmpeg, which must be installed on the machine (matplotlib only calls it).
"""
import os

import numpy as np

from .plot import equal_axes, orient, require_matplotlib, stick_segments
from ..calls.public import forward_kinematics
from ..model.model import Model

FFMPEG_SUFFIXES = (".mp4", ".mkv", ".mov", ".avi")
# the most frames an animation chooses by default (a minute at 30 frames/s)
MAX_FRAMES = 1800


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


def effective_fps(path, fps):
    """The frame rate ``path`` plays at when written at ``fps``: a GIF's frames last whole
    hundredths of a second (30 frames/s plays at 33.3), a video's any."""
    fps = float(fps)
    if os.path.splitext(str(path))[1].lower() == ".gif":
        return 100.0 / max(1, round(100.0 / fps))
    return fps


def frame_rows(traj, trajectory=0, stride=None, max_frames=MAX_FRAMES, fps=30.0):
    """The recorded rows an animation shows, the last finite one always among them: every
    ``stride``-th finite state; by default (``stride`` None) those nearest to the times t0 + k /
    fps, so that the animation plays in real time at ``fps`` frames per second (every finite
    state where they are recorded more sparsely), at most ``max_frames`` of them (then evenly
    spread over the motion: faster than real time)."""
    one = (lambda x: x) if traj.batch is None else (lambda x: x[:, trajectory])
    good = np.nonzero(np.all(np.isfinite(one(traj.q)), axis=1))[0]
    if len(good) == 0:
        raise ValueError("animate: the trajectory has no finite recorded state")
    if max_frames is None or isinstance(max_frames, bool) or int(max_frames) != max_frames or max_frames < 1:
        raise ValueError(f"animate: max_frames must be a positive integer, got {max_frames!r}")
    if stride is None:
        t = np.asarray(traj.t, dtype=np.float64)[good]
        span = float(t[-1] - t[0])
        real = int(np.floor(span * float(fps) * (1.0 + 1e-12))) + 1     # frames at real time
        n = min(int(max_frames), real)
        if n >= len(good):
            return good
        times = t[0] + np.arange(n) / float(fps) if n == real else np.linspace(t[0], t[-1], n)
        rows = good[np.unique(np.rint(np.interp(times, t, np.arange(len(t)))).astype(np.int64))]
    else:
        if isinstance(stride, bool) or int(stride) != stride or stride < 1:
            raise ValueError(f"animate: stride must be a positive integer, got {stride!r}")
        rows = good[::int(stride)]
    if rows[-1] != good[-1]:
        rows = np.append(rows, good[-1])
    return rows


def playback(traj, rows, fps):
    """(seconds of motion shown, playback speed: seconds of motion per second of animation from
    the first frame to the last) of the frames ``rows`` at ``fps`` frames per second."""
    if len(rows) < 2:
        return 0.0, 1.0
    shown = float(traj.t[rows[-1]] - traj.t[rows[0]])
    return shown, shown / ((len(rows) - 1) / float(fps))


def animate_trajectory(traj, model, path, fps=30, stride=None, trajectory=0, max_frames=MAX_FRAMES, dpi=80,
                       progress=None):
    """``Trajectory.animate``: returns the number of frames written.  ``progress``: a tqdm bar
    over the frames (True, False, or None: when there are more than 100 and tqdm is installed)."""
    from matplotlib import animation
    from matplotlib.figure import Figure
    if not isinstance(model, Model):
        raise ValueError(f"animate needs the trajectory's ej.Model, got {type(model).__name__}")
    if traj.q.shape[-1] != model.nq:
        raise ValueError(f"animate: the trajectory has {traj.q.shape[-1]} coordinates, the model nq = {model.nq}")
    if traj.batch is not None and not 0 <= trajectory < traj.batch:
        raise ValueError(f"animate: trajectory {trajectory} is out of range (the batch has {traj.batch})")
    writer = writer_for(path, fps)
    fps = effective_fps(path, fps)
    rows = frame_rows(traj, trajectory, stride, max_frames, fps)
    q = traj.q if traj.batch is None else traj.q[:, trajectory]
    kins = [forward_kinematics(model, np.ascontiguousarray(q[k]), t=float(traj.t[k])) for k in rows]
    pts = np.stack([kin.p for kin in kins])
    links = np.stack([stick_segments(model, kin.R, kin.p)[0] for kin in kins])
    # every link as one segment of a single line: its two ends, a break
    seg = np.full((len(rows), 3 * links.shape[1], 3), np.nan)
    seg[:, 0::3] = links[:, :, 0]
    seg[:, 1::3] = links[:, :, 1]
    shown, speed = playback(traj, rows, fps)
    pace = "real time" if abs(speed - 1.0) < 0.01 else f"{speed:.3g} x real time"
    fig = Figure(figsize=(5.0, 5.0), layout="constrained")
    ax = fig.add_subplot(projection="3d")
    equal_axes(ax, np.concatenate([pts.reshape(-1, 3), links.reshape(-1, 3)]))
    orient(ax, model)
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    ax.set_zlabel("z (m)")
    (links,) = ax.plot(seg[0, :, 0], seg[0, :, 1], seg[0, :, 2], color="C0", lw=2.0)
    (dots,) = ax.plot(pts[0, 1:, 0], pts[0, 1:, 1], pts[0, 1:, 2], "o", color="C1", ms=3)
    title = ax.set_title("")

    def draw(i):
        links.set_data_3d(seg[i, :, 0], seg[i, :, 1], seg[i, :, 2])
        dots.set_data_3d(pts[i, 1:, 0], pts[i, 1:, 1], pts[i, 1:, 2])
        title.set_text(f"t = {traj.t[rows[i]]:.4g} s ({pace})")
        return links, dots, title

    anim = animation.FuncAnimation(fig, draw, frames=len(rows), blit=False, cache_frame_data=False)
    bar = None
    if progress or (progress is None and len(rows) > 100):
        try:
            from tqdm.auto import tqdm
            bar = tqdm(total=len(rows), unit="frame", desc=f"animate {os.path.basename(str(path))}", leave=False)
        except ImportError:
            if progress:
                raise ImportError("progress=True needs tqdm (pip install tqdm, or the 'plot' extra)") from None
    try:
        anim.save(str(path), writer=writer, dpi=dpi,
                  progress_callback=None if bar is None else (lambda i, n: bar.update(1)))
    finally:
        if bar is not None:
            bar.close()
    return len(rows)
