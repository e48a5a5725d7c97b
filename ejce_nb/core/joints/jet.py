"""Jets as a Numba type with ordinary arithmetic, for the pose functions users write.

A ``Jet(n)`` carries one scalar along the motion as (value, d/ds, d2/ds2, d/du_0 .. d/du_{n-1}):
the same truncated Taylor arithmetic as ``ejce_nb.jets`` (which the built-in pose functions use on
plain tuples), with ``n`` the joint's number of velocity variables, so that a one-coordinate
joint carries four numbers, not nine.  ``+ - * /``, unary minus, integer and real powers, ``abs``
and comparisons (on the values) work between jets and numbers, so a pose function written with
ordinary arithmetic and the functions of ``ejce_nb.jmath`` compiles for jets unchanged.

Every operation is generated as LLVM code for the jet's members (``intrinsic``): no loop, no
allocation, nothing but the floating-point operations themselves.
"""
import operator

from llvmlite import ir
from numba import types
from numba.extending import intrinsic, models, overload, register_model


class Jet(types.Type):
    """Value, first and second derivative along the motion, and ``n`` partial derivatives."""

    def __init__(self, n):
        self.n = int(n)
        super().__init__(name=f"Jet({self.n})")

    @property
    def size(self):
        return 3 + self.n


@register_model(Jet)
class _JetModel(models.StructModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, [(f"c{k}", types.float64) for k in range(fe_type.size)])


_NUM = (types.Float, types.Integer, types.Boolean)


def _num(t):
    return isinstance(t, _NUM)


def _parts(builder, v, n):
    return [builder.extract_value(v, k) for k in range(n)]


def _build(context, builder, jet_type, vals):
    out = ir.Constant(context.get_value_type(jet_type), ir.Undefined)
    for k, x in enumerate(vals):
        out = builder.insert_value(out, x, k)
    return out


def _float(context, builder, v, t):
    return context.cast(builder, v, t, types.float64)


# ---------------------------------------------------------------------------- construction
@intrinsic
def jet_from(typingctx, parts, n):
    """A Jet(n) from a tuple of 3 + n floats (``n`` a literal)."""
    if not isinstance(n, types.IntegerLiteral) or not isinstance(parts, types.BaseTuple):
        return None
    jt = Jet(n.literal_value)
    if len(parts) != jt.size:
        return None

    def codegen(context, builder, sig, args):
        vals = [_float(context, builder, builder.extract_value(args[0], k), t)
                for k, t in enumerate(sig.args[0])]
        return _build(context, builder, jt, vals)

    return jt(parts, n), codegen


@intrinsic
def jet_const(typingctx, c, like):
    """The constant c as a jet of the kind of ``like``."""
    if not (_num(c) and isinstance(like, Jet)):
        return None

    def codegen(context, builder, sig, args):
        zero = ir.Constant(ir.DoubleType(), 0.0)
        return _build(context, builder, sig.return_type,
                      [_float(context, builder, args[0], sig.args[0])] + [zero] * (like.size - 1))

    return like(c, like), codegen


@intrinsic
def jet_seed(typingctx, x, rate, k, n):
    """Coordinate k of a joint: (x, rate, 0, e_k) as a Jet(n) (``n`` a literal)."""
    if not isinstance(n, types.IntegerLiteral):
        return None
    jt = Jet(n.literal_value)

    def codegen(context, builder, sig, args):
        zero = ir.Constant(ir.DoubleType(), 0.0)
        one = ir.Constant(ir.DoubleType(), 1.0)
        kk = context.cast(builder, args[2], sig.args[2], types.intp)
        grads = [builder.select(builder.icmp_signed("==", kk, ir.Constant(kk.type, j)), one, zero)
                 for j in range(jt.n)]
        return _build(context, builder, jt, [_float(context, builder, args[0], sig.args[0]),
                                             _float(context, builder, args[1], sig.args[1]), zero] + grads)

    return jt(x, rate, k, n), codegen


@intrinsic
def jet_parts(typingctx, a):
    """The 3 + n numbers of a jet as a tuple."""
    if not isinstance(a, Jet):
        return None
    ret = types.UniTuple(types.float64, a.size)

    def codegen(context, builder, sig, args):
        return context.make_tuple(builder, ret, _parts(builder, args[0], a.size))

    return ret(a), codegen


@intrinsic
def jet_value(typingctx, a):
    if not isinstance(a, Jet):
        return None

    def codegen(context, builder, sig, args):
        return builder.extract_value(args[0], 0)

    return types.float64(a), codegen


# ---------------------------------------------------------------------------- arithmetic
def _binary(op):
    """The intrinsic of op in (add, sub, mul, div) between two jets of the same kind."""

    @intrinsic
    def jet_op(typingctx, a, b):
        if not (isinstance(a, Jet) and isinstance(b, Jet) and a.n == b.n):
            return None

        def codegen(context, builder, sig, args):
            x = _parts(builder, args[0], a.size)
            y = _parts(builder, args[1], a.size)
            f = builder
            if op == "add":
                vals = [f.fadd(p, q) for p, q in zip(x, y)]
            elif op == "sub":
                vals = [f.fsub(p, q) for p, q in zip(x, y)]
            elif op == "mul":
                # (x y)' = x' y + x y',  (x y)'' = x'' y + 2 x' y' + x y''
                two = ir.Constant(ir.DoubleType(), 2.0)
                vals = [f.fmul(x[0], y[0]),
                        f.fadd(f.fmul(x[1], y[0]), f.fmul(x[0], y[1])),
                        f.fadd(f.fadd(f.fmul(x[2], y[0]), f.fmul(two, f.fmul(x[1], y[1]))), f.fmul(x[0], y[2]))]
                vals += [f.fadd(f.fmul(x[k], y[0]), f.fmul(x[0], y[k])) for k in range(3, a.size)]
            else:
                # z = x / y: z' = (x' - z y') / y,  z'' = (x'' - 2 z' y' - z y'') / y
                two = ir.Constant(ir.DoubleType(), 2.0)
                z0 = f.fdiv(x[0], y[0])
                z1 = f.fdiv(f.fsub(x[1], f.fmul(z0, y[1])), y[0])
                z2 = f.fdiv(f.fsub(f.fsub(x[2], f.fmul(two, f.fmul(z1, y[1]))), f.fmul(z0, y[2])), y[0])
                vals = [z0, z1, z2] + [f.fdiv(f.fsub(x[k], f.fmul(z0, y[k])), y[0]) for k in range(3, a.size)]
            return _build(context, builder, a, vals)

        return a(a, b), codegen

    return jet_op


jet_add, jet_sub, jet_mul, jet_div = (_binary(op) for op in ("add", "sub", "mul", "div"))


@intrinsic
def jet_scale(typingctx, a, s):
    """s a for a number s."""
    if not (isinstance(a, Jet) and _num(s)):
        return None

    def codegen(context, builder, sig, args):
        c = _float(context, builder, args[1], sig.args[1])
        return _build(context, builder, a, [builder.fmul(c, x) for x in _parts(builder, args[0], a.size)])

    return a(a, s), codegen


@intrinsic
def jet_shift(typingctx, a, c):
    """a + c for a number c."""
    if not (isinstance(a, Jet) and _num(c)):
        return None

    def codegen(context, builder, sig, args):
        x = _parts(builder, args[0], a.size)
        x[0] = builder.fadd(x[0], _float(context, builder, args[1], sig.args[1]))
        return _build(context, builder, a, x)

    return a(a, c), codegen


@intrinsic
def jet_fun(typingctx, a, f0, f1, f2):
    """f(a) for a scalar function with value f0, first derivative f1 and second f2 at a's value."""
    if not (isinstance(a, Jet) and _num(f0) and _num(f1) and _num(f2)):
        return None

    def codegen(context, builder, sig, args):
        x = _parts(builder, args[0], a.size)
        v0, v1, v2 = (_float(context, builder, v, t) for v, t in zip(args[1:], sig.args[1:]))
        f = builder
        vals = [v0, f.fmul(v1, x[1]), f.fadd(f.fmul(f.fmul(v2, x[1]), x[1]), f.fmul(v1, x[2]))]
        vals += [f.fmul(v1, x[k]) for k in range(3, a.size)]
        return _build(context, builder, a, vals)

    return a(a, f0, f1, f2), codegen


# ---------------------------------------------------------------------------- the operators
def _register(op, jj, jn, nj):
    @overload(op)
    def _impl(a, b):
        if isinstance(a, Jet) and isinstance(b, Jet) and a.n == b.n:
            return jj
        if isinstance(a, Jet) and _num(b):
            return jn
        if _num(a) and isinstance(b, Jet):
            return nj
        return None


_register(operator.add, lambda a, b: jet_add(a, b), lambda a, b: jet_shift(a, b), lambda a, b: jet_shift(b, a))
_register(operator.sub, lambda a, b: jet_sub(a, b), lambda a, b: jet_shift(a, -b),
          lambda a, b: jet_shift(jet_scale(b, -1.0), a))
_register(operator.mul, lambda a, b: jet_mul(a, b), lambda a, b: jet_scale(a, b), lambda a, b: jet_scale(b, a))
_register(operator.truediv, lambda a, b: jet_div(a, b), lambda a, b: jet_scale(a, 1.0 / b),
          lambda a, b: jet_div(jet_const(a, b), b))


@overload(operator.neg)
def _neg(a):
    if isinstance(a, Jet):
        return lambda a: jet_scale(a, -1.0)
    return None


@overload(operator.pos)
def _pos(a):
    if isinstance(a, Jet):
        return lambda a: a
    return None


@overload(operator.pow)
def _pow(a, p):
    if isinstance(a, Jet) and isinstance(p, types.Integer):
        def impl(a, p):
            # repeated squaring: exact for integer powers, and defined at 0
            n = p if p >= 0 else -p
            out = jet_const(1.0, a)
            base = a
            while n > 0:
                if n & 1:
                    out = jet_mul(out, base)
                base = jet_mul(base, base)
                n >>= 1
            return out if p >= 0 else jet_div(jet_const(1.0, a), out)
        return impl
    if isinstance(a, Jet) and isinstance(p, types.Float):
        def impl(a, p):
            x = jet_value(a)
            f0 = x ** p
            return jet_fun(a, f0, p * x ** (p - 1.0), p * (p - 1.0) * x ** (p - 2.0))
        return impl
    return None


@overload(abs)
def _abs(a):
    if isinstance(a, Jet):
        def impl(a):
            return jet_scale(a, -1.0) if jet_value(a) < 0.0 else a
        return impl
    return None


def _compare(op):
    @overload(op)
    def _impl(a, b):
        if isinstance(a, Jet) and isinstance(b, Jet):
            return lambda a, b: op(jet_value(a), jet_value(b))
        if isinstance(a, Jet) and _num(b):
            return lambda a, b: op(jet_value(a), b)
        if _num(a) and isinstance(b, Jet):
            return lambda a, b: op(a, jet_value(b))
        return None


for _op in (operator.lt, operator.le, operator.gt, operator.ge):
    _compare(_op)
