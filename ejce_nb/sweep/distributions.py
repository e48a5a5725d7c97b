"""What a sweep's inputs are drawn from: ``Uniform`` and ``Normal`` (for q, laid on the
configuration manifold), ``Tolerances`` (model parameters), and ``Sampler``, which input comes
from where."""
import numpy as np

INPUTS = ("q", "qd", "qdd", "tau", "t")


def vector(x, n, what, allow_nan=False):
    try:
        a = np.array(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a number or {n} numbers, got {x!r}") from None
    if a.ndim == 0:
        a = np.full(n, float(a))
    if a.shape != (n,):
        raise ValueError(f"{what} must be a number or an array of shape ({n},), got shape {a.shape}")
    bad = np.isinf(a) | (np.isnan(a) if not allow_nan else False)
    if np.any(bad):
        raise ValueError(f"{what} must be finite, got {a.tolist()}")
    return a


def json_vector(a):
    a = np.asarray(a, dtype=float)
    return [None if np.isnan(x) else float(x) for x in a.ravel()]


class Uniform:
    """Uniform distribution.

    For ``q`` (the default): each coordinate uniform between ``low`` and ``high`` (``None`` or
    NaN entries: the model's joint limits; coordinates without limits: angles in [-pi, pi),
    lengths (prismatic, planar and free-joint translations) in [-length, length)); unit
    quaternions uniform on SO(3); rotation vectors, Gibbs and modified Rodrigues vectors without
    limits: those of a rotation uniform on SO(3) (with limits: uniform in the box, a missing
    bound being -pi or pi for rotation vectors, -1 or 1 for the others); the middle angle of every
    Euler-angle joint kept at least ``gimbal_margin`` radians from its gimbal lock (|cos| >=
    sin(margin) for Tait-Bryan sequences like ZYX, |sin| >= sin(margin) for proper ones like ZXZ),
    uniform on what remains.  Composite joints' coordinates count as angles.

    For ``qd``, ``qdd``, ``tau`` or ``t``: uniform between ``low`` and ``high`` (both required)."""

    def __init__(self, low=None, high=None, *, length=1.0, gimbal_margin=0.1):
        self.low, self.high = low, high
        self.length = float(length)
        self.gimbal_margin = float(gimbal_margin)
        if not (np.isfinite(self.length) and self.length > 0):
            raise ValueError(f"Uniform length must be positive, got {length!r}")
        if not (np.isfinite(self.gimbal_margin) and 0 <= self.gimbal_margin < np.pi / 4):
            raise ValueError(f"Uniform gimbal_margin must be in [0, pi/4), got {gimbal_margin!r}")

    def __repr__(self):
        return (f"Uniform(low={self.low!r}, high={self.high!r}, length={self.length}, "
                f"gimbal_margin={self.gimbal_margin})")


class Normal:
    """Normal distribution: ``mean + std * z`` with z standard normal per component.

    For ``q``: Gaussian around the configuration ``mean`` (default ``model.neutral()``):
    ``q = mean (+) delta`` with ``delta`` normal of standard deviations ``std`` (a number or one
    per velocity variable, (nv,)): added to each coordinate, and for a unit-quaternion block the
    rotation ``exp(delta)`` (a rotation vector in C axes) applied on the right of the mean's
    quaternion.  Limits are not enforced.  For the other inputs ``mean`` defaults to 0."""

    def __init__(self, mean=None, std=1.0):
        self.mean, self.std = mean, std

    def __repr__(self):
        return f"Normal(mean={self.mean!r}, std={self.std!r})"


class Tolerances:
    """Model-parameter sampling for tolerance studies: every ``group`` consecutive samples share
    one perturbed model (group k: samples k*group .. (k+1)*group - 1; each its own state).

    * ``mass``: relative standard deviation of each body's mass, log-normal
      (``m' = m exp(mass z)``), the rotational inertia scaled with it (a density tolerance);
    * ``com``: standard deviation (model units) of each coordinate of the centre of mass;
    * ``length``: relative standard deviation of each joint placement's offset from its parent
      (the link length), log-normal: ``c' = c exp(length z)``;
    * ``offset``: standard deviation of each coordinate of the joint placement offset;
    * ``angle``: standard deviation (rad) of a rotation of the joint placement, ``E' = E exp(phi)``.

    ``bodies``: names (or glob patterns) of the bodies whose parameters vary, default all.  The
    sampled parameters are stored as inputs: ``mass`` (n, k), ``com`` (n, k, 3), ``placement``
    (n, k, 3: the placement translations) and ``placement_angle`` (n, k, 3: phi), k bodies, for the
    fields that vary; ``SweepResult.sample_model(i)`` rebuilds sample i's model from them.  A model
    is built per group (about a millisecond each for a 7-DOF arm): prefer groups of hundreds of
    states or more for large sweeps."""

    FIELDS = ("mass", "com", "length", "offset", "angle")

    def __init__(self, mass=0.0, com=0.0, length=0.0, offset=0.0, angle=0.0, bodies=None, group=1):
        vals = {}
        for name, v in zip(self.FIELDS, (mass, com, length, offset, angle)):
            try:
                v = float(v)
            except (TypeError, ValueError):
                raise ValueError(f"Tolerances {name} must be a number, got {v!r}") from None
            if not (np.isfinite(v) and v >= 0):
                raise ValueError(f"Tolerances {name} must be finite and >= 0, got {v!r}")
            vals[name] = v
        if not any(vals.values()):
            raise ValueError("Tolerances: every standard deviation is zero; nothing would vary")
        self.__dict__.update(vals)
        if isinstance(group, bool) or not isinstance(group, (int, np.integer)) or group < 1:
            raise ValueError(f"Tolerances group must be a positive integer, got {group!r}")
        self.group = int(group)
        self.bodies = None if bodies is None else ([bodies] if isinstance(bodies, str) else list(bodies))

    def __repr__(self):
        f = ", ".join(f"{k}={getattr(self, k)}" for k in self.FIELDS if getattr(self, k))
        return f"Tolerances({f}, bodies={self.bodies!r}, group={self.group})"


class Sampler:
    """Where each input of a sweep comes from.

    Each of ``q``, ``qd``, ``qdd``, ``tau`` and ``t`` is ``None`` (the default: ``Uniform()`` for
    q, standard normal for qd, qdd and tau, the sweep's ``t`` for t), a ``Uniform`` or ``Normal``,
    an array (or array-like, e.g. a zarr array or memmap) of n rows whose rows [a, b) are read for
    each chunk, or a function ``f(rng, size)`` returning ``size`` rows, where ``rng`` is a
    ``StreamRNG`` of that chunk (row i of every draw belongs to sample ``rng.indices[i]``).
    ``tolerances``: a ``Tolerances`` for model-parameter sampling.  A sampled ``t`` is stored as
    the input ``"t"`` (n,).  Giving an input no quantity uses is a ``ValueError``."""

    def __init__(self, q=None, qd=None, qdd=None, tau=None, t=None, tolerances=None):
        self.sources = {"q": q, "qd": qd, "qdd": qdd, "tau": tau, "t": t}
        if tolerances is not None and not isinstance(tolerances, Tolerances):
            raise ValueError(f"tolerances must be an ej.Tolerances, got {tolerances!r}")
        self.tolerances = tolerances

    def __repr__(self):
        given = ", ".join(f"{k}={v!r}" for k, v in self.sources.items() if v is not None)
        return f"Sampler({given}{', ' if given and self.tolerances else ''}" \
               f"{'tolerances=' + repr(self.tolerances) if self.tolerances else ''})"


def as_sampler(sampler):
    """``sweep(sampler=...)``: a Sampler, a dict of its arguments, a Tolerances, or a q source."""
    if sampler is None:
        return Sampler()
    if isinstance(sampler, Sampler):
        return sampler
    if isinstance(sampler, Tolerances):
        return Sampler(tolerances=sampler)
    if isinstance(sampler, dict):
        unknown = set(sampler) - set(INPUTS) - {"tolerances"}
        if unknown:
            raise ValueError(f"sampler dict has unknown keys {sorted(unknown)}; expected some of "
                             f"{list(INPUTS) + ['tolerances']}")
        return Sampler(**sampler)
    return Sampler(q=sampler)

