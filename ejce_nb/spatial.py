"""Small explicit-loop helpers on 3-vectors and 3x3 matrices stored in numpy arrays (no
temporaries: each writes into an output it is given or returns scalars)."""
from ._jit import jit


@jit
def cross(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


@jit
def matvec(R, x):
    """R x for a 3x3 array R and an indexable 3-vector x."""
    return (R[0, 0] * x[0] + R[0, 1] * x[1] + R[0, 2] * x[2],
            R[1, 0] * x[0] + R[1, 1] * x[1] + R[1, 2] * x[2],
            R[2, 0] * x[0] + R[2, 1] * x[1] + R[2, 2] * x[2])


@jit
def matTvec(R, x):
    """R^T x."""
    return (R[0, 0] * x[0] + R[1, 0] * x[1] + R[2, 0] * x[2],
            R[0, 1] * x[0] + R[1, 1] * x[1] + R[2, 1] * x[2],
            R[0, 2] * x[0] + R[1, 2] * x[1] + R[2, 2] * x[2])


@jit
def matmul_into(A, B, out):
    """out = A B (out must not alias A or B)."""
    for i in range(3):
        for j in range(3):
            out[i, j] = A[i, 0] * B[0, j] + A[i, 1] * B[1, j] + A[i, 2] * B[2, j]


@jit
def matmulT_into(A, B, out):
    """out = A B^T."""
    for i in range(3):
        for j in range(3):
            out[i, j] = A[i, 0] * B[j, 0] + A[i, 1] * B[j, 1] + A[i, 2] * B[j, 2]
