"""The EJCE terms of a user-defined joint from its pose evaluated on jets (EJCE.md section 1):

    J[:, k] = [axial(dR/du_k R^T); dr/du_k],   J u + sigma = [axial(R' R^T); r'],
    b = [axial(R''0 R^T); r''0]

read off the jets' slots (value, rate, second derivative along the motion, gradient).  Entries
of R or r that are plain numbers are constants.
"""
from numba import types
from numba.extending import overload

from ..._jit import jit
from .jet import Jet, jet_const, jet_parts


def as_parts(x, like):
    """The numbers of x as a jet of the kind of ``like`` (compiled code only)."""
    raise NotImplementedError("as_parts runs in compiled code only")


@overload(as_parts)
def _as_parts(x, like):
    if isinstance(x, Jet):
        return lambda x, like: jet_parts(x)
    if isinstance(x, (types.Float, types.Integer, types.Boolean)):
        return lambda x, like: jet_parts(jet_const(x, like))
    return None


@jit
def _axial(A0, A1, A2, A3, A4, A5, A6, A7, A8, R, k):
    """axial(A R^T) for the slot k of the entries A (row-major) and the values R."""
    m01 = A0[k] * R[3] + A1[k] * R[4] + A2[k] * R[5]
    m02 = A0[k] * R[6] + A1[k] * R[7] + A2[k] * R[8]
    m10 = A3[k] * R[0] + A4[k] * R[1] + A5[k] * R[2]
    m12 = A3[k] * R[6] + A4[k] * R[7] + A5[k] * R[8]
    m20 = A6[k] * R[0] + A7[k] * R[1] + A8[k] * R[2]
    m21 = A6[k] * R[3] + A7[k] * R[4] + A8[k] * R[5]
    return 0.5 * (m21 - m12), 0.5 * (m02 - m20), 0.5 * (m10 - m01)


@jit
def extract(R, r, like, out, JP, nq):
    """out = [R (9), r (3), J u + sigma (6), b (6)] and J's columns into the rows of JP."""
    A0 = as_parts(R[0][0], like)
    A1 = as_parts(R[0][1], like)
    A2 = as_parts(R[0][2], like)
    A3 = as_parts(R[1][0], like)
    A4 = as_parts(R[1][1], like)
    A5 = as_parts(R[1][2], like)
    A6 = as_parts(R[2][0], like)
    A7 = as_parts(R[2][1], like)
    A8 = as_parts(R[2][2], like)
    p0 = as_parts(r[0], like)
    p1 = as_parts(r[1], like)
    p2 = as_parts(r[2], like)
    Rv = (A0[0], A1[0], A2[0], A3[0], A4[0], A5[0], A6[0], A7[0], A8[0])
    for k in range(9):
        out[k] = Rv[k]
    out[9] = p0[0]
    out[10] = p1[0]
    out[11] = p2[0]
    for k in range(nq):
        w = _axial(A0, A1, A2, A3, A4, A5, A6, A7, A8, Rv, 3 + k)
        JP[k, 0] = w[0]
        JP[k, 1] = w[1]
        JP[k, 2] = w[2]
        JP[k, 3] = p0[3 + k]
        JP[k, 4] = p1[3 + k]
        JP[k, 5] = p2[3 + k]
    for slot in range(1, 3):
        w = _axial(A0, A1, A2, A3, A4, A5, A6, A7, A8, Rv, slot)
        o = 12 + 6 * (slot - 1)
        out[o] = w[0]
        out[o + 1] = w[1]
        out[o + 2] = w[2]
        out[o + 3] = p0[slot]
        out[o + 4] = p1[slot]
        out[o + 5] = p2[slot]
