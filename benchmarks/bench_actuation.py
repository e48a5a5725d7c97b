"""The cost of actuation in one forward-dynamics call: ``ej.forward_dynamics`` of dm_control's
humanoid with its 21 motors driven, beside the same model without actuation
(``model.with_actuation(None)``) and ``ej.aba`` (which leaves out the joints' passive forces),
one state and a batch of 1,000; best of 7 repeats.

    python benchmarks/bench_actuation.py
"""
import os
import time
import warnings

import numpy as np

import ejce_nb as ej


def best(f, n):
    """Best time of one call of f over 7 repeats of n calls, in microseconds."""
    times = []
    for _ in range(7):
        t0 = time.perf_counter()
        for _ in range(n):
            f()
        times.append((time.perf_counter() - t0) / n * 1e6)
    return min(times)


def main():
    import dm_control
    path = os.path.join(os.path.dirname(dm_control.__file__), "suite", "humanoid.xml")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = ej.load_mjcf(path)
    bare = m.with_actuation(None)
    rng = np.random.default_rng(0)
    q, qd = m.neutral(), rng.normal(size=m.nv)
    ctrl, tau = rng.uniform(-1, 1, m.actuation.nu), np.zeros(m.nv)
    calls = {"forward_dynamics, actuated": lambda: ej.forward_dynamics(m, q, qd, ctrl=ctrl),
             "forward_dynamics, no actuation": lambda: ej.forward_dynamics(bare, q, qd, tau=tau),
             "aba": lambda: ej.aba(m, q, qd, tau)}
    B = 1000
    Q, QD = np.tile(q, (B, 1)), rng.normal(size=(B, m.nv))
    C, T0 = rng.uniform(-1, 1, (B, m.actuation.nu)), np.zeros((B, m.nv))
    batches = {"forward_dynamics, actuated": lambda: ej.forward_dynamics(m, Q, QD, ctrl=C),
               "forward_dynamics, no actuation": lambda: ej.forward_dynamics(bare, Q, QD, tau=T0)}
    print(f"dm_control humanoid: nv {m.nv}, nu {m.actuation.nu}; load {os.getloadavg()[0]:.2f}")
    print(f"{'call':32s} {'one state':>12s} {'batch, per state':>18s}")
    one = {}
    for name, f in calls.items():
        f()
        one[name] = best(f, 20000)
        g = batches.get(name)
        per = ""
        if g is not None:
            g()
            per = f"{best(g, 20) / B * 1e3:,.0f} ns"
        print(f"{name:32s} {one[name]:9.2f} us {per:>18s}")
    a, b = one["forward_dynamics, actuated"], one["forward_dynamics, no actuation"]
    print(f"actuated / not: {a / b:.2f}x; actuated / aba: {a / one['aba']:.2f}x")


if __name__ == "__main__":
    main()
