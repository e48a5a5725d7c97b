"""ModelBuilder: validated construction of a Model, one body (with its joint) at a time.

Bodies are numbered in the order they are added; a parent must already exist, so every model is
parents-before-children by construction, in any such order (not only depth-first).
"""
import numpy as np

from ..errors import ModelError
from ..core.joints import fn as _fn
from ..core.joints import specs as _specs
from ..core.transform import Transform, check_rotation, check_vector
from .couplers import Coupler
# the inertia checks, where the loaders have always found them
from .inertia import INERTIA_RTOL, balance_inertia, check_inertia, inertia_defect, spatial_inertia  # noqa: F401
from .model import Model
from .loops import Loop, check_loop_joint


def _limits(values, n, default, what):
    if values is None:
        return np.full(n, default)
    try:
        arr = np.array([default if v is None else v for v in np.atleast_1d(values).tolist()], dtype=float)
    except (TypeError, ValueError):
        arr = None
    if arr is None or arr.shape != (n,) or np.any(np.isnan(arr)):
        raise ModelError(f"{what} must be {n} numbers (None for no limit), got {values!r}")
    return arr


def _passive(values, joint, what, who, nonnegative):
    """A joint's per-velocity-variable damping, stiffness or spring reference: None (zeros), one
    number for every variable, or one per variable; finite (and >= 0 for damping and stiffness)."""
    nv = joint.nv
    if values is None:
        return np.zeros(nv)
    try:
        arr = np.array(values, dtype=float)
    except (TypeError, ValueError):
        arr = None
    if arr is not None and arr.ndim == 0:
        arr = np.full(nv, float(arr))
    if arr is None or arr.shape != (nv,) or not np.all(np.isfinite(arr)):
        raise ModelError(f"{who}: {what} must be a finite number or {nv} finite numbers (one per velocity "
                         f"variable of {joint!r}), got {values!r}")
    if nonnegative and np.any(arr < 0):
        raise ModelError(f"{who}: {what} must not be negative, got {arr.tolist()}")
    if nv == 0 and values is not None and np.ndim(values) == 0 and float(values) != 0.0:
        raise ModelError(f"{who}: {what} given for {joint!r}, which has no velocity variable")
    return arr


def _mimic_spec(mimic, joint, who):
    """Normalise a mimic description to (source joint name or index, multiplier, offset)."""
    if isinstance(mimic, (str, int, np.integer)) and not isinstance(mimic, bool):
        src, k, off = mimic, 1.0, 0.0
    elif isinstance(mimic, dict):
        unknown = set(mimic) - {"joint", "multiplier", "offset"}
        if unknown or "joint" not in mimic:
            raise ModelError(f"{who}: mimic must have 'joint' (and optional 'multiplier', 'offset'), "
                             f"got {mimic!r}")
        src, k, off = mimic["joint"], mimic.get("multiplier", 1.0), mimic.get("offset", 0.0)
    elif isinstance(mimic, (tuple, list)) and 1 <= len(mimic) <= 3:
        src, k, off = (list(mimic) + [1.0, 0.0][len(mimic) - 1:])[:3]
    else:
        raise ModelError(f"{who}: mimic must be a joint name, (joint, multiplier, offset) or a dict, got {mimic!r}")
    if not (isinstance(src, str) or (isinstance(src, (int, np.integer)) and not isinstance(src, bool))):
        raise ModelError(f"{who}: mimic joint must be a joint name or index, got {src!r}")
    vals = []
    for what, x in (("multiplier", k), ("offset", off)):
        try:
            x = float(x)
        except (TypeError, ValueError):
            raise ModelError(f"{who}: mimic {what} must be a number, got {x!r}") from None
        if not np.isfinite(x):
            raise ModelError(f"{who}: mimic {what} must be finite, got {x!r}")
        vals.append(x)
    if joint.nq != 1 or joint.nv != 1:
        raise ModelError(f"{who}: only a one-coordinate joint can mimic another, not {joint!r}")
    return (src, vals[0], vals[1])


class ModelBuilder:
    """Collects bodies, joints, couplers, named frames and loop closures; ``build()`` validates
    them and returns the immutable ``ej.Model`` (flat structure-of-arrays tables).

    ``gravity``: the world-frame gravitational acceleration.  Bodies may be added in any order
    that has each parent before its child (not only depth-first); body ``i`` (1, 2, ... in the
    order added) hangs from its parent by joint ``i``.  An empty builder
    (``ModelBuilder().build()``) gives the world alone (nq = nv = 0).

    ```python
    import numpy as np
    import ejce_nb as ej
    b = ej.ModelBuilder(gravity=(0.0, 0.0, -9.81))
    i = b.add_body(
        "upper_arm",                       # unique name
        parent="world",                    # name or index of an existing body; "world" / 0 is the base
        joint=ej.joints.Spherical("ZXZ"),  # any joint spec
        placement=ej.Transform(rotation=np.eye(3), translation=(0.0, 0.0, 1.0)),  # P in the parent frame
        child_placement=ej.Transform(),    # C in the child frame (default identity)
        mass=1.2, com=(0.0, 0.0, -0.3), inertia=np.diag([0.04, 0.04, 0.01]),  # about the COM, body axes
    )                                      # the new body's index (1, 2, ...)
    model = b.build()
    ```
    """

    def __init__(self, gravity=(0.0, 0.0, -9.81)):
        self.gravity = check_vector(gravity, "gravity")
        self._bodies = []
        self._names = {"world": 0}
        self._joint_names = {}
        # what a loader left out of the file it read (``Model.notes``)
        self.notes = []
        # the forces that drive the model (``Model.actuation``: an ``ejce_nb.actuation.tables.Actuation``)
        self.actuation = None

    def _resolve_parent(self, parent, who):
        if isinstance(parent, (int, np.integer)) and not isinstance(parent, bool):
            if 0 <= parent <= len(self._bodies):
                return int(parent)
            raise ModelError(f"{who}: parent index {parent} does not exist (bodies 0..{len(self._bodies)}; "
                             "a parent must be added before its children)")
        if isinstance(parent, str):
            if parent in self._names:
                return self._names[parent]
            raise ModelError(f"{who}: unknown parent {parent!r} (a parent must be added before its children)")
        raise ModelError(f"{who}: parent must be a body name or index, got {parent!r}")

    def add_body(self, name, parent="world", joint=None, placement=None, child_placement=None,
                 mass=0.0, com=(0.0, 0.0, 0.0), inertia=None, joint_name=None,
                 q_lower=None, q_upper=None, v_limit=None, effort_limit=None, mimic=None,
                 inertia_as_written=False, damping=None, stiffness=None, spring_ref=None, armature=None,
                 coordinate_names=None, q_default=None):
        """Add a body attached to ``parent`` by ``joint``; returns the new body's index (1, 2, ...).

        ``name``: unique.  ``parent``: the name or index of a body added before (``"world"`` / 0
        is the base).  ``joint``: any joint spec (``ej.joints``).  ``placement``: an
        ``ej.Transform``, the inboard frame P in the parent's body frame; ``child_placement``: the
        outboard frame C in this body's frame (default identity).  ``mass`` (>= 0; massless
        bodies are allowed), ``com`` (body axes) and ``inertia`` (3 x 3, about the COM, body
        axes).  ``joint_name``: unique, default ``"<name>_joint"``.  ``q_lower``, ``q_upper``
        (one number or one per coordinate of the joint), ``v_limit``, ``effort_limit`` (one number
        or one per velocity variable): limits (none by default).  Errors (a duplicate name, an
        unknown or later parent, a negative mass, an invalid inertia, ...) are ``ej.ModelError``
        naming the body.

        ``inertia`` must be physically consistent (symmetric, positive semi-definite, triangle
        inequality; see ``inertia_defect``).  ``inertia_as_written=True`` accepts one that is not,
        as given: the URDF loader keeps a file's inconsistent inertias so (with an
        ``InertiaWarning``), and the JSON form marks such a body ``"inertia_as_written": true``.
        Its dynamics are then those of the tensor as written (a negative moment may make the
        mass matrix indefinite).  Non-finite, misshapen or asymmetric inertias are refused
        regardless.

        ``mimic``: make the (one-coordinate) joint follow another joint's coordinate,
        ``q = multiplier * q_source + offset``, with no coordinate of its own: a joint name or
        index, ``(joint, multiplier, offset)`` or ``{"joint": ..., "multiplier": ..., "offset": ...}``.
        The source may be added later; it must be a one-coordinate joint that mimics nothing.

        ``damping``, ``stiffness``, ``spring_ref``: passive joint forces for ``ej.simulate``,
        tau = -damping qd - stiffness (q - spring_ref), one number for all of the joint's velocity
        variables or one per variable (damping and stiffness >= 0).  A spring acts on a coordinate
        whose rate is its velocity variable, so a unit quaternion's rotation takes damping but
        no stiffness.  The dynamics functions (rnea, aba, ...) leave them out.

        ``armature``: rotor inertia of each of the joint's velocity variables (one number for all
        or one per variable, >= 0; ``Model.dof_armature``): MuJoCo's joint ``armature``, Drake's
        ``drake:rotor_inertia`` times ``drake:gear_ratio`` squared, a motor's reflected inertia.
        The joint-space inertia of every algorithm is ``M(q) + diag(armature)``: ``rnea`` adds
        ``armature qdd``, ``mass_matrix`` its diagonal, the ABA's ``D_i = S_i^T I^A_i S_i +
        diag(armature_i)``, ``kinetic_energy`` ``1/2 sum_k armature_k qd_k^2``; ``simulate``,
        batches and sweeps follow.  In JSON: the body's ``"dynamics": {"armature": [...]}``.  Limits, damping and stiffness of a coupler's dependent coordinate are dropped
        (it has no velocity variable of its own); its armature acts through the coupler: the
        reduced mass matrix holds ``G^T diag(armature) G`` and the bias ``G^T diag(armature) Gdot v``
        (``Model.coupled_armature``).

        ``coordinate_names``: one name per coordinate of the joint (default: the joint's name,
        with ``[k]`` when it has several); ``q_default``: the joint's default coordinates
        (``model.neutral()``; default the joint's neutral ones).  Both count every coordinate of
        the joint, a coupler's dependent ones included."""
        if not isinstance(name, str) or not name:
            raise ModelError(f"body name must be a non-empty string, got {name!r}")
        who = f"body {name!r}"
        if name in self._names:
            raise ModelError(f"{who}: duplicate body name")
        p = self._resolve_parent(parent, who)
        if joint is None:
            joint = _specs.Fixed()
        if not isinstance(joint, _specs.JointSpec):
            raise ModelError(f"{who}: joint must be an ej.joints spec, got {joint!r}")
        jname = f"{name}_joint" if joint_name is None else joint_name
        if not isinstance(jname, str) or not jname:
            raise ModelError(f"{who}: joint name must be a non-empty string, got {jname!r}")
        if jname in self._joint_names or jname == "world":
            raise ModelError(f"{who}: duplicate joint name {jname!r}")
        P = self._placement(placement, f"{who}: placement")
        Cp = self._placement(child_placement, f"{who}: child_placement")
        m, I = check_inertia(mass, np.zeros((3, 3)) if inertia is None else inertia, who,
                             as_written=bool(inertia_as_written))
        try:
            c = check_vector(com, "com")
        except ModelError as e:
            raise ModelError(f"{who}: {e}") from None
        with np.errstate(all="ignore"):
            finite = np.all(np.isfinite(spatial_inertia(m, c, I)))
        if not finite:
            raise ModelError(f"{who}: mass {m:g} and com {c.tolist()} overflow the spatial inertia")
        mim = None if mimic is None else _mimic_spec(mimic, joint, who)
        if mim is not None and any(x is not None for x in (q_lower, q_upper, v_limit, effort_limit)):
            raise ModelError(f"{who}: a mimic joint has no coordinate of its own, so no limits")
        if mim is not None and any(x is not None for x in (damping, stiffness, spring_ref, armature)):
            raise ModelError(f"{who}: damping, stiffness, spring_ref and armature need a velocity variable of the "
                             "joint's "
                             "own; a mimic joint has none (give them to the joint it follows)")
        passive = (_passive(damping, joint, "damping", who, True), _passive(stiffness, joint, "stiffness", who, True),
                   _passive(spring_ref, joint, "spring_ref", who, False),
                   _passive(armature, joint, "armature", who, True))
        if getattr(joint, "quaternion", False):
            rot = slice(joint.nv - 3, joint.nv)
            for what, arr in (("stiffness", passive[1]), ("spring_ref", passive[2])):
                if np.any(arr[rot] != 0.0):
                    raise ModelError(f"{who}: {what} {arr.tolist()}: the rotation of {joint!r} is a unit "
                                     f"quaternion, whose angular velocity (variables {rot.start}..{rot.stop - 1}) "
                                     "is not the rate of a coordinate, so a spring cannot act on it "
                                     "(use a control law; damping is allowed)")
        nq, nv = (0, 0) if mim is not None else (joint.nq, joint.nv)
        if mim is not None:
            passive = (np.zeros(0),) * 4
        lims = (_limits(q_lower, nq, -np.inf, f"{who}: q_lower"),
                _limits(q_upper, nq, np.inf, f"{who}: q_upper"),
                _limits(v_limit, nv, np.inf, f"{who}: v_limit"),
                _limits(effort_limit, nv, np.inf, f"{who}: effort_limit"))
        if np.any(lims[0] > lims[1]):
            raise ModelError(f"{who}: q_lower {lims[0].tolist()} exceeds q_upper {lims[1].tolist()}")
        cn = None
        if coordinate_names is not None:
            cn = [coordinate_names] if isinstance(coordinate_names, str) else list(coordinate_names)
            if len(cn) != joint.nq or not all(isinstance(x, str) and x for x in cn):
                raise ModelError(f"{who}: coordinate_names must be {joint.nq} non-empty strings, got {coordinate_names!r}")
        qdef = None
        if q_default is not None:
            try:
                qdef = np.array(q_default, dtype=float).reshape(-1)
            except (TypeError, ValueError):
                qdef = None
            if qdef is None or qdef.shape != (joint.nq,) or not np.all(np.isfinite(qdef)):
                raise ModelError(f"{who}: q_default must be {joint.nq} finite numbers, got {q_default!r}")
        self._bodies.append(dict(name=name, parent=p, joint=joint, jname=jname, P=P, C=Cp, mass=m,
                                 com=c, inertia=I, lims=lims, mimic=mim, passive=passive, cnames=cn, qdef=qdef))
        idx = len(self._bodies)
        self._names[name] = idx
        self._joint_names[jname] = idx
        return idx

    def add_coupler(self, dependent, independent, function, scale=1.0):
        """Make a coordinate a function of others: ``q_dependent = scale * function(q_i0, q_i1, ...)``
        (``function`` an ``ej.fn`` function whose coordinate k is ``independent[k]``).

        A coordinate is named by its joint (name or index; a one-coordinate joint), ``(joint,
        k)`` (coordinate k of the joint) or a name of ``coordinate_names``; ``independent`` is one
        coordinate or a list of 1 to 6.  Joints may be added after the coupler; ``build()``
        checks it.  Rules (``ej.ModelError`` otherwise, naming the joints): the dependent and
        independent coordinates are coordinates whose rate is their velocity variable (no unit
        quaternion; joints with nq = nv); a dependent coordinate is no coupler's independent
        coordinate and is coupled once (no chains, no cycles); the function does not depend on
        time.  A mimic joint (``mimic=`` of ``add_body``, URDF ``<mimic>``) is the linear case,
        ``f = multiplier * q_source + offset``.

        The dependent coordinate leaves q and v; ``model.expanded()`` is the same mechanism with
        every coordinate (the full one), and ``q_full = phi(q)``, ``v_full = G(q) v``, ``a_full =
        G(q) a + Gdot(q, v) v`` (``Model.expand``, ``expand_v``, ``expand_a``,
        ``coupler_jacobian``).  Every algorithm (kinematics, Jacobians, joint terms, rnea, mass
        matrix, nonlinear effects, aba, energies, simulate, batches, sweeps) gives the exact
        reduced quantities: ``tau = G^T tau_full(q_full, v_full, a_full)``, ``M = G^T M_full G``,
        ``h = G^T tau_full(q_full, v_full, Gdot v)``, body Jacobians ``J_full G``; phi, G and
        ``Gdot v`` are the function's value and derivatives on jets (not finite differences), in
        one compiled pass over a batch.

        A dependent coordinate keeps its rotor inertia (``armature`` of its ``add_body``, MuJoCo's
        joint armature): ``Model.coupled_armature`` is put on the full model's ``dof_armature``,
        so that the reduced mass matrix holds ``G^T diag(armature) G`` and the bias term the
        matching ``G^T diag(armature) Gdot v``, as MuJoCo's do.  A model with couplers solves
        forward dynamics through the mass matrix (``aba`` as ``forward_dynamics_crba``);
        ``ej.simulate`` integrates the model's own coordinates in the same compiled loop as any
        model, each stage solving ``G^T M_full G qdd = tau - G^T rnea_full(q_full, v_full, Gdot
        v)`` on ``model.expanded()`` by Cholesky (a singular M stops the run with
        ``SimulationStatus.SINGULAR_MASS_MATRIX``).  In JSON: the top-level ``"couplers"``
        (``Model``)."""
        if not isinstance(independent, list):
            independent = list(independent) if (isinstance(independent, tuple) and independent
                                                 and isinstance(independent[0], (tuple, list))) else [independent]
        if not isinstance(function, _fn.Function):
            raise ModelError(f"coupler of {dependent!r}: function must be an ej.fn function, got {function!r}")
        try:
            scale = float(scale)
        except (TypeError, ValueError):
            raise ModelError(f"coupler of {dependent!r}: scale must be a number, got {scale!r}") from None
        self._couplers = getattr(self, "_couplers", [])
        self._couplers.append((dependent, independent, function, scale))

    def add_loop(self, name, body_a, body_b, joint=None, placement_a=None, placement_b=None):
        """Close a kinematic loop: frame A (``placement_a`` in ``body_a``) and frame B
        (``placement_b`` in ``body_b``) are held so that the pose of B in A is a pose of ``joint``
        (any joint spec with nv < 6; default ``Fixed``).  A revolute closure removes five
        relative freedoms, a spherical one three, ``Fixed`` six, a ``Custom`` joint 6 - nv.
        Bodies are names or indices (``"world"`` / 0 allowed); the loop is named ``name``;
        placements are ``ej.Transform`` in the body frames (default identity).  Returns the
        loop's index in ``Model.loops``.

        The closure joint's EJCE terms give the constraint exactly, as for a tree joint: the
        relative twist of B w.r.t. A (A axes, about B's origin), ``t_rel = G(q) v + s``, must lie
        in the closure joint's motion ``J_c(q_c) v_c + sigma_c``, where the closure coordinates
        ``q_c`` place B in A (found from the pose by Gauss-Newton on the closure joint alone).
        With ``N_c`` an orthonormal basis of the complement of range(``J_c``): the velocity
        constraint is ``Jc v = N_c^T (G v + s - sigma_c) = 0``, the acceleration constraint
        ``Jc qdd + bc = 0`` with ``bc = N_c^T (gamma - b_c)``, gamma the tree's velocity-product
        relative acceleration and ``b_c`` the closure joint's EJCE bias at ``(q_c, v_c)``
        (``ej.loop_terms``).  ``Model.summary()`` and ``ejce-nb info`` list the loops; in JSON,
        the top-level ``"loops"`` (``Model``).  Loaders: MJCF ``connect`` / ``weld`` equalities
        (exact here, soft in MuJoCo), OpenSim ``PointConstraint`` / ``WeldConstraint``."""
        if not isinstance(name, str) or not name:
            raise ModelError(f"loop name must be a non-empty string, got {name!r}")
        self._loops = getattr(self, "_loops", [])
        who = f"loop {name!r}"
        if any(L[0] == name for L in self._loops):
            raise ModelError(f"{who}: duplicate loop name")
        a = self._resolve_parent(body_a, f"{who}: body_a")
        b = self._resolve_parent(body_b, f"{who}: body_b")
        if a == b:
            raise ModelError(f"{who}: body_a and body_b are the same body {self._bodies[a - 1]['name'] if a else 'world'!r}")
        joint = check_loop_joint(joint, who)
        self._loops.append((name, a, b, joint, self._placement(placement_a, f"{who}: placement_a"),
                            self._placement(placement_b, f"{who}: placement_b")))
        return len(self._loops) - 1

    def add_frame(self, name, body, placement=None):
        """Name a frame fixed on ``body`` (a name or index; ``"world"`` / 0 allowed) at
        ``placement`` (an ej.Transform in the body frame; default the body frame itself).  Frame
        names share the body names' name space (a frame named like a body, or twice, is an
        ``ej.ModelError``): ``ej.frame_pose``, ``ej.frame_jacobian`` and
        ``ej.frame_jacobian_dot_v`` take either.  Returns the frame's index in
        ``Model.frame_names``.  No kernel reads named frames: they cost nothing in the dynamics.
        In JSON: the top-level ``"frames"`` (``Model``).  Loaders make them of URDF links merged
        into their parent by fixed joints (``load_urdf(..., merge_fixed=True)``), MJCF sites,
        OpenSim joint offset frames and markers."""
        if not isinstance(name, str) or not name:
            raise ModelError(f"frame name must be a non-empty string, got {name!r}")
        self._frames = getattr(self, "_frames", [])
        who = f"frame {name!r}"
        if name in self._names:
            raise ModelError(f"{who}: a body has that name (frames and bodies share one name space)")
        if any(f[0] == name for f in self._frames):
            raise ModelError(f"{who}: duplicate frame name")
        b = self._resolve_parent(body, f"{who}: body")
        self._frames.append((name, b, self._placement(placement, f"{who}: placement")))
        return len(self._frames) - 1

    def _coordinate(self, ref, who):
        """(joint index, coordinate in the joint) of a coordinate reference (see add_coupler)."""
        if isinstance(ref, (tuple, list)) and len(ref) == 2 and not isinstance(ref[1], bool) \
                and isinstance(ref[1], (int, np.integer)):
            j = self._joint_ref(ref[0], who)
            k = int(ref[1])
            nq = self._bodies[j - 1]["joint"].nq
            if not 0 <= k < nq:
                raise ModelError(f"{who}: joint {self._bodies[j - 1]['jname']!r} has no coordinate {k} (nq = {nq})")
            return j, k
        if isinstance(ref, str) and ref not in self._joint_names:
            for j, b in enumerate(self._bodies, start=1):
                if b["cnames"] is not None and ref in b["cnames"]:
                    return j, b["cnames"].index(ref)
            raise ModelError(f"{who}: no joint or coordinate named {ref!r}")
        j = self._joint_ref(ref, who)
        if self._bodies[j - 1]["joint"].nq != 1:
            raise ModelError(f"{who}: joint {self._bodies[j - 1]['jname']!r} has {self._bodies[j - 1]['joint'].nq} "
                             "coordinates; name one as (joint, k)")
        return j, 0

    def _joint_ref(self, ref, who):
        if isinstance(ref, str):
            if ref not in self._joint_names:
                raise ModelError(f"{who}: no joint named {ref!r}")
            return self._joint_names[ref]
        if isinstance(ref, (int, np.integer)) and not isinstance(ref, bool) and 1 <= ref <= len(self._bodies):
            return int(ref)
        raise ModelError(f"{who}: expected a joint name or index (1..{len(self._bodies)}), got {ref!r}")

    def _resolved_couplers(self):
        out = []
        for dep, ind, f, scale in getattr(self, "_couplers", []):
            who = f"coupler of {dep!r}"
            out.append(Coupler(self._coordinate(dep, who), [self._coordinate(x, who) for x in ind], f, scale))
        return out

    @staticmethod
    def _placement(T, who):
        if T is None:
            return Transform()
        if isinstance(T, Transform):
            return T
        if isinstance(T, dict):
            try:
                return Transform(check_rotation(T["rotation"], "rotation") if T.get("rotation") is not None else None,
                                 check_vector(T["translation"], "translation") if T.get("translation") is not None else None)
            except ModelError as e:
                raise ModelError(f"{who}: {e}") from None
        raise ModelError(f"{who}: expected an ej.Transform, got {T!r}")

    def _resolve_mimic(self, b):
        """(source joint index, multiplier, offset) of a mimic body, checked against the source."""
        src, k, off = b["mimic"]
        who = f"body {b['name']!r}: mimic"
        if isinstance(src, str):
            if src not in self._joint_names:
                raise ModelError(f"{who}: no joint named {src!r}")
            j = self._joint_names[src]
        else:
            if not 1 <= src <= len(self._bodies):
                raise ModelError(f"{who}: joint index {src} does not exist (joints 1..{len(self._bodies)})")
            j = int(src)
        s = self._bodies[j - 1]
        if s is b:
            raise ModelError(f"{who}: a joint cannot mimic itself")
        if s["mimic"] is not None:
            raise ModelError(f"{who}: joint {s['jname']!r} is itself a mimic joint; mimic its source "
                             "with the multipliers and offsets composed")
        if s["joint"].nq != 1 or s["joint"].nv != 1:
            raise ModelError(f"{who}: joint {s['jname']!r} ({s['joint']!r}) has no single coordinate to follow")
        return (j, k, off)

    def build(self):
        """Validate and return the immutable ``ej.Model``."""
        bs = self._bodies
        world = dict(name="world", parent=-1, joint=_specs.Fixed(), jname="world", P=Transform(),
                     C=Transform(), mass=0.0, com=np.zeros(3), inertia=np.zeros((3, 3)),
                     lims=(np.zeros(0),) * 4, mimic=None, passive=(np.zeros(0),) * 4, cnames=None, qdef=None)
        rows = [world] + bs
        mimic = [None if b["mimic"] is None else self._resolve_mimic(b) for b in rows]
        couplers = self._resolved_couplers()
        dep = {c.dependent for c in couplers} | {(j, 0) for j, m in enumerate(mimic) if m is not None}
        # limits, velocity limits and passive forces are given per joint coordinate; a coupler's
        # dependent coordinate has none of its own
        cut = []
        for j, b in enumerate(rows):
            n = b["joint"].nq if b["mimic"] is None else 0
            keep = np.array([(j, k) not in dep for k in range(n)], dtype=bool)
            keepv = keep if b["joint"].nq == b["joint"].nv else np.ones(len(b["lims"][2]), dtype=bool)
            cut.append((keep, keepv))
        # a coupler's dependent coordinate keeps its armature: it acts through the coupling
        # (the expansion's M_full + diag(armature), reduced by G)
        dep_arm = [((j, k), float(b["passive"][3][k])) for j, b in enumerate(rows) if b["mimic"] is None
                   for k in range(len(b["passive"][3])) if (j, k) in dep and b["passive"][3][k] != 0.0]
        names = None
        if any(b["cnames"] is not None for b in rows):
            names = []
            for b in rows[1:]:
                s = b["joint"]
                names += b["cnames"] if b["cnames"] is not None else (
                    [b["jname"]] if s.nq == 1 else [f"{b['jname']}[{k}]" for k in range(s.nq)])
        qdef = None
        if any(b["qdef"] is not None for b in rows):
            qdef = np.concatenate([b["qdef"] if b["qdef"] is not None else b["joint"].neutral() for b in rows])
        return Model(
            gravity=self.gravity,
            body_names=[b["name"] for b in rows],
            joint_names=[b["jname"] for b in rows],
            joint_specs=[b["joint"] for b in rows],
            parent=[b["parent"] for b in rows],
            joint_P=[b["P"] for b in rows],
            joint_C=[b["C"] for b in rows],
            body_mass=[b["mass"] for b in rows],
            body_com=[b["com"] for b in rows],
            body_inertia=[b["inertia"] for b in rows],
            q_lower=np.concatenate([b["lims"][0][k] for b, (k, _) in zip(rows, cut)]),
            q_upper=np.concatenate([b["lims"][1][k] for b, (k, _) in zip(rows, cut)]),
            v_limit=np.concatenate([b["lims"][2][k] for b, (_, k) in zip(rows, cut)]),
            effort_limit=np.concatenate([b["lims"][3][k] for b, (_, k) in zip(rows, cut)]),
            joint_mimic=mimic,
            dof_damping=np.concatenate([b["passive"][0][k] for b, (_, k) in zip(rows, cut)]),
            dof_stiffness=np.concatenate([b["passive"][1][k] for b, (_, k) in zip(rows, cut)]),
            dof_springref=np.concatenate([b["passive"][2][k] for b, (_, k) in zip(rows, cut)]),
            dof_armature=np.concatenate([b["passive"][3][k] for b, (_, k) in zip(rows, cut)]),
            couplers=couplers, coordinate_names=names, q_default=qdef, coupled_armature=dep_arm or None,
            notes=tuple(self.notes), loops=self._built_loops(), frames=self._built_frames(),
            actuation=self.actuation,
        )

    def _built_frames(self):
        frames = getattr(self, "_frames", [])
        clash = [f[0] for f in frames if f[0] in self._names]
        if clash:
            raise ModelError(f"frame {clash[0]!r}: a body has that name (frames and bodies share one name space)")
        return list(frames)

    def _built_loops(self):
        return [Loop(*L) for L in getattr(self, "_loops", [])]
