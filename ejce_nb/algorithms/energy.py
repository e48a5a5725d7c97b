"""Energies and centre of mass of the whole system.

    T = 1/2 sum_i v_i^T I_i v_i + 1/2 sum_k armature_k qd_k^2
                                         (v_i the body twist, including sigma of rheonomic joints;
                                           for scleronomic models T = 1/2 qd^T M(q) qd)
    V = - sum_i m_i g . c_i               (c_i the world position of body i's centre of mass)
    c = sum_i m_i c_i / sum_i m_i

from the forward sweep (``kinematics.forward``: twists and the world frames of C_i).
"""
import numpy as np

from .._jit import jit
from .kinematics import forward
from ..core.spatial import add, dot6, inertia_mul, ld3, ld6, ld9, mv


@jit
def energy_state(m, r, s, q, v, t, level, full, out):
    """out = (T, V, sum m c_x, sum m c_y, sum m c_z); T only from level 1."""
    forward(m, r, s, q, v, v, t, level, np.bool_(True), full)
    energy_after(m, r, v, level, out)


@jit
def energy_after(m, r, v, level, out):
    """``energy_state`` from the twists and world frames of the record r."""
    kin = 0.0
    pot = 0.0
    m0 = 0.0
    m1 = 0.0
    m2 = 0.0
    g = m.gravity
    for i in range(1, m.body_parent.shape[0]):
        mass = m.body_mass[i]
        if level >= 1:
            vi = ld6(r.vel, i)
            kin += 0.5 * dot6(vi, inertia_mul(mass, ld3(m.body_hC, i), ld9(m.body_IC, i), vi))
        c = add(ld3(r.oC, i), mv(ld9(r.RC, i), ld3(m.body_cC, i)))
        pot -= mass * (g[0] * c[0] + g[1] * c[1] + g[2] * c[2])
        m0 += mass * c[0]
        m1 += mass * c[1]
        m2 += mass * c[2]
    if level >= 1:
        for k in range(m.dof_armature.shape[0]):
            kin += 0.5 * m.dof_armature[k] * v[k] * v[k]
    out[0] = kin
    out[1] = pot
    out[2] = m0
    out[3] = m1
    out[4] = m2
