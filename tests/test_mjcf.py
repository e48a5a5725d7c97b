"""MJCF models through MuJoCo's compiler, against MuJoCo itself.

MuJoCo's rigid-body references, with everything that is not rigid tree dynamics disabled
(contacts, constraints, equalities, limits, passive forces, actuation, gravity compensation) and
armature as written: ``mj_inverse`` with ``qacc`` given (M qacc + bias) against ``ej.rnea``,
``mj_fullM`` against ``ej.mass_matrix``, and ``ej.aba`` of MuJoCo's inverse dynamics against the
accelerations it was given (MuJoCo's ``mj_forward`` of the same forces is checked to give them
too).  The published models are the MJCF files the ``mujoco``, ``dm_control`` and ``gymnasium``
packages ship.
"""
import glob
import os
import site
import subprocess
import sys
import warnings

import numpy as np
import pytest

import ejce_nb as ej
from ejce_nb import models

mujoco = pytest.importorskip("mujoco", reason="MJCF loading needs the mujoco package")

RTOL = 1e-9


# ------------------------------------------------------------------------------ MuJoCo side
def rigid_only(mj):
    """Switch off in a compiled MuJoCo model what is not rigid tree dynamics."""
    D = mujoco.mjtDisableBit
    for flag in ("mjDSBL_CONTACT", "mjDSBL_CONSTRAINT", "mjDSBL_EQUALITY", "mjDSBL_LIMIT", "mjDSBL_PASSIVE",
                 "mjDSBL_ACTUATION", "mjDSBL_FRICTIONLOSS", "mjDSBL_SPRING", "mjDSBL_DAMPER"):
        if hasattr(D, flag):
            mj.opt.disableflags |= int(getattr(D, flag))
    mj.body_gravcomp[:] = 0.0
    mj.eq_active0[:] = 0            # from_mujoco then couples no joints: MuJoCo's coordinates
    return mj


def random_state(mj, rng):
    """q (MuJoCo's qpos around qpos0, unit quaternions), qd, qdd."""
    q = mj.qpos0.copy()
    for j in range(mj.njnt):
        t, a = int(mj.jnt_type[j]), int(mj.jnt_qposadr[j])
        if t == mujoco.mjtJoint.mjJNT_FREE:
            q[a:a + 3] += rng.normal(size=3)
            x = rng.normal(size=4)
            q[a + 3:a + 7] = x / np.linalg.norm(x)
        elif t == mujoco.mjtJoint.mjJNT_BALL:
            x = rng.normal(size=4)
            q[a:a + 4] = x / np.linalg.norm(x)
        else:
            q[a] += rng.uniform(-1.0, 1.0)
    return q, rng.normal(size=mj.nv), rng.normal(size=mj.nv)


def mujoco_dynamics(mj, q, qd, qdd):
    """(tau = M qdd + bias, M, MuJoCo's forward accelerations under tau)."""
    d = mujoco.MjData(mj)
    d.qpos[:], d.qvel[:], d.qacc[:] = q, qd, qdd
    mujoco.mj_inverse(mj, d)
    tau = d.qfrc_inverse.copy()
    M = np.zeros((mj.nv, mj.nv))
    mujoco.mj_fullM(mj, d, M)
    d.qfrc_applied[:] = tau
    mujoco.mj_forward(mj, d)
    return tau, M, d.qacc.copy()


def rel(x, ref):
    return float(np.abs(np.asarray(x) - np.asarray(ref)).max() / max(1.0, float(np.abs(ref).max())))


def check_against_mujoco(mj, model, rng, n=3):
    for _ in range(n):
        q, qd, qdd = random_state(mj, rng)
        tau_mj, M_mj, qacc_mj = mujoco_dynamics(mj, q, qd, qdd)
        assert rel(qacc_mj, qdd) < 1e-8          # the reference is consistent
        assert rel(ej.rnea(model, q, qd, qdd), tau_mj) < RTOL
        assert rel(ej.mass_matrix(model, q), M_mj) < RTOL
        assert rel(ej.aba(model, q, qd, tau_mj), qdd) < RTOL


def load_quiet(xml_or_path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ej.MJCFWarning)
        return ej.load_mjcf(xml_or_path, **kw)


def compiled(xml):
    return mujoco.MjModel.from_xml_string(xml)


# ------------------------------------------------------------------------------ published models
def published_models():
    """The MJCF files of the installed mujoco, dm_control and gymnasium packages that MuJoCo
    compiles on their own and that have degrees of freedom."""
    found = []
    for root in site.getsitepackages() + [site.getusersitepackages()]:
        for pkg in ("mujoco", "dm_control", "gymnasium"):
            found += glob.glob(os.path.join(root, pkg, "**", "*.xml"), recursive=True)
    keep = []
    for path in sorted(set(found)):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                mj = mujoco.MjModel.from_xml_path(path)
        except Exception:           # a fragment (included by others), a schema, a missing asset
            continue
        if mj.nv > 0:
            keep.append(path)
    return keep


PUBLISHED = published_models()


def _short(path):
    parts = path.replace(os.sep, "/").split("/")
    for pkg in ("dm_control", "gymnasium", "mujoco"):
        if pkg in parts:
            return "/".join(parts[len(parts) - 1 - parts[::-1].index(pkg):])
    return os.path.basename(path)


def test_the_packages_ship_models():
    if len(PUBLISHED) < 20:
        pytest.skip(f"only {len(PUBLISHED)} MJCF files found: install dm_control and gymnasium (the test extra)")
    names = {_short(p) for p in PUBLISHED}
    assert {"dm_control/suite/humanoid.xml", "dm_control/suite/dog.xml"} <= names


@pytest.mark.parametrize("path", PUBLISHED, ids=[_short(p) for p in PUBLISHED])
def test_published_model_matches_mujoco(path):
    mj = rigid_only(mujoco.MjModel.from_xml_path(path))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ej.MJCFWarning)
        model = ej.from_mujoco(mj, source=path)
    assert (model.nq, model.nv, model.nbodies) == (mj.nq, mj.nv, mj.nbody - 1)
    assert np.array_equal(model.dof_armature, mj.dof_armature)
    check_against_mujoco(mj, model, np.random.default_rng(abs(hash(_short(path))) % 2**32))


def test_batches_with_armature_match_mujoco():
    """The batch kernels (groups of states) carry armature as the one-state ones do."""
    path = next((p for p in PUBLISHED if _short(p) == "dm_control/suite/humanoid.xml"), None)
    if path is None:
        pytest.skip("dm_control is not installed")
    mj = rigid_only(mujoco.MjModel.from_xml_path(path))
    model = ej.from_mujoco(mj, warn=False)
    assert np.count_nonzero(model.dof_armature) > 0
    rng = np.random.default_rng(5)
    states = [random_state(mj, rng) for _ in range(9)]          # two groups of four and one more
    Q, V, A = (np.array([s[k] for s in states]) for k in range(3))
    ref = [mujoco_dynamics(mj, *s) for s in states]
    TAU = np.array([r[0] for r in ref])
    assert rel(ej.rnea(model, Q, V, A), TAU) < RTOL
    assert rel(ej.mass_matrix(model, Q), np.array([r[1] for r in ref])) < RTOL
    assert rel(ej.aba(model, Q, V, TAU), A) < RTOL
    kin = ej.kinetic_energy(model, Q, V)
    assert rel(kin, [0.5 * v @ r[1] @ v for v, r in zip(V, ref)]) < RTOL


# ------------------------------------------------------------------------------ mapping rules
MULTI = """
<mujoco>
  <compiler angle="radian"/>
  <option gravity="0.3 -0.2 -9.81"/>
  <worldbody>
    <body name="a" pos="0.1 0.2 0.3" quat="0.9 0.1 0.3 -0.2">
      <joint name="h1" type="hinge" axis="0 0 1" pos="0.05 0 0" ref="0.4"/>
      <joint name="s1" type="slide" axis="1 1 0" ref="-0.2"/>
      <joint name="h2" type="hinge" axis="1 0 0" pos="0 0.1 -0.05" ref="0.3"/>
      <geom type="box" size="0.1 0.2 0.05" pos="0.1 0 0" euler="0.2 0.1 0" mass="1.3" contype="0" conaffinity="0"/>
      <body name="b" pos="0 0 -0.4">
        <joint name="ball" type="ball" pos="0.02 0.01 0"/>
        <geom type="capsule" fromto="0 0 0 0.1 0 -0.3" size="0.03" contype="0" conaffinity="0"/>
        <body name="c" pos="0 0 -0.3">
          <joint name="slide" type="slide" axis="0 1 0" ref="0.1"/>
          <geom type="sphere" size="0.05" pos="0 0.02 0" contype="0" conaffinity="0"/>
        </body>
      </body>
    </body>
    <body name="float" pos="1 0 0.5" euler="0.3 0.2 0.1">
      <freejoint name="root"/>
      <geom type="box" size="0.1 0.3 0.2" pos="0.05 0.1 0" contype="0" conaffinity="0"/>
    </body>
  </worldbody>
</mujoco>
"""


def test_several_joints_in_one_body_with_refs_and_anchors():
    mj = rigid_only(compiled(MULTI))
    model = ej.from_mujoco(mj)
    a = model.body_index("a")
    assert model.joint_names[a] == "h1+s1+h2"
    assert isinstance(model.joint_specs[a], ej.joints.Composite) and model.nq_joint[a] == 3
    assert list(model.coordinate_names) == (["h1", "s1", "h2"] + [f"ball[{k}]" for k in range(4)] + ["slide"]
                                        + [f"root[{k}]" for k in range(7)])
    check_against_mujoco(mj, model, np.random.default_rng(0), n=4)


def test_coordinates_are_mujocos_qpos():
    """The same q places every body where MuJoCo does (ref included: q is qpos, not qpos - ref)."""
    mj = rigid_only(compiled(MULTI))
    model = ej.from_mujoco(mj)
    d = mujoco.MjData(mj)
    rng = np.random.default_rng(3)
    for q in [mj.qpos0.copy()] + [random_state(mj, rng)[0] for _ in range(3)]:
        d.qpos[:] = q
        mujoco.mj_kinematics(mj, d)
        k = ej.forward_kinematics(model, q)
        assert np.allclose(k.p, d.xpos, atol=1e-12)
        assert np.allclose(k.R, d.xmat.reshape(-1, 3, 3), atol=1e-12)
    # qpos0 (the refs) is the file's pose; neutral() is q = 0 with unit quaternions, another pose
    assert not np.allclose(model.neutral(), mj.qpos0)


def test_free_joint_velocities_are_mujocos():
    """Free joint: [linear velocity of the body origin, world axes; angular velocity, body axes]."""
    mj = rigid_only(compiled(MULTI))
    model = ej.from_mujoco(mj)
    q, qd, _ = random_state(mj, np.random.default_rng(7))
    d = mujoco.MjData(mj)
    d.qpos[:], d.qvel[:] = q, qd
    mujoco.mj_forward(mj, d)
    b = model.body_index("float")
    k = ej.forward_kinematics(model, q, qd)
    vs = model.v_slice("root")
    assert np.allclose(k.v[b], qd[vs][:3], atol=1e-12)
    assert np.allclose(k.R[b].T @ k.omega[b], qd[vs][3:], atol=1e-12)
    res = np.zeros(6)
    mujoco.mj_objectVelocity(mj, d, mujoco.mjtObj.mjOBJ_BODY, b, res, 0)     # [omega; v at the COM], world
    v_com = k.v[b] + np.cross(k.omega[b], d.xipos[b] - d.xpos[b])
    assert np.allclose(res[:3], k.omega[b], atol=1e-12) and np.allclose(res[3:], v_com, atol=1e-12)


PASSIVE = """
<mujoco>
  <compiler angle="degree"/>
  <worldbody>
    <body name="l1">
      <joint name="j1" type="hinge" axis="0 1 0" range="-30 60" limited="true" damping="0.7" stiffness="3"
             springref="10" armature="0.25"/>
      <geom type="capsule" fromto="0 0 0 0 0 -0.5" size="0.04" contype="0" conaffinity="0"/>
      <body name="l2" pos="0 0 -0.5">
        <joint name="j2" type="slide" axis="0 0 1" range="-0.1 0.2" damping="0.2" armature="0.05"/>
        <joint name="j3" type="hinge" axis="1 0 0" limited="false" armature="0.1" frictionloss="0.1"/>
        <geom type="sphere" size="0.1" pos="0 0 -0.1" contype="0" conaffinity="0"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def test_armature_ranges_and_passive_terms():
    model = load_quiet(PASSIVE)
    assert np.allclose(model.dof_armature, [0.25, 0.05, 0.1])
    assert np.allclose(model.dof_damping, [0.7, 0.2, 0.0])
    assert np.allclose(model.dof_stiffness, [3.0, 0.0, 0.0])
    assert np.allclose(model.dof_springref[0], np.deg2rad(10.0))
    assert np.allclose(model.q_lower, [np.deg2rad(-30), -0.1, -np.inf])
    assert np.allclose(model.q_upper, [np.deg2rad(60), 0.2, np.inf])
    # armature is on the diagonal of M, nowhere else
    mj = rigid_only(compiled(PASSIVE))
    q, qd, qdd = random_state(mj, np.random.default_rng(1))
    mj0 = rigid_only(compiled(PASSIVE))
    mj0.dof_armature[:] = 0.0
    M, M0 = ej.mass_matrix(model, q), mujoco_dynamics(mj0, q, qd, qdd)[1]
    assert np.allclose(M - M0, np.diag([0.25, 0.05, 0.1]), atol=1e-13, rtol=0)
    check_against_mujoco(mj, model, np.random.default_rng(2))
    # the passive forces are MuJoCo's springs and dampers
    full = compiled(PASSIVE)
    d = mujoco.MjData(full)
    d.qpos[:], d.qvel[:] = q, qd
    mujoco.mj_forward(full, d)
    ours = -model.dof_damping * qd - model.dof_stiffness * (q - model.dof_springref)
    assert np.allclose(ours, d.qfrc_passive - d.qfrc_frictionloss if hasattr(d, "qfrc_frictionloss")
                       else d.qfrc_passive, atol=1e-12)


def test_simulate_matches_mujoco_rk4():
    """A damped chain with armature, 1 s of RK4 at the same step on both sides."""
    xml = PASSIVE.replace('frictionloss="0.1"', "").replace("<compiler", '<option integrator="RK4" timestep="0.001"/><compiler')
    mj = compiled(xml)
    D = mujoco.mjtDisableBit
    mj.opt.disableflags |= int(D.mjDSBL_CONTACT) | int(D.mjDSBL_CONSTRAINT) | int(D.mjDSBL_ACTUATION)
    model = load_quiet(xml)
    q0, qd0 = np.array([0.3, 0.05, -0.4]), np.array([0.5, -0.1, 1.0])
    d = mujoco.MjData(mj)
    d.qpos[:], d.qvel[:] = q0, qd0
    for _ in range(1000):
        mujoco.mj_step(mj, d)
    # MuJoCo's constraints (joint limits among them) are off: so are ejce_nb's limits
    traj = ej.simulate(model, q0, qd0, 1.0, 0.001, method="rk4", limits=False)
    assert np.abs(traj.q[-1] - d.qpos).max() < 1e-8
    assert np.abs(traj.qd[-1] - d.qvel).max() < 1e-8


COUPLED = """
<mujoco>
  <compiler angle="radian"/>
  <worldbody>
    <body name="l1">
      <joint name="j1" type="hinge" axis="0 1 0" armature="0.1" damping="0.3"/>
      <geom type="capsule" fromto="0 0 0 0 0 -0.5" size="0.04" contype="0" conaffinity="0"/>
      <body name="l2" pos="0 0 -0.5">
        <joint name="j2" type="hinge" axis="0 1 0" ref="0.2" armature="0.2" damping="0.1"/>
        <geom type="capsule" fromto="0 0 0 0 0 -0.4" size="0.03" contype="0" conaffinity="0"/>
        <body name="l3" pos="0 0 -0.4">
          <joint name="j3" type="slide" axis="1 0 0"/>
          <geom type="sphere" size="0.05" contype="0" conaffinity="0"/>
        </body>
      </body>
    </body>
  </worldbody>
  <equality>
    <joint name="lin" joint1="j2" joint2="j1" polycoef="0.1 -0.5 0 0 0"/>
    <joint name="quad" joint1="j3" joint2="j1" polycoef="0 1 0.3 0 0"/>
  </equality>
</mujoco>
"""


COUPLED_LINEAR = COUPLED.replace('<joint name="quad" joint1="j3" joint2="j1" polycoef="0 1 0.3 0 0"/>', "")


def test_linear_joint_equality_is_a_mimic_joint():
    model = ej.load_mjcf(COUPLED_LINEAR, warn=False)
    j2 = model.joint_index("j2")
    assert model.joint_mimic[j2] == model.joint_index("j1")
    assert model.joint_mimic_multiplier[j2] == -0.5
    # q2 - ref2 = 0.1 - 0.5 (q1 - ref1), ref1 = 0, ref2 = 0.2
    assert np.isclose(model.joint_mimic_offset[j2], 0.3)
    assert (model.nq, model.nv) == (2, 2) and list(model.coordinate_names) == ["j1", "j3"]
    # the coupled dynamics are MuJoCo's projected on the independent coordinates, armature and
    # damping of the follower carried along
    mj = rigid_only(compiled(COUPLED_LINEAR))
    Gq, gq, Gv = model.mimic_map()
    rng = np.random.default_rng(4)
    for _ in range(3):
        q, qd, qdd = rng.normal(size=2), rng.normal(size=2), rng.normal(size=2)
        tau_mj, M_mj, _ = mujoco_dynamics(mj, Gq @ q + gq, Gv @ qd, Gv @ qdd)
        assert rel(ej.mass_matrix(model, q), Gv.T @ M_mj @ Gv) < RTOL
        assert rel(ej.rnea(model, q, qd, qdd), Gv.T @ tau_mj) < RTOL
    assert np.allclose(model.dof_damping, [0.3 + 0.25 * 0.1, 0.0])


def test_nonlinear_joint_equality_is_an_exact_coupler():
    # j3 - 0 = 0 + (j1 - 0) + 0.3 (j1 - 0)^2 beside the linear j2 = 0.2 + 0.1 - 0.5 j1
    model = ej.load_mjcf(COUPLED, warn=False)
    assert (model.nq, model.nv) == (1, 1) and list(model.coordinate_names) == ["j1"]
    assert "coupler j3" in model.summary()
    mj = rigid_only(compiled(COUPLED))
    rng = np.random.default_rng(5)
    for _ in range(3):
        q, qd, qdd = rng.normal(size=1), rng.normal(size=1), rng.normal(size=1)
        qf = model.expand(q)
        assert np.allclose(qf, [q[0], 0.3 - 0.5 * q[0], q[0] + 0.3 * q[0] ** 2], rtol=0, atol=1e-15)
        G = model.coupler_jacobian(q)
        assert np.allclose(G[:, 0], [1.0, -0.5, 1.0 + 0.6 * q[0]], rtol=0, atol=1e-15)
        af = model.expand_a(qdd, q, qd)
        assert np.isclose(af[2], (1.0 + 0.6 * q[0]) * qdd[0] + 0.6 * qd[0] ** 2, rtol=1e-14)
        tau_mj, M_mj, _ = mujoco_dynamics(mj, qf, G @ qd, af)
        tau = ej.rnea(model, q, qd, qdd)
        assert rel(tau, G.T @ tau_mj) < RTOL
        assert rel(ej.mass_matrix(model, q), G.T @ M_mj @ G) < RTOL
        assert rel(ej.aba(model, q, qd, tau), qdd) < RTOL


# every kind of joint equality at once: nonlinear and linear couplings of joints in bodies with
# several joints, a chain of three couplings (k4 -> k3 -> k2 -> k1), a joint fixed by an equality
# without joint2 (lk), armature on every joint (the coupled ones' acting through the coupling)
EVERY_EQUALITY = """
<mujoco>
  <compiler angle="radian"/>
  <option gravity="0.2 -0.3 -9.81"/>
  <worldbody>
    <body name="a" pos="0.1 0 0.2" quat="0.9 0.1 0.3 -0.2">
      <joint name="h1" type="hinge" axis="0 0 1" pos="0.05 0 0" ref="0.4" armature="0.02"/>
      <joint name="s1" type="slide" axis="1 1 0" ref="-0.2" armature="0.05" damping="0.1"/>
      <joint name="h2" type="hinge" axis="1 0 0" pos="0 0.1 -0.05" ref="0.3" armature="0.03"/>
      <geom type="box" size="0.1 0.2 0.05" pos="0.1 0 0" euler="0.2 0.1 0" mass="1.3" contype="0" conaffinity="0"/>
      <body name="b" pos="0 0 -0.4">
        <joint name="k1" type="hinge" axis="0 1 0" ref="0.1" armature="0.04"/>
        <geom type="capsule" fromto="0 0 0 0.1 0 -0.3" size="0.03" contype="0" conaffinity="0"/>
        <body name="c" pos="0 0 -0.3">
          <joint name="k2" type="hinge" axis="1 0 0" armature="0.06"/>
          <joint name="k3" type="slide" axis="0 1 0" ref="0.1" armature="0.07"/>
          <geom type="sphere" size="0.05" pos="0 0.02 0" contype="0" conaffinity="0"/>
          <body name="d" pos="0 0.1 -0.2">
            <joint name="k4" type="hinge" axis="0 0 1" armature="0.08" range="-1 1" limited="true"/>
            <joint name="lk" type="hinge" axis="1 0 0" armature="0.5"/>
            <geom type="box" size="0.05 0.02 0.1" pos="0 0.02 -0.05" contype="0" conaffinity="0"/>
          </body>
        </body>
      </body>
    </body>
  </worldbody>
  <equality>
    <joint name="e_s1" joint1="s1" joint2="h1" polycoef="0.01 0.2 -0.3 0.1 0.05"/>
    <joint name="e_h2" joint1="h2" joint2="h1" polycoef="0.05 -0.7 0 0 0"/>
    <joint name="e_k2" joint1="k2" joint2="k1" polycoef="0 0.8 0.2 0 0"/>
    <joint name="e_k3" joint1="k3" joint2="k2" polycoef="0.02 0.5 -0.4 0 0"/>
    <joint name="e_k4" joint1="k4" joint2="k3" polycoef="0 1.5 0 0 0"/>
    <joint name="e_lk" joint1="lk" polycoef="0.3 0 0 0 0"/>
  </equality>
</mujoco>
"""


def _onto_mujoco(mj, model, locked):
    """(P, qpos) mapping the coordinates of ``model.expanded()`` onto MuJoCo's (by joint name):
    P (mj.nv, nv_full) and qpos0 with the joints fixed by equalities at their values."""
    full = model.expanded()
    P = np.zeros((mj.nv, full.nv))
    q0 = mj.qpos0.copy()
    for j in range(mj.njnt):
        n = mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_JOINT, j)
        if n in locked:
            q0[mj.jnt_qposadr[j]] = locked[n]
        else:
            P[mj.jnt_dofadr[j], full.coordinate_names.index(n)] = 1.0
    return P, q0


def test_every_joint_equality_is_exact_with_armature():
    """Couplings in bodies of several joints, chains and fixing equalities are eliminated exactly:
    MuJoCo's rigid-body dynamics (armature as written) reduced by the coupler map G are ej's, and
    MuJoCo's own equality residuals (positions and velocities) are zero on ej's states."""
    model = ej.load_mjcf(EVERY_EQUALITY, warn=False)
    assert model.coordinate_names == ("h1", "k1") and len(model.couplers) == 5
    assert model.joint_mimic[model.joint_index("h1+s1+h2")] < 0 and not model.couplers_linear
    # the linear coupling's armature moves onto h1 (times 0.7^2); the nonlinear ones act through G
    assert np.allclose(model.dof_armature, [0.02 + 0.49 * 0.03, 0.04])
    assert [a for _, a in model.coupled_armature] == [0.05, 0.06, 0.07, 0.08]
    assert any("damping and stiffness of joints that follow another nonlinearly: s1" in n for n in model.notes)
    assert any("limits of joints fixed or coupled" in n and "k4" in n for n in model.notes)
    assert "armature on 4 coupled coordinates" in model.summary()
    assert "note: MJCF: joints fixed by joint equalities, welded at their values: lk = 0.3" in model.summary()
    mj = compiled(EVERY_EQUALITY)
    ref = rigid_only(compiled(EVERY_EQUALITY))
    P, q0 = _onto_mujoco(mj, model, {"lk": 0.3})
    rng = np.random.default_rng(11)
    for _ in range(3):
        q, v, a = rng.uniform(-0.8, 0.8, 2), rng.normal(size=2), rng.normal(size=2)
        G = P @ model.coupler_jacobian(q)
        qpos = q0 + P @ model.expand(q) - P @ (P.T @ q0)
        vel, acc = P @ model.expand_v(v, q), P @ model.expand_a(a, q, v)
        tau_mj, M_mj, _ = mujoco_dynamics(ref, qpos, vel, acc)
        tau = ej.rnea(model, q, v, a)
        assert rel(tau, G.T @ tau_mj) < RTOL
        assert rel(ej.mass_matrix(model, q), G.T @ M_mj @ G) < RTOL
        assert rel(ej.aba(model, q, v, tau), a) < RTOL
        assert rel(ej.kinetic_energy(model, q, v), 0.5 * vel @ M_mj @ vel) < RTOL
        d = mujoco.MjData(mj)
        d.qpos[:], d.qvel[:] = qpos, vel
        mujoco.mj_forward(mj, d)
        eq = d.efc_type == int(mujoco.mjtConstraint.mjCNSTR_EQUALITY)
        assert eq.sum() == 6
        assert np.abs(d.efc_pos[eq]).max() < 1e-14 and np.abs(d.efc_vel[eq]).max() < 1e-13
    # the same model through JSON keeps the coupled armature
    back = ej.Model.from_json(model.to_json())
    assert back.coupled_armature == model.coupled_armature
    assert np.array_equal(ej.mass_matrix(back, q), ej.mass_matrix(model, q))


@pytest.mark.parametrize("eqs, match", [
    ('<joint name="x" joint1="j1" joint2="j2"/><joint name="y" joint1="j2" joint2="j3"/>'
     '<joint name="z" joint1="j3" joint2="j1"/>', r"joint equalities \['x', 'y', 'z'\] couple .* in a cycle"),
    ('<joint name="x" joint1="j1" joint2="j2"/><joint name="y" joint1="j1" joint2="j3"/>',
     "joint equalities 'x' and 'y' both make joint 'j1' a function"),
])
def test_joint_equalities_that_cannot_be_eliminated_are_refused(eqs, match):
    xml = ("<mujoco><worldbody><body><joint name='j1' axis='0 1 0'/><geom size='0.1'/><body pos='0 0 -1'>"
           "<joint name='j2' axis='0 1 0'/><geom size='0.1'/><body pos='0 0 -1'><joint name='j3' axis='1 0 0'/>"
           f"<geom size='0.1'/></body></body></body></worldbody><equality>{eqs}</equality></mujoco>")
    with pytest.raises(ej.ModelError, match="MJCF: " + match):
        ej.load_mjcf(xml)


SITE_EQUALITIES = """
<mujoco><worldbody>
  <body name="a" pos="0 0 1"><joint name="h" type="hinge" axis="0 1 0"/><geom size="0.1" contype="0" conaffinity="0"/>
    <site name="sa" pos="0.1 0.2 0.3" euler="0.3 0.2 0.1"/></body>
  <body name="b" pos="1 0 0"><freejoint name="fb"/><geom size="0.1" contype="0" conaffinity="0"/>
    <site name="sb" pos="-0.1 0.05 0.2" euler="-0.4 0.1 0.6"/></body>
  <site name="sw" pos="0.5 0.1 0.2"/>
</worldbody><equality><weld name="w" site1="sa" site2="sb"/><connect name="c" site1="sb" site2="sw"/></equality>
</mujoco>
"""


def test_site_equalities_are_exact_closures():
    """connect / weld between sites: closures of the sites' origins / frames, with no note; at a
    state where MuJoCo's equality residuals vanish, ej's closure frames coincide."""
    model = ej.load_mjcf(SITE_EQUALITIES, warn=False)
    assert [(L.name, L.nc, model.body_names[L.body_a], model.body_names[L.body_b]) for L in model.loops] == \
        [("w", 6, "a", "b"), ("c", 3, "b", "world")]
    assert not any("equalities" in n for n in model.notes)
    mj = compiled(SITE_EQUALITIES)
    sa, sb, sw = (mj.site(n).id for n in ("sa", "sb", "sw"))
    d = mujoco.MjData(mj)
    # place body b so that site sb's frame is site sa's
    d.qpos[0] = 0.4
    mujoco.mj_kinematics(mj, d)
    Rs = np.zeros(9)
    mujoco.mju_quat2Mat(Rs, mj.site_quat[sb])
    Rb = d.site_xmat[sa].reshape(3, 3) @ Rs.reshape(3, 3).T
    d.qpos[1:4] = d.site_xpos[sa] - Rb @ mj.site_pos[sb]
    mujoco.mju_mat2Quat(d.qpos[4:8], Rb.flatten())
    mujoco.mj_forward(mj, d)
    q = d.qpos.copy()
    k = ej.forward_kinematics(model, q)

    def world(body, T):
        return k.R[body] @ T.rotation, k.R[body] @ T.translation + k.p[body]
    for s, (body, T) in zip((sa, sb), [(model.loops[0].body_a, model.loops[0].placement_a),
                                       (model.loops[0].body_b, model.loops[0].placement_b)]):
        R, p = world(body, T)       # the loop's frames are MuJoCo's sites
        assert np.allclose(R, d.site_xmat[s].reshape(3, 3), atol=1e-14) and np.allclose(p, d.site_xpos[s], atol=1e-14)
    w = mj.eq_type == int(mujoco.mjtEq.mjEQ_WELD)
    assert np.abs(d.efc_pos[:6]).max() < 1e-14 and w[0]
    Ra, pa = world(model.loops[0].body_a, model.loops[0].placement_a)
    Rb_, pb = world(model.loops[0].body_b, model.loops[0].placement_b)
    assert np.allclose(Ra, Rb_, atol=1e-14) and np.allclose(pa, pb, atol=1e-14)
    # the connect: MuJoCo's residual is the gap between its two sites' origins, ej's frames' gap
    pa, pb = world(model.loops[1].body_a, model.loops[1].placement_a)[1], model.loops[1].placement_b.translation
    assert np.allclose(pb, d.site_xpos[sw], atol=1e-15)
    assert np.allclose(pa - pb, d.efc_pos[6:9], atol=1e-14) and np.abs(pa - pb).max() > 0.1


LEFT_OUT = """
<mujoco>
  <worldbody>
    <body name="a">
      <joint name="j1" type="hinge" axis="0 1 0"/>
      <geom name="g1" type="capsule" fromto="0 0 0 0 0 -0.5" size="0.04"/>
      <site name="s1" pos="0 0 -0.5"/>
      <body name="b" pos="0 0 -0.5" gravcomp="1">
        <joint name="j2" type="hinge" axis="0 1 0"/>
        <geom type="sphere" size="0.05"/>
        <site name="s2"/>
      </body>
    </body>
    <body name="c" pos="1 0 0"><geom type="sphere" size="0.1"/></body>
  </worldbody>
  <tendon><spatial name="t"><site site="s1"/><site site="s2"/></spatial></tendon>
  <equality><connect name="loop" body1="b" body2="c" anchor="0 0 0"/></equality>
  <actuator><motor joint="j1"/><motor joint="j2"/></actuator>
</mujoco>
"""


def test_one_warning_lists_what_was_left_out():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = ej.load_mjcf(LEFT_OUT)
    mine = [w.message for w in caught if isinstance(w.message, ej.MJCFWarning)]
    assert len(mine) == 1
    text = str(mine[0])
    assert "contacts: 3 colliding geoms" in text
    # the actuators, the spatial tendon and gravity compensation are loaded (model.actuation)
    for what in ("actuators", "tendons", "gravity compensation"):
        assert what not in text
    A = model.actuation
    assert (A.nu, A.ntendon) == (2, 1) and A.body_gravcomp.tolist() == [0.0, 0.0, 1.0, 0.0]
    # the connect equality is not left out: it is an exact loop closure
    assert "connect" not in text and [L.name for L in model.loops] == ["loop"]
    assert mine[0].notes and all(n in text for n in mine[0].notes)
    assert len(model.notes) == len(mine[0].notes)
    assert all(f"note: {n}" in model.summary() for n in model.notes)
    # warn=False: the same notes, no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ej.from_mujoco(compiled(LEFT_OUT), warn=False).notes == model.notes


# ------------------------------------------------------------------------------ bad input
def test_missing_file_names_it(tmp_path):
    with pytest.raises(ej.ModelError, match="nothere.xml.*no such file"):
        ej.load_mjcf(tmp_path / "nothere.xml")


def test_mujoco_refusal_is_a_model_error_naming_the_file(tmp_path):
    bad = tmp_path / "bad.xml"
    bad.write_text("<mujoco><worldbody><body><joint type='hinge'/></body></worldbody></mujoco>")
    with pytest.raises(ej.ModelError, match=r"bad\.xml: MuJoCo refuses the model: .*mass and inertia"):
        ej.load_mjcf(bad)
    broken = tmp_path / "broken.xml"
    broken.write_text("<mujoco><worldbody><body>")
    with pytest.raises(ej.ModelError, match=r"broken\.xml: MuJoCo refuses the model"):
        ej.load_mjcf(broken)
    mesh = tmp_path / "mesh.xml"
    mesh.write_text("<mujoco><asset><mesh name='m' file='gone.stl'/></asset><worldbody><body>"
                    "<joint type='hinge'/><geom type='mesh' mesh='m'/></body></worldbody></mujoco>")
    with pytest.raises(ej.ModelError, match=r"mesh\.xml: MuJoCo refuses the model: .*gone\.stl"):
        ej.load_mjcf(mesh)


def test_a_tree_the_library_cannot_hold_names_the_body():
    xml = ("<mujoco><worldbody><body name='odd'><joint type='hinge'/><joint name='bj' type='ball'/>"
           "<geom size='0.1'/></body></worldbody></mujoco>")
    with pytest.raises(ej.ModelError, match="body 'odd'.*ball joint among several"):
        ej.load_mjcf(xml)


# ------------------------------------------------------------------------------ entry points
def test_shipped_cartpole_loads_by_name_and_through_the_cli():
    model = models.load("cartpole.xml")
    assert model.actuation.nu == 1 and model.actuation.ctrl_names == ("push",)
    assert list(model.coordinate_names) == ["slider", "hinge"]
    assert model.dof_armature.tolist() == [0.0, 0.01]
    mj = rigid_only(mujoco.MjModel.from_xml_path(models.shipped_path("cartpole.xml")))
    check_against_mujoco(mj, model, np.random.default_rng(9))
    out = subprocess.run([sys.executable, "-m", "ejce_nb", "info", models.shipped_path("cartpole.xml")],
                         capture_output=True, text=True, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert out.returncode == 0, out.stderr
    assert "slider" in out.stdout


def test_the_warning_points_at_the_callers_line():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ej.load_mjcf(LEFT_OUT)          # (its contacts are left out)
    assert [os.path.basename(w.filename) for w in caught if isinstance(w.message, ej.MJCFWarning)] == \
        [os.path.basename(__file__)]
