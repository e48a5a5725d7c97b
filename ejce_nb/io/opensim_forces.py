"""The ``ForceSet`` of an OpenSim file as force elements (``io.opensim``; ``actuation.elements``):
``CoordinateActuator``, ``SpringGeneralizedForce``, ``CoordinateLimitForce``, ``PointActuator``,
``TorqueActuator``, ``PointToPointSpring``, ``BushingForce`` and ``ExpressionBasedCoordinateForce``
(OpenSim 4 format, and the 3.3 names of their bodies and frames).  The rest of the set (muscles,
ligaments, contact forces, ...) is left out and counted.

Read in two steps: ``read_forces`` before the model is built (the elements by name, and what
is left out: every note is known then), ``make_elements`` after it (their bodies, coordinates
and velocities in the kernel model)."""
import numpy as np

from ..actuation.elements import ACTUATORS, ForceElements
from ..actuation.expression import parse
from ..core.transform import Transform
from ..errors import ModelError
from . import opensim_fn as F
from .opensim_read import _frame, _name_of_path, _text, line_of, xyz_body_fixed

SUPPORTED = ("CoordinateActuator", "SpringGeneralizedForce", "CoordinateLimitForce", "PointActuator",
             "TorqueActuator", "PointToPointSpring", "BushingForce", "ExpressionBasedCoordinateForce")
COORDINATE_KINDS = ("CoordinateActuator", "SpringGeneralizedForce", "CoordinateLimitForce",
                    "ExpressionBasedCoordinateForce")
# joints whose speeds are not their coordinates' rates (OpenSim's angular velocities)
_NOT_RATES = ("BallJoint", "FreeJoint", "EllipsoidJoint")


def _bool(el, tag, default):
    t = _text(el, tag)
    if t is None:
        return default
    if t.lower() in ("true", "1"):
        return True
    if t.lower() in ("false", "0"):
        return False
    raise ModelError(f"<{tag}>: expected true or false, got {t!r}")


def _number(el, tag, where, default):
    v = F.numbers(el, tag, where, 1)
    return default if v is None else v[0]


def _bound(el, tag, where, default):
    """A control bound: a number, or inf / -inf (OpenSim writes ``-Inf``)."""
    t = _text(el, tag)
    if t is None:
        return default
    try:
        x = float(t)
    except ValueError:
        raise ModelError(f"{where}: <{tag}>: expected a number, got {t!r}") from None
    if np.isnan(x):
        raise ModelError(f"{where}: <{tag}>: NaN")
    return x


def _unit(v, where, tag):
    a = np.asarray(v, dtype=float)
    n = np.linalg.norm(a)
    if n == 0.0:
        raise ModelError(f"{where}: <{tag}> is zero")
    return a / n


def motion_types(joints):
    """{coordinate name: "rotational", "translational" or "coupled"}: OpenSim's motion type.  A
    CustomJoint's coordinate takes it from the transform axes that read it, in the order
    rotation1..3, translation1..3: an axis whose function is a ``LinearFunction`` of slope 1
    makes it rotational (a rotation axis) or translational, the last such axis deciding; any
    other function makes it coupled unless such an axis decides (OpenSim's
    ``CustomJoint::constructCoordinates``)."""
    out = {}
    builtin = {"PinJoint": "R", "SliderJoint": "T", "UniversalJoint": "RR", "PlanarJoint": "RTT",
               "GimbalJoint": "RRR", "BallJoint": "RRR", "FreeJoint": "RRRTTT", "EllipsoidJoint": "RRR"}
    for jt in joints:
        names = [c.name for c in jt.coords]
        if jt.kind in builtin:
            for n, k in zip(names, builtin[jt.kind]):
                out[n] = "rotational" if k == "R" else "translational"
            continue
        st = jt.el.find("SpatialTransform")
        axes = {} if st is None else {ta.get("name"): ta for ta in st.findall("TransformAxis")}
        kinds = {n: None for n in names}
        for an in ("rotation1", "rotation2", "rotation3", "translation1", "translation2", "translation3"):
            ta = axes.get(an)
            if ta is None:
                continue
            holder = ta.find("function")            # OpenSim 3.3: the function inside <function>
            holder = ta if holder is None else holder
            fns = [c for c in holder if c.tag not in ("coordinates", "axis")]
            slope_one = False
            if fns and fns[0].tag == "LinearFunction":
                c = F.numbers(fns[0], "coefficients", f"{jt.where}: TransformAxis {an!r}")
                slope_one = bool(c) and c[0] == 1.0
            for u in (_text(ta, "coordinates", "") or "").split():
                if u not in kinds:
                    continue
                if slope_one:
                    kinds[u] = "rotational" if an.startswith("rotation") else "translational"
                elif kinds[u] is None:
                    kinds[u] = "coupled"
        for n, k in kinds.items():
            out[n] = k or "coupled"
    return out


class _Spec:
    """One element as read: its kind, name, where (for errors), parameters and references by name."""

    def __init__(self, kind, name, where):
        self.kind, self.name, self.where = kind, name, where
        self.params = []
        self.coordinate = None
        self.bodies = (None, None)
        self.bounds = None
        self.expression = None
        self.applies = True


def read_forces(model_el, joints, bodies, coord_at, locked_value, v33, objects):
    """(specs, left {kind: count}, notes) of the model's ``ForceSet`` (``objects``: its
    elements).  ``coord_at``: the coordinates the model keeps; ``locked_value``: the welded and
    time-driven ones; ``bodies``: the body names."""
    kinds = {c.name: jt.kind for jt in joints for c in jt.coords}
    mtype = None        # the coordinates' motion types, read where a CoordinateLimitForce needs them
    frames_of = {jt.name: jt for jt in joints}
    specs, left, notes = [], {}, []
    for el in objects:
        kind = el.tag
        if kind not in SUPPORTED:
            left[kind] = left.get(kind, 0) + 1
            continue
        name = el.get("name") or kind
        w = f"ForceSet: {kind} {name!r}{line_of(el)}"
        sp = _Spec(kind, name, w)
        try:
            sp.applies = _bool(el, "appliesForce", True) and not _bool(el, "isDisabled", False)
        except ModelError as e:
            raise ModelError(f"{w}: {e}") from None
        if kind in ACTUATORS:
            lo, hi = _bound(el, "min_control", w, -np.inf), _bound(el, "max_control", w, np.inf)
            sp.bounds = (lo, hi)
        if kind in COORDINATE_KINDS:
            c = _text(el, "coordinate")
            if not c or c == "UNASSIGNED":
                raise ModelError(f"{w}: <coordinate> is missing")
            c = _name_of_path(c)
            if c not in kinds:
                raise ModelError(f"{w}: no coordinate named {c!r}")
            if c in locked_value:
                why = "locked (welded at its default value)" if locked_value[c] is not None else \
                    "prescribed (a function of time)"
                notes.append(f"{kind} {name!r} acts on coordinate {c!r}, which is {why}: it moves nothing here")
                sp.applies = False
            elif kinds[c] in _NOT_RATES:
                notes.append(f"{kind} {name!r} acts on coordinate {c!r} of a {kinds[c]} (whose speeds are not "
                             "its coordinates' rates): left out")
                sp.applies = False
            elif c not in coord_at:
                raise ModelError(f"{w}: coordinate {c!r} is not a coordinate of the model")
            sp.coordinate = c
        if kind == "CoordinateActuator":
            sp.params = [_number(el, "optimal_force", w, 1.0)]
        elif kind == "SpringGeneralizedForce":
            sp.params = [_number(el, "stiffness", w, 0.0), _number(el, "rest_length", w, 0.0),
                         _number(el, "viscosity", w, 0.0)]
        elif kind == "CoordinateLimitForce":
            mtype = motion_types(joints) if mtype is None else mtype
            s = np.pi / 180.0 if mtype.get(sp.coordinate) == "rotational" else 1.0
            kup, qup = _number(el, "upper_stiffness", w, 1.0), _number(el, "upper_limit", w, 0.0)
            klo, qlo = _number(el, "lower_stiffness", w, 1.0), _number(el, "lower_limit", w, 0.0)
            damp, tr = _number(el, "damping", w, 0.001), _number(el, "transition", w, 0.1)
            sp.params = [kup / s, klo / s, s * qup, s * qlo, s * tr, damp / s]
        elif kind == "ExpressionBasedCoordinateForce":
            # OpenSim removes every blank before parsing
            sp.expression = parse("".join((_text(el, "expression", "0.0") or "").split()), w)
        elif kind == "PointActuator":
            sp.bodies = (_body_name(el, ("body",), bodies, w), None)
            p = F.numbers(el, "point", w, 3) or [0.0, 0.0, 0.0]
            d = _unit(F.numbers(el, "direction", w, 3) or [1.0, 0.0, 0.0], w, "direction")
            try:
                pg, fg = _bool(el, "point_is_global", False), _bool(el, "force_is_global", False)
            except ModelError as e:
                raise ModelError(f"{w}: {e}") from None
            sp.params = [_number(el, "optimal_force", w, 1.0), *p, *d, float(pg), float(fg)]
        elif kind == "TorqueActuator":
            a = _body_name(el, ("bodyA",), bodies, w)
            b = _body_name(el, ("bodyB",), bodies, w, required=False)
            sp.bodies = (a, b)
            ax = _unit(F.numbers(el, "axis", w, 3) or [0.0, 0.0, 1.0], w, "axis")
            try:
                g = _bool(el, "torque_is_global", True)
            except ModelError as e:
                raise ModelError(f"{w}: {e}") from None
            sp.params = [_number(el, "optimal_force", w, 1.0), *ax, float(g)]
        elif kind == "PointToPointSpring":
            b1 = _body_name(el, ("socket_body1", "body1"), bodies, w, frames=(frames_of, el))
            b2 = _body_name(el, ("socket_body2", "body2"), bodies, w, frames=(frames_of, el))
            p1 = np.asarray(F.numbers(el, "point1", w, 3) or [0.0, 0.0, 0.0])
            p2 = np.asarray(F.numbers(el, "point2", w, 3) or [0.0, 0.0, 0.0])
            # a socket may name an offset frame: OpenSim then takes the points in its base body's frame
            # (Simbody's TwoPointLinearSpring on the frames' mobilized bodies), and so does this
            sp.bodies = (b1[0], b2[0])
            sp.params = [_number(el, "stiffness", w, 1.0), _number(el, "rest_length", w, 0.0), *p1, *p2]
        elif kind == "BushingForce":
            (n1, T1), (n2, T2) = _bushing_frames(el, bodies, w, frames_of, v33)
            sp.bodies = (n1, n2)
            k = (F.numbers(el, "rotational_stiffness", w, 3) or [0.0] * 3) + \
                (F.numbers(el, "translational_stiffness", w, 3) or [0.0] * 3)
            c = (F.numbers(el, "rotational_damping", w, 3) or [0.0] * 3) + \
                (F.numbers(el, "translational_damping", w, 3) or [0.0] * 3)
            sp.params = [*np.asarray(T1.rotation).ravel(), *T1.translation, *np.asarray(T2.rotation).ravel(),
                         *T2.translation, *k, *c]
        specs.append(sp)
    return specs, left, notes


class _Frames:
    def __init__(self, el):
        self.frames = {}
        fr = el.find("frames")
        for f in ([] if fr is None else fr.findall("PhysicalOffsetFrame")):
            self.frames[f.get("name")] = f


def _resolve_frame(path, el, bodies, w, frames_of):
    """(body name, Transform in the body) of a frame path: the force's own offset frames, a
    joint's (``/jointset/<joint>/<frame>``), a body or the ground."""
    parts = [p for p in path.split("/") if p]
    if len(parts) == 3 and parts[0] == "jointset" and parts[1] in frames_of:
        jt = frames_of[parts[1]]
        if parts[2] in jt.frames:
            return _frame(jt, parts[2], bodies, w)
    try:
        return _frame(_Frames(el), path, bodies, w)
    except ModelError:
        raise ModelError(f"{w}: frame {path!r} is neither a frame of the force, a joint's frame nor a body") from None


def _body_name(el, tags, bodies, w, required=True, frames=None):
    for tag in tags:
        t = _text(el, tag)
        if t:
            if frames is not None:
                return _resolve_frame(t, el, bodies, w, frames[0])
            n = _name_of_path(t)
            if n in bodies or n == "ground":
                return n
            raise ModelError(f"{w}: <{tag}>: no body named {t!r}")
    if required:
        raise ModelError(f"{w}: <{tags[0]}> is missing")
    return None


def _bushing_frames(el, bodies, w, frames_of, v33):
    out = []
    for k in (1, 2):
        path = _text(el, f"socket_frame{k}")
        if path:
            out.append(_resolve_frame(path, el, bodies, w, frames_of))
            continue
        b = _text(el, f"body_{k}")          # OpenSim 3.3
        if not b:
            raise ModelError(f"{w}: <socket_frame{k}> is missing")
        n = _name_of_path(b)
        if n not in bodies and n != "ground":
            raise ModelError(f"{w}: <body_{k}>: no body named {b!r}")
        loc = F.numbers(el, f"location_body_{k}", w, 3) or [0.0, 0.0, 0.0]
        ori = F.numbers(el, f"orientation_body_{k}", w, 3) or [0.0, 0.0, 0.0]
        out.append((n, Transform(xyz_body_fixed(ori), np.asarray(loc, dtype=float))))
    return out


def make_elements(specs, model):
    """The ``ForceElements`` of ``specs`` on the built ``model`` (bodies by index, coordinates in
    its kernel model), or None without specs."""
    if not specs:
        return None
    km = model.kernel_model()
    names = list(km.coordinate_names)
    E = ForceElements()
    for sp in specs:
        qa = dof = -1
        if sp.coordinate is not None and sp.applies:
            qa = names.index(sp.coordinate)
            j = next(j for j in range(len(km.jnt_qadr)) if km.jnt_qadr[j] <= qa < km.jnt_qadr[j] + km.jnt_nq[j])
            dof = int(km.jnt_dofadr[j] + (qa - km.jnt_qadr[j]))
        b1, b2 = (-1 if b is None else (0 if b == "ground" else model.body_index(b)) for b in sp.bodies)
        E.add(sp.kind, sp.name, sp.params, qadr=qa, dof=dof, body1=b1, body2=b2, bounds=sp.bounds,
              expression=sp.expression, applies=sp.applies)
    return E
