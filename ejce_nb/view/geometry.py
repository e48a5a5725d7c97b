"""The bodies' visual geometry: ``Visual``, the primitives and mesh files it is made of, and the
small rotation helpers the readers (``readers``) place them with.  Needs trimesh (the ``view``
extra) for primitives and mesh files other than OpenSim's ASCII ``.vtp``."""
import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

import numpy as np

BODY_COLOR = (205, 120, 60)           # geometry without a colour of its own


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
