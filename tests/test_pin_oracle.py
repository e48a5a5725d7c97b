"""Checks of the Pinocchio oracle itself (tests/pin_oracle.py), so that the dynamics tests can
trust its maps: its mass matrix, inverse dynamics (with gravity and external wrenches) and forward
dynamics against references built from our own body Jacobians and forward kinematics (which
test_kinematics checks against finite differences and Pinocchio's kinematics)."""
import numpy as np
import pytest

import ejce_nb as ej

from conftest import HAVE_PINOCCHIO, random_state, random_tree, random_unit, skew, requires_pinocchio

if HAVE_PINOCCHIO:
    from pin_oracle import PinModel
pytestmark = requires_pinocchio

J = ej.joints
_r = np.random.default_rng(55)
AX = [random_unit(_r) for _ in range(6)]
KINDS = [J.Free("quaternion"), J.Revolute(AX[0]), J.Prismatic(AX[1]), J.Helical(AX[2], 0.3),
         J.Universal(AX[3], AX[4]), J.Spherical("ZYX"), J.Spherical("quaternion"), J.Translation(),
         J.Fixed(), J.Free("quaternion"), J.Revolute(AX[5]), J.Fixed()]


def _model(seed):
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(KINDS))
    return random_tree([KINDS[k] for k in order], rng, gravity=(0.3, -0.5, -9.81))


def _jacobians(model, q):
    return np.array([ej.body_jacobian(model, q, i) for i in range(model.nbodies + 1)])


def _mass_matrix_ref(model, q):
    """M = sum_i m J_com^T J_com + J_w^T I_world J_w (kinetic energy of every body)."""
    k = ej.forward_kinematics(model, q)
    Js = _jacobians(model, q)
    M = np.zeros((model.nv, model.nv))
    for i in range(1, model.nbodies + 1):
        R = k.R[i]
        c = R @ model.body_com[i]
        Jw, Jv = Js[i, :3], Js[i, 3:]
        Jc = Jv - skew(c) @ Jw
        M += model.body_mass[i] * Jc.T @ Jc + Jw.T @ (R @ model.body_inertia[i] @ R.T) @ Jw
    return M


def _rnea_ref(model, q, qd, qdd, f_ext=None):
    """Newton-Euler on our world-frame kinematics, projected with the body Jacobians."""
    k = ej.forward_kinematics(model, q, qd, qdd)
    Js = _jacobians(model, q)
    tau = np.zeros(model.nv)
    for i in range(1, model.nbodies + 1):
        R, w, al = k.R[i], k.omega[i], k.alpha[i]
        m = model.body_mass[i]
        c = R @ model.body_com[i]
        Iw = R @ model.body_inertia[i] @ R.T
        a_com = k.a[i] + np.cross(al, c) + np.cross(w, np.cross(w, c))
        F = m * (a_com - model.gravity)
        N = Iw @ al + np.cross(w, Iw @ w) + np.cross(c, F)
        W = np.concatenate([N, F])
        if f_ext is not None:
            W = W - f_ext[i]
        tau += Js[i].T @ W
    return tau


@pytest.mark.parametrize("seed", [1, 2])
def test_oracle_mass_matrix(seed):
    model = _model(seed)
    pm = PinModel(model)
    rng = np.random.default_rng(seed)
    for _ in range(3):
        q, _, _ = random_state(model, rng)
        M = pm.mass_matrix(q)
        M_ref = _mass_matrix_ref(model, q)
        assert np.abs(M - M.T).max() < 1e-12
        assert np.abs(M - M_ref).max() < 1e-10 * max(1.0, np.abs(M_ref).max())


@pytest.mark.parametrize("seed", [3, 4])
def test_oracle_inverse_and_forward_dynamics(seed):
    model = _model(seed)
    pm = PinModel(model)
    rng = np.random.default_rng(seed)
    for _ in range(3):
        q, qd, qdd = random_state(model, rng)
        f_ext = rng.uniform(-1, 1, (model.nbodies + 1, 6))
        for fe in (None, f_ext):
            tau = pm.rnea(q, qd, qdd, fe)
            tau_ref = _rnea_ref(model, q, qd, qdd, fe)
            assert np.abs(tau - tau_ref).max() < 1e-10 * max(1.0, np.abs(tau_ref).max())
            # forward dynamics inverts inverse dynamics; M and the nonlinear effects compose tau
            assert np.abs(pm.aba(q, qd, tau, fe) - qdd).max() < 1e-9
        h = pm.nonlinear_effects(q, qd)
        assert np.abs(pm.mass_matrix(q) @ qdd + h - pm.rnea(q, qd, qdd)).max() < 1e-10 * max(1.0, np.abs(h).max())


def test_oracle_maps_round_trip():
    """v_pin = T v and a_pin = T vdot + Tdot v: Pinocchio's own velocity and acceleration of a
    free body equal ours, and tau = T^T tau_pin is the power-conjugate map."""
    model = _model(5)
    pm = PinModel(model)
    rng = np.random.default_rng(5)
    q, qd, qdd = random_state(model, rng)
    T = pm.T(q)
    assert np.abs(pm.qdd_from_pin(q, qd, pm.a(q, qd, qdd)) - qdd).max() < 1e-13
    tau_pin = rng.uniform(-1, 1, model.nv)
    assert abs(pm.tau_from_pin(q, tau_pin) @ qd - tau_pin @ pm.v(q, qd)) < 1e-12
    assert np.abs(pm.tau_to_pin(q, pm.tau_from_pin(q, tau_pin)) - tau_pin).max() < 1e-13
    assert np.abs(T - np.eye(model.nv)).max() > 0.1          # the free joints do change the map
