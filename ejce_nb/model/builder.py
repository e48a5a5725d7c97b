"""ModelBuilder: validated construction of a Model, one body (with its joint) at a time.

Bodies are numbered in the order they are added; a parent must already exist, so every model is
parents-before-children by construction, in any such order (not only depth-first).
"""
import numpy as np

from ..errors import ModelError
from ..core.joints import specs as _specs
from ..core.joints import fn as _fn
from ..core.joints.fn import check_json_numbers
from .model import Model, spatial_inertia
from ..core.transform import Transform, check_rotation, check_vector


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
        # what a loader left out of the file it read (``Model.notes``)
        self.notes = []

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
                 inertia_as_written=False, damping=None, stiffness=None, spring_ref=None, armature=None,
                 coordinate_names=None, q_default=None):
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
        no stiffness.  The dynamics functions (rnea, aba, ...) leave them out.

        ``armature``: rotor inertia of each of the joint's velocity variables (one number for all
        or one per variable, >= 0), added to the mass matrix's diagonal, M += diag(armature), in
        every algorithm (MuJoCo's ``armature``; a motor's rotor inertia times its gear ratio
        squared).  Limits, passive terms and armature of a coupler's dependent coordinate are
        dropped (it has no velocity variable of its own).

        ``coordinate_names``: one name per coordinate of the joint (default: the joint's name,
        with ``[k]`` when it has several); ``q_default``: the joint's default coordinates
        (``model.neutral()``; default the joint's neutral ones).  Both count every coordinate of
        the joint, a coupler's dependent ones included."""
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
        if mim is not None and any(x is not None for x in (damping, stiffness, spring_ref, armature)):
            raise ModelError(f"{who}: damping, stiffness, spring_ref and armature need a velocity variable of the "
                             "joint's "
                             "own; a mimic joint has none (give them to the joint it follows)")
        passive = (_passive(damping, joint, "damping", who, True), _passive(stiffness, joint, "stiffness", who, True),
                   _passive(spring_ref, joint, "spring_ref", who, False),
                   _passive(armature, joint, "armature", who, True))
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
            passive = (np.zeros(0),) * 4
        lims = (_limits(q_lower, nq, -np.inf, f"{who}: q_lower"),
                _limits(q_upper, nq, np.inf, f"{who}: q_upper"),
                _limits(v_limit, nv, np.inf, f"{who}: v_limit"),
                _limits(effort_limit, nv, np.inf, f"{who}: effort_limit"))
        if np.any(lims[0] > lims[1]):
            raise ModelError(f"{who}: q_lower {lims[0].tolist()} exceeds q_upper {lims[1].tolist()}")
        cn = None
        if coordinate_names is not None:
            cn = [coordinate_names] if isinstance(coordinate_names, str) else list(coordinate_names)
            if len(cn) != joint.nq or not all(isinstance(x, str) and x for x in cn):
                raise ModelError(f"{who}: coordinate_names must be {joint.nq} non-empty strings, got {coordinate_names!r}")
        qdef = None
        if q_default is not None:
            try:
                qdef = np.array(q_default, dtype=float).reshape(-1)
            except (TypeError, ValueError):
                qdef = None
            if qdef is None or qdef.shape != (joint.nq,) or not np.all(np.isfinite(qdef)):
                raise ModelError(f"{who}: q_default must be {joint.nq} finite numbers, got {q_default!r}")
        self._bodies.append(dict(name=name, parent=p, joint=joint, jname=jname, P=P, C=Cp, mass=m,
                                 com=c, inertia=I, lims=lims, mimic=mim, passive=passive, cnames=cn, qdef=qdef))
        idx = len(self._bodies)
        self._names[name] = idx
        self._joint_names[jname] = idx
        return idx

    def add_coupler(self, dependent, independent, function, scale=1.0):
        """Make a coordinate a function of others: ``q_dependent = scale * function(q_i0, q_i1, ...)``
        (``function`` an ``ej.fn`` function whose coordinate k is ``independent[k]``).  The
        dependent coordinate leaves the model's q and v and every algorithm gives the exact
        reduced dynamics (``ej.couplers``).  A coordinate is named by its joint (name or index;
        a one-coordinate joint), ``(joint, k)`` (coordinate k of the joint) or a name of
        ``coordinate_names``; ``independent`` is one coordinate or a list.  Joints may be added
        after the coupler; ``build()`` checks it (no chains, no cycles, no coordinate coupled
        twice)."""
        if not isinstance(independent, list):
            independent = list(independent) if (isinstance(independent, tuple) and independent
                                                 and isinstance(independent[0], (tuple, list))) else [independent]
        if not isinstance(function, _fn.Function):
            raise ModelError(f"coupler of {dependent!r}: function must be an ej.fn function, got {function!r}")
        try:
            scale = float(scale)
        except (TypeError, ValueError):
            raise ModelError(f"coupler of {dependent!r}: scale must be a number, got {scale!r}") from None
        self._couplers = getattr(self, "_couplers", [])
        self._couplers.append((dependent, independent, function, scale))

    def add_loop(self, name, body_a, body_b, joint=None, placement_a=None, placement_b=None):
        """Close a kinematic loop: frame A (``placement_a`` in ``body_a``) and frame B
        (``placement_b`` in ``body_b``) are held so that the pose of B in A is a pose of ``joint``
        (any joint spec; default ``Fixed``).  A revolute closure removes five relative freedoms,
        a spherical one three, ``Fixed`` six, a ``Custom`` joint 6 - nv.  Bodies are names or
        indices (``"world"`` / 0 allowed); the loop is named ``name``."""
        if not isinstance(name, str) or not name:
            raise ModelError(f"loop name must be a non-empty string, got {name!r}")
        self._loops = getattr(self, "_loops", [])
        who = f"loop {name!r}"
        if any(L[0] == name for L in self._loops):
            raise ModelError(f"{who}: duplicate loop name")
        from .loops import check_loop_joint
        a = self._resolve_parent(body_a, f"{who}: body_a")
        b = self._resolve_parent(body_b, f"{who}: body_b")
        if a == b:
            raise ModelError(f"{who}: body_a and body_b are the same body {self._bodies[a - 1]['name'] if a else 'world'!r}")
        joint = check_loop_joint(joint, who)
        self._loops.append((name, a, b, joint, self._placement(placement_a, f"{who}: placement_a"),
                            self._placement(placement_b, f"{who}: placement_b")))
        return len(self._loops) - 1

    def _coordinate(self, ref, who):
        """(joint index, coordinate in the joint) of a coordinate reference (see add_coupler)."""
        if isinstance(ref, (tuple, list)) and len(ref) == 2 and not isinstance(ref[1], bool) \
                and isinstance(ref[1], (int, np.integer)):
            j = self._joint_ref(ref[0], who)
            k = int(ref[1])
            nq = self._bodies[j - 1]["joint"].nq
            if not 0 <= k < nq:
                raise ModelError(f"{who}: joint {self._bodies[j - 1]['jname']!r} has no coordinate {k} (nq = {nq})")
            return j, k
        if isinstance(ref, str) and ref not in self._joint_names:
            for j, b in enumerate(self._bodies, start=1):
                if b["cnames"] is not None and ref in b["cnames"]:
                    return j, b["cnames"].index(ref)
            raise ModelError(f"{who}: no joint or coordinate named {ref!r}")
        j = self._joint_ref(ref, who)
        if self._bodies[j - 1]["joint"].nq != 1:
            raise ModelError(f"{who}: joint {self._bodies[j - 1]['jname']!r} has {self._bodies[j - 1]['joint'].nq} "
                             "coordinates; name one as (joint, k)")
        return j, 0

    def _joint_ref(self, ref, who):
        if isinstance(ref, str):
            if ref not in self._joint_names:
                raise ModelError(f"{who}: no joint named {ref!r}")
            return self._joint_names[ref]
        if isinstance(ref, (int, np.integer)) and not isinstance(ref, bool) and 1 <= ref <= len(self._bodies):
            return int(ref)
        raise ModelError(f"{who}: expected a joint name or index (1..{len(self._bodies)}), got {ref!r}")

    def _resolved_couplers(self):
        from .couplers import Coupler
        out = []
        for dep, ind, f, scale in getattr(self, "_couplers", []):
            who = f"coupler of {dep!r}"
            out.append(Coupler(self._coordinate(dep, who), [self._coordinate(x, who) for x in ind], f, scale))
        return out

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
                     lims=(np.zeros(0),) * 4, mimic=None, passive=(np.zeros(0),) * 4, cnames=None, qdef=None)
        rows = [world] + bs
        mimic = [None if b["mimic"] is None else self._resolve_mimic(b) for b in rows]
        couplers = self._resolved_couplers()
        dep = {c.dependent for c in couplers} | {(j, 0) for j, m in enumerate(mimic) if m is not None}
        # limits, velocity limits and passive forces are given per joint coordinate; a coupler's
        # dependent coordinate has none of its own
        cut = []
        for j, b in enumerate(rows):
            n = b["joint"].nq if b["mimic"] is None else 0
            keep = np.array([(j, k) not in dep for k in range(n)], dtype=bool)
            keepv = keep if b["joint"].nq == b["joint"].nv else np.ones(len(b["lims"][2]), dtype=bool)
            cut.append((keep, keepv))
        names = None
        if any(b["cnames"] is not None for b in rows):
            names = []
            for b in rows[1:]:
                s = b["joint"]
                names += b["cnames"] if b["cnames"] is not None else (
                    [b["jname"]] if s.nq == 1 else [f"{b['jname']}[{k}]" for k in range(s.nq)])
        qdef = None
        if any(b["qdef"] is not None for b in rows):
            qdef = np.concatenate([b["qdef"] if b["qdef"] is not None else b["joint"].neutral() for b in rows])
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
            q_lower=np.concatenate([b["lims"][0][k] for b, (k, _) in zip(rows, cut)]),
            q_upper=np.concatenate([b["lims"][1][k] for b, (k, _) in zip(rows, cut)]),
            v_limit=np.concatenate([b["lims"][2][k] for b, (_, k) in zip(rows, cut)]),
            effort_limit=np.concatenate([b["lims"][3][k] for b, (_, k) in zip(rows, cut)]),
            joint_mimic=mimic,
            dof_damping=np.concatenate([b["passive"][0][k] for b, (_, k) in zip(rows, cut)]),
            dof_stiffness=np.concatenate([b["passive"][1][k] for b, (_, k) in zip(rows, cut)]),
            dof_springref=np.concatenate([b["passive"][2][k] for b, (_, k) in zip(rows, cut)]),
            dof_armature=np.concatenate([b["passive"][3][k] for b, (_, k) in zip(rows, cut)]),
            couplers=couplers, coordinate_names=names, q_default=qdef,
            notes=tuple(self.notes), loops=self._built_loops(),
        )

    def _built_loops(self):
        from .loops import Loop
        return [Loop(*L) for L in getattr(self, "_loops", [])]


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
                     ("stiffness", "dynamics.stiffness"), ("spring_ref", "dynamics.spring_ref"),
                     ("armature", "dynamics.armature"))

_BODY_FIELDS = {"name", "parent", "joint_name", "joint", "placement", "child_placement", "mass", "com",
                "inertia", "inertia_as_written", "limits", "mimic", "dynamics", "coordinate_names", "q_default"}
_DYNAMICS_FIELDS = {"damping", "stiffness", "spring_ref", "armature"}
_LIMIT_FIELDS = {"q_lower", "q_upper", "v_limit", "effort_limit"}
_TOP_FIELDS = {"format", "version", "gravity", "bodies", "description", "couplers", "loops"}


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
                             "'armature', "
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
                       stiffness=dyn.get("stiffness"), spring_ref=dyn.get("spring_ref"), armature=dyn.get("armature"),
                       coordinate_names=body.get("coordinate_names"),
                       q_default=check_json_numbers(body["q_default"], f"{where}.q_default")
                       if "q_default" in body else None)
        except ModelError as e:
            raise ModelError(_field_path(where, body["name"], e)) from None
    # mimic sources may come later in the file: check them now, while the path is known
    for i, body in enumerate(b._bodies):
        if body["mimic"] is not None:
            try:
                b._resolve_mimic(body)
            except ModelError as e:
                raise ModelError(f"{source}: bodies[{i}].mimic: {e}") from None
    couplers = d.get("couplers", [])
    if not isinstance(couplers, list):
        raise ModelError(f"{source}: couplers: expected a list of coupler objects")
    for i, c in enumerate(couplers):
        where = f"{source}: couplers[{i}]"
        if not isinstance(c, dict) or set(c) - {"dependent", "independent", "function", "scale"} \
                or not {"dependent", "independent", "function"} <= set(c):
            raise ModelError(f"{where}: expected an object with 'dependent', 'independent', 'function' "
                             f"(and optional 'scale'), got {c!r}")
        def ref(x, w):
            if isinstance(x, list) and len(x) == 2:
                return tuple(x)
            if isinstance(x, str):
                return x
            raise ModelError(f"{w}: expected a coordinate name or [joint name, coordinate index], got {x!r}")
        ind = c["independent"]
        if not isinstance(ind, list) or not ind:
            raise ModelError(f"{where}.independent: expected a non-empty list of coordinates")
        scale = c.get("scale", 1.0)
        check_json_numbers(scale, f"{where}.scale", scalar=True)
        try:
            b.add_coupler(ref(c["dependent"], f"{where}.dependent"),
                          [ref(x, f"{where}.independent[{k}]") for k, x in enumerate(ind)],
                          _fn.from_dict(c["function"], f"{where}.function"), scale)
            b._resolved_couplers()[-1]
        except ModelError as e:
            raise ModelError(f"{where}: {e}" if not str(e).startswith(where) else str(e)) from None
    loops = d.get("loops", [])
    if not isinstance(loops, list):
        raise ModelError(f"{source}: loops: expected a list of loop objects")
    from .loops import LOOP_FIELDS
    for i, L in enumerate(loops):
        where = f"{source}: loops[{i}]"
        if not isinstance(L, dict) or set(L) - LOOP_FIELDS or not {"name", "body_a", "body_b"} <= set(L):
            raise ModelError(f"{where}: expected an object with 'name', 'body_a', 'body_b' (and optional 'joint', "
                             f"'placement_a', 'placement_b'), got {L!r}")
        joint = _specs.from_dict(L["joint"], f"{where}.joint") if "joint" in L else None
        Pa = _transform_from(L.get("placement_a", {}), f"{where}.placement_a")
        Pb = _transform_from(L.get("placement_b", {}), f"{where}.placement_b")
        try:
            b.add_loop(L["name"], L["body_a"], L["body_b"], joint=joint, placement_a=Pa, placement_b=Pb)
        except ModelError as e:
            raise ModelError(f"{where}: {e}") from None
    return b
