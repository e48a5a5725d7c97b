"""Exceptions of the package."""


class ModelError(ValueError):
    """A model description (builder call, JSON or URDF file) is invalid; the message names the culprit."""


class SingularJointError(ValueError):
    """A joint Jacobian lost rank (gimbal lock) or the mass matrix is singular: dynamics undefined."""
