"""Joint specs (``ej.joints.Revolute``, ...) and their type codes."""
from .specs import (Composite, Cylindrical, Ellipsoid, Fixed, Free, Helical, JointSpec, Planar, Prismatic,
                    Revolute, Rot, Spherical, Trans, Translation, Universal, EULER_SEQUENCES,
                    from_dict)
from . import codes
from .custom import Custom, register, registered

__all__ = ["Composite", "Cylindrical", "Ellipsoid", "Fixed", "Free", "Helical", "JointSpec", "Planar",
           "Prismatic", "Revolute", "Rot", "Spherical", "Trans", "Translation", "Universal",
           "EULER_SEQUENCES", "from_dict", "codes", "Custom", "register", "registered"]
