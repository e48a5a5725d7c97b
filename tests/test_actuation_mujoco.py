"""MuJoCo's actuation (actuators, tendons, gravity compensation, passive forces) against
``mujoco.mj_forward`` itself, with contact, joint limits, equality constraints and friction loss
disabled, at random qpos, qvel, ctrl and act: the actuator and tendon quantities to 1e-12, the
accelerations to 1e-9 relative.  Every model here compiles the same kernel (one kind of joint
path), so the file pays one compilation."""
import os
import pickle
import warnings

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

import ejce_nb as ej  # noqa: E402
from ejce_nb.actuation import mujoco_forces as mf  # noqa: E402

DIS = int(mujoco.mjtDisableBit.mjDSBL_CONTACT | mujoco.mjtDisableBit.mjDSBL_LIMIT
          | mujoco.mjtDisableBit.mjDSBL_EQUALITY | mujoco.mjtDisableBit.mjDSBL_FRICTIONLOSS)

# joint transmissions on hinges and slides, a fixed tendon with a dead-band spring and damper,
# every gain, bias and dynamics type, ctrl, force and act ranges, actearly, gravity compensation
# (one body's routed to the actuators), a joint-level actuator force limit, joint damping and springs
FEATURES = """<mujoco><compiler autolimits="true"/>
<worldbody>
 <body name="a" pos="0 0 1"><joint name="h1" type="hinge" axis="0 1 0" range="-1 1" damping="0.3" stiffness="2" springref="0.1"/>
  <geom type="capsule" size="0.05" fromto="0 0 0 0 0 -0.5" mass="1"/>
  <body name="b" pos="0 0 -0.5" gravcomp="0.4"><joint name="s1" type="slide" axis="1 0 0" range="-0.5 0.5" actuatorgravcomp="true"/>
   <geom type="box" size="0.1 0.1 0.1" mass="0.5"/>
   <body name="c" pos="0 0 -0.2" gravcomp="0.7"><joint name="h2" type="hinge" axis="1 0 0" range="-1.5 1.5" actuatorfrcrange="-2 2"/>
    <geom type="sphere" size="0.1" pos="0 0.1 -0.1" mass="0.8"/></body>
  </body></body>
</worldbody>
<tendon><fixed name="t1" stiffness="3" damping="0.2" springlength="0.05 0.2"><joint joint="h1" coef="1"/><joint joint="h2" coef="-0.5"/></fixed></tendon>
<actuator>
 <motor joint="h1" gear="2" ctrlrange="-1 1"/>
 <position joint="s1" kp="10" kv="1"/>
 <velocity joint="h2" kv="3" forcerange="-0.5 0.5"/>
 <general joint="h2" dyntype="filter" dynprm="0.1" gaintype="affine" gainprm="1 0.5 0.2" biastype="affine" biasprm="0.1 -1 -0.3"/>
 <general tendon="t1" dyntype="integrator" actrange="-1 1" actearly="true"/>
 <general joint="s1" dyntype="filterexact" dynprm="0.05" actearly="true"/>
 <muscle tendon="t1" name="mus"/>
 <muscle joint="h2" name="mus2" tausmooth="0.2"/>
 <intvelocity joint="h1" kp="4" actrange="-0.7 0.7"/>
 <damper joint="s1" kv="0.5" ctrlrange="0 2"/>
 <cylinder joint="h1" area="0.02" bias="1 -2 0.5" timeconst="0.3"/>
</actuator></mujoco>"""

# ball and free joints with joint and jointinparent transmissions (3 and 6 entries of gear)
BALLS = """<mujoco>
<worldbody>
 <body name="base" pos="0 0 1"><freejoint name="root"/><geom type="box" size="0.2 0.1 0.05" mass="2"/>
  <body name="arm" pos="0.2 0 0"><joint name="sph" type="ball" damping="0.1"/>
   <geom type="capsule" size="0.04" fromto="0 0 0 0.3 0 0" mass="0.7"/>
   <body name="fore" pos="0.3 0 0"><joint name="elb" type="hinge" axis="0 0 1"/>
    <geom type="capsule" size="0.03" fromto="0 0 0 0.25 0 0" mass="0.4"/></body></body></body>
</worldbody>
<actuator>
 <motor joint="sph" gear="1 2 -0.5 0 0 0"/>
 <general joint="sph" gear="0.3 -1 2 0 0 0" biastype="affine" biasprm="0 -2 -0.1"/>
 <motor jointinparent="sph" gear="-1 0.5 1.5 0 0 0"/>
 <motor joint="root" gear="1 -2 3 0.5 -0.4 0.2"/>
 <motor jointinparent="root" gear="0.2 0.1 -0.3 1 2 3"/>
 <position joint="elb" kp="5" dampratio="0.5"/>
</actuator></mujoco>"""


# site transmissions (with and without refsite), a slider-crank, spatial tendons through sites
# and a pulley, wrapped around spheres and cylinders with and without side sites
SPATIAL = """<mujoco><compiler autolimits="true"/>
<worldbody>
 <site name="w0" pos="-0.3 0.1 1.3"/>
 <body name="a" pos="0 0 1"><joint name="h1" type="hinge" axis="0 1 0" range="-1 1"/>
  <geom name="ball" type="sphere" size="0.08" mass="1"/><site name="side1" pos="0.2 0 0.05"/>
  <geom type="capsule" size="0.03" fromto="0 0 0 0 0 -0.5" mass="0.3"/>
  <site name="sa" pos="0.05 0 -0.2" quat="0.9 0.1 0.3 0.2"/>
  <body name="b" pos="0 0 -0.5"><joint name="h2" type="hinge" axis="0 1 0" range="-1.5 1.5"/>
   <geom name="cyl" type="cylinder" size="0.06 0.05" quat="0.7 0.7 0 0" mass="0.5"/><site name="side2" pos="-0.1 0 0"/>
   <geom type="capsule" size="0.03" fromto="0 0 0 0 0 -0.4" mass="0.3"/><site name="sb" pos="0.1 0.05 0" euler="10 20 30"/>
   <body name="c" pos="0 0 -0.4"><joint name="h3" type="hinge" axis="1 0 0" range="-1.5 1.5"/>
    <geom type="capsule" size="0.03" fromto="0 0 0 0 0.1 -0.3" mass="0.3"/><site name="end" pos="0.05 0.1 -0.3" euler="-20 5 40"/>
    <body name="d" pos="0 0.1 -0.3"><joint name="s1" type="slide" axis="0 0 1" range="-0.2 0.2"/>
     <geom type="box" size="0.03 0.03 0.03" mass="0.2"/><site name="sd" pos="0.03 0 0" euler="5 -10 20"/></body></body>
  </body></body>
 <body name="crank" pos="1 0 1"><joint name="ch" type="hinge" axis="0 1 0"/><geom type="capsule" size="0.03" fromto="0 0 0 0.2 0 0" mass="0.3"/>
  <site name="cpin" pos="0.2 0 0"/></body>
 <body name="slider" pos="1.6 0 1"><joint name="sl" type="slide" axis="1 0 0"/><geom type="box" size="0.05 0.05 0.05" mass="0.4"/>
  <site name="sls" pos="0 0 0" zaxis="-1 0 0.2"/></body>
</worldbody>
<tendon>
 <spatial name="s1" stiffness="2" damping="0.1" springlength="0.4"><site site="w0"/><geom geom="ball" sidesite="side1"/><site site="end"/></spatial>
 <spatial name="s2"><site site="w0"/><geom geom="ball"/><site site="end"/></spatial>
 <spatial name="s3"><site site="w0"/><geom geom="cyl" sidesite="side2"/><site site="end"/></spatial>
 <spatial name="s4"><site site="w0"/><geom geom="cyl"/><site site="sd"/></spatial>
 <spatial name="pul" stiffness="4" damping="0.3" springlength="0.3"><site site="w0"/><site site="sa"/><site site="sb"/>
  <pulley divisor="2"/><site site="sb"/><site site="sd"/></spatial>
</tendon>
<actuator>
 <muscle tendon="s1"/><motor tendon="s3"/><position tendon="pul" kp="3"/><muscle tendon="pul"/>
 <motor site="sb" gear="1 2 -1 0.5 0.2 -0.3"/>
 <motor site="end" refsite="sa" gear="0.3 -1 2 1 -0.5 0.7"/>
 <motor site="sd" refsite="sb" gear="0 0 0 1 2 3"/>
 <motor site="sd" refsite="end" gear="1 -2 0.5 0 0 0"/>
 <motor cranksite="cpin" slidersite="sls" cranklength="0.5" gear="1.5"/>
</actuator></mujoco>"""

# a side site inside the sphere (MuJoCo's inside wrap, an iteration that stops at |f| <= 1e-6)
INSIDE = SPATIAL.replace('<site name="side1" pos="0.2 0 0.05"/>', '<site name="side1" pos="0.01 0.01 0"/>')


def _mj(xml):
    mj = mujoco.MjModel.from_xml_string(xml)
    mj.opt.disableflags |= DIS
    return mj


def _shipped(*path):
    """A model file of an installed package, or skip."""
    pkg = pytest.importorskip(path[0])
    f = os.path.join(os.path.dirname(pkg.__file__), *path[1:])
    if not os.path.isfile(f):
        pytest.skip(f"{f} is not in this installation")
    mj = mujoco.MjModel.from_xml_path(f)
    mj.opt.disableflags |= DIS
    return mj


def _state(mj, rng):
    q = np.array(mj.qpos0, dtype=float) + 0.4 * rng.normal(size=mj.nq)
    for j in range(mj.njnt):
        t, a = int(mj.jnt_type[j]), int(mj.jnt_qposadr[j])
        if t in (mujoco.mjtJoint.mjJNT_FREE, mujoco.mjtJoint.mjJNT_BALL):
            a += 3 if t == mujoco.mjtJoint.mjJNT_FREE else 0
            x = rng.normal(size=4)
            q[a:a + 4] = x / np.linalg.norm(x)
    return q, rng.normal(size=mj.nv), rng.uniform(-1.3, 1.3, size=mj.nu), rng.uniform(-0.3, 1.2, size=mj.na)


def _dense(mj, d):
    M = np.zeros((mj.nu, mj.nv))
    mujoco.mju_sparse2dense(M, d.actuator_moment, d.moment_rownnz, d.moment_rowadr, d.moment_colind)
    TJ = np.zeros((mj.ntendon, mj.nv))
    if mj.ntendon:
        mujoco.mju_sparse2dense(TJ, d.ten_J, mj.ten_J_rownnz, mj.ten_J_rowadr, mj.ten_J_colind)
    return M, TJ


def _agree(mj, model, n=4, seed=0):
    """Largest differences with mj_forward over n random states: {quantity: error}."""
    rng = np.random.default_rng(seed)
    d = mujoco.MjData(mj)
    err = {}
    for _ in range(n):
        q, v, c, a = _state(mj, rng)
        d.qpos[:], d.qvel[:], d.ctrl[:], d.act[:] = q, v, c, a
        mujoco.mj_forward(mj, d)
        r = ej.actuation(model, q, v, c, a)
        qdd, adot = ej.forward_dynamics(model, q, v, c, a)
        M, TJ = _dense(mj, d)
        for k, x, y in (("actuator_force", r.actuator_force, d.actuator_force),
                        ("actuator_length", r.actuator_length, d.actuator_length),
                        ("actuator_velocity", r.actuator_velocity, d.actuator_velocity),
                        ("actuator_moment", r.actuator_moment, M), ("ten_length", r.ten_length, d.ten_length),
                        ("ten_velocity", r.ten_velocity, d.ten_velocity), ("ten_J", r.ten_J, TJ),
                        ("act_dot", r.act_dot, d.act_dot), ("act_dot (forward_dynamics)", adot, d.act_dot),
                        ("qfrc_actuator", r.qfrc_actuator, d.qfrc_actuator),
                        ("qfrc_passive", r.qfrc_passive, d.qfrc_passive),
                        ("qfrc_gravcomp", r.qfrc_gravcomp, d.qfrc_gravcomp)):
            scale = max(1.0, float(np.max(np.abs(y), initial=0.0)))
            err[k] = max(err.get(k, 0.0), float(np.max(np.abs(x - y), initial=0.0)) / scale)
        err["qacc"] = max(err.get("qacc", 0.0), float(np.max(np.abs(qdd - d.qacc) / (1.0 + np.abs(d.qacc)))))
    return err


def _check(err):
    bad = {k: e for k, e in err.items() if e > (1e-9 if k == "qacc" else 1e-12)}
    assert not bad, bad


def test_features_against_mujoco():
    mj = _mj(FEATURES)
    model = ej.from_mujoco(mj, warn=False)
    A = model.actuation
    assert (A.nu, A.na, A.ntendon) == (mj.nu, mj.na, mj.ntendon)
    assert A.ctrl_names[6] == "mus" and A.ctrlrange[0].tolist() == [-1.0, 1.0] and A.ctrlrange[5, 1] == np.inf
    assert not any("actuator" in n or "tendon" in n or "gravity comp" in n for n in model.notes)
    assert np.array_equal(A.actuator_lengthrange, mj.actuator_lengthrange)
    _check(_agree(mj, model))
    # the controls outside their ranges were clamped (the states draw ctrl in [-1.3, 1.3])
    r = ej.actuation(model, np.zeros(3), np.zeros(3), np.full(mj.nu, 1.3), np.zeros(mj.na))
    assert r.ctrl[0] == 1.0 and r.ctrl[1] == 1.3


def test_ball_and_free_joint_transmissions():
    mj = _mj(BALLS)
    model = ej.from_mujoco(mj, warn=False)
    _check(_agree(mj, model, n=6, seed=3))


def test_sites_slider_crank_spatial_tendons_and_wrapping():
    mj = _mj(SPATIAL)
    model = ej.from_mujoco(mj, warn=False)
    assert model.actuation.ntendon == 5
    err = _agree(mj, model, n=12, seed=2)
    _check(err)
    # the inside wrap: lengths as MuJoCo's, Jacobians to its iteration's tolerance
    mj = _mj(INSIDE)
    err = _agree(mj, ej.from_mujoco(mj, warn=False), n=6, seed=2)
    assert err["ten_length"] <= 1e-12 and err["actuator_length"] <= 1e-12
    assert err["ten_J"] <= 1e-6 and err["qacc"] <= 1e-5


@pytest.mark.parametrize("path", [("gymnasium", "envs/mujoco/assets/ant.xml"),
                                  ("gymnasium", "envs/mujoco/assets/humanoid.xml"),
                                  ("dm_control", "suite/cartpole.xml"),
                                  ("dm_control", "suite/quadruped.xml")])
def test_shipped_models(path):
    mj = _shipped(*path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = ej.from_mujoco(mj)
    assert model.actuation is not None and model.actuation.nu == mj.nu
    _check(_agree(mj, model, n=3, seed=7))


def test_muscle_curves_against_mujoco():
    """The muscle laws (their Python form) against MuJoCo's own functions, across every branch."""
    rng = np.random.default_rng(5)
    prm = np.array([0.75, 1.05, -1.0, 200.0, 0.5, 1.6, 1.5, 1.3, 1.2, 0.0])
    lr = np.array([0.2, 0.6])
    for length in np.linspace(0.05, 0.8, 41):
        for vel in (-3.0, -0.5, 0.0, 0.3, 2.0, 9.0):
            g = mf.muscle_gain.py_func(length, vel, lr[0], lr[1], 0.7, prm)
            assert abs(g - mujoco.mju_muscleGain(length, vel, lr, 0.7, prm[:9])) <= 1e-12 * max(1.0, abs(g))
        b = mf.muscle_bias.py_func(length, lr[0], lr[1], 0.7, prm)
        assert abs(b - mujoco.mju_muscleBias(length, lr, 0.7, prm[:9])) <= 1e-12 * max(1.0, abs(b))
    for width in (0.0, 0.3):
        dp = np.array([0.01, 0.04, width] + [0.0] * 7)
        for c, a in rng.uniform(-0.3, 1.3, size=(50, 2)):
            x = mf.muscle_dynamics.py_func(c, a, dp)
            assert abs(x - mujoco.mju_muscleDynamics(c, a, dp[:3])) <= 1e-12 * max(1.0, abs(x))


def test_batch_is_the_loop_and_bad_input():
    mj = _mj(FEATURES)
    model = ej.from_mujoco(mj, warn=False)
    rng = np.random.default_rng(11)
    S = [_state(mj, rng) for _ in range(37)]
    Q, V, C, A = (np.array([s[k] for s in S]) for k in range(4))
    T = rng.normal(size=(37, model.nv))
    qdd, adot = ej.forward_dynamics(model, Q, V, C, A, tau=T)
    r = ej.actuation(model, Q, V, C, A)
    for b in (0, 5, 36):
        q1, a1 = ej.forward_dynamics(model, Q[b], V[b], C[b], A[b], tau=T[b])
        assert np.array_equal(q1, qdd[b]) and np.array_equal(a1, adot[b])
        r1 = ej.actuation(model, Q[b], V[b], C[b], A[b])
        assert np.array_equal(r1.actuator_moment, r.actuator_moment[b])
        assert np.array_equal(r1.qfrc_passive, r.qfrc_passive[b])
    # tau enters as a joint force: qdd(tau) - qdd(0) = M^-1 tau, as the ABA has it
    q0, _ = ej.forward_dynamics(model, Q[0], V[0], C[0], A[0])
    z = np.zeros(model.nv)
    assert np.allclose(qdd[0] - q0, ej.aba(model, Q[0], z, T[0]) - ej.aba(model, Q[0], z, z), rtol=1e-9, atol=1e-9)
    with pytest.raises(ValueError, match=rf"ctrl must have shape \({mj.nu},\)"):
        ej.forward_dynamics(model, Q[0], V[0], C[0, :3], A[0])
    with pytest.raises(ValueError, match=r"act must have shape"):
        ej.actuation(model, Q, V, C, A[:, :2])
    C[4, 2] = np.nan
    with pytest.raises(ValueError, match="ctrl"):
        ej.forward_dynamics(model, Q, V, C, A)
    (qf, af), status = ej.forward_dynamics(model, Q, V, C, A, tau=T, errors="flag")
    assert status[4] == ej.Status.NONFINITE_INPUT and np.isnan(qf[4]).all() and np.isnan(af[4]).all()
    ok = np.arange(37) != 4
    assert (status[ok] == 0).all() and np.array_equal(qf[ok], qdd[ok])


def test_model_without_actuation_and_pickle():
    mj = _mj(FEATURES)
    model = ej.from_mujoco(mj, warn=False)
    twin = pickle.loads(pickle.dumps(model))
    assert twin.actuation.nu == model.actuation.nu
    assert np.array_equal(twin.actuation.actuator_gainprm, model.actuation.actuator_gainprm)
    plain = ej.load_mjcf("""<mujoco><worldbody><body><joint name="j" type="hinge" axis="0 1 0" damping="0.5"/>
        <geom type="capsule" size="0.05" fromto="0 0 0 0.3 0 0" mass="1"/></body></worldbody></mujoco>""", warn=False)
    assert plain.actuation is None
    q, v = np.array([0.3]), np.array([-0.7])
    qdd, adot = ej.forward_dynamics(plain, q, v, ctrl=np.zeros(0))
    assert adot.shape == (0,)
    assert np.allclose(qdd, ej.aba(plain, q, v, -0.5 * v), rtol=1e-13, atol=0)


def test_what_is_not_loaded_is_said():
    xml = """<mujoco><worldbody><body name="b"><joint name="j" type="hinge" axis="0 1 0"/>
        <geom type="capsule" size="0.05" fromto="0 0 0 0.3 0 0" mass="1"/></body>
        </worldbody><actuator><adhesion name="push" body="b" gain="1" ctrlrange="0 1"/></actuator></mujoco>"""
    with pytest.warns(ej.MJCFWarning, match="actuator 'push'"):
        model = ej.load_mjcf(xml)
    assert model.actuation is None
    assert any("actuators: 1" in n for n in model.notes)
    locked = """<mujoco><worldbody><body><joint name="j" type="hinge" axis="0 1 0"/>
        <geom type="capsule" size="0.05" fromto="0 0 0 0.3 0 0" mass="1"/>
        <body pos="0.3 0 0"><joint name="k" type="hinge" axis="0 1 0"/><geom type="sphere" size="0.05" mass="1"/></body>
        </body></worldbody><equality><joint joint1="k" polycoef="0.2 0 0 0 0"/></equality>
        <actuator><motor name="mk" joint="k"/></actuator></mujoco>"""
    with pytest.warns(ej.MJCFWarning, match="actuator 'mk' acts on joint 'k'"):
        assert ej.load_mjcf(locked).actuation is None


def test_coupled_joints_reduce_by_G():
    """A joint made a mimic of another by a joint equality: the actuation runs on the expanded
    coordinates (MuJoCo's), and its generalised forces and Jacobians come back as G^T x and x G."""
    xml = """<mujoco><compiler autolimits="true"/><worldbody>
     <body name="a" pos="0 0 1"><joint name="h1" type="hinge" axis="0 1 0"/>
      <geom type="capsule" size="0.05" fromto="0 0 0 0 0 -0.5" mass="1"/>
      <body name="b" pos="0 0 -0.5"><joint name="h2" type="hinge" axis="0 1 0"/>
       <geom type="capsule" size="0.05" fromto="0 0 0 0 0 -0.5" mass="1"/>
       <body name="c" pos="0 0 -0.5"><joint name="h3" type="hinge" axis="1 0 0"/>
        <geom type="sphere" size="0.1" pos="0 0.1 -0.1" mass="0.8"/></body></body></body></worldbody>
     <equality><joint joint1="h2" joint2="h1" polycoef="0.1 -0.7 0 0 0"/></equality>
     <tendon><fixed name="t"><joint joint="h1" coef="1"/><joint joint="h2" coef="2"/></fixed></tendon>
     <actuator><motor joint="h2" gear="3"/><position tendon="t" kp="2" kv="0.5"/><motor joint="h3"/></actuator></mujoco>"""
    mj = _mj(xml)
    model = ej.from_mujoco(mj, warn=False)
    assert model.has_couplers and model.nv == 2 and model.actuation.nv == 3
    Gq, gq, G = model.mimic_map()
    rng = np.random.default_rng(4)
    d = mujoco.MjData(mj)
    for _ in range(3):
        q, v, c = rng.normal(size=2), rng.normal(size=2), rng.normal(size=3)
        d.qpos[:], d.qvel[:], d.ctrl[:] = Gq @ q + gq, G @ v, c
        mujoco.mj_forward(mj, d)
        M, TJ = _dense(mj, d)
        r = ej.actuation(model, q, v, c)
        assert np.allclose(r.actuator_force, d.actuator_force, rtol=0, atol=1e-12)
        assert np.allclose(r.actuator_moment, M @ G, rtol=0, atol=1e-12)
        assert np.allclose(r.ten_J, TJ @ G, rtol=0, atol=1e-12)
        assert np.allclose(r.qfrc_actuator, G.T @ d.qfrc_actuator, rtol=0, atol=1e-12)
