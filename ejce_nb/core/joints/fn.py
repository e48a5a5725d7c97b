"""Coordinate functions (``ej.fn``): the amount of each elementary motion of a ``Composite``
joint and the function of a coordinate coupler (``ModelBuilder.add_coupler``).

``Linear``, ``Poly``, ``MultiPoly``, ``Spline`` and ``PiecewiseLinear`` are functions of the
joint's coordinates ``q[k]``; ``Poly``, ``Spline`` and ``PiecewiseLinear`` take ``coord="t"`` for
a function of time instead (a prescribed motion); ``TimePoly`` and ``Harmonic`` are functions of
time only; ``Sum`` adds any of them (e.g. a coordinate plus a time drive; ``f + g`` is
``Sum(f, g)``).  Every function has ``f.value(q, t=0.0)``, its value in Python (``q`` a sequence of
coordinates).  In JSON each is an object with its ``"type"`` and the constructor's fields.

Each function is a sum of terms, encoded for the kernels as a flat float list
``[kind, ...parameters]`` (see ``joints.codes``); ``Sum`` concatenates the terms of its parts.
"""
import numpy as np

from ...errors import ModelError
from . import codes as C
from .document import ByDict, check_json_numbers, document_kind
from .splines import (SPLINE_ENDS, spline_eval, clamped_spline_moments, natural_spline_moments,
                      simm_spline_moments)


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


def _coord(coord, what, time=False):
    if time and coord == "t":
        return "t"
    if isinstance(coord, bool) or not isinstance(coord, (int, np.integer)) or coord < 0:
        also = ' or "t" (time)' if time else ""
        raise ModelError(f"{what} must be a non-negative coordinate index{also}, got {coord!r}")
    return int(coord)


def _arg(coord, q, t):
    """The argument of a one-argument function: q[coord], or the time for coord "t"."""
    return float(t) if coord == "t" else float(q[coord])


def _code(coord):
    return -1 if coord == "t" else coord


class _OfOne:
    """A function of one argument: a coordinate ``q[coord]`` or, for ``coord="t"``, the time."""

    def max_coord(self):
        return -1 if self.coord == "t" else self.coord

    def depends_on_time(self):
        return self.coord == "t"


class Function(ByDict):
    """Base of the coordinate functions; ``terms()`` lists the encoded terms."""

    def terms(self):
        raise NotImplementedError

    def value(self, q, t=0.0):
        """The function's value at coordinates ``q`` (a sequence) and time ``t``, in Python."""
        raise NotImplementedError

    def max_coord(self):
        """Largest coordinate index the function reads (-1: none)."""
        return -1

    def depends_on_time(self):
        return False

    def __add__(self, other):
        return Sum(self, other)


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

    def value(self, q, t=0.0):
        return self.offset + float(sum(c * float(q[k]) for k, c in enumerate(self.coeffs) if c != 0.0))

    def to_dict(self):
        return {"type": "Linear", "coeffs": self.coeffs.tolist(), "offset": self.offset}


class Poly(_OfOne, Function):
    """Polynomial in ``q[coord]`` (or in time, ``coord="t"``), coefficients lowest order first."""

    def __init__(self, coord, coeffs):
        self.coord = _coord(coord, "Poly coord", time=True)
        self.coeffs = _floats(coeffs, "Poly coeffs")
        if len(self.coeffs) == 0:
            raise ModelError("Poly coeffs must not be empty")

    def terms(self):
        return [[C.FN_POLY, _code(self.coord), len(self.coeffs), *self.coeffs]]

    def value(self, q, t=0.0):
        return float(np.polyval(self.coeffs[::-1], _arg(self.coord, q, t)))

    def to_dict(self):
        return {"type": "Poly", "coord": self.coord, "coeffs": self.coeffs.tolist()}



class MultiPoly(Function):
    """Polynomial in several coordinates: ``sum_t coeffs[t] prod_j q[coords[j]] ** powers[t][j]``
    (``powers``: one row of non-negative integer exponents per term, one column per entry of
    ``coords``).  OpenSim's ``MultivariatePolynomialFunction`` is this with every monomial of
    total degree up to its order."""

    def __init__(self, coords, powers, coeffs):
        if isinstance(coords, (int, np.integer)) or not hasattr(coords, "__len__") or len(coords) == 0:
            raise ModelError(f"MultiPoly coords must be a non-empty list of coordinate indices, got {coords!r}")
        self.coords = tuple(_coord(c, "MultiPoly coords") for c in coords)
        self.coeffs = _floats(coeffs, "MultiPoly coeffs")
        pw = _floats(powers, "MultiPoly powers", ndim=2) if len(self.coeffs) else np.zeros((0, len(self.coords)))
        if pw.shape != (len(self.coeffs), len(self.coords)):
            raise ModelError(f"MultiPoly powers must have one row per coefficient ({len(self.coeffs)}) and one "
                             f"column per coordinate ({len(self.coords)}), got shape {pw.shape}")
        if np.any(pw < 0) or np.any(pw != np.round(pw)) or np.any(pw > 64):
            raise ModelError(f"MultiPoly powers must be integers 0..64, got {pw.tolist()}")
        self.powers = pw.astype(np.int64)
        self.powers.flags.writeable = False

    def terms(self):
        n = len(self.coords)
        body = []
        for c, row in zip(self.coeffs, self.powers):
            body += [c, *row.tolist()]
        return [[C.FN_MULTIPOLY, n, len(self.coeffs), *self.coords, *body]]

    def value(self, q, t=0.0):
        x = np.array([float(q[c]) for c in self.coords])
        return float(sum(c * np.prod(x ** row) for c, row in zip(self.coeffs, self.powers)))

    def max_coord(self):
        used = [c for j, c in enumerate(self.coords) if np.any((self.powers[:, j] != 0) & (self.coeffs != 0))]
        return max(used) if used else -1

    def to_dict(self):
        return {"type": "MultiPoly", "coords": list(self.coords), "powers": self.powers.tolist(),
                "coeffs": self.coeffs.tolist()}


class Spline(_OfOne, Function):
    """Cubic spline of ``q[coord]`` (or of time, ``coord="t"``) through the knots (x, y), x
    strictly increasing, at least 2 knots; extended linearly beyond the end knots with its end
    slopes (at the end knots themselves the cubic's second derivative, as OpenSim).

    ``end`` sets its end conditions: ``"natural"`` (zero second derivatives at the end knots; the
    default, and the meaning of files without ``"end"``), ``"simm"`` (OpenSim's ``SimmSpline``,
    the spline of Forsythe, Malcolm and Moler: its third derivatives at the ends are those of the
    cubics through the first and last four knots; three knots: equal second-derivative
    differences; two knots: a line) or ``"clamped"`` (first derivatives ``slopes = (s0, s1)`` at
    the end knots).  JSON: the fields ``"end"`` and ``"slopes"``, written only when not natural.
    ``spline.derivatives(x)`` -> (value, first, second derivative)."""

    def __init__(self, coord, x, y, end="natural", slopes=None):
        self.coord = _coord(coord, "Spline coord", time=True)
        self.x = _floats(x, "Spline knots x")
        self.y = _floats(y, "Spline values y")
        if end not in SPLINE_ENDS:
            raise ModelError(f"Spline end must be one of {list(SPLINE_ENDS)}, got {end!r}")
        self.end = end
        if len(self.x) < 2:
            raise ModelError(f"Spline needs at least 2 knots, got {len(self.x)}")
        if len(self.x) != len(self.y):
            raise ModelError(f"Spline values y ({len(self.y)}) and knots x ({len(self.x)}) differ in length")
        if np.any(np.diff(self.x) <= 0):
            raise ModelError(f"Spline knots x must be strictly increasing, got {self.x.tolist()}")
        if (end == "clamped") != (slopes is not None):
            raise ModelError('Spline slopes (s0, s1) are given exactly when end="clamped"')
        self.slopes = None if slopes is None else _floats(slopes, "Spline slopes")
        if self.slopes is not None and self.slopes.shape != (2,):
            raise ModelError(f"Spline slopes must be two numbers (s0, s1), got {slopes!r}")
        with np.errstate(all="ignore"):
            if end == "natural":
                self.m = natural_spline_moments(self.x, self.y)
            elif end == "simm":
                self.m = simm_spline_moments(self.x, self.y)
            else:
                self.m = clamped_spline_moments(self.x, self.y, *self.slopes)
        if not np.all(np.isfinite(self.m)):
            raise ModelError("Spline values y are too large: the spline's second derivatives overflow")
        self.m.flags.writeable = False

    def terms(self):
        n = len(self.x)
        return [[C.FN_SPLINE, _code(self.coord), n, *self.x, *self.y, *self.m]]

    def value(self, q, t=0.0):
        return spline_eval(self.x, self.y, self.m, _arg(self.coord, q, t))[0]

    def derivatives(self, xv):
        """(value, first, second derivative) of the spline at ``xv``."""
        return spline_eval(self.x, self.y, self.m, float(xv))

    def to_dict(self):
        d = {"type": "Spline", "coord": self.coord, "x": self.x.tolist(), "y": self.y.tolist()}
        if self.end != "natural":
            d["end"] = self.end
        if self.slopes is not None:
            d["slopes"] = self.slopes.tolist()
        return d


class PiecewiseLinear(Spline):
    """Piecewise-linear interpolation of ``q[coord]`` (or of time, ``coord="t"``) through the knots, extended beyond the end
    knots along the end segments (OpenSim's ``PiecewiseLinearFunction``).  Its slope jumps at
    the inner knots: the dynamics there take the slope of the segment the coordinate lies in."""

    def __init__(self, coord, x, y):
        super().__init__(coord, x, y)
        self.end = "linear"
        self.m = np.zeros(len(self.x))
        self.m.flags.writeable = False

    def to_dict(self):
        return {"type": "PiecewiseLinear", "coord": self.coord, "x": self.x.tolist(), "y": self.y.tolist()}


class TimePoly(Function):
    """Polynomial in time ``t``, lowest order first."""

    def __init__(self, coeffs):
        self.coeffs = _floats(coeffs, "TimePoly coeffs")
        if len(self.coeffs) == 0:
            raise ModelError("TimePoly coeffs must not be empty")

    def terms(self):
        return [[C.FN_TIMEPOLY, len(self.coeffs), *self.coeffs]]

    def value(self, q, t=0.0):
        return float(np.polyval(self.coeffs[::-1], float(t)))

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

    def value(self, q, t=0.0):
        return self.amplitude * float(np.sin(self.omega * float(t) + self.phase))

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

    def value(self, q, t=0.0):
        return float(sum(p.value(q, t) for p in self.parts))

    def max_coord(self):
        return max(p.max_coord() for p in self.parts)

    def depends_on_time(self):
        return any(p.depends_on_time() for p in self.parts)

    def to_dict(self):
        return {"type": "Sum", "parts": [p.to_dict() for p in self.parts]}

    def __repr__(self):
        return "Sum(" + ", ".join(repr(p) for p in self.parts) + ")"


# the fields of each kind that hold numbers (coord is an index: ``_coord`` wants an integer)
_NUMBER_FIELDS = {"Linear": ("coeffs", "offset"), "Poly": ("coeffs",), "Spline": ("x", "y", "slopes"),
                  "PiecewiseLinear": ("x", "y"), "MultiPoly": ("powers", "coeffs"),
                  "TimePoly": ("coeffs",), "Harmonic": ("amplitude", "omega", "phase")}
_SCALAR_FIELDS = ("offset", "amplitude", "omega", "phase")

_KINDS = {"Linear": Linear, "Poly": Poly, "MultiPoly": MultiPoly, "Spline": Spline, "PiecewiseLinear": PiecewiseLinear, "TimePoly": TimePoly,
          "Harmonic": Harmonic, "Sum": Sum}


def from_dict(d, where="fn"):
    """Rebuild a function from ``to_dict`` output; errors name ``where`` (a path in the file)."""
    kind = document_kind(d, where)
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
