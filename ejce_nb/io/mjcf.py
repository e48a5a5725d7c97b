"""MJCF (MuJoCo) models through MuJoCo's own compiler.

``load_mjcf`` lets ``mujoco`` parse and compile the file (defaults, includes, ``<compiler>``
angle/eulerseq/inertiafromgeom, mesh inertias, balanceinertia, ...) and ``from_mujoco`` maps the
*compiled* tables of an ``mujoco.MjModel`` onto an ``ej.Model``; no MJCF is parsed here.

The mapping from MuJoCo's compiled tables to the model is stated in ``from_mujoco``'s docstring.
"""
import math
import os
import sys
import warnings

import numpy as np

from ..model.builder import ModelBuilder, inertia_defect
from ..errors import ModelError
from ..core.joints import fn as _fn
from ..core.joints import specs as _specs
from ..core.transform import Transform, rot_axis_angle


class MJCFWarning(UserWarning):
    """``load_mjcf`` / ``from_mujoco`` left parts of the MuJoCo model out (they are not rigid
    tree dynamics): a ``UserWarning`` with ``source`` (the file) and ``notes`` (the list of what
    was left out, also ``Model.notes``); none with ``warn=False``."""

    def __init__(self, message, source=None, notes=()):
        super().__init__(message)
        self.source, self.notes = source, tuple(notes)


def _mujoco():
    try:
        import mujoco
    except ImportError:
        raise ImportError("reading MJCF needs MuJoCo's compiler: pip install mujoco "
                          '(or the mjcf extra: pip install ".[mjcf]")') from None
    return mujoco


def load_mjcf(path_or_xml, assets=None, warn=True):
    """Load an MJCF file (or MJCF text, a string starting with ``<``) as an ``ej.Model``.

    MuJoCo's compiler reads the file (``mujoco.MjModel.from_xml_path``, or ``from_xml_string``
    with ``assets``, a dict {file name: bytes} for meshes and includes of text), and
    ``from_mujoco`` maps the compiled model (its docstring has the mapping): MuJoCo's own
    compiler handles defaults, includes, ``<compiler>`` settings (angle, eulerseq,
    inertiafromgeom, balanceinertia, ...) and mesh inertias.  Needs the optional ``mujoco``
    package (``pip install ".[mjcf]"``; without it an ``ImportError``).  A file MuJoCo
    refuses (bad XML, a missing mesh or include) and a missing file raise ``ej.ModelError`` with
    MuJoCo's message and the file's name.  ``warn``: as for ``from_mujoco``."""
    mujoco = _mujoco()
    if isinstance(path_or_xml, bytes):
        path_or_xml = path_or_xml.decode("utf-8", errors="replace")
    if isinstance(path_or_xml, str) and path_or_xml.lstrip().startswith("<"):
        source = "MJCF"
        try:
            mj = mujoco.MjModel.from_xml_string(path_or_xml, assets or {})
        except (ValueError, TypeError) as e:
            raise ModelError(f"{source}: MuJoCo refuses the model: {e}") from None
    else:
        if not isinstance(path_or_xml, (str, os.PathLike)):
            raise ModelError(f"load_mjcf expects a file path or MJCF text, got {type(path_or_xml).__name__}")
        source = os.fspath(path_or_xml)
        if not os.path.isfile(source):
            raise ModelError(f"{source}: cannot read MJCF file: no such file")
        try:
            mj = mujoco.MjModel.from_xml_path(source, assets) if assets else mujoco.MjModel.from_xml_path(source)
        except (ValueError, TypeError) as e:
            raise ModelError(f"{source}: MuJoCo refuses the model: {e}") from None
    return from_mujoco(mj, source=source, warn=warn)


def _quat_matrix(q):
    w, x, y, z = (float(v) for v in q)
    n = w * w + x * x + y * y + z * z
    s = 2.0 / n if n > 0 else 0.0
    return np.array([[1 - s * (y * y + z * z), s * (x * y - w * z), s * (x * z + w * y)],
                     [s * (x * y + w * z), 1 - s * (x * x + z * z), s * (y * z - w * x)],
                     [s * (x * z - w * y), s * (y * z + w * x), 1 - s * (x * x + y * y)]])


def _name(mujoco, mj, kind, i, fallback):
    n = mujoco.mj_id2name(mj, kind, i)
    return n if n else fallback


def _caller_level():
    """The ``stacklevel`` of the first caller outside the package (the warning points there)."""
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    f, level = sys._getframe(1), 1
    while f is not None and os.path.abspath(f.f_code.co_filename).startswith(pkg):
        f, level = f.f_back, level + 1
    return level


def _poly_in_q2(c, q10, q20):
    """MuJoCo's q1 - q1_0 = sum_k c_k (q2 - q2_0)^k as q1 = sum_m a_m q2^m (a, lowest order first)."""
    a = np.zeros(5)
    for k in range(5):
        for m in range(k + 1):
            a[m] += c[k] * math.comb(k, m) * (-q20) ** (k - m)
    a[0] += q10
    return a


def _trim(a):
    a = np.trim_zeros(np.asarray(a, dtype=float), "b")
    return a if len(a) else np.zeros(1)


def _resolve_joint_equalities(mj, jeq, jnames, source):
    """The joints fixed or coupled by active joint equalities (``jeq``: joint1 -> (label, joint2
    or -1, polycoef)), each followed along its chain of equalities to a joint that keeps its
    coordinate: (locked {joint: value}, dependent {joint: (joint it follows, polynomial
    coefficients in that joint's q, lowest order first)}).  A chain that comes back to a joint on
    it is a ``ModelError`` naming the equalities of the cycle."""
    qpos0 = np.asarray(mj.qpos0, dtype=float)
    q0 = {j: float(qpos0[mj.jnt_qposadr[j]]) for j in range(mj.njnt)}
    done = {}

    def resolve(j, path):
        if j in done:
            return done[j]
        if j not in jeq:
            return ("free", j, None)
        if j in path:
            cycle = path[path.index(j):]
            raise ModelError(f"{source}: joint equalities {[jeq[x][0] for x in cycle]} couple the joints "
                             f"{[jnames[x] for x in cycle]} in a cycle: the joints are no functions of others; "
                             "the file cannot be loaded as an exact coupling (remove one of the equalities)")
        label, j2, c = jeq[j]
        if j2 < 0:
            out = ("lock", float(q0[j] + c[0]), None)
        else:
            a = _poly_in_q2(c, q0[j], q0[j2])
            kind, root, inner = resolve(j2, path + [j])
            if kind == "lock":
                out = ("lock", float(np.polynomial.polynomial.polyval(root, a)), None)
            else:
                if kind == "dep":
                    # a(inner(q_root)): the chain's composition, exact as a polynomial
                    a = np.polynomial.polynomial.polyval(np.polynomial.Polynomial(inner), a).coef \
                        if len(_trim(a)) > 1 else a[:1]
                a = _trim(a)
                out = ("lock", float(a[0]), None) if len(a) == 1 else ("dep", root, a)
        done[j] = out
        return out

    locked, dependent = {}, {}
    for j in jeq:
        kind, x, coeffs = resolve(j, [])
        if kind == "lock":
            locked[j] = x
        else:
            dependent[j] = (x, coeffs)
    return locked, dependent


def _closure(mj, e, label, connect, sites):
    """(label, body1, body2, closure joint, placement in body1, placement in body2) of an active
    connect or weld equality (MuJoCo's are soft, these exact).  Between bodies: connect is a
    spherical closure at the two compiled anchors (eq_data[0:3] in body1, [3:6] in body2), weld a
    Fixed closure at the pose of body2 in body1 (eq_data[3:6] position, [6:10] quaternion).
    Between sites: the sites' origins coincide (connect) or their frames (weld)."""
    data = np.array(mj.eq_data[e], dtype=float)
    o1, o2 = int(mj.eq_obj1id[e]), int(mj.eq_obj2id[e])
    if sites:
        T1, T2 = (Transform(_quat_matrix(mj.site_quat[s]), np.array(mj.site_pos[s], dtype=float)) for s in (o1, o2))
        b1, b2 = int(mj.site_bodyid[o1]), int(mj.site_bodyid[o2])
        return (label, b1, b2, _specs.Spherical("quaternion") if connect else _specs.Fixed(), T1, T2)
    if connect:
        return (label, o1, o2, _specs.Spherical("quaternion"), Transform(None, data[0:3]), Transform(None, data[3:6]))
    return (label, o1, o2, _specs.Fixed(), Transform(_quat_matrix(data[6:10]), data[3:6]), Transform())


def from_mujoco(mjmodel, source=None, warn=True):
    """The ``ej.Model`` of a compiled ``mujoco.MjModel``: its *compiled* tables are mapped (no MJCF
    is parsed here); ``source`` names it in messages.

    | MuJoCo (compiled) | ``ej.Model`` |
    |---|---|
    | body b, ``body_parentid`` | body b (same order), its parent; body 0 is the world |
    | ``body_pos``, ``body_quat`` | the body's placement in its parent (in P, with the first joint's anchor) |
    | ``body_mass``, ``body_ipos``, ``body_iquat``, ``body_inertia`` | mass, COM, ``R(iquat) diag(inertia) R(iquat)^T`` in body axes |
    | no joint | ``Fixed`` |
    | ``free`` (top-level bodies only) | ``Free("quaternion")``, P = C = identity: q ``[p world; w x y z]``, v ``[p rates world; omega body axes]`` |
    | ``ball`` at ``jnt_pos`` | ``Spherical("quaternion")`` about the anchor: q ``[w x y z]``, v omega in body axes |
    | ``hinge`` / ``slide``, ``jnt_axis``, ``jnt_pos``, ``ref`` | ``Revolute`` / ``Prismatic`` about / along the axis through the anchor (body axes); q is MuJoCo's qpos (P carries the turn by -ref) |
    | several hinges / slides in one body | one ``Composite`` joint named ``"j1+j2+..."``: MuJoCo's sequence, each motion about its axis through its anchor in the frame the previous moved; q, v are MuJoCo's in its order (joints at different anchors, or a ``ref`` on a joint after the first, add constant motions: batches of such a model run state by state rather than four at a time) |
    | ``dof_armature``, ``dof_damping`` | ``dof_armature``, ``dof_damping`` |
    | ``jnt_stiffness``, ``qpos_spring`` | ``dof_stiffness``, ``dof_springref`` (hinge, slide, a free joint's translation) |
    | ``jnt_range`` where ``jnt_limited`` | ``q_lower``, ``q_upper`` (hinge, slide) |
    | ``opt.gravity`` | ``gravity`` (0 when the file disables gravity) |
    | names | ``body_names``, ``joint_names``, ``coordinate_names`` (``name[k]`` for ball and free entries); unnamed: ``body<b>``, ``joint<j>`` |
    | site k: ``site_bodyid``, ``site_pos``, ``site_quat`` | a named frame (``frame_names``) on that body at that placement, named as in MuJoCo (``site<k>`` unnamed, ``_site`` appended where a body has the name): ``frame_pose`` is MuJoCo's ``site_xmat``, ``site_xpos``, ``frame_jacobian(..., "local_world_aligned")`` its ``mj_jacSite`` |
    | active ``<equality joint>`` with ``polycoef`` linear (c2 = c3 = c4 = 0), both one-coordinate joints | joint1 a mimic of joint2 (``Model.joint_mimic``): ``q1 = q1_0 + c0 + c1 (q2 - q2_0)`` (no coordinate of its own; its armature, damping and stiffness move to joint2 times c1^2) |
    | the same with c2, c3 or c4 nonzero | an exact coordinate coupler (``ModelBuilder.add_coupler``): ``q1 = q1_0 + sum_k c_k (q2 - q2_0)^k``, eliminated from q and v; joint1's armature is kept and acts through the coupler (``model.coupled_armature``: MuJoCo's ``G^T diag(armature) G`` and its bias), its damping and stiffness are left out (noted) |
    | every active ``<equality joint>``, in any body (several joints to a body included) and in chains (joint1 coupled to a joint that is itself coupled: composed into one polynomial of the joint at the chain's end) | as above; an equality without ``joint2`` fixes joint1 at ``q1_0 + c0`` (its motion becomes constant; noted); a cycle of couplings, or a joint made dependent by two equalities, is an ``ej.ModelError`` naming the equalities |
    | active ``<equality connect>`` / ``<equality weld>`` between bodies or between sites (``site1``, ``site2``) | exact loop closures (``Model.loops``; MuJoCo's are soft): connect a spherical closure joining the two anchors (site origins), weld a fixed closure joining the two frames (MuJoCo's compiled relative pose: ``relpose`` or the pose at qpos0) |

    So q and v are MuJoCo's ``qpos`` and ``qvel`` (without coupled joints); ``model.neutral()``
    (zero angles, unit quaternions) is not MuJoCo's ``qpos0`` when joints have a ``ref`` or a free
    body sits away from the origin.  The limits of coupled and fixed joints are left out.

    | actuators (``actuator_*``), tendons (``tendon_*``, ``wrap_*``), ``body_gravcomp``, sites | ``model.actuation``: an ``ejce_nb.actuation.tables.Actuation`` of MuJoCo's compiled tables (``actuator_lengthrange``, ``actuator_acc0`` as MuJoCo computed them), the joints' addresses mapped to the model's q and v (the expansion's, where joints are coupled: results come back through G); ``ej.actuation``, ``ej.forward_dynamics`` |

    Actuators with joint, jointinparent, tendon, site (with and without refsite) and slider-crank
    transmissions, the gains, biases and activation dynamics none / integrator / filter /
    filterexact / muscle, fixed and spatial tendons (sites, pulleys, sphere and cylinder wrapping
    with side sites) are loaded; a model with another kind (body (adhesion) transmissions, user,
    plugin, dcmotor, pid or SO3 actuators, delays, actuator damping or armature, tendon force
    limits, nonlinear tendon springs, ``opt.disableactuator``, an actuator or tendon on a joint
    that a joint equality fixes) keeps no actuation, and its notes say which actuator or tendon
    stopped it.  The JSON form of the model does not carry it.

    Not loaded, since they are not rigid tree dynamics: contacts, inactive
    connect / weld equalities and tendon or flex equalities, flex, friction
    loss, fluid forces, a ball joint's cone limit and springs on quaternion rotations.  What a
    model had of them is listed in ``Model.notes`` (``summary()``) and, with ``warn=True``, in
    one ``ej.MJCFWarning``.  A ball joint among several joints of one body is an
    ``ej.ModelError`` naming the body."""
    mujoco = _mujoco()
    mj = mjmodel
    source = source or "MuJoCo model"
    OBJ_BODY, OBJ_JOINT, OBJ_SITE = mujoco.mjtObj.mjOBJ_BODY, mujoco.mjtObj.mjOBJ_JOINT, mujoco.mjtObj.mjOBJ_SITE
    FREE, BALL, SLIDE, HINGE = (int(mujoco.mjtJoint.mjJNT_FREE), int(mujoco.mjtJoint.mjJNT_BALL),
                                int(mujoco.mjtJoint.mjJNT_SLIDE), int(mujoco.mjtJoint.mjJNT_HINGE))
    notes = []
    gravity = np.array(mj.opt.gravity, dtype=float)
    if mj.opt.disableflags & int(mujoco.mjtDisableBit.mjDSBL_GRAVITY):
        gravity = np.zeros(3)
        notes.append("gravity (disabled in the file's opt.disableflags): the model's gravity is 0")
    b = ModelBuilder(gravity=gravity)
    jnames = [_name(mujoco, mj, OBJ_JOINT, j, f"joint{j}") for j in range(mj.njnt)]
    bnames = [_name(mujoco, mj, OBJ_BODY, i, f"body{i}") for i in range(mj.nbody)]
    bnames[0] = "world"

    # joint equalities (MuJoCo: q1 - q1_0 = sum_k c_k (q2 - q2_0)^k; without joint2, q1 = q1_0 + c0):
    # each becomes exact.  ``jeq``: joint1 -> (label, joint2 or -1, c)
    EQ = mujoco.mjtEq
    eq_left = {}
    closures = []
    jeq = {}
    for e in range(mj.neq):
        kind = int(mj.eq_type[e])
        active = bool(mj.eq_active0[e])
        label = _name(mujoco, mj, mujoco.mjtObj.mjOBJ_EQUALITY, e, f"#{e}")
        objtype = int(mj.eq_objtype[e])
        if kind in (int(EQ.mjEQ_CONNECT), int(EQ.mjEQ_WELD)) and active and \
                objtype in (int(OBJ_BODY), int(OBJ_SITE)):
            closures.append(_closure(mj, e, label, kind == int(EQ.mjEQ_CONNECT), objtype == int(OBJ_SITE)))
            continue
        if kind != int(EQ.mjEQ_JOINT):
            what = {int(EQ.mjEQ_CONNECT): "connect", int(EQ.mjEQ_WELD): "weld",
                    int(EQ.mjEQ_TENDON): "tendon"}.get(kind, "flex/other")
            if kind in (int(EQ.mjEQ_CONNECT), int(EQ.mjEQ_WELD)) and not active:
                what = f"inactive {what}"
            eq_left.setdefault(f"{what} equalities (closed loops and other constraints)", []).append(label)
            continue
        if not active:
            eq_left.setdefault("inactive joint equalities", []).append(label)
            continue
        j1, j2 = int(mj.eq_obj1id[e]), int(mj.eq_obj2id[e])
        for j in (j1, j2):
            if j >= 0 and int(mj.jnt_type[j]) not in (HINGE, SLIDE):
                raise ModelError(f"{source}: joint equality {label!r}: joint {jnames[j]!r} is not a hinge or slide")
        if j1 in jeq:
            raise ModelError(f"{source}: joint equalities {jeq[j1][0]!r} and {label!r} both make joint {jnames[j1]!r} "
                             "a function of other joints (joint1 of both): the model has no exact elimination of "
                             "them; keep one of the two")
        jeq[j1] = (label, j2, np.array(mj.eq_data[e, :5], dtype=float))
    for what, labels in eq_left.items():
        notes.append(f"{what}: {len(labels)} ({', '.join(labels[:8])}{', ...' if len(labels) > 8 else ''})")
    locked, dependent = _resolve_joint_equalities(mj, jeq, jnames, source)

    # per-dof passive terms and armature; a coordinate coupled linearly hands its armature,
    # damping and stiffness to the coordinate it follows (times the slope squared, as the reduced
    # dynamics have them); one coupled nonlinearly keeps its armature (carried through the
    # coupler's Jacobian, M = G^T (M_full + diag(armature)) G), its damping and stiffness are
    # left out
    arm = np.array(mj.dof_armature, dtype=float)
    damp = np.array(mj.dof_damping, dtype=float)
    stiff = np.zeros(mj.nv)
    sref = np.zeros(mj.nv)
    left_spring = []
    for j in range(mj.njnt):
        t, d, qa = int(mj.jnt_type[j]), int(mj.jnt_dofadr[j]), int(mj.jnt_qposadr[j])
        k = float(mj.jnt_stiffness[j])
        if k == 0.0:
            continue
        if t in (HINGE, SLIDE):
            stiff[d], sref[d] = k, float(mj.qpos_spring[qa])
        elif t == FREE:
            stiff[d:d + 3], sref[d:d + 3] = k, mj.qpos_spring[qa:qa + 3]
            left_spring.append(jnames[j])
        else:
            left_spring.append(jnames[j])
    if left_spring:
        notes.append(f"joint stiffness on the rotation of ball and free joints: {', '.join(left_spring)}")
    lost, lost_limits = [], []
    for j1, (j2, coeffs) in dependent.items():
        d1, d2 = int(mj.jnt_dofadr[j1]), int(mj.jnt_dofadr[j2])
        if mj.jnt_limited[j1]:
            lost_limits.append(jnames[j1])
        if len(coeffs) == 2:
            off, k1 = float(coeffs[0]), float(coeffs[1])
            arm[d2] += k1 * k1 * arm[d1]
            damp[d2] += k1 * k1 * damp[d1]
            # k1 (q1 - s1) with q1 = k1 q2 + off is k1 k1^2 (q2 - (s1 - off) / k1)
            ks = stiff[d1] * k1 * k1
            if ks != 0.0:
                s1 = (sref[d1] - off) / k1
                tot = stiff[d2] + ks
                sref[d2] = (stiff[d2] * sref[d2] + ks * s1) / tot
                stiff[d2] = tot
            arm[d1] = 0.0
        elif damp[d1] != 0.0 or stiff[d1] != 0.0:
            lost.append(jnames[j1])
        damp[d1] = stiff[d1] = sref[d1] = 0.0
    for j in locked:
        if mj.jnt_limited[j]:
            lost_limits.append(jnames[j])
    if lost:
        notes.append("damping and stiffness of joints that follow another nonlinearly: " + ", ".join(lost))
    if lost_limits:
        notes.append("limits of joints fixed or coupled by joint equalities: " + ", ".join(lost_limits))

    ball_limits = []
    used_joint_names = set(jnames)
    coord_of = {}          # MuJoCo joint -> (ej joint name, coordinate in the joint)
    for i in range(1, mj.nbody):
        who = f"{source}: body {bnames[i]!r}"
        parent = int(mj.body_parentid[i])
        Tb = Transform(_quat_matrix(mj.body_quat[i]), np.array(mj.body_pos[i], dtype=float))
        js = list(range(int(mj.body_jntadr[i]), int(mj.body_jntadr[i]) + int(mj.body_jntnum[i])))
        types = [int(mj.jnt_type[j]) for j in js]
        own = [j for j in js if j not in locked]          # the joints that keep a coordinate
        if not js:
            spec, P, Cp = _specs.Fixed(), Tb, Transform()
            jname = f"{bnames[i]}_joint"
            while jname in used_joint_names:
                jname += "_"
            used_joint_names.add(jname)
        elif len(js) == 1 and types[0] == FREE:
            if parent != 0:
                raise ModelError(f"{who}: a free joint in a body that is not a child of the world")
            spec, P, Cp = _specs.Free("quaternion"), Transform(), Transform()
            jname = jnames[js[0]]
        elif len(js) == 1 and types[0] == BALL:
            a = np.array(mj.jnt_pos[js[0]], dtype=float)
            spec, P, Cp = _specs.Spherical("quaternion"), Tb @ Transform(None, a), Transform(None, a)
            jname = jnames[js[0]]
            if mj.jnt_limited[js[0]]:
                ball_limits.append(jname)
        elif all(t in (HINGE, SLIDE) for t in types):
            n = len(own)
            anchors = [np.array(mj.jnt_pos[j], dtype=float) for j in js]
            axes = [np.array(mj.jnt_axis[j], dtype=float) for j in js]
            refs = [float(mj.qpos0[mj.jnt_qposadr[j]]) for j in js]
            # the first joint's ref turns (shifts) P: about (along) the same axis it commutes
            first = (rot_axis_angle(axes[0], -refs[0]) if types[0] == HINGE else np.eye(3),
                     -refs[0] * axes[0] if types[0] == SLIDE else np.zeros(3))
            P = Tb @ Transform(None, anchors[0]) @ Transform(*first)
            Cp = Transform(None, anchors[-1])
            jname = "+".join(jnames[j] for j in js)
            if n == 0:
                # every joint fixed by an equality: the body is welded at that pose
                T = Transform()
                for k, j in enumerate(js):
                    if k > 0:
                        T = T @ Transform(None, anchors[k] - anchors[k - 1])
                    x = locked[j] - (refs[k] if k > 0 else 0.0)
                    T = T @ (Transform(rot_axis_angle(axes[k], x)) if types[k] == HINGE
                             else Transform(None, x * axes[k]))
                spec, P = _specs.Fixed(), P @ T
            elif len(js) == 1:
                spec = (_specs.Revolute if types[0] == HINGE else _specs.Prismatic)(axes[0])
            else:
                motions = []
                for k, j in enumerate(js):
                    if k > 0:
                        gap = anchors[k] - anchors[k - 1]
                        dist = float(np.linalg.norm(gap))
                        if dist > 0.0:
                            motions.append(_specs.Trans(gap / dist, _fn.Linear(np.zeros(n), dist)))
                    e = np.zeros(n)
                    off = -refs[k] if k > 0 else 0.0
                    if j in locked:
                        off += locked[j]
                    else:
                        e[own.index(j)] = 1.0
                    kind = _specs.Rot if types[k] == HINGE else _specs.Trans
                    motions.append(kind(axes[k], _fn.Linear(e, off)))
                spec = _specs.Composite(motions, n)
        else:
            raise ModelError(f"{who}: joints {[jnames[j] for j in js]} of kinds "
                             f"{[mujoco.mjtJoint(t).name for t in types]}: a ball joint among several joints of "
                             "one body cannot be held (a body takes one ball or free joint alone, or hinges and "
                             "slides)")
        for k, j in enumerate(own):
            coord_of[j] = (jname, k)
        # limits and passive terms of the joint's own coordinates (a coupled one's are dropped or
        # carried by the builder: see above)
        ql, qu = [], []
        dofs = []
        cnames = []
        for j in own:
            t, qa, d = int(mj.jnt_type[j]), int(mj.jnt_qposadr[j]), int(mj.jnt_dofadr[j])
            nq, nv = {FREE: (7, 6), BALL: (4, 3)}.get(t, (1, 1))
            lim = bool(mj.jnt_limited[j]) and t in (HINGE, SLIDE) and j not in dependent
            ql += [float(mj.jnt_range[j, 0]) if lim else None] + [None] * (nq - 1)
            qu += [float(mj.jnt_range[j, 1]) if lim else None] + [None] * (nq - 1)
            dofs += list(range(d, d + nv))
            cnames += [jnames[j]] if nq == 1 else [f"{jnames[j]}[{k}]" for k in range(nq)]
        dofs = np.array(dofs, dtype=np.int64)
        mass = float(mj.body_mass[i])
        Ri = _quat_matrix(mj.body_iquat[i])
        inertia = Ri @ np.diag(np.array(mj.body_inertia[i], dtype=float)) @ Ri.T
        inertia = 0.5 * (inertia + inertia.T)
        kw = dict(coordinate_names=cnames) if cnames else {}
        if len(dofs):
            kw.update(q_lower=ql, q_upper=qu, damping=damp[dofs], stiffness=stiff[dofs],
                      spring_ref=sref[dofs], armature=arm[dofs])
        try:
            b.add_body(bnames[i], parent=parent, joint=spec, placement=P, child_placement=Cp, mass=mass,
                       com=np.array(mj.body_ipos[i], dtype=float), inertia=inertia, joint_name=jname,
                       inertia_as_written=inertia_defect(inertia) is not None if mass > 0 else False, **kw)
        except ModelError as e:
            raise ModelError(f"{who}: {e}") from None
    if ball_limits:
        notes.append(f"cone limits of ball joints: {', '.join(ball_limits)}")

    # the actuation (actuators, tendons, gravity compensation: ``actuation.tables.from_mujoco``);
    # a model with a part of it not supported keeps none of it, and says why
    from ..actuation.tables import Unsupported, from_mujoco as _actuation_from_mujoco
    try:
        b.actuation = _actuation_from_mujoco(mj, source, set(locked), int(mj.nbody), int(mj.nv) - len(locked))
        actuation_left = None
    except Unsupported as e:
        b.actuation = None
        actuation_left = str(e)
    counts = (("flex objects", getattr(mj, "nflex", 0)),)
    if actuation_left is not None:
        counts = (("actuators", mj.nu), ("tendons", mj.ntendon)) + counts
    for what, n in counts:
        if n:
            notes.append(f"{what}: {int(n)}")
    if actuation_left is not None and (mj.nu or mj.ntendon or np.any(np.asarray(mj.body_gravcomp) != 0)):
        notes.append(f"the actuation (actuators, tendons, gravity compensation), since {actuation_left}")
    ncol = int(np.count_nonzero((np.asarray(mj.geom_contype) != 0) | (np.asarray(mj.geom_conaffinity) != 0)))
    if ncol:
        notes.append(f"contacts: {ncol} colliding geoms")
    ngc = int(np.count_nonzero(np.asarray(mj.body_gravcomp) != 0.0))
    if ngc and actuation_left is not None:
        notes.append(f"gravity compensation: {ngc} bodies")
    nfl = int(np.count_nonzero(np.asarray(mj.dof_frictionloss) != 0.0))
    if nfl:
        notes.append(f"friction loss: {nfl} degrees of freedom")
    if mj.opt.density > 0 or mj.opt.viscosity > 0:
        notes.append("fluid forces (opt.density, opt.viscosity)")
    nmocap = int(getattr(mj, "nmocap", 0))
    if nmocap:
        notes.append(f"mocap bodies: {nmocap}, fixed at their pose in the file")
    b.notes = [f"MJCF, not loaded: {n}" for n in notes]
    if locked:
        # exact, so no warning: said in the notes for summary()
        b.notes.append("MJCF: joints fixed by joint equalities, welded at their values: "
                       + ", ".join(f"{jnames[j]} = {v:.6g}" for j, v in locked.items()))
    for j1, (j2, coeffs) in dependent.items():
        f = (_fn.Linear([coeffs[1]], coeffs[0]) if len(coeffs) == 2 else _fn.Poly(0, coeffs))
        b.add_coupler(coord_of[j1], [coord_of[j2]], f)
    for label, b1, b2, spec, Pa, Pb in closures:
        b.add_loop(label if not label.startswith("#") else f"equality{label[1:]}", b1, b2, joint=spec,
                   placement_a=Pa, placement_b=Pb)
    taken = set(bnames)
    for k in range(int(mj.nsite)):
        name = _name(mujoco, mj, mujoco.mjtObj.mjOBJ_SITE, k, f"site{k}")
        while name in taken:
            name += "_site"
        taken.add(name)
        b.add_frame(name, int(mj.site_bodyid[k]), placement=Transform(
            _quat_matrix(mj.site_quat[k]), np.array(mj.site_pos[k], dtype=float)))
    model = b.build()
    if warn and notes:
        warnings.warn(MJCFWarning(f"{source}: left out what is not rigid-body tree dynamics: " + "; ".join(notes),
                                  source=source, notes=notes), stacklevel=_caller_level())
    return model
