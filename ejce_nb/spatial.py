"""Small 3-vector and 3x3 helpers on tuples (3x3 matrices as row-major 9-tuples).

The sweeps load what they need from the model and workspace arrays by index, do the algebra on
tuples (registers, no allocation, no reference counting) and store results by index: passing row
views of arrays into calls costs reference-count traffic that dominates a per-body step.
"""
from ._jit import jit


@jit
def cross(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


@jit
def add(a, b):
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


@jit
def sub(a, b):
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


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
    return (A[0] * B[0] + A[1] * B[1] + A[2] * B[2], A[0] * B[3] + A[1] * B[4] + A[2] * B[5],
            A[0] * B[6] + A[1] * B[7] + A[2] * B[8],
            A[3] * B[0] + A[4] * B[1] + A[5] * B[2], A[3] * B[3] + A[4] * B[4] + A[5] * B[5],
            A[3] * B[6] + A[4] * B[7] + A[5] * B[8],
            A[6] * B[0] + A[7] * B[1] + A[8] * B[2], A[6] * B[3] + A[7] * B[4] + A[8] * B[5],
            A[6] * B[6] + A[7] * B[7] + A[8] * B[8])


@jit
def mTm(A, B):
    """A^T B."""
    return (A[0] * B[0] + A[3] * B[3] + A[6] * B[6], A[0] * B[1] + A[3] * B[4] + A[6] * B[7],
            A[0] * B[2] + A[3] * B[5] + A[6] * B[8],
            A[1] * B[0] + A[4] * B[3] + A[7] * B[6], A[1] * B[1] + A[4] * B[4] + A[7] * B[7],
            A[1] * B[2] + A[4] * B[5] + A[7] * B[8],
            A[2] * B[0] + A[5] * B[3] + A[8] * B[6], A[2] * B[1] + A[5] * B[4] + A[8] * B[7],
            A[2] * B[2] + A[5] * B[5] + A[8] * B[8])
