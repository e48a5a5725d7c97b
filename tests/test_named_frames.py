"""Named frames fixed on bodies: builder, JSON, URDF links merged by fixed joints, MJCF sites."""
import numpy as np
import pytest

import ejce_nb as ej
from ejce_nb.core.transform import rot_axis_angle

URDF = """<robot name="r">
 <link name="base"><inertial><mass value="2"/><origin xyz="0 0 0.1"/>
   <inertia ixx="0.02" iyy="0.03" izz="0.04" ixy="0" ixz="0" iyz="0"/></inertial></link>
 <link name="a"><inertial><mass value="1.5"/><origin xyz="0.2 0 0" rpy="0.1 0.2 0.3"/>
   <inertia ixx="0.01" iyy="0.02" izz="0.025" ixy="0.001" ixz="0" iyz="0"/></inertial></link>
 <link name="bracket"><inertial><mass value="0.7"/><origin xyz="0.05 0.02 -0.03" rpy="0.3 0 0.5"/>
   <inertia ixx="0.003" iyy="0.004" izz="0.005" ixy="0" ixz="0.0002" iyz="0"/></inertial></link>
 <link name="b"><inertial><mass value="1"/><origin xyz="0.15 0 0"/>
   <inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
 <link name="tool"/>
 <joint name="j1" type="revolute"><parent link="base"/><child link="a"/>
   <origin xyz="0 0 0.3" rpy="0 0 0"/><axis xyz="0 0 1"/><limit lower="-3" upper="3"/></joint>
 <joint name="fix1" type="fixed"><parent link="a"/><child link="bracket"/>
   <origin xyz="0.4 0.1 0" rpy="0.2 -0.4 0.6"/></joint>
 <joint name="j2" type="revolute"><parent link="bracket"/><child link="b"/>
   <origin xyz="0.1 0 0.05" rpy="0.5 0 0"/><axis xyz="0 1 0"/><limit lower="-3" upper="3"/></joint>
 <joint name="fix2" type="fixed"><parent link="b"/><child link="tool"/>
   <origin xyz="0.3 -0.1 0.2" rpy="-0.3 0.7 0.1"/></joint>
</robot>"""


def test_urdf_merged_fixed_links_are_frames():
    kept = ej.load_urdf(URDF)
    merged = ej.load_urdf(URDF, merge_fixed=True)
    assert kept.nbodies == 5 and merged.nbodies == 3 and kept.nv == merged.nv == 2
    assert merged.frame_names == ("bracket", "tool")
    assert merged.body_names[merged.frame_body[0]] == "a"
    q, qd = np.array([0.7, -1.1]), np.array([0.4, 0.9])
    for link in ("bracket", "tool"):
        R1, p1 = ej.frame_pose(kept, q, link)
        R2, p2 = ej.frame_pose(merged, q, link)
        np.testing.assert_allclose(R2, R1, atol=1e-12)
        np.testing.assert_allclose(p2, p1, atol=1e-12)
        for ref in ("world", "local", "local_world_aligned"):
            np.testing.assert_allclose(ej.frame_jacobian(merged, q, link, ref),
                                       ej.frame_jacobian(kept, q, link, ref), atol=1e-12)
            np.testing.assert_allclose(ej.frame_jacobian_dot_v(merged, q, qd, link, ref),
                                       ej.frame_jacobian_dot_v(kept, q, qd, link, ref), atol=1e-12)
    # the merged inertias carry the same dynamics
    np.testing.assert_allclose(ej.mass_matrix(merged, q), ej.mass_matrix(kept, q), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ej.rnea(merged, q, qd, np.zeros(2)), ej.rnea(kept, q, qd, np.zeros(2)),
                               rtol=1e-12, atol=1e-12)
    assert merged.total_mass == pytest.approx(kept.total_mass)


def test_builder_frames_json_and_errors():
    b = ej.ModelBuilder()
    b.add_body("l1", joint=ej.joints.Revolute([0, 0, 1]), mass=1.0, com=[0.3, 0, 0], inertia=np.eye(3) * 0.01)
    b.add_body("l2", parent="l1", joint=ej.joints.Revolute([0, 1, 0]),
               placement=ej.Transform(None, [0.5, 0, 0]), mass=1.0, inertia=np.eye(3) * 0.01)
    T = ej.Transform(rot_axis_angle([1, 1, 0], 0.6), [0.2, -0.1, 0.3])
    b.add_frame("tip", "l2", placement=T)
    b.add_frame("ground_mark", "world", placement=ej.Transform(None, [1.0, 2.0, 0.0]))
    with pytest.raises(ej.ModelError, match="a body has that name"):
        b.add_frame("l1", "l2")
    with pytest.raises(ej.ModelError, match="duplicate frame name"):
        b.add_frame("tip", "l1")
    with pytest.raises(ej.ModelError, match="unknown parent 'nope'"):
        b.add_frame("x", "nope")
    m = b.build()
    q = np.array([0.3, -0.8])
    # the named frame is (body, placement)
    np.testing.assert_allclose(ej.frame_jacobian(m, q, "tip", "local"),
                               ej.frame_jacobian(m, q, ("l2", T), "local"), atol=1e-14)
    R, p = ej.frame_pose(m, q, "ground_mark")
    np.testing.assert_allclose(p, [1.0, 2.0, 0.0])
    np.testing.assert_allclose(ej.frame_jacobian(m, q, "ground_mark"), np.zeros((6, 2)))
    # a frame placed in a named frame composes the two placements
    X = ej.Transform(None, [0.0, 0.1, 0.0])
    _, p1 = ej.frame_pose(m, q, ("tip", X))
    Rt, pt = ej.frame_pose(m, q, "tip")
    np.testing.assert_allclose(p1, pt + Rt @ [0.0, 0.1, 0.0], atol=1e-14)
    m2 = ej.Model.from_json(m.to_json())
    assert m2.frame_names == m.frame_names
    np.testing.assert_array_equal(m2.frame_body, m.frame_body)
    np.testing.assert_array_equal(m2.frame_rot, m.frame_rot)
    np.testing.assert_array_equal(m2.frame_pos, m.frame_pos)
    with pytest.raises(ej.ModelError, match="no frame or body named 'tool'.*'tip'"):
        ej.frame_jacobian(m, q, "tool")
    with pytest.raises(ej.ModelError, match="no frame or body named 'tool'"):
        ej.frame_pose(m, q, "tool")
    d = m.to_dict()
    d["frames"][0]["body"] = "nope"
    with pytest.raises(ej.ModelError, match=r"frames\[0\].*unknown parent 'nope'"):
        ej.Model.from_dict(d)


MJCF = """<mujoco><worldbody><site name="origin_mark" pos="0.1 0.2 0.3"/>
 <body name="b1" pos="0 0 0.5" quat="0.9 0.1 0.3 0.2">
  <joint name="h1" type="hinge" axis="0 0 1" pos="0.1 0 0"/><geom type="sphere" size="0.1" mass="1"/>
  <site name="s1" pos="0.3 0.1 -0.2" quat="0.7 0.2 -0.5 0.1"/>
  <body name="b2" pos="0.4 0 0"><joint name="h2" type="hinge" axis="0 1 1"/>
   <joint name="s2" type="slide" axis="1 0 0"/><geom type="box" size="0.1 0.05 0.02" mass="0.5"/>
   <site pos="0.2 -0.1 0.05" euler="0.3 0.2 0.1"/>
   <site name="b1" pos="0 0 0.1"/>
  </body></body></worldbody></mujoco>"""


def test_mjcf_sites_against_mujoco():
    mujoco = pytest.importorskip("mujoco")
    mj = mujoco.MjModel.from_xml_string(MJCF)
    md = mujoco.MjData(mj)
    m = ej.from_mujoco(mj, warn=False)
    assert m.frame_names == ("origin_mark", "s1", "site2", "b1_site")
    rng = np.random.default_rng(3)
    for _ in range(2):
        md.qpos[:] = rng.uniform(-1, 1, mj.nq)
        mujoco.mj_kinematics(mj, md)
        mujoco.mj_comPos(mj, md)
        for k, name in enumerate(m.frame_names):
            R, p = ej.frame_pose(m, md.qpos.copy(), name)
            np.testing.assert_allclose(p, md.site_xpos[k], atol=1e-12)
            np.testing.assert_allclose(R, md.site_xmat[k].reshape(3, 3), atol=1e-12)
            jp, jr = np.zeros((3, mj.nv)), np.zeros((3, mj.nv))
            mujoco.mj_jacSite(mj, md, jp, jr, k)
            J = ej.frame_jacobian(m, md.qpos.copy(), name, "local_world_aligned")
            np.testing.assert_allclose(J[:3], jr, atol=1e-12)
            np.testing.assert_allclose(J[3:], jp, atol=1e-12)
