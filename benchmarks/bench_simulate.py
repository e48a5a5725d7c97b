"""Steps per second of ``ej.simulate`` (RK4, the whole time loop compiled) beside MuJoCo's
``mj_step`` with its RK4 integrator, on the same models, states and step, in the same run.

    python benchmarks/bench_simulate.py [--quick] [--threads 1,2] [--json FILE]

1. A 1,000-link hinge chain (``models.chain(1000)``), one trajectory.  MuJoCo's XML parser
   refuses a chain nested this deep (tinyxml2's element depth limit, reached near 500 bodies), so
   its side is built with ``mujoco.MjSpec``, which allows trees up to 1,024 bodies deep.
2. A 400-link chain, the deepest MuJoCo also reads from XML (the MjSpec model is the same), and a
   20-link chain, where the call overhead of both sides counts.
3. A batch of 1,000 copies of the 7-DOF arm (``load("arm7")``) from 1,000 random states: ejce_nb
   in one call (trajectories in parallel over the threads), MuJoCo in a Python loop of
   ``mj_step`` and through ``mujoco.rollout`` (its C++ batch, one MjData per thread).

ejce_nb records q, qd and the energies at every step ("every step") or only at the ends
("ends", record_every = the number of steps); MuJoCo's loop records nothing, ``rollout`` every
state.  Every time is the best of several repeats; compilation is done before.  "diff" is the
largest difference of the end states of both sides, which integrate the same equations with the
same RK4 step: rounding for the arm; on the long chains the accelerations themselves are
determined only to about cond(M) eps (ABA, CRBA and MuJoCo's factorisation differ by 1e-7 at 400
links, 2e-6 at 1,000, each with a residual |M qdd + h| of 1e-12 relative), grown by the motion.
"""
import argparse
import json
import os
import platform
import sys
import time

import numba
import numpy as np

import ejce_nb as ej
from ejce_nb.models import chain, load

SETTINGS = {
    "full": dict(long_steps=200, mid_steps=1000, short_steps=4000, arm_steps=1000, batch=1000, repeat=5),
    "quick": dict(long_steps=30, mid_steps=200, short_steps=1000, arm_steps=200, batch=1000, repeat=3),
}
DT = 1e-3


def best(f, repeat):
    """Best wall time of ``repeat`` calls of f (after one warm-up call)."""
    f()
    out = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        out = min(out, time.perf_counter() - t0)
    return out


def mujoco_spec(model, dt):
    """The same mechanism as an MjSpec: revolute joints as hinges, fixed joints welded, body frame =
    our C frame (child placements must be the identity), inertia about the COM in body axes;
    RK4 at step dt, no contacts, damping, armature or limits."""
    import mujoco
    spec = mujoco.MjSpec()
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_RK4
    spec.option.timestep = dt
    spec.option.gravity = model.gravity.tolist()
    spec.option.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
    bodies = [spec.worldbody]
    for i in range(1, model.nbodies + 1):
        if not (np.array_equal(model.joint_C_rot[i], np.eye(3)) and not model.joint_C_pos[i].any()):
            raise ValueError("mujoco_spec: only identity child placements")
        quat = np.zeros(4)
        mujoco.mju_mat2Quat(quat, model.joint_P_rot[i].ravel())
        I = model.body_inertia[i]
        b = bodies[model.parent[i]].add_body(pos=model.joint_P_pos[i].tolist(), quat=quat.tolist())
        if model.body_mass[i] > 0:
            b.mass = float(model.body_mass[i])
            b.ipos = model.body_com[i].tolist()
            b.fullinertia = [I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2]]
            b.explicitinertial = True
        spec_j = model.joint_specs[i]
        if isinstance(spec_j, ej.joints.Revolute):
            b.add_joint(type=mujoco.mjtJoint.mjJNT_HINGE, axis=list(spec_j.axis))
        elif not isinstance(spec_j, ej.joints.Fixed):
            raise ValueError(f"mujoco_spec: joint {spec_j!r} is not supported")
        bodies.append(b)
    return spec


def mujoco_model(model, dt):
    import mujoco
    mm = mujoco_spec(model, dt).compile()
    md = mujoco.MjData(mm)
    # the same dynamics: MuJoCo's mass matrix at a random state equals ours
    q = np.random.default_rng(1).uniform(-1.0, 1.0, model.nq)
    md.qpos[:] = q
    mujoco.mj_forward(mm, md)
    M = np.zeros((mm.nv, mm.nv))
    try:
        mujoco.mj_fullM(mm, md, M)                  # MuJoCo 4
    except TypeError:
        mujoco.mj_fullM(mm, M, md.qM)               # MuJoCo 3
    err = np.abs(M - ej.mass_matrix(model, q)).max() / np.abs(M).max()
    if err > 1e-9:
        raise RuntimeError(f"the MuJoCo model's mass matrix differs from ours by {err:.1e}")
    return mm, md


def xml_refusal(n):
    """What MuJoCo's XML parser says of an n-link chain (None: it loads it)."""
    import mujoco
    parts = ['<mujoco><worldbody>']
    for i in range(n):
        parts.append('<body pos="0 0 -0.5"><inertial pos="0 0 -0.25" mass="1" diaginertia="1 1 1"/>'
                     '<joint type="hinge" axis="0 1 0"/>')
    parts += ["</body>"] * n + ["</worldbody></mujoco>"]
    try:
        mujoco.MjModel.from_xml_string("".join(parts))
        return None
    except ValueError as e:
        return " ".join(str(e).split())[:120]


def one_chain(n, steps, repeat):
    import mujoco
    model = chain(n)
    numba.set_num_threads(1)
    q0 = np.random.default_rng(6).uniform(-0.3, 0.3, n)
    v0 = np.zeros(n)
    mm, md = mujoco_model(model, DT)
    T = steps * DT

    def mj():
        md.qpos[:] = q0
        md.qvel[:] = v0
        md.time = 0.0
        for _ in range(steps):
            mujoco.mj_step(mm, md)

    every = best(lambda: ej.simulate(model, q0, v0, T, DT, progress=False), repeat)
    ends = best(lambda: ej.simulate(model, q0, v0, T, DT, record_every=steps, progress=False), repeat)
    tm = best(mj, max(1, repeat // 2) if n > 500 else repeat)
    traj = ej.simulate(model, q0, v0, T, DT, record_every=steps, progress=False)
    mj()
    return {"case": f"{n}-link chain", "steps": steps, "threads": 1, "ejce_every": steps / every,
            "ejce_ends": steps / ends, "mujoco": steps / tm, "mujoco_kind": "mj_step (MjSpec)",
            "diff": float(np.abs(traj.q[-1] - md.qpos).max()), "drift": float(traj.energy_drift()),
            "xml": xml_refusal(n)}


def arm_batch(B, steps, threads, repeat):
    import mujoco
    import mujoco.rollout
    model = load("arm7")
    rng = np.random.default_rng(3)
    lo, hi = np.nan_to_num(model.q_lower, neginf=-np.pi), np.nan_to_num(model.q_upper, posinf=np.pi)
    Q0 = rng.uniform(lo, hi, (B, model.nq))
    V0 = rng.normal(size=(B, model.nv))
    T = steps * DT
    mm, md = mujoco_model(model, DT)
    rows = []
    ref = None
    for nt in threads:
        numba.set_num_threads(nt)
        # MuJoCo's side has no joint limits (``mujoco_spec``): nor has ours
        every = best(lambda: ej.simulate(model, Q0, V0, T, DT, limits=False, progress=False), repeat)
        ends = best(lambda: ej.simulate(model, Q0, V0, T, DT, record_every=steps, limits=False, progress=False),
                    repeat)
        traj = ej.simulate(model, Q0, V0, T, DT, record_every=steps, limits=False, progress=False)
        datas = [mujoco.MjData(mm) for _ in range(nt)]
        spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
        x0 = np.zeros((B, mujoco.mj_stateSize(mm, spec)))
        for b in range(B):
            md.qpos[:] = Q0[b]
            md.qvel[:] = V0[b]
            md.time = 0.0
            mujoco.mj_getState(mm, md, x0[b], spec)
        tr = best(lambda: mujoco.rollout.rollout(mm, datas, x0, nstep=steps), repeat)
        state, _ = mujoco.rollout.rollout(mm, datas, x0, nstep=steps)
        end = state[:, -1, 1:1 + mm.nq]
        rows.append({"case": f"arm7 x {B}", "steps": steps, "threads": nt, "ejce_every": B * steps / every,
                     "ejce_ends": B * steps / ends, "mujoco": B * steps / tr, "mujoco_kind": "rollout",
                     "diff": float(np.abs(traj.q[-1] - end).max()), "drift": float(np.max(traj.energy_drift()))})
        ref = traj
    numba.set_num_threads(1)
    nloop = max(1, B // 10)

    def loop():
        for b in range(nloop):
            md.qpos[:] = Q0[b]
            md.qvel[:] = V0[b]
            md.time = 0.0
            for _ in range(steps):
                mujoco.mj_step(mm, md)
    tl = best(loop, max(1, repeat // 2))
    loop()
    rows.append({"case": f"arm7 x {B}", "steps": steps, "threads": 1, "ejce_every": None, "ejce_ends": None,
                 "mujoco": nloop * steps / tl, "mujoco_kind": f"Python loop of mj_step ({nloop} states)",
                 "diff": float(np.abs(ref.q[-1, nloop - 1] - md.qpos).max()), "drift": None})
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    return rows


def fmt(x):
    return "-" if x is None else f"{x:,.0f}"


def print_table(rows, env):
    print(f"\nej.simulate (RK4, dt = {DT:g}) beside MuJoCo {env['mujoco']} with its RK4 integrator; ejce_nb "
          f"{env['ejce_nb']}, numba {env['numba']}, {env['cpu']} ({env['cores']} cores)")
    print("steps per second (a batch: trajectory-steps per second); ejce_nb recording every step / only the ends")
    head = f"{'case':<16}{'steps':>6}{'thr':>4}{'ejce every':>12}{'ejce ends':>12}{'MuJoCo':>12}  {'MuJoCo side':<34}" \
           f"{'ends/MuJoCo':>12}{'diff':>9}"
    print(head)
    for r in rows:
        ratio = "" if r["ejce_ends"] is None else f"{r['ejce_ends'] / r['mujoco']:.1f}"
        print(f"{r['case']:<16}{r['steps']:>6}{r['threads']:>4}{fmt(r['ejce_every']):>12}{fmt(r['ejce_ends']):>12}"
              f"{fmt(r['mujoco']):>12}  {r['mujoco_kind']:<34}{ratio:>12}{r['diff']:>9.0e}")
    for r in rows:
        if r.get("xml"):
            print(f"note: MuJoCo's XML parser refuses the {r['case']}: {r['xml']}; MjSpec builds it (trees up to "
                  "1,024 bodies deep)")
    for r in rows:
        if r.get("drift") is not None:
            print(f"energy drift of ejce_nb's {r['case']} ({r['threads']} thread(s)): {r['drift']:.1e}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer steps and repeats")
    ap.add_argument("--threads", default="1,2", help="thread counts for the batch (default 1,2)")
    ap.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = ap.parse_args()
    cfg = SETTINGS["quick" if args.quick else "full"]
    threads = [int(x) for x in args.threads.split(",")]
    import mujoco
    env = {"ejce_nb": ej.__version__, "mujoco": mujoco.__version__, "numba": numba.__version__,
           "cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(), "python": sys.version.split()[0]}
    rows = [one_chain(1000, cfg["long_steps"], cfg["repeat"]), one_chain(400, cfg["mid_steps"], cfg["repeat"]),
            one_chain(20, cfg["short_steps"], cfg["repeat"])]
    rows += arm_batch(cfg["batch"], cfg["arm_steps"], threads, cfg["repeat"])
    print_table(rows, env)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"environment": env, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
