"""Exceptions of the package and the per-sample status codes of batched calls."""
import enum


class ModelError(ValueError):
    """A model description (builder call, JSON or URDF file) is invalid; the message names the culprit."""


class SingularJointError(ValueError):
    """A joint Jacobian lost rank (gimbal lock) or the mass matrix is singular: dynamics undefined."""


class NearSingularWarning(UserWarning):
    """Forward dynamics were computed, but a joint's Jacobian is close to losing rank (near gimbal
    lock): its velocity variables are nearly dependent and the accelerations can be very large."""


class Status(enum.IntEnum):
    """Per-sample outcome of a batched call with ``errors="flag"``: 0 computed; the rows of the
    error codes (1-5) are NaN; NEAR_SINGULAR_JOINT (6) is computed, with a warning."""
    OK = 0
    NONFINITE_INPUT = 1          # NaN or inf in q, qd, qdd, tau or t
    QUATERNION_NOT_UNIT = 2      # a quaternion block further than 1e-3 from unit norm
    SINGULAR_JOINT = 3           # a joint Jacobian loses rank (at or near a gimbal lock)
    SINGULAR_ARTICULATED_INERTIA = 4   # no inertia along a joint's motion (massless subtree)
    SINGULAR_MASS_MATRIX = 5     # the mass matrix is not positive definite
    NEAR_SINGULAR_JOINT = 6      # computed, but a joint Jacobian is within 1e-4 of losing rank


# a state array of the wrong length: never a per-sample outcome (the whole call is refused)
BAD_SHAPE = 99
