"""Loop closures of a tree model.

A loop closure is a joint that is not part of the tree: it connects frame ``A`` (its inboard
frame, fixed on ``body_a`` at ``placement_a``) to frame ``B`` (its outboard frame, fixed on
``body_b`` at ``placement_b``).  The pose of ``B`` in ``A`` must be a pose of the closure joint,
``(R_A^T R_B, R_A^T (o_B - o_A)) = (R(q_c), r(q_c))`` for some closure coordinates ``q_c``, so the
loop removes ``6 - nv_c`` relative freedoms (a revolute closure five, a spherical one three,
``Fixed`` six, a ``Custom`` joint ``6 - nv``).  The closure coordinates are not coordinates of the
model: they follow from the tree's pose (``algorithms.loops.reference``, ``algorithms.loops.kernel``).
"""
import numpy as np

from ..core.joints import specs as _specs
from ..errors import ModelError


class Loop:
    """One loop closure: ``name``, ``body_a``, ``body_b`` (body indices), ``joint`` (its spec),
    ``placement_a`` (frame A in body_a), ``placement_b`` (frame B in body_b), ``nc = 6 - joint.nv``
    (the relative freedoms it removes)."""

    __slots__ = ("name", "body_a", "body_b", "joint", "placement_a", "placement_b")

    def __init__(self, name, body_a, body_b, joint, placement_a, placement_b):
        self.name = name
        self.body_a = int(body_a)
        self.body_b = int(body_b)
        self.joint = joint
        self.placement_a = placement_a
        self.placement_b = placement_b

    @property
    def nc(self):
        return 6 - self.joint.nv

    def __repr__(self):
        return (f"Loop({self.name!r}, body_a={self.body_a}, body_b={self.body_b}, joint={self.joint!r}, "
                f"removes {self.nc})")

    def to_dict(self, body_names):
        return {"name": self.name, "body_a": body_names[self.body_a], "body_b": body_names[self.body_b],
                "joint": self.joint.to_dict(),
                "placement_a": {"rotation": np.asarray(self.placement_a.rotation).tolist(),
                                "translation": np.asarray(self.placement_a.translation).tolist()},
                "placement_b": {"rotation": np.asarray(self.placement_b.rotation).tolist(),
                                "translation": np.asarray(self.placement_b.translation).tolist()}}


def check_loop_joint(joint, who):
    if joint is None:
        joint = _specs.Fixed()
    if not isinstance(joint, _specs.JointSpec):
        raise ModelError(f"{who}: joint must be an ej.joints spec, got {joint!r}")
    if joint.nv >= 6:
        raise ModelError(f"{who}: a closure joint with {joint.nv} velocity variables ({joint!r}) removes no "
                         "relative freedom")
    if joint.is_rheonomic():
        raise ModelError(f"{who}: a time-driven closure joint ({joint!r}) is not supported")
    return joint


LOOP_FIELDS = {"name", "body_a", "body_b", "joint", "placement_a", "placement_b"}


def summary_lines(model):
    out = []
    for L in model.loops:
        out.append(f"  loop {L.name}: {model.body_names[L.body_a]} -> {model.body_names[L.body_b]} "
                   f"closed by {L.joint!r} (removes {L.nc})")
    return out
