"""Batched and single-state kinematics timings (pytest-benchmark).

    python -m pytest benchmarks/bench_kinematics.py --benchmark-only

Thread count: NUMBA_NUM_THREADS, or the ``threads`` parameter below.
"""
import numba
import pytest

import ejce_nb as ej
from ejce_nb.models import chain, load, random_states as _states

B = 100_000


@pytest.mark.parametrize("threads", [1, 2])
def test_fk_batch_arm7(benchmark, rng, threads):
    if threads > numba.config.NUMBA_NUM_THREADS:
        pytest.skip("not enough threads")
    model = load("arm7")
    q, qd, qdd = _states(model, B, rng)
    numba.set_num_threads(threads)
    res = ej.forward_kinematics(model, q, qd, qdd)
    benchmark.extra_info["states"] = B
    try:
        benchmark(ej.forward_kinematics, model, q, qd, qdd, out=res)
    finally:
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    if benchmark.stats:
        benchmark.extra_info["states_per_s"] = B / benchmark.stats.stats.min


@pytest.mark.parametrize("joint", ["revolute", "ZYX"])
@pytest.mark.parametrize("n", [100, 1000])
def test_fk_chain_single(benchmark, rng, n, joint):
    model = chain(n, joint=joint)
    q, qd, qdd = _states(model, 1, rng)
    ej.forward_kinematics(model, q[0], qd[0], qdd[0])
    benchmark(ej.forward_kinematics, model, q[0], qd[0], qdd[0])
    if benchmark.stats:
        benchmark.extra_info["ns_per_body"] = benchmark.stats.stats.min / n * 1e9
