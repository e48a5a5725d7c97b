"""The local runner: chunk after chunk on this thread (the kernels on all Numba threads) while a
second thread writes the previous one through zarr, so that the writes overlap the serial parts
of the batch calls.  Two slots of scratch arrays: chunk i is computed into one while chunk i-1 is
written from the other; a slot is computed into again once its chunk is in the store."""
import queue
import threading

import numpy as np

from .plan import STATUS
from .store import Writer

SLOTS = 2


def run(plan, target, pending, progress):
    """Compute and write the pending chunks; returns the number of flagged samples."""
    writer = Writer(target, plan)
    todo = queue.Queue()
    free = threading.Semaphore(SLOTS)
    failed = []
    flagged = [0]

    def write():
        while True:
            item = todo.get()
            if item is None:
                return
            k, arrays = item
            try:
                if not failed:
                    writer.write(k, arrays)
                    writer.mark(k)
                    flagged[0] += int(np.count_nonzero(arrays[STATUS]))
                    progress.update(len(arrays[STATUS]))
            except BaseException as e:          # reported by the computing thread
                failed.append(e)
            finally:
                free.release()

    th = threading.Thread(target=write, name="ejce_nb-sweep-writer", daemon=True)
    th.start()
    try:
        for i, k in enumerate(pending):
            free.acquire()
            if failed:
                break
            todo.put((k, plan.compute(k, slot=i % SLOTS)))
    finally:
        # the chunks computed are written before this returns, also on Ctrl-C
        todo.put(None)
        th.join()
    if failed:
        raise failed[0]
    return flagged[0]
