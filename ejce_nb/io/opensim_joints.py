"""OpenSim joints as joint specs (``io.opensim``): a ``CustomJoint``'s ``SpatialTransform`` (three
translations along axes of P, then three rotations, each about its axis in the frame the previous
ones moved to, each amount a function of the joint's coordinates) as a ``Composite``, the built-in
kinds as their fixed sequence of such motions; locked and prescribed coordinates substituted into
the amounts; ``CoordinateCouplerConstraint`` as a coupler."""
import numpy as np

from ..core.joints import fn as _fn
from ..core.joints import specs as J
from ..core.transform import Transform
from ..errors import ModelError
from . import opensim_fn as F
from .opensim_read import X, Y, Z, _rot, _text, line_of

# (rotation or translation, axis, coordinate) of each built-in joint kind, in Composite order
_BUILTIN = {"WeldJoint": [], "PinJoint": [("R", Z, 0)], "SliderJoint": [("T", X, 0)],
            "UniversalJoint": [("R", X, 0), ("R", Y, 1)],
            "PlanarJoint": [("T", X, 1), ("T", Y, 2), ("R", Z, 0)],
            "GimbalJoint": [("R", X, 0), ("R", Y, 1), ("R", Z, 2)],
            "BallJoint": [("R", X, 0), ("R", Y, 1), ("R", Z, 2)],
            "FreeJoint": [("T", X, 3), ("T", Y, 4), ("T", Z, 5), ("R", X, 0), ("R", Y, 1), ("R", Z, 2)]}


def _joint_spec(jt, P, fix_locked, drive, locked_value):
    """(joint spec, placement, coordinate names, kept coordinates) of an OpenSim joint; locked
    coordinates welded at their default value when ``fix_locked``; prescribed ones (with a
    function) driven by their function of time when ``drive``."""
    cnames = [c.name for c in jt.coords]
    motions = []      # (kind "R"/"T", axis, fn of the joint's OpenSim coordinates)
    if jt.kind == "EllipsoidJoint":
        if len(cnames) != 3:
            raise ModelError(f"{jt.where}: 3 coordinates expected, got {len(cnames)}")
        radii = F.numbers(jt.el, "radii_x_y_z", jt.where, 3)
        if radii is None:
            raise ModelError(f"{jt.where}: <radii_x_y_z> is missing")
        if fix_locked and any(c.locked for c in jt.coords) or drive and any(c.motion is not None for c in jt.coords):
            raise ModelError(f"{jt.where}: a locked or prescribed coordinate of an EllipsoidJoint cannot be "
                             "fixed or driven (load with locked='free' and prescribed='free' to keep it as a "
                             "coordinate)")
        try:
            spec = J.Ellipsoid(radii)
        except ModelError as e:
            raise ModelError(f"{jt.where}: <radii_x_y_z>: {e}") from None
        return spec, P, cnames, list(jt.coords)
    if jt.kind == "CustomJoint":
        st = jt.el.find("SpatialTransform")
        if st is None:
            raise ModelError(f"{jt.where}: <SpatialTransform> is missing")
        axes = {ta.get("name"): ta for ta in st.findall("TransformAxis")}
        for kind, names in (("T", ("translation1", "translation2", "translation3")),
                            ("R", ("rotation1", "rotation2", "rotation3"))):
            for an in names:
                ta = axes.get(an)
                if ta is None:
                    continue
                w = f"{jt.where}: TransformAxis {an!r}"
                axis = F.numbers(ta, "axis", w, 3)
                if axis is None or np.linalg.norm(axis) == 0.0:
                    raise ModelError(f"{w}: <axis> is missing or zero")
                used = (_text(ta, "coordinates", "") or "").split()
                for u in used:
                    if u not in cnames:
                        raise ModelError(f"{w}: coordinate {u!r} is not a coordinate of the joint ({cnames})")
                holder = ta.find("function")        # OpenSim 3.3: the function inside <function>
                holder = ta if holder is None else holder
                el = [c for c in holder if c.tag not in ("coordinates", "axis")]
                if not el:
                    if used:
                        raise ModelError(f"{w}: a coordinate but no function")
                    continue
                f = F.translate(F.function_element(holder, w), [cnames.index(u) for u in used], w)
                motions.append((kind, np.asarray(axis) / np.linalg.norm(axis), f))
    else:
        need = max([c for _, _, c in _BUILTIN[jt.kind]] + [-1]) + 1
        if len(cnames) != need:
            raise ModelError(f"{jt.where}: {need} coordinates expected, got {len(cnames)}")
        motions = [(kind, np.asarray(ax), _fn.Linear(np.eye(need)[c])) for kind, ax, c in _BUILTIN[jt.kind]]
    # locked coordinates -> their default value
    kept = [c for c in jt.coords if not (fix_locked and c.locked) and not (drive and c.motion is not None)]
    driven = {k: c.motion for k, c in enumerate(jt.coords) if c not in kept and not (fix_locked and c.locked)}
    mapping = {k: kept.index(c) for k, c in enumerate(jt.coords) if c in kept}
    q0 = np.array([c.default for c in jt.coords])
    out = []
    for kind, ax, f in motions:
        if _reads(f) & set(driven):
            f = _drive(f, driven, jt)
        reads = _reads(f)
        if isinstance(f, _fn.MultiPoly) and not set(f.coords) <= set(mapping):
            f = _substitute(f, {k: q0[k] for k in set(f.coords) - set(mapping)})
            reads = _reads(f)
        if reads and not reads <= set(mapping):
            if reads & set(mapping):
                raise ModelError(f"{jt.where}: a transform axis reads both locked and free coordinates")
            f = _fn.Linear([], offset=f.value(q0))
        elif reads:
            f = F.reindex(f, mapping)
        if not F.is_zero(f):
            out.append((kind, ax, f))
    for c in jt.coords:
        if fix_locked and c.locked:
            locked_value[c.name] = c.default
        elif c not in kept:
            locked_value[c.name] = None         # prescribed
    # leading constant motions become part of the placement
    R, r = np.array(P.rotation, dtype=float), np.array(P.translation, dtype=float)
    while out and F.is_constant(out[0][2]):
        kind, ax, f = out.pop(0)
        a = f.value(np.zeros(len(kept)))
        if kind == "R":
            R = R @ _rot(ax, a)
        else:
            r = r + R @ (np.asarray(ax) * a)
    P2 = Transform(R, r)
    names = [c.name for c in kept]
    if not out:
        return J.Fixed(), P2, [], []
    if len(out) == 1 and len(kept) == 1:
        kind, ax, f = out[0]
        if isinstance(f, _fn.Linear) and f.offset == 0.0 and len(f.coeffs) == 1 and f.coeffs[0] == 1.0:
            return (J.Revolute(ax) if kind == "R" else J.Prismatic(ax)), P2, names, kept
    mots = [(J.Rot if kind == "R" else J.Trans)(ax, f) for kind, ax, f in out]
    return J.Composite(mots, len(kept)), P2, names, kept


def _reads(f):
    parts = f.parts if isinstance(f, _fn.Sum) else [f]
    out = set()
    for p in parts:
        if isinstance(p, _fn.Linear):
            out |= {k for k, c in enumerate(p.coeffs) if c != 0.0}
        elif isinstance(p, _fn.MultiPoly):
            out |= {c for j, c in enumerate(p.coords) if np.any((p.powers[:, j] != 0) & (p.coeffs != 0))}
        elif getattr(p, "coord", "t") != "t":
            out.add(p.coord)
    return out


def _drive(f, driven, jt):
    """``f`` with the prescribed coordinates of ``driven`` ({coordinate: function of time})
    replaced by their functions: for a ``Linear`` f, ``offset + sum c_k q_k`` becomes the sum of
    the free terms and ``c_k g_k(t)``; other functions of a prescribed coordinate are refused."""
    parts = f.parts if isinstance(f, _fn.Sum) else [f]
    out = []
    for p in parts:
        if not (_reads(p) & set(driven)):
            out.append(p)
            continue
        if not isinstance(p, _fn.Linear):
            names = ", ".join(repr(jt.coords[k].name) for k in sorted(_reads(p) & set(driven)))
            raise ModelError(f"{jt.where}: a transform axis is a nonlinear function ({p!r}) of the prescribed "
                             f"coordinate {names}; only linear ones can be driven (load with prescribed='free' "
                             "to keep it as a coordinate)")
        coeffs = p.coeffs.copy()
        for k in driven:
            if k < len(coeffs) and coeffs[k] != 0.0:
                out.append(F.scaled(driven[k], float(coeffs[k])))
                coeffs[k] = 0.0
        rest = _fn.Linear(np.trim_zeros(coeffs, "b"), offset=p.offset)
        if not F.is_zero(rest):
            out.append(rest)
    return out[0] if len(out) == 1 else _fn.Sum(*out)


def _substitute(f, values):
    """The MultiPoly ``f`` with the coordinates of ``values`` ({coordinate: value}) fixed."""
    keep = [j for j, c in enumerate(f.coords) if c not in values]
    coeffs = f.coeffs.copy()
    for j, c in enumerate(f.coords):
        if c in values:
            coeffs = coeffs * values[c] ** f.powers[:, j]
    if not keep:
        return _fn.Linear([], offset=float(coeffs.sum()))
    return _fn.MultiPoly([f.coords[j] for j in keep], f.powers[:, keep], coeffs)


def _coupler(b, el, coord_at, locked_value):
    name = el.get("name")
    w = f"CoordinateCouplerConstraint {name!r}{line_of(el)}"
    dep = _text(el, "dependent_coordinate_name")
    ind = (_text(el, "independent_coordinate_names", "") or "").split()
    if not dep or not ind:
        raise ModelError(f"{w}: <dependent_coordinate_name> and <independent_coordinate_names> are required")
    for c in [dep] + ind:
        if c in locked_value:
            what = "locked (load with locked='free'" if locked_value[c] is not None else \
                "prescribed (load with prescribed='free'"
            raise ModelError(f"{w}: coordinate {c!r} is {what} to keep it)")
        if c not in coord_at:
            raise ModelError(f"{w}: no coordinate named {c!r}")
    fe = el.find("coupled_coordinates_function")
    if fe is None:
        raise ModelError(f"{w}: <coupled_coordinates_function> is missing")
    f = F.translate(F.function_element(fe, w), list(range(len(ind))), w)
    s = F.numbers(el, "scale_factor", w, 1)
    try:
        b.add_coupler(coord_at[dep], [coord_at[c] for c in ind], f, 1.0 if s is None else s[0])
    except ModelError as e:
        raise ModelError(f"{w}: {e}") from None
