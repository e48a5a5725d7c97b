"""The actuation of a model as flat tables with MuJoCo's names (``Actuation``), and their packing
into one float64 and one int64 buffer for the kernels.

``model.actuation`` is None for a model without actuation, else an ``Actuation``: immutable,
with MuJoCo's compiled tables (``actuator_*``, ``tendon_*``, ``wrap_*``, ``body_gravcomp``) and
the addresses of the joints they act on in the ej model's coordinates (``actuator_qadr``,
``actuator_dofadr``, ``wrap_qadr``, ``wrap_dofadr``: the kernel model's q and v, which for a model
with couplers is its expansion ``model.expanded()``).  Its OpenSim force elements (an
``elements.ForceElements``) are ``elements``, their controls the last ``elements.nu`` entries of ctrl.

Sizes: ``nu`` controls (MuJoCo's actuators first, ``nu_mj`` of them, then the elements'), ``na``
activations, ``ntendon`` tendons, ``nwrap`` wrap objects, ``nsite`` sites, ``nv`` and ``n1`` of
the kernel model.

Every table is declared once in ``TABLES`` (name, shape in the sizes ``SIZES``, dtype, meaning);
``packed()`` lays them out (8-entry aligned) in ``ab`` (float64) and ``ib`` (int64, a header of
sizes and offsets first) and ``views.act_view(ab, ib)`` rebuilds the named views inside compiled
code (generated from ``TABLES`` by ``python -m ejce_nb.actuation.tables``).  The scratch of one
state (``WORK``: the tendons' and actuators' lengths, velocities, Jacobians, forces, the clamped
controls) is laid out the same way in a float64 array of ``work_size(model)`` entries
(``views.work_view(ib, work)``).
"""
import collections
import os

import numpy as np

# ---------------------------------------------------------------------------- declarations
SIZES = ("nu", "na", "nt", "nwrap", "nsite", "nv", "n1")

# MuJoCo's enumerations (mjtTrn, mjtDyn, mjtGain, mjtBias, mjtWrap, mjtJoint)
TRN_JOINT, TRN_JOINTINPARENT, TRN_SLIDERCRANK, TRN_TENDON, TRN_SITE, TRN_BODY = range(6)
DYN_NONE, DYN_INTEGRATOR, DYN_FILTER, DYN_FILTEREXACT, DYN_MUSCLE = range(5)
GAIN_FIXED, GAIN_AFFINE, GAIN_MUSCLE = range(3)
BIAS_NONE, BIAS_AFFINE, BIAS_MUSCLE = range(3)
WRAP_NONE, WRAP_JOINT, WRAP_PULLEY, WRAP_SITE, WRAP_SPHERE, WRAP_CYLINDER = range(6)
JNT_FREE, JNT_BALL, JNT_SLIDE, JNT_HINGE = range(4)
# the flags of ``opt_flags``
F_CLAMPCTRL, F_GRAVCOMP, F_SPRING, F_DAMPER, F_ACTUATION = range(5)

Decl = collections.namedtuple("Decl", "name shape dtype doc")


def D(name, shape, dtype, doc):
    return Decl(name, shape if isinstance(shape, tuple) else (shape,), dtype, doc)


TABLES = (
    # integers
    D("actuator_trntype", "nu", "i8", "transmission type (mjtTrn): joint, jointinparent, tendon, ..."),
    D("actuator_dyntype", "nu", "i8", "activation dynamics (mjtDyn): none, integrator, filter, filterexact, muscle"),
    D("actuator_gaintype", "nu", "i8", "gain type (mjtGain): fixed, affine, muscle"),
    D("actuator_biastype", "nu", "i8", "bias type (mjtBias): none, affine, muscle"),
    D("actuator_trnid", ("nu", 2), "i8", "MuJoCo's transmission target ids (joint, tendon, site; refsite or slider)"),
    D("actuator_ctrllimited", "nu", "i8", "1: ctrl clamped to actuator_ctrlrange"),
    D("actuator_forcelimited", "nu", "i8", "1: force clamped to actuator_forcerange"),
    D("actuator_actlimited", "nu", "i8", "1: act clamped to actuator_actrange (actearly)"),
    D("actuator_actearly", "nu", "i8", "1: the force uses the next step's activation"),
    D("actuator_actadr", "nu", "i8", "first activation of the actuator in act, -1: none"),
    D("actuator_actnum", "nu", "i8", "number of activations of the actuator"),
    D("actuator_jnttype", "nu", "i8", "joint transmissions: the joint's type (mjtJoint), else -1"),
    D("actuator_qadr", "nu", "i8", "joint transmissions: the joint's first coordinate in the ej q"),
    D("actuator_dofadr", "nu", "i8", "joint transmissions: the joint's first velocity variable in the ej v"),
    D("tendon_adr", "nt", "i8", "first wrap object of the tendon"),
    D("tendon_num", "nt", "i8", "number of wrap objects of the tendon"),
    D("wrap_type", "nwrap", "i8", "wrap object type (mjtWrap)"),
    D("wrap_objid", "nwrap", "i8", "MuJoCo's id of the joint, site or geom"),
    D("wrap_qadr", "nwrap", "i8", "joint wraps: the joint's coordinate in the ej q"),
    D("wrap_dofadr", "nwrap", "i8", "joint wraps: the joint's velocity variable in the ej v"),
    D("wrap_geombody", "nwrap", "i8", "sphere and cylinder wraps: the body of the geom"),
    D("site_bodyid", "nsite", "i8", "the body each site is fixed on"),
    D("dof_actgravcomp", "nv", "i8", "1: gravity compensation of this velocity variable goes to qfrc_actuator"),
    D("dof_actfrclimited", "nv", "i8", "1: qfrc_actuator of this velocity variable clamped to dof_actfrcrange"),
    D("opt_flags", 8, "i8", "F_CLAMPCTRL, F_GRAVCOMP, F_SPRING, F_DAMPER, F_ACTUATION: 1 where enabled"),
    # floats
    D("actuator_gear", ("nu", 6), "f8", "gear (joint: gear[0]; ball, free: 3 and 6 entries)"),
    D("actuator_dynprm", ("nu", 10), "f8", "activation dynamics parameters"),
    D("actuator_gainprm", ("nu", 10), "f8", "gain parameters"),
    D("actuator_biasprm", ("nu", 10), "f8", "bias parameters"),
    D("actuator_ctrlrange", ("nu", 2), "f8", "control range"),
    D("actuator_forcerange", ("nu", 2), "f8", "force range"),
    D("actuator_actrange", ("nu", 2), "f8", "activation range"),
    D("actuator_lengthrange", ("nu", 2), "f8", "transmission length range (MuJoCo's compiled values; muscles)"),
    D("actuator_acc0", "nu", "f8", "acceleration of a unit force at qpos0 (MuJoCo's compiled values; muscles)"),
    D("actuator_cranklength", "nu", "f8", "slider-crank rod length"),
    D("tendon_stiffness", "nt", "f8", "tendon spring stiffness"),
    D("tendon_damping", "nt", "f8", "tendon damping"),
    D("tendon_lengthspring", ("nt", 2), "f8", "spring rest lengths: no force between the two (dead band)"),
    D("wrap_prm", "nwrap", "f8", "joint wraps: coefficient; pulleys: divisor; geoms: side site id or -1"),
    D("wrap_geompos", ("nwrap", 3), "f8", "sphere and cylinder wraps: the geom's position in its body's frame"),
    D("wrap_geommat", ("nwrap", 9), "f8", "sphere and cylinder wraps: the geom's axes in its body's frame"),
    D("wrap_radius", "nwrap", "f8", "sphere and cylinder wraps: the geom's radius"),
    D("site_pos", ("nsite", 3), "f8", "site position in its body's frame"),
    D("site_mat", ("nsite", 9), "f8", "site axes in its body's frame, row by row"),
    D("body_gravcomp", "n1", "f8", "gravity compensation: the fraction of the body's weight held up"),
    D("body_ipos", ("n1", 3), "f8", "centre of mass in the body's frame"),
    D("dof_actfrcrange", ("nv", 2), "f8", "range of qfrc_actuator (dof_actfrclimited)"),
    D("opt_timestep", 1, "f8", "MuJoCo's opt.timestep (actearly)"),
)

WORK = (
    D("ten_length", "nt", "f8", "tendon lengths"),
    D("ten_velocity", "nt", "f8", "tendon velocities"),
    D("ten_J", ("nt", "nv"), "f8", "tendon Jacobians"),
    D("actuator_length", "nu", "f8", "transmission lengths"),
    D("actuator_velocity", "nu", "f8", "transmission velocities"),
    D("actuator_moment", ("nu", "nv"), "f8", "transmission moment arms (dense)"),
    D("actuator_force", "nu", "f8", "actuator forces"),
    D("ctrl", "nu", "f8", "the controls after clamping"),
    D("qfrc_actuator", "nv", "f8", "moment^T force (+ actuator-level gravity compensation)"),
    D("qfrc_tendon", "nv", "f8", "tendon springs and dampers"),
    D("qfrc_gravcomp", "nv", "f8", "gravity compensation"),
    D("site_xpos", ("nsite", 3), "f8", "world positions of the sites"),
    D("site_xmat", ("nsite", 9), "f8", "world axes of the sites, row by row"),
    D("wrap_xpos", ("nwrap", 3), "f8", "sphere and cylinder wraps: world position of the geom"),
    D("wrap_xmat", ("nwrap", 9), "f8", "sphere and cylinder wraps: world axes of the geom"),
    D("wsc", 16, "f8", "scratch"),
)

_ALL = TABLES + WORK
# the header of ib: the sizes, then each table's offset (float tables in ab, work tables in work)
H_SIZE = {s: k for k, s in enumerate(SIZES)}
H_WORK = len(SIZES)
# 1 where the actuation reads the bodies' world frames (gravity compensation, sites, spatial
# tendons, force elements): a state's forward sweep then computes them
H_WORLD = len(SIZES) + 1
SLOT = {t.name: len(SIZES) + 2 + k for k, t in enumerate(_ALL)}
HEADER = len(SIZES) + 2 + len(_ALL)


def _n(t, sizes):
    return int(np.prod([n if isinstance(n, int) else sizes[n] for n in t.shape], dtype=np.int64))


def _layout(tables, sizes, header, start):
    off = start
    for t in tables:
        header[SLOT[t.name]] = off
        off += -(-_n(t, sizes) // 8) * 8 + 8
    return off


# ---------------------------------------------------------------------------- the class
class Actuation:
    """The forces that drive a model, as MuJoCo's compiled tables (see the module's docstring).

    Attributes: ``nu`` (controls), ``na`` (activations), ``ntendon``, ``nu_mj`` (MuJoCo's
    actuators: the first ``nu_mj`` controls), ``ctrl_names`` (nu,), ``act_names`` (na,),
    ``tendon_names``, ``ctrlrange`` (nu, 2) with -inf / inf where unlimited, ``elements`` (None
    or the OpenSim force elements), ``notes`` (what of the source was left out), and every table
    of ``TABLES`` by its MuJoCo name (read-only numpy arrays).  ``packed()`` gives the kernels'
    buffers (ab float64, ib int64), ``work_size(model)`` the size of one state's scratch."""

    def __init__(self, tables, sizes, ctrl_names=(), act_names=(), tendon_names=(), elements=None, notes=()):
        self._sizes = dict(sizes)
        self.nu_mj = int(sizes["nu"])
        self.na = int(sizes["na"])
        self.ntendon = int(sizes["nt"])
        self.nwrap = int(sizes["nwrap"])
        self.nv = int(sizes["nv"])
        self.elements = elements
        enu = int(getattr(elements, "nu", 0) or 0) if elements is not None else 0
        self.nu = self.nu_mj + enu
        ctrl_names = tuple(ctrl_names) + tuple(getattr(elements, "ctrl_names", ()) or ())
        if len(ctrl_names) != self.nu:
            ctrl_names = ctrl_names + tuple(f"ctrl{k}" for k in range(len(ctrl_names), self.nu))
        self.ctrl_names = ctrl_names
        self.act_names = tuple(act_names)
        self.tendon_names = tuple(tendon_names)
        self.notes = tuple(notes)
        for t in TABLES:
            shape = tuple(n if isinstance(n, int) else self._sizes[n] for n in t.shape)
            a = np.array(tables.get(t.name, np.zeros(shape)), dtype=np.float64 if t.dtype == "f8" else np.int64)
            if a.size != int(np.prod(shape)):
                raise ValueError(f"actuation table {t.name}: {a.size} entries for shape {shape}")
            a = a.reshape(shape)
            a.flags.writeable = False
            object.__setattr__(self, t.name, a)
        cr = np.full((self.nu, 2), [-np.inf, np.inf])
        lim = self.actuator_ctrllimited.astype(bool)
        cr[:self.nu_mj][lim] = self.actuator_ctrlrange[lim]
        erange = getattr(elements, "ctrlrange", None) if elements is not None else None
        if erange is not None and enu:
            cr[self.nu_mj:] = np.asarray(erange, dtype=float).reshape(enu, 2)
        cr.flags.writeable = False
        object.__setattr__(self, "ctrlrange", cr)
        self._packed = None
        self._frozen = True

    def __setattr__(self, name, value):
        if getattr(self, "_frozen", False) and not name.startswith("_"):
            raise AttributeError(f"Actuation is immutable; cannot set {name!r}")
        object.__setattr__(self, name, value)

    def __reduce__(self):
        return (_remake, ({t.name: getattr(self, t.name) for t in TABLES}, self._sizes, self.ctrl_names[:self.nu_mj],
                          self.act_names, self.tendon_names, self.elements, self.notes))

    def __repr__(self):
        return (f"<ej.Actuation nu={self.nu} (MuJoCo {self.nu_mj}) na={self.na} ntendon={self.ntendon}"
                f"{' + elements' if self.elements is not None else ''}>")

    @classmethod
    def from_elements(cls, elements, nv, n1):
        """An actuation of OpenSim force elements alone (no MuJoCo actuators), on a kernel model
        of ``nv`` velocities and ``n1`` bodies (world included)."""
        sizes = dict(nu=0, na=0, nt=0, nwrap=0, nsite=0, nv=int(nv), n1=int(n1))
        flags = np.zeros(8, dtype=np.int64)
        flags[[F_CLAMPCTRL, F_GRAVCOMP, F_SPRING, F_DAMPER, F_ACTUATION]] = 1
        return cls({"opt_flags": flags}, sizes, elements=elements)

    def packed(self):
        """(ab, ib): the float64 and int64 buffers of the kernels (made once).  ``ab`` is the float
        array itself for an actuation whose actuators and tendons act through joints alone, and
        a 1-tuple ``(ab,)`` for one with sites or spatial tendons: a compile-time property, so
        that only those compile the geometry (``state.actuation_forces``)."""
        if self._packed is None:
            sizes = self._sizes
            ib_head = np.zeros(HEADER, dtype=np.int64)
            for s in SIZES:
                ib_head[H_SIZE[s]] = sizes[s]
            ints = [t for t in TABLES if t.dtype == "i8"]
            floats = [t for t in TABLES if t.dtype == "f8"]
            iend = _layout(ints, sizes, ib_head, HEADER)
            fend = _layout(floats, sizes, ib_head, 0)
            ib_head[H_WORK] = _layout(WORK, sizes, ib_head, 0)
            ib = np.zeros(iend, dtype=np.int64)
            ab = np.zeros(max(fend, 8), dtype=np.float64)
            ib[:HEADER] = ib_head
            for t in TABLES:
                buf = ib if t.dtype == "i8" else ab
                o = int(ib_head[SLOT[t.name]])
                a = getattr(self, t.name).ravel()
                buf[o:o + a.size] = a
            geo = bool(np.any(np.isin(self.actuator_trntype, (TRN_SITE, TRN_SLIDERCRANK)))
                       or np.any(np.isin(self.wrap_type, (WRAP_SITE, WRAP_PULLEY, WRAP_SPHERE, WRAP_CYLINDER))))
            ib[H_WORLD] = int(geo or self.elements is not None or bool(np.any(self.body_gravcomp != 0)))
            self._packed = ((ab,) if geo else ab, ib)
        return self._packed

    def work_size(self, model=None):
        """Entries of one state's scratch ``work`` (float64)."""
        return int(self.packed()[1][H_WORK])

    def work_views(self, work):
        """{name: numpy view} of the tables of ``WORK`` in a scratch array of one state."""
        ib = self.packed()[1]
        out = {}
        for t in WORK:
            shape = tuple(n if isinstance(n, int) else self._sizes[n] for n in t.shape)
            o = int(ib[SLOT[t.name]])
            out[t.name] = work[..., o:o + int(np.prod(shape))].reshape(work.shape[:-1] + shape)
        return out


def _remake(tables, sizes, ctrl_names, act_names, tendon_names, elements, notes):
    return Actuation(tables, sizes, ctrl_names, act_names, tendon_names, elements, notes)


# ---------------------------------------------------------------------------- the generated views
def views_source():
    """The text of ``actuation/views.py`` from ``TABLES`` and ``WORK``."""
    lines = ['"""The compiled views of an Actuation\'s packed buffers (``tables``): generated from',
             '``tables.TABLES`` and ``tables.WORK`` by ``python -m ejce_nb.actuation.tables``; do not edit."""',
             "import collections", "", "import numpy as np", "", "from .._jit import jit",
             "from ..model.layout import rows, vec", "",
             f"ActView = collections.namedtuple(\"ActView\", {[t.name for t in TABLES]!r})",
             f"WorkView = collections.namedtuple(\"WorkView\", {[t.name for t in WORK]!r})", ""]

    def dims(t):
        first = t.shape[0]
        rest = t.shape[1:]
        if not rest:
            return [str(first)]
        return [str(first), " * ".join(str(n) for n in rest)]

    def one(t, buf):
        d = dims(t)
        o = f"ib[{SLOT[t.name]}]"
        return f"vec({buf}, {o}, {d[0]})" if len(d) == 1 else f"rows({buf}, {o}, {d[0]}, {d[1]})"

    head = [f"    {s} = ib[{H_SIZE[s]}]" for s in SIZES]
    lines += ["", "@jit(forceinline=True)", "def act_view(ab, ib):",
              '    """The tables of ``tables.TABLES`` in the packed buffers (ab float64, ib int64)."""'] + head
    lines += ["    return ActView("] + [f"        {one(t, 'ib' if t.dtype == 'i8' else 'ab')}," for t in TABLES]
    lines += ["    )", "", "", "@jit(forceinline=True)", "def work_view(ib, work):",
              '    """The tables of ``tables.WORK`` in one state\'s scratch ``work``."""'] + head
    lines += ["    return WorkView("] + [f"        {one(t, 'work')}," for t in WORK] + ["    )", ""]
    return "\n".join(lines)


def write_views():
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "views.py"), "w") as f:
        f.write(views_source())


if __name__ == "__main__":
    write_views()


# ---------------------------------------------------------------------------- from MuJoCo
class Unsupported(Exception):
    """A part of a MuJoCo model's actuation that is not loaded (its message says which)."""


def _nonzero(mj, name, i):
    a = getattr(mj, name, None)
    return a is not None and np.any(np.asarray(a)[i] != 0)


def from_mujoco(mj, source, locked, n1, nv_kernel):
    """The ``Actuation`` of a compiled ``mujoco.MjModel`` ``mj`` whose joints ``locked`` (MuJoCo
    joint ids fixed by joint equalities) are gone from the ej model; the other joints keep
    MuJoCo's order, so a coordinate's address in the kernel model (the expansion where joints are
    coupled) is MuJoCo's less the locked coordinates before it.  None where the model has no
    actuators, tendons or gravity compensation.  Raises ``Unsupported`` (naming the actuator or
    tendon) for what is not loaded, an actuator or tendon acting on a joint fixed by an equality
    among them (its coordinate is gone from the model)."""
    import mujoco

    nu, nt = int(mj.nu), int(mj.ntendon)
    has_gc = bool(np.any(np.asarray(mj.body_gravcomp) != 0))
    if nu == 0 and nt == 0 and not has_gc:
        return None
    OBJ = mujoco.mjtObj

    def name(kind, i, fallback):
        n = mujoco.mj_id2name(mj, kind, i)
        return n if n else fallback

    anames = [name(OBJ.mjOBJ_ACTUATOR, i, f"actuator{i}") for i in range(nu)]
    tnames = [name(OBJ.mjOBJ_TENDON, i, f"tendon{i}") for i in range(nt)]
    jnames = [name(OBJ.mjOBJ_JOINT, j, f"joint{j}") for j in range(mj.njnt)]
    qshift = np.zeros(mj.njnt, dtype=np.int64)
    vshift = np.zeros(mj.njnt, dtype=np.int64)
    gone_q = sorted(int(mj.jnt_qposadr[j]) for j in locked)
    gone_v = sorted(int(mj.jnt_dofadr[j]) for j in locked)
    for j in range(mj.njnt):
        qshift[j] = int(mj.jnt_qposadr[j]) - int(np.searchsorted(gone_q, int(mj.jnt_qposadr[j])))
        vshift[j] = int(mj.jnt_dofadr[j]) - int(np.searchsorted(gone_v, int(mj.jnt_dofadr[j])))

    def joint_of(j, who):
        if j in locked:
            raise Unsupported(f"{who} acts on joint {jnames[j]!r}, which a joint equality fixes (it has no "
                              "coordinate in the model)")
        return int(qshift[j]), int(vshift[j])

    # what is not loaded
    if getattr(mj.opt, "disableactuator", 0):
        raise Unsupported("actuator groups disabled by opt.disableactuator")
    for i in range(nu):
        who = f"actuator {anames[i]!r}"
        trn, dyn = int(mj.actuator_trntype[i]), int(mj.actuator_dyntype[i])
        gain, bias = int(mj.actuator_gaintype[i]), int(mj.actuator_biastype[i])
        if trn not in (TRN_JOINT, TRN_JOINTINPARENT, TRN_TENDON, TRN_SITE, TRN_SLIDERCRANK):
            raise Unsupported(f"{who}: transmission {mujoco.mjtTrn(trn).name} is not supported yet")
        if dyn > DYN_MUSCLE or gain > GAIN_MUSCLE or bias > BIAS_MUSCLE:
            raise Unsupported(f"{who}: dynamics {mujoco.mjtDyn(dyn).name}, gain {mujoco.mjtGain(gain).name}, bias "
                              f"{mujoco.mjtBias(bias).name}: only none/integrator/filter/filterexact/muscle dynamics "
                              "and fixed/affine/muscle gains and biases are supported")
        if int(mj.actuator_actnum[i]) > 1 or (dyn != DYN_NONE) != (int(mj.actuator_actnum[i]) == 1):
            raise Unsupported(f"{who}: {int(mj.actuator_actnum[i])} activations")
        if int(mj.actuator_plugin[i]) >= 0:
            raise Unsupported(f"{who}: an actuator plugin")
        for attr in ("actuator_delay", "actuator_damping", "actuator_armature", "actuator_dampingpoly"):
            if _nonzero(mj, attr, i):
                raise Unsupported(f"{who}: {attr} is not supported")
    for t in range(nt):
        who = f"tendon {tnames[t]!r}"
        for k in range(int(mj.tendon_adr[t]), int(mj.tendon_adr[t]) + int(mj.tendon_num[t])):
            if int(mj.wrap_type[k]) not in (WRAP_JOINT, WRAP_SITE, WRAP_PULLEY, WRAP_SPHERE, WRAP_CYLINDER):
                raise Unsupported(f"{who}: wrap object type {int(mj.wrap_type[k])} is not supported")
        for attr in ("tendon_actfrclimited", "tendon_stiffnesspoly", "tendon_dampingpoly", "tendon_springyield"):
            if _nonzero(mj, attr, t):
                raise Unsupported(f"{who}: {attr} is not supported")

    tables = {}
    for nm in ("actuator_trntype", "actuator_dyntype", "actuator_gaintype", "actuator_biastype", "actuator_trnid",
               "actuator_ctrllimited", "actuator_forcelimited", "actuator_actlimited", "actuator_actearly",
               "actuator_actadr", "actuator_actnum", "actuator_gear", "actuator_ctrlrange", "actuator_forcerange",
               "actuator_actrange", "actuator_lengthrange", "actuator_acc0", "actuator_cranklength",
               "tendon_adr", "tendon_num", "tendon_stiffness", "tendon_damping", "tendon_lengthspring",
               "wrap_type", "wrap_objid", "wrap_prm", "site_bodyid", "site_pos", "body_gravcomp", "body_ipos"):
        tables[nm] = np.asarray(getattr(mj, nm))
    for nm in ("actuator_dynprm", "actuator_gainprm", "actuator_biasprm"):
        a = np.zeros((nu, 10))
        src = np.asarray(getattr(mj, nm)).reshape(nu, -1)
        a[:, :min(10, src.shape[1])] = src[:, :10]
        tables[nm] = a
    smat = np.zeros((int(mj.nsite), 9))
    for k in range(int(mj.nsite)):
        mujoco.mju_quat2Mat(smat[k], np.asarray(mj.site_quat[k], dtype=float))
    tables["site_mat"] = smat
    jt, qa, da = np.full(nu, -1), np.zeros(nu, dtype=np.int64), np.zeros(nu, dtype=np.int64)
    for i in range(nu):
        if int(mj.actuator_trntype[i]) in (TRN_JOINT, TRN_JOINTINPARENT):
            j = int(mj.actuator_trnid[i, 0])
            jt[i] = int(mj.jnt_type[j])
            qa[i], da[i] = joint_of(j, f"actuator {anames[i]!r}")
    tables.update(actuator_jnttype=jt, actuator_qadr=qa, actuator_dofadr=da)
    nwrap = int(mj.nwrap)
    wq, wd = np.zeros(nwrap, dtype=np.int64), np.zeros(nwrap, dtype=np.int64)
    for t in range(nt):
        for k in range(int(mj.tendon_adr[t]), int(mj.tendon_adr[t]) + int(mj.tendon_num[t])):
            if int(mj.wrap_type[k]) == WRAP_JOINT:
                wq[k], wd[k] = joint_of(int(mj.wrap_objid[k]), f"tendon {tnames[t]!r}")
    tables.update(wrap_qadr=wq, wrap_dofadr=wd)
    gb, gp, gm, gr = np.zeros(nwrap, dtype=np.int64), np.zeros((nwrap, 3)), np.zeros((nwrap, 9)), np.zeros(nwrap)
    for k in range(nwrap):
        if int(mj.wrap_type[k]) in (WRAP_SPHERE, WRAP_CYLINDER):
            g = int(mj.wrap_objid[k])
            gb[k], gp[k], gr[k] = int(mj.geom_bodyid[g]), mj.geom_pos[g], float(mj.geom_size[g, 0])
            mujoco.mju_quat2Mat(gm[k], np.asarray(mj.geom_quat[g], dtype=float))
    tables.update(wrap_geombody=gb, wrap_geompos=gp, wrap_geommat=gm, wrap_radius=gr)
    agc = np.zeros(nv_kernel, dtype=np.int64)
    afl = np.zeros(nv_kernel, dtype=np.int64)
    afr = np.zeros((nv_kernel, 2))
    ndof = {JNT_FREE: 6, JNT_BALL: 3, JNT_SLIDE: 1, JNT_HINGE: 1}
    actgc = np.asarray(getattr(mj, "jnt_actgravcomp", np.zeros(mj.njnt)))
    actfl = np.asarray(getattr(mj, "jnt_actfrclimited", np.zeros(mj.njnt)))
    for j in range(mj.njnt):
        if j in locked:
            continue
        d0 = int(vshift[j])
        if actgc[j]:
            agc[d0:d0 + ndof[int(mj.jnt_type[j])]] = 1
        if actfl[j]:
            afl[d0] = 1
            afr[d0] = np.asarray(mj.jnt_actfrcrange[j])
    tables.update(dof_actgravcomp=agc, dof_actfrclimited=afl, dof_actfrcrange=afr)
    dis = int(mj.opt.disableflags)
    DS = mujoco.mjtDisableBit
    flags = np.zeros(8, dtype=np.int64)
    flags[F_CLAMPCTRL] = 0 if dis & int(DS.mjDSBL_CLAMPCTRL) else 1
    flags[F_GRAVCOMP] = 0 if (dis & int(DS.mjDSBL_GRAVITY) or not np.any(np.asarray(mj.opt.gravity) != 0)) else 1
    flags[F_SPRING] = 0 if dis & int(DS.mjDSBL_SPRING) else 1
    flags[F_DAMPER] = 0 if dis & int(DS.mjDSBL_DAMPER) else 1
    flags[F_ACTUATION] = 0 if dis & int(DS.mjDSBL_ACTUATION) else 1
    tables["opt_flags"] = flags
    tables["opt_timestep"] = np.array([float(mj.opt.timestep)])
    sizes = dict(nu=nu, na=int(mj.na), nt=nt, nwrap=nwrap, nsite=int(mj.nsite), nv=int(nv_kernel), n1=int(n1))
    act_names = []
    for i in range(nu):
        act_names += [anames[i]] * int(mj.actuator_actnum[i])
    return Actuation(tables, sizes, anames, act_names, tnames)
