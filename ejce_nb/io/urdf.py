"""Loading URDF robot descriptions into an ``ej.Model`` (standard library XML parser only).

The mapping from URDF elements to the model is stated in ``load_urdf``'s docstring.
"""
import warnings
import xml.etree.ElementTree as ET

import numpy as np

from ..errors import ModelError
from ..model.builder import ModelBuilder, balance_inertia
from ..core.transform import Transform
from .xmltree import XMLError, parse
from .urdf_read import _ONE_DOF, _Joint, _Link, _read, _root_spec, _rotor_inertias
from .urdf_read import _z_onto  # noqa: F401  (the rotation that takes z onto a joint's axis)


class InertiaWarning(UserWarning):
    """A URDF link's inertia is not physically consistent (a negative principal moment, or
    principal moments that break the triangle inequality I1 + I2 >= I3).  ``source`` is the file,
    ``link`` the link name, ``moments`` its principal moments as written and ``balanced``
    whether the loader replaced them (``load_urdf(..., balance_inertia=True)``)."""

    def __init__(self, message, source=None, link=None, moments=None, balanced=False):
        super().__init__(message)
        self.source, self.link, self.moments, self.balanced = source, link, moments, balanced


GRAVITY = (0.0, 0.0, -9.81)


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
    smaller moments raised equally until I1 + I2 = I3; still with a warning; giving both is an
    ``ej.ModelError``).  Malformed files raise ``ej.ModelError`` naming the file, the link or
    joint and the element.

    Mapping (URDF -> ``ej.Model``):

    * each ``<link>`` is a body of the same name (``body_names``); its frame is the body frame.
      ``<inertial>``: the COM is the inertial origin's ``xyz`` and the inertia tensor, given in
      the inertial frame, is turned into link axes by the origin's ``rpy``.  A link without
      ``<inertial>`` (or with mass 0 and zero inertia) is massless, and accepted.
    * each ``<joint>`` is the joint of its child link, with the same name (``joint_names``).  The
      joint ``<origin>`` is the inboard frame P in the parent link; the child link frame is the
      joint frame, so the outboard frame C is the identity (except for planar joints, below).
    * ``revolute`` and ``continuous`` (one angle) -> ``Revolute(axis)``; ``prismatic`` ->
      ``Prismatic(axis)``; ``fixed`` -> ``Fixed()`` (kept as a body unless ``merge_fixed``);
      ``floating`` -> ``Free("quaternion")``; ``planar`` -> ``Planar()`` turned so that its plane
      is normal to the axis: P = origin * E and C = E with E the smallest rotation taking z onto
      the axis (q = [x, y, angle] along E's x and y axes, angle about the axis).
    * ``<limit>`` lower / upper (default 0, as the URDF specification says; none for continuous
      joints), velocity and effort (none when absent) are kept as the model's limits.
    * ``<dynamics damping="...">`` of a revolute, continuous or prismatic joint is the joint's
      viscous damping (``Model.dof_damping``, used by ``ej.simulate``); ``friction`` is ignored
      (Coulomb friction is not modelled), as is ``<dynamics>`` on other joints.
    * ``<mimic>`` (``mimic=True``): the joint follows the other joint's coordinate with no
      coordinate of its own (``Model.joint_mimic``; ``mimic=False`` keeps them independent, as
      most loaders do); chains of mimic joints are composed; a mimic joint hands its damping and
      rotor inertia to the joint it follows, times the multiplier squared.
    * the root link is fixed to the world by a Fixed joint named ``root_joint``, or floats on a
      joint of that name (``floating_base``).  A root link named ``world`` is the world itself; a
      joint whose parent is ``world`` with no ``<link name="world">`` in the file hangs from the
      world (as Drake and MuJoCo read it).  Bodies are numbered depth-first, children in the
      order of their joints in the file.
    * a ``<transmission>``'s ``<actuator>`` with ``<drake:rotor_inertia value=...>`` (and
      ``<drake:gear_ratio value=...>``, default 1) gives its joint the armature ``rotor_inertia x
      gear_ratio^2`` (``Model.dof_armature``), Drake's reflected rotor inertia.
    * gravity is (0, 0, -9.81).  ``<visual>``, ``<collision>`` (the viewer reads ``<visual>``),
      the rest of transmissions etc. are not part of the model.
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

def _load(text, root_spec, floating, use_mimic, inertia_policy, merge_fixed=False):
    """(model, [(link, defect, principal moments as written, balanced), ...] for every link
    whose inertia is inconsistent)."""
    try:
        robot = parse(text)       # no namespace processing: undeclared prefixes (drake:, xacro:) are names
    except XMLError as e:
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
    # a mimic joint's rotor inertia and damping act on its source through the coupling
    # (q = k q_src + off): k^2 times them join the source's, as the reduced dynamics have them
    for name, (src, k, _) in coupling.items():
        if armature.get(name):
            armature[src] = armature.get(src, 0.0) + k * k * armature.pop(name)
        if joints[name].damping:
            joints[src].damping += k * k * joints[name].damping
            joints[name].damping = 0.0
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

