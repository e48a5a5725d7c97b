"""Small dense pieces of the loop-closure kernels, written as loops over preallocated arrays:

* ``qr6``: Householder QR of a 6 x n matrix, J = Q R (Q 6 x 6 orthogonal: its last 6 - n columns an
  orthonormal basis of the complement of range(J)); ``qr_lstsq``: the least-squares solution
  x = R^-1 Q1^T e and the residual |Q2^T e|;
* ``jacobi_rows``: one-sided Jacobi (Hestenes) rotations that make the rows of Y orthogonal, W Y
  with W orthogonal, so that the row norms are the singular values of Y; applied with the same
  rotations to right-hand sides r of a symmetric system A x = r it gives the minimum-norm
  x = A^+ r = sum_i y_i (W r)_i / |y_i|^2 over the rows kept;
* ``log_rotation``: the rotation vector of a rotation matrix (robust near 0 and pi).
"""
import numpy as np

from ..._jit import jit


@jit
def qr6(J, n, Q, R, u):
    """Householder QR of the 6 x n matrix J (n <= 6): J = Q R with Q (6, 6) orthogonal, R upper
    triangular in R[:n, :n], so that Q[:, n:] spans the complement of range(J); returns the
    smallest |R_kk| relative to the largest column norm of J (1 for n = 0)."""
    cmax = 0.0
    for x in range(6):
        for y in range(6):
            Q[x, y] = 1.0 if x == y else 0.0
    for k in range(n):
        c = 0.0
        for x in range(6):
            R[x, k] = J[x, k]
            c += J[x, k] * J[x, k]
        cmax = max(cmax, np.sqrt(c))
    for k in range(n):
        nrm = 0.0
        for x in range(k, 6):
            nrm += R[x, k] * R[x, k]
        nrm = np.sqrt(nrm)
        if nrm == 0.0:
            continue
        alpha = -nrm if R[k, k] >= 0.0 else nrm
        vn = 0.0
        for x in range(6):
            u[x] = R[x, k] if x >= k else 0.0
        u[k] -= alpha
        for x in range(k, 6):
            vn += u[x] * u[x]
        if vn == 0.0:
            continue
        for c in range(k, n):
            d = 0.0
            for x in range(k, 6):
                d += u[x] * R[x, c]
            f = 2.0 * d / vn
            for x in range(k, 6):
                R[x, c] -= f * u[x]
        for x in range(6):
            d = 0.0
            for y in range(k, 6):
                d += Q[x, y] * u[y]
            f = 2.0 * d / vn
            for y in range(k, 6):
                Q[x, y] -= f * u[y]
    dmin = 1.0
    for k in range(n):
        dmin = min(dmin, abs(R[k, k]) / max(cmax, 1e-300))
    return dmin


@jit
def qr_lstsq(Q, R, n, e, out):
    """The least-squares solution of J x = e from J = Q R (``qr6``) into out[:n]; returns the
    residual norm |Q[:, n:]^T e|."""
    for k in range(n):
        s = 0.0
        for x in range(6):
            s += Q[x, k] * e[x]
        out[k] = s
    for k in range(n - 1, -1, -1):
        s = out[k]
        for c in range(k + 1, n):
            s -= R[k, c] * out[c]
        out[k] = s / R[k, k]
    res = 0.0
    for c in range(n, 6):
        d = 0.0
        for x in range(6):
            d += Q[x, c] * e[x]
        res += d * d
    return np.sqrt(res)


@jit
def jacobi_rows(Y, p, n, r):
    """One-sided Jacobi: plane rotations of the rows of Y[:p, :n] (and of the entries of each
    row of r (k, p), k >= 0) until the rows are orthogonal; the row norms are then the singular
    values of the original Y[:p, :n]."""
    for _ in range(60):
        rotated = False
        for i in range(p):
            for j in range(i + 1, p):
                a = 0.0
                b = 0.0
                c = 0.0
                for k in range(n):
                    a += Y[i, k] * Y[i, k]
                    b += Y[j, k] * Y[j, k]
                    c += Y[i, k] * Y[j, k]
                if a == 0.0 or b == 0.0 or abs(c) <= 1e-15 * np.sqrt(a * b):
                    continue
                rotated = True
                z = (b - a) / (2.0 * c)
                tn = (1.0 if z >= 0.0 else -1.0) / (abs(z) + np.sqrt(1.0 + z * z))
                cs = 1.0 / np.sqrt(1.0 + tn * tn)
                sn = cs * tn
                for k in range(n):
                    yi = Y[i, k]
                    yj = Y[j, k]
                    Y[i, k] = cs * yi - sn * yj
                    Y[j, k] = sn * yi + cs * yj
                for x in range(r.shape[0]):
                    ri = r[x, i]
                    rj = r[x, j]
                    r[x, i] = cs * ri - sn * rj
                    r[x, j] = sn * ri + cs * rj
        if not rotated:
            return


@jit
def row_norm(Y, i, n):
    s = 0.0
    for k in range(n):
        s += Y[i, k] * Y[i, k]
    return np.sqrt(s)


@jit
def log_rotation(E):
    """Rotation vector of the rotation E (9-tuple, row-major), robust near 0 and pi."""
    c = max(-1.0, min(1.0, 0.5 * (E[0] + E[4] + E[8] - 1.0)))
    th = np.arccos(c)
    w = (0.5 * (E[7] - E[5]), 0.5 * (E[2] - E[6]), 0.5 * (E[3] - E[1]))
    if th < 1e-6:
        f = 1.0 + th * th / 6.0
        return (w[0] * f, w[1] * f, w[2] * f)
    if np.pi - th < 1e-6:
        # near pi: the axis from the symmetric part
        b0, b1, b2 = 0.5 * (E[0] + 1.0), 0.5 * (E[4] + 1.0), 0.5 * (E[8] + 1.0)
        k = 0 if (b0 >= b1 and b0 >= b2) else (1 if b1 >= b2 else 2)
        sq = np.sqrt(max((b0, b1, b2)[k], 1e-300))
        ax = (0.5 * (E[k] + (1.0 if k == 0 else 0.0)) / sq, 0.5 * (E[3 + k] + (1.0 if k == 1 else 0.0)) / sq,
              0.5 * (E[6 + k] + (1.0 if k == 2 else 0.0)) / sq)
        sg = -th if ax[0] * w[0] + ax[1] * w[1] + ax[2] * w[2] < 0.0 else th
        return (sg * ax[0], sg * ax[1], sg * ax[2])
    f = th / np.sin(th)
    return (w[0] * f, w[1] * f, w[2] * f)
