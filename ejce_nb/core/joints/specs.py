"""Joint specs: what a user writes.  Each spec knows its type code, its coordinate counts, its
parameter block for the kernels, its neutral configuration and its JSON form.  The kinematics of
every kind live in one pose function (``joints.pose``); nothing here differentiates anything.
"""
import numpy as np

from ...errors import ModelError
from . import codes as C
from . import fn as _fn
from .document import ByDict, document_kind

EULER_SEQUENCES = ("XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX", "XYX", "XZX", "YXY", "YZY", "ZXZ", "ZYZ")
ROTATION_PARAMS = {"quaternion": C.ROT_QUATERNION, "rotvec": C.ROT_ROTVEC,
                   "rodrigues": C.ROT_GIBBS, "mrp": C.ROT_MRP}


def unit_axis(axis, what="axis"):
    try:
        a = np.asarray(axis, dtype=float)
    except (TypeError, ValueError):
        raise ModelError(f"{what} must be 3 numbers, got {axis!r}") from None
    if a.shape != (3,) or not np.all(np.isfinite(a)):
        raise ModelError(f"{what} must be 3 finite numbers, got {axis!r}")
    with np.errstate(over="ignore"):
        n = float(np.linalg.norm(a))
    if n == 0.0:
        raise ModelError(f"{what} is the zero vector; a unit vector is required")
    if abs(n - 1.0) > 1e-6:
        raise ModelError(f"{what} must be a unit vector, got {a.tolist()} of norm {n:.6g}")
    # an axis already unit to rounding is kept bit for bit, so that writing a model and reading
    # it back (JSON, URDF) gives identical tables; renormalising would move its last bits.
    # A read-only copy: a spec (and the model holding it) must not alias or expose a mutable array
    out = a.copy() if abs(n - 1.0) <= 4e-16 else a / n
    out.flags.writeable = False
    return out


class JointSpec(ByDict):
    code = None
    nq = 0
    nv = 0

    def params(self):
        """The joint's block of the model's flat parameter table."""
        return []

    def neutral(self):
        return np.zeros(self.nq)

    def is_rheonomic(self):
        return False

    def coord_names(self):
        return [f"q{k}" for k in range(self.nq)]

    def screw_motions(self):
        """The joint as a product of elementary motions, applied in order, each in the frame the
        previous ones moved to: a list of (kind, axis, coord, scale, fn_offset) with the amount
        ``scale * q[coord]`` (coord >= 0) or the coordinate function whose terms start at
        ``fn_offset`` in the joint's parameter block; None when the joint is not such a product."""
        return None

    def to_dict(self):
        return {"type": C.NAMES[self.code]}


class Fixed(JointSpec):
    """No relative motion: C stays at P (nq = nv = 0)."""
    code = C.FIXED

    def screw_motions(self):
        return []


_EX, _EY, _EZ = np.eye(3)


def _unit(kind, axis, coord, scale=1.0):
    return (kind, np.asarray(axis, dtype=float), coord, float(scale), -1)


class _Axial(JointSpec):
    def __init__(self, axis=(0.0, 0.0, 1.0)):
        self.axis = unit_axis(axis, f"{type(self).__name__} axis")

    def params(self):
        return list(self.axis)

    def to_dict(self):
        return {"type": C.NAMES[self.code], "axis": self.axis.tolist()}


class Revolute(_Axial):
    """Rotation by q about a fixed unit ``axis`` of P (= C): nq = nv = 1."""
    code, nq, nv = C.REVOLUTE, 1, 1

    def screw_motions(self):
        return [_unit(C.MOTION_ROT, self.axis, 0)]


class Prismatic(_Axial):
    """Translation by q along a fixed unit ``axis`` of P: nq = nv = 1."""
    code, nq, nv = C.PRISMATIC, 1, 1

    def screw_motions(self):
        return [_unit(C.MOTION_TRANS, self.axis, 0)]


class Cylindrical(_Axial):
    """Rotation and translation about and along one unit ``axis``: q = [angle, slide]."""
    code, nq, nv = C.CYLINDRICAL, 2, 2

    def screw_motions(self):
        return [_unit(C.MOTION_ROT, self.axis, 0), _unit(C.MOTION_TRANS, self.axis, 1)]


class Helical(_Axial):
    """Screw motion: rotation by q about the unit ``axis`` with translation ``pitch * q`` along
    it (translation = pitch x angle): nq = nv = 1."""
    code, nq, nv = C.HELICAL, 1, 1

    def __init__(self, axis=(0.0, 0.0, 1.0), pitch=0.0):
        super().__init__(axis)
        p = np.asarray(pitch, dtype=float)
        if p.shape != () or not np.isfinite(p):
            raise ModelError(f"Helical pitch must be a finite number, got {pitch!r}")
        self.pitch = float(p)

    def params(self):
        return [*self.axis, self.pitch]

    def screw_motions(self):
        return [_unit(C.MOTION_ROT, self.axis, 0), _unit(C.MOTION_TRANS, self.axis, 0, self.pitch)]

    def to_dict(self):
        return {"type": "Helical", "axis": self.axis.tolist(), "pitch": self.pitch}


class Universal(JointSpec):
    """Rotation q0 about ``axis1``, then q1 about ``axis2`` of the once-rotated frame (the
    rotated axis2); the axes must not be parallel."""
    code, nq, nv = C.UNIVERSAL, 2, 2

    def __init__(self, axis1=(1.0, 0.0, 0.0), axis2=(0.0, 1.0, 0.0)):
        self.axis1 = unit_axis(axis1, "Universal axis1")
        self.axis2 = unit_axis(axis2, "Universal axis2")
        if np.linalg.norm(np.cross(self.axis1, self.axis2)) < 1e-9:
            raise ModelError("Universal axis1 and axis2 are parallel; the joint has one degree of freedom")

    def params(self):
        return [*self.axis1, *self.axis2]

    def screw_motions(self):
        return [_unit(C.MOTION_ROT, self.axis1, 0), _unit(C.MOTION_ROT, self.axis2, 1)]

    def to_dict(self):
        return {"type": "Universal", "axis1": self.axis1.tolist(), "axis2": self.axis2.tolist()}


class Planar(JointSpec):
    """q = [x, y, angle about z] in the xy plane of P."""
    code, nq, nv = C.PLANAR, 3, 3

    def screw_motions(self):
        return [_unit(C.MOTION_TRANS, _EX, 0), _unit(C.MOTION_TRANS, _EY, 1), _unit(C.MOTION_ROT, _EZ, 2)]


class Translation(JointSpec):
    """q = [x, y, z] in P axes."""
    code, nq, nv = C.TRANSLATION, 3, 3

    def screw_motions(self):
        return [_unit(C.MOTION_TRANS, e, k) for k, e in enumerate((_EX, _EY, _EZ))]


def _rotation_block(param, owner):
    """Parameter block of a rotation parameterisation: [kind, i0, i1, i2, intrinsic]."""
    if not isinstance(param, str):
        raise ModelError(f"{owner} param must be a string, got {param!r}")
    if param in ROTATION_PARAMS:
        return [ROTATION_PARAMS[param], 0, 0, 0, 0]
    if param.upper() in EULER_SEQUENCES and (param.isupper() or param.islower()):
        idx = ["xyz".index(ch) for ch in param.lower()]
        return [C.ROT_EULER, *idx, 1 if param.isupper() else 0]
    raise ModelError(
        f"{owner} param {param!r} unknown: an Euler sequence such as 'ZYX' (intrinsic) or 'zyx' "
        f"(extrinsic) of {', '.join(EULER_SEQUENCES)}, or one of {', '.join(ROTATION_PARAMS)}")


class Spherical(JointSpec):
    """Any rotation about the common origin of P and C, parameterised by ``param``:

    * an Euler sequence written as in ``scipy.spatial.transform.Rotation.from_euler``: three
      letters of ``xyz``, upper case for intrinsic rotations (about the moving axes, applied in
      the written order: ``"ZYX"``, ``"ZXZ"``, ...; R = R_a(q0) R_b(q1) R_c(q2)), lower case for
      extrinsic ones (about the fixed axes of P; R = R_c(q2) R_b(q1) R_a(q0)): all 12 sequences
      of each, 24 conventions (``EULER_SEQUENCES``).  q holds the three angles in the written
      order and v their rates;
    * ``"quaternion"`` (the default): q = (w, x, y, z), scalar first, nq = 4, nv = 3, the velocity
      the relative angular velocity in C axes;
    * ``"rotvec"`` (rotation vector), ``"rodrigues"`` (Gibbs vector) or ``"mrp"`` (modified
      Rodrigues parameters): nq = nv = 3, velocities the parameter rates.

    An unknown ``param`` is an ``ej.ModelError``."""
    code = C.SPHERICAL

    def __init__(self, param="quaternion"):
        self.block = _rotation_block(param, type(self).__name__)
        self.param = param
        quat = self.block[0] == C.ROT_QUATERNION
        self.nrq = 4 if quat else 3
        self.nq = self.nrq + (3 if self.code == C.FREE else 0)
        self.nv = 6 if self.code == C.FREE else 3

    @property
    def quaternion(self):
        return self.block[0] == C.ROT_QUATERNION

    def params(self):
        return [float(v) for v in self.block]

    def screw_motions(self):
        """Euler angles are three rotations about coordinate axes (intrinsic: in the written
        order about the moving axes; extrinsic: the same about the fixed axes, which is the
        reversed product); a free joint translates along the axes of P first."""
        if self.block[0] != C.ROT_EULER:
            return None
        off = 3 if self.code == C.FREE else 0
        axes = np.eye(3)
        rots = [_unit(C.MOTION_ROT, axes[self.block[1 + k]], off + k) for k in range(3)]
        if not self.block[4]:
            rots = rots[::-1]
        trans = [_unit(C.MOTION_TRANS, axes[k], k) for k in range(off)]
        return trans + rots

    def neutral(self):
        q = np.zeros(self.nq)
        if self.quaternion:
            q[self.nq - 4] = 1.0
        return q

    def to_dict(self):
        return {"type": C.NAMES[self.code], "param": self.param}


class Free(Spherical):
    """Six degrees of freedom: the translation ``[x, y, z]`` of C's origin in P axes followed by
    any ``Spherical`` parameterisation ``param`` of the rotation: q = [r (P axes); rotation
    parameters], v = [r rates (P axes); rotation velocity (the angle / parameter rates, or for
    ``"quaternion"`` the relative angular velocity in C axes)]; nq = 7, nv = 6 with a
    quaternion, else nq = nv = 6."""
    code = C.FREE


class Ellipsoid(JointSpec):
    """Rotation by body-fixed X-Y-Z angles q (R = Rx(q0) Ry(q1) Rz(q2)) with the origin of C on
    the ellipsoid of semi-axes ``radii`` (along the axes of P, centred at its origin) where C's z
    axis is the normal: r = diag(radii) R e_z (OpenSim's ``EllipsoidJoint``, Simbody's
    ``MobilizedBody::Ellipsoid``; at q = 0, r = (0, 0, radii[2])).  Velocities are the angle
    rates."""
    code, nq, nv = C.ELLIPSOID, 3, 3

    def __init__(self, radii):
        try:
            r = np.asarray(radii, dtype=float)
        except (TypeError, ValueError):
            raise ModelError(f"Ellipsoid radii must be 3 numbers, got {radii!r}") from None
        if r.shape != (3,) or not np.all(np.isfinite(r)) or np.any(r < 0):
            raise ModelError(f"Ellipsoid radii must be 3 finite non-negative numbers, got {radii!r}")
        self.radii = r.copy()
        self.radii.flags.writeable = False

    def params(self):
        # the axis indices 0, 1, 2 as runtime values (``pose``)
        return [*self.radii.tolist(), 0.0]

    def to_dict(self):
        return {"type": "Ellipsoid", "radii": self.radii.tolist()}


class Rot:
    """Elementary rotation of a ``Composite`` joint about a unit ``axis`` by the amount ``f``, a
    coordinate function from ``ej.fn`` (a number is a constant amount)."""
    kind = C.MOTION_ROT

    def __init__(self, axis, f):
        self.axis = unit_axis(axis, f"{type(self).__name__} axis")
        if isinstance(f, (int, float)) and not isinstance(f, bool):
            f = _fn.TimePoly([float(f)])
        if not isinstance(f, _fn.Function):
            raise ModelError(f"{type(self).__name__} amount must be an ej.fn function, got {f!r}")
        self.f = f

    def to_dict(self):
        return {"type": type(self).__name__, "axis": self.axis.tolist(), "f": self.f.to_dict()}

    def __repr__(self):
        return f"{type(self).__name__}({self.axis.tolist()}, {self.f!r})"


class Trans(Rot):
    """Elementary translation of a ``Composite`` joint along a unit ``axis`` by the amount ``f``
    (an ``ej.fn`` function or a number)."""
    kind = C.MOTION_TRANS


class Composite(JointSpec):
    """A product of elementary motions ``motions`` applied in the written order, each
    ``ej.joints.Rot(axis, f)`` or ``ej.joints.Trans(axis, f)`` about or along its axis in the
    frame the previous motions have moved to (R = R_1 R_2 ...), its amount ``f`` a function of
    the joint's ``nq`` coordinates and of time from ``ej.fn``.  The velocities are the coordinate
    rates (nv = nq, 0 <= nq <= 6; nq may be 0).  Splines extend linearly beyond their end knots.

    Composite joints cover coupled and biomechanical joints (knee translations as splines of the
    flexion angle; OpenSim's ``CustomJoint``) and rheonomic joints (an axis driven by
    ``ej.fn.Harmonic`` or ``TimePoly``, with nq = 0)."""
    code = C.COMPOSITE

    def __init__(self, motions, nq):
        if isinstance(nq, bool) or not isinstance(nq, (int, np.integer)) or nq < 0:
            raise ModelError(f"Composite nq must be a non-negative integer, got {nq!r}")
        if nq > C.MAX_NV:
            raise ModelError(f"Composite nq = {nq} exceeds the limit of {C.MAX_NV} coordinates per joint")
        motions = list(motions)
        if not motions:
            raise ModelError("Composite needs at least one motion")
        for k, m in enumerate(motions):
            if not isinstance(m, Rot):
                raise ModelError(f"Composite motion {k} must be ej.joints.Rot or Trans, got {m!r}")
            if m.f.max_coord() >= nq:
                raise ModelError(f"Composite motion {k} reads coordinate {m.f.max_coord()} but nq = {nq}")
            for t in _linear_terms(m.f):
                if t.n_coeffs() > nq:
                    raise ModelError(f"Composite motion {k}: Linear has {t.n_coeffs()} coeffs but nq = {nq}")
        self.motions = motions
        self.nq = self.nv = int(nq)

    def params(self):
        out = [len(self.motions)]
        for m in self.motions:
            terms = m.f.terms()
            out += [m.kind, *m.axis, len(terms)]
            for t in terms:
                out += t
        return [float(v) for v in out]

    def screw_motions(self):
        res = []
        off = 1
        for m in self.motions:
            terms = m.f.terms()
            f = m.f
            unit = isinstance(f, _fn.Linear) and f.offset == 0.0 and np.count_nonzero(f.coeffs) == 1
            if unit:
                k = int(np.flatnonzero(f.coeffs)[0])
                res.append((m.kind, m.axis, k, float(f.coeffs[k]), -1))
            else:
                res.append((m.kind, m.axis, -1, 1.0, off + 4))
            off += 5 + sum(len(t) for t in terms)
        return res

    def is_rheonomic(self):
        return any(m.f.depends_on_time() for m in self.motions)

    def to_dict(self):
        return {"type": "Composite", "nq": self.nq, "motions": [m.to_dict() for m in self.motions]}


def _linear_terms(f):
    parts = f.parts if isinstance(f, _fn.Sum) else [f]
    return [p for p in parts if isinstance(p, _fn.Linear)]


_SPECS = {c.__name__: c for c in (Fixed, Revolute, Prismatic, Helical, Cylindrical, Universal,
                                   Planar, Translation, Spherical, Free, Composite, Ellipsoid)}


def field_path(where, kind, fields, err):
    """``where`` extended by the field an error of a spec's constructor names: the constructors
    word their errors "<Kind> <field> ...", e.g. "Revolute axis must be a unit vector"."""
    words = str(err).split()
    if len(words) > 2 and words[0] == kind and words[1] in fields and words[2] != "and":
        return f"{where}.{words[1]}"
    return where


# readers of the joint kinds defined in other modules, by their "type" (``custom`` adds "Custom")
READERS = {}


def from_dict(d, where="joint"):
    """Rebuild a joint spec from ``to_dict`` output; errors name ``where`` and the field."""
    kind = document_kind(d, where)
    if isinstance(kind, str) and kind in READERS:
        return READERS[kind](d, where)
    if not isinstance(kind, str) or kind not in _SPECS:
        raise ModelError(f"{where}.type: unknown joint type {kind!r}; known: {sorted(_SPECS) + sorted(READERS)}")
    args = {k: v for k, v in d.items() if k != "type"}
    for field in ("axis", "axis1", "axis2", "pitch", "radii"):
        if field in args:
            _fn.check_json_numbers(args[field], f"{where}.{field}", scalar=field == "pitch")
    try:
        if kind == "Composite":
            if set(args) - {"nq", "motions"}:
                raise ModelError(f"{where}: unknown fields {sorted(set(args) - {'nq', 'motions'})} for Composite "
                                 "(expected 'nq', 'motions')")
            motions = args.get("motions")
            if not isinstance(motions, list):
                raise ModelError(f"{where}.motions: expected a list")
            ms = []
            for i, m in enumerate(motions):
                w = f"{where}.motions[{i}]"
                if not isinstance(m, dict) or m.get("type") not in ("Rot", "Trans"):
                    raise ModelError(f"{w}.type: expected 'Rot' or 'Trans', got {m!r}")
                cls = Rot if m["type"] == "Rot" else Trans
                unknown = set(m) - {"type", "axis", "f"}
                if unknown:
                    raise ModelError(f"{w}: unknown fields {sorted(unknown)} (expected 'type', 'axis', 'f')")
                if "axis" not in m or "f" not in m:
                    raise ModelError(f"{w}.{'axis' if 'axis' not in m else 'f'} is missing")
                _fn.check_json_numbers(m["axis"], f"{w}.axis")
                try:
                    ms.append(cls(m.get("axis"), _fn.from_dict(m.get("f"), f"{w}.f")))
                except ModelError as e:
                    if str(e).startswith(w):
                        raise
                    raise ModelError(f"{field_path(w, m['type'], ('axis',), e)}: {e}") from None
            try:
                return Composite(ms, args.get("nq"))
            except ModelError as e:
                words = str(e).split()
                if words[:2] == ["Composite", "motion"] and words[2].isdigit():
                    raise ModelError(f"{where}.motions[{words[2]}]: {e}") from None
                raise
        return _SPECS[kind](**args)
    except ModelError as e:
        if str(e).startswith(where):
            raise
        raise ModelError(f"{field_path(where, kind, args, e)}: {e}") from None
    except TypeError as e:
        raise ModelError(f"{where}: bad fields for {kind}: {e}") from None
