"""The JSON model format: exact round trips of every joint kind and of the shipped models, and
errors that name the path of the offending value in the file."""
import copy
import json
import re

import numpy as np
import pytest

import ejce_nb as ej
from conftest import assert_same_model
from ejce_nb import models
from ejce_nb.joints import codes


J = ej.joints


def random_state(m, seed):
    rng = np.random.default_rng(seed)
    q = rng.uniform(-1.5, 1.5, size=m.nq)
    for _, sl in m.quaternion_blocks():
        q[sl] /= np.linalg.norm(q[sl])
    return q, rng.normal(size=m.nv), rng.normal(size=m.nv), float(rng.uniform(0.0, 2.0))


def assert_same_kinematics(a, b, seed=0):
    q, qd, qdd, t = random_state(a, seed)
    ka = ej.forward_kinematics(a, q, qd, qdd, t=t)
    kb = ej.forward_kinematics(b, q, qd, qdd, t=t)
    for field in ("R", "p", "omega", "v", "alpha", "a"):
        np.testing.assert_array_equal(getattr(ka, field), getattr(kb, field), err_msg=field)


# ------------------------------------------------------------------------------ round trips
@pytest.mark.parametrize("name", sorted(models.SHIPPED))
def test_shipped_models_round_trip(name, tmp_path):
    m = models.load(name)
    path = tmp_path / f"{name}.json"
    assert m.to_json(path) is None
    back = ej.Model.from_json(path)
    assert_same_model(m, back)
    assert back.to_json() == m.to_json()
    assert_same_kinematics(m, back)


@pytest.mark.parametrize("seed", range(6))
def test_random_models_round_trip(seed):
    m = models.random_tree(25, seed, limits=True)
    back = ej.Model.from_json(m.to_json())
    assert_same_model(m, back)
    assert_same_kinematics(m, back, seed)


def test_random_models_cover_every_joint_kind_and_function():
    kinds, fns, params = set(), set(), set()
    for seed in range(6):
        m = models.random_tree(25, seed, limits=True)
        kinds |= set(m.jtype[1:].tolist())
        for s in m.joint_specs:
            if isinstance(s, J.Spherical):
                params.add("euler" if s.param.upper() in J.EULER_SEQUENCES else s.param)
            if isinstance(s, J.Composite):
                for mo in s.motions:
                    parts = mo.f.parts if isinstance(mo.f, ej.fn.Sum) else [mo.f]
                    fns |= {type(p).__name__ for p in parts} | {type(mo.f).__name__}
        assert np.any(np.isfinite(m.q_lower)) and np.any(np.isinf(m.q_lower))
    # user-defined joints: test_user_joints; Ellipsoid: below
    assert kinds == set(codes.NAMES) - {codes.CUSTOM, codes.ELLIPSOID}
    assert fns == {"Linear", "Poly", "Spline", "TimePoly", "Harmonic", "Sum"}
    assert params == {"euler", "quaternion", "rotvec", "rodrigues", "mrp"}


def test_ellipsoid_and_multivariate_functions_round_trip():
    b = ej.ModelBuilder()
    b.add_body("a", joint=J.Ellipsoid((0.1, 0.2, 0.3)), mass=1.0, inertia=np.eye(3) * 0.01)
    b.add_body("b", parent="a", joint=J.Composite([J.Rot((0, 0, 1), ej.fn.Linear([1.0])), J.Trans(
        (1, 0, 0), ej.fn.MultiPoly([0, 1], [[1, 1], [0, 2]], [0.2, -0.1])), J.Rot((0, 1, 0), ej.fn.Spline(
            "t", [0.0, 1.0, 2.0], [0.0, 0.3, 0.1]))], 2), mass=1.0, inertia=np.eye(3) * 0.01)
    m = b.build()
    back = ej.Model.from_json(m.to_json())
    assert back.joint_specs == m.joint_specs
    q, v, a = np.array([0.1, -0.2, 0.3, 0.4, -0.5]), np.ones(5), np.zeros(5)
    assert np.array_equal(ej.rnea(back, q, v, a, t=0.7), ej.rnea(m, q, v, a, t=0.7))


def test_every_rotation_parameterisation_round_trips():
    b = ej.ModelBuilder()
    parent = "world"
    for k, param in enumerate(models.ROTATION_PARAMS):
        cls = J.Free if k % 2 else J.Spherical
        b.add_body(f"b{k}", parent=parent, joint=cls(param), mass=1.0, inertia=np.eye(3) * 0.1,
                   placement=ej.Transform(translation=(0.1, 0.0, 0.0)))
        parent = f"b{k}"
    m = b.build()
    back = ej.Model.from_json(m.to_json())
    assert_same_model(m, back)
    assert_same_kinematics(m, back, 3)


def test_mimic_and_limits_round_trip():
    b = ej.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    b.add_body("a", joint=J.Revolute(), q_lower=[-1.0], q_upper=[None], v_limit=[2.0])
    b.add_body("b", parent="a", joint=J.Prismatic((1.0, 0.0, 0.0)), mimic=("a_joint", 0.25, -0.5))
    b.add_body("c", parent="b", joint=J.Helical((0.0, 1.0, 0.0), 0.3), effort_limit=[7.0])
    m = b.build()
    d = json.loads(m.to_json())
    assert d["bodies"][1]["mimic"] == {"joint": "a_joint", "multiplier": 0.25, "offset": -0.5}
    assert d["bodies"][0]["limits"] == {"q_lower": [-1.0], "v_limit": [2.0]}
    back = ej.Model.from_dict(d)
    assert_same_model(m, back)
    assert back.joint_mimic.tolist() == [-1, -1, 1, -1]


def test_json_text_is_readable():
    text = models.knee().to_json()
    assert text.startswith('{\n "format": "ejce_nb.model",\n "version": 1,')
    assert '"com": [0.0, -0.17, 0.0],' in text                 # vectors on one line
    assert '"inertia": [[0.1339, 0.0, 0.0], [0.0, 0.0351, 0.0], [0.0, 0.0, 0.1412]]' in text
    assert json.loads(text) == models.knee().to_dict()


def test_minimal_document_uses_defaults():
    m = ej.Model.from_json('{"bodies": [{"name": "pendulum", "joint": {"type": "Revolute", "axis": [0, 1, 0]}, '
                           '"mass": 1, "com": [0, 0, -1]}], "description": "a one-line pendulum"}')
    assert m.nbodies == 1 and m.joint_names[1] == "pendulum_joint"
    np.testing.assert_array_equal(m.gravity, [0.0, 0.0, -9.81])
    np.testing.assert_array_equal(m.joint_P_rot[1], np.eye(3))
    np.testing.assert_array_equal(m.body_inertia[1], np.zeros((3, 3)))


# ------------------------------------------------------------------------------ errors
def edit(doc, path, value=None, delete=False):
    """A copy of ``doc`` with the value at ``path`` ("bodies[3].joint.axis") replaced or deleted."""
    doc = copy.deepcopy(doc)
    keys = [int(k) if k.isdigit() else k for k in re.findall(r"[^.\[\]]+", path)]
    node = doc
    for k in keys[:-1]:
        node = node[k]
    if delete:
        del node[keys[-1]]
    else:
        node[keys[-1]] = value
    return doc


HUMANOID = models.humanoid().to_dict()      # bodies[1] torso (Universal), [2] head (ZYX), [4] l_forearm
KNEE = models.knee().to_dict()              # bodies[1] tibia: Composite, spline, spline, rotation
DRIVEN = models.driven().to_dict()
SMALL = {"bodies": [{"name": "a", "joint": {"type": "Revolute"}},
                    {"name": "b", "parent": "a", "joint": {"type": "Revolute"}},
                    {"name": "c", "parent": "a", "joint": {"type": "Spherical"}}]}

ERRORS = [
    (HUMANOID, "bodies[4].joint.axis", [1, 1, 0], r"bodies\[4\]\.joint\.axis: Revolute axis must be a unit vector"),
    (HUMANOID, "bodies[4].joint.axis", "up", r"bodies\[4\]\.joint\.axis: expected a number or a list of numbers, got 'up' \(a string\)"),
    (HUMANOID, "bodies[4].joint.axis", [0, 1, 0, 0], r"bodies\[4\]\.joint\.axis: Revolute axis must be 3 finite numbers"),
    (HUMANOID, "bodies[4].joint.axis", [0, 0, 0], r"bodies\[4\]\.joint\.axis: .*zero vector"),
    (HUMANOID, "bodies[4].joint.type", "Hinge", r"bodies\[4\]\.joint\.type: unknown joint type 'Hinge'"),
    (HUMANOID, "bodies[4].joint.type", ["Revolute"], r"bodies\[4\]\.joint\.type: unknown joint type"),
    (HUMANOID, "bodies[4].joint", "Revolute", r"bodies\[4\]\.joint: expected an object with a 'type'"),
    (HUMANOID, "bodies[4].joint.axes", [0, 1, 0], r"bodies\[4\]\.joint: bad fields for Revolute"),
    (HUMANOID, "bodies[2].joint.param", "ZZZ", r"bodies\[2\]\.joint\.param: Spherical param 'ZZZ' unknown"),
    (HUMANOID, "bodies[0].joint.param", 4, r"bodies\[0\]\.joint\.param: Free param must be a string"),
    (HUMANOID, "bodies[1].joint.axis2", [0, 1, 0], r"bodies\[1\]\.joint: Universal axis1 and axis2 are parallel"),
    (HUMANOID, "bodies[4].mass", -2, r"bodies\[4\]\.mass: body 'l_forearm': mass must be finite and non-negative"),
    (HUMANOID, "bodies[4].mass", "heavy", r"bodies\[4\]\.mass: expected a number, got 'heavy' \(a string\)"),
    (HUMANOID, "bodies[4].inertia", [[1, 0, 0], [0, 1, 0], [0, 0, 3]], r"bodies\[4\]\.inertia: .*triangle inequality"),
    (HUMANOID, "bodies[4].inertia", [[1, 2, 0], [0, 1, 0], [0, 0, 1]], r"bodies\[4\]\.inertia: .*not symmetric"),
    (HUMANOID, "bodies[4].inertia", [[1, 0], [0, 1]], r"bodies\[4\]\.inertia: .*3x3"),
    (HUMANOID, "bodies[4].com", [0, 0], r"bodies\[4\]\.com: .*com must be 3 finite numbers"),
    (HUMANOID, "bodies[4].com", [0, None, 0], r"bodies\[4\]\.com\[1\]: expected a number .*got None \(null\)"),
    (HUMANOID, "bodies[4].parent", "nobody", r"bodies\[4\]\.parent: .*unknown parent 'nobody'"),
    (HUMANOID, "bodies[4].parent", "l_hand", r"bodies\[4\]\.parent: .*a parent must be added before its children"),
    (HUMANOID, "bodies[4].parent", 99, r"bodies\[4\]\.parent: .*parent index 99 does not exist"),
    (HUMANOID, "bodies[4].name", "torso", r"bodies\[4\]\.name: body 'torso': duplicate body name"),
    (HUMANOID, "bodies[4].name", "", r"bodies\[4\]\.name: body name must be a non-empty string"),
    (HUMANOID, "bodies[4].joint_name", "neck", r"bodies\[4\]\.joint_name: .*duplicate joint name 'neck'"),
    (HUMANOID, "bodies[4].placement.rotation", [[1, 0, 0], [0, 1, 0], [0, 0, -1]],
     r"bodies\[4\]\.placement\.rotation is not a proper orthonormal rotation"),
    (HUMANOID, "bodies[4].placement.translation", [0, "a", 0],
     r"bodies\[4\]\.placement\.translation\[1\]: expected a number .*\(a string\)"),
    (HUMANOID, "bodies[4].placement.translation", [0, 0], r"bodies\[4\]\.placement\.translation must be 3"),
    (HUMANOID, "bodies[4].placement.shift", [0, 0, 0], r"bodies\[4\]\.placement: unknown fields \['shift'\]"),
    (HUMANOID, "bodies[4].child_placement", 5, r"bodies\[4\]\.child_placement: expected an object"),
    (HUMANOID, "bodies[4].limits.q_lower", [0, 1], r"bodies\[4\]\.limits\.q_lower: .*must be 1 numbers"),
    (HUMANOID, "bodies[4].limits.q_lower", [3.0], r"bodies\[4\]\.limits\.q_lower: .*exceeds q_upper"),
    (HUMANOID, "bodies[4].limits.q_upper", {"a": 1}, r"bodies\[4\]\.limits\.q_upper: expected a list of one number or null"),
    (HUMANOID, "bodies[4].limits.lower", [0], r"bodies\[4\]\.limits: unknown fields \['lower'\]"),
    (HUMANOID, "bodies[4].limits", [0], r"bodies\[4\]\.limits: expected an object"),
    (HUMANOID, "bodies[4].mimic", "l_shoulder", r"bodies\[4\]\.limits: .*a mimic joint has no coordinate of its own"),
    (HUMANOID, "bodies[2].mimic", "l_elbow", r"bodies\[2\]\.mimic: .*only a one-coordinate joint can mimic"),
    (HUMANOID, "bodies[4].colour", "red", r"bodies\[4\]: unknown fields \['colour'\]"),
    (HUMANOID, "bodies[4].joint", None, r"bodies\[4\]\.joint: expected an object"),
    (HUMANOID, "bodies[4]", 7, r"bodies\[4\]: expected an object"),
    (HUMANOID, "gravity", [0, 0], r"gravity: gravity must be 3 finite numbers"),
    (HUMANOID, "version", 2, r"version: this ejce_nb reads version 1"),
    (HUMANOID, "format", "urdf", r"format: expected 'ejce_nb.model'"),
    (HUMANOID, "bodies", {}, r"bodies: expected a list"),
    (HUMANOID, "joints", [], r"unknown top-level fields \['joints'\]"),
    (SMALL, "bodies[1].mimic", {"joint": "nope"}, r"bodies\[1\]\.mimic: .*no joint named 'nope'"),
    (SMALL, "bodies[1].mimic", {"joint": "c_joint"}, r"bodies\[1\]\.mimic: .*no single coordinate to follow"),
    (SMALL, "bodies[1].mimic", {"joint": "a_joint", "gain": 2}, r"bodies\[1\]\.mimic: .*mimic must have 'joint'"),
    (SMALL, "bodies[1].mimic", ["a_joint", "x"], r"bodies\[1\]\.mimic\[1\]: expected a number, got 'x'"),
    (SMALL, "bodies[1].mimic", ["a_joint", 1, 2, 3], r"bodies\[1\]\.mimic: .*mimic must be a joint name"),
    (KNEE, "bodies[1].joint.motions[0].f.x", [1, 0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
     r"bodies\[1\]\.joint\.motions\[0\]\.f\.x: Spline knots x must be strictly increasing"),
    (KNEE, "bodies[1].joint.motions[0].f.y", [0, 1],
     r"bodies\[1\]\.joint\.motions\[0\]\.f\.y: Spline values y \(2\) and knots x \(12\)"),
    (KNEE, "bodies[1].joint.motions[1].axis", [0, 0, 0],
     r"bodies\[1\]\.joint\.motions\[1\]\.axis: Trans axis is the zero"),
    (KNEE, "bodies[1].joint.motions[2].f.type", "Exp",
     r"bodies\[1\]\.joint\.motions\[2\]\.f\.type: unknown function 'Exp'"),
    (KNEE, "bodies[1].joint.motions[2].f.coeffs", [0, 1],
     r"bodies\[1\]\.joint\.motions\[2\]: Composite motion 2 reads coordinate 1"),
    (KNEE, "bodies[1].joint.motions[2].f.coeffs", "one",
     r"bodies\[1\]\.joint\.motions\[2\]\.f\.coeffs: expected a number or a list of numbers, got 'one'"),
    (KNEE, "bodies[1].joint.motions[2].f.coeffs", [[1.0]],
     r"bodies\[1\]\.joint\.motions\[2\]\.f\.coeffs: Linear coeffs must be a 1-d list"),
    (KNEE, "bodies[1].joint.motions[0].f.coord", -1, r"bodies\[1\]\.joint\.motions\[0\]\.f\.coord: Spline coord"),
    (KNEE, "bodies[1].joint.nq", 0,
     r"bodies\[1\]\.joint\.motions\[0\]: Composite motion 0 reads coordinate 0 but nq = 0"),
    (KNEE, "bodies[1].joint.nq", -1, r"bodies\[1\]\.joint\.nq: Composite nq must be a non-negative integer"),
    (KNEE, "bodies[1].joint.motions[0].type", "Twist",
     r"bodies\[1\]\.joint\.motions\[0\]\.type: expected 'Rot' or 'Trans'"),
    (KNEE, "bodies[1].joint.motions", {}, r"bodies\[1\]\.joint\.motions: expected a list"),
    (DRIVEN, "bodies[0].joint.motions[0].f.amplitude", "big",
     r"bodies\[0\]\.joint\.motions\[0\]\.f\.amplitude: expected a number, got 'big' \(a string\)"),
    (DRIVEN, "bodies[0].joint.motions[0].f.amplitude", [1.0, 2.0],
     r"bodies\[0\]\.joint\.motions\[0\]\.f\.amplitude: expected a number, got \[1\.0, 2\.0\] \(an array\)"),
    (DRIVEN, "bodies[1].joint.motions[0].f.coeffs", [],
     r"bodies\[1\]\.joint\.motions\[0\]\.f\.coeffs: TimePoly coeffs must not be empty"),
]


@pytest.mark.parametrize("doc, path, value, message", ERRORS, ids=[f"{e[1]}={e[2]!r}"[:60] for e in ERRORS])
def test_errors_name_the_path(doc, path, value, message):
    with pytest.raises(ej.ModelError, match=r"^model\.json: " + message):
        ej.Model.from_dict(edit(doc, path, value), "model.json")


@pytest.mark.parametrize("path, message", [("bodies[4].joint", r"bodies\[4\]\.joint is missing"),
                                           ("bodies[4].name", r"bodies\[4\]\.name is missing")])
def test_missing_fields(path, message):
    with pytest.raises(ej.ModelError, match=r"^model\.json: " + message):
        ej.Model.from_dict(edit(HUMANOID, path, delete=True), "model.json")


def test_file_errors_name_the_file(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(edit(HUMANOID, "bodies[3].joint.param", "QQQ")))
    with pytest.raises(ej.ModelError, match=rf"^{re.escape(str(path))}: bodies\[3\]\.joint\.param"):
        ej.Model.from_json(path)
    path.write_text('{"bodies": [')
    with pytest.raises(ej.ModelError, match="not valid JSON"):
        ej.Model.from_json(path)
    with pytest.raises(ej.ModelError, match="cannot read model file"):
        ej.Model.from_json(tmp_path / "missing.json")
    with pytest.raises(ej.ModelError, match="top level must be an object"):
        ej.Model.from_dict([1, 2])


# ------------------------------------------------------------------------------ strict numbers
BASE = {"bodies": [{"name": "a", "joint": {"type": "Revolute", "axis": [0, 1, 0]}, "mass": 1.0,
                    "com": [0, 0, -0.5], "inertia": [[0.1, 0, 0], [0, 0.1, 0], [0, 0, 0.01]],
                    "limits": {"q_lower": [-1], "q_upper": [1]}},
                   {"name": "b", "parent": "a", "joint": {"type": "Helical", "axis": [1, 0, 0], "pitch": 0.1},
                    "placement": {"translation": [0, 0, -1]}, "mimic": ["a_joint", 2, 0.5]},
                   {"name": "c", "parent": "a", "joint": {"type": "Composite", "nq": 1, "motions": [
                       {"type": "Rot", "axis": [0, 0, 1], "f": {"type": "Sum", "parts": [
                           {"type": "Linear", "coeffs": [1], "offset": 0},
                           {"type": "Harmonic", "amplitude": 0.1, "omega": 2, "phase": 0}]}},
                       {"type": "Trans", "axis": [1, 0, 0], "f": {"type": "Spline", "coord": 0, "x": [0, 1, 2],
                                                                   "y": [0, 0.1, 0]}}]}}]}

NOT_NUMBERS = [
    ("bodies[0].mass", "1.0", r"bodies\[0\]\.mass: expected a number, got '1\.0' \(a string\)"),
    ("bodies[0].mass", True, r"bodies\[0\]\.mass: expected a number, got True \(a boolean\)"),
    ("bodies[0].mass", None, r"bodies\[0\]\.mass: expected a number, got None \(null\)"),
    ("bodies[0].mass", [1.0], r"bodies\[0\]\.mass: expected a number, got \[1\.0\] \(an array\)"),
    ("bodies[0].mass", 10 ** 400, r"bodies\[0\]\.mass: the integer 1000.* is too large for a float"),
    ("bodies[0].joint.axis", ["0", "1", "0"], r"bodies\[0\]\.joint\.axis\[0\]: expected a number .*'0' \(a string\)"),
    ("bodies[0].joint.axis", [0, True, 0], r"bodies\[0\]\.joint\.axis\[1\]: .*\(a boolean\)"),
    ("bodies[0].joint.axis", None, r"bodies\[0\]\.joint\.axis: .*got None \(null\)"),
    ("bodies[0].com", [0, 0, "-0.5"], r"bodies\[0\]\.com\[2\]: .*\(a string\)"),
    ("bodies[0].com", "0 0 -0.5", r"bodies\[0\]\.com: .*\(a string\)"),
    ("bodies[0].inertia", [[0.1, 0, 0], [0, "0.1", 0], [0, 0, 0.01]], r"bodies\[0\]\.inertia\[1\]\[1\]: .*\(a string\)"),
    ("bodies[0].inertia", [[0.1, 0, 0], [0, {"v": 1}, 0], [0, 0, 0.01]], r"bodies\[0\]\.inertia\[1\]\[1\]: .*\(an object\)"),
    ("bodies[0].limits.q_lower", ["-1"], r"bodies\[0\]\.limits\.q_lower\[0\]: expected a number \(or null\), got '-1' \(a string\)"),
    ("bodies[0].limits.q_lower", [False], r"bodies\[0\]\.limits\.q_lower\[0\]: .*\(a boolean\)"),
    ("bodies[0].limits.q_lower", -1, r"bodies\[0\]\.limits\.q_lower: expected a list of one number or null per coordinate"),
    ("bodies[0].limits", 0, r"bodies\[0\]\.limits: expected an object, got 0"),
    ("bodies[0].limits", [], r"bodies\[0\]\.limits: expected an object, got \[\]"),
    ("bodies[0].limits", None, r"bodies\[0\]\.limits: expected an object, got None"),
    ("bodies[0].inertia_as_written", 1, r"bodies\[0\]\.inertia_as_written: expected true or false"),
    ("bodies[1].joint.pitch", "0.1", r"bodies\[1\]\.joint\.pitch: expected a number, got '0\.1'"),
    ("bodies[1].joint.pitch", [0.1], r"bodies\[1\]\.joint\.pitch: expected a number, got \[0\.1\] \(an array\)"),
    ("bodies[1].placement.translation", [0, 0, "-1"], r"bodies\[1\]\.placement\.translation\[2\]: .*\(a string\)"),
    ("bodies[1].placement.rotation", [[1, 0, 0], [0, 1, 0], [0, 0, True]], r"bodies\[1\]\.placement\.rotation\[2\]\[2\]: "),
    ("bodies[1].placement", None, r"bodies\[1\]\.placement: expected an object"),
    ("bodies[1].mimic", ["a_joint", "2", 0.5], r"bodies\[1\]\.mimic\[1\]: expected a number, got '2'"),
    ("bodies[1].mimic", {"joint": "a_joint", "offset": False}, r"bodies\[1\]\.mimic\.offset: .*\(a boolean\)"),
    ("bodies[1].mimic", None, r"bodies\[1\]\.mimic: expected a joint name or an object"),
    ("bodies[1].parent", None, r"bodies\[1\]\.parent: expected a name, got null"),
    ("bodies[1].joint_name", None, r"bodies\[1\]\.joint_name: expected a name, got null"),
    ("bodies[2].joint.nq", 1.0, r"bodies\[2\]\.joint\.nq: Composite nq must be a non-negative integer, got 1\.0"),
    ("bodies[2].joint.nq", True, r"bodies\[2\]\.joint\.nq: Composite nq must be a non-negative integer"),
    ("bodies[2].joint.motions[0].axis", [0, 0, "1"], r"bodies\[2\]\.joint\.motions\[0\]\.axis\[2\]: "),
    ("bodies[2].joint.motions[0].colour", "red", r"bodies\[2\]\.joint\.motions\[0\]: unknown fields \['colour'\]"),
    ("bodies[2].joint.motions[0].f.parts[0].coeffs", ["1"], r"motions\[0\]\.f\.parts\[0\]\.coeffs\[0\]: "),
    ("bodies[2].joint.motions[0].f.parts[0].offset", "0", r"motions\[0\]\.f\.parts\[0\]\.offset: expected a number"),
    ("bodies[2].joint.motions[0].f.parts[1].omega", True, r"motions\[0\]\.f\.parts\[1\]\.omega: .*\(a boolean\)"),
    ("bodies[2].joint.motions[1].f.coord", 0.0, r"motions\[1\]\.f\.coord: Spline coord must be a non-negative coordinate"),
    ("bodies[2].joint.motions[1].f.coord", False, r"motions\[1\]\.f\.coord: Spline coord must be a non-negative coordinate"),
    ("bodies[2].joint.motions[1].f.x", [0, "1", 2], r"motions\[1\]\.f\.x\[1\]: "),
    ("bodies[2].joint.motions[1].f.y", [0, 0.1, None], r"motions\[1\]\.f\.y\[2\]: .*\(null\)"),
    ("gravity", [0, 0, "-9.81"], r"gravity\[2\]: expected a number"),
    ("gravity", [0, 0, False], r"gravity\[2\]: .*\(a boolean\)"),
    ("version", 1.0, r"version: this ejce_nb reads version 1, got 1\.0"),
    ("version", True, r"version: this ejce_nb reads version 1, got True"),
    ("description", 7, r"description: expected a string"),
]


def test_base_document_loads():
    m = ej.Model.from_dict(BASE)
    assert (m.nq, m.nv) == (2, 2) and m.has_mimic and m.rheonomic
    # ints are numbers as good as floats
    assert m.body_mass[1] == 1.0 and m.joint_mimic_multiplier[2] == 2.0


@pytest.mark.parametrize("path, value, message", NOT_NUMBERS, ids=[f"{p}={v!r}"[:60] for p, v, _ in NOT_NUMBERS])
def test_numbers_must_be_numbers(path, value, message):
    with pytest.raises(ej.ModelError, match=r"^robot\.json: .*" + message):
        ej.Model.from_dict(edit(BASE, path, value), "robot.json")


def test_numbers_must_be_numbers_in_files(tmp_path):
    """The same through the file reader, including what only JSON text can hold."""
    path = tmp_path / "robot.json"
    for text, message in (('{"bodies": [{"name": "a", "joint": {"type": "Revolute"}, "mass": "1.0"}]}',
                           r"bodies\[0\]\.mass: expected a number, got '1\.0'"),
                          ('{"bodies": [{"name": "a", "joint": {"type": "Revolute"}, "mass": true}]}',
                           r"bodies\[0\]\.mass: expected a number, got True"),
                          ('{"bodies": [{"name": "a", "joint": {"type": "Revolute", "axis": ["0", "0", "1"]}}]}',
                           r"bodies\[0\]\.joint\.axis\[0\]: expected a number"),
                          ('{"bodies": [{"name": "a", "joint": {"type": "Revolute"}, "mass": NaN}]}',
                           r"bodies\[0\]\.mass: body 'a': mass must be finite"),
                          ('{"bodies": [{"name": "a", "joint": {"type": "Revolute"}, "com": [0, 0, Infinity]}]}',
                           r"bodies\[0\]\.com: body 'a': com must be 3 finite numbers"),
                          ('{"bodies": [{"name": "a", "joint": {"type": "Revolute"}, "mass": 1' + "0" * 5000 + "}]}",
                           r"not valid JSON: .*digits"),
                          ('{"bodies": ' + "[" * 100000 + "]" * 100000 + "}", r"not valid JSON: .*recursion"),
                          ('{"bodies": [{"name": "a", "joint": {"type": "Revolute"}, "com": ' + "[" * 500 + "0"
                           + "]" * 500 + "}]}", r"bodies\[0\]\.com: body 'a': com must be 3")):
        path.write_text(text)
        with pytest.raises(ej.ModelError, match=rf"^{re.escape(str(path))}: " + message):
            ej.Model.from_json(path)


def test_python_builder_still_takes_numpy_numbers():
    b = ej.ModelBuilder(gravity=np.array([0.0, 0.0, -9.81]))
    b.add_body("a", joint=J.Revolute(np.array([0.0, 1.0, 0.0])), mass=np.float32(1.5), com=np.zeros(3),
               inertia=np.eye(3, dtype=np.float32) * 0.1, q_lower=np.array([-1.0]))
    b.add_body("b", parent=np.int64(1), joint=J.Helical((1, 0, 0), np.float64(0.2)))
    m = b.build()
    assert m.body_mass[1] == 1.5 and m.parent[2] == 1
    # a document built in Python may hold numpy numbers and arrays
    d = edit(edit(BASE, "bodies[0].mass", np.float64(2.0)), "bodies[0].com", np.array([0.0, 0.0, -0.5]))
    assert ej.Model.from_dict(d).body_mass[1] == 2.0


# ------------------------------------------------------------------------------ mutations
def _leaf_paths(node, path=()):
    """Paths of the scalar leaves (numbers, strings, booleans, null) and of the objects."""
    if isinstance(node, dict):
        yield path, "object"
        for k, v in node.items():
            yield from _leaf_paths(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _leaf_paths(v, path + (i,))
    else:
        yield path, "leaf"


def _path_text(path):
    out = ""
    for k in path:
        out += f"[{k}]" if isinstance(k, int) else (f".{k}" if out else k)
    return out


def _field_of(path):
    """The path of the object field a leaf belongs to (its vector's or matrix's name)."""
    while path and isinstance(path[-1], int):
        path = path[:-1]
    return path


INT_FIELDS = ("version", "nq", "coord")
# fields where any finite number of moderate size is valid
FREE_FIELDS = ("com", "translation", "gravity", "phase", "amplitude", "omega", "offset", "multiplier", "y", "pitch")
STRING_FIELDS = ("name", "parent", "joint_name", "type", "param", "format", "description", "joint")


def mutations_of(doc, path, kind, rng):
    """(mutated value or a marker, class) candidates for one leaf or object, each classified by
    construction: "same" (loads, identical model), "valid" (loads) or "invalid" (refused with an
    error naming the field)."""
    node = doc
    for k in path:
        node = node[k]
    field = [k for k in path if isinstance(k, str)]
    name = field[-1] if field else None
    if kind == "object":
        return [("<add unknown field>", "invalid")]
    if name in STRING_FIELDS:
        if name in ("format", "description"):
            return [("<delete>", "same"), (1.5, "invalid")]
        if name == "joint":                     # the source joint of a mimic
            return [(1.5, "invalid"), (True, "invalid"), (None, "invalid"), ("no_such_joint", "invalid")]
        out = [(1.5, "invalid"), (True, "invalid"), (None, "invalid"), ([node], "invalid")]
        if name in ("name", "type"):
            out.append(("<delete>", "invalid"))
        return out
    if not isinstance(node, (int, float)) and node is not None or isinstance(node, bool):
        return []
    limit = "limits" in field
    if name in INT_FIELDS:
        out = [(float(node), "invalid"), (node + 0.5, "invalid"), (str(node), "invalid"), (True, "invalid")]
        if name == "version":
            out.append(("<delete>", "same"))
        return out
    out = [(str(node), "invalid"), (True, "invalid"), (False, "invalid"), ({"value": node}, "invalid"),
           ([node], "invalid"), ([], "invalid"), ("", "invalid"), ([[1, 2], [3]], "invalid")]
    if node is not None and float(node).is_integer() and abs(node) < 2 ** 53:
        # an integral float written as an int (or back) is the same number
        out.append((int(node) if isinstance(node, float) else float(node), "same"))
    if name in FREE_FIELDS:
        out.append((float(rng.normal()), "valid"))
    elif name == "mass":
        out.append((float(rng.uniform(0.0, 5.0)), "valid"))
    if limit:
        out += [(None, "valid"), (float("nan"), "invalid"), (10 ** 400, "invalid")]
    else:
        out += [(None, "invalid"), (float("nan"), "invalid"), (float("inf"), "invalid"), (10 ** 400, "invalid")]
    return out


def test_mutated_documents_load_or_are_refused_as_classified():
    """Random edits of valid documents, each valid or invalid by construction: a document with
    only value-preserving edits loads as the same model, one with valid edits loads, and one with
    an invalid edit is refused with an error naming the path of one of its invalid edits (and
    nothing but ModelError ever escapes)."""
    rng = np.random.default_rng(11)
    docs = [HUMANOID, KNEE, DRIVEN, BASE, models.random_tree(12, 5, limits=True).to_dict()]
    originals = [ej.Model.from_dict(d) for d in docs]
    counts = {"same": 0, "valid": 0, "invalid": 0}
    for case in range(800):
        k = int(rng.integers(len(docs)))
        doc = copy.deepcopy(docs[k])
        sites = list(_leaf_paths(doc))
        picked = rng.choice(len(sites), size=int(rng.integers(1, 4)), replace=False)
        only_valid = rng.random() < 0.4
        edits = []
        for s in picked:
            path, kind = sites[s]
            cands = [c for c in mutations_of(doc, path, kind, rng) if not only_valid or c[1] != "invalid"]
            if cands:
                value, cls = cands[int(rng.integers(len(cands)))]
                edits.append((path, value, cls))
        if not edits:
            continue
        for path, value, cls in edits:
            if value == "<add unknown field>":
                node = doc
                for p in path:
                    node = node[p]
                node["colour"] = "red"
                continue
            parent = doc
            for p in path[:-1]:
                parent = parent[p]
            if value == "<delete>":
                del parent[path[-1]]
            else:
                parent[path[-1]] = value
        classes = {cls for _, _, cls in edits}
        expected = "invalid" if "invalid" in classes else "valid" if "valid" in classes else "same"
        counts[expected] += 1
        try:
            m = ej.Model.from_dict(doc, "doc.json")
        except ej.ModelError as e:
            msg = str(e)
            assert expected == "invalid", f"case {case}: valid edits {edits} refused: {msg}"
            named = [_path_text(_field_of(p)) for p, _, cls in edits if cls == "invalid"]
            assert any(msg.startswith(f"doc.json: {n}") and msg[len(f"doc.json: {n}"):][:1] in (":", ".", "[", " ")
                       if n else msg.startswith("doc.json: unknown top-level fields ['colour']")
                       for n in named), f"case {case}: {msg!r} names none of {named}"
            continue
        assert expected != "invalid", f"case {case}: invalid edits {edits} loaded"
        if expected == "same":
            assert_same_model(m, originals[k])
    assert min(counts.values()) > 30, counts


def test_documented_example_loads():
    """The complete example of the JSON section of the models guide is a valid model, as described
    there."""
    from pathlib import Path
    doc = (Path(__file__).resolve().parent.parent / "docs" / "guide" / "models.md").read_text()
    text = re.search(r"```json\n(.*?)```", doc, re.S).group(1)
    m = ej.Model.from_json(text)
    assert (m.nq, m.nv) == (2, 2) and m.rheonomic and m.has_mimic
    assert list(m.joint_q_slices()) == ["drive", "shoulder", "knee", "flap_hinge"]
    assert m.joint_mimic[m.joint_index("flap_hinge")] == m.joint_index("shoulder")
    assert_same_model(ej.Model.from_json(m.to_json()), m)


def test_empty_model_round_trips(tmp_path):
    """The world alone (no bodies) is one model in both places: the builder builds it and the
    reader reads back what ``to_json`` writes."""
    m = ej.ModelBuilder().build()
    m.to_json(tmp_path / "empty.json")
    back = ej.models.load(str(tmp_path / "empty.json"))
    assert (back.nbodies, back.nq, back.nv) == (0, 0, 0)
    assert ej.Model.from_dict({"bodies": []}).nbodies == 0


def test_builder_refuses_text_for_numbers():
    """The builder refuses what the JSON reader refuses: text and booleans are not numbers."""
    for bad in ("1.0", True):
        with pytest.raises(ej.ModelError, match=r"body 'a': mass must be a number"):
            ej.ModelBuilder().add_body("a", joint=ej.joints.Revolute((0, 0, 1)), mass=bad, inertia=np.eye(3))
