"""Cold compile and cached start-up of the main job.

    python benchmarks/startup.py

Runs ``python -m ejce_nb`` twice with a fresh Numba cache directory: the first run compiles
everything, the second starts from the cache.
"""
import os
import subprocess
import sys
import tempfile
import time


def run(env):
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "ejce_nb", "demo", "--batch", "1000"], env=env, check=True,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main():
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        cold = run(env)
        warm = run(env)
    print(f"main job (batch 1000): cold compile {cold:.1f} s, cached start-up {warm:.2f} s")


if __name__ == "__main__":
    main()
