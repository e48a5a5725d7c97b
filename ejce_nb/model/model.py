"""The model: immutable structure-of-arrays tables, one row per body (row 0 is the world).

Shapes (N bodies, nq coordinates, nv velocities, P parameters, K elementary motions); the names
in brackets are the same tables under their short names (read-only aliases):
  body_parent [parent]  (N+1,)  parent body index, body_parent[0] == -1; body_parent[i] < i
  jnt_type [jtype]      (N+1,)  joint type code (``joints.codes``) of body i's joint
  jnt_qadr, jnt_nq [q_start, nq_joint]      (N+1,)  slice of q of joint i
  jnt_dofadr, jnt_nv [v_start, nv_joint]    (N+1,)  slice of v (qd, qdd, tau) of joint i
  jnt_padr [joint_param_adr]  (N+1,)  start of joint i's block in jnt_params
  jnt_params [joint_params]   (P,)    flat parameter table (axes, sequences, composite programs)
  joint_P_rot/_pos  (N+1,3,3)/(N+1,3)   inboard frame P in the parent body frame (E_p, c_p)
  joint_C_rot/_pos  (N+1,3,3)/(N+1,3)   outboard frame C in the body frame (E_c, c_c)
  body_mass         (N+1,)
  body_com          (N+1,3)     centre of mass in body axes
  body_inertia      (N+1,3,3)   rotational inertia about the COM, body axes
  body_spatial_inertia (N+1,6,6) spatial inertia about the body origin, [angular; linear]
  q_lower, q_upper  (nq,)       coordinate limits (+-inf: none)
  v_limit, effort_limit (nv,)   velocity and effort limits (inf: none)
  dof_damping, dof_stiffness, dof_springref (nv,)   passive joint forces the simulation adds,
                tau_passive = -damping qd - stiffness (q - spring_ref) per velocity variable
                (a spring only where the coordinate's rate is that variable: no unit quaternion);
                the dynamics functions (rnea, aba, ...) do not include them
  dof_armature      (nv,)       rotor inertia of each velocity variable (MuJoCo's armature, Drake's
                rotor inertia times gear ratio squared): M(q) += diag(armature) in every algorithm
                (rnea adds armature qdd, the ABA's D_i and the kinetic energy include it)
  coupled_armature  tuple of ((joint, k), armature)   rotor inertia of couplers' dependent
                coordinates, in the expansion's M_full: the reduced M holds G^T diag(armature) G
  notes             tuple of str   what a loader left out of the file it read (``summary()`` lists them)
  actuation         None, or the ``Actuation`` (MuJoCo-named tables) of the forces that drive the
                                   model: actuators, tendons, gravity compensation, force elements
  gravity           (3,)        world-frame gravitational acceleration
  joint_mimic       (N+1,)      -1, or the joint whose coordinate drives joint i (a mimic joint)
  joint_mimic_multiplier, joint_mimic_offset (N+1,)   its coupling: q_i = multiplier q_src + offset
  frame_names       tuple of F str   named frames fixed on bodies (URDF links merged by fixed joints,
                                   MJCF sites, OpenSim offset frames and markers, ``add_frame``)
  frame_body (F,), frame_rot (F,3,3), frame_pos (F,3)   the body each is fixed on and its placement
                                   in that body's frame (``frame_placement(name)``); no kernel reads them

Derived tables the kernels read, computed once here (``layout`` packs them for the kernels):
  jnt_path     (N+1,)    how joint i is evaluated (``ejce``: fixed, product of screws, quaternion, jets)
  jnt_quat     (N+1,)    offset of a unit quaternion within the joint's q, or -1
  jnt_madr, jnt_nmot (N+1,)  joint i's elementary motions (the screw path)
  jnt_fn       (N+1,)    1 where some motion's amount is a function, not scale * q[coord]
  mot_kind, mot_coord, mot_fadr (K,)  rotation/translation; amount scale * q[coord] or a function
  mot_axis (K, 3), mot_scale (K,)
  jnt_Xt (N+1, 3, 3), jnt_pt (N+1, 3)   placement of P_i in the parent's outboard frame C
                                        (Xt = E_c,p^T E_p, pt = E_c,p^T (c_p - c_c,p))
  jnt_Xid      (N+1,)    1 where jnt_Xt is exactly the identity (the placement skips the product)
  body_hC, body_cC, body_bo (N+1, 3)    m c, centre of mass and body origin, in C
  body_IC (N+1, 3, 3)   rotational inertia about the origin of C, C axes
  body_iscale (N+1,)    the largest of the mass and the diagonal of body_IC (a scale for pivots)

A mimic joint (URDF ``<mimic>``) is a one-coordinate joint with no coordinate of its own: its rows
have nq_joint = nv_joint = 0 and its angle (or slide) is ``multiplier * q[q_slice(src)] +
offset``.  ``expanded()`` returns the same mechanism with every mimic joint given its own
coordinate, and ``mimic_map()`` the linear maps between the two coordinate vectors, so every
algorithm can run on the expanded model and project back (see ``mimic_map``).
"""
import copy
import warnings

import numpy as np

from . import couplers as _cp
from . import layout
from ..core.ejce import (PATH_FIXED, PATH_JETS, PATH_QUAT, PATH_SCREW, PATH_USER, PATHS_ALL, PATHS_FUNCTIONS,
                         PATHS_SCREWS)
from ..core.joints import codes as C
from ..core.joints.fn import Linear
from ..errors import ClosureWarning, ModelError
from .expansion import Expansion
from .inertia import spatial_inertia
from ..core.transform import Transform
from ..core.joints.pose import simple_function_coord
from .loops import summary_lines

ARRAYS = ("body_parent", "jnt_type", "jnt_qadr", "jnt_nq", "jnt_dofadr", "jnt_nv", "jnt_padr",
          "jnt_params", "joint_P_rot", "joint_P_pos", "joint_C_rot", "joint_C_pos", "body_mass",
          "body_com", "body_inertia", "body_spatial_inertia", "q_lower", "q_upper", "v_limit",
          "effort_limit", "gravity", "joint_mimic", "joint_mimic_multiplier", "joint_mimic_offset",
          "dof_damping", "dof_stiffness", "dof_springref", "dof_armature")

# the short names of some tables -> the entity-prefixed table they name (the only
# attribute: each alias is a read-only property of the Model class, defined from this map)
ALIASES = {"parent": "body_parent", "jtype": "jnt_type", "q_start": "jnt_qadr", "nq_joint": "jnt_nq",
           "v_start": "jnt_dofadr", "nv_joint": "jnt_nv", "joint_param_adr": "jnt_padr",
           "joint_params": "jnt_params"}


class Model(Expansion):
    """Immutable multibody model: flat structure-of-arrays tables, one row per body (row 0 the
    world); build it with ``ej.ModelBuilder``, read it with ``Model.from_json`` or
    ``ej.models.load``, or load a model file (``ej.load_urdf``, ``ej.load_mjcf``,
    ``ej.load_opensim``).

    Body 0 is the fixed world; bodies 1..N each have one joint to their parent, joint ``i`` being
    the joint of body ``i``.  Per-body tables have N+1 rows, row 0 for the world (``parent[0] ==
    -1``, a world joint with no coordinates).  The tables are named by entity (MuJoCo's style);
    every table the kernels read is declared once, with its shape and meaning, in
    ``ejce_nb.model.layout.MODEL``.  Short read-only aliases name the same arrays:

    | alias | table | shape | what |
    |---|---|---|---|
    | ``parent`` | ``body_parent`` | (N+1,) | parent body index, ``parent[0] == -1`` |
    | ``jtype`` | ``jnt_type`` | (N+1,) | joint type codes |
    | ``q_start``, ``nq_joint`` | ``jnt_qadr``, ``jnt_nq`` | (N+1,) | joint i's slice of q |
    | ``v_start``, ``nv_joint`` | ``jnt_dofadr``, ``jnt_nv`` | (N+1,) | joint i's slice of v (qd, qdd, tau) |
    | ``joint_param_adr`` | ``jnt_padr`` | (N+1,) | start of joint i's block of ``jnt_params`` |
    | ``joint_params`` | ``jnt_params`` | (P,) | the joints' flat parameter table |

    **Structure.** ``nbodies`` (N), ``nq``, ``nv``, ``body_names``, ``joint_names`` (N+1 names),
    ``joint_specs`` (N+1 joint specs), ``gravity`` (3,) (world axes), ``rheonomic`` (a joint moves
    with time), ``total_mass``; ``joint_P_rot`` (N+1, 3, 3), ``joint_P_pos`` (N+1, 3): each
    inboard frame P in its parent's body frame; ``joint_C_rot``, ``joint_C_pos``: each outboard
    frame C in its body's frame; ``body_mass`` (N+1,), ``body_com`` (N+1, 3) (body axes),
    ``body_inertia`` (N+1, 3, 3) (about the COM, body axes), ``body_spatial_inertia`` (N+1, 6, 6)
    (about the body origin, [angular; linear]).  ``body_index(name)``, ``joint_index(name)``,
    ``subtree(body)``, ``q_slice(j)`` / ``v_slice(j)``, ``joint_q_slices()`` /
    ``joint_v_slices()`` (``{joint name: slice}``), ``quaternion_blocks()``.

    **Coordinates and limits.** ``coordinate_names`` (nq names: as the file named them, e.g. an
    MJCF's joint names, else the joint's name with ``[k]`` when it has several coordinates),
    ``velocity_names`` (nv names); ``q_default`` (the default coordinates as given, e.g. an
    OpenSim file's default values) and ``neutral()`` (a valid reference configuration: them, or
    each joint's own neutral, zero angles and unit quaternions, moved to the nearest point of
    ``[q_lower, q_upper]``; for a loop model, assembled: ``neutral()``'s docstring); ``q_lower``, ``q_upper`` (nq,; +-inf: none), ``v_limit``,
    ``effort_limit`` (nv,; inf: none); ``dof_damping``, ``dof_stiffness``, ``dof_springref``
    (nv,: the passive forces ``-damping qd - stiffness (q - spring_ref)`` that only ``ej.simulate``
    adds), ``dof_armature`` (nv,: rotor inertias, ``M(q) + diag(armature)`` in every algorithm;
    ``ModelBuilder.add_body``).

    **Couplers and mimic joints** (``ModelBuilder.add_coupler``).  ``couplers`` (each with
    ``dependent`` and ``independent`` (joint, index) pairs, ``function``, ``scale``),
    ``has_couplers`` (``has_mimic`` is the same flag), ``couplers_linear`` (G constant, Gdot = 0),
    ``joint_mimic`` (N+1,: -1, or the joint whose coordinate drives joint i),
    ``joint_mimic_multiplier``, ``joint_mimic_offset``, ``coupled_armature`` (((joint, k),
    armature) pairs), ``dependent_coords``, ``expanded()``, ``expand(q)`` (also ``expand_q``),
    ``expand_v(v, q=None)``, ``expand_a(a, q, v)``, ``coupler_jacobian(q)``, ``mimic_map()``.

    **Named frames** (``ModelBuilder.add_frame``).  ``frame_names`` (a tuple of F names),
    ``frame_body`` (F,) (body index), ``frame_rot`` (F, 3, 3), ``frame_pos`` (F, 3) (placement in
    the body frame), ``nframes``, ``frame_index(name)``, ``frame_placement(name)`` -> ``(body
    index, ej.Transform)``.  No kernel reads them: frames cost nothing in the dynamics.

    **Loop closures** (``ModelBuilder.add_loop``).  ``loops`` (each a ``Loop`` with ``name``,
    ``body_a``, ``body_b``, ``joint``, ``placement_a``, ``placement_b``, ``nc``), ``has_loops``,
    ``nc`` (constraint rows).

    **Files and the rest.** ``notes`` (a tuple of strings: what a loader left out of its file),
    ``summary()`` (bodies, joints, coordinate slices, couplers, loops and notes, as
    ``ejce-nb info`` prints it), ``to_json(path=None)`` / ``Model.from_json(path_or_text)`` and ``to_dict()`` /
    ``Model.from_dict(d)`` (the JSON form, below), ``data(batch=None)`` (= ``ej.Data(model,
    batch)``), ``with_generic_joints()``.

    **JSON.** ``to_json`` / ``from_json`` round-trip every joint kind, bit for bit (numbers in
    Python's shortest round-trip form).  A file is ``{"format": "ejce_nb.model", "version": 1,
    "gravity", "bodies": [...], "couplers": [...], "frames": [...], "loops": [...]}``; each body
    object has the fields of ``ModelBuilder.add_body`` (``name``, ``parent``, ``joint_name``,
    ``joint``, ``placement``, ``child_placement``, ``mass``, ``com``, ``inertia``,
    ``inertia_as_written``, ``limits``, ``dynamics`` (``damping``, ``stiffness``,
    ``spring_ref``, ``armature``: one number per velocity variable, armature written where
    nonzero), ``mimic``, ``coordinate_names``, ``q_default``); each coupler ``{"dependent": C,
    "independent": [C, ...], "function": {an ej.fn function}, "scale": 1.0}``, where a coordinate
    ``C`` is ``[joint name, index in the joint]`` or a coordinate name; each frame ``{"name",
    "body", "placement"}`` (body by name; placement default identity); each loop ``{"name",
    "body_a", "body_b", "joint", "placement_a", "placement_b"}`` (bodies by name; ``joint``
    default Fixed, placements default identity).  Files without ``couplers``, ``frames`` or
    ``loops`` keep their meaning; an empty ``bodies`` list is the world alone (nq = nv = 0), as
    ``ModelBuilder().build()``.  Invalid files raise ``ej.ModelError`` naming the file and the
    path of the offending value in it."""

    def __init__(self, *, gravity, body_names, joint_names, joint_specs, parent, joint_P, joint_C,
                 body_mass, body_com, body_inertia, q_lower, q_upper, v_limit, effort_limit,
                 joint_mimic=None, dof_damping=None, dof_stiffness=None, dof_springref=None,
                 dof_armature=None, couplers=None, coordinate_names=None, q_default=None, notes=None, loops=None, frames=None,
                 coupled_armature=None, actuation=None):
        # what it was made from, to make it again in another process (pickle): its kernel tables
        # hold addresses that are only valid in this one
        self._made_from = dict(gravity=gravity, body_names=body_names, joint_names=joint_names,
                               joint_specs=joint_specs, parent=parent, joint_P=joint_P, joint_C=joint_C,
                               body_mass=body_mass, body_com=body_com, body_inertia=body_inertia, q_lower=q_lower,
                               q_upper=q_upper, v_limit=v_limit, effort_limit=effort_limit, joint_mimic=joint_mimic,
                               dof_damping=dof_damping, dof_stiffness=dof_stiffness, dof_springref=dof_springref,
                               dof_armature=dof_armature, couplers=couplers, coordinate_names=coordinate_names,
                               q_default=q_default, notes=notes, loops=loops, frames=frames,
                               coupled_armature=coupled_armature, actuation=actuation)
        n1 = len(parent)
        self.nbodies = n1 - 1
        self.body_names = tuple(body_names)
        self.joint_names = tuple(joint_names)
        self.joint_specs = tuple(joint_specs)
        self.body_parent = np.asarray(parent, dtype=np.int64)
        self.jnt_type = np.array([s.code for s in joint_specs], dtype=np.int64)
        # joint_mimic: per row None or (source joint index, multiplier, offset); a mimic joint is the
        # linear case of a coupler (``couplers``), and every coupler is validated there
        mimic = [None] * n1 if joint_mimic is None else list(joint_mimic)
        cpl = [_cp.Coupler((j, 0), [(m[0], 0)], Linear([m[1]], m[2])) for j, m in enumerate(mimic) if m is not None]
        cpl += list(couplers or ())
        _cp.check(cpl, joint_specs, joint_names)
        self.couplers = tuple(cpl)
        self.has_couplers = self.has_mimic = bool(cpl)
        self.joint_mimic = np.full(n1, -1, dtype=np.int64)
        self.joint_mimic_multiplier = np.ones(n1)
        self.joint_mimic_offset = np.zeros(n1)
        ndep = np.zeros(n1, dtype=np.int64)
        for c in cpl:
            ndep[c.dependent[0]] += 1
            f, (j, _), ind = c.function, c.dependent, c.independent
            if (joint_specs[j].nq == 1 and len(ind) == 1 and joint_specs[ind[0][0]].nq == 1
                    and isinstance(f, Linear) and len(f.coeffs) == 1):
                # a whole one-coordinate joint following another linearly: a mimic joint
                self.joint_mimic[j] = ind[0][0]
                self.joint_mimic_multiplier[j] = c.scale * f.coeffs[0]
                self.joint_mimic_offset[j] = c.scale * f.offset
        self.couplers_linear = all(c.is_linear() for c in cpl)
        self.jnt_nq = np.array([s.nq for s in joint_specs], dtype=np.int64) - ndep
        self.jnt_nv = np.array([s.nv for s in joint_specs], dtype=np.int64) - ndep
        self.jnt_qadr = np.concatenate([[0], np.cumsum(self.jnt_nq)[:-1]]).astype(np.int64)
        self.jnt_dofadr = np.concatenate([[0], np.cumsum(self.jnt_nv)[:-1]]).astype(np.int64)
        self.nq = int(self.jnt_nq.sum())
        self.nv = int(self.jnt_nv.sum())
        blocks = [s.params() for s in joint_specs]
        self.jnt_padr = np.concatenate([[0], np.cumsum([len(b) for b in blocks])[:-1]]).astype(np.int64)
        # three zeros of padding: kernels may read a joint's first three entries whatever its kind
        self.jnt_params = np.array([v for b in blocks for v in b] + [0.0, 0.0, 0.0], dtype=np.float64)
        self.joint_P_rot = np.array([T.rotation for T in joint_P], dtype=np.float64).reshape(n1, 3, 3)
        self.joint_P_pos = np.array([T.translation for T in joint_P], dtype=np.float64).reshape(n1, 3)
        self.joint_C_rot = np.array([T.rotation for T in joint_C], dtype=np.float64).reshape(n1, 3, 3)
        self.joint_C_pos = np.array([T.translation for T in joint_C], dtype=np.float64).reshape(n1, 3)
        self.body_mass = np.asarray(body_mass, dtype=np.float64)
        self.body_com = np.asarray(body_com, dtype=np.float64).reshape(n1, 3)
        self.body_inertia = np.asarray(body_inertia, dtype=np.float64).reshape(n1, 3, 3)
        self.body_spatial_inertia = np.array(
            [spatial_inertia(m, c, I) for m, c, I in zip(self.body_mass, self.body_com, self.body_inertia)])
        self.q_lower = np.asarray(q_lower, dtype=np.float64).reshape(self.nq)
        self.q_upper = np.asarray(q_upper, dtype=np.float64).reshape(self.nq)
        self.v_limit = np.asarray(v_limit, dtype=np.float64).reshape(self.nv)
        self.effort_limit = np.asarray(effort_limit, dtype=np.float64).reshape(self.nv)
        for name, x in (("dof_damping", dof_damping), ("dof_stiffness", dof_stiffness),
                        ("dof_springref", dof_springref), ("dof_armature", dof_armature)):
            object.__setattr__(self, name, np.zeros(self.nv) if x is None
                               else np.array(x, dtype=np.float64).reshape(self.nv))
        self.gravity = np.asarray(gravity, dtype=np.float64).reshape(3)
        self.rheonomic = bool(any(s.is_rheonomic() for s in joint_specs))
        self._quaternion_blocks = tuple(
            (j, slice(int(self.jnt_qadr[j] + self.jnt_nq[j]) - 4, int(self.jnt_qadr[j] + self.jnt_nq[j])))
            for j, spec in enumerate(self.joint_specs) if getattr(spec, "quaternion", False))
        self._full_names(coordinate_names, q_default)
        self.notes = tuple(notes or ())
        self.coupled_armature = _coupled_armature(coupled_armature, self.couplers, joint_names)
        # loop closures (``loops``): joints outside the tree, solved as constraints
        self.loops = tuple(loops or ())
        self.has_loops = bool(self.loops)
        self.nc = int(sum(L.nc for L in self.loops))
        self._body_index = {n: i for i, n in enumerate(self.body_names)}
        self._joint_index = {n: i for i, n in enumerate(self.joint_names)}
        # named frames fixed on bodies (``ModelBuilder.add_frame``): (name, body index, Transform)
        fr = tuple(frames or ())
        self.frame_names = tuple(f[0] for f in fr)
        self.frame_body = np.array([int(f[1]) for f in fr], dtype=np.int64)
        self.frame_rot = np.array([f[2].rotation for f in fr], dtype=np.float64).reshape(len(fr), 3, 3)
        self.frame_pos = np.array([f[2].translation for f in fr], dtype=np.float64).reshape(len(fr), 3)
        self.nframes = len(fr)
        self._frame_index = {n: i for i, n in enumerate(self.frame_names)}
        # the forces that drive it (``ejce_nb.actuation.tables.Actuation``: MuJoCo's actuators,
        # tendons and gravity compensation, OpenSim's force elements), None without
        self.actuation = actuation
        self._derive()
        for name in ARRAYS + ("frame_body", "frame_rot", "frame_pos"):
            getattr(self, name).flags.writeable = False
        self._frozen = True

    # ------------------------------------------------------------------ the kernels' tables
    def _derive(self):
        """The tables the kernels read, packed once (``layout``); the model's attributes of the
        same names are read-only views of the packed buffers.  A model with mimic joints runs as
        its expansion, whose tables it shares."""
        if self.has_mimic:
            full = self.expanded()
            for t in layout.MODEL:
                if not hasattr(self, t.name):
                    object.__setattr__(self, t.name, getattr(full, t.name))
            for name in ("_mb", "_mi", "_mf", "_pool", "_wpool"):
                object.__setattr__(self, name, None)
            object.__setattr__(self, "_paths", full._paths)
            return
        n1 = self.nbodies + 1
        Ec, cc = self.joint_C_rot, self.joint_C_pos
        Ep, cp = self.joint_P_rot, self.joint_P_pos
        Xt = np.zeros((n1, 3, 3))
        pt = np.zeros((n1, 3))
        Xt[0] = np.eye(3)
        hC = np.zeros((n1, 3))
        IC = np.zeros((n1, 3, 3))
        cC = np.zeros((n1, 3))
        bo = np.zeros((n1, 3))
        iscale = np.zeros(n1)
        for i in range(1, n1):
            l = self.body_parent[i]
            # the world's C frame is the world frame itself
            Ecl = Ec[l] if l > 0 else np.eye(3)
            ccl = cc[l] if l > 0 else np.zeros(3)
            Xt[i] = Ecl.T @ Ep[i]
            pt[i] = Ecl.T @ (cp[i] - ccl)
            m = self.body_mass[i]
            c = Ec[i].T @ (self.body_com[i] - cc[i])
            cC[i] = c
            hC[i] = m * c
            IC[i] = Ec[i].T @ self.body_inertia[i] @ Ec[i] + m * (np.dot(c, c) * np.eye(3) - np.outer(c, c))
            bo[i] = -(Ec[i].T @ cc[i])
            # the largest diagonal entry bounds every entry of a positive semi-definite inertia
            iscale[i] = max(m, float(np.max(np.diag(IC[i]))))
        path = np.zeros(n1, dtype=np.int64)
        quat = np.full(n1, -1, dtype=np.int64)
        madr = np.zeros(n1, dtype=np.int64)
        nmot = np.zeros(n1, dtype=np.int64)
        mots = []
        fptr = np.zeros(n1, dtype=np.int64)
        for i, spec in enumerate(self.joint_specs):
            if getattr(spec, "quaternion", False):
                quat[i] = spec.nq - 4
            motions = spec.screw_motions()
            madr[i] = len(mots)
            if i == 0 or spec.code == C.FIXED:
                path[i] = PATH_FIXED
            elif spec.code == C.CUSTOM:
                path[i] = PATH_USER
                fptr[i] = spec.address()
            elif motions is not None:
                path[i] = PATH_SCREW
                nmot[i] = len(motions)
                mots += [(k, ax, c, sc, -1 if fo < 0 else self.jnt_padr[i] + fo)
                         for k, ax, c, sc, fo in motions]
            elif quat[i] >= 0:
                path[i] = PATH_QUAT
            else:
                path[i] = PATH_JETS
            if self.__dict__.get("_generic_joints") and path[i] in (PATH_SCREW, PATH_QUAT):
                path[i] = PATH_JETS
        K = len(mots)
        tables = dict(
            body_parent=self.body_parent, jnt_type=self.jnt_type, jnt_path=path, jnt_qadr=self.jnt_qadr,
            jnt_nq=self.jnt_nq, jnt_dofadr=self.jnt_dofadr, jnt_nv=self.jnt_nv, jnt_padr=self.jnt_padr,
            jnt_madr=madr, jnt_nmot=nmot, jnt_quat=quat,
            jnt_fn=[int(any(x[2] < 0 for x in mots[madr[i]:madr[i] + nmot[i]])) for i in range(n1)],
            jnt_Xid=[int(np.array_equal(Xt[i], np.eye(3))) for i in range(n1)],
            jnt_fptr=fptr, mot_kind=[x[0] for x in mots], mot_coord=[x[2] for x in mots],
            mot_fadr=[x[4] for x in mots], jnt_params=self.jnt_params, jnt_Xt=Xt, jnt_pt=pt,
            body_mass=self.body_mass, body_hC=hC, body_IC=IC, body_cC=cC, body_bo=bo, body_Ec=Ec,
            body_iscale=iscale, mot_axis=np.array([x[1] for x in mots]).reshape(K, 3),
            mot_scale=[x[3] for x in mots], gravity=self.gravity, dof_armature=self.dof_armature)
        # a batch runs four states at a time when every joint is fixed, a quaternion joint or a
        # product of screw motions whose amounts are scale * q[coord] or one Poly or Spline term
        # of a coordinate (``lanes``); other functions, the jets path and user-defined joints
        # evaluate one state
        fast_paths = all(p in (PATH_FIXED, PATH_SCREW, PATH_QUAT) for p in path)
        lanes = fast_paths and all(
            simple_function_coord(self.jnt_params, x[4]) >= 0 for x in mots if x[4] >= 0)
        sizes = dict(n1=n1, nq=self.nq, nv=self.nv, nmot=K, npar=len(self.jnt_params))
        mb, mf = layout.pack_model(sizes, tables, lanes)
        mb.flags.writeable = False
        mf.flags.writeable = False
        object.__setattr__(self, "_mb", mb)
        object.__setattr__(self, "_mi", mb)
        object.__setattr__(self, "_mf", mf)
        object.__setattr__(self, "_pool", {})
        object.__setattr__(self, "_wpool", [])
        # the joint paths the kernels compile (``ejce.PATHS``): the fixed, quaternion and screw
        # paths with coordinate amounts only, function amounts too (``jnt_fn``), or the jets and
        # user paths too
        kind = PATHS_ALL if not fast_paths else (PATHS_FUNCTIONS if any(tables["jnt_fn"]) else PATHS_SCREWS)
        object.__setattr__(self, "_paths", kind)
        for name, view in layout.model_tables(mb, mf).items():
            object.__setattr__(self, name, view)

    @property
    def record_size(self):
        """Entries of one state's record in a workspace (``layout``)."""
        return int(self.kernel_model()._mb[layout.H_REC])

    @property
    def scratch_size(self):
        return int(self.kernel_model()._mb[layout.H_SCR])

    def with_actuation(self, actuation):
        """The same model driven by ``actuation`` (an ``ejce_nb.actuation.tables.Actuation``, whose
        tables address this model's bodies and the coordinates of its kernel model; None: none),
        made anew from what this one was made from."""
        return Model(**{**self._made_from, "actuation": actuation})

    def with_generic_joints(self):
        """The same model with every joint but fixed and user-defined ones evaluated by the
        generic EJCE path (the pose on jets) instead of the product-of-screws or quaternion
        formulas: the reference the faster paths are tested against (every function takes it;
        results agree with the model's to rounding, at several times the cost).  Made once per
        model."""
        twin = self.__dict__.get("_generic_twin")
        if twin is None:
            twin = copy.copy(self)
            for name in ("_generic_twin", "_expanded", "_paths"):
                twin.__dict__.pop(name, None)
            object.__setattr__(twin, "_generic_joints", True)
            if self.has_mimic:
                object.__setattr__(twin, "_expanded", self.expanded().with_generic_joints())
            twin._derive()
            object.__setattr__(self, "_generic_twin", twin)
        return twin

    _TREE_QUANTITIES = {"rnea": "joint forces", "nonlinear_effects": "nonlinear effects", "aba": "accelerations",
                        "mass_matrix": "mass matrix", "forward_dynamics_crba": "accelerations",
                        "forward_dynamics": "accelerations"}

    def _tree_quantity(self, what):
        """The dynamics function ``what`` of the open tree was called on this model, which has loop
        closures: one ``ClosureWarning`` per model saying so and naming the loop functions."""
        if self.__dict__.get("_tree_warned"):
            return
        self.__dict__["_tree_warned"] = True
        names = ", ".join(repr(L.name) for L in self.loops)
        warnings.warn(
            f"ej.{what} of a model with loop closures ({names}) gives the open tree's "
            f"{self._TREE_QUANTITIES[what]}, as if the loops were cut (no constraint forces), not the closed "
            "mechanism's: ej.constrained_dynamics gives its accelerations and constraint forces, "
            "ej.constrained_inverse_dynamics its driving forces; ej." + what + "(model.open_tree(), ...) asks for the "
            "tree's without this warning (said once per model)", ClosureWarning, stacklevel=3)

    def kernel_model(self):
        """The model the kernels run on: this one, or for a model with mimic joints its expansion."""
        return self.expanded() if self.has_mimic else self

    def __reduce__(self):
        return (_remake, (self._made_from,))

    def __setattr__(self, name, value):
        if getattr(self, "_frozen", False):
            raise AttributeError(f"ej.Model is immutable; cannot set {name!r}")
        object.__setattr__(self, name, value)

    # ------------------------------------------------------------------ look-ups
    @property
    def njoints(self):
        return self.nbodies + 1

    @property
    def total_mass(self):
        return float(self.body_mass.sum())

    def _index(self, what, names, name):
        if isinstance(name, (int, np.integer)) and not isinstance(name, bool):
            if 0 <= name <= self.nbodies:
                return int(name)
            raise ModelError(f"{what} index {name} out of range 0..{self.nbodies}")
        try:
            return names[name]
        except (KeyError, TypeError):
            raise ModelError(f"no {what} named {name!r}") from None

    def frame_index(self, name):
        """Index of a named frame (``frame_names``) given its name (or index)."""
        if isinstance(name, (int, np.integer)) and not isinstance(name, bool):
            if 0 <= name < self.nframes:
                return int(name)
            raise ModelError(f"frame index {name} out of range 0..{self.nframes - 1}")
        try:
            return self._frame_index[name]
        except (KeyError, TypeError):
            known = ", ".join(map(repr, self.frame_names[:20])) or "none"
            raise ModelError(f"no frame or body named {name!r} (frames: {known})") from None

    def frame_placement(self, frame):
        """(body index, ej.Transform in the body frame) of a named frame."""
        f = self.frame_index(frame)
        return int(self.frame_body[f]), Transform(self.frame_rot[f], self.frame_pos[f])

    def body_index(self, name):
        """Index of a body given its name (or index)."""
        return self._index("body", self._body_index, name)

    def joint_index(self, name):
        """Index of a joint (= index of its body) given its name (or index)."""
        return self._index("joint", self._joint_index, name)

    def q_slice(self, joint):
        """The slice of q of ``joint`` (a name or index)."""
        j = self.joint_index(joint)
        return slice(int(self.jnt_qadr[j]), int(self.jnt_qadr[j] + self.jnt_nq[j]))

    def v_slice(self, joint):
        """The slice of v (qd, qdd, tau) of ``joint`` (a name or index)."""
        j = self.joint_index(joint)
        return slice(int(self.jnt_dofadr[j]), int(self.jnt_dofadr[j] + self.jnt_nv[j]))

    def joint_q_slices(self):
        """{joint name: slice of q} for every joint but the world's (empty for Fixed and mimic
        joints); a name it does not hold raises a KeyError that names the joints."""
        return JointMap("joint", {self.joint_names[j]: self.q_slice(j) for j in range(1, self.nbodies + 1)})

    def joint_v_slices(self):
        """{joint name: slice of v (qd, qdd, tau)} for every joint but the world's (a KeyError
        naming the joints for another name)."""
        return JointMap("joint", {self.joint_names[j]: self.v_slice(j) for j in range(1, self.nbodies + 1)})

    def neutral(self):
        """A valid reference configuration within the coordinate limits: the model's default
        coordinates (``q_default``, e.g. an OpenSim file's default values) where it has them,
        else zero angles and unit quaternions, every coordinate moved to the point of
        [q_lower, q_upper] nearest to it (unit quaternions are not limited).

        A model with loop closures: the configuration that closes every loop nearest to that one
        (``ej.assemble`` from it, or, where it is a singular configuration such as a linkage drawn
        straight, from it displaced by a few fixed small perturbations), made once per model;
        where none closes, that configuration itself, with an ``ej.ClosureWarning`` that says so."""
        cached = self.__dict__.get("_neutral_closed")
        if cached is not None:
            return cached.copy()
        q = self._q_default_full[self._own()[0]].copy()
        free = np.ones(self.nq, dtype=bool)
        for _, sl in self._quaternion_blocks:
            free[sl] = False
        q[free] = np.clip(q[free], self.q_lower[free], self.q_upper[free])
        if self.has_loops:
            from ..algorithms.loops.assembly import assembled_neutral
            q = assembled_neutral(self, q)
            q.flags.writeable = False
            self.__dict__["_neutral_closed"] = q
            return q.copy()
        return q

    def open_tree(self):
        """The same model without its loop closures: the open tree (``ej.rnea``, ``ej.aba``,
        ``ej.mass_matrix``... on it are the tree's quantities, said without a warning).  A model
        without loops is its own open tree.  Made once per model; it shares the model's tables."""
        if not self.has_loops:
            return self
        twin = self.__dict__.get("_open_tree")
        if twin is None:
            twin = copy.copy(self)
            for name in list(twin.__dict__):
                if name in ("_open_tree", "_neutral_closed", "_closure_kernel", "_closure_tree", "_assembly_pool",
                            "_tree_warned", "_generic_twin") or name.startswith("_independent"):
                    del twin.__dict__[name]
            object.__setattr__(twin, "loops", ())
            object.__setattr__(twin, "has_loops", False)
            object.__setattr__(twin, "nc", 0)
            object.__setattr__(twin, "_made_from", dict(self._made_from, loops=None))
            self.__dict__["_open_tree"] = twin
        return twin

    @property
    def q_default(self):
        """The model's default coordinates (nq,) as given (``neutral()`` moves them inside the
        limits)."""
        return self._q_default_full[self._own()[0]].copy()

    # ------------------------------------------------------------------ names
    def _full_names(self, coordinate_names, q_default):
        """Names and defaults of every coordinate of the full mechanism (couplers' dependent
        coordinates included); the model's own are the entries ``_own()`` selects."""
        specs = self.joint_specs
        names, vnames = [], []
        given = None if coordinate_names is None else list(coordinate_names)
        nqf = sum(s.nq for s in specs)
        if given is not None and len(given) != nqf:
            raise ModelError(f"coordinate_names: {len(given)} names for {nqf} coordinates")
        for j in range(1, len(specs)):
            s, jn = specs[j], self.joint_names[j]
            auto = [jn] if s.nq == 1 else [f"{jn}[{k}]" for k in range(s.nq)]
            autov = [jn] if s.nv == 1 else [f"{jn}[{k}]" for k in range(s.nv)]
            mine = auto if given is None else given[len(names):len(names) + s.nq]
            names += mine
            vnames += mine if s.nq == s.nv else autov
        object.__setattr__(self, "_qnames_full", tuple(names))
        object.__setattr__(self, "_vnames_full", tuple(vnames))
        default = np.concatenate([s.neutral() for s in specs] + [np.zeros(0)])
        if q_default is not None:
            qd = np.asarray(q_default, dtype=float)
            if qd.shape != (nqf,) or not np.all(np.isfinite(qd)):
                raise ModelError(f"q_default must be {nqf} finite numbers (every coordinate), got shape {qd.shape}")
            default = qd.copy()
        default.flags.writeable = False
        object.__setattr__(self, "_q_default_full", default)
        own_q, own_v = self._own()
        object.__setattr__(self, "coordinate_names", tuple(names[k] for k in own_q))
        object.__setattr__(self, "velocity_names", tuple(vnames[k] for k in own_v))

    def _own(self):
        """(indices into the full q, into the full v) of the model's own coordinates and
        velocities: all but the couplers' dependent ones."""
        cached = self.__dict__.get("_own_idx")
        if cached is not None:
            return cached
        dep = {c.dependent for c in self.couplers}
        own_q, own_v = [], []
        fq = fv = 0
        for j, s in enumerate(self.joint_specs):
            own_q += [fq + k for k in range(s.nq) if (j, k) not in dep]
            own_v += [fv + k for k in range(s.nv) if (j, k) not in dep]
            fq += s.nq
            fv += s.nv
        out = (np.array(own_q, dtype=np.int64), np.array(own_v, dtype=np.int64))
        object.__setattr__(self, "_own_idx", out)
        return out

    def quaternion_blocks(self):
        """(joint, q slice) of every unit-quaternion block, e.g. to normalise them in integrators."""
        return self._quaternion_blocks

    def quaternion_slice(self, joint):
        """The q slice of the unit quaternion of ``joint``."""
        j = self.joint_index(joint)
        for k, sl in self._quaternion_blocks:
            if k == j:
                return sl
        raise ModelError(f"joint {self.joint_names[j]!r} has no quaternion")

    def subtree(self, body):
        """Indices of ``body`` and all its descendants."""
        i = self.body_index(body)
        inside = np.zeros(self.nbodies + 1, dtype=bool)
        inside[i] = True
        for k in range(i + 1, self.nbodies + 1):
            inside[k] = inside[self.body_parent[k]]
        return np.nonzero(inside)[0]

    def summary(self):
        """A readable account of the model: sizes, gravity, each body with its parent, joint and
        slices of q and v (mimic joints), couplers, armature, loops and ``notes``."""
        lines = [f"bodies {self.nbodies}, nq {self.nq}, nv {self.nv}, total mass {self.total_mass:.6g}",
                 f"gravity {self.gravity.tolist()}{', rheonomic' if self.rheonomic else ''}"]
        for i in range(1, self.nbodies + 1):
            lines.append(f"  {i:4d} {self.body_names[i]:<20s} <- {self.body_names[self.body_parent[i]]:<20s}"
                         f" joint {self.joint_names[i]} {self.joint_specs[i]!r}"
                         f" q[{self.jnt_qadr[i]}:{self.jnt_qadr[i] + self.jnt_nq[i]}]"
                         f" v[{self.jnt_dofadr[i]}:{self.jnt_dofadr[i] + self.jnt_nv[i]}]"
                         + (f" mimics {self.joint_names[self.joint_mimic[i]]!r}"
                            f" x {self.joint_mimic_multiplier[i]:.6g} + {self.joint_mimic_offset[i]:.6g}"
                            if self.joint_mimic[i] >= 0 else ""))
        for c in self.couplers:
            j, k = c.dependent
            if self.joint_mimic[j] >= 0:
                continue
            full = self.expanded()
            dn = full.coordinate_names[int(full.jnt_qadr[j] + k)]
            ind = [full.coordinate_names[int(full.jnt_qadr[a] + b)] for a, b in c.independent]
            lines.append(f"  coupler {dn} = {c.scale:.6g} x {c.function!r} of {ind}")
        if np.any(self.dof_armature != 0.0):
            lines.append(f"  armature on {int(np.count_nonzero(self.dof_armature))} of {self.nv} velocity variables")
        if self.coupled_armature:
            lines.append(f"  armature on {len(self.coupled_armature)} coupled coordinates, through their couplers")
        lines += summary_lines(self)
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)

    def __repr__(self):
        return f"<ej.Model: {self.nbodies} bodies, nq={self.nq}, nv={self.nv}>"


class UnknownNameError(KeyError):
    """A KeyError whose message is its text (a plain KeyError prints its argument's repr)."""

    def __str__(self):
        return str(self.args[0]) if self.args else ""


class JointMap(dict):
    """A dict by name whose missing keys raise a KeyError naming the keys it holds."""

    def __init__(self, what, items):
        super().__init__(items)
        self._what = what

    def __missing__(self, key):
        known = ", ".join(map(repr, self)) or "none"
        raise UnknownNameError(f"no {self._what} named {key!r}; the {self._what}s are {known}")


def _coupled_armature(given, couplers, joint_names):
    """``coupled_armature``: ((joint, k), armature) of couplers' dependent coordinates, as a
    tuple of such pairs; checked: each a dependent coordinate once, armature finite and >= 0."""
    out = {}
    deps = {c.dependent for c in couplers}
    for item in given or ():
        try:
            (j, k), a = item
            jk, a = (int(j), int(k)), float(a)
        except (TypeError, ValueError):
            raise ModelError(f"coupled_armature: expected ((joint, k), armature) pairs, got {item!r}") from None
        if jk not in deps:
            raise ModelError(f"coupled_armature: coordinate {jk[1]} of joint "
                             f"{joint_names[jk[0]] if 0 <= jk[0] < len(joint_names) else jk[0]!r} is no coupler's "
                             "dependent coordinate")
        if not np.isfinite(a) or a < 0.0 or jk in out:
            raise ModelError(f"coupled_armature: {item!r}: armature must be finite, >= 0 and given once")
        if a != 0.0:
            out[jk] = a
    return tuple(sorted(out.items()))


def _alias(name):
    return property(lambda self: getattr(self, name), doc=f"``{name}`` (a read-only alias of the same array)")


for _short, _name in ALIASES.items():
    setattr(Model, _short, _alias(_name))


def _remake(made_from):
    return Model(**made_from)
