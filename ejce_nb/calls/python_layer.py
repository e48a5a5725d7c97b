"""The Python layer of the batch driver (``kernels``): inputs, couplers, workspaces (``workspaces``),
outputs, statuses and errors around its compiled kernels, for every public function (``run``,
``finish``), and the kind of joint paths a model compiles (``paths``)."""
import numpy as np

from . import workspaces
from .kernels import (ABA, BJ, CRBA, ENERGY, FK, JT, LIVE, NSLOT, ONE, P0, P_ASK, P_FK_LEVEL, P_FREE, RNEA, TO_STATES,
                     chunk, chunk_lanes, ask_bits, many, many_lanes, runs_on_lanes)
from ..algorithms.kinematics import fk_size, jt_size
from .._jit import call
from ..core.ejce import PATHS
from ..core.lanes import LANES
from ..model import inputs
from ..model.layout import H_REC, REC_JOINT


def paths(km):
    """``full`` of the kernel model km (``ejce.PATHS``): the joint paths its kernels compile, by
    the kind ``km._paths`` set when its tables are packed."""
    return PATHS[km._paths]


_EMPTY = np.zeros(0)


def _output(slot, km, n, P):
    """A new output array of ``slot`` for n states of the kernel model km."""
    n1, nv = km.nbodies + 1, km.nv
    if slot == RNEA or slot == ABA:
        return np.empty((n, nv))
    if slot == CRBA:
        return np.empty((n, nv, nv))
    if slot == FK:
        return np.empty(fk_size(n, n1, int(P[P_FK_LEVEL])))
    if slot == JT:
        return np.empty(jt_size(n, n1, nv))
    if slot == BJ:
        return np.zeros((6 * n, nv))
    return np.empty((n, 5))


def run(model, slots, q, qd=None, qdd=None, tau=None, t=0.0, f_ext=None, data=None, P=P0, entry_name="evaluate",
        outputs=None):
    """The quantities ``slots`` of the states (q, qd, qdd, tau, t) through the input layer:
    returns (B or None, kernel model, coupling or None, {slot: output of the kernel model, with
    a batch axis}, status (n, NSLOT, 2), [(name, (n, k) array)] of the inputs as checked, t (n,)).

    ``outputs``: {slot: array} to write into where it fits (the caller's buffers, or a Data's).
    ``P``: the parameters (``kernels.params``), whose slots asked for become ``slots``.  A single
    state runs on a one-state workspace (the Data's, or a pooled one) with the entry ``ONE[slot]``
    (``entry_name``: the public function, whose one quantity is ``slots[0]``); a batch runs
    ``many`` or on lanes (``lane_batch``)."""
    ask = ask_bits(slots)
    if P[P_ASK] != ask:
        P = P.copy()
        P[P_ASK] = ask
    vecs = [(x, nm) for x, nm in ((qd, "qd"), (qdd, "qdd"), (tau, "tau")) if x is not None]
    B, q2, vs, t1 = inputs.states(model, q, vecs, t)
    if data is not None:
        data._check(model, B)
    F = inputs.fext_array(model, f_ext, B)
    km, mim = inputs.kernel_model(model)
    n = q2.shape[0]
    given_v = dict(zip([nm for _, nm in vecs], vs))
    if mim is None:
        qk, vk, ak = q2, given_v.get("qd"), given_v.get("qdd")
    else:
        # the expansion's accelerations are not zero at zero qdd where couplers are not linear
        need_a = qdd is not None or (RNEA in slots and not model.couplers_linear)
        a0 = given_v.get("qdd")
        if need_a and a0 is None and qd is not None:
            a0 = np.zeros_like(given_v["qd"])
        qk, vk, ak = mim.expand(q2, given_v.get("qd"), a0 if need_a else None)
    V = vk if vk is not None else qk[:, :0]
    A = ak if ak is not None else qk[:, :0]
    TAU_IN = given_v.get("tau", qk[:, :0])
    # the kernels' outputs, None where not asked for: a kernel compiles the quantities it is
    # handed arrays for, and nothing of the others
    outs = [None] * NSLOT
    for k in slots:
        o = None if outputs is None else outputs.get(k)
        if o is not None and B is None and k in (RNEA, ABA, CRBA, ENERGY):
            o = o[None]         # a Data's result of one state
        outs[k] = o if o is not None else _output(k, km, n, P)
    status = np.zeros((n, NSLOT, 2), dtype=np.int64)
    full = paths(km)
    V = V if V.shape[1] else qk
    if B is None and entry_name is not None and F.shape[0] == 0:
        # one state, one quantity: the entry the fast path calls (compiled here on first use)
        w = data._w if data is not None else workspaces.one_workspace(km)
        k = slots[0]
        out = outs[k][0] if k in (RNEA, ABA, ENERGY) else outs[k]
        out = out.ravel() if k in (CRBA, BJ) else out     # the entry's output is flat (a view: C-ordered)
        kind = km._paths
        x = TAU_IN[0] if k == ABA else A[0]
        if k in P_FREE:
            st = call(ONE[k][kind], km._mb, w, qk[0], V[0], x, t1[0], out)
        else:
            st = call(ONE[k][kind], km._mb, w, P, qk[0], V[0], x, t1[0], out)
        LIVE[k][kind] = ONE[k][kind]
        for k in slots:
            status[0, k] = (st, int(w[REC_JOINT])) if st != 0 else (0, -1)
        if data is None:
            workspaces.release(km, w)
    elif B is None:
        # one state, several quantities or external forces: the chunk kernel on this thread (no
        # thread pool to wake)
        if data is not None:
            rec = int(km._mb[H_REC])
            R, S, token = data._w[:rec].reshape(1, rec), data._w[rec:].reshape(1, -1), None
        else:
            R, S, _, token = workspaces.batch_workspace(km, 1, None)
        chunk(km._mb, R, S, False, 0, 1, full, P, qk, V, A, TAU_IN, t1, F, *outs, status)
        workspaces.release_batch(token)
    else:
        R, S, per_state, token = workspaces.batch_workspace(km, n, data)
        if runs_on_lanes(km._mb, per_state, full, slots):
            lane_batch(km, R, S, full, P, qk, V, A, TAU_IN, t1, F, outs, status)
        else:
            many(km._mb, R, S, per_state, full, P, qk, V, A, TAU_IN, t1, F, *outs, status)
        workspaces.release_batch(token)
    names = ["q"] + [nm for _, nm in vecs]
    return B, km, mim, {k: outs[k] for k in slots}, status, list(zip(names, [q2] + vs)), t1


def lane_batch(km, R, S, full, P, Q, V, A, TAU_IN, T, F, outs, status):
    """rnea and/or aba (``outs[RNEA]``, ``outs[ABA]``; statuses in ``status``) of a batch on
    lanes (``many_lanes``; fewer states than a group: one group padded with copies of the last
    state, ``chunk_lanes`` on this thread); then the states no group could take (a bad sample or
    a singular joint in the group: ``TO_STATES``) one by one on ``many``, which is compiled only
    when a batch has such a state (the lane kernel holds none of the one-state code)."""
    mb = km._mb
    n = Q.shape[0]

    def rows(X, at):
        return X[at] if X.shape[0] == n and n > 1 else X       # F of shape (1 or 0, ...): shared

    if n >= LANES:
        left = many_lanes(mb, R, S, full, P, Q, V, A, TAU_IN, T, F, outs[RNEA], outs[ABA], status)
    elif n:
        at = np.minimum(np.arange(LANES), n - 1)
        group = [None if outs[k] is None else np.empty((LANES,) + outs[k].shape[1:]) for k in (RNEA, ABA)]
        st = np.zeros((LANES, NSLOT, 2), dtype=np.int64)
        chunk_lanes(mb, R, S, 0, 0, LANES, full, P, Q[at], V[at], A[at], TAU_IN[at], T[at], rows(F, at), *group, st,
                    None)
        for k, o in zip((RNEA, ABA), group):
            if o is not None:
                outs[k][:] = o[:n]
        status[:] = st[:n]
        left = np.count_nonzero(status[:, :, 0] == TO_STATES)
    else:
        left = 0
    if left:
        at = np.flatnonzero((status[:, RNEA, 0] == TO_STATES) | (status[:, ABA, 0] == TO_STATES))
        sub = [None] * NSLOT
        for k in (RNEA, ABA):
            if outs[k] is not None:
                sub[k] = np.empty((at.size,) + outs[k].shape[1:])
        st = np.zeros((at.size, NSLOT, 2), dtype=np.int64)
        many(mb, R, S, False, full, P, Q[at], V[at], A[at], TAU_IN[at], T[at], rows(F, at), *sub, st)
        for k in (RNEA, ABA):
            if outs[k] is not None:
                outs[k][at] = sub[k]
        status[at] = st


def finish(errors, model, status, slot, what, inputs_used, t1, B, result, nan=()):
    """A public function's return for quantity ``slot``: with ``errors="flag"`` the result with
    the rows of bad samples NaN (NEAR_SINGULAR ones kept) and the codes; else the result or the
    error (``inputs.flag_or_raise``).  ``nan``: the arrays to fill with NaN (default: none)."""
    st = status[:, slot]
    inputs.nan_failed(st[:, 0], nan, B is not None)
    names = [nm for nm, _ in inputs_used]
    arrays = [x for _, x in inputs_used]
    return inputs.flag_or_raise(errors, model, st, what, names, arrays, t1, B, result)
