"""Exceptions of the package and the per-sample status codes of batched calls."""
import enum


class ModelError(ValueError):
    """A model description (builder call, joint spec, JSON, URDF, MJCF or OpenSim file) is
    invalid; the message names the culprit (the body, joint or element, and the file and the path
    in it).  A ``ValueError``."""


class SingularJointError(ValueError):
    """A joint Jacobian lost rank (gimbal lock), a subtree is massless or the mass matrix is
    singular: the dynamics are undefined (``ej.Status`` codes 3-5 under ``errors="raise"``).  A
    ``ValueError``.

    The message names the joint, its coordinates and how far it is from the lock, and for a
    batch every singular sample (up to ten in the message).  Attributes: ``joint`` (name),
    ``samples`` (indices, None for one state) and ``joints`` (the joint of each)."""


class NearSingularWarning(UserWarning):
    """Forward dynamics were computed, but a joint's Jacobian is close to losing rank (near gimbal
    lock, ``ej.Status.NEAR_SINGULAR_JOINT``): its velocity variables are nearly dependent and the
    accelerations can be very large.  A ``UserWarning`` saying how many samples are near a lock;
    the result is returned."""


class ClosureWarning(UserWarning):
    """A model's loop closures could not be assembled where asked (``Model.neutral()`` of a loop
    model that closes nowhere near its default coordinates), or a function of the open tree was
    called on a model with loops (``ej.rnea``, ``ej.aba``, ``ej.mass_matrix``: the tree's
    quantities, not the mechanism's)."""


class Status(enum.IntEnum):
    """Per-sample outcome of a call with ``errors="flag"`` (an ``IntEnum``).

    | code | name | meaning | reported by |
    |---|---|---|---|
    | 0 | ``OK`` | computed | all |
    | 1 | ``NONFINITE_INPUT`` | NaN or inf in q, qd, qdd, tau or t | all |
    | 2 | ``QUATERNION_NOT_UNIT`` | a quaternion block further than 1e-3 from unit norm (closer ones are used normalised) | all |
    | 3 | ``SINGULAR_JOINT`` | a joint Jacobian loses rank (at a gimbal lock, or within about 1e-6 rad of it) | ``aba``, ``forward_dynamics_crba`` |
    | 4 | ``SINGULAR_ARTICULATED_INERTIA`` | no inertia along a joint's motion (massless subtree) | ``aba`` |
    | 5 | ``SINGULAR_MASS_MATRIX`` | the mass matrix is not positive definite | ``forward_dynamics_crba``, ``aba`` on models with couplers |
    | 6 | ``NEAR_SINGULAR_JOINT`` | computed (the row is not NaN), but a joint Jacobian is within 1e-4 of losing rank | ``aba``, ``forward_dynamics_crba`` |
    | 7 | ``LOOP_NOT_CLOSED`` | no configuration closes the loops at the sampled independent coordinates (the outputs' rows NaN) | ``ej.sweep`` of a model with loop closures |

    Every batched public function takes ``errors="raise"`` (the default) or ``errors="flag"``,
    which returns ``(result, status)``: the good samples computed exactly as they would be
    without the bad ones, the rows of codes 1-5 NaN, a row with code 6 the computed result, and
    ``status`` an integer array (B,).  For one state (no batch axis), ``errors="flag"`` returns
    ``(result, code)`` with ``code`` an int; the result is meaningful only where the code is 0
    or 6.

    With ``errors="raise"`` the first bad sample raises: codes 1 and 2 a ``ValueError`` naming the
    array, the index or quaternion block and (in a batch) the sample; codes 3-5
    ``ej.SingularJointError``.  Code 6 does not raise: it issues an ``ej.NearSingularWarning``
    and returns the result.  Always raised, whatever ``errors`` is: wrong shapes or dtypes, a
    ``t`` that is not finite when given as a float, NaN or inf in ``f_ext``, an unknown
    ``errors`` value.  The contract holds on every call, whichever internal path serves it (the
    first call of a process and the later ones take different paths): ``errors="flag"`` always
    returns the pair, ``errors="raise"`` never does, and an unknown ``errors`` is refused on
    every call.  ``ej.SimulationStatus`` shares codes 0 and 3-5."""
    OK = 0
    NONFINITE_INPUT = 1          # NaN or inf in q, qd, qdd, tau or t
    QUATERNION_NOT_UNIT = 2      # a quaternion block further than 1e-3 from unit norm
    SINGULAR_JOINT = 3           # a joint Jacobian loses rank (at or near a gimbal lock)
    SINGULAR_ARTICULATED_INERTIA = 4   # no inertia along a joint's motion (massless subtree)
    SINGULAR_MASS_MATRIX = 5     # the mass matrix is not positive definite
    NEAR_SINGULAR_JOINT = 6      # computed, but a joint Jacobian is within 1e-4 of losing rank
    LOOP_NOT_CLOSED = 7          # (sweeps of loop models) no state closes the loops at the sampled coordinates


# a state array of the wrong length: never a per-sample outcome (the whole call is refused)
BAD_SHAPE = 99
