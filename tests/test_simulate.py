"""Time integration: energy conservation of conservative models, unit quaternions, the RK4 order,
batches equal loops, and clear errors (with the finished part kept) on failures."""
import numpy as np
import pytest

import ejce_nb as ej
from conftest import random_state, random_tree


def _pendulum_tree(rng):
    specs = [ej.joints.Spherical("quaternion"), ej.joints.Revolute((0.0, 1.0, 0.0)),
             ej.joints.Universal((1.0, 0.0, 0.0), (0.0, 0.0, 1.0)), ej.joints.Free("quaternion"),
             ej.joints.Spherical("rotvec")]
    return random_tree(specs, rng)


def test_energy_is_conserved_and_quaternions_stay_unit():
    rng = np.random.default_rng(3)
    model = _pendulum_tree(rng)
    q, qd, _ = random_state(model, rng, vscale=0.5)
    traj = ej.simulate(model, q, qd, t_final=0.5, dt=1e-3)
    assert traj.t.shape == (501,) and traj.q.shape == (501, model.nq) and traj.qd.shape == (501, model.nv)
    np.testing.assert_allclose(traj.t[-1], 0.5)
    E = traj.energy
    assert np.ptp(E) < 1e-6 * max(1.0, np.abs(E).max())
    for _, sl in model.quaternion_blocks():
        np.testing.assert_allclose(np.linalg.norm(traj.q[:, sl], axis=1), 1.0, atol=1e-13)
    assert np.abs(traj.q[-1] - traj.q[0]).max() > 1e-3      # it moved


def test_rk4_is_fourth_order():
    """Halving the step divides the error of the end state by about 16."""
    rng = np.random.default_rng(4)
    model = random_tree([ej.joints.Revolute((0.0, 1.0, 0.0)), ej.joints.Spherical("ZYX"),
                         ej.joints.Prismatic((1.0, 0.0, 0.0))], rng)
    q, qd, _ = random_state(model, rng, vscale=0.5)
    ref = ej.simulate(model, q, qd, 0.2, 1e-4).q[-1]
    e1 = np.abs(ej.simulate(model, q, qd, 0.2, 0.02).q[-1] - ref).max()
    e2 = np.abs(ej.simulate(model, q, qd, 0.2, 0.01).q[-1] - ref).max()
    assert 10.0 < e1 / e2 < 22.0


def test_batch_equals_loop_and_torque_inputs():
    rng = np.random.default_rng(5)
    model = _pendulum_tree(rng)
    states = [random_state(model, rng, vscale=0.5) for _ in range(3)]
    Q = np.stack([s[0] for s in states])
    V = np.stack([s[1] for s in states])
    tau = rng.normal(size=(3, model.nv))
    batch = ej.simulate(model, Q, V, 0.05, 0.01, tau=tau)
    assert batch.q.shape == (6, 3, model.nq)
    for k in range(3):
        one = ej.simulate(model, Q[k], V[k], 0.05, 0.01, tau=tau[k])
        np.testing.assert_allclose(batch.q[:, k], one.q, rtol=0, atol=1e-13)
        np.testing.assert_allclose(batch.qd[:, k], one.qd, rtol=0, atol=1e-12)
    # a callable torque law sees the current state
    seen = []
    ej.simulate(model, Q[0], V[0], 0.02, 0.01, tau=lambda t, q, qd: (seen.append(t), np.zeros(model.nv))[1])
    assert min(seen) == 0.0 and max(seen) == pytest.approx(0.02)


def test_work_of_torques_balances_energy():
    """With a constant torque on a scleronomic model, E(t) - E(0) equals the work of tau."""
    rng = np.random.default_rng(6)
    model = random_tree([ej.joints.Revolute((0.0, 0.0, 1.0)), ej.joints.Revolute((0.0, 1.0, 0.0))], rng)
    q, qd, _ = random_state(model, rng, vscale=0.5)
    tau = np.array([0.3, -0.2])
    traj = ej.simulate(model, q, qd, 0.3, 1e-3, tau=tau)
    work = np.concatenate([[0.0], np.cumsum(0.5 * (traj.qd[1:] + traj.qd[:-1]) @ tau * 1e-3)])
    np.testing.assert_allclose(traj.energy - traj.energy[0], work, atol=1e-6)


def test_bad_input_and_singularity_keep_the_finished_part():
    rng = np.random.default_rng(7)
    model = random_tree([ej.joints.Spherical("ZYX")], rng)
    with pytest.raises(ValueError, match="dt"):
        ej.simulate(model, np.zeros(3), np.zeros(3), 1.0, 0.0)
    with pytest.raises(ValueError, match="method"):
        ej.simulate(model, np.zeros(3), np.zeros(3), 1.0, 0.1, method="leapfrog")
    with pytest.raises(ValueError, match="qd0"):
        ej.simulate(model, np.zeros(3), np.zeros(4), 1.0, 0.1)
    # driven into gimbal lock (middle angle +-pi/2): the error keeps the steps done so far
    q0 = np.array([0.0, np.pi / 2 - 0.05, 0.0])
    qd0 = np.array([0.0, 1.0, 0.0])
    with pytest.raises(ej.SimulationError) as err:
        ej.simulate(model, q0, qd0, 1.0, 0.05, method="euler")
    part = err.value.partial
    assert 1 <= len(part.t) < 21 and part.q.shape == (len(part.t), 3)
    assert "ZYX" in str(err.value) or "joint" in str(err.value)
