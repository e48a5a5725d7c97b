"""Loading URDF robot descriptions into an ``ej.Model`` (standard library XML parser only).

Mapping (the README's "Loading URDF" says the same for users):
  * each ``<link>`` is a body of the same name; its frame is the body frame.  ``<inertial>``:
    the COM is the inertial origin's ``xyz`` and the inertia tensor, given in the inertial frame,
    is turned into link axes by the origin's ``rpy``.  A link without ``<inertial>`` is massless.
    A tensor that is not physically consistent (``builder.inertia_defect``) is kept as written with
    an ``InertiaWarning``, refused (``strict=True``) or balanced (``balance_inertia=True``).
  * each ``<joint>`` is the joint of its child link, with the same name.  The joint ``<origin>`` is
    the inboard frame P in the parent link; the child link frame is the joint frame, so the
    outboard frame C is the identity (except for planar joints, below).
  * ``revolute`` and ``continuous`` -> Revolute(axis); ``prismatic`` -> Prismatic(axis);
    ``fixed`` -> Fixed(); ``floating`` -> Free("quaternion"); ``planar`` -> Planar() turned so
    that its plane is normal to the axis: P = origin * E and C = E with E the smallest rotation
    taking z onto the axis (so q = [x, y, angle] along E's x and y axes, angle about the axis).
  * ``<limit>`` lower/upper (default 0, as the URDF specification says; none for continuous
    joints), velocity and effort (none when absent) are kept as the model's limits.
  * ``<dynamics damping="...">`` of a revolute, continuous or prismatic joint is kept as the
    joint's viscous damping (``Model.dof_damping``, used by ``ej.simulate``); ``friction`` is
    ignored (Coulomb friction is not modelled), as is ``<dynamics>`` on other joints and on mimic
    joints (which have no velocity of their own).
  * ``<mimic>`` (mimic=True): the joint follows the other joint's coordinate with no coordinate
    of its own (``Model.joint_mimic``); chains of mimic joints are composed.  On a fixed joint it
    is ignored; mimic=False ignores every ``<mimic>``.
  * The root link is fixed to the world (``floating_base=None``) by a Fixed joint named
    ``root_joint``, or floats on a Free joint of that name.  A root link named ``world`` is the
    world itself.  Bodies are numbered depth-first, children in the order of their joints in the
    file.  A joint whose parent is ``world`` with no ``<link name="world">`` in the file is
    attached to the world (as Drake and MuJoCo read it).
  * a ``<transmission>``'s ``<actuator>`` with ``<drake:rotor_inertia value=...>`` (and
    ``<drake:gear_ratio value=...>``, default 1) gives its ``<joint>`` the armature
    rotor_inertia * gear_ratio^2 (``Model.dof_armature``), Drake's reflected rotor inertia.
  * ``<visual>``, ``<collision>``, the rest of transmissions etc. are ignored.
"""
import os
import warnings
import xml.etree.ElementTree as ET

import numpy as np

from ..model.builder import ModelBuilder, balance_inertia, check_inertia, inertia_defect
from ..errors import ModelError
from ..core.joints import specs as _specs
from ..core.transform import Transform, rot_axis_angle, rpy_matrix


class InertiaWarning(UserWarning):
    """A URDF link's inertia is not physically consistent (a negative principal moment, or
    principal moments that break the triangle inequality I1 + I2 >= I3).  ``source`` is the file,
    ``link`` the link name, ``moments`` its principal moments as written and ``balanced``
    whether the loader replaced them (``load_urdf(..., balance_inertia=True)``)."""

    def __init__(self, message, source=None, link=None, moments=None, balanced=False):
        super().__init__(message)
        self.source, self.link, self.moments, self.balanced = source, link, moments, balanced


JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed", "floating", "planar")
_ONE_DOF = ("revolute", "continuous", "prismatic")
GRAVITY = (0.0, 0.0, -9.81)


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


def load_urdf(path, floating_base=None, mimic=True, strict=False, balance_inertia=False, merge_fixed=False):
    """Load a URDF file (``path``; URDF text, a string starting with ``<``, is also taken) as an
    ``ej.Model``.

    floating_base: None fixes the root link to the world; ``"quaternion"`` or any other
    ``Spherical`` parameterisation (``"ZYX"``, ``"rotvec"``, ...) attaches it by a ``Free`` joint
    with that rotation, and a joint spec attaches it by that joint.  The root joint is named
    ``root_joint``.  A root link named ``world`` is the world and takes no root joint.
    mimic: True couples ``<mimic>`` joints to their source joint (no coordinate of their own);
    False keeps them as independent joints.  A ``<mimic>`` on a fixed joint is ignored.
    merge_fixed: False keeps every link as a body (a ``fixed`` joint is a Fixed joint); True merges
    each link attached by a ``fixed`` joint into its parent (as Pinocchio and Drake do): its mass,
    centre of mass and inertia are added to the parent's, its children hang from the parent, and
    the link becomes a named frame (``Model.frame_names``) of the same name on the parent, so
    ``ej.frame_jacobian(model, q, "link")`` and ``ej.frame_pose`` still find it.

    Inertias that are not physically consistent (a negative principal moment, or principal
    moments breaking the triangle inequality, beyond ``builder.INERTIA_RTOL`` of the largest)
    are common in published robot files.  By default they are kept as written and each is
    reported by an ``ej.InertiaWarning`` naming the file and the link; ``strict=True`` refuses
    them (``ej.ModelError``) and ``balance_inertia=True`` replaces each by
    ``builder.balance_inertia`` of it (negative principal moments raised to 0, then the two
    smaller moments raised equally until I1 + I2 = I3; still with a warning).
    Malformed files raise ``ej.ModelError`` naming the file, the link or joint and the element.
    """
    if strict and balance_inertia:
        raise ModelError("load_urdf: strict=True refuses inconsistent inertias and balance_inertia=True "
                         "repairs them; give one or the other")
    root_spec = _root_spec(floating_base)
    text, source = _read(path)
    policy = "raise" if strict else "balance" if balance_inertia else "keep"
    try:
        model, reports = _load(text, root_spec, floating_base is not None, bool(mimic), policy, bool(merge_fixed))
    except ModelError as e:
        raise ModelError(f"{source}: {e}") from None
    for link, defect, moments, balanced in reports:
        if balanced:
            what = f"balanced to principal moments {np.linalg.eigvalsh(model.body_inertia[model.body_index(link)]).tolist()}"
        else:
            what = "kept as written (balance_inertia=True balances it, strict=True refuses it)"
        warnings.warn(InertiaWarning(f"{source}: link {link!r}: <inertial>: {defect}; {what}",
                                     source=source, link=link, moments=moments, balanced=balanced),
                      stacklevel=2)
    return model


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


def _load(text, root_spec, floating, use_mimic, inertia_policy, merge_fixed=False):
    """(model, [(link, defect, principal moments as written, balanced), ...] for every link
    whose inertia is inconsistent)."""
    try:
        robot = ET.fromstring(text)
    except ET.ParseError as e:
        raise ModelError(f"not well-formed XML: {e}") from None
    except (ValueError, UnicodeError) as e:
        raise ModelError(f"cannot parse XML: {e}") from None
    if robot.tag != "robot":
        raise ModelError(f"the top element is <{robot.tag}>, not <robot>")

    links = {}
    for k, el in enumerate(robot.findall("link")):
        link = _Link(el, f"link #{k}")
        if link.name in links:
            raise ModelError(f"link {link.name!r}: defined twice")
        links[link.name] = link
    if not links:
        raise ModelError("no <link> elements")
    # a parent named 'world' that the file does not declare is the world (Drake, MuJoCo)
    if "world" not in links and any(p.get("link") == "world" for j in robot.findall("joint")
                                    for p in j.findall("parent")):
        links = {"world": _Link(ET.Element("link", name="world"), "link 'world'"), **links}
    joints = {}
    for k, el in enumerate(robot.findall("joint")):
        j = _Joint(el, links, f"joint #{k}")
        if j.name in joints:
            raise ModelError(f"joint {j.name!r}: defined twice")
        joints[j.name] = j

    # the tree: every link but the root is the child of exactly one joint
    parent_joint = {}
    children = {name: [] for name in links}
    for j in joints.values():
        if j.child in parent_joint:
            raise ModelError(f"joint {j.name!r}: link {j.child!r} is already the child of joint "
                             f"{parent_joint[j.child].name!r} (a link has one parent; loops are not supported)")
        parent_joint[j.child] = j
        children[j.parent].append(j)
    roots = [name for name in links if name not in parent_joint]
    if not roots:
        raise ModelError("no root link: the joints form a cycle")
    if len(roots) > 1:
        raise ModelError(f"links {', '.join(map(repr, roots))} are all roots (the child of no joint); "
                         "a URDF must describe one tree")
    root = roots[0]
    order = []                      # depth-first, children in file order
    stack = [root]
    while stack:
        name = stack.pop()
        order.append(name)
        stack.extend(j.child for j in reversed(children[name]))
    if len(order) != len(links):
        missing = sorted(set(links) - set(order))
        raise ModelError(f"links {', '.join(map(repr, missing))} are not connected to the root "
                         f"{root!r}: their joints form a cycle")

    # mimic joints: resolve chains to their independent source
    coupling = {}
    for j in joints.values():
        if j.mimic is None:
            continue
        src = j.mimic[0]
        if use_mimic:
            if j.type == "fixed":
                continue            # nothing moves, so there is nothing to couple
            if src not in joints:
                raise ModelError(f"joint {j.name!r}: <mimic joint={src!r}>: no joint of that name "
                                 "(mimic=False ignores <mimic> elements)")
            if j.type not in _ONE_DOF:
                raise ModelError(f"joint {j.name!r}: <mimic>: a {j.type} joint cannot mimic; only "
                                 f"{', '.join(_ONE_DOF)} joints can")
            k, off, seen = j.mimic[1], j.mimic[2], [j.name]
            while joints[src].mimic is not None and joints[src].type != "fixed":
                if src in seen:
                    raise ModelError(f"joint {j.name!r}: <mimic>: the mimic joints {seen} form a cycle")
                seen.append(src)
                nxt, sk, soff = joints[src].mimic
                if nxt not in joints:
                    raise ModelError(f"joint {src!r}: <mimic joint={nxt!r}>: no joint of that name")
                k, off = k * sk, k * soff + off
                src = nxt
            if joints[src].type not in _ONE_DOF:
                raise ModelError(f"joint {j.name!r}: <mimic joint={src!r}>: a {joints[src].type} joint "
                                 "has no single coordinate to follow")
            coupling[j.name] = (src, k, off)

    # inconsistent inertias, in body order: refused, balanced or kept as written
    reports = []
    inertia = {}
    for name in order:
        lk = links[name]
        if lk.defect is None or name == "world":     # a root 'world' is body 0, its inertia unused
            inertia[name] = (lk.inertia, False)
            continue
        if inertia_policy == "raise":
            raise ModelError(f"link {name!r}: <inertial>: {lk.defect} (strict=True refuses physically "
                             "inconsistent inertias)")
        balanced = inertia_policy == "balance"
        inertia[name] = (balance_inertia(lk.inertia), False) if balanced else (lk.inertia, True)
        reports.append((name, lk.defect, np.linalg.eigvalsh(lk.inertia).tolist(), balanced))

    armature = _rotor_inertias(robot, joints)
    b = ModelBuilder(gravity=GRAVITY)
    root_is_world = root == "world"
    if root_is_world and floating:
        raise ModelError("floating_base was given but the root link is 'world', which is fixed")
    if root_is_world and len(order) == 1:
        raise ModelError("the only link is 'world': the robot has no bodies")
    # merge_fixed: each link on a fixed joint is folded into its nearest kept ancestor; kept[link]
    # = (that ancestor, the link's placement in it), mass[link] = (m, com, I, as written) summed
    kept, mass = {}, {n: (links[n].mass, np.asarray(links[n].com, dtype=float), *inertia[n]) for n in order}
    merged = []
    bodies = []
    for name in order[1:]:
        j = parent_joint[name]
        spec, P, Cp = j.spec()
        anc, Ta = kept.get(j.parent, (j.parent, Transform()))
        if merge_fixed and j.type == "fixed":
            T = Ta @ P @ Cp.inverse()
            kept[name] = (anc, T)
            merged.append((name, anc, T))
            if anc != "world":
                mass[anc] = _merge_inertia(mass[anc], mass[name], T)
        else:
            bodies.append((name, j, spec, anc, Ta @ P, Cp))
    if not root_is_world:
        lk = links[root]
        jname = "root_joint"
        while jname in joints:
            jname += "_"
        m, com, I, as_written = mass[root]
        try:
            b.add_body(root, parent="world", joint=root_spec, mass=m, com=com, inertia=I,
                       inertia_as_written=as_written, joint_name=jname)
        except ModelError as e:
            raise ModelError(f"link {root!r}: {e}") from None
    for name, j, spec, parent, P, Cp in bodies:
        m, com, I, as_written = mass[name]
        mim = coupling.get(j.name)
        one = j.type in _ONE_DOF and mim is None
        try:
            b.add_body(name, parent=parent, joint=spec, placement=P, child_placement=Cp,
                       mass=m, com=com, inertia=I, inertia_as_written=as_written, joint_name=j.name,
                       q_lower=[j.lower] if one else None, q_upper=[j.upper] if one else None,
                       v_limit=[j.velocity] if one else None, effort_limit=[j.effort] if one else None,
                       mimic=mim, damping=j.damping if one else None,
                       armature=armature.get(j.name) if one else None)
        except ModelError as e:
            msg = str(e)
            if name == "world":
                msg = "the name 'world' is reserved for the root link"
            raise ModelError(f"joint {j.name!r} (link {name!r}): {msg}") from None
    for name, anc, T in merged:
        b.add_frame(name, anc, placement=T)
    return b.build(), reports


def _merge_inertia(a, c, T):
    """(mass, com, inertia about the com, as written) of body a with body c fixed on it at T."""
    m1, c1, I1, w1 = a
    m2, c2, I2, w2 = c
    R, p = np.asarray(T.rotation), np.asarray(T.translation)
    c2 = R @ c2 + p
    I2 = R @ I2 @ R.T
    m = m1 + m2
    com = (m1 * c1 + m2 * c2) / m if m > 0.0 else np.zeros(3)

    def shift(mi, d):
        return mi * (d @ d * np.eye(3) - np.outer(d, d))
    return m, com, I1 + shift(m1, c1 - com) + I2 + shift(m2, c2 - com), bool(w1 or w2)

