"""Compile ahead of use: fill the on-disk cache with the kernels that models need
(``ejce-nb compile``), for Docker images, clusters and CI runners.

A kernel is compiled for the *kind* of a model (its joint paths, couplers and loops), never for
its size: models of one kind share every kernel, so each kind is compiled once.  The work is
shared out between processes (Numba compiles in one thread per process); each prints what it
compiled and how long it took.  A later process on the same version of the package, Numba and
kind of CPU loads the kernels from the cache (``_jit``: the cache does not depend on where the
package is installed, so a cache made once serves a second virtual environment or a copied
image).
"""
import argparse
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
import multiprocessing

import numpy as np

# the public functions whose kernels ``ejce-nb compile`` makes: by default the first four (one
# state and a batch each); ``--all`` every one (those that apply to the model)
BASIC = ("rnea", "aba", "mass_matrix", "forward_kinematics")
FUNCTIONS = BASIC + ("joint_terms", "body_jacobian", "kinetic_energy", "derivatives", "simulate",
                     "constrained_dynamics")


def _calls(model, name):
    """The calls of the public function ``name`` that compile its kernels on ``model``: one state
    and a batch."""
    import ejce_nb as ej
    from ejce_nb.io.zoo import random_states

    if name == "constrained_dynamics":
        if not model.has_loops:
            return []
        z = np.zeros(model.nv)
        try:
            q = ej.assemble(model, model.neutral())
        except ej.ConstraintError:      # a configuration that does not close compiles the same kernels
            q = model.neutral()
        return [lambda: ej.constrained_dynamics(model, q, z, z, redundant="lstsq")]
    Q, V, A = random_states(model, 8, 0)
    q, v, a = Q[0], V[0], A[0]
    body = model.nbodies
    # the tree's functions of a model with loops are compiled on its open tree (the same kernels, no warning)
    model = model.open_tree() if name in ("rnea", "aba", "mass_matrix", "derivatives") else model
    if name == "rnea":
        return [lambda: ej.rnea(model, q, v, a), lambda: ej.rnea(model, Q, V, A)]
    if name == "aba":
        return [lambda: ej.aba(model, q, v, a), lambda: ej.aba(model, Q, V, A)]
    if name == "mass_matrix":
        return [lambda: ej.mass_matrix(model, q), lambda: ej.mass_matrix(model, Q)]
    if name == "forward_kinematics":
        return [lambda: ej.forward_kinematics(model, q, v, a), lambda: ej.forward_kinematics(model, Q, V, A)]
    if name == "joint_terms":
        return [lambda: ej.joint_terms(model, q, v), lambda: ej.joint_terms(model, Q, V)]
    if name == "body_jacobian":
        return [lambda: ej.body_jacobian(model, q, body), lambda: ej.body_jacobian(model, Q, body)]
    if name == "kinetic_energy":
        return [lambda: ej.kinetic_energy(model, q, v), lambda: ej.kinetic_energy(model, Q, V)]
    if name == "derivatives":
        return [lambda: ej.rnea_derivatives(model, q, v, a), lambda: ej.aba_derivatives(model, q, v, a),
                lambda: ej.rnea_derivatives(model, Q, V, A), lambda: ej.aba_derivatives(model, Q, V, A)]
    if name == "simulate":
        return [lambda: ej.simulate(model, q, v, 2e-3, 1e-3, method="rk4", progress=False),
                lambda: ej.simulate(model, q, v, 2e-3, 1e-3, method="dopri5", progress=False)]
    raise ValueError(f"unknown function {name!r}; expected one of {', '.join(FUNCTIONS)}")


def _load(spec):
    """The model of ``spec`` = (name or file, --joints files, --floating-base)."""
    from .cli import load_model

    name, joint_files, floating_base = spec
    return load_model(argparse.Namespace(model=name, joints=list(joint_files), floating_base=floating_base))


def kind(model):
    """What the kernels of ``model`` depend on besides the types of their arguments: models of the
    same kind share every compiled kernel."""
    from .model.layout import H_LANES

    km = model.kernel_model()
    return km._paths, int(km._mb[H_LANES]), bool(model.has_couplers), model.has_loops


def _task(spec, name):
    """Compile (or load) the kernels of function ``name`` on the model of ``spec``, in this
    process: (model, function, seconds, seconds of compiling, error or None)."""
    from ._jit import compile_seconds

    t0, c0 = time.perf_counter(), compile_seconds()
    try:
        model = _load(spec)
        for call in _calls(model, name):
            call()
        err = None
    except Exception as e:          # noqa: BLE001 - reported with its model and function
        err = f"{type(e).__name__}: {e}"
    return spec[0], name, time.perf_counter() - t0, compile_seconds() - c0, err


def plan(specs, functions):
    """(the (spec, function) pairs to run: each function once per kind of model, the number of
    kinds).  Every model is loaded here, so that one that does not load is an error before any
    process starts."""
    tasks, seen, kinds = [], set(), set()
    for spec in specs:
        model = _load(spec)
        kinds.add(kind(model))
        for name in functions:
            if name == "constrained_dynamics" and not model.has_loops:
                continue
            key = (kind(model), name)
            if key not in seen:
                seen.add(key)
                tasks.append((spec, name))
    return tasks, len(kinds)


def precompile(specs, functions=BASIC, processes=None, out=None):
    """Compile the kernels of ``functions`` for the models ``specs`` ((name or file, joint files,
    floating base) each) into the on-disk cache, in ``processes`` processes (default: one per
    CPU, at most one per task).  Returns the number of tasks that failed."""
    from ._jit import CACHE, CACHE_DIR

    out = out or sys.stdout
    tasks, kinds = plan(specs, functions)
    if not CACHE:
        print("ejce-nb compile: the on-disk cache is off (EJCE_NB_CACHE=0): nothing would be kept", file=out)
        return 1
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:
        cpus = os.cpu_count() or 1
    n = max(1, min(processes or cpus, len(tasks)))
    print(f"compiling {len(tasks)} function(s) for {kinds} kind(s) of model in {n} process(es) into {CACHE_DIR}",
          file=out, flush=True)
    t0 = time.perf_counter()
    failed = 0
    if n == 1:
        results = (_task(*t) for t in tasks)
    else:
        pool = ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("spawn"))
        results = pool.map(_task, *zip(*tasks))
    for model, name, dt, ct, err in results:
        if err is None:
            print(f"  {model}: {name:20s} {dt:6.1f} s ({'compiled' if ct > 0 else 'from the cache'})", file=out,
                  flush=True)
        else:
            failed += 1
            print(f"  {model}: {name:20s} failed: {err}", file=out, flush=True)
    if n > 1:
        pool.shutdown()
    print(f"done in {time.perf_counter() - t0:.1f} s", file=out)
    return failed
