"""Three joints that no built-in kind describes, each written as its pose alone.

* ``ellipsoid``: a body gliding on an ellipsoid (semi-axes a, b, c), as the scapula on the
  thorax: q = (longitude, latitude, spin about the surface normal); the outboard frame sits on
  the surface with its x axis along the outward normal.
* ``cam_slider``: a follower driven by an eccentric circular cam (eccentricity e, radius R):
  q = (cam angle); the follower slides along z by e cos q + sqrt(R^2 - e^2 sin^2 q).
* ``precessing_hinge``: a hinge whose axis precesses about z with time (cone angle beta, rate w):
  q = (angle about the moving axis).

``register()`` makes them known to model files; ``data/scapula.json`` uses the first two.
"""
import ejce_nb as ej
from ejce_nb import jmath as jm


def ellipsoid_pose(q, t, p):
    a, b, c = p[0], p[1], p[2]
    cu, su = jm.cos(q[0]), jm.sin(q[0])
    cv, sv = jm.cos(q[1]), jm.sin(q[1])
    x = (a * cv * cu, b * cv * su, c * sv)
    n = jm.normalize((x[0] / (a * a), x[1] / (b * b), x[2] / (c * c)))        # outward normal
    e = jm.normalize((-a * su, b * cu, 0.0 * su))                              # along the parallel
    f = jm.cross(n, e)
    R = ((n[0], e[0], f[0]), (n[1], e[1], f[1]), (n[2], e[2], f[2]))
    return jm.matmul(R, jm.rot_x(q[2])), x


def cam_slider_pose(q, t, p):
    e, R = p[0], p[1]
    s = jm.sin(q[0])
    lift = e * jm.cos(q[0]) + jm.sqrt(R * R - e * e * s * s)
    return ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)), (0.0, 0.0, lift)


def precessing_hinge_pose(q, t, p):
    beta, w = p[0], p[1]
    sb = jm.sin(beta)
    axis = (sb * jm.cos(w * t), sb * jm.sin(w * t), jm.cos(beta) + 0.0 * t)
    return jm.rot(axis, q[0]), (0.0, 0.0, 0.0)


ellipsoid = ej.joints.Custom(ellipsoid_pose, 3, params=(0.12, 0.08, 0.16), name="ellipsoid",
                             q_range=[(-1.5, 1.5), (-1.2, 1.2), (-3.0, 3.0)])
cam_slider = ej.joints.Custom(cam_slider_pose, 1, params=(0.01, 0.03), name="cam_slider", q_range=(-3.14, 3.14))
precessing_hinge = ej.joints.Custom(precessing_hinge_pose, 1, params=(0.3, 2.0), name="precessing_hinge",
                                    q_range=(-3.0, 3.0))


def register():
    """Make the three joints known to model files (``ej.Model.from_json``)."""
    for joint in (ellipsoid, cam_slider, precessing_hinge):
        ej.joints.register(joint)
