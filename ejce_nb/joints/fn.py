"""Coordinate functions of Composite joints: the amount of each elementary motion.

Each function is a sum of terms, encoded for the kernels as a flat float list
``[kind, ...parameters]`` (see ``joints.codes``); ``Sum`` concatenates the terms of its parts.
"""
import numpy as np

from ..errors import ModelError
from . import codes as C


def _floats(values, what, ndim=1):
    try:
        arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise ModelError(f"{what} must be numbers, got {values!r}") from None
    if arr.ndim != ndim:
        raise ModelError(f"{what} must be a {ndim}-d list of numbers, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ModelError(f"{what} must be finite, got {values!r}")
    arr = arr.copy()                # never alias the caller's array; specs are immutable
    arr.flags.writeable = False
    return arr


_JSON_TYPES = ((bool, "a boolean"), (str, "a string"), (type(None), "null"), (dict, "an object"),
               (list, "an array"))


def _json_kind(x):
    return next((name for t, name in _JSON_TYPES if isinstance(x, t)), type(x).__name__)


def _is_number(x):
    return (isinstance(x, (int, float, np.integer, np.floating))
            and not isinstance(x, (bool, np.bool_)))


def check_json_numbers(value, where, scalar=False, nulls=False):
    """Refuse anything in a model document that is not a number where numbers belong.

    ``value`` must be a number (int or float; not a boolean, string or null) or, unless
    ``scalar``, a list (nested to any depth) of numbers; ``nulls`` also allows null leaves
    (limits: no limit).  numpy numbers and numeric arrays pass, so that documents built in Python
    may hold them.  Shapes and values are the constructors' business; this only keeps strings
    such as ``"1.0"`` and booleans (which numpy would silently convert) out.  Errors name the
    offending element: ``bodies[2].com[1]: expected a number, got '0.5' (a string)``."""
    stack = [(value, where)]
    while stack:
        x, w = stack.pop()
        if _is_number(x):
            if isinstance(x, (int, np.integer)):
                try:
                    float(x)
                except OverflowError:
                    raise ModelError(f"{w}: the integer {x} is too large for a float") from None
            continue
        if x is None and nulls:
            continue
        if isinstance(x, np.ndarray) and x.dtype.kind in "iuf" and not (scalar and x.ndim):
            continue
        if isinstance(x, (list, tuple)) and not scalar:
            stack.extend((v, f"{w}[{k}]") for k, v in reversed(list(enumerate(x))))
            continue
        what = "a number" if scalar else "a number or a list of numbers"
        if nulls:
            what += " (or null)"
        text = repr(x) if len(repr(x)) <= 60 else repr(x)[:57] + "..."
        raise ModelError(f"{w}: expected {what}, got {text} ({_json_kind(x)})")
    return value


def _coord(coord, what):
    if isinstance(coord, bool) or not isinstance(coord, (int, np.integer)) or coord < 0:
        raise ModelError(f"{what} must be a non-negative coordinate index, got {coord!r}")
    return int(coord)


class Function:
    """Base of the coordinate functions; ``terms()`` lists the encoded terms."""

    def terms(self):
        raise NotImplementedError

    def max_coord(self):
        """Largest coordinate index the function reads (-1: none)."""
        return -1

    def depends_on_time(self):
        return False

    def __add__(self, other):
        return Sum(self, other)

    def __eq__(self, other):
        return type(self) is type(other) and self.to_dict() == other.to_dict()

    def __repr__(self):
        d = self.to_dict()
        kind = d.pop("type")
        return f"{kind}({', '.join(f'{k}={v!r}' for k, v in d.items())})"


class Linear(Function):
    """``offset + sum_k coeffs[k] q[k]`` over the joint's coordinates."""

    def __init__(self, coeffs, offset=0.0):
        self.coeffs = _floats(coeffs, "Linear coeffs")
        self.offset = float(_floats([offset], "Linear offset")[0])

    def terms(self):
        return [[C.FN_LINEAR, self.offset, len(self.coeffs), *self.coeffs]]

    def max_coord(self):
        nz = np.nonzero(self.coeffs)[0]
        return int(nz[-1]) if len(nz) else -1

    def n_coeffs(self):
        return len(self.coeffs)

    def to_dict(self):
        return {"type": "Linear", "coeffs": self.coeffs.tolist(), "offset": self.offset}


class Poly(Function):
    """Polynomial in ``q[coord]``, coefficients lowest order first."""

    def __init__(self, coord, coeffs):
        self.coord = _coord(coord, "Poly coord")
        self.coeffs = _floats(coeffs, "Poly coeffs")
        if len(self.coeffs) == 0:
            raise ModelError("Poly coeffs must not be empty")

    def terms(self):
        return [[C.FN_POLY, self.coord, len(self.coeffs), *self.coeffs]]

    def max_coord(self):
        return self.coord

    def to_dict(self):
        return {"type": "Poly", "coord": self.coord, "coeffs": self.coeffs.tolist()}


def natural_spline_moments(x, y):
    """Second derivatives at the knots of the natural cubic spline through (x, y)."""
    n = len(x)
    m = np.zeros(n)
    if n < 3:
        return m
    h = np.diff(x)
    A = np.zeros((n - 2, n - 2))
    rhs = np.zeros(n - 2)
    for i in range(1, n - 1):
        k = i - 1
        A[k, k] = (h[i - 1] + h[i]) / 3.0
        if k > 0:
            A[k, k - 1] = h[i - 1] / 6.0
        if k < n - 3:
            A[k, k + 1] = h[i] / 6.0
        rhs[k] = (y[i + 1] - y[i]) / h[i] - (y[i] - y[i - 1]) / h[i - 1]
    m[1:-1] = np.linalg.solve(A, rhs)
    return m


class Spline(Function):
    """Natural cubic spline of ``q[coord]`` through the knots; linear beyond the end knots."""

    def __init__(self, coord, x, y):
        self.coord = _coord(coord, "Spline coord")
        self.x = _floats(x, "Spline knots x")
        self.y = _floats(y, "Spline values y")
        if len(self.x) < 2:
            raise ModelError(f"Spline needs at least 2 knots, got {len(self.x)}")
        if len(self.x) != len(self.y):
            raise ModelError(f"Spline values y ({len(self.y)}) and knots x ({len(self.x)}) differ in length")
        if np.any(np.diff(self.x) <= 0):
            raise ModelError(f"Spline knots x must be strictly increasing, got {self.x.tolist()}")
        with np.errstate(all="ignore"):
            self.m = natural_spline_moments(self.x, self.y)
        if not np.all(np.isfinite(self.m)):
            raise ModelError("Spline values y are too large: the spline's second derivatives overflow")
        self.m.flags.writeable = False

    def terms(self):
        n = len(self.x)
        return [[C.FN_SPLINE, self.coord, n, *self.x, *self.y, *self.m]]

    def max_coord(self):
        return self.coord

    def to_dict(self):
        return {"type": "Spline", "coord": self.coord, "x": self.x.tolist(), "y": self.y.tolist()}


class TimePoly(Function):
    """Polynomial in time ``t``, lowest order first."""

    def __init__(self, coeffs):
        self.coeffs = _floats(coeffs, "TimePoly coeffs")
        if len(self.coeffs) == 0:
            raise ModelError("TimePoly coeffs must not be empty")

    def terms(self):
        return [[C.FN_TIMEPOLY, len(self.coeffs), *self.coeffs]]

    def depends_on_time(self):
        return bool(np.any(self.coeffs[1:] != 0))

    def to_dict(self):
        return {"type": "TimePoly", "coeffs": self.coeffs.tolist()}


class Harmonic(Function):
    """``amplitude * sin(omega * t + phase)``."""

    def __init__(self, amplitude, omega, phase=0.0):
        self.amplitude, self.omega, self.phase = (
            float(_floats([v], f"Harmonic {what}")[0])
            for v, what in ((amplitude, "amplitude"), (omega, "omega"), (phase, "phase")))

    def terms(self):
        return [[C.FN_HARMONIC, self.amplitude, self.omega, self.phase]]

    def depends_on_time(self):
        return self.amplitude != 0.0 and self.omega != 0.0

    def to_dict(self):
        return {"type": "Harmonic", "amplitude": self.amplitude, "omega": self.omega,
                "phase": self.phase}


class Sum(Function):
    """Sum of coordinate functions (e.g. a coordinate plus a time drive)."""

    def __init__(self, *parts):
        if len(parts) == 1 and isinstance(parts[0], (list, tuple)):
            parts = tuple(parts[0])
        if not parts:
            raise ModelError("Sum needs at least one function")
        flat = []
        for p in parts:
            if not isinstance(p, Function):
                raise ModelError(f"Sum parts must be ej.fn functions, got {p!r}")
            flat.extend(p.parts if isinstance(p, Sum) else [p])
        self.parts = flat

    def terms(self):
        return [t for p in self.parts for t in p.terms()]

    def max_coord(self):
        return max(p.max_coord() for p in self.parts)

    def depends_on_time(self):
        return any(p.depends_on_time() for p in self.parts)

    def to_dict(self):
        return {"type": "Sum", "parts": [p.to_dict() for p in self.parts]}

    def __repr__(self):
        return "Sum(" + ", ".join(repr(p) for p in self.parts) + ")"


# the fields of each kind that hold numbers (coord is an index: ``_coord`` wants an integer)
_NUMBER_FIELDS = {"Linear": ("coeffs", "offset"), "Poly": ("coeffs",), "Spline": ("x", "y"),
                  "TimePoly": ("coeffs",), "Harmonic": ("amplitude", "omega", "phase")}
_SCALAR_FIELDS = ("offset", "amplitude", "omega", "phase")

_KINDS = {"Linear": Linear, "Poly": Poly, "Spline": Spline, "TimePoly": TimePoly,
          "Harmonic": Harmonic, "Sum": Sum}


def from_dict(d, where="fn"):
    """Rebuild a function from ``to_dict`` output; errors name ``where`` (a path in the file)."""
    if not isinstance(d, dict):
        raise ModelError(f"{where}: expected an object with a 'type', got {d!r}")
    if "type" not in d:
        raise ModelError(f"{where}.type is missing")
    kind = d["type"]
    if not isinstance(kind, str) or kind not in _KINDS:
        raise ModelError(f"{where}.type: unknown function {kind!r}; known: {sorted(_KINDS)}")
    args = {k: v for k, v in d.items() if k != "type"}
    for field in _NUMBER_FIELDS.get(kind, ()):
        if field in args:
            check_json_numbers(args[field], f"{where}.{field}", scalar=field in _SCALAR_FIELDS)
    try:
        if kind == "Sum":
            if set(args) - {"parts"}:
                raise ModelError(f"{where}: unknown fields {sorted(set(args) - {'parts'})} for Sum (expected 'parts')")
            parts = args.get("parts")
            if not isinstance(parts, list):
                raise ModelError(f"{where}.parts: expected a list")
            return Sum(*[from_dict(p, f"{where}.parts[{i}]") for i, p in enumerate(parts)])
        return _KINDS[kind](**args)
    except ModelError as e:
        if str(e).startswith(where):
            raise
        # constructors word their errors "<Kind> <field> ..." ("Spline knots x": field x)
        words = str(e).split()
        field = next((w for w in words[1:3] if w in args), None) if words and words[0] == kind else None
        raise ModelError(f"{where}{'.' + field if field else ''}: {e}") from None
    except TypeError as e:
        raise ModelError(f"{where}: bad fields for {kind}: {e}") from None
