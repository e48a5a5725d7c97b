"""Time integration: energy conservation, convergence orders, closed forms (a pendulum's period, a
pendulum on a shaken support, a damped spring), unit quaternions, batches and segments equal
single runs bitwise, control laws, passive joint forces, runaway simulations that stop with what
they had, trajectory files and the ``simulate`` command."""
import importlib

import numpy as np
import pytest

import ejce_nb as ej
from conftest import quat_exp, random_state, random_tree
from ejce_nb import cli, models

sim = importlib.import_module("ejce_nb.sim.driver")


def _pendulum_tree(rng):
    specs = [ej.joints.Spherical("quaternion"), ej.joints.Revolute((0.0, 1.0, 0.0)),
             ej.joints.Universal((1.0, 0.0, 0.0), (0.0, 0.0, 1.0)), ej.joints.Free("quaternion"),
             ej.joints.Spherical("rotvec")]
    return random_tree(specs, rng)


def _pendulum(length=0.5, mass=1.0, radius=0.01, gravity=(0.0, 0.0, -9.81), parent_joint=None):
    """A rod hanging from a revolute joint about y (behind an optional driven joint): its
    inertia about the pivot I_o and the distance c from pivot to centre of mass."""
    b = ej.ModelBuilder(gravity=gravity)
    parent = "world"
    if parent_joint is not None:
        b.add_body("support", joint=parent_joint, mass=1.0, inertia=np.eye(3) * 0.01)
        parent = "support"
    I = models.cylinder_inertia(mass, radius, length)
    b.add_body("rod", parent=parent, joint=ej.joints.Revolute((0.0, 1.0, 0.0)), mass=mass,
               com=(0.0, 0.0, -0.5 * length), inertia=I)
    c = 0.5 * length
    return b.build(), I[1, 1] + mass * c * c, c


def _chain_state(kind, n, rng):
    """A smooth initial shape of an n-link chain: the first joint tilted, the others slightly bent."""
    ang = np.zeros((n, 3))
    ang[0] = [0.3, 0.15, 0.0]
    ang[1:, 0] = 0.01
    ang[1:, 1] = -0.005
    if kind == "quaternion":
        q = np.concatenate([quat_exp(a) for a in ang])
    else:
        q = ang[:, ::-1].ravel()            # z, y, x angles
    v = np.zeros(3 * n)
    v[:3] = rng.uniform(-0.5, 0.5, 3)
    return q, v


# ---------------------------------------------------------------------------- energy and orders
@pytest.mark.parametrize("kind", ["quaternion", "ZYX"])
def test_rk4_conserves_the_energy_of_a_50_link_chain(kind):
    model = models.chain(50, kind)
    q0, v0 = _chain_state(kind, 50, np.random.default_rng(1))
    traj = ej.simulate(model, q0, v0, 5.0, 1e-3)
    assert traj.t.shape == (5001,) and traj.q.shape == (5001, model.nq)
    assert traj.energy_drift() <= 1e-7
    assert np.abs(traj.q[-1] - traj.q[0]).max() > 0.1                 # it moved
    if kind == "quaternion":
        for _, sl in model.quaternion_blocks():
            np.testing.assert_allclose(np.linalg.norm(traj.q[:, sl], axis=1), 1.0, rtol=0, atol=1e-12)
    else:
        assert np.abs(traj.q[:, 1::3]).max() < 1.0                    # far from gimbal lock (pi/2)


def test_fixed_step_methods_converge_at_their_order():
    """Halving dt divides the end-state error by 2^order: 16 for RK4 on quaternion, free, universal
    and rotation-vector joints (a dexpinv of the wrong sign leaves RK4 second order: ratio 4)."""
    rng = np.random.default_rng(3)
    model = _pendulum_tree(rng)
    q, qd, _ = random_state(model, rng, vscale=1.0)
    ref = ej.simulate(model, q, qd, 0.4, 1e-4).q[-1]
    for method, lo, hi in (("rk4", 14.0, 18.5), ("rk2", 3.5, 4.5), ("euler", 1.8, 2.3), ("symplectic", 1.8, 2.3)):
        e1, e2 = (np.abs(ej.simulate(model, q, qd, 0.4, dt, method=method).q[-1] - ref).max() for dt in (0.01, 0.005))
        assert lo < e1 / e2 < hi, (method, e1 / e2)


def test_symplectic_euler_keeps_a_pendulums_energy_error_bounded():
    """Over 100 s the energy error of symplectic Euler oscillates without growing; explicit Euler's,
    at the same step, grows secularly (the contrast shows the check can fail)."""
    model, _, _ = _pendulum()
    q0, v0 = np.array([1.0]), np.array([0.0])
    errs = {}
    for method in ("symplectic", "euler"):
        traj = ej.simulate(model, q0, v0, 100.0, 0.01, method=method, max_energy=np.inf)
        dE = np.abs(traj.energy - traj.energy[0]) / abs(traj.potential).max()
        errs[method] = dE[:1001].max(), dE[-1001:].max()
    first, last = errs["symplectic"]
    assert last < 1.5 * first and last < 0.02
    assert errs["euler"][1] > 5 * errs["euler"][0]


def test_dopri5_meets_its_tolerance_and_reports_at_the_requested_times():
    rng = np.random.default_rng(3)
    model = _pendulum_tree(rng)
    q, qd, _ = random_state(model, rng, vscale=1.0)
    ref = ej.simulate(model, q, qd, 0.4, 1e-4)                      # RK4: error ~1e-13
    prev = np.inf
    for rtol in (1e-5, 1e-7, 1e-9):
        traj = ej.simulate(model, q, qd, 0.4, 0.01, method="dopri5", rtol=rtol, atol=1e-2 * rtol)
        np.testing.assert_array_equal(traj.t, np.arange(41) * 0.01)
        err = max(np.abs(traj.q - ref.q[::100]).max(), np.abs(traj.qd - ref.qd[::100]).max())
        assert err < 10 * rtol and err < prev
        prev = err
        assert traj.steps < 100 and traj.info["nfev"] == [1 + 6 * (traj.steps + traj.info["nrejected"][0])]
    t_eval = np.array([0.0, 0.0123, 0.2, 0.3999])
    traj = ej.simulate(model, q, qd, 0.4, 0.01, method="dopri5", t_eval=t_eval, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(traj.t, t_eval)
    fine = ej.simulate(model, q, qd, 0.3999, 1e-4)
    np.testing.assert_allclose(traj.q[-1], fine.q[-1], rtol=0, atol=1e-9)


# ---------------------------------------------------------------------------- closed forms
def test_small_amplitude_period_of_a_pendulum():
    model, Io, c = _pendulum()
    period = 2 * np.pi * np.sqrt(Io / (9.81 * c))
    traj = ej.simulate(model, [1e-3], [0.0], 3.2 * period, 1e-3)
    th = traj.q[:, 0]
    k = np.nonzero(np.sign(th[1:]) != np.sign(th[:-1]))[0]
    tz = traj.t[k] - th[k] * (traj.t[k + 1] - traj.t[k]) / (th[k + 1] - th[k])
    measured = 2 * (tz[-1] - tz[0]) / (len(tz) - 1)
    assert len(tz) == 6
    assert abs(measured / period - 1) < 1e-6      # the amplitude's own correction is 6e-8


def test_pendulum_on_a_harmonically_driven_support():
    """A support moving as x = A sin(W t) (a rheonomic joint, nq = 0): the pendulum obeys
    I_o th'' = m c (x'' cos th - g sin th).  Small amplitude: the closed form from rest,
    th = F / (w0^2 - W^2) (sin W t - W / w0 sin w0 t), F = -m c A W^2 / I_o; larger amplitude: that
    nonlinear equation integrated by scipy."""
    from scipy.integrate import solve_ivp
    W = 5.0
    for A, method, tol in ((1e-4, "rk4", 2e-4), (0.05, "rk4", 1e-8), (0.05, "dopri5", 1e-8)):
        drive = ej.joints.Composite([ej.joints.Trans((1.0, 0.0, 0.0), ej.fn.Harmonic(A, W))], 0)
        model, Io, c = _pendulum(parent_joint=drive)
        assert model.rheonomic and model.nq == 1
        kw = dict(rtol=1e-11, atol=1e-13) if method == "dopri5" else {}
        traj = ej.simulate(model, [0.0], [0.0], 3.0, 1e-3, method=method, **kw)
        th = traj.q[:, 0]
        if A < 1e-3:
            w0 = np.sqrt(9.81 * c / Io)
            F = -c * A * W * W / Io
            ref = F / (w0 * w0 - W * W) * (np.sin(W * traj.t) - W / w0 * np.sin(w0 * traj.t))
            assert np.abs(th - ref).max() < tol * np.abs(ref).max()
        else:
            def rhs(t, y):
                xdd = -A * W * W * np.sin(W * t)
                return [y[1], c * (xdd * np.cos(y[0]) - 9.81 * np.sin(y[0])) / Io]
            sol = solve_ivp(rhs, (0.0, 3.0), [0.0, 0.0], method="DOP853", t_eval=traj.t, rtol=1e-13, atol=1e-15)
            assert np.abs(th - sol.y[0]).max() < tol and np.abs(th).max() > 0.1


def test_damped_spring_closed_form_from_the_model_and_from_arguments():
    """m x'' + c x' + k (x - x_r) = 0 on a prismatic joint (gravity across it): underdamped decay
    from rest at x_r + a.  The damping and spring come from the model's tables, or as arguments."""
    m, c, k, xr, a = 2.0, 0.8, 50.0, 0.3, 0.1
    b = ej.ModelBuilder(gravity=(0.0, 0.0, -9.81))
    b.add_body("slider", joint=ej.joints.Prismatic((1.0, 0.0, 0.0)), mass=m, inertia=np.eye(3) * 0.01,
               damping=c, stiffness=k, spring_ref=xr)
    model = b.build()
    np.testing.assert_array_equal([model.dof_damping, model.dof_stiffness, model.dof_springref], [[c], [k], [xr]])
    traj = ej.simulate(model, [xr + a], [0.0], 3.0, 1e-3)
    wn = np.sqrt(k / m)
    z = c / (2 * np.sqrt(k * m))
    wd = wn * np.sqrt(1 - z * z)
    ref = xr + a * np.exp(-z * wn * traj.t) * (np.cos(wd * traj.t) + z / np.sqrt(1 - z * z) * np.sin(wd * traj.t))
    np.testing.assert_allclose(traj.q[:, 0], ref, rtol=0, atol=1e-11)
    from_file = ej.Model.from_json(model.to_json())
    bare = ej.ModelBuilder(gravity=(0.0, 0.0, -9.81))
    bare.add_body("slider", joint=ej.joints.Prismatic((1.0, 0.0, 0.0)), mass=m, inertia=np.eye(3) * 0.01)
    bare = bare.build()
    same = ej.simulate(bare, [xr + a], [0.0], 3.0, 1e-3, damping=c, stiffness=k, spring_ref=xr)
    np.testing.assert_array_equal(same.q, traj.q)
    np.testing.assert_array_equal(ej.simulate(from_file, [xr + a], [0.0], 3.0, 1e-3).q, traj.q)
    # without damping, the spring's energy is in the potential: the total is conserved
    free = ej.simulate(model, [xr + a], [0.0], 3.0, 1e-3, damping=0.0)
    assert free.energy_drift() < 1e-10 and np.ptp(free.kinetic) > 0.1


def test_work_of_torques_and_damping_balances_energy():
    """On a scleronomic model, E(t) - E(0) equals the work of tau - damping qd."""
    rng = np.random.default_rng(6)
    model = random_tree([ej.joints.Revolute((0.0, 0.0, 1.0)), ej.joints.Revolute((0.0, 1.0, 0.0))], rng)
    q, qd, _ = random_state(model, rng, vscale=0.5)
    tau = np.array([0.3, -0.2])
    d = np.array([0.05, 0.1])
    traj = ej.simulate(model, q, qd, 0.3, 1e-3, tau=tau, damping=d)
    power = np.einsum("ij,ij->i", tau - d * traj.qd, traj.qd)
    work = np.concatenate([[0.0], np.cumsum(0.5 * (power[1:] + power[:-1]) * 1e-3)])
    np.testing.assert_allclose(traj.energy - traj.energy[0], work, atol=1e-6)


# ---------------------------------------------------------------------------- batches, segments, records
def test_batch_equals_single_runs_and_segments_change_no_bit():
    rng = np.random.default_rng(5)
    model = _pendulum_tree(rng)
    states = [random_state(model, rng, vscale=0.5) for _ in range(3)]
    Q = np.stack([s[0] for s in states])
    V = np.stack([s[1] for s in states])
    tau = rng.normal(size=(3, model.nv))

    def pd(t, q, qd, tau, p):
        for k in range(tau.shape[0]):
            tau[k] = -p[0] * qd[k] + p[1] * np.sin(3.0 * t)

    law = ej.control_law(pd, np.array([[0.5, 0.1], [1.0, 0.2], [2.0, -0.3]]))
    for method in ("rk4", "symplectic", "dopri5"):
        for u in (tau, law):
            batch = ej.simulate(model, Q, V, 0.2, 0.01, method=method, tau=u, rtol=1e-6, atol=1e-8)
            assert batch.q.shape == (21, 3, model.nq) and batch.energy.shape == (21, 3)
            for k in range(3):
                uk = tau[k] if u is tau else law.with_params(law.params[k])
                one = ej.simulate(model, Q[k], V[k], 0.2, 0.01, method=method, tau=uk, rtol=1e-6, atol=1e-8)
                for name in ("q", "qd", "kinetic", "potential"):
                    np.testing.assert_array_equal(getattr(batch, name)[:, k], getattr(one, name), err_msg=method)
            seg = ej.simulate(model, Q, V, 0.2, 0.01, method=method, tau=u, rtol=1e-6, atol=1e-8, segment_steps=3)
            for name in ("q", "qd", "kinetic", "potential"):
                np.testing.assert_array_equal(getattr(seg, name), getattr(batch, name), err_msg=method)
            if method == "dopri5":
                assert seg.info["nfev"] == batch.info["nfev"]


def test_record_every_keeps_every_kth_step_and_the_last():
    rng = np.random.default_rng(8)
    model = _pendulum_tree(rng)
    q, qd, _ = random_state(model, rng, vscale=0.5)
    full = ej.simulate(model, q, qd, 0.5, 0.01)
    some = ej.simulate(model, q, qd, 0.5, 0.01, record_every=7)
    keep = list(range(0, 51, 7)) + [50]
    np.testing.assert_array_equal(some.t, full.t[keep])
    np.testing.assert_array_equal(some.q, full.q[keep])
    np.testing.assert_array_equal(some.energy, full.energy[keep])
    assert some.steps == 50
    # dopri5 reports the same grid from its continuous extension
    d = ej.simulate(model, q, qd, 0.5, 0.01, record_every=7, method="dopri5", rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(d.t, some.t)
    np.testing.assert_allclose(d.q, some.q, atol=1e-7)


# ---------------------------------------------------------------------------- torques
def _pd_law(model, q_ref, omega=10.0):
    M = ej.mass_matrix(model, q_ref)
    kp = np.diag(M) * omega ** 2
    kd = np.diag(M) * 2.0 * omega
    ff = ej.rnea(model, q_ref, np.zeros(model.nv), np.zeros(model.nv))      # gravity at the set point

    def pd(t, q, qd, tau, p):
        n = tau.shape[0]
        for k in range(n):
            tau[k] = p[k] * (p[2 * n + k] - q[k]) - p[n + k] * qd[k] + p[3 * n + k]

    return pd, np.concatenate([kp, kd, q_ref, ff])


def test_pd_control_law_drives_the_arm_to_its_set_point():
    model = models.load("arm7")
    q_ref = np.array([0.5, -0.4, 0.3, -1.8, 0.2, 1.2, -0.5])
    pd, p = _pd_law(model, q_ref)
    law = ej.control_law(pd, p)
    assert ej.control_law(pd, p)._cfunc is law._cfunc                       # compiled once
    q0, v0 = model.neutral(), np.zeros(model.nv)
    expect = np.zeros(model.nv)
    pd(0.1, q0 + 0.1, v0 + 0.2, expect, p)
    np.testing.assert_array_equal(law(0.1, q0 + 0.1, v0 + 0.2), expect)
    traj = ej.simulate(model, q0, v0, 3.0, 1e-3, tau=law)
    assert np.abs(traj.q[-1] - q_ref).max() < 1e-6 and np.abs(traj.qd[-1]).max() < 1e-5
    assert np.abs(traj.q[0] - q_ref).max() > 1.0
    fast = ej.simulate(model, q0, v0, 3.0, 1e-3, tau=law, method="dopri5", rtol=1e-8)
    assert np.abs(fast.q[-1] - q_ref).max() < 1e-6 and fast.steps < 1000


def test_python_torque_functions_are_held_over_each_step():
    rng = np.random.default_rng(9)
    model = _pendulum_tree(rng)
    q, qd, _ = random_state(model, rng, vscale=0.5)
    c = rng.normal(size=model.nv)
    seen = []

    def held(t, q, qd):
        seen.append(t)
        return c
    for method in ("rk4", "dopri5"):
        seen.clear()
        a = ej.simulate(model, q, qd, 0.05, 0.01, method=method, tau=held)
        b = ej.simulate(model, q, qd, 0.05, 0.01, method=method, tau=c)
        np.testing.assert_array_equal(a.q, b.q)
        if method == "rk4":
            np.testing.assert_allclose(seen, np.arange(5) * 0.01, rtol=0, atol=1e-15)
    with pytest.raises(ValueError, match=r"returned shape \(2,\)"):
        ej.simulate(model, q, qd, 0.05, 0.01, tau=lambda t, q, qd: np.zeros(2))


def test_torques_per_step_and_per_recorded_time():
    rng = np.random.default_rng(10)
    model = _pendulum_tree(rng)
    q, qd, _ = random_state(model, rng, vscale=0.5)
    rows = rng.normal(size=(11, model.nv))
    per_rec = ej.simulate(model, q, qd, 0.1, 0.01, tau=rows)                 # one row per recorded time
    per_step = ej.simulate(model, q, qd, 0.1, 0.01, tau=rows[:10])           # one row per step: the same
    np.testing.assert_array_equal(per_rec.q, per_step.q)
    # dopri5 lands on each recorded time, where the torque changes: a fine RK4 with the same
    # piecewise-constant torque agrees
    d = ej.simulate(model, q, qd, 0.1, 0.01, tau=rows, method="dopri5", rtol=1e-11, atol=1e-13)
    fine = ej.simulate(model, q, qd, 0.1, 1e-4, tau=np.repeat(rows[:10], 100, axis=0), record_every=100)
    np.testing.assert_allclose(d.q, fine.q, rtol=0, atol=1e-9)
    with pytest.raises(ValueError, match=r"tau must have shape"):
        ej.simulate(model, q, qd, 0.1, 0.01, tau=rng.normal(size=(7, model.nv)))
    with pytest.raises(ValueError, match="dopri5 has no fixed steps"):
        ej.simulate(model, q, qd, 0.1, 0.01, tau=rows[:7], method="dopri5")


# ---------------------------------------------------------------------------- stopping
def test_gimbal_lock_stops_with_the_time_the_joint_and_the_finished_part():
    rng = np.random.default_rng(7)
    model = random_tree([ej.joints.Spherical("ZYX")], rng)
    q0 = np.array([0.0, np.pi / 2 - 0.05, 0.0])
    qd0 = np.array([0.0, 1.0, 0.0])
    with pytest.raises(ej.SimulationError) as err:
        ej.simulate(model, q0, qd0, 1.0, 0.05, method="euler")
    e = err.value
    assert isinstance(e, ej.SingularJointError)
    assert e.status == ej.SimulationStatus.SINGULAR_JOINT and e.joint == "j1" and e.time == pytest.approx(0.05)
    assert "t = 0.05" in str(e) and "'j1'" in str(e) and "gimbal lock" in str(e)
    np.testing.assert_allclose(e.partial.t, [0.0, 0.05])
    np.testing.assert_array_equal(e.partial.q[0], q0)
    # a batch flags the trajectory that stopped and computes the others as alone
    Q = np.array([q0, [0.1, 0.2, 0.3], [0.0, 0.3, -0.2]])
    V = np.array([qd0, [0.1, 0.0, 0.2], [0.0, 0.5, 0.0]])
    traj, status = ej.simulate(model, Q, V, 0.5, 0.05, method="euler", errors="flag")
    np.testing.assert_array_equal(status, [ej.SimulationStatus.SINGULAR_JOINT, 0, 0])
    np.testing.assert_array_equal(traj.steps, [1, 10, 10])
    assert np.all(np.isnan(traj.q[2:, 0])) and np.all(np.isfinite(traj.q[:, 1:]))
    assert "trajectory 0" in traj.message[0] and traj.message[1] == ""
    np.testing.assert_array_equal(traj.q[:, 2], ej.simulate(model, Q[2], V[2], 0.5, 0.05, method="euler").q)
    with pytest.raises(ej.SimulationError, match="trajectory 0") as err:
        ej.simulate(model, Q, V, 0.5, 0.05, method="euler")
    np.testing.assert_array_equal(err.value.partial.status, status)


def test_a_run_passing_near_a_gimbal_lock_goes_on():
    """Within 1e-4 rad of the lock aba computes (with a warning for one call): a run goes on,
    its accelerations those of the dynamics there, its energy kept."""
    rng = np.random.default_rng(7)
    model = random_tree([ej.joints.Spherical("ZYX")], rng, gravity=(0.0, 0.0, 0.0))
    q0 = np.array([0.0, np.pi / 2 - 5e-5, 0.0])
    qd0 = np.array([0.0, 1e-3, 0.0])
    traj = ej.simulate(model, q0, qd0, 0.01, 1e-3)
    assert traj.t[-1] == pytest.approx(0.01) and np.all(np.isfinite(traj.q))
    assert traj.energy_drift() < 1e-6


def test_energy_blow_up_nan_and_bad_control_output_stop_the_run():
    b = ej.ModelBuilder(gravity=(0.0, 0.0, -9.81))
    b.add_body("slider", joint=ej.joints.Prismatic((1.0, 0.0, 0.0)), mass=1.0, inertia=np.eye(3) * 0.1,
               stiffness=1e4)
    model = b.build()
    # explicit Euler on a stiff spring: |1 + i w dt| = 1.4 per step
    with pytest.raises(ej.SimulationError, match="exceeds max_energy") as err:
        ej.simulate(model, [0.1], [0.0], 5.0, 0.01, method="euler")
    e = err.value
    assert e.status == ej.SimulationStatus.ENERGY_BLOWUP and 0 < e.time < 1.0
    assert e.partial.t[-1] == pytest.approx(e.time) and abs(e.partial.energy[-1]) > 50e6
    with pytest.raises(ej.SimulationError, match="NaN or inf .*'slider_joint'") as err:
        ej.simulate(model, [0.1], [0.0], 50.0, 0.01, method="euler", max_energy=np.inf)
    assert err.value.status == ej.SimulationStatus.NONFINITE_STATE
    assert np.all(np.isfinite(err.value.partial.q))
    # dopri5 does not blow up: it takes the steps the spring needs
    ok = ej.simulate(model, [0.1], [0.0], 1.0, 0.01, method="dopri5", rtol=1e-8)
    assert ok.status == 0 and ok.energy_drift() < 1e-6

    def bad(t, q, qd, tau):
        tau[0] = np.nan if t > 0.05 else 0.0
    with pytest.raises(ej.SimulationError, match="control law returned NaN or inf for joint 'slider_joint'") as err:
        ej.simulate(model, [0.1], [0.0], 1.0, 0.001, tau=ej.control_law(bad))
    assert err.value.status == ej.SimulationStatus.NONFINITE_TORQUE and 0.05 < err.value.time < 0.052


def test_limit_work_counts_the_damping_force_from_the_moment_of_contact():
    """A coordinate entering its lower limit (0) at constant speed u between two recorded states:
    the force there is k (0 - x) - b u, so the work from the contact time tc to T is
    -k u^2 (T - tc)^2 / 2 - b u^2 (T - tc), which the trapezoid rule from the contact gets exactly
    (the power is linear there) only if it takes the damping force as the coordinate enters."""
    from ejce_nb.sim.trajectory import limit_work
    k, b, u, x0 = 300.0, 12.0, -1.3, 0.0123
    t = np.arange(11) * 0.01
    Q, V = (x0 + u * t)[:, None], np.full((11, 1), u)
    LIM = np.array([[0.0, np.inf, k, b]])
    W = limit_work(t, LIM, np.zeros(1, dtype=np.int64), Q, V)
    tc = -x0 / u
    inside = np.clip(t - tc, 0.0, None)
    exact = -k * u * u * inside ** 2 / 2 - b * u * u * inside
    np.testing.assert_allclose(W, exact, rtol=1e-12, atol=1e-15)


def test_ctrl_c_keeps_the_trajectory_so_far():
    model, _, _ = _pendulum()

    def stop(t, q, qd):
        if t >= 0.05:
            raise KeyboardInterrupt
        return np.zeros(1)
    with pytest.raises(KeyboardInterrupt) as err:
        ej.simulate(model, [0.5], [0.0], 1.0, 0.01, tau=stop)
    part = err.value.partial
    # only what was computed, and it says when and why it stopped
    assert part.steps == 5 and part.q.shape == (6, 1) and np.all(np.isfinite(part.q))
    assert part.status == ej.SimulationStatus.INTERRUPTED and part.stop_time == pytest.approx(0.05)
    assert part.t[-1] == pytest.approx(0.05) and "interrupted" in part.message and "t = 0.05" in part.message
    # what it says when printed: the message, and the status by its name
    assert str(err.value) == part.message and str(part.status) == "INTERRUPTED (14)"


def test_ctrl_c_of_a_batch_keeps_the_rows_computed(tmp_path):
    model, _, _ = _pendulum()
    calls = []

    def stop(t, q, qd):
        calls.append(t)
        if t >= 0.05:
            raise KeyboardInterrupt
        return np.zeros(1)
    with pytest.raises(KeyboardInterrupt) as err:
        ej.simulate(model, [[0.5], [0.4]], [[0.0], [0.0]], 1.0, 0.01, tau=stop)
    part = err.value.partial
    assert np.all(part.status == ej.SimulationStatus.INTERRUPTED) and len(part.t) < 101
    assert np.all(np.isfinite(part.q[:-1]))
    part.save(tmp_path / "i.npz")
    back = ej.Trajectory.load(tmp_path / "i.npz")
    assert np.all(back.status == ej.SimulationStatus.INTERRUPTED) and back.info["interrupted"]
    assert all("interrupted" in m for m in back.message) and np.all(back.stop_time < 1.0)


def _limited_arm():
    """arm7 started with a swing that drives joints into their limits."""
    arm = ej.models.load("arm7")
    qd0 = np.array([0.0, 3.0, 0.0, -3.0, 0.0, 3.0, 0.0])
    return arm, arm.neutral(), qd0


def test_neutral_lies_within_the_limits():
    for name in ("arm7", "humanoid", "knee", "driven", "spherical_paper"):
        m = ej.models.load(name)
        q = m.neutral()
        assert np.all((q >= m.q_lower) & (q <= m.q_upper)), name
        ej.rnea(m, q, np.zeros(m.nv), np.zeros(m.nv))          # and it is a valid configuration


def test_joint_limits_hold():
    arm, q0, qd0 = _limited_arm()
    free = ej.simulate(arm, q0, qd0, 1.5, 1e-3, limits=False)
    assert np.any(free.q > arm.q_upper + 0.5) or np.any(free.q < arm.q_lower - 0.5)
    assert free.limit_work is None and free.info["limits"] is None
    traj = ej.simulate(arm, q0, qd0, 1.5, 1e-3)
    assert traj.info["limits"] == dict(time_constant=0.02, damping_ratio=1.0, coordinates=7)
    # a soft limit (the penetration a spring of 50 rad/s allows at these speeds), never far past it
    over = lambda tr: max(float(np.max(tr.q - arm.q_upper)), float(np.max(arm.q_lower - tr.q)))
    assert 0.0 < over(traj) < 0.35
    assert traj.limit_work[-1] < 0.0                  # the critically damped limits dissipate
    stiff = ej.simulate(arm, q0, qd0, 1.5, 1e-3, limits=(0.005, 1.0))
    assert over(stiff) < over(traj)
    for bad in ((0.0, 1.0), (0.02,), "on", (0.02, -1.0)):
        with pytest.raises(ValueError, match="limits"):
            ej.simulate(arm, q0, qd0, 0.01, 1e-3, limits=bad)


def test_limit_work_balances_the_energy(tmp_path, capsys):
    """E(t) - E(0) = the work of the limits and of the damping (a pendulum swung into its limit)."""
    b = ej.ModelBuilder()
    b.add_body("rod", joint=ej.joints.Revolute((0.0, 1.0, 0.0)), mass=1.0, com=(0.0, 0.0, -0.25),
               inertia=models.cylinder_inertia(1.0, 0.01, 0.5), q_lower=[-0.5], q_upper=[0.5], damping=0.05)
    model = b.build()
    traj = ej.simulate(model, [0.0], [4.0], 1.0, 1e-4)
    assert 0.5 < traj.q.max() < 0.6
    W, D = traj.limit_work, traj.damping_work
    assert W[-1] < -0.2 and D[-1] < 0.0
    dE = traj.energy - traj.energy[0]
    rest = np.abs(dE - W - D).max()
    assert rest < 1e-2 * np.abs(W).max()
    # what remains is the integration error, first order in dt where the contact force jumps
    half = ej.simulate(model, [0.0], [4.0], 1.0, 5e-5)
    assert np.abs(half.energy - half.energy[0] - half.limit_work - half.damping_work).max() < 0.7 * rest
    # the balance says where the rest comes from: almost all of it from the steps where the limit
    # engages or releases (first order there: half the step, about half of it), little elsewhere
    b, bh = traj.energy_balance(), half.energy_balance()
    x = traj.q[:, 0]
    beyond = (x < -0.5) | (x > 0.5)
    assert b["limit_events"] == np.count_nonzero(beyond[1:] != beyond[:-1]) >= 2
    assert b["limit_work"] == W[-1] and b["damping_work"] == D[-1]
    assert b["rest"] == pytest.approx(dE[-1] - W[-1] - D[-1], rel=1e-12)
    assert abs(b["rest"] - b["rest_at_limits"]) < 0.05 * abs(b["rest_at_limits"])
    assert 0.3 < abs(bh["rest_at_limits"]) / abs(b["rest_at_limits"]) < 0.7
    assert 0.0 < b["quadrature"] < 1e-3 * abs(W[-1])
    model.to_json(tmp_path / "rod.json")
    assert cli.main(["simulate", str(tmp_path / "rod.json"), "--t", "1", "--dt", "1e-4", "--qd0", "4",
                     "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert (f"over the {b['limit_events']} steps where a joint limit engages or releases" in text
            and "rk4 is first order" in text and "integration error)" in text)
    # their spring: outside the limit the spring-damper law, inside nothing
    from ejce_nb.sim.trajectory import limit_torques
    LIM = np.array(traj.info["limit_table"])
    tq = limit_torques(LIM, np.array(traj.info["limit_coordinates"]), traj.q, traj.qd)
    inside = np.abs(traj.q[:, 0]) <= 0.5
    assert np.all(tq[inside] == 0.0) and np.all(tq[traj.q[:, 0] > 0.5] <= 0.0)


def _limited_mimic():
    b = ej.ModelBuilder()
    b.add_body("a", joint=ej.joints.Revolute((0, 1, 0)), mass=1.0, com=(0.3, 0, 0), inertia=np.eye(3) * 0.01,
               q_lower=[-0.2], q_upper=[0.2])
    b.add_body("b", parent="a", joint=ej.joints.Revolute((0, 1, 0)), mass=0.1, inertia=np.eye(3) * 1e-3,
               placement=ej.Transform(translation=(0.5, 0, 0)), mimic=("a_joint", 0.5, 0.0))
    return b.build()


def test_limit_law_uses_the_apparent_inertia_at_the_neutral_configuration():
    """The limits' spring-damper (``simulate``'s docstring): stiffness m_k / (tc zeta)^2 and
    damping 2 m_k / tc, m_k = 1 / (M^-1)_kk of ``mass_matrix`` at the neutral configuration (a
    model with mimic joints: its own coordinates' M); the rows without limits hold nothing."""
    arm, q0, qd0 = _limited_arm()
    tc, zeta = 0.05, 0.7
    for model, q, qd in ((arm, q0, qd0), (_limited_mimic(), [0.0], [0.0])):
        traj = ej.simulate(model, q, qd, 0.002, 1e-3, limits=(tc, zeta))
        LIM = np.array(traj.info["limit_table"])
        M = ej.mass_matrix(model, model.neutral())
        m = 1.0 / np.diag(np.linalg.inv(M))
        has = np.isfinite(LIM[:, 0]) | np.isfinite(LIM[:, 1])
        assert has.sum() == traj.info["limits"]["coordinates"] == model.nv
        np.testing.assert_allclose(LIM[:, 2], m / (tc * zeta) ** 2, rtol=1e-14, atol=0)
        np.testing.assert_allclose(LIM[:, 3], 2.0 * m / tc, rtol=1e-14, atol=0)
    free = ej.ModelBuilder()
    free.add_body("a", joint=ej.joints.Revolute((0, 1, 0)), mass=1.0, inertia=np.eye(3), q_lower=[-1.0])
    free.add_body("b", parent="a", joint=ej.joints.Revolute((0, 1, 0)), mass=1.0, inertia=np.eye(3),
                  placement=ej.Transform(translation=(0.5, 0, 0)))
    LIM = np.array(ej.simulate(free.build(), [0.0, 0.0], [0.0, 0.0], 0.002, 1e-3).info["limit_table"])
    assert LIM[0, 0] == -1.0 and LIM[0, 1] == np.inf and LIM[0, 2] > 0.0
    assert LIM[1, 0] == -np.inf and LIM[1, 1] == np.inf and LIM[1, 2] == LIM[1, 3] == 0.0


def test_limits_and_interruption_of_a_mimic_model():
    """Models with mimic joints: the same limit law and the same Ctrl-C."""
    model = _limited_mimic()
    traj = ej.simulate(model, [0.0], [0.0], 1.0, 1e-3)
    assert traj.info["limits"]["coordinates"] == 1
    assert 0.2 < np.abs(traj.q).max() < 0.3

    def stop(t, q, qd):
        if t >= 0.05:
            raise KeyboardInterrupt
        return np.zeros(1)
    with pytest.raises(KeyboardInterrupt) as err:
        ej.simulate(model, [0.0], [0.0], 1.0, 1e-2, tau=stop)
    part = err.value.partial
    assert part.status == ej.SimulationStatus.INTERRUPTED and len(part.t) == 6 and np.all(np.isfinite(part.q))


def test_loose_inputs_are_refused():
    model, _, _ = _pendulum()
    for kw, match in ((dict(t_final="1.0"), "t_final must be a number"), (dict(dt="0.01"), "dt must be a number"),
                      (dict(t_final=True), "t_final must be a number"),
                      (dict(t_final=0.01, dt=0.5), "larger than twice t_final")):
        args = dict(q0=[0.1], qd0=[0.0], t_final=0.1, dt=0.01)
        args.update(kw)
        with pytest.raises(ValueError, match=match):
            ej.simulate(model, **args)
    assert len(ej.simulate(model, [0.1], [0.0], 0.0, 0.01).t) == 1          # t_final = 0: the initial state


# ---------------------------------------------------------------------------- models with mimic joints
def _mimic_pendulum():
    bld = ej.ModelBuilder()
    bld.add_body("a", joint=ej.joints.Revolute((0.0, 1.0, 0.0)), mass=1.0, com=(0.0, 0.0, -0.3),
                 inertia=np.eye(3) * 0.01)
    bld.add_body("b", parent="a", joint=ej.joints.Revolute((0.0, 1.0, 0.0)), placement=ej.Transform(
        translation=(0.0, 0.0, -0.6)), mass=1.0, com=(0.0, 0.0, -0.3), inertia=np.eye(3) * 0.01,
        mimic=("a_joint", -0.5, 0.0))
    return bld.build()


def test_models_with_mimic_joints_in_the_compiled_loop():
    """A mimic model's simulation is RK4 on ``ej.aba`` to rounding (a reference written out here,
    with a control law's torque and damping), and it conserves its energy."""
    mm = _mimic_pendulum()
    def pd(t, q, qd, tau):
        for k in range(tau.shape[0]):
            tau[k] = 2.0 * (0.2 - q[k]) - 0.1 * qd[k]
    law = ej.control_law(pd)
    d = np.array([0.05])

    def f(q, v):
        return v, ej.aba(mm, q, v, -2.0 * (q - 0.2) - 0.1 * v - d * v)
    q, v = np.array([0.8]), np.array([0.3])
    Q, V = [q], [v]
    h = 1e-3
    for _ in range(20):
        k1 = f(q, v)
        k2 = f(q + h / 2 * k1[0], v + h / 2 * k1[1])
        k3 = f(q + h / 2 * k2[0], v + h / 2 * k2[1])
        k4 = f(q + h * k3[0], v + h * k3[1])
        q, v = q + h / 6 * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0]), v + h / 6 * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1])
        Q.append(q)
        V.append(v)
    traj = ej.simulate(mm, [0.8], [0.3], 0.02, h, tau=law, damping=d, progress=False)
    np.testing.assert_allclose(traj.q, np.array(Q), rtol=0, atol=1e-13)
    np.testing.assert_allclose(traj.qd, np.array(V), rtol=0, atol=1e-13)
    traj = ej.simulate(mm, [0.8], [0.0], 1.0, 1e-3)
    assert traj.energy_drift() < 1e-9 and np.ptp(traj.q) > 0.5
    assert traj.info["wall_time"] < 5.0 + traj.info["first_call_time"]


# ---------------------------------------------------------------------------- model tables
def test_passive_tables_from_builder_json_and_urdf():
    b = ej.ModelBuilder()
    b.add_body("base", joint=ej.joints.Free("quaternion"), mass=1.0, inertia=np.eye(3),
               damping=[0.0, 0.0, 0.0, 0.1, 0.1, 0.1], stiffness=[5.0, 0, 0, 0, 0, 0], spring_ref=[0.2, 0, 0, 0, 0, 0])
    b.add_body("arm", parent="base", joint=ej.joints.Revolute((0.0, 0.0, 1.0)), mass=1.0, inertia=np.eye(3),
               damping=0.3, stiffness=2.0, spring_ref=-0.1)
    model = b.build()
    np.testing.assert_array_equal(model.dof_damping, [0, 0, 0, 0.1, 0.1, 0.1, 0.3])
    back = ej.Model.from_json(model.to_json())
    for name in ("dof_damping", "dof_stiffness", "dof_springref"):
        np.testing.assert_array_equal(getattr(back, name), getattr(model, name))
    with pytest.raises(ej.ModelError, match="unit quaternion"):
        ej.ModelBuilder().add_body("x", joint=ej.joints.Spherical("quaternion"), stiffness=1.0)
    with pytest.raises(ej.ModelError, match="damping must not be negative"):
        ej.ModelBuilder().add_body("x", joint=ej.joints.Revolute(), damping=-1.0)
    with pytest.raises(ej.ModelError, match=r"bodies\[0\].dynamics.damping"):
        ej.Model.from_json('{"bodies": [{"name": "a", "joint": {"type": "Revolute", "axis": [0, 0, 1]}, '
                           '"dynamics": {"damping": [1, 2]}}]}')
    with pytest.raises(ej.ModelError, match=r"bodies\[0\].dynamics: unknown fields \['friction'\]"):
        ej.Model.from_json('{"bodies": [{"name": "a", "joint": {"type": "Revolute", "axis": [0, 0, 1]}, '
                           '"dynamics": {"friction": [1]}}]}')
    with pytest.raises(ValueError, match="unit quaternion of joint 'base_joint'"):
        ej.simulate(model, model.neutral(), np.zeros(7), 0.1, 0.01, stiffness=1.0)
    urdf = """<robot name="r"><link name="world"/><link name="a"><inertial><mass value="1"/>
      <inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>
      <joint name="j" type="revolute"><parent link="world"/><child link="a"/><axis xyz="0 0 1"/>
      <limit lower="-1" upper="1" effort="1" velocity="1"/><dynamics damping="0.7" friction="0.2"/></joint></robot>"""
    assert ej.load_urdf(urdf).dof_damping.tolist() == [0.7]


# ---------------------------------------------------------------------------- files, progress, command
def test_trajectory_files_round_trip_exactly(tmp_path):
    rng = np.random.default_rng(12)
    model = _pendulum_tree(rng)
    Q = np.stack([random_state(model, rng, vscale=0.5)[0] for _ in range(2)])
    for q in (Q[0], Q):
        traj = ej.simulate(model, q, np.zeros(q.shape[:-1] + (model.nv,)), 0.05, 0.01, method="dopri5")
        traj.save(tmp_path / "t.npz")
        back = ej.Trajectory.load(tmp_path / "t.npz")
        for name in ("t", "q", "qd", "kinetic", "potential", "energy", "status", "steps", "stop_time"):
            np.testing.assert_array_equal(getattr(back, name), getattr(traj, name))
        assert back.info == traj.info and back.message == traj.message and back.batch == traj.batch
        traj.to_csv(tmp_path / "t.csv")
        lines = (tmp_path / "t.csv").read_text().splitlines()
        header = lines[0].split(",")
        assert header[-3:] == ["kinetic", "potential", "energy"]
        assert "q:j1[0]" in header and "q:j2" in header and "qd:j4[5]" in header
        data = np.loadtxt(tmp_path / "t.csv", delimiter=",", skiprows=1)
        col = header.index("q:j2")
        flat = traj.q[..., model.q_slice("j2")].T.reshape(-1) if traj.batch else traj.q[:, model.q_slice("j2")][:, 0]
        np.testing.assert_array_equal(data[:, col], flat)
    with pytest.raises(ValueError, match="not an ejce_nb trajectory"):
        np.savez(tmp_path / "x.npz", a=np.zeros(2))
        ej.Trajectory.load(tmp_path / "x.npz")


def test_progress_bar(capsys):
    model, _, _ = _pendulum()
    ej.simulate(model, [0.5], [0.0], 0.2, 0.001, progress=True, segment_steps=50)
    assert "200/200" in capsys.readouterr().err
    ej.simulate(model, [0.5], [0.0], 0.2, 0.001)                 # short: no bar
    assert capsys.readouterr().err == ""


def test_simulate_command(tmp_path, capsys):
    out, png = tmp_path / "arm.npz", tmp_path / "arm.png"
    assert cli.main(["simulate", "arm7", "--t", "0.05", "--dt", "1e-3", "--q0", "0.5,0.3,0,-1.5,0,1.5,0",
                     "--out", str(out), "--plot", str(png), "--snapshot", "0,0.05", "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "steps/s" in text and "energy balance" in text and "joint limits" in text and "50 steps" in text
    traj = ej.Trajectory.load(out)
    assert traj.q.shape == (51, 7) and traj.q[0, 0] == 0.5 and png.stat().st_size > 10_000
    assert cli.main(["simulate", "driven", "--t", "0.02", "--method", "dopri5", "--out", str(tmp_path / "d.csv"),
                     "--no-progress"]) == 0
    assert (tmp_path / "d.csv").read_text().startswith("t,q:pin,q:hinge,qd:pin")
    # a run that stops early writes what it had and says why
    rng = np.random.default_rng(7)
    random_tree([ej.joints.Spherical("ZYX")], rng).to_json(tmp_path / "zyx.json")
    capsys.readouterr()
    assert cli.main(["simulate", str(tmp_path / "zyx.json"), "--t", "1", "--dt", "0.05", "--method", "euler",
                     "--q0", f"0,{np.pi / 2 - 0.05!r},0", "--qd0", "0,1,0", "--out", str(out), "--no-progress"]) == 3
    cap = capsys.readouterr()
    assert "gimbal lock" in cap.err and len(ej.Trajectory.load(out).t) == 2
    assert cli.main(["simulate", "arm7", "--q0", "1,2"]) == 2
    assert "--q0: expected 7 numbers" in capsys.readouterr().err


def test_bad_input_is_refused_with_a_clear_message():
    model, _, _ = _pendulum()
    for kw, match in ((dict(dt=0.0), "dt"), (dict(method="leapfrog"), "method"), (dict(qd0=np.zeros(2)), "qd0"),
                      (dict(record_every=0), "record_every"), (dict(t_eval=[0.1]), "t_eval needs method='dopri5'"),
                      (dict(method="dopri5", t_eval=[0.2, 0.1]), "strictly increasing"),
                      (dict(method="dopri5", rtol=1e-20), "rtol"), (dict(damping=-1.0), "damping"),
                      (dict(damping=[1.0, 2.0]), r"shape \(1,\)"), (dict(q0=[np.nan]), "q0 contains NaN"),
                      (dict(tau="x"), "tau must be"), (dict(max_energy=-1.0), "max_energy"),
                      (dict(errors="ignore"), "errors")):
        args = dict(q0=[0.1], qd0=[0.0], t_final=0.1, dt=0.01)
        args.update(kw)
        with pytest.raises(ValueError, match=match):
            ej.simulate(model, **args)
    with pytest.raises(ValueError, match="takes params but none"):
        ej.control_law(lambda t, q, qd, tau, p: None)
    with pytest.raises(ValueError, match="Numba cannot compile"):
        ej.control_law(lambda t, q, qd, tau: tau.undefined_method())
    law = ej.control_law(_pd_law(model, np.zeros(1))[0], np.zeros((2, 4)))
    with pytest.raises(ValueError, match="one row per trajectory"):
        ej.simulate(model, [0.1], [0.0], 0.1, 0.01, tau=law)
