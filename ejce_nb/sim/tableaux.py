"""Butcher tableaux of the integrators (``METHODS``) and the step-size controller of Dormand-Prince.

Every tableau is stored in a 7-stage frame (A (7, 7), b (7,), c (7,)): the compiled loop reads one
shape for every method and skips the zero entries.  Dormand-Prince 5(4) adds the difference of its
two weight rows (``DP_E``, the embedded error) and Shampine's quartic continuous extension
(``DP_P``: b_j(theta) = sum_p P[j, p] theta^(p+1)).
"""
from collections import namedtuple

import numpy as np

METHODS = ("euler", "rk2", "rk4", "symplectic", "dopri5")

# how the compiled loop steps: an explicit Runge-Kutta method, semi-implicit Euler, Dormand-Prince
M_RK, M_SYMPLECTIC, M_DOPRI = 0, 1, 2

_DP_A = np.zeros((7, 7))
_DP_A[1, :1] = [1 / 5]
_DP_A[2, :2] = [3 / 40, 9 / 40]
_DP_A[3, :3] = [44 / 45, -56 / 15, 32 / 9]
_DP_A[4, :4] = [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729]
_DP_A[5, :5] = [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656]
_DP_A[6, :6] = [35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84]
_DP_B = _DP_A[6].copy()
_DP_C = np.array([0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0])
# b - b_hat (the embedded fourth-order solution), for the error estimate
DP_E = np.array([-71 / 57600, 0.0, 71 / 16695, -71 / 1920, 17253 / 339200, -22 / 525, 1 / 40])
# continuous extension (Shampine's quartic): b_j(theta) = sum_p P[j, p] theta^(p+1)
DP_P = np.array([
    [1.0, -8048581381 / 2820520608, 8663915743 / 2820520608, -12715105075 / 11282082432],
    [0.0, 0.0, 0.0, 0.0],
    [0.0, 131558114200 / 32700410799, -68118460800 / 10900136933, 87487479700 / 32700410799],
    [0.0, -1754552775 / 470086768, 14199869525 / 1410260304, -10690763975 / 1880347072],
    [0.0, 127303824393 / 49829197408, -318862633887 / 49829197408, 701980252875 / 199316789632],
    [0.0, -282668133 / 205662961, 2019193451 / 616988883, -1453857185 / 822651844],
    [0.0, 40617522 / 29380423, -110615467 / 29380423, 69997945 / 29380423]])

# the PI controller of Hairer's DOPRI5
SAFETY = 0.9
ALPHA = 0.17        # 1/5 - 0.75 beta
BETA = 0.04
FACMIN = 0.2
FACMAX = 10.0
EPS = 2.220446049250313e-16

Tableau = namedtuple("Tableau", "kind stages A b c")
"""kind (``M_*``), the number of stages, A (7, 7), b (7,), c (7,)."""


def _tableau(kind, rows, b, c):
    A = np.zeros((7, 7))
    for k, row in enumerate(rows):
        A[k, :len(row)] = row
    bw = np.zeros(7)
    bw[:len(b)] = b
    cw = np.zeros(7)
    cw[:len(c)] = c
    return Tableau(kind, len(b), A, bw, cw)


TABLEAUX = {
    "euler": _tableau(M_RK, [[]], [1.0], [0.0]),
    "rk2": _tableau(M_RK, [[], [0.5]], [0.0, 1.0], [0.0, 0.5]),
    "rk4": _tableau(M_RK, [[], [0.5], [0.0, 0.5], [0.0, 0.0, 1.0]], [1 / 6, 1 / 3, 1 / 3, 1 / 6],
                    [0.0, 0.5, 0.5, 1.0]),
    "symplectic": _tableau(M_SYMPLECTIC, [[]], [1.0], [0.0]),
    "dopri5": Tableau(M_DOPRI, 7, _DP_A, _DP_B, _DP_C),
}
