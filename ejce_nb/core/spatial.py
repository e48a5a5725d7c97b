"""Spatial algebra on tuples: 3-vectors, 3x3 matrices (row-major 9-tuples), 6-vectors
[angular; linear], Pluecker transforms and rigid and articulated inertias.

The sweeps load what they need from the tables by index, do the algebra on tuples (registers: no
allocation, no reference counting) and store the results by index.

A Pluecker transform X from frame A to frame B is kept as (E, d): E the rotation from A
coordinates to B coordinates (row-major), d the origin of B in A.  Then

    X m  = [E w; E (v - d x w)]           for a motion m = [w; v]
    X^T f = [E^T n + d x E^T F; E^T F]     for a force f = [n; F] in B, moved to A

Symmetric 6x6 inertias are packed: the upper triangle row by row in 21 entries (row x starts at
6x - x(x-1)/2).  A rigid inertia about a frame origin, with mass m, first moment h = m c and
rotational inertia I about that origin, is [[I, h^], [-h^, m 1]].
"""
from .._jit import jit
from .lanes import load_row, store_row

ZERO3 = (0.0, 0.0, 0.0)
ZERO6 = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
EYE9 = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)


# ---------------------------------------------------------------------------- loads and stores
# (of one state's tables, or of a group's in the lane layout: ``lanes``).  Entry by entry: a tuple
# of numbers and lanes has no loop over its entries, so each width is written out, from one
# template each, generated into ``core/rowops.py`` by ``python -m ejce_nb.core.spatial``.
_LOAD = "def ld{n}(A, i):\n    return ({entries})\n"
_STORE = "def st{n}(A, i, x):\n{lines}"
_ADD = "def add{n}(A, i, x):\n{lines}"
GENERATED = "".join(
    [_LOAD.format(n=n, entries=", ".join(f"load_row(A, i, {k})" for k in range(n))) for n in (3, 6, 9, 21)]
    + [_STORE.format(n=n, lines="".join(f"    store_row(A, i, {k}, x[{k}])\n" for k in range(n)))
       for n in (3, 6, 9, 21)]
    + [_ADD.format(n=21, lines="".join(f"    store_row(A, i, {k}, load_row(A, i, {k}) + x[{k}])\n"
                                       for k in range(21)))])


ROWS_HEADER = '''"""Loads and stores of table rows as tuples (``spatial``): generated from the templates of
``spatial.GENERATED`` by ``python -m ejce_nb.core.spatial``; do not edit (a test checks that this file
is what the templates give)."""
from .._jit import jit
from .lanes import load_row, store_row
'''


def rows_source():
    """The text of ``core/rowops.py``: the generated loads and stores, each a kernel of its own (a file
    of their own, so that Numba caches them like every other kernel)."""
    functions = GENERATED.split("def ")[1:]
    return ROWS_HEADER + "".join(f"\n\n@jit\ndef {f.rstrip()}\n" for f in functions)


def write_rows():
    """Write ``core/rowops.py`` from the templates."""
    import os

    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "rowops.py"), "w") as f:
        f.write(rows_source())


# ldN(A, i): row i of table A as an N-tuple; stN(A, i, x): x into row i; add21: row i += x
from .rowops import ld3, ld6, ld9, ld21, st3, st6, st9, st21, add21  # noqa: E402


# ---------------------------------------------------------------------------- 3-vectors, 3x3
@jit
def cross(a, b):
    """a x b for 3-vectors."""
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


@jit
def add(a, b):
    """a + b for 3-vectors."""
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


@jit
def dot(a, b):
    """a . b for 3-vectors."""
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@jit
def sub(a, b):
    """a - b for 3-vectors."""
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


@jit
def scale3(s, a):
    """s a for a number s and a 3-vector a."""
    return (s * a[0], s * a[1], s * a[2])


@jit
def mv(A, x):
    """A x."""
    return (A[0] * x[0] + A[1] * x[1] + A[2] * x[2],
            A[3] * x[0] + A[4] * x[1] + A[5] * x[2],
            A[6] * x[0] + A[7] * x[1] + A[8] * x[2])


@jit
def mtv(A, x):
    """A^T x."""
    return (A[0] * x[0] + A[3] * x[1] + A[6] * x[2],
            A[1] * x[0] + A[4] * x[1] + A[7] * x[2],
            A[2] * x[0] + A[5] * x[1] + A[8] * x[2])


@jit
def mm(A, B):
    """A B."""
    return (A[0] * B[0] + A[1] * B[3] + A[2] * B[6], A[0] * B[1] + A[1] * B[4] + A[2] * B[7],
            A[0] * B[2] + A[1] * B[5] + A[2] * B[8],
            A[3] * B[0] + A[4] * B[3] + A[5] * B[6], A[3] * B[1] + A[4] * B[4] + A[5] * B[7],
            A[3] * B[2] + A[4] * B[5] + A[5] * B[8],
            A[6] * B[0] + A[7] * B[3] + A[8] * B[6], A[6] * B[1] + A[7] * B[4] + A[8] * B[7],
            A[6] * B[2] + A[7] * B[5] + A[8] * B[8])


@jit
def mmT(A, B):
    """A B^T."""
    return mm(A, (B[0], B[3], B[6], B[1], B[4], B[7], B[2], B[5], B[8]))


@jit
def mTm(A, B):
    """A^T B."""
    return mm((A[0], A[3], A[6], A[1], A[4], A[7], A[2], A[5], A[8]), B)


@jit
def rot_axis(a, s, c):
    """Rotation about the unit axis a by the angle of sine s and cosine c:
    R = c 1 + s a^ + (1 - c) a a^T."""
    k = 1.0 - c
    return (c + k * a[0] * a[0], k * a[0] * a[1] - s * a[2], k * a[0] * a[2] + s * a[1],
            k * a[0] * a[1] + s * a[2], c + k * a[1] * a[1], k * a[1] * a[2] - s * a[0],
            k * a[0] * a[2] - s * a[1], k * a[1] * a[2] + s * a[0], c + k * a[2] * a[2])


# ---------------------------------------------------------------------------- 6-vectors
@jit
def add6(a, b):
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3], a[4] + b[4], a[5] + b[5])


@jit
def sub6(a, b):
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2], a[3] - b[3], a[4] - b[4], a[5] - b[5])


@jit
def axpy6(s, a, b):
    """s a + b."""
    return (s * a[0] + b[0], s * a[1] + b[1], s * a[2] + b[2], s * a[3] + b[3], s * a[4] + b[4],
            s * a[5] + b[5])


@jit
def dot6(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3] + a[4] * b[4] + a[5] * b[5]


@jit
def xmotion(E, d, m):
    """X m for X = (E, d): [E w; E (v - d x w)]."""
    w0 = m[0]
    w1 = m[1]
    w2 = m[2]
    u0 = m[3] - (d[1] * w2 - d[2] * w1)
    u1 = m[4] - (d[2] * w0 - d[0] * w2)
    u2 = m[5] - (d[0] * w1 - d[1] * w0)
    return (E[0] * w0 + E[1] * w1 + E[2] * w2,
            E[3] * w0 + E[4] * w1 + E[5] * w2,
            E[6] * w0 + E[7] * w1 + E[8] * w2,
            E[0] * u0 + E[1] * u1 + E[2] * u2,
            E[3] * u0 + E[4] * u1 + E[5] * u2,
            E[6] * u0 + E[7] * u1 + E[8] * u2)


@jit
def xforce_T(E, d, f):
    """X^T f: a force in the frame X maps into, in the frame it maps from."""
    F0 = E[0] * f[3] + E[3] * f[4] + E[6] * f[5]
    F1 = E[1] * f[3] + E[4] * f[4] + E[7] * f[5]
    F2 = E[2] * f[3] + E[5] * f[4] + E[8] * f[5]
    return (E[0] * f[0] + E[3] * f[1] + E[6] * f[2] + d[1] * F2 - d[2] * F1,
            E[1] * f[0] + E[4] * f[1] + E[7] * f[2] + d[2] * F0 - d[0] * F2,
            E[2] * f[0] + E[5] * f[1] + E[8] * f[2] + d[0] * F1 - d[1] * F0,
            F0, F1, F2)


@jit
def crm(v, m):
    """Motion cross product v x m = [w x mw; w x mv + vv x mw]."""
    return (v[1] * m[2] - v[2] * m[1],
            v[2] * m[0] - v[0] * m[2],
            v[0] * m[1] - v[1] * m[0],
            v[1] * m[5] - v[2] * m[4] + v[4] * m[2] - v[5] * m[1],
            v[2] * m[3] - v[0] * m[5] + v[5] * m[0] - v[3] * m[2],
            v[0] * m[4] - v[1] * m[3] + v[3] * m[1] - v[4] * m[0])


@jit
def crf(v, f):
    """Force cross product v x* f = [w x n + vv x F; w x F]."""
    return (v[1] * f[2] - v[2] * f[1] + v[4] * f[5] - v[5] * f[4],
            v[2] * f[0] - v[0] * f[2] + v[5] * f[3] - v[3] * f[5],
            v[0] * f[1] - v[1] * f[0] + v[3] * f[4] - v[4] * f[3],
            v[1] * f[5] - v[2] * f[4],
            v[2] * f[3] - v[0] * f[5],
            v[0] * f[4] - v[1] * f[3])


@jit
def motion_out(R, o, m):
    """A motion in the coordinates of a frame with world axes R and origin o, in world
    coordinates (world axes, at the world origin): [R w; R v + o x R w]."""
    w = mv(R, (m[0], m[1], m[2]))
    u = mv(R, (m[3], m[4], m[5]))
    ow = cross(o, w)
    return (w[0], w[1], w[2], u[0] + ow[0], u[1] + ow[1], u[2] + ow[2])


@jit
def force_out(R, o, f):
    """A force in the coordinates of a frame with world axes R and origin o, in world
    coordinates: [R n + o x R F; R F]."""
    F = mv(R, (f[3], f[4], f[5]))
    n = mv(R, (f[0], f[1], f[2]))
    oF = cross(o, F)
    return (n[0] + oF[0], n[1] + oF[1], n[2] + oF[2], F[0], F[1], F[2])


# ---------------------------------------------------------------------------- inertias
@jit
def inertia_mul(m, h, I, x):
    """I x for the rigid inertia [[I, h^], [-h^, m 1]]: [I w + h x v; m v - h x w]."""
    return (I[0] * x[0] + I[1] * x[1] + I[2] * x[2] + h[1] * x[5] - h[2] * x[4],
            I[3] * x[0] + I[4] * x[1] + I[5] * x[2] + h[2] * x[3] - h[0] * x[5],
            I[6] * x[0] + I[7] * x[1] + I[8] * x[2] + h[0] * x[4] - h[1] * x[3],
            m * x[3] - (h[1] * x[2] - h[2] * x[1]),
            m * x[4] - (h[2] * x[0] - h[0] * x[2]),
            m * x[5] - (h[0] * x[1] - h[1] * x[0]))


@jit
def rigid21(m, h, I):
    """The rigid inertia [[I, h^], [-h^, m 1]], packed."""
    return (I[0], I[1], I[2], 0.0, -h[2], h[1],
            I[4], I[5], h[2], 0.0, -h[0],
            I[8], -h[1], h[0], 0.0,
            m, 0.0, 0.0,
            m, 0.0,
            m)


@jit
def rigid_out(m, hC, IC, R, o):
    """(h, I) of the rigid inertia (m, hC, IC about the origin of a frame with world axes R and
    origin o, in its axes) about the world origin in world axes: h = R hC + m o and, with
    [a^][b^] = b a^T - (a.b) 1,  I = R IC R^T - m [o^]^2 - [o^][Rh^] - [Rh^][o^]."""
    h = mv(R, hC)
    I = mm(R, mmT(IC, R))
    oo = o[0] * o[0] + o[1] * o[1] + o[2] * o[2]
    oh = o[0] * h[0] + o[1] * h[1] + o[2] * h[2]
    dg = m * oo + 2.0 * oh
    i01 = I[1] - m * o[0] * o[1] - h[0] * o[1] - o[0] * h[1]
    i02 = I[2] - m * o[0] * o[2] - h[0] * o[2] - o[0] * h[2]
    i12 = I[5] - m * o[1] * o[2] - h[1] * o[2] - o[1] * h[2]
    return ((h[0] + m * o[0], h[1] + m * o[1], h[2] + m * o[2]),
            (I[0] - m * o[0] * o[0] - 2.0 * h[0] * o[0] + dg, i01, i02,
             i01, I[4] - m * o[1] * o[1] - 2.0 * h[1] * o[1] + dg, i12,
             i02, i12, I[8] - m * o[2] * o[2] - 2.0 * h[2] * o[2] + dg))


@jit
def sym_mul(A, x):
    """A x for a packed symmetric A."""
    return (A[0] * x[0] + A[1] * x[1] + A[2] * x[2] + A[3] * x[3] + A[4] * x[4] + A[5] * x[5],
            A[1] * x[0] + A[6] * x[1] + A[7] * x[2] + A[8] * x[3] + A[9] * x[4] + A[10] * x[5],
            A[2] * x[0] + A[7] * x[1] + A[11] * x[2] + A[12] * x[3] + A[13] * x[4] + A[14] * x[5],
            A[3] * x[0] + A[8] * x[1] + A[12] * x[2] + A[15] * x[3] + A[16] * x[4] + A[17] * x[5],
            A[4] * x[0] + A[9] * x[1] + A[13] * x[2] + A[16] * x[3] + A[18] * x[4] + A[19] * x[5],
            A[5] * x[0] + A[10] * x[1] + A[14] * x[2] + A[17] * x[3] + A[19] * x[4] + A[20] * x[5])


@jit
def sym_sub_outer(A, a, b):
    """A - a b^T on the upper triangle (for sums of such terms that are symmetric)."""
    return (A[0] - a[0] * b[0], A[1] - a[0] * b[1], A[2] - a[0] * b[2], A[3] - a[0] * b[3],
            A[4] - a[0] * b[4], A[5] - a[0] * b[5],
            A[6] - a[1] * b[1], A[7] - a[1] * b[2], A[8] - a[1] * b[3], A[9] - a[1] * b[4],
            A[10] - a[1] * b[5],
            A[11] - a[2] * b[2], A[12] - a[2] * b[3], A[13] - a[2] * b[4], A[14] - a[2] * b[5],
            A[15] - a[3] * b[3], A[16] - a[3] * b[4], A[17] - a[3] * b[5],
            A[18] - a[4] * b[4], A[19] - a[4] * b[5],
            A[20] - a[5] * b[5])


@jit
def sym_to_parent(E, d, A):
    """X^T A X for a packed symmetric inertia A in the frame X maps into: the same inertia in the
    frame X maps from.  Rotating the blocks first (A' = E^T A_ww E, B' = E^T A_wv E,
    C' = E^T A_vv E) leaves the shift by d as cross products:
    [[A' + d^ B'^T - K d^, K], [K^T, C']], K = B' + d^ C'."""
    a00, a01, a02, _, a11, a12, _, _, a22 = mTm(E, mm((A[0], A[1], A[2], A[1], A[6], A[7], A[2], A[7], A[11]), E))
    b00, b01, b02, b10, b11, b12, b20, b21, b22 = mTm(E, mm((A[3], A[4], A[5], A[8], A[9], A[10], A[12], A[13], A[14]),
                                                          E))
    c00, c01, c02, _, c11, c12, _, _, c22 = mTm(E, mm((A[15], A[16], A[17], A[16], A[18], A[19], A[17], A[19], A[20]),
                                                      E))
    d0 = d[0]
    d1 = d[1]
    d2 = d[2]
    # K = B' + d^ C'
    k00 = b00 + d1 * c02 - d2 * c01
    k10 = b10 + d2 * c00 - d0 * c02
    k20 = b20 + d0 * c01 - d1 * c00
    k01 = b01 + d1 * c12 - d2 * c11
    k11 = b11 + d2 * c01 - d0 * c12
    k21 = b21 + d0 * c11 - d1 * c01
    k02 = b02 + d1 * c22 - d2 * c12
    k12 = b12 + d2 * c02 - d0 * c22
    k22 = b22 + d0 * c12 - d1 * c02
    # A' + d^ B'^T - K d^: entry (x, y) adds (d x row y of B')_x + (d x row x of K)_y
    t00 = a00 + (d1 * b02 - d2 * b01) + (d1 * k02 - d2 * k01)
    t01 = a01 + (d1 * b12 - d2 * b11) + (d2 * k00 - d0 * k02)
    t02 = a02 + (d1 * b22 - d2 * b21) + (d0 * k01 - d1 * k00)
    t11 = a11 + (d2 * b10 - d0 * b12) + (d2 * k10 - d0 * k12)
    t12 = a12 + (d2 * b20 - d0 * b22) + (d0 * k11 - d1 * k10)
    t22 = a22 + (d0 * b21 - d1 * b20) + (d0 * k21 - d1 * k20)
    return (t00, t01, t02, k00, k01, k02, t11, t12, k10, k11, k12,
            t22, k20, k21, k22, c00, c01, c02, c11, c12, c22)


if __name__ == "__main__":
    write_rows()
