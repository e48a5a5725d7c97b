"""ModelBuilder: validated construction of a Model, one body (with its joint) at a time.

Bodies are numbered in the order they are added; a parent must already exist, so every model is
parents-before-children by construction, in any such order (not only depth-first).
"""
import numpy as np

from .errors import ModelError
from .joints import specs as _specs
from .model import Model
from .transform import Transform, check_rotation, check_vector


def check_inertia(mass, inertia, who):
    """Mass >= 0; inertia symmetric positive semi-definite and obeying the triangle inequality."""
    try:
        m = float(mass)
    except (TypeError, ValueError):
        raise ModelError(f"{who}: mass must be a number, got {mass!r}") from None
    if not np.isfinite(m) or m < 0:
        raise ModelError(f"{who}: mass must be finite and non-negative, got {mass!r}")
    try:
        I = np.asarray(inertia, dtype=float)
    except (TypeError, ValueError):
        raise ModelError(f"{who}: inertia must be a 3x3 matrix, got {inertia!r}") from None
    if I.shape == (3,):
        I = np.diag(I)
    if I.shape != (3, 3) or not np.all(np.isfinite(I)):
        raise ModelError(f"{who}: inertia must be a finite 3x3 matrix (or 3 principal moments), got shape {I.shape}")
    scale = max(np.abs(I).max(), 1e-300)
    if np.abs(I - I.T).max() > 1e-9 * scale:
        raise ModelError(f"{who}: inertia is not symmetric: {I.tolist()}")
    I = 0.5 * (I + I.T)
    ev = np.linalg.eigvalsh(I)
    tol = 1e-9 * scale
    if ev[0] < -tol:
        raise ModelError(f"{who}: inertia is not positive semi-definite (eigenvalues {ev.tolist()})")
    if ev[0] + ev[1] < ev[2] - tol:
        raise ModelError(f"{who}: inertia violates the triangle inequality: principal moments "
                         f"{ev.tolist()} (I1 + I2 >= I3 is required)")
    return m, I


def _limits(values, n, default, what):
    if values is None:
        return np.full(n, default)
    arr = np.array([default if v is None else v for v in np.atleast_1d(values).tolist()], dtype=float)
    if arr.shape != (n,) or np.any(np.isnan(arr)):
        raise ModelError(f"{what} must be {n} numbers (None for no limit), got {values!r}")
    return arr


class ModelBuilder:
    """Collects bodies and joints; ``build()`` returns the immutable ``ej.Model``."""

    def __init__(self, gravity=(0.0, 0.0, -9.81)):
        self.gravity = check_vector(gravity, "gravity")
        self._bodies = []
        self._names = {"world": 0}
        self._joint_names = {}

    def _resolve_parent(self, parent, who):
        if isinstance(parent, (int, np.integer)) and not isinstance(parent, bool):
            if 0 <= parent <= len(self._bodies):
                return int(parent)
            raise ModelError(f"{who}: parent index {parent} does not exist (bodies 0..{len(self._bodies)}; "
                             "a parent must be added before its children)")
        if isinstance(parent, str):
            if parent in self._names:
                return self._names[parent]
            raise ModelError(f"{who}: unknown parent {parent!r} (a parent must be added before its children)")
        raise ModelError(f"{who}: parent must be a body name or index, got {parent!r}")

    def add_body(self, name, parent="world", joint=None, placement=None, child_placement=None,
                 mass=0.0, com=(0.0, 0.0, 0.0), inertia=None, joint_name=None,
                 q_lower=None, q_upper=None, v_limit=None, effort_limit=None):
        """Add a body attached to ``parent`` by ``joint``; returns the new body's index."""
        if not isinstance(name, str) or not name:
            raise ModelError(f"body name must be a non-empty string, got {name!r}")
        who = f"body {name!r}"
        if name in self._names:
            raise ModelError(f"{who}: duplicate body name")
        p = self._resolve_parent(parent, who)
        if joint is None:
            joint = _specs.Fixed()
        if not isinstance(joint, _specs.JointSpec):
            raise ModelError(f"{who}: joint must be an ej.joints spec, got {joint!r}")
        jname = f"{name}_joint" if joint_name is None else joint_name
        if not isinstance(jname, str) or not jname:
            raise ModelError(f"{who}: joint name must be a non-empty string, got {jname!r}")
        if jname in self._joint_names or jname == "world":
            raise ModelError(f"{who}: duplicate joint name {jname!r}")
        P = self._placement(placement, f"{who}: placement")
        Cp = self._placement(child_placement, f"{who}: child_placement")
        m, I = check_inertia(mass, np.zeros((3, 3)) if inertia is None else inertia, who)
        try:
            c = check_vector(com, "com")
        except ModelError as e:
            raise ModelError(f"{who}: {e}") from None
        lims = (_limits(q_lower, joint.nq, -np.inf, f"{who}: q_lower"),
                _limits(q_upper, joint.nq, np.inf, f"{who}: q_upper"),
                _limits(v_limit, joint.nv, np.inf, f"{who}: v_limit"),
                _limits(effort_limit, joint.nv, np.inf, f"{who}: effort_limit"))
        if np.any(lims[0] > lims[1]):
            raise ModelError(f"{who}: q_lower {lims[0].tolist()} exceeds q_upper {lims[1].tolist()}")
        self._bodies.append(dict(name=name, parent=p, joint=joint, jname=jname, P=P, C=Cp, mass=m,
                                 com=c, inertia=I, lims=lims))
        idx = len(self._bodies)
        self._names[name] = idx
        self._joint_names[jname] = idx
        return idx

    @staticmethod
    def _placement(T, who):
        if T is None:
            return Transform()
        if isinstance(T, Transform):
            return T
        if isinstance(T, dict):
            try:
                return Transform(check_rotation(T["rotation"], "rotation") if T.get("rotation") is not None else None,
                                 check_vector(T["translation"], "translation") if T.get("translation") is not None else None)
            except ModelError as e:
                raise ModelError(f"{who}: {e}") from None
        raise ModelError(f"{who}: expected an ej.Transform, got {T!r}")

    def build(self):
        """Validate and return the immutable ``ej.Model``."""
        bs = self._bodies
        world = dict(name="world", parent=-1, joint=_specs.Fixed(), jname="world", P=Transform(),
                     C=Transform(), mass=0.0, com=np.zeros(3), inertia=np.zeros((3, 3)),
                     lims=(np.zeros(0),) * 4)
        rows = [world] + bs
        return Model(
            gravity=self.gravity,
            body_names=[b["name"] for b in rows],
            joint_names=[b["jname"] for b in rows],
            joint_specs=[b["joint"] for b in rows],
            parent=[b["parent"] for b in rows],
            joint_P=[b["P"] for b in rows],
            joint_C=[b["C"] for b in rows],
            body_mass=[b["mass"] for b in rows],
            body_com=[b["com"] for b in rows],
            body_inertia=[b["inertia"] for b in rows],
            q_lower=np.concatenate([b["lims"][0] for b in rows]),
            q_upper=np.concatenate([b["lims"][1] for b in rows]),
            v_limit=np.concatenate([b["lims"][2] for b in rows]),
            effort_limit=np.concatenate([b["lims"][3] for b in rows]),
        )


def _transform_from(d, where):
    if d is None:
        return Transform()
    if not isinstance(d, dict):
        raise ModelError(f"{where}: expected an object with 'rotation' and 'translation', got {d!r}")
    try:
        R = None if d.get("rotation") is None else check_rotation(d["rotation"], f"{where}.rotation")
        t = None if d.get("translation") is None else check_vector(d["translation"], f"{where}.translation")
    except ModelError as e:
        raise ModelError(str(e)) from None
    return Transform(R, t)


def builder_from_dict(d, source="model"):
    """A ModelBuilder filled from the JSON form; errors name the path in the file."""
    if not isinstance(d, dict):
        raise ModelError(f"{source}: top level must be an object")
    if "bodies" not in d or not isinstance(d["bodies"], list):
        raise ModelError(f"{source}: 'bodies' must be a list")
    try:
        b = ModelBuilder(gravity=d.get("gravity", (0.0, 0.0, -9.81)))
    except ModelError as e:
        raise ModelError(f"{source}: gravity: {e}") from None
    for i, body in enumerate(d["bodies"]):
        where = f"bodies[{i}]"
        if not isinstance(body, dict):
            raise ModelError(f"{source}: {where}: expected an object")
        for key in ("name", "joint"):
            if key not in body:
                raise ModelError(f"{source}: {where}.{key} is missing")
        unknown = set(body) - {"name", "parent", "joint_name", "joint", "placement", "child_placement",
                               "mass", "com", "inertia", "limits"}
        if unknown:
            raise ModelError(f"{source}: {where}: unknown fields {sorted(unknown)}")
        joint = _specs.from_dict(body["joint"], f"{source}: {where}.joint")
        P = _transform_from(body.get("placement"), f"{source}: {where}.placement")
        Cp = _transform_from(body.get("child_placement"), f"{source}: {where}.child_placement")
        lim = body.get("limits") or {}
        if not isinstance(lim, dict):
            raise ModelError(f"{source}: {where}.limits: expected an object")
        try:
            b.add_body(body["name"], parent=body.get("parent", "world"), joint=joint, placement=P,
                       child_placement=Cp, mass=body.get("mass", 0.0), com=body.get("com", (0, 0, 0)),
                       inertia=body.get("inertia"), joint_name=body.get("joint_name"),
                       q_lower=lim.get("q_lower"), q_upper=lim.get("q_upper"),
                       v_limit=lim.get("v_limit"), effort_limit=lim.get("effort_limit"))
        except ModelError as e:
            raise ModelError(f"{source}: {where}: {e}") from None
    return b
