"""OpenSim's force elements as flat tables (``ForceElements``) and the compiled function that adds
their generalised forces (``add_element_forces``).

Every element acts on the kernel model (``model.kernel_model()``: for a model with couplers its
expansion, whose coordinates include the dependent ones); ``q``, ``v`` below are that model's
coordinates and velocities, body 0 the ground.  A coordinate of an OpenSim joint whose speed is
the coordinate's rate (every joint kind but ``BallJoint``, ``FreeJoint``, ``EllipsoidJoint``) has
one entry ``qa`` of q and one ``d`` of v.  ``u`` is the element's control (actuators only), the
forces are in newtons, newton-metres, the generalised force ``Q`` added to ``qfrc``:

| kind | force |
|---|---|
| ``CoordinateActuator`` | Q_d += F_opt u |
| ``SpringGeneralizedForce`` | Q_d += -k (q_qa - rest_length) - viscosity v_d |
| ``CoordinateLimitForce`` | Q_d += -K_up (q - q_up) + K_lo (q_lo - q) - damping (K_up/k_up + K_lo/k_lo) v_d, with K_up = k_up step((q - q_up)/tr), K_lo = k_lo (1 - step((q - q_lo + tr)/tr)), step(x) = x^3 (10 - 15 x + 6 x^2) on [0, 1] (Simbody's ``Function::Step``); limits, transition and stiffness of a rotational coordinate given in degrees (and N m / degree) in the file, kept here in radians |
| ``PointActuator`` | the force F_opt u d at the point p of its body (d unit, in the body's frame or the ground's: ``force_is_global``; p in the body's frame, or the ground's at this instant: ``point_is_global``) |
| ``TorqueActuator`` | the torque F_opt u a (a unit, in the ground's frame or body A's: ``torque_is_global``) on body A, its opposite on body B |
| ``PointToPointSpring`` | f = k (L - rest_length) (x2 - x1) / L on body 1 at x1, -f on body 2 at x2 (L = abs(x2 - x1); points in their bodies' frames, also where a socket names an offset frame, as OpenSim) |
| ``BushingForce`` | Simbody's ``Force::LinearBushing`` between frame F (on body 1) and M (on body 2): deflection q = (body-fixed X-Y-Z angles of R_FM, p_FM in F), its rate qdot = (N(q) w_FM in M, the velocity of M's origin in F); f = -(K q + C qdot) (rotational entries first); the moment N^T f_rot (M axes) and the force f_trans (F axes) act on body 2 at M's origin, their opposites on body 1 there |
| ``ExpressionBasedCoordinateForce`` | Q_d += expr(q_qa, v_d) (``expression``: Lepton's syntax, compiled to a postfix program) |

A body force f at the world point x and a torque n give Q += J_x^T f + J_w^T n
(``actuation.points.add_wrench``); for a model with couplers the caller reduces Q by G(q)^T.  Controls are not clamped (OpenSim applies them as given: its
``min_control`` / ``max_control`` bound optimisers' searches), so ``ctrlrange`` is (-inf, inf)
and the file's bounds are ``ctrl_bounds``.

The tables pack into (fb float64, ib int64), ``packed()``: ib holds a header (``H_*``), one row
of ``W`` integers per element (``R_*``: kind, control, coordinate, velocity, bodies, offset of
its parameters in fb, offset and length of its program in ib), then the expressions' programs
((opcode, argument) pairs, ``expression``); fb holds each element's parameters (in the order
``ForceElements.add`` states) and the expressions' constants.
"""
import math

import numpy as np
from numba import types
from numba.extending import overload

from .._jit import jit
from ..algorithms.kinematics import forward
from ..core.ejce import PATHS
from ..core.spatial import EYE9, ZERO3, add, cross, mm, mTm, mtv, mv, scale3, sub
from ..model.layout import views
from .expression import Expression, run
from .points import add_wrench, angular_velocity, body_frame, point_velocity

# element kinds (ib row, R_KIND)
K_NONE, K_COORD_ACT, K_SPRING, K_LIMIT, K_POINT_ACT, K_TORQUE_ACT, K_P2P, K_BUSHING, K_EXPR = range(9)
KIND_NAMES = (None, "CoordinateActuator", "SpringGeneralizedForce", "CoordinateLimitForce", "PointActuator",
              "TorqueActuator", "PointToPointSpring", "BushingForce", "ExpressionBasedCoordinateForce")
ACTUATORS = ("CoordinateActuator", "PointActuator", "TorqueActuator")
N_PARAMS = {"CoordinateActuator": 1, "SpringGeneralizedForce": 3, "CoordinateLimitForce": 6, "PointActuator": 9,
            "TorqueActuator": 5, "PointToPointSpring": 8, "BushingForce": 36, "ExpressionBasedCoordinateForce": 0}
# the header of ib: elements, controls, row width, first row
H_N, H_NU, H_W, H_ROWS = range(4)
HEADER = 8
# the fields of a row
R_KIND, R_CTRL, R_QADR, R_DOF, R_BODY1, R_BODY2, R_FOFF, R_POFF, R_PLEN = range(9)
W = 10
# status of ``add_element_forces``: a force that is not finite at finite input (an expression
# outside its domain, a bushing at its angles' singularity cos(theta_2) = 0)
NONFINITE_FORCE = 9


class ForceElements:
    """OpenSim force elements of a model, as flat tables (see the module's docstring).

    ``n`` elements named ``names`` of OpenSim kinds ``kinds`` (``KIND_NAMES``; an element whose
    ``appliesForce`` is false keeps its place and control and applies nothing); ``nu`` controls,
    one per actuator in file order (OpenSim's order of controls), named ``ctrl_names``, with
    ``ctrlrange`` (nu, 2) = (-inf, inf) (never clamped) and ``ctrl_bounds`` (nu, 2) the file's
    ``min_control``, ``max_control``; ``expressions`` {element name: ``Expression``}.
    ``packed()`` -> (fb, ib), the read-only buffers ``add_element_forces`` takes.  Built by
    ``add`` (the OpenSim reader does it)."""

    def __init__(self):
        self.names, self.kinds, self._rows, self._params = [], [], [], []
        self.ctrl_names, self._bounds, self.expressions = [], [], {}
        self._packed = None

    @property
    def n(self):
        return len(self.names)

    @property
    def nu(self):
        return len(self.ctrl_names)

    @property
    def ctrlrange(self):
        return np.tile([-np.inf, np.inf], (self.nu, 1))

    @property
    def ctrl_bounds(self):
        return np.array(self._bounds, dtype=np.float64).reshape(self.nu, 2)

    def add(self, kind, name, params=(), qadr=-1, dof=-1, body1=-1, body2=-1, bounds=None, expression=None,
            applies=True):
        """Append an element: ``kind`` an OpenSim class name of ``KIND_NAMES``; ``params`` its
        float parameters in the order of its kind:

        * CoordinateActuator: (optimal_force,)
        * SpringGeneralizedForce: (stiffness, rest_length, viscosity)
        * CoordinateLimitForce: (k_up, k_lo, q_up, q_lo, transition, damping) in SI units
        * PointActuator: (optimal_force, point (3), unit direction (3), point_is_global, force_is_global)
        * TorqueActuator: (optimal_force, unit axis (3), torque_is_global)
        * PointToPointSpring: (stiffness, rest_length, point1 (3), point2 (3))
        * BushingForce: (R_B1F (9, row by row), p_B1F (3), R_B2M (9), p_B2M (3), stiffness (6: rotational x y z,
          translational x y z), damping (6))
        * ExpressionBasedCoordinateForce: none (``expression``, an ``Expression``)

        ``qadr``, ``dof``: the coordinate's entries of q and v; ``body1``, ``body2``: bodies
        (-1: none); ``bounds``: (min_control, max_control) of an actuator; ``applies``: False
        keeps the element's place and control and applies nothing."""
        if kind not in KIND_NAMES[1:]:
            raise ValueError(f"force element {name!r}: unknown kind {kind!r}")
        p = np.asarray(params, dtype=np.float64).ravel()
        if p.size != N_PARAMS[kind] or not np.isfinite(p).all():
            raise ValueError(f"{kind} {name!r}: {N_PARAMS[kind]} finite parameters expected, got {p.tolist()}")
        if kind == "ExpressionBasedCoordinateForce" and not isinstance(expression, Expression):
            raise ValueError(f"{kind} {name!r}: an Expression is needed (expression.parse)")
        code = KIND_NAMES.index(kind) if applies else K_NONE
        ctrl = -1
        if kind in ACTUATORS:
            ctrl = self.nu
            self.ctrl_names.append(name)
            self._bounds.append(tuple(bounds) if bounds is not None else (-np.inf, np.inf))
        self.names.append(name)
        self.kinds.append(kind)
        if expression is not None:
            self.expressions[name] = expression
        self._rows.append((code, ctrl, qadr, dof, body1, body2, expression))
        self._params.append(p)
        self._packed = None
        return self

    def actuator_force(self, ctrl):
        """OpenSim's actuation of each actuator (nu,): optimal_force * control (``ctrl``: the
        elements' nu controls, or a longer vector ending with them); 0 where ``appliesForce`` is
        false."""
        u = np.asarray(ctrl, dtype=np.float64)
        u = u[..., u.shape[-1] - self.nu:]
        scale = np.array([p[0] if row[0] != K_NONE else 0.0
                          for row, p in zip(self._rows, self._params) if row[1] >= 0], dtype=np.float64)
        return u * scale

    def packed(self):
        """(fb float64, ib int64): the read-only buffers of ``add_element_forces``."""
        if self._packed is None:
            fb, ib = [], [0] * HEADER
            ib[H_N], ib[H_NU], ib[H_W], ib[H_ROWS] = self.n, self.nu, W, HEADER
            progs = HEADER + W * self.n
            rows = []
            code_tail = []
            for (code, ctrl, qa, dof, b1, b2, expr), p in zip(self._rows, self._params):
                foff = len(fb)
                fb.extend(p.tolist())
                poff = plen = 0
                if isinstance(expr, Expression):
                    fb.extend(expr.consts.tolist())
                    poff, plen = progs + len(code_tail), len(expr.ops)
                    code_tail.extend(expr.ops.ravel().tolist())
                rows += [code, ctrl, qa, dof, b1, b2, foff, poff, plen, 0]
            ib = np.array(ib + rows + code_tail + [0], dtype=np.int64)
            fbuf = np.array(fb + [0.0], dtype=np.float64)
            fbuf.flags.writeable = False
            ib.flags.writeable = False
            self._packed = (fbuf, ib)
        return self._packed

    def __repr__(self):
        return f"<ForceElements n={self.n} nu={self.nu}: {', '.join(self.names[:6])}{' ...' if self.n > 6 else ''}>"

    def __getstate__(self):
        d = dict(self.__dict__)
        d["_packed"] = None
        return d


# ---------------------------------------------------------------------------- the compiled part
@jit(forceinline=True)
def _frame(m, r, i):
    """(world axes row by row, origin) of body i's frame; the ground's for i = 0."""
    if i <= 0:
        return EYE9, ZERO3
    return body_frame(m, r, i)


@jit(forceinline=True)
def _velocity(m, r, i, xw):
    if i <= 0:
        return ZERO3
    return point_velocity(m, r, i, xw)


@jit(forceinline=True)
def _omega(m, r, i):
    if i <= 0:
        return ZERO3
    return angular_velocity(m, r, i)


@jit(forceinline=True)
def _v3(fb, o):
    return (fb[o], fb[o + 1], fb[o + 2])


@jit(forceinline=True)
def _m9(fb, o):
    return (fb[o], fb[o + 1], fb[o + 2], fb[o + 3], fb[o + 4], fb[o + 5], fb[o + 6], fb[o + 7], fb[o + 8])


@jit(forceinline=True)
def _step(x, x0, x1):
    """Simbody's Function::Step from 0 (x <= x0) to 1 (x >= x1): u^3 (10 + u (6 u - 15))."""
    if x <= x0:
        return 0.0
    if x >= x1:
        return 1.0
    u = (x - x0) * (1.0 / (x1 - x0))
    return u * u * u * (10.0 + u * (6.0 * u - 15.0))


@jit(forceinline=True)
def _bushing(fb, o, m, r, b1, b2):
    """Simbody's LinearBushing between frame F on body b1 and M on body b2 (module docstring):
    (M's origin in the world, the force on body 2 there, the moment on body 2), all world axes;
    body 1 takes their opposites at the same point."""
    R1, o1 = _frame(m, r, b1)
    R2, o2 = _frame(m, r, b2)
    RGF = mm(R1, _m9(fb, o))
    pGF = add(o1, mv(R1, _v3(fb, o + 9)))
    RGM = mm(R2, _m9(fb, o + 12))
    pGM = add(o2, mv(R2, _v3(fb, o + 21)))
    RFM = mTm(RGF, RGM)
    dG = sub(pGM, pGF)
    pFM = mtv(RGF, dG)
    # body-fixed X-Y-Z angles of R_FM (Simbody's convertRotationToBodyFixedXYZ)
    a1 = math.atan2(-RFM[5], RFM[8])
    a2 = math.atan2(RFM[2], math.sqrt((RFM[0] * RFM[0] + RFM[1] * RFM[1] + RFM[5] * RFM[5] + RFM[8] * RFM[8]) / 2.0))
    a3 = math.atan2(-RFM[1], RFM[0])
    w1 = _omega(m, r, b1)
    wFM_M = mtv(RGM, sub(_omega(m, r, b2), w1))
    vFM_F = mtv(RGF, sub(sub(_velocity(m, r, b2, pGM), _velocity(m, r, b1, pGF)), cross(w1, dG)))
    # N: qdot = N w_FM (M axes) for body-fixed X-Y-Z angles (1/cos(a2): inf at the singularity)
    c1, s1, c2, s2 = math.cos(a2), math.sin(a2), math.cos(a3), math.sin(a3)
    oc = 1.0 / c1
    N = (c2 * oc, -s2 * oc, 0.0, s2, c2, 0.0, -s1 * c2 * oc, s1 * s2 * oc, 1.0)
    qd = mv(N, wFM_M)
    k = o + 24
    c = o + 30
    fr = (-(fb[k] * a1 + fb[c] * qd[0]), -(fb[k + 1] * a2 + fb[c + 1] * qd[1]), -(fb[k + 2] * a3 + fb[c + 2] * qd[2]))
    ft = (-(fb[k + 3] * pFM[0] + fb[c + 3] * vFM_F[0]), -(fb[k + 4] * pFM[1] + fb[c + 4] * vFM_F[1]),
          -(fb[k + 5] * pFM[2] + fb[c + 5] * vFM_F[2]))
    return pGM, mv(RGF, ft), mv(RGM, mtv(N, fr))


@jit(forceinline=True)
def _finite3(x):
    return math.isfinite(x[0]) and math.isfinite(x[1]) and math.isfinite(x[2])


@jit(forceinline=True)
def element_forces(fb, ib, m, r, q, v, ctrl, t, qact, qpas):
    """qact += the generalised forces of the actuators among the elements of (fb, ib), qpas +=
    those of the other elements (springs, limits, bushings, expressions; qact and qpas may be
    the same array), at (q, v) and the controls (the last ib[H_NU] entries of ctrl), the record r
    holding the forward sweep of (q, v, t) with world frames and twists.  Returns (0, -1), or
    (NONFINITE_FORCE, element) at the first element whose force is not finite (the later ones
    are not added).

    A coordinate force goes to its velocity entry; a body force becomes at most two world
    wrenches (body, point, force, torque), added in one place (``points.add_wrench``)."""
    n = ib[H_N]
    c0 = ctrl.shape[0] - ib[H_NU]
    for e in range(n):
        row = ib[H_ROWS] + e * ib[H_W]
        kind = ib[row + R_KIND]
        if kind == K_NONE:
            continue
        kc = ib[row + R_CTRL]
        u = ctrl[c0 + kc] if kc >= 0 else 0.0
        qfrc = qact if kc >= 0 else qpas
        qa = ib[row + R_QADR]
        d = ib[row + R_DOF]
        b1 = ib[row + R_BODY1]
        b2 = ib[row + R_BODY2]
        o = ib[row + R_FOFF]
        fq = 0.0                        # a coordinate force
        # the wrenches on body 1 (x1, f1, n1) and body 2 (x2, f2, n2); bodies < 1 take none
        x1 = f1 = n1 = x2 = f2 = n2 = ZERO3
        w1 = w2 = False
        if kind == K_COORD_ACT:
            fq = fb[o] * u
        elif kind == K_SPRING:
            fq = -fb[o] * (q[qa] - fb[o + 1]) - fb[o + 2] * v[d]
        elif kind == K_LIMIT:
            xq = q[qa]
            kup = fb[o]
            klo = fb[o + 1]
            qup = fb[o + 2]
            qlo = fb[o + 3]
            tr = fb[o + 4]
            fu = _step(xq, qup, qup + tr)
            fl = _step(xq, qlo - tr, qlo)
            Kup = fu * kup
            Klo = klo + fl * (0.0 - klo)
            ru = Kup / kup if kup != 0.0 else fu
            rl = Klo / klo if klo != 0.0 else 1.0 - fl
            fq = -Kup * (xq - qup) + Klo * (qlo - xq) - fb[o + 5] * (ru + rl) * v[d]
        elif kind == K_EXPR:
            fq = run(ib, ib[row + R_POFF], ib[row + R_PLEN], fb, o, q[qa], v[d])
        elif kind == K_POINT_ACT:
            R, p = _frame(m, r, b1)
            dirn = _v3(fb, o + 4)
            if fb[o + 8] == 0.0:
                dirn = mv(R, dirn)
            x1 = _v3(fb, o + 1)
            if fb[o + 7] == 0.0:
                x1 = add(p, mv(R, x1))
            f1 = scale3(fb[o] * u, dirn)
            w1 = True
        elif kind == K_TORQUE_ACT:
            n1 = scale3(fb[o] * u, _v3(fb, o + 1))
            if fb[o + 4] == 0.0:
                R, p = _frame(m, r, b1)
                n1 = mv(R, n1)
            n2 = scale3(-1.0, n1)
            w1 = True
            w2 = True
        elif kind == K_P2P:
            Ra, oa = _frame(m, r, b1)
            Rb, ob = _frame(m, r, b2)
            x1 = add(oa, mv(Ra, _v3(fb, o + 2)))
            x2 = add(ob, mv(Rb, _v3(fb, o + 5)))
            dd = sub(x2, x1)
            L = math.sqrt(dd[0] * dd[0] + dd[1] * dd[1] + dd[2] * dd[2])
            if L > 0.0:
                f1 = scale3(fb[o] * (L - fb[o + 1]) / L, dd)
                f2 = scale3(-1.0, f1)
                w1 = True
                w2 = True
        elif kind == K_BUSHING:
            x2, f2, n2 = _bushing(fb, o, m, r, b1, b2)
            x1 = x2
            f1 = scale3(-1.0, f2)
            n1 = scale3(-1.0, n2)
            w1 = True
            w2 = True
        if not (math.isfinite(fq) and _finite3(f1) and _finite3(n1) and _finite3(f2) and _finite3(n2)):
            return NONFINITE_FORCE, e
        if d >= 0:
            qfrc[d] += fq
        if w1 and b1 > 0:
            add_wrench(m.body_parent, m.jnt_dofadr, m.jnt_nv, r.RC, r.oC, r.S, b1, x1, f1, n1, 1.0, qfrc)
        if w2 and b2 > 0:
            add_wrench(m.body_parent, m.jnt_dofadr, m.jnt_nv, r.RC, r.oC, r.S, b2, x2, f2, n2, 1.0, qfrc)
    return 0, -1


def add_element_forces(eb, m, r, q, v, ctrl, t, qfrc):
    """qfrc += the generalised forces of the force elements ``eb`` (``ForceElements.packed()``,
    or None: nothing) at the state of the record r (``element_forces``); returns (status,
    element): (0, -1), or (NONFINITE_FORCE, the element).  Compiled code calls its overload."""
    if eb is None:
        return 0, -1
    return element_forces(eb[0], eb[1], m, r, q, v, ctrl, t, qfrc, qfrc)


@overload(add_element_forces, jit_options={"forceinline": True})
def _add_element_forces(eb, m, r, q, v, ctrl, t, qfrc):
    if isinstance(eb, types.NoneType):
        def nothing(eb, m, r, q, v, ctrl, t, qfrc):
            return np.int64(0), np.int64(-1)
        return nothing

    def forces(eb, m, r, q, v, ctrl, t, qfrc):
        return element_forces(eb[0], eb[1], m, r, q, v, ctrl, t, qfrc, qfrc)
    return forces


def add_element_forces_split(eb, m, r, q, v, ctrl, t, qact, qpas):
    """``add_element_forces`` with the actuators' generalised forces added to ``qact`` and the
    other elements' to ``qpas`` (MuJoCo's qfrc_actuator and qfrc_passive)."""
    if eb is None:
        return 0, -1
    return element_forces(eb[0], eb[1], m, r, q, v, ctrl, t, qact, qpas)


@overload(add_element_forces_split, jit_options={"forceinline": True})
def _add_element_forces_split(eb, m, r, q, v, ctrl, t, qact, qpas):
    if isinstance(eb, types.NoneType):
        def nothing(eb, m, r, q, v, ctrl, t, qact, qpas):
            return np.int64(0), np.int64(-1)
        return nothing

    def forces(eb, m, r, q, v, ctrl, t, qact, qpas):
        return element_forces(eb[0], eb[1], m, r, q, v, ctrl, t, qact, qpas)
    return forces


# ---------------------------------------------------------------------------- one state from Python
_LEVEL1 = np.int64(1)
_WORLD = np.bool_(True)


@jit
def _one_state(mb, w, fb, ib, q, v, ctrl, t, full, qact, qpas):
    """The elements' generalised forces of one state (the kernel model's q, v): the forward sweep
    with world frames and twists, then ``element_forces`` into the zeroed qact and qpas."""
    m, r, s = views(mb, w)
    forward(m, r, s, q, v, s.zv, t, _LEVEL1, _WORLD, full)
    for k in range(qact.shape[0]):
        qact[k] = 0.0
        qpas[k] = 0.0
    return element_forces(fb, ib, m, r, q, v, ctrl, t, qact, qpas)


def element_qfrc(model, elements, q, qd, ctrl=None, t=0.0, split=False):
    """The generalised forces (nv,) of ``elements`` (a ``ForceElements`` of ``model``) at the
    state (q, qd) of ``model`` (its own coordinates: for a model with couplers the independent
    ones, the forces then reduced by G(q)^T) with controls ``ctrl`` (``elements.nu``, or a longer
    vector whose last ``elements.nu`` entries are the elements'; None: zeros) at time t;
    ``split=True``: (the actuators', the other elements') instead of their sum.  Raises
    ValueError on a state of the wrong size, a non-finite input or a non-finite force (naming the
    element).  One state; ``ej.actuation`` / ``ej.forward_dynamics`` are the public functions."""
    km = model.kernel_model()
    q = np.ascontiguousarray(q, dtype=np.float64)
    qd = np.ascontiguousarray(qd, dtype=np.float64)
    if q.shape != (model.nq,) or qd.shape != (model.nv,):
        raise ValueError(f"element_qfrc: q must be ({model.nq},) and qd ({model.nv},); got {q.shape}, {qd.shape}")
    u = np.zeros(elements.nu) if ctrl is None else np.ascontiguousarray(ctrl, dtype=np.float64).ravel()
    if u.shape[0] < elements.nu:
        raise ValueError(f"element_qfrc: ctrl has {u.shape[0]} entries; the elements take {elements.nu}")
    if not (np.isfinite(q).all() and np.isfinite(qd).all() and np.isfinite(u).all() and np.isfinite(t)):
        raise ValueError("element_qfrc: NaN or inf in q, qd, ctrl or t")
    if model.has_couplers:
        qf, vf = model.expand(q), model.expand_v(qd, q)
    else:
        qf, vf = q, qd
    fb, ib = elements.packed()
    w = np.zeros(km.record_size + km.scratch_size)
    qa = np.zeros(km.nv)
    qp = np.zeros(km.nv) if split else qa
    st, e = _one_state(km._mb, w, fb, ib, np.ascontiguousarray(qf), np.ascontiguousarray(vf), u, float(t),
                       PATHS[km._paths], qa, qp)
    if st != 0:
        raise ValueError(f"{elements.kinds[e]} {elements.names[e]!r}: its force is not finite at this state")
    if model.has_couplers:
        G = model.coupler_jacobian(q)
        qa, qp = G.T @ qa, G.T @ qp
    return (qa, qp) if split else qa
