"""Timings of the dynamics: single-thread ns/body of rnea and aba on serial revolute chains, and
batched states/s on the 7-joint arm.

    python benchmarks/bench_dynamics.py [--quick]

"sweep" times run the compiled single-state sweep repeatedly from compiled code on prepared
arrays (what the algorithm costs per body, no Python in the loop); "call" times go through the
public function (input checks, outputs and the Python-to-Numba dispatch included).  Each figure is
the best of several repeats: on a shared machine the minimum is the least disturbed.
"""
import argparse
import time

import numba
import numpy as np

import ejce_nb as ej
from ejce_nb import joint_motion as jm
from ejce_nb._jit import jit
from ejce_nb.aba import aba_range
from ejce_nb.models import chain, load, random_states as states
from ejce_nb.rnea import rnea_range


@jit
def _rnea_loop(tabs, Q, V, A, T, F, TAU, ws, reps):
    (parent, jtype, q_start, nq_joint, v_start, nv_joint, adr, params, Xt, pt, mass, hC, Ib, bo,
     cC, iscale, grav) = tabs
    for _ in range(reps):
        rnea_range(parent, jtype, q_start, nq_joint, v_start, nv_joint, adr, params, Xt, pt, mass,
                   hC, Ib, bo, grav, Q, V, A, T, F, False, 0, 1, False, ws[0][0], ws[1][0], ws[2][0],
                   ws[3][0], ws[4][0], ws[5][0], ws[6][0], ws[7][0], ws[8][0], ws[9][0], ws[10][0],
                   ws[11][0], ws[12][0], ws[13][0], ws[14][0], ws[21][0], TAU)


@jit
def _aba_loop(tabs, Q, V, TAU, T, F, QDD, status, ws, reps):
    (parent, jtype, q_start, nq_joint, v_start, nv_joint, adr, params, Xt, pt, mass, hC, Ib, bo,
     cC, iscale, grav) = tabs
    for _ in range(reps):
        aba_range(parent, jtype, q_start, nq_joint, v_start, nv_joint, adr, params, Xt, pt, mass,
                  hC, Ib, bo, iscale, grav, Q, V, TAU, T, F, False, 0, 1, False, ws[0][0], ws[1][0],
                  ws[2][0], ws[3][0], ws[4][0], ws[5][0], ws[6][0], ws[7][0], ws[8][0], ws[9][0],
                  ws[10][0], ws[11][0], ws[12][0], ws[13][0], ws[14][0], ws[16][0], ws[17][0],
                  ws[18][0], ws[19][0], ws[20][0], ws[21][0], QDD, status)


def best(f, repeat, number):
    t = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            f()
        t = min(t, (time.perf_counter() - t0) / number)
    return t


def chain_timings(sizes, repeat):
    rng = np.random.default_rng(0)
    numba.set_num_threads(1)
    print("single state, 1 thread, revolute chain (ns per body)")
    print(f"{'N':>7} {'rnea sweep':>11} {'rnea call':>10} {'aba sweep':>10} {'aba call':>9}")
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
        reps = max(1, 200000 // n)
        _rnea_loop(tabs, q, qd, qdd, t1, fext, out, w_r, 1)
        _aba_loop(tabs, q, qd, tau2, t1, fext, out, status, w_a, 1)
        k_r = best(lambda: _rnea_loop(tabs, q, qd, qdd, t1, fext, out, w_r, reps), repeat, 1) / reps
        k_a = best(lambda: _aba_loop(tabs, q, qd, tau2, t1, fext, out, status, w_a, reps), repeat, 1) / reps
        number = max(1, 20000 // n)
        c_r = best(lambda: ej.rnea(model, q[0], qd[0], qdd[0]), repeat, number)
        c_a = best(lambda: ej.aba(model, q[0], qd[0], tau), repeat, number)
        print(f"{n:>7} {k_r / n * 1e9:>11.0f} {c_r / n * 1e9:>10.0f} {k_a / n * 1e9:>10.0f} {c_a / n * 1e9:>9.0f}")


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
    repeat = 3 if args.quick else 9
    chain_timings((100, 500, 10000), repeat)
    batch_timings(20_000 if args.quick else 100_000, repeat)


if __name__ == "__main__":
    main()
