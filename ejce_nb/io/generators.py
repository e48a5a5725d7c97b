"""Model generators: serial chains, seeded random trees with every joint kind, random joints and
states, and the inertias of simple solids (``ej.models`` gives them with the shipped models).

* ``chain(n, joint)``: a serial chain (the n-link pendulum of the benchmarks).
* ``random_tree(n, seed)``: a seeded random tree with every joint kind, random frames and inertias,
  bodies numbered in a random parents-first order that is not depth-first.
* ``random_states(model, n)``: random (q, qd, qdd) for sweeps and benchmarks.
"""
import numpy as np

from ..core.joints import fn
from ..core.joints import specs as J
from ..core.transform import Transform
from ..errors import ModelError
from ..model.builder import ModelBuilder

ROTATION_PARAMS = tuple(J.EULER_SEQUENCES) + tuple(s.lower() for s in J.EULER_SEQUENCES) + (
    "quaternion", "rotvec", "rodrigues", "mrp")


# ---------------------------------------------------------------------------- inertia helpers
def cylinder_inertia(mass, radius, length, axis=2):
    """Principal inertia (3x3) of a solid cylinder about its centre, its axis along ``axis``."""
    a = mass * (3.0 * radius ** 2 + length ** 2) / 12.0
    d = np.full(3, a)
    d[axis] = 0.5 * mass * radius ** 2
    return np.diag(d)


def box_inertia(mass, sx, sy, sz):
    """Inertia (3x3) of a solid box of edge lengths sx, sy, sz about its centre."""
    return np.diag([mass * (sy ** 2 + sz ** 2), mass * (sx ** 2 + sz ** 2), mass * (sx ** 2 + sy ** 2)]) / 12.0


def random_rotation(rng):
    """Uniformly distributed rotation matrix."""
    w, x, y, z = rng.normal(size=4)
    n = np.sqrt(w * w + x * x + y * y + z * z)
    w, x, y, z = w / n, x / n, y / n, z / n
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def random_unit(rng):
    v = rng.normal(size=3)
    return v / np.linalg.norm(v)


# ---------------------------------------------------------------------------- joint kinds
KINDS = ("fixed", "revolute", "prismatic", "helical", "cylindrical", "universal", "planar",
         "translation", "spherical", "free", "composite", "rheonomic")


def joint_from_name(name):
    """A joint spec from a short name: a kind of ``KINDS`` with default axes (revolute about y,
    prismatic/helical/cylindrical along z, universal about x then y, spherical and free with a
    quaternion), a rotation parameterisation (``"ZYX"``, ``"zxz"``, ``"rotvec"`` ...: Spherical),
    or ``"spherical:ZYX"`` / ``"free:ZYX"``.  ``"composite"`` is a knee-like joint (rotation plus
    spline-coupled translation) and ``"rheonomic"`` a rotation about z driven by time plus the
    coordinate."""
    if not isinstance(name, str):
        raise ModelError(f"joint must be a joint spec or a name, got {name!r}")
    base, _, param = name.partition(":")
    key = base.lower()
    if param:
        if key == "spherical":
            return J.Spherical(param)
        if key == "free":
            return J.Free(param)
        raise ModelError(f"joint {name!r}: only 'spherical:PARAM' and 'free:PARAM' take a parameterisation")
    simple = {"fixed": J.Fixed, "planar": J.Planar, "translation": J.Translation,
              "revolute": lambda: J.Revolute((0.0, 1.0, 0.0)), "continuous": lambda: J.Revolute((0.0, 1.0, 0.0)),
              "prismatic": lambda: J.Prismatic((0.0, 0.0, 1.0)),
              "helical": lambda: J.Helical((0.0, 0.0, 1.0), 0.05),
              "cylindrical": lambda: J.Cylindrical((0.0, 0.0, 1.0)),
              "universal": lambda: J.Universal((1.0, 0.0, 0.0), (0.0, 1.0, 0.0)),
              "spherical": lambda: J.Spherical("quaternion"), "free": lambda: J.Free("quaternion"),
              "composite": lambda: J.Composite(
                  [J.Rot((0.0, 1.0, 0.0), fn.Linear([1.0])),
                   J.Trans((1.0, 0.0, 0.0), fn.Spline(0, [-1.0, 0.0, 1.0, 2.0], [0.0, 0.01, 0.015, 0.01]))], 1),
              "rheonomic": lambda: J.Composite(
                  [J.Rot((0.0, 0.0, 1.0), fn.Sum(fn.Linear([1.0]), fn.Harmonic(0.3, 2.0)))], 1)}
    if key in simple:
        return simple[key]()
    if name in ROTATION_PARAMS:
        return J.Spherical(name)
    raise ModelError(f"unknown joint name {name!r}: one of {', '.join(KINDS)}, a rotation "
                     "parameterisation such as 'ZYX' or 'quaternion', or 'spherical:PARAM' / 'free:PARAM'")


def _random_function_of(rng, k, time_drive):
    """A smooth function of coordinate k with a slope near 1 (a joint's main motion), plus a
    time drive when ``time_drive``."""
    choice = rng.integers(3 if time_drive else 2)
    if choice == 0:
        return fn.Linear(np.eye(k + 1)[k] * rng.uniform(0.5, 1.5), offset=rng.uniform(-0.2, 0.2))
    if choice == 1:
        return fn.Poly(k, [rng.uniform(-0.2, 0.2), rng.uniform(0.5, 1.5), rng.uniform(-0.1, 0.1)])
    return fn.Sum(fn.Linear(np.eye(k + 1)[k]), fn.Harmonic(rng.uniform(0.05, 0.2), rng.uniform(0.5, 3.0),
                                                             rng.uniform(-np.pi, np.pi)))


def random_composite(rng, time_drive=False):
    """A random Composite joint: one main motion per coordinate about or along independent axes,
    plus spline/polynomial couplings and, with ``time_drive``, time-driven motions (nq may be 0)."""
    nq = int(rng.integers(0 if time_drive else 1, 4))
    E = random_rotation(rng)        # independent axes: the columns of a rotation
    kinds = rng.integers(2, size=3)
    motions = [(J.Rot if kinds[k] == 0 else J.Trans)(E[:, k], _random_function_of(rng, k, time_drive))
               for k in range(nq)]
    for _ in range(int(rng.integers(1 if nq == 0 or not time_drive else 0, 3))):
        cls = J.Rot if rng.integers(2) == 0 else J.Trans
        scale = 0.2 if cls is J.Trans else 0.5
        if nq > 0 and (not time_drive or rng.integers(2) == 0):
            k = int(rng.integers(nq))
            # knots at least 0.3 apart, so that the spline's slopes stay moderate
            x = rng.uniform(-2.0, -1.0) + np.cumsum(rng.uniform(0.3, 1.0, size=int(rng.integers(3, 7))))
            f = fn.Spline(k, x, scale * rng.uniform(-1.0, 1.0, size=len(x)))
        else:
            f = fn.Sum(fn.TimePoly(scale * rng.uniform(-1.0, 1.0, size=3)),
                       fn.Harmonic(scale * rng.uniform(0.2, 1.0), rng.uniform(0.5, 4.0), rng.uniform(-np.pi, np.pi)))
        motions.insert(int(rng.integers(len(motions) + 1)), cls(random_unit(rng), f))
    if time_drive and not any(m.f.depends_on_time() for m in motions):
        motions.append(J.Rot(random_unit(rng), fn.Harmonic(0.3, rng.uniform(0.5, 4.0))))
    return J.Composite(motions, nq)


def random_joint(kind, rng):
    """A random joint spec of one of ``KINDS`` (random axes, pitches, parameterisations)."""
    if isinstance(kind, J.JointSpec):
        return kind
    if kind == "fixed":
        return J.Fixed()
    if kind == "revolute":
        return J.Revolute(random_unit(rng))
    if kind == "prismatic":
        return J.Prismatic(random_unit(rng))
    if kind == "helical":
        return J.Helical(random_unit(rng), rng.uniform(-0.2, 0.2))
    if kind == "cylindrical":
        return J.Cylindrical(random_unit(rng))
    if kind == "universal":
        E = random_rotation(rng)
        return J.Universal(E[:, 0], E[:, 1])
    if kind == "planar":
        return J.Planar()
    if kind == "translation":
        return J.Translation()
    if kind in ("spherical", "free"):
        # half Euler sequences (24 of them), half the four other parameterisations
        pool = ROTATION_PARAMS[:24] if rng.random() < 0.5 else ROTATION_PARAMS[24:]
        param = pool[int(rng.integers(len(pool)))]
        return (J.Spherical if kind == "spherical" else J.Free)(param)
    if kind == "composite":
        return random_composite(rng, time_drive=False)
    if kind == "rheonomic":
        return random_composite(rng, time_drive=True)
    return joint_from_name(kind)


# ---------------------------------------------------------------------------- generators
def chain(n, joint=None, link_length=0.5, mass=1.0, gravity=(0.0, 0.0, -9.81)):
    """Serial chain of ``n`` equal links hanging along -z from the world origin.

    ``joint``: a joint spec, a name for ``joint_from_name`` (default ``"revolute"``: about y, an
    n-link planar pendulum), or a list of n of those.  Each link is a solid rod of ``mass`` and
    ``link_length`` (radius length/20) whose body origin is at its joint; body i+1 hangs at
    (0, 0, -link_length) of body i.  Bodies "link1".."linkN", joints "joint1".."jointN"."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ModelError(f"chain: n must be a non-negative integer, got {n!r}")
    joints = list(joint) if isinstance(joint, (list, tuple)) else [joint] * n
    if len(joints) != n:
        raise ModelError(f"chain: {len(joints)} joints given for {n} bodies")
    L = float(link_length)
    inertia = cylinder_inertia(mass, L / 20.0, L)
    b = ModelBuilder(gravity=gravity)
    for i, jt in enumerate(joints):
        spec = jt if isinstance(jt, J.JointSpec) else joint_from_name("revolute" if jt is None else jt)
        b.add_body(f"link{i + 1}", parent=i, joint=spec, joint_name=f"joint{i + 1}",
                   placement=Transform(translation=(0.0, 0.0, 0.0 if i == 0 else -L)),
                   mass=mass, com=(0.0, 0.0, -0.5 * L), inertia=inertia)
    return b.build()


def is_depth_first(parent):
    """Whether a parents-first numbering is a depth-first preorder: in a preorder the parent of
    each body is the previous body or one of its ancestors."""
    for i in range(2, len(parent)):
        a = i - 1
        while a > 0 and a != parent[i]:
            a = parent[a]
        if a != parent[i]:
            return False
    return True


def random_tree(n, seed=0, joints=None, limits=False, gravity=(0.0, 0.0, -9.81)):
    """Seeded random tree of ``n`` bodies.

    joints: the kinds to draw from (names of ``KINDS``, other ``joint_from_name`` names, or joint
    specs), default all of ``KINDS`` (composite joints with spline couplings and time drives
    included).  Placements P and C have random rotations and offsets; masses, COMs and inertias
    are random and valid.  Bodies are numbered in a random parents-first order which, when the
    tree allows it, is not depth-first.  limits=True adds random coordinate, velocity and effort
    limits (some coordinates unlimited).  Bodies "b1".., joints "j1"..."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ModelError(f"random_tree: n must be a non-negative integer, got {n!r}")
    rng = np.random.default_rng(seed)
    kinds = list(KINDS if joints is None else joints)
    if not kinds:
        raise ModelError("random_tree: joints must not be empty")
    # random recursive tree, then a random parents-first numbering, retried while depth-first
    tree_parent = [-1] + [int(rng.integers(i)) for i in range(1, n + 1)]
    children = [[] for _ in range(n + 1)]
    for i in range(1, n + 1):
        children[tree_parent[i]].append(i)
    for _attempt in range(20):
        order, ready = [0], list(children[0])
        while ready:
            node = ready.pop(int(rng.integers(len(ready))))
            order.append(node)
            ready.extend(children[node])
        new = {old: k for k, old in enumerate(order)}
        parent = [-1] + [new[tree_parent[old]] for old in order[1:]]
        if not is_depth_first(parent):
            break
    b = ModelBuilder(gravity=gravity)
    for i in range(1, n + 1):
        spec = random_joint(kinds[int(rng.integers(len(kinds)))], rng)
        P = Transform(random_rotation(rng), rng.normal(scale=0.3, size=3))
        C = Transform(random_rotation(rng), rng.normal(scale=0.3, size=3))
        m = rng.uniform(0.5, 2.0)
        Rb = random_rotation(rng)
        inertia = Rb @ box_inertia(m, *rng.uniform(0.1, 0.6, size=3)) @ Rb.T
        lims = {}
        if limits:
            lo = [None if rng.random() < 0.3 else -rng.uniform(0.5, 3.0) for _ in range(spec.nq)]
            lims = dict(q_lower=lo, q_upper=[None if x is None else rng.uniform(0.5, 3.0) for x in lo],
                        v_limit=[rng.uniform(1.0, 10.0) for _ in range(spec.nv)],
                        effort_limit=[None if rng.random() < 0.3 else rng.uniform(5.0, 100.0) for _ in range(spec.nv)])
        b.add_body(f"b{i}", parent=parent[i], joint=spec, joint_name=f"j{i}", placement=P, child_placement=C,
                   mass=m, com=rng.normal(scale=0.1, size=3), inertia=0.5 * (inertia + inertia.T), **lims)
    return b.build()


def random_states(model, n, rng=None, spread=1.0):
    """n random states (q, qd, qdd) of shapes (n, nq), (n, nv), (n, nv) for sweeps and benchmarks:
    coordinates uniform within +-spread of the neutral configuration (quaternions kept at the
    neutral unit quaternion), velocities and accelerations standard normal."""
    rng = np.random.default_rng(rng)
    q = np.tile(model.neutral(), (n, 1))
    free = np.ones(model.nq, dtype=bool)
    for _, sl in model.quaternion_blocks():
        free[sl] = False
    q[:, free] += rng.uniform(-spread, spread, (n, int(free.sum())))
    return q, rng.normal(size=(n, model.nv)), rng.normal(size=(n, model.nv))
