"""ejce_nb beside Pinocchio and MuJoCo, measured in the same run on the same states.

    python benchmarks/compare_pinocchio.py [--quick] [--threads 1,2] [--json FILE]

1. One public call, one thread: ``ej.forward_kinematics`` (with accelerations), ``ej.rnea`` and
   ``ej.aba`` on the 7-DOF arm (``load("arm7")``), and ``ej.rnea``, ``ej.aba`` on 100-body chains
   of Z-Y-X Euler spherical joints and of revolute joints, beside Pinocchio's Python calls
   (``pin.forwardKinematics``, ``pin.rnea``, ``pin.aba``).  Two states take turns, so that no call
   can reuse what the previous one computed (Pinocchio recomputes everything anyway); "data"
   is the same call with an ``ej.Data`` workspace.
2. Cost per degree of freedom: the Z-Y-X chain beside the revolute chain (ejce_nb's compiled
   kernel and Pinocchio), N = 100 (and 500).
3. Batched rnea and aba on the arm: states per second of ejce_nb at each thread count, of
   Pinocchio's ``rneaInParallel`` / ``abaInParallel`` on a ``ModelPool`` at the same thread counts,
   and of ``pin.rnea`` / ``pin.aba`` in a Python loop.
4. Long revolute chains, one state (N = 10,000 and 100,000, each in a fresh process): ns per body
   of ejce_nb's compiled kernels beside Pinocchio's per body (its Data does not fit beyond about
   500 bodies: the figure of section 2's largest chain), and memory.
5. ``ej.simulate`` (RK4, the whole time loop compiled) beside MuJoCo's ``mj_step`` with its RK4
   integrator on the same hinge chain: a 20-link chain for 4,000 steps and a 400-link chain.

``--quick`` uses smaller batches, long chains of 10,000 and 30,000 bodies and fewer repeats.  Numba
compiles the kernels on first use (minutes with a cold cache); the figures are taken after
warm-up calls, so a cold cache lengthens the run, not the timings.

Ratios are "time of ejce_nb / time of the other side" for single calls (< 1: ejce_nb is faster)
and "rate of ejce_nb / rate of the other side" for batches (> 1: ejce_nb is faster); each table
says which.  Every time is the best of several repeats of at least ~40 ms (on a shared machine
the minimum of short repeats is the least disturbed).  Pinocchio gets its fastest joints: a
revolute joint about a coordinate axis becomes RX/RY/RZ.  Both sides are checked to agree on the
states they are timed on.
"""
import argparse
import ctypes
import gc
import hashlib
import json
import os
import platform
import resource
import subprocess
import sys
import time

import numba
import numpy as np
import pinocchio as pin

import ejce_nb as ej
from ejce_nb.models import chain, load

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
sys.path.insert(0, os.path.join(os.path.dirname(_HERE), "tests"))
import pin_oracle  # noqa: E402
from bench_dynamics import alternating, kernel_runs, states  # noqa: E402

SETTINGS = {
    "full": dict(batch=100_000, batch_repeat=9, repeat=15, perdof=(100, 500), long=(10_000, 100_000),
                 sim_steps=4000, sim_long_steps=200),
    "quick": dict(batch=20_000, batch_repeat=5, repeat=7, perdof=(100,), long=(10_000, 30_000),
                  sim_steps=4000, sim_long_steps=50),
}
PIN_DATA_BYTES_PER_NV3 = 72.0   # peak while Pinocchio 4.1 builds Data: ~64 nv^3 bytes, plus a margin


# ---------------------------------------------------------------------------- helpers
TARGET_S = 0.04     # length of one timed repeat: short repeats are more often undisturbed


def best(runs, repeat, target=TARGET_S):
    """Seconds per iteration of each ``runs[name](k)`` (k iterations).  k is set per run so that
    one repeat lasts about ``target`` seconds; the runs take turns, repeat by repeat, so that all
    of them see the same disturbances, and the best repeat of each is returned."""
    ks = {}
    for name, run in runs.items():
        k = 1
        while True:
            t0 = time.perf_counter()
            run(k)
            dt = time.perf_counter() - t0
            if dt >= target / 8 or k >= 1 << 20:
                break
            k *= 8
        ks[name] = max(1, int(round(k * target / max(dt, 1e-9))))
    out = {name: np.inf for name in runs}
    for _ in range(repeat):
        for name, run in runs.items():
            t0 = time.perf_counter()
            run(ks[name])
            out[name] = min(out[name], (time.perf_counter() - t0) / ks[name])
    return out


def calls(f):
    """``run(k)`` for ``best``: k calls of f from Python."""
    def run(k):
        for _ in range(k):
            f()
    return run


def package_hash():
    """Hash of ejce_nb's sources as they are on disk now (to notice edits during a run)."""
    h = hashlib.sha1()
    root = os.path.dirname(os.path.abspath(ej.__file__))
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if not x.startswith((".", "__")))
        for name in sorted(files):
            if name.endswith(".py"):
                with open(os.path.join(d, name), "rb") as f:
                    h.update(name.encode() + f.read())
    return h.hexdigest()[:12]


def rss():
    """Resident memory of this process now (bytes)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def peak_rss():
    """Peak resident memory of this process (bytes): VmHWM, else getrusage's ru_maxrss (kB)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def trim():
    """Collect garbage and hand free heap memory back to the system (glibc), so that resident
    memory measured next starts from what is really in use."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def reset_peak():
    """Reset the peak resident memory to the current one (Linux: clear_refs 5); False if not."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def mem_available():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


def pin_data_fits(nv):
    need = PIN_DATA_BYTES_PER_NV3 * float(nv) ** 3
    return need < 0.6 * mem_available(), need


def _aligned_joint(spec):
    """Pinocchio's fastest joint for a spec: RX/RY/RZ for a revolute about a coordinate axis."""
    if isinstance(spec, ej.joints.Revolute):
        axis = np.asarray(spec.axis, dtype=float)
        for k, make in enumerate((pin.JointModelRX, pin.JointModelRY, pin.JointModelRZ)):
            if np.array_equal(axis, np.eye(3)[k]):
                return make()
    return _generic_joint(spec)


_generic_joint = pin_oracle.pin_joint_model


def pin_side(model):
    """tests/pin_oracle.PinModel (depth-first, our frames and inertias) with aligned revolute
    joints, plus the coordinate permutations (q_pin = q[perm_q], v_pin = v[perm_v]); the maps are
    checked to be plain permutations (no quaternion or free-flyer blocks)."""
    pin_oracle.pin_joint_model = _aligned_joint
    try:
        pm = pin_oracle.PinModel(model)
    finally:
        pin_oracle.pin_joint_model = _generic_joint
    perm_q = np.zeros(model.nq, dtype=np.int64)
    perm_v = np.zeros(model.nv, dtype=np.int64)
    for i, spec, qs, vs, iq, iv in pm.blocks:
        perm_q[iq:iq + (qs.stop - qs.start)] = np.arange(qs.start, qs.stop)
        perm_v[iv:iv + (vs.stop - vs.start)] = np.arange(vs.start, vs.stop)
    q = np.random.default_rng(5).uniform(-1, 1, model.nq)
    if not (np.array_equal(pm.q(q), q[perm_q]) and np.array_equal(pm.T(q), np.eye(model.nv)[perm_v])):
        raise NotImplementedError("coordinates are not a plain permutation of Pinocchio's")
    return pm, perm_q, perm_v


def rel_err(x, ref):
    x, ref = np.asarray(x), np.asarray(ref)
    return float(np.max(np.abs(x - ref)) / max(1.0, float(np.max(np.abs(ref)))))



def fmt_rate(x):
    return f"{x:.3g}" if x is not None else "-"


def fmt_us(x):
    return "-" if x is None else f"{x * 1e6:.2f}"


def fmt_ns(x):
    if x is None:
        return "-"
    return f"{x:.0f}" if x >= 100 else f"{x:.1f}"


def fmt_ratio(x):
    return f"{x:.2f}" if x is not None else "-"


def ratio(a, b):
    return None if a is None or b is None else a / b


# ---------------------------------------------------------------------------- 1. one call
def two_states(model, seed):
    q, qd, qdd = states(model, 2, np.random.default_rng(seed))
    tau = ej.rnea(model, q, qd, qdd)
    return q, qd, qdd, tau


def call_runs(model, pm, pq, pv, what, q, qd, qdd, tau, data):
    """{ejce, data, pin}: run(k) of k public calls (two states in turn), the same with an
    ej.Data, and k of Pinocchio's calls.  Each loop calls the function directly, so that the
    loop adds the same little to both sides."""
    pmodel, pdata = pm.pmodel, pm.data
    q0, v0, a0, t0 = q[0], qd[0], qdd[0], tau[0]
    q1, v1, a1, t1 = q[1], qd[1], qdd[1], tau[1]
    p0, w0, b0, u0 = (np.ascontiguousarray(x[0][p]) for x, p in ((q, pq), (qd, pv), (qdd, pv), (tau, pv)))
    p1, w1, b1, u1 = (np.ascontiguousarray(x[1][p]) for x, p in ((q, pq), (qd, pv), (qdd, pv), (tau, pv)))
    m, d = model, data
    if what == "fk":
        f, g = ej.forward_kinematics, pin.forwardKinematics

        def e(k):
            for _ in range(k >> 1):
                f(m, q0, v0, a0)
                f(m, q1, v1, a1)

        def ed(k):
            for _ in range(k >> 1):
                f(m, q0, v0, a0, data=d)
                f(m, q1, v1, a1, data=d)

        def p(k):
            for _ in range(k >> 1):
                g(pmodel, pdata, p0, w0, b0)
                g(pmodel, pdata, p1, w1, b1)
    elif what == "rnea":
        f, g = ej.rnea, pin.rnea

        def e(k):
            for _ in range(k >> 1):
                f(m, q0, v0, a0)
                f(m, q1, v1, a1)

        def ed(k):
            for _ in range(k >> 1):
                f(m, q0, v0, a0, data=d)
                f(m, q1, v1, a1, data=d)

        def p(k):
            for _ in range(k >> 1):
                g(pmodel, pdata, p0, w0, b0)
                g(pmodel, pdata, p1, w1, b1)
    else:
        f, g = ej.aba, pin.aba

        def e(k):
            for _ in range(k >> 1):
                f(m, q0, v0, t0)
                f(m, q1, v1, t1)

        def ed(k):
            for _ in range(k >> 1):
                f(m, q0, v0, t0, data=d)
                f(m, q1, v1, t1, data=d)

        def p(k):
            for _ in range(k >> 1):
                g(pmodel, pdata, p0, w0, u0)
                g(pmodel, pdata, p1, w1, u1)
    for run in (e, ed, p):
        run(2)
    return {"ejce": e, "data": ed, "pin": p}


def check_against_pin(model, pm, q, qd, qdd, tau):
    k = min(2, q.shape[0])
    err = {"rnea": rel_err(ej.rnea(model, q[:k], qd[:k], qdd[:k]),
                           np.array([pm.rnea(q[b], qd[b], qdd[b]) for b in range(k)])),
           "aba": rel_err(ej.aba(model, q[:k], qd[:k], tau[:k]), qdd[:k])}
    kin = ej.forward_kinematics(model, q[0], qd[0], qdd[0])
    ref = pm.kinematics(q[0], qd[0], qdd[0])
    err["fk"] = max(rel_err(getattr(kin, f), ref[f]) for f in ("R", "p", "omega", "v", "alpha", "a"))
    return err


def one_call(repeat):
    numba.set_num_threads(1)
    rows = []
    cases = [("arm7", load("arm7"), ("fk", "rnea", "aba")),
             ("ZYX chain, N = 100", chain(100, joint="ZYX"), ("rnea", "aba")),
             ("revolute chain, N = 100", chain(100), ("rnea", "aba"))]
    for label, model, whats in cases:
        pm, pq, pv = pin_side(model)
        q, qd, qdd, tau = two_states(model, 3)
        check = check_against_pin(model, pm, q, qd, qdd, tau)
        data = ej.Data(model)
        for what in whats:
            t = best(call_runs(model, pm, pq, pv, what, q, qd, qdd, tau, data), repeat)
            rows.append({"case": label, "nv": model.nv, "call": what, "check": check[what], **t})
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    return rows


def print_one_call(rows, repeat):
    print(f"1. One public call, 1 thread, two states in turn: microseconds per call (best of {repeat})")
    print("   ejce: ej.<call>(model, q, ...); data: the same with data=ej.Data(model); Pin: pin.<call> from "
          "Python.\n   ratio = ejce_nb's time / Pinocchio's time (target <= 2, aim 1); check: max |diff| "
          "against Pinocchio (aba: of aba(rnea(qdd)) against qdd)")
    print(f"   {'case':<26}{'call':<6}{'ejce':>8}{'data':>8}{'Pin':>8}{'ejce/Pin':>10}{'data/Pin':>10}   check")
    for r in rows:
        print(f"   {r['case']:<26}{r['call']:<6}{fmt_us(r['ejce']):>8}{fmt_us(r['data']):>8}{fmt_us(r['pin']):>8}"
              f"{fmt_ratio(r['ejce'] / r['pin']):>10}{fmt_ratio(r['data'] / r['pin']):>10}   {r['check']:.0e}")


# ---------------------------------------------------------------------------- 2. per DOF
def per_dof(sizes, repeat):
    numba.set_num_threads(1)
    rows = []
    for n in sizes:
        for joint in ("revolute", "ZYX"):
            model = chain(n, joint=joint)
            fits, need = pin_data_fits(model.nv)
            q, qd, qdd, tau = two_states(model, 4)
            runs = kernel_runs(model, q[0], qd[0], qdd[0], tau[0])
            r = {"N": n, "joint": joint, "nv": model.nv}
            if fits:
                pm, pq, pv = pin_side(model)
                P = [tuple(np.ascontiguousarray(x[b][p]) for x, p in ((q, pq), (qd, pv), (qdd, pv), (tau, pv)))
                     for b in range(2)]
                runs["pin_rnea"] = alternating(lambda s: pin.rnea(pm.pmodel, pm.data, s[0], s[1], s[2]), (P[0],), (P[1],))
                runs["pin_aba"] = alternating(lambda s: pin.aba(pm.pmodel, pm.data, s[0], s[1], s[3]), (P[0],), (P[1],))
                r["check"] = rel_err(ej.rnea(model, q[0], qd[0], qdd[0]), pm.rnea(q[0], qd[0], qdd[0]))
            else:
                r["pin_skipped"] = f"Pinocchio's Data would need ~{need / 1e9:.0f} GB"
            r.update(best(runs, repeat))
            rows.append(r)
            del runs
            trim()
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    return rows


def print_per_dof(rows, repeat):
    print(f"\n2. Cost per degree of freedom, one state, 1 thread: ns per DOF (best of {repeat})")
    print("   kernel: ejce_nb's compiled rnea / aba looped in compiled code, no stage reused; Pin: pin.rnea / "
          "pin.aba from Python\n   (JointModelRY, JointModelSphericalZYX).  ZYX/rev: cost per DOF of the "
          "Z-Y-X chain / that of the revolute chain (target <= 2)")
    print(f"   {'N':>5} {'joint':<9}{'rnea':>8}{'Pin':>8}{'aba':>8}{'Pin':>8}{'ZYX/rev rnea':>14}{'aba':>6}"
          f"{'Pin rnea':>10}{'aba':>6}")
    base = {}
    for r in rows:
        vals = {k: (None if r.get(k) is None else r[k] / r["nv"] * 1e9)
                for k in ("kernel_rnea", "pin_rnea", "kernel_aba", "pin_aba")}
        if r["joint"] == "revolute":
            base[r["N"]] = vals
            rel = ["", "", "", ""]
        else:
            b = base.get(r["N"], {})
            rel = [fmt_ratio(ratio(vals[k], b.get(k))) for k in ("kernel_rnea", "kernel_aba", "pin_rnea", "pin_aba")]
        print(f"   {r['N']:>5} {r['joint']:<9}{fmt_ns(vals['kernel_rnea']):>8}{fmt_ns(vals['pin_rnea']):>8}"
              f"{fmt_ns(vals['kernel_aba']):>8}{fmt_ns(vals['pin_aba']):>8}{rel[0]:>14}{rel[1]:>6}{rel[2]:>10}{rel[3]:>6}")
        if "pin_skipped" in r:
            print(f"   N = {r['N']} {r['joint']}: Pinocchio skipped: {r['pin_skipped']}")


# ---------------------------------------------------------------------------- 3. batch, arm7
def arm7_batch(B, threads, repeat):
    model = load("arm7")
    pm, pq, pv = pin_side(model)
    pmodel = pm.pmodel
    q, qd, qdd = states(model, B, np.random.default_rng(1))
    qp, vp, ap = (np.ascontiguousarray(x[:, p]) for x, p in ((q, pq), (qd, pv), (qdd, pv)))
    Qp, Vp, Ap = qp.T, vp.T, ap.T                 # F-contiguous views, (n, B)
    tau_pool = np.zeros((model.nv, B), order="F")
    qdd_pool = np.zeros((model.nv, B), order="F")
    pool = pin.ModelPool(pmodel, max(threads))
    data = pmodel.createData()
    numba.set_num_threads(max(threads))
    tau = ej.rnea(model, q, qd, qdd)
    acc = ej.aba(model, q, qd, tau)
    taup = np.ascontiguousarray(tau[:, pv])
    Tp = taup.T
    pin.rneaInParallel(max(threads), pool, Qp, Vp, Ap, tau_pool)
    pin.abaInParallel(max(threads), pool, Qp, Vp, Tp, qdd_pool)
    check = {"rnea_vs_pin_pool": rel_err(tau[:, pv], tau_pool.T), "aba_vs_pin_pool": rel_err(acc[:, pv], qdd_pool.T),
             "aba_recovers_qdd": rel_err(acc, qdd)}

    def loop_rnea(k):
        for _ in range(k):
            for qb, vb, ab in zip(qp, vp, ap):
                pin.rnea(pmodel, data, qb, vb, ab)

    def loop_aba(k):
        for _ in range(k):
            for qb, vb, tb in zip(qp, vp, taup):
                pin.aba(pmodel, data, qb, vb, tb)

    rows = []
    loop = None
    for th in threads:
        numba.set_num_threads(th)
        ej.rnea(model, q, qd, qdd)
        ej.aba(model, q, qd, tau)
        runs = {"ejce_rnea": calls(lambda: ej.rnea(model, q, qd, qdd)),
                "pool_rnea": calls(lambda: pin.rneaInParallel(th, pool, Qp, Vp, Ap, tau_pool)),
                "ejce_aba": calls(lambda: ej.aba(model, q, qd, tau)),
                "pool_aba": calls(lambda: pin.abaInParallel(th, pool, Qp, Vp, Tp, qdd_pool))}
        if loop is None:        # the Python loop runs on one thread: timed once, with the first
            runs.update(loop_rnea=loop_rnea, loop_aba=loop_aba)
        t = best(runs, repeat)
        if loop is None:
            loop = {"loop_rnea": t.pop("loop_rnea"), "loop_aba": t.pop("loop_aba")}
        r = {"threads": th}
        r.update({k: B / v for k, v in t.items()})
        r.update({k: B / v for k, v in loop.items()})
        rows.append(r)
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    return {"nbodies": model.nbodies, "nv": model.nv, "batch": B, "repeat": repeat, "rows": rows, "check": check}


def print_arm7(res):
    c = res["check"]
    print(f"\n3. Batched dynamics, arm7 ({res['nbodies']} bodies, nv = {res['nv']}), {res['batch']} random "
          f"states: states per second (best of {res['repeat']})")
    print("   ejce_nb: ej.rnea / ej.aba on the (B, n) batch; Pin pool: rneaInParallel / abaInParallel on a "
          "ModelPool;\n   Pin loop: pin.rnea / pin.aba in a Python loop (one thread).  x pool, x loop: "
          "ejce_nb's rate / the other's (targets: rnea >= 10 x loop, aba >= 6 x loop, both >= 2 x pool)")
    print(f"   {'algo':<5}{'threads':>8}{'ejce_nb':>11}{'Pin pool':>11}{'Pin loop':>11}{'x pool':>9}{'x loop':>9}")
    for algo in ("rnea", "aba"):
        for r in res["rows"]:
            e, p, lo = r[f"ejce_{algo}"], r[f"pool_{algo}"], r[f"loop_{algo}"]
            print(f"   {algo:<5}{r['threads']:>8}{fmt_rate(e):>11}{fmt_rate(p):>11}{fmt_rate(lo):>11}"
                  f"{fmt_ratio(e / p):>9}{fmt_ratio(e / lo):>9}")
    print(f"   agreement with the Pin pool over the whole batch: rnea {c['rnea_vs_pin_pool']:.1e}, aba "
          f"{c['aba_vs_pin_pool']:.1e}; aba(rnea(qdd)) - qdd {c['aba_recovers_qdd']:.1e}")


# ---------------------------------------------------------------------------- 4. long chains
def long_chain_child(n, repeat):
    """In a fresh process: memory of building chain(n) and of the first calls, then the kernel
    timings.  Prints one JSON line."""
    numba.set_num_threads(1)
    small = chain(3)
    z = np.zeros(3)
    ej.aba(small, z, z, ej.rnea(small, z, z, z))        # load the kernels before the baseline
    trim()
    exact_peak = reset_peak()
    r0, p0 = rss(), peak_rss()
    t0 = time.perf_counter()
    model = chain(n)
    build_s = time.perf_counter() - t0
    trim()
    r_model = rss() - r0
    q, qd, qdd, tau = two_states(model, 0)
    acc = ej.aba(model, q[0], qd[0], tau[0])
    trim()
    r_calls = rss() - r0
    peak_growth = max(peak_rss() - (r0 if exact_peak else p0), 0)
    runs = kernel_runs(model, q[0], qd[0], qdd[0], tau[0])
    r = {"N": n, "model_array_bytes": int(model._mi.nbytes + model._mf.nbytes),
         "workspace_bytes": 8 * (model.record_size + model.scratch_size)}
    r.update(best(runs, repeat))
    r.update(aba_err_ejce=rel_err(acc, qdd[0]), build_s=build_s, rss_model=r_model, rss_model_calls=r_calls,
             peak_growth=peak_growth, package_hash=package_hash())
    print(json.dumps(r))


def long_chains(sizes, repeat):
    rows = []
    for n in sizes:
        cmd = [sys.executable, os.path.abspath(__file__), "--long-chain-child", str(n), "--repeat", str(repeat)]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"long chain N = {n} failed:\n{p.stderr[-3000:]}")
        rows.append(json.loads(p.stdout.strip().splitlines()[-1]))
    return rows


def print_long(rows, pin_ref, repeat):
    print(f"\n4. Long revolute chains, one state, 1 thread, each N in a fresh process (best of {repeat})")
    ref = f"N = {pin_ref['N']}" if pin_ref else "-"
    print(f"   ns per body of ejce_nb's compiled kernels; Pinocchio per body at its largest chain ({ref}; its "
          "Data holds nv^3 tensors).\n   x Pin: ejce_nb's time per body / Pinocchio's")
    pr = None if not pin_ref else pin_ref.get("pin_rnea")
    pa = None if not pin_ref else pin_ref.get("pin_aba")
    pr_b = None if pr is None else pr / pin_ref["nv"] * 1e9
    pa_b = None if pa is None else pa / pin_ref["nv"] * 1e9
    print(f"   {'N':>7}{'rnea':>8}{'x Pin':>8}{'aba':>8}{'x Pin':>8}   model tables, workspace, resident growth "
          "(bytes per body)")
    for r in rows:
        n = r["N"]
        kr, ka = r["kernel_rnea"] / n * 1e9, r["kernel_aba"] / n * 1e9
        print(f"   {n:>7}{fmt_ns(kr):>8}{fmt_ratio(ratio(kr, pr_b)):>8}{fmt_ns(ka):>8}{fmt_ratio(ratio(ka, pa_b)):>8}"
              f"   {r['model_array_bytes'] / n:.0f}, {r['workspace_bytes'] / n:.0f}, "
              f"{r['rss_model_calls'] / n:.0f} (peak {r['peak_growth'] / n:.0f})")
    if len(rows) > 1:
        a, b = rows[0], rows[-1]
        print(f"   linearity: time per body at N = {b['N']} / at N = {a['N']}: rnea "
              f"{b['kernel_rnea'] / b['N'] / (a['kernel_rnea'] / a['N']):.2f}, aba "
              f"{b['kernel_aba'] / b['N'] / (a['kernel_aba'] / a['N']):.2f}")


# ---------------------------------------------------------------------------- 5. simulate vs MuJoCo
def mujoco_chain(model, dt):
    """The hinge chain of ``models.chain`` as MJCF (a body frame is our C frame, which chain()
    keeps at the body frame), RK4, no contacts, damping or armature."""
    import mujoco
    parts = [f'<mujoco><option integrator="RK4" timestep="{dt}" gravity="0 0 -9.81">'
             '<flag contact="disable"/></option><worldbody>']
    def num(*xs):
        return " ".join(repr(float(x)) for x in xs)

    for i in range(1, model.nbodies + 1):
        p, c, I, m = model.joint_P_pos[i], model.body_com[i], model.body_inertia[i], model.body_mass[i]
        parts.append(f'<body pos="{num(*p)}"><inertial pos="{num(*c)}" mass="{num(m)}" '
                     f'fullinertia="{num(I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2])}"/>'
                     f'<joint type="hinge" axis="{num(*model.joint_specs[i].axis)}"/>')
    parts += ["</body>"] * model.nbodies + ["</worldbody></mujoco>"]
    mm = mujoco.MjModel.from_xml_string("".join(parts))
    return mm, mujoco.MjData(mm)


def simulate_vs_mujoco(cases, repeat):
    import mujoco
    numba.set_num_threads(1)
    dt = 1e-3
    rows = []
    for n, steps in cases:
        model = chain(n)
        q0 = np.random.default_rng(6).uniform(-0.3, 0.3, n)
        v0 = np.zeros(n)
        mm, md = mujoco_chain(model, dt)

        def mj(k):
            for _ in range(k):
                md.qpos[:] = q0
                md.qvel[:] = v0
                md.time = 0.0
                for _ in range(steps):
                    mujoco.mj_step(mm, md)

        def ejs(k):
            for _ in range(k):
                ej.simulate(model, q0, v0, steps * dt, dt)

        traj = ej.simulate(model, q0, v0, steps * dt, dt)
        mj(1)
        agree = rel_err(traj.q[-1], md.qpos)
        t = best({"ejce": ejs, "mujoco": mj}, repeat, target=0.2)
        rows.append({"N": n, "steps": steps, "ejce": t["ejce"] / steps, "mujoco": t["mujoco"] / steps,
                     "end_state_diff": agree, "energy_drift": float(np.ptp(traj.energy) / max(1.0, abs(traj.energy[0])))})
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    return {"mujoco": mujoco.__version__, "rows": rows}


def print_sim(res):
    print(f"\n5. ej.simulate (RK4, compiled time loop, energy recorded every step) beside MuJoCo {res['mujoco']} "
          "mj_step (RK4), hinge chain, dt = 1e-3, 1 thread")
    print("   microseconds per step; MuJoCo/ejce: MuJoCo's time / ejce_nb's (targets: >= 1 at N = 20, >= 50 at "
          "N = 400); diff: end states after the run")
    print(f"   {'N':>5}{'steps':>7}{'ejce':>10}{'MuJoCo':>10}{'MuJoCo/ejce':>13}   diff     energy drift")
    for r in res["rows"]:
        print(f"   {r['N']:>5}{r['steps']:>7}{r['ejce'] * 1e6:>10.1f}{r['mujoco'] * 1e6:>10.1f}"
              f"{r['mujoco'] / r['ejce']:>13.2f}   {r['end_state_diff']:.0e}   {r['energy_drift']:.0e}")


# ---------------------------------------------------------------------------- main
def _rest(out, cfg, repeat, threads, sections, t0):
    """Sections 2 to 5 (into ``out`` and ``sections``)."""
    out["per_dof"] = per_dof(cfg["perdof"], repeat)
    print_per_dof(out["per_dof"], repeat)
    sections["2"], t0 = time.perf_counter() - t0, time.perf_counter()
    out["arm7_batch"] = arm7_batch(cfg["batch"], threads, cfg["batch_repeat"])
    print_arm7(out["arm7_batch"])
    sections["3"], t0 = time.perf_counter() - t0, time.perf_counter()
    out["long_chains"] = long_chains(cfg["long"], repeat)
    pin_rows = [r for r in out["per_dof"] if r["joint"] == "revolute" and r.get("pin_rnea") is not None]
    print_long(out["long_chains"], pin_rows[-1] if pin_rows else None, repeat)
    sections["4"], t0 = time.perf_counter() - t0, time.perf_counter()
    out["simulate"] = simulate_vs_mujoco(((20, cfg["sim_steps"]), (400, cfg["sim_long_steps"])), max(3, repeat // 3))
    print_sim(out["simulate"])
    sections["5"] = time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller batch and chains, fewer repeats")
    ap.add_argument("--threads", default="1,2", help="thread counts for the batches (default 1,2)")
    ap.add_argument("--json", metavar="FILE", help="also write the figures as JSON to FILE")
    ap.add_argument("--single", action="store_true", help="only section 1 (one public call)")
    ap.add_argument("--long-chain-child", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--repeat", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.long_chain_child:
        long_chain_child(args.long_chain_child, args.repeat or 5)
        return
    cfg = dict(SETTINGS["quick" if args.quick else "full"])
    if args.repeat:
        cfg["repeat"] = args.repeat
    repeat = cfg["repeat"]
    maxth = numba.config.NUMBA_NUM_THREADS
    threads = sorted({int(x) for x in args.threads.split(",") if x.strip()})
    threads = [t for t in threads if 1 <= t <= maxth] or [1]
    t_start = time.perf_counter()
    src = package_hash()
    import mujoco
    print(f"ejce_nb {ej.__version__} | Pinocchio {pin.__version__} | MuJoCo {mujoco.__version__} | numba "
          f"{numba.__version__} | numpy {np.__version__} | Python {platform.python_version()} | "
          f"{os.cpu_count()} CPUs ({platform.processor() or platform.machine()}), numba threads <= {maxth} | "
          f"load average {os.getloadavg()[0]:.2f}\n")
    out = {"settings": dict(cfg, threads=threads, quick=args.quick),
           "environment": {"ejce_nb": ej.__version__, "pinocchio": pin.__version__, "mujoco": mujoco.__version__,
                           "numba": numba.__version__, "numpy": np.__version__, "python": platform.python_version(),
                           "cpus": os.cpu_count(), "machine": platform.machine()}}
    sections = {}
    t0 = time.perf_counter()
    out["one_call"] = one_call(repeat)
    print_one_call(out["one_call"], repeat)
    sections["1"], t0 = time.perf_counter() - t0, time.perf_counter()
    if not args.single:
        _rest(out, cfg, repeat, threads, sections, t0)
    hashes = {src, package_hash()} | {r["package_hash"] for r in out.get("long_chains", ())}
    if len(hashes) > 1:
        print("\nWARNING: ejce_nb's sources changed during the run; its figures mix package versions")
    total = time.perf_counter() - t_start
    out["total_s"] = total
    out["section_s"] = sections
    print(f"\ntotal {total:.0f} s ({', '.join(f'{k}: {v:.0f} s' for k, v in sections.items())}), "
          f"load average at the end {os.getloadavg()[0]:.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
        print(f"figures written to {args.json}")


if __name__ == "__main__":
    main()
