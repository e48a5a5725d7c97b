"""ModelBuilder: validated construction of a Model, one body (with its joint) at a time.

Bodies are numbered in the order they are added; a parent must already exist, so every model is
parents-before-children by construction, in any such order (not only depth-first).
"""
import numpy as np

from .errors import ModelError
from .joints import specs as _specs
from .joints.fn import check_json_numbers
from .model import Model, spatial_inertia
from .transform import Transform, check_rotation, check_vector


# A principal moment may fall short of PSD or of the triangle inequality by this fraction of the
# largest one: the rounding of a tensor turned into other axes, not a different body.
INERTIA_RTOL = 1e-9


def inertia_defect(inertia):
    """Why a symmetric 3x3 rotational inertia is not physically consistent, or None when it is.

    Consistent means positive semi-definite and obeying the triangle inequality of its principal
    moments (I1 + I2 >= I3 with I1 <= I2 <= I3), each to ``INERTIA_RTOL`` times the largest
    principal moment in magnitude (so the check means the same for a watch part and a truck)."""
    ev = np.linalg.eigvalsh(inertia)
    tol = INERTIA_RTOL * float(np.abs(ev).max())
    if ev[0] < -tol:
        return f"inertia is not positive semi-definite (eigenvalues {ev.tolist()})"
    if ev[0] + ev[1] < ev[2] - tol:
        return (f"inertia violates the triangle inequality: principal moments {ev.tolist()} "
                "(I1 + I2 >= I3 is required)")
    return None


def balance_inertia(inertia):
    """A consistent inertia made from ``inertia`` by raising principal moments only: in its
    principal axes, negative moments become 0, then if I1 + I2 < I3 (I1 <= I2 <= I3) the two
    smaller moments are each raised by half the deficit, (I3 - I1 - I2) / 2, so that I1 + I2 = I3.
    The principal axes and the largest moment are kept; raising never lowers the inertia about
    any axis."""
    ev, Q = np.linalg.eigh(inertia)
    ev = np.maximum(ev, 0.0)
    deficit = ev[2] - ev[0] - ev[1]
    if deficit > 0.0:
        ev[:2] += 0.5 * deficit
    out = (Q * ev) @ Q.T
    return 0.5 * (out + out.T)


def check_inertia(mass, inertia, who, as_written=False):
    """Mass >= 0; inertia a finite symmetric 3x3 matrix (or 3 principal moments), positive
    semi-definite and obeying the triangle inequality (see ``inertia_defect``).  ``as_written``
    skips the last two, for a tensor known to be inconsistent and kept on purpose."""
    if isinstance(mass, (str, bytes, bool, np.bool_)):
        raise ModelError(f"{who}: mass must be a number, got {type(mass).__name__} {mass!r}")
    try:
        m = float(mass)
    except (TypeError, ValueError, OverflowError):
        raise ModelError(f"{who}: mass must be a number, got {mass!r}") from None
    if not np.isfinite(m) or m < 0:
        raise ModelError(f"{who}: mass must be finite and non-negative, got {mass!r}")
    try:
        I = np.asarray(inertia, dtype=float)
    except (TypeError, ValueError, OverflowError):
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
    if not as_written:
        defect = inertia_defect(I)
        if defect is not None:
            raise ModelError(f"{who}: {defect}")
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


def _passive(values, joint, what, who, nonnegative):
    """A joint's per-velocity-variable damping, stiffness or spring reference: None (zeros), one
    number for every variable, or one per variable; finite (and >= 0 for damping and stiffness)."""
    nv = joint.nv
    if values is None:
        return np.zeros(nv)
    try:
        arr = np.array(values, dtype=float)
    except (TypeError, ValueError):
        arr = None
    if arr is not None and arr.ndim == 0:
        arr = np.full(nv, float(arr))
    if arr is None or arr.shape != (nv,) or not np.all(np.isfinite(arr)):
        raise ModelError(f"{who}: {what} must be a finite number or {nv} finite numbers (one per velocity "
                         f"variable of {joint!r}), got {values!r}")
    if nonnegative and np.any(arr < 0):
        raise ModelError(f"{who}: {what} must not be negative, got {arr.tolist()}")
    if nv == 0 and values is not None and np.ndim(values) == 0 and float(values) != 0.0:
        raise ModelError(f"{who}: {what} given for {joint!r}, which has no velocity variable")
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
                 q_lower=None, q_upper=None, v_limit=None, effort_limit=None, mimic=None,
                 inertia_as_written=False, damping=None, stiffness=None, spring_ref=None):
        """Add a body attached to ``parent`` by ``joint``; returns the new body's index.

        ``inertia`` must be physically consistent (symmetric, positive semi-definite, triangle
        inequality; see ``inertia_defect``).  ``inertia_as_written=True`` accepts one that is not,
        as given: the URDF loader keeps a file's inconsistent inertias so (with an
        ``InertiaWarning``), and the JSON form marks such a body ``"inertia_as_written": true``.
        Its dynamics are then those of the tensor as written (a negative moment may make the
        mass matrix indefinite).  Non-finite, misshapen or asymmetric inertias are refused
        regardless.

        ``mimic``: make the (one-coordinate) joint follow another joint's coordinate,
        ``q = multiplier * q_source + offset``, with no coordinate of its own: a joint name or
        index, ``(joint, multiplier, offset)`` or ``{"joint": ..., "multiplier": ..., "offset": ...}``.
        The source may be added later; it must be a one-coordinate joint that mimics nothing.

        ``damping``, ``stiffness``, ``spring_ref``: passive joint forces for ``ej.simulate``,
        tau = -damping qd - stiffness (q - spring_ref), one number for all of the joint's velocity
        variables or one per variable (damping and stiffness >= 0).  A spring acts on a coordinate
        whose rate is its velocity variable, so a unit quaternion's rotation takes damping but
        no stiffness.  The dynamics functions (rnea, aba, ...) leave them out."""
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
        m, I = check_inertia(mass, np.zeros((3, 3)) if inertia is None else inertia, who,
                             as_written=bool(inertia_as_written))
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
        if mim is not None and any(x is not None for x in (damping, stiffness, spring_ref)):
            raise ModelError(f"{who}: damping, stiffness and spring_ref need a velocity variable of the joint's "
                             "own; a mimic joint has none (give them to the joint it follows)")
        passive = (_passive(damping, joint, "damping", who, True), _passive(stiffness, joint, "stiffness", who, True),
                   _passive(spring_ref, joint, "spring_ref", who, False))
        if getattr(joint, "quaternion", False):
            rot = slice(joint.nv - 3, joint.nv)
            for what, arr in (("stiffness", passive[1]), ("spring_ref", passive[2])):
                if np.any(arr[rot] != 0.0):
                    raise ModelError(f"{who}: {what} {arr.tolist()}: the rotation of {joint!r} is a unit "
                                     f"quaternion, whose angular velocity (variables {rot.start}..{rot.stop - 1}) "
                                     "is not the rate of a coordinate, so a spring cannot act on it "
                                     "(use a control law; damping is allowed)")
        nq, nv = (0, 0) if mim is not None else (joint.nq, joint.nv)
        if mim is not None:
            passive = (np.zeros(0),) * 3
        lims = (_limits(q_lower, nq, -np.inf, f"{who}: q_lower"),
                _limits(q_upper, nq, np.inf, f"{who}: q_upper"),
                _limits(v_limit, nv, np.inf, f"{who}: v_limit"),
                _limits(effort_limit, nv, np.inf, f"{who}: effort_limit"))
        if np.any(lims[0] > lims[1]):
            raise ModelError(f"{who}: q_lower {lims[0].tolist()} exceeds q_upper {lims[1].tolist()}")
        self._bodies.append(dict(name=name, parent=p, joint=joint, jname=jname, P=P, C=Cp, mass=m,
                                 com=c, inertia=I, lims=lims, mimic=mim, passive=passive))
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
                     lims=(np.zeros(0),) * 4, mimic=None, passive=(np.zeros(0),) * 3)
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
            dof_damping=np.concatenate([b["passive"][0] for b in rows]),
            dof_stiffness=np.concatenate([b["passive"][1] for b in rows]),
            dof_springref=np.concatenate([b["passive"][2] for b in rows]),
        )


def _transform_from(d, where):
    if not isinstance(d, dict):
        raise ModelError(f"{where}: expected an object with 'rotation' and 'translation', got {d!r}")
    unknown = set(d) - {"rotation", "translation"}
    if unknown:
        raise ModelError(f"{where}: unknown fields {sorted(unknown, key=str)} (expected 'rotation', 'translation')")
    R = t = None
    if "rotation" in d:
        R = check_rotation(check_json_numbers(d["rotation"], f"{where}.rotation"), f"{where}.rotation")
    if "translation" in d:
        t = check_vector(check_json_numbers(d["translation"], f"{where}.translation"), f"{where}.translation")
    return Transform(R, t)


# add_body's messages read "body 'name': <field> ..."; these prefixes tell which field of the
# JSON body object is at fault, so that errors can name its path in the file
_FIELD_OF_MESSAGE = (("duplicate body name", "name"), ("body name", "name"), ("unknown parent", "parent"),
                     ("parent", "parent"), ("joint name", "joint_name"), ("duplicate joint name", "joint_name"),
                     ("mass", "mass"), ("inertia", "inertia"), ("com", "com"),
                     ("q_lower", "limits.q_lower"), ("q_upper", "limits.q_upper"), ("v_limit", "limits.v_limit"),
                     ("effort_limit", "limits.effort_limit"), ("a mimic joint", "limits"), ("mimic", "mimic"),
                     ("only a one-coordinate joint", "mimic"), ("damping", "dynamics.damping"),
                     ("stiffness", "dynamics.stiffness"), ("spring_ref", "dynamics.spring_ref"))

_BODY_FIELDS = {"name", "parent", "joint_name", "joint", "placement", "child_placement", "mass", "com",
                "inertia", "inertia_as_written", "limits", "mimic", "dynamics"}
_DYNAMICS_FIELDS = {"damping", "stiffness", "spring_ref"}
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


def _json_mimic(mimic, where):
    """A body's ``mimic`` field with its numbers checked: a joint name, an object
    ``{"joint", "multiplier", "offset"}`` or a list ``[joint, multiplier, offset]``."""
    if isinstance(mimic, dict):
        for key in ("multiplier", "offset"):
            if key in mimic:
                check_json_numbers(mimic[key], f"{where}.{key}", scalar=True)
    elif isinstance(mimic, list):
        for k, x in enumerate(mimic[1:3], start=1):
            check_json_numbers(x, f"{where}[{k}]", scalar=True)
    elif not isinstance(mimic, (str, int)) or isinstance(mimic, bool):
        raise ModelError(f"{where}: expected a joint name or an object {{\"joint\", \"multiplier\", "
                         f"\"offset\"}}, got {mimic!r}")
    return mimic


def builder_from_dict(d, source="model"):
    """A ModelBuilder filled from the JSON form; errors name the path in the file
    (``source: bodies[3].joint.axis: ...``).

    The document is read strictly: numbers must be JSON numbers (not strings or booleans), a
    field that is present must hold its kind of value (null only where a limit may be absent),
    unknown fields are errors and there must be at least one body."""
    if not isinstance(d, dict):
        raise ModelError(f"{source}: top level must be an object")
    unknown = set(d) - _TOP_FIELDS
    if unknown:
        raise ModelError(f"{source}: unknown top-level fields {sorted(unknown, key=str)} (expected {sorted(_TOP_FIELDS)})")
    if d.get("format", "ejce_nb.model") != "ejce_nb.model":
        raise ModelError(f"{source}: format: expected 'ejce_nb.model', got {d['format']!r}")
    version = d.get("version", 1)
    if type(version) is not int or version != 1:
        raise ModelError(f"{source}: version: this ejce_nb reads version 1, got {version!r}")
    if not isinstance(d.get("description", ""), str):
        raise ModelError(f"{source}: description: expected a string, got {d['description']!r}")
    if "bodies" not in d or not isinstance(d["bodies"], list):
        raise ModelError(f"{source}: bodies: expected a list of body objects")
    gravity = d.get("gravity", (0.0, 0.0, -9.81))
    check_json_numbers(gravity, f"{source}: gravity")
    try:
        b = ModelBuilder(gravity=gravity)
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
            raise ModelError(f"{where}: unknown fields {sorted(unknown, key=str)}")
        for key in ("parent", "joint_name"):
            if key in body and body[key] is None:
                raise ModelError(f"{where}.{key}: expected a name, got null (leave the field out for the default)")
        for key, scalar in (("mass", True), ("com", False), ("inertia", False)):
            if key in body:
                check_json_numbers(body[key], f"{where}.{key}", scalar=scalar)
        as_written = body.get("inertia_as_written", False)
        if not isinstance(as_written, bool):
            raise ModelError(f"{where}.inertia_as_written: expected true or false, got {as_written!r}")
        joint = _specs.from_dict(body["joint"], f"{where}.joint")
        P = _transform_from(body.get("placement", {}), f"{where}.placement")
        Cp = _transform_from(body.get("child_placement", {}), f"{where}.child_placement")
        lim = body.get("limits", {})
        if not isinstance(lim, dict):
            raise ModelError(f"{where}.limits: expected an object, got {lim!r}")
        if set(lim) - _LIMIT_FIELDS:
            raise ModelError(f"{where}.limits: unknown fields {sorted(set(lim) - _LIMIT_FIELDS, key=str)} "
                             f"(expected {sorted(_LIMIT_FIELDS)})")
        for key, values in lim.items():
            if not isinstance(values, list):
                raise ModelError(f"{where}.limits.{key}: expected a list of one number or null per "
                                 f"{'coordinate' if key.startswith('q') else 'velocity'}, got {values!r}")
            for k, x in enumerate(values):
                check_json_numbers(x, f"{where}.limits.{key}[{k}]", scalar=True, nulls=True)
        mimic = _json_mimic(body["mimic"], f"{where}.mimic") if "mimic" in body else None
        dyn = body.get("dynamics", {})
        if not isinstance(dyn, dict):
            raise ModelError(f"{where}.dynamics: expected an object with 'damping', 'stiffness', 'spring_ref', "
                             f"got {dyn!r}")
        if set(dyn) - _DYNAMICS_FIELDS:
            raise ModelError(f"{where}.dynamics: unknown fields {sorted(set(dyn) - _DYNAMICS_FIELDS, key=str)} "
                             f"(expected {sorted(_DYNAMICS_FIELDS)})")
        for key, values in dyn.items():
            if not isinstance(values, list):
                raise ModelError(f"{where}.dynamics.{key}: expected a list of one number per velocity "
                                 f"variable, got {values!r}")
            for k, x in enumerate(values):
                check_json_numbers(x, f"{where}.dynamics.{key}[{k}]", scalar=True)
        try:
            b.add_body(body["name"], parent=body.get("parent", "world"), joint=joint, placement=P,
                       child_placement=Cp, mass=body.get("mass", 0.0), com=body.get("com", (0, 0, 0)),
                       inertia=body.get("inertia"), joint_name=body.get("joint_name"),
                       q_lower=lim.get("q_lower"), q_upper=lim.get("q_upper"),
                       v_limit=lim.get("v_limit"), effort_limit=lim.get("effort_limit"),
                       mimic=mimic, inertia_as_written=as_written, damping=dyn.get("damping"),
                       stiffness=dyn.get("stiffness"), spring_ref=dyn.get("spring_ref"))
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
