"""MJCF (MuJoCo) models through MuJoCo's own compiler.

``load_mjcf`` lets ``mujoco`` parse and compile the file (defaults, includes, ``<compiler>``
angle/eulerseq/inertiafromgeom, mesh inertias, balanceinertia, ...) and ``from_mujoco`` maps the
*compiled* tables of an ``mujoco.MjModel`` onto an ``ej.Model``; no MJCF is parsed here.

Mapping (docs/API.md, "Loading MJCF", says the same for users):
  * MuJoCo body b is body b (same numbering, parents before children; body 0 is the world), with
    the same frame.  Its inertia: mass ``body_mass``, centre of mass ``body_ipos``, rotational
    inertia ``R(body_iquat) diag(body_inertia) R^T`` (body axes).
  * A body's joints (``body_jntadr``, ``body_jntnum``) become its one joint, P being the body's
    placement in its parent (``body_pos``, ``body_quat``) times the first joint's anchor, C the
    last joint's anchor (``jnt_pos``) in the body:
      - no joint: Fixed (MuJoCo welds the body to its parent);
      - free: Free("quaternion") with P = C = identity: q = [p world; w x y z] and
        v = [p rates, world axes; angular velocity, body axes], MuJoCo's qpos and qvel;
      - ball: Spherical("quaternion"), q the quaternion (w x y z), v the angular velocity in
        body axes;
      - hinge / slide: Revolute / Prismatic about / along ``jnt_axis`` through ``jnt_pos``, in
        body axes.  MuJoCo turns (moves) the body by qpos - qpos0 (qpos0 = the joint's ``ref``):
        P carries the turn (shift) by -ref, so q is MuJoCo's qpos, not qpos - ref;
      - several hinges and slides in one body: one Composite joint with MuJoCo's sequence, each
        motion about (along) its axis through its anchor in the frame the previous ones moved
        to; q and v are MuJoCo's, in its order.  A ball among several joints is refused.
  * ``dof_armature`` -> ``Model.dof_armature``; ``dof_damping`` -> ``dof_damping``;
    ``jnt_stiffness`` and ``qpos_spring`` -> ``dof_stiffness``, ``dof_springref`` (hinge, slide
    and the translation of a free joint; a spring on a quaternion rotation is left out);
    ``jnt_range`` where ``jnt_limited`` -> ``q_lower``, ``q_upper`` (hinge and slide; a ball's cone
    limit is left out); ``opt.gravity`` (zero when gravity is disabled) -> ``gravity``.
  * each site k is a named frame (``Model.frame_names``) on body ``site_bodyid`` at ``site_pos``,
    ``site_quat``; its name is MuJoCo's (``site<k>`` when unnamed; ``_site`` appended where a body
    has the name).
  * names: MuJoCo's body and joint names (``body<b>`` / ``joint<j>`` for unnamed ones); a
    Composite joint is named by its joints' names joined with ``+``; ``coordinate_names`` are
    MuJoCo's joint names (``name[k]`` for the entries of a ball or free joint).
  * ``<equality joint=...>`` with ``polycoef`` whose quadratic and higher terms are zero (and
    active at load): the first joint follows the second, q1 = q1_0 + c0 + c1 (q2 - q2_0), as a
    mimic joint (``Model.joint_mimic``; the model then has no coordinate for q1).  Its armature,
    damping and stiffness are carried to the joint it follows (times c1^2), as the reduced
    dynamics have them.
  * active ``<equality connect>`` / ``<equality weld>`` between bodies -> exact loop closures
    (``Model.loops``; MuJoCo's are soft): connect a spherical closure at its two anchors, weld a
    Fixed closure at the relative pose MuJoCo compiled (``relpose`` or the pose at qpos0).
  * left out, listed in one ``MJCFWarning`` and in ``Model.notes`` (``summary()``): contacts,
    actuators, tendons, inactive or site-based connect / weld and other equalities, nonlinear polynomial couplings,
    gravity compensation, flex, friction loss, fluid forces and the rest.
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
    tree dynamics): ``source`` is the file, ``notes`` the list of what was left out (also
    ``Model.notes``)."""

    def __init__(self, message, source=None, notes=()):
        super().__init__(message)
        self.source, self.notes = source, tuple(notes)


def _mujoco():
    try:
        import mujoco
    except ImportError:
        raise ImportError("reading MJCF needs MuJoCo's compiler: pip install mujoco "
                          "(or ejce_nb[mjcf])") from None
    return mujoco


def load_mjcf(path_or_xml, assets=None, warn=True):
    """Load an MJCF file (or MJCF text, a string starting with ``<``) as an ``ej.Model``.

    MuJoCo's compiler reads the file (``mujoco.MjModel.from_xml_path``, or ``from_xml_string``
    with ``assets``, a dict {file name: bytes} for meshes and includes of text), and
    ``from_mujoco`` maps the compiled model.  A file MuJoCo refuses, or cannot find, raises
    ``ej.ModelError`` with MuJoCo's message and the file's name."""
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


def from_mujoco(mjmodel, source=None, warn=True):
    """The ``ej.Model`` of a compiled ``mujoco.MjModel`` (see the module's mapping).

    What is not rigid tree dynamics (contacts, actuators, tendons, most equalities, ...) is left
    out, listed in ``Model.notes`` and, with ``warn=True``, in one ``ej.MJCFWarning``.  A tree
    the library cannot hold (a ball joint among several joints of one body) raises
    ``ej.ModelError`` naming the body."""
    mujoco = _mujoco()
    mj = mjmodel
    source = source or "MuJoCo model"
    OBJ_BODY, OBJ_JOINT = mujoco.mjtObj.mjOBJ_BODY, mujoco.mjtObj.mjOBJ_JOINT
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

    # joint equalities: linear couplings, joint -> (source joint, multiplier, offset), become
    # mimic joints; nonlinear ones, joint -> (source joint, coefficients in q_source), couplers
    coupled = {}
    poly = {}
    EQ = mujoco.mjtEq
    eq_left = {}
    closures = []
    for e in range(mj.neq):
        kind = int(mj.eq_type[e])
        active = bool(mj.eq_active0[e])
        label = _name(mujoco, mj, mujoco.mjtObj.mjOBJ_EQUALITY, e, f"#{e}")
        if kind in (int(EQ.mjEQ_CONNECT), int(EQ.mjEQ_WELD)) and active and \
                int(mj.eq_objtype[e]) == int(OBJ_BODY):
            # a rigid loop closure (MuJoCo's is soft): connect -> spherical closure at the two
            # anchors (eq_data[0:3] in body1, [3:6] in body2); weld -> Fixed closure at the pose
            # of body2 in body1 (eq_data[3:6] position, [6:10] quaternion)
            data = np.array(mj.eq_data[e], dtype=float)
            b1, b2 = int(mj.eq_obj1id[e]), int(mj.eq_obj2id[e])
            if kind == int(EQ.mjEQ_CONNECT):
                closures.append((label, b1, b2, _specs.Spherical("quaternion"), Transform(None, data[0:3]),
                                 Transform(None, data[3:6])))
            else:
                closures.append((label, b1, b2, _specs.Fixed(), Transform(_quat_matrix(data[6:10]), data[3:6]),
                                 Transform()))
            continue
        if kind != int(EQ.mjEQ_JOINT):
            what = {int(EQ.mjEQ_CONNECT): "connect", int(EQ.mjEQ_WELD): "weld",
                    int(EQ.mjEQ_TENDON): "tendon"}.get(kind, "flex/other")
            if kind in (int(EQ.mjEQ_CONNECT), int(EQ.mjEQ_WELD)):
                what = f"inactive {what}" if not active else f"{what} (between sites)"
            eq_left.setdefault(f"{what} equalities (closed loops and other constraints)", []).append(label)
            continue
        if not active:
            eq_left.setdefault("inactive joint equalities", []).append(label)
            continue
        j1, j2 = int(mj.eq_obj1id[e]), int(mj.eq_obj2id[e])
        c = np.array(mj.eq_data[e, :5], dtype=float)
        why = None
        if j2 < 0:
            why = "joint equalities that lock a joint at a value"
        elif any(int(mj.jnt_type[j]) not in (HINGE, SLIDE) for j in (j1, j2)):
            why = "joint couplings of a ball or free joint"
        elif (j1 in coupled or j2 in coupled or j1 in poly or j2 in poly or j1 == j2
              or any(v[0] == j1 for v in list(coupled.values()) + list(poly.values()))):
            why = "chained or repeated joint couplings"
        elif np.all(c[2:] == 0.0) and any(mj.body_jntnum[mj.jnt_bodyid[j]] != 1 for j in (j1, j2)):
            why = "linear joint couplings of a joint that is not the only hinge or slide of its body"
        if why is not None:
            eq_left.setdefault(why, []).append(label)
            continue
        q10, q20 = float(mj.qpos0[mj.jnt_qposadr[j1]]), float(mj.qpos0[mj.jnt_qposadr[j2]])
        if np.all(c[2:] == 0.0):
            coupled[j1] = (j2, float(c[1]), q10 + float(c[0]) - float(c[1]) * q20)
        else:
            # q1 - q1_0 = sum_k c_k (q2 - q2_0)^k, as a polynomial in q2 (lowest order first)
            coeffs = np.zeros(5)
            for k in range(5):
                for m in range(k + 1):
                    coeffs[m] += c[k] * math.comb(k, m) * (-q20) ** (k - m)
            coeffs[0] += q10
            poly[j1] = (j2, coeffs)
    for what, labels in eq_left.items():
        notes.append(f"{what}: {len(labels)} ({', '.join(labels[:8])}{', ...' if len(labels) > 8 else ''})")

    # per-dof passive terms and armature, with coupled joints' terms carried to their source
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
    for j1, (j2, k1, off) in coupled.items():
        d1, d2 = int(mj.jnt_dofadr[j1]), int(mj.jnt_dofadr[j2])
        arm[d2] += k1 * k1 * arm[d1]
        damp[d2] += k1 * k1 * damp[d1]
        # k1 (q1 - s1) with q1 = k1 q2 + off is k1 k1^2 (q2 - (s1 - off) / k1)
        ks = stiff[d1] * k1 * k1
        if ks != 0.0:
            s1 = (sref[d1] - off) / k1
            tot = stiff[d2] + ks
            sref[d2] = (stiff[d2] * sref[d2] + ks * s1) / tot
            stiff[d2] = tot

    ball_limits = []
    used_joint_names = set(jnames)
    for i in range(1, mj.nbody):
        who = f"{source}: body {bnames[i]!r}"
        parent = int(mj.body_parentid[i])
        Tb = Transform(_quat_matrix(mj.body_quat[i]), np.array(mj.body_pos[i], dtype=float))
        js = list(range(int(mj.body_jntadr[i]), int(mj.body_jntadr[i]) + int(mj.body_jntnum[i])))
        types = [int(mj.jnt_type[j]) for j in js]
        mim = None
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
            n = len(js)
            anchors = [np.array(mj.jnt_pos[j], dtype=float) for j in js]
            axes = [np.array(mj.jnt_axis[j], dtype=float) for j in js]
            refs = [float(mj.qpos0[mj.jnt_qposadr[j]]) for j in js]
            # the first joint's ref turns (shifts) P: about (along) the same axis it commutes
            first = (rot_axis_angle(axes[0], -refs[0]) if types[0] == HINGE else np.eye(3),
                     -refs[0] * axes[0] if types[0] == SLIDE else np.zeros(3))
            P = Tb @ Transform(None, anchors[0]) @ Transform(*first)
            Cp = Transform(None, anchors[-1])
            if n == 1:
                spec = (_specs.Revolute if types[0] == HINGE else _specs.Prismatic)(axes[0])
                jname = jnames[js[0]]
                if js[0] in coupled:
                    src, k1, off = coupled[js[0]]
                    mim = (jnames[src], k1, off)
            else:
                motions = []
                for k in range(n):
                    if k > 0:
                        gap = anchors[k] - anchors[k - 1]
                        dist = float(np.linalg.norm(gap))
                        if dist > 0.0:
                            motions.append(_specs.Trans(gap / dist, _fn.Linear(np.zeros(n), dist)))
                    e = np.zeros(n)
                    e[k] = 1.0
                    kind = _specs.Rot if types[k] == HINGE else _specs.Trans
                    motions.append(kind(axes[k], _fn.Linear(e, -refs[k] if k > 0 else 0.0)))
                spec = _specs.Composite(motions, n)
                jname = "+".join(jnames[j] for j in js)
        else:
            raise ModelError(f"{who}: joints {[jnames[j] for j in js]} of kinds "
                             f"{[mujoco.mjtJoint(t).name for t in types]}: a ball joint among several joints of "
                             "one body cannot be held (a body takes one ball or free joint alone, or hinges and "
                             "slides)")
        # limits and passive terms of the joint's own coordinates
        ql, qu = [], []
        dofs = []
        cnames = []
        for j in js:
            t, qa, d = int(mj.jnt_type[j]), int(mj.jnt_qposadr[j]), int(mj.jnt_dofadr[j])
            nq, nv = {FREE: (7, 6), BALL: (4, 3)}.get(t, (1, 1))
            lim = bool(mj.jnt_limited[j]) and t in (HINGE, SLIDE)
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
        if mim is None and len(dofs):
            kw.update(q_lower=ql, q_upper=qu, damping=damp[dofs], stiffness=stiff[dofs],
                      spring_ref=sref[dofs], armature=arm[dofs])
        try:
            b.add_body(bnames[i], parent=parent, joint=spec, placement=P, child_placement=Cp, mass=mass,
                       com=np.array(mj.body_ipos[i], dtype=float), inertia=inertia, joint_name=jname,
                       inertia_as_written=inertia_defect(inertia) is not None if mass > 0 else False,
                       mimic=mim, **kw)
        except ModelError as e:
            raise ModelError(f"{who}: {e}") from None
    if ball_limits:
        notes.append(f"cone limits of ball joints: {', '.join(ball_limits)}")

    # what is not rigid tree dynamics
    counts = (("actuators", mj.nu), ("tendons", mj.ntendon), ("flex objects", getattr(mj, "nflex", 0)))
    for what, n in counts:
        if n:
            notes.append(f"{what}: {int(n)}")
    ncol = int(np.count_nonzero((np.asarray(mj.geom_contype) != 0) | (np.asarray(mj.geom_conaffinity) != 0)))
    if ncol:
        notes.append(f"contacts: {ncol} colliding geoms")
    ngc = int(np.count_nonzero(np.asarray(mj.body_gravcomp) != 0.0))
    if ngc:
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
    lost = []
    for j1, (j2, coeffs) in poly.items():
        b.add_coupler(jnames[j1], jnames[j2], _fn.Poly(0, np.trim_zeros(coeffs, "b")))
        d1 = int(mj.jnt_dofadr[j1])
        if arm[d1] != 0.0 or damp[d1] != 0.0 or stiff[d1] != 0.0:
            lost.append(jnames[j1])
    if lost:
        notes.append("armature, damping and stiffness of joints that follow another nonlinearly: "
                     + ", ".join(lost))
        b.notes.append(f"MJCF, not loaded: {notes[-1]}")
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
