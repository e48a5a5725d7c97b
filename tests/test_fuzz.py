"""Property-based fuzzing (hypothesis) of every public function over random models and states:
wrong dtypes and shapes, non-contiguous and read-only arrays, NaN/inf, huge and tiny magnitudes,
zero-mass leaves, near-singular inertias, non-unit quaternions, empty models and models of only
fixed joints.  Each case either gives a correct result (checked by an identity) or a clear
ValueError; nothing crashes or hangs."""
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ejce_nb as ej
from ejce_nb.models import KINDS, random_states, random_tree

J = ej.joints
# EJCE_NB_FUZZ_EXAMPLES sets the cases per test (CI: 60; benchmarks/fuzz_long.py runs 10^5 per function)
EXAMPLES = int(os.environ.get("EJCE_NB_FUZZ_EXAMPLES", "60"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
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


# ---------------------------------------------------------------------------- the contract on every call
# name: (call(model, q, qd, qdd, **kw), the arrays it reads, the array its result is compared by)
CONTRACT = {
    "rnea": (lambda m, q, v, a, **kw: ej.rnea(m, q, v, a, **kw), "q qd qdd", np.asarray),
    "nonlinear_effects": (lambda m, q, v, a, **kw: ej.nonlinear_effects(m, q, v, **kw), "q qd", np.asarray),
    "aba": (lambda m, q, v, a, **kw: ej.aba(m, q, v, a, **kw), "q qd qdd", np.asarray),
    "mass_matrix": (lambda m, q, v, a, **kw: ej.mass_matrix(m, q, **kw), "q", np.asarray),
    "forward_kinematics": (lambda m, q, v, a, **kw: ej.forward_kinematics(m, q, v, a, **kw), "q qd qdd",
                           lambda r: r.a),
    "forward_kinematics_q": (lambda m, q, v, a, **kw: ej.forward_kinematics(m, q, **kw), "q", lambda r: r.p),
    "joint_terms": (lambda m, q, v, a, **kw: ej.joint_terms(m, q, v, **kw), "q qd", lambda r: r.J),
    "body_jacobian": (lambda m, q, v, a, **kw: ej.body_jacobian(m, q, m.nbodies, **kw), "q", np.asarray),
    "kinetic_energy": (lambda m, q, v, a, **kw: ej.kinetic_energy(m, q, v, **kw), "q qd", np.asarray),
    "potential_energy": (lambda m, q, v, a, **kw: ej.potential_energy(m, q, **kw), "q", np.asarray),
    "center_of_mass": (lambda m, q, v, a, **kw: ej.center_of_mass(m, q, **kw), "q", np.asarray),
}
KINDS_OF_CALL = ("good", "good", "good", "list", "nan", "shape")
ERRORS = ("raise", "flag", "flag", None, "Flag", "ignore", 1)


def contract_models():
    """A few models of different kinds (the contract does not depend on the numbers)."""
    return [ej.models.load("arm7"), ej.models.load("humanoid"),
            random_tree(4, 3, joints=["ZYX", "revolute", "prismatic", "free:quaternion"])]


def check_call(name, model, seed, kind, errors, B, with_data):
    """One public call as a user may make it; AssertionError when its contract does not hold:
    unknown ``errors`` refused, ``errors="flag"`` always (result, status) (status an int for one
    state, (B,) for a batch), ``"raise"`` (the default) the bare result or a clear error, the
    same numbers on every path."""
    f, reads, key = CONTRACT[name]
    rng = np.random.default_rng(seed)
    n = 1 if B is None else B
    Q, V, A = random_states(model, n, rng)
    q, v, a = (Q[0], V[0], A[0]) if B is None else (Q, V, A)
    ref_err = None
    try:
        ref = key(f(model, q.copy(), v.copy(), a.copy()))
    except ej.SingularJointError as e:
        ref, ref_err = None, e
    args = [q, v, a]
    if kind == "list":
        args = [x.tolist() for x in args]
    elif kind == "nan":
        x = args[0] if model.nq else args[1]
        if x.size == 0 or "qd" not in reads and x is not args[0]:
            kind = "good"
        else:
            x.reshape(-1)[rng.integers(x.size)] = np.nan
    elif kind == "shape":
        args[0] = np.zeros(args[0].shape[:-1] + (model.nq + 1,))
    kw = {} if errors is None else {"errors": errors}
    if with_data:
        kw["data"] = ej.Data(model) if B is None else ej.Data(model, batch=B)
    try:
        got = f(model, *args, **kw)
    except ej.SingularJointError as e:
        assert errors in (None, "raise") and (ref_err is not None or kind == "nan"), f"{name}: {e}"
        return "singular"
    except ValueError as e:
        msg = str(e)
        assert msg, f"{name}: an error must say what is wrong"
        if errors not in (None, "raise", "flag"):
            assert "errors must be" in msg or kind == "shape", f"{name}: {msg}"
            return "refused"
        assert kind in ("nan", "shape") and (kind == "shape" or errors != "flag"), \
            f"{name} ({kind}, errors={errors!r}, B={B}, data={with_data}) raised: {msg}"
        return "error"
    assert errors in (None, "raise", "flag"), f"{name}: errors={errors!r} was accepted"
    assert kind != "shape", f"{name}: a misshapen q was accepted"
    if errors == "flag":
        assert isinstance(got, tuple) and len(got) == 2, \
            f"{name} (errors='flag', {kind}, B={B}, data={with_data}) returned {type(got).__name__}"
        res, status = got
        if B is None:
            assert isinstance(status, int), f"{name}: status of one state is {type(status).__name__}"
            codes = np.array([status])
        else:
            assert isinstance(status, np.ndarray) and status.shape == (B,), f"{name}: status {status!r}"
            codes = status
        if kind == "nan":
            assert np.any(codes == ej.Status.NONFINITE_INPUT), f"{name}: a NaN was not flagged"
            return "flagged"
        if ref is not None and np.all(codes == 0):
            np.testing.assert_array_equal(np.asarray(key(res)), ref)
        return "ok"
    assert not isinstance(got, tuple), f"{name} (errors={errors!r}) returned a tuple"
    assert kind != "nan", f"{name}: a NaN was accepted with errors={errors!r}"
    if ref is not None:
        np.testing.assert_array_equal(np.asarray(key(got)), ref)
    return "ok"


_CONTRACT_MODELS = []


@pytest.mark.parametrize("name", list(CONTRACT))
@SETTINGS
@given(calls=st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2 ** 31), st.sampled_from(KINDS_OF_CALL),
                                st.sampled_from(ERRORS), st.sampled_from([None, None, 1, 3]), st.booleans()),
                      min_size=2, max_size=8))
def test_the_contract_holds_on_every_call(name, calls):
    """Each public function called again and again, good and bad states, one state and batches,
    with and without data=, interleaved: the return type and the refusal of unknown ``errors``
    hold on every call, whichever internal path serves it (the first call and the later ones
    take different paths)."""
    if not _CONTRACT_MODELS:
        _CONTRACT_MODELS.extend(contract_models())
    for m, seed, kind, errors, B, with_data in calls:
        check_call(name, _CONTRACT_MODELS[m], seed, kind, errors, B, with_data)


def test_flag_returns_a_pair_on_the_second_call_too():
    """The case that once slipped: the second good call with errors="flag" took a fast path that
    returned the bare array, and errors="Flag" was accepted after one good call."""
    arm = ej.models.load("arm7")
    q, z = arm.neutral(), np.zeros(7)
    for f, args in ((ej.rnea, (q, z, z)), (ej.nonlinear_effects, (q, z)), (ej.aba, (q, z, z)),
                    (ej.mass_matrix, (q,)), (ej.forward_kinematics, (q,))):
        for _ in range(3):
            res, code = f(arm, *args, errors="flag")
            assert code == 0
            assert not isinstance(f(arm, *args), tuple)
            with pytest.raises(ValueError, match="errors must be"):
                f(arm, *args, errors="Flag")
