"""The paper's check: for a spherical joint parameterised by Euler angles, the rotational block of
the generic Jacobian is the matrix E of Euler's kinematic equations, omega_rel (P axes) =
E(angles) angle rates, for all 24 conventions.  E is derived here symbolically with sympy from the
sequence's rotation matrix (API.md: upper case intrinsic R = R_a(q0) R_b(q1) R_c(q2), lower case
extrinsic R = R_c(q2) R_b(q1) R_a(q0), as scipy's from_euler), E[:, k] = axial(dR/dq_k R^T).
"""
import functools

import numpy as np
import pytest
import sympy as sp
from scipy.spatial.transform import Rotation

import ejce_nb as ej

from conftest import EULER_24, random_tree

Q = sp.symbols("q0:3", real=True)


def _sym_rot(axis, a):
    c, s = sp.cos(a), sp.sin(a)
    if axis == "x":
        return sp.Matrix([[1, 0, 0], [0, c, -s], [0, s, c]])
    if axis == "y":
        return sp.Matrix([[c, 0, s], [0, 1, 0], [-s, 0, c]])
    return sp.Matrix([[c, -s, 0], [s, c, 0], [0, 0, 1]])


@functools.lru_cache(maxsize=None)
def symbolic_R_E(seq):
    """Lambdified R(q) and E(q) of an Euler sequence."""
    Ra, Rb, Rc = (_sym_rot(ch.lower(), Q[k]) for k, ch in enumerate(seq))
    R = Ra * Rb * Rc if seq.isupper() else Rc * Rb * Ra
    cols = []
    for k in range(3):
        W = R.diff(Q[k]) * R.T
        cols.append([(W[2, 1] - W[1, 2]) / 2, (W[0, 2] - W[2, 0]) / 2, (W[1, 0] - W[0, 1]) / 2])
    E = sp.Matrix(cols).T
    return sp.lambdify([Q], R, "numpy"), sp.lambdify([Q], E, "numpy")


def _angles(seq, rng, n):
    q = rng.uniform(-np.pi, np.pi, (n, 3))
    if seq[0].lower() == seq[2].lower():
        q[:, 1] = rng.uniform(0.2, np.pi - 0.2, n)
    else:
        q[:, 1] = rng.uniform(-np.pi / 2 + 0.2, np.pi / 2 - 0.2, n)
    return q


@pytest.mark.parametrize("seq", EULER_24)
def test_generic_jacobian_is_eulers_kinematic_matrix(seq):
    R_of, E_of = symbolic_R_E(seq)
    model = random_tree([ej.joints.Spherical(seq)], 1)
    rng = np.random.default_rng(sum(map(ord, seq)))
    q = _angles(seq, rng, 8)
    qd = rng.uniform(-2, 2, (8, 3))
    jt = ej.joint_terms(model, q, qd)
    for b in range(len(q)):
        E = np.array(E_of(q[b]), dtype=float)
        R = np.array(R_of(q[b]), dtype=float)
        assert np.abs(jt.J[b, :3] - E).max() <= 1e-12, seq
        assert np.abs(jt.J[b, 3:]).max() == 0.0            # a spherical joint does not translate
        assert np.abs(jt.R[b, 1] - R).max() <= 1e-12
        # omega_rel = E q' (the relative twist the package reports)
        assert np.abs(jt.twist[b, 1, :3] - E @ qd[b]).max() <= 1e-12
    # the symbolic matrix is Euler's E: its columns are the rotation axes of the sequence
    ax = {c: np.eye(3)[k] for k, c in enumerate("xyz")}
    for b in range(len(q)):
        E = np.array(E_of(q[b]), dtype=float)
        if seq.isupper():       # intrinsic: first axis fixed in P, last one carried by both rotations
            assert np.allclose(E[:, 0], ax[seq[0].lower()], atol=1e-14)
        else:                   # extrinsic: the last rotation's axis is fixed in P
            assert np.allclose(E[:, 2], ax[seq[2]], atol=1e-14)


@pytest.mark.parametrize("seq", EULER_24)
def test_rotation_matches_scipy_from_euler(seq):
    model = random_tree([ej.joints.Spherical(seq)], 2)
    rng = np.random.default_rng(3)
    q = rng.uniform(-np.pi, np.pi, (6, 3))
    jt = ej.joint_terms(model, q)
    ref = Rotation.from_euler(seq, q).as_matrix()
    assert np.abs(jt.R[:, 1] - ref).max() <= 1e-14


@pytest.mark.parametrize("seq", EULER_24)
def test_gimbal_lock_is_where_E_loses_rank(seq):
    """Tait-Bryan sequences lock at a middle angle of +-pi/2, proper Euler ones at 0 and pi."""
    model = random_tree([ej.joints.Spherical(seq)], 4)
    proper = seq[0].lower() == seq[2].lower()
    locks = (0.0, np.pi) if proper else (np.pi / 2, -np.pi / 2)
    rng = np.random.default_rng(5)
    for m in locks:
        q = np.array([rng.uniform(-3, 3), m, rng.uniform(-3, 3)])
        J = ej.joint_terms(model, q).J
        assert abs(np.linalg.det(J[:3])) < 1e-12
    q = np.array([0.3, 0.7 if proper else 0.4, -0.2])
    assert abs(np.linalg.det(ej.joint_terms(model, q).J[:3])) > 0.1


def test_paper_closed_form_ZXZ():
    """R = Rz(psi) Rx(theta) Rz(phi): E = [[0, cos psi, sin psi sin theta],
    [0, sin psi, -cos psi sin theta], [1, 0, cos theta]] (EJCE.md section 1)."""
    model = random_tree([ej.joints.Spherical("ZXZ")], 6)
    rng = np.random.default_rng(6)
    for _ in range(10):
        psi, th, phi = rng.uniform(-np.pi, np.pi, 3)
        E = np.array([[0.0, np.cos(psi), np.sin(psi) * np.sin(th)],
                      [0.0, np.sin(psi), -np.cos(psi) * np.sin(th)],
                      [1.0, 0.0, np.cos(th)]])
        jt = ej.joint_terms(model, np.array([psi, th, phi]))
        assert np.abs(jt.J[:3] - E).max() <= 1e-14
        Rz = lambda a: np.array([[np.cos(a), -np.sin(a), 0], [np.sin(a), np.cos(a), 0], [0, 0, 1.0]])
        Rx = lambda a: np.array([[1.0, 0, 0], [0, np.cos(a), -np.sin(a)], [0, np.sin(a), np.cos(a)]])
        assert np.abs(jt.R[1] - Rz(psi) @ Rx(th) @ Rz(phi)).max() <= 1e-14
        assert np.abs(jt.R[1] - Rotation.from_euler("ZXZ", [psi, th, phi]).as_matrix()).max() <= 1e-14
    # and the sympy derivation agrees with the paper's closed form
    _, E_of = symbolic_R_E("ZXZ")
    q = np.array([0.4, 1.1, -2.0])
    E = np.array([[0.0, np.cos(q[0]), np.sin(q[0]) * np.sin(q[1])],
                  [0.0, np.sin(q[0]), -np.cos(q[0]) * np.sin(q[1])],
                  [1.0, 0.0, np.cos(q[1])]])
    assert np.abs(np.array(E_of(q), dtype=float) - E).max() <= 1e-15
