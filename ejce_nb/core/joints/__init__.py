"""Joint specs (``ej.joints.Revolute``, ...) and their type codes.

A joint gives the pose of its outboard frame C (fixed on the child body) in its inboard frame P
(fixed on the parent): the rotation R(q, t) (C axes -> P axes) and the origin r(q, t) of C in P
axes; every joint acts from P to C.  Axes are unit vectors in the joint frames (a vector further
than 1e-6 from unit norm is an ``ej.ModelError``).  A joint's slices of q and v follow the order
its spec states; its velocities are its coordinate rates, except for a unit quaternion (nq 4,
nv 3), whose velocity is the relative angular velocity in C axes.

| kind | q | nq, nv |
|---|---|---|
| ``Revolute(axis)`` | angle | 1, 1 |
| ``Prismatic(axis)`` | slide | 1, 1 |
| ``Helical(axis, pitch)`` | angle (translation = pitch x angle) | 1, 1 |
| ``Cylindrical(axis)`` | [angle, slide] | 2, 2 |
| ``Universal(axis1, axis2)`` | angle about axis1, then about the rotated axis2 | 2, 2 |
| ``Planar()`` | [x, y, angle about z] | 3, 3 |
| ``Translation()`` | [x, y, z] in P axes | 3, 3 |
| ``Fixed()`` | none | 0, 0 |
| ``Spherical(param)`` | three Euler angles (24 conventions), a quaternion, a rotation vector, a Gibbs vector or MRPs | 3 or 4, 3 |
| ``Free(param)`` | [x, y, z] in P axes, then the rotation as for ``Spherical`` | 6 or 7, 6 |
| ``Ellipsoid(radii)`` | body-fixed X-Y-Z angles | 3, 3 |
| ``Composite(motions, nq)`` | nq coordinates driving a product of ``Rot`` / ``Trans`` motions | nq, nq |
| ``Custom(pose, nq, ...)`` | a user-defined pose function of nq coordinates | nq, nq |
"""
from .specs import (Composite, Cylindrical, Ellipsoid, Fixed, Free, Helical, JointSpec, Planar, Prismatic,
                    Revolute, Rot, Spherical, Trans, Translation, Universal, EULER_SEQUENCES,
                    from_dict)
from . import codes
from .custom import Custom, register, registered

__all__ = ["Composite", "Cylindrical", "Ellipsoid", "Fixed", "Free", "Helical", "JointSpec", "Planar",
           "Prismatic", "Revolute", "Rot", "Spherical", "Trans", "Translation", "Universal",
           "EULER_SEQUENCES", "from_dict", "codes", "Custom", "register", "registered"]
