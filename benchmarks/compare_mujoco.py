"""ejce_nb beside MuJoCo on MJCF models, measured in the same run on the same states.

    python benchmarks/compare_mujoco.py [--quick] [--model PATH] [--threads N] [--json FILE]

Models: dm_control's humanoid (``dm_control/suite/humanoid.xml``, 27 degrees of freedom, a free
root, several hinges per body, armature) or ``--model``, and a chain of N hinge links written as
MJCF here.  MuJoCo runs with contacts, constraints, passive forces and actuation disabled, so
that both sides compute the same smooth rigid-body dynamics (armature included); the results are
checked to agree before they are timed.

1. Load: ``ej.load_mjcf(path)`` (MuJoCo's compiler, then the mapping) beside
   ``mujoco.MjModel.from_xml_path(path)`` alone.
2. One state, one thread, from Python:
   * inverse dynamics: ``ej.rnea(q, qd, qdd)`` beside ``mj_inverse`` and beside the minimum MuJoCo
     needs for it, ``mj_kinematics + mj_comPos + mj_comVel + mj_rne`` (MuJoCo's rne needs the
     kinematics stages before it, as ejce_nb's sweep computes them);
   * forward dynamics: ``ej.aba(q, qd, tau)`` beside ``mj_forward`` (which forms M by the CRB,
     factorises it and solves: its smooth dynamics);
   * mass matrix: ``ej.mass_matrix(q)`` beside ``mj_kinematics + mj_comPos + mj_crb + mj_fullM``.
   MuJoCo's side includes copying the state into ``MjData`` (as a user must).
3. A batch of B states (10^5; 10^4 with --quick): ``ej.rnea`` / ``ej.aba`` on (B, n) arrays
   (Numba's threads) beside MuJoCo's ``mj_inverse`` / ``mj_forward`` over the states from Python,
   split over the same number of threads, one ``MjData`` each (MuJoCo's functions release the
   GIL, as ``mujoco.rollout`` does for simulation).
4. Simulation: B trajectories of T steps of RK4 (``ej.simulate`` batch) beside
   ``mujoco.rollout.rollout`` with MuJoCo's RK4 at the same step, same threads.

Every time is the best of several repeats; ratios are ejce_nb / MuJoCo for times (< 1: ejce_nb
faster) and MuJoCo / ejce_nb for the batch times too (each row says).
"""
import argparse
import concurrent.futures
import glob
import json
import os
import site
import time

import mujoco
import numba
import numpy as np

import ejce_nb as ej


def find_humanoid():
    for root in site.getsitepackages():
        hit = glob.glob(os.path.join(root, "dm_control", "suite", "humanoid.xml"))
        if hit:
            return hit[0]
    raise SystemExit("dm_control is not installed: give --model PATH")


def chain_xml(n):
    body = ""
    for k in reversed(range(n)):
        body = (f'<body name="l{k}" pos="0 0 {-0.1 if k else 0}"><joint name="j{k}" type="hinge" '
                f'axis="{"0 1 0" if k % 2 else "1 0 0"}" armature="0.01"/>'
                f'<geom type="capsule" fromto="0 0 0 0 0 -0.1" size="0.01" mass="0.1"/>{body}</body>')
    return (f'<mujoco model="chain{n}"><option integrator="RK4" timestep="0.001"/>'
            f'<default><geom contype="0" conaffinity="0"/></default><worldbody>{body}</worldbody></mujoco>')


def rigid_only(mj):
    D = mujoco.mjtDisableBit
    for flag in ("mjDSBL_CONTACT", "mjDSBL_CONSTRAINT", "mjDSBL_EQUALITY", "mjDSBL_LIMIT", "mjDSBL_PASSIVE",
                 "mjDSBL_ACTUATION", "mjDSBL_FRICTIONLOSS", "mjDSBL_SPRING", "mjDSBL_DAMPER"):
        if hasattr(D, flag):
            mj.opt.disableflags |= int(getattr(D, flag))
    mj.body_gravcomp[:] = 0.0
    mj.eq_active0[:] = 0
    return mj


def states(mj, n, rng):
    Q = np.tile(mj.qpos0, (n, 1))
    for j in range(mj.njnt):
        t, a = int(mj.jnt_type[j]), int(mj.jnt_qposadr[j])
        if t == mujoco.mjtJoint.mjJNT_FREE:
            Q[:, a:a + 3] += rng.normal(size=(n, 3))
            x = rng.normal(size=(n, 4))
            Q[:, a + 3:a + 7] = x / np.linalg.norm(x, axis=1, keepdims=True)
        elif t == mujoco.mjtJoint.mjJNT_BALL:
            x = rng.normal(size=(n, 4))
            Q[:, a:a + 4] = x / np.linalg.norm(x, axis=1, keepdims=True)
        else:
            Q[:, a] += rng.uniform(-1, 1, size=n)
    return Q, rng.normal(size=(n, mj.nv)), rng.normal(size=(n, mj.nv))


def best(f, repeat, min_time=0.04):
    """Best time per call of f() over ``repeat`` repeats of at least ``min_time`` seconds."""
    f()
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            f()
        dt = time.perf_counter() - t0
        if dt >= min_time:
            break
        n *= 2
    out = dt / n
    for _ in range(repeat - 1):
        t0 = time.perf_counter()
        for _ in range(n):
            f()
        out = min(out, (time.perf_counter() - t0) / n)
    return out


def single_calls(name, mj, model, repeat, rng):
    d = mujoco.MjData(mj)
    (q, q2), (v, v2), (a, a2) = (x[:2] for x in states(mj, 2, rng))
    pair = [(q, v, a), (q2, v2, a2)]

    def mj_state(k, acc=True):
        qq, vv, aa = pair[k]
        d.qpos[:] = qq
        d.qvel[:] = vv
        if acc:
            d.qacc[:] = aa

    d.qpos[:], d.qvel[:], d.qacc[:] = q, v, a
    mujoco.mj_inverse(mj, d)
    tau = d.qfrc_inverse.copy()
    M_mj = np.zeros((mj.nv, mj.nv))
    mujoco.mj_fullM(mj, d, M_mj)
    err = max(np.abs(ej.rnea(model, q, v, a) - tau).max(), np.abs(ej.mass_matrix(model, q) - M_mj).max(),
              np.abs(ej.aba(model, q, v, tau) - a).max() / max(1.0, np.abs(a).max()))
    assert err < 1e-8 * max(1.0, np.abs(tau).max()), err
    taus = [ej.rnea(model, *p) for p in pair]
    res = np.zeros(mj.nv)
    M = np.zeros((mj.nv, mj.nv))
    k = [0]

    def turn():
        k[0] ^= 1
        return k[0]

    def mj_inv():
        mj_state(turn())
        mujoco.mj_inverse(mj, d)

    def mj_rne_only():
        mj_state(turn())
        mujoco.mj_kinematics(mj, d)
        mujoco.mj_comPos(mj, d)
        mujoco.mj_comVel(mj, d)
        mujoco.mj_rne(mj, d, 1, res)

    def mj_fwd():
        i = turn()
        mj_state(i, acc=False)
        d.qfrc_applied[:] = taus[i]
        mujoco.mj_forward(mj, d)

    def mj_mass():
        mj_state(turn(), acc=False)
        mujoco.mj_kinematics(mj, d)
        mujoco.mj_comPos(mj, d)
        mujoco.mj_crb(mj, d)
        mujoco.mj_fullM(mj, d, M)

    def ej_rnea():
        i = turn()
        ej.rnea(model, *pair[i])

    def ej_aba():
        i = turn()
        ej.aba(model, pair[i][0], pair[i][1], taus[i])

    def ej_mass():
        ej.mass_matrix(model, pair[turn()][0])

    rows = []
    for what, ours, theirs in (("rnea vs mj_inverse", ej_rnea, mj_inv),
                               ("rnea vs mj_kinematics+comPos+comVel+rne", ej_rnea, mj_rne_only),
                               ("aba vs mj_forward", ej_aba, mj_fwd),
                               ("mass_matrix vs mj_kinematics+comPos+crb+fullM", ej_mass, mj_mass)):
        t_ej, t_mj = best(ours, repeat), best(theirs, repeat)
        rows.append(dict(model=name, call=what, ejce_us=t_ej * 1e6, mujoco_us=t_mj * 1e6, ratio=t_ej / t_mj))
    return rows


def batch(name, mj, model, B, threads, repeat, rng):
    Q, V, A = states(mj, B, rng)
    TAU = ej.rnea(model, Q, V, A)
    datas = [mujoco.MjData(mj) for _ in range(threads)]
    chunks = np.array_split(np.arange(B), threads)
    pool = concurrent.futures.ThreadPoolExecutor(threads)

    def run(kind):
        def work(c):
            d = datas[c]
            for b in chunks[c]:
                d.qpos[:] = Q[b]
                d.qvel[:] = V[b]
                if kind == "inv":
                    d.qacc[:] = A[b]
                    mujoco.mj_inverse(mj, d)
                else:
                    d.qfrc_applied[:] = TAU[b]
                    mujoco.mj_forward(mj, d)
        list(pool.map(work, range(threads)))

    rows = []
    for what, ours, theirs in (("rnea vs mj_inverse", lambda: ej.rnea(model, Q, V, A), lambda: run("inv")),
                               ("aba vs mj_forward", lambda: ej.aba(model, Q, V, TAU), lambda: run("fwd"))):
        t_ej, t_mj = best(ours, repeat, 0.2), best(theirs, max(2, repeat // 3), 0.2)
        rows.append(dict(model=name, call=what, states=B, threads=threads, ejce_states_per_s=B / t_ej,
                         mujoco_states_per_s=B / t_mj, speedup=t_mj / t_ej))
    pool.shutdown()
    return rows


def simulation(name, mj, model, B, T, threads, rng):
    from mujoco import rollout
    mj.opt.integrator = int(mujoco.mjtIntegrator.mjINT_RK4)
    dt = float(mj.opt.timestep)
    Q, V, _ = states(mj, B, rng)
    V *= 0.1
    # MuJoCo's passive forces and constraints are off (rigid_only): so are the model's springs,
    # dampers and joint limits
    kw = dict(method="rk4", record_every=T, damping=0.0, stiffness=0.0, limits=False, progress=False)
    traj = ej.simulate(model, Q[:2], V[:2], T * dt, dt, **kw)   # compile
    t0 = time.perf_counter()
    traj = ej.simulate(model, Q, V, T * dt, dt, **kw)
    t_ej = time.perf_counter() - t0
    nstate = mujoco.mj_stateSize(mj, mujoco.mjtState.mjSTATE_FULLPHYSICS)
    x0 = np.zeros((B, nstate))
    d = mujoco.MjData(mj)
    for b in range(B):
        d.qpos[:], d.qvel[:] = Q[b], V[b]
        mujoco.mj_getState(mj, d, x0[b], mujoco.mjtState.mjSTATE_FULLPHYSICS)
    datas = [mujoco.MjData(mj) for _ in range(threads)]
    with rollout.Rollout(nthread=threads) as r:
        r.rollout(mj, datas, x0[:2], nstep=T)
        t0 = time.perf_counter()
        state, _ = r.rollout(mj, datas, x0, nstep=T)
        t_mj = time.perf_counter() - t0
    qpos = state[:, -1, 1:1 + mj.nq]
    err = float(np.abs(traj.q[-1] - qpos).max())
    return [dict(model=name, call="simulate rk4 vs rollout rk4", trajectories=B, steps=T, threads=threads,
                 ejce_s=t_ej, mujoco_s=t_mj, speedup=t_mj / t_ej, max_q_difference=err)]


def table(rows):
    keys = list(rows[0])
    print(" | ".join(keys))
    for r in rows:
        print(" | ".join(f"{r[k]:.4g}" if isinstance(r[k], float) else str(r[k]) for k in keys))
    print()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--model", default=None, help="an MJCF file (default: dm_control's humanoid)")
    p.add_argument("--threads", type=int, default=numba.get_num_threads())
    p.add_argument("--json", default=None)
    args = p.parse_args()
    B = 10_000 if args.quick else 100_000
    repeat = 3 if args.quick else 7
    nchain = 100 if args.quick else 400
    rng = np.random.default_rng(0)
    path = args.model or find_humanoid()
    numba.set_num_threads(args.threads)
    out = {"load": [], "single": [], "batch": [], "simulate": []}
    cases = []
    for name, src in ((os.path.basename(path), path), (f"chain{nchain}", chain_xml(nchain))):
        is_file = not src.lstrip().startswith("<")
        t_mj = best(lambda: mujoco.MjModel.from_xml_path(src) if is_file else mujoco.MjModel.from_xml_string(src),
                    repeat, 0.2)
        model = ej.load_mjcf(src, warn=False)
        t_ej = best(lambda: ej.load_mjcf(src, warn=False), repeat, 0.2)
        out["load"].append(dict(model=name, nv=model.nv, ejce_ms=t_ej * 1e3, mujoco_compile_ms=t_mj * 1e3))
        mj = rigid_only(mujoco.MjModel.from_xml_path(src) if is_file else mujoco.MjModel.from_xml_string(src))
        cases.append((name, mj, ej.from_mujoco(mj, warn=False)))
    table(out["load"])
    for name, mj, model in cases:
        out["single"] += single_calls(name, mj, model, repeat, rng)
    table(out["single"])
    for name, mj, model in cases:
        out["batch"] += batch(name, mj, model, B if name == cases[0][0] else B // 10, args.threads, repeat, rng)
    table(out["batch"])
    name, mj, model = cases[0]
    out["simulate"] += simulation(name, mj, model, 100 if args.quick else 1000, 1000, args.threads, rng)
    table(out["simulate"])
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
