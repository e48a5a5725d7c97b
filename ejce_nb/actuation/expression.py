"""Expressions of OpenSim's ``ExpressionBasedCoordinateForce`` (Lepton's syntax): parsed in Python
into a small postfix program, evaluated by a compiled interpreter.  Nothing is ever handed to
Python's ``eval``.

Grammar (Lepton's precedence and associativity)::

    expr    := sum
    sum     := product (("+" | "-") product)*                 left-associative
    product := unary (("*" | "/") unary)*                     left-associative
    unary   := "-" unary | power                              -a*b = (-a)*b, -a^b = -(a^b)
    power   := atom ("^" unary)?                              right-associative: a^b^c = a^(b^c)
    atom    := number | "q" | "qdot" | name "(" expr ("," expr)? ")" | "(" expr ")"

Numbers are decimal (``2``, ``.5``, ``1.5e-3``).  The variables are ``q`` (the coordinate's value:
radians or metres) and ``qdot`` (its rate).  Functions of one argument: ``sqrt exp log sin cos
tan sec csc cot asin acos atan sinh cosh tanh erf erfc abs square cube recip step delta``
(``step(x)`` = 1 for x >= 0 else 0, ``delta(x)`` = 1 for x = 0 else 0), of two: ``min max``: what
OpenSim 4.6's Lepton evaluates, with the same results (checked against it); also ``floor ceil``
and ``pow atan2``, which OpenSim's parser refuses.  OpenSim removes every blank before parsing
(``"q dot"`` reads as ``qdot``); its reader does the same before ``parse``.

A program is a sequence of (opcode, argument) pairs (``OP_*``), run on a stack of at most
``STACK`` numbers; its constants are kept apart.  ``parse`` raises ``ExpressionError`` (a
``ModelError``) naming what was being read (the force), the expression and the position
(0-based character) of the problem.
"""
import math
import re

import numpy as np
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic
from numba.np.arrayobj import make_array, populate_array

from .._jit import jit
from ..errors import ModelError

# opcodes: push a constant (argument: its index), push q, push qdot, the binary operators, negate,
# a function of one, two or three arguments (argument: its code)
OP_CONST, OP_Q, OP_QDOT, OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_POW, OP_NEG, OP_FN1, OP_FN2 = range(11)
FN1 = ("sqrt", "exp", "log", "sin", "cos", "tan", "sec", "csc", "cot", "asin", "acos", "atan", "sinh", "cosh",
       "tanh", "erf", "erfc", "abs", "floor", "ceil", "square", "cube", "recip", "step", "delta")
FN2 = ("min", "max", "pow", "atan2")
STACK = 32          # the deepest stack a program may need


class ExpressionError(ModelError):
    """An expression that does not parse (or needs a stack deeper than ``STACK``)."""


_TOKEN = re.compile(r"\s*(?:(?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)|(?P<name>[A-Za-z_][A-Za-z_0-9]*)"
                    r"|(?P<op>[-+*/^(),]))")


class Expression:
    """A parsed expression: ``source``, ``ops`` (int64 (n, 2): opcode, argument), ``consts``
    (float64), ``depth`` (its stack's largest size); ``expr(q, qdot)`` evaluates it in Python (the
    same operations as the compiled interpreter, ``run``)."""

    def __init__(self, source, ops, consts, depth):
        self.source = source
        self.ops = np.asarray(ops, dtype=np.int64).reshape(-1, 2)
        self.consts = np.asarray(consts, dtype=np.float64)
        self.depth = depth

    def __call__(self, q, qdot):
        st = []
        for op, arg in self.ops:
            if op == OP_CONST:
                st.append(float(self.consts[arg]))
            elif op == OP_Q:
                st.append(float(q))
            elif op == OP_QDOT:
                st.append(float(qdot))
            elif op == OP_NEG:
                st.append(-st.pop())
            elif op == OP_FN1:
                st.append(_fn1_py(arg, st.pop()))
            else:
                b, a = st.pop(), st.pop()
                st.append(_bin_py(op, arg, a, b))
        return st[0]

    def __repr__(self):
        return f"Expression({self.source!r})"


def _fn1_py(code, x):
    name = FN1[code]
    with np.errstate(all="ignore"):
        if name == "step":
            return 1.0 if x >= 0.0 else 0.0
        if name == "delta":
            return 1.0 if x == 0.0 else 0.0
        if name in ("erf", "erfc"):
            return getattr(math, name)(x)
        table = {"sqrt": np.sqrt, "exp": np.exp, "log": np.log, "sin": np.sin, "cos": np.cos, "tan": np.tan,
                 "sec": lambda y: 1.0 / np.cos(y), "csc": lambda y: 1.0 / np.sin(y), "cot": lambda y: 1.0 / np.tan(y),
                 "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh,
                 "tanh": np.tanh, "abs": abs, "floor": np.floor, "ceil": np.ceil, "square": lambda y: y * y,
                 "cube": lambda y: y * y * y, "recip": lambda y: np.float64(1.0) / y}
        return float(table[name](np.float64(x)))


def _bin_py(op, code, a, b):
    with np.errstate(all="ignore"):
        a, b = np.float64(a), np.float64(b)
        if op == OP_ADD:
            return float(a + b)
        if op == OP_SUB:
            return float(a - b)
        if op == OP_MUL:
            return float(a * b)
        if op == OP_DIV:
            return float(a / b)
        if op == OP_POW:
            return float(a ** b)
        name = FN2[code]
        if name == "min":
            return float(min(a, b))
        if name == "max":
            return float(max(a, b))
        if name == "pow":
            return float(a ** b)
        return float(np.arctan2(a, b))


def parse(source, where="expression"):
    """The ``Expression`` of the text ``source``; ``where`` names what holds it in errors (e.g.
    "ExpressionBasedCoordinateForce 'f'")."""
    text = source if isinstance(source, str) else ""
    if not isinstance(source, str) or not text.strip():
        raise ExpressionError(f"{where}: empty expression {source!r}")
    toks = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        mt = _TOKEN.match(text, pos)
        if mt is None:
            at = pos + len(text[pos:]) - len(text[pos:].lstrip())
            raise ExpressionError(f"{where}: expression {text!r}: unexpected character {text[at]!r} at position {at}")
        kind = mt.lastgroup
        toks.append((kind, mt.group(kind), mt.start(kind)))
        pos = mt.end()
    toks.append(("end", "", len(text)))
    p = _Parser(text, toks, where)
    p.sum()
    if p.peek()[0] != "end":
        p.fail("unexpected", p.peek())
    depth = _depth(p.ops)
    if depth > STACK:
        raise ExpressionError(f"{where}: expression {text!r} nests too deeply (a stack of {depth} > {STACK})")
    return Expression(text, p.ops, p.consts, depth)


class _Parser:
    def __init__(self, text, toks, where):
        self.text, self.toks, self.where, self.i = text, toks, where, 0
        self.ops, self.consts = [], []

    def peek(self):
        return self.toks[self.i]

    def take(self):
        t = self.toks[self.i]
        self.i += 1
        return t

    def fail(self, what, tok):
        shown = "the end" if tok[0] == "end" else repr(tok[1])
        raise ExpressionError(f"{self.where}: expression {self.text!r}: {what} {shown} at position {tok[2]}")

    def expect(self, s):
        t = self.take()
        if t[1] != s or t[0] == "num":
            self.fail(f"expected {s!r}, found", t)

    def sum(self):
        self.product()
        while self.peek()[0] == "op" and self.peek()[1] in "+-":
            op = self.take()[1]
            self.product()
            self.ops.append((OP_ADD if op == "+" else OP_SUB, 0))

    def product(self):
        self.unary()
        while self.peek()[0] == "op" and self.peek()[1] in "*/":
            op = self.take()[1]
            self.unary()
            self.ops.append((OP_MUL if op == "*" else OP_DIV, 0))

    def unary(self):
        if self.peek()[0] == "op" and self.peek()[1] == "-":
            self.take()
            self.unary()
            self.ops.append((OP_NEG, 0))
        else:
            self.power()

    def power(self):
        self.atom()
        if self.peek()[0] == "op" and self.peek()[1] == "^":
            self.take()
            self.unary()
            self.ops.append((OP_POW, 0))

    def atom(self):
        t = self.take()
        kind, s = t[0], t[1]
        if kind == "num":
            self.consts.append(float(s))
            self.ops.append((OP_CONST, len(self.consts) - 1))
        elif kind == "name":
            if s in ("q", "qdot"):
                if self.peek()[1] == "(" and self.peek()[0] == "op":
                    self.fail(f"{s} is a variable, not a function: unexpected", self.peek())
                self.ops.append((OP_Q if s == "q" else OP_QDOT, 0))
                return
            n = 1 if s in FN1 else 2 if s in FN2 else 0
            if n == 0:
                self.fail("unknown name (variables: q, qdot; functions: " + ", ".join(FN1 + FN2) + ")", t)
            self.expect("(")
            self.sum()
            for _ in range(n - 1):
                self.expect(",")
                self.sum()
            if self.peek()[1] == "," and self.peek()[0] == "op":
                self.fail(f"{s} takes {n} argument{'s' if n > 1 else ''}: unexpected", self.peek())
            self.expect(")")
            if n == 1:
                self.ops.append((OP_FN1, FN1.index(s)))
            else:
                self.ops.append((OP_FN2, FN2.index(s)))
        elif kind == "op" and s == "(":
            self.sum()
            self.expect(")")
        else:
            self.fail("expected a number, q, qdot, a function or '(', found", t)


def _depth(ops):
    d = dmax = 0
    for op, _ in ops:
        d += 1 if op in (OP_CONST, OP_Q, OP_QDOT) else 0 if op in (OP_NEG, OP_FN1) else -1
        dmax = max(dmax, d)
    return dmax


# ---------------------------------------------------------------------------- the interpreter
@intrinsic
def local_stack(typingctx):
    """A float64 array of ``STACK`` entries on the calling function's stack (no allocation, no
    reference counting; it lives as long as the call)."""
    ret = types.Array(types.float64, 1, "C")

    def codegen(context, builder, sig, args):
        n = context.get_constant(types.intp, STACK)
        ptr = cgutils.alloca_once(builder, context.get_value_type(types.float64), size=n)
        out = make_array(ret)(context, builder)
        item = context.get_constant(types.intp, 8)
        populate_array(out, data=ptr, shape=cgutils.pack_array(builder, [n]),
                       strides=cgutils.pack_array(builder, [item]), itemsize=item, meminfo=None, parent=None)
        return out._getvalue()
    return ret(), codegen


try:
    import numba as _nb
    if _nb.config.DISABLE_JIT:
        def local_stack():     # noqa: F811  (the same, without the compiler)
            return np.empty(STACK)
except Exception:   # noqa: BLE001
    pass


@jit(forceinline=True)
def _fn1(code, x):
    if code == 0:
        return math.sqrt(x) if x >= 0.0 else np.nan
    if code == 1:
        return math.exp(x)
    if code == 2:
        if x > 0.0:
            return math.log(x)
        return -np.inf if x == 0.0 else np.nan
    if code == 3:
        return math.sin(x)
    if code == 4:
        return math.cos(x)
    if code == 5:
        return math.tan(x)
    if code == 6:
        return 1.0 / math.cos(x)
    if code == 7:
        return 1.0 / math.sin(x)
    if code == 8:
        return 1.0 / math.tan(x)
    if code == 9:
        return math.asin(x) if -1.0 <= x <= 1.0 else np.nan
    if code == 10:
        return math.acos(x) if -1.0 <= x <= 1.0 else np.nan
    if code == 11:
        return math.atan(x)
    if code == 12:
        return math.sinh(x)
    if code == 13:
        return math.cosh(x)
    if code == 14:
        return math.tanh(x)
    if code == 15:
        return math.erf(x)
    if code == 16:
        return math.erfc(x)
    if code == 17:
        return abs(x)
    if code == 18:
        return math.floor(x)
    if code == 19:
        return math.ceil(x)
    if code == 20:
        return x * x
    if code == 21:
        return x * x * x
    if code == 22:
        return 1.0 / x
    if code == 23:
        return 1.0 if x >= 0.0 else 0.0
    return 1.0 if x == 0.0 else 0.0


@jit(forceinline=True)
def _pow(a, b):
    return a ** b


@jit
def run(ops, off, n, consts, coff, q, qdot):
    """The value of the program of ``n`` instructions at ``ops[off:off + 2 n]`` (opcode, argument
    pairs, flat), its constants at ``consts[coff:]``, for the variables q and qdot."""
    st = local_stack()
    sp = 0
    for k in range(n):
        op = ops[off + 2 * k]
        arg = ops[off + 2 * k + 1]
        if op == OP_CONST:
            st[sp] = consts[coff + arg]
            sp += 1
        elif op == OP_Q:
            st[sp] = q
            sp += 1
        elif op == OP_QDOT:
            st[sp] = qdot
            sp += 1
        elif op == OP_NEG:
            st[sp - 1] = -st[sp - 1]
        elif op == OP_FN1:
            st[sp - 1] = _fn1(arg, st[sp - 1])
        else:
            a = st[sp - 2]
            b = st[sp - 1]
            if op == OP_ADD:
                x = a + b
            elif op == OP_SUB:
                x = a - b
            elif op == OP_MUL:
                x = a * b
            elif op == OP_DIV:
                x = a / b
            elif op == OP_POW or arg == 2:
                x = _pow(a, b)
            elif arg == 0:
                x = min(a, b)
            elif arg == 1:
                x = max(a, b)
            else:
                x = math.atan2(a, b)
            st[sp - 2] = x
            sp -= 1
    return st[0]


@jit
def evaluate(ops, consts, q, qdot, out):
    """out[k] = the program (``Expression.ops`` flattened, ``consts``) at (q[k], qdot[k])."""
    n = ops.shape[0] // 2
    for k in range(q.shape[0]):
        out[k] = run(ops, 0, n, consts, 0, q[k], qdot[k])
