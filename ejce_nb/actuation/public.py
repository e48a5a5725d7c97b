"""The public functions of the actuation: ``ej.actuation`` (MuJoCo's actuator, tendon and passive
quantities of a state) and ``ej.forward_dynamics`` (MuJoCo's smooth forward dynamics with its
actuators, tendons and gravity compensation)."""
import numpy as np

from ..calls import workspaces
from ..calls.python_layer import paths
from ..model import inputs
from ..model.layout import H_REC
from .state import chunk_states
from .tables import F_ACTUATION, F_CLAMPCTRL, F_DAMPER, F_GRAVCOMP, F_SPRING, Actuation

_NAMES = ("ten_length", "ten_velocity", "ten_J", "actuator_length", "actuator_velocity", "actuator_moment",
          "actuator_force", "qfrc_actuator", "qfrc_gravcomp")


class ActuationResult:
    """MuJoCo's names, shapes and units, with a leading batch axis B for a batch:
    ``actuator_force`` (nu,) [N or N m], ``actuator_length`` (nu,), ``actuator_velocity`` (nu,),
    ``actuator_moment`` (nu, nv) (dense: row i is d length_i / d q in the velocity coordinates),
    ``ten_length``, ``ten_velocity`` (ntendon,), ``ten_J`` (ntendon, nv), ``act_dot`` (na,),
    ``qfrc_actuator`` (nv,) = actuator_moment^T actuator_force (+ gravity compensation of joints
    with ``actuatorgravcomp``, + the OpenSim actuators' generalised forces), ``qfrc_passive``
    (nv,) = the joints' springs and dampers + the tendons' + ``qfrc_gravcomp`` where not routed
    to the actuators (+ the other OpenSim force elements'), ``qfrc_gravcomp`` (nv,), ``ctrl``
    the controls as applied (MuJoCo's clamped to ``ctrlrange``).  The actuator and tendon arrays
    hold MuJoCo's actuators alone (``model.actuation.nu_mj`` rows).  For a model with couplers
    every (nv,) quantity and Jacobian is in the model's own (reduced) velocities: ``G^T x`` and
    ``x G`` of the expansion's (MuJoCo's coordinates)."""

    def __init__(self, **kw):
        self.__dict__.update(kw)

    def __repr__(self):
        return f"<ej.ActuationResult {self.actuator_force.shape}>"


def _empty_actuation(km):
    flags = np.zeros(8, dtype=np.int64)
    flags[[F_CLAMPCTRL, F_GRAVCOMP, F_SPRING, F_DAMPER, F_ACTUATION]] = 1
    return Actuation({"opt_flags": flags}, dict(nu=0, na=0, nt=0, nwrap=0, nsite=0, nv=km.nv, n1=km.nbodies + 1))


def _passive_buffer(model):
    """pb: damping, stiffness, springref and the coordinate of each velocity variable (-1: none)."""
    nv = model.nv
    dofq = np.full(nv, -1.0)
    quat = {j for j, _ in model._quaternion_blocks}
    for j in range(1, model.nbodies + 1):
        vs, nvj, qs = int(model.jnt_dofadr[j]), int(model.jnt_nv[j]), int(model.jnt_qadr[j])
        plain = nvj - 3 if j in quat else nvj
        dofq[vs:vs + plain] = np.arange(qs, qs + plain)
    return np.concatenate([model.dof_damping, model.dof_stiffness, model.dof_springref, dofq]).astype(np.float64)


def _prepared(model):
    """(kernel model, coupling or None, Actuation, ab, ib, eb, pb), made once per model."""
    prep = model.__dict__.get("_actuation_prepared")
    if prep is None:
        km, mim = inputs.kernel_model(model)
        act = getattr(model, "actuation", None)
        if act is None:
            act = _empty_actuation(km)
        if act.nv != km.nv:
            raise ValueError(f"model.actuation is made for {act.nv} velocities, the model's kernel has {km.nv}")
        ab, ib = act.packed()
        eb = act.elements.packed() if act.elements is not None else None
        pb = _passive_buffer(model) if mim is None else np.repeat([0.0, 0.0, 0.0, -1.0], km.nv)
        prep = (km, act, ab, ib, eb, pb)
        model.__dict__["_actuation_prepared"] = prep
    km, act, ab, ib, eb, pb = prep
    return km, (None if not model.has_couplers else inputs.Coupling(model)), act, ab, ib, eb, pb


def _rows(x, name, n, B, width):
    """x as (n, width) float64 C-contiguous; None: zeros."""
    if x is None:
        return np.zeros((n, width))
    try:
        a = np.array(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an array of numbers, got {type(x).__name__}") from None
    want = f"({width},)" + ("" if B is None else f" or ({B}, {width})")
    if a.shape == (width,):
        a = np.tile(a, (n, 1))
    elif B is None or a.shape != (B, width):
        raise ValueError(f"{name} must have shape {want} (the model's {name} size is {width}), got {a.shape}")
    return np.ascontiguousarray(a)


def _run(model, q, qd, ctrl, act, tau, t, fd, errors, what):
    inputs.check_errors_arg(errors)
    if model.has_loops and fd:
        model._tree_quantity(what)
    km, mim, A, ab, ib, eb, pb = _prepared(model)
    if qd is None:
        raise ValueError("qd is required")
    vecs = [(qd, "qd")] + ([(tau, "tau")] if tau is not None else [])
    B, q2, vs, t1 = inputs.states(model, q, vecs, t)
    n = q2.shape[0]
    v2 = vs[0]
    tau2 = vs[1] if tau is not None else np.zeros((n, model.nv))
    C = _rows(ctrl, "ctrl", n, B, A.nu)
    AC = _rows(act, "act", n, B, A.na)
    if mim is not None:
        qk, vk, _ = mim.expand(q2, v2)
        tk = np.zeros((n, km.nv))
    else:
        qk, vk, tk = q2, v2, tau2
    qk, vk = np.ascontiguousarray(qk), np.ascontiguousarray(vk)
    wsz = A.work_size()
    # (every entry a result reads is written by the kernel); forward dynamics keeps none of it:
    # one row per chunk
    WORK = np.empty((n if not fd or n == 1 else workspaces.n_chunks(n), wsz))
    QFRC = np.empty((n, km.nv))
    ADOT = np.empty((n, A.na))
    QDD = np.empty((n, km.nv))
    status = np.zeros((n, 2), dtype=np.int64)
    fdk = np.bool_(fd and mim is None)
    if B is None:
        w = workspaces.one_workspace(km)
        rec = int(km._mb[H_REC])
        chunk_states(km._mb, w[:rec].reshape(1, rec), w[rec:].reshape(1, -1), paths(km), ab, ib, eb, pb, qk, vk, C,
                     AC, tk, t1, WORK, QFRC, ADOT, QDD, fdk, status, 0, 1)
        workspaces.release(km, w)
    else:
        R, S, _, token = workspaces.batch_workspace(km, n, None)
        workspaces.run_chunks(chunk_states, S.shape[0], km._mb, R, S, paths(km), ab, ib, eb, pb, qk, vk, C, AC, tk,
                              t1, WORK, QFRC, ADOT, QDD, fdk, status, serial=n < 16)
        workspaces.release_batch(token)
    if not fdk:
        QDD = None
    names = ["q", "qd", "ctrl", "act"] + (["tau"] if tau is not None else [])
    arrays = [q2, v2, C, AC] + ([tau2] if tau is not None else [])
    return B, km, mim, A, WORK, QFRC, ADOT, QDD, status, names, arrays, t1, q2, v2, tau2


# the status of a force element whose force is not finite (``elements.NONFINITE_FORCE``)
ELEMENT_FORCE = 9


def _raise_element(A, status, B, what):
    """Raise the error of the first sample whose force element gave a force that is not finite."""
    bad = np.nonzero(status[:, 0] == ELEMENT_FORCE)[0]
    if len(bad):
        b = int(bad[0])
        j = int(status[b, 1])
        names = getattr(A.elements, "names", ())
        name = names[j] if 0 <= j < len(names) else f"#{j}"
        where = "" if B is None else f" in sample {b} ({len(bad)} of {B} samples)"
        raise ValueError(f"{what}: force element {name!r} gives a force that is not finite{where}")


def actuation(model, q, qd, ctrl, act=None, t=0.0, errors="raise"):
    """MuJoCo's actuator, tendon and passive quantities at the state (q, qd, ctrl, act, t): an
    ``ActuationResult`` (its docstring has the names and shapes).

    q (nq,) or (B, nq), qd (nv,) or (B, nv), ``ctrl`` (nu,) or (B, nu) with nu =
    ``model.actuation.nu`` (MuJoCo's actuators, then the OpenSim elements' controls), ``act``
    (na,) or (B, na) (None: zeros), t a float or (B,).  Controls are clamped to ``ctrlrange``
    where the file says so, as MuJoCo does; a NaN or infinite ctrl or act is an error (MuJoCo
    would zero every control): ``errors="flag"`` returns (result, status) with the bad samples'
    rows NaN and their ``ej.Status`` codes (9 where an OpenSim force element's force is not
    finite).  A model without actuation has nu = na = 0."""
    (B, km, mim, A, WORK, QFRC, ADOT, QDD, status, names, arrays, t1, q2, v2, tau2) = _run(
        model, q, qd, ctrl, act, None, t, False, errors, "actuation")
    W = A.work_views(WORK)
    out = {k: W[k] for k in _NAMES}
    out["ctrl"] = W["ctrl"]
    qfrc_passive = W["qfrc_tendon"] + np.where(A.dof_actgravcomp != 0, 0.0, W["qfrc_gravcomp"])
    if mim is not None:
        for k in ("qfrc_actuator", "qfrc_gravcomp"):
            out[k] = mim.tau(out[k])
        qfrc_passive = mim.tau(qfrc_passive)
        for k in ("ten_J", "actuator_moment"):
            out[k] = np.ascontiguousarray(out[k] @ mim.G) if mim.Gv is None else out[k] @ mim.Gv
    pb = _passive_buffer(model)
    nv = model.nv
    jp = -pb[:nv] * v2
    dofq = pb[3 * nv:].astype(np.int64)
    has = dofq >= 0
    jp[:, has] -= pb[nv:2 * nv][has] * (q2[:, dofq[has]] - pb[2 * nv:3 * nv][has])
    out["qfrc_passive"] = qfrc_passive + jp
    out["act_dot"] = ADOT
    res = ActuationResult(**{k: (v if B is not None else v[0]) for k, v in out.items()})
    bad = (status[:, 0] != 0)
    if errors == "flag" and bad.any():
        for k, v in res.__dict__.items():
            if B is None:
                v[...] = np.nan
            else:
                v[bad] = np.nan
    if errors == "raise":
        _raise_element(A, status, B, "actuation")
    return inputs.flag_or_raise(errors, model, status, "actuation", names, arrays, t1, B, res)


_ND = np.ndarray
_TRUE = np.bool_(True)


def _fast_buffers(km, A):
    w = workspaces.new_workspace(km)
    rec = int(km._mb[H_REC])
    n = km.nv
    return (np.zeros((1, km.nq)), np.zeros((1, n)), np.zeros((1, A.nu)), np.zeros((1, A.na)), np.zeros((1, n)),
            np.zeros(1), np.zeros((1, A.work_size())), np.zeros((1, n)), np.zeros((1, A.na)), np.zeros((1, n)),
            np.zeros((1, 2), dtype=np.int64), w[:rec].reshape(1, rec), w[rec:].reshape(1, -1))


def _fast_fd(model, q, qd, ctrl, act, tau, t):
    """One state of a model without couplers or loops, given as 1-D arrays: (qdd, act_dot) on
    pooled buffers, or None where the general path must serve it (first call, couplers, shapes
    or values it reports on)."""
    fast = model.__dict__.get("_actuation_fast")
    if fast is None:
        return None
    km, A, ab, ib, eb, pb, full, pool = fast
    if (q.shape[0] != km.nq or type(qd) is not _ND or qd.ndim != 1 or qd.shape[0] != km.nv
            or (ctrl is not None and (type(ctrl) is not _ND or ctrl.shape != (A.nu,)))
            or (act is not None and (type(act) is not _ND or act.shape != (A.na,)))
            or (tau is not None and (type(tau) is not _ND or tau.shape != (km.nv,)))):
        return None
    try:
        bufs = pool.pop()
    except IndexError:
        bufs = _fast_buffers(km, A)
    Q, V, C, AC, TAU, T, WORK, QFRC, ADOT, QDD, status, R, S = bufs
    Q[0] = q
    V[0] = qd
    C[0] = 0.0 if ctrl is None else ctrl
    AC[0] = 0.0 if act is None else act
    TAU[0] = 0.0 if tau is None else tau
    T[0] = t
    chunk_states(km._mb, R, S, full, ab, ib, eb, pb, Q, V, C, AC, TAU, T, WORK, QFRC, ADOT, QDD, _TRUE, status, 0, 1)
    out = (QDD[0].copy(), ADOT[0].copy()) if status[0, 0] == 0 else None
    pool.append(bufs)
    return out


def forward_dynamics(model, q, qd, ctrl=None, act=None, tau=None, t=0.0, errors="raise"):
    """MuJoCo's smooth forward dynamics with the model's actuation: (qdd, act_dot) from

        M(q) qdd = tau + qfrc_actuator + qfrc_passive - c(q, qd)

    where qfrc_passive holds the joints' damping and springs (``dof_damping``, ``dof_stiffness``,
    ``dof_springref``), the tendons' springs and dampers and gravity compensation (as MuJoCo's
    ``mj_forward`` with contact, joint limits, equality constraints and friction loss disabled),
    and c the Coriolis, centrifugal and gravity forces; act_dot (na,) the activations' rates.
    Shapes as for ``ej.actuation``: q (nq,) or (B, nq), qd and tau (nv,) or (B, nv) (tau None:
    zero), ctrl (nu,) or (B, nu) (None: zeros), act (na,) or (B, na) (None: zeros), t a float or
    (B,); a batch runs in parallel over threads, each state bit for bit as alone.  One forward
    sweep per state serves the actuation and the articulated-body algorithm.  A model with
    couplers is solved through its mass matrix (``forward_dynamics_crba``).  ``errors="flag"``:
    ((qdd, act_dot), status), the bad samples' rows NaN.  Not included, as the MJCF reader notes:
    fluid forces (``opt.density``, ``opt.viscosity``), springs on the rotation of ball and free
    joints, and the constraint forces MuJoCo's solver adds."""
    if errors == "raise" and type(q) is _ND and q.ndim == 1 and type(t) is float:
        out = _fast_fd(model, q, qd, ctrl, act, tau, t)
        if out is not None:
            return out
    (B, km, mim, A, WORK, QFRC, ADOT, QDD, status, names, arrays, t1, q2, v2, tau2) = _run(
        model, q, qd, ctrl, act, tau, t, True, errors, "forward_dynamics")
    if mim is None and not model.has_loops and "_actuation_fast" not in model.__dict__ and (status[:, 0] == 0).any():
        # compiled now: one-state calls take the fast path from here on
        model.__dict__["_actuation_fast"] = (km, A) + _prepared(model)[3:] + (paths(km), [])
    if mim is not None:
        from ..calls.public import forward_dynamics_crba
        pb = _passive_buffer(model)
        nv = model.nv
        ok = status[:, 0] == 0
        tot = tau2 + mim.tau(QFRC) - pb[:nv] * v2
        dofq = pb[3 * nv:].astype(np.int64)
        has = dofq >= 0
        tot[:, has] -= pb[nv:2 * nv][has] * (q2[:, dofq[has]] - pb[2 * nv:3 * nv][has])
        QDD = np.full((q2.shape[0], nv), np.nan)
        if ok.any():
            r = forward_dynamics_crba(model, q2[ok], v2[ok], tot[ok], t1[ok], errors="flag")
            QDD[ok] = r[0]
            status[ok, 0] = r[1]
    bad = status[:, 0] != 0
    if errors == "flag" and bad.any():
        QDD[bad] = np.nan
        ADOT[bad] = np.nan
    res = (QDD, ADOT) if B is not None else (QDD[0], ADOT[0])
    if errors == "raise":
        _raise_element(A, status, B, "forward_dynamics")
    return inputs.flag_or_raise(errors, model, status, "forward_dynamics", names, arrays, t1, B, res)
