"""ejce_nb's inverse dynamics beside OpenSim's, on an OpenSim model, measured in the same run on
the same states.

    python benchmarks/compare_opensim.py [--model PATH.osim] [--quick] [--batch N] [--json FILE]

The model (default: ``gait2392_thelen2003muscle.osim`` of ``../shared/models/opensim``, 23
coordinates) is opened by OpenSim with its forces removed and by ``ej.load_opensim``.
1. OpenSim: ``InverseDynamicsSolver.solve(state, udot)`` called from Python in a loop over the
   states: "solve" times the call alone (the state's q and u already set and realised to
   velocity), "state + solve" adds ``state.setQ``, ``state.setU`` and ``realizeVelocity``, what
   a user's loop over recorded states pays.
2. ejce_nb: ``ej.rnea(model, q, qd, qdd)`` one state per call (two states alternating, so that
   no call reuses the previous one's work), and one call on a batch of ``--batch`` states
   (default 100,000; 10,000 with ``--quick``) over every CPU thread.
3. Where ejce_nb's time goes: the same calls on the generic joint path (every joint's pose
   evaluated on jets, state by state; the reference the fast paths are tested against) beside
   the default paths (products of screw motions, the knee's spline amounts in plain numbers, a
   batch four states at a time), and the public call beside its kernel alone.
Both sides are checked to agree on the states (relative 1e-9).  Times are the best of several
repeats.  Numba compiles the kernels on first use (minutes with a cold cache); the figures are
taken after warm-up calls.
"""
import argparse
import json
import os
import sys
import time
import warnings

import numba
import numpy as np

import ejce_nb as ej

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(_HERE), "tests"))
DEFAULT = os.path.join(_HERE, "..", "..", "shared", "models", "opensim", "gait2392_thelen2003muscle.osim")


def best(fn, repeat):
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return min(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=DEFAULT)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--batch", type=int, default=None)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    if not os.path.exists(args.model):
        sys.exit(f"{args.model} not found (the shared OpenSim models are not here; give --model)")
    from osim_oracle import Oracle, _import
    osim = _import()
    n_os = 300 if args.quick else 3000
    batch = args.batch or (10_000 if args.quick else 100_000)
    repeat = 3 if args.quick else 7

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = ej.load_opensim(args.model)
    o = Oracle(args.model, model.expanded().coordinate_names)
    rng = np.random.default_rng(0)
    lo = np.where(np.isfinite(model.q_lower), model.q_lower, -1.0)
    hi = np.where(np.isfinite(model.q_upper), model.q_upper, 1.0)
    Q = rng.uniform(lo, hi, (batch, model.nq))
    V = rng.normal(size=(batch, model.nv))
    A = rng.normal(size=(batch, model.nv))

    # agreement on the states OpenSim is timed on
    tau_b = ej.rnea(model, Q, V, A)
    for k in range(5):
        G = model.coupler_jacobian(Q[k])
        want = G.T @ o.inverse_dynamics(model.expand(Q[k]), model.expand_v(V[k], Q[k]), model.expand_a(A[k], Q[k], V[k]))
        assert np.abs(tau_b[k] - want).max() <= 1e-9 * max(1.0, np.abs(want).max()), k

    # OpenSim: the solver alone, and with the state set from arrays
    s, m, solver = o.s, o.m, o.id
    qv = [osim.Vector(o.nq, 0.0) for _ in range(n_os)]
    uv = [osim.Vector(o.nu, 0.0) for _ in range(n_os)]
    av = [osim.Vector(o.nu, 0.0) for _ in range(n_os)]
    for b in range(n_os):
        for k, x in zip(o.qi, model.expand(Q[b])):
            qv[b].set(k, float(x))
        for k, x in zip(o.ui, model.expand_v(V[b], Q[b])):
            uv[b].set(k, float(x))
        for k, x in zip(o.ui, model.expand_a(A[b], Q[b], V[b])):
            av[b].set(k, float(x))

    def os_full():
        for b in range(n_os):
            s.setQ(qv[b])
            s.setU(uv[b])
            m.realizeVelocity(s)
            solver.solve(s, av[b])

    s.setQ(qv[0])
    s.setU(uv[0])
    m.realizeVelocity(s)
    udot = av[0]

    def os_solve():
        for b in range(n_os):
            solver.solve(s, udot)

    os_solve()
    t_solve = best(os_solve, repeat) / n_os
    t_full = best(os_full, repeat) / n_os

    # ejce_nb: one state per call, alternating two states (the argument tuples made beforehand,
    # as OpenSim's loop hands its solver ready objects); then the batch
    q2, v2, a2 = [np.ascontiguousarray(x[:2]) for x in (Q, V, A)]
    n_one = 20_000 if not args.quick else 5_000
    two = [(q2[k], v2[k], a2[k]) for k in (0, 1)]
    args_one = two * (n_one // 2)
    args_quarter = args_one[:n_one // 4]

    def ej_one():
        for x, y, z in args_one:
            ej.rnea(model, x, y, z)

    ej_one()
    t_one = best(ej_one, repeat) / n_one
    ej.rnea(model, Q, V, A)
    t_batch = best(lambda: ej.rnea(model, Q, V, A), repeat)

    # the generic (jets) path on the model's twin, and one state through ej.evaluate's input layer
    gen = model.with_generic_joints()
    ej.rnea(gen, q2[0], v2[0], a2[0])

    def ej_one_generic():
        for x, y, z in args_quarter:
            ej.rnea(gen, x, y, z)

    def ej_one_layer():
        for x, y, z in args_quarter:
            ej.evaluate(model, x, y, z, quantities=("rnea",))

    ej_one_layer()
    t_one_generic = best(ej_one_generic, repeat) / (n_one // 4)
    t_one_layer = best(ej_one_layer, repeat) / (n_one // 4)
    nb = max(batch // 10, 1000)
    ej.rnea(gen, Q[:nb], V[:nb], A[:nb])
    t_batch_generic = best(lambda: ej.rnea(gen, Q[:nb], V[:nb], A[:nb]), repeat) * batch / nb

    rate_os = 1.0 / t_full
    rate_batch = batch / t_batch
    res = {"model": os.path.basename(args.model), "nq": model.nq, "nv": model.nv,
           "opensim_version": osim.__version__, "threads": numba.get_num_threads(),
           "opensim_solve_us": t_solve * 1e6, "opensim_state_and_solve_us": t_full * 1e6,
           "ej_rnea_single_us": t_one * 1e6, "ej_rnea_batch": batch, "ej_rnea_batch_s": t_batch,
           "ej_batch_states_per_s": rate_batch, "opensim_states_per_s": rate_os,
           "batch_over_opensim_loop": rate_batch / rate_os, "single_over_solve": t_one / t_solve,
           "ej_rnea_single_generic_us": t_one_generic * 1e6,
           "ej_rnea_single_input_layer_us": t_one_layer * 1e6,
           "ej_rnea_batch_generic_s": t_batch_generic,
           "joint_paths": {name: int(n) for name, n in zip(("fixed", "screw", "quaternion", "jets", "user"),
                                                          np.bincount(model.jnt_path[1:], minlength=5))}}
    print(f"{res['model']}: nq {model.nq}, OpenSim {osim.__version__}, {res['threads']} threads")
    print(f"  OpenSim InverseDynamicsSolver.solve        {t_solve * 1e6:10.2f} us/call")
    print(f"  OpenSim setQ + setU + realize + solve      {t_full * 1e6:10.2f} us/state "
          f"({rate_os:,.0f} states/s)")
    print(f"  ej.rnea, one state per call                {t_one * 1e6:10.2f} us/call "
          f"({t_one / t_solve:.3f} x OpenSim's solve alone)")
    print(f"  ej.rnea, batch of {batch:,}               {t_batch * 1e3:10.1f} ms "
          f"({rate_batch:,.0f} states/s, {rate_batch / rate_os:.0f} x OpenSim's loop)")
    print(f"  where the time goes: joints by path {res['joint_paths']}")
    print(f"    one state through ej.evaluate            {t_one_layer * 1e6:10.2f} us/call, generic (jets) "
          f"joint path {t_one_generic * 1e6:.2f} us/call")
    print(f"    batch, generic (jets) path               {t_batch_generic * 1e3:10.1f} ms for {batch:,} "
          f"({batch / t_batch_generic:,.0f} states/s)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)
    return res


if __name__ == "__main__":
    main()
