"""Recursive forward kinematics and body Jacobians of whole trees: against finite differences of
world poses along a motion, against independently composed poses, against Pinocchio; invariance
under a change of rotation parameterisation and under moving the joint frames; batches and
thread counts."""
import numba
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import ejce_nb as ej
from ejce_nb.joints import Composite, Rot, Trans
from ejce_nb.joints.fn import Harmonic, Linear, Poly, Spline, Sum, TimePoly

from conftest import (requires_pinocchio, EULER_24, STENCIL, fd1, fd2, matrix_to_quat, motion, quat_mul, random_quaternion,
                      random_rotation, random_state, random_tree, random_unit, ref_world_poses,
                      rotation_rates, scaled_err)

J = ej.joints
H = 1e-3
_r = np.random.default_rng(777)
AX = [random_unit(_r) for _ in range(8)]

ALL_KINDS = [
    J.Revolute(AX[0]), J.Prismatic(AX[1]), J.Helical(AX[2], -0.25), J.Cylindrical(AX[3]),
    J.Universal(AX[4], AX[5]), J.Planar(), J.Translation(), J.Spherical("ZXZ"), J.Spherical("yxz"),
    J.Spherical("quaternion"), J.Spherical("rotvec"), J.Spherical("rodrigues"), J.Spherical("mrp"),
    J.Free("quaternion"), J.Free("XYZ"), J.Free("mrp"), J.Fixed(),
    # a knee-like coupled joint (knots far from the sampled states: the spline is smooth there)
    Composite([Rot((0, 0, 1), Linear([1.0])),
               Trans((1, 0, 0), Spline(0, [-1.5, -1.2, 1.1, 1.6], [0.01, -0.02, 0.03, 0.0])),
               Rot((1, 0, 0), Poly(0, [0.0, 0.1, -0.2]))], nq=1),
    # rheonomic: a driven axis plus a coordinate, and a purely time-driven joint
    Composite([Rot(AX[6], Sum(Linear([1.0]), Harmonic(0.5, 2.0, 0.1))),
               Trans(AX[7], Sum(Linear([0.0, 1.0]), TimePoly([0.0, 0.3, -0.2])))], nq=2),
    Composite([Rot(AX[0], Harmonic(0.8, 1.7)), Trans(AX[1], TimePoly([0.2, 0.1, 0.4]))], nq=0),
]
SCLERONOMIC = [s for s in ALL_KINDS if not s.is_rheonomic()]
PIN_KINDS = [J.Revolute(AX[0]), J.Prismatic(AX[1]), J.Helical(AX[2], 0.3), J.Universal(AX[3], AX[4]),
             J.Spherical("ZYX"), J.Spherical("quaternion"), J.Translation(), J.Free("quaternion"),
             J.Fixed(), J.Revolute((0, 0, 1)), J.Fixed(), J.Prismatic(AX[5])]


def _tree(specs, seed, repeat=1):
    rng = np.random.default_rng(seed)
    specs = list(specs) * repeat
    order = rng.permutation(len(specs))
    return random_tree([specs[k] for k in order], rng)


def _fd_world(model, q, qd, qdd, t, time_rate=1.0):
    """omega, v, alpha, a of every body by finite differences of world poses along the motion."""
    s = STENCIL * H
    qs = motion(model, q, qd, qdd, s)
    k = ej.forward_kinematics(model, qs, t=t + time_rate * s)
    w, al = rotation_rates(k.R, H)
    return w, fd1(k.p, H), al, fd2(k.p, H)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_forward_kinematics_against_finite_differences(seed):
    model = _tree(ALL_KINDS, seed)
    assert model.rheonomic
    rng = np.random.default_rng(seed)
    for _ in range(2):
        q, qd, qdd = random_state(model, rng)
        t = float(rng.uniform(-1, 1))
        k = ej.forward_kinematics(model, q, qd, qdd, t=t)
        R_ref, p_ref = ref_world_poses(model, q, t)
        assert np.abs(k.R - R_ref).max() < 1e-13
        assert np.abs(k.p - p_ref).max() < 1e-13
        w, v, al, a = _fd_world(model, q, qd, qdd, t)
        assert scaled_err(k.omega, w) < 1e-8
        assert scaled_err(k.v, v) < 1e-8
        assert scaled_err(k.alpha, al) < 1e-7
        assert scaled_err(k.a, a) < 1e-7
        # the velocity-only and pose-only calls agree with the full one
        kv = ej.forward_kinematics(model, q, qd, t=t)
        kp = ej.forward_kinematics(model, q, t=t)
        assert kv.alpha is None and kv.a is None and kp.omega is None and kp.v is None
        for f in ("R", "p", "omega", "v"):
            assert np.array_equal(getattr(kv, f), getattr(k, f))
        assert np.array_equal(kp.R, k.R) and np.array_equal(kp.p, k.p)
        assert np.array_equal(k.R[0], np.eye(3)) and not k.p[0].any() and not k.a[0].any()


def test_body_jacobian_scleronomic():
    model = _tree(SCLERONOMIC, 4)
    rng = np.random.default_rng(4)
    q, qd, _ = random_state(model, rng)
    k = ej.forward_kinematics(model, q, qd)
    Js = np.array([ej.body_jacobian(model, q, i) for i in range(model.nbodies + 1)])
    assert Js.shape == (model.nbodies + 1, 6, model.nv)
    assert not Js[0].any()
    twist = np.concatenate([k.omega, k.v], axis=1)
    assert np.abs(Js @ qd - twist).max() < 1e-13
    # every column by finite differences: a unit velocity of one variable, time frozen
    s = STENCIL * H
    nv = model.nv
    qs = np.concatenate([motion(model, q, np.eye(nv)[c], np.zeros(nv), s) for c in range(nv)])
    kk = ej.forward_kinematics(model, qs)
    R = kk.R.reshape(nv, 5, *kk.R.shape[1:]).swapaxes(0, 1)
    p = kk.p.reshape(nv, 5, *kk.p.shape[1:]).swapaxes(0, 1)
    w, _ = rotation_rates(R, H)            # (nv, N+1, 3)
    v = fd1(p, H)
    J_fd = np.concatenate([w, v], axis=2).transpose(1, 2, 0)
    assert scaled_err(Js, J_fd) < 1e-8
    # a body given by name
    assert np.array_equal(ej.body_jacobian(model, q, model.body_names[5]), Js[5])


def test_body_jacobian_rheonomic():
    """With driven joints the body twist is J qd plus the drive's part (the twist at qd = 0)."""
    model = _tree(ALL_KINDS, 5)
    rng = np.random.default_rng(5)
    q, qd, _ = random_state(model, rng)
    t = 0.37
    k = ej.forward_kinematics(model, q, qd, t=t)
    k0 = ej.forward_kinematics(model, q, np.zeros(model.nv), t=t)
    drive_seen = 0.0
    for i in range(1, model.nbodies + 1):
        Jb = ej.body_jacobian(model, q, i, t=t)
        lhs = np.concatenate([k.omega[i], k.v[i]])
        rhs = Jb @ qd + np.concatenate([k0.omega[i], k0.v[i]])
        assert np.abs(lhs - rhs).max() < 1e-13
        drive_seen = max(drive_seen, np.abs(k0.v[i]).max())
    assert drive_seen > 1e-2
    # and the drive's part is the finite difference of the world poses in time alone
    w, v, _, _ = _fd_world(model, q, np.zeros(model.nv), np.zeros(model.nv), t)
    assert scaled_err(k0.omega, w) < 1e-8 and scaled_err(k0.v, v) < 1e-8


# ---------------------------------------------------------------------------- parameterisations
def _qmul_vec(a, q):
    return quat_mul(np.concatenate([[0.0], a]), q)


def _quat_taylor(Q0, a, b):
    """Q(s) = exp(s a + s^2/2 b) (x) Q0: value, first and second derivative at s = 0.  Its angular
    velocity in P axes is a at s = 0, its angular acceleration b."""
    return Q0, 0.5 * _qmul_vec(a, Q0), 0.5 * _qmul_vec(b, Q0) - 0.25 * (a @ a) * Q0


def _t_div(x, y):
    """(x / y) as a Taylor triple; y a scalar triple."""
    f0 = x[0] / y[0]
    f1 = (x[1] - f0 * y[1]) / y[0]
    f2 = (x[2] - 2.0 * f1 * y[1] - f0 * y[2]) / y[0]
    return f0, f1, f2


def _t_scale(k, v):
    return k[0] * v[0], k[1] * v[0] + k[0] * v[1], k[2] * v[0] + 2.0 * k[1] * v[1] + k[0] * v[2]


def _axis_cols(seq, q, qd):
    """Columns of Euler's E (omega = E qd, P axes) and their time derivatives."""
    ax = {c: np.eye(3)[k] for k, c in enumerate("xyz")}
    e = [ax[c.lower()] for c in seq]
    Rm = [Rotation.from_rotvec(e[k] * q[k]).as_matrix() for k in range(3)]
    if seq.isupper():           # R = R0 R1 R2: c0 = e0, c1 = R0 e1, c2 = R0 R1 e2
        c = [e[0], Rm[0] @ e[1], Rm[0] @ Rm[1] @ e[2]]
        cd = [sum((qd[j] * np.cross(c[j], c[k]) for j in range(k)), np.zeros(3)) for k in range(3)]
    else:                       # R = R2 R1 R0: c2 = e2, c1 = R2 e1, c0 = R2 R1 e0
        c = [Rm[2] @ Rm[1] @ e[0], Rm[2] @ e[1], e[2]]
        cd = [sum((qd[j] * np.cross(c[j], c[k]) for j in range(k + 1, 3)), np.zeros(3)) for k in range(3)]
    return np.array(c).T, np.array(cd).T


def rotation_coords(param, Q0, a, b):
    """(q, qd, qdd) of a Spherical(param) joint whose relative rotation is Q0 (w, x, y, z) with
    angular velocity a and angular acceleration b (P axes), computed without the package."""
    R0 = Rotation.from_quat(Q0, scalar_first=True).as_matrix()
    if param == "quaternion":
        return Q0.copy(), R0.T @ a, R0.T @ b
    if param in EULER_24:
        q = Rotation.from_quat(Q0, scalar_first=True).as_euler(param)
        E, _ = _axis_cols(param, q, np.zeros(3))
        qd = np.linalg.solve(E, a)
        _, Ed = _axis_cols(param, q, qd)
        qdd = np.linalg.solve(E, b - Ed @ qd)
        return q, qd, qdd
    Q = _quat_taylor(Q0, a, b)
    w = tuple(x[0] for x in Q)
    v = tuple(x[1:] for x in Q)
    if param == "rodrigues":                 # g = v / w
        return tuple(np.asarray(x) for x in _t_div(v, w))
    if param == "mrp":                       # p = v / (1 + w)
        return tuple(np.asarray(x) for x in _t_div(v, (1.0 + w[0], w[1], w[2])))
    assert param == "rotvec"                 # phi = theta / n v, theta = 2 atan2(n, w), n = |v|
    n0 = np.linalg.norm(v[0])
    n1 = v[0] @ v[1] / n0
    n2 = (v[1] @ v[1] + v[0] @ v[2] - n1 * n1) / n0
    D0 = n0 * n0 + w[0] * w[0]
    D1 = 2.0 * (n0 * n1 + w[0] * w[1])
    N0 = w[0] * n1 - n0 * w[1]
    N1 = w[0] * n2 - n0 * w[2]
    th = (2.0 * np.arctan2(n0, w[0]), 2.0 * N0 / D0, 2.0 * (N1 * D0 - N0 * D1) / D0 ** 2)
    return tuple(np.asarray(x) for x in _t_scale(_t_div(th, (n0, n1, n2)), v))


INVARIANCE_PARAMS = EULER_24 + ("quaternion", "rotvec", "rodrigues", "mrp")


def test_same_motion_in_every_parameterisation_gives_same_kinematics():
    rng = np.random.default_rng(12)
    # relative rotations away from every sequence's gimbal lock
    for _ in range(100):
        Qs = [random_quaternion(rng) for _ in range(2)]
        ok = all(abs(np.linalg.det(_axis_cols(s, Rotation.from_quat(Q, scalar_first=True).as_euler(s),
                                                np.zeros(3))[0])) > 0.3 for s in EULER_24 for Q in Qs)
        if ok:
            break
    assert ok
    wa = [rng.uniform(-2, 2, 3) for _ in range(2)]
    wb = [rng.uniform(-2, 2, 3) for _ in range(2)]
    r, rd, rdd = rng.uniform(-1, 1, 3), rng.uniform(-1, 1, 3), rng.uniform(-1, 1, 3)
    other = rng.uniform(-1, 1, (3, 3))           # q, qd, qdd of the revolute and prismatic joints
    parents = [-1, 0, 1, 2, 2, 3]
    results = {}
    for param in INVARIANCE_PARAMS:
        specs = [J.Revolute(AX[0]), J.Spherical(param), J.Revolute(AX[1]), J.Prismatic(AX[2]),
                 J.Free(param)]
        model = random_tree(specs, np.random.default_rng(99), parents=parents)
        s1 = rotation_coords(param, Qs[0], wa[0], wb[0])
        s2 = rotation_coords(param, Qs[1], wa[1], wb[1])
        x = [np.concatenate([other[k, :1], s1[k], other[k, 1:], (r, rd, rdd)[k], s2[k]]) for k in range(3)]
        k = ej.forward_kinematics(model, *x)
        results[param] = k
        # the rotation coordinates do describe the intended relative rotation
        jt = ej.joint_terms(model, x[0], x[1])
        assert np.abs(jt.R[2] - Rotation.from_quat(Qs[0], scalar_first=True).as_matrix()).max() < 1e-13
        assert np.abs(jt.twist[2, :3] - wa[0]).max() < 1e-12
    ref = results["quaternion"]
    assert np.abs(ref.alpha[2]).max() > 0.1
    for param, k in results.items():
        for f, tol in (("R", 1e-13), ("p", 1e-13), ("omega", 1e-12), ("v", 1e-12), ("alpha", 1e-11),
                       ("a", 1e-11)):
            assert scaled_err(getattr(k, f), getattr(ref, f)) < tol, (param, f)


# ---------------------------------------------------------------------------- moving joint frames
def _moved(spec, Q):
    """The same joint seen from frames P and C both rotated by Q: R' = Q^T R Q, r' = Q^T r."""
    if isinstance(spec, (J.Revolute, J.Prismatic, J.Cylindrical)):
        return type(spec)(Q.T @ spec.axis)
    if isinstance(spec, J.Helical):
        return J.Helical(Q.T @ spec.axis, spec.pitch)
    if isinstance(spec, J.Universal):
        return J.Universal(Q.T @ spec.axis1, Q.T @ spec.axis2)
    if isinstance(spec, (J.Spherical, J.Fixed)):
        return spec
    if isinstance(spec, Composite):
        return Composite([type(m)(Q.T @ m.axis, m.f) for m in spec.motions], spec.nq)
    raise TypeError(spec)


def _moved_coords(spec, Q, x, velocity):
    """Coordinates (or velocities, accelerations) of the joint in the moved frames."""
    if isinstance(spec, J.Spherical):
        n_tr = 3 if isinstance(spec, J.Free) else 0
        out = x.copy()
        if n_tr:
            out[:n_tr] = Q.T @ x[:n_tr]
        rot = x[n_tr:]
        if spec.param == "quaternion" and not velocity:
            qQ = matrix_to_quat(Q)
            out[n_tr:] = quat_mul(quat_mul(qQ * [1, -1, -1, -1], rot), qQ)
        else:       # rotation vector, Gibbs, MRP, and angular velocities in C: all vectors
            out[n_tr:] = Q.T @ rot
        return out
    return x


def test_moving_joint_frames_with_compensated_placements_changes_nothing():
    specs = [J.Revolute(AX[0]), J.Prismatic(AX[1]), J.Helical(AX[2], 0.4), J.Cylindrical(AX[3]),
             J.Universal(AX[4], AX[5]), J.Spherical("quaternion"), J.Spherical("rotvec"),
             J.Spherical("rodrigues"), J.Spherical("mrp"), J.Free("quaternion"), J.Free("rotvec"),
             J.Fixed(), ALL_KINDS[17], ALL_KINDS[18], ALL_KINDS[19]]
    model = _tree(specs, 21)
    rng = np.random.default_rng(21)
    q, qd, qdd = random_state(model, rng)
    t = 0.6
    b = ej.ModelBuilder(gravity=model.gravity)
    q2, qd2, qdd2 = q.copy(), qd.copy(), qdd.copy()
    for i in range(1, model.nbodies + 1):
        spec = model.joint_specs[i]
        Q = random_rotation(rng)
        Ep, cp = model.joint_P_rot[i], model.joint_P_pos[i]
        Ec, cc = model.joint_C_rot[i], model.joint_C_pos[i]
        # slide both origins by the same vector where the joint allows it
        if isinstance(spec, (J.Revolute, J.Helical, J.Cylindrical)):
            d = rng.uniform(-1, 1) * spec.axis
        elif isinstance(spec, J.Prismatic):
            d = rng.uniform(-0.5, 0.5, 3)
        else:
            d = np.zeros(3)
        b.add_body(model.body_names[i], parent=int(model.parent[i]), joint=_moved(spec, Q),
                   placement=ej.Transform(Ep @ Q, cp + Ep @ d),
                   child_placement=ej.Transform(Ec @ Q, cc + Ec @ d),
                   mass=model.body_mass[i], com=model.body_com[i], inertia=model.body_inertia[i])
        qs, vs = model.q_slice(i), model.v_slice(i)
        q2[qs] = _moved_coords(spec, Q, q[qs], False)
        qd2[vs] = _moved_coords(spec, Q, qd[vs], True)
        qdd2[vs] = _moved_coords(spec, Q, qdd[vs], True)
    model2 = b.build()
    k1 = ej.forward_kinematics(model, q, qd, qdd, t=t)
    k2 = ej.forward_kinematics(model2, q2, qd2, qdd2, t=t)
    for f in ("R", "p", "omega", "v", "alpha", "a"):
        assert scaled_err(getattr(k2, f), getattr(k1, f)) < 1e-12, f
    # the joint-level terms did change (the frames really moved)
    assert np.abs(ej.joint_terms(model, q, qd).J - ej.joint_terms(model2, q2, qd2).J).max() > 0.1


# ---------------------------------------------------------------------------- Pinocchio
@requires_pinocchio
@pytest.mark.parametrize("seed", [31, 32, 33])
def test_world_kinematics_agree_with_pinocchio(seed):
    from pin_oracle import PinModel
    model = _tree(PIN_KINDS, seed, repeat=2)
    pm = PinModel(model)
    rng = np.random.default_rng(seed)
    states = [random_state(model, rng) for _ in range(4)]
    q, qd, qdd = (np.array([s[k] for s in states]) for k in range(3))
    k = ej.forward_kinematics(model, q, qd, qdd)
    for b in range(len(states)):
        ref = pm.kinematics(q[b], qd[b], qdd[b])
        for f in ("R", "p", "omega", "v", "alpha", "a"):
            assert scaled_err(getattr(k, f)[b], ref[f]) <= 1e-10, (f, b)


# ---------------------------------------------------------------------------- batches and threads
def _batch_model_and_states(B=7, seed=41):
    model = _tree(ALL_KINDS, seed)
    rng = np.random.default_rng(seed)
    st = [random_state(model, rng) for _ in range(B)]
    q, qd, qdd = (np.array([s[k] for s in st]) for k in range(3))
    return model, q, qd, qdd, rng.uniform(-1, 1, B)


def _all_outputs(model, q, qd, qdd, t):
    k = ej.forward_kinematics(model, q, qd, qdd, t=t)
    k1 = ej.forward_kinematics(model, q, qd, t=t)
    k0 = ej.forward_kinematics(model, q, t=t)
    jt = ej.joint_terms(model, q, qd, t=t)
    jo = ej.joint_terms(model, q, qd, t=t, frame="outboard")
    Jb = ej.body_jacobian(model, q, 3, t=t)
    return ([getattr(k, f) for f in ("R", "p", "omega", "v", "alpha", "a")]
            + [k1.omega, k1.v, k0.R, k0.p] + [jt.J, jt.sigma, jt.bias, jt.R, jt.r, jt.twist]
            + [jo.J, jo.bias, Jb])


def test_batch_equals_loop():
    model, q, qd, qdd, t = _batch_model_and_states()
    batch = _all_outputs(model, q, qd, qdd, t)
    for b in range(len(q)):
        single = _all_outputs(model, q[b], qd[b], qdd[b], float(t[b]))
        for x, y in zip(batch, single):
            assert x.shape[1:] == y.shape
            assert np.array_equal(x[b], y)
    # a batch of one keeps its batch axis
    k = ej.forward_kinematics(model, q[:1], qd[:1], qdd[:1], t=t[:1])
    assert k.R.shape == (1, model.nbodies + 1, 3, 3) and np.array_equal(k.a[0], batch[5][0])


def test_results_do_not_depend_on_thread_count():
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("Numba has a single thread here")
    model, q, qd, qdd, t = _batch_model_and_states(B=40, seed=42)
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = _all_outputs(model, q, qd, qdd, t)
        numba.set_num_threads(2)
        two = _all_outputs(model, q, qd, qdd, t)
    finally:
        numba.set_num_threads(before)
    for x, y in zip(one, two):
        assert np.array_equal(x, y)


def test_out_reuses_the_arrays_of_an_earlier_result():
    model = ej.models.load("arm7")
    rng = np.random.default_rng(11)
    for B in (None, 5):
        shape = (model.nq,) if B is None else (B, model.nq)
        q1, q2 = rng.uniform(-1, 1, shape), rng.uniform(-1, 1, shape)
        v1, v2, a1, a2 = (rng.normal(size=shape) for _ in range(4))
        k = ej.forward_kinematics(model, q1, v1, a1)
        arrays = [k.R, k.p, k.omega, k.v, k.alpha, k.a]
        again = ej.forward_kinematics(model, q2, v2, a2, out=k)
        assert again is k and all(x is y for x, y in zip(arrays, [k.R, k.p, k.omega, k.v, k.alpha, k.a]))
        ref = ej.forward_kinematics(model, q2, v2, a2)
        for name in ("R", "p", "omega", "v", "alpha", "a"):
            np.testing.assert_array_equal(getattr(k, name), getattr(ref, name))
    with pytest.raises(ValueError, match="out.R"):
        ej.forward_kinematics(model, np.zeros((3, model.nq)), out=ej.forward_kinematics(model, np.zeros(model.nq)))
    with pytest.raises(ValueError, match="out must be"):
        ej.forward_kinematics(model, np.zeros(model.nq), out=np.zeros(3))
