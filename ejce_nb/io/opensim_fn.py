"""OpenSim's functions (``Constant``, ``LinearFunction``, ``PolynomialFunction``, ``SimmSpline``,
``NaturalCubicSpline``, ``PiecewiseLinearFunction``, ``MultiplierFunction``, ``MultivariatePolynomialFunction``) as ``ej.fn``
functions, read from their XML elements.

OpenSim conventions kept: ``LinearFunction`` coefficients are (slope, intercept);
``PolynomialFunction`` coefficients run from the highest power down; ``SimmSpline`` (and
``NaturalCubicSpline``, which OpenSim reads as a ``SimmSpline``) is the spline of Forsythe,
Malcolm and Moler (``fn.Spline(end="simm")``), extended linearly beyond its end knots with its
end slopes, as OpenSim does; ``PiecewiseLinearFunction`` extends its end segments.
"""
import numpy as np

from ..errors import ModelError
from ..core.joints import fn as _fn

SUPPORTED = ("Constant", "LinearFunction", "PolynomialFunction", "SimmSpline", "NaturalCubicSpline",
             "PiecewiseLinearFunction", "MultiplierFunction", "MultivariatePolynomialFunction", "Sine")
# OpenSim's other functions, and why they are refused
REFUSED = {"StepFunction": "its derivative is not continuous (a smoothed step)",
           "GCVSpline": "a generalised cross-validation spline (not translated)",
           "PiecewiseConstantFunction": "it is discontinuous",
           "ExpressionBasedFunction": "an arbitrary expression (not translated)",
           "SmoothSegmentedFunction": "not translated"}


def numbers(el, tag, where, n=None):
    """The numbers of the text of child ``tag`` of ``el`` (None when absent)."""
    c = el.find(tag)
    if c is None:
        return None
    try:
        vals = [float(x) for x in (c.text or "").split()]
    except ValueError:
        raise ModelError(f"{where}: <{tag}>: expected numbers, got {c.text!r}") from None
    if n is not None and len(vals) != n:
        raise ModelError(f"{where}: <{tag}>: expected {n} numbers, got {len(vals)}")
    if not all(np.isfinite(vals)):
        raise ModelError(f"{where}: <{tag}>: numbers must be finite, got {c.text!r}")
    return vals


def function_element(parent, where):
    """The one function element under ``parent`` (a TransformAxis, a coupler's
    ``coupled_coordinates_function``, a ``MultiplierFunction``'s ``function``)."""
    found = [c for c in parent if c.tag in SUPPORTED or c.tag in REFUSED or c.tag.endswith("Function")
             or c.tag.endswith("Spline")]
    if len(found) != 1:
        raise ModelError(f"{where}: expected one function element, found "
                         f"{[c.tag for c in found] if found else 'none'}")
    return found[0]


def translate(el, coords, where):
    """The ``ej.fn`` function of OpenSim function element ``el`` whose argument i is coordinate
    ``coords[i]`` of the target's coordinate vector (a joint's coordinates, a coupler's
    independent coordinates); ``coords == ["t"]``: a function of time (a prescribed
    coordinate's ``prescribed_function``)."""
    kind = el.tag
    who = f"{where}: {kind}" + (f" {el.get('name')!r}" if el.get("name") else "")
    if kind in REFUSED:
        raise ModelError(f"{who}: OpenSim's {kind} is not supported: {REFUSED[kind]}")
    if kind not in SUPPORTED:
        raise ModelError(f"{who}: unknown function kind {kind!r} (supported: {', '.join(SUPPORTED)})")
    if kind == "Constant":
        v = numbers(el, "value", who, 1)
        return _fn.Linear([], offset=0.0 if v is None else v[0])
    if kind == "MultiplierFunction":
        inner = el.find("function")
        if inner is None:
            raise ModelError(f"{who}: <function> is missing")
        s = numbers(el, "scale", who, 1)
        return scaled(translate(function_element(inner, f"{who}.function"), coords, f"{who}.function"),
                      1.0 if s is None else s[0])
    if not coords:
        raise ModelError(f"{who}: a function of a coordinate, but no coordinate is named for it")
    if kind == "MultivariatePolynomialFunction":
        return multivariate(el, coords, who)
    if len(coords) > 1:
        raise ModelError(f"{who}: a function of one argument given {len(coords)} coordinates")
    k = coords[0]
    if kind == "Sine":
        if k != "t":
            raise ModelError(f"{who}: OpenSim's Sine is translated as a function of time only (a prescribed "
                             "coordinate's prescribed_function)")
        a, w, ph, off = (numbers(el, tag, who, 1) for tag in ("amplitude", "omega", "phase", "offset"))
        return _fn.Sum(_fn.Harmonic(1.0 if a is None else a[0], 1.0 if w is None else w[0], 0.0 if ph is None else ph[0]),
                       _fn.TimePoly([0.0 if off is None else off[0]]))
    if k == "t" and kind == "MultivariatePolynomialFunction":
        raise ModelError(f"{who}: a function of several arguments cannot be a function of time")
    if kind == "LinearFunction" and k == "t":
        c = numbers(el, "coefficients", who, 2)
        if c is None:
            raise ModelError(f"{who}: <coefficients> is missing")
        return _fn.TimePoly([c[1], c[0]])
    if kind == "LinearFunction":
        c = numbers(el, "coefficients", who, 2)
        if c is None:
            raise ModelError(f"{who}: <coefficients> is missing")
        coeffs = np.zeros(k + 1)
        coeffs[k] = c[0]
        return _fn.Linear(coeffs, offset=c[1])
    if kind == "PolynomialFunction":
        c = numbers(el, "coefficients", who)
        if not c:
            raise ModelError(f"{who}: <coefficients> is missing or empty")
        return _fn.Poly(k, c[::-1])
    x, y = numbers(el, "x", who), numbers(el, "y", who)
    if x is None or y is None:
        raise ModelError(f"{who}: <x> and <y> are required")
    try:
        if kind == "PiecewiseLinearFunction":
            return _fn.PiecewiseLinear(k, x, y)
        return _fn.Spline(k, x, y, end="simm")
    except ModelError as e:
        raise ModelError(f"{who}: {e}") from None


def monomials(dim, order):
    """Exponent rows of OpenSim's ``MultivariatePolynomialFunction`` terms in its coefficient
    order: the powers of the first argument ascending in the outermost loop, of the last
    argument in the innermost, total degree at most ``order`` (1, z, z^2, y, yz, y^2, x, xz, xy,
    x^2 for three arguments of order 2)."""
    rows = []

    def walk(prefix, left):
        if len(prefix) == dim:
            rows.append(list(prefix))
            return
        for e in range(left + 1):
            walk(prefix + [e], left - e)

    walk([], order)
    return rows


def multivariate(el, coords, who):
    """OpenSim's ``MultivariatePolynomialFunction`` (``dimension`` arguments, the listed
    coordinates in order; every monomial up to ``order``) as ``fn.MultiPoly``."""
    dim = numbers(el, "dimension", who, 1)
    order = numbers(el, "order", who, 1)
    c = numbers(el, "coefficients", who)
    if dim is None or order is None or c is None:
        raise ModelError(f"{who}: <dimension>, <order> and <coefficients> are required")
    dim, order = dim[0], order[0]
    if dim != int(dim) or order != int(order) or dim < 1 or order < 0:
        raise ModelError(f"{who}: <dimension> must be a positive and <order> a non-negative integer")
    dim, order = int(dim), int(order)
    if dim != len(coords):
        raise ModelError(f"{who}: <dimension> {dim} but {len(coords)} coordinates are named for it")
    rows = monomials(dim, order)
    if len(c) != len(rows):
        raise ModelError(f"{who}: <coefficients>: {len(rows)} expected for dimension {dim} and order {order}, "
                         f"got {len(c)}")
    return _fn.MultiPoly(coords, rows, c)


def scaled(f, s):
    """``s * f`` as an ``ej.fn`` function of the same kind."""
    if s == 1.0:
        return f
    if isinstance(f, _fn.Linear):
        return _fn.Linear(s * f.coeffs, offset=s * f.offset)
    if isinstance(f, _fn.Poly):
        return _fn.Poly(f.coord, s * f.coeffs)
    if isinstance(f, _fn.MultiPoly):
        return _fn.MultiPoly(f.coords, f.powers, s * f.coeffs)
    if isinstance(f, _fn.PiecewiseLinear):
        return _fn.PiecewiseLinear(f.coord, f.x, s * f.y)
    if isinstance(f, _fn.Spline):
        return _fn.Spline(f.coord, f.x, s * f.y, end=f.end, slopes=None if f.slopes is None else s * f.slopes)
    if isinstance(f, _fn.Sum):
        return _fn.Sum(*[scaled(p, s) for p in f.parts])
    if isinstance(f, _fn.TimePoly):
        return _fn.TimePoly(s * f.coeffs)
    if isinstance(f, _fn.Harmonic):
        return _fn.Harmonic(s * f.amplitude, f.omega, f.phase)
    raise ModelError(f"cannot scale {f!r}")


def is_zero(f):
    return isinstance(f, _fn.Linear) and f.offset == 0.0 and not np.any(f.coeffs)


def is_constant(f):
    return f.max_coord() < 0 and not f.depends_on_time()


def reindex(f, mapping):
    """``f`` with coordinate k read as coordinate ``mapping[k]``."""
    if isinstance(f, _fn.Linear):
        coeffs = np.zeros(max([mapping[k] + 1 for k in range(len(f.coeffs)) if f.coeffs[k] != 0.0] + [0]))
        for k, c in enumerate(f.coeffs):
            if c != 0.0:
                coeffs[mapping[k]] = c
        return _fn.Linear(coeffs, offset=f.offset)
    if isinstance(f, _fn.MultiPoly):
        return _fn.MultiPoly([mapping[c] for c in f.coords], f.powers, f.coeffs)
    if getattr(f, "coord", None) == "t":
        return f
    if isinstance(f, _fn.Poly):
        return _fn.Poly(mapping[f.coord], f.coeffs)
    if isinstance(f, _fn.PiecewiseLinear):
        return _fn.PiecewiseLinear(mapping[f.coord], f.x, f.y)
    if isinstance(f, _fn.Spline):
        return _fn.Spline(mapping[f.coord], f.x, f.y, end=f.end, slopes=f.slopes)
    if isinstance(f, _fn.Sum):
        return _fn.Sum(*[reindex(p, mapping) for p in f.parts])
    return f
