"""Where the kernels find things: the model's tables and a state's workspace, packed in flat
buffers, and their named views inside compiled code.

A call from Python hands a kernel a handful of flat arrays: the model buffer ``mb`` (its integer
tables, then its float tables stored bit for bit), a workspace ``w`` and the state.  Passing a few
flat buffers costs a fraction of a microsecond; passing thirty named arrays, or a tuple of them,
costs microseconds.  Inside compiled code, ``model_view(mb)``, ``record_view(mb, w, off)`` and
``scratch_view(mb, w, off)`` rebuild the named tables as views (``m.body_parent``, ``r.vel``,
``s.IA``), which costs nothing: the algorithms read like their equations and never address a
buffer by number.

``mb`` starts with a header: sizes, then the offset of every table (``O_*`` slots below; float
tables count from ``mb[H_FOFF]``).  Python computes the offsets once per model (``pack_model``)
and the same constants tell the compiled views where to look.

A workspace has two parts.  The *record* holds what a computation produced for one state, tagged
with the state it belongs to (``hdr``, ``qkey``, ``vkey``, ``akey``), so that a later stage on the
same state reuses it (``ej.Data``); the *scratch* holds what only lives during one algorithm.
"""
import collections

import numba
import numpy as np
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic
from numba.np.arrayobj import make_array, populate_array

from .._jit import jit
from ..core.lanes import LANES

# ---------------------------------------------------------------------------- the header of mi
# H_LANES: 1 when every joint has a path the lane kernels take (``lanes``: batches run four
# states at a time), else 0
H_N1, H_NQ, H_NV, H_NMOT, H_NPAR, H_REC, H_SCR, H_FOFF, H_LANES = range(9)

# integer tables: (slot, name, rows)
INT_TABLES = (
    ("body_parent", "n1"),      # parent body; body_parent[0] = -1, body_parent[i] < i
    ("jnt_type", "n1"),         # joint type code (joints.codes)
    ("jnt_path", "n1"),         # how the joint is evaluated: PATH_FIXED, _SCREW, _QUAT or _JETS
    ("jnt_qadr", "n1"),         # first coordinate of the joint in q
    ("jnt_nq", "n1"),           # number of coordinates
    ("jnt_dofadr", "n1"),       # first velocity variable of the joint in v (qd, qdd, tau)
    ("jnt_nv", "n1"),           # number of velocity variables
    ("jnt_padr", "n1"),         # first entry of the joint's block in jnt_params
    ("jnt_madr", "n1"),         # first elementary motion of the joint (screw path)
    ("jnt_nmot", "n1"),         # number of elementary motions
    ("jnt_quat", "n1"),         # offset of a unit quaternion within the joint's q, or -1
    ("jnt_fn", "n1"),           # 1: some elementary motion's amount is a function (not scale * q_k)
    ("jnt_fptr", "n1"),         # user-defined joints: address of the compiled pose wrapper (0: none)
    ("mot_kind", "nmot"),       # MOT_ROT or MOT_TRANS
    ("mot_coord", "nmot"),      # k: the amount is mot_scale * q_k of the joint; -1: a function
    ("mot_fadr", "nmot"),       # where that function's terms start in jnt_params (-1: none)
)
# float tables: (name, rows, columns; 0 columns: a 1-D table)
FLOAT_TABLES = (
    ("jnt_params", "npar", 0),  # parameter blocks of the pose functions (joints.pose)
    ("jnt_Xt", "n1", 9),        # rotation of P_i in the parent's C frame, row-major
    ("jnt_pt", "n1", 3),        # origin of P_i in the parent's C frame
    ("body_mass", "n1", 0),
    ("body_hC", "n1", 3),       # mass times the centre of mass, C axes, about o_C
    ("body_IC", "n1", 9),       # rotational inertia about o_C, C axes, row-major
    ("body_cC", "n1", 3),       # centre of mass in C
    ("body_bo", "n1", 3),       # body origin in C
    ("body_Ec", "n1", 9),       # C axes in body axes (child placement rotation), row-major
    ("body_iscale", "n1", 0),   # largest diagonal entry of the body's inertia about o_C (or its mass)
    ("mot_axis", "nmot", 3),    # unit axis of each elementary motion, in the frame it moves
    ("mot_scale", "nmot", 0),   # amount per unit coordinate (mot_coord >= 0)
    ("gravity", "one", 3),
    ("dof_armature", "nv", 0),  # rotor inertia of each velocity variable, added to M's diagonal
)
# the record of one state: (name, rows, columns)
RECORD = (
    ("hdr", "one", 8),          # REC_* flags and keys below
    ("qkey", "nq", 0),          # the state the record holds
    ("vkey", "nv", 0),
    ("akey", "nv", 0),
    ("E", "n1", 9),             # X_i = [E 0; -E d^ E]: parent C frame -> C_i, E row-major
    ("d", "n1", 3),             #   d: origin of C_i in the parent's C frame
    ("S", "nv", 6),             # motion subspace, one row per velocity variable (C axes, at o_C)
    ("Rrel", "n1", 9),          # relative pose of C_i in P_i (R row-major, r)
    ("rrel", "n1", 3),
    ("vJ", "n1", 6),            # joint twist S u + sigma (C axes)
    ("cJ", "n1", 6),            # joint bias: d/dt vJ (C coordinates) - S u'
    ("mS", "nmot", 6),          # screw path: unit twist of each elementary motion (C axes)
    ("mg", "nmot", 6),          #   and its amount's gradient over the joint's coordinates
    ("vel", "n1", 6),           # body twist in C_i
    ("acc", "n1", 6),           # body spatial acceleration in C_i, gravity as a base acceleration
    ("RC", "n1", 9),            # world axes of C_i (row-major) and its world origin
    ("oC", "n1", 3),
)
REC_POS, REC_VEL, REC_ACC, REC_WORLD, REC_T, REC_GENERIC, REC_STATUS, REC_JOINT = range(8)
# the scratch of one algorithm run
SCRATCH = (
    ("f", "n1", 6),             # body forces (rnea) / bias forces p^A (aba)
    ("c", "n1", 6),             # aba: c_i = cJ_i + v_i x vJ_i
    ("IA", "n1", 21),           # articulated (aba) or composite (crba) inertias, packed symmetric
    ("sc", "n1", 0),            # aba: inertia scale of each subtree
    ("U", "nv", 6),             # aba: I^A S, one row per velocity variable
    ("Dinv", "nv", 6),          # aba: rows of D^-1
    ("uu", "nv", 0),            # aba: tau - S^T p^A
    ("W", "twelve", 6),         # two 6 x 6 matrices of scratch
    ("JP", "six", 6),           # jets path: one joint's Jacobian columns in P axes (column k = row k)
    ("zv", "nv", 0),            # zero velocities
    ("qx", "nq", 0),            # integrators: stage coordinates and velocities,
    ("vx", "nv", 0),
    ("qt", "nq", 0),            #   the state,
    ("vt", "nv", 0),
    ("KQ", "seven", "nv"),      #   the stages' tangent rates and accelerations,
    ("KV", "seven", "nv"),
    ("dq", "nv", 0),            #   a tangent increment,
    ("tq", "nv", 0),            #   the joint forces of a stage
    ("e5", "one", 8),           #   and the energies
    ("flags", "one", 8),        # flags of a one-state call: flags[0] = 1, the generic joint path
    ("uout", "one", 24),        # a user-defined joint's R, r, twist and bias (P axes)
    ("lq", "nq", 0),            # a group of states (lane layout): coordinates, velocities,
    ("lv", "nv", 0),
    ("la", "nv", 0),            #   accelerations or forces,
    ("lo", "nv", 0),            #   and the result
)

_SLOTS = {}
_slot = 9
for _name, *_ in INT_TABLES + FLOAT_TABLES + RECORD + SCRATCH:
    _SLOTS[_name] = _slot
    _slot += 1
HEADER = _slot
globals().update({"O_" + k: v for k, v in _SLOTS.items()})


def _rows(spec, sizes):
    return sizes[spec]


def _width(cols, sizes):
    c = cols[0] if cols else 1
    return sizes[c] if isinstance(c, str) else c


def _pack(tables, sizes, header, width_of, start=0):
    """Assign consecutive offsets (8-entry aligned) to ``tables``; returns the end."""
    off = start
    for name, rows, *cols in tables:
        n = _rows(rows, sizes) * max(width_of(cols, sizes), 1)
        header[_SLOTS[name]] = off
        off += -(-n // 8) * 8 + 8           # an 8-entry gap keeps tables off each other's cache lines
    return off


def sizes_of(n1, nq, nv, nmot, npar):
    return {"n1": n1, "nq": nq, "nv": nv, "nmot": nmot, "npar": npar, "one": 1, "four": 4, "six": 6,
            "seven": 7, "twelve": 12}


def pack_model(n1, nq, nv, nmot, ints, floats, lanes=False):
    """The model buffer from the tables: ``ints[name]`` and ``floats[name]`` arrays of the shapes
    above, ``lanes`` whether batches may run in groups; returns (mb, its float part as a float64
    view)."""
    npar = len(floats["jnt_params"])
    sizes = sizes_of(n1, nq, nv, nmot, npar)
    header = np.zeros(HEADER, dtype=np.int64)
    header[[H_N1, H_NQ, H_NV, H_NMOT, H_NPAR]] = (n1, nq, nv, nmot, npar)
    iend = _pack([(n, r, 1) for n, r in INT_TABLES], sizes, header, _width, start=HEADER)
    fend = _pack(FLOAT_TABLES, sizes, header, _width)
    rec = _pack(RECORD, sizes, header, _width)
    scr = _pack(SCRATCH, sizes, header, _width)
    header[H_REC] = rec
    header[H_SCR] = scr
    header[H_FOFF] = iend
    header[H_LANES] = 1 if lanes else 0
    mb = np.zeros(iend + fend, dtype=np.int64)
    mf = mb[iend:].view(np.float64)
    mb[:HEADER] = header
    for name, rows in INT_TABLES:
        a = np.asarray(ints[name], dtype=np.int64).ravel()
        mb[header[_SLOTS[name]]: header[_SLOTS[name]] + a.size] = a
    for name, rows, cols in FLOAT_TABLES:
        a = np.asarray(floats[name], dtype=np.float64).ravel()
        mf[header[_SLOTS[name]]: header[_SLOTS[name]] + a.size] = a
    return mb, mf


def table(buf, mi, name, shape):
    """A named table of a packed buffer as a numpy view of the given shape."""
    off = int(mi[_SLOTS[name]])
    n = int(np.prod(shape, dtype=np.int64))
    return buf[off:off + n].reshape(shape)


# ---------------------------------------------------------------------------- compiled views
def _view(context, builder, buf_type, buf, off, shape, strides, ret_type):
    src = make_array(buf_type)(context, builder, buf)
    out = make_array(ret_type)(context, builder)
    item = context.get_constant(types.intp, context.get_abi_sizeof(context.get_data_type(buf_type.dtype)))
    # no meminfo: a view lives only inside the kernel call, whose arguments keep the buffer alive,
    # and without one it costs no reference counting when it is handed to a function
    populate_array(out, data=cgutils.gep(builder, src.data, off), shape=cgutils.pack_array(builder, shape),
                   strides=cgutils.pack_array(builder, [builder.mul(s, item) for s in strides]),
                   itemsize=item, meminfo=None, parent=None)
    return out._getvalue()


@intrinsic
def rows(typingctx, buf, off, n, m):
    """The ``n x m`` C-contiguous view of a 1-D C-contiguous buffer starting at entry ``off``.

    No reshape checks are made (the layout above is what guarantees that it fits) and no
    reference is counted, which is what makes a view free; it must not outlive the call."""
    if not (isinstance(buf, types.Array) and buf.ndim == 1 and buf.layout == "C"):
        return None
    ret = types.Array(buf.dtype, 2, "C", readonly=not buf.mutable)

    def codegen(context, builder, sig, args):
        o, nn, mm = (context.cast(builder, a, t, types.intp) for a, t in zip(args[1:], sig.args[1:]))
        one = context.get_constant(types.intp, 1)
        return _view(context, builder, sig.args[0], args[0], o, [nn, mm], [mm, one], sig.return_type)

    return ret(buf, off, n, m), codegen


@intrinsic
def vec(typingctx, buf, off, n):
    """The ``n`` entries of a 1-D C-contiguous buffer from ``off`` (as ``rows``, one axis)."""
    if not (isinstance(buf, types.Array) and buf.ndim == 1 and buf.layout == "C"):
        return None
    ret = types.Array(buf.dtype, 1, "C", readonly=not buf.mutable)

    def codegen(context, builder, sig, args):
        o, nn = (context.cast(builder, a, t, types.intp) for a, t in zip(args[1:], sig.args[1:]))
        one = context.get_constant(types.intp, 1)
        return _view(context, builder, sig.args[0], args[0], o, [nn], [one], sig.return_type)

    return ret(buf, off, n), codegen


@intrinsic
def rows3(typingctx, buf, off, n, m):
    """The ``n x m x LANES`` C-contiguous view of a 1-D C-contiguous buffer from entry ``off``:
    a table of the lane layout (``record_lanes``); as ``rows``, free and unchecked."""
    if not (isinstance(buf, types.Array) and buf.ndim == 1 and buf.layout == "C"):
        return None
    ret = types.Array(buf.dtype, 3, "C", readonly=not buf.mutable)

    def codegen(context, builder, sig, args):
        o, nn, mm = (context.cast(builder, a, t, types.intp) for a, t in zip(args[1:], sig.args[1:]))
        one = context.get_constant(types.intp, 1)
        lanes = context.get_constant(types.intp, LANES)
        return _view(context, builder, sig.args[0], args[0], o, [nn, mm, lanes],
                     [builder.mul(mm, lanes), lanes, one], sig.return_type)

    return ret(buf, off, n, m), codegen


if numba.config.DISABLE_JIT:
    def rows(buf, off, n, m):       # noqa: F811  (the same views, without the compiler)
        return buf[off:off + n * m].reshape(n, m)

    def rows3(buf, off, n, m):      # noqa: F811
        return buf[off:off + n * m * LANES].reshape(n, m, LANES)

    def vec(buf, off, n):           # noqa: F811
        return buf[off:off + n]


ModelView = collections.namedtuple("ModelView", [n for n, _ in INT_TABLES] + [n for n, *_ in FLOAT_TABLES])
Record = collections.namedtuple("Record", [n for n, *_ in RECORD])
Scratch = collections.namedtuple("Scratch", [n for n, *_ in SCRATCH])


@jit
def model_view(mb):
    mi = mb
    mf = vec(mb, mb[H_FOFF], mb.shape[0] - mb[H_FOFF]).view(np.float64)
    n1 = mi[H_N1]
    nm = mi[H_NMOT]
    return ModelView(
        vec(mi, mi[O_body_parent], n1),
        vec(mi, mi[O_jnt_type], n1),
        vec(mi, mi[O_jnt_path], n1),
        vec(mi, mi[O_jnt_qadr], n1),
        vec(mi, mi[O_jnt_nq], n1),
        vec(mi, mi[O_jnt_dofadr], n1),
        vec(mi, mi[O_jnt_nv], n1),
        vec(mi, mi[O_jnt_padr], n1),
        vec(mi, mi[O_jnt_madr], n1),
        vec(mi, mi[O_jnt_nmot], n1),
        vec(mi, mi[O_jnt_quat], n1),
        vec(mi, mi[O_jnt_fn], n1),
        vec(mi, mi[O_jnt_fptr], n1),
        vec(mi, mi[O_mot_kind], nm),
        vec(mi, mi[O_mot_coord], nm),
        vec(mi, mi[O_mot_fadr], nm),
        vec(mf, mi[O_jnt_params], mi[H_NPAR]),
        rows(mf, mi[O_jnt_Xt], n1, 9),
        rows(mf, mi[O_jnt_pt], n1, 3),
        vec(mf, mi[O_body_mass], n1),
        rows(mf, mi[O_body_hC], n1, 3),
        rows(mf, mi[O_body_IC], n1, 9),
        rows(mf, mi[O_body_cC], n1, 3),
        rows(mf, mi[O_body_bo], n1, 3),
        rows(mf, mi[O_body_Ec], n1, 9),
        vec(mf, mi[O_body_iscale], n1),
        rows(mf, mi[O_mot_axis], nm, 3),
        vec(mf, mi[O_mot_scale], nm),
        vec(mf, mi[O_gravity], 3),
        vec(mf, mi[O_dof_armature], mi[H_NV]),
    )


@jit
def record_view(mi, w, off):
    """The record of one state in ``w`` starting at ``off``."""
    n1 = mi[H_N1]
    nq = mi[H_NQ]
    nv = mi[H_NV]
    nm = mi[H_NMOT]
    return Record(
        vec(w, off + mi[O_hdr], 8),
        vec(w, off + mi[O_qkey], nq),
        vec(w, off + mi[O_vkey], nv),
        vec(w, off + mi[O_akey], nv),
        rows(w, off + mi[O_E], n1, 9),
        rows(w, off + mi[O_d], n1, 3),
        rows(w, off + mi[O_S], nv, 6),
        rows(w, off + mi[O_Rrel], n1, 9),
        rows(w, off + mi[O_rrel], n1, 3),
        rows(w, off + mi[O_vJ], n1, 6),
        rows(w, off + mi[O_cJ], n1, 6),
        rows(w, off + mi[O_mS], nm, 6),
        rows(w, off + mi[O_mg], nm, 6),
        rows(w, off + mi[O_vel], n1, 6),
        rows(w, off + mi[O_acc], n1, 6),
        rows(w, off + mi[O_RC], n1, 9),
        rows(w, off + mi[O_oC], n1, 3),
    )


@jit
def scratch_view(mi, w, off):
    """The scratch of one algorithm run in ``w`` starting at ``off``."""
    n1 = mi[H_N1]
    nq = mi[H_NQ]
    nv = mi[H_NV]
    return Scratch(
        rows(w, off + mi[O_f], n1, 6),
        rows(w, off + mi[O_c], n1, 6),
        rows(w, off + mi[O_IA], n1, 21),
        vec(w, off + mi[O_sc], n1),
        rows(w, off + mi[O_U], nv, 6),
        rows(w, off + mi[O_Dinv], nv, 6),
        vec(w, off + mi[O_uu], nv),
        rows(w, off + mi[O_W], 12, 6),
        rows(w, off + mi[O_JP], 6, 6),
        vec(w, off + mi[O_zv], nv),
        vec(w, off + mi[O_qx], nq),
        vec(w, off + mi[O_vx], nv),
        vec(w, off + mi[O_qt], nq),
        vec(w, off + mi[O_vt], nv),
        rows(w, off + mi[O_KQ], 7, nv),
        rows(w, off + mi[O_KV], 7, nv),
        vec(w, off + mi[O_dq], nv),
        vec(w, off + mi[O_tq], nv),
        vec(w, off + mi[O_e5], 8),
        vec(w, off + mi[O_flags], 8),
        vec(w, off + mi[O_uout], 24),
        vec(w, off + mi[O_lq], nq),
        vec(w, off + mi[O_lv], nv),
        vec(w, off + mi[O_la], nv),
        vec(w, off + mi[O_lo], nv),
    )


@jit
def record_lanes(mb, w, off):
    """The record of a group of LANES states in the lane layout, in ``w`` from ``off``: every
    table of ``record_view`` with a lane axis last, at LANES times its offset there (the header
    stays one row: a group's records are never reused)."""
    n1 = mb[H_N1]
    nq = mb[H_NQ]
    nv = mb[H_NV]
    nm = mb[H_NMOT]
    L = LANES
    return Record(
        vec(w, off + L * mb[O_hdr], 8),
        rows(w, off + L * mb[O_qkey], nq, L),
        rows(w, off + L * mb[O_vkey], nv, L),
        rows(w, off + L * mb[O_akey], nv, L),
        rows3(w, off + L * mb[O_E], n1, 9),
        rows3(w, off + L * mb[O_d], n1, 3),
        rows3(w, off + L * mb[O_S], nv, 6),
        rows3(w, off + L * mb[O_Rrel], n1, 9),
        rows3(w, off + L * mb[O_rrel], n1, 3),
        rows3(w, off + L * mb[O_vJ], n1, 6),
        rows3(w, off + L * mb[O_cJ], n1, 6),
        rows3(w, off + L * mb[O_mS], nm, 6),
        rows3(w, off + L * mb[O_mg], nm, 6),
        rows3(w, off + L * mb[O_vel], n1, 6),
        rows3(w, off + L * mb[O_acc], n1, 6),
        rows3(w, off + L * mb[O_RC], n1, 9),
        rows3(w, off + L * mb[O_oC], n1, 3),
    )


@jit
def scratch_lanes(mb, w, off):
    """The scratch of a group of LANES states in the lane layout (as ``record_lanes``); the
    subtrees' inertia scales depend on the model only and stay one row."""
    n1 = mb[H_N1]
    nq = mb[H_NQ]
    nv = mb[H_NV]
    L = LANES
    return Scratch(
        rows3(w, off + L * mb[O_f], n1, 6),
        rows3(w, off + L * mb[O_c], n1, 6),
        rows3(w, off + L * mb[O_IA], n1, 21),
        vec(w, off + L * mb[O_sc], n1),
        rows3(w, off + L * mb[O_U], nv, 6),
        rows3(w, off + L * mb[O_Dinv], nv, 6),
        rows(w, off + L * mb[O_uu], nv, L),
        rows3(w, off + L * mb[O_W], 12, 6),
        rows3(w, off + L * mb[O_JP], 6, 6),
        rows(w, off + L * mb[O_zv], nv, L),
        rows(w, off + L * mb[O_qx], nq, L),
        rows(w, off + L * mb[O_vx], nv, L),
        rows(w, off + L * mb[O_qt], nq, L),
        rows(w, off + L * mb[O_vt], nv, L),
        rows3(w, off + L * mb[O_KQ], 7, nv),
        rows3(w, off + L * mb[O_KV], 7, nv),
        rows(w, off + L * mb[O_dq], nv, L),
        rows(w, off + L * mb[O_tq], nv, L),
        rows(w, off + L * mb[O_e5], 8, L),
        vec(w, off + L * mb[O_flags], 8),
        vec(w, off + L * mb[O_uout], 24),
        rows(w, off + L * mb[O_lq], nq, L),
        rows(w, off + L * mb[O_lv], nv, L),
        rows(w, off + L * mb[O_la], nv, L),
        rows(w, off + L * mb[O_lo], nv, L),
    )


def lane_size(mb):
    """Entries of a group's workspace (record and scratch, lane layout); 0 for a model whose
    batches run state by state."""
    return LANES * int(mb[H_REC] + mb[H_SCR]) if mb[H_LANES] else 0


@jit
def group_views(mb, w, off):
    """Record and scratch of a group of LANES states in ``w`` from ``off``, with its header
    cleared: a group starts from nothing."""
    r = record_lanes(mb, w, off)
    for k in range(8):
        r.hdr[k] = 0.0
    return r, scratch_lanes(mb, w, off + LANES * mb[H_REC])


@jit
def views(mb, w):
    """Model, record and scratch of a one-state workspace (record first, then scratch)."""
    return model_view(mb), record_view(mb, w, 0), scratch_view(mb, w, mb[H_REC])
