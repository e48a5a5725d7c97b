"""States per second of ``ej.rollout`` beside ``mujoco.rollout``: B initial states x T steps of
RK4 under per-sample control sequences, the same model, step and thread count.

    python benchmarks/bench_rollout.py [--B 1000] [--T 1000] [--threads 2] [--models arm,humanoid]

Models: ``arm``, a 3-link arm with two motors and a position servo on an integrator activation
(contact-free); ``humanoid``, dm_control's humanoid (``suite/humanoid.xml``; 21 motors) with
contact, joint limits, equality and friction loss disabled in both engines (and its joints'
damping and springs kept in both).  ejce_nb records every step's state (as ``mujoco.rollout``
does) with ``record_forces=False``, and again with forces; a states-per-second figure is
B x T / wall seconds, after a warm-up call (the compile) of each.  The states of both engines
over the first simulated second are compared (their largest difference is printed)."""
import argparse
import os
import time
import warnings

import numba
import numpy as np

import ejce_nb as ej

ARM = """
<mujoco model="arm3">
  <option timestep="0.001" integrator="RK4">
    <flag contact="disable" equality="disable" limit="disable" frictionloss="disable"/>
  </option>
  <worldbody>
    <body name="l1">
      <joint name="j1" type="hinge" axis="0 1 0" damping="0.1"/>
      <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.04" mass="1"/>
      <body name="l2" pos="0.4 0 0">
        <joint name="j2" type="hinge" axis="0 1 0" damping="0.05" stiffness="0.5"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" mass="0.7"/>
        <body name="l3" pos="0.3 0 0">
          <joint name="j3" type="hinge" axis="0 0 1"/>
          <geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.02" mass="0.4"/>
        </body>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor name="m1" joint="j1" gear="2" ctrlrange="-5 5" ctrllimited="true"/>
    <motor name="m2" joint="j2" gear="1"/>
    <general name="servo3" joint="j3" dyntype="integrator" gaintype="fixed" biastype="affine"
             gainprm="4" biasprm="0 -4 -0.5" actlimited="true" actrange="-1 1"/>
  </actuator>
</mujoco>
"""


def humanoid_xml():
    from dm_control import suite
    path = os.path.join(os.path.dirname(suite.__file__), "humanoid.xml")
    return path


def load(name):
    import mujoco
    if name == "arm":
        mj = mujoco.MjModel.from_xml_string(ARM)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = ej.load_mjcf(ARM)
    else:
        path = humanoid_xml()
        mj = mujoco.MjModel.from_xml_path(path)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = ej.from_mujoco(mj, source=path)
    off = (mujoco.mjtDisableBit.mjDSBL_CONTACT | mujoco.mjtDisableBit.mjDSBL_LIMIT |
           mujoco.mjtDisableBit.mjDSBL_EQUALITY | mujoco.mjtDisableBit.mjDSBL_FRICTIONLOSS |
           mujoco.mjtDisableBit.mjDSBL_CONSTRAINT)
    mj.opt.disableflags = int(mj.opt.disableflags) | int(off)
    mj.opt.integrator = int(mujoco.mjtIntegrator.mjINT_RK4)
    return mj, model


def inputs(mj, model, B, T, rng):
    q0 = np.tile(model.neutral(), (B, 1))
    plain = np.arange(model.nq) >= 0
    for _, sl in model.quaternion_blocks():
        plain[sl] = False
    q0[:, plain] += rng.uniform(-0.1, 0.1, (B, int(plain.sum())))
    v0 = rng.uniform(-0.2, 0.2, (B, model.nv))
    nu = model.actuation.nu
    lo, hi = model.actuation.ctrlrange[:, 0], model.actuation.ctrlrange[:, 1]
    span = np.where(np.isfinite(hi - lo), 0.5 * (hi - lo), 1.0)
    t = np.arange(T)[None, :, None] * float(mj.opt.timestep)
    w = rng.uniform(1.0, 6.0, (B, 1, nu))
    ctrl = np.ascontiguousarray(0.8 * span * np.sin(w * t))
    return q0, v0, ctrl


def ours(model, q0, v0, ctrl, dt, forces):
    kw = dict(dt=dt, method="rk4", record_every=1, record_forces=forces, limits=False, progress=False)
    ej.rollout(model, q0[:2], v0[:2], ctrl[:2, :3], **kw)            # compile or load
    t0 = time.perf_counter()
    r = ej.rollout(model, q0, v0, ctrl, **kw)
    return time.perf_counter() - t0, r


def theirs(mj, model, q0, v0, ctrl, threads):
    import mujoco
    from mujoco import rollout
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    d = mujoco.MjData(mj)
    x0 = np.zeros((len(q0), mujoco.mj_stateSize(mj, spec)))
    for b in range(len(q0)):
        mujoco.mj_resetData(mj, d)
        d.qpos[:], d.qvel[:] = q0[b], v0[b]
        mujoco.mj_getState(mj, d, x0[b], spec)
    datas = [mujoco.MjData(mj) for _ in range(threads)]
    with rollout.Rollout(nthread=threads) as r:
        r.rollout(mj, datas, x0[:2], ctrl[:2, :3])
        t0 = time.perf_counter()
        state, _ = r.rollout(mj, datas, x0, ctrl)
        return time.perf_counter() - t0, state


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--B", type=int, default=1000)
    ap.add_argument("--T", type=int, default=1000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--models", default="arm,humanoid")
    args = ap.parse_args()
    numba.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    print(f"B = {args.B}, T = {args.T}, RK4, {args.threads} threads; states/s = B T / wall s; "
          f"load {os.getloadavg()[0]:.2f}")
    print(f"{'model':<10}{'nv':>4}{'nu':>4}{'ejce_nb':>13}{'+ forces':>13}{'mujoco':>13}{'ratio':>8}{'|dq| 1 s':>11}")
    for name in args.models.split(","):
        try:
            mj, model = load(name)
        except ImportError as e:
            print(f"{name}: skipped ({e})")
            continue
        dt = float(mj.opt.timestep)
        q0, v0, ctrl = inputs(mj, model, args.B, args.T, rng)
        n = args.B * args.T
        t_ej, r = ours(model, q0, v0, ctrl, dt, False)
        t_ejf, _ = ours(model, q0, v0, ctrl, dt, True)
        t_mj, state = theirs(mj, model, q0, v0, ctrl, args.threads)
        # the largest difference of the states over the first simulated second (a humanoid's motion is
        # chaotic: rounding differences grow about tenfold every 0.1 s after that)
        k = min(args.T, int(round(1.0 / dt)))
        dq = float(np.nanmax(np.abs(r.q[:, 1:k + 1] - state[:, :k, 1:1 + mj.nq]))) if mj.nq == model.nq else np.nan
        bad = int(np.count_nonzero(r.status))
        print(f"{name:<10}{model.nv:>4}{model.actuation.nu:>4}{n / t_ej:>13,.0f}{n / t_ejf:>13,.0f}{n / t_mj:>13,.0f}"
              f"{t_mj / t_ej:>8.2f}{dq:>11.1e}" + (f"  ({bad} samples stopped)" if bad else ""))


if __name__ == "__main__":
    main()
