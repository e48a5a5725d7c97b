"""Loads and stores of table rows as tuples (``spatial``): generated from the templates of
``spatial.GENERATED`` by ``python -m ejce_nb.core.spatial``; do not edit (a test checks that this file
is what the templates give)."""
from .._jit import jit
from .lanes import load_row, store_row


@jit
def ld3(A, i):
    return (load_row(A, i, 0), load_row(A, i, 1), load_row(A, i, 2))


@jit
def ld6(A, i):
    return (load_row(A, i, 0), load_row(A, i, 1), load_row(A, i, 2), load_row(A, i, 3), load_row(A, i, 4), load_row(A, i, 5))


@jit
def ld9(A, i):
    return (load_row(A, i, 0), load_row(A, i, 1), load_row(A, i, 2), load_row(A, i, 3), load_row(A, i, 4), load_row(A, i, 5), load_row(A, i, 6), load_row(A, i, 7), load_row(A, i, 8))


@jit
def ld21(A, i):
    return (load_row(A, i, 0), load_row(A, i, 1), load_row(A, i, 2), load_row(A, i, 3), load_row(A, i, 4), load_row(A, i, 5), load_row(A, i, 6), load_row(A, i, 7), load_row(A, i, 8), load_row(A, i, 9), load_row(A, i, 10), load_row(A, i, 11), load_row(A, i, 12), load_row(A, i, 13), load_row(A, i, 14), load_row(A, i, 15), load_row(A, i, 16), load_row(A, i, 17), load_row(A, i, 18), load_row(A, i, 19), load_row(A, i, 20))


@jit
def st3(A, i, x):
    store_row(A, i, 0, x[0])
    store_row(A, i, 1, x[1])
    store_row(A, i, 2, x[2])


@jit
def st6(A, i, x):
    store_row(A, i, 0, x[0])
    store_row(A, i, 1, x[1])
    store_row(A, i, 2, x[2])
    store_row(A, i, 3, x[3])
    store_row(A, i, 4, x[4])
    store_row(A, i, 5, x[5])


@jit
def st9(A, i, x):
    store_row(A, i, 0, x[0])
    store_row(A, i, 1, x[1])
    store_row(A, i, 2, x[2])
    store_row(A, i, 3, x[3])
    store_row(A, i, 4, x[4])
    store_row(A, i, 5, x[5])
    store_row(A, i, 6, x[6])
    store_row(A, i, 7, x[7])
    store_row(A, i, 8, x[8])


@jit
def st21(A, i, x):
    store_row(A, i, 0, x[0])
    store_row(A, i, 1, x[1])
    store_row(A, i, 2, x[2])
    store_row(A, i, 3, x[3])
    store_row(A, i, 4, x[4])
    store_row(A, i, 5, x[5])
    store_row(A, i, 6, x[6])
    store_row(A, i, 7, x[7])
    store_row(A, i, 8, x[8])
    store_row(A, i, 9, x[9])
    store_row(A, i, 10, x[10])
    store_row(A, i, 11, x[11])
    store_row(A, i, 12, x[12])
    store_row(A, i, 13, x[13])
    store_row(A, i, 14, x[14])
    store_row(A, i, 15, x[15])
    store_row(A, i, 16, x[16])
    store_row(A, i, 17, x[17])
    store_row(A, i, 18, x[18])
    store_row(A, i, 19, x[19])
    store_row(A, i, 20, x[20])


@jit
def add21(A, i, x):
    store_row(A, i, 0, load_row(A, i, 0) + x[0])
    store_row(A, i, 1, load_row(A, i, 1) + x[1])
    store_row(A, i, 2, load_row(A, i, 2) + x[2])
    store_row(A, i, 3, load_row(A, i, 3) + x[3])
    store_row(A, i, 4, load_row(A, i, 4) + x[4])
    store_row(A, i, 5, load_row(A, i, 5) + x[5])
    store_row(A, i, 6, load_row(A, i, 6) + x[6])
    store_row(A, i, 7, load_row(A, i, 7) + x[7])
    store_row(A, i, 8, load_row(A, i, 8) + x[8])
    store_row(A, i, 9, load_row(A, i, 9) + x[9])
    store_row(A, i, 10, load_row(A, i, 10) + x[10])
    store_row(A, i, 11, load_row(A, i, 11) + x[11])
    store_row(A, i, 12, load_row(A, i, 12) + x[12])
    store_row(A, i, 13, load_row(A, i, 13) + x[13])
    store_row(A, i, 14, load_row(A, i, 14) + x[14])
    store_row(A, i, 15, load_row(A, i, 15) + x[15])
    store_row(A, i, 16, load_row(A, i, 16) + x[16])
    store_row(A, i, 17, load_row(A, i, 17) + x[17])
    store_row(A, i, 18, load_row(A, i, 18) + x[18])
    store_row(A, i, 19, load_row(A, i, 19) + x[19])
    store_row(A, i, 20, load_row(A, i, 20) + x[20])
