"""The public functions of the algorithms, each a call of the batch driver (``python_layer.run``) with
its quantities, and a fast path for one state given as plain float64 arrays (``_fast``).

``evaluate`` computes any set of quantities of the same states on one forward sweep per state.
"""
import numpy as np

from . import python_layer, workspaces
from ..algorithms.crba import _chol_solve, _chol_solve_batch
from .python_layer import finish, run
from .kernels import ABA, BJ, CRBA, ENERGY, FK, JT, LIVE, RNEA, params
from ..algorithms.kinematics import JointTerms, Kinematics, fk_size, jt_size
from ..model import inputs

_ND = np.ndarray
_EMPTY = python_layer._EMPTY
_RAISE, _FLAG = "raise", "flag"
_empty = np.empty


def _fast(slot, model, data, errors, key, shape, P, q, v, x, t):
    """The fast path of a one-state call: the entry ``LIVE[slot]`` on the caller's arrays untouched
    (``x``: qdd for rnea and forward kinematics, tau for aba; ``P``: the entry's parameters, asking
    for ``slot`` alone, None for rnea and aba, ``kernels.P_FREE``), with a pooled workspace (or the
    Data's); the result, or None where the call must go through the input layer (first call,
    arrays the entry is not compiled for, couplers, a Data of another kind, a bad state: the
    input layer converts, checks and reports).  Every Python operation here is paid on every
    call: the model carries its kind of joint paths (``_paths``)."""
    if errors is not _RAISE and errors is not _FLAG:
        workspaces.check_errors(errors)
    kind = model._paths
    d = LIVE[slot][kind]
    if d is None:
        return None
    if data is None:
        # workspaces.acquire's first case, written out: a call of it would cost every one-state call
        pool = model._wpool
        if pool is None:
            return None
        try:
            w = pool.pop()
        except IndexError:
            w = workspaces.new_workspace(model)
        out = _empty(shape)
    else:
        w, pool = workspaces.acquire(model, data)
        if w is None:
            return None
        out = data._one(key, shape)
    try:
        if P is None:
            st = d(model._mb, w, q, v, x, t, out)
        else:
            st = d(model._mb, w, P, q, v, x, t, out if slot != CRBA else out.ravel())
    except (TypeError, ValueError):     # arguments the entry is not compiled for
        st = -1
    if pool is not None:
        pool.append(w)
    if st != 0:
        return None
    return out if errors == "raise" else (out, 0)


def _outputs(data, B, key, shape):
    """The Data's result array of a one-state or batch call (None: no Data)."""
    if data is None:
        return None
    return data._result(key, shape if B is None else (B,) + shape)


# ---------------------------------------------------------------------------- dynamics
def rnea(model, q, qd, qdd, t=0.0, f_ext=None, data=None, errors="raise"):
    """Joint forces tau (..., nv) that produce the accelerations qdd at (q, qd, t), with gravity
    from the model and optional external wrenches f_ext (..., N+1, 6) in world axes
    ([moment about the body origin; force] on each body, row 0 ignored): the recursive
    Newton-Euler algorithm, O(N).  ``f_ext`` is (N+1, 6), or (B, N+1, 6) for a batch.  Rotor
    inertias are included (``armature qdd``); the passive joint forces (``dof_damping``,
    ``dof_stiffness``) are not: only ``ej.simulate`` adds them.  On a model with loop closures
    these are the open tree's (the loops cut): one ``ej.ClosureWarning`` per model says so (as
    from ``aba``, ``mass_matrix``, ``nonlinear_effects``, ``forward_dynamics_crba``); the closed
    mechanism's are ``ej.constrained_dynamics`` and ``ej.constrained_inverse_dynamics``, and
    ``model.open_tree()`` asks for the tree's without the warning.

    Arrays are real numbers (read as float64; booleans, complex numbers and text are refused),
    results float64 numpy arrays: q (nq,) or (B, nq), qd, qdd, tau (nv,) or (B, nv), t a float or
    (B,); a leading batch axis runs the batch in parallel over threads and adds the same axis to
    every output.  ``data``: an
    ``ej.Data`` whose record is reused and kept.  ``errors``: ``"raise"`` (bad input raises) or
    ``"flag"``, which returns ``(result, status)`` with ``ej.Status`` codes (see ``ej.Status``)."""
    if model.has_loops:
        model._tree_quantity("rnea")
    if f_ext is None and type(q) is _ND and q.ndim == 1 and type(t) is float:
        tau = _fast(RNEA, model, data, errors, "tau", model.nv, None, q, qd, qdd, t)
        if tau is not None:
            return tau
    return _rnea(model, q, qd, qdd, t, f_ext, data, errors, "rnea")


def nonlinear_effects(model, q, qd, t=0.0, data=None, errors="raise"):
    """h(q, qd, t) (..., nv): the joint forces at zero acceleration (Coriolis, centrifugal,
    gravity, and the effect of prescribed motion of rheonomic joints), so that
    rnea(q, qd, qdd) = mass_matrix(q) qdd + h.

    Arrays are real numbers (read as float64; booleans, complex numbers and text are refused),
    results float64 numpy arrays: q (nq,) or (B, nq), qd, qdd, tau (nv,) or (B, nv), t a float or
    (B,); a leading batch axis runs the batch in parallel over threads and adds the same axis to
    every output.  ``data``: an
    ``ej.Data`` whose record is reused and kept.  ``errors``: ``"raise"`` (bad input raises) or
    ``"flag"``, which returns ``(result, status)`` with ``ej.Status`` codes (see ``ej.Status``)."""
    if qd is None:
        raise ValueError("qd is required")
    if model.has_loops:
        model._tree_quantity("nonlinear_effects")
    if type(q) is _ND and q.ndim == 1 and type(t) is float:
        h = _fast(RNEA, model, data, errors, "h", model.nv, None, q, qd, _EMPTY, t)
        if h is not None:
            return h
    return _rnea(model, q, qd, None, t, None, data, errors, "nonlinear_effects")


def _rnea(model, q, qd, qdd, t, f_ext, data, errors, what):
    inputs.check_errors_arg(errors)
    key = "tau" if qdd is not None else "h"
    B = None if np.ndim(q) <= 1 else len(q)
    outputs = None if data is None or model.has_couplers else {RNEA: _outputs(data, B, key, (model.nv,))}
    B, km, mim, outs, status, used, t1 = run(model, [RNEA], q, qd, qdd, None, t, f_ext, data, entry_name="rnea",
                                             outputs=outputs)
    tau = outs[RNEA] if mim is None else mim.tau(outs[RNEA])
    res = outputs[RNEA] if outputs is not None else inputs.unbatch(B, tau)
    return finish(errors, model, status, RNEA, what, used, t1, B, res, nan=(tau,) if errors == "flag" else ())


def aba(model, q, qd, tau, t=0.0, f_ext=None, data=None, errors="raise"):
    """Accelerations qdd (..., nv) under joint forces tau, gravity and optional world-frame
    external wrenches f_ext (N+1, 6) or (B, N+1, 6) as for ``rnea``: forward dynamics, O(N), by
    the articulated-body algorithm (``aba``); ``D_i = S_i^T I^A_i S_i + diag(armature_i)``.

    Raises ej.SingularJointError naming the joint and configuration (and the samples of a batch)
    where a joint's Jacobian loses rank or a massless subtree makes the dynamics singular
    (``errors="flag"``: a batch returns (qdd, status) instead, the rows of those samples NaN);
    near a lock it warns (``ej.NearSingularWarning``).  Models with couplers (mimic joints) are
    solved through the mass matrix (as ``forward_dynamics_crba``).

    Arrays are real numbers (read as float64; booleans, complex numbers and text are refused),
    results float64 numpy arrays: q (nq,) or (B, nq), qd, qdd, tau (nv,) or (B, nv), t a float or
    (B,); a leading batch axis runs the batch in parallel over threads and adds the same axis to
    every output.  ``data``: an
    ``ej.Data`` whose record is reused and kept.  ``errors``: ``"raise"`` (bad input raises) or
    ``"flag"``, which returns ``(result, status)`` with ``ej.Status`` codes (see ``ej.Status``)."""
    if model.has_loops:
        model._tree_quantity("aba")
    if f_ext is None and type(q) is _ND and q.ndim == 1 and type(t) is float:
        qdd = _fast(ABA, model, data, errors, "qdd", model.nv, None, q, qd, tau, t)
        if qdd is not None:
            return qdd
    if model.has_couplers:
        return forward_dynamics_crba(model, q, qd, tau, t, f_ext, errors)
    inputs.check_errors_arg(errors)
    B = None if np.ndim(q) <= 1 else len(q)
    outputs = None if data is None else {ABA: _outputs(data, B, "qdd", (model.nv,))}
    B, km, mim, outs, status, used, t1 = run(model, [ABA], q, qd, None, tau, t, f_ext, data, entry_name="aba",
                                             outputs=outputs)
    qdd = outs[ABA]
    res = outputs[ABA] if outputs is not None else inputs.unbatch(B, qdd)
    return finish(errors, model, status, ABA, "aba", used, t1, B, res, nan=(qdd,))


def mass_matrix(model, q, t=0.0, data=None, errors="raise", condition=False):
    """Joint-space mass matrix M(q, t) (..., nv, nv), symmetric; positive definite except where a
    joint's Jacobian loses rank (gimbal lock) or a subtree is massless, where it is returned as
    it is (positive semi-definite): ``aba`` and ``forward_dynamics_crba`` report those.

    ``condition=True`` also returns M's condition number (2-norm; inf where M is singular),
    a float or (B,): ``(M, cond)`` (``(M, cond, status)`` with ``errors="flag"``).  Rotor
    inertias are on the diagonal (``M + diag(armature)``).

    Arrays are real numbers (read as float64; booleans, complex numbers and text are refused),
    results float64 numpy arrays: q (nq,) or (B, nq), qd, qdd, tau (nv,) or (B, nv), t a float or
    (B,); a leading batch axis runs the batch in parallel over threads and adds the same axis to
    every output.  ``data``: an
    ``ej.Data`` whose record is reused and kept.  ``errors``: ``"raise"`` (bad input raises) or
    ``"flag"``, which returns ``(result, status)`` with ``ej.Status`` codes (see ``ej.Status``)."""
    if model.has_loops:
        model._tree_quantity("mass_matrix")
    if condition:
        res = _mass(model, q, t, data, errors)
        M = res[0] if errors == "flag" else res
        # flagged samples (NaN rows) get a NaN condition, the others M's
        M3 = M.reshape((-1,) + M.shape[-2:])
        ok = np.isfinite(M3).all(axis=(1, 2))
        c3 = np.full(M3.shape[0], np.nan)
        if ok.any():
            with np.errstate(all="ignore"):
                c3[ok] = np.linalg.cond(M3[ok]) if M3.shape[-1] else 1.0
            c3[ok] = np.where(np.isnan(c3[ok]), np.inf, c3[ok])
        cond = c3.reshape(M.shape[:-2])
        cond = float(cond) if np.ndim(cond) == 0 else cond
        return (M, cond, res[1]) if errors == "flag" else (M, cond)
    if type(q) is _ND and q.ndim == 1 and type(t) is float:
        M = _fast(CRBA, model, data, errors, "M", (model.nv, model.nv), _M_P, q, q, _EMPTY, t)
        if M is not None:
            return M
    return _mass(model, q, t, data, errors)


_M_P = params(ask=(CRBA,))


def _mass(model, q, t, data, errors, rank=False):
    inputs.check_errors_arg(errors)
    B, km, mim, outs, status, used, t1 = run(model, [CRBA], q, None, None, None, t, None, data,
                                             params(rank=rank, ask=(CRBA,)), entry_name="mass_matrix")
    M = outs[CRBA] if mim is None else mim.mass(outs[CRBA])
    if data is not None and mim is None:
        keep = data._result("M", M.shape[1:] if B is None else M.shape)
        keep[...] = M[0] if B is None else M
        M = keep[None] if B is None else keep
    if rank:
        return M, status[:, CRBA].copy(), used, t1, B
    return finish(errors, model, status, CRBA, "mass_matrix", used, t1, B, inputs.unbatch(B, M),
                  nan=(M,) if errors == "flag" else ())


def forward_dynamics_crba(model, q, qd, tau, t=0.0, f_ext=None, errors="raise"):
    """qdd (..., nv) from M(q, t) qdd = tau - h(q, qd, t) + (external wrenches), by Cholesky of
    the CRBA mass matrix: O(nv^3), the same result as ``aba``.  Raises ej.SingularJointError
    (naming the joint, and the samples of a batch) where M is singular.  Takes no ``data=``; the
    rest as for ``aba``.

    Arrays are real numbers (read as float64; booleans, complex numbers and text are refused),
    results float64 numpy arrays: q (nq,) or (B, nq), qd, qdd, tau (nv,) or (B, nv), t a float or
    (B,); a leading batch axis runs the batch in parallel over threads and adds the same axis to
    every output.  ``errors``: ``"raise"`` (bad input raises) or ``"flag"``, which returns
    ``(result, status)`` with ``ej.Status`` codes (see ``ej.Status``)."""
    if model.has_loops:
        model._tree_quantity("forward_dynamics_crba")
    inputs.check_errors_arg(errors)
    B, q2, (qd2, tau2), t1 = inputs.states(model, q, ((qd, "qd"), (tau, "tau")), t)
    n, nv = q2.shape[0], model.nv
    M, status, _, _, _ = _mass(model, q2[0] if B is None else q2, t1[0] if B is None else t1, None, "flag",
                               rank=True)
    if B is None:
        h = _rnea(model, q2[0], qd2[0], None, float(t1[0]), f_ext, None, "flag", "nonlinear_effects")[0][None]
    else:
        h = _rnea(model, q2, qd2, None, t1, f_ext, None, "flag", "nonlinear_effects")[0]
    rhs = np.ascontiguousarray(tau2 - h)
    out = np.empty((n, nv))
    col = np.full(n, -1, dtype=np.int64)
    if n == 1:
        col[0] = _chol_solve(np.array(M[0]), rhs[0], out[0], 1e-13)
    else:
        _chol_solve_batch(np.ascontiguousarray(M), rhs, out, col, 1e-13)
    vjoint = np.repeat(np.arange(model.nbodies + 1), model.nv_joint)
    for b in np.nonzero((col >= 0) & ((status[:, 0] == 0) | (status[:, 0] == inputs.NEAR_SINGULAR)))[0]:
        status[b] = (inputs.SINGULAR_MASS, vjoint[col[b]])
    inputs.nan_failed(status[:, 0], (out,))
    fin = np.isfinite(tau2).all(axis=1) & np.isfinite(qd2).all(axis=1)
    status[(status[:, 0] == 0) & ~fin] = (inputs.NONFINITE, -1)
    return inputs.flag_or_raise(errors, model, status, "forward_dynamics_crba", ["q", "qd", "tau"],
                                [q2, qd2, tau2], t1, B, inputs.unbatch(B, out))


# ---------------------------------------------------------------------------- kinematics
def forward_kinematics(model, q, qd=None, qdd=None, t=0.0, out=None, data=None, errors="raise"):
    """World-frame pose, twist and classical acceleration of every body origin.

    Returns ``ej.Kinematics`` with ``R`` (..., N+1, 3, 3) (body -> world) and ``p`` (origin),
    ``omega`` (angular velocity), ``v`` (origin velocity), ``alpha`` (angular acceleration), ``a``
    (classical origin acceleration, d/dt v) (..., N+1, 3), world axes; row 0 is the world
    (identity, zeros).  The velocity fields are present when ``qd`` is given, the acceleration
    fields when ``qdd`` is (``qdd`` needs ``qd``).  ``out``: a Kinematics of an earlier call with
    the same shapes, whose arrays are overwritten and returned (no fresh memory per call).

    Arrays are real numbers (read as float64; booleans, complex numbers and text are refused),
    results float64 numpy arrays: q (nq,) or (B, nq), qd, qdd, tau (nv,) or (B, nv), t a float or
    (B,); a leading batch axis runs the batch in parallel over threads and adds the same axis to
    every output.  ``data``: an
    ``ej.Data`` whose record is reused and kept.  ``errors``: ``"raise"`` (bad input raises) or
    ``"flag"``, which returns ``(result, status)`` with ``ej.Status`` codes (see ``ej.Status``)."""
    if qdd is not None and qd is None:
        raise ValueError("qdd given without qd: accelerations need the velocities too")
    level = 0 if qd is None else (1 if qdd is None else 2)
    P = _FK_P[level]
    n1 = model.nbodies + 1
    if out is None and type(q) is _ND and q.ndim == 1 and type(t) is float:
        v = q if qd is None else qd
        buf = _fast(FK, model, data, errors, ("fk", level), fk_size(1, n1, level), P, q, v,
                    _EMPTY if qdd is None else qdd, t)
        if buf is not None:
            return (Kinematics(buf[0], (), n1, level), 0) if errors == "flag" else Kinematics(buf, (), n1, level)
    inputs.check_errors_arg(errors)
    B = None if np.ndim(q) <= 1 else len(q)
    buf = _fk_buffer(model, B, level, out, data)
    B, km, mim, outs, status, used, t1 = run(model, [FK], q, qd, qdd, None, t, None, data, P,
                                             entry_name="forward_kinematics", outputs={FK: buf})
    res = out if out is not None else Kinematics(outs[FK], () if B is None else (B,), n1, level)
    return finish(errors, model, status, FK, "forward_kinematics", used, t1, B, res,
                  nan=(res.R, res.p, res.omega, res.v, res.alpha, res.a) if errors == "flag" else ())


_FK_P = [params(fk_level=k, ask=(FK,)) for k in range(3)]


def _fk_buffer(model, B, level, out, data):
    n1 = model.nbodies + 1
    size = fk_size(1 if B is None else B, n1, level)
    if data is not None:
        return data._result(("fk", level), (size,))
    if out is None:
        return None
    if not isinstance(out, Kinematics):
        raise ValueError(f"out must be an ej.Kinematics from an earlier call, got {type(out).__name__}")
    want = (() if B is None else (B,)) + (n1, 3, 3)
    if out._buf.shape != (size,) or out._level != level or out.R.shape != want:
        raise ValueError(f"out.R must be a Kinematics of the same shape: {want} with the same fields, "
                         f"got {out.R.shape}")
    return out._buf


def joint_terms(model, q, qd=None, t=0.0, frame="inboard", generic=False, data=None, errors="raise"):
    """The EJCE terms of every joint: ``ej.JointTerms`` with ``J`` (..., 6, nv) (joint j's
    Jacobian in columns ``v_start[j] : v_start[j] + nv_joint[j]``), ``sigma`` (..., N+1, 6) and
    ``bias`` (..., N+1, 6), so that the relative twist of C in P is ``J qd + sigma`` and its
    relative acceleration ``J qdd + bias``; also ``R`` (..., N+1, 3, 3) and ``r`` (..., N+1, 3),
    the pose of C in P, and ``twist``, the relative twist.  ``bias`` and ``twist`` need ``qd``
    (None without it).

    ``frame="inboard"`` expresses the vectors in P axes, ``"outboard"`` the same vectors in C
    axes (rotated by R^T; this is not Featherstone's c_J: see the EJCE derivation, section 2).
    For a model with couplers (mimic joints) the terms are those of ``model.expanded()`` and
    ``v_map`` maps the model's velocities to the expanded ones (G; (B, nv_full, nv) for a batch
    with nonlinear couplers).  ``generic=True`` evaluates every joint by the generic (jet) path,
    for checking the faster ones (the same as calling it on ``model.with_generic_joints()``;
    ``data=`` is then not used).

    Arrays are real numbers (read as float64; booleans, complex numbers and text are refused),
    results float64 numpy arrays: q (nq,) or (B, nq), qd, qdd, tau (nv,) or (B, nv), t a float or
    (B,); a leading batch axis runs the batch in parallel over threads and adds the same axis to
    every output.  ``data``: an
    ``ej.Data`` whose record is reused and kept.  ``errors``: ``"raise"`` (bad input raises) or
    ``"flag"``, which returns ``(result, status)`` with ``ej.Status`` codes (see ``ej.Status``)."""
    if frame not in ("inboard", "outboard"):
        raise ValueError(f"frame must be 'inboard' or 'outboard', got {frame!r}")
    if qd is not None and not generic and type(q) is _ND and q.ndim == 1 and type(t) is float:
        buf = _fast(JT, model, data, errors, ("jt", frame), jt_size(1, model.nbodies + 1, model.nv),
                    _JT_P[frame == "outboard"], q, qd, _EMPTY, t)
        if buf is not None:
            if errors == "flag":
                return _jt_result(buf[0], (), model, None, None, frame), 0
            return _jt_result(buf, (), model, None, None, frame)
    inputs.check_errors_arg(errors)
    if generic:
        model, data = model.with_generic_joints(), None
    if qd is None:
        q2 = np.asarray(q)
        qd = np.zeros(q2.shape[:-1] + (model.nv,)) if q2.ndim >= 1 else None
        given_qd = False
    else:
        given_qd = True
    B = None if np.ndim(q) <= 1 else len(q)
    outputs = None
    if data is not None and not model.has_couplers:
        km = model
        n = 1 if B is None else B
        outputs = {JT: data._result("joint_terms", (jt_size(n, km.nbodies + 1, km.nv),))}
    B, km, mim, outs, status, used, t1 = run(model, [JT], q, qd, None, None, t, None, data,
                                             _JT_P[frame == "outboard"], entry_name="joint_terms", outputs=outputs)
    if not given_qd:
        used = used[:1]
    res = _jt_result(outs[JT], () if B is None else (B,), km, mim, B, frame, given_qd)
    J, Rr, rr, fields = res.J, res.R, res.r, (res.sigma, res.bias, res.twist)
    return finish(errors, model, status, JT, "joint_terms", used, t1, B, res,
                  nan=(J, Rr, rr, *fields) if errors == "flag" else ())


_JT_P = [params(outboard=k, ask=(JT,)) for k in (False, True)]


def body_jacobian(model, q, body, t=0.0, data=None, errors="raise", generic=False):
    """World-frame Jacobian (..., 6, nv) of the body origin's [omega; v] (``body``: index or name);
    for rheonomic joints the twist is this Jacobian times qd plus the sigma terms.
    ``generic=True``: on ``model.with_generic_joints()``.

    Arrays are real numbers (read as float64; booleans, complex numbers and text are refused),
    results float64 numpy arrays: q (nq,) or (B, nq), qd, qdd, tau (nv,) or (B, nv), t a float or
    (B,); a leading batch axis runs the batch in parallel over threads and adds the same axis to
    every output.  ``data``: an
    ``ej.Data`` whose record is reused and kept.  ``errors``: ``"raise"`` (bad input raises) or
    ``"flag"``, which returns ``(result, status)`` with ``ej.Status`` codes (see ``ej.Status``)."""
    i = model.body_index(body)
    inputs.check_errors_arg(errors)
    if generic:
        model, data = model.with_generic_joints(), None
    B, km, mim, outs, status, used, t1 = run(model, [BJ], q, None, None, None, t, None, data,
                                             params(body=i, ask=(BJ,)), entry_name="body_jacobian")
    out = outs[BJ].reshape(len(t1), 6, km.nv)
    if mim is not None:
        out = mim.right(out)
    return finish(errors, model, status, BJ, "body_jacobian", used, t1, B, inputs.unbatch(B, out),
                  nan=(out,) if errors == "flag" else ())


# ---------------------------------------------------------------------------- energies
def _energies(model, q, qd, t, data, errors, what):
    inputs.check_errors_arg(errors)
    B, km, mim, outs, status, used, t1 = run(model, [ENERGY], q, qd, None, None, t, None, data,
                                             _EN_P[qd is not None], entry_name="energy")
    out = outs[ENERGY]
    res = finish(errors, model, status, ENERGY, what, used, t1, B, out, nan=(out,))
    return (B, res) if errors == "raise" else (B, res[0], res[1])


_EN_P = [params(en_level=k, ask=(ENERGY,)) for k in (0, 1)]


def _pick(B, out, col, errors, status=None):
    x = out[:, col]
    x = float(x[0]) if B is None else x
    return x if errors == "raise" else (x, status)


def kinetic_energy(model, q, qd, t=0.0, data=None, errors="raise"):
    """Kinetic energy 1/2 sum_i v_i^T I_i v_i of all bodies, plus the rotor inertias'
    1/2 sum_k armature_k qd_k^2 (a float, or (B,) for a batch).

    Arrays are real numbers (read as float64; booleans, complex numbers and text are refused),
    results float64 numpy arrays: q (nq,) or (B, nq), qd, qdd, tau (nv,) or (B, nv), t a float or
    (B,); a leading batch axis runs the batch in parallel over threads and adds the same axis to
    every output.  ``data``: an
    ``ej.Data`` whose record is reused and kept.  ``errors``: ``"raise"`` (bad input raises) or
    ``"flag"``, which returns ``(result, status)`` with ``ej.Status`` codes (see ``ej.Status``)."""
    if qd is None:
        raise ValueError("qd is required")
    B, out, *st = _energies(model, q, qd, t, data, errors, "kinetic_energy")
    return _pick(B, out, 0, errors, *st)


def potential_energy(model, q, t=0.0, data=None, errors="raise"):
    """Gravitational potential energy -sum_i m_i g . c_i (zero at the world origin; c_i the
    world position of body i's centre of mass): a float, or (B,) for a batch.

    Arrays are real numbers (read as float64; booleans, complex numbers and text are refused),
    results float64 numpy arrays: q (nq,) or (B, nq), qd, qdd, tau (nv,) or (B, nv), t a float or
    (B,); a leading batch axis runs the batch in parallel over threads and adds the same axis to
    every output.  ``data``: an
    ``ej.Data`` whose record is reused and kept.  ``errors``: ``"raise"`` (bad input raises) or
    ``"flag"``, which returns ``(result, status)`` with ``ej.Status`` codes (see ``ej.Status``)."""
    B, out, *st = _energies(model, q, None, t, data, errors, "potential_energy")
    return _pick(B, out, 1, errors, *st)


def center_of_mass(model, q, t=0.0, data=None, errors="raise"):
    """World position (..., 3) of the centre of mass of all bodies (a model without mass is a
    ``ValueError``).

    Arrays are real numbers (read as float64; booleans, complex numbers and text are refused),
    results float64 numpy arrays: q (nq,) or (B, nq), qd, qdd, tau (nv,) or (B, nv), t a float or
    (B,); a leading batch axis runs the batch in parallel over threads and adds the same axis to
    every output.  ``data``: an
    ``ej.Data`` whose record is reused and kept.  ``errors``: ``"raise"`` (bad input raises) or
    ``"flag"``, which returns ``(result, status)`` with ``ej.Status`` codes (see ``ej.Status``)."""
    mtot = float(np.sum(model.body_mass))
    if not mtot > 0.0:
        raise ValueError("center_of_mass: the model has no mass (every body is massless)")
    B, out, *st = _energies(model, q, None, t, data, errors, "center_of_mass")
    c = out[:, 2:5] / mtot
    c = c[0] if B is None else c
    return c if errors == "raise" else (c, *st)


# ---------------------------------------------------------------------------- several at once
# the quantities of ``evaluate``: (slot, the inputs besides q and t it needs)
EVALUATE = {"rnea": (RNEA, ("qd", "qdd")), "nonlinear_effects": (RNEA, ("qd",)), "aba": (ABA, ("qd", "tau")),
            "mass_matrix": (CRBA, ()), "forward_kinematics": (FK, ()), "joint_terms": (JT, ("qd",)),
            "body_jacobian": (BJ, ()), "kinetic_energy": (ENERGY, ("qd",)), "potential_energy": (ENERGY, ()),
            "center_of_mass": (ENERGY, ())}


def evaluate(model, q, qd=None, qdd=None, tau=None, t=0.0, quantities=("rnea", "aba"), body=None, f_ext=None,
             errors="raise", out=None):
    """Several quantities of the same states on one forward sweep per state (``kernels``): a dict
    {name: result} with the results the functions of the same names return (``rnea`` at (q, qd,
    qdd), ``aba`` at (q, qd, tau), ``forward_kinematics`` with the fields its inputs allow, ...);
    with ``errors="flag"``: (results, {name: status codes}), the rows of bad samples NaN.

    Joints, twists, accelerations and world frames are computed once per state, then each
    quantity's own passes; each result is bit for bit what the function of the same name
    returns on these inputs.  ``quantities``: ``"rnea"`` (at qdd), ``"nonlinear_effects"`` (rnea
    at qdd = 0; not beside ``"rnea"``), ``"aba"`` (at tau), ``"mass_matrix"``,
    ``"forward_kinematics"`` (the fields qd / qdd allow), ``"joint_terms"`` (P axes),
    ``"body_jacobian"`` (of ``body``), ``"kinetic_energy"``, ``"potential_energy"``,
    ``"center_of_mass"`` (the energies and the centre of mass share one slot).  With
    ``errors="flag"`` each quantity has its own status (a bad qdd flags ``rnea``, not ``aba``).
    ``out``: {``"rnea"`` or ``"aba"``: (B, nv) array} a batch's result is written into where it
    fits (C-ordered float64), as a sweep does to reuse its buffers.  A model with couplers
    computes ``"aba"`` as ``forward_dynamics_crba``."""
    inputs.check_errors_arg(errors)
    names = [quantities] if isinstance(quantities, str) else list(quantities)
    slots = {}
    for nm in names:
        if nm not in EVALUATE:
            raise ValueError(f"unknown quantity {nm!r}; known: {', '.join(EVALUATE)}")
        slot, need = EVALUATE[nm]
        for x, xn in ((qd, "qd"), (qdd, "qdd"), (tau, "tau")):
            if xn in need and x is None:
                raise ValueError(f"{nm} needs {xn}")
        if slot in slots.values() and slot != ENERGY:
            raise ValueError(f"{nm} and {[k for k, s in slots.items() if s == slot][0]} cannot be evaluated together")
        slots[nm] = slot
    if "nonlinear_effects" in slots:
        qdd = None
    if "body_jacobian" in slots and body is None:
        raise ValueError("body_jacobian needs body=")
    fk_level = 0 if qd is None else (1 if qdd is None else 2)
    en_level = 1 if ("kinetic_energy" in slots and qd is not None) else 0
    if model.has_couplers and "aba" in slots:
        # coupled models solve aba through the mass matrix
        rest = [nm for nm in names if nm != "aba"]
        res = evaluate(model, q, qd, qdd, tau, t, rest, body, f_ext, errors, out) if rest else \
            (({}, {}) if errors == "flag" else {})
        fd = forward_dynamics_crba(model, q, qd, tau, t, f_ext, errors)
        if errors == "flag":
            res[0]["aba"], res[1]["aba"] = fd
        else:
            res["aba"] = fd
        return res
    P = params(fk_level=fk_level, body=0 if body is None else model.body_index(body), en_level=en_level)
    B = None if np.ndim(q) <= 1 else len(q)
    bufs = None
    if out is not None and B is not None and not model.has_couplers:
        bufs = {EVALUATE[nm][0]: workspaces.result_array(a, B, model.nv) for nm, a in out.items()
                if nm in ("rnea", "aba") and nm in slots}
    kinds = sorted(set(slots.values()))
    B, km, mim, outs, status, used, t1 = run(model, kinds, q, qd, qdd, tau if "aba" in slots else None, t, f_ext,
                                             None, P, entry_name=None, outputs=bufs)
    n1 = km.nbodies + 1
    lead = () if B is None else (B,)
    results, codes = {}, {}
    for nm, slot in slots.items():
        x = outs[slot]
        if slot == RNEA:
            x = x if mim is None else mim.tau(x)
        elif slot == CRBA:
            x = x if mim is None else mim.mass(x)
        elif slot == FK:
            x = Kinematics(x, lead, n1, fk_level)
        elif slot == JT:
            x = _jt_result(x, lead, km, mim, B)
        elif slot == BJ:
            x = x.reshape(len(t1), 6, km.nv)
            x = x if mim is None else mim.right(x)
        elif slot == ENERGY:
            x = x[:, 2:5] / float(np.sum(model.body_mass)) if nm == "center_of_mass" else \
                x[:, 0 if nm == "kinetic_energy" else 1].copy()
        if slot == FK:
            arrays = (x.R, x.p, x.omega, x.v, x.alpha, x.a)
        elif slot == JT:
            arrays = (x.J, x.sigma, x.bias, x.R, x.r, x.twist)
        else:
            arrays = (x,)
        inputs.nan_failed(status[:, slot, 0], arrays, B is not None)
        if slot not in (FK, JT):
            x = inputs.unbatch(B, x)
            if slot == ENERGY and nm != "center_of_mass" and B is None:
                x = float(x)
        res = finish(errors, model, status, slot, nm, used, t1, B, x)
        if errors == "flag":
            results[nm], codes[nm] = res
        else:
            results[nm] = res
    return (results, codes) if errors == "flag" else results


def _jt_result(buf, lead, km, mim, B, frame="inboard", with_qd=True):
    """``ej.JointTerms`` of the flat buffer of the joint terms (``kinematics.jt_out``)."""
    n = 1 if not lead else lead[0]
    n1, nv = km.nbodies + 1, km.nv
    o = 6 * n * nv
    fields = [buf[o + k * n * n1: o + (k + 6) * n * n1].reshape(lead + (n1, 6)) for k in (0, 6, 12)]
    return JointTerms(buf[:o].reshape(lead + (6, nv)), fields[0], fields[1] if with_qd else None,
                      buf[o + 18 * n * n1: o + 27 * n * n1].reshape(lead + (n1, 3, 3)),
                      buf[o + 27 * n * n1:].reshape(lead + (n1, 3)), fields[2] if with_qd else None, frame,
                      None if mim is None else (mim.Gv if mim.Gv is not None else inputs.unbatch(B, mim.G)))