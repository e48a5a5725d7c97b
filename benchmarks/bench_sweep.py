"""Throughput of ej.sweep against the raw batch calls on the same arrays.

    python benchmarks/bench_sweep.py              # 10^6 states of rnea, aba on arm7, local and on a 2-worker LocalCluster
    python benchmarks/bench_sweep.py --quick      # 10^5 states

The raw figure is the batch API alone (``ej.rnea`` and ``ej.aba`` on the stored inputs, chunk by
chunk as the sweep runs them); the sweep figure includes drawing the inputs, checking, writing
every input and output to the store and the bookkeeping.  Each is the best of ``--repeats`` runs,
raw and sweep alternating (other work on the machine slows whichever it meets).  The cluster's
workers run one Numba thread each, so that the cluster and the local process use the same cores.
"""
import argparse
import os
import shutil
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import ejce_nb as ej  # noqa: E402


def raw_rate(model, res, quantities, chunk_size):
    """States/s of the batch calls alone on the sweep's stored inputs, chunk by chunk."""
    x = {k: np.asarray(res[k]) for k in res.inputs}
    calls = {"rnea": lambda s: ej.rnea(model, x["q"][s], x["qd"][s], x["qdd"][s]),
             "aba": lambda s: ej.aba(model, x["q"][s], x["qd"][s], x["tau"][s]),
             "mass_matrix": lambda s: ej.mass_matrix(model, x["q"][s]),
             "nonlinear_effects": lambda s: ej.nonlinear_effects(model, x["q"][s], x["qd"][s]),
             "kinetic_energy": lambda s: ej.kinetic_energy(model, x["q"][s], x["qd"][s])}
    n = len(x["q"])
    t0 = time.perf_counter()
    for a in range(0, n, chunk_size):
        s = slice(a, a + chunk_size)
        for q in quantities:
            calls[q](s)
    return n / (time.perf_counter() - t0)


def sweep_rate(model, n, quantities, out, chunk_size, scheduler=None):
    if os.path.exists(out):
        shutil.rmtree(out)
    t0 = time.perf_counter()
    res = ej.sweep(model, n, quantities, out, chunk_size=chunk_size, scheduler=scheduler, progress=False)
    return res, n / (time.perf_counter() - t0)


def compare(label, model, n, quantities, root, chunk_size, repeats, scheduler=None):
    best_raw = best_sweep = 0.0
    for r in range(repeats):
        res, rate = sweep_rate(model, n, quantities, os.path.join(root, f"{label}{r}"), chunk_size, scheduler)
        best_sweep = max(best_sweep, rate)
        best_raw = max(best_raw, raw_rate(model, res, quantities, chunk_size))
        shutil.rmtree(res.path)
    cost = 100.0 * (best_raw / best_sweep - 1.0)
    print(f"{label:<28s} {best_raw:>14,.0f} {best_sweep:>14,.0f} {cost:>9.1f} %", flush=True)
    return best_raw, best_sweep


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
              f"{numba.get_num_threads()} Numba threads, best of {args.repeats}")
        print(f"{'':<28s} {'raw states/s':>14s} {'sweep states/s':>14s} {'machinery':>11s}")
        # compile (or load) every kernel, and let the file system warm up
        sweep_rate(model, 2 * args.chunk_size, quantities, os.path.join(root, "warm"), args.chunk_size)
        compare("local (threads)", model, n, quantities, root, args.chunk_size, args.repeats)
        if args.workers:
            from dask.distributed import Client, LocalCluster
            env = {"PYTHONPATH": os.path.dirname(os.path.dirname(os.path.abspath(ej.__file__))),
                   "NUMBA_NUM_THREADS": "1"}
            if os.environ.get("NUMBA_CACHE_DIR"):
                env["NUMBA_CACHE_DIR"] = os.environ["NUMBA_CACHE_DIR"]
            with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                              dashboard_address=None, env=env) as cluster, Client(cluster) as client:
                sweep_rate(model, 2 * args.chunk_size, quantities, os.path.join(root, "warm_dask"),
                           args.chunk_size, client)
                compare(f"LocalCluster, {args.workers} workers", model, n, quantities, root, args.chunk_size,
                        args.repeats, client)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
