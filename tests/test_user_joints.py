"""User-defined joints (ej.joints.Custom): written as a pose alone, they give the built-ins' results
in every kernel, the shipped examples pass ej.check_joint, wrong poses are reported or refused,
and model files name them."""
import os
import pickle
import sys

import numba
import numpy as np
import pytest

import ejce_nb as ej
from ejce_nb import jmath as jm
from conftest import random_state, random_tree, scaled_err

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples"))
import user_joints as examples  # noqa: E402

J = ej.joints
AXIS = np.array([0.48, -0.6, 0.64])


# ---------------------------------------------------------------------------- user poses of built-ins
def revolute_pose(q, t, p):
    return jm.rot((p[0], p[1], p[2]), q[0]), (0.0, 0.0, 0.0)


def revolute_transform(q, t, p):
    R = jm.rot((p[0], p[1], p[2]), q[0])
    return ((R[0][0], R[0][1], R[0][2], 0.0), (R[1][0], R[1][1], R[1][2], 0.0), (R[2][0], R[2][1], R[2][2], 0.0),
            (0.0, 0.0, 0.0, 1.0))


def zyx_pose(q, t, p):
    return jm.matmul(jm.matmul(jm.rot_z(q[0]), jm.rot_y(q[1])), jm.rot_x(q[2])), (0.0, 0.0, 0.0)


def helical_pose(q, t, p):
    a = (p[0], p[1], p[2])
    return jm.rot(a, q[0]), jm.scale(p[3] * q[0], a)


def knee_pose(q, t, p):
    # translations that are polynomials of the flexion angle, then the flexion about y
    x = 0.01 * q[0] - 0.004 * q[0] ** 2
    z = 0.002 * q[0] ** 3
    return jm.rot_y(q[0]), (x, 0.0, z)


def driven_pose(q, t, p):
    # a coordinate plus a harmonic drive about z
    return jm.rot_z(q[0] + 0.2 * jm.sin(3.0 * t + 0.5)), (0.0, 0.0, 0.0)


KNEE = J.Composite([J.Trans((1, 0, 0), ej.fn.Poly(0, [0.0, 0.01, -0.004])),
                    J.Trans((0, 0, 1), ej.fn.Poly(0, [0.0, 0.0, 0.0, 0.002])),
                    J.Rot((0, 1, 0), ej.fn.Linear([1.0]))], 1)
DRIVEN = J.Composite([J.Rot((0, 0, 1), ej.fn.Sum(ej.fn.Linear([1.0]), ej.fn.Harmonic(0.2, 3.0, 0.5)))], 1)
PAIRS = [
    (J.Revolute(AXIS), J.Custom(revolute_pose, 1, params=AXIS, name="user_revolute")),
    (J.Revolute(AXIS), J.Custom(transform=revolute_transform, nq=1, params=AXIS, name="user_revolute_4x4")),
    (J.Spherical("ZYX"), J.Custom(zyx_pose, 3, name="user_zyx", q_range=[(-3, 3), (-1.2, 1.2), (-3, 3)])),
    (J.Helical(AXIS, 0.07), J.Custom(helical_pose, 1, params=list(AXIS) + [0.07], name="user_helical")),
    (KNEE, J.Custom(knee_pose, 1, name="user_knee", q_range=(-2.0, 0.5))),
    (DRIVEN, J.Custom(driven_pose, 1, name="user_driven")),
]


def _trees():
    builtin = [b for b, _ in PAIRS] + [J.Prismatic((0, 0, 1))]
    user = [u for _, u in PAIRS] + [J.Prismatic((0, 0, 1))]
    return random_tree(builtin, 31), random_tree(user, 31)


def _everything(model, q, qd, qdd, t):
    kin = ej.forward_kinematics(model, q, qd, qdd, t=t)
    jt = ej.joint_terms(model, q, qd, t=t)
    tau = ej.rnea(model, q, qd, qdd, t=t)
    out = {"tau": tau, "M": ej.mass_matrix(model, q, t=t), "h": ej.nonlinear_effects(model, q, qd, t=t),
           "qdd": ej.aba(model, q, qd, tau, t=t), "T": ej.kinetic_energy(model, q, qd, t=t),
           "V": ej.potential_energy(model, q, t=t), "Jb": ej.body_jacobian(model, q, model.nbodies, t=t),
           "J": jt.J, "sigma": jt.sigma, "bias": jt.bias}
    out.update({k: getattr(kin, k) for k in ("R", "p", "omega", "v", "alpha", "a")})
    return out


def test_user_joints_give_the_builtins_results_in_every_kernel():
    builtin, user = _trees()
    assert [user.jnt_path[i] for i in range(1, 7)] == [4] * 6
    rng = np.random.default_rng(32)
    for t in (0.0, 0.7):
        q, qd, qdd = random_state(builtin, rng)
        a, b = _everything(builtin, q, qd, qdd, t), _everything(user, q, qd, qdd, t)
        for k in a:
            assert scaled_err(b[k], a[k]) < 1e-13, k
    # batches equal loops, and the batch equals the built-in batch
    Q, V, A = (np.array([random_state(builtin, rng)[k] for _ in range(5)]) for k in range(3))
    T = np.linspace(0.0, 1.0, 5)
    a, b = _everything(builtin, Q, V, A, T), _everything(user, Q, V, A, T)
    for k in a:
        assert scaled_err(b[k], a[k]) < 1e-13, k
    for i in range(5):
        one = _everything(user, Q[i], V[i], A[i], float(T[i]))
        for k in one:
            np.testing.assert_array_equal(np.asarray(b[k])[i], one[k], err_msg=k)
    # and the time loop
    q, qd, _ = random_state(builtin, rng, vscale=0.5)
    s1, s2 = ej.simulate(builtin, q, qd, 0.05, 0.01), ej.simulate(user, q, qd, 0.05, 0.01)
    assert scaled_err(s2.q, s1.q) < 1e-12 and scaled_err(s2.qd, s1.qd) < 1e-12


def test_moving_frames_compose_with_the_pose():
    """inboard(t) pose outboard(t)^-1 is the pose written out by hand (functions a pose function
    calls are compiled too: numba.njit)."""
    @numba.njit
    def hinge(q, t, p):
        return jm.rot_x(q[0]), (0.0, 0.0, 0.0)

    @numba.njit
    def base(t, p):
        return jm.rot_z(p[0] * t), (0.1 * t, 0.0, 0.0)

    @numba.njit
    def tip(t, p):
        return jm.rot_y(0.5 * t), (0.0, 0.0, 0.2)

    def written_out(q, t, p):
        inner = jm.compose(jm.compose(base(t, p), hinge(q, t, p)), jm.inverse(tip(t, p)))
        return inner

    moving = J.Custom(hinge, 1, params=[2.0], name="moving", inboard=base, outboard=tip)
    by_hand = J.Custom(written_out, 1, params=[2.0], name="by_hand")
    a, b = random_tree([moving], 5), random_tree([by_hand], 5)
    assert a.rheonomic and b.rheonomic
    rng = np.random.default_rng(6)
    q, qd, qdd = random_state(a, rng)
    ea, eb = _everything(a, q, qd, qdd, 0.4), _everything(b, q, qd, qdd, 0.4)
    for k in ea:
        assert scaled_err(ea[k], eb[k]) < 1e-14, k
    assert ej.check_joint(moving, n_samples=10)


@pytest.mark.parametrize("joint", [examples.ellipsoid, examples.cam_slider, examples.precessing_hinge],
                         ids=lambda j: j.name)
def test_examples_pass_check_joint(joint):
    report = ej.check_joint(joint, n_samples=30, seed=1)
    assert report, str(report)
    assert report.errors["J"][0] < 1e-9 and report.errors["bias"][0] < 1e-7
    assert "OK" in str(report)


def test_check_joint_reports_what_is_wrong():
    # a kink: the jets give one-sided derivatives there, the sweep finds it
    def kinked(q, t, p):
        return jm.rot_z(abs(q[0]) + 0.3 * q[0]), (0.0, 0.0, 0.0)

    r = ej.check_joint(J.Custom(kinked, 1, name="kinked"), n_samples=10)
    assert not r and r.kinks and "kink" in str(r) and "q[0]" in r.kinks[0]

    def jump(q, t, p):
        return ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)), (q[0] + (0.3 if q[0] > 0.25 else 0.0), 0.0, 0.0)

    r = ej.check_joint(J.Custom(jump, 1, name="jump"), n_samples=10)
    assert not r and r.kinks and "jump" in r.kinks[0]
    r = ej.check_joint(J.Spherical("ZYX"), n_samples=5)
    assert r and not r.rank_loss

    # a Z-Y-Z joint whose middle angle is stuck at its lock loses rank everywhere
    def zyz_locked(q, t, p):
        return jm.matmul(jm.matmul(jm.rot_z(q[0]), jm.rot_y(0.0 * q[1])), jm.rot_z(q[2])), (0.0, 0.0, 0.0)

    r = ej.check_joint(J.Custom(zyz_locked, 3, name="zyz_locked", q_range=(-3, 3)), n_samples=5)
    assert r.rank_loss and "loses rank" in str(r)


def test_wrong_poses_are_refused_when_the_joint_is_made():
    def not_a_rotation(q, t, p):
        c = jm.cos(q[0])
        return ((c, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)), (0.0, 0.0, 0.0)

    with pytest.raises(ej.ModelError, match=r"'squash'.*not a rotation"):
        J.Custom(not_a_rotation, 1, name="squash")

    def not_finite(q, t, p):
        return jm.rot_z(q[0]), (jm.log(q[0] - 10.0), 0.0, 0.0)

    with pytest.raises(ej.ModelError, match=r"'nan'.*not finite"):
        J.Custom(not_finite, 1, name="nan")

    def untyped(q, t, p):
        return "R", "r"

    with pytest.raises(ej.ModelError, match=r"'untyped'.*does not compile"):
        J.Custom(untyped, 1, name="untyped")
    with pytest.raises(ej.ModelError, match="exactly one"):
        J.Custom(nq=1)
    with pytest.raises(ej.ModelError, match="nq"):
        J.Custom(revolute_pose, 7)


def test_model_files_name_registered_user_joints():
    examples.register()
    model = ej.models.load(os.path.join(ej.models.DATA_DIR, "scapula.json"))
    assert {"ellipsoid", "cam_slider"} <= {s.name for s in model.joint_specs if isinstance(s, J.Custom)}
    text = model.to_json()
    again = ej.Model.from_json(text)
    assert again.to_json() == text
    rng = np.random.default_rng(3)
    q, qd, qdd = random_state(model, rng)
    np.testing.assert_array_equal(ej.rnea(again, q, qd, qdd), ej.rnea(model, q, qd, qdd))
    # a file naming a joint this session has not registered says so
    doc = text.replace('"name": "cam_slider"', '"name": "no_such_joint"')
    with pytest.raises(ej.ModelError, match=r"bodies\[\d\]\.joint: the user joint 'no_such_joint' is not "
                                            r"registered.*ej\.joints\.register"):
        ej.Model.from_json(doc)
    # pickled models make their wrappers again (the pose function travels by reference)
    copy = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(ej.rnea(copy, q, qd, qdd), ej.rnea(model, q, qd, qdd))
