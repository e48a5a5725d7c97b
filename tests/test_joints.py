"""The explicit joint constraint equation of every joint kind against finite differences of an
independently written pose (conftest.ref_joint_pose):

    relative twist        = J qd + sigma    = [axial(R' R^T); r']
    relative acceleration = J qdd + bias    = [axial(R'' R^T); r'']

along a motion through (q, qd, qdd) at time t; plus the hand-written fast paths against the
generic path, rotation vectors at and near zero rotation, and the outboard-frame variant.
"""
import numpy as np
import pytest

import ejce_nb as ej
from ejce_nb.joints import Composite, Rot, Trans
from ejce_nb.joints.fn import Harmonic, Linear, MultiPoly, Poly, Spline, Sum, TimePoly

from conftest import (EULER_24, ROT_PARAMS, STENCIL, fd1, fd2, motion, random_joint_q, random_state,
                      random_tree, random_unit, ref_joint_pose, rotation_rates, scaled_err, skew)

H = 2e-3                    # finite-difference step (5-point stencils: errors ~1e-10 here)
TOL_V = 1e-8
TOL_A = 1e-6

_r = np.random.default_rng(20240611)
AX = [random_unit(_r) for _ in range(6)]
X_KNOTS = [-1.0, -0.4, 0.1, 0.7, 1.2]
# spline coordinates are placed away from the knots (a cubic spline's third derivative jumps
# there, which a finite-difference second derivative across a knot would see): inside the knots
# and beyond both end knots, where the spline continues linearly
SPLINE_Q = (-0.7, -0.15, 0.4, 0.95, -1.6, 1.5)


def _spline(coord, ys):
    return Spline(coord, X_KNOTS, ys)


SPECS = {
    "fixed": ej.joints.Fixed(),
    "revolute": ej.joints.Revolute(AX[0]),
    "revolute_z": ej.joints.Revolute((0.0, 0.0, 1.0)),
    "prismatic": ej.joints.Prismatic(AX[1]),
    "helical": ej.joints.Helical(AX[2], pitch=0.37),
    "cylindrical": ej.joints.Cylindrical(AX[3]),
    "universal": ej.joints.Universal(AX[4], AX[5]),
    "universal_xy": ej.joints.Universal((1, 0, 0), (0, 1, 0)),
    "planar": ej.joints.Planar(),
    "translation": ej.joints.Translation(),
    "ellipsoid": ej.joints.Ellipsoid((0.07, 0.12, 0.2)),
}
for _p in EULER_24 + ROT_PARAMS:
    SPECS[f"spherical_{_p}"] = ej.joints.Spherical(_p)
for _p in ("quaternion", "ZYX", "xzx", "YXY", "rotvec", "rodrigues", "mrp"):
    SPECS[f"free_{_p}"] = ej.joints.Free(_p)
COMPOSITES = {
    "composite_linear": Composite([Rot(AX[0], Linear([0.7, -1.3], offset=0.2)),
                                   Trans(AX[1], Linear([0.0, 1.0], offset=-0.1)),
                                   Rot(AX[2], Linear([0.5, 0.5]))], nq=2),
    "composite_poly": Composite([Rot(AX[3], Poly(0, [0.1, 1.0, -0.5, 0.3])),
                                 Trans(AX[4], Poly(1, [0.0, 0.4, 0.2])),
                                 Rot(AX[5], Poly(1, [0.2, -0.8]))], nq=2),
    # a knee: flexion angle, with translations and an abduction following it along splines
    "composite_spline_knee": Composite([Rot((0, 0, 1), Linear([1.0])),
                                        Trans((1, 0, 0), _spline(0, [0.02, -0.01, 0.03, 0.0, -0.02])),
                                        Trans((0, 1, 0), _spline(0, [-0.4, -0.38, -0.41, -0.37, -0.39])),
                                        Rot((1, 0, 0), _spline(0, [0.1, -0.3, 0.25, 0.05, -0.2]))], nq=1),
    "composite_spline_big": Composite([Rot(AX[0], _spline(0, [1.0, -0.5, 0.8, 0.1, -0.9])),
                                       Trans(AX[1], _spline(0, [0.5, 0.0, -0.6, 0.9, 0.3]))], nq=1),
    "composite_timepoly": Composite([Rot(AX[1], Sum(Linear([1.0]), TimePoly([0.1, 0.5, -0.3, 0.05]))),
                                     Trans(AX[2], TimePoly([0.0, 0.2, 0.4]))], nq=1),
    "composite_harmonic": Composite([Rot(AX[2], Sum(Linear([1.0]), Harmonic(0.6, 2.3, 0.4))),
                                     Trans(AX[3], Sum(Linear([0.0, 1.0]), Harmonic(0.2, 1.1))),
                                     Rot(AX[4], Linear([0.0, 0.6]))], nq=2),
    "composite_sum": Composite([Rot(AX[3], Sum(Linear([0.5, 0.2]), Poly(1, [0.0, 0.0, 0.3]),
                                               _spline(0, [0.1, 0.3, -0.2, 0.0, 0.4]),
                                               TimePoly([0.0, 0.1]), Harmonic(0.1, 3.0, 0.2))),
                                Trans(AX[5], Linear([1.0, 1.0])), Rot(AX[0], 0.3)], nq=2),
    "composite_six": Composite([Rot((1, 0, 0), Linear([1.0])), Rot((0, 1, 0), Linear([0, 1.0])),
                                Rot((0, 0, 1), Linear([0, 0, 1.0])), Trans(AX[0], Linear([0, 0, 0, 1.0])),
                                Trans(AX[1], Linear([0, 0, 0, 0, 1.0])),
                                Trans(AX[2], Linear([0, 0, 0, 0, 0, 1.0]))], nq=6),
    "composite_multipoly": Composite([Rot(AX[0], Linear([1.0])),
                                      Trans(AX[1], MultiPoly([0, 1], [[1, 1], [2, 0], [0, 3]], [0.3, -0.2, 0.1])),
                                      Rot(AX[2], MultiPoly([1, 0], [[1, 0], [1, 1], [0, 0]], [1.0, 0.4, 0.1]))], nq=2),
    "composite_time_spline": Composite([Rot(AX[3], Sum(Linear([1.0]), Spline("t", [-1.0, 0.0, 0.5, 1.5],
                                                                              [0.1, -0.2, 0.3, 0.0]))),
                                        Trans(AX[4], Poly("t", [0.0, 0.2, -0.1]))], nq=1),
    # rheonomic joints with no coordinate: the whole motion is the time drive (J has no columns)
    "rheonomic_nq0": Composite([Rot(AX[0], Harmonic(0.7, 2.0, 0.3)),
                                Trans(AX[1], TimePoly([0.1, 0.3, -0.2])),
                                Rot(AX[2], Sum(Harmonic(0.2, 1.5), TimePoly([0.3, 0.0, 0.1])))], nq=0),
    "rheonomic_nq0_slide": Composite([Trans(AX[3], Harmonic(0.5, 3.0)),
                                      Rot(AX[4], TimePoly([0.0, 0.0, 0.7]))], nq=0),
}
SPECS.update(COMPOSITES)


def _has_spline(spec):
    def fns(f):
        return [x for p in f.parts for x in fns(p)] if isinstance(f, Sum) else [f]
    return isinstance(spec, Composite) and any(isinstance(f, Spline) for m in spec.motions for f in fns(m.f))


def _states(spec, seed, n=3):
    """n random states (q, qd, qdd, t); spline composites get every value of SPLINE_Q for q0."""
    rng = np.random.default_rng(seed)
    out = []
    count = len(SPLINE_Q) if _has_spline(spec) else n
    for k in range(count):
        q = random_joint_q(spec, rng)
        if _has_spline(spec):
            q[0] = SPLINE_Q[k]
        out.append((q, rng.uniform(-1.5, 1.5, spec.nv), rng.uniform(-2.0, 2.0, spec.nv),
                    float(rng.uniform(-2.0, 2.0))))
    return out


def _fd_relative(model, spec, q, qd, qdd, t, time_rate=1.0):
    """Relative twist and acceleration [omega; v], [alpha; a] (P axes) by finite differences of
    the reference pose along the motion."""
    s = STENCIL * H
    qs = motion(model, q, qd, qdd, s)
    poses = [ref_joint_pose(spec, qs[k], t + time_rate * s[k]) for k in range(len(s))]
    Rs = np.array([P[0] for P in poses])
    rs = np.array([P[1] for P in poses])
    w, al = rotation_rates(Rs, H)
    return np.concatenate([w, fd1(rs, H)]), np.concatenate([al, fd2(rs, H)])


@pytest.mark.parametrize("name", list(SPECS))
def test_ejce_against_finite_differences(name):
    spec = SPECS[name]
    seed = sum(map(ord, name))
    model = random_tree([spec], seed)
    rheonomic = spec.is_rheonomic()
    for q, qd, qdd, t in _states(spec, seed):
        jt = ej.joint_terms(model, q, qd, t=t)
        J, sigma, bias = jt.J, jt.sigma[1], jt.bias[1]
        assert J.shape == (6, spec.nv)
        # the pose itself
        R_ref, r_ref = ref_joint_pose(spec, q, t)
        assert np.abs(jt.R[1] - R_ref).max() < 1e-13
        assert np.abs(jt.r[1] - r_ref).max() < 1e-13
        # velocity and acceleration level along the motion
        tw_fd, acc_fd = _fd_relative(model, spec, q, qd, qdd, t)
        assert scaled_err(J @ qd + sigma, tw_fd) < TOL_V, name
        assert scaled_err(J @ qdd + bias, acc_fd) < TOL_A, name
        # every column of J: the twist of a unit velocity with time frozen
        for k in range(spec.nv):
            e = np.zeros(spec.nv)
            e[k] = 1.0
            col_fd, _ = _fd_relative(model, spec, q, e, np.zeros(spec.nv), t, time_rate=0.0)
            assert scaled_err(J[:, k], col_fd) < TOL_V, (name, k)
        # sigma is the explicit time dependence: zero for scleronomic joints
        if not rheonomic:
            assert np.abs(sigma).max() < 1e-13
        else:
            sig_fd, _ = _fd_relative(model, spec, q, np.zeros(spec.nv), np.zeros(spec.nv), t)
            assert scaled_err(sigma, sig_fd) < TOL_V
            assert np.abs(sigma).max() > 1e-3          # the drive does move the joint


def test_rheonomic_bias_depends_on_time_only_through_the_drive():
    """For a joint with nq = 0 the acceleration is the bias; at two times it differs and matches
    the second derivative of the prescribed motion."""
    spec = SPECS["rheonomic_nq0"]
    model = random_tree([spec], 7)
    empty = np.zeros(0)
    b = [ej.joint_terms(model, empty, empty, t=t).bias[1] for t in (0.3, 1.1)]
    assert np.abs(b[0] - b[1]).max() > 1e-2
    for t, bt in zip((0.3, 1.1), b):
        _, acc_fd = _fd_relative(model, spec, empty, empty, empty, t)
        assert scaled_err(bt, acc_fd) < TOL_A


@pytest.mark.parametrize("kind", ["revolute", "prismatic", "fixed", "functions"])
def test_fast_paths_equal_generic_path(kind):
    rng = np.random.default_rng(11)
    if kind == "functions":
        # one-term Poly and Spline amounts (the plain-number path, and four states at a time in
        # batches), the knots' ends and the linear extensions beyond them included
        x = [-1.0, -0.3, 0.2, 0.9, 1.5]
        J, fn = ej.joints, ej.fn
        specs = [J.Composite([J.Trans(random_unit(rng), fn.Spline(0, x, rng.uniform(-0.1, 0.1, 5), end="simm")),
                              J.Rot(random_unit(rng), fn.Linear([1.0])),
                              J.Rot(random_unit(rng), fn.Poly(0, [0.1, -0.4, 0.3, 0.05]))], 1),
                 J.Composite([J.Rot(random_unit(rng), fn.Linear([0.0, 1.0])),
                              J.Trans(random_unit(rng), fn.PiecewiseLinear(1, x, rng.uniform(-0.1, 0.1, 5))),
                              J.Rot(random_unit(rng), fn.Spline(0, x[:3], [0.1, -0.2, 0.3],
                                                               end="clamped", slopes=(0.3, -0.2)))], 2),
                 J.Revolute(random_unit(rng))]
    elif kind == "revolute":
        specs = [ej.joints.Revolute(random_unit(rng)) for _ in range(4)] + [ej.joints.Revolute((0, 1, 0))]
    elif kind == "prismatic":
        specs = [ej.joints.Prismatic(random_unit(rng)) for _ in range(4)] + [ej.joints.Prismatic((1, 0, 0))]
    else:
        specs = [ej.joints.Fixed(), ej.joints.Revolute(random_unit(rng)), ej.joints.Fixed()]
    model = random_tree(specs, rng)
    q = rng.uniform(-3.0, 3.0, (6, model.nq))
    qd = rng.uniform(-2.0, 2.0, (6, model.nv))
    for frame in ("inboard", "outboard"):
        fast = ej.joint_terms(model, q, qd, t=0.4, frame=frame)
        gen = ej.joint_terms(model, q, qd, t=0.4, frame=frame, generic=True)
        for field in ("J", "sigma", "bias", "R", "r", "twist"):
            a, b = getattr(fast, field), getattr(gen, field)
            assert a.shape == b.shape
            assert np.abs(a - b).max() <= 1e-14, (kind, frame, field)
    if kind == "functions":
        Q = rng.uniform(-2.0, 2.0, (9, model.nq))
        Q[0, :] = [-1.0, -1.0, 0.2, 0.0][:model.nq]      # on knots
        V, A = rng.normal(size=(9, model.nv)), rng.normal(size=(9, model.nv))
        tau = ej.rnea(model, Q, V, A)
        assert all(np.array_equal(tau[b], ej.rnea(model, Q[b], V[b], A[b])) for b in range(9))
    if kind == "revolute":          # about a fixed axis: J is the axis, the bias vanishes
        assert np.abs(fast.J).max() > 0.1 and np.abs(gen.bias).max() < 1e-14


def _left_jacobian_series(phi):
    P = skew(phi)
    return np.eye(3) + 0.5 * P + P @ P / 6.0


def _left_jacobian(phi):
    th = np.linalg.norm(phi)
    P = skew(phi)
    return np.eye(3) + (1 - np.cos(th)) / th ** 2 * P + (th - np.sin(th)) / th ** 3 * P @ P


@pytest.mark.parametrize("param_kind", ["spherical", "free"])
def test_rotvec_at_and_near_zero_rotation(param_kind):
    """omega_rel = Jl(phi) phi' with the left Jacobian Jl = I + A [phi] + B [phi]^2,
    A = 1/2 - |phi|^2/24 + ..., B = 1/6 - ...; the bias is Jl' phi' =
    1/6 [phi'][phi] phi' - (phi . phi')/12 [phi] phi' + O(|phi|^3)."""
    spec = ej.joints.Spherical("rotvec") if param_kind == "spherical" else ej.joints.Free("rotvec")
    off = 0 if param_kind == "spherical" else 3
    model = random_tree([spec], 3)
    rng = np.random.default_rng(5)
    for scale in (0.0, 1e-12, 3e-9, 9.9e-9, 1e-6, 1e-5):
        phi = scale * random_unit(rng)
        phid = rng.uniform(-2, 2, 3)
        q = np.concatenate([rng.uniform(-1, 1, off), phi])
        qd = np.concatenate([rng.uniform(-1, 1, off), phid])
        jt = ej.joint_terms(model, q, qd)
        Jw = jt.J[:3, off:off + 3]
        assert np.all(np.isfinite(jt.J)) and np.all(np.isfinite(jt.bias))
        assert np.abs(Jw - _left_jacobian_series(phi)).max() < 1e-14, scale
        b_ref = skew(phid) @ skew(phi) @ phid / 6.0 - (phi @ phid) / 12.0 * np.cross(phi, phid)
        assert np.abs(jt.bias[1, :3] - b_ref).max() < 1e-14, scale
        assert np.abs(jt.R[1] - ref_joint_pose(spec, q)[0]).max() < 1e-15


def test_rotvec_across_the_series_switch():
    """Around |phi| = 1 (where a series may hand over to the closed form) J matches the closed
    form and the bias matches finite differences on both sides."""
    spec = ej.joints.Spherical("rotvec")
    model = random_tree([spec], 4)
    rng = np.random.default_rng(6)
    u = random_unit(rng)
    for th in (1.0 - 1e-9, 1.0, 1.0 + 1e-9, 1.0 - 1e-3, 1.0 + 1e-3, 0.5, 2.0, 3.0):
        q = th * u
        qd, qdd = rng.uniform(-1, 1, 3), rng.uniform(-1, 1, 3)
        jt = ej.joint_terms(model, q, qd)
        assert np.abs(jt.J[:3] - _left_jacobian(q)).max() < 1e-13, th
        tw_fd, acc_fd = _fd_relative(model, spec, q, qd, qdd, 0.0)
        assert scaled_err(jt.J @ qdd + jt.bias[1], acc_fd) < TOL_A, th


def test_outboard_frame_is_R_transpose_of_inboard():
    specs = [SPECS[k] for k in ("revolute", "prismatic", "helical", "cylindrical", "universal", "planar",
                                "translation", "spherical_ZXZ", "spherical_quaternion", "free_quaternion",
                                "free_mrp", "composite_harmonic", "rheonomic_nq0", "fixed")]
    model = random_tree(specs, 8)
    rng = np.random.default_rng(8)
    states = [random_state(model, rng) for _ in range(3)]
    q = np.array([s[0] for s in states])
    qd = np.array([s[1] for s in states])
    t = np.array([0.1, 0.7, -0.4])
    inb = ej.joint_terms(model, q, qd, t=t)
    outb = ej.joint_terms(model, q, qd, t=t, frame="outboard")
    assert outb.frame == "outboard" and inb.frame == "inboard"
    for b in range(3):
        for i in range(1, model.nbodies + 1):
            RT = inb.R[b, i].T
            blk = np.kron(np.eye(2), RT)
            vs = model.v_slice(i)
            assert np.max(np.abs(outb.J[b][:, vs] - blk @ inb.J[b][:, vs]), initial=0.0) < 1e-14
            for field in ("sigma", "bias", "twist"):
                assert np.abs(getattr(outb, field)[b, i] - blk @ getattr(inb, field)[b, i]).max() < 1e-14
            assert np.abs(outb.R[b, i] - inb.R[b, i]).max() == 0.0
    # and the outboard twist is the relative twist seen in C: R^T (J qd + sigma)
    for b in range(3):
        for i in range(1, model.nbodies + 1):
            vs = model.v_slice(i)
            tw_in = inb.J[b][:, vs] @ qd[b, vs] + inb.sigma[b, i]
            tw_out = outb.J[b][:, vs] @ qd[b, vs] + outb.sigma[b, i]
            assert np.abs(tw_out - np.kron(np.eye(2), inb.R[b, i].T) @ tw_in).max() < 1e-13


def test_joint_terms_without_velocities():
    """J and sigma need no qd; bias does (it is None without qd)."""
    spec = SPECS["composite_harmonic"]
    model = random_tree([spec, ej.joints.Revolute(AX[0])], 9)
    rng = np.random.default_rng(9)
    q = rng.uniform(-1, 1, model.nq)
    a = ej.joint_terms(model, q, t=0.5)
    b = ej.joint_terms(model, q, rng.uniform(-1, 1, model.nv), t=0.5)
    assert a.bias is None
    assert np.abs(a.J - b.J).max() == 0.0
    assert np.abs(a.sigma - b.sigma).max() < 1e-14
    assert np.abs(a.sigma[1]).max() > 1e-3
