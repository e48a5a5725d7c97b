"""The command line as a new user meets it: help, model files with user joints, URDF options,
arguments and extras checked before any work, an interrupted simulation, and the plots."""
import os
import signal
import subprocess
import sys
import threading
import _thread
from pathlib import Path

import numpy as np
import pytest

import ejce_nb as ej
from ejce_nb import cli

ROOT = Path(__file__).resolve().parent.parent
USER_JOINTS = str(ROOT / "examples" / "user_joints.py")


def test_help_opens_with_a_description(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = capsys.readouterr().out
    first = out.split("\n\n")[1]
    assert first.startswith("Rigid multibody kinematics and dynamics") and "``" not in out
    assert "simulate MODEL" in out
    with pytest.raises(SystemExit):
        cli.main(["demo", "--help"])
    out = capsys.readouterr().out
    assert "sweep" not in out.split("options")[0] or "batched kinematics and dynamics" in out


def test_info_of_a_shipped_file_with_user_joints(capsys):
    # a fresh process, where no user joint is registered (other tests of this session register them)
    res = subprocess.run([sys.executable, "-m", "ejce_nb", "info", "scapula"], capture_output=True, text=True,
                         cwd=ROOT, timeout=300)
    assert res.returncode == 2
    err = res.stderr
    assert "not registered" in err and "--joints" in err and "neither a shipped model" not in err
    assert cli.main(["info", "scapula", "--joints", USER_JOINTS]) == 0
    assert "ellipsoid" in capsys.readouterr().out
    assert cli.main(["info", str(ROOT / "data" / "scapula.json"), "--joints", USER_JOINTS]) == 0
    assert cli.main(["info", "arm7", "--joints", str(ROOT / "README.md")]) == 2
    assert "not a Python file" in capsys.readouterr().err


def test_urdf_floating_base_option(capsys):
    assert cli.main(["info", "quadruped.urdf", "--floating-base", "quaternion"]) == 0
    assert "root_joint" in capsys.readouterr().out
    assert cli.main(["simulate", "quadruped.urdf", "--floating-base", "quaternion", "--t", "0.005",
                     "--no-progress"]) == 0
    assert "nq 19" in capsys.readouterr().out
    assert cli.main(["info", "arm7", "--floating-base", "quaternion"]) == 2
    assert "applies to URDF models" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["demo", "--batch", "0"], ["bench", "--batch", "-5"],
                                  ["simulate", "arm7", "--dt", "-1"], ["simulate", "arm7", "--t", "x"],
                                  ["bench", "--threads", "0"]])
def test_bad_arguments_fail_before_any_work(argv, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    assert e.value.code == 2
    cap = capsys.readouterr()
    assert cap.out == "" and "expected a positive" in cap.err


def test_plot_without_matplotlib_is_refused_before_the_run(monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    assert cli.main(["simulate", "arm7", "--t", "1000", "--plot", str(tmp_path / "p.png")]) == 2
    cap = capsys.readouterr()
    assert "matplotlib" in cap.err and cap.out == ""


def test_demo_applies_its_batch_to_the_dynamics(capsys):
    assert cli.main(["demo", "--batch", "500"]) == 0
    out = capsys.readouterr().out
    assert "500 states" in out and "a batch of 100 on" in out


def test_interrupted_simulation_says_so_and_keeps_what_it_computed(tmp_path, capsys):
    out = tmp_path / "i.npz"
    cli.main(["simulate", "arm7", "--t", "0.01", "--no-progress"])     # compile or load first
    capsys.readouterr()
    # Ctrl-C as an interactive Python sees it: interrupt_main does nothing where the process
    # (a test worker) ignores SIGINT or leaves it to the system
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(2.0, _thread.interrupt_main)
    timer.start()
    try:
        rc = cli.main(["simulate", "arm7", "--t", "1000", "--record-every", "10", "--out", str(out),
                       "--no-progress"])
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, before)
    cap = capsys.readouterr()
    assert rc == 130, f"the interrupt was not seen (SIGINT handler before the test: {before!r})"
    assert "interrupted" in cap.err and "(stopped: interrupted)" in cap.out and "of 1000" in cap.out
    traj = ej.Trajectory.load(out)
    assert traj.status == ej.SimulationStatus.INTERRUPTED and 0 < traj.stop_time < 1000
    assert traj.t[-1] == pytest.approx(traj.stop_time) and np.all(np.isfinite(traj.q))
    assert "interrupted" in traj.message
    assert f"{len(traj.t):,} states" in cap.out


def test_plot_shows_every_coordinate_by_name_and_unit(tmp_path):
    pytest.importorskip("matplotlib")
    hum = ej.models.load("humanoid")
    traj = ej.simulate(hum, hum.neutral(), np.zeros(hum.nv), 0.05, 1e-3)
    fig = traj.plot(hum, tmp_path / "h.png")
    labels = [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]
    ylabels = [ax.get_ylabel() for ax in fig.axes]
    assert "angles (rad)" in ylabels and "lengths (m)" in ylabels
    assert "root.rotvec_x" in labels or any(lab.endswith(".rotvec_x") for lab in labels)
    n_rot = sum(lab.endswith(".rotvec_x") for lab in labels)
    coords = [lab for lab in labels if not lab.startswith(("t = ", "E - E0", "work", "rest"))]
    # every coordinate: a quaternion's four numbers become its three rotation-vector components
    assert len(coords) == hum.nq - n_rot
    assert (tmp_path / "h.png").stat().st_size > 10_000
    ax3 = [ax for ax in fig.axes if hasattr(ax, "get_zlim")][0]
    assert ax3.get_xlabel() == "x (m)"
    spans = [np.diff(ax3.get_xlim())[0], np.diff(ax3.get_ylim())[0], np.diff(ax3.get_zlim())[0]]
    assert max(spans) == pytest.approx(min(spans))
    sel = traj.plot(hum, coordinates=[hum.joint_names[1]])
    assert "coordinates shown" in sel._suptitle.get_text()


def test_plot_of_a_time_driven_model_is_an_energy_balance(tmp_path):
    pytest.importorskip("matplotlib")
    drv = ej.models.load("driven")
    traj = ej.simulate(drv, drv.neutral(), np.zeros(drv.nv), 0.2, 1e-3)
    fig = traj.plot(drv, snapshots=[0.0, 0.1, 5.0])
    titles = [ax.get_title() for ax in fig.axes]
    assert any(t.startswith("energy balance") for t in titles)
    assert "left out" in fig._suptitle.get_text()


def test_compiling_is_announced_once_with_what(monkeypatch, capsys):
    import numba
    monkeypatch.setenv("EJCE_NB_QUIET", "0")

    def probe(x):
        return x + 1.0
    probe.__module__ = "ejce_nb.algorithms.rnea"           # as a kernel of the package is
    d = numba.njit(cache=False)(probe)
    d(1.0)
    err = capsys.readouterr().err
    assert "ejce_nb: compiling" in err and "probe (ejce_nb.algorithms.rnea: Inverse dynamics" in err
    assert "compiled" in err.splitlines()[-1] and err.count("ejce_nb: compiling") == 1
    d(2.0)                                       # compiled: nothing more to say
    assert capsys.readouterr().err == ""
    monkeypatch.setenv("EJCE_NB_QUIET", "1")
    d(1)                                         # a new signature compiles, silently
    assert capsys.readouterr().err == ""
    other = numba.njit(cache=False)(lambda x: x * 2.0)   # not the package's: not announced
    monkeypatch.setenv("EJCE_NB_QUIET", "0")
    other(1.0)
    assert capsys.readouterr().err == ""


def test_animation_has_one_frame_per_chosen_state_on_equal_axes(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    Image = pytest.importorskip("PIL.Image")
    from matplotlib import animation
    from matplotlib.figure import Figure

    from ejce_nb.sim.plot import equal_axes
    model = ej.models.chain(2)
    traj = ej.simulate(model, [0.8, -0.4], [0.0, 0.0], 0.2, 1e-2)
    assert len(traj.t) == 21
    path = tmp_path / "chain.gif"
    assert traj.animate(model, path, fps=10, stride=2) == 11
    with Image.open(path) as im:
        assert im.n_frames == 11
    # a planar swing spans nothing along one axis: every axis still gets the same scale
    ax = Figure().add_subplot(projection="3d")
    equal_axes(ax, np.array([[0.0, 0.0, 0.0], [1.0, 0.0, -3.0], [0.5, 0.0, -1.0]]))
    spans = [np.diff(ax.get_xlim())[0], np.diff(ax.get_ylim())[0], np.diff(ax.get_zlim())[0]]
    assert max(spans) == pytest.approx(min(spans)) and max(spans) >= 3.0
    assert np.allclose(ax.get_box_aspect() / ax.get_box_aspect()[0], 1.0)
    with pytest.raises(ValueError, match="must end in .gif"):
        traj.animate(model, tmp_path / "chain.png")
    # a video needs ffmpeg: without it, a clear error before any frame is drawn
    monkeypatch.setattr(animation.writers, "is_available", lambda name: False)
    with pytest.raises(RuntimeError, match="ffmpeg"):
        traj.animate(model, tmp_path / "chain.mp4")
    assert not (tmp_path / "chain.mp4").exists()


def test_simulate_command_writes_an_animation(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    gif = tmp_path / "arm.gif"
    assert cli.main(["simulate", "arm7", "--t", "0.05", "--dt", "1e-2", "--animate", str(gif), "--fps", "5",
                     "--no-progress"]) == 0
    assert "6 frames" in capsys.readouterr().out and gif.stat().st_size > 0
    assert cli.main(["simulate", "arm7", "--t", "0.05", "--animate", str(tmp_path / "arm.webm")]) == 2
    assert "--animate" in capsys.readouterr().err


def test_the_demo_compiles_its_batches_in_a_second_process_on_a_cold_cache_only(tmp_path, monkeypatch):
    """``compile_elsewhere`` (the demo's second process) runs its function in another process
    where the on-disk cache is cold and there are two CPUs, and nothing where the cache is warm
    or there is one CPU."""
    from ejce_nb import _jit
    from ejce_nb._jit import compile_elsewhere

    cache = tmp_path / "cache"
    monkeypatch.setattr(_jit, "CACHE_DIR", str(cache))
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    compile_elsewhere(os.mkdir, str(tmp_path / "cold"))()
    assert (tmp_path / "cold").is_dir()
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    compile_elsewhere(os.mkdir, str(tmp_path / "one_cpu"))()
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    cache.mkdir()
    (cache / "kernel.nbi").write_bytes(b"")
    compile_elsewhere(os.mkdir, str(tmp_path / "warm"))()
    assert not (tmp_path / "one_cpu").exists() and not (tmp_path / "warm").exists()
