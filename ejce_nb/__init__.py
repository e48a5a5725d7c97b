"""ejce_nb: rigid multibody kinematics and dynamics for any joint, accelerated with Numba."""
__version__ = "0.1.0"

from .errors import ModelError, SingularJointError
from .transform import Transform
from . import joints
from .joints import fn
from .model import Model
from .builder import ModelBuilder
from .kinematics import forward_kinematics, joint_terms, body_jacobian, Kinematics, JointTerms
