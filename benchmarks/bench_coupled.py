"""Steps per second of ``ej.simulate`` on models with couplers: the OpenSim knee whose patella
and tibia follow the knee angle through SimmSplines (``data/knee_patella.osim``, nq = 2, full
mechanism 3 coordinates) and a double pendulum whose second joint mimics the first.

    python benchmarks/bench_coupled.py [--t 5]

RK4, dt = 1e-3, every step recorded (q, qd and the energies), one trajectory, one thread; the
first call (compiling or loading the loop) is made before the timed one.  A batch of 100 knees
from random states shows the trajectories in parallel.
"""
import argparse
import os
import time

import numpy as np

import ejce_nb as ej

HERE = os.path.dirname(os.path.abspath(__file__))


def mimic_pendulum():
    b = ej.ModelBuilder()
    b.add_body("a", joint=ej.joints.Revolute((0.0, 1.0, 0.0)), mass=1.0, com=(0.0, 0.0, -0.3),
               inertia=np.eye(3) * 0.01)
    b.add_body("b", parent="a", joint=ej.joints.Revolute((0.0, 1.0, 0.0)),
               placement=ej.Transform(translation=(0.0, 0.0, -0.6)), mass=1.0, com=(0.0, 0.0, -0.3),
               inertia=np.eye(3) * 0.01, mimic=("a_joint", -0.5, 0.0))
    return b.build()


def rate(model, q0, v0, t, dt=1e-3):
    ej.simulate(model, q0, v0, 10 * dt, dt, progress=False)
    t0 = time.perf_counter()
    tr = ej.simulate(model, q0, v0, t, dt, progress=False)
    el = time.perf_counter() - t0
    steps = np.sum(tr.steps)
    return steps / el, tr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--t", type=float, default=5.0, help="simulated seconds (default 5)")
    a = ap.parse_args()
    knee = ej.load_opensim(os.path.join(HERE, "..", "data", "knee_patella.osim"))
    r, tr = rate(knee, knee.neutral(), np.zeros(knee.nv), a.t)
    print(f"knee_patella.osim (nq {knee.nq}, full {knee.expanded().nq}), rk4 dt 1e-3, {a.t:g} s: "
          f"{r:,.0f} steps/s")
    mm = mimic_pendulum()
    r, tr = rate(mm, np.array([0.8]), np.zeros(1), a.t)
    print(f"mimic double pendulum (nq 1, full 2), rk4 dt 1e-3, {a.t:g} s: {r:,.0f} steps/s, "
          f"energy drift {tr.energy_drift():.1e}")
    rng = np.random.default_rng(0)
    Q = knee.neutral() + rng.uniform(-0.2, 0.2, (100, knee.nq))
    r, tr = rate(knee, Q, np.zeros((100, knee.nv)), a.t / 10)
    print(f"100 knees, rk4 dt 1e-3, {a.t / 10:g} s each: {r:,.0f} steps/s (all trajectories)")


if __name__ == "__main__":
    main()
