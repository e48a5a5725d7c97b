"""URDF loading: every element against the same robot built by hand, malformed files, mimic
joints, and Pinocchio's URDF loader as an outside reference for the kinematics."""
import numpy as np
import pinocchio as pin
import pytest

import ejce_nb as ej
from conftest import assert_same_model
from ejce_nb import models
from ejce_nb.model import ARRAYS
from ejce_nb.transform import Transform, rpy_matrix
from ejce_nb.urdf import _z_onto, load_urdf

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
               q_lower=[-1.5], q_upper=[2.5], v_limit=[3.0], effort_limit=[40.0])
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
    from ejce_nb.transform import rot_axis_angle
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


def test_mimic_false_keeps_joints_independent():
    m = load_urdf(MIMIC, mimic=False)
    assert not m.has_mimic and m.nq == 4
    np.testing.assert_array_equal(m.q_lower[m.q_slice("finger2")], [-1.0])


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
    (robot('<link name="a"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="3"/>'
           "</inertial></link>"), "link 'a': <inertial>: inertia violates the triangle inequality"),
    (robot('<link name="a"><inertial><mass value="1"/><inertia ixx="-1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/>'
           "</inertial></link>"), "link 'a': <inertial>: inertia is not positive semi-definite"),
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
    (robot(L, joint('<mimic joint="nope"/>')), r"joint 'j': <mimic joint='nope'>: no joint of that name"),
    (robot(L, joint('<mimic/>')), "joint 'j': <mimic> has no 'joint'"),
    (robot(L, '<link name="c"/>', joint(), joint('<mimic joint="j" multiplier="two"/>', name="k", child="c")),
     r"joint 'k': <mimic multiplier='two'>: not a number"),
    (robot(L, '<link name="c"/>', joint('<mimic joint="k"/>'), joint('<mimic joint="j"/>', name="k", child="c")),
     "form a cycle"),
    (robot(L, '<link name="c"/>', joint(), joint('<mimic joint="j"/>', name="k", type_="fixed", child="c")),
     "joint 'k': <mimic>: a fixed joint cannot mimic"),
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


def test_mutated_urdf_never_crashes():
    """Random edits of a valid file load or raise ModelError: nothing else escapes."""
    rng = np.random.default_rng(7)
    junk = ["", "x", "1 2", "nan", "-1", "1e400", "0 0 0", "1 0 0 0", "world", "base", "revolute", "&amp;", " "]
    tokens = COVER.split('"')
    for _ in range(400):
        t = list(tokens)
        for _ in range(int(rng.integers(1, 4))):
            k = 2 * int(rng.integers(len(t) // 2)) + 1     # the quoted attribute values
            t[k] = junk[int(rng.integers(len(junk)))]
        text = '"'.join(t)
        if rng.random() < 0.2:                              # drop a random element line
            lines = text.splitlines()
            del lines[int(rng.integers(2, len(lines) - 1))]
            text = "\n".join(lines)
        try:
            load_urdf(text, mimic=bool(rng.integers(2)))
        except ej.ModelError:
            pass


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
    scale = max(1.0, np.abs(M).max())
    np.testing.assert_allclose(M, T.T @ Mp @ T, atol=tol * scale)
    tau_p = pin.rnea(pm, d, qp, vp, ap)
    np.testing.assert_allclose(tau, T.T @ tau_p, atol=tol * max(1.0, np.abs(tau).max()))


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


@pytest.mark.parametrize("seed", range(2))
def test_floating_random_urdf_against_pinocchio(seed):
    xml = random_urdf(10 + seed, types=("revolute", "prismatic", "fixed", "continuous"))
    m = load_urdf(xml, floating_base="quaternion")
    pm = pin.buildModelFromXML(xml, pin.JointModelFreeFlyer())
    assert m.joint_names[1] == pm.names[1] == "root_joint"
    compare_with_pinocchio(m, pm, seed)
    compare_dynamics_with_pinocchio(m, pm, seed)


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


def test_arm7_urdf_against_pinocchio():
    path = models.shipped_path("arm7.urdf")
    m = load_urdf(path)
    pm = pin.buildModelFromUrdf(path)
    compare_with_pinocchio(m, pm, 5)
    compare_dynamics_with_pinocchio(m, pm, 5)
