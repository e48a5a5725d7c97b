"""Cold compile of each public function, with a fresh Numba cache.

    python benchmarks/cold_compile.py [--main]

A fresh process and cache: the first call of each public function in turn, rnea on arm7 first,
single states, then batches (the seconds each one adds: what it compiles beyond what the calls
before it compiled).  Wall seconds depend on the machine's other load, the process's CPU seconds
much less.  ``--main`` also times the main job
(``ejce-nb``, the README's first command) cold.
"""
import os
import subprocess
import sys
import tempfile
import time

STEPS = r'''
import time, numpy as np, ejce_nb as ej
from ejce_nb._jit import compile_seconds
m = ej.models.load("arm7")
rng = np.random.default_rng(0)
q, v, a = rng.standard_normal(m.nq), rng.standard_normal(m.nv), rng.standard_normal(m.nv)
Q, V, A = (rng.standard_normal((64, n)) for n in (m.nq, m.nv, m.nv))
steps = [("rnea", lambda: ej.rnea(m, q, v, a)),
         ("aba", lambda: ej.aba(m, q, v, a)),
         ("mass_matrix", lambda: ej.mass_matrix(m, q)),
         ("nonlinear_effects", lambda: ej.nonlinear_effects(m, q, v)),
         ("forward_kinematics(q, qd, qdd)", lambda: ej.forward_kinematics(m, q, v, a)),
         ("forward_kinematics(q)", lambda: ej.forward_kinematics(m, q)),
         ("joint_terms", lambda: ej.joint_terms(m, q, v)),
         ("body_jacobian", lambda: ej.body_jacobian(m, q, 3)),
         ("rnea batch", lambda: ej.rnea(m, Q, V, A)),
         ("aba batch", lambda: ej.aba(m, Q, V, A)),
         ("mass_matrix batch", lambda: ej.mass_matrix(m, Q)),
         ("forward_kinematics batch", lambda: ej.forward_kinematics(m, Q, V, A)),
         ("simulate rk4", lambda: ej.simulate(m, q, v, 0.05, 0.01, method="rk4", progress=False)),
         ("simulate dopri5", lambda: ej.simulate(m, q, v, 0.05, 0.01, method="dopri5", progress=False))]
steps += EXTRA
only = ONLY
for name, f in steps:
    if only and name not in only:
        continue
    t0, c0, p0 = time.perf_counter(), compile_seconds(), time.process_time()
    f()
    print(f"{name:34s} {time.perf_counter() - t0:7.1f} s  (compiling {compile_seconds() - c0:6.1f} s, "
          f"CPU {time.process_time() - p0:6.1f} s)", flush=True)
'''


def child(only, extra="[]"):
    src = STEPS.replace("ONLY", repr(only)).replace("EXTRA", extra)
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, EJCE_NB_QUIET="1")
        subprocess.run([sys.executable, "-c", src], env=env, check=True)


def main():
    print("-- first call of each public function, in turn (the first, rnea, is a fresh process's first)")
    child([])
    if "--main" in sys.argv:
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, NUMBA_CACHE_DIR=cache, EJCE_NB_QUIET="1")
            t0, c0 = time.perf_counter(), os.times()
            subprocess.run([sys.executable, "-m", "ejce_nb"], env=env, check=True, stdout=subprocess.DEVNULL)
            c1 = os.times()
            print(f"-- main job (ejce-nb) cold: {time.perf_counter() - t0:.1f} s "
                  f"(CPU {c1.children_user + c1.children_system - c0.children_user - c0.children_system:.1f} s)")


if __name__ == "__main__":
    main()
