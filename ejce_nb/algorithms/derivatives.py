"""Derivatives of inverse and forward dynamics for any EJCE joint: d tau / d(q, v, qdd, t) of the
recursive Newton-Euler algorithm and d qdd / d(q, v, tau, t) of forward dynamics.

    tau = ID(q, v, a, t):    dtau_dq, dtau_dv, dtau_da = M, dtau_dt
    qdd = FD(q, v, tau, t):  dqdd_dq = -M^-1 dtau_dq,  dqdd_dv = -M^-1 dtau_dv,  dqdd_dtau = M^-1,
                             dqdd_dt = -M^-1 dtau_dt         (all at a = FD(q, v, tau, t))

The q-derivative is taken on the tangent space: a unit quaternion moves as q (x) Exp(dtheta),
dtheta in its own (C) axes, as its velocity variables do (Pinocchio's convention); every other
coordinate is its own tangent (plain partial derivatives).  ``tangent_map`` gives the matrix that
turns these columns into derivatives with respect to the coordinates.

Method: RNEA differentiated in the world frame, every pair of a joint and one of its ancestors
met once (``tangent_sweeps``), with each joint's own derivatives from its terms
(``joint_tangents``), and time by a forward-mode sweep; forward dynamics by the mass matrix
factorised along the tree (M^-1's products by numpy's matmul for large models).  The kernels
(``derivative_kernels``) run one state from one compiled entry on pooled workspaces, and a batch
in parallel over chunks of states, each state bit for bit its single-state result (a forward-
dynamics batch on a model with lanes takes qdd from the batch ABA, four states at once, which
gives the single-state ABA's bits).

Couplers (mimic joints): tau = G^T tau_full(phi(q), G v, G a + Gdot v) differentiated by the chain
rule on the expansion's derivatives; G's derivatives come from the couplers' jets (polarisation,
exact), the q-derivative of Gdot v (third derivatives of the coupler functions) from a
Richardson difference of the coupler map.
"""
import numpy as np

from ..calls import workspaces
from .._jit import call
from ..model import inputs
from ..calls.public import aba, rnea
from .derivative_kernels import (DERIVATIVES_ONE, DERIVATIVES_SAMPLES, PRODUCTS, QDD_GIVEN, inverse_factor,
                                 scratch_size)
from ..calls.kernels import ABA, NSLOT, chunk_lanes, params
from ..calls.python_layer import paths
from .joint_tangents import FD_STEP
from ..core.ejce import PATH_USER
from ..model.layout import H_LANES, table

_ND = np.ndarray


class _NoForce(dict):
    def __missing__(self, n1):
        self[n1] = np.zeros((0, n1, 6))
        return self[n1]


_NO_FORCE = _NoForce()
P_ABA = params(ask=(ABA,))     # the batch ABA of ``_aba_then_derivatives``


def _prepared(km):
    """(per-joint time flags (driven and user-defined joints), a pool of one-state scratch, the
    empty wrench array, a vector that takes dtau/dt where it is not asked for), kept on the
    kernel model."""
    p = km.__dict__.get("_derivatives")
    if p is None:
        path = table(km._mb, km._mb, "jnt_path", (km.nbodies + 1,))
        jr = np.array([1 if (s.is_rheonomic() or path[j] == PATH_USER) else 0
                       for j, s in enumerate(km.joint_specs)], dtype=np.int64)
        p = (jr, [], _NO_FORCE[km.nbodies + 1], np.empty(km.nv))
        object.__setattr__(km, "_derivatives", p)
    return p


# forward-dynamics derivatives of a model with at least this many velocity variables leave the
# products with M^-1 (nv^3 multiply-adds each) to numpy's matmul (BLAS), the rest to the kernels
PRODUCTS_NV = 32
# a batch of fewer states runs on the calling thread: waking a thread costs tens of microseconds,
# several states' derivatives
THREADS_FROM = 32
# forward-dynamics derivatives of a batch of at least this many states, on a model whose ABA runs
# on lanes (four states at once, ``core.lanes``), take qdd from the batch ABA first
# (``_aba_then_derivatives``): arm7's ABA is 0.6-0.7 us a state there against about 1.4 us state
# by state in the derivative kernel
LANE_ABA_FROM = 16


def _kernel_kind(km, kind):
    """The kernels' kind for ``kind`` (0 rnea, 1 aba) on the kernel model km."""
    return PRODUCTS if kind == 1 and km.nv >= PRODUCTS_NV else kind


def inverse_products(km, dq, dv, dt, MM, want_t):
    """One state of kind ``PRODUCTS`` on the kernel model km, in place: from the factor L of
    M = L^T L in MM and dtau/d(q, v, t) in dq, dv, dt, MM = M^-1 = L^-1 L^-T (``inverse_factor``,
    then numpy's product of a matrix with its own transpose: symmetric), dq = -M^-1 dq,
    dv = -M^-1 dv and, with ``want_t``, dt = -M^-1 dt."""
    nv = MM.shape[0]
    inverse_factor(km._mb, MM, np.empty(nv), np.empty(nv), np.empty(nv))
    Minv = MM @ MM.T
    MM[...] = Minv
    np.negative(Minv @ dq, out=dq)
    np.negative(Minv @ dv, out=dv)
    if want_t:
        np.negative(Minv @ dt, out=dt)


def _scratch(km, n=None):
    """The derivative kernels' scratch of one state (n None) or of n chunks."""
    size = scratch_size(km.nbodies + 1, km.nq, km.nv)
    return np.zeros(size) if n is None else np.zeros((n, size))


def _fast(model, q, qd, x, t, data, kind, time_derivative, errors, bufs):
    """One state straight to the compiled entry on the caller's arrays and pooled workspaces (or
    the Data's); the result, or None where the call must go through the input layer (first call,
    arrays the entry is not compiled for, couplers, a bad state: the input layer converts, checks
    and reports)."""
    workspaces.check_errors(errors)
    kk = _kernel_kind(model, kind)
    derivatives_one = DERIVATIVES_ONE[model._paths][kk != 0]
    if not derivatives_one.ready:
        return None
    w, pool = workspaces.acquire(model, data)
    if w is None:
        return None
    jr, xpool, F0, nodt = _prepared(model)
    X = xpool.pop() if xpool else _scratch(model)
    nv = model.nv
    if bufs is not None:
        dq, dv, M = (a[0] for a in bufs[1][:3])
        dt = bufs[1][3][0] if time_derivative else nodt
    else:
        # three arrays, not views of one: a third of the cost; dt only where it is returned
        dq = np.empty((nv, nv))
        dv = np.empty((nv, nv))
        M = np.empty((nv, nv))
        dt = np.empty(nv) if time_derivative else nodt
    want_t = bool(time_derivative and model.rheonomic)
    try:
        st, _ = derivatives_one(model._mb, w, X, jr, q, qd, x, t, F0, kk, want_t, dq, dv, dt, M)
    except (TypeError, ValueError):     # arguments the entry is not compiled for
        st = -1
    xpool.append(X)
    if pool is not None:
        pool.append(w)
    if st != 0:
        return None
    if kk == PRODUCTS:
        inverse_products(model, dq, dv, dt, M, want_t)
    res = (dq, dv, M, dt) if time_derivative else (dq, dv, M)
    if bufs is not None:
        res = bufs[0]
    return res + (0,) if errors == "flag" else res


def _run(km, q2, v2, x2, t1, F, kind, want_t, data, B, bufs=None):
    """The kernels on the kernel model (no couplers): (DQ, DV, DT, MM, status), one row per state;
    B None: one state through the single-state entry.  ``bufs``: the arrays (DQ, DV, MM[, DT]) to
    write into, one row per state (``_out_arrays``)."""
    jr, xpool, _, _ = _prepared(km)
    n, nv = q2.shape[0], km.nv
    if bufs is not None:
        DQ, DV, MM = bufs[:3]
        DT = bufs[3] if len(bufs) > 3 else np.empty((n, nv))
    else:
        # the three matrices are views of one block: freed together, three separate blocks exceed
        # the C allocator's trim threshold (twice the largest block freed), so every batch would
        # fault fresh pages in again (0.5-0.7 us a state for arm7, a sixth of rnea_derivatives)
        DQ, DV, MM = np.empty((3, n, nv, nv))
        DT = np.empty((n, nv))
    status = np.zeros((n, 2), dtype=np.int64)
    kk = _kernel_kind(km, kind)
    if B is None:
        w = data._w if data is not None else workspaces.one_workspace(km)
        X = xpool.pop() if xpool else _scratch(km)
        status[0] = call(DERIVATIVES_ONE[km._paths][kk != 0], km._mb, w, X, jr, q2[0], v2[0], x2[0], float(t1[0]), F, kk, want_t,
                         DQ[0], DV[0], DT[0], MM[0])
        xpool.append(X)
        if data is None:
            workspaces.release(km, w)
    else:
        R, S, per_state, token = workspaces.batch_workspace(km, n, data)
        args = (km._mb, R, S, per_state, _scratch(km, S.shape[0]), jr, q2, v2, x2, t1, F, kk, want_t, DQ, DV, DT, MM,
                status)
        samples = DERIVATIVES_SAMPLES[km._paths][kk != 0]
        if kk != 0 and data is None and n >= LANE_ABA_FROM and km._mb[H_LANES] != 0:
            ST = np.zeros((n, NSLOT, 2), dtype=np.int64)
            workspaces.run_chunks(_aba_then_derivatives, S.shape[0], samples, paths(km), *args,
                                  np.full((n, nv), np.nan), ST, serial=n < THREADS_FROM,
                                  kernels=(chunk_lanes, samples))
            _lane_aba_failed(status, ST)
        else:
            workspaces.run_chunks(samples, S.shape[0], *args, serial=n < THREADS_FROM)
        workspaces.release_batch(token)
    if kk == PRODUCTS:
        for b in np.nonzero((status[:, 0] == 0) | (status[:, 0] == inputs.NEAR_SINGULAR))[0]:
            inverse_products(km, DQ[b], DV[b], DT[b], MM[b], want_t)
    return DQ, DV, DT, MM, status


def _aba_then_derivatives(samples, full, mb, R, S, per_state, X, JR, Q, V, TAU, T, F, kind, want_t, DQ, DV, DT, MM,
                          status, QDD, ST, c, nchunk):
    """Chunk c of nchunk of a forward-dynamics derivative batch on a model with lanes (for
    ``workspaces.run_chunks``, on the chunk's workspace): qdd = aba(q, v, tau) of its states by the
    batch ABA on lanes into QDD (four states at once, ``kernels.chunk_lanes``; statuses in ST), then
    the derivatives at qdd (``samples``, the batch kernel of the model's joint paths ``full``, kind +
    ``QDD_GIVEN``).  The derivatives of a
    sample the ABA failed (its qdd NaN or not written) are discarded: its status becomes the ABA's
    (``_lane_aba_failed``), as the kernel's own ABA would report it, and its rows NaN; a
    near-singular joint is computed on, as there.  Two compiled calls, nothing else: the GIL is
    held between them."""
    n = Q.shape[0]
    chunk_lanes(mb, R, S, c, c * n // nchunk, (c + 1) * n // nchunk, full, P_ABA, Q, V, Q[:, :0], TAU, T, F, None,
                QDD, ST, True)
    samples(mb, R, S, per_state, X, JR, Q, V, QDD, T, F, kind + QDD_GIVEN, want_t, DQ, DV, DT, MM, status, c, nchunk)


def _lane_aba_failed(status, ST):
    """The statuses of the samples the batch ABA failed (``_aba_then_derivatives``): the ABA's."""
    st = ST[:, ABA]
    bad = (st[:, 0] != 0) & (st[:, 0] != inputs.NEAR_SINGULAR)
    status[bad] = st[bad]


def _coupled_rnea(model, q2, v2, a2, t1, F, want_t, data, B):
    """Reduced derivatives of a model with couplers from its expansion's:
    tau = G^T tau_f(phi(q), G v, G a + Gdot v), by the chain rule."""
    km = model.expanded()
    n, nv = q2.shape[0], model.nv
    G = model.coupler_jacobian(q2)
    qf = model.expand(q2)
    vf = np.einsum("bij,bj->bi", G, v2)
    af = model.expand_a(a2, q2, v2)
    DQf, DVf, DTf, Mf, status = _run(km, qf, vf, af, t1, F, 0, want_t, None, 0)
    tauf = rnea(km, qf, vf, af, t1, None if F.shape[0] == 0 else F, errors="flag")[0]
    GT = np.transpose(G, (0, 2, 1))
    M = GT @ Mf @ G
    DQ = GT @ DQf @ G
    DV = GT @ DVf @ G
    DT = np.einsum("bji,bj->bi", G, DTf)
    if not model.couplers_linear:
        # d(Gdot v)/dv exactly (Gdot v is quadratic in v); d/dq of G (times v, a, and of G^T tau_f)
        # and of Gdot v by Richardson differences of the coupler map
        z = np.zeros_like(a2)
        gv = np.empty((n, km.nv, nv))
        for k in range(nv):
            e = np.zeros(nv)
            e[k] = 1.0 + np.abs(v2[:, k]).max()
            gv[:, :, k] = (model.expand_a(z, q2, v2 + e) - model.expand_a(z, q2, v2 - e)) / (2 * e[k])
        DV += GT @ Mf @ gv
        quat = np.zeros(nv, dtype=bool)
        for j, _ in model.quaternion_blocks():
            quat[model.v_slice(j)] = True
        vq = {}
        for j in range(1, model.nbodies + 1):
            for x in range(int(model.nv_joint[j])):
                vq[int(model.v_start[j]) + x] = int(model.q_start[j]) + x
        for k in range(nv):
            if quat[k]:
                continue
            kq = vq[k]
            h = FD_STEP * (1.0 + np.abs(q2[:, kq]).max())
            dG = np.zeros((n, km.nv, nv))
            dgv = np.zeros((n, km.nv))
            for step, w in ((h, -1 / (6 * h)), (-h, 1 / (6 * h)), (h / 2, 4 / (3 * h)), (-h / 2, -4 / (3 * h))):
                qs = q2.copy()
                qs[:, kq] += step
                dG += w * model.coupler_jacobian(qs)
                dgv += w * model.expand_a(z, qs, v2)
            dvf = np.einsum("bij,bj->bi", dG, v2)
            daf = np.einsum("bij,bj->bi", dG, a2) + dgv
            DQ[:, :, k] += (np.einsum("bji,bj->bi", dG, tauf) + np.einsum("bji,bj->bi", G, np.einsum(
                "bij,bj->bi", DVf, dvf) + np.einsum("bij,bj->bi", Mf, daf)))
    return DQ, DV, DT, M, status, tauf


_OUT_NAMES = (("dtau_dq", "dtau_dv", "M", "dtau_dt"), ("dqdd_dq", "dqdd_dv", "Minv", "dqdd_dt"))


def _out_arrays(model, q, out, kind, time_derivative, what):
    """(the caller's ``out`` as a tuple, the same arrays with one row per state: a one-state call's
    with a leading axis of one), after checking that each is a writeable C-ordered float64 array
    of its result's shape; None where ``out`` is None."""
    if out is None:
        return None
    names = _OUT_NAMES[kind][:4 if time_derivative else 3]
    if not isinstance(out, (tuple, list)) or len(out) != len(names):
        got = f"{len(out)} arrays" if isinstance(out, (tuple, list)) else type(out).__name__
        raise ValueError(f"{what}: out must be a tuple of {len(names)} arrays ({', '.join(names)}), got {got}")
    lead = () if np.ndim(q) <= 1 else (len(q),)
    nv = model.nv
    for a, name, shape in zip(out, names, (lead + (nv, nv),) * 3 + (lead + (nv,),)):
        if not (isinstance(a, _ND) and a.dtype == np.float64 and a.shape == shape and a.flags.c_contiguous
                and a.flags.writeable):
            got = (f"{a.dtype} {a.shape}{'' if a.flags.c_contiguous else ', not C-ordered'}"
                   f"{'' if a.flags.writeable else ', read-only'}") if isinstance(a, _ND) else type(a).__name__
            raise ValueError(f"{what}: out's {name} must be a writeable C-ordered float64 array of shape "
                             f"{shape}, got {got}")
    if any(np.may_share_memory(a, b) for k, a in enumerate(out) for b in out[k + 1:]):
        raise ValueError(f"{what}: out's arrays ({', '.join(names)}) must not overlap")
    return tuple(out), [a if lead else a[None] for a in out]


def _derivatives(model, q, qd, x, t, f_ext, data, errors, kind, time_derivative, what, out):
    bufs = _out_arrays(model, q, out, kind, time_derivative, what)
    if f_ext is None and type(q) is _ND and q.ndim == 1 and type(t) is float:
        res = _fast(model, q, qd, x, t, data, kind, time_derivative, errors, bufs)
        if res is not None:
            return res
    inputs.check_errors_arg(errors)
    B, q2, (v2, x2), t1 = inputs.states(model, q, ((qd, "qd"), (x, "qdd" if kind == 0 else "tau")), t)
    if data is not None:
        data._check(model, B)
    F = inputs.fext_array(model, f_ext, B)
    want_t = bool(time_derivative) and model.rheonomic
    if not model.has_couplers:
        DQ, DV, DT, MM, status = _run(model, q2, v2, x2, t1, F, kind, want_t, data, B,
                                      None if bufs is None else bufs[1])
    else:
        if kind == 0:
            DQ, DV, DT, MM, status, _ = _coupled_rnea(model, q2, v2, x2, t1, F, want_t, data, B)
        else:
            qdd, st = aba(model, q2, v2, x2, t1, None if F.shape[0] == 0 else F, errors="flag")
            ok = np.isfinite(qdd).all(axis=1)
            qdd = np.where(ok[:, None], qdd, 0.0)
            DQ, DV, DT, M, status, _ = _coupled_rnea(model, q2, v2, qdd, t1, F, want_t, data, B)
            MM = np.full_like(M, np.nan)
            for b in range(q2.shape[0]):
                if not ok[b]:
                    status[b] = (st[b], -1)
                    continue
                try:
                    L = np.linalg.cholesky(M[b])
                except np.linalg.LinAlgError:
                    status[b] = (inputs.SINGULAR_MASS, -1)
                    continue
                Li = np.linalg.inv(L)
                MM[b] = Li.T @ Li
            DQ = -MM @ DQ
            DV = -MM @ DV
            DT = -np.einsum("bij,bj->bi", MM, DT)
        if bufs is not None:
            for dst, src in zip(bufs[1], (DQ, DV, MM, DT)):
                dst[...] = src
    if bufs is not None:
        DQ, DV, MM = bufs[1][:3]
        DT = bufs[1][3] if time_derivative else DT
    inputs.nan_failed(status[:, 0], (DQ, DV, DT, MM))
    res = [inputs.unbatch(B, DQ), inputs.unbatch(B, DV), inputs.unbatch(B, MM)]
    if time_derivative:
        res.append(inputs.unbatch(B, DT))
    res = inputs.flag_or_raise(errors, model, status, what, ["q", "qd", "qdd" if kind == 0 else "tau"],
                               [q2, v2, x2], t1, B, bufs[0] if bufs is not None else tuple(res))
    if errors == "flag":
        return tuple(res[0]) + (res[1],)
    return res


def rnea_derivatives(model, q, qd, qdd, t=0.0, f_ext=None, data=None, errors="raise", time_derivative=False,
                     out=None):
    """Partial derivatives of inverse dynamics tau = rnea(q, qd, qdd, t, f_ext):
    ``(dtau_dq, dtau_dv, M)``, each (nv, nv) or (B, nv, nv), with dtau_dqdd = M (the mass matrix,
    armature included); ``time_derivative=True`` adds dtau_dt (nv,) or (B, nv) (zero for a model
    without driven joints).  dtau_dq is taken on the tangent space: a unit quaternion's columns
    are its rotation dtheta in its own axes, q (x) Exp(dtheta) (``tangent_map`` turns the columns
    into coordinate derivatives); every other column is the partial derivative with respect to
    that coordinate (Pinocchio's convention for its spherical joint; a free joint's translation
    stays in P axes, as its velocity does).  External wrenches ``f_ext`` keep their world axes
    and their point of application, the body origin, as the bodies move.

    Exactness: joints that are products of screw motions with amounts ``scale * q_k`` and unit
    quaternions in closed form; ``dcJ/du`` of every joint by polarisation of its exact
    (quadratic) bias; joints given by a general pose (composite joints with function amounts,
    rotation-vector / Gibbs / MRP spherical joints, ``Custom`` joints) take the q- and
    t-derivatives of their own S, vJ, cJ from a Richardson difference of those exact terms (about
    1e-11 relative); models with nonlinear couplers the q-derivatives of the coupler map the same
    way.

    A batch (B, nq) runs in parallel; each sample's result is bit for bit its single call's.
    ``errors="flag"``: the tuple followed by the status codes (an int, or (B,)), the rows of bad
    samples NaN.  ``out``: a tuple of arrays of the results' shapes, in the order returned (three,
    four with ``time_derivative=True``), writeable C-ordered float64 and not overlapping; the
    results are written into them and the same arrays returned (a loop over batches allocates
    nothing per call).  Any other ``out`` is a ``ValueError`` naming the array and the shape it
    must have.  ``data``: an ``ej.Data`` as for ``rnea``."""
    return _derivatives(model, q, qd, qdd, t, f_ext, data, errors, 0, time_derivative, "rnea_derivatives", out)


def aba_derivatives(model, q, qd, tau, t=0.0, f_ext=None, data=None, errors="raise", time_derivative=False,
                    out=None):
    """Partial derivatives of forward dynamics qdd = aba(q, qd, tau, t, f_ext):
    ``(dqdd_dq, dqdd_dv, Minv)``, each (nv, nv) or (B, nv, nv), with dqdd_dtau = Minv = M^-1;
    ``time_derivative=True`` adds dqdd_dt (nv,) or (B, nv).  dqdd_dq = -M^-1 dtau_dq and
    dqdd_dv = -M^-1 dtau_dv at qdd = aba(q, qd, tau) (``rnea_derivatives``; the same
    tangent-space convention and exactness).  Singular joints and mass matrices are reported as
    by ``aba``.  Batches, ``errors="flag"``, ``out`` and ``data``: as for ``rnea_derivatives``."""
    return _derivatives(model, q, qd, tau, t, f_ext, data, errors, 1, time_derivative, "aba_derivatives", out)


def tangent_map(model, q):
    """T (nv, nq) with coordinate derivatives d/dq = (d/dq tangent, as the derivative functions
    give it) @ T:
    the identity for every coordinate whose rate is its velocity variable, and 4 N(q)^T for a
    unit quaternion block (dtheta = 4 N(q)^T dq for q' = N(q) u; zero along q, which every
    function normalises away)."""
    q = np.asarray(q, dtype=float)
    T = np.zeros((model.nv, model.nq))
    own = model  # velocity and coordinate slices of each joint
    for j in range(1, own.nbodies + 1):
        qs, vs = int(own.q_start[j]), int(own.v_start[j])
        nq, nv = int(own.nq_joint[j]), int(own.nv_joint[j])
        quat = getattr(own.joint_specs[j], "quaternion", False) and nq != nv
        nplain = nv - 3 if quat else nv
        for x in range(nplain):
            T[vs + x, qs + x] = 1.0
        if quat:
            w, x, y, z = q[qs + nq - 4: qs + nq]
            N = 0.5 * np.array([[-x, -y, -z], [w, -z, y], [z, w, -x], [-y, x, w]])
            T[vs + nplain: vs + nv, qs + nq - 4: qs + nq] = 4.0 * N.T
    return T
