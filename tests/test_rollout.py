"""Rollouts and ``simulate`` with controls: the activations integrated as state, controls held over
each step, checked against MuJoCo's own RK4 (``mj_step``, ``mujoco.rollout``) and against
``simulate`` itself (per sample, batch, threads, a model without actuation)."""
import warnings

import numba
import numpy as np
import pytest

import ejce_nb as ej
from ejce_nb import cli

# a 3-link arm: two motors (one with a clamped control range) and a position servo whose set point
# is an integrator activation clamped to [-1, 1], its force from the next step's activation
# (actearly: one step of the run's dt ahead, which differs from the file's timestep); joint damping
# and a spring; contact, limits, equality and friction loss off, as the comparison with MuJoCo requires
ARM = """
<mujoco model="arm3">
  <option timestep="0.002" integrator="RK4">
    <flag contact="disable" equality="disable" limit="disable" frictionloss="disable"/>
  </option>
  <worldbody>
    <body name="l1">
      <joint name="j1" type="hinge" axis="0 1 0" damping="0.1"/>
      <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.04" mass="1"/>
      <body name="l2" pos="0.4 0 0">
        <joint name="j2" type="hinge" axis="0 1 0" damping="0.05" stiffness="0.5"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" mass="0.7"/>
        <body name="l3" pos="0.3 0 0">
          <joint name="j3" type="hinge" axis="0 0 1"/>
          <geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.02" mass="0.4"/>
        </body>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor name="m1" joint="j1" gear="2" ctrlrange="-5 5" ctrllimited="true"/>
    <motor name="m2" joint="j2" gear="1"/>
    <general name="servo3" joint="j3" dyntype="integrator" gaintype="fixed" biastype="affine"
             gainprm="4" biasprm="0 -4 -0.5" actlimited="true" actrange="-1 1" actearly="true"/>
  </actuator>
</mujoco>
"""
DT = 1e-3
T = 1000


@pytest.fixture(scope="module")
def arm():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = ej.load_mjcf(ARM)
    assert model.actuation is not None and model.actuation.nu == 3 and model.actuation.na == 1
    return model


def _controls(B, seed=0):
    """(B, T, 3) smooth controls; the first motor's exceed its range, the servo's integrator
    reaches its clamp."""
    rng = np.random.default_rng(seed)
    t = np.arange(T) * DT
    out = np.empty((B, T, 3))
    for b in range(B):
        w = rng.uniform(2.0, 8.0, 3)
        out[b] = np.stack([6.0 * np.sin(w[0] * t), 1.5 * np.cos(w[1] * t), 2.0 * np.sin(w[2] * t) + 0.8], axis=1)
    return out


def _states(B, seed=1):
    rng = np.random.default_rng(seed)
    return rng.uniform(-0.5, 0.5, (B, 3)), rng.uniform(-1.0, 1.0, (B, 3)), rng.uniform(-0.3, 0.3, (B, 1))


def test_rk4_follows_mujoco_mj_step_rk4(arm):
    mujoco = pytest.importorskip("mujoco")
    mj = mujoco.MjModel.from_xml_string(ARM)
    mj.opt.timestep = DT
    d = mujoco.MjData(mj)
    ctrl = _controls(1)[0]
    q0, v0, a0 = (x[0] for x in _states(1))
    d.qpos[:], d.qvel[:], d.act[:] = q0, v0, a0
    Q, V, A, F = [q0], [v0], [a0], []
    for n in range(T):
        d.ctrl[:] = ctrl[n]
        mujoco.mj_forward(mj, d)
        F.append(d.actuator_force.copy())
        mujoco.mj_step(mj, d)
        Q.append(d.qpos.copy())
        V.append(d.qvel.copy())
        A.append(d.act.copy())
    Q, V, A, F = map(np.array, (Q, V, A, F))
    assert A.max() == 1.0                       # the activation's clamp is exercised
    tr = ej.simulate(arm, q0, v0, T * DT, DT, ctrl=ctrl, act0=a0, limits=False)
    assert tr.status == 0
    assert np.abs(tr.q - Q).max() < 1e-8
    assert np.abs(tr.qd - V).max() < 1e-8
    assert np.abs(tr.act - A).max() < 1e-8
    # the forces at each recorded state with the controls of the step that starts there
    assert np.abs(tr.actuator_force[:-1] - F).max() < 1e-8
    assert tr.act.shape == (T + 1, 1) and tr.actuator_force.shape == (T + 1, 3)


def test_rollout_follows_mujoco_rollout(arm):
    mujoco = pytest.importorskip("mujoco")
    rollout = pytest.importorskip("mujoco.rollout")
    mj = mujoco.MjModel.from_xml_string(ARM)
    mj.opt.timestep = DT
    B = 3
    ctrl = _controls(B, seed=2)
    q0, v0, a0 = _states(B, seed=3)
    d = mujoco.MjData(mj)
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    x0 = np.empty((B, mujoco.mj_stateSize(mj, spec)))
    for b in range(B):
        mujoco.mj_resetData(mj, d)
        d.qpos[:], d.qvel[:], d.act[:] = q0[b], v0[b], a0[b]
        mujoco.mj_getState(mj, d, x0[b], spec)
    state, _ = rollout.rollout(mj, d, x0, ctrl)
    r = ej.rollout(arm, q0, v0, ctrl, act0=a0, dt=DT)
    assert np.all(r.status == 0) and r.q.shape == (B, T + 1, 3) and r.act.shape == (B, T + 1, 1)
    # MuJoCo's state: time, qpos, qvel, act after each step
    assert np.abs(r.q[:, 1:] - state[:, :, 1:4]).max() < 1e-8
    assert np.abs(r.qd[:, 1:] - state[:, :, 4:7]).max() < 1e-8
    assert np.abs(r.act[:, 1:] - state[:, :, 7:8]).max() < 1e-8


def test_rollout_is_simulate_per_sample_bit_for_bit_whatever_the_threads(arm):
    B = 5
    ctrl = _controls(B, seed=4)
    q0, v0, a0 = _states(B, seed=5)
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = ej.rollout(arm, q0, v0, ctrl, act0=a0, dt=DT, record_every=7)
        numba.set_num_threads(max(2, before))
        many = ej.rollout(arm, q0, v0, ctrl, act0=a0, dt=DT, record_every=7)
    finally:
        numba.set_num_threads(before)
    for name in ("q", "qd", "act", "actuator_force", "kinetic"):
        np.testing.assert_array_equal(getattr(one, name), getattr(many, name), err_msg=name)
    # each sample alone, by simulate (its controls (T, nu) one row per step) and by a rollout of one
    for b in (0, 3):
        tr = ej.simulate(arm, q0[b], v0[b], T * DT, DT, ctrl=ctrl[b], act0=a0[b], record_every=7, limits=False)
        np.testing.assert_array_equal(many.q[b], tr.q)
        np.testing.assert_array_equal(many.act[b], tr.act)
        np.testing.assert_array_equal(many.actuator_force[b], tr.actuator_force)
        alone = ej.rollout(arm, q0[b], v0[b], ctrl[b], act0=a0[b], dt=DT, record_every=7)
        np.testing.assert_array_equal(alone.qd, many.qd[b])
    # one control sequence shared by the batch equals it given to each sample
    shared = ej.rollout(arm, q0[:2], v0[:2], ctrl[0], act0=a0[:2], dt=DT, record_every=7)
    np.testing.assert_array_equal(shared.q[0], many.q[0])
    assert shared.q.shape[0] == 2 and not np.array_equal(shared.q[1], many.q[1])


def test_a_nan_control_stops_its_sample_alone(arm):
    B = 3
    ctrl = _controls(B, seed=6)
    q0, v0, a0 = _states(B, seed=7)
    good = ej.rollout(arm, q0, v0, ctrl, act0=a0, dt=DT, record_every=100)
    bad = ctrl.copy()
    bad[1, 450, 2] = np.nan
    r = ej.rollout(arm, q0, v0, bad, act0=a0, dt=DT, record_every=100)
    assert list(r.status) == [0, int(ej.SimulationStatus.NONFINITE_CONTROL), 0]
    assert r.steps[1] == 450 and "servo3" in r.message[1]
    np.testing.assert_array_equal(r.q[[0, 2]], good.q[[0, 2]])
    np.testing.assert_array_equal(r.q[1, :5], good.q[1, :5])          # recorded before the stop
    assert np.all(np.isnan(r.q[1, 5:]))
    with pytest.raises(ValueError, match="servo3"):
        ej.simulate(arm, q0[1], v0[1], T * DT, DT, ctrl=bad[1], limits=False)
    with pytest.raises(ValueError, match=r"ctrl must have shape"):
        ej.simulate(arm, q0[1], v0[1], T * DT, DT, ctrl=np.zeros((T, 2)))


def test_a_model_without_actuation_takes_empty_controls():
    b = ej.ModelBuilder(gravity=(0.0, 0.0, -9.81))
    b.add_body("link", parent="world", joint=ej.joints.Revolute((0.0, 1.0, 0.0)), mass=1.0, com=(0.3, 0.0, 0.0),
               inertia=np.diag([0.01, 0.01, 0.01]), damping=0.05)
    model = b.build()
    assert getattr(model, "actuation", None) is None
    q0 = np.array([[0.3], [-0.7]])
    v0 = np.array([[0.0], [1.0]])
    plain = ej.simulate(model, q0, v0, 0.2, DT)
    empty = ej.simulate(model, q0, v0, 0.2, DT, ctrl=np.zeros(0))
    np.testing.assert_array_equal(plain.q, empty.q)
    assert empty.act is None and empty.actuator_force is None
    r = ej.rollout(model, q0, v0, np.zeros((2, 200, 0)), dt=DT, limits=True)
    np.testing.assert_array_equal(r.q, np.moveaxis(plain.q, 1, 0))
    with pytest.raises(ValueError, match="no actuation"):
        ej.simulate(model, q0, v0, 0.2, DT, ctrl=np.ones(1))


def test_cli_simulate_takes_a_control_file(arm, tmp_path, capsys):
    xml = tmp_path / "arm.xml"
    xml.write_text(ARM)
    ctrl = _controls(1, seed=8)[0][:200]
    np.save(tmp_path / "u.npy", ctrl)
    np.savetxt(tmp_path / "u.csv", ctrl, delimiter=",", header="m1,m2,servo3", comments="")
    ref = ej.simulate(arm, arm.neutral(), np.zeros(3), 0.2, DT, ctrl=ctrl)
    for f in ("u.npy", "u.csv"):
        out = tmp_path / f"{f}.npz"
        assert cli.main(["simulate", str(xml), "--t", "0.2", "--dt", "0.001", "--ctrl", str(tmp_path / f),
                         "--out", str(out), "--no-progress"]) == 0
        tr = ej.Trajectory.load(out)
        np.testing.assert_array_equal(tr.q, ref.q)
        np.testing.assert_array_equal(tr.act, ref.act)
    csv = tmp_path / "tr.csv"
    assert cli.main(["simulate", str(xml), "--t", "0.2", "--dt", "0.001", "--ctrl", str(tmp_path / "u.csv"),
                     "--out", str(csv), "--no-progress"]) == 0
    header = csv.read_text().splitlines()[0].split(",")
    rows = np.loadtxt(csv, delimiter=",", skiprows=1)
    np.testing.assert_array_equal(rows[:, header.index("act:servo3")], ref.act[:, 0])
    np.testing.assert_array_equal(rows[:, header.index("actuator_force:m1")], ref.actuator_force[:, 0])
    assert cli.main(["simulate", str(xml), "--t", "0.1", "--dt", "0.001", "--ctrl", str(tmp_path / "u.npy"),
                     "--no-progress"]) == 2
    assert "(100, 3)" in capsys.readouterr().err


def test_rollout_dask_gives_the_local_bits(arm):
    distributed = pytest.importorskip("distributed")
    import logging
    B = 5
    ctrl = _controls(B, seed=9)[:, :200]
    q0, v0, a0 = _states(B, seed=10)
    ref = ej.rollout(arm, q0, v0, ctrl, act0=a0, dt=DT, record_every=10)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=logging.ERROR, env={"NUMBA_NUM_THREADS": "1"}) as cluster, \
            distributed.Client(cluster) as client:
        r = ej.rollout_dask(client, arm, q0, v0, ctrl, act0=a0, dt=DT, record_every=10, chunk=2)
    assert r.batch == B and len(r.message) == B
    for name in ("q", "qd", "act", "actuator_force", "status", "steps"):
        np.testing.assert_array_equal(getattr(r, name), getattr(ref, name), err_msg=name)
