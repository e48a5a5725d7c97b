"""Bad input raises ValueError (ej.ModelError for models) with a message naming the culprit;
the model is immutable."""
import re

import numpy as np
import pytest

import ejce_nb as ej
from ejce_nb.model.model import ALIASES, ARRAYS
from ejce_nb.joints import Composite, Rot, Trans
from ejce_nb.joints.fn import Linear, Poly, Spline, Sum, TimePoly

J = ej.joints
I3 = np.diag([0.1, 0.2, 0.25])


def _builder():
    b = ej.ModelBuilder()
    b.add_body("base", joint=J.Revolute((0, 0, 1)), mass=1.0, inertia=I3)
    return b


# ---------------------------------------------------------------------------- model building
def test_unknown_parent_named():
    b = _builder()
    with pytest.raises(ej.ModelError, match=r"body 'arm'.*unknown parent 'shoulder'"):
        b.add_body("arm", parent="shoulder", joint=J.Revolute())
    with pytest.raises(ej.ModelError, match=r"body 'arm'.*parent index 7"):
        b.add_body("arm", parent=7, joint=J.Revolute())
    assert b.add_body("arm", parent="base", joint=J.Revolute()) == 2     # the failures added nothing


def test_duplicate_names():
    b = _builder()
    with pytest.raises(ej.ModelError, match=r"body 'base'.*duplicate"):
        b.add_body("base", joint=J.Revolute())
    b.add_body("arm", joint=J.Revolute(), joint_name="elbow")
    with pytest.raises(ej.ModelError, match=r"body 'hand'.*duplicate joint name 'elbow'"):
        b.add_body("hand", joint=J.Revolute(), joint_name="elbow")


@pytest.mark.parametrize("make, who", [
    (lambda a: J.Revolute(a), "Revolute axis"),
    (lambda a: J.Prismatic(a), "Prismatic axis"),
    (lambda a: J.Helical(a, 0.1), "Helical axis"),
    (lambda a: J.Cylindrical(a), "Cylindrical axis"),
    (lambda a: J.Universal((1, 0, 0), a), "Universal axis2"),
    (lambda a: J.Universal(a, (1, 0, 0)), "Universal axis1"),
    (lambda a: Rot(a, Linear([1.0])), "Rot axis"),
    (lambda a: Trans(a, Linear([1.0])), "Trans axis"),
])
def test_bad_axes(make, who):
    with pytest.raises(ej.ModelError, match=re.escape(who) + r".*zero"):
        make((0.0, 0.0, 0.0))
    with pytest.raises(ej.ModelError, match=re.escape(who) + r".*unit"):
        make((1.0, 1.0, 0.0))
    with pytest.raises(ej.ModelError, match=re.escape(who)):
        make((1.0, np.nan, 0.0))
    make((0.0, 1.0, 0.0) if "axis1" not in who else (0.0, 0.0, 1.0))     # a unit axis is fine


def test_negative_mass():
    b = _builder()
    with pytest.raises(ej.ModelError, match=r"body 'arm'.*mass"):
        b.add_body("arm", joint=J.Revolute(), mass=-0.5, inertia=I3)
    with pytest.raises(ej.ModelError, match=r"body 'arm'.*mass"):
        b.add_body("arm", joint=J.Revolute(), mass=np.nan, inertia=I3)


@pytest.mark.parametrize("inertia, what", [
    ([[0.2, 0.05, 0.0], [0.0, 0.2, 0.0], [0.0, 0.0, 0.2]], "not symmetric"),
    (np.diag([0.2, 0.2, -0.01]), "positive semi-definite"),
    (np.diag([0.1, 0.1, 0.5]), "triangle inequality"),
])
def test_bad_inertia(inertia, what):
    b = _builder()
    with pytest.raises(ej.ModelError, match=r"body 'arm'.*inertia.*" + what):
        b.add_body("arm", joint=J.Revolute(), mass=1.0, inertia=inertia)


def test_valid_inertias_accepted():
    b = _builder()
    b.add_body("massless", joint=J.Revolute(), mass=0.0, inertia=np.zeros((3, 3)))
    b.add_body("rod", joint=J.Revolute(), mass=1.0, inertia=np.diag([0.1, 0.1, 0.0]))   # I1 + I2 >= I3 holds
    b.add_body("slab", joint=J.Revolute(), mass=1.0, inertia=np.diag([0.1, 0.2, 0.3]))   # equality
    assert b.build().nbodies == 4


def test_inconsistent_inertia_only_as_written():
    """The builder refuses a clearly inconsistent inertia unless told it is kept as written (what
    the URDF loader does with a file's, with a warning); malformed tensors are refused anyway."""
    I = np.diag([0.001, 0.001, 0.01])
    b = ej.ModelBuilder()
    with pytest.raises(ej.ModelError, match=r"body 'mount': inertia violates the triangle inequality"):
        b.add_body("mount", joint=J.Revolute(), mass=0.05, inertia=I)
    b.add_body("mount", joint=J.Revolute(), mass=0.05, inertia=I, inertia_as_written=True)
    with pytest.raises(ej.ModelError, match=r"body 'bad': inertia is not symmetric"):
        b.add_body("bad", joint=J.Revolute(), inertia=[[1, 0.5, 0], [0, 1, 0], [0, 0, 1]], inertia_as_written=True)
    with pytest.raises(ej.ModelError, match=r"body 'bad': inertia must be a finite 3x3"):
        b.add_body("bad", joint=J.Revolute(), inertia=np.full((3, 3), np.nan), inertia_as_written=True)
    np.testing.assert_array_equal(b.build().body_inertia[1], I)


def test_inertia_tolerance_is_relative_to_the_scale():
    """A tensor is judged against its own size: a watch part's rounding passes, while the same
    absolute defect on a tiny tensor does not."""
    b = ej.ModelBuilder()
    for k, scale in enumerate((1e-12, 1.0, 1e6)):
        b.add_body(f"rod{k}", joint=J.Revolute(), mass=1.0, inertia=scale * np.diag([0.5, 0.5, 1.0 + 1e-11]))
        b.add_body(f"flat{k}", joint=J.Revolute(), mass=1.0, inertia=scale * np.diag([-1e-11, 1.0, 1.0]))
        with pytest.raises(ej.ModelError, match="triangle inequality"):
            b.add_body("x", joint=J.Revolute(), mass=1.0, inertia=scale * np.diag([0.5, 0.5, 1.0 + 1e-6]))
        with pytest.raises(ej.ModelError, match="positive semi-definite"):
            b.add_body("x", joint=J.Revolute(), mass=1.0, inertia=scale * np.diag([-1e-6, 1.0, 1.0]))
    assert b.build().nbodies == 6


def test_non_orthonormal_placement():
    bad = np.array([[1.0, 0.1, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    with pytest.raises(ej.ModelError, match="rotation.*orthonormal"):
        ej.Transform(rotation=bad)
    with pytest.raises(ej.ModelError, match="rotation.*orthonormal"):
        ej.Transform(rotation=np.diag([1.0, 1.0, -1.0]))         # a reflection
    b = _builder()
    with pytest.raises(ej.ModelError, match=r"body 'arm'.*placement.*orthonormal"):
        b.add_body("arm", joint=J.Revolute(), placement={"rotation": bad, "translation": [0, 0, 0]})
    with pytest.raises(ej.ModelError, match=r"body 'arm'.*child_placement.*orthonormal"):
        b.add_body("arm", joint=J.Revolute(), child_placement={"rotation": bad, "translation": [0, 0, 0]})


def test_bad_spline_knots():
    with pytest.raises(ej.ModelError, match=r"Spline knots x.*strictly increasing"):
        Spline(0, [0.0, 1.0, 1.0, 2.0], [0.0, 1.0, 2.0, 3.0])
    with pytest.raises(ej.ModelError, match=r"Spline knots x.*strictly increasing"):
        Spline(0, [0.0, 2.0, 1.0], [0.0, 1.0, 2.0])
    with pytest.raises(ej.ModelError) as err:
        Spline(0, [0.0, 1.0, 2.0], [0.0, 1.0])
    msg = str(err.value)
    assert msg.startswith("Spline") and "x (3)" in msg and "y (2)" in msg and "length" in msg
    with pytest.raises(ej.ModelError, match=r"Spline.*2 knots"):
        Spline(0, [0.0], [1.0])


def test_composite_reading_a_missing_coordinate():
    with pytest.raises(ej.ModelError, match=r"Composite motion 1 reads coordinate 2 but nq = 2"):
        Composite([Rot((0, 0, 1), Linear([1.0])), Trans((1, 0, 0), Poly(2, [0.0, 1.0]))], nq=2)
    with pytest.raises(ej.ModelError, match=r"Composite motion 0 reads coordinate 1 but nq = 1"):
        Composite([Rot((0, 0, 1), Sum(TimePoly([0.0, 1.0]), Spline(1, [0, 1], [0, 1])))], nq=1)
    with pytest.raises(ej.ModelError, match=r"Composite motion 0.*Linear has 3 coeffs but nq = 2"):
        Composite([Rot((0, 0, 1), Linear([1.0, 0.0, 0.0]))], nq=2)
    with pytest.raises(ej.ModelError, match=r"Composite motion 0 reads coordinate 0 but nq = 0"):
        Composite([Rot((0, 0, 1), Linear([1.0]))], nq=0)


def test_unknown_rotation_parameterisation():
    with pytest.raises(ej.ModelError, match=r"Spherical param 'ZZX'"):
        J.Spherical("ZZX")
    with pytest.raises(ej.ModelError, match=r"Spherical param 'Zyx'"):
        J.Spherical("Zyx")                       # mixed case is neither intrinsic nor extrinsic
    with pytest.raises(ej.ModelError, match=r"Free param 'euler'"):
        J.Free("euler")


# ---------------------------------------------------------------------------- state arrays
@pytest.fixture(scope="module")
def model():
    b = ej.ModelBuilder()
    b.add_body("a", joint=J.Revolute((0, 0, 1)), mass=1.0, inertia=I3)
    b.add_body("ball", parent="a", joint=J.Spherical("quaternion"), joint_name="shoulder",
               mass=1.0, inertia=I3, placement=ej.Transform(translation=(0, 0, 0.5)))
    b.add_body("c", parent="ball", joint=J.Prismatic((1, 0, 0)), mass=1.0, inertia=I3)
    return b.build()


def _good(model):
    q = np.array([0.3, 1.0, 0.0, 0.0, 0.0, 0.2])
    return q, np.zeros(model.nv), np.zeros(model.nv)


CALLS = {
    "forward_kinematics": lambda m, q, qd, qdd, t: ej.forward_kinematics(m, q, qd, qdd, t=t),
    "joint_terms": lambda m, q, qd, qdd, t: ej.joint_terms(m, q, qd, t=t),
    "body_jacobian": lambda m, q, qd, qdd, t: ej.body_jacobian(m, q, 2, t=t),
}


@pytest.mark.parametrize("call", list(CALLS))
def test_nan_or_misshapen_q_named(model, call):
    f = CALLS[call]
    q, qd, qdd = _good(model)
    f(model, q, qd, qdd, 0.0)
    for bad in (np.where(np.arange(6) == 0, np.nan, q), np.where(np.arange(6) == 5, np.inf, q),
                q[:5], np.zeros((2, 3, 6)), "abc"):
        with pytest.raises(ValueError, match=r"^q\b"):
            f(model, bad, qd, qdd, 0.0)
    for t in (np.nan, np.inf, np.zeros(3)):
        with pytest.raises(ValueError, match=r"^t\b"):
            f(model, q, qd, qdd, t)


@pytest.mark.parametrize("call", ["forward_kinematics", "joint_terms"])
def test_nan_or_misshapen_velocities_named(model, call):
    f = CALLS[call]
    q, qd, qdd = _good(model)
    # (a batch of velocities for a single q must not be silently cut to its first row)
    for bad in (np.full(model.nv, np.nan), np.zeros(model.nv + 1), np.zeros((3, model.nv))):
        with pytest.raises(ValueError, match=r"^qd\b"):
            f(model, q, bad, qdd, 0.0)


def test_nan_or_misshapen_accelerations_named(model):
    q, qd, qdd = _good(model)
    for bad in (np.where(np.arange(model.nv) == 2, np.nan, qdd), np.zeros(model.nv - 1)):
        with pytest.raises(ValueError, match=r"^qdd\b"):
            ej.forward_kinematics(model, q, qd, bad)
    with pytest.raises(ValueError, match=r"qdd"):
        ej.forward_kinematics(model, q, None, qdd)          # accelerations need velocities


def test_batch_shape_mismatches_named(model):
    q, qd, qdd = _good(model)
    Q = np.tile(q, (4, 1))
    with pytest.raises(ValueError, match=r"^qd\b.*batch"):
        ej.forward_kinematics(model, Q, np.zeros((3, model.nv)))
    with pytest.raises(ValueError, match=r"^qd\b"):
        ej.forward_kinematics(model, Q, qd)                  # qd without the batch axis
    with pytest.raises(ValueError, match=r"^t\b"):
        ej.forward_kinematics(model, Q, t=np.zeros(3))
    with pytest.raises(ValueError, match=r"^q\b"):
        ej.forward_kinematics(model, np.zeros((0, model.nq)))
    ej.forward_kinematics(model, Q, np.tile(qd, (4, 1)), t=np.zeros(4))     # consistent: fine


def test_quaternion_far_from_unit_names_the_joint(model):
    q, qd, qdd = _good(model)
    for scale in (2.0, 0.5, 0.0):
        bad = q.copy()
        bad[1:5] *= scale
        for call in CALLS.values():
            with pytest.raises(ValueError, match=r"shoulder"):
                call(model, bad, qd, qdd, 0.0)
    # in a batch the offending sample is found too
    Q = np.tile(q, (3, 1))
    Q[2, 1:5] = [3.0, 0.0, 0.0, 0.0]
    with pytest.raises(ValueError, match=r"shoulder.*sample 2"):
        ej.forward_kinematics(model, Q)
    near = q.copy()
    near[1:5] = [1.0 + 1e-6, 0.0, 0.0, 0.0]                # round-off away from unit: accepted
    ej.forward_kinematics(model, near)


def test_unknown_body_in_body_jacobian(model):
    q, _, _ = _good(model)
    with pytest.raises(ValueError, match=r"'nope'"):
        ej.body_jacobian(model, q, "nope")
    with pytest.raises(ValueError, match=r"\b9\b"):
        ej.body_jacobian(model, q, 9)


def test_bad_frame_argument(model):
    q, _, _ = _good(model)
    with pytest.raises(ValueError, match=r"frame.*'world'"):
        ej.joint_terms(model, q, frame="world")


# ---------------------------------------------------------------------------- immutability
def test_model_is_immutable(model):
    with pytest.raises(AttributeError):
        model.nq = 3
    with pytest.raises(AttributeError):
        model.parent = np.array([-1, 0, 0, 0])
    with pytest.raises(AttributeError):
        model.new_attribute = 1
    arrays = [n for n in ARRAYS if isinstance(getattr(model, n, None), np.ndarray)]
    assert {"body_parent", "jnt_type", "jnt_qadr", "jnt_dofadr", "jnt_params", "joint_P_rot", "body_mass",
            "body_inertia", "gravity"} <= set(arrays)
    # the names of API.md are the same arrays
    assert {"parent", "jtype", "q_start", "nq_joint", "v_start", "nv_joint", "joint_param_adr",
            "joint_params"} == set(ALIASES)
    for short, name in ALIASES.items():
        assert getattr(model, short) is getattr(model, name), short
    for name in arrays + list(ALIASES):
        arr = getattr(model, name)
        assert not arr.flags.writeable, name
        if arr.size:
            with pytest.raises(ValueError):
                arr.flat[0] = 1.0


def test_model_does_not_alias_or_expose_mutable_spec_arrays():
    """Arrays the user passed to joint specs are copied, and the specs a model holds (which its
    JSON form is written from) cannot be written either."""
    ax = np.array([0.0, 0.0, 1.0])
    xs, ys = np.array([0.0, 1.0, 2.0]), np.array([0.0, 0.5, 0.2])
    coeffs = np.array([0.0, 1.0])
    b = ej.ModelBuilder()
    b.add_body("a", joint=J.Revolute(ax), mass=1.0, inertia=I3)
    b.add_body("k", parent="a", joint=Composite([Rot(ax, Linear(coeffs[1:])), Trans((1, 0, 0), Spline(0, xs, ys)),
                                                 Rot((0, 1, 0), Poly(0, coeffs))], nq=1), mass=1.0, inertia=I3)
    model = b.build()
    text = model.to_json()
    ax[:] = [1.0, 0.0, 0.0]
    xs[:] = [5.0, 6.0, 7.0]
    coeffs[:] = 3.0
    assert model.to_json() == text
    spec = model.joint_specs[1]
    with pytest.raises(ValueError):
        spec.axis[0] = 0.5
    for m in model.joint_specs[2].motions:
        with pytest.raises(ValueError):
            m.axis[0] = 0.5
    spline = model.joint_specs[2].motions[1].f
    for arr in (spline.x, spline.y):
        with pytest.raises(ValueError):
            arr[0] = 9.0
    assert model.to_json() == text


def test_dynamics_reject_mixed_batch_axes():
    b = ej.ModelBuilder()
    b.add_body("a", joint=ej.joints.Revolute((0, 0, 1)), mass=1.0, inertia=np.eye(3))
    b.add_body("c", parent="a", joint=ej.joints.Revolute((0, 1, 0)), mass=1.0, inertia=np.eye(3))
    m = b.build()
    z1, z3 = np.zeros(2), np.zeros((3, 2))
    with pytest.raises(ValueError, match="qd has a batch axis"):
        ej.rnea(m, z1, z3, z1)
    with pytest.raises(ValueError, match="qd has no batch axis"):
        ej.rnea(m, z3, z1, z3)
    with pytest.raises(ValueError, match="tau has batch size 4"):
        ej.aba(m, z3, z3, np.zeros((4, 2)))
    with pytest.raises(ValueError, match="qd has a batch axis"):
        ej.nonlinear_effects(m, z1, z3)
