"""Armature (rotor inertia per velocity variable): M += diag(armature) in every algorithm, from
ModelBuilder, JSON and URDF's drake:rotor_inertia.  (Against MuJoCo: tests/test_mjcf.py.)"""
import numpy as np
import pytest

import ejce_nb as ej
from ejce_nb import models

J = ej.joints


def tree(armature=True):
    """A floating body with a spherical shoulder, a composite elbow and a slider."""
    rng = np.random.default_rng(11)
    b = ej.ModelBuilder(gravity=(0.1, -0.3, -9.81))
    arm = (lambda x: x) if armature else (lambda x: None)
    b.add_body("base", joint=J.Free("quaternion"), mass=3.0, com=(0.1, 0.0, 0.05),
               inertia=np.diag([0.2, 0.3, 0.25]), armature=arm([0.0, 0.0, 0.0, 0.1, 0.2, 0.3]))
    b.add_body("upper", "base", J.Spherical("quaternion"), placement=ej.Transform(None, (0.2, 0.1, 0.0)),
               mass=1.0, com=(0.0, 0.0, -0.2), inertia=np.diag([0.05, 0.05, 0.01]), armature=arm(0.05))
    b.add_body("fore", "upper", J.Composite([J.Rot((0, 1, 0), ej.fn.Linear([1.0, 0.0])),
                                              J.Trans((1, 0, 0), ej.fn.Linear([0.0, 1.0]))], 2),
               placement=ej.Transform(models.random_rotation(rng), (0.0, 0.0, -0.4)),
               mass=0.7, com=(0.05, 0.0, -0.15), inertia=np.diag([0.02, 0.03, 0.01]), armature=arm([0.4, 0.02]))
    b.add_body("slider", "fore", J.Prismatic((0, 0, 1)), placement=ej.Transform(None, (0.0, 0.0, -0.3)),
               mass=0.3, com=(0.0, 0.02, 0.0), inertia=np.diag([0.001, 0.002, 0.001]), armature=arm(1.5))
    return b.build()


def states(model, n, seed=0):
    rng = np.random.default_rng(seed)
    Q = models.random_states(model, n, rng)[0]
    for _, sl in model.quaternion_blocks():       # any orientation, not only the neutral one
        x = rng.normal(size=(n, 4))
        Q[:, sl] = x / np.linalg.norm(x, axis=1, keepdims=True)
    return Q, rng.normal(size=(n, model.nv)), rng.normal(size=(n, model.nv))


def test_armature_is_the_diagonal_of_M_in_every_algorithm():
    m, m0 = tree(), tree(armature=False)
    a = m.dof_armature
    assert a.tolist() == [0, 0, 0, 0.1, 0.2, 0.3, 0.05, 0.05, 0.05, 0.4, 0.02, 1.5]
    assert not np.any(m0.dof_armature)
    Q, V, A = states(m, 9)              # groups of four states and a tail
    M, M0 = ej.mass_matrix(m, Q), ej.mass_matrix(m0, Q)
    assert np.allclose(M - M0, np.diag(a), atol=1e-13, rtol=0)
    assert np.allclose(ej.mass_matrix(m, Q[3]), M[3], atol=1e-14, rtol=0)
    tau = ej.rnea(m, Q, V, A)
    assert np.allclose(tau, ej.rnea(m0, Q, V, A) + A * a, atol=1e-12, rtol=0)
    assert np.allclose(tau[5], ej.rnea(m, Q[5], V[5], A[5]), atol=1e-13, rtol=0)
    h = ej.nonlinear_effects(m, Q, V)
    assert np.allclose(tau, np.einsum("bij,bj->bi", M, A) + h, atol=1e-12, rtol=0)
    assert np.allclose(ej.aba(m, Q, V, tau), A, atol=1e-10, rtol=0)
    assert np.allclose(ej.aba(m, Q[2], V[2], tau[2]), A[2], atol=1e-10, rtol=0)
    assert np.allclose(ej.forward_dynamics_crba(m, Q, V, tau), A, atol=1e-10, rtol=0)
    kin = ej.kinetic_energy(m, Q, V)
    assert np.allclose(kin, 0.5 * np.einsum("bi,bij,bj->b", V, M, V), atol=1e-12, rtol=0)


def test_simulation_with_armature_conserves_energy():
    m = tree()
    Q, V, _ = states(m, 1, seed=3)
    traj = ej.simulate(m, Q[0], V[0], 0.2, 1e-3, method="rk4")
    assert np.ptp(traj.energy) < 1e-8 * max(1.0, np.abs(traj.energy).max())
    # and the motion is not the one without armature
    assert not np.allclose(ej.simulate(tree(False), Q[0], V[0], 0.2, 1e-3).q[-1], traj.q[-1])


def test_builder_refuses_bad_armature():
    b = ej.ModelBuilder()
    with pytest.raises(ej.ModelError, match="armature must not be negative"):
        b.add_body("a", joint=J.Revolute(), mass=1.0, inertia=np.eye(3), armature=-0.1)
    with pytest.raises(ej.ModelError, match="armature must be a finite number or 3 finite numbers"):
        b.add_body("a", joint=J.Spherical(), mass=1.0, inertia=np.eye(3), armature=[0.1, 0.2])
    b.add_body("a", joint=J.Revolute(), mass=1.0, inertia=np.eye(3))
    with pytest.raises(ej.ModelError, match="armature need a velocity variable"):
        b.add_body("b", "a", J.Revolute(), mass=1.0, inertia=np.eye(3), mimic="a_joint", armature=0.1)


def test_json_keeps_armature():
    m = tree()
    d = m.to_dict()
    assert d["bodies"][3]["dynamics"] == {"armature": [1.5]}
    back = ej.Model.from_json(m.to_json())
    assert np.array_equal(back.dof_armature, m.dof_armature)
    d["bodies"][3]["dynamics"]["armature"] = [-1.0]
    with pytest.raises(ej.ModelError, match=r"bodies\[3\]\.dynamics\.armature: .*must not be negative"):
        ej.Model.from_dict(d)


URDF = """<robot name="r" xmlns:drake="http://drake.mit.edu">
  <link name="l1"><inertial><mass value="1"/><origin xyz="0 0 -0.2"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.001"/></inertial></link>
  <link name="l2"><inertial><mass value="0.5"/><origin xyz="0 0 -0.1"/>
    <inertia ixx="0.002" ixy="0" ixz="0" iyy="0.002" iyz="0" izz="0.0005"/></inertial></link>
  <joint name="j1" type="revolute"><parent link="world"/><child link="l1"/><axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="10" velocity="3"/></joint>
  <joint name="j2" type="continuous"><parent link="l1"/><child link="l2"/>
    <origin xyz="0 0 -0.4"/><axis xyz="1 0 0"/></joint>
  <transmission name="t1">
    <type>transmission_interface/SimpleTransmission</type>
    <joint name="j1"><hardwareInterface>EffortJointInterface</hardwareInterface></joint>
    <actuator name="m1"><drake:rotor_inertia value="0.002"/><drake:gear_ratio value="10"/></actuator>
  </transmission>
  <transmission name="t2">
    <type>transmission_interface/SimpleTransmission</type>
    <joint name="j2"><hardwareInterface>EffortJointInterface</hardwareInterface></joint>
    <actuator name="m2"><drake:rotor_inertia value="0.003"/></actuator>
  </transmission>
</robot>"""


def test_urdf_world_parent_and_drake_rotor_inertia():
    m = ej.load_urdf(URDF)
    # 'world' is not declared: it is the world, and l1 hangs from it on j1
    assert m.nbodies == 2 and m.body_names[m.parent[m.body_index("l1")]] == "world"
    assert m.joint_names[1:] == ("j1", "j2")
    assert np.allclose(m.dof_armature, [0.002 * 10 ** 2, 0.003])
    q = np.array([0.3, -0.2])
    M0 = ej.mass_matrix(ej.load_urdf(URDF.replace("drake:rotor_inertia", "drake:other")), q)
    assert np.allclose(ej.mass_matrix(m, q) - M0, np.diag([0.2, 0.003]), atol=1e-15, rtol=0)
    with pytest.raises(ej.ModelError, match="transmission 't2'.*no joint of that name"):
        ej.load_urdf(URDF.replace('<joint name="j2"><hardware', '<joint name="nope"><hardware'))


def test_urdf_rotor_inertia_matches_drake():
    """Drake's mass matrix includes each actuator's reflected inertia rotor_inertia * gear_ratio^2."""
    pytest.importorskip("pydrake", reason="the Drake comparison needs the drake package")
    from pydrake.multibody.parsing import Parser
    from pydrake.multibody.plant import MultibodyPlant
    plant = MultibodyPlant(0.0)
    Parser(plant).AddModelsFromString(URDF, "urdf")
    plant.Finalize()
    ctx = plant.CreateDefaultContext()
    m = ej.load_urdf(URDF)
    rng = np.random.default_rng(2)
    for _ in range(3):
        q, qd, qdd = rng.normal(size=(3, 2))
        plant.SetPositions(ctx, q)
        plant.SetVelocities(ctx, qd)
        assert np.allclose(ej.mass_matrix(m, q), plant.CalcMassMatrix(ctx), atol=1e-14, rtol=0)
        from pydrake.multibody.tree import MultibodyForces
        tau = plant.CalcInverseDynamics(ctx, qdd, MultibodyForces(plant)) - plant.CalcGravityGeneralizedForces(ctx)
        assert np.allclose(ej.rnea(m, q, qd, qdd), tau, atol=1e-13, rtol=0)
