"""The long fuzzing profile: the public functions' contract (tests/test_fuzz.py, ``check_call``)
on many random calls per function, repeated and interleaved as a user makes them (good and bad
states, one state and batches, with and without ``data=``, every value of ``errors``); prints
the number of cases and of failures per function, and the first failures.

    python benchmarks/fuzz_long.py                 # 100,000 cases per function
    python benchmarks/fuzz_long.py --cases 2000 --functions rnea,aba
"""
import argparse
import os
import sys
import time
import traceback

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from test_fuzz import CONTRACT, ERRORS, KINDS_OF_CALL, check_call, contract_models  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", type=int, default=100_000, help="cases per function (default 10^5)")
    p.add_argument("--functions", default=",".join(CONTRACT), help="comma-separated, default all")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    import warnings
    warnings.simplefilter("ignore")             # near-singular warnings of random states
    models = contract_models()
    rng = np.random.default_rng(args.seed)
    total_fail = 0
    print(f"{'function':24s} {'cases':>9s} {'failures':>9s} {'seconds':>8s}  outcomes")
    for name in args.functions.split(","):
        fails, outcomes, first = 0, {}, None
        t0 = time.perf_counter()
        for _ in range(args.cases):
            case = (int(rng.integers(len(models))), int(rng.integers(2 ** 31)),
                    KINDS_OF_CALL[rng.integers(len(KINDS_OF_CALL))], ERRORS[rng.integers(len(ERRORS))],
                    [None, None, 1, 3][rng.integers(4)], bool(rng.integers(2)))
            try:
                out = check_call(name, models[case[0]], *case[1:])
                outcomes[out] = outcomes.get(out, 0) + 1
            except Exception:           # noqa: BLE001 - count and report every kind of failure
                fails += 1
                if first is None:
                    first = (case, traceback.format_exc(limit=3))
        total_fail += fails
        print(f"{name:24s} {args.cases:9,d} {fails:9,d} {time.perf_counter() - t0:8.1f}  {outcomes}", flush=True)
        if first is not None:
            print(f"  first failure, case {first[0]}:\n{first[1]}")
    return 1 if total_fail else 0


if __name__ == "__main__":
    sys.exit(main())
