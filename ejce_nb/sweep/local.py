"""The local runner: chunk after chunk on this thread (the kernels on all Numba threads) while a
second thread writes the previous ones through zarr, so that the writes overlap the serial parts
of the batch calls.  Three slots of scratch arrays: while chunk i is computed, chunk i-1 may wait
in the queue and chunk i-2 be in writing; chunk i-3 (the slot reused) is in the store."""
import queue
import threading

import numpy as np

from .plan import STATUS
from .store import Writer


def run(plan, target, pending, progress):
    """Compute and write the pending chunks; returns the number of flagged samples."""
    writer = Writer(target, plan)
    todo = queue.Queue(maxsize=1)
    failed = []
    flagged = [0]

    def write():
        while True:
            item = todo.get()
            if item is None:
                return
            if failed:
                continue
            k, arrays = item
            try:
                writer.write(k, arrays)
                writer.mark(k)
                flagged[0] += int(np.count_nonzero(arrays[STATUS]))
                progress.update(len(arrays[STATUS]))
            except BaseException as e:          # reported by the computing thread
                failed.append(e)

    th = threading.Thread(target=write, name="ejce_nb-sweep-writer", daemon=True)
    th.start()
    try:
        for i, k in enumerate(pending):
            if failed:
                break
            todo.put((k, plan.compute(k, slot=i % 3)))
    finally:
        # the queued chunks are written before this returns, also on Ctrl-C
        todo.put(None)
        th.join()
    if failed:
        raise failed[0]
    return flagged[0]
