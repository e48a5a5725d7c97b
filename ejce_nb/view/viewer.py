"""The viewer: a Viser server in background threads of the calling process, the bodies' frames, a
stick figure and the visual geometry (``readers``), and its controls (a time slider and a play
button over a trajectory, or a slider per coordinate)."""
import os
import re
import threading
import time
import warnings

import numpy as np

from .chromium import _free_port, screenshot
from .geometry import _wxyz
from .readers import visual_geometry
from ..sim.plot import stick_segments, vertical_axis

STICK_COLOR = (40, 90, 200)


def _require_viser():
    try:
        import viser  # noqa: F401
        import trimesh  # noqa: F401
    except ImportError as e:
        raise ImportError(f"the viewer needs viser and trimesh ({e.name} is not installed): "
                          "pip install \".[view]\"") from e


def _as_trajectory(traj):
    """(t (T,), q (T, [B,] nq)) of a Trajectory, a trajectory file (.npz) or an array of q rows."""
    from ..sim.trajectory import Trajectory
    if traj is None:
        return None
    if isinstance(traj, (str, os.PathLike)):
        path = os.fspath(traj)
        if not path.lower().endswith(".npz"):
            raise ValueError(f"view: a trajectory file is a .npz written by Trajectory.save (ejce-nb simulate --out "
                             f"FILE.npz), got {path!r}")
        traj = Trajectory.load(path)
    if isinstance(traj, Trajectory):
        return np.asarray(traj.t, float), np.asarray(traj.q, float)
    q = np.asarray(traj, float)
    if q.ndim not in (2, 3):
        raise ValueError(f"view: traj must be a Trajectory, a .npz file or q rows (T, nq) / (T, B, nq), "
                         f"got shape {q.shape}")
    return np.arange(q.shape[0], dtype=float), q


class Viewer:
    """A running viewer (returned by ``ej.view``). ``url`` is its page; ``server`` the
    ``viser.ViserServer``; ``visuals`` the drawn ``Visual`` list and ``notes`` what was not drawn.
    ``show(q, t=0.0)`` shows a configuration, ``show_frame(k, sample=0)`` a recorded row of the
    trajectory; ``screenshot(path)`` saves the page as headless Chromium draws it; ``close()``
    stops the server, ``wait()`` serves until Ctrl-C.  In a notebook the object displays the live
    page in an inline frame of ``url`` (``_repr_html_``; the notebook's browser must reach the
    port); ``server.scene.show()`` (Viser's) embeds a static copy of the scene instead."""

    def __init__(self, model, traj=None, source=None, host="127.0.0.1", port=8080, sample=0,
                 geometry=True, fps=30.0, q=None):
        _require_viser()
        import viser
        from ..calls.public import forward_kinematics
        self._fk = forward_kinematics
        self.model = model
        tq = _as_trajectory(traj)
        self.t, self.q = (None, None) if tq is None else tq
        if self.q is not None:
            if self.q.shape[-1] != model.nq:
                raise ValueError(f"view: the trajectory has {self.q.shape[-1]} coordinates, the model nq = {model.nq}")
            if self.q.ndim == 3 and not 0 <= sample < self.q.shape[1]:
                raise ValueError(f"view: sample {sample} is out of range (the batch has {self.q.shape[1]})")
        self.visuals, self.notes = visual_geometry(model, source) if geometry else ([], [])
        self._lock = threading.Lock()
        self._playing = False
        self._fps = float(fps)
        if port is None or port == 0:
            port = _free_port(host)
        self.server = viser.ViserServer(host=host, port=int(port), verbose=False)
        self.host = host
        self.port = int(self.server.get_port())
        self._build_scene()
        if q is not None:
            q = np.asarray(q, float)
            if q.shape != (model.nq,):
                raise ValueError(f"view: q must have shape ({model.nq},), got {q.shape}")
            self._q0 = q
        self._build_gui(sample)
        if self.q is not None:
            self.show_frame(0, sample)
        else:
            self.show(self._q0, 0.0)
        self._player = threading.Thread(target=self._play_loop, daemon=True)
        self._stop = threading.Event()
        self._player.start()

    # -- scene
    @property
    def url(self):
        host = "localhost" if self.host in ("0.0.0.0", "127.0.0.1", "") else self.host
        return f"http://{host}:{self.port}"

    def _build_scene(self):
        m = self.model
        self._q0 = np.asarray(m.neutral(), float)
        first = self._q0
        if self.q is not None:               # the extent of the motion: up to 20 finite rows of every sample
            rows = self.q.reshape(self.q.shape[0], -1, m.nq)
            fin = np.all(np.isfinite(rows), axis=2)
            good = [(k, b) for b in range(rows.shape[1]) for k in np.nonzero(fin[:, b])[0]]
            if not good:
                raise ValueError("view: the trajectory has no finite recorded state")
            pick = [good[i] for i in np.linspace(0, len(good) - 1, min(len(good), 20)).astype(int)]
            pts = np.concatenate([self._fk(m, self._finite(rows[k, b]), t=float(self.t[k])).p for k, b in pick])
            first = rows[good[0][0], good[0][1]]
        else:
            pts = self._fk(m, self._q0).p
        kin0 = self._fk(m, self._finite(first))
        for v in self.visuals:                # the geometry where it starts, planes aside
            if v.kind != "plane":
                w = v.vertices[:: max(1, len(v.vertices) // 50)]
                pts = np.concatenate([pts, w @ np.asarray(kin0.R[v.body]).T + kin0.p[v.body]])
        lo, hi = pts.min(axis=0), pts.max(axis=0)
        center = 0.5 * (lo + hi)
        extent = float(max(np.max(hi - lo), 0.2))
        self.extent = extent
        axes = 0.12 * extent
        sc = self.server.scene
        # the model's up (against gravity: y for an OpenSim model) up, the grid below the model
        axis, sign = vertical_axis(m)
        i = "xyz".index(axis)
        up = np.eye(3)[i] * sign
        sc.set_up_direction(up)
        floor = center.copy()
        floor[i] = min(lo[i], 0.0) if sign > 0 else max(hi[i], 0.0)
        sc.add_grid("/grid", width=1.2 * extent, height=1.2 * extent, cell_size=extent / 10,
                    section_size=extent / 2, plane={"x": "yz", "y": "zx", "z": "xy"}[axis], position=floor)
        self._frames = []
        for b in range(m.nbodies + 1):
            name = self._node(b)
            self._frames.append(sc.add_frame(name, show_axes=True, axes_length=axes if b else 1.5 * axes,
                                             axes_radius=axes / 25, origin_radius=axes / 12))
        self._meshes = []
        for k, v in enumerate(self.visuals):
            self._meshes.append(sc.add_mesh_simple(f"{self._node(v.body)}/geom{k}", v.vertices, v.faces,
                                                   color=v.color, opacity=None if v.opacity >= 1 else v.opacity,
                                                   flat_shading=v.kind in ("box",)))
        # body origins parent to child, and the links that close each loop (``sim.plot.stick_segments``)
        self._stick = sc.add_line_segments("/stick", np.zeros((max(m.nbodies + 2 * len(m.loops), 1), 2, 3)),
                                           STICK_COLOR, thickness=extent / 80)
        cam = self.server.initial_camera
        cam.look_at = tuple(center)
        a, b = np.eye(3)[(i + 1) % 3], np.eye(3)[(i + 2) % 3]
        cam.position = tuple(center + extent * (0.85 * a - 1.05 * b + 0.5 * up))
        cam.up = tuple(up)

    def _node(self, b):
        name = self.model.body_names[b] if b else "world"
        return f"/bodies/{b:03d}_" + re.sub(r"[^A-Za-z0-9_.-]", "_", name)

    def _finite(self, q):
        q = np.array(q, float)
        for a, n in self._quat_blocks():
            w = q[a:a + n]
            nrm = np.linalg.norm(w)
            q[a:a + n] = w / nrm if nrm > 0 else (1.0, 0.0, 0.0, 0.0)
        return q

    def _quat_blocks(self):
        if not hasattr(self, "_qb"):
            self._qb = [(sl.start, sl.stop - sl.start) for _, sl in self.model.quaternion_blocks()]
        return self._qb

    def show(self, q, t=0.0):
        """Show the configuration ``q`` (nq,) at time ``t``; returns the world poses
        (``forward_kinematics``'s ``R`` (N+1, 3, 3) and ``p`` (N+1, 3))."""
        kin = self._fk(self.model, self._finite(q), t=float(t))
        R, p = np.asarray(kin.R), np.asarray(kin.p)
        with self.server.atomic():
            for b, fr in enumerate(self._frames):
                fr.wxyz = _wxyz(R[b])
                fr.position = p[b]
            if self.model.nbodies:
                self._stick.points = stick_segments(self.model, R, p)[0]
        self.R, self.p = R, p
        return R, p

    def show_frame(self, k, sample=None):
        """Show the recorded row ``k`` of the trajectory (of batch sample ``sample``)."""
        if self.q is None:
            raise ValueError("view: no trajectory was given")
        if sample is None:
            sample = self._sample
        self._sample = int(sample)
        row = self.q[int(k)] if self.q.ndim == 2 else self.q[int(k), self._sample]
        if not np.all(np.isfinite(row)):
            return None
        self._k = int(k)
        return self.show(row, self.t[int(k)])

    # -- controls
    def _build_gui(self, sample):
        gui = self.server.gui
        m = self.model
        self._sample = int(sample)
        with gui.add_folder("Show"):
            c_frames = gui.add_checkbox("body frames", True)
            c_stick = gui.add_checkbox("stick figure", True)
            c_geom = gui.add_checkbox("geometry", True, disabled=not self.visuals)

        @c_frames.on_update
        def _(_):
            for fr in self._frames:
                fr.show_axes = c_frames.value

        @c_stick.on_update
        def _(_):
            self._stick.visible = c_stick.value

        @c_geom.on_update
        def _(_):
            for h in self._meshes:
                h.visible = c_geom.value

        if self.q is not None:
            T = self.q.shape[0]
            with gui.add_folder("Trajectory"):
                self._time = gui.add_slider("row", min=0, max=max(T - 1, 1), step=1, initial_value=0,
                                            hint="recorded state shown")
                self._tlabel = gui.add_markdown(f"t = {self.t[0]:.4g} s")
                self._play = gui.add_button("Play / pause")
                self._speed = gui.add_slider("speed", min=0.1, max=4.0, step=0.1, initial_value=1.0)
                if self.q.ndim == 3:
                    self._samp = gui.add_slider("sample", min=0, max=max(self.q.shape[1] - 1, 1), step=1,
                                                initial_value=self._sample, hint="trajectory of the batch")

                    @self._samp.on_update
                    def _(_):
                        self.show_frame(self._time.value, int(self._samp.value))

            @self._time.on_update
            def _(_):
                k = int(self._time.value)
                self._tlabel.content = f"t = {self.t[min(k, T - 1)]:.4g} s"
                self.show_frame(min(k, T - 1))

            @self._play.on_click
            def _(_):
                self._playing = not self._playing
                if self._playing and int(self._time.value) >= T - 1:
                    self._time.value = 0
                self._play_start = (time.monotonic(), float(self.t[int(self._time.value)]))
        else:
            names = list(m.coordinate_names)
            lo = np.asarray(m.q_lower, float) if getattr(m, "q_lower", None) is not None else np.full(m.nq, -np.inf)
            hi = np.asarray(m.q_upper, float) if getattr(m, "q_upper", None) is not None else np.full(m.nq, np.inf)
            self._sliders = []
            with gui.add_folder("Coordinates"):
                for i in range(m.nq):
                    a = lo[i] if np.isfinite(lo[i]) else self._q0[i] - np.pi
                    b = hi[i] if np.isfinite(hi[i]) else self._q0[i] + np.pi
                    if not b > a:
                        b = a + 1e-3
                    s = gui.add_slider(names[i], min=float(a), max=float(b), step=float((b - a) / 1000),
                                       initial_value=float(np.clip(self._q0[i], a, b)))
                    s.on_update(lambda _: self._from_sliders())
                    self._sliders.append(s)
                self._tslider = None
                if getattr(m, "rheonomic", False):
                    self._tslider = gui.add_slider("t (s)", min=0.0, max=10.0, step=0.01, initial_value=0.0)
                    self._tslider.on_update(lambda _: self._from_sliders())
                reset = gui.add_button("Neutral")

            @reset.on_click
            def _(_):
                with self.server.atomic():
                    for s, v in zip(self._sliders, self._q0):
                        s.value = float(np.clip(v, s.min, s.max))
                self._from_sliders()
        if self.notes:
            with gui.add_folder("Not drawn", expand_by_default=False):
                gui.add_markdown("\n".join(f"* {n}" for n in self.notes[:30]))

    def _from_sliders(self):
        q = np.array([s.value for s in self._sliders], float)
        t = self._tslider.value if self._tslider is not None else 0.0
        with self._lock:
            self.show(q, t)

    def _play_loop(self):
        while not self._stop.is_set():
            time.sleep(1.0 / self._fps)
            if not self._playing or self.q is None:
                continue
            wall0, t0 = self._play_start
            target = t0 + (time.monotonic() - wall0) * float(self._speed.value)
            k = int(np.searchsorted(self.t, target, side="right") - 1)
            if k >= len(self.t) - 1:
                k = len(self.t) - 1
                self._playing = False
            if k != int(self._time.value):
                self._time.value = k

    def screenshot(self, path, size=(1000, 620), timeout=120.0):
        """Save a PNG of the viewer's page as headless Chromium draws it (``screenshot``), once its
        controls are on the page; returns ``path``."""
        wait_for = ("Trajectory",) if self.q is not None else ("Coordinates",) if self.model.nq else ("Show",)
        return screenshot(self.url, path, size=size, wait_for=wait_for, timeout=timeout)

    def close(self):
        """Stop the server."""
        self._stop.set()
        self.server.stop()

    def wait(self):
        """Serve until interrupted (Ctrl-C), then stop."""
        try:
            while True:
                time.sleep(0.5)
        except KeyboardInterrupt:
            pass
        finally:
            self.close()

    def __repr__(self):
        return f"<ejce_nb Viewer at {self.url}: {self.model.nbodies} bodies, {len(self.visuals)} visuals>"

    def _repr_html_(self):
        return (f'<iframe src="{self.url}" width="100%" height="500" style="border:none"></iframe>'
                f'<div><a href="{self.url}" target="_blank">{self.url}</a></div>')


def view(model, traj=None, *, source=None, host="127.0.0.1", port=8080, sample=0, geometry=True, q=None,
         block=False):
    """Show a model in 3-D in the browser, with Viser (``pip install ".[view]"``).

    ``model`` is an ``ej.Model``, or a shipped model name or model file (``.json``, ``.urdf``,
    ``.xml``, ``.osim``), which is loaded and is then also the ``source`` of the geometry.
    ``traj`` is an ``ej.Trajectory`` (a batch: ``sample`` picks the trajectory shown first), a
    ``.npz`` file written by ``Trajectory.save``, or q rows ``(T, nq)``: the viewer then has a time
    slider and a play button; without it, a slider per coordinate, starting at ``q`` (default
    ``model.neutral()``). ``source`` is the model file
    whose visual geometry is drawn (URDF ``<visual>``, MJCF geoms, OpenSim ``attached_geometry``);
    bodies are always drawn as their frames and a stick figure. The server listens on ``host``
    and ``port`` (the next free port if taken; ``port=0``: any); ``block=True`` serves until
    Ctrl-C. Returns a ``Viewer`` (``viewer.url``; in a notebook it displays the live page in an
    inline frame of that address).  Over SSH, forward the port (``ssh -L 8080:localhost:8080
    host``)."""
    from ..model.model import Model
    if not isinstance(model, Model):
        path = os.fspath(model)
        from ..io import zoo
        if source is None:
            source = path if os.path.isfile(path) else zoo.shipped_path(path)
        model = zoo.load(path)
    if source is not None and not os.fspath(source).lstrip().startswith("<"):
        if not os.path.isfile(os.fspath(source)):
            from ..io import zoo
            alt = zoo.shipped_path(os.fspath(source))
            if not os.path.isfile(alt):
                raise ValueError(f"view: source {os.fspath(source)!r} is not a file")
            source = alt
    v = Viewer(model, traj, source=source, host=host, port=port, sample=sample, geometry=geometry, q=q)
    if v.notes:
        warnings.warn("view: not drawn: " + "; ".join(v.notes[:10]) + (" ..." if len(v.notes) > 10 else ""),
                      stacklevel=2)
    if block:
        v.wait()
    return v
