"""OpenSim models (``.osim``, OpenSim 4 format; the 3.3 format, joints inside their child bodies,
read as its OpenSim 4 equivalent) as ``ej.Model``: bodies, joints, coordinates, coordinate
couplers and force elements (``opensim_forces``: ``model.actuation``), read with expat without
namespace processing (``xmltree``: OpenSim's element names with C++ scopes,
``HuntCrossleyForce::ContactParametersSet``, are legal XML names; OpenSim itself is not needed).

The mapping from OpenSim's elements to the model is stated in ``load_opensim``'s docstring; the
functions are read by ``opensim_fn``.
"""
import warnings

import numpy as np

from ..errors import ModelError
from ..model.builder import ModelBuilder, balance_inertia as _balance, inertia_defect
from . import opensim_fn as F
from .opensim_forces import make_elements, read_forces
from .opensim_joints import _coupler, _joint_spec
from .opensim_read import _Joint, _closure, _frame, _is_33, _named_frames, _objects, _read, _text, line_of
from .opensim_read import xyz_body_fixed  # noqa: F401  (OpenSim's frame orientation, R = Rx Ry Rz)
from .urdf import InertiaWarning


class OpenSimWarning(UserWarning):
    """What an OpenSim file holds that the model leaves out (forces, contact geometry, probes,
    controllers, other constraints): a ``UserWarning`` with ``left_out`` ({kind: count}); also in
    ``Model.notes``."""

    def __init__(self, message, left_out=None):
        super().__init__(message)
        self.left_out = dict(left_out or {})


def attach(model, elements):
    """``model`` (just built) driven by its force elements (``model.actuation``)."""
    from ..actuation.tables import Actuation

    km = model.kernel_model()
    act = Actuation.from_elements(elements, km.nv, km.nbodies + 1)
    return model.with_actuation(act)


def load_opensim(path, locked="fixed", prescribed="time", strict=False, balance_inertia=False):
    """Load an OpenSim model file (``.osim``, OpenSim 4 format or the 3.3 format with joints
    inside their bodies; or the XML text itself, a string starting with ``<``) as an
    ``ej.Model``.  The file is read with expat without namespace processing, as OpenSim reads it
    (element names such as ``HuntCrossleyForce::ContactParametersSet`` load; OpenSim itself is
    not needed).  Body 0 is OpenSim's ground; ``body_names`` and ``joint_names`` are OpenSim's,
    and ``coordinate_names`` / ``velocity_names`` its coordinate names.

    ``locked``: ``"fixed"`` welds locked coordinates at their default value, ``"free"`` keeps
    them as coordinates.  ``prescribed``: ``"time"`` makes each prescribed coordinate with a
    ``prescribed_function`` that function of time (a rheonomic joint; the coordinate leaves q),
    ``"free"`` keeps it as a coordinate.  Inertias that are not physically consistent (common in
    published models) are kept as written with an ``ej.InertiaWarning`` naming the file and
    body; ``strict=True`` refuses them, ``balance_inertia=True`` balances them (as
    ``load_urdf``).  Each joint's coordinates keep OpenSim's order.

    | OpenSim | ejce_nb |
    |---|---|
    | ``Body`` ``mass``, ``mass_center``, ``inertia`` (Ixx Iyy Izz Ixy Ixz Iyz about the COM, body axes) | ``mass``, ``com``, ``inertia`` |
    | ``gravity`` | ``gravity`` |
    | joint ``socket_parent_frame`` / ``socket_child_frame`` (``PhysicalOffsetFrame``: ``translation``, ``orientation`` = body-fixed X-Y-Z Euler angles, R = Rx Ry Rz; or a body) | ``placement`` / ``child_placement`` |
    | ``CustomJoint`` (``SpatialTransform``) | ``Composite``: ``translation1..3`` along their axes of P, then ``rotation1..3`` about their axes, each in the frame the previous rotations moved to; each amount a function of the joint's coordinates; axes need not be orthogonal; leading constant motions go into ``placement`` |
    | ``PinJoint``, ``SliderJoint`` | ``Revolute`` about z, ``Prismatic`` along x |
    | ``UniversalJoint`` (rx, ry), ``PlanarJoint`` (rz, tx, ty), ``GimbalJoint`` (X-Y-Z body-fixed) | ``Composite`` (rotation about x then the moved y; translations along x, y then rotation about z; three rotations) |
    | ``BallJoint`` (rx, ry, rz), ``FreeJoint`` (rx, ry, rz, tx, ty, tz) | ``Composite`` of the same poses, with OpenSim's coordinates; **velocities are the coordinate rates** (OpenSim's speeds are angular velocities) |
    | ``EllipsoidJoint`` (rx, ry, rz; ``radii_x_y_z``) | ``Ellipsoid(radii)``; **velocities are the angle rates** (OpenSim's speeds are the angular velocity in P: u = E(q) qd, tau = E^T tau_OpenSim) |
    | 3.3 format: a ``Body``'s ``Joint`` (``parent_body``, ``location_in_parent``, ``orientation_in_parent``, ``location``, ``orientation``, ``CoordinateSet``), ``inertia_xx`` ... ``inertia_yz``, a transform axis' ``<function>``, a constraint's ``isDisabled`` | the same as their OpenSim 4 counterparts (``reverse`` joints are refused) |
    | ``WeldJoint`` | ``Fixed`` |
    | a joint's ``PhysicalOffsetFrame``s (OpenSim 4 format) | named frames ``/jointset/<joint>/<frame>`` (OpenSim's path) on their bodies |
    | ``MarkerSet`` ``Marker`` (``socket_parent_frame`` a body, the ground or such an offset frame; 3.3: ``body``), ``location`` | a named frame of the marker's name (``_marker`` appended where a body has it) at the location, in its parent frame's axes |
    | ``Coordinate`` ``default_value``, ``range``, ``locked`` | ``neutral()``, ``q_lower`` / ``q_upper``; locked ones welded at their default value (``locked="free"`` keeps them) |
    | ``Coordinate`` ``prescribed`` with a ``prescribed_function`` (of time) | the coordinate leaves q and its joint moves with time (rheonomic; ``t`` of every algorithm): each transform axis linear in it takes the function of time in its place (a nonlinear function of a prescribed coordinate is refused); ``prescribed="free"`` keeps it as a coordinate; prescribed without a function: a coordinate (noted) |
    | ``CoordinateCouplerConstraint`` (enforced) | a coupler (``ModelBuilder.add_coupler``; ``scale_factor`` its scale): the dependent coordinate is eliminated exactly |
    | ``PointConstraint``, ``WeldConstraint`` (enforced) | a spherical loop closure at its two locations; a Fixed loop closure of its two frames (``ModelBuilder.add_loop``) |
    | ``Constant``, ``LinearFunction`` (slope, intercept), ``PolynomialFunction`` (highest power first), ``SimmSpline`` and ``NaturalCubicSpline`` (OpenSim reads both as ``SimmSpline``), ``PiecewiseLinearFunction``, ``MultiplierFunction`` | ``fn.Linear``, ``fn.Poly``, ``fn.Spline(end="simm")``, ``fn.PiecewiseLinear``, the function scaled |
    | ``MultivariatePolynomialFunction`` (``dimension``, ``order``, ``coefficients``: every monomial of total degree <= order, the first argument's power in the outer loop) on a transform axis or coupler of several coordinates (in the order ``coordinates`` lists them; locked ones at their default value) | ``fn.MultiPoly`` (exact to second derivatives; OpenSim's own evaluates it to first derivatives only, so its ``InverseDynamicsSolver`` leaves out the function's second-derivative terms) |
    | ``Sine`` (amplitude, omega, phase, offset) as a ``prescribed_function``; the one-argument functions above of time | ``fn.Harmonic`` + ``fn.TimePoly``; ``coord="t"`` |
    | ``ForceSet``: ``CoordinateActuator``, ``SpringGeneralizedForce``, ``CoordinateLimitForce``, ``PointActuator``, ``TorqueActuator``, ``PointToPointSpring``, ``BushingForce`` (its ``frames``, or 3.3's ``body_1`` ...), ``ExpressionBasedCoordinateForce``; ``appliesForce`` | ``model.actuation`` (``Actuation.from_elements``): its ``elements`` (``ejce_nb.actuation.elements.ForceElements``, OpenSim's equations there), the actuators' controls (in file order, named as the actuators) the last entries of ``ctrl``, applied unclamped as OpenSim does (``min_control``, ``max_control``: ``elements.ctrl_bounds``) |

    Refused with an ``ej.ModelError`` naming the file, the joint or constraint and the element
    (and its line): other joint kinds (``ScapulothoracicJoint``, ...), other functions
    (``StepFunction``, ``GCVSpline``, ...), a function of one argument given several
    coordinates, a ``MultivariatePolynomialFunction`` whose ``dimension`` is not its number of
    coordinates, locked or prescribed coordinates of an ``EllipsoidJoint``, malformed XML,
    missing frames or bodies, bodies without a joint, a body with two joints (a closed loop of
    joints), splines with unordered knots, couplers
    naming unknown, locked or prescribed coordinates; a force naming a missing coordinate, body
    or frame, an ``ExpressionBasedCoordinateForce`` whose expression does not parse (the force,
    the expression and the position).  Not loaded (a rigid-body model does not
    hold them) and reported by one ``ej.OpenSimWarning`` (``left_out``: {kind: count}) and in
    ``model.summary()`` / ``model.notes``: other forces (muscles, ligaments, contact forces
    such as ``HuntCrossleyForce`` and ``ElasticFoundationForce``), contact geometry, probes,
    controllers, constraints other than couplers and loop closures (an enforced one is said to
    leave its freedoms free); a coordinate force on a locked or prescribed coordinate (it moves
    nothing) or on a coordinate of a ``BallJoint``, ``FreeJoint`` or ``EllipsoidJoint`` (whose
    speeds are not the coordinates' rates) is kept in its place, applying nothing, and noted."""
    if locked not in ("fixed", "free"):
        raise ModelError(f'load_opensim: locked must be "fixed" or "free", got {locked!r}')
    if prescribed not in ("time", "free"):
        raise ModelError(f'load_opensim: prescribed must be "time" or "free", got {prescribed!r}')
    if strict and balance_inertia:
        raise ModelError("load_opensim: strict=True refuses inconsistent inertias and balance_inertia=True "
                         "repairs them; give one or the other")
    model, source = _read(path)
    try:
        return _load(model, source, locked == "fixed", prescribed == "time",
                     "raise" if strict else "balance" if balance_inertia else "keep")
    except ModelError as e:
        msg = str(e)
        raise ModelError(msg if msg.startswith(source) else f"{source}: {msg}") from None


def _load(model, source, fix_locked, drive, policy):
    g = F.numbers(model, "gravity", "<gravity>", 3)
    gravity = (0.0, -9.80665, 0.0) if g is None else g
    bodies = {}
    v33 = _is_33(model)
    joints = []
    for el in _objects(model, "BodySet"):
        if el.tag != "Body":
            raise ModelError(f"BodySet: unknown element <{el.tag}>{line_of(el)}")
        name = el.get("name")
        w = f"body {name!r}{line_of(el)}"
        if v33 and name == "ground":
            continue
        if not name or name in bodies or name == "ground":
            raise ModelError(f"{w}: a body needs a unique name (not 'ground')")
        mass = (F.numbers(el, "mass", w, 1) or [0.0])[0]
        com = F.numbers(el, "mass_center", w, 3) or [0.0, 0.0, 0.0]
        if v33:
            i6 = [(F.numbers(el, f"inertia_{a}", w, 1) or [0.0])[0] for a in ("xx", "yy", "zz", "xy", "xz", "yz")]
            jw = el.find("Joint")
            if jw is not None and len(jw):
                if len(jw) != 1:
                    raise ModelError(f"{w}: <Joint> holds {len(jw)} joints; one expected")
                joints.append(_Joint(jw[0], f"body {name!r}", child33=name))
        else:
            i6 = F.numbers(el, "inertia", w, 6) or [0.0] * 6
        I = np.array([[i6[0], i6[3], i6[4]], [i6[3], i6[1], i6[5]], [i6[4], i6[5], i6[2]]])
        bodies[name] = (mass, com, I)
    for el in _objects(model, "JointSet"):
        joints.append(_Joint(el, "JointSet"))
    # the tree: each body has one joint; parents before children
    by_child, order = {}, []
    for jt in joints:
        pb, P = _frame(jt, jt.parent_frame, bodies, jt.where)
        cb, Cp = _frame(jt, jt.child_frame, bodies, jt.where)
        if cb == "ground":
            raise ModelError(f"{jt.where}: the child frame is on the ground (reversed joints are not supported)")
        if cb in by_child:
            raise ModelError(f"{jt.where}: body {cb!r} already has joint {by_child[cb][0].name!r} (closed loops "
                             "are not supported)")
        by_child[cb] = (jt, pb, P, Cp)
    placed = {"ground"}
    while len(order) < len(by_child):
        grew = False
        for cb, (jt, pb, P, Cp) in by_child.items():
            if cb not in placed and pb in placed:
                order.append(cb)
                placed.add(cb)
                grew = True
        if not grew:
            rest = sorted(set(by_child) - placed)
            raise ModelError(f"bodies {rest} are not connected to the ground by joints")
    missing = sorted(set(bodies) - set(by_child))
    if missing:
        raise ModelError(f"bodies {missing} have no joint (every OpenSim body needs one)")

    b = ModelBuilder(gravity=gravity)
    notes, coord_at, locked_value = [], {}, {}
    reports = []
    for cb in order:
        jt, pb, P, Cp = by_child[cb]
        spec, P2, names, kept = _joint_spec(jt, P, fix_locked, drive, locked_value)
        mass, com, I = bodies[cb]
        defect = inertia_defect(I) if np.abs(I).max() > 0 else None
        as_written = False
        if defect is not None:
            if policy == "raise":
                raise ModelError(f"body {cb!r}: <inertia>: {defect} (strict=True refuses physically inconsistent "
                                 "inertias)")
            reports.append((cb, defect, np.linalg.eigvalsh(I).tolist(), policy == "balance"))
            if policy == "balance":
                I = _balance(I)
            else:
                as_written = True
        j = b.add_body(cb, parent="world" if pb == "ground" else pb, joint=spec, placement=P2, child_placement=Cp,
                       mass=mass, com=com, inertia=I, inertia_as_written=as_written, joint_name=jt.name,
                       q_lower=[c.range[0] for c in kept] or None, q_upper=[c.range[1] for c in kept] or None,
                       coordinate_names=names or None, q_default=[c.default for c in kept] or None)
        for k, c in enumerate(kept):
            coord_at[c.name] = (j, k)
        for c in jt.coords:
            if c.prescribed and c in kept:
                why = "without a prescribed_function" if c.motion is None else "(loaded with prescribed='free')"
                notes.append(f"coordinate {c.name!r} is prescribed in the file {why}; it is a free coordinate here")
            elif c.prescribed and c.name not in locked_value:
                notes.append(f"coordinate {c.name!r} is prescribed: a function of time")
    _named_frames(b, model, joints, bodies, v33)
    left = {}
    for el in _objects(model, "ConstraintSet"):
        enforced = (_text(el, "isEnforced", "true").lower() == "true"
                    and _text(el, "isDisabled", "false").lower() != "true")     # 3.3: isDisabled
        if el.tag == "CoordinateCouplerConstraint" and enforced:
            _coupler(b, el, coord_at, locked_value)
        elif el.tag in ("PointConstraint", "WeldConstraint") and enforced:
            _closure(b, el, bodies, source)
        else:
            # an enforced constraint left out leaves the model the freedoms it removes: said so
            key = el.tag + (" (enforced: its freedoms stay free here)" if enforced else " (not enforced)")
            left[key] = left.get(key, 0) + 1
    specs, left_forces, force_notes = read_forces(model, joints, bodies, coord_at, locked_value, v33,
                                                  _objects(model, "ForceSet"))
    notes += force_notes
    for k, n in left_forces.items():
        left[k] = left.get(k, 0) + n
    for set_tag in ("ContactGeometrySet", "ProbeSet", "ControllerSet", "ComponentSet"):
        for el in _objects(model, set_tag):
            left[el.tag] = left.get(el.tag, 0) + 1
    if left:
        notes.append("left out: " + ", ".join(f"{n} {k}" for k, n in sorted(left.items())))
    b.notes = notes
    m = b.build()
    elements = make_elements(specs, m)
    if elements is not None:
        m = attach(m, elements)
    for body, defect, moments, balanced in reports:
        what = "balanced" if balanced else "kept as written (balance_inertia=True balances it, strict=True refuses it)"
        warnings.warn(InertiaWarning(f"{source}: body {body!r}: <inertia>: {defect}; {what}", source=source,
                                     link=body, moments=moments, balanced=balanced), stacklevel=3)
    if left or force_notes:
        said = [("not loaded (a rigid-body model does not hold them): "
                 + ", ".join(f"{n} {k}" for k, n in sorted(left.items())))] if left else []
        warnings.warn(OpenSimWarning(f"{source}: " + "; ".join(said + force_notes), left), stacklevel=3)
    return m
