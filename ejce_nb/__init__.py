"""ejce_nb: rigid multibody kinematics and dynamics for any joint, accelerated with Numba."""
__version__ = "0.1.0"

from .errors import ModelError, NearSingularWarning, SingularJointError, Status
from .transform import Transform
from . import joints
from .joints import fn
from . import jmath
from .model import Model
from .data import Data
from .builder import ModelBuilder
from .kinematics import forward_kinematics, joint_terms, body_jacobian, Kinematics, JointTerms
from .rnea import rnea, nonlinear_effects
from .crba import mass_matrix, forward_dynamics_crba
from .aba import aba
from .energy import kinetic_energy, potential_energy, center_of_mass
from .check import check_joint, JointReport
from .simulate import simulate, Trajectory, SimulationError, SimulationStatus
from .control import control_law, ControlLaw
from .urdf import InertiaWarning, load_urdf
from .mjcf import MJCFWarning, from_mujoco, load_mjcf
from .opensim import OpenSimWarning, load_opensim
from . import models
from .sweep import (sweep, open_sweep, SweepResult, SweepError, Sampler, Uniform, Normal, Tolerances,
                    StreamRNG)
