"""The batch driver: how every public function reaches the algorithms.

Every algorithm is written once, as the function of one state that follows the forward sweep
``kinematics.forward`` (twists v_i = X_i v_p + vJ_i, accelerations a_i = X_i a_p + S_i qdd_i +
cJ_i + v_i x vJ_i, world frames): RNEA's force sweep (``rnea.rnea_forces``), the ABA's three loops
(``aba.aba_solve``), the CRBA (``crba.crba_after``), the world kinematics, the joint terms, the
body Jacobian and the energies.  From these the driver makes, once for all of them:

* ``evaluate_state``: one state, one forward sweep to the level the requested quantities need,
  then each requested quantity's own passes, each with its input check and status;
* ``one``: the single-state kernel, a compiled entry per public function (its fast path hands it
  the caller's arrays untouched, ``api._fast``);
* ``chunk`` / ``chunk_lanes`` / ``many`` / ``many_lanes``: a batch in chunks run in parallel, a
  few per thread, where the model allows in groups of ``LANES`` states (``core.lanes``), each
  state's result and status bit for bit those of a lone call, whatever the chunking or the thread
  count;
* ``calls.run``: the Python layer: inputs, couplers, workspaces (``engine``), results, statuses
  and errors, for every public function; ``evaluate`` is its public face.

The quantities are slots (``RNEA`` ... ``ENERGY``); a kernel is handed one output array per slot,
None where the quantity is not asked for, and Numba compiles for each combination only the code
of the quantities asked for (``quantity``: a part that does nothing when its output is None).
The joints' paths are compiled likewise for what the model has (``paths``): a model of fixed,
screw and quaternion joints never compiles the jets path.

A new algorithm plugs in as one more slot: its per-state function ``impl(out, b, m, r, s, x, F,
fb, P)`` -> (status, joint) (``out`` its output for this state, or the whole output with ``b``
the state's row; ``x`` the vector it reads: v, qdd or tau; ``P`` the integer parameters),
wrapped by ``quantity``, called in ``evaluate_state`` with the forward level it needs, a row in
``SLOTS``, a branch of ``calls._output`` saying the shape of its output, and a public function
calling ``calls.run``.
"""
import numpy as np
from numba import prange, types
from numba.extending import overload

from .aba import aba_solve
from .crba import crba_after, rank_status
from .energy import energy_after
from .kinematics import body_jacobian_state, fk_out, forward, joint_terms_state, jt_out, world_kinematics
from .rnea import rnea_forces
from .._jit import entry, jit, pjit
from ..core.lanes import LANES, from_lanes, lanes_of, to_lanes
from ..model import inputs
from ..model.layout import H_LANES, H_SCR, REC_JOINT, group_views, model_view, record_view, scratch_view, views

# the quantity slots, in the order their statuses are reported (the kernels, whose output arguments
# bear the short names, use the K_ names)
RNEA, ABA, CRBA, FK, JT, BJ, ENERGY = range(7)
K_RNEA, K_ABA, K_CRBA, K_FK, K_JT, K_BJ, K_ENERGY = range(7)
SLOTS = ("rnea", "aba", "mass_matrix", "forward_kinematics", "joint_terms", "body_jacobian", "energy")
NSLOT = len(SLOTS)
# the integer parameters P: forward kinematics' level, the body of body_jacobian, joint terms in
# C axes (1) or P axes (0), mass matrix with the rank test of the joints (1), energies' level
P_FK_LEVEL, P_BODY, P_OUTBOARD, P_RANK, P_EN_LEVEL = range(5)


def params(fk_level=0, body=0, outboard=False, rank=False, en_level=0):
    """The parameter array P of a call."""
    return np.array([fk_level, body, int(outboard), int(rank), en_level], dtype=np.int64)


def given(x):
    """Whether a quantity's output array was given (a constant of the compiled code)."""
    return x is not None


@overload(given)
def _given(x):
    g = not isinstance(x, types.NoneType)
    return lambda x: g


def runtime_paths(full):
    """``full`` as a batch receives it from Python: None, or a bool that is no compile-time
    constant (an entry's True is one, and would compile the forward sweep once more)."""
    return full


@overload(runtime_paths)
def _runtime_paths(full):
    if isinstance(full, types.NoneType):
        return lambda full: None
    return lambda full: np.bool_(full)


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
    runs ``impl(out, b, m, r, s, x, F, fb, P)`` where ``out`` is given and the state's input check
    ``pre`` passed, records its status in slot k and returns it; where ``out`` is None it is
    compiled as nothing and returns (0, -1).  ``row_ndim``: the rank of one state's output; a
    batch's output (one more axis) is handed to ``impl`` as its row b (0: ``impl`` takes the
    whole output and indexes it itself)."""
    def part(out, pre, pre_j, b, m, r, s, x, F, fb, P, status, k):
        # the Python path (NUMBA_DISABLE_JIT); the compiled one is ``_ov``'s
        if out is None:
            return 0, -1
        st, j = pre, pre_j
        if pre == 0:
            st, j = impl(out[b] if row_ndim > 0 and out.ndim > row_ndim else out, b, m, r, s, x, F, fb, P)
        put_status(status, b, k, st, j)
        return st, j

    part.__name__ = part.__qualname__ = impl.__name__ + "_part"

    # inlined where it is called: a call boundary would copy the model, record and scratch
    # views (hundreds of array fields) into the callee, which costs more than the quantity
    @overload(part, inline="always")
    def _ov(out, pre, pre_j, b, m, r, s, x, F, fb, P, status, k):
        if isinstance(out, types.NoneType):
            return lambda out, pre, pre_j, b, m, r, s, x, F, fb, P, status, k: (0, -1)
        by_row = row_ndim > 0 and out.ndim > row_ndim

        def run_part(out, pre, pre_j, b, m, r, s, x, F, fb, P, status, k):
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
@jit(inline="always")
def _rnea(out, b, m, r, s, a, F, fb, P):
    rnea_forces(m, r, s, F, fb, a, out)
    return 0, -1


@jit(inline="always")
def _aba(out, b, m, r, s, tau, F, fb, P):
    return aba_solve(m, r, s, tau, F, fb, out)


@jit(inline="always")
def _crba(out, b, m, r, s, x, F, fb, P):
    crba_after(m, r, s, out)
    if P[P_RANK] != 0:
        return rank_status(m, r, s)
    return 0, -1


@jit(inline="always")
def _fk(out, b, m, r, s, x, F, fb, P):
    n1 = m.body_parent.shape[0]
    level = P[P_FK_LEVEL]
    world_kinematics(m, r, level, b, *fk_out(out, out.shape[0] // (n1 * (12 + 6 * level)), n1, level))
    return 0, -1


@jit(inline="always")
def _jt(out, b, m, r, s, v, F, fb, P):
    n1 = m.body_parent.shape[0]
    nv = v.shape[0]
    joint_terms_state(m, r, v, P[P_OUTBOARD] != 0, b, *jt_out(out, out.shape[0] // (6 * nv + 30 * n1), n1, nv))
    return 0, -1


@jit(inline="always")
def _bj(out, b, m, r, s, x, F, fb, P):
    body_jacobian_state(m, r, P[P_BODY], b, out)
    return 0, -1


@jit(inline="always")
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


@jit(inline="always")
def _first(st, j, st2, j2):
    return (st2, j2) if st == 0 and st2 != 0 else (st, j)


@jit
def evaluate_state(m, r, s, q, v, a, tau, t, F, fb, full, P, b, TAU, QDD, M, FK, JT, BJ, EN, status):
    """Every requested quantity of state b (outputs TAU ... EN, None where not asked for) on one
    forward sweep, to the level they need: joints (and world frames) for all, twists for rnea,
    aba, joint terms and those kinematics and energies that use qd, accelerations qdd (``a``; no
    entries: zero, as for h = rnea(q, qd, 0)) for rnea and forward kinematics with qdd.  Each
    quantity checks its inputs (q, qd, t; qdd for rnea, tau for aba) and has its own status in
    ``status[b]``; returns the first (status, joint) that is not OK, in slot order."""
    fk_level = P[P_FK_LEVEL]
    en_level = P[P_EN_LEVEL]
    # what the quantities read: q and t (all), qd (lv), qdd (need_a)
    need_q = given(M) or given(BJ) or (given(FK) and fk_level == 0) or (given(EN) and en_level == 0)
    lv = 1 if given(TAU) or given(QDD) or given(JT) or (given(FK) and fk_level >= 1) or \
        (given(EN) and en_level >= 1) else 0
    need_a = given(TAU) or (given(FK) and fk_level >= 2)
    vv = v if lv >= 1 else s.zv
    aa = a if a.shape[0] > 0 else s.zv
    # each quantity's input check, as a lone call of its function makes it: the widest first,
    # since a state that passes a check passes the narrower ones (q, t; q, qd, t)
    sa, ja = inputs.check(m, q, vv, aa, 2, t) if need_a else (-1, -1)
    stt, jtt = inputs.check(m, q, vv, tau, 2, t) if given(QDD) else (-1, -1)
    wide = sa == 0 or stt == 0
    sv, jv = ((0, -1) if wide else inputs.check(m, q, vv, vv, 1, t)) if lv >= 1 else (-1, -1)
    sq, jq = ((0, -1) if wide or sv == 0 else inputs.check(m, q, vv, vv, 0, t)) if need_q else (0, -1)
    if lv < 1:
        sv, jv = sq, jq
    if not need_a:
        sa, ja = sv, jv
    if not given(QDD):
        stt, jtt = sv, jv
    la = 2 if need_a and sa == 0 else (1 if lv >= 1 and sv == 0 else 0)
    if (need_q and sq == 0) or (lv >= 1 and sv == 0) or (given(QDD) and stt == 0):
        world = given(FK) or given(BJ) or given(EN) or (F.shape[0] > 0 and (given(TAU) or given(QDD)))
        forward(m, r, s, q, vv, aa, t, la, world, full)
    st, j = rnea_part(TAU, sa, ja, b, m, r, s, aa, F, fb, P, status, K_RNEA)
    st2, j2 = aba_part(QDD, stt, jtt, b, m, r, s, tau, F, fb, P, status, K_ABA)
    st, j = _first(st, j, st2, j2)
    st2, j2 = crba_part(M, sq, jq, b, m, r, s, vv, F, fb, P, status, K_CRBA)
    st, j = _first(st, j, st2, j2)
    sk, jk = (sq, jq) if fk_level == 0 else ((sv, jv) if fk_level == 1 else (sa, ja))
    st2, j2 = fk_part(FK, sk, jk, b, m, r, s, vv, F, fb, P, status, K_FK)
    st, j = _first(st, j, st2, j2)
    st2, j2 = jt_part(JT, sv, jv, b, m, r, s, vv, F, fb, P, status, K_JT)
    st, j = _first(st, j, st2, j2)
    st2, j2 = bj_part(BJ, sq, jq, b, m, r, s, vv, F, fb, P, status, K_BJ)
    st, j = _first(st, j, st2, j2)
    st2, j2 = energy_part(EN, sq if en_level == 0 else sv, jq if en_level == 0 else jv, b, m, r, s, vv, F, fb,
                          P, status, K_ENERGY)
    return _first(st, j, st2, j2)


# the one-state entries inline the state's evaluation: a call boundary would copy the model,
# record and scratch views (kilobytes of arguments) on every call (``evaluate_state`` is a plain
# function under NUMBA_DISABLE_JIT)
_evaluate_one = jit(inline="always")(getattr(evaluate_state, "py_func", evaluate_state))


@jit(inline="always")
def one(mb, w, full, P, q, v, a, tau, t, F, TAU, QDD, M, FK, JT, BJ, EN):
    """One state on the one-state workspace w (outputs of one state: tau (nv,), M (nv, nv), ...;
    the flat buffers of kinematics and joint terms): the first status that is not OK (its joint in
    the record's header)."""
    m, r, s = views(mb, w)
    # row 0 as a run-time integer, as the batch kernels pass it: a literal 0 would compile the
    # quantities' functions a second time (NUMBA-NOTES)
    zero = np.int64(0)
    st, j = _evaluate_one(m, r, s, q, v, a, tau, t, F, zero, runtime_paths(full), P, zero, TAU, QDD, M, FK, JT, BJ, EN,
                          None)
    r.hdr[REC_JOINT] = j
    return st


# the compiled entries of the public functions, one per quantity and kind of model:
# ``entry(mb, w, [P,] q, v, x, t, out)`` with x the accelerations qdd (rnea, forward kinematics)
# or the joint forces tau (aba), and ``out`` the quantity's output.  Few arguments, since each
# costs the call from Python its typing: no external forces (a one-state call with f_ext runs
# ``chunk``), no P where the quantity has no parameters (``P_FREE``: P0, the parameters at their
# defaults), and the kind of joint paths (``full``) fixed in the entry.  ``x[:0]``: no entries,
# read as zero.
P0 = params()
NO_FORCE = np.zeros((0, 1, 6))
P_FREE = (RNEA, ABA, CRBA)


def _entries(full):
    """The entries for the models whose joint paths are ``full`` (``calls.paths``: None, or True
    where the jets and user paths are compiled too)."""

    def one_rnea(mb, w, q, v, x, t, out):
        return one(mb, w, full, P0, q, v, x, x[:0], t, NO_FORCE, out, None, None, None, None, None, None)

    def one_aba(mb, w, q, v, x, t, out):
        return one(mb, w, full, P0, q, v, x[:0], x, t, NO_FORCE, None, out, None, None, None, None, None)

    def one_mass_matrix(mb, w, q, v, x, t, out):
        return one(mb, w, full, P0, q, v, x[:0], x[:0], t, NO_FORCE, None, None, out, None, None, None, None)

    def one_forward_kinematics(mb, w, P, q, v, x, t, out):
        return one(mb, w, full, P, q, v, x, x[:0], t, NO_FORCE, None, None, None, out, None, None, None)

    def one_joint_terms(mb, w, P, q, v, x, t, out):
        return one(mb, w, full, P, q, v, x[:0], x[:0], t, NO_FORCE, None, None, None, None, out, None, None)

    def one_body_jacobian(mb, w, P, q, v, x, t, out):
        return one(mb, w, full, P, q, v, x[:0], x[:0], t, NO_FORCE, None, None, None, None, None, out, None)

    def one_energy(mb, w, P, q, v, x, t, out):
        return one(mb, w, full, P, q, v, x[:0], x[:0], t, NO_FORCE, None, None, None, None, None, None, out)

    return tuple(entry(f) for f in (one_rnea, one_aba, one_mass_matrix, one_forward_kinematics,
                                    one_joint_terms, one_body_jacobian, one_energy))


# ONE[slot][kind]: the entries of a quantity for the two kinds of model (``kind``: 0 where
# ``paths`` is None, 1 where it is True), each compiled once for the types of the input layer and
# then closed (``_jit.entry``); LIVE[slot][kind]: the same once compiled, None before (the fast
# path leaves the first call to the input layer)
ONE = tuple(zip(_entries(None), _entries(True)))
LIVE = [[None, None] for _ in ONE]


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


@jit
def chunk_lanes(mb, R, S, c, nchunk, P, Q, V, A, TAU_IN, T, F, TAU, QDD, status):
    """Chunk c of rnea and/or aba in groups of LANES states on one group record, the rest (and
    any group with a bad sample or one the ABA finds singular or near it) state by state: every
    state's results and statuses are those of a lone call."""
    B = Q.shape[0]
    m = model_view(mb)
    s = scratch_view(mb, S[c], 0)
    rg, sg = group_views(mb, S[c], mb[H_SCR])
    b = c * B // nchunk
    end = (c + 1) * B // nchunk
    with_a = A.shape[1] > 0
    while b + LANES <= end:
        ok = inputs.group_ok(m, Q, V, A, 2 if given(TAU) and with_a else 1, T, b)
        if given(QDD):
            ok = ok and inputs.group_ok(m, Q, V, TAU_IN, 2, T, b)
        if ok:
            fb = (b, 1) if F.shape[0] > 1 else (0, 0)
            to_lanes(sg.lq, Q, b)
            to_lanes(sg.lv, V, b)
            if given(TAU) and with_a:
                to_lanes(sg.la, A, b)
            tl = lanes_of(T, b)
            forward(m, rg, sg, sg.lq, sg.lv, sg.la if with_a else sg.zv, tl, 2 if given(TAU) else 1,
                    F.shape[0] > 0, None)
            if given(TAU):
                rnea_lanes(TAU, b, m, rg, sg, sg.la if with_a else sg.zv, F, fb)
            if given(QDD):
                ok = aba_lanes(QDD, b, m, rg, sg, TAU_IN, F, fb)
        if ok:
            for b1 in range(b, b + LANES):
                put_status(status, b1, K_RNEA, 0, -1)
                put_status(status, b1, K_ABA, 0, -1)
        else:
            for b1 in range(b, b + LANES):
                evaluate_state(m, record_view(mb, R[c], 0), s, Q[b1], V[b1], A[b1], TAU_IN[b1], T[b1], F,
                               b1 if F.shape[0] > 1 else 0, None, P, b1, TAU, QDD, None, None, None, None, None,
                               status)
        b += LANES
    r = record_view(mb, R[c], 0)
    for b1 in range(b, end):
        evaluate_state(m, r, s, Q[b1], V[b1], A[b1], TAU_IN[b1], T[b1], F, b1 if F.shape[0] > 1 else 0, None,
                       P, b1, TAU, QDD, None, None, None, None, None, status)


def _rnea_group(TAU, b, m, rg, sg, a, F, fb):
    rnea_forces(m, rg, sg, F, fb, a, sg.lo)
    from_lanes(TAU, b, sg.lo)


def _aba_group(QDD, b, m, rg, sg, TAU_IN, F, fb):
    to_lanes(sg.la, TAU_IN, b)
    st, j = aba_solve(m, rg, sg, sg.la, F, fb, sg.lo)
    if st != 0:
        return False
    from_lanes(QDD, b, sg.lo)
    return True


def rnea_lanes(TAU, b, m, rg, sg, a, F, fb):
    """rnea of a group into rows b.. of TAU (None: nothing)."""
    if TAU is not None:
        _rnea_group(TAU, b, m, rg, sg, a, F, fb)


@overload(rnea_lanes)
def _rnea_lanes(TAU, b, m, rg, sg, a, F, fb):
    if isinstance(TAU, types.NoneType):
        return lambda TAU, b, m, rg, sg, a, F, fb: None
    return _rnea_group


def aba_lanes(QDD, b, m, rg, sg, TAU_IN, F, fb):
    """aba of a group into rows b.. of QDD; False where some lane is singular or near it."""
    return True if QDD is None else _aba_group(QDD, b, m, rg, sg, TAU_IN, F, fb)


@overload(aba_lanes)
def _aba_lanes(QDD, b, m, rg, sg, TAU_IN, F, fb):
    if isinstance(QDD, types.NoneType):
        return lambda QDD, b, m, rg, sg, TAU_IN, F, fb: True
    return _aba_group


def runs_on_lanes(mb, per_state, full, M, FK, JT, BJ, EN):
    """Whether a batch runs in groups of LANES states (``many_lanes``): rnea and/or aba only,
    the fixed, screw and quaternion joint paths (``full`` None), pooled records and a model the
    lane kernels take."""
    return (full is None and not per_state and mb[H_LANES] != 0
            and M is None and FK is None and JT is None and BJ is None and EN is None)


# The two batch drivers: each chunk of a batch (one per row of S) in parallel.  The chunk kernels
# are called directly (a function between the loop and them is compiled again with all the code
# it calls: a dispatching layer cost the main job about 15 s) and are handed the index as an
# int64: Numba types a ``prange`` body twice, the second time with an unsigned index, which would
# compile each chunk kernel twice.  Python picks the driver (``runs_on_lanes``), so that each
# compiles only the chunk kernel it runs.
@pjit
def many(mb, R, S, per_state, full, P, Q, V, A, TAU_IN, T, F, TAU, QDD, M, FK, JT, BJ, EN, status):
    """A batch, each chunk state by state (``chunk``)."""
    nchunk = S.shape[0]
    for c in prange(nchunk):
        chunk(mb, R, S, per_state, np.int64(c), nchunk, full, P, Q, V, A, TAU_IN, T, F, TAU, QDD, M, FK, JT, BJ, EN,
              status)


@pjit
def many_lanes(mb, R, S, P, Q, V, A, TAU_IN, T, F, TAU, QDD, status):
    """A batch of rnea and/or aba, each chunk in groups of LANES states (``chunk_lanes``)."""
    nchunk = S.shape[0]
    for c in prange(nchunk):
        chunk_lanes(mb, R, S, np.int64(c), nchunk, P, Q, V, A, TAU_IN, T, F, TAU, QDD, status)
