"""Exceptions of the package and the per-sample status codes of batched calls."""
import enum


class ModelError(ValueError):
    """A model description (builder call, JSON or URDF file) is invalid; the message names the culprit."""


class SingularJointError(ValueError):
    """A joint Jacobian lost rank (gimbal lock) or the mass matrix is singular: dynamics undefined."""


class Status(enum.IntEnum):
    """Per-sample outcome of a batched call with ``errors="flag"`` (0: computed)."""
    OK = 0
    NONFINITE_INPUT = 1          # NaN or inf in q, qd, qdd, tau or t
    QUATERNION_NOT_UNIT = 2      # a quaternion block further than 1e-3 from unit norm
    SINGULAR_JOINT = 3           # a joint Jacobian loses rank (gimbal lock)
    SINGULAR_ARTICULATED_INERTIA = 4   # no inertia along a joint's motion (massless subtree)
    SINGULAR_MASS_MATRIX = 5     # the mass matrix is not positive definite


# a state array of the wrong length: never a per-sample outcome (the whole call is refused)
BAD_SHAPE = 99
