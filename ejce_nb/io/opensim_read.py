"""The OpenSim file as read (``io.opensim``): the document and its format (4 or 3.3), its
coordinates, joints, frames (a ``PhysicalOffsetFrame``'s orientation is a body-fixed X-Y-Z Euler
sequence, R = Rx Ry Rz), named frames and the loop-closing constraints."""
import os
import xml.etree.ElementTree as ET

import numpy as np

from ..core.joints import specs as J
from ..core.transform import Transform
from ..errors import ModelError
from . import opensim_fn as F
from .xmltree import XMLError, line_of, parse

JOINT_KINDS = ("CustomJoint", "WeldJoint", "PinJoint", "SliderJoint", "UniversalJoint", "PlanarJoint",
               "GimbalJoint", "BallJoint", "FreeJoint", "EllipsoidJoint")
X, Y, Z = (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)


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
        w = f"{where}: coordinate {self.name!r}{line_of(el)}"
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
        self.where = f"{where}: {self.kind} {self.name!r}{line_of(el)}"
        if self.kind not in JOINT_KINDS:
            raise ModelError(f"{self.where}: joint kind not supported "
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
    w = f"{source}: {el.tag} {name!r}{line_of(el)}"

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
            data = path             # expat reads a str as UTF-8 text, whatever it declares
        else:
            with open(source, "rb") as f:
                data = f.read()
    except OSError as e:
        raise ModelError(f"{source}: cannot read OpenSim file: {e}") from None
    try:
        root = parse(data)
    except XMLError as e:
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
        w = f"MarkerSet: {el.tag} {name!r}{line_of(el)}"
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
