"""ejce_nb: rigid multibody kinematics and dynamics for any joint, accelerated with Numba."""
import sys as _sys

from ._version import __version__
from .errors import ClosureWarning, ModelError, NearSingularWarning, SingularJointError, Status
from .core.transform import Transform
from .core import joints
from .core.joints import fn
from .core import jmath
from .model.model import Model
from .model.data import Data
from .model.builder import ModelBuilder
from .io import json as _json  # noqa: F401  (the JSON form: Model.to_json, Model.from_json)
from .algorithms.kinematics import Kinematics, JointTerms
from .calls.public import (forward_kinematics, joint_terms, body_jacobian, rnea, nonlinear_effects, mass_matrix,
                             forward_dynamics_crba, aba, kinetic_energy, potential_energy, center_of_mass, evaluate)
from .algorithms.loops.constrained import (constrained_dynamics, constrained_inverse_dynamics, loop_terms,
                                     ConstrainedDynamics, ConstraintError, LoopTerms)
from .algorithms.loops.assembly import assemble, project_velocity
from .algorithms.derivatives import rnea_derivatives, aba_derivatives, tangent_map
from .algorithms.linearize import linearize, LinearSystem
from .algorithms.frames import frame_jacobian, frame_jacobian_dot_v, frame_pose, com_jacobian
from .check import check_joint, JointReport
from .actuation.public import actuation, forward_dynamics, ActuationResult
from .actuation.tables import Actuation
from .sim.driver import simulate
from .actuation.rollout import rollout, rollout_dask, Rollout
from .sim.trajectory import Trajectory
from .sim.status import SimulationError, SimulationStatus
from .sim.control import control_law, ControlLaw
from .io.urdf import InertiaWarning, load_urdf
from .io.mjcf import MJCFWarning, from_mujoco, load_mjcf
from .io.opensim import OpenSimWarning, load_opensim
from .io import zoo as models
from .sweep import (sweep, open_sweep, SweepResult, SweepError, Sampler, Uniform, Normal, Tolerances,
                    StreamRNG)

# The public module names (ej.joints, ej.joints.fn, ej.models), where they differ from the file that holds them.
_sys.modules[__name__ + ".joints"] = joints
_sys.modules[__name__ + ".joints.fn"] = fn
_sys.modules[__name__ + ".models"] = models


def view(model, traj=None, **options):
    """Show a model (and a trajectory) in 3-D in the browser: ``ejce_nb.view.view`` (needs the
    ``view`` extra, Viser, imported only here)."""
    from .view import view as _view
    return _view(model, traj, **options)
