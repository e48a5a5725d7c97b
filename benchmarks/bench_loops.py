"""Loop closures: constrained forward dynamics per call against Pinocchio's
``constraintDynamics`` on the same mechanism, and a simulated step against MuJoCo's soft
``connect`` equality on the same loop model, with the constraint drift each leaves.

    python benchmarks/bench_loops.py [--steps 10000]

Mechanisms: a spatial four-bar (crank, coupler on a universal joint, rocker; closed by a ball
joint: 3 constraints, nv 4) and a Cassie-like leg pair (per leg hip roll / yaw / pitch, knee,
tarsus, toe revolutes and two rods on ball joints, each rod closed on the leg by a ball joint:
nv 24, 12 constraints).  One state, best of 5 repeats of 200 calls.  The simulation: the planar
four-bar of an MJCF file with a ``connect`` equality; MuJoCo RK4 at dt = 1e-3 (its equality soft,
default solref / solimp), ours RK4 at dt = 1e-3 with the projection; drift = the distance between
the two anchors after ``--steps`` steps.
"""
import argparse
import math
import os
import sys
import time

import numpy as np

import ejce_nb as ej

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
J = ej.joints
Z = (0.0, 0.0, 1.0)


def rod(m, L, axis=0):
    com = np.zeros(3)
    com[axis] = L / 2
    I = np.full(3, m * L * L / 12)
    I[axis] = 1e-3 * m
    return dict(mass=m, com=com, inertia=np.diag(I))


def fourbar():
    b = ej.ModelBuilder(gravity=(0.0, -9.81, -2.0))
    b.add_body("crank", joint=J.Revolute(Z), **rod(1.0, 1.0))
    b.add_body("coupler", parent="crank", joint=J.Universal(Z, (0.0, 1.0, 0.0)),
               placement=ej.Transform(translation=(1.0, 0, 0)), **rod(2.0, 3.0))
    b.add_body("rocker", joint=J.Revolute(Z), placement=ej.Transform(translation=(3.2, 0, 0)), **rod(1.5, 2.5))
    b.add_loop("pin", "coupler", "rocker", joint=J.Spherical(), placement_a=ej.Transform(translation=(3.0, 0, 0)),
               placement_b=ej.Transform(translation=(2.5, 0, 0)))
    m = b.build()
    return m, ej.assemble(m, np.array([0.7, 1.0, 0.05, 1.6]), fixed=[0])


def _quat_between(a, b):
    """Unit quaternion (w, x, y, z) turning unit vector a onto b."""
    v = np.cross(a, b)
    w = 1.0 + a @ b
    q = np.array([w, *v])
    return q / np.linalg.norm(q)


def cassie_pair():
    """Two Cassie-like legs on a fixed pelvis, each closed twice (achilles and plantar rods)."""
    def tree(b, side, s):
        b.add_body(f"{side}_hip_roll", joint=J.Revolute((1.0, 0, 0)),
                   placement=ej.Transform(translation=(0.0, s * 0.135, 0.0)), mass=1.0, inertia=0.01 * np.eye(3))
        b.add_body(f"{side}_hip_yaw", parent=f"{side}_hip_roll", joint=J.Revolute(Z),
                   placement=ej.Transform(translation=(-0.07, 0.0, -0.09)), mass=1.0, inertia=0.01 * np.eye(3))
        b.add_body(f"{side}_thigh", parent=f"{side}_hip_yaw", joint=J.Revolute((0, 1.0, 0)),
                   placement=ej.Transform(translation=(0.0, 0.0, -0.06)), **rod(5.0, -0.42, 2))
        b.add_body(f"{side}_shin", parent=f"{side}_thigh", joint=J.Revolute((0, 1.0, 0)),
                   placement=ej.Transform(translation=(0.0, 0.0, -0.42)), **rod(0.6, -0.43, 2))
        b.add_body(f"{side}_tarsus", parent=f"{side}_shin", joint=J.Revolute((0, 1.0, 0)),
                   placement=ej.Transform(translation=(0.0, 0.0, -0.43)), **rod(0.8, -0.4, 2))
        b.add_body(f"{side}_toe", parent=f"{side}_tarsus", joint=J.Revolute((0, 1.0, 0)),
                   placement=ej.Transform(translation=(0.0, 0.0, -0.4)), mass=0.2, inertia=0.001 * np.eye(3))
    # attachment points: (rod's parent body, point there), (closing body, point there)
    rods = [("achilles", ("hip_yaw", (0.05, 0.0, -0.06)), ("tarsus", (0.06, 0.0, -0.05))),
            ("plantar", ("tarsus", (-0.05, 0.0, -0.02)), ("toe", (-0.05, 0.0, 0.0)))]
    q_ref = {"thigh": 0.5, "shin": -1.1, "tarsus": 1.0, "toe": -0.4}
    base = ej.ModelBuilder()
    for side, s in (("left", 1.0), ("right", -1.0)):
        tree(base, side, s)
    m0 = base.build()
    q0 = np.zeros(m0.nq)
    for side in ("left", "right"):
        for k, v in q_ref.items():
            q0[m0.q_slice(m0.joint_index(f"{side}_{k}_joint"))] = v
    kin = ej.forward_kinematics(m0, q0)
    b = ej.ModelBuilder()
    for side, s in (("left", 1.0), ("right", -1.0)):
        tree(b, side, s)
    qx = list(q0)
    for side in ("left", "right"):
        for name, (pa, xa), (pb, xb) in rods:
            ia, ib = m0.body_index(f"{side}_{pa}"), m0.body_index(f"{side}_{pb}")
            wa = kin.p[ia] + kin.R[ia] @ np.array(xa)
            wb = kin.p[ib] + kin.R[ib] @ np.array(xb)
            L = float(np.linalg.norm(wb - wa))
            d = kin.R[ia].T @ (wb - wa) / L
            b.add_body(f"{side}_{name}", parent=f"{side}_{pa}", joint=J.Spherical(),
                       placement=ej.Transform(translation=xa), **rod(0.1, L))
            b.add_loop(f"{side}_{name}_end", f"{side}_{name}", f"{side}_{pb}", joint=J.Spherical(),
                       placement_a=ej.Transform(translation=(L, 0, 0)), placement_b=ej.Transform(translation=xb))
            qx += list(_quat_between(np.array([1.0, 0, 0]), d))
    m = b.build()
    q = ej.assemble(m, np.array(qx), fixed=[])
    return m, q


def consistent_velocity(m, q, rng):
    return ej.project_velocity(m, q, rng.standard_normal(m.nv))


def best(f, n=200, rep=5):
    f()
    out = []
    for _ in range(rep):
        t0 = time.perf_counter()
        for _ in range(n):
            f()
        out.append((time.perf_counter() - t0) / n)
    return min(out)


def pinocchio_case(m, q, qd, tau):
    import pinocchio as pin
    from pin_oracle import PinModel
    pm = PinModel(m)
    cms = pin.StdVec_RigidConstraintModel()
    for L in m.loops:
        Pa = pm.X_jb[L.body_a] * pin.SE3(L.placement_a.rotation, L.placement_a.translation)
        Pb = pm.X_jb[L.body_b] * pin.SE3(L.placement_b.rotation, L.placement_b.translation)
        cms.append(pin.RigidConstraintModel(pin.ContactType.CONTACT_3D, pm.pmodel, int(pm.pin_joint[L.body_a]), Pa,
                                            int(pm.pin_joint[L.body_b]), Pb, pin.ReferenceFrame.LOCAL))
    cds = pin.StdVec_RigidConstraintData()
    for c in cms:
        cds.append(c.createData())
    pin.initConstraintDynamics(pm.pmodel, pm.data, cms, cds)
    prox = pin.ProximalSettings(1e-14, 1e-12, 50)
    qp, vp, tp = pm.q(q), pm.v(q, qd), pm.tau_to_pin(q, tau)

    def call():
        return pin.constraintDynamics(pm.pmodel, pm.data, qp, vp, tp, cms, cds, prox)
    a = pm.qdd_from_pin(q, qd, call())
    return best(call), a


FOURBAR_XML = """<mujoco><option gravity="0 -9.81 0" timestep="0.001" integrator="RK4"/><worldbody>
  <body name="crank"><joint name="j1" type="hinge" axis="0 0 1"/>
    <geom type="capsule" fromto="0 0 0 1 0 0" size="0.02" mass="1" contype="0" conaffinity="0"/>
    <body name="coupler" pos="1 0 0" euler="0 0 {c}"><joint name="j2" type="hinge" axis="0 0 1"/>
      <geom type="capsule" fromto="0 0 0 3 0 0" size="0.02" mass="2" contype="0" conaffinity="0"/></body></body>
  <body name="rocker" pos="3.2 0 0" euler="0 0 {r}"><joint name="j3" type="hinge" axis="0 0 1"/>
    <geom type="capsule" fromto="0 0 0 2.5 0 0" size="0.02" mass="1.5" contype="0" conaffinity="0"/></body>
</worldbody><equality><connect name="pin" body1="coupler" body2="rocker" anchor="3 0 0"/></equality></mujoco>"""


def simulation_case(steps):
    import mujoco
    # a closed configuration at crank angle 0 (Freudenstein), written into the file's frames
    a, b_, c, d = 1.0, 3.0, 2.5, 3.2
    cx, cy = a, 0.0
    # rocker end on the circle about (d, 0) at distance b from (a, 0)
    L = math.hypot(d - cx, cy)
    x = (b_ ** 2 - c ** 2 + L ** 2) / (2 * L)
    y = math.sqrt(b_ ** 2 - x ** 2)
    px, py = cx + x * (d - cx) / L, y
    th3 = math.degrees(math.atan2(py, px - cx))
    th4 = math.degrees(math.atan2(py, px - d))
    xml = FOURBAR_XML.format(c=th3, r=th4)
    mj = mujoco.MjModel.from_xml_string(xml)
    dm = mujoco.MjData(mj)
    dm.qvel[:] = 0.0
    dm.qvel[0] = 2.0
    dm.qvel[1] = 0.0
    # give MuJoCo a consistent start too: ours projected, the same numbers
    m = ej.from_mujoco(mj, warn=False)
    q0 = np.array(dm.qpos, dtype=float)
    qd0 = ej.project_velocity(m, q0, np.array([2.0, 0.0, 0.0]))
    dm.qvel[:] = qd0
    t0 = time.perf_counter()
    for _ in range(steps):
        mujoco.mj_step(mj, dm)
    t_mj = (time.perf_counter() - t0) / steps
    mujoco.mj_kinematics(mj, dm)
    a1 = dm.xpos[2] + dm.xmat[2].reshape(3, 3) @ mj.eq_data[0, :3]
    a2 = dm.xpos[3] + dm.xmat[3].reshape(3, 3) @ mj.eq_data[0, 3:6]
    drift_mj = float(np.linalg.norm(a1 - a2))
    ej.simulate(m, q0, qd0, 0.01, 1e-3, redundant="lstsq")
    t0 = time.perf_counter()
    tr = ej.simulate(m, q0, qd0, steps * 1e-3, 1e-3, redundant="lstsq", record_every=steps)
    t_ej = (time.perf_counter() - t0) / steps
    E = tr.energy
    return t_mj, drift_mj, t_ej, float(tr.position_residual[-1]), float(abs(E[-1] - E[0]) / abs(tr.kinetic).max())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=10000)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    print("constrained forward dynamics, one state, per call")
    for name, (m, q) in (("four-bar (ball closure)", fourbar()), ("Cassie-like leg pair", cassie_pair())):
        qd = consistent_velocity(m, q, rng)
        tau = rng.standard_normal(m.nv)
        ours = best(lambda: ej.constrained_dynamics(m, q, qd, tau), n=50)
        r = ej.constrained_dynamics(m, q, qd, tau)
        try:
            t_pin, a_pin = pinocchio_case(m, q, qd, tau)
            diff = float(np.max(np.abs(a_pin - r.qdd)))
            pin_txt = f"pinocchio constraintDynamics {t_pin * 1e6:8.1f} us   max |qdd diff| {diff:.2e}"
        except ImportError:
            pin_txt = "pinocchio not installed"
        print(f"  {name:26s} nv {m.nv:2d} nc {m.nc:2d}  ejce_nb {ours * 1e6:8.1f} us   {pin_txt}   "
              f"|Jc qdd + bc| {r.residual:.1e}")
    print(f"simulated step, planar four-bar from MJCF (connect equality), RK4 dt = 1e-3, {args.steps} steps")
    t_mj, d_mj, t_ej, d_ej, e_ej = simulation_case(args.steps)
    print(f"  mujoco mj_step (soft connect)    {t_mj * 1e6:8.1f} us/step   anchor distance after {args.steps} "
          f"steps {d_mj:.2e} m")
    print(f"  ejce_nb simulate (projected)     {t_ej * 1e6:8.1f} us/step   pose error after {args.steps} steps "
          f"{d_ej:.2e}   relative energy drift {e_ej:.1e}")


if __name__ == "__main__":
    main()
