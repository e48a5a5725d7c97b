"""Euler angles the classical way: rotation matrices and the matrix of Euler's kinematic
equations, written directly from the sequence (an independent reference for the EJCE path).

A sequence is written as in ``scipy.spatial.transform.Rotation.from_euler``: upper case letters
for intrinsic rotations (R = R_a(q0) R_b(q1) R_c(q2)), lower case for extrinsic ones about the
fixed axes (R = R_c(q2) R_b(q1) R_a(q0)).
"""
import numpy as np

from .joints.specs import EULER_SEQUENCES


def _axis_rot(i, angle):
    c, s = np.cos(angle), np.sin(angle)
    j, k = (i + 1) % 3, (i + 2) % 3
    R = np.eye(3)
    R[j, j] = R[k, k] = c
    R[j, k] = -s
    R[k, j] = s
    return R


def _parse(seq):
    if not isinstance(seq, str) or seq.upper() not in EULER_SEQUENCES or not (seq.isupper() or seq.islower()):
        raise ValueError(f"unknown Euler sequence {seq!r}")
    return ["xyz".index(c) for c in seq.lower()], seq.isupper()


def euler_rate_matrix(seq, angles):
    """E(angles) of Euler's kinematic equations, omega (P axes) = E @ angle rates.

    Each rate turns the frame about its own axis, seen from P: intrinsic a-b-c gives columns
    e_a, R_a e_b, R_a R_b e_c; extrinsic gives R_c R_b e_a, R_c e_b, e_c."""
    idx, intrinsic = _parse(seq)
    e = np.eye(3)
    Rs = [_axis_rot(i, a) for i, a in zip(idx, angles)]
    if intrinsic:
        cols = [e[idx[0]], Rs[0] @ e[idx[1]], Rs[0] @ Rs[1] @ e[idx[2]]]
    else:
        cols = [Rs[2] @ Rs[1] @ e[idx[0]], Rs[2] @ e[idx[1]], e[idx[2]]]
    return np.column_stack(cols)
