"""Derivatives of the dynamics beside Pinocchio's analytical ones, measured in the same run.

    python benchmarks/compare_pinocchio_derivatives.py [--quick]

1. One call, one thread: ``ej.rnea_derivatives`` and ``ej.aba_derivatives`` beside
   ``pin.computeRNEADerivatives`` / ``pin.computeABADerivatives`` on the 7-DOF arm, the shipped
   humanoid (both sides on the same model) and a 100-body chain of Z-Y-X Euler joints; each also
   as a multiple of its plain call (``ej.rnea`` / ``pin.rnea``, ``ej.aba`` / ``pin.aba``).
   Pinocchio's own sample humanoid (``buildSampleModelHumanoid``) is timed beside for reference.
2. A batch of 10^4 arm states at 1 and 2 threads: states per second of the batched derivative calls
   (fresh result arrays each call, each dropped before the next call; and with ``out=``, the same
   arrays every call) beside Pinocchio's derivative calls looped from Python.
3. Accuracy on joints whose motion subspace depends on q (SphericalZYX, Universal): Pinocchio's
   dtau_dq / dtau_dv against Richardson-extrapolated central differences of its own ``rnea``
   (in its own coordinates), and ours against the same differences of ``ej.rnea``.

Times are the best of several repeats of at least ~40 ms; two states take turns.
"""
import argparse
import os
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
from conftest import random_state  # noqa: E402


def best(f, repeat=7):
    n = 1
    while True:
        t0 = time.perf_counter()
        f(n)
        if time.perf_counter() - t0 > 0.04:
            break
        n *= 2
    t = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        f(n)
        t = min(t, (time.perf_counter() - t0) / n)
    return t


def turns(f, args):
    def run(k):
        for j in range(k):
            f(*args[j & 1])
    return run


def single(name, model, rng, repeat):
    pm = pin_oracle.PinModel(model)
    S = [random_state(model, rng) for _ in range(2)]
    ours = [(q, v, a) for q, v, a in S]
    ours_tau = [(q, v, ej.rnea(model, q, v, a)) for q, v, a in S]
    pins = [(pm.q(q), pm.v(q, v), pm.a(q, v, a)) for q, v, a in S]
    pins_tau = [(pm.q(q), pm.v(q, v), pm.tau_to_pin(q, ej.rnea(model, q, v, a))) for q, v, a in S]
    pmod, pd = pm.pmodel, pm.data
    t = {
        "ej.rnea": best(turns(lambda q, v, a: ej.rnea(model, q, v, a), ours), repeat),
        "ej.rnea_derivatives": best(turns(lambda q, v, a: ej.rnea_derivatives(model, q, v, a), ours), repeat),
        "ej.aba": best(turns(lambda q, v, u: ej.aba(model, q, v, u), ours_tau), repeat),
        "ej.aba_derivatives": best(turns(lambda q, v, u: ej.aba_derivatives(model, q, v, u), ours_tau), repeat),
        "pin.rnea": best(turns(lambda q, v, a: pin.rnea(pmod, pd, q, v, a), pins), repeat),
        "pin.computeRNEADerivatives": best(turns(lambda q, v, a: pin.computeRNEADerivatives(pmod, pd, q, v, a),
                                                 pins), repeat),
        "pin.aba": best(turns(lambda q, v, u: pin.aba(pmod, pd, q, v, u), pins_tau), repeat),
        "pin.computeABADerivatives": best(turns(lambda q, v, u: pin.computeABADerivatives(pmod, pd, q, v, u),
                                                pins_tau), repeat),
    }
    us = {k: 1e6 * x for k, x in t.items()}
    print(f"\n{name} (nv {model.nv}), one call, 1 thread, µs")
    print(f"{'':24} {'ejce_nb':>9} {'Pinocchio':>10} {'ratio':>7} {'ej x plain':>11} {'pin x plain':>12}")
    for what, o, p, o0, p0 in (("rnea", "ej.rnea_derivatives", "pin.computeRNEADerivatives", "ej.rnea", "pin.rnea"),
                               ("aba", "ej.aba_derivatives", "pin.computeABADerivatives", "ej.aba", "pin.aba")):
        print(f"{what + ' derivatives':24} {us[o]:9.2f} {us[p]:10.2f} {us[o] / us[p]:7.2f} "
              f"{us[o] / us[o0]:11.1f} {us[p] / us[p0]:12.1f}")
    print(f"{'(plain ' + 'rnea, aba)':24} {us['ej.rnea']:9.2f} {us['pin.rnea']:10.2f}   "
          f"aba {us['ej.aba']:.2f} / {us['pin.aba']:.2f}")
    return us


def batch(model, rng, n, threads):
    S = [random_state(model, rng) for _ in range(n)]
    Q, V, A = (np.array([s[k] for s in S]) for k in range(3))
    TAU = ej.rnea(model, Q, V, A)
    pm = pin_oracle.PinModel(model)
    PQ = [pm.q(q) for q in Q]
    PV = [pm.v(q, v) for q, v in zip(Q, V)]
    PA = [pm.a(q, v, a) for q, v, a in zip(Q, V, A)]
    PT = [pm.tau_to_pin(q, t) for q, t in zip(Q, TAU)]
    out = tuple(np.empty((n, model.nv, model.nv)) for _ in range(3))
    print(f"\nbatch of {n} arm states: states per second (each call's results dropped before the next; "
          f"out=: written into the same arrays every call)")
    print(f"{'':24} {'threads':>7} {'ejce_nb':>11} {'out=':>11} {'pin loop':>11} {'ratio':>7} {'out=':>7}")
    for what, ours, theirs in (
            ("rnea derivatives", lambda **kw: ej.rnea_derivatives(model, Q, V, A, **kw),
             lambda: [pin.computeRNEADerivatives(pm.pmodel, pm.data, q, v, a) for q, v, a in zip(PQ, PV, PA)]),
            ("aba derivatives", lambda **kw: ej.aba_derivatives(model, Q, V, TAU, **kw),
             lambda: [pin.computeABADerivatives(pm.pmodel, pm.data, q, v, u) for q, v, u in zip(PQ, PV, PT)])):
        tp = best(repeated(theirs))
        for th in threads:
            numba.set_num_threads(th)
            ours()
            to = best(repeated(ours))
            tb = best(repeated(lambda: ours(out=out)))
            print(f"{what:24} {th:7d} {n / to:11.3g} {n / tb:11.3g} {n / tp:11.3g} {tp / to:7.2f} {tp / tb:7.2f}")
    numba.set_num_threads(1)


def repeated(f):
    """k calls of f, each result dropped before the next call (as a loop over batches drops it)."""
    def run(k):
        for _ in range(k):
            f()
    return run


def richardson(f, h=0.02, levels=3):
    D = [[(f(h / 2 ** l) - f(-h / 2 ** l)) / (2 * h / 2 ** l)] for l in range(levels)]
    for l in range(1, levels):
        for k in range(1, l + 1):
            D[l].append((4 ** k * D[l][k - 1] - D[l - 1][k - 1]) / (4 ** k - 1))
    return D[-1][-1]


def accuracy(rng):
    J = ej.joints
    print("\naccuracy against Richardson differences of each side's own rnea (max relative error)")
    print(f"{'joint':14} {'pin dtau_dq':>12} {'pin dtau_dv':>12} {'ej dtau_dq':>11} {'ej dtau_dv':>11}")
    for name, spec in (("SphericalZYX", J.Spherical("ZYX")),
                       ("Universal", J.Universal((1.0, 0.0, 0.0), (0.0, 1.0, 0.0)))):
        b = ej.ModelBuilder(gravity=(0.0, 0.0, -9.81))
        b.add_body("a", parent="world", joint=spec, mass=1.3, com=(0.1, 0.2, -0.3),
                   inertia=np.diag([0.1, 0.2, 0.25]))
        b.add_body("b", parent="a", joint=J.Revolute((0.0, 0.0, 1.0)), placement=ej.Transform(translation=(0.2, 0, -0.4)),
                   mass=0.7, com=(0.1, 0.0, -0.2), inertia=np.diag([0.05, 0.04, 0.03]))
        model = b.build()
        pm = pin_oracle.PinModel(model)
        q, v, a = random_state(model, rng)
        qp, vp, ap = pm.q(q), pm.v(q, v), pm.a(q, v, a)
        nv = model.nv
        pin.computeRNEADerivatives(pm.pmodel, pm.data, qp, vp, ap)
        Pq, Pv = np.array(pm.data.dtau_dq), np.array(pm.data.dtau_dv)
        E = np.eye(nv)
        Rq = np.column_stack([richardson(lambda h: pin.rnea(pm.pmodel, pm.data, pin.integrate(pm.pmodel, qp, h * E[k]),
                                                             vp, ap)) for k in range(nv)])
        Rv = np.column_stack([richardson(lambda h: pin.rnea(pm.pmodel, pm.data, qp, vp + h * E[k], ap)) for k in range(nv)])
        dq, dv, _ = ej.rnea_derivatives(model, q, v, a)
        Oq = np.column_stack([richardson(lambda h: ej.rnea(model, q + h * E[k], v, a)) for k in range(nv)])
        Ov = np.column_stack([richardson(lambda h: ej.rnea(model, q, v + h * E[k], a)) for k in range(nv)])
        rel = lambda X, Y: np.abs(X - Y).max() / np.abs(Y).max()  # noqa: E731
        print(f"{name:14} {rel(Pq, Rq):12.2e} {rel(Pv, Rv):12.2e} {rel(dq, Oq):11.2e} {rel(dv, Ov):11.2e}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats, a batch of 2,000")
    args = ap.parse_args()
    repeat = 3 if args.quick else 7
    rng = np.random.default_rng(0)
    numba.set_num_threads(1)
    print(f"ejce_nb {ej.__version__}, Pinocchio {pin.__version__}, numba {numba.__version__}, "
          f"{os.cpu_count()} CPUs")
    single("arm7", load("arm7"), rng, repeat)
    single("humanoid", load("humanoid"), rng, repeat)
    single("100-body Z-Y-X chain", chain(100, ej.joints.Spherical("ZYX")), rng, repeat)
    ph = pin.buildSampleModelHumanoid()
    pd = ph.createData()
    q = [pin.randomConfiguration(ph, -np.ones(ph.nq), np.ones(ph.nq)) for _ in range(2)]
    for q1 in q:
        q1[3:7] /= np.linalg.norm(q1[3:7])
    v = [rng.normal(size=ph.nv) for _ in range(2)]
    args2 = [(q[k], v[k], v[1 - k]) for k in range(2)]
    tr = best(turns(lambda a, b, c: pin.rnea(ph, pd, a, b, c), args2), repeat)
    td = best(turns(lambda a, b, c: pin.computeRNEADerivatives(ph, pd, a, b, c), args2), repeat)
    ta = best(turns(lambda a, b, c: pin.computeABADerivatives(ph, pd, a, b, c), args2), repeat)
    print(f"\nPinocchio's sample humanoid (nv {ph.nv}): rnea {1e6 * tr:.2f} µs, computeRNEADerivatives "
          f"{1e6 * td:.2f} µs, computeABADerivatives {1e6 * ta:.2f} µs")
    batch(load("arm7"), rng, 2000 if args.quick else 10_000, (1, 2))
    accuracy(rng)


if __name__ == "__main__":
    main()
