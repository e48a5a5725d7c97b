"""URDF loading: every element against the same robot built by hand, malformed files, mimic
joints, inertias as files write them, and Pinocchio as an outside reference: random trees and
every robot of the example-robot-data package, fixed and floating base."""
import re
import warnings

import numpy as np
import pytest

import ejce_nb as ej
from conftest import assert_same_model, pinocchio as pin, requires_pinocchio
from ejce_nb import models
from ejce_nb.model.model import ARRAYS
from ejce_nb.core.transform import Transform, rpy_matrix
from ejce_nb.io.urdf import _z_onto, load_urdf

J = ej.joints



def urdf_inertia(xyz, rpy, I):
    """COM and link-axes inertia of an <inertial> with that origin and tensor."""
    R = rpy_matrix(*rpy)
    return np.array(xyz, dtype=float), R @ np.array(I, dtype=float) @ R.T


# ------------------------------------------------------------------------------ every element
COVER = """<?xml version="1.0"?>
<robot name="cover">
  <material name="grey"><color rgba="0.5 0.5 0.5 1"/></material>
  <link name="base">
    <inertial>
      <origin xyz="0.01 0.02 0.03" rpy="0.1 -0.2 0.3"/>
      <mass value="3.5"/>
      <inertia ixx="0.05" ixy="0.001" ixz="-0.002" iyy="0.06" iyz="0.003" izz="0.07"/>
    </inertial>
    <visual><geometry><box size="1 1 1"/></geometry><material name="grey"/></visual>
    <collision><geometry><box size="1 1 1"/></geometry></collision>
  </link>
  <link name="upper">
    <inertial><mass value="2"/><inertia ixx="0.02" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.01"/></inertial>
  </link>
  <link name="lower"/>
  <link name="slider">
    <inertial><origin xyz="0 0 0.1"/><mass value="0.5"/>
      <inertia ixx="0.001" ixy="0" ixz="0" iyy="0.002" iyz="0" izz="0.0025"/></inertial>
  </link>
  <link name="spinner"/>
  <link name="tool"/>
  <link name="puck">
    <inertial><mass value="0.3"/><inertia ixx="1e-3" ixy="0" ixz="0" iyy="1e-3" iyz="0" izz="2e-3"/></inertial>
  </link>
  <link name="drone">
    <inertial><origin rpy="0 0 1"/><mass value="1.5"/>
      <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.025"/></inertial>
  </link>
  <joint name="shoulder" type="revolute">
    <parent link="base"/><child link="upper"/>
    <origin xyz="0 0 0.4" rpy="0.2 0.3 -0.4"/>
    <axis xyz="0 0 2"/>
    <limit lower="-1.5" upper="2.5" velocity="3" effort="40"/>
    <dynamics damping="0.1" friction="0.2"/>
  </joint>
  <joint name="elbow" type="continuous">
    <parent link="upper"/><child link="lower"/>
    <axis xyz="0 1 0"/>
    <limit effort="20" velocity="4"/>
  </joint>
  <joint name="slide" type="prismatic">
    <parent link="lower"/><child link="slider"/>
    <origin xyz="0.1 0 0"/>
    <axis xyz="1 1 0"/>
    <limit lower="-0.1" upper="0.3"/>
  </joint>
  <joint name="spin" type="revolute">
    <parent link="slider"/><child link="spinner"/>
    <origin rpy="0 0 1.2"/>
    <limit upper="1" effort="1" velocity="1"/>
  </joint>
  <joint name="flange" type="fixed">
    <parent link="spinner"/><child link="tool"/>
    <origin xyz="0 0 0.05" rpy="3.14159 0 0"/>
    <axis xyz="bad axes are ignored on fixed joints"/>
  </joint>
  <joint name="table" type="planar">
    <parent link="base"/><child link="puck"/>
    <origin xyz="0.5 0 0"/>
    <axis xyz="0 1 0"/>
  </joint>
  <joint name="fly" type="floating">
    <parent link="base"/><child link="drone"/>
    <origin xyz="0 0 2"/>
  </joint>
  <transmission name="t"><type>SimpleTransmission</type></transmission>
</robot>
"""


def cover_by_hand(root_joint=None, root_name="root_joint"):
    b = ej.ModelBuilder(gravity=(0.0, 0.0, -9.81))
    com, I = urdf_inertia((0.01, 0.02, 0.03), (0.1, -0.2, 0.3),
                          [[0.05, 0.001, -0.002], [0.001, 0.06, 0.003], [-0.002, 0.003, 0.07]])
    b.add_body("base", joint=root_joint or J.Fixed(), joint_name=root_name, mass=3.5, com=com, inertia=I)
    b.add_body("upper", parent="base", joint=J.Revolute((0.0, 0.0, 1.0)), joint_name="shoulder",
               placement=Transform(rpy_matrix(0.2, 0.3, -0.4), (0.0, 0.0, 0.4)),
               mass=2.0, inertia=np.diag([0.02, 0.02, 0.01]),
               q_lower=[-1.5], q_upper=[2.5], v_limit=[3.0], effort_limit=[40.0], damping=0.1)
    b.add_body("lower", parent="upper", joint=J.Revolute((0.0, 1.0, 0.0)), joint_name="elbow",
               v_limit=[4.0], effort_limit=[20.0])
    b.add_body("slider", parent="lower", joint=J.Prismatic(np.array([1.0, 1.0, 0.0]) / np.sqrt(2.0)),
               joint_name="slide", placement=Transform(translation=(0.1, 0.0, 0.0)),
               mass=0.5, com=(0.0, 0.0, 0.1), inertia=np.diag([0.001, 0.002, 0.0025]),
               q_lower=[-0.1], q_upper=[0.3])
    b.add_body("spinner", parent="slider", joint=J.Revolute((1.0, 0.0, 0.0)), joint_name="spin",
               placement=Transform(rpy_matrix(0.0, 0.0, 1.2)),
               q_lower=[0.0], q_upper=[1.0], v_limit=[1.0], effort_limit=[1.0])
    b.add_body("tool", parent="spinner", joint=J.Fixed(), joint_name="flange",
               placement=Transform(rpy_matrix(3.14159, 0.0, 0.0), (0.0, 0.0, 0.05)))
    # planar about y: P = origin * E, C = E with E the loader's rotation taking z onto y (checked
    # against the exact quarter turn about -x below, and geometrically in the planar tests)
    E = _z_onto(np.array([0.0, 1.0, 0.0]))
    b.add_body("puck", parent="base", joint=J.Planar(), joint_name="table",
               placement=Transform(E, (0.5, 0.0, 0.0)), child_placement=Transform(E),
               mass=0.3, inertia=np.diag([1e-3, 1e-3, 2e-3]))
    com, I = urdf_inertia((0.0, 0.0, 0.0), (0.0, 0.0, 1.0), np.diag([0.01, 0.02, 0.025]))
    b.add_body("drone", parent="base", joint=J.Free("quaternion"), joint_name="fly",
               placement=Transform(translation=(0.0, 0.0, 2.0)), mass=1.5, com=com, inertia=I)
    return b.build()


def test_every_element_matches_the_hand_built_robot():
    m = load_urdf(COVER)
    assert_same_model(m, cover_by_hand())
    quarter = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]])
    k = m.body_index("puck")
    np.testing.assert_allclose(m.joint_P_rot[k], quarter, atol=1e-15)
    np.testing.assert_allclose(m.joint_C_rot[k], quarter, atol=1e-15)


def test_cover_details():
    m = load_urdf(COVER)
    assert m.body_names == ("world", "base", "upper", "lower", "slider", "spinner", "tool", "puck", "drone")
    assert m.nq == 1 + 1 + 1 + 1 + 3 + 7 and m.nv == 4 + 3 + 6
    assert m.body_mass[m.body_index("lower")] == 0.0           # no <inertial>
    assert not np.any(m.body_inertia[m.body_index("lower")])
    np.testing.assert_array_equal(m.q_lower[m.q_slice("elbow")], [-np.inf])   # continuous
    np.testing.assert_array_equal(m.v_limit[m.v_slice("slide")], [np.inf])     # no velocity given
    assert m.q_lower[m.q_slice("spin")][0] == 0.0               # the URDF default lower limit
    slices = m.joint_q_slices()
    assert slices["shoulder"] == slice(0, 1) and slices["flange"] == slice(4, 4)
    assert m.joint_v_slices()["fly"] == slice(7, 13)
    np.testing.assert_array_equal(m.gravity, [0.0, 0.0, -9.81])


def test_planar_plane_is_normal_to_the_axis():
    axis = np.array([1.0, -2.0, 0.5])
    xml = f"""<robot name="p"><link name="a"/><link name="b"/>
      <joint name="pl" type="planar"><parent link="a"/><child link="b"/>
        <origin xyz="0.3 0.2 0.1" rpy="0.4 0.5 0.6"/><axis xyz="{axis[0]} {axis[1]} {axis[2]}"/></joint></robot>"""
    m = load_urdf(xml)
    n = axis / np.linalg.norm(axis)
    o = rpy_matrix(0.4, 0.5, 0.6)
    q = np.array([0.3, -0.7, 1.1])
    kin = ej.forward_kinematics(m, q)
    # child frame = origin * (x e1 + y e2 translation) * rotation about the axis, e1 e2 n orthonormal
    E = o.T @ m.joint_P_rot[2]
    np.testing.assert_allclose(E[:, 2], n, atol=1e-15)
    np.testing.assert_allclose(E.T @ E, np.eye(3), atol=1e-15)
    from ejce_nb.core.transform import rot_axis_angle
    R_expect = o @ rot_axis_angle(n, q[2])
    p_expect = np.array([0.3, 0.2, 0.1]) + o @ (q[0] * E[:, 0] + q[1] * E[:, 1])
    np.testing.assert_allclose(kin.R[2], R_expect, atol=1e-14)
    np.testing.assert_allclose(kin.p[2], p_expect, atol=1e-14)


def test_planar_axis_z_and_minus_z():
    for axis, E in (("0 0 1", np.eye(3)), ("0 0 -3", np.diag([1.0, -1.0, -1.0]))):
        m = load_urdf(f"""<robot name="p"><link name="a"/><link name="b"/><joint name="pl" type="planar">
          <parent link="a"/><child link="b"/><axis xyz="{axis}"/></joint></robot>""")
        np.testing.assert_array_equal(m.joint_P_rot[2], E)
        np.testing.assert_array_equal(m.joint_C_rot[2], E)


def test_floating_base_variants():
    for fb, spec in (("quaternion", J.Free("quaternion")), ("ZYX", J.Free("ZYX")), ("rotvec", J.Free("rotvec")),
                     (J.Planar(), J.Planar())):
        assert_same_model(load_urdf(COVER, floating_base=fb), cover_by_hand(spec))
    m = load_urdf(COVER, floating_base="quaternion")
    assert m.joint_names[1] == "root_joint" and m.nq == 14 + 7
    # a URDF joint already named root_joint: the root joint takes another name
    xml = COVER.replace('name="shoulder"', 'name="root_joint"')
    assert load_urdf(xml, floating_base="quaternion").joint_names[1] == "root_joint_"


def test_world_root_is_the_world():
    xml = COVER.replace('<link name="base">', '<link name="world"/><link name="base">').replace(
        "</robot>", '<joint name="bolt" type="fixed"><parent link="world"/><child link="base"/>'
                    '<origin xyz="1 2 3"/></joint></robot>')
    m = load_urdf(xml)
    assert m.body_names[:2] == ("world", "base") and m.joint_names[1] == "bolt"
    np.testing.assert_array_equal(m.joint_P_pos[1], [1.0, 2.0, 3.0])
    # the world's children attach to body 0
    xml2 = xml.replace('<parent link="base"/><child link="puck"/>', '<parent link="world"/><child link="puck"/>')
    m2 = load_urdf(xml2)
    assert m2.parent[m2.body_index("puck")] == 0


def test_bodies_depth_first_in_file_order():
    xml = """<robot name="t"><link name="r"/><link name="a"/><link name="b"/><link name="c"/><link name="d"/>
      <joint name="jb" type="fixed"><parent link="r"/><child link="b"/></joint>
      <joint name="jd" type="fixed"><parent link="a"/><child link="d"/></joint>
      <joint name="ja" type="fixed"><parent link="r"/><child link="a"/></joint>
      <joint name="jc" type="fixed"><parent link="b"/><child link="c"/></joint></robot>"""
    m = load_urdf(xml)
    assert m.body_names == ("world", "r", "b", "c", "a", "d")
    assert all(m.parent[i] < i for i in range(1, m.nbodies + 1))


def test_input_forms(tmp_path):
    path = tmp_path / "cover.urdf"
    path.write_text(COVER)
    ref = load_urdf(COVER)
    for src in (path, str(path), COVER.encode()):
        assert_same_model(load_urdf(src), ref)
    assert_same_model(models.load(path), ref)


# ------------------------------------------------------------------------------ mimic joints
MIMIC = """<robot name="gripper">
  <link name="palm">
    <inertial><mass value="1"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial>
  </link>
  <link name="f1">
    <inertial><origin xyz="0 0 0.05"/><mass value="0.1"/>
      <inertia ixx="1e-4" ixy="0" ixz="0" iyy="1e-4" iyz="0" izz="1e-5"/></inertial>
  </link>
  <link name="f2">
    <inertial><origin xyz="0 0 0.05"/><mass value="0.1"/>
      <inertia ixx="1e-4" ixy="0" ixz="0" iyy="1e-4" iyz="0" izz="1e-5"/></inertial>
  </link>
  <link name="f3"/>
  <link name="tip"/>
  <joint name="finger2" type="revolute"><parent link="palm"/><child link="f2"/><origin xyz="-0.03 0 0.1"/>
    <axis xyz="0 1 0"/><limit lower="-1" upper="1" effort="5" velocity="2"/>
    <mimic joint="finger1" multiplier="-1" offset="0.1"/></joint>
  <joint name="finger1" type="revolute"><parent link="palm"/><child link="f1"/><origin xyz="0.03 0 0.1" rpy="0 0 0.3"/>
    <axis xyz="0 1 0"/><limit lower="-1" upper="1" effort="5" velocity="2"/></joint>
  <joint name="finger3" type="revolute"><parent link="palm"/><child link="f3"/><origin xyz="0 0.03 0.1"/>
    <axis xyz="1 0 0"/><limit lower="-1" upper="1" effort="5" velocity="2"/>
    <mimic joint="finger2" multiplier="2" offset="-0.2"/></joint>
  <joint name="tipj" type="prismatic"><parent link="f1"/><child link="tip"/><origin xyz="0 0 0.1"/>
    <axis xyz="0 0 1"/><limit lower="0" upper="0.02" effort="5" velocity="2"/></joint>
</robot>"""


def test_mimic_joints_have_no_coordinate():
    m = load_urdf(MIMIC)
    assert m.has_mimic and m.nq == 2 and m.nv == 2
    f1, f2, f3 = (m.joint_index(n) for n in ("finger1", "finger2", "finger3"))
    assert m.joint_mimic[f2] == f1 and m.joint_mimic[f3] == f1 and m.joint_mimic[f1] == -1
    # finger3 mimics finger2, itself a mimic of finger1: 2 (-q + 0.1) - 0.2 = -2 q
    assert (m.joint_mimic_multiplier[f2], m.joint_mimic_offset[f2]) == (-1.0, 0.1)
    assert (m.joint_mimic_multiplier[f3], m.joint_mimic_offset[f3]) == (-2.0, 0.0)
    assert m.nq_joint[f2] == m.nv_joint[f2] == 0
    assert m.q_slice("finger2") == slice(0, 0)      # first in the file, so body 1
    np.testing.assert_array_equal(m.q_lower, [-1.0, 0.0])
    np.testing.assert_array_equal(m.neutral(), [0.0, 0.0])
    # the kernels run on the expansion, where every mimic joint has its own coordinate
    assert m.kernel_model() is m.expanded() and m.expanded().nq == 4
    assert "mimics 'finger1'" in m.summary()


def test_mimic_hand_built_and_expansion():
    b = ej.ModelBuilder()
    b.add_body("palm", joint=J.Fixed(), joint_name="root_joint", mass=1.0, inertia=np.eye(3) * 0.01)
    fin = dict(mass=0.1, com=(0.0, 0.0, 0.05), inertia=np.diag([1e-4, 1e-4, 1e-5]))
    b.add_body("f2", parent="palm", joint=J.Revolute((0.0, 1.0, 0.0)), joint_name="finger2",
               placement=Transform(translation=(-0.03, 0.0, 0.1)), mimic=("finger1", -1.0, 0.1), **fin)
    b.add_body("f1", parent="palm", joint=J.Revolute((0.0, 1.0, 0.0)), joint_name="finger1",
               placement=Transform(rpy_matrix(0.0, 0.0, 0.3), (0.03, 0.0, 0.1)),
               q_lower=[-1.0], q_upper=[1.0], v_limit=[2.0], effort_limit=[5.0], **fin)
    b.add_body("tip", parent="f1", joint=J.Prismatic((0.0, 0.0, 1.0)), joint_name="tipj",
               placement=Transform(translation=(0.0, 0.0, 0.1)),
               q_lower=[0.0], q_upper=[0.02], v_limit=[2.0], effort_limit=[5.0])
    b.add_body("f3", parent="palm", joint=J.Revolute((1.0, 0.0, 0.0)), joint_name="finger3",
               placement=Transform(translation=(0.0, 0.03, 0.1)),
               mimic={"joint": "finger1", "multiplier": -2.0, "offset": 0.0})
    hand = b.build()
    m = load_urdf(MIMIC)
    # the loader numbers bodies depth-first in file order: f2, f1, tip, f3 as above
    assert_same_model(m, hand)
    full = m.expanded()
    assert not full.has_mimic and full.nq == 4
    independent = load_urdf(MIMIC, mimic=False)
    for name in ARRAYS:            # all but the limits, which a mimic joint does not keep
        if name not in ("q_lower", "q_upper", "v_limit", "effort_limit"):
            np.testing.assert_array_equal(getattr(full, name), getattr(independent, name), err_msg=name)
    np.testing.assert_array_equal(full.q_lower, [-np.inf, -1.0, 0.0, -np.inf])
    Gq, gq, Gv = m.mimic_map()
    q = np.array([0.4, 0.01])
    np.testing.assert_array_equal(m.expand_q(q), Gq @ q + gq)
    np.testing.assert_allclose(m.expand_q(q), [-0.4 + 0.1, 0.4, 0.01, -0.8])
    np.testing.assert_allclose(m.expand_v(np.array([[1.0, 2.0]])), [[-1.0, 1.0, 2.0, -2.0]])
    assert Gv.shape == (4, 2)
    # a JSON round trip keeps the coupling
    assert_same_model(ej.Model.from_json(m.to_json()), m)


def test_mimic_joint_rotor_inertia_and_damping_act_through_the_coupling():
    """A mimic joint's rotor inertia (drake: elements, the prefix undeclared as robot files often
    leave it) and damping join its source's times the multiplier squared: the model's mass matrix
    is G^T M G of the same robot with the mimic joint free, its damping G^T D G."""
    tr = ('<transmission name="t{k}"><joint name="{j}"/><actuator name="m{k}"><drake:rotor_inertia value="{r}"/>'
          '<drake:gear_ratio value="{g}"/></actuator></transmission>')
    xml = MIMIC.replace("</robot>", tr.format(k=1, j="finger2", r=0.003, g=2.0) + tr.format(k=2, j="finger1", r=0.001, g=1.0)
                        + tr.format(k=3, j="finger3", r=0.002, g=3.0) + "</robot>")
    xml = xml.replace('<mimic joint="finger2" multiplier="2"', '<dynamics damping="0.4"/><mimic joint="finger2" multiplier="2"')
    m, free = load_urdf(xml), load_urdf(xml, mimic=False)
    # finger2 = -finger1 + 0.1, finger3 = -2 finger1
    assert np.allclose(m.dof_armature, [0.001 + 0.012 + 4 * 0.018, 0.0])
    assert np.allclose(m.dof_damping, [4 * 0.4, 0.0])
    Gq, gq, Gv = m.mimic_map()
    q = np.array([0.3, 0.01])
    M_free = ej.mass_matrix(free, Gq @ q + gq)
    assert np.allclose(ej.mass_matrix(m, q), Gv.T @ M_free @ Gv, rtol=1e-14, atol=1e-16)
    assert np.allclose(np.diag(m.dof_damping), Gv.T @ np.diag(free.dof_damping) @ Gv, rtol=1e-15, atol=0)


def test_mimic_false_keeps_joints_independent():
    m = load_urdf(MIMIC, mimic=False)
    assert not m.has_mimic and m.nq == 4
    np.testing.assert_array_equal(m.q_lower[m.q_slice("finger2")], [-1.0])


def test_mimic_on_a_fixed_joint_is_ignored():
    """A fixed joint has nothing to couple (robot files fix a gripper joint and keep its
    <mimic>): the tag is ignored, as Pinocchio does."""
    plain = MIMIC.replace('type="prismatic"', 'type="fixed"')
    tagged = plain.replace('<axis xyz="0 0 1"/><limit lower="0" upper="0.02" effort="5" velocity="2"/></joint>',
                           '<axis xyz="0 0 1"/><limit lower="0" upper="0.02" effort="5" velocity="2"/>'
                           '<mimic joint="finger1" multiplier="3"/></joint>')
    assert tagged != plain
    for mimic in (True, False):
        assert_same_model(load_urdf(tagged, mimic=mimic), load_urdf(plain, mimic=mimic))


def test_mimic_false_ignores_dangling_mimic_elements():
    """With mimic=False the <mimic> elements are not read for their coupling, so one naming a
    joint the file lacks does not matter (Pinocchio's default); with mimic=True it is an error."""
    xml = MIMIC.replace('<mimic joint="finger1" multiplier="-1" offset="0.1"/>', '<mimic joint="index_q1"/>')
    assert_same_model(load_urdf(xml, mimic=False), load_urdf(MIMIC, mimic=False))
    with pytest.raises(ej.ModelError, match=r"joint 'finger2': <mimic joint='index_q1'>: no joint of that name"):
        load_urdf(xml)


# ------------------------------------------------------------------------------ inertias
def inertial_link(name, i6, rpy="0 0 0", mass="1"):
    ixx, ixy, ixz, iyy, iyz, izz = i6
    return (f'<link name="{name}"><inertial><origin xyz="0.1 0 0" rpy="{rpy}"/><mass value="{mass}"/>'
            f'<inertia ixx="{ixx}" ixy="{ixy}" ixz="{ixz}" iyy="{iyy}" iyz="{iyz}" izz="{izz}"/></inertial></link>')


# PR2's sensor_mount_link (triangle inequality), iCub's head (a lone product of inertia: eigenvalues
# -2.4e-35, 0, 2.4e-35), ANYmal's base (1e-6 everywhere: eigenvalues ~0, ~0, 3e-6), a negative
# moment, and a consistent link whose eigenvalue -1e-20 at a scale of 1e-3 is rounding
INERTIAS = {"mount": ("0.001", "0", "0", "0.001", "0", "0.01"),
            "head": ("0", "0", "2.40741e-35", "0", "0", "0"),
            "base": ("1e-6",) * 6,
            "dent": ("-0.5", "0", "0", "1", "0", "1"),
            "fine": ("1e-3", "0", "0", "1e-3", "0", "2e-3")}
ROUNDED = ("1e-3", "1e-3", "0", "1e-3", "0", "2e-3")    # rank-deficient by construction, eigenvalue 0


def inertia_robot(rpy="0.3 -0.2 0.1"):
    links = "".join(inertial_link(n, i6, rpy) for n, i6 in INERTIAS.items())
    links += inertial_link("rounded", ROUNDED, rpy)
    joints = "".join(joint(name=f"j_{n}", type_="revolute", parent="mount", child=n) for n in list(INERTIAS)[1:])
    joints += joint(name="j_rounded", parent="fine", child="rounded")
    return robot(links, joints)


def tensor(i6, rpy):
    xx, xy, xz, yy, yz, zz = (float(x) for x in i6)
    R = rpy_matrix(*(float(x) for x in rpy.split()))
    T = R @ np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]]) @ R.T
    return 0.5 * (T + T.T)          # as the builder stores it: rounding may leave R I R^T asymmetric


def test_inconsistent_inertias_are_kept_with_a_warning(tmp_path):
    path = tmp_path / "robot.urdf"
    path.write_text(inertia_robot())
    with pytest.warns(ej.InertiaWarning) as caught:
        m = load_urdf(path)
    warned = {w.message.link: w.message for w in caught if issubclass(w.category, ej.InertiaWarning)}
    assert set(warned) == {"mount", "head", "base", "dent"}
    for name, w in warned.items():
        assert str(w).startswith(f"{path}: link '{name}': <inertial>: inertia ")
        assert "kept as written" in str(w) and w.source == str(path) and not w.balanced
        ev = np.linalg.eigvalsh(tensor(INERTIAS[name], "0 0 0"))
        np.testing.assert_allclose(w.moments, ev, rtol=0.0, atol=1e-12 * np.abs(ev).max())
    assert "triangle inequality" in str(warned["mount"]) and "triangle inequality" in str(warned["base"])
    assert "positive semi-definite" in str(warned["dent"]) and "positive semi-definite" in str(warned["head"])
    for name, i6 in list(INERTIAS.items()) + [("rounded", ROUNDED)]:
        np.testing.assert_array_equal(m.body_inertia[m.body_index(name)], tensor(i6, "0.3 -0.2 0.1"))
    # the JSON form marks them, so that it reads back as the same model
    d = m.to_dict()
    marked = {b["name"] for b in d["bodies"] if b.get("inertia_as_written")}
    assert marked == set(warned)
    assert_same_model(ej.Model.from_json(m.to_json()), m)
    k = next(i for i, b in enumerate(d["bodies"]) if b["name"] == "mount")
    del d["bodies"][k]["inertia_as_written"]
    with pytest.raises(ej.ModelError, match=rf"^copy\.json: bodies\[{k}\]\.inertia: body 'mount': inertia violates"):
        ej.Model.from_dict(d, "copy.json")


def test_strict_refuses_inconsistent_inertias(tmp_path):
    path = tmp_path / "robot.urdf"
    path.write_text(inertia_robot())
    with pytest.raises(ej.ModelError, match=rf"^{re.escape(str(path))}: link 'mount': <inertial>: inertia violates "
                                            r"the triangle inequality.*\(strict=True refuses"):
        load_urdf(path, strict=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # a consistent file loads without a warning
        load_urdf(robot(inertial_link("fine", INERTIAS["fine"]), inertial_link("r", ROUNDED, "1 2 3"),
                        joint(parent="fine", child="r")), strict=True)
    with pytest.raises(ej.ModelError, match="give one or the other"):
        load_urdf(path, strict=True, balance_inertia=True)


def test_balanced_inertias():
    """balance_inertia=True: in each inconsistent tensor's principal axes, negative moments are
    raised to 0, then the two smaller ones by half the deficit so that I1 + I2 = I3; consistent
    tensors are untouched."""
    rpy = "0.3 -0.2 0.1"
    with pytest.warns(ej.InertiaWarning) as caught:
        m = load_urdf(inertia_robot(rpy), balance_inertia=True)
    assert {w.message.link for w in caught} == {"mount", "head", "base", "dent"}
    assert all(w.message.balanced and "balanced to principal moments" in str(w.message) for w in caught)
    R = rpy_matrix(0.3, -0.2, 0.1)
    # mount: (0.001, 0.001, 0.01) lacks 0.008, so each small moment gains 0.004; dent: (-0.5, 1, 1)
    # -> (0, 1, 1), which then obeys the triangle inequality, so only the negative moment moves
    expected = {"mount": np.diag([0.005, 0.005, 0.01]), "dent": np.diag([0.0, 1.0, 1.0])}
    for name, I in expected.items():
        np.testing.assert_allclose(m.body_inertia[m.body_index(name)], R @ I @ R.T, atol=1e-15)
    for name in ("head", "base"):
        raw = tensor(INERTIAS[name], rpy)
        ev, Q = np.linalg.eigh(raw)
        out = m.body_inertia[m.body_index(name)]
        bev = np.linalg.eigvalsh(out)
        top = ev[2]
        lo = max(ev[0], 0.0) + 0.5 * (top - max(ev[0], 0.0) - max(ev[1], 0.0))
        hi = max(ev[1], 0.0) + 0.5 * (top - max(ev[0], 0.0) - max(ev[1], 0.0))
        np.testing.assert_allclose(bev, [lo, hi, top], rtol=1e-9, atol=1e-9 * top)
        np.testing.assert_allclose(out @ Q[:, 2], top * Q[:, 2], atol=1e-9 * top)    # the principal axes are kept
    for name, i6 in (("fine", INERTIAS["fine"]), ("rounded", ROUNDED)):
        np.testing.assert_array_equal(m.body_inertia[m.body_index(name)], tensor(i6, rpy))
    # every body is now consistent: the builder's own checks pass without the as-written flag
    assert not any(b.get("inertia_as_written") for b in m.to_dict()["bodies"])


def test_builder_mimic_errors():
    def build(**kw):
        b = ej.ModelBuilder()
        b.add_body("a", joint=J.Revolute(), joint_name="ja")
        b.add_body("s", joint=J.Spherical(), joint_name="js")
        b.add_body("b", parent="a", joint=kw.pop("joint", J.Revolute()), joint_name="jb", **kw)
        return b.build()
    for kw, msg in ((dict(mimic="nope"), "no joint named 'nope'"), (dict(mimic="jb"), "cannot mimic itself"),
                    (dict(mimic="js"), "no single coordinate"), (dict(mimic=("ja", "x")), "multiplier must be a number"),
                    (dict(mimic=("ja", 1.0, np.inf)), "offset must be finite"),
                    (dict(mimic="ja", joint=J.Spherical()), "only a one-coordinate joint"),
                    (dict(mimic="ja", q_lower=[0.0]), "no limits"), (dict(mimic=7), "joint index 7"),
                    (dict(mimic={"joint": "ja", "gain": 2}), "mimic must have"), (dict(mimic=1.5), "mimic must be")):
        with pytest.raises(ej.ModelError, match=msg):
            build(**kw)
    b = ej.ModelBuilder()
    b.add_body("a", joint=J.Revolute(), joint_name="ja")
    b.add_body("b", joint=J.Revolute(), joint_name="jb", mimic="ja")
    b.add_body("c", joint=J.Revolute(), joint_name="jc", mimic="jb")
    with pytest.raises(ej.ModelError, match="is itself a mimic joint"):
        b.build()


# ------------------------------------------------------------------------------ malformed files
def robot(*parts):
    return '<robot name="r">' + "".join(parts) + "</robot>"


L = '<link name="a"/><link name="b"/>'


def joint(body="", name="j", type_="revolute", parent="a", child="b"):
    return (f'<joint name="{name}" type="{type_}"><parent link="{parent}"/><child link="{child}"/>'
            f'{body}</joint>')


INERTIA = '<inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/>'

MALFORMED = [
    ("<robot", "not well-formed XML"),
    ("<model/>", "top element is <model>"),
    ("<robot/>", "no <link> elements"),
    (robot("<link/>"), r"link #0: <link> without a 'name'"),
    (robot('<link name="a"/><link name="a"/>'), "link 'a': defined twice"),
    (robot(L, '<joint name="j"><parent link="a"/><child link="b"/></joint>'), "joint 'j': <joint> has no 'type'"),
    (robot(L, joint(type_="ball")), "joint 'j': unknown joint type 'ball'"),
    (robot(L, '<joint name="j" type="fixed"><child link="b"/></joint>'), "joint 'j': missing <parent>"),
    (robot(L, '<joint name="j" type="fixed"><parent/><child link="b"/></joint>'), "joint 'j': <parent> has no 'link'"),
    (robot(L, joint(child="zz")), r"joint 'j': <child link='zz'>: no link of that name"),
    (robot(L, '<joint type="fixed"><parent link="a"/><child link="b"/></joint>'), "joint #0: <joint> without a 'name'"),
    (robot(L, joint('<axis xyz="a b"/>', name="elbow")), r"joint 'elbow': <axis xyz='a b'>: not 3 numbers"),
    (robot(L, joint('<axis xyz="1 0"/>')), r"joint 'j': <axis xyz='1 0'>: expected 3 numbers, got 2"),
    (robot(L, joint('<axis/>')), r"joint 'j': <axis> has no 'xyz'"),
    (robot(L, joint('<axis xyz="0 0 0"/>')), "joint 'j': <axis xyz='0 0 0'>: zero axis"),
    (robot(L, joint('<origin rpy="x 0 0"/>')), r"joint 'j': <origin rpy='x 0 0'>: not 3 numbers"),
    (robot(L, joint('<origin xyz="nan 0 0"/>')), r"<origin xyz='nan 0 0'>: not finite"),
    (robot(L, joint('<origin xyz="0 0 0"/><origin xyz="0 0 0"/>')), "joint 'j': more than one <origin>"),
    (robot(L, joint('<limit lower="1" upper="-1"/>')), "joint 'j': <limit>: lower 1.0 exceeds upper -1.0"),
    (robot(L, joint('<limit lower="0" upper="one"/>')), r"joint 'j': <limit>: <limit upper='one'>: not a number"),
    (robot(L, joint('<limit velocity="-1"/>')), "must not be negative"),
    (robot('<link name="a"><inertial>' + INERTIA + "</inertial></link>"), "link 'a': <inertial>: missing <mass>"),
    (robot('<link name="a"><inertial><mass value="x"/>' + INERTIA + "</inertial></link>"),
     r"link 'a': <inertial>: <mass value='x'>: not a number"),
    (robot('<link name="a"><inertial><mass/>' + INERTIA + "</inertial></link>"), "<mass> has no 'value'"),
    (robot('<link name="a"><inertial><mass value="1"/></inertial></link>'), "link 'a': <inertial>: missing <inertia>"),
    (robot('<link name="a"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0"/></inertial></link>'),
     "link 'a': <inertial>: <inertia> has no 'izz'"),
    (robot('<link name="a"><inertial><mass value="-1"/>' + INERTIA + "</inertial></link>"),
     "link 'a': <inertial>: mass must be finite and non-negative"),
    (robot('<link name="a"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1e400"/>'
           "</inertial></link>"), r"link 'a': <inertial>: <inertia izz='1e400'>: not finite"),
    (robot('<link name="world"/>'), "the only link is 'world': the robot has no bodies"),
    (robot('<link name="a"><inertial><mass value="1"/>' + INERTIA + "</inertial><inertial/></link>"),
     "link 'a': more than one <inertial>"),
    (robot(L), "links 'a', 'b' are all roots"),
    (robot(L, joint(), joint(name="k", parent="b", child="a")), "no root link: the joints form a cycle"),
    (robot('<link name="r"/>', L, joint(type_="fixed"), joint(name="k", type_="fixed", parent="b", child="a")),
     "links 'a', 'b' are not connected to the root 'r'"),
    (robot(L, '<link name="c"/>', joint(type_="fixed", child="c"), joint(name="k", type_="fixed", parent="b", child="c")),
     "joint 'k': link 'c' is already the child of joint 'j'"),
    (robot(L, joint(type_="fixed", child="a")), "joint 'j': parent and child are the same link 'a'"),
    (robot(L, '<link name="c"/>', joint(type_="fixed"), joint(type_="fixed", child="c")), "joint 'j': defined twice"),
    (robot(L, joint('<mimic joint="nope"/>')),
     r"joint 'j': <mimic joint='nope'>: no joint of that name \(mimic=False ignores <mimic> elements\)"),
    (robot(L, joint('<mimic/>')), "joint 'j': <mimic> has no 'joint'"),
    (robot(L, '<link name="c"/>', joint(), joint('<mimic joint="j" multiplier="two"/>', name="k", child="c")),
     r"joint 'k': <mimic multiplier='two'>: not a number"),
    (robot(L, '<link name="c"/>', joint('<mimic joint="k"/>'), joint('<mimic joint="j"/>', name="k", child="c")),
     "form a cycle"),
    (robot(L, '<link name="c"/>', joint(), joint('<mimic joint="j"/>', name="k", type_="planar", child="c")),
     "joint 'k': <mimic>: a planar joint cannot mimic"),
    (robot(L, '<link name="c"/>', joint(type_="fixed"), joint('<mimic joint="j"/>', name="k", child="c")),
     r"joint 'k': <mimic joint='j'>: a fixed joint has no single coordinate"),
    (robot(L, '<link name="c"/>', joint(type_="floating"), joint('<mimic joint="j"/>', name="k", child="c")),
     r"joint 'k': <mimic joint='j'>: a floating joint has no single coordinate"),
    (robot('<link name="r"/><link name="world"/>', joint(type_="fixed", parent="r", child="world")),
     "the name 'world' is reserved for the root link"),
]


@pytest.mark.parametrize("xml, message", MALFORMED)
def test_malformed_urdf(xml, message):
    with pytest.raises(ej.ModelError, match=message):
        load_urdf(xml)


def test_malformed_arguments(tmp_path):
    with pytest.raises(ej.ModelError, match="cannot read URDF file"):
        load_urdf(tmp_path / "missing.urdf")
    with pytest.raises(ej.ModelError, match="expects a file path or URDF text"):
        load_urdf(123)
    with pytest.raises(ej.ModelError, match="not UTF-8"):
        load_urdf(b"<robot>\xff</robot>")
    with pytest.raises(ej.ModelError, match="floating_base: Free param 'abc' unknown"):
        load_urdf(COVER, floating_base="abc")
    with pytest.raises(ej.ModelError, match="floating_base must be"):
        load_urdf(COVER, floating_base=3)
    world = robot('<link name="world"/><link name="b"/>', joint(type_="fixed", parent="world"))
    with pytest.raises(ej.ModelError, match="root link is 'world'"):
        load_urdf(world, floating_base="quaternion")
    bad = tmp_path / "bad.urdf"
    bad.write_text(robot(L))
    with pytest.raises(ej.ModelError, match=f"^{bad}: links 'a', 'b' are all roots"):
        load_urdf(bad)


# the parts of COVER the loader ignores: any value there, or their removal, leaves the model as it is
IGNORED_ATTRS = {("robot", "name"), ("material", "name"), ("color", "rgba"), ("box", "size"),
                 ("dynamics", "friction"), ("transmission", "name")}
IGNORED_ELEMENTS = {"visual", "collision", "material", "transmission", "geometry", "box", "color", "type"}
ONE_DOF = ("revolute", "continuous", "prismatic")


def _finite(text, n):
    """The n finite numbers an attribute holds, or None."""
    try:
        vals = [float(x) for x in text.split()]
    except ValueError:
        return None
    return vals if len(vals) == n and all(np.isfinite(vals)) else None


def urdf_oracle(robot_el):
    """What loading a COVER-shaped tree must give, from the URDF rules alone: "invalid", or the
    set of links whose inertia is physically inconsistent (loaded with a warning each)."""
    links = robot_el.findall("link")
    names = [el.get("name") for el in links]
    if not links or any(n is None or not n.strip() for n in names) or len(set(names)) != len(names):
        return "invalid"
    inconsistent = set()
    for el in links:
        inertial = el.findall("inertial")
        if len(inertial) > 1:
            return "invalid"
        if not inertial:
            continue
        origin = inertial[0].find("origin")
        if origin is not None and any(origin.get(a) is not None and _finite(origin.get(a), 3) is None
                                      for a in ("xyz", "rpy")):
            return "invalid"
        mass, inertia = inertial[0].find("mass"), inertial[0].find("inertia")
        if mass is None or inertia is None or mass.get("value") is None:
            return "invalid"
        m = _finite(mass.get("value"), 1)
        if m is None or m[0] < 0:
            return "invalid"
        i6 = [inertia.get(a) for a in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")]
        if any(v is None or _finite(v, 1) is None for v in i6):
            return "invalid"
        xx, xy, xz, yy, yz, zz = (float(v) for v in i6)
        ev = np.linalg.eigvalsh(np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]]))
        tol = 1e-9 * np.abs(ev).max()
        if ev[0] < -tol or ev[0] + ev[1] < ev[2] - tol:
            inconsistent.add(el.get("name"))
    joints = robot_el.findall("joint")
    jnames = [el.get("name") for el in joints]
    if any(n is None or not n.strip() or n == "world" for n in jnames) or len(set(jnames)) != len(jnames):
        return "invalid"
    parent_of = {}
    for el in joints:
        kind = el.get("type")
        if kind not in ("revolute", "continuous", "prismatic", "fixed", "floating", "planar"):
            return "invalid"
        ends = [el.find(t) for t in ("parent", "child")]
        if any(e is None or e.get("link") not in names for e in ends):
            return "invalid"
        p, c = (e.get("link") for e in ends)
        if p == c or c in parent_of:
            return "invalid"
        parent_of[c] = p
        origin = el.find("origin")
        if origin is not None and any(origin.get(a) is not None and _finite(origin.get(a), 3) is None
                                      for a in ("xyz", "rpy")):
            return "invalid"
        axis = el.find("axis")
        if axis is not None and kind not in ("fixed", "floating"):
            a = _finite(axis.get("xyz") or "", 3)
            if a is None or not any(a):
                return "invalid"
        limit = el.find("limit")
        if limit is not None and kind in ONE_DOF:
            bounds = []
            for attr in ("lower", "upper", "velocity", "effort"):
                if attr in ("lower", "upper") and kind == "continuous":
                    continue
                text = limit.get(attr)
                if text is None:
                    bounds.append(0.0 if attr in ("lower", "upper") else None)
                    continue
                x = _finite(text, 1)
                if x is None or (attr in ("velocity", "effort") and x[0] < 0):
                    return "invalid"
                bounds.append(x[0])
            if kind != "continuous" and bounds[0] > bounds[1]:
                return "invalid"
        dynamics = el.find("dynamics")
        if dynamics is not None and kind in ONE_DOF and dynamics.get("damping") is not None:
            d = _finite(dynamics.get("damping"), 1)
            if d is None or d[0] < 0:
                return "invalid"
    roots = [n for n in names if n not in parent_of]
    if len(roots) != 1:
        return "invalid"
    for n in names:                     # every link reaches the root without a cycle
        seen = set()
        while n in parent_of:
            if n in seen:
                return "invalid"
            seen.add(n)
            n = parent_of[n]
    return inconsistent


def _reformatted(text, rng):
    """The same numbers written differently (exponent, sign, padding), or None."""
    try:
        vals = [float(x) for x in text.split()]
    except ValueError:
        return None
    if not vals:
        return None
    forms = [lambda x: repr(x), lambda x: f"{x:.17e}", lambda x: f"+{x!r}" if x >= 0 else repr(x)]
    sep = ["  ", " \t", "\n "][int(rng.integers(3))]
    return " " + sep.join(forms[int(rng.integers(3))](x) for x in vals) + " "


def urdf_edits(root, rng):
    """One random edit of the tree, applied in place: (description, "same" or "edit")."""
    sites = [(el, attr) for el in root.iter() for attr in el.keys()]
    if rng.random() < 0.2:                                  # remove an element
        parents = [(par, ch) for par in root.iter() for ch in par]
        par, ch = parents[int(rng.integers(len(parents)))]
        par.remove(ch)
        return f"remove <{ch.tag}> from <{par.tag} {par.get('name')}>", "same" if ch.tag in IGNORED_ELEMENTS else "edit"
    if rng.random() < 0.25:                                 # a number in an inertia tensor
        el = root.findall(".//inertia")[int(rng.integers(len(root.findall(".//inertia"))))]
        attr = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")[int(rng.integers(6))]
        old, new = el.get(attr), ["-1", "0.5", "3", "0", "1e-6", "-1e-30", "0.02"][int(rng.integers(7))]
        el.set(attr, new)
        return f"<inertia {attr}={old!r}> -> {new!r}", "same" if new == old else "edit"
    el, attr = sites[int(rng.integers(len(sites)))]
    old = el.get(attr)
    link_names = [x.get("name") for x in root.findall("link")]
    junk = ["", "x", "1 2", "nan", "-1", "1e400", "0 0 0", "1 0 0 0", "world", "base", "revolute", "&amp;", " ",
            "0.5", "3", "0.1 -0.2 0.3", "0 0 2", *link_names, "fixed", "continuous", "prismatic", "planar", "floating"]
    same = _reformatted(old, rng)
    if same is not None and rng.random() < 0.3:
        el.set(attr, same)
        return f"<{el.tag} {attr}={old!r}> -> {same!r}", "same"
    new = junk[int(rng.integers(len(junk)))]
    el.set(attr, new)
    ignored = (el.tag, attr) in IGNORED_ATTRS or new == old
    return f"<{el.tag} {attr}={old!r}> -> {new!r}", "same" if ignored else "edit"


@requires_pinocchio
def test_mutated_urdf_loads_or_is_refused_as_classified():
    """Random edits of a valid file, each judged by the URDF rules (``urdf_oracle``) before
    loading: an invalid file is refused with ModelError (nothing else escapes), a valid one
    loads, with an InertiaWarning for exactly the links whose inertia is inconsistent (which
    strict=True refuses), and a file changed only where the loader does not look is the same
    model."""
    import xml.etree.ElementTree as ET
    rng = np.random.default_rng(7)
    original = load_urdf(COVER)
    counts = {"same": 0, "valid": 0, "warn": 0, "invalid": 0}
    for case in range(500):
        root = ET.fromstring(COVER)
        edits = [urdf_edits(root, rng) for _ in range(int(rng.integers(1, 4)))]
        text = ET.tostring(root, encoding="unicode")
        expected = urdf_oracle(root)
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                m = load_urdf(text, mimic=bool(rng.integers(2)))
        except ej.ModelError as e:
            assert expected == "invalid", f"case {case}: {edits} refused: {e}"
            assert str(e).startswith("URDF: ")
            counts["invalid"] += 1
            continue
        assert expected != "invalid", f"case {case}: {edits} loaded"
        warned = {w.message.link for w in caught if issubclass(w.category, ej.InertiaWarning)}
        assert warned == expected, f"case {case}: {edits}: warned {warned}, expected {expected}"
        assert len(caught) == len(warned)           # nothing else warns
        if expected:
            counts["warn"] += 1
            with pytest.raises(ej.ModelError, match=r"link '(%s)'.*strict=True" % "|".join(map(re.escape, expected))):
                load_urdf(text, strict=True)
        elif all(cls == "same" for _, cls in edits):
            counts["same"] += 1
            assert_same_model(m, original)
        else:
            counts["valid"] += 1
        assert m.nbodies == len(root.findall("link"))
    assert min(counts.values()) >= 10, counts


# ------------------------------------------------------------------------------ Pinocchio
def random_urdf(seed, n=12, types=("revolute", "continuous", "prismatic", "fixed"), mimic=0):
    """A random tree URDF: random origins, non-unit axes, full inertia tensors with rotated
    inertial frames, joints listed in a shuffled order."""
    rng = np.random.default_rng(seed)
    def r(x):
        return repr(float(x))

    def vec(v):
        return " ".join(r(x) for x in v)
    links, joints = [], []
    kinds, parent = {}, {0: None}
    for i in range(n + 1):
        m = rng.uniform(0.2, 3.0)
        Rb = models.random_rotation(rng)
        I = Rb @ models.box_inertia(m, *rng.uniform(0.05, 0.5, size=3)) @ Rb.T
        links.append(f'<link name="L{i}"><inertial><origin xyz="{vec(rng.normal(scale=0.1, size=3))}" '
                     f'rpy="{vec(rng.uniform(-3, 3, size=3))}"/><mass value="{r(m)}"/><inertia ixx="{r(I[0, 0])}" '
                     f'ixy="{r(I[0, 1])}" ixz="{r(I[0, 2])}" iyy="{r(I[1, 1])}" iyz="{r(I[1, 2])}" izz="{r(I[2, 2])}"/>'
                     "</inertial></link>")
    for i in range(1, n + 1):
        t = types[int(rng.integers(len(types)))]
        kinds[i] = t
        parent[i] = int(rng.integers(i))
        body = (f'<origin xyz="{vec(rng.normal(scale=0.3, size=3))}" rpy="{vec(rng.uniform(-3, 3, size=3))}"/>'
                f'<axis xyz="{vec(rng.normal(size=3))}"/>')
        if t in ("revolute", "prismatic", "continuous"):
            body += '<limit lower="-3" upper="3" effort="10" velocity="5"/>'
        if mimic and t == "revolute":
            # sources among the ancestors: Pinocchio needs the source created before the mimic
            ancestors, a = [], parent[i]
            while a:
                ancestors.append(a)
                a = parent[a]
            srcs = [k for k in ancestors if kinds[k] == "revolute" and "mimic" not in joints[k - 1]]
            if srcs and rng.random() < 0.8:
                body += (f'<mimic joint="J{srcs[int(rng.integers(len(srcs)))]}" multiplier="{r(rng.uniform(-2, 2))}" '
                         f'offset="{r(rng.uniform(-1, 1))}"/>')
        joints.append(f'<joint name="J{i}" type="{t}"><parent link="L{parent[i]}"/>'
                      f'<child link="L{i}"/>{body}</joint>')
    order = rng.permutation(len(joints))
    return '<robot name="rand">' + "".join(links) + "".join(joints[k] for k in order) + "</robot>"


def pin_state(pm, m, q, qd, qdd, kin):
    """Pinocchio's q, v, a for our state (by joint name)."""
    qp, vp, ap = np.zeros(pm.nq), np.zeros(pm.nv), np.zeros(pm.nv)
    for j in range(1, pm.njoints):
        jm, name = pm.joints[j], pm.names[j]
        kind = jm.shortname()
        if "Mimic" in kind:
            continue
        qs, vs = m.q_slice(name), m.v_slice(name)
        iq, iv = jm.idx_q, jm.idx_v
        if kind == "JointModelFreeFlyer":
            r, quat = q[qs][:3], q[qs][3:]
            Rt = kin.R[m.joint_index(name)].T                  # root: P is the world
            qp[iq:iq + 7] = [*r, *quat[1:], quat[0]]
            rd, w = qd[vs][:3], qd[vs][3:]
            vp[iv:iv + 6] = [*(Rt @ rd), *w]
            ap[iv:iv + 6] = [*(Rt @ qdd[vs][:3] - np.cross(w, Rt @ rd)), *qdd[vs][3:]]
        elif jm.nq == 2 and jm.nv == 1:      # continuous: (cos, sin)
            qp[iq:iq + 2] = [np.cos(q[qs][0]), np.sin(q[qs][0])]
            vp[iv], ap[iv] = qd[vs][0], qdd[vs][0]
        else:
            qp[iq:iq + jm.nq] = q[qs]
            vp[iv:iv + jm.nv] = qd[vs]
            ap[iv:iv + jm.nv] = qdd[vs]
    return qp, vp, ap


def velocity_map(pm, m, kin):
    """T with v_pin = T v: the identity but for free flyers, whose linear velocity Pinocchio
    expresses in the joint's own axes (ORACLES.md)."""
    T = np.zeros((pm.nv, m.nv))
    for j in range(1, pm.njoints):
        jm, name = pm.joints[j], pm.names[j]
        if jm.nv == 0:
            continue
        vs = m.v_slice(name)
        T[jm.idx_v:jm.idx_v + jm.nv, vs] = np.eye(jm.nv)
        if jm.shortname() == "JointModelFreeFlyer":
            T[jm.idx_v:jm.idx_v + 3, vs.start:vs.start + 3] = kin.R[m.joint_index(name)].T
    return T


def compare_dynamics_with_pinocchio(m, pm, seed, tol=1e-9):
    """Inverse dynamics and mass matrix against Pinocchio; a model with mimic joints goes through
    its expansion: tau = Gv^T tau_full, M = Gv^T M_full Gv."""
    rng = np.random.default_rng(seed)
    q = rng.uniform(-2.0, 2.0, size=m.nq)
    for _, sl in m.quaternion_blocks():
        q[sl] /= np.linalg.norm(q[sl])
    qd, qdd = rng.normal(size=m.nv), rng.normal(size=m.nv)
    full = m.expanded()
    Gv = m.mimic_map()[2]
    qf = m.expand_q(q)
    tau = Gv.T @ ej.rnea(full, qf, m.expand_v(qd), m.expand_v(qdd))
    M = Gv.T @ ej.mass_matrix(full, qf) @ Gv
    kin = ej.forward_kinematics(full, qf)
    qp, vp, ap = pin_state(pm, m, q, qd, qdd, kin)
    d = pm.createData()
    T = velocity_map(pm, m, kin)
    Mp = pin.crba(pm, d, qp)
    Mp = np.triu(Mp) + np.triu(Mp, 1).T
    scale = max(1.0, np.abs(M).max(initial=0.0))
    np.testing.assert_allclose(M, T.T @ Mp @ T, atol=tol * scale)
    tau_p = pin.rnea(pm, d, qp, vp, ap)
    np.testing.assert_allclose(tau, T.T @ tau_p, atol=tol * max(1.0, np.abs(tau).max(initial=0.0)))


def compare_with_pinocchio(m, pm, seed, tol=1e-9):
    """World pose, twist and classical acceleration of every link frame against Pinocchio."""
    rng = np.random.default_rng(seed)
    q = rng.uniform(-2.0, 2.0, size=m.nq)
    for _, sl in m.quaternion_blocks():
        q[sl] /= np.linalg.norm(q[sl])
    qd, qdd = rng.normal(size=m.nv), rng.normal(size=m.nv)
    full = m.expanded()          # mimic joints: the expanded model at the mapped state
    kin = ej.forward_kinematics(full, m.expand_q(q), m.expand_v(qd), m.expand_v(qdd))
    qp, vp, ap = pin_state(pm, m, q, qd, qdd, kin)
    d = pm.createData()
    pin.forwardKinematics(pm, d, qp, vp, ap)
    pin.updateFramePlacements(pm, d)
    for i in range(1, m.nbodies + 1):
        f = pm.getFrameId(m.body_names[i], pin.BODY)
        np.testing.assert_allclose(kin.R[i], d.oMf[f].rotation, atol=tol, err_msg=m.body_names[i])
        np.testing.assert_allclose(kin.p[i], d.oMf[f].translation, atol=tol, err_msg=m.body_names[i])
        v = pin.getFrameVelocity(pm, d, f, pin.LOCAL_WORLD_ALIGNED)
        a = pin.getFrameClassicalAcceleration(pm, d, f, pin.LOCAL_WORLD_ALIGNED)
        np.testing.assert_allclose(kin.omega[i], v.angular, atol=tol)
        np.testing.assert_allclose(kin.v[i], v.linear, atol=tol)
        np.testing.assert_allclose(kin.alpha[i], a.angular, atol=tol)
        np.testing.assert_allclose(kin.a[i], a.linear, atol=tol)


@requires_pinocchio
@pytest.mark.parametrize("seed", range(4))
def test_random_urdf_against_pinocchio(seed):
    xml = random_urdf(seed)
    m = load_urdf(xml)
    pm = pin.buildModelFromXML(xml)
    compare_with_pinocchio(m, pm, seed)
    compare_dynamics_with_pinocchio(m, pm, seed)
    # inertias: Pinocchio keeps each moving link's inertia in its joint frame (= our body frame);
    # fixed links are merged into their parent there, so compare only the links of moving joints
    # that carry no fixed children
    for j in range(1, pm.njoints):
        i = m.joint_index(pm.names[j])
        if any(m.parent[k] == i and m.nv_joint[k] == 0 for k in range(1, m.nbodies + 1)):
            continue
        Y = pm.inertias[j]
        assert abs(Y.mass - m.body_mass[i]) < 1e-12
        np.testing.assert_allclose(Y.lever, m.body_com[i], atol=1e-12)
        np.testing.assert_allclose(Y.inertia, m.body_inertia[i], atol=1e-12)


@requires_pinocchio
@pytest.mark.parametrize("seed", range(2))
def test_floating_random_urdf_against_pinocchio(seed):
    xml = random_urdf(10 + seed, types=("revolute", "prismatic", "fixed", "continuous"))
    m = load_urdf(xml, floating_base="quaternion")
    pm = pin.buildModelFromXML(xml, pin.JointModelFreeFlyer())
    assert m.joint_names[1] == pm.names[1] == "root_joint"
    compare_with_pinocchio(m, pm, seed)
    compare_dynamics_with_pinocchio(m, pm, seed)


@requires_pinocchio
@pytest.mark.parametrize("seed", (20, 23, 26))
def test_mimic_random_urdf_against_pinocchio(seed):
    xml = random_urdf(seed, n=14, types=("revolute", "prismatic", "revolute", "fixed"), mimic=True)
    m = load_urdf(xml)
    assert m.has_mimic
    pm = pin.buildModelFromXML(xml, mimic=True)
    assert (pm.nq, pm.nv) == (m.nq, m.nv)
    compare_with_pinocchio(m, pm, seed)
    compare_dynamics_with_pinocchio(m, pm, seed)
    compare_with_pinocchio(load_urdf(xml, mimic=False), pin.buildModelFromXML(xml), seed)


@requires_pinocchio
def test_cover_against_pinocchio():
    # Pinocchio's planar joint has the plane normal to z only, and it needs position limits on
    # revolute and prismatic joints
    table = '<axis xyz="0 1 0"/>\n  </joint>\n  <joint name="fly"'
    xml = (COVER.replace(table, table.replace("0 1 0", "0 0 1"))
           .replace('<limit lower="-0.1" upper="0.3"/>', '<limit lower="-0.1" upper="0.3" effort="1" velocity="1"/>'))
    m = load_urdf(xml)
    pm = pin.buildModelFromXML(xml)
    rng = np.random.default_rng(3)
    q = rng.normal(size=m.nq)
    sl = m.q_slice("fly")
    q[sl.start + 3:sl.stop] /= np.linalg.norm(q[sl.start + 3:sl.stop])
    kin = ej.forward_kinematics(m, q)
    qp = np.zeros(pm.nq)
    for j in range(1, pm.njoints):
        jm, name = pm.joints[j], pm.names[j]
        x = q[m.q_slice(name)]
        kind = jm.shortname()
        if kind == "JointModelPlanar":
            x = [x[0], x[1], np.cos(x[2]), np.sin(x[2])]
        elif kind == "JointModelFreeFlyer":
            x = [*x[:3], *x[4:], x[3]]
        elif jm.nq == 2 and jm.nv == 1:      # continuous: (cos, sin)
            x = [np.cos(x[0]), np.sin(x[0])]
        qp[jm.idx_q:jm.idx_q + jm.nq] = x
    d = pm.createData()
    pin.framesForwardKinematics(pm, d, qp)
    for i in range(1, m.nbodies + 1):
        f = pm.getFrameId(m.body_names[i], pin.BODY)
        np.testing.assert_allclose(kin.R[i], d.oMf[f].rotation, atol=1e-12)
        np.testing.assert_allclose(kin.p[i], d.oMf[f].translation, atol=1e-12)


@requires_pinocchio
def test_arm7_urdf_against_pinocchio():
    path = models.shipped_path("arm7.urdf")
    m = load_urdf(path)
    pm = pin.buildModelFromUrdf(path)
    compare_with_pinocchio(m, pm, 5)
    compare_dynamics_with_pinocchio(m, pm, 5)


def compare_aba_with_pinocchio(m, pm, seed, tol=1e-8):
    """Forward dynamics against Pinocchio (our tau is Tᵀ tau_pin, see ``velocity_map``) and
    against our own inverse dynamics.  A joint that carries a massless subtree makes the mass
    matrix singular: ABA then reports it, and the mass matrix must indeed be singular there."""
    rng = np.random.default_rng(100 + seed)
    q = rng.uniform(-2.0, 2.0, size=m.nq)
    for _, sl in m.quaternion_blocks():
        q[sl] /= np.linalg.norm(q[sl])
    qd, tau = rng.normal(size=m.nv), rng.normal(size=m.nv)
    try:
        qdd = ej.aba(m, q, qd, tau)
    except ej.SingularJointError:
        ev = np.linalg.eigvalsh(ej.mass_matrix(m, q))
        assert ev[0] <= 1e-12 * ev[-1], f"ABA reported a singular joint but M has eigenvalues {ev[0]}..{ev[-1]}"
        return False
    np.testing.assert_allclose(ej.rnea(m, q, qd, qdd), tau, atol=tol * max(1.0, np.abs(qdd).max(initial=0.0)))
    kin = ej.forward_kinematics(m, q)
    qp, vp, ap = pin_state(pm, m, q, qd, qdd, kin)
    T = velocity_map(pm, m, kin)
    a_pin = pin.aba(pm, pm.createData(), qp, vp, np.linalg.solve(T.T, tau))
    np.testing.assert_allclose(ap, a_pin, atol=tol * max(1.0, np.abs(a_pin).max(initial=0.0)))
    return True


# ------------------------------------------------------------------------------ shipped quadruped
def test_shipped_quadruped_is_its_generator():
    assert open(models.shipped_path("quadruped.urdf")).read() == models.quadruped_urdf()


@requires_pinocchio
def test_quadruped_floating_base_against_pinocchio():
    path = models.shipped_path("quadruped.urdf")
    m = models.load("quadruped.urdf", floating_base="quaternion")
    assert (m.nq, m.nv, m.nbodies) == (19, 18, 17) and m.joint_q_slices()["root_joint"] == slice(0, 7)
    pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())
    for seed in range(2):
        compare_with_pinocchio(m, pm, seed)
        compare_dynamics_with_pinocchio(m, pm, seed, tol=1e-12)
        assert compare_aba_with_pinocchio(m, pm, seed)
    fixed = load_urdf(path)
    compare_dynamics_with_pinocchio(fixed, pin.buildModelFromUrdf(path), 3, tol=1e-12)
    np.testing.assert_allclose(m.total_mass, pin.computeTotalMass(pm), rtol=1e-15)


# ------------------------------------------------------------------------------ example-robot-data
def _robots_dir():
    """The robots/ directory of the example-robot-data package, or None when it is not installed
    (pip's wheel keeps it under cmeel.prefix/share, other installs under the prefix's share/)."""
    from importlib import metadata
    from pathlib import Path
    import sys
    try:
        d = Path(metadata.distribution("example-robot-data").locate_file("cmeel.prefix/share/example-robot-data/robots"))
        if d.is_dir():
            return d
    except metadata.PackageNotFoundError:
        pass
    d = Path(sys.prefix) / "share" / "example-robot-data" / "robots"
    return d if d.is_dir() else None


ROBOTS_DIR = _robots_dir()
ROBOTS = sorted(str(p.relative_to(ROBOTS_DIR)) for p in ROBOTS_DIR.rglob("*.urdf")) if ROBOTS_DIR else []


def written_inertias(path):
    """(root link, links whose <inertia> as written is not positive semi-definite or breaks the
    triangle inequality beyond 1e-9 of its largest principal moment), read with ElementTree: the
    principal moments do not depend on the inertial frame the loader turns the tensor out of."""
    import xml.etree.ElementTree as ET
    robot_el = ET.parse(path).getroot()
    children = {j.find("child").get("link") for j in robot_el.findall("joint")}
    root = next(el.get("name") for el in robot_el.findall("link") if el.get("name") not in children)
    bad = set()
    for el in robot_el.findall("link"):
        ie = el.find("inertial/inertia")
        if ie is None or el.get("name") == "world" == root:
            continue
        xx, xy, xz, yy, yz, zz = (float(ie.get(a)) for a in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"))
        ev = np.linalg.eigvalsh(np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]]))
        tol = 1e-9 * np.abs(ev).max()
        if ev[0] < -tol or ev[0] + ev[1] < ev[2] - tol:
            bad.add(el.get("name"))
    return root, bad


@requires_pinocchio
@pytest.mark.skipif(not ROBOTS, reason="example-robot-data (in the test extra) is not installed")
@pytest.mark.parametrize("rel", ROBOTS)
def test_example_robot_data_against_pinocchio(rel):
    """Every URDF of example-robot-data that Pinocchio loads, loads: inconsistent inertias kept
    as written with one InertiaWarning each (strict=True refuses, balance_inertia=True repairs
    them); inverse dynamics and mass matrix agree with Pinocchio at two random states with the
    root fixed and, where the root link is not the world, on a free flyer (with forward dynamics);
    mimic joints agree with Pinocchio's mimic model where Pinocchio builds one; the JSON form
    reads back as the same model."""
    path = str(ROBOTS_DIR / rel)
    try:
        pm = pin.buildModelFromUrdf(path)
    except Exception:                            # noqa: BLE001 - Pinocchio's refusals are RuntimeError or ValueError
        with pytest.raises(ej.ModelError, match=f"^{re.escape(path)}: "):
            load_urdf(path, mimic=False)
        return
    root, inconsistent = written_inertias(path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = load_urdf(path, mimic=False)
    # (other warnings, e.g. a ResourceWarning of an earlier test's garbage, are not the loader's)
    caught = [w for w in caught if issubclass(w.category, ej.InertiaWarning)]
    assert {w.message.link for w in caught} == inconsistent and len(caught) == len(inconsistent)
    assert all(issubclass(w.category, ej.InertiaWarning) and str(w.message).startswith(f"{path}: link ")
               for w in caught)
    assert m.nv == pm.nv
    # Pinocchio merges the links fixed to the world into the universe, inertias[0]
    np.testing.assert_allclose(m.total_mass, sum(Y.mass for Y in pm.inertias), rtol=1e-13)
    for seed in range(2):
        compare_dynamics_with_pinocchio(m, pm, seed, tol=1e-13)
    assert_same_model(ej.Model.from_json(m.to_json()), m)

    if inconsistent:
        with pytest.raises(ej.ModelError, match=rf"^{re.escape(path)}: link '.*': <inertial>: .*strict=True"):
            load_urdf(path, mimic=False, strict=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ej.InertiaWarning)
            mb = load_urdf(path, mimic=False, balance_inertia=True)
        changed = {m.body_names[i] for i in range(1, m.nbodies + 1)
                   if not np.array_equal(m.body_inertia[i], mb.body_inertia[i])}
        assert changed == inconsistent
        assert not any(b.get("inertia_as_written") for b in mb.to_dict()["bodies"])

    with open(path) as f:
        has_mimic = "<mimic" in f.read()
    if has_mimic:
        try:
            pmm = pin.buildModelFromUrdf(path, mimic=True)
        except Exception:                        # noqa: BLE001 - a source after its mimic joint
            pmm = None
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ej.InertiaWarning)
                mm = load_urdf(path)
        except ej.ModelError as e:               # a <mimic> naming a joint the file lacks
            assert pmm is None and "no joint of that name (mimic=False ignores" in str(e)
        else:
            if pmm is not None:
                compare_dynamics_with_pinocchio(mm, pmm, 2, tol=1e-13)
            compare_dynamics_with_pinocchio(mm.expanded(), pm, 3, tol=1e-13)

    if root != "world":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ej.InertiaWarning)
            mf = load_urdf(path, floating_base="quaternion", mimic=False)
        pmf = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())
        for seed in range(2):
            compare_dynamics_with_pinocchio(mf, pmf, seed, tol=1e-13)
            compare_aba_with_pinocchio(mf, pmf, seed, tol=1e-10)


def test_load_urdf_takes_its_path_by_keyword():
    path = models.shipped_path("arm7.urdf")
    assert_same_model(load_urdf(path=path), load_urdf(path))
