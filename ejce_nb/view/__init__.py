"""A 3-D viewer of models and trajectories in the browser, with Viser (the ``view`` extra:
``pip install ".[view]"``): ``ej.view`` and ``ejce-nb view MODEL [--traj FILE]``.

The viewer draws every body's frame, a stick figure (parent origin to child origin, as
``Trajectory.plot`` and ``Trajectory.animate`` draw it) and, where the model's file has it, the
bodies' visual geometry:

* URDF: each link's ``<visual>`` elements (``box``, ``cylinder``, ``sphere`` and ``mesh`` files
  that trimesh reads: STL, OBJ, PLY, ...; ``package://`` names are looked up beside the file and in
  the folders above it), with their material colours;
* MJCF: MuJoCo's compiled geoms of groups 0-2 (planes, spheres, capsules, ellipsoids, cylinders,
  boxes and meshes, with their colours; needs ``mujoco``);
* OpenSim: the bodies' ``attached_geometry`` (``Brick``, ``Sphere``, ``Cylinder``,
  ``Ellipsoid`` and ``Mesh`` files: ASCII ``.vtp`` and what trimesh reads), looked up beside the
  file and in its ``Geometry`` folder.

Over a trajectory it shows a time slider, a play button and, for a batch, the sample to show;
without one, a slider per coordinate (and for the time, on rheonomic models).  The server runs in
background threads of the calling process; the page is ``viewer.url``: over SSH forward the port
(``ssh -L 8080:localhost:8080 host``), and in a notebook the returned ``Viewer`` shows the page in
the cell.

The package: ``geometry`` (``Visual``, primitives, mesh files), ``readers`` (the geometry of URDF,
MJCF and OpenSim files: ``visual_geometry``), ``viewer`` (the server and its controls:
``Viewer``, ``view``), ``chromium`` (screenshots of the page with headless Chromium) and
``command`` (``ejce-nb view``).
"""
import os
import sys as _sys

from .chromium import find_chromium, screenshot
from .command import add_parser, cli_view, view_command
from .geometry import Visual
from .readers import visual_geometry
from .viewer import Viewer, view

__all__ = ["view", "Viewer", "Visual", "visual_geometry", "screenshot", "find_chromium", "add_parser",
           "view_command", "cli_view"]


class _CallableModule(type(os)):
    """``ejce_nb.view`` is both this module and the function ``view``: importing the module sets
    the package's attribute ``view`` to it, and it must stay callable as ``ej.view(model)``."""

    def __call__(self, model, traj=None, **options):
        return view(model, traj, **options)


_sys.modules[__name__].__class__ = _CallableModule
