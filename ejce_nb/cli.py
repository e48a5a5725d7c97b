"""The ``ejce-nb`` command (also ``python -m ejce_nb``).

  ejce-nb                     the paper's example, then a batch kinematics sweep on a shipped model
  ejce-nb info MODEL          summary of a model (shipped name, .json or .urdf)
  ejce-nb bench MODEL         throughput of batched kinematics on a model
  ejce-nb sweep MODEL --n N --quantities Q,... --out DIR
                              Monte Carlo sweep into a store (resumable; see ej.sweep)
  ejce-nb report DIR          summary table of a sweep, and a plot of histograms and workspace
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


def _count(text):
    """A positive integer, also written like 1e6."""
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if not x.is_integer() or x <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return int(x)


def run_sweep(args, out=None):
    """The ``sweep`` command: ej.sweep with a progress bar, then a line of figures."""
    import numba

    from . import sweep
    from .models import load
    out = out or sys.stdout
    if args.threads:
        numba.set_num_threads(args.threads)
    model = load(args.model)
    client = None
    if args.scheduler:
        try:
            from distributed import Client
        except ImportError:
            raise ValueError('--scheduler needs dask.distributed: pip install "ejce_nb[dask]"') from None
        client = Client(args.scheduler)
    try:
        res = sweep(model, args.n, args.quantities, args.out, chunk_size=args.chunk_size, seed=args.seed,
                    t=args.t, scheduler=client, progress=not args.no_progress,
                    store_inputs=not args.no_store_inputs)
    finally:
        if client is not None:
            client.close()
    info = res.run_info
    where = "on the Dask cluster" if client is not None else f"on {numba.get_num_threads()} thread(s)"
    if info["computed"]:
        rate = info["computed"] / max(info["seconds"], 1e-12)
        print(f"{res.path}: {info['computed']:,} states of {args.model} ({', '.join(res.quantities)}) in "
              f"{info['seconds']:.2f} s {where}: {rate:,.0f} states/s"
              + (f"; {info['resumed_chunks']} chunks were already done" if info["resumed_chunks"] else "")
              + (f"; {info['flagged']:,} samples flagged (see their status with ejce-nb report)"
                 if info["flagged"] else ""), file=out)
    else:
        print(f"{res.path}: all {res.n:,} states were already done", file=out)
    return 0


def run_report(args, out=None):
    """The ``report`` command: the summary table, recorded failures, and the plot."""
    from . import open_sweep
    out = out or sys.stdout
    res = open_sweep(args.dir)
    print(res.summary(), file=out)
    for f in res.failures():
        print(f"failed: chunk {f['chunk']} (samples {f['first']}..{f['stop'] - 1}): {f['reason']}", file=out)
    if not res.complete:
        print(f"missing: {res.n - res.n_done:,} states in {res.nchunks - len(res.chunks_done)} chunks; "
              "rerun the sweep with the same arguments to finish it", file=out)
    if not args.no_plot:
        path = res.plot(args.plot, bins=args.bins)
        print(f"wrote {path}", file=out)
    return 0


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
    p_sweep = sub.add_parser("sweep", help="Monte Carlo sweep of quantities over sampled states into a store")
    p_sweep.add_argument("model", help="shipped model name, .json or .urdf file")
    p_sweep.add_argument("--n", type=_count, required=True, help="number of states (1e6 is accepted)")
    p_sweep.add_argument("--quantities", required=True,
                         help="comma-separated: rnea, aba, mass_matrix, nonlinear_effects, kinetic_energy, "
                              "joint_terms, forward_kinematics:BODY, body_jacobian:BODY")
    p_sweep.add_argument("--out", required=True, help="directory of the store (rerun to resume)")
    p_sweep.add_argument("--chunk-size", type=_count, default=100_000)
    p_sweep.add_argument("--seed", type=int, default=0)
    p_sweep.add_argument("--t", type=float, default=0.0, help="time of every state (rheonomic models)")
    p_sweep.add_argument("--threads", type=int, default=None, help="Numba threads of this process")
    p_sweep.add_argument("--scheduler", default=None, help="address of a Dask scheduler to run the chunks on")
    p_sweep.add_argument("--no-progress", action="store_true", help="no progress bar")
    p_sweep.add_argument("--no-store-inputs", action="store_true",
                         help="do not store the sampled inputs: they are drawn again when read")
    p_report = sub.add_parser("report", help="summary table and plot of a sweep")
    p_report.add_argument("dir", help="directory of the sweep")
    p_report.add_argument("--plot", default=None, help="figure to write (default DIR.report.png)")
    p_report.add_argument("--no-plot", action="store_true", help="only the table")
    p_report.add_argument("--bins", type=_count, default=50)
    args = parser.parse_args(argv)

    from . import ModelError, SweepError
    from .models import load
    try:
        if args.cmd == "info":
            print(load(args.model).summary())
            return 0
        if args.cmd == "bench":
            bench(load(args.model), batch=args.batch, threads=args.threads)
            return 0
        if args.cmd == "sweep":
            return run_sweep(args)
        if args.cmd == "report":
            return run_report(args)
        model_name = getattr(args, "model", "arm7")
        batch = getattr(args, "batch", 100_000)
        worst = paper_example()
        print()
        model = load(model_name)
        print(f"model {model_name!r}: {model.nbodies} bodies, nq {model.nq}, nv {model.nv}")
        bench(model, batch=batch)
        return 0 if worst < 1e-12 else 1
    except SweepError as e:
        print(f"ejce-nb: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        if args.cmd != "sweep":
            raise
        print("ejce-nb: interrupted; the finished chunks are kept: run the same command again to resume",
              file=sys.stderr)
        return 130
    except (ModelError, OSError, ValueError) as e:
        print(f"ejce-nb: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
