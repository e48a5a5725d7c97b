"""Linearisation of forward dynamics about a state: the state-space matrices of

    x' = f(x, u),   x = (dq, v) on the tangent space (2 nv),   u = tau (nv),
    A = [[Aqq, 1], [dqdd_dq, dqdd_dv]],   B = [[0], [M^-1]]

with dqdd_dq, dqdd_dv, M^-1 from ``aba_derivatives`` (exact, see ``derivatives``).  The coordinate
part of x is the tangent displacement of ``derivatives``: plain differences of coordinates, and
for a unit quaternion the rotation dtheta of q (x) Exp(dtheta), whose rate is du - u x dtheta
(Aqq is zero but for those -[u]x blocks, zero at rest).

With a time step dt, also the exact zero-order-hold discretisation x_{k+1} = Ad x_k + Bd u_k:
[[Ad, Bd], [0, 1]] = exp([[A, B], [0, 0]] dt), by scaling and squaring of its Taylor series.
"""
import numpy as np

from .derivatives import aba_derivatives


class LinearSystem:
    """``A`` (2 nv, 2 nv) and ``B`` (2 nv, nv) of x' = A x + B u about (q, qd, tau, t); with a time
    step, ``dt``, ``Ad`` and ``Bd`` of x_{k+1} = Ad x_k + Bd u_k (else None).  ``state_names``:
    the coordinates' tangent directions ("d" + velocity name), then the velocities."""

    __slots__ = ("A", "B", "dt", "Ad", "Bd", "state_names")

    def __init__(self, A, B, dt, Ad, Bd, state_names):
        self.A, self.B, self.dt, self.Ad, self.Bd, self.state_names = A, B, dt, Ad, Bd, state_names

    def __repr__(self):
        n = self.A.shape[0]
        return f"LinearSystem(states={n}, inputs={self.B.shape[1]}, dt={self.dt})"


def expm(X):
    """exp(X) of a square matrix: scaling and squaring of the Taylor series (terms to 1e-17)."""
    X = np.asarray(X, dtype=float)
    nrm = np.abs(X).sum(axis=1).max() if X.size else 0.0
    s = max(0, int(np.ceil(np.log2(nrm / 0.25))) if nrm > 0.25 else 0)
    Y = X / 2.0 ** s
    E = np.eye(X.shape[0])
    term = np.eye(X.shape[0])
    for k in range(1, 20):
        term = term @ Y / k
        E = E + term
        if np.abs(term).max() < 1e-18 * max(1.0, np.abs(E).max()):
            break
    for _ in range(s):
        E = E @ E
    return E


def linearize(model, q, qd, tau, t=0.0, dt=None, f_ext=None):
    """The linearisation of forward dynamics about (q, qd, tau, t) as a ``LinearSystem``:
    ``x' = A x + B u`` with ``x = (dq, v)`` on the tangent space (2 nv; ``rnea_derivatives``),
    ``u = tau`` (nv),

        A = [[Aqq, 1], [dqdd_dq, dqdd_dv]],   B = [[0], [M^-1]],

    from ``aba_derivatives`` (``Aqq`` is zero but ``-[u]x`` on a unit quaternion's rotation block,
    whose tangent rate is ``du - u x dtheta``).  With a time step ``dt``, also ``Ad``, ``Bd`` of
    ``x_{k+1} = Ad x_k + Bd u_k``, the exact zero-order hold (``[[Ad, Bd], [0, 1]] = exp([[A, B],
    [0, 0]] dt)``), else None.  ``f_ext`` as for ``aba``.  One state only; an equilibrium is
    where aba(q, 0, tau) = 0 (e.g. tau = rnea(q, 0, 0))."""
    if np.ndim(q) != 1:
        raise ValueError(f"linearize: q must be one state (nq,), got shape {np.shape(q)}")
    if dt is not None and not (np.isfinite(dt) and dt > 0):
        raise ValueError(f"linearize: dt must be a positive number, got {dt!r}")
    dq, dv, Minv = aba_derivatives(model, q, qd, tau, t, f_ext=f_ext)
    nv = model.nv
    qd = np.asarray(qd, dtype=float)
    Aqq = np.zeros((nv, nv))
    for j, _ in model.quaternion_blocks():
        r = slice(model.v_slice(j).stop - 3, model.v_slice(j).stop)
        u = qd[r]
        Aqq[r, r] = -np.array([[0.0, -u[2], u[1]], [u[2], 0.0, -u[0]], [-u[1], u[0], 0.0]])
    A = np.block([[Aqq, np.eye(nv)], [dq, dv]])
    B = np.vstack([np.zeros((nv, nv)), Minv])
    names = tuple("d" + n for n in model.velocity_names) + tuple(model.velocity_names)
    Ad = Bd = None
    if dt is not None:
        n = 2 * nv
        X = np.zeros((n + nv, n + nv))
        X[:n, :n] = A * dt
        X[:n, n:] = B * dt
        E = expm(X)
        Ad, Bd = E[:n, :n], E[:n, n:]
    return LinearSystem(A, B, dt, Ad, Bd, names)
