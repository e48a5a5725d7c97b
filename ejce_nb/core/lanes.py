"""Four states at once: a number type of four lanes, for the batch kernels.

A batch is run in groups of ``LANES`` states.  Each number of the algorithms is then a
``Lanes`` value (an LLVM vector of four doubles): ``+ - * /`` and unary minus between lanes and
numbers are single vector instructions, ``np.sin``, ``np.cos`` and ``np.sqrt`` call the same
scalar functions lane by lane.  The algorithms are written once, for numbers; given lanes (their
tables laid out ``(rows, columns, LANES)``, ``layout.record_lanes``), the same code computes four
states with the same operations in the same order, so each lane equals the one-state result bit
for bit.

Comparisons of lanes are true when they hold in every lane: the algorithms test that all is well
(``if not pivot > tol: ...``), and a group where some lane is not is computed again state by state.
So a value-dependent choice between two ways of computing a result (a series near zero, say) has
no place in a path that runs on lanes: the lanes would all take one way.
``lift`` makes a constant a value of the kind of another (numbers stay numbers), ``minimum`` and
``maximum`` work lane by lane, ``get``/``put`` read and write a vector's entry (a number, or the
entry's four lanes from a ``(n, LANES)`` array).
"""
import operator

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, models, overload, register_model
from numba.np.arrayobj import make_array

from .._jit import jit

LANES = 4
_VEC = ir.VectorType(ir.DoubleType(), LANES)
_I32 = ir.IntType(32)


class Lanes(types.Type):
    """Four float64 values, one per state of a group."""

    def __init__(self):
        super().__init__(name="Lanes")


lanes_type = Lanes()


@register_model(Lanes)
class _LanesModel(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, _VEC)


_NUM = (types.Float, types.Integer, types.Boolean)


def _splat(context, builder, x, t):
    x = context.cast(builder, x, t, types.float64)
    v = ir.Constant(_VEC, ir.Undefined)
    for k in range(LANES):
        v = builder.insert_element(v, x, ir.Constant(_I32, k))
    return v


def _as_vec(context, builder, x, t):
    return x if isinstance(t, Lanes) else _splat(context, builder, x, t)


def _binary(op):
    @intrinsic
    def lane_op(typingctx, a, b):
        if not ((isinstance(a, Lanes) or isinstance(a, _NUM)) and (isinstance(b, Lanes) or isinstance(b, _NUM))):
            return None
        if not (isinstance(a, Lanes) or isinstance(b, Lanes)):
            return None

        def codegen(context, builder, sig, args):
            x = _as_vec(context, builder, args[0], sig.args[0])
            y = _as_vec(context, builder, args[1], sig.args[1])
            return getattr(builder, op)(x, y)

        return lanes_type(a, b), codegen

    return lane_op


_lane_add, _lane_sub, _lane_mul, _lane_div = (_binary(op) for op in ("fadd", "fsub", "fmul", "fdiv"))

for _op, _impl in ((operator.add, _lane_add), (operator.sub, _lane_sub), (operator.mul, _lane_mul),
                   (operator.truediv, _lane_div), (operator.iadd, _lane_add), (operator.isub, _lane_sub),
                   (operator.imul, _lane_mul), (operator.itruediv, _lane_div)):
    def _register(op, impl):
        @overload(op)
        def _ov(a, b):
            if isinstance(a, Lanes) or isinstance(b, Lanes):
                return lambda a, b: impl(a, b)
            return None
    _register(_op, _impl)


@overload(operator.neg)
def _neg(a):
    if isinstance(a, Lanes):
        return lambda a: _lane_sub(0.0, a)
    return None


@intrinsic
def _lane_cmp(typingctx, a, b, code):
    """All lanes of a <op> b, op by code: 0 <, 1 <=, 2 >, 3 >=, 4 ==, 5 !=."""
    if not isinstance(code, types.IntegerLiteral):
        return None
    ops = ("<", "<=", ">", ">=", "==", "!=")[code.literal_value]

    def codegen(context, builder, sig, args):
        x = _as_vec(context, builder, args[0], sig.args[0])
        y = _as_vec(context, builder, args[1], sig.args[1])
        # ordered comparisons: a NaN lane fails every one of them, as a NaN number does
        c = builder.fcmp_ordered(ops, x, y) if ops != "!=" else builder.fcmp_unordered(ops, x, y)
        out = builder.extract_element(c, ir.Constant(_I32, 0))
        for k in range(1, LANES):
            out = builder.and_(out, builder.extract_element(c, ir.Constant(_I32, k)))
        return out

    return types.boolean(a, b, code), codegen


for _k, _op in enumerate((operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne)):
    def _register_cmp(op, k):
        @overload(op)
        def _ov(a, b):
            if isinstance(a, Lanes) or isinstance(b, Lanes):
                return lambda a, b: _lane_cmp(a, b, k)
            return None
    _register_cmp(_op, _k)


def _unary_call(name):
    """np.<name> lane by lane: the scalar function itself, so that each lane is the number's result."""
    @intrinsic
    def lane_fn(typingctx, a):
        if not isinstance(a, Lanes):
            return None

        def codegen(context, builder, sig, args):
            fnty = ir.FunctionType(ir.DoubleType(), [ir.DoubleType()])
            fn = cgutils.get_or_insert_function(builder.module, fnty, f"llvm.{name}.f64")
            out = ir.Constant(_VEC, ir.Undefined)
            for k in range(LANES):
                e = builder.extract_element(args[0], ir.Constant(_I32, k))
                out = builder.insert_element(out, builder.call(fn, [e]), ir.Constant(_I32, k))
            return out

        return lanes_type(a), codegen

    return lane_fn


for _name in ("sin", "cos", "sqrt"):
    def _register_fn(name):
        impl = _unary_call(name)

        @overload(getattr(np, name))
        def _ov(a):
            if isinstance(a, Lanes):
                return lambda a: impl(a)
            return None
    _register_fn(_name)


@intrinsic
def _lane_select(typingctx, a, b, code):
    """Lane by lane min (code 0) or max (code 1) of a and b."""
    if not isinstance(code, types.IntegerLiteral):
        return None
    which = code.literal_value

    def codegen(context, builder, sig, args):
        x = _as_vec(context, builder, args[0], sig.args[0])
        y = _as_vec(context, builder, args[1], sig.args[1])
        c = builder.fcmp_ordered("<" if which == 0 else ">", x, y)
        return builder.select(c, x, y)

    return lanes_type(a, b, code), codegen


def minimum(a, b):
    """Lane by lane the smaller (numbers: the smaller)."""
    return min(a, b)


def maximum(a, b):
    return max(a, b)


@overload(minimum)
def _minimum(a, b):
    if isinstance(a, Lanes) or isinstance(b, Lanes):
        return lambda a, b: _lane_select(a, b, 0)
    return lambda a, b: a if a < b else b


@overload(maximum)
def _maximum(a, b):
    if isinstance(a, Lanes) or isinstance(b, Lanes):
        return lambda a, b: _lane_select(a, b, 1)
    return lambda a, b: a if a > b else b


@intrinsic
def splat(typingctx, x):
    """x in every lane."""
    if not isinstance(x, _NUM):
        return None

    def codegen(context, builder, sig, args):
        return _splat(context, builder, args[0], sig.args[0])

    return lanes_type(x), codegen


def lift(c, like):
    """The number c as a value of the kind of ``like``: lanes for lanes, else the number."""
    return c


@overload(lift)
def _lift(c, like):
    if isinstance(like, Lanes):
        return lambda c, like: splat(c)
    return lambda c, like: c


# ---------------------------------------------------------------------------- array entries
@intrinsic
def _load(typingctx, arr, off):
    """The LANES doubles of a C-contiguous array from flat entry ``off``."""
    def codegen(context, builder, sig, args):
        a = make_array(sig.args[0])(context, builder, args[0])
        p = cgutils.gep(builder, a.data, context.cast(builder, args[1], sig.args[1], types.intp))
        return builder.load(builder.bitcast(p, _VEC.as_pointer()), align=8)

    return lanes_type(arr, off), codegen


@intrinsic
def _store(typingctx, arr, off, x):
    def codegen(context, builder, sig, args):
        a = make_array(sig.args[0])(context, builder, args[0])
        p = cgutils.gep(builder, a.data, context.cast(builder, args[1], sig.args[1], types.intp))
        v = _as_vec(context, builder, args[2], sig.args[2])
        builder.store(v, builder.bitcast(p, _VEC.as_pointer()), align=8)
        return context.get_dummy_value()

    return types.void(arr, off, x), codegen


def get(a, k):
    """Entry k of a vector: a[k] of a 1-D array, the LANES values of row k of an (n, LANES) one."""
    return a[k]


def put(a, k, x):
    a[k] = x


@overload(get)
def _get(a, k):
    if isinstance(a, types.Array) and a.ndim == 2:
        return lambda a, k: _load(a, k * LANES)
    return lambda a, k: a[k]


@overload(put)
def _put(a, k, x):
    if isinstance(a, types.Array) and a.ndim == 2:
        return lambda a, k, x: _store(a, k * LANES, x)

    def impl(a, k, x):
        a[k] = x
    return impl


def is_lanes(a):
    """True for the lane layout of a table (an array with a lane axis)."""
    return False


@overload(is_lanes)
def _is_lanes(a):
    lanes = isinstance(a, types.Array) and a.ndim == 3
    return lambda a: lanes


def load_row(A, i, k):
    """Entry (i, k) of a table: A[i, k] (2-D), or its LANES values ((n, m, LANES))."""
    return A[i, k]


def store_row(A, i, k, x):
    A[i, k] = x


@overload(load_row)
def _load_row(A, i, k):
    if isinstance(A, types.Array) and A.ndim == 3:
        return lambda A, i, k: _load(A, (i * A.shape[1] + k) * LANES)
    return lambda A, i, k: A[i, k]


@overload(store_row)
def _store_row(A, i, k, x):
    if isinstance(A, types.Array) and A.ndim == 3:
        return lambda A, i, k, x: _store(A, (i * A.shape[1] + k) * LANES, x)

    def impl(A, i, k, x):
        A[i, k] = x
    return impl


def lane(x, s):
    """Lane s of a value (a number is every lane)."""
    return x


@intrinsic
def _extract(typingctx, x, s):
    def codegen(context, builder, sig, args):
        return builder.extract_element(args[0], context.cast(builder, args[1], sig.args[1], types.int32))

    return types.float64(x, s), codegen


@intrinsic
def gather(typingctx, arr, off, stride):
    """Lanes of the entries off, off + stride, ... of a C-contiguous array (flat indices)."""
    if not (isinstance(arr, types.Array) and arr.layout == "C"):
        return None

    def codegen(context, builder, sig, args):
        a = make_array(sig.args[0])(context, builder, args[0])
        o = context.cast(builder, args[1], sig.args[1], types.intp)
        st = context.cast(builder, args[2], sig.args[2], types.intp)
        v = ir.Constant(_VEC, ir.Undefined)
        for k in range(LANES):
            idx = builder.add(o, builder.mul(st, ir.Constant(o.type, k)))
            x = builder.load(cgutils.gep(builder, a.data, idx))
            v = builder.insert_element(v, x, ir.Constant(_I32, k))
        return v

    return lanes_type(arr, off, stride), codegen


@intrinsic
def pack(typingctx, a, b, c, d):
    """The four numbers a, b, c, d as the lanes of one value (LANES = 4)."""
    def codegen(context, builder, sig, args):
        v = ir.Constant(_VEC, ir.Undefined)
        for k in range(LANES):
            x = context.cast(builder, args[k], sig.args[k], types.float64)
            v = builder.insert_element(v, x, ir.Constant(_I32, k))
        return v

    return lanes_type(a, b, c, d), codegen


@overload(lane)
def _lane(x, s):
    if isinstance(x, Lanes):
        return lambda x, s: _extract(x, s)
    return lambda x, s: x


def zero_of(A):
    """0.0 as a value of the layout of the table A: lanes for a lane table, else a number."""
    return 0.0


@overload(zero_of)
def _zero_of(A):
    if isinstance(A, types.Array) and A.ndim == 3:
        return lambda A: splat(0.0)
    return lambda A: 0.0


def scalar_only(impl):
    """A joint function ``impl(m, r, s, i, q, v, t)`` of one state (a plain function, compiled
    as this overload's implementation) that, called with a group's tables (a 2-D ``q``), does
    nothing: paths the lane kernels never take (they run only models whose joints all have lane
    paths) still compile for them.  The overload hands Numba ``impl`` itself: a compiled wrapper
    calling a compiled ``impl`` would be compiled again over all of ``impl``'s code."""
    def fn(m, r, s, i, q, v, t):
        return impl(m, r, s, i, q, v, t)

    fn.__name__ = fn.__qualname__ = impl.__name__
    fn.__doc__ = impl.__doc__

    @overload(fn)
    def _ov(m, r, s, i, q, v, t):
        if isinstance(q, types.Array) and q.ndim == 2:
            return lambda m, r, s, i, q, v, t: None
        return impl

    return fn


# ---------------------------------------------------------------------------- groups of a batch
@jit
def to_lanes(dst, X, b):
    """Rows b .. b + LANES - 1 of the batch X (B, n) into the lane table dst (n, LANES)."""
    for k in range(X.shape[1]):
        for s in range(LANES):
            dst[k, s] = X[b + s, k]


@jit
def from_lanes(Y, b, src):
    """The lane table src (n, LANES) into rows b .. b + LANES - 1 of the batch Y (B, n)."""
    for k in range(Y.shape[1]):
        for s in range(LANES):
            Y[b + s, k] = src[k, s]


@jit
def lanes_of(T, b):
    """Entries b .. b + LANES - 1 of the vector T as lanes."""
    return gather(T, b, 1)
