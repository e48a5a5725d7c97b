"""How close a joint is to losing rank at given coordinates, for the messages of singular joints
(``inputs``): for an Euler-angle joint the distance of its middle angle from the gimbal lock, else
the ratio of the smallest to the largest singular value of its Jacobian J (6, nv), the columns
[axial(dR/du_k R^T); dr/du_k] of EJCE.md section 1 in P axes.  J is evaluated by the generic
EJCE path (``core.generic_path``), or for a user-defined joint by its compiled pose wrapper."""
import numpy as np

from .._jit import jit
from ..core.generic_path import jets_terms
from ..core.joints import codes as C
from ..core.joints.custom import evaluate as custom_terms
from .couplers import Coupling
from .layout import model_view

EULER = ("XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX", "XYX", "XZX", "YXY", "YZY", "ZXZ", "ZYZ")


@jit
def _jacobian_rows(mb, i, q, v, t, JP):
    """J's columns of joint i at (q, t) in the rows of JP."""
    jets_terms(model_view(mb), i, q, v, t, JP)


def joint_jacobian(model, j, q, t=0.0):
    """J (6, nv_j) of joint j of ``model`` at the coordinates q (nq,) and time t, in P axes (of a
    model with couplers: of joint j of its expansion, at the expanded coordinates)."""
    if model.has_couplers:
        q = Coupling(model).q(np.asarray(q, dtype=float)[None])[0]
        model = model.expanded()
    spec = model.joint_specs[j]
    qs = model.q_slice(j)
    if spec.code == C.CUSTOM:
        return custom_terms(spec, np.asarray(q, dtype=float)[qs], None, float(t))[2]
    JP = np.zeros((6, 6))
    _jacobian_rows(model._mb, j, np.ascontiguousarray(q, dtype=float), np.zeros(model.nv), float(t), JP)
    return JP[:spec.nv].T.copy()


def lock_distance(model, j, q, t=0.0):
    """How close joint j is to losing rank at the coordinates q of the model: for an Euler-angle
    joint the distance of its middle angle from the lock, else the smallest singular value of
    its Jacobian relative to the largest.  Returns (text, number)."""
    spec = model.joint_specs[j]
    qs = model.q_slice(j)
    param = getattr(spec, "param", None)
    if isinstance(param, str) and param.upper() in EULER:
        k = qs.start + (3 if spec.nq == 6 else 0) + 1
        th = float(q[k])
        proper = param[0].lower() == param[2].lower()
        lock = np.round(th / np.pi) * np.pi if proper else np.round((th - np.pi / 2) / np.pi) * np.pi + np.pi / 2
        d = abs(th - lock)
        return (f"its middle angle q[{k}] = {th!r} is {d:.3g} rad from the gimbal lock at {lock:.17g}", d)
    J = joint_jacobian(model, j, q, t)
    sv = np.linalg.svd(J, compute_uv=False) if J.size else np.zeros(1)
    ratio = float(sv[-1] / sv[0]) if sv[0] > 0 else 0.0
    return (f"the smallest singular value of its Jacobian is {ratio:.3g} of the largest", ratio)
