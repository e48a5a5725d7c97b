"""OpenSim models (``.osim``, OpenSim 4 format; the 3.3 format, joints inside their child bodies,
read as its OpenSim 4 equivalent) as ``ej.Model``: bodies, joints, coordinates and coordinate
couplers, read with ``xml.etree`` (OpenSim itself is not needed).

Mapping (OpenSim -> ejce_nb):
  * ``Ground`` -> body 0 (the world); each ``Body`` -> a body with OpenSim's ``mass``,
    ``mass_center`` and ``inertia`` (Ixx Iyy Izz Ixy Ixz Iyz about the centre of mass, body
    axes); ``gravity`` -> the model's gravity.
  * A joint's parent and child frames (a ``PhysicalOffsetFrame`` of its ``frames``, or a body)
    -> ``placement`` (P in the parent body) and ``child_placement`` (C in the child body); an
    offset frame's ``orientation`` is a body-fixed X-Y-Z Euler sequence, R = Rx Ry Rz.
  * ``CustomJoint`` -> ``Composite``: its three translation axes (``translation1..3``, along
    axes of P) then its three rotations (``rotation1..3``, each about its axis in the frame the
    previous rotations moved to), each amount a function of the joint's coordinates (OpenSim's
    ``SpatialTransform``); axes need not be orthogonal.  ``PinJoint`` -> ``Revolute`` about z;
    ``SliderJoint`` -> ``Prismatic`` along x; ``UniversalJoint`` -> rotations about x then
    the moved y; ``PlanarJoint`` (rz, tx, ty) -> translations along x, y then a rotation about
    z; ``GimbalJoint``, ``BallJoint`` (rx, ry, rz: body-fixed X-Y-Z) and ``FreeJoint`` (rx, ry,
    rz, tx, ty, tz; translations in P) -> ``Composite``; ``WeldJoint`` -> ``Fixed``.  Each
    joint's coordinates keep OpenSim's order; their velocities are the coordinate rates (for
    ``BallJoint`` and ``FreeJoint``, whose OpenSim speeds are angular velocities, this is the
    one difference: the same mechanism, other velocity variables).  ``EllipsoidJoint`` ->
    ``Ellipsoid`` (velocities the angle rates; OpenSim's are the angular velocity in P).
    A transform axis of several coordinates (``MultivariatePolynomialFunction``) reads them in
    the order the axis lists them.
  * ``Coordinate`` -> a coordinate named as in the file (``model.coordinate_names``), its
    ``default_value`` in ``model.neutral()``, its ``range`` as limits.  ``locked`` coordinates are
    fixed at their default value (``locked="fixed"``; ``"free"`` keeps them as coordinates).
    ``prescribed`` coordinates with a ``prescribed_function`` leave q: the transform axes linear
    in them take that function of time instead (``prescribed="time"``; ``"free"`` keeps them).
  * ``CoordinateCouplerConstraint`` (enforced) -> a coupler (``ModelBuilder.add_coupler``):
    the dependent coordinate is eliminated exactly.
  * Functions: ``opensim_fn``.
  * Named frames (``Model.frame_names``): each joint's ``PhysicalOffsetFrame`` (OpenSim 4
    format) by its OpenSim path ``/jointset/<joint>/<frame>``, and each ``Marker`` by its name
    (``_marker`` appended where a body has it), on the body it is fixed on.
  * Not loaded (a rigid-body model cannot hold them), reported by one ``OpenSimWarning`` and in
    ``model.summary()``: forces (muscles, ligaments, actuators, contact), contact
    geometry, probes, controllers, constraints other than couplers and loop closures.
  * ``PointConstraint`` (enforced) -> a spherical loop closure at its two locations;
    ``WeldConstraint`` -> a Fixed loop closure of its two frames (``ModelBuilder.add_loop``).
"""
import os
import warnings
import xml.etree.ElementTree as ET

import numpy as np

from ..model.builder import ModelBuilder, balance_inertia as _balance, inertia_defect
from ..errors import ModelError
from ..core.joints import fn as _fn
from ..core.joints import specs as J
from ..core.transform import Transform
from .urdf import InertiaWarning
from . import opensim_fn as F


class OpenSimWarning(UserWarning):
    """What an OpenSim file holds that the model leaves out (``left_out``: {kind: count})."""

    def __init__(self, message, left_out=None):
        super().__init__(message)
        self.left_out = dict(left_out or {})


JOINT_KINDS = ("CustomJoint", "WeldJoint", "PinJoint", "SliderJoint", "UniversalJoint", "PlanarJoint",
               "GimbalJoint", "BallJoint", "FreeJoint", "EllipsoidJoint")
X, Y, Z = (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)
# (rotation or translation, axis, coordinate) of each built-in joint kind, in Composite order
_BUILTIN = {"WeldJoint": [], "PinJoint": [("R", Z, 0)], "SliderJoint": [("T", X, 0)],
            "UniversalJoint": [("R", X, 0), ("R", Y, 1)],
            "PlanarJoint": [("T", X, 1), ("T", Y, 2), ("R", Z, 0)],
            "GimbalJoint": [("R", X, 0), ("R", Y, 1), ("R", Z, 2)],
            "BallJoint": [("R", X, 0), ("R", Y, 1), ("R", Z, 2)],
            "FreeJoint": [("T", X, 3), ("T", Y, 4), ("T", Z, 5), ("R", X, 0), ("R", Y, 1), ("R", Z, 2)]}


def _rot(axis, a):
    ax = np.asarray(axis, dtype=float)
    ax = ax / np.linalg.norm(ax)
    K = np.array([[0.0, -ax[2], ax[1]], [ax[2], 0.0, -ax[0]], [-ax[1], ax[0], 0.0]])
    return np.eye(3) + np.sin(a) * K + (1.0 - np.cos(a)) * K @ K


def xyz_body_fixed(angles):
    """R = Rx(a) Ry(b) Rz(c): OpenSim's frame orientation."""
    a, b, c = angles
    return _rot(X, a) @ _rot(Y, b) @ _rot(Z, c)


def _text(el, tag, default=None):
    c = el.find(tag)
    return default if c is None or c.text is None else c.text.strip()


def _name_of_path(path):
    return path.rstrip("/").split("/")[-1] if path else path


class _Coordinate:
    def __init__(self, el, where):
        self.name = el.get("name")
        if not self.name:
            raise ModelError(f"{where}: <Coordinate> without a name")
        w = f"{where}: coordinate {self.name!r}"
        d = F.numbers(el, "default_value", w, 1)
        self.default = 0.0 if d is None else d[0]
        r = F.numbers(el, "range", w, 2)
        self.range = (-np.inf, np.inf) if r is None else (r[0], r[1])
        if self.range[0] > self.range[1]:
            raise ModelError(f"{w}: <range> {list(self.range)} is not increasing")
        self.locked = _text(el, "locked", "false").lower() == "true"
        self.prescribed = _text(el, "prescribed", "false").lower() == "true"
        self.motion = None          # its function of time, when prescribed and given one
        pf = el.find("prescribed_function")
        if self.prescribed and pf is not None and len(pf):
            self.motion = F.translate(F.function_element(pf, f"{w}: <prescribed_function>"), ["t"],
                                      f"{w}: <prescribed_function>")


def _offset_frame(name, parent, translation, orientation):
    """A ``PhysicalOffsetFrame`` element (OpenSim 4 format) for a frame given the 3.3 way."""
    f = ET.Element("PhysicalOffsetFrame", name=name)
    for tag, text in (("socket_parent", parent), ("translation", translation), ("orientation", orientation)):
        if text is not None:
            ET.SubElement(f, tag).text = text
    return f


class _Joint:
    def __init__(self, el, where, child33=None):
        self.kind = el.tag
        self.name = el.get("name")
        self.where = f"{where}: {self.kind} {self.name!r}"
        if self.kind not in JOINT_KINDS:
            raise ModelError(f"{where}: {self.kind} {self.name!r}: joint kind not supported "
                             f"(supported: {', '.join(JOINT_KINDS)})")
        self.el = el
        self.frames = {}
        if child33 is not None:
            # OpenSim 3.3: the joint inside its child body, its frames as offsets of the two bodies
            parent = _text(el, "parent_body")
            if not parent:
                raise ModelError(f"{self.where}: <parent_body> is missing")
            if _text(el, "reverse", "false").lower() == "true":
                raise ModelError(f"{self.where}: <reverse> joints are not supported")
            self.parent_frame, self.child_frame = f"{self.name} (in {parent})", f"{self.name} (in {child33})"
            self.frames[self.parent_frame] = _offset_frame(self.parent_frame, parent, _text(el, "location_in_parent"),
                                                           _text(el, "orientation_in_parent"))
            self.frames[self.child_frame] = _offset_frame(self.child_frame, child33, _text(el, "location"),
                                                          _text(el, "orientation"))
            cs = el.find("CoordinateSet/objects")
        else:
            self.parent_frame = _text(el, "socket_parent_frame")
            self.child_frame = _text(el, "socket_child_frame")
            if not self.parent_frame or not self.child_frame:
                raise ModelError(f"{self.where}: <socket_parent_frame> and <socket_child_frame> are required "
                                 "(OpenSim 4 format)")
            cs = el.find("coordinates")
            fr = el.find("frames")
            for f in ([] if fr is None else fr.findall("PhysicalOffsetFrame")):
                self.frames[f.get("name")] = f
        self.coords = [] if cs is None else [_Coordinate(c, self.where) for c in cs.findall("Coordinate")]


def _frame(joint, name, bodies, where, depth=0):
    """(body name, Transform of the frame in the body) of a joint's frame (an offset frame of
    its own, or a body or the ground by path)."""
    key = _name_of_path(name)
    if key in joint.frames and depth < 10:
        f = joint.frames[key]
        w = f"{where}: frame {key!r}"
        parent = _text(f, "socket_parent")
        if not parent:
            raise ModelError(f"{w}: <socket_parent> is missing")
        t = F.numbers(f, "translation", w, 3) or [0.0, 0.0, 0.0]
        o = F.numbers(f, "orientation", w, 3) or [0.0, 0.0, 0.0]
        body, T = _frame(joint, parent, bodies, where, depth + 1) if _name_of_path(parent) in joint.frames \
            else (_body_of(parent, bodies, w), Transform())
        R = T.rotation @ xyz_body_fixed(o)
        return body, Transform(R, T.rotation @ np.asarray(t) + T.translation)
    return _body_of(name, bodies, where), Transform()


def _closure(b, el, bodies, source):
    """A ``PointConstraint`` (a point of body 1 on a point of body 2) -> a spherical loop
    closure; a ``WeldConstraint`` (frame 1 on frame 2) -> a Fixed loop closure."""
    name = el.get("name") or el.tag
    w = f"{source}: {el.tag} {name!r}"

    class _Frames:
        frames = {}
    fr = el.find("frames")
    for f in ([] if fr is None else fr.findall("PhysicalOffsetFrame")):
        _Frames.frames[f.get("name")] = f
    if el.tag == "PointConstraint":
        ends = []
        for k in (1, 2):
            path = _text(el, f"socket_body_{k}")
            if not path:
                raise ModelError(f"{w}: <socket_body_{k}> is missing")
            loc = F.numbers(el, f"location_body_{k}", w, 3) or [0.0, 0.0, 0.0]
            ends.append((_body_of(path, bodies, w), Transform(None, np.asarray(loc, dtype=float))))
        joint = J.Spherical("quaternion")
    else:
        ends = []
        for k in (1, 2):
            path = _text(el, f"socket_frame{k}")
            if not path:
                raise ModelError(f"{w}: <socket_frame{k}> is missing")
            ends.append(_frame(_Frames, path, bodies, w))
        joint = J.Fixed()
    (b1, T1), (b2, T2) = ends
    b.add_loop(name, "world" if b1 == "ground" else b1, "world" if b2 == "ground" else b2, joint=joint,
               placement_a=T1, placement_b=T2)


def _body_of(path, bodies, where):
    key = _name_of_path(path)
    if key in bodies or key == "ground":
        return key
    raise ModelError(f"{where}: frame {path!r} is neither a frame of the joint nor a body")


def _read(path):
    source = os.fspath(path) if not (isinstance(path, str) and path.lstrip().startswith("<")) else "<osim text>"
    try:
        if source == "<osim text>":
            root = ET.fromstring(path)
        else:
            root = ET.parse(source).getroot()
    except OSError as e:
        raise ModelError(f"{source}: cannot read OpenSim file: {e}") from None
    except ET.ParseError as e:
        raise ModelError(f"{source}: malformed XML: {e}") from None
    model = root.find("Model") if root.tag == "OpenSimDocument" else (root if root.tag == "Model" else None)
    if model is None:
        raise ModelError(f"{source}: not an OpenSim model (no <Model> under <{root.tag}>)")
    version = root.get("Version", "40000")
    if version.isdigit() and int(version) < 30000:
        raise ModelError(f"{source}: OpenSim document version {version} is not supported (OpenSim 4 format)")
    return model, source


def _is_33(model):
    """True for the OpenSim 3.3 format: joints inside their child bodies, no JointSet."""
    return model.find("JointSet") is None and model.find("BodySet/objects/Body/Joint") is not None


def _objects(model, set_tag):
    s = model.find(set_tag)
    if s is None:
        return []
    o = s.find("objects")
    return [] if o is None else list(o)


def load_opensim(path, locked="fixed", prescribed="time", strict=False, balance_inertia=False):
    """Load an OpenSim model (``.osim`` path, or the XML text) as an ``ej.Model`` (see the
    module's mapping).  ``locked``: ``"fixed"`` welds locked coordinates at their default value,
    ``"free"`` keeps them as coordinates.  ``prescribed``: ``"time"`` makes each prescribed
    coordinate with a ``prescribed_function`` that function of time (a rheonomic joint; the
    coordinate leaves q), ``"free"`` keeps it as a coordinate.  Inertias that break the triangle inequality (common
    in published models) are kept as written with an ``ej.InertiaWarning``; ``strict=True``
    refuses them, ``balance_inertia=True`` balances them (as ``load_urdf``).  What the model
    leaves out is reported by one ``ej.OpenSimWarning`` and in ``model.summary()``.  Errors
    (``ej.ModelError``) name the file and the element."""
    if locked not in ("fixed", "free"):
        raise ModelError(f'load_opensim: locked must be "fixed" or "free", got {locked!r}')
    if prescribed not in ("time", "free"):
        raise ModelError(f'load_opensim: prescribed must be "time" or "free", got {prescribed!r}')
    if strict and balance_inertia:
        raise ModelError("load_opensim: strict=True refuses inconsistent inertias and balance_inertia=True "
                         "repairs them; give one or the other")
    model, source = _read(path)
    try:
        return _load(model, source, locked == "fixed", prescribed == "time",
                     "raise" if strict else "balance" if balance_inertia else "keep")
    except ModelError as e:
        msg = str(e)
        raise ModelError(msg if msg.startswith(source) else f"{source}: {msg}") from None


def _load(model, source, fix_locked, drive, policy):
    g = F.numbers(model, "gravity", "<gravity>", 3)
    gravity = (0.0, -9.80665, 0.0) if g is None else g
    bodies = {}
    v33 = _is_33(model)
    joints = []
    for el in _objects(model, "BodySet"):
        if el.tag != "Body":
            raise ModelError(f"BodySet: unknown element <{el.tag}>")
        name = el.get("name")
        w = f"body {name!r}"
        if v33 and name == "ground":
            continue
        if not name or name in bodies or name == "ground":
            raise ModelError(f"{w}: a body needs a unique name (not 'ground')")
        mass = (F.numbers(el, "mass", w, 1) or [0.0])[0]
        com = F.numbers(el, "mass_center", w, 3) or [0.0, 0.0, 0.0]
        if v33:
            i6 = [(F.numbers(el, f"inertia_{a}", w, 1) or [0.0])[0] for a in ("xx", "yy", "zz", "xy", "xz", "yz")]
            jw = el.find("Joint")
            if jw is not None and len(jw):
                if len(jw) != 1:
                    raise ModelError(f"{w}: <Joint> holds {len(jw)} joints; one expected")
                joints.append(_Joint(jw[0], f"body {name!r}", child33=name))
        else:
            i6 = F.numbers(el, "inertia", w, 6) or [0.0] * 6
        I = np.array([[i6[0], i6[3], i6[4]], [i6[3], i6[1], i6[5]], [i6[4], i6[5], i6[2]]])
        bodies[name] = (mass, com, I)
    for el in _objects(model, "JointSet"):
        joints.append(_Joint(el, "JointSet"))
    # the tree: each body has one joint; parents before children
    by_child, order = {}, []
    for jt in joints:
        pb, P = _frame(jt, jt.parent_frame, bodies, jt.where)
        cb, Cp = _frame(jt, jt.child_frame, bodies, jt.where)
        if cb == "ground":
            raise ModelError(f"{jt.where}: the child frame is on the ground (reversed joints are not supported)")
        if cb in by_child:
            raise ModelError(f"{jt.where}: body {cb!r} already has joint {by_child[cb][0].name!r} (closed loops "
                             "are not supported)")
        by_child[cb] = (jt, pb, P, Cp)
    placed = {"ground"}
    while len(order) < len(by_child):
        grew = False
        for cb, (jt, pb, P, Cp) in by_child.items():
            if cb not in placed and pb in placed:
                order.append(cb)
                placed.add(cb)
                grew = True
        if not grew:
            rest = sorted(set(by_child) - placed)
            raise ModelError(f"bodies {rest} are not connected to the ground by joints")
    missing = sorted(set(bodies) - set(by_child))
    if missing:
        raise ModelError(f"bodies {missing} have no joint (every OpenSim body needs one)")

    b = ModelBuilder(gravity=gravity)
    notes, coord_at, locked_value = [], {}, {}
    reports = []
    for cb in order:
        jt, pb, P, Cp = by_child[cb]
        spec, P2, names, kept = _joint_spec(jt, P, fix_locked, drive, locked_value)
        mass, com, I = bodies[cb]
        defect = inertia_defect(I) if np.abs(I).max() > 0 else None
        as_written = False
        if defect is not None:
            if policy == "raise":
                raise ModelError(f"body {cb!r}: <inertia>: {defect} (strict=True refuses physically inconsistent "
                                 "inertias)")
            reports.append((cb, defect, np.linalg.eigvalsh(I).tolist(), policy == "balance"))
            if policy == "balance":
                I = _balance(I)
            else:
                as_written = True
        j = b.add_body(cb, parent="world" if pb == "ground" else pb, joint=spec, placement=P2, child_placement=Cp,
                       mass=mass, com=com, inertia=I, inertia_as_written=as_written, joint_name=jt.name,
                       q_lower=[c.range[0] for c in kept] or None, q_upper=[c.range[1] for c in kept] or None,
                       coordinate_names=names or None, q_default=[c.default for c in kept] or None)
        for k, c in enumerate(kept):
            coord_at[c.name] = (j, k)
        for c in jt.coords:
            if c.prescribed and c in kept:
                why = "without a prescribed_function" if c.motion is None else "(loaded with prescribed='free')"
                notes.append(f"coordinate {c.name!r} is prescribed in the file {why}; it is a free coordinate here")
            elif c.prescribed and c.name not in locked_value:
                notes.append(f"coordinate {c.name!r} is prescribed: a function of time")
    _named_frames(b, model, joints, bodies, v33)
    left = {}
    for el in _objects(model, "ConstraintSet"):
        enforced = (_text(el, "isEnforced", "true").lower() == "true"
                    and _text(el, "isDisabled", "false").lower() != "true")     # 3.3: isDisabled
        if el.tag == "CoordinateCouplerConstraint" and enforced:
            _coupler(b, el, coord_at, locked_value)
        elif el.tag in ("PointConstraint", "WeldConstraint") and enforced:
            _closure(b, el, bodies, source)
        else:
            key = el.tag + ("" if enforced else " (not enforced)")
            left[key] = left.get(key, 0) + 1
    for set_tag in ("ForceSet", "ContactGeometrySet", "ProbeSet", "ControllerSet", "ComponentSet"):
        for el in _objects(model, set_tag):
            left[el.tag] = left.get(el.tag, 0) + 1
    if left:
        notes.append("left out: " + ", ".join(f"{n} {k}" for k, n in sorted(left.items())))
    b.notes = notes
    m = b.build()
    for body, defect, moments, balanced in reports:
        what = "balanced" if balanced else "kept as written (balance_inertia=True balances it, strict=True refuses it)"
        warnings.warn(InertiaWarning(f"{source}: body {body!r}: <inertia>: {defect}; {what}", source=source,
                                     link=body, moments=moments, balanced=balanced), stacklevel=3)
    if left:
        warnings.warn(OpenSimWarning(f"{source}: not loaded (a rigid-body model does not hold them): "
                                     + ", ".join(f"{n} {k}" for k, n in sorted(left.items())), left), stacklevel=3)
    return m


def _named_frames(b, model, joints, bodies, v33):
    """The joints' ``PhysicalOffsetFrame``s (OpenSim 4 format), named by their OpenSim path
    ``/jointset/<joint>/<frame>``, and the ``MarkerSet``'s markers, named as in the file, as named
    frames (``ModelBuilder.add_frame``) on their bodies."""
    paths = {}
    for jt in joints:
        if v33:
            break
        for key in jt.frames:
            body, T = _frame(jt, key, bodies, jt.where)
            path = f"/jointset/{jt.name}/{key}"
            paths[path] = (body, T)
            b.add_frame(path, "world" if body == "ground" else body, placement=T)
    taken = set(bodies) | {"ground", "world"} | set(paths)
    for el in _objects(model, "MarkerSet"):
        name = el.get("name")
        w = f"MarkerSet: {el.tag} {name!r}"
        if el.tag != "Marker" or not name:
            raise ModelError(f"{w}: expected <Marker name=...>")
        parent = _text(el, "body" if v33 else "socket_parent_frame")
        if not parent:
            raise ModelError(f"{w}: <{'body' if v33 else 'socket_parent_frame'}> is missing")
        body, T = paths[parent] if parent in paths else (_body_of(parent, bodies, w), Transform())
        loc = np.asarray(F.numbers(el, "location", w, 3) or [0.0, 0.0, 0.0], dtype=float)
        while name in taken:
            name += "_marker"
        taken.add(name)
        b.add_frame(name, "world" if body == "ground" else body,
                    placement=Transform(T.rotation, T.rotation @ loc + T.translation))


def _joint_spec(jt, P, fix_locked, drive, locked_value):
    """(joint spec, placement, coordinate names, kept coordinates) of an OpenSim joint; locked
    coordinates welded at their default value when ``fix_locked``; prescribed ones (with a
    function) driven by their function of time when ``drive``."""
    cnames = [c.name for c in jt.coords]
    motions = []      # (kind "R"/"T", axis, fn of the joint's OpenSim coordinates)
    if jt.kind == "EllipsoidJoint":
        if len(cnames) != 3:
            raise ModelError(f"{jt.where}: 3 coordinates expected, got {len(cnames)}")
        radii = F.numbers(jt.el, "radii_x_y_z", jt.where, 3)
        if radii is None:
            raise ModelError(f"{jt.where}: <radii_x_y_z> is missing")
        if fix_locked and any(c.locked for c in jt.coords) or drive and any(c.motion is not None for c in jt.coords):
            raise ModelError(f"{jt.where}: a locked or prescribed coordinate of an EllipsoidJoint cannot be "
                             "fixed or driven (load with locked='free' and prescribed='free' to keep it as a "
                             "coordinate)")
        try:
            spec = J.Ellipsoid(radii)
        except ModelError as e:
            raise ModelError(f"{jt.where}: <radii_x_y_z>: {e}") from None
        return spec, P, cnames, list(jt.coords)
    if jt.kind == "CustomJoint":
        st = jt.el.find("SpatialTransform")
        if st is None:
            raise ModelError(f"{jt.where}: <SpatialTransform> is missing")
        axes = {ta.get("name"): ta for ta in st.findall("TransformAxis")}
        for kind, names in (("T", ("translation1", "translation2", "translation3")),
                            ("R", ("rotation1", "rotation2", "rotation3"))):
            for an in names:
                ta = axes.get(an)
                if ta is None:
                    continue
                w = f"{jt.where}: TransformAxis {an!r}"
                axis = F.numbers(ta, "axis", w, 3)
                if axis is None or np.linalg.norm(axis) == 0.0:
                    raise ModelError(f"{w}: <axis> is missing or zero")
                used = (_text(ta, "coordinates", "") or "").split()
                for u in used:
                    if u not in cnames:
                        raise ModelError(f"{w}: coordinate {u!r} is not a coordinate of the joint ({cnames})")
                holder = ta.find("function")        # OpenSim 3.3: the function inside <function>
                holder = ta if holder is None else holder
                el = [c for c in holder if c.tag not in ("coordinates", "axis")]
                if not el:
                    if used:
                        raise ModelError(f"{w}: a coordinate but no function")
                    continue
                f = F.translate(F.function_element(holder, w), [cnames.index(u) for u in used], w)
                motions.append((kind, np.asarray(axis) / np.linalg.norm(axis), f))
    else:
        need = max([c for _, _, c in _BUILTIN[jt.kind]] + [-1]) + 1
        if len(cnames) != need:
            raise ModelError(f"{jt.where}: {need} coordinates expected, got {len(cnames)}")
        motions = [(kind, np.asarray(ax), _fn.Linear(np.eye(need)[c])) for kind, ax, c in _BUILTIN[jt.kind]]
    # locked coordinates -> their default value
    kept = [c for c in jt.coords if not (fix_locked and c.locked) and not (drive and c.motion is not None)]
    driven = {k: c.motion for k, c in enumerate(jt.coords) if c not in kept and not (fix_locked and c.locked)}
    mapping = {k: kept.index(c) for k, c in enumerate(jt.coords) if c in kept}
    q0 = np.array([c.default for c in jt.coords])
    out = []
    for kind, ax, f in motions:
        if _reads(f) & set(driven):
            f = _drive(f, driven, jt)
        reads = _reads(f)
        if isinstance(f, _fn.MultiPoly) and not set(f.coords) <= set(mapping):
            f = _substitute(f, {k: q0[k] for k in set(f.coords) - set(mapping)})
            reads = _reads(f)
        if reads and not reads <= set(mapping):
            if reads & set(mapping):
                raise ModelError(f"{jt.where}: a transform axis reads both locked and free coordinates")
            f = _fn.Linear([], offset=f.value(q0))
        elif reads:
            f = F.reindex(f, mapping)
        if not F.is_zero(f):
            out.append((kind, ax, f))
    for c in jt.coords:
        if fix_locked and c.locked:
            locked_value[c.name] = c.default
        elif c not in kept:
            locked_value[c.name] = None         # prescribed
    # leading constant motions become part of the placement
    R, r = np.array(P.rotation, dtype=float), np.array(P.translation, dtype=float)
    while out and F.is_constant(out[0][2]):
        kind, ax, f = out.pop(0)
        a = f.value(np.zeros(len(kept)))
        if kind == "R":
            R = R @ _rot(ax, a)
        else:
            r = r + R @ (np.asarray(ax) * a)
    P2 = Transform(R, r)
    names = [c.name for c in kept]
    if not out:
        return J.Fixed(), P2, [], []
    if len(out) == 1 and len(kept) == 1:
        kind, ax, f = out[0]
        if isinstance(f, _fn.Linear) and f.offset == 0.0 and len(f.coeffs) == 1 and f.coeffs[0] == 1.0:
            return (J.Revolute(ax) if kind == "R" else J.Prismatic(ax)), P2, names, kept
    mots = [(J.Rot if kind == "R" else J.Trans)(ax, f) for kind, ax, f in out]
    return J.Composite(mots, len(kept)), P2, names, kept


def _reads(f):
    parts = f.parts if isinstance(f, _fn.Sum) else [f]
    out = set()
    for p in parts:
        if isinstance(p, _fn.Linear):
            out |= {k for k, c in enumerate(p.coeffs) if c != 0.0}
        elif isinstance(p, _fn.MultiPoly):
            out |= {c for j, c in enumerate(p.coords) if np.any((p.powers[:, j] != 0) & (p.coeffs != 0))}
        elif getattr(p, "coord", "t") != "t":
            out.add(p.coord)
    return out


def _drive(f, driven, jt):
    """``f`` with the prescribed coordinates of ``driven`` ({coordinate: function of time})
    replaced by their functions: for a ``Linear`` f, ``offset + sum c_k q_k`` becomes the sum of
    the free terms and ``c_k g_k(t)``; other functions of a prescribed coordinate are refused."""
    parts = f.parts if isinstance(f, _fn.Sum) else [f]
    out = []
    for p in parts:
        if not (_reads(p) & set(driven)):
            out.append(p)
            continue
        if not isinstance(p, _fn.Linear):
            names = ", ".join(repr(jt.coords[k].name) for k in sorted(_reads(p) & set(driven)))
            raise ModelError(f"{jt.where}: a transform axis is a nonlinear function ({p!r}) of the prescribed "
                             f"coordinate {names}; only linear ones can be driven (load with prescribed='free' "
                             "to keep it as a coordinate)")
        coeffs = p.coeffs.copy()
        for k in driven:
            if k < len(coeffs) and coeffs[k] != 0.0:
                out.append(F.scaled(driven[k], float(coeffs[k])))
                coeffs[k] = 0.0
        rest = _fn.Linear(np.trim_zeros(coeffs, "b"), offset=p.offset)
        if not F.is_zero(rest):
            out.append(rest)
    return out[0] if len(out) == 1 else _fn.Sum(*out)


def _substitute(f, values):
    """The MultiPoly ``f`` with the coordinates of ``values`` ({coordinate: value}) fixed."""
    keep = [j for j, c in enumerate(f.coords) if c not in values]
    coeffs = f.coeffs.copy()
    for j, c in enumerate(f.coords):
        if c in values:
            coeffs = coeffs * values[c] ** f.powers[:, j]
    if not keep:
        return _fn.Linear([], offset=float(coeffs.sum()))
    return _fn.MultiPoly([f.coords[j] for j in keep], f.powers[:, keep], coeffs)


def _coupler(b, el, coord_at, locked_value):
    name = el.get("name")
    w = f"CoordinateCouplerConstraint {name!r}"
    dep = _text(el, "dependent_coordinate_name")
    ind = (_text(el, "independent_coordinate_names", "") or "").split()
    if not dep or not ind:
        raise ModelError(f"{w}: <dependent_coordinate_name> and <independent_coordinate_names> are required")
    for c in [dep] + ind:
        if c in locked_value:
            what = "locked (load with locked='free'" if locked_value[c] is not None else \
                "prescribed (load with prescribed='free'"
            raise ModelError(f"{w}: coordinate {c!r} is {what} to keep it)")
        if c not in coord_at:
            raise ModelError(f"{w}: no coordinate named {c!r}")
    fe = el.find("coupled_coordinates_function")
    if fe is None:
        raise ModelError(f"{w}: <coupled_coordinates_function> is missing")
    f = F.translate(F.function_element(fe, w), list(range(len(ind))), w)
    s = F.numbers(el, "scale_factor", w, 1)
    try:
        b.add_coupler(coord_at[dep], [coord_at[c] for c in ind], f, 1.0 if s is None else s[0])
    except ModelError as e:
        raise ModelError(f"{w}: {e}") from None
