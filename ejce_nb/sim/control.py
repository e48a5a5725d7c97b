"""Compiled control laws: joint forces tau(t, q, qd) that ``ej.simulate``'s compiled time loop
evaluates at every stage of every step, at the stage's own time and state.

``control_law(fn, params)`` compiles the Python function

    def fn(t, q, qd, tau):            # or fn(t, q, qd, tau, params)
        tau[:] = ...                  # write the joint forces (tau arrives zeroed)

with Numba (``fn`` may be a plain function or an ``numba.njit`` dispatcher) and wraps it in a
``numba.cfunc`` of the fixed C signature

    void law(double t, double *q, double *qd, double *params, double *tau,
             int64 nq, int64 nv, int64 nparams)

The cached time-loop kernel is compiled once for every law: it receives only the wrapper's
address, an int64, and calls it through ``call_law`` (an ``inttoptr`` and a call), 0 meaning no
law.  Function objects never enter the cached kernels, so a new law costs no recompilation of
the simulation, only its own: Numba compiles ``fn`` and the wrapper once per process (typically
0.2-1 s; a cfunc made at run time is not kept in Numba's on-disk cache), and ``control_law``
keeps the result for the same ``fn``, so calling it again, or ``law.with_params(p)``, is free.
``params`` (a float64 array, (np,) or (B, np) for one row per trajectory of a batch) lets one
compiled law serve many gains and set points.
"""
import ctypes
import inspect

import numba
import numpy as np
from llvmlite import ir
from numba import carray, types
from numba.extending import intrinsic
from numba.np.arrayobj import make_array

SIGNATURE = types.void(types.float64, types.CPointer(types.float64), types.CPointer(types.float64),
                       types.CPointer(types.float64), types.CPointer(types.float64),
                       types.int64, types.int64, types.int64)

_COMPILED = {}      # (fn, takes params) -> compiled cfunc wrapper
_EMPTY = np.zeros(1)


@intrinsic
def call_law(typingctx, addr, t, q, qd, params, tau):
    """Call the control law at address ``addr`` (a ``SIGNATURE`` C function) on 1-D float64
    arrays: law(t, q, qd, params, tau, len(q), len(tau), len(params))."""
    arrays = (q, qd, params, tau)
    if not (isinstance(addr, types.Integer) and all(isinstance(a, types.Array) and a.ndim == 1
                                                    and a.dtype == types.float64 for a in arrays)):
        return None
    sig = types.void(addr, t, q, qd, params, tau)

    def codegen(context, builder, signature, args):
        dbl = ir.DoubleType()
        i64 = ir.IntType(64)
        dp = dbl.as_pointer()
        fnty = ir.FunctionType(ir.VoidType(), [dbl, dp, dp, dp, dp, i64, i64, i64])
        a = context.cast(builder, args[0], signature.args[0], types.int64)
        fptr = builder.inttoptr(a, fnty.as_pointer())
        tt = context.cast(builder, args[1], signature.args[1], types.float64)
        views = [make_array(ty)(context, builder, val) for ty, val in zip(signature.args[2:], args[2:])]
        ptrs = [builder.bitcast(v.data, dp) for v in views]
        n = [builder.extract_value(v.shape, 0) for v in views]
        builder.call(fptr, [tt, ptrs[0], ptrs[1], ptrs[2], ptrs[3], n[0], n[3], n[2]])
        return context.get_dummy_value()

    return sig, codegen


def _arity(fn):
    py = getattr(fn, "py_func", fn)
    try:
        params = inspect.signature(py).parameters.values()
    except (TypeError, ValueError):
        raise ValueError(f"control_law: cannot read the signature of {fn!r}") from None
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.KEYWORD_ONLY) for p in params):
        raise ValueError("control_law: fn must take exactly the positional arguments (t, q, qd, tau) "
                         "or (t, q, qd, tau, params)")
    return len(params)


def _compile(fn, with_params):
    key = (fn, with_params)
    w = _COMPILED.get(key)
    if w is not None:
        return w
    jfn = fn if isinstance(fn, numba.core.dispatcher.Dispatcher) else numba.njit(fn)

    if with_params:
        def wrapper(t, qp, vp, pp, up, nq, nv, npar):
            jfn(t, carray(qp, (nq,)), carray(vp, (nv,)), carray(up, (nv,)), carray(pp, (npar,)))
    else:
        def wrapper(t, qp, vp, pp, up, nq, nv, npar):
            jfn(t, carray(qp, (nq,)), carray(vp, (nv,)), carray(up, (nv,)))
    try:
        w = numba.cfunc(SIGNATURE)(wrapper)
    except Exception as e:       # noqa: BLE001 - Numba's typing errors come in many classes
        args = "(t, q, qd, tau, params)" if with_params else "(t, q, qd, tau)"
        raise ValueError(f"control_law: Numba cannot compile {getattr(fn, '__name__', fn)!r}{args} for float t "
                         f"and 1-D float64 arrays q, qd, tau{', params' if with_params else ''} "
                         f"(it must write tau in place and return nothing):\n{e}") from e
    _COMPILED[key] = w
    return w


def _params_array(params):
    if params is None:
        return None
    try:
        p = np.array(params, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"control_law: params must be an array of numbers, got {type(params).__name__}") from None
    if p.ndim == 0:
        p = p.reshape(1)
    if p.ndim not in (1, 2) or p.shape[-1] == 0:
        raise ValueError(f"control_law: params must have shape (np,) or (B, np) with np >= 1, got {p.shape}")
    if not np.all(np.isfinite(p)):
        raise ValueError("control_law: params contains NaN or inf")
    return np.ascontiguousarray(p)


class ControlLaw:
    """A compiled control law for ``ej.simulate(..., tau=law)`` (made by ``ej.control_law``).

    ``address`` is the C function's address, ``params`` its parameter array ((np,), or (B, np):
    one row per trajectory of a batch of B), ``fn`` the Python function.  ``law(t, q, qd,
    row=0)`` evaluates it from Python through the same compiled code (for checks; ``row``: the
    parameter row of a batch); ``law.with_params(p)`` is the same compiled law with other
    parameters."""

    def __init__(self, fn, cfunc, params, with_params):
        self.fn = fn
        self._cfunc = cfunc
        self._with_params = with_params
        self.params = params
        self.address = int(cfunc.address)

    def with_params(self, params):
        """The same compiled law with other parameters (no compilation)."""
        if not self._with_params:
            raise ValueError("this control law takes no params (its fn has 4 arguments)")
        p = _params_array(params)
        if p is None:
            raise ValueError("params is required")
        return ControlLaw(self.fn, self._cfunc, p, True)

    def param_rows(self, B):
        """The params as (1 or B, np) float64 rows for a run of B trajectories (None: one)."""
        if self.params is None:
            return _EMPTY.reshape(1, 1)
        p = self.params
        if p.ndim == 1:
            return p.reshape(1, -1)
        if B is None or p.shape[0] != B:
            want = "a single trajectory" if B is None else f"a batch of {B} trajectories"
            raise ValueError(f"the control law's params have shape {p.shape} (one row per trajectory) but the "
                             f"simulation has {want}")
        return p

    def __call__(self, t, q, qd, row=0):
        q = np.ascontiguousarray(q, dtype=np.float64)
        qd = np.ascontiguousarray(qd, dtype=np.float64)
        if q.ndim != 1 or qd.ndim != 1:
            raise ValueError("a control law evaluates one state: q (nq,) and qd (nv,)")
        tau = np.zeros(qd.shape[0])
        p = _EMPTY if self.params is None else (self.params if self.params.ndim == 1 else self.params[row])
        p = np.ascontiguousarray(p)
        dp = ctypes.POINTER(ctypes.c_double)
        self._cfunc.ctypes(float(t), q.ctypes.data_as(dp), qd.ctypes.data_as(dp), p.ctypes.data_as(dp),
                           tau.ctypes.data_as(dp), q.shape[0], qd.shape[0], p.shape[0])
        return tau

    def __repr__(self):
        name = getattr(self.fn, "__name__", repr(self.fn))
        p = "" if self.params is None else f", params {self.params.shape}"
        return f"<ej.ControlLaw {name}{p}>"


def control_law(fn, params=None):
    """Compile ``fn(t, q, qd, tau)`` or ``fn(t, q, qd, tau, params)`` (writing the joint forces
    into ``tau``, which arrives zeroed) into a ``ControlLaw`` for ``ej.simulate(..., tau=law)``.

    A PD controller about a set point, with gravity compensation at the set point as a feed
    forward (``ej.rnea(model, q_ref, 0, 0)``):

        def pd(t, q, qd, tau, p):            # p = [kp (nv), kd (nv), q_ref (nv), tau_ff (nv)]
            n = tau.shape[0]
            for k in range(n):
                tau[k] = p[k] * (p[2 * n + k] - q[k]) - p[n + k] * qd[k] + p[3 * n + k]

        law = ej.control_law(pd, np.concatenate([kp, kd, q_ref, tau_ff]))
        traj = ej.simulate(model, q0, qd0, 3.0, 1e-3, tau=law)

    ``fn`` is a plain function or a ``numba.njit`` dispatcher and returns nothing.  ``params``: a
    float array (np,), or (B, np) for one row per trajectory of a batch of B; given exactly when
    ``fn`` takes it.  The law runs inside the compiled loop at every stage, at the stage's time
    and state (a smooth law keeps the integrator's order).  It compiles once per process per
    ``fn`` (a new law never recompiles the simulation; a C callback made at run time is not in
    Numba's on-disk cache); ``law.with_params(p)`` is the same compiled law with other
    parameters.  A function that does not compile is a ``ValueError``."""
    if not callable(fn):
        raise ValueError(f"control_law: fn must be a function, got {type(fn).__name__}")
    n = _arity(fn)
    if n not in (4, 5):
        raise ValueError(f"control_law: fn must take (t, q, qd, tau) or (t, q, qd, tau, params), it takes {n} "
                         "arguments")
    p = _params_array(params)
    if n == 5 and p is None:
        raise ValueError("control_law: fn takes params but none were given (params=...)")
    if n == 4 and p is not None:
        raise ValueError("control_law: params were given but fn takes only (t, q, qd, tau)")
    return ControlLaw(fn, _compile(fn, n == 5), p, n == 5)
