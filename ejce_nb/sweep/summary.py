"""Summaries of a sweep, one chunk at a time: ``Stats`` of an array (Chan et al.'s merge of
the chunks' means and squared deviations), histograms, and ``Summary``, the table of them."""
import math

import numpy as np

from ..errors import Status


class Stats:
    """count, min, max, mean, std of an array over its samples (each of the trailing shape)."""

    def __init__(self, name, count, minimum, maximum, mean, std):
        self.name, self.count = name, count
        self.min, self.max, self.mean, self.std = minimum, maximum, mean, std

    def __repr__(self):
        return f"<Stats {self.name}: count={self.count}, shape {np.shape(self.mean)}>"


class Summary(dict):
    """{array name: Stats}; ``status`` = {ej.Status: count} of the finished samples;
    ``str()`` is a table (one line per entry, or one per array for arrays of more than 12 entries
    per sample), after a line naming the flagged samples' codes."""

    def __init__(self, result, stats):
        super().__init__(stats)
        self.status = result.status_counts()
        self.header = (f"sweep {result.path}: {result.n_done:,} of {result.n:,} states "
                       f"({len(result.chunks_done)}/{result.nchunks} chunks), model with "
                       f"{result.model.nbodies} bodies, nq {result.model.nq}, nv {result.model.nv}")
        bad = {s: c for s, c in self.status.items() if s != Status.OK}
        self.flagged = (f"{sum(bad.values()):,} samples flagged (NaN in what they break): " +
                        ", ".join(f"{c:,} {s.name}" for s, c in sorted(bad.items())) if bad else
                        "no sample flagged")

    def table(self):
        lines = [self.header, self.flagged, f"{'array':<34s} {'count':>10s} {'min':>12s} {'max':>12s} {'mean':>12s} {'std':>12s}"]

        def row(label, c, lo, hi, mu, sd):
            lines.append(f"{label:<34s} {c:>10d} {lo:>12.5g} {hi:>12.5g} {mu:>12.5g} {sd:>12.5g}")

        for name, s in self.items():
            shape = np.shape(s.mean)
            size = int(np.prod(shape, dtype=np.int64))
            if size <= 12:
                for ix in np.ndindex(*shape):
                    label = name + (f"[{','.join(map(str, ix))}]" if ix else "")
                    row(label, s.count, s.min[ix], s.max[ix], s.mean[ix], s.std[ix])
                continue
            if shape == (4, 4) and name.startswith("forward_kinematics:"):
                for x, ax in enumerate("xyz"):
                    row(f"{name} p{ax}", s.count, s.min[x, 3], s.max[x, 3], s.mean[x, 3], s.std[x, 3])
                continue
            # pooled over entries: the spread of all entries together
            mu = float(np.mean(s.mean))
            var = float(np.mean(s.std ** 2 + (s.mean - mu) ** 2))
            row(f"{name} ({size} entries)", s.count, float(np.min(s.min)), float(np.max(s.max)), mu, math.sqrt(var))
        return "\n".join(lines)

    __str__ = table


def stats(arr):
    """Stats of a SweepArray over the finished chunks' finite rows, one chunk at a time."""
    name = arr.name
    count, mean, m2 = 0, 0.0, 0.0
    lo = hi = None
    for _, _, a in arr.iter_chunks():
        a = finite_rows(a)
        c = a.shape[0]
        if c == 0:
            continue
        mu = a.mean(axis=0)
        d2 = ((a - mu) ** 2).sum(axis=0)
        if count == 0:
            mean, m2, lo, hi = mu, d2, a.min(axis=0), a.max(axis=0)
        else:
            # Chan et al.: merge the chunk's mean and squared deviations into the running ones
            tot = count + c
            delta = mu - mean
            mean = mean + delta * (c / tot)
            m2 = m2 + d2 + delta ** 2 * (count * c / tot)
            lo, hi = np.minimum(lo, a.min(axis=0)), np.maximum(hi, a.max(axis=0))
        count += c
    if count == 0:
        nan = np.full(arr.shape[1:], np.nan)
        return Stats(name, 0, nan, nan, nan, nan)
    return Stats(name, count, lo, hi, mean, np.sqrt(m2 / count))


def histogram(arr, bins, range=None):
    """Histogram of each entry of a SweepArray over the finished chunks' finite rows: (counts,
    edges) of shapes trailing + (bins,) and trailing + (bins + 1,); ``range`` (lo, hi) for all
    entries, else each entry's own min..max."""
    trail = arr.shape[1:]
    if range is None:
        s = stats(arr)
        lo, hi = s.min, s.max
    else:
        lo, hi = np.broadcast_to(float(range[0]), trail), np.broadcast_to(float(range[1]), trail)
    lo = np.where(np.isfinite(lo), lo, 0.0)
    hi = np.where(np.isfinite(hi), hi, 1.0)
    hi = np.where(hi > lo, hi, lo + 1.0)
    edges = np.linspace(lo, hi, bins + 1, axis=-1)
    counts = np.zeros(trail + (bins,), dtype=np.int64)
    for _, _, a in arr.iter_chunks():
        a = finite_rows(a)
        for ix in np.ndindex(*trail):
            counts[ix] += np.histogram(a[(slice(None),) + ix], bins=edges[ix])[0]
    return counts, edges


def finite_rows(a):
    """The rows of a (one per sample) without NaN or inf: flagged samples are NaN in what they break."""
    if a.dtype.kind != "f":
        return a
    ok = np.isfinite(a.reshape(a.shape[0], -1)).all(axis=1)
    return a if ok.all() else a[ok]
