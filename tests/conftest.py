"""Shared seeded helpers of the test suite: random rotations, inertias, trees and states, reference
joint poses written independently of the package (numpy / scipy), motions along which poses are
differentiated numerically, and finite-difference stencils.

Test modules import these with ``from conftest import ...``.
"""
import os

# the compile announcements go to stderr, where some tests read what a command printed; the tests
# of the announcements switch them on again
os.environ.setdefault("EJCE_NB_QUIET", "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from scipy.interpolate import CubicSpline
from scipy.spatial.transform import Rotation

import ejce_nb as ej
from ejce_nb.joints import fn as efn

try:
    import pinocchio
    HAVE_PINOCCHIO = True
except ImportError:           # the tests that need it say so (pytest -rs lists them)
    pinocchio = None
    HAVE_PINOCCHIO = False
requires_pinocchio = pytest.mark.skipif(
    not HAVE_PINOCCHIO, reason="needs Pinocchio, the outside reference of this check (pip install pin; it is in "
                               "the test extra)")

# The order in which the two test processes of the README's command take the files (``-n 2 --dist
# loadfile --no-loadscope-reorder``): those that compile the most first, then the others as
# collected.  Most of the suite's time is compilation, and xdist's own order (by number of tests)
# left the files of closed loops, which have few tests and compile for minutes, to the end of one
# process while the other stood idle.  A kernel two files share is compiled by the file that runs
# first and loaded from the cache by the later one.  The two loop files need the same one-state
# entries at their start: the simulation tests start beside the first of them, and the second
# goes to whichever process frees first, when those entries are in the cache (started together,
# both processes compiled them at once).  Likewise ``test_engine.py`` goes early: left in collection
# order it ran beside ``test_dynamics.py``, and both compiled ``aba``'s entry for models with
# generic joints at once.
HEAVY_FIRST = ("test_loops.py", "test_simulate.py", "test_loops_coupled.py", "test_json.py", "test_engine.py",
               "test_derivatives.py", "test_urdf.py", "test_joints.py", "test_project.py", "test_mjcf.py",
               "test_couplers.py", "test_rollout_coupled.py", "test_rollout.py", "test_actuation_mujoco.py",
               "test_actuation_opensim.py")


def pytest_collection_modifyitems(config, items):
    rank = {name: k for k, name in enumerate(HEAVY_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))       # stable: a file's own order kept


EULER_24 = tuple(s for s in ej.joints.EULER_SEQUENCES) + tuple(s.lower() for s in ej.joints.EULER_SEQUENCES)
ROT_PARAMS = ("quaternion", "rotvec", "rodrigues", "mrp")


# ---------------------------------------------------------------------------- small geometry
def rng_of(seed):
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)


def skew(v):
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


def axial(A):
    """Vector of the skew part of a 3x3 matrix (works on stacks (..., 3, 3))."""
    return 0.5 * np.stack([A[..., 2, 1] - A[..., 1, 2], A[..., 0, 2] - A[..., 2, 0],
                           A[..., 1, 0] - A[..., 0, 1]], axis=-1)


def rot_axis(axis, angle):
    a = np.asarray(axis, dtype=float)
    K = skew(a / np.linalg.norm(a))
    return np.eye(3) + np.sin(angle) * K + (1.0 - np.cos(angle)) * K @ K


def random_rotation(rng):
    return Rotation.random(random_state=rng_of(rng)).as_matrix()


def random_unit(rng, n=3):
    v = rng_of(rng).normal(size=n)
    return v / np.linalg.norm(v)


def random_quaternion(rng):
    """Random unit quaternion (w, x, y, z) with w > 0."""
    q = random_unit(rng, 4)
    return q if q[0] > 0 else -q


def random_inertia(rng, lo=0.05, hi=1.0):
    """Random valid rotational inertia: symmetric positive definite, principal moments obeying
    the triangle inequality (with a margin)."""
    rng = rng_of(rng)
    a, b = rng.uniform(lo, hi, size=2)
    c = rng.uniform(abs(a - b) + 0.1 * min(a, b), a + b - 0.1 * min(a, b))
    Q = random_rotation(rng)
    return Q @ np.diag([a, b, c]) @ Q.T


def random_transform(rng, scale=0.4):
    rng = rng_of(rng)
    return ej.Transform(rotation=random_rotation(rng), translation=rng.uniform(-scale, scale, 3))


def quat_mul(a, b):
    """Hamilton product of (w, x, y, z) quaternions."""
    w1, v1 = a[0], np.asarray(a[1:])
    w2, v2 = b[0], np.asarray(b[1:])
    return np.concatenate([[w1 * w2 - v1 @ v2], w1 * v2 + w2 * v1 + np.cross(v1, v2)])


def quat_exp(phi):
    """Unit quaternion of the rotation vector ``phi``."""
    phi = np.asarray(phi, dtype=float)
    th = np.linalg.norm(phi)
    if th == 0.0:
        return np.array([1.0, 0.0, 0.0, 0.0])
    return np.concatenate([[np.cos(0.5 * th)], np.sin(0.5 * th) * phi / th])


def quat_to_matrix(q):
    return Rotation.from_quat(np.asarray(q) / np.linalg.norm(q), scalar_first=True).as_matrix()


def matrix_to_quat(R):
    q = Rotation.from_matrix(R).as_quat(scalar_first=True)
    return q if q[0] >= 0 else -q


# ---------------------------------------------------------------------------- trees and states
def is_depth_first(parent):
    """True when bodies 1..N are numbered in a depth-first (preorder) order."""
    path = [0]
    for i in range(1, len(parent)):
        while path and path[-1] != parent[i]:
            path.pop()
        if not path:
            return False
        path.append(i)
    return True


def random_parents(n, rng):
    """Parent table of a random tree on bodies 1..n, parents before children; for n >= 3 never a
    depth-first numbering."""
    rng = rng_of(rng)
    for _ in range(1000):
        parent = [-1] + [int(rng.integers(0, k)) for k in range(1, n + 1)]
        if n < 3 or not is_depth_first(parent):
            return parent
    raise RuntimeError("could not draw a non-depth-first tree")


def random_tree(specs, rng, *, scale=0.4, parents=None, gravity=(0.0, 0.0, -9.81), massless=()):
    """Model with one body per joint spec (body k+1 gets specs[k]), random parents (bodies added
    in a random parent-before-child, not depth-first, order), random placements P and C, random
    masses, centres of mass and inertias.  Bodies listed in ``massless`` get no mass."""
    rng = rng_of(rng)
    n = len(specs)
    parent = random_parents(n, rng) if parents is None else list(parents)
    b = ej.ModelBuilder(gravity=gravity)
    for k, spec in enumerate(specs, start=1):
        m = 0.0 if k in massless else float(rng.uniform(0.5, 2.0))
        b.add_body(f"b{k}", parent=parent[k], joint=spec, joint_name=f"j{k}",
                   placement=random_transform(rng, scale), child_placement=random_transform(rng, scale),
                   mass=m, com=rng.uniform(-0.2, 0.2, 3),
                   inertia=np.zeros((3, 3)) if m == 0.0 else random_inertia(rng))
    return b.build()


def _euler_angles(seq, rng):
    q = rng.uniform(-np.pi, np.pi, 3)
    if seq[0].lower() == seq[2].lower():          # proper Euler: singular at 0 and pi
        q[1] = rng.uniform(0.35, np.pi - 0.35)
    else:                                         # Tait-Bryan: singular at +-pi/2
        q[1] = rng.uniform(-np.pi / 2 + 0.35, np.pi / 2 - 0.35)
    return q


def random_rotation_coords(param, rng):
    """Coordinates of a random rotation in the parameterisation ``param``, away from its
    singularities."""
    rng = rng_of(rng)
    if param == "quaternion":
        return random_quaternion(rng)
    if param == "rotvec":
        return random_unit(rng) * rng.uniform(0.1, 2.5)
    if param == "rodrigues":
        return random_unit(rng) * rng.uniform(0.05, 2.0)
    if param == "mrp":
        return random_unit(rng) * rng.uniform(0.05, 0.7)
    return _euler_angles(param, rng)


def random_joint_q(spec, rng):
    rng = rng_of(rng)
    if isinstance(spec, ej.joints.Spherical):      # Spherical and Free
        rot = random_rotation_coords(spec.param, rng)
        if isinstance(spec, ej.joints.Free):
            return np.concatenate([rng.uniform(-1.0, 1.0, 3), rot])
        return rot
    return rng.uniform(-1.0, 1.0, spec.nq)


def random_state(model, rng, vscale=1.5, ascale=2.0):
    """Random q (unit quaternions, Euler angles away from gimbal lock), qd, qdd."""
    rng = rng_of(rng)
    q = np.concatenate([np.zeros(0)] + [random_joint_q(model.joint_specs[j], rng)
                                        if model.nq_joint[j] else np.zeros(0)
                                        for j in range(1, model.nbodies + 1)])
    assert q.shape == (model.nq,)
    qd = rng.uniform(-vscale, vscale, model.nv)
    qdd = rng.uniform(-ascale, ascale, model.nv)
    return q, qd, qdd


# ---------------------------------------------------------------------------- motions and stencils
def coordinate_map(model):
    """(ordinary coordinate indices, their velocity indices, quaternion blocks as (q slice, v slice))."""
    qi, vi, quats = [], [], []
    quat_joints = dict(model.quaternion_blocks())
    for j in range(1, model.nbodies + 1):
        qs, nq = int(model.q_start[j]), int(model.nq_joint[j])
        vs, nv = int(model.v_start[j]), int(model.nv_joint[j])
        if j in quat_joints:
            n_ord = nq - 4
            quats.append((slice(qs + n_ord, qs + nq), slice(vs + n_ord, vs + nv)))
        else:
            n_ord = nq
            assert nq == nv
        qi += list(range(qs, qs + n_ord))
        vi += list(range(vs, vs + n_ord))
    return np.array(qi, dtype=int), np.array(vi, dtype=int), quats


def motion(model, q, qd, qdd, s):
    """Configurations q(s) of a motion with q(0) = q, velocity qd and acceleration qdd at s = 0.

    Ordinary coordinates move as q + s qd + s^2/2 qdd.  A unit quaternion with angular velocity
    u (C axes) and rate u' moves as q0 (x) exp(s u + s^2/2 u'): its angular velocity in C axes is
    u at s = 0 and its derivative u' there (the s^2 term of the rotation vector adds no
    curvature at s = 0 because u x u = 0)."""
    s = np.atleast_1d(np.asarray(s, dtype=float))
    qi, vi, quats = coordinate_map(model)
    out = np.repeat(np.asarray(q, dtype=float)[None, :], len(s), axis=0)
    out[:, qi] = q[qi] + s[:, None] * qd[vi] + 0.5 * s[:, None] ** 2 * qdd[vi]
    for qsl, vsl in quats:
        for n, sn in enumerate(s):
            out[n, qsl] = quat_mul(q[qsl], quat_exp(sn * qd[vsl] + 0.5 * sn * sn * qdd[vsl]))
    return out


STENCIL = np.array([-2.0, -1.0, 0.0, 1.0, 2.0])


def fd1(f, h):
    """First derivative at the centre of 5 samples f(-2h..2h) (stacked on axis 0)."""
    return (f[0] - 8.0 * f[1] + 8.0 * f[3] - f[4]) / (12.0 * h)


def fd2(f, h):
    """Second derivative at the centre of 5 samples f(-2h..2h) (stacked on axis 0)."""
    return (-f[0] + 16.0 * f[1] - 30.0 * f[2] + 16.0 * f[3] - f[4]) / (12.0 * h * h)


def rotation_rates(Rs, h):
    """Angular velocity axial(R' R^T) and acceleration axial(R'' R^T) (both in the frame R maps
    into) from 5 samples of a rotation stack Rs (5, ..., 3, 3)."""
    R0 = Rs[2]
    RT = np.swapaxes(R0, -1, -2)
    return axial(fd1(Rs, h) @ RT), axial(fd2(Rs, h) @ RT)


# ---------------------------------------------------------------------------- reference poses
def ref_rotation(param, x):
    """Rotation matrix of a Spherical parameterisation, independently of the package."""
    x = np.asarray(x, dtype=float)
    if param == "quaternion":
        return quat_to_matrix(x)
    if param == "rotvec":
        return Rotation.from_rotvec(x).as_matrix()
    if param == "rodrigues":         # Gibbs vector: axis * tan(angle / 2)
        g = np.linalg.norm(x)
        if g == 0.0:
            return np.eye(3)
        return Rotation.from_rotvec(2.0 * np.arctan(g) * x / g).as_matrix()
    if param == "mrp":
        return Rotation.from_mrp(x).as_matrix()
    return Rotation.from_euler(param, x).as_matrix()


def ref_fn(f, q, t):
    """Value of an ej.fn coordinate function, independently of the package's kernels."""
    if isinstance(f, efn.Sum):
        return sum(ref_fn(p, q, t) for p in f.parts)
    if isinstance(f, efn.Linear):
        c = np.asarray(f.coeffs)
        return f.offset + float(c @ np.asarray(q[:len(c)]))
    if isinstance(f, efn.Poly):
        return float(np.polynomial.polynomial.polyval(t if f.coord == "t" else q[f.coord], f.coeffs))
    if isinstance(f, efn.TimePoly):
        return float(np.polynomial.polynomial.polyval(t, f.coeffs))
    if isinstance(f, efn.Harmonic):
        return f.amplitude * np.sin(f.omega * t + f.phase)
    if isinstance(f, efn.MultiPoly):
        return float(sum(c * np.prod([q[k] ** int(e) for k, e in zip(f.coords, row)])
                         for c, row in zip(f.coeffs, f.powers)))
    if isinstance(f, efn.Spline):
        x = t if f.coord == "t" else q[f.coord]
        cs = CubicSpline(f.x, f.y, bc_type="natural")
        if x < f.x[0]:
            return float(f.y[0] + cs(f.x[0], 1) * (x - f.x[0]))
        if x > f.x[-1]:
            return float(f.y[-1] + cs(f.x[-1], 1) * (x - f.x[-1]))
        return float(cs(x))
    raise TypeError(f"unknown function {f!r}")


def ref_joint_pose(spec, q, t=0.0):
    """(R, r) of C in P for any joint spec, written independently of the package's kernels."""
    J = ej.joints
    q = np.asarray(q, dtype=float)
    if isinstance(spec, J.Fixed):
        return np.eye(3), np.zeros(3)
    if isinstance(spec, J.Revolute):
        return rot_axis(spec.axis, q[0]), np.zeros(3)
    if isinstance(spec, J.Prismatic):
        return np.eye(3), spec.axis * q[0]
    if isinstance(spec, J.Helical):
        return rot_axis(spec.axis, q[0]), spec.axis * spec.pitch * q[0]
    if isinstance(spec, J.Cylindrical):
        return rot_axis(spec.axis, q[0]), spec.axis * q[1]
    if isinstance(spec, J.Universal):
        return rot_axis(spec.axis1, q[0]) @ rot_axis(spec.axis2, q[1]), np.zeros(3)
    if isinstance(spec, J.Planar):
        return rot_axis((0, 0, 1), q[2]), np.array([q[0], q[1], 0.0])
    if isinstance(spec, J.Translation):
        return np.eye(3), q[:3].copy()
    if isinstance(spec, J.Free):
        return ref_rotation(spec.param, q[3:]), q[:3].copy()
    if isinstance(spec, J.Spherical):
        return ref_rotation(spec.param, q), np.zeros(3)
    if isinstance(spec, J.Ellipsoid):
        R = rot_axis((1, 0, 0), q[0]) @ rot_axis((0, 1, 0), q[1]) @ rot_axis((0, 0, 1), q[2])
        return R, spec.radii * R[:, 2]
    if isinstance(spec, J.Composite):
        R, r = np.eye(3), np.zeros(3)
        for m in spec.motions:
            amount = ref_fn(m.f, q, t)
            if isinstance(m, J.Trans):
                r = r + R @ (m.axis * amount)
            else:
                R = R @ rot_axis(m.axis, amount)
        return R, r
    raise TypeError(f"no reference pose for {spec!r}")


def ref_world_poses(model, q, t=0.0):
    """World rotation and origin of every body by composing placements and reference joint
    poses (EJCE.md section 3), independently of the package's kernels."""
    n1 = model.nbodies + 1
    R = np.zeros((n1, 3, 3))
    p = np.zeros((n1, 3))
    R[0] = np.eye(3)
    for i in range(1, n1):
        l = model.parent[i]
        Rj, rj = ref_joint_pose(model.joint_specs[i], q[model.q_slice(i)], t)
        RP = R[l] @ model.joint_P_rot[i]
        oP = p[l] + R[l] @ model.joint_P_pos[i]
        R[i] = RP @ Rj @ model.joint_C_rot[i].T
        p[i] = oP + RP @ rj - R[i] @ model.joint_C_pos[i]
    return R, p


def scaled_err(a, b):
    """max |a - b| / max(1, max |b|)."""
    a, b = np.asarray(a), np.asarray(b)
    return float(np.max(np.abs(a - b), initial=0.0) / max(1.0, float(np.max(np.abs(b), initial=0.0))))


def assert_same_model(a, b, atol=0.0):
    """Identical names, joint specs and tables (to ``atol`` where given)."""
    from ejce_nb.model.model import ARRAYS
    assert a.body_names == b.body_names
    assert a.joint_names == b.joint_names
    assert a.joint_specs == b.joint_specs
    for name in ARRAYS:
        x, y = getattr(a, name), getattr(b, name)
        assert x.shape == y.shape, name
        if atol:
            np.testing.assert_allclose(x, y, rtol=0.0, atol=atol, err_msg=name)
        else:
            np.testing.assert_array_equal(x, y, err_msg=name)
