"""Model generators, the shipped models and their two copies, and ``models.load``."""
import os
from pathlib import Path

import numpy as np
import pytest

import ejce_nb as ej
from conftest import assert_same_model
from ejce_nb import models

from ejce_nb.core.transform import rot_axis_angle
from ejce_nb.io.urdf import load_urdf

J = ej.joints
REPO_DATA = Path(__file__).resolve().parent.parent / "data"
PACKAGE_DATA = Path(models.DATA_DIR)


# ------------------------------------------------------------------------------ shipped files
def test_every_shipped_model_is_in_data():
    """The shipped models live in the repository's data/, which the package installs as its data/."""
    names = set(os.listdir(PACKAGE_DATA))
    assert names >= {f"{n}.json" for n in models.SHIPPED} | set(models.SHIPPED_URDF)
    for name in names:
        assert (REPO_DATA / name).read_bytes() == (PACKAGE_DATA / name).read_bytes(), name


@pytest.mark.parametrize("name", sorted(models.SHIPPED))
def test_shipped_files_match_their_generators(name):
    # the files were written on one machine: allow the last bit of the computed rotations
    assert_same_model(models.load(name), models.SHIPPED[name](), atol=1e-15)
    assert_same_model(ej.Model.from_json(REPO_DATA / f"{name}.json"), models.load(name))


def test_shipped_urdf_matches_its_generator():
    assert (PACKAGE_DATA / "arm7.urdf").read_text() == models.arm7_urdf()


def test_arm7_urdf_is_arm7_json():
    assert_same_model(load_urdf(models.arm7_urdf()), models.arm7())
    assert_same_model(models.load("arm7.urdf"), models.load("arm7"), atol=1e-15)


def test_load_forms(tmp_path):
    arm = models.load("arm7")
    assert_same_model(models.load(models.shipped_path("arm7")), arm)
    assert_same_model(models.load(Path(models.shipped_path("arm7"))), arm)
    floating = models.load("arm7.urdf", mimic=False)
    assert floating.nq == 7
    path = tmp_path / "copy.json"
    arm.to_json(path)
    assert_same_model(models.load(str(path)), arm)
    for bad, msg in (("nope", "neither a shipped model"), (tmp_path / "missing.json", "cannot read model file"),
                     (3, "model name or a file path"), (tmp_path / "missing.urdf", "cannot read URDF file")):
        with pytest.raises(ej.ModelError, match=msg):
            models.load(bad)
    with pytest.raises(ej.ModelError, match="apply to URDF, MJCF and OpenSim files only"):
        models.load("arm7", floating_base="quaternion")
    with pytest.raises(ej.ModelError, match="root link is 'world'"):
        models.load("arm7.urdf", floating_base="quaternion")


def test_summary_names_every_body():
    m = models.load("humanoid")
    text = m.summary()
    assert text.startswith("bodies 15, nq 34, nv 31")
    assert all(name in text for name in m.body_names[1:])


# ------------------------------------------------------------------------------ the examples
def test_spherical_paper():
    m = models.spherical_paper()
    assert m.nbodies == 2 and m.joint_specs[2] == J.Spherical("ZXZ")
    psi, th, phi, turn = 0.3, -0.8, 1.7, 0.4
    q = np.array([turn, psi, th, phi])
    kin = ej.forward_kinematics(m, q)
    Rz = lambda a: rot_axis_angle((0, 0, 1), a)     # noqa: E731
    Rx = lambda a: rot_axis_angle((1, 0, 0), a)     # noqa: E731
    R_P = Rz(turn) @ m.joint_P_rot[2]
    R2 = R_P @ Rz(psi) @ Rx(th) @ Rz(phi) @ m.joint_C_rot[2].T
    np.testing.assert_allclose(kin.R[2], R2, atol=1e-14)
    o_C = Rz(turn) @ m.joint_P_pos[2]               # the joint point, fixed in both bodies
    np.testing.assert_allclose(kin.p[2] + kin.R[2] @ m.joint_C_pos[2], o_C, atol=1e-14)


def test_arm7():
    m = models.arm7()
    revolute = [s for s in m.joint_specs if isinstance(s, J.Revolute)]
    assert len(revolute) == 7 and m.nq == m.nv == 7
    assert np.all(np.isfinite(m.q_lower)) and np.all(m.q_lower < m.q_upper)
    assert np.all(m.v_limit > 0) and np.all(m.effort_limit > 0)
    assert 15.0 < m.total_mass < 25.0
    # at q = 0 the Panda-like flange is at (0.088, 0, 0.333 + 0.316 + 0.384 - 0.107)
    kin = ej.forward_kinematics(m, np.zeros(7))
    np.testing.assert_allclose(kin.p[m.body_index("link8")], [0.088, 0.0, 0.926], atol=1e-12)


def test_humanoid():
    m = models.humanoid()
    spec = dict(zip(m.joint_names, m.joint_specs))
    assert spec["root"] == J.Free("quaternion") and m.parent[m.body_index("pelvis")] == 0
    assert spec["l_hip"] == spec["r_hip"] == J.Spherical("ZYX")
    assert spec["l_shoulder"] == spec["r_shoulder"] == J.Spherical("quaternion")
    for name in ("l_knee", "r_knee", "l_elbow", "r_elbow"):
        assert isinstance(spec[name], J.Revolute)
    assert sorted(m.body_names[i] for i in np.nonzero(m.parent == m.body_index("pelvis"))[0]) == \
        ["l_thigh", "r_thigh", "torso"]
    assert 65.0 < m.total_mass < 85.0
    kin = ej.forward_kinematics(m, m.neutral())
    feet = [kin.p[m.body_index(f)][2] for f in ("l_foot", "r_foot")]
    np.testing.assert_allclose(feet, [1.0 - 0.08 - 0.84] * 2, atol=1e-12)
    assert kin.p[m.body_index("head")][2] > 1.5


def test_knee_translations_follow_the_splines():
    m = models.knee()
    knee = m.joint_specs[m.joint_index("knee")]
    assert isinstance(knee, J.Composite) and knee.nq == 1
    angle = -0.349066                                  # a knot of both splines
    kin = ej.forward_kinematics(m, np.array([0.2, angle, 0.0]))
    f, t = m.body_index("femur"), m.body_index("tibia")
    rel_p = kin.R[f].T @ (kin.p[t] - kin.p[f])
    np.testing.assert_allclose(rel_p, [-0.001, -0.3976, 0.0], atol=1e-14)
    np.testing.assert_allclose(kin.R[f].T @ kin.R[t], rot_axis_angle((0, 0, 1), angle), atol=1e-14)
    # the femur's y axis points up at zero hip flexion
    kin0 = ej.forward_kinematics(m, np.zeros(3))
    np.testing.assert_allclose(kin0.R[f][:, 1], [0.0, 0.0, 1.0], atol=1e-15)


def test_driven_mechanism_follows_its_drives():
    m = models.driven()
    assert m.rheonomic and m.nq == 2
    assert [int(n) for n in m.nq_joint[1:]] == [0, 0, 1, 1]
    t = 0.37
    kin = ej.forward_kinematics(m, np.zeros(2), np.zeros(2), np.zeros(2), t=t)
    s = m.body_index("shaker")
    np.testing.assert_allclose(kin.p[s], [0.05 * np.sin(3 * np.pi * t), 0.0, 1.0], atol=1e-14)
    np.testing.assert_allclose(kin.v[s], [0.05 * 3 * np.pi * np.cos(3 * np.pi * t), 0.0, 0.0], atol=1e-13)
    c = m.body_index("crank")
    np.testing.assert_allclose(kin.R[c], rot_axis_angle((0, 1, 0), np.pi * t), atol=1e-14)
    np.testing.assert_allclose(kin.omega[c], [0.0, np.pi, 0.0], atol=1e-14)


# ------------------------------------------------------------------------------ chain
def test_chain():
    m = models.chain(5)
    assert m.nbodies == m.nq == 5 and m.body_names[1:] == tuple(f"link{i}" for i in range(1, 6))
    assert m.joint_names[5] == "joint5" and m.parent.tolist() == [-1, 0, 1, 2, 3, 4]
    assert all(s == J.Revolute((0.0, 1.0, 0.0)) for s in m.joint_specs[1:])
    kin = ej.forward_kinematics(m, np.zeros(5))
    np.testing.assert_allclose(kin.p[1:, 2], -0.5 * np.arange(5), atol=1e-15)
    assert models.chain(3, "ZYX", link_length=1.0, mass=2.0).nq == 9
    mixed = models.chain(3, ["revolute", J.Prismatic((1.0, 0.0, 0.0)), "free:rotvec"])
    assert [type(s).__name__ for s in mixed.joint_specs[1:]] == ["Revolute", "Prismatic", "Free"]
    assert mixed.joint_specs[3].param == "rotvec"
    assert models.chain(0).nbodies == 0
    for args, msg in (((-1,), "non-negative integer"), ((2, ["revolute"]), "1 joints given for 2 bodies"),
                      ((2, "bogus"), "unknown joint name 'bogus'"), ((2, "revolute:ZYX"), "take a parameterisation")):
        with pytest.raises(ej.ModelError, match=msg):
            models.chain(*args)


def test_joint_names():
    for name in models.KINDS + ("continuous",) + models.ROTATION_PARAMS:
        assert isinstance(models.joint_from_name(name), J.JointSpec)
    assert models.joint_from_name("spherical:xyz") == J.Spherical("xyz")
    assert models.joint_from_name("rheonomic").is_rheonomic()


# ------------------------------------------------------------------------------ random trees
def test_random_tree_is_seeded():
    assert models.random_tree(15, 4).to_json() == models.random_tree(15, 4).to_json()
    assert models.random_tree(15, 4).to_json() != models.random_tree(15, 5).to_json()


def test_random_tree_order_is_parents_first_not_depth_first():
    for seed in range(10):
        m = models.random_tree(30, seed)
        assert all(0 <= m.parent[i] < i for i in range(1, 31))
        assert not models.is_depth_first(m.parent)
        assert m.body_names[1:] == tuple(f"b{i}" for i in range(1, 31))


def test_is_depth_first():
    assert models.is_depth_first([-1, 0, 1, 1, 0])          # 1 -> (2, 3), then 4
    assert not models.is_depth_first([-1, 0, 0, 1])         # 3 (child of 1) after sibling 2
    assert models.is_depth_first([-1, 0, 1, 2, 0, 4])


def test_random_tree_options():
    m = models.random_tree(12, 1, joints=["revolute"])
    assert all(isinstance(s, J.Revolute) for s in m.joint_specs[1:])
    m = models.random_tree(6, 1, joints=[J.Fixed(), "ZXZ"])
    assert {type(s).__name__ for s in m.joint_specs[1:]} <= {"Fixed", "Spherical"}
    assert not np.any(np.isfinite(models.random_tree(10, 2).q_lower))
    assert models.random_tree(0, 0).nbodies == 0
    with pytest.raises(ej.ModelError, match="must not be empty"):
        models.random_tree(3, 0, joints=[])
    with pytest.raises(ej.ModelError, match="non-negative integer"):
        models.random_tree(-2, 0)


def test_random_tree_composites_are_not_degenerate():
    """Every coordinate of a random composite joint moves the child (full-rank Jacobian)."""
    for seed in range(5):
        m = models.random_tree(20, seed, joints=["composite", "rheonomic"])
        q = np.random.default_rng(seed).uniform(-1.0, 1.0, size=m.nq)
        h = 1e-6
        for i in range(1, m.nbodies + 1):
            qs = m.q_slice(i)
            cols = []
            for k in range(qs.start, qs.stop):
                dq = np.zeros(m.nq)
                dq[k] = h
                a, b = ej.forward_kinematics(m, q + dq), ej.forward_kinematics(m, q - dq)
                cols.append(np.concatenate([(a.R[i] - b.R[i]).ravel(), a.p[i] - b.p[i]]) / (2 * h))
            if cols:
                assert np.linalg.matrix_rank(np.array(cols), tol=1e-6) == len(cols)


def test_a_joint_name_the_model_lacks_is_a_key_error_naming_its_joints():
    arm = models.load("arm7")
    slices = arm.joint_q_slices()
    assert slices["joint3"] == arm.q_slice("joint3") and "joint9" not in slices
    with pytest.raises(KeyError) as err:
        slices["joint9"]
    assert str(err.value) == ("no joint named 'joint9'; the joints are "
                              + ", ".join(repr(n) for n in arm.joint_names[1:]))
    with pytest.raises(KeyError, match="no joint named 'x'"):
        arm.joint_v_slices()["x"]
