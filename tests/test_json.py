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
    assert kinds == set(codes.NAMES)
    assert fns == {"Linear", "Poly", "Spline", "TimePoly", "Harmonic", "Sum"}
    assert params == {"euler", "quaternion", "rotvec", "rodrigues", "mrp"}


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
    (HUMANOID, "bodies[4].joint.axis", "up", r"bodies\[4\]\.joint\.axis: Revolute axis must be 3 numbers"),
    (HUMANOID, "bodies[4].joint.axis", [0, 0, 0], r"bodies\[4\]\.joint\.axis: .*zero vector"),
    (HUMANOID, "bodies[4].joint.type", "Hinge", r"bodies\[4\]\.joint\.type: unknown joint type 'Hinge'"),
    (HUMANOID, "bodies[4].joint.type", ["Revolute"], r"bodies\[4\]\.joint\.type: unknown joint type"),
    (HUMANOID, "bodies[4].joint", "Revolute", r"bodies\[4\]\.joint: expected an object with a 'type'"),
    (HUMANOID, "bodies[4].joint.axes", [0, 1, 0], r"bodies\[4\]\.joint: bad fields for Revolute"),
    (HUMANOID, "bodies[2].joint.param", "ZZZ", r"bodies\[2\]\.joint\.param: Spherical param 'ZZZ' unknown"),
    (HUMANOID, "bodies[0].joint.param", 4, r"bodies\[0\]\.joint\.param: Free param must be a string"),
    (HUMANOID, "bodies[1].joint.axis2", [0, 1, 0], r"bodies\[1\]\.joint: Universal axis1 and axis2 are parallel"),
    (HUMANOID, "bodies[4].mass", -2, r"bodies\[4\]\.mass: body 'l_forearm': mass must be finite and non-negative"),
    (HUMANOID, "bodies[4].mass", "heavy", r"bodies\[4\]\.mass: .*mass must be a number"),
    (HUMANOID, "bodies[4].inertia", [[1, 0, 0], [0, 1, 0], [0, 0, 3]], r"bodies\[4\]\.inertia: .*triangle inequality"),
    (HUMANOID, "bodies[4].inertia", [[1, 2, 0], [0, 1, 0], [0, 0, 1]], r"bodies\[4\]\.inertia: .*not symmetric"),
    (HUMANOID, "bodies[4].inertia", [[1, 0], [0, 1]], r"bodies\[4\]\.inertia: .*3x3"),
    (HUMANOID, "bodies[4].com", [0, 0], r"bodies\[4\]\.com: .*com must be 3 finite numbers"),
    (HUMANOID, "bodies[4].com", [0, None, 0], r"bodies\[4\]\.com: "),
    (HUMANOID, "bodies[4].parent", "nobody", r"bodies\[4\]\.parent: .*unknown parent 'nobody'"),
    (HUMANOID, "bodies[4].parent", "l_hand", r"bodies\[4\]\.parent: .*a parent must be added before its children"),
    (HUMANOID, "bodies[4].parent", 99, r"bodies\[4\]\.parent: .*parent index 99 does not exist"),
    (HUMANOID, "bodies[4].name", "torso", r"bodies\[4\]\.name: body 'torso': duplicate body name"),
    (HUMANOID, "bodies[4].name", "", r"bodies\[4\]\.name: body name must be a non-empty string"),
    (HUMANOID, "bodies[4].joint_name", "neck", r"bodies\[4\]\.joint_name: .*duplicate joint name 'neck'"),
    (HUMANOID, "bodies[4].placement.rotation", [[1, 0, 0], [0, 1, 0], [0, 0, -1]],
     r"bodies\[4\]\.placement\.rotation is not a proper orthonormal rotation"),
    (HUMANOID, "bodies[4].placement.translation", [0, "a", 0], r"bodies\[4\]\.placement\.translation must be 3"),
    (HUMANOID, "bodies[4].placement.shift", [0, 0, 0], r"bodies\[4\]\.placement: unknown fields \['shift'\]"),
    (HUMANOID, "bodies[4].child_placement", 5, r"bodies\[4\]\.child_placement: expected an object"),
    (HUMANOID, "bodies[4].limits.q_lower", [0, 1], r"bodies\[4\]\.limits\.q_lower: .*must be 1 numbers"),
    (HUMANOID, "bodies[4].limits.q_lower", [3.0], r"bodies\[4\]\.limits\.q_lower: .*exceeds q_upper"),
    (HUMANOID, "bodies[4].limits.q_upper", {"a": 1}, r"bodies\[4\]\.limits\.q_upper: "),
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
    (SMALL, "bodies[1].mimic", ["a_joint", "x"], r"bodies\[1\]\.mimic: .*multiplier must be a number"),
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
     r"bodies\[1\]\.joint\.motions\[2\]\.f\.coeffs: Linear coeffs must be numbers"),
    (KNEE, "bodies[1].joint.motions[0].f.coord", -1, r"bodies\[1\]\.joint\.motions\[0\]\.f\.coord: Spline coord"),
    (KNEE, "bodies[1].joint.nq", 0,
     r"bodies\[1\]\.joint\.motions\[0\]: Composite motion 0 reads coordinate 0 but nq = 0"),
    (KNEE, "bodies[1].joint.nq", -1, r"bodies\[1\]\.joint\.nq: Composite nq must be a non-negative integer"),
    (KNEE, "bodies[1].joint.motions[0].type", "Twist",
     r"bodies\[1\]\.joint\.motions\[0\]\.type: expected 'Rot' or 'Trans'"),
    (KNEE, "bodies[1].joint.motions", {}, r"bodies\[1\]\.joint\.motions: expected a list"),
    (DRIVEN, "bodies[0].joint.motions[0].f.amplitude", "big",
     r"bodies\[0\]\.joint\.motions\[0\]\.f: Harmonic amplitude"),
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


JUNK = [None, "x", "", [], {}, -1, 0, 1e308, float("nan"), True, [1, 2], [[1, 2], [3]], {"type": "Sum"},
        [[1, 0, 0], [0, 1, 0]], ["a", "b", "c"], 10 ** 30, {"joint": None}]


def _leaves(node, path=()):
    if isinstance(node, dict):
        for k, v in node.items():
            yield path + (k,)
            yield from _leaves(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield path + (i,)
            yield from _leaves(v, path + (i,))


def test_mutated_documents_never_crash():
    """Random edits of valid documents load or raise ModelError; nothing else escapes."""
    rng = np.random.default_rng(11)
    docs = [HUMANOID, KNEE, DRIVEN, models.random_tree(12, 5, limits=True).to_dict()]
    for _ in range(600):
        doc = copy.deepcopy(docs[int(rng.integers(len(docs)))])
        for _ in range(int(rng.integers(1, 3))):
            paths = list(_leaves(doc))
            p = paths[int(rng.integers(len(paths)))]
            node = doc
            for k in p[:-1]:
                node = node[k]
            if rng.random() < 0.2 and isinstance(node, dict):
                del node[p[-1]]
            else:
                node[p[-1]] = copy.deepcopy(JUNK[int(rng.integers(len(JUNK)))])
        try:
            ej.Model.from_dict(doc)
        except ej.ModelError:
            pass


def test_documented_example_loads():
    """The complete example of the README's JSON section is a valid model, as described there."""
    from pathlib import Path
    doc = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    text = re.search(r"```json\n(.*?)```", doc, re.S).group(1)
    m = ej.Model.from_json(text)
    assert (m.nq, m.nv) == (2, 2) and m.rheonomic and m.has_mimic
    assert list(m.joint_q_slices()) == ["drive", "shoulder", "knee", "flap_hinge"]
    assert m.joint_mimic[m.joint_index("flap_hinge")] == m.joint_index("shoulder")
    assert_same_model(ej.Model.from_json(m.to_json()), m)
