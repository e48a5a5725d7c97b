"""The ``ejce-nb`` command (also ``python -m ejce_nb``).

  ejce-nb                     the paper's example, then a batch kinematics sweep on a shipped model
  ejce-nb info MODEL          summary of a model (shipped name, .json or .urdf)
  ejce-nb bench MODEL         throughput of batched kinematics on a model
"""
import argparse
import sys
import time

import numpy as np

PAPER_SEQUENCES = ("ZXZ", "ZYX", "XYZ", "YXY", "zxz", "zyx", "xyz", "yzy")


def paper_example(n_states=5, seed=2026, out=None):
    """A spherical joint between two bodies: the Jacobian of the generic EJCE method beside the
    matrix of Euler's kinematic equations, for several sequences and random states.  Returns the
    largest difference."""
    from . import ModelBuilder, joint_terms, joints
    from .euler import euler_rate_matrix

    out = out or sys.stdout
    rng = np.random.default_rng(seed)
    worst = 0.0
    print("Paper example: spherical joint between two bodies, Jacobian of the EJCE method vs "
          "Euler's kinematic equations", file=out)
    print(f"  {'sequence':>8s}  {'angles (rad)':>30s}  {'max |J_w - E|':>14s}", file=out)
    for seq in PAPER_SEQUENCES:
        b = ModelBuilder()
        b.add_body("body1", joint=joints.Fixed(), mass=1.0, inertia=np.eye(3))
        b.add_body("body2", parent="body1", joint=joints.Spherical(seq), mass=1.0, inertia=np.eye(3))
        model = b.build()
        for _ in range(n_states):
            q = rng.uniform(-np.pi, np.pi, 3)
            qd = rng.normal(size=3)
            Jw = joint_terms(model, q, qd).J[:3, :]
            diff = float(np.abs(Jw - euler_rate_matrix(seq, q)).max())
            worst = max(worst, diff)
            print(f"  {seq:>8s}  {np.array2string(q, precision=4, floatmode='fixed'):>30s}  {diff:14.3e}", file=out)
    print(f"  largest difference over all sequences and states: {worst:.3e}", file=out)
    return worst


def bench(model, batch=100_000, repeats=3, threads=None, out=None):
    """Throughput (states/s) of batched forward kinematics with accelerations."""
    import numba

    from . import forward_kinematics
    from .models import random_states
    out = out or sys.stdout
    if threads:
        numba.set_num_threads(threads)
    q, qd, qdd = random_states(model, batch, 0)
    res = forward_kinematics(model, q, qd, qdd)               # compile or load; allocate the outputs
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        forward_kinematics(model, q, qd, qdd, out=res)
        best = min(best, time.perf_counter() - t0)
    rate = batch / best
    print(f"batch forward kinematics with accelerations: {batch} states of {model.nbodies} bodies "
          f"in {best * 1e3:.1f} ms on {numba.get_num_threads()} thread(s): {rate:,.0f} states/s", file=out)
    return rate


def main(argv=None):
    parser = argparse.ArgumentParser(prog="ejce-nb", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd")
    p_demo = sub.add_parser("demo", help="the paper's example and a batch sweep (the default)")
    p_demo.add_argument("--model", default="arm7", help="model of the batch sweep (default: arm7)")
    p_demo.add_argument("--batch", type=int, default=100_000)
    p_info = sub.add_parser("info", help="summary of a model")
    p_info.add_argument("model", help="shipped model name, .json or .urdf file")
    p_bench = sub.add_parser("bench", help="throughput of batched kinematics")
    p_bench.add_argument("model", nargs="?", default="arm7")
    p_bench.add_argument("--batch", type=int, default=100_000)
    p_bench.add_argument("--threads", type=int, default=None)
    args = parser.parse_args(argv)

    from . import ModelError
    from .models import load
    try:
        if args.cmd == "info":
            print(load(args.model).summary())
            return 0
        if args.cmd == "bench":
            bench(load(args.model), batch=args.batch, threads=args.threads)
            return 0
        model_name = getattr(args, "model", "arm7")
        batch = getattr(args, "batch", 100_000)
        worst = paper_example()
        print()
        model = load(model_name)
        print(f"model {model_name!r}: {model.nbodies} bodies, nq {model.nq}, nv {model.nv}")
        bench(model, batch=batch)
        return 0 if worst < 1e-12 else 1
    except (ModelError, OSError, ValueError) as e:
        print(f"ejce-nb: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
