"""Property-based fuzzing (hypothesis) of every public function over random models and states:
wrong dtypes and shapes, non-contiguous and read-only arrays, NaN/inf, huge and tiny magnitudes,
zero-mass leaves, near-singular inertias, non-unit quaternions, empty models and models of only
fixed joints.  Each case either gives a correct result (checked by an identity) or a clear
ValueError; nothing crashes or hangs."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ejce_nb as ej
from ejce_nb.models import KINDS, random_states, random_tree

J = ej.joints
SETTINGS = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _tweak(model, rng, kind):
    """A copy of the model with zero-mass leaves or near-singular inertias."""
    b = ej.ModelBuilder(gravity=model.gravity)
    leaves = set(range(1, model.nbodies + 1)) - set(model.parent[1:].tolist())
    for i in range(1, model.nbodies + 1):
        m, I = float(model.body_mass[i]), model.body_inertia[i].copy()
        if kind == "massless_leaves" and i in leaves:
            m, I = 0.0, np.zeros((3, 3))
        elif kind == "thin" and rng.random() < 0.5:
            # a rod: one principal moment at rounding of the others
            w, V = np.linalg.eigh(I)
            w = np.array([1e-12 * w[2], w[2], w[2]])
            I = V @ np.diag(w) @ V.T
            I = 0.5 * (I + I.T)
        b.add_body(model.body_names[i], parent=int(model.parent[i]), joint=model.joint_specs[i],
                   joint_name=model.joint_names[i],
                   placement=ej.Transform(model.joint_P_rot[i], model.joint_P_pos[i]),
                   child_placement=ej.Transform(model.joint_C_rot[i], model.joint_C_pos[i]),
                   mass=m, com=model.body_com[i], inertia=I)
    return b.build()


@st.composite
def models(draw):
    kind = draw(st.sampled_from(["random", "random", "massless_leaves", "thin", "fixed_only", "empty"]))
    seed = draw(st.integers(0, 10_000))
    if kind == "empty":
        return ej.ModelBuilder().build()
    if kind == "fixed_only":
        return random_tree(draw(st.integers(1, 4)), seed, joints=["fixed"])
    joints = draw(st.lists(st.sampled_from(KINDS + ("ZYX", "free:rotvec", "spherical:mrp")), min_size=1, max_size=4))
    model = random_tree(draw(st.integers(1, 5)), seed, joints=joints)
    if kind in ("massless_leaves", "thin"):
        model = _tweak(model, np.random.default_rng(seed), kind)
    return model


def _state(model, seed, scale):
    q, qd, qdd = random_states(model, 1, np.random.default_rng(seed), spread=1.0)
    return q[0], qd[0] * scale, qdd[0] * scale


def _mangle(x, how, rng):
    """An array-like that is not what the kernels take directly, and what it should give."""
    if how == "list":
        return list(x), "same"
    if how == "readonly":
        y = x.copy()
        y.flags.writeable = False
        return y, "same"
    if how == "strided":
        return np.repeat(x, 2)[::2], "same"
    if how == "int":
        return np.round(x).astype(np.int64), "int"
    if how == "float32":
        return x.astype(np.float32), "float32"
    if how == "nan":
        y = x.copy()
        if y.size:
            y[rng.integers(y.size)] = rng.choice([np.nan, np.inf, -np.inf])
            return y, "error"
        return y, "same"
    if how == "short":
        return x[:-1] if x.size else np.zeros(1), "error"
    if how == "2d-wrong":
        return np.zeros((2, 3, max(x.size, 1))), "error"
    if how == "string":
        return "q", "error"
    if how == "complex":
        return x.astype(complex) + 1j, "error"
    return x, "same"


MANGLES = ["none", "list", "readonly", "strided", "int", "float32", "nan", "short", "2d-wrong", "string", "complex"]
CALLS = {
    "forward_kinematics": lambda m, q, v, a: ej.forward_kinematics(m, q, v, a).a,
    "joint_terms": lambda m, q, v, a: ej.joint_terms(m, q, v).bias,
    "body_jacobian": lambda m, q, v, a: ej.body_jacobian(m, q, m.nbodies),
    "rnea": lambda m, q, v, a: ej.rnea(m, q, v, a),
    "nonlinear_effects": lambda m, q, v, a: ej.nonlinear_effects(m, q, v),
    "mass_matrix": lambda m, q, v, a: ej.mass_matrix(m, q),
    "aba": lambda m, q, v, a: ej.aba(m, q, v, a),
    "forward_dynamics_crba": lambda m, q, v, a: ej.forward_dynamics_crba(m, q, v, a),
    "kinetic_energy": lambda m, q, v, a: ej.kinetic_energy(m, q, v),
    "potential_energy": lambda m, q, v, a: ej.potential_energy(m, q),
}


def _expected_failure(e):
    return isinstance(e, ValueError) and str(e)


@pytest.mark.parametrize("name", list(CALLS))
@SETTINGS
@given(model=models(), seed=st.integers(0, 2 ** 31), scale=st.sampled_from([1.0, 1e-12, 1e6]),
       which=st.sampled_from(["q", "qd", "qdd"]), how=st.sampled_from(MANGLES))
def test_every_public_function_takes_anything(name, model, seed, scale, which, how):
    """A mangled argument gives the result of the clean one (converted) or a clear ValueError."""
    f = CALLS[name]
    q, qd, qdd = _state(model, seed, scale)
    args = {"q": q, "qd": qd, "qdd": qdd}
    try:
        ref = f(model, q, qd, qdd)
    except ej.SingularJointError:
        ref = "singular"
    rng = np.random.default_rng(seed)
    bad, expect = _mangle(args[which], how, rng)
    uses = {"forward_kinematics": "q qd qdd", "joint_terms": "q qd", "body_jacobian": "q", "rnea": "q qd qdd",
            "nonlinear_effects": "q qd", "mass_matrix": "q", "aba": "q qd qdd", "forward_dynamics_crba": "q qd qdd",
            "kinetic_energy": "q qd", "potential_energy": "q"}[name].split()
    if which not in uses:
        expect = "same"
    args[which] = bad
    try:
        got = f(model, args["q"], args["qd"], args["qdd"])
    except ej.SingularJointError:
        assert ref == "singular" or expect in ("int", "float32")
        return
    except ValueError as e:
        assert str(e), "an error must say what is wrong"
        if expect == "error":
            return
        # a mangled array of other values may step outside (a quaternion off unit norm)
        assert expect in ("int", "float32") and ("quaternion" in str(e) or "norm" in str(e)), str(e)
        return
    assert expect != "error", f"{how} {which} was accepted"
    if expect == "same" and not isinstance(ref, str):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(ref))
    assert np.all(np.isfinite(np.asarray(got))) or not np.all(np.isfinite(np.asarray(ref, dtype=float)))


@SETTINGS
@given(model=models(), seed=st.integers(0, 2 ** 31), scale=st.sampled_from([1.0, 1e-8, 1e4]))
def test_identities_hold_on_whatever_computes(model, seed, scale):
    """M qdd + h = tau = rnea, and aba inverts rnea, wherever the dynamics are defined."""
    q, qd, qdd = _state(model, seed, scale)
    tau = ej.rnea(model, q, qd, qdd)
    M = ej.mass_matrix(model, q)
    h = ej.nonlinear_effects(model, q, qd)
    ref = max(1.0, float(np.abs(tau).max(initial=0.0)))
    assert np.abs(M @ qdd + h - tau).max(initial=0.0) <= 1e-9 * ref
    try:
        acc = ej.aba(model, q, qd, tau)
    except ej.SingularJointError as e:
        assert "joint" in str(e)
        with pytest.raises(ej.SingularJointError):
            ej.forward_dynamics_crba(model, q, qd, tau)
        return
    cond = np.linalg.cond(M) if model.nv else 1.0
    if cond < 1e8:
        # rounding of the forces (velocity products grow like qd^2) maps through M^-1
        Mn = np.linalg.norm(M, 2) if model.nv else 1.0
        scale_ = max(1.0, np.abs(qdd).max(initial=0.0), np.abs(h).max(initial=0.0) / Mn)
        assert np.abs(acc - qdd).max(initial=0.0) <= 1e-11 * cond * scale_


@SETTINGS
@given(model=models(), seed=st.integers(0, 2 ** 31), n=st.integers(1, 9))
def test_flagged_batches_never_fail_whole(model, seed, n):
    """Bad samples anywhere in a batch: the others equal their one-by-one results."""
    rng = np.random.default_rng(seed)
    Q, V, A = random_states(model, n, rng)
    for b in np.nonzero(rng.random(n) < 0.4)[0]:
        X = Q if (model.nq and rng.random() < 0.5) or not model.nv else V
        if X.shape[1]:
            X[b, rng.integers(X.shape[1])] = rng.choice([np.nan, np.inf])
    tau, st_ = ej.rnea(model, Q, V, A, errors="flag")
    for b in range(n):
        if st_[b] == 0:
            np.testing.assert_array_equal(tau[b], ej.rnea(model, Q[b], V[b], A[b]))
        else:
            assert st_[b] == ej.Status.NONFINITE_INPUT and np.all(np.isnan(tau[b]))


def test_quaternions_are_normalised_within_tolerance_and_refused_beyond():
    model = random_tree(3, 5, joints=[J.Spherical("quaternion")])
    q, qd, qdd = random_states(model, 1, np.random.default_rng(0))
    q, qd, qdd = q[0], qd[0], qdd[0]
    ref = ej.rnea(model, q, qd, qdd)
    for s in (1.0 + 5e-4, 1.0 - 5e-4):
        np.testing.assert_allclose(ej.rnea(model, q * s, qd, qdd), ref, rtol=0, atol=1e-12 * np.abs(ref).max())
    for s in (1.01, 0.5, 0.0):
        with pytest.raises(ValueError, match="quaternion of joint 'j1'.*unit quaternion is required"):
            ej.rnea(model, q * s, qd, qdd)


def test_empty_and_fixed_only_models():
    empty = ej.ModelBuilder().build()
    z = np.zeros(0)
    assert ej.rnea(empty, z, z, z).shape == (0,)
    assert ej.mass_matrix(empty, z).shape == (0, 0)
    assert ej.aba(empty, z, z, z).shape == (0,)
    kin = ej.forward_kinematics(empty, z, z, z)
    np.testing.assert_array_equal(kin.R[0], np.eye(3))
    fixed = random_tree(3, 1, joints=["fixed"])
    kin = ej.forward_kinematics(fixed, z, z, z)
    assert kin.p.shape == (4, 3) and np.all(kin.v == 0.0) and np.all(np.isfinite(kin.p))
    assert ej.kinetic_energy(fixed, z, z) == 0.0
    assert ej.rnea(fixed, np.zeros((5, 0)), np.zeros((5, 0)), np.zeros((5, 0))).shape == (5, 0)
