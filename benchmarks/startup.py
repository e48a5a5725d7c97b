"""Start-up: what a new user waits for, each figure beside its target.

    python benchmarks/startup.py [--quick] [--only "NAME;NAME;..."]

* the main job (``python -m ejce_nb``, what ``ejce-nb`` runs) with an empty cache: wall seconds,
  CPU seconds of its processes and the longest time without a line printed; then warm (the
  cache it filled);
* the first call of each public function on arm7 (the constrained dynamics on a four-bar), each
  in a fresh process with an empty cache: wall seconds, and the seconds of compiling (Numba's
  compile events of the package's kernels);
* ``--quick``: the main job and the one-state calls only; ``--only``: the figures named (``main``
  for the main job), separated by semicolons.

Wall seconds depend on the machine's other load (printed at the start), CPU seconds much less.
The README test command is timed apart (``time`` of the command of README.md).
"""
import os
import subprocess
import sys
import tempfile
import threading
import time

# name: (code after ``m``, ``q``, ``v``, ``a``, ``Q``, ``V``, ``A`` are made, target seconds)
FIRST_CALLS = {
    "rnea": ("ej.rnea(m, q, v, a)", 10),
    "aba": ("ej.aba(m, q, v, a)", 10),
    "mass_matrix": ("ej.mass_matrix(m, q)", 10),
    "forward_kinematics": ("ej.forward_kinematics(m, q, v, a)", 10),
    "body_jacobian": ("ej.body_jacobian(m, q, m.nbodies)", 10),
    "rnea_derivatives": ("ej.rnea_derivatives(m, q, v, a)", 10),
    "constrained_dynamics (four-bar)": ("ej.constrained_dynamics(fb, ej.assemble(fb, [0.3, 0.5, 1.6]), [0.0] * 3, "
                                        "[0.0] * 3, redundant='lstsq')", 10),
    "rnea, batch of 1,000": ("ej.rnea(m, Q, V, A)", 10),
    "aba, batch of 1,000": ("ej.aba(m, Q, V, A)", 10),
    "mass_matrix, batch of 1,000": ("ej.mass_matrix(m, Q)", 10),
    "forward_kinematics, batch of 1,000": ("ej.forward_kinematics(m, Q, V, A)", 10),
    "simulate (RK4, 0.1 s)": ("ej.simulate(m, q, v, 0.1, 1e-3, method='rk4', progress=False)", 20),
}
QUICK = ("rnea", "aba", "mass_matrix", "forward_kinematics")

SETUP = r'''
import time, numpy as np
t_import = time.perf_counter()
import ejce_nb as ej
from ejce_nb._jit import compile_seconds
m = ej.models.load("arm7")
rng = np.random.default_rng(0)
q, v, a = rng.standard_normal(m.nq), rng.standard_normal(m.nv), rng.standard_normal(m.nv)
Q, V, A = (rng.standard_normal((1000, n)) for n in (m.nq, m.nv, m.nv))
Z = (0.0, 0.0, 1.0)
b = ej.ModelBuilder(gravity=(0.0, -9.81, 0.0))
rod = lambda mass, L: dict(mass=mass, com=(L / 2, 0, 0), inertia=np.diag([1e-3 * mass, mass * L * L / 12, mass * L * L / 12]))
b.add_body("crank", joint=ej.joints.Revolute(Z), **rod(1.0, 1.0))
b.add_body("coupler", parent="crank", joint=ej.joints.Revolute(Z), placement=ej.Transform(translation=(1.0, 0, 0)), **rod(2.0, 3.0))
b.add_body("rocker", joint=ej.joints.Revolute(Z), placement=ej.Transform(translation=(3.2, 0, 0)), **rod(1.5, 2.5))
b.add_loop("pin", "coupler", "rocker", joint=ej.joints.Revolute(Z), placement_a=ej.Transform(translation=(3.0, 0, 0)),
           placement_b=ej.Transform(translation=(2.5, 0, 0)))
fb = b.build()
t0, c0 = time.perf_counter(), compile_seconds()
CALL
print(f"{time.perf_counter() - t0:.2f} {compile_seconds() - c0:.2f}")
'''


def first_call(code):
    """(wall seconds, compile seconds) of ``code`` in a fresh process with an empty cache."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, EJCE_NB_QUIET="1")
        out = subprocess.run([sys.executable, "-c", SETUP.replace("CALL", code)], env=env, check=True,
                             capture_output=True, text=True).stdout
    wall, comp = out.split()[-2:]
    return float(wall), float(comp)


def main_job(env):
    """(wall seconds, CPU seconds of its processes, longest silence in seconds) of the main job."""
    c0 = os.times()
    t0 = time.perf_counter()
    last = [t0]
    gap = [0.0]

    def watch(stream):
        for _ in iter(stream.readline, ""):
            now = time.perf_counter()
            gap[0] = max(gap[0], now - last[0])
            last[0] = now

    p = subprocess.Popen([sys.executable, "-m", "ejce_nb"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    threads = [threading.Thread(target=watch, args=(s,)) for s in (p.stdout, p.stderr)]
    for t in threads:
        t.start()
    rc = p.wait()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    gap[0] = max(gap[0], t0 + wall - last[0])
    c1 = os.times()
    if rc != 0:
        raise SystemExit(f"the main job failed (exit {rc})")
    return wall, c1.children_user + c1.children_system - c0.children_user - c0.children_system, gap[0]


def row(name, value, target, unit="s"):
    ok = "met" if value <= target else f"missed by {value - target:.1f} {unit}"
    print(f"  {name:40s} {value:7.1f} {unit}   target <= {target:g} {unit}   {ok}", flush=True)


def main():
    quick = "--quick" in sys.argv
    only = None
    if "--only" in sys.argv:
        only = set(sys.argv[sys.argv.index("--only") + 1].split(";"))      # (names hold commas)
    print(f"load average at the start: {', '.join(f'{x:.2f}' for x in os.getloadavg())}; "
          f"{os.cpu_count()} CPUs", flush=True)
    if only is None or "main" in only:
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, NUMBA_CACHE_DIR=cache)
            wall, cpu, gap = main_job(env)
            print(f"main job (python -m ejce_nb), empty cache: CPU {cpu:.1f} s", flush=True)
            row("main job, empty cache", wall, 30)
            row("main job, longest silence", gap, 10)
            warm, _, _ = main_job(env)
            row("main job, warm", warm, 1)
    print("first call of each function in a fresh process, empty cache (wall; of it compiling):", flush=True)
    for name, (code, target) in FIRST_CALLS.items():
        if (quick and name not in QUICK) or (only is not None and name not in only):
            continue
        wall, comp = first_call(code)
        row(f"{name} (compiling {comp:.1f} s)", wall, target)


if __name__ == "__main__":
    main()
