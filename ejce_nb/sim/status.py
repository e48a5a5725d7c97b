"""Why a simulated trajectory stopped: ``SimulationStatus`` and ``SimulationError``."""
import enum

from ..errors import SingularJointError


class SimulationStatus(enum.IntEnum):
    """Why a trajectory stopped (0: it reached t_final), an ``IntEnum``; the singular codes are
    those of ``ej.Status``.

    | code | name | meaning |
    |---|---|---|
    | 0 | ``OK`` | reached t_final |
    | 3 | ``SINGULAR_JOINT`` | a joint's Jacobian lost rank (gimbal lock) |
    | 4 | ``SINGULAR_ARTICULATED_INERTIA`` | no inertia along a joint's motion (massless subtree) |
    | 5 | ``SINGULAR_MASS_MATRIX`` | the mass matrix is singular (models with couplers) |
    | 10 | ``NONFINITE_STATE`` | q or qd became NaN or inf: the integration diverged |
    | 11 | ``NONFINITE_TORQUE`` | the control law returned NaN or inf |
    | 12 | ``ENERGY_BLOWUP`` | abs(T + V) exceeded ``max_energy`` at a recorded state |
    | 13 | ``STEP_SIZE_UNDERFLOW`` | dopri5: the step size fell below rounding of t |
    | 14 | ``INTERRUPTED`` | Ctrl-C (SIGINT) before t_final |
    | 15 | ``CONSTRAINT`` | loop models: a loop closure could not be assembled or solved |
    | 16 | ``NONFINITE_CONTROL`` | actuated models: a control (``ctrl``) of a step is NaN or inf |
    | 17 | ``ACTUATION`` | actuated models: an actuator or force element failed (its message says why) |
    """
    OK = 0
    SINGULAR_JOINT = 3                  # a joint's Jacobian lost rank (gimbal lock)
    SINGULAR_ARTICULATED_INERTIA = 4    # no inertia along a joint's motion (massless subtree)
    SINGULAR_MASS_MATRIX = 5            # (models with couplers) the mass matrix is singular
    NONFINITE_STATE = 10                # q or qd became NaN or inf: the integration diverged
    NONFINITE_TORQUE = 11               # the control law returned NaN or inf
    ENERGY_BLOWUP = 12                  # |T + V| exceeded max_energy at a recorded state
    STEP_SIZE_UNDERFLOW = 13            # dopri5: the step size fell below rounding of t
    INTERRUPTED = 14                    # the run was interrupted (Ctrl-C, SIGINT) before t_final
    CONSTRAINT = 15                     # (loop models) a loop closure could not be assembled or solved
    NONFINITE_CONTROL = 16              # (actuated models) a control of a step is NaN or inf
    ACTUATION = 17                      # (actuated models) an actuator or force element failed

    def __str__(self):
        return f"{self.name} ({int(self)})"


def as_status(code):
    """The ``SimulationStatus`` of an integer code (the integer itself for a code it does not name)."""
    try:
        return SimulationStatus(int(code))
    except ValueError:
        return int(code)


# the same codes as plain integers, for compiled code
ST_NONFINITE = int(SimulationStatus.NONFINITE_STATE)
ST_TORQUE = int(SimulationStatus.NONFINITE_TORQUE)
ST_ENERGY = int(SimulationStatus.ENERGY_BLOWUP)
ST_UNDERFLOW = int(SimulationStatus.STEP_SIZE_UNDERFLOW)
ST_INTERRUPTED = int(SimulationStatus.INTERRUPTED)
ST_CONSTRAINT = int(SimulationStatus.CONSTRAINT)
ST_CONTROL = int(SimulationStatus.NONFINITE_CONTROL)
ST_ACTUATION = int(SimulationStatus.ACTUATION)

# default energy threshold: this many times the initial max(|T|, |V|, 1 J)
ENERGY_FACTOR = 1e6


class SimulationError(SingularJointError):
    """A simulation stopped before its end (``ej.simulate`` with ``errors="raise"``); a subclass of
    ``ej.SingularJointError``, hence of ``ValueError``.  ``partial`` holds the trajectory up to
    the stop (one trajectory: its records up to the stop, then the last good state when it lies
    after them; a batch: the whole batch, NaN after each stop, statuses in
    ``partial.status``), ``status`` the ``SimulationStatus``, ``time`` and ``joint`` (a name or
    None) where and at which joint it happened."""

    def __init__(self, message, partial, status=None, time=None, joint=None):
        super().__init__(message)
        self.partial = partial
        self.status = status
        self.time = time
        self.joint = joint
