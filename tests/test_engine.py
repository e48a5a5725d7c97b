"""The engine: the model's packed tables, workspaces (ej.Data) and the stages they share, the
fast path of single calls against the input layer, per-sample status of batches, and results
independent of threads, chunking and concurrency."""
import concurrent.futures

import numba
import numpy as np
import pytest

import ejce_nb as ej
from ejce_nb.model import layout
from conftest import random_state, random_tree

J = ej.joints


def _tree():
    specs = [J.Revolute((0, 0, 1)), J.Spherical("ZYX"), J.Prismatic((1, 0, 0)), J.Spherical("quaternion"),
             J.Free("quaternion"), J.Spherical("rotvec"), J.Universal((1, 0, 0), (0, 1, 0)), J.Fixed(),
             J.Helical((0, 1, 0), 0.1), J.Planar()]
    return random_tree(specs, np.random.default_rng(7))


@pytest.fixture(scope="module")
def model():
    return _tree()


def _states(model, n, seed):
    rng = np.random.default_rng(seed)
    S = [random_state(model, rng) for _ in range(n)]
    return tuple(np.array([s[k] for s in S]) for k in range(3))


def _all(model, q, qd, qdd, **kw):
    """Every public result at one state (or batch), as a dict of arrays."""
    tau = ej.rnea(model, q, qd, qdd, **kw)
    kin = ej.forward_kinematics(model, q, qd, qdd, **kw)
    out = {"tau": tau, "M": ej.mass_matrix(model, q, **kw), "h": ej.nonlinear_effects(model, q, qd, **kw),
           "qdd": ej.aba(model, q, qd, tau, **kw), "T": np.asarray(ej.kinetic_energy(model, q, qd, **kw)),
           "J": ej.body_jacobian(model, q, model.nbodies, **kw)}
    out.update({k: getattr(kin, k).copy() for k in ("R", "p", "omega", "v", "alpha", "a")})
    jt = ej.joint_terms(model, q, qd, **kw)
    out.update({"jt_" + k: getattr(jt, k).copy() for k in ("J", "sigma", "bias")})
    return {k: np.array(v, copy=True) for k, v in out.items()}


def _same(a, b):
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)


# ---------------------------------------------------------------------------- tables
def test_model_tables_are_views_of_the_packed_buffers(model):
    """The entity-prefixed tables and their API.md names are the same read-only arrays, and they
    are where the kernels read them."""
    assert model.parent is model.body_parent and model.jtype is model.jnt_type
    assert model.q_start is model.jnt_qadr and model.v_start is model.jnt_dofadr
    assert model.nq_joint is model.jnt_nq and model.nv_joint is model.jnt_nv
    for t in layout.MODEL:
        a = getattr(model, t.name)
        assert np.shares_memory(a, model._mi if t.dtype == "i8" else model._mf) and not a.flags.writeable, t.name
    # the derived tables: P_i in the parent's C frame, inertia about the origin of C
    for i in range(1, model.nbodies + 1):
        l = model.parent[i]
        Ec = model.joint_C_rot[l] if l > 0 else np.eye(3)
        cc = model.joint_C_pos[l] if l > 0 else np.zeros(3)
        np.testing.assert_allclose(model.jnt_Xt[i], Ec.T @ model.joint_P_rot[i], atol=1e-15)
        np.testing.assert_allclose(model.jnt_pt[i], Ec.T @ (model.joint_P_pos[i] - cc), atol=1e-15)
        assert model.jnt_Xid[i] == int(np.array_equal(model.jnt_Xt[i], np.eye(3)))
        c = model.joint_C_rot[i].T @ (model.body_com[i] - model.joint_C_pos[i])
        np.testing.assert_allclose(model.body_cC[i], c, atol=1e-15)
        I = model.joint_C_rot[i].T @ model.body_inertia[i] @ model.joint_C_rot[i]
        np.testing.assert_allclose(model.body_IC[i], I + model.body_mass[i] * (c @ c * np.eye(3) - np.outer(c, c)),
                                   atol=1e-14)


def test_every_joint_is_evaluated_by_the_path_of_its_kind(model):
    from ejce_nb.core.ejce import PATH_FIXED, PATH_JETS, PATH_QUAT, PATH_SCREW
    want = {"Revolute": PATH_SCREW, "Spherical": None, "Prismatic": PATH_SCREW, "Free": PATH_QUAT,
            "Universal": PATH_SCREW, "Fixed": PATH_FIXED, "Helical": PATH_SCREW, "Planar": PATH_SCREW}
    for i in range(1, model.nbodies + 1):
        spec = model.joint_specs[i]
        kind = type(spec).__name__
        if kind == "Spherical":
            exp = {"ZYX": PATH_SCREW, "quaternion": PATH_QUAT, "rotvec": PATH_JETS}[spec.param]
        else:
            exp = want[kind]
        assert model.jnt_path[i] == exp, (i, spec)


# ---------------------------------------------------------------------------- Data
def test_data_gives_the_same_results_bitwise_and_shares_stages(model):
    q, qd, qdd = (x[0] for x in _states(model, 1, 1))
    ref = _all(model, q, qd, qdd)
    d = ej.Data(model)
    _same(_all(model, q, qd, qdd, data=d), ref)
    # every stage the calls produced is recorded for this state
    hdr = d._w[:8]
    assert hdr[layout.REC_POS] == hdr[layout.REC_VEL] == hdr[layout.REC_WORLD] == 1.0
    # kinematics then rnea: rnea reuses the joints, twists and accelerations
    d2 = ej.Data(model)
    ej.forward_kinematics(model, q, qd, qdd, data=d2)
    before = d2._w[:model.record_size].copy()
    tau = ej.rnea(model, q, qd, qdd, data=d2)
    np.testing.assert_array_equal(d2._w[:model.record_size], before)     # nothing recomputed
    np.testing.assert_array_equal(tau, ref["tau"])
    assert tau is d2._results["tau"]                                       # the Data's own array
    # mass matrix then nonlinear effects: X and S are kept, only the velocity terms are added
    d3 = ej.Data(model)
    ej.mass_matrix(model, q, data=d3)
    rec = layout.table(d3._w, model._mi, "S", (model.nv, 6)).copy()
    assert d3._w[layout.REC_VEL] == 0.0
    np.testing.assert_array_equal(ej.nonlinear_effects(model, q, qd, data=d3), ref["h"])
    np.testing.assert_array_equal(layout.table(d3._w, model._mi, "S", (model.nv, 6)), rec)
    assert d3._w[layout.REC_VEL] == 1.0


def _world_kinematics_from_views(d, g):
    """forward_kinematics' world quantities, from a Data's views alone (C frames -> body origin)."""
    RC, bo = d.frame_rotation, d.model.body_bo
    w, vC = d.body_twist[..., :3], d.body_twist[..., 3:]
    dw, aC = d.body_acceleration[..., :3], d.body_acceleration[..., 3:]
    rot = lambda x: np.einsum("...ij,...j->...i", RC, x)       # noqa: E731
    vo = vC + np.cross(w, bo)
    return {"omega": rot(w), "v": rot(vo), "alpha": rot(dw),
            "a": rot(aC + np.cross(dw, bo) + np.cross(w, vo)) + g}


def test_data_views_are_what_the_public_functions_computed(model):
    q, qd, qdd = (x[0] for x in _states(model, 1, 3))
    d = ej.Data(model)
    assert d.computed == () and d.q is None and d.t is None
    with pytest.raises(ValueError, match="body_twist.*no velocities"):
        d.body_twist
    kin = ej.forward_kinematics(model, q, qd, qdd, data=d)
    assert set(d.computed) == {"position", "velocity", "acceleration", "world"}
    np.testing.assert_array_equal(d.q, q)
    np.testing.assert_array_equal(d.qd, qd)
    np.testing.assert_array_equal(d.qdd, qdd)
    assert d.t == 0.0
    np.testing.assert_allclose(d.body_rotation, kin.R, rtol=0, atol=1e-14)
    np.testing.assert_allclose(d.body_position, kin.p, rtol=0, atol=1e-13)
    for k, x in _world_kinematics_from_views(d, model.gravity).items():
        np.testing.assert_allclose(x[1:], getattr(kin, k)[1:], rtol=0, atol=1e-11, err_msg=k)
    # the joints: their poses, subspaces and twists are joint_terms' in C axes
    jt = ej.joint_terms(model, q, qd, frame="outboard")
    np.testing.assert_allclose(d.joint_rotation, jt.R, rtol=0, atol=1e-15)
    np.testing.assert_allclose(d.joint_translation, jt.r, rtol=0, atol=1e-15)
    np.testing.assert_allclose(d.S, jt.J.T, rtol=0, atol=1e-14)
    np.testing.assert_allclose(d.joint_twist[1:], jt.twist[1:], rtol=0, atol=1e-13)
    # X_i from the parent's C frame to C_i: RC_i = RC_p E_i^T, oC_i = oC_p + RC_p d_i
    RC, oC, E, dd = d.frame_rotation, d.frame_origin, d.X_rotation, d.X_translation
    for i in range(1, model.nbodies + 1):
        p = model.body_parent[i]
        np.testing.assert_allclose(RC[i], RC[p] @ E[i].T, rtol=0, atol=1e-14)
        np.testing.assert_allclose(oC[i], oC[p] + RC[p] @ dd[i], rtol=0, atol=1e-13)
    with pytest.raises(ValueError):
        d.S[0, 0] = 1.0
    # a batch Data: the same views with a leading batch axis, state by state
    Q, QD, QDD = _states(model, 3, 4)
    db = ej.Data(model, batch=3)
    kb = ej.forward_kinematics(model, Q, QD, QDD, data=db)
    assert db.body_twist.shape == (3, model.nbodies + 1, 6) and db.S.shape == (3, model.nv, 6)
    np.testing.assert_array_equal(db.q, Q)
    np.testing.assert_allclose(db.body_position, kb.p, rtol=0, atol=1e-13)
    for k, x in _world_kinematics_from_views(db, model.gravity).items():
        np.testing.assert_allclose(x[:, 1:], getattr(kb, k)[:, 1:], rtol=0, atol=1e-11, err_msg=k)


def test_a_changed_state_is_never_served_from_the_record(model):
    q, qd, qdd = (x[0] for x in _states(model, 1, 2))
    d = ej.Data(model)
    ej.rnea(model, q, qd, qdd, data=d)
    q2, qd2, qdd2 = q.copy(), qd.copy(), qdd.copy()
    for x, k in ((q2, 0), (qd2, 1), (qdd2, 2)):
        x[1] += 1e-12                                  # the same arrays' values change
        got = ej.rnea(model, q2, qd2, qdd2, data=d).copy()
        np.testing.assert_array_equal(got, ej.rnea(model, q2, qd2, qdd2))
    ej.rnea(model, q, qd, qdd, data=d, t=0.5)          # and so does time
    np.testing.assert_array_equal(ej.rnea(model, q, qd, qdd, data=d, t=0.5), ej.rnea(model, q, qd, qdd, t=0.5))


def test_batch_data_keeps_one_record_per_state(model):
    Q, V, A = _states(model, 5, 3)
    d = ej.Data(model, batch=5)
    assert d.nbytes >= 5 * model.record_size * 8
    ref = _all(model, Q, V, A)
    _same(_all(model, Q, V, A, data=d), ref)
    assert np.all(d._R[:, layout.REC_POS] == 1.0)
    with pytest.raises(ValueError, match="batch of 5"):
        ej.rnea(model, Q[:3], V[:3], A[:3], data=d)
    with pytest.raises(ValueError, match="one state"):
        ej.rnea(model, Q[0], V[0], A[0], data=d)
    with pytest.raises(ValueError, match="another model"):
        ej.rnea(_tree(), Q, V, A, data=d)
    with pytest.raises(ValueError, match="positive integer"):
        ej.Data(model, batch=0)


# ---------------------------------------------------------------------------- the fast path
def test_any_array_like_gives_the_results_of_float_arrays(model):
    """The fast path of a single call takes float64 C-contiguous writeable arrays as they are;
    everything else goes through the input layer, which makes them such arrays: the same result,
    and nothing compiled again for a list, a read-only view, a strided slice or float32."""
    from ejce_nb._jit import compile_seconds
    q, qd, qdd = (x[0] for x in _states(model, 1, 4))
    ref = ej.rnea(model, q, qd, qdd)
    ej.aba(model, q, qd, ref)
    ej.forward_kinematics(model, q, qd, qdd)
    compiled = compile_seconds()
    ro = q.copy()
    ro.flags.writeable = False
    strided = np.repeat(q, 2)[::2]
    for qq in (ro, strided, list(q)):
        np.testing.assert_array_equal(ej.rnea(model, qq, qd, qdd), ref)
    q32 = q.astype(np.float32)
    np.testing.assert_array_equal(ej.rnea(model, q32, qd, qdd), ej.rnea(model, q32.astype(np.float64), qd, qdd))
    np.testing.assert_array_equal(ej.aba(model, ro, qd, ref), ej.aba(model, q, qd, ref))
    np.testing.assert_array_equal(ej.forward_kinematics(model, strided, qd, qdd).a,
                                  ej.forward_kinematics(model, q, qd, qdd).a)
    np.testing.assert_array_equal(ej.rnea(model, q, qd, qdd, t=np.float64(0.0)), ref)
    np.testing.assert_array_equal(ej.rnea(model, q, qd, qdd, t=0), ref)
    assert compile_seconds() == compiled, "an array-like input compiled a kernel a second time"


# ---------------------------------------------------------------------------- batches
def test_batch_equals_loop_bitwise_whatever_the_thread_count(model):
    Q, V, A = _states(model, 37, 5)
    loop = [_all(model, Q[b], V[b], A[b]) for b in range(len(Q))]
    maxth = numba.config.NUMBA_NUM_THREADS
    try:
        for th in sorted({1, maxth}):
            numba.set_num_threads(th)
            batch = _all(model, Q, V, A)
            for b in range(len(Q)):
                _same({k: v[b] for k, v in batch.items()}, loop[b])
    finally:
        numba.set_num_threads(maxth)


def _lane_tree():
    specs = [J.Revolute((0, 0, 1)), J.Spherical("ZYX"), J.Prismatic((1, 0, 0)), J.Spherical("quaternion"),
             J.Free("quaternion"), J.Universal((1, 0, 0), (0, 1, 0)), J.Fixed(), J.Helical((0, 1, 0), 0.1),
             J.Spherical("XYX"), J.Revolute((0.6, 0.0, 0.8))]
    return random_tree(specs, np.random.default_rng(11))


def test_batches_of_lane_models_equal_lone_calls_bitwise():
    """Models whose joints all have lane paths run batches four states at a time (the lanes of
    one vector register); every state's result and status equal a lone call's, whatever the
    batch length, the external wrenches and the bad or singular samples among a group."""
    model = _lane_tree()
    assert model._mb[layout.H_LANES] == 1
    B = 39                                       # not a multiple of the group size
    Q, V, A = _states(model, B, 12)
    F = np.random.default_rng(13).normal(size=(B, model.nbodies + 1, 6))
    zyx = model.q_slice(model.joint_index("j2")).start + 1
    Q[9, zyx] = np.pi / 2                        # gimbal lock in a group
    Q[14, zyx] = np.pi / 2 - 1e-5                # near it: computed, with a warning
    Q[21, 0] = np.nan                            # a bad input in a group
    qs = model.q_slice(model.joint_index("j4"))  # the spherical quaternion joint
    Q[26, qs] *= 3.0                             # far from unit: refused
    Q[30, qs] *= 1.0 + 5e-4                      # within tolerance: used normalised
    maxth = numba.config.NUMBA_NUM_THREADS
    try:
        for th in sorted({1, maxth}):
            numba.set_num_threads(th)
            for f_ext in (None, F):
                tau, st_r = ej.rnea(model, Q, V, A, f_ext=f_ext, errors="flag")
                h, st_h = ej.nonlinear_effects(model, Q, V, errors="flag")
                T = np.where(np.isnan(tau), 0.0, tau)
                qdd, st_a = ej.aba(model, Q, V, T, f_ext=f_ext, errors="flag")
                for b in range(B):
                    fb = None if f_ext is None else F[b]
                    if b == 21:
                        assert st_r[b] == st_h[b] == st_a[b] == ej.Status.NONFINITE_INPUT
                        continue
                    if b == 26:
                        assert st_r[b] == st_h[b] == st_a[b] == ej.Status.QUATERNION_NOT_UNIT
                        continue
                    np.testing.assert_array_equal(tau[b], ej.rnea(model, Q[b], V[b], A[b], f_ext=fb))
                    np.testing.assert_array_equal(h[b], ej.nonlinear_effects(model, Q[b], V[b]))
                    one, st1 = ej.aba(model, Q[b:b + 1], V[b:b + 1], T[b:b + 1], f_ext=None if fb is None
                                      else fb[None], errors="flag")
                    assert st_a[b] == st1[0]
                    np.testing.assert_array_equal(qdd[b], one[0])
                assert st_a[9] == ej.Status.SINGULAR_JOINT and st_a[14] == ej.Status.NEAR_SINGULAR_JOINT
                assert np.count_nonzero(st_a) == 4 and np.count_nonzero(st_r) == 2
    finally:
        numba.set_num_threads(maxth)


def rnea_and_aba(m, Q, V, A, TAU, t=0.0):
    res, codes = ej.evaluate(m, Q, V, A, TAU, t=t, quantities=["rnea", "aba"], errors="flag")
    return (res["rnea"], codes["rnea"]), (res["aba"], codes["aba"])


def test_rnea_and_aba_on_one_forward_sweep_are_the_two_calls_bitwise(model):
    """``ej.evaluate`` of rnea and aba (what a sweep of both runs) gives, state for state, the
    results and statuses of ``rnea`` and ``aba`` called apart: in groups of lanes (with a gimbal
    lock, a state near one, bad inputs and a quaternion far from unit among them), state by state
    on a model without lanes, on a ragged tail, and on one or all threads."""
    lane = _lane_tree()
    B = 41
    cases = []
    for m, seed in ((lane, 21), (model, 22)):
        Q, V, A = _states(m, B, seed)
        TAU = np.random.default_rng(seed).normal(size=(B, m.nv))
        cases.append((m, Q, V, A, TAU))
    m, Q, V, A, TAU = cases[0]
    zyx = m.q_slice(m.joint_index("j2")).start + 1
    Q[9, zyx] = np.pi / 2                        # gimbal lock: aba singular, rnea computed
    Q[14, zyx] = np.pi / 2 - 1e-5                # near it
    Q[21, 0] = np.nan                            # bad for both
    A[25, 0] = np.inf                            # bad for rnea only
    TAU[33, 1] = np.nan                          # bad for aba only
    qs = m.q_slice(m.joint_index("j4"))
    Q[29, qs] *= 3.0
    maxth = numba.config.NUMBA_NUM_THREADS
    try:
        for th in sorted({1, maxth}):
            numba.set_num_threads(th)
            for m, Q, V, A, TAU in cases:
                for t in (0.0, np.linspace(0.0, 1.0, B)):
                    (tau, st_r), (qdd, st_a) = rnea_and_aba(m, Q, V, A, TAU, t=t)
                    tau2, st_r2 = ej.rnea(m, Q, V, A, t=t, errors="flag")
                    qdd2, st_a2 = ej.aba(m, Q, V, TAU, t=t, errors="flag")
                    np.testing.assert_array_equal(st_r, st_r2)
                    np.testing.assert_array_equal(st_a, st_a2)
                    np.testing.assert_array_equal(tau, tau2)
                    np.testing.assert_array_equal(qdd, qdd2)
    finally:
        numba.set_num_threads(maxth)
    m, Q, V, A, TAU = cases[0]
    (tau, st_r), (qdd, st_a) = rnea_and_aba(m, Q, V, A, TAU)
    assert [int(st_r[b]) for b in (9, 21, 25, 29, 33)] == [0, ej.Status.NONFINITE_INPUT, ej.Status.NONFINITE_INPUT,
                                                           ej.Status.QUATERNION_NOT_UNIT, 0]
    assert [int(st_a[b]) for b in (9, 14, 21, 25, 29, 33)] == [
        ej.Status.SINGULAR_JOINT, ej.Status.NEAR_SINGULAR_JOINT, ej.Status.NONFINITE_INPUT, 0,
        ej.Status.QUATERNION_NOT_UNIT, ej.Status.NONFINITE_INPUT]
    assert np.all(np.isnan(qdd[9])) and np.all(np.isfinite(qdd[14])) and np.all(np.isfinite(tau[9]))


def test_evaluate_shares_one_sweep_and_gives_each_function_s_result_bitwise(model):
    """``ej.evaluate`` of several quantities (one forward sweep per state) equals the functions
    called apart, for a batch (one with a bad qdd and one with a bad tau: each quantity has its
    own status) and for one state; a generic twin gives the same to rounding."""
    Q, V, A = _states(model, 9, 31)
    TAU = np.random.default_rng(31).normal(size=(9, model.nv))
    A[2, 0] = np.nan
    TAU[5, 1] = np.inf
    names = ["rnea", "aba", "mass_matrix", "forward_kinematics", "kinetic_energy"]
    res, codes = ej.evaluate(model, Q, V, A, TAU, quantities=names, errors="flag")
    want = {"rnea": ej.rnea(model, Q, V, A, errors="flag"), "aba": ej.aba(model, Q, V, TAU, errors="flag"),
            "mass_matrix": ej.mass_matrix(model, Q, errors="flag"),
            "kinetic_energy": ej.kinetic_energy(model, Q, V, errors="flag")}
    for nm, (x, st) in want.items():
        np.testing.assert_array_equal(res[nm], x, err_msg=nm)
        np.testing.assert_array_equal(codes[nm], st, err_msg=nm)
    assert codes["rnea"][2] == ej.Status.NONFINITE_INPUT and codes["aba"][2] == 0
    assert codes["aba"][5] == ej.Status.NONFINITE_INPUT and codes["rnea"][5] == 0
    kin, st = ej.forward_kinematics(model, Q, V, A, errors="flag")
    np.testing.assert_array_equal(codes["forward_kinematics"], st)
    for f in ("R", "p", "omega", "v", "alpha", "a"):
        np.testing.assert_array_equal(getattr(res["forward_kinematics"], f), getattr(kin, f), err_msg=f)
    one = ej.evaluate(model, Q[0], V[0], A[0], TAU[0], quantities=names)
    np.testing.assert_array_equal(one["rnea"], ej.rnea(model, Q[0], V[0], A[0]))
    np.testing.assert_array_equal(one["mass_matrix"], ej.mass_matrix(model, Q[0]))
    assert one["kinetic_energy"] == ej.kinetic_energy(model, Q[0], V[0])
    with pytest.raises(ValueError, match="qdd contains NaN or inf"):
        ej.evaluate(model, Q, V, A, TAU, quantities=["rnea"])
    with pytest.raises(ValueError, match="unknown quantity"):
        ej.evaluate(model, Q, V, A, TAU, quantities=["nope"])


def test_concurrent_calls_from_python_threads_equal_serial_calls(model):
    Q, V, A = _states(model, 64, 6)
    serial = [ej.rnea(model, Q[b], V[b], A[b]) for b in range(64)]
    serial_aba = [ej.aba(model, Q[b], V[b], serial[b]) for b in range(64)]

    def work(b):
        return [(ej.rnea(model, Q[b], V[b], A[b]), ej.aba(model, Q[b], V[b], serial[b])) for _ in range(20)]

    with concurrent.futures.ThreadPoolExecutor(4) as ex:
        results = list(ex.map(work, range(64)))
    for b, res in enumerate(results):
        for tau, qdd in res:
            np.testing.assert_array_equal(tau, serial[b])
            np.testing.assert_array_equal(qdd, serial_aba[b])


def test_flagged_batches_compute_the_good_samples_and_name_the_bad(model):
    Q, V, A = _states(model, 8, 7)
    tau = ej.rnea(model, Q, V, A)
    qs = model.q_slice(model.joint_index("j4"))             # the spherical quaternion joint
    bad_q = Q.copy()
    bad_q[1, 0] = np.nan                                    # non-finite coordinate
    bad_q[3, qs] *= 3.0                                      # quaternion far from unit
    bad_v = V.copy()
    bad_v[5, 2] = np.inf
    res, st = ej.rnea(model, bad_q, bad_v, A, errors="flag")
    assert st.dtype.kind == "i" and st.shape == (8,)
    assert list(st) == [0, ej.Status.NONFINITE_INPUT, 0, ej.Status.QUATERNION_NOT_UNIT, 0,
                        ej.Status.NONFINITE_INPUT, 0, 0]
    good = st == 0
    np.testing.assert_array_equal(res[good], tau[good])
    assert np.all(np.isnan(res[~good]))
    with pytest.raises(ValueError, match=r"^q contains NaN or inf.*sample 1"):
        ej.rnea(model, bad_q, bad_v, A)
    for f, args in ((ej.aba, (bad_q, bad_v, tau)), (ej.mass_matrix, (bad_q,)),
                    (ej.forward_kinematics, (bad_q, bad_v)), (ej.kinetic_energy, (bad_q, bad_v)),
                    (ej.body_jacobian, (bad_q, 3)), (ej.nonlinear_effects, (bad_q, bad_v))):
        out, st2 = f(model, *args, errors="flag")
        assert st2[1] == ej.Status.NONFINITE_INPUT and st2[3] == ej.Status.QUATERNION_NOT_UNIT
        assert st2[0] == 0
    with pytest.raises(ValueError, match="errors"):
        ej.rnea(model, Q, V, A, errors="ignore")


def test_one_flagged_state_is_nan_where_it_cannot_be_computed(model):
    q, qd, qdd = (x[0] for x in _states(model, 1, 9))
    bad = q.copy()
    bad[0] = np.nan
    for f, args in ((ej.rnea, (bad, qd, qdd)), (ej.nonlinear_effects, (bad, qd)), (ej.mass_matrix, (bad,)),
                    (ej.aba, (bad, qd, qdd)), (ej.body_jacobian, (bad, 3))):
        out, code = f(model, *args, errors="flag")
        assert code == ej.Status.NONFINITE_INPUT and np.all(np.isnan(out)), f.__name__
    kin, code = ej.forward_kinematics(model, bad, qd, qdd, errors="flag")
    assert code == ej.Status.NONFINITE_INPUT and np.all(np.isnan(kin.R)) and np.all(np.isnan(kin.a))
    jt, code = ej.joint_terms(model, bad, qd, errors="flag")
    assert code == ej.Status.NONFINITE_INPUT and np.all(np.isnan(jt.J)) and np.all(np.isnan(jt.bias))
    # the condition number of a flagged batch: NaN for the bad sample, the others computed
    Q = np.array([q, bad, q])
    M, cond, st = ej.mass_matrix(model, Q, condition=True, errors="flag")
    assert list(st) == [0, ej.Status.NONFINITE_INPUT, 0] and np.isnan(cond[1])
    assert cond[0] == cond[2] == pytest.approx(np.linalg.cond(ej.mass_matrix(model, q)))


def test_flagged_singular_samples(model):
    """Gimbal lock of the Z-Y-X joint in one sample: aba flags it, the others are computed."""
    Q, V, A = _states(model, 4, 8)
    tau = ej.rnea(model, Q, V, A)
    zyx = model.joint_index("j2")
    qs = model.q_slice(zyx)
    Q[2, qs.start + 1] = np.pi / 2
    qdd, st = ej.aba(model, Q, V, tau, errors="flag")
    assert list(st) == [0, 0, ej.Status.SINGULAR_JOINT, 0]
    np.testing.assert_array_equal(qdd[[0, 1, 3]], ej.aba(model, Q[[0, 1, 3]], V[[0, 1, 3]], tau[[0, 1, 3]]))
    assert np.all(np.isnan(qdd[2]))
    with pytest.raises(ej.SingularJointError, match=r"1 of 4 samples.*sample 2, joint .j2."):
        ej.aba(model, Q, V, tau)


# ---------------------------------------------------------------------------- near singularities
def _wrist():
    b = ej.ModelBuilder()
    b.add_body("arm", joint=J.Revolute((0, 0, 1)), mass=1.0, com=(0.1, 0.0, 0.0), inertia=np.diag([0.01, 0.02, 0.02]))
    b.add_body("hand", parent="arm", joint=J.Spherical("ZYX"), placement=ej.Transform(translation=(0.3, 0, 0)),
               mass=1.0, com=(0.05, 0.02, 0.01), inertia=np.diag([0.003, 0.004, 0.005]))
    return b.build()


def test_near_gimbal_lock_is_named_with_its_distance():
    model = _wrist()
    qd, tau = np.array([0.2, 0.3, -0.1, 0.4]), np.zeros(4)
    for d in (1e-6, 0.0):
        q = np.array([0.1, 0.2, np.pi / 2 - d, 0.3])
        with pytest.raises(ej.SingularJointError, match=r"joint 'hand_joint'.*gimbal lock.*q\[2\] = "
                                                        r"1\.5707\d+ is [\d.e-]+ rad from the gimbal lock"):
            ej.aba(model, q, qd, tau)
    # closer than 1e-4 but computable: the accelerations come with a warning, not an error
    q = np.array([0.1, 0.2, np.pi / 2 - 1e-5, 0.3])
    with pytest.warns(ej.NearSingularWarning, match=r"'hand_joint'.*1e-05 rad from the gimbal lock"):
        qdd = ej.aba(model, q, qd, tau)
    assert np.all(np.isfinite(qdd)) and np.abs(qdd).max() > 1e3
    np.testing.assert_allclose(ej.rnea(model, q, qd, qdd), tau, atol=1e-6 * np.abs(qdd).max())
    # the same in a batch, through the status
    Q = np.array([[0.1, 0.2, 0.3, 0.3], [0.1, 0.2, np.pi / 2 - 1e-5, 0.3], [0.1, 0.2, np.pi / 2, 0.3]])
    V, T = np.tile(qd, (3, 1)), np.zeros((3, 4))
    out, st = ej.aba(model, Q, V, T, errors="flag")
    assert list(st) == [ej.Status.OK, ej.Status.NEAR_SINGULAR_JOINT, ej.Status.SINGULAR_JOINT]
    assert np.all(np.isfinite(out[:2])) and np.all(np.isnan(out[2]))
    _, st2 = ej.forward_dynamics_crba(model, Q, V, T, errors="flag")
    assert st2[0] == 0 and st2[1] == ej.Status.NEAR_SINGULAR_JOINT and st2[2] == ej.Status.SINGULAR_JOINT


def test_massless_subtree_is_not_called_a_gimbal_lock():
    b = ej.ModelBuilder()
    b.add_body("arm", joint=J.Revolute((0, 0, 1)), mass=1.0, com=(0.1, 0.0, 0.0), inertia=np.diag([0.01, 0.02, 0.02]))
    b.add_body("ghost", parent="arm", joint=J.Spherical("ZYX"), mass=0.0)
    model = b.build()
    with pytest.raises(ej.SingularJointError, match=r"'ghost_joint'.*massless"):
        ej.aba(model, np.array([0.1, 0.2, 0.3, 0.4]), np.zeros(4), np.zeros(4))


def test_mass_matrix_reports_its_condition():
    model = _wrist()
    good = np.array([0.1, 0.2, 0.3, 0.3])
    M, c = ej.mass_matrix(model, good, condition=True)
    np.testing.assert_array_equal(M, ej.mass_matrix(model, good))
    assert c == pytest.approx(np.linalg.cond(M))
    locked = np.array([0.1, 0.2, np.pi / 2, 0.3])
    Q = np.array([good, locked])
    Mb, cb = ej.mass_matrix(model, Q, condition=True)
    assert cb.shape == (2,) and cb[0] == pytest.approx(c) and cb[1] > 1e12
