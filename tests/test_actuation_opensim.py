"""OpenSim's force elements (``actuation.elements``, read by ``load_opensim``) against OpenSim 4.6:
the generalised accelerations of ``realizeAcceleration`` with the forces kept, at random states
and controls, against ``ej.aba`` driven by the elements' generalised forces; the expression
parser against hand-written formulas and finite differences."""
import os
import pickle
import warnings

import numpy as np
import pytest

import ejce_nb as ej
from ejce_nb.actuation import expression as X
from ejce_nb.actuation.elements import element_qfrc
from ejce_nb.errors import ModelError

opensim = pytest.importorskip("opensim", reason="OpenSim (the oracle) is not installed")
from test_opensim import document, joint  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.path.join(HERE, "..", "..", "shared", "models", "opensim")
G, B = "/ground", "/bodyset/"

# one mechanism for every file (one compiled kind of model): a pin, a slider, a gimbal, a universal
JOINTS = [joint("PinJoint", "pin", G, B + "a", [("pin_q", 0.1, False)]),
          joint("SliderJoint", "sl", B + "a", B + "b", [("sl_x", 0.05, False)]),
          joint("GimbalJoint", "gi", B + "b", B + "c", [("gi_1", 0.2, False), ("gi_2", -0.1, False),
                                                        ("gi_3", 0.3, False)]),
          joint("UniversalJoint", "un", B + "c", B + "d", [("un_x", -0.2, False), ("un_y", 0.4, False)]),
          joint("PinJoint", "dep", B + "d", B + "e", [("dep_q", 0.0, False)])]
BODIES = ["a", "b", "c", "d", "e"]
# dep_q = 0.7 un_y + 0.1: the model's coordinates leave it out, its kernel model (the expansion) keeps it
COUPLER = ("<CoordinateCouplerConstraint name=\"cc\"><isEnforced>true</isEnforced><coupled_coordinates_function>"
           "<LinearFunction><coefficients>0.7 0.1</coefficients></LinearFunction></coupled_coordinates_function>"
           "<independent_coordinate_names>un_y</independent_coordinate_names>"
           "<dependent_coordinate_name>dep_q</dependent_coordinate_name></CoordinateCouplerConstraint>")
OFFSET = ("<PhysicalOffsetFrame name=\"{n}\"><socket_parent>{p}</socket_parent><translation>{t}</translation>"
          "<orientation>{o}</orientation></PhysicalOffsetFrame>")
FORCES = {
    "CoordinateActuator": [
        "<CoordinateActuator name=\"ca_pin\"><min_control>-1</min_control><max_control>1</max_control>"
        "<coordinate>pin_q</coordinate><optimal_force>3</optimal_force></CoordinateActuator>",
        "<CoordinateActuator name=\"ca_sl\"><coordinate>sl_x</coordinate><optimal_force>20</optimal_force>"
        "</CoordinateActuator>",
        "<CoordinateActuator name=\"ca_off\"><appliesForce>false</appliesForce><coordinate>gi_2</coordinate>"
        "</CoordinateActuator>",
        "<CoordinateActuator name=\"ca_dep\"><coordinate>dep_q</coordinate><optimal_force>4</optimal_force>"
        "</CoordinateActuator>"],
    "SpringGeneralizedForce": [
        "<SpringGeneralizedForce name=\"sg\"><coordinate>gi_2</coordinate><stiffness>4</stiffness>"
        "<rest_length>0.2</rest_length><viscosity>0.7</viscosity></SpringGeneralizedForce>",
        "<SpringGeneralizedForce name=\"sg2\"><coordinate>sl_x</coordinate><stiffness>30</stiffness>"
        "<viscosity>2</viscosity></SpringGeneralizedForce>",
        "<SpringGeneralizedForce name=\"sg_dep\"><coordinate>dep_q</coordinate><stiffness>6</stiffness>"
        "<rest_length>-0.3</rest_length><viscosity>1.5</viscosity></SpringGeneralizedForce>"],
    "CoordinateLimitForce": [   # rotational (degrees) and translational; wide transitions, q across them
        "<CoordinateLimitForce name=\"cl_r\"><coordinate>un_x</coordinate><upper_stiffness>0.5</upper_stiffness>"
        "<upper_limit>10</upper_limit><lower_stiffness>0.3</lower_stiffness><lower_limit>-15</lower_limit>"
        "<damping>0.02</damping><transition>20</transition></CoordinateLimitForce>",
        "<CoordinateLimitForce name=\"cl_t\"><coordinate>sl_x</coordinate><upper_stiffness>50</upper_stiffness>"
        "<upper_limit>0.1</upper_limit><lower_stiffness>40</lower_stiffness><lower_limit>-0.2</lower_limit>"
        "<damping>3</damping><transition>0.5</transition></CoordinateLimitForce>"],
    "PointActuator": [
        "<PointActuator name=\"pa_local\"><body>c</body><point>0.1 0.2 -0.1</point><direction>1 2 -0.5</direction>"
        "<optimal_force>5</optimal_force></PointActuator>",
        "<PointActuator name=\"pa_global\"><body>d</body><point>0.3 -0.1 0.2</point><point_is_global>true"
        "</point_is_global><direction>0 1 1</direction><force_is_global>true</force_is_global></PointActuator>"],
    "TorqueActuator": [
        "<TorqueActuator name=\"ta\"><bodyA>b</bodyA><bodyB>d</bodyB><torque_is_global>false</torque_is_global>"
        "<axis>0.3 -1 0.2</axis><optimal_force>2</optimal_force></TorqueActuator>",
        "<TorqueActuator name=\"ta_one\"><bodyA>c</bodyA><bodyB>ground</bodyB><axis>1 0 1</axis></TorqueActuator>"],
    "PointToPointSpring": [
        "<PointToPointSpring name=\"ps\"><socket_body1>/bodyset/a</socket_body1><socket_body2>/bodyset/d"
        "</socket_body2><point1>0 0.1 0.05</point1><point2>0.1 0 -0.1</point2><stiffness>40</stiffness>"
        "<rest_length>0.1</rest_length></PointToPointSpring>",
        "<PointToPointSpring name=\"ps_ground\"><socket_body1>/ground</socket_body1><socket_body2>/jointset/un/un_c"
        "</socket_body2><point1>0.2 0.3 0</point1><point2>0.05 0.1 0</point2><stiffness>25</stiffness>"
        "</PointToPointSpring>"],
    "BushingForce": [
        "<BushingForce name=\"bu\"><socket_frame1>f1</socket_frame1><socket_frame2>f2</socket_frame2>"
        "<frames>" + OFFSET.format(n="f1", p="/bodyset/a", t="0.1 0.05 0", o="0.3 -0.2 0.5")
        + OFFSET.format(n="f2", p="/bodyset/d", t="0 0.1 -0.05", o="-0.4 0.1 0.2") + "</frames>"
        "<rotational_stiffness>4 5 6</rotational_stiffness><translational_stiffness>60 70 80"
        "</translational_stiffness><rotational_damping>0.4 0.5 0.6</rotational_damping><translational_damping>"
        "1 2 3</translational_damping></BushingForce>",
        "<BushingForce name=\"bu_ground\"><socket_frame1>/ground</socket_frame1><socket_frame2>/bodyset/c"
        "</socket_frame2><rotational_stiffness>1 2 3</rotational_stiffness><translational_stiffness>30 20 10"
        "</translational_stiffness><rotational_damping>0.1 0.2 0.3</rotational_damping></BushingForce>"],
    "ExpressionBasedCoordinateForce": [
        "<ExpressionBasedCoordinateForce name=\"ex\"><coordinate>un_y</coordinate>"
        "<expression>-2.5*q^3+0.3*sin(2*q)-0.4*qdot*abs(qdot)+max(q,0.1)/3</expression>"
        "</ExpressionBasedCoordinateForce>",
        "<ExpressionBasedCoordinateForce name=\"ex2\"><coordinate>pin_q</coordinate>"
        "<expression>-exp(-q^2)*(1+qdot)</expression></ExpressionBasedCoordinateForce>"],
}


def write(tmp_path, forces, name="f.osim"):
    text = document(JOINTS, BODIES, COUPLER).replace(
        "</Model>", f"<ForceSet><objects>{''.join(forces)}</objects></ForceSet></Model>")
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def load(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ej.load_opensim(path)


def opensim_qdd(path, names, q, qd, u):
    """OpenSim's generalised accelerations (``realizeAcceleration``, forces kept) in ``names``' order."""
    om = opensim.Model(path)
    s = om.initSystem()
    cs = om.getCoordinateSet()
    for n, x, y in zip(names, q, qd):
        c = cs.get(n)
        c.setValue(s, float(x), False)
        c.setSpeedValue(s, float(y))
    om.realizeVelocity(s)
    c = om.updControls(s)
    assert c.size() == len(u)
    for k, x in enumerate(u):
        c.set(k, float(x))
    om.setControls(s, c)
    om.realizeAcceleration(s)
    return np.array([cs.get(n).getAccelerationValue(s) for n in names])


def check_against_opensim(path, n=3, seed=0):
    """OpenSim's accelerations of every coordinate (the coupled one too: OpenSim enforces the
    coupler) against ej.aba with the elements' forces (reduced by G^T), expanded.  Returns the
    model and the worst relative error."""
    m = load(path)
    E = m.actuation.elements
    assert m.actuation.nu == E.nu and m.actuation.ctrl_names == tuple(E.ctrl_names)
    names = m.expanded().coordinate_names
    rng = np.random.default_rng(seed)
    worst = 0.0
    for _ in range(n):
        q, qd, u = rng.uniform(-1.0, 1.0, m.nq), rng.normal(size=m.nv), 2.0 * rng.normal(size=E.nu)
        Q = element_qfrc(m, E, q, qd, u)
        qdd = ej.aba(m, q, qd, Q)
        ref = opensim_qdd(path, names, m.expand(q), m.expand_v(qd, q), u)
        scale = max(1.0, np.abs(ref).max())
        err = np.abs(m.expand_a(qdd, q, qd) - ref).max() / scale
        worst = max(worst, err)
        assert err <= 1e-9, (path, err, qdd, ref)
        # the forces matter: without them the accelerations differ
        assert np.abs(m.expand_a(ej.aba(m, q, qd, np.zeros(m.nv)), q, qd) - ref).max() > 1e-3 * scale
        if E.nu:
            free = opensim_qdd(path, names, m.expand(q), m.expand_v(qd, q), np.zeros(E.nu))
            assert np.abs(free - ref).max() > 1e-6
    return m, worst


@pytest.mark.parametrize("kind", sorted(FORCES))
def test_each_force_kind_against_opensim(tmp_path, kind):
    m, worst = check_against_opensim(write(tmp_path, FORCES[kind]))
    assert set(m.actuation.elements.kinds) == {kind}


def test_all_forces_together_against_opensim(tmp_path):
    m, worst = check_against_opensim(write(tmp_path, [f for k in sorted(FORCES) for f in FORCES[k]]), n=4, seed=3)
    E = m.actuation.elements
    assert m.has_couplers and "dep_q" not in m.coordinate_names
    assert E.ctrl_names == ["ca_pin", "ca_sl", "ca_off", "ca_dep", "pa_local", "pa_global", "ta", "ta_one"]
    assert E.ctrl_bounds[0].tolist() == [-1.0, 1.0] and np.isinf(E.ctrl_bounds[1]).all()
    assert np.isinf(m.actuation.ctrlrange).all()           # OpenSim applies controls unclamped
    # actuators and the rest apart (MuJoCo's qfrc_actuator, qfrc_passive): the actuators' part is
    # linear in the controls, the rest does not depend on them
    q, qd, u = np.linspace(-0.6, 0.7, m.nq), np.linspace(0.5, -0.4, m.nv), np.linspace(-1, 2, E.nu)
    act, pas = element_qfrc(m, E, q, qd, u, split=True)
    act2, pas2 = element_qfrc(m, E, q, qd, 2 * u, split=True)
    assert np.allclose(act + pas, element_qfrc(m, E, q, qd, u), rtol=1e-14, atol=1e-12)
    assert np.allclose(act2, 2 * act, rtol=1e-13, atol=1e-12) and np.array_equal(pas2, pas)
    assert np.abs(act).max() > 0.1 and np.abs(pas).max() > 0.1
    assert np.array_equal(E.actuator_force(u), [3 * u[0], 20 * u[1], 0.0, 4 * u[3], 5 * u[4], u[5], 2 * u[6], u[7]])
    m2 = pickle.loads(pickle.dumps(m))
    q = np.linspace(-0.5, 0.5, m.nq)
    u = np.arange(E.nu, dtype=float)
    assert np.array_equal(element_qfrc(m2, m2.actuation.elements, q, q, u), element_qfrc(m, E, q, q, u))


def test_shared_double_pendulum_actuators():
    path = os.path.join(SHARED, "double_pendulum.osim")
    if not os.path.exists(path):
        pytest.skip(f"the shared OpenSim models are not here ({os.path.abspath(SHARED)} is absent)")
    m = load(path)
    E = m.actuation.elements
    assert E.kinds == ["CoordinateActuator"] * 2 and m.actuation.nu == 2
    assert not any("CoordinateActuator" in n for n in m.notes)
    # each drives its coordinate's velocity with its optimal force (the tables; the dynamics of
    # this kind of force are checked against OpenSim above)
    om = opensim.Model(path)
    fb, ib = E.packed()
    for k, name in enumerate(E.names):
        a = opensim.CoordinateActuator.safeDownCast(om.getForceSet().get(name))
        row = 8 + 10 * k
        assert ib[row + 3] == m.coordinate_names.index(a.get_coordinate())
        assert fb[ib[row + 6]] == a.getOptimalForce()


@pytest.mark.parametrize("name,left", [("arm26", {"Thelen2003Muscle": 6}), ("leg6dof9musc", {"Thelen2003Muscle": 9}),
                                       ("gait2392_thelen2003muscle", {"Thelen2003Muscle": 92})])
def test_shared_muscle_models_list_what_is_left(name, left):
    path = os.path.join(SHARED, name + ".osim")
    if not os.path.exists(path):
        pytest.skip(f"the shared OpenSim models are not here ({os.path.abspath(SHARED)} is absent)")
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        m = ej.load_opensim(path)
    said = [w.message for w in rec if isinstance(w.message, ej.OpenSimWarning)]
    assert len(said) == 1 and all(said[0].left_out.get(k) == n for k, n in left.items())
    assert m.actuation is None and any(f"{n} {k}" in note for note in m.notes for k, n in left.items())


def test_left_out_and_bad_forces(tmp_path):
    locked = document([joint("PinJoint", "p", G, B + "a", [("x", 0.1, True)]),
                       joint("PinJoint", "p2", B + "a", B + "b", [("y", 0.2, False)])], ["a", "b"])
    forces = ("<CoordinateActuator name=\"on_locked\"><coordinate>x</coordinate></CoordinateActuator>"
              "<HuntCrossleyForce name=\"hc\"/><Thelen2003Muscle name=\"mu\"/>"
              "<CoordinateActuator name=\"ok\"><coordinate>y</coordinate></CoordinateActuator>")
    p = tmp_path / "left.osim"
    p.write_text(locked.replace("</Model>", f"<ForceSet><objects>{forces}</objects></ForceSet></Model>"))
    with pytest.warns(ej.OpenSimWarning, match="on_locked") as rec:
        m = ej.load_opensim(p)
    w = [r.message for r in rec if isinstance(r.message, ej.OpenSimWarning)][0]
    assert w.left_out == {"HuntCrossleyForce": 1, "Thelen2003Muscle": 1}
    assert m.actuation.ctrl_names == ("on_locked", "ok") and any("'on_locked'" in n and "locked" in n for n in m.notes)
    # the welded coordinate's actuator applies nothing; the other one drives y
    Q = element_qfrc(m, m.actuation.elements, np.zeros(1), np.zeros(1), np.array([5.0, 2.0]))
    assert Q.tolist() == [2.0]
    bad = {
        "no coordinate named 'nope'":
            "<CoordinateActuator name=\"ca\"><coordinate>nope</coordinate></CoordinateActuator>",
        "no body named 'zz'": "<PointActuator name=\"pa\"><body>zz</body></PointActuator>",
        r"ExpressionBasedCoordinateForce 'ex'.*'2\*q\+': expected a number.*position 4":
            "<ExpressionBasedCoordinateForce name=\"ex\"><coordinate>sl_x</coordinate><expression>2*q+</expression>"
            "</ExpressionBasedCoordinateForce>",
        r"'ex'.*unknown name.*'qq' at position 2":
            "<ExpressionBasedCoordinateForce name=\"ex\"><coordinate>sl_x</coordinate><expression>2*qq</expression>"
            "</ExpressionBasedCoordinateForce>",
        "BushingForce 'bu'.*frame 'f9'": "<BushingForce name=\"bu\"><socket_frame1>f9</socket_frame1>"
                                         "<socket_frame2>/ground</socket_frame2></BushingForce>",
    }
    for k, (msg, f) in enumerate(bad.items()):
        with pytest.raises(ModelError, match=msg):
            load(write(tmp_path, [f], name=f"bad{k}.osim"))


# ---------------------------------------------------------------------------- the expression parser
def test_expression_against_formulas():
    cases = {
        "-2*q-0.1*qdot^2": lambda q, d: -2 * q - 0.1 * d ** 2,
        "-q^2": lambda q, d: -(q ** 2),
        "2^3^2 + q": lambda q, d: 2.0 ** 9 + q,
        "-q*qdot/ (1+q^2)": lambda q, d: (-q) * d / (1 + q * q),
        "sqrt(abs(q))*cos(qdot) - log(1+q^2) + tanh(qdot)": lambda q, d: np.sqrt(abs(q)) * np.cos(d)
        - np.log(1 + q * q) + np.tanh(d),
        "max(q, qdot) - min(q, 2*qdot) + pow(abs(q), 1.5) + atan2(q, qdot)":
            lambda q, d: max(q, d) - min(q, 2 * d) + abs(q) ** 1.5 + np.arctan2(q, d),
        "step(q)*square(q) + (1-step(q))*cube(qdot) + recip(2+q) + 1.5e-1*exp(-q) - delta(q-q)":
            lambda q, d: (q * q if q >= 0 else d ** 3) + 1 / (2 + q) + 0.15 * np.exp(-q) - 1.0,
        "((q))": lambda q, d: q,
    }
    rng = np.random.default_rng(7)
    q, qd = rng.uniform(-1.5, 1.5, 50), rng.uniform(-2, 2, 50)
    out = np.zeros(50)
    for text, f in cases.items():
        e = X.parse(text)
        ref = np.array([f(a, b) for a, b in zip(q, qd)])
        X.evaluate(np.ascontiguousarray(e.ops.ravel()), e.consts, q, qd, out)
        assert np.allclose(out, ref, rtol=1e-14, atol=1e-14), text
        assert np.allclose([e(a, b) for a, b in zip(q, qd)], ref, rtol=1e-14, atol=1e-14), text


def test_expression_is_the_derivative_of_a_potential():
    """A force written as -dV/dq by hand matches central differences of V (precedence, signs)."""
    V = lambda q: q ** 3 * np.cos(q) + np.exp(-q ** 2 / 2) / (1 + q ** 2)   # noqa: E731
    e = X.parse("-(3*q^2*cos(q) - q^3*sin(q) + (-q*exp(-q^2/2)*(1+q^2) - exp(-q^2/2)*2*q)/(1+q^2)^2)")
    h = 1e-5
    for q in np.linspace(-2, 2, 17):
        fd = -(V(q + h) - V(q - h)) / (2 * h)
        assert abs(e(q, 0.0) - fd) <= 1e-8 * max(1.0, abs(fd))


def test_expression_errors_name_the_position():
    for text, pos in (("2*", 2), ("q+(1", 4), ("sin(q,1)", 5), ("q $ 2", 2), ("3q", 1), ("foo(q)", 0), ("max(q)", 5)):
        with pytest.raises(X.ExpressionError, match=rf"ExpressionBasedCoordinateForce 'f'.*position {pos}"):
            X.parse(text, "ExpressionBasedCoordinateForce 'f'")
    with pytest.raises(X.ExpressionError, match="nests too deeply"):
        X.parse("(q+" * 40 + "q" + ")" * 40, "f")
    with pytest.raises(X.ExpressionError, match="empty"):
        X.parse("  ", "f")


def test_expression_semantics_match_opensim(tmp_path):
    """Precedence, associativity, unary minus and each function Lepton has, against OpenSim's own
    evaluation of the force (``getForceMagnitude``), in Python and compiled."""
    path = write(tmp_path, [FORCES["ExpressionBasedCoordinateForce"][1]])
    om = opensim.Model(path)
    ex = opensim.ExpressionBasedCoordinateForce.safeDownCast(om.getForceSet().get("ex2"))
    texts = ["-q^2", "2^-q", "-2^q", "q^2^0.5", "-q*-qdot", "2*-q^2", "- - q", "q/qdot/2", "q-qdot-1", "q^-2",
             "step(q)+step(0*q)+delta(q-q)+delta(q)", "recip(q)+square(q)+cube(qdot)", "sec(q)+csc(q)+cot(q)",
             "min(q,qdot)-max(q,qdot)", "erf(q)+erfc(qdot)+abs(-q)", "1e-1*q+.5+2E3*qdot",
             "sinh(q)*cosh(qdot)/tanh(q)", "asin(q)+acos(q/2)+atan(qdot)", "log(q)*exp(qdot)-sqrt(q)", "(q)^(qdot)",
             "sin(q)*cos(qdot)+tan(q*qdot)", "q * 2 + qd ot"]
    worst = 0.0
    for text in texts:
        ex.setExpression(text)
        s = om.initSystem()
        c = om.getCoordinateSet().get("pin_q")
        c.setValue(s, 0.3, False)
        c.setSpeedValue(s, 0.7)
        om.realizeDynamics(s)
        ref = ex.getForceMagnitude(s)
        e = X.parse("".join(text.split()))
        out = np.zeros(1)
        X.evaluate(np.ascontiguousarray(e.ops.ravel()), e.consts, np.array([0.3]), np.array([0.7]), out)
        worst = max(worst, abs(e(0.3, 0.7) - ref) / max(1.0, abs(ref)), abs(out[0] - ref) / max(1.0, abs(ref)))
        assert abs(out[0] - ref) <= 1e-14 * max(1.0, abs(ref)), (text, out[0], ref)
    assert worst <= 1e-14


def test_coordinate_motion_types_match_opensim(tmp_path):
    """A CoordinateLimitForce reads degrees on rotational coordinates: their motion type is
    OpenSim's (a CustomJoint's from its transform axes), for every joint kind."""
    from test_opensim import LIN, ONE, SPLINE, custom, kinds_file

    from ejce_nb.io.opensim_forces import motion_types
    from ejce_nb.io.opensim_read import _Joint, _objects, _read

    slope1 = "<LinearFunction><coefficients>1 0</coefficients></LinearFunction>"
    extra = tmp_path / "types.osim"
    extra.write_text(document([custom("cx", G, B + "a", [(n, 0.0, False) for n in ("r", "t", "cp", "tr")],
                                      {"rotation2": ("r", "0 1 0", ONE), "translation1": ("t", "1 0 0", ONE),
                                       "rotation1": ("cp", "1 0 0", LIN), "translation3": ("cp tr", "0 0 1", slope1),
                                       "rotation3": ("tr", "0 0 1", SPLINE)})], ["a"]))
    kinds = {1: "rotational", 2: "translational", 3: "coupled"}
    seen = set()
    for path in (kinds_file(tmp_path, with_euler_speeds=True), str(extra)):
        model, _ = _read(path)
        mine = motion_types([_Joint(el, "JointSet") for el in _objects(model, "JointSet")])
        om = opensim.Model(path)
        om.initSystem()
        cs = om.getCoordinateSet()
        for i in range(cs.getSize()):
            c = cs.get(i)
            assert mine[c.getName()] == kinds[c.getMotionType()], c.getName()
            seen.add(mine[c.getName()])
    assert seen == {"rotational", "translational", "coupled"}


def test_opensim_33_format_forces_against_opensim(tmp_path):
    """The 3.3 names (PointToPointSpring's body1 / body2, BushingForce's body_1, location_body_1,
    orientation_body_1, ..., isDisabled) read as OpenSim 4.6 reads them."""
    from test_opensim import document_33, joint_33

    bodies = [("a", joint_33("PinJoint", "p1", "ground", [("x1", 0.1)])),
              ("b", joint_33("PinJoint", "p2", "a", [("x2", 0.2)])),
              ("c", joint_33("PinJoint", "p3", "b", [("x3", 0.0)]))]
    cons = ("<CoordinateCouplerConstraint name=\"cc\"><isDisabled>false</isDisabled><coupled_coordinates_function>"
            "<LinearFunction><coefficients>0.7 0.1</coefficients></LinearFunction></coupled_coordinates_function>"
            "<independent_coordinate_names>x1</independent_coordinate_names><dependent_coordinate_name>x3"
            "</dependent_coordinate_name></CoordinateCouplerConstraint>")
    forces = ("<BushingForce name=\"bu\"><body_1>a</body_1><body_2>c</body_2><location_body_1>0.1 0.2 0"
              "</location_body_1><orientation_body_1>0.3 0 0.1</orientation_body_1><location_body_2>0 0.1 0.2"
              "</location_body_2><orientation_body_2>0.2 0.1 -0.3</orientation_body_2><rotational_stiffness>1 2 3"
              "</rotational_stiffness><translational_stiffness>40 50 60</translational_stiffness>"
              "<rotational_damping>0.1 0.2 0.3</rotational_damping></BushingForce>"
              "<PointToPointSpring name=\"ps\"><body1>ground</body1><body2>b</body2><point1>0 0.1 0</point1>"
              "<point2>0.1 0 0</point2><stiffness>30</stiffness><rest_length>0.05</rest_length></PointToPointSpring>"
              "<CoordinateActuator name=\"ca\"><coordinate>x3</coordinate><optimal_force>2</optimal_force>"
              "</CoordinateActuator>"
              "<CoordinateActuator name=\"off\"><isDisabled>true</isDisabled><coordinate>x2</coordinate>"
              "</CoordinateActuator>"
              "<TorqueActuator name=\"ta\"><bodyA>b</bodyA><bodyB>a</bodyB><axis>0 0.3 1</axis>"
              "<torque_is_global>false</torque_is_global></TorqueActuator>")
    p = tmp_path / "f33.osim"
    p.write_text(document_33(bodies, cons).replace("</Model>", f"<ForceSet><objects>{forces}</objects></ForceSet>"
                                                              "</Model>"))
    m, worst = check_against_opensim(str(p), n=3, seed=8)
    assert m.actuation.elements.kinds == ["BushingForce", "PointToPointSpring", "CoordinateActuator",
                                          "CoordinateActuator", "TorqueActuator"]
    assert m.actuation.ctrl_names == ("ca", "off", "ta")
