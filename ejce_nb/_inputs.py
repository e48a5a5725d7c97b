"""Checking and shaping the arrays users pass in: one place for shapes, NaN and batch axes."""
import numpy as np


ANY = "any"


def state_array(x, n, name, B=ANY):
    """``x`` as float64 C-contiguous (n,) or (B, n); returns (array, batch size or None).

    B = ANY: x may set the batch size; None: a single state, x must be (n,); an int: (B, n)."""
    if x is None:
        raise ValueError(f"{name} is required")
    try:
        a = np.ascontiguousarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an array of numbers, got {type(x).__name__}") from None
    if a.ndim == 1:
        if a.shape[0] != n:
            raise ValueError(f"{name} must have shape ({n},) or (B, {n}), got {a.shape}")
        if B is not None and B is not ANY:
            raise ValueError(f"{name} has no batch axis but the other arguments have B = {B}; "
                             f"expected shape ({B}, {n})")
        bsz = None
    elif a.ndim == 2:
        if a.shape[1] != n:
            raise ValueError(f"{name} must have shape ({n},) or (B, {n}), got {a.shape}")
        if B is None:
            raise ValueError(f"{name} has a batch axis (shape {a.shape}) but the state it belongs to "
                             f"has none; expected shape ({n},)")
        if a.shape[0] == 0:
            raise ValueError(f"{name} has an empty batch axis")
        bsz = a.shape[0]
        if B is not ANY and bsz != B:
            raise ValueError(f"{name} has batch size {bsz} but the other arguments have B = {B}")
    else:
        raise ValueError(f"{name} must have shape ({n},) or (B, {n}), got {a.shape}")
    if not np.all(np.isfinite(a)):
        bad = np.argwhere(~np.isfinite(a))[0]
        raise ValueError(f"{name} contains NaN or inf (at index {tuple(int(i) for i in bad)})")
    return a, bsz


def check_quaternions(model, q, name="q", tol=1e-3):
    """Quaternion blocks must be close to unit norm (the pose uses them normalised)."""
    for j, sl in model.quaternion_blocks():
        nrm = np.linalg.norm(q[..., sl], axis=-1)
        bad = np.abs(nrm - 1.0) > tol
        if np.any(bad):
            k = int(np.argmax(np.ravel(bad)))
            where = f" in sample {k}" if np.ndim(nrm) else ""
            raise ValueError(f"{name}[{sl.start}:{sl.stop}], the quaternion of joint {model.joint_names[j]!r}, "
                             f"has norm {float(np.ravel(nrm)[k]):.6g}{where}; a unit quaternion is required")


def time_array(t, B, name="t"):
    """``t`` as a float (single state) or a (B,) array; returns a (max(B,1),) float64 array."""
    try:
        a = np.array(t, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number or an array of numbers") from None
    if a.ndim == 0:
        a = np.full(1 if B is None else B, float(a))
    elif B is None or a.shape != (B,):
        raise ValueError(f"{name} must be a float" + ("" if B is None else f" or an array of shape ({B},)")
                         + f", got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} contains NaN or inf")
    return a


def states(model, q, qd=None, qdd=None, t=0.0, names=("q", "qd", "qdd")):
    """Validate a state; returns (B or None, q2, qd2, qdd2, t1) with a batch axis always present
    (B = 1 for a single state); qd2 / qdd2 are None when not given."""
    q, B = state_array(q, model.nq, names[0])
    check_quaternions(model, q, names[0])
    nb = 1 if B is None else B              # explicit: reshape(-1, 0) fails for nq = 0 models
    out = [q.reshape(nb, model.nq)]
    for x, nm in ((qd, names[1]), (qdd, names[2])):
        if x is None:
            out.append(None)
        else:
            x, _ = state_array(x, model.nv, nm, B)
            out.append(x.reshape(nb, model.nv))
    return B, out[0], out[1], out[2], time_array(t, B)


def unbatch(B, *arrays):
    """Drop the batch axis again for a single-state call."""
    if B is None:
        res = tuple(None if a is None else a[0] for a in arrays)
    else:
        res = arrays
    return res[0] if len(res) == 1 else res


def expand_mimic(model, q2, *vs):
    """A model with mimic joints runs as its expansion (every mimic joint with its own coordinate):
    returns (expanded model, q, v...) with the coordinates mapped; others pass through."""
    if not model.has_mimic:
        return (model, q2) + vs
    Gq, gq, Gv = model.mimic_map()
    return (model.expanded(), np.ascontiguousarray(q2 @ Gq.T + gq)) + tuple(
        None if v is None else np.ascontiguousarray(v @ Gv.T) for v in vs)
