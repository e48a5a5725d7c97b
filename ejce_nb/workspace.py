"""Preallocated per-chunk workspaces of the kernels (a batch is split into contiguous chunks, one
workspace each, so the sweeps themselves never allocate)."""
import numba
import numpy as np


def chunked(nchunk, *shape):
    """Zeros of shape (nchunk, *shape) whose per-chunk slabs are at least a cache line apart:
    threads writing neighbouring chunks would otherwise share (and fight over) cache lines.
    The padding rows of axis 1 are never used."""
    row = 8 * int(np.prod(shape[1:], dtype=np.int64)) if len(shape) > 1 else 8
    pad = -(-64 // max(row, 1))
    return np.zeros((nchunk, shape[0] + pad) + tuple(shape[1:]))


def n_chunks(B):
    """Chunks of a batch of B states: a few per thread for balance, never more than B."""
    return max(1, min(B, 4 * numba.get_num_threads()))


class JointWork:
    """EJCE terms of every joint of one state: relative pose, J (P axes), sigma, bias, twist."""

    def __init__(self, model, nchunk=1):
        n1, nv = model.nbodies + 1, model.nv
        self.Rrel = chunked(nchunk, n1, 3, 3)
        self.rrel = chunked(nchunk, n1, 3)
        self.J = chunked(nchunk, 6, max(nv, 1))
        self.sigma = chunked(nchunk, n1, 6)
        self.bias = chunked(nchunk, n1, 6)
        self.vrel = chunked(nchunk, n1, 6)
        # world pose of each inboard frame P and origin of each outboard frame C
        self.RP = chunked(nchunk, n1, 3, 3)
        self.oC = chunked(nchunk, n1, 3)

    def args(self):
        return (self.Rrel, self.rrel, self.J, self.sigma, self.bias, self.vrel, self.RP, self.oC)
