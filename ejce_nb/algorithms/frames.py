"""Frames fixed on bodies: their Jacobians in Pinocchio's three references, the time derivative
J' qd, and the centre-of-mass Jacobian, from the body-origin Jacobians and world kinematics.

A frame F is fixed on body b at placement (R_bF, p_bF) in the body frame; in world, R_F = R_b R_bF,
p_F = p_b + R_b p_bF.  With the body origin's Jacobian [J_w; J_v] (world axes, ``body_jacobian``):

    "local_world_aligned":  [J_w; J_v - [R_b p_bF]x J_w]       (F's origin velocity, world axes)
    "local":                blockdiag(R_F^T, R_F^T) of the above  (F's own axes)
    "world":                [J_w; J_lwa,v + [p_F]x J_w]          (velocity of the point of F's body
                                                                 at the world origin, world axes)

The time derivative along the motion, J' qd, is the frame's acceleration at qdd = 0 in the same
reference: [alpha; a_F] (world aligned, a_F the classical acceleration of F's origin),
R_F^T [alpha; a_F] - [0; w_F x v_F] (local, w_F and v_F in F axes), [alpha; a_F + v_F x w + p_F x alpha]
(world).  For driven joints it includes the terms of the prescribed motion (d/dt of J qd + sigma).
"""
import numpy as np

from ..core.transform import Transform
from ..calls.public import body_jacobian, forward_kinematics

REFERENCES = ("world", "local", "local_world_aligned")


def _frame(model, frame):
    """(body index, R_bF, p_bF) of a frame given as a body (index or name), a named frame
    (``Model.frame_names``) or (body, ej.Transform)."""
    if isinstance(frame, tuple) and len(frame) == 2 and isinstance(frame[1], Transform):
        body, T = frame
        R, p = np.asarray(T.rotation, dtype=float), np.asarray(T.translation, dtype=float)
    else:
        body, R, p = frame, np.eye(3), np.zeros(3)
    if isinstance(body, (str, np.str_)):
        body = str(body)
        if body in model._body_index:
            b = model._body_index[body]
        else:
            b, T = model.frame_placement(body)      # names the unknown frame in its error
            R, p = T.rotation @ R, T.rotation @ p + T.translation
    elif isinstance(body, (int, np.integer)) and not isinstance(body, bool) and 0 <= body <= model.nbodies:
        b = int(body)
    else:
        raise ValueError(f"frame: expected a body index (0..{model.nbodies}), a body or frame name or "
                         f"(body, ej.Transform), got {frame!r}")
    return b, R, p


def frame_pose(model, q, frame, t=0.0):
    """World pose of a frame: ``(R (..., 3, 3), p (..., 3))``, the frame's orientation (frame
    axes -> world axes) and origin in world, R_F = R_b R_bF and p_F = p_b + R_b p_bF for a frame
    at (R_bF, p_bF) in body b's frame; ``frame`` as for ``frame_jacobian``.  q (nq,) or (B, nq)."""
    b, RbF, pbF = _frame(model, frame)
    kin = forward_kinematics(model, q, t=t)
    Rb, pb = kin.R[..., b, :, :], kin.p[..., b, :]
    return Rb @ RbF, pb + np.einsum("...ij,j->...i", Rb, pbF)


def _reference(reference):
    if reference not in REFERENCES:
        raise ValueError(f"reference must be one of {REFERENCES}, got {reference!r}")


def _skew(x):
    z = np.zeros(x.shape[:-1])
    return np.stack([np.stack([z, -x[..., 2], x[..., 1]], -1), np.stack([x[..., 2], z, -x[..., 0]], -1),
                     np.stack([-x[..., 1], x[..., 0], z], -1)], -2)


def frame_jacobian(model, q, frame, reference="world", t=0.0):
    """Jacobian (..., 6, nv) of the frame's [angular; linear] velocity in ``reference`` (the
    three references of Pinocchio); q (nq,) or (B, nq).

    * ``"local_world_aligned"``: the velocity of the frame's origin, world axes:
      ``[J_w; J_v - [R_b p_bF]x J_w]`` from the body origin's Jacobian ``[J_w; J_v]``
      (``body_jacobian``);
    * ``"local"``: the same in the frame's own axes, ``blockdiag(R_F^T, R_F^T)`` of the above;
    * ``"world"`` (default): the velocity of the frame's body point at the world origin, world
      axes (Pinocchio's ``WORLD``): ``[J_w; J_lwa,v + [p_F]x J_w]``.

    ``frame``: a body (index or name: its body frame), a named frame (``Model.frame_names``:
    URDF links merged by fixed joints, MJCF sites, OpenSim offset frames and markers,
    ``ModelBuilder.add_frame``), ``(body, ej.Transform)`` placed in the body frame, or ``(frame
    name, ej.Transform)`` placed in that named frame.  A name that is neither a body nor a frame
    is an ``ej.ModelError`` listing the model's frames."""
    _reference(reference)
    b, RbF, pbF = _frame(model, frame)
    J = np.array(body_jacobian(model, q, b, t))
    kin = forward_kinematics(model, q, t=t)
    Rb, pb = kin.R[..., b, :, :], kin.p[..., b, :]
    r = Rb @ pbF
    Jw, Jv = J[..., :3, :], J[..., 3:, :]
    Jv = Jv - _skew(r) @ Jw
    if reference == "local":
        RFt = np.swapaxes(Rb @ RbF, -1, -2)
        return np.concatenate([RFt @ Jw, RFt @ Jv], axis=-2)
    if reference == "world":
        Jv = Jv + _skew(pb + r) @ Jw
    return np.concatenate([Jw, Jv], axis=-2)


def frame_jacobian_dot_v(model, q, qd, frame, reference="world", t=0.0):
    """J' qd (..., 6): the frame's acceleration at qdd = 0 in ``reference`` (the time derivative
    of ``J qd`` expressed there; ``frame`` and ``reference`` as for ``frame_jacobian``), the term
    of operational-space control: frame acceleration = J qdd + J' qd.  World aligned:
    ``[alpha; a_F]`` (a_F the classical acceleration of F's origin); local: ``R_F^T [alpha; a_F]
    - [0; w_F x v_F]`` (w_F, v_F in F axes); world: ``[alpha; a_F + v_F x w + p_F x alpha]``.
    For driven joints it includes the terms of the prescribed motion (d/dt of J qd + sigma)."""
    _reference(reference)
    b, RbF, pbF = _frame(model, frame)
    qd = np.asarray(qd, dtype=float)
    kin = forward_kinematics(model, q, qd, np.zeros_like(qd), t=t)
    Rb, pb = kin.R[..., b, :, :], kin.p[..., b, :]
    w, vb, al, ab = kin.omega[..., b, :], kin.v[..., b, :], kin.alpha[..., b, :], kin.a[..., b, :]
    r = np.einsum("...ij,j->...i", Rb, pbF)
    vF = vb + np.cross(w, r)
    aF = ab + np.cross(al, r) + np.cross(w, np.cross(w, r))
    if reference == "local_world_aligned":
        return np.concatenate([al, aF], axis=-1)
    if reference == "world":
        return np.concatenate([al, aF + np.cross(vF, w) + np.cross(pb + r, al)], axis=-1)
    RF = Rb @ RbF
    tl = lambda x: np.einsum("...ji,...j->...i", RF, x)  # noqa: E731
    return np.concatenate([tl(al), tl(aF) - np.cross(tl(w), tl(vF))], axis=-1)


def com_jacobian(model, q, t=0.0):
    """Jacobian (..., 3, nv) of the centre of mass's velocity (world axes): sum_i m_i J_c,i / m
    (a model without mass is a ``ValueError``)."""
    mass = model.body_mass
    total = float(mass.sum())
    if not total > 0.0:
        raise ValueError("com_jacobian: the model has no mass")
    kin = forward_kinematics(model, q, t=t)
    out = 0.0
    for i in range(1, model.nbodies + 1):
        if mass[i] == 0.0:
            continue
        J = np.array(body_jacobian(model, q, i, t))
        c = np.einsum("...ij,j->...i", kin.R[..., i, :, :], model.body_com[i])
        out = out + mass[i] * (J[..., 3:, :] - _skew(c) @ J[..., :3, :])
    return out / total
