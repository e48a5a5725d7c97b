"""The one input layer of every public function: shapes, dtypes and batch axes (Python), NaN,
inf and quaternion norms (in the kernels, per sample), mimic expansion, and the errors that
name what is wrong.

The kernels check each state they are handed (``check``) and report a status per sample instead
of failing: a batch is never refused whole for one bad sample (``errors="flag"``), and a single
call pays nothing for the checks in Python.  When a status is not OK, ``raise_status`` turns it
into the error that names the array, the joint and the sample.
"""
import warnings

import numpy as np

from .._jit import jit
from ..core.lanes import LANES, gather
from .couplers import Coupling
from .joint_rank import lock_distance
from ..errors import BAD_SHAPE, NearSingularWarning, SingularJointError, Status

ANY = "any"
# the status codes as plain integers, for the kernels
OK = int(Status.OK)
NONFINITE = int(Status.NONFINITE_INPUT)
QUAT_NOT_UNIT = int(Status.QUATERNION_NOT_UNIT)
SINGULAR_JOINT = int(Status.SINGULAR_JOINT)
SINGULAR_ARTICULATED = int(Status.SINGULAR_ARTICULATED_INERTIA)
SINGULAR_MASS = int(Status.SINGULAR_MASS_MATRIX)
NEAR_SINGULAR = int(Status.NEAR_SINGULAR_JOINT)
# a quaternion block further than this from unit norm is refused (the pose normalises it)
QUAT_TOL = 1e-3
# a joint's Jacobian counts as rank deficient for forward dynamics when one of its normalised
# columns lies within SINGULAR_RANK (the sine of the angle) of the span of the others (1e-6 rad
# of a gimbal lock: D = S^T I S would then have a condition number beyond 1e12), and near a lock
# within NEAR_RANK (computed, with a warning); RANK_TOL is exact rank loss (to rounding)
RANK_TOL = 1e-10
SINGULAR_RANK = 1e-6
NEAR_RANK = 1e-4
# a column of S this short counts as zero (the joint does not move along that coordinate)
ZERO_COLUMN = 1e-12


# ---------------------------------------------------------------------------- in the kernels
@jit(forceinline=True)
def check(m, q, v, a, level, t):
    """(status, joint) of one state: q always, v from level 1, a (qdd or tau) at level 2.
    Inlined where it is called (a call would copy the model's views)."""
    n1 = m.body_parent.shape[0]
    nq = m.jnt_qadr[n1 - 1] + m.jnt_nq[n1 - 1]
    nv = m.jnt_dofadr[n1 - 1] + m.jnt_nv[n1 - 1]
    if q.shape[0] != nq or (level >= 1 and v.shape[0] != nv) or (level >= 2 and a.shape[0] != nv):
        return BAD_SHAPE, -1
    if not np.isfinite(t):
        return NONFINITE, -1
    for k in range(nq):
        if not np.isfinite(q[k]):
            return NONFINITE, -1
    for k in range(nv if level >= 1 else 0):
        if not np.isfinite(v[k]):
            return NONFINITE, -1
    for k in range(nv if level >= 2 else 0):
        if not np.isfinite(a[k]):
            return NONFINITE, -1
    for i in range(1, n1):
        o = m.jnt_quat[i]
        if o >= 0:
            s = m.jnt_qadr[i] + o
            n = np.sqrt(q[s] * q[s] + q[s + 1] * q[s + 1] + q[s + 2] * q[s + 2] + q[s + 3] * q[s + 3])
            if not abs(n - 1.0) <= QUAT_TOL:
                return QUAT_NOT_UNIT, i
    return OK, -1


@jit
def group_ok(m, Q, V, A, level, T, b):
    """Whether ``check`` accepts each of the LANES states b, b + 1, ... of a batch, tested on
    lanes (each entry times 0 is 0 only when finite; the quaternion norms as ``check`` computes
    them); False: some state may not pass, to be checked one by one."""
    n1 = m.body_parent.shape[0]
    nq = m.jnt_qadr[n1 - 1] + m.jnt_nq[n1 - 1]
    nv = m.jnt_dofadr[n1 - 1] + m.jnt_nv[n1 - 1]
    if Q.shape[1] != nq or (level >= 1 and V.shape[1] != nv) or (level >= 2 and A.shape[1] != nv):
        return False
    z = gather(T, b, 1) * 0.0
    for k in range(nq):
        z = z + gather(Q, b * nq + k, nq) * 0.0
    for k in range(nv if level >= 1 else 0):
        z = z + gather(V, b * nv + k, nv) * 0.0
    for k in range(nv if level >= 2 else 0):
        z = z + gather(A, b * nv + k, nv) * 0.0
    if not z == 0.0:
        return False
    for i in range(1, n1):
        o = m.jnt_quat[i]
        if o >= 0:
            s = b * nq + m.jnt_qadr[i] + o
            w = gather(Q, s, nq)
            x = gather(Q, s + 1, nq)
            y = gather(Q, s + 2, nq)
            u = gather(Q, s + 3, nq)
            d = np.sqrt(w * w + x * x + y * y + u * u) - 1.0
            if not (d <= QUAT_TOL and d >= -QUAT_TOL):
                return False
    return True


@jit
def check_group(m, Q, V, A, zero_a, zv, T, b, status):
    """The status of each of the LANES states b, b + 1, ... of a batch into ``status``: at once
    where ``group_ok`` accepts the group, else state by state (``check``); whether all are OK.
    ``zero_a``: no accelerations or forces are given (A has no columns), the states take zv."""
    if group_ok(m, Q, V, A, 1 if zero_a else 2, T, b):
        for b1 in range(b, b + LANES):
            status[b1, 0] = OK
            status[b1, 1] = -1
        return True
    ok = True
    for b1 in range(b, b + LANES):
        st, j = check(m, Q[b1], V[b1], zv if zero_a else A[b1], 2, T[b1])
        status[b1, 0] = st
        status[b1, 1] = j
        ok = ok and st == OK
    return ok


@jit
def subspace_residual(S, vs, nvj, W):
    """How far the rows of S[vs:vs+nvj] are from losing rank: the smallest distance of a
    normalised row from the span of the others (1: orthogonal, 0: dependent or a zero row), by
    modified Gram-Schmidt, twice (W: 6 x 6 scratch)."""
    worst = 1.0
    for k in range(nvj):
        s = 0.0
        for x in range(6):
            s += S[vs + k, x] * S[vs + k, x]
        n = np.sqrt(s)
        if not n > ZERO_COLUMN:
            return 0.0
        for x in range(6):
            W[k, x] = S[vs + k, x] / n
        for _ in range(2):
            for j in range(k):
                p = 0.0
                for x in range(6):
                    p += W[j, x] * W[k, x]
                for x in range(6):
                    W[k, x] -= p * W[j, x]
        s = 0.0
        for x in range(6):
            s += W[k, x] * W[k, x]
        n = np.sqrt(s)
        if n < worst:
            worst = n
        if not n > 0.0:
            return 0.0
        for x in range(6):
            W[k, x] /= n
    return worst


# ---------------------------------------------------------------------------- in Python
def state_array(x, n, name, B=ANY):
    """``x`` as float64 C-contiguous (n,) or (B, n); returns (array, batch size or None).

    B = ANY: x may set the batch size; None: a single state, x must be (n,); an int: (B, n)."""
    if x is None:
        raise ValueError(f"{name} is required")
    a = real_array(x, name)
    if a.ndim == 1:
        if a.shape[0] != n:
            raise ValueError(f"{name} must have shape ({n},) or (B, {n}), got {a.shape}")
        if B is not None and B is not ANY:
            raise ValueError(f"{name} has no batch axis but the other arguments have B = {B}; "
                             f"expected shape ({B}, {n})")
        return a, None
    if a.ndim == 2:
        if a.shape[1] != n:
            raise ValueError(f"{name} must have shape ({n},) or (B, {n}), got {a.shape}")
        if B is None:
            raise ValueError(f"{name} has a batch axis (shape {a.shape}) but the state it belongs to "
                             f"has none; expected shape ({n},)")
        if a.shape[0] == 0:
            raise ValueError(f"{name} has an empty batch axis")
        if B is not ANY and a.shape[0] != B:
            raise ValueError(f"{name} has batch size {a.shape[0]} but the other arguments have B = {B}")
        return a, a.shape[0]
    raise ValueError(f"{name} must have shape ({n},) or (B, {n}), got {a.shape}")


def real_array(x, name):
    """x as a writeable C-contiguous float64 array; real numbers only (not complex, bool, text)."""
    try:
        a = np.asarray(x)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an array of numbers, got {type(x).__name__}") from None
    if a.dtype.kind not in "fiu":
        if a.dtype.kind == "O":
            try:
                a = np.asarray(a.tolist(), dtype=np.float64)
            except (TypeError, ValueError):
                raise ValueError(f"{name} must be an array of real numbers, got {type(x).__name__} "
                                 "with entries that are not numbers") from None
        else:
            what = {"c": "complex numbers", "b": "booleans", "U": "text", "S": "bytes"}.get(a.dtype.kind, str(a.dtype))
            raise ValueError(f"{name} must be an array of real numbers, got {what}")
    a = np.asarray(a, dtype=np.float64)
    if not (a.flags.c_contiguous and a.flags.writeable):
        a = a.copy(order="C")   # the kernels are compiled for writeable C-contiguous arrays only
    return a


def time_array(t, B, name="t"):
    """``t`` as a (max(B, 1),) float64 array from a float (or, for a batch, a (B,) array)."""
    a = np.array(real_array(t, name), copy=True)
    if a.ndim == 0:
        if not np.isfinite(a):
            raise ValueError(f"{name} is {float(a)}; a finite time is required")
        return np.full(1 if B is None else B, float(a))
    if B is None or a.shape != (B,):
        raise ValueError(f"{name} must be a float" + ("" if B is None else f" or an array of shape ({B},)")
                         + f", got shape {a.shape}")
    return np.ascontiguousarray(a)


def states(model, q, vectors, t):
    """Validate q (nq,) / (B, nq), the (array, name) pairs of velocity-sized arrays and t; returns
    (B or None, q2, [v2 ...], t1) with a batch axis always present (B = 1 for one state)."""
    q, B = state_array(q, model.nq, "q")
    n = 1 if B is None else B
    out = []
    for x, name in vectors:
        a, _ = state_array(x, model.nv, name, B)
        out.append(a.reshape(n, model.nv))
    return B, q.reshape(n, model.nq), out, time_array(t, B)


def fext_array(model, f_ext, B):
    """f_ext as (0 or 1 or B, N+1, 6) float64 (0 rows: none); row 0, the world, is ignored."""
    n1 = model.nbodies + 1
    if f_ext is None:
        return np.zeros((0, n1, 6))
    try:
        a = np.ascontiguousarray(f_ext, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"f_ext must be an array of numbers, got {type(f_ext).__name__}") from None
    want = f"({n1}, 6)" + ("" if B is None else f" or ({B}, {n1}, 6)")
    if not a.flags.writeable:
        a = a.copy()
    if a.shape == (n1, 6):
        a = a.reshape(1, n1, 6)
    elif not (B is not None and a.shape == (B, n1, 6)):
        raise ValueError(f"f_ext must have shape {want} (one world-frame wrench [moment about the body "
                         f"origin; force] per body, row 0 the world), got {a.shape}")
    fin = np.isfinite(a[:, 1:])
    if not np.all(fin):
        bad = np.argwhere(~fin)[0]
        body = model.body_names[int(bad[1]) + 1]
        where = f"sample {int(bad[0])}, " if a.shape[0] > 1 else ""
        raise ValueError(f"f_ext contains NaN or inf ({where}body {body!r})")
    return a


def unbatch(B, x):
    return x[0] if B is None else x


# ---------------------------------------------------------------------------- couplers
def kernel_model(model):
    """(the model the kernels run on, its ``couplers.Coupling`` map or None): a model with
    couplers (mimic joints among them) runs as its expansion."""
    if not model.has_couplers:
        return model, None
    return model.expanded(), Coupling(model)


# ---------------------------------------------------------------------------- errors
def _nonfinite_message(names, arrays, t1, b, batch):
    where = f" in sample {b}" if batch else ""
    for name, a in zip(names, arrays):
        row = a[b]
        bad = np.nonzero(~np.isfinite(row))[0]
        if len(bad):
            return f"{name} contains NaN or inf (at index {int(bad[0])}){where}"
    return f"t is {t1[b]}{where}; a finite time is required"


def _quaternion_message(model, name, q, j, b, batch):
    sl = model.quaternion_slice(j)
    nrm = float(np.linalg.norm(q[b, sl]))
    where = f" in sample {b}" if batch else ""
    return (f"{name}[{sl.start}:{sl.stop}], the quaternion of joint {model.joint_names[j]!r}, has norm "
            f"{nrm:.6g}{where}; a unit quaternion is required (within {QUAT_TOL:g})")


def _singular_message(model, code, j, q2, t1, b):
    qs = model.q_slice(j)
    conf = f"q[{qs.start}:{qs.stop}] = {np.array2string(q2[b, qs], precision=17, separator=', ')}"
    if model.rheonomic:
        conf += f", t = {t1[b]:.17g}"
    if code in (Status.SINGULAR_JOINT, Status.NEAR_SINGULAR_JOINT):
        where, d = lock_distance(model, j, q2[b], t1[b])
        at = "at" if d < 1e-9 else "near"
        if code == Status.NEAR_SINGULAR_JOINT:
            return (f"the joint's Jacobian is close to losing rank at {conf} ({at} gimbal lock of "
                    f"{model.joint_specs[j]!r}: {where}); the accelerations were computed but its velocity "
                    "variables are nearly dependent, so they can be very large")
        return (f"the joint's Jacobian loses rank at {conf} ({at} gimbal lock of {model.joint_specs[j]!r}: "
                f"{where}); its velocity variables are not independent there, so the dynamics is undefined")
    if code == Status.SINGULAR_ARTICULATED_INERTIA:
        sub = [model.body_names[k] for k in model.subtree(j)]
        return (f"the articulated inertia of the subtree it carries (bodies {sub}) is singular along "
                f"the joint's motion at {conf}: a massless subtree (or one without inertia about the "
                "joint's axes) makes the mass matrix singular")
    return (f"the mass matrix is singular (not positive definite) at the velocity variables of "
            f"this joint, at {conf}: a massless subtree or a degenerate joint")


def raise_status(model, status, what, names, arrays, t1, B):
    """Raise the error of the first bad sample of ``status`` ((n, 2): code, joint), if any.

    ``model`` is the model the kernels ran on, ``names``/``arrays`` the (n, k) inputs they got
    (q first).  Input errors raise ValueError; singular configurations SingularJointError listing
    every singular sample of a batch."""
    codes = status[:, 0]
    # the integer codes, not the enum members: NumPy compares an array with a member in about
    # 2.6 us, with an int in 0.5 us (paid by every batch call)
    near = np.nonzero(codes == NEAR_SINGULAR)[0]
    if len(near):
        k = int(near[0])
        which = "" if B is None else f"{len(near)} of {B} samples, e.g. sample {k}: "
        warnings.warn(NearSingularWarning(f"{what}: {which}joint {model.joint_names[int(status[k, 1])]!r}: "
                                          + _singular_message(model, Status.NEAR_SINGULAR_JOINT,
                                                              int(status[k, 1]), arrays[0], t1, k)),
                      stacklevel=3)
    bad = np.nonzero((codes != OK) & (codes != NEAR_SINGULAR))[0]
    if len(bad) == 0:
        return
    batch = B is not None
    b = int(bad[0])
    code = int(codes[b])
    j = int(status[b, 1])
    if code == BAD_SHAPE:
        raise ValueError(f"{what}: the state arrays do not fit the model (nq {model.nq}, nv {model.nv})")
    if code == Status.NONFINITE_INPUT:
        raise ValueError(_nonfinite_message(names, arrays, t1, b, batch))
    if code == Status.QUATERNION_NOT_UNIT:
        raise ValueError(_quaternion_message(model, names[0], arrays[0], j, b, batch))
    sing = bad[codes[bad] >= Status.SINGULAR_JOINT]
    why = _singular_message(model, code, j, arrays[0], t1, b)
    name = model.joint_names[j]
    if not batch:
        msg = f"{what}: joint {name!r}: {why}"
    else:
        listed = ", ".join(f"{int(k)} (joint {model.joint_names[int(status[k, 1])]!r})" for k in sing[:10])
        more = "" if len(sing) <= 10 else f", ... ({len(sing) - 10} more)"
        msg = (f"{what}: {len(sing)} of {B} samples are singular: samples {listed}{more}; "
               f"sample {b}, joint {name!r}: {why}")
    err = SingularJointError(msg)
    err.joint = name
    err.samples = sing if batch else None
    err.joints = [model.joint_names[int(status[k, 1])] for k in sing]
    raise err


def nan_failed(codes, arrays, batched=True):
    """NaN in the rows of the samples whose status code is an error (NEAR_SINGULAR ones keep
    their results) of each of ``arrays`` (None skipped); ``batched`` False: one state, whose
    arrays are filled whole."""
    bad = (codes != OK) & (codes != NEAR_SINGULAR)
    if bad.any():
        for a in arrays:
            if a is not None:
                a[bad if batched else ...] = np.nan


def flag_or_raise(errors, model, status, what, names, arrays, t1, B, result):
    """``errors="flag"``: (result, status codes (B,)); ``"raise"``: result, or the error."""
    if errors == "flag":
        codes = np.ascontiguousarray(status[:, 0])
        return (result, codes) if B is not None else (result, int(codes[0]))
    raise_status(model, status, what, names, arrays, t1, B)
    return result


def check_errors_arg(errors):
    if not (type(errors) is str and errors in ("raise", "flag")):
        raise ValueError(f'errors must be "raise" or "flag", got {errors!r}')
