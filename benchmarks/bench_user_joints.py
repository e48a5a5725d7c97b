"""User-defined joints beside the built-in joints they reproduce: ns per degree of freedom of the
compiled rnea and aba kernels on 100-body chains, one state, one thread.

    python benchmarks/bench_user_joints.py [--n 100] [--repeat 15]

The user joints are poses written with ``ej.jmath`` (a revolute joint about an oblique axis and a
Z-Y-X spherical joint); the library evaluates them on jets through their compiled wrapper, the
built-ins through their own paths.  "user/built-in" is the ratio of the times per degree of
freedom (the bound: within 2).  Both sides are checked to agree on the timed state.
"""
import argparse
import os
import sys

import numba
import numpy as np

import ejce_nb as ej
from ejce_nb import jmath as jm
from ejce_nb.models import chain, random_states

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_dynamics import best, kernel_runs  # noqa: E402

AXIS = (0.48, -0.6, 0.64)


def revolute_pose(q, t, p):
    return jm.rot((p[0], p[1], p[2]), q[0]), (0.0, 0.0, 0.0)


def zyx_pose(q, t, p):
    return jm.matmul(jm.matmul(jm.rot_z(q[0]), jm.rot_y(q[1])), jm.rot_x(q[2])), (0.0, 0.0, 0.0)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=100)
    p.add_argument("--repeat", type=int, default=15)
    args = p.parse_args(argv)
    numba.set_num_threads(1)
    J = ej.joints
    pairs = [("revolute (oblique axis)", J.Revolute(AXIS), J.Custom(revolute_pose, 1, params=AXIS, name="user_rev")),
             ("Z-Y-X spherical", J.Spherical("ZYX"),
              J.Custom(zyx_pose, 3, name="user_zyx", q_range=[(-3, 3), (-1.2, 1.2), (-3, 3)]))]
    print(f"{args.n}-body chains, one state, 1 thread: ns per degree of freedom of the compiled kernels "
          f"(best of {args.repeat})")
    print(f"{'joint':<26}{'built-in rnea':>14}{'user rnea':>11}{'ratio':>7}{'built-in aba':>14}{'user aba':>10}"
          f"{'ratio':>7}")
    for name, builtin, user in pairs:
        times = {}
        ref = None
        for side, joint in (("builtin", builtin), ("user", user)):
            model = chain(args.n, joint)
            rng = np.random.default_rng(0)
            q, qd, qdd = random_states(model, 1, rng)
            if ref is None:
                ref = (q, qd, qdd)
            q, qd, qdd = ref
            tau = ej.rnea(model, q[0], qd[0], qdd[0])
            times[side + "_tau"] = tau
            runs = kernel_runs(model, q[0], qd[0], qdd[0], tau)
            reps = max(1, 20000 // args.n)
            times[side] = [best(runs[k], args.repeat, reps) / model.nv * 1e9 for k in ("kernel_rnea", "kernel_aba")]
        err = np.abs(times["user_tau"] - times["builtin_tau"]).max() / max(1.0, np.abs(times["builtin_tau"]).max())
        (br, ba), (ur, ua) = times["builtin"], times["user"]
        print(f"{name:<26}{br:>14.1f}{ur:>11.1f}{ur / br:>7.2f}{ba:>14.1f}{ua:>10.1f}{ua / ba:>7.2f}"
              f"   (rnea agree to {err:.0e})")


if __name__ == "__main__":
    main()
