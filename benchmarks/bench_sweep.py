"""Throughput of ej.sweep against the raw batch calls on the same arrays.

    python benchmarks/bench_sweep.py            # 10^6 states of rnea, aba on arm7: local, 2-worker LocalCluster
    python benchmarks/bench_sweep.py --quick    # 10^5 states

The raw figure is the batch API alone (``ej.rnea`` and ``ej.aba`` on the sweep's inputs, chunk by
chunk as the sweep runs them); the kernels figure is the sweep's own evaluation of those
quantities on the same arrays (rnea and aba of one state share their forward sweep there:
``ej.evaluate``), so that "sweep vs kernels" is what the drawing, the writing and the
bookkeeping cost, and "sweep vs raw" what a sweep costs beside writing the loop of batch calls by
hand.  The sweep figure includes drawing the inputs, writing the outputs, their status and
(``store_inputs=True``, the default) the inputs to the zarr store (flushed to disk) and the
bookkeeping; each setting runs with the inputs stored and without.  Raw and sweep runs alternate
and the best of ``--repeats`` is reported (other work on the machine slows whichever it meets),
with the first sweep beside it, and the CPU seconds of each run (this process and the cluster's
workers), which other load disturbs less than the clock.  The cluster's workers run one Numba
thread each, so that the cluster and the local process use the same cores.  The sweep's own
figures leave out its compile (``run_info["compile_seconds"]``, printed at the end: the warm-up
sweeps compile every kernel first, so it is the cache load and the first-touch of a few states).
"""
import argparse
import os
import shutil
import sys
import tempfile
import time

import numpy as np

# the package of this checkout, whatever is installed
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import ejce_nb as ej  # noqa: E402


def _cpu(client):
    """CPU seconds used so far by this process and, with a client, by its workers."""
    own = time.process_time()
    return own + (sum(client.run(time.process_time).values()) if client is not None else 0.0)


def raw_run(model, res, quantities, chunk_size, shared=False):
    """(seconds, CPU seconds) of the batch calls alone on the sweep's stored inputs; ``shared``:
    rnea and aba by the one call that serves both from one forward sweep, as the sweep computes
    them (its kernels without its drawing, writing and bookkeeping)."""
    x = {k: np.asarray(res[k]) for k in res.inputs}
    calls = {"rnea": lambda s: ej.rnea(model, x["q"][s], x["qd"][s], x["qdd"][s]),
             "aba": lambda s: ej.aba(model, x["q"][s], x["qd"][s], x["tau"][s]),
             "mass_matrix": lambda s: ej.mass_matrix(model, x["q"][s]),
             "nonlinear_effects": lambda s: ej.nonlinear_effects(model, x["q"][s], x["qd"][s]),
             "kinetic_energy": lambda s: ej.kinetic_energy(model, x["q"][s], x["qd"][s])}
    if shared:
        calls["pair"] = lambda s: ej.evaluate(model, x["q"][s], x["qd"][s], x["qdd"][s], x["tau"][s],
                                              quantities=["rnea", "aba"], errors="flag")
        quantities = ["pair"] + [q for q in quantities if q not in ("rnea", "aba")]
    unknown = [q for q in quantities if q not in calls]
    if unknown:
        raise SystemExit(f"bench_sweep: no raw call for {unknown}")
    n = len(x["q"])
    t0, c0 = time.perf_counter(), time.process_time()
    for a in range(0, n, chunk_size):
        s = slice(a, a + chunk_size)
        for q in quantities:
            calls[q](s)
    return time.perf_counter() - t0, time.process_time() - c0


COMPILE = []


def sweep_run(model, n, quantities, out, chunk_size, client=None, store_inputs=True):
    """(result, seconds, CPU seconds) of a sweep into a fresh directory."""
    if os.path.exists(out):
        shutil.rmtree(out)
    c0 = _cpu(client)
    t0 = time.perf_counter()
    res = ej.sweep(model, n, quantities, out, chunk_size=chunk_size, scheduler=client, progress=False,
                   store_inputs=store_inputs)
    COMPILE.append(res.run_info["compile_seconds"])
    return res, time.perf_counter() - t0 - res.run_info["compile_seconds"], _cpu(client) - c0


def compare(label, model, n, quantities, root, chunk_size, repeats, client=None, store_inputs=True):
    shared = "rnea" in quantities and "aba" in quantities
    sweeps, raws, kernels = [], [], []
    for r in range(repeats):
        res, sec, cpu = sweep_run(model, n, quantities, os.path.join(root, f"run{r}"), chunk_size, client,
                                  store_inputs)
        sweeps.append((sec, cpu))
        raws.append(raw_run(model, res, quantities, chunk_size))
        kernels.append(raw_run(model, res, quantities, chunk_size, shared) if shared else raws[-1])
        shutil.rmtree(res.path)
    raw, ker, sw = (min(t for t, _ in runs) for runs in (raws, kernels, sweeps))
    raw_cpu, ker_cpu, sw_cpu = (min(c for _, c in runs) for runs in (raws, kernels, sweeps))
    print(f"{label:<34s} {n / raw:>10,.0f} {n / ker:>10,.0f} {n / sw:>10,.0f} {100 * (sw / raw - 1):>7.1f} % "
          f"{100 * (sw / ker - 1):>7.1f} % {n / sweeps[0][0]:>10,.0f}   {raw_cpu:>5.2f} {ker_cpu:>5.2f} "
          f"{sw_cpu:>5.2f} s {100 * (sw_cpu / ker_cpu - 1):>6.1f} %", flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="arm7")
    p.add_argument("--quantities", default="rnea,aba")
    p.add_argument("--n", type=float, default=1e6)
    p.add_argument("--chunk-size", type=int, default=100_000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--workers", type=int, default=2, help="LocalCluster worker processes (0: no cluster)")
    p.add_argument("--dir", default=None, help="where the stores go (default: a temporary directory)")
    p.add_argument("--quick", action="store_true", help="10^5 states, 2 repeats")
    args = p.parse_args(argv)
    if args.quick:
        args.n, args.repeats, args.chunk_size = 1e5, 2, 20_000
    n = int(args.n)
    quantities = [q.strip() for q in args.quantities.split(",")]
    model = ej.models.load(args.model)
    root = tempfile.mkdtemp(prefix="bench_sweep_", dir=args.dir)
    try:
        import numba
        print(f"{n:,} states of {args.model} ({', '.join(quantities)}), chunks of {args.chunk_size:,}, "
              f"{numba.get_num_threads()} Numba threads here, best of {args.repeats}")
        print(f"{'':<34s} {'raw':>10s} {'kernels':>10s} {'sweep':>10s} {'sweep vs':>9s} {'sweep vs':>9s} "
              f"{'first':>10s}   {'CPU: raw':>8s} {'kern':>5s} {'sweep':>7s} {'machinery':>8s}")
        print(f"{'':<34s} {'states/s':>10s} {'states/s':>10s} {'states/s':>10s} {'raw':>9s} {'kernels':>9s} "
              f"{'sweep':>10s}   {'':>8s} {'':>5s} {'':>7s} {'CPU':>8s}")
        # compile (or load) every kernel
        # (chunks of other shapes: the measured sweeps do not inherit the warm-up's buffers)
        warm = args.chunk_size // 2 + 1
        sweep_run(model, 2 * warm, quantities, os.path.join(root, "warm"), warm)
        for stored in (True, False):
            compare(f"local (threads), inputs {'stored' if stored else 'not stored'}", model, n, quantities, root,
                    args.chunk_size, args.repeats, store_inputs=stored)
        if args.workers:
            import dask
            from dask.distributed import Client, LocalCluster
            # set before a worker's interpreter starts: it imports numba (with this script, as its
            # main module) before the nanny's ``env`` would be applied
            env = {"PYTHONPATH": os.path.dirname(os.path.dirname(os.path.abspath(ej.__file__))),
                   "NUMBA_NUM_THREADS": "1"}
            if os.environ.get("NUMBA_CACHE_DIR"):
                env["NUMBA_CACHE_DIR"] = os.environ["NUMBA_CACHE_DIR"]
            dask.config.set({f"distributed.nanny.pre-spawn-environ.{k}": v for k, v in env.items()})
            with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                              dashboard_address=None) as cluster, Client(cluster) as client:
                sweep_run(model, 2 * warm, quantities, os.path.join(root, "warm_dask"), warm, client)
                for stored in (True, False):
                    compare(f"LocalCluster, {args.workers} workers, {'stored' if stored else 'not stored'}", model,
                            n, quantities, root, args.chunk_size, args.repeats, client, store_inputs=stored)
        print(f"compile_seconds of the sweeps (left out of their figures): first {COMPILE[0]:.2f} s, later "
              f"{min(COMPILE[1:] or COMPILE):.3f}-{max(COMPILE[1:] or COMPILE):.3f} s")
        print(f"load average at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
