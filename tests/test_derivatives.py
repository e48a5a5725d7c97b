"""Derivatives of the dynamics (ej.rnea_derivatives, ej.aba_derivatives, ej.linearize): against
Richardson-extrapolated central differences of rnea and aba on every joint kind (the composite
knee, a driven joint, user-defined joints, couplers), their identities, Pinocchio's analytical
derivatives where its joints agree, batches against single calls, and bad input."""
import multiprocessing
import os
import subprocess
import sys

import numba
import numpy as np
import pytest

import ejce_nb as ej
from ejce_nb.models import load

from conftest import HAVE_PINOCCHIO, quat_exp, quat_mul, random_state, random_tree, random_unit

J = ej.joints
_r = np.random.default_rng(21)
AX = [random_unit(_r) for _ in range(8)]
# every built-in joint kind (Pinocchio-free): screws, Euler angles, quaternions, other
# rotation parameterisations, a composite joint with spline amounts
KNEE_LIKE = J.Composite([J.Rot((0.0, 0.0, 1.0), ej.fn.Linear([1.0])),
                         J.Trans((1.0, 0.0, 0.0), ej.fn.Spline(0, [-2.0, -1.0, 0.0, 1.0], [0.0, 0.01, -0.02, 0.0])),
                         J.Trans((0.0, 1.0, 0.0), ej.fn.Poly(0, [0.0, 0.02, 0.01, -0.003]))], nq=1)
KINDS = [J.Free("quaternion"), J.Revolute(AX[0]), J.Prismatic(AX[1]), J.Helical(AX[2], 0.3),
         J.Cylindrical(AX[3]), J.Universal(AX[4], AX[5]), J.Planar(), J.Translation(), J.Spherical("ZYX"),
         J.Spherical("xzx"), J.Spherical("quaternion"), J.Spherical("rotvec"), J.Spherical("mrp"),
         J.Free("ZXY"), J.Fixed(), KNEE_LIKE]


def _tree(kinds, seed):
    rng = np.random.default_rng(seed)
    return random_tree(list(kinds), rng, gravity=(0.3, -0.5, -9.81))


def _displace(model, q, k, h):
    """q moved by h along tangent direction k (a unit quaternion as q (x) Exp(h e))."""
    q = np.array(q, dtype=float)
    for j, qsl in model.quaternion_blocks():
        vs = model.v_slice(j)
        if vs.stop - 3 <= k < vs.stop:
            e = np.zeros(3)
            e[k - (vs.stop - 3)] = h
            q[qsl] = quat_mul(q[qsl], quat_exp(e))
            return q
    for j in range(1, model.nbodies + 1):
        vs = model.v_slice(j)
        if vs.start <= k < vs.stop:
            q[model.q_slice(j).start + k - vs.start] += h
            return q
    raise AssertionError(k)


def _richardson(f, h=0.02, levels=3):
    """df/ds at 0 from central differences f(+-h / 2^l), extrapolated (error O(h^(2 levels)))."""
    D = [[(f(h / 2 ** l) - f(-h / 2 ** l)) / (2 * h / 2 ** l)] for l in range(levels)]
    for l in range(1, levels):
        for k in range(1, l + 1):
            D[l].append((4 ** k * D[l][k - 1] - D[l - 1][k - 1]) / (4 ** k - 1))
    return D[-1][-1]


def _fd_partials(model, fun, q, qd, x, t=0.0):
    """Columns of d fun / d(q tangent), d fun / d qd, d fun / dt by Richardson differences."""
    nv = model.nv
    dq = np.column_stack([_richardson(lambda h: fun(_displace(model, q, k, h), qd, x, t)) for k in range(nv)])
    dv = np.column_stack([_richardson(lambda h: fun(q, qd + h * np.eye(nv)[k], x, t)) for k in range(nv)])
    dt = _richardson(lambda h: fun(q, qd, x, t + h))
    return dq, dv, dt


def _rel(A, B):
    return np.abs(A - B).max() / max(1.0, np.abs(B).max())


def _check_against_differences(model, q, qd, qdd, t=0.0, f_ext=None, tol=1e-7):
    rnea = lambda q_, v_, a_, t_: ej.rnea(model, q_, v_, a_, t_, f_ext=f_ext)  # noqa: E731
    aba = lambda q_, v_, u_, t_: ej.aba(model, q_, v_, u_, t_, f_ext=f_ext)  # noqa: E731
    dq, dv, M, dt = ej.rnea_derivatives(model, q, qd, qdd, t, f_ext=f_ext, time_derivative=True)
    rq, rv, rt = _fd_partials(model, rnea, q, qd, qdd, t)
    assert _rel(dq, rq) < tol and _rel(dv, rv) < tol, (_rel(dq, rq), _rel(dv, rv))
    assert _rel(dt, rt) < tol, _rel(dt, rt)
    np.testing.assert_allclose(M, ej.mass_matrix(model, q, t), rtol=0, atol=1e-12 * np.abs(M).max())
    tau = ej.rnea(model, q, qd, qdd, t, f_ext=f_ext)
    aq, av, Minv, at = ej.aba_derivatives(model, q, qd, tau, t, f_ext=f_ext, time_derivative=True)
    fq, fv, ft = _fd_partials(model, aba, q, qd, tau, t)
    assert _rel(aq, fq) < tol and _rel(av, fv) < tol and _rel(at, ft) < tol, (_rel(aq, fq), _rel(av, fv))
    # identities: dqdd/dq = -M^-1 dtau/dq at qdd = aba(tau), Minv M = 1
    np.testing.assert_allclose(Minv @ M, np.eye(model.nv), atol=1e-9)
    np.testing.assert_allclose(aq, -Minv @ dq, atol=1e-9 * max(1.0, np.abs(aq).max()))
    np.testing.assert_allclose(av, -Minv @ dv, atol=1e-9 * max(1.0, np.abs(av).max()))


@pytest.mark.parametrize("seed", [0, 1])
def test_every_joint_kind_against_differences(seed):
    model = _tree(KINDS, seed)
    rng = np.random.default_rng(100 + seed)
    q, qd, qdd = random_state(model, rng)
    f_ext = rng.normal(size=(model.nbodies + 1, 6))
    _check_against_differences(model, q, qd, qdd, f_ext=f_ext)


@pytest.mark.parametrize("name", ["knee", "driven", "arm7"])
def test_shipped_models_against_differences(name):
    model = ej.models.load(name)
    rng = np.random.default_rng(7)
    q = model.neutral() + rng.uniform(-0.3, 0.3, model.nq) * (np.array(
        [0.0 if any(sl.start <= k < sl.stop for _, sl in model.quaternion_blocks()) else 1.0
         for k in range(model.nq)]))
    qd, qdd = rng.normal(size=model.nv), rng.normal(size=model.nv)
    _check_against_differences(model, q, qd, qdd, t=0.37)
    if name == "driven":
        # a rheonomic model has dtau/dt != 0
        assert np.abs(ej.rnea_derivatives(model, q, qd, qdd, 0.37, time_derivative=True)[3]).max() > 1e-3


def _custom_pose(q, t, p):
    # a driven, coupled joint: rotation about z by q0, about the turned x by 0.3 q0^2 + sin t
    c, s = ej.jmath.cos(q[0]), ej.jmath.sin(q[0])
    a = 0.3 * q[0] * q[0] + 0.2 * ej.jmath.sin(t)
    ca, sa = ej.jmath.cos(a), ej.jmath.sin(a)
    R = ((c, -s * ca, s * sa), (s, c * ca, -c * sa), (0.0, sa, ca))
    return R, (0.1 * q[0], 0.05 * sa, 0.0)


def test_user_joints_and_couplers_against_differences():
    rng = np.random.default_rng(3)
    user = J.Custom(_custom_pose, 1, name="deriv_user", q_range=(-2.0, 2.0))
    b = ej.ModelBuilder(gravity=(0.0, -1.0, -9.81))
    kw = lambda: dict(mass=rng.uniform(0.5, 2), com=rng.uniform(-0.2, 0.2, 3), inertia=np.diag(rng.uniform(0.1, 0.3, 3)))  # noqa: E731,E501
    b.add_body("a", parent="world", joint=J.Revolute(AX[0]), placement=ej.Transform(translation=(0, 0, 0.3)), **kw())
    b.add_body("b", parent="a", joint=user, placement=ej.Transform(translation=(0.2, 0, 0)), **kw())
    b.add_body("c", parent="b", joint=J.Revolute(AX[1]), placement=ej.Transform(translation=(0, 0.3, 0)), **kw())
    b.add_body("d", parent="a", joint=J.Prismatic(AX[2]), placement=ej.Transform(translation=(0, 0.1, 0)),
               mimic=("a_joint", 0.5, 0.1), **kw())
    b.add_body("e", parent="c", joint=J.Revolute(AX[3]), placement=ej.Transform(translation=(0.1, 0.1, 0)), **kw())
    b.add_coupler("e_joint", ["c_joint", "a_joint"], ej.fn.Sum(ej.fn.Poly(0, [0.1, 0.5, 0.2]),
                                                             ej.fn.Linear([0.0, 0.7])))
    model = b.build()
    assert model.has_couplers and not model.couplers_linear
    q = rng.uniform(-1, 1, model.nq)
    qd, qdd = rng.normal(size=model.nv), rng.normal(size=model.nv)
    _check_against_differences(model, q, qd, qdd, t=0.4)


@pytest.mark.skipif(not HAVE_PINOCCHIO, reason="needs Pinocchio (pip install pin)")
@pytest.mark.parametrize("seed", [0, 1])
def test_against_pinocchio(seed):
    import pinocchio as pin
    from pin_oracle import PinModel
    kinds = [J.Revolute(AX[0]), J.Prismatic(AX[1]), J.Helical(AX[2], 0.3), J.Translation(),
             J.Spherical("quaternion"), J.Revolute(AX[3]), J.Fixed(), J.Spherical("quaternion"),
             J.Revolute(AX[4])]
    model = _tree(kinds, 10 + seed)
    pm = PinModel(model)
    rng = np.random.default_rng(seed)
    q, qd, qdd = random_state(model, rng)
    P = np.zeros((model.nv, model.nv))         # our velocity index -> Pinocchio's
    for i, spec, qs, vs, iq, iv in pm.blocks:
        P[iv:iv + vs.stop - vs.start, vs] = np.eye(vs.stop - vs.start)
    qp, vp, ap = pm.q(q), P @ qd, P @ qdd
    pin.computeRNEADerivatives(pm.pmodel, pm.data, qp, vp, ap)
    Pq, Pv = P.T @ pm.data.dtau_dq @ P, P.T @ pm.data.dtau_dv @ P
    dq, dv, M = ej.rnea_derivatives(model, q, qd, qdd)
    assert _rel(dq, Pq) < 1e-10 and _rel(dv, Pv) < 1e-10, (_rel(dq, Pq), _rel(dv, Pv))
    tau = ej.rnea(model, q, qd, qdd)
    pin.computeABADerivatives(pm.pmodel, pm.data, qp, vp, P @ tau)
    aq, av, Minv = ej.aba_derivatives(model, q, qd, tau)
    assert _rel(aq, P.T @ pm.data.ddq_dq @ P) < 1e-10 and _rel(av, P.T @ pm.data.ddq_dv @ P) < 1e-10
    Mi = np.array(pm.data.Minv)
    Mi = np.triu(Mi) + np.triu(Mi, 1).T
    assert _rel(Minv, P.T @ Mi @ P) < 1e-10


def test_large_tree_against_differences_and_batch():
    # nv >= 32: forward dynamics' products with M^-1 go to numpy's matmul; the same contract
    kinds = [J.Spherical("ZYX")] * 12 + [J.Universal(AX[4], AX[5])] * 4 + [J.Revolute(AX[0])] * 4
    model = _tree(kinds, 31)
    assert model.nv >= 32
    rng = np.random.default_rng(31)
    q, qd, qdd = random_state(model, rng)
    _check_against_differences(model, q, qd, qdd, f_ext=rng.normal(size=(model.nbodies + 1, 6)))
    states = [random_state(model, rng) for _ in range(3)]
    Q, V, A = (np.array([s[k] for s in states]) for k in range(3))
    aq, av, Minv = ej.aba_derivatives(model, Q, V, A)
    assert np.array_equal(Minv, np.transpose(Minv, (0, 2, 1)))
    for b in range(3):
        one = ej.aba_derivatives(model, Q[b], V[b], A[b])
        assert all(np.array_equal(x[b], y) for x, y in zip((aq, av, Minv), one))


_FORKED = []


def _batch_at_two_threads():
    model, Q, V, A = _FORKED
    numba.set_num_threads(2)
    return ej.rnea_derivatives(model, Q, V, A) + ej.aba_derivatives(model, Q, V, A)


@pytest.mark.parametrize("name", ["tree", "arm7"])
def test_batch_equals_single_calls_bitwise(name):
    # arm7: its batches take qdd from the batch ABA on lanes, the single calls from their own ABA
    model = _tree(KINDS[:9], 5) if name == "tree" else load("arm7")
    rng = np.random.default_rng(9)
    n = 70      # at least derivatives.THREADS_FROM (threads) and LANE_ABA_FROM (lanes where the model has them)
    states = [random_state(model, rng) for _ in range(n)]
    Q, V, A = (np.array([s[k] for s in states]) for k in range(3))
    threads = numba.get_num_threads()
    res = []
    try:
        # 1 and 2 threads: other chunkings of the batch, the same bits
        for th in sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)}):
            numba.set_num_threads(th)
            res.append(ej.rnea_derivatives(model, Q, V, A) + ej.aba_derivatives(model, Q, V, A))
    finally:
        numba.set_num_threads(threads)
    assert all(np.array_equal(x, y) for x, y in zip(res[0], res[-1]))
    dq, dv, M, aq, av, Mi = res[0]
    for b in range(n):
        one = ej.rnea_derivatives(model, Q[b], V[b], A[b])
        assert all(np.array_equal(x[b], y) for x, y in zip((dq, dv, M), one))
        one = ej.aba_derivatives(model, Q[b], V[b], A[b])
        assert all(np.array_equal(x[b], y) for x, y in zip((aq, av, Mi), one))
    # a process forked after batches ran here (multiprocessing, Dask's workers) runs its own
    if "fork" in multiprocessing.get_all_start_methods() and numba.config.NUMBA_NUM_THREADS > 1:
        _FORKED[:] = [model, Q, V, A]
        with multiprocessing.get_context("fork").Pool(1) as pool:
            child = pool.apply_async(_batch_at_two_threads).get(timeout=300)
        assert all(np.array_equal(x, y) for x, y in zip(child, res[-1]))
    # errors="flag": a bad sample is NaN and named, the others as computed alone
    Q[2, 0] = np.nan
    for f, ref in ((ej.rnea_derivatives, dq), (ej.aba_derivatives, aq)):
        out = f(model, Q, V, A, errors="flag")
        assert list(out[-1]) == [0, 0, int(ej.Status.NONFINITE_INPUT)] + [0] * (n - 3)
        assert np.isnan(out[0][2]).all() and np.array_equal(out[0][3], ref[3])


_NEXT_PROCESS = """
import sys, numpy as np, ejce_nb as ej
from ejce_nb.algorithms.tangent_sweeps import rnea_tangents
from ejce_nb.models import load
d = np.load(sys.argv[1])
model = load("arm7")
one = ej.rnea_derivatives(model, d["Q"][0], d["V"][0], d["A"][0])
batch = ej.aba_derivatives(model, d["Q"], d["V"], d["T"])
np.savez(sys.argv[2], *(one + batch), loaded=len(rnea_tangents.signatures))
"""


@pytest.mark.skipif(os.environ.get("EJCE_NB_CACHE", "1").strip().lower() in ("0", "false", "no", "off"),
                    reason="no on-disk cache (EJCE_NB_CACHE=0)")
def test_a_process_loading_the_cache_gets_the_same_bits(tmp_path):
    """A new process loads the kernels compiled here from the on-disk cache, with the tangent
    sweeps' own code loaded before them (``_jit.load_after``), and gives the same bits."""
    model = load("arm7")
    rng = np.random.default_rng(4)
    states = [random_state(model, rng) for _ in range(40)]
    Q, V, A = (np.array([s[k] for s in states]) for k in range(3))
    T = ej.rnea(model, Q, V, A)
    ours = ej.rnea_derivatives(model, Q[0], V[0], A[0]) + ej.aba_derivatives(model, Q, V, T)
    np.savez(tmp_path / "in.npz", Q=Q, V=V, A=A, T=T)
    res = subprocess.run([sys.executable, "-c", _NEXT_PROCESS, str(tmp_path / "in.npz"), str(tmp_path / "out.npz")],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    out = np.load(tmp_path / "out.npz")
    assert int(out["loaded"]) >= 1
    for k, x in enumerate(ours):
        assert np.array_equal(out[f"arr_{k}"], x)


def test_results_into_the_callers_arrays():
    """out=: the results written into the caller's arrays and returned, bit for bit the fresh
    results, call after call (batches, one state, dtau_dt, couplers, flagged rows NaN); arrays of
    the wrong shape, type, layout or number named."""
    arm = load("arm7")
    b = ej.ModelBuilder()
    b.add_body("a", parent="world", joint=J.Revolute(AX[0]), mass=1.0, com=(0.1, 0.0, 0.0), inertia=np.eye(3) * 0.1)
    b.add_body("b", parent="a", joint=J.Revolute(AX[1]), mass=0.7, com=(0.0, 0.2, 0.0), inertia=np.eye(3) * 0.05,
               placement=ej.Transform(translation=(0.3, 0.0, 0.0)), mimic=("a_joint", 0.5, 0.1))
    b.add_body("c", parent="b", joint=J.Spherical("ZYX"), mass=0.5, com=(0.0, 0.0, 0.1), inertia=np.eye(3) * 0.02,
               placement=ej.Transform(translation=(0.0, 0.3, 0.0)))
    mimic = b.build()
    rng = np.random.default_rng(8)
    n = 40
    for model in (arm, mimic):
        states = [random_state(model, rng) for _ in range(n)]
        Q, V, A = (np.array([s[k] for s in states]) for k in range(3))
        nv = model.nv
        for f in (ej.rnea_derivatives, ej.aba_derivatives):
            ref = f(model, Q, V, A, time_derivative=True)
            out = tuple(np.full((n, nv, nv), 7.0) for _ in range(3)) + (np.full((n, nv), 7.0),)
            for _ in range(2):      # a loop over batches: the same arrays, the same bits
                res = f(model, Q, V, A, time_derivative=True, out=out)
                assert all(r is o for r, o in zip(res, out)) and len(res) == 4
                assert all(np.array_equal(r, x) for r, x in zip(res, ref))
            one = tuple(np.full((nv, nv), 7.0) for _ in range(3))
            for k in range(3):      # the first call may take the input layer, the next ones the fast path
                res = f(model, Q[k], V[k], A[k], out=one)
                assert all(r is o for r, o in zip(res, one))
                assert all(np.array_equal(r, x[k]) for r, x in zip(res, ref))
            bad = Q.copy()
            bad[3, 0] = np.nan
            *res, status = f(model, bad, V, A, errors="flag", out=out[:3])
            assert all(r is o for r, o in zip(res, out)) and status[3] == int(ej.Status.NONFINITE_INPUT)
            assert np.isnan(out[0][3]).all() and np.array_equal(out[0][4], ref[0][4])
    Q, V, A = (np.zeros((n, 7)) for _ in range(3))
    good = tuple(np.zeros((n, 7, 7)) for _ in range(3))
    with pytest.raises(ValueError, match=r"dtau_dv must be .*\(40, 7, 7\), got float64 \(40, 7, 6\)"):
        ej.rnea_derivatives(arm, Q, V, A, out=(good[0], np.empty((n, 7, 6)), good[2]))
    with pytest.raises(ValueError, match=r"Minv must be .*C-ordered.*not C-ordered"):
        ej.aba_derivatives(arm, Q, V, A, out=good[:2] + (np.empty((n, 7, 7)).transpose(0, 2, 1),))
    with pytest.raises(ValueError, match=r"dqdd_dq must be .*got float32"):
        ej.aba_derivatives(arm, Q, V, A, out=(good[0].astype(np.float32),) + good[1:])
    with pytest.raises(ValueError, match=r"tuple of 4 arrays \(dtau_dq, dtau_dv, M, dtau_dt\), got 3 arrays"):
        ej.rnea_derivatives(arm, Q, V, A, time_derivative=True, out=good)
    with pytest.raises(ValueError, match="must not overlap"):
        ej.rnea_derivatives(arm, Q, V, A, out=(good[0], good[0], good[2]))
    with pytest.raises(ValueError, match=r"M must be .*\(7, 7\)"):
        ej.rnea_derivatives(arm, Q[0], V[0], A[0], out=(good[0][0], good[1][0], good[2]))


def test_bad_input_is_named():
    model = ej.models.load("arm7")
    q, v = model.neutral(), np.zeros(model.nv)
    with pytest.raises(ValueError, match="qd"):
        ej.rnea_derivatives(model, q, np.zeros(3), v)
    with pytest.raises(ValueError, match="NaN|nan|finite"):
        ej.aba_derivatives(model, q, v, np.full(model.nv, np.nan))
    with pytest.raises(ValueError, match="errors"):
        ej.rnea_derivatives(model, q, v, v, errors="ignore")
    b = ej.ModelBuilder()
    b.add_body("a", parent="world", joint=J.Revolute((0, 0, 1)), mass=0.0, inertia=np.zeros((3, 3)))
    massless = b.build()
    with pytest.raises(ej.SingularJointError):
        ej.aba_derivatives(massless, np.zeros(1), np.zeros(1), np.zeros(1))
    # a batch (its ABA on lanes first) reports each sample as its single call does
    Z = np.zeros((20, 1))
    *res, status = ej.aba_derivatives(massless, Z, Z, Z, errors="flag")
    one = ej.aba_derivatives(massless, Z[0], Z[0], Z[0], errors="flag")[-1]
    assert one != 0 and list(status) == [one] * 20 and all(np.isnan(x).all() for x in res)


def test_tangent_map_gives_coordinate_derivatives():
    model = _tree([J.Spherical("quaternion"), J.Revolute(AX[0])], 2)
    rng = np.random.default_rng(4)
    q, qd, qdd = random_state(model, rng)
    dq = ej.rnea_derivatives(model, q, qd, qdd)[0]
    T = ej.tangent_map(model, q)
    # along a coordinate direction tangent to the unit sphere, d tau = dq T dx
    dx = rng.normal(size=model.nq)
    qs = model.quaternion_blocks()[0][1]
    dx[qs] -= q[qs] * (q[qs] @ dx[qs])
    def moved(h):
        x = q + h * dx
        x[qs] /= np.linalg.norm(x[qs])
        return x
    ref = _richardson(lambda h: ej.rnea(model, moved(h), qd, qdd))
    np.testing.assert_allclose(dq @ T @ dx, ref, atol=1e-8 * np.abs(ref).max())


def test_frame_jacobians_and_their_time_derivative():
    model = _tree([J.Revolute(AX[0]), J.Spherical("ZYX"), J.Prismatic(AX[1]), J.Universal(AX[2], AX[3])], 6)
    rng = np.random.default_rng(8)
    q, qd, _ = random_state(model, rng)
    frame = ("b4", ej.Transform(rotation=np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]),
                                translation=(0.1, -0.2, 0.3)))

    def pose(x):
        k = ej.forward_kinematics(model, x)
        R = k.R[4] @ frame[1].rotation
        return R, k.p[4] + k.R[4] @ frame[1].translation

    def twist(s):
        """[w; v] of the frame origin (world axes) along q + s qd at rate qd, by differences."""
        x = q + s * qd
        Rd = _richardson(lambda h: pose(x + h * qd)[0])
        pd = _richardson(lambda h: pose(x + h * qd)[1])
        W = Rd @ pose(x)[0].T
        return np.concatenate([[W[2, 1], W[0, 2], W[1, 0]], pd])

    lwa = ej.frame_jacobian(model, q, frame, "local_world_aligned")
    tw = twist(0.0)
    np.testing.assert_allclose(lwa @ qd, tw, atol=1e-8)
    R, p = pose(q)
    loc = ej.frame_jacobian(model, q, frame, "local")
    np.testing.assert_allclose(loc @ qd, np.concatenate([R.T @ tw[:3], R.T @ tw[3:]]), atol=1e-8)
    wor = ej.frame_jacobian(model, q, frame, "world")
    np.testing.assert_allclose(wor @ qd, np.concatenate([tw[:3], tw[3:] + np.cross(p, tw[:3])]), atol=1e-8)
    for ref in ("world", "local", "local_world_aligned"):
        # J' qd = d/ds (J(q + s qd) qd)
        ref_dot = _richardson(lambda h: ej.frame_jacobian(model, q + h * qd, frame, ref) @ qd)
        np.testing.assert_allclose(ej.frame_jacobian_dot_v(model, q, qd, frame, ref), ref_dot, atol=1e-7)
    # the centre of mass's Jacobian
    cdot = _richardson(lambda h: ej.center_of_mass(model, q + h * qd))
    np.testing.assert_allclose(ej.com_jacobian(model, q) @ qd, cdot, atol=1e-9)
    with pytest.raises(ValueError, match="reference"):
        ej.frame_jacobian(model, q, "b1", "body")
