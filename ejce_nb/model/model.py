"""The model: immutable structure-of-arrays tables, one row per body (row 0 is the world).

Shapes (N bodies, nq coordinates, nv velocities, P parameters, K elementary motions); the names
in brackets are the same tables under the names of API.md:
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
  notes             tuple of str   what a loader left out of the file it read (``summary()`` lists them)
  gravity           (3,)        world-frame gravitational acceleration
  joint_mimic       (N+1,)      -1, or the joint whose coordinate drives joint i (a mimic joint)
  joint_mimic_multiplier, joint_mimic_offset (N+1,)   its coupling: q_i = multiplier q_src + offset

Derived tables the kernels read, computed once here (``layout`` packs them for the kernels):
  jnt_path     (N+1,)    how joint i is evaluated (``ejce``: fixed, product of screws, quaternion, jets)
  jnt_quat     (N+1,)    offset of a unit quaternion within the joint's q, or -1
  jnt_madr, jnt_nmot (N+1,)  joint i's elementary motions (the screw path)
  jnt_fn       (N+1,)    1 where some motion's amount is a function, not scale * q[coord]
  mot_kind, mot_coord, mot_fadr (K,)  rotation/translation; amount scale * q[coord] or a function
  mot_axis (K, 3), mot_scale (K,)
  jnt_Xt (N+1, 3, 3), jnt_pt (N+1, 3)   placement of P_i in the parent's outboard frame C
                                        (Xt = E_c,p^T E_p, pt = E_c,p^T (c_p - c_c,p))
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
import json

import numpy as np

from . import layout
from ..errors import ModelError
from ..core.joints import codes as C

ARRAYS = ("parent", "jtype", "q_start", "nq_joint", "v_start", "nv_joint", "joint_param_adr",
          "joint_params", "joint_P_rot", "joint_P_pos", "joint_C_rot", "joint_C_pos", "body_mass",
          "body_com", "body_inertia", "body_spatial_inertia", "q_lower", "q_upper", "v_limit",
          "effort_limit", "gravity", "joint_mimic", "joint_mimic_multiplier", "joint_mimic_offset",
          "dof_damping", "dof_stiffness", "dof_springref", "dof_armature")


# entity-prefixed table -> the name API.md gives it
ALIASES = {"body_parent": "parent", "jnt_type": "jtype", "jnt_qadr": "q_start", "jnt_nq": "nq_joint",
           "jnt_dofadr": "v_start", "jnt_nv": "nv_joint", "jnt_padr": "joint_param_adr",
           "jnt_params": "joint_params"}


def skew(v):
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


def spatial_inertia(mass, com, inertia):
    """6x6 inertia about the body origin, [angular; linear]: [[Ic + m cx cx^T, m cx], [m cx^T, m]]."""
    cx = skew(com)
    M = np.zeros((6, 6))
    M[:3, :3] = inertia + mass * cx @ cx.T
    M[:3, 3:] = mass * cx
    M[3:, :3] = mass * cx.T
    M[3:, 3:] = mass * np.eye(3)
    return M


def _scalar(x):
    return not isinstance(x, (dict, list))


def _dumps(obj, indent, level=0):
    """json.dumps with objects and lists of objects indented, and every vector (list of numbers)
    or matrix (list of vectors) on a single line."""
    pad, inner = " " * (indent * level), " " * (indent * (level + 1))
    if isinstance(obj, dict) and obj:
        items = [f"{inner}{json.dumps(k)}: {_dumps(v, indent, level + 1)}" for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(obj, list) and not all(_scalar(x) or (isinstance(x, list) and all(map(_scalar, x))) for x in obj):
        return "[\n" + ",\n".join(inner + _dumps(v, indent, level + 1) for v in obj) + "\n" + pad + "]"
    return json.dumps(obj)


class Model:
    """Immutable multibody model; build it with ``ej.ModelBuilder`` or load it from a file."""

    def __init__(self, *, gravity, body_names, joint_names, joint_specs, parent, joint_P, joint_C,
                 body_mass, body_com, body_inertia, q_lower, q_upper, v_limit, effort_limit,
                 joint_mimic=None, dof_damping=None, dof_stiffness=None, dof_springref=None,
                 dof_armature=None, couplers=None, coordinate_names=None, q_default=None, notes=None):
        # what it was made from, to make it again in another process (pickle): its kernel tables
        # hold addresses that are only valid in this one
        self._made_from = dict(gravity=gravity, body_names=body_names, joint_names=joint_names,
                               joint_specs=joint_specs, parent=parent, joint_P=joint_P, joint_C=joint_C,
                               body_mass=body_mass, body_com=body_com, body_inertia=body_inertia, q_lower=q_lower,
                               q_upper=q_upper, v_limit=v_limit, effort_limit=effort_limit, joint_mimic=joint_mimic,
                               dof_damping=dof_damping, dof_stiffness=dof_stiffness, dof_springref=dof_springref,
                               dof_armature=dof_armature, couplers=couplers, coordinate_names=coordinate_names,
                               q_default=q_default, notes=notes)
        n1 = len(parent)
        self.nbodies = n1 - 1
        self.body_names = tuple(body_names)
        self.joint_names = tuple(joint_names)
        self.joint_specs = tuple(joint_specs)
        self.parent = np.asarray(parent, dtype=np.int64)
        self.jtype = np.array([s.code for s in joint_specs], dtype=np.int64)
        # joint_mimic: per row None or (source joint index, multiplier, offset); a mimic joint is the
        # linear case of a coupler (``couplers``), and every coupler is validated there
        from . import couplers as _cp
        from ..core.joints.fn import Linear
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
        self.nq_joint = np.array([s.nq for s in joint_specs], dtype=np.int64) - ndep
        self.nv_joint = np.array([s.nv for s in joint_specs], dtype=np.int64) - ndep
        self.q_start = np.concatenate([[0], np.cumsum(self.nq_joint)[:-1]]).astype(np.int64)
        self.v_start = np.concatenate([[0], np.cumsum(self.nv_joint)[:-1]]).astype(np.int64)
        self.nq = int(self.nq_joint.sum())
        self.nv = int(self.nv_joint.sum())
        blocks = [s.params() for s in joint_specs]
        self.joint_param_adr = np.concatenate([[0], np.cumsum([len(b) for b in blocks])[:-1]]).astype(np.int64)
        # three zeros of padding: kernels may read a joint's first three entries whatever its kind
        self.joint_params = np.array([v for b in blocks for v in b] + [0.0, 0.0, 0.0], dtype=np.float64)
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
            (j, slice(int(self.q_start[j] + self.nq_joint[j]) - 4, int(self.q_start[j] + self.nq_joint[j])))
            for j, spec in enumerate(self.joint_specs) if getattr(spec, "quaternion", False))
        self._full_names(coordinate_names, q_default)
        self.notes = tuple(notes or ())
        self._body_index = {n: i for i, n in enumerate(self.body_names)}
        self._joint_index = {n: i for i, n in enumerate(self.joint_names)}
        self._derive()
        for name in ARRAYS:
            getattr(self, name).flags.writeable = False
        self._frozen = True

    # ------------------------------------------------------------------ the kernels' tables
    def _derive(self):
        """The tables the kernels read, packed once (``layout``); the model's attributes of the
        same names are read-only views of the packed buffers.  A model with mimic joints runs as
        its expansion, whose tables it shares."""
        if self.has_mimic:
            full = self.expanded()
            for name, *_ in layout.INT_TABLES + layout.FLOAT_TABLES:
                own = ALIASES.get(name, name)
                object.__setattr__(self, name, getattr(self, own) if hasattr(self, own) else getattr(full, name))
            for name in ("_mb", "_mi", "_mf", "_pool", "_wpool"):
                object.__setattr__(self, name, None)
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
            l = self.parent[i]
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
        from ..core.ejce import PATH_FIXED, PATH_JETS, PATH_QUAT, PATH_SCREW, PATH_USER
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
                mots += [(k, ax, c, sc, -1 if fo < 0 else self.joint_param_adr[i] + fo)
                         for k, ax, c, sc, fo in motions]
            elif quat[i] >= 0:
                path[i] = PATH_QUAT
            else:
                path[i] = PATH_JETS
            if self.__dict__.get("_generic_joints") and path[i] in (PATH_SCREW, PATH_QUAT):
                path[i] = PATH_JETS
        K = len(mots)
        ints = dict(body_parent=self.parent, jnt_type=self.jtype, jnt_path=path, jnt_qadr=self.q_start,
                    jnt_nq=self.nq_joint, jnt_dofadr=self.v_start, jnt_nv=self.nv_joint,
                    jnt_padr=self.joint_param_adr, jnt_madr=madr, jnt_nmot=nmot, jnt_quat=quat,
                    jnt_fn=[int(any(x[2] < 0 for x in mots[madr[i]:madr[i] + nmot[i]])) for i in range(n1)],
                    jnt_fptr=fptr,
                    mot_kind=[x[0] for x in mots], mot_coord=[x[2] for x in mots],
                    mot_fadr=[x[4] for x in mots])
        floats = dict(jnt_params=self.joint_params, jnt_Xt=Xt, jnt_pt=pt, body_mass=self.body_mass,
                      body_hC=hC, body_IC=IC, body_cC=cC, body_bo=bo, body_Ec=Ec, body_iscale=iscale,
                      mot_axis=np.array([x[1] for x in mots]).reshape(K, 3),
                      mot_scale=[x[3] for x in mots], gravity=self.gravity, dof_armature=self.dof_armature)
        # a batch runs four states at a time when every joint is fixed, a product of screw motions
        # with constant scales or a quaternion joint (``lanes``); functions of the coordinates,
        # the jets path and user-defined joints evaluate one state
        lanes = all(p in (PATH_FIXED, PATH_SCREW, PATH_QUAT) for p in path) and not any(ints["jnt_fn"])
        mb, mf = layout.pack_model(n1, self.nq, self.nv, K, ints, floats, lanes)
        mb.flags.writeable = False
        mf.flags.writeable = False
        mi = mb
        object.__setattr__(self, "_mb", mb)
        object.__setattr__(self, "_mi", mi)
        object.__setattr__(self, "_mf", mf)
        object.__setattr__(self, "_pool", {})
        object.__setattr__(self, "_wpool", [])
        sizes = layout.sizes_of(n1, self.nq, self.nv, K, len(self.joint_params))
        for name, rows in layout.INT_TABLES:
            object.__setattr__(self, name, layout.table(mi, mi, name, (sizes[rows],)))
        for name, rows, cols in layout.FLOAT_TABLES:
            shape = (sizes[rows],) if cols == 0 else ((sizes[rows], 3, 3) if cols == 9 else (sizes[rows], cols))
            object.__setattr__(self, name, layout.table(mf, mi, name, shape).reshape(
                (3,) if name == "gravity" else shape))
        # the names API.md fixes are the same tables
        for name, alias in ALIASES.items():
            object.__setattr__(self, alias, getattr(self, name))

    @property
    def record_size(self):
        """Entries of one state's record in a workspace (``layout``)."""
        return int(self.kernel_model()._mb[layout.H_REC])

    @property
    def scratch_size(self):
        return int(self.kernel_model()._mb[layout.H_SCR])

    def with_generic_joints(self):
        """The same model with every joint but fixed and user-defined ones evaluated by the
        generic EJCE path (the pose on jets) instead of the product-of-screws or quaternion
        formulas: the reference the faster paths are tested against (results agree to rounding,
        at several times the cost).  Made once per model."""
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

    def kernel_model(self):
        """The model the kernels run on: this one, or for a model with mimic joints its expansion."""
        return self.expanded() if self.has_mimic else self

    def data(self, batch=None):
        """A preallocated workspace for this model (``ej.Data``)."""
        from .data import Data
        return Data(self, batch)

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

    def body_index(self, name):
        """Index of a body given its name (or index)."""
        if isinstance(name, (int, np.integer)) and not isinstance(name, bool):
            if 0 <= name <= self.nbodies:
                return int(name)
            raise ModelError(f"body index {name} out of range 0..{self.nbodies}")
        try:
            return self._body_index[name]
        except (KeyError, TypeError):
            raise ModelError(f"no body named {name!r}") from None

    def joint_index(self, name):
        """Index of a joint (= index of its body) given its name (or index)."""
        if isinstance(name, (int, np.integer)) and not isinstance(name, bool):
            if 0 <= name <= self.nbodies:
                return int(name)
            raise ModelError(f"joint index {name} out of range 0..{self.nbodies}")
        try:
            return self._joint_index[name]
        except (KeyError, TypeError):
            raise ModelError(f"no joint named {name!r}") from None

    def q_slice(self, joint):
        j = self.joint_index(joint)
        return slice(int(self.q_start[j]), int(self.q_start[j] + self.nq_joint[j]))

    def v_slice(self, joint):
        j = self.joint_index(joint)
        return slice(int(self.v_start[j]), int(self.v_start[j] + self.nv_joint[j]))

    def joint_q_slices(self):
        """{joint name: slice of q} for every joint but the world's (empty for Fixed and mimic joints)."""
        return {self.joint_names[j]: self.q_slice(j) for j in range(1, self.nbodies + 1)}

    def joint_v_slices(self):
        """{joint name: slice of v (qd, qdd, tau)} for every joint but the world's."""
        return {self.joint_names[j]: self.v_slice(j) for j in range(1, self.nbodies + 1)}

    def neutral(self):
        """A valid reference configuration within the coordinate limits: the model's default
        coordinates (``q_default``, e.g. an OpenSim file's default values) where it has them,
        else zero angles and unit quaternions, every coordinate moved to the point of
        [q_lower, q_upper] nearest to it (unit quaternions are not limited)."""
        q = self._q_default_full[self._own()[0]].copy()
        free = np.ones(self.nq, dtype=bool)
        for _, sl in self._quaternion_blocks:
            free[sl] = False
        q[free] = np.clip(q[free], self.q_lower[free], self.q_upper[free])
        return q

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
            inside[k] = inside[self.parent[k]]
        return np.nonzero(inside)[0]

    # ------------------------------------------------------------------ mimic joints
    def expanded(self):
        """The same mechanism with every mimic joint given its own coordinate (no limits on it).

        A model without mimic joints is its own expansion."""
        if not self.has_mimic:
            return self
        cached = self.__dict__.get("_expanded")
        if cached is not None:
            return cached
        from ..core.transform import Transform
        own_q, own_v = self._own()
        nqf, nvf = len(self._qnames_full), len(self._vnames_full)

        def fill(x, n, own, default):
            out = np.full(n, default)
            out[own] = x
            return out
        lims = [[fill(self.q_lower, nqf, own_q, -np.inf)], [fill(self.q_upper, nqf, own_q, np.inf)],
                [fill(self.v_limit, nvf, own_v, np.inf)], [fill(self.effort_limit, nvf, own_v, np.inf)],
                [fill(self.dof_damping, nvf, own_v, 0.0)], [fill(self.dof_stiffness, nvf, own_v, 0.0)],
                [fill(self.dof_springref, nvf, own_v, 0.0)], [fill(self.dof_armature, nvf, own_v, 0.0)]]
        m = Model(gravity=self.gravity, body_names=self.body_names, joint_names=self.joint_names,
                  joint_specs=self.joint_specs, parent=self.parent,
                  joint_P=[Transform(R, p) for R, p in zip(self.joint_P_rot, self.joint_P_pos)],
                  joint_C=[Transform(R, p) for R, p in zip(self.joint_C_rot, self.joint_C_pos)],
                  body_mass=self.body_mass, body_com=self.body_com, body_inertia=self.body_inertia,
                  q_lower=np.concatenate(lims[0]), q_upper=np.concatenate(lims[1]),
                  v_limit=np.concatenate(lims[2]), effort_limit=np.concatenate(lims[3]),
                  dof_damping=np.concatenate(lims[4]), dof_stiffness=np.concatenate(lims[5]),
                  dof_springref=np.concatenate(lims[6]), dof_armature=np.concatenate(lims[7]),
                  coordinate_names=self._qnames_full,
                  q_default=self._q_default_full)
        object.__setattr__(self, "_expanded", m)
        return m

    def mimic_map(self):
        """Linear maps from this model's coordinates to those of ``expanded()`` when every
        coupler is linear (mimic joints): ``q_full = Gq @ q + gq`` and ``v_full = Gv @ v`` (the
        same for qd, qdd); ``tau = Gv.T @ tau_full``, ``M = Gv.T @ M_full @ Gv``.  Returns
        (Gq, gq, Gv).  A nonlinear coupler has no constant map: see ``coupler_jacobian``."""
        if not self.couplers_linear:
            raise ModelError("mimic_map: the model has nonlinear couplers, whose map depends on q; use "
                             "expand(q) and coupler_jacobian(q)")
        cached = self.__dict__.get("_mimic_map")
        if cached is not None:
            return cached
        full = self.expanded()
        own_q, own_v = self._own()
        red_q = {int(f): r for r, f in enumerate(own_q)}
        red_v = {int(f): r for r, f in enumerate(own_v)}
        Gq = np.zeros((full.nq, self.nq))
        Gq[own_q, np.arange(self.nq)] = 1.0
        gq = np.zeros(full.nq)
        Gv = np.zeros((full.nv, self.nv))
        Gv[own_v, np.arange(self.nv)] = 1.0
        for c in self.couplers:
            j, k = c.dependent
            n = len(c.independent)
            f0 = c.function.value(np.zeros(n))
            gq[full.q_start[j] + k] = c.scale * f0
            for a, (ji, ki) in enumerate(c.independent):
                g = c.scale * (c.function.value(np.eye(n)[a]) - f0)
                Gq[full.q_start[j] + k, red_q[int(full.q_start[ji] + ki)]] = g
                Gv[full.v_start[j] + k, red_v[int(full.v_start[ji] + ki)]] = g
        out = (Gq, gq, Gv)
        for x in out:
            x.flags.writeable = False
        object.__setattr__(self, "_mimic_map", out)
        return out

    def _coupler_tables(self):
        cached = self.__dict__.get("_ctabs")
        if cached is None:
            from .couplers import tables
            cached = tables(self, self.expanded())
            object.__setattr__(self, "_ctabs", cached)
        return cached

    def _coupling(self, q, v=None, a=None):
        from .couplers import Coupling
        q2 = np.asarray(q, dtype=float)
        one = q2.ndim == 1
        c = Coupling(self)
        r = c.expand(np.atleast_2d(q2), None if v is None else np.atleast_2d(np.asarray(v, dtype=float)),
                     None if a is None else np.atleast_2d(np.asarray(a, dtype=float)))
        return c, r, one

    @property
    def dependent_coords(self):
        """Indices into the coordinates of ``expanded()`` of the couplers' dependent coordinates,
        in the couplers' order."""
        full = self.expanded()
        return np.array([int(full.q_start[c.dependent[0]] + c.dependent[1]) for c in self.couplers], dtype=np.int64)

    def expand(self, q):
        """q_full = phi(q): the coordinates of ``expanded()`` from this model's q, (nq,) or (B, nq)."""
        if not self.couplers:
            return np.array(q, dtype=float)
        _, (qf, _, _), one = self._coupling(q)
        return qf[0] if one else qf

    expand_q = expand

    def expand_v(self, v, q=None):
        """v_full = G(q) v, (nv,) or (B, nv); ``q`` may be left out when every coupler is linear."""
        if not self.couplers:
            return np.array(v, dtype=float)
        if q is None:
            if not self.couplers_linear:
                raise ModelError("expand_v: the model has nonlinear couplers; give q (expand_v(v, q))")
            v2 = np.asarray(v, dtype=float)
            return v2 @ self.coupler_jacobian(np.zeros(self.nq)).T
        _, (_, vf, _), one = self._coupling(q, v)
        return vf[0] if one else vf

    def expand_a(self, a, q, v):
        """a_full = G(q) a + Gdot(q, v) v, (nv,) or (B, nv)."""
        if not self.couplers:
            return np.array(a, dtype=float)
        _, (_, _, af), one = self._coupling(q, v, a)
        return af[0] if one else af

    def coupler_jacobian(self, q):
        """G(q) = d q_full / d q restricted to velocities: (nv_full, nv) or (B, nv_full, nv), so
        that v_full = G v, tau = G^T tau_full, M = G^T M_full G."""
        if not self.couplers:
            q2 = np.asarray(q, dtype=float)
            eye = np.eye(self.nv)
            return eye if q2.ndim == 1 else np.broadcast_to(eye, (q2.shape[0], self.nv, self.nv)).copy()
        c, _, one = self._coupling(q)
        return c.G[0] if one else c.G

    def summary(self):
        lines = [f"bodies {self.nbodies}, nq {self.nq}, nv {self.nv}, total mass {self.total_mass:.6g}",
                 f"gravity {self.gravity.tolist()}{', rheonomic' if self.rheonomic else ''}"]
        for i in range(1, self.nbodies + 1):
            lines.append(f"  {i:4d} {self.body_names[i]:<20s} <- {self.body_names[self.parent[i]]:<20s}"
                         f" joint {self.joint_names[i]} {self.joint_specs[i]!r}"
                         f" q[{self.q_start[i]}:{self.q_start[i] + self.nq_joint[i]}]"
                         f" v[{self.v_start[i]}:{self.v_start[i] + self.nv_joint[i]}]"
                         + (f" mimics {self.joint_names[self.joint_mimic[i]]!r}"
                            f" x {self.joint_mimic_multiplier[i]:.6g} + {self.joint_mimic_offset[i]:.6g}"
                            if self.joint_mimic[i] >= 0 else ""))
        for c in self.couplers:
            j, k = c.dependent
            if self.joint_mimic[j] >= 0:
                continue
            full = self.expanded()
            dn = full.coordinate_names[int(full.q_start[j] + k)]
            ind = [full.coordinate_names[int(full.q_start[a] + b)] for a, b in c.independent]
            lines.append(f"  coupler {dn} = {c.scale:.6g} x {c.function!r} of {ind}")
        if np.any(self.dof_armature != 0.0):
            lines.append(f"  armature on {int(np.count_nonzero(self.dof_armature))} of {self.nv} velocity variables")
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)

    def __repr__(self):
        return f"<ej.Model: {self.nbodies} bodies, nq={self.nq}, nv={self.nv}>"

    # ------------------------------------------------------------------ JSON
    def to_dict(self):
        from .builder import inertia_defect
        bodies = []
        for i in range(1, self.nbodies + 1):
            # limits and passive forces per coordinate of the whole joint (a coupler's dependent
            # coordinate has none: its entries are unbounded, zero)
            lm = self.expanded()
            qs, vs = lm.q_slice(i), lm.v_slice(i)
            b = {
                "name": self.body_names[i],
                "parent": self.body_names[self.parent[i]],
                "joint_name": self.joint_names[i],
                "joint": self.joint_specs[i].to_dict(),
                "placement": {"rotation": self.joint_P_rot[i].tolist(), "translation": self.joint_P_pos[i].tolist()},
                "child_placement": {"rotation": self.joint_C_rot[i].tolist(), "translation": self.joint_C_pos[i].tolist()},
                "mass": float(self.body_mass[i]),
                "com": self.body_com[i].tolist(),
                "inertia": self.body_inertia[i].tolist(),
            }
            if inertia_defect(self.body_inertia[i]) is not None:    # a URDF's, kept as written
                b["inertia_as_written"] = True
            lim = {}
            for key, arr, s in (("q_lower", lm.q_lower, qs), ("q_upper", lm.q_upper, qs),
                                ("v_limit", lm.v_limit, vs), ("effort_limit", lm.effort_limit, vs)):
                if np.any(np.isfinite(arr[s])):
                    lim[key] = [float(x) if np.isfinite(x) else None for x in arr[s]]
            if lim:
                b["limits"] = lim
            dyn = {key: [float(x) for x in arr[vs]]
                   for key, arr in (("damping", lm.dof_damping), ("stiffness", lm.dof_stiffness),
                                    ("spring_ref", lm.dof_springref), ("armature", lm.dof_armature))
                   if np.any(arr[vs] != 0.0)}
            if dyn:
                b["dynamics"] = dyn
            full = self.expanded()
            fq = slice(int(full.q_start[i]), int(full.q_start[i] + full.nq_joint[i]))
            auto = [self.joint_names[i]] if fq.stop - fq.start == 1 else [
                f"{self.joint_names[i]}[{k}]" for k in range(fq.stop - fq.start)]
            if list(self._qnames_full[fq]) != auto:
                b["coordinate_names"] = list(self._qnames_full[fq])
            if np.any(self._q_default_full[fq] != self.joint_specs[i].neutral()):
                b["q_default"] = self._q_default_full[fq].tolist()
            if self.joint_mimic[i] >= 0:
                b["mimic"] = {"joint": self.joint_names[self.joint_mimic[i]],
                              "multiplier": float(self.joint_mimic_multiplier[i]),
                              "offset": float(self.joint_mimic_offset[i])}
            bodies.append(b)
        d = {"format": "ejce_nb.model", "version": 1, "gravity": self.gravity.tolist(), "bodies": bodies}
        general = [c for c in self.couplers if self.joint_mimic[c.dependent[0]] < 0]
        if general:
            d["couplers"] = [{"dependent": [self.joint_names[c.dependent[0]], c.dependent[1]],
                              "independent": [[self.joint_names[j], k] for j, k in c.independent],
                              "function": c.function.to_dict(), "scale": c.scale} for c in general]
        return d

    def to_json(self, path=None, indent=1):
        """Write the model as JSON to ``path`` (or return the text when ``path`` is None).

        Numbers are written with Python's shortest round-trip repr, so ``from_json`` gives back
        bit-identical tables; vectors and matrices are kept on one line each to stay readable."""
        text = _dumps(self.to_dict(), indent)
        if path is None:
            return text
        with open(path, "w") as f:
            f.write(text + "\n")
        return None

    @classmethod
    def from_dict(cls, d, source="model"):
        from .builder import builder_from_dict
        return builder_from_dict(d, source).build()

    @classmethod
    def from_json(cls, path_or_text):
        """Load a model from a JSON file (or JSON text)."""
        if isinstance(path_or_text, str) and path_or_text.lstrip().startswith("{"):
            text, source = path_or_text, "model"
        else:
            source = str(path_or_text)
            try:
                with open(path_or_text) as f:
                    text = f.read()
            except OSError as e:
                raise ModelError(f"{source}: cannot read model file: {e}") from None
        try:
            d = json.loads(text)
        except (ValueError, RecursionError) as e:     # JSONDecodeError, too many digits, too deep
            raise ModelError(f"{source}: not valid JSON: {e}") from None
        return cls.from_dict(d, source)


def _remake(made_from):
    return Model(**made_from)
