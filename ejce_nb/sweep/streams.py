"""Counter-based random streams in compiled code, for drawing millions of samples beside the
kernels.

The generator is numpy's ``np.random.Philox`` (Philox4x64-10, Salmon et al., "Parallel random
numbers: as easy as 1, 2, 3", SC 2011), computed here word for word: word w of the stream of key
(k0, k1) is word w mod 4 of the block

    philox(counter = (w // 4 + 1, 0, 0, 0), key),

which is the word a fresh ``np.random.Philox(key=...)`` gives as its w-th ``random_raw`` (numpy
increments the counter before each block).  Any word is reached without the ones before it, so a
sample owns the words [i k, (i + 1) k) of its stream and rows are drawn in parallel in any split.

Uniforms are numpy's doubles of those words, ``(w >> 11) 2**-53`` (``Generator.random``).
Normals take one word each, by the ziggurat method (Marsaglia and Tsang, J. Stat. Softw. 5(8),
2000) with 256 layers, laid out as numpy's: the low 8 bits pick the layer, the next one the sign,
52 bits the abscissa.  The 1% of words the ziggurat rejects continue on words outside the main
stream, blocks with counter (w, 1, attempt, 0), so a normal is a function of its word's position
alone and every normal still costs exactly one word of the main stream.
"""
import math

import numpy as np
from llvmlite import ir
from numba import prange, types
from numba.extending import intrinsic

from .._jit import jit, pjit

# Philox4x64's round multipliers and key increments (Random123's constants, numpy's)
_M0 = np.uint64(0xD2E7470EE14C6C93)
_M1 = np.uint64(0xCA5A826395121157)
_W0 = np.uint64(0x9E3779B97F4A7C15)
_W1 = np.uint64(0xBB67AE8584CAA73B)
_ONE = np.uint64(1)
_ZERO = np.uint64(0)
# uint64 shifts and masks: a Python int beside a uint64 would make Numba compute in float64
_S11 = np.uint64(11)
_S8 = np.uint64(8)
_S9 = np.uint64(9)
_LOW8 = np.uint64(0xFF)
_LOW52 = np.uint64(0x000FFFFFFFFFFFFF)
_INV_2_53 = 1.0 / 9007199254740992.0
# rows per parallel task: each task runs its rows' words as one stretch of the stream
ROWS_PER_TASK = 2048


@intrinsic
def _mulhilo(typingctx, a, b):
    """(high, low) 64-bit halves of the 128-bit product a b."""
    sig = types.UniTuple(types.uint64, 2)(types.uint64, types.uint64)

    def codegen(context, builder, signature, args):
        wide = ir.IntType(128)
        p = builder.mul(builder.zext(args[0], wide), builder.zext(args[1], wide))
        hi = builder.trunc(builder.lshr(p, ir.Constant(wide, 64)), ir.IntType(64))
        lo = builder.trunc(p, ir.IntType(64))
        return context.make_tuple(builder, signature.return_type, (hi, lo))

    return sig, codegen


@jit(forceinline=True)
def philox(c0, c1, c2, c3, k0, k1):
    """The Philox4x64-10 block of counter (c0, c1, c2, c3) under key (k0, k1)."""
    for _ in range(10):
        h0, l0 = _mulhilo(_M0, c0)
        h1, l1 = _mulhilo(_M1, c2)
        c0, c1, c2, c3 = h1 ^ c1 ^ k0, l1, h0 ^ c3 ^ k1, l0
        k0 += _W0
        k1 += _W1
    return c0, c1, c2, c3


@jit(forceinline=True)
def _unit(w):
    # below 2**53: the signed conversion is exact and one instruction
    return np.float64(np.int64(w >> _S11)) * _INV_2_53


def _ziggurat_tables():
    """Layer tables of the 256-layer ziggurat of exp(-x^2/2): layer 0 is the base (a rectangle of
    width v / f(r) and the tail beyond r), layer i >= 1 the rectangle [0, x_i] x [f(x_i),
    f(x_{i-1})], every layer of area v; x_255 = r.  k[i] is the fast-accept bound of the 52-bit
    abscissa, w[i] its scale, f[i] = f(x_i)."""
    r = 3.6541528853610088
    f = lambda x: math.exp(-0.5 * x * x)   # noqa: E731
    v = r * f(r) + math.sqrt(0.5 * math.pi) * math.erfc(r / math.sqrt(2.0))
    x = np.empty(256)
    x[255] = r
    for i in range(255, 1, -1):
        x[i - 1] = math.sqrt(-2.0 * math.log(v / x[i] + f(x[i])))
    x[0] = 0.0
    m = 2.0 ** 52
    k = np.empty(256, dtype=np.uint64)
    w = np.empty(256)
    fx = np.empty(256)
    q = v / f(r)
    k[0] = np.uint64(r / q * m)
    w[0] = q / m
    fx[0] = 1.0
    for i in range(1, 256):
        k[i] = np.uint64(x[i - 1] / x[i] * m)
        w[i] = x[i] / m
        fx[i] = f(x[i])
    return r, k, w, fx


ZIGGURAT_R, _ZK, _ZW, _ZF = _ziggurat_tables()
_ZR = ZIGGURAT_R
_ZINV_R = 1.0 / ZIGGURAT_R


@jit(forceinline=True)
def _layer(word):
    """A word as the ziggurat reads it: its layer, its 52-bit abscissa and the signed point."""
    idx = np.int64(word & _LOW8)
    rabs = (word >> _S9) & _LOW52
    x = np.float64(np.int64(rabs)) * _ZW[idx]
    return idx, rabs, -x if (word >> _S8) & _ONE else x


@jit(forceinline=True)
def _normal_of(word, pos, k0, k1):
    """The standard normal of the main-stream word ``word`` at position ``pos``."""
    idx, rabs, x = _layer(word)
    if rabs < _ZK[idx]:
        return x
    return _normal_rest(word, pos, k0, k1)


@jit
def _normal_rest(word, pos, k0, k1):
    """The ziggurat's rejection path (1% of words, a call of its own to keep the fast path
    short): further words from blocks (pos, 1, attempt, 0), outside the main stream."""
    attempt = _ZERO
    while True:
        idx, rabs, x = _layer(word)
        if rabs < _ZK[idx]:
            return x
        b0, b1, b2, _ = philox(pos, _ONE, attempt, _ZERO, k0, k1)
        attempt += _ONE
        if idx == 0:
            while True:
                xx = -_ZINV_R * math.log1p(-_unit(b0))
                yy = -math.log1p(-_unit(b1))
                if yy + yy > xx * xx:
                    return -(_ZR + xx) if (word >> _S8) & _ONE else _ZR + xx
                b0, b1, b2, _ = philox(pos, _ONE, attempt, _ZERO, k0, k1)
                attempt += _ONE
        if _ZF[idx] + _unit(b0) * (_ZF[idx - 1] - _ZF[idx]) < math.exp(-0.5 * x * x):
            return x
        word = b2


@jit(forceinline=True)
def _value(c0, c1, c2, c3, lane, pos, k0, k1, normal):
    """The number of word ``lane`` of a block, the word at stream position ``pos``."""
    word = c0 if lane == 0 else c1 if lane == 1 else c2 if lane == 2 else c3
    return _normal_of(word, pos, k0, k1) if normal else _unit(word)


@jit(forceinline=True)
def _block(pos, k0, k1):
    return philox((pos >> np.uint64(2)) + _ONE, _ZERO, _ZERO, _ZERO, k0, k1)


@pjit
def _fill_rows(k0, k1, first, out, normal):
    """out[i, j] = the number (uniform or, with ``normal``, standard normal) of word
    (first + i) k + j of the stream of key (k0, k1), k = out.shape[1].  Each task runs its rows'
    words as one stretch of the stream, a block of four words per Philox call."""
    m, k = out.shape
    flat = out.reshape(-1)
    for task in prange((m + ROWS_PER_TASK - 1) // ROWS_PER_TASK):
        t = task * ROWS_PER_TASK * k
        b = min(m, (task + 1) * ROWS_PER_TASK) * k
        pos = np.uint64(first * k + t)
        while t < b:
            c0, c1, c2, c3 = _block(pos, k0, k1)
            lane = np.int64(pos & np.uint64(3))
            if lane == 0 and t + 4 <= b:
                for j in range(4):
                    flat[t + j] = _value(c0, c1, c2, c3, j, pos + np.uint64(j), k0, k1, normal)
                t += 4
                pos += np.uint64(4)
            else:
                # the ends of a stretch that begin or end inside a block
                flat[t] = _value(c0, c1, c2, c3, lane, pos, k0, k1, normal)
                t += 1
                pos += _ONE


def uniform_rows(k0, k1, first, out):
    """out[i, j] = the double of word (first + i) k + j of the stream of key (k0, k1), with
    k = out.shape[1]: numpy's ``Generator.random`` on that word.  out: C-ordered float64."""
    _fill_rows(k0, k1, first, out, False)


def normal_rows(k0, k1, first, out):
    """out[i, j] = the standard normal of word (first + i) k + j of the stream of key (k0, k1),
    k = out.shape[1].  out: C-ordered float64."""
    _fill_rows(k0, k1, first, out, True)
