"""The local runner: chunk after chunk in this process, the kernels on all Numba threads, each
chunk written through zarr and marked as soon as it is computed, its scratch arrays reused by the
next one.

The writes are not overlapped with the next chunk's kernels on a thread of their own: the kernels
keep every core busy, and after each of a chunk's parallel calls OpenMP's threads spin a while
(``OMP_WAIT_POLICY``), so a writing thread only competes with them; measured with
``benchmarks/bench_sweep.py`` on 2 cores, writing in turn took less CPU and less time."""
import numpy as np

from .plan import STATUS
from .store import Writer


def run(plan, target, pending, progress):
    """Compute and write the pending chunks; returns the number of flagged samples."""
    writer = Writer(target, plan)
    flagged = 0
    for k in pending:
        arrays = plan.compute(k)
        writer.write(k, arrays)
        writer.mark(k)
        flagged += int(np.count_nonzero(arrays[STATUS]))
        progress.update(len(arrays[STATUS]))
    return flagged
