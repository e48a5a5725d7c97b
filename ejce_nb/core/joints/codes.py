"""Joint type codes and the codes of the parameter tables (shared by specs and kernels)."""

FIXED = 0
REVOLUTE = 1
PRISMATIC = 2
HELICAL = 3
CYLINDRICAL = 4
UNIVERSAL = 5
PLANAR = 6
TRANSLATION = 7
SPHERICAL = 8
FREE = 9
COMPOSITE = 10
CUSTOM = 11
ELLIPSOID = 12

NAMES = {
    FIXED: "Fixed", REVOLUTE: "Revolute", PRISMATIC: "Prismatic", HELICAL: "Helical",
    CYLINDRICAL: "Cylindrical", UNIVERSAL: "Universal", PLANAR: "Planar",
    TRANSLATION: "Translation", SPHERICAL: "Spherical", FREE: "Free", COMPOSITE: "Composite",
    CUSTOM: "Custom", ELLIPSOID: "Ellipsoid",
}

# rotation parameterisations of Spherical / Free (first entry of their parameter block)
ROT_EULER = 0
ROT_QUATERNION = 1
ROT_ROTVEC = 2
ROT_GIBBS = 3
ROT_MRP = 4

# elementary motions of a Composite joint
MOTION_ROT = 0
MOTION_TRANS = 1

# coordinate-function terms of a Composite joint
FN_LINEAR = 0
FN_POLY = 1
FN_SPLINE = 2
FN_TIMEPOLY = 3
FN_HARMONIC = 4
FN_MULTIPOLY = 5

# largest number of velocity variables of one joint (length of the jets' gradient part)
MAX_NV = 6
MAX_NQ = 7
