"""The elements of a URDF file as read (``io.urdf``): numbers and names checked where they
stand, ``origin`` (xyz, then rpy: R = Rz(yaw) Ry(pitch) Rx(roll)), links and their inertials,
joints (axis, limits, mimic, dynamics; a joint's axis a becomes the z axis of its C frame), the
root joint, and the rotor inertias of ``transmission`` elements."""
import os

import numpy as np

from ..core.joints import specs as _specs
from ..core.transform import Transform, rot_axis_angle, rpy_matrix
from ..errors import ModelError
from ..model.inertia import check_inertia, inertia_defect

JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed", "floating", "planar")
_ONE_DOF = ("revolute", "continuous", "prismatic")


def _tag(el, attr=None):
    """How an element (and one of its attributes) is written in the file, for messages."""
    if attr is None:
        return f"<{el.tag}>"
    return f"<{el.tag} {attr}={el.get(attr)!r}>"


def _numbers(el, attr, n, who, default=None):
    """Attribute ``attr`` of ``el`` as n finite floats (``default`` when absent)."""
    text = el.get(attr)
    if text is None:
        if default is None:
            raise ModelError(f"{who}: {_tag(el)} has no {attr!r} attribute")
        return np.array(default, dtype=float)
    try:
        vals = np.array([float(x) for x in text.split()], dtype=float)
    except ValueError:
        raise ModelError(f"{who}: {_tag(el, attr)}: not {'a number' if n == 1 else f'{n} numbers'}") from None
    if vals.shape != (n,):
        raise ModelError(f"{who}: {_tag(el, attr)}: expected {n} numbers, got {len(vals)}")
    if not np.all(np.isfinite(vals)):
        raise ModelError(f"{who}: {_tag(el, attr)}: not finite")
    return vals


def _number(el, attr, who, default=None):
    return float(_numbers(el, attr, 1, who, None if default is None else [default])[0])


def _one(el, tag, who, required=False):
    """The single child ``<tag>`` of ``el`` (None when absent and not required)."""
    found = el.findall(tag)
    if len(found) > 1:
        raise ModelError(f"{who}: more than one <{tag}>")
    if not found:
        if required:
            raise ModelError(f"{who}: missing <{tag}>")
        return None
    return found[0]


def _name(el, who):
    name = el.get("name")
    if name is None or not name.strip():
        raise ModelError(f"{who}: {_tag(el)} without a 'name' attribute")
    return name


def _origin(el, who):
    """Transform of an element's optional ``<origin xyz rpy>`` (identity when absent)."""
    o = _one(el, "origin", who)
    if o is None:
        return Transform()
    xyz = _numbers(o, "xyz", 3, who, default=[0.0, 0.0, 0.0])
    rpy = _numbers(o, "rpy", 3, who, default=[0.0, 0.0, 0.0])
    return Transform(rpy_matrix(*rpy), xyz)


def _z_onto(axis):
    """Smallest rotation taking the z axis onto the unit vector ``axis``."""
    c = float(axis[2])
    if c > 1.0 - 1e-12:
        return np.eye(3)
    if c < -1.0 + 1e-12:
        return np.diag([1.0, -1.0, -1.0])
    k = np.cross([0.0, 0.0, 1.0], axis)
    return rot_axis_angle(k / np.linalg.norm(k), np.arccos(c))


class _Link:
    def __init__(self, el, who):
        self.name = _name(el, who)
        who = f"link {self.name!r}"
        self.mass, self.com, self.inertia = 0.0, np.zeros(3), np.zeros((3, 3))
        self.defect = None          # why the inertia is physically inconsistent, if it is
        inertial = _one(el, "inertial", who)
        if inertial is not None:
            w = f"{who}: <inertial>"
            o = _origin(inertial, w)
            self.mass = _number(_one(inertial, "mass", w, required=True), "value", w)
            ie = _one(inertial, "inertia", w, required=True)
            ixx, ixy, ixz, iyy, iyz, izz = (_number(ie, a, w) for a in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"))
            I = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
            self.com = o.translation
            with np.errstate(all="ignore"):
                I = o.rotation @ I @ o.rotation.T
            self.mass, self.inertia = check_inertia(self.mass, I, w, as_written=True)
            self.defect = inertia_defect(self.inertia)


class _Joint:
    def __init__(self, el, links, who):
        self.name = _name(el, who)
        who = f"joint {self.name!r}"
        self.type = el.get("type")
        if self.type is None:
            raise ModelError(f"{who}: {_tag(el)} has no 'type' attribute")
        if self.type not in JOINT_TYPES:
            raise ModelError(f"{who}: unknown joint type {self.type!r}; known: {', '.join(JOINT_TYPES)}")
        ends = []
        for tag in ("parent", "child"):
            e = _one(el, tag, who, required=True)
            link = e.get("link")
            if link is None:
                raise ModelError(f"{who}: {_tag(e)} has no 'link' attribute")
            if link not in links:
                raise ModelError(f"{who}: {_tag(e, 'link')}: no link of that name")
            ends.append(link)
        self.parent, self.child = ends
        if self.parent == self.child:
            raise ModelError(f"{who}: parent and child are the same link {self.parent!r}")
        self.origin = _origin(el, who)
        self.axis = np.array([1.0, 0.0, 0.0])
        if self.type not in ("fixed", "floating"):
            a = _one(el, "axis", who)
            if a is not None:
                v = _numbers(a, "xyz", 3, who)
                n = float(np.linalg.norm(v))
                if n < 1e-12:
                    raise ModelError(f"{who}: {_tag(a, 'xyz')}: zero axis")
                self.axis = v / n
        # limits: position (revolute/prismatic only), velocity and effort (any moving joint)
        self.lower = self.upper = None
        self.velocity = self.effort = None
        lim = _one(el, "limit", who) if self.type in _ONE_DOF else None
        if lim is not None:
            w = f"{who}: <limit>"
            if self.type != "continuous":
                self.lower = _number(lim, "lower", w, default=0.0)
                self.upper = _number(lim, "upper", w, default=0.0)
                if self.lower > self.upper:
                    raise ModelError(f"{w}: lower {self.lower} exceeds upper {self.upper}")
            for attr in ("velocity", "effort"):
                if lim.get(attr) is not None:
                    x = _number(lim, attr, w)
                    if x < 0:
                        raise ModelError(f"{w}: {_tag(lim, attr)}: must not be negative")
                    setattr(self, attr, x)
        self.damping = 0.0
        dyn = _one(el, "dynamics", who) if self.type in _ONE_DOF else None
        if dyn is not None and dyn.get("damping") is not None:
            self.damping = _number(dyn, "damping", who)
            if self.damping < 0:
                raise ModelError(f"{who}: {_tag(dyn, 'damping')}: must not be negative")
        self.mimic = None
        m = _one(el, "mimic", who)
        if m is not None:
            src = m.get("joint")
            if src is None:
                raise ModelError(f"{who}: <mimic> has no 'joint' attribute")
            self.mimic = (src, _number(m, "multiplier", who, default=1.0), _number(m, "offset", who, default=0.0))

    def spec(self):
        """Joint spec, inboard placement P and outboard placement C."""
        if self.type in ("revolute", "continuous"):
            return _specs.Revolute(self.axis), self.origin, Transform()
        if self.type == "prismatic":
            return _specs.Prismatic(self.axis), self.origin, Transform()
        if self.type == "floating":
            return _specs.Free("quaternion"), self.origin, Transform()
        if self.type == "planar":
            E = Transform(_z_onto(self.axis))
            return _specs.Planar(), self.origin @ E, E
        return _specs.Fixed(), self.origin, Transform()


def _read(path_or_string):
    """(XML text, name of the source for messages)."""
    if isinstance(path_or_string, bytes):
        try:
            return path_or_string.decode("utf-8"), "URDF"
        except UnicodeDecodeError as e:
            raise ModelError(f"URDF: not UTF-8 text: {e}") from None
    if isinstance(path_or_string, str) and path_or_string.lstrip().startswith("<"):
        return path_or_string, "URDF"
    if not isinstance(path_or_string, (str, os.PathLike)):
        raise ModelError(f"load_urdf expects a file path or URDF text, got {type(path_or_string).__name__}")
    source = os.fspath(path_or_string)
    try:
        with open(source, encoding="utf-8") as f:
            return f.read(), source
    except (OSError, UnicodeDecodeError) as e:
        raise ModelError(f"{source}: cannot read URDF file: {e}") from None


def _root_spec(floating_base):
    if floating_base is None:
        return _specs.Fixed()
    if isinstance(floating_base, _specs.JointSpec):
        return floating_base
    if isinstance(floating_base, str):
        try:
            return _specs.Free(floating_base)
        except ModelError as e:
            raise ModelError(f"floating_base: {e}") from None
    raise ModelError(f"floating_base must be None, a rotation parameterisation such as 'quaternion' "
                     f"or 'ZYX', or a joint spec; got {floating_base!r}")


def _local(tag):
    """An element's name without its namespace: ``{http://drake.mit.edu}rotor_inertia`` and
    ``drake:rotor_inertia`` are both ``rotor_inertia``."""
    return tag.rsplit("}", 1)[-1].rsplit(":", 1)[-1] if isinstance(tag, str) else ""


def _rotor_inertias(robot, joints):
    """{joint name: rotor_inertia * gear_ratio^2} from the transmissions' Drake extensions."""
    out = {}
    for k, tr in enumerate(robot.findall("transmission")):
        who = f"transmission {tr.get('name') or f'#{k}'!r}"
        found = {}
        for act in tr.findall("actuator"):
            for el in act:
                name = _local(el.tag)
                if name in ("rotor_inertia", "gear_ratio"):
                    found[name] = _number(el, "value", f"{who}: <actuator>")
        if "rotor_inertia" not in found:
            continue
        if found["rotor_inertia"] < 0:
            raise ModelError(f"{who}: drake:rotor_inertia {found['rotor_inertia']} must not be negative")
        for jel in tr.findall("joint"):
            jn = jel.get("name")
            if jn not in joints:
                raise ModelError(f"{who}: <joint name={jn!r}>: no joint of that name")
            out[jn] = found["rotor_inertia"] * found.get("gear_ratio", 1.0) ** 2
    return out
