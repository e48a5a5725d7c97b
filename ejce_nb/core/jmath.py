"""The math a user-defined joint's pose function is written with (``ej.joints.Custom``).

Every function takes numbers or jets (``joints.jet.Jet``, what the coordinates and time are when
the pose is evaluated for the EJCE terms) and returns the same kind, so a pose written with these
and ordinary arithmetic gives its exact Jacobian and bias with no derivative written by hand.
Outside compiled code they take plain numbers (and NumPy arrays where that makes sense), so a
pose function can be tried in Python first.

Vectors are tuples of 3 entries, rotation matrices tuples of three rows ``((R00, R01, R02),
(R10, R11, R12), (R20, R21, R22))``, a pose ``(R, r)``; entries may mix numbers and jets.

* scalars: ``sin cos tan exp log sqrt asin acos atan atan2 sinh cosh tanh value`` (``value(x)``:
  the value of a jet);
* rotations: ``rot_x(a) rot_y(a) rot_z(a) rot(axis, a)`` (about a unit axis),
  ``quat_to_matrix(w, x, y, z)`` (normalises);
* matrices and vectors: ``matmul matvec transpose cross dot add sub scale(s, a) norm normalize``;
* poses: ``compose(A, B)`` (A then B), ``inverse(A)``, ``from_transform(T)`` (``(R, r)`` of a
  4 x 4 homogeneous transform given as rows).
"""
import math

import numpy as np
from numba import types
from numba.extending import overload

from .._jit import jit
from .joints.jet import Jet, jet_fun, jet_value
# the kernels' own 3-vector helpers: generic arithmetic, so they take jets as well as numbers
from .spatial import add, cross, sub  # noqa: F401
from .spatial import scale3 as scale  # noqa: F401

_NUM = (types.Float, types.Integer, types.Boolean)


def _scalar(fn, derivs):
    """Make ``fn`` (its NumPy form, for numbers and arrays) take jets in compiled code too:
    ``derivs(v)`` gives the value and first and second derivatives at v."""
    @overload(fn)
    def _impl(x):
        if isinstance(x, Jet):
            def impl(x):
                f0, f1, f2 = derivs(jet_value(x))
                return jet_fun(x, f0, f1, f2)
            return impl
        if isinstance(x, _NUM):
            return lambda x: derivs(x)[0]
        return None
    return fn


def sin(x):
    """sin x"""
    return np.sin(x)


def cos(x):
    """cos x"""
    return np.cos(x)


def tan(x):
    """tan x"""
    return np.tan(x)


def exp(x):
    """e^x"""
    return np.exp(x)


def log(x):
    """natural logarithm"""
    return np.log(x)


def sqrt(x):
    """square root (x > 0 where derivatives are wanted)"""
    return np.sqrt(x)


def asin(x):
    """arcsine"""
    return np.arcsin(x)


def acos(x):
    """arccosine"""
    return np.arccos(x)


def atan(x):
    """arctangent"""
    return np.arctan(x)


def sinh(x):
    """hyperbolic sine"""
    return np.sinh(x)


def cosh(x):
    """hyperbolic cosine"""
    return np.cosh(x)


def tanh(x):
    """hyperbolic tangent"""
    return np.tanh(x)


@jit
def _d_sin(v):
    s = math.sin(v)
    return s, math.cos(v), -s


@jit
def _d_cos(v):
    c = math.cos(v)
    return c, -math.sin(v), -c


@jit
def _d_tan(v):
    t = math.tan(v)
    d = 1.0 + t * t
    return t, d, 2.0 * t * d


@jit
def _d_exp(v):
    e = math.exp(v)
    return e, e, e


@jit
def _d_log(v):
    return math.log(v), 1.0 / v, -1.0 / (v * v)


@jit
def _d_sqrt(v):
    r = math.sqrt(v)
    return r, 0.5 / r, -0.25 / (v * r)


@jit
def _d_asin(v):
    w = 1.0 - v * v
    return math.asin(v), 1.0 / math.sqrt(w), v / (w * math.sqrt(w))


@jit
def _d_acos(v):
    w = 1.0 - v * v
    return math.acos(v), -1.0 / math.sqrt(w), -v / (w * math.sqrt(w))


@jit
def _d_atan(v):
    w = 1.0 + v * v
    return math.atan(v), 1.0 / w, -2.0 * v / (w * w)


@jit
def _d_sinh(v):
    return math.sinh(v), math.cosh(v), math.sinh(v)


@jit
def _d_cosh(v):
    return math.cosh(v), math.sinh(v), math.cosh(v)


@jit
def _d_tanh(v):
    t = math.tanh(v)
    d = 1.0 - t * t
    return t, d, -2.0 * t * d


for _fn, _d in ((sin, _d_sin), (cos, _d_cos), (tan, _d_tan), (exp, _d_exp), (log, _d_log), (sqrt, _d_sqrt),
                (asin, _d_asin), (acos, _d_acos), (atan, _d_atan), (sinh, _d_sinh), (cosh, _d_cosh),
                (tanh, _d_tanh)):
    _scalar(_fn, _d)


def atan2(y, x):
    """The angle of the point (x, y), in (-pi, pi]."""
    return np.arctan2(y, x)


@overload(atan2)
def _atan2(y, x):
    if isinstance(y, Jet) or isinstance(x, Jet):
        def impl(y, x):
            # atan2 differs from atan(y / x) (or from -atan(x / y)) by a constant near any point,
            # so it has their derivatives; the better conditioned quotient is used
            yv = value(y)
            xv = value(x)
            d = atan(y / x) if abs(xv) >= abs(yv) else -atan(x / y)
            return d + (math.atan2(yv, xv) - value(d))
        return impl
    if isinstance(y, _NUM) and isinstance(x, _NUM):
        return lambda y, x: math.atan2(y, x)
    return None


def value(x):
    """The value of a jet (a number is its own value)."""
    return x


@overload(value)
def _value(x):
    if isinstance(x, Jet):
        return lambda x: jet_value(x)
    if isinstance(x, _NUM):
        return lambda x: x
    return None


# ---------------------------------------------------------------------------- rotations
@jit
def rot_x(a):
    """Rotation by a about x."""
    c = cos(a)
    s = sin(a)
    return ((1.0, 0.0, 0.0), (0.0, c, -s), (0.0, s, c))


@jit
def rot_y(a):
    """Rotation by a about y."""
    c = cos(a)
    s = sin(a)
    return ((c, 0.0, s), (0.0, 1.0, 0.0), (-s, 0.0, c))


@jit
def rot_z(a):
    """Rotation by a about z."""
    c = cos(a)
    s = sin(a)
    return ((c, -s, 0.0), (s, c, 0.0), (0.0, 0.0, 1.0))


@jit
def rot(axis, a):
    """Rotation by a about the unit axis (3 entries, numbers or jets):
    c 1 + s axis^ + (1 - c) axis axis^T."""
    x = axis[0]
    y = axis[1]
    z = axis[2]
    c = cos(a)
    s = sin(a)
    k = 1.0 - c
    return ((c + k * x * x, k * x * y - s * z, k * x * z + s * y),
            (k * x * y + s * z, c + k * y * y, k * y * z - s * x),
            (k * x * z - s * y, k * y * z + s * x, c + k * z * z))


@jit
def quat_to_matrix(w, x, y, z):
    """Rotation of the quaternion (w, x, y, z), normalised: 1 + 2/n (w v^ + v^ v^), n = |q|^2."""
    k = 2.0 / (w * w + x * x + y * y + z * z)
    return ((1.0 - k * (y * y + z * z), k * (x * y - w * z), k * (x * z + w * y)),
            (k * (x * y + w * z), 1.0 - k * (x * x + z * z), k * (y * z - w * x)),
            (k * (x * z - w * y), k * (y * z + w * x), 1.0 - k * (x * x + y * y)))


# ---------------------------------------------------------------------------- matrices, vectors
@jit
def matmul(A, B):
    """A B for 3 x 3 matrices (tuples of rows)."""
    return ((A[0][0] * B[0][0] + A[0][1] * B[1][0] + A[0][2] * B[2][0],
             A[0][0] * B[0][1] + A[0][1] * B[1][1] + A[0][2] * B[2][1],
             A[0][0] * B[0][2] + A[0][1] * B[1][2] + A[0][2] * B[2][2]),
            (A[1][0] * B[0][0] + A[1][1] * B[1][0] + A[1][2] * B[2][0],
             A[1][0] * B[0][1] + A[1][1] * B[1][1] + A[1][2] * B[2][1],
             A[1][0] * B[0][2] + A[1][1] * B[1][2] + A[1][2] * B[2][2]),
            (A[2][0] * B[0][0] + A[2][1] * B[1][0] + A[2][2] * B[2][0],
             A[2][0] * B[0][1] + A[2][1] * B[1][1] + A[2][2] * B[2][1],
             A[2][0] * B[0][2] + A[2][1] * B[1][2] + A[2][2] * B[2][2]))


@jit
def matvec(A, x):
    """A x for a 3 x 3 matrix and a 3-vector."""
    return (A[0][0] * x[0] + A[0][1] * x[1] + A[0][2] * x[2],
            A[1][0] * x[0] + A[1][1] * x[1] + A[1][2] * x[2],
            A[2][0] * x[0] + A[2][1] * x[1] + A[2][2] * x[2])


@jit
def transpose(A):
    """A^T for a 3 x 3 matrix (a tuple of rows)."""
    return ((A[0][0], A[1][0], A[2][0]), (A[0][1], A[1][1], A[2][1]), (A[0][2], A[1][2], A[2][2]))


@jit
def dot(a, b):
    """a . b for 3-vectors."""
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@jit
def norm(a):
    """|a| of a 3-vector."""
    return sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2])


@jit
def normalize(a):
    """a / |a| for a 3-vector."""
    n = norm(a)
    return (a[0] / n, a[1] / n, a[2] / n)


# ---------------------------------------------------------------------------- poses
@jit
def compose(A, B):
    """The pose A then B: (R_A R_B, R_A r_B + r_A) for poses (R, r)."""
    return matmul(A[0], B[0]), add(matvec(A[0], B[1]), A[1])


@jit
def inverse(A):
    """The inverse of the pose A = (R, r): (R^T, -R^T r)."""
    Rt = transpose(A[0])
    return Rt, scale(-1.0, matvec(Rt, A[1]))


@jit
def from_transform(T):
    """(R, r) of a 4 x 4 homogeneous transform given as a tuple of (at least) its first three rows."""
    return ((T[0][0], T[0][1], T[0][2]), (T[1][0], T[1][1], T[1][2]), (T[2][0], T[2][1], T[2][2])), \
        (T[0][3], T[1][3], T[2][3])
