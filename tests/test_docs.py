"""The documentation site and the viewer.

* Every ```python block of the site's pages (docs/**/*.md) and of the docstrings the reference
  shows (ejce_nb/**/*.py) runs as written, each alone in a fresh interpreter and directory, as
  tests/test_readme.py runs the README's.
* Every public name of ``ejce_nb`` (what ejce_nb/__init__.py exports) has a docstring and a
  ``::: ejce_nb.NAME`` entry on a reference page (docs/reference/*.md), and so has every member
  of ``ej.joints``, ``ej.fn`` and ``ej.jmath`` that users write models with.
* The site builds with ``mkdocs build --strict`` (no warning: every link and page resolves, every
  reference page's names exist), offline.
* The viewer (``ej.view``, ``ejce-nb view``): the geometry of URDF, MJCF and OpenSim files, body
  frames that follow the kinematics, and a page that headless Chromium shows with the model on it,
  alone and as a notebook shows it, in the inline frame of the viewer's ``_repr_html_`` (skipped
  where no Chromium is installed: ``apt-get install chromium``).
"""
import argparse
import ast
import asyncio
import inspect
import os
import textwrap
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ejce_nb as ej
from ejce_nb.view import add_parser, cli_view, find_chromium, screenshot, view_command, visual_geometry

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = sorted(p for p in DOCS.rglob("*.md"))
SOURCES = sorted((ROOT / "ejce_nb").rglob("*.py"))      # their docstrings are the reference pages


def python_blocks():
    """(file, first line number, code) of every ```python block of the site's pages and of the
    package's docstrings (indented with them: dedented here)."""
    out = []
    for page in PAGES + SOURCES:
        text = page.read_text()
        for m in re.finditer(r"^( *)```python\n(.*?)^\1```$", text, re.S | re.M):
            out.append((page, text.count("\n", 0, m.start(2)) + 1, textwrap.dedent(m.group(2))))
    return out


BLOCKS = python_blocks()


def test_every_fence_is_read():
    fences = sum(len(re.findall(r"^ *```python\s*$", p.read_text(), re.M)) for p in PAGES + SOURCES)
    assert len(BLOCKS) == fences >= 11
    assert any(p.suffix == ".py" for p, _, _ in BLOCKS)


def _env(tmp):
    paths = [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return dict(os.environ, TMPDIR=str(tmp), EJCE_NB_QUIET="1", MPLBACKEND="Agg", PYTHONPATH=os.pathsep.join(paths))


@pytest.mark.parametrize("page, line, code", BLOCKS,
                         ids=[f"{p.relative_to(DOCS if p.suffix == '.md' else ROOT).as_posix()}:{line}"
                              for p, line, _ in BLOCKS])
def test_docs_block_runs_alone(page, line, code, tmp_path):
    if "ej.view(" in code:
        pytest.importorskip("viser", reason="the viewer's example needs the view extra (viser)")
    work, tmp = tmp_path / "cwd", tmp_path / "tmp"
    work.mkdir()
    tmp.mkdir()
    script = tmp_path / "block.py"
    script.write_text("\n" * (line - 1) + code)       # tracebacks point at the page's own lines
    r = subprocess.run([sys.executable, str(script)], cwd=work, env=_env(tmp), capture_output=True, text=True,
                       timeout=900)
    where = f"{page.relative_to(ROOT)} block at line {line}"
    assert r.returncode == 0, f"{where} failed alone:\n{r.stderr[-3000:]}"
    assert sorted(p.name for p in tmp.iterdir()) == [], f"{where} left files in TMPDIR"
    written = sorted(p.name for p in work.iterdir())
    assert written in ([], ["my_arm.json"]), written


def test_site_builds_strict(tmp_path):
    pytest.importorskip("mkdocs", reason="the site needs the docs extra (mkdocs, mkdocs-material, mkdocstrings)")
    pytest.importorskip("mkdocstrings_handlers.python", reason="the reference needs mkdocstrings[python]")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-4000:]
    site = tmp_path / "site"
    for page in ("index.html", "guide/viewer/index.html", "reference/dynamics/index.html", "API/index.html"):
        assert (site / page).is_file(), page
    ref = (site / "reference/dynamics/index.html").read_text()
    assert "rnea" in ref and "aba" in ref
    # every public name has its heading, with the text of its docstring, in the generated reference
    html = "".join(p.read_text() for p in (site / "reference").rglob("*.html"))
    ids = set(re.findall(r'id="(ejce_nb\.[^"]+)"', html))
    missing = [n for n in public_names() if not any(i == f"ejce_nb.{n}" or i.startswith(f"ejce_nb.{n}.") for i in ids)]
    assert not missing, f"not in the generated reference: {missing}"
    assert "nq, nv" in html and "NONFINITE_INPUT" in html and "Gauss-Newton" in html


def test_pictures_are_on_the_site_and_small():
    images = DOCS / "images"
    used = set()
    for page in PAGES:
        used |= {Path(m).name for m in re.findall(r"\]\(([^)]*images/[^)]+)\)", page.read_text())}
    readme = (ROOT / "README.md").read_text()
    used |= {Path(m).name for m in re.findall(r"\]\((docs/images/[^)]+)\)", readme)}
    assert {"simulate_arm7.png", "sweep_arm7.png", "pendulum.gif", "viewer_arm7.png"} <= used
    for name in used:
        assert (images / name).is_file(), name
        assert (images / name).stat().st_size < 400_000, name


# ---------------------------------------------------------------------------- the reference
def public_names():
    """The public names of ``ejce_nb``: those ejce_nb/__init__.py binds (imports, definitions),
    less the private ones (a leading underscore)."""
    tree = ast.parse((ROOT / "ejce_nb" / "__init__.py").read_text())
    names = []
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names += [a.asname or a.name for a in node.names]
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names += [t.id for t in node.targets if isinstance(t, ast.Name)]
    return sorted({n for n in names if not n.startswith("_")})


def reference_entries():
    """{``ejce_nb.X`` of each ``::: ejce_nb.X`` directive of the reference pages: the names its
    ``members:`` option lists (empty: none listed)}."""
    out = {}
    for page in sorted((DOCS / "reference").glob("*.md")):
        text = page.read_text()
        for m in re.finditer(r"^::: (\S+)\n((?:    .*\n)*)", text, re.M):
            members = re.search(r"members: \[(.*?)\]", m.group(2))
            out[m.group(1)] = [x.strip() for x in members.group(1).split(",")] if members else []
    return out


def _user_members(name, module):
    """The members of the module ``ej.<name>`` that users write models with."""
    if name == "joints":          # every joint kind, the motions of composite joints, user joints
        return set(module.__all__) - {"JointSpec", "EULER_SEQUENCES", "from_dict", "codes"}
    if name == "fn":              # every coordinate function
        return {n for n, o in vars(module).items() if inspect.isclass(o) and issubclass(o, module.Function)
                and o is not module.Function and o.__module__ == module.__name__}
    if name == "jmath":           # the math of pose functions, defined there or in core.spatial
        return {n for n, o in vars(module).items() if not n.startswith("_") and callable(o)
                and getattr(o, "__module__", "") in (module.__name__, "ejce_nb.core.spatial")}
    return set()


def test_every_public_name_has_a_docstring_and_a_reference_entry():
    names = public_names()
    assert len(names) >= 60 and {"rnea", "Model", "joints", "models", "view"} <= set(names)
    entries = reference_entries()
    undocumented, unlisted = [], []
    for name in names:
        obj = getattr(ej, name)
        if not (inspect.getdoc(obj) or "").strip():
            undocumented.append(name)
        if not any(e == f"ejce_nb.{name}" or e.startswith(f"ejce_nb.{name}.") for e in entries):
            unlisted.append(name)
        if inspect.ismodule(obj) and name != "view":
            listed = entries.get(f"ejce_nb.{name}", [])
            unlisted += [f"{name}.{m}" for m in sorted(_user_members(name, obj) - set(listed))]
            undocumented += [f"{name}.{m}" for m in listed if not (inspect.getdoc(getattr(obj, m)) or "").strip()]
    assert not undocumented, f"public names without a docstring: {undocumented}"
    assert not unlisted, f"public names missing from the reference (docs/reference/*.md): {unlisted}"


# ---------------------------------------------------------------------------- the viewer
URDF = """<robot name="lamp">
  <material name="orange"><color rgba="1.0 0.45 0.0 1"/></material>
  <link name="base">
    <visual><origin xyz="0 0 0.05"/><geometry><box size="0.4 0.4 0.1"/></geometry><material name="orange"/></visual>
  </link>
  <link name="arm">
    <inertial><mass value="1"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial>
    <visual><origin xyz="0 0 0.25"/><geometry><cylinder radius="0.04" length="0.5"/></geometry>
      <material name="orange"/></visual>
  </link>
  <link name="head">
    <inertial><mass value="0.5"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial>
    <visual><geometry><sphere radius="0.08"/></geometry><material name="orange"/></visual>
    <visual><origin xyz="0.1 0 0" rpy="0 1.5708 0"/><geometry><mesh filename="package://lamp/meshes/shade.stl"
      scale="1 1 1"/></geometry><material><color rgba="0.9 0.4 0.0 1"/></material></visual>
  </link>
  <joint name="swing" type="revolute"><parent link="base"/><child link="arm"/><origin xyz="0 0 0.1"/>
    <axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <joint name="nod" type="revolute"><parent link="arm"/><child link="head"/><origin xyz="0 0 0.5"/>
    <axis xyz="0 1 0"/><limit lower="-1.5" upper="1.5" effort="1" velocity="1"/></joint>
</robot>
"""


@pytest.fixture(scope="module")
def lamp(tmp_path_factory):
    """A URDF lamp whose links carry a box, a cylinder, a sphere and an STL mesh (written here)."""
    pytest.importorskip("viser", reason="the viewer needs the view extra (viser, trimesh)")
    trimesh = pytest.importorskip("trimesh", reason="the viewer needs the view extra (viser, trimesh)")
    d = tmp_path_factory.mktemp("lamp")
    (d / "meshes").mkdir()
    trimesh.creation.cone(radius=0.12, height=0.15).export(d / "meshes" / "shade.stl")
    path = d / "lamp.urdf"
    path.write_text(URDF)
    return path


def _viewer_poses(v):
    return (np.array([fr.position for fr in v._frames]), np.array([fr.wxyz for fr in v._frames]))


def test_viewer_draws_urdf_geometry_and_follows_the_kinematics(lamp):
    model = ej.load_urdf(str(lamp))
    visuals, notes = visual_geometry(model, lamp)
    assert notes == []
    assert [v.kind for v in visuals] == ["box", "cylinder", "sphere", "mesh"]
    assert [model.body_names[v.body] for v in visuals] == ["base", "arm", "head", "head"]
    assert visuals[0].color == (255, 115, 0)
    assert np.allclose(visuals[0].vertices.mean(axis=0), (0, 0, 0.05))      # the visual's origin, body frame
    # a trajectory: the frames follow forward_kinematics row by row
    T = 5
    q = np.stack([np.linspace(0, 1.0, T), np.linspace(0, -0.8, T)], axis=1)
    v = ej.view(model, q, source=lamp, port=0)
    try:
        assert len(v._meshes) == 4 and v.url.startswith("http://localhost:")
        for k in (0, 3):
            v.show_frame(k)
            kin = ej.forward_kinematics(model, q[k])
            pos, wxyz = _viewer_poses(v)
            assert np.allclose(pos, kin.p, atol=1e-12)
            for b in range(model.nbodies + 1):           # the frame's quaternion is the body's rotation
                w, x, y, z = wxyz[b]
                R = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                              [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                              [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])
                assert np.allclose(R, kin.R[b], atol=1e-12)
        assert np.allclose(v._stick.points[:, 1], kin.p[1:])
        assert v._time.max == T - 1
    finally:
        v.close()
    # no trajectory: one slider per coordinate, within the limits
    v = ej.view(model, source=lamp, port=0, q=np.array([0.3, 0.2]))
    try:
        assert [s.label for s in v._sliders] == list(model.coordinate_names)
        assert (v._sliders[1].min, v._sliders[1].max) == (-1.5, 1.5)
        v._sliders[0].value = 0.7
        v._from_sliders()
        assert np.allclose(v.p, ej.forward_kinematics(model, np.array([0.7, 0.2])).p)
    finally:
        v.close()


def test_viewer_reads_mjcf_and_opensim_geometry():
    pytest.importorskip("trimesh", reason="the viewer needs the view extra (viser, trimesh)")
    pytest.importorskip("mujoco", reason="MJCF geometry needs mujoco (the mjcf extra)")
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cart = ej.models.load("cartpole.xml")
    visuals, notes = visual_geometry(cart, ej.models.shipped_path("cartpole.xml"))
    assert [(cart.body_names[v.body], v.kind) for v in visuals] == [("cart", "box"), ("pole", "capsule")]
    assert np.allclose(np.ptp(visuals[0].vertices, axis=0), (0.4, 0.2, 0.1))
    assert np.allclose(np.ptp(visuals[1].vertices, axis=0), (0.06, 0.06, 0.66), atol=2e-3)
    # OpenSim: a brick and a missing mesh file on the shipped knee
    text = Path(ej.models.shipped_path("knee_patella.osim")).read_text()
    geom = ('<attached_geometry><Brick name="box"><socket_frame>..</socket_frame>'
            '<half_lengths>0.02 0.2 0.03</half_lengths></Brick>'
            '<Mesh name="bone"><socket_frame>..</socket_frame><mesh_file>tibia.vtp</mesh_file></Mesh>'
            '</attached_geometry>')
    text = text.replace('<Body name="tibia">', '<Body name="tibia">' + geom, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        knee = ej.load_opensim(text)
    visuals, notes = visual_geometry(knee, text)
    assert [(knee.body_names[v.body], v.kind) for v in visuals] == [("tibia", "box")]
    assert np.allclose(np.ptp(visuals[0].vertices, axis=0), (0.04, 0.4, 0.06))
    assert len(notes) == 1 and "tibia.vtp" in notes[0]


def test_view_command_line(lamp, capsys):
    parser = argparse.ArgumentParser(prog="ejce-nb")
    sub = parser.add_subparsers(dest="cmd")
    add_parser(sub)
    args = parser.parse_args(["view", str(lamp), "--port", "0"])
    v = view_command(args, block=False)
    try:
        assert len(v.visuals) == 4
        assert v.url in capsys.readouterr().out
    finally:
        v.close()
    assert cli_view([str(lamp), "--traj", "nothing.csv"]) == 2      # refused before serving
    assert "Trajectory.save" in capsys.readouterr().err


@pytest.mark.skipif(find_chromium() is None, reason="no Chromium to open the viewer's page (Debian: apt-get install "
                    "chromium; .ci/run installs it where it can)")
def test_viewer_page_shows_the_model_in_headless_chromium(lamp, tmp_path):
    """The page, opened by headless Chromium (WebGL in software), draws the lamp: its orange
    surfaces cover a lamp-sized area beside the controls."""
    from PIL import Image
    model = ej.load_urdf(str(lamp))
    v = ej.view(model, source=lamp, port=0)
    shot = tmp_path / "viewer.png"
    try:
        v.screenshot(shot, size=(800, 600))
    finally:
        v.close()
    img = np.asarray(Image.open(shot).convert("RGB")).astype(int)
    assert img.shape == (600, 800, 3)
    r_, g_, b_ = img[..., 0], img[..., 1], img[..., 2]
    orange = (r_ > 150) & (r_ - g_ > 50) & (g_ - b_ > 20)           # the lamp's lit orange surfaces
    assert orange.sum() > 2000, f"the page shows no model ({orange.sum()} orange pixels)"
    ys, xs = np.nonzero(orange)
    assert xs.max() - xs.min() > 40 and ys.max() - ys.min() > 100     # a lamp's height, not a speck


@pytest.mark.skipif(find_chromium() is None, reason="no Chromium to open the viewer's page (Debian: apt-get install "
                    "chromium; .ci/run installs it where it can)")
def test_viewer_in_a_notebook_cell(lamp, tmp_path):
    """What a Jupyter notebook does with ``ej.view``: the cell runs while an asyncio event loop runs
    in the kernel's thread, and its output is the returned Viewer's ``_repr_html_`` (an inline
    frame of the viewer's address). Headless Chromium opens a page holding that output: the frame
    shows the lamp and the viewer's controls. Viser's static copy of the scene
    (``viewer.server.scene.show()`` in a notebook) is a self-contained page."""
    from PIL import Image
    model = ej.load_urdf(str(lamp))

    async def cell():
        return ej.view(model, source=lamp, port=0)

    v = asyncio.run(cell())
    try:
        out = v._repr_html_()
        assert f'<iframe src="{v.url}"' in out
        page = tmp_path / "notebook.html"
        page.write_text(f"<html><body><p>In [1]: ej.view(model)</p>{out}</body></html>")
        shot = tmp_path / "cell.png"
        # the frame's text and canvas, then time to draw (its first frames come out pale; on a busy
        # machine software WebGL takes longer: a pale picture is taken again, waiting longer)
        for settle in (4.0, 12.0, 30.0):
            screenshot(page.as_uri(), shot, size=(900, 700), wait_for=("Coordinates", "swing"), settle=settle)
            img = np.asarray(Image.open(shot).convert("RGB")).astype(int)
            r_, g_, b_ = img[..., 0], img[..., 1], img[..., 2]
            orange = (r_ > 150) & (r_ - g_ > 50) & (g_ - b_ > 20)
            if orange.sum() > 2000:
                break
        static = v.server.scene.as_html()
        assert static.lstrip().lower().startswith("<!doctype html") and "__VISER_EMBED_DATA__" in static
    finally:
        v.close()
    assert orange.sum() > 2000, f"the notebook's frame shows no model ({orange.sum()} orange pixels)"
