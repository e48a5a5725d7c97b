"""A batch with bad samples beside the clean batch: states/s of rnea and aba on 10^6 arm states
of which 1% are bad (NaN coordinates, infinite velocities), with errors="flag".

    python benchmarks/bench_bad_samples.py [--n 1000000]

Checks on the way that the good rows equal the clean batch bit for bit, that the bad rows are NaN
and that the status counts the bad samples.
"""
import argparse
import os
import sys

import numpy as np

import ejce_nb as ej
from ejce_nb.models import load, random_states

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_dynamics import best  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=1_000_000)
    B = p.parse_args(argv).n
    m = load("arm7")
    q, qd, qdd = random_states(m, B, np.random.default_rng(0))
    tau = ej.rnea(m, q, qd, qdd)
    bad = np.random.default_rng(1).choice(B, B // 100, replace=False)
    qb = q.copy()
    qb[bad[: len(bad) // 2], 0] = np.nan
    qdb = qd.copy()
    qdb[bad[len(bad) // 2:], 3] = np.inf
    for name, clean, flagged in (
            ("rnea", lambda: ej.rnea(m, q, qd, qdd), lambda: ej.rnea(m, qb, qdb, qdd, errors="flag")),
            ("aba", lambda: ej.aba(m, q, qd, tau), lambda: ej.aba(m, qb, qdb, tau, errors="flag"))):
        ref = clean()
        out, st = flagged()
        good = st == 0
        assert np.count_nonzero(st) == len(bad) and np.array_equal(out[good], ref[good])
        assert np.isnan(out[~good]).all()
        tc, tb = (best(lambda k: f(), 5, 1) for f in (clean, flagged))
        print(f"{name}: clean {B / tc / 1e6:.2f} M states/s, with {len(bad):,} bad samples {B / tb / 1e6:.2f} "
              f"M states/s ({tc / tb:.2f} of the clean rate); good rows bitwise those of the clean batch")


if __name__ == "__main__":
    main()
