"""Make the pictures of the documentation site (docs/images/) with the package's own plotting
functions, the sweep report and the viewer (a screenshot by headless Chromium).

    python docs/make_pictures.py            # needs the plot, sweep and view extras, and chromium
"""
import os
import shutil
import sys
import tempfile

import numpy as np

import ejce_nb as ej

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "images")


def shrink(path, colors=256):
    """Rewrite a PNG with a palette of ``colors`` (under half the size of the sweep's figure)."""
    from PIL import Image
    Image.open(path).convert("RGB").quantize(colors=colors).save(path, optimize=True)


def simulation_plot():
    arm = ej.models.load("arm7")
    q0 = np.array([0.5, 0.3, 0.0, -1.5, 0.0, 1.5, 0.0])
    traj = ej.simulate(arm, q0, np.zeros(arm.nv), 2.0, 1e-3, limits=False)    # conservative: the drift is shown
    path = os.path.join(OUT, "simulate_arm7.png")
    traj.plot(arm, path, snapshots=[0.0, 1.0, 2.0])


def animation():
    pendulum = ej.models.chain(3)
    traj = ej.simulate(pendulum, [1.0, -0.5, 0.3], np.zeros(3), 2.0, 1e-2)
    traj.animate(pendulum, os.path.join(OUT, "pendulum.gif"), fps=20, stride=4, dpi=50)


def sweep_report():
    work = tempfile.mkdtemp()
    try:
        model = ej.models.load("arm7")
        res = ej.sweep(model, 20_000, ["rnea", "aba", "forward_kinematics:link8"], f"{work}/arm7.sweep",
                       chunk_size=10_000, progress=False)
        path = os.path.join(OUT, "sweep_arm7.png")
        res.plot(path)
        shrink(path, 256)
    finally:
        shutil.rmtree(work)


def viewer_pictures():
    arm = ej.models.load("arm7")
    v = ej.view(arm, port=0, q=np.array([0.5, 0.3, 0.0, -1.5, 0.0, 1.5, 0.0]))
    try:
        v.screenshot(os.path.join(OUT, "viewer_arm7.png"), size=(1200, 560))
    finally:
        v.close()
    cart = ej.view("cartpole.xml", port=0)
    try:
        cart.screenshot(os.path.join(OUT, "viewer_cartpole.png"), size=(1200, 560))
    finally:
        cart.close()


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    which = sys.argv[1:] or ["simulate", "animate", "sweep", "view"]
    if "simulate" in which:
        simulation_plot()
    if "animate" in which:
        animation()
    if "sweep" in which:
        sweep_report()
    if "view" in which:
        viewer_pictures()
    for name in sorted(os.listdir(OUT)):
        print(f"{name}: {os.path.getsize(os.path.join(OUT, name)) / 1e3:.0f} kB")
