"""Coordinate couplers: coordinates that are functions of others, eliminated exactly.

A coupler makes one coordinate of the mechanism (the dependent one, ``q_d``) a function of one
or more others (the independent ones): ``q_d = scale * f(q_i1, q_i2, ...)``, ``f`` an ``ej.fn``
function whose coordinate ``k`` is the coupler's k-th independent coordinate.  The model's own
coordinates q and velocities v leave the dependent ones out; the full mechanism
(``Model.expanded()``) has them all, and

    q_full = phi(q),  v_full = G(q) v,  a_full = G(q) a + Gdot(q, v) v,

G the Jacobian of phi (rows of the identity for the model's own coordinates, ``scale * df/dq_i``
for a dependent one).  The reduced dynamics follow by the principle of virtual work:
``tau = G^T tau_full(q_full, v_full, a_full)``, ``M = G^T M_full G``, ``h = G^T h_full(q_full,
v_full, Gdot v)``, body Jacobians ``J_full G``.  phi, G and Gdot v come from the function on jets
(value, rate, second rate along v, gradient) in one compiled pass over a batch (``expand_rows``;
``expand_many`` in parallel), exact to rounding.  A mimic joint is the linear case:
``f = multiplier * q_source + offset``.

Rules (checked by ``check``): a dependent coordinate is a coordinate whose rate is its velocity
variable (no unit quaternion), it is no coupler's independent coordinate and no other coupler's
dependent one (no chains, no cycles); a coupler reads 1 to 6 independent coordinates, of the same
kind; its function does not depend on time.
"""
from collections import namedtuple

import numpy as np
from numba import prange

from .._jit import jit, n_chunks, pjit
from ..errors import ModelError
from ..core.joints import codes as C
from ..core.joints import fn as _fn
from ..core.joints.pose import coord_function
from ..core.generic_path import seeds

MAX_IND = C.MAX_NV


class Coupler:
    """One coupler in the coordinates of the full mechanism: ``dependent`` and ``independent``
    are (joint index, coordinate within the joint) pairs; ``function`` an ``ej.fn`` function of
    the independent coordinates (its coordinate k is ``independent[k]``); ``scale`` a number."""

    __slots__ = ("dependent", "independent", "function", "scale")

    def __init__(self, dependent, independent, function, scale=1.0):
        self.dependent = (int(dependent[0]), int(dependent[1]))
        self.independent = tuple((int(j), int(k)) for j, k in independent)
        self.function = function
        self.scale = float(scale)

    def is_linear(self):
        """True when phi is affine (G constant, Gdot = 0)."""
        parts = self.function.parts if isinstance(self.function, _fn.Sum) else [self.function]
        return all(isinstance(p, _fn.Linear) or (isinstance(p, _fn.TimePoly) and len(p.coeffs) == 1)
                   for p in parts)

    def __eq__(self, other):
        return (isinstance(other, Coupler) and self.dependent == other.dependent
                and self.independent == other.independent and self.scale == other.scale
                and self.function == other.function)

    def __repr__(self):
        return (f"Coupler(dependent={self.dependent}, independent={list(self.independent)}, "
                f"function={self.function!r}, scale={self.scale!r})")


def check(couplers, specs, joint_names):
    """Refuse couplers the mechanism cannot hold (see the module's rules); errors name the
    joints and coordinates."""
    def name(jk):
        j, k = jk
        return f"coordinate {k} of joint {joint_names[j]!r}"

    deps = {}
    for c in couplers:
        who = f"coupler of {name(c.dependent)}"
        for jk in (c.dependent,) + c.independent:
            j, k = jk
            if not 1 <= j < len(specs):
                raise ModelError(f"{who}: joint index {j} does not exist")
            s = specs[j]
            if not 0 <= k < s.nq:
                raise ModelError(f"{who}: joint {joint_names[j]!r} ({s!r}) has no coordinate {k}")
            if getattr(s, "quaternion", False) and k >= s.nq - 4 or s.nq != s.nv:
                raise ModelError(f"{who}: {name(jk)} ({s!r}) is not a coordinate whose rate is its velocity "
                                 "(a unit quaternion's or a joint with nq != nv); couplers need such coordinates")
        if not 1 <= len(c.independent) <= MAX_IND:
            raise ModelError(f"{who}: a coupler reads 1 to {MAX_IND} independent coordinates, got "
                             f"{len(c.independent)}")
        if len(set(c.independent)) != len(c.independent):
            raise ModelError(f"{who}: an independent coordinate is listed twice")
        if c.dependent in c.independent:
            raise ModelError(f"{who}: the dependent coordinate is also one of its independent coordinates")
        if not isinstance(c.function, _fn.Function):
            raise ModelError(f"{who}: function must be an ej.fn function, got {c.function!r}")
        if c.function.depends_on_time():
            raise ModelError(f"{who}: the function depends on time; a coupler is a function of coordinates")
        if c.function.max_coord() >= len(c.independent):
            raise ModelError(f"{who}: the function reads coordinate {c.function.max_coord()} but the coupler has "
                             f"{len(c.independent)} independent coordinates")
        if not np.isfinite(c.scale):
            raise ModelError(f"{who}: scale must be finite, got {c.scale!r}")
        if c.dependent in deps:
            raise ModelError(f"{who}: {name(c.dependent)} is the dependent coordinate of two couplers")
        deps[c.dependent] = c
    for c in couplers:
        for jk in c.independent:
            if jk in deps:
                raise ModelError(f"coupler of {name(c.dependent)}: its independent {name(jk)} is itself coupled "
                                 f"(dependent of another coupler); couple {name(c.dependent)} to that coupler's "
                                 "independent coordinates directly (chains and cycles of couplers are refused)")


def tables(model, full):
    """The integer and float tables of ``expand_rows`` for a model with couplers and its
    expansion ``full``: (own_q, own_v, cq, cv, cnind, cind_q, cind_v, cfadr, cscale, params)."""
    dep = {c.dependent for c in model.couplers}
    own_q, own_v = [], []
    red_q, red_v = {}, {}
    for j in range(1, model.nbodies + 1):
        s = model.joint_specs[j]
        fq, fv = int(full.jnt_qadr[j]), int(full.jnt_dofadr[j])
        for k in range(s.nq):
            if (j, k) not in dep:
                red_q[(j, k)] = len(own_q)
                own_q.append(fq + k)
        # velocity variables: a dependent coordinate's rate is its velocity variable k
        for k in range(s.nv):
            if (j, k) not in dep:
                red_v[(j, k)] = len(own_v)
                own_v.append(fv + k)
    n = len(model.couplers)
    cq = np.zeros(n, dtype=np.int64)
    cv = np.zeros(n, dtype=np.int64)
    cnind = np.zeros(n, dtype=np.int64)
    cind_q = np.zeros((n, MAX_IND), dtype=np.int64)
    cind_v = np.zeros((n, MAX_IND), dtype=np.int64)
    cfadr = np.zeros(n, dtype=np.int64)
    cscale = np.zeros(n)
    params = []
    for i, c in enumerate(model.couplers):
        j, k = c.dependent
        cq[i] = full.jnt_qadr[j] + k
        cv[i] = full.jnt_dofadr[j] + k
        cnind[i] = len(c.independent)
        for a, jk in enumerate(c.independent):
            cind_q[i, a] = red_q[jk]
            cind_v[i, a] = red_v[jk]
        cfadr[i] = len(params)
        terms = c.function.terms()
        params += [float(len(terms))] + [float(v) for t in terms for v in t]
        cscale[i] = c.scale
    return (np.array(own_q, dtype=np.int64), np.array(own_v, dtype=np.int64), cq, cv, cnind, cind_q, cind_v,
            cfadr, cscale, np.array(params + [0.0, 0.0, 0.0]))


@jit
def expand_state(own_q, own_v, cq, cv, cnind, cind_q, cind_v, cfadr, cscale, params, q, v, a, level,
                 qi, vi, qf, vf, af, G):
    """phi(q) into qf and G(q) into G; from level 1 v_full = G v into vf, at level 2
    a_full = G a + Gdot v into af.  qi, vi: scratch of MAX_IND entries."""
    for k in range(own_q.shape[0]):
        qf[own_q[k]] = q[k]
    G[:, :] = 0.0
    for k in range(own_v.shape[0]):
        G[own_v[k], k] = 1.0
        if level >= 1:
            vf[own_v[k]] = v[k]
        if level >= 2:
            af[own_v[k]] = a[k]
    tj = (0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    for c in range(cq.shape[0]):
        n = cnind[c]
        for k in range(MAX_IND):
            qi[k] = q[cind_q[c, k]] if k < n else 0.0
            vi[k] = v[cind_v[c, k]] if (k < n and level >= 1) else 0.0
        qj = seeds(qi, vi, 0, n, 0, -1)
        f, _ = coord_function(params, cfadr[c], qj, tj)
        s = cscale[c]
        qf[cq[c]] = s * f[0]
        acc = s * f[2]
        for k in range(n):
            g = s * f[3 + k]
            G[cv[c], cind_v[c, k]] = g
            if level >= 2:
                acc += g * a[cind_v[c, k]]
        if level >= 1:
            vf[cv[c]] = s * f[1]
        if level >= 2:
            af[cv[c]] = acc


@jit(forceinline=True)
def gt_mul(G, X, out):
    """out = G^T X, skipping the zeros of G (mostly rows of the identity)."""
    out[:, :] = 0.0
    for k in range(G.shape[0]):
        for a in range(G.shape[1]):
            g = G[k, a]
            if g != 0.0:
                for c in range(X.shape[1]):
                    out[a, c] += g * X[k, c]


@jit
def expand_rows(tabs, Q, V, A, level, QF, VF, AF, G, QI, VI, lo, hi):
    """``expand_state`` of states lo..hi-1 of a batch, on this thread (``tabs``: the coupler
    tables, ``tables``; V and A may hold one row for every state; QI, VI: (B, MAX_IND) scratch)."""
    own_q, own_v, cq, cv, cnind, cind_q, cind_v, cfadr, cscale, params = tabs
    for b in range(lo, hi):
        bv = b if V.shape[0] > 1 else 0
        ba = b if A.shape[0] > 1 else 0
        expand_state(own_q, own_v, cq, cv, cnind, cind_q, cind_v, cfadr, cscale, params, Q[b],
                     V[bv], A[ba], level, QI[b], VI[b], QF[b], VF[bv], AF[ba], G[b])


@pjit
def expand_many(tabs, Q, V, A, level, QF, VF, AF, G, QI, VI, nchunk):
    """``expand_rows`` of a batch in nchunk chunks of states, in parallel."""
    n = Q.shape[0]
    for c in prange(nchunk):
        k = np.int64(c)
        expand_rows(tabs, Q, V, A, level, QF, VF, AF, G, QI, VI, k * n // nchunk, (k + 1) * n // nchunk)


class Coupling:
    """The map of a model with couplers onto its expansion, for a batch of states (n, ...):
    ``expand`` computes q_full, v_full, a_full and keeps G (n, nv_full, nv) for the projections."""

    def __init__(self, model):
        self.model = model
        self.full = model.expanded()
        self.tabs = model._coupler_tables()
        self.G = self.Gv = None

    def expand(self, q2, v2=None, a2=None):
        n = q2.shape[0]
        if self.model.couplers_linear:
            # constant maps (mimic joints): no kernel to run
            Gq, gq, Gv = self.model.mimic_map()
            self.Gv = Gv
            self.G = np.broadcast_to(Gv, (n,) + Gv.shape)
            return (np.ascontiguousarray(q2 @ Gq.T + gq),
                    None if v2 is None else np.ascontiguousarray(v2 @ Gv.T),
                    None if a2 is None else np.ascontiguousarray(a2 @ Gv.T))
        full = self.full
        level = 0 if v2 is None else (1 if a2 is None else 2)
        QF = np.empty((n, full.nq))
        VF = np.zeros((n if level >= 1 else 1, full.nv))
        AF = np.zeros((n if level >= 2 else 1, full.nv))
        self.G = np.empty((n, full.nv, self.model.nv))
        V = np.ascontiguousarray(v2, dtype=np.float64) if level >= 1 else np.zeros((1, self.model.nv))
        A = np.ascontiguousarray(a2, dtype=np.float64) if level >= 2 else np.zeros((1, self.model.nv))
        args = (self.tabs, np.ascontiguousarray(q2, dtype=np.float64), V, A, level, QF, VF, AF, self.G,
                np.empty((n, MAX_IND)), np.empty((n, MAX_IND)))
        if n >= 64:
            expand_many(*args, n_chunks(n))
        else:
            # a few states: no thread pool to wake
            expand_rows(*args, 0, n)
        return QF, (VF if level >= 1 else None), (AF if level >= 2 else None)

    def q(self, q2):
        return self.expand(q2)[0]

    def tau(self, tau_full):
        """G^T tau_full, per state."""
        if self.Gv is not None:
            return tau_full @ self.Gv
        return np.ascontiguousarray((tau_full[:, None, :] @ self.G)[:, 0])

    def mass(self, M_full):
        """G^T M_full G, per state."""
        if self.Gv is not None:
            return self.Gv.T @ M_full @ self.Gv
        return np.ascontiguousarray(self.G.transpose(0, 2, 1) @ M_full @ self.G)

    def right(self, J_full):
        """J_full G, per state (J_full (n, r, nv_full))."""
        if self.Gv is not None:
            return np.ascontiguousarray(J_full @ self.Gv)
        return np.ascontiguousarray(J_full @ self.G)


# ---------------------------------------------------------------------------- in other kernels
Coupled = namedtuple("Coupled", [
    "own_q", "own_v", "cq", "cv", "cnind", "cind_q", "cind_v", "cfadr", "cscale", "params",   # couplers.tables
    "qf", "vf", "af",         # the expansion's state and acceleration bias
    "G",                      # (nv_full, nv): the couplers' Jacobian
    "qi", "vi",               # a coupler's independent coordinates and rates (MAX_IND)
    "Mf", "T", "Mr",          # M_full (nv_full, nv_full), G^T M_full (nv, nv_full), G^T M_full G
    "hf", "rhs",              # h_full, tau - G^T h_full
    "za"])                    # zero accelerations (nv)


def coupled_chunks(model, full, nchunk):
    """One ``Coupled`` record per chunk of a run of a model with couplers (``full`` its
    expansion's sizes: nq, nv)."""
    tabs = model._coupler_tables()
    nv = model.nv
    nqf, nvf = full
    out = []
    for _ in range(nchunk):
        work = (np.zeros(nqf), np.zeros(nvf), np.zeros(nvf), np.zeros((nvf, nv)), np.zeros(MAX_IND),
                np.zeros(MAX_IND), np.zeros((nvf, nvf)), np.zeros((nv, nvf)), np.zeros((nv, nv)), np.zeros(nvf),
                np.zeros(nv), np.zeros(nv))
        out.append(Coupled(*tabs, *work))
    return out

