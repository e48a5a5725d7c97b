"""The compiled entries: one per algorithm and kind of call (one state, a batch).

Every algorithm is written once, as the function of one state that follows the forward sweep
``kinematics.forward`` (twists v_i = X_i v_p + vJ_i, accelerations a_i = X_i a_p + S_i qdd_i +
cJ_i + v_i x vJ_i, world frames): RNEA's force sweep (``rnea.rnea_forces``), the ABA's three loops
(``aba.aba_solve``), the CRBA (``crba.crba_after``), the world kinematics, the joint terms, the
body Jacobian and the energies.  From these this module makes, once for all of them:

* the one-state entries, one per public function and kind of model, each compiling its own
  quantity only: ``one_rnea`` and ``one_aba`` call the forward sweep and their algorithm
  directly; ``one_crba``, ``one_fk``, ``one_jt``, ``one_bj`` and ``one_energy`` go through
  ``evaluate_state`` (the fast path hands them the caller's arrays untouched, ``public._fast``);
* ``evaluate_state``: one state, one forward sweep to the level the requested quantities need,
  then each requested quantity's own passes, each with its input check and status;
* ``chunk`` / ``chunk_lanes`` / ``many`` / ``many_lanes``: a batch in chunks run in parallel, a
  few per thread, where the model allows in groups of ``LANES`` states (``core.lanes``; the states
  no group can take then go to ``many``, ``python_layer.lane_batch``), each state's result and status
  bit for bit those of a lone call, whatever the chunking or the thread count;
* ``python_layer.run``: the Python layer: inputs, couplers, workspaces (``workspaces``), results, statuses
  and errors, for every public function; ``evaluate`` is its public face.

The quantities are slots (``RNEA`` ... ``ENERGY``); a kernel is handed one output array per slot
and the slots asked for as bits of its parameters (``P[P_ASK]``).  A slot not asked for is handed
None, and Numba compiles none of its code (``if X is not None`` in ``evaluate_state`` and
``chunk_lanes``): a batch of one quantity compiles that quantity only, ``ej.evaluate`` the ones
it asks for, on one forward sweep per state.  The joints' paths are compiled likewise for what
the model has (``ejce.PATHS``, ``python_layer.paths``): a model of revolute, prismatic, Euler-angle,
quaternion and fixed joints compiles the products of screws with coordinate amounts alone (the
first one-state ``rnea`` of arm7: 14 s of CPU instead of 19.6 s, a first ``rnea_derivatives`` 30 s
instead of 128 s); coupled and driven joints add function amounts; only models with joints given
by a general pose or written in Python compile the jets and user paths.  Helpers that take the model, record and scratch views are inlined by LLVM
(``forceinline``), not by Numba, so that each is typed once: a call boundary would copy the
views (hundreds of array fields), and Numba's own inlining types the inlined code again in every
caller (the first one-state ``rnea`` of arm7 compiled in 35 s instead of 45 s).  The derivative
sweeps and the integrators keep Numba's inlining of their helpers, which compiles faster there
(a first ``rnea_derivatives`` 120 s against 257 s, a first RK4 ``simulate`` 56 s against 71 s).

A new algorithm plugs in as one more slot: its per-state function ``impl(out, b, m, r, s, x, F,
fb, P)`` -> (status, joint) (``out`` its output for this state, or the whole output with ``b``
the state's row; ``x`` the vector it reads: v, qdd or tau; ``P`` the integer parameters),
wrapped by ``quantity``, called in ``evaluate_state`` with the forward level it needs, a row in
``SLOTS``, a one-state entry, a branch of ``python_layer._output`` saying the shape of its output, and
a public function calling ``python_layer.run``.
"""
import numpy as np
from numba import prange, types
from numba.extending import overload

from ..algorithms.aba import aba_solve
from ..algorithms.crba import crba_after, rank_status
from ..algorithms.energy import energy_after
from ..algorithms.kinematics import body_jacobian_state, fk_out, forward, joint_terms_state, jt_out, world_kinematics
from ..algorithms.rnea import rnea_forces
from .._jit import entry, jit, pjit
from ..core.ejce import PATHS, PATHS_ALL, paths_kind, runtime_paths
from ..core.lanes import LANES, from_lanes, lanes_of, to_lanes
from ..model import inputs
from ..model.layout import (H_LANES, H_NV, H_SCR, REC_JOINT, group_views, model_view, record_view, rows,
                            scratch_view, views)

# the quantity slots, in the order their statuses are reported (the kernels, whose output arguments
# bear the short names, use the K_ names)
RNEA, ABA, CRBA, FK, JT, BJ, ENERGY = range(7)
K_RNEA, K_ABA, K_CRBA, K_FK, K_JT, K_BJ, K_ENERGY = range(7)
SLOTS = ("rnea", "aba", "mass_matrix", "forward_kinematics", "joint_terms", "body_jacobian", "energy")
NSLOT = len(SLOTS)
# the integer parameters P: forward kinematics' level, the body of body_jacobian, joint terms in
# C axes (1) or P axes (0), mass matrix with the rank test of the joints (1), energies' level, the
# slots asked for (bit k: slot k)
P_FK_LEVEL, P_BODY, P_OUTBOARD, P_RANK, P_EN_LEVEL, P_ASK = range(6)


def ask_bits(slots):
    """P[P_ASK] of a call computing ``slots``: bit k set for slot k."""
    bits = 0
    for k in slots:
        bits |= 1 << k
    return bits


def params(fk_level=0, body=0, outboard=False, rank=False, en_level=0, ask=range(NSLOT)):
    """The parameter array P of a call (``ask``: the slots it computes)."""
    return np.array([fk_level, body, int(outboard), int(rank), en_level, ask_bits(ask)], dtype=np.int64)


def asked(x, P, k):
    """Whether slot k is computed: its output ``x`` is given (None: no, a constant of the compiled
    code) and k is among the slots ``P`` asks for."""
    return x is not None and (P[P_ASK] >> k) & 1 != 0


@overload(asked)
def _asked(x, P, k):
    if isinstance(x, types.NoneType):
        return lambda x, P, k: False
    return lambda x, P, k: (P[P_ASK] >> k) & 1 != 0


def put_status(status, b, k, st, j):
    """status[b, k] = (st, j): a batch's per-sample, per-quantity status (None: not kept)."""
    if status is not None:
        status[b, k, 0] = st
        status[b, k, 1] = j


@overload(put_status)
def _put_status(status, b, k, st, j):
    if isinstance(status, types.NoneType):
        return lambda status, b, k, st, j: None

    def impl(status, b, k, st, j):
        status[b, k, 0] = st
        status[b, k, 1] = j
    return impl


def quantity(impl, row_ndim=0):
    """The driver's part of one quantity: ``part(out, pre, pre_j, b, m, r, s, x, F, fb, P, status, k)``
    runs ``impl(out, b, m, r, s, x, F, fb, P)`` where slot k is asked for and the state's input
    check ``pre`` passed, records its status in slot k and returns it; else it returns (0, -1),
    and where ``out`` is None it is compiled as nothing.  ``row_ndim``: the rank of one state's
    output; a batch's output (one more axis) is handed to ``impl`` as its row b (0: ``impl``
    takes the whole output and indexes it itself)."""
    def part(out, pre, pre_j, b, m, r, s, x, F, fb, P, status, k):
        # the Python path (NUMBA_DISABLE_JIT); the compiled one is ``_ov``'s
        if not asked(out, P, k):
            return 0, -1
        st, j = pre, pre_j
        if pre == 0:
            st, j = impl(out[b] if row_ndim > 0 and out.ndim > row_ndim else out, b, m, r, s, x, F, fb, P)
        put_status(status, b, k, st, j)
        return st, j

    part.__name__ = part.__qualname__ = impl.__name__ + "_part"

    # inlined where it is called: a call boundary would copy the model, record and scratch
    # views (hundreds of array fields) into the callee, which costs more than the quantity
    @overload(part, jit_options={"forceinline": True})
    def _ov(out, pre, pre_j, b, m, r, s, x, F, fb, P, status, k):
        if isinstance(out, types.NoneType):
            return lambda out, pre, pre_j, b, m, r, s, x, F, fb, P, status, k: (0, -1)
        by_row = row_ndim > 0 and out.ndim > row_ndim

        def run_part(out, pre, pre_j, b, m, r, s, x, F, fb, P, status, k):
            if not asked(out, P, k):
                return 0, -1
            st, j = pre, pre_j
            if pre == 0:
                if by_row:
                    st, j = impl(out[b], b, m, r, s, x, F, fb, P)
                else:
                    st, j = impl(out, b, m, r, s, x, F, fb, P)
            put_status(status, b, k, st, j)
            return st, j
        return run_part

    return part


# ---------------------------------------------------------------------------- the quantities
@jit(forceinline=True)
def _rnea(out, b, m, r, s, a, F, fb, P):
    rnea_forces(m, r, s, F, fb, a, out)
    return 0, -1


@jit(forceinline=True)
def _aba(out, b, m, r, s, tau, F, fb, P):
    return aba_solve(m, r, s, tau, F, fb, out)


@jit(forceinline=True)
def _crba(out, b, m, r, s, x, F, fb, P):
    crba_after(m, r, s, out)
    if P[P_RANK] != 0:
        return rank_status(m, r, s)
    return 0, -1


@jit(forceinline=True)
def _fk(out, b, m, r, s, x, F, fb, P):
    n1 = m.body_parent.shape[0]
    level = P[P_FK_LEVEL]
    world_kinematics(m, r, level, b, *fk_out(out, out.shape[0] // (n1 * (12 + 6 * level)), n1, level))
    return 0, -1


@jit(forceinline=True)
def _jt(out, b, m, r, s, v, F, fb, P):
    n1 = m.body_parent.shape[0]
    nv = v.shape[0]
    joint_terms_state(m, r, v, P[P_OUTBOARD] != 0, b, *jt_out(out, out.shape[0] // (6 * nv + 30 * n1), n1, nv))
    return 0, -1


@jit(forceinline=True)
def _bj(out, b, m, r, s, x, F, fb, P):
    body_jacobian_state(m, r, P[P_BODY], b, out)
    return 0, -1


@jit(forceinline=True)
def _energy(out, b, m, r, s, v, F, fb, P):
    energy_after(m, r, v, P[P_EN_LEVEL], out)
    return 0, -1


rnea_part = quantity(_rnea, 1)
aba_part = quantity(_aba, 1)
crba_part = quantity(_crba, 2)
fk_part = quantity(_fk)
jt_part = quantity(_jt)
bj_part = quantity(_bj)
energy_part = quantity(_energy, 1)


@jit(forceinline=True)
def _first(st, j, st2, j2):
    return (st2, j2) if st == 0 and st2 != 0 else (st, j)


# the levels of ``inputs.check`` as run-time integers (a literal would compile it once per value)
LEVEL0, LEVEL1, LEVEL2 = np.int64(0), np.int64(1), np.int64(2)


@jit
def evaluate_state(m, r, s, q, v, a, tau, t, F, fb, full, P, b, TAU, QDD, M, FK, JT, BJ, EN, status):
    """Every requested quantity of state b (outputs TAU ... EN; ``asked``) on one
    forward sweep, to the level they need: joints (and world frames) for all, twists for rnea,
    aba, joint terms and those kinematics and energies that use qd, accelerations qdd (``a``; no
    entries: zero, as for h = rnea(q, qd, 0)) for rnea and forward kinematics with qdd.  Each
    quantity checks its inputs (q, qd, t; qdd for rnea, tau for aba) and has its own status in
    ``status[b]``; returns the first (status, joint) that is not OK, in slot order."""
    fk_level = P[P_FK_LEVEL]
    en_level = P[P_EN_LEVEL]
    want_rnea, want_aba, want_m = asked(TAU, P, K_RNEA), asked(QDD, P, K_ABA), asked(M, P, K_CRBA)
    want_fk, want_jt, want_bj = asked(FK, P, K_FK), asked(JT, P, K_JT), asked(BJ, P, K_BJ)
    want_en = asked(EN, P, K_ENERGY)
    # what the quantities read: q and t (all), qd (lv), qdd (need_a)
    need_q = want_m or want_bj or (want_fk and fk_level == 0) or (want_en and en_level == 0)
    lv = 1 if want_rnea or want_aba or want_jt or (want_fk and fk_level >= 1) or (want_en and en_level >= 1) else 0
    need_a = want_rnea or (want_fk and fk_level >= 2)
    vv = v if lv >= 1 else s.zv
    aa = a if a.shape[0] > 0 else s.zv
    # each quantity's input check, as a lone call of its function makes it: the widest first,
    # since a state that passes a check passes the narrower ones (q, t; q, qd, t)
    sa, ja = inputs.check(m, q, vv, aa, LEVEL2, t) if need_a else (-1, -1)
    stt, jtt = inputs.check(m, q, vv, tau, LEVEL2, t) if want_aba else (-1, -1)
    wide = sa == 0 or stt == 0
    sv, jv = ((0, -1) if wide else inputs.check(m, q, vv, vv, LEVEL1, t)) if lv >= 1 else (-1, -1)
    sq, jq = ((0, -1) if wide or sv == 0 else inputs.check(m, q, vv, vv, LEVEL0, t)) if need_q else (0, -1)
    if lv < 1:
        sv, jv = sq, jq
    if not need_a:
        sa, ja = sv, jv
    if not want_aba:
        stt, jtt = sv, jv
    la = 2 if need_a and sa == 0 else (1 if lv >= 1 and sv == 0 else 0)
    if (need_q and sq == 0) or (lv >= 1 and sv == 0) or (want_aba and stt == 0):
        world = want_fk or want_bj or want_en or (F.shape[0] > 0 and (want_rnea or want_aba))
        forward(m, r, s, q, vv, aa, t, la, world, full)
    # each quantity whose output is given, in slot order (``X is not None``: Numba compiles
    # nothing of a quantity whose output is None)
    st, j = 0, -1
    if TAU is not None:
        st2, j2 = rnea_part(TAU, sa, ja, b, m, r, s, aa, F, fb, P, status, K_RNEA)
        st, j = _first(st, j, st2, j2)
    if QDD is not None:
        st2, j2 = aba_part(QDD, stt, jtt, b, m, r, s, tau, F, fb, P, status, K_ABA)
        st, j = _first(st, j, st2, j2)
    if M is not None:
        st2, j2 = crba_part(M, sq, jq, b, m, r, s, vv, F, fb, P, status, K_CRBA)
        st, j = _first(st, j, st2, j2)
    if FK is not None:
        sk, jk = (sq, jq) if fk_level == 0 else ((sv, jv) if fk_level == 1 else (sa, ja))
        st2, j2 = fk_part(FK, sk, jk, b, m, r, s, vv, F, fb, P, status, K_FK)
        st, j = _first(st, j, st2, j2)
    if JT is not None:
        st2, j2 = jt_part(JT, sv, jv, b, m, r, s, vv, F, fb, P, status, K_JT)
        st, j = _first(st, j, st2, j2)
    if BJ is not None:
        st2, j2 = bj_part(BJ, sq, jq, b, m, r, s, vv, F, fb, P, status, K_BJ)
        st, j = _first(st, j, st2, j2)
    if EN is not None:
        st2, j2 = energy_part(EN, sq if en_level == 0 else sv, jq if en_level == 0 else jv, b, m, r, s, vv, F,
                              fb, P, status, K_ENERGY)
        st, j = _first(st, j, st2, j2)
    return st, j


@jit(forceinline=True)
def checked_sweep(m, r, s, q, v, a, t, level, world, full):
    """One state's input check at ``level`` (q, t; qd; qdd) and, where it passes, the forward sweep
    to that level (world frames with ``world``), as ``evaluate_state`` makes them for one
    quantity: (status, joint)."""
    st, j = inputs.check(m, q, v, a, level, t)
    if st == 0:
        forward(m, r, s, q, v, a, t, level, world, runtime_paths(full))
    return st, j


# the compiled entries of the public functions and kinds of model: ``one_rnea(mb, w, q, v, x, t,
# out)`` and ``one_aba`` (x: qdd or tau), and ``one_crba(mb, w, P, q, v, x, t, out)`` and the
# others of the quantity P asks for (x: qdd, for forward kinematics; ``out`` flat, the mass matrix
# and body Jacobian row by row): each the input check, the forward sweep and its own algorithm,
# nothing else.  Few arguments, since each
# costs the call from Python its typing: no external forces (a one-state call with f_ext runs
# ``chunk``), no P where the quantity has no parameters, and the kind of joint paths (``full``)
# fixed in the entry.  ``x[:0]``: no entries, read as zero.
P0 = params()
NO_FORCE = np.zeros((0, 1, 6))
P_FREE = (RNEA, ABA)


def _entries(full):
    """The entries for the models whose joint paths are ``full`` (``ejce.PATHS``)."""

    def one_rnea(mb, w, q, v, x, t, out):
        m, r, s = views(mb, w)
        aa = x if x.shape[0] > 0 else s.zv
        st, j = checked_sweep(m, r, s, q, v, aa, t, LEVEL2, np.bool_(False), full)
        if st == 0:
            rnea_forces(m, r, s, NO_FORCE, np.int64(0), aa, out)
        r.hdr[REC_JOINT] = j
        return st

    def one_aba(mb, w, q, v, x, t, out):
        m, r, s = views(mb, w)
        st, j = inputs.check(m, q, v, x, LEVEL2, t)
        if st == 0:
            forward(m, r, s, q, v, s.zv, t, LEVEL1, np.bool_(False), runtime_paths(full))
            st, j = aba_solve(m, r, s, x, NO_FORCE, np.int64(0), out)
        r.hdr[REC_JOINT] = j
        return st

    # the others take the parameters P; ``out`` is flat (the mass matrix and body Jacobian row by
    # row), x qdd (forward kinematics at level 2)
    def one_crba(mb, w, P, q, v, x, t, out):
        m, r, s = views(mb, w)
        st, j = checked_sweep(m, r, s, q, s.zv, s.zv, t, LEVEL0, np.bool_(False), full)
        if st == 0:
            st, j = _crba(rows(out, 0, mb[H_NV], mb[H_NV]), np.int64(0), m, r, s, s.zv, NO_FORCE, np.int64(0), P)
        r.hdr[REC_JOINT] = j
        return st

    def one_fk(mb, w, P, q, v, x, t, out):
        m, r, s = views(mb, w)
        level = P[P_FK_LEVEL]
        vv = v if level >= 1 else s.zv
        aa = (x if x.shape[0] > 0 else s.zv) if level >= 2 else vv
        st, j = checked_sweep(m, r, s, q, vv, aa, t, level, np.bool_(True), full)
        if st == 0:
            _fk(out, np.int64(0), m, r, s, vv, NO_FORCE, np.int64(0), P)
        r.hdr[REC_JOINT] = j
        return st

    def one_jt(mb, w, P, q, v, x, t, out):
        m, r, s = views(mb, w)
        st, j = checked_sweep(m, r, s, q, v, v, t, LEVEL1, np.bool_(False), full)
        if st == 0:
            _jt(out, np.int64(0), m, r, s, v, NO_FORCE, np.int64(0), P)
        r.hdr[REC_JOINT] = j
        return st

    def one_bj(mb, w, P, q, v, x, t, out):
        m, r, s = views(mb, w)
        st, j = checked_sweep(m, r, s, q, s.zv, s.zv, t, LEVEL0, np.bool_(True), full)
        if st == 0:
            _bj(rows(out, 0, 6, mb[H_NV]), np.int64(0), m, r, s, s.zv, NO_FORCE, np.int64(0), P)
        r.hdr[REC_JOINT] = j
        return st

    def one_energy(mb, w, P, q, v, x, t, out):
        m, r, s = views(mb, w)
        level = LEVEL1 if P[P_EN_LEVEL] >= 1 else LEVEL0
        vv = v if level >= 1 else s.zv
        st, j = checked_sweep(m, r, s, q, vv, vv, t, level, np.bool_(True), full)
        if st == 0:
            _energy(out, np.int64(0), m, r, s, vv, NO_FORCE, np.int64(0), P)
        r.hdr[REC_JOINT] = j
        return st

    return tuple(entry(f) for f in (one_rnea, one_aba, one_crba, one_fk, one_jt, one_bj, one_energy))


# ONE[slot][kind]: the entry of a quantity for each kind of model (``kind``: ``ejce.PATHS_*``,
# ``Model._paths``), each compiled once for the types of the input layer and then closed
# (``_jit.entry``); LIVE[slot][kind]: the same once compiled for the slot, None before (the fast
# path leaves the slot's first call to the input layer)
_BY_KIND = tuple(_entries(full) for full in PATHS)
ONE = tuple(tuple(entries[k] for entries in _BY_KIND) for k in range(NSLOT))
LIVE = [[None] * len(PATHS) for _ in range(NSLOT)]


@jit
def chunk(mb, R, S, per_state, c, nchunk, full, P, Q, V, A, TAU_IN, T, F, TAU, QDD, M, FK, JT, BJ, EN, status):
    """The states of chunk c of nchunk, one by one (records per state with ``per_state``)."""
    B = Q.shape[0]
    m = model_view(mb)
    s = scratch_view(mb, S[c], 0)
    for b in range(c * B // nchunk, (c + 1) * B // nchunk):
        r = record_view(mb, R[b] if per_state else R[c], 0)
        evaluate_state(m, r, s, Q[b], V[b], A[b], TAU_IN[b], T[b], F, b if F.shape[0] > 1 else 0, full, P, b,
                       TAU, QDD, M, FK, JT, BJ, EN, status)


# the status of a state that a lane batch leaves to the state-by-state kernel (``chunk_lanes``
# with ``alone`` None), until ``python_layer.lane_batch`` has run it; never a result
TO_STATES = -1


def _alone(alone, m, r, s, full, Q, V, A, TAU_IN, T, F, P, b, TAU, QDD, status):
    evaluate_state(m, r, s, Q[b], V[b], A[b], TAU_IN[b], T[b], F, b if F.shape[0] > 1 else 0, full, P, b, TAU,
                   QDD, None, None, None, None, None, status)


def _defer(alone, m, r, s, full, Q, V, A, TAU_IN, T, F, P, b, TAU, QDD, status):
    if asked(TAU, P, K_RNEA):
        put_status(status, b, K_RNEA, TO_STATES, -1)
    if asked(QDD, P, K_ABA):
        put_status(status, b, K_ABA, TO_STATES, -1)


def alone_or_defer(alone, m, r, s, full, Q, V, A, TAU_IN, T, F, P, b, TAU, QDD, status):
    """State b of a lane batch that its group could not take: evaluated alone (``alone`` True),
    or (None) its slots asked for marked TO_STATES in ``status``, and nothing of the one-state
    code compiled into the lane kernel."""
    # the Python path (NUMBA_DISABLE_JIT); the compiled one is the overload's
    return (_defer if alone is None else _alone)(alone, m, r, s, full, Q, V, A, TAU_IN, T, F, P, b, TAU, QDD, status)


@overload(alone_or_defer, jit_options={"forceinline": True})
def _alone_or_defer(alone, m, r, s, full, Q, V, A, TAU_IN, T, F, P, b, TAU, QDD, status):
    return _defer if isinstance(alone, types.NoneType) else _alone


@jit
def chunk_lanes(mb, R, S, c, lo, hi, full, P, Q, V, A, TAU_IN, T, F, TAU, QDD, status, alone):
    """States lo..hi-1 of rnea and/or aba (the slots P asks for) on chunk c's workspace, in
    groups of LANES states on one group record; the states a group cannot take (the rest, and
    any group with a bad sample or one the ABA finds singular or near it) are evaluated one by
    one where ``alone`` is True, and left to the state-by-state kernel where it is None
    (``alone_or_defer``): every state's results and statuses are those of a lone call.  The
    other quantities' code is not compiled here."""
    m = model_view(mb)
    s = scratch_view(mb, S[c], 0)
    rg, sg = group_views(mb, S[c], mb[H_SCR])
    b = lo
    with_a = A.shape[1] > 0
    want_rnea, want_aba = asked(TAU, P, K_RNEA), asked(QDD, P, K_ABA)
    while b + LANES <= hi:
        ok = inputs.group_ok(m, Q, V, A, 2 if want_rnea and with_a else 1, T, b)
        if want_aba:
            ok = ok and inputs.group_ok(m, Q, V, TAU_IN, np.int64(2), T, b)
        if ok:
            fb = (b, 1) if F.shape[0] > 1 else (0, 0)
            to_lanes(sg.lq, Q, b)
            to_lanes(sg.lv, V, b)
            if want_rnea and with_a:
                to_lanes(sg.la, A, b)
            tl = lanes_of(T, b)
            forward(m, rg, sg, sg.lq, sg.lv, sg.la if with_a else sg.zv, tl, 2 if want_rnea else 1,
                    F.shape[0] > 0, full)
            # (``is not None`` first: Numba then compiles no code of a quantity not handed)
            if TAU is not None:
                if want_rnea:
                    rnea_forces(m, rg, sg, F, fb, sg.la if with_a else sg.zv, sg.lo)
                    from_lanes(TAU, b, sg.lo)
            if QDD is not None:
                if want_aba:
                    to_lanes(sg.la, TAU_IN, b)
                    st, j = aba_solve(m, rg, sg, sg.la, F, fb, sg.lo)
                    ok = st == 0
                    if ok:
                        from_lanes(QDD, b, sg.lo)
        if ok:
            for b1 in range(b, b + LANES):
                if want_rnea:
                    put_status(status, b1, K_RNEA, 0, -1)
                if want_aba:
                    put_status(status, b1, K_ABA, 0, -1)
        else:
            for b1 in range(b, b + LANES):
                alone_or_defer(alone, m, record_view(mb, R[c], 0), s, full, Q, V, A, TAU_IN, T, F, P, b1, TAU, QDD,
                               status)
        b += LANES
    for b1 in range(b, hi):
        alone_or_defer(alone, m, record_view(mb, R[c], 0), s, full, Q, V, A, TAU_IN, T, F, P, b1, TAU, QDD, status)


def runs_on_lanes(mb, per_state, full, slots):
    """Whether a batch runs in groups of LANES states (``many_lanes``): rnea and/or aba only,
    the fixed, screw and quaternion joint paths (``full`` not a bool), pooled records and a model
    the lane kernels take."""
    return paths_kind(full) != PATHS_ALL and not per_state and mb[H_LANES] != 0 and max(slots) <= ABA


# The two batch drivers: each chunk of a batch (one per row of S) in parallel; ``many`` with every
# slot's array (None where not asked for: each set of quantities compiles its own), ``many_lanes``
# with rnea's and aba's (fewer arguments: a call from Python types each).  The chunk kernels are called directly (a function between the loop and them is
# compiled again with all the code it calls: a dispatching layer cost the main job about 15 s)
# and are handed the index as an int64: Numba types a ``prange`` body twice, the second time
# with an unsigned index, which would compile each chunk kernel twice.  Python picks the driver
# (``runs_on_lanes``), so that each compiles only the chunk kernel it runs.
@pjit
def many(mb, R, S, per_state, full, P, Q, V, A, TAU_IN, T, F, TAU, QDD, M, FK, JT, BJ, EN, status):
    """A batch, each chunk state by state (``chunk``)."""
    nchunk = S.shape[0]
    for c in prange(nchunk):
        chunk(mb, R, S, per_state, np.int64(c), nchunk, full, P, Q, V, A, TAU_IN, T, F, TAU, QDD, M, FK, JT, BJ, EN,
              status)


@pjit
def many_lanes(mb, R, S, full, P, Q, V, A, TAU_IN, T, F, TAU, QDD, status):
    """A batch of at least LANES states of rnea and/or aba in groups of LANES states
    (``chunk_lanes``, each chunk a whole number of groups; then, where the length is no multiple
    of LANES, the last LANES states as one more group, after the parallel loop: the states before
    the rest are computed again, to the same bits), the states no group can take marked
    TO_STATES (``python_layer.lane_batch`` runs them on ``many``); returns their number."""
    nchunk = S.shape[0]
    n = Q.shape[0]
    groups = n // LANES
    for c in prange(nchunk):
        k = np.int64(c)
        chunk_lanes(mb, R, S, k, k * groups // nchunk * LANES, (k + 1) * groups // nchunk * LANES, full, P, Q, V,
                    A, TAU_IN, T, F, TAU, QDD, status, None)
    if groups * LANES < n:
        chunk_lanes(mb, R, S, np.int64(0), n - LANES, n, full, P, Q, V, A, TAU_IN, T, F, TAU, QDD, status, None)
    # (a sum over the parallel loop would allocate: the kernels count no references)
    left = 0
    for b in range(n):
        if status[b, K_RNEA, 0] == TO_STATES or status[b, K_ABA, 0] == TO_STATES:
            left += 1
    return left
