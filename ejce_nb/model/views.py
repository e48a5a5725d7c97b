"""The compiled views of the packed buffers (``layout``): generated from the declarations of
``layout.MODEL``, ``RECORD`` and ``SCRATCH`` by ``python -m ejce_nb.model.layout``; do not edit (a test
checks that this file is what the declarations give).  Each is inlined by LLVM where it is called,
so a kernel keeps only the tables it reads."""
import numpy as np

from .._jit import jit
from ..core.lanes import LANES
from .layout import ModelView, Record, Scratch, rows, rows3, vec


@jit(forceinline=True)
def model_view(mb):
    """The model's tables (``MODEL``) in its buffer."""
    n1 = mb[4]
    nq = mb[5]
    nv = mb[6]
    nmot = mb[7]
    npar = mb[8]
    mf = vec(mb, mb[2], mb.shape[0] - mb[2]).view(np.float64)
    return ModelView(
        vec(mb, mb[9], n1),
        vec(mb, mb[10], n1),
        vec(mb, mb[11], n1),
        vec(mb, mb[12], n1),
        vec(mb, mb[13], n1),
        vec(mb, mb[14], n1),
        vec(mb, mb[15], n1),
        vec(mb, mb[16], n1),
        vec(mb, mb[17], n1),
        vec(mb, mb[18], n1),
        vec(mb, mb[19], n1),
        vec(mb, mb[20], n1),
        vec(mb, mb[21], n1),
        vec(mb, mb[22], n1),
        vec(mb, mb[23], nmot),
        vec(mb, mb[24], nmot),
        vec(mb, mb[25], nmot),
        vec(mf, mb[26], npar),
        rows(mf, mb[27], n1, 9),
        rows(mf, mb[28], n1, 3),
        vec(mf, mb[29], n1),
        rows(mf, mb[30], n1, 3),
        rows(mf, mb[31], n1, 9),
        rows(mf, mb[32], n1, 3),
        rows(mf, mb[33], n1, 3),
        rows(mf, mb[34], n1, 9),
        vec(mf, mb[35], n1),
        rows(mf, mb[36], nmot, 3),
        vec(mf, mb[37], nmot),
        vec(mf, mb[38], 3),
        vec(mf, mb[39], nv),
    )


@jit(forceinline=True)
def record_view(mi, w, off):
    """The record (``RECORD``) of one state in ``w`` from ``off``."""
    n1 = mi[4]
    nq = mi[5]
    nv = mi[6]
    nmot = mi[7]
    npar = mi[8]
    return Record(
        vec(w, off + mi[40], 8),
        vec(w, off + mi[41], nq),
        vec(w, off + mi[42], nv),
        vec(w, off + mi[43], nv),
        rows(w, off + mi[44], n1, 9),
        rows(w, off + mi[45], n1, 3),
        rows(w, off + mi[46], nv, 6),
        rows(w, off + mi[47], n1, 9),
        rows(w, off + mi[48], n1, 3),
        rows(w, off + mi[49], n1, 6),
        rows(w, off + mi[50], n1, 6),
        rows(w, off + mi[51], nmot, 6),
        rows(w, off + mi[52], nmot, 6),
        vec(w, off + mi[53], nmot),
        rows(w, off + mi[54], n1, 6),
        rows(w, off + mi[55], n1, 6),
        rows(w, off + mi[56], n1, 9),
        rows(w, off + mi[57], n1, 3),
    )


@jit(forceinline=True)
def scratch_view(mi, w, off):
    """The scratch (``SCRATCH``) of one algorithm run in ``w`` from ``off``."""
    n1 = mi[4]
    nq = mi[5]
    nv = mi[6]
    nmot = mi[7]
    npar = mi[8]
    return Scratch(
        rows(w, off + mi[58], n1, 6),
        rows(w, off + mi[59], n1, 6),
        rows(w, off + mi[60], n1, 21),
        vec(w, off + mi[61], n1),
        rows(w, off + mi[62], nv, 6),
        rows(w, off + mi[63], nv, 6),
        vec(w, off + mi[64], nv),
        rows(w, off + mi[65], 12, 6),
        rows(w, off + mi[66], 6, 6),
        vec(w, off + mi[67], nv),
        vec(w, off + mi[68], nq),
        vec(w, off + mi[69], nv),
        vec(w, off + mi[70], nq),
        vec(w, off + mi[71], nv),
        rows(w, off + mi[72], 7, nv),
        rows(w, off + mi[73], 7, nv),
        vec(w, off + mi[74], nv),
        vec(w, off + mi[75], nv),
        vec(w, off + mi[76], 8),
        vec(w, off + mi[77], 8),
        vec(w, off + mi[78], 24),
        vec(w, off + mi[79], nq),
        vec(w, off + mi[80], nv),
        vec(w, off + mi[81], nv),
        vec(w, off + mi[82], nv),
    )


@jit(forceinline=True)
def record_lanes(mb, w, off):
    """The record of a group of LANES states in the lane layout, in ``w`` from ``off``: every table with a lane axis last, at LANES times its offset (the header stays one row: a group's records are never reused)."""
    n1 = mb[4]
    nq = mb[5]
    nv = mb[6]
    nmot = mb[7]
    npar = mb[8]
    return Record(
        vec(w, off + LANES * mb[40], 8),
        rows(w, off + LANES * mb[41], nq, LANES),
        rows(w, off + LANES * mb[42], nv, LANES),
        rows(w, off + LANES * mb[43], nv, LANES),
        rows3(w, off + LANES * mb[44], n1, 9),
        rows3(w, off + LANES * mb[45], n1, 3),
        rows3(w, off + LANES * mb[46], nv, 6),
        rows3(w, off + LANES * mb[47], n1, 9),
        rows3(w, off + LANES * mb[48], n1, 3),
        rows3(w, off + LANES * mb[49], n1, 6),
        rows3(w, off + LANES * mb[50], n1, 6),
        rows3(w, off + LANES * mb[51], nmot, 6),
        rows3(w, off + LANES * mb[52], nmot, 6),
        rows(w, off + LANES * mb[53], nmot, LANES),
        rows3(w, off + LANES * mb[54], n1, 6),
        rows3(w, off + LANES * mb[55], n1, 6),
        rows3(w, off + LANES * mb[56], n1, 9),
        rows3(w, off + LANES * mb[57], n1, 3),
    )


@jit(forceinline=True)
def scratch_lanes(mb, w, off):
    """The scratch of a group of LANES states in the lane layout (as ``record_lanes``); the tables declared ``lanes=False`` stay one row."""
    n1 = mb[4]
    nq = mb[5]
    nv = mb[6]
    nmot = mb[7]
    npar = mb[8]
    return Scratch(
        rows3(w, off + LANES * mb[58], n1, 6),
        rows3(w, off + LANES * mb[59], n1, 6),
        rows3(w, off + LANES * mb[60], n1, 21),
        vec(w, off + LANES * mb[61], n1),
        rows3(w, off + LANES * mb[62], nv, 6),
        rows3(w, off + LANES * mb[63], nv, 6),
        rows(w, off + LANES * mb[64], nv, LANES),
        rows3(w, off + LANES * mb[65], 12, 6),
        rows3(w, off + LANES * mb[66], 6, 6),
        rows(w, off + LANES * mb[67], nv, LANES),
        rows(w, off + LANES * mb[68], nq, LANES),
        rows(w, off + LANES * mb[69], nv, LANES),
        rows(w, off + LANES * mb[70], nq, LANES),
        rows(w, off + LANES * mb[71], nv, LANES),
        rows3(w, off + LANES * mb[72], 7, nv),
        rows3(w, off + LANES * mb[73], 7, nv),
        rows(w, off + LANES * mb[74], nv, LANES),
        rows(w, off + LANES * mb[75], nv, LANES),
        rows(w, off + LANES * mb[76], 8, LANES),
        vec(w, off + LANES * mb[77], 8),
        vec(w, off + LANES * mb[78], 24),
        rows(w, off + LANES * mb[79], nq, LANES),
        rows(w, off + LANES * mb[80], nv, LANES),
        rows(w, off + LANES * mb[81], nv, LANES),
        rows(w, off + LANES * mb[82], nv, LANES),
    )
