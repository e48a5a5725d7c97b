"""Preallocated per-chunk workspaces of the kernels (a batch is split into contiguous chunks, one
workspace each, so the sweeps themselves never allocate)."""
import numba
import numpy as np


def n_chunks(B):
    """Chunks of a batch of B states: a few per thread for balance, never more than B."""
    return max(1, min(B, 4 * numba.get_num_threads()))


class JointWork:
    """EJCE terms of every joint of one state: relative pose, J (P axes), sigma, bias, twist."""

    def __init__(self, model, nchunk=1):
        n1, nv = model.nbodies + 1, model.nv
        self.Rrel = np.zeros((nchunk, n1, 3, 3))
        self.rrel = np.zeros((nchunk, n1, 3))
        self.J = np.zeros((nchunk, 6, max(nv, 1)))
        self.sigma = np.zeros((nchunk, n1, 6))
        self.bias = np.zeros((nchunk, n1, 6))
        self.vrel = np.zeros((nchunk, n1, 6))
        # world pose of each inboard frame P and origin of each outboard frame C
        self.RP = np.zeros((nchunk, n1, 3, 3))
        self.oC = np.zeros((nchunk, n1, 3))

    def args(self):
        return (self.Rrel, self.rrel, self.J, self.sigma, self.bias, self.vrel, self.RP, self.oC)
