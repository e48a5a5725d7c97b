"""The explicit joint constraint equation of every joint, and the one function every algorithm
calls to evaluate a joint.

For the pose R(q, t), r(q, t) of the outboard frame C in the inboard frame P (EJCE.md section 1),

    [omega_rel; v_rel] = J u + sigma            J[:, k] = [axial(dR/du_k R^T); dr/du_k]
    [alpha_rel; a_rel] = J u' + b               b = [axial(R''0 R^T); r''0]

with u the joint's velocity variables (coordinate rates, or a quaternion's angular velocity in C
axes, q' = N(q) u) and ''0 the second derivative along the motion with u' = 0.  The algorithms see
a joint in its outboard frame (EJCE.md section 2):

    S  = [R^T J_w; R^T J_v]                      motion subspace (C axes, at the origin of C)
    vJ = [R^T w_rel; R^T v_rel] = S u + R^T sigma
    cJ = [R^T b_w; R^T (b_v - w_rel x v_rel)]    = d/dt (vJ in C coordinates) - S u'

and X_i, the transform from the parent's C frame to C_i: E = (Xt_i R)^T, d = pt_i + Xt_i r.

Three ways compute them, chosen once per joint when the model is built (``jnt_path``):

* the generic EJCE path (``generic_path``): the pose function of ``joints.pose`` evaluated once on
  jets (``jets``), seeded q -> (q, N u, N' u, N e_k), t -> (t, 1, 0).  It knows nothing of the joint
  and serves every joint; it is the reference every other path is tested against.
* products of elementary screw motions (``screws``): a joint that is
  T = T_0(f_0) T_1(f_1) ... (rotations about and translations along constant axes, by amounts
  f_m(q, t)) has, with S_m the unit twist of motion m seen from C,
      S[:, k] = sum_m df_m/dq_k S_m,    vJ = sum_m f'_m S_m,
      cJ = sum_m f''0_m S_m + sum_{m < n} f'_m f'_n (S_m x S_n),
  which needs no derivative of a pose and no jets.  Every built-in joint but the non-Euler
  rotation parameterisations is such a product, composite joints included (their amounts are
  evaluated on jets: value, gradient, rate and second derivative at once).
* unit quaternions (``quaternions``): S = [1; 0] (spherical), vJ = [u; 0],
  cJ = 0; a free joint adds [0; R^T rdot] and cJ = [0; -w x R^T rdot].
* user-defined joints (``generic_path.user_joint``): the generic path again, on the user's own pose function
  compiled for jets (``joints.custom``), called through its address.

The position part (X, S) depends on (q, t) only; the velocity part (vJ, cJ) also on u, and is
computed from the position part where the path allows, so that a later stage on the same
configuration (``mass_matrix`` then ``nonlinear_effects``) does not evaluate the pose again.

This module holds the path codes and the one entry point, ``joint_position`` / ``joint_velocity``;
``placement`` records a joint's result, ``quaternions`` also holds the retraction q (+) delta.
"""
import numpy as np
from numba import types
from numba.extending import overload

from .._jit import jit
from .generic_path import jets_joint_of, user_joint_of
from .placement import place
from .quaternions import quat_position, quat_velocity
from .screws import screw_position, screw_velocity
from .spatial import EYE9, ZERO3, ZERO6, st6

PATH_FIXED = 0
PATH_SCREW = 1
PATH_QUAT = 2
PATH_JETS = 3
PATH_USER = 4


# ---------------------------------------------------------------------------- the one entry point
# ``full`` says which paths a kernel compiles, a compile-time property of the model carried by
# the type of the value every kernel passes along (``paths``; ``calls.python_layer.paths``):
#   None    PATHS_SCREWS: fixed joints, quaternions, products of screws whose amounts are
#           coordinates (``scale * q[c]``): what revolute, prismatic, Euler-angle and free joints
#           need; the jets path and function amounts are never typed;
#   an int  PATHS_FUNCTIONS: the same, and screw amounts that are functions of the coordinates
#           and time (coupled and spline-driven joints);
#   a bool  PATHS_ALL: the generic (jets) and user paths too.
# A model's generic twin (``Model.with_generic_joints``) sends its joints to the jets path through
# its own table.
PATHS_SCREWS, PATHS_FUNCTIONS, PATHS_ALL = 0, 1, 2
PATHS = (None, 1, True)          # ``full`` of each kind


def paths_kind(full):
    """The kind (``PATHS_*``) of ``full``, in Python (a bool's value does not matter)."""
    return PATHS_SCREWS if full is None else (PATHS_ALL if isinstance(full, (bool, np.bool_)) else PATHS_FUNCTIONS)


def runtime_paths(full):
    """``full`` (``ejce.PATHS``) as a batch receives it from Python: None, or an int64 or a bool
    that is no compile-time constant (an entry's 1 or True is one, and would compile the forward
    sweep once more)."""
    return full


@overload(runtime_paths)
def _runtime_paths(full):
    if isinstance(full, types.NoneType):
        return lambda full: None
    if isinstance(full, types.Boolean):
        return lambda full: np.bool_(full)
    return lambda full: np.int64(full)


def _position_fast(m, r, s, i, q, v, t, full):
    path = m.jnt_path[i]
    if path == PATH_SCREW:
        screw_position(m, r, s, i, q, t, full)
    elif path == PATH_QUAT:
        quat_position(m, r, i, q)
    else:
        place(m, r, i, EYE9, ZERO3)


_position_fast_inline = jit(forceinline=True)(_position_fast)


def _position_full(m, r, s, i, q, v, t, full):
    path = m.jnt_path[i]
    if path == PATH_JETS:
        jets_joint_of(m, r, s, i, q, v, t)
    elif path == PATH_USER:
        user_joint_of(m, r, s, i, q, v, t)
    else:
        _position_fast_inline(m, r, s, i, q, v, t, full)


def _velocity_fast(m, r, s, i, q, v, t, full, position_fresh):
    path = m.jnt_path[i]
    if path == PATH_SCREW:
        screw_velocity(m, r, i, q, v, t, full)
    elif path == PATH_QUAT:
        quat_velocity(m, r, i, v)
    else:
        st6(r.vJ, i, ZERO6)
        st6(r.cJ, i, ZERO6)


_velocity_fast_inline = jit(forceinline=True)(_velocity_fast)


def _velocity_full(m, r, s, i, q, v, t, full, position_fresh):
    path = m.jnt_path[i]
    if path == PATH_JETS:
        if not position_fresh:
            jets_joint_of(m, r, s, i, q, v, t)
    elif path == PATH_USER:
        if not position_fresh:
            user_joint_of(m, r, s, i, q, v, t)
    else:
        _velocity_fast_inline(m, r, s, i, q, v, t, full, position_fresh)


def joint_position(m, r, s, i, q, v, t, full):
    """X_i and S_i of joint i at (q, t); the generic path, which evaluates everything at once,
    also records vJ_i and cJ_i at the velocities v."""
    # the Python path (NUMBA_DISABLE_JIT); the compiled one is the overload's
    if paths_kind(full) != PATHS_ALL:
        return _position_fast(m, r, s, i, q, v, t, full)
    return _position_full(m, r, s, i, q, v, t, full)


def joint_velocity(m, r, s, i, q, v, t, full, position_fresh):
    """vJ_i and cJ_i at (q, v, t), the position part being recorded for (q, t).  The generic path
    evaluates the pose again unless ``position_fresh``: evaluated at these v a moment ago."""
    if paths_kind(full) != PATHS_ALL:
        return _velocity_fast(m, r, s, i, q, v, t, full, position_fresh)
    return _velocity_full(m, r, s, i, q, v, t, full, position_fresh)


# The overloads hand Numba the path functions themselves: Numba inlines a function by running its
# passes again and copying its code, at every level of nesting, and a wrapper calling them (a
# level more) cost the first rnea about 14 s of compiling (a quarter of it).
@overload(joint_position, jit_options={"forceinline": True})
def _joint_position(m, r, s, i, q, v, t, full):
    return _position_full if isinstance(full, types.Boolean) else _position_fast


@overload(joint_velocity, jit_options={"forceinline": True})
def _joint_velocity(m, r, s, i, q, v, t, full, position_fresh):
    return _velocity_full if isinstance(full, types.Boolean) else _velocity_fast
