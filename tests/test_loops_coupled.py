"""Loop closures on a model with couplers: the constrained dynamics of the reduced model against
the uncoupled mechanism with the coupler as one more constraint row, the compiled kernel against
the reference path, and the simulation's invariants."""
import numpy as np
import pytest

import ejce_nb as ej

J = ej.joints
Z = (0.0, 0.0, 1.0)
# crank 2's angle as a function of crank 1's: c2 = 1.2 + 0.8 c1 + 0.1 c1^2 (a cam-like drive)
C0, C1, C2 = 1.2, 0.8, 0.1


def rod(m, L):
    return dict(mass=m, com=(L / 2, 0.0, 0.0), inertia=np.diag([1e-3 * m, m * L * L / 12, m * L * L / 12]))


def fivebar(coupled=True):
    """Two cranks (joints c1 at the origin, c2 at (3.2, 0, 0)), each carrying a link (joints l1,
    l2); the links' ends are pinned together (a revolute closure); with ``coupled`` crank 2 is
    driven by crank 1 through the coupler above, one degree of freedom left."""
    b = ej.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    b.add_body("crank1", joint=J.Revolute(Z), joint_name="c1", **rod(1.0, 1.0))
    b.add_body("link1", parent="crank1", joint=J.Revolute(Z), joint_name="l1",
               placement=ej.Transform(translation=(1.0, 0, 0)), **rod(2.0, 3.0))
    b.add_body("crank2", joint=J.Revolute(Z), joint_name="c2", placement=ej.Transform(translation=(3.2, 0, 0)),
               **rod(1.2, 1.2))
    b.add_body("link2", parent="crank2", joint=J.Revolute(Z), joint_name="l2",
               placement=ej.Transform(translation=(1.2, 0, 0)), **rod(1.5, 2.5))
    b.add_loop("pin", "link1", "link2", joint=J.Revolute(Z), placement_a=ej.Transform(translation=(3.0, 0, 0)),
               placement_b=ej.Transform(translation=(2.5, 0, 0)))
    if coupled:
        b.add_coupler("c2", "c1", ej.fn.Poly(0, [C0, C1, C2]))
    return b.build()


@pytest.fixture(scope="module")
def models():
    return fivebar(), fivebar(False)


def closed_state(m, c1, rng):
    """An assembled state of the coupled model at crank angle c1, with a random admissible
    velocity."""
    q = m.neutral()
    q[0], q[1], q[2] = c1, 1.0, 1.5
    q = ej.assemble(m, q, fixed=[0])
    return q, ej.project_velocity(m, q, rng.standard_normal(m.nv))


def test_the_reduced_dynamics_are_the_uncoupled_mechanism_with_the_coupler_as_a_constraint(models):
    """On the uncoupled five-bar at the expanded state: M_f a + h_f = tau_f + Jc_f^T lam + j^T mu,
    Jc_f a + bc_f = 0 and the coupler's row j a - f''(c1) c1'^2 = 0 (j = e_c2 - f'(c1) e_c1),
    solved by least squares (the planar pin's rows repeat); the coupled model's qdd is a's own
    coordinates and its constraint force G^T (M_f a + h_f - tau_f)."""
    m, u = models
    assert (m.nq, m.nv, u.nv) == (3, 3, 4) and m.dependent_coords.tolist() == [2]
    own = [0, 1, 3]
    rng = np.random.default_rng(11)
    for c1 in (0.3, 1.1, 2.4):
        q, v = closed_state(m, c1, rng)
        tau = rng.standard_normal(3)
        r = ej.constrained_dynamics(m, q, v, tau, redundant="lstsq")
        qf, vf = m.expand(q), m.expand_v(v, q)
        assert abs(qf[2] - (C0 + C1 * q[0] + C2 * q[0] ** 2)) < 1e-15
        lt = ej.loop_terms(u, qf, vf)
        assert lt.position_residual < 1e-12 and lt.velocity_residual < 1e-12
        j = np.zeros(4)
        j[2], j[0] = 1.0, -(C1 + 2 * C2 * q[0])
        A = np.vstack([lt.Jc, j])
        b = np.concatenate([lt.bc, [-2 * C2 * v[0] ** 2]])
        Mf, hf = ej.mass_matrix(u.open_tree(), qf), ej.nonlinear_effects(u.open_tree(), qf, vf)
        tf = np.zeros(4)
        tf[own] = tau
        K = np.block([[Mf, -A.T], [A, np.zeros((len(b), len(b)))]])
        a = np.linalg.lstsq(K, np.concatenate([tf - hf, -b]), rcond=1e-13)[0][:4]
        assert np.max(np.abs(A @ a + b)) < 1e-10
        scale = max(1.0, np.max(np.abs(a)))
        assert np.max(np.abs(r.qdd - a[own])) <= 1e-10 * scale
        G = m.coupler_jacobian(q)
        assert np.allclose(r.tau_constraint, G.T @ (Mf @ a + hf - tf), rtol=0, atol=1e-9 * scale)
        assert np.allclose(m.expand_a(r.qdd, q, v), a, rtol=0, atol=1e-10 * scale)
        assert r.residual < 1e-10


def test_the_compiled_kernel_equals_the_reference_path_and_batches_are_lone_calls(models):
    from ejce_nb.algorithms.loops.constrained import _solve_state, constrained_qdd
    m, _ = models
    rng = np.random.default_rng(12)
    states = [closed_state(m, c1, rng) for c1 in (0.4, 1.7, 2.9)]
    Q = np.stack([s[0] for s in states])
    V = np.stack([s[1] for s in states])
    T = rng.standard_normal((3, 3))
    rb = ej.constrained_dynamics(m, Q, V, T, redundant="lstsq")
    for k in range(3):
        ref = _solve_state(m, Q[k], V[k], T[k], 0.0, "lstsq")
        r1 = ej.constrained_dynamics(m, Q[k], V[k], T[k], redundant="lstsq")
        scale = max(1.0, np.max(np.abs(ref["qdd"])))
        assert np.max(np.abs(r1.qdd - ref["qdd"])) <= 1e-12 * scale
        for name in ("tau_constraint", "wrench"):
            assert np.allclose(getattr(r1, name), ref[name], rtol=0, atol=1e-12 * max(1.0, np.max(np.abs(ref[name]))))
        assert r1.rank == ref["rank"] == 2
        assert np.array_equal(rb.qdd[k], r1.qdd) and np.array_equal(rb.wrench[k], r1.wrench)
        # off the velocity constraints: the projection the kernel computes is project_velocity's
        v_off = V[k] + 0.1 * rng.standard_normal(3)
        _, (pres, vres), dv = constrained_qdd(m, Q[k], v_off, T[k], 0.0, "lstsq")
        assert pres < 1e-12 and abs(vres - ej.loop_terms(m, Q[k], v_off).velocity_residual) < 1e-12
        assert np.allclose(v_off + dv, ej.project_velocity(m, Q[k], v_off), rtol=0, atol=1e-12)


def test_a_loop_model_with_couplers_simulates_conserving_energy_on_the_constraints(models):
    """RK4 over two seconds: the energy of the expanded mechanism is conserved to 1e-7 of the
    largest kinetic energy, the loop holds to 1e-10, and a batch of two is two lone runs."""
    m, _ = models
    rng = np.random.default_rng(13)
    (qa, va), (qb, vb) = closed_state(m, 0.3, rng), closed_state(m, 1.4, rng)
    Q, V = np.stack([qa, qb]), np.stack([3 * va, vb])
    tb = ej.simulate(m, Q, V, 2.0, 1e-3, method="rk4", redundant="lstsq", record_every=20)
    assert np.all(tb.status == 0) and len(tb.t) == 101
    for k in range(2):
        E = tb.energy[:, k]
        assert np.max(np.abs(E - E[0])) / np.max(np.abs(tb.kinetic[:, k])) <= 1e-7
        assert tb.position_residual[:, k].max() <= 1e-10 and tb.velocity_residual[:, k].max() <= 1e-10
    assert np.ptp(tb.q[:, 0, 0]) > 1.0          # the crank moved through a good part of a turn
    t1 = ej.simulate(m, Q[1], V[1], 2.0, 1e-3, method="rk4", redundant="lstsq", record_every=20)
    assert np.array_equal(tb.q[:, 1], t1.q) and np.array_equal(tb.qd[:, 1], t1.qd)
