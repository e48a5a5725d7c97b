"""Cubic splines of the coordinate functions (``fn.Spline``, ``fn.PiecewiseLinear``): the second
derivatives M_k at the knots for natural, OpenSim ``SimmSpline`` and clamped end conditions, from
the tridiagonal system of C2 continuity at the inner knots (h_k = x_{k+1} - x_k)

    h_{k-1}/6 M_{k-1} + (h_{k-1} + h_k)/3 M_k + h_k/6 M_{k+1} = (y_{k+1} - y_k)/h_k - (y_k - y_{k-1})/h_{k-1},

and the value and derivatives of the spline on a knot interval."""
import numpy as np


def natural_spline_moments(x, y):
    """Second derivatives at the knots of the natural cubic spline through (x, y)."""
    n = len(x)
    m = np.zeros(n)
    if n < 3:
        return m
    h = np.diff(x)
    A = np.zeros((n - 2, n - 2))
    rhs = np.zeros(n - 2)
    for i in range(1, n - 1):
        k = i - 1
        A[k, k] = (h[i - 1] + h[i]) / 3.0
        if k > 0:
            A[k, k - 1] = h[i - 1] / 6.0
        if k < n - 3:
            A[k, k + 1] = h[i] / 6.0
        rhs[k] = (y[i + 1] - y[i]) / h[i] - (y[i] - y[i - 1]) / h[i - 1]
    m[1:-1] = np.linalg.solve(A, rhs)
    return m


def simm_spline_moments(x, y):
    """Second derivatives at the knots of OpenSim's ``SimmSpline`` through (x, y): the cubic
    spline of Forsythe, Malcolm and Moler (*Computer Methods for Mathematical Computations*),
    whose third derivatives at the end knots are those of the cubics through the first and the
    last four knots (fewer than four knots: the end second-derivative differences are zero; two
    knots: a straight line).  This is OpenSim's algorithm (``SimmSpline::calcCoefficients``),
    step by step."""
    n = len(x)
    m = np.zeros(n)
    if n < 3:
        return m
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    nm1 = n - 1
    b = np.zeros(n)
    c = np.zeros(n)
    d = np.zeros(n)
    d[0] = x[1] - x[0]
    c[1] = (y[1] - y[0]) / d[0]
    for i in range(1, nm1):
        d[i] = x[i + 1] - x[i]
        b[i] = 2.0 * (d[i - 1] + d[i])
        c[i + 1] = (y[i + 1] - y[i]) / d[i]
        c[i] = c[i + 1] - c[i]
    b[0] = -d[0]
    b[nm1] = -d[n - 2]
    c[0] = 0.0
    c[nm1] = 0.0
    if n > 3:
        d31 = x[3] - x[1]
        d20 = x[2] - x[0]
        d1 = x[nm1] - x[n - 3]
        d2 = x[nm1 - 1] - x[n - 4]
        d30 = x[3] - x[0]
        d3 = x[nm1] - x[n - 4]
        c[0] = c[2] / d31 - c[1] / d20
        c[nm1] = c[n - 2] / d1 - c[n - 3] / d2
        c[0] = c[0] * d[0] * d[0] / d30
        c[nm1] = -c[nm1] * d[n - 2] * d[n - 2] / d3
    for i in range(1, n):
        t = d[i - 1] / b[i - 1]
        b[i] -= t * d[i - 1]
        c[i] -= t * c[i - 1]
    c[nm1] /= b[nm1]
    for ib in range(nm1):
        i = n - ib - 2
        c[i] = (c[i] - d[i] * c[i + 1]) / b[i]
    # c now holds s''/6 at the knots (OpenSim multiplies it by 3 for its power-form coefficient)
    return 6.0 * c


def clamped_spline_moments(x, y, s0, s1):
    """Second derivatives at the knots of the cubic spline through (x, y) with first derivatives
    s0 at x[0] and s1 at x[-1]."""
    n = len(x)
    h = np.diff(x)
    A = np.zeros((n, n))
    rhs = np.zeros(n)
    A[0, 0], A[0, 1] = h[0] / 3.0, h[0] / 6.0
    rhs[0] = (y[1] - y[0]) / h[0] - s0
    A[n - 1, n - 2], A[n - 1, n - 1] = h[-1] / 6.0, h[-1] / 3.0
    rhs[n - 1] = s1 - (y[-1] - y[-2]) / h[-1]
    for i in range(1, n - 1):
        A[i, i - 1] = h[i - 1] / 6.0
        A[i, i] = (h[i - 1] + h[i]) / 3.0
        A[i, i + 1] = h[i] / 6.0
        rhs[i] = (y[i + 1] - y[i]) / h[i] - (y[i] - y[i - 1]) / h[i - 1]
    return np.linalg.solve(A, rhs)


SPLINE_ENDS = ("natural", "simm", "clamped")


def spline_eval(x, y, m, xv):
    """(value, first, second derivative) at xv of the cubic through knots (x, y) with second
    derivatives m, linear beyond the end knots (as the kernels evaluate it)."""
    n = len(x)
    if xv < x[0] or xv > x[-1]:
        left = xv < x[0]
        i = 0 if left else n - 2
        e = i if left else i + 1
        h = x[i + 1] - x[i]
        slope = (y[i + 1] - y[i]) / h + (-h * (2.0 * m[i] + m[i + 1]) / 6.0 if left
                                          else h * (m[i] + 2.0 * m[i + 1]) / 6.0)
        return y[e] + slope * (xv - x[e]), slope, 0.0
    i = min(int(np.searchsorted(x, xv, side="right")) - 1, n - 2)
    h = x[i + 1] - x[i]
    c1 = (y[i + 1] - y[i]) / h - h * (2.0 * m[i] + m[i + 1]) / 6.0
    c2 = 0.5 * m[i]
    c3 = (m[i + 1] - m[i]) / (6.0 * h)
    u = xv - x[i]
    return y[i] + u * (c1 + u * (c2 + u * c3)), c1 + u * (2.0 * c2 + 3.0 * c3 * u), 2.0 * c2 + 6.0 * c3 * u
