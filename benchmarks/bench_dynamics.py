"""Timings of the dynamics: single-thread ns/body of rnea and aba on serial revolute chains, and
batched states/s on the 7-joint arm.

    python benchmarks/bench_dynamics.py [--quick]

"kernel" times call the compiled single-state sweep directly on prepared arrays (what the
algorithm costs); "call" times go through the public function (input checks, allocation of the
outputs and workspace included).  Each figure is the best of several repeats.
"""
import argparse
import time

import numba
import numpy as np

import ejce_nb as ej
from ejce_nb import joint_motion as jm
from ejce_nb.aba import aba_serial
from ejce_nb.models import chain, load
from ejce_nb.rnea import rnea_serial


def best(f, repeat, number):
    t = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            f()
        t = min(t, (time.perf_counter() - t0) / number)
    return t


def states(model, n, rng):
    q = np.tile(model.neutral(), (n, 1))
    free = np.ones(model.nq, dtype=bool)
    for _, sl in model.quaternion_blocks():
        free[sl] = False
    q[:, free] += rng.uniform(-1, 1, (n, int(free.sum())))
    return q, rng.normal(size=(n, model.nv)), rng.normal(size=(n, model.nv))


def chain_timings(sizes, repeat):
    rng = np.random.default_rng(0)
    numba.set_num_threads(1)
    print("single state, 1 thread, revolute chain (ns per body)")
    print(f"{'N':>7} {'rnea kernel':>12} {'rnea call':>10} {'aba kernel':>11} {'aba call':>9}")
    for n in sizes:
        model = chain(n)
        q, qd, qdd = states(model, 1, rng)
        tau = ej.rnea(model, q[0], qd[0], qdd[0])
        tabs = jm.tables(model)
        t1 = np.zeros(1)
        fext = np.zeros((1, 1, 6))
        out = np.zeros((1, model.nv))
        status = np.zeros((1, 2), dtype=np.int64)
        w_r = jm.DynWork(model, 1).arrays
        w_a = jm.DynWork(model, 1, articulated=True).arrays
        tau2 = tau[None].copy()
        number = max(1, 20000 // n)
        k_r = best(lambda: rnea_serial(tabs, q, qd, qdd, t1, fext, False, False, out, w_r), repeat, number)
        c_r = best(lambda: ej.rnea(model, q[0], qd[0], qdd[0]), repeat, number)
        k_a = best(lambda: aba_serial(tabs, q, qd, tau2, t1, fext, False, False, out, status, w_a), repeat, number)
        c_a = best(lambda: ej.aba(model, q[0], qd[0], tau), repeat, number)
        print(f"{n:>7} {k_r / n * 1e9:>12.0f} {c_r / n * 1e9:>10.0f} {k_a / n * 1e9:>11.0f} {c_a / n * 1e9:>9.0f}")


def batch_timings(B, repeat):
    rng = np.random.default_rng(1)
    model = load("arm7")
    q, qd, qdd = states(model, B, rng)
    tau = ej.rnea(model, q, qd, qdd)
    ej.aba(model, q[:4], qd[:4], tau[:4])
    print(f"\nbatch of {B} states, arm7 ({model.nbodies} bodies, nv = {model.nv}) (states per second)")
    print(f"{'threads':>7} {'rnea':>12} {'aba':>12}")
    for th in sorted({1, numba.config.NUMBA_NUM_THREADS}):
        numba.set_num_threads(th)
        t_r = best(lambda: ej.rnea(model, q, qd, qdd), repeat, 1)
        t_a = best(lambda: ej.aba(model, q, qd, tau), repeat, 1)
        print(f"{th:>7} {B / t_r:>12.3g} {B / t_a:>12.3g}")
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats, smaller batch")
    args = ap.parse_args()
    repeat = 3 if args.quick else 7
    chain_timings((100, 500, 10000), repeat)
    batch_timings(20_000 if args.quick else 100_000, repeat)


if __name__ == "__main__":
    main()
