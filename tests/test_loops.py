"""Loop closures: assembly, constrained dynamics and simulation against closed forms, a hand
reduction to one coordinate, Pinocchio's constrained dynamics and the identities."""
import math

import numpy as np
import pytest

import ejce_nb as ej

J = ej.joints
Z = (0.0, 0.0, 1.0)
# a crank-rocker (Grashof: the crank is the shortest link, s + l <= p + q)
A_, B_, C_, D_ = 1.0, 3.0, 2.5, 3.2


def rod(m, L):
    return dict(mass=m, com=(L / 2, 0.0, 0.0), inertia=np.diag([1e-3 * m, m * L * L / 12, m * L * L / 12]))


def fourbar(closure=None, coupler=None, gravity=(0.0, -9.81, 0.0)):
    """Crank (at the origin), coupler (on the crank) and rocker (at (D, 0, 0)), revolute about z
    (the coupler's joint ``coupler`` if given); the coupler's end closes on the rocker's end."""
    b = ej.ModelBuilder(gravity=gravity)
    b.add_body("crank", joint=J.Revolute(Z), **rod(1.0, A_))
    b.add_body("coupler", parent="crank", joint=coupler or J.Revolute(Z),
               placement=ej.Transform(translation=(A_, 0, 0)), **rod(2.0, B_))
    b.add_body("rocker", joint=J.Revolute(Z), placement=ej.Transform(translation=(D_, 0, 0)), **rod(1.5, C_))
    b.add_loop("pin", "coupler", "rocker", joint=closure or J.Revolute(Z),
               placement_a=ej.Transform(translation=(B_, 0, 0)), placement_b=ej.Transform(translation=(C_, 0, 0)))
    return b.build()


@pytest.fixture(scope="module")
def planar():
    return fourbar()


def freudenstein_theta4(th2):
    """Both closed-form rocker angles of the four-bar at crank angle th2 (Freudenstein)."""
    K1, K2, K3 = D_ / A_, D_ / C_, (A_ ** 2 - B_ ** 2 + C_ ** 2 + D_ ** 2) / (2 * A_ * C_)
    Aa = math.cos(th2) - K1 - K2 * math.cos(th2) + K3
    Bb = -2.0 * math.sin(th2)
    Cc = K1 - (K2 + 1.0) * math.cos(th2) + K3
    disc = math.sqrt(Bb * Bb - 4 * Aa * Cc)
    return [2.0 * math.atan((-Bb + s * disc) / (2 * Aa)) for s in (1.0, -1.0)]


def wrap(x):
    return (x + np.pi) % (2 * np.pi) - np.pi


def test_builder_json_summary(planar):
    L = planar.loops[0]
    assert planar.has_loops and planar.nc == 5 and L.nc == 5 and L.body_a == 2 and L.body_b == 3
    assert "loop pin: coupler -> rocker closed by Revolute" in planar.summary()
    again = ej.Model.from_json(planar.to_json())
    assert again.to_dict() == planar.to_dict() and again.loops[0].nc == 5
    d = planar.to_dict()
    d["loops"][0]["body_b"] = "nowhere"
    with pytest.raises(ej.ModelError, match=r"loops\[0\].*nowhere"):
        ej.Model.from_dict(d)
    b = ej.ModelBuilder()
    b.add_body("a", joint=J.Revolute(Z), mass=1.0, inertia=np.eye(3))
    with pytest.raises(ej.ModelError, match="removes no relative freedom"):
        b.add_loop("x", "a", "world", joint=J.Free())
    with pytest.raises(ej.ModelError, match="same body"):
        b.add_loop("y", "a", "a")


def test_fourbar_output_angle_is_freudenstein_over_a_full_turn(planar):
    q = np.array([0.0, 1.0, 1.5])
    for th2 in np.linspace(0.0, 2 * np.pi, 25):
        q[0] = th2
        q = ej.assemble(planar, q, fixed=[0])
        assert q[0] == th2
        ref = freudenstein_theta4(th2)
        assert min(abs(wrap(q[2] - r)) for r in ref) < 1e-10
    # two unit cranks 5 apart cannot meet: no closure near any guess
    bad = ej.ModelBuilder(gravity=(0, 0, 0))
    bad.add_body("a", joint=J.Revolute(Z), **rod(1.0, 1.0))
    bad.add_body("c", joint=J.Revolute(Z), placement=ej.Transform(translation=(5.0, 0, 0)), **rod(1.0, 1.0))
    bad.add_loop("l", "a", "c", joint=J.Spherical(), placement_a=ej.Transform(translation=(1.0, 0, 0)),
                 placement_b=ej.Transform(translation=(1.0, 0, 0)))
    with pytest.raises(ej.ConstraintError, match=r"no closure of the loops found near q.*'l'"):
        ej.assemble(bad.build(), np.array([0.1, 3.0]))


def _reduced_reference(model, th, thd, tau2):
    """theta'' of the four-bar reduced by hand to the crank angle: Lagrange's equation
    m(th) th'' + 1/2 m'(th) th'^2 + V'(th) = tau, m = g^T M g with g = dq/dth from finite
    differences of assembled configurations (no constraint Jacobian)."""
    h = 1e-3
    guess = np.array([th, 1.0, 1.5])

    def q_at(x):
        g = guess.copy()
        g[0] = x
        return ej.assemble(model, ej.assemble(model, g, fixed=[0]), fixed=[0], tol=1e-14)

    def d1(f, x):
        return (f(x - 2 * h) - 8 * f(x - h) + 8 * f(x + h) - f(x + 2 * h)) / (12 * h)

    def g_at(x):
        return d1(q_at, x)

    def m_at(x):
        g = g_at(x)
        return g @ ej.mass_matrix(model.open_tree(), q_at(x)) @ g

    V = lambda x: ej.potential_energy(model, q_at(x))
    q, g = q_at(th), g_at(th)
    qdd_th = (tau2 - 0.5 * d1(m_at, th) * thd ** 2 - d1(V, th)) / m_at(th)
    return q, g, qdd_th


def test_fourbar_dynamics_equals_the_hand_reduced_one_coordinate_mechanism(planar):
    for th, thd, tau2 in ((0.4, 0.0, 0.0), (2.0, 1.7, 3.0)):
        q, g, ref = _reduced_reference(planar, th, thd, tau2)
        qd = g * thd
        # a revolute closure of a planar mechanism repeats three of its constraints: reported
        with pytest.raises(ej.ConstraintError, match=r"rank 2 of 5.*loop 'pin'.*rotation about x"):
            ej.constrained_dynamics(planar, q, qd)
        r = ej.constrained_dynamics(planar, q, qd, np.array([tau2, 0.0, 0.0]), redundant="lstsq")
        assert r.rank == 2 and r.residual < 1e-10
        assert abs(r.qdd[0] - ref) < 1e-6 * max(1.0, abs(ref))
        # the constraint wrench is planar and M qdd + h = tau + Jc^T lam
        assert np.all(np.abs(r.wrench[0, [0, 1, 5]]) < 1e-8)
        tree = planar.open_tree()
        lhs = ej.mass_matrix(tree, q) @ r.qdd + ej.nonlinear_effects(tree, q, qd)
        assert np.allclose(lhs, np.array([tau2, 0, 0]) + r.tau_constraint, atol=1e-10)
        # inverse dynamics for the prescribed crank acceleration gives the torque back
        inv = ej.constrained_inverse_dynamics(planar, q, qd, [r.qdd[0]], independent=[0], redundant="lstsq")
        assert np.allclose(inv.qdd, r.qdd, atol=1e-9) and abs(inv.tau[0] - tau2) < 1e-8
        assert np.all(inv.tau[1:] == 0.0)


def planar_pin_pose(q, t, p):
    """A pin in a plane seen in space: rotation about z, x, y and a slide along z (nv 4)."""
    jm = ej.jmath
    return jm.matmul(jm.matmul(jm.rot_z(q[0]), jm.rot_x(q[1])), jm.rot_y(q[2])), (0.0, 0.0, q[3])


def test_a_custom_closure_removes_six_minus_nv_and_needs_no_least_squares(planar):
    pin_in_plane = J.Custom(planar_pin_pose, 4, name="planar_pin", q_range=(-1.0, 1.0))
    m = fourbar(closure=pin_in_plane)
    assert m.loops[0].nc == 2 and m.nc == 2
    q = ej.assemble(m, np.array([0.9, 1.0, 1.5]), fixed=[0])
    assert np.allclose(q, ej.assemble(planar, np.array([0.9, 1.0, 1.5]), fixed=[0]), atol=1e-10)
    qd = ej.project_velocity(m, q, np.array([1.5, 0.0, 0.0]))
    r = ej.constrained_dynamics(m, q, qd, np.array([0.5, 0.0, 0.0]))     # full rank: no redundant='lstsq'
    ref = ej.constrained_dynamics(planar, q, qd, np.array([0.5, 0.0, 0.0]), redundant="lstsq")
    assert r.rank == 2 and np.allclose(r.qdd, ref.qdd, atol=1e-9)
    assert np.allclose(r.wrench, ref.wrench, atol=1e-8)


def test_slider_crank_against_its_closed_form():
    r_, l_ = 0.5, 1.6
    b = ej.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    b.add_body("crank", joint=J.Revolute(Z), **rod(1.0, r_))
    b.add_body("rod", parent="crank", joint=J.Revolute(Z), placement=ej.Transform(translation=(r_, 0, 0)),
               **rod(1.0, l_))
    b.add_body("slider", joint=J.Prismatic((1.0, 0.0, 0.0)), mass=2.0, inertia=0.1 * np.eye(3))
    b.add_loop("wrist", "rod", "slider", joint=J.Revolute(Z), placement_a=ej.Transform(translation=(l_, 0, 0)))
    m = b.build()
    q = np.array([0.0, 0.0, r_ + l_])
    thd = 2.3
    for th in np.linspace(0.0, 2 * np.pi, 9)[1:]:
        q[0] = th
        q = ej.assemble(m, q, fixed=["crank_joint"])
        s, c = math.sin(th), math.cos(th)
        root = math.sqrt(l_ ** 2 - (r_ * s) ** 2)
        assert abs(q[2] - (r_ * c + root)) < 1e-10
        # velocities on the constraint for the crank rate, then the slider's acceleration
        lt = ej.loop_terms(m, q, np.zeros(3))
        vdep = np.linalg.lstsq(lt.Jc[:, 1:], -lt.Jc[:, 0] * thd, rcond=None)[0]
        qd = np.concatenate([[thd], vdep])
        x1 = -r_ * s - r_ * r_ * s * c / root
        x2 = -r_ * c - r_ * r_ * (c * c - s * s) / root - r_ ** 4 * s * s * c * c / root ** 3
        assert abs(qd[2] - x1 * thd) < 1e-10
        inv = ej.constrained_inverse_dynamics(m, q, qd, [0.0], independent=["crank_joint"], redundant="lstsq")
        assert abs(inv.qdd[2] - x2 * thd ** 2) < 1e-9
        # power balance: the crank torque's power is the rate of the energy
        tree = m.open_tree()
        Mq = ej.mass_matrix(tree, q)
        dT = qd @ Mq @ inv.qdd + 0.5 * qd @ (
            (ej.mass_matrix(tree, q + 1e-6 * qd) - ej.mass_matrix(tree, q - 1e-6 * qd)) / 2e-6) @ qd
        dV = -np.dot(ej.nonlinear_effects(tree, q, np.zeros(3)), qd)
        assert abs(inv.tau[0] * thd - (dT - dV)) < 1e-6


def delta(fr=0.6, er=0.15, rf=0.5, re=1.1):
    b = ej.ModelBuilder(gravity=(0.0, 0.0, -9.81))
    b.add_body("platform", joint=J.Translation(), mass=0.5, inertia=0.01 * np.eye(3))
    for k in range(3):
        phi = 2 * np.pi * k / 3
        Rz = np.array([[math.cos(phi), -math.sin(phi), 0], [math.sin(phi), math.cos(phi), 0], [0, 0, 1]])
        b.add_body(f"arm{k}", joint=J.Revolute((0.0, 1.0, 0.0)),
                   placement=ej.Transform(rotation=Rz, translation=Rz @ np.array([fr, 0.0, 0.0])), **rod(0.3, rf))
        b.add_body(f"forearm{k}", parent=f"arm{k}", joint=J.Spherical(),
                   placement=ej.Transform(translation=(rf, 0.0, 0.0)), **rod(0.2, re))
        b.add_loop(f"wrist{k}", f"forearm{k}", "platform", joint=J.Spherical(),
                   placement_a=ej.Transform(translation=(re, 0.0, 0.0)),
                   placement_b=ej.Transform(translation=Rz @ np.array([er, 0.0, 0.0])))
    return b.build(), (fr, er, rf, re)


def delta_ik(P, fr, er, rf, re):
    """The Delta robot's analytic inverse kinematics: both angles of each arm (about its local
    y axis, elbow at F + rf (cos th u - sin th z)) that reach the platform at P."""
    out = []
    for k in range(3):
        phi = 2 * np.pi * k / 3
        u = np.array([math.cos(phi), math.sin(phi), 0.0])
        a = fr * u - (P + er * u)
        A = 2 * rf * (a @ u)
        B = -2 * rf * a[2]
        C = re * re - a @ a - rf * rf
        base, spread = math.atan2(B, A), math.acos(C / math.hypot(A, B))
        out.append((wrap(base + spread), wrap(base - spread)))
    return out


def test_delta_robot_assembly_equals_its_inverse_kinematics():
    m, dims = delta()
    arms = [m.q_slice(m.joint_index(f"arm{k}_joint")).start for k in range(3)]
    for P in (np.array([0.0, 0.0, -0.9]), np.array([0.12, -0.08, -1.0])):
        # a rough guess: the arms level, the forearms pointing down at the platform
        q = m.neutral()
        q[m.q_slice(1)] = P
        for k in range(3):
            s = m.q_slice(m.joint_index(f"forearm{k}_joint"))
            q[s] = [math.cos(-0.6), 0.0, math.sin(-0.6), 0.0]       # about y: the rod end goes down
        q = ej.assemble(m, q, fixed=[0, 1, 2])
        assert np.array_equal(q[:3], P)
        ref = delta_ik(P, *dims)
        for k in range(3):
            assert min(abs(wrap(q[arms[k]] - r)) for r in ref[k]) < 1e-9
        lt = ej.loop_terms(m, q, np.zeros(m.nv))
        assert lt.Jc.shape == (9, m.nv) and lt.position_residual < 1e-12
        assert np.linalg.matrix_rank(lt.Jc) == 9


def test_energy_is_conserved_and_the_constraints_hold_over_ten_seconds(planar):
    q0 = ej.assemble(planar, np.array([0.3, 1.0, 1.5]), fixed=[0])
    lt = ej.loop_terms(planar, q0, np.zeros(3))
    qd0 = np.concatenate([[2.0], np.linalg.lstsq(lt.Jc[:, 1:], -lt.Jc[:, 0] * 2.0, rcond=None)[0]])
    tr = ej.simulate(planar, q0, qd0, 10.0, 1e-3, method="rk4", redundant="lstsq", record_every=50)
    assert len(tr.t) == 201 and tr.t[-1] == 10.0
    E = tr.energy
    assert np.max(np.abs(E - E[0])) / np.max(np.abs(tr.kinetic)) <= 1e-7
    assert tr.position_residual.max() <= 1e-10 and tr.velocity_residual.max() <= 1e-10


@pytest.mark.parametrize("method", ["euler", "rk2", "symplectic", "dopri5"])
def test_every_method_stays_on_the_constraints(planar, method):
    q0 = ej.assemble(planar, np.array([0.3, 1.0, 1.5]), fixed=[0])
    tr = ej.simulate(planar, q0, np.zeros(3), 0.2, 0.02, method=method, redundant="lstsq")
    assert tr.position_residual.max() <= 1e-10 and tr.velocity_residual.max() <= 1e-10
    assert tr.info["method"] == method and np.all(np.isfinite(tr.q))


def test_a_list_or_a_read_only_array_compiles_nothing_more(planar):
    """The input layer hands the closure kernel writeable C-contiguous float64 arrays, whatever
    the caller passes (a list, a broadcast or read-only view): one compiled signature."""
    from ejce_nb._jit import compile_seconds
    q = ej.assemble(planar, [0.3, 0.5, 1.6])
    ref = ej.constrained_dynamics(planar, q, np.zeros(3), np.zeros(3), redundant="lstsq")
    compiled = compile_seconds()
    ro = np.broadcast_to(np.zeros(3), (3,))
    r = ej.constrained_dynamics(planar, list(q), ro, [0.0, 0.0, 0.0], redundant="lstsq")
    assert compile_seconds() == compiled
    np.testing.assert_array_equal(r.qdd, ref.qdd)


def test_batch_equals_loop_bitwise(planar):
    qa = ej.assemble(planar, np.array([0.3, 1.0, 1.5]), fixed=[0])
    qb = ej.assemble(planar, np.array([1.3, 0.5, 1.9]), fixed=[0])
    Q = np.stack([qa, qb])
    V = np.array([[0.5, 0.0, 0.0], [-1.0, 0.2, 0.1]])
    T = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 0.5]])
    rb = ej.constrained_dynamics(planar, Q, V, T, redundant="lstsq")
    for k in range(2):
        r1 = ej.constrained_dynamics(planar, Q[k], V[k], T[k], redundant="lstsq")
        assert np.array_equal(rb.qdd[k], r1.qdd) and np.array_equal(rb.wrench[k], r1.wrench)
    tb = ej.simulate(planar, Q, np.zeros((2, 3)), 0.05, 0.01, redundant="lstsq")
    for k in range(2):
        t1 = ej.simulate(planar, Q[k], np.zeros(3), 0.05, 0.01, redundant="lstsq")
        assert np.array_equal(tb.q[:, k], t1.q) and np.array_equal(tb.qd[:, k], t1.qd)


def test_against_pinocchio_constraint_dynamics_with_a_spherical_closure():
    pin = pytest.importorskip("pinocchio")
    from pin_oracle import PinModel
    # a spatial four-bar: the coupler on a universal joint, closed by a ball joint (3 constraints)
    m = fourbar(closure=J.Spherical(), coupler=J.Universal(Z, (0.0, 1.0, 0.0)), gravity=(0.0, -9.81, -2.0))
    q = ej.assemble(m, np.array([0.7, 1.0, 0.05, 1.6]), fixed=[0])
    lt = ej.loop_terms(m, q, np.zeros(4))
    qd = np.concatenate([[1.3], np.linalg.lstsq(lt.Jc[:, 1:], -lt.Jc[:, 0] * 1.3, rcond=None)[0]])
    tau = np.array([0.4, -0.2, 0.1, 0.3])
    r = ej.constrained_dynamics(m, q, qd, tau)
    assert r.rank == 3
    pm = PinModel(m)
    L = m.loops[0]
    Pa = pm.X_jb[L.body_a] * pin.SE3(L.placement_a.rotation, L.placement_a.translation)
    Pb = pm.X_jb[L.body_b] * pin.SE3(L.placement_b.rotation, L.placement_b.translation)
    cm = pin.RigidConstraintModel(pin.ContactType.CONTACT_3D, pm.pmodel, int(pm.pin_joint[L.body_a]), Pa,
                                  int(pm.pin_joint[L.body_b]), Pb, pin.ReferenceFrame.LOCAL)
    cms, cds = pin.StdVec_RigidConstraintModel(), pin.StdVec_RigidConstraintData()
    cms.append(cm)
    cds.append(cm.createData())
    pin.initConstraintDynamics(pm.pmodel, pm.data, cms, cds)
    prox = pin.ProximalSettings(1e-14, 1e-12, 50)
    a_pin = pin.constraintDynamics(pm.pmodel, pm.data, pm.q(q), pm.v(q, qd), pm.tau_to_pin(q, tau), cms, cds, prox)
    assert np.max(np.abs(pm.qdd_from_pin(q, qd, a_pin) - r.qdd)) <= 1e-8


def test_mjcf_connect_and_weld_become_exact_closures():
    pytest.importorskip("mujoco")
    xml = """<mujoco><option gravity="0 -9.81 0"/><worldbody>
      <body name="crank"><joint name="j1" type="hinge" axis="0 0 1"/>
        <geom type="capsule" fromto="0 0 0 1 0 0" size="0.02" mass="1" contype="0" conaffinity="0"/>
        <body name="coupler" pos="1 0 0" euler="0 0 60"><joint name="j2" type="hinge" axis="0 0 1"/>
          <geom type="capsule" fromto="0 0 0 3 0 0" size="0.02" mass="2" contype="0" conaffinity="0"/></body></body>
      <body name="rocker" pos="3.2 0 0" euler="0 0 90"><joint name="j3" type="hinge" axis="0 0 1"/>
        <geom type="capsule" fromto="0 0 0 2.5 0 0" size="0.02" mass="1.5" contype="0" conaffinity="0"/></body>
      <body name="tip" pos="5 5 0"><joint name="j4" type="slide" axis="1 0 0"/>
        <geom type="sphere" size="0.1" mass="0.1" contype="0" conaffinity="0"/></body>
    </worldbody><equality><connect name="pin" body1="coupler" body2="rocker" anchor="3 0 0"/>
      <weld name="glue" body1="tip"/></equality></mujoco>"""
    m = ej.load_mjcf(xml)
    assert [(L.name, L.nc) for L in m.loops] == [("pin", 3), ("glue", 6)]
    assert "loop pin: coupler -> rocker" in m.summary() and not any("connect" in n for n in m.notes)
    # MuJoCo compiles the second anchor and the weld's pose at qpos0: the closures hold there
    lt = ej.loop_terms(m, m.neutral(), np.zeros(m.nv))
    assert lt.Jc.shape == (9, m.nv) and lt.position_residual < 1e-12
    r = ej.constrained_dynamics(m, m.neutral(), np.zeros(m.nv), redundant="lstsq")
    assert r.residual < 1e-10 and abs(r.qdd[3]) < 1e-12 and abs(r.qdd[0]) > 1e-3


def test_opensim_point_and_weld_constraints_become_closures():
    from test_opensim import document, joint
    G, B = "/ground", "/bodyset/"
    cons = ("<PointConstraint name=\"pc\"><isEnforced>true</isEnforced><socket_body_1>/bodyset/a</socket_body_1>"
            "<socket_body_2>/bodyset/b</socket_body_2><location_body_1>0.3 0.1 0</location_body_1>"
            "<location_body_2>-0.2 0.05 0.1</location_body_2></PointConstraint>"
            "<WeldConstraint name=\"wc\"><isEnforced>true</isEnforced><socket_frame1>/bodyset/b</socket_frame1>"
            "<socket_frame2>/ground</socket_frame2></WeldConstraint>")
    text = document([joint("PinJoint", "pa", G, B + "a", [("qa", 0.2, False)]),
                     joint("PinJoint", "pb", G, B + "b", [("qb", -0.3, False)], pt="0.5 0 0")], ["a", "b"], cons)
    m = ej.load_opensim(text)
    assert [(L.name, L.nc, m.body_names[L.body_a], m.body_names[L.body_b]) for L in m.loops] == \
        [("pc", 3, "a", "b"), ("wc", 6, "b", "world")]
    assert not any("PointConstraint" in n or "WeldConstraint" in n for n in m.notes)
    osim = pytest.importorskip("opensim")
    import tempfile, os
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "m.osim")
        with open(path, "w") as f:
            f.write(text)
        om = osim.Model(path)
        st = om.initSystem()
        q = m.q_default          # the file's coordinates (the weld to the ground closes nowhere near them)
        for k, name in enumerate(m.coordinate_names):
            om.getCoordinateSet().get(name).setValue(st, float(q[k]), False)
        om.realizePosition(st)
        pa = om.getBodySet().get("a").findStationLocationInGround(st, osim.Vec3(0.3, 0.1, 0.0))
        pb = om.getBodySet().get("b").findStationLocationInGround(st, osim.Vec3(-0.2, 0.05, 0.1))
        gap = np.array([pb.get(i) - pa.get(i) for i in range(3)])
    kin = ej.forward_kinematics(m, q)
    ours = (kin.p[2] + kin.R[2] @ [-0.2, 0.05, 0.1]) - (kin.p[1] + kin.R[1] @ [0.3, 0.1, 0.0])
    assert np.allclose(ours, gap, atol=1e-12)


def _reference(model, q, qd, tau, redundant):
    """The reference (Python) path of one state: the loop terms, Cholesky of M, Jc M^-1 Jc^T."""
    from ejce_nb.algorithms.loops.constrained import _solve_state
    return _solve_state(model, q, qd, tau, 0.0, redundant)


def test_compiled_constrained_dynamics_equals_the_reference_path(planar):
    rng = np.random.default_rng(3)
    spatial = fourbar(closure=J.Spherical(), coupler=J.Universal(Z, (0.0, 1.0, 0.0)), gravity=(0.0, -9.81, -2.0))
    dm, _ = delta()
    cases = [(planar, ej.assemble(planar, np.array([0.3, 1.0, 1.5]), fixed=[0]), "lstsq"),
             (spatial, ej.assemble(spatial, np.array([0.7, 1.0, 0.05, 1.6]), fixed=[0]), "raise")]
    q = dm.neutral()
    q[dm.q_slice(1)] = (0.05, 0.02, -0.95)
    for k in range(3):
        q[dm.q_slice(dm.joint_index(f"forearm{k}_joint"))] = [math.cos(-0.6), 0.0, math.sin(-0.6), 0.0]
    cases.append((dm, ej.assemble(dm, q, fixed=[0, 1, 2]), "raise"))
    for m, q, red in cases:
        qd = ej.project_velocity(m, q, rng.standard_normal(m.nv))
        tau = rng.standard_normal(m.nv)
        r = ej.constrained_dynamics(m, q, qd, tau, redundant=red)
        ref = _reference(m, q, qd, tau, red)
        scale = max(1.0, np.max(np.abs(ref["qdd"])))
        assert np.max(np.abs(r.qdd - ref["qdd"])) <= 1e-12 * scale
        for name in ("tau_constraint", "wrench", "lam"):
            assert np.allclose(getattr(r, name), ref[name], rtol=0, atol=1e-12 * max(1.0, np.max(np.abs(ref[name]))))
        assert r.rank == ref["rank"] and r.residual < 1e-10
        assert np.allclose(r.terms.Jc, ref["terms"].Jc, rtol=0, atol=1e-12)
        # off the velocity constraints: the velocity projection of the same call and its residual
        from ejce_nb.algorithms.loops.constrained import constrained_qdd
        v_off = qd + 0.1 * rng.standard_normal(m.nv)
        _, (pres, vres), dv = constrained_qdd(m, q, v_off, tau, 0.0, red)
        assert pres < 1e-12 and abs(vres - ej.loop_terms(m, q, v_off).velocity_residual) < 1e-12
        assert np.allclose(v_off + dv, ej.project_velocity(m, q, v_off), rtol=0, atol=1e-12)
    # bad input and rank loss: the reference path's errors
    with pytest.raises(ValueError, match="q: NaN or inf"):
        ej.constrained_dynamics(planar, np.array([np.nan, 0.0, 0.0]), np.zeros(3))


def test_batch_is_independent_of_the_thread_count(planar):
    import numba
    rng = np.random.default_rng(5)
    Q = np.stack([ej.assemble(planar, np.array([th, 1.0, 1.5]), fixed=[0]) for th in np.linspace(0.1, 3.0, 9)])
    V = rng.standard_normal((9, 3))
    T = rng.standard_normal((9, 3))
    n0 = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        r1 = ej.constrained_dynamics(planar, Q, V, T, redundant="lstsq")
    finally:
        numba.set_num_threads(n0)
    rn = ej.constrained_dynamics(planar, Q, V, T, redundant="lstsq")
    assert np.array_equal(r1.qdd, rn.qdd) and np.array_equal(r1.wrench, rn.wrench)
    for k in (0, 4, 8):
        one = ej.constrained_dynamics(planar, Q[k], V[k], T[k], redundant="lstsq")
        assert np.array_equal(one.qdd, rn.qdd[k]) and np.array_equal(one.tau_constraint, rn.tau_constraint[k])
        assert one.rank == rn.rank[k] and np.array_equal(one.lam, rn.lam[k])


def _onto_loops(model, q, v, tol=1e-12):
    """The reference projection from public functions: Gauss-Newton on the loops' pose errors in
    the mass metric, q <- q - M^-1 Jc^T (Jc M^-1 Jc^T)^+ N^T e until |N^T e| <= tol (planar: q
    moves by addition), then v <- ej.project_velocity, each only above tol."""
    def pos(lt):
        return np.concatenate([N.T @ e for N, e in zip(lt.basis, lt.position_error)])
    lt = ej.loop_terms(model, q, v)
    if lt.position_residual > tol:
        while np.linalg.norm(pos(lt)) > tol:
            MJ = np.linalg.solve(lt.M, lt.Jc.T)
            q = q - MJ @ np.linalg.lstsq(lt.Jc @ MJ, pos(lt), rcond=1e-12)[0]
            lt = ej.loop_terms(model, q, v)
    if lt.velocity_residual > tol:
        v = ej.project_velocity(model, q, v)
    return q, v


def test_simulated_rk4_equals_a_step_by_step_reference(planar):
    """Each RK4 stage from ej.constrained_dynamics, each step's end state projected by
    _onto_loops: the compiled time loop's trajectory, state by state."""
    q0 = ej.assemble(planar, np.array([0.3, 1.0, 1.5]), fixed=[0])
    v0 = ej.project_velocity(planar, q0, np.array([3.0, 0.0, 0.0]))
    tau = np.array([0.5, -0.2, 0.3])
    dt, n = 4e-3, 40
    tr = ej.simulate(planar, q0, v0, n * dt, dt, method="rk4", tau=tau, redundant="lstsq")

    def f(q, v):
        return ej.constrained_dynamics(planar, q, v, tau, redundant="lstsq").qdd
    q, v = _onto_loops(planar, q0, v0)
    moved = 0
    for k in range(n):
        a1 = f(q, v)
        v2 = v + 0.5 * dt * a1
        a2 = f(q + 0.5 * dt * v, v2)
        v3 = v + 0.5 * dt * a2
        a3 = f(q + 0.5 * dt * v2, v3)
        v4 = v + dt * a3
        a4 = f(q + dt * v3, v4)
        qn = q + dt / 6 * (v + 2 * v2 + 2 * v3 + v4)
        vn = v + dt / 6 * (a1 + 2 * a2 + 2 * a3 + a4)
        q, v = _onto_loops(planar, qn, vn)
        moved += not np.array_equal(q, qn)
        assert np.max(np.abs(tr.q[k + 1] - q)) <= 1e-13 and np.max(np.abs(tr.qd[k + 1] - v)) <= 1e-12, k
    assert moved > n // 2          # the positions were projected on most steps


def test_a_loop_that_cannot_close_stops_its_trajectory_naming_the_loop(planar):
    """A rocker pivot beyond the reach of crank + coupler + rocker: no state closes the loop, so
    the projection of the initial state fails (status CONSTRAINT) and the message names the loop
    and its residual; the other trajectory of the batch, on a closing four-bar, is not touched."""
    b = ej.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    b.add_body("crank", joint=J.Revolute(Z), **rod(1.0, A_))
    b.add_body("coupler", parent="crank", joint=J.Revolute(Z), placement=ej.Transform(translation=(A_, 0, 0)),
               **rod(2.0, B_))
    b.add_body("rocker", joint=J.Revolute(Z), placement=ej.Transform(translation=(10.0, 0, 0)), **rod(1.5, C_))
    b.add_loop("pin", "coupler", "rocker", joint=J.Revolute(Z), placement_a=ej.Transform(translation=(B_, 0, 0)),
               placement_b=ej.Transform(translation=(C_, 0, 0)))
    far = b.build()
    tr, st = ej.simulate(far, np.array([0.3, 1.0, 1.5]), np.zeros(3), 0.05, 0.01, redundant="lstsq", errors="flag")
    assert st == ej.SimulationStatus.CONSTRAINT and tr.steps == 0
    assert "cannot be assembled" in tr.message and "'pin'" in tr.message
    with pytest.raises(ej.SimulationError, match="'pin'"):
        ej.simulate(far, np.array([0.3, 1.0, 1.5]), np.zeros(3), 0.05, 0.01, redundant="lstsq")
    # the planar loop's Jc has rank 2 of 5 rows: redundant="raise" stops at the first stage, naming
    # the loop's directions
    q0 = ej.assemble(planar, np.array([0.3, 1.0, 1.5]), fixed=[0])
    with pytest.raises(ej.SimulationError, match="rank 2 of 5 rows.*loop 'pin': rotation about") as err:
        ej.simulate(planar, q0, np.zeros(3), 0.02, 0.01)
    assert err.value.status == ej.SimulationStatus.CONSTRAINT and err.value.time == 0.0


def test_a_python_torque_callable_is_held_over_each_step_as_for_a_tree(planar):
    """tau(t, q, qd) evaluated once per step at its start (ej.simulate's rule for every model):
    a constant callable gives the constant torque's trajectory bit for bit, and a state feedback
    one the trajectory of its value held per step (one step at a time, from the previous end)."""
    q0 = ej.assemble(planar, np.array([0.3, 1.0, 1.5]), fixed=[0])
    tau = np.array([0.4, 0.0, -0.3])
    a = ej.simulate(planar, q0, np.zeros(3), 0.03, 0.01, tau=tau, redundant="lstsq")
    b = ej.simulate(planar, q0, np.zeros(3), 0.03, 0.01, tau=lambda t, q, qd: tau, redundant="lstsq")
    assert np.array_equal(a.q, b.q) and np.array_equal(a.qd, b.qd)
    law = lambda t, q, qd: -2.0 * qd + np.array([t, 0.0, 0.0])
    c = ej.simulate(planar, q0, np.zeros(3), 0.03, 0.01, tau=law, redundant="lstsq")
    q, v = q0, np.zeros(3)
    for k in range(3):
        s = ej.simulate(planar, q, v, 0.01, 0.01, tau=law(k * 0.01, q, v), redundant="lstsq")
        q, v = s.q[-1], s.qd[-1]
    assert np.max(np.abs(c.q[-1] - q)) <= 1e-14 and np.max(np.abs(c.qd[-1] - v)) <= 1e-13


# ---------------------------------------------------------------------------- loop models beyond their functions
def fourbar_at(D):
    """``fourbar`` with the rocker's pivot at (D, 0, 0): the crank tip lies between |D - A| and D + A
    from it, and the loop closes where that distance is at most B + C."""
    b = ej.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    b.add_body("crank", joint=J.Revolute(Z), **rod(1.0, A_))
    b.add_body("coupler", parent="crank", joint=J.Revolute(Z), placement=ej.Transform(translation=(A_, 0, 0)),
               **rod(2.0, B_))
    b.add_body("rocker", joint=J.Revolute(Z), placement=ej.Transform(translation=(D, 0, 0)), **rod(1.5, C_))
    b.add_loop("pin", "coupler", "rocker", joint=J.Revolute(Z), placement_a=ej.Transform(translation=(B_, 0, 0)),
               placement_b=ej.Transform(translation=(C_, 0, 0)))
    return b.build()


def _arrays(res, names):
    return {k: np.asarray(res[k]) for k in names}


def test_a_sweep_of_a_loop_model_samples_closed_states(planar, tmp_path, monkeypatch):
    """The crank (the default independent coordinate) keeps its uniform draw, the rocker is one of
    Freudenstein's two closed-form angles, qd satisfies the velocity constraints, the stored
    dynamics are ej.constrained_dynamics at the stored inputs bit for bit, any chunking gives the
    same bits, and the report's histograms name each quantity and its unit."""
    pytest.importorskip("zarr")
    qs = ["constrained_dynamics", "loop_residual", "forward_kinematics:coupler"]
    res = ej.sweep(planar, 300, qs, tmp_path / "a", chunk_size=128, progress=False)
    assert res.spec["loops"] == {"independent": ["crank_joint"]}
    a = _arrays(res, res.arrays)
    q = a["q"]
    assert np.all(a["status"] == 0)
    tree = ej.sweep(planar.open_tree(), 300, ["kinetic_energy"], tmp_path / "tree", chunk_size=300, progress=False)
    assert np.array_equal(q[:, 0], np.asarray(tree["q"])[:, 0])
    err = [min(abs(wrap(q[b, 2] - r)) for r in freudenstein_theta4(q[b, 0])) for b in range(len(q))]
    assert max(err) < 1e-8
    assert a["loop_residual.position"].max() <= 1e-9 and a["loop_residual.velocity"].max() <= 1e-12
    ref = ej.constrained_dynamics(planar, q, a["qd"], a["tau"], redundant="lstsq")
    assert np.array_equal(a["constrained_dynamics.qdd"], ref.qdd)
    assert np.array_equal(a["constrained_dynamics.wrench"], ref.wrench)
    assert np.array_equal(a["forward_kinematics:coupler"][:, :3, 3], ej.forward_kinematics(planar, q).p[:, 2])
    again = ej.sweep(planar, 300, qs, tmp_path / "b", chunk_size=50, progress=False)
    for k, v in _arrays(again, again.arrays).items():
        assert np.array_equal(v, a[k], equal_nan=True), k
    import zarr
    zarr.open_group(str(tmp_path / "b"), mode="r+")[".sweep/done"][2] = 0      # a chunk lost: resumed alone
    resumed = ej.sweep(planar, 300, qs, tmp_path / "b", chunk_size=50, progress=False)
    assert resumed.run_info["chunks"] == 1 and resumed.run_info["resumed_chunks"] == 5
    for k, v in _arrays(resumed, resumed.arrays).items():
        assert np.array_equal(v, a[k], equal_nan=True), k
    with pytest.raises(ValueError, match="open tree.*constrained_dynamics"):
        ej.sweep(planar, 10, ["aba"], tmp_path / "c", progress=False)
    with pytest.raises(ValueError, match="crank_joint, rocker_joint are 2 .* cannot all be chosen freely"):
        ej.sweep(planar, 10, qs, tmp_path / "d", progress=False, independent=["crank_joint", "rocker_joint"])
    # the report: every histogram's x-axis says what it holds and in which unit
    from matplotlib.figure import Figure
    figs = []
    monkeypatch.setattr(Figure, "savefig", lambda self, *a, **k: figs.append(self))
    res.plot(tmp_path / "r.png")
    xl = {ax.get_title(): ax.get_xlabel() for ax in figs[0].axes}
    assert xl["constrained_dynamics.qdd"] == "accelerations of the closed mechanism (rad/s^2)"
    assert xl["constrained_dynamics.tau_constraint"] == "constraint forces Jc^T lam (N m)"
    assert xl["constrained_dynamics.wrench"] == "constraint wrenches on body_b (N m or N)"
    assert xl["loop_residual.position"] == "loop position residual (m or rad)"
    from ejce_nb.sweep.plot import array_units
    assert array_units(planar, "tau", (3,)) == ("joint forces", ["N m"] * 3)
    assert array_units(planar, "mass_matrix", (3, 3))[1] == ["kg m^2"] * 9


def test_a_sweep_flags_the_samples_whose_loop_cannot_close(tmp_path):
    """Rocker pivot at 5: the crank tip is 4 to 6 from it, and the loop closes where that is at most
    B + C = 5.5; the other samples are LOOP_NOT_CLOSED with NaN outputs and out of the workspace."""
    pytest.importorskip("zarr")
    m = fourbar_at(5.0)
    res = ej.sweep(m, 200, ["constrained_dynamics", "forward_kinematics:rocker"], tmp_path / "s", progress=False)
    q, st = np.asarray(res["q"]), np.asarray(res["status"])
    d = np.hypot(A_ * np.cos(q[:, 0]) - 5.0, A_ * np.sin(q[:, 0]))
    far, near = d > B_ + C_ + 1e-9, d < B_ + C_ - 1e-6
    assert far.sum() > 20 and near.sum() > 100
    assert np.all(st[far] == ej.Status.LOOP_NOT_CLOSED) and np.all(st[near] == 0)
    qdd = np.asarray(res["constrained_dynamics.qdd"])
    assert np.all(np.isnan(qdd[far])) and np.all(np.isfinite(qdd[near]))
    assert len(res.workspace()) == np.count_nonzero(st == 0)
    assert res.status_counts()[ej.Status.LOOP_NOT_CLOSED] == np.count_nonzero(st)


def test_the_tree_functions_of_a_loop_model_say_they_are_the_trees():
    """One ClosureWarning per model, from rnea, aba, mass_matrix ..., none from the loop functions
    (which use the tree's inside) nor from the open tree, whose numbers are the same."""
    import warnings
    m = fourbar()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ej.ClosureWarning)
        q = ej.assemble(m, [0.3, 1.0, 1.5], fixed=[0])
        ej.loop_terms(m, q, np.zeros(3))
        ej.constrained_dynamics(m, q, np.zeros(3), redundant="lstsq")
        tree = m.open_tree()
        tau = ej.rnea(tree, q, np.ones(3), np.zeros(3))
    with pytest.warns(ej.ClosureWarning, match=r"ej.rnea of a model with loop closures \('pin'\) gives the open "
                                               r"tree's .*ej.constrained_dynamics"):
        assert np.array_equal(ej.rnea(m, q, np.ones(3), np.zeros(3)), tau)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ej.ClosureWarning)
        ej.aba(m, q, np.zeros(3), tau)
        ej.mass_matrix(m, q)
    assert tree.loops == () and not tree.has_loops and tree.open_tree() is tree and m.open_tree() is tree
    assert ej.Model.from_json(tree.to_json()).loops == ()


def test_neutral_of_a_loop_model_closes_its_loops_or_says_it_cannot(planar):
    """The default coordinates of the four-bar (all zero: the linkage drawn straight, where
    Gauss-Newton cannot move) do not close it; neutral() is a closed configuration, and a model
    that closes nowhere warns and returns its defaults."""
    q = planar.neutral()
    assert ej.loop_terms(planar, q, np.zeros(3)).position_residual <= 1e-12
    assert np.array_equal(planar.neutral(), q)
    with pytest.warns(ej.ClosureWarning, match="cannot be assembled near its default coordinates"):
        assert np.array_equal(fourbar_at(10.0).neutral(), np.zeros(3))


def test_the_command_line_simulates_a_planar_linkage(planar, tmp_path, capsys):
    """``ejce-nb simulate`` takes the Python call's options: the initial state closed with the crank
    kept, --redundant; a run that stops at t = 0 says how to go on and writes nothing that looks
    like a result; the plot draws the closing links with y (against gravity) up."""
    pytest.importorskip("matplotlib")
    from ejce_nb import cli
    path = tmp_path / "fourbar.json"
    path.write_text(planar.to_json())
    out, png = tmp_path / "f.npz", tmp_path / "f.png"
    args = ["simulate", str(path), "--q0", "0.3,0.52,1.65", "--t", "0.05", "--out", str(out), "--plot", str(png),
            "--no-progress"]
    assert cli.main(args) == 3
    cap = capsys.readouterr()
    assert "pass --redundant lstsq" in cap.err and "redundant='lstsq'" not in cap.err
    assert "no file, plot or animation written" in cap.out and not out.exists() and not png.exists()
    assert cli.main(args + ["--redundant", "lstsq"]) == 0
    text = capsys.readouterr().out
    assert "the loops closed from --q0 with crank_joint kept" in text
    traj = ej.Trajectory.load(out)
    assert traj.q[0, 0] == 0.3 and ej.loop_terms(planar, traj.q[0], traj.qd[0]).position_residual <= 1e-12
    assert png.stat().st_size > 10_000
    assert cli.main(["simulate", str(path), "--t", "0.02", "--redundant", "lstsq", "--no-progress"]) == 0
    assert cli.main(args + ["--redundant", "lstsq", "--independent", "crank_joint,rocker_joint"]) == 2
    assert "cannot all be chosen freely" in capsys.readouterr().err


def test_the_stick_figure_closes_the_loop_and_stands_against_gravity(planar):
    """The links of the four-bar's picture: the crank, the ground (world origin to the rocker's
    pivot), the coupler and the rocker, which meet at the pin; the picture's up is +y."""
    from ejce_nb.sim.plot import plot_trajectory, stick_segments, vertical_axis
    q = planar.neutral()
    kin = ej.forward_kinematics(planar, q)
    links, gaps = stick_segments(planar, kin.R, kin.p)
    lengths = np.linalg.norm(links[:, 1] - links[:, 0], axis=1)
    np.testing.assert_allclose(lengths, [0.0, A_, D_, B_, C_], atol=1e-12)
    assert np.abs(links[3, 1] - links[4, 1]).max() <= 1e-12 and np.abs(gaps[0, 1] - gaps[0, 0]).max() <= 1e-12
    assert vertical_axis(planar) == ("y", 1.0) and vertical_axis(ej.models.load("arm7")) == ("z", 1.0)
    # a stopped run's long message is wrapped in the title, not cut
    msg = "simulation stopped at t = 0 (step 0): " + "the loop constraint Jacobian has rank 2 of 5 rows " * 4 + "END"
    tr = ej.Trajectory(np.array([0.0]), q[None], np.zeros((1, 3)), np.zeros(1), np.zeros(1), 15, 0, 0.0, msg)
    fig = plot_trajectory(tr, planar)
    title = fig._suptitle.get_text()
    assert title.endswith("END") and "\n" in title and max(map(len, title.split("\n"))) <= 150
    ax3 = [ax for ax in fig.axes if hasattr(ax, "get_zlim")][0]
    assert "closing links" in ax3.get_title() and "+y up" in ax3.get_title()
