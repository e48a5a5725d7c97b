"""Model generators and the models shipped with the package.

* ``chain(n, joint)``, ``random_tree(n, seed)``, ``random_states(model, n)``, ...: the generators
  (``io.generators``), under this module's name too.
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
from .generators import (KINDS, ROTATION_PARAMS, box_inertia, chain, cylinder_inertia, is_depth_first,  # noqa: F401
                         joint_from_name, random_composite, random_joint, random_rotation, random_states,
                         random_tree, random_unit)
from .mjcf import load_mjcf
from .opensim import load_opensim
from .urdf import load_urdf

_PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the repository's data/ is installed as the package's data/ (pyproject maps it); a source
# checkout reads it where it is
DATA_DIR = next((d for d in (os.path.join(_PKG, "data"), os.path.join(os.path.dirname(_PKG), "data"))
                 if os.path.isdir(d)), os.path.join(_PKG, "data"))

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
    """A shipped model by name (``"arm7"``, ``"humanoid"``, ``"knee"``, ``"driven"``,
    ``"spherical_paper"``, ``"arm7.urdf"``, ``"quadruped.urdf"``, ``"cartpole.xml"``,
    ``"knee_patella.osim"``; every file of ``shipped_names()``), or a model file: ``.json`` (the
    ejce_nb format, ``Model.from_json``), ``.urdf``
    (``options`` go to ``load_urdf``), ``.xml`` (MJCF, through ``load_mjcf``, which needs the
    ``mujoco`` package; options go to it) or ``.osim`` (OpenSim; options go to ``load_opensim``)."""
    path = os.fspath(name_or_path) if isinstance(name_or_path, os.PathLike) else name_or_path
    if not isinstance(path, str):
        raise ModelError(f"load expects a model name or a file path, got {name_or_path!r}")
    if path in SHIPPED or path in SHIPPED_URDF or (os.sep not in path and not os.path.exists(path)
                                                    and os.path.isfile(shipped_path(path))):
        path = shipped_path(path)       # also the shipped files that need user joints (scapula), MJCF, OpenSim
    if path.lower().endswith(".osim"):
        return load_opensim(path, **options)
    if path.lower().endswith(".urdf"):
        return load_urdf(path, **options)
    if path.lower().endswith(".xml"):
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


if __name__ == "__main__":
    for d in sys.argv[1:] or [DATA_DIR]:
        write_shipped(d)
