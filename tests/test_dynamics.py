"""Dynamics of every joint kind: RNEA, CRBA mass matrix, ABA, external forces, energies.

Identities on seeded random trees (bodies in a parents-first, not depth-first order):
    M(q) qdd + h(q, qd) = rnea(q, qd, qdd)        aba(q, qd, rnea(q, qd, qdd)) = qdd
    M symmetric positive definite, M = d tau / d qdd (finite differences)
    qd^T M qd / 2 = kinetic energy from the body twists of ej.forward_kinematics
    d/dt (T + V) = qd^T tau along a motion (scleronomic)
a rheonomic model against the scleronomic model with the drive imposed through q, qd, qdd,
external wrenches against body Jacobians, batch against loop, bad input, singular joints, and
Pinocchio on the joint kinds it shares with us.
"""
import numpy as np
import pytest

import ejce_nb as ej
from ejce_nb.joints import (Composite, Fixed, Free, Helical, Planar, Prismatic, Revolute, Rot,
                            Spherical, Trans, Translation, Universal, Cylindrical)
from ejce_nb.joints.fn import Harmonic, Linear, Poly, Spline, Sum, TimePoly

from conftest import (requires_pinocchio, STENCIL, fd1, is_depth_first, motion, random_inertia, random_rotation,
                      random_state, random_transform, random_tree, random_unit)

_r = np.random.default_rng(7)
AX = [random_unit(_r) for _ in range(8)]
# knots far outside the sampled coordinates (|q| < 1): the spline stays one smooth cubic there
KNOTS = [-3.0, -2.0, 2.0, 3.0]

SCLERONOMIC = [
    Revolute(AX[0]), Prismatic(AX[1]), Helical(AX[2], 0.3), Cylindrical(AX[3]),
    Universal(AX[4], AX[5]), Planar(), Translation(), Fixed(),
    Spherical("ZYX"), Spherical("zxz"), Spherical("YXY"), Spherical("xyz"),
    Spherical("quaternion"), Spherical("rotvec"), Spherical("rodrigues"), Spherical("mrp"),
    Free("quaternion"), Free("ZYX"), Free("rotvec"),
    # knee: flexion with translations and an abduction following it along splines
    Composite([Rot((0, 0, 1), Linear([1.0])), Trans((1, 0, 0), Spline(0, KNOTS, [0.02, -0.01, 0.03, 0.0])),
               Rot((1, 0, 0), Spline(0, KNOTS, [0.1, -0.3, 0.25, 0.05]))], nq=1),
    # coupled: two coordinates driving three motions
    Composite([Rot(AX[6], Linear([0.7, -1.3], offset=0.2)), Trans(AX[7], Linear([0.0, 1.0])),
               Rot(AX[0], Poly(1, [0.1, 1.0, -0.4]))], nq=2),
]
RHEONOMIC = [
    Composite([Rot(AX[2], Sum(Linear([1.0]), Harmonic(0.6, 2.3, 0.4)))], nq=1),
    Composite([Rot(AX[3], Harmonic(0.7, 2.0, 0.3)), Trans(AX[4], TimePoly([0.1, 0.3, -0.2]))], nq=0),
    Composite([Trans(AX[5], Sum(Linear([1.0]), TimePoly([0.0, 0.2, 0.1, -0.05]))),
               Rot(AX[6], Sum(Linear([0.0, 1.0]), Harmonic(0.2, 1.1)))], nq=2),
]
T0 = 0.37


def rel(a, b):
    """max |a - b| / max |b| (b not all zero)."""
    a, b = np.asarray(a), np.asarray(b)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


def tree(seed, rheonomic=False):
    specs = SCLERONOMIC + (RHEONOMIC if rheonomic else [])
    order = np.random.default_rng(seed).permutation(len(specs))
    model = random_tree([specs[k] for k in order], seed)
    assert not is_depth_first(model.parent)
    return model


def twist_energy(model, q, qd, t=0.0):
    """Kinetic energy from the world-frame body twists of ej.forward_kinematics."""
    k = ej.forward_kinematics(model, q, qd, t=t)
    T = 0.0
    for i in range(1, model.nbodies + 1):
        R, w = k.R[i], k.omega[i]
        c = R @ model.body_com[i]
        vc = k.v[i] + np.cross(w, c)
        T += 0.5 * model.body_mass[i] * vc @ vc + 0.5 * w @ (R @ model.body_inertia[i] @ R.T) @ w
    return T


def gravity_energy(model, q, t=0.0):
    k = ej.forward_kinematics(model, q, t=t)
    c = k.p + np.einsum("nij,nj->ni", k.R, model.body_com)
    return -float(np.sum(model.body_mass * (c @ model.gravity))), (model.body_mass @ c) / model.body_mass.sum()


# ---------------------------------------------------------------------------- identities
@pytest.mark.parametrize("seed,rheonomic", [(1, False), (2, False), (3, True), (4, True)])
def test_identities_every_joint_kind(seed, rheonomic):
    model = tree(seed, rheonomic)
    rng = np.random.default_rng(100 + seed)
    q, qd, qdd = random_state(model, rng)
    t = T0 if rheonomic else 0.0
    tau = ej.rnea(model, q, qd, qdd, t=t)
    M = ej.mass_matrix(model, q, t=t)
    h = ej.nonlinear_effects(model, q, qd, t=t)
    assert tau.shape == h.shape == (model.nv,) and M.shape == (model.nv, model.nv)
    assert rel(M @ qdd + h, tau) < 1e-10
    assert rel(ej.aba(model, q, qd, tau, t=t), qdd) < 1e-9
    assert rel(ej.forward_dynamics_crba(model, q, qd, tau, t=t), qdd) < 1e-9
    # symmetric positive definite away from singular configurations
    assert np.array_equal(M, M.T)
    assert np.linalg.eigvalsh(M)[0] > 1e-8 * np.abs(M).max()
    # M = d tau / d qdd: tau is linear in qdd, central differences are exact up to rounding
    n = model.nv
    step = np.eye(n)
    Q, V = np.repeat(q[None], 2 * n, 0), np.repeat(qd[None], 2 * n, 0)
    A = np.concatenate([qdd + step, qdd - step])
    taus = ej.rnea(model, Q, V, A, t=np.full(2 * n, t))
    assert rel((taus[:n] - taus[n:]) / 2.0, M.T) < 1e-10
    # kinetic energy: from the twists (with sigma), and qd^T M qd / 2 when scleronomic
    T = ej.kinetic_energy(model, q, qd, t=t)
    assert abs(T - twist_energy(model, q, qd, t)) < 1e-11 * max(1.0, T)
    if not rheonomic:
        assert abs(T - 0.5 * qd @ M @ qd) < 1e-11 * max(1.0, T)
    V, com = gravity_energy(model, q, t)
    assert abs(ej.potential_energy(model, q, t=t) - V) < 1e-11 * max(1.0, abs(V))
    assert np.abs(ej.center_of_mass(model, q, t=t) - com).max() < 1e-12


@pytest.mark.parametrize("seed", [5, 6])
def test_power_balance(seed):
    """d/dt (T + V) = qd^T tau for a scleronomic model without external forces."""
    model = tree(seed)
    q, qd, qdd = random_state(model, np.random.default_rng(200 + seed))
    tau = ej.rnea(model, q, qd, qdd)
    h = 1e-3
    s = STENCIL * h
    Q = motion(model, q, qd, qdd, s)
    U = qd[None, :] + s[:, None] * qdd[None, :]     # the velocity along the motion, to O(s^2)
    E = ej.kinetic_energy(model, Q, U) + ej.potential_energy(model, Q)
    power = qd @ tau
    scale = max(1.0, abs(power), float(np.abs(qd * tau).max()))
    assert abs(fd1(E, h) - power) < 1e-7 * scale


def test_power_balance_with_mimic_joints():
    b = ej.ModelBuilder()
    rng = np.random.default_rng(9)
    b.add_body("a", joint=Revolute(AX[0]), placement=random_transform(rng), mass=1.2,
               com=(0.1, 0.0, -0.2), inertia=random_inertia(rng))
    b.add_body("b", parent="a", joint=Spherical("ZYX"), placement=random_transform(rng), mass=0.8,
               com=(0.0, 0.1, -0.3), inertia=random_inertia(rng))
    b.add_body("c", parent="a", joint=Revolute(AX[1]), placement=random_transform(rng),
               child_placement=random_transform(rng), mass=0.6, com=(0.2, 0.0, 0.1),
               inertia=random_inertia(rng), mimic=("a_joint", -0.7, 0.3))
    b.add_body("d", parent="c", joint=Prismatic(AX[2]), placement=random_transform(rng), mass=0.5,
               inertia=random_inertia(rng), mimic=("a_joint", 0.4, 0.0))
    model = b.build()
    assert model.nv == 4
    q, qd, qdd = random_state(model, rng)
    tau = ej.rnea(model, q, qd, qdd)
    M = ej.mass_matrix(model, q)
    assert rel(M @ qdd + ej.nonlinear_effects(model, q, qd), tau) < 1e-10
    assert rel(ej.aba(model, q, qd, tau), qdd) < 1e-9
    h = 1e-3
    s = STENCIL * h
    Q = motion(model, q, qd, qdd, s)
    U = qd[None, :] + s[:, None] * qdd[None, :]
    E = ej.kinetic_energy(model, Q, U) + ej.potential_energy(model, Q)
    assert abs(fd1(E, h) - qd @ tau) < 1e-7 * max(1.0, abs(qd @ tau))
    assert abs(ej.kinetic_energy(model, q, qd) - 0.5 * qd @ M @ qd) < 1e-11


# ---------------------------------------------------------------------------- rheonomic joints
def _drive(f, t):
    """Value, first and second time derivative of a Harmonic or TimePoly."""
    if isinstance(f, Harmonic):
        a, w, p = f.amplitude, f.omega, f.phase
        return a * np.sin(w * t + p), a * w * np.cos(w * t + p), -a * w * w * np.sin(w * t + p)
    c = np.asarray(f.coeffs)
    P = np.polynomial.polynomial
    return P.polyval(t, c), P.polyval(t, P.polyder(c)), P.polyval(t, P.polyder(c, 2))


def test_prescribed_joints_equal_imposed_motion():
    """Bodies carried by time-driven joints (Composite, nq = 0, and a coordinate plus a drive) give
    the tau of the scleronomic model whose coordinates follow the drive through q, qd, qdd."""
    rng = np.random.default_rng(11)
    hz = Harmonic(0.5, 1.7, 0.3)
    tp = TimePoly([0.1, -0.2, 0.3, 0.05])
    hs = Harmonic(0.25, 2.9, -0.6)
    # (name, parent, prescribed spec, scleronomic spec, drive of the added coordinate or None)
    rows = [("b1", "world", Revolute(AX[0]), Revolute(AX[0]), None),
            ("b2", "b1", Composite([Rot(AX[1], hz)], 0), Revolute(AX[1]), hz),
            ("b3", "b2", Universal(AX[2], AX[3]), Universal(AX[2], AX[3]), None),
            ("b4", "b1", Composite([Trans(AX[4], tp)], 0), Prismatic(AX[4]), tp),
            ("b5", "b4", Spherical("quaternion"), Spherical("quaternion"), None),
            ("b6", "b3", Composite([Rot(AX[5], Sum(Linear([1.0]), hs))], 1), Revolute(AX[5]), "sum"),
            ("b7", "b6", Free("ZYX"), Free("ZYX"), None)]
    geo = [(random_transform(rng), random_transform(rng), rng.uniform(0.5, 2.0), rng.uniform(-0.2, 0.2, 3),
            random_inertia(rng)) for _ in rows]
    models = []
    for pick in (2, 3):
        b = ej.ModelBuilder()
        for row, (P, C, m, c, I) in zip(rows, geo):
            b.add_body(row[0], parent=row[1], joint=row[pick], placement=P, child_placement=C,
                       mass=m, com=c, inertia=I)
        models.append(b.build())
    A, S = models
    assert A.rheonomic and not S.rheonomic and A.nv == S.nv - 2
    q, qd, qdd = random_state(A, rng)
    for t in (0.0, 0.8, -1.3):
        qs, vs, as_, keep = [], [], [], []
        for j, row in enumerate(rows, start=1):
            sl = A.q_slice(j)
            vl = A.v_slice(j)
            if row[4] is None:
                qs += list(q[sl]); vs += list(qd[vl]); as_ += list(qdd[vl])
                keep += [True] * (vl.stop - vl.start)
            elif row[4] == "sum":
                x, xd, xdd = _drive(hs, t)
                qs.append(q[sl][0] + x); vs.append(qd[vl][0] + xd); as_.append(qdd[vl][0] + xdd)
                keep.append(True)
            else:
                x, xd, xdd = _drive(row[4], t)
                qs.append(x); vs.append(xd); as_.append(xdd)
                keep.append(False)
        qS, vS, aS, keep = np.array(qs), np.array(vs), np.array(as_), np.array(keep)
        tauA = ej.rnea(A, q, qd, qdd, t=t)
        tauS = ej.rnea(S, qS, vS, aS)
        assert rel(tauA, tauS[keep]) < 1e-12
        # the forward problem: the free coordinates accelerate as in the imposed-motion model
        assert rel(ej.aba(A, q, qd, tauA, t=t), qdd) < 1e-10
        assert rel(ej.mass_matrix(A, q, t=t), ej.mass_matrix(S, qS)[np.ix_(keep, keep)]) < 1e-12
        assert abs(ej.kinetic_energy(A, q, qd, t=t) - ej.kinetic_energy(S, qS, vS)) < 1e-12
        assert abs(ej.potential_energy(A, q, t=t) - ej.potential_energy(S, qS)) < 1e-12
    # a model moved by drives alone has no velocity variables
    b = ej.ModelBuilder()
    b.add_body("d", joint=Composite([Rot(AX[1], hz)], 0), mass=1.0, com=(0.3, 0, 0), inertia=np.eye(3))
    D = b.build()
    assert ej.rnea(D, [], [], [], t=0.3).shape == (0,)
    assert ej.aba(D, [], [], [], t=0.3).shape == (0,)
    assert ej.kinetic_energy(D, [], [], t=0.3) > 0.0


# ---------------------------------------------------------------------------- external forces
def test_external_wrenches():
    """rnea with f_ext = rnea without - sum_i J_i^T f_i (J_i the body-origin world Jacobian), and
    aba inverts it."""
    model = tree(8, rheonomic=True)
    rng = np.random.default_rng(12)
    q, qd, qdd = random_state(model, rng)
    f = rng.normal(size=(model.nbodies + 1, 6))
    f[0] = 1e6                                   # the world's row is ignored
    tau = ej.rnea(model, q, qd, qdd, t=T0, f_ext=f)
    ref = ej.rnea(model, q, qd, qdd, t=T0)
    for i in range(1, model.nbodies + 1):
        ref = ref - ej.body_jacobian(model, q, i, t=T0).T @ f[i]
    assert rel(tau, ref) < 1e-11
    assert rel(ej.aba(model, q, qd, tau, t=T0, f_ext=f), qdd) < 1e-9
    assert rel(ej.forward_dynamics_crba(model, q, qd, tau, t=T0, f_ext=f), qdd) < 1e-9


@pytest.mark.parametrize("seed,rheonomic", [(1, False), (3, True)])
def test_every_joint_path_equals_generic_path_in_dynamics(seed, rheonomic):
    """The screw-product and quaternion paths give the dynamics of the generic EJCE path, on
    trees with every joint kind, composite and rheonomic joints included, one state and a batch
    (``model.with_generic_joints()``: the same model with every joint on the generic path)."""
    model = tree(seed, rheonomic)
    gen = model.with_generic_joints()
    assert gen is model.with_generic_joints() and gen.nq == model.nq
    assert not np.array_equal(gen.jnt_path, model.jnt_path)
    rng = np.random.default_rng(24 + seed)
    states = [random_state(model, rng) for _ in range(3)]
    Q, V, A = (np.array([s[k] for s in states]) for k in range(3))
    f = rng.normal(size=(3, model.nbodies + 1, 6))
    t = np.array([T0, 0.3, 1.1]) if rheonomic else np.zeros(3)
    for q, qd, qdd, tt, ff in ((Q[0], V[0], A[0], float(t[0]), f[0]), (Q, V, A, t, f)):
        tau = ej.rnea(model, q, qd, qdd, tt, ff)
        assert rel(ej.rnea(gen, q, qd, qdd, tt, ff), tau) < 1e-13
        assert rel(ej.aba(gen, q, qd, tau, tt, ff), ej.aba(model, q, qd, tau, tt, ff)) < 1e-11
        assert rel(ej.mass_matrix(gen, q, tt), ej.mass_matrix(model, q, tt)) < 1e-13


# ---------------------------------------------------------------------------- batch
def test_batch_equals_loop():
    model = tree(13, rheonomic=True)
    rng = np.random.default_rng(13)
    B = 7
    states = [random_state(model, rng) for _ in range(B)]
    Q, V, A = (np.array([s[k] for s in states]) for k in range(3))
    t = rng.uniform(-1, 1, B)
    F = rng.normal(size=(B, model.nbodies + 1, 6))
    tau = ej.rnea(model, Q, V, A, t=t, f_ext=F)
    M = ej.mass_matrix(model, Q, t=t)
    h = ej.nonlinear_effects(model, Q, V, t=t)
    qdd = ej.aba(model, Q, V, tau, t=t, f_ext=F)
    T = ej.kinetic_energy(model, Q, V, t=t)
    Vg = ej.potential_energy(model, Q, t=t)
    com = ej.center_of_mass(model, Q, t=t)
    assert tau.shape == (B, model.nv) and M.shape == (B, model.nv, model.nv) and com.shape == (B, 3)
    for b in range(B):
        assert np.array_equal(tau[b], ej.rnea(model, Q[b], V[b], A[b], t=t[b], f_ext=F[b]))
        assert np.array_equal(M[b], ej.mass_matrix(model, Q[b], t=t[b]))
        assert np.array_equal(h[b], ej.nonlinear_effects(model, Q[b], V[b], t=t[b]))
        assert np.array_equal(qdd[b], ej.aba(model, Q[b], V[b], tau[b], t=t[b], f_ext=F[b]))
        assert T[b] == ej.kinetic_energy(model, Q[b], V[b], t=t[b])
        assert Vg[b] == ej.potential_energy(model, Q[b], t=t[b])
        assert np.array_equal(com[b], ej.center_of_mass(model, Q[b], t=t[b]))
    # one wrench table for the whole batch, and a scalar time
    tau1 = ej.rnea(model, Q, V, A, t=0.2, f_ext=F[0])
    for b in range(B):
        assert np.array_equal(tau1[b], ej.rnea(model, Q[b], V[b], A[b], t=0.2, f_ext=F[0]))


# ---------------------------------------------------------------------------- bad input
def test_bad_input_names_the_argument():
    model = tree(14)
    q, qd, qdd = random_state(model, np.random.default_rng(14))
    n1 = model.nbodies + 1
    cases = [
        (lambda: ej.rnea(model, q[:-1], qd, qdd), "q"),
        (lambda: ej.rnea(model, q, qd[:-1], qdd), "qd"),
        (lambda: ej.rnea(model, q, qd, np.append(qdd, 0.0)), "qdd"),
        (lambda: ej.rnea(model, q, np.where(np.arange(model.nv) == 2, np.nan, qd), qdd), "qd"),
        (lambda: ej.rnea(model, q, qd, qdd, f_ext=np.zeros((n1 - 1, 6))), "f_ext"),
        (lambda: ej.rnea(model, q, qd, qdd, f_ext=np.zeros((n1, 3))), "f_ext"),
        (lambda: ej.rnea(model, q, qd, qdd, f_ext=np.full((n1, 6), np.inf)), "f_ext"),
        (lambda: ej.rnea(model, q, qd, qdd, f_ext=np.zeros((2, n1, 6))), "f_ext"),
        (lambda: ej.rnea(model, q, qd, qdd, t=[0.0, 1.0]), "t"),
        (lambda: ej.rnea(model, q[None].repeat(3, 0), qd[None].repeat(2, 0), qdd[None].repeat(3, 0)), "qd"),
        (lambda: ej.rnea(model, q[None].repeat(3, 0), qd[None].repeat(3, 0), qdd[None].repeat(3, 0),
                         f_ext=np.zeros((2, n1, 6))), "f_ext"),
        (lambda: ej.mass_matrix(model, np.full(model.nq, np.nan)), "q"),
        (lambda: ej.mass_matrix(model, q, t=np.nan), "t"),
        (lambda: ej.nonlinear_effects(model, q, "fast"), "qd"),
        (lambda: ej.aba(model, q, qd, qdd[:3]), "tau"),
        (lambda: ej.aba(model, q, qd, qdd, f_ext="none"), "f_ext"),
        (lambda: ej.kinetic_energy(model, q, qd[1:]), "qd"),
        (lambda: ej.potential_energy(model, q[None, None]), "q"),
        (lambda: ej.center_of_mass(model, q[:2]), "q"),
    ]
    for call, name in cases:
        with pytest.raises(ValueError, match=rf"\b{name}\b"):
            call()


# ---------------------------------------------------------------------------- singular joints
def _locked_model():
    b = ej.ModelBuilder()
    rng = np.random.default_rng(15)
    for name, parent, spec in (("arm", "world", Revolute(AX[0])), ("wrist", "arm", Spherical("ZYX")),
                               ("hand", "wrist", Free("zxz"))):
        b.add_body(name, parent=parent, joint=spec, placement=random_transform(rng), mass=1.0,
                   com=rng.uniform(-0.2, 0.2, 3), inertia=random_inertia(rng))
    return b.build()


def test_gimbal_lock_raises_naming_joint_and_samples():
    model = _locked_model()
    rng = np.random.default_rng(16)
    q, qd, tau = random_state(model, rng)
    q[2] = 0.4                                      # the wrist away from its lock
    ej.aba(model, q, qd, tau)
    locked = q.copy()
    locked[2] = np.pi / 2                           # "ZYX": the middle angle at pi/2
    with pytest.raises(ej.SingularJointError, match=r"'wrist_joint'.*q\[1:4\]"):
        ej.aba(model, locked, qd, tau)
    with pytest.raises(ej.SingularJointError, match="wrist_joint"):
        ej.forward_dynamics_crba(model, locked, qd, tau)
    M = ej.mass_matrix(model, locked)               # M itself is defined there, and singular
    assert np.linalg.eigvalsh(M)[0] < 1e-12 * np.abs(M).max()
    hand = q.copy()
    hand[1 + 3 + 3 + 1] = 0.0                       # "zxz": the middle angle at 0
    with pytest.raises(ej.SingularJointError, match="hand_joint"):
        ej.aba(model, hand, qd, tau)
    # a batch reports every singular sample and its joint
    Q = np.repeat(q[None], 6, 0)
    Q[1], Q[3], Q[4] = locked, locked, hand
    V, T = np.repeat(qd[None], 6, 0), np.repeat(tau[None], 6, 0)
    with pytest.raises(ej.SingularJointError, match=r"3 of 6 samples.*1 \(joint 'wrist_joint'\), "
                                                    r"3 \(joint 'wrist_joint'\), 4 \(joint 'hand_joint'\)") as e:
        ej.aba(model, Q, V, T)
    assert list(e.value.samples) == [1, 3, 4]
    with pytest.raises(ej.SingularJointError, match=r"samples 1 .*3 .*4 "):
        ej.forward_dynamics_crba(model, Q, V, T)
    # a composite joint that is an Euler sequence locks the same way
    b = ej.ModelBuilder()
    b.add_body("c", joint=Composite([Rot((1, 0, 0), Linear([1.0])), Rot((0, 1, 0), Linear([0, 1.0])),
                                     Rot((1, 0, 0), Linear([0, 0, 1.0]))], 3),
               mass=1.0, com=(0.1, 0.2, 0.3), inertia=np.diag([0.3, 0.4, 0.5]))
    C = b.build()
    ej.aba(C, [0.1, 0.2, 0.3], np.zeros(3), np.zeros(3))
    with pytest.raises(ej.SingularJointError, match="c_joint"):
        ej.aba(C, [0.1, 0.0, 0.3], np.zeros(3), np.zeros(3))


def test_massless_subtree_raises_naming_joint():
    rng = np.random.default_rng(17)
    # body 3 is a massless leaf; body 2 is massless but carries body 4 on two revolutes, which is fine
    specs = [Revolute(AX[0]), Revolute(AX[1]), Prismatic(AX[2]), Revolute(AX[3])]
    model = random_tree(specs, rng, parents=[-1, 0, 1, 1, 2], massless=(2, 3))
    q, qd, tau = random_state(model, rng)
    with pytest.raises(ej.SingularJointError, match=r"'j3'.*massless"):
        ej.aba(model, q, qd, tau)
    with pytest.raises(ej.SingularJointError, match="'j3'"):
        ej.forward_dynamics_crba(model, q, qd, tau)
    ok = random_tree(specs[:2] + specs[3:], np.random.default_rng(18), parents=[-1, 0, 1, 2], massless=(2,))
    q, qd, tau = random_state(ok, rng)
    assert rel(ej.aba(ok, q, qd, tau), ej.forward_dynamics_crba(ok, q, qd, tau)) < 1e-10
    # a massless body whose child is free: nothing resists the massless body's own joint
    free = random_tree([Revolute(AX[0]), Revolute(AX[1]), Free("quaternion")], np.random.default_rng(19),
                       parents=[-1, 0, 1, 2], massless=(2,))
    q, qd, tau = random_state(free, rng)
    with pytest.raises(ej.SingularJointError, match=r"'j2'.*massless"):
        ej.aba(free, q, qd, tau)


def test_long_chain_is_not_mistaken_for_singular():
    """The pivots of D_i are judged against the inertias they were assembled from, a scale that
    does not compound down a long chain."""
    from ejce_nb.models import chain
    model = chain(120)
    q, qd, qdd = random_state(model, np.random.default_rng(20))
    tau = ej.rnea(model, q, qd, qdd)
    assert rel(ej.aba(model, q, qd, tau), qdd) < 1e-8
    assert rel(ej.forward_dynamics_crba(model, q, qd, tau), qdd) < 1e-8


# ---------------------------------------------------------------------------- Pinocchio


def _pin_tree(seed, n=14):
    """A free-flying base carrying a random tree of the joint kinds Pinocchio shares with us."""
    rng = np.random.default_rng(seed)
    kinds = [lambda: Revolute(random_unit(rng)), lambda: Prismatic(random_unit(rng)),
             lambda: Helical(random_unit(rng), rng.uniform(-0.3, 0.3)),
             lambda: Universal(*random_rotation(rng)[:, :2].T), lambda: Spherical("ZYX"),
             lambda: Spherical("quaternion"), lambda: Translation(), lambda: Fixed()]
    specs = [Free("quaternion")] + [kinds[k % len(kinds)]() for k in rng.permutation(n - 1)]
    while True:
        parents = [-1, 0] + [int(rng.integers(1, k)) for k in range(2, n + 1)]
        if not is_depth_first(parents):
            break
    return random_tree(specs, rng, parents=parents)


@requires_pinocchio
@pytest.mark.parametrize("seed", [21, 22, 23])
def test_against_pinocchio(seed):
    from pin_oracle import PinModel
    model = _pin_tree(seed)
    pm = PinModel(model)
    rng = np.random.default_rng(seed)
    q, qd, qdd = random_state(model, rng)
    tau = ej.rnea(model, q, qd, qdd)
    assert rel(tau, pm.rnea(q, qd, qdd)) < 1e-9
    assert rel(ej.mass_matrix(model, q), pm.mass_matrix(q)) < 1e-9
    assert rel(ej.nonlinear_effects(model, q, qd), pm.nonlinear_effects(q, qd)) < 1e-9
    tau_r = rng.normal(size=model.nv) * 5.0
    assert rel(ej.aba(model, q, qd, tau_r), pm.aba(q, qd, tau_r)) < 1e-9
    f = rng.normal(size=(model.nbodies + 1, 6))
    assert rel(ej.rnea(model, q, qd, qdd, f_ext=f), pm.rnea(q, qd, qdd, f_ext=f)) < 1e-9
    assert rel(ej.aba(model, q, qd, tau_r, f_ext=f), pm.aba(q, qd, tau_r, f_ext=f)) < 1e-9


def test_long_straight_chain_is_not_singular():
    """The lever arms of a long chain grow the articulated inertia like N^3 away from the joint
    axes; that must not make the joints look singular (a straight chain turning about its line)."""
    model = ej.models.chain(5000)
    q = np.zeros(model.nq)
    qd = np.zeros(model.nv)
    qdd = np.linspace(-1.0, 1.0, model.nv)
    tau = ej.rnea(model, q, qd, qdd)
    # M is badly conditioned at this size: check the residual of the solve, not qdd itself
    res = ej.rnea(model, q, qd, ej.aba(model, q, qd, tau)) - tau
    assert np.abs(res).max() < 1e-9 * np.abs(tau).max()
