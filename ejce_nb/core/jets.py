"""Truncated Taylor arithmetic ("jets"): the generic EJCE path.

A jet carries one scalar x(s) along a motion as the tuple

    (x, dx/ds, d2x/ds2, dx/du_0, ..., dx/du_5)

the value, its first and second derivative along the actual motion (q -> q(s), t -> t + s,
with q'' = 0 for ordinary coordinates), and its gradient with respect to the joint's velocity
variables u (the coordinate rates, or a quaternion's angular velocity).  Evaluating a joint's pose
function R(q, t), r(q, t) once on jets gives R, dR/du_k (J's columns), dR/ds (J u + sigma) and
d2R/ds2 (the bias b) with no derivative written by hand.

Jets are flat tuples of 9 floats (tuples, not arrays: no allocation); every operation below is
written out element by element so each is compiled once for the one jet type.
"""
import numpy as np

from .._jit import jit

JET_LEN = 9


@jit
def jconst(c):
    return (c, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)


@jit
def jadd(a, b):
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3], a[4] + b[4], a[5] + b[5], a[6] + b[6], a[7] + b[7], a[8] + b[8])


@jit
def jsub(a, b):
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2], a[3] - b[3], a[4] - b[4], a[5] - b[5], a[6] - b[6], a[7] - b[7], a[8] - b[8])


@jit
def jneg(a):
    return (-a[0], -a[1], -a[2], -a[3], -a[4], -a[5], -a[6], -a[7], -a[8])


@jit
def jscale(a, s):
    """s * a for a float s."""
    return (s * a[0], s * a[1], s * a[2], s * a[3], s * a[4], s * a[5], s * a[6], s * a[7], s * a[8])


@jit
def jaddc(a, c):
    """a + c for a float c."""
    return (a[0] + c, a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8])


@jit
def jaxpy(s, a, b):
    """s * a + b for a float s."""
    return (s * a[0] + b[0], s * a[1] + b[1], s * a[2] + b[2], s * a[3] + b[3], s * a[4] + b[4], s * a[5] + b[5], s * a[6] + b[6], s * a[7] + b[7], s * a[8] + b[8])


@jit
def jmul(a, b):
    return (a[0] * b[0], a[1] * b[0] + a[0] * b[1], a[2] * b[0] + 2.0 * a[1] * b[1] + a[0] * b[2], a[3] * b[0] + a[0] * b[3], a[4] * b[0] + a[0] * b[4], a[5] * b[0] + a[0] * b[5], a[6] * b[0] + a[0] * b[6], a[7] * b[0] + a[0] * b[7], a[8] * b[0] + a[0] * b[8])


@jit
def jfun(a, f0, f1, f2):
    """f(a) for a scalar function with value f0, first derivative f1, second f2 at a[0]."""
    return (f0, f1 * a[1], f2 * a[1] * a[1] + f1 * a[2], f1 * a[3], f1 * a[4], f1 * a[5], f1 * a[6], f1 * a[7], f1 * a[8])


@jit
def jsincos(a):
    """(sin a, cos a) with one sine and one cosine evaluation."""
    s = np.sin(a[0])
    c = np.cos(a[0])
    a11 = a[1] * a[1]
    return ((s, c * a[1], c * a[2] - s * a11, c * a[3], c * a[4], c * a[5], c * a[6], c * a[7], c * a[8]),
            (c, -s * a[1], -s * a[2] - c * a11, -s * a[3], -s * a[4], -s * a[5], -s * a[6], -s * a[7], -s * a[8]))


@jit
def jrecip(a):
    """1 / a."""
    f0 = 1.0 / a[0]
    f1 = -f0 * f0
    return jfun(a, f0, f1, -2.0 * f1 * f0)


@jit
def jmat_identity():
    o = jconst(1.0)
    z = jconst(0.0)
    return (o, z, z, z, o, z, z, z, o)


@jit
def jmat_mul(A, B):
    return (jadd(jadd(jmul(A[0], B[0]), jmul(A[1], B[3])), jmul(A[2], B[6])),
            jadd(jadd(jmul(A[0], B[1]), jmul(A[1], B[4])), jmul(A[2], B[7])),
            jadd(jadd(jmul(A[0], B[2]), jmul(A[1], B[5])), jmul(A[2], B[8])),
            jadd(jadd(jmul(A[3], B[0]), jmul(A[4], B[3])), jmul(A[5], B[6])),
            jadd(jadd(jmul(A[3], B[1]), jmul(A[4], B[4])), jmul(A[5], B[7])),
            jadd(jadd(jmul(A[3], B[2]), jmul(A[4], B[5])), jmul(A[5], B[8])),
            jadd(jadd(jmul(A[6], B[0]), jmul(A[7], B[3])), jmul(A[8], B[6])),
            jadd(jadd(jmul(A[6], B[1]), jmul(A[7], B[4])), jmul(A[8], B[7])),
            jadd(jadd(jmul(A[6], B[2]), jmul(A[7], B[5])), jmul(A[8], B[8])))


@jit
def jmat_vec(A, x):
    return (jadd(jadd(jmul(A[0], x[0]), jmul(A[1], x[1])), jmul(A[2], x[2])),
            jadd(jadd(jmul(A[3], x[0]), jmul(A[4], x[1])), jmul(A[5], x[2])),
            jadd(jadd(jmul(A[6], x[0]), jmul(A[7], x[1])), jmul(A[8], x[2])))


@jit
def jrot_axis(ax, ay, az, s, c):
    """Rotation about the unit axis (ax, ay, az) given the angle's sine and cosine jets:
    R = c I + s [a]x + (1 - c) a a^T."""
    k = jaddc(jneg(c), 1.0)
    return (jaxpy(ax * ax, k, c), jsub(jscale(k, ax * ay), jscale(s, az)), jadd(jscale(k, ax * az), jscale(s, ay)),
            jadd(jscale(k, ax * ay), jscale(s, az)), jaxpy(ay * ay, k, c), jsub(jscale(k, ay * az), jscale(s, ax)),
            jsub(jscale(k, ax * az), jscale(s, ay)), jadd(jscale(k, ay * az), jscale(s, ax)), jaxpy(az * az, k, c))


@jit
def jrot_skew(x, y, z, a, b):
    """R = I + a [v]x + b [v]x^2 for v = (x, y, z); [v]x^2 = v v^T - |v|^2 I.  Covers the
    quaternion, rotation vector, Gibbs and modified Rodrigues parameterisations."""
    xx = jmul(x, x)
    yy = jmul(y, y)
    zz = jmul(z, z)
    xy = jmul(x, y)
    xz = jmul(x, z)
    yz = jmul(y, z)
    return (jaddc(jneg(jmul(b, jadd(yy, zz))), 1.0), jsub(jmul(b, xy), jmul(a, z)), jadd(jmul(b, xz), jmul(a, y)),
            jadd(jmul(b, xy), jmul(a, z)), jaddc(jneg(jmul(b, jadd(xx, zz))), 1.0), jsub(jmul(b, yz), jmul(a, x)),
            jsub(jmul(b, xz), jmul(a, y)), jadd(jmul(b, yz), jmul(a, x)), jaddc(jneg(jmul(b, jadd(xx, yy))), 1.0))


@jit
def jmat_turn_cols(R, k, s, c):
    """R Rot_k(angle), for a rotation about coordinate axis k with sine s and cosine c: only the
    columns of the other two axes i = k+1, j = k+2 (mod 3) change, col_i <- c col_i + s col_j,
    col_j <- c col_j - s col_i (12 jet products, not a full product's 27)."""
    if k == 0:
        return (R[0],
                jadd(jmul(c, R[1]), jmul(s, R[2])),
                jsub(jmul(c, R[2]), jmul(s, R[1])),
                R[3],
                jadd(jmul(c, R[4]), jmul(s, R[5])),
                jsub(jmul(c, R[5]), jmul(s, R[4])),
                R[6],
                jadd(jmul(c, R[7]), jmul(s, R[8])),
                jsub(jmul(c, R[8]), jmul(s, R[7])))
    if k == 1:
        return (jsub(jmul(c, R[0]), jmul(s, R[2])),
                R[1],
                jadd(jmul(c, R[2]), jmul(s, R[0])),
                jsub(jmul(c, R[3]), jmul(s, R[5])),
                R[4],
                jadd(jmul(c, R[5]), jmul(s, R[3])),
                jsub(jmul(c, R[6]), jmul(s, R[8])),
                R[7],
                jadd(jmul(c, R[8]), jmul(s, R[6])))
    return (jadd(jmul(c, R[0]), jmul(s, R[1])),
                jsub(jmul(c, R[1]), jmul(s, R[0])),
                R[2],
                jadd(jmul(c, R[3]), jmul(s, R[4])),
                jsub(jmul(c, R[4]), jmul(s, R[3])),
                R[5],
                jadd(jmul(c, R[6]), jmul(s, R[7])),
                jsub(jmul(c, R[7]), jmul(s, R[6])),
                R[8])


@jit
def jmat_turn_rows(R, k, s, c):
    """Rot_k(angle) R: only the rows i = k+1, j = k+2 (mod 3) change, row_i <- c row_i - s row_j,
    row_j <- c row_j + s row_i."""
    if k == 0:
        return (R[0],
                R[1],
                R[2],
                jsub(jmul(c, R[3]), jmul(s, R[6])),
                jsub(jmul(c, R[4]), jmul(s, R[7])),
                jsub(jmul(c, R[5]), jmul(s, R[8])),
                jadd(jmul(c, R[6]), jmul(s, R[3])),
                jadd(jmul(c, R[7]), jmul(s, R[4])),
                jadd(jmul(c, R[8]), jmul(s, R[5])))
    if k == 1:
        return (jadd(jmul(c, R[0]), jmul(s, R[6])),
                jadd(jmul(c, R[1]), jmul(s, R[7])),
                jadd(jmul(c, R[2]), jmul(s, R[8])),
                R[3],
                R[4],
                R[5],
                jsub(jmul(c, R[6]), jmul(s, R[0])),
                jsub(jmul(c, R[7]), jmul(s, R[1])),
                jsub(jmul(c, R[8]), jmul(s, R[2])))
    return (jsub(jmul(c, R[0]), jmul(s, R[3])),
                jsub(jmul(c, R[1]), jmul(s, R[4])),
                jsub(jmul(c, R[2]), jmul(s, R[5])),
                jadd(jmul(c, R[3]), jmul(s, R[0])),
                jadd(jmul(c, R[4]), jmul(s, R[1])),
                jadd(jmul(c, R[5]), jmul(s, R[2])),
                R[6],
                R[7],
                R[8])
