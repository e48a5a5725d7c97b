"""Actuated models with couplers in the compiled time loop (``ej.simulate``, ``ej.rollout``): a
3-link arm whose second hinge follows the first through a polynomial joint equality, with motors
on the independent and on the dependent hinge and an integrator servo.  The reference is an
independent RK4 in numpy of ``ej.forward_dynamics`` (checked against MuJoCo on coupled models in
``test_actuation_mujoco.py``), the same steps and held controls: the state to 1e-12; the recorded
actuator forces against ``ej.actuation`` at the recorded states; a rollout equals simulate bit for
bit."""
import warnings

import numpy as np
import pytest

import ejce_nb as ej

# j2 = j1 + 0.2 j1^2 (MuJoCo: q_joint1 = sum_k polycoef_k q_joint2^k)
ARM = """
<mujoco model="coupled_arm">
  <option timestep="0.002"/>
  <worldbody>
    <body name="l1">
      <joint name="j1" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.04" mass="1"/>
      <body name="l2" pos="0.4 0 0">
        <joint name="j2" type="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" mass="0.7"/>
        <body name="l3" pos="0.3 0 0">
          <joint name="j3" type="hinge" axis="0 0 1" damping="0.05"/>
          <geom type="capsule" fromto="0 0 0 0.2 0.05 0" size="0.02" mass="0.4"/>
        </body>
      </body>
    </body>
  </worldbody>
  <equality><joint joint1="j2" joint2="j1" polycoef="0 1 0.2 0 0"/></equality>
  <actuator>
    <motor name="m1" joint="j1" gear="2"/>
    <motor name="m2" joint="j2" gear="1.5"/>
    <general name="servo3" joint="j3" dyntype="integrator" gaintype="fixed" biastype="affine"
             gainprm="4" biasprm="0 -4 -0.5" actlimited="true" actrange="-1 1"/>
  </actuator>
</mujoco>
"""
DT = 1e-3
T = 500


@pytest.fixture(scope="module")
def arm():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = ej.load_mjcf(ARM)
    assert model.has_couplers and model.nv == 2
    assert model.actuation is not None and model.actuation.nu == 3 and model.actuation.na == 1
    return model


def _controls(seed=0):
    """(T, 3) smooth controls; the servo's integrator reaches its clamp."""
    t = np.arange(T) * DT
    rng = np.random.default_rng(seed)
    w = rng.uniform(2, 6, 3)
    return np.stack([0.8 * np.sin(w[0] * t), -0.6 * np.cos(w[1] * t), 3.0 + np.sin(w[2] * t)], axis=1)


def _rk4_reference(model, q0, v0, a0, ctrl):
    """RK4 of (q, qd, act) with ej.forward_dynamics (hinges: q' = qd), the control of step n held
    over it, the activation clamped to its actrange at each step's end (MuJoCo's mj_RungeKutta)."""
    nq = model.nq
    lo, hi = model.actuation.actuator_actrange[2]

    def f(t, y, c):
        qdd, ad = ej.forward_dynamics(model, y[:nq], y[nq:2 * nq], ctrl=c, act=y[2 * nq:], t=t)
        return np.concatenate([y[nq:2 * nq], qdd, ad])

    y = np.concatenate([q0, v0, a0])
    out = [y.copy()]
    for n in range(T):
        t, c = n * DT, ctrl[n]
        k1 = f(t, y, c)
        k2 = f(t + DT / 2, y + DT / 2 * k1, c)
        k3 = f(t + DT / 2, y + DT / 2 * k2, c)
        k4 = f(t + DT, y + DT * k3, c)
        y = y + DT / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        y[2 * nq:] = np.clip(y[2 * nq:], lo, hi)
        out.append(y.copy())
    return np.array(out)


def test_simulate_rk4_of_coupled_actuated_arm_matches_numpy_rk4_of_forward_dynamics(arm):
    q0, v0, a0 = np.array([0.3, -0.2]), np.array([0.5, 1.0]), np.array([0.1])
    ctrl = _controls()
    tr = ej.simulate(arm, q0, v0, T * DT, DT, ctrl=ctrl, act0=a0)
    ref = _rk4_reference(arm, q0, v0, a0, ctrl)
    assert tr.q.shape == (T + 1, 2) and tr.act.shape == (T + 1, 1)
    assert np.abs(tr.q - ref[:, :2]).max() < 1e-12
    assert np.abs(tr.qd - ref[:, 2:4]).max() < 1e-12
    assert np.abs(tr.act - ref[:, 4:]).max() < 1e-12
    assert ref[:, 4].max() == 1.0                                   # the clamp was reached
    # the coupling matters: without the motors' and servo's forces the motion differs
    assert np.abs(tr.q[-1] - ej.simulate(arm, q0, v0, T * DT, DT, act0=a0).q[-1]).max() > 1e-2
    # the recorded actuator forces: ej.actuation at the recorded states with the step's controls
    for n in (0, 137, T - 1):
        res = ej.actuation(arm, tr.q[n], tr.qd[n], ctrl[n], act=tr.act[n], t=n * DT)
        assert np.abs(tr.actuator_force[n] - res.actuator_force).max() < 1e-12


def test_rollout_of_coupled_actuated_arm_is_simulate_bit_for_bit(arm):
    rng = np.random.default_rng(3)
    B = 3
    q0, v0 = rng.uniform(-0.5, 0.5, (B, 2)), rng.uniform(-1, 1, (B, 2))
    a0 = rng.uniform(-0.5, 0.5, (B, 1))
    ctrl = np.stack([_controls(seed) for seed in range(B)])
    r = ej.rollout(arm, q0, v0, ctrl, act0=a0, dt=DT, record_every=10)
    assert np.all(r.status == 0) and r.q.shape == (B, T // 10 + 1, 2)
    for b in range(B):
        tr = ej.simulate(arm, q0[b], v0[b], T * DT, DT, ctrl=ctrl[b], act0=a0[b], record_every=10, limits=False)
        for name in ("q", "qd", "act", "actuator_force"):
            np.testing.assert_array_equal(getattr(r, name)[b], getattr(tr, name), err_msg=name)


# two hinges, a motor whose force follows its control through a first-order filter (act_dot =
# (ctrl - act) / 0.2) and a servo whose set point is an integrator activation (act_dot = ctrl), not
# clamped (the reference integrates a smooth ODE); joint damping and a spring
SERVO = """
<mujoco model="servo2">
  <worldbody>
    <body name="l1">
      <joint name="j1" type="hinge" axis="0 1 0" damping="0.1"/>
      <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.04" mass="1"/>
      <body name="l2" pos="0.4 0 0">
        <joint name="j2" type="hinge" axis="0 0 1" stiffness="0.5"/>
        <geom type="capsule" fromto="0 0 0 0.3 0.1 0" size="0.03" mass="0.7"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <general name="m1" joint="j1" dyntype="filter" dynprm="0.2" gaintype="fixed" gainprm="2"/>
    <general name="servo2" joint="j2" dyntype="integrator" gaintype="fixed" biastype="affine"
             gainprm="4" biasprm="0 -4 -0.5"/>
  </actuator>
</mujoco>
"""


def test_dopri5_with_an_integrator_activation_matches_dop853_of_forward_dynamics():
    from scipy.integrate import solve_ivp
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = ej.load_mjcf(SERVO)
    assert model.actuation.na == 2
    q0, v0, a0, ctrl = np.array([0.4, -0.3]), np.array([0.2, 0.5]), np.array([-0.5, 0.3]), np.array([0.7, 2.0])
    t_eval = np.linspace(0.0, 1.0, 11)

    def f(t, y):
        qdd, ad = ej.forward_dynamics(model, y[:2], y[2:4], ctrl=ctrl, act=y[4:], t=t)
        return np.concatenate([y[2:4], qdd, ad])
    ref = solve_ivp(f, (0.0, 1.0), np.concatenate([q0, v0, a0]), method="DOP853", rtol=1e-12, atol=1e-12,
                    t_eval=t_eval).y.T
    tr = ej.simulate(model, q0, v0, 1.0, 1e-2, method="dopri5", ctrl=ctrl, act0=a0, rtol=1e-10, atol=1e-12,
                     t_eval=t_eval)
    assert np.abs(ref[-1, 4:] - a0).min() > 0.5                      # the activations moved
    assert np.abs(tr.q - ref[:, :2]).max() < 1e-7
    assert np.abs(tr.qd - ref[:, 2:4]).max() < 1e-7
    assert np.abs(tr.act - ref[:, 4:]).max() < 1e-7
    # looser tolerances are further off (the filter's activation too), and the segmentation (K1 of
    # the activations carried between segments) changes no bit
    loose = ej.simulate(model, q0, v0, 1.0, 1e-2, method="dopri5", ctrl=ctrl, act0=a0, rtol=1e-5, atol=1e-7,
                        t_eval=t_eval)
    assert 1e-9 < np.abs(loose.act[:, 0] - ref[:, 4]).max() < 1e-3
    seg = ej.simulate(model, q0, v0, 1.0, 1e-2, method="dopri5", ctrl=ctrl, act0=a0, rtol=1e-10, atol=1e-12,
                      t_eval=t_eval, segment_steps=3)
    for name in ("q", "qd", "act", "actuator_force"):
        np.testing.assert_array_equal(getattr(seg, name), getattr(tr, name), err_msg=name)
