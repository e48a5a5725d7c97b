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


def test_a_long_compilation_says_it_is_still_going(monkeypatch, capsys):
    """A line every ``_jit.HEARTBEAT`` seconds while a compilation lasts, and none once it ends."""
    import time
    import numba
    from numba.extending import overload
    from ejce_nb import _jit
    monkeypatch.setenv("EJCE_NB_QUIET", "0")
    monkeypatch.setattr(_jit, "HEARTBEAT", 0.2)

    def slow():
        pass

    @overload(slow)
    def _slow():
        time.sleep(1.1)              # typing that takes a while
        return lambda: None

    def probe(x):
        slow()
        return x + 1.0
    probe.__module__ = "ejce_nb.algorithms.rnea"
    numba.njit(cache=False)(probe)(1.0)
    lines = capsys.readouterr().err.splitlines()
    still = [ln for ln in lines if "still compiling probe" in ln]
    assert len(still) >= 3 and lines[0].startswith("ejce_nb: compiling") and "compiled probe" in lines[-1]
    time.sleep(0.5)
    assert capsys.readouterr().err == ""          # the heartbeat stopped with the compilation


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
    Image = pytest.importorskip("PIL.Image")
    gif = tmp_path / "arm.gif"
    assert cli.main(["simulate", "arm7", "--t", "0.5", "--dt", "1e-2", "--animate", str(gif), "--fps", "10",
                     "--no-progress"]) == 0
    assert "6 frames at 10 frames/s, 0.5 s of motion played in real time" in capsys.readouterr().out
    with Image.open(gif) as im:
        assert im.n_frames == 6
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


def test_an_animation_plays_in_real_time_unless_it_says_otherwise():
    """By default the frames are the recorded states nearest to every 1/fps s (real time); all of
    them where they are recorded more sparsely (faster), and at most max_frames, then spread
    evenly (faster)."""
    from ejce_nb.sim.animate import frame_rows, playback
    t = np.arange(3001) * 1e-3
    traj = ej.Trajectory(t, np.zeros((3001, 1)), np.zeros((3001, 1)), np.zeros(3001), np.zeros(3001))
    rows = frame_rows(traj, fps=30)
    assert len(rows) == 91 and np.abs(t[rows] - np.arange(91) / 30).max() <= 0.5e-3 + 1e-12
    assert playback(traj, rows, 30) == pytest.approx((3.0, 1.0))
    capped = frame_rows(traj, fps=30, max_frames=31)
    assert len(capped) == 31 and playback(traj, capped, 30)[1] == pytest.approx(3.0)
    sparse = ej.Trajectory(t[::100], np.zeros((31, 1)), np.zeros((31, 1)), np.zeros(31), np.zeros(31))
    assert len(frame_rows(sparse, fps=30)) == 31 and playback(sparse, frame_rows(sparse, fps=30), 30)[1] == 3.0


def test_a_model_files_warning_is_printed_as_its_message(tmp_path, capsys):
    """A warning while a command runs (here an URDF link's inertia that breaks the triangle
    inequality) prints as ``ejce-nb: warning: MESSAGE``, without Python's file, line and source."""
    path = tmp_path / "bad.urdf"
    path.write_text('''<robot name="r"><link name="base"/>
<link name="arm"><inertial><mass value="1"/>
<inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="5"/></inertial></link>
<joint name="j" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 0 1"/>
<limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>''')
    assert cli.main(["info", str(path)]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err and all(ln.startswith(f"ejce-nb: warning: {path}: link 'arm'") for ln in err)
    assert "InertiaWarning" not in "\n".join(err) and "warn(" not in "\n".join(err)


def test_every_option_of_every_command_says_what_it_does(capsys):
    import re
    for cmd in ("demo", "info", "bench", "sweep", "report", "compile", "simulate", "view"):
        with pytest.raises(SystemExit):
            cli.main([cmd, "--help"])
        out = capsys.readouterr().out
        lines = out.split("options:", 1)[1].splitlines()[1:]
        for i, ln in enumerate(lines):
            if not ln.startswith("  -") or ln.startswith("  -h, --help"):
                continue
            nxt = lines[i + 1] if i + 1 < len(lines) else ""
            said = re.search(r"\S\s{2,}\S", ln.strip()) or (nxt.startswith(" " * 8) and not nxt.strip().startswith("-"))
            assert said, f"ejce-nb {cmd}: {ln.strip()} has no help text"


def test_extras_are_named_one_way_everywhere():
    """``pip install ".[extra]"`` (from the source folder, as the README installs) in the README,
    the documentation and the package's messages, and every extra named is one of pyproject's."""
    import re
    import tomllib
    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    files = [ROOT / "README.md", *(ROOT / "docs").rglob("*.md"), *(ROOT / "ejce_nb").rglob("*.py")]
    named = set()
    for f in files:
        text = f.read_text()
        assert not re.search(r"ejce_nb\[\w+\]", text), f"{f}: an extra named as ejce_nb[...]"
        named |= set(re.findall(r'"\.\[(\w+)\]"', text))
    assert named and named <= extras, named - extras


def test_a_coupled_knee_angle_is_in_radians_and_the_leg_stands_up():
    """The knee angle of an OpenSim knee (a rotation whose translations follow it by splines, the
    patella coupled to it) is an angle in rad, not a coordinate without unit; the model's gravity
    is along -y, so its stick figure has +y up."""
    pytest.importorskip("matplotlib")
    from ejce_nb.sim.plot import coordinate_series, plot_trajectory, vertical_axis
    knee = ej.load_opensim(ROOT / "data" / "knee_patella.osim")
    q = knee.neutral()[None]
    traj = ej.Trajectory(np.zeros(1), q, np.zeros((1, knee.nv)), np.zeros(1), np.zeros(1),
                         info={"coordinate_names": list(knee.coordinate_names)})
    assert [(label, unit) for label, unit, _ in coordinate_series(traj, knee)] == \
        [("hip_flexion", "rad"), ("knee_angle", "rad")]
    assert vertical_axis(knee) == ("y", 1.0)
    fig = plot_trajectory(traj, knee)
    assert "angles (rad)" in [ax.get_ylabel() for ax in fig.axes]
    assert "+y up, against gravity" in [ax for ax in fig.axes if hasattr(ax, "get_zlim")][0].get_title()
