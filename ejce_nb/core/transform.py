"""Rigid placements of frames."""
import numpy as np

from ..errors import ModelError


def check_rotation(R, what):
    try:
        R = np.asarray(R, dtype=float)
    except (TypeError, ValueError):
        raise ModelError(f"{what} must be a 3x3 rotation matrix, got {R!r}") from None
    if R.shape != (3, 3) or not np.all(np.isfinite(R)):
        raise ModelError(f"{what} must be a finite 3x3 rotation matrix, got shape {R.shape}")
    if np.abs(R).max() > 1.0 + 1e-9:        # also keeps R^T R below from overflowing
        raise ModelError(f"{what} is not a rotation: it has entries beyond +-1 ({R.tolist()})")
    err = np.abs(R.T @ R - np.eye(3)).max()
    if err > 1e-9 or np.linalg.det(R) < 0:
        raise ModelError(f"{what} is not a proper orthonormal rotation (|R^T R - I| = {err:.2e}, "
                         f"det = {np.linalg.det(R):.6g})")
    return R


def check_vector(v, what, n=3):
    try:
        v = np.asarray(v, dtype=float)
    except (TypeError, ValueError):
        raise ModelError(f"{what} must be {n} numbers, got {v!r}") from None
    if v.shape != (n,) or not np.all(np.isfinite(v)):
        raise ModelError(f"{what} must be {n} finite numbers, got {v!r}")
    return v


class Transform:
    """Placement of a frame in its parent: ``rotation`` (3 x 3, default identity) maps the frame's
    axes into the parent's (its columns are the frame's axes seen from the parent; proper and
    orthonormal to 1e-9), ``translation`` (3,, default zero) is the frame's origin in the parent.
    ``A @ B`` composes (B placed in A), ``inverse()`` inverts."""

    __slots__ = ("rotation", "translation")

    def __init__(self, rotation=None, translation=None):
        self.rotation = np.eye(3) if rotation is None else check_rotation(rotation, "Transform rotation")
        self.translation = np.zeros(3) if translation is None else check_vector(translation, "Transform translation")

    @classmethod
    def identity(cls):
        return cls()

    def __matmul__(self, other):
        return Transform(self.rotation @ other.rotation, self.rotation @ other.translation + self.translation)

    def inverse(self):
        return Transform(self.rotation.T, -self.rotation.T @ self.translation)

    def to_dict(self):
        return {"rotation": self.rotation.tolist(), "translation": self.translation.tolist()}

    def __repr__(self):
        return f"Transform(rotation={self.rotation.tolist()}, translation={self.translation.tolist()})"


def rot_axis_angle(axis, angle):
    a = np.asarray(axis, dtype=float)
    a = a / np.linalg.norm(a)
    K = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K


def rpy_matrix(roll, pitch, yaw):
    """URDF's fixed-axis roll-pitch-yaw: R = Rz(yaw) Ry(pitch) Rx(roll)."""
    return rot_axis_angle((0, 0, 1), yaw) @ rot_axis_angle((0, 1, 0), pitch) @ rot_axis_angle((1, 0, 0), roll)
