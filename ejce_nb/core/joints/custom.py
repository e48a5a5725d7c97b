"""Joints defined by a Python pose function: ``ej.joints.Custom``.

A user writes only the pose of the outboard frame C in the inboard frame P,

    def pose(q, t, p):          # q: the joint's coordinates, t: time, p: its parameters
        ...                     # ordinary arithmetic and ejce_nb.jmath
        return R, r             # R: three rows of three entries, r: three entries

and the library evaluates it on jets (``joints.jet``) to get the joint's exact J, sigma and bias
(EJCE.md section 1): no derivative is written by hand.  ``transform=`` takes a function returning
a 4 x 4 homogeneous transform (its rows) instead, and ``inboard=`` / ``outboard=`` functions of
(t, p) returning a pose move the joint's frames with time (the pose of C in P is then
inboard(t) pose(q, t) outboard(t)^-1).

The pose function is compiled by Numba once per process into a C-callable wrapper (a
``numba.cfunc``) that evaluates it on jets and turns the result into the EJCE terms; the cached
kernels call it through its address, kept in the model's tables, so they need no new compile and
the on-disk cache keeps working.  The wrapper itself, made at run time for each pose function, is
not in Numba's on-disk cache: the first model with a given pose function pays its compile (about a
second or two) in every new process.

The velocities of a custom joint are its coordinate rates (nv = nq <= 6).
"""
import ctypes

import numba
import numpy as np
from numba import types

from ...errors import ModelError
from . import codes as C
from .specs import READERS, JointSpec
from .. import jmath
from .jet import jet_from, jet_seed
from .user_terms import extract

CUSTOM = C.CUSTOM
OUT_SIZE = 24           # R (9), r (3), twist (6), bias (6); J's columns go to their own buffer
_REGISTRY = {}
_WRAPPERS = {}


def _wrapper_source(nq, npar, kind, inboard, outboard):
    """Source of the cfunc wrapper for a pose function of nq coordinates."""
    G = max(nq, 1)
    seeds = ", ".join(f"jet_seed(q[{k}], v[{k}], {k}, {G})" for k in range(nq))
    seeds = f"({seeds},)" if nq else "()"
    zeros = ", ".join(["0.0"] * G)
    lines = [
        "def wrapper(qp, vp, t, pp, op, jp):",
        f"    q = carray(qp, ({max(nq, 1)},))",
        f"    v = carray(vp, ({max(nq, 1)},))",
        f"    p = carray(pp, ({max(npar, 1)},))",
        f"    out = carray(op, ({OUT_SIZE},))",
        "    JP = carray(jp, (6, 6))",
        f"    qj = {seeds}",
        f"    tj = jet_from((t, 1.0, 0.0, {zeros}), {G})",
        "    res = user(qj, tj, p)",
    ]
    if kind == "transform":
        lines.append("    res = from_transform(res)")
    if inboard is not None:
        lines.append("    res = compose(inboard_fn(tj, p), res)")
    if outboard is not None:
        lines.append("    res = compose(res, inverse(outboard_fn(tj, p)))")
    lines.append(f"    extract(res[0], res[1], tj, out, JP, {nq})")
    return "\n".join(lines)


def _compiled(spec):
    """(cfunc, address) of the wrapper of ``spec``'s pose function, made once per process."""
    key = (spec.pose_fn, spec.kind, spec.nq, len(spec.p), spec.inboard_fn, spec.outboard_fn)
    got = _WRAPPERS.get(key)
    if got is not None:
        return got

    def njit(f):
        return f if isinstance(f, numba.core.dispatcher.Dispatcher) else numba.njit(f)

    env = {"carray": numba.carray, "jet_seed": jet_seed, "jet_from": jet_from, "extract": extract,
           "user": njit(spec.pose_fn), "from_transform": jmath.from_transform, "compose": jmath.compose,
           "inverse": jmath.inverse,
           "inboard_fn": None if spec.inboard_fn is None else njit(spec.inboard_fn),
           "outboard_fn": None if spec.outboard_fn is None else njit(spec.outboard_fn)}
    src = _wrapper_source(spec.nq, len(spec.p), spec.kind, spec.inboard_fn, spec.outboard_fn)
    exec(compile(src, f"<ejce_nb custom joint {spec.name!r}>", "exec"), env)
    ptr = types.CPointer(types.float64)
    sig = types.void(ptr, ptr, types.float64, ptr, ptr, ptr)
    try:
        cf = numba.cfunc(sig)(env["wrapper"])
    except numba.core.errors.NumbaError as e:     # the user's code, with Numba's explanation
        raise ModelError(f"Custom joint {spec.name!r}: its pose function does not compile for jets: "
                         f"{type(e).__name__}: {e}") from None
    got = _WRAPPERS[key] = (cf, int(cf.address))
    return got


def evaluate(spec, q, v=None, t=0.0):
    """The EJCE terms of ``spec`` at (q, v, t) by its compiled wrapper, in P axes:
    (R (3, 3), r (3,), J (6, nq), twist (6,), bias (6,)).  For checks and tests."""
    cf, _ = _compiled(spec)
    n = spec.nq
    qa = np.zeros(max(n, 1))
    va = np.zeros(max(n, 1))
    qa[:n] = np.asarray(q, dtype=float).reshape(n)
    if v is not None:
        va[:n] = np.asarray(v, dtype=float).reshape(n)
    pa = np.zeros(max(len(spec.p), 1))
    pa[:len(spec.p)] = spec.p
    out = np.zeros(OUT_SIZE)
    JP = np.zeros((6, 6))
    P = ctypes.POINTER(ctypes.c_double)
    cf.ctypes(qa.ctypes.data_as(P), va.ctypes.data_as(P), float(t), pa.ctypes.data_as(P),
              out.ctypes.data_as(P), JP.ctypes.data_as(P))
    return out[:9].reshape(3, 3), out[9:12].copy(), JP[:n].T.copy(), out[12:18].copy(), out[18:24].copy()


class Custom(JointSpec):
    """A user-defined joint, given by exactly one of its pose function ``pose(q, t, p) -> (R, r)``
    (R three rows of three entries, r three entries: the pose of C in P) or ``transform(q, t, p)``
    returning a 4 x 4 homogeneous transform (its rows, at least the first three).

    The function is written with ordinary arithmetic and ``ej.jmath``: a plain function or a
    ``numba.njit`` dispatcher (functions it calls must be compiled too).  ``q`` holds the joint's
    ``nq`` coordinates (0 <= nq <= 6), ``t`` the time, ``p`` the float array of ``params``.  The
    velocities are the coordinate rates (nv = nq).

    ``inboard(t, p)`` / ``outboard(t, p)``: functions returning poses ``(R, r)`` that move the
    inboard / outboard frame with time; the pose of C in P is then
    ``inboard(t) . pose(q, t) . outboard(t)^-1``.  ``name`` (default: the function's
    ``__name__``) identifies the joint in model files (``register``).  ``q_range``: ``(low,
    high)`` for every coordinate, or one pair per coordinate: where the pose is valid, sampled by
    the checks made when the joint is created and by ``ej.check_joint``.

    The pose is evaluated on jets for its exact J, sigma and bias.  A pose that does not compile,
    is not finite or whose R is not a rotation (at five sample points of ``q_range``) is refused
    with ``ej.ModelError``.  ``joint.with_params(params)`` is the same joint with other
    parameters.  The compiled wrapper of a pose function is made once per process (it is not in
    Numba's on-disk cache: one to a few seconds in each new process)."""
    code = CUSTOM

    def __init__(self, pose=None, nq=None, params=(), name=None, transform=None, inboard=None, outboard=None,
                 q_range=(-1.0, 1.0)):
        if (pose is None) == (transform is None):
            raise ModelError("Custom joint: give exactly one of pose= (returning R, r) and transform= "
                             "(returning a 4 x 4 homogeneous transform)")
        fn = pose if pose is not None else transform
        if not callable(fn):
            raise ModelError(f"Custom joint: the pose function must be callable, got {fn!r}")
        for what, f in (("inboard", inboard), ("outboard", outboard)):
            if f is not None and not callable(f):
                raise ModelError(f"Custom joint: {what} must be a function of (t, p), got {f!r}")
        if isinstance(nq, bool) or not isinstance(nq, (int, np.integer)) or not 0 <= nq <= C.MAX_NV:
            raise ModelError(f"Custom joint: nq must be an integer 0..{C.MAX_NV}, got {nq!r}")
        self.pose_fn = fn
        self.kind = "pose" if pose is not None else "transform"
        self.inboard_fn = inboard
        self.outboard_fn = outboard
        self.nq = self.nv = int(nq)
        try:
            self.p = np.array(params, dtype=float).reshape(-1)
        except (TypeError, ValueError):
            raise ModelError(f"Custom joint: params must be numbers, got {params!r}") from None
        if not np.all(np.isfinite(self.p)):
            raise ModelError(f"Custom joint: params must be finite, got {params!r}")
        self.p.flags.writeable = False
        self.name = name if name is not None else getattr(fn, "__name__", "custom")
        if not isinstance(self.name, str) or not self.name:
            raise ModelError(f"Custom joint: name must be a non-empty string, got {name!r}")
        lo, hi = np.broadcast_to(np.array(q_range, dtype=float).reshape(-1, 2), (max(self.nq, 1), 2)).T
        self.q_low, self.q_high = lo[:self.nq].copy(), hi[:self.nq].copy()
        self._validate()

    def _validate(self):
        """Refuse a pose that does not compile, is not finite or whose R is not a rotation at a
        few points of the coordinates' range (``ej.check_joint`` looks closer)."""
        rng = np.random.default_rng(0)
        for k in range(5):
            q = self.q_low + (self.q_high - self.q_low) * rng.uniform(size=self.nq)
            t = float(rng.uniform(0.0, 1.0)) if k else 0.0
            R, r, J, tw, b = evaluate(self, q, rng.normal(size=self.nq), t)
            if not (np.all(np.isfinite(R)) and np.all(np.isfinite(r)) and np.all(np.isfinite(J))
                    and np.all(np.isfinite(tw)) and np.all(np.isfinite(b))):
                raise ModelError(f"Custom joint {self.name!r}: the pose or its derivatives are not finite at "
                                 f"q = {q.tolist()}, t = {t:g}")
            err = float(np.abs(R.T @ R - np.eye(3)).max())
            if err > 1e-9 or np.linalg.det(R) < 0:
                raise ModelError(f"Custom joint {self.name!r}: R is not a rotation at q = {q.tolist()}, t = {t:g} "
                                 f"(|R^T R - 1| = {err:.2e}, det = {np.linalg.det(R):.6g})")

    def params(self):
        return [float(x) for x in self.p]

    def address(self):
        """Address of the compiled wrapper in this process (the kernels call it)."""
        return _compiled(self)[1]

    def is_rheonomic(self):
        """True when the pose moves with time alone (checked numerically at a few points)."""
        rng = np.random.default_rng(1)
        for _ in range(3):
            q = self.q_low + (self.q_high - self.q_low) * rng.uniform(size=self.nq)
            _, _, _, tw, b = evaluate(self, q, np.zeros(self.nq), float(rng.uniform()))
            if np.any(np.abs(tw) > 0.0) or np.any(np.abs(b) > 0.0):
                return True
        return False

    def with_params(self, params):
        """The same joint with other parameters."""
        return Custom(**{("pose" if self.kind == "pose" else "transform"): self.pose_fn}, nq=self.nq,
                      params=params, name=self.name, inboard=self.inboard_fn, outboard=self.outboard_fn,
                      q_range=np.stack([self.q_low, self.q_high], axis=1) if self.nq else (-1.0, 1.0))

    def to_dict(self):
        return {"type": "Custom", "name": self.name, "params": self.p.tolist()}

    def __eq__(self, other):
        return (type(other) is Custom and other.pose_fn is self.pose_fn and other.kind == self.kind
                and other.nq == self.nq and np.array_equal(other.p, self.p) and other.name == self.name
                and other.inboard_fn is self.inboard_fn and other.outboard_fn is self.outboard_fn)

    def __hash__(self):
        return hash((self.name, self.nq))

    def __repr__(self):
        return f"Custom({self.name!r}, nq={self.nq}, params={self.p.tolist()})"

    def __reduce__(self):
        # the pose function travels by reference (a module-level function); the wrapper is made
        # again in the process that unpickles it
        fn_kw = "pose" if self.kind == "pose" else "transform"
        return (_rebuild, (fn_kw, self.pose_fn, self.nq, self.p.tolist(), self.name, self.inboard_fn,
                           self.outboard_fn, np.stack([self.q_low, self.q_high], axis=1).tolist()))


def _rebuild(fn_kw, fn, nq, params, name, inboard, outboard, q_range):
    return Custom(**{fn_kw: fn}, nq=nq, params=params, name=name, inboard=inboard, outboard=outboard,
                  q_range=q_range if nq else (-1.0, 1.0))


# ---------------------------------------------------------------------------- model files
def register(joint, name=None):
    """Make a Custom joint known to model files under ``name`` (default: its own name); a JSON
    joint ``{"type": "Custom", "name": ..., "params": [...]}`` then loads as this joint with the
    file's parameters (a name not registered in the session is an ``ej.ModelError``).  Returns
    the joint."""
    if not isinstance(joint, Custom):
        raise ModelError(f"register: expected an ej.joints.Custom joint, got {joint!r}")
    key = joint.name if name is None else name
    if not isinstance(key, str) or not key:
        raise ModelError(f"register: the name must be a non-empty string, got {key!r}")
    if key != joint.name:
        joint = Custom(**{("pose" if joint.kind == "pose" else "transform"): joint.pose_fn}, nq=joint.nq,
                       params=joint.p, name=key, inboard=joint.inboard_fn, outboard=joint.outboard_fn)
    _REGISTRY[key] = joint
    return joint


def registered():
    """{name: joint} of the registered Custom joints."""
    return dict(_REGISTRY)


def from_dict(d, where):
    unknown = set(d) - {"type", "name", "params"}
    if unknown:
        raise ModelError(f"{where}: unknown fields {sorted(unknown)} for Custom (expected 'name', 'params')")
    name = d.get("name")
    if not isinstance(name, str):
        raise ModelError(f"{where}.name: a Custom joint needs the name it was registered under, got {name!r}")
    joint = _REGISTRY.get(name)
    if joint is None:
        known = ", ".join(sorted(_REGISTRY)) or "none"
        raise ModelError(f"{where}: the user joint {name!r} is not registered in this Python session: define its "
                         f"pose function and call ej.joints.register(ej.joints.Custom(..., name={name!r})) "
                         f"before loading the file (on the command line: ejce-nb ... --joints FILE.py, a Python "
                         f"file that defines and registers it, e.g. examples/user_joints.py; registered: {known})")
    params = d.get("params", joint.p.tolist())
    if not isinstance(params, list) or any(isinstance(x, bool) or not isinstance(x, (int, float)) for x in params):
        raise ModelError(f"{where}.params: expected a list of numbers, got {params!r}")
    if len(params) != len(joint.p):
        raise ModelError(f"{where}.params: the joint {name!r} takes {len(joint.p)} parameters, got {len(params)}")
    return joint.with_params(params)


READERS["Custom"] = from_dict
