"""Coordinate couplers: exact reduced dynamics against finite differences and Lagrange's
equations, batches, simulation, JSON and the errors."""
import numpy as np
import pytest

import ejce_nb as ej
from ejce_nb.errors import ModelError

J = ej.joints


def coupled_model(smooth=False):
    """A three-link arm whose third joint angle is a SimmSpline of the first (``smooth``: a
    polynomial), and a slide that is a polynomial of the first two angles."""
    b = ej.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    I = np.diag([0.02, 0.03, 0.025])
    b.add_body("a", joint=J.Revolute((0, 0, 1)), mass=1.0, com=(0.3, 0.01, 0), inertia=I)
    b.add_body("b", parent="a", joint=J.Revolute((0, 1, 0)), placement=ej.Transform(translation=(0.5, 0, 0)),
               mass=0.8, com=(0.25, 0, 0.02), inertia=I)
    b.add_body("c", parent="b", joint=J.Revolute((0, 0, 1)), placement=ej.Transform(translation=(0.4, 0, 0)),
               mass=0.5, com=(0.2, 0.03, 0), inertia=I)
    b.add_body("d", parent="c", joint=J.Prismatic((1, 0, 0)), placement=ej.Transform(translation=(0.3, 0, 0)),
               mass=0.2, com=(0.05, 0, 0), inertia=I * 0.1)
    f = (ej.fn.Poly(0, [0.3, 0.6, -0.2, 0.05]) if smooth else
         ej.fn.Spline(0, [-2, -1, 0, 0.5, 1.5, 2.5], [0.4, -0.2, 0.3, 0.9, 0.5, 0.1], end="simm"))
    b.add_coupler("c_joint", "a_joint", f, scale=1.3)
    b.add_coupler("d_joint", ["a_joint", "b_joint"], ej.fn.Linear([0.1, -0.05], 0.02) + ej.fn.Poly(1, [0, 0, 0.3]))
    return b.build()


@pytest.fixture(scope="module")
def model():
    return coupled_model()


def test_map_against_finite_differences(model):
    rng = np.random.default_rng(1)
    q, v, a = rng.uniform(-1, 1, 2), rng.normal(size=2), rng.normal(size=2)
    assert model.nq == 2 and model.expanded().nq == 4
    assert model.dependent_coords.tolist() == [2, 3]
    G = model.coupler_jacobian(q)
    h = 1e-6
    Gfd = np.array([(model.expand(q + h * e) - model.expand(q - h * e)) / (2 * h) for e in np.eye(2)]).T
    assert np.allclose(G, Gfd, atol=1e-8)
    assert np.allclose(model.expand_v(v, q), G @ v)
    # a_full = G a + Gdot v: the second derivative of phi along a path q(t) = q + v t + a t^2 / 2
    e = 1e-4
    path = [model.expand(q + v * t + 0.5 * a * t * t) for t in (-e, 0.0, e)]
    assert np.allclose(model.expand_a(a, q, v), (path[0] - 2 * path[1] + path[2]) / e ** 2, atol=1e-5)


def test_reduced_dynamics_are_the_projected_ones(model):
    rng = np.random.default_rng(2)
    q, v, a = rng.uniform(-1, 1, 2), rng.normal(size=2), rng.normal(size=2)
    full = model.expanded()
    G = model.coupler_jacobian(q)
    qf, vf, af = model.expand(q), model.expand_v(v, q), model.expand_a(a, q, v)
    assert np.allclose(ej.rnea(model, q, v, a), G.T @ ej.rnea(full, qf, vf, af), rtol=1e-13, atol=1e-13)
    M = ej.mass_matrix(model, q)
    assert np.allclose(M, G.T @ ej.mass_matrix(full, qf) @ G, rtol=1e-13, atol=1e-13)
    h = ej.nonlinear_effects(model, q, v)
    assert np.allclose(M @ a + h, ej.rnea(model, q, v, a), rtol=1e-12, atol=1e-12)
    assert np.allclose(ej.aba(model, q, v, ej.rnea(model, q, v, a)), a, rtol=1e-10, atol=1e-10)
    assert np.isclose(ej.kinetic_energy(model, q, v), 0.5 * v @ M @ v, rtol=1e-13)
    Jb = ej.body_jacobian(model, q, "d")
    assert np.allclose(Jb, ej.body_jacobian(full, qf, "d") @ G, atol=1e-13)


def test_lagrange_equations(model):
    """tau = d/dt dT/dv - dT/dq + dV/dq with T and V of the reduced model by finite differences."""
    rng = np.random.default_rng(3)
    q, v, a = rng.uniform(-1, 1, 2), rng.normal(size=2), rng.normal(size=2)
    h = 1e-5
    T = lambda q_, v_: ej.kinetic_energy(model, q_, v_)
    Vp = lambda q_: ej.potential_energy(model, q_)
    E = np.eye(2)
    dTdv = lambda q_, v_: np.array([(T(q_, v_ + h * e) - T(q_, v_ - h * e)) / (2 * h) for e in E])
    ddt = (dTdv(q + h * v, v + h * a) - dTdv(q - h * v, v - h * a)) / (2 * h)
    dTdq = np.array([(T(q + h * e, v) - T(q - h * e, v)) / (2 * h) for e in E])
    dVdq = np.array([(Vp(q + h * e) - Vp(q - h * e)) / (2 * h) for e in E])
    assert np.allclose(ej.rnea(model, q, v, a), ddt - dTdq + dVdq, rtol=1e-6, atol=1e-6)


def test_batch_equals_loop(model):
    # 9 states expand on this thread, 70 in parallel chunks; a lone call expands its one state
    rng = np.random.default_rng(4)
    for n in (9, 70):
        Q, V, A = rng.uniform(-1, 1, (n, 2)), rng.normal(size=(n, 2)), rng.normal(size=(n, 2))
        tau = ej.rnea(model, Q, V, A)
        M = ej.mass_matrix(model, Q)
        for k in range(n):
            assert np.array_equal(tau[k], ej.rnea(model, Q[k], V[k], A[k]))
            assert np.array_equal(M[k], ej.mass_matrix(model, Q[k]))


def test_simulate_conserves_energy():
    # a smooth coupler (a spline's third derivative jumps at its knots, which RK4 feels)
    traj = ej.simulate(coupled_model(smooth=True), np.array([0.3, -0.4]), np.array([0.5, 0.2]), 1.0, 1e-3,
                       method="rk4", progress=False)
    assert traj.status == 0
    assert traj.energy_drift() < 1e-8


def _rk4_reference(model, q, v, dt, n, damping):
    """n steps of the classical RK4 on qdd = aba(q, qd, -damping qd), written out."""
    def f(q, v):
        return v, ej.aba(model, q, v, -damping * v)
    out = [(q, v)]
    for _ in range(n):
        k1 = f(q, v)
        k2 = f(q + 0.5 * dt * k1[0], v + 0.5 * dt * k1[1])
        k3 = f(q + 0.5 * dt * k2[0], v + 0.5 * dt * k2[1])
        k4 = f(q + dt * k3[0], v + dt * k3[1])
        q = q + dt / 6 * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0])
        v = v + dt / 6 * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1])
        out.append((q, v))
    return np.array([x[0] for x in out]), np.array([x[1] for x in out])


@pytest.mark.parametrize("which", ["spline coupler", "knee_patella.osim"])
def test_compiled_simulation_equals_rk4_on_aba(model, which):
    """The compiled loop of a coupled model is the classical RK4 on ``ej.aba`` (the reduced
    dynamics through the mass matrix), to rounding; damping enters as -damping qd."""
    m = model if which == "spline coupler" else ej.models.load("knee_patella.osim")
    q0 = np.array([0.3, -0.4]) if which == "spline coupler" else np.array([0.1, -0.7])
    v0 = np.array([0.5, 0.2]) if which == "spline coupler" else np.array([0.4, -0.2])
    d = np.full(m.nv, 0.05)
    traj = ej.simulate(m, q0, v0, 0.02, 2e-3, damping=d, stiffness=0.0, limits=False, progress=False)
    Q, V = _rk4_reference(m, q0, v0, 2e-3, 10, d)
    assert traj.status == 0 and np.ptp(traj.q) > 1e-3
    np.testing.assert_allclose(traj.q, Q, rtol=0, atol=1e-12 * max(1.0, np.abs(Q).max()))
    np.testing.assert_allclose(traj.qd, V, rtol=0, atol=1e-12 * max(1.0, np.abs(V).max()))
    T = ej.kinetic_energy(m, Q, V)
    np.testing.assert_allclose(traj.kinetic, T, rtol=1e-12, atol=1e-14)


def test_simulate_methods_batch_and_interruption(model):
    """Every method runs a coupled model in the compiled loop; a batch equals its trajectories one
    by one, bitwise; dopri5 agrees with rk4; Ctrl-C keeps the rows computed."""
    Q0 = np.array([[0.3, -0.4], [-0.2, 0.5], [0.6, 0.1]])
    V0 = np.array([[0.5, 0.2], [0.0, -0.3], [0.1, 0.1]])
    ref = ej.simulate(model, Q0[0], V0[0], 0.2, 1e-3, method="rk4", progress=False)
    for method, tol in (("rk2", 1e-4), ("euler", 2e-2), ("symplectic", 2e-2), ("dopri5", 1e-6)):
        tr = ej.simulate(model, Q0[0], V0[0], 0.2, 1e-3, method=method, progress=False)
        assert tr.status == 0 and np.abs(tr.q - ref.q).max() < tol, method
    batch = ej.simulate(model, Q0, V0, 0.2, 1e-3, method="dopri5", progress=False)
    for b in range(3):
        one = ej.simulate(model, Q0[b], V0[b], 0.2, 1e-3, method="dopri5", progress=False)
        assert np.array_equal(batch.q[:, b], one.q) and np.array_equal(batch.energy[:, b], one.energy)

    def stop(t, q, qd):
        if t >= 0.05:
            raise KeyboardInterrupt
        return np.zeros(2)
    with pytest.raises(KeyboardInterrupt) as err:
        ej.simulate(model, Q0[0], V0[0], 1.0, 1e-2, tau=stop, progress=False)
    part = err.value.partial
    assert part.status == ej.SimulationStatus.INTERRUPTED and len(part.t) == 6
    np.testing.assert_allclose(part.q[:3], ej.simulate(model, Q0[0], V0[0], 0.02, 1e-2, progress=False).q,
                               rtol=0, atol=1e-14)


def test_simulate_a_coupler_before_a_quaternion_joint():
    """The integrators move the model's own coordinates: a dependent coordinate ahead of a ball
    joint's quaternion shifts it in q, and the run still conserves energy with a unit quaternion."""
    b = ej.ModelBuilder()
    I = np.diag([0.02, 0.03, 0.025])
    b.add_body("a", joint=J.Revolute((0, 1, 0)), mass=1.0, com=(0.2, 0, -0.1), inertia=I)
    b.add_body("b", parent="a", joint=J.Revolute((0, 1, 0)), placement=ej.Transform(translation=(0.4, 0, 0)),
               mass=0.5, com=(0.2, 0, 0), inertia=I)
    b.add_body("c", parent="b", joint=J.Spherical("quaternion"), placement=ej.Transform(translation=(0.3, 0, 0)),
               mass=0.4, com=(0.1, 0.05, -0.2), inertia=I)
    b.add_coupler("b_joint", "a_joint", ej.fn.Poly(0, [0.0, 0.5, 0.2]))
    m = b.build()
    assert (m.nq, m.nv, m.expanded().nq) == (5, 4, 6)
    q0 = np.array([0.3, 0.9, 0.1, -0.3, 0.2])
    q0[1:] /= np.linalg.norm(q0[1:])
    traj = ej.simulate(m, q0, np.array([0.4, 1.0, -0.5, 0.3]), 1.0, 1e-3, damping=0.0, progress=False)
    assert traj.status == 0 and traj.energy_drift() < 1e-8
    assert np.abs(np.linalg.norm(traj.q[:, 1:], axis=1) - 1.0).max() < 1e-12


def test_simulate_stops_at_a_singular_mass_matrix():
    """A body and its mimic turning against it about an axis without inertia: M = 0, the run stops
    with SINGULAR_MASS_MATRIX naming the joint, keeping its initial state."""
    b = ej.ModelBuilder()
    I = np.diag([0.1, 0.0, 0.1])
    b.add_body("a", joint=J.Revolute((0, 1, 0)), mass=1.0, inertia=I)
    b.add_body("b", parent="a", joint=J.Revolute((0, 1, 0)), mass=1.0, inertia=I, mimic=("a_joint", -1.0, 0.0))
    m = b.build()
    traj, st = ej.simulate(m, [0.1], [0.0], 0.01, 1e-3, errors="flag", progress=False)
    assert st == ej.SimulationStatus.SINGULAR_MASS_MATRIX and "'a_joint'" in traj.message
    assert traj.q[0, 0] == 0.1 and np.all(np.isnan(traj.q[1:]))


def test_json_round_trip(model):
    back = ej.Model.from_json(model.to_json())
    assert back.couplers == model.couplers
    q, v, a = np.array([0.2, -0.1]), np.array([0.3, 0.4]), np.array([-0.2, 0.1])
    assert np.array_equal(ej.rnea(back, q, v, a), ej.rnea(model, q, v, a))


def test_mimic_is_the_linear_coupler():
    b = ej.ModelBuilder()
    b.add_body("a", joint=J.Revolute((0, 0, 1)), mass=1.0, com=(0.3, 0, 0), inertia=np.eye(3) * 0.01)
    b.add_body("b", parent="a", joint=J.Revolute((0, 0, 1)), placement=ej.Transform(translation=(0.5, 0, 0)),
               mass=1.0, com=(0.3, 0, 0), inertia=np.eye(3) * 0.01, mimic=("a_joint", 0.5, 0.1))
    m1 = b.build()
    b = ej.ModelBuilder()
    b.add_body("a", joint=J.Revolute((0, 0, 1)), mass=1.0, com=(0.3, 0, 0), inertia=np.eye(3) * 0.01)
    b.add_body("b", parent="a", joint=J.Revolute((0, 0, 1)), placement=ej.Transform(translation=(0.5, 0, 0)),
               mass=1.0, com=(0.3, 0, 0), inertia=np.eye(3) * 0.01)
    b.add_coupler("b_joint", "a_joint", ej.fn.Linear([0.5], 0.1))
    m2 = b.build()
    assert m1.couplers == m2.couplers and m2.joint_mimic.tolist() == [-1, -1, 1]
    q, v, a = np.array([0.4]), np.array([0.7]), np.array([0.2])
    assert np.array_equal(ej.rnea(m1, q, v, a), ej.rnea(m2, q, v, a))


def _chain():
    b = ej.ModelBuilder()
    for k, n in enumerate("abc"):
        b.add_body(n, parent="world" if k == 0 else "abc"[k - 1], joint=J.Revolute((0, 0, 1)), mass=1.0,
                   inertia=np.eye(3) * 0.01)
    return b


@pytest.mark.parametrize("couplers, match", [
    ([("b_joint", "a_joint"), ("c_joint", "b_joint")], "itself coupled"),
    ([("b_joint", "c_joint"), ("c_joint", "b_joint")], "itself coupled"),
    ([("b_joint", "a_joint"), ("b_joint", "c_joint")], "dependent coordinate of two couplers"),
    ([("b_joint", "b_joint")], "also one of its independent"),
    ([("b_joint", "nope")], "no joint or coordinate named 'nope'"),
])
def test_coupler_errors(couplers, match):
    b = _chain()
    for dep, ind in couplers:
        b.add_coupler(dep, ind, ej.fn.Linear([1.0]))
    with pytest.raises(ModelError, match=match):
        b.build()


def test_spline_errors_and_end_conditions():
    with pytest.raises(ModelError, match="strictly increasing"):
        ej.fn.Spline(0, [0, 2, 1], [0, 1, 2], end="simm")
    with pytest.raises(ModelError, match="end must be one of"):
        ej.fn.Spline(0, [0, 1, 2], [0, 1, 2], end="cubic")
    x, y = [0.0, 0.5, 1.2, 2.0], [0.1, 0.7, 0.2, 0.5]
    nat = ej.fn.Spline(0, x, y)
    assert abs(nat.m[0]) < 1e-15 and abs(nat.m[-1]) < 1e-15
    cl = ej.fn.Spline(0, x, y, end="clamped", slopes=(1.5, -0.5))
    assert np.isclose(cl.derivatives(0.0)[1], 1.5) and np.isclose(cl.derivatives(2.0)[1], -0.5)
    # a cubic is reproduced exactly by OpenSim's end conditions (cubics through the end knots)
    xs = np.array([0.0, 0.4, 1.1, 1.5, 2.3])
    s = ej.fn.Spline(0, xs, xs ** 3 - 2 * xs)
    simm = ej.fn.Spline(0, xs, xs ** 3 - 2 * xs, end="simm")
    assert np.isclose(simm.derivatives(0.7)[0], 0.7 ** 3 - 1.4, atol=1e-12)
    assert not np.isclose(s.derivatives(0.2)[0], 0.2 ** 3 - 0.4, atol=1e-6)


def test_coupler_within_a_joint_equals_the_joint_written_with_the_function():
    """A two-coordinate Composite joint whose second coordinate is coupled to the first, against
    the same mechanism written as one joint whose second rotation is the function itself."""
    f = ej.fn.Spline(0, [-2, -1, 0, 0.5, 1.5, 2.5], [0.4, -0.2, 0.3, 0.9, 0.5, 0.1], end="simm")
    I = np.diag([0.02, 0.03, 0.025])

    def build(coupled):
        b = ej.ModelBuilder()
        if coupled:
            joint = J.Composite([J.Rot((0, 0, 1), ej.fn.Linear([1.0, 0.0])), J.Trans((1, 0, 0), ej.fn.Poly(1, [0, 0.1])),
                                 J.Rot((0, 1, 0), ej.fn.Linear([0.0, 1.0]))], 2)
        else:
            joint = J.Composite([J.Rot((0, 0, 1), ej.fn.Linear([1.0])), J.Trans((1, 0, 0), ej.fn.Spline(
                0, f.x, 0.1 * f.y, end="simm")), J.Rot((0, 1, 0), f)], 1)
        b.add_body("a", joint=joint, mass=1.0, com=(0.3, 0.01, 0.02), inertia=I)
        b.add_body("b", parent="a", joint=J.Revolute((1, 0, 0)), placement=ej.Transform(translation=(0.4, 0, 0)),
                   mass=0.7, com=(0.1, 0.2, 0), inertia=I)
        if coupled:
            b.add_coupler(("a_joint", 1), [("a_joint", 0)], f)
        return b.build()

    mc, mj = build(True), build(False)
    rng = np.random.default_rng(7)
    Q, V, A = rng.uniform(-1.5, 2, (6, 2)), rng.normal(size=(6, 2)), rng.normal(size=(6, 2))
    assert np.allclose(ej.rnea(mc, Q, V, A), ej.rnea(mj, Q, V, A), rtol=1e-12, atol=1e-12)
    assert np.allclose(ej.mass_matrix(mc, Q), ej.mass_matrix(mj, Q), rtol=1e-12, atol=1e-12)
    assert np.allclose(ej.aba(mc, Q, V, A), ej.aba(mj, Q, V, A), rtol=1e-10, atol=1e-10)
    assert np.allclose(ej.forward_kinematics(mc, Q).p, ej.forward_kinematics(mj, Q).p, atol=1e-14)


def test_json_keeps_limits_of_a_joint_with_a_coupled_coordinate():
    b = ej.ModelBuilder()
    b.add_body("a", joint=J.Composite([J.Rot((0, 0, 1), ej.fn.Linear([1.0, 0.0, 0.0])),
                                       J.Rot((0, 1, 0), ej.fn.Linear([0.0, 1.0, 0.0])),
                                       J.Trans((1, 0, 0), ej.fn.Linear([0.0, 0.0, 1.0]))], 3),
               mass=1.0, com=(0.1, 0, 0), inertia=np.eye(3) * 0.01, q_lower=[-1.0, -2.0, -0.1],
               q_upper=[1.0, 2.0, 0.1], coordinate_names=["flex", "ab", "slide"], q_default=[0.2, 0.1, 0.0])
    b.add_coupler("ab", ["flex"], ej.fn.Poly(0, [0.0, 0.5, 0.2]))
    m = b.build()
    assert m.coordinate_names == ("flex", "slide") and m.q_lower.tolist() == [-1.0, -0.1]
    assert np.allclose(m.neutral(), [0.2, 0.0])
    back = ej.Model.from_json(m.to_json())
    assert back.coordinate_names == m.coordinate_names and back.q_lower.tolist() == m.q_lower.tolist()
    assert back.couplers == m.couplers and np.array_equal(back.neutral(), m.neutral())
