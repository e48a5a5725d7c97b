"""load_opensim against OpenSim 4.6 itself (body frames, InverseDynamicsSolver, calcM) on the
shared OpenSim models and on small files written here for every joint and function kind."""
import os
import warnings

import numpy as np
import pytest

import ejce_nb as ej
from ejce_nb.errors import ModelError

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.path.join(HERE, "..", "..", "shared", "models", "opensim")
DATA = os.path.join(HERE, "..", "data")
SHARED_MODELS = ["double_pendulum", "arm26", "leg6dof9musc", "gait2392_thelen2003muscle"]

opensim = pytest.importorskip("opensim", reason="OpenSim (the oracle) is not installed")
from osim_oracle import Oracle  # noqa: E402


def _load(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ej.load_opensim(path, **kw)


def lagrange(m, o, q, v, a, h=1e-6):
    """The reduced inverse dynamics by Lagrange's equations of OpenSim's own mass matrix, reduced
    by the coupler map (M = G^T M_full G; its Christoffel terms by central differences), with
    OpenSim's inverse dynamics at zero velocity for the rest: for joints whose velocity terms
    OpenSim's InverseDynamicsSolver does not reproduce."""
    def M(x):
        G = m.coupler_jacobian(x)
        return G.T @ o.mass_matrix(m.expand(x)) @ G
    dM = [(M(q + h * e) - M(q - h * e)) / (2 * h) for e in np.eye(m.nv)]
    coriolis = sum(dM[k] * v[k] for k in range(m.nv)) @ v - 0.5 * np.array([v @ dM[k] @ v for k in range(m.nv)])
    G = m.coupler_jacobian(q)
    return G.T @ o.inverse_dynamics(m.expand(q), np.zeros(G.shape[0]), G @ a) + coriolis


def compare(path, n=4, seed=0, dynamics=True, tol=1e-9, velocity_terms="opensim"):
    """Body frames, inverse dynamics and the mass matrix against OpenSim at random states;
    ``velocity_terms="lagrange"``: the inverse dynamics against ``lagrange`` (to 1e-7)."""
    m = _load(path)
    o = Oracle(path, m.expanded().coordinate_names)
    rng = np.random.default_rng(seed)
    lo = np.where(np.isfinite(m.q_lower), m.q_lower, -1.0)
    hi = np.where(np.isfinite(m.q_upper), m.q_upper, 1.0)
    for _ in range(n):
        q, v, a = rng.uniform(lo, hi), rng.normal(size=m.nv), rng.normal(size=m.nv)
        qf = m.expand(q)
        fk = ej.forward_kinematics(m, q)
        for name, (R, p) in o.frames(qf).items():
            i = m.body_index(name)
            assert np.abs(fk.R[i] - R).max() < tol and np.abs(fk.p[i] - p).max() < tol, name
        if not dynamics:
            continue
        G = m.coupler_jacobian(q)
        tau = ej.rnea(m, q, v, a)
        if velocity_terms == "lagrange":
            assert np.allclose(tau, lagrange(m, o, q, v, a), rtol=1e-7, atol=1e-7)
            tau_os = G.T @ o.inverse_dynamics(qf, np.zeros(len(qf)), G @ a)
            tau = ej.rnea(m, q, np.zeros(m.nv), a)
        else:
            tau_os = G.T @ o.inverse_dynamics(qf, m.expand_v(v, q), m.expand_a(a, q, v))
        assert np.abs(tau - tau_os).max() <= tol * max(1.0, np.abs(tau_os).max())
        M_os = G.T @ o.mass_matrix(qf) @ G
        M = ej.mass_matrix(m, q)
        assert np.abs(M - M_os).max() <= tol * max(1.0, np.abs(M_os).max())
    return m


@pytest.mark.parametrize("name", SHARED_MODELS)
def test_shared_models_against_opensim(name):
    path = os.path.join(SHARED, name + ".osim")
    if not os.path.exists(path):
        pytest.skip(f"the shared OpenSim models are not here ({os.path.abspath(SHARED)} is absent)")
    m = compare(path)
    assert all(n in m.coordinate_names for n in m.coordinate_names)


def test_leg6dof9musc_coupler_and_inertia_warning():
    path = os.path.join(SHARED, "leg6dof9musc.osim")
    if not os.path.exists(path):
        pytest.skip(f"the shared OpenSim models are not here ({os.path.abspath(SHARED)} is absent)")
    with pytest.warns(ej.InertiaWarning, match="toes_r"), pytest.warns(ej.OpenSimWarning, match="Thelen2003Muscle"):
        m = ej.load_opensim(path)
    assert "knee_angle_pat_r" not in m.coordinate_names and "knee_angle_pat_r" in m.expanded().coordinate_names
    assert m.has_couplers and "left out" in m.summary()
    with pytest.raises(ModelError, match="toes_r"):
        ej.load_opensim(path, strict=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mb = ej.load_opensim(path, balance_inertia=True)
    ev = np.linalg.eigvalsh(mb.body_inertia[mb.body_index("toes_r")])
    assert ev[0] + ev[1] >= ev[2] - 1e-15
    assert np.allclose(m.neutral()[m.coordinate_names.index("knee_angle_r")], -0.6469763)


def test_knee_patella_data_file():
    m = compare(os.path.join(DATA, "knee_patella.osim"))
    assert m.coordinate_names == ("hip_flexion", "knee_angle") and not m.couplers_linear
    assert np.allclose(m.neutral(), [0.3, -0.6])
    assert m.q_lower.tolist() == [-1.2, -2.0]


AXIS = """<TransformAxis name="{n}"><coordinates>{c}</coordinates><axis>{a}</axis>{f}</TransformAxis>"""
CONST0 = "<Constant><value>0</value></Constant>"


def custom(name, parent, child, coords, axes):
    """A CustomJoint: axes {"rotation1": (coordinate names, axis, function xml), ...}."""
    body = []
    defaults = {"rotation1": "1 0 0", "rotation2": "0 1 0", "rotation3": "0 0 1",
                "translation1": "1 0 0", "translation2": "0 1 0", "translation3": "0 0 1"}
    for n in defaults:
        c, a, f = axes.get(n, ("", defaults[n], CONST0))
        body.append(AXIS.format(n=n, c=c, a=a, f=f))
    return joint("CustomJoint", name, parent, child, coords, "<SpatialTransform>" + "".join(body) + "</SpatialTransform>")


def joint(kind, name, parent, child, coords, extra="", pt="0.1 -0.2 0.05", po="0.3 -0.2 0.1", co="0.1 0.2 -0.3"):
    cx = "".join(f"<Coordinate name=\"{c}\"><default_value>{d}</default_value><range>-1 1</range>"
                 f"<locked>{'true' if lk else 'false'}</locked></Coordinate>" for c, d, lk in coords)
    return (f"<{kind} name=\"{name}\"><socket_parent_frame>{name}_p</socket_parent_frame>"
            f"<socket_child_frame>{name}_c</socket_child_frame><coordinates>{cx}</coordinates><frames>"
            f"<PhysicalOffsetFrame name=\"{name}_p\"><socket_parent>{parent}</socket_parent>"
            f"<translation>{pt}</translation><orientation>{po}</orientation></PhysicalOffsetFrame>"
            f"<PhysicalOffsetFrame name=\"{name}_c\"><socket_parent>{child}</socket_parent>"
            f"<translation>0.02 0.1 0</translation><orientation>{co}</orientation></PhysicalOffsetFrame>"
            f"</frames>{extra}</{kind}>")


def document(joints, bodies, constraints=""):
    bx = "".join(f"<Body name=\"{b}\"><mass>{1 + 0.3 * k}</mass><mass_center>0.05 -0.1 0.02</mass_center>"
                 f"<inertia>0.03 0.02 0.025 0.001 -0.002 0.0015</inertia></Body>" for k, b in enumerate(bodies))
    return (f"<?xml version=\"1.0\" encoding=\"UTF-8\" ?><OpenSimDocument Version=\"40000\"><Model name=\"t\">"
            f"<gravity>0 -9.80665 0</gravity><BodySet><objects>{bx}</objects></BodySet>"
            f"<JointSet><objects>{''.join(joints)}</objects></JointSet>"
            f"<ConstraintSet><objects>{constraints}</objects></ConstraintSet></Model></OpenSimDocument>")


SPLINE = "<SimmSpline><x>-1.2 -0.5 0 0.4 1.2</x><y>0.01 0.03 -0.02 0.04 0.0</y></SimmSpline>"
PWL = "<PiecewiseLinearFunction><x>-1.2 -0.2 0.5 1.2</x><y>0.02 -0.01 0.03 0.01</y></PiecewiseLinearFunction>"
POLY = "<PolynomialFunction><coefficients>0.2 -0.1 0.5 0.01</coefficients></PolynomialFunction>"
MULT = f"<MultiplierFunction><function>{SPLINE}</function><scale>-1.7</scale></MultiplierFunction>"
LIN = "<LinearFunction><coefficients>0.8 0.1</coefficients></LinearFunction>"
ONE = "<LinearFunction><coefficients>1 0</coefficients></LinearFunction>"


def kinds_file(tmp_path, with_euler_speeds=False):
    G, B = "/ground", "/bodyset/"
    js = [
        custom("c1", G, B + "a", [("c1_x", 0.2, False), ("c1_y", -0.3, False)],
               {"rotation1": ("c1_x", "0.6 0 0.8", ONE), "rotation2": ("c1_y", "0 1 0", LIN),
                "rotation3": ("", "0.3 0.3 0.9", "<Constant><value>0.3</value></Constant>"),
                "translation1": ("c1_x", "1 0 0", SPLINE),
                "translation2": ("c1_y", "0 1 0", PWL), "translation3": ("c1_y", "0.1 0.2 0.97", MULT)}),
        joint("SliderJoint", "sl", B + "a", B + "b", [("sl_x", 0.1, False)]),
        joint("UniversalJoint", "un", B + "b", B + "c", [("un_x", 0.2, False), ("un_y", -0.4, False)]),
        joint("PlanarJoint", "pl", B + "c", B + "d", [("pl_rz", 0.3, False), ("pl_tx", 0.1, False),
                                                      ("pl_ty", -0.2, False)]),
        joint("GimbalJoint", "gi", B + "d", B + "e", [("gi_1", 0.3, False), ("gi_2", -0.2, False),
                                                      ("gi_3", 0.5, False)]),
        joint("PinJoint", "pin", B + "e", B + "f", [("pin_z", 0.25, True)]),
        joint("WeldJoint", "we", B + "f", B + "g", []),
        joint("PinJoint", "pin2", B + "g", B + "h", [("pin2_z", 0.1, False)]),
    ]
    bodies = list("abcdefgh")
    if with_euler_speeds:
        js += [joint("BallJoint", "ba", B + "h", B + "i", [("ba_1", 0.1, False), ("ba_2", 0.2, False),
                                                           ("ba_3", -0.3, False)]),
               joint("FreeJoint", "fr", B + "i", B + "j", [(f"fr_{k}", 0.1 * k - 0.2, False) for k in range(6)])]
        bodies += ["i", "j"]
    cons = ("<CoordinateCouplerConstraint name=\"cc\"><isEnforced>true</isEnforced>"
            f"<coupled_coordinates_function>{SPLINE}</coupled_coordinates_function>"
            "<independent_coordinate_names>c1_x</independent_coordinate_names>"
            "<dependent_coordinate_name>pin2_z</dependent_coordinate_name><scale_factor>2.5</scale_factor>"
            "</CoordinateCouplerConstraint>")
    p = tmp_path / ("kinds_euler.osim" if with_euler_speeds else "kinds.osim")
    p.write_text(document(js, bodies, cons))
    return str(p)


def test_every_joint_and_function_kind_against_opensim(tmp_path):
    m = compare(kinds_file(tmp_path), n=5)
    # the locked pin is welded at its default value; the coupled pin has no coordinate of its own
    assert "pin_z" not in m.coordinate_names and "pin2_z" not in m.coordinate_names
    assert m.nq == 1 + 1 + 1 + 2 + 3 + 3
    free = _load(kinds_file(tmp_path), locked="free")
    assert "pin_z" in free.coordinate_names


def test_polynomial_rotation_against_opensim(tmp_path):
    p = tmp_path / "poly.osim"
    p.write_text(document([custom("c", "/ground", "/bodyset/a", [("x", 0.1, False)],
                                  {"rotation2": ("x", "0.3 0.3 0.9", POLY), "translation1": ("x", "1 0 0", PWL)})],
                          ["a"]))
    compare(str(p))


def test_one_coordinate_on_two_rotations_follows_lagrange(tmp_path):
    """A CustomJoint coordinate that drives two rotation axes: positions and the mass matrix are
    OpenSim's, and the inverse dynamics are Lagrange's equations of OpenSim's own mass matrix
    (its Christoffel terms by finite differences), which OpenSim's InverseDynamicsSolver does not
    reproduce for such a joint (its velocity terms differ by about 1e-3 relative)."""
    p = tmp_path / "two_rotations.osim"
    p.write_text(document([custom("c", "/ground", "/bodyset/a", [("x", 0.2, False), ("y", -0.3, False)],
                                  {"rotation1": ("x", "0.6 0 0.8", ONE), "rotation2": ("y", "0 1 0", ONE),
                                   "rotation3": ("x", "0 0 1", ONE)})], ["a"]))
    m = compare(str(p), dynamics=False)
    o = Oracle(str(p), m.coordinate_names)
    rng = np.random.default_rng(5)
    q, v, a = rng.uniform(-0.9, 0.9, 2), rng.normal(size=2), rng.normal(size=2)
    h = 1e-6
    dM = [(o.mass_matrix(q + h * e) - o.mass_matrix(q - h * e)) / (2 * h) for e in np.eye(2)]
    coriolis = sum(dM[k] * v[k] for k in range(2)) @ v - 0.5 * np.array([v @ dM[k] @ v for k in range(2)])
    lagrange = o.inverse_dynamics(q, np.zeros(2), a) + coriolis
    tau = ej.rnea(m, q, v, a)
    assert np.allclose(tau, lagrange, rtol=1e-7, atol=1e-7)
    assert np.abs(o.inverse_dynamics(q, v, a) - lagrange).max() > 1e-5


def test_ball_and_free_joints_positions(tmp_path):
    # their OpenSim speeds are angular velocities; ejce_nb's are the angle rates: same poses
    compare(kinds_file(tmp_path, with_euler_speeds=True), dynamics=False)


def test_simm_spline_is_opensims():
    x = np.array([-2.0, -1.1, -0.3, 0.2, 0.9, 1.7])
    y = np.array([0.3, -0.1, 0.4, 0.35, -0.2, 0.1])
    for n in (2, 3, 4, 6):
        s = opensim.SimmSpline()
        for a, b in zip(x[:n], y[:n]):
            s.addPoint(float(a), float(b))
        mine = ej.fn.Spline(0, x[:n], y[:n], end="simm")
        for t in np.concatenate([np.linspace(x[0] - 0.5, x[n - 1] + 0.5, 23), x[:n]]):
            v = opensim.Vector(1, float(t))
            want = (s.calcValue(v), s.calcDerivative(opensim.StdVectorInt([0]), v),
                    s.calcDerivative(opensim.StdVectorInt([0, 0]), v))
            got = mine.derivatives(t)
            assert np.allclose(got[:2], want[:2], rtol=1e-12, atol=1e-12), (n, t)
            # the second derivative too, at the end knots as well (on the cubic there, as OpenSim)
            assert np.isclose(got[2], want[2], rtol=1e-10, atol=1e-10), (n, t)


@pytest.mark.parametrize("text, match", [
    ("<OpenSimDocument><Model>", "malformed XML"),
    ("<robot/>", "not an OpenSim model"),
    (document([joint("HingeJoint", "h", "/ground", "/bodyset/a", [])], ["a"]), r"HingeJoint 'h' \(line 1\): joint kind not supported"),
    (document([joint("PinJoint", "p", "/bodyset/nope", "/bodyset/a", [("x", 0, False)])], ["a"]),
     "frame '/bodyset/nope' is neither"),
    (document([custom("c", "/ground", "/bodyset/a", [("x", 0, False)],
                      {"rotation1": ("x", "1 0 0", "<StepFunction/>")})], ["a"]), "StepFunction.*not supported"),
    (document([custom("c", "/ground", "/bodyset/a", [("x", 0, False)],
                      {"rotation1": ("x", "1 0 0", "<SimmSpline><x>0 2 1</x><y>0 1 2</y></SimmSpline>")})], ["a"]),
     "TransformAxis 'rotation1'.*strictly increasing"),
    (document([joint("PinJoint", "p", "/ground", "/bodyset/a", [("x", 0, False)])], ["a", "b"]), r"\['b'\] have no joint"),
])
def test_bad_files(text, match):
    with pytest.raises(ModelError, match=match):
        ej.load_opensim(text)


def test_coupler_errors_name_the_constraint(tmp_path):
    doc = document([joint("PinJoint", "p", "/ground", "/bodyset/a", [("x", 0, False)])], ["a"],
                   "<CoordinateCouplerConstraint name=\"bad\"><coupled_coordinates_function>" + ONE +
                   "</coupled_coordinates_function><independent_coordinate_names>y</independent_coordinate_names>"
                   "<dependent_coordinate_name>x</dependent_coordinate_name></CoordinateCouplerConstraint>")
    with pytest.raises(ModelError, match=r"CoordinateCouplerConstraint 'bad' \(line 1\): no coordinate named 'y'"):
        ej.load_opensim(doc)


# what a walking or jumping model carries beside its skeleton: contact forces whose parameters are
# elements with C++ scopes in their names (legal XML names, refused by namespace-aware parsers),
# contact geometry, and a constraint other than couplers, points and welds
CONTACT = (
    "<ForceSet><objects>"
    "<HuntCrossleyForce name=\"foot\"><appliesForce>true</appliesForce>"
    "<HuntCrossleyForce::ContactParametersSet name=\"contact_parameters\"><objects>"
    "<HuntCrossleyForce::ContactParameters><geometry>floor heel</geometry><stiffness>3067776</stiffness>"
    "<dissipation>2</dissipation><static_friction>0.9</static_friction><dynamic_friction>0.8</dynamic_friction>"
    "<viscous_friction>0.2</viscous_friction></HuntCrossleyForce::ContactParameters></objects><groups />"
    "</HuntCrossleyForce::ContactParametersSet><transition_velocity>0.08</transition_velocity></HuntCrossleyForce>"
    "<ElasticFoundationForce name=\"toe\"><ElasticFoundationForce::ContactParametersSet name=\"contact_parameters\">"
    "<objects><ElasticFoundationForce::ContactParameters><geometry>floor toe</geometry><stiffness>1e6</stiffness>"
    "<dissipation>1</dissipation></ElasticFoundationForce::ContactParameters></objects>"
    "</ElasticFoundationForce::ContactParametersSet><transition_velocity>0.1</transition_velocity>"
    "</ElasticFoundationForce></objects></ForceSet>"
    "<ContactGeometrySet><objects>"
    "<ContactHalfSpace name=\"floor\"><socket_frame>/ground</socket_frame><location>0 0 0</location>"
    "<orientation>0 0 -1.5707963267949</orientation></ContactHalfSpace>"
    "<ContactSphere name=\"heel\"><socket_frame>/bodyset/b</socket_frame><location>0 -0.3 0</location>"
    "<radius>0.04</radius></ContactSphere>"
    "<ContactSphere name=\"toe\"><socket_frame>/bodyset/b</socket_frame><location>0.1 -0.3 0</location>"
    "<radius>0.03</radius></ContactSphere></objects></ContactGeometrySet>")
DISTANCE = ("<ConstantDistanceConstraint name=\"rod\"><isEnforced>false</isEnforced>"
            "<socket_body_1>/ground</socket_body_1><socket_body_2>/bodyset/b</socket_body_2>"
            "<location_body_1>0 0 0</location_body_1><location_body_2>0 -0.3 0</location_body_2>"
            "<constant_distance>1.0</constant_distance></ConstantDistanceConstraint>")


def test_files_with_contact_load_exact(tmp_path):
    """OpenSim's contact forces and geometry (names with '::') load: listed as left out in one
    warning and in the notes; the rigid-body part is OpenSim's (frames, inverse dynamics, M)."""
    text = document([joint("PinJoint", "pa", "/ground", "/bodyset/a", [("qa", 0.2, False)]),
                     custom("cb", "/bodyset/a", "/bodyset/b", [("qb", -0.3, False), ("tb", 0.1, False)],
                            {"rotation3": ("qb", "0 0 1", ONE), "translation2": ("tb", "0 1 0", ONE)})],
                    ["a", "b"], DISTANCE).replace("</Model>", CONTACT + "</Model>")
    path = tmp_path / "contact.osim"
    path.write_text(text)
    opensim.Model(str(path))                    # OpenSim 4.6 reads the file
    with pytest.warns(ej.OpenSimWarning) as rec:
        m = ej.load_opensim(path)
    mine = [w.message for w in rec if isinstance(w.message, ej.OpenSimWarning)]
    assert len(mine) == 1 and mine[0].left_out == {
        "HuntCrossleyForce": 1, "ElasticFoundationForce": 1, "ContactHalfSpace": 1, "ContactSphere": 2,
        "ConstantDistanceConstraint (not enforced)": 1}
    assert "left out: " in m.summary() and "ContactSphere" in m.summary()
    assert m.coordinate_names == ("qa", "qb", "tb")
    # enforced, the constraint is said to leave its freedoms free
    with pytest.warns(ej.OpenSimWarning, match=r"1 ConstantDistanceConstraint \(enforced: its freedoms stay free"):
        ej.load_opensim(text.replace("<isEnforced>false", "<isEnforced>true"))
    compare(str(path))


def test_malformed_file_names_the_line(tmp_path):
    path = tmp_path / "bad.osim"
    path.write_text(document([joint("PinJoint", "p", "/ground", "/bodyset/a", [("x", 0, False)])], ["a"])
                    .replace("<BodySet>", "\n\n<BodySet>").replace("<mass>1.0</mass>", "<mass>1.0</masss>"))
    with pytest.raises(ModelError, match=r"bad\.osim: malformed XML: mismatched tag: line 3"):
        ej.load_opensim(path)
    path.write_text(document([joint("HingeJoint", "h", "/ground", "/bodyset/a", [])], ["a"])
                    .replace("<JointSet>", "\n<JointSet>\n"))
    with pytest.raises(ModelError, match=r"bad\.osim: JointSet: HingeJoint 'h' \(line 3\): joint kind not supported"):
        ej.load_opensim(path)


def test_models_load_and_json_round_trip():
    m = ej.models.load("knee_patella.osim")
    back = ej.Model.from_json(m.to_json())
    q, v, a = np.array([0.1, -0.7]), np.array([0.4, -0.2]), np.array([0.3, 0.5])
    assert back.coordinate_names == m.coordinate_names
    assert np.array_equal(ej.rnea(back, q, v, a), ej.rnea(m, q, v, a))
    assert np.array_equal(back.neutral(), m.neutral())


MVP = ("<MultivariatePolynomialFunction><coefficients>0.1 0.3 -0.2 0.5 0.25 -0.4</coefficients>"
       "<dimension>2</dimension><order>2</order></MultivariatePolynomialFunction>")
MVP3 = ("<MultivariatePolynomialFunction><coefficients>0.02 0.1 -0.05 0.03 0.2 -0.1 0.04 0.06 0.3 -0.02"
        "</coefficients><dimension>3</dimension><order>2</order></MultivariatePolynomialFunction>")


def test_transform_axes_of_several_coordinates_against_opensim(tmp_path):
    """MultivariatePolynomialFunction on transform axes reading two and three coordinates (in
    the order the axis lists them), one of them locked, and as a coupler of two independent
    coordinates.  OpenSim evaluates this function to first derivatives only, so its inverse
    dynamics lack the functions' second-derivative terms: the velocity terms are checked by
    Lagrange's equations of OpenSim's own mass matrix instead."""
    G, B = "/ground", "/bodyset/"
    js = [custom("c", G, B + "a", [("x", 0.2, False), ("y", -0.3, False), ("z", 0.4, True)],
                 {"rotation1": ("x", "1 0 0", ONE), "rotation2": ("y x", "0.3 0.3 0.9", MVP),
                  "translation1": ("x y", "1 0 0", MVP), "translation3": ("z y x", "0 0 1", MVP3)}),
          joint("PinJoint", "p", B + "a", B + "b", [("pz", 0.1, False)])]
    cons = ("<CoordinateCouplerConstraint name=\"cc\"><isEnforced>true</isEnforced>"
            f"<coupled_coordinates_function>{MVP}</coupled_coordinates_function>"
            "<independent_coordinate_names>x y</independent_coordinate_names>"
            "<dependent_coordinate_name>pz</dependent_coordinate_name></CoordinateCouplerConstraint>")
    p = tmp_path / "multi.osim"
    p.write_text(document(js, ["a", "b"], cons))
    m = compare(str(p), n=4, velocity_terms="lagrange")
    assert m.coordinate_names == ("x", "y") and m.has_couplers
    f = ej.fn.MultiPoly([0, 1], [[0, 0], [0, 1], [2, 1]], [0.5, -1.0, 2.0])
    assert np.isclose(f.value([0.3, -0.2]), 0.5 + 0.2 - 2.0 * 0.09 * 0.2)
    assert ej.fn.from_dict(f.to_dict()) == f
    with pytest.raises(ModelError, match="MultiPoly powers must have one row per coefficient"):
        ej.fn.MultiPoly([0, 1], [[0, 0]], [1.0, 2.0])
    bad = document([custom("c", G, B + "a", [("x", 0.2, False)], {"rotation1": ("x", "1 0 0", MVP)})], ["a"])
    with pytest.raises(ModelError, match="dimension> 2 but 1 coordinates"):
        ej.load_opensim(bad)


def _body_xyz_rates(q, v):
    """E, Edot v of body-fixed X-Y-Z angles: the angular velocity in the parent is E q' (OpenSim's
    speeds of a BallJoint or EllipsoidJoint)."""
    from ejce_nb.io.opensim import xyz_body_fixed
    c0, c1 = np.array([1.0, 0, 0]), xyz_body_fixed([q[0], 0, 0]) @ [0, 1.0, 0]
    c2 = xyz_body_fixed([q[0], q[1], 0]) @ [0, 0, 1.0]
    E = np.stack([c0, c1, c2], axis=1)
    w01 = v[0] * c0 + v[1] * c1
    return E, v[1] * v[0] * np.cross(c0, c1) + v[2] * np.cross(w01, c2)


def test_ellipsoid_joint_against_opensim(tmp_path):
    G, B = "/ground", "/bodyset/"
    js = [joint("EllipsoidJoint", "el", G, B + "a", [("e1", 0.1, False), ("e2", -0.2, False), ("e3", 0.3, False)],
                "<radii_x_y_z>0.07 0.12 0.2</radii_x_y_z>"),
          joint("PinJoint", "p", B + "a", B + "b", [("pz", 0.1, False)])]
    p = tmp_path / "ellipsoid.osim"
    p.write_text(document(js, ["a", "b"]))
    m = compare(str(p), n=5, dynamics=False)
    o = Oracle(str(p), m.coordinate_names)
    rng = np.random.default_rng(3)
    for _ in range(4):
        q, v, a = rng.uniform(-1, 1, 4), rng.normal(size=4), rng.normal(size=4)
        E, Edv = _body_xyz_rates(q, v)
        T = np.eye(4)
        T[:3, :3] = E
        u, du = T @ v, T @ a + np.r_[Edv, 0.0]
        tau_os = T.T @ o.inverse_dynamics(q, u, du)
        assert np.abs(ej.rnea(m, q, v, a) - tau_os).max() <= 1e-9 * max(1.0, np.abs(tau_os).max())
        M_os = T.T @ o.mass_matrix(q) @ T
        assert np.abs(ej.mass_matrix(m, q) - M_os).max() <= 1e-9 * max(1.0, np.abs(M_os).max())
    spec = m.joint_specs[m.joint_index("el")]
    assert isinstance(spec, ej.joints.Ellipsoid) and spec.radii.tolist() == [0.07, 0.12, 0.2]
    assert ej.Model.from_json(m.to_json()).joint_specs[1] == spec


def _derivatives(f, t):
    """(value, first, second derivative) at time t of an OpenSim function object."""
    x = opensim.Vector(1, float(t))
    return (f.calcValue(x), f.calcDerivative(opensim.StdVectorInt([0]), x),
            f.calcDerivative(opensim.StdVectorInt([0, 0]), x))


def test_prescribed_coordinates_are_functions_of_time(tmp_path):
    """Prescribed coordinates leave q and drive their joints in time: body frames, inverse
    dynamics and the mass matrix at (q, t) are OpenSim's at the full state with the prescribed
    coordinates at their functions' values, rates and second derivatives (read back from OpenSim's
    own function objects)."""
    G, B = "/ground", "/bodyset/"
    tspline = "<SimmSpline><x>0 0.3 0.5 0.8 1.2</x><y>0.1 0.4 0.2 -0.3 0.0</y></SimmSpline>"
    sine = "<Sine><amplitude>0.4</amplitude><omega>2.5</omega><phase>0.3</phase><offset>0.1</offset></Sine>"
    poly = "<PolynomialFunction><coefficients>0.3 -0.2 0.05</coefficients></PolynomialFunction>"

    def coords(spec):
        return "".join(f"<Coordinate name=\"{n}\"><default_value>0.1</default_value><range>-1 1</range>"
                       f"<prescribed>{'true' if f else 'false'}</prescribed>"
                       f"{'<prescribed_function>' + f + '</prescribed_function>' if f else ''}</Coordinate>"
                       for n, f in spec)

    def jnt(kind, name, parent, child, spec, extra=""):
        j = joint(kind, name, parent, child, [])
        return j.replace("<coordinates></coordinates>", f"<coordinates>{coords(spec)}</coordinates>").replace(
            f"</{kind}>", f"{extra}</{kind}>")

    axes = {"rotation1": ("cx", "1 0 0", ONE), "rotation2": ("cy", "0 1 0", LIN), "translation1": ("cx", "1 0 0", SPLINE)}
    st = custom("c", B + "a", B + "b", [], axes)
    st = st[st.index("<SpatialTransform>"):st.index("</SpatialTransform>") + len("</SpatialTransform>")]
    js = [jnt("PinJoint", "p1", G, B + "a", [("p1", tspline)]),
          jnt("CustomJoint", "c", B + "a", B + "b", [("cx", None), ("cy", sine)], st),
          jnt("SliderJoint", "s", B + "b", B + "c", [("s", poly)]),
          jnt("PinJoint", "p2", B + "c", B + "d", [("p2", None)])]
    doc = document(js, list("abcd"))
    p, free = tmp_path / "prescribed.osim", tmp_path / "free.osim"
    p.write_text(doc)
    free.write_text(doc.replace("<prescribed>true</prescribed>", "<prescribed>false</prescribed>"))
    m = _load(str(p))
    assert m.coordinate_names == ("cx", "p2") and m.rheonomic
    assert _load(str(p), prescribed="free").coordinate_names == ("p1", "cx", "cy", "s", "p2")
    names = ["cx", "p2", "p1", "cy", "s"]
    o = Oracle(str(free), names)
    sp = opensim.SimmSpline()
    for a, b in zip([0, 0.3, 0.5, 0.8, 1.2], [0.1, 0.4, 0.2, -0.3, 0.0]):
        sp.addPoint(a, b)
    drives = [sp, opensim.Sine(0.4, 2.5, 0.3, 0.1), opensim.PolynomialFunction(opensim.Vector([0.3, -0.2, 0.05]))]
    rng = np.random.default_rng(4)
    for t in (0.0, 0.37, 0.9, 1.4):
        q, v, a = rng.uniform(-0.8, 0.8, 2), rng.normal(size=2), rng.normal(size=2)
        g = np.array([_derivatives(f, t) for f in drives])
        qf, vf, af = np.r_[q, g[:, 0]], np.r_[v, g[:, 1]], np.r_[a, g[:, 2]]
        fk = ej.forward_kinematics(m, q, t=t)
        for name, (R, pos) in o.frames(qf).items():
            i = m.body_index(name)
            assert np.abs(fk.R[i] - R).max() < 1e-9 and np.abs(fk.p[i] - pos).max() < 1e-9, (name, t)
        tau_os = o.inverse_dynamics(qf, vf, af)[:2]
        assert np.abs(ej.rnea(m, q, v, a, t=t) - tau_os).max() <= 1e-9 * max(1.0, np.abs(tau_os).max())
        M_os = o.mass_matrix(qf)[:2, :2]
        assert np.abs(ej.mass_matrix(m, q, t=t) - M_os).max() <= 1e-9 * max(1.0, np.abs(M_os).max())
    bad = doc.replace("<axis>0 1 0</axis>" + LIN, "<axis>0 1 0</axis>" + SPLINE)
    with pytest.raises(ModelError, match="nonlinear function .* of the prescribed coordinate 'cy'"):
        ej.load_opensim(bad)


def document_33(bodies, constraints=""):
    """An OpenSim 3.3 document: bodies [(name, joint xml)], each joint inside its child body."""
    bx = "<Body name=\"ground\"><mass>0</mass><Joint /></Body>" + "".join(
        f"<Body name=\"{b}\"><mass>{1 + 0.3 * k}</mass><mass_center>0.05 -0.1 0.02</mass_center>"
        "<inertia_xx>0.03</inertia_xx><inertia_yy>0.02</inertia_yy><inertia_zz>0.025</inertia_zz>"
        "<inertia_xy>0.001</inertia_xy><inertia_xz>-0.002</inertia_xz><inertia_yz>0.0015</inertia_yz>"
        f"<Joint>{j}</Joint></Body>" for k, (b, j) in enumerate(bodies))
    return (f"<?xml version=\"1.0\" encoding=\"UTF-8\" ?><OpenSimDocument Version=\"30000\"><Model name=\"t33\">"
            f"<gravity>0 -9.80665 0</gravity><BodySet><objects>{bx}</objects></BodySet>"
            f"<ConstraintSet><objects>{constraints}</objects></ConstraintSet></Model></OpenSimDocument>")


def joint_33(kind, name, parent, coords, extra=""):
    cx = "".join(f"<Coordinate name=\"{c}\"><default_value>{d}</default_value><range>-1 1</range></Coordinate>"
                 for c, d in coords)
    return (f"<{kind} name=\"{name}\"><parent_body>{parent}</parent_body>"
            "<location_in_parent>0.1 -0.2 0.05</location_in_parent><orientation_in_parent>0.3 -0.2 0.1"
            "</orientation_in_parent><location>0.02 0.1 0</location><orientation>0.1 0.2 -0.3</orientation>"
            f"<CoordinateSet><objects>{cx}</objects></CoordinateSet>{extra}</{kind}>")


def test_opensim_33_format_against_opensim(tmp_path):
    """The OpenSim 3.3 format (joints inside bodies, location_in_parent / orientation_in_parent,
    inertia_xx..., functions inside <function>, isDisabled) against OpenSim 4.6 reading the same
    file."""
    ax = ("<TransformAxis name=\"{n}\"><function>{f}</function><coordinates>{c}</coordinates>"
          "<axis>{a}</axis></TransformAxis>")
    st = "<SpatialTransform>" + "".join(ax.format(n=n, f=f, c=c, a=a) for n, c, a, f in [
        ("rotation1", "kx", "0.6 0 0.8", ONE), ("rotation2", "", "0 1 0", CONST0), ("rotation3", "ky", "0 0 1", LIN),
        ("translation1", "kx", "1 0 0", SPLINE), ("translation2", "ky", "0 1 0", PWL),
        ("translation3", "", "0 0 1", CONST0)]) + "</SpatialTransform>"
    bodies = [("a", joint_33("CustomJoint", "k", "ground", [("kx", 0.2), ("ky", -0.1)], st)),
              ("b", joint_33("PinJoint", "p", "a", [("pz", 0.3)])),
              ("c", joint_33("PinJoint", "q", "b", [("qz", 0.1)]))]
    cons = ("<CoordinateCouplerConstraint name=\"cc\"><isDisabled>false</isDisabled>"
            f"<coupled_coordinates_function>{SPLINE}</coupled_coordinates_function>"
            "<independent_coordinate_names>kx</independent_coordinate_names>"
            "<dependent_coordinate_name>qz</dependent_coordinate_name></CoordinateCouplerConstraint>")
    p = tmp_path / "v33.osim"
    p.write_text(document_33(bodies, cons))
    m = compare(str(p), n=4)
    assert m.coordinate_names == ("kx", "ky", "pz") and m.has_couplers
    assert m.body_names[1:] == ("a", "b", "c") and m.joint_names[1:] == ("k", "p", "q")


@pytest.mark.parametrize("name", ["arm26", "leg6dof9musc"])
def test_markers_and_offset_frames_against_opensim(name):
    path = os.path.join(SHARED, name + ".osim")
    if not os.path.exists(path):
        pytest.skip(f"the shared OpenSim models are not here ({os.path.abspath(SHARED)} is absent)")
    m = _load(path)
    o = Oracle(path, m.expanded().coordinate_names)
    markers = [n for n in m.frame_names if not n.startswith("/")]
    offsets = [n for n in m.frame_names if n.startswith("/jointset/")]
    ms = o.m.getMarkerSet()
    assert sorted(markers) == sorted(ms.get(i).getName() for i in range(ms.getSize()))
    assert offsets
    rng = np.random.default_rng(1)
    lo = np.where(np.isfinite(m.q_lower), m.q_lower, -1.0)
    hi = np.where(np.isfinite(m.q_upper), m.q_upper, 1.0)
    q = rng.uniform(lo, hi)
    o._set(m.expand(q))
    for n in markers:
        loc = ms.get(n).getLocationInGround(o.s)
        _, p = ej.frame_pose(m, q, n)
        np.testing.assert_allclose(p, [loc.get(k) for k in range(3)], atol=1e-9, err_msg=n)
    for n in offsets:
        X = opensim.PhysicalFrame.safeDownCast(o.m.getComponent(n)).getTransformInGround(o.s)
        R, p = ej.frame_pose(m, q, n)
        np.testing.assert_allclose(p, [X.p().get(k) for k in range(3)], atol=1e-9, err_msg=n)
        np.testing.assert_allclose(R, [[X.R().get(r, c) for c in range(3)] for r in range(3)], atol=1e-9, err_msg=n)
