"""Timings of the dynamics: single-thread ns/body of rnea and aba on serial chains, and batched
states/s on the 7-joint arm.

    python benchmarks/bench_dynamics.py [--quick]

"kernel" times run the compiled single-state algorithm repeatedly from compiled code on one
prepared workspace, its record invalidated before every run (what the algorithm costs per body,
no Python and no reuse of earlier stages); "call" times go through the public function with two
states taking turns (so that no call can reuse the previous one's stages).  Each figure is the
best of several repeats: on a shared machine the minimum is the least disturbed.
"""
import argparse
import time

import numba
import numpy as np

import ejce_nb as ej
from ejce_nb.calls import workspaces
from ejce_nb.model import layout
from ejce_nb._jit import jit
from ejce_nb.algorithms.aba import aba_state
from ejce_nb.models import chain, load, random_states as states
from ejce_nb.calls.kernels import NO_FORCE
from ejce_nb.algorithms.rnea import rnea_state


@jit
def _rnea_loop(mb, w, q, v, a, tau, reps):
    m, r, s = layout.views(mb, w)
    for _ in range(reps):
        r.hdr[layout.REC_POS] = 0.0
        rnea_state(m, r, s, q, v, a, 0.0, NO_FORCE, 0, None, tau)


@jit
def _aba_loop(mb, w, q, v, tau, qdd, reps):
    m, r, s = layout.views(mb, w)
    for _ in range(reps):
        r.hdr[layout.REC_POS] = 0.0
        aba_state(m, r, s, q, v, tau, 0.0, NO_FORCE, 0, None, qdd)


def kernel_runs(model, q, qd, qdd, tau):
    """``run(k)`` functions (k repetitions) of the compiled rnea and aba kernels on one state."""
    w = workspaces.one_workspace(model)
    out = np.zeros(model.nv)
    _rnea_loop(model._mb, w, q, qd, qdd, out, 1)
    _aba_loop(model._mb, w, q, qd, tau, out, 1)
    return {"kernel_rnea": lambda k: _rnea_loop(model._mb, w, q, qd, qdd, out, k),
            "kernel_aba": lambda k: _aba_loop(model._mb, w, q, qd, tau, out, k)}


def alternating(f, a, b):
    """``run(k)``: k calls of f, on the argument tuples a and b in turn."""
    def run(k):
        for j in range(k):
            f(*(a if j & 1 else b))
    return run


def best(f, repeat, number):
    t = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        f(number)
        t = min(t, (time.perf_counter() - t0) / number)
    return t


def chain_timings(sizes, repeat):
    rng = np.random.default_rng(0)
    numba.set_num_threads(1)
    print("single state, 1 thread, revolute chain (ns per body)")
    print(f"{'N':>7} {'rnea kernel':>12} {'rnea call':>10} {'aba kernel':>11} {'aba call':>9}")
    for n in sizes:
        model = chain(n)
        q, qd, qdd = states(model, 2, rng)
        tau = ej.rnea(model, q, qd, qdd)
        k = kernel_runs(model, q[0], qd[0], qdd[0], tau[0])
        reps = max(1, 200000 // n)
        k_r = best(k["kernel_rnea"], repeat, reps)
        k_a = best(k["kernel_aba"], repeat, reps)
        number = max(2, 20000 // n)
        c_r = best(alternating(lambda *s: ej.rnea(model, *s), (q[0], qd[0], qdd[0]), (q[1], qd[1], qdd[1])),
                   repeat, number)
        c_a = best(alternating(lambda *s: ej.aba(model, *s), (q[0], qd[0], tau[0]), (q[1], qd[1], tau[1])),
                   repeat, number)
        print(f"{n:>7} {k_r / n * 1e9:>12.0f} {c_r / n * 1e9:>10.0f} {k_a / n * 1e9:>11.0f} {c_a / n * 1e9:>9.0f}")
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)


def batch_timings(B, repeat):
    rng = np.random.default_rng(1)
    model = load("arm7")
    q, qd, qdd = states(model, B, rng)
    tau = ej.rnea(model, q, qd, qdd)
    ej.aba(model, q, qd, tau)
    print(f"\nbatch of {B} states, arm7 ({model.nbodies} bodies, nv = {model.nv}) (states per second)")
    print(f"{'threads':>7} {'rnea':>12} {'aba':>12}")
    for th in sorted({1, numba.config.NUMBA_NUM_THREADS}):
        numba.set_num_threads(th)
        t_r = best(lambda k: [ej.rnea(model, q, qd, qdd) for _ in range(k)], repeat, 1)
        t_a = best(lambda k: [ej.aba(model, q, qd, tau) for _ in range(k)], repeat, 1)
        print(f"{th:>7} {B / t_r:>12.3g} {B / t_a:>12.3g}")
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats, smaller batch")
    args = ap.parse_args()
    repeat = 3 if args.quick else 9
    chain_timings((100, 500, 10000), repeat)
    batch_timings(20_000 if args.quick else 100_000, repeat)


if __name__ == "__main__":
    main()
