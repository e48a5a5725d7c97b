"""What a Dask cluster's workers spend compiling before a sweep: workers that compile each for
itself against workers that load the kernels the client compiled once and sent them.

    python benchmarks/cluster_start.py [--n 20000]

A 2-worker ``LocalCluster`` (one thread each) whose workers start with empty caches of their own
(a fresh ``NUMBA_CACHE_DIR`` set by a preload before the package is imported), a sweep of rnea,
aba and mass_matrix on arm7:

* "each worker compiles": the client runs with its cache off (``EJCE_NB_CACHE=0``), so it has no
  cache files to send, and every worker compiles the kernels for itself (the behaviour of a
  cluster without a shared cache);
* "compiled once, sent": the client compiles into its own empty cache and sends the files; the
  workers load them.

Printed: the workers' seconds of compiling (Numba's compile events in each worker), the sweep's
warm-up seconds (the client's compile included) and the whole sweep.  Each case runs in a fresh
client process.
"""
import os
import subprocess
import sys
import tempfile

CASE = r'''
import os, sys, tempfile, time, json
import numpy as np
from distributed import Client, LocalCluster
import ejce_nb as ej

PRELOAD = """
import os, tempfile
os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="ejce_nb-worker-")
os.environ["EJCE_NB_QUIET"] = "1"
"""

def compiled():
    from ejce_nb._jit import compile_seconds
    return compile_seconds()

if __name__ == "__main__":
    n = int(sys.argv[1])
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, preload=[PRELOAD],
                      dashboard_address=None) as cluster, Client(cluster) as client:
        m = ej.models.load("arm7")
        out = tempfile.mkdtemp()
        t0 = time.perf_counter()
        res = ej.sweep(m, n, ["rnea", "aba", "mass_matrix"], os.path.join(out, "s.zarr"), chunk_size=n // 4,
                       scheduler=client, progress=False)
        total = time.perf_counter() - t0
        workers = sorted(client.run(compiled).values())
        print(json.dumps({"workers": workers, "warm": res.run_info["compile_seconds"], "total": total}))
'''


def run(n, client_cache_off):
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, EJCE_NB_QUIET="1")
        if client_cache_off:
            env["EJCE_NB_CACHE"] = "0"
        out = subprocess.run([sys.executable, "-c", CASE, str(n)], env=env, check=True, capture_output=True,
                             text=True).stdout
    import json
    return json.loads(out.strip().splitlines()[-1])


def main():
    n = int(sys.argv[sys.argv.index("--n") + 1]) if "--n" in sys.argv else 20_000
    print(f"load average at the start: {', '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    for name, off in (("each worker compiles", True), ("compiled once, sent", False)):
        r = run(n, off)
        print(f"{name:22s} workers' compiling {' + '.join(f'{w:.1f}' for w in r['workers'])} s; "
              f"warm-up {r['warm']:.1f} s; sweep of {n} states {r['total']:.1f} s", flush=True)


if __name__ == "__main__":
    main()
