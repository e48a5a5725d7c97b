"""The Dask runner: one task per chunk on a ``dask.distributed.Client``'s workers.  A worker draws
its chunk, runs the Numba kernels and writes the chunk into the store itself through zarr (the
stored inputs while the kernels run), then its marker; the task returns when the chunk is in the
store.  The client keeps a bounded number of tasks in flight, updates the progress bar and stops at
the first failed chunk.  Before the chunks the kernels are compiled once, on the client, and
their cache files sent to every worker (``_jit.cache_files``): each worker's warm-up task then loads
them instead of compiling for itself (a worker on another kind of CPU compiles its own), timed
apart."""
import concurrent.futures
import time
import uuid

import numpy as np

from .._jit import _PKG, cache_files, install_cache_files
from .fingerprint import package_hash
from .libm import digest as numerics
from .plan import STATUS, ChunkFailure
from .store import Writer, done_chunks


def _check_worker(plan):
    if package_hash() != plan.code:
        raise RuntimeError(f"this worker runs ejce_nb from {_PKG} (sources {package_hash()}), "
                           f"not the client's (sources {plan.code}); install the same version on every "
                           "worker (or set PYTHONPATH)")
    if plan.regenerated and numerics() != plan.numerics:
        raise RuntimeError("this worker's math library draws the sampled inputs with other bits than the "
                           "client's, and the sweep does not store them (store_inputs=False): run it on "
                           "machines with the same numerical libraries, or with store_inputs=True")


def _warm_task(plan):
    """Compile the kernels on this worker; what fails here fails again, reported, in its chunk."""
    try:
        _check_worker(plan)
        plan.warm()
    except Exception:            # noqa: BLE001
        pass


def _chunk_task(plan, target, k):
    """Chunk k computed and written here: (k, samples, flagged samples)."""
    _check_worker(plan)
    writer = plan.opened("writer", lambda: Writer(target, plan))
    with concurrent.futures.ThreadPoolExecutor(1, "ejce_nb-sweep-inputs") as pool:
        early = []
        arrays = plan.compute(k, inputs_drawn=lambda ins: early.append((set(ins), pool.submit(writer.write, k, ins))))
        written = set().union(*(names for names, _ in early))
        writer.write(k, {name: a for name, a in arrays.items() if name not in written})
        for _, f in early:
            f.result()
    writer.mark(k)
    return k, len(arrays[STATUS]), int(np.count_nonzero(arrays[STATUS]))


class Session:
    """The plan and the store on the cluster for one sweep."""

    def __init__(self, plan, target, client):
        try:
            from distributed import as_completed
        except ImportError:
            raise ValueError('scheduler=client needs dask.distributed: pip install ".[dask]"') from None
        if not target.shared:
            raise ValueError(f"scheduler=client: the workers cannot write {target.label} (a MemoryStore lives in "
                             "this process, a ZipStore takes one writer); give a directory every worker sees "
                             "or a URL")
        self.as_completed = as_completed
        self.plan, self.target, self.client = plan, target, client
        self.run_id = uuid.uuid4().hex[:8]
        self.plan_future = client.scatter(plan, broadcast=True, hash=False)

    def close(self):
        self.plan_future.release()

    def warm(self):
        """The kernels compiled (or loaded) here and their cache files installed on every worker,
        then one warm-up task on each worker (loading them); its seconds."""
        t0 = time.perf_counter()
        try:
            self.plan.warm()
        except Exception:            # noqa: BLE001 - what fails here fails again, reported, in its chunk
            pass
        files = cache_files()
        if files:
            self.client.run(install_cache_files, files)
        futures = [self.client.submit(_warm_task, self.plan_future, key=f"ejce_nb-sweep-warm-{self.run_id}-{i}",
                                      workers=[w], allow_other_workers=False, pure=False)
                   for i, w in enumerate(self.client.scheduler_info()["workers"])]
        self.client.gather(futures)
        return time.perf_counter() - t0

    def run(self, pending, progress):
        """The pending chunks as tasks; returns the number of flagged samples."""
        client, plan = self.client, self.plan
        window = max(2, 2 * (sum(client.nthreads().values()) or 1))
        todo = iter(pending)
        queue = self.as_completed()
        futures = []
        flagged = 0

        def submit():
            for k in todo:
                f = client.submit(_chunk_task, self.plan_future, self.target, k,
                                  key=f"ejce_nb-sweep-{self.run_id}-{k}", pure=False, retries=0)
                futures.append(f)
                queue.add(f)
                return

        for _ in range(window):
            submit()
        try:
            for fut in queue:
                if fut.status == "error":
                    exc = fut.exception()
                    if isinstance(exc, ChunkFailure):
                        raise exc
                    k = int(fut.key.rsplit("-", 1)[1])
                    first, stop = plan.rows(k)
                    raise ChunkFailure(k, first, stop, f"{type(exc).__name__}: {exc}") from exc
                _, m, bad = fut.result()
                flagged += bad
                progress.update(m)
                fut.release()
                submit()
        finally:
            for f in futures:
                if not f.done():
                    f.cancel()
        missing = sorted(set(pending) - done_chunks(self.target, plan.nchunks))
        if missing:
            first, stop = plan.rows(missing[0])
            raise ChunkFailure(missing[0], first, stop, f"chunks {missing} were computed but their markers are not "
                               "in the store (do the workers see the client's store?)")
        return flagged
