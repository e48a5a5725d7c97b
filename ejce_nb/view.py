"""A 3-D viewer of models and trajectories in the browser, with Viser (the ``view`` extra:
``pip install "ejce_nb[view]"``): ``ej.view`` and ``ejce-nb view MODEL [--traj FILE]``.

The viewer draws every body's frame, a stick figure (parent origin to child origin, as
``Trajectory.plot`` and ``Trajectory.animate`` draw it) and, where the model's file has it, the
bodies' visual geometry:

* URDF: each link's ``<visual>`` elements (``box``, ``cylinder``, ``sphere`` and ``mesh`` files
  that trimesh reads: STL, OBJ, PLY, ...; ``package://`` names are looked up beside the file and in
  the folders above it), with their material colours;
* MJCF: MuJoCo's compiled geoms of groups 0-2 (planes, spheres, capsules, ellipsoids, cylinders,
  boxes and meshes, with their colours; needs ``mujoco``);
* OpenSim: the bodies' ``attached_geometry`` (``Brick``, ``Sphere``, ``Cylinder``,
  ``Ellipsoid`` and ``Mesh`` files: ASCII ``.vtp`` and what trimesh reads), looked up beside the
  file and in its ``Geometry`` folder.

Over a trajectory it shows a time slider, a play button and, for a batch, the sample to show;
without one, a slider per coordinate (and for the time, on rheonomic models).  The server runs in
background threads of the calling process; the page is ``viewer.url``: over SSH forward the port
(``ssh -L 8080:localhost:8080 host``), and in a notebook the returned ``Viewer`` shows the page in
the cell.
"""
import os
import re
import socket
import threading
import time
import warnings
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

import numpy as np

__all__ = ["view", "Viewer", "Visual", "visual_geometry", "screenshot", "find_chromium", "add_parser",
           "view_command", "cli_view"]

BODY_COLOR = (205, 120, 60)           # geometry without a colour of its own
STICK_COLOR = (40, 90, 200)


def _require_viser():
    try:
        import viser  # noqa: F401
        import trimesh  # noqa: F401
    except ImportError as e:
        raise ImportError(f"the viewer needs viser and trimesh ({e.name} is not installed): "
                          "pip install \"ejce_nb[view]\"") from e


# ---------------------------------------------------------------------------- geometry
@dataclass
class Visual:
    """One piece of a body's visual geometry: ``vertices`` (k, 3) and ``faces`` (m, 3) in the
    body frame of body ``body``, ``color`` (r, g, b) in 0-255, ``opacity`` in (0, 1], the
    ``kind`` it was made from (``"box"``, ``"sphere"``, ``"cylinder"``, ``"capsule"``,
    ``"ellipsoid"``, ``"plane"``, ``"mesh"``) and its ``name``."""
    body: int
    kind: str
    vertices: np.ndarray
    faces: np.ndarray
    color: tuple = BODY_COLOR
    opacity: float = 1.0
    name: str = ""


@dataclass
class _Geometry:
    visuals: list = field(default_factory=list)
    notes: list = field(default_factory=list)


def _pose(R=None, p=None):
    T = np.eye(4)
    if R is not None:
        T[:3, :3] = R
    if p is not None:
        T[:3, 3] = p
    return T


def _rpy(r, p, y):
    """URDF's roll-pitch-yaw: R = Rz(y) Ry(p) Rx(r)."""
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


def _xyz_body(a, b, c):
    """OpenSim's body-fixed X-Y-Z angles: R = Rx(a) Ry(b) Rz(c)."""
    return _rx(a) @ _ry(b) @ _rz(c)


def _rx(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[1.0, 0, 0], [0, c, -s], [0, s, c]])


def _ry(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, 0, s], [0, 1.0, 0], [-s, 0, c]])


def _rz(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1.0]])


def _quat_matrix(w, x, y, z):
    n = np.sqrt(w * w + x * x + y * y + z * z) or 1.0
    w, x, y, z = w / n, x / n, y / n, z / n
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def _wxyz(R):
    """Unit quaternion (w, x, y, z) of a rotation matrix (Shepperd's method)."""
    t = np.trace(R)
    if t > 0:
        s = 2.0 * np.sqrt(1.0 + t)
        q = (0.25 * s, (R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s)
    elif R[0, 0] > R[1, 1] and R[0, 0] > R[2, 2]:
        s = 2.0 * np.sqrt(1.0 + R[0, 0] - R[1, 1] - R[2, 2])
        q = ((R[2, 1] - R[1, 2]) / s, 0.25 * s, (R[0, 1] + R[1, 0]) / s, (R[0, 2] + R[2, 0]) / s)
    elif R[1, 1] > R[2, 2]:
        s = 2.0 * np.sqrt(1.0 + R[1, 1] - R[0, 0] - R[2, 2])
        q = ((R[0, 2] - R[2, 0]) / s, (R[0, 1] + R[1, 0]) / s, 0.25 * s, (R[1, 2] + R[2, 1]) / s)
    else:
        s = 2.0 * np.sqrt(1.0 + R[2, 2] - R[0, 0] - R[1, 1])
        q = ((R[1, 0] - R[0, 1]) / s, (R[0, 2] + R[2, 0]) / s, (R[1, 2] + R[2, 1]) / s, 0.25 * s)
    q = np.array(q)
    return q / np.linalg.norm(q)


def _primitive(kind, size):
    """(vertices, faces) of a primitive centred at the origin: box (full extents), sphere (r,),
    cylinder and capsule (r, length of the axis part) along z, ellipsoid (radii), plane (half
    sizes x, y)."""
    import trimesh
    c = trimesh.creation
    if kind == "box":
        m = c.box(extents=np.maximum(np.asarray(size, float), 1e-6))
    elif kind == "sphere":
        m = c.icosphere(subdivisions=2, radius=float(size[0]))
    elif kind == "ellipsoid":
        m = c.icosphere(subdivisions=2, radius=1.0)
        m.vertices = m.vertices * np.asarray(size, float)
    elif kind == "cylinder":
        m = c.cylinder(radius=float(size[0]), height=float(size[1]), sections=24)
    elif kind == "capsule":
        m = c.capsule(height=float(size[1]), radius=float(size[0]), count=[12, 12])
        m.vertices = m.vertices - m.bounds.mean(axis=0)
    elif kind == "plane":
        m = c.box(extents=(2 * float(size[0]), 2 * float(size[1]), 1e-3))
    else:
        raise ValueError(kind)
    return np.asarray(m.vertices, float), np.asarray(m.faces, np.int32)


def _place(vertices, T, scale=None):
    v = np.asarray(vertices, float)
    if scale is not None:
        v = v * np.asarray(scale, float)
    return v @ T[:3, :3].T + T[:3, 3]


def _read_mesh_file(path):
    """(vertices, faces) of a mesh file: ASCII VTK PolyData (.vtp, OpenSim's), or any format
    trimesh reads."""
    if path.lower().endswith(".vtp"):
        return _read_vtp(path)
    import trimesh
    m = trimesh.load(path, force="mesh", process=False)
    return np.asarray(m.vertices, float), np.asarray(m.faces, np.int32)


def _read_vtp(path):
    root = ET.parse(path).getroot()
    poly = root.find(".//PolyData/Piece")
    if poly is None:
        raise ValueError("no PolyData piece")

    def array(parent, name=None):
        for da in parent.iter("DataArray"):
            if name is None or da.get("Name") == name:
                if da.get("format", "ascii") != "ascii":
                    raise ValueError("only ASCII .vtp files are read")
                return np.array(da.text.split(), float)
        raise ValueError(f"no DataArray {name}")

    pts = array(poly.find("Points")).reshape(-1, 3)
    polys = poly.find("Polys")
    conn = array(polys, "connectivity").astype(np.int64)
    offs = array(polys, "offsets").astype(np.int64)
    faces, start = [], 0
    for end in offs:                       # fan-triangulate each polygon
        f = conn[start:end]
        faces += [(f[0], f[k], f[k + 1]) for k in range(1, len(f) - 1)]
        start = end
    return pts, np.asarray(faces, np.int32).reshape(-1, 3)


def _find_file(name, base, extra_dirs=()):
    """A mesh file named in a model file: absolute, beside it, in ``extra_dirs``, or (for
    ``package://pkg/rest``) ``rest`` or ``pkg/rest`` in the model's folder or those above it."""
    name = name.strip()
    if name.startswith("file://"):
        name = name[7:]
    cands = []
    if name.startswith("package://"):
        rest = name[len("package://"):]
        tail = rest.split("/", 1)[1] if "/" in rest else rest
        d = base
        for _ in range(6):
            cands += [os.path.join(d, rest), os.path.join(d, tail)]
            d = os.path.dirname(d)
    elif os.path.isabs(name):
        cands.append(name)
    else:
        cands += [os.path.join(base, name)] + [os.path.join(base, e, name) for e in extra_dirs]
    for c in cands:
        if os.path.isfile(c):
            return c
    return None


def _floats(text, n=None, default=None):
    if text is None:
        return default
    v = [float(x) for x in text.split()]
    if n is not None and len(v) != n:
        raise ValueError(f"expected {n} numbers, got {text!r}")
    return v


def _source_root(source):
    """(XML root, folder of the file) of a model file path or model text."""
    if source.lstrip().startswith("<"):
        return ET.fromstring(source), os.getcwd()
    return ET.parse(source).getroot(), os.path.dirname(os.path.abspath(source))


def _body_of(model, name):
    """(body index, 4x4 placement in that body's frame) of a link or body named ``name``: a body
    of the model, or a named frame (a URDF link merged into its parent); None if neither."""
    if name in ("world", "ground") and name not in model.body_names:
        return 0, np.eye(4)
    if name in model.body_names:
        return model.body_names.index(name), np.eye(4)
    if name in getattr(model, "frame_names", ()):
        b, X = model.frame_placement(name)
        return b, _pose(np.asarray(X.rotation), np.asarray(X.translation))
    return None


def _urdf_visuals(model, source):
    root, base = _source_root(source)
    geo = _Geometry()
    materials = {}
    for m in root.findall("material"):
        c = m.find("color")
        if c is not None and m.get("name"):
            materials[m.get("name")] = _floats(c.get("rgba"), 4)
    for link in root.findall("link"):
        name = link.get("name")
        where = _body_of(model, name)
        for k, vis in enumerate(link.findall("visual")):
            if where is None:
                geo.notes.append(f"link {name!r}: not a body or frame of the model")
                break
            body, Tb = where
            o = vis.find("origin")
            T = Tb @ _pose(_rpy(*_floats(o.get("rpy") if o is not None else None, 3, [0, 0, 0])),
                           _floats(o.get("xyz") if o is not None else None, 3, [0, 0, 0]))
            g = vis.find("geometry")
            shape = g[0] if g is not None and len(g) else None
            rgba = None
            mat = vis.find("material")
            if mat is not None:
                c = mat.find("color")
                rgba = _floats(c.get("rgba"), 4) if c is not None else materials.get(mat.get("name"))
            label = f"{name}/visual{k}"
            try:
                if shape is None:
                    raise ValueError("no geometry")
                if shape.tag == "box":
                    v, f = _primitive("box", _floats(shape.get("size"), 3))
                    kind = "box"
                elif shape.tag == "sphere":
                    v, f = _primitive("sphere", [float(shape.get("radius"))])
                    kind = "sphere"
                elif shape.tag == "cylinder":
                    v, f = _primitive("cylinder", [float(shape.get("radius")), float(shape.get("length"))])
                    kind = "cylinder"
                elif shape.tag == "mesh":
                    path = _find_file(shape.get("filename", ""), base)
                    if path is None:
                        raise ValueError(f"mesh file {shape.get('filename')!r} not found")
                    v, f = _read_mesh_file(path)
                    v = v * np.asarray(_floats(shape.get("scale"), 3, [1, 1, 1]))
                    kind = "mesh"
                else:
                    raise ValueError(f"<{shape.tag}> is not drawn")
            except Exception as e:           # noqa: BLE001 - a file's defect: note it, draw the rest
                geo.notes.append(f"{label}: {e}")
                continue
            color = tuple(int(round(255 * x)) for x in rgba[:3]) if rgba else BODY_COLOR
            opacity = float(rgba[3]) if rgba and rgba[3] < 1 else 1.0
            geo.visuals.append(Visual(body, kind, _place(v, T), f, color, opacity, label))
    return geo


_MJ_KINDS = {0: "plane", 2: "sphere", 3: "capsule", 4: "ellipsoid", 5: "cylinder", 6: "box", 7: "mesh"}


def _mjcf_visuals(model, source):
    import mujoco
    mj = (mujoco.MjModel.from_xml_string(source) if source.lstrip().startswith("<")
          else mujoco.MjModel.from_xml_path(source))
    geo = _Geometry()
    if mj.nbody != model.nbodies + 1:
        geo.notes.append(f"the MJCF file has {mj.nbody - 1} bodies, the model {model.nbodies}: no geometry drawn")
        return geo
    for g in range(mj.ngeom):
        if int(mj.geom_group[g]) > 2:
            continue
        kind = _MJ_KINDS.get(int(mj.geom_type[g]))
        size = np.asarray(mj.geom_size[g], float)
        name = mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_GEOM, g) or f"geom{g}"
        if kind is None:
            geo.notes.append(f"geom {name!r}: type {int(mj.geom_type[g])} is not drawn")
            continue
        if kind == "mesh":
            m = int(mj.geom_dataid[g])
            a, n = int(mj.mesh_vertadr[m]), int(mj.mesh_vertnum[m])
            fa, fn = int(mj.mesh_faceadr[m]), int(mj.mesh_facenum[m])
            v, f = np.asarray(mj.mesh_vert[a:a + n], float), np.asarray(mj.mesh_face[fa:fa + fn], np.int32)
        elif kind == "plane":
            v, f = _primitive("plane", [s if s > 0 else 1.0 for s in size[:2]])
        elif kind == "box":
            v, f = _primitive("box", 2 * size)
        elif kind in ("cylinder", "capsule"):
            v, f = _primitive(kind, (size[0], 2 * size[1]))
        else:
            v, f = _primitive(kind, size if kind == "ellipsoid" else size[:1])
        T = _pose(_quat_matrix(*mj.geom_quat[g]), mj.geom_pos[g])
        rgba = np.asarray(mj.geom_rgba[g], float)
        geo.visuals.append(Visual(int(mj.geom_bodyid[g]), kind, _place(v, T), f,
                                  tuple(int(round(255 * x)) for x in rgba[:3]), float(min(rgba[3], 1.0)) or 1.0,
                                  name))
    return geo


def _osim_visuals(model, source):
    root, base = _source_root(source)
    geo = _Geometry()
    dirs = ("Geometry", "geometry", os.path.join("..", "Geometry"))
    frames = {}                               # PhysicalOffsetFrame name -> (parent name, 4x4)
    for pof in root.iter("PhysicalOffsetFrame"):
        parent = (pof.findtext("socket_parent") or "").strip().rsplit("/", 1)[-1]
        T = _pose(_xyz_body(*_floats(pof.findtext("orientation"), 3, [0, 0, 0])),
                  _floats(pof.findtext("translation"), 3, [0, 0, 0]))
        frames[pof.get("name")] = (parent, T)
    owners = list(root.iter("Body")) + list(root.iter("Ground"))
    for owner in owners:
        oname = owner.get("name") or "ground"
        for ag in owner.findall("attached_geometry"):
            for k, gel in enumerate(ag):
                label = f"{oname}/{gel.get('name') or gel.tag + str(k)}"
                sock = (gel.findtext("socket_frame") or "..").strip()
                fname = sock.rsplit("/", 1)[-1]
                T = np.eye(4)
                holder = oname
                if sock not in ("..", "") and fname in frames:
                    holder, T = frames[fname]
                where = _body_of(model, holder) if holder != "ground" else (0, np.eye(4))
                if where is None:
                    geo.notes.append(f"{label}: its body is not in the model")
                    continue
                scale = _floats(gel.findtext("scale_factors"), 3, [1, 1, 1])
                try:
                    if gel.tag == "Mesh":
                        fn = (gel.findtext("mesh_file") or "").strip()
                        path = _find_file(fn, base, dirs)
                        if path is None:
                            raise ValueError(f"mesh file {fn!r} not found beside the model or in its Geometry folder")
                        v, f = _read_mesh_file(path)
                        kind = "mesh"
                    elif gel.tag == "Brick":
                        v, f = _primitive("box", 2 * np.asarray(_floats(gel.findtext("half_lengths"), 3)))
                        kind = "box"
                    elif gel.tag == "Sphere":
                        v, f = _primitive("sphere", [float(gel.findtext("radius"))])
                        kind = "sphere"
                    elif gel.tag == "Ellipsoid":
                        v, f = _primitive("ellipsoid", _floats(gel.findtext("radii"), 3))
                        kind = "ellipsoid"
                    elif gel.tag == "Cylinder":
                        # OpenSim's cylinder is along y
                        v, f = _primitive("cylinder", [float(gel.findtext("radius")),
                                                       2 * float(gel.findtext("half_height"))])
                        v = v @ _rx(-np.pi / 2).T
                        kind = "cylinder"
                    else:
                        raise ValueError(f"<{gel.tag}> is not drawn")
                except Exception as e:       # noqa: BLE001 - a file's defect: note it, draw the rest
                    geo.notes.append(f"{label}: {e}")
                    continue
                color = BODY_COLOR
                app = gel.find("Appearance")
                if app is not None and app.findtext("color"):
                    color = tuple(int(round(255 * x)) for x in _floats(app.findtext("color"), 3))
                opacity = float(app.findtext("opacity") or 1.0) if app is not None else 1.0
                body, Tb = where
                geo.visuals.append(Visual(body, kind, _place(v, Tb @ T, scale), f, color, opacity or 1.0, label))
    return geo


def visual_geometry(model, source):
    """The visual geometry of ``model``'s bodies in the model file ``source`` (a path to a URDF,
    MJCF ``.xml`` or OpenSim ``.osim`` file, or such a file's text): ``(visuals, notes)``, a list
    of ``Visual`` and a list of strings saying what was not drawn and why. Other sources (JSON
    files, ``None``) have no geometry: ``([], [])``."""
    if source is None:
        return [], []
    source = os.fspath(source)
    text = source.lstrip().startswith("<")
    low = source.lower()
    if text:
        head = source[:2000]
        kind = "urdf" if "<robot" in head else "mjcf" if "<mujoco" in head else "osim" if "<OpenSim" in head else None
    else:
        kind = {".urdf": "urdf", ".xml": "mjcf", ".osim": "osim"}.get(os.path.splitext(low)[1])
    if kind is None:
        return [], []
    geo = {"urdf": _urdf_visuals, "mjcf": _mjcf_visuals, "osim": _osim_visuals}[kind](model, source)
    return geo.visuals, geo.notes


# ---------------------------------------------------------------------------- the viewer
def _free_port(host):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host if host not in ("", "0.0.0.0") else "127.0.0.1", 0))
        return s.getsockname()[1]


def _as_trajectory(traj):
    """(t (T,), q (T, [B,] nq)) of a Trajectory, a trajectory file (.npz) or an array of q rows."""
    from .sim.trajectory import Trajectory
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
    trajectory; ``close()`` stops the server. In a notebook the object displays the page."""

    def __init__(self, model, traj=None, source=None, host="127.0.0.1", port=8080, sample=0,
                 geometry=True, fps=30.0, q=None):
        _require_viser()
        import viser
        from .calls.public import forward_kinematics
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
        sc.set_up_direction("+z")
        sc.add_grid("/grid", width=1.2 * extent, height=1.2 * extent, cell_size=extent / 10,
                    section_size=extent / 2, position=(center[0], center[1], min(lo[2], 0.0)))
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
        self._stick = sc.add_line_segments("/stick", np.zeros((max(m.nbodies, 1), 2, 3)), STICK_COLOR,
                                           thickness=extent / 80)
        cam = self.server.initial_camera
        cam.look_at = tuple(center)
        cam.position = tuple(center + extent * np.array([0.85, -1.05, 0.5]))
        cam.up = (0.0, 0.0, 1.0)

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
        parent = np.asarray(self.model.parent)
        with self.server.atomic():
            for b, fr in enumerate(self._frames):
                fr.wxyz = _wxyz(R[b])
                fr.position = p[b]
            if self.model.nbodies:
                kids = np.arange(1, self.model.nbodies + 1)
                self._stick.points = np.stack([p[parent[kids]], p[kids]], axis=1)
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
    """Show a model in 3-D in the browser, with Viser (``pip install "ejce_nb[view]"``).

    ``model`` is an ``ej.Model``, or a shipped model name or model file (``.json``, ``.urdf``,
    ``.xml``, ``.osim``), which is loaded and is then also the ``source`` of the geometry.
    ``traj`` is an ``ej.Trajectory`` (a batch: ``sample`` picks the trajectory shown first), a
    ``.npz`` file written by ``Trajectory.save``, or q rows ``(T, nq)``: the viewer then has a time
    slider and a play button; without it, a slider per coordinate, starting at ``q`` (default
    ``model.neutral()``). ``source`` is the model file
    whose visual geometry is drawn (URDF ``<visual>``, MJCF geoms, OpenSim ``attached_geometry``);
    bodies are always drawn as their frames and a stick figure. The server listens on ``host``
    and ``port`` (the next free port if taken; ``port=0``: any); ``block=True`` serves until
    Ctrl-C. Returns a ``Viewer`` (``viewer.url``; in a notebook it displays the page)."""
    from .model.model import Model
    if not isinstance(model, Model):
        path = os.fspath(model)
        from .io import zoo
        if source is None:
            source = path if os.path.isfile(path) else zoo.shipped_path(path)
        model = zoo.load(path)
    if source is not None and not os.fspath(source).lstrip().startswith("<"):
        if not os.path.isfile(os.fspath(source)):
            from .io import zoo
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


# ---------------------------------------------------------------------------- screenshots
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--enable-unsafe-swiftshader", "--disable-quic",
                  "--no-first-run", "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--hide-scrollbars", "--mute-audio")


def find_chromium():
    """The path of a Chromium (or Chrome) executable: ``$EJCE_NB_CHROMIUM``, ``chromium``,
    ``chromium-browser``, ``google-chrome``; None when there is none."""
    import shutil
    for name in (os.environ.get("EJCE_NB_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def screenshot(url, path, size=(1000, 620), wait_for=(), timeout=120.0, settle=1.5, chromium=None):
    """Save a PNG of the page at ``url`` as headless Chromium draws it (WebGL in software), at
    ``size`` (width, height) pixels: once the page's text holds every string of ``wait_for`` and
    ``settle`` seconds more have passed. The browser's notice about software WebGL is removed
    first. Talks to Chromium over the DevTools protocol (needs ``websockets``, a dependency of
    viser); returns ``path``."""
    import base64
    import json
    import shutil
    import subprocess
    import tempfile
    import urllib.request
    from websockets.sync.client import connect
    exe = chromium or find_chromium()
    if exe is None:
        raise RuntimeError("screenshot needs Chromium (Debian: apt-get install chromium), or EJCE_NB_CHROMIUM=PATH")
    profile = tempfile.mkdtemp(prefix="ejce_nb_chromium_")
    port = _free_port("127.0.0.1")
    proc = subprocess.Popen([exe, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", f"--remote-debugging-port={port}",
                             f"--window-size={int(size[0])},{int(size[1])}", url],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + timeout
    try:
        ws_url = None
        while ws_url is None:
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError(f"Chromium did not open {url} (exit status {proc.poll()})")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=2) as r:
                    pages = [t for t in json.load(r) if t.get("type") == "page"]
                ws_url = pages[0]["webSocketDebuggerUrl"] if pages else None
            except OSError:
                pass
            if ws_url is None:
                time.sleep(0.2)
        with connect(ws_url, max_size=None, proxy=None) as ws:
            ids = iter(range(1, 1 << 30))

            def call(method, **params):
                k = next(ids)
                ws.send(json.dumps({"id": k, "method": method, "params": params}))
                while True:
                    msg = json.loads(ws.recv(timeout=max(1.0, deadline - time.monotonic())))
                    if msg.get("id") == k:
                        if "error" in msg:
                            raise RuntimeError(f"Chromium: {method}: {msg['error']}")
                        return msg.get("result", {})

            call("Emulation.setDeviceMetricsOverride", width=int(size[0]), height=int(size[1]), deviceScaleFactor=1,
                 mobile=False)

            def text():
                r = call("Runtime.evaluate", expression="document.body ? document.body.innerText : ''",
                         returnByValue=True)
                return r.get("result", {}).get("value", "") or ""

            while not all(w in text() for w in wait_for) or "canvas" not in str(
                    call("Runtime.evaluate", expression="document.querySelector('canvas') ? 'canvas' : ''",
                         returnByValue=True)):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the page at {url} did not show {list(wait_for)} within {timeout} s")
                time.sleep(0.25)
            time.sleep(settle)
            call("Runtime.evaluate", expression=(
                "for (const e of document.querySelectorAll('[class*=\"Notification-root\"]'))"
                " { if (e.innerText.includes('WebGL')) e.remove(); }"))
            time.sleep(0.3)
            png = call("Page.captureScreenshot", format="png")["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(png))
        return path
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(profile, ignore_errors=True)


# ---------------------------------------------------------------------------- command line
def add_parser(subparsers, parents=()):
    """Add the ``view`` command to the ``ejce-nb`` parser's subparsers; returns its parser."""
    p = subparsers.add_parser("view", parents=list(parents), help="show a model (and a trajectory) in 3-D in the "
                              "browser (Viser)",
                              description="Serve a 3-D view of a model in the browser: its bodies' frames, a stick "
                              "figure and the file's visual geometry; a time slider and a play button over a "
                              "trajectory, or a slider per coordinate. Open the printed address; over SSH, forward "
                              "the port (ssh -L PORT:localhost:PORT host). Ctrl-C stops it.")
    p.add_argument("model", help="shipped model name, .json, .urdf, .xml (MJCF) or .osim file")
    p.add_argument("--traj", metavar="FILE.npz", help="a trajectory written by ejce-nb simulate --out FILE.npz "
                   "(Trajectory.save)")
    p.add_argument("--sample", type=int, default=0, help="the trajectory of a batch shown first (default 0)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1; 0.0.0.0 for all)")
    p.add_argument("--port", type=int, default=8080, help="port (default 8080; the next free one if taken)")
    p.add_argument("--no-geometry", action="store_true", help="frames and stick figure only")
    return p


def view_command(args, block=True):
    """Run ``ejce-nb view`` with the parsed ``args``: serve until Ctrl-C and return the exit
    status 0; with ``block=False``, return the running ``Viewer`` instead."""
    from .cli import load_model
    from .io import zoo
    _require_viser()
    model = load_model(args)
    name = args.model
    source = name if os.path.isfile(name) else zoo.shipped_path(name)
    v = view(model, args.traj, source=source if os.path.isfile(source) else None, host=args.host,
             port=args.port, sample=args.sample, geometry=not args.no_geometry, block=False)
    print(f"ejce-nb view: {model.nbodies} bodies, {len(v.visuals)} visual geometries; open {v.url} "
          "(Ctrl-C stops)", flush=True)
    if not block:
        return v
    v.wait()
    return 0


def cli_view(argv=None):
    """``python -m ejce_nb.view MODEL [--traj FILE] ...``: the ``ejce-nb view`` command alone."""
    import argparse
    import sys
    parser = argparse.ArgumentParser(prog="ejce-nb")
    sub = parser.add_subparsers(dest="cmd", required=True)
    opts = argparse.ArgumentParser(add_help=False)
    opts.add_argument("--joints", action="append", metavar="FILE.py")
    opts.add_argument("--floating-base", default=None, metavar="PARAM")
    add_parser(sub, parents=[opts])
    args = parser.parse_args(["view"] + list(sys.argv[1:] if argv is None else argv))
    try:
        return view_command(args)
    except (ValueError, OSError, ImportError) as e:
        print(f"ejce-nb: error: {e}", file=sys.stderr)
        return 2



class _CallableModule(type(os)):
    """``ejce_nb.view`` is both this module and the function ``view``: importing the module sets
    the package's attribute ``view`` to it, and it must stay callable as ``ej.view(model)``."""

    def __call__(self, model, traj=None, **options):
        return view(model, traj, **options)


import sys as _sys  # noqa: E402
_sys.modules[__name__].__class__ = _CallableModule


if __name__ == "__main__":
    _sys.exit(cli_view())
