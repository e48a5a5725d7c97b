"""Points and directions fixed on bodies, after the forward sweep (``kinematics.forward`` with
world frames; twists for velocities): where they are, how fast they move, and the generalised
force of a force applied there.

Body i's frame (MuJoCo's ``xpos``, ``xmat``; OpenSim's body frame) has world axes
R_i = RC_i E_c,i^T and origin p_i = oC_i + RC_i bo_i.  Velocity variable k of a joint j on the
path from body i to the root moves a point x fixed on body i with

    omega_k = RC_j S_k[0:3],    xdot_k = RC_j S_k[3:6] + omega_k x (x - oC_j)

(the columns of its world Jacobian, ``kinematics.body_jacobian_state``), so a world force f at x
and a world torque n on body i are the generalised forces (``add_wrench``)

    Q_k += xdot_k . f + omega_k . n.

A row of a Jacobian is accumulated the same way (f a unit direction: a tendon's moment arms).
"""
from .._jit import jit
from ..core.spatial import add, cross, dot, ld3, ld6, ld9, mm, mmT, mtv, mv, sub


@jit(forceinline=True)
def body_frame(m, r, i):
    """(R_i as 9 numbers row by row, p_i): body i's world axes and origin."""
    RC = ld9(r.RC, i)
    return mmT(RC, ld9(m.body_Ec, i)), add(ld3(r.oC, i), mv(RC, ld3(m.body_bo, i)))


@jit(forceinline=True)
def point_velocity(m, r, i, xw):
    """World velocity of the point of body i that is at world position xw (twists needed)."""
    RC = ld9(r.RC, i)
    V = ld6(r.vel, i)
    w = (V[0], V[1], V[2])
    d = mtv(RC, sub(xw, ld3(r.oC, i)))
    return mv(RC, add((V[3], V[4], V[5]), cross(w, d)))


@jit(forceinline=True)
def angular_velocity(m, r, i):
    """World angular velocity of body i (twists needed)."""
    V = ld6(r.vel, i)
    return mv(ld9(r.RC, i), (V[0], V[1], V[2]))


@jit(forceinline=True)
def site_frame(a, m, r, k):
    """(R as 9 numbers row by row, p): world axes and origin of site k of an actuation's tables
    ``a`` (``site_bodyid``, ``site_pos``, ``site_mat``: placement in its body's frame; body 0
    is the world, whose frame the record does not hold)."""
    b = a.site_bodyid[k]
    if b == 0:
        R, p = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0), (0.0, 0.0, 0.0)
    else:
        R, p = body_frame(m, r, b)
    return placed(R, p, a.site_mat[k], a.site_pos[k])


@jit(forceinline=True)
def placed(R, p, S, x):
    """(R S, p + R x): the world frame of a frame at (S, x) (9 and 3 numbers) in a frame (R, p)."""
    return mm(R, S), add(p, mv(R, (x[0], x[1], x[2])))


@jit
def add_wrench(parent, dofadr, nvj, RC, oC, S, i, xw, f, n, scale, Q):
    """Q += scale (J_x^T f + J_omega^T n): ``add_point_force`` and ``add_torque`` in one walk to
    the root, on the arrays they read (``m.body_parent``, ``m.jnt_dofadr``, ``m.jnt_nv``, ``r.RC``,
    ``r.oC``, ``r.S``) rather than the whole model and record views: compiled once and called,
    its arguments a few arrays (a call with the views would pass hundreds of fields)."""
    j = i
    while j > 0:
        RCj = ld9(RC, j)
        dd = sub(xw, ld3(oC, j))
        for k in range(dofadr[j], dofadr[j] + nvj[j]):
            Sk = ld6(S, k)
            w = mv(RCj, (Sk[0], Sk[1], Sk[2]))
            u = add(mv(RCj, (Sk[3], Sk[4], Sk[5])), cross(w, dd))
            Q[k] += scale * (dot(u, f) + dot(w, n))
        j = parent[j]
