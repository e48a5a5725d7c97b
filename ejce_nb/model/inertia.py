"""Rigid-body inertia: the spatial inertia of a body and the physical consistency of a rotational
inertia (positive semi-definite, triangle inequality), as the builder and the loaders check it."""
import numpy as np

from ..errors import ModelError


def skew(v):
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


def spatial_inertia(mass, com, inertia):
    """6x6 inertia about the body origin, [angular; linear]: [[Ic + m cx cx^T, m cx], [m cx^T, m]]."""
    cx = skew(com)
    M = np.zeros((6, 6))
    M[:3, :3] = inertia + mass * cx @ cx.T
    M[:3, 3:] = mass * cx
    M[3:, :3] = mass * cx.T
    M[3:, 3:] = mass * np.eye(3)
    return M


# A principal moment may fall short of PSD or of the triangle inequality by this fraction of the
# largest one: the rounding of a tensor turned into other axes, not a different body.
INERTIA_RTOL = 1e-9


def inertia_defect(inertia):
    """Why a symmetric 3x3 rotational inertia is not physically consistent, or None when it is.

    Consistent means positive semi-definite and obeying the triangle inequality of its principal
    moments (I1 + I2 >= I3 with I1 <= I2 <= I3), each to ``INERTIA_RTOL`` times the largest
    principal moment in magnitude (so the check means the same for a watch part and a truck)."""
    ev = np.linalg.eigvalsh(inertia)
    tol = INERTIA_RTOL * float(np.abs(ev).max())
    if ev[0] < -tol:
        return f"inertia is not positive semi-definite (eigenvalues {ev.tolist()})"
    if ev[0] + ev[1] < ev[2] - tol:
        return (f"inertia violates the triangle inequality: principal moments {ev.tolist()} "
                "(I1 + I2 >= I3 is required)")
    return None


def balance_inertia(inertia):
    """A consistent inertia made from ``inertia`` by raising principal moments only: in its
    principal axes, negative moments become 0, then if I1 + I2 < I3 (I1 <= I2 <= I3) the two
    smaller moments are each raised by half the deficit, (I3 - I1 - I2) / 2, so that I1 + I2 = I3.
    The principal axes and the largest moment are kept; raising never lowers the inertia about
    any axis."""
    ev, Q = np.linalg.eigh(inertia)
    ev = np.maximum(ev, 0.0)
    deficit = ev[2] - ev[0] - ev[1]
    if deficit > 0.0:
        ev[:2] += 0.5 * deficit
    out = (Q * ev) @ Q.T
    return 0.5 * (out + out.T)


def check_inertia(mass, inertia, who, as_written=False):
    """Mass >= 0; inertia a finite symmetric 3x3 matrix (or 3 principal moments), positive
    semi-definite and obeying the triangle inequality (see ``inertia_defect``).  ``as_written``
    skips the last two, for a tensor known to be inconsistent and kept on purpose."""
    if isinstance(mass, (str, bytes, bool, np.bool_)):
        raise ModelError(f"{who}: mass must be a number, got {type(mass).__name__} {mass!r}")
    try:
        m = float(mass)
    except (TypeError, ValueError, OverflowError):
        raise ModelError(f"{who}: mass must be a number, got {mass!r}") from None
    if not np.isfinite(m) or m < 0:
        raise ModelError(f"{who}: mass must be finite and non-negative, got {mass!r}")
    try:
        I = np.asarray(inertia, dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise ModelError(f"{who}: inertia must be a 3x3 matrix, got {inertia!r}") from None
    if I.shape == (3,):
        I = np.diag(I)
    if I.shape != (3, 3) or not np.all(np.isfinite(I)):
        raise ModelError(f"{who}: inertia must be a finite 3x3 matrix (or 3 principal moments), got shape {I.shape}")
    scale = max(np.abs(I).max(), 1e-300)
    if np.abs(I - I.T).max() > 1e-9 * scale:
        raise ModelError(f"{who}: inertia is not symmetric: {I.tolist()}")
    with np.errstate(all="ignore"):
        I = 0.5 * (I + I.T)
    if not np.all(np.isfinite(I)):
        raise ModelError(f"{who}: inertia entries are too large (they overflow)")
    if not as_written:
        defect = inertia_defect(I)
        if defect is not None:
            raise ModelError(f"{who}: {defect}")
    return m, I
