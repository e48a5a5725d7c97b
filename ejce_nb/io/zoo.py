"""Model generators and the models shipped with the package.

* ``chain(n, joint)``: a serial chain (the n-link pendulum of the benchmarks).
* ``random_tree(n, seed)``: a seeded random tree with every joint kind, random frames and inertias,
  bodies numbered in a random parents-first order that is not depth-first.
* ``spherical_paper()``, ``arm7()``, ``humanoid()``, ``knee()``, ``driven()``: the shipped examples,
  stored as JSON in the repository's ``data/`` (installed as ``ejce_nb/data``); ``load("arm7")`` reads
  them, ``load(path)`` reads any ``.json`` or ``.urdf`` file.
* ``arm7_urdf()``: the URDF text of ``arm7`` (shipped as ``data/arm7.urdf``); ``quadruped_urdf()``:
  a small quadruped for floating-base loading (``data/quadruped.urdf``).

Run ``python -m ejce_nb.io.zoo DIR ...`` to rewrite the shipped files into the given directories.
"""
import os
import sys

import numpy as np

from ..model.builder import ModelBuilder
from ..errors import ModelError
from ..core.joints import fn
from ..core.joints import specs as J
from ..model.model import Model
from ..core.transform import Transform, rpy_matrix

_PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the repository's data/ is installed as the package's data/ (pyproject maps it); a source
# checkout reads it where it is
DATA_DIR = next((d for d in (os.path.join(_PKG, "data"), os.path.join(os.path.dirname(_PKG), "data"))
                 if os.path.isdir(d)), os.path.join(_PKG, "data"))

ROTATION_PARAMS = tuple(J.EULER_SEQUENCES) + tuple(s.lower() for s in J.EULER_SEQUENCES) + (
    "quaternion", "rotvec", "rodrigues", "mrp")


# ---------------------------------------------------------------------------- inertia helpers
def cylinder_inertia(mass, radius, length, axis=2):
    """Principal inertia (3x3) of a solid cylinder about its centre, its axis along ``axis``."""
    a = mass * (3.0 * radius ** 2 + length ** 2) / 12.0
    d = np.full(3, a)
    d[axis] = 0.5 * mass * radius ** 2
    return np.diag(d)


def box_inertia(mass, sx, sy, sz):
    """Inertia (3x3) of a solid box of edge lengths sx, sy, sz about its centre."""
    return np.diag([mass * (sy ** 2 + sz ** 2), mass * (sx ** 2 + sz ** 2), mass * (sx ** 2 + sy ** 2)]) / 12.0


def random_rotation(rng):
    """Uniformly distributed rotation matrix."""
    w, x, y, z = rng.normal(size=4)
    n = np.sqrt(w * w + x * x + y * y + z * z)
    w, x, y, z = w / n, x / n, y / n, z / n
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def random_unit(rng):
    v = rng.normal(size=3)
    return v / np.linalg.norm(v)


# ---------------------------------------------------------------------------- joint kinds
KINDS = ("fixed", "revolute", "prismatic", "helical", "cylindrical", "universal", "planar",
         "translation", "spherical", "free", "composite", "rheonomic")


def joint_from_name(name):
    """A joint spec from a short name: a kind of ``KINDS`` with default axes (revolute about y,
    prismatic/helical/cylindrical along z, universal about x then y, spherical and free with a
    quaternion), a rotation parameterisation (``"ZYX"``, ``"zxz"``, ``"rotvec"`` ...: Spherical),
    or ``"spherical:ZYX"`` / ``"free:ZYX"``.  ``"composite"`` is a knee-like joint (rotation plus
    spline-coupled translation) and ``"rheonomic"`` a rotation about z driven by time plus the
    coordinate."""
    if not isinstance(name, str):
        raise ModelError(f"joint must be a joint spec or a name, got {name!r}")
    base, _, param = name.partition(":")
    key = base.lower()
    if param:
        if key == "spherical":
            return J.Spherical(param)
        if key == "free":
            return J.Free(param)
        raise ModelError(f"joint {name!r}: only 'spherical:PARAM' and 'free:PARAM' take a parameterisation")
    simple = {"fixed": J.Fixed, "planar": J.Planar, "translation": J.Translation,
              "revolute": lambda: J.Revolute((0.0, 1.0, 0.0)), "continuous": lambda: J.Revolute((0.0, 1.0, 0.0)),
              "prismatic": lambda: J.Prismatic((0.0, 0.0, 1.0)),
              "helical": lambda: J.Helical((0.0, 0.0, 1.0), 0.05),
              "cylindrical": lambda: J.Cylindrical((0.0, 0.0, 1.0)),
              "universal": lambda: J.Universal((1.0, 0.0, 0.0), (0.0, 1.0, 0.0)),
              "spherical": lambda: J.Spherical("quaternion"), "free": lambda: J.Free("quaternion"),
              "composite": lambda: J.Composite(
                  [J.Rot((0.0, 1.0, 0.0), fn.Linear([1.0])),
                   J.Trans((1.0, 0.0, 0.0), fn.Spline(0, [-1.0, 0.0, 1.0, 2.0], [0.0, 0.01, 0.015, 0.01]))], 1),
              "rheonomic": lambda: J.Composite(
                  [J.Rot((0.0, 0.0, 1.0), fn.Sum(fn.Linear([1.0]), fn.Harmonic(0.3, 2.0)))], 1)}
    if key in simple:
        return simple[key]()
    if name in ROTATION_PARAMS:
        return J.Spherical(name)
    raise ModelError(f"unknown joint name {name!r}: one of {', '.join(KINDS)}, a rotation "
                     "parameterisation such as 'ZYX' or 'quaternion', or 'spherical:PARAM' / 'free:PARAM'")


def _random_function_of(rng, k, time_drive):
    """A smooth function of coordinate k with a slope near 1 (a joint's main motion), plus a
    time drive when ``time_drive``."""
    choice = rng.integers(3 if time_drive else 2)
    if choice == 0:
        return fn.Linear(np.eye(k + 1)[k] * rng.uniform(0.5, 1.5), offset=rng.uniform(-0.2, 0.2))
    if choice == 1:
        return fn.Poly(k, [rng.uniform(-0.2, 0.2), rng.uniform(0.5, 1.5), rng.uniform(-0.1, 0.1)])
    return fn.Sum(fn.Linear(np.eye(k + 1)[k]), fn.Harmonic(rng.uniform(0.05, 0.2), rng.uniform(0.5, 3.0),
                                                             rng.uniform(-np.pi, np.pi)))


def random_composite(rng, time_drive=False):
    """A random Composite joint: one main motion per coordinate about or along independent axes,
    plus spline/polynomial couplings and, with ``time_drive``, time-driven motions (nq may be 0)."""
    nq = int(rng.integers(0 if time_drive else 1, 4))
    E = random_rotation(rng)        # independent axes: the columns of a rotation
    kinds = rng.integers(2, size=3)
    motions = [(J.Rot if kinds[k] == 0 else J.Trans)(E[:, k], _random_function_of(rng, k, time_drive))
               for k in range(nq)]
    for _ in range(int(rng.integers(1 if nq == 0 or not time_drive else 0, 3))):
        cls = J.Rot if rng.integers(2) == 0 else J.Trans
        scale = 0.2 if cls is J.Trans else 0.5
        if nq > 0 and (not time_drive or rng.integers(2) == 0):
            k = int(rng.integers(nq))
            # knots at least 0.3 apart, so that the spline's slopes stay moderate
            x = rng.uniform(-2.0, -1.0) + np.cumsum(rng.uniform(0.3, 1.0, size=int(rng.integers(3, 7))))
            f = fn.Spline(k, x, scale * rng.uniform(-1.0, 1.0, size=len(x)))
        else:
            f = fn.Sum(fn.TimePoly(scale * rng.uniform(-1.0, 1.0, size=3)),
                       fn.Harmonic(scale * rng.uniform(0.2, 1.0), rng.uniform(0.5, 4.0), rng.uniform(-np.pi, np.pi)))
        motions.insert(int(rng.integers(len(motions) + 1)), cls(random_unit(rng), f))
    if time_drive and not any(m.f.depends_on_time() for m in motions):
        motions.append(J.Rot(random_unit(rng), fn.Harmonic(0.3, rng.uniform(0.5, 4.0))))
    return J.Composite(motions, nq)


def random_joint(kind, rng):
    """A random joint spec of one of ``KINDS`` (random axes, pitches, parameterisations)."""
    if isinstance(kind, J.JointSpec):
        return kind
    if kind == "fixed":
        return J.Fixed()
    if kind == "revolute":
        return J.Revolute(random_unit(rng))
    if kind == "prismatic":
        return J.Prismatic(random_unit(rng))
    if kind == "helical":
        return J.Helical(random_unit(rng), rng.uniform(-0.2, 0.2))
    if kind == "cylindrical":
        return J.Cylindrical(random_unit(rng))
    if kind == "universal":
        E = random_rotation(rng)
        return J.Universal(E[:, 0], E[:, 1])
    if kind == "planar":
        return J.Planar()
    if kind == "translation":
        return J.Translation()
    if kind in ("spherical", "free"):
        # half Euler sequences (24 of them), half the four other parameterisations
        pool = ROTATION_PARAMS[:24] if rng.random() < 0.5 else ROTATION_PARAMS[24:]
        param = pool[int(rng.integers(len(pool)))]
        return (J.Spherical if kind == "spherical" else J.Free)(param)
    if kind == "composite":
        return random_composite(rng, time_drive=False)
    if kind == "rheonomic":
        return random_composite(rng, time_drive=True)
    return joint_from_name(kind)


# ---------------------------------------------------------------------------- generators
def chain(n, joint=None, link_length=0.5, mass=1.0, gravity=(0.0, 0.0, -9.81)):
    """Serial chain of ``n`` equal links hanging along -z from the world origin.

    ``joint``: a joint spec, a name for ``joint_from_name`` (default ``"revolute"``: about y, an
    n-link planar pendulum), or a list of n of those.  Each link is a solid rod of ``mass`` and
    ``link_length`` (radius length/20) whose body origin is at its joint; body i+1 hangs at
    (0, 0, -link_length) of body i.  Bodies "link1".."linkN", joints "joint1".."jointN"."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ModelError(f"chain: n must be a non-negative integer, got {n!r}")
    joints = list(joint) if isinstance(joint, (list, tuple)) else [joint] * n
    if len(joints) != n:
        raise ModelError(f"chain: {len(joints)} joints given for {n} bodies")
    L = float(link_length)
    inertia = cylinder_inertia(mass, L / 20.0, L)
    b = ModelBuilder(gravity=gravity)
    for i, jt in enumerate(joints):
        spec = jt if isinstance(jt, J.JointSpec) else joint_from_name("revolute" if jt is None else jt)
        b.add_body(f"link{i + 1}", parent=i, joint=spec, joint_name=f"joint{i + 1}",
                   placement=Transform(translation=(0.0, 0.0, 0.0 if i == 0 else -L)),
                   mass=mass, com=(0.0, 0.0, -0.5 * L), inertia=inertia)
    return b.build()


def is_depth_first(parent):
    """Whether a parents-first numbering is a depth-first preorder: in a preorder the parent of
    each body is the previous body or one of its ancestors."""
    for i in range(2, len(parent)):
        a = i - 1
        while a > 0 and a != parent[i]:
            a = parent[a]
        if a != parent[i]:
            return False
    return True


def random_tree(n, seed=0, joints=None, limits=False, gravity=(0.0, 0.0, -9.81)):
    """Seeded random tree of ``n`` bodies.

    joints: the kinds to draw from (names of ``KINDS``, other ``joint_from_name`` names, or joint
    specs), default all of ``KINDS`` (composite joints with spline couplings and time drives
    included).  Placements P and C have random rotations and offsets; masses, COMs and inertias
    are random and valid.  Bodies are numbered in a random parents-first order which, when the
    tree allows it, is not depth-first.  limits=True adds random coordinate, velocity and effort
    limits (some coordinates unlimited).  Bodies "b1".., joints "j1"..."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ModelError(f"random_tree: n must be a non-negative integer, got {n!r}")
    rng = np.random.default_rng(seed)
    kinds = list(KINDS if joints is None else joints)
    if not kinds:
        raise ModelError("random_tree: joints must not be empty")
    # random recursive tree, then a random parents-first numbering, retried while depth-first
    tree_parent = [-1] + [int(rng.integers(i)) for i in range(1, n + 1)]
    children = [[] for _ in range(n + 1)]
    for i in range(1, n + 1):
        children[tree_parent[i]].append(i)
    for _attempt in range(20):
        order, ready = [0], list(children[0])
        while ready:
            node = ready.pop(int(rng.integers(len(ready))))
            order.append(node)
            ready.extend(children[node])
        new = {old: k for k, old in enumerate(order)}
        parent = [-1] + [new[tree_parent[old]] for old in order[1:]]
        if not is_depth_first(parent):
            break
    b = ModelBuilder(gravity=gravity)
    for i in range(1, n + 1):
        spec = random_joint(kinds[int(rng.integers(len(kinds)))], rng)
        P = Transform(random_rotation(rng), rng.normal(scale=0.3, size=3))
        C = Transform(random_rotation(rng), rng.normal(scale=0.3, size=3))
        m = rng.uniform(0.5, 2.0)
        Rb = random_rotation(rng)
        inertia = Rb @ box_inertia(m, *rng.uniform(0.1, 0.6, size=3)) @ Rb.T
        lims = {}
        if limits:
            lo = [None if rng.random() < 0.3 else -rng.uniform(0.5, 3.0) for _ in range(spec.nq)]
            lims = dict(q_lower=lo, q_upper=[None if x is None else rng.uniform(0.5, 3.0) for x in lo],
                        v_limit=[rng.uniform(1.0, 10.0) for _ in range(spec.nv)],
                        effort_limit=[None if rng.random() < 0.3 else rng.uniform(5.0, 100.0) for _ in range(spec.nv)])
        b.add_body(f"b{i}", parent=parent[i], joint=spec, joint_name=f"j{i}", placement=P, child_placement=C,
                   mass=m, com=rng.normal(scale=0.1, size=3), inertia=0.5 * (inertia + inertia.T), **lims)
    return b.build()


# ---------------------------------------------------------------------------- shipped examples
# a quarter turn about x, written exactly (rpy_matrix leaves 1e-16 residues)
_RX90 = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])


def spherical_paper():
    """The paper's example: two bodies joined by a spherical joint with intrinsic Z-X-Z Euler
    angles (q = [psi, theta, phi], R = Rz(psi) Rx(theta) Rz(phi)).  The inboard body B1 turns
    about the vertical (a turntable), so the inboard frame itself rotates; the joint frames P and
    C are offset and turned in their bodies."""
    b = ModelBuilder()
    b.add_body("B1", joint=J.Revolute((0.0, 0.0, 1.0)), joint_name="turntable",
               mass=5.0, com=(0.0, 0.0, 0.05), inertia=cylinder_inertia(5.0, 0.3, 0.1))
    b.add_body("B2", parent="B1", joint=J.Spherical("ZXZ"), joint_name="spherical",
               placement=Transform(rpy_matrix(0.0, 0.0, np.pi / 6), (0.2, 0.0, 0.5)),
               child_placement=Transform(_RX90, (0.0, 0.0, 0.4)),
               mass=1.0, com=(0.0, 0.0, 0.0), inertia=cylinder_inertia(1.0, 0.02, 0.8))
    return b.build()


# 7-DOF arm: the joint placements and limits of Franka Emika's Panda, link masses and inertias
# of the order of published identifications for it.
_ARM7_JOINTS = (  # origin xyz, origin rpy, lower, upper, velocity, effort
    ((0.0, 0.0, 0.333), (0.0, 0.0, 0.0), -2.8973, 2.8973, 2.175, 87.0),
    ((0.0, 0.0, 0.0), (-np.pi / 2, 0.0, 0.0), -1.7628, 1.7628, 2.175, 87.0),
    ((0.0, -0.316, 0.0), (np.pi / 2, 0.0, 0.0), -2.8973, 2.8973, 2.175, 87.0),
    ((0.0825, 0.0, 0.0), (np.pi / 2, 0.0, 0.0), -3.0718, -0.0698, 2.175, 87.0),
    ((-0.0825, 0.384, 0.0), (-np.pi / 2, 0.0, 0.0), -2.8973, 2.8973, 2.61, 12.0),
    ((0.0, 0.0, 0.0), (np.pi / 2, 0.0, 0.0), -0.0175, 3.7525, 2.61, 12.0),
    ((0.088, 0.0, 0.0), (np.pi / 2, 0.0, 0.0), -2.8973, 2.8973, 2.61, 12.0),
)
_ARM7_LINKS = (  # mass, com, (ixx, ixy, ixz, iyy, iyz, izz) about the com in link axes
    (2.92, (-0.0256, 0.0, 0.0573), (0.0078, 0.0, -0.0013, 0.0109, 0.0, 0.0102)),
    (4.970684, (0.003875, 0.002081, -0.04762), (0.70337, -0.000139, 0.006772, 0.70661, 0.019169, 0.009117)),
    (0.646926, (-0.003141, -0.02872, 0.003495), (0.007962, -0.003925, 0.010254, 0.02811, 0.000704, 0.025995)),
    (3.228604, (0.027518, 0.039252, -0.066502), (0.037242, -0.004761, -0.011396, 0.036155, -0.012805, 0.01083)),
    (3.587895, (-0.05317, 0.104419, 0.027454), (0.025853, 0.007796, -0.001332, 0.019552, 0.008641, 0.028323)),
    (1.225946, (-0.011953, 0.041065, -0.038437), (0.035549, -0.002117, -0.004037, 0.029474, 0.000229, 0.008627)),
    (1.666555, (0.060149, -0.014117, -0.010517), (0.001964, 0.000109, -0.001158, 0.004354, 0.000341, 0.005433)),
    (0.735522, (0.010517, -0.004252, 0.061597), (0.012516, -0.000428, -0.001196, 0.010027, -0.000741, 0.004815)),
)
_ARM7_FLANGE = 0.107


def _tensor(i6):
    xx, xy, xz, yy, yz, zz = i6
    return np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])


def arm7():
    """A 7-DOF revolute arm (Panda-like kinematics): link0 fixed to the world, link1..link7 on
    revolute joints joint1..joint7 about their z axes with position, velocity and effort limits,
    and a massless flange (link8, fixed).  ``data/arm7.urdf`` describes the same arm."""
    b = ModelBuilder()
    m, c, i6 = _ARM7_LINKS[0]
    b.add_body("link0", joint=J.Fixed(), joint_name="base_joint", mass=m, com=c, inertia=_tensor(i6))
    for k, (xyz, rpy, lo, hi, vel, eff) in enumerate(_ARM7_JOINTS):
        m, c, i6 = _ARM7_LINKS[k + 1]
        b.add_body(f"link{k + 1}", parent=f"link{k}", joint=J.Revolute((0.0, 0.0, 1.0)), joint_name=f"joint{k + 1}",
                   placement=Transform(rpy_matrix(*rpy), xyz), mass=m, com=c, inertia=_tensor(i6),
                   q_lower=[lo], q_upper=[hi], v_limit=[vel], effort_limit=[eff])
    b.add_body("link8", parent="link7", joint=J.Fixed(), joint_name="joint8",
               placement=Transform(translation=(0.0, 0.0, _ARM7_FLANGE)))
    return b.build()


def arm7_urdf():
    """URDF text of ``arm7()`` (a root link ``world``; numbers written exactly)."""
    r = repr

    def vec(v):
        return " ".join(r(float(x)) for x in v)

    def inertial(m, c, i6):
        keys = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
        return (f'    <inertial>\n      <origin xyz="{vec(c)}" rpy="0 0 0"/>\n      <mass value="{r(m)}"/>\n'
                f'      <inertia {" ".join(f"{k}={chr(34)}{r(v)}{chr(34)}" for k, v in zip(keys, i6))}/>\n'
                '    </inertial>\n')

    out = ['<?xml version="1.0"?>', "<!-- ejce_nb's arm7: a 7-DOF arm with Panda-like kinematics;"
           " the same model as arm7.json -->", '<robot name="arm7">', '  <link name="world"/>']
    for k, (m, c, i6) in enumerate(_ARM7_LINKS):
        out.append(f'  <link name="link{k}">\n{inertial(m, c, i6)}  </link>')
    out.append('  <link name="link8"/>')
    out.append('  <joint name="base_joint" type="fixed">\n    <parent link="world"/>\n    <child link="link0"/>\n'
               '  </joint>')
    for k, (xyz, rpy, lo, hi, vel, eff) in enumerate(_ARM7_JOINTS):
        out.append(f'  <joint name="joint{k + 1}" type="revolute">\n    <parent link="link{k}"/>\n'
                   f'    <child link="link{k + 1}"/>\n    <origin xyz="{vec(xyz)}" rpy="{vec(rpy)}"/>\n'
                   f'    <axis xyz="0 0 1"/>\n    <limit lower="{r(lo)}" upper="{r(hi)}" velocity="{r(vel)}"'
                   f' effort="{r(eff)}"/>\n  </joint>')
    out.append(f'  <joint name="joint8" type="fixed">\n    <parent link="link7"/>\n    <child link="link8"/>\n'
               f'    <origin xyz="0 0 {r(_ARM7_FLANGE)}" rpy="0 0 0"/>\n  </joint>')
    out.append("</robot>")
    return "\n".join(out) + "\n"


# quadruped: trunk (mass, box size), hip offsets of the four legs in the trunk frame, the leg's
# links (mass, cylinder radius, length), and its joints' limits (lower, upper, velocity, effort)
_QUAD_TRUNK = (12.0, (0.6, 0.3, 0.15))
_QUAD_LEGS = (("lf", (0.3, 0.15, 0.0)), ("rf", (0.3, -0.15, 0.0)), ("lh", (-0.3, 0.15, 0.0)),
              ("rh", (-0.3, -0.15, 0.0)))
_QUAD_HIP = (0.6, 0.04, 0.08)         # a short cylinder along x
_QUAD_THIGH = (1.0, 0.03, 0.3)
_QUAD_SHANK = (0.3, 0.015, 0.3)
_QUAD_LIMITS = {"hip": (-0.7, 0.7, 20.0, 40.0), "thigh": (-2.0, 2.0, 20.0, 40.0), "knee": (-2.7, -0.1, 20.0, 60.0)}


def quadruped_urdf():
    """URDF text of a small quadruped for floating-base loading: a box trunk and four legs, each
    a hip abduction (about x), a hip flexion (about y) and a knee (about y) with limits, the thigh
    and shank hanging along -z, and a massless foot on a fixed joint.  The root link ``trunk``
    is not ``world``: ``load_urdf(..., floating_base="quaternion")`` gives nq 19, nv 18."""
    def r(x):
        return repr(float(x))

    def vec(v):
        return " ".join(r(float(x)) for x in v)

    def inertial(m, c, I, rpy=(0.0, 0.0, 0.0)):
        return (f'    <inertial>\n      <origin xyz="{vec(c)}" rpy="{vec(rpy)}"/>\n      <mass value="{r(m)}"/>\n'
                f'      <inertia ixx="{r(I[0, 0])}" ixy="0.0" ixz="0.0" iyy="{r(I[1, 1])}" iyz="0.0"'
                f' izz="{r(I[2, 2])}"/>\n    </inertial>\n')

    def joint(name, kind, parent, child, xyz, axis=None, limits=None):
        body = f'    <parent link="{parent}"/>\n    <child link="{child}"/>\n    <origin xyz="{vec(xyz)}" rpy="0 0 0"/>\n'
        if axis is not None:
            body += f'    <axis xyz="{axis}"/>\n'
        if limits is not None:
            lo, hi, vel, eff = limits
            body += f'    <limit lower="{r(lo)}" upper="{r(hi)}" velocity="{r(vel)}" effort="{r(eff)}"/>\n'
        return f'  <joint name="{name}" type="{kind}">\n{body}  </joint>'

    m, size = _QUAD_TRUNK
    out = ['<?xml version="1.0"?>', "<!-- ejce_nb's quadruped: a box trunk and four three-joint legs -->",
           '<robot name="quadruped">', f'  <link name="trunk">\n{inertial(m, (0.0, 0.0, 0.0), box_inertia(m, *size))}  </link>']
    joints = []
    for leg, hip_xyz in _QUAD_LEGS:
        side = 1.0 if leg[0] == "l" else -1.0
        hm, hr, hl = _QUAD_HIP
        # the hip cylinder lies along x: its principal frame is turned a quarter about y
        out.append(f'  <link name="{leg}_hip">\n{inertial(hm, (0.0, side * 0.02, 0.0), cylinder_inertia(hm, hr, hl), (0.0, np.pi / 2, 0.0))}  </link>')
        tm, tr, tl = _QUAD_THIGH
        out.append(f'  <link name="{leg}_thigh">\n{inertial(tm, (0.0, 0.0, -tl / 2), cylinder_inertia(tm, tr, tl))}  </link>')
        sm, sr, sl = _QUAD_SHANK
        out.append(f'  <link name="{leg}_shank">\n{inertial(sm, (0.0, 0.0, -sl / 2), cylinder_inertia(sm, sr, sl))}  </link>')
        out.append(f'  <link name="{leg}_foot"/>')
        joints += [joint(f"{leg}_hip_abduction", "revolute", "trunk", f"{leg}_hip", hip_xyz, "1 0 0", _QUAD_LIMITS["hip"]),
                   joint(f"{leg}_hip_flexion", "revolute", f"{leg}_hip", f"{leg}_thigh", (0.0, side * 0.08, 0.0), "0 1 0",
                         _QUAD_LIMITS["thigh"]),
                   joint(f"{leg}_knee", "revolute", f"{leg}_thigh", f"{leg}_shank", (0.0, 0.0, -_QUAD_THIGH[2]), "0 1 0",
                         _QUAD_LIMITS["knee"]),
                   joint(f"{leg}_foot_joint", "fixed", f"{leg}_shank", f"{leg}_foot", (0.0, 0.0, -_QUAD_SHANK[2]))]
    out += joints
    out.append("</robot>")
    return "\n".join(out) + "\n"


def humanoid():
    """A 70-odd kg humanoid: free-flyer pelvis (quaternion) 1 m above the ground, a two-axis
    waist (Universal), a Z-Y-X Euler neck and hips, quaternion shoulders, revolute elbows and
    knees (flexion positive), two-axis ankles (Universal) and fixed hands: 15 bodies, nq 34, nv 31."""
    b = ModelBuilder()
    b.add_body("pelvis", joint=J.Free("quaternion"), joint_name="root",
               placement=Transform(translation=(0.0, 0.0, 1.0)),
               mass=11.8, inertia=box_inertia(11.8, 0.2, 0.3, 0.2))
    b.add_body("torso", parent="pelvis", joint=J.Universal((0.0, 1.0, 0.0), (1.0, 0.0, 0.0)), joint_name="waist",
               placement=Transform(translation=(0.0, 0.0, 0.1)),
               mass=26.0, com=(0.0, 0.0, 0.25), inertia=box_inertia(26.0, 0.2, 0.35, 0.5),
               q_lower=[-0.5, -0.5], q_upper=[1.2, 0.5])
    b.add_body("head", parent="torso", joint=J.Spherical("ZYX"), joint_name="neck",
               placement=Transform(translation=(0.0, 0.0, 0.5)),
               mass=5.0, com=(0.0, 0.0, 0.12), inertia=np.eye(3) * 0.4 * 5.0 * 0.1 ** 2)
    for side, s in (("l", 1.0), ("r", -1.0)):
        b.add_body(f"{side}_upper_arm", parent="torso", joint=J.Spherical("quaternion"),
                   joint_name=f"{side}_shoulder", placement=Transform(translation=(0.0, s * 0.2, 0.45)),
                   mass=2.0, com=(0.0, 0.0, -0.15), inertia=cylinder_inertia(2.0, 0.04, 0.3))
        b.add_body(f"{side}_forearm", parent=f"{side}_upper_arm", joint=J.Revolute((0.0, -1.0, 0.0)),
                   joint_name=f"{side}_elbow", placement=Transform(translation=(0.0, 0.0, -0.3)),
                   mass=1.2, com=(0.0, 0.0, -0.13), inertia=cylinder_inertia(1.2, 0.035, 0.26),
                   q_lower=[0.0], q_upper=[2.5])
        b.add_body(f"{side}_hand", parent=f"{side}_forearm", joint=J.Fixed(), joint_name=f"{side}_wrist",
                   placement=Transform(translation=(0.0, 0.0, -0.27)),
                   mass=0.45, com=(0.0, 0.0, -0.05), inertia=box_inertia(0.45, 0.03, 0.08, 0.1))
    for side, s in (("l", 1.0), ("r", -1.0)):
        b.add_body(f"{side}_thigh", parent="pelvis", joint=J.Spherical("ZYX"), joint_name=f"{side}_hip",
                   placement=Transform(translation=(0.0, s * 0.1, -0.08)),
                   mass=10.0, com=(0.0, 0.0, -0.2), inertia=cylinder_inertia(10.0, 0.07, 0.42))
        b.add_body(f"{side}_shin", parent=f"{side}_thigh", joint=J.Revolute((0.0, 1.0, 0.0)),
                   joint_name=f"{side}_knee", placement=Transform(translation=(0.0, 0.0, -0.42)),
                   mass=3.2, com=(0.0, 0.0, -0.19), inertia=cylinder_inertia(3.2, 0.05, 0.4),
                   q_lower=[0.0], q_upper=[2.4])
        b.add_body(f"{side}_foot", parent=f"{side}_shin", joint=J.Universal((0.0, 1.0, 0.0), (1.0, 0.0, 0.0)),
                   joint_name=f"{side}_ankle", placement=Transform(translation=(0.0, 0.0, -0.42)),
                   mass=1.0, com=(0.05, 0.0, -0.04), inertia=box_inertia(1.0, 0.22, 0.09, 0.06),
                   q_lower=[-0.8, -0.4], q_upper=[0.5, 0.4])
    return b.build()


# knee translations of the tibia as splines of the knee angle (negative in flexion), in the style
# of OpenSim's gait models: anterior (x) and vertical (y) position of the tibia frame in the femur
_KNEE_X = ((-2.0944, -1.74533, -1.39626, -1.0472, -0.698132, -0.349066, -0.174533, 0.197344, 0.337395,
            0.490178, 1.52146, 2.0944),
           (-0.0032, 0.00179, 0.00411, 0.0041, 0.00212, -0.001, -0.0031, -0.005227, -0.005435, -0.005574,
            -0.005435, -0.00525))
_KNEE_Y = ((-2.0944, -1.22173, -0.523599, -0.349066, -0.174533, 0.159149, 2.0944),
           (-0.4226, -0.4082, -0.399, -0.3976, -0.3966, -0.395264, -0.396))


def knee():
    """A leg with a knee-like joint.  Segment frames have y up (as in OpenSim); the hip turns them
    into the world's z-up axes.  femur: hip flexion (Revolute about z); tibia: the knee, a
    Composite of the tibia's anterior and vertical translations as natural cubic splines of the
    knee angle followed by the rotation by that angle about z (nq 1); foot: an ankle about an
    oblique axis."""
    b = ModelBuilder()
    b.add_body("femur", joint=J.Revolute((0.0, 0.0, 1.0)), joint_name="hip_flexion",
               placement=Transform(_RX90, (0.0, 0.0, 0.93)),
               mass=9.30149, com=(0.0, -0.17, 0.0), inertia=np.diag([0.1339, 0.0351, 0.1412]),
               q_lower=[-0.7], q_upper=[2.1])
    knee_joint = J.Composite([J.Trans((1.0, 0.0, 0.0), fn.Spline(0, *_KNEE_X)),
                              J.Trans((0.0, 1.0, 0.0), fn.Spline(0, *_KNEE_Y)),
                              J.Rot((0.0, 0.0, 1.0), fn.Linear([1.0]))], 1)
    b.add_body("tibia", parent="femur", joint=knee_joint, joint_name="knee",
               mass=3.7075, com=(0.0, -0.1867, 0.0), inertia=np.diag([0.0504, 0.0051, 0.0511]),
               q_lower=[-2.0944], q_upper=[0.174533])
    axis = np.array([-0.10501355, -0.17402245, 0.97912632])
    b.add_body("foot", parent="tibia", joint=J.Revolute(axis / np.linalg.norm(axis)), joint_name="ankle",
               placement=Transform(translation=(0.0, -0.43, 0.0)),
               mass=1.25, com=(0.1, 0.03, 0.0), inertia=np.diag([0.0014, 0.0039, 0.0041]),
               q_lower=[-0.698], q_upper=[0.524])
    return b.build()


def driven():
    """A rheonomic mechanism: a shaker table oscillating along x (x = 0.05 sin(3 pi t)), a crank
    on it turning at a prescribed 0.5 rev/s about y (both nq = 0), and a passive double pendulum
    hanging from the crank pin (nq 2)."""
    b = ModelBuilder()
    b.add_body("shaker", joint=J.Composite([J.Trans((1.0, 0.0, 0.0), fn.Harmonic(0.05, 3.0 * np.pi))], 0),
               joint_name="shake", placement=Transform(translation=(0.0, 0.0, 1.0)),
               mass=2.0, inertia=box_inertia(2.0, 0.3, 0.3, 0.05))
    b.add_body("crank", parent="shaker", joint=J.Composite([J.Rot((0.0, 1.0, 0.0), fn.TimePoly([0.0, np.pi]))], 0),
               joint_name="drive", placement=Transform(translation=(0.0, -0.05, 0.0)),
               mass=0.5, com=(0.05, 0.0, 0.0), inertia=cylinder_inertia(0.5, 0.01, 0.12, axis=0))
    b.add_body("pendulum1", parent="crank", joint=J.Revolute((0.0, 1.0, 0.0)), joint_name="pin",
               placement=Transform(translation=(0.1, -0.03, 0.0)),
               mass=1.0, com=(0.0, 0.0, -0.25), inertia=cylinder_inertia(1.0, 0.02, 0.5))
    b.add_body("pendulum2", parent="pendulum1", joint=J.Revolute((0.0, 1.0, 0.0)), joint_name="hinge",
               placement=Transform(translation=(0.0, 0.0, -0.5)),
               mass=1.0, com=(0.0, 0.0, -0.25), inertia=cylinder_inertia(1.0, 0.02, 0.5))
    return b.build()


SHIPPED = {"spherical_paper": spherical_paper, "arm7": arm7, "humanoid": humanoid, "knee": knee,
           "driven": driven}
SHIPPED_URDF = {"arm7.urdf": arm7_urdf, "quadruped.urdf": quadruped_urdf}


def shipped_path(name):
    """Path of a shipped model file (``"arm7"`` -> .../ejce_nb/data/arm7.json)."""
    return os.path.join(DATA_DIR, name if name.endswith((".json", ".urdf", ".xml", ".osim")) else name + ".json")


def load(name_or_path, **options):
    """A shipped model by name (``"arm7"``, see ``SHIPPED``; ``"cartpole.xml"``,
    ``"knee_patella.osim"``), or a model file: ``.json`` (the ejce_nb format), ``.urdf``
    (``options`` go to ``load_urdf``), ``.xml`` (MJCF, through ``load_mjcf``, which needs the
    ``mujoco`` package; options go to it) or ``.osim`` (OpenSim; options go to ``load_opensim``)."""
    path = os.fspath(name_or_path) if isinstance(name_or_path, os.PathLike) else name_or_path
    if not isinstance(path, str):
        raise ModelError(f"load expects a model name or a file path, got {name_or_path!r}")
    if path in SHIPPED or path in SHIPPED_URDF or (os.sep not in path and not os.path.exists(path)
                                                    and os.path.isfile(shipped_path(path))):
        path = shipped_path(path)       # also the shipped files that need user joints (scapula), MJCF, OpenSim
    if path.lower().endswith(".osim"):
        from .opensim import load_opensim
        return load_opensim(path, **options)
    if path.lower().endswith(".urdf"):
        from .urdf import load_urdf
        return load_urdf(path, **options)
    if path.lower().endswith(".xml"):
        from .mjcf import load_mjcf
        return load_mjcf(path, **options)
    if options:
        raise ModelError(f"{path}: options {sorted(options)} apply to URDF, MJCF and OpenSim files only")
    if path.lower().endswith(".json") or os.path.exists(path):
        return Model.from_json(path)
    raise ModelError(f"{name_or_path!r} is neither a shipped model ({', '.join(shipped_names())}) "
                     "nor a .json, .urdf, .xml (MJCF) or .osim file")


def shipped_names():
    """Names of every model file shipped in the package's data directory (those of ``SHIPPED``,
    the URDF files and the ones that need user joints, such as ``scapula``)."""
    try:
        files = sorted(os.listdir(DATA_DIR))
    except OSError:
        files = []
    extra = [f[:-5] for f in files if f.endswith(".json") and f[:-5] not in SHIPPED]
    return list(SHIPPED) + extra + [f for f in files if f.endswith((".urdf", ".xml", ".osim"))]


def write_shipped(directory):
    """Write every shipped model (JSON) and URDF into ``directory``."""
    os.makedirs(directory, exist_ok=True)
    for name, make in SHIPPED.items():
        make().to_json(os.path.join(directory, name + ".json"))
    for name, make in SHIPPED_URDF.items():
        with open(os.path.join(directory, name), "w") as f:
            f.write(make())


def random_states(model, n, rng=None, spread=1.0):
    """n random states (q, qd, qdd) of shapes (n, nq), (n, nv), (n, nv) for sweeps and benchmarks:
    coordinates uniform within +-spread of the neutral configuration (quaternions kept at the
    neutral unit quaternion), velocities and accelerations standard normal."""
    rng = np.random.default_rng(rng)
    q = np.tile(model.neutral(), (n, 1))
    free = np.ones(model.nq, dtype=bool)
    for _, sl in model.quaternion_blocks():
        free[sl] = False
    q[:, free] += rng.uniform(-spread, spread, (n, int(free.sum())))
    return q, rng.normal(size=(n, model.nv)), rng.normal(size=(n, model.nv))


if __name__ == "__main__":
    for d in sys.argv[1:] or [DATA_DIR]:
        write_shipped(d)
