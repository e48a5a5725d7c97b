"""ejce_nb beside Pinocchio, measured in the same run on the same states.

    python benchmarks/compare_pinocchio.py [--quick] [--threads 1,2] [--json FILE]

1. Batched rnea and aba on the 7-DOF arm (``load("arm7")``): states per second of ejce_nb at each
   thread count, of Pinocchio's ``rneaInParallel`` / ``abaInParallel`` on a ``ModelPool`` at the
   same thread counts, and of ``pin.rnea`` / ``pin.aba`` called in a Python loop.
2. One state on serial revolute chains (N = 100, 500): ns per body of ejce_nb's compiled sweep
   (the single-state kernel run repeatedly from compiled code, as in bench_dynamics.py), of its
   public call, and of Pinocchio's ``pin.rnea`` / ``pin.aba`` called from Python.
3. ejce_nb alone on long revolute chains (N = 10,000 and 100,000): ns per body and memory
   (model arrays, tables and workspaces, and resident-memory growth), each N in a fresh process.
4. The chain with Z-Y-X Euler spherical joints (``chain(N, joint="ZYX")``, Pinocchio's
   ``JointModelSphericalZYX``, N = 100 and 500): ns per degree of freedom, beside the revolute
   chain and Pinocchio.

``--quick`` uses 20,000 states, long chains of 10,000 and 30,000 bodies, ZYX chains of 100 and
fewer repeats.  Numba compiles the kernels on first use (minutes with a cold cache); the figures
are taken after warm-up calls, so a cold cache lengthens the run, not the timings.

Ratios are "time of the other side / time of ejce_nb", so > 1 means ejce_nb is faster.  Every
time is the best of several repeats of at least ~40 ms (on a shared machine the minimum of short
repeats is the least disturbed).
Pinocchio gets its fastest joints: a revolute joint about a coordinate axis becomes RX/RY/RZ.
Both sides are checked to agree on the states they are timed on.  Pinocchio 4.1's Data holds nv^3
tensors (4 GB at nv = 500, about twice that while it is built), so a Pinocchio model whose Data
would not fit in the available memory is skipped.
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
from ejce_nb import joint_motion as jm
from ejce_nb.models import chain, load

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
sys.path.insert(0, os.path.join(os.path.dirname(_HERE), "tests"))
import pin_oracle  # noqa: E402
from bench_dynamics import _aba_loop, _rnea_loop, states  # noqa: E402

SETTINGS = {  # batch size and repeats; repeats of single states; chains with Pinocchio; long chains; ZYX
    "full": dict(batch=100_000, batch_repeat=9, repeat=15, chains=(100, 500), long=(10_000, 100_000),
                 zyx=(100, 500)),
    "quick": dict(batch=20_000, batch_repeat=5, repeat=7, chains=(100, 500), long=(10_000, 30_000),
                  zyx=(100,)),
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


def fmt_ns(x):
    if x is None:
        return "-"
    return f"{x:.0f}" if x >= 100 else f"{x:.1f}"


def fmt_ratio(x):
    return f"{x:.2f}" if x is not None else "-"


def ratio(a, b):
    return None if a is None or b is None else a / b


# ---------------------------------------------------------------------------- 1. batch, arm7
def arm7_batch(B, threads, repeat):
    model = load("arm7")
    pm, pq, pv = pin_side(model)
    pmodel = pm.pmodel
    identity = bool(np.array_equal(pq, np.arange(model.nq)) and np.array_equal(pv, np.arange(model.nv)))
    q, qd, qdd = states(model, B, np.random.default_rng(1))
    # Pinocchio's side: rows for the loop, column-major (n, B) for the parallel API
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
    k = min(B, 8)
    loop_tau = np.array([pin.rnea(pmodel, data, qp[b], vp[b], ap[b]).copy() for b in range(k)])
    loop_acc = np.array([pin.aba(pmodel, data, qp[b], vp[b], taup[b]).copy() for b in range(k)])
    check = {
        "coordinates_identical": identity,
        "rnea_vs_pin_loop": rel_err(tau[:k, pv], loop_tau),
        "aba_vs_pin_loop": rel_err(acc[:k, pv], loop_acc),
        "rnea_vs_pin_pool_all": rel_err(tau[:, pv], tau_pool.T),
        "aba_vs_pin_pool_all": rel_err(acc[:, pv], qdd_pool.T),
        "aba_recovers_qdd": rel_err(acc, qdd),
        "pin_pool_aba_recovers_qdd": rel_err(qdd_pool.T, qdd[:, pv]),
    }

    def loop_rnea():
        for qb, vb, ab in zip(qp, vp, ap):
            pin.rnea(pmodel, data, qb, vb, ab)

    def loop_aba():
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
            runs.update(loop_rnea=calls(loop_rnea), loop_aba=calls(loop_aba))
        t = best(runs, repeat)
        if loop is None:
            loop = {"loop_rnea": t.pop("loop_rnea"), "loop_aba": t.pop("loop_aba")}
        r = {"threads": th}
        r.update({k: B / v for k, v in t.items()})
        r.update({k: B / v for k, v in loop.items()})
        rows.append(r)
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    return {"model": "arm7", "nbodies": model.nbodies, "nv": model.nv, "batch": B, "repeat": repeat,
            "rows": rows, "check": check}


def print_arm7(res):
    c = res["check"]
    print(f"1. Batched dynamics, arm7 ({res['nbodies']} bodies, nv = {res['nv']}), {res['batch']} random "
          f"states: states per second (best of {res['repeat']})")
    print("   ejce_nb: ej.rnea / ej.aba on the (B, n) batch; Pin pool: rneaInParallel / abaInParallel "
          "on a ModelPool;\n   Pin loop: pin.rnea / pin.aba in a Python loop (one thread).  "
          "ratio = other's time / ejce_nb's time")
    print(f"   {'algo':<5}{'threads':>8}{'ejce_nb':>11}{'Pin pool':>11}{'Pin loop':>11}"
          f"{'pool/ejce':>11}{'loop/ejce':>11}")
    for algo in ("rnea", "aba"):
        for r in res["rows"]:
            e, p, lo = r[f"ejce_{algo}"], r[f"pool_{algo}"], r[f"loop_{algo}"]
            print(f"   {algo:<5}{r['threads']:>8}{fmt_rate(e):>11}{fmt_rate(p):>11}{fmt_rate(lo):>11}"
                  f"{fmt_ratio(e / p):>11}{fmt_ratio(e / lo):>11}")
    print(f"   agreement (max |diff| / max(1, max |ref|)): rnea vs Pin loop {c['rnea_vs_pin_loop']:.1e}, "
          f"vs Pin pool (whole batch) {c['rnea_vs_pin_pool_all']:.1e};\n"
          f"   aba vs Pin loop {c['aba_vs_pin_loop']:.1e}, vs Pin pool {c['aba_vs_pin_pool_all']:.1e}; "
          f"aba(rnea(qdd)) - qdd: ejce_nb {c['aba_recovers_qdd']:.1e}, "
          f"Pin pool {c['pin_pool_aba_recovers_qdd']:.1e};\n   coordinates identical (depth-first, "
          f"all revolute): {c['coordinates_identical']}")


# ---------------------------------------------------------------------------- 2./4. single state
def single_state(model, repeat, with_pin, seed=0):
    """ns per call of ejce_nb's compiled sweep and public call, and of Pinocchio from Python."""
    numba.set_num_threads(1)
    q, qd, qdd = states(model, 1, np.random.default_rng(seed))
    tau = ej.rnea(model, q[0], qd[0], qdd[0])
    acc = ej.aba(model, q[0], qd[0], tau)
    runs, r, _ = ejce_runs(model, q, qd, qdd, tau, acc)
    r["aba_err_ejce"] = rel_err(acc, qdd[0])
    pm = pmodel = data = None
    if with_pin:
        fits, need = pin_data_fits(model.nv)
        r["pin_data_bytes_estimate"] = need
        if not fits:
            r["pin_skipped"] = (f"Pinocchio Data would need ~{need / 1e9:.0f} GB (nv^3 tensors), "
                                f"{mem_available() / 1e9:.0f} GB available")
        else:
            trim()
            exact_peak = reset_peak()
            r0, t0 = rss(), time.perf_counter()
            pm, pq, pv = pin_side(model)
            r["pin_build_s"] = time.perf_counter() - t0
            r["pin_build_rss_bytes"] = rss() - r0
            if exact_peak:
                r["pin_build_peak_bytes"] = peak_rss() - r0
            pmodel, data = pm.pmodel, pm.data
            qp, vp, ap, tp = q[0][pq].copy(), qd[0][pv].copy(), qdd[0][pv].copy(), tau[pv].copy()
            r["rnea_vs_pin"] = rel_err(tau[pv], pin.rnea(pmodel, data, qp, vp, ap))
            acc_pin = pin.aba(pmodel, data, qp, vp, tp).copy()
            r["aba_vs_pin"] = rel_err(acc[pv], acc_pin)
            r["aba_err_pin"] = rel_err(acc_pin, ap)
            # the conditioning's share: a dense solve with Pinocchio's mass matrix
            M = pin.crba(pmodel, data, qp).copy()
            M = np.triu(M) + np.triu(M, 1).T
            h = pin.rnea(pmodel, data, qp, vp, np.zeros(model.nv)).copy()
            r["aba_err_dense"] = rel_err(np.linalg.solve(M, tp - h), ap)
            del M
            runs["pin_rnea"] = calls(lambda: pin.rnea(pmodel, data, qp, vp, ap))
            runs["pin_aba"] = calls(lambda: pin.aba(pmodel, data, qp, vp, tp))
    r.update(best(runs, repeat))
    r.setdefault("pin_rnea", None)
    r.setdefault("pin_aba", None)
    del runs
    pm = pmodel = data = None
    trim()
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    return r


def check_cell(r, algo):
    if algo == "rnea":
        d = r.get("rnea_vs_pin")
        return "-" if d is None else f"{d:.0e}"
    cells = [r.get(k) for k in ("aba_err_ejce", "aba_err_pin", "aba_err_dense")]
    return " / ".join("-" if x is None else f"{x:.0e}" for x in cells)


CHECK_NOTE = ("   check (relative to max(1, max |reference|)): rnea: |tau_ejce - tau_Pin|; aba: error of "
              "aba(rnea(qdd)) against qdd\n   for ejce_nb / Pinocchio's aba / a dense solve with Pinocchio's "
              "crba and rnea (the conditioning's share)")


def per(r, key, unit):
    return None if r.get(key) is None else r[key] / r[unit] * 1e9


def print_chains(rows, repeat):
    print(f"\n2. One state, serial revolute chains, 1 thread: ns per body (best of {repeat} repeats of "
          f"~{TARGET_S * 1e3:.0f} ms)")
    print("   sweep: ejce_nb's compiled single-state kernel looped in compiled code; call: ej.rnea / "
          "ej.aba;\n   Pin: pin.rnea / pin.aba from Python (JointModelRY).  ratio = Pinocchio's time / "
          "ejce_nb's time")
    print(CHECK_NOTE)
    print(f"   {'N':>6} {'algo':<5}{'sweep':>8}{'call':>8}{'Pin':>8}{'Pin/sweep':>11}{'Pin/call':>10}"
          f"   {'check':<24}")
    for r in rows:
        for algo in ("rnea", "aba"):
            s, c, p = per(r, f"sweep_{algo}", "N"), per(r, f"call_{algo}", "N"), per(r, f"pin_{algo}", "N")
            print(f"   {r['N']:>6} {algo:<5}{fmt_ns(s):>8}{fmt_ns(c):>8}{fmt_ns(p):>8}"
                  f"{fmt_ratio(ratio(p, s)):>11}{fmt_ratio(ratio(p, c)):>10}   {check_cell(r, algo)}")
    for r in rows:
        if "pin_build_s" in r:
            peak = r.get("pin_build_peak_bytes")
            print(f"   Pinocchio model + Data, N = {r['N']}: built in {r['pin_build_s']:.2f} s, resident memory "
                  f"+{r['pin_build_rss_bytes'] / 1e6:.0f} MB" + ("" if peak is None else
                                                                 f" (+{peak / 1e6:.0f} MB at the peak)"))
        if "pin_skipped" in r:
            print(f"   N = {r['N']}: Pinocchio skipped: {r['pin_skipped']}")


def print_zyx(rows, rev, repeat):
    print(f"\n4. One state, chains of Z-Y-X Euler spherical joints (angle rates as velocities), 1 thread: "
          f"ns per DOF (best of {repeat} repeats of ~{TARGET_S * 1e3:.0f} ms)")
    print("   ZYX/rev: cost per DOF of the ZYX chain / that of the revolute chain of the same N (same "
          "column);\n   Pin: pin.rnea / pin.aba with JointModelSphericalZYX.  Pin/...: Pinocchio's time / "
          "ejce_nb's time")
    print(CHECK_NOTE)
    print(f"   {'N':>6}{'nv':>6} {'algo':<5}{'sweep':>8}{'call':>8}{'Pin':>8}{'Pin/sweep':>11}{'Pin/call':>10}"
          f"{'ZYX/rev sweep':>15}{'call':>7}{'Pin':>7}   {'check':<24}")
    for r in rows:
        base = rev.get(r["N"])
        for algo in ("rnea", "aba"):
            s, c, p = per(r, f"sweep_{algo}", "nv"), per(r, f"call_{algo}", "nv"), per(r, f"pin_{algo}", "nv")
            if base is not None:
                bs, bc, bp = (per(base, f"{k}_{algo}", "nv") for k in ("sweep", "call", "pin"))
            else:
                bs = bc = bp = None
            print(f"   {r['N']:>6}{r['nv']:>6} {algo:<5}{fmt_ns(s):>8}{fmt_ns(c):>8}{fmt_ns(p):>8}"
                  f"{fmt_ratio(ratio(p, s)):>11}{fmt_ratio(ratio(p, c)):>10}"
                  f"{fmt_ratio(ratio(s, bs)):>15}{fmt_ratio(ratio(c, bc)):>7}{fmt_ratio(ratio(p, bp)):>7}"
                  f"   {check_cell(r, algo)}")
    for r in rows:
        if "pin_skipped" in r:
            print(f"   N = {r['N']}: Pinocchio skipped: {r['pin_skipped']}")


# ---------------------------------------------------------------------------- 3. long chains
def long_chain_child(n, repeat):
    """Run in a fresh process: memory growth of building chain(n) and of the first calls, then the
    single-state timings.  Prints one JSON line."""
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
    note = None
    q, qd, qdd = states(model, 1, np.random.default_rng(0))
    tau = ej.rnea(model, q[0], qd[0], qdd[0])
    try:
        acc = ej.aba(model, q[0], qd[0], tau)
    except ej.SingularJointError as e:
        # ABA's pivot test (relative to the subtree's inertia scale) can reject a long chain
        msg = str(e)
        joint = msg[msg.find("joint '"):].split(":")[0]
        note = (f"ej.aba raised SingularJointError at {joint} for the random state (q in (-1, 1)); "
                "timed at q in (-pi, pi)")
        q = np.random.default_rng(0).uniform(-np.pi, np.pi, (1, model.nq))
        tau = ej.rnea(model, q[0], qd[0], qdd[0])
        acc = ej.aba(model, q[0], qd[0], tau)
    trim()
    r_calls = rss() - r0
    peak_growth = max(peak_rss() - (r0 if exact_peak else p0), 0)
    model_arrays = sum(v.nbytes for v in vars(model).values() if isinstance(v, np.ndarray))
    tables = sum(a.nbytes for a in jm.tables(model) if isinstance(a, np.ndarray))
    runs, r, works = ejce_runs(model, q, qd, qdd, tau, acc)
    work = sum(a.nbytes for w in works for a in w)
    r.update(best(runs, repeat))
    r.update(aba_err_ejce=rel_err(acc, qdd[0]), build_s=build_s, rss_model=r_model, rss_model_calls=r_calls,
             peak_growth=peak_growth, peak_exact=exact_peak, model_array_bytes=model_arrays,
             table_bytes=tables, workspace_bytes=work, note=note, package_hash=package_hash())
    print(json.dumps(r))


def ejce_runs(model, q, qd, qdd, tau, acc):
    """Runs for ``best`` of ejce_nb on one state (q, qd, qdd of shape (1, n)): the compiled sweep
    (the single-state kernel looped in compiled code, bench_dynamics.py) and the public call.
    Returns (runs, record with the check that the sweep's results equal the call's, workspaces)."""
    tabs = jm.tables(model)
    t1 = np.zeros(1)
    fext = np.zeros((1, 1, 6))
    out = np.zeros((1, model.nv))
    status = np.zeros((1, 2), dtype=np.int64)
    w_r = jm.DynWork(model, 1).arrays
    w_a = jm.DynWork(model, 1, articulated=True).arrays
    tau2 = tau[None].copy()
    _rnea_loop(tabs, q, qd, qdd, t1, fext, out, w_r, 1)
    ok = rel_err(out[0], tau) <= 1e-12
    _aba_loop(tabs, q, qd, tau2, t1, fext, out, status, w_a, 1)
    ok = ok and rel_err(out[0], acc) <= 1e-12 and status[0, 0] < 0
    runs = {"sweep_rnea": lambda k: _rnea_loop(tabs, q, qd, qdd, t1, fext, out, w_r, k),
            "call_rnea": calls(lambda: ej.rnea(model, q[0], qd[0], qdd[0])),
            "sweep_aba": lambda k: _aba_loop(tabs, q, qd, tau2, t1, fext, out, status, w_a, k),
            "call_aba": calls(lambda: ej.aba(model, q[0], qd[0], tau))}
    return runs, {"N": model.nbodies, "nv": model.nv, "sweep_matches_call": bool(ok)}, (w_r, w_a)


def long_chains(sizes, repeat):
    rows = []
    for n in sizes:
        cmd = [sys.executable, os.path.abspath(__file__), "--long-chain-child", str(n), "--repeat", str(repeat)]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"long chain N = {n} failed:\n{p.stderr[-3000:]}")
        rows.append(json.loads(p.stdout.strip().splitlines()[-1]))
    return rows


def print_long(rows, repeat):
    print(f"\n3. ejce_nb alone, long revolute chains, one state, 1 thread, each N in a fresh process "
          f"(best of {repeat} repeats of ~{TARGET_S * 1e3:.0f} ms)")
    print(f"   {'N':>7}  ns per body: {'rnea sweep':>10}{'rnea call':>11}{'aba sweep':>11}{'aba call':>10}")
    for r in rows:
        cols = [fmt_ns(per(r, k, "N")) for k in ("sweep_rnea", "call_rnea", "sweep_aba", "call_aba")]
        print(f"   {r['N']:>7}  {'':>12}{cols[0]:>10}{cols[1]:>11}{cols[2]:>11}{cols[3]:>10}")
    print("   memory, MB (bytes per body): model arrays; kernel tables; rnea + aba workspaces; resident "
          "growth after\n   building the model, after the first rnea + aba calls, and at the peak")
    print(f"   {'N':>7}{'model arr.':>16}{'tables':>16}{'workspaces':>16}{'RSS model':>16}{'RSS +calls':>16}"
          f"{'RSS peak':>16}")

    def cell(b, n):
        return f"{b / 1e6:.1f} ({b / n:.0f})"

    for r in rows:
        n = r["N"]
        print(f"   {n:>7}{cell(r['model_array_bytes'], n):>16}{cell(r['table_bytes'], n):>16}"
              f"{cell(r['workspace_bytes'], n):>16}{cell(r['rss_model'], n):>16}"
              f"{cell(r['rss_model_calls'], n):>16}{cell(r['peak_growth'], n):>16}")
    for r in rows:
        print(f"   N = {r['N']}: chain({r['N']}) built in {r['build_s']:.1f} s; aba(rnea(qdd)) - qdd: "
              f"{r['aba_err_ejce']:.0e}")
        if r.get("note"):
            print(f"   N = {r['N']}: {r['note']}")


# ---------------------------------------------------------------------------- main
def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller batch and chains, fewer repeats")
    ap.add_argument("--threads", default="1,2", help="thread counts for the batches (default 1,2)")
    ap.add_argument("--json", metavar="FILE", help="also write the figures as JSON to FILE")
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
    dropped = [t for t in threads if not 1 <= t <= maxth]
    threads = [t for t in threads if 1 <= t <= maxth] or [1]
    t_start = time.perf_counter()
    load1 = os.getloadavg()[0]
    src = package_hash()
    print(f"ejce_nb {ej.__version__} | Pinocchio {pin.__version__} | numba {numba.__version__} | "
          f"numpy {np.__version__} | Python {platform.python_version()} | {os.cpu_count()} CPUs, "
          f"numba threads <= {maxth} | load average {load1:.2f}")
    if dropped:
        print(f"(thread counts {dropped} skipped: numba allows at most {maxth})")
    print()

    out = {"settings": dict(cfg, threads=threads, quick=args.quick),
           "environment": {"ejce_nb": ej.__version__, "pinocchio": pin.__version__, "numba": numba.__version__,
                           "numpy": np.__version__, "python": platform.python_version(),
                           "cpus": os.cpu_count(), "numba_max_threads": maxth, "loadavg_start": load1,
                           "machine": platform.machine()}}

    sections = {}
    t0 = time.perf_counter()
    res = arm7_batch(cfg["batch"], threads, cfg["batch_repeat"])
    print_arm7(res)
    out["arm7_batch"] = res
    sections["1"], t0 = time.perf_counter() - t0, time.perf_counter()

    rev = [single_state(chain(n), repeat, True) for n in cfg["chains"]]
    print_chains(rev, repeat)
    out["revolute_chains"] = rev
    sections["2"], t0 = time.perf_counter() - t0, time.perf_counter()

    longs = long_chains(cfg["long"], repeat)
    print_long(longs, repeat)
    out["long_chains"] = longs
    sections["3"], t0 = time.perf_counter() - t0, time.perf_counter()

    zyx = [single_state(chain(n, joint="ZYX"), repeat, True) for n in cfg["zyx"]]
    print_zyx(zyx, {r["N"]: r for r in rev}, repeat)
    out["zyx_chains"] = zyx
    sections["4"] = time.perf_counter() - t0

    hashes = {src, package_hash()} | {r["package_hash"] for r in longs}
    out["environment"]["package_hashes"] = sorted(hashes)
    if len(hashes) > 1:
        print("\nWARNING: ejce_nb's sources changed during the run; its figures mix package versions")
    bad = [f"{kind} N = {r['N']}" for kind, rows in (("revolute", rev), ("long", longs), ("ZYX", zyx))
           for r in rows if not r["sweep_matches_call"]]
    if bad:
        print(f"\nWARNING: the compiled sweep's results differ from the public call's for {', '.join(bad)}")
    total = time.perf_counter() - t_start
    out["environment"]["loadavg_end"] = os.getloadavg()[0]
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
