"""ModelBuilder: validated construction of a Model, one body (with its joint) at a time.

Bodies are numbered in the order they are added; a parent must already exist, so every model is
parents-before-children by construction, in any such order (not only depth-first).
"""
import numpy as np

from .errors import ModelError
from .joints import specs as _specs
from .model import Model, spatial_inertia
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
    with np.errstate(all="ignore"):
        I = 0.5 * (I + I.T)
    if not np.all(np.isfinite(I)):
        raise ModelError(f"{who}: inertia entries are too large (they overflow)")
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
    try:
        arr = np.array([default if v is None else v for v in np.atleast_1d(values).tolist()], dtype=float)
    except (TypeError, ValueError):
        arr = None
    if arr is None or arr.shape != (n,) or np.any(np.isnan(arr)):
        raise ModelError(f"{what} must be {n} numbers (None for no limit), got {values!r}")
    return arr


def _mimic_spec(mimic, joint, who):
    """Normalise a mimic description to (source joint name or index, multiplier, offset)."""
    if isinstance(mimic, (str, int, np.integer)) and not isinstance(mimic, bool):
        src, k, off = mimic, 1.0, 0.0
    elif isinstance(mimic, dict):
        unknown = set(mimic) - {"joint", "multiplier", "offset"}
        if unknown or "joint" not in mimic:
            raise ModelError(f"{who}: mimic must have 'joint' (and optional 'multiplier', 'offset'), "
                             f"got {mimic!r}")
        src, k, off = mimic["joint"], mimic.get("multiplier", 1.0), mimic.get("offset", 0.0)
    elif isinstance(mimic, (tuple, list)) and 1 <= len(mimic) <= 3:
        src, k, off = (list(mimic) + [1.0, 0.0][len(mimic) - 1:])[:3]
    else:
        raise ModelError(f"{who}: mimic must be a joint name, (joint, multiplier, offset) or a dict, got {mimic!r}")
    if not (isinstance(src, str) or (isinstance(src, (int, np.integer)) and not isinstance(src, bool))):
        raise ModelError(f"{who}: mimic joint must be a joint name or index, got {src!r}")
    vals = []
    for what, x in (("multiplier", k), ("offset", off)):
        try:
            x = float(x)
        except (TypeError, ValueError):
            raise ModelError(f"{who}: mimic {what} must be a number, got {x!r}") from None
        if not np.isfinite(x):
            raise ModelError(f"{who}: mimic {what} must be finite, got {x!r}")
        vals.append(x)
    if joint.nq != 1 or joint.nv != 1:
        raise ModelError(f"{who}: only a one-coordinate joint can mimic another, not {joint!r}")
    return (src, vals[0], vals[1])


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
                 q_lower=None, q_upper=None, v_limit=None, effort_limit=None, mimic=None):
        """Add a body attached to ``parent`` by ``joint``; returns the new body's index.

        ``mimic``: make the (one-coordinate) joint follow another joint's coordinate,
        ``q = multiplier * q_source + offset``, with no coordinate of its own: a joint name or
        index, ``(joint, multiplier, offset)`` or ``{"joint": ..., "multiplier": ..., "offset": ...}``.
        The source may be added later; it must be a one-coordinate joint that mimics nothing."""
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
        with np.errstate(all="ignore"):
            finite = np.all(np.isfinite(spatial_inertia(m, c, I)))
        if not finite:
            raise ModelError(f"{who}: mass {m:g} and com {c.tolist()} overflow the spatial inertia")
        mim = None if mimic is None else _mimic_spec(mimic, joint, who)
        if mim is not None and any(x is not None for x in (q_lower, q_upper, v_limit, effort_limit)):
            raise ModelError(f"{who}: a mimic joint has no coordinate of its own, so no limits")
        nq, nv = (0, 0) if mim is not None else (joint.nq, joint.nv)
        lims = (_limits(q_lower, nq, -np.inf, f"{who}: q_lower"),
                _limits(q_upper, nq, np.inf, f"{who}: q_upper"),
                _limits(v_limit, nv, np.inf, f"{who}: v_limit"),
                _limits(effort_limit, nv, np.inf, f"{who}: effort_limit"))
        if np.any(lims[0] > lims[1]):
            raise ModelError(f"{who}: q_lower {lims[0].tolist()} exceeds q_upper {lims[1].tolist()}")
        self._bodies.append(dict(name=name, parent=p, joint=joint, jname=jname, P=P, C=Cp, mass=m,
                                 com=c, inertia=I, lims=lims, mimic=mim))
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

    def _resolve_mimic(self, b):
        """(source joint index, multiplier, offset) of a mimic body, checked against the source."""
        src, k, off = b["mimic"]
        who = f"body {b['name']!r}: mimic"
        if isinstance(src, str):
            if src not in self._joint_names:
                raise ModelError(f"{who}: no joint named {src!r}")
            j = self._joint_names[src]
        else:
            if not 1 <= src <= len(self._bodies):
                raise ModelError(f"{who}: joint index {src} does not exist (joints 1..{len(self._bodies)})")
            j = int(src)
        s = self._bodies[j - 1]
        if s is b:
            raise ModelError(f"{who}: a joint cannot mimic itself")
        if s["mimic"] is not None:
            raise ModelError(f"{who}: joint {s['jname']!r} is itself a mimic joint; mimic its source "
                             "with the multipliers and offsets composed")
        if s["joint"].nq != 1 or s["joint"].nv != 1:
            raise ModelError(f"{who}: joint {s['jname']!r} ({s['joint']!r}) has no single coordinate to follow")
        return (j, k, off)

    def build(self):
        """Validate and return the immutable ``ej.Model``."""
        bs = self._bodies
        world = dict(name="world", parent=-1, joint=_specs.Fixed(), jname="world", P=Transform(),
                     C=Transform(), mass=0.0, com=np.zeros(3), inertia=np.zeros((3, 3)),
                     lims=(np.zeros(0),) * 4, mimic=None)
        rows = [world] + bs
        mimic = [None if b["mimic"] is None else self._resolve_mimic(b) for b in rows]
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
            joint_mimic=mimic,
        )


def _transform_from(d, where):
    if d is None:
        return Transform()
    if not isinstance(d, dict):
        raise ModelError(f"{where}: expected an object with 'rotation' and 'translation', got {d!r}")
    unknown = set(d) - {"rotation", "translation"}
    if unknown:
        raise ModelError(f"{where}: unknown fields {sorted(unknown)} (expected 'rotation', 'translation')")
    R = None if d.get("rotation") is None else check_rotation(d["rotation"], f"{where}.rotation")
    t = None if d.get("translation") is None else check_vector(d["translation"], f"{where}.translation")
    return Transform(R, t)


# add_body's messages read "body 'name': <field> ..."; these prefixes tell which field of the
# JSON body object is at fault, so that errors can name its path in the file
_FIELD_OF_MESSAGE = (("duplicate body name", "name"), ("body name", "name"), ("unknown parent", "parent"),
                     ("parent", "parent"), ("joint name", "joint_name"), ("duplicate joint name", "joint_name"),
                     ("mass", "mass"), ("inertia", "inertia"), ("com", "com"),
                     ("q_lower", "limits.q_lower"), ("q_upper", "limits.q_upper"), ("v_limit", "limits.v_limit"),
                     ("effort_limit", "limits.effort_limit"), ("a mimic joint", "limits"), ("mimic", "mimic"),
                     ("only a one-coordinate joint", "mimic"))

_BODY_FIELDS = {"name", "parent", "joint_name", "joint", "placement", "child_placement", "mass", "com",
                "inertia", "limits", "mimic"}
_LIMIT_FIELDS = {"q_lower", "q_upper", "v_limit", "effort_limit"}
_TOP_FIELDS = {"format", "version", "gravity", "bodies", "description"}


def _field_path(where, body_name, err):
    """Path in the file of the body field an add_body error is about (``where`` if unknown)."""
    msg = str(err)
    prefix = f"body {body_name!r}: "
    rest = msg[len(prefix):] if msg.startswith(prefix) else msg
    for start, field in _FIELD_OF_MESSAGE:
        if rest.startswith(start):
            return f"{where}.{field}: {msg}"
    return f"{where}: {msg}"


def builder_from_dict(d, source="model"):
    """A ModelBuilder filled from the JSON form; errors name the path in the file
    (``source: bodies[3].joint.axis: ...``)."""
    if not isinstance(d, dict):
        raise ModelError(f"{source}: top level must be an object")
    unknown = set(d) - _TOP_FIELDS
    if unknown:
        raise ModelError(f"{source}: unknown top-level fields {sorted(unknown)} (expected {sorted(_TOP_FIELDS)})")
    if d.get("format", "ejce_nb.model") != "ejce_nb.model":
        raise ModelError(f"{source}: format: expected 'ejce_nb.model', got {d['format']!r}")
    if d.get("version", 1) != 1 or isinstance(d.get("version", 1), bool):
        raise ModelError(f"{source}: version: this ejce_nb reads version 1, got {d['version']!r}")
    if "bodies" not in d or not isinstance(d["bodies"], list):
        raise ModelError(f"{source}: bodies: expected a list of body objects")
    try:
        b = ModelBuilder(gravity=d.get("gravity", (0.0, 0.0, -9.81)))
    except ModelError as e:
        raise ModelError(f"{source}: gravity: {e}") from None
    for i, body in enumerate(d["bodies"]):
        where = f"{source}: bodies[{i}]"
        if not isinstance(body, dict):
            raise ModelError(f"{where}: expected an object, got {body!r}")
        for key in ("name", "joint"):
            if key not in body:
                raise ModelError(f"{where}.{key} is missing")
        unknown = set(body) - _BODY_FIELDS
        if unknown:
            raise ModelError(f"{where}: unknown fields {sorted(unknown)}")
        joint = _specs.from_dict(body["joint"], f"{where}.joint")
        P = _transform_from(body.get("placement"), f"{where}.placement")
        Cp = _transform_from(body.get("child_placement"), f"{where}.child_placement")
        lim = body.get("limits") or {}
        if not isinstance(lim, dict):
            raise ModelError(f"{where}.limits: expected an object, got {lim!r}")
        if set(lim) - _LIMIT_FIELDS:
            raise ModelError(f"{where}.limits: unknown fields {sorted(set(lim) - _LIMIT_FIELDS)} "
                             f"(expected {sorted(_LIMIT_FIELDS)})")
        try:
            b.add_body(body["name"], parent=body.get("parent", "world"), joint=joint, placement=P,
                       child_placement=Cp, mass=body.get("mass", 0.0), com=body.get("com", (0, 0, 0)),
                       inertia=body.get("inertia"), joint_name=body.get("joint_name"),
                       q_lower=lim.get("q_lower"), q_upper=lim.get("q_upper"),
                       v_limit=lim.get("v_limit"), effort_limit=lim.get("effort_limit"),
                       mimic=body.get("mimic"))
        except ModelError as e:
            raise ModelError(_field_path(where, body["name"], e)) from None
    # mimic sources may come later in the file: check them now, while the path is known
    for i, body in enumerate(b._bodies):
        if body["mimic"] is not None:
            try:
                b._resolve_mimic(body)
            except ModelError as e:
                raise ModelError(f"{source}: bodies[{i}].mimic: {e}") from None
    return b
