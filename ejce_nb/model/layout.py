"""Where the kernels find things: the model's tables and a state's workspace, packed in flat
buffers, and their named views inside compiled code.

Every table is declared once, in ``MODEL``, ``RECORD`` or ``SCRATCH`` below: its name, shape
(numbers and the sizes of ``SIZES``), dtype and what it holds.  Everything else is made from
those declarations: the offsets (``pack_model``), the numpy views of Python (``table``,
``model_tables``, ``record_tables``, the ``Model`` attributes, ``ej.Data``'s views) and the
compiled views the kernels use (``model_view(mb)``, ``record_view(mb, w, off)``,
``scratch_view(mb, w, off)`` and their lane-layout forms ``record_lanes``, ``scratch_lanes``,
generated from the declarations into ``model/views.py`` by ``python -m ejce_nb.model.layout``).  Adding a
table is one line in its declaration; the kernels then read it as ``m.name``, ``r.name`` or
``s.name``.

A call from Python hands a kernel a handful of flat arrays: the model buffer ``mb`` (its integer
tables, then its float tables stored bit for bit), a workspace ``w`` and the state.  Passing a few
flat buffers costs a fraction of a microsecond; passing thirty named arrays, or a tuple of them,
costs microseconds.  Inside compiled code the views rebuild the named tables (``m.body_parent``,
``r.vel``, ``s.IA``), which costs nothing: the algorithms read like their equations and never
address a buffer by number.

``mb`` starts with a header: the workspace sizes, the sizes of ``SIZES``, then the offset of every
table (``SLOT``; float tables count from ``mb[H_FOFF]``).  Python computes the offsets once per
model (``pack_model``) and the generated views read them there.

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

# ---------------------------------------------------------------------------- the declarations
class Table(collections.namedtuple("Table", "name shape dtype doc lanes")):
    """One table of a packed buffer: its ``name`` (the field of the views), its ``shape`` (numbers
    and sizes of ``SIZES``; a table of two or more axes is seen by the kernels as rows of the
    product of the trailing ones, e.g. ``(n1, 3, 3)`` as ``n1 x 9``, row-major), its ``dtype``
    ("i8" or "f8"), what it holds (``doc``) and, for a workspace table, whether a group of states
    in the lane layout has one per state (``lanes``: a lane axis last) or shares one."""


def T(name, shape, dtype, doc, lanes=True):
    return Table(name, tuple(shape) if isinstance(shape, tuple) else (shape,), dtype, doc, lanes)


# the sizes a model states in its header, in this order: bodies + 1, coordinates, velocities,
# elementary motions (screw path), entries of jnt_params
SIZES = ("n1", "nq", "nv", "nmot", "npar")

# the model's tables (``Model`` attributes of the same names, read-only views of ``mb``)
MODEL = (
    T("body_parent", "n1", "i8", "parent body; body_parent[0] = -1, body_parent[i] < i"),
    T("jnt_type", "n1", "i8", "joint type code (joints.codes)"),
    T("jnt_path", "n1", "i8", "how the joint is evaluated: PATH_FIXED, _SCREW, _QUAT, _JETS or _USER"),
    T("jnt_qadr", "n1", "i8", "first coordinate of the joint in q"),
    T("jnt_nq", "n1", "i8", "number of coordinates of the joint"),
    T("jnt_dofadr", "n1", "i8", "first velocity variable of the joint in v (qd, qdd, tau)"),
    T("jnt_nv", "n1", "i8", "number of velocity variables of the joint"),
    T("jnt_padr", "n1", "i8", "first entry of the joint's block in jnt_params"),
    T("jnt_madr", "n1", "i8", "first elementary motion of the joint (screw path)"),
    T("jnt_nmot", "n1", "i8", "number of elementary motions of the joint"),
    T("jnt_quat", "n1", "i8", "offset of a unit quaternion within the joint's q, or -1"),
    T("jnt_fn", "n1", "i8", "1: some elementary motion's amount is a function (not scale * q_k)"),
    T("jnt_Xid", "n1", "i8", "1: jnt_Xt is the identity (the joint frame P_i parallel to the parent's C)"),
    T("jnt_fptr", "n1", "i8", "user-defined joints: address of the compiled pose wrapper (0: none)"),
    T("mot_kind", "nmot", "i8", "MOT_ROT or MOT_TRANS"),
    T("mot_coord", "nmot", "i8", "k: the amount is mot_scale * q_k of the joint; -1: a function"),
    T("mot_fadr", "nmot", "i8", "where that function's terms start in jnt_params (-1: none)"),
    T("jnt_params", "npar", "f8", "parameter blocks of the pose functions (joints.pose)"),
    T("jnt_Xt", ("n1", 3, 3), "f8", "rotation of P_i in the parent's C frame"),
    T("jnt_pt", ("n1", 3), "f8", "origin of P_i in the parent's C frame"),
    T("body_mass", "n1", "f8", "mass of the body"),
    T("body_hC", ("n1", 3), "f8", "mass times the centre of mass, C axes, about o_C"),
    T("body_IC", ("n1", 3, 3), "f8", "rotational inertia about o_C, C axes"),
    T("body_cC", ("n1", 3), "f8", "centre of mass in C"),
    T("body_bo", ("n1", 3), "f8", "body origin in C"),
    T("body_Ec", ("n1", 3, 3), "f8", "C axes in body axes (child placement rotation)"),
    T("body_iscale", "n1", "f8", "largest diagonal entry of the body's inertia about o_C (or its mass)"),
    T("mot_axis", ("nmot", 3), "f8", "unit axis of each elementary motion, in the frame it moves"),
    T("mot_scale", "nmot", "f8", "amount per unit coordinate (mot_coord >= 0)"),
    T("gravity", 3, "f8", "world-frame gravitational acceleration"),
    T("dof_armature", "nv", "f8", "rotor inertia of each velocity variable, added to M's diagonal"),
)

# the record of one state: what a computation produced, tagged with the state (``ej.Data``)
RECORD = (
    T("hdr", 8, "f8", "REC_* flags and keys below", lanes=False),
    T("qkey", "nq", "f8", "the coordinates the record holds"),
    T("vkey", "nv", "f8", "the velocities the record holds"),
    T("akey", "nv", "f8", "the accelerations the record holds"),
    T("E", ("n1", 3, 3), "f8", "X_i = [E 0; -E d^ E]: parent C frame -> C_i"),
    T("d", ("n1", 3), "f8", "origin of C_i in the parent's C frame"),
    T("S", ("nv", 6), "f8", "motion subspace, one row per velocity variable (C axes, at o_C)"),
    T("Rrel", ("n1", 3, 3), "f8", "rotation of C_i in P_i"),
    T("rrel", ("n1", 3), "f8", "origin of C_i in P_i"),
    T("vJ", ("n1", 6), "f8", "joint twist S u + sigma (C axes)"),
    T("cJ", ("n1", 6), "f8", "joint bias: d/dt vJ (C coordinates) - S u'"),
    T("mS", ("nmot", 6), "f8", "screw path: unit twist of each elementary motion (C axes)"),
    T("mg", ("nmot", 6), "f8", "screw path: gradient of each motion's amount over the joint's coordinates"),
    T("mh", "nmot", "f8", "screw path: second derivative of a motion's amount that is one Poly or Spline "
      "term of a coordinate"),
    T("vel", ("n1", 6), "f8", "body twist in C_i"),
    T("acc", ("n1", 6), "f8", "body spatial acceleration in C_i, gravity as a base acceleration"),
    T("RC", ("n1", 3, 3), "f8", "world axes of C_i"),
    T("oC", ("n1", 3), "f8", "world origin of C_i"),
)
# the entries of ``hdr``: which stages the record holds, and for which state
REC_POS, REC_VEL, REC_ACC, REC_WORLD, REC_T, REC_GENERIC, REC_STATUS, REC_JOINT = range(8)

# the scratch of one algorithm run
SCRATCH = (
    T("f", ("n1", 6), "f8", "body forces (rnea) / bias forces p^A (aba)"),
    T("c", ("n1", 6), "f8", "aba: c_i = cJ_i + v_i x vJ_i"),
    T("IA", ("n1", 21), "f8", "articulated (aba) or composite (crba) inertias, packed symmetric"),
    T("sc", "n1", "f8", "aba: inertia scale of each subtree (the model's alone: one row)", lanes=False),
    T("U", ("nv", 6), "f8", "aba: I^A S, one row per velocity variable"),
    T("Dinv", ("nv", 6), "f8", "aba: rows of D^-1"),
    T("uu", "nv", "f8", "aba: tau - S^T p^A"),
    T("W", (12, 6), "f8", "two 6 x 6 matrices of scratch"),
    T("JP", (6, 6), "f8", "jets path: one joint's Jacobian columns in P axes (column k = row k)"),
    T("zv", "nv", "f8", "zero velocities"),
    T("qx", "nq", "f8", "integrators: stage coordinates"),
    T("vx", "nv", "f8", "integrators: stage velocities"),
    T("qt", "nq", "f8", "integrators: the state's coordinates"),
    T("vt", "nv", "f8", "integrators: the state's velocities"),
    T("KQ", (7, "nv"), "f8", "integrators: the stages' tangent rates"),
    T("KV", (7, "nv"), "f8", "integrators: the stages' accelerations"),
    T("dq", "nv", "f8", "integrators: a tangent increment"),
    T("tq", "nv", "f8", "integrators: the joint forces of a stage"),
    T("e5", 8, "f8", "integrators: the energies"),
    T("flags", 8, "f8", "flags of a one-state call: flags[0] = 1, the generic joint path", lanes=False),
    T("uout", 24, "f8", "a user-defined joint's R, r, twist and bias (P axes)", lanes=False),
    T("lq", "nq", "f8", "a group of states (lane layout): coordinates"),
    T("lv", "nv", "f8", "a group of states: velocities"),
    T("la", "nv", "f8", "a group of states: accelerations or forces"),
    T("lo", "nv", "f8", "a group of states: the result"),
)

# ---------------------------------------------------------------------------- the header of mb
# H_REC, H_SCR: entries of a record and of a scratch; H_FOFF: where the float tables start;
# H_LANES: 1 when every joint has a path the lane kernels take (``lanes``: batches run four
# states at a time), else 0; then the sizes (``SIZES``), then the offset of every table
H_REC, H_SCR, H_FOFF, H_LANES = range(4)
H_SIZE = {s: 4 + k for k, s in enumerate(SIZES)}
H_N1, H_NQ, H_NV, H_NMOT, H_NPAR = (H_SIZE[s] for s in ("n1", "nq", "nv", "nmot", "npar"))
SLOT = {t.name: 4 + len(SIZES) + k for k, t in enumerate(MODEL + RECORD + SCRATCH)}
HEADER = 4 + len(SIZES) + len(SLOT)


def _check_declarations():
    seen = set()
    for t in MODEL + RECORD + SCRATCH:
        assert t.name not in seen and t.name.isidentifier(), t.name
        assert t.dtype in ("i8", "f8") and (t.dtype == "f8" or t in MODEL), t.name
        assert all(isinstance(n, int) or n in SIZES for n in t.shape), t.name
        seen.add(t.name)


_check_declarations()


def shape_of(t, sizes):
    """The shape of table ``t`` for the sizes ``sizes`` (a mapping, or a header)."""
    get = sizes.__getitem__ if isinstance(sizes, dict) else (lambda s: int(sizes[H_SIZE[s]]))
    return tuple(n if isinstance(n, int) else get(n) for n in t.shape)


def _pack(tables, sizes, header, start=0):
    """Assign consecutive offsets (8-entry aligned) to ``tables``; returns the end."""
    off = start
    for t in tables:
        n = int(np.prod(shape_of(t, sizes), dtype=np.int64))
        header[SLOT[t.name]] = off
        off += -(-n // 8) * 8 + 8           # an 8-entry gap keeps tables off each other's cache lines
    return off


def pack_model(sizes, tables, lanes=False):
    """The model buffer from ``sizes`` (``SIZES`` -> int) and ``tables`` (each table of ``MODEL``
    by name, as arrays of its shape); ``lanes``: whether batches may run in groups.  Returns
    (mb, its float part as a float64 view)."""
    header = np.zeros(HEADER, dtype=np.int64)
    for s in SIZES:
        header[H_SIZE[s]] = sizes[s]
    ints = [t for t in MODEL if t.dtype == "i8"]
    floats = [t for t in MODEL if t.dtype == "f8"]
    iend = _pack(ints, sizes, header, start=HEADER)
    fend = _pack(floats, sizes, header)
    header[H_REC] = _pack(RECORD, sizes, header)
    header[H_SCR] = _pack(SCRATCH, sizes, header)
    header[H_FOFF] = iend
    header[H_LANES] = 1 if lanes else 0
    mb = np.zeros(iend + fend, dtype=np.int64)
    mf = mb[iend:].view(np.float64)
    mb[:HEADER] = header
    for group, buf, dt in ((ints, mb, np.int64), (floats, mf, np.float64)):
        for t in group:
            a = np.asarray(tables[t.name], dtype=dt).ravel()
            n = int(np.prod(shape_of(t, sizes), dtype=np.int64))
            if a.size != n:
                raise ValueError(f"model table {t.name}: {a.size} entries for shape {shape_of(t, sizes)}")
            buf[header[SLOT[t.name]]: header[SLOT[t.name]] + n] = a
    return mb, mf


def sizes_of(mb):
    """The sizes (``SIZES``) a model buffer states."""
    return {s: int(mb[H_SIZE[s]]) for s in SIZES}


def table(buf, mb, name, shape=None, off=0):
    """The table ``name`` of a packed buffer (``mb`` itself, its float part, or a workspace whose
    record starts at ``off``) as a numpy view, of its declared shape unless ``shape`` is given."""
    t = _BY_NAME[name]
    shape = shape_of(t, mb) if shape is None else shape
    start = off + int(mb[SLOT[name]])
    n = int(np.prod(shape, dtype=np.int64))
    return buf[start:start + n].reshape(shape)


def model_tables(mb, mf):
    """{name: numpy view} of every table of ``MODEL`` in a model buffer."""
    return {t.name: table(mb if t.dtype == "i8" else mf, mb, t.name) for t in MODEL}


def record_tables(mb, w, off=0):
    """{name: numpy view} of every table of ``RECORD`` of the record at ``off`` of ``w``."""
    return {t.name: table(w, mb, t.name, off=off) for t in RECORD}


_BY_NAME = {t.name: t for t in MODEL + RECORD + SCRATCH}


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


def _typed(buf, ndim):
    """The type of an ``ndim``-axis view of ``buf``, or None where ``buf`` is no 1-D C array."""
    if not (isinstance(buf, types.Array) and buf.ndim == 1 and buf.layout == "C"):
        return None
    return types.Array(buf.dtype, ndim, "C", readonly=not buf.mutable)


def _codegen(shape_strides):
    """The code of a view: ``shape_strides(context, builder, dims)`` gives its shape and strides
    (in entries) from the integer arguments after the offset."""
    def codegen(context, builder, sig, args):
        o, *dims = (context.cast(builder, a, t, types.intp) for a, t in zip(args[1:], sig.args[1:]))
        shape, strides = shape_strides(context, builder, dims)
        return _view(context, builder, sig.args[0], args[0], o, shape, strides, sig.return_type)
    return codegen


def _one(context):
    return context.get_constant(types.intp, 1)


@intrinsic
def rows(typingctx, buf, off, n, m):
    """The ``n x m`` C-contiguous view of a 1-D C-contiguous buffer starting at entry ``off``.

    No reshape checks are made (the layout above is what guarantees that it fits) and no
    reference is counted, which is what makes a view free; it must not outlive the call."""
    ret = _typed(buf, 2)
    return None if ret is None else (ret(buf, off, n, m), _codegen(
        lambda c, b, d: (d, [d[1], _one(c)])))


@intrinsic
def vec(typingctx, buf, off, n):
    """The ``n`` entries of a 1-D C-contiguous buffer from ``off`` (as ``rows``, one axis)."""
    ret = _typed(buf, 1)
    return None if ret is None else (ret(buf, off, n), _codegen(lambda c, b, d: (d, [_one(c)])))


@intrinsic
def rows3(typingctx, buf, off, n, m):
    """The ``n x m x LANES`` C-contiguous view of a 1-D C-contiguous buffer from entry ``off``:
    a table of the lane layout (``record_lanes``); as ``rows``, free and unchecked."""
    ret = _typed(buf, 3)

    def shape_strides(c, b, d):
        lanes = c.get_constant(types.intp, LANES)
        return d + [lanes], [b.mul(d[1], lanes), lanes, _one(c)]
    return None if ret is None else (ret(buf, off, n, m), _codegen(shape_strides))


if numba.config.DISABLE_JIT:
    def rows(buf, off, n, m):       # noqa: F811  (the same views, without the compiler)
        return buf[off:off + n * m].reshape(n, m)

    def rows3(buf, off, n, m):      # noqa: F811
        return buf[off:off + n * m * LANES].reshape(n, m, LANES)

    def vec(buf, off, n):           # noqa: F811
        return buf[off:off + n]


# ---------------------------------------------------------------------------- generated views
ModelView = collections.namedtuple("ModelView", [t.name for t in MODEL])
Record = collections.namedtuple("Record", [t.name for t in RECORD])
Scratch = collections.namedtuple("Scratch", [t.name for t in SCRATCH])


def _dims(t):
    """The kernel view's dimensions of ``t``: (rows,) or (rows, product of the other axes), as
    source text (a size is the local variable of its name)."""
    first, rest = t.shape[0], t.shape[1:]
    if not rest:
        return [str(first)]
    num = int(np.prod([n for n in rest if isinstance(n, int)], dtype=np.int64))
    syms = [n for n in rest if not isinstance(n, int)]
    return [str(first), " * ".join(([str(num)] if num != 1 or not syms else []) + syms)]


def _single(t, buf, off):
    d = _dims(t)
    return f"vec({buf}, {off}, {d[0]})" if len(d) == 1 else f"rows({buf}, {off}, {d[0]}, {d[1]})"


def _grouped(t, buf, off):
    """A table in the lane layout: a lane axis last, or one row shared by the group."""
    d = _dims(t)
    if not t.lanes:
        return f"vec({buf}, {off}, {' * '.join(d)})"
    return f"rows({buf}, {off}, {d[0]}, LANES)" if len(d) == 1 else f"rows3({buf}, {off}, {d[0]}, {d[1]})"


def _source(name, args, doc, cls, tables, view, mi="mb"):
    lines = [f"def {name}({', '.join(args)}):", f'    """{doc}"""']
    lines += [f"    {s} = {mi}[{H_SIZE[s]}]" for s in SIZES]
    fields = [f"        {view(t)}," for t in tables]
    return "\n".join(lines + [f"    return {cls}("] + fields + ["    )", ""])


_SOURCES = (
    _source("model_view", ["mb"], "The model's tables (``MODEL``) in its buffer.", "ModelView", MODEL,
            lambda t: _single(t, "mb" if t.dtype == "i8" else "mf", f"mb[{SLOT[t.name]}]"))
    .replace("    return", f"    mf = vec(mb, mb[{H_FOFF}], mb.shape[0] - mb[{H_FOFF}]).view(np.float64)\n    return"),
    _source("record_view", ["mi", "w", "off"], "The record (``RECORD``) of one state in ``w`` from ``off``.",
            "Record", RECORD, lambda t: _single(t, "w", f"off + mi[{SLOT[t.name]}]"), mi="mi"),
    _source("scratch_view", ["mi", "w", "off"], "The scratch (``SCRATCH``) of one algorithm run in ``w`` "
            "from ``off``.", "Scratch", SCRATCH, lambda t: _single(t, "w", f"off + mi[{SLOT[t.name]}]"), mi="mi"),
    _source("record_lanes", ["mb", "w", "off"], "The record of a group of LANES states in the lane layout, in "
            "``w`` from ``off``: every table with a lane axis last, at LANES times its offset (the header "
            "stays one row: a group's records are never reused).", "Record", RECORD,
            lambda t: _grouped(t, "w", f"off + LANES * mb[{SLOT[t.name]}]")),
    _source("scratch_lanes", ["mb", "w", "off"], "The scratch of a group of LANES states in the lane layout "
            "(as ``record_lanes``); the tables declared ``lanes=False`` stay one row.", "Scratch", SCRATCH,
            lambda t: _grouped(t, "w", f"off + LANES * mb[{SLOT[t.name]}]")),
)
GENERATED = "\n\n".join(_SOURCES)


VIEWS_HEADER = '''"""The compiled views of the packed buffers (``layout``): generated from the declarations of
``layout.MODEL``, ``RECORD`` and ``SCRATCH`` by ``python -m ejce_nb.model.layout``; do not edit (a test
checks that this file is what the declarations give).  Each is inlined by LLVM where it is called,
so a kernel keeps only the tables it reads."""
import numpy as np

from .._jit import jit
from ..core.lanes import LANES
from .layout import ModelView, Record, Scratch, rows, rows3, vec

'''


def views_source():
    """The text of ``model/views.py``: the generated views, each a kernel inlined by LLVM (a file of
    their own, so that Numba caches them like every other kernel)."""
    body = GENERATED.replace("\ndef ", "\n@jit(forceinline=True)\ndef ")
    return VIEWS_HEADER + "\n" + "@jit(forceinline=True)\n" + body.rstrip() + "\n"


def write_views():
    """Write ``model/views.py`` from the declarations (after a table is added or changed)."""
    import os

    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "views.py"), "w") as f:
        f.write(views_source())


from .views import model_view, record_view, scratch_view, record_lanes, scratch_lanes  # noqa: E402


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


@jit(forceinline=True)
def views(mb, w):
    """Model, record and scratch of a one-state workspace (record first, then scratch); inlined
    where it is called, so that only the tables the caller reads are made (a call would build
    and copy all of them)."""
    return model_view(mb), record_view(mb, w, 0), scratch_view(mb, w, mb[H_REC])


if __name__ == "__main__":
    write_views()
